/* fuzz-proxy-proto.c — libFuzzer target: the egress proxy's protocols (src/lib/supervise/
 * proxy-proto.c), which read what a sandbox sends: an HTTP proxy request head (parsed, and
 * rewritten when whole), SOCKS5's greeting and request, a TLS ClientHello's server name, and a
 * host service's request head (parsed, rewritten) and answer's status line.
 *
 * Input: the first byte picks HTTP (0 mod 4), SOCKS5 (1), TLS (2) or a service's HTTP (3); the rest
 * is what the sandbox (or a service) sent, in a buffer of its exact size; the credential's checks
 * (proxy-auth.h: Proxy-Authorization in a whole head, RFC 1929) on the same bytes. Checked: a whole head
 * lies inside the input, its host is terminated and its port in range, its target inside the head, the
 * rewrite's length is its string's; a whole SOCKS5 message lies inside the input. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervise/proxy-auth.h"
#include "supervise/proxy-proto.h"
#include "supervise/service-http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size == 0)
                return 0;
        const uint8_t *in = data + 1;
        size_t n = size - 1;
        char *buf = malloc(n ? n : 1);
        if (!buf)
                return 0;
        memcpy(buf, in, n);
        if (data[0] % 4 == 2) {
                char name[256];
                int k = sbx_tls_sni((const unsigned char *) buf, n, name);
                if (k == 1 && (!memchr(name, 0, sizeof name) || name[0] == 0))
                        abort();
                if (k != 1 && k != 0 && k != -ENOENT && k != -EINVAL)
                        abort();
        } else if (data[0] % 4 == 3) {
                char method[24], path[512];
                size_t head = 0;
                int k = sbx_http_request_head(buf, n, method, path, &head);
                if (k == 1) {
                        if (head > n || !memchr(method, 0, sizeof method) || !memchr(path, 0, sizeof path))
                                abort();
                        size_t len = 0;
                        char *w = sbx_http_close_head(buf, head, &len);
                        if (w && len > head + 19)
                                abort();
                        free(w);
                } else if (k != 0 && k != -EINVAL && k != -E2BIG)
                        abort();
                int st = sbx_http_status(buf, n);
                if (st > 999)
                        abort();
        } else if (data[0] % 2 == 0) {
                sbx_proxy_req r;
                char why[200];
                int k = sbx_proxy_parse(buf, n, &r, why, sizeof why);
                if (k == 1) {
                        if (r.head_len > n || !memchr(r.host, 0, sizeof r.host) || r.port == 0 ||
                                r.port > 65535 || r.target_off + r.target_len > r.head_len)
                                abort();
                        /* the credential's check reads the head alone (proxy-auth.h) */
                        (void) sbx_proxy_auth_ok(buf, r.head_len, SBX_PROXY_USER, "0123456789abcdef");
                        if (!r.connect) {
                                size_t len = 0;
                                char *w = sbx_proxy_rewrite(buf, &r, &len);
                                if (w && strlen(w) != len)
                                        abort();
                                free(w);
                        }
                } else if (k != 0 && k != -EINVAL && k != -E2BIG)
                        abort();
        } else {
                size_t used = 0;
                int k = sbx_socks5_greeting((const unsigned char *) buf, n, &used);
                if (k == 1 && used > n)
                        abort();
                char host[256];
                unsigned port = 0;
                k = sbx_socks5_request((const unsigned char *) buf, n, host, &port, &used);
                if (k == 1 && (used > n || !memchr(host, 0, sizeof host) || port == 0 || port > 65535))
                        abort();
                k = sbx_socks5_userpass((const unsigned char *) buf, n, SBX_PROXY_USER, "s3cret", &used);
                if ((k == 1 && used > n) || (k != 1 && k != 0 && k != -EACCES && k != -EINVAL))
                        abort();
        }
        free(buf);
        return 0;
}
