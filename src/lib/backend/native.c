/* native.c — the `native` backend: user, mount, pid, net, ipc, uts and cgroup namespaces, a
 * root of read-only binds, a tmpfs scratch, the sandbox's own init as PID 1. Translates the
 * configuration into a spawn plan; the supervisor and the report are shared. */
#include "backend/backend.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "basic/strv.h"
#include "isolate/caps.h"
#include "isolate/cgroup.h"
#include "isolate/landlock.h"
#include "isolate/mount.h"
#include "isolate/seccomp.h"
#include "isolate/ns.h"
#include "supervise/spawn.h"
#include "supervise/supervise.h"

#define SANDBOX_UID 1000
#define SANDBOX_GID 1000
#define SANDBOX_HOSTNAME "sandbox"
#define SCRATCH_DIR "/tmp"
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* Where the init binary is: next to the running program (installed or build tree), else the
 * libexec directory. */
static int open_init(sbx_error *e) {
        char exe[PATH_MAX];
        const char *env = secure_getenv("SANDBOXER_INIT");
        if (env && *env) {
                int fd = open(env, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return sbx_error_set(e, errno, "init: open", "cannot open the sandbox init %s (from $SANDBOXER_INIT): %m", env);
                return fd;
        }
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 64);
        if (n > 0) {
                exe[n] = 0;
                char *slash = strrchr(exe, '/');
                if (slash) {
                        static const char *const rel[] = { "/sandboxer-init", "/../init/sandboxer-init",
                                                           "/../libexec/sandboxer/sandboxer-init" };
                        for (size_t i = 0; i < ELEMENTSOF(rel); i++) {
                                char path[PATH_MAX];
                                snprintf(path, sizeof path, "%.*s%s", (int) (slash - exe), exe, rel[i]);
                                int fd = open(path, O_RDONLY | O_CLOEXEC);
                                if (fd >= 0)
                                        return fd;
                        }
                }
        }
        int fd = open(SBX_LIBEXECDIR "/sandboxer-init", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return sbx_error_set(e, errno, "init: open",
                        "cannot find the sandbox init (sandboxer-init) next to %s or in %s: %m; reinstall sandboxer",
                        n > 0 ? exe : "the program", SBX_LIBEXECDIR);
        return fd;
}

static bool path_covered(char *const *list, const char *p) {
        STRV_FOREACH(i, list) {
                size_t l = strlen(*i);
                if (strncmp(*i, p, l) == 0 && (p[l] == '/' || p[l] == 0 || streq(*i, "/")))
                        return true;
        }
        return false;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int add_bind(sbx_mount_plan *plan, sbx_report *rep, const char *host, const char *target, bool rw,
                    char *const *all_reads, sbx_error *e) {
        struct stat st;
        if (lstat(host, &st) < 0) {
                if (errno == ENOENT) {
                        (void) sbx_report_add_mount(rep, host, target, "missing");
                        return 0;
                }
                return sbx_error_set(e, errno, "mount plan", "cannot stat %s: %m", host);
        }
        _cleanup_free_ char *real = realpath(host, NULL);
        if (!real) {
                if (errno == ENOENT) { /* dangling symlink */
                        (void) sbx_report_add_mount(rep, host, target, "missing");
                        return 0;
                }
                return sbx_error_set(e, errno, "mount plan", "cannot resolve %s: %m", host);
        }
        if (S_ISLNK(st.st_mode) && streq(host, target) && all_reads && path_covered(all_reads, real)) {
                /* /bin -> usr/bin where /usr is bound anyway: keep it a symlink, as on the host. */
                char link[PATH_MAX];
                ssize_t n = readlink(host, link, sizeof link - 1);
                if (n < 0)
                        return sbx_error_set(e, errno, "mount plan", "cannot read link %s: %m", host);
                link[n] = 0;
                (void) sbx_report_add_mount(rep, link, target, "symlink");
                return sbx_mount_plan_add(plan, SBX_MOP_SYMLINK, NULL, target, link, (size_t) n, false, false, 0);
        }
        struct stat rst;
        if (stat(real, &rst) < 0)
                return sbx_error_set(e, errno, "mount plan", "cannot stat %s: %m", real);
        char src[PATH_MAX + 16];
        snprintf(src, sizeof src, SBX_OLDROOT "%s", real);
        (void) sbx_report_add_mount(rep, real, target, rw ? "bind-rw" : "bind-ro");
        return sbx_mount_plan_add(plan, SBX_MOP_BIND, src, target, NULL, 0, rw, S_ISDIR(rst.st_mode), 0);
}

/* /etc/passwd & co: written into the root tmpfs, or (when /etc is a read-only bind) into a
 * private directory and bound over the host's file. */
static int add_generated(sbx_mount_plan *plan, const char *target, const char *text, bool etc_bound) {
        if (!etc_bound)
                return sbx_mount_plan_add(plan, SBX_MOP_FILE, NULL, target, text, strlen(text), false, false, 0644);
        char priv[PATH_MAX];
        snprintf(priv, sizeof priv, "/.sandboxer%s", target);
        int r = sbx_mount_plan_add(plan, SBX_MOP_FILE, NULL, priv, text, strlen(text), false, false, 0644);
        if (r < 0)
                return r;
        return sbx_mount_plan_add(plan, SBX_MOP_BIND_NEW, priv, target, NULL, 0, false, false, 0);
}

static int build_mounts(const sbx_config *cfg, sbx_report *rep, sbx_mount_plan **ret, sbx_error *e) {
        _cleanup_(sbx_mount_plan_freep) sbx_mount_plan *plan = NULL;
        const sbx_profile *pr = cfg->profile;
        int r = sbx_mount_plan_new(&plan);
        if (r < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");

        _cleanup_strv_free_ char **reads = strv_copy(pr->fs_read);
        if (!reads)
                return sbx_error_set(e, ENOMEM, "mount plan", "out of memory");
        /* Test hook: widen the mount view (read-only) WITHOUT a Landlock rule, so tests can show
         * that Landlock alone refuses what the mount setup would have allowed. */
        const char *extra = secure_getenv("SANDBOXER_TEST_EXTRA_RO_BIND");
        if (extra && extra[0] == '/' && strv_extend(&reads, extra) < 0)
                return sbx_error_set(e, ENOMEM, "mount plan", "out of memory");
        /* Parents before children: /usr before /usr/share. */
        qsort(reads, strv_length(reads), sizeof(char *), cmp_str);
        STRV_FOREACH(p, reads) {
                r = add_bind(plan, rep, *p, *p, false, reads, e);
                if (r < 0)
                        return r;
        }
        STRV_FOREACH(p, pr->fs_write) {
                r = add_bind(plan, rep, *p, *p, true, NULL, e);
                if (r < 0)
                        return r;
        }

        char opts[128];
        uint64_t scratch_mb = (uint64_t) ceil(cfg->limits.value[SBX_LIMIT_SCRATCH_MB]);
        snprintf(opts, sizeof opts, "mode=1777,size=%" PRIu64 "m,uid=%d,gid=%d", scratch_mb, SANDBOX_UID, SANDBOX_GID);
        (void) sbx_report_add_mount(rep, "tmpfs", SCRATCH_DIR, "tmpfs");
        if ((r = sbx_mount_plan_add(plan, SBX_MOP_TMPFS, "tmpfs", SCRATCH_DIR, opts, strlen(opts), true, true, 0)) < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");

        if (cfg->workspace && pr->ws_access == SBX_ACCESS_RW && geteuid() == 0) {
                /* As root the command runs as run_as: an idmapped mount makes its writes land
                 * owned by the workspace's owner, not by run_as (DESIGN.md principle 8). */
                const char *target = pr->ws_mount ? pr->ws_mount : "/workspace";
                _cleanup_free_ char *real = realpath(cfg->workspace, NULL);
                struct stat st;
                if (!real || stat(real, &st) < 0)
                        return sbx_error_set(e, errno, "workspace", "cannot use the workspace %s: %m", cfg->workspace);
                if (st.st_uid == 0)
                        return sbx_error_set(e, EPERM, "workspace",
                                "refusing a writable workspace owned by root (%s): the sandbox's files would land on the "
                                "host as root's; chown it to an ordinary user, or use workspace.access: ro", real);
                int fd = sbx_mount_idmapped_tree(real, st.st_uid, st.st_gid, cfg->policy->run_as, cfg->policy->run_as,
                                                 false, e);
                if (fd < 0)
                        return fd;
                (void) sbx_report_add_mount(rep, real, target, "bind-rw-idmapped");
                if ((r = sbx_mount_plan_add_fd(plan, fd, target, true)) < 0)
                        return sbx_error_set(e, r, "mount plan", "out of memory");
        } else if (cfg->workspace && pr->ws_access != SBX_ACCESS_NONE) {
                r = add_bind(plan, rep, cfg->workspace, pr->ws_mount ? pr->ws_mount : "/workspace",
                             pr->ws_access == SBX_ACCESS_RW, NULL, e);
                if (r < 0)
                        return r;
        }

        (void) sbx_report_add_mount(rep, "proc", "/proc", "proc");
        if ((r = sbx_mount_plan_add(plan, SBX_MOP_PROC, "proc", "/proc", NULL, 0, false, true, 0)) < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");

        (void) sbx_report_add_mount(rep, "tmpfs", "/dev", "dev");
        const char *devopts = "mode=0755,size=64k,nr_inodes=64";
        r = sbx_mount_plan_add(plan, SBX_MOP_TMPFS, "tmpfs", "/dev", devopts, strlen(devopts), false, true, 0);
        if (r >= 0)
                plan->ops[plan->n_ops - 1].noexec = true;
        static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(nodes); i++) {
                char src[64], dst[64];
                snprintf(src, sizeof src, SBX_OLDROOT "/dev/%s", nodes[i]);
                snprintf(dst, sizeof dst, "/dev/%s", nodes[i]);
                r = sbx_mount_plan_add(plan, SBX_MOP_DEV, src, dst, NULL, 0, true, false, 0);
        }
        static const char *const links[][2] = {
                { "/dev/fd", "/proc/self/fd" },     { "/dev/stdin", "/proc/self/fd/0" },
                { "/dev/stdout", "/proc/self/fd/1" }, { "/dev/stderr", "/proc/self/fd/2" },
                { "/dev/ptmx", "pts/ptmx" },
        };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(links); i++)
                r = sbx_mount_plan_add(plan, SBX_MOP_SYMLINK, NULL, links[i][0], links[i][1], strlen(links[i][1]),
                                       false, false, 0);
        if (r >= 0)
                r = sbx_mount_plan_add(plan, SBX_MOP_MKDIR, NULL, "/dev/pts", NULL, 0, false, true, 0755);
        if (r >= 0)
                r = sbx_mount_plan_add(plan, SBX_MOP_REMOUNT_RO, NULL, "/dev", NULL, 0, false, true, 0);
        if (r >= 0)
                r = sbx_mount_plan_add(plan, SBX_MOP_DEVPTS, "devpts", "/dev/pts", NULL, 0, false, true, 0);
        if (r < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");

        bool etc_bound = path_covered(reads, "/etc");
        static const char passwd[] = "sandbox:x:1000:1000:sandbox:" SCRATCH_DIR ":/bin/sh\n"
                                     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
        static const char group[] = "sandbox:x:1000:\nnogroup:x:65534:\n";
        if ((r = add_generated(plan, "/etc/passwd", passwd, etc_bound)) < 0 ||
            (r = add_generated(plan, "/etc/group", group, etc_bound)) < 0 ||
            (r = add_generated(plan, "/etc/hostname", SANDBOX_HOSTNAME "\n", etc_bound)) < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");

        *ret = TAKE_PTR(plan);
        return 0;
}

static int build_env(const sbx_config *cfg, char ***ret) {
        _cleanup_strv_free_ char **env = NULL;
        const char *home = SCRATCH_DIR, *path = DEFAULT_PATH, *lang = "C.UTF-8";
        for (size_t i = 0; i < cfg->n_env; i++) {
                if (streq(cfg->env[i].name, "HOME"))
                        home = cfg->env[i].value;
                else if (streq(cfg->env[i].name, "PATH"))
                        path = cfg->env[i].value;
                else if (streq(cfg->env[i].name, "LANG"))
                        lang = cfg->env[i].value;
        }
        char *s;
        if (asprintf(&s, "TMPDIR=%s", SCRATCH_DIR) < 0 || strv_consume(&env, s) < 0)
                return -ENOMEM;
        if (asprintf(&s, "HOME=%s", home) < 0 || strv_consume(&env, s) < 0)
                return -ENOMEM;
        if (asprintf(&s, "PATH=%s", path) < 0 || strv_consume(&env, s) < 0)
                return -ENOMEM;
        if (asprintf(&s, "LANG=%s", lang) < 0 || strv_consume(&env, s) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < cfg->n_env; i++) {
                const char *n = cfg->env[i].name;
                if (streq(n, "HOME") || streq(n, "PATH") || streq(n, "LANG"))
                        continue;
                if (asprintf(&s, "%s=%s", n, cfg->env[i].value) < 0 || strv_consume(&env, s) < 0)
                        return -ENOMEM;
        }
        if (cfg->workspace && cfg->profile->ws_access != SBX_ACCESS_NONE) {
                if (asprintf(&s, "SANDBOXER_WORKSPACE=%s", cfg->profile->ws_mount ? cfg->profile->ws_mount : "/workspace") < 0 ||
                    strv_consume(&env, s) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(env);
        return 0;
}

static sbx_cgroup *cgroup_destroy(sbx_cgroup *cg) {
        if (cg) {
                (void) sbx_cgroup_destroy(cg);
                sbx_cgroup_free(cg);
        }
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_cgroup *, cgroup_destroy);

static int attach_cgroup(pid_t pid, void *userdata, sbx_error *e) {
        int r = sbx_cgroup_attach(userdata, pid);
        if (r < 0)
                return sbx_error_set(e, r, "cgroup: attach", "cannot move the sandbox into its cgroup: %s", strerror(-r));
        return 0;
}

static int kill_cgroup(void *userdata) {
        return sbx_cgroup_kill(userdata);
}

static sbx_mechanism mech_of(sbx_cg_version v) {
        return v == SBX_CG_V2 ? SBX_MECH_CGROUP_V2 : v == SBX_CG_V1 ? SBX_MECH_CGROUP_V1 : SBX_MECH_NONE;
}

/* Clean-up at run start of what runs killed with SIGKILL left behind: their cgroups (mounts and
 * scratch live in the sandbox's own mount namespace and die with it). The hot path, so nothing
 * but one getdents64() per cgroup base: groups are named "<run id>.<supervisor pid>.<pid ns>"
 * (sbx_cgroup_owned_name()), and a name whose supervisor is dead is a leftover — no stamp file,
 * no stat, no file read. Best effort: what cannot be removed yet (still populated while its
 * processes die) is left for a later run or `sandboxer gc`. */
static void gc_leftovers_at_start(const sbx_cgroup_probe_result *probe) {
        (void) sbx_cgroup_gc_dead_owners(probe, NULL);
}

/* Decide what enforces each limit: cgroups where this process may use them, else the rlimit
 * that means the same for the whole sandbox, else nothing — which is a setup error unless the
 * policy lists the limit under enforce.best_effort. */
static int plan_limits(const sbx_config *cfg, sbx_report *rep, sbx_cgroup **ret_cg, sbx_rlimit_plan *rl, sbx_error *e) {
        static const struct {
                sbx_limit_id limit;
                sbx_cg_limit cg;
                sbx_cg_controller ctl;
        } cg_limits[] = {
                { SBX_LIMIT_MEMORY_MB, SBX_CG_LIMIT_MEMORY, SBX_CG_MEMORY },
                { SBX_LIMIT_PIDS, SBX_CG_LIMIT_PIDS, SBX_CG_PIDS },
                { SBX_LIMIT_CPUS, SBX_CG_LIMIT_CPUS, SBX_CG_CPU },
        };
        const sbx_policy *pol = cfg->policy;
        const sbx_limits *lim = &cfg->limits;
        char why[ELEMENTSOF(cg_limits)][sizeof ((sbx_error *) NULL)->message] = { { 0 } };
        sbx_rlimit_plan_init(rl);
        rep->limit_mechanism[SBX_LIMIT_TIMEOUT_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_BUDGET_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_OUTPUT_MB] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_SCRATCH_MB] = SBX_MECH_TMPFS;

        sbx_cgroup_probe_result probe = { 0 };
        sbx_cgroup *cg = NULL;
        int r = sbx_cgroup_probe("/sys/fs/cgroup", NULL, &probe);
        if (r >= 0) {
                gc_leftovers_at_start(&probe);
                sbx_cgroup_limits cl = {
                        .memory_bytes = (uint64_t) (lim->value[SBX_LIMIT_MEMORY_MB] * 1048576.0),
                        .pids = (uint64_t) lim->value[SBX_LIMIT_PIDS],
                        .cpus = lim->value[SBX_LIMIT_CPUS],
                };
                /* Everything may go without a cgroup here: the fallbacks are decided below. */
                unsigned all = SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_MEMORY) | SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_PIDS) |
                               SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_CPUS);
                /* Named for its owner, so that the next run can tell a leftover (above). */
                char name[64];
                sbx_error ce = { 0 };
                r = sbx_cgroup_owned_name(rep->id, name, sizeof name);
                if (r < 0)
                        snprintf(name, sizeof name, "%s", rep->id);
                r = sbx_cgroup_create(&probe, name, &cl, all, 0, &cg, &ce);
                if (r < 0)
                        cg = NULL;
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
                rep->limit_mechanism[cg_limits[i].limit] = cg ? mech_of(sbx_cgroup_mechanism(cg, cg_limits[i].cg)) : SBX_MECH_NONE;

        /* The sandbox runs under its own uid in a fresh user namespace: RLIMIT_NPROC counts its
         * tasks only (per-namespace ucounts). Not under a pids cgroup: the rlimit would refuse
         * first and the cgroup's count of refusals, our evidence, would stay 0. */
        if (rep->limit_mechanism[SBX_LIMIT_PIDS] == SBX_MECH_NONE &&
            sbx_rlimit_plan_pids(rl, (uint64_t) lim->value[SBX_LIMIT_PIDS], true) >= 0)
                rep->limit_mechanism[SBX_LIMIT_PIDS] = SBX_MECH_RLIMIT;
        if (rep->limit_mechanism[SBX_LIMIT_MEMORY_MB] == SBX_MECH_NONE &&
            sbx_rlimit_plan_memory(rl, (uint64_t) (lim->value[SBX_LIMIT_MEMORY_MB] * 1048576.0), !cfg->profile->allow_spawn) >= 0)
                rep->limit_mechanism[SBX_LIMIT_MEMORY_MB] = SBX_MECH_RLIMIT;

        for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                if (rep->limit_mechanism[l] == SBX_MECH_NONE && !pol->best_effort[l]) {
                        const char *reason = NULL;
                        for (size_t i = 0; i < ELEMENTSOF(cg_limits); i++)
                                if ((int) cg_limits[i].limit == l && why[i][0])
                                        reason = why[i];
                        cgroup_destroy(cg);
                        /* The probe's reason names its own fix; the policy way out is added. */
                        return sbx_error_set(e, EOPNOTSUPP, "limits",
                                "cannot enforce limits.%s here: %s; or list %s under enforce.best_effort in the policy file",
                                sbx_limit_to_string(l),
                                reason ? reason
                                       : "no usable cgroup controller for it; run as root, or under a delegated cgroup "
                                         "(systemd-run --user --scope -p Delegate=yes ...)",
                                sbx_limit_to_string(l));
                }
        *ret_cg = cg;
        return 0;
}

static bool exec_allowed(const sbx_profile *pr, const char *path) {
        if (!pr->fs_exec_set)
                return true;
        return path_covered(pr->fs_exec, path);
}

static int ll_add_host(int fd, int abi, const char *path, unsigned access, sbx_error *e) {
        _cleanup_free_ char *real = realpath(path, NULL);
        if (!real)
                return errno == ENOENT ? 0 : sbx_error_set(e, errno, "landlock", "cannot resolve %s: %m", path);
        int r = sbx_landlock_add_path(fd, abi, real, access);
        if (r < 0)
                return sbx_error_set(e, r, "landlock: add rule", "cannot add a Landlock rule for %s: %s", real, strerror(-r));
        return 0;
}

/* What exists only inside the sandbox gets its rules there, after pivot_root. */
static const sbx_spawn_path_rule inside_rules[] = {
        { "/", SBX_LL_LIST, false },
        { SCRATCH_DIR, SBX_LL_READ | SBX_LL_WRITE | SBX_LL_EXEC, false },
        { "/dev", SBX_LL_READ | SBX_LL_WRITE | SBX_LL_DEV, false },
        { "/proc", SBX_LL_READ, false },
        { "/etc/passwd", SBX_LL_READ, false },
        { "/etc/group", SBX_LL_READ, false },
        { "/etc/hostname", SBX_LL_READ, false },
};

/* The Landlock ruleset: the same filesystem rules as the mount view, a second, independent
 * fence. TCP is refused by Landlock when the profile wants no loopback either (with loopback,
 * the empty network namespace is the fence: Landlock rules cannot tell loopback from the rest);
 * abstract unix sockets and signals are scoped where the ABI has it (the namespaces isolate them
 * already). */
static int build_landlock(const sbx_config *cfg, int *ret_fd, int *ret_abi, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        sbx_landlock_request req = { .deny_tcp = !pr->net_allow && !pr->loopback, .min_abi = 1 };
        if (sbx_landlock_abi() >= 6)
                req.scope_abstract_unix = req.scope_signal = true;
        sbx_landlock_info info;
        _cleanup_close_ int fd = -EBADF;
        int r = sbx_landlock_ruleset_new(&req, &fd, &info, e);
        if (r < 0)
                return r;
        STRV_FOREACH(p, pr->fs_read)
                if ((r = ll_add_host(fd, info.abi, *p, SBX_LL_READ | (exec_allowed(pr, *p) ? SBX_LL_EXEC : 0), e)) < 0)
                        return r;
        STRV_FOREACH(p, pr->fs_write)
                if ((r = ll_add_host(fd, info.abi, *p, SBX_LL_READ | SBX_LL_WRITE | (exec_allowed(pr, *p) ? SBX_LL_EXEC : 0), e)) < 0)
                        return r;
        if (cfg->workspace && pr->ws_access != SBX_ACCESS_NONE &&
            (r = ll_add_host(fd, info.abi, cfg->workspace,
                             SBX_LL_READ | (pr->ws_access == SBX_ACCESS_RW ? SBX_LL_WRITE : 0) |
                                     (exec_allowed(pr, pr->ws_mount ? pr->ws_mount : "/workspace") ? SBX_LL_EXEC : 0),
                             e)) < 0)
                return r;
        *ret_abi = info.abi;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Two seccomp programs from the one rule table: the base (escape surface, sockets) loaded by
 * the spawn child for the init and everything under it, and — only with allow_spawn: false —
 * the command's own (no fork, exactly one execve through the supervisor), as raw BPF in a
 * sealed memfd the init reads and loads in the command's child. */
static int build_seccomp(const sbx_config *cfg, sbx_seccomp_prog **ret_base, int *ret_fd, bool *ret_listener,
                         sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        sbx_seccomp_opts o = {
                .deny_all_sockets_but_unix_pair = !pr->net_allow && !pr->loopback,
                .kill_on_violation = pr->on_violation == SBX_ON_VIOLATION_KILL,
        };
        _cleanup_(sbx_seccomp_prog_freep) sbx_seccomp_prog *base = NULL, *prog = NULL;
        int r = sbx_seccomp_build(&o, &base, e);
        if (r < 0)
                return r;
        *ret_listener = false;
        *ret_fd = -1;
        if (!pr->allow_spawn) {
                o.deny_spawn = true;
                o.exec = SBX_SECCOMP_EXEC_NOTIFY;
                r = sbx_seccomp_build(&o, &prog, e);
                if (r < 0)
                        return r;
                _cleanup_close_ int fd = memfd_create("sandboxer-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
                if (fd < 0)
                        return sbx_error_set(e, errno, "seccomp", "memfd_create: %m");
                r = sbx_seccomp_write_bpf(prog, fd);
                if (r < 0)
                        return sbx_error_set(e, r, "seccomp", "cannot write the seccomp program: %s", strerror(-r));
                if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
                    lseek(fd, 0, SEEK_SET) < 0)
                        return sbx_error_set(e, errno, "seccomp", "cannot seal the seccomp program: %m");
                *ret_listener = true;
                *ret_fd = TAKE_FD(fd);
        }
        *ret_base = TAKE_PTR(base);
        return 0;
}

/* Benchmark builds only (-Dbench_knobs=true): turn a layer off to measure what it costs. */
static bool bench_disabled(const char *layer) {
#if SBX_BENCH_KNOBS
        const char *v = getenv("SANDBOXER_BENCH_DISABLE");
        if (!v)
                return false;
        size_t l = strlen(layer);
        for (const char *p = v; (p = strstr(p, layer)); p += l)
                if ((p == v || p[-1] == ',') && (p[l] == 0 || p[l] == ','))
                        return true;
#else
        (void) layer;
#endif
        return false;
}

static int native_probe(char *reason, size_t size) {
        /* A cheap check; `sandboxer doctor` runs the full trial child. */
        int fd = open("/proc/sys/user/max_user_namespaces", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                char b[32] = { 0 };
                ssize_t n = read(fd, b, sizeof b - 1);
                close(fd);
                if (n > 0 && atol(b) == 0) {
                        snprintf(reason, size, "user namespaces are disabled (user.max_user_namespaces = 0); "
                                               "raise it with sysctl, or use --backend landlock");
                        return -ENOSPC;
                }
        }
        return 0;
}

static int native_run(const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        _cleanup_(sbx_mount_plan_freep) sbx_mount_plan *plan = NULL;
        _cleanup_strv_free_ char **env = NULL, **init_argv = NULL;
        _cleanup_close_ int init_fd = -EBADF, oom_fd = -EBADF, ll_fd = -EBADF, sc_fd = -EBADF;
        bool sc_listener = false;
        _cleanup_(sbx_seccomp_prog_freep) sbx_seccomp_prog *sc_base = NULL;
        int ll_abi = 0;
        _cleanup_(cgroup_destroyp) sbx_cgroup *cg = NULL;
        sbx_rlimit_plan rl;
        int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, sp[2] = { -1, -1 };
        const sbx_profile *pr = cfg->profile;
        int r;

        rep->backend = "native";
        rep->isolation = "container";

        if (bench_disabled("cgroup")) {
                sbx_rlimit_plan_init(&rl);
                for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                        rep->limit_mechanism[l] = SBX_MECH_NONE;
        } else {
                r = plan_limits(cfg, rep, &cg, &rl, e);
                if (r < 0)
                        return r;
        }

        init_fd = open_init(e);
        if (init_fd < 0)
                return init_fd;

        r = build_mounts(cfg, rep, &plan, e);
        if (r < 0)
                return r;
        if (!bench_disabled("landlock")) {
                r = build_landlock(cfg, &ll_fd, &ll_abi, e);
                if (r < 0)
                        return r;
        }
        if (!bench_disabled("seccomp")) {
                r = build_seccomp(cfg, &sc_base, &sc_fd, &sc_listener, e);
                if (r < 0)
                        return r;
        }
        r = build_env(cfg, &env);
        if (r < 0)
                return sbx_error_set(e, r, "environment", "out of memory");

        const char *cwd = cfg->cwd;
        if (!cwd)
                cwd = cfg->workspace && pr->ws_access != SBX_ACCESS_NONE ? (pr->ws_mount ? pr->ws_mount : "/workspace")
                                                                       : SCRATCH_DIR;
        if (strv_extend(&init_argv, "sandboxer-init") < 0 || strv_extend(&init_argv, "--cwd") < 0 ||
            strv_extend(&init_argv, cwd) < 0 ||
            (ll_fd >= 0 && (strv_extend(&init_argv, "--landlock-fd") < 0 || strv_extend(&init_argv, "5") < 0)) ||
            (sc_fd >= 0 && (strv_extend(&init_argv, "--seccomp-fd") < 0 || strv_extend(&init_argv, "4") < 0)) ||
            (sc_listener && strv_extend(&init_argv, "--seccomp-listener") < 0) ||
            strv_extend(&init_argv, "--") < 0)
                return sbx_error_set(e, ENOMEM, "init argv", "out of memory");
        for (char *const *a = argv; *a; a++)
                if (strv_extend(&init_argv, *a) < 0)
                        return sbx_error_set(e, ENOMEM, "init argv", "out of memory");

        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
            socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
                r = sbx_error_set(e, errno, "pipes", "cannot create pipes: %m");
                goto fail_fds;
        }

        bool privileged = geteuid() == 0;
        sbx_spawn_params sp_params = {
                .clone_flags = SBX_NS_ALL,
                .uid_inside = SANDBOX_UID,
                .gid_inside = SANDBOX_GID,
                .uid_outside = privileged ? cfg->policy->run_as : getuid(),
                .gid_outside = privileged ? cfg->policy->run_as : getgid(),
                .allow_setgroups = privileged,
                .mounts = plan,
                .hostname = SANDBOX_HOSTNAME,
                .loopback = pr->loopback,
                .init_fd = init_fd,
                .init_argv = init_argv,
                .envp = env,
                .stdin_fd = io->in_fd,
                .stdout_fd = outp[1],
                .stderr_fd = errp[1],
                .status_fd = sp[1],
                .cgroup_fd = -1,
                .landlock_fd = ll_fd,
                .landlock_abi = ll_abi,
                .inside_rules = inside_rules,
                .n_inside_rules = ELEMENTSOF(inside_rules),
                .seccomp_fd = sc_fd,
                .seccomp_base = sc_base ? &sc_base->fprog : NULL,
                .drop_caps = !bench_disabled("caps"),
                .last_cap = sbx_caps_last_cap(),
        };
        sp_params.rlimits = rl;
        /* The child joins its v1 groups itself ("0" to their tasks files) and the cgroup2 group
         * at clone: no pid written to a cgroup.procs, which would wait for an RCU grace period
         * (~10-15 ms, see cgroup.h). The parent moves it by pid only when that cannot be. */
        int cg_fds[_SBX_CG_CONTROLLER_MAX];
        int n_cg_fds = 0;
        if (cg) {
                sp_params.cgroup_fd = sbx_cgroup_v2_fd(cg);
                n_cg_fds = sbx_cgroup_self_attach_fds(cg, cg_fds, ELEMENTSOF(cg_fds));
                if (n_cg_fds >= 0) {
                        sp_params.self_attach_fds = cg_fds;
                        sp_params.n_self_attach_fds = (size_t) n_cg_fds;
                } else {
                        n_cg_fds = 0;
                        sp_params.after_clone = attach_cgroup;
                        sp_params.userdata = cg;
                }
        }

        (void) sbx_report_set_fence(rep, "namespaces", "user, mount, pid, net, ipc, uts, cgroup");
        if (ll_fd >= 0)
                (void) sbx_report_set_fence(rep, "landlock", "ABI %d: filesystem rules%s%s", ll_abi,
                                            !pr->net_allow && !pr->loopback ? ", TCP bind/connect denied" : "",
                                            ll_abi >= 6 ? ", abstract unix sockets and signals scoped" : "");
        if (sc_base)
                (void) sbx_report_set_fence(rep, "seccomp", "escape surface refused, clone3 and syscalls above %d ENOSYS, "
                                            "foreign ABIs killed%s%s", sbx_seccomp_max_known_nr(),
                                            !pr->allow_spawn ? ", no new processes, one execve" : "",
                                            !pr->net_allow && !pr->loopback ? ", sockets refused (socketpair allowed)" : "");
        if (sp_params.drop_caps)
                (void) sbx_report_set_fence(rep, "capabilities", "none (bounding, ambient, inheritable, permitted, effective)");
        (void) sbx_report_set_fence(rep, "no_new_privs", "set");
        (void) sbx_report_set_fence(rep, "user", "uid %u inside, host uid %u", SANDBOX_UID, (unsigned) sp_params.uid_outside);

        sbx_spawned sv;
        uint64_t t0 = sbx_now_ns();
        r = sbx_spawn(&sp_params, &sv, e);
        for (int i = 0; i < n_cg_fds; i++)
                close(cg_fds[i]);
        close(outp[1]), close(errp[1]), close(sp[1]);
        outp[1] = errp[1] = sp[1] = -1;
        if (r < 0)
                goto fail_fds;
        rep->setup_ms = (int64_t) ((sv.ready_ns - t0) / 1000000);

        double timeout = cfg->limits.value[SBX_LIMIT_TIMEOUT_S];
        double budget = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        sbx_supervise_params svp = {
                .pid = sv.pid,
                .pidfd = sv.pidfd,
                .status_fd = sp[0],
                .out_fd = outp[0],
                .err_fd = errp[0],
                .fwd_out = io->out_fd,
                .fwd_err = io->err_fd,
                .output_cap = (uint64_t) (cfg->limits.value[SBX_LIMIT_OUTPUT_MB] * 1048576.0),
                .start_ns = sv.ready_ns,
                .timeout_s = budget > 0 && budget < timeout ? budget : timeout,
                .grace_s = 2.0,
                .handle_signals = io->handle_signals,
                .oom_fd = -1,
                .exec_once = sc_listener,
                .kill_on_violation = pr->on_violation == SBX_ON_VIOLATION_KILL,
        };
        if (cg) {
                svp.kill_all = kill_cgroup;
                svp.userdata = cg;
                oom_fd = sbx_cgroup_event_fd(cg);
                svp.oom_fd = oom_fd >= 0 ? oom_fd : -1;
        }
        sbx_supervise_result res;
        r = sbx_supervise(&svp, &res, e);
        close(sv.pidfd);
        if (r < 0)
                return r;

        rep->wall_ms = (int64_t) ((res.reaped_ns - t0) / 1000000);
        rep->exec_ms = res.started_ns ? (int64_t) ((res.ended_ns - res.started_ns) / 1000000) : 0;
        rep->teardown_ms = (int64_t) ((sbx_now_ns() - res.ended_ns) / 1000000);
        rep->cpu_user_ms = res.rusage.ru_utime.tv_sec * 1000 + res.rusage.ru_utime.tv_usec / 1000;
        rep->cpu_sys_ms = res.rusage.ru_stime.tv_sec * 1000 + res.rusage.ru_stime.tv_usec / 1000;
        rep->max_rss_kb = res.rusage.ru_maxrss;
        rep->stdout_bytes = res.stdout_bytes;
        sbx_cgroup_stats cst = { 0 };
        bool have_stats = cg && sbx_cgroup_stats_read(cg, &cst) >= 0;
        if (have_stats && cst.pids_peak != SBX_CG_UNKNOWN)
                rep->pids_peak = (int64_t) cst.pids_peak;
        rep->stderr_bytes = res.stderr_bytes;
        rep->output_truncated = res.output_limited;

        /* Classify: what the command did, then what the sandbox did to it (precedence). */
        switch (res.end) {
        case SBX_SV_EXITED:
                rep->status = SBX_STATUS_EXITED;
                rep->has_exit_code = true;
                rep->exit_code = res.code;
                rep->cli_exit = res.code;
                break;
        case SBX_SV_SIGNALED:
                rep->status = SBX_STATUS_SIGNALED;
                rep->exit_signal = res.signal;
                rep->cli_exit = 128 + res.signal;
                break;
        case SBX_SV_EXEC_FAILED:
                rep->status = SBX_STATUS_EXITED;
                rep->has_exit_code = true;
                rep->exit_code = res.code;
                rep->cli_exit = res.code;
                (void) sbx_report_set_error(rep, "%s: %s: %s", res.code == 127 ? "command not found" : "command not executable",
                                            res.text, strerror(res.exec_errno));
                break;
        case SBX_SV_SETUP_FAILED:
        default:
                if (!res.killed) {
                        rep->status = SBX_STATUS_SETUP_ERROR;
                        rep->cli_exit = 125;
                        return sbx_error_set(e, res.exec_errno ? res.exec_errno : EIO, "sandbox init",
                                             "sandbox setup failed inside the sandbox: %s%s%s", res.text,
                                             res.exec_errno ? ": " : "", res.exec_errno ? strerror(res.exec_errno) : "");
                }
                /* Killed by us before the command ended: the cause below says which. */
                rep->status = SBX_STATUS_SIGNALED;
                rep->exit_signal = SIGKILL;
                rep->cli_exit = 128 + SIGKILL;
                break;
        }
        if (res.killed) {
                rep->killed_by_sandbox = true;
                if (rep->has_exit_code && res.end != SBX_SV_EXITED) {
                        rep->has_exit_code = false;
                }
        }
        if (res.output_limited) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_OUTPUT_LIMIT);
                sbx_detail d[2] = { { .key = "limit_bytes", .num = (int64_t) svp.output_cap },
                                    { .key = "mechanism", .str = (char *) "supervisor" } };
                (void) sbx_report_add_violation(rep, SBX_VIOLATION_OUTPUT_LIMIT, "killed",
                                                (int64_t) ((res.ended_ns - sv.ready_ns) / 1000000), NULL, d, 2);
                if (rep->cli_exit < 128)
                        rep->cli_exit = 128 + SIGKILL;
        }
        if (have_stats && cst.pids_refused != SBX_CG_UNKNOWN && cst.pids_refused > 0) {
                /* A refusal the command survives: recorded, status left to how it ended. */
                sbx_detail d[2] = { { .key = "limit", .num = (int64_t) cfg->limits.value[SBX_LIMIT_PIDS] },
                                    { .key = "refused", .num = (int64_t) cst.pids_refused } };
                (void) sbx_report_add_violation(rep, SBX_VIOLATION_PROCESS_LIMIT, "denied", rep->exec_ms, NULL, d, 2);
        }
        if (res.exec_refused > 0) {
                sbx_detail d[1] = { { .key = "rule", .str = (char *) "process.allow_spawn: false" } };
                (void) sbx_report_add_violation(rep, SBX_VIOLATION_PROCESS_LIMIT, res.violation_killed ? "killed" : "denied",
                                                res.exec_refused_first_ms, "execve", d, 1);
                sbx_violation *v = &rep->violations[rep->n_violations - 1];
                v->count = res.exec_refused;
                v->last_at_ms = res.exec_refused_last_ms;
        }
        if (res.violation_killed)
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_VIOLATION);
        if (res.oom || (have_stats && cst.oom_kills != SBX_CG_UNKNOWN && cst.oom_kills > 0)) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_MEMORY_LIMIT);
                sbx_detail d[3] = { { .key = "limit_mb", .num = (int64_t) cfg->limits.value[SBX_LIMIT_MEMORY_MB] },
                                    { .key = "oom_kills", .num = (int64_t) (cst.oom_kills == SBX_CG_UNKNOWN ? 0 : cst.oom_kills) },
                                    { .key = "peak_bytes", .num = (int64_t) (cst.memory_peak_bytes == SBX_CG_UNKNOWN ? 0 : cst.memory_peak_bytes) } };
                (void) sbx_report_add_violation(rep, SBX_VIOLATION_MEMORY_LIMIT, "killed", rep->exec_ms, NULL, d, 3);
                rep->killed_by_sandbox = true;
        }
        if (res.cancel_signal) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_CANCELLED);
                rep->cli_exit = 128 + res.cancel_signal;
        }
        if (res.timed_out) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_TIMEOUT);
                sbx_detail d[2] = { { .key = "limit_s_x1000", .num = (int64_t) (svp.timeout_s * 1000) },
                                    { .key = "limit", .str = (char *) (budget > 0 && budget < timeout ? "budget_s" : "timeout_s") } };
                (void) sbx_report_add_violation(rep, SBX_VIOLATION_TIMEOUT, "killed", res.timeout_at_ms, NULL, d, 2);
                rep->cli_exit = 124;
        }
        return 0;

fail_fds:
        for (int i = 0; i < 2; i++) {
                safe_close(outp[i]);
                safe_close(errp[i]);
                safe_close(sp[i]);
        }
        return r;
}

const sbx_backend sbx_backend_native = {
        .id = SBX_BACKEND_NATIVE,
        .level = SBX_LEVEL_CONTAINER,
        .implemented = true,
        .probe = native_probe,
        .run = native_run,
};
