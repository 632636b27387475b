/* cgroup-gc.c — names that carry their owner (run_<id>.<pid>.<pidns>) and the removal of what
 * runs killed with SIGKILL left: at the next run (dead owners only, no waiting) and by
 * `sandboxer gc` (also unnamed groups past an age, never one that holds a process). */
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
        if (!id || !buf || strlen(id) > 40 || !cg_name_valid(id))
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
                        if (cg_path_join(&path, base[b], *d) < 0)
                                return -ENOMEM;
                        /* No retry: a group still populated (its processes dying) waits for the
                         * next run; the hot path never sleeps. */
                        if (cg_rmdir_tree(path, real[b], false) < 0)
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
        (void) cg_probe_bases(probe, bases, &nb);
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
        if (cg_read_at(path, "cgroup.procs", &t) >= 0 && t[strspn(t, " \n")] != 0)
                return true;
        _cleanup_(cg_closedirp) DIR *d = opendir(path);
        if (!d)
                return false;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *sub = NULL;
                if (cg_path_join(&sub, path, de->d_name) < 0)
                        return true; /* be conservative */
                if (cg_is_dir(sub) && tree_has_procs(sub))
                        return true;
        }
        return false;
}

static int gc_base(const char *base, bool real, const sbx_cgroup_gc_options *o, char ***names) {
        _cleanup_(cg_closedirp) DIR *d = opendir(base);
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
                if (cg_path_join(&path, base, de->d_name) < 0)
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
                if (!o->dry_run && cg_rmdir_tree(path, real, false) < 0)
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
