/* profile.c — the profile record: its leaves (the unit of inheritance along `extends`), its
 * defaults, freeing it, and inheritance (child wins leaf by leaf, lists replace, env merges). */
#include <string.h>

#include "basic/strv.h"
#include "policy/profile-internal.h"

static const sbx_field leaf_field[_L_MAX] = {
        [L_LEVEL] = SBX_F_LEVEL,
        [L_MODE] = SBX_F_MODE,
        [L_BACKEND] = SBX_F_BACKEND,
        [L_NET_DEFAULT] = SBX_F_NET_DEFAULT,
        [L_EGRESS] = SBX_F_NET_EGRESS,
        [L_EGRESS_DENY] = SBX_F_NET_EGRESS,
        [L_LOOPBACK] = SBX_F_NET_LOOPBACK,
        [L_WS_PATH] = SBX_F_WS_PATH,
        [L_WS_MOUNT] = SBX_F_WS_MOUNT,
        [L_WS_ACCESS] = SBX_F_WS_ACCESS,
        [L_FS_READ] = SBX_F_FS_READ,
        [L_FS_WRITE] = SBX_F_FS_WRITE,
        [L_FS_EXEC] = SBX_F_FS_EXEC,
        [L_ALLOW_SPAWN] = SBX_F_ALLOW_SPAWN,
        [L_ALLOW_EXEC] = SBX_F_ALLOW_EXEC,
        [L_LONG_LIVED] = SBX_F_LONG_LIVED,
        [L_CMD_MODE] = SBX_F_COMMANDS,
        [L_CMD_ALLOW] = SBX_F_COMMANDS,
        [L_CMD_DENY] = SBX_F_COMMANDS,
        [L_ON_VIOLATION] = SBX_F_ON_VIOLATION,
        [L_ENV] = SBX_F_ENV,
        [L_SECRETS] = SBX_F_SECRETS,
        [L_TTL_DEFAULT] = SBX_F_TTL,
        [L_TTL_MAX] = SBX_F_TTL,
        [L_TTL_IDLE] = SBX_F_TTL,
        [L_TTL_PAUSED] = SBX_F_TTL,
        [L_PLACEMENT_PREFER] = SBX_F_PLACEMENT,
        [L_PLACEMENT_FALLBACK] = SBX_F_PLACEMENT,
        [L_ROUTE_STRATEGY] = SBX_F_ROUTE,
        [L_ROUTE_FALLBACK] = SBX_F_ROUTE,
        [L_ROUTE_CONSTRAINTS] = SBX_F_ROUTE,
        [L_COST_CLASS] = SBX_F_METADATA,
        [L_LATENCY_CLASS] = SBX_F_METADATA,
        [L_OBSERVE] = SBX_F_OBSERVE,
        [L_OBSERVE_FS_WRITES] = SBX_F_OBSERVE,
        [L_HIGH_RISK] = SBX_F_HIGH_RISK,
        [L_CWD] = SBX_F_CWD,
        [L_FS_HOME] = SBX_F_FS_HOME,
        [L_USER] = SBX_F_USER,
        [L_SERVICES] = SBX_F_NET_SERVICES,
};

void profile_set_leaf(sbx_profile *p, profile_leaf l) {
        p->leaf_set_ |= UINT64_C(1) << l;
        p->field_set[leaf_field[l]] = true;
}

static bool has_leaf(const sbx_profile *p, profile_leaf l) {
        return p->leaf_set_ & (UINT64_C(1) << l);
}

static const char *const default_read[] = {
        "/usr",
        "/lib",
        "/lib64",
        "/bin",
        "/etc/ssl/certs",
        "/etc/resolv.conf",
        "/etc/hosts",
        "/etc/localtime",
};

void profile_env_free(sbx_env_var *env, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(env[i].name);
                free(env[i].value);
        }
        free(env);
}

sbx_profile *sbx_profile_free(sbx_profile *p) {
        if (!p)
                return NULL;
        free(p->id);
        free(p->version);
        free(p->extends);
        free(p->source_file);
        strv_free(p->egress);
        strv_free(p->egress_deny);
        strv_free(p->net_services);
        free(p->ws_path);
        free(p->ws_mount);
        strv_free(p->fs_read);
        strv_free(p->fs_write);
        strv_free(p->fs_exec);
        strv_free(p->cmd_allow);
        strv_free(p->cmd_deny);
        profile_env_free(p->env, p->n_env);
        strv_free(p->secrets);
        strv_free(p->placement_prefer);
        strv_free(p->placement_fallback);
        free(p->route_strategy);
        strv_free(p->route_fallback);
        strv_free(p->route_constraints);
        free(p->cost_class);
        free(p->latency_class);
        free(p->cwd);
        free(p->fs_home);
        free(p->user);
        free(p);
        return NULL;
}

int profile_env_set(sbx_env_var **env, size_t *n, const char *name, const char *value) {
        char *v = strdup(value);

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                if (streq((*env)[i].name, name)) {
                        free((*env)[i].value);
                        (*env)[i].value = v;
                        return 0;
                }
        sbx_env_var *grown = realloc(*env, (*n + 1) * sizeof(sbx_env_var));
        if (!grown) {
                free(v);
                return -ENOMEM;
        }
        *env = grown;
        grown[*n] = (sbx_env_var){.name = strdup(name), .value = v};
        if (!grown[*n].name) {
                free(v);
                return -ENOMEM;
        }
        (*n)++;
        return 0;
}

/* A profile with every default of DESIGN.md and nothing marked as set. */
int profile_new_default(sbx_profile **ret) {
        _cleanup_(sbx_profile_freep) sbx_profile *p = calloc(1, sizeof(sbx_profile));
        int r;

        if (!p)
                return -ENOMEM;
        p->level = SBX_LEVEL_CONTAINER;
        p->mode = SBX_MODE_BALANCED;
        p->backend = SBX_BACKEND_AUTO;
        p->net_allow = false;
        p->loopback = true;
        p->ws_access = SBX_ACCESS_RO;
        p->allow_spawn = true;
        p->allow_exec = true;
        p->cmd_mode = SBX_CMD_MODE_OFF;
        p->on_violation = SBX_ON_VIOLATION_DENY;
        p->observe = SBX_OBSERVE_AUTO;
        p->ws_mount = strdup("/workspace");
        p->route_strategy = strdup("prefer-self-hosted");
        p->cost_class = strdup("self-hosted");
        p->latency_class = strdup("standard");
        p->user = strdup("sandbox");
        if (!p->ws_mount || !p->route_strategy || !p->cost_class || !p->latency_class || !p->user)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(default_read); i++) {
                r = strv_extend(&p->fs_read, default_read[i]);
                if (r < 0)
                        return r;
        }
        /* empty (not NULL) lists, so consumers can iterate without checks */
        if (!(p->egress = calloc(1, sizeof(char *))) || !(p->egress_deny = calloc(1, sizeof(char *))) ||
                !(p->fs_write = calloc(1, sizeof(char *))) || !(p->cmd_allow = calloc(1, sizeof(char *))) ||
                !(p->cmd_deny = calloc(1, sizeof(char *))) || !(p->secrets = calloc(1, sizeof(char *))) ||
                !(p->placement_prefer = calloc(1, sizeof(char *))) ||
                !(p->placement_fallback = calloc(1, sizeof(char *))) ||
                !(p->route_fallback = calloc(1, sizeof(char *))) ||
                !(p->route_constraints = calloc(1, sizeof(char *))))
                return -ENOMEM;
        r = profile_env_set(&p->env, &p->n_env, "LANG", "C.UTF-8");
        if (r < 0)
                return r;
        p->ttl_default_s = 4 * 3600;
        p->ttl_max_s = 24 * 3600;
        *ret = TAKE_PTR(p);
        return 0;
}

/* ---- inheritance ---- */

/* Move parent's value of every leaf the child did not set into the child. */
#define STEAL(field)                                                                                        \
        do {                                                                                                \
                __typeof__(child->field) t_ = child->field;                                                 \
                child->field = parent->field;                                                               \
                parent->field = t_;                                                                         \
        } while (0)

int profile_inherit(sbx_profile *child, sbx_profile *parent) {
        static const struct {
                profile_leaf l;
                size_t offset;
        } ptr_leaves[] = {
                {L_EGRESS, offsetof(sbx_profile, egress)},
                {L_EGRESS_DENY, offsetof(sbx_profile, egress_deny)},
                {L_WS_PATH, offsetof(sbx_profile, ws_path)},
                {L_WS_MOUNT, offsetof(sbx_profile, ws_mount)},
                {L_FS_READ, offsetof(sbx_profile, fs_read)},
                {L_FS_WRITE, offsetof(sbx_profile, fs_write)},
                {L_CMD_ALLOW, offsetof(sbx_profile, cmd_allow)},
                {L_CMD_DENY, offsetof(sbx_profile, cmd_deny)},
                {L_SECRETS, offsetof(sbx_profile, secrets)},
                {L_PLACEMENT_PREFER, offsetof(sbx_profile, placement_prefer)},
                {L_PLACEMENT_FALLBACK, offsetof(sbx_profile, placement_fallback)},
                {L_ROUTE_STRATEGY, offsetof(sbx_profile, route_strategy)},
                {L_ROUTE_FALLBACK, offsetof(sbx_profile, route_fallback)},
                {L_ROUTE_CONSTRAINTS, offsetof(sbx_profile, route_constraints)},
                {L_COST_CLASS, offsetof(sbx_profile, cost_class)},
                {L_LATENCY_CLASS, offsetof(sbx_profile, latency_class)},
                {L_CWD, offsetof(sbx_profile, cwd)},
                {L_FS_HOME, offsetof(sbx_profile, fs_home)},
                {L_USER, offsetof(sbx_profile, user)},
                {L_SERVICES, offsetof(sbx_profile, net_services)},
        };

        for (size_t i = 0; i < ELEMENTSOF(ptr_leaves); i++)
                if (!has_leaf(child, ptr_leaves[i].l)) {
                        void **a = (void **) ((char *) child + ptr_leaves[i].offset);
                        void **b = (void **) ((char *) parent + ptr_leaves[i].offset);
                        void *t = *a;
                        *a = *b;
                        *b = t;
                }
        if (!has_leaf(child, L_LEVEL))
                child->level = parent->level;
        if (!has_leaf(child, L_MODE))
                child->mode = parent->mode;
        if (!has_leaf(child, L_BACKEND))
                child->backend = parent->backend;
        if (!has_leaf(child, L_NET_DEFAULT))
                child->net_allow = parent->net_allow;
        if (!has_leaf(child, L_LOOPBACK))
                child->loopback = parent->loopback;
        if (!has_leaf(child, L_WS_ACCESS))
                child->ws_access = parent->ws_access;
        if (!has_leaf(child, L_FS_EXEC)) {
                STEAL(fs_exec);
                child->fs_exec_set = parent->fs_exec_set;
        }
        if (!has_leaf(child, L_ALLOW_SPAWN))
                child->allow_spawn = parent->allow_spawn;
        if (!has_leaf(child, L_ALLOW_EXEC))
                child->allow_exec = parent->allow_exec;
        if (!has_leaf(child, L_LONG_LIVED))
                child->long_lived = parent->long_lived;
        if (!has_leaf(child, L_CMD_MODE))
                child->cmd_mode = parent->cmd_mode;
        if (!has_leaf(child, L_ON_VIOLATION))
                child->on_violation = parent->on_violation;
        if (!has_leaf(child, L_TTL_DEFAULT))
                child->ttl_default_s = parent->ttl_default_s;
        if (!has_leaf(child, L_TTL_MAX))
                child->ttl_max_s = parent->ttl_max_s;
        if (!has_leaf(child, L_TTL_IDLE))
                child->ttl_idle_s = parent->ttl_idle_s;
        if (!has_leaf(child, L_TTL_PAUSED))
                child->ttl_paused_s = parent->ttl_paused_s;
        if (!has_leaf(child, L_OBSERVE))
                child->observe = parent->observe;
        if (!has_leaf(child, L_OBSERVE_FS_WRITES))
                child->observe_fs_writes = parent->observe_fs_writes;
        if (!has_leaf(child, L_HIGH_RISK))
                child->high_risk = parent->high_risk;

        /* env is a mapping: merged by name, the child's values winning; the built-in
         * default {LANG: C.UTF-8} only applies when nobody in the chain gave env */
        if (!has_leaf(child, L_ENV)) {
                STEAL(env);
                STEAL(n_env);
        } else if (has_leaf(parent, L_ENV)) {
                for (size_t i = 0; i < child->n_env; i++) {
                        int r = profile_env_set(
                                &parent->env, &parent->n_env, child->env[i].name, child->env[i].value);
                        if (r < 0)
                                return r;
                }
                STEAL(env);
                STEAL(n_env);
        }

        for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                if (!child->limits.set[l] && parent->limits.set[l]) {
                        child->limits.value[l] = parent->limits.value[l];
                        child->limits.set[l] = true;
                        child->limits.source[l] = parent->limits.source[l];
                }
        for (int f = 0; f < _SBX_F_MAX; f++)
                child->field_set[f] = child->field_set[f] || parent->field_set[f];
        child->leaf_set_ |= parent->leaf_set_;
        return 0;
}
