/* daytona.c — Daytona's API on the control plane's server: sandboxes under /api/sandbox (create,
 * get, list, delete, autostop, ttl, labels, toolbox-proxy-url, preview links, the signing key of
 * file URLs), the dispatch of the toolbox under /api/toolbox/ID/ (daytona-toolbox.c) and its
 * signed file URLs. The API key is a sandboxer token (Authorization: Bearer, which http.c
 * checks). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "daemon/compat/compat.h"
#include "daemon/compat/daytona-internal.h"
#include "daemon/log.h"
#include "daemon/ports.h"

const char *const dt_homes[] = {"/home/daytona", NULL};

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

const char *dt_native_message(const json_t *j) {
        return json_string_value(json_object_get(json_object_get(j, "error"), "message")) ?: "refused";
}

void dt_native_err(cx_req *rq, unsigned code, const json_t *j) {
        cx_daytona_err(rq, code == 410 ? 404 : code == 422 ? 400 : code, "%s", dt_native_message(j));
}

void cx_iso_time(int64_t ms, char buf[static 40]) {
        time_t t = (time_t) (ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, 40 - n, ".%03dZ", (int) (ms % 1000));
}

static const char *state_of(const json_t *rec);

/* An archived sandbox started is a new sandbox: its old id stays a name for it (the SDK's toolbox
 * client keeps the id it was made with); an archived sandbox's sandbox-wide env (envVars) waits
 * for the sandbox its start makes. Both are kept in STATE/compat-daytona.json (0600: env values
 * may be secrets), read at the first use, rewritten whole on each change: they outlive restarts of
 * serve as the archive itself does. {aliases: {OLD: NEW}, env: {ID: {…}}} */
#define ALIASES_MAX 4096

static pthread_mutex_t alias_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *kept; /* under alias_lock */

static json_t *kept_locked(sbx_mgr *m, char *path, size_t size) {
        snprintf(path, size, "%s/compat-daytona.json", sbx_ops_state_dir(m));
        if (!kept) {
                kept = json_load_file(path, 0, NULL);
                if (!json_is_object(kept)) {
                        json_decref(kept);
                        kept = json_object();
                }
                if (!json_is_object(json_object_get(kept, "aliases")))
                        json_object_set_new(kept, "aliases", json_object());
                if (!json_is_object(json_object_get(kept, "env")))
                        json_object_set_new(kept, "env", json_object());
        }
        return kept;
}

static void save_locked(const char *path) {
        if (sbx_json_file_save(path, kept, JSON_COMPACT) < 0)
                sbx_log(SBX_LOG_WARNING, "compat_state_unsaved", "path", path, NULL);
}

static void alias_set(sbx_mgr *m, const char *from, const char *to) {
        char path[PATH_MAX];
        pthread_mutex_lock(&alias_lock);
        json_t *al = json_object_get(kept_locked(m, path, sizeof path), "aliases"), *v;
        const char *k;
        json_object_foreach(al, k, v) if (streq_ptr(json_string_value(v), from)) /* archived again */
                json_object_set_new(al, k, json_string(to));
        if (json_object_size(al) >= ALIASES_MAX) { /* the oldest goes */
                void *it = json_object_iter(al);
                if (it)
                        json_object_del(al, json_object_iter_key(it));
        }
        json_object_set_new(al, from, json_string(to));
        save_locked(path);
        pthread_mutex_unlock(&alias_lock);
}

static void env_keep(sbx_mgr *m, const char *id, json_t *env /* stolen */) {
        char path[PATH_MAX];
        pthread_mutex_lock(&alias_lock);
        json_object_set_new(json_object_get(kept_locked(m, path, sizeof path), "env"), id, env);
        save_locked(path);
        pthread_mutex_unlock(&alias_lock);
}

static json_t *env_take(sbx_mgr *m, const char *id) {
        char path[PATH_MAX];
        pthread_mutex_lock(&alias_lock);
        json_t *all = json_object_get(kept_locked(m, path, sizeof path), "env");
        json_t *env = json_incref(json_object_get(all, id));
        if (env) {
                json_object_del(all, id);
                save_locked(path);
        }
        pthread_mutex_unlock(&alias_lock);
        return env;
}

void dt_alias_resolve(sbx_mgr *m, char *id, size_t size) {
        char path[PATH_MAX];
        pthread_mutex_lock(&alias_lock);
        const char *to = json_string_value(
                json_object_get(json_object_get(kept_locked(m, path, sizeof path), "aliases"), id));
        if (to)
                snprintf(id, size, "%s", to);
        pthread_mutex_unlock(&alias_lock);
}

/* Whether the caller's sandbox id was archived (its record destroyed for it); nothing answered. */
static bool archived(cx_req *rq, const char *id) {
        unsigned code;
        json_t *rec = cx_record(rq, id, &code);
        bool a = rec && streq_ptr(json_string_value(json_object_get(rec, "state")), "destroyed") &&
                 streq_ptr(json_string_value(json_object_get(rec, "reason")), "archived");
        json_decref(rec);
        return a;
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
                return streq_ptr(json_string_value(json_object_get(rec, "reason")), "archived")
                               ? "archived"
                               : "destroyed";
        if (streq(s, "paused")) /* stop and pause alike: frozen, memory kept */
                return "stopped";
        return "error";
}

/* http://HOST/api/toolbox: where this server answers, as the client reached it. */
static void toolbox_url(cx_req *rq, char *buf, size_t size) {
        const char *host = cx_header(rq, "Host");
        /* https where this connection is (serve --tls-cert): the SDK goes where this says */
        bool tls = rq->conn && MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_PROTOCOL);
        snprintf(buf, size, "%s://%s/api/toolbox", tls ? "https" : "http",
                host && *host ? host : "127.0.0.1");
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
                "{s:s, s:s, s:s, s:s, s:s, s:o, s:O, s:b, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", id,
                "organizationId", json_string_value(json_object_get(rec, "tenant")) ?: "default", "name", id,
                "snapshot", profile, "user", streq(profile, "profile.daytona") ? "daytona" : "sandbox",
                "env", envj, "labels", md ? md : json_object(), "public", 0, "target", "local", "state",
                state_of(rec), "desiredState",
                streq(state_of(rec), "destroyed")  ? "destroyed"
                : streq(state_of(rec), "archived") ? "archived"
                : streq(state_of(rec), "stopped")  ? "stopped"
                                                   : "started",
                "createdAt", created, "updatedAt", updated, "autoDestroyAt", expires, "toolboxProxyUrl", tb,
                "daemonVersion", "sandboxer");
        json_object_set_new(
                j, "cpu", json_integer((json_int_t) json_number_value(json_object_get(lim, "cpus"))));
        json_object_set_new(j, "gpu", json_integer(0));
        json_object_set_new(
                j, "memory", json_real(json_number_value(json_object_get(lim, "memory_mb")) / 1024.0));
        json_object_set_new(
                j, "disk", json_real(json_number_value(json_object_get(lim, "scratch_mb")) / 1024.0));
        dt_network_info(j, rec);
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
        sbx_network_req net;
        char nerr[400];
        if (!dt_network_decode(body, false, &net, nerr, sizeof nerr)) {
                cx_daytona_err(rq, 400, "%s", nerr);
                json_decref(body);
                return;
        }
        /* a sandbox snapshot of the caller's (createSnapshot), by id or by name: a sandbox made from it */
        char snap_id[32] = "";
        if (snap && *snap) {
                sbx_mgr_reply lr;
                (void) sbx_ops_snapshot_list(rq->m, &rq->caller, &lr);
                json_t *s;
                size_t i;
                json_array_foreach(json_object_get(lr.json, "items"), i, s) {
                        if (streq_ptr(json_string_value(json_object_get(s, "id")), snap) ||
                                streq_ptr(json_string_value(json_object_get(s, "name")), snap))
                                snprintf(snap_id, sizeof snap_id, "%s",
                                        json_string_value(json_object_get(s, "id")));
                }
                sbx_mgr_reply_done(&lr);
        }
        /* volumes [{volumeId, mountPath}]: the tenant's volumes (by id), mounted writable */
        json_t *vols = NULL, *x;
        size_t vi;
        json_array_foreach(json_object_get(body, "volumes"), vi, x) {
                char vname[80];
                const char *vid = json_string_value(json_object_get(x, "volumeId"));
                if (!vols)
                        vols = json_array();
                json_array_append_new(
                        vols, json_pack("{s:s, s:O?}", "name",
                                      vid && cx_volume_name(rq, vid, vname, sizeof vname) ? vname : "",
                                      "mount", json_object_get(x, "mountPath")));
        }
        sbx_create_req creq = {
                .volumes = vols,
                .profile = snap_id[0] ? NULL : profile,
                .snapshot = snap_id[0] ? snap_id : NULL,
                .ttl_s = minutes * 60,
                .ttl_given = minutes > 0,
                .metadata = json_is_object(jl) && json_object_size(jl) ? jl : NULL,
                .network = net.has_egress || net.has_deny ? &net : NULL,
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
        sbx_network_req_done(&net);
        json_decref(vols);
        if (code != 201 && code != 200) {
                dt_native_err(rq, code, rp.json);
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
                dt_native_err(rq, code, rp.json);
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

json_t *dt_record(cx_req *rq, const char *id, bool live) {
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
        json_t *rec = dt_record(rq, id, false);
        if (!rec)
                return;
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_destroy(rq->m, &rq->caller, id, &rp);
        if (code == 200) {
                cx_respond_json(rq, 200, sandbox_json(rq, rp.json));
        } else
                dt_native_err(rq, code, rp.json);
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
        json_t *rec = dt_record(rq, id, true);
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
                json_t *rec = dt_record(rq, id, false);
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
        json_t *rec = dt_record(rq, id, false);
        if (!rec)
                return;
        json_decref(rec);
        unsigned code;
        json_t *err = NULL;
        json_t *p =
                sbx_ports_preview(rq->m, &rq->caller, id, port, expires, cx_header(rq, "Host"), &code, &err);
        if (!p)
                dt_native_err(rq, code, err);
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
        json_t *rec = dt_record(rq, id, true);
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
                dt_native_err(rq, code, rp.json);
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
        dt_alias_resolve(rq->m, id, sizeof id);
        const char *sub = slash ? slash : "";
        json_t *rec;
        char tb[512];
        if (!*sub && get) {
                if ((rec = dt_record(rq, id, false))) {
                        cx_respond_json(rq, 200, sandbox_json(rq, rec));
                        json_decref(rec);
                }
        } else if (!*sub && del)
                op_delete(rq, id);
        else if (strncmp(sub, "/autostop/", 10) == 0 && post)
                op_autostop(rq, id, sub + 10);
        else if ((strncmp(sub, "/autopause/", 11) == 0 || strncmp(sub, "/autodelete/", 12) == 0 ||
                         strncmp(sub, "/autoarchive/", 13) == 0) &&
                 post) {
                /* autopause/MIN: paused after MIN minutes without activity (0: never); autodelete/MIN:
                 * deleted after MIN minutes stopped (0: at once, -1: kept as long as sandboxer keeps
                 * a paused sandbox, 30 days); autoarchive/MIN: archived after MIN minutes stopped (0:
                 * the longest, 30 days) — one cap with one action: the last of the two set wins */
                bool pause = sub[5] == 'p', archive = sub[5] == 'a';
                const char *arg = sub + (pause ? 11 : archive ? 13 : 12);
                char *end;
                long minutes = strtol(arg, &end, 10);
                sbx_lifecycle_req lc = {0};
                if (pause)
                        lc = (sbx_lifecycle_req){.idle_s = minutes * 60.0,
                                .idle_pause = minutes > 0,
                                .has_idle = true,
                                .has_on_idle = true};
                else if (archive)
                        lc = (sbx_lifecycle_req){.paused_max_s = minutes == 0
                                                                         ? 30 * 86400.0
                                                                         : MIN(minutes * 60.0, 30 * 86400.0),
                                .has_paused_max = true,
                                .paused_snapshot = true,
                                .has_on_paused_max = true};
                else
                        lc = (sbx_lifecycle_req){.paused_max_s = minutes < 0 ? 30 * 86400.0
                                                                 : minutes == 0
                                                                         ? 1
                                                                         : MIN(minutes * 60.0, 30 * 86400.0),
                                .has_paused_max = true,
                                .has_on_paused_max = true};
                sbx_mgr_reply rp;
                if (*end || !*arg || minutes < -1 || ((pause || archive) && minutes < 0))
                        cx_daytona_err(rq, 400, "%s: a number of minutes is required",
                                pause     ? "autopause"
                                : archive ? "autoarchive"
                                          : "autodelete");
                else if (sbx_ops_set_lifecycle(rq->m, &rq->caller, id, &lc, &rp) == 200) {
                        cx_respond(rq, 200, "application/json", "", 0);
                        sbx_mgr_reply_done(&rp);
                } else {
                        dt_native_err(rq, rp.code, rp.json);
                        sbx_mgr_reply_done(&rp);
                }
        } else if (streq(sub, "/toolbox-proxy-url") && get) {
                if ((rec = dt_record(rq, id, false))) {
                        toolbox_url(rq, tb, sizeof tb);
                        cx_respond_json(rq, 200, json_pack("{s:s}", "url", tb));
                        json_decref(rec);
                }
        } else if (streq(sub, "/archive") && post) {
                /* archive: its files kept as the snapshot "archive:ID", the sandbox destroyed (reason
                 * archived: the record says "archived"); start makes a sandbox from it */
                char name[96];
                snprintf(name, sizeof name, "archive:%s", id);
                sbx_mgr_reply sp, dp;
                if ((rec = dt_record(rq, id, true))) {
                        json_t *env = NULL;
                        (void) sbx_mgr_surface_get(rq->m, id, NULL, NULL, &env);
                        if (sbx_ops_snapshot_create(rq->m, &rq->caller, id, name, &sp) != 201) {
                                dt_native_err(rq, sp.code, sp.json);
                                json_decref(env);
                        } else if (sbx_ops_destroy_as(rq->m, &rq->caller, id, "archived", &dp) != 200) {
                                dt_native_err(rq, dp.code, dp.json);
                                sbx_mgr_reply_done(&dp);
                                json_decref(env);
                        } else {
                                if (env) /* for the sandbox its start makes */
                                        env_keep(rq->m, id, env);
                                cx_respond_json(rq, 200, sandbox_json(rq, dp.json));
                                sbx_mgr_reply_done(&dp);
                        }
                        sbx_mgr_reply_done(&sp);
                        json_decref(rec);
                }
        } else if (streq(sub, "/start") && post && archived(rq, id)) {
                /* an archived sandbox started: a new one from its archive (the SDK takes its id) */
                char name[96], snap[32] = "";
                snprintf(name, sizeof name, "archive:%s", id);
                sbx_mgr_reply lr, cr, dr;
                (void) sbx_ops_snapshot_list(rq->m, &rq->caller, &lr);
                json_t *s;
                size_t i;
                json_array_foreach(json_object_get(lr.json, "items"), i,
                        s) if (streq_ptr(json_string_value(json_object_get(s, "name")), name))
                        snprintf(snap, sizeof snap, "%s", json_string_value(json_object_get(s, "id")));
                sbx_mgr_reply_done(&lr);
                sbx_create_req creq = {.snapshot = snap};
                unsigned code = snap[0] ? sbx_ops_create(rq->m, &rq->caller, &creq, &cr) : 404;
                if (!snap[0])
                        cx_daytona_err(rq, 404, "Sandbox %s is archived, but its archive is gone", id);
                else if (code == 201 || code == 200) {
                        char token[65];
                        cx_box_set(rq->m, json_string_value(json_object_get(cr.json, "id")) ?: "",
                                &rq->caller, env_take(rq->m, id), token);
                        cx_respond_json(rq, 200, sandbox_json(rq, cr.json));
                        alias_set(rq->m, id, json_string_value(json_object_get(cr.json, "id")) ?: "");
                        (void) sbx_ops_snapshot_delete(rq->m, &rq->caller, snap, &dr);
                        sbx_mgr_reply_done(&dr);
                } else
                        dt_native_err(rq, code, cr.json);
                if (snap[0])
                        sbx_mgr_reply_done(&cr);
        } else if (streq(sub, "/snapshot") && post) {
                /* createSnapshot(name): the sandbox's files kept; a create {snapshot: name} makes
                 * sandboxes from it */
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
                json_t *jn = json_object_get(body, "name");
                sbx_mgr_reply rp;
                if (jn && !json_is_string(jn))
                        cx_daytona_err(rq, 400, "name: a string");
                else if (sbx_ops_snapshot_create(rq->m, &rq->caller, id, json_string_value(jn), &rp) ==
                         201) {
                        sbx_mgr_reply_done(&rp);
                        if ((rec = dt_record(rq, id, false))) {
                                cx_respond_json(rq, 200, sandbox_json(rq, rec));
                                json_decref(rec);
                        }
                } else {
                        dt_native_err(rq, rp.code, rp.json);
                        sbx_mgr_reply_done(&rp);
                }
                json_decref(body);
        } else if (streq(sub, "/fork") && post) {
                /* fork: a snapshot, a sandbox from it, the snapshot gone */
                sbx_mgr_reply sp, cp, dp;
                if (sbx_ops_snapshot_create(rq->m, &rq->caller, id, NULL, &sp) != 201)
                        dt_native_err(rq, sp.code, sp.json);
                else {
                        sbx_create_req creq = {
                                .snapshot = json_string_value(json_object_get(sp.json, "id"))};
                        unsigned code = sbx_ops_create(rq->m, &rq->caller, &creq, &cp);
                        if (code == 201 || code == 200) {
                                char token[65];
                                cx_box_set(rq->m, json_string_value(json_object_get(cp.json, "id")) ?: "",
                                        &rq->caller, NULL, token);
                                cx_respond_json(rq, 200, sandbox_json(rq, cp.json));
                        } else
                                dt_native_err(rq, code, cp.json);
                        sbx_mgr_reply_done(&cp);
                        (void) sbx_ops_snapshot_delete(rq->m, &rq->caller, creq.snapshot, &dp);
                        sbx_mgr_reply_done(&dp);
                }
                sbx_mgr_reply_done(&sp);
        } else if ((streq(sub, "/start") || streq(sub, "/stop") || streq(sub, "/pause")) && post) {
                /* stop and pause: its processes frozen (memory kept); start: resumed */
                if ((rec = dt_record(rq, id, true))) {
                        sbx_mgr_reply rp;
                        unsigned code = (streq(sub, "/start") ? sbx_ops_resume : sbx_ops_pause)(
                                rq->m, &rq->caller, id, &rp);
                        if (code == 200)
                                cx_respond_json(rq, 200, sandbox_json(rq, rp.json));
                        else
                                dt_native_err(rq, code, rp.json);
                        sbx_mgr_reply_done(&rp);
                        json_decref(rec);
                }
        } else if (streq(sub, "/recover") && post) {
                /* recover: a sandbox in error (failed: its supervisor or init died) went with its
                 * processes and files, so there is nothing to bring back — said; one that runs,
                 * or is stopped, has nothing to recover: its record */
                if ((rec = dt_record(rq, id, false))) {
                        const char *why = json_string_value(json_object_get(rec, "reason")) ?: "";
                        if (streq(state_of(rec), "error") || streq(why, "supervisor_lost") ||
                                streq(why, "sandbox_ended") || streq(why, "provision_error"))
                                cx_daytona_err(rq, 409,
                                        "Sandbox %s cannot be recovered: it failed (%s) and its processes "
                                        "and files "
                                        "went with it; create another (a snapshot or an archive keeps "
                                        "files)",
                                        id, *why ? why : "?");
                        else if (streq(state_of(rec), "destroyed") || streq(state_of(rec), "archived"))
                                cx_daytona_err(rq, 409, "Sandbox %s is %s, not in an error state", id,
                                        state_of(rec));
                        else
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
                        dt_native_err(rq, rp.code, rp.json);
                sbx_mgr_reply_done(&rp);
                json_decref(body);
        } else if (streq(sub, "/network-settings") && post) {
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
                sbx_network_req net;
                char nerr[400];
                sbx_mgr_reply rp = {.stream_fd = -1};
                if (!json_is_object(body))
                        cx_daytona_err(rq, 400, "the body must be a JSON object");
                else if (!dt_network_decode(body, true, &net, nerr, sizeof nerr))
                        cx_daytona_err(rq, 400, "%s", nerr);
                else {
                        if (!net.has_egress)
                                cx_daytona_err(rq, 400,
                                        "at least one of networkBlockAll, networkAllowList or "
                                        "domainAllowList "
                                        "must be set");
                        else if (sbx_ops_set_network(rq->m, &rq->caller, id, &net, &rp) == 200)
                                cx_respond_json(rq, 200, sandbox_json(rq, rp.json));
                        else
                                dt_native_err(rq, rp.code, rp.json);
                        sbx_network_req_done(&net);
                }
                sbx_mgr_reply_done(&rp);
                json_decref(body);
        } else if (streq(sub, "/last-activity") && post) {
                if ((rec = dt_record(rq, id, true))) {
                        cx_respond(rq, 201, "application/json", "", 0);
                        json_decref(rec);
                }
        } else
                cx_daytona_err(rq, 501, "%s %s is not implemented by sandboxer's Daytona surface",
                        rq->method, path);
}

bool cx_daytona_handle(cx_req *rq) {
        const char *u = rq->url;
        if (strncmp(u, "/api/", 5) != 0)
                return false;
        const char *path = u + 4;
        bool signed_ok = false;
        if (signed_file_request(rq, path, &signed_ok)) {
                if (signed_ok)
                        dt_toolbox(rq, path);
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
                dt_toolbox(rq, path);
        else if (streq(path, "/volumes") || strncmp(path, "/volumes/", 9) == 0)
                dt_volumes(rq, path);
        else
                cx_daytona_err(rq, 404, "Cannot %s %s", rq->method, u);
        return true;
}
