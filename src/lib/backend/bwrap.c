/* bwrap.c — the `bwrap` backend: bubblewrap builds the namespaces and the root view, sandboxer's
 * own init runs inside it, and the supervisor, limits and report are the shared ones.
 *
 * The spawn child (no namespaces of our own) joins the sandbox's cgroup, drops to the caller's
 * uid (run_as as root: bubblewrap then runs unprivileged, in a user namespace of its own) and
 * execs `bwrap FLAGS -- /.sandboxer-init --cwd DIR --seccomp-fd 4 -- COMMAND`. bubblewrap leaves
 * inherited descriptors alone, so the init finds its status socket (3) and seccomp programs (4);
 * fd 5 carries bubblewrap's own --seccomp program, which it reads and closes.
 *
 * Two seccomp filters, from the one rule table: bubblewrap loads the plain escape-surface table
 * (--seccomp 5) before it execs the init; the init then loads the profile's program with the
 * notification listener. Where both refuse a call the kernel takes the higher-precedence answer,
 * and SECCOMP_RET_ERRNO outranks SECCOMP_RET_USER_NOTIF: those calls (mount, unshare, ptrace, ...)
 * are refused by bubblewrap's filter and never reach the supervisor — declared, SyscallViolation
 * is not observed on this backend. bubblewrap's program is therefore built without the socket,
 * spawn and exec rules, so that network, process and exec violations still go to the listener.
 *
 * Not here (declared in the capability table): Landlock (bubblewrap makes /tmp, /proc and /dev
 * after any ruleset we could build outside, and the init cannot add rules for them), hence no
 * filesystem.exec allowlist; no generated /etc/passwd (it would need one more descriptor). */
#include "backend/common.h"
#include "backend/plan.h"
#include "basic/debug.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "basic/strv.h"
#include "isolate/caps.h"

#define SANDBOX_HOSTNAME "sandbox"
#define SCRATCH_DIR "/tmp"
#define INIT_INSIDE "/.sandboxer-init"
#define BWRAP_SECCOMP_FD "5"

static int bwrap_probe(char *reason, size_t size) {
        char path[PATH_MAX];
        int fd = sbx_backend_open_tool("bwrap", path, sizeof path);
        if (fd < 0) {
                snprintf(reason, size,
                        "bwrap (bubblewrap) not found in PATH; install bubblewrap (apt install bubblewrap)");
                return -ENOENT;
        }
        close(fd);
        fd = open("/proc/sys/user/max_user_namespaces", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                char b[32] = {0};
                ssize_t n = read(fd, b, sizeof b - 1);
                close(fd);
                if (n > 0 && atol(b) == 0) {
                        snprintf(reason, size,
                                "user namespaces are disabled (user.max_user_namespaces = 0) and "
                                "bubblewrap is not setuid; raise it with sysctl, or use --backend landlock");
                        return -ENOSPC;
                }
        }
        return 0;
}

static int push(char ***a, const char *s1, const char *s2, const char *s3) {
        if (strv_extend(a, s1) < 0 || (s2 && strv_extend(a, s2) < 0) || (s3 && strv_extend(a, s3) < 0))
                return -ENOMEM;
        return 0;
}

/* One bind of the run plan into bubblewrap's arguments (a missing one is only reported); a
 * symlink whose target is bound anyway stays a symlink, as on the host (/bin -> usr/bin). */
static int add_bind(char ***a, sbx_report *rep, const sbx_plan_bind *b, sbx_error *e) {
        if (sbx_plan_bind_missing(rep, b))
                return 0;
        if (b->at.kind == SBX_BIND_SYMLINK) {
                (void) sbx_report_add_mount(rep, b->at.link, b->target, "symlink");
                return push(a, "--symlink", b->at.link, b->target) < 0
                               ? sbx_error_set(e, ENOMEM, "mount plan", "out of memory")
                               : 0;
        }
        (void) sbx_report_add_mount(rep, b->at.real, b->target, b->rw ? "bind-rw" : "bind-ro");
        return push(a, b->rw ? "--bind" : "--ro-bind", b->at.real, b->target) < 0
                       ? sbx_error_set(e, ENOMEM, "mount plan", "out of memory")
                       : 0;
}

/* bubblewrap's own filter: the rule table without the profile's socket, spawn and exec rules
 * (those are the init's, observed), in a memfd bubblewrap reads at fd 5. */
static int build_bwrap_seccomp(const sbx_config *cfg, int *ret_fd, sbx_error *e) {
        sbx_seccomp_opts o = {.kill_on_violation = cfg->profile->on_violation == SBX_ON_VIOLATION_KILL};
        /* bwrap reads the program from the descriptor's offset to its end */
        return sbx_backend_seccomp_raw_fd(&o, ret_fd, e);
}

/* Every directory on the way searchable by uid/gid, the file readable and executable by it. */
static bool reachable_by(const char *path, uid_t uid, gid_t gid) {
        char buf[PATH_MAX];
        snprintf(buf, sizeof buf, "%s", path);
        for (char *p = buf;;) {
                char *slash = strchr(p + 1, '/');
                struct stat st;
                if (slash)
                        *slash = 0;
                if (stat(buf[0] ? buf : "/", &st) < 0)
                        return false;
                mode_t need = slash ? 1 : 5; /* x for dirs, r+x for the file */
                mode_t have = st.st_uid == uid   ? (st.st_mode >> 6) & 7
                              : st.st_gid == gid ? (st.st_mode >> 3) & 7
                                                 : st.st_mode & 7;
                if ((have & need) != need)
                        return false;
                if (!slash)
                        return true;
                *slash = '/';
                p = slash;
        }
}

/* A world-readable copy of the init (fd) in the cache dir, named by its size and mtime, written
 * once (atomically); its path into path. */
static int init_copy(int fd, char *path, size_t size, sbx_error *e) {
        struct stat st;
        const char *dir = "/var/cache/sandboxer";
        if (fstat(fd, &st) < 0)
                return sbx_error_set(e, errno, "init", "cannot stat the sandbox init: %m");
        (void) mkdir(dir, 0755);
        struct stat dst_dir;
        if (stat(dir, &dst_dir) == 0 && dst_dir.st_uid == 0 && (dst_dir.st_mode & 0555) != 0555)
                (void) chmod(dir, (dst_dir.st_mode & 07777) | 0555); /* a 0700 cache dir of an older build */
        char dst[PATH_MAX], tmp[PATH_MAX + 16];
        snprintf(dst, sizeof dst, "%s/sandboxer-init.%lld.%lld.%ld", dir, (long long) st.st_size,
                (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        struct stat ds;
        if (stat(dst, &ds) == 0 && ds.st_size == st.st_size && ds.st_uid == 0 && !(ds.st_mode & 022)) {
                snprintf(path, size, "%s", dst);
                return 0;
        }
        snprintf(tmp, sizeof tmp, "%s.%d", dst, (int) getpid());
        int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0755);
        if (out < 0)
                return sbx_error_set(e, errno, "init",
                        "the sandbox init is out of run_as's reach and cannot be copied to %s: %m", dir);
        char buf[65536];
        off_t off = 0;
        ssize_t k;
        int r = 0;
        while ((k = pread(fd, buf, sizeof buf, off)) > 0) {
                if (write(out, buf, (size_t) k) != k) {
                        r = -errno;
                        break;
                }
                off += k;
        }
        if (k < 0)
                r = -errno;
        if (close(out) < 0 && r == 0)
                r = -errno;
        if (r == 0 && (fchmodat(AT_FDCWD, tmp, 0755, 0) < 0 || rename(tmp, dst) < 0))
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return sbx_error_set(
                        e, r, "init", "cannot copy the sandbox init to %s: %s", dst, strerror(-r));
        }
        snprintf(path, size, "%s", dst);
        return 0;
}

static int build_argv(const sbx_config *cfg, const sbx_run_plan *rp, sbx_report *rep, const char *init_path,
        char *const *init_argv, char ***ret, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        _cleanup_strv_free_ char **a = NULL;
        char uid[16], gid[16], size[32];
        int r;
        snprintf(uid, sizeof uid, "%d", SBX_SANDBOX_UID);
        snprintf(gid, sizeof gid, "%d", SBX_SANDBOX_GID);
        snprintf(size, sizeof size, "%" PRIu64, rp->scratch_bytes);
        if (push(&a, "bwrap", "--unshare-all", NULL) < 0 ||
                (pr->net_allow && push(&a, "--share-net", NULL, NULL) < 0) ||
                push(&a, "--die-with-parent", "--new-session", "--as-pid-1") < 0 ||
                push(&a, "--uid", uid, NULL) < 0 || push(&a, "--gid", gid, NULL) < 0 ||
                push(&a, "--hostname", SANDBOX_HOSTNAME, NULL) < 0)
                return sbx_error_set(e, ENOMEM, "bwrap", "out of memory");

        /* read paths (parents first), write paths, the workspace: the plan's order */
        for (size_t i = 0; i < rp->n_binds; i++)
                if ((r = add_bind(&a, rep, &rp->binds[i], e)) < 0)
                        return r;
        (void) sbx_report_add_mount(rep, "proc", "/proc", "proc");
        (void) sbx_report_add_mount(rep, "tmpfs", "/dev", "dev");
        (void) sbx_report_add_mount(rep, "tmpfs", SCRATCH_DIR, "tmpfs");
        (void) sbx_report_add_mount(rep, init_path, INIT_INSIDE, "bind-ro");
        /* /dev read-only after bubblewrap filled it (its /dev/shm included); / (bubblewrap's
         * root tmpfs) read-only last. */
        if (push(&a, "--proc", "/proc", NULL) < 0 || push(&a, "--dev", "/dev", NULL) < 0 ||
                push(&a, "--remount-ro", "/dev", NULL) < 0 || push(&a, "--perms", "1777", NULL) < 0 ||
                push(&a, "--size", size, NULL) < 0 || push(&a, "--tmpfs", SCRATCH_DIR, NULL) < 0 ||
                push(&a, "--ro-bind", init_path, INIT_INSIDE) < 0 ||
                push(&a, "--remount-ro", "/", NULL) < 0 ||
                push(&a, "--seccomp", BWRAP_SECCOMP_FD, NULL) < 0 || push(&a, "--", INIT_INSIDE, NULL) < 0)
                return sbx_error_set(e, ENOMEM, "bwrap", "out of memory");
        for (char *const *i = init_argv + 1; *i; i++) /* init_argv[0] is the init's name */
                if (strv_extend(&a, *i) < 0)
                        return sbx_error_set(e, ENOMEM, "bwrap", "out of memory");
        *ret = TAKE_PTR(a);
        return 0;
}

static int bwrap_run(
        const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        _cleanup_strv_free_ char **env = NULL, **init_argv = NULL, **bw_argv = NULL, **writable = NULL;
        _cleanup_close_ int tool_fd = -EBADF, init_fd = -EBADF, sc_fd = -EBADF, bw_sc_fd = -EBADF;
        _cleanup_(sbx_backend_cgroup_destroyp) sbx_cgroup *cg = NULL;
        const sbx_profile *pr = cfg->profile;
        sbx_seccomp_opts sc_opts = {0};
        sbx_rlimit_plan rl;
        char tool[PATH_MAX], reason[512];
        int r;

        rep->backend = "bwrap";
        rep->isolation = "container";

        if (bwrap_probe(reason, sizeof reason) < 0)
                return sbx_error_set(e, EOPNOTSUPP, "bwrap", "cannot use the bwrap backend: %s", reason);
        /* bubblewrap binds the workspace by its path, as uid: it must be able to reach it */
        static const sbx_plan_traits traits = {
                .backend = "bwrap",
                .flags = SBX_PLAN_MOUNT_VIEW | SBX_PLAN_WS_REACH,
                .ws_owner_fix = "bubblewrap has no idmapped mounts; use --backend native",
        };
        _cleanup_(sbx_run_plan_done) sbx_run_plan rp = {0};
        if ((r = sbx_run_plan_make(cfg, &traits, &rp, e)) < 0)
                return r;

        /* Limits around bubblewrap: the child joins the cgroup before it execs bwrap. Not
         * RLIMIT_NPROC: bubblewrap's outer process still counts the host uid's tasks. */
        /* --unshare-all: a pid namespace whose PID 1 is the init (--as-pid-1) */
        sbx_limit_context lc = {.fresh_userns = false,
                .own_pidns = true,
                .scratch_tmpfs = true,
                .keep_leftovers = io->keep_leftovers};
        sbx_debug_mark("bwrap found, workspace checked");
        if ((r = sbx_backend_plan_limits(cfg, rep, &lc, &cg, &rl, e)) < 0)
                return r;
        tool_fd = sbx_backend_open_tool("bwrap", tool, sizeof tool);
        if (tool_fd < 0)
                return sbx_error_set(e, -tool_fd, "bwrap", "bwrap (bubblewrap) not found in PATH");
        init_fd = sbx_backend_open_init(e);
        if (init_fd < 0)
                return init_fd;
        /* bubblewrap binds the init by its host path (it has no exec-by-descriptor). */
        char fdpath[64], init_path[PATH_MAX];
        snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", init_fd);
        ssize_t n = readlink(fdpath, init_path, sizeof init_path - 1);
        if (n < 0)
                return sbx_error_set(e, errno, "init", "cannot name the sandbox init's path: %m");
        init_path[n] = 0;
        /* bubblewrap runs as uid (run_as as root): an init it cannot reach (installed or built
         * under a 0700 home) is used from a copy in the cache dir instead, made once. */
        if (rp.root && !reachable_by(init_path, rp.uid, rp.gid) &&
                (r = init_copy(init_fd, init_path, sizeof init_path, e)) < 0)
                return r;

        sbx_debug_mark("limits planned (cgroup created), init reachable");
        if ((r = sbx_backend_build_seccomp(cfg, NULL, &sc_opts, &sc_fd, e)) < 0 ||
                (r = build_bwrap_seccomp(cfg, &bw_sc_fd, e)) < 0)
                return r;
        if ((r = sbx_backend_build_env(cfg, SCRATCH_DIR, rp.ws_path, &env)) < 0 ||
                (r = sbx_backend_init_argv(sbx_run_plan_cwd(cfg, &rp, SCRATCH_DIR), false, false, sc_fd >= 0,
                         argv, &init_argv)) < 0 ||
                (r = sbx_backend_init_argv_isolated(SBX_BACKEND_BWRAP, &init_argv)) < 0 ||
                (r = sbx_backend_init_argv_egress(pr, &init_argv)) < 0)
                return sbx_error_set(
                        e, -r, "environment", "cannot build the init's command line: %s", strerror(-r));
        if ((r = build_argv(cfg, &rp, rep, init_path, init_argv, &bw_argv, e)) < 0)
                return r;
        sbx_debug_mark("seccomp programs and bwrap's command line built");
        sbx_backend_debug_argv("bwrap", bw_argv);

        sbx_spawn_params sp = {
                .clone_flags = 0,
                .uid_outside = rp.uid,
                .gid_outside = rp.gid,
                .allow_setgroups = rp.root,
                .switch_ids = rp.root,
                .init_fd = tool_fd, /* the spawn child execs bubblewrap, which starts the init */
                .init_argv = bw_argv,
                .envp = env,
                .rlimits = rl,
                .landlock_fd = bw_sc_fd, /* fd 5: bubblewrap's --seccomp (no Landlock here) */
                .seccomp_fd = sc_fd,
                .drop_caps = true,
                .drop_bounding = rp.root,
                .last_cap = sbx_caps_last_cap(),
                /* the init makes the proxy's socket in bubblewrap's network namespace */
                .egress_inside = sbx_profile_egress_proxied(pr),
        };
        (void) sbx_report_set_fence(rep, "namespaces",
                "user, mount, pid, net%s, ipc, uts, cgroup (bubblewrap --unshare-all)",
                pr->net_allow ? " (shared with the host: network.default allow)" : "");
        (void) sbx_report_set_fence(rep, "seccomp",
                "bubblewrap: escape surface refused, clone3 and syscalls above %d "
                "ENOSYS, foreign ABIs killed; sandboxer-init: the profile's program%s%s%s",
                sbx_seccomp_max_known_nr(), sc_fd >= 0 ? " with the listener" : "",
                sbx_backend_spawn_fence_text(pr),
                !pr->net_allow && !pr->loopback && !sbx_profile_egress_proxied(pr)
                        ? ", sockets refused (socketpair allowed)"
                        : "");
        (void) sbx_report_set_fence(
                rep, "landlock", "none (bubblewrap's mount namespace is the filesystem fence)");
        (void) sbx_report_set_fence(rep, "capabilities",
                "none (bubblewrap drops all in its user namespace%s)",
                rp.root ? "; bounding set dropped before it runs" : "");
        (void) sbx_report_set_fence(rep, "no_new_privs", "set");
        (void) sbx_report_set_fence(
                rep, "user", "uid %d inside, host uid %u", SBX_SANDBOX_UID, (unsigned) rp.uid);
        (void) sbx_report_set_fence(rep, "bwrap", "%s", tool);

        if (sbx_backend_writable_set(cfg, SCRATCH_DIR, rp.ws_rw, &writable) < 0)
                return sbx_error_set(e, ENOMEM, "writable set", "out of memory");
        return sbx_backend_launch(cfg, io, rep, &sp, cg, sc_fd >= 0 ? &sc_opts : NULL, writable, e);
}

static const sbx_cap_decl bwrap_caps[_SBX_CAP_MAX] = {
        [SBX_CAP_FS_READONLY] = {true,
                "--ro-bind of each read path; bubblewrap's root tmpfs and /dev remounted read-only"},
        [SBX_CAP_FS_PRIVATE_VIEW] = {true, "only the read paths are bound into bubblewrap's root"},
        [SBX_CAP_FS_WRITE_PATHS] = {true, "--bind"},
        [SBX_CAP_FS_EXEC_RULES] = {false,
                "needs Landlock, which this backend cannot apply (bubblewrap makes /tmp, "
                "/proc and /dev after the ruleset is built); use --backend native or landlock"},
        [SBX_CAP_WORKSPACE_RO] = {true, "--ro-bind at workspace.mount"},
        [SBX_CAP_WORKSPACE_RW] = {true,
                "--bind at workspace.mount; as root only a workspace owned by run_as (no idmapped "
                "mounts in bubblewrap)"},
        [SBX_CAP_SCRATCH] = {true, "bubblewrap tmpfs at /tmp"},
        [SBX_CAP_HOME] = {false, "not implemented: bubblewrap binds host paths only, and a home of its own "
                                 "would be a second tmpfs outside scratch_mb; use --backend native"},
        [SBX_CAP_NET_DENY] = {true, "--unshare-net: an empty network namespace"},
        [SBX_CAP_NET_LOOPBACK] = {true, "bubblewrap brings up lo in the new network namespace"},
        [SBX_CAP_NET_HOST] = {true, "--share-net when the policy allows host network"},
        [SBX_CAP_NET_EGRESS] = {true,
                "the init makes the proxy's socket at 127.0.0.1:3128 in bubblewrap's network "
                "namespace and hands it to the supervisor; the transparent path for connects to "
                "addresses, but no resolver (its port 53 needs a capability the init lacks there)"},
        [SBX_CAP_PID_ISOLATION] = {true, "--unshare-pid, the init as PID 1 (--as-pid-1)"},
        [SBX_CAP_IPC_ISOLATION] = {true, "--unshare-ipc"},
        [SBX_CAP_HOSTNAME] = {true, "--unshare-uts --hostname sandbox"},
        [SBX_CAP_IDENTITY] = {false,
                "uid 1000 inside (--uid), but no generated /etc/passwd: bubblewrap would need "
                "another inherited descriptor for it"},
        [SBX_CAP_SECCOMP] = {true,
                "bubblewrap --seccomp (the plain table) and sandboxer-init's own program"},
        [SBX_CAP_LANDLOCK] = {false,
                "bubblewrap makes /tmp, /proc and /dev after any ruleset built outside; its mount "
                "namespace is the filesystem fence"},
        [SBX_CAP_CAPS_DROPPED] = {true,
                "none in bubblewrap's user namespace; sandboxer drops its own before exec"},
        [SBX_CAP_NO_NEW_PRIVS] = {true, "set before bubblewrap runs, and by bubblewrap and the init"},
        [SBX_CAP_NOT_HOST_ROOT] = {true, "bubblewrap runs as the caller (run_as as root), unprivileged"},
        [SBX_CAP_SPAWN_FENCE] = {true,
                "sandboxer-init's filter with the listener (bubblewrap's lets spawning through)"},
        [SBX_CAP_LIMIT_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_OUTPUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_MEMORY] = {true, "cgroup around bubblewrap (RLIMIT_AS when spawning is off)"},
        [SBX_CAP_LIMIT_PIDS] = {true, "cgroup around bubblewrap (seccomp when spawning is off)"},
        [SBX_CAP_LIMIT_CPUS] = {true, "cgroup around bubblewrap"},
        [SBX_CAP_LIMIT_SCRATCH] = {true, "tmpfs size (--size)"},
        [SBX_CAP_OBSERVE_NETWORK] = {true, "connect/bind and refused sockets reach the init's listener"},
        [SBX_CAP_OBSERVE_FS_WRITE] = {true,
                "write-intent calls reach the init's listener (observe.fs_writes)"},
        [SBX_CAP_OBSERVE_SYSCALL] = {false,
                "bubblewrap's filter refuses the escape surface first (SECCOMP_RET_ERRNO "
                "outranks the listener's SECCOMP_RET_USER_NOTIF): refused, not recorded"},
        [SBX_CAP_OBSERVE_PROCESS] = {true, "pids cgroup events; spawn and exec refusals at the listener"},
        [SBX_CAP_OBSERVE_MEMORY] = {true, "memory cgroup OOM events"},
        [SBX_CAP_OBSERVE_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_OBSERVE_OUTPUT] = {true, "supervisor"},
};

const sbx_backend sbx_backend_bwrap = {
        .id = SBX_BACKEND_BWRAP,
        .level = SBX_LEVEL_CONTAINER,
        .implemented = true,
        .caps = bwrap_caps,
        .probe = bwrap_probe,
        .run = bwrap_run,
        .persist_why = "bubblewrap runs one command: its init is not sandboxer's --serve init; use native "
                       "or landlock",
};
