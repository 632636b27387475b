/* none.c — no sandbox: what a platform without Linux namespaces, Landlock and seccomp gets, and
 * only when asked for by SANDBOXER_ALLOW_UNSANDBOXED=1. Plain POSIX: fork, exec, a timeout by
 * polling, the exit status. Every limit but the timeout is reported as enforced by nothing. */
#include "backend/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/time-util.h"

int sbx_backend_none_run(
        const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        rep->backend = "none";
        rep->isolation = "none";
        for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                rep->limit_mechanism[l] = SBX_MECH_NONE;
        rep->limit_mechanism[SBX_LIMIT_TIMEOUT_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_BUDGET_S] = SBX_MECH_SUPERVISOR;
        (void) sbx_report_set_fence(
                rep, "none", "SANDBOXER_ALLOW_UNSANDBOXED=1: the command ran without a sandbox");

        int ep[2];
        if (pipe(ep) < 0)
                return sbx_error_set(e, errno, "none", "pipe: %s", strerror(errno));
        (void) fcntl(ep[0], F_SETFD, FD_CLOEXEC);
        (void) fcntl(ep[1], F_SETFD, FD_CLOEXEC);
        uint64_t t0 = sbx_now_ns();
        pid_t pid = fork();
        if (pid < 0) {
                int err = errno;
                close(ep[0]), close(ep[1]);
                return sbx_error_set(e, err, "none", "fork: %s", strerror(err));
        }
        if (pid == 0) {
                if ((io->in_fd != 0 && dup2(io->in_fd, 0) < 0) ||
                        (io->out_fd != 1 && dup2(io->out_fd, 1) < 0) ||
                        (io->err_fd != 2 && dup2(io->err_fd, 2) < 0))
                        _exit(125);
                (void) setsid();
                execvp(argv[0], argv);
                int err = errno;
                if (write(ep[1], &err, sizeof err) < 0)
                        _exit(126);
                _exit(127);
        }
        close(ep[1]);
        int err = 0;
        bool exec_failed = read(ep[0], &err, sizeof err) == (ssize_t) sizeof err;
        close(ep[0]);

        double timeout = cfg->limits.value[SBX_LIMIT_TIMEOUT_S],
               budget = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        double limit = budget > 0 && budget < timeout ? budget : timeout;
        bool timed_out = false;
        int st = 0;
        for (;;) {
                pid_t w = waitpid(pid, &st, WNOHANG);
                if (w == pid)
                        break;
                if (w < 0 && errno != EINTR)
                        return sbx_error_set(e, errno, "none", "waitpid: %s", strerror(errno));
                if (!timed_out && limit > 0 && (double) (sbx_now_ns() - t0) / 1e9 >= limit) {
                        timed_out = true;
                        (void) kill(-pid, SIGKILL);
                        (void) kill(pid, SIGKILL);
                }
                struct timespec ts = {0, 2000000}; /* 2 ms */
                nanosleep(&ts, NULL);
        }
        rep->wall_ms = (int64_t) ((sbx_now_ns() - t0) / 1000000);
        if (exec_failed) {
                rep->status = SBX_STATUS_EXITED;
                rep->has_exit_code = true;
                rep->exit_code = rep->cli_exit = (err == ENOENT || err == ENOTDIR) ? 127 : 126;
                (void) sbx_report_set_error(rep, "%s: %s: %s",
                        rep->exit_code == 127 ? "command not found" : "command not executable", argv[0],
                        strerror(err));
        } else if (WIFSIGNALED(st)) {
                rep->status = SBX_STATUS_SIGNALED;
                rep->exit_signal = WTERMSIG(st);
                rep->cli_exit = 128 + WTERMSIG(st);
        } else {
                rep->status = SBX_STATUS_EXITED;
                rep->has_exit_code = true;
                rep->exit_code = rep->cli_exit = WEXITSTATUS(st);
        }
        if (timed_out) {
                rep->status = SBX_STATUS_TIMEOUT;
                rep->has_exit_code = false;
                rep->killed_by_sandbox = true;
                rep->cli_exit = 124;
        }
        return 0;
}
