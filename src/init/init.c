/* init.c — PID 1 of a sandbox: starts the command, forwards signals to it, reaps everything,
 * and when the command ends kills what it left behind at once and reports to the supervisor.
 * Static and small; it runs with the sandbox's environment and no capabilities.
 *
 * usage: sandboxer-init [--cwd DIR] [--tty] [--seccomp-fd N [--seccomp-listener]] [--landlock-fd N]
 *                       -- COMMAND [ARG]...
 * fd 3: SOCK_SEQPACKET to the supervisor (see protocol.h). The seccomp program (raw BPF) and the
 * Landlock ruleset were prepared by the supervisor; the init enforces both on the command only,
 * in the forked child, right before execve. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void send_msg(uint32_t type, int32_t a, int32_t b, const char *text) {
        struct sbx_init_msg m = { .magic = SBX_INIT_MAGIC, .type = type, .a = a, .b = b, .monotonic_ns = now_ns() };
        if (text)
                strncpy(m.text, text, sizeof m.text - 1);
        (void) send(SBX_INIT_STATUS_FD, &m, sizeof m, MSG_NOSIGNAL);
}

/* The PATH search is ours, without execve: with process.allow_spawn: false exactly one execve
 * is let through, so trying candidates one by one would spend it on the first miss. And
 * execvpe would run ENOEXEC files through /bin/sh, where a command that is not an executable
 * must be reported as 126. Returns the errno of the one execve (or of the search). */
static int exec_command(char **argv, char **envp) {
        const char *cmd = argv[0];
        if (strchr(cmd, '/')) {
                execve(cmd, argv, envp);
                return errno;
        }
        const char *path = getenv("PATH");
        if (!path || !*path)
                path = "/usr/local/bin:/usr/bin:/bin";
        int saved = ENOENT;
        size_t cl = strlen(cmd);
        static char found[PATH_MAX];
        found[0] = 0;
        for (const char *p = path;;) {
                const char *colon = strchrnul(p, ':');
                size_t dl = (size_t) (colon - p);
                char buf[PATH_MAX];
                if (dl + 1 + cl + 1 <= sizeof buf) {
                        if (dl == 0)
                                buf[0] = '.', dl = 1;
                        else
                                memcpy(buf, p, dl);
                        buf[dl] = '/';
                        memcpy(buf + dl + 1, cmd, cl + 1);
                        struct stat st;
                        if (stat(buf, &st) == 0) {
                                if (S_ISREG(st.st_mode) && faccessat(AT_FDCWD, buf, X_OK, AT_EACCESS) == 0) {
                                        memcpy(found, buf, strlen(buf) + 1);
                                        break;
                                }
                                saved = EACCES; /* there, but not executable: remember, keep looking */
                        } else if (errno != ENOENT && errno != ENOTDIR)
                                saved = errno;
                }
                if (!*colon)
                        break;
                p = colon + 1;
        }
        if (!found[0])
                return saved;
        execve(found, argv, envp);
        return errno;
}

/* As PID 1 of a pid namespace, kill(-1) reaches exactly the sandbox. Without one (the landlock
 * backend) we are a child subreaper instead: every orphan of the command is re-parented to us,
 * so killing our children until none is left ends the whole tree — and never touches anything
 * else the same uid runs on the host. */
static bool pid_ns_init;

static void kill_children_once(void) {
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int) getpid());
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return;
        buf[n] = 0;
        for (char *p = buf; *p;) {
                char *end;
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 0)
                        (void) kill((pid_t) pid, SIGKILL);
                p = end;
                while (*p == ' ' || *p == '\n')
                        p++;
        }
}

static void kill_leftovers(void) {
        if (pid_ns_init) {
                (void) kill(-1, SIGKILL);
                return;
        }
        /* Kill, reap, repeat: grandchildren are re-parented to us as their parents die. */
        for (int round = 0; round < 10000; round++) {
                kill_children_once();
                int st;
                pid_t p = waitpid(-1, &st, 0);
                if (p < 0 && errno == ECHILD)
                        return;
        }
}

#define MAX_BPF_INSNS 4096
static struct sock_filter bpf[MAX_BPF_INSNS];

/* Read the whole BPF program from fd; returns the instruction count, or -errno. */
static int read_bpf(int fd) {
        size_t got = 0;
        for (;;) {
                ssize_t n = read(fd, (char *) bpf + got, sizeof bpf - got);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                got += (size_t) n;
                if (got == sizeof bpf)
                        return -E2BIG;
        }
        if (got == 0 || got % sizeof(struct sock_filter))
                return -EINVAL;
        close(fd);
        return (int) (got / sizeof(struct sock_filter));
}

/* The listener goes to the supervisor over the status socket, before the exec it must answer. */
static int send_listener(int fd) {
        struct sbx_init_msg m = { .magic = SBX_INIT_MAGIC, .type = SBX_INIT_MSG_LISTENER, .a = fd, .monotonic_ns = now_ns() };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } cbuf;
        memset(&cbuf, 0, sizeof cbuf);
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof m };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf, .msg_controllen = sizeof cbuf.buf };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        return sendmsg(SBX_INIT_STATUS_FD, &mh, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

static int parse_fd(const char *s) {
        char *end;
        long v = strtol(s, &end, 10);
        return (*s && !*end && v >= 0 && v < 1024) ? (int) v : -1;
}

int main(int argc, char **argv) {
        extern char **environ;
        const char *cwd = NULL;
        bool tty = false, listener = false;
        int seccomp_fd = -1, landlock_fd = -1, n_bpf = 0;
        int i = 1;

        for (; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0) {
                        i++;
                        break;
                } else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc)
                        cwd = argv[++i];
                else if (strcmp(argv[i], "--tty") == 0)
                        tty = true;
                else if (strcmp(argv[i], "--seccomp-fd") == 0 && i + 1 < argc)
                        seccomp_fd = parse_fd(argv[++i]);
                else if (strcmp(argv[i], "--seccomp-listener") == 0)
                        listener = true;
                else if (strcmp(argv[i], "--landlock-fd") == 0 && i + 1 < argc)
                        landlock_fd = parse_fd(argv[++i]);
                else
                        return 125;
        }
        if (i >= argc)
                return 125;

        pid_ns_init = getpid() == 1;
        if (!pid_ns_init && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: prctl(PR_SET_CHILD_SUBREAPER)");
                return 125;
        }
        /* If the supervisor dies, the sandbox dies (it also arms this before exec'ing us). */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);

        sigset_t all, fwd;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        sigemptyset(&fwd);
        int fwd_sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM };
        for (size_t k = 0; k < sizeof fwd_sigs / sizeof fwd_sigs[0]; k++)
                sigaddset(&fwd, fwd_sigs[k]);

        if (seccomp_fd >= 0) {
                n_bpf = read_bpf(seccomp_fd);
                if (n_bpf < 0) {
                        send_msg(SBX_INIT_MSG_SETUP_FAILED, -n_bpf, 0, "init: read the seccomp program");
                        return 125;
                }
        }

        /* The init enters the command's Landlock domain itself: one domain for the whole sandbox,
         * so the command may still read its init's /proc entries (Landlock forbids inspecting
         * processes outside one's domain) and signals stay within it. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: prctl(PR_SET_NO_NEW_PRIVS)");
                return 125;
        }
        if (landlock_fd >= 0) {
                if (syscall(SYS_landlock_restrict_self, landlock_fd, 0) < 0) {
                        send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: enforce the Landlock ruleset");
                        return 125;
                }
                close(landlock_fd);
        }

        int ep[2];
        if (pipe2(ep, O_CLOEXEC) < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: pipe");
                return 125;
        }

        pid_t child = fork();
        if (child < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: fork");
                return 125;
        }
        if (child == 0) {
                struct sigaction sa = { .sa_handler = SIG_DFL };
                for (int s = 1; s < NSIG; s++)
                        (void) sigaction(s, &sa, NULL);
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                (void) setsid();
                if (tty)
                        (void) ioctl(0, TIOCSCTTY, 0);
                int32_t m[2] = { 0, 0 };
                if (cwd && chdir(cwd) < 0) {
                        m[0] = errno;
                        m[1] = 1;
                } else {
                        /* Nothing of ours reaches the command: only 0, 1, 2 and the exec pipe,
                         * which is close-on-exec. The status socket (3) stays until the seccomp
                         * listener, if any, has been handed to the supervisor. */
                        int keep = ep[1];
                        if (keep > 4)
                                (void) syscall(SYS_close_range, 4, keep - 1, 0);
                        (void) syscall(SYS_close_range, keep + 1, ~0U, 0);
                        /* Last: the filter also covers what is left of this child's own work. */
                        struct sock_fprog prog = { .len = (unsigned short) n_bpf, .filter = bpf };
                        long lfd = 0;
                        if (n_bpf > 0 && listener) {
                                /* WAIT_KILLABLE_RECV (5.19+): a received notification — the first
                                 * exec — is not withdrawn and re-sent by an ordinary signal. */
                                lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                              SECCOMP_FILTER_FLAG_NEW_LISTENER | (1UL << 5), &prog);
                                if (lfd < 0 && errno == EINVAL)
                                        lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                                      SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
                        } else if (n_bpf > 0)
                                lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
                        if (lfd < 0) {
                                m[0] = errno;
                                m[1] = 4;
                        } else if (listener && send_listener((int) lfd) < 0) {
                                m[0] = errno;
                                m[1] = 5;
                        } else {
                                if (listener)
                                        close((int) lfd);
                                close(SBX_INIT_STATUS_FD);
                                m[0] = exec_command(argv + i, environ);
                        }
                }
                if (write(ep[1], m, sizeof m) != (ssize_t) sizeof m)
                        _exit(126);
                _exit(127);
        }
        close(ep[1]);
        int32_t msg[2];
        ssize_t n;
        do
                n = read(ep[0], msg, sizeof msg);
        while (n < 0 && errno == EINTR);
        close(ep[0]);

        bool exec_failed = n == (ssize_t) sizeof msg;
        static const char *const steps[] = { NULL, "chdir to the working directory", "prctl(PR_SET_NO_NEW_PRIVS)",
                                             "enforce the Landlock ruleset", "load the seccomp filter",
                                             "hand the seccomp listener to the supervisor" };
        if (exec_failed && msg[1] >= 1 && msg[1] <= 5)
                send_msg(SBX_INIT_MSG_SETUP_FAILED, msg[0], 0, steps[msg[1]]);
        else if (exec_failed) {
                int e = msg[0];
                int code = (e == ENOENT || e == ENOTDIR) ? 127 : 126;
                send_msg(SBX_INIT_MSG_EXEC_FAILED, e, code, argv[i]);
        } else
                send_msg(SBX_INIT_MSG_STARTED, child, 0, NULL);

        for (;;) {
                siginfo_t si;
                int s = sigwaitinfo(&fwd, &si);
                if (s < 0)
                        continue;
                if (s != SIGCHLD) {
                        /* Forward to the command's process group (it is a session leader). */
                        if (kill(-child, s) < 0)
                                (void) kill(child, s);
                        continue;
                }
                for (;;) {
                        int st;
                        pid_t p = waitpid(-1, &st, WNOHANG);
                        if (p <= 0)
                                break;
                        if (p != child)
                                continue;
                        /* The command ended: what it left behind dies now, not later. */
                        kill_leftovers();
                        if (!exec_failed) {
                                if (WIFSIGNALED(st))
                                        send_msg(SBX_INIT_MSG_SIGNALED, WTERMSIG(st), 0, NULL);
                                else
                                        send_msg(SBX_INIT_MSG_EXITED, WEXITSTATUS(st), 0, NULL);
                        }
                        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
                                ;
                        return 0;
                }
        }
}
