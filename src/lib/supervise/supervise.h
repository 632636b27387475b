/* supervise.h — the supervisor's event loop for one sandbox: waits on the init's pidfd, the
 * init's status socket, the command's output pipes, a timerfd and a signalfd; enforces the
 * timeout and the output cap; forwards cancellation signals with a grace period. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "basic/error.h"
#include "isolate/seccomp.h"
#include "report/report.h"

struct sbx_egress_run;
struct sbx_egress_refusal;

/* A persistent sandbox: the sandbox-wide loop (its init) routes each notification to the exec
 * the calling process belongs to. Called from the loop's thread; the callee locks. */
typedef struct sbx_notify_route {
        /* the first execve of an exec (pid is the exec's own process, which becomes the
         * command): let through once */
        bool (*exec_first)(void *userdata, pid_t pid);
        /* record a violation in the report of the exec pid belongs to (or the sandbox's) */
        void (*record)(void *userdata, pid_t pid, sbx_violation_kind kind, const char *action,
                const char *syscall, const sbx_detail *d, size_t n);
        /* a notification of pid waits (in the loop, its caller stopped in its system call):
         * pid is of no exec known yet while one is starting — its process runs before we know
         * its pid, and its first execve or violation is that exec's. Asked again when hold_fd
         * (an eventfd; drained here) is readable; NULL/-1: nothing waits. */
        bool (*hold)(void *userdata, pid_t pid);
        int hold_fd;
        /* the egress proxy's connections (egress-run.h: sbx_egress_owner_fn, sbx_egress_sink_fn):
         * the exec a connecting process belongs to, and each connection's end — from the proxy's
         * threads */
        uint64_t (*conn_owner)(void *userdata, int pid);
        void (*conn_end)(void *userdata, uint64_t owner, const sbx_report_conn *allowed,
                const struct sbx_egress_refusal *refused, const sbx_report_request *request);
        void *userdata;
} sbx_notify_route;

typedef struct sbx_supervise_params {
        pid_t pid;
        int pidfd;
        int status_fd; /* our end of the init's status socket */
        int out_fd, err_fd; /* read ends of the command's stdout/stderr pipes, or -1 */
        int fwd_out, fwd_err; /* where their bytes go (the caller's 1 and 2), or -1 to drop */
        /* --tty: out_fd is the pty master; what arrives on tty_in (the caller's stdin) is written
         * to it, and SIGWINCH copies the caller's window size to it. -1 otherwise. */
        int tty_master, tty_in;
        uint64_t output_cap; /* bytes of stdout+stderr allowed; 0 = unlimited */
        uint64_t start_ns; /* CLOCK_MONOTONIC the deadline counts from */
        double timeout_s; /* 0 = none */
        /* Optional: the caller's timerfd (CLOCK_MONOTONIC, not closed here) for the timeout and
         * the grace, so that it can hold the clock while the sandbox is frozen (persist.c) */
        const int *timer_fd;
        /* > 0: the command's own limit, from its start (SBX_INIT_MSG_STARTED), within timeout_s
         * (then the whole run's): a sandbox whose set-up takes seconds (a microVM's boot) */
        double command_timeout_s;
        double grace_s; /* after a forwarded cancellation signal, before SIGKILL */
        bool handle_signals; /* SIGINT/SIGTERM/SIGHUP/SIGQUIT cancel the run */
        /* Optional: kill the whole sandbox (e.g. cgroup kill); default SIGKILL to the init. */
        int (*kill_all)(void *userdata);
        void *userdata;
        /* Optional, once: the sandbox is about to end — its command ended (the init said so) or
         * we are about to kill it — while what an engine made below our groups is still there
         * (userdata as kill_all's). */
        void (*on_end)(void *userdata);
        /* Optional: an fd that becomes readable when memory was exhausted (cgroup OOM). */
        int oom_fd;
        /* The seccomp options the init's filter was built with: a listener arrives from the init
         * (SBX_INIT_MSG_LISTENER) and each notification is classified against the same rule
         * table, recorded in `report` as a violation with its evidence, and answered: the
         * rule's errno, or the end of the sandbox (kill_on_violation). Spawning is decided by
         * who asks (the init's own fork continues) and exec by count (the command's first
         * continues): never on the contents of the caller's memory. NULL: no listener expected. */
        const sbx_seccomp_opts *seccomp;
        sbx_report *report;
        /* For observed calls (observe_network / observe_fs_writes): where writes may go (paths as
         * the sandbox sees them; a write elsewhere is refused with EACCES and recorded), and
         * whether loopback addresses are the sandbox's own. */
        char *const *writable;
        bool loopback;
        /* process.commands: execs seen (observe_exec) are checked against these (a name matches
         * the path's basename, a path the path); outside them: refused (strict) or recorded
         * as "warned" and let through (warn). */
        char *const *cmd_allow, *const *cmd_deny;
        bool cmd_strict;
        bool kill_on_violation; /* a refused call ends the sandbox (on_violation: kill) */
        /* No pid namespace: the caller made itself a child subreaper before the spawn; once the
         * init is gone, what is left of the sandbox was re-parented to us and is killed. */
        bool reap_orphans;
        /* pid is not our child (an exec's process inside a persistent sandbox): the sandbox's init
         * reaps it and reports its end and usage on the status socket, so its end is that
         * socket's close (not its pidfd, which is for signals: they go to its process group
         * too), and it is not waited for. */
        bool not_child;
        const sbx_notify_route *route;
        /* The init reported SBX_INIT_MSG_SERVING (persistent): called once, in the loop. */
        void (*on_serving)(void *userdata, const char *observation);
        /* A socket on the audit log (sbx_audit_open(), the caller's) when the init logs the
         * sandbox's Landlock denials (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON): each one of the
         * sandbox's domain is recorded — writes as FilesystemWriteViolation, TCP as
         * NetworkAccessViolation — with the path (or address) the kernel resolved. After the
         * init is gone the kernel's backlog is drained. 0 or -1: none. */
        int audit_fd;
        /* The egress proxy (network.egress), or NULL: the listening socket arrives on the status
         * socket (SBX_INIT_MSG_EGRESS) and is served from then on; each refusal is recorded as a
         * NetworkAccessViolation when it happens (and ends the sandbox under kill_on_violation).
         * Stopped and reported by the caller. */
        struct sbx_egress_run *egress;
        /* Another descriptor to watch: on_extra(extra_userdata) when it is readable. */
        int extra_fd;
        void (*on_extra)(void *userdata);
        void *extra_userdata;
} sbx_supervise_params;

/* Seconds left for a command that starts at now_ns: command_timeout_s, within what timeout_s
 * leaves of the whole run. */
static inline double sbx_supervise_command_deadline(const sbx_supervise_params *p, uint64_t now_ns) {
        double left = p->timeout_s - (double) (now_ns - p->start_ns) / 1e9;
        return p->timeout_s > 0 && left < p->command_timeout_s ? left : p->command_timeout_s;
}

typedef enum sbx_sv_end {
        SBX_SV_EXITED, /* the command exited; code */
        SBX_SV_SIGNALED, /* the command died by a signal */
        SBX_SV_EXEC_FAILED, /* the command could not be executed: exec_errno, code 126/127 */
        SBX_SV_SETUP_FAILED, /* the init reported a set-up failure, or died without a word */
} sbx_sv_end;

typedef struct sbx_supervise_result {
        sbx_sv_end end;
        int code; /* exit code (EXITED, EXEC_FAILED) */
        int signal; /* SIGNALED */
        int exec_errno;
        char text[64]; /* init's text: the command name or the failed step */
        bool timed_out;
        bool output_limited;
        bool oom;
        int cancel_signal; /* 0 = not cancelled */
        bool killed; /* the supervisor killed the sandbox */
        uint64_t stdout_bytes, stderr_bytes;
        uint64_t started_ns, ended_ns, reaped_ns; /* CLOCK_MONOTONIC */
        struct rusage rusage; /* of the init and everything it reaped */
        int64_t timeout_at_ms;
        bool listener; /* a seccomp listener was received and served */
        bool observation_unavailable; /* the init could not install a listener (nested) */
        uint64_t notifications; /* answered */
        bool violation_killed; /* the sandbox was ended for a refused call */
        bool audit_lost; /* the audit socket overflowed: some denial records were not read */
        bool audit_off; /* the host's audit was found disabled at the end of the run */
} sbx_supervise_result;

/* Run the loop until the init is gone and reaped. Takes ownership of out_fd, err_fd and
 * status_fd (closed on return); the pidfd stays the caller's. */
int sbx_supervise(const sbx_supervise_params *p, sbx_supervise_result *ret, sbx_error *e);
