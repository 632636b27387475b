/* podman.c — the `podman` backend: a hardened podman container whose entrypoint is sandboxer's
 * own init, bound in read-only; the supervisor, the limits, the seccomp listener and the report
 * are the shared ones.
 *
 * The spawn child execs `podman run --preserve-fds 2 ... --rootfs BASE /.sandboxer-init --cwd DIR
 * --seccomp-fd 4 -- COMMAND` with the status socket at fd 3 and the seccomp programs at fd 4:
 * podman (conmon, runc) hands both to the container's PID 1, our init, which reports to the
 * supervisor and sends it the seccomp listener as under bwrap. The root is sandboxer's base root
 * filesystem (oci.h: a skeleton of mount points and a generated /etc/passwd, built offline and
 * cached; no image, no registry), read-only, with the profile's read paths bound read-only, a
 * size-limited tmpfs at /tmp as scratch, no network (--network none), a private IPC namespace
 * without /dev/shm (--ipc none), no capabilities (--cap-drop ALL), no_new_privs, and the rule
 * table as the engine's seccomp profile (JSON) under the init's own program.
 *
 * Limits: as root, the sandbox's cgroup is made at "/sandboxer/<name>" in every hierarchy and
 * given as --cgroup-parent, so the container's group sits inside it: the limits, the OOM event,
 * the pids refusals and the kill are sandboxer's, the same as on the other backends (podman's own
 * --memory/--pids-limit/--cpus on the inner group would hit first and hide the evidence: they are
 * used only where no cgroup of ours can be had). conmon stays out of it (--cgroups no-conmon).
 *
 * Lifetime: podman runs with --rm; a run the supervisor ended (timeout, output cap, memory,
 * cancellation) is removed with `podman rm -f` before the run returns. If sandboxer itself is
 * killed, podman dies with it (parent-death signal), conmon's --timeout (the run's deadline + 5 s)
 * kills the container and --rm's exit command removes it; containers are labelled
 * io.sandboxer.run=<run id> for inspection.
 *
 * Facts of hosts, detected by the probe: crun refuses cgroup v1/v2 hybrids with controllers on
 * the cgroup2 mount ("cgroups in hybrid mode not supported"), so runc is used there; root without
 * CAP_SYS_RESOURCE cannot raise RLIMIT_NOFILE/NPROC above its own hard limits, so the container's
 * are set to ours (--ulimit). */
#include "backend/oci.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "basic/rm-rf.h"
#include "basic/strv.h"
#include "isolate/caps.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* A hybrid host whose cgroup2 mount holds a controller: crun refuses it. */
static bool cgroup_hybrid_with_controllers(void) {
        struct statfs sf;
        if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
                return false; /* pure v2 */
        if (statfs("/sys/fs/cgroup/unified", &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC)
                return false; /* pure v1 */
        _cleanup_close_ int fd = open("/sys/fs/cgroup/unified/cgroup.controllers", O_RDONLY | O_CLOEXEC);
        char b[256] = {0};
        return fd >= 0 && read(fd, b, sizeof b - 1) > 0 && b[0] != '\n';
}

/* The OCI runtime to ask for: runc where crun would refuse this host, else podman's default. */
static int pick_runtime(char *runtime, size_t size, char *reason, size_t rsize) {
        runtime[0] = 0;
        if (!cgroup_hybrid_with_controllers())
                return 0;
        static const char *const where[] = {
                "/usr/bin/runc", "/usr/sbin/runc", "/usr/local/bin/runc", "/usr/local/sbin/runc"};
        for (size_t i = 0; i < ELEMENTSOF(where); i++)
                if (access(where[i], X_OK) == 0) {
                        snprintf(runtime, size, "%s", where[i]);
                        return 0;
                }
        snprintf(reason, rsize,
                "this host mixes cgroup v1 and v2 with controllers on the cgroup2 mount, which crun "
                "refuses (\"cgroups in hybrid mode not supported\"), and runc is not installed; install "
                "runc (apt install runc)");
        return -EOPNOTSUPP;
}

/* podman's default storage (overlay) cannot live on an overlayfs (a container's or a live
 * system's root) without fuse-overlayfs; containers then fail at every run. */
static bool storage_unusable(void) {
        char p[PATH_MAX] = "/var/lib/containers/storage";
        struct statfs sf;
        while (statfs(p, &sf) < 0) {
                char *slash = strrchr(p, '/');
                if (!slash || slash == p)
                        return false;
                *slash = 0;
        }
        if (sf.f_type != 0x794c7630 /* OVERLAYFS_SUPER_MAGIC */)
                return false;
        if (access("/usr/bin/fuse-overlayfs", X_OK) == 0)
                return false;
        char conf[8192] = "";
        int fd = open("/etc/containers/storage.conf", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                ssize_t n = read(fd, conf, sizeof conf - 1);
                conf[n > 0 ? n : 0] = 0;
                close(fd);
        }
        return !strstr(conf, "driver = \"vfs\"");
}

static int podman_probe(char *reason, size_t size) {
        char path[PATH_MAX], runtime[PATH_MAX], base[PATH_MAX];
        int fd = sbx_backend_open_tool("podman", path, sizeof path);
        if (fd < 0) {
                snprintf(reason, size, "podman not found in PATH; install podman (apt install podman runc)");
                return -ENOENT;
        }
        close(fd);
        int r = pick_runtime(runtime, sizeof runtime, reason, size);
        if (r < 0)
                return r;
        if (storage_unusable()) {
                snprintf(reason, size,
                        "podman's overlay storage cannot sit on this overlayfs root (/var/lib/containers); "
                        "install fuse-overlayfs, or set driver = \"vfs\" in /etc/containers/storage.conf");
                return -EOPNOTSUPP;
        }
        if (geteuid() != 0) {
                /* rootless podman needs subordinate ids for its user namespace */
                snprintf(reason, size,
                        "rootless podman is not supported by this backend yet (it needs /etc/subuid ranges "
                        "and cannot place the container in sandboxer's cgroup); run as root, or use "
                        "--backend bwrap");
                return -EPERM;
        }
        sbx_error e = {0};
        if (sbx_oci_base_rootfs(base, sizeof base, &e) < 0) {
                snprintf(reason, size, "%s", e.message);
                return -e.errnum;
        }
        return 0;
}

static int push(char ***a, const char *s1, const char *s2) {
        if (strv_extend(a, s1) < 0 || (s2 && strv_extend(a, s2) < 0))
                return -ENOMEM;
        return 0;
}

static int pushf(char ***a, const char *fmt, ...) _printf_(2, 3);
static int pushf(char ***a, const char *fmt, ...) {
        va_list ap;
        char *s;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return strv_consume(a, s);
}

/* As bubblewrap's: the plain table without the profile's socket, spawn and exec rules, which the
 * init's observed program decides with the listener. */
static int seccomp_json_file(const sbx_config *cfg, char *buf, size_t size, sbx_error *e) {
        sbx_seccomp_opts o = {.kill_on_violation = cfg->profile->on_violation == SBX_ON_VIOLATION_KILL};
        return sbx_oci_seccomp_file_for(&o, buf, size, e);
}

/* What podman itself gets of our environment: where to find things and its own configuration. */
static int tool_env(char ***ret) {
        static const char *const keep[] = {"HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "CONTAINERS_REGISTRIES_CONF", "TMPDIR"};
        _cleanup_strv_free_ char **env = NULL;
        if (strv_extend(&env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") < 0)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(keep); i++) {
                const char *v = getenv(keep[i]);
                char *s;
                if (v && (asprintf(&s, "%s=%s", keep[i], v) < 0 || strv_consume(&env, s) < 0))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(env);
        return 0;
}

/* Our hard limit, at most `cap`: without CAP_SYS_RESOURCE runc cannot raise a limit above what
 * podman itself runs with, and podman lowers its own RLIMIT_NPROC to 32768 when it starts (seen
 * with podman 4.3: asking for our 96365 fails with "error setting rlimit type 6"). */
static void rlimit_arg(char *buf, size_t size, int res, uint64_t cap) {
        struct rlimit rl;
        uint64_t v = cap;
        if (getrlimit(res, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && (uint64_t) rl.rlim_max < cap)
                v = (uint64_t) rl.rlim_max;
        snprintf(buf, size, "%" PRIu64 ":%" PRIu64, v, v);
}

typedef struct podman_plan {
        const char *runtime; /* "" = podman's default */
        const char *base, *init_path, *seccomp_json, *cgroup_parent; /* cgroup_parent NULL: engine limits */
        const char *name, *run_id;
        const sbx_run_plan *rp; /* identity, binds, limits */
        double deadline_s;
} podman_plan;

static int build_argv(const sbx_config *cfg, const podman_plan *pp, char *const *binds, char *const *env,
        char *const *init_argv, char ***ret) {
        const sbx_profile *pr = cfg->profile;
        const sbx_run_plan *rp = pp->rp;
        _cleanup_strv_free_ char **a = NULL;
        char nofile[64], nproc[64];
        rlimit_arg(nofile, sizeof nofile, RLIMIT_NOFILE, 1048576);
        rlimit_arg(nproc, sizeof nproc, RLIMIT_NPROC, 32768);
        int r = 0;
        r = push(&a, "podman", "run");
        r = r ?: push(&a, "--rm", "-i");
        if (pp->runtime[0])
                r = r ?: push(&a, "--runtime", pp->runtime);
        r = r ?: push(&a, "--name", pp->name);
        r = r ?: pushf(&a, "--label=" SBX_OCI_LABEL "=%s", pp->run_id);
        r = r ?: push(&a, "--network", pr->net_allow ? "host" : "none");
        r = r ?: push(&a, "--ipc", "none");
        r = r ?: push(&a, "--hostname", "sandbox");
        r = r ?: push(&a, "--read-only", "--read-only-tmpfs=false");
        r = r
                    ?: pushf(&a,
                               "--mount=type=tmpfs,destination=" SBX_OCI_SCRATCH ",tmpfs-size=%" PRIu64
                               ",tmpfs-mode=1777",
                               rp->scratch_bytes);
        r = r ?: pushf(&a, "--user=%u:%u", (unsigned) rp->uid, (unsigned) rp->gid);
        r = r ?: push(&a, "--security-opt", "no-new-privileges");
        /* No host sysfs: the engine's default masks leave e.g. /sys/kernel/vmcoreinfo readable
         * (the escape suite reads it); the native backend has no /sys at all. */
        r = r ?: push(&a, "--security-opt", "mask=/sys");
        r = r ?: push(&a, "--cap-drop", "ALL");
        r = r ?: pushf(&a, "--security-opt=seccomp=%s", pp->seccomp_json);
        if (pp->cgroup_parent) {
                r = r ?: pushf(&a, "--cgroup-parent=%s", pp->cgroup_parent);
                r = r ?: push(&a, "--cgroups", "no-conmon");
                r = r ?: push(&a, "--pids-limit", "0"); /* ours, one level up */
        } else {
                r = r ?: pushf(&a, "--memory=%" PRIu64 "b", rp->memory_bytes);
                r = r ?: pushf(&a, "--memory-swap=%" PRIu64 "b", rp->memory_bytes);
                r = r ?: pushf(&a, "--pids-limit=%" PRIu64, rp->pids);
                r = r ?: pushf(&a, "--cpus=%g", rp->cpus);
        }
        r = r ?: pushf(&a, "--ulimit=nofile=%s", nofile);
        r = r ?: pushf(&a, "--ulimit=nproc=%s", nproc);
        r = r ?: push(&a, "--ulimit", "core=0:0");
        r = r ?: push(&a, "--log-driver", "none");
        r = r ?: pushf(&a, "--timeout=%u", (unsigned) ceil(pp->deadline_s) + 5);
        r = r ?: push(&a, "--preserve-fds", "2");
        r = r ?: push(&a, "--passwd=false", "--init=false");
        r = r ?: push(&a, "--pull", "never");
        STRV_FOREACH(v, env)
                r = r ?: pushf(&a, "--env=%s", *v);
        for (char *const *b = binds; b && b[0] && b[1] && b[2]; b += 3)
                r = r
                            ?: pushf(&a, "--mount=type=bind,source=%s,destination=%s%s", b[0], b[1],
                                       streq(b[2], "ro") ? ",readonly" : "");
        r = r
                    ?: pushf(&a, "--mount=type=bind,source=%s,destination=" SBX_OCI_INIT_INSIDE ",readonly",
                               pp->init_path);
        r = r ?: push(&a, "--rootfs", pp->base);
        r = r ?: push(&a, SBX_OCI_INIT_INSIDE, NULL);
        for (char *const *i = init_argv + 1; *i && r == 0; i++) /* init_argv[0] is the init's name */
                r = push(&a, *i, NULL);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

typedef struct podman_start {
        int tool_fd, seccomp_fd;
        char *const *argv, *const *envp;
        bool root;
        const char *cwd; /* private: conmon writes files into its cwd (an `oom` on OOM) */
} podman_start;

static int start_podman(void *ud, int in_fd, int out_fd, int err_fd, int status_fd, pid_t *ret_pid,
        int *ret_pidfd, sbx_error *e) {
        podman_start *ps = ud;
        sbx_spawn_params sp = {
                .clone_flags = 0,
                .init_fd = ps->tool_fd,
                .init_argv = ps->argv,
                .envp = ps->envp,
                .stdin_fd = in_fd,
                .stdout_fd = out_fd,
                .stderr_fd = err_fd,
                .status_fd = status_fd, /* fd 3, passed on by --preserve-fds */
                .seccomp_fd = ps->seccomp_fd, /* fd 4 */
                .landlock_fd = -1,
                .cgroup_fd = -1,
                /* rootless podman runs setuid newuidmap: no_new_privs is the init's to set */
                .setuid_helper = !ps->root,
                .tool_cwd = ps->cwd,
        };
        sbx_rlimit_plan_init(&sp.rlimits);
        sbx_spawned sv;
        int r = sbx_spawn(&sp, &sv, e);
        if (r < 0)
                return r;
        *ret_pid = sv.pid;
        *ret_pidfd = sv.pidfd;
        return 0;
}

/* Remove the container (whatever state it is in), then what runc left of its cgroup. */
static void remove_container(const char *tool, const char *name, char *const *envp) {
        char *const argv[] = {(char *) "podman", (char *) "rm", (char *) "--force", (char *) "--ignore",
                (char *) "--time", (char *) "0", (char *) name, NULL};
        (void) sbx_oci_run_quiet(tool, argv, envp);
}

static int podman_run(
        const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        _cleanup_strv_free_ char **env = NULL, **init_argv = NULL, **p_argv = NULL, **writable = NULL,
                                 **binds = NULL, **tenv = NULL;
        _cleanup_close_ int tool_fd = -EBADF, init_fd = -EBADF, sc_fd = -EBADF;
        _cleanup_(sbx_backend_cgroup_destroyp) sbx_cgroup *cg = NULL;
        const sbx_profile *pr = cfg->profile;
        sbx_seccomp_opts sc_opts = {0};
        char tool[PATH_MAX], runtime[PATH_MAX], base[PATH_MAX], json[PATH_MAX], reason[512];
        char parent[256], name[128];
        bool engine_limits;
        int r;

        rep->backend = "podman";
        rep->isolation = "container";
        if (podman_probe(reason, sizeof reason) < 0)
                return sbx_error_set(e, EOPNOTSUPP, "podman", "cannot use the podman backend: %s", reason);
        if ((r = pick_runtime(runtime, sizeof runtime, reason, sizeof reason)) < 0)
                return sbx_error_set(e, -r, "podman", "%s", reason);
        static const sbx_plan_traits traits = {
                .backend = "podman", .flags = SBX_PLAN_MOUNT_VIEW, .ws_owner_fix = "use --backend native"};
        _cleanup_(sbx_run_plan_done) sbx_run_plan rp = {0};
        if ((r = sbx_run_plan_make(cfg, &traits, &rp, e)) < 0)
                return r;
        uid_t uid = rp.uid;

        if ((r = sbx_oci_base_rootfs(base, sizeof base, e)) < 0)
                return r;
        if ((r = sbx_oci_plan_limits(cfg, rep, &cg, &engine_limits, e)) < 0)
                return r;
        if (cg && (r = sbx_oci_cgroup_parent(cg, parent, sizeof parent)) < 0)
                return sbx_error_set(e, -r, "cgroup", "cgroup name too long");
        tool_fd = sbx_backend_open_tool("podman", tool, sizeof tool);
        if (tool_fd < 0)
                return sbx_error_set(e, -tool_fd, "podman", "podman not found in PATH");
        init_fd = sbx_backend_open_init(e);
        if (init_fd < 0)
                return init_fd;
        char fdpath[64], init_path[PATH_MAX];
        snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", init_fd);
        ssize_t n = readlink(fdpath, init_path, sizeof init_path - 1);
        if (n < 0)
                return sbx_error_set(e, errno, "init", "cannot name the sandbox init's path: %m");
        init_path[n] = 0;

        if ((r = sbx_backend_build_seccomp(cfg, NULL, &sc_opts, &sc_fd, e)) < 0 ||
                (r = seccomp_json_file(cfg, json, sizeof json, e)) < 0)
                return r;
        if ((r = sbx_backend_build_env(cfg, SBX_OCI_SCRATCH, rp.ws_path, &env)) < 0 ||
                (r = sbx_backend_init_argv(sbx_run_plan_cwd(cfg, &rp, SBX_OCI_SCRATCH), false, false,
                         sc_fd >= 0, argv, &init_argv)) < 0 ||
                (r = sbx_backend_init_argv_isolated(SBX_BACKEND_PODMAN, &init_argv)) < 0 ||
                (r = sbx_backend_init_argv_egress(pr, &init_argv)) < 0 || (r = tool_env(&tenv)) < 0)
                return sbx_error_set(e, -r, "environment", "out of memory");
        if ((r = sbx_oci_binds(&rp, rep, &binds, e)) < 0)
                return r;
        (void) sbx_report_add_mount(rep, base, "/", "rootfs-ro");
        (void) sbx_report_add_mount(rep, "tmpfs", SBX_OCI_SCRATCH, "tmpfs");
        (void) sbx_report_add_mount(rep, init_path, SBX_OCI_INIT_INSIDE, "bind-ro");

        double timeout = cfg->limits.value[SBX_LIMIT_TIMEOUT_S],
               budget = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        snprintf(name, sizeof name, "sandboxer-%s", rep->id);
        podman_plan pp = {
                .runtime = runtime,
                .base = base,
                .init_path = init_path,
                .seccomp_json = json,
                .cgroup_parent = cg ? parent : NULL,
                .name = name,
                .run_id = rep->id,
                .rp = &rp,
                .deadline_s = budget > 0 && budget < timeout ? budget : timeout,
        };
        if ((r = build_argv(cfg, &pp, binds, env, init_argv, &p_argv)) < 0)
                return sbx_error_set(e, -r, "podman", "out of memory");
        sbx_backend_debug_argv("podman", p_argv);

        (void) sbx_report_set_fence(rep, "namespaces", "mount, pid, ipc, uts, net%s (podman, %s)",
                pr->net_allow ? " (shared with the host: network.default allow)" : "",
                runtime[0] ? "runc" : "its default runtime");
        (void) sbx_report_set_fence(rep, "seccomp",
                "podman: the rule table as the engine's profile (%s); sandboxer-init: the profile's "
                "program%s%s",
                json, sc_fd >= 0 ? " with the listener" : "", sbx_backend_spawn_fence_text(pr));
        (void) sbx_report_set_fence(
                rep, "landlock", "none (the container's mount namespace is the filesystem fence)");
        (void) sbx_report_set_fence(rep, "capabilities", "none (--cap-drop ALL)");
        (void) sbx_report_set_fence(
                rep, "no_new_privs", "set (--security-opt no-new-privileges, and the init)");
        (void) sbx_report_set_fence(
                rep, "user", "uid %u inside and on the host (no user namespace)", (unsigned) uid);
        (void) sbx_report_set_fence(rep, "podman", "%s%s%s, container %s%s", tool,
                runtime[0] ? " --runtime " : "", runtime, name,
                engine_limits ? ", limits enforced by podman (no cgroup of sandboxer's)" : "");

        if (sbx_backend_writable_set(cfg, SBX_OCI_SCRATCH, rp.ws_rw, &writable) < 0)
                return sbx_error_set(e, ENOMEM, "writable set", "out of memory");

        /* The client and its conmon start in a directory of their own, removed afterwards: conmon
         * writes an `oom` file into its working directory when the container runs out of memory,
         * which would otherwise be the caller's. */
        char rt[PATH_MAX], cwd[PATH_MAX + 128];
        if ((r = sbx_backend_runtime_dir(rt, sizeof rt)) < 0)
                return sbx_error_set(
                        e, -r, "runtime dir", "cannot use the runtime directory %s: %s", rt, strerror(-r));
        /* named for its owner: a killed run's directory is removed by the next run or `sandboxer gc` */
        char owned[96];
        if ((r = sbx_cgroup_owned_name(rep->id, owned, sizeof owned)) < 0)
                return sbx_error_set(
                        e, -r, "runtime dir", "cannot name the working directory: %s", strerror(-r));
        sbx_backend_runtime_gc(rt);
        snprintf(cwd, sizeof cwd, "%s/%s", rt, owned);
        if (mkdir(cwd, 0700) < 0 && errno != EEXIST)
                return sbx_error_set(e, errno, "runtime dir", "cannot create %s: %m", cwd);
        podman_start ps = {.tool_fd = tool_fd,
                .seccomp_fd = sc_fd,
                .argv = p_argv,
                .envp = tenv,
                .root = rp.root,
                .cwd = cwd};
        sbx_oci_launch l = {
                .start = start_podman,
                .userdata = &ps,
                .cg = cg,
                .seccomp = sc_fd >= 0 ? &sc_opts : NULL,
                .writable = writable,
                .oom_report_fd = -1,
                .egress = sbx_profile_egress_proxied(pr),
        };
        r = sbx_oci_run(cfg, io, rep, &l, e);
        (void) sbx_rm_rf(cwd);
        uint64_t t = sbx_now_ns();
        /* podman's --rm did not get to run where the client was killed (or never started the
         * container right): remove it, then our cgroup can go. */
        if (r < 0 || rep->killed_by_sandbox || rep->status == SBX_STATUS_CANCELLED)
                remove_container(tool, name, tenv);
        if (cg) {
                char cgname[128];
                snprintf(cgname, sizeof cgname, "%s", sbx_cgroup_name(cg));
                cg = sbx_backend_cgroup_destroy(cg);
                sbx_oci_cgroup_sweep(cgname);
        }
        rep->teardown_ms += (int64_t) ((sbx_now_ns() - t) / 1000000);
        return r;
}

static const sbx_cap_decl podman_caps[_SBX_CAP_MAX] = {
        [SBX_CAP_FS_READONLY] = {true,
                "--read-only root (sandboxer's base root filesystem) and each read path bound read-only"},
        [SBX_CAP_FS_PRIVATE_VIEW] = {true, "only the read paths are bound into the base root filesystem"},
        [SBX_CAP_FS_WRITE_PATHS] = {true, "--mount type=bind (read-write)"},
        [SBX_CAP_FS_EXEC_RULES] = {false,
                "needs Landlock, which this backend cannot apply (runc makes /tmp, /proc and /dev after any "
                "ruleset built outside); use --backend native or landlock"},
        [SBX_CAP_WORKSPACE_RO] = {true, "--mount type=bind,readonly at workspace.mount"},
        [SBX_CAP_WORKSPACE_RW] = {true,
                "--mount type=bind at workspace.mount; as root only a workspace owned by run_as (no "
                "user namespace or idmapped mount here)"},
        [SBX_CAP_SCRATCH] = {true, "--mount type=tmpfs at /tmp"},
        [SBX_CAP_HOME] = {false,
                "not implemented: a home would be a second tmpfs outside scratch_mb; use --backend native"},
        [SBX_CAP_NET_DENY] = {true, "--network none: a network namespace with loopback only"},
        [SBX_CAP_NET_LOOPBACK] = {true, "--network none brings up lo in the container's namespace"},
        [SBX_CAP_NET_HOST] = {true, "--network host when the policy allows host network"},
        [SBX_CAP_NET_EGRESS] = {true,
                "the init makes the proxy's socket at 127.0.0.1:3128 in the container's network "
                "namespace (--network none) and hands it over its status socket (--preserve-fds); "
                "the transparent path for connects to addresses, but no resolver (its port 53 needs "
                "a capability the init lacks there)"},
        [SBX_CAP_PID_ISOLATION] = {true, "the container's pid namespace, the init as PID 1"},
        [SBX_CAP_IPC_ISOLATION] = {true, "--ipc none: a private IPC namespace, no /dev/shm"},
        [SBX_CAP_HOSTNAME] = {true, "--hostname sandbox"},
        [SBX_CAP_IDENTITY] = {false,
                "the command runs as run_as (uid 65534 as root) inside too: runc refuses a user namespace "
                "that maps uid 1000 to it without mapping the container's root as well"},
        [SBX_CAP_SECCOMP] = {true,
                "the rule table as podman's seccomp profile (JSON) and sandboxer-init's own program"},
        [SBX_CAP_LANDLOCK] = {false,
                "runc makes /tmp, /proc and /dev after any ruleset built outside; the container's mount "
                "namespace is the filesystem fence"},
        [SBX_CAP_CAPS_DROPPED] = {true, "--cap-drop ALL (bounding set empty)"},
        [SBX_CAP_NO_NEW_PRIVS] = {true, "--security-opt no-new-privileges, and the init"},
        [SBX_CAP_NOT_HOST_ROOT] = {true, "--user run_as (65534 by default) as root"},
        [SBX_CAP_SPAWN_FENCE] = {true,
                "sandboxer-init's filter with the listener (podman's profile lets spawning through)"},
        [SBX_CAP_LIMIT_TIMEOUT] = {true, "supervisor; conmon --timeout as a backstop"},
        [SBX_CAP_LIMIT_OUTPUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_MEMORY] = {true,
                "sandboxer's cgroup as --cgroup-parent (podman --memory without one)"},
        [SBX_CAP_LIMIT_PIDS] = {true,
                "sandboxer's cgroup as --cgroup-parent (podman --pids-limit without one)"},
        [SBX_CAP_LIMIT_CPUS] = {true, "sandboxer's cgroup as --cgroup-parent (podman --cpus without one)"},
        [SBX_CAP_LIMIT_SCRATCH] = {true, "tmpfs-size"},
        [SBX_CAP_OBSERVE_NETWORK] = {true,
                "connect/bind and refused sockets reach the init's listener (passed by --preserve-fds)"},
        [SBX_CAP_OBSERVE_FS_WRITE] = {true,
                "write-intent calls reach the init's listener (observe.fs_writes)"},
        [SBX_CAP_OBSERVE_SYSCALL] = {false,
                "podman's seccomp profile refuses the escape surface first (SECCOMP_RET_ERRNO outranks the "
                "listener's SECCOMP_RET_USER_NOTIF): refused, not recorded"},
        [SBX_CAP_OBSERVE_PROCESS] = {true,
                "spawn and exec refusals reach the listener; refusals by the pids limit are counted by "
                "cgroup v1 in the forking group (runc's, below ours), read as the command ends or before "
                "the sandbox is killed, while podman has not yet removed it"},
        [SBX_CAP_OBSERVE_MEMORY] = {true, "OOM events of sandboxer's memory group"},
        [SBX_CAP_OBSERVE_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_OBSERVE_OUTPUT] = {true, "supervisor"},
};

const sbx_backend sbx_backend_podman = {
        .id = SBX_BACKEND_PODMAN,
        .level = SBX_LEVEL_CONTAINER,
        .implemented = true,
        .caps = podman_caps,
        .probe = podman_probe,
        .run = podman_run,
        .persist_why = "each exec would be a container of its own (no init serving execs inside the "
                       "engine); use native or landlock",
};
