/* dev_kmsg — read the host's kernel log from /dev/kmsg (addresses, other tenants' events). */
#include "attack.h"

int main(void) {
        int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                BLOCKED_ERRNO("/dev/kmsg");
        char b[8192];
        ssize_t n = read(fd, b, sizeof(b));
        if (n < 0 && errno != EAGAIN)
                BLOCKED_ERRNO("read /dev/kmsg");
        ESCAPED("read the kernel log (%zd bytes)", n);
}
