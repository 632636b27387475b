/* init.c — PID 1 of a sandbox: starts the command, forwards signals to it, reaps everything,
 * and when the command ends kills what it left behind at once and reports to the supervisor.
 * Static and small; it runs with the sandbox's environment and no capabilities.
 *
 * usage: sandboxer-init [--cwd DIR] [--tty] [--seccomp-fd N] [--landlock-fd N] [--landlock-log]
 *                       [--host-ns TYPE:INODE,...] [--egress-ports PORT[,PORT]...]
 *                       -- COMMAND [ARG]...
 *        sandboxer-init [...] --serve --        a persistent sandbox: commands come as requests
 *                                               (protocol.h), each one process it forks
 * fd 3: SOCK_SEQPACKET to the supervisor (see protocol.h). The seccomp program (raw BPF) and the
 * Landlock ruleset were prepared by the supervisor; the init enforces both on itself before it
 * forks the command, so the whole sandbox is one Landlock domain under one filter, whose
 * notification listener goes to the supervisor (fd 3, SCM_RIGHTS). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

int sbx_guest_main(void); /* guest.c */

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Landlock ABI 6: a ruleset that only scopes signals (struct landlock_ruleset_attr's layout). */
struct sbx_ll_scope_attr {
        uint64_t handled_access_fs, handled_access_net, scoped;
};
#define SBX_LL_SCOPE_SIGNAL (1ULL << 1)
#define SBX_LL_CREATE_RULESET_VERSION (1U << 0)
#ifndef LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1) /* Landlock ABI 7 */
#endif

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void send_msg(uint32_t type, int32_t a, int32_t b, const char *text) {
        struct sbx_init_msg m = {
                .magic = SBX_INIT_MAGIC, .type = type, .a = a, .b = b, .monotonic_ns = now_ns()};
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
static sigset_t fwd; /* what the init takes with sigwaitinfo: SIGCHLD and what it forwards */
/* Without a pid namespace of our own (the landlock backend), the supervisor's death must still
 * end the command's whole tree: the kernel kills only us (PR_SET_PDEATHSIG), and what we started
 * would be re-parented to the host and live on. So our death signal is one we catch, and the
 * answer is kill_leftovers() — every descendant comes back to us as a subreaper. (A command that
 * sends it to us ends its own sandbox, nothing more.) */
static int deathsig = SIGKILL;
/* The supervisor's end of fd 3 closing (it died, whatever killed it) raises this (O_ASYNC): a
 * second way to learn of its death that needs no parent-child link — under firejail, a set-uid
 * program whose exec clears PR_SET_PDEATHSIG, and in containers, the supervisor is no parent of
 * ours. 0 when not armed. */
static int hupsig;

static bool supervisor_gone(void) {
        struct pollfd p = {.fd = SBX_INIT_STATUS_FD, .events = 0};
        return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}

static bool spared(pid_t p);

/* Our /proc/self/task/PID/children, opened before the sandbox's Landlock domain is entered: a
 * profile that does not list /proc cannot read it afterwards (the landlock backend), and the
 * list is read again from its start each time (a seq_file). -1 when it could not be opened. */
static int children_fd = -1;

static void open_children(void) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int) getpid());
        children_fd = open(path, O_RDONLY | O_CLOEXEC);
}

/* Our children, from our children file: up to max into out; how many. */
static size_t read_children(pid_t *out, size_t max) {
        char buf[16384];
        size_t k = 0;
        if (children_fd < 0)
                return 0;
        ssize_t n = pread(children_fd, buf, sizeof buf - 1, 0);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        for (char *p = buf; *p && k < max;) {
                char *end;
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 0)
                        out[k++] = (pid_t) pid;
                p = end;
                while (*p == ' ' || *p == '\n')
                        p++;
        }
        return k;
}

/* SIGKILL to each of our children (but, when spare_execs, a persistent sandbox's running execs
 * and what is still in their sessions: spared()). */
static void kill_children(bool spare_execs) {
        pid_t kids[4096];
        size_t n = read_children(kids, ELEMENTSOF(kids));
        for (size_t i = 0; i < n; i++)
                if (!(spare_execs && spared(kids[i])))
                        (void) kill(kids[i], SIGKILL);
}

static void kill_leftovers(void) {
        if (pid_ns_init) {
                (void) kill(-1, SIGKILL);
                return;
        }
        /* Kill, reap, repeat: grandchildren are re-parented to us as their parents die. Until
         * none is left (the pids limit bounds how many there can be; the cap is only against a
         * kernel that never says ECHILD). */
        for (long round = 0; round < 10000000; round++) {
                kill_children(false);
                pid_t p = waitpid(-1, NULL, 0);
                if (p < 0 && errno == ECHILD)
                        return;
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
        }
}

/* Without a pid namespace the command would share its init's Landlock domain and so could signal
 * it — SIGSTOP included, which no death signal then wakes. A nested domain that scopes signals
 * (ABI 6) keeps the command's signals inside itself; the init still reaches it (a domain may
 * signal its nested ones). Only where the init is not pid 1: there the kernel drops what a
 * namespace's processes send their init. */
static bool nest_signal_scope;

static int enter_signal_scope(void) {
        struct sbx_ll_scope_attr a = {.scoped = SBX_LL_SCOPE_SIGNAL};
        int fd = (int) syscall(SYS_landlock_create_ruleset, &a, sizeof a, 0);
        if (fd < 0)
                return -errno;
        int r = syscall(SYS_landlock_restrict_self, fd, 0) < 0 ? -errno : 0;
        close(fd);
        return r;
}

#define MAX_BPF_INSNS 8192
static struct sock_filter bpf[MAX_BPF_INSNS];
static struct sbx_seccomp_blob_header blob;

/* Read the seccomp programs (protocol.h: header, observed, plain) from fd. 0 or -errno. */
static int read_blob(int fd) {
        size_t got = 0, want = sizeof blob;
        char *dst = (char *) &blob;
        for (int part = 0; part < 2; part++) {
                while (got < want) {
                        ssize_t n = read(fd, dst + got, want - got);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return -errno;
                        if (n == 0)
                                return -EINVAL;
                        got += (size_t) n;
                }
                if (part == 0) {
                        if (blob.magic != SBX_SECCOMP_BLOB_MAGIC || blob.n_observed + blob.n_plain == 0 ||
                                blob.n_observed > 0xffff || blob.n_plain > 0xffff ||
                                blob.n_observed + blob.n_plain > MAX_BPF_INSNS)
                                return -EINVAL;
                        dst = (char *) bpf;
                        got = 0;
                        want = (blob.n_observed + blob.n_plain) * sizeof(struct sock_filter);
                }
        }
        close(fd);
        return 0;
}

/* --egress-ports PROXY[,SERVICE...]: a sandbox tool (bubblewrap) made the network namespace, so
 * the spawn could not make the egress proxy's listening sockets in it: the init does, at
 * 127.0.0.1 (the tool brought loopback up), before any fence, and hands each to the supervisor
 * (SBX_INIT_MSG_EGRESS: b 0 the proxy, 2 + i service i), which serves them from outside. No
 * resolver socket: its port 53 needs a capability the init does not have in there. */
static int send_egress_listeners(const char *ports, const char **step) {
        const char *p = ports;
        for (int which = 0; *p; which = which == 0 ? 2 : which + 1) {
                char *end;
                unsigned long port = strtoul(p, &end, 10);
                if (end == p || port == 0 || port > 65535 || (*end && *end != ','))
                        return (*step = "init: bad --egress-ports"), -EINVAL;
                p = *end ? end + 1 : end;
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                struct sockaddr_in a = {.sin_family = AF_INET,
                        .sin_port = htons((uint16_t) port),
                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
                int one = 1, r = 0;
                if (fd < 0)
                        return (*step = "init: egress proxy: socket"), -errno;
                (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
                if (bind(fd, (struct sockaddr *) &a, sizeof a) < 0 || listen(fd, 128) < 0)
                        r = -errno;
                else {
                        struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC,
                                .type = SBX_INIT_MSG_EGRESS,
                                .b = which,
                                .monotonic_ns = now_ns()};
                        r = sbx_send_with_fd(SBX_INIT_STATUS_FD, &m, sizeof m, fd);
                }
                close(fd);
                if (r < 0)
                        return (*step = which == 0 ? "init: egress proxy: listen on 127.0.0.1 in the sandbox"
                                                   : "init: network.services: listen on 127.0.0.1 in the "
                                                     "sandbox"),
                               r;
        }
        return 0;
}

/* Load the filter for the init and everything it starts: the observed program with a
 * listener handed to the supervisor, or — nested under another listener, or with observation
 * off — the plain one. Returns 0 or -errno with *step set. */
static int load_seccomp(const char **step);

/* The listener goes to the supervisor over the status socket, before the exec it must answer. */
static int send_listener(int fd) {
        struct sbx_init_msg m = {
                .magic = SBX_INIT_MAGIC, .type = SBX_INIT_MSG_LISTENER, .a = fd, .monotonic_ns = now_ns()};
        return sbx_send_with_fd(SBX_INIT_STATUS_FD, &m, sizeof m, fd) < 0 ? -1 : 0;
}

static int load_seccomp(const char **step) {
        if (blob.n_observed > 0) {
                struct sock_fprog prog = {.len = (unsigned short) blob.n_observed, .filter = bpf};
                /* WAIT_KILLABLE_RECV (5.19+): a received notification is not withdrawn and
                 * re-sent because of an ordinary signal. */
                long lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                        SECCOMP_FILTER_FLAG_NEW_LISTENER | (1UL << 5), &prog);
                if (lfd < 0 && errno == EINVAL)
                        lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                                &prog);
                if (lfd >= 0) {
                        int r = send_listener((int) lfd);
                        int e = errno;
                        close((int) lfd);
                        if (r < 0) {
                                *step = "init: hand the seccomp listener to the supervisor";
                                return -e;
                        }
                        return 0;
                }
                if (errno != EBUSY || blob.n_plain == 0) {
                        *step = errno == EBUSY
                                        ? "init: install a seccomp listener (already under another one; "
                                          "this profile needs observation)"
                                        : "init: load the seccomp filter";
                        return -errno;
                }
                send_msg(SBX_INIT_MSG_UNOBSERVED, EBUSY, 0, NULL);
        }
        struct sock_fprog plain = {.len = (unsigned short) blob.n_plain, .filter = bpf + blob.n_observed};
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &plain) < 0) {
                *step = "init: load the seccomp filter";
                return -errno;
        }
        return 0;
}

static int parse_fd(const char *s) {
        char *end;
        long v = strtol(s, &end, 10);
        return (*s && !*end && v >= 0 && v < 1024) ? (int) v : -1;
}

/* --host-ns mnt:INODE,pid:INODE,...: the supervisor's own namespaces, which the backend claims
 * this sandbox does not share. A wrapped tool may run the command without making them (firejail
 * does when it believes it already runs in a sandbox: no kernel threads in /proc, say) and say
 * nothing; the command must then never start. Inode numbers of nsfs are the same seen from any
 * namespace. 0 when isolated from each; else the message for the supervisor in `why`. */
static int check_isolation(const char *list, char *why, size_t size) {
        for (const char *p = list; *p;) {
                const char *colon = strchr(p, ':');
                if (!colon || colon == p || colon - p > 8)
                        goto bad;
                char type[9], path[32];
                memcpy(type, p, (size_t) (colon - p));
                type[colon - p] = 0;
                char *end;
                errno = 0;
                unsigned long long ino = strtoull(colon + 1, &end, 10);
                if (errno || end == colon + 1 || (*end && *end != ','))
                        goto bad;
                snprintf(path, sizeof path, "/proc/self/ns/%s", type);
                struct stat st;
                if (stat(path, &st) < 0) {
                        int err = errno;
                        snprintf(why, size, "init: cannot check isolation: %s", path);
                        return -err;
                }
                if ((unsigned long long) st.st_ino == ino) {
                        snprintf(why, size, "init: not isolated: the host's %s namespace", type);
                        return -EPERM;
                }
                p = *end ? end + 1 : end;
        }
        return 0;
bad:
        snprintf(why, size, "init: bad --host-ns");
        return -EINVAL;
}

/* EXITED/SIGNALED with what the command's tree used (all of it reaped by now). */
static void send_end(uint32_t type, int32_t a) {
        struct rusage ru;
        struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC, .type = type, .a = a, .monotonic_ns = now_ns()};
        if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
                m.utime_us = (uint64_t) ru.ru_utime.tv_sec * 1000000u + (uint64_t) ru.ru_utime.tv_usec;
                m.stime_us = (uint64_t) ru.ru_stime.tv_sec * 1000000u + (uint64_t) ru.ru_stime.tv_usec;
                m.maxrss_kb = ru.ru_maxrss;
        }
        (void) send(SBX_INIT_STATUS_FD, &m, sizeof m, MSG_NOSIGNAL);
}

static int run_command(char **argv, const char *cwd);

/* ---- persistent sandboxes (--serve) ------------------------------------------------------- */

/* Each exec is one process we fork: it says hello on its exec socket, waits for the supervisor's
 * go, and becomes the command (execve) — or, for a file request, does the copy itself. It leads
 * a session of its own; what it leaves behind is what is left in that session (orphans come to
 * us: PID 1, or a subreaper), killed when it ends. Its end is ours to report, on our copy of its
 * exec socket, with what wait4() says it used; the exec pipe (close-on-exec) says whether it
 * reported an end of its own first (a failed exec, a set-up failure, a file request's outcome). */
#define MAX_EXECS 1024
typedef struct exec_entry {
        pid_t pid;
        int sock; /* our copy of its exec socket */
        int pipe; /* read end: a byte when it reported its end itself; EOF at its execve */
} exec_entry;
static exec_entry execs[MAX_EXECS];
static size_t n_execs;

static ssize_t exec_index(pid_t p) {
        for (size_t k = 0; k < n_execs; k++)
                if (execs[k].pid == p)
                        return (ssize_t) k;
        return -1;
}

/* A running exec, or a process still in the session of one: its orphans live while it runs. */
static bool spared(pid_t p) {
        if (exec_index(p) >= 0)
                return true;
        pid_t sid = getsid(p);
        return sid > 0 && exec_index(sid) >= 0;
}

/* What is left of session sid once it has come to us (each one's orphans come to us as it dies):
 * killed and reaped, until none is — for at most a second (a process stuck in the kernel is left
 * to the sweep), so that an exec's end means its leftovers are gone. */
static void end_session(pid_t sid) {
        uint64_t until = now_ns() + 1000000000ull;
        while (now_ns() < until) {
                pid_t kids[4096], mine[4096];
                size_t n = read_children(kids, ELEMENTSOF(kids)), m = 0;
                for (size_t i = 0; i < n; i++)
                        if (getsid(kids[i]) == sid && kill(kids[i], SIGKILL) == 0)
                                mine[m++] = kids[i];
                if (m == 0)
                        return;
                for (size_t left = m; left > 0 && now_ns() < until;) {
                        left = 0;
                        for (size_t i = 0; i < m; i++)
                                if (mine[i] > 0 && waitpid(mine[i], NULL, WNOHANG) == 0)
                                        left++;
                                else
                                        mine[i] = 0;
                        if (left > 0)
                                (void) nanosleep(&(struct timespec){.tv_nsec = 200000}, NULL);
                }
        }
}

/* The end of exec k, reaped with st and ru: what is left in its session ended, the end reported
 * unless it reported one itself, its socket closed. */
static void finish_exec(size_t k, int st, const struct rusage *ru) {
        exec_entry *x = &execs[k];
        char b;
        end_session(x->pid);
        if (read(x->pipe, &b, 1) != 1) {
                struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC,
                        .type = WIFSIGNALED(st) ? SBX_INIT_MSG_SIGNALED : SBX_INIT_MSG_EXITED,
                        .a = WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
                        .monotonic_ns = now_ns(),
                        .utime_us =
                                (uint64_t) ru->ru_utime.tv_sec * 1000000u + (uint64_t) ru->ru_utime.tv_usec,
                        .stime_us =
                                (uint64_t) ru->ru_stime.tv_sec * 1000000u + (uint64_t) ru->ru_stime.tv_usec,
                        .maxrss_kb = ru->ru_maxrss};
                (void) send(x->sock, &m, sizeof m, MSG_NOSIGNAL);
        }
        close(x->sock);
        close(x->pipe);
        *x = execs[--n_execs];
}

/* Reap. An exec that ended: its process group is killed while its pid is still a zombie's (it
 * cannot name another group yet), then it is reaped and its end reported. Then every child of
 * ours that is neither a running exec nor in one's session is killed: what an ended exec left
 * behind. Their own orphans follow on the next SIGCHLD, until none is left. */
static void reap_and_sweep(void) {
        for (;;) {
                siginfo_t si = {0};
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid <= 0)
                        break;
                pid_t p = si.si_pid;
                ssize_t k = exec_index(p);
                if (k < 0) {
                        (void) waitpid(p, NULL, 0);
                        continue;
                }
                (void) kill(-p, SIGKILL);
                int st = 0;
                struct rusage ru = {0};
                while (wait4(p, &st, 0, &ru) < 0 && errno == EINTR)
                        ;
                finish_exec((size_t) k, st, &ru);
        }
        kill_children(true);
}

static int copy_fd(int from, int to) {
        char buf[65536];
        for (;;) {
                ssize_t n = read(from, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                for (char *p = buf; n > 0;) {
                        ssize_t k = write(to, p, (size_t) n);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return -errno;
                        p += k;
                        n -= k;
                }
        }
}

/* PUT/GET: the file is opened here, inside the sandbox, with its uid, Landlock domain and
 * view: a path the sandbox could not touch fails as it would for the sandbox. */
static int file_op(uint32_t op, const char *path) {
        int fd, r;
        if (op == SBX_INIT_OP_PUT)
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        else
                fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                send_msg(SBX_INIT_MSG_EXEC_FAILED, e, e == ENOENT || e == ENOTDIR ? 127 : 126, "open");
                return 1;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                send_msg(SBX_INIT_MSG_EXEC_FAILED, EISDIR, 126, "not a regular file");
                return 1;
        }
        r = op == SBX_INIT_OP_PUT ? copy_fd(0, fd) : copy_fd(fd, 1);
        if (r == 0 && op == SBX_INIT_OP_PUT && close(fd) < 0)
                r = -errno;
        if (r < 0) {
                send_msg(SBX_INIT_MSG_EXEC_FAILED, -r, 126, op == SBX_INIT_OP_PUT ? "write" : "read");
                return 1;
        }
        send_end(SBX_INIT_MSG_EXITED, 0);
        return 0;
}

/* Send fd over the unix socket sock (SCM_RIGHTS, one byte of tag with it). 0, or an errno. */
static int send_fd(int sock, int fd, char tag) {
        return -sbx_send_with_fd(sock, &tag, 1, fd);
}

/* A message on fd 3 with one descriptor (SCM_RIGHTS): 0 or an errno. */
static int send_fd_msg(uint32_t type, int32_t a, int fd) {
        struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC, .type = type, .a = a, .monotonic_ns = now_ns()};
        return -sbx_send_with_fd(SBX_INIT_STATUS_FD, &m, sizeof m, fd);
}

/* CONNECT: the socket is made here, inside, so it lives in the sandbox's network namespace and
 * under its fences (a Landlock domain that denies TCP refuses it as it would the sandbox). */
static int connect_op(const char *port_text) {
        char *end;
        long port = strtol(port_text, &end, 10);
        if (*end || port < 1 || port > 65535) {
                send_msg(SBX_INIT_MSG_EXEC_FAILED, EINVAL, 126, "port");
                return 1;
        }
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int r;
        do
                r = s < 0 ? -1 : connect(s, (struct sockaddr *) &sa, sizeof sa);
        while (r < 0 && errno == EINTR);
        if (r < 0) {
                int e = errno;
                send_msg(SBX_INIT_MSG_EXEC_FAILED, e, 126, "connect");
                return 1;
        }
        int e = send_fd(0, s, 'C');
        if (e) {
                send_msg(SBX_INIT_MSG_EXEC_FAILED, e, 126, "hand the connection out");
                return 1;
        }
        send_end(SBX_INIT_MSG_EXITED, 0);
        return 0;
}

static char reqbuf[sizeof(struct sbx_init_req) + SBX_INIT_REQ_MAX + 1];

/* The exec reported its end itself: the init is not to (finish_exec()). */
static void mark_reported(void) {
        if (write(4, "r", 1) < 0) {
                /* the init then reports how the process ended: a second end the supervisor ignores */
        }
}

/* A PTY of the sandbox's own devpts for an exec that asked for one (SBX_INIT_TTY): its master
 * goes out over fd 0 (the requester's unix socket), its slave — opened from the master
 * (TIOCGPTPEER: no path, no race with another pts of the same number) — becomes 0, 1 and 2.
 * Returns 0, or an errno with the step that failed. */
static int open_tty(uint32_t tty, const char **step) {
        struct winsize ws = {
                .ws_row = (unsigned short) (tty & 0xffff), .ws_col = (unsigned short) (tty >> 16)};
        int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (m < 0) {
                *step = "open the sandbox's /dev/ptmx";
                return errno;
        }
        int s = -1;
        if (ioctl(m, TIOCSPTLCK, &(int){0}) < 0 || ioctl(m, TIOCSWINSZ, &ws) < 0 ||
                (s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY)) < 0) {
                int e = errno;
                close(m);
                *step = "set up the pseudo-terminal";
                return e;
        }
        int e = send_fd(0, m, 'T');
        close(m);
        if (e || dup2(s, 0) < 0 || dup2(s, 1) < 0 || dup2(s, 2) < 0) {
                e = e ? e : errno;
                close(s);
                *step = "hand the terminal's master out";
                return e;
        }
        if (s > 2)
                close(s);
        return 0;
}

/* An exec, forked by the init: fd 3 is its exec socket from here on, fd 4 its exec pipe (a byte
 * there: it reported its end itself). Returns only on failure, as the exit status. */
static int exec_child(const struct sbx_init_req *rq, char *strings, int fds[4], int pipe_w) {
        char *p = strings, *end = strings + rq->len;
        const char *cwd = p;
        p += strlen(p) + 1;
        static char *argv[1025], *envp[1025];
        if (rq->n_argv == 0 || rq->n_argv > 1024 || rq->n_env > 1024)
                return 125;
        for (uint32_t k = 0; k < rq->n_argv + rq->n_env; k++) {
                if (p >= end)
                        return 125;
                if (k < rq->n_argv)
                        argv[k] = p;
                else
                        envp[k - rq->n_argv] = p;
                p += strlen(p) + 1;
        }
        argv[rq->n_argv] = NULL;
        envp[rq->n_env] = NULL;
        if (dup2(fds[1], 0) < 0 || dup2(fds[2], 1) < 0 || dup2(fds[3], 2) < 0 ||
                dup2(fds[0], SBX_INIT_STATUS_FD) < 0 || dup2(pipe_w, 4) < 0)
                return 125;
        (void) syscall(SYS_close_range, 5, ~0U, 0);
        /* fd 3 and the pipe stay ours: the command gets neither (close-on-exec) */
        (void) fcntl(SBX_INIT_STATUS_FD, F_SETFD, FD_CLOEXEC);
        (void) fcntl(4, F_SETFD, FD_CLOEXEC);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        (void) setsid(); /* its session: what it leaves behind */
        pid_ns_init = false;
        /* Known to the supervisor before anything is started: its notifications are this
         * exec's, and its first execve the one it may make. With our own pidfd it knows us by
         * that (and holds what it cannot place until it has read this): no round trip. */
        int self = (rq->flags & SBX_INIT_REQ_OWN_PIDFD) ? (int) syscall(SYS_pidfd_open, getpid(), 0) : -1;
        if (self >= 0) {
                int e = send_fd_msg(SBX_INIT_MSG_RUNNER, (int32_t) getpid(), self);
                close(self);
                if (e)
                        return 125;
        } else {
                send_msg(SBX_INIT_MSG_RUNNER, (int32_t) getpid(), 0, NULL);
                struct sbx_init_msg go;
                ssize_t n;
                do
                        n = recv(SBX_INIT_STATUS_FD, &go, sizeof go, 0);
                while (n < 0 && errno == EINTR);
                if (n != (ssize_t) sizeof go || go.magic != SBX_INIT_MAGIC || go.type != SBX_INIT_MSG_GO)
                        return 125;
        }
        if (rq->op == SBX_INIT_OP_PUT || rq->op == SBX_INIT_OP_GET || rq->op == SBX_INIT_OP_CONNECT) {
                int r = rq->op == SBX_INIT_OP_CONNECT ? connect_op(argv[0]) : file_op(rq->op, argv[0]);
                mark_reported();
                return r;
        }
        extern char **environ;
        environ = envp;
        sigset_t none;
        sigemptyset(&none);
        if (rq->tty) {
                const char *step = NULL;
                int e = open_tty(rq->tty, &step);
                if (e) {
                        send_msg(SBX_INIT_MSG_SETUP_FAILED, e, 0, step);
                        mark_reported();
                        return 125;
                }
        }
        if (isatty(0))
                (void) ioctl(0, TIOCSCTTY, 0);
        if (cwd[0] && chdir(cwd) < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "chdir to the working directory");
                mark_reported();
                return 125;
        }
        /* Nothing of ours reaches the command but 0, 1, 2 (3 and 4 close on exec); its signal
         * mask is its own. Started as it execs: a failed execve is reported after. */
        send_msg(SBX_INIT_MSG_STARTED, (int32_t) getpid(), 0, NULL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int e = exec_command(argv, environ);
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        send_msg(SBX_INIT_MSG_EXEC_FAILED, e, (e == ENOENT || e == ENOTDIR) ? 127 : 126, argv[0]);
        mark_reported();
        return (e == ENOENT || e == ENOTDIR) ? 127 : 126;
}

/* An exec's process shares our memory until its exec (CLONE_VM, on a stack of its own): no
 * page tables copied, no copy-on-write faults after on either side (with a copy, the two cost
 * more than the rest of the init's part of an exec). What it writes of ours — the request's
 * arrays, environ, pid_ns_init — is put back after. Only for an exec that does not wait for GO
 * (SBX_INIT_REQ_OWN_PIDFD: its one wait, for the supervisor to take its hello before its first
 * execve goes on, is short). We wait for its exec (the exec pipe's write end, close-on-exec,
 * closes once it no longer uses our memory) or its end, not with CLONE_VFORK: a process of the
 * sandbox could stop it before its exec and so stop us; after 10 s it is killed (SIGKILL
 * reaches a stopped process) and its end reported as usual. */
struct exec_args {
        const struct sbx_init_req *rq;
        char *strings;
        int *fds, pipe_w;
};
static char exec_stack[64 * 1024] __attribute__((aligned(16)));

static int exec_trampoline(void *arg) {
        const struct exec_args *a = arg;
        _exit(exec_child(a->rq, a->strings, a->fds, a->pipe_w));
}

static pid_t spawn_exec(const struct sbx_init_req *rq, char *strings, int fds[4], int ep[2]) {
        extern char **environ;
        char **env0 = environ;
        bool pni = pid_ns_init;
        struct exec_args a = {.rq = rq, .strings = strings, .fds = fds, .pipe_w = ep[1]};
        pid_t pid = clone(exec_trampoline, exec_stack + sizeof exec_stack, CLONE_VM | SIGCHLD, &a);
        if (pid > 0) {
                (void) close(ep[1]);
                ep[1] = -1;
                struct pollfd pf = {.fd = ep[0], .events = 0};
                for (int round = 0; round < 2; round++) {
                        int k;
                        do
                                k = poll(&pf, 1, 10000);
                        while (k < 0 && errno == EINTR);
                        if (k != 0)
                                break;
                        (void) kill(pid, SIGKILL); /* stopped before its exec: it ends here */
                }
        }
        environ = env0;
        pid_ns_init = pni;
        return pid;
}

/* One request from fd 3; false when the supervisor is gone (its end closed). */
static bool take_request(void) {
        int fds[4] = {-1, -1, -1, -1}, nfds = 0;
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(4 * sizeof(int))];
        } cbuf;
        struct iovec iov = {.iov_base = reqbuf, .iov_len = sizeof reqbuf - 1};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &cbuf, .msg_controllen = sizeof cbuf};
        ssize_t n = recvmsg(SBX_INIT_STATUS_FD, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR;
        if (n == 0)
                return false; /* (a SEQPACKET end: a request is never empty) */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        nfds = (int) ((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        if (nfds > 4)
                                nfds = 4;
                        memcpy(fds, CMSG_DATA(c), (size_t) nfds * sizeof(int));
                }
        struct sbx_init_req *rq = (struct sbx_init_req *) reqbuf;
        bool ok = nfds == 4 && (size_t) n >= sizeof *rq && rq->magic == SBX_INIT_REQ_MAGIC &&
                  rq->len == (size_t) n - sizeof *rq && rq->len > 0 && n_execs < MAX_EXECS &&
                  rq->op >= SBX_INIT_OP_EXEC && rq->op <= SBX_INIT_OP_CONNECT;
        if (ok) {
                char *strings = reqbuf + sizeof *rq;
                strings[rq->len] = 0;
                ok = strings[rq->len - 1] == 0;
        }
        int ep[2] = {-1, -1};
        if (ok && pipe2(ep, O_CLOEXEC | O_NONBLOCK) < 0)
                ep[0] = ep[1] = -1;
        pid_t pid = -1;
        if (ok && ep[0] >= 0 && rq->op == SBX_INIT_OP_EXEC && (rq->flags & SBX_INIT_REQ_OWN_PIDFD))
                pid = spawn_exec(rq, reqbuf + sizeof *rq, fds, ep);
        else if (ok && ep[0] >= 0) { /* a file or a connection (it may take long), or an exec that
                                      * waits for GO (a round trip, through a microvm's port): on
                                      * its own */
                pid = fork();
                if (pid == 0)
                        _exit(exec_child(rq, reqbuf + sizeof *rq, fds, ep[1]));
        }
        if (pid > 0) {
                execs[n_execs++] = (exec_entry){.pid = pid, .sock = fds[0], .pipe = ep[0]};
                fds[0] = -1; /* ours now */
                if (ep[1] >= 0)
                        close(ep[1]);
        } else {
                if (ep[0] >= 0) {
                        close(ep[0]);
                        close(ep[1]);
                }
                /* Refused: the exec socket says why, and closes. */
                struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC,
                        .type = SBX_INIT_MSG_SETUP_FAILED,
                        .a = ok ? errno : EINVAL,
                        .monotonic_ns = now_ns()};
                snprintf(m.text, sizeof m.text, "%s", ok ? "init: fork an exec" : "init: malformed request");
                if (nfds >= 1)
                        (void) send(fds[0], &m, sizeof m, MSG_NOSIGNAL);
        }
        for (int k = 0; k < nfds; k++)
                if (fds[k] >= 0)
                        close(fds[k]);
        return true;
}

/* --serve: no command of our own; one process per request, until the supervisor goes (its end of
 * fd 3 closes) or a termination signal comes. As PID 1 our end takes the whole sandbox. */
static int serve_loop(void) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGHUP);
        if (deathsig != SIGKILL)
                sigaddset(&set, deathsig);
        int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: signalfd");
                return 125;
        }
        send_msg(SBX_INIT_MSG_SERVING, 0, 0, NULL);
        for (;;) {
                struct pollfd pf[2] = {
                        {.fd = SBX_INIT_STATUS_FD, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
                if (poll(pf, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (pf[1].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        bool stop = false;
                        while (read(sfd, &si, sizeof si) == (ssize_t) sizeof si)
                                if (si.ssi_signo != SIGCHLD)
                                        stop = true;
                        if (stop)
                                break;
                        reap_and_sweep();
                }
                if (pf[0].revents & POLLIN) {
                        if (!take_request())
                                break;
                } else if (pf[0].revents & (POLLHUP | POLLERR | POLLNVAL))
                        break;
        }
        n_execs = 0; /* everything goes */
        kill_leftovers();
        return 0;
}

/* Start the command, forward signals to it, and when it ends kill what it left behind and report
 * (fd 3). The one-shot path (a persistent sandbox's execs: exec_child()). */
struct cmd_args {
        char **argv;
        const char *cwd;
        int ep;
};
/* The command's stack until its exec (see run_command): 64 KiB, of which it touches a few pages. */
static char cmd_stack[64 * 1024] __attribute__((aligned(16)));

static int cmd_child(void *arg) {
        extern char **environ;
        const struct cmd_args *a = arg;
        const char *cwd = a->cwd;
        char **argv = a->argv;
        int ep1 = a->ep;
        /* Every disposition is the default already (reset_ignored()): only the mask. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        (void) setsid();
        /* A terminal of our own (--tty: a fresh pty) becomes the command's controlling
         * terminal; a caller's terminal passed as stdin already belongs to the
         * caller's session, and the kernel refuses it (no controlling terminal). */
        if (isatty(0))
                (void) ioctl(0, TIOCSCTTY, 0);
        int32_t m[2] = {0, 0};
        int r = nest_signal_scope ? enter_signal_scope() : 0;
        if (r < 0) {
                m[0] = -r;
                m[1] = 2;
        } else if (cwd && chdir(cwd) < 0) {
                m[0] = errno;
                m[1] = 1;
        } else {
                /* Nothing of ours reaches the command: only 0, 1, 2 and the exec pipe,
                 * which is close-on-exec. */
                int keep = ep1;
                if (keep > 3)
                        (void) syscall(SYS_close_range, 3, keep - 1, 0);
                (void) syscall(SYS_close_range, keep + 1, ~0U, 0);
                m[0] = exec_command(argv, environ);
        }
        if (write(ep1, m, sizeof m) != (ssize_t) sizeof m)
                _exit(126);
        _exit(127);
}

static int run_command(char **argv, const char *cwd) {
        int ep[2];
        if (pipe2(ep, O_CLOEXEC) < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: pipe");
                return 125;
        }

        /* The command's process shares our memory until its exec (CLONE_VM | CLONE_VFORK, on a
         * stack of its own): no page tables copied, no copy-on-write faults on either side
         * after, and we sleep until the exec has happened or failed, which we waited for
         * anyway. It touches nothing of ours but its arguments and the static PATH buffer. */
        struct cmd_args ca = {.argv = argv, .cwd = cwd, .ep = ep[1]};
        pid_t child = clone(cmd_child, cmd_stack + sizeof cmd_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &ca);
        if (child < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: clone");
                return 125;
        }
        close(ep[1]);
        int32_t msg[2];
        ssize_t n;
        do
                n = read(ep[0], msg, sizeof msg);
        while (n < 0 && errno == EINTR);
        close(ep[0]);

        bool exec_failed = n == (ssize_t) sizeof msg;
        static const char *const steps[] = {NULL, "chdir to the working directory",
                "init: keep the command's signals off its init (Landlock signal scope)"};
        if (exec_failed && (msg[1] == 1 || msg[1] == 2))
                send_msg(SBX_INIT_MSG_SETUP_FAILED, msg[0], 0, steps[msg[1]]);
        else if (exec_failed) {
                int e = msg[0];
                int code = (e == ENOENT || e == ENOTDIR) ? 127 : 126;
                send_msg(SBX_INIT_MSG_EXEC_FAILED, e, code, argv[0]);
        } else
                send_msg(SBX_INIT_MSG_STARTED, child, 0, NULL);

        for (;;) {
                siginfo_t si;
                int s = sigwaitinfo(&fwd, &si);
                if (s < 0)
                        continue;
                if ((s == deathsig && !pid_ns_init) || (s == hupsig && supervisor_gone())) {
                        kill_leftovers();
                        _exit(137);
                }
                if (s == hupsig)
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
                        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
                                ;
                        if (!exec_failed) {
                                if (WIFSIGNALED(st))
                                        send_end(SBX_INIT_MSG_SIGNALED, WTERMSIG(st));
                                else
                                        send_end(SBX_INIT_MSG_EXITED, WEXITSTATUS(st));
                        }
                        return 0;
                }
        }
}

/* Dispositions come through an exec as "default" or "ignored" only, and an ignored one is our
 * caller's, for neither us nor the command: SIGCHLD ignored would have the kernel reap the
 * command behind our back (sigwaitinfo never woken, its status lost), SIGPIPE ignored would
 * change how the command ends on a closed pipe. Each ignored one goes back to the default —
 * the set is /proc/self/status's SigIgn, one read instead of a sigaction per signal — so the
 * command, forked from us, starts with the defaults too. Without /proc: every signal. */
static void reset_ignored(void) {
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        uint64_t ign = ~0ULL;
        char buf[2048];
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
                close(fd);
        if (n > 0) {
                buf[n] = 0;
                const char *l = strstr(buf, "\nSigIgn:\t");
                char *end;
                if (l) {
                        unsigned long long v = strtoull(l + 9, &end, 16);
                        if (end != l + 9)
                                ign = v;
                }
        }
        for (int s = 1; s < NSIG && s <= 64; s++)
                if (ign & (1ULL << (s - 1)))
                        (void) sigaction(s, &dfl, NULL);
}

int main(int argc, char **argv) {
        extern char **environ;
        const char *cwd = NULL;
        bool tty = false, serve = false;
        int seccomp_fd = -1, landlock_fd = -1;
        unsigned landlock_flags = 0;
        const char *host_ns = NULL, *egress_ports = NULL;
        int i = 1;

        /* PID 1 of a microvm guest, started by its kernel from the initramfs: the guest agent. */
        if (getpid() == 1 && argc == 1 && strcmp(argv[0], "/init") == 0)
                return sbx_guest_main();

        for (; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0) {
                        i++;
                        break;
                } else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc)
                        cwd = argv[++i];
                else if (strcmp(argv[i], "--tty") == 0)
                        tty = true;
                else if (strcmp(argv[i], "--serve") == 0)
                        serve = true;
                else if (strcmp(argv[i], "--seccomp-fd") == 0 && i + 1 < argc)
                        seccomp_fd = parse_fd(argv[++i]);
                else if (strcmp(argv[i], "--landlock-fd") == 0 && i + 1 < argc)
                        landlock_fd = parse_fd(argv[++i]);
                else if (strcmp(argv[i], "--host-ns") == 0 && i + 1 < argc)
                        host_ns = argv[++i];
                else if (strcmp(argv[i], "--egress-ports") == 0 && i + 1 < argc)
                        egress_ports = argv[++i];
                else if (strcmp(argv[i], "--landlock-log") == 0)
                        /* the supervisor reads the kernel's denial records (audit): the
                         * command's, after our exec of it, are to be logged (ABI 7) */
                        landlock_flags = LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON;
                else
                        return 125;
        }
        if (serve ? i < argc : i >= argc)
                return 125;
        (void) tty;

        /* First of all: a sandbox that is not one runs nothing. */
        if (host_ns) {
                char why[64];
                int r = check_isolation(host_ns, why, sizeof why);
                if (r < 0) {
                        send_msg(SBX_INIT_MSG_SETUP_FAILED, r == -EPERM ? 0 : -r, 0, why);
                        return 125;
                }
        }

        /* in the sandbox's own network namespace only: --host-ns said it is not the host's */
        if (egress_ports) {
                const char *step = NULL;
                int r = host_ns && strstr(host_ns, "net:") ? send_egress_listeners(egress_ports, &step)
                                                           : -EPERM;
                if (r < 0) {
                        send_msg(SBX_INIT_MSG_SETUP_FAILED, -r, 0,
                                step ? step : "init: --egress-ports without --host-ns net:");
                        return 125;
                }
        }

        reset_ignored();
        pid_ns_init = getpid() == 1;
        if (!pid_ns_init && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: prctl(PR_SET_CHILD_SUBREAPER)");
                return 125;
        }
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        sigemptyset(&fwd);
        int fwd_sigs[] = {
                SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM};
        for (size_t k = 0; k < sizeof fwd_sigs / sizeof fwd_sigs[0]; k++)
                sigaddset(&fwd, fwd_sigs[k]);

        /* If the supervisor dies, the sandbox dies (it armed SIGKILL before exec'ing us; as pid 1
         * that takes the namespace with it). Replacing it is atomic: no moment without one. */
        pid_t parent = getppid();
        if (!pid_ns_init) {
                deathsig = SIGRTMAX;
                sigaddset(&fwd, deathsig);
        }
        (void) prctl(PR_SET_PDEATHSIG, deathsig, 0, 0, 0);
        if (getppid() != parent)
                return 125; /* gone before the signal was armed: nothing is started */

        if (seccomp_fd >= 0) {
                int r = read_blob(seccomp_fd);
                if (r < 0) {
                        send_msg(SBX_INIT_MSG_SETUP_FAILED, -r, 0, "init: read the seccomp programs");
                        return 125;
                }
        }

        /* Our children file: to kill what a command leaves behind without a pid namespace, and
         * a persistent sandbox's leftovers; PID 1 of one-shot sandbox's namespace kills with
         * kill(-1) and never reads it. */
        if (serve || !pid_ns_init)
                open_children();
        /* The init enters the command's Landlock domain itself: one domain for the whole sandbox,
         * so the command may still read its init's /proc entries (Landlock forbids inspecting
         * processes outside one's domain) and signals stay within it. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: prctl(PR_SET_NO_NEW_PRIVS)");
                return 125;
        }
        /* Not dumpable: the command (same uid, its child) cannot open our /proc/PID/mem, environ
         * or fds, so it cannot take over the init and speak for it on fd 3. Its own exec makes
         * the command dumpable again. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
                send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: prctl(PR_SET_DUMPABLE)");
                return 125;
        }
        if (landlock_fd >= 0) {
                if (syscall(SYS_landlock_restrict_self, landlock_fd, landlock_flags) < 0) {
                        send_msg(SBX_INIT_MSG_SETUP_FAILED, errno, 0, "init: enforce the Landlock ruleset");
                        return 125;
                }
                close(landlock_fd);
        }
        /* Last of the set-up: from here on the init itself is under the filter too, so the command
         * cannot get an unfiltered process by taking over its init. */
        if (seccomp_fd >= 0) {
                const char *step = NULL;
                int r = load_seccomp(&step);
                if (r < 0) {
                        send_msg(SBX_INIT_MSG_SETUP_FAILED, -r, 0, step);
                        return 125;
                }
        }

        if (serve)
                return serve_loop();
        int fl = fcntl(SBX_INIT_STATUS_FD, F_GETFL);
        if (fl >= 0 && fcntl(SBX_INIT_STATUS_FD, F_SETOWN, getpid()) == 0 &&
                fcntl(SBX_INIT_STATUS_FD, F_SETSIG, SIGRTMAX - 1) == 0 &&
                fcntl(SBX_INIT_STATUS_FD, F_SETFL, fl | O_ASYNC) == 0) {
                hupsig = SIGRTMAX - 1;
                sigaddset(&fwd, hupsig);
        }
        /* Where Landlock can scope signals (ABI 6), the command gets a nested domain that does. */
        nest_signal_scope = !pid_ns_init && syscall(SYS_landlock_create_ruleset, NULL, 0,
                                                    SBX_LL_CREATE_RULESET_VERSION) >= 6;
        sigset_t pending;
        if (supervisor_gone() || getppid() != parent ||
                (sigpending(&pending) == 0 && deathsig != SIGKILL && sigismember(&pending, deathsig)))
                return 125; /* gone already: nothing is started */
        return run_command(argv + i, cwd);
}
