/* proxy-auth.c — see proxy-auth.h. */
#include "supervise/proxy-auth.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "basic/base64.h"
#include "basic/macro.h"

int sbx_proxy_secret_new(char out[static SBX_PROXY_SECRET_LEN + 1]) {
        unsigned char raw[SBX_PROXY_SECRET_LEN / 2];
        size_t have = 0;
        while (have < sizeof raw) {
                ssize_t n = getrandom(raw + have, sizeof raw - have, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                have += (size_t) n;
        }
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < sizeof raw; i++) {
                out[2 * i] = hex[raw[i] >> 4];
                out[2 * i + 1] = hex[raw[i] & 15];
        }
        out[SBX_PROXY_SECRET_LEN] = 0;
        return 0;
}

bool sbx_secret_equal(const void *a, size_t an, const void *b, size_t bn) {
        /* every byte of the longer is looked at whatever differs: the time tells the lengths only */
        const volatile unsigned char *x = a, *y = b;
        size_t n = MAX(an, bn);
        unsigned char d = an != bn;
        for (size_t i = 0; i < n; i++)
                d |= (unsigned char) ((i < an ? x[i] : 0) ^ (i < bn ? y[i] : 0));
        return d == 0;
}

static bool credential_equal(const char *got, size_t gn, const char *user, const char *pass) {
        size_t ul = strlen(user), pl = strlen(pass);
        char want[512];
        if (ul + 1 + pl >= sizeof want)
                return false;
        memcpy(want, user, ul);
        want[ul] = ':';
        memcpy(want + ul + 1, pass, pl);
        return sbx_secret_equal(got, gn, want, ul + 1 + pl);
}

bool sbx_proxy_auth_ok(const char *buf, size_t head_len, const char *user, const char *pass) {
        static const char name[] = "proxy-authorization:";
        const size_t nl = sizeof name - 1;
        bool ok = false;
        int seen = 0;
        /* the request line first: headers start after its line break */
        const char *p = memchr(buf, '\n', head_len), *end = buf + head_len;
        for (p = p ? p + 1 : end; p < end;) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                const char *le = eol ? eol : end;
                if ((size_t) (le - p) > nl && strncasecmp(p, name, nl) == 0) {
                        seen++;
                        const char *v = p + nl;
                        while (v < le && (*v == ' ' || *v == '\t'))
                                v++;
                        const char *ve = le;
                        while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                                ve--;
                        if (ve - v > 6 && strncasecmp(v, "basic", 5) == 0 && (v[5] == ' ' || v[5] == '\t')) {
                                v += 6;
                                while (v < ve && (*v == ' ' || *v == '\t'))
                                        v++;
                                char *dec = NULL;
                                size_t dl = 0;
                                if (sbx_base64_decode(v, (size_t) (ve - v), false, &dec, &dl) == 0) {
                                        ok = credential_equal(dec, dl, user, pass);
                                        explicit_bzero(dec, dl);
                                }
                                free(dec);
                        }
                }
                p = eol ? eol + 1 : end;
        }
        return ok && seen == 1;
}

int sbx_socks5_greeting_method(const unsigned char *b, size_t n, unsigned char method, size_t *used) {
        if (n < 2)
                return n && b[0] != 5 ? -EINVAL : 0;
        if (b[0] != 5 || b[1] == 0)
                return -EINVAL;
        if (n < 2u + b[1])
                return 0;
        *used = 2u + b[1];
        for (unsigned i = 0; i < b[1]; i++)
                if (b[2 + i] == method)
                        return 1;
        return -EINVAL;
}

int sbx_socks5_userpass(const unsigned char *b, size_t n, const char *user, const char *pass, size_t *used) {
        if (n < 2)
                return n && b[0] != 1 ? -EINVAL : 0;
        if (b[0] != 1 || b[1] == 0)
                return -EINVAL;
        size_t ul = b[1];
        if (n < 2 + ul + 1)
                return 0;
        size_t pl = b[2 + ul];
        if (pl == 0)
                return -EINVAL;
        if (n < 3 + ul + pl)
                return 0;
        *used = 3 + ul + pl;
        /* both compared whatever the first says: the time tells the lengths only */
        bool u = sbx_secret_equal(b + 2, ul, user, strlen(user));
        bool p = sbx_secret_equal(b + 3 + ul, pl, pass, strlen(pass));
        return u & p ? 1 : -EACCES;
}
