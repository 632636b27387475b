/* scratch_fill [MiB] — fill TMPDIR (default 64 MiB, removed afterwards). All of it is the escape;
 * ENOSPC is the scratch limit holding. */
#include "attack.h"

int main(int argc, char **argv) {
        long mib = argc > 1 ? atol(argv[1]) : 64, got = 0;
        char path[512];
        static char buf[1 << 20];
        memset(buf, 'x', sizeof(buf));
        snprintf(path, sizeof(path), "%s/sbx-fill-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int) getpid());
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                ERROR("open %s: %s", path, ename(errno));
        int e = 0;
        for (; got < mib; got++) {
                ssize_t w = write(fd, buf, sizeof(buf));
                if (w != (ssize_t) sizeof(buf)) {
                        e = w < 0 ? errno : ENOSPC;
                        break;
                }
        }
        if (!e && fsync(fd) < 0)
                e = errno;
        close(fd);
        unlink(path);
        if (e)
                BLOCKED("%s after %ld MiB", ename(e), got);
        ESCAPED("wrote %ld MiB to scratch", got);
}
