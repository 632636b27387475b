/* e2b.c — E2B's API on the control plane's server: the control plane (/sandboxes, /v2/sandboxes:
 * create, get, list, timeout, connect, kill) and the in-sandbox agent "envd" (Connect RPC with
 * the JSON codec: process.Process and filesystem.Filesystem; plain /files and /health), told
 * apart by the E2b-Sandbox-Id header envd requests carry. The API key is a sandboxer token
 * (X-API-KEY); envd requests carry the access token the create answered (X-Access-Token).
 * Everything runs through the native operations: a command is an exec (its own report, limits,
 * events), a file is the native file route, a stat or a listing a command in the sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "daemon/compat/compat.h"

/* What the SDK gates on envd's version: 0.5.2 closeStdin (done), 0.5.7 octet-stream and gzip
 * uploads (not done: so not claimed), 0.6.2 file metadata (not done). */
#define ENVD_VERSION "0.5.6"
#define DEFAULT_TIMEOUT_S 300.0
#define KEEPALIVE_S 50.0

static const char *const homes[] = {"/home/user", NULL};

/* ---- errors --------------------------------------------------------------------------------- */

static void api_err(cx_req *rq, unsigned code, const char *fmt, ...) _printf_(3, 4);
static void api_err(cx_req *rq, unsigned code, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        cx_respond_json(rq, code, json_pack("{s:i, s:s}", "code", (int) code, "message", msg));
}

static const char *native_message(const json_t *j) {
        return json_string_value(json_object_get(json_object_get(j, "error"), "message")) ?: "refused";
}

/* A native refusal as E2B's control plane says it (a destroyed sandbox is one not found). */
static void api_native_err(cx_req *rq, unsigned code, const json_t *j) {
        api_err(rq, code == 410 ? 404 : code, "%s", native_message(j));
}

static const char *connect_code(unsigned http) {
        switch (http) {
        case 400:
                return "invalid_argument";
        case 401:
                return "unauthenticated";
        case 403:
                return "permission_denied";
        case 404:
        case 410:
                return "not_found";
        case 409:
                return "failed_precondition";
        case 413:
        case 429:
                return "resource_exhausted";
        case 501:
                return "unimplemented";
        case 502:
        case 503:
                return "unavailable";
        default:
                return "internal";
        }
}

static unsigned connect_http(const char *code) {
        static const struct {
                const char *c;
                unsigned h;
        } map[] = {{"invalid_argument", 400}, {"unauthenticated", 401}, {"permission_denied", 403},
                {"not_found", 404}, {"already_exists", 409}, {"failed_precondition", 400},
                {"resource_exhausted", 429}, {"unimplemented", 501}, {"unavailable", 503},
                {"deadline_exceeded", 504}};
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (streq(map[i].c, code))
                        return map[i].h;
        return 500;
}

/* A unary Connect error. */
static void rpc_err(cx_req *rq, const char *code, const char *fmt, ...) _printf_(3, 4);
static void rpc_err(cx_req *rq, const char *code, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        cx_respond_json(rq, connect_http(code), json_pack("{s:s, s:s}", "code", code, "message", msg));
}

/* ---- the control plane ---------------------------------------------------------------------- */

static const char *profile_of(const char *templ, char *buf, size_t size) {
        if (!templ || !*templ || streq(templ, "base"))
                return "profile.default";
        if (strncmp(templ, "profile.", 8) == 0)
                return templ;
        snprintf(buf, size, "profile.%s", templ);
        return buf;
}

static const char *template_of(const json_t *rec, char *buf, size_t size) {
        const char *p = json_string_value(json_object_get(rec, "profile")) ?: "profile.default";
        if (streq(p, "profile.default"))
                return "base";
        snprintf(buf, size, "%s", strncmp(p, "profile.", 8) == 0 ? p + 8 : p);
        return buf;
}

static void iso_time(int64_t ms, char buf[static 40]) {
        time_t t = (time_t) (ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, 40 - n, ".%03dZ", (int) (ms % 1000));
}

/* The E2B shape of a native record (ListedSandbox / SandboxDetail). */
static json_t *sandbox_json(const json_t *rec, bool detail) {
        char tb[256], started[40], end[40];
        const json_t *lim = json_object_get(rec, "limits");
        iso_time(cx_record_ms(rec, "created_at"), started);
        iso_time(cx_record_ms(rec, "expires_at"), end);
        const char *id = json_string_value(json_object_get(rec, "id")) ?: "";
        const char *templ = template_of(rec, tb, sizeof tb);
        json_t *md = json_object_get(rec, "metadata");
        json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:s}", "sandboxID", id, "templateID",
                templ, "alias", templ, "clientID", "sandboxer", "startedAt", started, "endAt", end, "state",
                "running", "metadata", md ? json_incref(md) : json_object(), "envdVersion", ENVD_VERSION);
        json_object_set_new(
                j, "cpuCount", json_integer((json_int_t) json_number_value(json_object_get(lim, "cpus"))));
        json_object_set_new(j, "memoryMB",
                json_integer((json_int_t) json_number_value(json_object_get(lim, "memory_mb"))));
        json_object_set_new(j, "diskSizeMB",
                json_integer((json_int_t) json_number_value(json_object_get(lim, "scratch_mb"))));
        if (detail)
                json_object_set_new(j, "domain", json_null());
        return j;
}

static bool api_auth(cx_req *rq) {
        const char *key = cx_header(rq, "X-API-KEY");
        if (key ? cx_auth_token(rq, key) : cx_auth_who(rq))
                return true;
        api_err(rq, 401, "%s",
                key ? "unknown or revoked API key: E2B_API_KEY must be a sandboxer token ('sandboxer token "
                      "create --actor agt --name NAME --json')"
                    : "an API key is required: set E2B_API_KEY to a sandboxer token");
        return false;
}

/* Extend the sandbox so that it lives timeout_s from now (never shortened: the native TTL only
 * extends; capped by the profile's ttl.max). */
static unsigned set_timeout(
        cx_req *rq, const char *id, const json_t *rec, double timeout_s, json_t **ret_err) {
        int64_t remaining = cx_record_ms(rec, "expires_at") - cx_now_ms();
        double extend = timeout_s - (double) remaining / 1000.0;
        if (extend < 1)
                return 200;
        char path[128], body[64];
        snprintf(path, sizeof path, "/v1/sandboxes/%s/ttl", id);
        snprintf(body, sizeof body, "{\"extend_s\":%.3f}", extend);
        sbx_mgr_reply rp;
        unsigned code = cx_native(rq, "POST", path, body, strlen(body), NULL, &rp);
        if (code != 200 && ret_err)
                *ret_err = json_incref(rp.json);
        sbx_mgr_reply_done(&rp);
        return code;
}

static void op_create(cx_req *rq) {
        json_error_t je;
        json_t *body = json_loadb(rq->body, rq->len, 0, &je);
        if (!json_is_object(body)) {
                json_decref(body);
                api_err(rq, 400, "the body must be a JSON object: %s", je.text);
                return;
        }
        json_t *jt = json_object_get(body, "templateID"), *jto = json_object_get(body, "timeout"),
               *jm = json_object_get(body, "metadata"), *je_ = json_object_get(body, "envVars");
        char pb[256];
        if (jt && !json_is_string(jt)) {
                api_err(rq, 400,
                        "templateID: must be a string (a sandboxer profile: base is profile.default)");
                goto out;
        }
        if (jto && !json_is_null(jto) && (!json_is_number(jto) || json_number_value(jto) <= 0)) {
                api_err(rq, 400, "timeout: must be a positive number of seconds");
                goto out;
        }
        if (!cx_string_map_ok(jm, false)) {
                api_err(rq, 400, "metadata: must be an object of strings");
                goto out;
        }
        if (!cx_string_map_ok(je_, true)) {
                api_err(rq, 400, "envVars: must be an object of strings with variable names as keys");
                goto out;
        }
        if (json_is_true(json_object_get(body, "autoPause"))) {
                api_err(rq, 400, "autoPause: sandboxer sandboxes cannot be paused");
                goto out;
        }
        const char *profile = profile_of(json_string_value(jt), pb, sizeof pb);
        double timeout = json_is_number(jto) ? json_number_value(jto) : DEFAULT_TIMEOUT_S;
        json_t *nb = json_pack("{s:s, s:f}", "profile", profile, "ttl_s", timeout);
        if (json_is_object(jm) && json_object_size(jm))
                json_object_set(nb, "metadata", jm);
        char *text = json_dumps(nb, JSON_COMPACT);
        sbx_mgr_reply rp;
        unsigned code = cx_native(rq, "POST", "/v1/sandboxes", text, text ? strlen(text) : 0, NULL, &rp);
        free(text);
        bool capped = false;
        if (code == 400 &&
                streq_ptr(json_string_value(json_object_get(json_object_get(rp.json, "error"), "field")),
                        "ttl_s")) {
                /* more than the profile's ttl.max: the default TTL, extended up to the cap */
                sbx_mgr_reply_done(&rp);
                json_object_del(nb, "ttl_s");
                text = json_dumps(nb, JSON_COMPACT);
                code = cx_native(rq, "POST", "/v1/sandboxes", text, text ? strlen(text) : 0, NULL, &rp);
                free(text);
                capped = true;
        }
        json_decref(nb);
        if (code != 201 && code != 200) {
                if (code == 422)
                        api_err(rq, 400, "templateID '%s': %s", json_string_value(jt) ?: "base",
                                native_message(rp.json));
                else
                        api_native_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
                goto out;
        }
        json_t *rec = json_incref(rp.json);
        sbx_mgr_reply_done(&rp);
        const char *id = json_string_value(json_object_get(rec, "id")) ?: "";
        const char *backend = json_string_value(json_object_get(rec, "backend")) ?: "";
        if (streq(backend, "landlock") || streq(backend, "none")) {
                /* E2B's SDKs write to /tmp and /home/user: only a mount namespace makes those the
                 * sandbox's own. */
                char path[128];
                snprintf(path, sizeof path, "/v1/sandboxes/%s", id);
                cx_native(rq, "DELETE", path, NULL, 0, NULL, &rp);
                sbx_mgr_reply_done(&rp);
                api_err(rq, 400,
                        "templateID '%s': profile %s runs on the %s backend, which has no mount namespace, "
                        "so "
                        "the paths E2B uses (/tmp, /home/user) would not be the sandbox's own; use a "
                        "profile "
                        "with isolation.level: container (e.g. base) on a host where a namespace backend "
                        "works "
                        "(see 'sandboxer doctor')",
                        json_string_value(jt) ?: "base", profile, backend);
                json_decref(rec);
                goto out;
        }
        if (capped)
                (void) set_timeout(rq, id, rec, timeout, NULL);
        char token[65];
        cx_box_set(id, &rq->caller, json_is_object(je_) ? json_incref(je_) : NULL, token);
        char tb[256];
        json_t *ans = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "sandboxID", id, "templateID",
                template_of(rec, tb, sizeof tb), "alias", template_of(rec, tb, sizeof tb), "clientID",
                "sandboxer", "envdVersion", ENVD_VERSION, "envdAccessToken", token);
        json_object_set_new(ans, "domain", json_null());
        cx_respond_json(rq, 201, ans);
        json_decref(rec);
out:
        json_decref(body);
}

/* The record of a sandbox E2B may still address: live. 404 otherwise (answered). */
static json_t *live_record(cx_req *rq, const char *id) {
        unsigned code;
        json_t *rec = cx_record(rq, id, &code);
        if (!rec || !cx_record_live(rec)) {
                json_decref(rec);
                api_err(rq, 404, "sandbox %s not found", id);
                return NULL;
        }
        return rec;
}

static void op_get(cx_req *rq, const char *id) {
        json_t *rec = live_record(rq, id);
        if (!rec)
                return;
        json_t *j = sandbox_json(rec, true);
        char token[65];
        if (cx_box_get(id, NULL, NULL, NULL)) {
                cx_box_set(id, &rq->caller, NULL, token);
                json_object_set_new(j, "envdAccessToken", json_string(token));
        }
        cx_respond_json(rq, 200, j);
        json_decref(rec);
}

/* metadata=k%3Dv%26k2%3Dv2 (each key and value URL-encoded, then the whole). */
static void url_decode(char *s) {
        char *w = s;
        for (char *p = s; *p; p++) {
                if (*p == '%' && p[1] && p[2]) {
                        char hex[3] = {p[1], p[2], 0};
                        *w++ = (char) strtol(hex, NULL, 16);
                        p += 2;
                } else
                        *w++ = *p == '+' ? ' ' : *p;
        }
        *w = 0;
}

static bool metadata_match(const json_t *md, const char *filter) {
        if (!filter || !*filter)
                return true;
        _cleanup_free_ char *f = strdup(filter);
        if (!f)
                return false;
        for (char *save = NULL, *pair = strtok_r(f, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
                char *eq = strchr(pair, '=');
                if (!eq)
                        return false;
                *eq = 0;
                url_decode(pair);
                url_decode(eq + 1);
                const char *v = json_string_value(json_object_get(md, pair));
                if (!v || !streq(v, eq + 1))
                        return false;
        }
        return true;
}

static void op_list(cx_req *rq) {
        const char *md = cx_query(rq, "metadata"), *state = cx_query(rq, "state"),
                   *limit = cx_query(rq, "limit"), *next = cx_query(rq, "nextToken");
        if (state && !strstr(state, "running")) { /* nothing is ever paused */
                cx_respond_json(rq, 200, json_array());
                return;
        }
        char lim[16] = "100";
        if (limit) {
                long l = strtol(limit, NULL, 10);
                snprintf(lim, sizeof lim, "%ld", l < 1 ? 1 : l > 500 ? 500 : l);
        }
        cx_kv q[] = {{"limit", lim}, {next ? "cursor" : NULL, next}, {NULL, NULL}};
        sbx_mgr_reply rp;
        unsigned code = cx_native(rq, "GET", "/v1/sandboxes", NULL, 0, q, &rp);
        if (code != 200) {
                api_native_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
                return;
        }
        json_t *out = json_array(), *items = json_object_get(rp.json, "items");
        size_t i;
        json_t *rec;
        json_array_foreach(items, i, rec) {
                if (!cx_record_live(rec) || !metadata_match(json_object_get(rec, "metadata"), md))
                        continue;
                json_array_append_new(out, sandbox_json(rec, false));
        }
        const char *nc = json_string_value(json_object_get(rp.json, "next_cursor"));
        cx_respond_json(rq, 200, out);
        if (nc)
                cx_add_header(rq, "x-next-token", nc);
        sbx_mgr_reply_done(&rp);
}

static void op_timeout(cx_req *rq, const char *id) {
        json_t *body = json_loadb(rq->body, rq->len, 0, NULL);
        json_t *t = json_object_get(body, "timeout");
        if (!json_is_number(t) || json_number_value(t) < 0) {
                json_decref(body);
                api_err(rq, 400, "timeout: a number of seconds is required");
                return;
        }
        double timeout = json_number_value(t);
        json_decref(body);
        json_t *rec = live_record(rq, id);
        if (!rec)
                return;
        json_t *err = NULL;
        unsigned code = set_timeout(rq, id, rec, timeout, &err);
        if (code != 200)
                api_native_err(rq, code, err);
        else
                cx_respond(rq, 204, NULL, "", 0);
        json_decref(err);
        json_decref(rec);
}

static void op_kill(cx_req *rq, const char *id) {
        json_t *rec = live_record(rq, id); /* a second kill: 404, as E2B answers */
        if (!rec)
                return;
        char path[128];
        snprintf(path, sizeof path, "/v1/sandboxes/%s", id);
        sbx_mgr_reply rp;
        unsigned code = cx_native(rq, "DELETE", path, NULL, 0, NULL, &rp);
        if (code != 200)
                api_native_err(rq, code, rp.json);
        else {
                cx_box_forget(id);
                cx_respond(rq, 204, NULL, "", 0);
        }
        sbx_mgr_reply_done(&rp);
        json_decref(rec);
}

static void op_connect(cx_req *rq, const char *id, unsigned ok_code) {
        json_t *body = rq->len ? json_loadb(rq->body, rq->len, 0, NULL) : NULL;
        json_t *t = json_object_get(body, "timeout");
        double timeout = json_is_number(t) ? json_number_value(t) : 0;
        json_decref(body);
        json_t *rec = live_record(rq, id);
        if (!rec)
                return;
        if (timeout > 0)
                (void) set_timeout(rq, id, rec, timeout, NULL);
        char token[65], tb[256];
        cx_box_set(id, &rq->caller, NULL, token);
        json_t *ans = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "sandboxID", id, "templateID",
                template_of(rec, tb, sizeof tb), "alias", template_of(rec, tb, sizeof tb), "clientID",
                "sandboxer", "envdVersion", ENVD_VERSION, "envdAccessToken", token);
        json_object_set_new(ans, "domain", json_null());
        cx_respond_json(rq, ok_code, ans);
        json_decref(rec);
}

static void control(cx_req *rq, const char *path) {
        if (!api_auth(rq))
                return;
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST"),
             del = streq(rq->method, "DELETE");
        if (streq(path, "/sandboxes") || streq(path, "/v2/sandboxes")) {
                if (post)
                        op_create(rq);
                else if (get)
                        op_list(rq);
                else
                        api_err(rq, 405, "use GET or POST");
                return;
        }
        const char *rest = strncmp(path, "/v2/", 4) == 0 ? path + 14 : path + 11; /* after /sandboxes/ */
        char id[64];
        const char *slash = strchr(rest, '/');
        size_t l = slash ? (size_t) (slash - rest) : strlen(rest);
        if (l == 0 || l >= sizeof id) {
                api_err(rq, 404, "sandbox not found");
                return;
        }
        memcpy(id, rest, l);
        id[l] = 0;
        const char *sub = slash ? slash : "";
        if (!*sub && get)
                op_get(rq, id);
        else if (!*sub && del)
                op_kill(rq, id);
        else if (streq(sub, "/timeout") && post)
                op_timeout(rq, id);
        else if (streq(sub, "/connect") && post)
                op_connect(rq, id, 200);
        else if (streq(sub, "/resume") && post)
                op_connect(rq, id, 201);
        else if (streq(sub, "/refreshes") && post) {
                json_t *rec = live_record(rq, id);
                if (rec)
                        cx_respond(rq, 204, NULL, "", 0);
                json_decref(rec);
        } else if (streq(sub, "/pause"))
                api_err(rq, 409, "sandboxer sandboxes cannot be paused");
        else
                api_err(rq, 501, "%s %s is not implemented by sandboxer's E2B surface", rq->method, path);
}

/* ---- envd: the process table ----------------------------------------------------------------- */

#define MAX_SUBS 8

typedef struct proc {
        struct proc *next;
        atomic_int refs;
        char sandbox[64], exec_id[32];
        uint32_t pid;
        json_t *config, *tag; /* {cmd, args, envs, cwd}; tag: string or NULL */
        int stdin_w;
        cx_stream *subs[MAX_SUBS];
        size_t nsubs;
} proc;

static pthread_mutex_t procs_lock = PTHREAD_MUTEX_INITIALIZER;
static proc *procs;
static uint32_t next_pid = 1000;

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

/* Under procs_lock. */
static proc *proc_find(const char *sandbox, const json_t *selector) {
        json_t *pid = json_object_get(selector, "pid"), *tag = json_object_get(selector, "tag");
        for (proc *p = procs; p; p = p->next) {
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
        for (proc **pp = &procs; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        p->next = NULL;
                        return;
                }
}

/* A Connect envelope: flags, 4-byte big-endian length, JSON. */
static void frame(cx_stream *s, unsigned char flags, json_t *j /* stolen */) {
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
        frame(s, 0, json_pack("{s:o}", "event", event));
}

static void frame_error(cx_stream *s, const char *code, const char *msg) {
        frame(s, 2, json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
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
        pthread_mutex_lock(&procs_lock);
        for (size_t i = 0; i < p->nsubs; i++)
                frame_event(p->subs[i], json_pack("{s:{s:s}}", "data", fd == 2 ? "stderr" : "stdout", b));
        pthread_mutex_unlock(&procs_lock);
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
        pthread_mutex_lock(&procs_lock);
        for (size_t i = 0; i < p->nsubs; i++) {
                frame_event(p->subs[i], json_pack("{s:O}", "end", end));
                frame(p->subs[i], 2, json_object());
                cx_stream_close(p->subs[i]);
        }
        proc_unlink(p);
        p->stdin_w = safe_close(p->stdin_w);
        pthread_mutex_unlock(&procs_lock);
        json_decref(end);
        proc_unref(p);
}

/* ---- envd: requests --------------------------------------------------------------------------- */

typedef struct envd {
        cx_req *rq;
        const char *sandbox;
        json_t *rec; /* the live record */
        char **env; /* the sandbox-wide environment */
        const char *scratch;
} envd;

/* The JSON message of a Connect request: plain (unary) or in one envelope (streaming). */
static json_t *rpc_body(cx_req *rq, bool stream) {
        const unsigned char *b = (const unsigned char *) rq->body;
        size_t n = rq->len;
        if (stream) {
                if (n < 5)
                        return NULL;
                size_t l = ((size_t) b[1] << 24) | ((size_t) b[2] << 16) | ((size_t) b[3] << 8) | b[4];
                if (l > n - 5 || (b[0] & 1)) /* compressed: not negotiated, never sent */
                        return NULL;
                return json_loadb((const char *) b + 5, l, 0, NULL);
        }
        return n ? json_loadb((const char *) b, n, 0, NULL) : json_object();
}

static double connect_timeout_s(cx_req *rq, const json_t *rec) {
        const char *h = cx_header(rq, "Connect-Timeout-Ms");
        double t = h ? strtod(h, NULL) / 1000.0 : 0;
        double cap = json_number_value(json_object_get(json_object_get(rec, "limits"), "timeout_s"));
        if (t <= 0 || (cap > 0 && t > cap))
                t = cap > 0 ? cap : 0;
        return t;
}

static void process_start(envd *e) {
        cx_req *rq = e->rq;
        json_t *req = rpc_body(rq, true);
        json_t *pc = json_object_get(req, "process");
        const char *cmd = json_string_value(json_object_get(pc, "cmd"));
        cx_stream *s = rpc_stream();
        char **argv = NULL, **env = NULL;
        char *cwd = NULL;
        proc *p = NULL;
        if (!s) {
                rpc_err(rq, "unavailable", "out of memory");
                goto out;
        }
        if (!cmd || !*cmd) {
                rpc_err(rq, "invalid_argument", "process.cmd: a command is required");
                goto out;
        }
        if (json_object_get(req, "pty") && !json_is_null(json_object_get(req, "pty"))) {
                rpc_err(rq, "unimplemented",
                        "a PTY is not available in sandboxer sandboxes (commands run without a terminal)");
                goto out;
        }
        json_t *args = json_object_get(pc, "args"), *envs = json_object_get(pc, "envs");
        json_t *jcwd = json_object_get(pc, "cwd");
        if ((args && !json_is_array(args)) || !cx_string_map_ok(envs, true)) {
                rpc_err(rq, "invalid_argument",
                        "process.args must be strings and process.envs an object of variables");
                goto out;
        }
        size_t na = json_array_size(args), ne = 0;
        argv = calloc(na + 2, sizeof *argv);
        for (char **v = e->env; v && *v; v++)
                ne++;
        env = calloc(ne + json_object_size(envs) + 1, sizeof *env);
        if (!argv || !env) {
                rpc_err(rq, "unavailable", "out of memory");
                goto out;
        }
        argv[0] = strdup(cmd);
        for (size_t i = 0; i < na; i++) {
                const char *a = json_string_value(json_array_get(args, i));
                if (!a) {
                        rpc_err(rq, "invalid_argument", "process.args[%zu]: must be a string", i);
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
                !(cwd = cx_path(json_string_value(jcwd), e->scratch, homes))) {
                rpc_err(rq, "invalid_argument", "process.cwd: not a usable path");
                goto out;
        }
        bool want_stdin = json_is_true(json_object_get(req, "stdin"));
        int pin[2] = {-1, -1};
        if (want_stdin && pipe2(pin, O_CLOEXEC) < 0) {
                rpc_err(rq, "unavailable", "cannot make a pipe for stdin: %s", strerror(errno));
                goto out;
        }
        p = calloc(1, sizeof *p);
        if (!p) {
                safe_close(pin[0]);
                safe_close(pin[1]);
                rpc_err(rq, "unavailable", "out of memory");
                goto out;
        }
        atomic_init(&p->refs, 2); /* the callbacks' and ours */
        snprintf(p->sandbox, sizeof p->sandbox, "%s", e->sandbox);
        p->stdin_w = pin[1];
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
        pthread_mutex_lock(&procs_lock);
        p->pid = next_pid++;
        if (next_pid == 0)
                next_pid = 1000;
        p->next = procs;
        procs = p;
        /* the start event goes first, before any output the exec's thread may send */
        frame_event(out_s, json_pack("{s:{s:I}}", "start", "pid", (json_int_t) p->pid));
        pthread_mutex_unlock(&procs_lock);
        sbx_exec_spec spec = {.argv = argv,
                .env = env,
                .cwd = cwd,
                .timeout_s = connect_timeout_s(rq, e->rec),
                .stdin_fd = pin[0]};
        sbx_exec_stream_cb cb = {.on_output = proc_output, .on_end = proc_end, .userdata = p};
        char exec_id[32];
        json_t *err = NULL;
        unsigned code = sbx_mgr_exec_start(rq->m, &rq->caller, e->sandbox, &spec, &cb, exec_id, &err);
        safe_close(pin[0]);
        if (code) {
                pthread_mutex_lock(&procs_lock);
                proc_unlink(p);
                pthread_mutex_unlock(&procs_lock);
                cx_stream_clear(out_s);
                frame_error(out_s, code == 410 || code == 404 ? "unavailable" : connect_code(code),
                        native_message(err));
                cx_stream_close(out_s);
                json_decref(err);
                rq->resp = cx_stream_response(out_s, "application/connect+json");
                rq->code = 200;
                atomic_fetch_sub(&p->refs, 1); /* the callbacks will not run */
                proc_unref(p);
                p = NULL;
                goto out;
        }
        pthread_mutex_lock(&procs_lock);
        snprintf(p->exec_id, sizeof p->exec_id, "%s", exec_id);
        pthread_mutex_unlock(&procs_lock);
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

static void process_connect(envd *e) {
        cx_req *rq = e->rq;
        json_t *req = rpc_body(rq, true);
        cx_stream *s = rpc_stream();
        if (!s) {
                json_decref(req);
                rpc_err(rq, "unavailable", "out of memory");
                return;
        }
        /* the response's reference first: a subscribed stream is the process's once it ends */
        rq->resp = cx_stream_response(s, "application/connect+json");
        rq->code = 200;
        bool subscribed = false;
        pthread_mutex_lock(&procs_lock);
        proc *p = proc_find(e->sandbox, json_object_get(req, "process"));
        if (p && p->nsubs < MAX_SUBS) {
                frame_event(s, json_pack("{s:{s:I}}", "start", "pid", (json_int_t) p->pid));
                p->subs[p->nsubs++] = s;
                subscribed = true;
        } else {
                frame_error(s, p ? "resource_exhausted" : "not_found",
                        p ? "too many connections to this process" : "no such process is running");
                cx_stream_close(s);
        }
        pthread_mutex_unlock(&procs_lock);
        if (!subscribed)
                cx_stream_unref(s);
        json_decref(req);
}

static void process_list(envd *e) {
        json_t *list = json_array();
        pthread_mutex_lock(&procs_lock);
        for (proc *p = procs; p; p = p->next) {
                if (!streq(p->sandbox, e->sandbox))
                        continue;
                json_t *pi = json_pack("{s:O, s:I}", "config", p->config, "pid", (json_int_t) p->pid);
                if (p->tag)
                        json_object_set(pi, "tag", p->tag);
                json_array_append_new(list, pi);
        }
        pthread_mutex_unlock(&procs_lock);
        cx_respond_json(e->rq, 200, json_pack("{s:o}", "processes", list));
}

static void process_signal(envd *e) {
        cx_req *rq = e->rq;
        json_t *req = rpc_body(rq, false);
        json_t *sig = json_object_get(req, "signal");
        int signo = json_is_integer(sig) ? (int) json_integer_value(sig)
                    : json_is_string(sig) && streq(json_string_value(sig), "SIGNAL_SIGKILL") ? SIGKILL
                    : json_is_string(sig) && streq(json_string_value(sig), "SIGNAL_SIGTERM") ? SIGTERM
                                                                                             : 0;
        if (signo != SIGKILL && signo != SIGTERM) {
                json_decref(req);
                rpc_err(rq, "invalid_argument", "signal: SIGNAL_SIGKILL or SIGNAL_SIGTERM");
                return;
        }
        char exec_id[32] = "";
        pthread_mutex_lock(&procs_lock);
        proc *p = proc_find(e->sandbox, json_object_get(req, "process"));
        if (p)
                snprintf(exec_id, sizeof exec_id, "%s", p->exec_id);
        pthread_mutex_unlock(&procs_lock);
        json_decref(req);
        if (!exec_id[0]) {
                rpc_err(rq, "not_found", "no such process is running");
                return;
        }
        int r = sbx_mgr_exec_signal(rq->m, &rq->caller, e->sandbox, exec_id, signo);
        if (r == -ESRCH || r == -ENOENT)
                rpc_err(rq, "not_found", "no such process is running");
        else if (r < 0)
                rpc_err(rq, "internal", "the signal could not be sent: %s", strerror(-r));
        else
                cx_respond_json(rq, 200, json_object());
}

static void process_input(envd *e, bool close_it) {
        cx_req *rq = e->rq;
        json_t *req = rpc_body(rq, false);
        char *data = NULL;
        size_t n = 0;
        if (!close_it) {
                json_t *in = json_object_get(json_object_get(req, "input"), "stdin");
                if (!json_is_string(in) ||
                        cx_b64_decode(json_string_value(in), json_string_length(in), &data, &n) < 0) {
                        json_decref(req);
                        rpc_err(rq,
                                json_object_get(json_object_get(req, "input"), "pty") ? "unimplemented"
                                                                                      : "invalid_argument",
                                "input.stdin: base64 bytes are required (there is no PTY)");
                        return;
                }
        }
        int fd = -1;
        bool found;
        pthread_mutex_lock(&procs_lock);
        proc *p = proc_find(e->sandbox, json_object_get(req, "process"));
        found = p != NULL;
        if (p && close_it)
                p->stdin_w = safe_close(p->stdin_w);
        else if (p && p->stdin_w >= 0)
                fd = fcntl(p->stdin_w, F_DUPFD_CLOEXEC, 3);
        pthread_mutex_unlock(&procs_lock);
        json_decref(req);
        if (!found)
                rpc_err(rq, "not_found", "no such process is running");
        else if (close_it)
                cx_respond_json(rq, 200, json_object());
        else if (fd < 0)
                rpc_err(rq, "failed_precondition",
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
                        rpc_err(rq, "failed_precondition", "the process no longer reads its stdin");
        }
        free(data);
}

/* ---- envd: the filesystem, by commands run in the sandbox ------------------------------------- */

/* One entry per 9 NUL-terminated fields: type, size, octal mode, symbolic mode, owner, group,
 * mtime, link target, path. */
#define FIND_FORMAT "%y\\0%s\\0%m\\0%M\\0%u\\0%g\\0%T@\\0%l\\0%p\\0"

static const char stat_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
        "exec find \"$1\" -maxdepth 0 -printf '" FIND_FORMAT "'\n";
static const char list_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
        "[ -d \"$1\" ] || { echo \"$1: not a directory\" >&2; exit 20; }\n"
        "exec find \"$1\" -mindepth 1 -maxdepth \"$2\" -printf '" FIND_FORMAT "'\n";
static const char mkdir_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] && { echo \"$1: already exists\" >&2; exit 17; }\n"
        "mkdir -p -- \"$1\" || exit 1\n"
        "exec find \"$1\" -maxdepth 0 -printf '" FIND_FORMAT "'\n";
static const char move_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
        "mkdir -p -- \"$(dirname -- \"$2\")\" && mv -f -T -- \"$1\" \"$2\" || exit 1\n"
        "exec find \"$2\" -maxdepth 0 -printf '" FIND_FORMAT "'\n";
static const char remove_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
        "exec rm -rf -- \"$1\"\n";

static json_t *entry_json(char *const f[9]) {
        const char *type = f[0][0] == 'd'   ? "FILE_TYPE_DIRECTORY"
                           : f[0][0] == 'l' ? "FILE_TYPE_SYMLINK"
                                            : "FILE_TYPE_FILE";
        const char *path = f[8];
        const char *name = strrchr(path, '/');
        name = name && name[1] ? name + 1 : path;
        double mt = strtod(f[6], NULL);
        time_t secs = (time_t) mt;
        struct tm tm;
        gmtime_r(&secs, &tm);
        char ts[64];
        size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(ts + n, sizeof ts - n, ".%09ldZ", (long) ((mt - (double) secs) * 1e9));
        json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:s}", "name", name, "type", type,
                "path", path, "size", f[1], "mode", (json_int_t) strtol(f[2], NULL, 8), "permissions", f[3],
                "owner", f[4], "group", f[5], "modifiedTime", ts);
        if (f[7][0])
                json_object_set_new(j, "symlinkTarget", json_string(f[7]));
        return j;
}

static json_t *entries_json(const char *out, size_t len) {
        json_t *list = json_array();
        char *f[9];
        size_t k = 0;
        for (const char *p = out; p < out + len;) {
                const char *z = memchr(p, 0, (size_t) (out + len - p));
                if (!z)
                        break;
                f[k++] = (char *) p;
                p = z + 1;
                if (k == 9) {
                        json_array_append_new(list, entry_json(f));
                        k = 0;
                }
        }
        return list;
}

/* Run a script with arguments; on failure answer the Connect error and return false. */
static bool fs_run(envd *e, const char *script, const char *a1, const char *a2, cx_run *r) {
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) script, (char *) "sh", (char *) a1,
                (char *) a2, NULL};
        unsigned code = cx_exec(e->rq, e->sandbox, argv, e->env, NULL, 0, NULL, 0, r);
        if (code) {
                rpc_err(e->rq, code == 410 || code == 404 ? "unavailable" : connect_code(code), "%s",
                        native_message(r->refusal));
                return false;
        }
        if (r->exit_code == 0)
                return true;
        const char *msg = r->err && *r->err ? r->err : r->error ? r->error : "failed";
        char m[1024];
        snprintf(m, sizeof m, "%s", msg);
        size_t l = strlen(m);
        while (l && m[l - 1] == '\n')
                m[--l] = 0;
        if (r->exit_code == 2)
                rpc_err(e->rq, "not_found", "%s", m);
        else if (r->exit_code == 17)
                rpc_err(e->rq, "already_exists", "%s", m);
        else if (r->exit_code == 20)
                rpc_err(e->rq, "invalid_argument", "%s", m);
        else if (strstr(m, "ermission denied") || strstr(m, "ead-only file system") ||
                 strstr(m, "peration not permitted"))
                rpc_err(e->rq, "permission_denied", "%s", m);
        else
                rpc_err(e->rq, "internal", "%s (%s)", m, r->status[0] ? r->status : "not run");
        return false;
}

static void filesystem(envd *e, const char *method) {
        cx_req *rq = e->rq;
        json_t *req = rpc_body(rq, false);
        char *p1 = NULL, *p2 = NULL;
        cx_run r = {0};
        if (!req) {
                rpc_err(rq, "invalid_argument", "the body is not JSON");
                return;
        }
        bool move = streq(method, "Move");
        const char *src = json_string_value(json_object_get(req, move ? "source" : "path"));
        const char *dst = move ? json_string_value(json_object_get(req, "destination")) : NULL;
        if (!(p1 = cx_path(src, e->scratch, homes)) || (move && !(p2 = cx_path(dst, e->scratch, homes)))) {
                rpc_err(rq, "invalid_argument",
                        "%s: an absolute path, or one relative to the home directory, is required",
                        move ? "source and destination" : "path");
                goto out;
        }
        if (streq(method, "Stat")) {
                if (fs_run(e, stat_script, p1, NULL, &r)) {
                        json_t *l = entries_json(r.out, r.out_len);
                        if (json_array_size(l))
                                cx_respond_json(rq, 200, json_pack("{s:O}", "entry", json_array_get(l, 0)));
                        else
                                rpc_err(rq, "not_found", "%s: no such file or directory", p1);
                        json_decref(l);
                }
        } else if (streq(method, "ListDir")) {
                json_t *d = json_object_get(req, "depth");
                char depth[16];
                snprintf(depth, sizeof depth, "%lld",
                        json_is_integer(d) && json_integer_value(d) > 0 ? (long long) json_integer_value(d)
                                                                        : 1LL);
                if (fs_run(e, list_script, p1, depth, &r))
                        cx_respond_json(
                                rq, 200, json_pack("{s:o}", "entries", entries_json(r.out, r.out_len)));
        } else if (streq(method, "MakeDir") || move) {
                if (fs_run(e, move ? move_script : mkdir_script, p1, p2, &r)) {
                        json_t *l = entries_json(r.out, r.out_len);
                        json_t *ans = json_object();
                        if (json_array_size(l))
                                json_object_set(ans, "entry", json_array_get(l, 0));
                        cx_respond_json(rq, 200, ans);
                        json_decref(l);
                }
        } else if (streq(method, "Remove")) {
                if (fs_run(e, remove_script, p1, NULL, &r))
                        cx_respond_json(rq, 200, json_object());
        } else
                rpc_err(rq, "unimplemented", "filesystem.Filesystem/%s is not implemented by sandboxer",
                        method);
out:
        cx_run_done(&r);
        free(p1);
        free(p2);
        json_decref(req);
}

/* ---- envd: /files ------------------------------------------------------------------------------ */

static void files_err(cx_req *rq, unsigned code, const json_t *native) {
        api_err(rq, code == 410 ? 502 : code, "%s", native_message(native));
}

static unsigned file_put(envd *e, const char *path, const char *data, size_t len, json_t **ret_err) {
        char np[128];
        snprintf(np, sizeof np, "/v1/sandboxes/%s/files", e->sandbox);
        cx_kv q[] = {{"path", path}, {NULL, NULL}};
        sbx_mgr_reply rp;
        unsigned code = cx_native(e->rq, "PUT", np, data, len, q, &rp);
        if (code == 404) {
                /* envd makes the parent directories */
                sbx_mgr_reply_done(&rp);
                cx_run r;
                char *argv[] = {(char *) "/bin/sh", (char *) "-c",
                        (char *) "mkdir -p -- \"$(dirname -- \"$1\")\"", (char *) "sh", (char *) path, NULL};
                if (cx_exec(e->rq, e->sandbox, argv, NULL, NULL, 0, NULL, 0, &r) == 0 && r.exit_code == 0)
                        code = cx_native(e->rq, "PUT", np, data, len, q, &rp);
                else
                        code = cx_native(e->rq, "PUT", np, data, len, q, &rp);
                cx_run_done(&r);
        }
        if (code != 200 && ret_err)
                *ret_err = json_incref(rp.json);
        sbx_mgr_reply_done(&rp);
        return code;
}

static json_t *written_json(const char *path) {
        const char *name = strrchr(path, '/');
        return json_pack("{s:s, s:s, s:s}", "name", name ? name + 1 : path, "type", "file", "path", path);
}

static void files(envd *e) {
        cx_req *rq = e->rq;
        const char *qpath = cx_query(rq, "path");
        if (streq(rq->method, "GET")) {
                _cleanup_free_ char *p = cx_path(qpath, e->scratch, homes);
                if (!p) {
                        api_err(rq, 400, "path: a file path is required");
                        return;
                }
                char np[128];
                snprintf(np, sizeof np, "/v1/sandboxes/%s/files", e->sandbox);
                cx_kv q[] = {{"path", p}, {NULL, NULL}};
                sbx_mgr_reply rp;
                unsigned code = cx_native(rq, "GET", np, NULL, 0, q, &rp);
                if (code == 200 && rp.raw)
                        cx_respond(rq, 200, "application/octet-stream", rp.raw, rp.raw_len);
                else if (code == 200)
                        cx_respond(rq, 200, "application/octet-stream", "", 0);
                else
                        files_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
                return;
        }
        if (!streq(rq->method, "POST")) {
                api_err(rq, 405, "use GET or POST");
                return;
        }
        const char *ctype = cx_header(rq, "Content-Type");
        json_t *written = json_array(), *err = NULL;
        unsigned code = 200;
        if (ctype && strncasecmp(ctype, "multipart/", 10) == 0) {
                cx_part *parts = calloc(64, sizeof *parts);
                int n = parts ? cx_multipart(ctype, rq->body, rq->len, parts, 64) : -ENOMEM;
                if (n < 0) {
                        free(parts);
                        json_decref(written);
                        api_err(rq, 400, "the body is not multipart/form-data");
                        return;
                }
                for (int i = 0; i < n && code == 200; i++) {
                        if (!streq(parts[i].name, "file"))
                                continue;
                        _cleanup_free_ char *p =
                                cx_path(qpath ? qpath : parts[i].filename, e->scratch, homes);
                        if (!p) {
                                code = 400;
                                err = json_pack("{s:{s:s}}", "error", "message",
                                        "a file path is required (path or the part's filename)");
                                break;
                        }
                        code = file_put(e, p, parts[i].data, parts[i].len, &err);
                        if (code == 200)
                                json_array_append_new(written, written_json(p));
                }
                free(parts);
        } else if (ctype && strncasecmp(ctype, "application/octet-stream", 24) == 0) {
                const char *enc = cx_header(rq, "Content-Encoding");
                _cleanup_free_ char *p = cx_path(qpath, e->scratch, homes);
                if (enc && strcasecmp(enc, "identity") != 0) {
                        code = 400;
                        err = json_pack("{s:{s:s}}", "error", "message",
                                "Content-Encoding is not supported (envd 0.5.6)");
                } else if (!p) {
                        code = 400;
                        err = json_pack("{s:{s:s}}", "error", "message", "path: a file path is required");
                } else if ((code = file_put(e, p, rq->body, rq->len, &err)) == 200)
                        json_array_append_new(written, written_json(p));
        } else {
                code = 400;
                err = json_pack("{s:{s:s}}", "error", "message",
                        "the body must be multipart/form-data or application/octet-stream");
        }
        if (code != 200)
                files_err(rq, code, err);
        else
                cx_respond_json(rq, 200, json_incref(written));
        json_decref(written);
        json_decref(err);
}

/* ---- envd: dispatch ---------------------------------------------------------------------------- */

static void envd_handle(cx_req *rq, const char *sandbox) {
        const char *path = rq->url;
        bool health = streq(path, "/health");
        bool rpc = strncmp(path, "/process.Process/", 17) == 0 ||
                   strncmp(path, "/filesystem.Filesystem/", 23) == 0;
        envd e = {.rq = rq, .sandbox = sandbox};
        /* who: the peer or bearer http.c saw, else the sandbox's access token */
        bool authed;
        if (rq->who) {
                authed = cx_auth_who(rq);
                (void) cx_box_get(sandbox, NULL, NULL, &e.env);
        } else
                authed = cx_box_get(sandbox, cx_header(rq, "X-Access-Token") ?: "", &rq->caller, &e.env);
        if (!authed) {
                if (health)
                        api_err(rq, 502, "sandbox %s is not running (or this access token is not its)",
                                sandbox);
                else if (rpc)
                        rpc_err(rq, "unauthenticated", "X-Access-Token is not this sandbox's access token");
                else
                        api_err(rq, 401, "X-Access-Token is not this sandbox's access token");
                goto out;
        }
        unsigned code;
        e.rec = cx_record(rq, sandbox, &code);
        if (!e.rec || !cx_record_live(e.rec)) {
                if (rpc)
                        rpc_err(rq, "unavailable", "sandbox %s is not running", sandbox);
                else
                        api_err(rq, 502, "sandbox %s is not running", sandbox);
                if (e.rec)
                        cx_box_forget(sandbox);
                goto out;
        }
        e.scratch = json_string_value(json_object_get(e.rec, "scratch")) ?: "/tmp";
        if (health)
                cx_respond(rq, 204, NULL, "", 0);
        else if (streq(path, "/files"))
                files(&e);
        else if (!streq(rq->method, "POST") && rpc)
                rpc_err(rq, "unimplemented", "Connect RPCs are POSTs");
        else if (streq(path, "/process.Process/Start"))
                process_start(&e);
        else if (streq(path, "/process.Process/Connect"))
                process_connect(&e);
        else if (streq(path, "/process.Process/List"))
                process_list(&e);
        else if (streq(path, "/process.Process/SendSignal"))
                process_signal(&e);
        else if (streq(path, "/process.Process/SendInput"))
                process_input(&e, false);
        else if (streq(path, "/process.Process/CloseStdin"))
                process_input(&e, true);
        else if (strncmp(path, "/filesystem.Filesystem/", 23) == 0)
                filesystem(&e, path + 23);
        else if (rpc)
                rpc_err(rq, "unimplemented", "%s is not implemented by sandboxer", path);
        else
                api_err(rq, 404, "no such envd endpoint: %s", path);
out:
        json_decref(e.rec);
        cx_strv_free(e.env);
}

bool cx_e2b_handle(cx_req *rq) {
        const char *sandbox = cx_header(rq, "E2b-Sandbox-Id");
        if (sandbox) {
                envd_handle(rq, sandbox);
                return true;
        }
        const char *u = rq->url;
        if (streq(u, "/sandboxes") || strncmp(u, "/sandboxes/", 11) == 0 || streq(u, "/v2/sandboxes") ||
                strncmp(u, "/v2/sandboxes/", 14) == 0) {
                control(rq, u);
                return true;
        }
        return false;
}
