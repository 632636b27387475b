/* backend.c — the backend registry and selection (explicit, or auto over the policy's list). */
#include "backend/backend.h"

#include <stdio.h>
#include <string.h>

#include "basic/macro.h"
#if HAVE_LINUX
#include "backend/oci.h"
#endif

#if !HAVE_LINUX
/* Named in the registry so that doctor and selection can say so; no capability table. */
static const sbx_backend backend_microvm = {.id = SBX_BACKEND_MICROVM, .level = SBX_LEVEL_MICROVM};
#endif

static const sbx_backend *const backends[_SBX_BACKEND_MAX] = {
#if HAVE_LINUX
        [SBX_BACKEND_NATIVE] = &sbx_backend_native,
        [SBX_BACKEND_LANDLOCK] = &sbx_backend_landlock,
        [SBX_BACKEND_BWRAP] = &sbx_backend_bwrap,
        [SBX_BACKEND_FIREJAIL] = &sbx_backend_firejail,
        [SBX_BACKEND_PODMAN] = &sbx_backend_podman,
        [SBX_BACKEND_DOCKER] = &sbx_backend_docker,
        [SBX_BACKEND_MICROVM] = &sbx_backend_microvm,
#else
        [SBX_BACKEND_MICROVM] = &backend_microvm,
#endif
};

static const char *const cap_names[_SBX_CAP_MAX] = {
        [SBX_CAP_FS_READONLY] = "fs.readonly",
        [SBX_CAP_FS_PRIVATE_VIEW] = "fs.private_view",
        [SBX_CAP_FS_WRITE_PATHS] = "fs.write_paths",
        [SBX_CAP_FS_EXEC_RULES] = "fs.exec_rules",
        [SBX_CAP_WORKSPACE_RO] = "workspace.ro",
        [SBX_CAP_WORKSPACE_RW] = "workspace.rw",
        [SBX_CAP_SCRATCH] = "scratch",
        [SBX_CAP_HOME] = "home",
        [SBX_CAP_NET_DENY] = "net.deny",
        [SBX_CAP_NET_LOOPBACK] = "net.loopback",
        [SBX_CAP_NET_HOST] = "net.host",
        [SBX_CAP_NET_EGRESS] = "net.egress_proxy",
        [SBX_CAP_PID_ISOLATION] = "pid_isolation",
        [SBX_CAP_IPC_ISOLATION] = "ipc_isolation",
        [SBX_CAP_HOSTNAME] = "hostname",
        [SBX_CAP_IDENTITY] = "identity",
        [SBX_CAP_SECCOMP] = "seccomp",
        [SBX_CAP_LANDLOCK] = "landlock",
        [SBX_CAP_CAPS_DROPPED] = "caps_dropped",
        [SBX_CAP_NO_NEW_PRIVS] = "no_new_privs",
        [SBX_CAP_NOT_HOST_ROOT] = "not_host_root",
        [SBX_CAP_SPAWN_FENCE] = "spawn_fence",
        [SBX_CAP_LIMIT_TIMEOUT] = "limit.timeout_s",
        [SBX_CAP_LIMIT_OUTPUT] = "limit.output_mb",
        [SBX_CAP_LIMIT_MEMORY] = "limit.memory_mb",
        [SBX_CAP_LIMIT_PIDS] = "limit.pids",
        [SBX_CAP_LIMIT_CPUS] = "limit.cpus",
        [SBX_CAP_LIMIT_SCRATCH] = "limit.scratch_mb",
        [SBX_CAP_OBSERVE_NETWORK] = "observe.NetworkAccessViolation",
        [SBX_CAP_OBSERVE_FS_WRITE] = "observe.FilesystemWriteViolation",
        [SBX_CAP_OBSERVE_SYSCALL] = "observe.SyscallViolation",
        [SBX_CAP_OBSERVE_PROCESS] = "observe.ProcessLimitViolation",
        [SBX_CAP_OBSERVE_MEMORY] = "observe.MemoryLimitViolation",
        [SBX_CAP_OBSERVE_TIMEOUT] = "observe.TimeoutViolation",
        [SBX_CAP_OBSERVE_OUTPUT] = "observe.OutputLimitViolation",
};

const char *sbx_cap_to_string(sbx_cap c) {
        return c >= 0 && c < _SBX_CAP_MAX ? cap_names[c] : NULL;
}

sbx_cap sbx_cap_from_string(const char *s) {
        for (int c = 0; s && c < _SBX_CAP_MAX; c++)
                if (streq(cap_names[c], s))
                        return (sbx_cap) c;
        return _SBX_CAP_INVALID;
}

const sbx_cap_decl *sbx_backend_cap(const sbx_backend *b, sbx_cap c) {
        static const sbx_cap_decl none = {false, "not implemented in this build of sandboxer"};
        if (!b || !b->implemented || !b->caps || c < 0 || c >= _SBX_CAP_MAX)
                return &none;
        return &b->caps[c];
}

#define CAP(c) (UINT64_C(1) << (c))

uint64_t sbx_level_min_caps(sbx_level l) {
        /* What any sandbox must be: a read-only view of only what the profile reads, a private
         * scratch, no network, the seccomp table, no privilege gain, never host root, and the
         * per-exec limits with their evidence. */
        uint64_t policy = CAP(SBX_CAP_FS_READONLY) | CAP(SBX_CAP_FS_PRIVATE_VIEW) | CAP(SBX_CAP_SCRATCH) |
                          CAP(SBX_CAP_NET_DENY) | CAP(SBX_CAP_SECCOMP) | CAP(SBX_CAP_NO_NEW_PRIVS) |
                          CAP(SBX_CAP_NOT_HOST_ROOT) | CAP(SBX_CAP_LIMIT_TIMEOUT) |
                          CAP(SBX_CAP_LIMIT_OUTPUT) | CAP(SBX_CAP_OBSERVE_TIMEOUT) |
                          CAP(SBX_CAP_OBSERVE_OUTPUT);
        /* A container adds namespaces: its own processes, IPC, hostname and loopback, and no
         * capabilities at all. */
        uint64_t container = policy | CAP(SBX_CAP_PID_ISOLATION) | CAP(SBX_CAP_IPC_ISOLATION) |
                             CAP(SBX_CAP_HOSTNAME) | CAP(SBX_CAP_NET_LOOPBACK) | CAP(SBX_CAP_CAPS_DROPPED);
        switch (l) {
        case SBX_LEVEL_POLICY:
                return policy;
        case SBX_LEVEL_CONTAINER:
        case SBX_LEVEL_MICROVM:
                return container;
        case _SBX_LEVEL_MAX:
        case _SBX_LEVEL_INVALID:
        default:
                return 0;
        }
}

/* A limit the backend cannot enforce is excused by enforce.best_effort, as on a host without
 * cgroups: the run goes on and the report says `none`. */
static bool limit_excused(const sbx_config *cfg, sbx_cap c) {
        const bool *be = cfg->policy->best_effort;
        switch ((int) c) {
        case SBX_CAP_LIMIT_TIMEOUT:
                return be[SBX_LIMIT_TIMEOUT_S] && be[SBX_LIMIT_BUDGET_S];
        case SBX_CAP_LIMIT_OUTPUT:
                return be[SBX_LIMIT_OUTPUT_MB];
        case SBX_CAP_LIMIT_MEMORY:
                return be[SBX_LIMIT_MEMORY_MB];
        case SBX_CAP_LIMIT_PIDS:
                return be[SBX_LIMIT_PIDS];
        case SBX_CAP_LIMIT_CPUS:
                return be[SBX_LIMIT_CPUS];
        case SBX_CAP_LIMIT_SCRATCH:
                return be[SBX_LIMIT_SCRATCH_MB];
        default:
                return false;
        }
}

sbx_cap sbx_backend_caps_missing(const sbx_backend *b, const sbx_config *cfg) {
        const sbx_profile *pr = cfg->profile;
        uint64_t need = sbx_level_min_caps(SBX_LEVEL_POLICY) | sbx_level_min_caps(pr->level) |
                        CAP(SBX_CAP_LIMIT_MEMORY) | CAP(SBX_CAP_LIMIT_PIDS) | CAP(SBX_CAP_LIMIT_CPUS) |
                        CAP(SBX_CAP_LIMIT_SCRATCH);
        if (pr->net_allow)
                need = (need & ~CAP(SBX_CAP_NET_DENY)) | CAP(SBX_CAP_NET_HOST);
        /* A loopback of the sandbox's own is something the command uses (a server and its
         * client): where there is none it is refused up front, not left to fail as sockets do
         * (the landlock backend has no network namespace, and lets no socket through then). */
        else if (pr->loopback)
                need |= CAP(SBX_CAP_NET_LOOPBACK);
        if (sbx_profile_egress_proxied(pr))
                need |= CAP(SBX_CAP_NET_EGRESS);
        if (pr->fs_write && pr->fs_write[0])
                need |= CAP(SBX_CAP_FS_WRITE_PATHS);
        if (pr->fs_home)
                need |= CAP(SBX_CAP_HOME);
        /* process.commands strict is enforced with Landlock execute rights too. */
        if (pr->fs_exec_set || pr->cmd_mode == SBX_CMD_MODE_STRICT)
                need |= CAP(SBX_CAP_FS_EXEC_RULES);
        if (cfg->workspace && pr->ws_access == SBX_ACCESS_RO)
                need |= CAP(SBX_CAP_WORKSPACE_RO);
        if (cfg->workspace && pr->ws_access == SBX_ACCESS_RW)
                need |= CAP(SBX_CAP_WORKSPACE_RW);
        if (sbx_profile_exec_once(pr))
                need |= CAP(SBX_CAP_SPAWN_FENCE);
        if (pr->observe == SBX_OBSERVE_REQUIRED)
                need |= CAP(SBX_CAP_OBSERVE_SYSCALL) | CAP(SBX_CAP_OBSERVE_NETWORK);
        if (pr->observe_fs_writes)
                need |= CAP(SBX_CAP_OBSERVE_FS_WRITE);
        for (int c = 0; c < _SBX_CAP_MAX; c++)
                if ((need & CAP(c)) && !sbx_backend_cap(b, (sbx_cap) c)->yes &&
                        !limit_excused(cfg, (sbx_cap) c))
                        return (sbx_cap) c;
        return _SBX_CAP_INVALID;
}

const sbx_backend *sbx_backend_get(sbx_backend_id id) {
        if (id < 0 || id >= _SBX_BACKEND_MAX)
                return NULL;
        return backends[id];
}

/* Why `id` cannot run cfg here, or NULL buffer untouched and 0 if it can. */
static int check(const sbx_config *cfg, sbx_backend_id id, char *why, size_t size) {
        const sbx_backend *b = sbx_backend_get(id);
        if (!b || !b->implemented) {
                snprintf(why, size, "backend %s is not implemented in this build of sandboxer",
                        sbx_backend_to_string(id));
                return -EOPNOTSUPP;
        }
        if (b->level < cfg->profile->level) {
                snprintf(why, size,
                        "backend %s provides isolation level %s, below the profile's isolation.level %s",
                        sbx_backend_to_string(id), sbx_level_to_string(b->level),
                        sbx_level_to_string(cfg->profile->level));
                return -EPERM;
        }
        sbx_cap missing = sbx_backend_caps_missing(b, cfg);
        if (missing >= 0) {
                bool limit = missing >= SBX_CAP_LIMIT_TIMEOUT && missing <= SBX_CAP_LIMIT_SCRATCH;
                snprintf(why, size, "backend %s cannot run this profile: it lacks %s (%s)%s%s",
                        sbx_backend_to_string(id), sbx_cap_to_string(missing),
                        sbx_backend_cap(b, missing)->how,
                        limit ? "; or list it under enforce.best_effort in the policy file: " : "",
                        limit ? sbx_cap_to_string(missing) + strlen("limit.") : "");
                return -EOPNOTSUPP;
        }
        if (b->probe) {
                char reason[512] = "";
                int r = b->probe(reason, sizeof reason);
                if (r >= 0 && b->probe_policy)
                        r = b->probe_policy(cfg->policy, reason, sizeof reason);
                if (r < 0) {
                        snprintf(why, size, "backend %s is unavailable: %s", sbx_backend_to_string(id),
                                reason);
                        return r;
                }
        }
        return 0;
}

bool sbx_backend_error_is_ns_refusal(const sbx_error *e) {
        if (!e || !(e->errnum == EPERM || e->errnum == ENOSPC || e->errnum == EUSERS || e->errnum == EACCES))
                return false;
        if (streq(e->step, "spawn: clone"))
                return true;
        /* Namespaces made, then what a container's seccomp profile or LSM refuses in them even so
         * (podman's default profile refuses sethostname to a container without CAP_SYS_ADMIN, a
         * fresh user namespace or not): set up in the child before the exec, so the command
         * never ran. */
        static const char *const steps[] = {"setgroups", "sethostname", "bring up loopback",
                "unshare(CLONE_NEWCGROUP)", "make mounts private", "mount root tmpfs", "mount tmpfs",
                "mount proc", "mount devpts", "bind mount", "pivot_root", "detach old root",
                "make root read-only", "make read-only", "attach idmapped mount"};
        /* and a mount tree cloned for the workspace (open_tree needs CAP_SYS_ADMIN where we are) */
        if (streq(e->step, "workspace: open_tree") && e->errnum == EPERM)
                return true;
        const char *prefix = "sandbox setup: ";
        if (strncmp(e->step, prefix, strlen(prefix)) != 0 || e->errnum == ENOSPC || e->errnum == EUSERS)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(steps); i++)
                if (streq(e->step + strlen(prefix), steps[i]))
                        return true;
        return false;
}

int sbx_backend_select(const sbx_config *cfg, const sbx_backend **ret, char **ret_note, sbx_error *e) {
        return sbx_backend_select_excluding(cfg, 0, NULL, ret, ret_note, e);
}

int sbx_backend_select_excluding(const sbx_config *cfg, unsigned exclude, const char *prior,
        const sbx_backend **ret, char **ret_note, sbx_error *e) {
        char why[768];
        if (cfg->backend != SBX_BACKEND_AUTO) {
                if (cfg->mode == SBX_MODE_STRICT) {
                        bool listed = false;
                        for (size_t i = 0; i < cfg->policy->n_mode_backends[SBX_MODE_STRICT]; i++)
                                listed = listed ||
                                         cfg->policy->mode_backends[SBX_MODE_STRICT][i] == cfg->backend;
                        if (!listed)
                                return sbx_error_set(e, EPERM, "backend",
                                        "backend %s is not a strict backend (policy modes.strict.backends)",
                                        sbx_backend_to_string(cfg->backend));
                }
                int r = check(cfg, cfg->backend, why, sizeof why);
                if (r < 0)
                        return sbx_error_set(e, r, "backend", "%s", why);
                *ret = sbx_backend_get(cfg->backend);
                if (ret_note &&
                        asprintf(ret_note, "backend %s requested (%s)", sbx_backend_to_string(cfg->backend),
                                sbx_source_to_string(cfg->backend_source)) < 0)
                        *ret_note = NULL;
                return 0;
        }

        const sbx_policy *pol = cfg->policy;
        size_t n = pol->n_mode_backends[cfg->mode];
        char skipped[2048] = "";
        if (prior)
                snprintf(skipped, sizeof skipped, "%s", prior);
        for (size_t i = 0; i < n; i++) {
                sbx_backend_id id = pol->mode_backends[cfg->mode][i];
                if (exclude & (1u << id))
                        continue;
                int r = check(cfg, id, why, sizeof why);
                if (r < 0) {
                        size_t l = strlen(skipped);
                        snprintf(skipped + l, sizeof skipped - l, "%s%s", l ? "; " : "", why);
                        continue;
                }
                *ret = sbx_backend_get(id);
                if (ret_note &&
                        asprintf(ret_note, "auto: %s is the first usable backend of modes.%s.backends%s%s",
                                sbx_backend_to_string(id), sbx_mode_to_string(cfg->mode),
                                skipped[0] ? "; skipped: " : "", skipped) < 0)
                        *ret_note = NULL;
                return 0;
        }
        return sbx_error_set(e, EOPNOTSUPP, "backend",
                "no usable backend for mode %s (policy modes.%s.backends): %s",
                sbx_mode_to_string(cfg->mode), sbx_mode_to_string(cfg->mode),
                skipped[0] ? skipped : "the list is empty");
}
