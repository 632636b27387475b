/* volumes.c — E2B's `Volume` and Daytona's volume service on sandboxer's volumes (docs/api.md,
 * "Volumes"): each SDK names a volume by its id; sandboxer's API by its name (the tenant's own).
 * A volume made through them has COMPAT_VOLUME_MB (neither SDK asks for a size). E2B's volume
 * content API (reading and writing a volume's files without a sandbox) is not served: a sandbox
 * that mounts the volume reads and writes it. */
#include <stdio.h>
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

static json_t *e2b_json(const json_t *v) {
        return json_pack("{s:O, s:O, s:s}", "volumeID", json_object_get(v, "id"), "name",
                json_object_get(v, "name"), "token", "");
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
                        cx_respond_json(rq, 201, e2b_json(rp.json));
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
                        cx_respond_json(rq, 200, e2b_json(v));
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
                e2b_api_err(rq, 501,
                        "%s %s is not implemented by sandboxer's E2B surface (a volume's files are read and "
                        "written by a sandbox that mounts it)",
                        rq->method, path);
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
