/* cgroup.c — a sandbox's own control groups on v1, v2 and hybrid hosts: create them with their
 * limits, join them, kill the whole tree (frozen and stopped processes too) and remove them.
 * Probing is cgroup-probe.c, counters and events cgroup-stats.c, leftovers cgroup-gc.c. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "basic/strv.h"
#include "isolate/cgroup-internal.h"

sbx_cgroup *sbx_cgroup_free(sbx_cgroup *cg) {
        if (!cg)
                return NULL;
        for (size_t i = 0; i < cg->n; i++)
                free(cg->g[i].path);
        for (size_t i = 0; i < cg->n_gc; i++)
                free(cg->gc_base[i]);
        safe_close(cg->v2_fd);
        free(cg->name);
        free(cg);
        return NULL;
}

sbx_cg_version sbx_cgroup_mechanism(const sbx_cgroup *cg, sbx_cg_limit l) {
        if (!cg || l < 0 || l >= _SBX_CG_LIMIT_MAX)
                return SBX_CG_NONE;
        return cg->mech[l];
}

const char *sbx_cgroup_path(const sbx_cgroup *cg, sbx_cg_controller c) {
        if (!cg || c < 0 || c > CG_V2_INDEX || cg->ctl_group[c] < 0)
                return NULL;
        return cg->g[cg->ctl_group[c]].path;
}

const char *sbx_cgroup_name(const sbx_cgroup *cg) {
        return cg ? cg->name : NULL;
}

int sbx_cgroup_v2_fd(sbx_cgroup *cg) {
        return cg ? cg->v2_fd : -1;
}

static int group_add(sbx_cgroup *cg, const sbx_cgroup_controller_probe *c, const char *name) {
        _cleanup_free_ char *path = NULL;
        if (cg_path_join(&path, c->base, name) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < cg->n; i++)
                if (streq(cg->g[i].path, path))
                        return (int) i;
        cg->g[cg->n] = (cg_group){.path = TAKE_PTR(path), .version = c->version, .real = c->real};
        return (int) cg->n++;
}

static int mkdir_ok_exists(const char *path) {
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

/* v2: make the controllers in `mask` available to the sandbox leaves: enable them in our own
 * cgroup's and in the base's cgroup.subtree_control (moving this process into a leaf first when
 * allowed and needed). */
static int v2_enable(const sbx_cgroup_probe_result *probe, unsigned mask, unsigned flags, sbx_error *e) {
        const sbx_cgroup_controller_probe *c = NULL;
        bool move = false;
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++)
                if (mask & (1u << i)) {
                        c = &probe->ctl[i];
                        move = move || probe->ctl[i].move_self;
                }
        if (!c)
                return 0;
        _cleanup_free_ char *owndir = NULL;
        if (cg_path_join(&owndir, c->mount, c->own) < 0)
                return -ENOMEM;
        /* Each subtree_control read once (not once per controller); the base's read tells
         * whether it exists (kept between runs), so no mkdir()+EEXIST in the common case. */
        _cleanup_free_ char *own_sc = NULL, *base_sc = NULL;
        int r = cg_read_at(c->base, "cgroup.subtree_control", &base_sc);
        if (r < 0) {
                r = mkdir_ok_exists(c->base);
                if (r < 0)
                        return sbx_error_set(
                                e, r, "cgroup: mkdir", "cannot create %s: %s", c->base, strerror(-r));
        }
        (void) cg_read_at(owndir, "cgroup.subtree_control", &own_sc);
        if (move && (flags & SBX_CG_CREATE_MOVE_SELF)) {
                char leaf[64], pid[32];
                snprintf(leaf, sizeof leaf, CG_SUPERVISOR_PREFIX "%d", (int) getpid());
                snprintf(pid, sizeof pid, "%d", (int) getpid());
                _cleanup_free_ char *leafdir = NULL;
                if (cg_path_join(&leafdir, c->base, leaf) < 0)
                        return -ENOMEM;
                r = mkdir_ok_exists(leafdir);
                if (r >= 0)
                        r = cg_write_at(leafdir, "cgroup.procs", pid, c->real);
                if (r < 0)
                        return sbx_error_set(e, r, "cgroup: move self",
                                "cannot move sandboxer into the leaf cgroup %s: %s", leafdir, strerror(-r));
        }
        char own_want[64] = "", base_want[64] = "";
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                if (!(mask & (1u << i)))
                        continue;
                char w[24];
                snprintf(w, sizeof w, "+%s", sbx_cg_controller_to_string(i));
                if (!own_sc || !cg_has_word(own_sc, sbx_cg_controller_to_string(i)))
                        snprintf(own_want + strlen(own_want), sizeof own_want - strlen(own_want), "%s%s",
                                own_want[0] ? " " : "", w);
                if (!base_sc || !cg_has_word(base_sc, sbx_cg_controller_to_string(i)))
                        snprintf(base_want + strlen(base_want), sizeof base_want - strlen(base_want), "%s%s",
                                base_want[0] ? " " : "", w);
        }
        if (own_want[0]) {
                r = cg_write_at(owndir, "cgroup.subtree_control", own_want, c->real);
                if (r < 0)
                        return sbx_error_set(e, r, "cgroup: subtree_control",
                                "cannot enable '%s' in %s/cgroup.subtree_control: %s%s", own_want, owndir,
                                strerror(-r),
                                r == -EBUSY
                                        ? " (the cgroup holds processes: run sandboxer alone in a delegated "
                                          "scope: systemd-run --scope -p Delegate=yes sandboxer ...)"
                                        : "");
        }
        if (base_want[0]) {
                r = cg_write_at(c->base, "cgroup.subtree_control", base_want, c->real);
                if (r < 0)
                        return sbx_error_set(e, r, "cgroup: subtree_control",
                                "cannot enable '%s' in %s/cgroup.subtree_control: %s", base_want, c->base,
                                strerror(-r));
        }
        return 0;
}

static int limit_error(sbx_error *e, int r, sbx_cg_limit l, const char *path, const char *file) {
        return sbx_error_set(e, r, "cgroup: set limit", "cannot enforce limits.%s: writing %s/%s failed: %s",
                sbx_cg_limit_to_string(l), path, file, strerror(r < 0 ? -r : r));
}

static int apply_limits(sbx_cgroup *cg, const sbx_cgroup_limits *lim, sbx_error *e) {
        int r;
        if (cg->mech[SBX_CG_LIMIT_MEMORY] != SBX_CG_NONE) {
                const cg_group *g = &cg->g[cg->ctl_group[SBX_CG_MEMORY]];
                if (g->version == SBX_CG_V2) {
                        r = cg_write_u64_at(g->path, "memory.max", lim->memory_bytes, g->real);
                        if (r < 0)
                                return limit_error(e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.max");
                        /* Without swap accounting there is no memory.swap.max: nothing to escape to.
                         * (Written, not looked for first: ENOENT says it is absent.) */
                        r = cg_write_at(g->path, "memory.swap.max", "0", g->real);
                        if (r < 0 && !(r == -ENOENT && g->real))
                                return limit_error(e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.swap.max");
                        /* An OOM kills the whole sandbox, not one process of it. */
                        r = cg_write_at(g->path, "memory.oom.group", "1", g->real);
                        if (r < 0 && !(r == -ENOENT && g->real))
                                return limit_error(e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.oom.group");
                } else {
                        /* memsw must stay >= limit: set the memory limit first. */
                        r = cg_write_u64_at(g->path, "memory.limit_in_bytes", lim->memory_bytes, g->real);
                        if (r < 0)
                                return limit_error(
                                        e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.limit_in_bytes");
                        /* Absent (ENOENT) without swap accounting: nothing to escape to. */
                        r = cg_write_u64_at(
                                g->path, "memory.memsw.limit_in_bytes", lim->memory_bytes, g->real);
                        if (r < 0 && !(r == -ENOENT && g->real))
                                return limit_error(
                                        e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.memsw.limit_in_bytes");
                }
        }
        if (cg->mech[SBX_CG_LIMIT_PIDS] != SBX_CG_NONE) {
                const cg_group *g = &cg->g[cg->ctl_group[SBX_CG_PIDS]];
                r = cg_write_u64_at(g->path, "pids.max", lim->pids, g->real);
                if (r < 0)
                        return limit_error(e, r, SBX_CG_LIMIT_PIDS, g->path, "pids.max");
        }
        if (cg->mech[SBX_CG_LIMIT_CPUS] != SBX_CG_NONE) {
                const cg_group *g = &cg->g[cg->ctl_group[SBX_CG_CPU]];
                uint64_t quota = (uint64_t) (lim->cpus * (double) CG_CPU_PERIOD_US + 0.5);
                if (quota < 1000) /* the kernel's minimum */
                        quota = 1000;
                if (g->version == SBX_CG_V2) {
                        char v[64];
                        snprintf(v, sizeof v, "%" PRIu64 " %llu", quota, CG_CPU_PERIOD_US);
                        r = cg_write_at(g->path, "cpu.max", v, g->real);
                        if (r < 0)
                                return limit_error(e, r, SBX_CG_LIMIT_CPUS, g->path, "cpu.max");
                } else {
                        r = cg_write_u64_at(g->path, "cpu.cfs_period_us", CG_CPU_PERIOD_US, g->real);
                        if (r < 0)
                                return limit_error(e, r, SBX_CG_LIMIT_CPUS, g->path, "cpu.cfs_period_us");
                        r = cg_write_u64_at(g->path, "cpu.cfs_quota_us", quota, g->real);
                        if (r < 0)
                                return limit_error(e, r, SBX_CG_LIMIT_CPUS, g->path, "cpu.cfs_quota_us");
                }
        }
        return 0;
}

static bool controller_usable(const sbx_cgroup_controller_probe *c, unsigned flags) {
        return c->usable && (!c->move_self || (flags & SBX_CG_CREATE_MOVE_SELF));
}

int sbx_cgroup_create(const sbx_cgroup_probe_result *probe, const char *name, const sbx_cgroup_limits *lim,
        unsigned best_effort, unsigned flags, sbx_cgroup **ret, sbx_error *e) {
        static const sbx_cgroup_limits none = {};
        int r;

        if (!probe || !ret)
                return sbx_error_set(e, EINVAL, "cgroup: create", "invalid arguments");
        if (!cg_name_valid(name))
                return sbx_error_set(e, EINVAL, "cgroup: create",
                        "invalid cgroup name '%s' (1-64 of [A-Za-z0-9_.-], no leading dot)",
                        name ? name : "");
        if (!lim)
                lim = &none;
        if (!(lim->cpus >= 0) || lim->cpus > 1e6) /* NaN too */
                return sbx_error_set(e, EINVAL, "cgroup: create", "invalid limits.cpus %g", lim->cpus);

        _cleanup_cgroup_ sbx_cgroup *cg = calloc(1, sizeof *cg);
        if (!cg)
                return -ENOMEM;
        cg->v2_fd = -EBADF;
        for (size_t i = 0; i <= CG_V2_INDEX; i++)
                cg->ctl_group[i] = -1;
        cg->name = strdup(name);
        if (!cg->name)
                return -ENOMEM;
        const sbx_cgroup_controller_probe *bases[_SBX_CG_CONTROLLER_MAX + 1];
        size_t nb;
        (void) cg_probe_bases(probe, bases, &nb);
        for (size_t b = 0; b < nb; b++) {
                if (!(cg->gc_base[b] = strdup(bases[b]->base)))
                        return -ENOMEM;
                cg->gc_real[b] = bases[b]->real;
                cg->n_gc = b + 1;
        }

        bool requested[_SBX_CG_LIMIT_MAX] = {
                [SBX_CG_LIMIT_MEMORY] = lim->memory_bytes > 0,
                [SBX_CG_LIMIT_PIDS] = lim->pids > 0,
                [SBX_CG_LIMIT_CPUS] = lim->cpus > 0,
        };
        for (size_t l = 0; l < _SBX_CG_LIMIT_MAX; l++) {
                const sbx_cgroup_controller_probe *c = &probe->ctl[cg_limit_controller[l]];
                if (!requested[l])
                        continue;
                if (controller_usable(c, flags)) {
                        cg->mech[l] = c->version;
                        continue;
                }
                if (best_effort & SBX_CG_LIMIT_BIT(l))
                        continue; /* reported as mechanism none */
                return sbx_error_set(e, c->errnum ? c->errnum : EOPNOTSUPP, "cgroup: limits",
                        "cannot enforce limits.%s: %s; or list %s under enforce.best_effort in the policy "
                        "file",
                        sbx_cg_limit_to_string(l), c->reason[0] ? c->reason : "no usable cgroup controller",
                        sbx_cg_limit_to_string(l));
        }

        /* One group per distinct hierarchy directory. */
        unsigned v2_mask = 0;
        bool no_tracking = flags & SBX_CG_CREATE_NO_TRACKING;
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                const sbx_cgroup_controller_probe *c = &probe->ctl[i];
                if (!controller_usable(c, flags))
                        continue;
                /* v1 freezer and cpuacct only duplicate what a cgroup2 group with cgroup.kill
                 * does (kill the tree; cpu.stat): each would cost a mkdir, an attach — the
                 * expensive part — and an rmdir per run. Nor are they made for a sandbox whose
                 * pid namespace does the killing (SBX_CG_CREATE_NO_TRACKING). */
                if (((probe->v2_kill && probe->v2.usable) || no_tracking) && c->version == SBX_CG_V1 &&
                        (i == SBX_CG_FREEZER || i == SBX_CG_CPUACCT))
                        continue;
                r = group_add(cg, c, name);
                if (r < 0)
                        return r;
                cg->ctl_group[i] = r;
                if (c->version == SBX_CG_V2 && (i == SBX_CG_MEMORY || i == SBX_CG_PIDS || i == SBX_CG_CPU))
                        v2_mask |= 1u << i;
        }
        if (probe->v2.usable && !(no_tracking && v2_mask == 0)) {
                r = group_add(cg, &probe->v2, name);
                if (r < 0)
                        return r;
                cg->ctl_group[CG_V2_INDEX] = r;
        } else {
                for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++)
                        if (cg->ctl_group[i] >= 0 && cg->g[cg->ctl_group[i]].version == SBX_CG_V2)
                                cg->ctl_group[CG_V2_INDEX] = cg->ctl_group[i];
        }

        /* The shared base is removed by whoever finds it empty (destroy, gc): if it vanishes
         * under us (ENOENT), start over. */
        for (unsigned attempt = 0;; attempt++) {
                const char *failed = NULL;
                sbx_error e_enable = {};
                r = v2_enable(probe, v2_mask, flags, &e_enable);
                for (size_t i = 0; r >= 0 && i < cg->n; i++) {
                        cg_group *g = &cg->g[i];
                        /* The base is kept between runs: make it only when missing. */
                        r = mkdir(g->path, 0755) < 0 ? negative_errno() : 0;
                        /* A v2 base with controllers must be remade by v2_enable() (the retry
                         * below); a v1 or tracking-only base just by mkdir. */
                        if (r == -ENOENT && !(g->version == SBX_CG_V2 && v2_mask)) {
                                _cleanup_free_ char *base = strdup(g->path);
                                if (!base)
                                        return -ENOMEM;
                                *strrchr(base, '/') = 0;
                                r = mkdir_ok_exists(base);
                                if (r >= 0 && mkdir(g->path, 0755) < 0)
                                        r = negative_errno();
                        }
                        if (r < 0)
                                failed = g->path;
                        else
                                g->created = true;
                }
                if (r == -ENOENT && attempt < 3) {
                        (void) sbx_cgroup_destroy(cg);
                        continue;
                }
                if (r < 0) {
                        (void) sbx_cgroup_destroy(cg);
                        if (!failed) { /* v2_enable() told the story */
                                if (e)
                                        *e = e_enable;
                                return r;
                        }
                        return sbx_error_set(e, r, "cgroup: mkdir", "cannot create cgroup %s: %s%s", failed,
                                strerror(-r),
                                r == -EEXIST ? " (a leftover of a killed run? 'sandboxer gc' removes those)"
                                             : "");
                }
                break;
        }

        if (cg->ctl_group[CG_V2_INDEX] >= 0) {
                cg->v2_fd = open(cg->g[cg->ctl_group[CG_V2_INDEX]].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (cg->v2_fd < 0) {
                        r = negative_errno();
                        (void) sbx_cgroup_destroy(cg);
                        return sbx_error_set(e, r, "cgroup: open", "cannot open %s: %s",
                                cg->g[cg->ctl_group[CG_V2_INDEX]].path, strerror(-r));
                }
        }

        r = apply_limits(cg, lim, e);
        if (r < 0) {
                (void) sbx_cgroup_destroy(cg);
                return r;
        }
        *ret = TAKE_PTR(cg);
        return 0;
}

int sbx_cgroup_attach(sbx_cgroup *cg, pid_t pid) {
        char buf[32];
        if (!cg || pid <= 0)
                return -EINVAL;
        snprintf(buf, sizeof buf, "%d", (int) pid);
        /* The cgroup2 tracking group first: every process of a sandbox is then in it, whatever
         * else fails, and sbx_cgroup_kill() may trust its "populated". */
        int v2 = cg->ctl_group[CG_V2_INDEX];
        if (v2 >= 0) {
                int r = cg_write_at(cg->g[v2].path, "cgroup.procs", buf, cg->g[v2].real);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < cg->n; i++) {
                if ((int) i == v2)
                        continue;
                int r = cg_write_at(cg->g[i].path, "cgroup.procs", buf, cg->g[i].real);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sbx_cgroup_self_attach_fds(sbx_cgroup *cg, int *fds, size_t max) {
        size_t n = 0;
        if (!cg || (!fds && max > 0))
                return -EINVAL;
        for (size_t i = 0; i < cg->n; i++) {
                if (cg->g[i].version != SBX_CG_V1)
                        continue;
                int r = -ENOBUFS;
                if (n < max) {
                        _cleanup_free_ char *p = NULL;
                        if (cg_path_join(&p, cg->g[i].path, "tasks") < 0)
                                r = -ENOMEM;
                        else {
                                fds[n] = open(p, O_WRONLY | O_CLOEXEC | O_NOCTTY);
                                r = fds[n] < 0 ? negative_errno() : 0;
                        }
                }
                if (r < 0) {
                        for (size_t j = 0; j < n; j++)
                                (void) close(fds[j]);
                        return r;
                }
                n++;
        }
        return (int) n;
}

int sbx_cgroup_self_attach(const int *fds, size_t n) {
        for (size_t i = 0; i < n; i++) {
                ssize_t k;
                do
                        k = write(fds[i], "0", 1);
                while (k < 0 && errno == EINTR);
                if (k != 1)
                        return k < 0 ? -errno : -EIO;
        }
        return 0;
}

/* SIGKILL every process listed in the group; returns how many were listed, or -errno. */
static int kill_listed(const cg_group *g) {
        _cleanup_free_ char *t = NULL;
        if (!g->real)
                return 0; /* a fake tree lists no real processes */
        int r = cg_read_at(g->path, "cgroup.procs", &t);
        if (r == -ENOENT || r == -ENODEV)
                return 0; /* the group is gone */
        if (r < 0)
                return r;
        int n = 0;
        for (char *l = t; *l;) {
                long pid = strtol(l, &l, 10);
                if (pid > 0) {
                        /* Listed means alive or exiting: a frozen task cannot be reaped, so the
                         * pid cannot have been reused meanwhile. */
                        (void) kill((pid_t) pid, SIGKILL);
                        n++;
                }
                while (*l && *l != '\n')
                        l++;
                if (*l)
                        l++;
        }
        return n;
}

static int freezer_set(const cg_group *g, const char *state, bool wait) {
        int r = cg_write_at(g->path, "freezer.state", state, true);
        if (r < 0 || !wait)
                return r;
        uint64_t deadline = cg_now_usec() + 1000000;
        for (;;) {
                _cleanup_free_ char *t = NULL;
                r = cg_read_at(g->path, "freezer.state", &t);
                if (r < 0)
                        return r;
                if (strncmp(t, state, strlen(state)) == 0)
                        return 0;
                if (cg_now_usec() > deadline)
                        return -ETIMEDOUT;
                cg_sleep_usec(1000);
        }
}

/* Does the group hold a process? 1 yes, 0 no, -errno when it cannot be told. */
static int listed_any(const cg_group *g) {
        _cleanup_free_ char *t = NULL;
        if (!g->real)
                return 0;
        int r = cg_read_at(g->path, "cgroup.procs", &t);
        if (r == -ENOENT || r == -ENODEV)
                return 0;
        if (r < 0)
                return r;
        return t[strspn(t, " \n")] != 0;
}

/* cgroup2 "populated" of a group (itself and below): 1, 0, or -errno. */
static int v2_populated(const cg_group *g) {
        uint64_t v;
        int r = cg_read_key_u64_at(g->path, "cgroup.events", "populated", &v);
        if (r == -ENOENT || r == -ENODEV)
                return 0; /* the group is gone */
        return r < 0 ? r : v != 0;
}

int sbx_cgroup_kill(sbx_cgroup *cg) {
        if (!cg)
                return -EINVAL;
        if (cg->n == 0)
                return -EOPNOTSUPP;

        /* The cgroup2 tracking group holds every process of the sandbox (attached there first,
         * or born there with CLONE_INTO_CGROUP): when it is empty — the common case at the end
         * of a run — there is nothing to kill, and one read says so. Otherwise cgroup.kill
         * kills them all at once, stopped ones too, with no fork race. */
        int v2 = cg->ctl_group[CG_V2_INDEX];
        if (v2 >= 0 && cg->g[v2].real && cg->g[v2].created) {
                const cg_group *g = &cg->g[v2];
                int pop = v2_populated(g);
                if (pop == 0)
                        return 0;
                if (cg_write_at(g->path, "cgroup.kill", "1", true) >= 0) { /* -ENOENT before 5.14 */
                        uint64_t deadline = cg_now_usec() + 5000000;
                        for (uint64_t wait = 200;; wait = MIN(wait * 2, 20000ULL)) {
                                pop = v2_populated(g);
                                if (pop == 0)
                                        return 0;
                                if (pop < 0)
                                        break; /* cannot tell: the v1 way below */
                                if (cg_now_usec() > deadline)
                                        return -EBUSY;
                                cg_sleep_usec(wait);
                        }
                }
        } else {
                /* No cgroup2 group: look before freezing; an empty sandbox needs no freeze. */
                bool any = false;
                for (size_t i = 0; i < cg->n && !any; i++)
                        if (cg->g[i].created && listed_any(&cg->g[i]) != 0)
                                any = true;
                if (!any)
                        return 0;
        }

        /* v1: freeze first so nothing forks or exits between listing and killing; frozen and
         * stopped tasks take SIGKILL once thawed. */
        const cg_group *fz = NULL;
        int fi = cg->ctl_group[SBX_CG_FREEZER];
        if (fi >= 0 && cg->g[fi].version == SBX_CG_V1 && cg->g[fi].real && cg->g[fi].created) {
                fz = &cg->g[fi];
                if (freezer_set(fz, "FROZEN", true) < 0)
                        (void) freezer_set(fz, "THAWED", false); /* kill unfrozen, loop below copes */
        }

        uint64_t deadline = cg_now_usec() + 5000000;
        int r = 0;
        for (uint64_t wait = 500;; wait = MIN(wait * 2, 20000ULL)) {
                int listed = 0;
                for (size_t i = 0; i < cg->n; i++) {
                        if (!cg->g[i].created)
                                continue;
                        int k = kill_listed(&cg->g[i]);
                        if (k < 0 && r == 0)
                                r = k;
                        if (k > 0)
                                listed += k;
                }
                if (fz) {
                        (void) freezer_set(fz, "THAWED", false);
                        fz = NULL;
                }
                if (listed == 0)
                        return r == -EACCES || r == -EPERM ? r : 0;
                if (cg_now_usec() > deadline)
                        return -EBUSY;
                cg_sleep_usec(wait);
        }
}

int sbx_cgroup_freeze(sbx_cgroup *cg, bool frozen, int timeout_ms) {
        if (!cg)
                return -EINVAL;
        uint64_t deadline = cg_now_usec() + (uint64_t) (timeout_ms > 0 ? timeout_ms : 0) * 1000;
        /* cgroup2: the core's cgroup.freeze (5.2+), also on a hybrid host's controller-less
         * hierarchy; done when cgroup.events says "frozen" (every task of the subtree stopped in
         * the kernel, not at an arbitrary point) */
        int v2 = cg->ctl_group[CG_V2_INDEX];
        if (v2 >= 0 && cg->g[v2].created) {
                const cg_group *g = &cg->g[v2];
                int r = cg_write_at(g->path, "cgroup.freeze", frozen ? "1" : "0", g->real);
                if (r < 0 || !g->real)
                        return r;
                for (uint64_t wait = 200;; wait = MIN(wait * 2, 10000ULL)) {
                        uint64_t v;
                        r = cg_read_key_u64_at(g->path, "cgroup.events", "frozen", &v);
                        if (r < 0)
                                return r;
                        if ((v != 0) == frozen)
                                return 0;
                        if (cg_now_usec() > deadline)
                                return -ETIMEDOUT;
                        cg_sleep_usec(wait);
                }
        }
        int fi = cg->ctl_group[SBX_CG_FREEZER];
        if (fi >= 0 && cg->g[fi].version == SBX_CG_V1 && cg->g[fi].created) {
                const cg_group *g = &cg->g[fi];
                const char *want = frozen ? "FROZEN" : "THAWED";
                int r = cg_write_at(g->path, "freezer.state", want, g->real);
                if (r < 0 || !g->real)
                        return r;
                for (uint64_t wait = 200;; wait = MIN(wait * 2, 10000ULL)) {
                        _cleanup_free_ char *t = NULL;
                        r = cg_read_at(g->path, "freezer.state", &t);
                        if (r < 0)
                                return r;
                        if (strncmp(t, want, strlen(want)) == 0)
                                return 0; /* FREEZING: still on its way */
                        if (cg_now_usec() > deadline)
                                return -ETIMEDOUT;
                        cg_sleep_usec(wait);
                }
        }
        return -EOPNOTSUPP;
}

int sbx_cgroup_destroy(sbx_cgroup *cg) {
        if (!cg)
                return 0;
        cg->v2_fd = safe_close(cg->v2_fd);
        /* The common end: the sandbox is gone and every group empty, which rmdir itself tells
         * (EBUSY while a process is in one). So the groups go first, and the kill — which reads
         * each group to find its processes — runs only for what rmdir refused. */
        bool left = false;
        for (size_t i = cg->n; i-- > 0;) {
                cg_group *g = &cg->g[i];
                if (!g->created)
                        continue;
                if (g->real && rmdir(g->path) == 0)
                        g->created = false;
                else
                        left = true;
        }
        if (!left)
                return 0;
        int r = sbx_cgroup_kill(cg);
        if (r == -EOPNOTSUPP)
                r = 0;
        for (size_t i = cg->n; i-- > 0;) {
                cg_group *g = &cg->g[i];
                if (!g->created)
                        continue;
                int k = cg_rmdir_tree(g->path, g->real, true);
                if (k < 0) {
                        if (r == 0)
                                r = k;
                        continue;
                }
                g->created = false;
                /* The shared base stays (see cgroup.h). */
        }
        return r;
}
