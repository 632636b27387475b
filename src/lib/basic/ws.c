/* ws.c — WebSocket framing (RFC 6455) and the handshake's key: see ws.h. SHA-1 is here only for
 * Sec-WebSocket-Accept, which the RFC fixes; nothing else of ours uses it. */
#include "basic/ws.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/io.h"

static uint32_t rol(uint32_t x, int n) {
        return (x << n) | (x >> (32 - n));
}

static void sha1_block(uint32_t h[5], const uint8_t *p) {
        uint32_t w[80];
        for (int i = 0; i < 16; i++)
                w[i] = (uint32_t) p[4 * i] << 24 | (uint32_t) p[4 * i + 1] << 16 |
                       (uint32_t) p[4 * i + 2] << 8 | p[4 * i + 3];
        for (int i = 16; i < 80; i++)
                w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int i = 0; i < 80; i++) {
                uint32_t f, k;
                if (i < 20)
                        f = (b & c) | (~b & d), k = 0x5A827999;
                else if (i < 40)
                        f = b ^ c ^ d, k = 0x6ED9EBA1;
                else if (i < 60)
                        f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
                else
                        f = b ^ c ^ d, k = 0xCA62C1D6;
                uint32_t t = rol(a, 5) + f + e + k + w[i];
                e = d, d = c, c = rol(b, 30), b = a, a = t;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

static void sha1(const void *data, size_t n, uint8_t out[20]) {
        uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
        const uint8_t *p = data;
        size_t left = n;
        for (; left >= 64; left -= 64, p += 64)
                sha1_block(h, p);
        uint8_t tail[128] = {0};
        memcpy(tail, p, left);
        tail[left] = 0x80;
        size_t tl = left + 1 + 8 <= 64 ? 64 : 128;
        uint64_t bits = (uint64_t) n * 8;
        for (int i = 0; i < 8; i++)
                tail[tl - 1 - i] = (uint8_t) (bits >> (8 * i));
        sha1_block(h, tail);
        if (tl == 128)
                sha1_block(h, tail + 64);
        for (int i = 0; i < 5; i++)
                for (int j = 0; j < 4; j++)
                        out[4 * i + j] = (uint8_t) (h[i] >> (24 - 8 * j));
}

void sbx_ws_accept_key(const char *client_key, char ret[static 29]) {
        static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
        char buf[256];
        size_t k = strnlen(client_key, 128);
        memcpy(buf, client_key, k);
        memcpy(buf + k, guid, sizeof guid - 1);
        uint8_t d[20];
        sha1(buf, k + sizeof guid - 1, d);
        char *b = sbx_base64_encode(d, sizeof d);
        snprintf(ret, 29, "%s", b ? b : "");
        free(b);
}

int sbx_ws_send(int fd, int opcode, const void *data, size_t n, bool mask) {
        uint8_t h[14];
        size_t hl = 2;
        h[0] = (uint8_t) (0x80 | (opcode & 0x0f));
        if (n < 126)
                h[1] = (uint8_t) n;
        else if (n <= 0xffff) {
                h[1] = 126;
                h[2] = (uint8_t) (n >> 8), h[3] = (uint8_t) n;
                hl = 4;
        } else {
                h[1] = 127;
                for (int i = 0; i < 8; i++)
                        h[2 + i] = (uint8_t) ((uint64_t) n >> (56 - 8 * i));
                hl = 10;
        }
        if (!mask) {
                int r = sbx_write_all(fd, h, hl);
                return r < 0 ? r : sbx_write_all(fd, data, n);
        }
        h[1] |= 0x80;
        uint8_t key[4];
        if (getrandom(key, sizeof key, 0) != sizeof key)
                memset(key, 0x5a, sizeof key);
        memcpy(h + hl, key, 4);
        hl += 4;
        uint8_t *m = malloc(hl + n);
        if (!m)
                return -ENOMEM;
        memcpy(m, h, hl);
        for (size_t i = 0; i < n; i++)
                m[hl + i] = ((const uint8_t *) data)[i] ^ key[i & 3];
        int r = sbx_write_all(fd, m, hl + n);
        free(m);
        return r;
}

int sbx_ws_send_close(int fd, unsigned code, const char *reason, bool mask) {
        char b[125];
        size_t l = reason ? strnlen(reason, 123) : 0;
        b[0] = (char) (code >> 8), b[1] = (char) code;
        memcpy(b + 2, reason ? reason : "", l);
        return sbx_ws_send(fd, SBX_WS_CLOSE, b, l + 2, mask);
}

void sbx_ws_reader_init(sbx_ws_reader *r, int fd, const char *extra, size_t n) {
        r->fd = fd;
        r->off = r->have = 0;
        if (extra && n) {
                if (n > sizeof r->buf)
                        n = sizeof r->buf;
                memcpy(r->buf, extra, n);
                r->have = n;
        }
}

static int take(sbx_ws_reader *r, void *out, size_t n) {
        char *o = out;
        while (n > 0) {
                if (r->off == r->have) {
                        ssize_t k;
                        do
                                k = read(r->fd, r->buf, sizeof r->buf);
                        while (k < 0 && errno == EINTR);
                        if (k <= 0)
                                return k < 0 && errno != ECONNRESET ? -errno : -EPIPE;
                        r->off = 0;
                        r->have = (size_t) k;
                }
                size_t c = r->have - r->off < n ? r->have - r->off : n;
                memcpy(o, r->buf + r->off, c);
                r->off += c, o += c, n -= c;
        }
        return 0;
}

int sbx_ws_recv(sbx_ws_reader *r, int *opcode, char **ret, size_t *ret_len) {
        size_t max = r->max ? r->max : 1u << 20;
        char *msg = NULL;
        size_t len = 0;
        int op = -1, rr;
        for (;;) {
                uint8_t h[2];
                if ((rr = take(r, h, 2)) < 0)
                        goto fail;
                int fop = h[0] & 0x0f;
                bool fin = h[0] & 0x80, masked = h[1] & 0x80;
                uint64_t n = h[1] & 0x7f;
                if (h[0] & 0x70) { /* no extension was negotiated */
                        rr = -EPROTO;
                        goto fail;
                }
                if (n == 126 || n == 127) {
                        uint8_t e[8];
                        size_t el = n == 126 ? 2 : 8;
                        if ((rr = take(r, e, el)) < 0)
                                goto fail;
                        n = 0;
                        for (size_t i = 0; i < el; i++)
                                n = n << 8 | e[i];
                }
                uint8_t key[4] = {0};
                if (masked && (rr = take(r, key, 4)) < 0)
                        goto fail;
                bool control = fop & 0x8;
                if ((control && (!fin || n > 125)) || (fop == SBX_WS_CONT) != (op >= 0 && !control) ||
                        (!control && fop != SBX_WS_CONT && fop != SBX_WS_TEXT && fop != SBX_WS_BINARY) ||
                        (control && fop != SBX_WS_CLOSE && fop != SBX_WS_PING && fop != SBX_WS_PONG)) {
                        rr = -EPROTO;
                        goto fail;
                }
                if (n > max || (!control && len + n > max)) {
                        rr = -EMSGSIZE;
                        goto fail;
                }
                if (control) { /* between the fragments of a message: answered on its own */
                        char *c = malloc((size_t) n + 1);
                        if (!c) {
                                rr = -ENOMEM;
                                goto fail;
                        }
                        if ((rr = take(r, c, (size_t) n)) < 0) {
                                free(c);
                                goto fail;
                        }
                        for (size_t i = 0; i < n; i++)
                                c[i] ^= (char) key[i & 3];
                        c[n] = 0;
                        if (op < 0 || fop == SBX_WS_CLOSE) {
                                free(msg);
                                *opcode = fop;
                                *ret = c;
                                *ret_len = (size_t) n;
                                return 0;
                        }
                        if (fop == SBX_WS_PING)
                                (void) sbx_ws_send(r->fd, SBX_WS_PONG, c, (size_t) n, false);
                        free(c);
                        continue;
                }
                char *p = realloc(msg, len + (size_t) n + 1);
                if (!p) {
                        rr = -ENOMEM;
                        goto fail;
                }
                msg = p;
                if ((rr = take(r, msg + len, (size_t) n)) < 0)
                        goto fail;
                for (size_t i = 0; i < n; i++)
                        msg[len + i] ^= (char) key[i & 3];
                len += (size_t) n;
                msg[len] = 0;
                if (op < 0)
                        op = fop;
                if (fin) {
                        *opcode = op;
                        *ret = msg;
                        *ret_len = len;
                        return 0;
                }
        }
fail:
        free(msg);
        return rr;
}
