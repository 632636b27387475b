/* proxy-auth.h — the egress proxy's credential, for a proxy that others could reach: on the
 * `landlock` backend the sandbox has no network namespace of its own, its proxy listens on the
 * host's loopback, and every process of the host (and every other sandbox) could connect to it.
 * Each sandbox gets a random secret of its own, handed to it in its proxy URL
 * (http://sbx:SECRET@127.0.0.1:PORT); a connection that does not present it is refused before
 * anything is judged. HTTP: `Proxy-Authorization: Basic base64(sbx:SECRET)` (else 407); SOCKS5:
 * the username/password method (RFC 1929; else no acceptable method, or status 1). Parsed apart
 * from any socket, like proxy-proto.h, so that it can be tested and fuzzed alone. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define SBX_PROXY_USER "sbx"
#define SBX_PROXY_SECRET_LEN 32 /* hex characters: 128 bits from getrandom */

/* A fresh secret: SBX_PROXY_SECRET_LEN lowercase hex characters and a NUL. 0 or -errno. */
int sbx_proxy_secret_new(char out[static SBX_PROXY_SECRET_LEN + 1]);

/* a[0, an) equals b[0, bn), in a time that depends on the lengths only. */
bool sbx_secret_equal(const void *a, size_t an, const void *b, size_t bn);

/* Whether the HTTP request head buf[0, head_len) carries a Proxy-Authorization header with the
 * Basic scheme naming exactly user:pass. Header names and the scheme are case-insensitive; a
 * second Proxy-Authorization header makes it false (no guessing which one counts). */
bool sbx_proxy_auth_ok(const char *buf, size_t head_len, const char *user, const char *pass);

/* SOCKS5's greeting (VER 5, NMETHODS, METHODS) for one method: 1 with *used when whole and it
 * offers method (0 none, 2 username/password), 0 when more bytes are needed, -EINVAL otherwise. */
int sbx_socks5_greeting_method(const unsigned char *b, size_t n, unsigned char method, size_t *used);

/* RFC 1929's request (VER 1, ULEN, UNAME, PLEN, PASSWD): 1 with *used when whole and it names
 * user and pass, -EACCES when whole and it names anything else, 0 when more bytes are needed,
 * -EINVAL when malformed (another version, an empty name or password). */
int sbx_socks5_userpass(const unsigned char *b, size_t n, const char *user, const char *pass, size_t *used);
