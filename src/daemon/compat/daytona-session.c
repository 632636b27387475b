/* daytona-session.c — Daytona's sessions (the toolbox's /process/session) and code interpreter
 * (/process/interpreter), over the long-lived processes of daytona-proc.c: a session is a bash,
 * an interpreter context a python3. A session's command answers at its end (or 202 at once when
 * async) with its output and exit code; its logs are followed over Daytona's log WebSocket (each
 * chunk behind \x01\x01\x01 for stdout or \x02\x02\x02 for stderr, a close 1000 at the end). An
 * interpreter run streams over its own WebSocket as JSON text frames ({"type": "stdout" |
 * "stderr" | "error" | "control", …}); at its timeout the run is interrupted (SIGINT, python's
 * KeyboardInterrupt; SIGKILL 5 s later) and the socket closed with 4008; a run whose client goes
 * first is interrupted then (its output has nowhere to go, and the context is freed for the next).
 *
 * Input for a session's command goes to the shell's stdin, as Daytona does it: the command that
 * reads its stdin reads it (and a command queued behind a running one waits in the same pipe).
 * When the process has ended (the command ran `exit`, the sandbox went, a limit ended it), later
 * commands answer 410; the session stays listed until deleted. Kept in serve's memory (lost when
 * serve restarts: the sandbox's processes are then orphaned with their pipe, and end). */
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
        unit *u = p->ended ? NULL : dp_unit_add(p, json_string_value(cmd));
        _cleanup_free_ char *text = u ? dp_shell_text(p, u) : NULL;
        unsigned code = p->ended ? 410 : !text ? 503 : dp_write(p, text, strlen(text));
        if (code && u)
                dp_unit_drop(p, u);
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
                        dp_sink_send(s, SBX_WS_BINARY, u->labeled, u->labeled_len);
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
        dp_unref(p);
        free(f);
}

static void follow_drop(void *ud) {
        follow *f = ud;
        dp_unref(f->p);
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
                                f->p = dp_ref(p);
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
                unsigned code = !d ? 400 : u->done ? 410 : dp_write(p, d, strlen(d));
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
                        unsigned code = dp_create(
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
                                ps[k++] = dp_ref(e->p);
                        }
                pthread_mutex_unlock(&t->lock);
                for (size_t i = 0; i < k; i++) { /* oldest first */
                        json_array_insert_new(list, 0, session_json(ids[i], ps[i]));
                        dp_unref(ps[i]);
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
                if (dp_drop(t, sandbox, sid, false))
                        cx_respond_json(rq, 200, json_object());
                else
                        cx_daytona_err(rq, 404, "session '%s' not found", sid);
                return true;
        }
        mproc *p = dp_lookup(t, sandbox, sid, false);
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
        dp_unref(p);
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
        p = dp_lookup(r->t, r->sandbox, want, true);
        if (p && id)
                return p;
        if (p) {
                pthread_mutex_lock(&p->lock);
                bool ended = p->ended;
                pthread_mutex_unlock(&p->lock);
                if (!ended)
                        return p;
                dp_unref(p);
                (void) dp_drop(r->t, r->sandbox, DEFAULT_CONTEXT, true);
        } else if (id) {
                snprintf(why, size, "context '%s' not found", id);
                return NULL;
        }
        unsigned code = dp_create(
                r->m, &r->who, r->t, r->sandbox, DEFAULT_CONTEXT, true, r->env, r->home, why, size);
        if (code == 0 || code == 409) /* 409: a run beside this one made it */
                p = dp_lookup(r->t, r->sandbox, DEFAULT_CONTEXT, true);
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
                u = p->ended ? NULL : dp_unit_add(p, json_string_value(code));
                unsigned c = !u || !text ? (p->ended ? 410 : 503) : dp_write(p, text, strlen(text));
                if (c) {
                        if (u)
                                dp_unit_drop(p, u);
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
                        if (!u->done && s.gone && sig == SIGINT) {
                                /* its client gone first (an SDK closes at its own timeout, which
                                 * may come before this one): the run, whose output has nowhere to
                                 * go, is interrupted now — else the context's next run waits
                                 * behind it, or takes a late signal itself */
                                pthread_mutex_unlock(&p->lock);
                                (void) sbx_mgr_exec_signal(r->m, &r->who, r->sandbox, p->exec_id, SIGINT);
                                pthread_mutex_lock(&p->lock);
                        }
                        if (u->done && !timed_out) {
                                json_t *err = json_object_get(u->result, "error");
                                if (json_is_object(err))
                                        dp_sink_json(
                                                &s, json_pack("{s:s, s:O, s:O, s:O}", "type", "error",
                                                            "name", json_object_get(err, "name"), "value",
                                                            json_object_get(err, "value"), "traceback",
                                                            json_object_get(err, "traceback")));
                                else if (!u->result) /* the process ended under it */
                                        dp_sink_json(&s,
                                                json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name",
                                                        "ContextEnded", "value", p->why, "traceback", ""));
                                dp_sink_json(
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
        dp_unref(p);
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
                else if ((code = dp_create(
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
                if (streq(id, DEFAULT_CONTEXT) || !dp_drop(t, sandbox, id, true))
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
        table *t = dp_table_of(rq);
        if (!t)
                return true;
        return sess ? sessions(rq, t, sandbox_id, op + 16, env, home)
                    : interpreter(rq, t, sandbox_id, op + 20, env, home);
}
