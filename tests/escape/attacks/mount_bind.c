/* mount_bind — bind-mount / (recursively) somewhere writable: a second route to every path. */
#include "attack.h"
#include <sys/mount.h>
#include <sys/stat.h>

int main(void) {
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/sbx-bind-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int) getpid());
        if (mkdir(dir, 0700) < 0)
                ERROR("mkdir %s: %s", dir, ename(errno));
        int r = mount("/", dir, NULL, MS_BIND | MS_REC, NULL);
        int e = errno;
        if (r == 0)
                umount2(dir, MNT_DETACH);
        rmdir(dir);
        if (r < 0) {
                errno = e;
                BLOCKED_ERRNO("bind mount");
        }
        ESCAPED("bind-mounted / on %s", dir);
}
