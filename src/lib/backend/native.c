/* native.c — the `native` backend: user, mount, pid, net, ipc, uts and cgroup namespaces, a
 * root of read-only binds, a tmpfs scratch, the sandbox's own init as PID 1. Translates the
 * configuration into a spawn plan; the supervisor and the report are shared. */
#include "backend/common.h"
#include "backend/plan.h"
#include "basic/debug.h"

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
#include "supervise/egress-run.h"
#include "supervise/spawn.h"
#include "supervise/supervise.h"

#define SANDBOX_UID SBX_SANDBOX_UID
#define SANDBOX_GID SBX_SANDBOX_GID
#define SANDBOX_HOSTNAME "sandbox"
#define SCRATCH_DIR "/tmp"
/* filesystem.home's directory: in scratch (its size counts in scratch_mb), bound at the home */
#define HOME_DIR SCRATCH_DIR "/.home"

/* One bind of the run plan into the mount plan (a missing one is only reported). */
static int add_bind(sbx_mount_plan *plan, sbx_report *rep, const sbx_plan_bind *b, sbx_error *e) {
        if (sbx_plan_bind_missing(rep, b))
                return 0;
        if (b->at.kind == SBX_BIND_SYMLINK) {
                (void) sbx_report_add_mount(rep, b->at.link, b->target, "symlink");
                return sbx_mount_plan_add(
                        plan, SBX_MOP_SYMLINK, NULL, b->target, b->at.link, b->at.link_len, false, false, 0);
        }
        struct stat rst;
        if (stat(b->at.real, &rst) < 0)
                return sbx_error_set(e, errno, "mount plan", "cannot stat %s: %m", b->at.real);
        char src[PATH_MAX + 16];
        snprintf(src, sizeof src, SBX_OLDROOT "%s", b->at.real);
        (void) sbx_report_add_mount(rep, b->at.real, b->target, b->rw ? "bind-rw" : "bind-ro");
        return sbx_mount_plan_add(
                plan, SBX_MOP_BIND, src, b->target, NULL, 0, b->rw, S_ISDIR(rst.st_mode), 0);
}

/* /etc/passwd & co: written into the root tmpfs, or (when /etc is a read-only bind) into a
 * private directory and bound over the host's file. */
static int add_generated(sbx_mount_plan *plan, const char *target, const char *text, bool etc_bound) {
        if (!etc_bound)
                return sbx_mount_plan_add(
                        plan, SBX_MOP_FILE, NULL, target, text, strlen(text), false, false, 0644);
        char priv[PATH_MAX];
        snprintf(priv, sizeof priv, "/.sandboxer%s", target);
        int r = sbx_mount_plan_add(plan, SBX_MOP_FILE, NULL, priv, text, strlen(text), false, false, 0644);
        if (r < 0)
                return r;
        return sbx_mount_plan_add(plan, SBX_MOP_BIND_NEW, priv, target, NULL, 0, false, false, 0);
}

static int build_mounts(const sbx_config *cfg, const sbx_run_plan *rp, const sbx_run_io *io, sbx_report *rep,
        sbx_mount_plan **ret, sbx_error *e) {
        _cleanup_(sbx_mount_plan_freep) sbx_mount_plan *plan = NULL;
        int r = sbx_mount_plan_new(&plan);
        if (r < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");

        /* The plan's binds: read paths (parents first), write paths; the workspace below. */
        for (size_t i = 0; i < rp->n_binds; i++)
                if (!rp->binds[i].workspace && (r = add_bind(plan, rep, &rp->binds[i], e)) < 0)
                        return r;

        char opts[128];
        snprintf(opts, sizeof opts, "mode=1777,size=%" PRIu64 ",uid=%d,gid=%d", rp->scratch_bytes,
                SANDBOX_UID, SANDBOX_GID);
        (void) sbx_report_add_mount(rep, "tmpfs", SCRATCH_DIR, "tmpfs");
        if ((r = sbx_mount_plan_add(
                     plan, SBX_MOP_TMPFS, "tmpfs", SCRATCH_DIR, opts, strlen(opts), true, true, 0)) < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");

        /* The home: a directory of scratch, bound at filesystem.home (mount point made in the
         * root tmpfs; a home under a read-only bind fails there, naming it). */
        if (rp->home) {
                (void) sbx_report_add_mount(rep, HOME_DIR, rp->home, "home");
                if ((r = sbx_mount_plan_add(
                             plan, SBX_MOP_MKDIR, NULL, HOME_DIR, NULL, 0, false, true, 0755)) < 0 ||
                        (r = sbx_mount_plan_add(
                                 plan, SBX_MOP_BIND_NEW, HOME_DIR, rp->home, NULL, 0, true, true, 0)) < 0)
                        return sbx_error_set(e, r, "mount plan", "out of memory");
        }

        /* Volumes: the control plane's filesystems (loop-mounted images), bound where asked. */
        for (size_t i = 0; i < io->n_volumes; i++) {
                const sbx_volume *v = &io->volumes[i];
                struct stat vst;
                /* as root: a fresh volume's root (root's, from mkfs) made the command's (run_as) */
                if (rp->root && v->rw && stat(v->host, &vst) == 0 && vst.st_uid == 0)
                        (void) !chown(v->host, rp->uid, rp->gid);
                /* the tree cloned here, with our credentials (the store is root's, 0700), and only
                 * attached inside */
                int fd = v->rw ? sbx_mount_rw_tree(v->host, e) : sbx_mount_ro_tree(v->host, e);
                if (fd < 0)
                        return fd;
                (void) sbx_report_add_mount(rep, v->host, v->target, v->rw ? "volume-rw" : "volume-ro");
                if ((r = sbx_mount_plan_add(
                             plan, SBX_MOP_MKDIR, NULL, v->target, NULL, 0, false, true, 0755)) < 0 ||
                        (r = sbx_mount_plan_add_fd(plan, fd, v->target, true)) < 0)
                        return sbx_error_set(e, r, "mount plan", "out of memory");
        }

        /* Secrets: files on a tmpfs of their own, read-only once written, never in the
         * environment. The report names the mount, not the contents. */
        if (io->n_secrets > 0) {
                char sopts[96];
                snprintf(sopts, sizeof sopts, "mode=0555,size=1m,uid=%d,gid=%d", SANDBOX_UID, SANDBOX_GID);
                (void) sbx_report_add_mount(rep, "tmpfs", "/run/secrets", "secrets");
                r = sbx_mount_plan_add(
                        plan, SBX_MOP_TMPFS, "tmpfs", "/run/secrets", sopts, strlen(sopts), true, true, 0);
                for (size_t i = 0; r >= 0 && i < io->n_secrets; i++) {
                        char target[PATH_MAX];
                        snprintf(target, sizeof target, "/run/secrets/%s", io->secrets[i].name);
                        r = sbx_mount_plan_add(plan, SBX_MOP_FILE, NULL, target, io->secrets[i].value,
                                io->secrets[i].len, false, false, 0444);
                }
                if (r >= 0)
                        r = sbx_mount_plan_add(
                                plan, SBX_MOP_REMOUNT_RO, NULL, "/run/secrets", NULL, 0, false, true, 0);
                if (r < 0)
                        return sbx_error_set(e, r, "mount plan", "out of memory");
        }

        /* The workspace, as the plan decided it. */
        if (rp->ws == SBX_ACCESS_RW && rp->root) {
                /* As root the command runs as run_as: an idmapped mount makes its writes land
                 * owned by the workspace's owner, not by run_as (DESIGN.md principle 8; the plan
                 * refused one owned by root). */
                int fd = sbx_mount_idmapped_tree(rp->ws_real, rp->ws_owner, rp->ws_group,
                        cfg->policy->run_as, cfg->policy->run_as, false, e);
                if (fd < 0)
                        return fd;
                (void) sbx_report_add_mount(rep, rp->ws_real, rp->ws_target, "bind-rw-idmapped");
                if ((r = sbx_mount_plan_add_fd(plan, fd, rp->ws_target, true)) < 0)
                        return sbx_error_set(e, r, "mount plan", "out of memory");
        } else if (rp->ws == SBX_ACCESS_RO && rp->root) {
                /* As root the sandbox's uid (run_as) may not be able to reach the workspace
                 * (e.g. under /root): the tree is cloned here, with our credentials, and only
                 * attached inside. A unix socket in it is then reachable only if run_as may write
                 * to it (a world-writable socket). */
                int fd = sbx_mount_ro_tree(rp->ws_real, e);
                if (fd < 0)
                        return fd;
                (void) sbx_report_add_mount(rep, rp->ws_real, rp->ws_target, "bind-ro");
                if ((r = sbx_mount_plan_add_fd(plan, fd, rp->ws_target, true)) < 0)
                        return sbx_error_set(e, r, "mount plan", "out of memory");
        } else if (rp->ws == SBX_ACCESS_RO) {
                /* A read-only overlay rather than a bind: the same files, but a unix socket that
                 * a host process listens on in the workspace cannot be connected to through it
                 * (a bind would hand the sandbox the socket's inode; Landlock has no rule for
                 * connect). */
                char src[PATH_MAX + 16];
                snprintf(src, sizeof src, SBX_OLDROOT "%s", rp->ws_real);
                (void) sbx_report_add_mount(rep, rp->ws_real, rp->ws_target, "overlay-ro");
                if ((r = sbx_mount_plan_add(plan, SBX_MOP_OVERLAY_RO, src, rp->ws_target,
                             "/.sandboxer/empty", strlen("/.sandboxer/empty"), false, true, 0)) < 0)
                        return sbx_error_set(e, r, "mount plan", "out of memory");
        } else if (rp->ws == SBX_ACCESS_RW) {
                for (size_t i = 0; i < rp->n_binds; i++)
                        if (rp->binds[i].workspace && (r = add_bind(plan, rep, &rp->binds[i], e)) < 0)
                                return r;
        }

        (void) sbx_report_add_mount(rep, "proc", "/proc", "proc");
        if ((r = sbx_mount_plan_add(plan, SBX_MOP_PROC, "proc", "/proc", NULL, 0, false, true, 0)) < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");

        (void) sbx_report_add_mount(rep, "tmpfs", "/dev", "dev");
        const char *devopts = "mode=0755,size=64k,nr_inodes=64";
        r = sbx_mount_plan_add(
                plan, SBX_MOP_TMPFS, "tmpfs", "/dev", devopts, strlen(devopts), false, true, 0);
        if (r >= 0)
                plan->ops[plan->n_ops - 1].noexec = true;
        static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(nodes); i++) {
                char src[64], dst[64];
                snprintf(src, sizeof src, SBX_OLDROOT "/dev/%s", nodes[i]);
                snprintf(dst, sizeof dst, "/dev/%s", nodes[i]);
                r = sbx_mount_plan_add(plan, SBX_MOP_DEV, src, dst, NULL, 0, true, false, 0);
        }
        static const char *const links[][2] = {
                {"/dev/fd", "/proc/self/fd"},
                {"/dev/stdin", "/proc/self/fd/0"},
                {"/dev/stdout", "/proc/self/fd/1"},
                {"/dev/stderr", "/proc/self/fd/2"},
                {"/dev/ptmx", "pts/ptmx"},
        };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(links); i++)
                r = sbx_mount_plan_add(plan, SBX_MOP_SYMLINK, NULL, links[i][0], links[i][1],
                        strlen(links[i][1]), false, false, 0);
        if (r >= 0)
                r = sbx_mount_plan_add(plan, SBX_MOP_MKDIR, NULL, "/dev/pts", NULL, 0, false, true, 0755);
        if (r >= 0)
                r = sbx_mount_plan_add(plan, SBX_MOP_REMOUNT_RO, NULL, "/dev", NULL, 0, false, true, 0);
        if (r >= 0)
                r = sbx_mount_plan_add(plan, SBX_MOP_DEVPTS, "devpts", "/dev/pts", NULL, 0, false, true, 0);
        if (r < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");

        /* uid 1000 by the profile's name for it (user), at home there (filesystem.home, else
         * scratch) */
        bool etc_bound = sbx_path_covered(rp->reads, "/etc");
        const char *user = cfg->profile->user ? cfg->profile->user : "sandbox";
        char passwd[512], group[256];
        snprintf(passwd, sizeof passwd,
                "%s:x:1000:1000:%s:%s:/bin/sh\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                user, user, rp->home ? rp->home : SCRATCH_DIR);
        snprintf(group, sizeof group, "%s:x:1000:\nnogroup:x:65534:\n", user);
        if ((r = add_generated(plan, "/etc/passwd", passwd, etc_bound)) < 0 ||
                (r = add_generated(plan, "/etc/group", group, etc_bound)) < 0 ||
                (r = add_generated(plan, "/etc/hostname", SANDBOX_HOSTNAME "\n", etc_bound)) < 0)
                return sbx_error_set(e, r, "mount plan", "out of memory");
        /* the egress proxy's resolver: names only it answers, with addresses the proxy takes
         * back to them (egress-dns.h) */
        if (sbx_profile_egress_proxied(cfg->profile) &&
                ((r = add_generated(plan, "/etc/resolv.conf",
                          "nameserver 127.0.0.1\noptions attempts:2 timeout:2\n",
                          sbx_path_covered(rp->reads, "/etc/resolv.conf"))) < 0 ||
                        (r = add_generated(plan, "/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n",
                                 sbx_path_covered(rp->reads, "/etc/hosts"))) < 0))
                return sbx_error_set(e, r, "mount plan", "out of memory");

        *ret = TAKE_PTR(plan);
        return 0;
}

/* What exists only inside the sandbox gets its rules there, after pivot_root. */
static const sbx_spawn_path_rule inside_rules[] = {
        {"/", SBX_LL_LIST, false},
        {SCRATCH_DIR, SBX_LL_READ | SBX_LL_WRITE | SBX_LL_EXEC, false},
        {"/dev", SBX_LL_READ | SBX_LL_WRITE | SBX_LL_DEV, false},
        {"/proc", SBX_LL_READ, false},
        {"/run/secrets", SBX_LL_READ, true},
        {"/etc/passwd", SBX_LL_READ, false},
        {"/etc/group", SBX_LL_READ, false},
        {"/etc/hostname", SBX_LL_READ, false},
        {"/etc/resolv.conf", SBX_LL_READ, true},
        {"/etc/hosts", SBX_LL_READ, true},
};

/* The Landlock ruleset: the same filesystem rules as the mount view, a second, independent
 * fence. TCP is refused by Landlock when the profile wants no loopback either (with loopback,
 * the empty network namespace is the fence: Landlock rules cannot tell loopback from the rest);
 * abstract unix sockets and signals are scoped where the ABI has it (the namespaces isolate them
 * already). */
static int build_landlock(const sbx_config *cfg, const sbx_run_plan *rp, const sbx_run_io *io, int *ret_fd,
        int *ret_abi, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        sbx_landlock_request req = {
                .deny_tcp = !pr->net_allow && !pr->loopback && !sbx_profile_egress_proxied(pr),
                .min_abi = 1};
        if (sbx_landlock_abi() >= 6)
                req.scope_abstract_unix = req.scope_signal = true;
        sbx_landlock_info info;
        _cleanup_close_ int fd = -EBADF;
        int r = sbx_landlock_ruleset_new(&req, &fd, &info, e);
        if (r < 0)
                return r;
        if ((r = sbx_backend_ll_add_profile_paths(fd, info.abi, pr, e)) < 0)
                return r;
        if (rp->ws != SBX_ACCESS_NONE &&
                (r = sbx_backend_ll_add_host(fd, info.abi, rp->ws_host,
                         SBX_LL_READ | (rp->ws == SBX_ACCESS_RW ? SBX_LL_WRITE : 0) |
                                 (sbx_backend_exec_allowed(pr, rp->ws_target) ? SBX_LL_EXEC : 0),
                         e)) < 0)
                return r;
        for (size_t i = 0; i < io->n_volumes; i++)
                if ((r = sbx_backend_ll_add_host(fd, info.abi, io->volumes[i].host,
                             SBX_LL_READ | (io->volumes[i].rw ? SBX_LL_WRITE : 0), e)) < 0)
                        return r;
        if ((r = sbx_backend_ll_add_commands(fd, info.abi, pr, e)) < 0)
                return r;
        *ret_abi = info.abi;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int native_probe(char *reason, size_t size) {
        /* A cheap check; `sandboxer doctor` runs the full trial child. */
        int fd = open("/proc/sys/user/max_user_namespaces", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                char b[32] = {0};
                ssize_t n = read(fd, b, sizeof b - 1);
                close(fd);
                if (n > 0 && atol(b) == 0) {
                        snprintf(reason, size,
                                "user namespaces are disabled (user.max_user_namespaces = 0); "
                                "raise it with sysctl, or use --backend landlock");
                        return -ENOSPC;
                }
        }
        return 0;
}

static int native_run(
        const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        _cleanup_(sbx_mount_plan_freep) sbx_mount_plan *plan = NULL;
        _cleanup_strv_free_ char **env = NULL, **init_argv = NULL;
        _cleanup_close_ int init_fd = -EBADF, ll_fd = -EBADF, sc_fd = -EBADF, audit_fd = -EBADF;
        _cleanup_(sbx_backend_cgroup_destroyp) sbx_cgroup *cg = NULL;
        const sbx_profile *pr = cfg->profile;
        sbx_seccomp_opts sc_opts = {0};
        int ll_abi = 0, r;
        sbx_rlimit_plan rl;

        rep->backend = "native";
        rep->isolation = "container";

        static const sbx_plan_traits traits = {
                .backend = "native",
                .flags = SBX_PLAN_MOUNT_VIEW | SBX_PLAN_WS_IDMAP | SBX_PLAN_TEST_EXTRA_BIND,
        };
        _cleanup_(sbx_run_plan_done) sbx_run_plan rp = {0};
        if ((r = sbx_run_plan_make(cfg, &traits, &rp, e)) < 0)
                return r;
        sbx_debug_mark("run plan made");

        if (sbx_backend_bench_disabled("cgroup")) {
                sbx_rlimit_plan_init(&rl);
                for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                        rep->limit_mechanism[l] = SBX_MECH_NONE;
        } else {
                sbx_limit_context lc = {.fresh_userns = true,
                        .own_pidns = true,
                        .scratch_tmpfs = true,
                        .freezable = io->persist != NULL,
                        .keep_leftovers = io->keep_leftovers};
                r = sbx_backend_plan_limits(cfg, rep, &lc, &cg, &rl, e);
                if (r < 0)
                        return r;
        }

        sbx_debug_mark("limits planned (cgroup created)");
        init_fd = sbx_backend_open_init(e);
        if (init_fd < 0)
                return init_fd;
        r = build_mounts(cfg, &rp, io, rep, &plan, e);
        if (r < 0)
                return r;
        sbx_debug_mark("mount plan built");
        if (!sbx_backend_bench_disabled("landlock")) {
                r = build_landlock(cfg, &rp, io, &ll_fd, &ll_abi, e);
                if (r < 0)
                        return r;
        }
        sbx_debug_mark("landlock ruleset built");
        if (!sbx_backend_bench_disabled("seccomp")) {
                r = sbx_backend_build_seccomp(cfg, NULL, &sc_opts, &sc_fd, e);
                if (r < 0)
                        return r;
        }
        sbx_debug_mark("seccomp programs built");
        r = sbx_backend_build_env(cfg, SCRATCH_DIR, rp.ws_path, &env);
        if (r < 0)
                return sbx_error_set(e, r, "environment", "out of memory");
        const char *cwd = sbx_run_plan_cwd(cfg, &rp, SCRATCH_DIR);
        audit_fd = ll_fd >= 0 ? sbx_backend_audit_reader(cfg, io, ll_abi, true, rep) : -1;
        /* the records are the evidence: a write into the sandbox's own tree (/etc/x, /x) must
         * reach Landlock to be recorded, so its root is not also a read-only mount */
        plan->root_writable = audit_fd >= 0;
        r = sbx_backend_init_argv(cwd, ll_fd >= 0, audit_fd >= 0, sc_fd >= 0, argv, &init_argv);
        if (r < 0)
                return sbx_error_set(e, r, "init argv", "out of memory");

        /* The read-only workspace is an overlay: its files are the overlay's, not the host
         * inodes the parent's rule names, so it gets its rule inside, once mounted. */
        sbx_spawn_path_rule rules[ELEMENTSOF(inside_rules) + 2];
        size_t n_rules = ELEMENTSOF(inside_rules);
        memcpy(rules, inside_rules, sizeof inside_rules);
        /* process.commands strict: nothing written in scratch may run either */
        for (size_t i = 0; i < n_rules; i++)
                if (pr->cmd_mode == SBX_CMD_MODE_STRICT)
                        rules[i].access &= ~(unsigned) SBX_LL_EXEC;
        /* the home is a bind of scratch: Landlock walks it from its own mount, not from /tmp */
        if (rp.home)
                rules[n_rules++] = (sbx_spawn_path_rule){rp.home,
                        SBX_LL_READ | SBX_LL_WRITE | (pr->cmd_mode == SBX_CMD_MODE_STRICT ? 0 : SBX_LL_EXEC),
                        false};
        if (rp.ws == SBX_ACCESS_RO && !rp.root)
                rules[n_rules++] = (sbx_spawn_path_rule){rp.ws_target,
                        SBX_LL_READ | (sbx_backend_exec_allowed(pr, rp.ws_target) ? SBX_LL_EXEC : 0), false};

        uint16_t service_ports[16];
        size_t n_service_ports = 0;
        STRV_FOREACH(sv, pr->net_services) {
                const char *t1 = strchr(*sv, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
                if (t2 && n_service_ports < ELEMENTSOF(service_ports))
                        service_ports[n_service_ports++] = (uint16_t) strtoul(t2 + 1, NULL, 10);
        }
        sbx_spawn_params sp = {
                .clone_flags = SBX_NS_ALL,
                /* our init; and a memory limit, if any, far above what the set-up takes (the
                 * OOM killer kills every process sharing its victim's memory) */
                .share_memory = !(
                        cfg->limits.set[SBX_LIMIT_MEMORY_MB] && cfg->limits.value[SBX_LIMIT_MEMORY_MB] < 16),
                .uid_inside = SANDBOX_UID,
                .gid_inside = SANDBOX_GID,
                .uid_outside = rp.uid,
                .gid_outside = rp.gid,
                .allow_setgroups = rp.root,
                .mounts = plan,
                .hostname = SANDBOX_HOSTNAME,
                .loopback = pr->loopback,
                .egress_port = sbx_profile_egress_proxied(pr) ? SBX_EGRESS_PROXY_PORT : 0,
                .service_ports = service_ports,
                .n_service_ports = n_service_ports,
                .init_fd = init_fd,
                .init_argv = init_argv,
                .envp = env,
                .rlimits = rl,
                .landlock_fd = ll_fd,
                .landlock_abi = ll_abi,
                .inside_rules = rules,
                .n_inside_rules = n_rules,
                .seccomp_fd = sc_fd,
                .audit_fd = audit_fd,
                .drop_caps = !sbx_backend_bench_disabled("caps"),
                .drop_bounding = !sbx_backend_bench_disabled("caps"),
                .last_cap = sbx_caps_last_cap(),
        };

        (void) sbx_report_set_fence(rep, "namespaces", "user, mount, pid, net, ipc, uts, cgroup");
        if (ll_fd >= 0)
                (void) sbx_report_set_fence(rep, "landlock", "ABI %d: filesystem rules%s%s", ll_abi,
                        !pr->net_allow && !pr->loopback ? ", TCP bind/connect denied" : "",
                        ll_abi >= 6 ? ", abstract unix sockets and signals scoped" : "");
        if (sc_fd >= 0)
                (void) sbx_report_set_fence(rep, "seccomp",
                        "escape surface refused, clone3 and syscalls above %d ENOSYS, "
                        "foreign ABIs killed%s%s",
                        sbx_seccomp_max_known_nr(), sbx_backend_spawn_fence_text(pr),
                        !pr->net_allow && !pr->loopback ? ", sockets refused (socketpair allowed)" : "");
        if (sp.drop_caps)
                (void) sbx_report_set_fence(
                        rep, "capabilities", "none (bounding, ambient, inheritable, permitted, effective)");
        (void) sbx_report_set_fence(rep, "no_new_privs", "set");
        (void) sbx_report_set_fence(
                rep, "user", "uid %u inside, host uid %u", SANDBOX_UID, (unsigned) sp.uid_outside);

        _cleanup_strv_free_ char **writable = NULL;
        if (sbx_backend_writable_set(cfg, SCRATCH_DIR, rp.ws_rw, &writable) < 0 ||
                (rp.home && strv_extend(&writable, rp.home) < 0))
                return sbx_error_set(e, ENOMEM, "writable set", "out of memory");
        for (size_t i = 0; i < io->n_volumes; i++)
                if (io->volumes[i].rw && strv_extend(&writable, io->volumes[i].target) < 0)
                        return sbx_error_set(e, ENOMEM, "writable set", "out of memory");
        return sbx_backend_launch(cfg, io, rep, &sp, cg, sc_fd >= 0 ? &sc_opts : NULL, writable, e);
}

/* A persistent sandbox: the same run with no command (the init serves execs). */
static int native_start(const sbx_config *cfg, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        return native_run(cfg, NULL, io, rep, e);
}

static const sbx_cap_decl native_caps[_SBX_CAP_MAX] = {
        [SBX_CAP_FS_READONLY] = {true, "read-only binds in a mount namespace, and Landlock"},
        [SBX_CAP_FS_PRIVATE_VIEW] = {true, "a root of only the read paths (pivot_root), and Landlock rules"},
        [SBX_CAP_FS_WRITE_PATHS] = {true, "read-write binds, Landlock write rights"},
        [SBX_CAP_FS_EXEC_RULES] = {true, "Landlock execute right only on filesystem.exec"},
        [SBX_CAP_WORKSPACE_RO] = {true, "read-only bind at workspace.mount"},
        [SBX_CAP_WORKSPACE_RW] = {true,
                "bind at workspace.mount (idmapped as root: writes land as the owner's)"},
        [SBX_CAP_SCRATCH] = {true, "tmpfs at /tmp"},
        [SBX_CAP_HOME] = {true, "a directory of the /tmp tmpfs bound at filesystem.home (in scratch_mb), "
                                "HOME and the default cwd"},
        [SBX_CAP_NET_DENY] = {true,
                "an empty network namespace; Landlock TCP rules and seccomp when loopback is off"},
        [SBX_CAP_NET_LOOPBACK] = {true, "lo up in the sandbox's own network namespace"},
        [SBX_CAP_NET_HOST] = {false,
                "not implemented: the sandbox always gets its own empty network namespace; use "
                "--backend bwrap"},
        [SBX_CAP_NET_EGRESS] = {true,
                "the supervisor's proxy (HTTP CONNECT, absolute URIs, SOCKS5) on 127.0.0.1:3128 in the "
                "sandbox's own network namespace; the allowlist judged outside"},
        [SBX_CAP_PID_ISOLATION] = {true, "pid namespace, the init as PID 1"},
        [SBX_CAP_IPC_ISOLATION] = {true, "ipc namespace"},
        [SBX_CAP_HOSTNAME] = {true, "uts namespace, hostname sandbox"},
        [SBX_CAP_IDENTITY] = {true, "uid 1000 sandbox, generated /etc/passwd and /etc/group"},
        [SBX_CAP_SECCOMP] = {true, "the rule table, loaded by the init with the listener"},
        [SBX_CAP_LANDLOCK] = {true, "the same filesystem rules as the mount view, a second fence"},
        [SBX_CAP_CAPS_DROPPED] = {true, "all sets, the bounding set included"},
        [SBX_CAP_NO_NEW_PRIVS] = {true, "set before the init runs"},
        [SBX_CAP_NOT_HOST_ROOT] = {true, "uid 1000 inside, the caller (run_as as root) outside"},
        [SBX_CAP_SPAWN_FENCE] = {true,
                "seccomp: fork/clone refused, the listener lets exactly one execve through"},
        [SBX_CAP_LIMIT_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_OUTPUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_MEMORY] = {true, "cgroup (RLIMIT_AS when spawning is off)"},
        [SBX_CAP_LIMIT_PIDS] = {true, "cgroup (RLIMIT_NPROC in the fresh user namespace)"},
        [SBX_CAP_LIMIT_CPUS] = {true, "cgroup"},
        [SBX_CAP_LIMIT_SCRATCH] = {true, "tmpfs size="},
        [SBX_CAP_OBSERVE_NETWORK] = {true,
                "seccomp listener: connect/bind and refused sockets, with the address"},
        [SBX_CAP_OBSERVE_FS_WRITE] = {true, "seccomp listener: write-intent calls (observe.fs_writes)"},
        [SBX_CAP_OBSERVE_SYSCALL] = {true, "seccomp listener"},
        [SBX_CAP_OBSERVE_PROCESS] = {true, "pids cgroup events; spawn and exec refusals at the listener"},
        [SBX_CAP_OBSERVE_MEMORY] = {true, "memory cgroup OOM events"},
        [SBX_CAP_OBSERVE_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_OBSERVE_OUTPUT] = {true, "supervisor"},
};

const sbx_backend sbx_backend_native = {
        .id = SBX_BACKEND_NATIVE,
        .level = SBX_LEVEL_CONTAINER,
        .implemented = true,
        .caps = native_caps,
        .probe = native_probe,
        .run = native_run,
        .start = native_start,
};
