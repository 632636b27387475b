/* test-egress-proxy.c — the egress proxy (supervise/egress-proxy.h) on loopback, with an origin
 * server of its own: CONNECT and absolute-URI requests and SOCKS5 reach an allowed name (the
 * policy's host map gives it an address), bytes pass both ways and are counted; refusals are told
 * apart from failures (403 with X-Sandboxer-Refused, SOCKS5 reply 2; 502 for a port nothing
 * answers) and each is an event with its reason; the request is rewritten for the origin; the
 * proxy stops with a connection open. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "supervise/egress-proxy.h"
#include "tap.h"

#define S(x) ((char *) (x))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static sbx_egress_event events[64];
static char hosts_seen[64][256];
static size_t n_events;

static void on_event(void *ud, const sbx_egress_event *ev) {
        pthread_mutex_lock(&lock);
        if (n_events < 64) {
                events[n_events] = *ev;
                snprintf(hosts_seen[n_events], 256, "%s", ev->host);
                events[n_events].host = hosts_seen[n_events];
                events[n_events].rule = "";
                events[n_events].why = "";
                n_events++;
        }
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
}

/* The n-th event, waiting for it a while. */
static sbx_egress_event *event(size_t n) {
        pthread_mutex_lock(&lock);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 5;
        while (n_events <= n && pthread_cond_timedwait(&cond, &lock, &ts) == 0)
                ;
        sbx_egress_event *e = n_events > n ? &events[n] : NULL;
        pthread_mutex_unlock(&lock);
        return e;
}

static int listen_any(unsigned *port) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t l = sizeof a;
        if (s < 0 || bind(s, (struct sockaddr *) &a, sizeof a) < 0 || listen(s, 16) < 0 ||
                getsockname(s, (struct sockaddr *) &a, &l) < 0)
                return -1;
        *port = ntohs(a.sin_port);
        return s;
}

/* The origin: each connection's bytes until an empty line, back behind "echo:", then the end. */
static void *origin_main(void *arg) {
        int ls = (int) (intptr_t) arg;
        for (;;) {
                int c = accept(ls, NULL, NULL);
                if (c < 0)
                        return NULL;
                char buf[8192];
                size_t have = 0;
                while (have < sizeof buf - 1) {
                        ssize_t k = read(c, buf + have, sizeof buf - 1 - have);
                        if (k <= 0)
                                break;
                        have += (size_t) k;
                        buf[have] = 0;
                        if (strstr(buf, "\r\n\r\n"))
                                break;
                }
                if (write(c, "echo:", 5) == 5 && write(c, buf, have) < 0) {
                }
                close(c);
        }
}

static int dial_port(unsigned port) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                .sin_port = htons((uint16_t) port),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        return s >= 0 && connect(s, (struct sockaddr *) &a, sizeof a) == 0 ? s : -1;
}

/* Send req, read to the end (or the first n bytes when n > 0). */
static char *talk(unsigned port, const void *req, size_t len, size_t n) {
        int s = dial_port(port);
        static char out[16384];
        size_t have = 0;
        out[0] = 0;
        if (s < 0 || write(s, req, len) != (ssize_t) len)
                return out;
        while (have < sizeof out - 1 && (!n || have < n)) {
                ssize_t k = read(s, out + have, sizeof out - 1 - have);
                if (k <= 0)
                        break;
                have += (size_t) k;
        }
        out[have] = 0;
        close(s);
        return out;
}

static int fake_resolve(const char *name, sbx_egress_verdict *v, void *ud) {
        (void) ud;
        if (strcmp(name, "localhost") != 0)
                return -ENOENT;
        v->addrs[0].family = AF_INET;
        inet_pton(AF_INET, "127.0.0.1", v->addrs[0].addr);
        v->n_addrs = 1;
        return 0;
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        unsigned oport = 0, pport = 0, dead = 0;
        int ols = listen_any(&oport), pls = listen_any(&pport), dls = listen_any(&dead);
        close(dls); /* a port nothing answers */
        pthread_t ot;
        pthread_create(&ot, NULL, origin_main, (void *) (intptr_t) ols);
        char *allow[] = {S("origin.test"), S("localhost"), NULL};
        char *hosts[] = {S("origin.test=127.0.0.1"), NULL};
        sbx_egress *g = NULL;
        sbx_error e = {0};
        sbx_egress_proxy *p = NULL;
        ok(sbx_egress_new(allow, NULL, hosts, fake_resolve, NULL, &g, &e) == 0 &&
                        sbx_egress_proxy_start(pls, g, on_event, NULL, NULL, &p) == 0,
                "the proxy starts");

        char req[512];
        int l = snprintf(req, sizeof req,
                "CONNECT origin.test:%u HTTP/1.1\r\nHost: origin.test\r\n\r\nhello\r\n\r\n", oport);
        char *out = talk(pport, req, (size_t) l, 0);
        ok(strncmp(out, "HTTP/1.1 200 Connection Established\r\n\r\necho:hello\r\n\r\n", 52) == 0,
                "CONNECT: established, then a tunnel both ways (bytes sent with the request too)");
        sbx_egress_event *ev = event(0);
        ok(ev && ev->allowed && strcmp(ev->via, "connect") == 0 && ev->port == oport && ev->bytes_up == 9 &&
                        ev->bytes_down == 14 && !ev->unreachable,
                "...an event: allowed, its bytes each way (%llu up, %llu down)",
                ev ? (unsigned long long) ev->bytes_up : 0, ev ? (unsigned long long) ev->bytes_down : 0);

        l = snprintf(req, sizeof req,
                "GET http://origin.test:%u/x?y=1 HTTP/1.1\r\nHost: origin.test\r\nProxy-Connection: "
                "keep-alive\r\n\r\n",
                oport);
        out = talk(pport, req, (size_t) l, 0);
        ok(strncmp(out, "echo:GET /x?y=1 HTTP/1.1\r\n", 26) == 0 && strstr(out, "Connection: close\r\n") &&
                        !strstr(out, "Proxy-Connection"),
                "an absolute-URI GET reaches the origin rewritten: %.60s", out);
        ev = event(1);
        ok(ev && ev->allowed && strcmp(ev->via, "http") == 0, "...an event, via http");

        out = talk(pport, "CONNECT example.com:443 HTTP/1.1\r\n\r\n", 36, 0);
        ok(strncmp(out, "HTTP/1.1 403 ", 13) == 0 &&
                        strstr(out, "X-Sandboxer-Refused: no_matching_allow\r\n"),
                "a name no rule allows: 403 saying why, apart from a failure");
        ev = event(2);
        ok(ev && !ev->allowed && ev->reason == SBX_EGRESS_NO_MATCHING_ALLOW &&
                        strcmp(ev->host, "example.com") == 0 && ev->port == 443,
                "...an event: refused, no_matching_allow, host and port");

        l = snprintf(req, sizeof req, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", oport);
        out = talk(pport, req, (size_t) l, 0);
        ok(strstr(out, "X-Sandboxer-Refused: resolves_to_denied") != NULL,
                "an allowed name that resolves to loopback: refused (resolves_to_denied)");
        ev = event(3);
        ok(ev && !ev->allowed && ev->reason == SBX_EGRESS_RESOLVES_TO_DENIED, "...its event");

        out = talk(pport, "GET /relative HTTP/1.1\r\n\r\n", 26, 0);
        ok(strncmp(out, "HTTP/1.1 400 ", 13) == 0, "a request that is no proxy request: 400");
        ev = event(4);
        ok(ev && !ev->allowed && ev->reason == SBX_EGRESS_MALFORMED_HOST, "...an event: malformed_host");

        l = snprintf(req, sizeof req, "CONNECT origin.test:%u HTTP/1.1\r\n\r\n", dead);
        out = talk(pport, req, (size_t) l, 0);
        ok(strncmp(out, "HTTP/1.1 502 ", 13) == 0 && !strstr(out, "X-Sandboxer-Refused"),
                "an allowed port nothing answers: 502, not a refusal");
        ev = event(5);
        ok(ev && ev->allowed && ev->unreachable, "...its event: allowed, unreachable");

        unsigned char s5[64] = {5, 1, 0, 5, 1, 0, 3, 11};
        memcpy(s5 + 8, "origin.test", 11);
        s5[19] = (unsigned char) (oport >> 8);
        s5[20] = (unsigned char) oport;
        memcpy(s5 + 21, "ping\r\n\r\n", 8);
        out = talk(pport, s5, 29, 0);
        ok(out[0] == 5 && out[1] == 0 && out[2] == 5 && out[3] == 0 && memcmp(out + 12, "echo:ping", 9) == 0,
                "SOCKS5: no auth, CONNECT by name succeeded, then the tunnel");
        ev = event(6);
        ok(ev && ev->allowed && strcmp(ev->via, "socks5") == 0, "...its event, via socks5");
        unsigned char s5d[] = {
                5, 1, 0, 5, 1, 0, 3, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm', 1, 187};
        out = talk(pport, s5d, sizeof s5d, 12);
        ok(out[2] == 5 && out[3] == 2, "SOCKS5 to a name no rule allows: reply 2 (not allowed by ruleset)");
        ev = event(7);
        ok(ev && !ev->allowed && ev->reason == SBX_EGRESS_NO_MATCHING_ALLOW, "...its event");

        /* a connection held open across the stop */
        int held = dial_port(pport);
        l = snprintf(req, sizeof req, "CONNECT origin.test:%u HTTP/1.1\r\n\r\n", oport);
        ok(held >= 0 && write(held, req, (size_t) l) == l, "a tunnel left open");
        char tmp[64];
        ok(read(held, tmp, sizeof tmp) > 0, "...established");
        p = sbx_egress_proxy_stop(p);
        ok(!p, "the proxy stops with it open");
        close(held);

        /* a proxy others can reach (the landlock backend's, on the host's loopback): the
         * credential first, nothing judged or recorded without it */
        unsigned aport = 0;
        int als = listen_any(&aport);
        sbx_egress_proxy_hooks ah = {.user = "sbx", .pass = "s3cret"};
        ok(sbx_egress_proxy_start(als, g, on_event, &ah, NULL, &p) == 0, "a proxy with a credential starts");
        pthread_mutex_lock(&lock);
        size_t before = n_events;
        pthread_mutex_unlock(&lock);
        l = snprintf(req, sizeof req, "CONNECT origin.test:%u HTTP/1.1\r\n\r\n", oport);
        out = talk(aport, req, (size_t) l, 0);
        ok(strncmp(out, "HTTP/1.1 407 ", 13) == 0 && strstr(out, "Proxy-Authenticate: Basic"),
                "CONNECT without Proxy-Authorization: 407 asking for Basic");
        l = snprintf(req, sizeof req,
                "GET http://origin.test:%u/ HTTP/1.1\r\nProxy-Authorization: Basic c2J4Ondyb25n\r\n\r\n",
                oport);
        out = talk(aport, req, (size_t) l, 0);
        ok(strncmp(out, "HTTP/1.1 407 ", 13) == 0, "a request with a wrong credential: 407");
        out = talk(aport, "GET /relative HTTP/1.1\r\n\r\n", 26, 0);
        ok(strncmp(out, "HTTP/1.1 400 ", 13) == 0,
                "a malformed request: 400 (and no event: anyone could send it)");
        l = snprintf(req, sizeof req,
                "CONNECT origin.test:%u HTTP/1.1\r\nProxy-Authorization: Basic c2J4OnMzY3JldA==\r\n\r\n"
                "hello\r\n\r\n",
                oport);
        out = talk(aport, req, (size_t) l, 0);
        ok(strncmp(out, "HTTP/1.1 200 Connection Established\r\n\r\necho:hello", 47) == 0,
                "CONNECT with the credential: through");
        static const unsigned char s5none[] = {5, 1, 0};
        out = talk(aport, s5none, sizeof s5none, 2);
        ok(out[0] == 5 && (unsigned char) out[1] == 0xff,
                "SOCKS5 offering no authentication: no acceptable method");
        unsigned char s5a[64];
        size_t n5 = 0;
        memcpy(s5a, "\x05\x01\x02\x01\x03sbx\x06s3creT", 15);
        n5 = 15;
        out = talk(aport, s5a, n5, 4);
        ok(out[0] == 5 && out[1] == 2 && out[2] == 1 && out[3] == 1,
                "SOCKS5 username/password with a wrong password: method 2, then status 1");
        memcpy(s5a, "\x05\x01\x02\x01\x03sbx\x06s3cret\x05\x01\x00\x03\x0borigin.test", 31);
        s5a[31] = (unsigned char) (oport >> 8);
        s5a[32] = (unsigned char) (oport & 0xff);
        memcpy(s5a + 33, "hi\r\n\r\n", 6);
        out = talk(aport, s5a, 39, 0);
        ok(out[0] == 5 && out[1] == 2 && out[2] == 1 && out[3] == 0 && out[4] == 5 && out[5] == 0 &&
                        strncmp(out + 14, "echo:hi", 7) == 0,
                "SOCKS5 with the credential: status 0, reply 0, through");
        (void) event(before + 1); /* the two allowed connections' events have come */
        pthread_mutex_lock(&lock);
        size_t after = n_events;
        pthread_mutex_unlock(&lock);
        ok(after == before + 2, "only the two connections with the credential are events (%zu)",
                after - before);
        p = sbx_egress_proxy_stop(p);

        sbx_egress_free(g);
        close(ols);
        return done_testing();
}
