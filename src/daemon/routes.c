/* routes.c — the native API's routes under /v1/sandboxes and /v1/events. */
#include "daemon/mgr-internal.h"

/* ---- routing ------------------------------------------------------------------------------- */

static unsigned method_not_allowed(sbx_mgr_reply *rp, const char *allow) {
        return mgr_reply_err(rp, 405, "method_not_allowed", NULL, "use %s", allow);
}

bool sbx_mgr_route(
        sbx_mgr *m, const char *method, const char *path, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        rp->stream_fd = -1;
        bool get = streq(method, "GET"), post = streq(method, "POST"), put = streq(method, "PUT"),
             del = streq(method, "DELETE");
        if (streq(path, "/v1/events")) {
                if (!get)
                        method_not_allowed(rp, "GET");
                else
                        mgr_op_events(m, rq, rp);
                return true;
        }
        if (streq(path, "/v1/sandboxes") || streq(path, "/v1/sandboxes/")) {
                if (post)
                        mgr_op_create(m, rq, rp);
                else if (get)
                        mgr_op_list(m, rq, rp);
                else
                        method_not_allowed(rp, "GET, POST");
                return true;
        }
        if (strncmp(path, "/v1/sandboxes/", 14) != 0)
                return false;
        char id[64];
        const char *rest = path + 14, *slash = strchr(rest, '/');
        size_t l = slash ? (size_t) (slash - rest) : strlen(rest);
        if (l == 0 || l >= sizeof id) {
                mgr_reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", rest);
                return true;
        }
        memcpy(id, rest, l);
        id[l] = 0;
        const char *sub = slash ? slash : "";
        if (!*sub) {
                if (get)
                        mgr_op_get(m, rq, id, rp);
                else if (del)
                        mgr_op_destroy(m, rq, id, rp);
                else
                        method_not_allowed(rp, "GET, DELETE");
        } else if (streq(sub, "/exec")) {
                if (post)
                        mgr_op_exec(m, rq, id, rp);
                else
                        method_not_allowed(rp, "POST");
        } else if (streq(sub, "/execs") || strncmp(sub, "/execs/", 7) == 0) {
                const char *eid = sub[6] == '/' ? sub + 7 : NULL;
                if (!get)
                        method_not_allowed(rp, "GET");
                else if (eid && (strlen(eid) != 20 || strncmp(eid, "exe_", 4) != 0))
                        mgr_reply_err(rp, 404, "not_found", NULL, "no exec '%.64s'", eid);
                else
                        mgr_op_execs(m, rq, id, eid, rp);
        } else if (streq(sub, "/files")) {
                if (put || post)
                        mgr_op_files(m, rq, id, true, rp);
                else if (get)
                        mgr_op_files(m, rq, id, false, rp);
                else
                        method_not_allowed(rp, "GET, PUT, POST");
        } else if (streq(sub, "/ttl")) {
                if (post)
                        mgr_op_ttl(m, rq, id, rp);
                else
                        method_not_allowed(rp, "POST");
        } else if (streq(sub, "/recreate")) {
                if (post)
                        mgr_op_recreate(m, rq, id, rp);
                else
                        method_not_allowed(rp, "POST");
        } else
                mgr_reply_err(rp, 404, "not_found", NULL, "no such endpoint: %s %.200s", method, path);
        return true;
}
