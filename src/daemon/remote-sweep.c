/* remote-sweep.c — the orphans a front may leave on the nodes it fronts. */
#include "daemon/remote.h"

/* A front stores its record while the back end makes the sandbox (create.c: they overlap), so
 * one that dies in that instant leaves a sandbox there it has no record of. Each node of kind
 * sandboxer is asked, when it first answers and when it answers again after being lost, for the
 * sandboxes it holds for this front (GET /v1/sandboxes?front=NODE, under every token this front
 * may use there: the tenants' own and the server's); those this front does not hold are
 * destroyed there. */
unsigned remote_sweep(sbx_mgr *m, const char *ext) {
        remote_ep ep;
        char why[700] = "";
        (void) remote_ep_of(m, NULL, ext, &ep, why, sizeof why); /* the tokens come below */
        json_t *x = mgr_registry_entry(ext);
        const char *secret = json_string_value(json_object_get(json_object_get(x, "auth"), "secret"));
        json_t *tokens = secret ? mgr_secret_values(m, secret) : json_pack("[s]", "");
        json_decref(x);
        unsigned gone = 0;
        size_t i;
        json_t *t;
        json_array_foreach(tokens, i, t) {
                snprintf(ep.token, sizeof ep.token, "%s", json_string_value(t));
                char target[300], cursor[120] = "";
                for (int page = 0; page < 1000 && !mgr_stopping(m); page++) {
                        snprintf(target, sizeof target, "/v1/sandboxes?front=%s&limit=500%s%s",
                                mgr_node_id(m) ?: "", cursor[0] ? "&cursor=" : "", cursor);
                        remote_resp r;
                        long code = remote_call(m, &ep, "GET", target, NULL, 0, NULL, true, NULL, NULL,
                                10000, &r, why, sizeof why);
                        json_error_t je;
                        json_t *list = code == 200 && r.body ? json_loads(r.body, 0, &je) : NULL;
                        remote_resp_done(&r);
                        size_t k;
                        json_t *it;
                        json_array_foreach(json_object_get(list, "items"), k, it) {
                                const char *id = json_string_value(json_object_get(it, "id"));
                                if (!id || !mgr_valid_sandbox_id(id))
                                        continue;
                                pthread_mutex_lock(&m->lock);
                                bool known = mgr_box_find_locked(m, id, NULL) != NULL;
                                pthread_mutex_unlock(&m->lock);
                                if (known)
                                        continue;
                                char del[96];
                                snprintf(del, sizeof del, "/v1/sandboxes/%s", id);
                                remote_resp d;
                                long dc = remote_call(m, &ep, "DELETE", del, NULL, 0, NULL, true, NULL, NULL,
                                        30000, &d, why, sizeof why);
                                remote_resp_done(&d);
                                if (dc == 200 || dc == 204 || dc == 404 || dc == 410) {
                                        gone++;
                                        sbx_log(SBX_LOG_WARNING, "remote_orphan_destroyed", "sandbox", id,
                                                "extension", ext, NULL);
                                        mgr_audit(m, NULL, "sandbox.destroy", id, "ok",
                                                "orphan: held for this front, which has no record of it");
                                }
                        }
                        const char *next = json_string_value(json_object_get(list, "next_cursor"));
                        bool more = next && strlen(next) < sizeof cursor && !strpbrk(next, "&#? ");
                        if (more)
                                snprintf(cursor, sizeof cursor, "%s", next);
                        json_decref(list);
                        if (!more)
                                break;
                }
        }
        json_decref(tokens);
        return gone;
}
