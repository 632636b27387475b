/* daytona-pty.c — Daytona's PTY sessions (the toolbox's /process/pty): a session is a terminal exec
 * (pty.c) under a name the SDK chooses. create-connect and connect are WebSockets in Daytona's
 * protocol (pty.c: a "connected" control message first, binary output, keys as binary or text,
 * an "exited" control message and a close whose reason holds the exit code); resize, list, info
 * and delete are plain HTTP. Sessions are kept by the manager for its life (sbx_mgr_surface_state),
 * ended ones too (Daytona lists them, inactive), at most SESSIONS_MAX of them. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "basic/base64.h"
#include "basic/macro.h"
#include "basic/ws.h"
#include "daemon/compat/compat.h"

#define SESSIONS_MAX 256
#define EXIT_CONTROL "X-Daytona-Pty-Exit-Control"
#define ENVS_PREFIX "X-Daytona-Pty-Envs~"

/* Whether the session's exec has ended: shared by the session and the exec's end callback (which
 * may come before the session knows its exec id, or after the session was deleted). */
typedef struct ended_ctx {
        atomic_int refs;
        atomic_bool ended;
} ended_ctx;

static void ended_unref(ended_ctx *c) {
        if (c && atomic_fetch_sub(&c->refs, 1) == 1)
                free(c);
}

typedef struct session {
        struct session *next;
        char sandbox[32], id[101], exec_id[32];
        char *cwd;
        json_t *envs;
        unsigned cols, rows;
        int64_t created_ms;
        ended_ctx *end;
} session;

typedef struct table {
        pthread_mutex_t lock;
        session *sessions;
} table;

static void session_free(session *s) {
        if (!s)
                return;
        ended_unref(s->end);
        free(s->cwd);
        json_decref(s->envs);
        free(s);
}

static void *table_new(void) {
        table *t = calloc(1, sizeof *t);
        if (t)
                pthread_mutex_init(&t->lock, NULL);
        return t;
}

static void table_free(void *state) {
        table *t = state;
        while (t->sessions) {
                session *s = t->sessions;
                t->sessions = s->next;
                session_free(s);
        }
        pthread_mutex_destroy(&t->lock);
        free(t);
}

static table *table_of(cx_req *rq) {
        table *t = sbx_mgr_surface_state(rq->m, "daytona.pty", table_new, table_free);
        if (!t)
                cx_daytona_err(rq, 503, "out of memory");
        return t;
}

/* Under t->lock. */
static session *find(table *t, const char *sandbox, const char *id) {
        for (session *s = t->sessions; s; s = s->next)
                if (streq(s->sandbox, sandbox) && streq(s->id, id))
                        return s;
        return NULL;
}

static json_t *info(const session *s) {
        char at[40];
        cx_iso_time(s->created_ms, at);
        return json_pack("{s:s, s:s, s:O, s:i, s:i, s:s, s:b, s:b}", "id", s->id, "cwd",
                s->cwd ? s->cwd : "", "envs", s->envs, "cols", s->cols, "rows", s->rows, "createdAt", at,
                "active", !atomic_load(&s->end->ended), "lazyStart", 0);
}

bool cx_daytona_id_ok(const char *id) {
        size_t n = id ? strlen(id) : 0;
        if (n == 0 || n > 100)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(id[i] == '-' || id[i] == '_' || id[i] == '.' || (id[i] >= '0' && id[i] <= '9') ||
                            (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z')))
                        return false;
        return true;
}

/* The exec's end: the session stays, inactive (its exit code went to whoever was attached). */
static void on_end(void *ud, const json_t *report, const char *error) {
        ended_ctx *c = ud;
        atomic_store(&c->ended, true);
        ended_unref(c);
}

/* Start the session's shell on a terminal. 0, or the status with the message said. */
static unsigned start(cx_req *rq, table *t, const char *sandbox_id, const char *id, const char *cwd,
        json_t *envs /* borrowed */, unsigned cols, unsigned rows, char *const *env, const char *home) {
        if (!cx_daytona_id_ok(id)) {
                cx_daytona_err(rq, 400, "id: 1 to 100 letters, digits, '.', '_' or '-'");
                return 400;
        }
        if (envs && !cx_string_map_ok(envs, true)) {
                cx_daytona_err(rq, 400, "envs: an object of variable names to strings");
                return 400;
        }
        _cleanup_free_ char *dir = cwd && *cwd ? cx_path(cwd, home, NULL) : strdup(home);
        if (!dir) {
                cx_daytona_err(rq, 400, "cwd: not a usable path");
                return 400;
        }
        size_t n = 0;
        for (char *const *v = env; v && *v; v++)
                n++;
        char **all = calloc(n + json_object_size(envs) + 2, sizeof *all);
        session *s = calloc(1, sizeof *s);
        ended_ctx *c = calloc(1, sizeof *c);
        unsigned code = 0;
        if (!all || !s || !c) {
                free(c);
                cx_daytona_err(rq, 503, "out of memory");
                code = 503;
                goto out;
        }
        atomic_init(&c->refs, 2); /* the session's and the exec's end's */
        s->end = c;
        size_t k = 0;
        all[k++] = strdup("TERM=xterm-256color");
        for (char *const *v = env; v && *v; v++)
                all[k++] = strdup(*v);
        const char *key;
        json_t *val;
        json_object_foreach(envs, key, val) {
                if (asprintf(&all[k], "%s=%s", key, json_string_value(val)) >= 0)
                        k++;
        }
        snprintf(s->sandbox, sizeof s->sandbox, "%s", sandbox_id);
        snprintf(s->id, sizeof s->id, "%s", id);
        s->cwd = strdup(dir);
        s->envs = envs ? json_incref(envs) : json_object();
        s->cols = cols;
        s->rows = rows;
        s->created_ms = cx_now_ms();
        /* listed before its exec starts (the name is taken: a racing create of it loses), its exec
         * id filled in once known; the start itself outside the lock (it waits for the terminal) */
        pthread_mutex_lock(&t->lock);
        size_t count = 0;
        for (session *q = t->sessions; q; q = q->next)
                count++;
        bool taken = find(t, sandbox_id, id) != NULL;
        if (!taken && count < SESSIONS_MAX) {
                s->next = t->sessions;
                t->sessions = s;
        }
        pthread_mutex_unlock(&t->lock);
        if (taken || count >= SESSIONS_MAX) {
                ended_unref(c); /* no exec: its end's reference */
                if (taken)
                        cx_daytona_err(rq, 409, "a PTY session '%s' exists already (delete it first)", id);
                else
                        cx_daytona_err(rq, 429,
                                "too many PTY sessions on this server (%d; delete ended ones)",
                                SESSIONS_MAX);
                code = taken ? 409 : 429;
                goto out;
        }
        session *listed = s;
        s = NULL;
        char *argv[] = {(char *) "/bin/bash", (char *) "-i", (char *) "-l", NULL};
        sbx_exec_spec spec = {.argv = argv,
                .env = all,
                .cwd = dir,
                .stdin_fd = -1,
                .tty_cols = cols,
                .tty_rows = rows,
                .long_lived = -1};
        sbx_exec_stream_cb cb = {.on_end = on_end, .userdata = c};
        json_t *err = NULL;
        char exec_id[32] = "";
        code = sbx_mgr_exec_start(rq->m, &rq->caller, sandbox_id, &spec, &cb, exec_id, &err);
        pthread_mutex_lock(&t->lock);
        for (session **pp = &t->sessions; *pp; pp = &(*pp)->next)
                if (*pp == listed) {
                        if (code) { /* not started: unlisted */
                                *pp = listed->next;
                                s = listed;
                        } else
                                snprintf(listed->exec_id, sizeof listed->exec_id, "%s", exec_id);
                        break;
                }
        pthread_mutex_unlock(&t->lock);
        if (code) {
                ended_unref(c); /* the callbacks will not run */
                cx_daytona_err(rq, code, "the PTY could not start: %s",
                        json_string_value(json_object_get(json_object_get(err, "error"), "message"))
                                ?: "refused");
        }
        json_decref(err);
out:
        cx_strv_free(all);
        session_free(s);
        return code;
}

/* The subprotocols the client offered: the envs token (a base64url JSON object), and whether it
 * asked for the exit control. */
static json_t *offered(cx_req *rq, bool *exit_control) {
        const char *h = cx_header(rq, "Sec-WebSocket-Protocol");
        json_t *envs = NULL;
        *exit_control = false;
        _cleanup_free_ char *list = h ? strdup(h) : NULL;
        for (char *save = NULL, *p = list ? strtok_r(list, ", ", &save) : NULL; p;
                p = strtok_r(NULL, ", ", &save)) {
                if (streq(p, EXIT_CONTROL))
                        *exit_control = true;
                else if (strncmp(p, ENVS_PREFIX, strlen(ENVS_PREFIX)) == 0 && !envs) {
                        char *raw = NULL;
                        size_t n = 0;
                        const char *b = p + strlen(ENVS_PREFIX);
                        if (sbx_base64_decode(b, strlen(b), true, &raw, &n) == 0) {
                                json_error_t je;
                                envs = json_loadb(raw, n, 0, &je);
                        }
                        free(raw);
                        if (!json_is_object(envs)) {
                                json_decref(envs);
                                envs = json_null(); /* said bad below */
                        }
                }
        }
        return envs;
}

/* A WebSocket handshake, or said otherwise (426). */
static bool wants_upgrade(cx_req *rq) {
        const char *up = cx_header(rq, "Upgrade"), *key = cx_header(rq, "Sec-WebSocket-Key");
        if (up && strcasecmp(up, "websocket") == 0 && key && *key && strlen(key) <= 64)
                return true;
        cx_daytona_err(rq, 426, "this is a WebSocket endpoint (Upgrade: websocket, Sec-WebSocket-Key)");
        return false;
}

static void upgrade(cx_req *rq, const char *sandbox_id, const char *exec_id, bool exit_control) {
        rq->resp = sbx_mgr_pty_daytona_upgrade(rq->m, &rq->caller, sandbox_id, exec_id,
                cx_header(rq, "Sec-WebSocket-Key"), exit_control ? EXIT_CONTROL : NULL);
        if (rq->resp)
                rq->code = 101;
        else
                cx_daytona_err(rq, 503, "cannot upgrade the connection");
}

static unsigned dim(const char *s, unsigned dflt) {
        if (!s)
                return dflt;
        char *end;
        long v = strtol(s, &end, 10);
        return *end || v < 1 || v > SBX_TTY_MAX ? 0 : (unsigned) v;
}

bool cx_daytona_pty(cx_req *rq, const char *sandbox_id, const char *op, char *const *env, const char *home) {
        if (!streq(op, "/process/pty") && strncmp(op, "/process/pty/", 13) != 0)
                return false;
        table *t = table_of(rq);
        if (!t)
                return true;
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST"),
             del = streq(rq->method, "DELETE");
        const char *rest = op[12] == '/' ? op + 13 : "";
        if (streq(rest, "create-connect") && get) {
                bool exit_control;
                json_t *envs = offered(rq, &exit_control);
                unsigned cols = dim(cx_query(rq, "cols"), 80), rows = dim(cx_query(rq, "rows"), 24);
                if (!wants_upgrade(rq))
                        ;
                else if (json_is_null(envs))
                        cx_daytona_err(rq, 400, "the envs subprotocol is not a base64url JSON object");
                else if (!cols || !rows)
                        cx_daytona_err(rq, 400, "cols and rows: integers from 1 to %d", SBX_TTY_MAX);
                else if (start(rq, t, sandbox_id, cx_query(rq, "id"), cx_query(rq, "cwd"), envs, cols, rows,
                                 env, home) == 0) {
                        char exec_id[32] = "";
                        pthread_mutex_lock(&t->lock);
                        session *s = find(t, sandbox_id, cx_query(rq, "id"));
                        if (s)
                                snprintf(exec_id, sizeof exec_id, "%s", s->exec_id);
                        pthread_mutex_unlock(&t->lock);
                        upgrade(rq, sandbox_id, exec_id, exit_control);
                }
                json_decref(envs);
                return true;
        }
        if (!*rest && post) { /* create without connecting */
                json_error_t je;
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, &je);
                json_t *jid = json_object_get(body, "id"), *jc = json_object_get(body, "cwd");
                unsigned cols = 80, rows = 24;
                if (json_object_get(body, "cols") || json_object_get(body, "rows")) {
                        json_t *sz = json_pack("{s:O?, s:O?}", "cols", json_object_get(body, "cols"), "rows",
                                json_object_get(body, "rows"));
                        if (!json_object_get(body, "cols"))
                                json_object_set_new(sz, "cols", json_integer(80));
                        if (!json_object_get(body, "rows"))
                                json_object_set_new(sz, "rows", json_integer(24));
                        if (!sbx_tty_size(sz, &cols, &rows))
                                cols = 0;
                        json_decref(sz);
                }
                if (!json_is_object(body) || !json_is_string(jid) ||
                        (jc && !json_is_null(jc) && !json_is_string(jc)))
                        cx_daytona_err(
                                rq, 400, "a JSON object with id (a string) is required; cwd a string");
                else if (!cols)
                        cx_daytona_err(rq, 400, "cols and rows: integers from 1 to %d", SBX_TTY_MAX);
                else if (start(rq, t, sandbox_id, json_string_value(jid), json_string_value(jc),
                                 json_object_get(body, "envs"), cols, rows, env, home) == 0)
                        cx_respond_json(rq, 201, json_pack("{s:s}", "sessionId", json_string_value(jid)));
                json_decref(body);
                return true;
        }
        if (!*rest && get) {
                json_t *list = json_array();
                pthread_mutex_lock(&t->lock);
                for (session *s = t->sessions; s; s = s->next)
                        if (streq(s->sandbox, sandbox_id))
                                json_array_append_new(list, info(s));
                pthread_mutex_unlock(&t->lock);
                cx_respond_json(rq, 200, json_pack("{s:o}", "sessions", list));
                return true;
        }
        char id[101];
        const char *slash = strchr(rest, '/');
        size_t l = slash ? (size_t) (slash - rest) : strlen(rest);
        if (l == 0 || l >= sizeof id) {
                cx_daytona_err(rq, 404, "no such PTY endpoint: %s %s", rq->method, op);
                return true;
        }
        memcpy(id, rest, l);
        id[l] = 0;
        const char *action = slash ? slash : "";
        char exec_id[32] = "";
        json_t *inf = NULL;
        bool active = false;
        pthread_mutex_lock(&t->lock);
        session *s = find(t, sandbox_id, id);
        if (s) {
                snprintf(exec_id, sizeof exec_id, "%s", s->exec_id);
                active = !atomic_load(&s->end->ended);
                inf = info(s);
        }
        pthread_mutex_unlock(&t->lock);
        if (!s)
                cx_daytona_err(rq, 404, "PTY session '%s' not found", id);
        else if (streq(action, "/connect") && get) {
                bool exit_control;
                json_decref(offered(rq, &exit_control));
                if (wants_upgrade(rq))
                        upgrade(rq, sandbox_id, exec_id, exit_control);
        } else if (!*action && get)
                cx_respond_json(rq, 200, json_incref(inf));
        else if (!*action && del) {
                if (active)
                        (void) sbx_mgr_exec_signal(rq->m, &rq->caller, sandbox_id, exec_id, SIGKILL);
                pthread_mutex_lock(&t->lock);
                for (session **pp = &t->sessions; *pp; pp = &(*pp)->next)
                        if (streq((*pp)->sandbox, sandbox_id) && streq((*pp)->id, id)) {
                                session *d = *pp;
                                *pp = d->next;
                                session_free(d);
                                break;
                        }
                pthread_mutex_unlock(&t->lock);
                cx_respond_json(rq, 200, json_object());
        } else if (streq(action, "/resize") && post) {
                json_error_t je;
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, &je), *err = NULL;
                unsigned cols, rows;
                if (!sbx_tty_size(body, &cols, &rows))
                        cx_daytona_err(rq, 400, "cols and rows: integers from 1 to %d", SBX_TTY_MAX);
                else {
                        unsigned code = sbx_mgr_pty_resize(
                                rq->m, &rq->caller, sandbox_id, exec_id, cols, rows, &err);
                        if (code)
                                cx_daytona_err(
                                        rq, code == 404 ? 410 : code, "PTY session '%s' has ended", id);
                        else {
                                pthread_mutex_lock(&t->lock);
                                session *r = find(t, sandbox_id, id);
                                if (r)
                                        r->cols = cols, r->rows = rows;
                                json_decref(inf);
                                inf = r ? info(r) : json_object();
                                pthread_mutex_unlock(&t->lock);
                                cx_respond_json(rq, 200, json_incref(inf));
                        }
                }
                json_decref(err);
                json_decref(body);
        } else
                cx_daytona_err(rq, 405, "%s %s: not a PTY operation", rq->method, op);
        json_decref(inf);
        return true;
}
