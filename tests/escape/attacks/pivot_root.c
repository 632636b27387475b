/* pivot_root — pivot_root(".", ".") on /: swap the root of our mount namespace. Where / cannot
 * be pivoted (EINVAL: a namespace root without a parent mount, as on some VM hosts) it pivots
 * instead between two tmpfs mounts of its own, after a chroot into the first. */
#include "attack.h"
#include <sys/mount.h>
#include <sys/stat.h>

int main(void) {
        if (chdir("/") < 0)
                ERROR("chdir /: %s", ename(errno));
        if (syscall(SYS_pivot_root, ".", ".") == 0)
                ESCAPED("pivot_root(\".\", \".\") on / succeeded");
        if (errno != EINVAL)
                BLOCKED_ERRNO("pivot_root");
        char a[512], b[600];
        snprintf(a, sizeof(a), "%s/sbx-pivot-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int) getpid());
        snprintf(b, sizeof(b), "%s/new", a);
        if (mkdir(a, 0700) < 0 || mount("none", a, "tmpfs", 0, NULL) < 0 || mkdir(b, 0700) < 0 ||
                mount("none", b, "tmpfs", 0, NULL) < 0 || chroot(a) < 0 || chdir("/new") < 0)
                BLOCKED("%s pivot_root gave EINVAL on /, and the fallback set-up failed", ename(errno));
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                BLOCKED_ERRNO("pivot_root (fallback)");
        ESCAPED("pivot_root(\".\", \".\") succeeded (between tmpfs mounts of its own)");
}
