/* test-basic.c â\x80 the libc-only helpers of src/lib/basic: base64, error wrapping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/base64.h"
#include "basic/error.h"
#include "basic/ws.h"
#include <sys/socket.h>
#include <unistd.h>
#include "tap.h"

static void roundtrip(const char *data, size_t n, const char *want) {
        char *e = sbx_base64_encode(data, n), *d = NULL;
        size_t dn = 0;
        is_str(e, want, "encode %zu bytes", n);
        ok(sbx_base64_decode(e, strlen(e), false, &d, &dn) == 0 && dn == n && memcmp(d, data, n) == 0,
                "decode back %zu bytes", n);
        free(e);
        free(d);
}

static int load_inner(sbx_error *e) {
        return sbx_error_set(e, ENOENT, "profile: open", "no profile named %s", "profile.x");
}

static int load_outer(sbx_error *e) {
        int r = load_inner(e);
        return r < 0 ? sbx_error_wrap(e, r, "warm pool %s", "profile.x") : r;
}

static void test_error_wrap(void) {
        sbx_error e = {0};
        char buf[1024];
        is_int(load_outer(&e), -ENOENT, "wrap returns the callee's errno");
        is_str(e.message, "warm pool profile.x: no profile named profile.x", "wrap prefixes the context");
        is_str(e.step, "profile: open", "wrap keeps the step");
        is_int(sbx_error_wrap(&e, -ENOENT, "serve"), -ENOENT, "wrapped twice");
        is_str(sbx_error_format(&e, buf, sizeof buf),
                "serve: warm pool profile.x: no profile named profile.x", "contexts nest outermost first");

        sbx_error unset = {0};
        is_int(sbx_error_wrap(&unset, -EACCES, "open %s", "/etc/x"), -EACCES, "callee left *e unset");
        is_int(unset.errnum, EACCES, "errno taken from r");
        is_str(unset.message, "open /etc/x: Permission denied", "message from strerror");

        is_int(sbx_error_wrap(NULL, -EPERM, "x"), -EPERM, "NULL error: r passes through");
        is_int(sbx_error_wrap(&unset, 0, "x"), -EIO, "a non-negative r becomes -EIO");

        sbx_error at = {0};
        (void) sbx_error_set_at(&at, EINVAL, "p.yaml", 3, 7, "unknown key %s", "foo");
        (void) sbx_error_wrap(&at, -EINVAL, "profile p");
        is_str(sbx_error_format(&at, buf, sizeof buf), "p.yaml:3:7: profile p: unknown key foo",
                "file position kept");

        sbx_error big = {0};
        char longmsg[2000];
        memset(longmsg, 'm', sizeof longmsg - 1);
        longmsg[sizeof longmsg - 1] = 0;
        (void) sbx_error_set(&big, EIO, "x", "%s", longmsg);
        (void) sbx_error_wrap(&big, -EIO, "context");
        ok(strncmp(big.message, "context: mmm", 12) == 0 && strlen(big.message) == sizeof big.message - 1,
                "a long message loses its tail, not the context");
}

int main(void) {
        test_error_wrap();
        roundtrip("", 0, "");
        roundtrip("f", 1, "Zg==");
        roundtrip("fo", 2, "Zm8=");
        roundtrip("foo", 3, "Zm9v");
        roundtrip("\0\1\xff\xfe", 4, "AAH//g==");

        char *d = NULL;
        size_t n = 0;
        ok(sbx_base64_decode("Zm9v\nYmFy\r\n", 11, false, &d, &n) == 0 && n == 6 &&
                        memcmp(d, "foobar", 6) == 0,
                "line breaks are ignored");
        free(d);
        d = NULL;
        is_int(sbx_base64_decode("Zm9v!", 5, false, &d, &n), -EINVAL,
                "a character outside the alphabet: -EINVAL");
        is_int(sbx_base64_decode("-_8", 3, false, &d, &n), -EINVAL, "URL alphabet refused unless asked for");
        ok(sbx_base64_decode("-_8", 3, true, &d, &n) == 0 && n == 2 && (unsigned char) d[0] == 0xfb &&
                        (unsigned char) d[1] == 0xff,
                "URL alphabet accepted when asked for");
        free(d);
        d = NULL;
        ok(sbx_base64_decode("Zg", 2, false, &d, &n) == 0 && n == 1 && d[0] == 'f', "padding is optional");
        free(d);

        /* WebSocket: RFC 6455's own example key; frames both ways, fragmented, masked or not */
        char acc[29];
        sbx_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", acc);
        is_str(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "Sec-WebSocket-Accept of RFC 6455's example");
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0) {
                static char big[70000];
                memset(big, 'x', sizeof big);
                sbx_ws_reader r = {0};
                sbx_ws_reader_init(&r, sp[1], NULL, 0);
                int op;
                char *m = NULL;
                size_t mn = 0;
                ok(sbx_ws_send(sp[0], SBX_WS_BINARY, "hi", 2, true) == 0 &&
                                sbx_ws_recv(&r, &op, &m, &mn) == 0 && op == SBX_WS_BINARY && mn == 2 &&
                                memcmp(m, "hi", 2) == 0,
                        "a masked binary frame");
                free(m);
                m = NULL;
                pid_t w = fork(); /* 70000 bytes: more than a socket buffer */
                if (w == 0)
                        _exit(sbx_ws_send(sp[0], SBX_WS_TEXT, big, sizeof big, false) == 0 ? 0 : 1);
                ok(sbx_ws_recv(&r, &op, &m, &mn) == 0 && op == SBX_WS_TEXT && mn == sizeof big &&
                                m[69999] == 'x',
                        "a 64-bit length, unmasked");
                free(m);
                m = NULL;
                /* "ab" as two fragments with a ping between them */
                ok(write(sp[0],
                           "\x01\x01"
                           "a"
                           "\x89\x00"
                           "\x80\x01"
                           "b",
                           8) == 8 &&
                                sbx_ws_recv(&r, &op, &m, &mn) == 0 && op == SBX_WS_TEXT && mn == 2 &&
                                memcmp(m, "ab", 2) == 0,
                        "fragments joined, a ping between them answered");
                free(m);
                m = NULL;
                char pong[2];
                ok(read(sp[0], pong, 2) == 2 && (unsigned char) pong[0] == 0x8a, "the ping's pong");
                ok(write(sp[0], "\xc1\x00", 2) == 2 && sbx_ws_recv(&r, &op, &m, &mn) == -EPROTO,
                        "a reserved bit: -EPROTO");
                r.max = 10;
                ok(write(sp[0],
                           "\x82\x0b"
                           "0123456789a",
                           13) == 13 &&
                                sbx_ws_recv(&r, &op, &m, &mn) == -EMSGSIZE,
                        "over the reader's max: -EMSGSIZE");
                close(sp[0]);
                close(sp[1]);
        }
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0) {
                sbx_ws_reader r = {0};
                sbx_ws_reader_init(&r, sp[1], "\x81", 1); /* a frame begun in the bytes given */
                int op;
                char *m = NULL;
                size_t mn = 0;
                close(sp[0]);
                ok(sbx_ws_recv(&r, &op, &m, &mn) == -EPIPE, "the peer's end in a frame: -EPIPE");
                close(sp[1]);
        }
        return done_testing();
}
