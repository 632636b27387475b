/* io.h — writing all of a buffer: the one loop every writer of a pipe or a socket here needs. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Write all n bytes of p to fd, through EINTR and short writes; to a socket without SIGPIPE
 * (MSG_NOSIGNAL). 0, or -errno (-EPIPE when nothing more could be written). */
int sbx_write_all(int fd, const void *p, size_t n);
/* Copy both ways between the connected sockets a and b until both have ended (each end is passed
 * on as a shutdown of the other side's write), blocking; the bytes each way into *ret_ab and
 * *ret_ba when given. 0, or -errno of a failed write. */
int sbx_splice_both(int a, int b, uint64_t *ret_ab, uint64_t *ret_ba);
