/* io.h — writing all of a buffer, reading all of one: the loops every reader and writer of a
 * pipe, a socket or a file here needs. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Write all n bytes of p to fd, through EINTR and short writes; to a socket without SIGPIPE
 * (MSG_NOSIGNAL). 0, or -errno (-EPIPE when nothing more could be written). */
int sbx_write_all(int fd, const void *p, size_t n);
/* Read exactly n bytes into p, through EINTR and short reads. 0, or -errno (-EPIPE at an end of
 * file before n). */
int sbx_read_full(int fd, void *p, size_t n);
/* The whole regular file open at fd, from its start (pread: the offset is left alone), at most
 * max bytes: 0 with *ret (malloc'ed, NUL-terminated: a text file reads as a string) and
 * *ret_len; -EBADF not a regular file, -EFBIG larger than max, -EBADMSG it shrank while read. */
int sbx_read_fd_all(int fd, size_t max, char **ret, size_t *ret_len);
/* Copy both ways between the connected sockets a and b until both have ended (each end is passed
 * on as a shutdown of the other side's write), blocking; the bytes each way into *ret_ab and
 * *ret_ba when given. 0, or -errno of a failed write. */
int sbx_splice_both(int a, int b, uint64_t *ret_ab, uint64_t *ret_ba);

/* A growing byte buffer: p[0, n) held, cap allocated. Zero-initialised is empty. */
typedef struct sbx_buf {
        uint8_t *p;
        size_t n, cap;
} sbx_buf;

/* Append data[0, n): 0, or -ENOMEM (b unchanged). */
int sbx_buf_put(sbx_buf *b, const void *data, size_t n);
/* Drop the first n bytes (n <= b->n). */
void sbx_buf_drop(sbx_buf *b, size_t n);
void sbx_buf_done(sbx_buf *b);
