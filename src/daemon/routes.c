/* routes.c — the native API's routes under /v1/sandboxes, /v1/skills, /v1/snapshots and /v1/events. */
#include "daemon/mgr-internal.h"

/* ---- routing ------------------------------------------------------------------------------- */

static unsigned method_not_allowed(sbx_mgr_reply *rp, const char *allow) {
        return mgr_reply_err(rp, 405, "method_not_allowed", NULL, "use %s", allow);
}

/* The native API's requests decoded into the typed operations (ops.h). */

static unsigned list_decode(sbx_mgr *m, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        sbx_list_req req = {
                .state = rq->query(rq->ctx, "state"),
                .profile = rq->query(rq->ctx, "profile"),
                .harness = rq->query(rq->ctx, "harness"),
                .session_id = rq->query(rq->ctx, "session_id"),
                .run_id = rq->query(rq->ctx, "run_id"),
                .job_id = rq->query(rq->ctx, "job_id"),
                .front = rq->query(rq->ctx, "front"),
                .cursor = rq->query(rq->ctx, "cursor"),
        };
        const char *lim = rq->query(rq->ctx, "limit");
        if (lim) {
                char *end;
                long l = strtol(lim, &end, 10);
                if (*end || l < 1 || l > 500)
                        return mgr_reply_err(
                                rp, 400, "invalid_argument", "limit", "limit: an integer from 1 to 500");
                req.limit = (unsigned) l;
        }
        return sbx_ops_list(m, rq->who, &req, rp);
}

static unsigned ttl_decode(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, sbx_mgr_reply *rp) {
        json_t *body = mgr_parse_body(rq, rp, false);
        if (!body)
                return rp->code;
        static const char *const keys[] = {"extend_s", NULL};
        json_t *x = json_object_get(body, "extend_s");
        if (!mgr_only_keys(body, keys, "", rp))
                ;
        else if (!json_is_number(x))
                mgr_reply_err(
                        rp, 400, "invalid_argument", "extend_s", "extend_s: a positive number of seconds");
        else
                sbx_ops_extend(m, rq->who, id, json_number_value(x), rp);
        json_decref(body);
        return rp->code;
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
        if (streq(path, "/v1/skills") || streq(path, "/v1/skills/")) {
                if (post)
                        sbx_ops_skill_upload(m, rq->who,
                                rq->header ? rq->header(rq->ctx, "Content-Type") : NULL, rq->body, rq->len,
                                rp);
                else if (get)
                        sbx_ops_skill_list(m, rq->who, rp);
                else
                        method_not_allowed(rp, "GET, POST");
                return true;
        }
        if (strncmp(path, "/v1/skills/", 11) == 0) {
                const char *sid = path + 11;
                if (get)
                        sbx_ops_skill_get(m, rq->who, sid, rp);
                else if (del)
                        sbx_ops_skill_delete(m, rq->who, sid, rp);
                else
                        method_not_allowed(rp, "GET, DELETE");
                return true;
        }
        if (streq(path, "/v1/volumes") || streq(path, "/v1/volumes/")) {
                json_t *body = post ? mgr_parse_body(rq, rp, false) : NULL;
                static const char *const keys[] = {"name", "size_mb", NULL};
                json_t *jn = json_object_get(body, "name"), *js = json_object_get(body, "size_mb");
                if (get)
                        sbx_ops_volume_list(m, rq->who, rp);
                else if (!post)
                        method_not_allowed(rp, "GET, POST");
                else if (!body || !mgr_only_keys(body, keys, "", rp))
                        ; /* answered */
                else if (!json_is_string(jn))
                        mgr_reply_err(rp, 400, "invalid_argument", "name", "name: a string is required");
                else if (!json_is_number(js))
                        mgr_reply_err(rp, 400, "invalid_argument", "size_mb",
                                "size_mb: a number of MiB is required");
                else
                        sbx_ops_volume_create(m, rq->who, json_string_value(jn), json_number_value(js), rp);
                json_decref(body);
                return true;
        }
        if (strncmp(path, "/v1/volumes/", 12) == 0) {
                const char *slash = strchr(path + 12, '/');
                if (slash) {
                        char name[64];
                        if ((size_t) (slash - (path + 12)) >= sizeof name)
                                mgr_reply_err(rp, 404, "not_found", NULL, "no volume '%.64s'", path + 12);
                        else {
                                snprintf(name, sizeof name, "%.*s", (int) (slash - (path + 12)), path + 12);
                                mgr_volume_files_route(m, method, rq, name, slash, rp);
                        }
                } else if (get)
                        sbx_ops_volume_get(m, rq->who, path + 12, rp);
                else if (del)
                        sbx_ops_volume_delete(m, rq->who, path + 12, rp);
                else
                        method_not_allowed(rp, "GET, DELETE");
                return true;
        }
        if (streq(path, "/v1/hosts") || streq(path, "/v1/hosts/")) {
                json_t *body = post ? mgr_parse_body(rq, rp, false) : NULL;
                if (get)
                        sbx_ops_host_list(m, rq->who, rp);
                else if (!post)
                        method_not_allowed(rp, "GET, POST");
                else if (body)
                        sbx_ops_host_add(m, rq->who, body, rp);
                json_decref(body);
                return true;
        }
        if (strncmp(path, "/v1/hosts/", 10) == 0) {
                if (del)
                        sbx_ops_host_delete(m, rq->who, path + 10, rp);
                else
                        method_not_allowed(rp, "DELETE");
                return true;
        }
        if (streq(path, "/v1/node")) {
                if (get)
                        sbx_ops_node(m, rq->who, rp);
                else
                        method_not_allowed(rp, "GET");
                return true;
        }
        if (streq(path, "/v1/extensions") || streq(path, "/v1/extensions/")) {
                if (get)
                        sbx_ops_extensions(m, rq->who, rp);
                else
                        method_not_allowed(rp, "GET");
                return true;
        }
        if (streq(path, "/v1/route/explain")) {
                json_t *body = post ? mgr_parse_body(rq, rp, true) : NULL;
                static const char *const keys[] = {"profile", "route", NULL};
                json_t *jp = json_object_get(body, "profile");
                if (!post)
                        method_not_allowed(rp, "POST");
                else if (!body || !mgr_only_keys(body, keys, "", rp))
                        ; /* answered */
                else if (jp && !json_is_string(jp))
                        mgr_reply_err(rp, 400, "invalid_argument", "profile", "profile: a profile id");
                else
                        sbx_ops_route_explain(
                                m, rq->who, json_string_value(jp), json_object_get(body, "route"), rp);
                json_decref(body);
                return true;
        }
        if (streq(path, "/v1/offers")) {
                if (!get)
                        method_not_allowed(rp, "GET");
                else
                        sbx_ops_offers(m, rq->who, rp);
                return true;
        }
        if (streq(path, "/v1/quotes") || streq(path, "/v1/verify") || streq(path, "/v1/peers") ||
                streq(path, "/v1/deals")) {
                bool q = streq(path, "/v1/quotes"), v = streq(path, "/v1/verify"),
                     pe = streq(path, "/v1/peers"), dl = streq(path, "/v1/deals");
                json_t *body = post ? mgr_parse_body(rq, rp, false) : NULL;
                if (get && pe)
                        sbx_ops_peers(m, rq->who, rp);
                else if (get && dl)
                        sbx_ops_deals(
                                m, rq->who, rq->query(rq->ctx, "role"), rq->query(rq->ctx, "state"), rp);
                else if (!post)
                        method_not_allowed(rp, pe || dl ? "GET, POST" : "POST");
                else if (body)
                        (q           ? sbx_ops_quote
                                : v  ? sbx_ops_verify
                                : pe ? sbx_ops_peer_add
                                     : sbx_ops_deal_submit)(m, rq->who, body, rp);
                json_decref(body);
                return true;
        }
        if (strncmp(path, "/v1/peers/", 10) == 0) {
                const char *id = path + 10, *slash = strchr(id, '/');
                char node[64];
                snprintf(node, sizeof node, "%.*s", slash ? (int) (slash - id) : (int) strlen(id), id);
                if (!slash) {
                        if (del)
                                sbx_ops_peer_delete(m, rq->who, node, rp);
                        else
                                method_not_allowed(rp, "DELETE");
                } else if (streq(slash, "/deals")) {
                        json_t *body = post ? mgr_parse_body(rq, rp, false) : NULL;
                        if (!post)
                                method_not_allowed(rp, "POST");
                        else if (body)
                                sbx_ops_invoke(m, rq->who, node, body, rp);
                        json_decref(body);
                } else
                        mgr_reply_err(
                                rp, 404, "not_found", NULL, "no such endpoint: %s %.200s", method, path);
                return true;
        }
        if (strncmp(path, "/v1/deals/", 10) == 0) {
                const char *id = path + 10, *slash = strchr(id, '/');
                char deal[64];
                snprintf(deal, sizeof deal, "%.*s", slash ? (int) (slash - id) : (int) strlen(id), id);
                bool acc = streq_ptr(slash, "/accept"), rej = streq_ptr(slash, "/reject");
                if (!slash && get)
                        sbx_ops_task(m, rq->who, deal, NULL, NULL, rp);
                else if (!slash)
                        method_not_allowed(rp, "GET");
                else if (!acc && !rej)
                        mgr_reply_err(
                                rp, 404, "not_found", NULL, "no such endpoint: %s %.200s", method, path);
                else if (!post)
                        method_not_allowed(rp, "POST");
                else {
                        json_t *body = mgr_parse_body(rq, rp, true);
                        if (body)
                                sbx_ops_deal_decide(m, rq->who, deal, acc, body, rp);
                        json_decref(body);
                }
                return true;
        }
        if (strncmp(path, "/v1/tasks/", 10) == 0) {
                if (!get)
                        method_not_allowed(rp, "GET");
                else
                        sbx_ops_task(m, rq->who, path + 10, rq->query(rq->ctx, "wait"),
                                rq->query(rq->ctx, "state"), rp);
                return true;
        }
        if (streq(path, "/v1/meters")) {
                if (!get)
                        method_not_allowed(rp, "GET");
                else
                        sbx_ops_meters(m, rq->who, rq->query(rq->ctx, "sandbox"), rq->query(rq->ctx, "from"),
                                rq->query(rq->ctx, "to"), rq->query(rq->ctx, "tenant"),
                                rq->query(rq->ctx, "by"), rp);
                return true;
        }
        if (streq(path, "/v1/credits")) {
                if (!get)
                        method_not_allowed(rp, "GET");
                else
                        sbx_ops_credits(m, rq->who, rq->query(rq->ctx, "tenant"), rp);
                return true;
        }
        if (streq(path, "/v1/credits/grant")) {
                json_t *body = post ? mgr_parse_body(rq, rp, false) : NULL;
                if (!post)
                        method_not_allowed(rp, "POST");
                else if (body)
                        sbx_ops_credit_grant(m, rq->who, body, rp);
                json_decref(body);
                return true;
        }
        if (streq(path, "/v1/ledger")) {
                if (!get)
                        method_not_allowed(rp, "GET");
                else
                        sbx_ops_ledger(
                                m, rq->who, rq->query(rq->ctx, "cursor"), rq->query(rq->ctx, "limit"), rp);
                return true;
        }
        if (streq(path, "/v1/estimate")) {
                json_t *body = post ? mgr_parse_body(rq, rp, false) : NULL;
                static const char *const keys[] = {"profile", "duration_s", "route", NULL};
                json_t *jp = json_object_get(body, "profile"), *jd = json_object_get(body, "duration_s");
                if (!post)
                        method_not_allowed(rp, "POST");
                else if (!body || !mgr_only_keys(body, keys, "", rp))
                        ; /* answered */
                else if (jp && !json_is_string(jp))
                        mgr_reply_err(rp, 400, "invalid_argument", "profile", "profile: a profile id");
                else if (!json_is_number(jd))
                        mgr_reply_err(rp, 400, "invalid_argument", "duration_s",
                                "duration_s: a number of seconds (required)");
                else
                        sbx_ops_estimate(m, rq->who, json_string_value(jp), json_number_value(jd),
                                json_object_get(body, "route"), rp);
                json_decref(body);
                return true;
        }
        if (streq(path, "/v1/webhooks/key")) {
                if (get)
                        sbx_ops_webhook_key(m, rq->who, rp);
                else
                        method_not_allowed(rp, "GET");
                return true;
        }
        if (streq(path, "/v1/secrets") || streq(path, "/v1/secrets/")) {
                if (get)
                        sbx_ops_secret_list(m, rq->who, rp);
                else
                        method_not_allowed(rp, "GET");
                return true;
        }
        if (strncmp(path, "/v1/secrets/", 12) == 0) {
                if (put)
                        sbx_ops_secret_put(m, rq->who, path + 12, rq->body, rq->len, rp);
                else if (del)
                        sbx_ops_secret_delete(m, rq->who, path + 12, rp);
                else
                        method_not_allowed(rp, "PUT, DELETE (a secret is write-only)");
                return true;
        }
        if (streq(path, "/v1/snapshots") || streq(path, "/v1/snapshots/")) {
                if (get)
                        sbx_ops_snapshot_list(m, rq->who, rp);
                else
                        method_not_allowed(rp, "GET");
                return true;
        }
        if (strncmp(path, "/v1/snapshots/", 14) == 0) {
                if (get)
                        sbx_ops_snapshot_get(m, rq->who, path + 14, rp);
                else if (del)
                        sbx_ops_snapshot_delete(m, rq->who, path + 14, rp);
                else
                        method_not_allowed(rp, "GET, DELETE");
                return true;
        }
        if (streq(path, "/v1/sandboxes") || streq(path, "/v1/sandboxes/")) {
                if (post)
                        mgr_op_create(m, rq, rp);
                else if (get)
                        list_decode(m, rq, rp);
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
        char canon[32];
        snprintf(id, sizeof id, "%s", sbx_id_canon(id, canon)); /* "sbx-HEX" (E2B's host form) too */
        const char *sub = slash ? slash : "";
        /* lowest-latency's second measure: the time of each sandbox's first exec (route.c) */
        char fx_ext[72];
        bool fx = post && streq(sub, "/exec") && mgr_route_first_exec(m, id, rq->who->tenant, fx_ext);
        int64_t fx_t0 = mgr_now_ms();
        if (mgr_remote_route(m, method, id, sub, rq, rp)) { /* held by another node: passed on */
                if (fx && rp->code == 200)
                        mgr_route_observe_exec(fx_ext, (double) (mgr_now_ms() - fx_t0));
                return true;
        }
        if (!*sub) {
                if (get)
                        sbx_ops_get(m, rq->who, id, rp);
                else if (del)
                        sbx_ops_destroy(m, rq->who, id, rp);
                else
                        method_not_allowed(rp, "GET, DELETE");
        } else if (streq(sub, "/exec")) {
                if (post) {
                        mgr_op_exec(m, rq, id, rp);
                        if (fx && rp->code == 200)
                                mgr_route_observe_exec(fx_ext, (double) (mgr_now_ms() - fx_t0));
                } else
                        method_not_allowed(rp, "POST");
        } else if (streq(sub, "/execs") || strncmp(sub, "/execs/", 7) == 0) {
                char eid[32] = "";
                const char *e = sub[6] == '/' ? sub + 7 : NULL, *action = e ? strchr(e, '/') : NULL;
                size_t el = e ? (action ? (size_t) (action - e) : strlen(e)) : 0;
                if (e && (el != 20 || strncmp(e, "exe_", 4) != 0))
                        mgr_reply_err(rp, 404, "not_found", NULL, "no exec '%.64s'", e);
                else if (e)
                        memcpy(eid, e, el);
                if (e && rp->code)
                        ;
                else if (!action) {
                        if (!get)
                                method_not_allowed(rp, "GET");
                        else
                                sbx_ops_execs(m, rq->who, id, e ? eid : NULL, rp);
                } else if (streq(action, "/attach")) {
                        if (!get)
                                method_not_allowed(rp, "GET");
                        else
                                mgr_op_pty_attach(m, rq, id, eid, rp);
                } else if (streq(action, "/input") || streq(action, "/resize")) {
                        if (!post)
                                method_not_allowed(rp, "POST");
                        else
                                mgr_op_pty_write(m, rq, id, eid, streq(action, "/resize"), rp);
                } else
                        mgr_reply_err(
                                rp, 404, "not_found", NULL, "no such endpoint: %s %.200s", method, path);
        } else if (streq(sub, "/files")) {
                if (put || post)
                        sbx_ops_file_write(
                                m, rq->who, id, rq->query(rq->ctx, "path"), rq->body, rq->len, rp);
                else if (get)
                        sbx_ops_file_read(m, rq->who, id, rq->query(rq->ctx, "path"), rp);
                else
                        method_not_allowed(rp, "GET, PUT, POST");
        } else if (streq(sub, "/ttl")) {
                if (post)
                        ttl_decode(m, rq, id, rp);
                else
                        method_not_allowed(rp, "POST");
        } else if (streq(sub, "/metrics")) {
                if (get)
                        sbx_ops_metrics(m, rq->who, id, rp);
                else
                        method_not_allowed(rp, "GET");
        } else if (streq(sub, "/metadata")) {
                json_t *body = put ? mgr_parse_body(rq, rp, false) : NULL;
                if (!put)
                        method_not_allowed(rp, "PUT");
                else if (body)
                        sbx_ops_set_metadata(m, rq->who, id, body, rp);
                json_decref(body);
        } else if (streq(sub, "/network")) {
                json_t *body = put ? mgr_parse_body(rq, rp, false) : NULL;
                sbx_network_req net = {0};
                if (!put)
                        method_not_allowed(rp, "PUT");
                else if (body && mgr_network_decode(body, "", &net, rp))
                        sbx_ops_set_network(m, rq->who, id, &net, rp);
                sbx_network_req_done(&net);
                json_decref(body);
        } else if (streq(sub, "/previews")) {
                if (post)
                        mgr_op_previews(m, rq, id, NULL, rp);
                else
                        method_not_allowed(rp, "POST");
        } else if (strncmp(sub, "/previews/", 10) == 0 && sub[10]) {
                if (del)
                        mgr_op_previews(m, rq, id, sub + 10, rp);
                else
                        method_not_allowed(rp, "DELETE");
        } else if (streq(sub, "/recreate")) {
                if (post)
                        sbx_ops_recreate(m, rq->who, id, rp);
                else
                        method_not_allowed(rp, "POST");
        } else if (streq(sub, "/snapshot")) {
                json_t *body = post && rq->len ? mgr_parse_body(rq, rp, false) : NULL;
                static const char *const keys[] = {"name", NULL};
                json_t *jn = json_object_get(body, "name");
                if (!post)
                        method_not_allowed(rp, "POST");
                else if (rq->len && !body)
                        ; /* answered */
                else if (body && !mgr_only_keys(body, keys, "", rp))
                        ;
                else if (jn && !json_is_string(jn))
                        mgr_reply_err(rp, 400, "invalid_argument", "name", "name: a string");
                else
                        sbx_ops_snapshot_create(m, rq->who, id, json_string_value(jn), rp);
                json_decref(body);
        } else if (streq(sub, "/lifecycle")) {
                json_t *body = put ? mgr_parse_body(rq, rp, false) : NULL;
                static const char *const keys[] = {
                        "idle_s", "on_idle", "paused_max_s", "on_paused_max", NULL};
                json_t *ji = json_object_get(body, "idle_s"), *jo = json_object_get(body, "on_idle"),
                       *jp = json_object_get(body, "paused_max_s"),
                       *jm = json_object_get(body, "on_paused_max");
                const char *on = json_string_value(jo), *onm = json_string_value(jm);
                if (!put)
                        method_not_allowed(rp, "PUT");
                else if (!body || !mgr_only_keys(body, keys, "", rp))
                        ; /* answered */
                else if ((ji && !json_is_number(ji)) || (jp && !json_is_number(jp)))
                        mgr_reply_err(rp, 400, "invalid_argument",
                                ji && !json_is_number(ji) ? "idle_s" : "paused_max_s",
                                "a number of seconds");
                else if (jo && !(on && (streq(on, "pause") || streq(on, "destroy"))))
                        mgr_reply_err(
                                rp, 400, "invalid_argument", "on_idle", "on_idle: \"destroy\" or \"pause\"");
                else if (jm && !(onm && (streq(onm, "snapshot") || streq(onm, "destroy"))))
                        mgr_reply_err(rp, 400, "invalid_argument", "on_paused_max",
                                "on_paused_max: \"destroy\" or \"snapshot\"");
                else {
                        sbx_lifecycle_req lc = {.idle_s = json_number_value(ji),
                                .paused_max_s = json_number_value(jp),
                                .idle_pause = on && streq(on, "pause"),
                                .has_idle = ji != NULL,
                                .has_on_idle = jo != NULL,
                                .has_paused_max = jp != NULL,
                                .paused_snapshot = onm && streq(onm, "snapshot"),
                                .has_on_paused_max = jm != NULL};
                        sbx_ops_set_lifecycle(m, rq->who, id, &lc, rp);
                }
                json_decref(body);
        } else if (streq(sub, "/pause") || streq(sub, "/resume")) {
                if (post)
                        (streq(sub, "/pause") ? sbx_ops_pause : sbx_ops_resume)(m, rq->who, id, rp);
                else
                        method_not_allowed(rp, "POST");
        } else
                mgr_reply_err(rp, 404, "not_found", NULL, "no such endpoint: %s %.200s", method, path);
        return true;
}
