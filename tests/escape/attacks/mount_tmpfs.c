/* mount_tmpfs — mount a tmpfs (on a directory made in TMPDIR), the first step of reshaping the
 * sandbox's view. */
#include "attack.h"
#include <sys/mount.h>
#include <sys/stat.h>

int main(void) {
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/sbx-mnt-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int) getpid());
        if (mkdir(dir, 0700) < 0)
                ERROR("mkdir %s: %s", dir, ename(errno));
        int r = mount("none", dir, "tmpfs", 0, "size=1m");
        int e = errno;
        if (r == 0)
                umount2(dir, MNT_DETACH);
        rmdir(dir);
        if (r < 0) {
                errno = e;
                BLOCKED_ERRNO("mount tmpfs");
        }
        ESCAPED("mounted a tmpfs on %s", dir);
}
