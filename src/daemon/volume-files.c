/* volume-files.c — a volume's files read and written without a sandbox (docs/api.md, "Volumes";
 * E2B's volume content API is the same operations).
 *
 * The server reaches them where the volume is mounted on the host, as root. A sandbox that mounts
 * the volume writable can put anything in it — a symlink to /etc, a FIFO, a directory swapped for
 * a link between two calls — so nothing here resolves a path in one go: each component is opened
 * from the last with O_NOFOLLOW (a symlink met on the way is refused, naming it), the leaf is
 * stat'ed and opened without following either, and what is written lands in a temporary file in
 * its directory first and is renamed into place (a full volume leaves the old file, or none,
 * never half of the new one). No mount can appear inside (the sandboxes' mounts are in their own
 * namespaces), and a walk that leaves the volume's file system anyway is refused. */
#include "daemon/mgr-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/io.h"
#include "basic/rm-rf.h"

#define COMPS_MAX 128
#define DEPTH_MAX 16
#define LIST_MAX 10000

typedef struct volf {
        sbx_mgr_reply *rp;
        const char *path; /* as given */
        char buf[4096];
        char *comp[COMPS_MAX];
        size_t n;
        int root;
        dev_t dev;
        uid_t owner;
        gid_t group;
} volf;

/* The path's components (none: the root). false with rp filled when it is not one we take. */
static bool parse(volf *v) {
        const char *p = v->path ? v->path : "";
        if (strlen(p) >= sizeof v->buf) {
                mgr_reply_err(v->rp, 400, "invalid_argument", "path", "path: at most 4095 bytes");
                return false;
        }
        for (const char *s = p; *s; s++)
                if ((unsigned char) *s < 0x20) {
                        mgr_reply_err(v->rp, 400, "invalid_argument", "path",
                                "path: control characters are not allowed");
                        return false;
                }
        snprintf(v->buf, sizeof v->buf, "%s", p);
        v->n = 0;
        for (char *save = NULL, *t = strtok_r(v->buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
                if (streq(t, ".") || streq(t, "..") || strlen(t) > 255 || v->n == COMPS_MAX) {
                        mgr_reply_err(v->rp, 400, "invalid_argument", "path",
                                "path: '.' and '..' components, names over 255 bytes and more than %d "
                                "levels are not allowed",
                                COMPS_MAX);
                        return false;
                }
                v->comp[v->n++] = t;
        }
        return true;
}

static unsigned errno_reply(volf *v, int err, const char *doing) {
        const char *p = v->path && *v->path ? v->path : "/";
        switch (err) {
        case ENOENT:
                return mgr_reply_err(v->rp, 404, "not_found", "path",
                        "%.512s: no such file or directory in "
                        "the volume",
                        p);
        case ELOOP:
                return mgr_reply_err(v->rp, 400, "invalid_argument", "path",
                        "%.512s: goes through a symbolic link, which the volume API does not follow (read "
                        "it "
                        "from a sandbox that mounts the volume)",
                        p);
        case ENOTDIR:
                return mgr_reply_err(
                        v->rp, 409, "conflict", "path", "%.512s: a component is not a directory", p);
        case EISDIR:
                return mgr_reply_err(v->rp, 409, "conflict", "path", "%.512s: is a directory", p);
        case EEXIST:
        case ENOTEMPTY:
                return mgr_reply_err(v->rp, 409, "conflict", "path", "%.512s: exists already", p);
        case EXDEV:
                return mgr_reply_err(v->rp, 400, "invalid_argument", "path", "%.512s: leaves the volume", p);
        case ENOSPC:
        case EDQUOT:
                return mgr_reply_err(v->rp, 507, "insufficient_storage", NULL,
                        "%.512s: the volume is full (nothing was left half-written; delete files, or make a "
                        "larger volume)",
                        p);
        case EFBIG:
                return mgr_reply_err(v->rp, 413, "payload_too_large", NULL, "%.512s: too large", p);
        default:
                return mgr_reply_err(
                        v->rp, 503, "unavailable", NULL, "%.512s: cannot %s: %s", p, doing, strerror(err));
        }
}

/* Open the directory of components [0, upto) (O_PATH), never following a symlink; with make,
 * missing ones are made (the volume's owner's). fd, or -errno. */
static int walk(volf *v, size_t upto, bool make) {
        int fd = fcntl(v->root, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        for (size_t i = 0; i < upto; i++) {
                int next = openat(fd, v->comp[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0 && errno == ENOENT && make) {
                        int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (dfd >= 0 && mkdirat(dfd, v->comp[i], 0755) == 0)
                                if (fchownat(dfd, v->comp[i], v->owner, v->group, AT_SYMLINK_NOFOLLOW) < 0) {
                                        /* root's then: still reachable, and the write goes on */
                                }
                        if (dfd >= 0)
                                close(dfd);
                        next = openat(fd, v->comp[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                }
                int err = errno;
                struct stat st;
                if (next < 0 && err == ENOTDIR && fstatat(fd, v->comp[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                        S_ISLNK(st.st_mode))
                        err = ELOOP;
                if (next >= 0 && (fstat(next, &st) < 0 || st.st_dev != v->dev))
                        err = EXDEV;
                close(fd);
                if (next < 0 || err == EXDEV) {
                        if (next >= 0)
                                close(next);
                        return -err;
                }
                fd = next;
        }
        return fd;
}

/* A readable directory fd from an O_PATH one (closed). */
static int dir_of(int pathfd) {
        int fd = openat(pathfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int err = errno;
        close(pathfd);
        return fd < 0 ? -err : fd;
}

/* A name as JSON: itself when it is UTF-8, else with each byte that is not as %XX (a sandbox
 * may make any name). */
static json_t *name_json(const char *s) {
        json_t *j = json_string(s);
        if (j)
                return j;
        size_t n = strlen(s);
        char *out = malloc(3 * n + 1), *o = out;
        if (!out)
                return json_string("?");
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                o += *p < 0x80 && *p != '%' ? (*o = (char) *p, 1) : sprintf(o, "%%%02X", *p);
        *o = 0;
        j = json_string(out);
        free(out);
        return j ? j : json_string("?");
}

static json_t *entry(int dirfd, const char *name, const char *rel, const struct stat *st) {
        const char *type = S_ISREG(st->st_mode)   ? "file"
                           : S_ISDIR(st->st_mode) ? "directory"
                           : S_ISLNK(st->st_mode) ? "symlink"
                                                  : "unknown";
        json_t *e = json_pack("{s:o, s:o, s:s, s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "name", name_json(name),
                "path", name_json(rel), "type", type, "size", (json_int_t) st->st_size, "mode",
                (json_int_t) (st->st_mode & 07777), "uid", (json_int_t) st->st_uid, "gid",
                (json_int_t) st->st_gid, "atime",
                mgr_time_json((int64_t) st->st_atim.tv_sec * 1000 + st->st_atim.tv_nsec / 1000000), "mtime",
                mgr_time_json((int64_t) st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000), "ctime",
                mgr_time_json((int64_t) st->st_ctim.tv_sec * 1000 + st->st_ctim.tv_nsec / 1000000));
        if (S_ISLNK(st->st_mode)) {
                char t[4096];
                ssize_t k = readlinkat(dirfd, name, t, sizeof t - 1);
                if (k >= 0) {
                        t[k] = 0;
                        json_object_set_new(e, "target", name_json(t));
                }
        }
        return e;
}

/* The path of the entry as the API names it: "/a/b". */
static void rel_path(const volf *v, char *out, size_t size) {
        size_t k = 0;
        out[0] = 0;
        for (size_t i = 0; i < v->n && k < size; i++)
                k += (size_t) snprintf(out + k, size - k, "/%s", v->comp[i]);
        if (!out[0])
                snprintf(out, size, "/");
}

static unsigned stat_reply(volf *v, unsigned code) {
        int dir = walk(v, v->n ? v->n - 1 : 0, false);
        if (dir < 0)
                return errno_reply(v, -dir, "stat it");
        struct stat st;
        char rel[4200];
        rel_path(v, rel, sizeof rel);
        const char *leaf = v->n ? v->comp[v->n - 1] : ".";
        if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                int err = errno;
                close(dir);
                return errno_reply(v, err, "stat it");
        }
        v->rp->code = code;
        v->rp->json = entry(dir, v->n ? leaf : "", rel, &st);
        close(dir);
        return code;
}

static int list_dir(volf *v, int dfd, const char *rel, int depth, json_t *out) {
        DIR *d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return -errno;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        int r = 0;
        for (struct dirent *de; (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (n == cap) {
                        char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *nn);
                        if (!nn) {
                                r = -ENOMEM;
                                break;
                        }
                        names = nn;
                }
                if (!(names[n] = strdup(de->d_name))) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        if (n > 1)
                qsort(names, n, sizeof *names, mgr_cmp_strp);
        for (size_t i = 0; i < n && r == 0; i++) {
                struct stat st;
                if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone meanwhile */
                if (json_array_size(out) >= LIST_MAX) {
                        r = -EFBIG;
                        break;
                }
                char sub[4400];
                snprintf(sub, sizeof sub, "%s/%s", streq(rel, "/") ? "" : rel, names[i]);
                json_array_append_new(out, entry(dirfd(d), names[i], sub, &st));
                if (S_ISDIR(st.st_mode) && depth > 1 && st.st_dev == v->dev) {
                        int c = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (c >= 0)
                                r = list_dir(v, c, sub, depth - 1, out);
                }
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        closedir(d);
        return r;
}

static unsigned op_list(volf *v, int depth) {
        int dir = walk(v, v->n, false);
        if (dir < 0)
                return errno_reply(v, -dir, "list it");
        if ((dir = dir_of(dir)) < 0)
                return errno_reply(v, -dir, "list it");
        char rel[4200];
        rel_path(v, rel, sizeof rel);
        json_t *items = json_array();
        int r = list_dir(v, dir, rel, depth, items);
        if (r == -EFBIG) {
                json_decref(items);
                return mgr_reply_err(v->rp, 413, "payload_too_large", "depth",
                        "%.512s: more than %d entries; list a smaller depth or a subdirectory", rel,
                        LIST_MAX);
        }
        if (r < 0) {
                json_decref(items);
                return errno_reply(v, -r, "list it");
        }
        v->rp->code = 200;
        v->rp->json = json_pack("{s:o}", "items", items);
        return 200;
}

static unsigned op_read(volf *v) {
        int dir = walk(v, v->n - 1, false);
        if (dir < 0)
                return errno_reply(v, -dir, "read it");
        int fd = openat(dir, v->comp[v->n - 1], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        int err = errno;
        close(dir);
        if (fd < 0)
                return errno_reply(v, err, "read it");
        struct stat st = {0};
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return S_ISDIR(st.st_mode) ? errno_reply(v, EISDIR, "read it")
                                           : mgr_reply_err(v->rp, 400, "invalid_argument", "path",
                                                     "%.512s: not a regular file", v->path);
        }
        char *data = NULL;
        size_t got = 0;
        int rr = sbx_read_fd_all(fd, FILE_MAX, &data, &got);
        close(fd);
        if (rr == -EFBIG)
                return mgr_reply_err(v->rp, 413, "payload_too_large", NULL,
                        "%.512s: %lld bytes; files are read through the API up to %llu", v->path,
                        (long long) st.st_size, (unsigned long long) FILE_MAX);
        if (rr < 0)
                return errno_reply(v, -rr, "read it");
        v->rp->code = 200;
        v->rp->raw = data;
        v->rp->raw_len = got;
        v->rp->ctype = "application/octet-stream";
        return 200;
}

static bool meta_ok(volf *v, const sbx_volf_req *r) {
        if (r->uid < -1 || r->uid > 0xfffffffeLL || r->gid < -1 || r->gid > 0xfffffffeLL) {
                mgr_reply_err(v->rp, 400, "invalid_argument",
                        r->uid < -1 || r->uid > 0xfffffffeLL ? "uid" : "gid",
                        "uid and gid: 0 to 4294967294");
                return false;
        }
        if (r->mode < -1 || r->mode > 01777) {
                mgr_reply_err(v->rp, 400, "invalid_argument", "mode",
                        "mode: permission bits, 0 to 01777 (setuid and setgid are not set through the API)");
                return false;
        }
        return true;
}

static unsigned op_write(volf *v, const sbx_volf_req *r) {
        if (r->len > FILE_MAX)
                return mgr_reply_err(v->rp, 413, "payload_too_large", NULL, "files are at most %llu bytes",
                        (unsigned long long) FILE_MAX);
        int dir = walk(v, v->n - 1, true);
        if (dir < 0 || (dir = dir_of(dir)) < 0)
                return errno_reply(v, -dir, "write it");
        const char *leaf = v->comp[v->n - 1];
        struct stat st;
        if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
                close(dir);
                return errno_reply(v, EISDIR, "write it");
        }
        char tmp[64];
        int fd = -1;
        for (int tries = 0; fd < 0 && tries < 16; tries++) {
                mgr_random_id(".sbx-upload-", tmp, sizeof tmp);
                fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0 && errno != EEXIST)
                        break;
        }
        int err = fd < 0 ? errno : 0;
        if (!err) {
                int w = sbx_write_all(fd, r->data, r->len);
                err = w < 0 ? -w : 0;
        }
        if (!err && fchown(fd, r->uid >= 0 ? (uid_t) r->uid : v->owner,
                            r->gid >= 0 ? (gid_t) r->gid : v->group) < 0)
                err = errno;
        if (!err && fchmod(fd, r->mode >= 0 ? (mode_t) r->mode : 0644) < 0)
                err = errno;
        if (!err && fsync(fd) < 0)
                err = errno;
        if (fd >= 0)
                close(fd);
        if (!err && renameat(dir, tmp, dir, leaf) < 0)
                err = errno;
        if (err && fd >= 0)
                (void) unlinkat(dir, tmp, 0);
        close(dir);
        return err ? errno_reply(v, err, "write it") : stat_reply(v, 200);
}

static unsigned op_mkdir(volf *v, const sbx_volf_req *r) {
        if (!v->n)
                return errno_reply(v, EEXIST, "make it");
        int dir = walk(v, v->n - 1, r->parents);
        if (dir < 0 || (dir = dir_of(dir)) < 0)
                return errno_reply(v, -dir, "make it");
        const char *leaf = v->comp[v->n - 1];
        int err = mkdirat(dir, leaf, 0700) < 0 ? errno : 0;
        /* owner and mode through an fd of what was made: the name may be a symlink by now (a
         * sandbox can swap it), and nothing here follows one */
        int fd = err ? -1 : openat(dir, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (!err && (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != v->dev))
                err = fd < 0 ? (errno == ENOTDIR ? ELOOP : errno) : EXDEV;
        if (!err && fchown(fd, r->uid >= 0 ? (uid_t) r->uid : v->owner,
                            r->gid >= 0 ? (gid_t) r->gid : v->group) < 0)
                err = errno;
        if (!err && fchmod(fd, r->mode >= 0 ? (mode_t) r->mode : 0755) < 0)
                err = errno;
        if (fd >= 0)
                close(fd);
        bool is_dir =
                err == EEXIST && fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        close(dir);
        if (err == EEXIST && r->parents && is_dir)
                return stat_reply(v, 200); /* made already: -p's answer */
        return err ? errno_reply(v, err, "make it") : stat_reply(v, 201);
}

static unsigned op_chmeta(volf *v, const sbx_volf_req *r) {
        int dir = walk(v, v->n ? v->n - 1 : 0, false);
        if (dir < 0)
                return errno_reply(v, -dir, "change it");
        int fd = openat(dir, v->n ? v->comp[v->n - 1] : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC);
        int err = fd < 0 ? errno : 0;
        close(dir);
        struct stat st;
        if (!err && fstat(fd, &st) < 0)
                err = errno;
        if (!err && S_ISLNK(st.st_mode))
                err = ELOOP;
        if (!err && (r->uid >= 0 || r->gid >= 0) &&
                fchownat(fd, "", r->uid >= 0 ? (uid_t) r->uid : (uid_t) -1,
                        r->gid >= 0 ? (gid_t) r->gid : (gid_t) -1, AT_EMPTY_PATH) < 0)
                err = errno;
        if (!err && r->mode >= 0) {
                char proc[64]; /* chmod of an O_PATH fd: through its /proc link (the inode itself) */
                snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
                if (fchmodat(AT_FDCWD, proc, (mode_t) r->mode, 0) < 0)
                        err = errno;
        }
        if (fd >= 0)
                close(fd);
        return err ? errno_reply(v, err, "change it") : stat_reply(v, 200);
}

static unsigned op_remove(volf *v) {
        if (!v->n)
                return mgr_reply_err(v->rp, 400, "invalid_argument", "path",
                        "path: the volume's root is not removed (delete the volume)");
        int dir = walk(v, v->n - 1, false);
        if (dir < 0 || (dir = dir_of(dir)) < 0)
                return errno_reply(v, -dir, "remove it");
        const char *leaf = v->comp[v->n - 1];
        struct stat st;
        int err = fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
        if (!err) {
                int r = S_ISDIR(st.st_mode) ? sbx_rm_rf_at(dir, leaf)
                                            : (unlinkat(dir, leaf, 0) < 0 ? -errno : 0);
                err = r < 0 ? -r : 0;
        }
        close(dir);
        if (err)
                return errno_reply(v, err, "remove it");
        v->rp->code = 200;
        v->rp->json = json_pack("{s:s}", "path", v->path && *v->path ? v->path : "/");
        return 200;
}

unsigned sbx_ops_volume_files(
        sbx_mgr *m, const sbx_caller *who, const char *name, const sbx_volf_req *r, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        volf v = {.rp = rp, .path = r->path, .root = -1};
        if (!parse(&v) || !meta_ok(&v, r))
                return rp->code;
        bool needs_leaf = r->op == SBX_VOLF_READ || r->op == SBX_VOLF_WRITE;
        if (needs_leaf && !v.n)
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "path", "path: a file in the volume is required");
        if (r->op == SBX_VOLF_LIST && (r->depth < 1 || r->depth > DEPTH_MAX))
                return mgr_reply_err(rp, 400, "invalid_argument", "depth", "depth: 1 to %d", DEPTH_MAX);
        char host[PATH_MAX];
        int err = 0;
        if (!mgr_volume_host(m, who->tenant, name, host, sizeof host, &err))
                return err == -ENOENT
                               ? mgr_reply_err(rp, 404, "not_found", NULL, "no volume '%.64s'", name)
                               : mgr_reply_err(rp, 503, "unavailable", NULL,
                                         "volume '%.64s' cannot be mounted: %s", name, strerror(-err));
        struct stat st;
        if ((v.root = open(host, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
                fstat(v.root, &st) < 0) {
                err = errno;
                if (v.root >= 0)
                        close(v.root);
                return mgr_reply_err(
                        rp, 503, "unavailable", NULL, "volume '%.64s': %s", name, strerror(err));
        }
        v.dev = st.st_dev;
        v.owner = st.st_uid;
        v.group = st.st_gid;
        unsigned code;
        const char *action = NULL;
        switch (r->op) {
        case SBX_VOLF_READ:
                code = op_read(&v);
                break;
        case SBX_VOLF_WRITE:
                code = op_write(&v, r);
                action = "volume.files.put";
                break;
        case SBX_VOLF_STAT:
                code = stat_reply(&v, 200);
                break;
        case SBX_VOLF_LIST:
                code = op_list(&v, r->depth);
                break;
        case SBX_VOLF_MKDIR:
                code = op_mkdir(&v, r);
                action = "volume.files.mkdir";
                break;
        case SBX_VOLF_CHMETA:
                code = op_chmeta(&v, r);
                action = "volume.files.chmeta";
                break;
        case SBX_VOLF_REMOVE:
                code = op_remove(&v);
                action = "volume.files.remove";
                break;
        default:
                code = mgr_reply_err(rp, 400, "invalid_argument", NULL, "unknown operation");
        }
        close(v.root);
        if (action) {
                char target[4200];
                snprintf(target, sizeof target, "%.64s:%.4000s", name, r->path && *r->path ? r->path : "/");
                mgr_audit(m, who, action, target, code < 300 ? "ok" : "failed", NULL);
                if (code < 300) {
                        sbx_mgr_reply g;
                        if (sbx_ops_volume_get(m, who, name, &g) == 200)
                                mgr_volume_event(m, g.json, "volume.changed",
                                        json_pack("{s:s, s:s}", "op", action + 13, "path",
                                                r->path && *r->path ? r->path : "/"));
                        sbx_mgr_reply_done(&g);
                }
        }
        return code;
}

/* A query argument that is a whole number (base 0: "0644" is octal), into *ret (-1 when absent);
 * false with rp filled when it is not one. */
static bool query_num(const sbx_mgr_request *rq, const char *key, long long *ret, sbx_mgr_reply *rp) {
        const char *s = rq->query(rq->ctx, key);
        *ret = -1;
        if (!s)
                return true;
        char *end = NULL;
        errno = 0;
        long long x = strtoll(s, &end, 0);
        if (!*s || *end || errno || x < 0) {
                mgr_reply_err(rp, 400, "invalid_argument", key, "%s: a whole number (not '%.32s')", key, s);
                return false;
        }
        *ret = x;
        return true;
}

static bool query_bool(const sbx_mgr_request *rq, const char *key, bool *ret, sbx_mgr_reply *rp) {
        const char *s = rq->query(rq->ctx, key);
        *ret = s && streq(s, "true");
        if (s && !streq(s, "true") && !streq(s, "false")) {
                mgr_reply_err(rp, 400, "invalid_argument", key, "%s: true or false (not '%.32s')", key, s);
                return false;
        }
        return true;
}

void mgr_volume_files_route(sbx_mgr *m, const char *method, const sbx_mgr_request *rq, const char *name,
        const char *sub, sbx_mgr_reply *rp) {
        sbx_volf_req r = {.path = rq->query(rq->ctx, "path"), .depth = 1, .uid = -1, .gid = -1, .mode = -1};
        bool get = streq(method, "GET"), put = streq(method, "PUT"), del = streq(method, "DELETE"),
             post = streq(method, "POST"), patch = streq(method, "PATCH");
        long long depth = -1;
        if (streq(sub, "/files") && (get || put || del)) {
                r.op = get ? SBX_VOLF_READ : put ? SBX_VOLF_WRITE : SBX_VOLF_REMOVE;
                r.data = rq->body ? rq->body : "";
                r.len = rq->len;
                if (put && (!query_num(rq, "uid", &r.uid, rp) || !query_num(rq, "gid", &r.gid, rp) ||
                                   !query_num(rq, "mode", &r.mode, rp)))
                        return;
        } else if (streq(sub, "/dir") && get) {
                r.op = SBX_VOLF_LIST;
                if (!query_num(rq, "depth", &depth, rp))
                        return;
                r.depth = depth < 0 ? 1 : depth > 1000 ? 1000 : (int) depth;
        } else if (streq(sub, "/dir") && post) {
                r.op = SBX_VOLF_MKDIR;
                if (!query_bool(rq, "parents", &r.parents, rp) || !query_num(rq, "uid", &r.uid, rp) ||
                        !query_num(rq, "gid", &r.gid, rp) || !query_num(rq, "mode", &r.mode, rp))
                        return;
        } else if (streq(sub, "/stat") && get)
                r.op = SBX_VOLF_STAT;
        else if (streq(sub, "/stat") && patch) {
                json_t *body = mgr_parse_body(rq, rp, false);
                static const char *const keys[] = {"uid", "gid", "mode", NULL};
                if (!body || !mgr_only_keys(body, keys, "", rp)) {
                        json_decref(body);
                        return;
                }
                long long *dst[] = {&r.uid, &r.gid, &r.mode};
                for (size_t i = 0; i < 3; i++) {
                        json_t *x = json_object_get(body, keys[i]);
                        if (x && !json_is_integer(x)) {
                                mgr_reply_err(
                                        rp, 400, "invalid_argument", keys[i], "%s: a whole number", keys[i]);
                                json_decref(body);
                                return;
                        }
                        *dst[i] = x ? json_integer_value(x) : -1;
                        if (x && *dst[i] < 0)
                                *dst[i] = -2; /* refused by the range check */
                }
                json_decref(body);
                r.op = SBX_VOLF_CHMETA;
        } else {
                mgr_reply_err(rp,
                        streq(sub, "/files") || streq(sub, "/dir") || streq(sub, "/stat") ? 405 : 404,
                        streq(sub, "/files") || streq(sub, "/dir") || streq(sub, "/stat")
                                ? "method_not_allowed"
                                : "not_found",
                        NULL, "%s",
                        streq(sub, "/files")  ? "use GET, PUT, DELETE"
                        : streq(sub, "/dir")  ? "use GET, POST"
                        : streq(sub, "/stat") ? "use GET, PATCH"
                                              : "no such endpoint");
                return;
        }
        (void) sbx_ops_volume_files(m, rq->who, name, &r, rp);
}
