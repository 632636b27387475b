/* paths.c — the filesystem view: covered paths, exec rules, the writable set, binds, Landlock rules for the
 * profile's paths. */
#include "backend/common.h"

#include <fcntl.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include "basic/strv.h"
#include "isolate/landlock.h"

bool sbx_path_covered(char *const *list, const char *p) {
        STRV_FOREACH(i, list) {
                size_t l = strlen(*i);
                if (strncmp(*i, p, l) == 0 && (p[l] == '/' || p[l] == 0 || streq(*i, "/")))
                        return true;
        }
        return false;
}

bool sbx_backend_exec_allowed(const sbx_profile *pr, const char *path) {
        /* process.commands strict: nothing is executable but the allowed commands and what
         * loading them needs (sbx_backend_ll_add_commands). */
        if (pr->cmd_mode == SBX_CMD_MODE_STRICT)
                return false;
        if (!pr->fs_exec_set)
                return true;
        return sbx_path_covered(pr->fs_exec, path);
}

/* The ELF interpreter (PT_INTERP) of a binary, or a script's #! interpreter, into buf. */
static bool exec_interpreter(const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        unsigned char h[64];
        ssize_t n = pread(fd, h, sizeof h, 0);
        if (n >= 2 && h[0] == '#' && h[1] == '!') {
                char line[256];
                ssize_t k = pread(fd, line, sizeof line - 1, 2);
                if (k <= 0)
                        return false;
                line[k] = 0;
                char *p = line + strspn(line, " \t");
                p[strcspn(p, " \t\n")] = 0;
                snprintf(buf, size, "%s", p);
                return p[0] == '/';
        }
        if (n < 64 || memcmp(h, "\177ELF", 4) != 0 || h[4] != 2 /* ELFCLASS64 */)
                return false;
        uint64_t phoff;
        uint16_t phentsize, phnum;
        memcpy(&phoff, h + 32, 8);
        memcpy(&phentsize, h + 54, 2);
        memcpy(&phnum, h + 56, 2);
        for (unsigned i = 0; i < phnum && i < 64; i++) {
                unsigned char ph[56];
                if (phentsize < 56 || pread(fd, ph, sizeof ph, (off_t) (phoff + (uint64_t) i * phentsize)) !=
                                              (ssize_t) sizeof ph)
                        return false;
                uint32_t type;
                uint64_t off, filesz;
                memcpy(&type, ph, 4);
                memcpy(&off, ph + 8, 8);
                memcpy(&filesz, ph + 32, 8);
                if (type != 3 /* PT_INTERP */)
                        continue;
                if (filesz == 0 || filesz >= size)
                        return false;
                if (pread(fd, buf, filesz, (off_t) off) != (ssize_t) filesz)
                        return false;
                buf[filesz] = 0;
                return buf[0] == '/';
        }
        return false;
}

int sbx_backend_writable_set(const sbx_config *cfg, const char *scratch, const char *ws_rw, char ***ret) {
        _cleanup_strv_free_ char **w = NULL;
        if (strv_extend(&w, scratch) < 0 || strv_extend(&w, "/dev") < 0 ||
                strv_extend(&w, "/proc/self/fd") < 0 || strv_extend(&w, "/proc/thread-self/fd") < 0 ||
                (ws_rw && strv_extend(&w, ws_rw) < 0))
                return -ENOMEM;
        STRV_FOREACH(i, cfg->profile->fs_write)
                if (strv_extend(&w, *i) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(w);
        return 0;
}

int sbx_backend_check_reachable(const char *path, uid_t uid, gid_t gid, bool write, sbx_error *e) {
        if (geteuid() != 0 || uid == 0)
                return 0; /* the command runs as the caller: what the caller reaches, it does */
        pid_t pid = fork();
        if (pid < 0)
                return sbx_error_set(e, errno, "workspace", "fork: %m");
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                        _exit(2);
                _exit(access(path, R_OK | X_OK | (write ? W_OK : 0)) == 0 ? 0 : 1);
        }
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return sbx_error_set(e, errno, "workspace", "waitpid: %m");
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
                return 0;
        return sbx_error_set(e, EACCES, "workspace",
                "the workspace %s cannot be %s by uid %u (the policy's run_as), and this backend has no "
                "mount "
                "namespace to bring it in: make it and its parent directories accessible to that uid (chmod "
                "o+rx), "
                "or use --backend native",
                path, write ? "written" : "read", (unsigned) uid);
}

/* Where a command of the allowlist is: a path as given, or the first match on the sandbox's
 * PATH (the host's /usr is the sandbox's). */
static bool command_path(const char *cmd, char *buf, size_t size) {
        if (strchr(cmd, '/')) {
                snprintf(buf, size, "%s", cmd);
                return access(buf, X_OK) == 0;
        }
        const char *path = SBX_DEFAULT_PATH;
        for (const char *p = path;;) {
                const char *colon = strchrnul(p, ':');
                snprintf(buf, size, "%.*s/%s", (int) (colon - p), p, cmd);
                if (access(buf, X_OK) == 0)
                        return true;
                if (!*colon)
                        return false;
                p = colon + 1;
        }
}

int sbx_backend_ll_add_profile_paths(int fd, int abi, const sbx_profile *pr, sbx_error *e) {
        int r;
        STRV_FOREACH(p, pr->fs_read)
                if ((r = sbx_backend_ll_add_host(fd, abi, *p,
                             SBX_LL_READ | (sbx_backend_exec_allowed(pr, *p) ? SBX_LL_EXEC : 0), e)) < 0)
                        return r;
        STRV_FOREACH(p, pr->fs_write)
                if ((r = sbx_backend_ll_add_host(fd, abi, *p,
                             SBX_LL_READ | SBX_LL_WRITE |
                                     (sbx_backend_exec_allowed(pr, *p) ? SBX_LL_EXEC : 0),
                             e)) < 0)
                        return r;
        return 0;
}

int sbx_backend_ll_add_commands(int fd, int abi, const sbx_profile *pr, sbx_error *e) {
        if (pr->cmd_mode != SBX_CMD_MODE_STRICT)
                return 0;
        STRV_FOREACH(c, pr->cmd_allow) {
                char path[PATH_MAX], interp[PATH_MAX];
                if (!command_path(*c, path, sizeof path))
                        continue; /* not there: nothing to allow */
                int r = sbx_backend_ll_add_host(fd, abi, path, SBX_LL_READ | SBX_LL_EXEC, e);
                if (r < 0)
                        return r;
                /* what loading it needs: its ELF interpreter, or its script interpreter and that
                 * one's ELF interpreter */
                for (int depth = 0; depth < 2 && exec_interpreter(path, interp, sizeof interp); depth++) {
                        if ((r = sbx_backend_ll_add_host(fd, abi, interp, SBX_LL_READ | SBX_LL_EXEC, e)) < 0)
                                return r;
                        snprintf(path, sizeof path, "%s", interp);
                }
        }
        return 0;
}

/* The rule is for the inode the path names, symlinks followed (the open in
 * sbx_landlock_add_path()): no realpath() first, which under musl is a readlink() per path
 * component. A path that does not exist, or a dangling symlink, gets no rule. */
int sbx_backend_ll_add_host(int fd, int abi, const char *path, unsigned access, sbx_error *e) {
        int r = sbx_landlock_add_path(fd, abi, path, access);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return sbx_error_set(e, r, "landlock: add rule", "cannot add a Landlock rule for %s: %s",
                        path, strerror(-r));
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

void sbx_backend_sort_paths(char **paths) {
        if (paths)
                qsort(paths, strv_length(paths), sizeof(char *), cmp_str);
}
