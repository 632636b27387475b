/* test-vm-stream.c — the microvm channel's streams (src/init/vm-stream.c, the egress proxy's
 * connections across the port): bytes both ways with their acks, the window held, ends and
 * resets, and whatever a broken or hostile other side sends (unknown ids, short frames, more
 * acked than sent, bytes after the end, past the window, random frames) handled without a crash
 * and without a stream left half-open. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "init/vm-protocol.h"
#include "init/vm-stream.h"
#include "tap.h"

static struct {
        uint32_t type, id;
        size_t n;
        char data[32];
} sent[64];
static size_t n_sent;
static uint64_t acked, data_bytes;

static void rec(uint32_t type, uint32_t id, const void *p, size_t n) {
        if (type == SBX_VM_NACK && n == 4) {
                uint32_t k;
                memcpy(&k, p, 4);
                acked += k;
        }
        if (type == SBX_VM_NDATA)
                data_bytes += n;
        size_t i = n_sent < 64 ? n_sent++ : 63;
        sent[i].type = type, sent[i].id = id, sent[i].n = n;
        if (n) /* (memcpy from NULL is undefined even for 0 bytes) */
                memcpy(sent[i].data, p, n < sizeof sent[i].data ? n : sizeof sent[i].data);
}

static bool frame(uint32_t type, uint32_t id, const void *p, size_t n) {
        char *b = malloc(4 + n);
        memcpy(b, &id, 4);
        if (n)
                memcpy(b + 4, p, n);
        bool r = sbx_vm_stream_frame(type, b, 4 + n);
        free(b);
        return r;
}

static void pump(void) {
        struct pollfd p[SBX_VM_MAX_STREAMS];
        sbx_vm_streams_poll(p);
        (void) poll(p, SBX_VM_MAX_STREAMS, 50);
        sbx_vm_streams_events(p);
}

static bool sent_type(uint32_t type, uint32_t id) {
        for (size_t i = 0; i < n_sent; i++)
                if (sent[i].type == type && sent[i].id == id)
                        return true;
        return false;
}

int main(void) {
        sbx_vm_streams_init(rec);
        int sp[2];
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
        ok(sbx_vm_stream_add(1, sp[0]) == 0, "a stream is added");
        ok(sbx_vm_stream_add(1, dup(sp[1])) == -EEXIST, "the same id twice is refused");

        ok(frame(SBX_VM_NDATA, 1, "hello", 5), "NDATA is a stream's frame");
        char buf[64] = {0};
        ok(read(sp[1], buf, sizeof buf) == 5 && memcmp(buf, "hello", 5) == 0 && acked == 5,
                "its bytes reach the socket, and what the socket took is acked");

        (void) !write(sp[1], "world", 5);
        pump();
        ok(data_bytes == 5 && sent_type(SBX_VM_NDATA, 1), "bytes from the socket go out as NDATA");

        /* the window: with no ack, no more than SBX_VM_STREAM_WINDOW is read and sent */
        static char big[200000];
        size_t put = 0;
        for (int i = 0; i < 40; i++) {
                ssize_t k = send(sp[1], big, sizeof big, MSG_DONTWAIT);
                if (k > 0)
                        put += (size_t) k;
                pump();
        }
        ok(data_bytes <= SBX_VM_STREAM_WINDOW && put > SBX_VM_STREAM_WINDOW,
                "without acks, at most the window is sent (%llu of %zu)", (unsigned long long) data_bytes,
                put);
        uint32_t k = (uint32_t) (data_bytes - 5);
        frame(SBX_VM_NACK, 1, &k, 4);
        pump();
        ok(data_bytes > SBX_VM_STREAM_WINDOW - 5, "an ack opens it again (%llu)",
                (unsigned long long) data_bytes);

        /* more acked than was ever sent: the other side is broken, the stream is reset */
        uint32_t lots = SBX_VM_STREAM_WINDOW * 2;
        n_sent = 0;
        frame(SBX_VM_NACK, 1, &lots, 4);
        ok(sent_type(SBX_VM_NRESET, 1) && sbx_vm_streams_open() == 0,
                "more acked than sent: reset and forgotten");
        close(sp[1]);

        /* ends: the peer's NEND shuts our writing half; our socket's EOF is our NEND; both: gone */
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
        sbx_vm_stream_add(2, sp[0]);
        frame(SBX_VM_NDATA, 2, "abc", 3);
        frame(SBX_VM_NEND, 2, NULL, 0);
        memset(buf, 0, sizeof buf);
        ok(read(sp[1], buf, sizeof buf) == 3 && read(sp[1], buf, sizeof buf) == 0,
                "the peer's end: its bytes, then EOF on the socket");
        ok(sbx_vm_streams_open() == 1, "still open: our socket has not ended");
        n_sent = 0;
        shutdown(sp[1], SHUT_WR);
        pump();
        ok(sent_type(SBX_VM_NEND, 2) && sbx_vm_streams_open() == 0,
                "our socket's EOF: NEND, and the stream is gone");
        close(sp[1]);

        /* a reset from the other side: forgotten, the socket closed */
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
        sbx_vm_stream_add(3, sp[0]);
        n_sent = 0;
        frame(SBX_VM_NRESET, 3, NULL, 0);
        ok(sbx_vm_streams_open() == 0 && read(sp[1], buf, 1) == 0 && n_sent == 0,
                "NRESET: forgotten, its socket closed, nothing said back");
        close(sp[1]);

        /* bytes after the end, bytes past the window, a malformed ack */
        for (int c = 0; c < 3; c++) {
                socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
                sbx_vm_stream_add(10 + (uint32_t) c, sp[0]);
                n_sent = 0;
                if (c == 0) {
                        frame(SBX_VM_NEND, 10, NULL, 0);
                        frame(SBX_VM_NDATA, 10, "x", 1);
                } else if (c == 1) {
                        shutdown(sp[1], SHUT_RD); /* nothing is taken: the bytes stay held */
                        static char w[SBX_VM_STREAM_WINDOW + 1];
                        /* the socket takes some; what it does not is held up to the window */
                        for (int i = 0; i < 8 && sbx_vm_streams_open(); i++)
                                frame(SBX_VM_NDATA, 11, w, sizeof w / 4);
                        frame(SBX_VM_NDATA, 11, w, sizeof w);
                } else
                        frame(SBX_VM_NACK, 12, "xy", 2);
                ok(sent_type(SBX_VM_NRESET, 10 + (uint32_t) c) && sbx_vm_streams_open() == 0, "%s: reset",
                        c == 0   ? "bytes after the end"
                        : c == 1 ? "bytes past the window"
                                 : "a short ack");
                close(sp[1]);
        }

        /* not a stream's frame; too short to name one; an id nobody has */
        ok(!sbx_vm_stream_frame(SBX_VM_XOUT, "abcd", 4), "another frame is not taken");
        ok(sbx_vm_stream_frame(SBX_VM_NDATA, "ab", 2), "a frame too short for an id is dropped");
        n_sent = 0;
        ok(frame(SBX_VM_NDATA, 999, "x", 1) && n_sent == 0, "an unknown id is dropped quietly");

        /* the table: full at SBX_VM_MAX_STREAMS */
        int last = 0;
        for (uint32_t i = 0; i <= SBX_VM_MAX_STREAMS; i++) {
                int q[2];
                socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, q);
                last = sbx_vm_stream_add(100 + i, q[0]);
                close(q[1]);
        }
        ok(last == -ENOSPC && sbx_vm_streams_open() == SBX_VM_MAX_STREAMS, "a full table refuses one more");
        sbx_vm_streams_close_all();
        ok(sbx_vm_streams_open() == 0, "close_all forgets them");

        /* random frames against live streams: no crash, no leak (ASan), every stream accounted */
        srand(7);
        int peers[8];
        for (uint32_t i = 0; i < 8; i++) {
                int q[2];
                socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, q);
                sbx_vm_stream_add(i, q[0]);
                peers[i] = q[1];
        }
        static char junk[70000];
        for (size_t i = 0; i < sizeof junk; i++)
                junk[i] = (char) rand();
        for (int i = 0; i < 20000; i++) {
                uint32_t type = SBX_VM_NOPEN + (uint32_t) (rand() % 10);
                size_t len = (size_t) (rand() % 3 == 0 ? rand() % 8 : rand() % (int) sizeof junk);
                memcpy(junk, &(uint32_t){(uint32_t) (rand() % 10)}, 4);
                (void) sbx_vm_stream_frame(type, junk, len);
                if (i % 64 == 0)
                        pump();
        }
        ok(sbx_vm_streams_open() <= 8, "20000 random frames: handled (%zu streams left)",
                sbx_vm_streams_open());
        sbx_vm_streams_close_all();
        for (int i = 0; i < 8; i++)
                close(peers[i]);
        return done_testing();
}
