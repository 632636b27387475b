/* config.c — the effective configuration of one run: the policy file's mode limits as
 * defaults and ceilings, narrowed by the profile, then by the flags the policy permits; every
 * value keeps where it came from. Refusals are -EPERM and name the key and the fix. */
#include <string.h>
#include <sys/stat.h>

#include "basic/sha256.h"
#include "basic/strv.h"
#include "policy/parse-cache.h"
#include "policy/policy-internal.h"

sbx_config *sbx_config_free(sbx_config *c) {
        if (!c)
                return NULL;
        sbx_policy_free(c->policy);
        sbx_profile_free(c->profile);
        free(c->workspace);
        free(c->cwd);
        for (size_t i = 0; i < c->n_env; i++) {
                free(c->env[i].name);
                free(c->env[i].value);
        }
        free(c->env);
        free(c->env_source);
        free(c->strict_reason);
        free(c);
        return NULL;
}

static bool policy_is_builtin(const sbx_policy *pol) {
        return streq(pol->source_file, "builtin");
}

static const char *policy_name(const sbx_policy *pol, char *buf, size_t size) {
        if (policy_is_builtin(pol))
                snprintf(buf, size, "the built-in default policy");
        else
                snprintf(buf, size, "policy file %s", pol->source_file);
        return buf;
}

static const char *profile_name(const sbx_profile *p, char *buf, size_t size) {
        snprintf(buf, size, "%s@%s", p->id, p->version);
        return buf;
}

/* "45", "0.5", "1e+15": shortest faithful form for messages. */
static const char *num(double v, char *buf, size_t size) {
        snprintf(buf, size, "%.15g", v);
        return buf;
}

static bool write_allowed(const sbx_policy *pol, const char *path) {
        STRV_FOREACH(a, pol->write_allowed)
                if (path_is_under(path, *a))
                        return true;
        return false;
}

bool sbx_policy_egress_allowed(const sbx_policy *pol, const char *rule) {
        egress_rule want;

        if (egress_parse(rule, &want) < 0)
                return false;
        STRV_FOREACH(a, pol->egress_allowed) {
                egress_rule allowed;
                if (egress_parse(*a, &allowed) >= 0 && egress_covers(&allowed, &want))
                        return true;
        }
        return false;
}

int sbx_policy_check_profile(const sbx_policy *pol, const sbx_profile *p, sbx_mode m, sbx_error *e) {
        char pn[160], pf[300], a[32], b[32];

        profile_name(p, pn, sizeof pn);
        policy_name(pol, pf, sizeof pf);
        for (int l = 0; l < _SBX_LIMIT_MAX; l++) {
                if (!p->limits.set[l] || p->limits.value[l] <= pol->mode_limits[m].value[l])
                        continue;
                return sbx_error_set(e, EPERM, "policy: profile limits",
                        "%s: limits.%s %s exceeds the policy ceiling %s (%s, modes.%s.limits.%s); lower it "
                        "in the "
                        "profile or raise the ceiling in the policy file",
                        pn, sbx_limit_to_string((sbx_limit_id) l), num(p->limits.value[l], a, sizeof a),
                        num(pol->mode_limits[m].value[l], b, sizeof b), pf, sbx_mode_to_string(m),
                        sbx_limit_to_string((sbx_limit_id) l));
        }
        STRV_FOREACH(w, p->fs_write)
                if (!write_allowed(pol, *w))
                        return sbx_error_set(e, EPERM, "policy: filesystem.write",
                                "%s: filesystem.write %s is not allowed by %s (filesystem.write_allowed); "
                                "add it "
                                "(or a parent directory) to filesystem.write_allowed or remove it from the "
                                "profile",
                                pn, *w, pf);
        STRV_FOREACH(g, p->egress)
                if (!sbx_policy_egress_allowed(pol, *g))
                        return sbx_error_set(e, EPERM, "policy: network.egress",
                                "%s: network.egress \"%s\" is not allowed by %s (network.egress_allowed); "
                                "add it to "
                                "network.egress_allowed or remove it from the profile",
                                pn, *g, pf);
        STRV_FOREACH(sv, p->net_services) {
                const char *t1 = strchr(*sv, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
                _cleanup_free_ char *name = t1 ? strndup(*sv, (size_t) (t1 - *sv)) : NULL,
                                    *target = t2 ? strndup(t1 + 1, (size_t) (t2 - t1 - 1)) : NULL;
                if (!name || !target)
                        return sbx_error_set(e, ENOMEM, "policy: network.services", "out of memory");
                bool ok = false;
                STRV_FOREACH(al, pol->services_allowed)
                        ok = ok || streq(*al, name) || streq(*al, target);
                if (!ok)
                        return sbx_error_set(e, EPERM, "policy: network.services",
                                "%s: network.services %s (%s) is not allowed by %s "
                                "(network.services_allowed); "
                                "add its name or target there or remove it from the profile",
                                pn, name, target, pf);
                if (p->net_allow)
                        return sbx_error_set(e, EINVAL, "policy: network.services",
                                "%s: network.services needs network.default: deny (with the host network "
                                "shared there is nothing to scope a service to)",
                                pn);
        }
        if (p->net_allow && !pol->allow_host_network)
                return sbx_error_set(e, EPERM, "policy: network.default",
                        "%s: network.default: allow shares the host network, which %s does not permit (set "
                        "network.allow_host: true in the policy file, or use network.egress with "
                        "network.default: deny)",
                        pn, pf);
        return 0;
}

static int env_add(sbx_config *c, const char *name, const char *value, sbx_source src) {
        char *v = strdup(value);

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_env; i++)
                if (streq(c->env[i].name, name)) {
                        free(c->env[i].value);
                        c->env[i].value = v;
                        c->env_source[i] = src;
                        return 0;
                }
        sbx_source *srcs = realloc(c->env_source, (c->n_env + 1) * sizeof(sbx_source));
        if (!srcs) {
                free(v);
                return -ENOMEM;
        }
        c->env_source = srcs;
        srcs[c->n_env] = src;
        sbx_env_var *grown = realloc(c->env, (c->n_env + 1) * sizeof(sbx_env_var));
        if (!grown) {
                free(v);
                return -ENOMEM;
        }
        c->env = grown;
        grown[c->n_env].value = v;
        grown[c->n_env].name = strdup(name);
        if (!grown[c->n_env].name) {
                free(v);
                return -ENOMEM;
        }
        c->n_env++;
        return 0;
}

static int resolve_strict(const sbx_request *req, sbx_config *c) {
        const sbx_policy *pol = c->policy;
        const sbx_profile *p = c->profile;
        const char *why = NULL;

        if (pol->strict_when_high_risk && p->high_risk)
                why = "strict.required_when: high_risk (the profile sets high_risk: true)";
        else if (pol->strict_when_network_egress && (p->net_allow || strv_length(p->egress) > 0))
                why = p->net_allow
                              ? "strict.required_when: network_egress (the profile sets network.default: "
                                "allow)"
                              : "strict.required_when: network_egress (the profile lists network.egress)";
        else if (pol->strict_when_workspace_rw && p->ws_access == SBX_ACCESS_RW)
                why = "strict.required_when: workspace_rw (the profile sets workspace.access: rw)";
        if (!why)
                return 0;
        c->strict_required = true;
        c->strict_reason = strdup(why);
        if (!c->strict_reason)
                return -ENOMEM;
        if (c->mode != SBX_MODE_STRICT) {
                c->mode = SBX_MODE_STRICT;
                c->mode_source = SBX_SRC_POLICY;
        }
        return 0;
}

static int resolve_limits(const sbx_request *req, sbx_config *c, sbx_error *e) {
        const sbx_policy *pol = c->policy;
        const sbx_limits *ceil = &pol->mode_limits[c->mode];
        char pf[300], a[32], b[32];
        int r;

        policy_name(pol, pf, sizeof pf);
        r = sbx_policy_check_profile(pol, c->profile, c->mode, e);
        if (r < 0)
                return r;
        for (int l = 0; l < _SBX_LIMIT_MAX; l++) {
                const char *key = sbx_limit_to_string((sbx_limit_id) l),
                           *flag = sbx_limit_to_flag((sbx_limit_id) l);

                c->limits.set[l] = true;
                c->limits.value[l] = ceil->value[l];
                c->limits.source[l] = policy_is_builtin(pol) ? SBX_SRC_BUILTIN : ceil->source[l];
                if (c->profile->limits.set[l]) {
                        c->limits.value[l] = c->profile->limits.value[l];
                        c->limits.source[l] = SBX_SRC_PROFILE;
                }
                if (!req || !req->has_limit[l])
                        continue;
                if (!pol->overrides_per_request)
                        return sbx_error_set(e, EPERM, "policy: overrides",
                                "%s is not allowed: %s does not permit per-request overrides of %s (set "
                                "overrides.per_request: true and add %s to overrides.allowed%s)",
                                flag, policy_name(pol, pf, sizeof pf), key, key,
                                policy_is_builtin(pol) ? " in " SYSTEM_POLICY_FILE " or a --policy FILE"
                                                       : "");
                if (!pol->override_allowed[l])
                        return sbx_error_set(e, EPERM, "policy: overrides",
                                "%s is not allowed: %s does not list %s in overrides.allowed (add it there "
                                "to "
                                "permit %s)",
                                flag, pf, key, flag);
                if (limit_check_value((sbx_limit_id) l, req->limit[l]) < 0)
                        return sbx_error_set(e, EINVAL, "policy: overrides", "%s %s: expected %s", flag,
                                num(req->limit[l], a, sizeof a), limit_what((sbx_limit_id) l));
                if (req->limit[l] > ceil->value[l])
                        return sbx_error_set(e, EPERM, "policy: overrides",
                                "%s %s exceeds the policy ceiling %s (%s, modes.%s.limits.%s)", flag,
                                num(req->limit[l], a, sizeof a), num(ceil->value[l], b, sizeof b), pf,
                                sbx_mode_to_string(c->mode), key);
                c->limits.value[l] = req->limit[l];
                c->limits.source[l] = SBX_SRC_FLAG;
        }
        return 0;
}

static int resolve_workspace(const sbx_request *req, sbx_config *c, sbx_error *e) {
        const char *ws = NULL;
        struct stat st;

        if (req && req->workspace) {
                ws = req->workspace;
                c->workspace_source = SBX_SRC_FLAG;
        } else if (c->profile->ws_path) {
                ws = c->profile->ws_path;
                c->workspace_source = SBX_SRC_PROFILE;
        } else {
                c->workspace_source = SBX_SRC_BUILTIN;
                return 0;
        }
        if (isempty(ws))
                return sbx_error_set(e, EINVAL, "workspace", "--workspace: empty path");
        if (stat(ws, &st) < 0)
                return sbx_error_set(e, errno, "workspace", "workspace %s%s: %s", ws,
                        c->workspace_source == SBX_SRC_FLAG ? " (--workspace)" : " (profile workspace.path)",
                        errno == ENOENT ? "no such directory (create it or pass another --workspace)"
                                        : strerror(errno));
        if (!S_ISDIR(st.st_mode))
                return sbx_error_set(e, ENOTDIR, "workspace", "workspace %s%s: not a directory", ws,
                        c->workspace_source == SBX_SRC_FLAG ? " (--workspace)"
                                                            : " (profile workspace.path)");
        c->workspace = realpath(ws, NULL);
        if (!c->workspace)
                return sbx_error_set(
                        e, errno, "workspace", "workspace %s: cannot resolve: %s", ws, strerror(errno));
        return 0;
}

static int resolve_env(const sbx_request *req, sbx_config *c, sbx_error *e) {
        int r;

        for (size_t i = 0; i < c->profile->n_env; i++) {
                r = env_add(c, c->profile->env[i].name, c->profile->env[i].value,
                        c->profile->field_set[SBX_F_ENV] ? SBX_SRC_PROFILE : SBX_SRC_BUILTIN);
                if (r < 0)
                        return r;
        }
        if (!req)
                return 0;
        STRV_FOREACH(s, req->env) {
                _cleanup_free_ char *name = NULL;
                const char *eq = strchr(*s, '='), *why;

                if (!eq)
                        return sbx_error_set(e, EINVAL, "env", "--env %s: expected NAME=VALUE", *s);
                name = strndup(*s, (size_t) (eq - *s));
                if (!name)
                        return -ENOMEM;
                r = env_name_check(name, &why);
                if (r == -EPERM)
                        return sbx_error_set(
                                e, EPERM, "env", "--env %s: %s cannot be set (%s)", *s, name, why);
                if (r < 0)
                        return sbx_error_set(e, EINVAL, "env",
                                "--env %s: \"%s\" is not a valid variable name (%s)", *s, name, why);
                r = env_add(c, name, eq + 1, SBX_SRC_FLAG);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The dynamic loader's index of the library directories goes with them: when a library directory
 * is readable (/usr, /lib, /lib64 or one below them), so is /etc/ld.so.cache, if the host has one.
 * Without it a dynamic program finds only the default directories' libraries, not those the
 * host's ld.so.conf adds (/usr/local/lib, for one), and the loader first tries ~36 hwcaps
 * paths for each library, each refused or missing. The cache names paths, nothing else. */
static int add_loader_cache(sbx_profile *p) {
        static const char cache[] = "/etc/ld.so.cache";
        bool libs = false;
        STRV_FOREACH(r, p->fs_read) {
                if (path_is_under(cache, *r))
                        return 0; /* already readable */
                libs = libs || path_is_under(*r, "/usr") || path_is_under(*r, "/lib") ||
                       path_is_under(*r, "/lib64");
        }
        struct stat st;
        if (!libs || lstat(cache, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        return strv_extend(&p->fs_read, cache);
}

/* ---- the resolved profile and policy as bytes (sbx_config_encode) ----
 * "SBXRSLV1", the version, then the policy's and the profile's parse-cache entries (each a u64
 * length and its bytes: the structures as they are, every string with them, their own digest).
 * Made by the control plane at create and decoded by the sandbox's supervisor: the same build's
 * layout (the entries carry the structures' sizes; the version is checked). */
#define RESOLVED_MAGIC "SBXRSLV1"

int sbx_config_encode(const sbx_config *c, char **ret, size_t *ret_len, char ret_sha256[static 65]) {
        _cleanup_free_ char *pol = NULL, *pro = NULL;
        size_t npol, npro;
        int r;
        if (!c || !c->policy || !c->profile)
                return -EINVAL;
        if ((r = sbx_parse_cache_encode(SBX_PARSE_CACHE_POLICY, c->policy, &pol, &npol)) < 0 ||
                (r = sbx_parse_cache_encode(SBX_PARSE_CACHE_PROFILE, c->profile, &pro, &npro)) < 0)
                return r;
        char version[32] = {0};
        snprintf(version, sizeof version, "%s", SBX_VERSION);
        size_t n = 8 + sizeof version + 8 + npol + 8 + npro;
        char *buf = malloc(n), *o = buf;
        if (!buf)
                return -ENOMEM;
        uint64_t l;
        memcpy(o, RESOLVED_MAGIC, 8), o += 8;
        memcpy(o, version, sizeof version), o += sizeof version;
        l = npol, memcpy(o, &l, 8), o += 8;
        memcpy(o, pol, npol), o += npol;
        l = npro, memcpy(o, &l, 8), o += 8;
        memcpy(o, pro, npro);
        sha256_hex(buf, n, ret_sha256);
        *ret = buf;
        *ret_len = n;
        return 0;
}

static int resolved_decode(
        const char *data, size_t n, sbx_policy **ret_pol, sbx_profile **ret_pro, sbx_error *e) {
        char version[32] = {0}, mine[32] = {0};
        uint64_t npol, npro;
        size_t at = 8 + sizeof version;
        snprintf(mine, sizeof mine, "%s", SBX_VERSION);
        if (n < at + 8 || memcmp(data, RESOLVED_MAGIC, 8) != 0)
                return sbx_error_set(e, EBADMSG, "config",
                        "the resolved configuration handed over is not one (%zu bytes, no header)", n);
        memcpy(version, data + 8, sizeof version);
        version[sizeof version - 1] = 0;
        if (memcmp(version, mine, sizeof mine) != 0)
                return sbx_error_set(e, EPROTO, "config",
                        "the resolved configuration was made by sandboxer %s, this is %s: run the server "
                        "and its supervisors from the same build",
                        version, mine);
        memcpy(&npol, data + at, 8), at += 8;
        if (npol > n - at || n - at - npol < 8)
                return sbx_error_set(e, EBADMSG, "config", "the resolved configuration is truncated");
        const char *pol = data + at;
        at += npol;
        memcpy(&npro, data + at, 8), at += 8;
        if (npro != n - at)
                return sbx_error_set(e, EBADMSG, "config", "the resolved configuration is truncated");
        int r = sbx_parse_cache_decode(SBX_PARSE_CACHE_POLICY, pol, npol, (void **) ret_pol);
        if (r >= 0) {
                r = sbx_parse_cache_decode(SBX_PARSE_CACHE_PROFILE, data + at, npro, (void **) ret_pro);
                if (r < 0)
                        *ret_pol = sbx_policy_free(*ret_pol);
        }
        if (r == -ENOMEM)
                return sbx_error_set(e, ENOMEM, "config", "out of memory");
        if (r < 0)
                return sbx_error_set(e, -r, "config",
                        "the resolved configuration handed over does not decode (%s): a server and a "
                        "supervisor of different builds?",
                        strerror(-r));
        return 0;
}

int sbx_config_resolve(const sbx_request *req, sbx_config **ret, sbx_error *e) {
        _cleanup_(sbx_config_freep) sbx_config *c = calloc(1, sizeof(sbx_config));
        int r;

        if (!c)
                return sbx_error_set(e, ENOMEM, "config", "out of memory");
        if (req && req->resolved) {
                r = resolved_decode(req->resolved, req->resolved_len, &c->policy, &c->profile, e);
                if (r < 0)
                        return r;
        } else {
                r = sbx_policy_load(req ? req->policy_file : NULL, &c->policy, e);
                if (r < 0)
                        return r;
                r = sbx_profile_load(req && req->profile ? req->profile : "profile.default", &c->profile, e);
                if (r < 0)
                        return r;
        }
        if (add_loader_cache(c->profile) < 0)
                goto oom;

        if (req && req->has_mode) {
                if ((int) req->mode < 0 || req->mode >= _SBX_MODE_MAX)
                        return sbx_error_set(e, EINVAL, "config", "--mode: expected balanced or strict");
                c->mode = req->mode;
                c->mode_source = SBX_SRC_FLAG;
        } else if (c->profile->field_set[SBX_F_MODE]) {
                c->mode = c->profile->mode;
                c->mode_source = SBX_SRC_PROFILE;
        } else {
                c->mode = SBX_MODE_BALANCED;
                c->mode_source = SBX_SRC_BUILTIN;
        }
        r = resolve_strict(req, c);
        if (r < 0)
                goto oom;

        if (req && req->has_backend) {
                if ((int) req->backend < 0 || req->backend >= _SBX_BACKEND_MAX)
                        return sbx_error_set(e, EINVAL, "config", "--backend: unknown backend");
                c->backend = req->backend;
                c->backend_source = SBX_SRC_FLAG;
        } else if (c->profile->field_set[SBX_F_BACKEND]) {
                c->backend = c->profile->backend;
                c->backend_source = SBX_SRC_PROFILE;
        } else {
                c->backend = SBX_BACKEND_AUTO;
                c->backend_source = SBX_SRC_BUILTIN;
        }

        r = resolve_limits(req, c, e);
        if (r < 0)
                return r == -ENOMEM ? sbx_error_set(e, r, "config", "out of memory") : r;
        r = resolve_workspace(req, c, e);
        if (r < 0)
                return r;

        if (req && req->cwd) {
                _cleanup_free_ char *cwd = strdup(req->cwd);
                if (!cwd)
                        goto oom;
                if (path_normalize(cwd) < 0)
                        return sbx_error_set(e, EINVAL, "config",
                                "--cwd %s: expected an absolute path inside the sandbox, without '..'",
                                req->cwd);
                c->cwd = TAKE_PTR(cwd);
                c->cwd_source = SBX_SRC_FLAG;
        } else if (c->profile->cwd) {
                c->cwd = strdup(c->profile->cwd);
                if (!c->cwd)
                        goto oom;
                c->cwd_source = SBX_SRC_PROFILE;
        } else
                c->cwd_source = SBX_SRC_BUILTIN;

        r = resolve_env(req, c, e);
        if (r == -ENOMEM)
                goto oom;
        if (r < 0)
                return r;

        *ret = TAKE_PTR(c);
        return 0;
oom:
        return sbx_error_set(e, ENOMEM, "config", "out of memory");
}
