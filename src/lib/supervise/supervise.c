/* supervise.c — the epoll loop of DESIGN.md principle 1: the kernel enforces, the supervisor
 * observes, counts, times and reports. */
#include "supervise/supervise.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>

#include "init/protocol.h"
#include "isolate/audit.h"
#include "supervise/egress-run.h"
#include "supervise/spawn.h"
#include "supervise/sv-util.h"

enum {
        EV_PIDFD = 1,
        EV_STATUS,
        EV_OUT,
        EV_ERR,
        EV_TIMER,
        EV_SIGNAL,
        EV_OOM,
        EV_NOTIFY,
        EV_TTYIN,
        EV_EXTRA,
        EV_AUDIT,
        EV_EGRESS,
        EV_HOLD
};

/* The Landlock access records of one audit event, held until the event says whose domain they
 * are of (its AUDIT_LANDLOCK_DOMAIN record follows them) and which call was refused (its
 * AUDIT_SYSCALL record, present where the host audits syscalls). */
#define AUDIT_EVENT_MAX 4
#define AUDIT_HELD_MAX 4
typedef struct audit_event {
        uint64_t serial;
        size_t n;
        struct {
                uint64_t domain;
                char blockers[64];
                char path[512];
                char addr[64];
                char port[16];
        } acc[AUDIT_EVENT_MAX];
        int syscall_nr; /* -1 unknown */
        pid_t pid; /* 0 unknown */
} audit_event;

typedef struct loop_state {
        const sbx_supervise_params *p;
        sbx_supervise_result *res;
        bool end_noted; /* p->on_end called */
        int ep;
        int out_fd, err_fd, status_fd;
        /* The init's pid as we see it: the spawned process, or — where a sandbox tool (bwrap,
         * firejail) runs between us and the init — the sender of the listener message
         * (SCM_CREDENTIALS; the launch sets SO_PASSCRED on our end before the spawn). */
        pid_t init_pid;
        bool fwd_out_ok, fwd_err_ok;
        int timer_fd;
        bool grace_armed;
        int listener_fd;
        struct seccomp_notif waiting[64]; /* held for the route (sbx_notify_route.hold) */
        unsigned n_waiting; /* all of them: the listener is not read until one goes */
        bool exec_seen;
        pid_t cur_pid; /* the caller of the notification being handled */
        int audit_fd;
        uint64_t ll_domain; /* the sandbox's Landlock domain, once an audit record named it */
        audit_event aev;
        audit_event held[AUDIT_HELD_MAX]; /* before ll_domain is known: see audit_flush() */
        size_t n_held, held_next;
        int audit_backlog; /* from the last status reply; -1 while one is awaited */
} loop_state;

static void note_end(loop_state *s) {
        if (s->p->on_end && !s->end_noted) {
                s->end_noted = true;
                s->p->on_end(s->p->userdata);
        }
}

static void kill_sandbox(loop_state *s) {
        if (s->res->killed)
                return;
        note_end(s);
        s->res->killed = true;
        if (s->p->kill_all)
                (void) s->p->kill_all(s->p->userdata);
        (void) syscall(SYS_pidfd_send_signal, s->p->pidfd, SIGKILL, NULL, 0);
}

/* Read what is there; returns false at EOF. */
static bool pump(loop_state *s, int *fdp, int fwd, bool *fwd_ok, uint64_t *count) {
        char buf[65536];
        for (;;) {
                ssize_t n = read(*fdp, buf, sizeof buf);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return true;
                        n = 0;
                }
                if (n == 0) {
                        (void) epoll_ctl(s->ep, EPOLL_CTL_DEL, *fdp, NULL);
                        *fdp = safe_close(*fdp);
                        return false;
                }
                uint64_t cap = s->p->output_cap;
                uint64_t total = s->res->stdout_bytes + s->res->stderr_bytes;
                size_t keep = (size_t) n;
                if (cap > 0 && total + (uint64_t) n > cap) {
                        keep = (size_t) (cap > total ? cap - total : 0);
                        s->res->output_limited = true;
                }
                *count += keep;
                if (fwd >= 0 && keep > 0)
                        sv_write_all(fwd, buf, keep, fwd_ok);
                if (s->res->output_limited) {
                        kill_sandbox(s);
                        (void) epoll_ctl(s->ep, EPOLL_CTL_DEL, *fdp, NULL);
                        *fdp = safe_close(*fdp);
                        return false;
                }
                if ((size_t) n < sizeof buf)
                        return true;
        }
}

static int add_fd(int ep, int fd, uint32_t tag);

/* Evidence only (DESIGN.md principle 1): a string argument of the calling process, read through
 * /proc/PID/mem, then the notification id checked still valid so the pid was not reused. What
 * it says never decides an answer. */
static bool read_string(
        loop_state *s, const struct seccomp_notif *req, uint64_t addr, char *buf, size_t size) {
        if (!addr || size < 2)
                return false;
        char path[64];
        snprintf(path, sizeof path, "/proc/%u/mem", req->pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n = pread(fd, buf, size - 1, (off_t) addr);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = 0;
        if (strnlen(buf, (size_t) n) == (size_t) n) /* no terminator within what we read */
                buf[size - 1] = 0;
        uint64_t id = req->id;
        return ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

static void record_pid(loop_state *s, pid_t pid, sbx_violation_kind kind, const char *action,
        const char *syscall, const sbx_detail *d, size_t n) {
        if (s->p->route) {
                s->p->route->record(s->p->route->userdata, pid, kind, action, syscall, d, n);
                return;
        }
        if (!s->p->report)
                return;
        int64_t at = (int64_t) ((sbx_now_ns() - s->p->start_ns) / 1000000);
        (void) sbx_report_add_violation(s->p->report, kind, action, at, syscall, d, n);
}

static void record(loop_state *s, sbx_violation_kind kind, bool killed, const char *syscall,
        const sbx_detail *d, size_t n) {
        if (s->p->route) {
                record_pid(s, s->cur_pid, kind, killed ? "killed" : "denied", syscall, d, n);
                return;
        }
        if (!s->p->report)
                return;
        int64_t at = (int64_t) ((sbx_now_ns() - s->p->start_ns) / 1000000);
        (void) sbx_report_add_violation(s->p->report, kind, killed ? "killed" : "denied", at, syscall, d, n);
}

/* Evidence: bytes of the caller's memory. */
static ssize_t read_mem(loop_state *s, const struct seccomp_notif *req, uint64_t addr, void *buf, size_t n) {
        if (!addr || n == 0)
                return -1;
        char path[64];
        snprintf(path, sizeof path, "/proc/%u/mem", req->pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t k = pread(fd, buf, n, (off_t) addr);
        close(fd);
        uint64_t id = req->id;
        if (k <= 0 || ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0)
                return -1;
        return k;
}

/* A path as the caller gave it, resolved against its cwd or dirfd, lexically normalised. */
static bool resolve_path(
        const struct seccomp_notif *req, int dirfd_arg, const char *given, char *out, size_t size) {
        char base[512] = "";
        if (given[0] != '/') {
                char link[64];
                int dfd = dirfd_arg >= 0 ? (int) req->data.args[dirfd_arg] : AT_FDCWD;
                if (dfd == AT_FDCWD)
                        snprintf(link, sizeof link, "/proc/%u/cwd", req->pid);
                else
                        snprintf(link, sizeof link, "/proc/%u/fd/%d", req->pid, dfd);
                ssize_t n = readlink(link, base, sizeof base - 1);
                if (n <= 0)
                        return false;
                base[n] = 0;
        }
        char joined[1200];
        if (snprintf(joined, sizeof joined, "%s/%s", base, given) >= (int) sizeof joined)
                return false;
        /* normalise: drop "." and "", resolve ".." lexically */
        size_t o = 0;
        out[0] = 0;
        for (char *save = NULL, *tok = strtok_r(joined, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
                if (streq(tok, "."))
                        continue;
                if (streq(tok, "..")) {
                        char *sl = strrchr(out, '/');
                        o = sl ? (size_t) (sl - out) : 0;
                        out[o] = 0;
                        continue;
                }
                int k = snprintf(out + o, size - o, "/%s", tok);
                if (k < 0 || (size_t) k >= size - o)
                        return false;
                o += (size_t) k;
        }
        if (o == 0)
                snprintf(out, size, "/");
        return true;
}

typedef struct fs_call {
        int nr;
        int dirfd_arg, path_arg; /* path_arg -1: none */
        int dirfd2_arg, path2_arg; /* a second path (rename's target), -1: none */
        const char *access;
} fs_call;

static const fs_call fs_calls[] = {
        {__NR_open, -1, 0, -1, -1, "write"},
        {__NR_openat, 0, 1, -1, -1, "write"},
        {__NR_creat, -1, 0, -1, -1, "create"},
        {__NR_truncate, -1, 0, -1, -1, "truncate"},
        {__NR_unlink, -1, 0, -1, -1, "unlink"},
        {__NR_unlinkat, 0, 1, -1, -1, "unlink"},
        {__NR_rename, -1, 0, -1, 1, "rename"},
        {__NR_renameat, 0, 1, 2, 3, "rename"},
        {__NR_renameat2, 0, 1, 2, 3, "rename"},
        {__NR_mkdir, -1, 0, -1, -1, "mkdir"},
        {__NR_mkdirat, 0, 1, -1, -1, "mkdir"},
        {__NR_rmdir, -1, 0, -1, -1, "rmdir"},
        {__NR_link, -1, -1, -1, 1, "link"},
        {__NR_linkat, -1, -1, 2, 3, "link"},
        {__NR_symlink, -1, -1, -1, 1, "symlink"},
        {__NR_symlinkat, -1, -1, 1, 2, "symlink"},
        {__NR_mknod, -1, 0, -1, -1, "mknod"},
        {__NR_mknodat, 0, 1, -1, -1, "mknod"},
};

/* A write-intent call: outside the writable set → refused (EACCES) and recorded with the path as
 * given and as resolved. Inside → it continues, still under Landlock and the read-only mounts. */
static bool observe_fs(
        loop_state *s, const struct seccomp_notif *req, sbx_detail *d, size_t *nd, char bufs[4][512]) {
        const fs_call *c = NULL;
        for (size_t i = 0; i < ELEMENTSOF(fs_calls); i++)
                if (fs_calls[i].nr == req->data.nr)
                        c = &fs_calls[i];
        if (!c || !s->p->writable)
                return false;
        for (int which = 0; which < 2; which++) {
                int pa = which ? c->path2_arg : c->path_arg, da = which ? c->dirfd2_arg : c->dirfd_arg;
                if (pa < 0)
                        continue;
                char *given = bufs[which * 2], *resolved = bufs[which * 2 + 1];
                ssize_t n = read_mem(s, req, req->data.args[pa], given, 511);
                if (n <= 0)
                        continue;
                given[n] = 0;
                if (!resolve_path(req, da, given, resolved, 512))
                        continue;
                bool ok = false;
                for (char *const *w = s->p->writable; *w && !ok; w++)
                        ok = sv_under(resolved, *w);
                if (ok)
                        continue;
                d[(*nd)++] = (sbx_detail){.key = "path", .str = given};
                d[(*nd)++] = (sbx_detail){.key = "resolved", .str = resolved};
                d[(*nd)++] = (sbx_detail){.key = "access", .str = (char *) c->access};
                return true;
        }
        return false;
}

/* connect/bind: the address as evidence. Refused when it is not the sandbox's own loopback
 * (inside the empty network namespace it could not leave anyway; this is what makes it seen). */
static bool observe_net(
        loop_state *s, const struct seccomp_notif *req, sbx_detail *d, size_t *nd, char *abuf, size_t asz) {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        size_t len = (size_t) req->data.args[2];
        if (len > sizeof ss)
                len = sizeof ss;
        if (len < sizeof(sa_family_t) ||
                read_mem(s, req, req->data.args[1], &ss, len) < (ssize_t) sizeof(sa_family_t))
                return false;
        bool is_bind = req->data.nr == __NR_bind;
        if (ss.ss_family == AF_INET) {
                struct sockaddr_in *in = (struct sockaddr_in *) &ss;
                uint32_t a = ntohl(in->sin_addr.s_addr);
                if ((s->p->loopback && (a >> 24) == 127) || (is_bind && a == INADDR_ANY))
                        return false;
                /* the egress proxy and the services: connecting to them is the way out */
                if (s->p->egress && !is_bind && sbx_egress_run_way_out(s->p->egress, a, ntohs(in->sin_port)))
                        return false;
                inet_ntop(AF_INET, &in->sin_addr, abuf, (socklen_t) asz);
                d[(*nd)++] = (sbx_detail){.key = "family", .str = (char *) "inet"};
                d[(*nd)++] = (sbx_detail){.key = "address", .str = abuf};
                d[(*nd)++] = (sbx_detail){.key = "port", .num = ntohs(in->sin_port)};
                return true;
        }
        if (ss.ss_family == AF_INET6) {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
                if ((s->p->loopback && IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) ||
                        (is_bind && IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr)))
                        return false;
                inet_ntop(AF_INET6, &in6->sin6_addr, abuf, (socklen_t) asz);
                d[(*nd)++] = (sbx_detail){.key = "family", .str = (char *) "inet6"};
                d[(*nd)++] = (sbx_detail){.key = "address", .str = abuf};
                d[(*nd)++] = (sbx_detail){.key = "port", .num = ntohs(in6->sin6_port)};
                return true;
        }
        return false; /* unix and the rest: the namespaces and Landlock decide */
}

static sbx_egress_refusal transparent_refusal; /* the last one's evidence (d points into it) */

/* The transparent path (egress-run.h: sbx_egress_run_transparent): 1 done (resp set), -1 refused
 * (evidence in d, resp.error set), 0 not ours (the usual observation decides). */
static int egress_connect(loop_state *s, const struct seccomp_notif *req, struct seccomp_notif_resp *resp,
        sbx_detail *d, size_t *nd) {
        struct sockaddr_storage ss = {0};
        size_t len = MIN((size_t) req->data.args[2], sizeof ss);
        int err = 0;
        if (len < sizeof(sa_family_t) || read_mem(s, req, req->data.args[1], &ss, len) < (ssize_t) len)
                return 0;
        int r = sbx_egress_run_transparent(s->p->egress, (struct sockaddr *) &ss, len, (int) req->pid,
                (int) req->data.args[0], s->listener_fd, req->id, &transparent_refusal, &err);
        if (r < 0)
                *nd = sbx_egress_refusal_details(&transparent_refusal, d);
        resp->error = r < 0 ? -ECONNREFUSED : r > 0 ? err : 0;
        return r;
}

/* An exec seen for process.commands: returns 1 to refuse, 0 to let through, with *warned when
 * it goes through outside the lists. */
static int observe_exec(loop_state *s, const struct seccomp_notif *req, sbx_detail *d, size_t *nd, char *buf,
        size_t size, bool *warned) {
        ssize_t n = read_mem(s, req, req->data.nr == __NR_execveat ? req->data.args[1] : req->data.args[0],
                buf, size - 1);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        buf[strnlen(buf, (size_t) n)] = 0;
        bool bad = sv_cmd_listed(s->p->cmd_deny, buf) ||
                   (s->p->cmd_allow && s->p->cmd_allow[0] && !sv_cmd_listed(s->p->cmd_allow, buf));
        if (!bad)
                return 0;
        d[(*nd)++] = (sbx_detail){.key = "path", .str = buf};
        d[(*nd)++] = (sbx_detail){.key = "rule", .str = (char *) "process.commands"};
        *warned = !s->p->cmd_strict;
        return s->p->cmd_strict ? 1 : 0;
}

/* One notification from the seccomp listener: classify it with the filter's own rule table,
 * record it, answer. Answers are a refusal, or "continue" for a call the filter only routed here
 * to be counted (the init's own fork, the command's one execve) — decided by who calls and how
 * often, never by the contents of memory that could change under us. */
static void answer_notify(loop_state *s, struct seccomp_notif req);

static bool holds(loop_state *s, const struct seccomp_notif *req) {
        const sbx_notify_route *rt = s->p->route;
        return rt && rt->hold && req->pid != (uint32_t) s->init_pid &&
               rt->hold(rt->userdata, (pid_t) req->pid);
}

static void handle_notify(loop_state *s) {
        struct seccomp_notif req;
        memset(&req, 0, sizeof req);
        if (ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
                if (errno != EINTR && errno != ENOENT) {
                        /* The listener is gone or broken: stop watching; the filter then answers
                         * ENOSYS on its own, still a refusal. */
                        (void) epoll_ctl(s->ep, EPOLL_CTL_DEL, s->listener_fd, NULL);
                        s->listener_fd = safe_close(s->listener_fd);
                }
                return;
        }
        if (holds(s, &req)) {
                s->waiting[s->n_waiting++] = req;
                if (s->n_waiting == ELEMENTSOF(s->waiting)) /* full: the rest wait in the kernel */
                        (void) epoll_ctl(s->ep, EPOLL_CTL_MOD, s->listener_fd,
                                &(struct epoll_event){.events = 0, .data.u32 = EV_NOTIFY});
        } else
                answer_notify(s, req);
}

/* What the route held: answered once it says so, dropped when its caller is gone. */
static void handle_held(loop_state *s) {
        uint64_t x;
        (void) !read(s->p->route->hold_fd, &x, sizeof x);
        unsigned k = 0;
        for (unsigned i = 0; i < s->n_waiting; i++) {
                struct seccomp_notif req = s->waiting[i];
                if (s->listener_fd < 0 || ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) < 0)
                        continue;
                if (holds(s, &req))
                        s->waiting[k++] = req;
                else
                        answer_notify(s, req);
        }
        if (s->n_waiting == ELEMENTSOF(s->waiting) && k < s->n_waiting && s->listener_fd >= 0)
                (void) epoll_ctl(s->ep, EPOLL_CTL_MOD, s->listener_fd,
                        &(struct epoll_event){.events = EPOLLIN, .data.u32 = EV_NOTIFY});
        s->n_waiting = k;
}

static void answer_notify(loop_state *s, struct seccomp_notif req) {
        struct seccomp_notif_resp resp;
        s->res->notifications++;
        memset(&resp, 0, sizeof resp);
        resp.id = req.id;
        sbx_seccomp_match m = {.action = SBX_SECCOMP_ALLOW};
        if (!s->p->seccomp || sbx_seccomp_classify(s->p->seccomp, &req.data, &m) < 0)
                m.action = SBX_SECCOMP_VIOLATION, m.errnum = EPERM, m.category = SBX_SECCOMP_CAT_SYSCALL;
        const char *name = m.syscall ? m.syscall : sbx_seccomp_syscall_name(req.data.nr);
        const sbx_notify_route *rt = s->p->route;
        s->cur_pid = (pid_t) req.pid;
        bool from_init = req.pid == (uint32_t) s->init_pid;
        bool deny = false;
        sbx_detail d[SBX_VIOLATION_MAX_DETAILS];
        size_t nd = 0;
        char str[256];

        switch (m.action) {
        case SBX_SECCOMP_EXEC_GATE:
                if (!from_init && (rt ? rt->exec_first(rt->userdata, (pid_t) req.pid) : !s->exec_seen)) {
                        s->exec_seen = true;
                        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                        break;
                }
                deny = true;
                if (read_string(s, &req, req.data.nr == __NR_execveat ? req.data.args[1] : req.data.args[0],
                            str, sizeof str))
                        d[nd++] = (sbx_detail){.key = "path", .str = str};
                /* one execve: because nothing may spawn, or because only exec is refused */
                d[nd++] = (sbx_detail){.key = "rule",
                        .str = (char *) (s->p->seccomp && !s->p->seccomp->deny_spawn
                                                 ? "process.allow_exec: false"
                                                 : "process.allow_spawn: false")};
                record(s, SBX_VIOLATION_PROCESS_LIMIT, s->p->kill_on_violation, name, d, nd);
                break;
        case SBX_SECCOMP_VIOLATION:
                if (m.category == SBX_SECCOMP_CAT_SPAWN && from_init) {
                        /* The init forks the command: that is the sandbox working, not a violation. */
                        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                        break;
                }
                deny = true;
                if (m.category == SBX_SECCOMP_CAT_SPAWN) {
                        d[nd++] = (sbx_detail){.key = "rule", .str = (char *) "process.allow_spawn: false"};
                        record(s, SBX_VIOLATION_PROCESS_LIMIT, s->p->kill_on_violation, name, d, nd);
                } else if (m.category == SBX_SECCOMP_CAT_NETWORK) {
                        const char *fam = sv_family_name(req.data.args[0]);
                        if (req.data.nr == __NR_socket || req.data.nr == __NR_socketpair) {
                                if (fam)
                                        d[nd++] = (sbx_detail){.key = "family", .str = (char *) fam};
                                else
                                        d[nd++] = (sbx_detail){
                                                .key = "family", .num = (int64_t) req.data.args[0]};
                                d[nd++] = (sbx_detail){
                                        .key = "type", .num = (int64_t) (req.data.args[1] & 0xf)};
                        }
                        d[nd++] = (sbx_detail){
                                .key = "rule", .str = (char *) (m.why ? m.why : "network denied")};
                        record(s, SBX_VIOLATION_NETWORK_ACCESS, s->p->kill_on_violation, name, d, nd);
                } else {
                        for (int i = 0; i < 4 && nd < SBX_VIOLATION_MAX_DETAILS - 1; i++) {
                                static const char *const keys[] = {"arg0", "arg1", "arg2", "arg3"};
                                d[nd] = (sbx_detail){.num = (int64_t) req.data.args[i]};
                                snprintf(d[nd].key, sizeof d[nd].key, "%s", keys[i]);
                                nd++;
                        }
                        d[nd++] = (sbx_detail){.key = "rule", .str = (char *) (m.why ? m.why : "refused")};
                        record(s, SBX_VIOLATION_SYSCALL, s->p->kill_on_violation, name, d, nd);
                }
                break;
        case SBX_SECCOMP_OBSERVE: {
                static char bufs[4][512];
                static char abuf[INET6_ADDRSTRLEN];
                bool warned = false;
                if (req.data.nr == __NR_connect && s->p->egress) {
                        int t = egress_connect(s, &req, &resp, d, &nd);
                        if (t > 0)
                                break; /* connected to the proxy for it */
                        deny = t < 0;
                        if (deny && rt && rt->conn_owner && rt->conn_end) /* the exec's report */
                                rt->conn_end(rt->userdata, rt->conn_owner(rt->userdata, (int) req.pid), NULL,
                                        &transparent_refusal, NULL);
                        else if (deny) {
                                record(s, SBX_VIOLATION_NETWORK_ACCESS, s->p->kill_on_violation, name, d,
                                        nd);
                                sbx_egress_run_count_refused(s->p->egress);
                        }
                        if (deny)
                                break;
                }
                bool refuse = m.category == SBX_SECCOMP_CAT_FS ? observe_fs(s, &req, d, &nd, bufs)
                              : m.category == SBX_SECCOMP_CAT_SPAWN
                                      ? observe_exec(s, &req, d, &nd, bufs[0], sizeof bufs[0], &warned) > 0
                                      : observe_net(s, &req, d, &nd, abuf, sizeof abuf);
                if (warned)
                        record_pid(s, (pid_t) req.pid, SBX_VIOLATION_PROCESS_LIMIT, "warned", name, d, nd);
                if (!refuse) {
                        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                        break;
                }
                deny = true;
                record(s,
                        m.category == SBX_SECCOMP_CAT_FS      ? SBX_VIOLATION_FILESYSTEM_WRITE
                        : m.category == SBX_SECCOMP_CAT_SPAWN ? SBX_VIOLATION_PROCESS_LIMIT
                                                              : SBX_VIOLATION_NETWORK_ACCESS,
                        s->p->kill_on_violation, name, d, nd);
                break;
        }
        case SBX_SECCOMP_ENOSYS:
                resp.error = -ENOSYS;
                break;
        case SBX_SECCOMP_BADARCH:
                deny = true;
                break;
        case SBX_SECCOMP_ALLOW:
        case _SBX_SECCOMP_ACTION_MAX:
        case _SBX_SECCOMP_ACTION_INVALID:
        default:
                /* Not refused by the table: only a filter/table mismatch sends it here. */
                resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                break;
        }
        if (deny && !resp.error)
                resp.error = -(m.errnum ? m.errnum : EPERM);
        if (ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
                return;
        if (deny && s->p->kill_on_violation) {
                s->res->violation_killed = true;
                kill_sandbox(s);
        }
}

/* ---- the egress proxy's refusals ---------------------------------------------------------- */

static void handle_egress(loop_state *s) {
        sbx_egress_refusal f[16];
        size_t n = sbx_egress_run_take(s->p->egress, f, ELEMENTSOF(f));
        for (size_t i = 0; i < n; i++) {
                if (f[i].recorded)
                        continue; /* the route's sink has it, in the report of the exec it is of */
                sbx_detail d[SBX_EGRESS_DETAILS];
                size_t nd = sbx_egress_refusal_details(&f[i], d);
                record(s, SBX_VIOLATION_NETWORK_ACCESS, s->p->kill_on_violation, NULL, d, nd);
        }
        if (n > 0 && s->p->kill_on_violation) {
                s->res->violation_killed = true;
                kill_sandbox(s);
        }
}

/* ---- Landlock's denial records (audit) ------------------------------------------------------ */

static const char *const fs_write_blockers[] = {"fs.write_file", "fs.truncate", "fs.remove_dir",
        "fs.remove_file", "fs.make_char", "fs.make_dir", "fs.make_reg", "fs.make_sock", "fs.make_fifo",
        "fs.make_block", "fs.make_sym", "fs.refer", NULL};

static bool blockers_write(const char *b) {
        /* "fs.write_file,fs.truncate": any of them */
        for (const char *const *w = fs_write_blockers; *w; w++) {
                size_t l = strlen(*w);
                for (const char *p = strstr(b, *w); p; p = strstr(p + 1, *w))
                        if ((p == b || p[-1] == ',') && (p[l] == 0 || p[l] == ','))
                                return true;
        }
        return false;
}

/* Record an event's denials that are the sandbox's. */
static void audit_record(loop_state *s, const audit_event *ev) {
        for (size_t i = 0; s->ll_domain && i < ev->n; i++) {
                if (ev->acc[i].domain != s->ll_domain)
                        continue;
                const char *b = ev->acc[i].blockers;
                const char *call = ev->syscall_nr >= 0 ? sbx_seccomp_syscall_name(ev->syscall_nr) : NULL;
                sbx_detail d[5];
                size_t nd = 0;
                sbx_violation_kind kind;
                if (strncmp(b, "net.", 4) == 0) {
                        kind = SBX_VIOLATION_NETWORK_ACCESS;
                        if (ev->acc[i].addr[0])
                                d[nd++] = (sbx_detail){.key = "address", .str = (char *) ev->acc[i].addr};
                        if (ev->acc[i].port[0])
                                d[nd++] = (sbx_detail){
                                        .key = "port", .num = strtol(ev->acc[i].port, NULL, 10)};
                } else if (blockers_write(b)) {
                        kind = SBX_VIOLATION_FILESYSTEM_WRITE;
                        if (ev->acc[i].path[0])
                                d[nd++] = (sbx_detail){.key = "path", .str = (char *) ev->acc[i].path};
                } else
                        continue; /* reads, execution, scopes: refused, not a violation kind */
                d[nd++] = (sbx_detail){.key = "access", .str = (char *) b};
                d[nd++] = (sbx_detail){.key = "source", .str = (char *) "landlock_audit"};
                record_pid(s, ev->pid, kind, s->p->kill_on_violation ? "killed" : "denied", call, d, nd);
                if (s->p->kill_on_violation) {
                        s->res->violation_killed = true;
                        kill_sandbox(s);
                }
        }
}

/* The event is complete: record its denials if they are the sandbox's. Before the sandbox's
 * domain is known (its record follows the domain's first denial, under a serial of its own when
 * no syscall record ties them, and another process's records may come between), the last few
 * events with denials are held, and recorded once it is. */
static void audit_flush(loop_state *s) {
        audit_event *ev = &s->aev;
        if (!s->ll_domain && ev->n > 0) {
                s->held[s->held_next++ % AUDIT_HELD_MAX] = *ev;
                if (s->n_held < AUDIT_HELD_MAX)
                        s->n_held++;
        } else
                audit_record(s, ev);
        *ev = (audit_event){.syscall_nr = -1};
}

static void audit_domain_known(loop_state *s) {
        for (size_t k = 0; k < s->n_held; k++) /* oldest first */
                audit_record(s, &s->held[(s->held_next - s->n_held + k) % AUDIT_HELD_MAX]);
        s->n_held = 0;
}

static void audit_take(loop_state *s, const sbx_audit_msg *m) {
        char v[64];
        if (m->type == SBX_AUDIT_GET) {
                s->audit_backlog = sbx_audit_backlog(m->payload, m->payload_len);
                if (sbx_audit_enabled(m->payload, m->payload_len) == 0)
                        s->res->audit_off = true;
                return;
        }
        if (!m->text || (m->type != SBX_AUDIT_LANDLOCK_ACCESS && m->type != SBX_AUDIT_LANDLOCK_DOMAIN &&
                                m->type != SBX_AUDIT_SYSCALL && m->type != SBX_AUDIT_EOE))
                return;
        /* "domain=ID status=allocated mode=enforcing pid=N ...": N made the domain; the init
         * makes the sandbox's, so its pid names ours. The kernel writes this record after the
         * domain's first denial, under a serial of its own when no syscall record ties them (the
         * host audits no syscalls): learnt before that denial's event is flushed below. */
        if (m->type == SBX_AUDIT_LANDLOCK_DOMAIN && !s->ll_domain &&
                sbx_audit_field(m->text, m->len, "status", false, v, sizeof v) && streq(v, "allocated") &&
                sbx_audit_field(m->text, m->len, "pid", false, v, sizeof v) &&
                strtol(v, NULL, 10) == s->init_pid &&
                sbx_audit_field(m->text, m->len, "domain", false, v, sizeof v)) {
                s->ll_domain = strtoull(v, NULL, 16);
                audit_domain_known(s);
        }
        if (m->serial != s->aev.serial) {
                audit_flush(s);
                s->aev.serial = m->serial;
        }
        audit_event *ev = &s->aev;
        switch (m->type) {
        case SBX_AUDIT_LANDLOCK_ACCESS:
                if (ev->n < AUDIT_EVENT_MAX &&
                        sbx_audit_field(m->text, m->len, "domain", false, v, sizeof v)) {
                        ev->acc[ev->n].domain = strtoull(v, NULL, 16);
                        if (!sbx_audit_field(m->text, m->len, "blockers", false, ev->acc[ev->n].blockers,
                                    sizeof ev->acc[ev->n].blockers))
                                snprintf(ev->acc[ev->n].blockers, sizeof ev->acc[ev->n].blockers, "?");
                        if (!sbx_audit_field(m->text, m->len, "path", true, ev->acc[ev->n].path,
                                    sizeof ev->acc[ev->n].path))
                                ev->acc[ev->n].path[0] = 0;
                        if (!sbx_audit_field(m->text, m->len, "daddr", false, ev->acc[ev->n].addr,
                                    sizeof ev->acc[ev->n].addr) &&
                                !sbx_audit_field(m->text, m->len, "saddr", false, ev->acc[ev->n].addr,
                                        sizeof ev->acc[ev->n].addr))
                                ev->acc[ev->n].addr[0] = 0;
                        if (!sbx_audit_field(m->text, m->len, "dest", false, ev->acc[ev->n].port,
                                    sizeof ev->acc[ev->n].port) &&
                                !sbx_audit_field(m->text, m->len, "src", false, ev->acc[ev->n].port,
                                        sizeof ev->acc[ev->n].port))
                                ev->acc[ev->n].port[0] = 0;
                        ev->n++;
                }
                break;
        case SBX_AUDIT_SYSCALL:
                if (sbx_audit_field(m->text, m->len, "syscall", false, v, sizeof v))
                        ev->syscall_nr = (int) strtol(v, NULL, 10);
                if (sbx_audit_field(m->text, m->len, "pid", false, v, sizeof v))
                        ev->pid = (pid_t) strtol(v, NULL, 10);
                break;
        case SBX_AUDIT_EOE:
                audit_flush(s);
                break;
        default:
                break;
        }
}

/* Everything the audit socket holds now. */
static void audit_read(loop_state *s) {
        char buf[16384] __attribute__((aligned(8)));
        for (;;) {
                ssize_t n = recv(s->audit_fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == ENOBUFS) { /* records were lost: go on with the next */
                                s->res->audit_lost = true;
                                continue;
                        }
                        return;
                }
                const void *b = buf;
                size_t len = (size_t) n;
                sbx_audit_msg m;
                while (sbx_audit_next(&b, &len, &m) > 0)
                        audit_take(s, &m);
        }
}

/* The sandbox is gone: its records are in the kernel's queue, on their way to us. Read until
 * the kernel's backlog is empty (one status round trip when it already is), at most 50 ms. */
static void audit_drain(loop_state *s) {
        uint64_t deadline = sbx_now_ns() + 50 * 1000000ull;
        for (int round = 0; round < 32; round++) {
                s->audit_backlog = -1;
                if (sbx_audit_request_status(s->audit_fd) < 0)
                        break;
                while (s->audit_backlog < 0 && sbx_now_ns() < deadline) {
                        struct pollfd pfd = {.fd = s->audit_fd, .events = POLLIN};
                        if (poll(&pfd, 1, 5) < 0 && errno != EINTR)
                                break;
                        audit_read(s);
                }
                if (s->audit_backlog <= 0 || sbx_now_ns() >= deadline)
                        break;
                (void) poll(NULL, 0, 1);
        }
        audit_read(s);
        audit_flush(s);
}

static void handle_status(loop_state *s) {
        if (s->status_fd < 0) /* read to its end already (the drain after the exit calls again) */
                return;
        for (;;) {
                struct sbx_init_msg m;
                union {
                        struct cmsghdr h;
                        char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
                } cbuf;
                struct ucred cred = {.pid = 0};
                struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
                struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = &cbuf,
                        .msg_controllen = sizeof cbuf};
                ssize_t n = recvmsg(s->status_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                int passed = -1;
                if (n > 0)
                        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                                        c->cmsg_len == CMSG_LEN(sizeof(int)))
                                        memcpy(&passed, CMSG_DATA(c), sizeof(int));
                                else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
                                         c->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
                                        memcpy(&cred, CMSG_DATA(c), sizeof cred);
                        }
                if (passed >= 0 && n == (ssize_t) sizeof m && m.magic == SBX_INIT_MAGIC &&
                        m.type == SBX_INIT_MSG_EGRESS && s->p->egress) {
                        (void) sbx_egress_run_serve(s->p->egress, m.b, passed);
                        continue;
                }
                if (passed >= 0 &&
                        !(n == (ssize_t) sizeof m && m.magic == SBX_INIT_MAGIC &&
                                m.type == SBX_INIT_MSG_LISTENER && s->p->seccomp && s->listener_fd < 0)) {
                        close(passed); /* not asked for */
                        passed = -1;
                }
                if (passed >= 0) {
                        if (cred.pid > 0)
                                s->init_pid = cred.pid;
                        s->listener_fd = passed;
                        s->res->listener = true;
                        (void) fcntl(passed, F_SETFL, O_NONBLOCK);
                        if (add_fd(s->ep, passed, EV_NOTIFY) < 0)
                                s->listener_fd = safe_close(s->listener_fd);
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n == 0 || (errno != EAGAIN)) {
                                (void) epoll_ctl(s->ep, EPOLL_CTL_DEL, s->status_fd, NULL);
                                s->status_fd = safe_close(s->status_fd);
                        }
                        return;
                }
                if (n != (ssize_t) sizeof m || m.magic != SBX_INIT_MAGIC)
                        continue;
                m.text[sizeof m.text - 1] = 0;
                sbx_supervise_result *r = s->res;
                switch (m.type) {
                case SBX_INIT_MSG_STARTED: /* command_timeout_s: the command's own clock starts */
                        r->started_ns = m.monotonic_ns;
                        if (s->p->command_timeout_s > 0)
                                (void) sv_arm_timer(
                                        s->timer_fd, sbx_supervise_command_deadline(s->p, sbx_now_ns()));
                        break;
                case SBX_INIT_MSG_EXEC_FAILED:
                        r->end = SBX_SV_EXEC_FAILED;
                        r->exec_errno = m.a;
                        r->code = m.b;
                        r->ended_ns = m.monotonic_ns;
                        memcpy(r->text, m.text, sizeof r->text);
                        break;
                case SBX_INIT_MSG_EXITED:
                case SBX_INIT_MSG_SIGNALED:
                        note_end(s);
                        if (m.type == SBX_INIT_MSG_EXITED)
                                r->end = SBX_SV_EXITED, r->code = m.a;
                        else
                                r->end = SBX_SV_SIGNALED, r->signal = m.a;
                        r->ended_ns = m.monotonic_ns;
                        if (s->p->not_child) {
                                r->rusage.ru_utime.tv_sec = (time_t) (m.utime_us / 1000000);
                                r->rusage.ru_utime.tv_usec = (suseconds_t) (m.utime_us % 1000000);
                                r->rusage.ru_stime.tv_sec = (time_t) (m.stime_us / 1000000);
                                r->rusage.ru_stime.tv_usec = (suseconds_t) (m.stime_us % 1000000);
                                r->rusage.ru_maxrss = m.maxrss_kb;
                        }
                        break;
                case SBX_INIT_MSG_SERVING:
                        if (s->p->on_serving)
                                s->p->on_serving(s->p->extra_userdata, r->listener ? "active"
                                                                       : r->observation_unavailable
                                                                               ? "unavailable"
                                                                               : "off");
                        break;
                case SBX_INIT_MSG_UNOBSERVED:
                        r->observation_unavailable = true;
                        break;
                case SBX_INIT_MSG_OOM:
                        r->oom = true;
                        break;
                case SBX_INIT_MSG_SETUP_FAILED:
                        r->end = SBX_SV_SETUP_FAILED;
                        r->exec_errno = m.a;
                        memcpy(r->text, m.text, sizeof r->text);
                        break;
                default:
                        break;
                }
        }
}

static int add_fd(int ep, int fd, uint32_t tag) {
        if (fd < 0)
                return 0;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
        return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int sbx_supervise(const sbx_supervise_params *p, sbx_supervise_result *res, sbx_error *e) {
        memset(res, 0, sizeof *res);
        res->end = SBX_SV_SETUP_FAILED; /* until the init tells us otherwise */
        snprintf(res->text, sizeof res->text, "the sandbox init ended without reporting");
        loop_state s = {.p = p,
                .res = res,
                .out_fd = p->out_fd,
                .err_fd = p->err_fd,
                .status_fd = p->status_fd,
                .init_pid = p->pid,
                .fwd_out_ok = p->fwd_out >= 0,
                .fwd_err_ok = p->fwd_err >= 0,
                .timer_fd = -1,
                .listener_fd = -1,
                .audit_fd = p->audit_fd > 0 ? p->audit_fd : -1,
                .aev = {.syscall_nr = -1}};
        int sfd = -1, r = 0;
        struct termios saved_tio;
        bool raw = false;
        sigset_t mask, old;
        sigemptyset(&mask);
        sigaddset(&mask, SIGPIPE);
        if (p->handle_signals) {
                sigaddset(&mask, SIGINT);
                sigaddset(&mask, SIGTERM);
                sigaddset(&mask, SIGHUP);
                sigaddset(&mask, SIGQUIT);
        }
        if (p->egress) /* persistent: each connection to its exec; a proxy on the host starts */
                sbx_egress_run_route(p->egress, p->pid, p->route ? p->route->conn_owner : NULL,
                        p->route ? p->route->conn_end : NULL, p->route ? p->route->userdata : NULL);
        bool tty = p->tty_master >= 0;
        if (tty)
                sigaddset(&mask, SIGWINCH); /* the caller's window size follows to the pty */
        /* Signals that arrive while we wait are read from a signalfd, not handled asynchronously. */
        sigprocmask(SIG_BLOCK, &mask, &old);
        sigdelset(&mask, SIGPIPE);

        s.ep = epoll_create1(EPOLL_CLOEXEC);
        if (s.ep < 0) {
                r = sbx_error_set(e, errno, "supervise: epoll", "epoll_create1: %m");
                goto finish;
        }
        s.timer_fd = p->timer_fd ? fcntl(*p->timer_fd, F_DUPFD_CLOEXEC, 3)
                                 : timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (s.timer_fd < 0) {
                r = sbx_error_set(e, errno, "supervise: timerfd", "timerfd_create: %m");
                goto finish;
        }
        if (p->handle_signals || tty) {
                sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
                if (sfd < 0) {
                        r = sbx_error_set(e, errno, "supervise: signalfd", "signalfd: %m");
                        goto finish;
                }
        }
        for (int i = 0, *fd = &s.out_fd; i < 2; i++, fd = &s.err_fd)
                (void) (*fd >= 0 ? fcntl(*fd, F_SETFL, O_NONBLOCK) : 0);
        if ((r = add_fd(s.ep, p->not_child ? -1 : p->pidfd, EV_PIDFD)) < 0 ||
                (r = add_fd(s.ep, s.status_fd, EV_STATUS)) < 0 || (r = add_fd(s.ep, s.out_fd, EV_OUT)) < 0 ||
                (r = add_fd(s.ep, s.err_fd, EV_ERR)) < 0 || (r = add_fd(s.ep, s.timer_fd, EV_TIMER)) < 0 ||
                (r = add_fd(s.ep, sfd, EV_SIGNAL)) < 0 ||
                (r = add_fd(s.ep, p->oom_fd > 0 ? p->oom_fd : -1, EV_OOM)) < 0 ||
                (r = add_fd(s.ep, tty ? p->tty_in : -1, EV_TTYIN)) < 0 ||
                (r = add_fd(s.ep, p->on_extra ? p->extra_fd : -1, EV_EXTRA)) < 0 ||
                (r = add_fd(s.ep, s.audit_fd, EV_AUDIT)) < 0 ||
                (r = add_fd(s.ep, p->egress ? sbx_egress_run_event_fd(p->egress) : -1, EV_EGRESS)) < 0 ||
                (r = add_fd(s.ep, p->route && p->route->hold ? p->route->hold_fd : -1, EV_HOLD)) < 0) {
                r = sbx_error_set(e, r, "supervise: epoll_ctl", "epoll_ctl: %s", strerror(-r));
                goto finish;
        }
        if (p->timeout_s > 0) {
                double elapsed = (double) (sbx_now_ns() - p->start_ns) / 1e9;
                r = sv_arm_timer(s.timer_fd, p->timeout_s - elapsed);
                if (r < 0) {
                        r = sbx_error_set(e, r, "supervise: timer", "timerfd_settime: %s", strerror(-r));
                        goto finish;
                }
        }

        /* --tty with a terminal on our side: raw, so that keys reach the sandbox's terminal as
         * they are typed (its own line discipline does the rest); restored at the end. */
        raw = tty && p->tty_in >= 0 && tcgetattr(p->tty_in, &saved_tio) == 0;
        if (raw) {
                struct termios t = saved_tio;
                cfmakeraw(&t);
                (void) tcsetattr(p->tty_in, TCSANOW, &t);
        }

        bool init_gone = false;
        while (!init_gone) {
                struct epoll_event evs[8];
                int n = epoll_wait(s.ep, evs, ELEMENTSOF(evs), -1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = sbx_error_set(e, errno, "supervise: epoll_wait", "epoll_wait: %m");
                        kill_sandbox(&s);
                        break;
                }
                for (int i = 0; i < n; i++) {
                        switch (evs[i].data.u32) {
                        case EV_PIDFD:
                                init_gone = true;
                                break;
                        case EV_STATUS:
                                handle_status(&s);
                                /* not our child: its init reports its end, then closes */
                                if (p->not_child && s.status_fd < 0)
                                        init_gone = true;
                                break;
                        case EV_OUT:
                                if (s.out_fd >= 0)
                                        pump(&s, &s.out_fd, p->fwd_out, &s.fwd_out_ok, &res->stdout_bytes);
                                break;
                        case EV_ERR:
                                if (s.err_fd >= 0)
                                        pump(&s, &s.err_fd, p->fwd_err, &s.fwd_err_ok, &res->stderr_bytes);
                                break;
                        case EV_TIMER: {
                                uint64_t x;
                                if (read(s.timer_fd, &x, sizeof x) < 0 && errno != EAGAIN)
                                        break;
                                if (s.grace_armed) {
                                        kill_sandbox(&s);
                                } else if (!res->timed_out) {
                                        res->timed_out = true;
                                        res->timeout_at_ms =
                                                (int64_t) ((sbx_now_ns() - p->start_ns) / 1000000);
                                        kill_sandbox(&s);
                                }
                                break;
                        }
                        case EV_SIGNAL: {
                                struct signalfd_siginfo si;
                                while (read(sfd, &si, sizeof si) == (ssize_t) sizeof si) {
                                        if (si.ssi_signo == SIGWINCH) {
                                                struct winsize ws;
                                                if (ioctl(p->tty_in, TIOCGWINSZ, &ws) == 0 ||
                                                        ioctl(p->fwd_out, TIOCGWINSZ, &ws) == 0)
                                                        (void) ioctl(p->tty_master, TIOCSWINSZ, &ws);
                                                continue;
                                        }
                                        if (res->cancel_signal == 0)
                                                res->cancel_signal = (int) si.ssi_signo;
                                        (void) syscall(SYS_pidfd_send_signal, p->pidfd, (int) si.ssi_signo,
                                                NULL, 0);
                                        if (!s.grace_armed) {
                                                s.grace_armed = true;
                                                (void) sv_arm_timer(
                                                        s.timer_fd, p->grace_s > 0 ? p->grace_s : 2.0);
                                        }
                                }
                                break;
                        }
                        case EV_TTYIN: {
                                /* the caller's keystrokes (or piped input) to the pty; at its end,
                                 * an end-of-file character, as a terminal would send */
                                char buf[4096];
                                ssize_t k = read(p->tty_in, buf, sizeof buf);
                                if (k > 0 && s.out_fd >= 0) {
                                        bool okw = true;
                                        sv_write_all(p->tty_master, buf, (size_t) k, &okw);
                                } else if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
                                        (void) epoll_ctl(s.ep, EPOLL_CTL_DEL, p->tty_in, NULL);
                                        if (k == 0 && s.out_fd >= 0 && write(p->tty_master, "\x04", 1) < 0) {
                                                /* the terminal is gone: nothing to tell */
                                        }
                                }
                                break;
                        }
                        case EV_NOTIFY:
                                if (s.listener_fd >= 0 && (evs[i].events & EPOLLIN))
                                        handle_notify(&s);
                                if (s.listener_fd >= 0 && (evs[i].events & (EPOLLHUP | EPOLLERR)) &&
                                        !(evs[i].events & EPOLLIN)) {
                                        /* No task is left under the filter (the init is exiting):
                                         * the listener stays "ready" from now on; watching it would
                                         * spin while the kernel tears the namespaces down. */
                                        (void) epoll_ctl(s.ep, EPOLL_CTL_DEL, s.listener_fd, NULL);
                                }
                                break;
                        case EV_EXTRA:
                                p->on_extra(p->extra_userdata);
                                break;
                        case EV_EGRESS:
                                handle_egress(&s);
                                break;
                        case EV_HOLD:
                                handle_held(&s);
                                break;
                        case EV_AUDIT:
                                audit_read(&s);
                                break;
                        case EV_OOM:
                                /* The memory limit ends the sandbox, not one victim: v1 has no
                                 * oom.group, so we end the rest ourselves. */
                                res->oom = true;
                                (void) epoll_ctl(s.ep, EPOLL_CTL_DEL, p->oom_fd, NULL);
                                kill_sandbox(&s);
                                break;
                        default:
                                break;
                        }
                }
        }

        /* The init is gone, and with it (pid namespace) every process of the sandbox. Take
         * what is left in the pipes and the status socket. */
        handle_status(&s);
        while (s.out_fd >= 0 && pump(&s, &s.out_fd, p->fwd_out, &s.fwd_out_ok, &res->stdout_bytes)) {
                struct pollfd pfd = {.fd = s.out_fd, .events = POLLIN};
                if (poll(&pfd, 1, 100) <= 0)
                        break;
        }
        while (s.err_fd >= 0 && pump(&s, &s.err_fd, p->fwd_err, &s.fwd_err_ok, &res->stderr_bytes)) {
                struct pollfd pfd = {.fd = s.err_fd, .events = POLLIN};
                if (poll(&pfd, 1, 100) <= 0)
                        break;
        }
        int st;
        while (!p->not_child && wait4(p->pid, &st, 0, &res->rusage) < 0 && errno == EINTR)
                ;
        if (p->reap_orphans)
                sv_reap_orphans();
        res->reaped_ns = sbx_now_ns();
        if (s.audit_fd >= 0)
                audit_drain(&s);
        if (res->ended_ns == 0)
                res->ended_ns = res->reaped_ns;

finish:
        if (r < 0) {
                kill_sandbox(&s);
                while (!p->not_child && waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        safe_close(s.out_fd);
        safe_close(s.err_fd);
        safe_close(s.status_fd);
        safe_close(s.listener_fd);
        safe_close(s.ep);
        safe_close(s.timer_fd);
        safe_close(sfd);
        /* Signals that came in while blocked stay pending; the caller decides (it re-raises
         * nothing: the cancellation is in the result). Drain them so they do not fire now. */
        if (p->handle_signals) {
                struct timespec zero = {0};
                while (sigtimedwait(&mask, NULL, &zero) > 0)
                        ;
        }
        if (raw)
                (void) tcsetattr(p->tty_in, TCSANOW, &saved_tio);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}
