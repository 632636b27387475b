/* network.c — a sandbox's egress rules from the API (docs/network.md, "From the API and the
 * SDKs"): given at create (`network: {egress, egress_deny}`, each replacing the profile's list)
 * and replaced while it runs (PUT /v1/sandboxes/{id}/network, the whole rule set: a list left out
 * is empty). The allow rules stay within the policy's network.egress_allowed (checked at create
 * with the profile, and by the supervisor against the policy the sandbox was made with); the
 * deny rules only ever refuse. E2B's allowOut/denyOut and updateNetwork and Daytona's
 * networkAllowList are translated onto these (src/daemon/compat/). */
#include "daemon/mgr-internal.h"
#include "basic/strv.h"
#include "policy/egress.h"
#include "supervise/sv-protocol.h"

#define NETWORK_RULES_MAX 256

/* The rules of j (an array of strings, or NULL/absent: *ret NULL) into a strv. false with rp
 * filled (400 naming field) when it is not one. */
static bool rules_from_json(json_t *j, const char *field, char ***ret, sbx_mgr_reply *rp) {
        *ret = NULL;
        if (!j || json_is_null(j))
                return true;
        if (!json_is_array(j) || json_array_size(j) > NETWORK_RULES_MAX) {
                mgr_reply_err(rp, 400, "invalid_argument", field,
                        "%s: must be an array of at most %d egress rules (\"host\", \"*.domain\", "
                        "\"host:port\", an address or a CIDR)",
                        field, NETWORK_RULES_MAX);
                return false;
        }
        char **v = calloc(json_array_size(j) + 1, sizeof *v);
        if (!v) {
                mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
                return false;
        }
        size_t i;
        json_t *x;
        json_array_foreach(j, i, x) {
                const char *s = json_string_value(x);
                if (!s || !*s || strlen(s) > 260 || !(v[i] = strdup(s))) {
                        strv_free(v);
                        mgr_reply_err(rp, 400, "invalid_argument", field,
                                "%s[%zu]: must be an egress rule (a non-empty string of at most 260 bytes)",
                                field, i);
                        return false;
                }
        }
        *ret = v;
        return true;
}

bool mgr_network_decode(json_t *j, const char *prefix, sbx_network_req *ret, sbx_mgr_reply *rp) {
        *ret = (sbx_network_req){0};
        if (!j)
                return true;
        char f_egress[64], f_deny[64];
        snprintf(f_egress, sizeof f_egress, "%segress", prefix);
        snprintf(f_deny, sizeof f_deny, "%segress_deny", prefix);
        static const char *const keys[] = {"egress", "egress_deny", NULL};
        if (!json_is_object(j)) {
                mgr_reply_err(rp, 400, "invalid_argument", prefix[0] ? "network" : NULL,
                        "%s: must be an object {egress: [RULE...], egress_deny: [RULE...]}",
                        prefix[0] ? "network" : "the body");
                return false;
        }
        if (!mgr_only_keys(j, keys, prefix, rp))
                return false;
        ret->has_egress = json_object_get(j, "egress") != NULL;
        ret->has_deny = json_object_get(j, "egress_deny") != NULL;
        if (!rules_from_json(json_object_get(j, "egress"), f_egress, &ret->egress, rp) ||
                !rules_from_json(json_object_get(j, "egress_deny"), f_deny, &ret->deny, rp)) {
                sbx_network_req_done(ret);
                return false;
        }
        /* that each parses, said now with the rule's text */
        sbx_egress *g = NULL;
        sbx_error e = {0};
        if (sbx_egress_new(ret->egress, ret->deny, NULL, NULL, NULL, &g, &e) < 0) {
                char buf[600];
                mgr_reply_err(rp, 400, "invalid_argument",
                        strstr(e.message, "egress_deny") ? f_deny : f_egress, "%s",
                        sbx_error_format(&e, buf, sizeof buf));
                sbx_network_req_done(ret);
                return false;
        }
        sbx_egress_free(g);
        return true;
}

void sbx_network_req_done(sbx_network_req *n) {
        strv_free(n->egress);
        strv_free(n->deny);
        *n = (sbx_network_req){0};
}

static json_t *strv_json(char *const *v) {
        json_t *a = json_array();
        STRV_FOREACH(s, v)
                json_array_append_new(a, json_string(*s));
        return a;
}

json_t *mgr_network_json(char *const *egress, char *const *deny) {
        return json_pack("{s:o, s:o}", "egress", strv_json(egress), "egress_deny", strv_json(deny));
}

int mgr_network_apply(const sbx_network_req *n, sbx_profile *pr) {
        if (n->has_egress) {
                char **c = strv_copy(n->egress ? n->egress : (char *[]){NULL});
                if (!c)
                        return -ENOMEM;
                strv_free(pr->egress);
                pr->egress = c;
        }
        if (n->has_deny) {
                char **c = strv_copy(n->deny ? n->deny : (char *[]){NULL});
                if (!c)
                        return -ENOMEM;
                strv_free(pr->egress_deny);
                pr->egress_deny = c;
        }
        return 0;
}

/* The op to b's supervisor: 0, or the errno it answered (EIO: no answer), with its sentence. */
static int send_rules(const box *b, json_t *rules, char *msg, size_t msgsz) {
        json_t *req = json_pack("{s:s, s:O, s:O}", "op", SBX_SV_OP_NETWORK, "egress",
                json_object_get(rules, "egress"), "egress_deny", json_object_get(rules, "egress_deny"));
        int fd = mgr_sv_connect(b);
        json_t *ans = NULL;
        if (fd >= 0 && mgr_sv_send(fd, req, NULL, 0) >= 0)
                ans = mgr_sv_recv(fd, 5000);
        if (fd >= 0)
                close(fd);
        json_decref(req);
        int err = 0;
        if (!ans) {
                err = EIO;
                snprintf(msg, msgsz, "the sandbox's supervisor did not answer; try again");
        } else if (!json_is_true(json_object_get(ans, "ok"))) {
                err = (int) json_integer_value(json_object_get(ans, "errno"));
                if (err <= 0)
                        err = EPROTO;
                snprintf(msg, msgsz, "%s",
                        json_string_value(json_object_get(ans, "error"))
                                ?: "the supervisor refused the rules (an older one: recreate the sandbox)");
        }
        json_decref(ans);
        return err;
}

void mgr_network_reapply(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        json_t *rules = b->network ? json_incref(b->network) : NULL;
        pthread_mutex_unlock(&m->lock);
        if (!rules)
                return;
        char msg[600];
        if (send_rules(b, rules, msg, sizeof msg) != 0) {
                sbx_log(SBX_LOG_WARNING, "network_lost", "sandbox", b->id, "error", msg, NULL);
                pthread_mutex_lock(&m->lock);
                json_decref(b->network);
                b->network = NULL;
                pthread_mutex_unlock(&m->lock);
        }
        json_decref(rules);
}

unsigned sbx_ops_set_network(
        sbx_mgr *m, const sbx_caller *who, const char *id, const sbx_network_req *n, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        box *b = mgr_usable_box(m, who, id, rp);
        if (!b)
                return rp->code;
        if (b->skill) { /* what the signed manifest asked for, and nothing else */
                mgr_reply_err(rp, 409, "conflict", "network",
                        "sandbox %s runs a skill: its network is what the skill's manifest asked for "
                        "(sandbox.allowed_hosts), not changed after",
                        b->id);
                mgr_audit(m, who, "sandbox.network", b->id, "failed", "a skill's sandbox");
                mgr_box_put(m, b);
                return rp->code;
        }
        json_t *rules = mgr_network_json(n->egress, n->deny);
        char msg[600];
        int err = send_rules(b, rules, msg, sizeof msg);
        if (err) {
                if (err == ENOTCONN)
                        mgr_reply_err(rp, 409, "conflict", "network", "%s", msg);
                else if (err == EPERM)
                        mgr_reply_err(rp, 403, "forbidden", "network.egress", "%s", msg);
                else if (err == EINVAL)
                        mgr_reply_err(rp, 400, "invalid_argument", "network", "%s", msg);
                else
                        mgr_reply_err(rp, 503, "unavailable", NULL, "%s", msg);
                mgr_audit(m, who, "sandbox.network", b->id, "failed", msg);
                json_decref(rules);
                mgr_box_put(m, b);
                return rp->code;
        }
        pthread_mutex_lock(&m->lock);
        json_decref(b->network);
        b->network = rules;
        b->updated_ms = mgr_now_ms();
        pthread_mutex_unlock(&m->lock);
        (void) mgr_box_save(m, b);
        char *detail = json_dumps(rules, JSON_COMPACT);
        mgr_audit(m, who, "sandbox.network", b->id, "ok", detail);
        free(detail);
        return mgr_reply_box(m, b, rp);
}
