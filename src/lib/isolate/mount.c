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

sbx_mount_plan *sbx_mount_plan_free(sbx_mount_plan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_ops; i++) {
                free(p->ops[i].source);
                free(p->ops[i].target);
                free(p->ops[i].data);
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
        sbx_mount_op op = { .type = type, .rw = rw, .is_dir = is_dir, .mode = mode, .data_len = data_len };
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

/* Create the parent directories of path and an empty file or directory at path to mount on. */
static int make_mount_point(const char *path, bool dir) {
        char buf[4096];
        size_t n = strlen(path);
        if (n >= sizeof buf)
                return -ENAMETOOLONG;
        memcpy(buf, path, n + 1);
        char *slash = strrchr(buf, '/');
        if (slash && slash != buf) {
                *slash = 0;
                int r = sbx_mkdir_p(buf, 0755);
                if (r < 0)
                        return r;
        }
        struct stat st;
        if (lstat(path, &st) == 0) /* already there, e.g. under a read-only bind of its parent */
                return 0;
        if (dir) {
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        return -errno;
                return 0;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0444);
        if (fd < 0) {
                /* A ro bind may already hold the file (e.g. /etc/passwd under a bound /etc). */
                if (errno == EROFS || errno == EEXIST)
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
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID };
        if (nodev)
                attr.attr_set |= MOUNT_ATTR_NODEV;
        if (noexec)
                attr.attr_set |= MOUNT_ATTR_NOEXEC;
        if (syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &attr, sizeof attr) == 0)
                return 0;
        if (errno != ENOSYS)
                return -errno;
        struct statvfs sv;
        if (statvfs(path, &sv) < 0)
                return -errno;
        unsigned long fl = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | (nodev || (sv.f_flag & ST_NODEV) ? MS_NODEV : 0);
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
                if (mount("tmpfs", op->target, "tmpfs", MS_NOSUID | MS_NODEV | (op->noexec ? MS_NOEXEC : 0), op->data) < 0)
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
                if (mount("devpts", op->target, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620") < 0)
                        return sbx_child_fail(err, errno, "mount devpts", op->target);
                return 0;
        case SBX_MOP_SYMLINK:
                r = make_mount_point(op->target, true); /* parents */
                (void) rmdir(op->target);
                if (symlink(op->data, op->target) < 0 && errno != EEXIST)
                        return sbx_child_fail(err, errno, "create symlink", op->target);
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
        if (mount("tmpfs", p->staging, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=8m,nr_inodes=4096") < 0)
                return sbx_child_fail(err, errno, "mount root tmpfs", p->staging);
        if (chdir(p->staging) < 0)
                return sbx_child_fail(err, errno, "chdir", p->staging);
        if (mkdir(".oldroot", 0700) < 0)
                return sbx_child_fail(err, errno, "mkdir", SBX_OLDROOT);
        if (syscall(SYS_pivot_root, ".", ".oldroot") < 0)
                return sbx_child_fail(err, errno, "pivot_root", p->staging);
        if (chdir("/") < 0)
                return sbx_child_fail(err, errno, "chdir", "/");

        for (size_t i = 0; i < p->n_ops; i++) {
                int r = run_op(&p->ops[i], err);
                if (r < 0)
                        return r;
        }

        if (umount2(SBX_OLDROOT, MNT_DETACH) < 0)
                return sbx_child_fail(err, errno, "detach old root", SBX_OLDROOT);
        if (rmdir(SBX_OLDROOT) < 0)
                return sbx_child_fail(err, errno, "rmdir", SBX_OLDROOT);
        /* The root tmpfs itself: read-only like everything but scratch and an rw workspace. */
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
                return sbx_child_fail(err, errno, "make root read-only", "/");
        return 0;
}
