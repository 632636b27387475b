/* cgroup-util.c — the helpers the cgroup files share (small file reads and writes relative to a
 * directory, a tree removal that waits out exiting tasks, the probed bases) and the name tables. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "basic/strv.h"
#include "isolate/cgroup-internal.h"

static const char *const version_names[_SBX_CG_VERSION_MAX] = {
        [SBX_CG_NONE] = "none",
        [SBX_CG_V1] = "cgroup_v1",
        [SBX_CG_V2] = "cgroup_v2",
};

const char *sbx_cg_version_to_string(sbx_cg_version v) {
        if (v < 0 || v >= _SBX_CG_VERSION_MAX)
                return NULL;
        return version_names[v];
}

static const char *const controller_names[_SBX_CG_CONTROLLER_MAX] = {
        [SBX_CG_MEMORY] = "memory",
        [SBX_CG_PIDS] = "pids",
        [SBX_CG_CPU] = "cpu",
        [SBX_CG_CPUACCT] = "cpuacct",
        [SBX_CG_FREEZER] = "freezer",
};

const char *sbx_cg_controller_to_string(sbx_cg_controller c) {
        if (c < 0 || c >= _SBX_CG_CONTROLLER_MAX)
                return NULL;
        return controller_names[c];
}

static const char *const limit_names[_SBX_CG_LIMIT_MAX] = {
        [SBX_CG_LIMIT_MEMORY] = "memory_mb",
        [SBX_CG_LIMIT_PIDS] = "pids",
        [SBX_CG_LIMIT_CPUS] = "cpus",
};

const char *sbx_cg_limit_to_string(sbx_cg_limit l) {
        if (l < 0 || l >= _SBX_CG_LIMIT_MAX)
                return NULL;
        return limit_names[l];
}

const sbx_cg_controller cg_limit_controller[_SBX_CG_LIMIT_MAX] = {
        [SBX_CG_LIMIT_MEMORY] = SBX_CG_MEMORY,
        [SBX_CG_LIMIT_PIDS] = SBX_CG_PIDS,
        [SBX_CG_LIMIT_CPUS] = SBX_CG_CPU,
};

void cg_closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* ---- small file helpers (all relative to a directory path) ---- */

int cg_path_join(char **ret, const char *a, const char *b) {
        /* b may be "/" or start with '/': never doubles the separator. */
        while (*b == '/')
                b++;
        size_t la = strlen(a);
        while (la > 1 && a[la - 1] == '/')
                la--;
        char *p;
        if (*b == 0)
                p = strndup(a, la);
        else if (asprintf(&p, "%.*s/%s", (int) la, a, b) < 0)
                p = NULL;
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int cg_read_text(const char *path, char **ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        size_t cap = 4096, len = 0;
        _cleanup_free_ char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len + 1 >= cap) {
                        if (cap >= (16u << 20))
                                return -EFBIG;
                        char *n = realloc(buf, cap * 2);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                        cap *= 2;
                }
                size_t want = cap - len - 1;
                ssize_t k = read(fd, buf + len, want);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                /* cgroupfs and /proc files are seq_files, which fill the buffer unless the text
                 * ends; a plain file (a fake tree) reads short only at its end too. So a short
                 * read is the end: no second read() just to see 0. */
                if ((size_t) k < want)
                        break;
        }
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        return 0;
}

int cg_read_at(const char *dir, const char *file, char **ret) {
        _cleanup_free_ char *p = NULL;
        if (cg_path_join(&p, dir, file) < 0)
                return -ENOMEM;
        return cg_read_text(p, ret);
}

bool cg_exists_at(const char *dir, const char *file) {
        _cleanup_free_ char *p = NULL;
        if (cg_path_join(&p, dir, file) < 0)
                return false;
        return access(p, F_OK) == 0;
}

bool cg_is_dir(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Write value to dir/file. On a fake tree (!real) the file is created/truncated; on cgroupfs the
 * interface file must exist. */
int cg_write_at(const char *dir, const char *file, const char *value, bool real) {
        _cleanup_free_ char *p = NULL;
        if (cg_path_join(&p, dir, file) < 0)
                return -ENOMEM;
        int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | (real ? 0 : O_CREAT | O_TRUNC);
        _cleanup_close_ int fd = open(p, flags, 0644);
        if (fd < 0)
                return negative_errno();
        size_t n = strlen(value);
        ssize_t k = write(fd, value, n);
        if (k < 0)
                return negative_errno();
        if ((size_t) k != n)
                return -EIO;
        return 0;
}

int cg_write_u64_at(const char *dir, const char *file, uint64_t v, bool real) {
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64, v);
        return cg_write_at(dir, file, buf, real);
}

int cg_parse_u64(const char *s, uint64_t *ret) {
        while (*s == ' ' || *s == '\t')
                s++;
        if (strncmp(s, "max", 3) == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0)
                return -ERANGE;
        *ret = v;
        return 0;
}

int cg_read_u64_at(const char *dir, const char *file, uint64_t *ret) {
        _cleanup_free_ char *t = NULL;
        int r = cg_read_at(dir, file, &t);
        if (r < 0)
                return r;
        return cg_parse_u64(t, ret);
}

/* "key value" lines (memory.events, cpu.stat, memory.oom_control, pids.events). */
int cg_key_u64(const char *t, const char *key, uint64_t *ret) {
        size_t kl = strlen(key);
        for (const char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, key, kl) == 0 && (l[kl] == ' ' || l[kl] == '\t'))
                        return cg_parse_u64(l + kl, ret);
        return -ENODATA;
}

int cg_read_key_u64_at(const char *dir, const char *file, const char *key, uint64_t *ret) {
        _cleanup_free_ char *t = NULL;
        int r = cg_read_at(dir, file, &t);
        if (r < 0)
                return r;
        return cg_key_u64(t, key, ret);
}

/* Is word one of the whitespace-separated words of text? */
bool cg_has_word(const char *text, const char *word) {
        size_t wl = strlen(word);
        for (const char *p = text; p && *p;) {
                p += strspn(p, " \t\n");
                size_t n = strcspn(p, " \t\n");
                if (n == wl && strncmp(p, word, n) == 0)
                        return true;
                p += n;
        }
        return false;
}

bool cg_word_at(const char *dir, const char *file, const char *word) {
        _cleanup_free_ char *t = NULL;
        if (cg_read_at(dir, file, &t) < 0)
                return false;
        return cg_has_word(t, word);
}

bool cg_fs_is(const char *path, long magic) {
        struct statfs s;
        return statfs(path, &s) == 0 && (long) s.f_type == magic;
}

bool cg_v2_own_has_kill(const sbx_cgroup_controller_probe *c) {
        _cleanup_free_ char *owndir = NULL;
        return cg_path_join(&owndir, c->mount, c->own) >= 0 && cg_exists_at(owndir, "cgroup.kill");
}

/* Is a v1 hierarchy mounted at path? 1 with *real set (a cgroupfs, or a fake tree with its
 * files), 0 when not. One statfs() for a real hierarchy. */
int cg_v1_mounted(const char *path, bool *real) {
        *real = cg_fs_is(path, CGROUP_SUPER_MAGIC);
        return *real || cg_exists_at(path, "cgroup.procs");
}

uint64_t cg_now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

void cg_sleep_usec(uint64_t us) {
        struct timespec ts = {.tv_sec = (time_t) (us / 1000000), .tv_nsec = (long) (us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* Remove a group and any sub-groups below it, deepest first. On cgroupfs one rmdir() removes a
 * group with its interface files: sub-groups are looked for (with d_type, no stat) only when it
 * fails with EBUSY. On a fake tree (!real) the plain files go first. EBUSY (tasks still leaving)
 * is retried for up to ~1 s when `retry`. */
int cg_rmdir_tree(const char *path, bool real, bool retry) {
        if (real) {
                if (rmdir(path) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY && errno != ENOTEMPTY)
                        return negative_errno();
        }
        int r = 0;
        {
                _cleanup_(cg_closedirp) DIR *d = opendir(path);
                if (!d)
                        return errno == ENOENT ? 0 : negative_errno();
                struct dirent *de;
                while ((de = readdir(d))) {
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        unsigned char type = de->d_type;
                        if (type == DT_UNKNOWN) {
                                struct stat st;
                                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                        continue;
                                type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
                        }
                        if (type != DT_DIR && real)
                                continue; /* interface files go with the group */
                        _cleanup_free_ char *sub = NULL;
                        if (cg_path_join(&sub, path, de->d_name) < 0)
                                return -ENOMEM;
                        if (type == DT_DIR) {
                                int k = cg_rmdir_tree(sub, real, retry);
                                if (k < 0 && r == 0)
                                        r = k;
                        } else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && r == 0)
                                r = negative_errno();
                }
        }
        /* a group stays busy while its last tasks are released; on a loaded host that can take
         * more than a second */
        uint64_t deadline = cg_now_usec() + 3000000;
        for (uint64_t wait = 1000;; wait = MIN(wait * 2, 50000ULL)) {
                if (rmdir(path) == 0 || errno == ENOENT)
                        return r;
                if (errno != EBUSY || !retry || cg_now_usec() > deadline)
                        return negative_errno();
                cg_sleep_usec(wait);
        }
}

int sbx_cgroup_remove_tree(const char *path) {
        return cg_rmdir_tree(path, true, false);
}

/* The distinct bases of the probed hierarchies (v1 controllers sharing a mount share one). */
int cg_probe_bases(
        const sbx_cgroup_probe_result *probe, const sbx_cgroup_controller_probe **ret, size_t *n) {
        *n = 0;
        for (size_t i = 0; i <= _SBX_CG_CONTROLLER_MAX; i++) {
                const sbx_cgroup_controller_probe *c =
                        i < _SBX_CG_CONTROLLER_MAX ? &probe->ctl[i] : &probe->v2;
                if (!c->base || c->version == SBX_CG_NONE)
                        continue;
                bool seen = false;
                for (size_t j = 0; j < *n && !seen; j++)
                        seen = streq(ret[j]->base, c->base);
                if (!seen)
                        ret[(*n)++] = c;
        }
        return 0;
}

/* A group name of ours: letters, digits, "_.-", not starting with a dot, at most 64. */
bool cg_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > 64 || name[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) name[i]) && !strchr("_.-", name[i]))
                        return false;
        return true;
}
