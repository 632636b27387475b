/* volumes.c — named, tenant-owned persistent filesystems mounted into sandboxes (DESIGN.md,
 * "Persistence").
 *
 * Each volume is an ext4 filesystem in an image file of its size (allocated in full, so that a
 * full host disk cannot take it from under a writer), loop-mounted on the host (nosuid, nodev) and
 * bound into the sandboxes that ask for it, read-only or writable (the native backend: a mount
 * namespace of its own). Why an image and not a directory: the size cap is the filesystem's, so a
 * writer past it gets ENOSPC and nothing else notices — a directory with accounting (du, or
 * project quotas, which need a filesystem mounted with them) could only refuse after the fact.
 * The price: mounting needs root, so an ordinary user's server refuses volumes, saying so.
 *
 * The store (STATE/volumes): VOL_ID.json {id, name, tenant, size_mb, created_at}, VOL_ID.img, and
 * VOL_ID/ (where it is mounted; mounted again when the server finds it is not, after a reboot).
 * A volume outlives its sandboxes and restarts; deleting one a live sandbox mounts is refused
 * (409, naming the sandbox); its bytes count in the tenant's quota.volume_mb. */
#include "daemon/mgr-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/rm-rf.h"

extern char **environ;

static pthread_mutex_t vol_lock = PTHREAD_MUTEX_INITIALIZER;

bool sbx_volume_name_ok(const char *s) {
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > 63 || s[0] == '.' || s[0] == '-')
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                            *p == '.' || *p == '_' || *p == '-'))
                        return false;
        return true;
}

static void vol_path(sbx_mgr *m, const char *id, const char *suffix, char *buf, size_t n) {
        snprintf(
                buf, n, "%s/volumes%s%s%s", m->state_dir, id ? "/" : "", id ? id : "", suffix ? suffix : "");
}

/* The tenant's volumes (every tenant's: NULL), their records. */
static json_t *list(sbx_mgr *m, const char *tenant) {
        char dir[PATH_MAX];
        vol_path(m, NULL, NULL, dir, sizeof dir);
        DIR *d = opendir(dir);
        json_t *items = json_array();
        for (struct dirent *de; d && (de = readdir(d));) {
                size_t l = strlen(de->d_name);
                if (l != 25 || strncmp(de->d_name, "vol_", 4) != 0 || !streq(de->d_name + 20, ".json"))
                        continue;
                char p[PATH_MAX + 64];
                snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
                json_t *j = json_load_file(p, 0, NULL);
                if (j && (!tenant || streq_ptr(json_string_value(json_object_get(j, "tenant")), tenant)))
                        json_array_append(items, j);
                json_decref(j);
        }
        if (d)
                closedir(d);
        return items;
}

/* The tenant's volume named name: its record (NULL: none). */
static json_t *find(sbx_mgr *m, const char *tenant, const char *name) {
        json_t *items = list(m, tenant), *v, *found = NULL;
        size_t i;
        json_array_foreach(items, i,
                v) if (!found && streq_ptr(json_string_value(json_object_get(v, "name")), name)) found =
                json_incref(v);
        json_decref(items);
        return found;
}

/* Run argv (a tool of the host's), its output dropped: 0, or -EIO with its status. */
static int run_tool(char *const argv[]) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        pid_t pid;
        int r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                return -r;
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static bool mounted(const char *mnt) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s/..", mnt);
        struct stat a, b;
        return stat(mnt, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

static int mount_image(const char *img, const char *mnt) {
        (void) mkdir(mnt, 0755);
        if (mounted(mnt))
                return 0;
        char *const argv[] = {(char *) "mount", (char *) "-o", (char *) "loop,nosuid,nodev", (char *) img,
                (char *) mnt, NULL};
        return run_tool(argv);
}

const char *mgr_volume_host(
        sbx_mgr *m, const char *tenant, const char *name, char *buf, size_t size, int *err) {
        pthread_mutex_lock(&vol_lock);
        json_t *v = find(m, tenant, name);
        const char *id = json_string_value(json_object_get(v, "id"));
        int r = v ? 0 : -ENOENT;
        if (id) {
                char img[PATH_MAX];
                vol_path(m, id, ".img", img, sizeof img);
                vol_path(m, id, NULL, buf, size);
                r = mount_image(img, buf);
        }
        json_decref(v);
        pthread_mutex_unlock(&vol_lock);
        *err = r;
        return r == 0 ? buf : NULL;
}

json_t *mgr_volume_by_id(sbx_mgr *m, const char *id) {
        pthread_mutex_lock(&vol_lock);
        json_t *items = list(m, NULL), *v, *found = NULL;
        size_t i;
        json_array_foreach(items, i, v) if (!found && streq_ptr(json_string_value(json_object_get(v, "id")),
                                                              id)) found = json_incref(v);
        json_decref(items);
        pthread_mutex_unlock(&vol_lock);
        return found;
}

bool sbx_ops_volume_token(sbx_mgr *m, const json_t *vol, char ret[static 36]) {
        char text[256], mac[33];
        snprintf(text, sizeof text, "volume:%.128s:%.64s",
                json_string_value(json_object_get(vol, "tenant")) ?: "",
                json_string_value(json_object_get(vol, "id")) ?: "");
        if (!mgr_mac(m, text, mac))
                return false;
        snprintf(ret, 36, "vt_%s", mac);
        return true;
}

json_t *sbx_ops_volume_by_token(sbx_mgr *m, const char *id, const char *token) {
        json_t *v = id && token ? mgr_volume_by_id(m, id) : NULL;
        char want[36];
        if (v && (!sbx_ops_volume_token(m, v, want) || !mgr_same(want, token))) {
                json_decref(v);
                v = NULL;
        }
        return v;
}

void mgr_volume_event(sbx_mgr *m, const json_t *vol, const char *type, json_t *data /* stolen */) {
        int64_t at = mgr_now_ms();
        if (!data)
                data = json_object();
        const char *id = json_string_value(json_object_get(vol, "id")) ?: "";
        json_object_set_new(data, "volume_id", json_string(id));
        json_object_set(data, "name", json_object_get(vol, "name"));
        json_object_set_new(data, "at", mgr_time_json(at));
        char *text = json_dumps(data, JSON_COMPACT);
        json_decref(data);
        int64_t seq = sbx_store_event_add_tenant(
                m->store, id, json_string_value(json_object_get(vol, "tenant")) ?: "", type, at, text);
        free(text);
        mgr_event_posted(m, seq);
}

static double tenant_mb(sbx_mgr *m, const char *tenant) {
        json_t *items = list(m, tenant), *v;
        size_t i;
        double mb = 0;
        json_array_foreach(items, i, v) mb += json_number_value(json_object_get(v, "size_mb"));
        json_decref(items);
        return mb;
}

unsigned sbx_ops_volume_create(
        sbx_mgr *m, const sbx_caller *who, const char *name, double size_mb, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!sbx_volume_name_ok(name))
                return mgr_reply_err(rp, 400, "invalid_argument", "name",
                        "name: 1 to 63 of [A-Za-z0-9._-], not starting with . or -");
        if (!(size_mb >= 1 && size_mb <= 1024 * 1024) || size_mb != (double) (long long) size_mb)
                return mgr_reply_err(rp, 400, "invalid_argument", "size_mb",
                        "size_mb: a whole number of MiB, 1 to 1048576");
        if (geteuid() != 0)
                return mgr_reply_err(rp, 409, "unsupported", NULL,
                        "volumes need a server run as root: each is a loop-mounted filesystem image, whose "
                        "size "
                        "cap the filesystem keeps (an ordinary user cannot mount one)");
        pthread_mutex_lock(&vol_lock);
        unsigned code = 0;
        json_t *dup = find(m, who->tenant, name);
        if (dup)
                code = mgr_reply_err(
                        rp, 409, "conflict", "name", "the tenant has a volume '%s' already", name);
        json_decref(dup);
        if (!code && m->o.quota_volume_mb > 0 && tenant_mb(m, who->tenant) + size_mb > m->o.quota_volume_mb)
                code = mgr_reply_err(rp, 429, "quota_exceeded", "quota.volume_mb",
                        "tenant '%s' would hold %g MiB of volumes (quota volume_mb: %g); delete one first",
                        who->tenant, tenant_mb(m, who->tenant) + size_mb, m->o.quota_volume_mb);
        char id[32], img[PATH_MAX], mnt[PATH_MAX], meta[PATH_MAX], dir[PATH_MAX];
        mgr_random_id("vol_", id, sizeof id);
        vol_path(m, NULL, NULL, dir, sizeof dir);
        vol_path(m, id, ".img", img, sizeof img);
        vol_path(m, id, NULL, mnt, sizeof mnt);
        vol_path(m, id, ".json", meta, sizeof meta);
        if (!code) {
                (void) mkdir(dir, 0700);
                int fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                int r = fd < 0 ? -errno : -posix_fallocate(fd, 0, (off_t) size_mb * 1024 * 1024);
                if (fd >= 0)
                        close(fd);
                char *const mkfs[] = {(char *) "mkfs.ext4", (char *) "-q", (char *) "-F", (char *) "-m",
                        (char *) "0", img, NULL};
                if (r == 0 && (r = run_tool(mkfs)) < 0)
                        r = r == -ENOENT ? -ENOENT : -EIO;
                if (r == 0)
                        r = mount_image(img, mnt);
                json_t *rec = json_pack("{s:s, s:s, s:s, s:f, s:o}", "id", id, "name", name, "tenant",
                        who->tenant, "size_mb", size_mb, "created_at", mgr_time_json(mgr_now_ms()));
                if (r == 0 && json_dump_file(rec, meta, 0) < 0)
                        r = -EIO;
                if (r < 0) {
                        (void) umount2(mnt, MNT_DETACH);
                        (void) rmdir(mnt);
                        (void) unlink(img);
                        (void) unlink(meta);
                        code = mgr_reply_err(rp, r == -ENOSPC ? 507 : 503,
                                r == -ENOSPC ? "insufficient_storage" : "unavailable", NULL,
                                "cannot make volume '%s': %s", name,
                                r == -ENOENT ? "mkfs.ext4 is not installed (apt-get install e2fsprogs)"
                                : r == -EIO  ? "mkfs.ext4 or mount failed"
                                             : strerror(-r));
                        json_decref(rec);
                } else {
                        rp->code = 201;
                        rp->json = rec;
                }
        }
        pthread_mutex_unlock(&vol_lock);
        mgr_audit(m, who, "volume.create", name, code ? "failed" : "ok", code ? NULL : id);
        if (!code)
                mgr_volume_event(m, rp->json, "volume.created", json_pack("{s:f}", "size_mb", size_mb));
        return code ? code : 201;
}

unsigned sbx_ops_volume_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        pthread_mutex_lock(&vol_lock);
        rp->json = json_pack("{s:o}", "items", list(m, who->tenant));
        pthread_mutex_unlock(&vol_lock);
        rp->code = 200;
        return 200;
}

unsigned sbx_ops_volume_get(sbx_mgr *m, const sbx_caller *who, const char *name, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        pthread_mutex_lock(&vol_lock);
        json_t *v = sbx_volume_name_ok(name) ? find(m, who->tenant, name) : NULL;
        pthread_mutex_unlock(&vol_lock);
        if (!v)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no volume '%.64s'", name);
        rp->code = 200;
        rp->json = v;
        return 200;
}

unsigned sbx_ops_volume_delete(sbx_mgr *m, const sbx_caller *who, const char *name, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        pthread_mutex_lock(&vol_lock);
        json_t *v = sbx_volume_name_ok(name) ? find(m, who->tenant, name) : NULL;
        if (!v) {
                pthread_mutex_unlock(&vol_lock);
                return mgr_reply_err(rp, 404, "not_found", NULL, "no volume '%.64s'", name);
        }
        const char *id = json_string_value(json_object_get(v, "id"));
        /* in use: a sandbox alive that mounts it */
        char user[32] = "";
        pthread_mutex_lock(&m->lock);
        for (box *b = m->boxes; b && !user[0]; b = b->next) {
                json_t *x;
                size_t i;
                if (sbx_state_ending(b->state) || !streq(b->tenant, who->tenant))
                        continue;
                json_array_foreach(
                        b->volumes, i, x) if (streq_ptr(json_string_value(json_object_get(x, "name")), name))
                        snprintf(user, sizeof user, "%s", b->id);
        }
        pthread_mutex_unlock(&m->lock);
        unsigned code = 0;
        if (user[0])
                code = mgr_reply_err(rp, 409, "conflict", NULL,
                        "volume '%s' is in use: sandbox %s mounts it", name, user);
        else {
                char img[PATH_MAX], mnt[PATH_MAX], meta[PATH_MAX];
                vol_path(m, id, ".img", img, sizeof img);
                vol_path(m, id, NULL, mnt, sizeof mnt);
                vol_path(m, id, ".json", meta, sizeof meta);
                if (mounted(mnt) && umount2(mnt, 0) < 0 && umount2(mnt, MNT_DETACH) < 0)
                        code = mgr_reply_err(rp, 503, "unavailable", NULL, "cannot unmount volume '%s': %s",
                                name, strerror(errno));
                else {
                        (void) rmdir(mnt);
                        (void) unlink(img);
                        (void) unlink(meta);
                }
        }
        pthread_mutex_unlock(&vol_lock);
        mgr_audit(m, who, "volume.delete", name, code ? "failed" : "ok", code ? user : id);
        if (code) {
                json_decref(v);
                return code;
        }
        mgr_volume_event(m, v, "volume.deleted", NULL);
        rp->code = 200;
        rp->json = v;
        return 200;
}
