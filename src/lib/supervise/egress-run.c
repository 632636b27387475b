/* egress-run.c — see egress-run.h. */
#include "supervise/egress-run.h"

#include <dirent.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "supervise/egress-dns.h"
#include "supervise/egress-proxy.h"
#include "supervise/proxy-auth.h"

#define PENDING_MAX 64 /* refusals waiting for the loop; beyond, they are only counted */

typedef struct kept_conn {
        sbx_report_conn c;
        uint64_t end_ns;
} kept_conn;

#define REDIRECTS_MAX 256 /* connect()s redirected and not yet accepted */

typedef struct redirect {
        unsigned client_port; /* 0: free */
        unsigned port;
        char host[256];
        uint64_t at_ns; /* registered; a slot not taken within REDIRECT_NS is void */
} redirect;
#define REDIRECT_NS (10ULL * 1000000000ULL)

struct sbx_egress_run {
        sbx_egress *rules;
        sbx_egress_proxy *proxy;
        sbx_egress_dns *dns;
        redirect redirects[REDIRECTS_MAX];
        size_t redirect_next;
        int efd;
        pthread_mutex_t lock;
        sbx_egress_refusal pending[PENDING_MAX];
        size_t n_pending;
        uint64_t refused, refused_lost;
        kept_conn *conns;
        size_t n_conns;
        uint64_t allowed, dropped, up, down;
        int init_pid;
        /* network.services: their proxies, and what went through them (a report used as the
         * store: its services only, at_ms absolute until to_report) */
        struct {
                sbx_service_target t;
                unsigned port;
                sbx_egress_proxy *proxy;
        } svc[SBX_REPORT_MAX_SERVICES];
        size_t n_svc;
        char **svc_strv; /* the strings t points into */
        sbx_report *svc_store;
        sbx_egress_owner_fn owner;
        sbx_egress_sink_fn sink;
        void *sink_ud;
        /* the proxy on the host's loopback (the landlock backend): its listening socket until it
         * starts (at the route, when the init's pid is known), its port and credential */
        int host_fd;
        unsigned host_port;
        char pass[SBX_PROXY_SECRET_LEN + 1];
        char addr[24]; /* where the proxy listens, as the report names it */
};

/* The inode of the sandbox's socket connected from 127.0.0.1:port to 127.0.0.1:server_port (the
 * proxy's, or a service's), from the sandbox's own TCP table. 0 when not found. */
static unsigned long client_inode(int init_pid, unsigned port, unsigned server_port) {
        unsigned long found = 0;
        /* an IPv4 socket, or an IPv6 one connected by its v4-mapped address (::ffff:127.0.0.1) */
        for (int v6 = 0; v6 < 2 && !found; v6++) {
                char path[64], want[64], proxy[64];
                const char *pre = v6 ? "0000000000000000FFFF0000" : "";
                snprintf(path, sizeof path, "/proc/%d/net/tcp%s", init_pid, v6 ? "6" : "");
                snprintf(want, sizeof want, "%s0100007F:%04X", pre, port);
                snprintf(proxy, sizeof proxy, "%s0100007F:%04X", pre, server_port);
                FILE *f = fopen(path, "re");
                if (!f)
                        continue;
                char line[512], local[64], rem[64];
                unsigned long ino = 0;
                while (!found && fgets(line, sizeof line, f))
                        if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %*s %*s %lu", local, rem, &ino) ==
                                        3 &&
                                streq(local, want) && streq(rem, proxy))
                                found = ino;
                fclose(f);
        }
        return found;
}

static bool holds_socket(int pid, const char *link) {
        char path[64], buf[64];
        snprintf(path, sizeof path, "/proc/%d/fd", pid);
        DIR *d = opendir(path);
        if (!d)
                return false;
        bool yes = false;
        for (struct dirent *de; !yes && (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                ssize_t n = readlinkat(dirfd(d), de->d_name, buf, sizeof buf - 1);
                if (n > 0) {
                        buf[n] = 0;
                        yes = streq(buf, link);
                }
        }
        closedir(d);
        return yes;
}

#define WALK_MAX 4096

/* Who holds the socket: a walk of the init's descendants (breadth first, by the children lists
 * of each of their threads). */
static uint64_t identify(void *userdata, int fd) {
        sbx_egress_run *r = userdata;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *) &ss, &sl) == 0 && ss.ss_family == AF_UNIX) {
                uint32_t h[2]; /* SBX_EGRESS_OWNER_MAGIC and the exec's pid (egress-run.h) */
                struct timeval tv = {.tv_sec = 5};
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                ssize_t k = recv(fd, h, sizeof h, MSG_WAITALL);
                tv.tv_sec = 0;
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                if (k != (ssize_t) sizeof h || h[0] != SBX_EGRESS_OWNER_MAGIC || h[1] > INT32_MAX)
                        return 0;
                return r->owner ? r->owner(r->sink_ud, (int) h[1]) : (uint64_t) h[1];
        }
        struct sockaddr_in peer;
        socklen_t len = sizeof peer;
        if (r->init_pid <= 0 || getpeername(fd, (struct sockaddr *) &peer, &len) < 0 ||
                peer.sin_family != AF_INET)
                return 0;
        struct sockaddr_in me;
        socklen_t ml = sizeof me;
        if (getsockname(fd, (struct sockaddr *) &me, &ml) < 0 || me.sin_family != AF_INET)
                return 0;
        unsigned long ino = client_inode(r->init_pid, ntohs(peer.sin_port), ntohs(me.sin_port));
        if (!ino)
                return 0;
        char link[48];
        snprintf(link, sizeof link, "socket:[%lu]", ino);
        int *q = malloc(WALK_MAX * sizeof *q), found = 0;
        if (!q)
                return 0;
        size_t head = 0, tail = 0;
        q[tail++] = r->init_pid;
        while (head < tail && !found) {
                int pid = q[head++];
                if (pid != r->init_pid && holds_socket(pid, link)) {
                        found = pid;
                        break;
                }
                char path[64];
                snprintf(path, sizeof path, "/proc/%d/task", pid);
                DIR *d = opendir(path);
                for (struct dirent *de; d && (de = readdir(d));) {
                        if (de->d_name[0] == '.')
                                continue;
                        char cp[384];
                        snprintf(cp, sizeof cp, "/proc/%d/task/%s/children", pid, de->d_name);
                        FILE *f = fopen(cp, "re");
                        int c;
                        while (f && tail < WALK_MAX && fscanf(f, "%d", &c) == 1)
                                q[tail++] = c;
                        if (f)
                                fclose(f);
                }
                if (d)
                        closedir(d);
        }
        free(q);
        return r->owner ? r->owner(r->sink_ud, found) : (uint64_t) found;
}

size_t sbx_egress_refusal_details(const sbx_egress_refusal *f, sbx_detail d[SBX_EGRESS_DETAILS]) {
        size_t n = 0;
        d[n++] = (sbx_detail){.key = "host", .str = (char *) f->host};
        d[n++] = (sbx_detail){.key = "port", .num = f->port};
        d[n++] = (sbx_detail){.key = "via", .str = (char *) "proxy"};
        d[n++] = (sbx_detail){.key = "protocol", .str = (char *) f->via};
        d[n++] = (sbx_detail){.key = "reason", .str = (char *) sbx_egress_reason_to_string(f->reason)};
        d[n++] = (sbx_detail){.key = "rule", .str = (char *) f->rule};
        return n;
}

static bool grow(sbx_egress_run *r) {
        if (r->n_conns % 64 != 0)
                return true;
        kept_conn *n = reallocarray(r->conns, r->n_conns + 64, sizeof *n);
        if (!n)
                return false;
        r->conns = n;
        return true;
}

static void on_event(void *userdata, const sbx_egress_event *ev) {
        sbx_egress_run *r = userdata;
        uint64_t now = sbx_now_ns();
        bool refusal = !ev->allowed && ev->reason != SBX_EGRESS_UNRESOLVED;
        sbx_report_conn c = {.host = (char *) (ev->host ? ev->host : ""),
                .port = ev->port,
                .via = ev->via,
                .rule = (char *) (ev->rule ? ev->rule : ""),
                .bytes_up = ev->bytes_up,
                .bytes_down = ev->bytes_down,
                .ms = (int64_t) ev->ms,
                .unreachable = ev->unreachable || !ev->allowed};
        sbx_egress_refusal f = {.port = ev->port,
                .via = ev->via,
                .reason = ev->reason,
                .at_ns = now,
                .recorded = r->sink != NULL};
        snprintf(f.host, sizeof f.host, "%s", c.host);
        snprintf(f.rule, sizeof f.rule, "%s", c.rule);

        if (ev->service) {
                sbx_report_request rq = {.service = ev->service,
                        .method = (char *) ev->method,
                        .path = (char *) ev->path,
                        .status = ev->status,
                        .bytes_up = ev->bytes_up,
                        .bytes_down = ev->bytes_down,
                        .at_ms = (int64_t) (now / 1000000),
                        .ms = (int64_t) ev->ms};
                if (r->sink)
                        r->sink(r->sink_ud, ev->owner, NULL, NULL, &rq);
                else {
                        pthread_mutex_lock(&r->lock);
                        (void) sbx_report_add_request(r->svc_store, &rq);
                        pthread_mutex_unlock(&r->lock);
                }
                return;
        }
        /* the sink first: the connection is still in flight for settle() until we return */
        if (r->sink)
                r->sink(r->sink_ud, ev->owner, refusal ? NULL : &c, refusal ? &f : NULL, NULL);

        pthread_mutex_lock(&r->lock);
        if (refusal) {
                r->refused++;
                if (r->n_pending < PENDING_MAX)
                        r->pending[r->n_pending++] = f;
                else
                        r->refused_lost++;
        } else {
                /* allowed (ended), or a name with no address: a connection that went nowhere */
                r->allowed++;
                r->up += ev->bytes_up;
                r->down += ev->bytes_down;
                if (r->sink)
                        ;
                else if (r->n_conns >= SBX_REPORT_MAX_CONNS)
                        r->dropped++;
                else if (!grow(r))
                        r->dropped++;
                else {
                        c.host = strdup(c.host);
                        c.rule = strdup(c.rule);
                        if (!c.host || !c.rule) {
                                free(c.host);
                                free(c.rule);
                                r->dropped++;
                        } else
                                r->conns[r->n_conns++] = (kept_conn){.c = c, .end_ns = now};
                }
        }
        pthread_mutex_unlock(&r->lock);
        if (refusal) {
                uint64_t one = 1;
                (void) !write(r->efd, &one, sizeof one);
        }
}

int sbx_egress_run_new(
        char *const *allow, char *const *deny, char *const *hosts, sbx_egress_run **ret, sbx_error *e) {
        sbx_egress_run *r = calloc(1, sizeof *r);
        if (!r)
                return sbx_error_set(e, ENOMEM, "egress", "out of memory");
        r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->efd < 0) {
                int k = errno;
                free(r);
                return sbx_error_set(e, k, "egress", "eventfd: %s", strerror(k));
        }
        pthread_mutex_init(&r->lock, NULL);
        r->host_fd = -EBADF;
        snprintf(r->addr, sizeof r->addr, "127.0.0.1:%u", SBX_EGRESS_PROXY_PORT);
        int k = sbx_egress_dns_new(&r->dns);
        if (k < 0) {
                sbx_egress_run_free(r);
                return sbx_error_set(e, -k, "egress", "out of memory");
        }
        if (!(r->svc_store = calloc(1, sizeof *r->svc_store))) {
                sbx_egress_run_free(r);
                return sbx_error_set(e, ENOMEM, "egress", "out of memory");
        }
        k = sbx_egress_new(allow, deny, hosts, NULL, NULL, &r->rules, e);
        if (k < 0) {
                sbx_egress_run_free(r);
                return k;
        }
        *ret = r;
        return 0;
}

int sbx_egress_run_set_rules(sbx_egress_run *r, char *const *allow, char *const *deny, sbx_error *e) {
        return sbx_egress_set_rules(r->rules, allow, deny, e);
}

void sbx_egress_run_stop(sbx_egress_run *r) {
        for (size_t i = 0; r && i < r->n_svc; i++)
                r->svc[i].proxy = sbx_egress_proxy_stop(r->svc[i].proxy);
        if (r && r->proxy)
                r->proxy = sbx_egress_proxy_stop(r->proxy);
        if (r)
                sbx_egress_dns_stop(r->dns);
}

sbx_egress_run *sbx_egress_run_free(sbx_egress_run *r) {
        if (!r)
                return NULL;
        sbx_egress_run_stop(r);
        sbx_egress_dns_free(r->dns);
        sbx_report_free(r->svc_store);
        strv_free(r->svc_strv);
        for (size_t i = 0; i < r->n_conns; i++) {
                free(r->conns[i].c.host);
                free(r->conns[i].c.rule);
        }
        free(r->conns);
        sbx_egress_free(r->rules);
        if (r->efd >= 0)
                close(r->efd);
        if (r->host_fd >= 0)
                close(r->host_fd);
        explicit_bzero(r->pass, sizeof r->pass);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
}

void sbx_egress_run_route(sbx_egress_run *r, int init_pid, sbx_egress_owner_fn owner,
        sbx_egress_sink_fn sink, void *userdata) {
        if (owner && sink) {
                r->init_pid = init_pid;
                r->owner = owner;
                r->sink = sink;
                r->sink_ud = userdata;
        }
        if (r->host_fd >= 0 && !r->proxy) {
                /* the hooks are read by the proxy's threads: set before the first of them */
                sbx_egress_proxy_hooks hooks = {.identify = r->init_pid > 0 ? identify : NULL,
                        .user = SBX_PROXY_USER,
                        .pass = r->pass};
                int fd = r->host_fd;
                r->host_fd = -EBADF;
                (void) sbx_egress_proxy_start(fd, r->rules, on_event, &hooks, r, &r->proxy);
        }
}

int sbx_egress_run_on_host(sbx_egress_run *r, int listen_fd, const char *pass) {
        struct sockaddr_in a;
        socklen_t al = sizeof a;
        if (r->host_fd >= 0 || r->proxy || strlen(pass) != SBX_PROXY_SECRET_LEN) {
                close(listen_fd);
                return -EINVAL;
        }
        int k = getsockname(listen_fd, (struct sockaddr *) &a, &al) < 0 ? -errno : 0;
        if (k == 0 &&
                (a.sin_family != AF_INET || a.sin_addr.s_addr != htonl(INADDR_LOOPBACK) || a.sin_port == 0))
                k = -EINVAL; /* the host's loopback and a port of its own, nothing wider */
        if (k < 0) {
                close(listen_fd);
                return k;
        }
        r->host_fd = listen_fd;
        r->host_port = ntohs(a.sin_port);
        memcpy(r->pass, pass, SBX_PROXY_SECRET_LEN + 1);
        snprintf(r->addr, sizeof r->addr, "127.0.0.1:%u", r->host_port);
        return (int) r->host_port;
}

const char *sbx_egress_run_address(const sbx_egress_run *r) {
        return r->addr;
}

bool sbx_egress_run_way_out(const sbx_egress_run *r, uint32_t addr, unsigned port) {
        if (!r || addr != INADDR_LOOPBACK)
                return false;
        if (r->host_port) /* the host's loopback: connected by the supervisor (on_host_connect) */
                return false;
        return port == SBX_EGRESS_PROXY_PORT || port == SBX_EGRESS_DNS_PORT ||
               sbx_egress_run_service_port(r, port);
}

void sbx_egress_run_settle(sbx_egress_run *r, uint64_t owner, int timeout_ms) {
        if (!r || !owner)
                return;
        if (r->proxy)
                (void) sbx_egress_proxy_settle(r->proxy, owner, timeout_ms);
        for (size_t i = 0; i < r->n_svc; i++)
                if (r->svc[i].proxy)
                        (void) sbx_egress_proxy_settle(r->svc[i].proxy, owner, timeout_ms);
}

int sbx_egress_run_event_fd(const sbx_egress_run *r) {
        return r->efd;
}

bool sbx_egress_run_started(const sbx_egress_run *r) {
        return r && r->proxy;
}

static bool transparent(void *userdata, int fd, char *host, size_t size, unsigned *port) {
        sbx_egress_run *r = userdata;
        struct sockaddr_in peer;
        socklen_t len = sizeof peer;
        if (getpeername(fd, (struct sockaddr *) &peer, &len) < 0 || peer.sin_family != AF_INET)
                return false;
        unsigned cp = ntohs(peer.sin_port);
        bool found = false;
        pthread_mutex_lock(&r->lock);
        uint64_t now = sbx_now_ns();
        for (size_t i = 0; i < REDIRECTS_MAX && !found; i++)
                if (r->redirects[i].client_port == cp && now - r->redirects[i].at_ns < REDIRECT_NS) {
                        found = true;
                        snprintf(host, size, "%s", r->redirects[i].host);
                        *port = r->redirects[i].port;
                        r->redirects[i].client_port = 0;
                }
        pthread_mutex_unlock(&r->lock);
        return found;
}

static bool unmap(void *userdata, const char *addr, char *name, size_t size) {
        sbx_egress_run *r = userdata;
        struct in_addr a;
        return inet_pton(AF_INET, addr, &a) == 1 &&
               sbx_egress_dns_unmap(r->dns, ntohl(a.s_addr), name, size);
}

int sbx_egress_run_start(sbx_egress_run *r, int listen_fd) {
        if (r->proxy) {
                close(listen_fd);
                return -EALREADY;
        }
        sbx_egress_proxy_hooks hooks = {
                .identify = r->init_pid > 0 ? identify : NULL, .transparent = transparent, .unmap = unmap};
        return sbx_egress_proxy_start(listen_fd, r->rules, on_event, &hooks, r, &r->proxy);
}

void sbx_egress_run_count_refused(sbx_egress_run *r) {
        pthread_mutex_lock(&r->lock);
        r->refused++;
        pthread_mutex_unlock(&r->lock);
}

int sbx_egress_run_services(sbx_egress_run *r, char *const *services, sbx_error *e) {
        STRV_FOREACH(sv, services) {
                if (r->n_svc >= SBX_REPORT_MAX_SERVICES)
                        return sbx_error_set(
                                e, E2BIG, "services", "more than %d services", SBX_REPORT_MAX_SERVICES);
                char *copy = strdup(*sv);
                if (!copy || strv_consume(&r->svc_strv, copy) < 0)
                        return sbx_error_set(e, ENOMEM, "services", "out of memory");
                char *f[5] = {copy};
                for (int i = 1; i < 5; i++) {
                        char *t = f[i - 1] ? strchr(f[i - 1], '\t') : NULL;
                        if (t)
                                *t = 0;
                        f[i] = t ? t + 1 : NULL;
                }
                if (!f[4])
                        return sbx_error_set(e, EINVAL, "services", "a malformed service entry");
                r->svc[r->n_svc].t =
                        (sbx_service_target){.name = f[0], .target = f[1], .tcp = streq(f[4], "tcp")};
                r->svc[r->n_svc].port = (unsigned) strtoul(f[2], NULL, 10);
                if (sbx_report_add_service(r->svc_store, f[0], f[1], streq(f[4], "tcp")) < 0)
                        return sbx_error_set(e, ENOMEM, "services", "out of memory");
                r->n_svc++;
        }
        return 0;
}

bool sbx_egress_run_service_port(const sbx_egress_run *r, unsigned port) {
        for (size_t i = 0; r && i < r->n_svc; i++)
                if (r->svc[i].port == port)
                        return true;
        return false;
}

int sbx_egress_run_serve(sbx_egress_run *r, int which, int fd) {
        if (which == 1)
                return sbx_egress_dns_start(r->dns, fd);
        if (which == 0)
                return sbx_egress_run_start(r, fd);
        size_t i = (size_t) which - 2;
        if (which < 2 || i >= r->n_svc || r->svc[i].proxy) {
                close(fd);
                return which < 2 || i >= r->n_svc ? -EINVAL : -EALREADY;
        }
        sbx_egress_proxy_hooks hooks = {.identify = r->init_pid > 0 ? identify : NULL};
        return sbx_egress_service_start(fd, &r->svc[i].t, on_event, &hooks, r, &r->svc[i].proxy);
}

void sbx_egress_run_check(
        sbx_egress_run *r, const char *addr, unsigned port, char *host, size_t size, sbx_egress_verdict *v) {
        snprintf(host, size, "%s", addr);
        (void) unmap(r, addr, host, size);
        sbx_egress_match(r->rules, host, port, v);
}

int sbx_egress_run_redirect(sbx_egress_run *r, int fd, const char *host, unsigned port) {
        struct sockaddr_storage ss = {0};
        socklen_t sl;
        int domain = 0;
        socklen_t dl = sizeof domain;
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0)
                return -errno;
        /* bound first, so that the proxy knows where it goes before it can accept it */
        if (domain == AF_INET) {
                struct sockaddr_in *a = (struct sockaddr_in *) &ss;
                a->sin_family = AF_INET;
                a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                sl = sizeof *a;
        } else if (domain == AF_INET6) {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *) &ss;
                a->sin6_family = AF_INET6;
                inet_pton(AF_INET6, "::ffff:127.0.0.1", &a->sin6_addr);
                sl = sizeof *a;
        } else
                return -EAFNOSUPPORT;
        if (bind(fd, (struct sockaddr *) &ss, sl) < 0)
                return -errno;
        struct sockaddr_storage me;
        socklen_t ml = sizeof me;
        if (getsockname(fd, (struct sockaddr *) &me, &ml) < 0)
                return -errno;
        unsigned cp = ntohs(domain == AF_INET ? ((struct sockaddr_in *) &me)->sin_port
                                              : ((struct sockaddr_in6 *) &me)->sin6_port);
        pthread_mutex_lock(&r->lock);
        redirect *slot = NULL;
        uint64_t now = sbx_now_ns();
        for (size_t i = 0; i < REDIRECTS_MAX && !slot; i++)
                if (r->redirects[i].client_port == 0 || now - r->redirects[i].at_ns >= REDIRECT_NS)
                        slot = &r->redirects[i];
        if (!slot) /* all taken by connects never accepted: the oldest goes */
                slot = &r->redirects[r->redirect_next++ % REDIRECTS_MAX];
        slot->client_port = cp;
        slot->at_ns = now;
        slot->port = port;
        snprintf(slot->host, sizeof slot->host, "%s", host);
        pthread_mutex_unlock(&r->lock);
        if (domain == AF_INET)
                ((struct sockaddr_in *) &ss)->sin_port = htons(SBX_EGRESS_PROXY_PORT);
        else
                ((struct sockaddr_in6 *) &ss)->sin6_port = htons(SBX_EGRESS_PROXY_PORT);
        int err = 0;
        if (connect(fd, (struct sockaddr *) &ss, sl) < 0) {
                err = errno;
                if (err == EINPROGRESS) {
                        /* a non-blocking socket: loopback completes at once, or not at all */
                        struct pollfd pf = {.fd = fd, .events = POLLOUT};
                        socklen_t el = sizeof err;
                        if (poll(&pf, 1, 1000) <= 0)
                                err = ETIMEDOUT;
                        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                                err = errno;
                }
        }
        if (err) { /* its slot goes: no later connection from that port is taken for it */
                pthread_mutex_lock(&r->lock);
                if (slot->client_port == cp)
                        slot->client_port = 0;
                pthread_mutex_unlock(&r->lock);
                return -err;
        }
        return 0;
}

size_t sbx_egress_run_take(sbx_egress_run *r, sbx_egress_refusal *out, size_t max) {
        uint64_t v;
        (void) !read(r->efd, &v, sizeof v);
        pthread_mutex_lock(&r->lock);
        size_t n = MIN(max, r->n_pending);
        memcpy(out, r->pending, n * sizeof *out);
        memmove(r->pending, r->pending + n, (r->n_pending - n) * sizeof *out);
        r->n_pending -= n;
        bool more = r->n_pending > 0;
        pthread_mutex_unlock(&r->lock);
        if (more) {
                uint64_t one = 1;
                (void) !write(r->efd, &one, sizeof one);
        }
        return n;
}

int sbx_egress_run_to_report(sbx_egress_run *r, sbx_report *rep, uint64_t start_ns) {
        sbx_egress_run_stop(r);
        /* refusals the loop did not take before the sandbox ended: recorded here */
        sbx_egress_refusal f[16];
        for (size_t n; (n = sbx_egress_run_take(r, f, ELEMENTSOF(f))) > 0;)
                for (size_t i = 0; i < n; i++) {
                        if (f[i].recorded)
                                continue;
                        sbx_detail d[SBX_EGRESS_DETAILS];
                        size_t nd = sbx_egress_refusal_details(&f[i], d);
                        int64_t at =
                                f[i].at_ns > start_ns ? (int64_t) ((f[i].at_ns - start_ns) / 1000000) : 0;
                        (void) sbx_report_add_violation(
                                rep, SBX_VIOLATION_NETWORK_ACCESS, "denied", at, NULL, d, nd);
                }
        sbx_report_set_egress_proxy(rep, r->addr);
        int k = 0;
        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < r->n_conns && k >= 0; i++) {
                sbx_report_conn c = r->conns[i].c;
                c.at_ms = r->conns[i].end_ns > start_ns
                                  ? (int64_t) ((r->conns[i].end_ns - start_ns) / 1000000)
                                  : 0;
                k = sbx_report_add_conn(rep, &c);
        }
        rep->egress_allowed = r->allowed; /* all of them: also those kept elsewhere (the sink) */
        rep->egress_bytes_up = r->up;
        rep->egress_bytes_down = r->down;
        rep->egress_conns_dropped += r->dropped;
        rep->egress_refused = r->refused;
        /* the services: what went through them (a persistent sandbox's went to its execs) */
        for (size_t i = 0; i < r->svc_store->n_services && k >= 0; i++) {
                const sbx_report_service *sv = &r->svc_store->services[i];
                sbx_report_service *dst = NULL;
                for (size_t j = 0; j < rep->n_services && !dst; j++)
                        if (streq(rep->services[j].name, sv->name))
                                dst = &rep->services[j];
                if (!dst) {
                        k = sbx_report_add_service(rep, sv->name, sv->target, sv->tcp);
                        dst = k >= 0 ? &rep->services[rep->n_services - 1] : NULL;
                }
                for (size_t q = 0; q < sv->n_requests && k >= 0; q++) {
                        sbx_report_request rq = sv->requests[q];
                        int64_t t0 = (int64_t) (start_ns / 1000000);
                        rq.at_ms = rq.at_ms > t0 ? rq.at_ms - t0 : 0;
                        k = sbx_report_add_request(rep, &rq);
                }
                if (dst) { /* what was only counted, past the kept ones */
                        uint64_t up = 0, down = 0;
                        for (size_t q = 0; q < sv->n_requests; q++)
                                up += sv->requests[q].bytes_up, down += sv->requests[q].bytes_down;
                        dst->dropped += sv->dropped;
                        dst->count += sv->count - sv->n_requests;
                        dst->bytes_up += sv->bytes_up - up;
                        dst->bytes_down += sv->bytes_down - down;
                }
        }
        pthread_mutex_unlock(&r->lock);
        return k;
}

/* The process's socket, taken from it while its notification is pending: a TCP one only. */
static int take_socket(int pid, int fd_num, int listener_fd, uint64_t notif_id) {
        /* the notification names the calling thread: its process (the fd table is shared) */
        int tgid = pid;
        char sp[64], line[128];
        snprintf(sp, sizeof sp, "/proc/%d/status", pid);
        FILE *st = fopen(sp, "re");
        while (st && fgets(line, sizeof line, st))
                if (sscanf(line, "Tgid: %d", &tgid) == 1)
                        break;
        if (st)
                fclose(st);
        int pidfd = (int) syscall(SYS_pidfd_open, (pid_t) tgid, 0);
        int fd = pidfd >= 0 ? (int) syscall(SYS_pidfd_getfd, pidfd, fd_num, 0) : -1;
        if (pidfd >= 0)
                close(pidfd);
        uint64_t id = notif_id;
        int type = 0;
        socklen_t tl = sizeof type;
        if (fd < 0 || ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0 ||
                getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        return fd;
}

/* The host's loopback (the landlock backend): a connect() to the proxy's port is made here, on
 * the process's own socket, with the address read once — letting the call continue would have
 * the kernel read it again, and another thread could have changed it by then to any address
 * with that port (Landlock's rule names a port, not an address). Everything else is not ours:
 * the seccomp listener refuses it (sbx_egress_run_way_out is false there). */
static int on_host_connect(sbx_egress_run *r, const struct sockaddr *sa, size_t len, int pid, int fd_num,
        int listener_fd, uint64_t notif_id, int *err) {
        const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
        if (sa->sa_family != AF_INET || len < sizeof *in || in->sin_addr.s_addr != htonl(INADDR_LOOPBACK) ||
                ntohs(in->sin_port) != r->host_port)
                return 0;
        int fd = take_socket(pid, fd_num, listener_fd, notif_id);
        if (fd < 0)
                return 0;
        struct sockaddr_in to = {.sin_family = AF_INET,
                .sin_port = htons((uint16_t) r->host_port),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        *err = 0;
        if (connect(fd, (struct sockaddr *) &to, sizeof to) < 0) {
                *err = -errno;
                if (*err == -EINPROGRESS) {
                        /* a non-blocking socket: loopback completes at once, or not at all */
                        struct pollfd pf = {.fd = fd, .events = POLLOUT};
                        int e = 0;
                        socklen_t el = sizeof e;
                        if (poll(&pf, 1, 1000) <= 0)
                                e = ETIMEDOUT;
                        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
                                e = errno;
                        *err = -e;
                }
        }
        close(fd);
        return 1;
}

int sbx_egress_run_transparent(sbx_egress_run *r, const struct sockaddr *sa, size_t len, int pid, int fd_num,
        int listener_fd, uint64_t notif_id, sbx_egress_refusal *refused, int *err) {
        char addr[INET6_ADDRSTRLEN], host[256];
        unsigned port;
        if (r->host_port)
                return on_host_connect(r, sa, len, pid, fd_num, listener_fd, notif_id, err);
        if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
                const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
                if ((ntohl(in->sin_addr.s_addr) >> 24) == 127 || in->sin_addr.s_addr == INADDR_ANY)
                        return 0;
                inet_ntop(AF_INET, &in->sin_addr, addr, sizeof addr);
                port = ntohs(in->sin_port);
        } else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
                if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
                        return 0;
                if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
                        if (in6->sin6_addr.s6_addr[12] == 127)
                                return 0;
                        inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], addr, sizeof addr);
                } else
                        inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof addr);
                port = ntohs(in6->sin6_port);
        } else
                return 0;
        /* the socket itself: a TCP one only (a datagram's "connect" leads nowhere: refused as
         * before), and still the caller's (the notification still pending) */
        int fd = take_socket(pid, fd_num, listener_fd, notif_id);
        if (fd < 0)
                return 0;
        sbx_egress_verdict v;
        sbx_egress_run_check(r, addr, port, host, sizeof host, &v);
        if (v.reason != SBX_EGRESS_ALLOWED) {
                close(fd);
                *refused = (sbx_egress_refusal){
                        .port = port, .via = "transparent", .reason = v.reason, .at_ns = sbx_now_ns()};
                snprintf(refused->host, sizeof refused->host, "%s", host);
                snprintf(refused->rule, sizeof refused->rule, "%s", v.rule);
                return -1;
        }
        *err = sbx_egress_run_redirect(r, fd, host, port);
        close(fd);
        return 1;
}
