/* remote-sweep.c — the orphans a front may leave on the nodes and services it fronts.
 *
 * A front stores its record while another node makes the sandbox (create.c: they overlap), and
 * one that dies while a hosted service (E2B, Daytona) is making one has no id of it to ask about
 * at restart (reconcile fails its record: provision_lost). Either way the far end then holds a
 * sandbox this front has no record of. Each extension of kind sandboxer, e2b or daytona is asked,
 * when it first answers after a start and when it answers again after being lost, for what it
 * holds for this front — a node by GET /v1/sandboxes?front=NODE, E2B by the metadata and Daytona
 * by the labels the front gave it (sandboxer_front, sandboxer_id) — under every token this front
 * may use there (each tenant's own secret of that name and the server's); what this front does
 * not hold is destroyed there, logged and audited. */
#include "daemon/remote.h"

static bool held_here(sbx_mgr *m, const char *sid) {
        pthread_mutex_lock(&m->lock);
        bool known = sid && mgr_box_find_locked(m, sid, NULL) != NULL;
        pthread_mutex_unlock(&m->lock);
        return known;
}

static void orphan_gone(sbx_mgr *m, const char *ext, const char *id, unsigned *gone) {
        (*gone)++;
        sbx_log(SBX_LOG_WARNING, "remote_orphan_destroyed", "sandbox", id, "extension", ext, NULL);
        mgr_audit(m, NULL, "sandbox.destroy", id, "ok",
                "orphan: held for this front, which has no record of it");
}

/* One page of what ep holds for this front: its items (a JSON array), or NULL. */
static json_t *page(sbx_mgr *m, const remote_ep *ep, const char *target, json_t **ret_whole) {
        remote_resp r;
        char why[700] = "";
        long code = remote_call(
                m, ep, "GET", target, NULL, 0, NULL, true, NULL, NULL, 10000, &r, why, sizeof why);
        json_error_t je;
        json_t *j = code == 200 && r.body ? json_loads(r.body, 0, &je) : NULL;
        remote_resp_done(&r);
        *ret_whole = j;
        return json_is_array(j) ? j : json_object_get(j, "items");
}

static void sweep_node(sbx_mgr *m, remote_ep *ep, const char *ext, unsigned *gone) {
        char target[300], cursor[120] = "", why[700];
        for (int n = 0; n < 1000 && !mgr_stopping(m); n++) {
                snprintf(target, sizeof target, "/v1/sandboxes?front=%s&limit=500%s%s", mgr_node_id(m) ?: "",
                        cursor[0] ? "&cursor=" : "", cursor);
                json_t *whole, *it;
                json_t *items = page(m, ep, target, &whole);
                size_t k;
                json_array_foreach(items, k, it) {
                        const char *id = json_string_value(json_object_get(it, "id"));
                        if (!id || !mgr_valid_sandbox_id(id) || held_here(m, id))
                                continue;
                        char del[96];
                        snprintf(del, sizeof del, "/v1/sandboxes/%s", id);
                        remote_resp d;
                        long dc = remote_call(m, ep, "DELETE", del, NULL, 0, NULL, true, NULL, NULL, 30000,
                                &d, why, sizeof why);
                        remote_resp_done(&d);
                        if (dc == 200 || dc == 204 || dc == 404 || dc == 410)
                                orphan_gone(m, ext, id, gone);
                }
                const char *next = json_string_value(json_object_get(whole, "next_cursor"));
                bool more = next && strlen(next) < sizeof cursor && !strpbrk(next, "&#? ");
                if (more)
                        snprintf(cursor, sizeof cursor, "%s", next);
                json_decref(whole);
                if (!more)
                        break;
        }
}

/* E2B (metadata) or Daytona (labels): one page of up to 100, the rest at the next sweep. */
static void sweep_hosted(sbx_mgr *m, remote_ep *ep, const char *ext, unsigned *gone) {
        bool e2b = streq(ep->kind, "e2b");
        char filter[200], enc[600], target[700], why[700];
        if (e2b)
                snprintf(filter, sizeof filter, "sandboxer_front=%s", mgr_node_id(m) ?: "");
        else
                snprintf(filter, sizeof filter, "{\"sandboxer_front\":\"%s\"}", mgr_node_id(m) ?: "");
        size_t k = 0;
        for (const unsigned char *p = (const unsigned char *) filter; *p && k + 4 < sizeof enc; p++)
                k += (size_t) ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                               (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'
                                       ? snprintf(enc + k, sizeof enc - k, "%c", *p)
                                       : snprintf(enc + k, sizeof enc - k, "%%%02X", *p));
        enc[k] = 0;
        if (e2b)
                snprintf(target, sizeof target,
                        "/v2/sandboxes?metadata=%s&state=running%%2Cpaused&limit=100", enc);
        else
                snprintf(target, sizeof target, "/sandbox?labels=%s", enc);
        json_t *whole, *it;
        json_t *items = page(m, ep, target, &whole);
        size_t i;
        json_array_foreach(items, i, it) {
                const char *rid = json_string_value(json_object_get(it, e2b ? "sandboxID" : "id"));
                json_t *tags = json_object_get(it, e2b ? "metadata" : "labels");
                const char *sid = json_string_value(json_object_get(tags, "sandboxer_id"));
                if (!rid || !sid ||
                        !streq_ptr(json_string_value(json_object_get(tags, "sandboxer_front")),
                                mgr_node_id(m)) ||
                        held_here(m, sid))
                        continue;
                if (e2b ? e2b_teardown(m, ep, rid, why, sizeof why)
                        : daytona_teardown(m, ep, rid, why, sizeof why))
                        orphan_gone(m, ext, sid ? sid : rid, gone);
        }
        json_decref(whole);
}

unsigned remote_sweep(sbx_mgr *m, const char *ext) {
        remote_ep ep;
        char why[700] = "";
        (void) remote_ep_of(m, NULL, ext, &ep, why, sizeof why); /* the tokens come below */
        bool node = streq(ep.kind, "sandboxer");
        if ((!node && !streq(ep.kind, "e2b") && !streq(ep.kind, "daytona")) || !mgr_node_id(m))
                return 0; /* without this node's id nothing can be told to be its own */
        json_t *x = mgr_registry_entry(ext);
        const char *secret = json_string_value(json_object_get(json_object_get(x, "auth"), "secret"));
        json_t *tokens = secret ? mgr_secret_values(m, secret) : json_pack("[s]", "");
        json_decref(x);
        unsigned gone = 0;
        size_t i;
        json_t *t;
        json_array_foreach(tokens, i, t) {
                snprintf(ep.token, sizeof ep.token, "%s", json_string_value(t));
                if (node)
                        sweep_node(m, &ep, ext, &gone);
                else
                        sweep_hosted(m, &ep, ext, &gone);
        }
        json_decref(tokens);
        return gone;
}
