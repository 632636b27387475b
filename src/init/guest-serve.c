/* guest-serve.c — the guest agent of a persistent microvm sandbox: the init runs with --serve in
 * the command's namespaces (guest.c started it), and each exec the host asks for (VM_EXEC) becomes
 * a request to that init with four descriptors made here — the exec's socket, its stdin, stdout
 * and stderr — exactly as the host's supervisor hands them to a native sandbox's init. What
 * crosses the port is bytes, each frame named by the exec's id: the init's messages on the exec's
 * socket (VM_XMSG), its output (VM_XOUT, VM_XERR), its end (VM_XEND) out; its stdin (VM_XIN), the
 * supervisor's go (VM_XGO) and signals (VM_XSIG) in. The exec's process inherits the sandbox's
 * Landlock domain and seccomp filter from the init (nothing joins from outside), as on the host. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest.h"
#include "protocol.h"
#include "vm-protocol.h"

#define MAX_EXECS SBX_VM_MAX_EXECS

typedef struct {
        uint32_t id;
        int xs, in, out, err; /* our ends; -1 closed */
        pid_t pid; /* the exec's process (its RUNNER's credentials), 0 before */
        uint64_t ooms; /* the sandbox group's oom_kill count when it started */
        uint64_t out_credit; /* output bytes the host may still be sent (SBX_VM_WINDOW) */
        int pending_sig; /* a signal that came before its process was known */
        char *in_buf;
        size_t in_len;
        bool in_eof, used;
} gexec;

static gexec execs[MAX_EXECS];

static gexec *exec_of(uint32_t id) {
        for (int i = 0; i < MAX_EXECS; i++)
                if (execs[i].used && execs[i].id == id)
                        return &execs[i];
        return NULL;
}

static void xsend(uint32_t type, uint32_t id, const void *data, size_t len) {
        char buf[4 + 65536];
        if (len > sizeof buf - 4)
                len = sizeof buf - 4;
        memcpy(buf, &id, 4);
        if (len)
                memcpy(buf + 4, data, len);
        send_frame(type, buf, 4 + len);
}

static void xclose(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

/* Read what an exec's pipe holds; at its end (or an error) close it. */
static void drain(gexec *x, int *fd, uint32_t type, bool to_end) {
        char buf[65536];
        while (*fd >= 0 && (to_end || x->out_credit > 0)) {
                size_t want = to_end || x->out_credit >= sizeof buf ? sizeof buf : (size_t) x->out_credit;
                ssize_t k = read(*fd, buf, want);
                if (k > 0) {
                        x->out_credit -= (uint64_t) k > x->out_credit ? x->out_credit : (uint64_t) k;
                        xsend(type, x->id, buf, (size_t) k);
                        if (!to_end)
                                return;
                } else if (k < 0 && errno == EINTR)
                        continue;
                else if (k < 0 && errno == EAGAIN && !to_end)
                        return;
                else
                        xclose(fd);
        }
}

/* The exec's socket closed: its end was said. What its pipes hold now is its output; a process
 * that left its session and still holds them does not keep the exec open. */
static void finish(gexec *x) {
        drain(x, &x->out, SBX_VM_XOUT, true);
        drain(x, &x->err, SBX_VM_XERR, true);
        xclose(&x->xs);
        xclose(&x->in);
        free(x->in_buf);
        xsend(SBX_VM_XEND, x->id, NULL, 0);
        *x = (gexec){.xs = -1, .in = -1, .out = -1, .err = -1};
}

/* A request for the init: our ends kept, its ends sent with it. Refused (the message on the
 * host's side says why) when the table is full or the descriptors cannot be made. */
static void start_exec(int st, uint32_t id, const char *req, size_t len) {
        gexec *x = NULL;
        for (int i = 0; i < MAX_EXECS && !x; i++)
                if (!execs[i].used)
                        x = &execs[i];
        int xs[2] = {-1, -1}, in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
        int e = 0;
        if (!x)
                e = EAGAIN;
        else if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, xs) < 0 || pipe2(in, O_CLOEXEC) < 0 ||
                 pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
                e = errno;
        if (!e) {
                (void) setsockopt(xs[0], SOL_SOCKET, SO_PASSCRED, &(int){1}, sizeof(int));
                union {
                        struct cmsghdr h;
                        char b[CMSG_SPACE(4 * sizeof(int))];
                } cb;
                memset(&cb, 0, sizeof cb);
                int fds[4] = {xs[1], in[0], out[1], err[1]};
                struct iovec iov = {.iov_base = (void *) req, .iov_len = len};
                struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = cb.b,
                        .msg_controllen = sizeof cb.b};
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof fds);
                memcpy(CMSG_DATA(c), fds, sizeof fds);
                ssize_t k;
                do
                        k = sendmsg(st, &mh, MSG_NOSIGNAL);
                while (k < 0 && errno == EINTR);
                if (k < 0)
                        e = errno;
        }
        xclose(&xs[1]), xclose(&in[0]), xclose(&out[1]), xclose(&err[1]);
        if (e) {
                xclose(&xs[0]), xclose(&in[1]), xclose(&out[0]), xclose(&err[0]);
                struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC, .type = SBX_INIT_MSG_SETUP_FAILED, .a = e};
                snprintf(m.text, sizeof m.text, "guest agent: %s",
                        x ? "cannot hand the exec to the init" : "too many execs at once");
                xsend(SBX_VM_XMSG, id, &m, sizeof m);
                xsend(SBX_VM_XEND, id, NULL, 0);
                return;
        }
        (void) fcntl(in[1], F_SETFL, O_NONBLOCK);
        (void) fcntl(out[0], F_SETFL, O_NONBLOCK);
        (void) fcntl(err[0], F_SETFL, O_NONBLOCK);
        *x = (gexec){.id = id,
                .xs = xs[0],
                .in = in[1],
                .out = out[0],
                .err = err[0],
                .ooms = cg_value(CG "/memory.events", "oom_kill"),
                .out_credit = SBX_VM_WINDOW,
                .used = true};
}

/* One message on an exec's socket: relayed (with the process's pid noted), or its end. */
static void exec_message(gexec *x) {
        struct sbx_init_msg m;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
        } cb;
        struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b, .msg_controllen = sizeof cb.b};
        ssize_t k = recvmsg(x->xs, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        struct ucred cred = {0};
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); k > 0 && c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len == CMSG_LEN(sizeof cred))
                        memcpy(&cred, CMSG_DATA(c), sizeof cred);
                else if (c->cmsg_type == SCM_RIGHTS)
                        /* a terminal's master or a connection: cannot cross (refused before) */
                        for (size_t j = 0; j < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); j++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof fd);
                                close(fd);
                        }
        if (k == (ssize_t) sizeof m && m.magic == SBX_INIT_MAGIC) {
                if (m.type == SBX_INIT_MSG_RUNNER && cred.pid > 0) {
                        x->pid = cred.pid;
                        if (x->pending_sig) {
                                (void) kill(x->pid, x->pending_sig);
                                (void) kill(-x->pid, x->pending_sig);
                        }
                }
                uint64_t ooms = m.type == SBX_INIT_MSG_SIGNALED && m.a == SIGKILL
                                        ? cg_value(CG "/memory.events", "oom_kill")
                                        : 0;
                if (ooms > x->ooms) {
                        /* killed while the group OOM-killed: the memory limit, said before the end */
                        struct sbx_init_msg o = {.magic = SBX_INIT_MAGIC,
                                .type = SBX_INIT_MSG_OOM,
                                .a = (int32_t) (ooms - x->ooms)};
                        xsend(SBX_VM_XMSG, x->id, &o, sizeof o);
                }
                xsend(SBX_VM_XMSG, x->id, &m, sizeof m);
        } else if (k <= 0)
                finish(x);
}

static void port_frame(int st) {
        struct sbx_vm_frame h;
        if (read_full(guest_port, &h, sizeof h) < 0 || h.magic != SBX_VM_MAGIC || h.len > SBX_VM_FRAME_MAX)
                power_off(); /* the host is gone or speaks nonsense */
        char *d = malloc(h.len + 1);
        if (!d || (h.len && read_full(guest_port, d, h.len) < 0))
                power_off();
        uint32_t id = 0;
        if (h.len >= 4)
                memcpy(&id, d, 4);
        gexec *x = h.len >= 4 ? exec_of(id) : NULL;
        if (guest_net_frame(h.type, d, h.len))
                ; /* a connection's (guest-net.c) */
        else if (h.type == SBX_VM_EXEC && h.len >= 4 + sizeof(struct sbx_init_req) && !x)
                start_exec(st, id, d + 4, h.len - 4);
        else if (h.type == SBX_VM_XIN && x && h.len == 4)
                x->in_eof = true;
        else if (h.type == SBX_VM_XIN && x && x->in >= 0 && !x->in_eof) {
                /* at most SBX_VM_WINDOW held: the host sends no more until acked */
                char *nb = realloc(x->in_buf, x->in_len + h.len - 4);
                if (nb) {
                        memcpy(nb + x->in_len, d + 4, h.len - 4);
                        x->in_buf = nb;
                        x->in_len += h.len - 4;
                } else {
                        xclose(&x->in); /* its stdin ends short rather than wrong */
                        x->in_len = 0;
                }
        } else if (h.type == SBX_VM_XOUTACK && x && h.len == 8) {
                uint32_t k;
                memcpy(&k, d + 4, 4);
                x->out_credit += k;
        } else if (h.type == SBX_VM_XGO && x) {
                struct sbx_init_msg go = {.magic = SBX_INIT_MAGIC, .type = SBX_INIT_MSG_GO};
                (void) send(x->xs, &go, sizeof go, MSG_NOSIGNAL);
        } else if (h.type == SBX_VM_XSIG && x && h.len == 8) {
                uint32_t sig;
                memcpy(&sig, d + 4, 4);
                if (x->pid <= 0)
                        x->pending_sig = (int) sig; /* for its process, once it is known */
                else {
                        /* its process and the group it leads (its pipeline) */
                        (void) kill(x->pid, (int) sig);
                        (void) kill(-x->pid, (int) sig);
                }
        }
        free(d);
}

/* Stdin that waits for an exec's pipe to take it. */
static void feed(gexec *x) {
        if (x->in_len > 0) {
                ssize_t k = write(x->in, x->in_buf, x->in_len);
                if (k > 0) {
                        memmove(x->in_buf, x->in_buf + k, x->in_len - (size_t) k);
                        x->in_len -= (size_t) k;
                } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
                        xclose(&x->in); /* it stopped reading: what it was sent counts as taken */
                        k = (ssize_t) x->in_len;
                        x->in_len = 0;
                }
                if (k > 0) {
                        uint32_t n = (uint32_t) k;
                        xsend(SBX_VM_XINACK, x->id, &n, 4);
                }
        }
        if (x->in >= 0 && x->in_eof && x->in_len == 0)
                xclose(&x->in);
}

/* Whose connection to the egress proxy fd is: the exec whose processes hold its client end. */
static uint32_t conn_owner(int fd) {
        pid_t roots[MAX_EXECS];
        uint32_t ids[MAX_EXECS];
        size_t n = 0;
        for (int i = 0; i < MAX_EXECS; i++)
                if (execs[i].used && execs[i].pid > 0) {
                        roots[n] = execs[i].pid;
                        ids[n++] = execs[i].id;
                }
        size_t k = guest_net_holder(fd, roots, n);
        return k ? ids[k - 1] : 0;
}

void guest_serve(int out, int err, int st, int in, pid_t child) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        close(in); /* the init reads nothing */
        for (int i = 0; i < MAX_EXECS; i++)
                execs[i] = (gexec){.xs = -1, .in = -1, .out = -1, .err = -1};
        bool ended = false;
        int status = 0;
        guest_net_owner(conn_owner);
        mark("serving");
        while (!ended) {
                struct pollfd p[5 + 4 * MAX_EXECS + GUEST_NET_FDS];
                p[0] = (struct pollfd){.fd = guest_port, .events = POLLIN}; /* always: windows bound it */
                p[1] = (struct pollfd){.fd = out, .events = POLLIN};
                p[2] = (struct pollfd){.fd = err, .events = POLLIN};
                p[3] = (struct pollfd){.fd = st, .events = POLLIN};
                p[4] = (struct pollfd){.fd = sfd, .events = POLLIN};
                for (int i = 0; i < MAX_EXECS; i++) {
                        gexec *x = &execs[i];
                        struct pollfd *q = &p[5 + 4 * i];
                        q[0] = (struct pollfd){.fd = x->used ? x->xs : -1, .events = POLLIN};
                        bool credit = x->used && x->out_credit > 0;
                        q[1] = (struct pollfd){.fd = credit ? x->out : -1, .events = POLLIN};
                        q[2] = (struct pollfd){.fd = credit ? x->err : -1, .events = POLLIN};
                        q[3] = (struct pollfd){.fd = x->used && x->in_len ? x->in : -1, .events = POLLOUT};
                }
                guest_net_poll(p + 5 + 4 * MAX_EXECS);
                if (poll(p, 5 + 4 * MAX_EXECS + GUEST_NET_FDS, -1) < 0 && errno != EINTR)
                        break;
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
                        port_frame(st);
                char buf[4096];
                for (int i = 1; i <= 2; i++) {
                        int *fd = i == 1 ? &out : &err;
                        if (*fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
                                read(*fd, buf, sizeof buf) <= 0) {
                                close(*fd);
                                *fd = -1;
                        }
                }
                if (st >= 0 && (p[3].revents & (POLLIN | POLLHUP | POLLERR))) {
                        /* the sandbox's own messages (its end): relayed as a one-shot's */
                        struct sbx_init_msg m;
                        ssize_t k = recv(st, &m, sizeof m, MSG_DONTWAIT);
                        if (k == (ssize_t) sizeof m && m.magic == SBX_INIT_MAGIC)
                                send_frame(SBX_VM_INIT, &m, sizeof m);
                        else if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
                                close(st);
                                st = -1;
                        }
                }
                for (int i = 0; i < MAX_EXECS; i++) {
                        gexec *x = &execs[i];
                        const struct pollfd *q = &p[5 + 4 * i];
                        if (!x->used)
                                continue;
                        if (q[1].revents & (POLLIN | POLLHUP | POLLERR))
                                drain(x, &x->out, SBX_VM_XOUT, false);
                        if (q[2].revents & (POLLIN | POLLHUP | POLLERR))
                                drain(x, &x->err, SBX_VM_XERR, false);
                        if (q[3].revents & (POLLOUT | POLLERR | POLLHUP))
                                feed(x);
                        else if (x->in >= 0 && x->in_eof && x->in_len == 0)
                                xclose(&x->in);
                        /* its messages after its output (the end comes last) */
                        if (q[0].revents & (POLLIN | POLLHUP | POLLERR))
                                exec_message(x);
                }
                guest_net_events(p + 5 + 4 * MAX_EXECS);
                if ((p[4].revents & POLLIN) && guest_reap(sfd, child, &status))
                        ended = true;
        }
        /* The init is gone (the sandbox ends): its execs end with it. */
        for (int i = 0; i < MAX_EXECS; i++)
                if (execs[i].used)
                        finish(&execs[i]);
        guest_end(status, false);
}
