/* e2b.c — E2B's API on the control plane's server: the control plane (/sandboxes, /v2/sandboxes:
 * create, get, list, timeout, connect, kill) and the in-sandbox agent "envd" (Connect RPC with
 * the JSON codec: process.Process and filesystem.Filesystem; plain /files and /health), told
 * apart by the E2b-Sandbox-Id header envd requests carry. The API key is a sandboxer token
 * (X-API-KEY); envd requests carry the access token the create answered (X-Access-Token).
 * Everything runs through the native operations: a command is an exec (its own report, limits,
 * events), a file is the native file route, a stat or a listing a command in the sandbox.
 *
 * This file: the errors both parts answer with, envd's requests and its dispatch, and the entry point;
 * e2b-sandboxes.c the control plane, e2b-process.c process.Process, e2b-files.c
 * filesystem.Filesystem and /files. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/macro.h"
#include "daemon/compat/compat.h"
#include "basic/base64.h"
#include "basic/sha256.h"
#include "daemon/compat/e2b-internal.h"
#include "daemon/ports.h"

const char *const e2b_homes[] = {"/home/user", NULL};

/* ---- errors --------------------------------------------------------------------------------- */

void e2b_api_err(cx_req *rq, unsigned code, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        cx_respond_json(rq, code, json_pack("{s:i, s:s}", "code", (int) code, "message", msg));
}

const char *e2b_native_message(const json_t *j) {
        return json_string_value(json_object_get(json_object_get(j, "error"), "message")) ?: "refused";
}

const char *e2b_connect_code(unsigned http) {
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
void e2b_rpc_err(cx_req *rq, const char *code, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        cx_respond_json(rq, connect_http(code), json_pack("{s:s, s:s}", "code", code, "message", msg));
}

/* ---- envd: requests --------------------------------------------------------------------------- */

/* The JSON message of a Connect request: plain (unary) or in one envelope (streaming). */
json_t *e2b_rpc_body(cx_req *rq, bool stream) {
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

/* ---- envd: dispatch ---------------------------------------------------------------------------- */

/* E2B's signed file URLs (the SDK's uploadUrl and downloadUrl): signature = "v1_" +
 * base64(SHA-256("PATH:OP:USER:TOKEN" [+ ":EXPIRATION"])) without its '=', OP read for a GET and
 * write for a POST, TOKEN the sandbox's access token; a URL with signature_expiration is good
 * until then. */
typedef struct signed_url {
        const char *path, *op, *user, *sig, *exp;
} signed_url;

static bool signature_ok(void *ud, const char *token) {
        const signed_url *s = ud;
        _cleanup_free_ char *raw = NULL;
        if (asprintf(&raw, "%s:%s:%s:%s%s%s", s->path, s->op, s->user, token, s->exp ? ":" : "",
                    s->exp ? s->exp : "") < 0)
                return false;
        uint8_t d[SHA256_DIGEST_SIZE];
        sha256_ctx c;
        sha256_init(&c);
        sha256_update(&c, raw, strlen(raw));
        sha256_final(&c, d);
        explicit_bzero(raw, strlen(raw));
        _cleanup_free_ char *b = sbx_base64_encode(d, sizeof d);
        if (!b)
                return false;
        for (size_t n = strlen(b); n && b[n - 1] == '='; n--)
                b[n - 1] = 0;
        size_t n = strlen(b), m = strlen(s->sig);
        unsigned char diff = m != n + 3 || strncmp(s->sig, "v1_", 3) != 0;
        for (size_t i = 0; i < n && i + 3 < m; i++)
                diff |= (unsigned char) (b[i] ^ s->sig[i + 3]);
        return diff == 0;
}

/* A signed /files request: true with the sandbox (id "" to search them all) and its caller in
 * rq->caller; false with the 403 said. */
static bool signed_files(cx_req *rq, char id[static 32]) {
        const char *exp = cx_query(rq, "signature_expiration");
        signed_url s = {.path = cx_query(rq, "path") ?: "",
                .op = streq(rq->method, "POST") ? "write" : "read",
                .user = cx_query(rq, "username") ?: "",
                .sig = cx_query(rq, "signature") ?: "",
                .exp = exp};
        if (!sbx_mgr_surface_verify(rq->m, id, signature_ok, &s, &rq->caller, NULL)) {
                e2b_api_err(rq, 403,
                        "the signature of this file URL is not valid (altered, or for another path, "
                        "operation or sandbox)");
                return false;
        }
        char *end = NULL;
        long long e = exp ? strtoll(exp, &end, 10) : 0;
        if (exp && (*end || e <= cx_now_ms() / 1000)) {
                e2b_api_err(rq, 403, "this signed file URL has expired (at %s)", exp);
                return false;
        }
        return true;
}

static void envd_handle(cx_req *rq, const char *sandbox, bool presigned) {
        const char *path = rq->url;
        bool health = streq(path, "/health");
        bool rpc = strncmp(path, "/process.Process/", 17) == 0 ||
                   strncmp(path, "/filesystem.Filesystem/", 23) == 0;
        envd e = {.rq = rq, .sandbox = sandbox};
        /* who: the peer or bearer http.c saw, else the sandbox's access token */
        bool authed;
        if (presigned) { /* signed_files() authenticated it */
                authed = true;
                (void) cx_box_get(rq->m, sandbox, NULL, NULL, &e.env);
        } else if (rq->who) {
                authed = cx_auth_who(rq);
                (void) cx_box_get(rq->m, sandbox, NULL, NULL, &e.env);
        } else
                authed = cx_box_get(
                        rq->m, sandbox, cx_header(rq, "X-Access-Token") ?: "", &rq->caller, &e.env);
        if (!authed) {
                if (health)
                        e2b_api_err(rq, 502, "sandbox %s is not running (or this access token is not its)",
                                sandbox);
                else if (rpc)
                        e2b_rpc_err(
                                rq, "unauthenticated", "X-Access-Token is not this sandbox's access token");
                else
                        e2b_api_err(rq, 401, "X-Access-Token is not this sandbox's access token");
                goto out;
        }
        unsigned code;
        /* The user E2B asks to run as (Authorization: Basic base64(NAME:)): every command and file
         * of a sandbox is uid 1000's; root is refused, never quietly turned into it. */
        const char *basic = cx_header(rq, "Authorization");
        if (basic && strncasecmp(basic, "Basic ", 6) == 0) {
                char *cred = NULL;
                size_t clen = 0;
                bool root = cx_b64_decode(basic + 6, strlen(basic + 6), &cred, &clen) >= 0 && cred &&
                            (strncmp(cred, "root:", 5) == 0 || streq(cred, "root") ||
                                    strncmp(cred, "0:", 2) == 0);
                free(cred);
                if (root) {
                        if (streq(path, "/process.Process/Start") || streq(path, "/process.Process/Connect"))
                                e2b_process_refuse(&e, "permission_denied",
                                        "this sandbox has no root: its commands are uid 1000's (user); run "
                                        "them without user: 'root'");
                        else if (rpc)
                                e2b_rpc_err(rq, "permission_denied",
                                        "this sandbox has no root: its commands and files are uid 1000's "
                                        "(user); run them without user: 'root'");
                        else
                                e2b_api_err(rq, 403,
                                        "this sandbox has no root: its commands and files are uid 1000's "
                                        "(user); use them without user: 'root'");
                        goto out;
                }
        }
        e.rec = cx_record(rq, sandbox, &code);
        /* paused: its envd does not answer (E2B's 502), unless it was made with autoResume —
         * then this call resumes it */
        if (e.rec && streq_ptr(json_string_value(json_object_get(e.rec, "state")), "paused") &&
                json_is_true(json_object_get(e.rec, "auto_resume"))) {
                sbx_mgr_reply rp;
                if (sbx_ops_resume(rq->m, &rq->caller, sandbox, &rp) == 200) {
                        json_decref(e.rec);
                        e.rec = rp.json;
                        rp.json = NULL;
                }
                sbx_mgr_reply_done(&rp);
        }
        if (e.rec && streq_ptr(json_string_value(json_object_get(e.rec, "state")), "paused")) {
                if (rpc)
                        e2b_rpc_err(rq, "unavailable", "sandbox %s is paused (connect resumes it)", sandbox);
                else
                        e2b_api_err(rq, 502, "sandbox %s is paused (connect resumes it)", sandbox);
                goto out;
        }
        if (!e.rec || !cx_record_live(e.rec)) {
                if (rpc)
                        e2b_rpc_err(rq, "unavailable", "sandbox %s is not running", sandbox);
                else
                        e2b_api_err(rq, 502, "sandbox %s is not running", sandbox);
                goto out;
        }
        /* a home of its own (profile.e2b: /home/user) is where E2B's paths are; without one,
         * /home/user stands for the scratch */
        const char *home = json_string_value(json_object_get(e.rec, "home"));
        e.scratch = home ?: json_string_value(json_object_get(e.rec, "scratch")) ?: "/tmp";
        e.homes = home ? NULL : e2b_homes;
        if (health)
                cx_respond(rq, 204, NULL, "", 0);
        else if (streq(path, "/files"))
                e2b_files(&e);
        else if (!streq(rq->method, "POST") && rpc)
                e2b_rpc_err(rq, "unimplemented", "Connect RPCs are POSTs");
        else if (streq(path, "/process.Process/Start"))
                e2b_process_start(&e);
        else if (streq(path, "/process.Process/Connect"))
                e2b_process_connect(&e);
        else if (streq(path, "/process.Process/List"))
                e2b_process_list(&e);
        else if (streq(path, "/process.Process/SendSignal"))
                e2b_process_signal(&e);
        else if (streq(path, "/process.Process/SendInput"))
                e2b_process_input(&e, false);
        else if (streq(path, "/process.Process/CloseStdin"))
                e2b_process_input(&e, true);
        else if (streq(path, "/process.Process/Update"))
                e2b_process_update(&e);
        else if (streq(path, "/filesystem.Filesystem/WatchDir"))
                e2b_watch_dir(&e);
        else if (strncmp(path, "/filesystem.Filesystem/", 23) == 0)
                e2b_filesystem(&e, path + 23);
        else if (rpc)
                e2b_rpc_err(rq, "unimplemented", "%s is not implemented by sandboxer", path);
        else
                e2b_api_err(rq, 404, "no such envd endpoint: %s", path);
out:
        json_decref(e.rec);
        cx_strv_free(e.env);
}

bool cx_e2b_handle(cx_req *rq) {
        char hdr_id[32];
        const char *sandbox = cx_header(rq, "E2b-Sandbox-Id")
                                      ? sbx_id_canon(cx_header(rq, "E2b-Sandbox-Id"), hdr_id)
                                      : NULL;
        char id[32] = "";
        unsigned port = 0;
        /* envd by Host (49983-ID.DOMAIN: what the SDK builds without E2B_SANDBOX_URL) */
        if (!sandbox && sbx_ports_host_target(rq->m, cx_header(rq, "Host"), &port, id) &&
                port == SBX_PORTS_ENVD_PORT)
                sandbox = id;
        if (streq(rq->url, "/files") && cx_query(rq, "signature")) {
                /* a signed URL: no header to name the sandbox when E2B_SANDBOX_URL is one server's,
                 * so the signature names it (id "": the one whose token made it) */
                if (sandbox && !*id)
                        snprintf(id, sizeof id, "%s", sandbox);
                if (signed_files(rq, id))
                        envd_handle(rq, id, true);
                return true;
        }
        if (sandbox) {
                envd_handle(rq, sandbox, false);
                return true;
        }
        const char *u = rq->url;
        if (streq(u, "/sandboxes") || strncmp(u, "/sandboxes/", 11) == 0 || streq(u, "/v2/sandboxes") ||
                strncmp(u, "/v2/sandboxes/", 14) == 0 || streq(u, "/snapshots") ||
                strncmp(u, "/templates/", 11) == 0) {
                e2b_control(rq, u);
                return true;
        }
        if (strncmp(u, "/volumecontent/", 15) == 0) {
                e2b_volume_content(rq, u);
                return true;
        }
        if (streq(u, "/volumes") || strncmp(u, "/volumes/", 9) == 0) {
                if (e2b_api_auth(rq))
                        e2b_volumes(rq, u);
                return true;
        }
        return false;
}