/* fuzz-feed.h — hands a fuzz input to a reader of a socket (the HTTP response readers), in
 * pieces: over a SOCK_SEQPACKET pair each read returns one piece, so where the reads split the
 * input is part of the input (deterministic, where a stream would coalesce what was written
 * together). All is written before the reader starts, then the writing end is closed: the
 * reader sees the end after the last piece. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

/* The reading end, or -1. piece: the size of each piece (0: one piece); past 128 pieces the rest
 * goes as one (the socket's buffer holds 128 small pieces and 150 KiB). */
static inline int fuzz_feed(const uint8_t *data, size_t size, size_t piece) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -1;
        size_t off = 0;
        for (unsigned count = 0; off < size; count++) {
                size_t n = size - off;
                if (piece && n > piece && count < 128)
                        n = piece;
                ssize_t k = send(sv[0], data + off, n, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k <= 0)
                        break; /* full: the rest is not sent */
                off += (size_t) k;
        }
        close(sv[0]);
        return sv[1];
}
