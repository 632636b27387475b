/* common.c — the parts of a run every init-based backend shares (see common.h). */
#include "backend/common.h"
#include "backend/persist.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <grp.h>
#include <linux/magic.h>

#include "basic/cache.h"
#include "basic/rm-rf.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "basic/debug.h"
#include "isolate/audit.h"
#include "isolate/landlock.h"
#include "init/protocol.h"
#include "supervise/supervise.h"

/* Where the init binary is: next to the running program (installed or build tree), else the
 * libexec directory. */
int sbx_backend_open_init(sbx_error *e) {
        char exe[PATH_MAX];
        const char *env = secure_getenv("SANDBOXER_INIT");
        if (env && *env) {
                int fd = open(env, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return sbx_error_set(e, errno, "init: open",
                                "cannot open the sandbox init %s (from $SANDBOXER_INIT): %m", env);
                return fd;
        }
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 64);
        if (n > 0) {
                exe[n] = 0;
                char *slash = strrchr(exe, '/');
                if (slash) {
                        static const char *const rel[] = {"/sandboxer-init", "/../init/sandboxer-init",
                                "/../libexec/sandboxer/sandboxer-init"};
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
                        "cannot find the sandbox init (sandboxer-init) next to %s or in %s: %m; reinstall "
                        "sandboxer",
                        n > 0 ? exe : "the program", SBX_LIBEXECDIR);
        return fd;
}

bool sbx_path_covered(char *const *list, const char *p) {
        STRV_FOREACH(i, list) {
                size_t l = strlen(*i);
                if (strncmp(*i, p, l) == 0 && (p[l] == '/' || p[l] == 0 || streq(*i, "/")))
                        return true;
        }
        return false;
}

int sbx_backend_build_env(const sbx_config *cfg, const char *scratch, const char *ws_visible, char ***ret) {
        _cleanup_strv_free_ char **env = NULL;
        const char *home = scratch, *path = SBX_DEFAULT_PATH, *lang = "C.UTF-8";
        for (size_t i = 0; i < cfg->n_env; i++) {
                if (streq(cfg->env[i].name, "HOME"))
                        home = cfg->env[i].value;
                else if (streq(cfg->env[i].name, "PATH"))
                        path = cfg->env[i].value;
                else if (streq(cfg->env[i].name, "LANG"))
                        lang = cfg->env[i].value;
        }
        char *s;
        if (asprintf(&s, "TMPDIR=%s", scratch) < 0 || strv_consume(&env, s) < 0)
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
        if (ws_visible) {
                if (asprintf(&s, "SANDBOXER_WORKSPACE=%s", ws_visible) < 0 || strv_consume(&env, s) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(env);
        return 0;
}

int sbx_backend_init_argv(
        const char *cwd, bool landlock, bool landlock_log, bool seccomp, char *const *argv, char ***ret) {
        _cleanup_strv_free_ char **a = NULL;
        if (strv_extend(&a, "sandboxer-init") < 0 || strv_extend(&a, "--cwd") < 0 ||
                strv_extend(&a, cwd) < 0 ||
                (landlock && (strv_extend(&a, "--landlock-fd") < 0 || strv_extend(&a, "5") < 0)) ||
                (landlock && landlock_log && strv_extend(&a, "--landlock-log") < 0) ||
                (seccomp && (strv_extend(&a, "--seccomp-fd") < 0 || strv_extend(&a, "4") < 0)) ||
                (!argv && strv_extend(&a, "--serve") < 0) || strv_extend(&a, "--") < 0)
                return -ENOMEM;
        for (char *const *i = argv; i && *i; i++)
                if (strv_extend(&a, *i) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

const char *sbx_backend_spawn_fence_text(const sbx_profile *pr) {
        return !pr->allow_spawn  ? ", no new processes, one execve"
               : !pr->allow_exec ? ", one execve (the command's; fork allowed)"
                                 : "";
}

int sbx_backend_init_argv_isolated(sbx_backend_id id, char ***init_argv) {
        static const struct {
                sbx_cap cap;
                const char *ns;
        } claims[] = {
                {SBX_CAP_PID_ISOLATION, "pid"},
                {SBX_CAP_IPC_ISOLATION, "ipc"},
                {SBX_CAP_HOSTNAME, "uts"},
                {SBX_CAP_NET_LOOPBACK, "net"},
        };
        const sbx_backend *b = sbx_backend_get(id);
        if (!b || !init_argv || !*init_argv || !(*init_argv)[0])
                return -EINVAL;
        char list[256] = "";
        size_t l = 0;
        for (size_t i = 0; i <= ELEMENTSOF(claims); i++) {
                const char *ns = i == ELEMENTSOF(claims) ? "mnt" : claims[i].ns;
                if (i == ELEMENTSOF(claims) ? b->level < SBX_LEVEL_CONTAINER
                                            : !sbx_backend_cap(b, claims[i].cap)->yes)
                        continue;
                char path[32];
                struct stat st;
                snprintf(path, sizeof path, "/proc/self/ns/%s", ns);
                if (stat(path, &st) < 0)
                        return negative_errno();
                l += (size_t) snprintf(list + l, sizeof list - l, "%s%s:%llu", l ? "," : "", ns,
                        (unsigned long long) st.st_ino);
        }
        if (l == 0)
                return 0;
        size_t n = strv_length(*init_argv);
        char **a = calloc(n + 3, sizeof(char *));
        if (!a)
                return -ENOMEM;
        a[0] = (*init_argv)[0];
        a[1] = strdup("--host-ns");
        a[2] = strdup(list);
        if (!a[1] || !a[2]) {
                free(a[1]);
                free(a[2]);
                free(a);
                return -ENOMEM;
        }
        memcpy(a + 3, *init_argv + 1, n * sizeof(char *)); /* the rest, and the NULL */
        free(*init_argv);
        *init_argv = a;
        return 0;
}

sbx_cgroup *sbx_backend_cgroup_destroy(sbx_cgroup *cg) {
        if (cg) {
                (void) sbx_cgroup_destroy(cg);
                sbx_cgroup_free(cg);
        }
        return NULL;
}

static int attach_cgroup(pid_t pid, void *userdata, sbx_error *e) {
        int r = sbx_cgroup_attach(userdata, pid);
        if (r < 0)
                return sbx_error_set(
                        e, r, "cgroup: attach", "cannot move the sandbox into its cgroup: %s", strerror(-r));
        return 0;
}

static int kill_cgroup(void *userdata) {
        return sbx_cgroup_kill(userdata);
}

static sbx_mechanism mech_of(sbx_cg_version v) {
        return v == SBX_CG_V2 ? SBX_MECH_CGROUP_V2 : v == SBX_CG_V1 ? SBX_MECH_CGROUP_V1 : SBX_MECH_NONE;
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
                sbx_cgroup_limits cl = {
                        .memory_bytes = sbx_limit_bytes(lim, SBX_LIMIT_MEMORY_MB),
                        .pids = (uint64_t) lim->value[SBX_LIMIT_PIDS],
                        .cpus = lim->value[SBX_LIMIT_CPUS],
                };
                /* Everything may go without a cgroup here: the fallbacks are decided below. */
                unsigned all = SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_MEMORY) | SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_PIDS) |
                               SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_CPUS);
                /* Named for its owner, so that the next run can tell a leftover (above). */
                char name[64];
                sbx_error ce = {0};
                r = sbx_cgroup_owned_name(rep->id, name, sizeof name);
                if (r < 0)
                        snprintf(name, sizeof name, "%s", rep->id);
                /* No group only to track and kill the tree where it cannot outgrow what the
                 * limits' groups list: a pid namespace kills it with its PID 1, and without
                 * spawning (seccomp refuses fork and clone) it is the init and the command. */
                bool fixed_tree = ctx->own_pidns ||
                                  (!cfg->profile->allow_spawn && !sbx_backend_bench_disabled("seccomp"));
                r = sbx_cgroup_create(
                        &probe, name, &cl, all, fixed_tree ? SBX_CG_CREATE_NO_TRACKING : 0, &cg, &ce);
                if (r < 0) {
                        cg = NULL;
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
                rep->limit_mechanism[cg_limits[i].limit] =
                        cg ? mech_of(sbx_cgroup_mechanism(cg, cg_limits[i].cg)) : SBX_MECH_NONE;

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

bool sbx_backend_exec_allowed(const sbx_profile *pr, const char *path) {
        /* process.commands strict: nothing is executable but the allowed commands and what
         * loading them needs (sbx_backend_ll_add_commands). */
        if (pr->cmd_mode == SBX_CMD_MODE_STRICT)
                return false;
        if (!pr->fs_exec_set)
                return true;
        return sbx_path_covered(pr->fs_exec, path);
}

/* The ELF interpreter (PT_INTERP) of a binary, or a script's #! interpreter, into buf. */
static bool exec_interpreter(const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        unsigned char h[64];
        ssize_t n = pread(fd, h, sizeof h, 0);
        if (n >= 2 && h[0] == '#' && h[1] == '!') {
                char line[256];
                ssize_t k = pread(fd, line, sizeof line - 1, 2);
                if (k <= 0)
                        return false;
                line[k] = 0;
                char *p = line + strspn(line, " \t");
                p[strcspn(p, " \t\n")] = 0;
                snprintf(buf, size, "%s", p);
                return p[0] == '/';
        }
        if (n < 64 || memcmp(h, "\177ELF", 4) != 0 || h[4] != 2 /* ELFCLASS64 */)
                return false;
        uint64_t phoff;
        uint16_t phentsize, phnum;
        memcpy(&phoff, h + 32, 8);
        memcpy(&phentsize, h + 54, 2);
        memcpy(&phnum, h + 56, 2);
        for (unsigned i = 0; i < phnum && i < 64; i++) {
                unsigned char ph[56];
                if (phentsize < 56 || pread(fd, ph, sizeof ph, (off_t) (phoff + (uint64_t) i * phentsize)) !=
                                              (ssize_t) sizeof ph)
                        return false;
                uint32_t type;
                uint64_t off, filesz;
                memcpy(&type, ph, 4);
                memcpy(&off, ph + 8, 8);
                memcpy(&filesz, ph + 32, 8);
                if (type != 3 /* PT_INTERP */)
                        continue;
                if (filesz == 0 || filesz >= size)
                        return false;
                if (pread(fd, buf, filesz, (off_t) off) != (ssize_t) filesz)
                        return false;
                buf[filesz] = 0;
                return buf[0] == '/';
        }
        return false;
}

int sbx_backend_writable_set(const sbx_config *cfg, const char *scratch, const char *ws_rw, char ***ret) {
        _cleanup_strv_free_ char **w = NULL;
        if (strv_extend(&w, scratch) < 0 || strv_extend(&w, "/dev") < 0 ||
                strv_extend(&w, "/proc/self/fd") < 0 || strv_extend(&w, "/proc/thread-self/fd") < 0 ||
                (ws_rw && strv_extend(&w, ws_rw) < 0))
                return -ENOMEM;
        STRV_FOREACH(i, cfg->profile->fs_write)
                if (strv_extend(&w, *i) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(w);
        return 0;
}

int sbx_backend_check_reachable(const char *path, uid_t uid, gid_t gid, bool write, sbx_error *e) {
        if (geteuid() != 0 || uid == 0)
                return 0; /* the command runs as the caller: what the caller reaches, it does */
        pid_t pid = fork();
        if (pid < 0)
                return sbx_error_set(e, errno, "workspace", "fork: %m");
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                        _exit(2);
                _exit(access(path, R_OK | X_OK | (write ? W_OK : 0)) == 0 ? 0 : 1);
        }
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return sbx_error_set(e, errno, "workspace", "waitpid: %m");
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
                return 0;
        return sbx_error_set(e, EACCES, "workspace",
                "the workspace %s cannot be %s by uid %u (the policy's run_as), and this backend has no "
                "mount "
                "namespace to bring it in: make it and its parent directories accessible to that uid (chmod "
                "o+rx), "
                "or use --backend native",
                path, write ? "written" : "read", (unsigned) uid);
}

/* Where a command of the allowlist is: a path as given, or the first match on the sandbox's
 * PATH (the host's /usr is the sandbox's). */
static bool command_path(const char *cmd, char *buf, size_t size) {
        if (strchr(cmd, '/')) {
                snprintf(buf, size, "%s", cmd);
                return access(buf, X_OK) == 0;
        }
        const char *path = SBX_DEFAULT_PATH;
        for (const char *p = path;;) {
                const char *colon = strchrnul(p, ':');
                snprintf(buf, size, "%.*s/%s", (int) (colon - p), p, cmd);
                if (access(buf, X_OK) == 0)
                        return true;
                if (!*colon)
                        return false;
                p = colon + 1;
        }
}

int sbx_backend_ll_add_profile_paths(int fd, int abi, const sbx_profile *pr, sbx_error *e) {
        int r;
        STRV_FOREACH(p, pr->fs_read)
                if ((r = sbx_backend_ll_add_host(fd, abi, *p,
                             SBX_LL_READ | (sbx_backend_exec_allowed(pr, *p) ? SBX_LL_EXEC : 0), e)) < 0)
                        return r;
        STRV_FOREACH(p, pr->fs_write)
                if ((r = sbx_backend_ll_add_host(fd, abi, *p,
                             SBX_LL_READ | SBX_LL_WRITE |
                                     (sbx_backend_exec_allowed(pr, *p) ? SBX_LL_EXEC : 0),
                             e)) < 0)
                        return r;
        return 0;
}

int sbx_backend_ll_add_commands(int fd, int abi, const sbx_profile *pr, sbx_error *e) {
        if (pr->cmd_mode != SBX_CMD_MODE_STRICT)
                return 0;
        STRV_FOREACH(c, pr->cmd_allow) {
                char path[PATH_MAX], interp[PATH_MAX];
                if (!command_path(*c, path, sizeof path))
                        continue; /* not there: nothing to allow */
                int r = sbx_backend_ll_add_host(fd, abi, path, SBX_LL_READ | SBX_LL_EXEC, e);
                if (r < 0)
                        return r;
                /* what loading it needs: its ELF interpreter, or its script interpreter and that
                 * one's ELF interpreter */
                for (int depth = 0; depth < 2 && exec_interpreter(path, interp, sizeof interp); depth++) {
                        if ((r = sbx_backend_ll_add_host(fd, abi, interp, SBX_LL_READ | SBX_LL_EXEC, e)) < 0)
                                return r;
                        snprintf(path, sizeof path, "%s", interp);
                }
        }
        return 0;
}

/* The rule is for the inode the path names, symlinks followed (the open in
 * sbx_landlock_add_path()): no realpath() first, which under musl is a readlink() per path
 * component. A path that does not exist, or a dangling symlink, gets no rule. */
int sbx_backend_ll_add_host(int fd, int abi, const char *path, unsigned access, sbx_error *e) {
        int r = sbx_landlock_add_path(fd, abi, path, access);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return sbx_error_set(e, r, "landlock: add rule", "cannot add a Landlock rule for %s: %s",
                        path, strerror(-r));
        return 0;
}

static int write_all_fd(int fd, const void *buf, size_t n) {
        const char *p = buf;
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Whether this process already runs under a seccomp filter ("Seccomp: 2" in /proc/self/status). */
static bool under_seccomp(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[128];
        while (f && fgets(line, sizeof line, f))
                if (strncmp(line, "Seccomp:", 8) == 0)
                        return atoi(line + 8) != 0;
        return true; /* unknown: keep the fallback */
}

/* The seccomp programs, both from the one rule table, in a sealed memfd the init reads (format
 * in src/init/protocol.h): the observed one (violations go to the supervisor's listener, which
 * records and refuses them; spawning and the one execve are decided there) and the plain one
 * (violations answer their errno on their own) for where no listener can be installed — absent
 * when observation is required, or when one execve (allow_spawn or allow_exec false) needs the
 * listener to let exactly
 * one execve through. The init loads it for itself and everything under it. */
/* The compiled programs are cached in the cache dir (ours alone), keyed by the
 * options and by the identity of the code that compiled them (the file holding this library, or
 * the program itself when linked statically: device, inode, size, mtime), so a rebuild never reads an older
 * table's programs. Compiling costs ~0.4 ms a run; reading the cache ~0.03 ms. */
static int seccomp_cache_path(
        const sbx_seccomp_opts *o, const sbx_seccomp_opts *po, bool obs, bool pl, char *buf, size_t size) {
        char rt[PATH_MAX];
        struct {
                sbx_seccomp_opts o, po;
                bool obs, pl;
                sbx_code_id code;
        } key;
        memset(&key, 0, sizeof key);
        if (sbx_code_identity(&key.code) < 0 || sbx_cache_dir(rt, sizeof rt) < 0)
                return -ENOENT;
        key.o = *o;
        key.po = *po;
        key.obs = obs;
        key.pl = pl;
        char hex[65];
        sha256_hex(&key, sizeof key, hex);
        hex[24] = 0;
        if ((size_t) snprintf(buf, size, "%s/seccomp-%s.bpf", rt, hex) >= size)
                return -ENAMETOOLONG;
        return 0;
}

/* The cached blob into fd (a fresh memfd), when it is there, ours, and what it says it is. */
static bool seccomp_cache_read(const char *path, bool obs, bool pl, int fd) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        if (sbx_cache_read(path, 256 * 1024, &buf, &n) < 0 || n < sizeof(struct sbx_seccomp_blob_header))
                return false;
        struct sbx_seccomp_blob_header h;
        memcpy(&h, buf, sizeof h);
        if (h.magic != SBX_SECCOMP_BLOB_MAGIC || (h.n_observed > 0) != obs || (h.n_plain > 0) != pl ||
                sizeof h + ((size_t) h.n_observed + h.n_plain) * sizeof(struct sock_filter) != n)
                return false;
        return write_all_fd(fd, buf, n) >= 0;
}

/* The blob in fd (a memfd, written from its start) into the cache; each build keys its own
 * entries, the last 64 are kept. */
static void seccomp_cache_write(const char *path, int fd) {
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > 256 * 1024)
                return;
        _cleanup_free_ char *buf = malloc((size_t) st.st_size);
        if (buf && pread(fd, buf, (size_t) st.st_size, 0) == st.st_size)
                (void) sbx_cache_store(path, buf, (size_t) st.st_size, "seccomp-", 64);
}

/* One program (no listener) for a tool that loads it itself (bubblewrap's --seccomp FD): the
 * blob layout of the cache (header, then the program as the plain one), the descriptor positioned
 * after the header, so that a reader of FD from its offset sees the raw program. Cached as the
 * others are (~0.2 ms of compiling a run), keyed as a blob with neither program flag, which
 * sbx_backend_build_seccomp never writes. */
int sbx_backend_seccomp_raw_fd(const sbx_seccomp_opts *o, int *ret_fd, sbx_error *e) {
        _cleanup_close_ int fd = memfd_create("sandboxer-tool-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return sbx_error_set(e, errno, "seccomp", "memfd_create: %m");
        char cache[PATH_MAX + 64];
        bool cacheable = seccomp_cache_path(o, o, false, false, cache, sizeof cache) >= 0;
        if (!cacheable || !seccomp_cache_read(cache, false, true, fd)) {
                _cleanup_(sbx_seccomp_prog_freep) sbx_seccomp_prog *prog = NULL;
                int r = sbx_seccomp_build(o, &prog, e);
                if (r < 0)
                        return r;
                struct sbx_seccomp_blob_header h = {
                        .magic = SBX_SECCOMP_BLOB_MAGIC, .n_plain = prog->fprog.len};
                if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
                        (r = write_all_fd(fd, &h, sizeof h)) < 0 ||
                        (r = write_all_fd(
                                 fd, prog->fprog.filter, prog->fprog.len * sizeof(struct sock_filter))) < 0)
                        return sbx_error_set(
                                e, r < 0 ? -r : errno, "seccomp", "cannot write the seccomp program: %m");
                if (cacheable)
                        seccomp_cache_write(cache, fd);
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
                lseek(fd, sizeof(struct sbx_seccomp_blob_header), SEEK_SET) < 0)
                return sbx_error_set(e, errno, "seccomp", "cannot seal the seccomp program: %m");
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int sbx_backend_build_seccomp(const sbx_config *cfg, const sbx_seccomp_opts *extra,
        sbx_seccomp_opts *ret_opts, int *ret_fd, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        sbx_seccomp_opts o = {
                .deny_all_sockets_but_unix_pair = (!pr->net_allow && !pr->loopback) ||
                                                  (extra && extra->deny_all_sockets_but_unix_pair),
                .deny_inet = extra && extra->deny_inet,
                .deny_metadata = extra && extra->deny_metadata,
                .deny_spawn = !pr->allow_spawn,
                .exec = sbx_profile_exec_once(pr) ? SBX_SECCOMP_EXEC_NOTIFY : SBX_SECCOMP_EXEC_ALLOW,
                .notify = true,
                /* connect/bind are seen (and refused when they leave the sandbox) where the
                 * network is denied; write-intent calls only on request (a round trip each). */
                .observe_network = !pr->net_allow && !(extra && extra->deny_inet),
                .observe_fs_writes = pr->observe_fs_writes,
                .observe_exec = pr->cmd_mode != SBX_CMD_MODE_OFF,
        };
        _cleanup_(sbx_seccomp_prog_freep) sbx_seccomp_prog *observed = NULL, *plain = NULL;
        bool want_observed = pr->observe != SBX_OBSERVE_OFF || sbx_profile_exec_once(pr);
        /* The plain program is the fallback for a listener that cannot be installed, which only
         * happens when we already run under a seccomp filter (EBUSY: one listener per chain). */
        bool want_plain = pr->observe != SBX_OBSERVE_REQUIRED && !sbx_profile_exec_once(pr) &&
                          (pr->observe == SBX_OBSERVE_OFF || under_seccomp());
        int r;
        sbx_seccomp_opts po = o;
        po.notify = false;
        po.kill_on_violation = pr->on_violation == SBX_ON_VIOLATION_KILL;
        _cleanup_close_ int fd = memfd_create("sandboxer-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return sbx_error_set(e, errno, "seccomp", "memfd_create: %m");
        char cache[PATH_MAX + 64];
        bool cacheable = seccomp_cache_path(&o, &po, want_observed, want_plain, cache, sizeof cache) >= 0;
        if (cacheable && seccomp_cache_read(cache, want_observed, want_plain, fd))
                goto seal;
        if (cacheable && (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0))
                return sbx_error_set(e, errno, "seccomp", "memfd: %m");
        if (want_observed && (r = sbx_seccomp_build(&o, &observed, e)) < 0)
                return r;
        if (want_plain && (r = sbx_seccomp_build(&po, &plain, e)) < 0)
                return r;
        struct sbx_seccomp_blob_header h = {
                .magic = SBX_SECCOMP_BLOB_MAGIC,
                .n_observed = observed ? observed->fprog.len : 0,
                .n_plain = plain ? plain->fprog.len : 0,
        };
        if ((r = write_all_fd(fd, &h, sizeof h)) < 0 ||
                (observed && (r = write_all_fd(fd, observed->fprog.filter,
                                      observed->fprog.len * sizeof(struct sock_filter))) < 0) ||
                (plain && (r = write_all_fd(fd, plain->fprog.filter,
                                   plain->fprog.len * sizeof(struct sock_filter))) < 0))
                return sbx_error_set(e, r, "seccomp", "cannot write the seccomp programs: %s", strerror(-r));
        if (cacheable)
                seccomp_cache_write(cache, fd);
seal:
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
                lseek(fd, 0, SEEK_SET) < 0)
                return sbx_error_set(e, errno, "seccomp", "cannot seal the seccomp programs: %m");
        *ret_opts = o;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Benchmark builds only (-Dbench_knobs=true): turn a layer off to measure what it costs. */
bool sbx_backend_bench_disabled(const char *layer) {
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

/* One host path for a bind at target, resolved the one way every backend binds: absent (or a
 * dangling link) is skipped and reported "missing"; a symlink bound at its own path whose
 * target the read paths cover anyway stays a symlink, as on the host (/bin -> usr/bin); anything
 * else binds its real path. */
int sbx_backend_resolve_bind(sbx_report *rep, const char *host, const char *target, char *const *reads,
        sbx_bind *ret, sbx_error *e) {
        struct stat st;
        *ret = (sbx_bind){.kind = SBX_BIND_MISSING};
        if (lstat(host, &st) < 0) {
                if (errno == ENOENT) {
                        (void) sbx_report_add_mount(rep, host, target, "missing");
                        return 0;
                }
                return sbx_error_set(e, errno, "mount plan", "cannot stat %s: %m", host);
        }
        char *real = realpath(host, NULL);
        if (!real) {
                if (errno == ENOENT) { /* a dangling symlink */
                        (void) sbx_report_add_mount(rep, host, target, "missing");
                        return 0;
                }
                return sbx_error_set(e, errno, "mount plan", "cannot resolve %s: %m", host);
        }
        if (strlen(real) >= sizeof ret->real) {
                free(real);
                return sbx_error_set(e, ENAMETOOLONG, "mount plan", "%s: its real path is too long", host);
        }
        strcpy(ret->real, real);
        free(real);
        ret->kind = SBX_BIND_PATH;
        if (S_ISLNK(st.st_mode) && streq(host, target) && reads && sbx_path_covered(reads, ret->real)) {
                ssize_t n = readlink(host, ret->link, sizeof ret->link - 1);
                if (n < 0)
                        return sbx_error_set(e, errno, "mount plan", "cannot read link %s: %m", host);
                ret->link[n] = 0;
                ret->link_len = (size_t) n;
                ret->kind = SBX_BIND_SYMLINK;
        }
        return 0;
}

int sbx_backend_rw_workspace_owned(
        const sbx_config *cfg, const char *backend, uid_t uid, const char *fix, sbx_error *e) {
        struct stat st;
        if (!cfg->workspace || cfg->profile->ws_access != SBX_ACCESS_RW)
                return 0;
        if (stat(cfg->workspace, &st) < 0)
                return sbx_error_set(
                        e, errno, "workspace", "cannot use the workspace %s: %m", cfg->workspace);
        if (st.st_uid != uid)
                return sbx_error_set(e, EPERM, "workspace",
                        "refusing a writable workspace on the %s backend: the command runs as uid %u and "
                        "what "
                        "it writes would land owned by it, not by the workspace's owner (uid %u); %s",
                        backend, (unsigned) uid, (unsigned) st.st_uid, fix);
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

void sbx_backend_sort_paths(char **paths) {
        if (paths)
                qsort(paths, strv_length(paths), sizeof(char *), cmp_str);
}

/* What the supervisor saw, into the report: the command's end, then what the sandbox did to it
 * (DESIGN.md precedence), the limits hit with their evidence. The one classification of how a
 * run ended: run and exec (native, landlock, bwrap, firejail, persistent sandboxes) and the
 * container engines (sbx_oci_run), which say how they differ in o. */
int sbx_backend_classify_ex(const sbx_config *cfg, sbx_report *rep, const sbx_supervise_result *rp,
        const sbx_supervise_params *svpp, sbx_cgroup *cg, uint64_t t0, uint64_t ready_ns,
        const sbx_classify_opts *o, sbx_error *e) {
        static const sbx_classify_opts none = {0};
        const sbx_supervise_result res = *rp;
        const sbx_supervise_params svp = *svpp;
        double timeout = cfg->limits.value[SBX_LIMIT_TIMEOUT_S];
        double budget = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        if (!o)
                o = &none;
        rep->wall_ms = (int64_t) ((res.reaped_ns - t0) / 1000000);
        rep->exec_ms = res.started_ns ? (int64_t) ((res.ended_ns - res.started_ns) / 1000000) : 0;
        rep->teardown_ms = (int64_t) ((sbx_now_ns() - res.ended_ns) / 1000000);
        rep->cpu_user_ms = res.rusage.ru_utime.tv_sec * 1000 + res.rusage.ru_utime.tv_usec / 1000;
        rep->cpu_sys_ms = res.rusage.ru_stime.tv_sec * 1000 + res.rusage.ru_stime.tv_usec / 1000;
        rep->max_rss_kb = res.rusage.ru_maxrss;
        rep->stdout_bytes = res.stdout_bytes;
        rep->stderr_bytes = res.stderr_bytes;
        rep->output_truncated = res.output_limited;
        sbx_cgroup_stats cst = {0};
        /* what the report uses; the peak memory only as evidence of an OOM, below (all of them
         * where the cgroup's figures stand for the usage) */
        bool have_stats = cg && sbx_cgroup_stats_read_some(cg,
                                        o->container_usage ? SBX_CG_STAT_ALL
                                                           : SBX_CG_STAT_OOM | SBX_CG_STAT_PIDS |
                                                                     SBX_CG_STAT_PIDS_REFUSED,
                                        &cst) >= 0;
        if (have_stats && cst.pids_peak != SBX_CG_UNKNOWN)
                rep->pids_peak = (int64_t) cst.pids_peak;
        if (o->container_usage && have_stats && cst.cpu_usage_usec != SBX_CG_UNKNOWN) {
                /* the container's CPU time, all of it (user and system are not told apart) */
                rep->cpu_user_ms = (int64_t) (cst.cpu_usage_usec / 1000);
                rep->cpu_sys_ms = 0;
        }
        if (o->container_usage && have_stats && cst.memory_peak_bytes != SBX_CG_UNKNOWN)
                rep->max_rss_kb = (int64_t) (cst.memory_peak_bytes / 1024);

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
                (void) sbx_report_set_error(rep, "%s: %s: %s",
                        res.code == 127 ? "command not found" : "command not executable", res.text,
                        strerror(res.exec_errno));
                break;
        case SBX_SV_SETUP_FAILED:
        default:
                if (!res.killed) {
                        rep->status = SBX_STATUS_SETUP_ERROR;
                        rep->cli_exit = 125;
                        return sbx_error_set(e, res.exec_errno ? res.exec_errno : EIO, "sandbox init",
                                "sandbox setup failed inside the %s: %s%s%s",
                                o->container_usage ? "container" : "sandbox", res.text,
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
                if (rep->has_exit_code && res.end != SBX_SV_EXITED)
                        rep->has_exit_code = false;
        }
        if (res.output_limited) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_OUTPUT_LIMIT);
                sbx_detail d[2] = {{.key = "limit_bytes", .num = (int64_t) svp.output_cap},
                        {.key = "mechanism", .str = (char *) "supervisor"}};
                (void) sbx_report_add_violation(rep, SBX_VIOLATION_OUTPUT_LIMIT, "killed",
                        (int64_t) ((res.ended_ns - ready_ns) / 1000000), NULL, d, 2);
                if (rep->cli_exit < 128)
                        rep->cli_exit = 128 + SIGKILL;
        }
        if (have_stats && cst.pids_refused != SBX_CG_UNKNOWN && cst.pids_refused > 0) {
                /* A refusal the command survives: recorded, status left to how it ended. */
                sbx_detail d[2] = {{.key = "limit", .num = (int64_t) cfg->limits.value[SBX_LIMIT_PIDS]},
                        {.key = "refused", .num = (int64_t) cst.pids_refused}};
                (void) sbx_report_add_violation(
                        rep, SBX_VIOLATION_PROCESS_LIMIT, "denied", rep->exec_ms, NULL, d, 2);
        }
        if (res.violation_killed) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_VIOLATION);
                rep->killed_by_sandbox = true;
        }
        rep->observation = res.listener ? "active" : res.observation_unavailable ? "unavailable" : "off";
        if (res.oom || o->engine_oom ||
                (have_stats && cst.oom_kills != SBX_CG_UNKNOWN && cst.oom_kills > 0)) {
                sbx_cgroup_stats peak;
                if (!o->container_usage && cg &&
                        sbx_cgroup_stats_read_some(cg, SBX_CG_STAT_MEMORY_PEAK, &peak) >= 0)
                        cst.memory_peak_bytes = peak.memory_peak_bytes;
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_MEMORY_LIMIT);
                /* Evidence from the cgroup itself: its OOM event (we end the sandbox on it, which
                 * can beat the kernel's own OOM kill, then oom_kills stays 0) and its counters;
                 * an engine's own word where there is an engine. */
                sbx_detail d[5] = {
                        {.key = "limit_mb", .num = (int64_t) cfg->limits.value[SBX_LIMIT_MEMORY_MB]},
                        {.key = "oom_kills",
                                .num = (int64_t) (have_stats && cst.oom_kills != SBX_CG_UNKNOWN
                                                          ? cst.oom_kills
                                                          : 0)},
                        {.key = "peak_bytes",
                                .num = (int64_t) (have_stats && cst.memory_peak_bytes != SBX_CG_UNKNOWN
                                                          ? cst.memory_peak_bytes
                                                          : 0)},
                        {.key = "oom_event", .num = res.oom ? 1 : 0},
                        {.key = "engine_oom_killed", .num = o->engine_oom ? 1 : 0}};
                (void) sbx_report_add_violation(
                        rep, SBX_VIOLATION_MEMORY_LIMIT, "killed", rep->exec_ms, NULL, d, o->engine ? 5 : 4);
                rep->killed_by_sandbox = true;
        }
        if (res.cancel_signal) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_CANCELLED);
                rep->cli_exit = 128 + res.cancel_signal;
        }
        if (res.timed_out) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_TIMEOUT);
                sbx_detail d[2] = {{.key = "limit_s_x1000", .num = (int64_t) (svp.timeout_s * 1000)},
                        {.key = "limit",
                                .str = (char *) (o->timeout_key                   ? o->timeout_key
                                                 : budget > 0 && budget < timeout ? "budget_s"
                                                                                  : "timeout_s")}};
                (void) sbx_report_add_violation(
                        rep, SBX_VIOLATION_TIMEOUT, "killed", res.timeout_at_ms, NULL, d, 2);
                rep->cli_exit = 124;
        }
        return 0;
}

int sbx_backend_classify(const sbx_config *cfg, sbx_report *rep, const sbx_supervise_result *res,
        const sbx_supervise_params *svp, sbx_cgroup *cg, uint64_t t0, uint64_t ready_ns,
        const char *timeout_key, sbx_error *e) {
        sbx_classify_opts o = {.timeout_key = timeout_key};
        return sbx_backend_classify_ex(cfg, rep, res, svp, cg, t0, ready_ns, &o, e);
}

/* The host's audit state, as sbx_audit_probe() answers it, remembered for a few seconds in the
 * runtime dir: the kernel answers a status request from a kernel thread it makes for the reply
 * (~0.1 ms), too much to ask before every run where the answer is almost always the same. A
 * stale "on" costs nothing false: the status asked at the end of the run says whether audit was
 * still on, and the report follows it. */
#define AUDIT_STATE_TTL_NS (5 * 1000000000ull)
static int audit_state(void) {
        char rt[PATH_MAX], path[PATH_MAX + 32], buf[16];
        /* the path alone to read (the file's owner is checked); the directory is made, and
         * checked, only to write */
        sbx_backend_runtime_dir_path(rt, sizeof rt);
        snprintf(path, sizeof path, "%s/audit.state", rt);
        struct stat st;
        struct timespec now;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
                clock_gettime(CLOCK_REALTIME, &now) == 0) {
                int64_t age = ((int64_t) now.tv_sec - st.st_mtim.tv_sec) * 1000000000ll +
                              (now.tv_nsec - st.st_mtim.tv_nsec);
                ssize_t n = read(fd, buf, sizeof buf - 1);
                if (age >= 0 && (uint64_t) age < AUDIT_STATE_TTL_NS && n > 0) {
                        buf[n] = 0;
                        char *end;
                        errno = 0;
                        long v = strtol(buf, &end, 10);
                        /* "0\n" or "-ERRNO\n" as written below; anything else is asked again */
                        if (errno == 0 && end != buf && streq(end, "\n") && v <= 0 && v > -4096)
                                return (int) v;
                }
        }
        int r = sbx_audit_probe();
        if (sbx_backend_runtime_dir(rt, sizeof rt) < 0)
                return r;
        char tmp[PATH_MAX + 48];
        snprintf(tmp, sizeof tmp, "%s.%d", path, (int) getpid());
        _cleanup_close_ int w = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (w >= 0) {
                int k = snprintf(buf, sizeof buf, "%d\n", r);
                if (write(w, buf, (size_t) k) != k || rename(tmp, path) < 0)
                        (void) unlink(tmp);
        }
        return r;
}

void sbx_backend_runtime_gc(const char *base) {
        _cleanup_close_ int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_strv_free_ char **dead = NULL;
        if (fd < 0 || sbx_owned_dead_scan(fd, &dead) < 0)
                return;
        STRV_FOREACH(n, dead) {
                char path[PATH_MAX];
                if (strncmp(*n, "run_", 4) != 0 ||
                        (size_t) snprintf(path, sizeof path, "%s/%s", base, *n) >= sizeof path)
                        continue;
                (void) umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW); /* EINVAL: not a mount */
                (void) sbx_rm_rf(path);
        }
}

int sbx_backend_audit_reader(
        const sbx_config *cfg, const sbx_run_io *io, int ll_abi, bool mounts, sbx_report *rep) {
        const sbx_profile *pr = cfg->profile;
        if (pr->observe_fs_writes)
                return -1; /* the notification is the source: sbx_backend_launch says so */
        char why[200];
        int fd = -1, r;
        if (pr->observe == SBX_OBSERVE_OFF)
                snprintf(why, sizeof why, "observe: off");
        else if (io->persist)
                snprintf(why, sizeof why, "a persistent sandbox does not read the audit log");
        else if (ll_abi < 7)
                snprintf(why, sizeof why, "Landlock ABI %d writes no audit records (7 does)", ll_abi);
        else if (geteuid() != 0)
                snprintf(why, sizeof why, "reading the kernel's audit log needs root");
        else if ((r = audit_state()) < 0)
                snprintf(why, sizeof why, "%s", sbx_audit_why(r));
        else if ((fd = sbx_audit_open()) < 0) {
                snprintf(why, sizeof why, "cannot open the audit log: %s", strerror(-fd));
                fd = -1;
        }
        if (fd >= 0) {
                rep->fs_write_evidence = "landlock_audit";
                snprintf(rep->fs_write_note, sizeof rep->fs_write_note, "%s",
                        mounts ? "the kernel's Landlock denial records (the path the kernel resolved; "
                                 "for a creation, its directory), for writes into the sandbox's own "
                                 "tree (/etc/x, /x): a write onto a read-only bind of a host path "
                                 "(/usr, the workspace) is refused by the mount first, and one that "
                                 "the file's permissions refuse, by those first: neither is recorded "
                                 "(observe.fs_writes records them)"
                               : "the kernel's Landlock denial records (the path the kernel resolved; "
                                 "for a creation, its directory); a write that the file's permissions "
                                 "refuse is refused before Landlock and not recorded (observe.fs_writes "
                                 "records it)");
                return fd;
        }
        rep->fs_write_evidence = "none";
        snprintf(rep->fs_write_note, sizeof rep->fs_write_note,
                "%s: refused writes are not recorded (observe.fs_writes: true records them, at a cost per "
                "write)",
                why);
        return -1;
}

int sbx_backend_launch(const sbx_config *cfg, const sbx_run_io *io, sbx_report *rep, sbx_spawn_params *sp,
        sbx_cgroup *cg, const sbx_seccomp_opts *sc_opts, char *const *writable, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        _cleanup_close_ int oom_fd = -EBADF;
        int outp[2] = {-1, -1}, errp[2] = {-1, -1}, spair[2] = {-1, -1}, master = -1, slave = -1;
        int r;

        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
                socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, spair) < 0) {
                r = sbx_error_set(e, errno, "pipes", "cannot create pipes: %m");
                goto fail_fds;
        }
        /* The init's credentials come with its messages: the supervisor tells the init's own
         * calls apart by pid, also where a sandbox tool runs between us and it (bwrap). */
        (void) setsockopt(spair[0], SOL_SOCKET, SO_PASSCRED, &(int){1}, sizeof(int));
        /* Without a pid namespace the init is no PID 1: be the subreaper its orphans come to. */
        bool no_pidns = !(sp->clone_flags & CLONE_NEWPID);
        if (no_pidns && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
                r = sbx_error_set(e, errno, "prctl", "cannot become a child subreaper: %m");
                goto fail_fds;
        }
        sp->stdin_fd = io->in_fd;
        sp->stdout_fd = outp[1];
        sp->stderr_fd = errp[1];
        sp->status_fd = spair[1];
        if (io->tty) {
                /* A pseudo-terminal of the sandbox's own: its slave is the command's 0, 1 and 2
                 * (and controlling terminal); we relay the master to the caller's stdio. */
                master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
                char name[64];
                if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
                        ptsname_r(master, name, sizeof name) != 0 ||
                        (slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
                        r = sbx_error_set(e, errno, "tty", "cannot allocate a pseudo-terminal: %m");
                        goto fail_fds;
                }
                struct winsize ws;
                if (ioctl(io->out_fd, TIOCGWINSZ, &ws) == 0 || ioctl(io->in_fd, TIOCGWINSZ, &ws) == 0)
                        (void) ioctl(master, TIOCSWINSZ, &ws);
                sp->stdin_fd = sp->stdout_fd = sp->stderr_fd = slave;
        }

        /* The child joins its v1 groups itself ("0" to their tasks files) and the cgroup2 group
         * at clone: no pid written to a cgroup.procs, which would wait for an RCU grace period
         * (~10-15 ms, see cgroup.h). The parent moves it by pid only when that cannot be. */
        int cg_fds[_SBX_CG_CONTROLLER_MAX];
        int n_cg_fds = 0;
        sp->cgroup_fd = -1;
        if (cg) {
                sp->cgroup_fd = sbx_cgroup_v2_fd(cg);
                n_cg_fds = sbx_cgroup_self_attach_fds(cg, cg_fds, ELEMENTSOF(cg_fds));
                if (n_cg_fds >= 0) {
                        sp->self_attach_fds = cg_fds;
                        sp->n_self_attach_fds = (size_t) n_cg_fds;
                } else {
                        n_cg_fds = 0;
                        sp->after_clone = attach_cgroup;
                        sp->userdata = cg;
                }
        }

        if (!rep->fs_write_evidence) {
                rep->fs_write_evidence = pr->observe_fs_writes && sc_opts ? "notify" : "none";
                snprintf(rep->fs_write_note, sizeof rep->fs_write_note, "%s",
                        pr->observe_fs_writes && sc_opts
                                ? "observe.fs_writes: write-intent calls are routed to the supervisor, "
                                  "which refuses those outside the writable set"
                                : "refused writes are not recorded on this backend (observe.fs_writes: "
                                  "true records them)");
        }

        sbx_spawned sv;
        uint64_t t0 = sbx_now_ns();
        sbx_debug_mark("spawning");
        r = sbx_spawn(sp, &sv, e);
        sbx_debug_mark("init running");
        if (r >= 0 && cg)
                (void) sbx_cgroup_gc_dead_siblings(cg); /* see gc_leftovers() */
        for (int i = 0; i < n_cg_fds; i++)
                close(cg_fds[i]);
        close(outp[1]), close(errp[1]), close(spair[1]);
        outp[1] = errp[1] = spair[1] = -1;
        slave = safe_close(slave);
        if (r < 0)
                goto fail_fds;
        rep->setup_ms = (int64_t) ((sv.ready_ns - t0) / 1000000);

        double timeout = cfg->limits.value[SBX_LIMIT_TIMEOUT_S];
        double budget = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        sbx_supervise_params svp = {
                .pid = sv.pid,
                .pidfd = sv.pidfd,
                .status_fd = spair[0],
                .out_fd = master >= 0 ? master : outp[0],
                .err_fd = master >= 0 ? -1 : errp[0],
                .tty_master = master,
                .tty_in = master >= 0 ? io->in_fd : -1,
                .fwd_out = io->out_fd,
                .fwd_err = io->err_fd,
                .output_cap = sbx_limit_bytes(&cfg->limits, SBX_LIMIT_OUTPUT_MB),
                .start_ns = sv.ready_ns,
                .timeout_s = budget > 0 && budget < timeout ? budget : timeout,
                .grace_s = 2.0,
                .handle_signals = io->handle_signals,
                .oom_fd = -1,
                .seccomp = sc_opts,
                .report = rep,
                .writable = writable,
                .loopback = pr->loopback,
                .cmd_allow = pr->cmd_mode != SBX_CMD_MODE_OFF ? pr->cmd_allow : NULL,
                .cmd_deny = pr->cmd_mode != SBX_CMD_MODE_OFF ? pr->cmd_deny : NULL,
                .cmd_strict = pr->cmd_mode == SBX_CMD_MODE_STRICT,
                .kill_on_violation = pr->on_violation == SBX_ON_VIOLATION_KILL,
                .reap_orphans = no_pidns,
                .audit_fd = sp->audit_fd > 0 ? sp->audit_fd : -1,
        };
        if (cg) {
                svp.kill_all = kill_cgroup;
                svp.userdata = cg;
                oom_fd = sbx_cgroup_event_fd(cg);
                svp.oom_fd = oom_fd >= 0 ? oom_fd : -1;
        }
        if (master >= 0) {
                /* the supervisor owns the master now; the unused pipes go */
                outp[0] = safe_close(outp[0]);
                errp[0] = safe_close(errp[0]);
                master = -1;
        }
        if (io->persist) {
                /* the init's stdio: nobody reads it */
                svp.fwd_out = svp.fwd_err = -1;
                const char *cwd = NULL;
                for (char *const *a = sp->init_argv; a && *a && a[1]; a++)
                        if (streq(*a, "--cwd"))
                                cwd = a[1];
                int ctl = fcntl(spair[0], F_DUPFD_CLOEXEC, 3);
                if (ctl < 0)
                        r = sbx_error_set(e, errno, "persist", "dup: %m");
                else
                        r = sbx_persist_attach(
                                io->persist, cfg, rep, &svp, cg, ctl, sv.pid, sv.pidfd, sp->envp, cwd, e);
                if (r < 0) {
                        (void) syscall(SYS_pidfd_send_signal, sv.pidfd, SIGKILL, NULL, 0);
                        svp.timeout_s = 0.001;
                }
        }
        sbx_supervise_result res;
        int r2 = sbx_supervise(&svp, &res, r < 0 ? NULL : e);
        if (svp.audit_fd >= 0 && res.audit_off) {
                rep->fs_write_evidence = "none";
                snprintf(rep->fs_write_note, sizeof rep->fs_write_note,
                        "the host's audit was off at the end of the run: refused writes may not all be "
                        "recorded");
        } else if (svp.audit_fd >= 0 && res.audit_lost)
                snprintf(rep->fs_write_note, sizeof rep->fs_write_note,
                        "the kernel's Landlock denial records; some were lost (a burst beyond the "
                        "socket's buffer): the counts are low");
        if (io->persist)
                sbx_persist_detach(io->persist);
        if (r >= 0)
                r = r2;
        sbx_debug_mark("sandbox gone (supervised)");
        close(sv.pidfd);
        if (r < 0)
                return r;
        if (io->persist && sbx_persist_served(io->persist)) {
                /* A persistent sandbox ended (killed, destroyed): its execs have their reports. */
                rep->wall_ms = (int64_t) ((res.reaped_ns - t0) / 1000000);
                rep->teardown_ms = (int64_t) ((sbx_now_ns() - res.reaped_ns) / 1000000);
                rep->status = res.violation_killed ? SBX_STATUS_VIOLATION : SBX_STATUS_EXITED;
                rep->has_exit_code = true;
                rep->exit_code = 0;
                rep->cli_exit = 0;
                rep->observation = res.listener                  ? "active"
                                   : res.observation_unavailable ? "unavailable"
                                                                 : "off";
                return 0;
        }

        r = sbx_backend_classify(cfg, rep, &res, &svp, cg, t0, sv.ready_ns, NULL, e);
        sbx_debug_mark("outcome classified");
        if (r < 0)
                return r;
        return 0;

fail_fds:
        for (int i = 0; i < 2; i++) {
                safe_close(outp[i]);
                safe_close(errp[i]);
                safe_close(spair[i]);
        }
        safe_close(master);
        safe_close(slave);
        return r;
}

/* The first executable `name` on $PATH (or the standard directories), opened for execveat.
 * A run asks for its tool more than once (the backend's probe, auto's choice, the run itself),
 * and each search is an access() per PATH directory — ten here: the last place found is
 * remembered (per thread, for the same PATH) and tried first. */
int sbx_backend_open_tool(const char *name, char *path, size_t size) {
        static __thread struct {
                char name[32];
                const char *path_env;
                char found[PATH_MAX];
        } memo[4];
        static __thread unsigned n_memo;
        const char *env = getenv("PATH");
        const char *dirs = env && *env ? env : "/usr/local/bin:/usr/bin:/bin";
        for (unsigned i = 0; i < n_memo && i < ELEMENTSOF(memo); i++)
                if (streq(memo[i].name, name) && memo[i].path_env == env && strlen(memo[i].found) < size &&
                        access(memo[i].found, X_OK) == 0) {
                        int fd = open(memo[i].found, O_RDONLY | O_CLOEXEC);
                        if (fd >= 0) {
                                memcpy(path, memo[i].found, strlen(memo[i].found) + 1);
                                return fd;
                        }
                }
        for (const char *p = dirs; *p;) {
                size_t l = strcspn(p, ":");
                if (l > 0 && (size_t) snprintf(path, size, "%.*s/%s", (int) l, p, name) < size &&
                        access(path, X_OK) == 0) {
                        int fd = open(path, O_RDONLY | O_CLOEXEC);
                        if (fd >= 0) {
                                if (strlen(name) < sizeof memo[0].name &&
                                        strlen(path) < sizeof memo[0].found) {
                                        unsigned k = n_memo++ % ELEMENTSOF(memo);
                                        snprintf(memo[k].name, sizeof memo[k].name, "%s", name);
                                        snprintf(memo[k].found, sizeof memo[k].found, "%s", path);
                                        memo[k].path_env = env;
                                }
                                return fd;
                        }
                }
                p += l;
                if (*p == ':')
                        p++;
        }
        return -ENOENT;
}

/* SANDBOXER_DEBUG_ARGV=1: the generated command line on stderr, shell-quoted, so that it can be
 * run by hand (bench/backends.sh compares the two). Debugging aid; the library is otherwise
 * silent. */
void sbx_backend_debug_argv(const char *tool, char *const *argv) {
        const char *v = getenv("SANDBOXER_DEBUG_ARGV");
        if (!v || !streq(v, "1"))
                return;
        fprintf(stderr, "sandboxer: %s argv:", tool);
        STRV_FOREACH(a, argv) {
                fputc(' ', stderr);
                if (**a && strspn(*a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/"
                                      ".,:@%") == strlen(*a))
                        fputs(*a, stderr);
                else {
                        fputc('\'', stderr);
                        for (const char *c = *a; *c; c++)
                                if (*c == '\'')
                                        fputs("'\\''", stderr);
                                else
                                        fputc(*c, stderr);
                        fputc('\'', stderr);
                }
        }
        fputc('\n', stderr);
}

void sbx_backend_runtime_dir_path(char *buf, size_t size) {
        const char *env = secure_getenv("SANDBOXER_RUNTIME_DIR");
        if (env && env[0] == '/')
                snprintf(buf, size, "%s", env);
        else if (geteuid() == 0)
                snprintf(buf, size, "/run/sandboxer");
        else if ((env = getenv("XDG_RUNTIME_DIR")) && env[0] == '/' && access(env, W_OK) == 0)
                snprintf(buf, size, "%s/sandboxer", env);
        else
                snprintf(buf, size, "/tmp/sandboxer-%u", (unsigned) getuid());
}

int sbx_backend_runtime_dir(char *buf, size_t size) {
        sbx_backend_runtime_dir_path(buf, size);
        mode_t mode = geteuid() == 0 ? 0711 : 0700;
        /* A directory the user named may not be there yet: made with its parents, which run_as
         * (root's sandboxes run as another uid) must be able to pass through to reach a scratch
         * below it. The default places have their parents. */
        if (secure_getenv("SANDBOXER_RUNTIME_DIR"))
                return sbx_own_dir_p(buf, mode, 0755);
        return sbx_own_dir(buf, mode);
}

#define SHM_SCRATCH_DIR "/dev/shm/sandboxer"

static bool on_memory_fs(const char *path) {
        struct statfs sf;
        return statfs(path, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

/* Root, no SANDBOXER_RUNTIME_DIR, the runtime directory (runtime) on disk, /dev/shm a tmpfs. */
static bool scratch_in_shm(const char *runtime) {
        return geteuid() == 0 && !secure_getenv("SANDBOXER_RUNTIME_DIR") && !on_memory_fs(runtime) &&
               on_memory_fs("/dev/shm");
}

int sbx_backend_scratch_dir(char *buf, size_t size) {
        int r = sbx_backend_runtime_dir(buf, size);
        if (r < 0 || !scratch_in_shm(buf))
                return r;
        /* a /dev/shm/sandboxer planted by another user is not used (own_dir refuses it): the
         * runtime directory serves as before */
        if (sbx_own_dir(SHM_SCRATCH_DIR, 0711) >= 0)
                snprintf(buf, size, "%s", SHM_SCRATCH_DIR);
        return 0;
}

void sbx_backend_scratch_dir_path(char *buf, size_t size) {
        sbx_backend_runtime_dir_path(buf, size);
        struct stat st;
        if (scratch_in_shm(buf) && lstat(SHM_SCRATCH_DIR, &st) == 0 && S_ISDIR(st.st_mode) &&
                st.st_uid == geteuid())
                snprintf(buf, size, "%s", SHM_SCRATCH_DIR);
}
