/* landlock.c — the `landlock` backend (isolation level `policy`): no namespaces, so it works
 * where they are refused (inside a default Docker container, hosts that restrict user
 * namespaces). Landlock (filesystem, TCP, scopes), seccomp, no_new_privs, rlimits and cgroups
 * where available, a fresh per-run scratch directory, and never host root. What Landlock does
 * not cover is closed by other means or declared (docs/backends.md):
 *   chmod/chown/utimes/xattrs  → seccomp (deny_metadata)
 *   UDP, raw, packet sockets    → seccomp (no AF_INET/AF_INET6 sockets at all)
 *   abstract unix sockets, signals to processes outside → Landlock scopes (ABI 6, required)
 *   pathname unix sockets       → seccomp: no socket() of any family, socketpair only (a
 *                                 profile asking for network.loopback is refused: there is none)
 *   /proc                       → unreadable unless the profile lists it (then the host's
 *                                 processes and their command lines are: no pid namespace)
 *   host hostname               → declared (no uts namespace)
 *   loopback                    → none at all (no network namespace of its own): refused
 *   network.egress              → the proxy on the host's loopback at a port of its own with a
 *                                 credential in the URL; Landlock allows connecting to that port,
 *                                 the listener makes the connect to 127.0.0.1 itself; seccomp
 *                                 allows TCP over IPv4 sockets only (docs/network.md) */
#include "backend/common.h"
#include "backend/plan.h"
#include "basic/debug.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/rm-rf.h"
#include "basic/strv.h"
#include "isolate/caps.h"
#include "isolate/cgroup.h"
#include "isolate/landlock.h"
#include "supervise/proxy-auth.h"

#define LANDLOCK_MIN_ABI 6

static int landlock_probe(char *reason, size_t size) {
        int abi = sbx_landlock_abi();
        if (abi < LANDLOCK_MIN_ABI) {
                snprintf(reason, size,
                        "Landlock ABI %d here, the landlock backend needs %d (Linux 6.12+) to keep signals "
                        "and "
                        "abstract unix sockets inside the sandbox%s",
                        abi, LANDLOCK_MIN_ABI,
                        abi == 0 ? "; Landlock is absent or not in the lsm= boot list" : "");
                return -EOPNOTSUPP;
        }
        return 0;
}

/* The per-run scratch: <runtime>/run_<id>.<pid>.<pidns>, the sandbox's TMPDIR and HOME (mode
 * 0700, owned by the sandbox's uid; a tmpfs mounted on it as root). Its owner is in its name, as
 * for the cgroups (sbx_cgroup_owned_name()): the next run and `sandboxer gc` tell a leftover of a
 * killed run from the name alone, and no pid file or subdirectory is written and removed — on a
 * host whose /run is not a tmpfs each of those is a journalled ext4 operation (50-300 us here). */
typedef struct run_dir {
        char base[PATH_MAX];
        char scratch[PATH_MAX];
        bool made, mounted;
} run_dir;

static void run_dir_remove(run_dir *d) {
        if (d->mounted && umount2(d->scratch, MNT_DETACH) == 0)
                d->mounted = false;
        if (d->made && !d->mounted) {
                /* a tmpfs took its files with it: the mount point is empty */
                if (rmdir(d->scratch) < 0 && errno != ENOENT)
                        (void) sbx_rm_rf(d->scratch);
        }
        d->made = d->mounted = false;
}

static int run_dir_make(
        run_dir *d, const sbx_report *rep, uid_t uid, gid_t gid, uint64_t scratch_bytes, sbx_error *e) {
        bool root = geteuid() == 0;
        int r = sbx_backend_scratch_dir(d->base, sizeof d->base);
        if (r == -EPERM)
                /* A directory somebody else planted (e.g. in /tmp) must not hold our scratch. */
                return sbx_error_set(e, EPERM, "scratch",
                        "refusing the runtime directory %s: not a directory owned by uid %u and writable "
                        "only by it; remove it or set SANDBOXER_RUNTIME_DIR",
                        d->base, (unsigned) geteuid());
        if (r < 0)
                return sbx_error_set(e, r, "scratch", "cannot create the runtime directory %s: %s", d->base,
                        strerror(-r));
        sbx_backend_runtime_gc(d->base);
        char name[96];
        if ((r = sbx_cgroup_owned_name(rep->id, name, sizeof name)) < 0)
                return sbx_error_set(e, r, "scratch", "cannot name the scratch directory: %s", strerror(-r));
        if (snprintf(d->scratch, sizeof d->scratch, "%s/%s", d->base, name) >= (int) sizeof d->scratch)
                return sbx_error_set(
                        e, ENAMETOOLONG, "scratch", "the runtime directory path %s is too long", d->base);
        if (mkdir(d->scratch, 0700) < 0)
                return sbx_error_set(e, errno, "scratch", "cannot create %s: %m", d->scratch);
        d->made = true;
        if (root) {
                /* A tmpfs bounds the scratch where we may mount one (root with CAP_SYS_ADMIN). */
                char opts[96];
                snprintf(opts, sizeof opts, "size=%" PRIu64 ",mode=0700,uid=%u,gid=%u", scratch_bytes,
                        (unsigned) uid, (unsigned) gid);
                if (mount("tmpfs", d->scratch, "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0)
                        d->mounted = true;
                else if (chown(d->scratch, uid, gid) < 0)
                        return sbx_error_set(e, errno, "scratch", "cannot hand %s to uid %u: %m", d->scratch,
                                (unsigned) uid);
        }
        return 0;
}

/* network.egress without a network namespace: the proxy's socket on the host's loopback, at a
 * port the kernel chooses (one per sandbox: nothing to collide), and the credential that tells
 * this sandbox's connections from anything else of the host that could reach that port. */
static int egress_listener(uint16_t *ret_port, char secret[static SBX_PROXY_SECRET_LEN + 1], sbx_error *e) {
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof a;
        if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof a) < 0 || listen(fd, 128) < 0 ||
                getsockname(fd, (struct sockaddr *) &a, &al) < 0)
                return sbx_error_set(e, errno, "egress",
                        "cannot listen for the egress proxy on the host's 127.0.0.1: %m (is loopback up "
                        "here?)");
        int r = sbx_proxy_secret_new(secret);
        if (r < 0)
                return sbx_error_set(
                        e, -r, "egress", "cannot make the proxy's credential: getrandom: %s", strerror(-r));
        *ret_port = ntohs(a.sin_port);
        return TAKE_FD(fd);
}

static int build_landlock(const sbx_config *cfg, const sbx_run_plan *rp, const run_dir *d,
        uint16_t egress_port, int *ret_fd, int *ret_abi, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        sbx_landlock_request req = {.deny_tcp = true,
                .scope_abstract_unix = true,
                .scope_signal = true,
                .min_abi = LANDLOCK_MIN_ABI};
        sbx_landlock_info info;
        _cleanup_close_ int fd = -EBADF;
        int r = sbx_landlock_ruleset_new(&req, &fd, &info, e);
        if (r < 0)
                return r;
        if ((r = sbx_backend_ll_add_profile_paths(fd, info.abi, pr, e)) < 0)
                return r;
        /* the one TCP port that may be connected to: the proxy's (the seccomp listener holds it to
         * 127.0.0.1, which a port rule cannot say) */
        if (egress_port && (r = sbx_landlock_allow_connect_port(fd, egress_port)) < 0)
                return sbx_error_set(e, -r, "landlock",
                        "cannot allow connecting to the egress proxy's port %u: %s", (unsigned) egress_port,
                        strerror(-r));
        if ((r = sbx_backend_ll_add_host(fd, info.abi, d->scratch,
                     SBX_LL_READ | SBX_LL_WRITE | (pr->cmd_mode == SBX_CMD_MODE_STRICT ? 0 : SBX_LL_EXEC),
                     e)) < 0)
                return r;
        if (rp->ws != SBX_ACCESS_NONE &&
                (r = sbx_backend_ll_add_host(fd, info.abi, rp->ws_host,
                         SBX_LL_READ | (rp->ws == SBX_ACCESS_RW ? SBX_LL_WRITE : 0) |
                                 (sbx_backend_exec_allowed(pr, rp->ws_path) ? SBX_LL_EXEC : 0),
                         e)) < 0)
                return r;
        static const char *const devs[] = {
                "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"};
        for (size_t i = 0; i < ELEMENTSOF(devs); i++)
                if ((r = sbx_backend_ll_add_host(fd, info.abi, devs[i], SBX_LL_READ | SBX_LL_WRITE, e)) < 0)
                        return r;
        /* No /proc unless the profile lists it (filesystem.read, above): there is no pid
         * namespace here, so it would show the host's processes and their command lines. */
        if ((r = sbx_backend_ll_add_commands(fd, info.abi, pr, e)) < 0)
                return r;
        *ret_abi = info.abi;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int landlock_run(
        const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        /* every cleanup variable here, above the first goto: a jump past one's initialisation
         * would free garbage (clang refuses to build that; gcc does not warn) */
        _cleanup_strv_free_ char **env = NULL, **init_argv = NULL, **writable = NULL;
        _cleanup_close_ int init_fd = -EBADF, ll_fd = -EBADF, sc_fd = -EBADF, audit_fd = -EBADF,
                            egress_fd = -EBADF;
        _cleanup_(sbx_backend_cgroup_destroyp) sbx_cgroup *cg = NULL;
        _cleanup_(sbx_run_plan_done) sbx_run_plan rp = {0};
        const sbx_profile *pr = cfg->profile;
        run_dir d = {0};
        sbx_seccomp_opts sc_opts = {0};
        int ll_abi = 0, r;
        sbx_rlimit_plan rl;
        bool egress = sbx_profile_egress_proxied(pr);
        uint16_t egress_port = 0;
        char secret[SBX_PROXY_SECRET_LEN + 1] = "", proxy[128] = "";

        rep->backend = "landlock";
        rep->isolation = "policy";

        char reason[512];
        if (landlock_probe(reason, sizeof reason) < 0)
                return sbx_error_set(
                        e, EOPNOTSUPP, "landlock", "cannot enforce the landlock backend: %s", reason);
        if (pr->net_allow)
                return sbx_error_set(e, EOPNOTSUPP, "network",
                        "network.default: allow is not available on the landlock backend (no network "
                        "namespace to share or filter); use --backend native");
        if (strv_length(pr->net_services) > 0)
                return sbx_error_set(e, EOPNOTSUPP, "network",
                        "network.services is not available on the landlock backend yet (a service's port "
                        "on the host's shared loopback would carry no credential: any process of the host "
                        "could use it); use --backend native");
        if (egress) {
                egress_fd = egress_listener(&egress_port, secret, e);
                if (egress_fd < 0)
                        return egress_fd;
                snprintf(proxy, sizeof proxy, SBX_PROXY_USER ":%s@127.0.0.1:%u", secret,
                        (unsigned) egress_port);
        }
        /* No mount namespace: the command's uid reaches the workspace by its host path. */
        static const sbx_plan_traits traits = {
                .backend = "landlock",
                .flags = SBX_PLAN_WS_REACH,
                .ws_owner_fix = "without a mount namespace there is no idmapped mount; run sandboxer as the "
                                "workspace's owner, or use --backend native",
        };
        if ((r = sbx_run_plan_make(cfg, &traits, &rp, e)) < 0)
                return r;
        r = run_dir_make(&d, rep, rp.uid, rp.gid, rp.scratch_bytes, e);
        if (r < 0)
                goto out;
        sbx_debug_mark("scratch made");
        if (d.mounted)
                (void) sbx_report_add_mount(rep, "tmpfs", d.scratch, "tmpfs");
        else
                (void) sbx_report_add_mount(rep, d.scratch, d.scratch, "dir-rw");

        if (sbx_backend_bench_disabled("cgroup")) {
                sbx_rlimit_plan_init(&rl);
        } else {
                sbx_limit_context lc = {.fresh_userns = false,
                        .scratch_tmpfs = d.mounted,
                        .freezable = io->persist != NULL,
                        .keep_leftovers = io->keep_leftovers};
                r = sbx_backend_plan_limits(cfg, rep, &lc, &cg, &rl, e);
                if (r < 0)
                        goto out;
        }
        sbx_debug_mark("limits planned (cgroup created)");
        init_fd = sbx_backend_open_init(e);
        if (init_fd < 0) {
                r = init_fd;
                goto out;
        }
        if ((r = build_landlock(cfg, &rp, &d, egress_port, &ll_fd, &ll_abi, e)) < 0)
                goto out;
        sbx_debug_mark("landlock ruleset built");
        /* no socket of any family: Landlock does not cover connecting to a host's pathname unix
         * socket, and there is no loopback of our own to offer (such profiles are refused); with
         * network.egress TCP over IPv4 only, to the proxy's port (Landlock), on 127.0.0.1 (the
         * listener, which makes that connect itself) */
        sbx_seccomp_opts extra = {.deny_inet = !egress,
                .inet_tcp_only = egress,
                .deny_metadata = true,
                .deny_all_sockets_but_unix_pair = !egress};
        if ((r = sbx_backend_build_seccomp(cfg, &extra, &sc_opts, &sc_fd, e)) < 0)
                goto out;

        sbx_debug_mark("seccomp programs built");
        audit_fd = sbx_backend_audit_reader(cfg, io, ll_abi, false, rep);
        sbx_debug_mark("audit state known");
        if ((r = egress ? sbx_backend_build_env_proxy(cfg, d.scratch, rp.ws_path, proxy, &env)
                        : sbx_backend_build_env(cfg, d.scratch, rp.ws_path, &env)) < 0 ||
                (r = sbx_backend_init_argv(sbx_run_plan_cwd(cfg, &rp, d.scratch), true, audit_fd >= 0,
                         sc_fd >= 0, argv, &init_argv)) < 0) {
                r = sbx_error_set(e, r, "environment", "out of memory");
                goto out;
        }

        sbx_spawn_params sp = {
                .clone_flags = 0,
                .uid_outside = rp.uid,
                .gid_outside = rp.gid,
                .allow_setgroups = rp.root,
                .switch_ids = rp.root,
                .init_fd = init_fd,
                .init_argv = init_argv,
                .envp = env,
                .rlimits = rl,
                .landlock_fd = ll_fd,
                .landlock_abi = ll_abi,
                .seccomp_fd = sc_fd,
                .audit_fd = audit_fd,
                .drop_caps = true,
                .drop_bounding = rp.root,
                .last_cap = sbx_caps_last_cap(),
                .egress_on_host = egress,
                .egress_host_fd = egress_fd,
                .egress_secret = secret,
        };
        (void) sbx_report_set_fence(rep, "namespaces", "none");
        (void) sbx_report_set_fence(rep, "landlock",
                "ABI %d: filesystem rules, TCP bind/connect denied%s, abstract unix "
                "sockets and signals scoped",
                ll_abi, egress ? " but connect to the egress proxy's port" : "");
        (void) sbx_report_set_fence(rep, "seccomp",
                "escape surface refused, %s, no chmod/chown/"
                "utimes/xattrs, clone3 and syscalls above %d ENOSYS, foreign ABIs killed%s%s",
                egress ? "TCP over IPv4 only (no listen, no Fast Open; connects to 127.0.0.1 and the "
                         "proxy's port only, made by the supervisor)"
                       : "no inet/packet sockets",
                sbx_seccomp_max_known_nr(), sbx_backend_spawn_fence_text(pr),
                egress ? "" : ", sockets refused (socketpair allowed)");
        (void) sbx_report_set_fence(rep, "capabilities",
                rp.root ? "none (bounding, ambient, inheritable, permitted, effective)"
                        : "none (bounding set left: an ordinary user cannot drop it; "
                          "no_new_privs keeps it unusable)");
        (void) sbx_report_set_fence(rep, "no_new_privs", "set");
        (void) sbx_report_set_fence(rep, "user", "host uid %u", (unsigned) rp.uid);

        if (sbx_backend_writable_set(cfg, d.scratch, rp.ws_rw, &writable) < 0) {
                r = sbx_error_set(e, ENOMEM, "writable set", "out of memory");
                goto out;
        }
        r = sbx_backend_launch(cfg, io, rep, &sp, cg, sc_fd >= 0 ? &sc_opts : NULL, writable, e);
        if (sp.egress_host_fd < 0) /* the launch took it (else it is closed here) */
                TAKE_FD(egress_fd);
out:
        explicit_bzero(secret, sizeof secret);
        explicit_bzero(proxy, sizeof proxy);
        run_dir_remove(&d);
        sbx_debug_mark("scratch removed");
        return r;
}

/* A persistent sandbox: the same run with no command (the init serves execs). */
static int landlock_start(const sbx_config *cfg, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        return landlock_run(cfg, NULL, io, rep, e);
}

static const sbx_cap_decl landlock_caps[_SBX_CAP_MAX] = {
        [SBX_CAP_FS_READONLY] = {true,
                "Landlock: no write right outside scratch, a rw workspace and filesystem.write"},
        [SBX_CAP_FS_PRIVATE_VIEW] = {true, "Landlock: paths outside the read list are refused (not hidden)"},
        [SBX_CAP_FS_WRITE_PATHS] = {true, "Landlock write rights"},
        [SBX_CAP_FS_EXEC_RULES] = {true, "Landlock execute right only on filesystem.exec"},
        [SBX_CAP_WORKSPACE_RO] = {true, "Landlock read rights, at the workspace's host path"},
        [SBX_CAP_WORKSPACE_RW] = {true,
                "Landlock write rights; as root only a workspace owned by run_as (no mount "
                "namespace, no idmapped mount)"},
        [SBX_CAP_SCRATCH] = {true,
                "a per-run directory under the runtime dir (as root a tmpfs, its mount point in "
                "/dev/shm/sandboxer where the runtime dir is on disk)"},
        [SBX_CAP_HOME] = {false, "no mount namespace: the sandbox sees the host's paths, and a home at "
                                 "/home/user would be the host's; use --backend native"},
        [SBX_CAP_NET_DENY] = {true,
                "seccomp: no socket() of any family (socketpair only), no connect or bind; Landlock: "
                "TCP bind/connect denied"},
        [SBX_CAP_NET_LOOPBACK] = {false,
                "no network namespace of its own, so no loopback to offer: a profile with "
                "network.loopback: true is refused (set it false)"},
        [SBX_CAP_NET_HOST] = {false, "no network namespace to share or filter; use --backend bwrap"},
        [SBX_CAP_NET_EGRESS] = {true,
                "the proxy on the host's loopback at a port of the sandbox's own, with a credential "
                "in its URL (a connection without it: 407 / SOCKS5 auth failure); Landlock TCP "
                "(ABI 4+) allows connecting to that port only, the seccomp listener (required: a "
                "sandboxer nested under another listener refuses to start) to 127.0.0.1 only; no "
                "transparent path and no "
                "resolver (programs must use the proxy variables), no network.services"},
        [SBX_CAP_PID_ISOLATION] = {false,
                "no pid namespace: /proc is unreadable unless the profile lists it, and then shows "
                "the host's processes and their command lines (signals to them are scoped away by "
                "Landlock)"},
        [SBX_CAP_IPC_ISOLATION] = {false,
                "no ipc namespace: host SysV IPC and POSIX queues (abstract unix sockets are "
                "scoped by Landlock)"},
        [SBX_CAP_HOSTNAME] = {false, "no uts namespace: the host's hostname"},
        [SBX_CAP_IDENTITY] = {false,
                "runs as the caller's uid (run_as as root) with the host's /etc/passwd"},
        [SBX_CAP_SECCOMP] = {true,
                "the rule table plus no inet sockets (with network.egress: TCP over IPv4 only, no "
                "listen, no Fast Open) and no chmod/chown/utimes/xattrs"},
        [SBX_CAP_LANDLOCK] = {true, "ABI 6+: filesystem, TCP, abstract unix sockets and signals scoped"},
        [SBX_CAP_CAPS_DROPPED] = {true,
                "all sets as root; unprivileged the bounding set stays, unusable under "
                "no_new_privs"},
        [SBX_CAP_NO_NEW_PRIVS] = {true, "set before the init runs"},
        [SBX_CAP_NOT_HOST_ROOT] = {true, "the caller's uid, run_as as root"},
        [SBX_CAP_SPAWN_FENCE] = {true,
                "seccomp: fork/clone refused (allow_spawn), the listener lets exactly one execve "
                "through (allow_spawn, allow_exec)"},
        [SBX_CAP_LIMIT_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_OUTPUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_MEMORY] = {true, "cgroup (RLIMIT_AS when spawning is off)"},
        [SBX_CAP_LIMIT_PIDS] = {true, "cgroup (seccomp when spawning is off)"},
        [SBX_CAP_LIMIT_CPUS] = {true, "cgroup"},
        [SBX_CAP_LIMIT_SCRATCH] = {true, "tmpfs size= as root; unprivileged none (best_effort)"},
        [SBX_CAP_OBSERVE_NETWORK] = {true,
                "seccomp listener: refused inet sockets; with network.egress every connect (refused "
                "but the proxy's)"},
        [SBX_CAP_OBSERVE_FS_WRITE] = {true, "seccomp listener: write-intent calls (observe.fs_writes)"},
        [SBX_CAP_OBSERVE_SYSCALL] = {true, "seccomp listener"},
        [SBX_CAP_OBSERVE_PROCESS] = {true, "pids cgroup events; spawn and exec refusals at the listener"},
        [SBX_CAP_OBSERVE_MEMORY] = {true, "memory cgroup OOM events"},
        [SBX_CAP_OBSERVE_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_OBSERVE_OUTPUT] = {true, "supervisor"},
};

const sbx_backend sbx_backend_landlock = {
        .id = SBX_BACKEND_LANDLOCK,
        .level = SBX_LEVEL_POLICY,
        .implemented = true,
        .caps = landlock_caps,
        .probe = landlock_probe,
        .run = landlock_run,
        .start = landlock_start,
};
