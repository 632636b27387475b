/* common.h — what the backends share, one file per concern: init.c (the sandbox's init, its
 * argv and environment), paths.c (the filesystem view: binds, exec rules, the writable set,
 * Landlock rules), limits.c (what enforces each limit), seccomp-fd.c (the programs handed to the
 * init), launch.c (the one launch path: spawn, supervise), classify.c (how a run ended, for every
 * backend and the container engines), runtime.c (runtime and scratch directories, tools); the
 * run plan every backend translates is plan.h.
 * Backends that run the sandbox's own init differ only in the spawn parameters they fill
 * (namespaces, mounts, ids, Landlock rules). DESIGN.md principle 3. */
#pragma once

#include <limits.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "isolate/cgroup.h"
#include "isolate/rlimit.h"
#include "isolate/seccomp.h"
#include "supervise/spawn.h"
#include "supervise/supervise.h"

#define SBX_SANDBOX_UID 1000
#define SBX_SANDBOX_GID 1000
#define SBX_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* The sandboxer-init binary, opened O_RDONLY|O_CLOEXEC (next to the program, or libexec). */
int sbx_backend_open_init(sbx_error *e);

/* True when p is one of list's paths or below one. */
bool sbx_path_covered(char *const *list, const char *p);
bool sbx_backend_exec_allowed(const sbx_profile *pr, const char *path);

/* TMPDIR and HOME (filesystem.home, else scratch, unless the profile's env sets HOME), PATH, LANG,
 * the profile's env and
 * SANDBOXER_WORKSPACE (ws_visible, NULL when there is none). Nothing else. */
int sbx_backend_build_env(const sbx_config *cfg, const char *scratch, const char *ws_visible, char ***ret);
/* The same, where the egress proxy is not at 127.0.0.1:3128 inside (the landlock backend: a port
 * of the host's loopback, and a credential in the URL): proxy the "host:port" or
 * "user:pass@host:port" that HTTP_PROXY (http://…) and ALL_PROXY (socks5h://…) name. */
int sbx_backend_build_env_proxy(
        const sbx_config *cfg, const char *scratch, const char *ws_visible, const char *proxy, char ***ret);

/* The init's argv: sandboxer-init --cwd DIR [--landlock-fd 5] [--seccomp-fd 4] -- ARGV */
int sbx_backend_init_argv(
        const char *cwd, bool landlock, bool landlock_log, bool seccomp, char *const *argv, char ***ret);
/* What the seccomp fence says of spawning, for config.fences.seccomp: ", no new processes, one
 * execve" (allow_spawn: false), ", one execve (...)" (allow_exec: false), or "". */
const char *sbx_backend_spawn_fence_text(const sbx_profile *pr);
/* Adds --host-ns to an init argv: our own mount, pid, ipc, uts and network namespaces, as far as
 * backend `id` claims the sandbox has its own (isolation level container: a mount view;
 * pid_isolation, ipc_isolation, hostname, net.loopback). The init refuses to start the command
 * when it finds itself in one of them: a wrapped tool that runs the command unsandboxed (firejail
 * does, when it believes it already runs in a sandbox) fails closed instead. 0 or -errno. */
int sbx_backend_init_argv_isolated(sbx_backend_id id, char ***init_argv);
/* Adds --egress-ports 3128[,SERVICE-PORT...] to an init argv when the profile's egress goes
 * through the proxy: for a backend whose network namespace a tool makes (bwrap), the init makes
 * the listening sockets there and hands them to the supervisor. Needs --host-ns with net (the
 * init refuses otherwise). 0 (nothing to add), 1 (added), -errno. */
int sbx_backend_init_argv_egress(const sbx_profile *pr, char ***init_argv);
/* The ports the egress listeners take inside, as --egress-ports has them: "3128[,SERVICE...]"
 * (the proxy, then each of network.services in order). 0, or -EINVAL (too many, malformed). */
int sbx_backend_egress_ports(const sbx_profile *pr, char *ports, size_t size);
/* The supervisor's egress proxy for a profile that asks for one (network.egress): its rules and
 * services, named in the report (egress.proxy, the services, the egress fence); the listening
 * sockets come later (sbx_egress_run_serve), or host_fd ≥ 0 (taken, also on failure): on the
 * host's loopback with the credential secret (the landlock backend). */
struct sbx_egress_run;
int sbx_backend_egress_new(const sbx_config *cfg, sbx_report *rep, int host_fd, const char *secret,
        struct sbx_egress_run **ret, sbx_error *e);

typedef struct sbx_limit_context {
        bool fresh_userns; /* the sandbox has a uid of its own in a fresh user namespace */
        bool own_pidns; /* and a pid namespace: its PID 1's death kills the whole tree */
        bool scratch_tmpfs; /* scratch is a tmpfs with size= */
        bool freezable; /* a persistent sandbox: a group that can freeze it (pause) is made too */
        bool keep_leftovers; /* sbx_run_io's: killed runs' groups are not swept here */
} sbx_limit_context;

/* Decide what enforces each limit (cgroups, else rlimits or seccomp that mean the same for the
 * whole sandbox, else nothing: a setup error unless enforce.best_effort lists it), create the
 * cgroup. Mechanisms go into the report. */
int sbx_backend_plan_limits(const sbx_config *cfg, sbx_report *rep, const sbx_limit_context *ctx,
        sbx_cgroup **ret_cg, sbx_rlimit_plan *rl, sbx_error *e);
/* The run's cgroup with the memory, pids and cpus limits of cfg (each where a controller allows),
 * named for its owner run (rep->id): sbx_cgroup_create() with flags. */
int sbx_backend_cgroup_for_run(const sbx_config *cfg, const sbx_report *rep,
        const sbx_cgroup_probe_result *probe, unsigned flags, sbx_cgroup **ret, sbx_error *e);
/* A group with no limits that a persistent sandbox's processes join so that it can be paused (a
 * microvm's relay and qemu: its limits are the guest's), and fds[] (at most max, numbered above
 * 3, O_CLOEXEC) that a child writes "0" to, first thing, to join it (sbx_cgroup_self_attach()):
 * *ret_n of them. NULL (*ret_n 0) when no group can be had here: pause then says why. */
sbx_cgroup *sbx_backend_freeze_group(const sbx_report *rep, int *fds, size_t max, int *ret_n);
/* What enforces limit l in cg, as the report names it (none without cg or a controller). */
sbx_mechanism sbx_backend_cg_mechanism(const sbx_cgroup *cg, sbx_cg_limit l);
/* Kill, remove and free; NULL ok; returns NULL. */
sbx_cgroup *sbx_backend_cgroup_destroy(sbx_cgroup *cg);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_cgroup *, sbx_backend_cgroup_destroy);

/* The seccomp programs for the init (observed, and plain where no listener can be had), as a
 * sealed memfd; *ret_opts are the observed program's options, for the supervisor to classify
 * notifications with. `extra` adds options (deny_inet, deny_metadata). */
int sbx_backend_build_seccomp(const sbx_config *cfg, const sbx_seccomp_opts *extra,
        sbx_seccomp_opts *ret_opts, int *ret_fd, sbx_error *e);
/* One program, no listener, raw BPF from the descriptor's offset (bwrap --seccomp), cached. */
int sbx_backend_seccomp_raw_fd(const sbx_seccomp_opts *o, int *ret_fd, sbx_error *e);

/* Benchmark builds only (-Dbench_knobs=true): SANDBOXER_BENCH_DISABLE lists layers to skip. */
bool sbx_backend_bench_disabled(const char *layer);

/* Where the sandbox may write, as it sees paths (for observed write-intent calls): scratch,
 * /dev, its own fds, the workspace when writable (ws_rw, NULL otherwise), filesystem.write. */
int sbx_backend_writable_set(const sbx_config *cfg, const char *scratch, const char *ws_rw, char ***ret);

/* Backends without a mount namespace run the command as run_as when we are root: it must be
 * able to reach the workspace itself. 0, or -EACCES with the path, the uid and the fix. */
int sbx_backend_check_reachable(const char *path, uid_t uid, gid_t gid, bool write, sbx_error *e);

/* Landlock rules for the profile's filesystem.read (read, and execute unless restricted) and
 * filesystem.write (read, write) host paths. */
int sbx_backend_ll_add_profile_paths(int fd, int abi, const sbx_profile *pr, sbx_error *e);

/* process.commands strict: execute rights for the allowed commands and their interpreters. */
int sbx_backend_ll_add_commands(int fd, int abi, const sbx_profile *pr, sbx_error *e);

/* Resolve path and add a Landlock rule for it (absent paths are skipped). */
int sbx_backend_ll_add_host(int fd, int abi, const char *path, unsigned access, sbx_error *e);

/* The kernel's own Landlock denial records as the evidence of refused writes: a socket on the
 * audit log where they can be read (root, the host's audit enabled, Landlock ABI 7, a one-shot
 * run, observation not off, observe.fs_writes not asked), else -1; the report's
 * fs_write_evidence says which source and why. `mounts`: the backend has read-only mounts,
 * which refuse a write before Landlock sees it. */
int sbx_backend_audit_reader(
        const sbx_config *cfg, const sbx_run_io *io, int ll_abi, bool mounts, sbx_report *rep);

/* Start the sandbox described by sp (the backend filled ids, namespaces, mounts, Landlock,
 * seccomp, init), with stdio pipes, the cgroup joined, then supervise it and write the outcome
 * into the report. Returns 0 when the command ran (whatever its outcome), -errno on a setup
 * error. */
int sbx_backend_launch(const sbx_config *cfg, const sbx_run_io *io, sbx_report *rep, sbx_spawn_params *sp,
        sbx_cgroup *cg, const sbx_seccomp_opts *sc_opts, char *const *writable, sbx_error *e);

/* Sorted in place, parents before children (/usr before /usr/share). */
void sbx_backend_sort_paths(char **paths);

/* How a backend's run differs for the classification: the command is not our child (a container
 * engine's: the cgroup's CPU time and memory peak stand for the usage, and a setup failure is
 * "inside the container"); an engine that can say it OOM-killed the container (engine: its word
 * is evidence, engine_oom: it said so); the limit a timeout stands for (NULL: timeout_s, or
 * budget_s when the budget was the shorter). */
typedef struct sbx_classify_opts {
        bool container_usage;
        bool engine, engine_oom;
        const char *timeout_key;
} sbx_classify_opts;
int sbx_backend_classify_ex(const sbx_config *cfg, sbx_report *rep, const sbx_supervise_result *res,
        const sbx_supervise_params *svp, sbx_cgroup *cg, uint64_t t0, uint64_t ready_ns,
        const sbx_classify_opts *o, sbx_error *e);

/* The supervisor's result into the report (status, exit, usage, violations of the limits hit).
 * timeout_key names the limit a timeout stands for (NULL: timeout_s, or budget_s when the
 * budget was the shorter). 0, or -errno when the init reported a set-up failure. */
int sbx_backend_classify(const sbx_config *cfg, sbx_report *rep, const sbx_supervise_result *res,
        const sbx_supervise_params *svp, sbx_cgroup *cg, uint64_t t0, uint64_t ready_ns,
        const char *timeout_key, sbx_error *e);

/* The first executable `name` on $PATH (or the standard directories), opened for execveat;
 * its path in path. -ENOENT when there is none. */
int sbx_backend_open_tool(const char *name, char *path, size_t size);

/* SANDBOXER_DEBUG_ARGV=1: a generated command line on stderr, shell-quoted, so that it can be
 * rerun by hand (bench/backends.sh). */
void sbx_backend_debug_argv(const char *tool, char *const *argv);

/* The runtime directory ($SANDBOXER_RUNTIME_DIR, /run/sandboxer as root, $XDG_RUNTIME_DIR/
 * sandboxer, else /tmp/sandboxer-UID) into buf, created if needed; -EPERM when what is there is
 * not a directory of ours writable only by us. */
int sbx_backend_runtime_dir(char *buf, size_t size);
/* What runs killed with SIGKILL left in the runtime directory base: the entries named
 * "run_<id>.<pid>.<pidns>" (a scratch directory, a wrapper's profile or working directory) whose
 * owner is dead. One getdents; best effort (`sandboxer gc` does the same and reports). */
void sbx_backend_runtime_gc(const char *base);
/* Its path only: nothing is created or checked (what `gc --dry-run` looks at). */
void sbx_backend_runtime_dir_path(char *buf, size_t size);
/* Where the landlock backend makes its per-run scratch directories (as root, the mount points of
 * their tmpfs): the runtime directory, unless that is on a disk filesystem and we are root
 * without SANDBOXER_RUNTIME_DIR — then /dev/shm/sandboxer (0711, ours), where making and removing
 * a directory is not a journalled operation (0.05-0.2 ms a run on an ext4 /run). Falls back to
 * the runtime directory when /dev/shm is no tmpfs or what is there is not ours. The _path form
 * creates nothing (for gc); it names the /dev/shm directory only if it exists. */
int sbx_backend_scratch_dir(char *buf, size_t size);
void sbx_backend_scratch_dir_path(char *buf, size_t size);
