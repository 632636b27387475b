/* ws.h — WebSocket (RFC 6455) framing, libc only: the PTY attach stream of `serve` (server side,
 * over a connection libmicrohttpd upgraded) and of `sandboxer exec -it` (client side). One
 * message at a time, blocking; fragmented messages are joined; no extensions. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum {
        SBX_WS_CONT = 0x0,
        SBX_WS_TEXT = 0x1,
        SBX_WS_BINARY = 0x2,
        SBX_WS_CLOSE = 0x8,
        SBX_WS_PING = 0x9,
        SBX_WS_PONG = 0xA,
};

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64(SHA-1(key + RFC 6455's GUID)). */
void sbx_ws_accept_key(const char *client_key, char ret[static 29]);

/* One frame, FIN set: masked (as a client must) or not (as a server must). 0 or -errno. */
int sbx_ws_send(int fd, int opcode, const void *data, size_t n, bool mask);
/* A close frame with a status code and a reason (at most 123 bytes). */
int sbx_ws_send_close(int fd, unsigned code, const char *reason, bool mask);

typedef struct sbx_ws_reader {
        int fd;
        char buf[16384];
        size_t off, have; /* unread bytes: buf[off..have) */
        size_t max; /* largest message taken (0: 1 MiB) */
} sbx_ws_reader;

/* Bytes already read past the HTTP head (libmicrohttpd's extra_in, a client's over-read): taken
 * first. */
void sbx_ws_reader_init(sbx_ws_reader *r, int fd, const char *extra, size_t n);
/* The next message: *opcode (TEXT, BINARY, CLOSE, PING, PONG), its payload (newly allocated,
 * NUL-terminated) in *ret and *ret_len. 0; -EPIPE at the peer's end; -EPROTO for a malformed
 * frame; -EMSGSIZE for one larger than max; -errno. */
int sbx_ws_recv(sbx_ws_reader *r, int *opcode, char **ret, size_t *ret_len);
