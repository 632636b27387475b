/* proxy-proto.h — the protocols a sandbox's egress proxy speaks (DESIGN.md, "Network: egress
 * allowlist and host services"), parsed apart from any socket so that they can be tested and
 * fuzzed alone: an HTTP proxy request (CONNECT host:port, or a request whose target is an
 * absolute http:// URI) and SOCKS5 (RFC 1928: the greeting, then one CONNECT request; no
 * authentication, no BIND, no UDP). Names stay names: the proxy resolves them, never the
 * sandbox. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define SBX_PROXY_HEAD_MAX (64 * 1024)

typedef struct sbx_proxy_req {
        bool connect; /* CONNECT host:port (a tunnel); else a plain HTTP request to forward */
        char method[24];
        char host[256]; /* a name, or an address (IPv6 without brackets) */
        unsigned port;
        size_t target_off, target_len; /* HTTP: the origin-form target ("/path?q") in the head */
        size_t head_len; /* the request head, through its empty line */
} sbx_proxy_req;

/* The head of an HTTP proxy request in buf[0, n): 1 with *ret when it is all there, 0 when more
 * bytes are needed, -EINVAL when it is malformed (why says how), -E2BIG past SBX_PROXY_HEAD_MAX. */
int sbx_proxy_parse(const char *buf, size_t n, sbx_proxy_req *ret, char *why, size_t why_size);

/* The head as the origin server takes it (HTTP, not CONNECT): the origin-form target, the
 * Proxy-* and Connection headers dropped, "Connection: close" added (one request per
 * connection); the body that follows the head is the caller's to pass on. A new string, its
 * length in *ret_len; NULL on ENOMEM. */
char *sbx_proxy_rewrite(const char *buf, const sbx_proxy_req *r, size_t *ret_len);

/* SOCKS5's greeting (VER 5, NMETHODS, METHODS): 1 with *used when whole and it offers "no
 * authentication", 0 when more bytes are needed, -EINVAL otherwise. */
int sbx_socks5_greeting(const unsigned char *b, size_t n, size_t *used);
/* SOCKS5's request: 1 with host, port and *used when whole and a CONNECT (names as names,
 * addresses as text); 0 when more bytes are needed; -ENOTSUP for BIND or UDP ASSOCIATE (reply
 * 0x07), -EAFNOSUPPORT for an unknown address type (reply 0x08), -EINVAL when malformed. */
int sbx_socks5_request(
        const unsigned char *b, size_t n, char host[static 256], unsigned *port, size_t *used);
/* The reply to a SOCKS5 request: REP (0 succeeded, 2 not allowed by ruleset, 4 host
 * unreachable, 5 refused, 7 command not supported, 8 address type not supported), bound address
 * 0.0.0.0:0. Writes 10 bytes into out. */
void sbx_socks5_reply(unsigned char rep, unsigned char out[static 10]);

/* The server name (SNI) of a TLS ClientHello at the start of buf[0, n) (the first handshake
 * record): 1 with name (lowercased) when found, 0 when more bytes are needed, -ENOENT when it is a
 * ClientHello without one, -EINVAL when it is not a TLS ClientHello (or a malformed one). */
int sbx_tls_sni(const unsigned char *b, size_t n, char name[static 256]);
