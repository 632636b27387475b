/* daytona-proc.c — see daytona-proc.h: the processes behind Daytona's sessions and interpreter
 * contexts. One long-lived process in the sandbox fed on its stdin, a pipe serve keeps: bash for a
 * session (each command by eval, so cd, exports and functions persist), python3 for a context
 * (each piece of code in one namespace). Each unit of work ends with a marker line on both stdout
 * and stderr: "\x1e" NONCE ":" PAYLOAD "\n", the nonce random per process; what came on a
 * stream before its marker is the unit's. Logs are kept (LOG_MAX a stream, LOGS_MAX a process)
 * and sent to the unit's sinks (WebSockets) as they come. When the process ends, the unit that
 * was running ends with its exit code. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/ws.h"
#include "daemon/compat/compat.h"
#include "daemon/http.h"

#include "daemon/compat/daytona-proc.h"

#define UNITS_MAX 1000 /* commands kept per session (the oldest ended ones go first) */
#define LOGS_MAX (32u * 1024 * 1024) /* per session: past it, the oldest ended commands go */
#define MARKER_LINE_MAX (256u * 1024) /* a marker's payload (the interpreter's traceback) */
#define PIPE_SIZE (1024 * 1024)

/* ---- a process fed on its stdin, its output cut into units by markers --------------------- */

static void unit_free(unit *u) {
        if (!u)
                return;
        free(u->command);
        free(u->out);
        free(u->err);
        free(u->both);
        free(u->labeled);
        json_decref(u->result);
        free(u);
}

mproc *dp_ref(mproc *p) {
        atomic_fetch_add(&p->refs, 1);
        return p;
}

void dp_unref(mproc *p) {
        if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
                return;
        while (p->units) {
                unit *u = p->units;
                p->units = u->next;
                unit_free(u);
        }
        for (int i = 1; i <= 2; i++)
                free(p->pend[i]);
        safe_close(p->in_w);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        free(p);
}

static bool grow(char **buf, size_t *len, const void *d, size_t n) {
        char *b = realloc(*buf, *len + n + 1);
        if (!b)
                return false;
        memcpy(b + *len, d, n);
        *len += n;
        b[*len] = 0;
        *buf = b;
        return true;
}

void dp_sink_send(sink *s, int op, const void *d, size_t n) {
        if (!s->gone && sbx_ws_send(s->fd, op, d, n, false) < 0) {
                s->gone = true; /* the reader's thread sees its socket shut */
                (void) shutdown(s->fd, SHUT_RDWR);
        }
}

void dp_sink_json(sink *s, json_t *j /* stolen */) {
        char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (t)
                dp_sink_send(s, SBX_WS_TEXT, t, strlen(t));
        free(t);
}

static const char prefix[3][3] = {{0}, {1, 1, 1}, {2, 2, 2}};

/* Output of stream fd for the interpreter's sink: whole UTF-8 sequences as text frames. */
static void sink_text(sink *s, int fd, const char *d, size_t n, bool final) {
        _cleanup_free_ char *all = malloc(s->held_len[fd] + n + 1);
        if (!all)
                return;
        memcpy(all, s->held[fd], s->held_len[fd]);
        memcpy(all + s->held_len[fd], d, n);
        size_t len = s->held_len[fd] + n, used = 0;
        json_t *t = cx_utf8_text(all, len, final, &used);
        s->held_len[fd] = len - used; /* at most 3 bytes */
        memcpy(s->held[fd], all + used, s->held_len[fd]);
        if (json_string_length(t))
                dp_sink_json(s, json_pack("{s:s, s:o}", "type", fd == 2 ? "stderr" : "stdout", "text", t));
        else
                json_decref(t);
}

/* Under p->lock. */
void dp_unit_drop(mproc *p, unit *u) {
        for (unit **pp = &p->units; *pp; pp = &(*pp)->next)
                if (*pp == u) {
                        *pp = u->next;
                        p->n_units--;
                        p->log_bytes -= u->both_len;
                        unit_free(u);
                        return;
                }
}

/* Under p->lock: drop the oldest ended commands nobody waits on while past the bounds. */
static void trim(mproc *p) {
        for (unit *u = p->units, *next; u && (p->n_units > UNITS_MAX || p->log_bytes > LOGS_MAX); u = next) {
                next = u->next;
                if (u->done && !u->sinks && !u->pins)
                        dp_unit_drop(p, u);
        }
}

/* Under p->lock: the oldest unit still waiting for its marker on stream fd. */
static unit *current(mproc *p, int fd) {
        for (unit *u = p->units; u; u = u->next)
                if (!u->done && !u->seen[fd])
                        return u;
        return NULL;
}

static void deliver(mproc *p, int fd, const char *d, size_t n) {
        unit *u = current(p, fd);
        if (!u || n == 0)
                return; /* between units (a background job's output): nobody's */
        size_t room = u->both_len < LOG_MAX * 2 ? LOG_MAX * 2 - u->both_len : 0;
        size_t keep = n < room ? n : room;
        if (keep < n)
                u->truncated = true;
        if (keep) {
                (void) grow(fd == 2 ? &u->err : &u->out, fd == 2 ? &u->err_len : &u->out_len, d, keep);
                (void) grow(&u->both, &u->both_len, d, keep);
                (void) grow(&u->labeled, &u->labeled_len, prefix[fd], 3);
                (void) grow(&u->labeled, &u->labeled_len, d, keep);
                p->log_bytes += keep;
                trim(p);
        }
        for (sink *s = u->sinks; s; s = s->next) {
                if (s->interp)
                        sink_text(s, fd, d, n, false);
                else {
                        _cleanup_free_ char *f = malloc(n + 3);
                        if (f) {
                                memcpy(f, prefix[fd], 3);
                                memcpy(f + 3, d, n);
                                dp_sink_send(s, SBX_WS_BINARY, f, n + 3);
                        }
                }
        }
}

/* Under p->lock: u has ended; its log followers hear the end (the interpreter's thread says its
 * own). */
static void unit_end(mproc *p, unit *u, int exit_code) {
        u->done = true;
        u->exit_code = exit_code;
        for (sink *s = u->sinks; s; s = s->next) {
                if (s->interp) {
                        for (int fd = 1; fd <= 2; fd++)
                                sink_text(s, fd, "", 0, true);
                        continue;
                }
                if (!s->gone)
                        (void) sbx_ws_send_close(s->fd, 1000, "", false);
                s->gone = true;
                (void) shutdown(s->fd, SHUT_RD); /* its reader's thread ends */
        }
        pthread_cond_broadcast(&p->cond);
}

static void marker(mproc *p, int fd, const char *payload, size_t n) {
        unit *u = current(p, fd);
        if (!u)
                return;
        u->seen[fd] = true;
        int code = -1;
        if (fd == 1 && p->interp) {
                json_error_t je;
                u->result = json_loadb(payload, n, 0, &je);
                code = 0;
        } else if (fd == 1) { /* CMDID:RC */
                size_t l = strlen(u->id);
                if (n > l + 1 && memcmp(payload, u->id, l) == 0 && payload[l] == ':')
                        code = atoi(payload + l + 1);
                u->exit_code = code;
        }
        if (u->seen[1] && u->seen[2])
                unit_end(p, u, p->interp ? 0 : u->exit_code);
}

static void on_output(void *ud, int fd, const char *data, size_t n) {
        mproc *p = ud;
        if (fd != 1 && fd != 2)
                return;
        pthread_mutex_lock(&p->lock);
        char **b = &p->pend[fd];
        size_t *l = &p->pend_len[fd];
        if (!grow(b, l, data, n)) {
                deliver(p, fd, data, n);
                pthread_mutex_unlock(&p->lock);
                return;
        }
        size_t off = 0;
        for (;;) {
                const char *at = memmem(*b + off, *l - off, p->mark, p->mark_len);
                if (!at) {
                        /* hold back a tail that may be a marker's start */
                        size_t keep = 0;
                        for (size_t k = p->mark_len - 1; k > 0 && !keep; k--)
                                if (*l - off >= k && memcmp(*b + *l - k, p->mark, k) == 0)
                                        keep = k;
                        deliver(p, fd, *b + off, *l - off - keep);
                        off = *l - keep;
                        break;
                }
                deliver(p, fd, *b + off, (size_t) (at - (*b + off)));
                const char *pl = at + p->mark_len;
                const char *nl = memchr(pl, '\n', (size_t) (*b + *l - pl));
                if (!nl) {
                        off = (size_t) (at - *b);
                        if (*l - off > MARKER_LINE_MAX) { /* not a marker of ours after all */
                                deliver(p, fd, at, *l - off);
                                off = *l;
                        }
                        break;
                }
                marker(p, fd, pl, (size_t) (nl - pl));
                off = (size_t) (nl + 1 - *b);
        }
        memmove(*b, *b + off, *l - off);
        *l -= off;
        pthread_mutex_unlock(&p->lock);
}

static void on_end(void *ud, const json_t *report, const char *error) {
        mproc *p = ud;
        pthread_mutex_lock(&p->lock);
        for (int fd = 1; fd <= 2; fd++) { /* what was held back as a marker's possible start */
                deliver(p, fd, p->pend[fd], p->pend_len[fd]);
                p->pend_len[fd] = 0;
        }
        const json_t *ex = json_object_get(report, "exit");
        json_t *code = json_object_get(ex, "code"), *sig = json_object_get(ex, "signal");
        const char *st = json_string_value(json_object_get(report, "status")) ?: "failed";
        const char *err = error ?: json_string_value(json_object_get(report, "error"));
        int rc = json_is_integer(code)  ? (int) json_integer_value(code)
                 : json_is_integer(sig) ? 128 + (int) json_integer_value(sig)
                                        : -1;
        if (json_is_integer(code))
                snprintf(p->why, sizeof p->why, "it exited with code %d", rc);
        else if (json_is_integer(sig))
                snprintf(p->why, sizeof p->why, "it was killed by signal %d (%s)",
                        (int) json_integer_value(sig), err ?: st);
        else
                snprintf(p->why, sizeof p->why, "%s", err ?: st);
        bool first = true;
        for (unit *u = p->units; u; u = u->next)
                if (!u->done) {
                        unit_end(p, u, first ? rc : -1); /* the one running ended with it */
                        first = false;
                }
        p->ended = true;
        p->in_w = safe_close(p->in_w);
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        dp_unref(p);
}

/* The process: bash for a session, the python driver for an interpreter. */
static const char driver[] =
        "import json, os, sys, traceback\n"
        "def _sandboxer_serve(mark):\n"
        "    req = os.fdopen(os.dup(0), 'rb')\n"
        "    null = os.open(os.devnull, os.O_RDONLY)\n"
        "    os.dup2(null, 0)\n"
        "    os.close(null)\n"
        "    ns = {'__name__': '__main__', '__builtins__': __builtins__}\n"
        "    while True:\n"
        "        line = req.readline()\n"
        "        if not line:\n"
        "            return\n"
        "        try:\n"
        "            r = json.loads(line)\n"
        "        except ValueError:\n"
        "            continue\n"
        "        os.environ.update(r.get('envs') or {})\n"
        "        err = None\n"
        "        try:\n"
        "            exec(compile(r.get('code', ''), '<code>', 'exec'), ns)\n"
        "        except SystemExit as e:\n"
        "            err = {'name': 'SystemExit', 'value': str(e.code), 'traceback': ''}\n"
        "        except BaseException as e:\n"
        "            tb = ''.join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))\n"
        "            err = {'name': type(e).__name__, 'value': str(e), 'traceback': tb[-65536:]}\n"
        "        for f in (sys.stdout, sys.stderr):\n"
        "            try:\n"
        "                f.flush()\n"
        "            except Exception:\n"
        "                pass\n"
        "        os.write(1, mark + json.dumps({'error': err}).encode() + b'\\n')\n"
        "        os.write(2, mark + b'{}\\n')\n"
        "_sandboxer_serve(('\\x1e' + sys.argv[1] + ':').encode())\n";

/* Start the process. NULL with the refusal's status in *code and its reason in why. */
static mproc *mp_start(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, bool interp,
        char *const *env, const char *cwd, unsigned *code, char *why, size_t size) {
        char nonce[33];
        *code = 503;
        if (!cx_random_hex(nonce, 16)) {
                snprintf(why, size, "the host has no randomness for the markers");
                return NULL;
        }
        mproc *p = calloc(1, sizeof *p);
        int io[2] = {-1, -1};
        if (!p || pipe2(io, O_CLOEXEC) < 0) {
                free(p);
                snprintf(why, size, "cannot make a pipe for its stdin: %s", strerror(errno));
                return NULL;
        }
        (void) fcntl(io[1], F_SETPIPE_SZ, PIPE_SIZE); /* room for queued commands; smaller if refused */
        (void) fcntl(io[1], F_SETFL, O_NONBLOCK);
        atomic_init(&p->refs, 2); /* the caller's and the exec's end's */
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->m = m;
        p->who = *who;
        p->interp = interp;
        p->in_w = io[1];
        snprintf(p->sandbox, sizeof p->sandbox, "%s", sandbox_id);
        p->mark_len = (size_t) snprintf(p->mark, sizeof p->mark, "\x1e%s:", nonce);
        char *sh[] = {(char *) "/bin/bash", NULL};
        char *py[] = {(char *) "python3", (char *) "-u", (char *) "-c", (char *) driver, nonce, NULL};
        sbx_exec_spec spec = {
                .argv = interp ? py : sh, .env = env, .cwd = cwd, .stdin_fd = io[0], .long_lived = -1};
        sbx_exec_stream_cb cb = {.on_output = on_output, .on_end = on_end, .userdata = p};
        json_t *err = NULL;
        *code = sbx_mgr_exec_start(m, who, sandbox_id, &spec, &cb, p->exec_id, &err);
        close(io[0]);
        if (*code) {
                if (*code == 410)
                        *code = 404;
                snprintf(why, size, "the %s could not start: %s", interp ? "interpreter" : "session's shell",
                        json_string_value(json_object_get(json_object_get(err, "error"), "message"))
                                ?: "refused");
                json_decref(err);
                atomic_store(&p->refs, 1); /* the callbacks will not run */
                dp_unref(p);
                return NULL;
        }
        if (!interp) { /* the markers' own descriptors: a command that redirects 1 or 2 for good
                        * (exec >file) still ends */
                static const char init[] = "exec 98>&1 99>&2\n";
                if (write(p->in_w, init, sizeof init - 1) < 0)
                        p->why[0] = 0; /* an ended shell says so at the first command */
        }
        return p;
}

/* Under p->lock: whether n more bytes fit in the stdin pipe now (a command still running has not
 * read the ones before). */
static bool room_for(mproc *p, size_t n) {
        int queued = 0, size = fcntl(p->in_w, F_GETPIPE_SZ);
        if (ioctl(p->in_w, FIONREAD, &queued) < 0 || size <= 0)
                return false;
        return (size_t) queued + n <= (size_t) size;
}

/* Under p->lock: write all of d or nothing. 0, 410 (ended) or 409 (no room: said in why). */
unsigned dp_write(mproc *p, const char *d, size_t n) {
        if (p->ended || p->in_w < 0)
                return 410;
        if (!room_for(p, n))
                return 409;
        for (size_t off = 0; off < n;) {
                ssize_t w = write(p->in_w, d + off, n - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno == EAGAIN) { /* taken as it is read */
                        struct timespec ts = {0, 1000000};
                        nanosleep(&ts, NULL);
                        continue;
                }
                if (w <= 0)
                        return 410;
                off += (size_t) w;
        }
        return 0;
}

/* Under p->lock: a new unit at the end of p's list. */
unit *dp_unit_add(mproc *p, const char *command) {
        unit *u = calloc(1, sizeof *u);
        if (!u || !(u->command = strdup(command)) || !cx_random_hex(u->id, 16)) {
                unit_free(u);
                return NULL;
        }
        u->exit_code = -1;
        unit **pp = &p->units;
        while (*pp)
                pp = &(*pp)->next;
        *pp = u;
        p->n_units++;
        trim(p);
        return u;
}

/* bash: the command as one single-quoted word for eval (every byte but NUL survives), then the
 * markers with its status. */
char *dp_shell_text(const mproc *p, const unit *u) {
        size_t n = strlen(u->command);
        _cleanup_free_ char *q = malloc(n * 4 + 3);
        if (!q)
                return NULL;
        size_t k = 0;
        q[k++] = '\'';
        for (size_t i = 0; i < n; i++)
                if (u->command[i] == '\'') {
                        memcpy(q + k, "'\\''", 4);
                        k += 4;
                } else
                        q[k++] = u->command[i];
        q[k++] = '\'';
        q[k] = 0;
        const char *nonce = p->mark + 1;
        int nl = (int) (p->mark_len - 2);
        char *t = NULL;
        if (asprintf(&t,
                    "eval %s; __sandboxer_rc=$?; printf '\\036%.*s:%%s:%%d\\n' %s \"$__sandboxer_rc\" >&98; "
                    "printf '\\036%.*s:\\n' >&99\n",
                    q, nl, nonce, u->id, nl, nonce) < 0)
                return NULL;
        return t;
}

/* ---- the tables --------------------------------------------------------------------------- */

static void *table_new(void) {
        table *t = calloc(1, sizeof *t);
        if (t)
                pthread_mutex_init(&t->lock, NULL);
        return t;
}

static void entry_free(entry *e) {
        if (!e)
                return;
        dp_unref(e->p);
        free(e->cwd);
        free(e);
}

static void table_free(void *state) {
        table *t = state;
        while (t->entries) {
                entry *e = t->entries;
                t->entries = e->next;
                entry_free(e);
        }
        pthread_mutex_destroy(&t->lock);
        free(t);
}

/* The process of sandbox's session or context id, referenced; NULL when there is none. */
mproc *dp_lookup(table *t, const char *sandbox, const char *id, bool context) {
        mproc *p = NULL;
        pthread_mutex_lock(&t->lock);
        for (entry *e = t->entries; e; e = e->next)
                if (e->p && e->context == context && streq(e->sandbox, sandbox) && streq(e->id, id)) {
                        p = dp_ref(e->p);
                        break;
                }
        pthread_mutex_unlock(&t->lock);
        return p;
}

/* Add an entry (its process started by the caller): 0, 409 when the name is taken, 429 past
 * SESSIONS_MAX. */
static unsigned add(table *t, entry *e) {
        size_t count = 0;
        unsigned code = 0;
        pthread_mutex_lock(&t->lock);
        for (entry *q = t->entries; q; q = q->next) {
                count++;
                if (q->context == e->context && streq(q->sandbox, e->sandbox) && streq(q->id, e->id))
                        code = 409;
        }
        if (!code && count >= SESSIONS_MAX)
                code = 429;
        if (!code) {
                e->next = t->entries;
                t->entries = e;
        }
        pthread_mutex_unlock(&t->lock);
        return code;
}

static void stop(mproc *p) {
        pthread_mutex_lock(&p->lock);
        bool live = !p->ended;
        pthread_mutex_unlock(&p->lock);
        if (live)
                (void) sbx_mgr_exec_signal(p->m, &p->who, p->sandbox, p->exec_id, SIGKILL);
}

/* Remove and stop an entry: false when there was none. */
bool dp_drop(table *t, const char *sandbox, const char *id, bool context) {
        entry *gone = NULL;
        pthread_mutex_lock(&t->lock);
        for (entry **pp = &t->entries; *pp; pp = &(*pp)->next)
                if ((*pp)->context == context && streq((*pp)->sandbox, sandbox) && streq((*pp)->id, id)) {
                        gone = *pp;
                        *pp = gone->next;
                        break;
                }
        pthread_mutex_unlock(&t->lock);
        if (gone && gone->p)
                stop(gone->p);
        entry_free(gone);
        return gone != NULL;
}

static entry *entry_new(const char *sandbox, const char *id, bool context, const char *cwd) {
        entry *e = calloc(1, sizeof *e);
        if (!e || !(e->cwd = strdup(cwd))) {
                free(e);
                return NULL;
        }
        snprintf(e->sandbox, sizeof e->sandbox, "%s", sandbox);
        snprintf(e->id, sizeof e->id, "%s", id);
        e->context = context;
        e->created_ms = cx_now_ms();
        return e;
}

/* Start a session or a context under id and list it. 0, or the status with the reason in why. */
unsigned dp_create(sbx_mgr *m, const sbx_caller *who, table *t, const char *sandbox, const char *id,
        bool context, char *const *env, const char *cwd, char *why, size_t size) {
        entry *e = entry_new(sandbox, id, context, cwd);
        if (!e) {
                snprintf(why, size, "out of memory");
                return 503;
        }
        /* listed before its process starts (a racing create of the name loses), without one until
         * then (lookups pass it by) */
        unsigned code = add(t, e);
        if (code) {
                if (code == 409)
                        snprintf(why, size, "a %s '%s' exists already (delete it first)",
                                context ? "context" : "session", id);
                else
                        snprintf(why, size,
                                "too many sessions and contexts on this server (%d; delete some)",
                                SESSIONS_MAX);
                entry_free(e);
                return code;
        }
        mproc *p = mp_start(m, who, sandbox, context, env, cwd, &code, why, size);
        bool listed = false;
        pthread_mutex_lock(&t->lock);
        for (entry **pp = &t->entries; *pp; pp = &(*pp)->next)
                if (*pp == e) {
                        listed = true;
                        if (p)
                                e->p = p; /* the reference mp_start gave, now the entry's */
                        else
                                *pp = e->next;
                        break;
                }
        pthread_mutex_unlock(&t->lock);
        if (p && !listed) { /* deleted while it started */
                stop(p);
                dp_unref(p);
                snprintf(why, size, "the %s was deleted as it started", context ? "context" : "session");
                return 409;
        }
        if (!p)
                entry_free(e);
        return code;
}

table *dp_table_of(cx_req *rq) {
        table *t = sbx_mgr_surface_state(rq->m, "daytona.session", table_new, table_free);
        if (!t)
                cx_daytona_err(rq, 503, "out of memory");
        return t;
}
