/* e2b-process.c — envd's process.Process (Connect RPC, JSON codec): Start, Connect, List,
 * SendSignal, SendInput, CloseStdin. A process is a native exec; its output and end go to every
 * stream subscribed to it, as Connect envelopes. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "daemon/compat/compat.h"
#include "daemon/compat/e2b-internal.h"

#define KEEPALIVE_S 50.0

/* ---- envd: the process table ----------------------------------------------------------------- */

#define MAX_SUBS 8

typedef struct proc_table proc_table;

typedef struct proc {
        struct proc *next;
        proc_table *tab;
        atomic_int refs;
        char sandbox[64], exec_id[32];
        int pending_sig; /* signalled before its exec id was known: sent once it is */
        uint32_t pid;
        json_t *config, *tag; /* {cmd, args, envs, cwd}; tag: string or NULL */
        int stdin_w;
        bool tty; /* on a terminal: output is "pty" data, input goes to the terminal */
        cx_stream *subs[MAX_SUBS];
        size_t nsubs;
} proc;

/* The processes envd has started, kept by the manager for its life (sbx_mgr_surface_state):
 * E2B's pids are this table's, handed out from 1000. */
struct proc_table {
        pthread_mutex_t lock;
        proc *procs;
        uint32_t next_pid;
};

static void proc_unref(proc *p);

static void *table_new(void) {
        proc_table *t = calloc(1, sizeof *t);
        if (!t)
                return NULL;
        pthread_mutex_init(&t->lock, NULL);
        t->next_pid = 1000;
        return t;
}

/* When the manager is freed: its exec threads have ended, each process is unlinked already. */
static void table_free(void *state) {
        proc_table *t = state;
        while (t->procs) {
                proc *p = t->procs;
                t->procs = p->next;
                proc_unref(p);
        }
        pthread_mutex_destroy(&t->lock);
        free(t);
}

static proc_table *table(sbx_mgr *m) {
        return sbx_mgr_surface_state(m, "e2b.process", table_new, table_free);
}

/* The manager's process table for an envd request, or NULL once the caller has been told why. */
static proc_table *table_of(envd *e) {
        proc_table *tab = table(e->rq->m);
        if (!tab)
                e2b_rpc_err(e->rq, "unavailable", "out of memory");
        return tab;
}

static void proc_unref(proc *p) {
        if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
                return;
        for (size_t i = 0; i < p->nsubs; i++)
                cx_stream_unref(p->subs[i]);
        safe_close(p->stdin_w);
        json_decref(p->config);
        json_decref(p->tag);
        free(p);
}

/* Under tab->lock. */
static proc *proc_find(proc_table *tab, const char *sandbox, const json_t *selector) {
        json_t *pid = json_object_get(selector, "pid"), *tag = json_object_get(selector, "tag");
        for (proc *p = tab->procs; p; p = p->next) {
                if (!streq(p->sandbox, sandbox))
                        continue;
                if (json_is_integer(pid) && (uint32_t) json_integer_value(pid) == p->pid)
                        return p;
                if (json_is_string(tag) && json_is_string(p->tag) &&
                        streq(json_string_value(tag), json_string_value(p->tag)))
                        return p;
        }
        return NULL;
}

static void proc_unlink(proc *p) {
        for (proc **pp = &p->tab->procs; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        p->next = NULL;
                        return;
                }
}

void e2b_frame(cx_stream *s, unsigned char flags, json_t *j /* stolen */) {
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!text)
                return;
        size_t n = strlen(text);
        char *buf = malloc(n + 5);
        if (buf) {
                buf[0] = (char) flags;
                buf[1] = (char) (n >> 24);
                buf[2] = (char) (n >> 16);
                buf[3] = (char) (n >> 8);
                buf[4] = (char) n;
                memcpy(buf + 5, text, n);
                (void) cx_stream_write(s, buf, n + 5);
                free(buf);
        }
        free(text);
}

static void frame_event(cx_stream *s, json_t *event /* stolen */) {
        e2b_frame(s, 0, json_pack("{s:o}", "event", event));
}

static void frame_error(cx_stream *s, const char *code, const char *msg) {
        e2b_frame(s, 2, json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
}

/* A stream of Connect envelopes, with a keepalive event when idle (the SDK asks every 50 s). */
static cx_stream *rpc_stream(void) {
        static const char ka[] = "{\"event\":{\"keepalive\":{}}}";
        char buf[sizeof ka + 4];
        size_t n = sizeof ka - 1;
        buf[0] = 0;
        buf[1] = buf[2] = buf[3] = 0;
        buf[4] = (char) n;
        memcpy(buf + 5, ka, n);
        return cx_stream_new(buf, n + 5, KEEPALIVE_S);
}

static void proc_output(void *ud, int fd, const char *data, size_t n) {
        proc *p = ud;
        char *b = cx_b64_encode(data, n);
        if (!b)
                return;
        pthread_mutex_lock(&p->tab->lock);
        for (size_t i = 0; i < p->nsubs; i++)
                frame_event(p->subs[i], json_pack("{s:{s:s}}", "data",
                                                p->tty    ? "pty"
                                                : fd == 2 ? "stderr"
                                                          : "stdout",
                                                b));
        pthread_mutex_unlock(&p->tab->lock);
        free(b);
}

static void proc_end(void *ud, const json_t *report, const char *error) {
        proc *p = ud;
        const char *status = report ? json_string_value(json_object_get(report, "status")) : NULL;
        const json_t *ex = json_object_get(report, "exit");
        json_t *code = json_object_get(ex, "code"), *sig = json_object_get(ex, "signal");
        const char *rerr = json_string_value(json_object_get(report, "error"));
        int exit_code = json_is_integer(code) ? (int) json_integer_value(code) : -1;
        bool exited = status && streq(status, "exited") && json_is_integer(code);
        char st[128], why[1024] = "";
        if (exited)
                snprintf(st, sizeof st, "exit status %d", exit_code);
        else if (status && streq(status, "signaled") && json_is_integer(sig))
                snprintf(st, sizeof st, "signal: %s",
                        json_integer_value(sig) == SIGKILL ? "killed"
                                                           : strsignal((int) json_integer_value(sig)));
        else
                snprintf(st, sizeof st, "%s", status ?: "failed");
        if (!report)
                snprintf(why, sizeof why, "%s", error ?: "the command could not run");
        else if (!exited && status && !streq(status, "signaled"))
                snprintf(why, sizeof why, "%s%s%s", status, rerr ? ": " : "", rerr ?: "");
        else if (rerr)
                snprintf(why, sizeof why, "%s", rerr);
        json_t *end = json_pack("{s:i, s:b, s:s}", "exitCode",
                exited ? exit_code : (exit_code >= 0 ? exit_code : -1), "exited", exited, "status", st);
        if (why[0])
                json_object_set_new(end, "error", json_string(why));
        pthread_mutex_lock(&p->tab->lock);
        for (size_t i = 0; i < p->nsubs; i++) {
                frame_event(p->subs[i], json_pack("{s:O}", "end", end));
                e2b_frame(p->subs[i], 2, json_object());
                cx_stream_close(p->subs[i]);
        }
        proc_unlink(p);
        p->stdin_w = safe_close(p->stdin_w);
        pthread_mutex_unlock(&p->tab->lock);
        json_decref(end);
        proc_unref(p);
}

/* ---- envd: requests --------------------------------------------------------------------------- */

void e2b_process_refuse(envd *e, const char *code, const char *msg) {
        cx_stream *s = rpc_stream();
        if (!s) {
                e2b_rpc_err(e->rq, "unavailable", "out of memory");
                return;
        }
        frame_error(s, code, msg);
        cx_stream_close(s);
        e->rq->resp = cx_stream_response(s, "application/connect+json");
        e->rq->code = 200;
        cx_stream_unref(s);
}

/* E2B's timeoutMs (0: none), as the Connect-Timeout-Ms header says it. An exec asks it and is
 * long-lived where the profile allows (docs/long-lived.md): then it has exactly that timeout, or
 * none; elsewhere it is bounded, the profile's timeout_s its ceiling. */
static double connect_timeout_s(cx_req *rq) {
        const char *h = cx_header(rq, "Connect-Timeout-Ms");
        double t = h ? strtod(h, NULL) / 1000.0 : 0;
        return t > 0 ? t : 0;
}

void e2b_process_start(envd *e) {
        proc_table *tab = table_of(e);
        if (!tab)
                return;
        cx_req *rq = e->rq;
        json_t *req = e2b_rpc_body(rq, true);
        json_t *pc = json_object_get(req, "process");
        const char *cmd = json_string_value(json_object_get(pc, "cmd"));
        cx_stream *s = rpc_stream();
        char **argv = NULL, **env = NULL;
        char *cwd = NULL;
        proc *p = NULL;
        if (!s) {
                e2b_rpc_err(rq, "unavailable", "out of memory");
                goto out;
        }
        if (!cmd || !*cmd) {
                e2b_rpc_err(rq, "invalid_argument", "process.cmd: a command is required");
                goto out;
        }
        json_t *pty = json_object_get(req, "pty");
        unsigned cols = 0, rows = 0;
        bool tty = pty && !json_is_null(pty);
        if (tty && !sbx_tty_size(json_object_get(pty, "size"), &cols, &rows)) {
                e2b_rpc_err(rq, "invalid_argument", "pty.size: cols and rows from 1 to %d", SBX_TTY_MAX);
                goto out;
        }
        json_t *args = json_object_get(pc, "args"), *envs = json_object_get(pc, "envs");
        json_t *jcwd = json_object_get(pc, "cwd");
        if ((args && !json_is_array(args)) || !cx_string_map_ok(envs, true)) {
                e2b_rpc_err(rq, "invalid_argument",
                        "process.args must be strings and process.envs an object of variables");
                goto out;
        }
        size_t na = json_array_size(args), ne = 0;
        argv = calloc(na + 2, sizeof *argv);
        for (char **v = e->env; v && *v; v++)
                ne++;
        env = calloc(ne + json_object_size(envs) + 1, sizeof *env);
        if (!argv || !env) {
                e2b_rpc_err(rq, "unavailable", "out of memory");
                goto out;
        }
        argv[0] = strdup(cmd);
        for (size_t i = 0; i < na; i++) {
                const char *a = json_string_value(json_array_get(args, i));
                if (!a) {
                        e2b_rpc_err(rq, "invalid_argument", "process.args[%zu]: must be a string", i);
                        goto out;
                }
                argv[i + 1] = strdup(a);
        }
        size_t k = 0;
        for (char **v = e->env; v && *v; v++)
                env[k++] = strdup(*v);
        const char *key;
        json_t *val;
        json_object_foreach(envs, key, val) {
                if (asprintf(&env[k], "%s=%s", key, json_string_value(val)) >= 0)
                        k++;
        }
        if (json_is_string(jcwd) && json_string_length(jcwd) &&
                !(cwd = cx_path(json_string_value(jcwd), e->scratch, e->homes))) {
                e2b_rpc_err(rq, "invalid_argument", "process.cwd: not a usable path");
                goto out;
        }
        bool want_stdin = json_is_true(json_object_get(req, "stdin")) && !tty;
        int pin[2] = {-1, -1};
        if (want_stdin && pipe2(pin, O_CLOEXEC) < 0) {
                e2b_rpc_err(rq, "unavailable", "cannot make a pipe for stdin: %s", strerror(errno));
                goto out;
        }
        p = calloc(1, sizeof *p);
        if (!p) {
                safe_close(pin[0]);
                safe_close(pin[1]);
                e2b_rpc_err(rq, "unavailable", "out of memory");
                goto out;
        }
        atomic_init(&p->refs, 2); /* the callbacks' and ours */
        p->tab = tab;
        snprintf(p->sandbox, sizeof p->sandbox, "%s", e->sandbox);
        p->stdin_w = pin[1];
        p->tty = tty;
        /* "o" steals: a fresh array/object, or one more reference to the request's */
        p->config = json_pack("{s:s, s:o, s:o}", "cmd", cmd, "args", args ? json_incref(args) : json_array(),
                "envs", envs ? json_incref(envs) : json_object());
        if (json_is_string(jcwd))
                json_object_set(p->config, "cwd", jcwd);
        if (json_is_string(json_object_get(req, "tag")))
                p->tag = json_incref(json_object_get(req, "tag"));
        p->subs[p->nsubs++] = s;
        s = NULL; /* the proc's now */
        cx_stream *out_s = p->subs[0];
        pthread_mutex_lock(&tab->lock);
        p->pid = tab->next_pid++;
        if (tab->next_pid == 0)
                tab->next_pid = 1000;
        p->next = tab->procs;
        tab->procs = p;
        /* the start event goes first, before any output the exec's thread may send */
        frame_event(out_s, json_pack("{s:{s:I}}", "start", "pid", (json_int_t) p->pid));
        pthread_mutex_unlock(&tab->lock);
        sbx_exec_spec spec = {.argv = argv,
                .env = env,
                .cwd = cwd,
                .timeout_s = connect_timeout_s(rq),
                .stdin_fd = pin[0],
                .tty_cols = cols,
                .tty_rows = rows,
                .long_lived = -1};
        sbx_exec_stream_cb cb = {.on_output = proc_output, .on_end = proc_end, .userdata = p};
        char exec_id[32];
        json_t *err = NULL;
        unsigned code = sbx_mgr_exec_start(rq->m, &rq->caller, e->sandbox, &spec, &cb, exec_id, &err);
        safe_close(pin[0]);
        if (code) {
                pthread_mutex_lock(&tab->lock);
                proc_unlink(p);
                pthread_mutex_unlock(&tab->lock);
                cx_stream_clear(out_s);
                frame_error(out_s, code == 410 || code == 404 ? "unavailable" : e2b_connect_code(code),
                        e2b_native_message(err));
                cx_stream_close(out_s);
                json_decref(err);
                rq->resp = cx_stream_response(out_s, "application/connect+json");
                rq->code = 200;
                atomic_fetch_sub(&p->refs, 1); /* the callbacks will not run */
                proc_unref(p);
                p = NULL;
                goto out;
        }
        pthread_mutex_lock(&tab->lock);
        snprintf(p->exec_id, sizeof p->exec_id, "%s", exec_id);
        int pending = p->pending_sig;
        pthread_mutex_unlock(&tab->lock);
        /* a kill that came between its start event and now */
        if (pending)
                (void) sbx_mgr_exec_signal(rq->m, &rq->caller, e->sandbox, exec_id, pending);
        rq->resp = cx_stream_response(out_s, "application/connect+json");
        rq->code = 200;
        proc_unref(p);
        p = NULL;
out:
        cx_stream_unref(s);
        cx_strv_free(argv);
        cx_strv_free(env);
        free(cwd);
        json_decref(req);
}

void e2b_process_connect(envd *e) {
        proc_table *tab = table_of(e);
        if (!tab)
                return;
        cx_req *rq = e->rq;
        json_t *req = e2b_rpc_body(rq, true);
        cx_stream *s = rpc_stream();
        if (!s) {
                json_decref(req);
                e2b_rpc_err(rq, "unavailable", "out of memory");
                return;
        }
        /* the response's reference first: a subscribed stream is the process's once it ends */
        rq->resp = cx_stream_response(s, "application/connect+json");
        rq->code = 200;
        bool subscribed = false;
        pthread_mutex_lock(&tab->lock);
        proc *p = proc_find(tab, e->sandbox, json_object_get(req, "process"));
        if (p && p->nsubs < MAX_SUBS) {
                frame_event(s, json_pack("{s:{s:I}}", "start", "pid", (json_int_t) p->pid));
                p->subs[p->nsubs++] = s;
                subscribed = true;
        } else {
                frame_error(s, p ? "resource_exhausted" : "not_found",
                        p ? "too many connections to this process" : "no such process is running");
                cx_stream_close(s);
        }
        pthread_mutex_unlock(&tab->lock);
        if (!subscribed)
                cx_stream_unref(s);
        json_decref(req);
}

void e2b_process_list(envd *e) {
        proc_table *tab = table_of(e);
        if (!tab)
                return;
        json_t *list = json_array();
        pthread_mutex_lock(&tab->lock);
        for (proc *p = tab->procs; p; p = p->next) {
                if (!streq(p->sandbox, e->sandbox))
                        continue;
                json_t *pi = json_pack("{s:O, s:I}", "config", p->config, "pid", (json_int_t) p->pid);
                if (p->tag)
                        json_object_set(pi, "tag", p->tag);
                json_array_append_new(list, pi);
        }
        pthread_mutex_unlock(&tab->lock);
        cx_respond_json(e->rq, 200, json_pack("{s:o}", "processes", list));
}

void e2b_process_signal(envd *e) {
        proc_table *tab = table_of(e);
        if (!tab)
                return;
        cx_req *rq = e->rq;
        json_t *req = e2b_rpc_body(rq, false);
        json_t *sig = json_object_get(req, "signal");
        int signo = json_is_integer(sig) ? (int) json_integer_value(sig)
                    : json_is_string(sig) && streq(json_string_value(sig), "SIGNAL_SIGKILL") ? SIGKILL
                    : json_is_string(sig) && streq(json_string_value(sig), "SIGNAL_SIGTERM") ? SIGTERM
                                                                                             : 0;
        if (signo != SIGKILL && signo != SIGTERM) {
                json_decref(req);
                e2b_rpc_err(rq, "invalid_argument", "signal: SIGNAL_SIGKILL or SIGNAL_SIGTERM");
                return;
        }
        char exec_id[32] = "";
        pthread_mutex_lock(&tab->lock);
        proc *p = proc_find(tab, e->sandbox, json_object_get(req, "process"));
        bool held = false;
        if (p)
                snprintf(exec_id, sizeof exec_id, "%s", p->exec_id);
        if (p && !exec_id[0]) {
                /* its start event is out, its exec not yet known: the signal goes when it is */
                p->pending_sig = signo;
                held = true;
        }
        pthread_mutex_unlock(&tab->lock);
        json_decref(req);
        if (held) {
                cx_respond_json(rq, 200, json_object());
                return;
        }
        if (!exec_id[0]) {
                e2b_rpc_err(rq, "not_found", "no such process is running");
                return;
        }
        int r = sbx_mgr_exec_signal(rq->m, &rq->caller, e->sandbox, exec_id, signo);
        if (r == -ESRCH || r == -ENOENT)
                e2b_rpc_err(rq, "not_found", "no such process is running");
        else if (r < 0)
                e2b_rpc_err(rq, "internal", "the signal could not be sent: %s", strerror(-r));
        else
                cx_respond_json(rq, 200, json_object());
}

void e2b_process_input(envd *e, bool close_it) {
        proc_table *tab = table_of(e);
        if (!tab)
                return;
        cx_req *rq = e->rq;
        json_t *req = e2b_rpc_body(rq, false);
        char *data = NULL;
        size_t n = 0;
        json_t *ptyin = json_object_get(json_object_get(req, "input"), "pty");
        if (!close_it) {
                json_t *in = ptyin ? ptyin : json_object_get(json_object_get(req, "input"), "stdin");
                if (!json_is_string(in) ||
                        cx_b64_decode(json_string_value(in), json_string_length(in), &data, &n) < 0) {
                        json_decref(req);
                        e2b_rpc_err(rq, "invalid_argument",
                                "input.stdin or input.pty: base64 bytes are required");
                        return;
                }
        }
        if (ptyin && !close_it) { /* to the terminal */
                char exec_id[32] = "";
                pthread_mutex_lock(&tab->lock);
                proc *p = proc_find(tab, e->sandbox, json_object_get(req, "process"));
                if (p && p->tty)
                        snprintf(exec_id, sizeof exec_id, "%s", p->exec_id);
                bool notty = p && !p->tty;
                pthread_mutex_unlock(&tab->lock);
                json_decref(req);
                json_t *err = NULL;
                unsigned code = exec_id[0] ? sbx_mgr_pty_input(
                                                     rq->m, &rq->caller, e->sandbox, exec_id, data, n, &err)
                                           : 404;
                free(data);
                if (notty)
                        e2b_rpc_err(rq, "failed_precondition", "the process was not started with a PTY");
                else if (code == 404 || code == 410)
                        e2b_rpc_err(rq, "not_found", "no such process is running");
                else if (code)
                        e2b_rpc_err(rq, "internal", "%s", e2b_native_message(err));
                else
                        cx_respond_json(rq, 200, json_object());
                json_decref(err);
                return;
        }
        int fd = -1;
        bool found;
        pthread_mutex_lock(&tab->lock);
        proc *p = proc_find(tab, e->sandbox, json_object_get(req, "process"));
        found = p != NULL;
        if (p && close_it)
                p->stdin_w = safe_close(p->stdin_w);
        else if (p && p->stdin_w >= 0)
                fd = fcntl(p->stdin_w, F_DUPFD_CLOEXEC, 3);
        pthread_mutex_unlock(&tab->lock);
        json_decref(req);
        if (!found)
                e2b_rpc_err(rq, "not_found", "no such process is running");
        else if (close_it)
                cx_respond_json(rq, 200, json_object());
        else if (fd < 0)
                e2b_rpc_err(rq, "failed_precondition",
                        "the process was not started with stdin, or its stdin is closed");
        else {
                bool ok = true;
                for (size_t off = 0; off < n && ok;) {
                        ssize_t w = write(fd, data + off, n - off);
                        if (w < 0 && errno == EINTR)
                                continue;
                        ok = w > 0;
                        if (ok)
                                off += (size_t) w;
                }
                close(fd);
                if (ok)
                        cx_respond_json(rq, 200, json_object());
                else
                        e2b_rpc_err(rq, "failed_precondition", "the process no longer reads its stdin");
        }
        free(data);
}

/* Update: a terminal's size (the SDK's pty.resize). */
void e2b_process_update(envd *e) {
        proc_table *tab = table_of(e);
        if (!tab)
                return;
        cx_req *rq = e->rq;
        json_t *req = e2b_rpc_body(rq, false);
        json_t *size = json_object_get(json_object_get(req, "pty"), "size");
        unsigned cols = 0, rows = 0;
        (void) sbx_tty_size(size, &cols, &rows); /* 0 when not: the resize says why */
        char exec_id[32] = "";
        pthread_mutex_lock(&tab->lock);
        proc *p = proc_find(tab, e->sandbox, json_object_get(req, "process"));
        bool found = p != NULL, tty = p && p->tty;
        if (tty)
                snprintf(exec_id, sizeof exec_id, "%s", p->exec_id);
        pthread_mutex_unlock(&tab->lock);
        json_decref(req);
        if (!size) {
                e2b_rpc_err(rq, "invalid_argument", "pty.size: {cols, rows} is required");
                return;
        }
        if (!found || (tty && !exec_id[0])) {
                e2b_rpc_err(rq, "not_found", "no such process is running");
                return;
        }
        if (!tty) {
                e2b_rpc_err(rq, "failed_precondition", "the process was not started with a PTY");
                return;
        }
        json_t *err = NULL;
        unsigned code = sbx_mgr_pty_resize(rq->m, &rq->caller, e->sandbox, exec_id, cols, rows, &err);
        if (code == 400)
                e2b_rpc_err(rq, "invalid_argument", "pty.size: cols and rows from 1 to %d", SBX_TTY_MAX);
        else if (code)
                e2b_rpc_err(rq, "not_found", "no such process is running");
        else
                cx_respond_json(rq, 200, json_object());
        json_decref(err);
}
