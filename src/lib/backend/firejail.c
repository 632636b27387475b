/* firejail.c — the `firejail` backend: firejail (setuid root) builds the namespaces and the
 * filesystem view, sandboxer's own init runs inside it, the supervisor, limits and report are the
 * shared ones.
 *
 * The spawn child joins the sandbox's cgroup, drops to the caller's uid (run_as as root) and
 * execs `firejail --profile=RUN.profile FLAGS -- /proc/self/fd/5 --cwd DIR --seccomp-fd 4 -- COMMAND`:
 * the init is run through the descriptor firejail keeps (--keep-fd=3,4,5), so no host path of
 * sandboxer's has to stay visible. no_new_privs is not set before firejail (it is setuid root
 * and would not run); firejail sets it (--nonewprivs), and so does the init.
 *
 * firejail shows the host's own root, read-only (--read-only=/): the profile's read list is
 * expressed by blacklisting every host path outside it (computed from the host's tree at run
 * time, written to a per-run firejail profile: more entries than firejail takes arguments), /tmp is
 * firejail's private tmpfs, /dev its minimal one. seccomp is sandboxer's program, loaded by the init with
 * the listener; firejail's --seccomp is not used: its list is not ours, and its SECCOMP_RET_ERRNO answers
 * would outrank the listener and hide violations.
 *
 * What firejail cannot express is declared (docs/backends.md) and refused when a profile needs
 * it: a size for its tmpfs (limits.scratch_mb), writable host paths for an ordinary user
 * (filesystem.write, a rw workspace), an exec allowlist, Landlock. firejail refuses system
 * accounts, so as root run_as must be an ordinary uid. firejail runs the command line through
 * /bin/sh -c (each argument quoted by firejail); the init is that command, the user's argv
 * reaches the init unchanged. A setuid exec clears the parent-death signal: if the supervisor is
 * killed with SIGKILL, the sandbox outlives it until its cgroup is reclaimed (declared; firejail's
 * --timeout would be a backstop, but it delays every exit by up to 2 s). firejail adds variables
 * of its own to the environment (container=firejail, SHELL, ...): declared. */
#include "backend/common.h"
#include "backend/plan.h"

#include <dirent.h>
#include <pwd.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/strv.h"
#include "isolate/caps.h"

#define SANDBOX_HOSTNAME "sandbox"
#define SCRATCH_DIR "/tmp"

/* firejail runs the command with no sandbox at all, after a warning, when it believes it already
 * runs inside one: when none of pids 1-10 in the /proc it sees is a kernel thread (a pid
 * namespace, a container). Told here the same way (the kernel's PF_KTHREAD flag in
 * /proc/PID/stat), so that such a host refuses the backend up front; the init's check of its
 * namespaces (--host-ns) is the fence should firejail's own test differ. */
static bool kernel_thread_visible(void) {
        for (int pid = 1; pid <= 10; pid++) {
                char path[32], buf[512];
                snprintf(path, sizeof path, "/proc/%d/stat", pid);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                ssize_t n = read(fd, buf, sizeof buf - 1);
                if (n <= 0)
                        continue;
                buf[n] = 0;
                /* fields after the command's closing parenthesis: state ppid pgrp session tty_nr
                 * tpgid flags */
                const char *p = strrchr(buf, ')');
                unsigned long long flags = 0;
                if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %llu", &flags) == 1 &&
                        (flags & 0x00200000ULL))
                        return true;
        }
        return false;
}

static int firejail_probe(char *reason, size_t size) {
        char path[PATH_MAX];
        int fd = sbx_backend_open_tool("firejail", path, sizeof path);
        if (fd < 0) {
                snprintf(
                        reason, size, "firejail not found in PATH; install firejail (apt install firejail)");
                return -ENOENT;
        }
        struct stat st;
        int r = fstat(fd, &st);
        close(fd);
        if (r < 0 || !(st.st_mode & S_ISUID) || st.st_uid != 0) {
                snprintf(reason, size, "%s is not setuid root (firejail needs it to build its sandbox)",
                        path);
                return -EPERM;
        }
        if (!kernel_thread_visible()) {
                snprintf(reason, size,
                        "firejail would run commands here without any sandbox: it sees no kernel thread "
                        "among pids 1-10 (sandboxer runs in a pid namespace or a container) and then "
                        "believes it is already sandboxed; use --backend native or bwrap");
                return -EPERM;
        }
        return 0;
}

/* True when some path of keep lies strictly below p. */
static bool is_ancestor(char *const *keep, const char *p) {
        size_t l = strlen(p);
        STRV_FOREACH(k, keep)
                if (strncmp(*k, p, l) == 0 && (*k)[l] == '/')
                        return true;
        return false;
}

/* "blacklist P" (a firejail profile line) for every host path that is neither kept nor above a kept one,
 * walking down from dir only along the kept paths' ancestors. Symlinks are never blacklisted (firejail would
 * blacklist their target): what they point to is decided at its own place in the tree. */
static int add_blacklist(FILE *a, char *const *keep, const char *dir, int depth, sbx_error *e) {
        if (depth > 32)
                return 0;
        DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : sbx_error_set(e, errno, "firejail", "cannot list %s: %m", dir);
        struct dirent *de;
        int r = 0;
        while (r >= 0 && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                char p[PATH_MAX];
                if (snprintf(p, sizeof p, "%s/%s", streq(dir, "/") ? "" : dir, de->d_name) >= (int) sizeof p)
                        continue;
                if (sbx_path_covered(keep, p))
                        continue;
                struct stat st;
                if (lstat(p, &st) < 0 || S_ISLNK(st.st_mode))
                        continue;
                if (S_ISDIR(st.st_mode) && is_ancestor(keep, p)) {
                        r = add_blacklist(a, keep, p, depth + 1, e);
                        continue;
                }
                if (fprintf(a, "blacklist %s\n", p) < 0)
                        r = sbx_error_set(e, EIO, "firejail", "cannot write the firejail profile: %m");
        }
        closedir(d);
        return r;
}

/* uid's home directory: /etc/passwd read directly (no NSS modules to load, so the CLI can be
 * linked statically, against either libc), else $HOME when uid is our own (a directory user, e.g.
 * LDAP). Lines are name:password:uid:gid:gecos:home:shell. */
static int home_of(uid_t uid, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen("/etc/passwd", "re");
        char line[4096];
        while (f && fgets(line, sizeof line, f)) {
                char *field[7] = {0}, *p = line;
                size_t n = 0;
                line[strcspn(line, "\n")] = 0;
                while (n < ELEMENTSOF(field) && p) {
                        field[n++] = p;
                        p = strchr(p, ':');
                        if (p)
                                *p++ = 0;
                }
                char *end;
                if (n < 6 || !field[2][0])
                        continue;
                errno = 0;
                unsigned long u = strtoul(field[2], &end, 10);
                if (errno || *end || u != (unsigned long) uid || field[5][0] != '/')
                        continue;
                snprintf(buf, size, "%s", field[5]);
                return 0;
        }
        const char *h = getenv("HOME");
        if (uid == getuid() && h && h[0] == '/') {
                snprintf(buf, size, "%s", h);
                return 0;
        }
        return -ENOENT;
}

static int build_argv(const sbx_config *cfg, const sbx_run_plan *rp, sbx_report *rep, char *const *init_argv,
        const char *profile_path, FILE *profile, char ***ret, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        _cleanup_strv_free_ char **a = NULL, **keep = NULL;
        int r;
        _cleanup_free_ char *prof_arg = NULL;
        if (asprintf(&prof_arg, "--profile=%s", profile_path) < 0 || strv_extend(&a, "firejail") < 0 ||
                strv_extend(&a, prof_arg) < 0)
                return sbx_error_set(e, ENOMEM, "firejail", "out of memory");
        static const char *const fixed[] = {
                "--quiet",
                "--keep-fd=3,4,5",
                "--ipc-namespace",
                "--hostname=" SANDBOX_HOSTNAME,
                "--private-tmp",
                "--private-dev",
                "--read-only=/",
                "--nonewprivs",
                "--caps.drop=all",
                "--nogroups",
                /* firejail drops TMPDIR from what it passes on */
                "--env=TMPDIR=" SCRATCH_DIR,
        };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                if (strv_extend(&a, fixed[i]) < 0)
                        return sbx_error_set(e, ENOMEM, "firejail", "out of memory");
        /* firejail keeps the invoking user's home writable under --read-only=/: say it again. */
        char home[PATH_MAX];
        if (home_of(rp->uid, home, sizeof home) == 0 && !streq(home, "/")) {
                _cleanup_free_ char *ro = NULL;
                if (asprintf(&ro, "--read-only=%s", home) < 0 || strv_consume(&a, TAKE_PTR(ro)) < 0)
                        return sbx_error_set(e, ENOMEM, "firejail", "out of memory");
        }
        if (!pr->net_allow && strv_extend(&a, "--net=none") < 0)
                return sbx_error_set(e, ENOMEM, "firejail", "out of memory");

        /* What stays visible: the read list, the workspace, and what firejail makes itself. */
        STRV_FOREACH(p, pr->fs_read) {
                _cleanup_free_ char *real = realpath(*p, NULL);
                if (strv_extend(&keep, *p) < 0 || (real && !streq(real, *p) && strv_extend(&keep, real) < 0))
                        return sbx_error_set(e, ENOMEM, "firejail", "out of memory");
                (void) sbx_report_add_mount(rep, *p, *p, real ? "host-ro" : "missing");
        }
        if (rp->ws != SBX_ACCESS_NONE) {
                const char *real = rp->ws_real;
                if (sbx_path_covered((char *[]){(char *) SCRATCH_DIR, (char *) "/var/tmp", NULL}, real))
                        return sbx_error_set(e, EOPNOTSUPP, "workspace",
                                "the workspace %s is under /tmp or /var/tmp, which firejail replaces with "
                                "private tmpfs; use a workspace elsewhere, or --backend native or bwrap",
                                real);
                if (strv_extend(&keep, real) < 0)
                        return sbx_error_set(e, ENOMEM, "firejail", "out of memory");
                (void) sbx_report_add_mount(rep, real, real, "host-ro");
        }
        /* /run/firejail: firejail's own state, which it needs inside (blacklisting /run breaks it). */
        static const char *const own[] = {"/proc", "/dev", SCRATCH_DIR, "/run/firejail"};
        for (size_t i = 0; i < ELEMENTSOF(own); i++)
                if (strv_extend(&keep, own[i]) < 0)
                        return sbx_error_set(e, ENOMEM, "firejail", "out of memory");
        (void) sbx_report_add_mount(rep, "tmpfs", SCRATCH_DIR, "tmpfs");
        (void) sbx_report_add_mount(rep, "proc", "/proc", "proc");
        (void) sbx_report_add_mount(rep, "tmpfs", "/dev", "dev");
        if ((r = add_blacklist(profile, keep, "/", 0, e)) < 0)
                return r;
        if (fflush(profile) != 0)
                return sbx_error_set(
                        e, errno, "firejail", "cannot write the firejail profile %s: %m", profile_path);

        if (strv_extend(&a, "--") < 0 || strv_extend(&a, "/proc/self/fd/5") < 0)
                return sbx_error_set(e, ENOMEM, "firejail", "out of memory");
        for (char *const *i = init_argv + 1; *i; i++)
                if (strv_extend(&a, *i) < 0)
                        return sbx_error_set(e, ENOMEM, "firejail", "out of memory");
        *ret = TAKE_PTR(a);
        return 0;
}

static int firejail_run(
        const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        _cleanup_strv_free_ char **env = NULL, **init_argv = NULL, **fj_argv = NULL, **writable = NULL;
        _cleanup_close_ int tool_fd = -EBADF, init_fd = -EBADF, sc_fd = -EBADF;
        _cleanup_(sbx_backend_cgroup_destroyp) sbx_cgroup *cg = NULL;
        const sbx_profile *pr = cfg->profile;
        sbx_seccomp_opts sc_opts = {0};
        sbx_rlimit_plan rl;
        char tool[PATH_MAX], reason[512];
        int r;

        rep->backend = "firejail";
        rep->isolation = "container";

        if (firejail_probe(reason, sizeof reason) < 0)
                return sbx_error_set(
                        e, EOPNOTSUPP, "firejail", "cannot use the firejail backend: %s", reason);
        /* firejail runs the command as uid, at the workspace's host path: uid must reach it */
        static const sbx_plan_traits traits = {.backend = "firejail", .flags = SBX_PLAN_WS_REACH};
        _cleanup_(sbx_run_plan_done) sbx_run_plan rp = {0};
        if ((r = sbx_run_plan_make(cfg, &traits, &rp, e)) < 0)
                return r;
        if (rp.uid < 1000 || rp.uid == 65534)
                return sbx_error_set(e, EPERM, "firejail",
                        "firejail refuses to sandbox uid %u (a system account%s); %s", (unsigned) rp.uid,
                        rp.uid == 65534 ? ": nobody" : "",
                        rp.root ? "set run_as in the policy file to an ordinary user's uid (1000 or above), "
                                  "or use --backend native"
                                : "run sandboxer as an ordinary user, or use --backend native");

        sbx_limit_context lc = {
                .fresh_userns = false, .scratch_tmpfs = false, .keep_leftovers = io->keep_leftovers};
        if ((r = sbx_backend_plan_limits(cfg, rep, &lc, &cg, &rl, e)) < 0)
                return r;
        tool_fd = sbx_backend_open_tool("firejail", tool, sizeof tool);
        if (tool_fd < 0)
                return sbx_error_set(e, -tool_fd, "firejail", "firejail not found in PATH");
        init_fd = sbx_backend_open_init(e);
        if (init_fd < 0)
                return init_fd;
        if ((r = sbx_backend_build_seccomp(cfg, NULL, &sc_opts, &sc_fd, e)) < 0)
                return r;
        if ((r = sbx_backend_build_env(cfg, SCRATCH_DIR, rp.ws_path, &env)) < 0 ||
                (r = sbx_backend_init_argv(sbx_run_plan_cwd(cfg, &rp, SCRATCH_DIR), false, false, sc_fd >= 0,
                         argv, &init_argv)) < 0 ||
                (r = sbx_backend_init_argv_isolated(SBX_BACKEND_FIREJAIL, &init_argv)) < 0 ||
                (r = sbx_backend_init_argv_egress(pr, &init_argv)) < 0)
                return sbx_error_set(e, r, "environment", "out of memory");
        char base[PATH_MAX - 64], profile_path[PATH_MAX + 128];
        if ((r = sbx_backend_runtime_dir(base, sizeof base)) < 0)
                return sbx_error_set(e, r, "firejail",
                        "cannot use the runtime directory %s: %s; set SANDBOXER_RUNTIME_DIR", base,
                        strerror(-r));
        /* named for its owner, as the landlock backend's scratch: a killed run's profile is removed
         * by the next run (sbx_backend_runtime_gc) or `sandboxer gc` */
        char owned[96];
        if ((r = sbx_cgroup_owned_name(rep->id, owned, sizeof owned)) < 0)
                return sbx_error_set(e, r, "firejail", "cannot name the firejail profile: %s", strerror(-r));
        sbx_backend_runtime_gc(base);
        snprintf(profile_path, sizeof profile_path, "%s/%s", base, owned);
        _cleanup_close_ int pfd =
                open(profile_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (pfd < 0)
                return sbx_error_set(
                        e, errno, "firejail", "cannot create the firejail profile %s: %m", profile_path);
        FILE *profile = fdopen(TAKE_FD(pfd), "w");
        if (!profile) {
                r = sbx_error_set(
                        e, errno, "firejail", "cannot write the firejail profile %s: %m", profile_path);
                (void) unlink(profile_path);
                return r;
        }
        (void) fchmod(fileno(profile), 0644);
        r = build_argv(cfg, &rp, rep, init_argv, profile_path, profile, &fj_argv, e);
        fclose(profile);
        bool keep_profile = getenv("SANDBOXER_DEBUG_ARGV") && streq(getenv("SANDBOXER_DEBUG_ARGV"), "1");
        if (r < 0) {
                (void) unlink(profile_path);
                return r;
        }
        sbx_backend_debug_argv("firejail", fj_argv);

        sbx_spawn_params sp = {
                .clone_flags = 0,
                .uid_outside = rp.uid,
                .gid_outside = rp.gid,
                .allow_setgroups = rp.root,
                .switch_ids = rp.root,
                .init_fd = tool_fd, /* the spawn child execs firejail, which starts the init */
                .init_argv = fj_argv,
                .envp = env,
                .rlimits = rl,
                .landlock_fd = init_fd, /* fd 5: the init, run as /proc/self/fd/5 (no Landlock here) */
                .seccomp_fd = sc_fd,
                .drop_caps = true,
                .drop_bounding = false, /* firejail needs its setuid capabilities */
                .last_cap = sbx_caps_last_cap(),
                /* the init makes the proxy's socket in firejail's network namespace (--net=none) */
                .egress_inside = sbx_profile_egress_proxied(pr),
                .setuid_helper = true,
        };
        (void) sbx_report_set_fence(rep, "namespaces", "mount, pid, %s, ipc, uts (firejail)",
                pr->net_allow ? "host network (network.default allow)" : "net (--net=none)");
        (void) sbx_report_set_fence(rep, "filesystem",
                "host root read-only, paths outside the read list blacklisted, "
                "private /tmp and /dev (firejail)");
        (void) sbx_report_set_fence(rep, "seccomp",
                "sandboxer-init: escape surface refused, clone3 and syscalls above %d "
                "ENOSYS, foreign ABIs killed%s%s",
                sbx_seccomp_max_known_nr(), sbx_backend_spawn_fence_text(pr),
                !pr->net_allow && !pr->loopback ? ", sockets refused (socketpair allowed)" : "");
        (void) sbx_report_set_fence(rep, "landlock", "none (firejail's mounts are the filesystem fence)");
        (void) sbx_report_set_fence(rep, "capabilities", "none (firejail --caps.drop=all)");
        (void) sbx_report_set_fence(rep, "no_new_privs", "set (firejail --nonewprivs, and the init)");
        (void) sbx_report_set_fence(rep, "user", "host uid %u", (unsigned) rp.uid);
        (void) sbx_report_set_fence(rep, "firejail", "%s", tool);

        /* firejail declares no writable workspace nor write paths: scratch and /dev only */
        if (sbx_backend_writable_set(cfg, SCRATCH_DIR, NULL, &writable) < 0) {
                (void) unlink(profile_path);
                return sbx_error_set(e, ENOMEM, "writable set", "out of memory");
        }
        r = sbx_backend_launch(cfg, io, rep, &sp, cg, sc_fd >= 0 ? &sc_opts : NULL, writable, e);
        if (r < 0 && e && strstr(e->message, "init: not isolated")) {
                char inner[sizeof e->message];
                snprintf(inner, sizeof inner, "%s", e->message);
                (void) sbx_error_set(e, EPERM, "firejail",
                        "firejail ran the command without sandboxing it (%s), so it was stopped before it "
                        "started: firejail does so when it believes it already runs inside a sandbox; "
                        "use --backend native or bwrap",
                        inner);
        }
        if (!keep_profile) /* kept for SANDBOXER_DEBUG_ARGV=1, so the command line can be rerun */
                (void) unlink(profile_path);
        return r;
}

static const sbx_cap_decl firejail_caps[_SBX_CAP_MAX] = {
        [SBX_CAP_FS_READONLY] = {true, "--read-only=/"},
        [SBX_CAP_FS_PRIVATE_VIEW] = {true, "--blacklist of every host path outside the read list"},
        [SBX_CAP_FS_WRITE_PATHS] = {false,
                "firejail's --read-write is root-only outside the user's home; use --backend "
                "native or bwrap"},
        [SBX_CAP_FS_EXEC_RULES] = {false,
                "firejail has --noexec=PATH but no allowlist of what may run; use --backend "
                "native or landlock"},
        [SBX_CAP_WORKSPACE_RO] = {true, "visible read-only at its host path (not under /tmp or /var/tmp: "
                                        "firejail's private tmpfs hide them)"},
        [SBX_CAP_WORKSPACE_RW] = {false,
                "under --read-only=/ only root may make a path writable again; use --backend "
                "native or bwrap"},
        [SBX_CAP_SCRATCH] = {true, "--private-tmp (a tmpfs at /tmp)"},
        [SBX_CAP_HOME] = {false, "not implemented: firejail has no way to put a directory of its "
                                 "--private-tmp at another path; use --backend native"},
        [SBX_CAP_NET_DENY] = {true, "--net=none"},
        [SBX_CAP_NET_LOOPBACK] = {true, "lo in firejail's network namespace"},
        [SBX_CAP_NET_HOST] = {true, "no --net option when the policy allows host network"},
        [SBX_CAP_NET_EGRESS] = {true,
                "the init makes the proxy's socket at 127.0.0.1:3128 in firejail's network namespace "
                "(--net=none) and hands it to the supervisor; the transparent path for connects to "
                "addresses, but no resolver (its port 53 needs a capability the init lacks there)"},
        [SBX_CAP_PID_ISOLATION] = {true, "firejail's pid namespace"},
        [SBX_CAP_IPC_ISOLATION] = {true, "--ipc-namespace"},
        [SBX_CAP_HOSTNAME] = {true, "--hostname=sandbox"},
        [SBX_CAP_IDENTITY] = {false, "the command runs as the invoking host uid; /etc/passwd is the host's"},
        [SBX_CAP_SECCOMP] = {true, "sandboxer-init's program (firejail's own --seccomp list is not used)"},
        [SBX_CAP_LANDLOCK] = {false,
                "firejail mounts its own /proc, /dev and /tmp after any ruleset built outside"},
        [SBX_CAP_CAPS_DROPPED] = {true, "--caps.drop=all"},
        [SBX_CAP_NO_NEW_PRIVS] = {true, "--nonewprivs, and the init"},
        [SBX_CAP_NOT_HOST_ROOT] = {true,
                "the invoking uid: the caller, or run_as as root (an ordinary uid: firejail "
                "refuses system accounts)"},
        [SBX_CAP_SPAWN_FENCE] = {true, "sandboxer-init's filter with the listener"},
        [SBX_CAP_LIMIT_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_OUTPUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_MEMORY] = {true, "cgroup around firejail (RLIMIT_AS when spawning is off)"},
        [SBX_CAP_LIMIT_PIDS] = {true, "cgroup around firejail (seccomp when spawning is off)"},
        [SBX_CAP_LIMIT_CPUS] = {true, "cgroup around firejail"},
        [SBX_CAP_LIMIT_SCRATCH] = {false, "firejail's --private-tmp has no size option"},
        [SBX_CAP_OBSERVE_NETWORK] = {true, "seccomp listener: connect/bind and refused sockets"},
        [SBX_CAP_OBSERVE_FS_WRITE] = {true, "seccomp listener: write-intent calls (observe.fs_writes)"},
        [SBX_CAP_OBSERVE_SYSCALL] = {true, "seccomp listener"},
        [SBX_CAP_OBSERVE_PROCESS] = {true, "pids cgroup events; spawn and exec refusals at the listener"},
        [SBX_CAP_OBSERVE_MEMORY] = {true, "memory cgroup OOM events"},
        [SBX_CAP_OBSERVE_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_OBSERVE_OUTPUT] = {true, "supervisor"},
};

const sbx_backend sbx_backend_firejail = {
        .id = SBX_BACKEND_FIREJAIL,
        .level = SBX_LEVEL_CONTAINER,
        .implemented = true,
        .caps = firejail_caps,
        .probe = firejail_probe,
        .run = firejail_run,
        .persist_why = "firejail runs one command: its init is not sandboxer's --serve init; use native or "
                       "landlock",
};
