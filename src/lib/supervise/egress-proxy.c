/* egress-proxy.c — see egress-proxy.h. One thread accepts; each connection has a thread of its
 * own (blocking reads with a deadline for the request, then a splice both ways). Stopping shuts
 * the listening socket and every connection's sockets down, which ends their threads; the
 * proxy waits for them by a count under its lock. */
#include "supervise/egress-proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "basic/io.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "supervise/proxy-auth.h"
#include "supervise/proxy-proto.h"
#include "supervise/service-http.h"

#define REQUEST_MS 30000 /* the request must be whole by then */
#define CONNECT_MS 10000 /* per address */
#define CONNS_MAX 256

typedef struct conn {
        struct conn *next;
        sbx_egress_proxy *p;
        int fd, up; /* the sandbox's side, the target's */
        uint64_t owner; /* whose (identify), 0 unknown */
} conn;

struct sbx_egress_proxy {
        int lfd;
        const sbx_egress *rules;
        sbx_egress_event_fn fn;
        sbx_egress_proxy_hooks hooks;
        void *ud;
        /* a host service's proxy: svc_name NULL for the egress proxy */
        char *svc_name, *svc_target;
        bool svc_tcp;
        pthread_t acceptor;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        conn *conns;
        unsigned n;
        bool stopping;
};

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read until want(buf, n) says the request is whole (> 0), malformed (< 0), or the deadline. */
static ssize_t read_until(int fd, char *buf, size_t size, size_t have, int64_t deadline) {
        for (;;) {
                int left = (int) (deadline - now_ms());
                struct pollfd pf = {.fd = fd, .events = POLLIN};
                if (left <= 0 || poll(&pf, 1, left) <= 0)
                        return -ETIMEDOUT;
                ssize_t k = read(fd, buf + have, size - have);
                if (k < 0 && errno == EINTR)
                        continue;
                return k < 0 ? -errno : k;
        }
}

/* Connect to the first address of v that answers. The socket, or -errno. */
static int dial(const sbx_egress_verdict *v, unsigned port) {
        int last = -EHOSTUNREACH;
        for (size_t i = 0; i < v->n_addrs; i++) {
                struct sockaddr_storage ss = {0};
                socklen_t sl;
                if (v->addrs[i].family == AF_INET) {
                        struct sockaddr_in *a = (struct sockaddr_in *) &ss;
                        a->sin_family = AF_INET;
                        a->sin_port = htons((uint16_t) port);
                        memcpy(&a->sin_addr, v->addrs[i].addr, 4);
                        sl = sizeof *a;
                } else {
                        struct sockaddr_in6 *a = (struct sockaddr_in6 *) &ss;
                        a->sin6_family = AF_INET6;
                        a->sin6_port = htons((uint16_t) port);
                        memcpy(&a->sin6_addr, v->addrs[i].addr, 16);
                        sl = sizeof *a;
                }
                int s = socket(v->addrs[i].family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (s < 0) {
                        last = -errno;
                        continue;
                }
                if (connect(s, (struct sockaddr *) &ss, sl) < 0 && errno != EINPROGRESS) {
                        last = -errno;
                        close(s);
                        continue;
                }
                struct pollfd pf = {.fd = s, .events = POLLOUT};
                int err = 0;
                socklen_t el = sizeof err;
                if (poll(&pf, 1, CONNECT_MS) <= 0)
                        err = ETIMEDOUT;
                else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                        err = errno;
                if (err) {
                        last = -err;
                        close(s);
                        continue;
                }
                (void) fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
                return s;
        }
        return last;
}

static void http_answer(int fd, const char *status, const sbx_egress_verdict *v, const char *msg) {
        char head[1024];
        int bl = (int) strlen(msg) + 1;
        int n = snprintf(head, sizeof head,
                "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: "
                "close\r\n%s%s%s\r\n",
                status, bl, v ? "X-Sandboxer-Refused: " : "",
                v ? sbx_egress_reason_to_string(v->reason) : "", v ? "\r\n" : "");
        if (n > 0 && (size_t) n < sizeof head) {
                (void) sbx_write_all(fd, head, (size_t) n);
                (void) sbx_write_all(fd, msg, strlen(msg));
                (void) sbx_write_all(fd, "\n", 1);
        }
}

static void report(conn *c, bool allowed, const char *host, unsigned port, const char *via,
        const sbx_egress_verdict *v, uint64_t up, uint64_t down, int64_t t0, bool unreachable) {
        if (!c->p->fn)
                return;
        sbx_egress_event ev = {.allowed = allowed,
                .host = host,
                .port = port,
                .via = via,
                .reason = v ? v->reason : SBX_EGRESS_MALFORMED_HOST,
                .rule = v ? v->rule : "",
                .why = v ? v->why : "",
                .bytes_up = up,
                .bytes_down = down,
                .ms = (double) (now_ms() - t0),
                .unreachable = unreachable,
                .owner = c->owner};
        c->p->fn(c->p->ud, &ev);
}

/* The judge, with an address the sandbox's own resolver handed out taken back to its name (host
 * is rewritten in place: it is what the report names). */
static void judge(conn *c, char *host, size_t size, unsigned port, sbx_egress_verdict *v) {
        char name[256];
        if (c->p->hooks.unmap && c->p->hooks.unmap(c->p->ud, host, name, sizeof name))
                snprintf(host, size, "%s", name);
        sbx_egress_judge(c->p->rules, host, port, v);
}

/* The target's socket, known to stop() from now on; false (and closed) when the proxy is already
 * stopping: stop() shut down the connections it knew, and this one came too late for that. */
static bool keep_up(conn *c, int up) {
        pthread_mutex_lock(&c->p->lock);
        bool stopping = c->p->stopping;
        if (!stopping)
                c->up = up;
        pthread_mutex_unlock(&c->p->lock);
        if (stopping)
                close(up);
        return !stopping;
}

static bool is_address(const char *host) {
        struct in_addr a;
        return strchr(host, ':') || inet_pton(AF_INET, host, &a) == 1;
}

/* A tunnel, once its target is allowed and dialled: the client's first bytes, when they are a TLS
 * ClientHello, name the server (SNI), and a name that is not the one allowed must be allowed on
 * its own — no fronting an allowed name for another — else the tunnel is refused (recorded as
 * protocol "tls") before a byte reaches the server. A server that speaks first, or bytes that are
 * not TLS, go through as they are. pre: client bytes read already (past a CONNECT's head). */
static void tunnel(conn *c, int up, const char *host, unsigned port, const char *via,
        const sbx_egress_verdict *v, const char *pre, size_t npre, int64_t t0) {
        unsigned char first[16384 + 5];
        size_t n = 0;
        bool check = !is_address(host);
        char sni[256];
        if (check && npre > sizeof first) {
                check = false;
                if ((unsigned char) pre[0] == 22) { /* a first flight too large to judge */
                        sbx_egress_verdict sv = {.reason = SBX_EGRESS_MALFORMED_HOST};
                        snprintf(sv.why, sizeof sv.why, "a TLS ClientHello too large to judge");
                        report(c, false, host, port, "tls", &sv, 0, 0, t0, false);
                        return;
                }
        }
        if (check) {
                if (npre)
                        memcpy(first, pre, npre);
                n = npre;
        }
        /* until the client's first bytes are judged — or the server speaks first: then it is no
         * TLS client — nothing goes on; no deadline (stop() ends a connection that idles) */
        while (check) {
                int k = n ? sbx_tls_sni(first, n, sni) : 0;
                if (k == 1 && strcasecmp(sni, host) != 0) {
                        sbx_egress_verdict sv;
                        sbx_egress_match(c->p->rules, sni, port, &sv);
                        if (sv.reason != SBX_EGRESS_ALLOWED) {
                                snprintf(sv.why, sizeof sv.why,
                                        "the TLS server name %s is not allowed (%s:%u was)", sni, host,
                                        port);
                                report(c, false, sni, port, "tls", &sv, 0, 0, t0, false);
                                return;
                        }
                }
                if (k == -EINVAL && n > 0 && first[0] == 22) {
                        /* it speaks TLS, in a way that cannot be judged: refused, not let through */
                        sbx_egress_verdict sv = {.reason = SBX_EGRESS_MALFORMED_HOST};
                        snprintf(sv.why, sizeof sv.why, "a TLS handshake whose server name cannot be read");
                        report(c, false, host, port, "tls", &sv, 0, 0, t0, false);
                        return;
                }
                if (k != 0)
                        break; /* named and allowed, no name at all, or not TLS */
                if (n == sizeof first) {
                        sbx_egress_verdict sv = {.reason = SBX_EGRESS_MALFORMED_HOST};
                        snprintf(sv.why, sizeof sv.why, "a TLS ClientHello too large to judge");
                        report(c, false, host, port, "tls", &sv, 0, 0, t0, false);
                        return;
                }
                struct pollfd pf[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = up, .events = POLLIN}};
                if (poll(pf, 2, -1) <= 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
                        if (n == 0)
                                break; /* the server speaks first: not a TLS client */
                        continue;
                }
                ssize_t k2 = read(c->fd, first + n, sizeof first - n);
                if (k2 <= 0)
                        break;
                n += (size_t) k2;
        }
        const void *fwd = check ? (const void *) first : (const void *) pre;
        size_t nf = check ? n : npre;
        uint64_t a = 0, b = 0;
        if (nf == 0 || sbx_write_all(up, fwd, nf) == 0)
                (void) sbx_splice_both(c->fd, up, &a, &b);
        report(c, true, host, port, via, v, a + nf, b, t0, false);
}

static void service_event(
        conn *c, const char *method, const char *path, int status, uint64_t up, uint64_t down, int64_t t0) {
        if (!c->p->fn)
                return;
        sbx_egress_event ev = {.allowed = true,
                .host = c->p->svc_target,
                .via = c->p->svc_tcp ? "tcp" : "http",
                .rule = "",
                .why = "",
                .bytes_up = up,
                .bytes_down = down,
                .ms = (double) (now_ms() - t0),
                .unreachable = status == 0 && method,
                .owner = c->owner,
                .service = c->p->svc_name,
                .method = method,
                .path = path,
                .status = status};
        c->p->fn(c->p->ud, &ev);
}

/* The answer's first line, awaited while the request's body goes on: its status (0: none came),
 * with the bytes each way added to *up and *down. */
static int await_status(conn *c, int up, uint64_t *sent, uint64_t *got) {
        char resp[1024];
        size_t rn = 0;
        bool client_open = true;
        for (int64_t deadline = now_ms() + REQUEST_MS * 10;;) {
                struct pollfd pf[2] = {
                        {.fd = client_open ? c->fd : -1, .events = POLLIN}, {.fd = up, .events = POLLIN}};
                int left = (int) (deadline - now_ms());
                if (left <= 0 || poll(pf, 2, left) <= 0)
                        return 0;
                if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                        ssize_t k = read(up, resp + rn, sizeof resp - rn);
                        if (k <= 0 || sbx_write_all(c->fd, resp + rn, (size_t) k) < 0)
                                return 0;
                        rn += (size_t) k;
                        *got += (uint64_t) k;
                        int st = sbx_http_status(resp, rn);
                        if (st != 0 || rn == sizeof resp)
                                return st > 0 ? st : -1;
                } else if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        char tmp[16384];
                        ssize_t k = read(c->fd, tmp, sizeof tmp);
                        if (k <= 0) {
                                (void) shutdown(up, SHUT_WR);
                                client_open = false;
                                continue;
                        }
                        if (sbx_write_all(up, tmp, (size_t) k) < 0)
                                return 0;
                        *sent += (uint64_t) k;
                }
        }
}

/* A host service's connection: tcp piped as it is; http one request, its head rewritten to end
 * the connection after it, the response's status read on its way back. */
static void serve_service(conn *c, int64_t t0) {
        char method[24] = "", path[512] = "";
        size_t have = 0, head_len = 0;
        _cleanup_free_ char *buf = NULL;
        if (!c->p->svc_tcp) {
                buf = malloc(SBX_PROXY_HEAD_MAX + 1);
                int k = 0;
                while (buf && (k = sbx_http_request_head(buf, have, method, path, &head_len)) == 0) {
                        ssize_t n = read_until(c->fd, buf, SBX_PROXY_HEAD_MAX, have, t0 + REQUEST_MS);
                        if (n <= 0)
                                return; /* nothing asked */
                        have += (size_t) n;
                }
                if (!buf || k < 0) {
                        http_answer(c->fd, "400 Bad Request", NULL, "not an HTTP/1.x request");
                        service_event(c, "?", "", 400, have, 0, t0);
                        return;
                }
        }
        int up = sbx_service_dial(c->p->svc_target);
        if (up < 0) {
                if (!c->p->svc_tcp) {
                        char msg[300];
                        snprintf(msg, sizeof msg, "the service %s did not answer: %s", c->p->svc_name,
                                strerror(-up));
                        http_answer(c->fd, "502 Bad Gateway", NULL, msg);
                }
                service_event(c, c->p->svc_tcp ? NULL : method, path, c->p->svc_tcp ? 0 : 502, 0, 0, t0);
                return;
        }
        if (!keep_up(c, up)) /* the proxy stops: not connected on */
                return;
        uint64_t a = 0, b = 0;
        if (c->p->svc_tcp) {
                (void) sbx_splice_both(c->fd, up, &a, &b);
                service_event(c, NULL, NULL, 0, a, b, t0);
                return;
        }
        size_t wl = 0;
        _cleanup_free_ char *w = sbx_http_close_head(buf, head_len, &wl);
        if (!w || sbx_write_all(up, w, wl) < 0 ||
                (have > head_len && sbx_write_all(up, buf + head_len, have - head_len) < 0)) {
                service_event(c, method, path, 0, 0, 0, t0);
                return;
        }
        a = wl + (have - head_len);
        int status = await_status(c, up, &a, &b);
        uint64_t a2 = 0, b2 = 0;
        if (status != 0)
                (void) sbx_splice_both(c->fd, up, &a2, &b2);
        service_event(c, method, path, status > 0 ? status : 0, a + a2, b + b2, t0);
}

/* A connect() redirected here: judged by where it was going, then piped; a refusal or a failure
 * closes the connection (the connect() itself was judged by the rules already). */
static void serve_transparent(conn *c, char *host, size_t size, unsigned port, int64_t t0) {
        sbx_egress_verdict v;
        judge(c, host, size, port, &v);
        if (v.reason != SBX_EGRESS_ALLOWED) {
                report(c, v.reason == SBX_EGRESS_UNRESOLVED, host, port, "transparent", &v, 0, 0, t0,
                        v.reason == SBX_EGRESS_UNRESOLVED);
                return;
        }
        int up = dial(&v, port);
        if (up < 0) {
                report(c, true, host, port, "transparent", &v, 0, 0, t0, true);
                return;
        }
        if (!keep_up(c, up)) /* the proxy stops: not connected on */
                return;
        tunnel(c, up, host, port, "transparent", &v, NULL, 0, t0);
}

static void serve_socks5(conn *c, char *buf, size_t have, int64_t t0) {
        int64_t deadline = t0 + REQUEST_MS;
        size_t used = 0;
        int r;
        /* with a credential asked, only username/password (RFC 1929) is acceptable */
        while ((r = sbx_socks5_greeting_method(
                        (unsigned char *) buf, have, c->p->hooks.pass ? 2 : 0, &used)) == 0) {
                ssize_t k = read_until(c->fd, buf, 1024, have, deadline);
                if (k <= 0)
                        return;
                have += (size_t) k;
        }
        if (r < 0) {
                (void) sbx_write_all(c->fd, "\x05\xff", 2); /* no acceptable method */
                return;
        }
        (void) sbx_write_all(c->fd, c->p->hooks.pass ? "\x05\x02" : "\x05\x00", 2);
        memmove(buf, buf + used, have - used);
        have -= used;
        if (c->p->hooks.pass) {
                while ((r = sbx_socks5_userpass((unsigned char *) buf, have, c->p->hooks.user,
                                c->p->hooks.pass, &used)) == 0) {
                        ssize_t k = read_until(c->fd, buf, 1024, have, deadline);
                        if (k <= 0)
                                return;
                        have += (size_t) k;
                }
                /* RFC 1929: status 0 goes on, anything else closes */
                (void) sbx_write_all(c->fd, r > 0 ? "\x01\x00" : "\x01\x01", 2);
                if (r < 0)
                        return;
                memmove(buf, buf + used, have - used);
                have -= used;
        }
        char host[256];
        unsigned port = 0;
        while ((r = sbx_socks5_request((unsigned char *) buf, have, host, &port, &used)) == 0) {
                ssize_t k = read_until(c->fd, buf, 1024, have, deadline);
                if (k <= 0)
                        return;
                have += (size_t) k;
        }
        unsigned char rep[10];
        if (r < 0) {
                sbx_socks5_reply(r == -ENOTSUP ? 7 : r == -EAFNOSUPPORT ? 8 : 1, rep);
                (void) sbx_write_all(c->fd, rep, sizeof rep);
                sbx_egress_verdict v = {.reason = SBX_EGRESS_MALFORMED_HOST};
                snprintf(v.why, sizeof v.why, "a SOCKS5 request that is not a CONNECT to a host and port");
                report(c, false, "", 0, "socks5", &v, 0, 0, t0, false);
                return;
        }
        sbx_egress_verdict v;
        judge(c, host, sizeof host, port, &v);
        if (v.reason != SBX_EGRESS_ALLOWED) {
                /* recorded before the client hears it: it may end the sandbox at once */
                report(c, v.reason == SBX_EGRESS_UNRESOLVED, host, port, "socks5", &v, 0, 0, t0,
                        v.reason == SBX_EGRESS_UNRESOLVED);
                sbx_socks5_reply(v.reason == SBX_EGRESS_UNRESOLVED ? 4 : 2, rep);
                (void) sbx_write_all(c->fd, rep, sizeof rep);
                return;
        }
        int up = dial(&v, port);
        if (up < 0) {
                sbx_socks5_reply(up == -ECONNREFUSED ? 5 : 4, rep);
                (void) sbx_write_all(c->fd, rep, sizeof rep);
                report(c, true, host, port, "socks5", &v, 0, 0, t0, true);
                return;
        }
        if (!keep_up(c, up)) /* the proxy stops: not connected on */
                return;
        sbx_socks5_reply(0, rep);
        if (sbx_write_all(c->fd, rep, sizeof rep) == 0)
                tunnel(c, up, host, port, "socks5", &v, buf + used, have > used ? have - used : 0, t0);
        else
                report(c, true, host, port, "socks5", &v, 0, 0, t0, false);
}

static void serve_http(conn *c, char *buf, size_t size, size_t have, int64_t t0) {
        int64_t deadline = t0 + REQUEST_MS;
        sbx_proxy_req r;
        char why[200];
        int k;
        while ((k = sbx_proxy_parse(buf, have, &r, why, sizeof why)) == 0) {
                ssize_t n = have < size ? read_until(c->fd, buf, size, have, deadline) : -E2BIG;
                if (n <= 0) {
                        if (n == -ETIMEDOUT)
                                http_answer(c->fd, "408 Request Timeout", NULL,
                                        "the request did not come whole in time");
                        return;
                }
                have += (size_t) n;
        }
        if (k < 0) {
                sbx_egress_verdict v = {.reason = SBX_EGRESS_MALFORMED_HOST};
                snprintf(v.why, sizeof v.why, "%s", why);
                http_answer(c->fd, "400 Bad Request", NULL, why);
                /* with a credential asked, nobody is known to have sent it: anything of the host
                 * could, and must not put a violation in the sandbox's report (nor end it) */
                if (!c->p->hooks.pass)
                        report(c, false, "", 0, "http", &v, 0, 0, t0, false);
                return;
        }
        if (c->p->hooks.pass && !sbx_proxy_auth_ok(buf, r.head_len, c->p->hooks.user, c->p->hooks.pass)) {
                /* not this sandbox's (or a client that dropped the URL's credential): nothing is
                 * judged nor recorded — any process of the host may knock here */
                static const char ask[] = "HTTP/1.1 407 Proxy Authentication Required\r\n"
                                          "Proxy-Authenticate: Basic realm=\"sandboxer\"\r\n"
                                          "Content-Type: text/plain\r\nContent-Length: 59\r\n"
                                          "Connection: close\r\n\r\n"
                                          "this proxy needs the credential in the sandbox's proxy URL\n";
                (void) sbx_write_all(c->fd, ask, sizeof ask - 1);
                return;
        }
        const char *via = r.connect ? "connect" : "http";
        sbx_egress_verdict v;
        judge(c, r.host, sizeof r.host, r.port, &v);
        if (v.reason == SBX_EGRESS_UNRESOLVED) {
                http_answer(c->fd, "502 Bad Gateway", NULL, v.why);
                report(c, true, r.host, r.port, via, &v, 0, 0, t0, true);
                return;
        }
        if (v.reason != SBX_EGRESS_ALLOWED) {
                report(c, false, r.host, r.port, via, &v, 0, 0, t0, false); /* before the client hears it */
                http_answer(c->fd, "403 Forbidden", &v, v.why);
                return;
        }
        int up = dial(&v, r.port);
        if (up < 0) {
                char msg[400];
                snprintf(msg, sizeof msg, "%s:%u did not answer: %s", r.host, r.port, strerror(-up));
                http_answer(c->fd, "502 Bad Gateway", NULL, msg);
                report(c, true, r.host, r.port, via, &v, 0, 0, t0, true);
                return;
        }
        if (!keep_up(c, up)) /* the proxy stops: not connected on */
                return;
        uint64_t a = 0, b = 0, sent = 0;
        bool ok;
        if (r.connect) {
                static const char est[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
                if (sbx_write_all(c->fd, est, sizeof est - 1) == 0)
                        tunnel(c, up, r.host, r.port, via, &v, buf + r.head_len, have - r.head_len, t0);
                else
                        report(c, true, r.host, r.port, via, &v, 0, 0, t0, false);
                return;
        } else {
                size_t wl = 0;
                _cleanup_free_ char *w = sbx_proxy_rewrite(buf, &r, &wl);
                ok = w && sbx_write_all(up, w, wl) == 0;
                sent = wl;
        }
        /* what came past the head (a request's body, a client's first TLS bytes) goes on */
        if (ok && have > r.head_len) {
                ok = sbx_write_all(up, buf + r.head_len, have - r.head_len) == 0;
                sent += have - r.head_len;
        }
        if (ok)
                (void) sbx_splice_both(c->fd, up, &a, &b);
        report(c, true, r.host, r.port, via, &v, a + sent, b, t0, false);
}

static void *conn_main(void *arg) {
        conn *c = arg;
        int64_t t0 = now_ms();
        if (c->p->hooks.identify) {
                uint64_t o = c->p->hooks.identify(c->p->ud, c->fd);
                pthread_mutex_lock(&c->p->lock);
                c->owner = o;
                pthread_mutex_unlock(&c->p->lock);
        }
        if (c->p->svc_name) {
                serve_service(c, t0);
                goto done;
        }
        char thost[256];
        unsigned tport = 0;
        if (c->p->hooks.transparent &&
                c->p->hooks.transparent(c->p->ud, c->fd, thost, sizeof thost, &tport)) {
                serve_transparent(c, thost, sizeof thost, tport, t0);
                goto done;
        }
        char *buf = malloc(SBX_PROXY_HEAD_MAX + 1);
        ssize_t k = buf ? read_until(c->fd, buf, SBX_PROXY_HEAD_MAX, 0, t0 + REQUEST_MS) : -ENOMEM;
        if (k > 0) {
                if ((unsigned char) buf[0] == 5)
                        serve_socks5(c, buf, (size_t) k, t0);
                else
                        serve_http(c, buf, SBX_PROXY_HEAD_MAX, (size_t) k, t0);
        }
        free(buf);
done:;
        sbx_egress_proxy *p = c->p;
        pthread_mutex_lock(&p->lock);
        for (conn **pp = &p->conns; *pp; pp = &(*pp)->next)
                if (*pp == c) {
                        *pp = c->next;
                        break;
                }
        safe_close(c->fd);
        safe_close(c->up);
        p->n--;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        free(c);
        return NULL;
}

static void *accept_main(void *arg) {
        sbx_egress_proxy *p = arg;
        for (;;) {
                int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
                                continue;
                        break; /* shut down: the proxy stops */
                }
                pthread_mutex_lock(&p->lock);
                bool full = p->n >= CONNS_MAX || p->stopping;
                conn *c = full ? NULL : calloc(1, sizeof *c);
                if (c) {
                        *c = (conn){.next = p->conns, .p = p, .fd = fd, .up = -1};
                        p->conns = c;
                        p->n++;
                }
                pthread_mutex_unlock(&p->lock);
                pthread_t t;
                pthread_attr_t at;
                pthread_attr_init(&at);
                pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
                pthread_attr_setstacksize(&at, 256 * 1024);
                if (!c)
                        close(fd); /* too many at once */
                else if (pthread_create(&t, &at, conn_main, c) != 0) {
                        pthread_mutex_lock(&p->lock);
                        p->conns = c->next;
                        p->n--;
                        pthread_mutex_unlock(&p->lock);
                        close(fd);
                        free(c);
                }
                pthread_attr_destroy(&at);
        }
        return NULL;
}

static int start(int listen_fd, const sbx_egress *rules, sbx_egress_event_fn fn,
        const sbx_egress_proxy_hooks *hooks, void *userdata, char *svc_name, char *svc_target, bool svc_tcp,
        sbx_egress_proxy **ret) {
        sbx_egress_proxy *p = calloc(1, sizeof *p);
        if (!p) {
                free(svc_name);
                free(svc_target);
                close(listen_fd);
                return -ENOMEM;
        }
        *p = (sbx_egress_proxy){.lfd = listen_fd,
                .rules = rules,
                .fn = fn,
                .ud = userdata,
                .svc_name = svc_name,
                .svc_target = svc_target,
                .svc_tcp = svc_tcp};
        if (hooks)
                p->hooks = *hooks;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        (void) fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) & ~O_NONBLOCK);
        int r = -pthread_create(&p->acceptor, NULL, accept_main, p);
        if (r < 0) {
                close(listen_fd);
                pthread_mutex_destroy(&p->lock);
                pthread_cond_destroy(&p->cond);
                free(p->svc_name);
                free(p->svc_target);
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

int sbx_egress_proxy_start(int listen_fd, const sbx_egress *rules, sbx_egress_event_fn fn,
        const sbx_egress_proxy_hooks *hooks, void *userdata, sbx_egress_proxy **ret) {
        return start(listen_fd, rules, fn, hooks, userdata, NULL, NULL, false, ret);
}

int sbx_egress_service_start(int listen_fd, const sbx_service_target *t, sbx_egress_event_fn fn,
        const sbx_egress_proxy_hooks *hooks, void *userdata, sbx_egress_proxy **ret) {
        char *name = strdup(t->name), *target = strdup(t->target);
        if (!name || !target) {
                free(name);
                free(target);
                close(listen_fd);
                return -ENOMEM;
        }
        sbx_egress_proxy_hooks h = hooks ? *hooks : (sbx_egress_proxy_hooks){0};
        h.transparent = NULL;
        h.unmap = NULL;
        return start(listen_fd, NULL, fn, &h, userdata, name, target, t->tcp, ret);
}

bool sbx_egress_proxy_settle(sbx_egress_proxy *p, uint64_t owner, int timeout_ms) {
        struct timespec until;
        sbx_deadline_realtime(timeout_ms, &until);
        bool settled = false;
        pthread_mutex_lock(&p->lock);
        for (;;) {
                bool busy = false;
                for (conn *c = p->conns; c && !busy; c = c->next)
                        busy = c->owner == owner;
                if (!busy) {
                        settled = true;
                        break;
                }
                if (pthread_cond_timedwait(&p->cond, &p->lock, &until) == ETIMEDOUT)
                        break;
        }
        pthread_mutex_unlock(&p->lock);
        return settled;
}

sbx_egress_proxy *sbx_egress_proxy_stop(sbx_egress_proxy *p) {
        if (!p)
                return NULL;
        (void) shutdown(p->lfd, SHUT_RDWR); /* wakes accept() */
        pthread_join(p->acceptor, NULL);
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        for (conn *c = p->conns; c; c = c->next) {
                (void) shutdown(c->fd, SHUT_RDWR);
                if (c->up >= 0)
                        (void) shutdown(c->up, SHUT_RDWR);
        }
        while (p->n > 0)
                pthread_cond_wait(&p->cond, &p->lock);
        pthread_mutex_unlock(&p->lock);
        safe_close(p->lfd);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        free(p->svc_name);
        free(p->svc_target);
        free(p);
        return NULL;
}
