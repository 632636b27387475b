/* io.c — see io.h. */
#include "io.h"

#include <errno.h>
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
