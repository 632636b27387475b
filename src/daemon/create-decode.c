/* create-decode.c — POST /v1/sandboxes decoded into the typed create (ops.h): every key checked,
 * each bad one named; sbx_ops_create (create.c) does the rest. */
#include "daemon/mgr-internal.h"

/* setup_metadata.secret_refs: at most 32 secret names, each once. */
static bool mgr_secret_refs_ok(json_t *refs, sbx_mgr_reply *rp) {
        json_t *x;
        size_t i;
        if (!json_is_array(refs) || json_array_size(refs) > 32) {
                mgr_reply_err(rp, 400, "invalid_argument", "setup_metadata.secret_refs",
                        "setup_metadata.secret_refs: an array of at most 32 secret names");
                return false;
        }
        json_array_foreach(refs, i, x) {
                const char *n = json_string_value(x);
                bool dup = false;
                for (size_t k = 0; k < i && n; k++)
                        dup = dup || streq_ptr(json_string_value(json_array_get(refs, k)), n);
                if (!mgr_secret_name_ok(n) || dup) {
                        mgr_reply_err(rp, 400, "invalid_argument", "setup_metadata.secret_refs",
                                "setup_metadata.secret_refs[%zu]: %s", i,
                                dup ? "named twice" : "a secret's name: 1 to 128 of [A-Za-z0-9._-]");
                        return false;
                }
        }
        return true;
}

/* POST /v1/sandboxes: the body decoded into a create request (its keys and their types), then
 * the typed operation. */
unsigned mgr_op_create(sbx_mgr *m, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        json_t *body = mgr_parse_body(rq, rp, true);
        if (!body)
                return rp->code;
        static const char *const keys[] = {"profile", "ttl_s", "ttl", "consumer", "metadata", "network",
                "skill", "on_expiry", "auto_resume", "snapshot", "volumes", "scope", "workspace", "inputs",
                "setup_metadata", "webhook", "route", NULL};
        static const char *const wkeys[] = {"mode", "access", NULL}, *const skeys[] = {"instructions",
                                                                             "instructions_ref",
                                                                             "secret_refs", NULL};
        json_t *jp = json_object_get(body, "profile"), *jt = json_object_get(body, "ttl_s"),
               *jc = json_object_get(body, "consumer"), *jm = json_object_get(body, "metadata"),
               *js = json_object_get(body, "skill"), *jx = json_object_get(body, "on_expiry"),
               *ja = json_object_get(body, "auto_resume"), *jsn = json_object_get(body, "snapshot");
        json_t *jtt = json_object_get(body, "ttl"), *jsc = json_object_get(body, "scope"),
               *jw = json_object_get(body, "workspace"), *ji = json_object_get(body, "inputs"),
               *jsm = json_object_get(body, "setup_metadata"), *jrefs = json_object_get(jsm, "secret_refs");
        const char *wmode = json_string_value(json_object_get(jw, "mode")),
                   *wacc = json_string_value(json_object_get(jw, "access")), *scope = json_string_value(jsc);
        double ttl_str_s = 0;
        sbx_network_req net = {0};
        if (!mgr_only_keys(body, keys, "", rp))
                ;
        else if (jt && jtt)
                mgr_reply_err(rp, 400, "invalid_argument", "ttl", "ttl and ttl_s: give one of them");
        else if (jtt &&
                 (!json_is_string(jtt) || sbx_parse_duration(json_string_value(jtt), &ttl_str_s) < 0 ||
                         !(ttl_str_s > 0)))
                mgr_reply_err(rp, 400, "invalid_argument", "ttl",
                        "ttl: a duration such as \"2h\", \"30m\" or \"90s\" (or ttl_s, a number of "
                        "seconds)");
        else if (jsc &&
                 !(scope && (streq(scope, "session") || streq(scope, "agent") || streq(scope, "shared"))))
                mgr_reply_err(
                        rp, 400, "invalid_argument", "scope", "scope: \"session\", \"agent\" or \"shared\"");
        else if (jw && (!json_is_object(jw) || !mgr_only_keys(jw, wkeys, "workspace.", rp)))
                rp->code ? (void) 0
                         : (void) mgr_reply_err(rp, 400, "invalid_argument", "workspace",
                                   "workspace: an object {mode: mirror|remote-canonical, access: "
                                   "none|ro|rw}");
        else if (json_object_get(jw, "mode") &&
                 !(wmode && (streq(wmode, "mirror") || streq(wmode, "remote-canonical"))))
                mgr_reply_err(rp, 400, "invalid_argument", "workspace.mode",
                        "workspace.mode: \"mirror\" or \"remote-canonical\"");
        else if (json_object_get(jw, "access") &&
                 !(wacc && (streq(wacc, "none") || streq(wacc, "ro") || streq(wacc, "rw"))))
                mgr_reply_err(rp, 400, "invalid_argument", "workspace.access",
                        "workspace.access: \"none\", \"ro\" or \"rw\"");
        else if (ji && !json_is_object(ji))
                mgr_reply_err(rp, 400, "invalid_argument", "inputs", "inputs: an object");
        else if (jsm && (!json_is_object(jsm) || !mgr_only_keys(jsm, skeys, "setup_metadata.", rp)))
                rp->code ? (void) 0
                         : (void) mgr_reply_err(rp, 400, "invalid_argument", "setup_metadata",
                                   "setup_metadata: an object {instructions?, instructions_ref?, "
                                   "secret_refs?}");
        else if ((json_object_get(jsm, "instructions") &&
                         !json_is_string(json_object_get(jsm, "instructions"))) ||
                 (json_object_get(jsm, "instructions_ref") &&
                         !json_is_string(json_object_get(jsm, "instructions_ref"))))
                mgr_reply_err(rp, 400, "invalid_argument", "setup_metadata",
                        "setup_metadata.instructions and .instructions_ref: strings");
        else if (jrefs && !mgr_secret_refs_ok(jrefs, rp))
                ;
        else if (json_object_get(body, "route") &&
                 !mgr_route_decode(json_object_get(body, "route"), "route.", rp))
                ;
        else if (json_object_get(body, "webhook") &&
                 (!json_is_object(json_object_get(body, "webhook")) ||
                         json_object_size(json_object_get(body, "webhook")) != 1 ||
                         !mgr_webhook_url_ok(json_string_value(
                                 json_object_get(json_object_get(body, "webhook"), "url")))))
                mgr_reply_err(rp, 400, "invalid_argument", "webhook",
                        "webhook: {url}, an http:// or https:// URL of at most 2048 bytes");
        else if (js && !json_is_string(js))
                mgr_reply_err(rp, 400, "invalid_argument", "skill",
                        "skill: must be a string (a skill id from POST /v1/skills)");
        else if (jp && !json_is_string(jp))
                mgr_reply_err(
                        rp, 400, "invalid_argument", "profile", "profile: must be a string (a profile id)");
        else if (jt && !json_is_number(jt))
                mgr_reply_err(
                        rp, 400, "invalid_argument", "ttl_s", "ttl_s: must be a positive number of seconds");
        else if (jx && !(json_is_string(jx) && (streq(json_string_value(jx), "destroy") ||
                                                       streq(json_string_value(jx), "pause"))))
                mgr_reply_err(rp, 400, "invalid_argument", "on_expiry",
                        "on_expiry: \"destroy\" (the default) or \"pause\"");
        else if (jsn && !json_is_string(jsn))
                mgr_reply_err(rp, 400, "invalid_argument", "snapshot",
                        "snapshot: must be a string (a snapshot id from POST /v1/sandboxes/ID/snapshot)");
        else if (ja && !json_is_boolean(ja))
                mgr_reply_err(rp, 400, "invalid_argument", "auto_resume", "auto_resume: true or false");
        else if (jc && !json_is_object(jc))
                mgr_reply_err(rp, 400, "invalid_argument", "consumer",
                        "consumer: must be an object {harness, session_id, run_id, job_id}");
        else if (!mgr_network_decode(json_object_get(body, "network"), "network.", &net, rp))
                ;
        else {
                sbx_create_req req = {
                        .profile = json_string_value(jp),
                        .ttl_s = jt ? json_number_value(jt) : 0,
                        .ttl_given = jt != NULL,
                        .consumer = jc,
                        .metadata = jm,
                        .idempotency_key = rq->header ? rq->header(rq->ctx, "Idempotency-Key") : NULL,
                        .network = json_object_get(body, "network") ? &net : NULL,
                        .skill = json_string_value(js),
                        .pause_on_expiry = jx && streq(json_string_value(jx), "pause"),
                        .auto_resume = json_is_true(ja),
                        .snapshot = json_string_value(jsn),
                        .volumes = json_object_get(body, "volumes"),
                        .scope = scope,
                        .workspace = jw,
                        .inputs = ji,
                        .setup_metadata = jsm,
                        .secret_refs = jrefs,
                        .webhook_url =
                                json_string_value(json_object_get(json_object_get(body, "webhook"), "url")),
                        .route = json_object_get(body, "route"),
                        .body = body,
                        .front = rq->header ? rq->header(rq->ctx, "Sandboxer-Front") : NULL,
                };
                if (jtt) {
                        req.ttl_s = ttl_str_s;
                        req.ttl_given = true;
                }
                sbx_ops_create(m, rq->who, &req, rp);
        }
        sbx_network_req_done(&net);
        json_decref(body);
        return rp->code;
}

/* The request as a canonical JSON text (sorted keys, what was given): what an Idempotency-Key
 * is held to. */
