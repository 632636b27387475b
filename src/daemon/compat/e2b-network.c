/* e2b-network.c — E2B's network controls onto a sandbox's egress rules (docs/network.md, "From
 * the API and the SDKs"; src/daemon/network.c):
 *
 *   allowOut  → network.egress (CIDRs, addresses, names, "*.domain": the same rule syntax), still
 *               within the policy's network.egress_allowed;
 *   denyOut   → network.egress_deny;
 *   allow_internet_access: false → "0.0.0.0/0" added to the deny rules (E2B: the same as
 *               denyOut 0.0.0.0/0); true → nothing (the template's rules stand).
 *
 * E2B's order holds as it is: an allow rule beats a deny rule. What differs is the default: an E2B
 * sandbox without rules reaches everything, a sandboxer one nothing but what its profile (the
 * template) names. The rest of E2B's network object (header transforms, an upstream egress proxy,
 * a request-host mask, HTTPS ports) is refused by name rather than ignored. */
#include <string.h>

#include "basic/strv.h"
#include "daemon/compat/e2b-internal.h"
#include "daemon/ops.h"

static bool rules_of(json_t *a, const char *field, char ***ret, char *err, size_t errsz) {
        *ret = NULL;
        if (!a || json_is_null(a))
                return true;
        if (!json_is_array(a) || json_array_size(a) > 256) {
                snprintf(err, errsz, "network.%s: must be an array of at most 256 strings", field);
                return false;
        }
        char **v = calloc(json_array_size(a) + 1, sizeof *v);
        if (!v) {
                snprintf(err, errsz, "out of memory");
                return false;
        }
        size_t i;
        json_t *x;
        json_array_foreach(a, i, x) {
                if (!json_is_string(x) || !(v[i] = strdup(json_string_value(x)))) {
                        strv_free(v);
                        snprintf(err, errsz,
                                "network.%s[%zu]: must be a string (a CIDR, an address or a name)", field,
                                i);
                        return false;
                }
        }
        *ret = v;
        return true;
}

bool e2b_network_decode(
        json_t *net, json_t *internet, bool update, sbx_network_req *ret, char *err, size_t errsz) {
        *ret = (sbx_network_req){0};
        if (net && !json_is_null(net) && !json_is_object(net)) {
                snprintf(err, errsz, "network: must be an object");
                return false;
        }
        static const char *const refused[] = {"rules", "egressProxy", "maskRequestHost", "httpsPorts"};
        static const char *const why[] = {
                "header transforms on outbound requests are not supported by sandboxer (the proxy does "
                "not rewrite requests)",
                "an upstream egress proxy is not supported by sandboxer (its own proxy connects directly)",
                "a request-host mask is not supported by sandboxer",
                "HTTPS sandbox ports are not supported by sandboxer's port proxy",
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                json_t *v = json_object_get(net, refused[i]);
                if (v && !json_is_null(v) && !(json_is_object(v) && json_object_size(v) == 0) &&
                        !(json_is_array(v) && json_array_size(v) == 0)) {
                        snprintf(err, errsz, "network.%s: %s", refused[i], why[i]);
                        return false;
                }
        }
        if (internet && !json_is_null(internet) && !json_is_boolean(internet)) {
                snprintf(err, errsz, "allow_internet_access: must be a boolean");
                return false;
        }
        json_t *allow = json_object_get(net, "allowOut"), *deny = json_object_get(net, "denyOut");
        if (!rules_of(allow, "allowOut", &ret->egress, err, errsz) ||
                !rules_of(deny, "denyOut", &ret->deny, err, errsz)) {
                sbx_network_req_done(ret);
                return false;
        }
        if (json_is_false(internet) && strv_extend(&ret->deny, "0.0.0.0/0") < 0) {
                sbx_network_req_done(ret);
                snprintf(err, errsz, "out of memory");
                return false;
        }
        /* an update replaces the whole set (E2B: "omitting a field clears it"); a create replaces
         * the template's lists it names */
        ret->has_egress = update || (allow && !json_is_null(allow));
        ret->has_deny = update || (deny && !json_is_null(deny)) || json_is_false(internet);
        return true;
}

/* The record's rules as E2B's getInfo shows them. */
void e2b_network_info(json_t *j, const json_t *rec) {
        json_t *n = json_object_get(rec, "network");
        if (!json_is_object(n))
                return;
        json_t *allow = json_object_get(n, "egress"), *deny = json_object_get(n, "egress_deny");
        json_object_set_new(j, "network",
                json_pack("{s:O, s:O}", "allowOut", allow ? allow : json_array(), "denyOut",
                        deny ? deny : json_array()));
}

/* PUT /sandboxes/{id}/network (updateNetwork): 204 once the running sandbox's proxy has the new
 * rules. */
void e2b_op_network(cx_req *rq, const char *id) {
        json_error_t je;
        json_t *body = json_loadb(rq->body, rq->len, 0, &je);
        char err[400];
        sbx_network_req net;
        if (!json_is_object(body)) {
                json_decref(body);
                e2b_api_err(rq, 400, "the body must be a JSON object: %s", je.text);
                return;
        }
        if (!e2b_network_decode(
                    body, json_object_get(body, "allow_internet_access"), true, &net, err, sizeof err)) {
                json_decref(body);
                e2b_api_err(rq, 400, "%s", err);
                return;
        }
        json_decref(body);
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_set_network(rq->m, &rq->caller, id, &net, &rp);
        sbx_network_req_done(&net);
        if (code == 200)
                cx_respond(rq, 204, NULL, "", 0);
        else
                e2b_api_err(rq, code == 410 ? 404 : code, "%s", e2b_native_message(rp.json));
        sbx_mgr_reply_done(&rp);
}
