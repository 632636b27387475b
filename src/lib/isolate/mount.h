/* mount.h — the sandbox's root view: a plan of mount operations built in the parent (malloc
 * allowed) and carried out in the child after clone (syscalls only). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "basic/error.h"
#include "isolate/childerr.h"

typedef enum sbx_mop_type {
        SBX_MOP_BIND, /* bind source (host path) onto target; ro unless rw */
        SBX_MOP_BIND_NEW, /* bind a path of the new root (source) onto target */
        SBX_MOP_TMPFS, /* tmpfs on target, data = options */
        SBX_MOP_PROC, /* fresh proc on target */
        SBX_MOP_DEVPTS, /* new devpts instance on target */
        SBX_MOP_DEV, /* bind a host device node (source) onto a created file at target */
        SBX_MOP_SYMLINK, /* symlink target -> data */
        SBX_MOP_FILE, /* create target with contents data (mode) */
        SBX_MOP_MKDIR, /* mkdir -p target (mode) */
        SBX_MOP_REMOUNT_RO, /* make target (a mount point) read-only */
        SBX_MOP_MOVE_FD, /* attach a detached mount (fd, from open_tree) at target */
        SBX_MOP_OVERLAY_RO, /* read-only overlay of source (lower) at target; data = an empty
                             * directory of the new root made as the second lower layer. Unlike
                             * a bind, it does not let unix sockets in source be connected to */
        _SBX_MOP_MAX,
} sbx_mop_type;

typedef struct sbx_mount_op {
        sbx_mop_type type;
        char *source; /* for BIND: "/.oldroot" + realpath of the host path */
        char *target; /* absolute path inside the new root */
        char *data;
        size_t data_len;
        bool rw;
        bool is_dir; /* bind of a directory (else a file mount point is created) */
        bool noexec;
        mode_t mode;
        int fd; /* MOVE_FD: the detached tree, owned by the plan */
} sbx_mount_op;

typedef struct sbx_mount_plan {
        sbx_mount_op *ops;
        size_t n_ops, n_alloc;
        char *staging; /* where the new root tmpfs is mounted before pivot_root */
        /* leave the root tmpfs (the sandbox's own, 8 MiB, thrown away with it) writable at the
         * mount: Landlock alone refuses writes there, so the kernel records each refusal; a
         * read-only mount would refuse first, unrecorded. Only when the records are read. */
        bool root_writable;
} sbx_mount_plan;

#define SBX_OLDROOT "/.oldroot"

sbx_mount_plan *sbx_mount_plan_free(sbx_mount_plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_mount_plan *, sbx_mount_plan_free);
int sbx_mount_plan_new(sbx_mount_plan **ret);

/* Add operations (parent side). Strings are copied. */
int sbx_mount_plan_add(sbx_mount_plan *p, sbx_mop_type type, const char *source, const char *target,
        const char *data, size_t data_len, bool rw, bool is_dir, mode_t mode);

/* Parent side: a detached, idmapped copy of the tree at host_path (open_tree + mount_setattr):
 * files owned on disk by `disk_uid`/`disk_gid` appear as (and are created by) `kuid`/`kgid`.
 * Needs CAP_SYS_ADMIN. Returns the tree fd, or -errno with the story in *e. */
int sbx_mount_idmapped_tree(const char *host_path, uid_t disk_uid, gid_t disk_gid, uid_t kuid, gid_t kgid,
        bool readonly, sbx_error *e);
/* Parent side: a detached read-only copy of the tree at host_path (open_tree + mount_setattr),
 * resolved with the caller's credentials: the sandbox's uid need not reach host_path. */
int sbx_mount_ro_tree(const char *host_path, sbx_error *e);
/* The same, writable (nosuid, nodev): a volume's filesystem, cloned with our credentials. */
int sbx_mount_rw_tree(const char *host_path, sbx_error *e);
/* Add a MOVE_FD op; takes ownership of fd. */
int sbx_mount_plan_add_fd(sbx_mount_plan *p, int fd, const char *target, bool is_dir);

/* Child side: make mounts private, build the new root per plan, pivot into it, drop the old
 * root, and make "/" read-only. Syscalls only. On failure fills *err and returns -errno. */
int sbx_mount_plan_execute(const sbx_mount_plan *p, sbx_child_error *err);

/* Child side: mkdir -p without allocation. */
int sbx_mkdir_p(const char *path, mode_t mode);
