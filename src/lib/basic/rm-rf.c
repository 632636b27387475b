/* rm-rf.c — recursive removal with openat/unlinkat, O_NOFOLLOW, one file system. */
#include "basic/rm-rf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"

static int rm_children(int dfd, dev_t dev, unsigned depth) {
        if (depth > 256)
                return -ELOOP;
        DIR *d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return -errno;
        }
        int ret = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        if (st.st_dev != dev) { /* a mount point: not ours to empty */
                                ret = ret ?: -EXDEV;
                                continue;
                        }
                        int cfd = openat(
                                dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cfd < 0 && errno == EACCES &&
                                fchmodat(dirfd(d), de->d_name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
                                cfd = openat(dirfd(d), de->d_name,
                                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cfd >= 0) {
                                (void) fchmod(cfd, 0700);
                                int r = rm_children(cfd, dev, depth + 1);
                                if (r < 0)
                                        ret = ret ?: r;
                        }
                        if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
                                ret = ret ?: -errno;
                } else if (unlinkat(dirfd(d), de->d_name, 0) < 0)
                        ret = ret ?: -errno;
        }
        closedir(d);
        return ret;
}

int sbx_rm_rf_at(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno == ENOTDIR || errno == ELOOP)
                        return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
                return -errno;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        (void) fchmod(fd, 0700);
        int r = rm_children(fd, st.st_dev, 0);
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
                r = r ?: -errno;
        return r;
}

int sbx_rm_rf(const char *path) {
        return sbx_rm_rf_at(AT_FDCWD, path);
}
