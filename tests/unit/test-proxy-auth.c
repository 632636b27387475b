/* test-proxy-auth.c — the egress proxy's credential apart from sockets (supervise/proxy-auth.h):
 * the secret's shape, the constant-time comparison, Proxy-Authorization: Basic in a request head
 * (missing, wrong, doubled, odd spacing and case), and SOCKS5's username/password method (RFC
 * 1929) given whole, in pieces, wrong and malformed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/base64.h"
#include "supervise/proxy-auth.h"
#include "tap.h"

static bool head_ok(const char *head) {
        return sbx_proxy_auth_ok(head, strlen(head), "sbx", "s3cret");
}

int main(void) {
        /* the secret: 32 hex characters, two in a row differ */
        char a[SBX_PROXY_SECRET_LEN + 1], b[SBX_PROXY_SECRET_LEN + 1];
        is_int(sbx_proxy_secret_new(a), 0, "a secret is made");
        is_int(sbx_proxy_secret_new(b), 0, "a second secret is made");
        is_int(strlen(a), 32, "32 characters");
        is_int(strspn(a, "0123456789abcdef"), 32, "all lowercase hex (safe in a URL's userinfo)");
        ok(strcmp(a, b) != 0, "two secrets differ");

        ok(sbx_secret_equal("abc", 3, "abc", 3), "equal bytes are equal");
        ok(!sbx_secret_equal("abc", 3, "abd", 3), "a byte differs");
        ok(!sbx_secret_equal("abc", 3, "abcd", 4), "a prefix is not equal");
        ok(!sbx_secret_equal("", 0, "a", 1), "empty is not equal to something");
        ok(sbx_secret_equal("", 0, "", 0), "empty equals empty");

        /* HTTP: base64("sbx:s3cret") = c2J4OnMzY3JldA== */
        ok(head_ok("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\nProxy-Authorization: Basic "
                   "c2J4OnMzY3JldA==\r\n\r\n"),
                "CONNECT with the credential");
        ok(head_ok("GET http://h/ HTTP/1.1\r\nproxy-authorization:basic   c2J4OnMzY3JldA==  \r\n\r\n"),
                "header name and scheme in any case, spaces around");
        ok(head_ok("GET http://h/ HTTP/1.1\nProxy-Authorization: Basic c2J4OnMzY3JldA==\n\n"),
                "bare line feeds");
        ok(!head_ok("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n"), "no header: refused");
        ok(!head_ok("CONNECT h:443 HTTP/1.1\r\nProxy-Authorization: Basic c2J4Ondyb25n\r\n\r\n"),
                "sbx:wrong refused");
        ok(!head_ok("CONNECT h:443 HTTP/1.1\r\nProxy-Authorization: Bearer c2J4OnMzY3JldA==\r\n\r\n"),
                "another scheme refused");
        ok(head_ok("CONNECT h:443 HTTP/1.1\r\nProxy-Authorization: Basic c2J4OnMzY3JldA\r\n\r\n"),
                "unpadded base64 accepted (padding is optional)");
        ok(!head_ok("CONNECT h:443 HTTP/1.1\r\nProxy-Authorization: Basic c2J4OnMzY3JldA==\r\n"
                    "Proxy-Authorization: Basic c2J4Ondyb25n\r\n\r\n"),
                "two headers: refused, whichever is right");
        ok(!head_ok("CONNECT h:443 HTTP/1.1\r\nProxy-Authorization: Basic !!!!\r\n\r\n"),
                "not base64: refused");
        ok(!head_ok("CONNECT h:443 HTTP/1.1\r\nX-Proxy-Authorization: Basic c2J4OnMzY3JldA==\r\n\r\n"),
                "a header that only ends like it does not count");
        ok(!head_ok("Proxy-Authorization: Basic c2J4OnMzY3JldA== HTTP/1.1\r\n\r\n"),
                "the request line is not a header");
        {
                /* the credential with a prefix of it, or longer */
                char *enc = sbx_base64_encode("sbx:s3cretX", 11), head[256];
                snprintf(head, sizeof head, "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n",
                        enc);
                ok(!head_ok(head), "a longer password refused");
                free(enc);
                enc = sbx_base64_encode("sbx:s3cre", 9);
                snprintf(head, sizeof head, "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n",
                        enc);
                ok(!head_ok(head), "a prefix of the password refused");
                free(enc);
        }

        /* SOCKS5: the greeting must offer username/password */
        size_t used = 0;
        is_int(sbx_socks5_greeting_method((const unsigned char *) "\x05\x02\x00\x02", 4, 2, &used), 1,
                "a greeting offering none and username/password: method 2 found");
        is_int(used, 4, "the whole greeting used");
        is_int(sbx_socks5_greeting_method((const unsigned char *) "\x05\x01\x00", 3, 2, &used), -EINVAL,
                "a greeting offering no authentication only: refused when a credential is needed");
        is_int(sbx_socks5_greeting_method((const unsigned char *) "\x05\x02\x00", 3, 2, &used), 0,
                "a greeting in pieces: more needed");
        is_int(sbx_socks5_greeting_method((const unsigned char *) "\x04\x01\x00", 3, 0, &used), -EINVAL,
                "SOCKS4 refused");

        static const unsigned char up[] = "\x01\x03sbx\x06s3cret";
        const size_t upn = sizeof up - 1;
        is_int(sbx_socks5_userpass(up, upn, "sbx", "s3cret", &used), 1, "RFC 1929: the credential");
        is_int(used, upn, "the whole request used");
        for (size_t k = 0; k < upn; k++)
                if (sbx_socks5_userpass(up, k, "sbx", "s3cret", &used) != 0) {
                        ok(false, "a prefix of %zu bytes asks for more", k);
                        goto pieces_done;
                }
        ok(true, "every prefix of the request asks for more");
pieces_done:
        is_int(sbx_socks5_userpass(
                       (const unsigned char *) "\x01\x03sbx\x06s3creT", upn, "sbx", "s3cret", &used),
                -EACCES, "a wrong password: refused");
        is_int(sbx_socks5_userpass(
                       (const unsigned char *) "\x01\x03sbY\x06s3cret", upn, "sbx", "s3cret", &used),
                -EACCES, "a wrong user: refused");
        is_int(sbx_socks5_userpass(
                       (const unsigned char *) "\x01\x03sbx\x05s3cre", 11, "sbx", "s3cret", &used),
                -EACCES, "a prefix of the password: refused");
        is_int(sbx_socks5_userpass(
                       (const unsigned char *) "\x05\x03sbx\x06s3cret", upn, "sbx", "s3cret", &used),
                -EINVAL, "another version: malformed");
        is_int(sbx_socks5_userpass((const unsigned char *) "\x01\x03sbx\x00", 6, "sbx", "s3cret", &used),
                -EINVAL, "an empty password: malformed");
        return done_testing();
}
