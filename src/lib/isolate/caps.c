/* caps.c — capabilities, all of them, gone. */
#include "isolate/caps.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int sbx_caps_last_cap(void) {
        static int cached = -1;
        if (cached >= 0)
                return cached;
        int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
        int v = CAP_LAST_CAP;
        if (fd >= 0) {
                char b[16] = {0};
                if (read(fd, b, sizeof b - 1) > 0)
                        v = atoi(b);
                close(fd);
        }
        if (v < CAP_LAST_CAP || v > 63)
                v = v > 63 ? 63 : CAP_LAST_CAP;
        cached = v;
        return v;
}

int sbx_caps_drop_bounding(int last_cap) {
        for (int c = 0; c <= last_cap; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return -errno;
        return 0;
}

int sbx_caps_clear(void) {
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -errno;
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct d[2] = {0};
        if (syscall(SYS_capset, &h, d) < 0)
                return -errno;
        return 0;
}
