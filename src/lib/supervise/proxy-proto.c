/* proxy-proto.c — see proxy-proto.h. */
#include "supervise/proxy-proto.h"

#include "supervise/proxy-auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/macro.h"

static void say(char *why, size_t size, const char *s) {
        if (why && size)
                snprintf(why, size, "%s", s);
}

/* host[:port] or [v6][:port] into host and port (dflt when absent). */
static bool split_host(const char *s, size_t n, unsigned dflt, char host[static 256], unsigned *port) {
        const char *end = s + n, *colon = NULL;
        const char *h = s;
        size_t hl;
        if (n && s[0] == '[') {
                const char *close = memchr(s, ']', n);
                if (!close || close == s + 1)
                        return false;
                h = s + 1;
                hl = (size_t) (close - h);
                if (close + 1 < end) {
                        if (close[1] != ':')
                                return false;
                        colon = close + 1;
                }
        } else {
                colon = memchr(s, ':', n);
                if (colon && memchr(colon + 1, ':', (size_t) (end - colon - 1)))
                        return false; /* an IPv6 address must be bracketed */
                hl = colon ? (size_t) (colon - s) : n;
        }
        if (hl == 0 || hl > 255)
                return false;
        for (size_t i = 0; i < hl; i++)
                if ((unsigned char) h[i] <= ' ' || h[i] == '/' || h[i] == '@' || h[i] == '\\' ||
                        h[i] == 0x7f)
                        return false;
        memcpy(host, h, hl);
        host[hl] = 0;
        *port = dflt;
        if (colon) {
                unsigned long v = 0;
                size_t pl = (size_t) (end - colon - 1);
                if (pl == 0 || pl > 5)
                        return false;
                for (size_t i = 0; i < pl; i++) {
                        if (colon[1 + i] < '0' || colon[1 + i] > '9')
                                return false;
                        v = v * 10 + (unsigned) (colon[1 + i] - '0');
                }
                if (v == 0 || v > 65535)
                        return false;
                *port = (unsigned) v;
        }
        return true;
}

int sbx_proxy_parse(const char *buf, size_t n, sbx_proxy_req *ret, char *why, size_t why_size) {
        *ret = (sbx_proxy_req){0};
        const char *end = NULL;
        for (size_t i = 3; i < n && !end; i++)
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
                        end = buf + i + 1;
        if (!end) {
                if (n > SBX_PROXY_HEAD_MAX) {
                        say(why, why_size, "the request head is larger than 64 KiB");
                        return -E2BIG;
                }
                return 0;
        }
        if ((size_t) (end - buf) > SBX_PROXY_HEAD_MAX) {
                say(why, why_size, "the request head is larger than 64 KiB");
                return -E2BIG;
        }
        ret->head_len = (size_t) (end - buf);
        const char *eol = memchr(buf, '\r', ret->head_len);
        const char *sp1 = memchr(buf, ' ', (size_t) (eol - buf));
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t) (eol - sp1 - 1)) : NULL;
        if (!sp1 || !sp2 || (size_t) (sp1 - buf) >= sizeof ret->method || sp1 == buf || sp2 == sp1 + 1 ||
                (size_t) (eol - sp2 - 1) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
                say(why, why_size, "not an HTTP/1 request line (METHOD TARGET HTTP/1.x)");
                return -EINVAL;
        }
        memcpy(ret->method, buf, (size_t) (sp1 - buf));
        for (const char *m = buf; m < sp1; m++)
                if (*m < 'A' || *m > 'Z') {
                        say(why, why_size, "the method is not a word in capitals");
                        return -EINVAL;
                }
        const char *t = sp1 + 1;
        size_t tl = (size_t) (sp2 - t);
        if (strcmp(ret->method, "CONNECT") == 0) {
                ret->connect = true;
                unsigned port = 0;
                if (!split_host(t, tl, 0, ret->host, &port) || port == 0) {
                        say(why, why_size, "CONNECT wants host:port");
                        return -EINVAL;
                }
                ret->port = port;
                return 1;
        }
        if (tl < 8 || strncasecmp(t, "http://", 7) != 0) {
                say(why, why_size,
                        tl >= 8 && strncasecmp(t, "https://", 8) == 0
                                ? "an https:// target goes through CONNECT"
                                : "a proxy request's target is an absolute http:// URI (or use CONNECT "
                                  "host:port)");
                return -EINVAL;
        }
        const char *auth = t + 7, *path = memchr(auth, '/', tl - 7);
        const char *q = memchr(auth, '?', tl - 7);
        if (q && (!path || q < path))
                path = q;
        size_t al = path ? (size_t) (path - auth) : tl - 7;
        if (memchr(auth, '@', al)) {
                say(why, why_size, "credentials in the URI are not passed on");
                return -EINVAL;
        }
        if (!split_host(auth, al, 80, ret->host, &ret->port)) {
                say(why, why_size, "the URI's host is malformed");
                return -EINVAL;
        }
        ret->target_off = path ? (size_t) (path - buf) : 0;
        ret->target_len = path ? (size_t) (sp2 - path) : 0; /* 0: "/" */
        return 1;
}

static bool drop_header(const char *line, size_t n) {
        static const char *const names[] = {
                "proxy-connection", "proxy-authorization", "proxy-authenticate", "connection", "keep-alive"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
                size_t l = strlen(names[i]);
                if (n > l && line[l] == ':' && strncasecmp(line, names[i], l) == 0)
                        return true;
        }
        return false;
}

char *sbx_proxy_rewrite(const char *buf, const sbx_proxy_req *r, size_t *ret_len) {
        char *out = malloc(r->head_len + 64);
        if (!out)
                return NULL;
        size_t k = 0;
        size_t ml = strlen(r->method);
        memcpy(out, r->method, ml);
        k = ml;
        out[k++] = ' ';
        if (r->target_len) {
                memcpy(out + k, buf + r->target_off, r->target_len);
                k += r->target_len;
        } else
                out[k++] = '/';
        memcpy(out + k, " HTTP/1.1\r\n", 11);
        k += 11;
        const char *p = memchr(buf, '\n', r->head_len) + 1,
                   *end = buf + r->head_len - 2; /* before the last CRLF */
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *next = nl ? nl + 1 : end;
                if (!drop_header(p, (size_t) (next - p))) {
                        memcpy(out + k, p, (size_t) (next - p));
                        k += (size_t) (next - p);
                }
                p = next;
        }
        memcpy(out + k, "Connection: close\r\n\r\n", 21);
        k += 21;
        out[k] = 0;
        *ret_len = k;
        return out;
}

int sbx_socks5_greeting(const unsigned char *b, size_t n, size_t *used) {
        return sbx_socks5_greeting_method(b, n, 0, used); /* "no authentication" offered */
}

int sbx_socks5_request(
        const unsigned char *b, size_t n, char host[static 256], unsigned *port, size_t *used) {
        if (n < 4)
                return n && b[0] != 5 ? -EINVAL : 0;
        if (b[0] != 5 || b[2] != 0)
                return -EINVAL;
        size_t need;
        switch (b[3]) {
        case 1:
                need = 4 + 4 + 2;
                break;
        case 3:
                if (n < 5)
                        return 0;
                if (b[4] == 0)
                        return -EINVAL;
                need = 4 + 1 + b[4] + 2;
                break;
        case 4:
                need = 4 + 16 + 2;
                break;
        default:
                return -EAFNOSUPPORT;
        }
        if (n < need)
                return 0;
        if (b[1] != 1)
                return -ENOTSUP;
        if (b[3] == 1)
                inet_ntop(AF_INET, b + 4, host, 256);
        else if (b[3] == 4)
                inet_ntop(AF_INET6, b + 4, host, 256);
        else {
                for (unsigned i = 0; i < b[4]; i++)
                        if (b[5 + i] <= ' ' || b[5 + i] == 0x7f)
                                return -EINVAL;
                memcpy(host, b + 5, b[4]);
                host[b[4]] = 0;
        }
        *port = (unsigned) b[need - 2] << 8 | b[need - 1];
        if (*port == 0)
                return -EINVAL;
        *used = need;
        return 1;
}

void sbx_socks5_reply(unsigned char rep, unsigned char out[static 10]) {
        static const unsigned char tail[] = {0, 1, 0, 0, 0, 0, 0, 0};
        out[0] = 5;
        out[1] = rep;
        memcpy(out + 2, tail, sizeof tail);
}

static unsigned be16(const unsigned char *p) {
        return (unsigned) p[0] << 8 | p[1];
}

#define HELLO_MAX 16384 /* a ClientHello larger than this is not judged: refused */

int sbx_tls_sni(const unsigned char *b, size_t n, char name[static 256]) {
        /* The handshake message, gathered from as many handshake records as it spans (a client may
         * split it: a filter that read only the first record could be walked around). */
        unsigned char hs[HELLO_MAX + 4];
        size_t have = 0, hlen = 0;
        bool known = false;
        for (size_t off = 0;;) {
                /* record: ContentType handshake (22), version 3.x, length */
                if (n > off && b[off] != 22)
                        return -EINVAL;
                if (n > off + 1 && b[off + 1] != 3)
                        return -EINVAL;
                if (n < off + 5)
                        return 0;
                size_t rec = be16(b + off + 3);
                if (rec == 0 || rec > 16384)
                        return -EINVAL;
                size_t take = MIN(rec, n - off - 5);
                if (have + take > sizeof hs)
                        return -EINVAL;
                memcpy(hs + have, b + off + 5, take);
                have += take;
                if (!known && have >= 4) {
                        if (hs[0] != 1) /* ClientHello */
                                return -EINVAL;
                        hlen = (size_t) hs[1] << 16 | (size_t) hs[2] << 8 | hs[3];
                        if (hlen > HELLO_MAX)
                                return -EINVAL;
                        known = true;
                }
                if (known && have >= hlen + 4)
                        break;
                if (take < rec)
                        return 0; /* this record is not all here yet */
                off += 5 + rec;
        }
        const unsigned char *h = hs, *end = hs + 4 + hlen;
        const unsigned char *p = h + 4 + 2 + 32; /* version, random */
        if (p + 1 > end || p + 1 + p[0] > end)
                return -EINVAL;
        p += 1 + p[0]; /* session id */
        if (p + 2 > end || p + 2 + be16(p) > end)
                return -EINVAL;
        p += 2 + be16(p); /* cipher suites */
        if (p + 1 > end || p + 1 + p[0] > end)
                return -EINVAL;
        p += 1 + p[0]; /* compression methods */
        if (p == end)
                return -ENOENT; /* no extensions */
        if (p + 2 > end || p + 2 + be16(p) > end)
                return -EINVAL;
        const unsigned char *x = p + 2, *xend = p + 2 + be16(p);
        while (x + 4 <= xend) {
                unsigned type = be16(x), len = be16(x + 2);
                if (x + 4 + len > xend)
                        return -EINVAL;
                if (type == 0) { /* server_name: a list of (type, name); host_name is type 0 */
                        const unsigned char *l = x + 4, *lend = x + 4 + len;
                        if (l + 2 > lend || l + 2 + be16(l) > lend)
                                return -EINVAL;
                        for (l += 2; l + 3 <= lend;) {
                                unsigned nl = be16(l + 1);
                                if (l + 3 + nl > lend)
                                        return -EINVAL;
                                if (l[0] == 0) {
                                        if (nl == 0 || nl > 255)
                                                return -EINVAL;
                                        for (unsigned i = 0; i < nl; i++) {
                                                unsigned char ch = l[3 + i];
                                                if (ch < 0x21 || ch > 0x7e)
                                                        return -EINVAL;
                                                name[i] = (char) (ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
                                        }
                                        name[nl] = 0;
                                        return 1;
                                }
                                l += 3 + nl;
                        }
                        return -ENOENT;
                }
                x += 4 + len;
        }
        return -ENOENT;
}
