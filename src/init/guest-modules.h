/* guest-modules.h — load the kernel modules a sandboxer guest image lists (/lib/modules/order,
 * one path per line below /lib/modules, in dependency order: src/lib/vm/vm-initrd.c writes it)
 * with finit_module. Shared by the guest agent (guest.c) and the test guest's PID 1
 * (tests/tools/sbx-guest-init.c). 0, or the last -errno (each failure said on stderr as
 * "WHO: load PATH: ERROR"); no list is 0. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int sbx_guest_load_modules(const char *who) {
        FILE *f = fopen("/lib/modules/order", "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        char line[256];
        int r = 0;
        while (fgets(line, sizeof line, f)) {
                line[strcspn(line, "\n")] = 0;
                if (!line[0])
                        continue;
                char path[320];
                snprintf(path, sizeof path, "/lib/modules/%s", line);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)) {
                        r = -errno;
                        dprintf(2, "%s: load %s: %s\n", who, line, strerror(errno));
                }
                if (fd >= 0)
                        close(fd);
        }
        fclose(f);
        return r;
}
