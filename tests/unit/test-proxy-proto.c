/* test-proxy-proto.c — the egress proxy's protocols apart from sockets (supervise/proxy-proto.h):
 * CONNECT and absolute-URI requests (ports, IPv6, what is refused and why), the head given in
 * pieces, the rewrite for the origin server, and SOCKS5's greeting, request and reply. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "supervise/proxy-proto.h"
#include "tap.h"

static int parse(const char *s, sbx_proxy_req *r, char *why) {
        return sbx_proxy_parse(s, strlen(s), r, why, 200);
}

/* a ClientHello as python's ssl writes it, for server_hostname Files.Example.TEST */
static const unsigned char client_hello[] = {
        0x16,
        0x03,
        0x01,
        0x02,
        0x00,
        0x01,
        0x00,
        0x01,
        0xfc,
        0x03,
        0x03,
        0x41,
        0xf2,
        0x8e,
        0x33,
        0xb2,
        0xad,
        0x65,
        0x5b,
        0xf3,
        0xb5,
        0x82,
        0xf9,
        0xe6,
        0x96,
        0xdb,
        0x26,
        0x8f,
        0xca,
        0xfa,
        0xba,
        0x20,
        0x2c,
        0x18,
        0x7d,
        0xab,
        0x50,
        0x35,
        0x5a,
        0x07,
        0x81,
        0x1b,
        0xa0,
        0x20,
        0x07,
        0x00,
        0x60,
        0x12,
        0x36,
        0xd2,
        0x46,
        0x64,
        0x29,
        0x19,
        0x9c,
        0xc6,
        0x8f,
        0x29,
        0xc9,
        0xe9,
        0x07,
        0x09,
        0x65,
        0xda,
        0xc3,
        0x0e,
        0xc5,
        0x45,
        0x12,
        0xfb,
        0x60,
        0xbb,
        0x20,
        0x22,
        0xce,
        0x36,
        0x00,
        0x24,
        0x13,
        0x02,
        0x13,
        0x03,
        0x13,
        0x01,
        0xc0,
        0x2c,
        0xc0,
        0x30,
        0xc0,
        0x2b,
        0xc0,
        0x2f,
        0xcc,
        0xa9,
        0xcc,
        0xa8,
        0xc0,
        0x24,
        0xc0,
        0x28,
        0xc0,
        0x23,
        0xc0,
        0x27,
        0x00,
        0x9f,
        0x00,
        0x9e,
        0x00,
        0x6b,
        0x00,
        0x67,
        0x00,
        0xff,
        0x01,
        0x00,
        0x01,
        0x8f,
        0x00,
        0x00,
        0x00,
        0x17,
        0x00,
        0x15,
        0x00,
        0x00,
        0x12,
        0x46,
        0x69,
        0x6c,
        0x65,
        0x73,
        0x2e,
        0x45,
        0x78,
        0x61,
        0x6d,
        0x70,
        0x6c,
        0x65,
        0x2e,
        0x54,
        0x45,
        0x53,
        0x54,
        0x00,
        0x0b,
        0x00,
        0x04,
        0x03,
        0x00,
        0x01,
        0x02,
        0x00,
        0x0a,
        0x00,
        0x16,
        0x00,
        0x14,
        0x00,
        0x1d,
        0x00,
        0x17,
        0x00,
        0x1e,
        0x00,
        0x19,
        0x00,
        0x18,
        0x01,
        0x00,
        0x01,
        0x01,
        0x01,
        0x02,
        0x01,
        0x03,
        0x01,
        0x04,
        0x00,
        0x23,
        0x00,
        0x00,
        0x00,
        0x16,
        0x00,
        0x00,
        0x00,
        0x17,
        0x00,
        0x00,
        0x00,
        0x0d,
        0x00,
        0x2a,
        0x00,
        0x28,
        0x04,
        0x03,
        0x05,
        0x03,
        0x06,
        0x03,
        0x08,
        0x07,
        0x08,
        0x08,
        0x08,
        0x09,
        0x08,
        0x0a,
        0x08,
        0x0b,
        0x08,
        0x04,
        0x08,
        0x05,
        0x08,
        0x06,
        0x04,
        0x01,
        0x05,
        0x01,
        0x06,
        0x01,
        0x03,
        0x03,
        0x03,
        0x01,
        0x03,
        0x02,
        0x04,
        0x02,
        0x05,
        0x02,
        0x06,
        0x02,
        0x00,
        0x2b,
        0x00,
        0x05,
        0x04,
        0x03,
        0x04,
        0x03,
        0x03,
        0x00,
        0x2d,
        0x00,
        0x02,
        0x01,
        0x01,
        0x00,
        0x33,
        0x00,
        0x26,
        0x00,
        0x24,
        0x00,
        0x1d,
        0x00,
        0x20,
        0x76,
        0x7a,
        0x2c,
        0x92,
        0x99,
        0xfb,
        0x7d,
        0x23,
        0xe1,
        0x04,
        0xf1,
        0x85,
        0xc9,
        0xa5,
        0x36,
        0x50,
        0x1c,
        0xbf,
        0x35,
        0xe4,
        0xe7,
        0x88,
        0x35,
        0xee,
        0x96,
        0x73,
        0x8b,
        0x7b,
        0x98,
        0x5f,
        0x6b,
        0x0d,
        0x00,
        0x15,
        0x00,
        0xdb,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
};

static void test_sni(void) {
        char name[256];
        ok(sbx_tls_sni(client_hello, sizeof client_hello, name) == 1 &&
                        strcmp(name, "files.example.test") == 0,
                "the server name of a real ClientHello, lowercased: %s", name);
        bool partial_ok = true;
        for (size_t n = 0; n < sizeof client_hello; n++)
                partial_ok = partial_ok && sbx_tls_sni(client_hello, n, name) == 0;
        ok(partial_ok, "every prefix of it asks for more");
        unsigned char bad[sizeof client_hello];
        memcpy(bad, client_hello, sizeof bad);
        bad[0] = 23;
        ok(sbx_tls_sni(bad, sizeof bad, name) == -EINVAL, "application data is not a ClientHello");
        ok(sbx_tls_sni((const unsigned char *) "GET / HTTP/1.1\r\n", 16, name) == -EINVAL,
                "plain HTTP is not TLS");
        ok(sbx_tls_sni((const unsigned char *) "SSH-2.0-x\r\n", 11, name) == -EINVAL, "nor is SSH");
        memcpy(bad, client_hello, sizeof bad);
        bad[5] = 2; /* a ServerHello */
        ok(sbx_tls_sni(bad, sizeof bad, name) == -EINVAL, "a handshake that is not a ClientHello");
        /* every byte flipped in turn: never a crash, never a name outside the buffer */
        size_t names = 0;
        for (size_t i = 0; i < sizeof client_hello; i++) {
                memcpy(bad, client_hello, sizeof bad);
                bad[i] ^= 0xff;
                if (sbx_tls_sni(bad, sizeof bad, name) == 1)
                        names += strlen(name) < 256;
        }
        ok(names <= sizeof client_hello, "one byte flipped anywhere: handled (%zu still named)", names);
        /* the same hello split over two handshake records: still read (a filter reading only the
         * first record could be walked around) */
        {
                size_t body = sizeof client_hello - 5, cut = 100;
                unsigned char split[sizeof client_hello + 5];
                memcpy(split, client_hello, 5);
                split[3] = (unsigned char) (cut >> 8), split[4] = (unsigned char) cut;
                memcpy(split + 5, client_hello + 5, cut);
                memcpy(split + 5 + cut, client_hello, 3);
                split[5 + cut + 3] = (unsigned char) ((body - cut) >> 8);
                split[5 + cut + 4] = (unsigned char) (body - cut);
                memcpy(split + 10 + cut, client_hello + 5 + cut, body - cut);
                ok(sbx_tls_sni(split, sizeof split, name) == 1 && strcmp(name, "files.example.test") == 0,
                        "a ClientHello split over two records: its name read all the same");
                ok(sbx_tls_sni(split, 5 + cut + 7, name) == 0, "the second record partly there: more asked");
                split[5 + cut] = 23; /* the second record not a handshake */
                ok(sbx_tls_sni(split, sizeof split, name) == -EINVAL,
                        "a hello cut by another record type: refused");
        }
        /* a hello with no extensions: no name */
        static const unsigned char bare[] = {
                22, 3, 1, 0, 45, 1, 0, 0, 41, 3, 3, [11 ... 42] = 7, 0, 0, 2, 0, 0x2f, 1, 0};
        ok(sbx_tls_sni(bare, sizeof bare, name) == -ENOENT, "a ClientHello without extensions has no name");
}

int main(void) {
        sbx_proxy_req r;
        char why[200];
        is_int(parse("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", &r, why), 1, "CONNECT");
        ok(r.connect && strcmp(r.host, "pypi.org") == 0 && r.port == 443 && strcmp(r.method, "CONNECT") == 0,
                "CONNECT: host and port");
        is_int(parse("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", &r, why), 1,
                "CONNECT to a bracketed IPv6 address");
        is_str(r.host, "2001:db8::1", "...the address without its brackets");
        is_int((int) r.port, 8443, "...and its port");
        is_int(parse("CONNECT pypi.org HTTP/1.1\r\n\r\n", &r, why), -EINVAL, "CONNECT without a port: %s",
                why);
        is_int(parse("CONNECT pypi.org:0 HTTP/1.1\r\n\r\n", &r, why), -EINVAL, "CONNECT to port 0");
        is_int(parse("CONNECT pypi.org:99999 HTTP/1.1\r\n\r\n", &r, why), -EINVAL, "CONNECT to port 99999");
        is_int(parse("CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n", &r, why), -EINVAL,
                "an IPv6 address must be bracketed");

        const char *get =
                "GET http://example.com:8080/a/b?q=1 HTTP/1.1\r\nHost: example.com:8080\r\n"
                "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nAccept: */*\r\n"
                "Connection: keep-alive\r\n\r\nBODY";
        is_int(parse(get, &r, why), 1, "GET with an absolute URI");
        ok(!r.connect && strcmp(r.host, "example.com") == 0 && r.port == 8080 &&
                        strcmp(r.method, "GET") == 0,
                "...its host and port");
        is_int((int) r.head_len, (int) (strlen(get) - 4), "...the head ends before the body");
        size_t n = 0;
        char *w = sbx_proxy_rewrite(get, &r, &n);
        is_str(w,
                "GET /a/b?q=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: "
                "close\r\n\r\n",
                "the rewrite: origin-form target, Proxy-* and Connection dropped, one request per "
                "connection");
        is_int((int) n, (int) strlen(w), "...its length");
        free(w);
        is_int(parse("POST http://example.com HTTP/1.0\r\n\r\n", &r, why), 1, "no path, HTTP/1.0");
        ok(r.port == 80 && r.target_len == 0, "...port 80, target /");
        w = sbx_proxy_rewrite("POST http://example.com HTTP/1.0\r\n\r\n", &r, &n);
        is_str(w, "POST / HTTP/1.1\r\nConnection: close\r\n\r\n", "...rewritten with /");
        free(w);
        is_int(parse("GET http://example.com?x HTTP/1.1\r\n\r\n", &r, why), 1, "a query without a path");
        w = sbx_proxy_rewrite("GET http://example.com?x HTTP/1.1\r\n\r\n", &r, &n);
        ok(strncmp(w, "GET ?x HTTP/1.1", 15) == 0 && strcmp(r.host, "example.com") == 0,
                "...the query kept: %.20s", w);
        free(w);
        is_int(parse("GET http://[::1]:8000/ HTTP/1.1\r\n\r\n", &r, why), 1,
                "an absolute URI with an IPv6 host");
        ok(strcmp(r.host, "::1") == 0 && r.port == 8000, "...host and port");

        is_int(parse("GET /relative HTTP/1.1\r\n\r\n", &r, why), -EINVAL,
                "an origin-form target is no proxy request: %s", why);
        is_int(parse("GET https://example.com/ HTTP/1.1\r\n\r\n", &r, why), -EINVAL, "https in a GET");
        ok(strstr(why, "CONNECT") != NULL, "...saying CONNECT is the way: %s", why);
        is_int(parse("GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n", &r, why), -EINVAL,
                "credentials in the URI");
        is_int(parse("GET http:// HTTP/1.1\r\n\r\n", &r, why), -EINVAL, "no host");
        is_int(parse("GET http://exa mple.com/ HTTP/1.1\r\n\r\n", &r, why), -EINVAL,
                "a space in the request line");
        is_int(parse("get http://example.com/ HTTP/1.1\r\n\r\n", &r, why), -EINVAL,
                "a method in lower case");
        is_int(parse("GET http://example.com/ HTTP/2.0\r\n\r\n", &r, why), -EINVAL, "HTTP/2 is not HTTP/1");
        is_int(parse("GARBAGE\r\n\r\n", &r, why), -EINVAL, "garbage");
        is_int(parse("GET http://example.com/ HTTP/1.1\r\nHost: x\r\n", &r, why), 0,
                "an unfinished head wants more");
        is_int(parse("", &r, why), 0, "nothing yet wants more");
        char *big = malloc(SBX_PROXY_HEAD_MAX + 100);
        memset(big, 'a', SBX_PROXY_HEAD_MAX + 100);
        is_int(sbx_proxy_parse(big, SBX_PROXY_HEAD_MAX + 100, &r, why, sizeof why), -E2BIG,
                "a head past 64 KiB: %s", why);
        free(big);

        size_t used = 0;
        is_int(sbx_socks5_greeting((const unsigned char *) "\x05\x02\x02\x00", 4, &used), 1,
                "SOCKS5 greeting offering no-auth");
        is_int((int) used, 4, "...its length");
        is_int(sbx_socks5_greeting((const unsigned char *) "\x05\x01\x02", 3, &used), -EINVAL,
                "...only user/password: refused");
        is_int(sbx_socks5_greeting((const unsigned char *) "\x05\x03\x00", 3, &used), 0,
                "...cut short: wants more");
        is_int(sbx_socks5_greeting((const unsigned char *) "\x04\x01", 2, &used), -EINVAL,
                "SOCKS4: refused");
        char host[256];
        unsigned port = 0;
        const unsigned char name[] = {5, 1, 0, 3, 8, 'p', 'y', 'p', 'i', '.', 'o', 'r', 'g', 1, 187};
        is_int(sbx_socks5_request(name, sizeof name, host, &port, &used), 1, "SOCKS5 CONNECT by name");
        ok(strcmp(host, "pypi.org") == 0 && port == 443 && used == sizeof name,
                "...a name stays a name, port 443");
        const unsigned char v4[] = {5, 1, 0, 1, 10, 0, 0, 7, 0x1f, 0x90};
        is_int(sbx_socks5_request(v4, sizeof v4, host, &port, &used), 1,
                "SOCKS5 CONNECT to an IPv4 address");
        ok(strcmp(host, "10.0.0.7") == 0 && port == 8080, "...as text: %s:%u", host, port);
        const unsigned char v6[] = {
                5, 1, 0, 4, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80};
        is_int(sbx_socks5_request(v6, sizeof v6, host, &port, &used), 1,
                "SOCKS5 CONNECT to an IPv6 address");
        is_str(host, "2001:db8::1", "...as text");
        is_int(sbx_socks5_request(name, 7, host, &port, &used), 0, "a request cut short wants more");
        const unsigned char bind[] = {5, 2, 0, 1, 1, 2, 3, 4, 0, 80};
        is_int(sbx_socks5_request(bind, sizeof bind, host, &port, &used), -ENOTSUP,
                "BIND: not supported (reply 7)");
        const unsigned char atyp[] = {5, 1, 0, 9, 1, 2, 3, 4, 0, 80};
        is_int(sbx_socks5_request(atyp, sizeof atyp, host, &port, &used), -EAFNOSUPPORT,
                "an unknown address type (reply 8)");
        const unsigned char p0[] = {5, 1, 0, 1, 1, 2, 3, 4, 0, 0};
        is_int(sbx_socks5_request(p0, sizeof p0, host, &port, &used), -EINVAL, "port 0");
        const unsigned char ctl[] = {5, 1, 0, 3, 3, 'a', '\n', 'b', 0, 80};
        is_int(sbx_socks5_request(ctl, sizeof ctl, host, &port, &used), -EINVAL,
                "a control character in the name");
        unsigned char rep[10];
        sbx_socks5_reply(2, rep);
        ok(rep[0] == 5 && rep[1] == 2 && rep[3] == 1 && rep[9] == 0, "a reply: not allowed by ruleset");
        test_sni();
        return done_testing();
}
