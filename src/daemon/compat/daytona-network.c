/* daytona-network.c — Daytona's network settings onto a sandbox's egress rules (docs/network.md,
 * "From the API and the SDKs"; src/daemon/network.c):
 *
 *   networkAllowList "CIDR,CIDR" and domainAllowList "name,*.domain" → network.egress (within the
 *   policy's network.egress_allowed, as any);
 *   networkBlockAll: true → no egress rules and "0.0.0.0/0" denied (the proxy refuses, recorded);
 *   networkBlockAll: false → (an update) the rules cleared: sandboxer has no "general internet"
 *   to give back, its default is the deny of the profile.
 *
 * outboundProxyUrl (an upstream proxy of the user's) is refused by name, not ignored. */
#include <string.h>

#include "basic/strv.h"
#include "daemon/compat/daytona-internal.h"
#include "daemon/ops.h"

/* "a, b,c" → strv appended to *v; false with err when it is not a string. */
static bool split_list(json_t *s, const char *field, char ***v, char *err, size_t errsz) {
        if (!s || json_is_null(s))
                return true;
        if (!json_is_string(s) || json_string_length(s) > 16384) {
                snprintf(err, errsz, "%s: must be a comma-separated string", field);
                return false;
        }
        _cleanup_free_ char *copy = strdup(json_string_value(s));
        if (!copy) {
                snprintf(err, errsz, "out of memory");
                return false;
        }
        for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                t += strspn(t, " \t");
                size_t l = strlen(t);
                while (l && (t[l - 1] == ' ' || t[l - 1] == '\t'))
                        t[--l] = 0;
                if (l && strv_extend(v, t) < 0) {
                        snprintf(err, errsz, "out of memory");
                        return false;
                }
        }
        return true;
}

bool dt_network_decode(json_t *body, bool update, sbx_network_req *ret, char *err, size_t errsz) {
        *ret = (sbx_network_req){0};
        json_t *block = json_object_get(body, "networkBlockAll"),
               *cidrs = json_object_get(body, "networkAllowList"),
               *names = json_object_get(body, "domainAllowList"),
               *up = json_object_get(body, "outboundProxyUrl");
        if (up && !json_is_null(up) && !(json_is_string(up) && !*json_string_value(up))) {
                snprintf(err, errsz,
                        "outboundProxyUrl: an upstream proxy is not supported by sandboxer (its own proxy "
                        "connects directly; use domainAllowList)");
                return false;
        }
        if (block && !json_is_null(block) && !json_is_boolean(block)) {
                snprintf(err, errsz, "networkBlockAll: must be a boolean");
                return false;
        }
        if (!split_list(cidrs, "networkAllowList", &ret->egress, err, errsz) ||
                !split_list(names, "domainAllowList", &ret->egress, err, errsz)) {
                sbx_network_req_done(ret);
                return false;
        }
        bool lists = (cidrs && !json_is_null(cidrs)) || (names && !json_is_null(names));
        if (json_is_true(block)) {
                strv_free(ret->egress);
                ret->egress = NULL;
                if (strv_extend(&ret->deny, "0.0.0.0/0") < 0) {
                        snprintf(err, errsz, "out of memory");
                        return false;
                }
                ret->has_egress = ret->has_deny = true;
        } else if (lists || (update && json_is_false(block)))
                ret->has_egress = ret->has_deny = true; /* the lists are the rule set */
        return true;
}

void dt_network_info(json_t *j, const json_t *rec) {
        json_t *n = json_object_get(rec, "network"), *allow = json_object_get(n, "egress"), *x;
        size_t i;
        char cidrs[4096] = "", names[4096] = "";
        bool any = false;
        json_array_foreach(allow, i, x) {
                const char *s = json_string_value(x);
                if (!s)
                        continue;
                any = true;
                /* an address or a CIDR starts with a digit, a '[' or has a ':' before any dot */
                bool addr = strchr("0123456789[", s[0]) != NULL &&
                            strspn(s, "0123456789.:/[]abcdefABCDEF") == strlen(s);
                char *to = addr ? cidrs : names;
                size_t l = strlen(to);
                snprintf(to + l, 4096 - l, "%s%s", l ? "," : "", s);
        }
        json_object_set_new(j, "networkBlockAll", json_boolean(!any));
        json_object_set_new(j, "networkAllowList", cidrs[0] ? json_string(cidrs) : json_null());
        json_object_set_new(j, "domainAllowList", names[0] ? json_string(names) : json_null());
}
