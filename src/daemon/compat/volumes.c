/* volumes.c — E2B's `Volume` and Daytona's volume service on sandboxer's volumes (docs/api.md,
 * "Volumes"): each SDK names a volume by its id; sandboxer's API by its name (the tenant's own).
 * A volume made through them has COMPAT_VOLUME_MB (neither SDK asks for a size). E2B's volume
 * content API (/volumecontent/ID/{dir,path,file}: a volume's files without a sandbox) is the
 * native /v1/volumes/NAME/{dir,stat,files}, authenticated by the volume's own token (what
 * Volume.create and getInfo answer) or by an API key of its tenant. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/compat/compat.h"
#include "daemon/compat/daytona-internal.h"
#include "daemon/compat/e2b-internal.h"

#define COMPAT_VOLUME_MB 256

/* The caller's volume whose id is id: its record (NULL: none). */
static json_t *by_id(cx_req *rq, const char *id) {
        sbx_mgr_reply rp;
        (void) sbx_ops_volume_list(rq->m, &rq->caller, &rp);
        json_t *v, *found = NULL;
        size_t i;
        json_array_foreach(json_object_get(rp.json, "items"), i,
                v) if (!found && streq_ptr(json_string_value(json_object_get(v, "id")), id)) found =
                json_incref(v);
        sbx_mgr_reply_done(&rp);
        return found;
}

const char *cx_volume_name(cx_req *rq, const char *id, char *buf, size_t size) {
        json_t *v = by_id(rq, id);
        snprintf(buf, size, "%s", json_string_value(json_object_get(v, "name")) ?: "");
        json_decref(v);
        return *buf ? buf : NULL;
}

static json_t *e2b_json(cx_req *rq, const json_t *v) {
        char token[36] = "";
        (void) sbx_ops_volume_token(rq->m, v, token);
        return json_pack("{s:O, s:O, s:s}", "volumeID", json_object_get(v, "id"), "name",
                json_object_get(v, "name"), "token", token);
}

static bool query_ll(cx_req *rq, const char *key, long long *ret) {
        const char *s = cx_query(rq, key);
        char *end = NULL;
        *ret = -1;
        if (!s || !*s)
                return true;
        errno = 0;
        long long x = strtoll(s, &end, 10);
        if (*end || errno || x < 0) {
                e2b_api_err(rq, 400, "%s: a whole number (not '%.32s')", key, s);
                return false;
        }
        *ret = x;
        return true;
}

/* /volumecontent/ID/{dir,path,file}: E2B's volume content API. */
void e2b_volume_content(cx_req *rq, const char *path) {
        const char *rest = path + strlen("/volumecontent/"), *slash = strchr(rest, '/');
        char id[64];
        if (!slash || (size_t) (slash - rest) >= sizeof id) {
                e2b_api_err(rq, 404, "no such endpoint: %.200s", path);
                return;
        }
        snprintf(id, sizeof id, "%.*s", (int) (slash - rest), rest);
        const char *auth = cx_header(rq, "Authorization"), *key = cx_header(rq, "X-API-KEY");
        json_t *v = NULL;
        if (auth && strncmp(auth, "Bearer ", 7) == 0 && (v = sbx_ops_volume_by_token(rq->m, id, auth + 7))) {
                snprintf(rq->caller.kind, sizeof rq->caller.kind, "agt");
                snprintf(rq->caller.name, sizeof rq->caller.name, "volume-token:%s", id);
                snprintf(rq->caller.tenant, sizeof rq->caller.tenant, "%s",
                        json_string_value(json_object_get(v, "tenant")) ?: "default");
        } else if (key ? cx_auth_token(rq, key) : false)
                v = by_id(rq, id);
        else {
                e2b_api_err(rq, 401, "%s",
                        auth ? "the volume token does not open this volume (Volume.getInfo answers its "
                               "token)"
                             : "a volume token (Authorization: Bearer) or an API key (X-API-KEY) is "
                               "required");
                return;
        }
        if (!v) {
                e2b_api_err(rq, 404, "volume %.64s not found", id);
                return;
        }
        const char *m = rq->method, *what = slash + 1;
        sbx_volf_req r = {.path = cx_query(rq, "path"), .depth = 1, .uid = -1, .gid = -1, .mode = -1};
        long long depth = -1;
        bool ok = true, meta = false;
        if (streq(what, "dir") && streq(m, "GET")) {
                r.op = SBX_VOLF_LIST;
                ok = query_ll(rq, "depth", &depth);
                r.depth = depth < 1 ? 1 : depth > 16 ? 16 : (int) depth;
        } else if (streq(what, "dir") && streq(m, "POST")) {
                r.op = SBX_VOLF_MKDIR;
                r.parents = streq_ptr(cx_query(rq, "force"), "true");
                meta = true;
        } else if (streq(what, "path") && (streq(m, "GET") || streq(m, "DELETE")))
                r.op = streq(m, "GET") ? SBX_VOLF_STAT : SBX_VOLF_REMOVE;
        else if (streq(what, "path") && streq(m, "PATCH")) {
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
                long long *dst[] = {&r.uid, &r.gid, &r.mode};
                const char *keys[] = {"uid", "gid", "mode"};
                for (size_t i = 0; i < 3 && ok; i++) {
                        json_t *x = json_object_get(body, keys[i]);
                        if (x && !json_is_null(x) && (!json_is_integer(x) || json_integer_value(x) < 0)) {
                                e2b_api_err(rq, 400, "%s: a whole number", keys[i]);
                                ok = false;
                        } else if (x && json_is_integer(x))
                                *dst[i] = json_integer_value(x);
                }
                if (!body) {
                        e2b_api_err(rq, 400, "a JSON body {uid?, gid?, mode?} is required");
                        ok = false;
                }
                json_decref(body);
                r.op = SBX_VOLF_CHMETA;
        } else if (streq(what, "file") && (streq(m, "GET") || streq(m, "PUT"))) {
                r.op = streq(m, "GET") ? SBX_VOLF_READ : SBX_VOLF_WRITE;
                r.data = rq->body ? rq->body : "";
                r.len = rq->len;
                meta = r.op == SBX_VOLF_WRITE;
        } else {
                e2b_api_err(rq, 404, "no such endpoint: %s %.200s", m, path);
                ok = false;
        }
        if (ok && meta)
                ok = query_ll(rq, "uid", &r.uid) && query_ll(rq, "gid", &r.gid) &&
                     query_ll(rq, "mode", &r.mode);
        if (ok) {
                sbx_mgr_reply rp;
                unsigned code = sbx_ops_volume_files(
                        rq->m, &rq->caller, json_string_value(json_object_get(v, "name")), &r, &rp);
                if (code >= 300)
                        e2b_api_err(rq, code, "%s", e2b_native_message(rp.json));
                else if (r.op == SBX_VOLF_READ)
                        cx_respond(rq, 200, "application/octet-stream", rp.raw, rp.raw_len);
                else if (r.op == SBX_VOLF_REMOVE)
                        cx_respond(rq, 204, NULL, "", 0);
                else if (r.op == SBX_VOLF_LIST)
                        cx_respond_json(rq, 200, json_incref(json_object_get(rp.json, "items")));
                else
                        cx_respond_json(rq, code, json_incref(rp.json));
                sbx_mgr_reply_done(&rp);
        }
        json_decref(v);
}

void e2b_volumes(cx_req *rq, const char *path) {
        const char *id = strncmp(path, "/volumes/", 9) == 0 ? path + 9 : NULL;
        sbx_mgr_reply rp;
        if (!id && streq(rq->method, "POST")) {
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
                const char *name = json_string_value(json_object_get(body, "name"));
                unsigned code =
                        name ? sbx_ops_volume_create(rq->m, &rq->caller, name, COMPAT_VOLUME_MB, &rp) : 400;
                if (!name)
                        e2b_api_err(rq, 400, "name: a string is required");
                else if (code == 201)
                        cx_respond_json(rq, 201, e2b_json(rq, rp.json));
                else
                        e2b_api_err(rq, code, "%s", e2b_native_message(rp.json));
                if (name)
                        sbx_mgr_reply_done(&rp);
                json_decref(body);
        } else if (!id && streq(rq->method, "GET")) {
                (void) sbx_ops_volume_list(rq->m, &rq->caller, &rp);
                json_t *out = json_array(), *v;
                size_t i;
                json_array_foreach(json_object_get(rp.json, "items"), i, v) json_array_append_new(
                        out, json_pack("{s:O, s:O}", "volumeID", json_object_get(v, "id"), "name",
                                     json_object_get(v, "name")));
                sbx_mgr_reply_done(&rp);
                cx_respond_json(rq, 200, out);
        } else if (id && !strchr(id, '/') && (streq(rq->method, "GET") || streq(rq->method, "DELETE"))) {
                json_t *v = by_id(rq, id);
                if (!v)
                        e2b_api_err(rq, 404, "volume %.64s not found", id);
                else if (streq(rq->method, "GET"))
                        cx_respond_json(rq, 200, e2b_json(rq, v));
                else {
                        unsigned code = sbx_ops_volume_delete(
                                rq->m, &rq->caller, json_string_value(json_object_get(v, "name")), &rp);
                        if (code == 200)
                                cx_respond(rq, 204, NULL, "", 0);
                        else
                                e2b_api_err(rq, code, "%s", e2b_native_message(rp.json));
                        sbx_mgr_reply_done(&rp);
                }
                json_decref(v);
        } else
                e2b_api_err(
                        rq, 501, "%s %s is not implemented by sandboxer's E2B surface", rq->method, path);
}

static json_t *dt_json(cx_req *rq, const json_t *v) {
        return json_pack("{s:O, s:O, s:s, s:s, s:O, s:O, s:n, s:n}", "id", json_object_get(v, "id"), "name",
                json_object_get(v, "name"), "organizationId", rq->caller.tenant, "state", "ready",
                "createdAt", json_object_get(v, "created_at"), "updatedAt", json_object_get(v, "created_at"),
                "lastUsedAt", "errorReason");
}

void dt_volumes(cx_req *rq, const char *path) {
        const char *rest = strncmp(path, "/volumes/", 9) == 0 ? path + 9 : NULL;
        sbx_mgr_reply rp;
        if (!rest && streq(rq->method, "POST")) {
                json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
                const char *name = json_string_value(json_object_get(body, "name"));
                unsigned code =
                        name ? sbx_ops_volume_create(rq->m, &rq->caller, name, COMPAT_VOLUME_MB, &rp) : 400;
                if (!name)
                        cx_daytona_err(rq, 400, "name: a string is required");
                else if (code == 201)
                        cx_respond_json(rq, 200, dt_json(rq, rp.json));
                else
                        dt_native_err(rq, code, rp.json);
                if (name)
                        sbx_mgr_reply_done(&rp);
                json_decref(body);
        } else if (!rest && streq(rq->method, "GET")) {
                (void) sbx_ops_volume_list(rq->m, &rq->caller, &rp);
                json_t *out = json_array(), *v;
                size_t i;
                json_array_foreach(json_object_get(rp.json, "items"), i, v)
                        json_array_append_new(out, dt_json(rq, v));
                sbx_mgr_reply_done(&rp);
                cx_respond_json(rq, 200, out);
        } else if (rest && strncmp(rest, "by-name/", 8) == 0 && streq(rq->method, "GET")) {
                if (sbx_ops_volume_get(rq->m, &rq->caller, rest + 8, &rp) == 200)
                        cx_respond_json(rq, 200, dt_json(rq, rp.json));
                else
                        cx_daytona_err(rq, 404, "Volume with name %.64s not found", rest + 8);
                sbx_mgr_reply_done(&rp);
        } else if (rest && !strchr(rest, '/') && (streq(rq->method, "GET") || streq(rq->method, "DELETE"))) {
                json_t *v = by_id(rq, rest);
                if (!v)
                        cx_daytona_err(rq, 404, "Volume with ID %.64s not found", rest);
                else if (streq(rq->method, "GET"))
                        cx_respond_json(rq, 200, dt_json(rq, v));
                else {
                        unsigned code = sbx_ops_volume_delete(
                                rq->m, &rq->caller, json_string_value(json_object_get(v, "name")), &rp);
                        if (code == 200)
                                cx_respond(rq, 200, "application/json", "", 0);
                        else
                                dt_native_err(rq, code, rp.json);
                        sbx_mgr_reply_done(&rp);
                }
                json_decref(v);
        } else
                cx_daytona_err(rq, 501, "%s %s is not implemented by sandboxer's Daytona surface",
                        rq->method, path);
}
