/* missing.h — what glibc (2.36) declares and musl (1.2.3) does not.
 *
 * The `sandboxer` CLI is linked against musl where the build can (src/cli/meson.build): glibc's
 * start-up probes the CPU with ~80 `cpuid` instructions, each a trap to the hypervisor on a VM,
 * 0.7 ms of every run on the development VM. Everything here is the kernel's uapi or a raw
 * syscall, so it means the same under either libc. Include it after the libc headers. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __GLIBC__
/* musl 1.2.3 declares none of these; a later one may declare some (1.2.5 has statx): each is
 * defined here only where the libc's headers did not. */
#ifndef OPEN_TREE_CLONE
#include <linux/mount.h> /* OPEN_TREE_*, MOVE_MOUNT_*, struct mount_attr, MOUNT_ATTR_* */

static inline int open_tree(int dfd, const char *path, unsigned flags) {
        return (int) syscall(SYS_open_tree, dfd, path, flags);
}

static inline int move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags) {
        return (int) syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}
#endif

#ifndef STATX_TYPE
#include <linux/stat.h> /* struct statx, STATX_* */

static inline int statx(int dfd, const char *path, int flags, unsigned mask, struct statx *buf) {
        return (int) syscall(SYS_statx, dfd, path, flags, mask, buf);
}
#endif
#endif
