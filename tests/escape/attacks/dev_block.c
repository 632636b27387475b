/* dev_block — open a host disk or memory device for reading (the host's raw data). */
#include "attack.h"

int main(void) {
        static const char *const devs[] = { "/dev/mem", "/dev/kmem", "/dev/port", "/dev/sda", "/dev/vda",
                "/dev/xvda", "/dev/nvme0n1", "/dev/hda", "/dev/mmcblk0", "/dev/dm-0", "/dev/zram0", NULL };
        errset es = { { 0 } };
        for (int i = 0; devs[i]; i++) {
                int fd = open(devs[i], O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                        char b[512];
                        ssize_t n = read(fd, b, sizeof(b));
                        ESCAPED("%s open for reading (read %zd)", devs[i], n);
                }
                errset_add(&es, errno);
        }
        BLOCKED("%s", es.names);
}
