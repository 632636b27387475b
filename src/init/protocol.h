/* protocol.h — messages from the sandbox's init to its supervisor over a SOCK_SEQPACKET pair
 * (fd 3 of the init). A socket, not a pipe: a pipe could be reopened through /proc/1/fd by the
 * command (same uid inside), a socket cannot. The supervisor also checks the sender via the
 * init's own exit: messages only fill in what the exit status cannot say. */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#define SBX_INIT_MAGIC 0x53425831u /* "SBX1" */
#define SBX_INIT_STATUS_FD 3

enum {
        SBX_INIT_MSG_STARTED = 1, /* a = pid of the command (inside), exec succeeded */
        SBX_INIT_MSG_EXEC_FAILED = 2, /* a = errno of execve, b = 126|127 */
        SBX_INIT_MSG_EXITED = 3, /* a = exit code */
        SBX_INIT_MSG_SIGNALED = 4, /* a = signal number */
        SBX_INIT_MSG_SETUP_FAILED = 5, /* a = errno, step in text */
        SBX_INIT_MSG_LISTENER = 6, /* SCM_RIGHTS: the seccomp notification listener */
        SBX_INIT_MSG_UNOBSERVED = 7, /* no listener could be installed (a = errno): the plain
                                      * filter is in force instead */
        SBX_INIT_MSG_SERVING = 8, /* --serve: the fences are up, requests are taken on fd 3 */
        SBX_INIT_MSG_RUNNER = 9, /* on an exec socket: the process of a request is up (a = its pid
                                  * inside; the supervisor reads its pid outside from the
                                  * credentials) and waits for SBX_INIT_MSG_GO before it starts */
        SBX_INIT_MSG_GO = 10, /* supervisor → the exec's process: it is known, go on */
        SBX_INIT_MSG_EGRESS = 11, /* SCM_RIGHTS, from the spawn before the init runs: b 0, the egress
                                   * proxy's listening socket, 127.0.0.1:3128 in the sandbox's own
                                   * network namespace; b 1, its resolver's UDP 127.0.0.1:53 (the
                                   * supervisor serves both from outside) */
        SBX_INIT_MSG_OOM = 12, /* on a persistent sandbox's exec socket, before its end: the
                                * sandbox's memory group OOM-killed while the exec ran and the
                                * exec was SIGKILLed (a = kills counted); the exec ends as
                                * memory_limit (the microvm guest agent says it: the host
                                * cannot see the guest's group) */
};

/* Send data[0, n) on sock with fd attached (SCM_RIGHTS): 0, or -errno (-EIO when cut short).
 * Syscalls only: the init and the spawn's child use it. */
static inline int sbx_send_with_fd(int sock, const void *data, size_t n, int fd) {
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(int))];
        } cbuf;
        memset(&cbuf, 0, sizeof cbuf);
        struct iovec iov = {.iov_base = (void *) data, .iov_len = n};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b, .msg_controllen = sizeof cbuf.b};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
        ssize_t k;
        do
                k = sendmsg(sock, &mh, MSG_NOSIGNAL);
        while (k < 0 && errno == EINTR);
        return k < 0 ? -errno : (size_t) k != n ? -EIO : 0;
}

struct sbx_init_msg {
        uint32_t magic;
        uint32_t type;
        int32_t a;
        int32_t b;
        uint64_t monotonic_ns; /* CLOCK_MONOTONIC when it happened */
        char text[64];
        /* EXITED/SIGNALED of a one-shot command: what its tree used (getrusage children); of a
         * persistent sandbox's exec: what wait4() says its process used */
        uint64_t utime_us, stime_us;
        int64_t maxrss_kb;
};

/* A persistent sandbox (init --serve): the supervisor sends requests over fd 3, each with four
 * descriptors (SCM_RIGHTS): the exec socket (a SOCK_SEQPACKET the exec reports on, as a one-shot
 * init does on fd 3), then the command's stdin, stdout and stderr. One message, one fork: the
 * init forks one process per request, which inherits the sandbox's Landlock domain and seccomp
 * filter (nothing joins the sandbox from outside), leads a session of its own, says
 * SBX_INIT_MSG_RUNNER, waits for SBX_INIT_MSG_GO (not with SBX_INIT_REQ_OWN_PIDFD), sends
 * SBX_INIT_MSG_STARTED and becomes the command. The init reaps it, kills what is left in its session, and
 * sends its end (EXITED/SIGNALED, with its usage) on its own copy of the exec socket, then closes it: the
 * socket's end is the exec's. After the header: cwd, then n_argv strings, then n_env strings,
 * each NUL-terminated. */
#define SBX_INIT_REQ_MAGIC 0x53425852u /* "SBXR" */
#define SBX_INIT_REQ_MAX 65536
enum {
        SBX_INIT_OP_EXEC = 1, /* run argv */
        SBX_INIT_OP_PUT = 2, /* write stdin to argv[0] (created 0644, or truncated) */
        SBX_INIT_OP_GET = 3, /* copy the regular file argv[0] to stdout */
        SBX_INIT_OP_CONNECT = 4, /* a TCP connection to 127.0.0.1:argv[0] (a port number) made in
                                  * the sandbox's own network: the connected socket goes out over
                                  * the request's stdin (a unix socket, SCM_RIGHTS) */
};
struct sbx_init_req {
        uint32_t magic;
        uint32_t op;
        uint32_t n_argv, n_env;
        uint32_t len; /* bytes of strings after the header */
        uint32_t tty; /* 0; or a PTY of the sandbox's own /dev/pts, SBX_INIT_TTY(cols, rows): its
                       * slave is the command's 0, 1, 2 and controlling terminal, its master goes
                       * out over the request's stdin (a unix socket, SCM_RIGHTS) */
        uint32_t flags; /* SBX_INIT_REQ_* */
};
/* The exec's process sends its own pidfd with SBX_INIT_MSG_RUNNER (SCM_RIGHTS) and goes on
 * without waiting for SBX_INIT_MSG_GO: the requester knows it by that descriptor, whatever
 * becomes of its pid, and holds what it cannot place until then (sbx_notify_route.hold). Where
 * pidfd_open fails there, RUNNER comes without one and it waits for GO as before. */
#define SBX_INIT_REQ_OWN_PIDFD 1u
#define SBX_INIT_TTY(cols, rows) (((uint32_t) (cols) << 16) | (uint32_t) (rows))

/* The seccomp programs handed to the init (a sealed memfd): a header, then the observed
 * program (violations go to a listener), then the plain one (violations answer their errno),
 * used when no listener can be installed; n_plain 0 = none (observation required). */
#define SBX_SECCOMP_BLOB_MAGIC 0x53425846u /* "SBXF" */
struct sbx_seccomp_blob_header {
        uint32_t magic;
        uint32_t n_observed; /* instructions */
        uint32_t n_plain;
        uint32_t reserved;
};
