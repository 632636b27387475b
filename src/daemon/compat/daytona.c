/* daytona.c — Daytona's API on the control plane's server: sandboxes under /api/sandbox (create,
 * get, list, delete, autostop, toolbox-proxy-url) and the toolbox under /api/toolbox/ID/ (the
 * toolboxProxyUrl a sandbox answers with): process/execute, files (bulk upload and download,
 * download, list, info, folder, move, delete), user-home-dir, work-dir. The API key is a
 * sandboxer token (Authorization: Bearer, which http.c checks). Through the native operations:
 * a command is an exec, a file the native file route, a listing a command in the sandbox. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "daemon/compat/compat.h"
#include "daemon/ports.h"

static const char *const homes[] = {"/home/daytona", NULL};

void cx_daytona_err(cx_req *rq, unsigned code, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        const char *name = code == 400   ? "Bad Request"
                           : code == 401 ? "Unauthorized"
                           : code == 403 ? "Forbidden"
                           : code == 404 ? "Not Found"
                           : code == 409 ? "Conflict"
                           : code == 429 ? "Too Many Requests"
                                         : "Error";
        cx_respond_json(rq, code,
                json_pack("{s:i, s:s, s:s}", "statusCode", (int) code, "message", msg, "error", name));
}

static const char *native_message(const json_t *j) {
        return json_string_value(json_object_get(json_object_get(j, "error"), "message")) ?: "refused";
}

static void native_err(cx_req *rq, unsigned code, const json_t *j) {
        cx_daytona_err(rq, code == 410 ? 404 : code == 422 ? 400 : code, "%s", native_message(j));
}

void cx_iso_time(int64_t ms, char buf[static 40]) {
        time_t t = (time_t) (ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, 40 - n, ".%03dZ", (int) (ms % 1000));
}

static const char *state_of(const json_t *rec) {
        const char *s = json_string_value(json_object_get(rec, "state")) ?: "";
        if (streq(s, "ready") || streq(s, "active"))
                return "started";
        if (streq(s, "requested") || streq(s, "provisioning"))
                return "creating";
        if (streq(s, "expired") || streq(s, "destroying"))
                return "destroying";
        if (streq(s, "destroyed"))
                return "destroyed";
        return "error";
}

/* http://HOST/api/toolbox: where this server answers, as the client reached it. */
static void toolbox_url(cx_req *rq, char *buf, size_t size) {
        const char *host = cx_header(rq, "Host");
        snprintf(buf, size, "http://%s/api/toolbox", host && *host ? host : "127.0.0.1");
}

static json_t *sandbox_json(cx_req *rq, const json_t *rec) {
        const json_t *lim = json_object_get(rec, "limits");
        const char *id = json_string_value(json_object_get(rec, "id")) ?: "";
        const char *profile = json_string_value(json_object_get(rec, "profile")) ?: "profile.daytona";
        char created[40], updated[40], expires[40], tb[512];
        cx_iso_time(cx_record_ms(rec, "created_at"), created);
        cx_iso_time(cx_record_ms(rec, "updated_at"), updated);
        cx_iso_time(cx_record_ms(rec, "expires_at"), expires);
        toolbox_url(rq, tb, sizeof tb);
        json_t *md = json_object_get(rec, "metadata");
        char **env = NULL;
        json_t *envj = json_object();
        if (cx_box_get(rq->m, id, NULL, NULL, &env))
                for (char **v = env; v && *v; v++) {
                        char *eq = strchr(*v, '=');
                        if (eq) {
                                *eq = 0;
                                json_object_set_new(envj, *v, json_string(eq + 1));
                        }
                }
        cx_strv_free(env);
        json_t *j = json_pack(
                "{s:s, s:s, s:s, s:s, s:s, s:o, s:O, s:b, s:b, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
                "id", id, "organizationId", json_string_value(json_object_get(rec, "tenant")) ?: "default",
                "name", id, "snapshot", profile, "user",
                streq(profile, "profile.daytona") ? "daytona" : "sandbox", "env", envj, "labels",
                md ? md : json_object(), "public", 0, "networkBlockAll", 1, "target", "local", "state",
                state_of(rec), "desiredState", streq(state_of(rec), "destroyed") ? "destroyed" : "started",
                "createdAt", created, "updatedAt", updated, "autoDestroyAt", expires, "toolboxProxyUrl", tb,
                "daemonVersion", "sandboxer");
        json_object_set_new(
                j, "cpu", json_integer((json_int_t) json_number_value(json_object_get(lim, "cpus"))));
        json_object_set_new(j, "gpu", json_integer(0));
        json_object_set_new(
                j, "memory", json_real(json_number_value(json_object_get(lim, "memory_mb")) / 1024.0));
        json_object_set_new(
                j, "disk", json_real(json_number_value(json_object_get(lim, "scratch_mb")) / 1024.0));
        json_object_set_new(j, "autoStopInterval", json_integer(0));
        json_object_set_new(j, "autoArchiveInterval", json_integer(0));
        json_object_set_new(j, "autoDeleteInterval", json_integer(0));
        return j;
}

/* ---- sandboxes ------------------------------------------------------------------------------ */

static void op_create(cx_req *rq) {
        json_t *body = json_loadb(rq->body, rq->len, 0, NULL);
        if (!json_is_object(body)) {
                json_decref(body);
                cx_daytona_err(rq, 400, "the body must be a JSON object");
                return;
        }
        json_t *js = json_object_get(body, "snapshot"), *jl = json_object_get(body, "labels"),
               *je = json_object_get(body, "env"), *jt = json_object_get(body, "ttlMinutes"),
               *ja = json_object_get(body, "autoStopInterval");
        char pb[256];
        const char *snap = json_string_value(js);
        const char *profile = !snap || !*snap || streq(snap, "default") ? "profile.daytona"
                              : strncmp(snap, "profile.", 8) == 0
                                      ? snap
                                      : (snprintf(pb, sizeof pb, "profile.%s", snap), pb);
        if ((js && !json_is_null(js) && !json_is_string(js)) || !cx_string_map_ok(jl, false) ||
                !cx_string_map_ok(je, true)) {
                cx_daytona_err(rq, 400,
                        "snapshot must name a sandboxer profile, labels and env be objects of strings (env "
                        "keys "
                        "variable names)");
                json_decref(body);
                return;
        }
        if (json_object_get(body, "buildInfo") && !json_is_null(json_object_get(body, "buildInfo"))) {
                cx_daytona_err(
                        rq, 400, "images cannot be built here: name a sandboxer profile as the snapshot");
                json_decref(body);
                return;
        }
        /* ttlMinutes, else autoStopInterval (minutes; 0 = none): the sandbox's TTL */
        double minutes = json_is_integer(jt) && json_integer_value(jt) > 0 ? (double) json_integer_value(jt)
                         : json_is_integer(ja) && json_integer_value(ja) > 0
                                 ? (double) json_integer_value(ja)
                                 : 0;
        sbx_create_req creq = {
                .profile = profile,
                .ttl_s = minutes * 60,
                .ttl_given = minutes > 0,
                .metadata = json_is_object(jl) && json_object_size(jl) ? jl : NULL,
        };
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_create(rq->m, &rq->caller, &creq, &rp);
        if (code == 400 &&
                streq_ptr(json_string_value(json_object_get(json_object_get(rp.json, "error"), "field")),
                        "ttl_s")) {
                sbx_mgr_reply_done(&rp);
                creq.ttl_given = false; /* more than ttl.max: the profile's default */
                code = sbx_ops_create(rq->m, &rq->caller, &creq, &rp);
        }
        if (code != 201 && code != 200) {
                native_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
                json_decref(body);
                return;
        }
        const char *id = json_string_value(json_object_get(rp.json, "id")) ?: "";
        const char *backend = json_string_value(json_object_get(rp.json, "backend")) ?: "";
        if (streq(backend, "landlock") || streq(backend, "none")) {
                sbx_mgr_reply dr;
                sbx_ops_destroy(rq->m, &rq->caller, id, &dr);
                sbx_mgr_reply_done(&dr);
                cx_daytona_err(rq, 400,
                        "snapshot '%s': profile %s runs on the %s backend, which has no mount namespace, so "
                        "the "
                        "sandbox's paths would be the host's; use a profile with isolation.level: container",
                        snap ? snap : "", profile, backend);
        } else {
                char token[65];
                cx_box_set(rq->m, id, &rq->caller, json_is_object(je) ? json_incref(je) : NULL, token);
                cx_respond_json(rq, 200, sandbox_json(rq, rp.json));
        }
        sbx_mgr_reply_done(&rp);
        json_decref(body);
}

static bool labels_match(const json_t *md, const char *filter) {
        if (!filter)
                return true;
        json_t *f = json_loads(filter, 0, NULL);
        bool ok = json_is_object(f);
        const char *k;
        json_t *v;
        if (ok)
                json_object_foreach(f, k, v) {
                        const char *have = json_string_value(json_object_get(md, k));
                        if (!have || !json_is_string(v) || !streq(have, json_string_value(v)))
                                ok = false;
                }
        json_decref(f);
        return ok;
}

static void op_list(cx_req *rq) {
        const char *limit = cx_query(rq, "limit"), *cursor = cx_query(rq, "cursor"),
                   *labels = cx_query(rq, "labels");
        sbx_list_req lreq = {.limit = cx_limit(limit), .cursor = cursor};
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_list(rq->m, &rq->caller, &lreq, &rp);
        if (code != 200) {
                native_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
                return;
        }
        json_t *items = json_array();
        size_t i;
        json_t *rec;
        json_array_foreach(json_object_get(rp.json, "items"), i, rec) {
                if (labels_match(json_object_get(rec, "metadata"), labels))
                        json_array_append_new(items, sandbox_json(rq, rec));
        }
        json_t *next = json_object_get(rp.json, "next_cursor");
        cx_respond_json(
                rq, 200, json_pack("{s:o, s:O}", "items", items, "nextCursor", next ? next : json_null()));
        sbx_mgr_reply_done(&rp);
}

static json_t *record(cx_req *rq, const char *id, bool live) {
        unsigned code;
        json_t *rec = cx_record(rq, id, &code);
        if (!rec || (live && !cx_record_live(rec))) {
                cx_daytona_err(rq, 404, "Sandbox with ID or name %s not found", id);
                json_decref(rec);
                return NULL;
        }
        return rec;
}

static void op_delete(cx_req *rq, const char *id) {
        json_t *rec = record(rq, id, false);
        if (!rec)
                return;
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_destroy(rq->m, &rq->caller, id, &rp);
        if (code == 200) {
                cx_respond_json(rq, 200, sandbox_json(rq, rp.json));
        } else
                native_err(rq, code, rp.json);
        sbx_mgr_reply_done(&rp);
        json_decref(rec);
}

/* The key Daytona's SDK signs file URLs with (uploadUrl, downloadUrl): HMAC-SHA-256 of the
 * sandbox's access token, in hex; rotating the token rotates it (old URLs stop working). Kept in
 * memory with the token: a restart of serve makes new ones. */
static void signing_key(const char *token, char ret[static 65]) {
        static const char label[] = "daytona-file-signing-v1";
        uint8_t d[SHA256_DIGEST_SIZE];
        hmac_sha256(token, strlen(token), label, sizeof label - 1, d);
        for (size_t i = 0; i < sizeof d; i++)
                snprintf(ret + 2 * i, 3, "%02x", d[i]);
}

static void op_signing_key(cx_req *rq, const char *id, bool rotate) {
        json_t *rec = record(rq, id, true);
        if (!rec)
                return;
        json_decref(rec);
        char token[65], key[65];
        cx_box_set(rq->m, id, &rq->caller, NULL, token); /* made at the first use */
        if (rotate && sbx_mgr_surface_rotate(rq->m, id, token) < 0) {
                cx_daytona_err(rq, 503, "cannot make a new key (no randomness)");
                return;
        }
        if (!token[0]) {
                cx_daytona_err(rq, 503, "this sandbox has no signing key (the host had no randomness)");
                return;
        }
        signing_key(token, key);
        explicit_bzero(token, sizeof token);
        cx_respond_json(rq, 200, json_string(key));
}

/* A signed file URL (toolbox files/download, files/upload-v2 with path, expires, signature): the
 * signature is "v1_" + base64url(HMAC-SHA-256(key, "v1:files:METHOD:PATH:EXPIRES")); expires 0
 * never ends. */
typedef struct file_sig {
        const char *method, *path, *expires, *sig;
} file_sig;

static bool file_sig_ok(void *ud, const char *token) {
        const file_sig *s = ud;
        char key[65];
        signing_key(token, key);
        _cleanup_free_ char *canon = NULL;
        if (asprintf(&canon, "v1:files:%s:%s:%s", s->method, s->path, s->expires) < 0)
                return false;
        uint8_t d[SHA256_DIGEST_SIZE];
        hmac_sha256(key, strlen(key), canon, strlen(canon), d);
        explicit_bzero(key, sizeof key);
        _cleanup_free_ char *b = cx_b64_encode(d, sizeof d);
        if (!b)
                return false;
        size_t n = 0;
        for (char *c = b; *c && *c != '='; c++, n++)
                *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
        b[n] = 0;
        size_t m = strlen(s->sig);
        unsigned char diff = m != n + 3 || strncmp(s->sig, "v1_", 3) != 0;
        for (size_t i = 0; i < n && i + 3 < m; i++)
                diff |= (unsigned char) (b[i] ^ s->sig[i + 3]);
        return diff == 0;
}

/* A toolbox request that carries its own signature: true when it is one (said, or authenticated
 * into rq->caller: the sandbox's owner). */
static bool signed_file_request(cx_req *rq, const char *path, bool *ok) {
        const char *sig = cx_query(rq, "signature");
        char id[32] = "";
        const char *rest = strncmp(path, "/toolbox/", 9) == 0 ? path + 9 : NULL,
                   *slash = rest ? strchr(rest, '/') : NULL;
        if (!sig || !slash || (size_t) (slash - rest) >= sizeof id ||
                !(streq(slash, "/files/download") || streq(slash, "/files/upload-v2")))
                return false;
        memcpy(id, rest, (size_t) (slash - rest));
        id[slash - rest] = 0;
        file_sig s = {.method = rq->method,
                .path = cx_query(rq, "path") ?: "",
                .expires = cx_query(rq, "expires") ?: "",
                .sig = sig};
        char *end;
        long long exp = strtoll(s.expires, &end, 10);
        *ok = false;
        if (!*s.expires || *end || exp < 0)
                cx_daytona_err(rq, 403, "expires: the URL's expiry is missing or not a number");
        else if (!sbx_mgr_surface_verify(rq->m, id, file_sig_ok, &s, &rq->caller, NULL))
                cx_daytona_err(rq, 403,
                        "the signature of this file URL is not valid (altered, or the key was rotated)");
        else if (exp && exp <= cx_now_ms() / 1000)
                cx_daytona_err(rq, 403, "this signed file URL has expired");
        else
                *ok = true;
        return true;
}

/* ports/PORT/preview-url, …/signed-preview-url?expiresInSeconds=N (60 by default), and
 * …/signed-preview-url/TOKEN/expire: links to a port (ports.h). A preview link wants its token in
 * the x-daytona-preview-token header; a signed one carries it. */
static void preview(cx_req *rq, const char *id, const char *rest) {
        char *end;
        long port = strtol(rest, &end, 10);
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST");
        if (end == rest || *end != '/') {
                cx_daytona_err(rq, 400, "port: a number from 1 to 65535");
                return;
        }
        const char *what = end + 1;
        bool sign = strncmp(what, "signed-preview-url", 18) == 0;
        double expires = 0;
        if (sign && what[18] == '/' && post) { /* …/signed-preview-url/TOKEN/expire */
                char token[160];
                const char *t = what + 19, *s = strchr(t, '/');
                if (!s || !streq(s, "/expire") || (size_t) (s - t) >= sizeof token) {
                        cx_daytona_err(rq, 404, "no such endpoint: %s", rq->url);
                        return;
                }
                snprintf(token, sizeof token, "%.*s", (int) (s - t), t);
                json_t *rec = record(rq, id, false);
                if (!rec)
                        return;
                json_decref(rec);
                if (sbx_ports_revoke(rq->m, id, token) < 0)
                        cx_daytona_err(
                                rq, 404, "no valid signed preview URL of sandbox %s with that token", id);
                else
                        cx_respond(rq, 200, "application/json", "", 0);
                return;
        }
        if (!get || !(streq(what, "preview-url") || streq(what, "signed-preview-url"))) {
                cx_daytona_err(rq, 404, "no such endpoint: %s %s", rq->method, rq->url);
                return;
        }
        if (sign) {
                const char *e = cx_query(rq, "expiresInSeconds");
                char *ee = NULL;
                expires = e ? strtod(e, &ee) : 60;
                if (e && (*ee || !*e || expires < 1)) {
                        cx_daytona_err(rq, 400, "expiresInSeconds: a number of seconds from 1 to 604800");
                        return;
                }
        }
        json_t *rec = record(rq, id, false);
        if (!rec)
                return;
        json_decref(rec);
        unsigned code;
        json_t *err = NULL;
        json_t *p =
                sbx_ports_preview(rq->m, &rq->caller, id, port, expires, cx_header(rq, "Host"), &code, &err);
        if (!p)
                native_err(rq, code, err);
        else if (sign)
                cx_respond_json(rq, 200,
                        json_pack("{s:s, s:i, s:O, s:O}", "sandboxId", id, "port", (int) port, "token",
                                json_object_get(p, "signed_token"), "url",
                                json_object_get(p, "signed_url")));
        else
                cx_respond_json(rq, 200,
                        json_pack("{s:s, s:O, s:O}", "sandboxId", id, "url", json_object_get(p, "url"),
                                "token", json_object_get(p, "token")));
        json_decref(p);
        json_decref(err);
}

/* autostop/MINUTES: the sandbox lives at least that much longer (the native TTL only extends;
 * capped by the profile's ttl.max); 0 (never) extends it to the cap. */
static void op_autostop(cx_req *rq, const char *id, const char *arg) {
        char *end;
        long minutes = strtol(arg, &end, 10);
        if (*end || minutes < 0) {
                cx_daytona_err(rq, 400, "autostop: a number of minutes is required");
                return;
        }
        json_t *rec = record(rq, id, true);
        if (!rec)
                return;
        double want = minutes > 0 ? minutes * 60.0 : 366 * 86400.0;
        double remaining = (double) (cx_record_ms(rec, "expires_at") - cx_now_ms()) / 1000.0;
        unsigned code = 200;
        sbx_mgr_reply rp = {.stream_fd = -1};
        if (want - remaining >= 1) {
                code = sbx_ops_extend(rq->m, &rq->caller, id, MIN(want - remaining, 366 * 86400.0 - 1), &rp);
        }
        if (code == 200)
                cx_respond(rq, 200, "application/json", "", 0);
        else
                native_err(rq, code, rp.json);
        sbx_mgr_reply_done(&rp);
        json_decref(rec);
}

static void sandboxes(cx_req *rq, const char *path) {
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST"),
             del = streq(rq->method, "DELETE");
        if (streq(path, "/sandbox") || streq(path, "/sandbox/")) {
                if (post)
                        op_create(rq);
                else if (get)
                        op_list(rq);
                else
                        cx_daytona_err(rq, 405, "use GET or POST");
                return;
        }
        const char *rest = path + 9;
        char id[64];
        const char *slash = strchr(rest, '/');
        size_t l = slash ? (size_t) (slash - rest) : strlen(rest);
        if (l == 0 || l >= sizeof id) {
                cx_daytona_err(rq, 404, "Sandbox not found");
                return;
        }
        memcpy(id, rest, l);
        id[l] = 0;
        const char *sub = slash ? slash : "";
        json_t *rec;
        char tb[512];
        if (!*sub && get) {
                if ((rec = record(rq, id, false))) {
                        cx_respond_json(rq, 200, sandbox_json(rq, rec));
                        json_decref(rec);
                }
        } else if (!*sub && del)
                op_delete(rq, id);
        else if (strncmp(sub, "/autostop/", 10) == 0 && post)
                op_autostop(rq, id, sub + 10);
        else if (streq(sub, "/toolbox-proxy-url") && get) {
                if ((rec = record(rq, id, false))) {
                        toolbox_url(rq, tb, sizeof tb);
                        cx_respond_json(rq, 200, json_pack("{s:s}", "url", tb));
                        json_decref(rec);
                }
        } else if (streq(sub, "/start") && post) {
                if ((rec = record(rq, id, true))) {
                        cx_respond_json(rq, 200, sandbox_json(rq, rec));
                        json_decref(rec);
                }
        } else if (strncmp(sub, "/ports/", 7) == 0) {
                preview(rq, id, sub + 7);
        } else if (streq(sub, "/signing-key") && get) {
                op_signing_key(rq, id, false);
        } else if (streq(sub, "/signing-key/rotate") && post) {
                op_signing_key(rq, id, true);
        } else if (strncmp(sub, "/ttl/", 5) == 0 && post) {
                op_autostop(rq, id, sub + 5); /* at least that long from now, as autostop */
        } else if (streq(sub, "/labels") && streq(rq->method, "PUT")) {
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
                json_t *labels = json_object_get(body, "labels");
                sbx_mgr_reply rp = {.stream_fd = -1};
                if (!cx_string_map_ok(labels, false) || !labels)
                        cx_daytona_err(rq, 400, "labels: an object of strings is required");
                else if (sbx_ops_set_metadata(rq->m, &rq->caller, id, labels, &rp) == 200)
                        cx_respond_json(
                                rq, 200, json_pack("{s:O}", "labels", json_object_get(rp.json, "metadata")));
                else
                        native_err(rq, rp.code, rp.json);
                sbx_mgr_reply_done(&rp);
                json_decref(body);
        } else if (streq(sub, "/last-activity") && post) {
                if ((rec = record(rq, id, true))) {
                        cx_respond(rq, 201, "application/json", "", 0);
                        json_decref(rec);
                }
        } else
                cx_daytona_err(rq, 501,
                        "%s %s is not implemented by sandboxer's Daytona surface (sandboxes are started "
                        "when created and cannot be stopped, archived or resized)",
                        rq->method, path);
}

/* ---- toolbox --------------------------------------------------------------------------------- */

typedef struct box {
        cx_req *rq;
        const char *id;
        json_t *rec;
        char **env;
        const char *scratch; /* its home (filesystem.home), else its scratch */
        const char *const *homes; /* what stands for it without a home of its own */
} box;

static unsigned run(
        box *b, char *const *argv, char *const *extra_env, const char *cwd, double timeout_s, cx_run *r) {
        size_t n = 0, m = 0;
        for (char **v = b->env; v && *v; v++)
                n++;
        for (char *const *v = extra_env; v && *v; v++)
                m++;
        char **env = calloc(n + m + 1, sizeof *env);
        if (!env)
                return 503;
        size_t k = 0;
        for (char **v = b->env; v && *v; v++)
                env[k++] = *v;
        for (char *const *v = extra_env; v && *v; v++)
                env[k++] = *v;
        unsigned code = cx_exec(b->rq, b->id, argv, env, cwd, timeout_s, NULL, 0, r);
        free(env);
        return code;
}

/* A command's exit code as Daytona reports it: its own, 128+N for signal N, 124 for a timeout. */
static int exit_code_of(const cx_run *r) {
        if (streq(r->status, "timeout"))
                return 124;
        return r->exit_code >= 0 ? r->exit_code : r->signal > 0 ? 128 + r->signal : -1;
}

static void execute(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body, rq->len, 0, NULL);
        const char *cmd = json_string_value(json_object_get(body, "command"));
        json_t *jcwd = json_object_get(body, "cwd"), *envs = json_object_get(body, "envs"),
               *jt = json_object_get(body, "timeout");
        char **extra = NULL, *cwd = NULL;
        cx_run r = {0};
        if (!cmd || !cx_string_map_ok(envs, true) ||
                (jcwd && !json_is_null(jcwd) && !json_is_string(jcwd))) {
                cx_daytona_err(
                        rq, 400, "command (a string) is required; envs must map variable names to strings");
                goto out;
        }
        if (json_is_string(jcwd) && json_string_length(jcwd) &&
                !(cwd = cx_path(json_string_value(jcwd), b->scratch, b->homes))) {
                cx_daytona_err(rq, 400, "cwd: not a usable path");
                goto out;
        }
        extra = calloc(json_object_size(envs) + 1, sizeof *extra);
        size_t k = 0;
        const char *key;
        json_t *v;
        if (extra)
                json_object_foreach(envs, key, v) {
                        if (asprintf(&extra[k], "%s=%s", key, json_string_value(v)) >= 0)
                                k++;
                }
        double cap = json_number_value(json_object_get(json_object_get(b->rec, "limits"), "timeout_s"));
        double t = json_is_number(jt) && json_number_value(jt) > 0 ? json_number_value(jt) : 0;
        if (cap > 0 && (t <= 0 || t > cap))
                t = cap;
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) cmd, NULL};
        unsigned code = run(b, argv, extra, cwd, t, &r);
        if (code) {
                native_err(rq, code, r.refusal);
                goto out;
        }
        int exit_code = exit_code_of(&r);
        cx_respond_json(rq, 200,
                json_pack("{s:i, s:s%}", "exitCode", exit_code, "result", r.both ? r.both : "", r.both_len));
out:
        cx_run_done(&r);
        cx_strv_free(extra);
        free(cwd);
        json_decref(body);
}

/* system/metrics (getMetricsLatest): what the sandbox uses now (sbx_ops_metrics) in Daytona's
 * SystemMetrics fields. */
static void system_metrics(box *b) {
        cx_req *rq = b->rq;
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_metrics(rq->m, &rq->caller, b->id, &rp);
        if (code != 200) {
                native_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
                return;
        }
        char ts[40];
        int64_t now = cx_now_ms();
        cx_iso_time(now, ts);
#define N(k) json_number_value(json_object_get(rp.json, k))
        double used = N("disk_used_bytes"), total = N("disk_total_bytes");
        cx_respond_json(rq, 200,
                json_pack("{s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:s, s:I}", "cpuCount", N("cpu_count"),
                        "cpuUsedPct", N("cpu_used_pct") < 0 ? 0.0 : N("cpu_used_pct"), "memUsed",
                        (json_int_t) N("memory_used_bytes"), "memTotal",
                        (json_int_t) N("memory_total_bytes"), "diskUsed", (json_int_t) used, "diskTotal",
                        (json_int_t) total, "diskFree",
                        (json_int_t) (total >= used && used >= 0 ? total - used : 0), "timestamp", ts,
                        "timestampUnix", (json_int_t) (now / 1000)));
#undef N
        sbx_mgr_reply_done(&rp);
}

/* env {set, unset}: the sandbox-wide environment of the commands to come (sandbox.updateEnv). */
static void update_env(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
        json_t *set = json_object_get(body, "set"), *unset = json_object_get(body, "unset");
        size_t i;
        json_t *v;
        bool ok = json_is_object(body) && cx_string_map_ok(set, true) &&
                  (!unset || json_is_null(unset) || json_is_array(unset));
        json_array_foreach(unset, i, v) ok = ok && json_is_string(v);
        if (!ok) {
                cx_daytona_err(
                        rq, 400, "set: an object of variable names to strings; unset: a list of names");
                json_decref(body);
                return;
        }
        json_t *env = NULL;
        (void) sbx_mgr_surface_get(rq->m, b->id, NULL, NULL, &env);
        if (!env)
                env = json_object();
        (void) json_object_update(env, json_is_object(set) ? set : NULL);
        json_array_foreach(unset, i, v) json_object_del(env, json_string_value(v));
        char token[65];
        cx_box_set(rq->m, b->id, &rq->caller, env, token);
        explicit_bzero(token, sizeof token);
        cx_respond(rq, 200, "application/json", "", 0);
        json_decref(body);
}

/* process/code-run: {code, language, argv, envs, timeout} → {exitCode, result}: the code run by
 * the language's interpreter in the sandbox (python3 -c, node -e), its output as it came. */
static void code_run(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
        const char *code = json_string_value(json_object_get(body, "code"));
        const char *lang = json_string_value(json_object_get(body, "language"));
        json_t *args = json_object_get(body, "argv"), *envs = json_object_get(body, "envs"),
               *jt = json_object_get(body, "timeout");
        char **argv = NULL, **extra = NULL;
        cx_run r = {0};
        if (!code || !lang || (args && !json_is_null(args) && !json_is_array(args)) ||
                !cx_string_map_ok(envs, true) || (jt && !json_is_null(jt) && !json_is_number(jt))) {
                cx_daytona_err(rq, 400,
                        "code and language (strings) are required; argv a list of strings, envs an object "
                        "of strings, timeout a number of seconds");
                goto out;
        }
        const char *interp = streq(lang, "python") ? "python3" : streq(lang, "javascript") ? "node" : NULL;
        if (!interp) {
                cx_daytona_err(rq, 400,
                        "language '%.64s': sandboxer runs python and javascript (typescript needs a "
                        "compiler "
                        "the sandbox does not have)",
                        lang);
                goto out;
        }
        size_t na = json_array_size(args);
        argv = calloc(na + 4, sizeof *argv);
        extra = calloc(json_object_size(envs) + 1, sizeof *extra);
        if (!argv || !extra) {
                cx_daytona_err(rq, 503, "out of memory");
                goto out;
        }
        argv[0] = strdup(interp);
        argv[1] = strdup(streq(interp, "node") ? "-e" : "-c");
        argv[2] = strdup(code);
        for (size_t i = 0; i < na; i++) {
                const char *a = json_string_value(json_array_get(args, i));
                if (!a) {
                        cx_daytona_err(rq, 400, "argv[%zu]: must be a string", i);
                        goto out;
                }
                argv[3 + i] = strdup(a);
        }
        size_t k = 0;
        const char *key;
        json_t *v;
        json_object_foreach(envs, key, v) {
                if (asprintf(&extra[k], "%s=%s", key, json_string_value(v)) >= 0)
                        k++;
        }
        double t = json_is_number(jt) && json_number_value(jt) > 0 ? json_number_value(jt) : 0;
        unsigned c = run(b, argv, extra, NULL, t, &r);
        if (c) {
                native_err(rq, c, r.refusal);
                goto out;
        }
        int exit_code = exit_code_of(&r);
        cx_respond_json(rq, 200,
                json_pack("{s:i, s:s%, s:{s:[]}}", "exitCode", exit_code, "result", r.both ? r.both : "",
                        r.both_len, "artifacts", "charts"));
out:
        cx_run_done(&r);
        cx_strv_free(argv);
        cx_strv_free(extra);
        json_decref(body);
}

static unsigned file_get(box *b, const char *path, sbx_mgr_reply *rp) {
        return sbx_ops_file_read(b->rq->m, &b->rq->caller, b->id, path, rp);
}

static unsigned file_put(box *b, const char *path, const char *data, size_t len, json_t **ret_err) {
        return cx_file_put(b->rq, b->id, path, data, len, ret_err);
}

static void bulk_upload(box *b) {
        cx_req *rq = b->rq;
        cx_part *parts = calloc(256, sizeof *parts);
        int n = parts ? cx_multipart(cx_header(rq, "Content-Type"), rq->body, rq->len, parts, 256) : -ENOMEM;
        if (n < 0) {
                free(parts);
                cx_daytona_err(rq, 400,
                        "the body must be multipart/form-data with files[i].path and files[i].file parts");
                return;
        }
        /* files[i].path names where files[i].file goes */
        for (int i = 0; i < n; i++) {
                char want[300];
                size_t l = strlen(parts[i].name);
                if (l < 5 || strcmp(parts[i].name + l - 5, ".file") != 0)
                        continue;
                snprintf(want, sizeof want, "%.*s.path", (int) (l - 5), parts[i].name);
                char dest[4097] = "";
                for (int j = 0; j < n; j++)
                        if (streq(parts[j].name, want)) {
                                snprintf(dest, sizeof dest, "%.*s", (int) MIN(parts[j].len, 4096),
                                        parts[j].data);
                                break;
                        }
                _cleanup_free_ char *p = cx_path(dest[0] ? dest : parts[i].filename, b->scratch, b->homes);
                json_t *e = NULL;
                unsigned code = p ? file_put(b, p, parts[i].data, parts[i].len, &e) : 400;
                if (code != 200) {
                        if (e)
                                native_err(rq, code, e);
                        else
                                cx_daytona_err(rq, 400, "%s: not a usable path", dest);
                        json_decref(e);
                        free(parts);
                        return;
                }
        }
        free(parts);
        cx_respond(rq, 200, "application/json", "", 0);
}

static void append(char **buf, size_t *len, const void *d, size_t n) {
        char *p = realloc(*buf, *len + n);
        if (!p)
                return;
        memcpy(p + *len, d, n);
        *len += n;
        *buf = p;
}

static void bulk_download(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body, rq->len, 0, NULL);
        json_t *paths = json_object_get(body, "paths");
        if (!json_is_array(paths)) {
                json_decref(body);
                cx_daytona_err(rq, 400, "paths: an array of paths is required");
                return;
        }
        char boundary[64];
        snprintf(boundary, sizeof boundary, "sandboxer-%lld", (long long) cx_now_ms());
        char *out = NULL;
        size_t len = 0;
        size_t i;
        json_t *jp;
        json_array_foreach(paths, i, jp) {
                const char *src = json_string_value(jp);
                if (!src)
                        continue;
                _cleanup_free_ char *p = cx_path(src, b->scratch, b->homes);
                sbx_mgr_reply rp = {.stream_fd = -1};
                unsigned code = p ? file_get(b, p, &rp) : 400;
                /* the path as the client gave it, at most 4000 bytes of it (a usable one is no
                 * longer; one that is not can be any length): the head fits, all of it is sent; a
                 * quote, a backslash or a line break in it would end the header early: '_' */
                char head[4400], name[4001];
                snprintf(name, sizeof name, "%s", src);
                for (char *c = name; *c; c++)
                        if (*c == '"' || *c == '\\' || *c == '\r' || *c == '\n')
                                *c = '_';
                int hn;
                if (code == 200) {
                        hn = snprintf(head, sizeof head,
                                "--%s\r\nContent-Disposition: form-data; name=\"file\"; "
                                "filename=\"%s\"\r\n"
                                "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
                                boundary, name, rp.raw_len);
                        append(&out, &len, head, (size_t) hn);
                        append(&out, &len, rp.raw ? rp.raw : "", rp.raw_len);
                } else {
                        json_t *e = json_pack("{s:s, s:i, s:s}", "message",
                                rp.json ? native_message(rp.json) : "not a usable path", "statusCode",
                                code == 410 ? 404 : (int) code, "code",
                                code == 404 ? "FILE_NOT_FOUND" : "ERROR");
                        char *et = json_dumps(e, JSON_COMPACT);
                        json_decref(e);
                        hn = snprintf(head, sizeof head,
                                "--%s\r\nContent-Disposition: form-data; name=\"error\"; "
                                "filename=\"%s\"\r\n"
                                "Content-Type: application/json\r\n\r\n",
                                boundary, name);
                        append(&out, &len, head, (size_t) hn);
                        append(&out, &len, et ? et : "{}", et ? strlen(et) : 2);
                        free(et);
                }
                append(&out, &len, "\r\n", 2);
                sbx_mgr_reply_done(&rp);
        }
        char tail[100], ctype[128];
        int tn = snprintf(tail, sizeof tail, "--%s--\r\n", boundary);
        append(&out, &len, tail, (size_t) tn);
        snprintf(ctype, sizeof ctype, "multipart/form-data; boundary=%s", boundary);
        cx_respond(rq, 200, ctype, out ? out : "", out ? len : 0);
        free(out);
        json_decref(body);
}

/* FileInfo {name, isDir, size, mode, modTime, permissions, owner, group} from `find -printf`. */
#define FIND_FORMAT "%y\\0%s\\0%m\\0%M\\0%u\\0%g\\0%T@\\0%p\\0"

static json_t *infos(const char *out, size_t len) {
        json_t *list = json_array();
        const char *f[8];
        size_t k = 0;
        for (const char *p = out; p < out + len;) {
                const char *z = memchr(p, 0, (size_t) (out + len - p));
                if (!z)
                        break;
                f[k++] = p;
                p = z + 1;
                if (k < 8)
                        continue;
                k = 0;
                const char *name = strrchr(f[7], '/');
                char mt[40];
                cx_iso_time((int64_t) (strtod(f[6], NULL) * 1000), mt);
                json_array_append_new(
                        list, json_pack("{s:s, s:b, s:I, s:s, s:s, s:s, s:s, s:s, s:s}", "name",
                                      name && name[1] ? name + 1 : f[7], "isDir", f[0][0] == 'd', "size",
                                      (json_int_t) strtoll(f[1], NULL, 10), "mode", f[3], "modTime", mt,
                                      "permissions", f[2], "owner", f[4], "group", f[5], "path", f[7]));
        }
        return list;
}

static void files_cmd(
        box *b, const char *script, const char *a1, const char *a2, bool want_infos, bool one) {
        cx_req *rq = b->rq;
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) script, (char *) "sh", (char *) a1,
                (char *) a2, NULL};
        cx_run r;
        unsigned code = run(b, argv, NULL, NULL, 0, &r);
        if (code)
                native_err(rq, code, r.refusal);
        else if (r.exit_code == 2)
                cx_daytona_err(rq, 404, "%s: no such file or directory", a1);
        else if (r.exit_code != 0)
                cx_daytona_err(rq, strstr(r.err ? r.err : "", "ermission denied") ? 403 : 400, "%s",
                        r.err && *r.err ? r.err
                        : r.error       ? r.error
                                        : "failed");
        else if (!want_infos)
                cx_respond(rq, 200, "application/json", "", 0);
        else {
                json_t *l = infos(r.out, r.out_len);
                if (one)
                        cx_respond_json(rq, 200, json_incref(json_array_get(l, 0)));
                else
                        cx_respond_json(rq, 200, json_incref(l));
                json_decref(l);
        }
        cx_run_done(&r);
}

#define EXISTS "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
static const char list_script[] =
        EXISTS "[ -d \"$1\" ] || { echo \"$1: not a directory\" >&2; exit 20; }\n"
               "exec find \"$1\" -mindepth 1 -maxdepth \"$2\" -printf '" FIND_FORMAT "'\n";
static const char info_script[] = EXISTS "exec find \"$1\" -maxdepth 0 -printf '" FIND_FORMAT "'\n";
static const char rm_r_script[] = EXISTS "exec rm -rf -- \"$1\"\n";
static const char rm_script[] = EXISTS "[ -d \"$1\" ] && exec rmdir -- \"$1\"\nexec rm -f -- \"$1\"\n";
static const char mv_script[] = EXISTS "exec mv -f -T -- \"$1\" \"$2\"\n";

/* ---- the file tools: find in files, search by name, replace, permissions ---------------------- */

static const char find_script[] = EXISTS "exec grep -rnIZ -e \"$2\" -- \"$1\"\n";
static const char search_script[] = EXISTS "exec find \"$1\" -name \"$2\" -print0\n";
static const char chmod_script[] = EXISTS "exec chmod -- \"$2\" \"$1\"\n";

/* Run a file tool's script; 0 with r filled when it ran and exited with one of the codes in ok
 * (bits), else answered (the refusal, 404 for a missing path, the command's error). */
static unsigned tool_run(
        box *b, const char *script, const char *a1, const char *a2, unsigned ok, cx_run *r) {
        cx_req *rq = b->rq;
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) script, (char *) "sh", (char *) a1,
                (char *) a2, NULL};
        unsigned code = run(b, argv, NULL, NULL, 0, r);
        if (code)
                native_err(rq, code, r->refusal);
        else if (r->exit_code >= 0 && r->exit_code < 32 && (ok & (1u << r->exit_code)))
                return 0;
        else if (r->exit_code == 2 && r->err && strstr(r->err, "no such file or directory"))
                cx_daytona_err(rq, 404, "%s: no such file or directory", a1);
        else
                cx_daytona_err(rq, r->err && strstr(r->err, "ermission denied") ? 403 : 400, "%s",
                        r->err && *r->err ? r->err
                        : r->error        ? r->error
                                          : "failed");
        cx_run_done(r);
        return code ? code : 400;
}

/* GET /files/find?path=&pattern=: the lines of text files below path that match pattern (a
 * basic regular expression, as grep takes it): [{file, line, content}]. */
static void find_in_files(box *b, const char *path) {
        const char *pattern = cx_query(b->rq, "pattern");
        if (!pattern || !*pattern) {
                cx_daytona_err(b->rq, 400, "pattern: a pattern is required");
                return;
        }
        cx_run r;
        if (tool_run(b, find_script, path, pattern, 1u << 0 | 1u << 1, &r))
                return;
        json_t *l = json_array();
        /* grep -Z: FILE\0LINE:CONTENT\n */
        for (const char *p = r.out, *end = r.out + r.out_len; p && p < end;) {
                const char *nul = memchr(p, 0, (size_t) (end - p));
                if (!nul)
                        break;
                const char *nl = memchr(nul + 1, '\n', (size_t) (end - nul - 1));
                const char *stop = nl ? nl : end;
                char *colon = memchr(nul + 1, ':', (size_t) (stop - nul - 1));
                if (colon) {
                        json_array_append_new(
                                l, json_pack("{s:s%, s:I, s:s%}", "file", p, (size_t) (nul - p), "line",
                                           (json_int_t) strtol(nul + 1, NULL, 10), "content", colon + 1,
                                           (size_t) (stop - colon - 1)));
                }
                p = nl ? nl + 1 : end;
        }
        cx_respond_json(b->rq, 200, l);
        cx_run_done(&r);
}

/* GET /files/search?path=&pattern=: the files and directories below path whose name matches the
 * glob pattern: {files: [...]}. */
static void search_files(box *b, const char *path) {
        const char *pattern = cx_query(b->rq, "pattern");
        if (!pattern || !*pattern) {
                cx_daytona_err(b->rq, 400, "pattern: a pattern is required");
                return;
        }
        cx_run r;
        if (tool_run(b, search_script, path, pattern, 1u << 0, &r))
                return;
        json_t *l = json_array();
        for (const char *p = r.out, *end = r.out + r.out_len; p && p < end;) {
                const char *nul = memchr(p, 0, (size_t) (end - p));
                size_t n = nul ? (size_t) (nul - p) : (size_t) (end - p);
                if (n)
                        json_array_append_new(l, json_stringn(p, n));
                p += n + 1;
        }
        cx_respond_json(b->rq, 200, json_pack("{s:o}", "files", l));
        cx_run_done(&r);
}

/* POST /files/permissions?path=&mode=&owner=&group=: chmod; the sandbox has one user (uid 1000),
 * so an owner or group other than it is refused rather than ignored. */
static void set_permissions(box *b, const char *path) {
        const char *mode = cx_query(b->rq, "mode"), *owner = cx_query(b->rq, "owner"),
                   *group = cx_query(b->rq, "group");
        static const char *const own[] = {"daytona", "sandbox", "user", "1000", NULL};
        if ((owner && *owner && !strv_contains((char **) own, owner)) ||
                (group && *group && !strv_contains((char **) own, group))) {
                cx_daytona_err(b->rq, 400,
                        "owner and group: the sandbox has one user (uid 1000, its files' owner); ownership "
                        "cannot change");
                return;
        }
        if (!mode || !*mode) {
                cx_respond(b->rq, 200, "application/json", "", 0); /* nothing to change */
                return;
        }
        size_t ml = strlen(mode);
        if (ml < 3 || ml > 4 || strspn(mode, "01234567") != ml) {
                cx_daytona_err(b->rq, 400, "mode: an octal mode such as 755 or 0644");
                return;
        }
        cx_run r;
        if (tool_run(b, chmod_script, path, mode, 1u << 0, &r))
                return;
        cx_respond(b->rq, 200, "application/json", "", 0);
        cx_run_done(&r);
}

/* POST /files/replace {files, pattern, newValue}: every occurrence of pattern (literal text) in
 * each file replaced, the file read and written inside the sandbox: [{file, success, error}]. */
static void replace_in_files(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body, rq->len, 0, NULL);
        json_t *files = json_object_get(body, "files");
        const char *pat = json_string_value(json_object_get(body, "pattern"));
        const char *nv = json_string_value(json_object_get(body, "newValue"));
        if (!json_is_array(files) || !pat || !*pat || !nv) {
                json_decref(body);
                cx_daytona_err(rq, 400, "the body must be {files: [paths], pattern: text, newValue: text}");
                return;
        }
        size_t pl = strlen(pat), nl = strlen(nv), i;
        json_t *f, *out = json_array();
        json_array_foreach(files, i, f) {
                const char *name = json_string_value(f);
                _cleanup_free_ char *p = name ? cx_path(name, b->scratch, b->homes) : NULL;
                json_t *res = json_pack("{s:s}", "file", name ? name : "");
                sbx_mgr_reply rp;
                unsigned code = p ? file_get(b, p, &rp) : 400;
                if (code != 200) {
                        json_object_set_new(res, "success", json_false());
                        json_object_set_new(res, "error",
                                json_string(!p            ? "not a path"
                                            : code == 404 ? "no such file"
                                                          : "cannot read it"));
                        if (p)
                                sbx_mgr_reply_done(&rp);
                        json_array_append_new(out, res);
                        continue;
                }
                char *text = NULL;
                size_t tl = 0;
                FILE *m = open_memstream(&text, &tl);
                const char *d = rp.raw ? rp.raw : "", *e = d + rp.raw_len;
                for (const char *q = d; m && q < e;) {
                        const char *hit = memmem(q, (size_t) (e - q), pat, pl);
                        size_t n = hit ? (size_t) (hit - q) : (size_t) (e - q);
                        fwrite(q, 1, n, m);
                        if (!hit)
                                break;
                        fwrite(nv, 1, nl, m);
                        q = hit + pl;
                }
                bool ok = m && fclose(m) == 0;
                sbx_mgr_reply_done(&rp);
                json_t *perr = NULL;
                code = ok ? file_put(b, p, text ? text : "", tl, &perr) : 500;
                free(text);
                json_object_set_new(res, "success", json_boolean(code == 200 || code == 204 || code == 201));
                if (!json_is_true(json_object_get(res, "success")))
                        json_object_set_new(res, "error", json_string(native_message(perr)));
                json_decref(perr);
                json_array_append_new(out, res);
        }
        json_decref(body);
        cx_respond_json(rq, 200, out);
}

static void toolbox(cx_req *rq, const char *path) {
        const char *rest = path + 9; /* after /toolbox/ */
        char id[64];
        const char *slash = strchr(rest, '/');
        size_t l = slash ? (size_t) (slash - rest) : strlen(rest);
        if (l == 0 || l >= sizeof id || !slash) {
                cx_daytona_err(rq, 404, "no such toolbox endpoint");
                return;
        }
        memcpy(id, rest, l);
        id[l] = 0;
        const char *op = slash;
        box b = {.rq = rq, .id = id};
        if (!(b.rec = record(rq, id, true)))
                return;
        (void) cx_box_get(rq->m, id, NULL, NULL, &b.env);
        const char *home = json_string_value(json_object_get(b.rec, "home"));
        b.scratch = home ?: json_string_value(json_object_get(b.rec, "scratch")) ?: "/tmp";
        b.homes = home ? NULL : homes;
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST"),
             del = streq(rq->method, "DELETE");
        _cleanup_free_ char *p = cx_path(cx_query(rq, "path"), b.scratch, b.homes);
        if (cx_daytona_pty(rq, id, op, b.env, b.scratch))
                ; /* PTY sessions (daytona-pty.c) */
        else if (cx_daytona_session(rq, id, op, b.env, b.scratch))
                ; /* sessions and the code interpreter (daytona-session.c) */
        else if (cx_daytona_git(rq, id, op, b.env, b.scratch, b.homes))
                ; /* git (daytona-git.c) */
        else if (streq(op, "/env") && post)
                update_env(&b);
        else if (streq(op, "/system/metrics") && get)
                system_metrics(&b);
        else if (streq(op, "/process/execute") && post)
                execute(&b);
        else if (streq(op, "/process/code-run") && post)
                code_run(&b);
        else if (streq(op, "/files/bulk-upload") && post)
                bulk_upload(&b);
        else if (streq(op, "/files/bulk-download") && post)
                bulk_download(&b);
        else if ((streq(op, "/user-home-dir") || streq(op, "/work-dir")) && get)
                cx_respond_json(rq, 200, json_pack("{s:s}", "dir", b.scratch));
        else if (streq(op, "/version") && get)
                cx_respond_json(rq, 200, json_pack("{s:s}", "version", "sandboxer"));
        else if (streq(op, "/files/replace") && post)
                replace_in_files(&b);
        else if (!p && (streq(op, "/files") || strncmp(op, "/files/", 7) == 0) && !streq(op, "/files/move"))
                cx_daytona_err(rq, 400, "path: a path is required");
        else if (streq(op, "/files/upload-v2") && post) {
                /* multipart (its "file" part) or the raw body */
                const char *ct = cx_header(rq, "Content-Type");
                cx_part part[8];
                int np = ct && strncasecmp(ct, "multipart/", 10) == 0
                                 ? cx_multipart(ct, rq->body, rq->len, part, 8)
                                 : -1;
                const char *data = rq->body ? rq->body : "";
                size_t len = rq->len;
                for (int i = 0; i < np; i++)
                        if (streq(part[i].name, "file")) {
                                data = part[i].data;
                                len = part[i].len;
                        }
                json_t *perr = NULL;
                unsigned code = np == 0 ? 400 : file_put(&b, p, data, len, &perr);
                if (code == 200 || code == 201 || code == 204)
                        cx_respond_json(rq, 200, json_object());
                else if (np == 0)
                        cx_daytona_err(rq, 400, "the multipart body has no \"file\" part");
                else
                        native_err(rq, code, perr);
                json_decref(perr);
        } else if (streq(op, "/files/download") && get) {
                sbx_mgr_reply rp;
                unsigned code = file_get(&b, p, &rp);
                if (code == 200)
                        cx_respond(rq, 200, "application/octet-stream", rp.raw ? rp.raw : "", rp.raw_len);
                else
                        native_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
        } else if (streq(op, "/files") && get) {
                const char *d = cx_query(rq, "depth");
                char depth[16];
                snprintf(
                        depth, sizeof depth, "%ld", d && strtol(d, NULL, 10) > 0 ? strtol(d, NULL, 10) : 1L);
                files_cmd(&b, list_script, p, depth, true, false);
        } else if (streq(op, "/files/info") && get) {
                files_cmd(&b, info_script, p, NULL, true, true);
        } else if (streq(op, "/files") && del) {
                const char *rec = cx_query(rq, "recursive");
                files_cmd(&b, rec && streq(rec, "true") ? rm_r_script : rm_script, p, NULL, false, false);
        } else if (streq(op, "/files/folder") && post) {
                const char *mode = cx_query(rq, "mode");
                files_cmd(&b, "mkdir -p -m \"$2\" -- \"$1\"", p, mode && *mode ? mode : "755", false, false);
        } else if (streq(op, "/files/find") && get) {
                find_in_files(&b, p);
        } else if (streq(op, "/files/search") && get) {
                search_files(&b, p);
        } else if (streq(op, "/files/permissions") && post) {
                set_permissions(&b, p);
        } else if (streq(op, "/files/move") && post) {
                _cleanup_free_ char *src = cx_path(cx_query(rq, "source"), b.scratch, b.homes);
                _cleanup_free_ char *dst = cx_path(cx_query(rq, "destination"), b.scratch, b.homes);
                if (!src || !dst)
                        cx_daytona_err(rq, 400, "source and destination: paths are required");
                else
                        files_cmd(&b, mv_script, src, dst, false, false);
        } else
                cx_daytona_err(
                        rq, 501, "%s %s is not implemented by sandboxer's Daytona toolbox", rq->method, op);
        json_decref(b.rec);
        cx_strv_free(b.env);
}

bool cx_daytona_handle(cx_req *rq) {
        const char *u = rq->url;
        if (strncmp(u, "/api/", 5) != 0)
                return false;
        const char *path = u + 4;
        bool signed_ok = false;
        if (signed_file_request(rq, path, &signed_ok)) {
                if (signed_ok)
                        toolbox(rq, path);
                return true;
        }
        if (!cx_auth_who(rq)) {
                cx_daytona_err(rq, 401,
                        "a bearer token is required: set DAYTONA_API_KEY to a sandboxer token ('sandboxer "
                        "token "
                        "create --actor agt --name NAME --json')");
                return true;
        }
        if (streq(path, "/sandbox") || strncmp(path, "/sandbox/", 9) == 0)
                sandboxes(rq, path);
        else if (strncmp(path, "/toolbox/", 9) == 0)
                toolbox(rq, path);
        else
                cx_daytona_err(rq, 404, "Cannot %s %s", rq->method, u);
        return true;
}
