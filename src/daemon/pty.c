/* pty.c — execs on a terminal (DESIGN.md, "Ports, PTYs, sessions"): the exec's process opens a PTY
 * of the sandbox's own /dev/pts and hands its master out over its stdin (a unix socket we made);
 * from then on the PTY is ours, by exec id: a pump thread reads its output into a ring (the last
 * 64 KiB, replayed to whoever attaches) and to the attached; input and resizes go to the master.
 * A PTY outlives the connections to it: attach again by id until the exec has ended and a
 * while after (its output and its end stay readable for PTY_KEEP_MS). */
#include "daemon/mgr-internal.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <strings.h>
#include <termios.h>

#include "basic/time-util.h"
#include "basic/ws.h"
#include "daemon/http.h"

#define PTY_RING (64 * 1024)
#define PTY_KEEP_MS (5 * 60 * 1000)
#define PTY_MAX 256 /* on the server, running or kept */

typedef struct pty_sub {
        struct pty_sub *next;
        sbx_pty_cb cb;
        bool ended; /* its on_end was called */
} pty_sub;

struct mgr_pty {
        struct mgr_pty *next;
        sbx_mgr *m;
        char exec_id[32], sandbox_id[32], tenant[128];
        pthread_mutex_t lock;
        pthread_cond_t cond; /* ended */
        int master; /* -1 once closed */
        unsigned cols, rows;
        char *ring; /* circular: ring_len bytes ending at ring_end */
        size_t ring_len, ring_end;
        uint64_t out_total;
        pty_sub *subs;
        bool out_done, ended;
        json_t *end; /* {status, exit_code, signal, report | error} */
        int64_t ended_ms;
        unsigned refs; /* the registry's, the pump's, the exec thread's, each caller's */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static mgr_pty *reg; /* every PTY of every manager (one per process in practice) */

static void pty_free(mgr_pty *p) {
        safe_close(p->master);
        while (p->subs) {
                pty_sub *s = p->subs;
                p->subs = s->next;
                if (s->cb.free_userdata)
                        s->cb.free_userdata(s->cb.userdata);
                free(s);
        }
        json_decref(p->end);
        free(p->ring);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        free(p);
}

static void pty_unref(mgr_pty *p) {
        pthread_mutex_lock(&reg_lock);
        bool last = --p->refs == 0;
        pthread_mutex_unlock(&reg_lock);
        if (last)
                pty_free(p);
}

/* Ended and kept long enough: out of the registry (the caller holds reg_lock). */
static void reg_sweep_locked(void) {
        int64_t now = mgr_now_ms();
        for (mgr_pty **pp = &reg; *pp;) {
                mgr_pty *p = *pp;
                if (p->ended && p->ended_ms + PTY_KEEP_MS < now) {
                        *pp = p->next;
                        if (--p->refs == 0) /* nobody else (reg_lock held: freed here) */
                                pty_free(p);
                        continue;
                }
                pp = &p->next;
        }
}

/* The PTY of exec_id in the caller's sandbox, a reference taken; NULL when there is none. */
static mgr_pty *pty_find(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id) {
        pthread_mutex_lock(&reg_lock);
        reg_sweep_locked();
        mgr_pty *p = reg;
        for (; p; p = p->next)
                if (p->m == m && streq(p->exec_id, exec_id) && streq(p->sandbox_id, sandbox_id) &&
                        streq(p->tenant, who->tenant))
                        break;
        if (p)
                p->refs++;
        pthread_mutex_unlock(&reg_lock);
        return p;
}

static void ring_put(mgr_pty *p, const char *d, size_t n) {
        if (n >= PTY_RING) {
                d += n - PTY_RING;
                n = PTY_RING;
        }
        for (size_t i = 0; i < n; i++) {
                p->ring[p->ring_end] = d[i];
                p->ring_end = (p->ring_end + 1) % PTY_RING;
        }
        p->ring_len = p->ring_len + n > PTY_RING ? PTY_RING : p->ring_len + n;
        p->out_total += n;
}

static void ring_replay(mgr_pty *p, const sbx_pty_cb *cb) {
        if (!p->ring_len || !cb->on_output)
                return;
        size_t start = (p->ring_end + PTY_RING - p->ring_len) % PTY_RING;
        size_t first = start + p->ring_len <= PTY_RING ? p->ring_len : PTY_RING - start;
        cb->on_output(cb->userdata, p->ring + start, first);
        if (first < p->ring_len)
                cb->on_output(cb->userdata, p->ring, p->ring_len - first);
}

/* Both ends known (the output drained, the exec ended): the subscribers hear the end. */
static void maybe_finish_locked(mgr_pty *p) {
        if (!p->out_done || !p->ended)
                return;
        for (pty_sub *s = p->subs; s; s = s->next)
                if (!s->ended) {
                        s->ended = true;
                        if (s->cb.on_end)
                                s->cb.on_end(s->cb.userdata, p->end);
                }
        p->master = safe_close(p->master);
}

static void *pump_main(void *arg) {
        mgr_pty *p = arg;
        sbx_mgr *m = p->m;
        char buf[16384];
        for (;;) {
                pthread_mutex_lock(&p->lock);
                int fd = p->master;
                bool ended = p->ended;
                pthread_mutex_unlock(&p->lock);
                if (fd < 0)
                        break;
                struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = m->stop_efd, .events = POLLIN}};
                int k = poll(pf, 2, ended ? 200 : 1000);
                if (k < 0 && errno == EINTR)
                        continue;
                if (pf[1].revents)
                        break; /* the server stops: the exec is left to its sandbox */
                if (k == 0) {
                        if (ended) /* the exec ended and nothing more came: done */
                                break;
                        continue;
                }
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0) /* EIO: no slave is open any more */
                        break;
                pthread_mutex_lock(&p->lock);
                ring_put(p, buf, (size_t) n);
                for (pty_sub *s = p->subs; s; s = s->next)
                        if (s->cb.on_output && !s->ended)
                                s->cb.on_output(s->cb.userdata, buf, (size_t) n);
                pthread_mutex_unlock(&p->lock);
        }
        pthread_mutex_lock(&p->lock);
        p->out_done = true;
        if (mgr_stopping(m) && !p->ended) {
                p->ended = true;
                p->ended_ms = mgr_now_ms();
                p->end = json_pack("{s:s, s:n, s:n, s:s}", "status", "detached", "exit_code", "signal",
                        "error", "the server is stopping: the exec was left running in the sandbox");
        }
        maybe_finish_locked(p);
        pthread_mutex_unlock(&p->lock);
        pty_unref(p);
        mgr_worker_done(m);
        return NULL;
}

mgr_pty *mgr_pty_new(sbx_mgr *m, const box *b, const char *exec_id, unsigned cols, unsigned rows) {
        mgr_pty *p = calloc(1, sizeof *p);
        if (!p || !(p->ring = malloc(PTY_RING))) {
                free(p);
                return NULL;
        }
        p->m = m;
        snprintf(p->exec_id, sizeof p->exec_id, "%s", exec_id);
        snprintf(p->sandbox_id, sizeof p->sandbox_id, "%s", b->id);
        snprintf(p->tenant, sizeof p->tenant, "%s", b->tenant);
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->master = -1;
        p->cols = cols;
        p->rows = rows;
        p->refs = 1; /* the caller's */
        return p;
}

/* The master arrived: the PTY joins the registry and its pump starts. 0 or -errno (then the
 * caller still holds p, and master is not taken). */
int mgr_pty_publish(mgr_pty *p, int master) {
        pthread_mutex_lock(&reg_lock);
        reg_sweep_locked();
        size_t n = 0;
        for (mgr_pty *q = reg; q; q = q->next)
                n++;
        if (n >= PTY_MAX) {
                pthread_mutex_unlock(&reg_lock);
                return -EMFILE;
        }
        p->master = master;
        p->refs += 2; /* the registry's and the pump's */
        p->next = reg;
        reg = p;
        pthread_mutex_unlock(&reg_lock);
        if (mgr_worker_start(p->m, pump_main, p) < 0) {
                pthread_mutex_lock(&p->lock);
                p->out_done = true; /* nothing will read it: the end alone is told */
                pthread_mutex_unlock(&p->lock);
                pty_unref(p);
        }
        return 0;
}

void mgr_pty_ended(mgr_pty *p, json_t *end /* stolen */) {
        pthread_mutex_lock(&p->lock);
        if (!p->ended) {
                p->ended = true;
                p->ended_ms = mgr_now_ms();
                p->end = end;
                end = NULL;
                if (p->master < 0) /* never published */
                        p->out_done = true;
                maybe_finish_locked(p);
                pthread_cond_broadcast(&p->cond);
        }
        pthread_mutex_unlock(&p->lock);
        json_decref(end);
}

mgr_pty *mgr_pty_ref(mgr_pty *p) {
        pthread_mutex_lock(&reg_lock);
        p->refs++;
        pthread_mutex_unlock(&reg_lock);
        return p;
}

json_t *mgr_pty_wait_end(mgr_pty *p, int timeout_ms) {
        struct timespec until;
        sbx_deadline_realtime(timeout_ms, &until);
        pthread_mutex_lock(&p->lock);
        while (!p->ended && pthread_cond_timedwait(&p->cond, &p->lock, &until) == 0)
                ;
        json_t *e = p->ended ? json_incref(p->end) : NULL;
        pthread_mutex_unlock(&p->lock);
        return e;
}

void mgr_pty_put(mgr_pty *p) {
        if (p)
                pty_unref(p);
}

bool sbx_tty_size(const json_t *o, unsigned *cols, unsigned *rows) {
        json_t *c = json_object_get(o, "cols"), *r = json_object_get(o, "rows");
        if (!json_is_integer(c) || !json_is_integer(r) || json_integer_value(c) < 1 ||
                json_integer_value(c) > SBX_TTY_MAX || json_integer_value(r) < 1 ||
                json_integer_value(r) > SBX_TTY_MAX)
                return false;
        *cols = (unsigned) json_integer_value(c);
        *rows = (unsigned) json_integer_value(r);
        return true;
}

static unsigned gone(mgr_pty *p, json_t **err) {
        *err = mgr_err_json(
                "gone", NULL, "exec %s has ended: its terminal takes no input and no resize", p->exec_id);
        return 410;
}

static mgr_pty *find_or_404(
        sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id, json_t **err) {
        mgr_pty *p = pty_find(m, who, sandbox_id, exec_id);
        if (!p)
                *err = mgr_err_json("not_found", NULL,
                        "no terminal exec '%.64s' in sandbox %.64s (an exec without tty has none; an ended "
                        "one is kept 5 minutes)",
                        exec_id, sandbox_id);
        return p;
}

static unsigned pty_input(mgr_pty *p, const void *data, size_t n, json_t **err) {
        pthread_mutex_lock(&p->lock);
        int fd = p->ended || p->master < 0 ? -1 : fcntl(p->master, F_DUPFD_CLOEXEC, 3);
        pthread_mutex_unlock(&p->lock);
        if (fd < 0)
                return gone(p, err);
        unsigned code = 0;
        for (const char *c = data; !code && n > 0;) {
                ssize_t k = write(fd, c, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        code = gone(p, err);
                else
                        c += k, n -= (size_t) k;
        }
        close(fd);
        return code;
}

static unsigned pty_resize(mgr_pty *p, unsigned cols, unsigned rows, json_t **err) {
        if (cols < 1 || cols > SBX_TTY_MAX || rows < 1 || rows > SBX_TTY_MAX) {
                *err = mgr_err_json(
                        "invalid_argument", "cols", "cols and rows: integers from 1 to %d", SBX_TTY_MAX);
                return 400;
        }
        unsigned code = 0;
        struct winsize ws = {.ws_row = (unsigned short) rows, .ws_col = (unsigned short) cols};
        pthread_mutex_lock(&p->lock);
        if (p->ended || p->master < 0 || ioctl(p->master, TIOCSWINSZ, &ws) < 0)
                code = gone(p, err);
        else
                p->cols = cols, p->rows = rows;
        pthread_mutex_unlock(&p->lock);
        return code;
}

unsigned sbx_mgr_pty_input(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id,
        const void *data, size_t n, json_t **err) {
        *err = NULL;
        mgr_pty *p = find_or_404(m, who, sandbox_id, exec_id, err);
        if (!p)
                return 404;
        unsigned code = pty_input(p, data, n, err);
        pty_unref(p);
        return code;
}

unsigned sbx_mgr_pty_resize(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id,
        unsigned cols, unsigned rows, json_t **err) {
        *err = NULL;
        mgr_pty *p = find_or_404(m, who, sandbox_id, exec_id, err);
        if (!p)
                return 404;
        unsigned code = pty_resize(p, cols, rows, err);
        pty_unref(p);
        return code;
}

struct sbx_pty_sub_handle {
        mgr_pty *p;
        pty_sub *s;
};

unsigned sbx_mgr_pty_attach(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id,
        const sbx_pty_cb *cb, bool replay, sbx_pty_sub_handle **ret, json_t **err) {
        *err = NULL;
        *ret = NULL;
        mgr_pty *p = find_or_404(m, who, sandbox_id, exec_id, err);
        if (!p)
                return 404;
        sbx_pty_sub_handle *h = calloc(1, sizeof *h);
        pty_sub *s = calloc(1, sizeof *s);
        if (!h || !s) {
                free(h);
                free(s);
                pty_unref(p);
                *err = mgr_err_json("unavailable", NULL, "out of memory");
                return 503;
        }
        s->cb = *cb;
        h->p = p;
        h->s = s;
        pthread_mutex_lock(&p->lock);
        if (replay)
                ring_replay(p, cb);
        s->next = p->subs;
        p->subs = s;
        if (p->out_done && p->ended) { /* attached after its end: the output, then the end */
                s->ended = true;
                if (cb->on_end)
                        cb->on_end(cb->userdata, p->end);
        }
        pthread_mutex_unlock(&p->lock);
        *ret = h;
        return 0;
}

void mgr_pty_forget_handle(sbx_pty_sub_handle *h) {
        pty_unref(h->p);
        free(h);
}

void sbx_mgr_pty_detach(sbx_pty_sub_handle *h) {
        if (!h)
                return;
        mgr_pty *p = h->p;
        pthread_mutex_lock(&p->lock);
        for (pty_sub **pp = &p->subs; *pp; pp = &(*pp)->next)
                if (*pp == h->s) {
                        *pp = h->s->next;
                        break;
                }
        pthread_mutex_unlock(&p->lock);
        if (h->s->cb.free_userdata)
                h->s->cb.free_userdata(h->s->cb.userdata);
        free(h->s);
        free(h);
        pty_unref(p);
}

json_t *mgr_pty_describe(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id) {
        mgr_pty *p = pty_find(m, who, sandbox_id, exec_id);
        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        json_t *j = json_pack("{s:i, s:i, s:I, s:b}", "cols", (json_int_t) p->cols, "rows",
                (json_int_t) p->rows, "output_bytes", (json_int_t) p->out_total, "ended", p->ended);
        pthread_mutex_unlock(&p->lock);
        pty_unref(p);
        return j;
}

/* ---- the native API: attach (a WebSocket), input, resize ---------------------------------- */

typedef struct ws_sess {
        sbx_mgr *m;
        sbx_caller who;
        char sandbox_id[32], exec_id[32];
        mgr_pty *p; /* while attached: the terminal its frames go to (the handle's reference) */
        int fd;
        pthread_mutex_t wlock; /* frames from the pump (output, end) and from us (pong, close) */
        bool closed; /* our close frame went */
        /* Daytona's PTY protocol: {"type":"control","status":"connected"} first, every text
         * frame is input (it resizes over HTTP), the end as {"type":"control","status":"exited",
         * "exitCode":N} and a close whose reason is {"exitCode":N} */
        bool daytona;
} ws_sess;

static void ws_text(ws_sess *s, json_t *j /* stolen */) {
        char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        pthread_mutex_lock(&s->wlock);
        if (t && !s->closed)
                (void) sbx_ws_send(s->fd, SBX_WS_TEXT, t, strlen(t), false);
        pthread_mutex_unlock(&s->wlock);
        free(t);
}

static void ws_output(void *ud, const char *d, size_t n) {
        ws_sess *s = ud;
        pthread_mutex_lock(&s->wlock);
        if (!s->closed && sbx_ws_send(s->fd, SBX_WS_BINARY, d, n, false) < 0) {
                s->closed = true; /* the client is gone: the terminal goes on */
                (void) shutdown(s->fd, SHUT_RDWR);
        }
        pthread_mutex_unlock(&s->wlock);
}

static void ws_end(void *ud, const json_t *end) {
        ws_sess *s = ud;
        char reason[120] = "the exec ended";
        if (s->daytona) {
                json_t *code = json_object_get(end, "exit_code"), *sig = json_object_get(end, "signal");
                int c = json_is_integer(code)  ? (int) json_integer_value(code)
                        : json_is_integer(sig) ? 128 + (int) json_integer_value(sig)
                                               : -1;
                const char *st = json_string_value(json_object_get(end, "status"));
                json_t *j =
                        json_pack("{s:s, s:s, s:i}", "type", "control", "status", "exited", "exitCode", c);
                if (st && !streq(st, "exited"))
                        json_object_set_new(j, "exitReason",
                                json_string(json_string_value(json_object_get(end, "error")) ?: st));
                ws_text(s, j);
                snprintf(reason, sizeof reason, "{\"exitCode\":%d}", c);
        } else
                ws_text(s, json_pack("{s:O}", "exit", (json_t *) end));
        pthread_mutex_lock(&s->wlock);
        if (!s->closed) {
                (void) sbx_ws_send_close(s->fd, 1000, reason, false);
                s->closed = true;
        }
        (void) shutdown(s->fd, SHUT_RD); /* the session's reader ends */
        pthread_mutex_unlock(&s->wlock);
}

/* A text frame is a resize when it is {"resize": {"cols": N, "rows": N}}; any other text is input
 * (some clients, Daytona's among them, send keys as text). */
static bool ws_resize(ws_sess *s, const char *d, size_t n) {
        if (n == 0 || d[0] != '{')
                return false;
        json_error_t je;
        json_t *j = json_loadb(d, n, 0, &je), *r = json_object_get(j, "resize");
        if (!json_is_object(r) || json_object_size(j) != 1) {
                json_decref(j);
                return false;
        }
        json_t *err = NULL;
        unsigned cols = 0, rows = 0;
        (void) sbx_tty_size(r, &cols, &rows); /* 0 when not: pty_resize() says why */
        unsigned code = pty_resize(s->p, cols, rows, &err);
        if (code == 400) /* said, not fatal */
                ws_text(s, json_incref(err));
        json_decref(err);
        json_decref(j);
        return true;
}

static void ws_session(void *ud, int fd, const char *extra, size_t n) {
        ws_sess *s = ud;
        s->fd = fd;
        /* libmicrohttpd's sockets are non-blocking; this thread is the connection's alone */
        (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        sbx_pty_cb cb = {.on_output = ws_output, .on_end = ws_end, .userdata = s};
        sbx_pty_sub_handle *h = NULL;
        json_t *err = NULL;
        if (s->daytona) /* before the replay: the SDK waits for it */
                ws_text(s, json_pack("{s:s, s:s}", "type", "control", "status", "connected"));
        if (sbx_mgr_pty_attach(s->m, &s->who, s->sandbox_id, s->exec_id, &cb, true, &h, &err)) {
                if (s->daytona)
                        ws_text(s, json_pack("{s:s, s:s, s:s}", "type", "control", "status", "error",
                                           "error", "PTY session not found"));
                pthread_mutex_lock(&s->wlock);
                (void) sbx_ws_send_close(fd, 1011, "the terminal is gone", false);
                s->closed = true;
                pthread_mutex_unlock(&s->wlock);
        }
        json_decref(err);
        err = NULL;
        if (h)
                s->p = h->p;
        sbx_ws_reader *r = calloc(1, sizeof *r);
        if (r)
                sbx_ws_reader_init(r, fd, extra, n);
        while (r && h) {
                int op;
                char *d = NULL;
                size_t len = 0;
                if (sbx_ws_recv(r, &op, &d, &len) < 0)
                        break;
                if (op == SBX_WS_CLOSE) {
                        pthread_mutex_lock(&s->wlock);
                        if (!s->closed)
                                (void) sbx_ws_send_close(fd, 1000, "", false);
                        s->closed = true;
                        pthread_mutex_unlock(&s->wlock);
                        free(d);
                        break;
                }
                if (op == SBX_WS_PING) {
                        pthread_mutex_lock(&s->wlock);
                        if (!s->closed)
                                (void) sbx_ws_send(fd, SBX_WS_PONG, d, len, false);
                        pthread_mutex_unlock(&s->wlock);
                } else if ((op == SBX_WS_BINARY ||
                                   (op == SBX_WS_TEXT && (s->daytona || !ws_resize(s, d, len)))) &&
                           len) {
                        if (pty_input(s->p, d, len, &err) == 410) {
                                json_decref(err);
                                err = NULL;
                                free(d);
                                break; /* ended: its end frame is on its way or sent */
                        }
                        json_decref(err);
                        err = NULL;
                }
                free(d);
        }
        free(r);
        sbx_mgr_pty_detach(h); /* the terminal lives on: attach again by its id */
        pthread_mutex_destroy(&s->wlock);
        free(s);
}

static void ws_drop(void *ud) {
        ws_sess *s = ud;
        pthread_mutex_destroy(&s->wlock);
        free(s);
}

static ws_sess *ws_new(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id) {
        ws_sess *s = calloc(1, sizeof *s);
        if (!s)
                return NULL;
        s->m = m;
        s->who = *who;
        snprintf(s->sandbox_id, sizeof s->sandbox_id, "%s", sandbox_id);
        snprintf(s->exec_id, sizeof s->exec_id, "%s", exec_id);
        pthread_mutex_init(&s->wlock, NULL);
        s->fd = -1;
        return s;
}

struct MHD_Response *sbx_mgr_pty_daytona_upgrade(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id,
        const char *exec_id, const char *key, const char *protocol) {
        ws_sess *s = ws_new(m, who, sandbox_id, exec_id);
        if (!s)
                return NULL;
        s->daytona = true;
        char accept[29];
        sbx_ws_accept_key(key, accept);
        struct MHD_Response *r = sbx_http_upgrade_response(ws_session, s, accept, protocol);
        if (!r)
                ws_drop(s);
        return r;
}

unsigned mgr_op_pty_attach(
        sbx_mgr *m, const sbx_mgr_request *rq, const char *id, const char *exec_id, sbx_mgr_reply *rp) {
        if (!mgr_valid_sandbox_id(id))
                return mgr_reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
        json_t *d = mgr_pty_describe(m, rq->who, id, exec_id);
        if (!d)
                return mgr_reply_err(rp, 404, "not_found", NULL,
                        "no terminal exec '%s' in sandbox %s (an exec without tty has none; an ended one is "
                        "kept 5 minutes)",
                        exec_id, id);
        json_decref(d);
        const char *up = rq->header(rq->ctx, "Upgrade"), *key = rq->header(rq->ctx, "Sec-WebSocket-Key"),
                   *ver = rq->header(rq->ctx, "Sec-WebSocket-Version");
        if (!up || strcasecmp(up, "websocket") != 0 || !key || !*key || strlen(key) > 64)
                return mgr_reply_err(rp, 426, "upgrade_required", NULL,
                        "attach is a WebSocket: send Upgrade: websocket, Connection: Upgrade, "
                        "Sec-WebSocket-Key and Sec-WebSocket-Version: 13 (or use POST .../input and "
                        ".../resize)");
        if (!ver || !streq(ver, "13"))
                return mgr_reply_err(rp, 426, "upgrade_required", NULL, "Sec-WebSocket-Version: 13 only");
        ws_sess *s = ws_new(m, rq->who, id, exec_id);
        if (!s)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
        sbx_ws_accept_key(key, rp->ws_accept);
        rp->code = 101;
        rp->upgrade = ws_session;
        rp->upgrade_drop = ws_drop;
        rp->upgrade_ud = s;
        return 101;
}

unsigned mgr_op_pty_write(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, const char *exec_id,
        bool resize, sbx_mgr_reply *rp) {
        json_t *err = NULL;
        unsigned code;
        if (!mgr_valid_sandbox_id(id))
                return mgr_reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
        if (resize) {
                json_t *body = mgr_parse_body(rq, rp, false);
                if (!body)
                        return rp->code;
                static const char *const keys[] = {"cols", "rows", NULL};
                unsigned cols, rows;
                if (!mgr_only_keys(body, keys, "", rp)) {
                        json_decref(body);
                        return rp->code;
                }
                if (!sbx_tty_size(body, &cols, &rows)) {
                        json_decref(body);
                        return mgr_reply_err(rp, 400, "invalid_argument", "cols",
                                "cols and rows: integers from 1 to %d", SBX_TTY_MAX);
                }
                code = sbx_mgr_pty_resize(m, rq->who, id, exec_id, cols, rows, &err);
                json_decref(body);
        } else
                code = sbx_mgr_pty_input(m, rq->who, id, exec_id, rq->body ? rq->body : "", rq->len, &err);
        if (code) {
                rp->code = code;
                rp->json = err;
                return code;
        }
        rp->code = 200;
        rp->json = json_pack("{s:b}", "ok", 1);
        return 200;
}
