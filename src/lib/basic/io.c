/* io.c — see io.h. */
#include "io.h"

#include "macro.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

int sbx_write_all(int fd, const void *p, size_t n) {
        const char *c = p;
        while (n > 0) {
                ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
                if (k < 0 && errno == ENOTSOCK)
                        k = write(fd, c, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EPIPE;
                c += k;
                n -= (size_t) k;
        }
        return 0;
}

int sbx_read_full(int fd, void *p, size_t n) {
        char *c = p;
        while (n > 0) {
                ssize_t k = read(fd, c, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EPIPE;
                c += k;
                n -= (size_t) k;
        }
        return 0;
}

int sbx_read_fd_all(int fd, size_t max, char **ret, size_t *ret_len) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADF;
        if ((uint64_t) st.st_size > max)
                return -EFBIG;
        size_t size = (size_t) st.st_size, got = 0;
        char *p = malloc(size + 1);
        if (!p)
                return -ENOMEM;
        while (got < size) {
                ssize_t k = pread(fd, p + got, size - got, (off_t) got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        int r = k < 0 ? -errno : -EBADMSG; /* shrank under us */
                        free(p);
                        return r;
                }
                got += (size_t) k;
        }
        p[got] = 0;
        *ret = p;
        *ret_len = got;
        return 0;
}

/* One direction's move: through a pipe with splice() (no copy through user space; the pipe grown
 * to 1 MiB where the system lets it), else read/write. 1 moved, 0 the end, < 0 an error. */
typedef struct lane {
        int from, to;
        int pipe[2]; /* -1: read/write */
        size_t in_pipe;
} lane;

static int lane_move(lane *l, char *buf, size_t size, uint64_t *moved) {
        if (l->pipe[0] >= 0) {
                ssize_t n =
                        splice(l->from, NULL, l->pipe[1], NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n < 0 && errno == EINTR)
                        return 1;
                if (n < 0 && errno == EAGAIN && l->in_pipe == 0) {
                        /* readable, yet nothing to splice: TCP stops splicing at urgent data
                         * (MSG_OOB), which a read steps over; else the loop would spin */
                        ssize_t k = read(l->from, buf, size);
                        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                                return 1;
                        if (k <= 0)
                                return k < 0 ? -errno : 0;
                        int r = sbx_write_all(l->to, buf, (size_t) k);
                        if (r < 0)
                                return r;
                        *moved += (uint64_t) k;
                        return 1;
                }
                if (n < 0 && (errno == EINVAL || errno == ENOSYS) && l->in_pipe == 0) {
                        /* not splice-able (this kind of socket): read/write from now on */
                        close(l->pipe[0]);
                        close(l->pipe[1]);
                        l->pipe[0] = l->pipe[1] = -1;
                        return lane_move(l, buf, size, moved);
                }
                if (n <= 0)
                        return n < 0 ? -errno : 0;
                l->in_pipe += (size_t) n;
                while (l->in_pipe > 0) {
                        ssize_t w = splice(l->pipe[0], NULL, l->to, NULL, l->in_pipe, SPLICE_F_MOVE);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                return w < 0 ? -errno : -EPIPE;
                        l->in_pipe -= (size_t) w;
                }
                *moved += (uint64_t) n;
                return 1;
        }
        ssize_t n = read(l->from, buf, size);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 1;
        if (n <= 0)
                return n < 0 ? -errno : 0;
        int r = sbx_write_all(l->to, buf, (size_t) n);
        if (r < 0)
                return r;
        *moved += (uint64_t) n;
        return 1;
}

int sbx_splice_both(int a, int b, uint64_t *ret_ab, uint64_t *ret_ba) {
        uint64_t moved[2] = {0, 0};
        lane lanes[2] = {{.from = a, .to = b, .pipe = {-1, -1}}, {.from = b, .to = a, .pipe = {-1, -1}}};
        for (int i = 0; i < 2; i++)
                if (pipe2(lanes[i].pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
                        (void) fcntl(lanes[i].pipe[1], F_SETPIPE_SZ, 1 << 20);
                        /* the write end blocks on a full pipe only through SPLICE_F_NONBLOCK */
                        (void) fcntl(lanes[i].pipe[0], F_SETFL, 0);
                        (void) fcntl(lanes[i].pipe[1], F_SETFL, 0);
                }
        struct pollfd pf[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
        char buf[65536];
        int open_n = 2, r = 0;
        while (r == 0 && open_n > 0) {
                int k = poll(pf, 2, -1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        break;
                }
                for (int i = 0; i < 2 && r == 0; i++) {
                        if (pf[i].fd < 0 || !pf[i].revents)
                                continue;
                        int m = lane_move(&lanes[i], buf, sizeof buf, &moved[i]);
                        if (m <= 0) { /* its end (or an error): the other side hears it */
                                (void) shutdown(lanes[i].to, SHUT_WR);
                                pf[i].fd = -1;
                                open_n--;
                                if (m < 0 && m != -ECONNRESET && m != -EPIPE)
                                        r = m;
                        }
                }
        }
        for (int i = 0; i < 2; i++)
                if (lanes[i].pipe[0] >= 0) {
                        close(lanes[i].pipe[0]);
                        close(lanes[i].pipe[1]);
                }
        if (ret_ab)
                *ret_ab = moved[0];
        if (ret_ba)
                *ret_ba = moved[1];
        return r;
}

int sbx_buf_put(sbx_buf *b, const void *data, size_t n) {
        if (n == 0)
                return 0;
        if (b->n + n > b->cap) {
                size_t cap = MAX(b->cap * 2, b->n + n + 4096);
                uint8_t *p = realloc(b->p, cap);
                if (!p)
                        return -ENOMEM;
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->n, data, n);
        b->n += n;
        return 0;
}

void sbx_buf_drop(sbx_buf *b, size_t n) {
        memmove(b->p, b->p + n, b->n - n);
        b->n -= n;
}

void sbx_buf_done(sbx_buf *b) {
        free(b->p);
        *b = (sbx_buf){0};
}
