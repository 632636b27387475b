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
 * death (SIGKILL at a timeout, a kill) is the exec's kill in the guest. It ends with the exec. */
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

#define MAX_EXECS 64

typedef struct {
        uint32_t id;
        int xs, in, out, err; /* the supervisor's descriptors for the exec; -1 closed */
        int sctl; /* our end of the stand-in's socket; -1 once it is gone */
        pid_t spid;
        bool used;
} hexec;

static hexec execs[MAX_EXECS];
static uint32_t next_id;

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
                                (void) send(xs, &m, sizeof m, MSG_NOSIGNAL);
                                close(xs);
                                xs = -1;
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
        (void) send(xs, &m, sizeof m, MSG_NOSIGNAL);
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
        *x = (hexec){.xs = -1, .in = -1, .out = -1, .err = -1, .sctl = -1};
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
                .used = true};
        (void) fcntl(x->in, F_SETFL, fcntl(x->in, F_GETFL) | O_NONBLOCK);
        if (sbx_vm_frame_send(chan, SBX_VM_EXEC, &x->id, 4, buf, (size_t) k) < 0)
                exec_end(x);
        return true;
}

/* A frame from the guest about an exec. */
static void exec_frame(int chan, const struct sbx_vm_frame *h, const char *d) {
        uint32_t id;
        if (h->len < 4)
                return;
        memcpy(&id, d, 4);
        hexec *x = exec_of(id);
        if (!x)
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
                if (m.type == SBX_INIT_MSG_RUNNER && x->sctl >= 0)
                        (void) send(x->sctl, &m, sizeof m, MSG_NOSIGNAL); /* with its pid */
                else if (x->xs >= 0)
                        (void) send(x->xs, &m, sizeof m, MSG_NOSIGNAL);
        } else if (h->type == SBX_VM_XOUT || h->type == SBX_VM_XERR) {
                int *fd = h->type == SBX_VM_XOUT ? &x->out : &x->err;
                if (*fd >= 0 && sbx_write_all(*fd, p, n) < 0)
                        hclose(fd); /* the supervisor stopped reading: its decision */
        } else if (h->type == SBX_VM_XEND)
                exec_end(x);
        (void) chan;
}

bool sbx_microvm_serve(int chan, int con, int qfd, int sfd, int oom_w, uint64_t *ret_peak) {
        for (int i = 0; i < MAX_EXECS; i++)
                execs[i] = (hexec){.xs = -1, .in = -1, .out = -1, .err = -1, .sctl = -1};
        bool ended = false;
        char buf[65536];
        for (;;) {
                struct pollfd p[5 + 3 * MAX_EXECS];
                p[0] = (struct pollfd){.fd = chan, .events = POLLIN};
                p[1] = (struct pollfd){.fd = con, .events = POLLIN};
                p[2] = (struct pollfd){.fd = qfd, .events = POLLIN};
                p[3] = (struct pollfd){.fd = sfd, .events = POLLIN};
                p[4] = (struct pollfd){.fd = SBX_INIT_STATUS_FD, .events = POLLIN};
                for (int i = 0; i < MAX_EXECS; i++) {
                        hexec *x = &execs[i];
                        struct pollfd *q = &p[5 + 3 * i];
                        q[0] = (struct pollfd){.fd = x->used ? x->xs : -1, .events = POLLIN};
                        q[1] = (struct pollfd){.fd = x->used ? x->in : -1, .events = POLLIN};
                        q[2] = (struct pollfd){.fd = x->used ? x->sctl : -1, .events = POLLIN};
                }
                if (poll(p, ELEMENTSOF(p), -1) < 0 && errno != EINTR)
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
                        if (h.type >= SBX_VM_XMSG && h.type <= SBX_VM_XEND)
                                exec_frame(chan, &h, d);
                        else if (h.type == SBX_VM_INIT && h.len == sizeof(struct sbx_init_msg)) {
                                struct sbx_init_msg m;
                                memcpy(&m, d, sizeof m);
                                m.monotonic_ns = sbx_now_ns();
                                m.text[sizeof m.text - 1] = 0;
                                if (m.magic == SBX_INIT_MAGIC && m.type != SBX_INIT_MSG_LISTENER &&
                                        m.type != SBX_INIT_MSG_EGRESS)
                                        (void) send(SBX_INIT_STATUS_FD, &m, sizeof m, MSG_NOSIGNAL);
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
                        const struct pollfd *q = &p[5 + 3 * i];
                        if (!x->used)
                                continue;
                        if (q[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                                /* the supervisor's go; its close: it gave the exec up */
                                struct sbx_init_msg m;
                                ssize_t k = recv(x->xs, &m, sizeof m, MSG_DONTWAIT);
                                if (k == (ssize_t) sizeof m && m.type == SBX_INIT_MSG_GO)
                                        (void) sbx_vm_frame_send(chan, SBX_VM_XGO, &x->id, 4, NULL, 0);
                                else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                                        uint32_t kill9[2] = {x->id, SIGKILL};
                                        (void) sbx_vm_frame_send(chan, SBX_VM_XSIG, kill9, 8, NULL, 0);
                                        hclose(&x->xs);
                                }
                        }
                        if (x->in >= 0 && (q[1].revents & (POLLIN | POLLHUP | POLLERR))) {
                                ssize_t k = read(x->in, buf, sizeof buf);
                                if (k > 0)
                                        (void) sbx_vm_frame_send(
                                                chan, SBX_VM_XIN, &x->id, 4, buf, (size_t) k);
                                else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
                                        (void) sbx_vm_frame_send(chan, SBX_VM_XIN, &x->id, 4, NULL, 0);
                                        hclose(&x->in);
                                }
                        }
                        if (x->sctl >= 0 && (q[2].revents & (POLLIN | POLLHUP | POLLERR))) {
                                uint32_t sig;
                                ssize_t k = recv(x->sctl, &sig, sizeof sig, MSG_DONTWAIT);
                                if (k == (ssize_t) sizeof sig) {
                                        uint32_t s[2] = {x->id, sig};
                                        (void) sbx_vm_frame_send(chan, SBX_VM_XSIG, s, 8, NULL, 0);
                                } else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                                        /* the stand-in was killed (a timeout, a kill): so is the exec */
                                        uint32_t s[2] = {x->id, SIGKILL};
                                        (void) sbx_vm_frame_send(chan, SBX_VM_XSIG, s, 8, NULL, 0);
                                        (void) waitpid(x->spid, NULL, 0);
                                        x->spid = 0;
                                        hclose(&x->sctl);
                                }
                        }
                }
                if (p[2].revents & POLLIN)
                        break; /* qemu is gone; what it sent was read above */
        }
        for (int i = 0; i < MAX_EXECS; i++)
                if (execs[i].used)
                        exec_end(&execs[i]);
        return ended;
}
