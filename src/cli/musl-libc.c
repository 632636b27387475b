/* musl-libc.c — a libc function the musl CLI replaces, where musl's does more than we need.
 *
 * open(): musl follows every open(..., O_CLOEXEC) with fcntl(fd, F_SETFD, FD_CLOEXEC), for
 * kernels before 2.6.23 that ignored the flag. sandboxer needs Linux 5.x at least, and a `sandboxer
 * run` opens 70-80 files (cgroup files, rule paths, /proc): as many extra system calls, each a
 * round trip through the hypervisor on a VM. Linked into the musl CLI only (src/cli/meson.build),
 * where it takes the place of musl's open (a static link pulls an archive member only for a symbol
 * nothing else defines); glibc's open makes one system call already. openat() in musl makes one
 * too. Not a cancellation point here (the CLI does not cancel threads). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

int open(const char *path, int flags, ...) {
        mode_t mode = 0;
        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
                va_list ap;
                va_start(ap, flags);
                mode = va_arg(ap, mode_t);
                va_end(ap);
        }
        return (int) syscall(SYS_openat, AT_FDCWD, path, flags | O_LARGEFILE, mode);
}
