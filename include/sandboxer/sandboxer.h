/* sandboxer.h — the public C API of libsandboxer.
 *
 * One-shot runs, builder style (minijail-like): sbx_run_new() → sbx_run_set_…() → sbx_run_execute()
 * → read the report → sbx_run_free(). Functions return 0 (or a non-negative value) on success and
 * a negative errno on failure; a human sentence for the last failure is at sbx_run_error().
 * Strings passed in are copied. Nothing here prints. */
#ifndef SANDBOXER_H
#define SANDBOXER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SBX_PUBLIC __attribute__((visibility("default")))
#else
#define SBX_PUBLIC
#endif

typedef struct sbx_run sbx_run;

SBX_PUBLIC sbx_run *sbx_run_new(void);
/* Frees the handle; accepts NULL; returns NULL. */
SBX_PUBLIC sbx_run *sbx_run_free(sbx_run *run);

/* A built-in profile id ("profile.python"), a profile on the search path, or a YAML file. */
SBX_PUBLIC int sbx_run_set_profile(sbx_run *run, const char *name_or_file);
/* The site policy file (default: /etc/sandboxer/policy.yaml if present, else built in). */
SBX_PUBLIC int sbx_run_set_policy_file(sbx_run *run, const char *path);
/* The profile and policy as a control plane resolved them (the bytes of the library's
 * sbx_config_encode(), from the same build): used instead of loading the profile and the policy
 * file again, so that a file edited since is not read. Copied; NULL clears it. */
SBX_PUBLIC int sbx_run_set_resolved_config(sbx_run *run, const void *data, size_t len);
/* "auto", "native", "landlock", ... */
SBX_PUBLIC int sbx_run_set_backend(sbx_run *run, const char *backend);
/* "balanced" or "strict". */
SBX_PUBLIC int sbx_run_set_mode(sbx_run *run, const char *mode);
SBX_PUBLIC int sbx_run_set_workspace(sbx_run *run, const char *host_dir);
/* A volume (the control plane's): the host directory host_dir bound at target inside, read-only
 * unless rw; the native backend only (others refuse the run, naming it). -EINVAL for a target that
 * is not absolute, is /, under /proc, /dev or /sys, or has a .. (or more than 16 volumes). */
SBX_PUBLIC int sbx_run_add_volume(sbx_run *run, const char *host_dir, const char *target, bool rw);
SBX_PUBLIC int sbx_run_set_cwd(sbx_run *run, const char *dir);
/* "NAME=VALUE", added after the profile's env. */
SBX_PUBLIC int sbx_run_add_env(sbx_run *run, const char *name_value);
/* A per-request limit override ("timeout_s", "memory_mb", ...): refused at execute time with a
 * message naming the policy key unless the policy file allows it. */
SBX_PUBLIC int sbx_run_set_limit(sbx_run *run, const char *key, double value);
/* The command (argv[0] is looked up in the sandbox's PATH). Copied. */
SBX_PUBLIC int sbx_run_set_command(sbx_run *run, char *const argv[]);
/* Descriptors for the command's stdin, stdout and stderr (default 0, 1, 2). Borrowed. */
SBX_PUBLIC int sbx_run_set_stdio(sbx_run *run, int in_fd, int out_fd, int err_fd);
/* Give the command a pseudo-terminal of its own (its 0, 1, 2 and controlling terminal), relayed
 * to the stdio descriptors; the caller's terminal is put in raw mode meanwhile. */
SBX_PUBLIC int sbx_run_set_tty(sbx_run *run, bool tty);
/* While executing, SIGINT/SIGTERM/SIGHUP/SIGQUIT to the process cancel the run (default on). */
SBX_PUBLIC int sbx_run_set_handle_signals(sbx_run *run, bool on);
/* Whether starting the sandbox removes the cgroups that killed runs left behind (default on: a
 * scan of the groups' directories, a kill(pid, 0) per group whose owner is in our pid namespace).
 * A caller that holds many sandboxes and removes leftovers itself (`sandboxer serve`, at start,
 * when a supervisor dies, and every minute) turns it off: the scan grows with the sandboxes
 * alive and would be paid by every start. Off, the caller owns the sweep (`sandboxer gc` does it
 * whole, podman's and docker's groups included). */
SBX_PUBLIC int sbx_run_set_sweep_leftovers(sbx_run *run, bool on);

/* A secret the profile names under `secrets` (the control plane resolves them): delivered as the
 * read-only file /run/secrets/NAME on a tmpfs of its own, never in the environment. A profile
 * whose secrets are not all given is refused (setup error). Copied. */
SBX_PUBLIC int sbx_run_add_secret(sbx_run *run, const char *name, const void *value, size_t len);

/* Mark the request as failed before it runs (e.g. a bad command-line argument): execute then
 * produces a setup_error report with this message and returns 125 without running anything. */
SBX_PUBLIC int sbx_run_set_failure(sbx_run *run, const char *message);

/* The run is a signed skill's (its report's `skill`): name, version, the manifest's digest and
 * the signing key's id (NULL: unsigned). */
SBX_PUBLIC int sbx_run_set_skill(
        sbx_run *run, const char *name, const char *version, const char *digest, const char *key_id);

/* Resolve the configuration and print it with the source of each value, and the backend that
 * would run it; runs nothing. Returns 0, or -errno with sbx_run_error() set. */
SBX_PUBLIC int sbx_run_dry_run(sbx_run *run, FILE *f, bool json);

/* Run the command in a fresh sandbox and wait until it and everything it started are gone.
 * Returns the exit status DESIGN.md defines (the command's code, 128+signal, 124 timeout,
 * 125 sandboxer failure, 126 not executable, 127 not found). The report is always produced. */
SBX_PUBLIC int sbx_run_execute(sbx_run *run);

/* The report of the last execute (or of the setup error), JSON, owned by the handle. */
SBX_PUBLIC const char *sbx_run_report_json(sbx_run *run);
/* The last error, a sentence naming what failed and the fix; NULL if none. */
SBX_PUBLIC const char *sbx_run_error(sbx_run *run);

/* ---- persistent sandboxes ----------------------------------------------------------------
 * sbx_run_serve() starts a sandbox from the run's configuration with no command of its own and
 * serves it until it ends: its init forks each exec from inside (same fences, same supervisor
 * code, same report as a run). The calling thread runs the sandbox's loop; once the sandbox is
 * up, hooks->on_ready(sb) is called (from that loop) and any thread may then call
 * sbx_sandbox_exec() until sbx_sandbox_kill() or the end of the sandbox. */
typedef struct sbx_sandbox sbx_sandbox;

typedef struct sbx_serve_hooks {
        void (*on_ready)(sbx_sandbox *sb, void *userdata);
        /* optional: a descriptor the loop also watches; on_extra(userdata) when readable */
        int extra_fd;
        void (*on_extra)(void *userdata);
        void *userdata;
} sbx_serve_hooks;

/* Returns when the sandbox is gone and torn down: 0, or 125 (setup failed; sbx_run_error()).
 * The sandbox's own report (setup, violations outside any exec, end) is sbx_run_report_json(). */
SBX_PUBLIC int sbx_run_serve(sbx_run *run, const sbx_serve_hooks *hooks);

typedef enum sbx_exec_op {
        SBX_EXEC_RUN, /* argv */
        SBX_EXEC_PUT_FILE, /* in_fd → the file argv[0] inside (created or truncated), by the sandbox */
        SBX_EXEC_GET_FILE, /* the regular file argv[0] inside → out_fd, read by the sandbox */
        /* a TCP connection to 127.0.0.1:argv[0] made by the sandbox, in its own network: the
         * connected socket arrives on in_fd (a unix socket, SCM_RIGHTS); a refusal is the exit
         * status with -errno (ECONNREFUSED: nothing listens there) */
        SBX_EXEC_CONNECT,
} sbx_exec_op;

#define SBX_TTY_MAX 4096 /* a terminal's largest cols and rows */
typedef struct sbx_exec_request {
        sbx_exec_op op;
        char *const *argv;
        char *const *env; /* NAME=VALUE, over the sandbox's environment; may be NULL */
        const char *cwd; /* NULL: the sandbox's default (workspace, else scratch) */
        double timeout_s; /* 0: the profile's; never more than it nor the budget left */
        int in_fd, out_fd, err_fd; /* borrowed; -1: /dev/null (in), dropped (out, err) */
        uint64_t output_cap; /* bytes of stdout+stderr; 0: the profile's output_mb */
        const char *id; /* optional: names the exec for sbx_sandbox_signal_exec() */
        /* Both > 0: the command runs on a PTY of the sandbox's own /dev/pts (cols × rows); in_fd
         * must then be a unix socket: the PTY's master arrives on it (SCM_RIGHTS) once the
         * command is about to start, and out_fd/err_fd see nothing. */
        unsigned tty_cols, tty_rows; /* each at most SBX_TTY_MAX */
        /* Long-lived (a PTY, a session's shell, a server): no per-exec timeout unless timeout_s
         * asks one, its time not counted in budget_s; bounded by the sandbox's life. Refused
         * (-EPERM) unless the profile's process.long_lived allows it. */
        bool long_lived;
} sbx_exec_request;

/* Run one exec and wait for it (and what it started) to end. Returns its exit status as
 * sbx_run_execute() does (124 timeout, 126/127, 128+N), with its report (JSON on one line, caller frees) in
 * *ret_report; or -ESRCH when the sandbox is gone, -EDQUOT when its budget_s is spent, -EINVAL
 * for a bad request, -errno otherwise, with a sentence in *ret_error (caller frees). */
SBX_PUBLIC int sbx_sandbox_exec(
        sbx_sandbox *sb, const sbx_exec_request *req, char **ret_report, char **ret_error);
/* Send sig to the running exec named id: its runner forwards it to the command's process group;
 * SIGKILL ends the exec's whole tree. 0, or -ESRCH when no exec of that id runs. */
SBX_PUBLIC int sbx_sandbox_signal_exec(sbx_sandbox *sb, const char *id, int sig);
/* Replace the sandbox's egress rules while it runs (allow: network.egress, deny:
 * network.egress_deny; NULL: none): connections made from now on are judged by them. 0, or
 * -ENOTCONN when the sandbox has no egress proxy (it was made without egress rules), -EPERM for an
 * allow rule outside the policy's network.egress_allowed, -EINVAL for a rule that does not parse;
 * with a sentence in *ret_error (caller frees). */
SBX_PUBLIC int sbx_sandbox_set_egress(
        sbx_sandbox *sb, char *const *allow, char *const *deny, char **ret_error);
/* Pause (frozen true) or resume the sandbox: every process in it is frozen by its cgroup (v2
 * cgroup.freeze, else the v1 freezer) and keeps its memory and descriptors; the timeouts of execs
 * running are held, and time frozen is not charged to budget_s; no exec starts while paused
 * (-EBUSY). As asked already: 0. -EOPNOTSUPP when the sandbox cannot freeze here (no cgroup of
 * its own, the microvm backend), -EBUSY while an exec is starting, -ESRCH when it is not running;
 * with a sentence in *ret_error (caller frees). */
SBX_PUBLIC int sbx_sandbox_freeze(sbx_sandbox *sb, bool frozen, char **ret_error);
SBX_PUBLIC bool sbx_sandbox_frozen(sbx_sandbox *sb);
/* Keep the sandbox object (not the sandbox) alive past sbx_run_serve()'s return, for threads
 * that may still call these functions on it (they then answer as for a sandbox that is gone);
 * each sbx_sandbox_ref() is given back with one sbx_sandbox_unref(). */
SBX_PUBLIC sbx_sandbox *sbx_sandbox_ref(sbx_sandbox *sb);
SBX_PUBLIC void sbx_sandbox_unref(sbx_sandbox *sb);
/* End the sandbox (any thread): every process in it is killed; sbx_run_serve() then returns. */
SBX_PUBLIC void sbx_sandbox_kill(sbx_sandbox *sb);
/* What the sandbox uses now (its cgroup, its scratch): -1 where the host does not tell. */
typedef struct sbx_sandbox_usage {
        double cpu_s; /* CPU time of everything that ran in it */
        double cpus; /* its limit (cpus) */
        int64_t memory_bytes, memory_limit_bytes;
        int64_t pids;
        int64_t disk_used_bytes, disk_total_bytes; /* its scratch */
} sbx_sandbox_usage;
SBX_PUBLIC int sbx_sandbox_usage_read(sbx_sandbox *sb, sbx_sandbox_usage *ret);
/* The init's pid (as the caller sees it), execs running, seconds of budget used so far. */
SBX_PUBLIC int sbx_sandbox_init_pid(sbx_sandbox *sb);
SBX_PUBLIC unsigned sbx_sandbox_execs_running(sbx_sandbox *sb);
/* Where the sandbox's scratch is, as it sees it (its TMPDIR), and the backend running it. */
SBX_PUBLIC const char *sbx_sandbox_scratch(sbx_sandbox *sb);
/* Its home as the commands see it (the profile's filesystem.home), or NULL without one. */
SBX_PUBLIC const char *sbx_sandbox_home(sbx_sandbox *sb);
SBX_PUBLIC const char *sbx_sandbox_backend(sbx_sandbox *sb);
/* Whether its execs may be long-lived (the profile's process.long_lived and the policy file's
 * process.long_lived_allowed). */
SBX_PUBLIC bool sbx_sandbox_long_lived_allowed(sbx_sandbox *sb);
SBX_PUBLIC double sbx_sandbox_budget_used(sbx_sandbox *sb);
/* Count budget already used (e.g. recorded by an earlier supervisor of the same sandbox). */
SBX_PUBLIC void sbx_sandbox_add_budget_used(sbx_sandbox *sb, double seconds);

SBX_PUBLIC const char *sbx_version(void);
/* False in a build for a platform without Linux sandboxing: there `sbx_run_execute` refuses to
 * run anything unless SANDBOXER_ALLOW_UNSANDBOXED=1 is set, and then runs it without a sandbox. */
SBX_PUBLIC bool sbx_platform_sandboxes(void);

#ifdef __cplusplus
}
#endif
#endif
