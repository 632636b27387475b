/* runtime.c — where runs keep their files (runtime and scratch directories, and what killed runs left
 * there); tools on PATH. */
#include "backend/common.h"

#include <fcntl.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include "basic/cache.h"
#include "basic/rm-rf.h"
#include "basic/strv.h"

/* Benchmark builds only (-Dbench_knobs=true): turn a layer off to measure what it costs. */
bool sbx_backend_bench_disabled(const char *layer) {
#if SBX_BENCH_KNOBS
        const char *v = getenv("SANDBOXER_BENCH_DISABLE");
        if (!v)
                return false;
        size_t l = strlen(layer);
        for (const char *p = v; (p = strstr(p, layer)); p += l)
                if ((p == v || p[-1] == ',') && (p[l] == 0 || p[l] == ','))
                        return true;
#else
        (void) layer;
#endif
        return false;
}

void sbx_backend_runtime_gc(const char *base) {
        _cleanup_close_ int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_strv_free_ char **dead = NULL;
        if (fd < 0 || sbx_owned_dead_scan(fd, &dead) < 0)
                return;
        STRV_FOREACH(n, dead) {
                char path[PATH_MAX];
                if (strncmp(*n, "run_", 4) != 0 ||
                        (size_t) snprintf(path, sizeof path, "%s/%s", base, *n) >= sizeof path)
                        continue;
                (void) umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW); /* EINVAL: not a mount */
                (void) sbx_rm_rf(path);
        }
}

/* The first executable `name` on $PATH (or the standard directories), opened for execveat.
 * A run asks for its tool more than once (the backend's probe, auto's choice, the run itself),
 * and each search is an access() per PATH directory — ten here: the last place found is
 * remembered (per thread, for the same PATH) and tried first. */
int sbx_backend_open_tool(const char *name, char *path, size_t size) {
        static __thread struct {
                char name[32];
                const char *path_env;
                char found[PATH_MAX];
        } memo[4];
        static __thread unsigned n_memo;
        const char *env = getenv("PATH");
        const char *dirs = env && *env ? env : "/usr/local/bin:/usr/bin:/bin";
        for (unsigned i = 0; i < n_memo && i < ELEMENTSOF(memo); i++)
                if (streq(memo[i].name, name) && memo[i].path_env == env && strlen(memo[i].found) < size &&
                        access(memo[i].found, X_OK) == 0) {
                        int fd = open(memo[i].found, O_RDONLY | O_CLOEXEC);
                        if (fd >= 0) {
                                memcpy(path, memo[i].found, strlen(memo[i].found) + 1);
                                return fd;
                        }
                }
        for (const char *p = dirs; *p;) {
                size_t l = strcspn(p, ":");
                if (l > 0 && (size_t) snprintf(path, size, "%.*s/%s", (int) l, p, name) < size &&
                        access(path, X_OK) == 0) {
                        int fd = open(path, O_RDONLY | O_CLOEXEC);
                        if (fd >= 0) {
                                if (strlen(name) < sizeof memo[0].name &&
                                        strlen(path) < sizeof memo[0].found) {
                                        unsigned k = n_memo++ % ELEMENTSOF(memo);
                                        snprintf(memo[k].name, sizeof memo[k].name, "%s", name);
                                        snprintf(memo[k].found, sizeof memo[k].found, "%s", path);
                                        memo[k].path_env = env;
                                }
                                return fd;
                        }
                }
                p += l;
                if (*p == ':')
                        p++;
        }
        return -ENOENT;
}

/* SANDBOXER_DEBUG_ARGV=1: the generated command line on stderr, shell-quoted, so that it can be
 * run by hand (bench/backends.sh compares the two). Debugging aid; the library is otherwise
 * silent. */
void sbx_backend_debug_argv(const char *tool, char *const *argv) {
        const char *v = getenv("SANDBOXER_DEBUG_ARGV");
        if (!v || !streq(v, "1"))
                return;
        fprintf(stderr, "sandboxer: %s argv:", tool);
        STRV_FOREACH(a, argv) {
                fputc(' ', stderr);
                if (**a && strspn(*a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/"
                                      ".,:@%") == strlen(*a))
                        fputs(*a, stderr);
                else {
                        fputc('\'', stderr);
                        for (const char *c = *a; *c; c++)
                                if (*c == '\'')
                                        fputs("'\\''", stderr);
                                else
                                        fputc(*c, stderr);
                        fputc('\'', stderr);
                }
        }
        fputc('\n', stderr);
}

void sbx_backend_runtime_dir_path(char *buf, size_t size) {
        const char *env = secure_getenv("SANDBOXER_RUNTIME_DIR");
        if (env && env[0] == '/')
                snprintf(buf, size, "%s", env);
        else if (geteuid() == 0)
                snprintf(buf, size, "/run/sandboxer");
        else if ((env = getenv("XDG_RUNTIME_DIR")) && env[0] == '/' && access(env, W_OK) == 0)
                snprintf(buf, size, "%s/sandboxer", env);
        else
                snprintf(buf, size, "/tmp/sandboxer-%u", (unsigned) getuid());
}

int sbx_backend_runtime_dir(char *buf, size_t size) {
        sbx_backend_runtime_dir_path(buf, size);
        mode_t mode = geteuid() == 0 ? 0711 : 0700;
        /* A directory the user named may not be there yet: made with its parents, which run_as
         * (root's sandboxes run as another uid) must be able to pass through to reach a scratch
         * below it. The default places have their parents. */
        if (secure_getenv("SANDBOXER_RUNTIME_DIR"))
                return sbx_own_dir_p(buf, mode, 0755);
        return sbx_own_dir(buf, mode);
}

#define SHM_SCRATCH_DIR "/dev/shm/sandboxer"

static bool on_memory_fs(const char *path) {
        struct statfs sf;
        return statfs(path, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

/* Root, no SANDBOXER_RUNTIME_DIR, the runtime directory (runtime) on disk, /dev/shm a tmpfs. */
static bool scratch_in_shm(const char *runtime) {
        return geteuid() == 0 && !secure_getenv("SANDBOXER_RUNTIME_DIR") && !on_memory_fs(runtime) &&
               on_memory_fs("/dev/shm");
}

int sbx_backend_scratch_dir(char *buf, size_t size) {
        int r = sbx_backend_runtime_dir(buf, size);
        if (r < 0 || !scratch_in_shm(buf))
                return r;
        /* a /dev/shm/sandboxer planted by another user is not used (own_dir refuses it): the
         * runtime directory serves as before */
        if (sbx_own_dir(SHM_SCRATCH_DIR, 0711) >= 0)
                snprintf(buf, size, "%s", SHM_SCRATCH_DIR);
        return 0;
}

void sbx_backend_scratch_dir_path(char *buf, size_t size) {
        sbx_backend_runtime_dir_path(buf, size);
        struct stat st;
        if (scratch_in_shm(buf) && lstat(SHM_SCRATCH_DIR, &st) == 0 && S_ISDIR(st.st_mode) &&
                st.st_uid == geteuid())
                snprintf(buf, size, "%s", SHM_SCRATCH_DIR);
}
