/* mount.c — building the sandbox's root view: a tmpfs root holding read-only binds of the read
 * list, a fresh /proc, a minimal /dev, the scratch tmpfs and the workspace; then pivot_root.
 * The plan is made in the parent; sbx_mount_plan_execute() runs in the child with syscalls only. */
#include "isolate/mount.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>

#include "basic/missing.h"

sbx_mount_plan *sbx_mount_plan_free(sbx_mount_plan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_ops; i++) {
                free(p->ops[i].source);
                free(p->ops[i].target);
                free(p->ops[i].data);
                if (p->ops[i].type == SBX_MOP_MOVE_FD && p->ops[i].fd >= 0)
                        close(p->ops[i].fd);
        }
        free(p->ops);
        free(p->staging);
        free(p);
        return NULL;
}

int sbx_mount_plan_new(sbx_mount_plan **ret) {
        sbx_mount_plan *p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->staging = strdup("/tmp");
        if (!p->staging) {
                free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

static char *memdup_str(const char *s, size_t n) {
        char *c = malloc(n + 1);
        if (c) {
                memcpy(c, s, n);
                c[n] = 0;
        }
        return c;
}

int sbx_mount_plan_add(sbx_mount_plan *p, sbx_mop_type type, const char *source, const char *target,
        const char *data, size_t data_len, bool rw, bool is_dir, mode_t mode) {
        if (p->n_ops == p->n_alloc) {
                size_t na = p->n_alloc ? p->n_alloc * 2 : 32;
                sbx_mount_op *o = realloc(p->ops, na * sizeof *o);
                if (!o)
                        return -ENOMEM;
                p->ops = o;
                p->n_alloc = na;
        }
        sbx_mount_op op = {
                .type = type, .rw = rw, .is_dir = is_dir, .mode = mode, .data_len = data_len, .fd = -1};
        if (source && !(op.source = strdup(source)))
                goto oom;
        if (target && !(op.target = strdup(target)))
                goto oom;
        if (data && !(op.data = memdup_str(data, data_len)))
                goto oom;
        p->ops[p->n_ops++] = op;
        return 0;
oom:
        free(op.source);
        free(op.target);
        return -ENOMEM;
}

int sbx_mount_plan_add_fd(sbx_mount_plan *p, int fd, const char *target, bool is_dir) {
        int r = sbx_mount_plan_add(p, SBX_MOP_MOVE_FD, NULL, target, NULL, 0, true, is_dir, 0);
        if (r < 0) {
                close(fd);
                return r;
        }
        p->ops[p->n_ops - 1].fd = fd;
        return 0;
}

/* A user namespace holding just the mapping, for MOUNT_ATTR_IDMAP: a child that only waits. */
static int idmap_userns(uid_t disk_uid, gid_t disk_gid, uid_t kuid, gid_t kgid, sbx_error *e) {
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0)
                return sbx_error_set(e, errno, "idmap", "pipe: %m");
        pid_t pid = (pid_t) syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
        if (pid < 0) {
                int r = sbx_error_set(
                        e, errno, "idmap", "cannot create a user namespace for the idmapped workspace: %m");
                close(pfd[0]), close(pfd[1]);
                return r;
        }
        if (pid == 0) {
                char c;
                close(pfd[1]);
                _exit(read(pfd[0], &c, 1) < 0 ? 1 : 0);
        }
        close(pfd[0]);
        char path[64], buf[64];
        int r = 0, nsfd = -1;
        static const char *const files[] = {"uid_map", "setgroups", "gid_map"};
        for (int i = 0; i < 3 && r >= 0; i++) {
                snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, files[i]);
                if (i == 0)
                        snprintf(buf, sizeof buf, "%u %u 1\n", (unsigned) disk_uid, (unsigned) kuid);
                else if (i == 1)
                        snprintf(buf, sizeof buf, "deny");
                else
                        snprintf(buf, sizeof buf, "%u %u 1\n", (unsigned) disk_gid, (unsigned) kgid);
                int fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, buf, strlen(buf)) < 0)
                        r = sbx_error_set(e, errno, "idmap", "cannot write %s: %m", path);
                if (fd >= 0)
                        close(fd);
        }
        if (r >= 0) {
                snprintf(path, sizeof path, "/proc/%d/ns/user", (int) pid);
                nsfd = open(path, O_RDONLY | O_CLOEXEC);
                if (nsfd < 0)
                        r = sbx_error_set(e, errno, "idmap", "cannot open %s: %m", path);
        }
        close(pfd[1]); /* the child exits */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        return r < 0 ? r : nsfd;
}

int sbx_mount_idmapped_tree(const char *host_path, uid_t disk_uid, gid_t disk_gid, uid_t kuid, gid_t kgid,
        bool readonly, sbx_error *e) {
        int tree = open_tree(AT_FDCWD, host_path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (tree < 0)
                return sbx_error_set(e, errno, "workspace: open_tree",
                        "cannot clone the mount tree of %s: %m", host_path);
        int ns = idmap_userns(disk_uid, disk_gid, kuid, kgid, e);
        if (ns < 0) {
                close(tree);
                return ns;
        }
        struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                .userns_fd = (uint64_t) ns};
        if (readonly)
                attr.attr_set |= MOUNT_ATTR_RDONLY;
        int r = (int) syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr);
        int err = errno;
        close(ns);
        if (r < 0) {
                close(tree);
                return sbx_error_set(e, err, "idmap",
                        "cannot make an idmapped mount of the workspace %s (%s): the kernel or its "
                        "filesystem does not "
                        "support idmapped mounts, and without one, writes from the sandbox would land owned "
                        "by uid %u; "
                        "run sandboxer as the workspace's owner instead of root, or use a filesystem that "
                        "supports "
                        "idmapped mounts (ext4, xfs, btrfs, tmpfs on Linux 6.3+)",
                        host_path, strerror(err), (unsigned) kuid);
        }
        return tree;
}

int sbx_mount_ro_tree(const char *host_path, sbx_error *e) {
        int tree = open_tree(AT_FDCWD, host_path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (tree < 0)
                return sbx_error_set(e, errno, "workspace: open_tree",
                        "cannot clone the mount tree of %s: %m", host_path);
        struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
                int r = sbx_error_set(
                        e, errno, "workspace", "cannot make the workspace %s read-only: %m", host_path);
                close(tree);
                return r;
        }
        return tree;
}

int sbx_mount_rw_tree(const char *host_path, sbx_error *e) {
        int tree = open_tree(AT_FDCWD, host_path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (tree < 0)
                return sbx_error_set(
                        e, errno, "volume: open_tree", "cannot clone the mount tree of %s: %m", host_path);
        struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
                int r = sbx_error_set(e, errno, "volume", "cannot set nosuid,nodev on %s: %m", host_path);
                close(tree);
                return r;
        }
        return tree;
}

int sbx_mkdir_p(const char *path, mode_t mode) {
        char buf[4096];
        size_t n = strlen(path);
        if (n == 0 || n >= sizeof buf)
                return -ENAMETOOLONG;
        memcpy(buf, path, n + 1);
        for (size_t i = 1; i <= n; i++) {
                if (buf[i] != '/' && buf[i] != 0)
                        continue;
                char c = buf[i];
                buf[i] = 0;
                if (mkdir(buf, mode) < 0 && errno != EEXIST)
                        return -errno;
                buf[i] = c;
        }
        return 0;
}

/* The parent directory make_mount_point() made last: a plan's mount points come grouped by
 * directory (/dev/null, /dev/zero, ...), and each mkdir of an existing parent is a system call
 * on the path to the command. Forgotten when something is mounted on it or above it. (The
 * child runs one plan; nothing else in it uses this.) */
static char made_parent[4096];

static void forget_parent_under(const char *target) {
        size_t n = strlen(target);
        if (strncmp(made_parent, target, n) == 0 &&
                (made_parent[n] == 0 || made_parent[n] == '/' || (n == 1 && target[0] == '/')))
                made_parent[0] = 0;
}

/* Create the parent directories of path, unless they are the ones made last. */
static int make_parents(const char *path) {
        char buf[4096];
        size_t n = strlen(path);
        if (n >= sizeof buf)
                return -ENAMETOOLONG;
        memcpy(buf, path, n + 1);
        char *slash = strrchr(buf, '/');
        if (!slash || slash == buf)
                return 0;
        *slash = 0;
        if (streq(buf, made_parent))
                return 0;
        int r = sbx_mkdir_p(buf, 0755);
        if (r < 0)
                return r;
        memcpy(made_parent, buf, (size_t) (slash - buf) + 1);
        return 0;
}

/* Create the parent directories of path and an empty file or directory at path to mount on; what
 * is there already is used as it is (e.g. a file under a read-only bind of its parent). */
static int make_mount_point(const char *path, bool dir) {
        int r = make_parents(path);
        if (r < 0)
                return r;
        if (dir) {
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        return -errno;
                return 0;
        }
        /* O_EXCL: an existing file (or device, or directory) is never opened, only found */
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0444);
        if (fd < 0) {
                if (errno == EEXIST || errno == EROFS)
                        return 0;
                return -errno;
        }
        close(fd);
        return 0;
}

/* Read-only for the mount and every mount below it. mount_setattr(2) does it in one call and
 * cannot trip over the locked flags of mounts inherited from a more privileged namespace;
 * the fallback remount must repeat those flags or the kernel refuses with EPERM. */
static int make_readonly(const char *path, bool noexec, bool nodev) {
        struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID};
        if (nodev)
                attr.attr_set |= MOUNT_ATTR_NODEV;
        if (noexec)
                attr.attr_set |= MOUNT_ATTR_NOEXEC;
        if (syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &attr,
                    sizeof attr) == 0)
                return 0;
        if (errno != ENOSYS)
                return -errno;
        struct statvfs sv;
        if (statvfs(path, &sv) < 0)
                return -errno;
        unsigned long fl = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID |
                           (nodev || (sv.f_flag & ST_NODEV) ? MS_NODEV : 0);
        if (sv.f_flag & ST_NOEXEC || noexec)
                fl |= MS_NOEXEC;
        if (sv.f_flag & ST_NOATIME)
                fl |= MS_NOATIME;
        if (sv.f_flag & ST_NODIRATIME)
                fl |= MS_NODIRATIME;
        if (sv.f_flag & ST_RELATIME)
                fl |= MS_RELATIME;
        if (mount(NULL, path, NULL, fl, NULL) < 0)
                return -errno;
        return 0;
}

static int write_file(const char *path, const char *data, size_t len, mode_t mode) {
        int r = make_mount_point(path, false);
        (void) r;
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        while (len > 0) {
                ssize_t k = write(fd, data, len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = -errno;
                        close(fd);
                        return e;
                }
                data += k;
                len -= (size_t) k;
        }
        close(fd);
        return 0;
}

static int run_op(const sbx_mount_op *op, sbx_child_error *err) {
        int r;
        switch (op->type) {
        case SBX_MOP_BIND:
        case SBX_MOP_BIND_NEW:
        case SBX_MOP_DEV:
                r = make_mount_point(op->target, op->is_dir);
                if (r < 0)
                        return sbx_child_fail(err, r, "create mount point", op->target);
                if (mount(op->source, op->target, NULL, MS_BIND | MS_REC, NULL) < 0)
                        return sbx_child_fail(err, errno, "bind mount", op->source);
                if (op->type == SBX_MOP_DEV)
                        return 0;
                if (!op->rw) {
                        r = make_readonly(op->target, op->noexec, true);
                        if (r < 0)
                                return sbx_child_fail(err, r, "make read-only", op->target);
                }
                return 0;
        case SBX_MOP_TMPFS:
                r = sbx_mkdir_p(op->target, 0755);
                if (r < 0)
                        return sbx_child_fail(err, r, "create mount point", op->target);
                if (mount("tmpfs", op->target, "tmpfs", MS_NOSUID | MS_NODEV | (op->noexec ? MS_NOEXEC : 0),
                            op->data) < 0)
                        return sbx_child_fail(err, errno, "mount tmpfs", op->target);
                return 0;
        case SBX_MOP_PROC:
                r = sbx_mkdir_p(op->target, 0755);
                if (r < 0)
                        return sbx_child_fail(err, r, "create mount point", op->target);
                if (mount("proc", op->target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                        return sbx_child_fail(err, errno, "mount proc", op->target);
                return 0;
        case SBX_MOP_DEVPTS:
                r = sbx_mkdir_p(op->target, 0755);
                if (r < 0)
                        return sbx_child_fail(err, r, "create mount point", op->target);
                if (mount("devpts", op->target, "devpts", MS_NOSUID | MS_NOEXEC,
                            "newinstance,ptmxmode=0666,mode=620") < 0)
                        return sbx_child_fail(err, errno, "mount devpts", op->target);
                return 0;
        case SBX_MOP_SYMLINK:
                if ((r = make_parents(op->target)) < 0)
                        return sbx_child_fail(err, r, "create symlink", op->target);
                if (symlink(op->data, op->target) < 0) {
                        if (errno != EEXIST)
                                return sbx_child_fail(err, errno, "create symlink", op->target);
                        /* an empty directory in its place (made as a parent before) gives way;
                         * anything else there stays */
                        if (rmdir(op->target) == 0 && symlink(op->data, op->target) < 0)
                                return sbx_child_fail(err, errno, "create symlink", op->target);
                }
                return 0;
        case SBX_MOP_FILE:
                r = write_file(op->target, op->data, op->data_len, op->mode ? op->mode : 0644);
                if (r < 0)
                        return sbx_child_fail(err, r, "write file", op->target);
                return 0;
        case SBX_MOP_MKDIR:
                r = sbx_mkdir_p(op->target, op->mode ? op->mode : 0755);
                if (r < 0)
                        return sbx_child_fail(err, r, "create directory", op->target);
                return 0;
        case SBX_MOP_MOVE_FD:
                r = make_mount_point(op->target, op->is_dir);
                if (r < 0)
                        return sbx_child_fail(err, r, "create mount point", op->target);
                if (move_mount(op->fd, "", AT_FDCWD, op->target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return sbx_child_fail(err, errno, "attach idmapped mount", op->target);
                return 0;
        case SBX_MOP_OVERLAY_RO: {
                char opts[4096 + 64];
                r = sbx_mkdir_p(op->data, 0755);
                if (r >= 0)
                        r = make_mount_point(op->target, true);
                if (r < 0)
                        return sbx_child_fail(err, r, "create mount point", op->target);
                /* lowerdir=SOURCE:EMPTY, with ':' ',' and '\' in SOURCE escaped */
                size_t o = 0;
                const char *pfx = "lowerdir=";
                for (const char *c = pfx; *c && o < sizeof opts - 1; c++)
                        opts[o++] = *c;
                for (const char *c = op->source; *c && o < sizeof opts - 3; c++) {
                        if (*c == ':' || *c == ',' || *c == '\\')
                                opts[o++] = '\\';
                        opts[o++] = *c;
                }
                if (o < sizeof opts - 1)
                        opts[o++] = ':';
                for (const char *c = op->data; *c && o < sizeof opts - 1; c++)
                        opts[o++] = *c;
                opts[o] = 0;
                if (mount("overlay", op->target, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0)
                        return sbx_child_fail(
                                err, errno, "mount the read-only workspace as an overlay", op->source);
                return 0;
        }
        case SBX_MOP_REMOUNT_RO:
                /* Used for /dev: its device binds must keep working, so no nodev here. */
                r = make_readonly(op->target, false, false);
                if (r < 0)
                        return sbx_child_fail(err, r, "make read-only", op->target);
                return 0;
        case _SBX_MOP_MAX:
        default:
                return sbx_child_fail(err, EINVAL, "unknown mount operation", op->target);
        }
}

int sbx_mount_plan_execute(const sbx_mount_plan *p, sbx_child_error *err) {
        /* Nothing we mount may propagate back to the host. */
        if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
                return sbx_child_fail(err, errno, "make mounts private", "/");
        if (mount("tmpfs", p->staging, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=8m,nr_inodes=4096") <
                0)
                return sbx_child_fail(err, errno, "mount root tmpfs", p->staging);
        if (chdir(p->staging) < 0)
                return sbx_child_fail(err, errno, "chdir", p->staging);
        if (mkdir(".oldroot", 0700) < 0)
                return sbx_child_fail(err, errno, "mkdir", SBX_OLDROOT);
        if (syscall(SYS_pivot_root, ".", ".oldroot") < 0)
                return sbx_child_fail(err, errno, "pivot_root", p->staging);
        if (chdir("/") < 0)
                return sbx_child_fail(err, errno, "chdir", "/");

        made_parent[0] = 0;
        for (size_t i = 0; i < p->n_ops; i++) {
                int r = run_op(&p->ops[i], err);
                if (r < 0)
                        return r;
                /* a mount on or above the remembered parent hides it */
                if (p->ops[i].type != SBX_MOP_SYMLINK && p->ops[i].type != SBX_MOP_FILE &&
                        p->ops[i].type != SBX_MOP_MKDIR)
                        forget_parent_under(p->ops[i].target);
        }

        if (umount2(SBX_OLDROOT, MNT_DETACH) < 0)
                return sbx_child_fail(err, errno, "detach old root", SBX_OLDROOT);
        if (rmdir(SBX_OLDROOT) < 0)
                return sbx_child_fail(err, errno, "rmdir", SBX_OLDROOT);
        /* The root tmpfs itself: read-only like everything but scratch and an rw workspace (or
         * Landlock's alone, when its denial records are the evidence: see root_writable). */
        if (!p->root_writable &&
                mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
                return sbx_child_fail(err, errno, "make root read-only", "/");
        return 0;
}
