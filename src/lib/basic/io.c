/* io.c — see io.h. */
#include "io.h"

#include <errno.h>
#include <poll.h>
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

int sbx_splice_both(int a, int b, uint64_t *ret_ab, uint64_t *ret_ba) {
        uint64_t moved[2] = {0, 0};
        struct pollfd pf[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
        char buf[65536];
        int open_n = 2, r = 0;
        while (r == 0 && open_n > 0) {
                int k = poll(pf, 2, -1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                for (int i = 0; i < 2 && r == 0; i++) {
                        if (pf[i].fd < 0 || !pf[i].revents)
                                continue;
                        ssize_t n = read(pf[i].fd, buf, sizeof buf);
                        if (n < 0 && errno == EINTR)
                                continue;
                        int to = i == 0 ? b : a;
                        if (n <= 0) { /* its end: the other side hears it */
                                (void) shutdown(to, SHUT_WR);
                                pf[i].fd = -1;
                                open_n--;
                                continue;
                        }
                        r = sbx_write_all(to, buf, (size_t) n);
                        moved[i] += (uint64_t) n;
                }
        }
        if (ret_ab)
                *ret_ab = moved[0];
        if (ret_ba)
                *ret_ba = moved[1];
        return r;
}
