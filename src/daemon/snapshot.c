/* snapshot.c — snapshots of a sandbox's writable state, and sandboxes made from one (DESIGN.md,
 * "Persistence").
 *
 * What is captured: the sandbox's scratch and its home (when the home is a filesystem of its own),
 * read from the host through /proc/INIT/root while the sandbox is frozen (paused for the read and
 * resumed after, unless it was paused already; a sandbox that cannot freeze is read running and
 * the snapshot says `consistent: false`). Every component is opened without following a symlink:
 * a symlink is kept as a symlink (its target text), never read through, so nothing outside the
 * sandbox's files can be pulled in; regular files, directories and symlinks are kept (modes, not
 * owners: every file is the sandbox user's), others (fifos, sockets, devices) are counted as
 * skipped, and nothing on another filesystem below a root is crossed into.
 *
 * The store (serve --snapshot-dir, default STATE/snapshots):
 *   objects/XX/SHA256   a regular file's bytes, zstd-compressed (libarchive's raw format), named
 *                       by the SHA-256 of the bytes: shared by every snapshot that holds the
 *                       same file (deduplication by file hash);
 *   SNP_ID.json         the manifest {id, name, tenant, sandbox_id, profile, created_at, size,
 *                       stored, sha256, files, skipped, consistent, memory: null, roots: [{path,
 *                       entries: [{p, t: d|f|l, m, s, h, l}]}]}, written as SNP_ID.json.tmp and
 *                       renamed once complete: only a complete snapshot is listed. `memory` is
 *                       where a checkpoint of the processes (CRIU) would go; it is null.
 * A snapshot killed mid-way leaves a .tmp and objects no manifest names: removed at the next start
 * and after each delete (one snapshot is made at a time, so none is half-made meanwhile).
 *
 * A sandbox made from a snapshot (create {snapshot}) is provisioned as any other, from the
 * snapshot's profile unless the create names one — resolved with the policy of now, whose
 * ceilings apply (the record's `snapshot` says so when the profile changed since) — and its
 * files are written into its scratch and home before the create answers, through its
 * /proc/INIT/root the same way (no component followed), owned by its user. */
#include "daemon/mgr-internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/io.h"
#include "basic/rm-rf.h"
#include "basic/sha256.h"

#define MAX_ENTRIES 200000
#define MAX_DEPTH 64

static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER; /* one snapshot (or delete) at a time */

bool mgr_valid_snapshot_id(const char *s) {
        if (!s || strlen(s) != 20 || strncmp(s, "snp_", 4) != 0)
                return false;
        for (const char *p = s + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

static void snap_path(sbx_mgr *m, const char *name, char *buf, size_t n) {
        snprintf(buf, n, "%s%s%s", m->snapshot_dir, name ? "/" : "", name ? name : "");
}

/* ---- objects ----------------------------------------------------------------------------------- */

static int objects_dir(sbx_mgr *m) {
        char p[PATH_MAX];
        snap_path(m, "objects", p, sizeof p);
        (void) mkdir(m->snapshot_dir, 0700);
        (void) mkdir(p, 0700);
        return open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* src's bytes into the store: hashed and compressed into a temporary object, then named by the
 * hash (or dropped: the store has it). 0, or -errno (-ENOSPC: the disk is full). */
/* The SHA-256 of what src holds (read from its start), as hex. 0 or -errno. */
static int hash_fd(int src, char hex[static 65], uint64_t *ret_size) {
        sha256_ctx h;
        sha256_init(&h);
        uint64_t size = 0;
        char buf[65536];
        for (ssize_t k; (k = pread(src, buf, sizeof buf, (off_t) size)) != 0;) {
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                sha256_update(&h, buf, (size_t) k);
                size += (uint64_t) k;
        }
        uint8_t d[SHA256_DIGEST_SIZE];
        sha256_final(&h, d);
        for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
                snprintf(hex + 2 * i, 3, "%02x", d[i]);
        *ret_size = size;
        return 0;
}

static int object_put(int objfd, int src, char hex[static 65], uint64_t *ret_size, uint64_t *ret_stored) {
        /* the hash first: a file the store has already (an unchanged one, a second snapshot's
         * most) costs one read and no compression */
        char known[80];
        uint64_t hsize = 0;
        int hr = hash_fd(src, hex, &hsize);
        if (hr < 0)
                return hr;
        snprintf(known, sizeof known, "%.2s/%s", hex, hex);
        if (faccessat(objfd, known, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
                *ret_size = hsize;
                *ret_stored = 0;
                return 0;
        }
        char tmp[64];
        snprintf(tmp, sizeof tmp, "tmp-%d-%lx", (int) getpid(), (unsigned long) random());
        int out = openat(objfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        struct archive *a = archive_write_new();
        struct archive_entry *e = archive_entry_new();
        int r = 0;
        if (!a || !e || archive_write_add_filter_zstd(a) != ARCHIVE_OK ||
                archive_write_set_format_raw(a) != ARCHIVE_OK || archive_write_open_fd(a, out) != ARCHIVE_OK)
                r = -EIO;
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_pathname(e, "f");
        if (r == 0 && archive_write_header(a, e) != ARCHIVE_OK)
                r = -EIO;
        sha256_ctx h;
        sha256_init(&h);
        uint64_t size = 0;
        char buf[65536];
        for (ssize_t k; r == 0 && (k = read(src, buf, sizeof buf)) != 0;) {
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                sha256_update(&h, buf, (size_t) k);
                size += (uint64_t) k;
                if (archive_write_data(a, buf, (size_t) k) != k)
                        r = archive_errno(a) ? -archive_errno(a) : -EIO;
        }
        if (a && archive_write_close(a) != ARCHIVE_OK && r == 0)
                r = archive_errno(a) ? -archive_errno(a) : -EIO;
        archive_write_free(a);
        archive_entry_free(e);
        struct stat st;
        if (r == 0 && (fsync(out) < 0 || fstat(out, &st) < 0))
                r = -errno;
        close(out);
        if (r < 0) {
                (void) unlinkat(objfd, tmp, 0);
                return r;
        }
        uint8_t d[SHA256_DIGEST_SIZE];
        sha256_final(&h, d);
        for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
                snprintf(hex + 2 * i, 3, "%02x", d[i]);
        char sub[3] = {hex[0], hex[1], 0}, name[80];
        (void) mkdirat(objfd, sub, 0700);
        snprintf(name, sizeof name, "%s/%s", sub, hex);
        *ret_size = size;
        if (faccessat(objfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) { /* the store has it */
                (void) unlinkat(objfd, tmp, 0);
                *ret_stored = 0;
                return 0;
        }
        if (renameat(objfd, tmp, objfd, name) < 0) {
                r = -errno;
                (void) unlinkat(objfd, tmp, 0);
                return r;
        }
        *ret_stored = (uint64_t) st.st_size;
        return 0;
}

static int object_open(int objfd, const char *hex) {
        char name[80];
        snprintf(name, sizeof name, "%.2s/%s", hex, hex);
        int fd = openat(objfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

/* An object's bytes (fd, from object_open: taken) into out. 0 or -errno. */
static int object_get(int fd, int out) {
        if (fd < 0)
                return fd;
        struct archive *a = archive_read_new();
        struct archive_entry *e;
        int r = 0;
        if (!a || archive_read_support_filter_zstd(a) != ARCHIVE_OK ||
                archive_read_support_format_raw(a) != ARCHIVE_OK ||
                archive_read_open_fd(a, fd, 65536) != ARCHIVE_OK ||
                archive_read_next_header(a, &e) != ARCHIVE_OK)
                r = -EIO;
        char buf[65536];
        for (la_ssize_t k; r == 0 && (k = archive_read_data(a, buf, sizeof buf)) != 0;) {
                if (k < 0)
                        r = -EIO;
                else if (sbx_write_all(out, buf, (size_t) k) < 0)
                        r = -errno;
        }
        archive_read_free(a);
        close(fd);
        return r;
}

/* ---- capture ------------------------------------------------------------------------------------ */

typedef struct cap {
        int objfd;
        dev_t dev;
        json_t *entries;
        uint64_t size, stored;
        unsigned files, skipped, n;
        int err;
        char what[PATH_MAX];
} cap;

static void cap_fail(cap *c, int err, const char *rel) {
        if (!c->err) {
                c->err = err;
                snprintf(c->what, sizeof c->what, "%s", rel);
        }
}

static void walk(cap *c, int dirfd, const char *rel, int depth) {
        int dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
        if (!d) {
                if (dup_fd >= 0)
                        close(dup_fd);
                cap_fail(c, errno, rel);
                return;
        }
        for (struct dirent *de; !c->err && (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                char p[PATH_MAX];
                if (snprintf(p, sizeof p, "%s%s%s", rel, *rel ? "/" : "", de->d_name) >= (int) sizeof p) {
                        c->skipped++;
                        continue;
                }
                struct stat st;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone meanwhile */
                if (++c->n > MAX_ENTRIES) {
                        cap_fail(c, E2BIG, p);
                        break;
                }
                unsigned mode = (unsigned) (st.st_mode & 0777);
                if (S_ISDIR(st.st_mode)) {
                        if (st.st_dev != c->dev || depth >= MAX_DEPTH) { /* another filesystem: not ours */
                                c->skipped++;
                                continue;
                        }
                        json_array_append_new(
                                c->entries, json_pack("{s:s, s:s, s:i}", "p", p, "t", "d", "m", mode));
                        int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                cap_fail(c, errno, p);
                        else {
                                walk(c, sub, p, depth + 1);
                                close(sub);
                        }
                } else if (S_ISREG(st.st_mode)) {
                        int fd = openat(dirfd, de->d_name,
                                O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
                        struct stat st2;
                        if (fd < 0 || fstat(fd, &st2) < 0 || !S_ISREG(st2.st_mode) ||
                                st2.st_ino != st.st_ino) {
                                if (fd >= 0)
                                        close(fd);
                                continue; /* replaced meanwhile (a sandbox that cannot freeze) */
                        }
                        char hex[65];
                        uint64_t size = 0, stored = 0;
                        int r = object_put(c->objfd, fd, hex, &size, &stored);
                        close(fd);
                        if (r < 0) {
                                cap_fail(c, -r, p);
                                break;
                        }
                        c->size += size;
                        c->stored += stored;
                        c->files++;
                        json_array_append_new(
                                c->entries, json_pack("{s:s, s:s, s:i, s:I, s:s}", "p", p, "t", "f", "m",
                                                    mode, "s", (json_int_t) size, "h", hex));
                } else if (S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX];
                        ssize_t k = readlinkat(dirfd, de->d_name, target, sizeof target - 1);
                        if (k < 0)
                                continue;
                        target[k] = 0;
                        json_array_append_new(
                                c->entries, json_pack("{s:s, s:s, s:s}", "p", p, "t", "l", "l", target));
                } else
                        c->skipped++;
        }
        closedir(d);
}

/* The directory `path` (absolute, as the sandbox sees it) of the process pid, every component
 * opened without following a symlink. A directory fd, or -errno. */
static int open_inside(pid_t pid, const char *path) {
        char root[64];
        snprintf(root, sizeof root, "/proc/%d/root", (int) pid);
        int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        char *copy = strdup(path), *save = NULL;
        if (!copy) {
                close(fd);
                return -ENOMEM;
        }
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                int next =
                        streq(c, "..") ? -1 : openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int err = next < 0 ? (streq(c, "..") ? EINVAL : errno) : 0;
                close(fd);
                if (next < 0) {
                        free(copy);
                        return -err;
                }
                fd = next;
        }
        free(copy);
        int dir = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int err = errno;
        close(fd);
        return dir < 0 ? -err : dir;
}

/* The roots of b's writable state: its scratch, and its home when that is a filesystem of its own. */
static size_t roots_of(const box *b, pid_t pid, const char *out[2]) {
        size_t n = 0;
        struct stat a, h;
        if (b->scratch[0])
                out[n++] = b->scratch;
        if (b->home[0]) {
                int fs = b->scratch[0] ? open_inside(pid, b->scratch) : -1, fh = open_inside(pid, b->home);
                bool own = fh >= 0 &&
                           (fs < 0 || (fstat(fs, &a) == 0 && fstat(fh, &h) == 0 && a.st_dev != h.st_dev));
                if (fs >= 0)
                        close(fs);
                if (fh >= 0)
                        close(fh);
                if (own)
                        out[n++] = b->home;
        }
        return n;
}

static json_t *load_manifest(sbx_mgr *m, const char *id, const char *tenant) {
        if (!mgr_valid_snapshot_id(id))
                return NULL;
        char p[PATH_MAX];
        char name[32];
        snprintf(name, sizeof name, "%s.json", id);
        snap_path(m, name, p, sizeof p);
        json_t *j = json_load_file(p, 0, NULL);
        if (j && tenant && !streq_ptr(json_string_value(json_object_get(j, "tenant")), tenant)) {
                json_decref(j);
                return NULL;
        }
        return j;
}

/* The record of a snapshot: its manifest without the entries. */
static json_t *snapshot_record(const json_t *man) {
        json_t *r = json_deep_copy(man);
        json_object_del(r, "roots");
        json_object_set(r, "snapshot_id", json_object_get(r, "id")); /* DESIGN.md's name for it */
        return r;
}

/* Objects no manifest names, temporary objects and manifests: removed (snap_lock held). */
static void gc_store(sbx_mgr *m) {
        char p[PATH_MAX];
        snap_path(m, NULL, p, sizeof p);
        DIR *d = opendir(p);
        if (!d)
                return;
        json_t *live = json_object();
        for (struct dirent *de; (de = readdir(d));) {
                size_t l = strlen(de->d_name);
                if (l > 4 && streq(de->d_name + l - 4, ".tmp")) {
                        (void) unlinkat(dirfd(d), de->d_name, 0);
                        continue;
                }
                if (l != 25 || !streq(de->d_name + 20, ".json"))
                        continue;
                char path[PATH_MAX + 64];
                snprintf(path, sizeof path, "%s/%s", p, de->d_name);
                json_t *man = json_load_file(path, 0, NULL);
                json_t *roots = json_object_get(man, "roots"), *root, *e;
                size_t i, j;
                json_array_foreach(roots, i, root)
                        json_array_foreach(json_object_get(root, "entries"), j, e) {
                        const char *h = json_string_value(json_object_get(e, "h"));
                        if (h)
                                json_object_set_new(live, h, json_true());
                }
                json_decref(man);
        }
        closedir(d);
        int objfd = objects_dir(m);
        DIR *od = objfd >= 0 ? fdopendir(objfd) : NULL;
        for (struct dirent *de; od && (de = readdir(od));) {
                if (de->d_name[0] == '.')
                        continue;
                if (strncmp(de->d_name, "tmp-", 4) == 0) {
                        (void) unlinkat(dirfd(od), de->d_name, 0);
                        continue;
                }
                int sub = openat(dirfd(od), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
                for (struct dirent *oe; sd && (oe = readdir(sd));)
                        if (oe->d_name[0] != '.' && !json_object_get(live, oe->d_name))
                                (void) unlinkat(dirfd(sd), oe->d_name, 0);
                if (sd)
                        closedir(sd);
                else if (sub >= 0)
                        close(sub);
        }
        if (od)
                closedir(od);
        else if (objfd >= 0)
                close(objfd);
        json_decref(live);
}

void mgr_snapshots_reconcile(sbx_mgr *m) {
        pthread_mutex_lock(&snap_lock);
        gc_store(m);
        pthread_mutex_unlock(&snap_lock);
}

/* The records of the tenant's snapshots (without their entries). */
static json_t *records(sbx_mgr *m, const char *tenant) {
        char p[PATH_MAX];
        snap_path(m, NULL, p, sizeof p);
        json_t *items = json_array();
        DIR *d = opendir(p);
        for (struct dirent *de; d && (de = readdir(d));) {
                size_t l = strlen(de->d_name);
                if (l != 25 || !streq(de->d_name + 20, ".json"))
                        continue;
                char id[21];
                snprintf(id, sizeof id, "%.20s", de->d_name);
                json_t *man = load_manifest(m, id, tenant);
                if (man)
                        json_array_append_new(items, snapshot_record(man));
                json_decref(man);
        }
        if (d)
                closedir(d);
        return items;
}

/* The bytes of the tenant's snapshots (their `stored`), for quota.snapshot_mb. */
static double tenant_mb(sbx_mgr *m, const char *tenant) {
        json_t *items = records(m, tenant), *s;
        size_t i;
        double mb = 0;
        json_array_foreach(items, i, s) mb +=
                json_number_value(json_object_get(s, "stored")) / (1024.0 * 1024.0);
        json_decref(items);
        return mb;
}

/* The snapshot of b (busy: ours), its reply in rp; with held, b stays busy and referenced (the
 * caller's), else both are given back. */
static unsigned take(sbx_mgr *m, const sbx_caller *who, box *b, const char *name, bool paused, pid_t pid,
        bool held, sbx_mgr_reply *rp) {
        const char *sandbox_id = b->id;
        unsigned code = 0;
        if (streq(b->backend, "microvm"))
                code = mgr_reply_err(rp, 409, "unsupported", NULL,
                        "sandbox %s cannot be snapshotted: its files are in its microVM's guest (not built "
                        "yet)",
                        sandbox_id);
        else if (pid <= 0)
                code = mgr_reply_err(
                        rp, 503, "unavailable", NULL, "sandbox %s: its init is not known", sandbox_id);
        /* frozen while it is read: consistent (one that cannot freeze is read running) */
        bool froze = false, consistent = paused;
        if (!code && !paused) {
                sbx_mgr_reply fr = {.stream_fd = -1};
                unsigned f = mgr_freeze_box(m, b, true, "snapshot", &fr);
                froze = consistent = f == 0;
                sbx_mgr_reply_done(&fr);
        }
        pthread_mutex_lock(&snap_lock);
        cap c = {.objfd = -1};
        json_t *roots = json_array();
        int objfd = code ? -1 : objects_dir(m);
        if (!code && objfd < 0)
                code = mgr_reply_err(rp, 503, "unavailable", NULL, "the snapshot store %s: %s",
                        m->snapshot_dir, strerror(errno));
        const char *rs[2];
        size_t nr = code ? 0 : roots_of(b, pid, rs);
        for (size_t i = 0; i < nr && !c.err; i++) {
                int dfd = open_inside(pid, rs[i]);
                struct stat st;
                if (dfd < 0 || fstat(dfd, &st) < 0) {
                        cap_fail(&c, dfd < 0 ? -dfd : errno, rs[i]);
                        break;
                }
                c.objfd = objfd;
                c.dev = st.st_dev;
                c.entries = json_array();
                walk(&c, dfd, "", 0);
                close(dfd);
                json_array_append_new(roots, json_pack("{s:s, s:o}", "path", rs[i], "entries", c.entries));
        }
        char id[32] = "";
        json_t *man = NULL;
        if (!code && c.err)
                code = c.err == ENOSPC || c.err == EDQUOT
                               ? mgr_reply_err(rp, 507, "insufficient_storage", NULL,
                                         "the snapshot store is full (%s, at %s); sandbox %s runs on",
                                         strerror(c.err), c.what, sandbox_id)
                       : c.err == E2BIG
                               ? mgr_reply_err(rp, 413, "payload_too_large", NULL,
                                         "more than %d files in sandbox %s", MAX_ENTRIES, sandbox_id)
                               : mgr_reply_err(rp, 503, "unavailable", NULL,
                                         "cannot read %s of sandbox %s: %s", c.what, sandbox_id,
                                         strerror(c.err));
        if (!code && m->o.quota_snapshot_mb > 0 &&
                tenant_mb(m, who->tenant) + (double) c.stored / (1024.0 * 1024.0) > m->o.quota_snapshot_mb)
                code = mgr_reply_err(rp, 429, "quota_exceeded", "quota.snapshot_mb",
                        "the snapshot (%.1f MiB) would take tenant '%s' past its quota (snapshot_mb: %g)",
                        (double) c.stored / (1024.0 * 1024.0), who->tenant, m->o.quota_snapshot_mb);
        if (!code) {
                mgr_random_id("snp_", id, sizeof id);
                char *text = json_dumps(roots, JSON_COMPACT);
                char digest[65];
                sha256_hex(text ? text : "", text ? strlen(text) : 0, digest);
                free(text);
                man = json_pack("{s:s, s:s*, s:s, s:s, s:s, s:o, s:I, s:I, s:s, s:i, s:i, s:b, s:n, s:O}",
                        "id", id, "name", name, "tenant", who->tenant, "sandbox_id", b->id, "profile",
                        b->profile, "created_at", mgr_time_json(mgr_now_ms()), "size", (json_int_t) c.size,
                        "stored", (json_int_t) c.stored, "sha256", digest, "files", (int) c.files, "skipped",
                        (int) c.skipped, "consistent", consistent, "memory", "roots", roots);
                json_object_set_new(man, "config_sha", json_string(b->config_sha));
                char p[PATH_MAX], tmp[PATH_MAX + 8], fname[40];
                snprintf(fname, sizeof fname, "%s.json", id);
                snap_path(m, fname, p, sizeof p);
                snprintf(tmp, sizeof tmp, "%s.tmp", p);
                int r = json_dump_file(man, tmp, JSON_COMPACT);
                int fd = r == 0 ? open(tmp, O_RDONLY | O_CLOEXEC) : -1;
                if (r < 0 || fd < 0 || fsync(fd) < 0 || rename(tmp, p) < 0) {
                        int err = errno;
                        (void) unlink(tmp);
                        code = mgr_reply_err(rp, err == ENOSPC ? 507 : 503,
                                err == ENOSPC ? "insufficient_storage" : "unavailable", NULL,
                                "cannot write the snapshot's manifest: %s", strerror(err ? err : EIO));
                }
                if (fd >= 0)
                        close(fd);
        }
        if (code) /* nothing half-made stays: objects only it named go */
                gc_store(m);
        pthread_mutex_unlock(&snap_lock);
        if (objfd >= 0)
                close(objfd);
        json_decref(roots);
        if (froze)
                (void) mgr_freeze_box(m, b, false, "snapshot", NULL);
        if (!held) {
                pthread_mutex_lock(&m->lock);
                b->busy = false;
                pthread_mutex_unlock(&m->lock);
        }
        if (!code) {
                mgr_emit(m, b, "sandbox.snapshot", json_pack("{s:s}", "snapshot_id", id));
                mgr_audit(m, who, "snapshot.create", id, "ok", b->id);
                rp->code = 201;
                rp->json = snapshot_record(man);
        } else
                mgr_audit(m, who, "snapshot.create", b->id, "failed", NULL);
        json_decref(man);
        if (!held)
                mgr_box_put(m, b);
        return rp->code;
}

unsigned sbx_ops_snapshot_create(
        sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *name, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (name && (strlen(name) > 128 || !*name))
                return mgr_reply_err(rp, 400, "invalid_argument", "name", "name: 1 to 128 characters");
        if (m->o.quota_snapshot_mb > 0 && tenant_mb(m, who->tenant) >= m->o.quota_snapshot_mb)
                return mgr_reply_err(rp, 429, "quota_exceeded", "quota.snapshot_mb",
                        "tenant '%s' holds %.1f MiB of snapshots (quota snapshot_mb: %g); delete one first",
                        who->tenant, tenant_mb(m, who->tenant), m->o.quota_snapshot_mb);
        box *b = mgr_valid_sandbox_id(sandbox_id) ? mgr_box_get(m, sandbox_id, who->tenant) : NULL;
        if (!b)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", sandbox_id);
        pthread_mutex_lock(&m->lock);
        bool paused = b->state == SBX_STATE_PAUSED;
        bool ok = !b->busy && (paused || sbx_state_usable(b->state)) && !m->stopping;
        if (ok)
                b->busy = true;
        pid_t pid = b->init_pid;
        pthread_mutex_unlock(&m->lock);
        if (!ok) {
                mgr_box_put(m, b);
                return mgr_reply_err(
                        rp, 409, "conflict", NULL, "sandbox %s is being changed or not running", sandbox_id);
        }
        return take(m, who, b, name, paused, pid, false, rp);
}

unsigned mgr_snapshot_held(sbx_mgr *m, box *b, const char *name, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        sbx_caller sys = {.kind = "adm", .name = "reaper"};
        snprintf(sys.tenant, sizeof sys.tenant, "%s", b->tenant);
        if (m->o.quota_snapshot_mb > 0 &&
                tenant_mb(m, sys.tenant) >= m->o.quota_snapshot_mb) /* before reading it all */
                return mgr_reply_err(rp, 429, "quota_exceeded", "quota.snapshot_mb",
                        "tenant '%s' holds %.1f MiB of snapshots (quota snapshot_mb: %g)", sys.tenant,
                        tenant_mb(m, sys.tenant), m->o.quota_snapshot_mb);
        pthread_mutex_lock(&m->lock);
        bool paused = b->state == SBX_STATE_PAUSED;
        pid_t pid = b->init_pid;
        pthread_mutex_unlock(&m->lock);
        return take(m, &sys, b, name, paused, pid, true, rp);
}

unsigned sbx_ops_snapshot_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        rp->code = 200;
        rp->json = json_pack("{s:o}", "items", records(m, who->tenant));
        return 200;
}

unsigned sbx_ops_snapshot_get(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        json_t *man = load_manifest(m, id, who->tenant);
        if (!man)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no snapshot '%.64s'", id);
        rp->code = 200;
        rp->json = snapshot_record(man);
        json_decref(man);
        return 200;
}

unsigned sbx_ops_snapshot_delete(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        json_t *man = load_manifest(m, id, who->tenant);
        if (!man)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no snapshot '%.64s'", id);
        pthread_mutex_lock(&m->lock);
        const char *user = NULL;
        for (box *b = m->boxes; b && !user; b = b->next)
                if (b->restoring[0] && streq(b->restoring, id))
                        user = b->id;
        char inuse[32];
        snprintf(inuse, sizeof inuse, "%s", user ? user : "");
        pthread_mutex_unlock(&m->lock);
        if (inuse[0]) {
                json_decref(man);
                return mgr_reply_err(rp, 409, "conflict", NULL,
                        "snapshot %s is in use: sandbox %s is being made from it", id, inuse);
        }
        char p[PATH_MAX], fname[40];
        snprintf(fname, sizeof fname, "%s.json", id);
        snap_path(m, fname, p, sizeof p);
        pthread_mutex_lock(&snap_lock);
        int r = unlink(p) < 0 ? -errno : 0;
        if (r == 0)
                gc_store(m);
        pthread_mutex_unlock(&snap_lock);
        if (r < 0) {
                json_decref(man);
                return mgr_reply_err(
                        rp, 503, "unavailable", NULL, "cannot delete snapshot %s: %s", id, strerror(-r));
        }
        mgr_audit(m, who, "snapshot.delete", id, "ok", NULL);
        rp->code = 200;
        rp->json = snapshot_record(man);
        json_decref(man);
        return 200;
}

/* ---- restore ------------------------------------------------------------------------------------ */

/* The parent directory of rel below root (made as needed, no component followed) and its last
 * component. A directory fd, or -errno. */
static int parent_of(int root, const char *rel, const char **last, mode_t mode) {
        const char *slash = strrchr(rel, '/');
        *last = slash ? slash + 1 : rel;
        int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        if (!slash || fd < 0)
                return fd < 0 ? -errno : fd;
        char *copy = strndup(rel, (size_t) (slash - rel)), *save = NULL;
        for (char *c = copy ? strtok_r(copy, "/", &save) : NULL; c; c = strtok_r(NULL, "/", &save)) {
                if (streq(c, "..") || streq(c, ".")) {
                        close(fd);
                        free(copy);
                        return -EINVAL;
                }
                (void) mkdirat(fd, c, mode);
                int next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int err = errno;
                close(fd);
                if (next < 0) {
                        free(copy);
                        return -err;
                }
                fd = next;
        }
        free(copy);
        return fd;
}

/* The snapshot's files into b's scratch and home (b was just made: nothing of its own ran). 0, or
 * -errno with what. */
static int restore(sbx_mgr *m, box *b, const json_t *man, char *what, size_t wsize) {
        int objfd = objects_dir(m);
        if (objfd < 0)
                return (snprintf(what, wsize, "the snapshot store"), -errno);
        json_t *root;
        size_t i;
        int r = 0;
        json_array_foreach(json_object_get(man, "roots"), i, root) {
                const char *path = json_string_value(json_object_get(root, "path"));
                /* the same roots in the new sandbox: its scratch and home as it has them */
                if (!path || (!streq(path, b->scratch) && !streq(path, b->home)))
                        continue;
                int rfd = open_inside(b->init_pid, path);
                struct stat rst;
                if (rfd < 0 || fstat(rfd, &rst) < 0) {
                        r = rfd < 0 ? rfd : -errno;
                        snprintf(what, wsize, "%s", path);
                        if (rfd >= 0)
                                close(rfd);
                        break;
                }
                /* As root: everything made as the owner of the root (the sandbox's user as the host
                 * sees it) — a filesystem of the sandbox's user namespace refuses an owner it does
                 * not map (EOVERFLOW). This thread only: setfsuid is per thread. */
                bool fs_as = geteuid() == 0;
                if (fs_as) {
                        (void) setfsgid(rst.st_gid);
                        (void) setfsuid(rst.st_uid);
                }
                json_t *e;
                size_t j;
                json_array_foreach(json_object_get(root, "entries"), j, e) {
                        const char *p = json_string_value(json_object_get(e, "p")),
                                   *t = json_string_value(json_object_get(e, "t")), *last;
                        mode_t mode = (mode_t) json_integer_value(json_object_get(e, "m")) & 0777;
                        if (!p || !t || !*p || p[0] == '/') {
                                r = -EINVAL;
                                break;
                        }
                        int dfd = parent_of(rfd, p, &last, 0755);
                        if (dfd < 0 || streq(last, "..") || streq(last, ".") || !*last) {
                                r = dfd < 0 ? dfd : -EINVAL;
                                if (dfd >= 0)
                                        close(dfd);
                                snprintf(what, wsize, "%s/%s", path, p);
                                break;
                        }
                        if (streq(t, "d")) {
                                if (mkdirat(dfd, last, mode) < 0 && errno != EEXIST)
                                        r = -errno;
                                else
                                        (void) !fchmodat(dfd, last, mode, AT_SYMLINK_NOFOLLOW);
                        } else if (streq(t, "l")) {
                                (void) unlinkat(dfd, last, 0);
                                if (symlinkat(json_string_value(json_object_get(e, "l")) ?: "", dfd, last) <
                                        0)
                                        r = -errno;
                        } else if (streq(t, "f")) {
                                int fd = openat(dfd, last,
                                        O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
                                if (fd < 0)
                                        r = -errno;
                                else {
                                        /* the store is the server's: opened as itself */
                                        if (fs_as)
                                                (void) setfsuid(0);
                                        int ofd = object_open(
                                                objfd, json_string_value(json_object_get(e, "h")) ?: "");
                                        if (fs_as)
                                                (void) setfsuid(rst.st_uid);
                                        r = object_get(ofd, fd);
                                        (void) !fchmod(fd, mode);
                                        close(fd);
                                }
                        }
                        close(dfd);
                        if (r < 0) {
                                snprintf(what, wsize, "%s/%s", path, p);
                                break;
                        }
                }
                close(rfd);
                if (fs_as) {
                        (void) setfsuid(0);
                        (void) setfsgid(0);
                }
                if (r < 0)
                        break;
        }
        close(objfd);
        return r;
}

json_t *mgr_snapshot_take(sbx_mgr *m, const char *id, const char *tenant, box *b) {
        json_t *man = load_manifest(m, id, tenant);
        if (man && b) {
                pthread_mutex_lock(&m->lock);
                snprintf(b->restoring, sizeof b->restoring, "%s", id);
                pthread_mutex_unlock(&m->lock);
        }
        return man;
}

unsigned mgr_snapshot_restore(sbx_mgr *m, box *b, const json_t *man, sbx_mgr_reply *rp) {
        char what[PATH_MAX] = "";
        int r = restore(m, b, man, what, sizeof what);
        pthread_mutex_lock(&m->lock);
        b->restoring[0] = 0;
        pthread_mutex_unlock(&m->lock);
        if (r == 0) {
                mgr_emit(m, b, "sandbox.restore",
                        json_pack("{s:O}", "snapshot_id", json_object_get(man, "id")));
                return 0;
        }
        return mgr_reply_err(rp, r == -ENOSPC || r == -EDQUOT ? 507 : 503,
                r == -ENOSPC || r == -EDQUOT ? "insufficient_storage" : "provision_failed", NULL,
                "the snapshot's files did not fit into the new sandbox (%s: %s)%s", what, strerror(-r),
                r == -ENOSPC ? "; its profile's scratch_mb is too small for them" : "");
}
