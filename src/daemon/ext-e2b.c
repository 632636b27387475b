/* ext-e2b.c — ext.e2b: sandboxes held by E2B (or anything that speaks its API), reached the way
 * its SDKs reach it, with the tenant's own key (bring your own key: the registry entry's
 * auth.secret names a tenant secret):
 *
 *     id: ext.e2b
 *     kind: e2b
 *     url: https://api.e2b.app      # the control plane: POST /sandboxes, X-API-KEY
 *     domain: e2b.app               # the sandbox answers at https://49983-ID.e2b.app (envd)
 *     auth: {secret: e2b-key}
 *     template: base                # what a create asks for (inputs.template overrides)
 *
 * The front keeps its own record and id; E2B's sandboxID and envd access token are kept beside it
 * (never in the record). An exec is envd's process.Process/Start (Connect RPC, the JSON codec, one
 * request envelope, a stream of event envelopes) turned into the native exec's answer — or, with
 * stream: true, into its NDJSON events as they arrive; files are envd's /files; the TTL is
 * E2B's timeout; pause and resume its own. What E2B has no call for (metrics, the exec list,
 * network rules, previews, snapshots, a terminal) is 422 naming the capability. E2B makes no
 * sandboxer report: an exec's `report` is null. */
#include "daemon/remote.h"

#include <math.h>

#include "basic/base64.h"

#define ENVD_PORT 49983
#define EXEC_MAX (16u * 1024 * 1024) /* what one exec's output may collect (the native cap) */

static void envd_url(const remote_ep *ep, const box *b, const char *path, char *buf, size_t n) {
        const char *scheme = strncmp(ep->url, "http://", 7) == 0 ? "http" : "https";
        snprintf(buf, n, "%s://%d-%s.%s%s", scheme, ENVD_PORT, b->remote_id, ep->domain, path);
}

/* ---- the control plane ------------------------------------------------------------------------ */

int e2b_provision(sbx_mgr *m, box *b, const remote_ep *ep, json_t *body, char *why, size_t n) {
        json_t *in = json_object_get(body, "inputs"), *md = json_object(), *x;
        const char *tmpl = json_string_value(json_object_get(in, "template"))
                                   ?: (ep->template_id[0] ? ep->template_id : "base"),
                   *k;
        json_object_foreach(json_object_get(body, "metadata"), k, x) if (json_is_string(x))
                json_object_set(md, k, x);
        /* the front's id and node on E2B's record: its orphans can be found by them */
        json_object_set_new(md, "sandboxer_id", json_string(b->id));
        if (mgr_node_id(m))
                json_object_set_new(md, "sandboxer_front", json_string(mgr_node_id(m)));
        json_t *req = json_pack("{s:s, s:I, s:o}", "templateID", tmpl, "timeout",
                (json_int_t) ceil(b->ttl_s), "metadata", md);
        json_t *envs = json_object_get(in, "env");
        if (json_is_object(envs))
                json_object_set(req, "envVars", envs);
        char *text = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        const char *extra[] = {"Content-Type: application/json", NULL};
        remote_resp r;
        long code = remote_call(m, ep, "POST", "/sandboxes", text, text ? strlen(text) : 0, extra, true,
                NULL, NULL, PROVISION_TIMEOUT_MS + 5000, &r, why, n);
        free(text);
        json_error_t je;
        json_t *rec = (code == 200 || code == 201) && r.body ? json_loads(r.body, 0, &je) : NULL;
        const char *sid = json_string_value(json_object_get(rec, "sandboxID"));
        int ret = 0;
        if (!code)
                ret = -EHOSTUNREACH;
        else if (!sid || strlen(sid) >= sizeof b->remote_id || strpbrk(sid, "/?#.:@ ")) {
                if (rec)
                        snprintf(why, n, "%s answered %ld without a usable sandboxID", ep->ext, code);
                else
                        remote_answer_why(ep, &r, why, n);
                ret = -EPROTO;
        } else {
                pthread_mutex_lock(&m->lock);
                snprintf(b->remote_id, sizeof b->remote_id, "%s", sid);
                snprintf(b->remote_token, sizeof b->remote_token, "%s",
                        json_string_value(json_object_get(rec, "envdAccessToken")) ?: "");
                snprintf(b->ext, sizeof b->ext, "%s", ep->ext);
                snprintf(b->backend, sizeof b->backend, "e2b");
                snprintf(b->user, sizeof b->user, "user"); /* E2B's sandboxes run as "user" */
                snprintf(b->home, sizeof b->home, "/home/user");
                pthread_mutex_unlock(&m->lock);
                (void) mgr_box_save(m, b);
        }
        json_decref(rec);
        remote_resp_done(&r);
        return ret;
}

bool e2b_teardown(sbx_mgr *m, const remote_ep *ep, const char *remote_id, char *why, size_t n) {
        char target[200];
        snprintf(target, sizeof target, "/sandboxes/%s", remote_id);
        remote_resp r;
        long code = remote_call(m, ep, "DELETE", target, NULL, 0, NULL, true, NULL, NULL, 15000, &r, why, n);
        bool ok = code == 200 || code == 204 || code == 404;
        if (code && !ok)
                remote_answer_why(ep, &r, why, n);
        remote_resp_done(&r);
        return ok;
}

/* ---- envd: process.Process/Start -------------------------------------------------------------- */

typedef struct run {
        char exec_id[24], sandbox[32];
        bool stream;
        char *buf; /* a partial envelope */
        size_t bn;
        char *out, *err;
        size_t on, en;
        bool ended, started, failed;
        int exit_code;
        char status[128], error[512];
} run;

static void run_free(void *ud) {
        run *r = ud;
        free(r->buf);
        free(r->out);
        free(r->err);
        free(r);
}

static bool append(char **p, size_t *n, const char *d, size_t k) {
        if (*n + k > EXEC_MAX)
                return false;
        char *q = realloc(*p, *n + k + 1);
        if (!q)
                return false;
        memcpy(q + *n, d, k);
        *p = q;
        *n += k;
        q[*n] = 0;
        return true;
}

static bool emit_json(int fd, json_t *j) {
        char *s = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        bool ok = s && remote_emit(fd, s, strlen(s)) && remote_emit(fd, "\n", 1);
        free(s);
        return ok;
}

/* One message of the answer. */
static bool message(run *r, int fd, unsigned flags, const char *d, size_t n) {
        json_t *j = json_loadb(d, n, 0, NULL);
        bool ok = true;
        if (flags & 2) { /* the end of the stream: an error, or nothing */
                const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
                if (msg) {
                        snprintf(r->error, sizeof r->error, "%s", msg);
                        r->failed = true;
                }
                json_decref(j);
                return true;
        }
        json_t *ev = json_object_get(j, "event"), *data = json_object_get(ev, "data"),
               *end = json_object_get(ev, "end");
        if (json_object_get(ev, "start") && !r->started) {
                r->started = true;
                if (r->stream)
                        ok = emit_json(fd, json_pack("{s:s, s:s, s:s}", "type", "start", "exec_id",
                                                   r->exec_id, "sandbox_id", r->sandbox));
        }
        for (int w = 0; w < 2 && data; w++) {
                const char *b64 = json_string_value(json_object_get(data, w ? "stderr" : "stdout"));
                if (!b64)
                        b64 = w ? NULL : json_string_value(json_object_get(data, "pty"));
                _cleanup_free_ char *raw = NULL;
                size_t rn = 0;
                if (!b64 || sbx_base64_decode(b64, strlen(b64), false, &raw, &rn) < 0)
                        continue;
                if (r->stream) {
                        const char *enc;
                        json_t *dj = remote_data_json(raw, rn, &enc);
                        ok = ok &&
                             emit_json(fd, json_pack("{s:s, s:o, s:s}", "type", w ? "stderr" : "stdout",
                                                   "data", dj, "encoding", enc));
                } else
                        ok = ok && append(w ? &r->err : &r->out, w ? &r->en : &r->on, raw, rn);
        }
        if (end) {
                r->ended = true;
                r->exit_code = (int) json_integer_value(json_object_get(end, "exitCode"));
                snprintf(r->status, sizeof r->status, "%s",
                        json_string_value(json_object_get(end, "status")) ?: "");
                const char *e = json_string_value(json_object_get(end, "error"));
                if (e && !json_is_true(json_object_get(end, "exited")))
                        snprintf(r->error, sizeof r->error, "%s", e);
        }
        json_decref(j);
        return ok;
}

/* The answer's bytes as they come: whole envelopes taken out. */
static bool feed(void *ud, int fd, const char *d, size_t n) {
        run *r = ud;
        if (r->bn + n > EXEC_MAX + 65536)
                return false;
        char *nb = realloc(r->buf, r->bn + n);
        if (!nb)
                return false;
        r->buf = nb;
        memcpy(r->buf + r->bn, d, n);
        r->bn += n;
        size_t off = 0;
        while (r->bn - off >= 5) {
                const unsigned char *h = (const unsigned char *) r->buf + off;
                size_t l = ((size_t) h[1] << 24) | ((size_t) h[2] << 16) | ((size_t) h[3] << 8) | h[4];
                if (r->bn - off - 5 < l)
                        break;
                if (!message(r, fd, h[0], r->buf + off + 5, l))
                        return false;
                off += 5 + l;
        }
        memmove(r->buf, r->buf + off, r->bn - off);
        r->bn -= off;
        return true;
}

static json_t *end_json(run *r, bool ok, const char *why) {
        bool exited = r->ended && !r->failed && !r->error[0];
        json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:n, s:n}", "type", "end", "exec_id", r->exec_id,
                "status", exited ? "exited" : "setup_error", "exit_code",
                r->ended ? json_integer(r->exit_code) : json_null(), "signal", "report");
        if (!exited)
                json_object_set_new(j, "error",
                        mgr_err_json("bad_gateway", NULL, "%s",
                                r->error[0] ? r->error
                                : !ok       ? why
                                            : "the command's end never came from E2B"));
        return j;
}

static void stream_done(void *ud, int fd, bool ok, const char *why) {
        run *r = ud;
        (void) emit_json(fd, end_json(r, ok, why));
}

static unsigned exec_op(
        sbx_mgr *m, box *b, const remote_ep *ep, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        json_t *body = remote_exec_body(rq, ep, false, "tty (a terminal is not passed on to E2B yet)",
                "stdin (E2B's process input is a call of its own, not passed on yet)", rp);
        if (!body)
                return rp->code;
        json_t *argv = json_object_get(body, "argv"), *env = json_object_get(body, "env"),
               *cwd = json_object_get(body, "cwd"), *to = json_object_get(body, "timeout_s");
        size_t i;
        json_t *proc = json_pack("{s:O, s:o, s:o}", "cmd", json_array_get(argv, 0), "args", json_array(),
                "envs", env ? json_incref(env) : json_object());
        for (i = 1; i < json_array_size(argv); i++)
                json_array_append(json_object_get(proc, "args"), json_array_get(argv, i));
        if (cwd)
                json_object_set(proc, "cwd", cwd);
        json_t *msgj = json_pack("{s:o}", "process", proc);
        char *msg = msgj ? json_dumps(msgj, JSON_COMPACT) : NULL;
        json_decref(msgj);
        size_t ml = msg ? strlen(msg) : 0;
        char *env_body = malloc(ml + 5);
        if (!msg || !env_body) {
                free(msg);
                free(env_body);
                json_decref(body);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
        }
        env_body[0] = 0;
        env_body[1] = (char) (ml >> 24);
        env_body[2] = (char) (ml >> 16);
        env_body[3] = (char) (ml >> 8);
        env_body[4] = (char) ml;
        memcpy(env_body + 5, msg, ml);
        free(msg);
        char url[1400], tok[400], tmo[64];
        envd_url(ep, b, "/process.Process/Start", url, sizeof url);
        snprintf(tok, sizeof tok, "X-Access-Token: %s", b->remote_token);
        double t = to ? json_number_value(to) : 0;
        snprintf(tmo, sizeof tmo, "Connect-Timeout-Ms: %lld", (long long) (t * 1000));
        const char *extra[] = {"Content-Type: application/connect+json", "Connect-Protocol-Version: 1",
                "Authorization: Basic dXNlcjo=", b->remote_token[0] ? tok : NULL, NULL, NULL};
        if (t > 0)
                extra[b->remote_token[0] ? 4 : 3] = tmo;
        run *r = calloc(1, sizeof *r);
        if (!r) {
                free(env_body);
                json_decref(body);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
        }
        mgr_random_id("exe_", r->exec_id, sizeof r->exec_id);
        snprintf(r->sandbox, sizeof r->sandbox, "%s", b->id);
        r->stream = json_is_true(json_object_get(body, "stream"));
        json_decref(body);
        if (r->stream) {
                remote_xform xf = {.piece = feed,
                        .done = stream_done,
                        .free = run_free,
                        .ud = r,
                        .ctype = "application/x-ndjson"};
                unsigned code = remote_stream(m, ep, "POST", url, env_body, ml + 5, extra, false, &xf, rp);
                free(env_body);
                return code;
        }
        remote_resp resp;
        char why[700] = "";
        long code = remote_call(m, ep, "POST", url, env_body, ml + 5, extra, false, NULL, NULL,
                t > 0 ? (long) (t * 1000) + 30000 : 3600L * 1000, &resp, why, sizeof why);
        free(env_body);
        if (code == 200 && !feed(r, -1, resp.body ? resp.body : "", resp.len))
                snprintf(why, sizeof why, "the answer of %s is not a Connect stream, or over 16 MiB",
                        ep->ext);
        if (!code)
                mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s", why);
        else if (code != 200) {
                remote_answer_why(ep, &resp, why, sizeof why);
                mgr_reply_err(rp, code == 404 ? 404 : 502, code == 404 ? "not_found" : "bad_gateway", NULL,
                        "%s", why);
        } else if (!r->ended || r->error[0] || r->failed)
                mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s: %s", ep->ext,
                        r->error[0] ? r->error
                        : why[0]    ? why
                                    : "the command's end never came");
        else {
                json_t *o, *e;
                const char *e1 = remote_outputs_json(r->out, r->on, r->err, r->en, &o, &e);
                remote_exec_reply(b, false, r->exit_code, o, e, e1, rp);
        }
        remote_resp_done(&resp);
        run_free(r);
        return rp->code;
}

/* ---- envd: files ------------------------------------------------------------------------------ */

static unsigned files_op(
        sbx_mgr *m, box *b, const remote_ep *ep, bool write, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        const char *path = remote_files_path(rq, rp);
        if (!path)
                return rp->code;
        char esc[3 * 4096 + 1], target[200 + sizeof esc], url[1400 + sizeof esc], tok[400], why[700] = "";
        remote_url_escape(path, esc, sizeof esc);
        snprintf(target, sizeof target, "/files?path=%s&username=user", esc);
        envd_url(ep, b, target, url, sizeof url);
        snprintf(tok, sizeof tok, "X-Access-Token: %s", b->remote_token);
        const char *extra[] = {"Authorization: Basic dXNlcjo=", b->remote_token[0] ? tok : NULL, NULL};
        remote_upload u = {.data = rq->body, .len = rq->len};
        remote_resp r;
        long code = remote_call(m, ep, write ? "POST" : "GET", url, NULL, 0, extra, false,
                write ? remote_upload_mime : NULL, &u, 300000, &r, why, sizeof why);
        remote_files_reply(ep, code, &r, why, write, path, rq->len, rp);
        remote_resp_done(&r);
        return rp->code;
}

/* ---- the record, the TTL, pause -------------------------------------------------------------- */

bool e2b_route(sbx_mgr *m, box *b, const remote_ep *ep, const char *method, const char *sub,
        const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        bool get = streq(method, "GET"), post = streq(method, "POST"), put = streq(method, "PUT");
        char target[300], why[700] = "";
        remote_resp r = {0};
        if (!*sub && get) {
                snprintf(target, sizeof target, "/sandboxes/%s", b->remote_id);
                long code = sbx_state_ending(b->state)
                                    ? 0
                                    : remote_call(m, ep, "GET", target, NULL, 0, NULL, true, NULL, NULL,
                                              10000, &r, why, sizeof why);
                json_error_t je;
                json_t *rec = code == 200 && r.body ? json_loads(r.body, 0, &je) : NULL;
                if (rec) {
                        const char *st = json_string_value(json_object_get(rec, "state"));
                        json_t *mine = json_pack("{s:s, s:s, s:s, s:s}", "state",
                                streq_ptr(st, "paused") ? "paused" : "ready", "backend", "e2b", "user",
                                "user", "home", "/home/user");
                        remote_absorb(m, b, mine);
                        json_decref(mine);
                } else if (code == 404)
                        remote_gone(m, b, "gone_at_backend");
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
        if (streq(sub, "/metadata") && put)
                return false; /* E2B has no call to change it: the front's record keeps it */
        if (streq(sub, "/ttl") && post) {
                /* E2B's timeout: how long from now; the front's clock computes the new end as
                 * sbx_ops_extend will (capped at ttl.max), then takes it itself */
                json_t *body = mgr_parse_body(rq, rp, false);
                json_t *e = json_object_get(body, "extend_s");
                if (!body)
                        return true;
                if (!json_is_number(e) || !(json_number_value(e) > 0)) {
                        json_decref(body);
                        return false; /* the native op says what is wrong */
                }
                int64_t now = mgr_now_ms(), base = b->expires_ms > now ? b->expires_ms : now;
                int64_t want = base + (int64_t) (json_number_value(e) * 1000);
                if (want > b->ttl_max_ms)
                        want = b->ttl_max_ms;
                json_decref(body);
                char tb[64];
                snprintf(tb, sizeof tb, "{\"timeout\":%lld}", (long long) ((want - now + 999) / 1000));
                snprintf(target, sizeof target, "/sandboxes/%s/timeout", b->remote_id);
                const char *extra[] = {"Content-Type: application/json", NULL};
                long code = remote_call(m, ep, "POST", target, tb, strlen(tb), extra, true, NULL, NULL,
                        15000, &r, why, sizeof why);
                bool ok = code == 200 || code == 204;
                if (!ok && code)
                        remote_answer_why(ep, &r, why, sizeof why);
                if (!ok)
                        mgr_reply_err(rp, code == 404 ? 410 : 502, code == 404 ? "gone" : "bad_gateway",
                                NULL, "%s", why);
                if (code == 404)
                        remote_gone(m, b, "gone_at_backend");
                remote_resp_done(&r);
                return !ok;
        }
        if ((streq(sub, "/pause") || streq(sub, "/resume")) && post) {
                bool pause = streq(sub, "/pause");
                if (!ep->cap_pause) {
                        remote_lacks(rp, ep->ext, "pause");
                        return true;
                }
                int64_t left = (b->expires_ms - mgr_now_ms()) / 1000;
                char tb[64];
                snprintf(tb, sizeof tb, "{\"timeout\":%lld}", (long long) (left > 1 ? left : 1));
                snprintf(target, sizeof target, "/sandboxes/%s/%s", b->remote_id,
                        pause ? "pause" : "connect");
                const char *extra[] = {"Content-Type: application/json", NULL};
                long code = remote_call(m, ep, "POST", target, pause ? NULL : tb, pause ? 0 : strlen(tb),
                        extra, true, NULL, NULL, 60000, &r, why, sizeof why);
                if (code == 200 || code == 201 || code == 204) {
                        json_t *mine = json_pack("{s:s, s:s, s:s, s:s, s:s}", "state",
                                pause ? "paused" : "ready", "backend", "e2b", "reason",
                                pause ? "pause" : "resume", "user", "user", "home", "/home/user");
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
