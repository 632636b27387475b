/* cache.c — see cache.h. */
#include "basic/cache.h"
#include "basic/io.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"

int sbx_own_dir(const char *dir, mode_t mode) {
        if (mkdir(dir, mode) < 0 && errno != EEXIST)
                return -errno;
        struct stat st;
        if (lstat(dir, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022))
                return -EPERM;
        return 0;
}

int sbx_own_dir_p(const char *dir, mode_t mode, mode_t parent_mode) {
        char buf[PATH_MAX];
        size_t n = strlen(dir);
        if (n == 0 || n >= sizeof buf)
                return -ENAMETOOLONG;
        memcpy(buf, dir, n + 1);
        /* each ancestor in turn, from the top; an existing one is left as it is */
        for (size_t i = 1; i < n; i++) {
                if (buf[i] != '/')
                        continue;
                buf[i] = 0;
                if (mkdir(buf, parent_mode) < 0 && errno != EEXIST) {
                        int r = -errno;
                        buf[i] = '/';
                        return r;
                }
                buf[i] = '/';
        }
        return sbx_own_dir(dir, mode);
}

static int cache_dir_find(char *buf, size_t size) {
        const char *env = secure_getenv("SANDBOXER_CACHE_DIR"), *home;
        if (env && env[0] == '/')
                snprintf(buf, size, "%s", env);
        else if (geteuid() == 0)
                snprintf(buf, size, "/var/cache/sandboxer");
        else if ((env = getenv("XDG_CACHE_HOME")) && env[0] == '/') {
                snprintf(buf, size, "%s/sandboxer", env);
                /* the base directory may not be there yet: XDG says make it, 0700 */
                (void) mkdir(env, 0700);
        } else if ((home = getenv("HOME")) && home[0] == '/') {
                snprintf(buf, size, "%s/.cache", home);
                (void) mkdir(buf, 0700); /* a fresh account has none yet */
                snprintf(buf, size, "%s/.cache/sandboxer", home);
        } else
                return -ENOENT;
        return sbx_own_dir(buf, geteuid() == 0 ? 0755 : 0700);
}

/* A run asks for it several times (its seccomp programs, its policy, its profile): the answer is
 * remembered for as long as the environment that chose it is the same. */
int sbx_cache_dir(char *buf, size_t size) {
        static __thread char memo[PATH_MAX];
        static __thread const char *memo_env[3];
        const char *env[3] = {
                secure_getenv("SANDBOXER_CACHE_DIR"), getenv("XDG_CACHE_HOME"), getenv("HOME")};
        if (memo[0] && memcmp(env, memo_env, sizeof env) == 0 && strlen(memo) < size) {
                memcpy(buf, memo, strlen(memo) + 1);
                return 0;
        }
        int r = cache_dir_find(buf, size);
        if (r >= 0 && strlen(buf) < sizeof memo) {
                memcpy(memo, buf, strlen(buf) + 1);
                memcpy(memo_env, env, sizeof env);
        }
        return r;
}

int sbx_code_identity(sbx_code_id *ret) {
        static __thread sbx_code_id id;
        static __thread int known; /* 0 not yet, 1 known, -errno */
        if (known == 0) {
                Dl_info di;
                struct stat st;
                /* A static binary has no loader to ask: the code is the running program's. */
                const char *code = dladdr((void *) sbx_code_identity, &di) && di.dli_fname && di.dli_fname[0]
                                           ? di.dli_fname
                                           : "/proc/self/exe";
                if (stat(code, &st) < 0)
                        known = -errno;
                else {
                        memset(&id, 0, sizeof id);
                        id.dev = st.st_dev;
                        id.ino = st.st_ino;
                        id.size = (uint64_t) st.st_size;
                        id.mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
                        snprintf(id.version, sizeof id.version, "%s", SBX_VERSION);
                        known = 1;
                }
        }
        if (known < 0)
                return known;
        *ret = id;
        return 0;
}

void sbx_cache_prune(const char *dir, const char *name_prefix, size_t keep) {
        DIR *d = opendir(dir);
        if (!d)
                return;
        struct {
                char name[80];
                time_t t;
        } e[256];
        size_t n = 0, pl = strlen(name_prefix);
        time_t now = time(NULL);
        struct dirent *de;
        while ((de = readdir(d)) && n < ELEMENTSOF(e)) {
                struct stat st;
                if (strncmp(de->d_name, name_prefix, pl) != 0 || strlen(de->d_name) >= sizeof e[0].name ||
                        fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                time_t t = st.st_atime > st.st_mtime ? st.st_atime : st.st_mtime;
                if (now - t > 7 * 86400) {
                        (void) unlinkat(dirfd(d), de->d_name, 0);
                        continue;
                }
                snprintf(e[n].name, sizeof e[n].name, "%s", de->d_name);
                e[n++].t = t;
        }
        while (n > keep) { /* drop the oldest */
                size_t old = 0;
                for (size_t i = 1; i < n; i++)
                        if (e[i].t < e[old].t)
                                old = i;
                (void) unlinkat(dirfd(d), e[old].name, 0);
                e[old] = e[--n];
        }
        closedir(d);
}

int sbx_cache_read(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
                return -EPERM;
        if (st.st_size <= 0 || (uint64_t) st.st_size > max)
                return -EBADMSG;
        return sbx_read_fd_all(fd, max, ret, ret_len);
}

int sbx_cache_store(const char *path, const void *data, size_t len, const char *name_prefix, size_t keep) {
        char tmp[PATH_MAX + 16];
        snprintf(tmp, sizeof tmp, "%s", path);
        char *slash = strrchr(tmp, '/');
        if (slash && slash != tmp) {
                *slash = 0;
                sbx_cache_prune(tmp, name_prefix, keep);
        }
        if ((size_t) snprintf(tmp, sizeof tmp, "%s.%d", path, (int) getpid()) >= sizeof tmp)
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        const char *p = data;
        while (len > 0) {
                ssize_t k = write(fd, p, len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        int r = k < 0 ? -errno : -EIO;
                        (void) unlink(tmp);
                        return r;
                }
                p += k;
                len -= (size_t) k;
        }
        if (rename(tmp, path) < 0) {
                int r = -errno;
                (void) unlink(tmp);
                return r;
        }
        return 0;
}
