/* ext-daytona.c — ext.daytona: sandboxes held by Daytona (or anything that speaks its API),
 * reached the way its SDK reaches it, with the tenant's own key:
 *
 *     id: ext.daytona
 *     kind: daytona
 *     url: https://app.daytona.io/api   # /sandbox, Authorization: Bearer KEY
 *     auth: {secret: daytona-key}
 *     template: my-snapshot             # the snapshot a create asks for (inputs.snapshot overrides)
 *
 * A create is POST /sandbox (its labels name the front's id and node; auto-stop off: the front's
 * TTL is the clock, and its reaper deletes it), waited on until `started`; the toolbox is at the
 * URL /sandbox/ID/toolbox-proxy-url answers. An exec is the toolbox's process/execute (a shell
 * command line made from argv, each word quoted; Daytona answers stdout and stderr together as
 * `result`, at the end — so a streamed exec's events come at once); files are the toolbox's
 * files/download and files/bulk-upload; metadata is Daytona's labels; pause and resume are
 * stop and start. What Daytona has no call for here is 422 naming the capability. */
#include "daemon/remote.h"

#include <math.h>
#include <unistd.h>

#define POLL_MS 200

static unsigned short_ms(sbx_mgr *m, unsigned ms) {
        (void) m;
        usleep(ms * 1000);
        return ms;
}

static bool toolbox_of(sbx_mgr *m, box *b, const remote_ep *ep, char *why, size_t n) {
        char target[300];
        snprintf(target, sizeof target, "/sandbox/%s/toolbox-proxy-url", b->remote_id);
        remote_resp r;
        long code = remote_call(m, ep, "GET", target, NULL, 0, NULL, true, NULL, NULL, 10000, &r, why, n);
        json_t *j = code == 200 && r.body ? json_loads(r.body, 0, NULL) : NULL;
        const char *u = json_string_value(json_object_get(j, "url"));
        bool ok = u && (strncmp(u, "https://", 8) == 0 || strncmp(u, "http://", 7) == 0) &&
                  strlen(u) < sizeof b->remote_token;
        if (ok) {
                pthread_mutex_lock(&m->lock);
                snprintf(b->remote_token, sizeof b->remote_token, "%s", u);
                size_t l = strlen(b->remote_token);
                while (l > 0 && b->remote_token[l - 1] == '/')
                        b->remote_token[--l] = 0;
                pthread_mutex_unlock(&m->lock);
        } else if (code == 404) { /* an older API: the toolbox under the API itself */
                pthread_mutex_lock(&m->lock);
                snprintf(b->remote_token, sizeof b->remote_token, "%.200s/toolbox", ep->url);
                pthread_mutex_unlock(&m->lock);
                ok = true;
        } else if (code)
                remote_answer_why(ep, &r, why, n);
        json_decref(j);
        remote_resp_done(&r);
        return ok;
}

int daytona_provision(sbx_mgr *m, box *b, const remote_ep *ep, json_t *body, char *why, size_t n) {
        json_t *in = json_object_get(body, "inputs"), *labels = json_object(), *x;
        const char *k;
        json_object_foreach(json_object_get(body, "metadata"), k, x) if (json_is_string(x))
                json_object_set(labels, k, x);
        json_object_set_new(labels, "sandboxer_id", json_string(b->id));
        if (mgr_node_id(m))
                json_object_set_new(labels, "sandboxer_front", json_string(mgr_node_id(m)));
        json_t *req = json_pack("{s:o, s:i}", "labels", labels, "autoStopInterval", 0);
        const char *snap = json_string_value(json_object_get(in, "snapshot"));
        if (snap || ep->template_id[0])
                json_object_set_new(req, "snapshot", json_string(snap ? snap : ep->template_id));
        if (json_is_object(json_object_get(in, "env")))
                json_object_set(req, "env", json_object_get(in, "env"));
        char *text = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        const char *extra[] = {"Content-Type: application/json", NULL};
        remote_resp r;
        long code = remote_call(m, ep, "POST", "/sandbox", text, text ? strlen(text) : 0, extra, true, NULL,
                NULL, PROVISION_TIMEOUT_MS + 5000, &r, why, n);
        free(text);
        json_t *rec = (code == 200 || code == 201) && r.body ? json_loads(r.body, 0, NULL) : NULL;
        const char *sid = json_string_value(json_object_get(rec, "id"));
        int ret = 0;
        if (!code)
                ret = -EHOSTUNREACH;
        else if (!sid || strlen(sid) >= sizeof b->remote_id || strpbrk(sid, "/?#@ ")) {
                if (rec)
                        snprintf(why, n, "%s answered %ld without a usable sandbox id", ep->ext, code);
                else
                        remote_answer_why(ep, &r, why, n);
                ret = -EPROTO;
        } else {
                pthread_mutex_lock(&m->lock);
                snprintf(b->remote_id, sizeof b->remote_id, "%s", sid);
                snprintf(b->ext, sizeof b->ext, "%s", ep->ext);
                snprintf(b->backend, sizeof b->backend, "daytona");
                pthread_mutex_unlock(&m->lock);
                (void) mgr_box_save(m, b); /* its id kept before anything else can fail */
        }
        /* started, or waited on until it is */
        const char *st = json_string_value(json_object_get(rec, "state"));
        char state[64];
        snprintf(state, sizeof state, "%s", st ? st : "");
        for (unsigned waited = 0; ret == 0 && !streq(state, "started") && waited < PROVISION_TIMEOUT_MS;) {
                if (streq(state, "error") || streq(state, "build_failed") || streq(state, "destroyed")) {
                        snprintf(why, n, "%s: the sandbox is %s", ep->ext, state);
                        ret = -EPROTO;
                        break;
                }
                waited += short_ms(m, POLL_MS);
                char target[200];
                snprintf(target, sizeof target, "/sandbox/%s", b->remote_id);
                remote_resp g;
                long gc = remote_call(
                        m, ep, "GET", target, NULL, 0, NULL, true, NULL, NULL, 10000, &g, why, n);
                json_t *gj = gc == 200 && g.body ? json_loads(g.body, 0, NULL) : NULL;
                snprintf(state, sizeof state, "%s", json_string_value(json_object_get(gj, "state")) ?: "");
                json_decref(gj);
                remote_resp_done(&g);
        }
        if (ret == 0 && !streq(state, "started")) {
                snprintf(why, n, "%s: the sandbox was not started in %d s (%s)", ep->ext,
                        PROVISION_TIMEOUT_MS / 1000, state[0] ? state : "no state");
                ret = -ETIMEDOUT;
        }
        if (ret == 0 && !toolbox_of(m, b, ep, why, n))
                ret = -EPROTO;
        if (ret == 0) {
                pthread_mutex_lock(&m->lock);
                snprintf(b->user, sizeof b->user, "daytona");
                snprintf(b->home, sizeof b->home, "/home/daytona");
                pthread_mutex_unlock(&m->lock);
                (void) mgr_box_save(m, b);
        } else if (b->remote_id[0]) { /* made there but not usable: not left behind */
                char w2[300];
                (void) daytona_teardown(m, ep, b->remote_id, w2, sizeof w2);
                pthread_mutex_lock(&m->lock);
                b->remote_id[0] = 0;
                pthread_mutex_unlock(&m->lock);
        }
        json_decref(rec);
        remote_resp_done(&r);
        return ret;
}

bool daytona_teardown(sbx_mgr *m, const remote_ep *ep, const char *remote_id, char *why, size_t n) {
        char target[200];
        snprintf(target, sizeof target, "/sandbox/%s", remote_id);
        remote_resp r;
        long code = remote_call(m, ep, "DELETE", target, NULL, 0, NULL, true, NULL, NULL, 15000, &r, why, n);
        bool ok = code == 200 || code == 204 || code == 404;
        if (code && !ok)
                remote_answer_why(ep, &r, why, n);
        remote_resp_done(&r);
        return ok;
}

/* argv as one sh command line, each word in single quotes. */
static char *shell_line(json_t *argv) {
        size_t cap = 64, n = 0, i;
        char *s = malloc(cap);
        json_t *x;
        if (!s)
                return NULL;
        s[0] = 0;
        json_array_foreach(argv, i, x) {
                const char *w = json_string_value(x);
                size_t need = n + 4 * strlen(w) + 4;
                if (need > cap) {
                        while (cap < need)
                                cap *= 2;
                        char *ns = realloc(s, cap);
                        if (!ns) {
                                free(s);
                                return NULL;
                        }
                        s = ns;
                }
                if (i)
                        s[n++] = ' ';
                s[n++] = '\'';
                for (const char *p = w; *p; p++)
                        if (*p == '\'') {
                                memcpy(s + n, "'\\''", 4);
                                n += 4;
                        } else
                                s[n++] = *p;
                s[n++] = '\'';
                s[n] = 0;
        }
        return s;
}

static unsigned exec_op(
        sbx_mgr *m, box *b, const remote_ep *ep, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        json_t *body = remote_exec_body(rq, ep, false, "tty (a terminal is not passed on to Daytona yet)",
                "stdin (Daytona's process/execute takes none)", rp);
        if (!body)
                return rp->code;
        json_t *argv = json_object_get(body, "argv"), *env = json_object_get(body, "env"),
               *cwd = json_object_get(body, "cwd"), *to = json_object_get(body, "timeout_s");
        char *line = shell_line(argv);
        json_t *req = json_pack("{s:s}", "command", line ? line : "");
        free(line);
        if (cwd)
                json_object_set(req, "cwd", cwd);
        if (env)
                json_object_set(req, "envs", env);
        double t = to ? json_number_value(to) : 0;
        if (t > 0)
                json_object_set_new(req, "timeout", json_integer((json_int_t) ceil(t)));
        bool stream = json_is_true(json_object_get(body, "stream"));
        json_decref(body);
        char *text = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        char url[600];
        snprintf(url, sizeof url, "%s/%s/process/execute", b->remote_token, b->remote_id);
        const char *extra[] = {"Content-Type: application/json", NULL};
        remote_resp r;
        char why[700] = "";
        long code = remote_call(m, ep, "POST", url, text, text ? strlen(text) : 0, extra, true, NULL, NULL,
                t > 0 ? (long) (t * 1000) + 30000 : 3600L * 1000, &r, why, sizeof why);
        free(text);
        json_t *res = code == 200 && r.body ? json_loads(r.body, 0, NULL) : NULL;
        json_t *jr = json_object_get(res, "result"), *je = json_object_get(res, "exitCode");
        if (!code)
                mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s", why);
        else if (code != 200 || !json_is_string(jr) || !json_is_integer(je)) {
                if (code == 200)
                        snprintf(why, sizeof why, "%s answered process/execute without result and exitCode",
                                ep->ext);
                else
                        remote_answer_why(ep, &r, why, sizeof why);
                mgr_reply_err(rp, code == 404 ? 404 : 502, code == 404 ? "not_found" : "bad_gateway", NULL,
                        "%s", why);
        } else /* stdout and stderr together, as Daytona answers them */
                remote_exec_reply(b, stream, (int) json_integer_value(je), json_incref(jr), json_string(""),
                        "utf-8", rp);
        json_decref(res);
        remote_resp_done(&r);
        return rp->code;
}

static unsigned files_op(
        sbx_mgr *m, box *b, const remote_ep *ep, bool write, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        const char *path = remote_files_path(rq, rp);
        if (!path)
                return rp->code;
        char esc[3 * 4096 + 1], url[1000 + sizeof esc], why[700] = "";
        remote_url_escape(path, esc, sizeof esc);
        if (write)
                snprintf(url, sizeof url, "%s/%s/files/bulk-upload", b->remote_token, b->remote_id);
        else
                snprintf(
                        url, sizeof url, "%s/%s/files/download?path=%s", b->remote_token, b->remote_id, esc);
        remote_upload u = {.data = rq->body, .len = rq->len, .path = path, .bulk = true};
        remote_resp r;
        long code = remote_call(m, ep, write ? "POST" : "GET", url, NULL, 0, NULL, true,
                write ? remote_upload_mime : NULL, &u, 300000, &r, why, sizeof why);
        remote_files_reply(ep, code, &r, why, write, path, rq->len, rp);
        remote_resp_done(&r);
        return rp->code;
}

bool daytona_route(sbx_mgr *m, box *b, const remote_ep *ep, const char *method, const char *sub,
        const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        bool get = streq(method, "GET"), post = streq(method, "POST"), put = streq(method, "PUT");
        char target[300], why[700] = "";
        remote_resp r = {0};
        if (!*sub && get) {
                snprintf(target, sizeof target, "/sandbox/%s", b->remote_id);
                long code = sbx_state_ending(b->state)
                                    ? 0
                                    : remote_call(m, ep, "GET", target, NULL, 0, NULL, true, NULL, NULL,
                                              10000, &r, why, sizeof why);
                json_t *rec = code == 200 && r.body ? json_loads(r.body, 0, NULL) : NULL;
                const char *st = json_string_value(json_object_get(rec, "state"));
                if (streq_ptr(st, "destroyed") || code == 404)
                        remote_gone(m, b, "gone_at_backend");
                else if (st) {
                        bool stopped = streq(st, "stopped") || streq(st, "archived");
                        json_t *mine = json_pack("{s:s, s:s, s:s, s:s, s:s}", "state",
                                stopped ? "paused" : "ready", "backend", "daytona", "user", "daytona",
                                "home", "/home/daytona", "reason", stopped ? "stopped" : "started");
                        remote_absorb(m, b, mine);
                        json_decref(mine);
                }
                json_decref(rec);
                remote_resp_done(&r);
                rp->code = 200;
                rp->json = remote_merged(m, b, NULL);
                return true;
        }
        if (streq(sub, "/exec") && post) {
                remote_exec_started(m, b);
                exec_op(m, b, ep, rq, rp);
                return true;
        }
        if (streq(sub, "/files") && (get || put || post)) {
                files_op(m, b, ep, !get, rq, rp);
                return true;
        }
        if (streq(sub, "/ttl") && post)
                return false; /* the front's clock: its reaper deletes it at the end */
        if (streq(sub, "/metadata") && put) {
                json_t *body = mgr_parse_body(rq, rp, false);
                if (!body)
                        return true;
                if (!mgr_string_map(body, "metadata", 64, rp)) {
                        json_decref(body);
                        return true;
                }
                json_t *labels = json_deep_copy(body);
                json_object_set_new(labels, "sandboxer_id", json_string(b->id));
                if (mgr_node_id(m)) /* still findable by this front's sweep */
                        json_object_set_new(labels, "sandboxer_front", json_string(mgr_node_id(m)));
                json_t *lj = json_pack("{s:o}", "labels", labels);
                char *text = lj ? json_dumps(lj, JSON_COMPACT) : NULL;
                json_decref(lj);
                json_decref(body);
                snprintf(target, sizeof target, "/sandbox/%s/labels", b->remote_id);
                const char *extra[] = {"Content-Type: application/json", NULL};
                long code = remote_call(m, ep, "PUT", target, text, text ? strlen(text) : 0, extra, true,
                        NULL, NULL, 15000, &r, why, sizeof why);
                free(text);
                bool ok = code == 200;
                if (!ok) {
                        if (code)
                                remote_answer_why(ep, &r, why, sizeof why);
                        mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s", why);
                }
                remote_resp_done(&r);
                return !ok; /* then the front's record, as a local one's */
        }
        if ((streq(sub, "/pause") || streq(sub, "/resume")) && post) {
                bool pause = streq(sub, "/pause");
                if (!ep->cap_pause) {
                        remote_lacks(rp, ep->ext, "pause");
                        return true;
                }
                snprintf(target, sizeof target, "/sandbox/%s/%s", b->remote_id, pause ? "stop" : "start");
                long code = remote_call(
                        m, ep, "POST", target, NULL, 0, NULL, true, NULL, NULL, 60000, &r, why, sizeof why);
                if (code == 200 || code == 201 || code == 204) {
                        json_t *mine = json_pack("{s:s, s:s, s:s, s:s, s:s}", "state",
                                pause ? "paused" : "ready", "backend", "daytona", "reason",
                                pause ? "pause" : "resume", "user", "daytona", "home", "/home/daytona");
                        remote_absorb(m, b, mine);
                        json_decref(mine);
                        rp->code = 200;
                        rp->json = remote_merged(m, b, NULL);
                } else {
                        if (code)
                                remote_answer_why(ep, &r, why, sizeof why);
                        mgr_reply_err(rp, code == 409 ? 409 : 502, code == 409 ? "conflict" : "bad_gateway",
                                NULL, "%s", why);
                }
                remote_resp_done(&r);
                return true;
        }
        remote_lacks_sub(rp, ep->ext, method, sub);
        return true;
}
