/* base64.c — see base64.h. */
#include "basic/base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *sbx_base64_encode(const void *data, size_t n) {
        const unsigned char *s = data;
        char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) s[i] << 16 | (i + 1 < n ? (uint32_t) s[i + 1] << 8 : 0) |
                             (i + 2 < n ? s[i + 2] : 0);
                *o++ = alphabet[(v >> 18) & 63];
                *o++ = alphabet[(v >> 12) & 63];
                *o++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
                *o++ = i + 2 < n ? alphabet[v & 63] : '=';
        }
        *o = 0;
        return out;
}

static int value(char c, bool url) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+' || (url && c == '-'))
                return 62;
        if (c == '/' || (url && c == '_'))
                return 63;
        return -1;
}

int sbx_base64_decode(const char *s, size_t n, bool url, char **ret, size_t *ret_len) {
        char *out = malloc(n / 4 * 3 + 4);
        if (!out)
                return -ENOMEM;
        size_t o = 0;
        uint32_t acc = 0;
        int bits = 0;
        for (size_t i = 0; i < n && s[i] != '='; i++) {
                if (s[i] == '\n' || s[i] == '\r')
                        continue;
                int v = value(s[i], url);
                if (v < 0) {
                        free(out);
                        return -EINVAL;
                }
                acc = acc << 6 | (uint32_t) v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (char) ((acc >> bits) & 0xff);
                }
        }
        out[o] = 0;
        *ret = out;
        *ret_len = o;
        return 0;
}
