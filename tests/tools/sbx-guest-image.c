/* sbx-guest-image.c — what tests/integration/test-cgroup2-guest.sh boots: the microvm backend's
 * image code (src/lib/vm) run for another init. Given the init program (sbx-guest-init), prints
 * as KEY=VALUE lines the uncompressed kernel and an initramfs with that init and the 9p modules
 * (both from the same cache the backend uses), the kernel's release and the host's TSC rate in
 * kHz (empty when it cannot be told: the guest then calibrates, and ~1 boot in 10 hangs).
 * Exit 0, or 1 with the reason on stderr (no kernel: apt-get install linux-image-amd64). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "basic/error.h"
#include "vm/vm-image.h"

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: %s INIT\n", argv[0]);
                return 2;
        }
        int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                perror(argv[1]);
                return 1;
        }
        sbx_vm_image img;
        sbx_error e = {0};
        int r = sbx_vm_image_get(NULL, fd, &img, &e);
        close(fd);
        if (r < 0) {
                fprintf(stderr, "sbx-guest-image: %s\n", e.message[0] ? e.message : "cannot make the image");
                return 1;
        }
        uint64_t khz = 0;
        sbx_error te = {0};
        bool have_tsc = sbx_vm_tsc_khz(&khz, &te) >= 0;
        printf("kernel=%s\ninitrd=%s\nrelease=%s\n", img.kernel, img.initrd, img.release);
        if (have_tsc)
                printf("tsc_khz=%" PRIu64 "\n", khz);
        else
                printf("tsc_khz=\ntsc_why=%s\n", te.message);
        return 0;
}
