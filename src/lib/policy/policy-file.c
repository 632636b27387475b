/* policy-file.c — the site policy file: per-mode defaults/ceilings and what profiles and
 * requests may do. A file that omits a mode, a limit or a backend list inherits it from the
 * built-in default (recorded as source "builtin"). */
#include <string.h>

#include "basic/sha256.h"
#include "basic/strv.h"
#include "policy/parse-cache.h"
#include "policy/policy-internal.h"

sbx_policy *sbx_policy_free(sbx_policy *p) {
        if (!p)
                return NULL;
        free(p->source_file);
        free(p->strict_kernel);
        strv_free(p->write_allowed);
        strv_free(p->egress_allowed);
        strv_free(p->net_hosts);
        strv_free(p->skill_keys);
        strv_free(p->services_allowed);
        free(p);
        return NULL;
}

static int limit_from(const char *s) {
        return sbx_limit_from_string(s);
}

static int backend_from(const char *s) {
        sbx_backend_id b = sbx_backend_from_string(s);
        return b == SBX_BACKEND_AUTO ? -EINVAL : (int) b;
}

static const char *limit_choices(void) {
        return "timeout_s | budget_s | cpus | memory_mb | pids | output_mb | scratch_mb";
}

/* A list of limit names into flags[]. */
static int parse_limit_set(yctx *c, yaml_node_t *n, const char *path, bool flags[static _SBX_LIMIT_MAX]) {
        char got[96], item_path[256];

        if (n->type != YAML_SEQUENCE_NODE)
                return yerr(c, n, "%s: expected a list of limit names (%s), got %s", path, limit_choices(),
                        ynode_describe(n, got, sizeof got));
        for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
                yaml_node_t *item = yaml_document_get_node(&c->doc, *i);
                int r, x;

                r = yget_enum(c, item,
                        ypath_index(item_path, sizeof item_path, path,
                                (size_t) (i - n->data.sequence.items.start)),
                        limit_from, limit_choices(), &x);
                if (r < 0)
                        return r;
                flags[x] = true;
        }
        return 0;
}

static int parse_mode(yctx *c, yaml_node_t *n, sbx_mode m, sbx_policy *p, bool builtin) {
        static const char *const keys[] = {"limits", "backends"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        char where[64], path[96], item_path[128], got[96];
        int r;

        snprintf(where, sizeof where, "modes.%s", sbx_mode_to_string(m));
        r = ymap(c, n, where, keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                sbx_limits l = {};
                r = yparse_limits(c, v[0], ypath(path, sizeof path, where, "limits"),
                        builtin ? SBX_SRC_BUILTIN : SBX_SRC_POLICY, &l);
                if (r < 0)
                        return r;
                for (int i = 0; i < _SBX_LIMIT_MAX; i++)
                        if (l.set[i]) {
                                p->mode_limits[m].value[i] = l.value[i];
                                p->mode_limits[m].set[i] = true;
                                p->mode_limits[m].source[i] = l.source[i];
                        }
        }
        if (v[1]) {
                yaml_node_t *b = v[1];
                size_t k = 0;

                ypath(path, sizeof path, where, "backends");
                if (b->type != YAML_SEQUENCE_NODE)
                        return yerr(c, b, "%s: expected a list of backend names, got %s", path,
                                ynode_describe(b, got, sizeof got));
                for (yaml_node_item_t *i = b->data.sequence.items.start; i < b->data.sequence.items.top;
                        i++, k++) {
                        yaml_node_t *item = yaml_document_get_node(&c->doc, *i);
                        int x;

                        ypath_index(item_path, sizeof item_path, path, k);
                        r = yget_enum(c, item, item_path, backend_from,
                                "native | landlock | bwrap | firejail | podman | docker | microvm", &x);
                        if (r < 0)
                                return r;
                        for (size_t j = 0; j < k; j++)
                                if (p->mode_backends[m][j] == (sbx_backend_id) x)
                                        return yerr(
                                                c, item, "%s: %s is listed twice", item_path, yscalar(item));
                        p->mode_backends[m][k] = (sbx_backend_id) x;
                }
                p->n_mode_backends[m] = k;
        }
        return 0;
}

static int parse_modes(yctx *c, yaml_node_t *n, sbx_policy *p, bool builtin) {
        static const char *const keys[] = {"balanced", "strict"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "modes", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        for (int m = 0; m < _SBX_MODE_MAX; m++)
                if (v[m] && (r = parse_mode(c, v[m], (sbx_mode) m, p, builtin)) < 0)
                        return r;
        return 0;
}

static int parse_overrides(yctx *c, yaml_node_t *n, sbx_policy *p) {
        static const char *const keys[] = {"per_request", "allowed"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "overrides", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0] && (r = yget_bool(c, v[0], "overrides.per_request", &p->overrides_per_request)) < 0)
                return r;
        if (v[1] && (r = parse_limit_set(c, v[1], "overrides.allowed", p->override_allowed)) < 0)
                return r;
        return 0;
}

static int parse_enforce(yctx *c, yaml_node_t *n, sbx_policy *p) {
        static const char *const keys[] = {"best_effort"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "enforce", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0] && (r = parse_limit_set(c, v[0], "enforce.best_effort", p->best_effort)) < 0)
                return r;
        return 0;
}

static int trigger_from(const char *s) {
        return streq(s, "high_risk")        ? 0
               : streq(s, "network_egress") ? 1
               : streq(s, "workspace_rw")   ? 2
                                            : -EINVAL;
}

static int parse_strict(yctx *c, yaml_node_t *n, sbx_policy *p) {
        static const char *const keys[] = {"required_when", "allow_emulation", "kernel"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        char got[96], item_path[96];
        int r;

        r = ymap(c, n, "strict", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[1] && (r = yget_bool(c, v[1], "strict.allow_emulation", &p->strict_allow_emulation)) < 0)
                return r;
        if (v[2]) {
                free(p->strict_kernel);
                p->strict_kernel = NULL;
                if ((r = yget_string_or_null(c, v[2], "strict.kernel", "an absolute path to a kernel image",
                             &p->strict_kernel)) < 0)
                        return r;
                if (p->strict_kernel && p->strict_kernel[0] != '/')
                        return yerr(c, v[2],
                                "strict.kernel: expected an absolute path to a kernel image, got '%s'",
                                p->strict_kernel);
        }
        if (!v[0])
                return 0;
        if (v[0]->type != YAML_SEQUENCE_NODE)
                return yerr(c, v[0],
                        "strict.required_when: expected a list of triggers (high_risk, network_egress, "
                        "workspace_rw), got %s",
                        ynode_describe(v[0], got, sizeof got));
        for (yaml_node_item_t *i = v[0]->data.sequence.items.start; i < v[0]->data.sequence.items.top; i++) {
                yaml_node_t *item = yaml_document_get_node(&c->doc, *i);
                int x;

                r = yget_enum(c, item,
                        ypath_index(item_path, sizeof item_path, "strict.required_when",
                                (size_t) (i - v[0]->data.sequence.items.start)),
                        trigger_from, "high_risk | network_egress | workspace_rw", &x);
                if (r < 0)
                        return r;
                if (x == 0)
                        p->strict_when_high_risk = true;
                else if (x == 1)
                        p->strict_when_network_egress = true;
                else
                        p->strict_when_workspace_rw = true;
        }
        return 0;
}

static int parse_filesystem(yctx *c, yaml_node_t *n, sbx_policy *p) {
        static const char *const keys[] = {"write_allowed"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "filesystem", keys, ELEMENTSOF(keys), v);
        if (r < 0 || !v[0])
                return r;
        strv_free(p->write_allowed);
        p->write_allowed = NULL;
        return yget_strv(c, v[0], "filesystem.write_allowed", "absolute host paths", LIST_MAX,
                ycheck_abs_path, &p->write_allowed);
}

/* network.hosts: {name: address}, as "name=address" strings. */
static int host_one(yctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, const char *path, void *ud) {
        char ***list = ud;
        egress_rule name, addr;
        if (egress_parse(key, &name) < 0 || name.kind != EGRESS_HOST || name.port)
                return yerr(c, k, "%s: \"%s\" is not a host name", path, key);
        _cleanup_free_ char *a = NULL;
        int r = yget_string(c, v, path, "an IPv4 or IPv6 address", &a);
        if (r < 0)
                return r;
        if (egress_parse(a, &addr) < 0 || addr.kind != EGRESS_ADDR || addr.port ||
                addr.prefix != (addr.family == AF_INET ? 32u : 128u) || strchr(a, '['))
                return yerr(c, v, "%s: \"%s\" is not an IPv4 or IPv6 address", path, a);
        _cleanup_free_ char *entry = NULL;
        if (asprintf(&entry, "%s=%s", name.host, a) < 0 || strv_extend(list, entry) < 0)
                return -ENOMEM;
        return 0;
}

static int parse_network(yctx *c, yaml_node_t *n, sbx_policy *p) {
        static const char *const keys[] = {"egress_allowed", "allow_host", "hosts", "services_allowed"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "network", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                strv_free(p->egress_allowed);
                p->egress_allowed = NULL;
                r = yget_strv(c, v[0], "network.egress_allowed", "egress rules", LIST_MAX, ycheck_egress,
                        &p->egress_allowed);
                if (r < 0)
                        return r;
        }
        if (v[1] && (r = yget_bool(c, v[1], "network.allow_host", &p->allow_host_network)) < 0)
                return r;
        if (v[2]) {
                strv_free(p->net_hosts);
                p->net_hosts = calloc(1, sizeof(char *));
                if (!p->net_hosts)
                        return -ENOMEM;
                if ((r = ymap_each(c, v[2], "network.hosts", LIST_MAX, host_one, &p->net_hosts)) < 0)
                        return r;
        }
        if (v[3]) {
                strv_free(p->services_allowed);
                p->services_allowed = NULL;
                if ((r = yget_strv(c, v[3], "network.services_allowed", "service names or targets", LIST_MAX,
                             NULL, &p->services_allowed)) < 0)
                        return r;
        }
        return 0;
}

static int parse_process(yctx *c, yaml_node_t *n, sbx_policy *p) {
        static const char *const keys[] = {"long_lived_allowed"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r = ymap(c, n, "process", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0] && (r = yget_bool(c, v[0], "process.long_lived_allowed", &p->long_lived_allowed)) < 0)
                return r;
        return 0;
}

static int parse_skills(yctx *c, yaml_node_t *n, sbx_policy *p) {
        static const char *const keys[] = {"trusted_keys", "require_signature"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r = ymap(c, n, "skills", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                strv_free(p->skill_keys);
                p->skill_keys = NULL;
                if ((r = yget_strv(c, v[0], "skills.trusted_keys", "absolute paths of public key files",
                             LIST_MAX, ycheck_abs_path, &p->skill_keys)) < 0)
                        return r;
        }
        bool req = true;
        if (v[1] && (r = yget_bool(c, v[1], "skills.require_signature", &req)) < 0)
                return r;
        p->skill_unsigned_ok = !req;
        return 0;
}

static int parse_billing(yctx *c, yaml_node_t *n, sbx_policy *p) {
        static const char *const keys[] = {"enforce", "currency", "hold_s", "grace_s"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r = ymap(c, n, "billing", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0] && (r = yget_bool(c, v[0], "billing.enforce", &p->billing_enforce)) < 0)
                return r;
        if (v[1]) {
                _cleanup_free_ char *cur = NULL;
                if ((r = yget_string(c, v[1], "billing.currency", "a currency code such as USD", &cur)) < 0)
                        return r;
                size_t len = strlen(cur);
                if (len < 1 || len >= sizeof p->billing_currency ||
                        strspn(cur, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != len)
                        return yerr(c, v[1],
                                "billing.currency: 1 to 7 capital letters such as USD, got '%s'", cur);
                memcpy(p->billing_currency, cur, len + 1);
        }
        if (v[2] &&
                (r = yget_duration(c, v[2], "billing.hold_s", true, 366 * 86400.0, &p->billing_hold_s)) < 0)
                return r;
        if (v[3] && (r = yget_duration(c, v[3], "billing.grace_s", true, 86400.0, &p->billing_grace_s)) < 0)
                return r;
        return 0;
}

enum {
        P_VERSION,
        P_MODES,
        P_OVERRIDES,
        P_ENFORCE,
        P_RUN_AS,
        P_STRICT,
        P_FILESYSTEM,
        P_NETWORK,
        P_PROCESS,
        P_SKILLS,
        P_BILLING,
        _P_MAX
};
static const char *const top_keys[_P_MAX] = {
        [P_VERSION] = "version",
        [P_MODES] = "modes",
        [P_OVERRIDES] = "overrides",
        [P_ENFORCE] = "enforce",
        [P_RUN_AS] = "run_as",
        [P_STRICT] = "strict",
        [P_FILESYSTEM] = "filesystem",
        [P_NETWORK] = "network",
        [P_PROCESS] = "process",
        [P_SKILLS] = "skills",
        [P_BILLING] = "billing",
};

static int parse_doc(yctx *c, sbx_policy *p, bool builtin) {
        yaml_node_t *root = yctx_root(c), *v[_P_MAX];
        char got[96];
        double d;
        int r;

        if (!root || ynode_kind(root) == YK_NULL)
                return yerr(c, root, "the policy file is empty (it needs at least 'version: 1')");
        if (root->type != YAML_MAPPING_NODE)
                return yerr(c, root,
                        "a policy file must be a mapping at top level (version: 1, modes: ...), got %s",
                        ynode_describe(root, got, sizeof got));
        r = ymap(c, root, "", top_keys, _P_MAX, v);
        if (r < 0)
                return r;
        if (!v[P_VERSION])
                return yerr(c, root, "missing required key 'version' (version: 1)");
        if (ynode_kind(v[P_VERSION]) != YK_NUMBER || !streq(yscalar(v[P_VERSION]), "1"))
                return yerr(c, v[P_VERSION], "version: expected 1 (the only policy file version), got %s",
                        ynode_describe(v[P_VERSION], got, sizeof got));
        p->version = 1;
        if (v[P_MODES] && (r = parse_modes(c, v[P_MODES], p, builtin)) < 0)
                return r;
        if (v[P_OVERRIDES] && (r = parse_overrides(c, v[P_OVERRIDES], p)) < 0)
                return r;
        if (v[P_ENFORCE] && (r = parse_enforce(c, v[P_ENFORCE], p)) < 0)
                return r;
        if (v[P_RUN_AS]) {
                r = yget_number(c, v[P_RUN_AS], "run_as", "a non-root uid (1 to 4294967294)", true, false,
                        4294967294.0, &d);
                if (r < 0)
                        return r;
                p->run_as = (uint32_t) d;
        }
        if (v[P_STRICT] && (r = parse_strict(c, v[P_STRICT], p)) < 0)
                return r;
        if (v[P_FILESYSTEM] && (r = parse_filesystem(c, v[P_FILESYSTEM], p)) < 0)
                return r;
        if (v[P_NETWORK] && (r = parse_network(c, v[P_NETWORK], p)) < 0)
                return r;
        if (v[P_PROCESS] && (r = parse_process(c, v[P_PROCESS], p)) < 0)
                return r;
        if (v[P_SKILLS] && (r = parse_skills(c, v[P_SKILLS], p)) < 0)
                return r;
        if (v[P_BILLING] && (r = parse_billing(c, v[P_BILLING], p)) < 0)
                return r;

        for (int m = 0; m < _SBX_MODE_MAX; m++)
                for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                        if (!p->mode_limits[m].set[l])
                                return yerr(c, v[P_MODES] ? v[P_MODES] : root,
                                        "modes.%s.limits.%s: missing (every limit needs a default)",
                                        sbx_mode_to_string((sbx_mode) m),
                                        sbx_limit_to_string((sbx_limit_id) l));
        return 0;
}

static int policy_parse(const char *text, size_t len, const char *name, const sbx_policy *base,
        sbx_policy **ret, sbx_error *e) {
        _cleanup_(sbx_policy_freep) sbx_policy *p = calloc(1, sizeof(sbx_policy));
        yctx c;
        int r;

        if (!p)
                return sbx_error_set(e, ENOMEM, "policy: parse", "out of memory");
        p->source_file = strdup(name);
        p->write_allowed = calloc(1, sizeof(char *));
        p->egress_allowed = calloc(1, sizeof(char *));
        p->net_hosts = calloc(1, sizeof(char *));
        if (!p->source_file || !p->write_allowed || !p->egress_allowed || !p->net_hosts)
                return sbx_error_set(e, ENOMEM, "policy: parse", "out of memory");
        p->run_as = 65534;
        memcpy(p->billing_currency, "USD", 4);
        p->billing_grace_s = 30;
        if (base) {
                /* what the file does not say, the built-in default says */
                memcpy(p->mode_limits, base->mode_limits, sizeof p->mode_limits);
                memcpy(p->mode_backends, base->mode_backends, sizeof p->mode_backends);
                memcpy(p->n_mode_backends, base->n_mode_backends, sizeof p->n_mode_backends);
                for (int m = 0; m < _SBX_MODE_MAX; m++)
                        for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                                p->mode_limits[m].source[l] = SBX_SRC_BUILTIN;
        }
        sha256_hex(text, len, p->sha256);
        r = yctx_load(&c, text, len, name, e);
        if (r < 0)
                return r;
        r = parse_doc(&c, p, !base);
        yctx_done(&c);
        if (r == -ENOMEM)
                return sbx_error_set(e, r, "policy: parse", "out of memory");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

static int builtin_policy(sbx_policy **ret, sbx_error *e) {
        int r = builtin_policy_snapshot(ret);
        if (r != -ENOENT)
                return r < 0 ? sbx_error_set(e, r, "policy", "out of memory") : 0;
        size_t len;
        const char *text = builtin_policy_text_len(&len);
        return policy_parse(text, len, "builtin", NULL, ret, e);
}

int sbx_policy_parse(const char *text, size_t len, const char *name, sbx_policy **ret, sbx_error *e) {
        _cleanup_(sbx_policy_freep) sbx_policy *base = NULL;
        int r;

        if (!name)
                name = "<policy>";
        if (streq(name, "builtin"))
                return policy_parse(text, len, name, NULL, ret, e);
        r = builtin_policy(&base, e);
        if (r < 0)
                return r;
        return policy_parse(text, len, name, base, ret, e);
}

int sbx_policy_load(const char *path, sbx_policy **ret, sbx_error *e) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        if (!path) {
                if (access(SYSTEM_POLICY_FILE, F_OK) < 0)
                        return builtin_policy(ret, e);
                path = SYSTEM_POLICY_FILE;
        }
        r = read_full_file(path, PROFILE_MAX_FILE, &text, &len, e);
        if (r < 0)
                return r;
        if (sbx_parse_cache_load(SBX_PARSE_CACHE_POLICY, text, len, path, (void **) ret) >= 0)
                return 0;
        r = sbx_policy_parse(text, len, path, ret, e);
        if (r >= 0)
                sbx_parse_cache_store(SBX_PARSE_CACHE_POLICY, text, len, path, *ret);
        return r;
}

const char *sbx_builtin_policy_text(void) {
        return builtin_policy_text_len(NULL);
}
