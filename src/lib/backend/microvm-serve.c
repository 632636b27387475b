/* microvm-serve.c — the execs of a persistent microvm sandbox, on the host's side. The supervisor
 * (persist.c) talks to the relay as to any sandbox's init: a request on fd 3 with four descriptors
 * (the exec's socket, its stdin, stdout, stderr), then the exec's hello, go, start and end on that
 * socket. Descriptors cannot cross a serial port, so the relay keeps them and the guest agent
 * (src/init/guest-serve.c) makes their guest ends; each exec is named by an id on the channel.
 *
 * The supervisor learns an exec's process from the credentials of its hello and signals, times
 * and kills it through a pidfd. The process is in the guest; here a stand-in, a small child of
 * the relay in a session of its own, carries its identity: it sends the hello (so its pid is
 * the one the kernel attaches), passes each signal it gets on to the exec in the guest, and its
 * death (SIGKILL at a timeout, a kill) is the exec's kill in the guest. It ends with the exec.
 *
 * Nothing here blocks on one exec: the channel is written through a queue (non-blocking sends,
 * the rest on POLLOUT), an exec's output through buffers of its own (its pipes non-blocking),
 * and each direction of each exec has a window (vm-protocol.h: SBX_VM_WINDOW), so an exec that
 * does not read its stdin, or whose reader is slow, stops only itself. */
#include "backend/common.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/microvm-internal.h"
#include "basic/io.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "init/protocol.h"
#include "init/vm-stream.h"

#define MAX_EXECS SBX_VM_MAX_EXECS
#define QUEUE_HIGH (256u << 10) /* no more stdin read while the channel's queue holds this */
#define GONE_GRACE_NS (5ull * 1000000000ull) /* a given-up exec's end from the guest, at most */

typedef struct {
        uint32_t id;
        int xs, in, out, err; /* the supervisor's descriptors for the exec; -1 closed */
        int sctl; /* our end of the stand-in's socket; -1 once it is gone */
        pid_t spid;
        uint64_t in_credit; /* stdin bytes the guest may still be sent (SBX_VM_WINDOW) */
        sbx_buf obuf, ebuf; /* output for its pipes, waiting for them to take it */
        bool ended; /* the guest said XEND: closed once its output is out */
        uint64_t gone_ns; /* given up (its stand-in or its socket gone): ended by then anyway */
        bool used;
} hexec;

static hexec execs[MAX_EXECS];
static uint32_t next_id;
#define qframe sbx_vm_qframe

static void hclose(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

/* The stand-in: sends the hello it is given (its credentials are the exec's pid for the
 * supervisor), passes on the signals it gets, ends when the relay closes its socket. */
static _noreturn_ void standin_main(int xs, int ctl) {
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        int sfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
        for (;;) {
                struct pollfd p[2] = {{.fd = ctl, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        _exit(1);
                if (p[1].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof si) == (ssize_t) sizeof si)
                                if (si.ssi_signo != SIGCHLD) {
                                        uint32_t sig = si.ssi_signo;
                                        (void) send(ctl, &sig, sizeof sig, MSG_NOSIGNAL);
                                }
                }
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        struct sbx_init_msg m;
                        ssize_t k = recv(ctl, &m, sizeof m, 0);
                        if (k == (ssize_t) sizeof m && xs >= 0) {
                                (void) send(xs, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
                                close(xs);
                                xs = -1;
                                uint32_t sent = 0; /* (no signal is 0) the relay goes on */
                                (void) send(ctl, &sent, sizeof sent, MSG_NOSIGNAL);
                        } else if (k <= 0 && !(k < 0 && errno == EINTR))
                                _exit(0);
                }
        }
}

static pid_t standin_fork(int xs, int *ret_ctl) {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return -errno;
        pid_t relay = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(sp[0]), close(sp[1]);
                return r;
        }
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != relay)
                        _exit(1);
                (void) setsid(); /* the supervisor signals its process group too */
                int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
                int x = fcntl(xs, F_DUPFD_CLOEXEC, 10), c = fcntl(sp[1], F_DUPFD_CLOEXEC, 10);
                if (nul < 0 || x < 0 || c < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0 ||
                        dup2(x, 3) < 0 || dup2(c, 4) < 0)
                        _exit(1);
                (void) syscall(SYS_close_range, 5, ~0U, 0);
                standin_main(3, 4);
        }
        close(sp[1]);
        *ret_ctl = sp[0];
        return pid;
}

static void refuse(int xs, int err, const char *why) {
        struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC,
                .type = SBX_INIT_MSG_SETUP_FAILED,
                .a = err,
                .monotonic_ns = sbx_now_ns()};
        snprintf(m.text, sizeof m.text, "microvm: %.50s", why);
        (void) send(xs, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* An exec is over (its agent said so, or the sandbox ends): its socket's close is its end for
 * the supervisor, after its output. */
static void exec_end(hexec *x) {
        hclose(&x->xs);
        hclose(&x->in);
        hclose(&x->out);
        hclose(&x->err);
        if (x->spid > 0) {
                kill(x->spid, SIGKILL);
                (void) waitpid(x->spid, NULL, 0);
        }
        hclose(&x->sctl);
        sbx_buf_done(&x->obuf);
        sbx_buf_done(&x->ebuf);
        *x = (hexec){.xs = -1, .in = -1, .out = -1, .err = -1, .sctl = -1};
}

/* Its output to its pipes, as far as they take it now; what they took is acked to the guest
 * (its window). A pipe whose reader is gone takes everything (dropped). */
static void exec_pump(int chan, hexec *x) {
        size_t took = 0;
        for (int i = 0; i < 2; i++) {
                sbx_buf *b = i == 0 ? &x->obuf : &x->ebuf;
                int *fd = i == 0 ? &x->out : &x->err;
                while (b->n > 0) {
                        ssize_t k = *fd >= 0 ? write(*fd, b->p, b->n) : (ssize_t) b->n;
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0 && errno == EAGAIN)
                                break;
                        if (k < 0) {
                                hclose(fd); /* the supervisor stopped reading: its decision */
                                k = (ssize_t) b->n;
                        }
                        sbx_buf_drop(b, (size_t) k);
                        took += (size_t) k;
                }
        }
        if (took > 0 && !x->ended) {
                uint32_t n = (uint32_t) took;
                qframe(chan, SBX_VM_XOUTACK, x->id, &n, 4);
        }
        if (x->ended && x->obuf.n == 0 && x->ebuf.n == 0)
                exec_end(x);
}

/* Give the exec up: killed in the guest, ended here if the guest does not say so in time. */
static void exec_give_up(int chan, hexec *x) {
        uint32_t sig = SIGKILL;
        qframe(chan, SBX_VM_XSIG, x->id, &sig, 4);
        if (!x->gone_ns)
                x->gone_ns = sbx_now_ns() + GONE_GRACE_NS;
}

static hexec *exec_of(uint32_t id) {
        for (int i = 0; i < MAX_EXECS; i++)
                if (execs[i].used && execs[i].id == id)
                        return &execs[i];
        return NULL;
}

/* A request from the supervisor. false: it is gone (its end of fd 3 closed). */
static bool take_request(int chan) {
        static char buf[sizeof(struct sbx_init_req) + SBX_INIT_REQ_MAX];
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(4 * sizeof(int))];
        } cb;
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b, .msg_controllen = sizeof cb.b};
        ssize_t k = recvmsg(SBX_INIT_STATUS_FD, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                return true;
        if (k <= 0)
                return false;
        int fds[4] = {-1, -1, -1, -1}, nf = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        nf = (int) ((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        memcpy(fds, CMSG_DATA(c), (size_t) (nf > 4 ? 4 : nf) * sizeof(int));
                }
        const struct sbx_init_req *req = (const struct sbx_init_req *) buf;
        hexec *x = NULL;
        for (int i = 0; i < MAX_EXECS && !x; i++)
                if (!execs[i].used)
                        x = &execs[i];
        const char *why = NULL;
        int err = EOPNOTSUPP;
        if (nf != 4 || (size_t) k < sizeof *req || req->magic != SBX_INIT_REQ_MAGIC)
                why = "a malformed request", err = EPROTO;
        else if (req->tty)
                why = "no terminal in a guest yet";
        else if (req->op == SBX_INIT_OP_CONNECT)
                why = "no connection into a guest yet";
        else if (!x)
                why = "too many execs at once", err = EAGAIN;
        int sctl = -1;
        pid_t spid = 0;
        if (!why && (spid = standin_fork(fds[0], &sctl)) < 0)
                why = "cannot start a stand-in", err = -spid;
        if (why) {
                if (nf >= 1)
                        refuse(fds[0], err, why);
                for (int i = 0; i < nf && i < 4; i++)
                        close(fds[i]);
                return true;
        }
        *x = (hexec){.id = ++next_id,
                .xs = fds[0],
                .in = fds[1],
                .out = fds[2],
                .err = fds[3],
                .sctl = sctl,
                .spid = spid,
                .in_credit = SBX_VM_WINDOW,
                .used = true};
        /* the output pipes are the supervisor's own for this exec; stdin is the caller's (its
         * flags are not ours to change: read once per POLLIN) */
        (void) fcntl(x->out, F_SETFL, fcntl(x->out, F_GETFL) | O_NONBLOCK);
        (void) fcntl(x->err, F_SETFL, fcntl(x->err, F_GETFL) | O_NONBLOCK);
        /* a pidfd cannot cross the port: the guest's exec waits for GO, which the stand-in's
         * hello brings (the supervisor sees no pidfd with it, and sends GO) */
        ((struct sbx_init_req *) buf)->flags &= ~SBX_INIT_REQ_OWN_PIDFD;
        qframe(chan, SBX_VM_EXEC, x->id, buf, (size_t) k);
        return true;
}

/* The stand-in sends the exec's hello (its pid is the exec's for the supervisor): before any
 * later message of the exec's goes, it has (its ack), or it is gone and so is the exec. */
static void send_runner(int chan, hexec *x, const struct sbx_init_msg *m) {
        if (x->sctl < 0 || send(x->sctl, m, sizeof *m, MSG_NOSIGNAL) < 0) {
                exec_give_up(chan, x);
                return;
        }
        for (;;) {
                struct pollfd p = {.fd = x->sctl, .events = POLLIN};
                uint32_t v;
                if (poll(&p, 1, 2000) <= 0 || recv(x->sctl, &v, sizeof v, 0) != (ssize_t) sizeof v) {
                        exec_give_up(chan, x);
                        return;
                }
                if (v == 0)
                        return;
                qframe(chan, SBX_VM_XSIG, x->id, &v, 4); /* a signal it had passed on before */
        }
}

/* A frame from the guest about an exec. */
static void exec_frame(int chan, const struct sbx_vm_frame *h, const char *d) {
        uint32_t id;
        if (h->len < 4)
                return;
        memcpy(&id, d, 4);
        hexec *x = exec_of(id);
        if (!x || x->ended)
                return;
        const char *p = d + 4;
        size_t n = h->len - 4;
        if (h->type == SBX_VM_XMSG && n == sizeof(struct sbx_init_msg)) {
                struct sbx_init_msg m;
                memcpy(&m, p, sizeof m);
                if (m.magic != SBX_INIT_MAGIC)
                        return;
                m.monotonic_ns = sbx_now_ns(); /* the guest's clock is not ours */
                m.text[sizeof m.text - 1] = 0;
                if (m.type == SBX_INIT_MSG_RUNNER)
                        send_runner(chan, x, &m);
                else if (x->xs >= 0 && send(x->xs, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
                         errno != EAGAIN)
                        hclose(&x->xs);
        } else if (h->type == SBX_VM_XOUT || h->type == SBX_VM_XERR) {
                if (sbx_buf_put(h->type == SBX_VM_XOUT ? &x->obuf : &x->ebuf, p, n) < 0)
                        exec_give_up(chan, x);
                exec_pump(chan, x);
        } else if (h->type == SBX_VM_XINACK && n == 4) {
                uint32_t k;
                memcpy(&k, p, 4);
                x->in_credit += k;
        } else if (h->type == SBX_VM_XEND) {
                x->ended = true;
                exec_pump(chan, x); /* closed once its output is out */
        }
}

/* Whose a connection from the guest is (microvm-net.c): the exec's stand-in, its pid here. */
static pid_t exec_pid(uint32_t id) {
        for (int i = 0; id && i < MAX_EXECS; i++)
                if (execs[i].used && execs[i].id == id)
                        return execs[i].spid;
        return 0;
}

bool sbx_microvm_serve(int chan, int con, int qfd, int sfd, int oom_w, uint64_t *ret_peak) {
        for (int i = 0; i < MAX_EXECS; i++)
                execs[i] = (hexec){.xs = -1, .in = -1, .out = -1, .err = -1, .sctl = -1};
        sbx_vm_net_start(chan, exec_pid);
        bool ended = false;
        char buf[65536];
        for (;;) {
                struct pollfd p[5 + 5 * MAX_EXECS + SBX_VM_MAX_STREAMS];
                p[0] = (struct pollfd){.fd = chan, .events = POLLIN | (sbx_vm_queued() ? POLLOUT : 0)};
                p[1] = (struct pollfd){.fd = con, .events = POLLIN};
                p[2] = (struct pollfd){.fd = qfd, .events = POLLIN};
                p[3] = (struct pollfd){.fd = sfd, .events = POLLIN};
                p[4] = (struct pollfd){.fd = SBX_INIT_STATUS_FD, .events = POLLIN};
                uint64_t now = sbx_now_ns(), next = 0;
                for (int i = 0; i < MAX_EXECS; i++) {
                        hexec *x = &execs[i];
                        struct pollfd *q = &p[5 + 5 * i];
                        if (x->used && x->gone_ns && now >= x->gone_ns)
                                exec_end(x); /* the guest never said: its end is ours */
                        if (x->used && x->gone_ns && (!next || x->gone_ns < next))
                                next = x->gone_ns;
                        bool in_ok = x->in_credit > 0 && sbx_vm_queued() < QUEUE_HIGH && !x->ended;
                        q[0] = (struct pollfd){.fd = x->used ? x->xs : -1, .events = POLLIN};
                        q[1] = (struct pollfd){.fd = x->used && in_ok ? x->in : -1, .events = POLLIN};
                        q[2] = (struct pollfd){.fd = x->used ? x->sctl : -1, .events = POLLIN};
                        q[3] = (struct pollfd){.fd = x->used && x->obuf.n ? x->out : -1, .events = POLLOUT};
                        q[4] = (struct pollfd){.fd = x->used && x->ebuf.n ? x->err : -1, .events = POLLOUT};
                }
                sbx_vm_streams_poll(p + 5 + 5 * MAX_EXECS);
                int wait_ms = next ? (int) ((next - now) / 1000000) + 1 : -1;
                if (poll(p, ELEMENTSOF(p), wait_ms) < 0 && errno != EINTR)
                        break;
                if ((p[0].revents & POLLOUT) && !sbx_vm_queue_flush(chan))
                        break;
                if (p[1].revents & (POLLIN | POLLHUP) && sbx_vm_console_take(con) == 0)
                        con = -1;
                if (p[3].revents & POLLIN)
                        break; /* a termination signal for the sandbox: it ends */
                if ((p[4].revents & (POLLIN | POLLHUP | POLLERR)) && !take_request(chan))
                        break; /* the supervisor is gone */
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        struct sbx_vm_frame h;
                        _cleanup_free_ char *d = NULL;
                        if (sbx_vm_frame_read(chan, &h, &d) < 0)
                                break;
                        if (sbx_vm_net_frame(h.type, d, h.len))
                                ; /* a connection's */
                        else if ((h.type >= SBX_VM_XMSG && h.type <= SBX_VM_XEND) || h.type == SBX_VM_XINACK)
                                exec_frame(chan, &h, d);
                        else if (h.type == SBX_VM_INIT && h.len == sizeof(struct sbx_init_msg)) {
                                struct sbx_init_msg m;
                                memcpy(&m, d, sizeof m);
                                m.monotonic_ns = sbx_now_ns();
                                m.text[sizeof m.text - 1] = 0;
                                if (m.magic == SBX_INIT_MAGIC && m.type != SBX_INIT_MSG_LISTENER &&
                                        m.type != SBX_INIT_MSG_EGRESS)
                                        (void) send(SBX_INIT_STATUS_FD, &m, sizeof m,
                                                MSG_NOSIGNAL | MSG_DONTWAIT);
                        } else if (h.type == SBX_VM_OOM && oom_w >= 0)
                                (void) !write(oom_w, "O", 1);
                        else if (h.type == SBX_VM_FAIL)
                                dprintf(2, "sandboxer: microvm: %s\n", d);
                        else if (h.type == SBX_VM_END) {
                                if (h.len >= 8)
                                        memcpy(ret_peak, d, 8);
                                ended = true;
                                break;
                        }
                }
                for (int i = 0; i < MAX_EXECS; i++) {
                        hexec *x = &execs[i];
                        const struct pollfd *q = &p[5 + 5 * i];
                        if (!x->used)
                                continue;
                        if (q[3].revents || q[4].revents)
                                exec_pump(chan, x);
                        if (!x->used)
                                continue;
                        if (x->xs >= 0 && (q[0].revents & (POLLIN | POLLHUP | POLLERR))) {
                                /* the supervisor's go; its close: it gave the exec up */
                                struct sbx_init_msg m;
                                ssize_t k = recv(x->xs, &m, sizeof m, MSG_DONTWAIT);
                                if (k == (ssize_t) sizeof m && m.type == SBX_INIT_MSG_GO)
                                        qframe(chan, SBX_VM_XGO, x->id, NULL, 0);
                                else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                                        hclose(&x->xs);
                                        exec_give_up(chan, x);
                                }
                        }
                        if (x->in >= 0 && (q[1].revents & (POLLIN | POLLHUP | POLLERR))) {
                                size_t want = x->in_credit < sizeof buf ? (size_t) x->in_credit : sizeof buf;
                                ssize_t k = read(x->in, buf, want);
                                if (k > 0) {
                                        x->in_credit -= (uint64_t) k;
                                        qframe(chan, SBX_VM_XIN, x->id, buf, (size_t) k);
                                } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
                                        qframe(chan, SBX_VM_XIN, x->id, NULL, 0);
                                        hclose(&x->in);
                                }
                        }
                        if (x->sctl >= 0 && (q[2].revents & (POLLIN | POLLHUP | POLLERR))) {
                                uint32_t sig;
                                ssize_t k = recv(x->sctl, &sig, sizeof sig, MSG_DONTWAIT);
                                if (k == (ssize_t) sizeof sig && sig != 0)
                                        qframe(chan, SBX_VM_XSIG, x->id, &sig, 4);
                                else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                                        /* the stand-in was killed (a timeout, a kill): so is the exec */
                                        (void) waitpid(x->spid, NULL, 0);
                                        x->spid = 0;
                                        hclose(&x->sctl);
                                        exec_give_up(chan, x);
                                }
                        }
                }
                sbx_vm_streams_events(p + 5 + 5 * MAX_EXECS);
                if (p[2].revents & POLLIN)
                        break; /* qemu is gone; what it sent was read above */
        }
        sbx_vm_net_done();
        for (int i = 0; i < MAX_EXECS; i++)
                if (execs[i].used)
                        exec_end(&execs[i]);
        return ended;
}
