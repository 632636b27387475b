/* io_uring — io_uring_setup: syscalls the seccomp filter never sees, and a history of bugs. */
#include "attack.h"
#include <linux/io_uring.h>

int main(void) {
        struct io_uring_params p;
        memset(&p, 0, sizeof(p));
        long fd = syscall(SYS_io_uring_setup, 4, &p);
        if (fd < 0)
                BLOCKED_ERRNO("io_uring_setup");
        ESCAPED("io_uring fd %ld", fd);
}
