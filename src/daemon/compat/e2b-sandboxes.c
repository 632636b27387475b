/* e2b-sandboxes.c — E2B's control plane (/sandboxes, /v2/sandboxes): create, get, list, timeout,
 * connect, kill, as the native sandbox routes; templateID is a sandboxer profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "daemon/compat/compat.h"
#include "daemon/compat/e2b-internal.h"
#include "daemon/ports.h"

/* What the SDK gates on envd's version: 0.5.2 closeStdin (done), 0.5.7 octet-stream and gzip
 * uploads (not done: so not claimed), 0.6.2 file metadata (not done). */
#define ENVD_VERSION "0.5.6"
#define DEFAULT_TIMEOUT_S 300.0

/* ---- the control plane ---------------------------------------------------------------------- */

/* E2B's own templates are profile.e2b (a home at /home/user, a shell that starts interpreters);
 * any other templateID names a sandboxer profile. */
static const char *const e2b_templates[] = {
        "base", "python", "code-interpreter", "code-interpreter-v1", NULL};

static const char *profile_of(const char *templ, char *buf, size_t size) {
        if (!templ || !*templ || strv_contains((char **) e2b_templates, templ))
                return "profile.e2b";
        if (strncmp(templ, "profile.", 8) == 0)
                return templ;
        snprintf(buf, size, "profile.%s", templ);
        return buf;
}

static const char *template_of(const json_t *rec, char *buf, size_t size) {
        const char *p = json_string_value(json_object_get(rec, "profile")) ?: "profile.e2b";
        if (streq(p, "profile.e2b"))
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

/* The domain getHost builds names under (serve --domain), or null: the SDK then needs
 * E2B_SANDBOX_URL for envd and has no host for ports. */
static json_t *domain_json(sbx_mgr *m) {
        const char *d = sbx_ports_domain(m);
        return d ? json_string(d) : json_null();
}

/* A create's or connect's port fields: the domain, and the token that reaches its ports
 * (header e2b-traffic-access-token) unless they were made public (allowPublicTraffic). */
static void ports_fields(cx_req *rq, const char *id, json_t *ans) {
        char t[33];
        json_object_set_new(ans, "domain", domain_json(rq->m));
        if (sbx_ports_preview_token(rq->m, id, t))
                json_object_set_new(ans, "trafficAccessToken", json_string(t));
}

static json_t *sandbox_json(sbx_mgr *m, const json_t *rec, bool detail) {
        char tb[256], started[40], end[40];
        const json_t *lim = json_object_get(rec, "limits");
        iso_time(cx_record_ms(rec, "created_at"), started);
        iso_time(cx_record_ms(rec, "expires_at"), end);
        const char *id = json_string_value(json_object_get(rec, "id")) ?: "";
        const char *templ = template_of(rec, tb, sizeof tb);
        json_t *md = json_object_get(rec, "metadata");
        const char *st =
                streq_ptr(json_string_value(json_object_get(rec, "state")), "paused") ? "paused" : "running";
        char hid[32];
        json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:s}", "sandboxID",
                sbx_id_hostform(id, hid), "templateID", templ, "alias", templ, "clientID", "sandboxer",
                "startedAt", started, "endAt", end, "state", st, "metadata",
                md ? json_incref(md) : json_object(), "envdVersion", ENVD_VERSION);
        json_object_set_new(
                j, "cpuCount", json_integer((json_int_t) json_number_value(json_object_get(lim, "cpus"))));
        json_object_set_new(j, "memoryMB",
                json_integer((json_int_t) json_number_value(json_object_get(lim, "memory_mb"))));
        json_object_set_new(j, "diskSizeMB",
                json_integer((json_int_t) json_number_value(json_object_get(lim, "scratch_mb"))));
        if (detail) {
                json_object_set_new(j, "domain", domain_json(m));
                e2b_network_info(j, rec);
        }
        return j;
}

/* A native refusal as E2B's control plane says it (a destroyed sandbox is one not found). */
static void api_native_err(cx_req *rq, unsigned code, const json_t *j) {
        e2b_api_err(rq, code == 410 ? 404 : code, "%s", e2b_native_message(j));
}

/* metrics: what the sandbox uses now, one sample (sbx_ops_metrics; the CPU share since the last
 * call), in E2B's fields. start and end are not kept: there is no history. */
static void op_metrics(cx_req *rq, const char *id) {
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_metrics(rq->m, &rq->caller, id, &rp);
        if (code != 200) {
                api_native_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
                return;
        }
        json_t *j = rp.json;
        char ts[40];
        iso_time(cx_now_ms(), ts);
#define N(k) json_number_value(json_object_get(j, k))
        json_t *m = json_pack("{s:s, s:i, s:f, s:I, s:I, s:I, s:I}", "timestamp", ts, "cpuCount",
                (int) (N("cpu_count") + 0.5), "cpuUsedPct", N("cpu_used_pct") < 0 ? 0.0 : N("cpu_used_pct"),
                "memUsed", (json_int_t) N("memory_used_bytes"), "memTotal",
                (json_int_t) N("memory_total_bytes"), "diskUsed", (json_int_t) N("disk_used_bytes"),
                "diskTotal", (json_int_t) N("disk_total_bytes"));
#undef N
        sbx_mgr_reply_done(&rp);
        cx_respond_json(rq, 200, json_pack("[o]", m));
}

bool e2b_api_auth(cx_req *rq) {
        const char *key = cx_header(rq, "X-API-KEY");
        if (key ? cx_auth_token(rq, key) : cx_auth_who(rq))
                return true;
        e2b_api_err(rq, 401, "%s",
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
        extend = MIN(extend, 366 * 86400.0 - 1); /* the native TTL's bound; capped by ttl.max anyway */
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_extend(rq->m, &rq->caller, id, extend, &rp);
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
                e2b_api_err(rq, 400, "the body must be a JSON object: %s", je.text);
                return;
        }
        json_t *jt = json_object_get(body, "templateID"), *jto = json_object_get(body, "timeout"),
               *jm = json_object_get(body, "metadata"), *je_ = json_object_get(body, "envVars");
        char pb[256];
        sbx_network_req net = {0};
        json_t *vols = NULL;
        if (jt && !json_is_string(jt)) {
                e2b_api_err(rq, 400,
                        "templateID: must be a string (a sandboxer profile: base is profile.default)");
                goto out;
        }
        if (jto && !json_is_null(jto) && (!json_is_number(jto) || json_number_value(jto) <= 0)) {
                e2b_api_err(rq, 400, "timeout: must be a positive number of seconds");
                goto out;
        }
        if (!cx_string_map_ok(jm, false)) {
                e2b_api_err(rq, 400, "metadata: must be an object of strings");
                goto out;
        }
        if (!cx_string_map_ok(je_, true)) {
                e2b_api_err(rq, 400, "envVars: must be an object of strings with variable names as keys");
                goto out;
        }
        json_t *jar = json_object_get(body, "autoResume");
        if (jar && !json_is_null(jar) &&
                !(json_is_object(jar) && json_is_boolean(json_object_get(jar, "enabled")))) {
                e2b_api_err(rq, 400, "autoResume: must be {enabled: true|false}");
                goto out;
        }
        char nerr[400];
        if (!e2b_network_decode(json_object_get(body, "network"),
                    json_object_get(body, "allow_internet_access"), false, &net, nerr, sizeof nerr)) {
                e2b_api_err(rq, 400, "%s", nerr);
                goto out;
        }
        const char *profile = profile_of(json_string_value(jt), pb, sizeof pb);
        double timeout = json_is_number(jto) ? json_number_value(jto) : DEFAULT_TIMEOUT_S;
        /* volumeMounts [{name, path}]: the tenant's volumes, mounted (writable) at path */
        json_t *vm = json_object_get(body, "volumeMounts"), *x;
        size_t vi;
        if (json_is_array(vm) && json_array_size(vm)) {
                vols = json_array();
                json_array_foreach(vm, vi, x) json_array_append_new(
                        vols, json_pack("{s:O?, s:O?}", "name", json_object_get(x, "name"), "mount",
                                      json_object_get(x, "path")));
        }
        /* a snapshot's id as the template: a sandbox made from it (Sandbox.create(snapshotId)) */
        const char *snapshot = mgr_valid_snapshot_id(json_string_value(jt)) ? json_string_value(jt) : NULL;
        sbx_create_req creq = {
                .profile = snapshot ? NULL : profile,
                .snapshot = snapshot,
                .ttl_s = timeout,
                .ttl_given = true,
                .metadata = json_is_object(jm) && json_object_size(jm) ? jm : NULL,
                .network = net.has_egress || net.has_deny ? &net : NULL,
                /* lifecycle.onTimeout "pause": paused at its timeout; autoResume: by an envd call */
                .pause_on_expiry = json_is_true(json_object_get(body, "autoPause")),
                .auto_resume = json_is_true(json_object_get(jar, "enabled")),
                .volumes = vols,
        };
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_create(rq->m, &rq->caller, &creq, &rp);
        bool capped = false;
        if (code == 400 &&
                streq_ptr(json_string_value(json_object_get(json_object_get(rp.json, "error"), "field")),
                        "ttl_s")) {
                /* more than the profile's ttl.max: the default TTL, extended up to the cap */
                sbx_mgr_reply_done(&rp);
                creq.ttl_given = false;
                code = sbx_ops_create(rq->m, &rq->caller, &creq, &rp);
                capped = true;
        }
        if (code != 201 && code != 200) {
                if (code == 422)
                        e2b_api_err(rq, 400, "templateID '%s': %s", json_string_value(jt) ?: "base",
                                e2b_native_message(rp.json));
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
                sbx_ops_destroy(rq->m, &rq->caller, id, &rp);
                sbx_mgr_reply_done(&rp);
                e2b_api_err(rq, 400,
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
        cx_box_set(rq->m, id, &rq->caller, json_is_object(je_) ? json_incref(je_) : NULL, token);
        char tb[256], hid[32];
        json_t *ans = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "sandboxID", sbx_id_hostform(id, hid),
                "templateID", template_of(rec, tb, sizeof tb), "alias", template_of(rec, tb, sizeof tb),
                "clientID", "sandboxer", "envdVersion", ENVD_VERSION, "envdAccessToken", token);
        if (json_is_true(json_object_get(json_object_get(body, "network"), "allowPublicTraffic")))
                sbx_ports_set_public(rq->m, id, true);
        ports_fields(rq, id, ans);
        cx_respond_json(rq, 201, ans);
        json_decref(rec);
out:
        sbx_network_req_done(&net);
        json_decref(vols);
        json_decref(body);
}

/* The record of a sandbox E2B may still address: live. 404 otherwise (answered). */
static json_t *live_record(cx_req *rq, const char *id) {
        unsigned code;
        json_t *rec = cx_record(rq, id, &code);
        if (!rec || !cx_record_live(rec)) {
                json_decref(rec);
                e2b_api_err(rq, 404, "sandbox %s not found", id);
                return NULL;
        }
        return rec;
}

static void op_get(cx_req *rq, const char *id) {
        json_t *rec = live_record(rq, id);
        if (!rec)
                return;
        json_t *j = sandbox_json(rq->m, rec, true);
        char token[65];
        if (cx_box_get(rq->m, id, NULL, NULL, NULL)) {
                cx_box_set(rq->m, id, &rq->caller, NULL, token);
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
        sbx_list_req lreq = {.limit = cx_limit(limit), .cursor = next};
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_list(rq->m, &rq->caller, &lreq, &rp);
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
                /* state=running,paused (or repeated): the ones asked for */
                bool paused = streq_ptr(json_string_value(json_object_get(rec, "state")), "paused");
                if (state && !strstr(state, paused ? "paused" : "running"))
                        continue;
                json_array_append_new(out, sandbox_json(rq->m, rec, false));
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
                e2b_api_err(rq, 400, "timeout: a number of seconds is required");
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
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_destroy(rq->m, &rq->caller, id, &rp);
        if (code != 200)
                api_native_err(rq, code, rp.json);
        else {
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
        /* connect resumes a paused sandbox */
        if (streq_ptr(json_string_value(json_object_get(rec, "state")), "paused")) {
                sbx_mgr_reply rp;
                unsigned code = sbx_ops_resume(rq->m, &rq->caller, id, &rp);
                if (code != 200) {
                        api_native_err(rq, code, rp.json);
                        sbx_mgr_reply_done(&rp);
                        json_decref(rec);
                        return;
                }
                json_decref(rec);
                rec = rp.json;
                rp.json = NULL;
                sbx_mgr_reply_done(&rp);
        }
        if (timeout > 0)
                (void) set_timeout(rq, id, rec, timeout, NULL);
        char token[65], tb[256], hid[32];
        cx_box_set(rq->m, id, &rq->caller, NULL, token);
        json_t *ans = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "sandboxID", sbx_id_hostform(id, hid),
                "templateID", template_of(rec, tb, sizeof tb), "alias", template_of(rec, tb, sizeof tb),
                "clientID", "sandboxer", "envdVersion", ENVD_VERSION, "envdAccessToken", token);
        ports_fields(rq, id, ans);
        cx_respond_json(rq, ok_code, ans);
        json_decref(rec);
}

/* pause: 204; 409 when it was paused already (the SDK's false); the memory is kept either way
 * (body {memory: false} asks for less: a frozen sandbox keeps it) */
static void op_pause(cx_req *rq, const char *id) {
        json_t *rec = live_record(rq, id);
        if (!rec)
                return;
        bool was = streq_ptr(json_string_value(json_object_get(rec, "state")), "paused");
        json_decref(rec);
        if (was) {
                e2b_api_err(rq, 409, "sandbox %s is already paused", id);
                return;
        }
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_pause(rq->m, &rq->caller, id, &rp);
        if (code == 200)
                cx_respond(rq, 204, NULL, "", 0);
        else if (code == 409 &&
                 streq_ptr(json_string_value(json_object_get(json_object_get(rp.json, "error"), "code")),
                         "unsupported"))
                e2b_api_err(rq, 501, "%s", e2b_native_message(rp.json)); /* not 409: "already paused" */
        else
                api_native_err(rq, code, rp.json);
        sbx_mgr_reply_done(&rp);
}

/* createSnapshot: 201 {snapshotID, names} */
static void op_snapshot(cx_req *rq, const char *id) {
        json_t *body = rq->len ? json_loadb(rq->body, rq->len, 0, NULL) : NULL;
        json_t *jn = json_object_get(body, "name");
        if (jn && !json_is_string(jn)) {
                e2b_api_err(rq, 400, "name: must be a string");
                json_decref(body);
                return;
        }
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_snapshot_create(rq->m, &rq->caller, id, json_string_value(jn), &rp);
        if (code != 201)
                api_native_err(rq, code, rp.json);
        else {
                json_t *names = json_array();
                if (json_string_value(json_object_get(rp.json, "name")))
                        json_array_append(names, json_object_get(rp.json, "name"));
                cx_respond_json(rq, 201,
                        json_pack(
                                "{s:O, s:o}", "snapshotID", json_object_get(rp.json, "id"), "names", names));
        }
        sbx_mgr_reply_done(&rp);
        json_decref(body);
}

/* listSnapshots: [{snapshotID, names}], filtered by sandboxID and name */
static void op_snapshots(cx_req *rq) {
        char sidc[32];
        const char *sid = cx_query(rq, "sandboxID") ? sbx_id_canon(cx_query(rq, "sandboxID"), sidc) : NULL,
                   *name = cx_query(rq, "name");
        sbx_mgr_reply rp;
        (void) sbx_ops_snapshot_list(rq->m, &rq->caller, &rp);
        json_t *out = json_array(), *s;
        size_t i;
        json_array_foreach(json_object_get(rp.json, "items"), i, s) {
                const char *n = json_string_value(json_object_get(s, "name"));
                if ((sid && !streq_ptr(json_string_value(json_object_get(s, "sandbox_id")), sid)) ||
                        (name && !streq_ptr(n, name)))
                        continue;
                json_t *names = json_array();
                if (n)
                        json_array_append_new(names, json_string(n));
                json_array_append_new(out,
                        json_pack("{s:O, s:o}", "snapshotID", json_object_get(s, "id"), "names", names));
        }
        sbx_mgr_reply_done(&rp);
        cx_respond_json(rq, 200, out);
}

/* fork {timeout, count}: a snapshot, then count sandboxes from it (the snapshot goes after) —
 * [{sandbox: {sandboxID, ...}} | {error: {code, message}}] */
static void op_fork(cx_req *rq, const char *id) {
        json_t *body = rq->len ? json_loadb(rq->body, rq->len, 0, NULL) : NULL;
        json_t *jc = json_object_get(body, "count"), *jto = json_object_get(body, "timeout");
        json_int_t count = json_is_integer(jc) ? json_integer_value(jc) : 1;
        json_decref(body);
        if (count < 1 || count > 16) {
                e2b_api_err(rq, 400, "count: 1 to 16");
                return;
        }
        json_t *rec = live_record(rq, id);
        if (!rec)
                return;
        sbx_mgr_reply sp;
        unsigned code = sbx_ops_snapshot_create(rq->m, &rq->caller, id, NULL, &sp);
        if (code != 201) {
                api_native_err(rq, code, sp.json);
                sbx_mgr_reply_done(&sp);
                json_decref(rec);
                return;
        }
        char snap[32];
        snprintf(snap, sizeof snap, "%s", json_string_value(json_object_get(sp.json, "id")) ?: "");
        sbx_mgr_reply_done(&sp);
        json_t *out = json_array();
        for (json_int_t k = 0; k < count; k++) {
                sbx_create_req creq = {.snapshot = snap,
                        .ttl_s = json_is_number(jto) ? json_number_value(jto) : DEFAULT_TIMEOUT_S,
                        .ttl_given = true};
                sbx_mgr_reply rp;
                unsigned c = sbx_ops_create(rq->m, &rq->caller, &creq, &rp);
                if (c != 201 && c != 200) {
                        json_array_append_new(out, json_pack("{s:{s:i, s:s}}", "error", "code", (int) c,
                                                           "message", e2b_native_message(rp.json)));
                        sbx_mgr_reply_done(&rp);
                        continue;
                }
                const char *nid = json_string_value(json_object_get(rp.json, "id")) ?: "";
                char token[65];
                cx_box_set(rq->m, nid, &rq->caller, NULL, token);
                char hid[32];
                json_t *sb = json_pack("{s:s, s:s, s:s}", "sandboxID", sbx_id_hostform(nid, hid),
                        "envdVersion", ENVD_VERSION, "envdAccessToken", token);
                ports_fields(rq, nid, sb);
                json_array_append_new(out, json_pack("{s:o}", "sandbox", sb));
                sbx_mgr_reply_done(&rp);
        }
        sbx_mgr_reply dp;
        (void) sbx_ops_snapshot_delete(rq->m, &rq->caller, snap, &dp);
        sbx_mgr_reply_done(&dp);
        cx_respond_json(rq, 200, out);
        json_decref(rec);
}

void e2b_control(cx_req *rq, const char *path) {
        if (!e2b_api_auth(rq))
                return;
        if (streq(path, "/snapshots")) {
                if (streq(rq->method, "GET"))
                        op_snapshots(rq);
                else
                        e2b_api_err(rq, 405, "use GET");
                return;
        }
        if (strncmp(path, "/templates/", 11) == 0) { /* deleteSnapshot: a snapshot's id */
                if (!mgr_valid_snapshot_id(path + 11)) {
                        e2b_api_err(rq, 404,
                                "template %.64s not found (sandboxer's templates are profiles; a "
                                "snapshot's id is snp_…)",
                                path + 11);
                        return;
                }
                sbx_mgr_reply rp;
                unsigned code = streq(rq->method, "DELETE")
                                        ? sbx_ops_snapshot_delete(rq->m, &rq->caller, path + 11, &rp)
                                        : 405;
                if (code == 200)
                        cx_respond(rq, 204, NULL, "", 0);
                else if (code == 405)
                        e2b_api_err(rq, 405, "use DELETE");
                else
                        api_native_err(rq, code, rp.json);
                if (code != 405)
                        sbx_mgr_reply_done(&rp);
                return;
        }
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST"),
             del = streq(rq->method, "DELETE");
        if (streq(path, "/sandboxes") || streq(path, "/v2/sandboxes")) {
                if (post)
                        op_create(rq);
                else if (get)
                        op_list(rq);
                else
                        e2b_api_err(rq, 405, "use GET or POST");
                return;
        }
        const char *rest = strncmp(path, "/v2/", 4) == 0 ? path + 14 : path + 11; /* after /sandboxes/ */
        char id[64];
        const char *slash = strchr(rest, '/');
        size_t l = slash ? (size_t) (slash - rest) : strlen(rest);
        if (l == 0 || l >= sizeof id) {
                e2b_api_err(rq, 404, "sandbox not found");
                return;
        }
        memcpy(id, rest, l);
        id[l] = 0;
        char canon[32];
        snprintf(id, sizeof id, "%s", sbx_id_canon(id, canon)); /* the host form it handed out */
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
        } else if (streq(sub, "/network") && streq(rq->method, "PUT"))
                e2b_op_network(rq, id);
        else if (streq(sub, "/metrics") && get)
                op_metrics(rq, id);
        else if (streq(sub, "/pause") && post)
                op_pause(rq, id);
        else if (streq(sub, "/snapshots") && post)
                op_snapshot(rq, id);
        else if (streq(sub, "/fork") && post)
                op_fork(rq, id);
        else
                e2b_api_err(
                        rq, 501, "%s %s is not implemented by sandboxer's E2B surface", rq->method, path);
}
