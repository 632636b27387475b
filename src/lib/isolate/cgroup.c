/* cgroup.c — sandbox control groups on v1, v2 and hybrid hosts: probe, create with limits,
 * attach, kill a whole tree (frozen and stopped processes too), statistics, OOM events, destroy
 * and gc. All paths derive from the probed `root`, so a fake tree of plain files can stand in. */
#include "cgroup.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>

#include "basic/strv.h"

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define CG_CPU_PERIOD_US 100000ULL
#define CG_BASE_NAME "sandboxer"
#define CG_SUPERVISOR_PREFIX "supervisor-"
#define CG_V2_INDEX _SBX_CG_CONTROLLER_MAX /* ctl_group[] slot of the cgroup2 tracking group */

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

static const sbx_cg_controller limit_controller[_SBX_CG_LIMIT_MAX] = {
        [SBX_CG_LIMIT_MEMORY] = SBX_CG_MEMORY,
        [SBX_CG_LIMIT_PIDS] = SBX_CG_PIDS,
        [SBX_CG_LIMIT_CPUS] = SBX_CG_CPU,
};

static inline void closedirp_(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* ---- small file helpers (all relative to a directory path) ---- */

static int path_join(char **ret, const char *a, const char *b) {
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

static int read_text(const char *path, char **ret) {
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

static int read_at(const char *dir, const char *file, char **ret) {
        _cleanup_free_ char *p = NULL;
        if (path_join(&p, dir, file) < 0)
                return -ENOMEM;
        return read_text(p, ret);
}

static bool exists_at(const char *dir, const char *file) {
        _cleanup_free_ char *p = NULL;
        if (path_join(&p, dir, file) < 0)
                return false;
        return access(p, F_OK) == 0;
}

static bool is_dir(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Write value to dir/file. On a fake tree (!real) the file is created/truncated; on cgroupfs the
 * interface file must exist. */
static int write_at(const char *dir, const char *file, const char *value, bool real) {
        _cleanup_free_ char *p = NULL;
        if (path_join(&p, dir, file) < 0)
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

static int write_u64_at(const char *dir, const char *file, uint64_t v, bool real) {
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64, v);
        return write_at(dir, file, buf, real);
}

static int parse_u64(const char *s, uint64_t *ret) {
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

static int read_u64_at(const char *dir, const char *file, uint64_t *ret) {
        _cleanup_free_ char *t = NULL;
        int r = read_at(dir, file, &t);
        if (r < 0)
                return r;
        return parse_u64(t, ret);
}

/* "key value" lines (memory.events, cpu.stat, memory.oom_control, pids.events). */
static int key_u64(const char *t, const char *key, uint64_t *ret) {
        size_t kl = strlen(key);
        for (const char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, key, kl) == 0 && (l[kl] == ' ' || l[kl] == '\t'))
                        return parse_u64(l + kl, ret);
        return -ENODATA;
}

static int read_key_u64_at(const char *dir, const char *file, const char *key, uint64_t *ret) {
        _cleanup_free_ char *t = NULL;
        int r = read_at(dir, file, &t);
        if (r < 0)
                return r;
        return key_u64(t, key, ret);
}

/* Is word one of the whitespace-separated words of text? */
static bool has_word(const char *text, const char *word) {
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

static bool word_at(const char *dir, const char *file, const char *word) {
        _cleanup_free_ char *t = NULL;
        if (read_at(dir, file, &t) < 0)
                return false;
        return has_word(t, word);
}

static bool fs_is(const char *path, long magic) {
        struct statfs s;
        return statfs(path, &s) == 0 && (long) s.f_type == magic;
}

static bool v2_own_has_kill(const sbx_cgroup_controller_probe *c) {
        _cleanup_free_ char *owndir = NULL;
        return path_join(&owndir, c->mount, c->own) >= 0 && exists_at(owndir, "cgroup.kill");
}

/* Is a v1 hierarchy mounted at path? 1 with *real set (a cgroupfs, or a fake tree with its
 * files), 0 when not. One statfs() for a real hierarchy. */
static int v1_mounted(const char *path, bool *real) {
        *real = fs_is(path, CGROUP_SUPER_MAGIC);
        return *real || exists_at(path, "cgroup.procs");
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static void sleep_usec(uint64_t us) {
        struct timespec ts = {.tv_sec = (time_t) (us / 1000000), .tv_nsec = (long) (us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* ---- probe ---- */

static void controller_probe_done(sbx_cgroup_controller_probe *c) {
        free(c->mount);
        free(c->own);
        free(c->base);
        *c = (sbx_cgroup_controller_probe){};
}

void sbx_cgroup_probe_result_done(sbx_cgroup_probe_result *p) {
        if (!p)
                return;
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++)
                controller_probe_done(&p->ctl[i]);
        controller_probe_done(&p->v2);
        free(p->root);
        p->root = NULL;
}

static void set_reason(sbx_cgroup_controller_probe *c, int errnum, const char *fmt, ...) _printf_(3, 4);
static void set_reason(sbx_cgroup_controller_probe *c, int errnum, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->reason, sizeof c->reason, fmt, ap);
        va_end(ap);
        c->errnum = errnum < 0 ? -errnum : errnum;
        c->usable = false;
}

static int controller_probe_fill(
        sbx_cgroup_controller_probe *c, sbx_cg_version v, const char *mount, const char *own, bool real) {
        c->version = v;
        c->real = real;
        c->mount = strdup(mount);
        c->own = strdup(own);
        if (!c->mount || !c->own)
                return -ENOMEM;
        _cleanup_free_ char *owndir = NULL;
        if (path_join(&owndir, mount, own) < 0 || path_join(&c->base, owndir, CG_BASE_NAME) < 0)
                return -ENOMEM;
        return 0;
}

static bool own_is_user_delegated(const char *own) {
        return strstr(own, "/user@") != NULL;
}

/* Can we create groups under c->base? Sets usable or the reason. */
static int check_writable(sbx_cgroup_controller_probe *c, const char *what) {
        _cleanup_free_ char *owndir = NULL;
        if (path_join(&owndir, c->mount, c->own) < 0)
                return -ENOMEM;
        /* The base first: it normally exists (it is kept between runs), and may be delegated
         * even where our own cgroup is not writable. One faccessat() in the common case. */
        const char *dir = c->base;
        int k = faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS);
        if (k < 0 && errno == ENOENT) {
                dir = owndir;
                k = faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS);
                if (k < 0 && errno == ENOENT) {
                        set_reason(c, ENOENT,
                                "%s: this process's cgroup %s is not visible under %s (a container without "
                                "its own cgroup namespace?)",
                                what, c->own, c->mount);
                        return 0;
                }
        }
        if (k < 0) {
                int err = errno;
                if (geteuid() != 0 && c->version == SBX_CG_V2 && !own_is_user_delegated(c->own))
                        set_reason(c, err,
                                "%s: %s is not writable (%s) and is not in the user's delegated subtree "
                                "(user@%u.service); run under a delegated scope: systemd-run --user --scope "
                                "-p Delegate=yes sandboxer ...",
                                what, dir, strerror(err), (unsigned) geteuid());
                else if (geteuid() != 0)
                        set_reason(c, err,
                                "%s: %s is not writable (%s); run sandboxer as root, or delegate this "
                                "cgroup "
                                "to uid %u",
                                what, dir, strerror(err), (unsigned) geteuid());
                else
                        set_reason(c, err,
                                "%s: %s is not writable (%s); mount the cgroup filesystem read-write", what,
                                dir, strerror(err));
                return 0;
        }
        c->usable = true;
        return 0;
}

/* v2 domain controllers: the "no internal processes" rule. Our own cgroup must either delegate
 * the controller to its children already, be the root, or hold no processes (then we may enable
 * it); if it holds only us, we can move into a leaf (move_self). */
static int check_v2_subtree(sbx_cgroup_controller_probe *c, const char *name) {
        _cleanup_free_ char *owndir = NULL;
        if (path_join(&owndir, c->mount, c->own) < 0)
                return -ENOMEM;
        if (word_at(owndir, "cgroup.subtree_control", name))
                return 0;
        bool is_root = streq(c->own, "/");
        if (!is_root) {
                _cleanup_free_ char *procs = NULL;
                (void) read_at(owndir, "cgroup.procs", &procs);
                size_t n = 0;
                bool only_self = true;
                for (char *l = procs; l && *l;) {
                        size_t len = strcspn(l, "\n");
                        if (len > 0) {
                                n++;
                                if (strtol(l, NULL, 10) != (long) getpid())
                                        only_self = false;
                        }
                        l += len;
                        if (*l)
                                l++;
                }
                if (n > 0 && !only_self) {
                        set_reason(c, EBUSY,
                                "cgroup v2 %s: %s holds processes and does not delegate %s to child cgroups "
                                "(no internal processes rule); run sandboxer alone in a delegated scope: "
                                "systemd-run %s--scope -p Delegate=yes sandboxer ...",
                                name, c->own, name, geteuid() == 0 ? "" : "--user ");
                        return 0;
                }
                if (n > 0) {
                        c->move_self = true;
                        snprintf(c->reason, sizeof c->reason,
                                "cgroup v2 %s: %s holds this process and does not delegate %s to child "
                                "cgroups "
                                "(no internal processes rule); sandboxer must move itself into a leaf "
                                "cgroup "
                                "(or run under: systemd-run %s--scope -p Delegate=yes sandboxer ...)",
                                name, c->own, name, geteuid() == 0 ? "" : "--user ");
                }
        }
        _cleanup_free_ char *sc = NULL;
        if (path_join(&sc, owndir, "cgroup.subtree_control") < 0)
                return -ENOMEM;
        if (faccessat(AT_FDCWD, sc, W_OK, AT_EACCESS) < 0 && errno != ENOENT) {
                int err = errno;
                set_reason(c, err,
                        "cgroup v2 %s: cannot enable it for child cgroups: %s is not writable (%s); run "
                        "under a delegated scope: systemd-run %s--scope -p Delegate=yes sandboxer ...",
                        name, sc, strerror(err), geteuid() == 0 ? "" : "--user ");
        }
        return 0;
}

typedef struct v1_line {
        char *joined; /* "cpu,cpuacct" */
        char *path;
} v1_line;

int sbx_cgroup_probe(const char *root, const char *self_cgroup, sbx_cgroup_probe_result *ret) {
        _cleanup_free_ char *text = NULL, *v2_own = NULL, *v2_mount = NULL;
        v1_line v1[_SBX_CG_CONTROLLER_MAX] = {};
        sbx_cgroup_probe_result p = {};
        int r;

        if (!root || !ret)
                return -EINVAL;
        if (!self_cgroup) {
                r = read_text("/proc/self/cgroup", &text);
                if (r < 0)
                        return r;
                self_cgroup = text;
        }
        p.root = strdup(root);
        if (!p.root)
                return -ENOMEM;

        /* "ID:CONTROLLERS:PATH" lines; "0::PATH" is cgroup2. */
        for (const char *l = self_cgroup; *l;) {
                size_t len = strcspn(l, "\n");
                const char *c1 = memchr(l, ':', len);
                const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t) (c1 + 1 - l)) : NULL;
                if (c2) {
                        size_t clen = (size_t) (c2 - c1 - 1);
                        const char *path = c2 + 1;
                        size_t plen = len - (size_t) (path - l);
                        if (clen == 0 && strncmp(l, "0:", 2) == 0) {
                                free(v2_own);
                                v2_own = strndup(path, plen);
                                if (!v2_own)
                                        goto oom;
                        }
                        for (size_t i = 0; clen > 0 && i < _SBX_CG_CONTROLLER_MAX; i++) {
                                /* is controller_names[i] one of the comma-separated names? */
                                size_t nl = strlen(controller_names[i]);
                                for (const char *w = c1 + 1; w < c2;) {
                                        size_t wl = strcspn(w, ",:");
                                        if (wl == nl && strncmp(w, controller_names[i], nl) == 0 &&
                                                !v1[i].joined) {
                                                v1[i].joined = strndup(c1 + 1, clen);
                                                v1[i].path = strndup(path, plen);
                                                if (!v1[i].joined || !v1[i].path)
                                                        goto oom;
                                        }
                                        w += wl + 1;
                                }
                        }
                }
                l += len;
                if (*l)
                        l++;
        }

        /* The cgroup2 hierarchy: at the root (unified host) or at ROOT/unified (hybrid). statfs()
         * tells a real one at once; a fake tree (tests) is recognised by its files. */
        bool v2_real = false;
        if (path_join(&v2_mount, root, "unified") < 0)
                goto oom;
        if (fs_is(root, CGROUP2_SUPER_MAGIC)) {
                free(v2_mount);
                v2_mount = strdup(root);
                if (!v2_mount)
                        goto oom;
                v2_real = true;
        } else if (fs_is(v2_mount, CGROUP2_SUPER_MAGIC))
                v2_real = true;
        else if (exists_at(root, "cgroup.controllers")) {
                free(v2_mount);
                v2_mount = strdup(root);
                if (!v2_mount)
                        goto oom;
        } else if (!exists_at(v2_mount, "cgroup.controllers"))
                v2_mount = (free(v2_mount), NULL);
        if (v2_mount && !v2_own)
                set_reason(&p.v2, ENOENT, "cgroup2: mounted at %s but /proc/self/cgroup has no 0:: line",
                        v2_mount);
        else if (v2_mount) {
                if (controller_probe_fill(&p.v2, SBX_CG_V2, v2_mount, v2_own, v2_real) < 0)
                        goto oom;
                if (check_writable(&p.v2, "cgroup2") < 0)
                        goto oom;
                /* cgroup.kill (5.14+) kills a whole group at once, stopped and frozen tasks too.
                 * The root cgroup has none, so ask the base (kept between runs), else our own. */
                if (p.v2.usable && p.v2.real)
                        p.v2_kill = exists_at(p.v2.base, "cgroup.kill") ||
                                    (!streq(p.v2.own, "/") && v2_own_has_kill(&p.v2));
        } else
                set_reason(&p.v2, ENOENT, "cgroup2: not mounted at %s or %s/unified", root, root);

        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                sbx_cgroup_controller_probe *c = &p.ctl[i];
                const char *name = controller_names[i];
                char what[64];

                if (v1[i].joined) {
                        _cleanup_free_ char *mount = NULL;
                        bool real = false;
                        if (path_join(&mount, root, v1[i].joined) < 0)
                                goto oom;
                        int m = v1_mounted(mount, &real);
                        if (m == 0 && !streq(v1[i].joined, name)) {
                                free(mount);
                                if (path_join(&mount, root, name) < 0)
                                        goto oom;
                                m = v1_mounted(mount, &real);
                        }
                        if (m == 0) {
                                set_reason(c, ENOENT,
                                        "cgroup v1 %s: listed in /proc/self/cgroup but not mounted at %s/%s",
                                        name, root, v1[i].joined);
                                continue;
                        }
                        if (controller_probe_fill(c, SBX_CG_V1, mount, v1[i].path, real) < 0)
                                goto oom;
                        snprintf(what, sizeof what, "cgroup v1 %s", name);
                        if (check_writable(c, what) < 0)
                                goto oom;
                        continue;
                }
                if (p.v2.version != SBX_CG_V2) {
                        set_reason(c, ENOENT, "no %s controller: no cgroup v1 hierarchy has it and %s", name,
                                p.v2.reason);
                        continue;
                }
                if (i == SBX_CG_CPUACCT || i == SBX_CG_FREEZER) {
                        /* Core cgroup2 features: cpu.stat, cgroup.freeze, cgroup.kill. */
                        if (controller_probe_fill(c, SBX_CG_V2, p.v2.mount, p.v2.own, p.v2.real) < 0)
                                goto oom;
                        c->usable = p.v2.usable;
                        c->errnum = p.v2.errnum;
                        memcpy(c->reason, p.v2.reason, sizeof c->reason);
                        continue;
                }
                _cleanup_free_ char *owndir = NULL;
                if (path_join(&owndir, p.v2.mount, p.v2.own) < 0)
                        goto oom;
                if (!word_at(owndir, "cgroup.controllers", name)) {
                        set_reason(c, EOPNOTSUPP,
                                "no %s controller: cgroup2 does not offer it to %s (not in its "
                                "cgroup.controllers) "
                                "and no cgroup v1 hierarchy has it; %s",
                                name, p.v2.own,
                                geteuid() == 0
                                        ? "enable it in the parents' cgroup.subtree_control"
                                        : "run under a delegated scope: systemd-run --user --scope -p "
                                          "Delegate=yes sandboxer ...");
                        continue;
                }
                if (controller_probe_fill(c, SBX_CG_V2, p.v2.mount, p.v2.own, p.v2.real) < 0)
                        goto oom;
                snprintf(what, sizeof what, "cgroup v2 %s", name);
                if (check_writable(c, what) < 0)
                        goto oom;
                if (c->usable && check_v2_subtree(c, name) < 0)
                        goto oom;
        }

        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                free(v1[i].joined);
                free(v1[i].path);
        }
        *ret = p;
        return 0;
oom:
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                free(v1[i].joined);
                free(v1[i].path);
        }
        sbx_cgroup_probe_result_done(&p);
        return -ENOMEM;
}

const char *sbx_cgroup_probe_layout(const sbx_cgroup_probe_result *p) {
        bool any_v1 = false;
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++)
                if (p->ctl[i].version == SBX_CG_V1)
                        any_v1 = true;
        if (p->v2.version == SBX_CG_V2)
                return any_v1 ? "hybrid" : "v2";
        return any_v1 ? "v1" : "none";
}

/* ---- the sandbox's groups ---- */

typedef struct cg_group {
        char *path;
        sbx_cg_version version;
        bool real;
        bool created;
} cg_group;

struct sbx_cgroup {
        char *name;
        cg_group g[_SBX_CG_CONTROLLER_MAX + 1];
        size_t n;
        int ctl_group[_SBX_CG_CONTROLLER_MAX + 1]; /* index into g[], -1: none; [CG_V2_INDEX]: cgroup2 */
        int v2_fd;
        sbx_cg_version mech[_SBX_CG_LIMIT_MAX];
        uint64_t pids_peak_seen;
        uint64_t pids_refused_seen; /* sbx_cgroup_note_end() */
        /* the probe's distinct bases, for sbx_cgroup_gc_dead_siblings() */
        char *gc_base[_SBX_CG_CONTROLLER_MAX + 1];
        bool gc_real[_SBX_CG_CONTROLLER_MAX + 1];
        size_t n_gc;
};

/* The distinct bases of the probed hierarchies (v1 controllers sharing a mount share one). */
static int probe_bases(
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

sbx_cgroup *sbx_cgroup_free(sbx_cgroup *cg) {
        if (!cg)
                return NULL;
        for (size_t i = 0; i < cg->n; i++)
                free(cg->g[i].path);
        for (size_t i = 0; i < cg->n_gc; i++)
                free(cg->gc_base[i]);
        safe_close(cg->v2_fd);
        free(cg->name);
        free(cg);
        return NULL;
}

sbx_cg_version sbx_cgroup_mechanism(const sbx_cgroup *cg, sbx_cg_limit l) {
        if (!cg || l < 0 || l >= _SBX_CG_LIMIT_MAX)
                return SBX_CG_NONE;
        return cg->mech[l];
}

const char *sbx_cgroup_path(const sbx_cgroup *cg, sbx_cg_controller c) {
        if (!cg || c < 0 || c > CG_V2_INDEX || cg->ctl_group[c] < 0)
                return NULL;
        return cg->g[cg->ctl_group[c]].path;
}

const char *sbx_cgroup_name(const sbx_cgroup *cg) {
        return cg ? cg->name : NULL;
}

int sbx_cgroup_v2_fd(sbx_cgroup *cg) {
        return cg ? cg->v2_fd : -1;
}

static bool name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > 64 || name[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) name[i]) && !strchr("_.-", name[i]))
                        return false;
        return true;
}

static int group_add(sbx_cgroup *cg, const sbx_cgroup_controller_probe *c, const char *name) {
        _cleanup_free_ char *path = NULL;
        if (path_join(&path, c->base, name) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < cg->n; i++)
                if (streq(cg->g[i].path, path))
                        return (int) i;
        cg->g[cg->n] = (cg_group){.path = TAKE_PTR(path), .version = c->version, .real = c->real};
        return (int) cg->n++;
}

/* Remove a group and any sub-groups below it, deepest first. On cgroupfs one rmdir() removes a
 * group with its interface files: sub-groups are looked for (with d_type, no stat) only when it
 * fails with EBUSY. On a fake tree (!real) the plain files go first. EBUSY (tasks still leaving)
 * is retried for up to ~1 s when `retry`. */
static int rmdir_tree(const char *path, bool real, bool retry) {
        if (real) {
                if (rmdir(path) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY && errno != ENOTEMPTY)
                        return negative_errno();
        }
        int r = 0;
        {
                _cleanup_(closedirp_) DIR *d = opendir(path);
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
                        if (path_join(&sub, path, de->d_name) < 0)
                                return -ENOMEM;
                        if (type == DT_DIR) {
                                int k = rmdir_tree(sub, real, retry);
                                if (k < 0 && r == 0)
                                        r = k;
                        } else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && r == 0)
                                r = negative_errno();
                }
        }
        /* a group stays busy while its last tasks are released; on a loaded host that can take
         * more than a second */
        uint64_t deadline = now_usec() + 3000000;
        for (uint64_t wait = 1000;; wait = MIN(wait * 2, 50000ULL)) {
                if (rmdir(path) == 0 || errno == ENOENT)
                        return r;
                if (errno != EBUSY || !retry || now_usec() > deadline)
                        return negative_errno();
                sleep_usec(wait);
        }
}

static int mkdir_ok_exists(const char *path) {
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

/* v2: make the controllers in `mask` available to the sandbox leaves: enable them in our own
 * cgroup's and in the base's cgroup.subtree_control (moving this process into a leaf first when
 * allowed and needed). */
static int v2_enable(const sbx_cgroup_probe_result *probe, unsigned mask, unsigned flags, sbx_error *e) {
        const sbx_cgroup_controller_probe *c = NULL;
        bool move = false;
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++)
                if (mask & (1u << i)) {
                        c = &probe->ctl[i];
                        move = move || probe->ctl[i].move_self;
                }
        if (!c)
                return 0;
        _cleanup_free_ char *owndir = NULL;
        if (path_join(&owndir, c->mount, c->own) < 0)
                return -ENOMEM;
        /* Each subtree_control read once (not once per controller); the base's read tells
         * whether it exists (kept between runs), so no mkdir()+EEXIST in the common case. */
        _cleanup_free_ char *own_sc = NULL, *base_sc = NULL;
        int r = read_at(c->base, "cgroup.subtree_control", &base_sc);
        if (r < 0) {
                r = mkdir_ok_exists(c->base);
                if (r < 0)
                        return sbx_error_set(
                                e, r, "cgroup: mkdir", "cannot create %s: %s", c->base, strerror(-r));
        }
        (void) read_at(owndir, "cgroup.subtree_control", &own_sc);
        if (move && (flags & SBX_CG_CREATE_MOVE_SELF)) {
                char leaf[64], pid[32];
                snprintf(leaf, sizeof leaf, CG_SUPERVISOR_PREFIX "%d", (int) getpid());
                snprintf(pid, sizeof pid, "%d", (int) getpid());
                _cleanup_free_ char *leafdir = NULL;
                if (path_join(&leafdir, c->base, leaf) < 0)
                        return -ENOMEM;
                r = mkdir_ok_exists(leafdir);
                if (r >= 0)
                        r = write_at(leafdir, "cgroup.procs", pid, c->real);
                if (r < 0)
                        return sbx_error_set(e, r, "cgroup: move self",
                                "cannot move sandboxer into the leaf cgroup %s: %s", leafdir, strerror(-r));
        }
        char own_want[64] = "", base_want[64] = "";
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                if (!(mask & (1u << i)))
                        continue;
                char w[24];
                snprintf(w, sizeof w, "+%s", controller_names[i]);
                if (!own_sc || !has_word(own_sc, controller_names[i]))
                        snprintf(own_want + strlen(own_want), sizeof own_want - strlen(own_want), "%s%s",
                                own_want[0] ? " " : "", w);
                if (!base_sc || !has_word(base_sc, controller_names[i]))
                        snprintf(base_want + strlen(base_want), sizeof base_want - strlen(base_want), "%s%s",
                                base_want[0] ? " " : "", w);
        }
        if (own_want[0]) {
                r = write_at(owndir, "cgroup.subtree_control", own_want, c->real);
                if (r < 0)
                        return sbx_error_set(e, r, "cgroup: subtree_control",
                                "cannot enable '%s' in %s/cgroup.subtree_control: %s%s", own_want, owndir,
                                strerror(-r),
                                r == -EBUSY
                                        ? " (the cgroup holds processes: run sandboxer alone in a delegated "
                                          "scope: systemd-run --scope -p Delegate=yes sandboxer ...)"
                                        : "");
        }
        if (base_want[0]) {
                r = write_at(c->base, "cgroup.subtree_control", base_want, c->real);
                if (r < 0)
                        return sbx_error_set(e, r, "cgroup: subtree_control",
                                "cannot enable '%s' in %s/cgroup.subtree_control: %s", base_want, c->base,
                                strerror(-r));
        }
        return 0;
}

static int limit_error(sbx_error *e, int r, sbx_cg_limit l, const char *path, const char *file) {
        return sbx_error_set(e, r, "cgroup: set limit", "cannot enforce limits.%s: writing %s/%s failed: %s",
                limit_names[l], path, file, strerror(r < 0 ? -r : r));
}

static int apply_limits(sbx_cgroup *cg, const sbx_cgroup_limits *lim, sbx_error *e) {
        int r;
        if (cg->mech[SBX_CG_LIMIT_MEMORY] != SBX_CG_NONE) {
                const cg_group *g = &cg->g[cg->ctl_group[SBX_CG_MEMORY]];
                if (g->version == SBX_CG_V2) {
                        r = write_u64_at(g->path, "memory.max", lim->memory_bytes, g->real);
                        if (r < 0)
                                return limit_error(e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.max");
                        /* Without swap accounting there is no memory.swap.max: nothing to escape to.
                         * (Written, not looked for first: ENOENT says it is absent.) */
                        r = write_at(g->path, "memory.swap.max", "0", g->real);
                        if (r < 0 && !(r == -ENOENT && g->real))
                                return limit_error(e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.swap.max");
                        /* An OOM kills the whole sandbox, not one process of it. */
                        r = write_at(g->path, "memory.oom.group", "1", g->real);
                        if (r < 0 && !(r == -ENOENT && g->real))
                                return limit_error(e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.oom.group");
                } else {
                        /* memsw must stay >= limit: set the memory limit first. */
                        r = write_u64_at(g->path, "memory.limit_in_bytes", lim->memory_bytes, g->real);
                        if (r < 0)
                                return limit_error(
                                        e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.limit_in_bytes");
                        /* Absent (ENOENT) without swap accounting: nothing to escape to. */
                        r = write_u64_at(g->path, "memory.memsw.limit_in_bytes", lim->memory_bytes, g->real);
                        if (r < 0 && !(r == -ENOENT && g->real))
                                return limit_error(
                                        e, r, SBX_CG_LIMIT_MEMORY, g->path, "memory.memsw.limit_in_bytes");
                }
        }
        if (cg->mech[SBX_CG_LIMIT_PIDS] != SBX_CG_NONE) {
                const cg_group *g = &cg->g[cg->ctl_group[SBX_CG_PIDS]];
                r = write_u64_at(g->path, "pids.max", lim->pids, g->real);
                if (r < 0)
                        return limit_error(e, r, SBX_CG_LIMIT_PIDS, g->path, "pids.max");
        }
        if (cg->mech[SBX_CG_LIMIT_CPUS] != SBX_CG_NONE) {
                const cg_group *g = &cg->g[cg->ctl_group[SBX_CG_CPU]];
                uint64_t quota = (uint64_t) (lim->cpus * (double) CG_CPU_PERIOD_US + 0.5);
                if (quota < 1000) /* the kernel's minimum */
                        quota = 1000;
                if (g->version == SBX_CG_V2) {
                        char v[64];
                        snprintf(v, sizeof v, "%" PRIu64 " %llu", quota, CG_CPU_PERIOD_US);
                        r = write_at(g->path, "cpu.max", v, g->real);
                        if (r < 0)
                                return limit_error(e, r, SBX_CG_LIMIT_CPUS, g->path, "cpu.max");
                } else {
                        r = write_u64_at(g->path, "cpu.cfs_period_us", CG_CPU_PERIOD_US, g->real);
                        if (r < 0)
                                return limit_error(e, r, SBX_CG_LIMIT_CPUS, g->path, "cpu.cfs_period_us");
                        r = write_u64_at(g->path, "cpu.cfs_quota_us", quota, g->real);
                        if (r < 0)
                                return limit_error(e, r, SBX_CG_LIMIT_CPUS, g->path, "cpu.cfs_quota_us");
                }
        }
        return 0;
}

static bool controller_usable(const sbx_cgroup_controller_probe *c, unsigned flags) {
        return c->usable && (!c->move_self || (flags & SBX_CG_CREATE_MOVE_SELF));
}

int sbx_cgroup_create(const sbx_cgroup_probe_result *probe, const char *name, const sbx_cgroup_limits *lim,
        unsigned best_effort, unsigned flags, sbx_cgroup **ret, sbx_error *e) {
        static const sbx_cgroup_limits none = {};
        int r;

        if (!probe || !ret)
                return sbx_error_set(e, EINVAL, "cgroup: create", "invalid arguments");
        if (!name_valid(name))
                return sbx_error_set(e, EINVAL, "cgroup: create",
                        "invalid cgroup name '%s' (1-64 of [A-Za-z0-9_.-], no leading dot)",
                        name ? name : "");
        if (!lim)
                lim = &none;
        if (!(lim->cpus >= 0) || lim->cpus > 1e6) /* NaN too */
                return sbx_error_set(e, EINVAL, "cgroup: create", "invalid limits.cpus %g", lim->cpus);

        _cleanup_cgroup_ sbx_cgroup *cg = calloc(1, sizeof *cg);
        if (!cg)
                return -ENOMEM;
        cg->v2_fd = -EBADF;
        for (size_t i = 0; i <= CG_V2_INDEX; i++)
                cg->ctl_group[i] = -1;
        cg->name = strdup(name);
        if (!cg->name)
                return -ENOMEM;
        const sbx_cgroup_controller_probe *bases[_SBX_CG_CONTROLLER_MAX + 1];
        size_t nb;
        (void) probe_bases(probe, bases, &nb);
        for (size_t b = 0; b < nb; b++) {
                if (!(cg->gc_base[b] = strdup(bases[b]->base)))
                        return -ENOMEM;
                cg->gc_real[b] = bases[b]->real;
                cg->n_gc = b + 1;
        }

        bool requested[_SBX_CG_LIMIT_MAX] = {
                [SBX_CG_LIMIT_MEMORY] = lim->memory_bytes > 0,
                [SBX_CG_LIMIT_PIDS] = lim->pids > 0,
                [SBX_CG_LIMIT_CPUS] = lim->cpus > 0,
        };
        for (size_t l = 0; l < _SBX_CG_LIMIT_MAX; l++) {
                const sbx_cgroup_controller_probe *c = &probe->ctl[limit_controller[l]];
                if (!requested[l])
                        continue;
                if (controller_usable(c, flags)) {
                        cg->mech[l] = c->version;
                        continue;
                }
                if (best_effort & SBX_CG_LIMIT_BIT(l))
                        continue; /* reported as mechanism none */
                return sbx_error_set(e, c->errnum ? c->errnum : EOPNOTSUPP, "cgroup: limits",
                        "cannot enforce limits.%s: %s; or list %s under enforce.best_effort in the policy "
                        "file",
                        limit_names[l], c->reason[0] ? c->reason : "no usable cgroup controller",
                        limit_names[l]);
        }

        /* One group per distinct hierarchy directory. */
        unsigned v2_mask = 0;
        bool no_tracking = flags & SBX_CG_CREATE_NO_TRACKING;
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                const sbx_cgroup_controller_probe *c = &probe->ctl[i];
                if (!controller_usable(c, flags))
                        continue;
                /* v1 freezer and cpuacct only duplicate what a cgroup2 group with cgroup.kill
                 * does (kill the tree; cpu.stat): each would cost a mkdir, an attach — the
                 * expensive part — and an rmdir per run. Nor are they made for a sandbox whose
                 * pid namespace does the killing (SBX_CG_CREATE_NO_TRACKING). */
                if (((probe->v2_kill && probe->v2.usable) || no_tracking) && c->version == SBX_CG_V1 &&
                        (i == SBX_CG_FREEZER || i == SBX_CG_CPUACCT))
                        continue;
                r = group_add(cg, c, name);
                if (r < 0)
                        return r;
                cg->ctl_group[i] = r;
                if (c->version == SBX_CG_V2 && (i == SBX_CG_MEMORY || i == SBX_CG_PIDS || i == SBX_CG_CPU))
                        v2_mask |= 1u << i;
        }
        if (probe->v2.usable && !(no_tracking && v2_mask == 0)) {
                r = group_add(cg, &probe->v2, name);
                if (r < 0)
                        return r;
                cg->ctl_group[CG_V2_INDEX] = r;
        } else {
                for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++)
                        if (cg->ctl_group[i] >= 0 && cg->g[cg->ctl_group[i]].version == SBX_CG_V2)
                                cg->ctl_group[CG_V2_INDEX] = cg->ctl_group[i];
        }

        /* The shared base is removed by whoever finds it empty (destroy, gc): if it vanishes
         * under us (ENOENT), start over. */
        for (unsigned attempt = 0;; attempt++) {
                const char *failed = NULL;
                sbx_error e_enable = {};
                r = v2_enable(probe, v2_mask, flags, &e_enable);
                for (size_t i = 0; r >= 0 && i < cg->n; i++) {
                        cg_group *g = &cg->g[i];
                        /* The base is kept between runs: make it only when missing. */
                        r = mkdir(g->path, 0755) < 0 ? negative_errno() : 0;
                        /* A v2 base with controllers must be remade by v2_enable() (the retry
                         * below); a v1 or tracking-only base just by mkdir. */
                        if (r == -ENOENT && !(g->version == SBX_CG_V2 && v2_mask)) {
                                _cleanup_free_ char *base = strdup(g->path);
                                if (!base)
                                        return -ENOMEM;
                                *strrchr(base, '/') = 0;
                                r = mkdir_ok_exists(base);
                                if (r >= 0 && mkdir(g->path, 0755) < 0)
                                        r = negative_errno();
                        }
                        if (r < 0)
                                failed = g->path;
                        else
                                g->created = true;
                }
                if (r == -ENOENT && attempt < 3) {
                        (void) sbx_cgroup_destroy(cg);
                        continue;
                }
                if (r < 0) {
                        (void) sbx_cgroup_destroy(cg);
                        if (!failed) { /* v2_enable() told the story */
                                if (e)
                                        *e = e_enable;
                                return r;
                        }
                        return sbx_error_set(e, r, "cgroup: mkdir", "cannot create cgroup %s: %s%s", failed,
                                strerror(-r),
                                r == -EEXIST ? " (a leftover of a killed run? 'sandboxer gc' removes those)"
                                             : "");
                }
                break;
        }

        if (cg->ctl_group[CG_V2_INDEX] >= 0) {
                cg->v2_fd = open(cg->g[cg->ctl_group[CG_V2_INDEX]].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (cg->v2_fd < 0) {
                        r = negative_errno();
                        (void) sbx_cgroup_destroy(cg);
                        return sbx_error_set(e, r, "cgroup: open", "cannot open %s: %s",
                                cg->g[cg->ctl_group[CG_V2_INDEX]].path, strerror(-r));
                }
        }

        r = apply_limits(cg, lim, e);
        if (r < 0) {
                (void) sbx_cgroup_destroy(cg);
                return r;
        }
        *ret = TAKE_PTR(cg);
        return 0;
}

int sbx_cgroup_attach(sbx_cgroup *cg, pid_t pid) {
        char buf[32];
        if (!cg || pid <= 0)
                return -EINVAL;
        snprintf(buf, sizeof buf, "%d", (int) pid);
        /* The cgroup2 tracking group first: every process of a sandbox is then in it, whatever
         * else fails, and sbx_cgroup_kill() may trust its "populated". */
        int v2 = cg->ctl_group[CG_V2_INDEX];
        if (v2 >= 0) {
                int r = write_at(cg->g[v2].path, "cgroup.procs", buf, cg->g[v2].real);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < cg->n; i++) {
                if ((int) i == v2)
                        continue;
                int r = write_at(cg->g[i].path, "cgroup.procs", buf, cg->g[i].real);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sbx_cgroup_self_attach_fds(sbx_cgroup *cg, int *fds, size_t max) {
        size_t n = 0;
        if (!cg || (!fds && max > 0))
                return -EINVAL;
        for (size_t i = 0; i < cg->n; i++) {
                if (cg->g[i].version != SBX_CG_V1)
                        continue;
                int r = -ENOBUFS;
                if (n < max) {
                        _cleanup_free_ char *p = NULL;
                        if (path_join(&p, cg->g[i].path, "tasks") < 0)
                                r = -ENOMEM;
                        else {
                                fds[n] = open(p, O_WRONLY | O_CLOEXEC | O_NOCTTY);
                                r = fds[n] < 0 ? negative_errno() : 0;
                        }
                }
                if (r < 0) {
                        for (size_t j = 0; j < n; j++)
                                (void) close(fds[j]);
                        return r;
                }
                n++;
        }
        return (int) n;
}

int sbx_cgroup_self_attach(const int *fds, size_t n) {
        for (size_t i = 0; i < n; i++) {
                ssize_t k;
                do
                        k = write(fds[i], "0", 1);
                while (k < 0 && errno == EINTR);
                if (k != 1)
                        return k < 0 ? -errno : -EIO;
        }
        return 0;
}

/* SIGKILL every process listed in the group; returns how many were listed, or -errno. */
static int kill_listed(const cg_group *g) {
        _cleanup_free_ char *t = NULL;
        if (!g->real)
                return 0; /* a fake tree lists no real processes */
        int r = read_at(g->path, "cgroup.procs", &t);
        if (r == -ENOENT || r == -ENODEV)
                return 0; /* the group is gone */
        if (r < 0)
                return r;
        int n = 0;
        for (char *l = t; *l;) {
                long pid = strtol(l, &l, 10);
                if (pid > 0) {
                        /* Listed means alive or exiting: a frozen task cannot be reaped, so the
                         * pid cannot have been reused meanwhile. */
                        (void) kill((pid_t) pid, SIGKILL);
                        n++;
                }
                while (*l && *l != '\n')
                        l++;
                if (*l)
                        l++;
        }
        return n;
}

static int freezer_set(const cg_group *g, const char *state, bool wait) {
        int r = write_at(g->path, "freezer.state", state, true);
        if (r < 0 || !wait)
                return r;
        uint64_t deadline = now_usec() + 1000000;
        for (;;) {
                _cleanup_free_ char *t = NULL;
                r = read_at(g->path, "freezer.state", &t);
                if (r < 0)
                        return r;
                if (strncmp(t, state, strlen(state)) == 0)
                        return 0;
                if (now_usec() > deadline)
                        return -ETIMEDOUT;
                sleep_usec(1000);
        }
}

/* Does the group hold a process? 1 yes, 0 no, -errno when it cannot be told. */
static int listed_any(const cg_group *g) {
        _cleanup_free_ char *t = NULL;
        if (!g->real)
                return 0;
        int r = read_at(g->path, "cgroup.procs", &t);
        if (r == -ENOENT || r == -ENODEV)
                return 0;
        if (r < 0)
                return r;
        return t[strspn(t, " \n")] != 0;
}

/* cgroup2 "populated" of a group (itself and below): 1, 0, or -errno. */
static int v2_populated(const cg_group *g) {
        uint64_t v;
        int r = read_key_u64_at(g->path, "cgroup.events", "populated", &v);
        if (r == -ENOENT || r == -ENODEV)
                return 0; /* the group is gone */
        return r < 0 ? r : v != 0;
}

int sbx_cgroup_kill(sbx_cgroup *cg) {
        if (!cg)
                return -EINVAL;
        if (cg->n == 0)
                return -EOPNOTSUPP;

        /* The cgroup2 tracking group holds every process of the sandbox (attached there first,
         * or born there with CLONE_INTO_CGROUP): when it is empty — the common case at the end
         * of a run — there is nothing to kill, and one read says so. Otherwise cgroup.kill
         * kills them all at once, stopped ones too, with no fork race. */
        int v2 = cg->ctl_group[CG_V2_INDEX];
        if (v2 >= 0 && cg->g[v2].real && cg->g[v2].created) {
                const cg_group *g = &cg->g[v2];
                int pop = v2_populated(g);
                if (pop == 0)
                        return 0;
                if (write_at(g->path, "cgroup.kill", "1", true) >= 0) { /* -ENOENT before 5.14 */
                        uint64_t deadline = now_usec() + 5000000;
                        for (uint64_t wait = 200;; wait = MIN(wait * 2, 20000ULL)) {
                                pop = v2_populated(g);
                                if (pop == 0)
                                        return 0;
                                if (pop < 0)
                                        break; /* cannot tell: the v1 way below */
                                if (now_usec() > deadline)
                                        return -EBUSY;
                                sleep_usec(wait);
                        }
                }
        } else {
                /* No cgroup2 group: look before freezing; an empty sandbox needs no freeze. */
                bool any = false;
                for (size_t i = 0; i < cg->n && !any; i++)
                        if (cg->g[i].created && listed_any(&cg->g[i]) != 0)
                                any = true;
                if (!any)
                        return 0;
        }

        /* v1: freeze first so nothing forks or exits between listing and killing; frozen and
         * stopped tasks take SIGKILL once thawed. */
        const cg_group *fz = NULL;
        int fi = cg->ctl_group[SBX_CG_FREEZER];
        if (fi >= 0 && cg->g[fi].version == SBX_CG_V1 && cg->g[fi].real && cg->g[fi].created) {
                fz = &cg->g[fi];
                if (freezer_set(fz, "FROZEN", true) < 0)
                        (void) freezer_set(fz, "THAWED", false); /* kill unfrozen, loop below copes */
        }

        uint64_t deadline = now_usec() + 5000000;
        int r = 0;
        for (uint64_t wait = 500;; wait = MIN(wait * 2, 20000ULL)) {
                int listed = 0;
                for (size_t i = 0; i < cg->n; i++) {
                        if (!cg->g[i].created)
                                continue;
                        int k = kill_listed(&cg->g[i]);
                        if (k < 0 && r == 0)
                                r = k;
                        if (k > 0)
                                listed += k;
                }
                if (fz) {
                        (void) freezer_set(fz, "THAWED", false);
                        fz = NULL;
                }
                if (listed == 0)
                        return r == -EACCES || r == -EPERM ? r : 0;
                if (now_usec() > deadline)
                        return -EBUSY;
                sleep_usec(wait);
        }
}

int sbx_cgroup_destroy(sbx_cgroup *cg) {
        if (!cg)
                return 0;
        cg->v2_fd = safe_close(cg->v2_fd);
        /* The common end: the sandbox is gone and every group empty, which rmdir itself tells
         * (EBUSY while a process is in one). So the groups go first, and the kill — which reads
         * each group to find its processes — runs only for what rmdir refused. */
        bool left = false;
        for (size_t i = cg->n; i-- > 0;) {
                cg_group *g = &cg->g[i];
                if (!g->created)
                        continue;
                if (g->real && rmdir(g->path) == 0)
                        g->created = false;
                else
                        left = true;
        }
        if (!left)
                return 0;
        int r = sbx_cgroup_kill(cg);
        if (r == -EOPNOTSUPP)
                r = 0;
        for (size_t i = cg->n; i-- > 0;) {
                cg_group *g = &cg->g[i];
                if (!g->created)
                        continue;
                int k = rmdir_tree(g->path, g->real, true);
                if (k < 0) {
                        if (r == 0)
                                r = k;
                        continue;
                }
                g->created = false;
                /* The shared base stays (see cgroup.h). */
        }
        return r;
}

int sbx_cgroup_stats_read(sbx_cgroup *cg, sbx_cgroup_stats *ret) {
        return sbx_cgroup_stats_read_some(cg, SBX_CG_STAT_ALL, ret);
}

/* cgroup v1's pids.events counts a refused fork in the group of the task that forked, not in the
 * one whose limit refused it: an engine that runs the sandbox in a group of its own below ours
 * (runc's, under podman's --cgroup-parent) has the count there. So: ours plus every group below
 * (looked for only where the link count says there are some). v2's counter is hierarchical. */
static int v1_pids_refused_subtree(const char *path, unsigned depth, uint64_t *ret) {
        uint64_t v = 0, total = 0;
        int r = read_key_u64_at(path, "pids.events", "max", &v);
        if (r < 0)
                return r;
        total = v;
        struct stat st;
        if (depth < 8 && stat(path, &st) == 0 && st.st_nlink > 2) {
                _cleanup_(closedirp_) DIR *d = opendir(path);
                struct dirent *de;
                while (d && (de = readdir(d))) {
                        if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
                                continue;
                        _cleanup_free_ char *sub = NULL;
                        uint64_t w;
                        if (path_join(&sub, path, de->d_name) < 0)
                                return -ENOMEM;
                        if (is_dir(sub) && v1_pids_refused_subtree(sub, depth + 1, &w) >= 0)
                                total += w;
                }
        }
        *ret = total;
        return 0;
}

int sbx_cgroup_stats_read_some(sbx_cgroup *cg, unsigned what, sbx_cgroup_stats *ret) {
        if (!cg || !ret)
                return -EINVAL;
        sbx_cgroup_stats s = {
                .oom_kills = SBX_CG_UNKNOWN,
                .memory_max_hits = SBX_CG_UNKNOWN,
                .memory_peak_bytes = SBX_CG_UNKNOWN,
                .pids_current = SBX_CG_UNKNOWN,
                .pids_peak = SBX_CG_UNKNOWN,
                .pids_refused = SBX_CG_UNKNOWN,
                .cpu_usage_usec = SBX_CG_UNKNOWN,
                .cpu_throttled_usec = SBX_CG_UNKNOWN,
        };
        uint64_t v;

        int mi = cg->ctl_group[SBX_CG_MEMORY];
        if (mi >= 0) {
                const char *p = cg->g[mi].path;
                if (cg->g[mi].version == SBX_CG_V2) {
                        _cleanup_free_ char *t = NULL;
                        if ((what & (SBX_CG_STAT_OOM | SBX_CG_STAT_MEMORY_MAX_HITS)) &&
                                read_at(p, "memory.events", &t) >= 0) {
                                if ((what & SBX_CG_STAT_OOM) && key_u64(t, "oom_kill", &v) >= 0)
                                        s.oom_kills = v;
                                if ((what & SBX_CG_STAT_MEMORY_MAX_HITS) && key_u64(t, "max", &v) >= 0)
                                        s.memory_max_hits = v;
                        }
                        if ((what & SBX_CG_STAT_MEMORY_PEAK) && read_u64_at(p, "memory.peak", &v) >= 0)
                                s.memory_peak_bytes = v;
                } else {
                        if ((what & SBX_CG_STAT_OOM) &&
                                read_key_u64_at(p, "memory.oom_control", "oom_kill", &v) >= 0)
                                s.oom_kills = v;
                        /* With memsw = memory the memsw counter is charged first and takes the
                         * failures; count whichever saw more. */
                        if (what & SBX_CG_STAT_MEMORY_MAX_HITS) {
                                if (read_u64_at(p, "memory.failcnt", &v) >= 0)
                                        s.memory_max_hits = v;
                                uint64_t w;
                                if (read_u64_at(p, "memory.memsw.failcnt", &w) >= 0 &&
                                        (s.memory_max_hits == SBX_CG_UNKNOWN || w > s.memory_max_hits))
                                        s.memory_max_hits = w;
                        }
                        if ((what & SBX_CG_STAT_MEMORY_PEAK) &&
                                read_u64_at(p, "memory.max_usage_in_bytes", &v) >= 0)
                                s.memory_peak_bytes = v;
                }
        }
        int pi = cg->ctl_group[SBX_CG_PIDS];
        if (pi >= 0) {
                const char *p = cg->g[pi].path;
                if (what & SBX_CG_STAT_PIDS) {
                        if (read_u64_at(p, "pids.peak", &v) >= 0)
                                s.pids_peak = v;
                        /* pids.current where asked for everything, or where it stands in for
                         * the missing pids.peak */
                        if ((what == SBX_CG_STAT_ALL || s.pids_peak == SBX_CG_UNKNOWN) &&
                                read_u64_at(p, "pids.current", &v) >= 0) {
                                s.pids_current = v;
                                cg->pids_peak_seen = MAX(cg->pids_peak_seen, v);
                                if (s.pids_peak == SBX_CG_UNKNOWN)
                                        s.pids_peak = cg->pids_peak_seen;
                        }
                }
                if ((what & SBX_CG_STAT_PIDS_REFUSED) &&
                        (cg->g[pi].version == SBX_CG_V1 && cg->g[pi].real
                                        ? v1_pids_refused_subtree(p, 0, &v)
                                        : read_key_u64_at(p, "pids.events", "max", &v)) >= 0)
                        s.pids_refused = MAX(v, cg->pids_refused_seen);
                else if ((what & SBX_CG_STAT_PIDS_REFUSED) && cg->pids_refused_seen > 0)
                        s.pids_refused = cg->pids_refused_seen;
        }
        if (!(what & SBX_CG_STAT_CPU)) {
                *ret = s;
                return 0;
        }
        int ci = cg->ctl_group[SBX_CG_CPU], ai = cg->ctl_group[SBX_CG_CPUACCT],
            vi = cg->ctl_group[CG_V2_INDEX];
        if (ci >= 0 && cg->g[ci].version == SBX_CG_V1) {
                if (read_key_u64_at(cg->g[ci].path, "cpu.stat", "throttled_time", &v) >= 0)
                        s.cpu_throttled_usec = v / 1000;
        }
        if (ai >= 0 && cg->g[ai].version == SBX_CG_V1) {
                if (read_u64_at(cg->g[ai].path, "cpuacct.usage", &v) >= 0)
                        s.cpu_usage_usec = v / 1000;
        }
        /* cpu.stat is core in cgroup2: every v2 group has usage_usec. */
        int v2i = ci >= 0 && cg->g[ci].version == SBX_CG_V2 ? ci : vi;
        if (v2i >= 0 && cg->g[v2i].version == SBX_CG_V2) {
                if (s.cpu_usage_usec == SBX_CG_UNKNOWN &&
                        read_key_u64_at(cg->g[v2i].path, "cpu.stat", "usage_usec", &v) >= 0)
                        s.cpu_usage_usec = v;
                if (s.cpu_throttled_usec == SBX_CG_UNKNOWN &&
                        read_key_u64_at(cg->g[v2i].path, "cpu.stat", "throttled_usec", &v) >= 0)
                        s.cpu_throttled_usec = v;
        }
        *ret = s;
        return 0;
}

void sbx_cgroup_note_end(sbx_cgroup *cg) {
        int pi = cg ? cg->ctl_group[SBX_CG_PIDS] : -1;
        uint64_t v;
        if (pi >= 0 && cg->g[pi].version == SBX_CG_V1 && cg->g[pi].real &&
                v1_pids_refused_subtree(cg->g[pi].path, 0, &v) >= 0)
                cg->pids_refused_seen = MAX(cg->pids_refused_seen, v);
}

int sbx_cgroup_event_fd(sbx_cgroup *cg) {
        if (!cg)
                return -EINVAL;
        int mi = cg->ctl_group[SBX_CG_MEMORY];
        if (mi < 0)
                return -EOPNOTSUPP;
        const cg_group *g = &cg->g[mi];
        _cleanup_free_ char *p = NULL;

        if (g->version == SBX_CG_V2) {
                if (path_join(&p, g->path, "memory.events") < 0)
                        return -ENOMEM;
                _cleanup_close_ int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
                if (fd < 0)
                        return negative_errno();
                if (inotify_add_watch(fd, p, IN_MODIFY) < 0)
                        return negative_errno();
                return TAKE_FD(fd);
        }

        if (path_join(&p, g->path, "memory.oom_control") < 0)
                return -ENOMEM;
        _cleanup_close_ int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return negative_errno();
        _cleanup_close_ int ofd = open(p, O_RDONLY | O_CLOEXEC);
        if (ofd < 0)
                return negative_errno();
        char buf[64];
        snprintf(buf, sizeof buf, "%d %d", efd, ofd);
        int r = write_at(g->path, "cgroup.event_control", buf, g->real);
        if (r < 0)
                return r;
        return TAKE_FD(efd);
}

/* ---- gc ---- */

/* The inode number of our pid namespace; 0 when it cannot be told. It never changes for a
 * process (unshare(CLONE_NEWPID) affects its children only). */
static uint64_t own_pidns(void) {
        /* Asked once per process (a run names its cgroups and scans up to six bases for dead
         * owners); a child made into a new pid namespace has another pid, so asks again. */
        static pid_t cached_pid;
        static uint64_t cached_ns;
        pid_t me = getpid();
        if (cached_pid != me || cached_ns == 0) {
                struct stat st;
                cached_ns = stat("/proc/self/ns/pid", &st) < 0 ? 0 : (uint64_t) st.st_ino;
                cached_pid = me;
        }
        return cached_ns;
}

int sbx_cgroup_owned_name(const char *id, char *buf, size_t size) {
        if (!id || !buf || strlen(id) > 40 || !name_valid(id))
                return -EINVAL;
        uint64_t ns = own_pidns();
        if (ns == 0)
                return negative_errno();
        int n = snprintf(buf, size, "%s.%d.%" PRIx64, id, (int) getpid(), ns);
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        return 0;
}

/* "<id>.<pid>.<pidns hex>": the owner's pid and pid namespace; false for any other name. */
static bool owned_name_parse(const char *name, pid_t *ret_pid, uint64_t *ret_ns) {
        const char *dot2 = strrchr(name, '.');
        if (!dot2 || dot2 == name || !isxdigit((unsigned char) dot2[1]))
                return false;
        const char *dot1 = dot2 - 1;
        while (dot1 > name && isdigit((unsigned char) *dot1))
                dot1--;
        if (*dot1 != '.' || dot1 == name || dot1 + 1 == dot2)
                return false;
        char *end;
        errno = 0;
        unsigned long long ns = strtoull(dot2 + 1, &end, 16);
        if (errno || *end || ns == 0)
                return false;
        long pid = strtol(dot1 + 1, &end, 10);
        if (end != dot2 || pid <= 0 || pid > INT_MAX)
                return false;
        *ret_pid = (pid_t) pid;
        *ret_ns = ns;
        return true;
}

/* Is the owner of an owned name known to be dead? Only for owners in our own pid namespace
 * (another namespace's pid means nothing here); EPERM means alive. */
static bool owner_dead(const char *name, uint64_t our_ns) {
        pid_t pid;
        uint64_t ns;
        if (!owned_name_parse(name, &pid, &ns) || ns != our_ns || our_ns == 0)
                return false;
        return kill(pid, 0) < 0 && errno == ESRCH;
}

bool sbx_owned_name_dead(const char *name) {
        uint64_t ns = own_pidns();
        return ns != 0 && owner_dead(name, ns);
}

static bool owner_alive(const char *name, uint64_t our_ns) {
        pid_t pid;
        uint64_t ns;
        if (!owned_name_parse(name, &pid, &ns) || ns != our_ns || our_ns == 0)
                return false;
        return kill(pid, 0) == 0 || errno == EPERM;
}

int sbx_owned_dead_scan(int fd, char ***names) {
        uint64_t our_ns = 0;
        char buf[8192];
        for (;;) {
                long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                for (long off = 0; off < n;) {
                        struct dirent64 *de = (struct dirent64 *) (buf + off);
                        off += de->d_reclen;
                        if ((de->d_type != DT_DIR && de->d_type != DT_REG) || de->d_name[0] == '.' ||
                                strv_contains(*names, de->d_name))
                                continue;
                        if (our_ns == 0 && (our_ns = own_pidns()) == 0)
                                return -errno;
                        if (owner_dead(de->d_name, our_ns) && strv_extend(names, de->d_name) < 0)
                                return -ENOMEM;
                }
                /* A short batch is the whole directory (kernfs fills what fits). */
                if ((size_t) n < sizeof buf / 2)
                        return 0;
        }
}

/* own[b]: our own group is a directory of base[b] (NULL: none of ours anywhere). */
static int gc_dead_owners(
        char *const *base, const bool *real, const bool *own, size_t nb, char ***ret_names) {
        _cleanup_strv_free_ char **dead = NULL;
        int removed = 0;

        /* One getdents64() per base, names only: a base holds the groups of live runs (and
         * now and then a leftover), so this stays a few syscalls. Fewer still where the base's
         * link count says it holds no group but ours: a cgroupfs directory counts its
         * subdirectories in st_nlink (2 + n), so one stat answers for the common case of one
         * run at a time. */
        for (size_t b = 0; b < nb; b++) {
                struct stat st;
                if (real[b] && stat(base[b], &st) == 0 && st.st_nlink >= 2 &&
                        st.st_nlink - 2 <= (nlink_t) (own && own[b] ? 1 : 0))
                        continue;
                _cleanup_close_ int fd = open(base[b], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        continue; /* no base yet, or not ours to read */
                int r = sbx_owned_dead_scan(fd, &dead);
                if (r == -ENOMEM)
                        return r;
        }
        if (!dead)
                return 0;

        _cleanup_strv_free_ char **names = NULL;
        STRV_FOREACH(d, dead) {
                bool gone = true;
                for (size_t b = 0; b < nb; b++) {
                        _cleanup_free_ char *path = NULL;
                        if (path_join(&path, base[b], *d) < 0)
                                return -ENOMEM;
                        /* No retry: a group still populated (its processes dying) waits for the
                         * next run; the hot path never sleeps. */
                        if (rmdir_tree(path, real[b], false) < 0)
                                gone = false;
                }
                if (gone) {
                        removed++;
                        if (ret_names && strv_extend(&names, *d) < 0)
                                return -ENOMEM;
                }
        }
        if (ret_names)
                *ret_names = TAKE_PTR(names);
        return removed;
}

int sbx_cgroup_gc_dead_owners(const sbx_cgroup_probe_result *probe, char ***ret_names) {
        const sbx_cgroup_controller_probe *bases[_SBX_CG_CONTROLLER_MAX + 1];
        char *base[_SBX_CG_CONTROLLER_MAX + 1];
        bool real[_SBX_CG_CONTROLLER_MAX + 1];
        size_t nb;
        if (!probe)
                return -EINVAL;
        (void) probe_bases(probe, bases, &nb);
        for (size_t b = 0; b < nb; b++) {
                base[b] = bases[b]->base;
                real[b] = bases[b]->real;
        }
        return gc_dead_owners(base, real, NULL, nb, ret_names);
}

int sbx_cgroup_gc_dead_siblings(sbx_cgroup *cg) {
        if (!cg)
                return -EINVAL;
        bool own[_SBX_CG_CONTROLLER_MAX + 1] = {0};
        for (size_t b = 0; b < cg->n_gc; b++) {
                size_t l = strlen(cg->gc_base[b]);
                for (size_t i = 0; i < cg->n && !own[b]; i++) {
                        const char *p = cg->g[i].path;
                        own[b] = cg->g[i].created && strncmp(p, cg->gc_base[b], l) == 0 && p[l] == '/' &&
                                 !strchr(p + l + 1, '/');
                }
        }
        return gc_dead_owners(cg->gc_base, cg->gc_real, own, cg->n_gc, NULL);
}

/* Does the group or any group below it list a process? */
static bool tree_has_procs(const char *path) {
        _cleanup_free_ char *t = NULL;
        if (read_at(path, "cgroup.procs", &t) >= 0 && t[strspn(t, " \n")] != 0)
                return true;
        _cleanup_(closedirp_) DIR *d = opendir(path);
        if (!d)
                return false;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *sub = NULL;
                if (path_join(&sub, path, de->d_name) < 0)
                        return true; /* be conservative */
                if (is_dir(sub) && tree_has_procs(sub))
                        return true;
        }
        return false;
}

static int gc_base(const char *base, bool real, const sbx_cgroup_gc_options *o, char ***names) {
        _cleanup_(closedirp_) DIR *d = opendir(base);
        if (!d)
                return errno == ENOENT ? 0 : negative_errno();
        struct dirent *de;
        time_t now = time(NULL);
        uint64_t our_ns = own_pidns();
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (o->prefix && strncmp(de->d_name, o->prefix, strlen(o->prefix)) != 0)
                        continue;
                _cleanup_free_ char *path = NULL;
                if (path_join(&path, base, de->d_name) < 0)
                        return -ENOMEM;
                struct stat st;
                if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                /* A group named for a dead owner needs no age: its run is over for sure. */
                if (o->min_age_s > 0 && now - st.st_mtime < (time_t) o->min_age_s &&
                        !owner_dead(de->d_name, our_ns))
                        continue;
                if (owner_alive(de->d_name, our_ns))
                        continue; /* its run is alive, maybe between mkdir and attach */
                if (strncmp(de->d_name, CG_SUPERVISOR_PREFIX, STRLEN(CG_SUPERVISOR_PREFIX)) == 0) {
                        long pid = strtol(de->d_name + STRLEN(CG_SUPERVISOR_PREFIX), NULL, 10);
                        if (pid > 0 && (kill((pid_t) pid, 0) == 0 || errno == EPERM))
                                continue;
                }
                if (tree_has_procs(path))
                        continue;
                if (!o->dry_run && rmdir_tree(path, real, false) < 0)
                        continue; /* raced with a new process, or not ours to remove */
                if (!strv_contains(*names, de->d_name)) {
                        int r = strv_extend(names, de->d_name);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int sbx_cgroup_gc(
        const sbx_cgroup_probe_result *probe, const sbx_cgroup_gc_options *opts, char ***ret_names) {
        static const sbx_cgroup_gc_options defaults = {.min_age_s = 60};
        _cleanup_strv_free_ char **names = NULL, **bases = NULL;
        int r = 0;

        if (!probe)
                return -EINVAL;
        if (!opts)
                opts = &defaults;
        for (size_t i = 0; i <= _SBX_CG_CONTROLLER_MAX; i++) {
                const sbx_cgroup_controller_probe *c =
                        i < _SBX_CG_CONTROLLER_MAX ? &probe->ctl[i] : &probe->v2;
                if (!c->base || c->version == SBX_CG_NONE || strv_contains(bases, c->base))
                        continue;
                if (strv_extend(&bases, c->base) < 0)
                        return -ENOMEM;
                int k = gc_base(c->base, c->real, opts, &names);
                if (!opts->dry_run)
                        (void) rmdir(c->base); /* fails while other sandboxes use it */
                if (k == -ENOMEM)
                        return k;
                if (k < 0 && r == 0)
                        r = k;
        }
        if (r < 0 && strv_length(names) == 0)
                return r;
        int n = (int) strv_length(names);
        if (ret_names)
                *ret_names = TAKE_PTR(names);
        return n;
}
