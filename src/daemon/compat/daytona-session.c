/* daytona-session.c — Daytona's sessions (the toolbox's /process/session) and code interpreter
 * (/process/interpreter). Both are one long-lived process in the sandbox fed on its stdin, a pipe
 * serve keeps: a session is a bash that runs each command with `eval` (so cd, exports and
 * functions persist from one command to the next), an interpreter context a python3 that runs
 * each piece of code in one namespace (so names persist). Each unit of work — a command, a run —
 * ends with a marker line on both stdout and stderr: "\x1e" NONCE ":" PAYLOAD "\n", the nonce
 * random per process; what came on a stream before its marker is the unit's. A session's command
 * answers at its end (or 202 at once when async) with its output and exit code; its logs are kept
 * (at most LOG_MAX a stream) and streamed to followers (Daytona's log WebSocket: each chunk
 * behind \x01\x01\x01 for stdout or \x02\x02\x02 for stderr, a close 1000 at the end). An
 * interpreter run streams over its own WebSocket as JSON text frames ({"type": "stdout" |
 * "stderr" | "error" | "control", …}); at its timeout the run is interrupted (SIGINT, python's
 * KeyboardInterrupt) and the socket closed with 4008.
 *
 * Input for a session's command goes to the shell's stdin, as Daytona does it: the command that
 * reads its stdin reads it (and a command queued behind a running one waits in the same pipe).
 * When the process has ended (the command ran `exit`, the sandbox went, a limit ended it), the
 * unit that was running ends with the process's exit code and later commands answer 410; the
 * session stays listed until deleted. Kept in serve's memory (lost when serve restarts: the
 * sandbox's processes are then orphaned with their pipe, and end). */
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

#define SESSIONS_MAX 256 /* sessions and contexts, per server */
#define UNITS_MAX 1000 /* commands kept per session (the oldest ended ones go first) */
#define LOG_MAX (4u * 1024 * 1024) /* per command and stream */
#define LOGS_MAX (32u * 1024 * 1024) /* per session: past it, the oldest ended commands go */
#define MARKER_LINE_MAX (256u * 1024) /* a marker's payload (the interpreter's traceback) */
#define PIPE_SIZE (1024 * 1024)

/* ---- a process fed on its stdin, its output cut into units by markers --------------------- */

typedef struct sink {
        struct sink *next;
        int fd;
        bool interp; /* JSON text frames; else Daytona's log stream (binary, prefixed) */
        bool gone; /* a write failed: the client has gone */
        char held[3][4]; /* interp: the start of a UTF-8 sequence cut short, per stream */
        size_t held_len[3];
} sink;

typedef struct unit {
        struct unit *next;
        char id[40];
        char *command;
        char *out, *err, *both, *labeled; /* labeled: each chunk behind its stream's prefix */
        size_t out_len, err_len, both_len, labeled_len;
        bool truncated;
        bool seen[3]; /* its marker came on stdout [1], on stderr [2] */
        bool done;
        unsigned pins; /* a request waits on it: not dropped */
        int exit_code; /* -1: none (did not run to its marker, or the process ended otherwise) */
        json_t *result; /* the interpreter's marker payload */
        sink *sinks;
} unit;

typedef struct mproc {
        atomic_int refs;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        sbx_mgr *m;
        sbx_caller who;
        char sandbox[32], exec_id[32];
        bool interp;
        int in_w; /* its stdin; -1 once it ended */
        char mark[40];
        size_t mark_len;
        unit *units;
        size_t n_units, log_bytes;
        char *pend[3]; /* bytes not yet cut, per stream */
        size_t pend_len[3];
        bool ended;
        char why[256]; /* how it ended */
} mproc;

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

static mproc *mp_ref(mproc *p) {
        atomic_fetch_add(&p->refs, 1);
        return p;
}

static void mp_unref(mproc *p) {
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

static void sink_send(sink *s, int op, const void *d, size_t n) {
        if (!s->gone && sbx_ws_send(s->fd, op, d, n, false) < 0) {
                s->gone = true; /* the reader's thread sees its socket shut */
                (void) shutdown(s->fd, SHUT_RDWR);
        }
}

static void sink_json(sink *s, json_t *j /* stolen */) {
        char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (t)
                sink_send(s, SBX_WS_TEXT, t, strlen(t));
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
                sink_json(s, json_pack("{s:s, s:o}", "type", fd == 2 ? "stderr" : "stdout", "text", t));
        else
                json_decref(t);
}

/* Under p->lock. */
static void unit_drop(mproc *p, unit *u) {
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
                        unit_drop(p, u);
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
                                sink_send(s, SBX_WS_BINARY, f, n + 3);
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
        mp_unref(p);
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
                mp_unref(p);
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
static unsigned mp_write(mproc *p, const char *d, size_t n) {
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
static unit *unit_add(mproc *p, const char *command) {
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
static char *shell_text(const mproc *p, const unit *u) {
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

typedef struct entry {
        struct entry *next;
        char sandbox[32], id[101];
        bool context; /* an interpreter context; else a session */
        char *cwd;
        int64_t created_ms;
        mproc *p;
} entry;

typedef struct table {
        pthread_mutex_t lock;
        entry *entries;
} table;

static void *table_new(void) {
        table *t = calloc(1, sizeof *t);
        if (t)
                pthread_mutex_init(&t->lock, NULL);
        return t;
}

static void entry_free(entry *e) {
        if (!e)
                return;
        mp_unref(e->p);
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
static mproc *lookup(table *t, const char *sandbox, const char *id, bool context) {
        mproc *p = NULL;
        pthread_mutex_lock(&t->lock);
        for (entry *e = t->entries; e; e = e->next)
                if (e->p && e->context == context && streq(e->sandbox, sandbox) && streq(e->id, id)) {
                        p = mp_ref(e->p);
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
static bool drop(table *t, const char *sandbox, const char *id, bool context) {
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
static unsigned create(sbx_mgr *m, const sbx_caller *who, table *t, const char *sandbox, const char *id,
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
                mp_unref(p);
                snprintf(why, size, "the %s was deleted as it started", context ? "context" : "session");
                return 409;
        }
        if (!p)
                entry_free(e);
        return code;
}

static table *table_of(cx_req *rq) {
        table *t = sbx_mgr_surface_state(rq->m, "daytona.session", table_new, table_free);
        if (!t)
                cx_daytona_err(rq, 503, "out of memory");
        return t;
}

/* ---- sessions ----------------------------------------------------------------------------- */

/* Under p->lock. */
static json_t *command_json(const unit *u) {
        json_t *j = json_pack("{s:s, s:s}", "id", u->id, "command", u->command);
        if (u->done && u->exit_code >= 0)
                json_object_set_new(j, "exitCode", json_integer(u->exit_code));
        return j;
}

static json_t *session_json(const char *id, mproc *p) {
        json_t *cmds = json_array();
        if (p) {
                pthread_mutex_lock(&p->lock);
                for (unit *u = p->units; u; u = u->next)
                        json_array_append_new(cmds, command_json(u));
                pthread_mutex_unlock(&p->lock);
        }
        return json_pack("{s:s, s:o}", "sessionId", id, "commands", cmds);
}

static json_t *logs_json(const unit *u) {
        return json_pack("{s:s%, s:s%, s:s%}", "output", u->both ? u->both : "", u->both_len, "stdout",
                u->out ? u->out : "", u->out_len, "stderr", u->err ? u->err : "", u->err_len);
}

static unit *find_unit(mproc *p, const char *id) {
        for (unit *u = p->units; u; u = u->next)
                if (streq(u->id, id))
                        return u;
        return NULL;
}

static void ended_err(cx_req *rq, const char *what, const char *id, mproc *p) {
        cx_daytona_err(rq, 410, "%s '%s' has ended: %s (delete it and create another)", what, id, p->why);
}

static void session_exec(cx_req *rq, const char *id, mproc *p) {
        json_error_t je;
        json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, &je);
        json_t *cmd = json_object_get(body, "command"), *a1 = json_object_get(body, "runAsync"),
               *a2 = json_object_get(body, "async");
        if (!json_is_object(body) || !json_is_string(cmd) || !*json_string_value(cmd) ||
                (a1 && !json_is_boolean(a1) && !json_is_null(a1)) ||
                (a2 && !json_is_boolean(a2) && !json_is_null(a2))) {
                cx_daytona_err(rq, 400,
                        "a JSON object with command (a non-empty string) is required; runAsync a boolean");
                json_decref(body);
                return;
        }
        bool async = json_is_true(a1) || json_is_true(a2);
        pthread_mutex_lock(&p->lock);
        unit *u = p->ended ? NULL : unit_add(p, json_string_value(cmd));
        _cleanup_free_ char *text = u ? shell_text(p, u) : NULL;
        unsigned code = p->ended ? 410 : !text ? 503 : mp_write(p, text, strlen(text));
        if (code && u)
                unit_drop(p, u);
        if (code == 410)
                ended_err(rq, "session", id, p);
        else if (code == 409)
                cx_daytona_err(rq, 409,
                        "session '%s' has not yet read the commands before this one (its stdin is full: "
                        "a command still runs); try again when it ends",
                        id);
        else if (code)
                cx_daytona_err(rq, 503, "out of memory");
        else if (async)
                cx_respond_json(rq, 202, json_pack("{s:s}", "cmdId", u->id));
        else {
                u->pins++;
                while (!u->done)
                        pthread_cond_wait(&p->cond, &p->lock);
                u->pins--;
                json_t *r = logs_json(u);
                json_object_set_new(r, "cmdId", json_string(u->id));
                if (u->exit_code >= 0)
                        json_object_set_new(r, "exitCode", json_integer(u->exit_code));
                cx_respond_json(rq, 200, r);
        }
        pthread_mutex_unlock(&p->lock);
        json_decref(body);
}

typedef struct follow {
        mproc *p;
        char unit_id[40];
        bool interp;
} follow;

/* Daytona's log WebSocket: what the command printed so far, then as it comes, a close at its end. */
static void follow_session(void *ud, int fd, const char *extra, size_t n) {
        follow *f = ud;
        mproc *p = f->p;
        (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        struct timeval tv = {.tv_sec = 10};
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* a stuck reader is dropped */
        sink *s = calloc(1, sizeof *s);
        pthread_mutex_lock(&p->lock);
        unit *u = find_unit(p, f->unit_id);
        bool wait = false;
        if (s && u) {
                s->fd = fd;
                if (u->labeled_len)
                        sink_send(s, SBX_WS_BINARY, u->labeled, u->labeled_len);
                if (u->done) {
                        (void) sbx_ws_send_close(fd, 1000, "", false);
                } else {
                        s->next = u->sinks;
                        u->sinks = s;
                        wait = true;
                }
        } else
                (void) sbx_ws_send_close(fd, 1011, "the command is gone", false);
        pthread_mutex_unlock(&p->lock);
        sbx_ws_reader r;
        sbx_ws_reader_init(&r, fd, extra, n);
        while (wait) { /* until the client closes or the end shuts our side */
                int op;
                char *d = NULL;
                size_t len;
                int rr = sbx_ws_recv(&r, &op, &d, &len);
                free(d);
                if (rr < 0 || op == SBX_WS_CLOSE)
                        break;
        }
        pthread_mutex_lock(&p->lock);
        if (wait)
                for (sink **pp = &u->sinks; *pp; pp = &(*pp)->next)
                        if (*pp == s) {
                                *pp = s->next;
                                break;
                        }
        pthread_mutex_unlock(&p->lock);
        free(s);
        mp_unref(p);
        free(f);
}

static void follow_drop(void *ud) {
        follow *f = ud;
        mp_unref(f->p);
        free(f);
}

static bool wants_upgrade(cx_req *rq) {
        const char *up = cx_header(rq, "Upgrade"), *key = cx_header(rq, "Sec-WebSocket-Key");
        return up && strcasecmp(up, "websocket") == 0 && key && *key && strlen(key) <= 64;
}

static void upgrade(cx_req *rq, void (*fn)(void *, int, const char *, size_t), follow *f) {
        char accept[29];
        sbx_ws_accept_key(cx_header(rq, "Sec-WebSocket-Key"), accept);
        rq->resp = sbx_http_upgrade_response(fn, f, accept, NULL);
        if (rq->resp)
                rq->code = 101;
        else {
                follow_drop(f);
                cx_daytona_err(rq, 503, "cannot upgrade the connection");
        }
}

static void command_op(cx_req *rq, const char *sid, mproc *p, const char *cid, const char *action) {
        pthread_mutex_lock(&p->lock);
        unit *u = find_unit(p, cid);
        if (!u) {
                pthread_mutex_unlock(&p->lock);
                cx_daytona_err(rq, 404, "command '%s' not found in session '%s'", cid, sid);
                return;
        }
        if (!*action && streq(rq->method, "GET"))
                cx_respond_json(rq, 200, command_json(u));
        else if (streq(action, "/logs") && streq(rq->method, "GET")) {
                const char *fl = cx_query(rq, "follow");
                if (fl && streq(fl, "true") && wants_upgrade(rq)) {
                        follow *f = calloc(1, sizeof *f);
                        if (f) {
                                f->p = mp_ref(p);
                                snprintf(f->unit_id, sizeof f->unit_id, "%s", u->id);
                                pthread_mutex_unlock(&p->lock);
                                upgrade(rq, follow_session, f);
                                return;
                        }
                        cx_daytona_err(rq, 503, "out of memory");
                } else if (fl && streq(fl, "true"))
                        cx_daytona_err(rq, 426, "following logs is a WebSocket (Upgrade: websocket)");
                else
                        cx_respond_json(rq, 200, logs_json(u));
        } else if (streq(action, "/input") && streq(rq->method, "POST")) {
                json_error_t je;
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, &je);
                const char *d = json_string_value(json_object_get(body, "data"));
                unsigned code = !d ? 400 : u->done ? 410 : mp_write(p, d, strlen(d));
                if (code == 400)
                        cx_daytona_err(rq, 400, "a JSON object with data (a string) is required");
                else if (code == 410 && p->ended)
                        ended_err(rq, "session", sid, p);
                else if (code == 410)
                        cx_daytona_err(rq, 410, "command '%s' has ended: it reads no more input", cid);
                else if (code == 409)
                        cx_daytona_err(rq, 409, "the session's stdin is full: the command does not read it");
                else
                        cx_respond_json(rq, 200, json_object());
                json_decref(body);
        } else
                cx_daytona_err(rq, 405, "%s: not an operation on a session's command", rq->method);
        pthread_mutex_unlock(&p->lock);
}

static bool sessions(
        cx_req *rq, table *t, const char *sandbox, const char *rest, char *const *env, const char *home) {
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST"),
             del = streq(rq->method, "DELETE");
        if (!*rest && post) {
                json_error_t je;
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, &je);
                const char *id = json_string_value(json_object_get(body, "sessionId"));
                if (!json_is_object(body) || !id)
                        cx_daytona_err(rq, 400, "a JSON object with sessionId (a string) is required");
                else if (!cx_daytona_id_ok(id) || streq(id, "entrypoint"))
                        cx_daytona_err(rq, 400,
                                "sessionId: 1 to 100 letters, digits, '.', '_' or '-' ('entrypoint' is "
                                "taken)");
                else {
                        char why[300];
                        unsigned code = create(
                                rq->m, &rq->caller, t, sandbox, id, false, env, home, why, sizeof why);
                        if (code)
                                cx_daytona_err(rq, code, "%s", why);
                        else
                                cx_respond_json(rq, 201, json_object());
                }
                json_decref(body);
                return true;
        }
        if (!*rest && get) {
                json_t *list = json_array();
                char(*ids)[101] = NULL;
                mproc **ps = NULL;
                size_t n = 0;
                pthread_mutex_lock(&t->lock);
                for (entry *e = t->entries; e; e = e->next)
                        n += !e->context && e->p && streq(e->sandbox, sandbox);
                ids = calloc(n + 1, sizeof *ids);
                ps = calloc(n + 1, sizeof *ps);
                size_t k = 0;
                for (entry *e = t->entries; e && ids && ps; e = e->next)
                        if (!e->context && e->p && streq(e->sandbox, sandbox)) {
                                snprintf(ids[k], sizeof ids[k], "%s", e->id);
                                ps[k++] = mp_ref(e->p);
                        }
                pthread_mutex_unlock(&t->lock);
                for (size_t i = 0; i < k; i++) { /* oldest first */
                        json_array_insert_new(list, 0, session_json(ids[i], ps[i]));
                        mp_unref(ps[i]);
                }
                free(ids);
                free(ps);
                cx_respond_json(rq, 200, list);
                return true;
        }
        if (streq(rest, "/entrypoint") && get) { /* sandboxer's sandboxes have no entrypoint */
                cx_respond_json(rq, 200, json_pack("{s:s, s:[]}", "sessionId", "entrypoint", "commands"));
                return true;
        }
        if (streq(rest, "/entrypoint/logs") && get) {
                cx_respond_json(
                        rq, 200, json_pack("{s:s, s:s, s:s}", "output", "", "stdout", "", "stderr", ""));
                return true;
        }
        char sid[101];
        const char *slash = strchr(rest + 1, '/');
        size_t l = slash ? (size_t) (slash - rest - 1) : strlen(rest + 1);
        if (rest[0] != '/' || l == 0 || l >= sizeof sid) {
                cx_daytona_err(rq, 404, "no such session endpoint: %s", rq->method);
                return true;
        }
        memcpy(sid, rest + 1, l);
        sid[l] = 0;
        const char *action = slash ? slash : "";
        if (!*action && del) {
                if (drop(t, sandbox, sid, false))
                        cx_respond_json(rq, 200, json_object());
                else
                        cx_daytona_err(rq, 404, "session '%s' not found", sid);
                return true;
        }
        mproc *p = lookup(t, sandbox, sid, false);
        if (!p)
                cx_daytona_err(rq, 404, "session '%s' not found", sid);
        else if (!*action && get)
                cx_respond_json(rq, 200, session_json(sid, p));
        else if (streq(action, "/exec") && post)
                session_exec(rq, sid, p);
        else if (strncmp(action, "/command/", 9) == 0) {
                char cid[40];
                const char *cs = strchr(action + 9, '/');
                size_t cl = cs ? (size_t) (cs - action - 9) : strlen(action + 9);
                if (cl == 0 || cl >= sizeof cid)
                        cx_daytona_err(rq, 404, "no such command in session '%s'", sid);
                else {
                        memcpy(cid, action + 9, cl);
                        cid[cl] = 0;
                        command_op(rq, sid, p, cid, cs ? cs : "");
                }
        } else
                cx_daytona_err(rq, 405, "%s: not a session operation", rq->method);
        mp_unref(p);
        (void) home;
        return true;
}

/* ---- the code interpreter ----------------------------------------------------------------- */

#define DEFAULT_CONTEXT "default"

static json_t *context_json(const entry *e) {
        char at[40];
        cx_iso_time(e->created_ms, at);
        bool active = false;
        if (e->p) {
                pthread_mutex_lock(&e->p->lock);
                active = !e->p->ended;
                pthread_mutex_unlock(&e->p->lock);
        }
        return json_pack("{s:s, s:s, s:s, s:s, s:b}", "id", e->id, "cwd", e->cwd, "language", "python",
                "createdAt", at, "active", active);
}

typedef struct run {
        sbx_mgr *m;
        table *t;
        sbx_caller who;
        char sandbox[32];
        char **env;
        char *home;
} run;

static void run_free(run *r) {
        cx_strv_free(r->env);
        free(r->home);
        free(r);
}

/* A context's process for a run: the named one, or the default one (made at the first run, made
 * again when it has ended). NULL with the reason in why. */
static mproc *run_context(run *r, const char *id, char *why, size_t size) {
        mproc *p = NULL;
        const char *want = id ? id : DEFAULT_CONTEXT;
        p = lookup(r->t, r->sandbox, want, true);
        if (p && id)
                return p;
        if (p) {
                pthread_mutex_lock(&p->lock);
                bool ended = p->ended;
                pthread_mutex_unlock(&p->lock);
                if (!ended)
                        return p;
                mp_unref(p);
                (void) drop(r->t, r->sandbox, DEFAULT_CONTEXT, true);
        } else if (id) {
                snprintf(why, size, "context '%s' not found", id);
                return NULL;
        }
        unsigned code =
                create(r->m, &r->who, r->t, r->sandbox, DEFAULT_CONTEXT, true, r->env, r->home, why, size);
        if (code == 0 || code == 409) /* 409: a run beside this one made it */
                p = lookup(r->t, r->sandbox, DEFAULT_CONTEXT, true);
        if (!p && code == 409)
                snprintf(why, size, "the default context is starting; try again");
        return p;
}

static void run_session(void *ud, int fd, const char *extra, size_t n) {
        run *r = ud;
        (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        struct timeval tv = {.tv_sec = 10};
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        sbx_ws_reader rd;
        sbx_ws_reader_init(&rd, fd, extra, n);
        int op = 0;
        char *d = NULL;
        size_t len = 0;
        sink s = {.fd = fd, .interp = true};
        while (sbx_ws_recv(&rd, &op, &d, &len) == 0 && op != SBX_WS_TEXT && op != SBX_WS_BINARY &&
                op != SBX_WS_CLOSE) {
                free(d);
                d = NULL;
        }
        json_error_t je;
        json_t *req = d && (op == SBX_WS_TEXT || op == SBX_WS_BINARY) ? json_loadb(d, len, 0, &je) : NULL;
        free(d);
        json_t *code = json_object_get(req, "code"), *cid = json_object_get(req, "contextId"),
               *envs = json_object_get(req, "envs"), *to = json_object_get(req, "timeout");
        char why[300] = "";
        mproc *p = NULL;
        if (!json_is_object(req) || !json_is_string(code) ||
                (cid && !json_is_null(cid) && !json_is_string(cid)) || !cx_string_map_ok(envs, true) ||
                (to && !json_is_null(to) && !json_is_number(to)))
                snprintf(why, sizeof why,
                        "the first message must be a JSON object with code (a string); contextId a string, "
                        "envs an object of strings, timeout a number of seconds");
        else
                p = run_context(r, json_string_value(cid), why, sizeof why);
        double timeout = json_is_number(to) ? json_number_value(to) : 0;
        json_t *line = p ? json_pack("{s:O, s:O?}", "code", code, "envs", envs) : NULL;
        char *j = line ? json_dumps(line, JSON_COMPACT) : NULL, *text = NULL;
        if (j && asprintf(&text, "%s\n", j) < 0)
                text = NULL;
        free(j);
        json_decref(line);
        unit *u = NULL;
        bool timed_out = false;
        if (p) {
                pthread_mutex_lock(&p->lock);
                u = p->ended ? NULL : unit_add(p, json_string_value(code));
                unsigned c = !u || !text ? (p->ended ? 410 : 503) : mp_write(p, text, strlen(text));
                if (c) {
                        if (u)
                                unit_drop(p, u);
                        u = NULL;
                        snprintf(why, sizeof why, "%s",
                                c == 410   ? "the context has ended: delete it and create another"
                                : c == 409 ? "the context is busy with runs not yet read; try again"
                                           : "out of memory");
                } else {
                        u->sinks = &s;
                        struct timespec dl;
                        clock_gettime(CLOCK_REALTIME, &dl);
                        dl.tv_sec += (time_t) timeout;
                        dl.tv_nsec += (long) ((timeout - (double) (time_t) timeout) * 1e9);
                        if (dl.tv_nsec >= 1000000000L)
                                dl.tv_sec++, dl.tv_nsec -= 1000000000L;
                        int sig = SIGINT; /* at the timeout: KeyboardInterrupt; 5 s later the context */
                        while (!u->done && !s.gone) {
                                if (timeout > 0 && sig) {
                                        if (pthread_cond_timedwait(&p->cond, &p->lock, &dl) == ETIMEDOUT &&
                                                !u->done) {
                                                timed_out = true;
                                                pthread_mutex_unlock(&p->lock);
                                                (void) sbx_mgr_exec_signal(
                                                        r->m, &r->who, r->sandbox, p->exec_id, sig);
                                                pthread_mutex_lock(&p->lock);
                                                sig = sig == SIGINT ? SIGKILL : 0;
                                                dl.tv_sec += 5;
                                        }
                                } else
                                        pthread_cond_wait(&p->cond, &p->lock);
                        }
                        if (u->done && !timed_out) {
                                json_t *err = json_object_get(u->result, "error");
                                if (json_is_object(err))
                                        sink_json(&s, json_pack("{s:s, s:O, s:O, s:O}", "type", "error",
                                                              "name", json_object_get(err, "name"), "value",
                                                              json_object_get(err, "value"), "traceback",
                                                              json_object_get(err, "traceback")));
                                else if (!u->result) /* the process ended under it */
                                        sink_json(&s,
                                                json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name",
                                                        "ContextEnded", "value", p->why, "traceback", ""));
                                sink_json(
                                        &s, json_pack("{s:s, s:s}", "type", "control", "text", "completed"));
                        }
                        u->sinks = NULL;
                }
                pthread_mutex_unlock(&p->lock);
        }
        free(text);
        if (!s.gone) {
                if (timed_out)
                        (void) sbx_ws_send_close(fd, 4008, "the run timed out and was interrupted", false);
                else if (!u)
                        (void) sbx_ws_send_close(fd, 1011, why, false);
                else
                        (void) sbx_ws_send_close(fd, 1000, "", false);
        }
        mp_unref(p);
        json_decref(req);
        run_free(r);
}

static void run_drop(void *ud) {
        run_free(ud);
}

static bool interpreter(
        cx_req *rq, table *t, const char *sandbox, const char *rest, char *const *env, const char *home) {
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST"),
             del = streq(rq->method, "DELETE");
        if (streq(rest, "/execute") && get) {
                if (!wants_upgrade(rq)) {
                        cx_daytona_err(rq, 426,
                                "this is a WebSocket endpoint (Upgrade: websocket, Sec-WebSocket-Key)");
                        return true;
                }
                run *r = calloc(1, sizeof *r);
                size_t n = 0;
                for (char *const *v = env; v && *v; v++)
                        n++;
                if (r)
                        r->env = calloc(n + 1, sizeof *r->env);
                if (!r || !r->env || !(r->home = strdup(home))) {
                        if (r)
                                run_free(r);
                        cx_daytona_err(rq, 503, "out of memory");
                        return true;
                }
                for (size_t i = 0; i < n; i++)
                        r->env[i] = strdup(env[i]);
                r->m = rq->m;
                r->t = t;
                r->who = rq->caller;
                snprintf(r->sandbox, sizeof r->sandbox, "%s", sandbox);
                char accept[29];
                sbx_ws_accept_key(cx_header(rq, "Sec-WebSocket-Key"), accept);
                rq->resp = sbx_http_upgrade_response(run_session, r, accept, NULL);
                if (rq->resp)
                        rq->code = 101;
                else {
                        run_drop(r);
                        cx_daytona_err(rq, 503, "cannot upgrade the connection");
                }
                return true;
        }
        if (streq(rest, "/context") && post) {
                json_error_t je;
                json_t *body =
                        json_loadb(rq->body && rq->len ? rq->body : "{}", rq->len ? rq->len : 2, 0, &je);
                json_t *jc = json_object_get(body, "cwd"), *jl = json_object_get(body, "language");
                _cleanup_free_ char *cwd = json_is_string(jc) && *json_string_value(jc)
                                                   ? cx_path(json_string_value(jc), home, NULL)
                                                   : strdup(home);
                char id[33], why[300];
                unsigned code;
                if (!json_is_object(body) || (jc && !json_is_null(jc) && !json_is_string(jc)) ||
                        (jl && !json_is_null(jl) && !json_is_string(jl)) || !cwd)
                        cx_daytona_err(rq, 400, "a JSON object: cwd a path, language a string");
                else if (json_is_string(jl) && !streq(json_string_value(jl), "python"))
                        cx_daytona_err(rq, 400,
                                "language '%.64s': the interpreter runs python (use codeRun for others)",
                                json_string_value(jl));
                else if (!cx_random_hex(id, 16))
                        cx_daytona_err(rq, 503, "the host has no randomness for an id");
                else if ((code = create(
                                  rq->m, &rq->caller, t, sandbox, id, true, env, cwd, why, sizeof why)))
                        cx_daytona_err(rq, code, "%s", why);
                else {
                        json_t *out = NULL;
                        pthread_mutex_lock(&t->lock);
                        for (entry *e = t->entries; e && !out; e = e->next)
                                if (e->context && streq(e->sandbox, sandbox) && streq(e->id, id))
                                        out = context_json(e);
                        pthread_mutex_unlock(&t->lock);
                        cx_respond_json(rq, 200, out ?: json_object());
                }
                json_decref(body);
                return true;
        }
        if (streq(rest, "/context") && get) {
                json_t *list = json_array();
                pthread_mutex_lock(&t->lock);
                for (entry *e = t->entries; e; e = e->next)
                        if (e->context && e->p && streq(e->sandbox, sandbox) &&
                                !streq(e->id, DEFAULT_CONTEXT))
                                json_array_insert_new(list, 0, context_json(e));
                pthread_mutex_unlock(&t->lock);
                cx_respond_json(rq, 200, json_pack("{s:o}", "contexts", list));
                return true;
        }
        if (strncmp(rest, "/context/", 9) == 0 && del) {
                const char *id = rest + 9;
                if (streq(id, DEFAULT_CONTEXT) || !drop(t, sandbox, id, true))
                        cx_daytona_err(rq, 404, "context '%s' not found", id);
                else
                        cx_respond_json(rq, 200, json_object());
                return true;
        }
        cx_daytona_err(rq, 405, "%s: not an interpreter operation", rq->method);
        return true;
}

bool cx_daytona_session(
        cx_req *rq, const char *sandbox_id, const char *op, char *const *env, const char *home) {
        bool sess = streq(op, "/process/session") || strncmp(op, "/process/session/", 17) == 0;
        bool interp = strncmp(op, "/process/interpreter/", 21) == 0;
        if (!sess && !interp)
                return false;
        table *t = table_of(rq);
        if (!t)
                return true;
        return sess ? sessions(rq, t, sandbox_id, op + 16, env, home)
                    : interpreter(rq, t, sandbox_id, op + 20, env, home);
}
