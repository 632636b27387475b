/* limits.c — what enforces each limit: cgroups, else rlimits or seccomp, else a refusal unless best effort.
 */
#include "backend/common.h"

#include <fcntl.h>
#include <unistd.h>

sbx_cgroup *sbx_backend_cgroup_destroy(sbx_cgroup *cg) {
        if (cg) {
                (void) sbx_cgroup_destroy(cg);
                sbx_cgroup_free(cg);
        }
        return NULL;
}

sbx_mechanism sbx_backend_cg_mechanism(const sbx_cgroup *cg, sbx_cg_limit l) {
        sbx_cg_version v = cg ? sbx_cgroup_mechanism(cg, l) : SBX_CG_NONE;
        return v == SBX_CG_V2 ? SBX_MECH_CGROUP_V2 : v == SBX_CG_V1 ? SBX_MECH_CGROUP_V1 : SBX_MECH_NONE;
}

int sbx_backend_cgroup_for_run(const sbx_config *cfg, const sbx_report *rep,
        const sbx_cgroup_probe_result *probe, unsigned flags, sbx_cgroup **ret, sbx_error *e) {
        const sbx_limits *lim = &cfg->limits;
        sbx_cgroup_limits cl = {
                .memory_bytes = sbx_limit_bytes(lim, SBX_LIMIT_MEMORY_MB),
                .pids = (uint64_t) lim->value[SBX_LIMIT_PIDS],
                .cpus = lim->value[SBX_LIMIT_CPUS],
        };
        /* Each may go without a cgroup: what stands in for a missing one is the caller's choice. */
        unsigned all = SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_MEMORY) | SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_PIDS) |
                       SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_CPUS);
        /* Named for its owner, so that the next run can tell a leftover (gc_leftovers). */
        char name[64];
        if (sbx_cgroup_owned_name(rep->id, name, sizeof name) < 0)
                snprintf(name, sizeof name, "%s", rep->id);
        return sbx_cgroup_create(probe, name, &cl, all, flags, ret, e);
}

sbx_cgroup *sbx_backend_freeze_group(const sbx_report *rep, int *fds, size_t max, int *ret_n) {
        sbx_cgroup_probe_result probe = {0};
        sbx_cgroup *cg = NULL;
        *ret_n = 0;
        if (sbx_cgroup_probe("/sys/fs/cgroup", NULL, &probe) >= 0) {
                char name[64];
                if (sbx_cgroup_owned_name(rep->id, name, sizeof name) < 0)
                        snprintf(name, sizeof name, "%s", rep->id);
                sbx_cgroup_limits none = {0};
                sbx_error ce = {0};
                if (sbx_cgroup_create(&probe, name, &none, 0, SBX_CG_CREATE_MOVE_SELF, &cg, &ce) < 0)
                        cg = NULL;
        }
        sbx_cgroup_probe_result_done(&probe);
        int n = cg && max > 1 ? sbx_cgroup_self_attach_fds(cg, fds, max - 1) : -1;
        int v2 = cg ? sbx_cgroup_v2_fd(cg) : -1;
        if (n >= 0 && v2 >= 0) {
                int fd = openat(v2, "cgroup.procs", O_WRONLY | O_CLOEXEC);
                if (fd >= 0)
                        fds[n++] = fd;
                else {
                        for (int k = 0; k < n; k++)
                                close(fds[k]);
                        n = -1;
                }
        }
        /* above 0-3, which a relay's start makes its stdio and status socket */
        for (int i = 0; n > 0 && i < n; i++) {
                int hi = fcntl(fds[i], F_DUPFD_CLOEXEC, 4);
                close(fds[i]);
                fds[i] = hi;
                if (hi < 0) {
                        for (int k = 0; k < i; k++)
                                close(fds[k]);
                        for (int k = i + 1; k < n; k++)
                                close(fds[k]);
                        n = -1;
                }
        }
        if (n <= 0) { /* nothing to join it by: no group */
                cg = sbx_backend_cgroup_destroy(cg);
                n = 0;
        }
        *ret_n = n;
        return cg;
}

/* Clean-up of what runs killed with SIGKILL left behind: their cgroups (mounts and scratch live
 * in the sandbox's own mount namespace and die with it). On every run, so nothing but one
 * getdents64() per cgroup base: groups are named "<run id>.<supervisor pid>.<pid ns>"
 * (sbx_cgroup_owned_name()), and a name whose supervisor is dead is a leftover — no stamp file,
 * no stat, no file read. Done once the sandbox is running (sbx_backend_launch), while its command
 * starts on another CPU; here only when no group was made (then nothing waits for it). Best
 * effort: what cannot be removed yet (still populated while its processes die) is left for a
 * later run or `sandboxer gc`. */
static void gc_leftovers(const sbx_cgroup_probe_result *probe) {
        (void) sbx_cgroup_gc_dead_owners(probe, NULL);
}

/* Decide what enforces each limit: cgroups where this process may use them, else the rlimit
 * that means the same for the whole sandbox, else nothing — which is a setup error unless the
 * policy lists the limit under enforce.best_effort. */
int sbx_backend_plan_limits(const sbx_config *cfg, sbx_report *rep, const sbx_limit_context *ctx,
        sbx_cgroup **ret_cg, sbx_rlimit_plan *rl, sbx_error *e) {
        static const struct {
                sbx_limit_id limit;
                sbx_cg_limit cg;
                sbx_cg_controller ctl;
        } cg_limits[] = {
                {SBX_LIMIT_MEMORY_MB, SBX_CG_LIMIT_MEMORY, SBX_CG_MEMORY},
                {SBX_LIMIT_PIDS, SBX_CG_LIMIT_PIDS, SBX_CG_PIDS},
                {SBX_LIMIT_CPUS, SBX_CG_LIMIT_CPUS, SBX_CG_CPU},
        };
        const sbx_policy *pol = cfg->policy;
        const sbx_limits *lim = &cfg->limits;
        char why[ELEMENTSOF(cg_limits)][sizeof((sbx_error *) NULL)->message] = {{0}};
        sbx_rlimit_plan_init(rl);
        rep->limit_mechanism[SBX_LIMIT_TIMEOUT_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_BUDGET_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_OUTPUT_MB] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_SCRATCH_MB] = ctx->scratch_tmpfs ? SBX_MECH_TMPFS : SBX_MECH_NONE;

        sbx_cgroup_probe_result probe = {0};
        sbx_cgroup *cg = NULL;
        int r = sbx_cgroup_probe("/sys/fs/cgroup", NULL, &probe);
        if (r >= 0) {
                /* No group only to track and kill the tree where it cannot outgrow what the
                 * limits' groups list: a pid namespace kills it with its PID 1, and without
                 * spawning (seccomp refuses fork and clone) it is the init and the command. */
                bool fixed_tree = !ctx->freezable &&
                                  (ctx->own_pidns || (!cfg->profile->allow_spawn &&
                                                             !sbx_backend_bench_disabled("seccomp")));
                sbx_error ce = {0};
                /* Alone in a delegated cgroup (systemd-run --scope -p Delegate=yes, what the probe's
                 * reasons tell the user to do): the "no internal processes" rule keeps the
                 * controllers from its children until this process moves into a leaf of its own. */
                r = sbx_backend_cgroup_for_run(cfg, rep, &probe,
                        SBX_CG_CREATE_MOVE_SELF | (fixed_tree ? SBX_CG_CREATE_NO_TRACKING : 0), &cg, &ce);
                if (r < 0) {
                        cg = NULL;
                        if (!ctx->keep_leftovers)
                                gc_leftovers(&probe);
                }
                /* Why a limit may end up without a cgroup: the probe's reason (with its fix), or
                 * why creating the group failed. */
                for (size_t i = 0; i < ELEMENTSOF(cg_limits); i++) {
                        const sbx_cgroup_controller_probe *c = &probe.ctl[cg_limits[i].ctl];
                        if (r < 0 && ce.message[0])
                                snprintf(why[i], sizeof why[i], "%s", ce.message);
                        else if (c->reason[0])
                                snprintf(why[i], sizeof why[i], "%s", c->reason);
                }
        } else
                for (size_t i = 0; i < ELEMENTSOF(cg_limits); i++)
                        snprintf(why[i], sizeof why[i], "cannot probe cgroups: %s", strerror(-r));
        sbx_cgroup_probe_result_done(&probe);

        for (size_t i = 0; i < ELEMENTSOF(cg_limits); i++)
                rep->limit_mechanism[cg_limits[i].limit] = sbx_backend_cg_mechanism(cg, cg_limits[i].cg);

        /* In a fresh user namespace under its own uid, RLIMIT_NPROC counts the sandbox's tasks
         * only (per-namespace ucounts). Not under a pids cgroup: the rlimit would refuse first
         * and the cgroup's count of refusals, our evidence, would stay 0. Without spawning
         * (seccomp refuses fork and clone) the command is one process: pids is then seccomp's. */
        if (rep->limit_mechanism[SBX_LIMIT_PIDS] == SBX_MECH_NONE &&
                sbx_rlimit_plan_pids(rl, (uint64_t) lim->value[SBX_LIMIT_PIDS], ctx->fresh_userns) >= 0)
                rep->limit_mechanism[SBX_LIMIT_PIDS] = SBX_MECH_RLIMIT;
        if (rep->limit_mechanism[SBX_LIMIT_PIDS] == SBX_MECH_NONE && !cfg->profile->allow_spawn &&
                !sbx_backend_bench_disabled("seccomp"))
                rep->limit_mechanism[SBX_LIMIT_PIDS] = SBX_MECH_SECCOMP;
        if (rep->limit_mechanism[SBX_LIMIT_MEMORY_MB] == SBX_MECH_NONE &&
                sbx_rlimit_plan_memory(
                        rl, sbx_limit_bytes(lim, SBX_LIMIT_MEMORY_MB), !cfg->profile->allow_spawn) >= 0)
                rep->limit_mechanism[SBX_LIMIT_MEMORY_MB] = SBX_MECH_RLIMIT;

        for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                if (rep->limit_mechanism[l] == SBX_MECH_NONE && !pol->best_effort[l]) {
                        const char *reason = NULL;
                        for (size_t i = 0; i < ELEMENTSOF(cg_limits); i++)
                                if ((int) cg_limits[i].limit == l && why[i][0])
                                        reason = why[i];
                        if (l == SBX_LIMIT_SCRATCH_MB)
                                reason = "the scratch directory cannot be a size-limited tmpfs here (no "
                                         "mount namespace "
                                         "on this backend, and mounting one on the host needs root); use "
                                         "the native "
                                         "backend";
                        sbx_backend_cgroup_destroy(cg);
                        /* The probe's reason names its own fix; the policy way out is added, and for
                         * pids the profile's: without new processes seccomp bounds them. */
                        return sbx_error_set(e, EOPNOTSUPP, "limits",
                                "cannot enforce limits.%s here: %s; or list %s under enforce.best_effort in "
                                "the policy file%s",
                                sbx_limit_to_string(l),
                                reason ? reason
                                       : "no usable cgroup controller for it; run as root, or under a "
                                         "delegated cgroup "
                                         "(systemd-run --user --scope -p Delegate=yes ...)",
                                sbx_limit_to_string(l),
                                l == SBX_LIMIT_PIDS
                                        ? "; or a profile without new processes "
                                          "(process.allow_spawn: false, as profile.python-nofork), "
                                          "which needs no pids limit"
                                        : "");
                }
        *ret_cg = cg;
        return 0;
}
