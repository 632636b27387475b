/* secrets.c — a tenant's own secrets (DESIGN.md, "Create, seeds' shapes, secrets, webhooks"):
 * PUT /v1/secrets/{name} (the body is the value; write-only), GET /v1/secrets (names and when
 * they were set), DELETE /v1/secrets/{name}. A profile's `secrets` resolve from the tenant's own
 * first, then the server's --secrets-dir (the operator's: a profile, which the operator's policy
 * allows, grants it); a create's `setup_metadata.secret_refs` from the tenant's own only — a
 * tenant cannot name its way into the operator's store.
 *
 * The store: STATE/tenant-secrets/T/NAME, T the first 32 hex digits of SHA-256(tenant) (a tenant
 * name may hold anything), each file 0600 in 0700 directories, written to a temporary name and
 * renamed (a crash leaves the old value or the new, never half of one). A value is at most 64 KiB
 * — what the supervisor hands a sandbox at /run/secrets/NAME. Values never leave through the API,
 * the logs or the audit log (which names the secret, not its value). */
#include "daemon/mgr-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/io.h"
#include "basic/sha256.h"

#define SECRET_MAX 65536

static pthread_mutex_t secret_lock = PTHREAD_MUTEX_INITIALIZER;

static void tenant_dir(sbx_mgr *m, const char *tenant, char *buf, size_t size) {
        char h[65];
        sha256_hex(tenant, strlen(tenant), h);
        snprintf(buf, size, "%.4000s/tenant-secrets/%.32s", m->state_dir, h);
}

int mgr_secret_open(
        sbx_mgr *m, const char *tenant, const char *name, bool server_too, char *where, size_t size) {
        if (!mgr_secret_name_ok(name))
                return -EINVAL;
        char dir[PATH_MAX], path[PATH_MAX + 160];
        tenant_dir(m, tenant && *tenant ? tenant : "default", dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                if (where)
                        snprintf(where, size, "the tenant's secrets");
                return fd;
        }
        if (errno != ENOENT) /* the tenant's, unreadable: not the operator's of the same name instead */
                return -errno;
        if (!m->secrets_dir || !server_too)
                return -ENOENT;
        snprintf(path, sizeof path, "%.3900s/%s", m->secrets_dir, name);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (where)
                snprintf(where, size, "%.900s", path);
        return fd;
}

static time_t mtime_of(int dfd, const char *name) {
        struct stat st;
        return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_mtime : 0;
}

unsigned sbx_ops_secret_put(sbx_mgr *m, const sbx_caller *who, const char *name, const void *data,
        size_t len, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!mgr_secret_name_ok(name) || name[0] == '.')
                return mgr_reply_err(rp, 400, "invalid_argument", "name",
                        "a secret's name: 1 to 128 of [A-Za-z0-9._-], not starting with .");
        if (len > SECRET_MAX)
                return mgr_reply_err(
                        rp, 413, "payload_too_large", NULL, "a secret is at most %d bytes", SECRET_MAX);
        char dir[PATH_MAX], tmp[PATH_MAX + 200], path[PATH_MAX + 160];
        tenant_dir(m, who->tenant, dir, sizeof dir);
        char top[PATH_MAX];
        snprintf(top, sizeof top, "%.4000s/tenant-secrets", m->state_dir);
        pthread_mutex_lock(&secret_lock);
        (void) mkdir(top, 0700);
        (void) mkdir(dir, 0700);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
        bool existed = access(path, F_OK) == 0;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        int err = fd < 0 ? errno : 0;
        if (!err) {
                int w = sbx_write_all(fd, data, len);
                err = w < 0 ? -w : 0;
        }
        if (!err && fsync(fd) < 0)
                err = errno;
        if (fd >= 0)
                close(fd);
        if (!err && rename(tmp, path) < 0)
                err = errno;
        if (err)
                (void) unlink(tmp);
        pthread_mutex_unlock(&secret_lock);
        mgr_audit(m, who, "secret.put", name, err ? "failed" : "ok", NULL);
        if (err)
                return mgr_reply_err(rp, err == ENOSPC ? 507 : 503,
                        err == ENOSPC ? "insufficient_storage" : "unavailable", NULL,
                        "cannot keep secret '%s': %s", name, strerror(err));
        rp->code = existed ? 200 : 201;
        rp->json = json_pack("{s:s, s:o}", "name", name, "created_at", mgr_time_json(mgr_now_ms()));
        return rp->code;
}

unsigned sbx_ops_secret_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        char dir[PATH_MAX];
        tenant_dir(m, who->tenant, dir, sizeof dir);
        json_t *items = json_array();
        pthread_mutex_lock(&secret_lock);
        DIR *d = opendir(dir);
        for (struct dirent *de; d && (de = readdir(d));)
                if (de->d_name[0] != '.' && mgr_secret_name_ok(de->d_name))
                        json_array_append_new(items,
                                json_pack("{s:s, s:o}", "name", de->d_name, "created_at",
                                        mgr_time_json((int64_t) mtime_of(dirfd(d), de->d_name) * 1000)));
        if (d)
                closedir(d);
        pthread_mutex_unlock(&secret_lock);
        rp->code = 200;
        rp->json = json_pack("{s:o}", "items", items);
        return 200;
}

unsigned sbx_ops_secret_delete(sbx_mgr *m, const sbx_caller *who, const char *name, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!mgr_secret_name_ok(name))
                return mgr_reply_err(rp, 404, "not_found", NULL, "no secret '%.64s'", name ? name : "");
        char dir[PATH_MAX], path[PATH_MAX + 160];
        tenant_dir(m, who->tenant, dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        pthread_mutex_lock(&secret_lock);
        int r = unlink(path) < 0 ? -errno : 0;
        pthread_mutex_unlock(&secret_lock);
        if (r == -ENOENT)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no secret '%.64s'", name);
        mgr_audit(m, who, "secret.delete", name, r < 0 ? "failed" : "ok", NULL);
        if (r < 0)
                return mgr_reply_err(
                        rp, 503, "unavailable", NULL, "cannot delete secret '%s': %s", name, strerror(-r));
        rp->code = 200;
        rp->json = json_pack("{s:s}", "name", name);
        return 200;
}

static void add_value(json_t *out, const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return;
        _cleanup_free_ char *v = NULL;
        size_t n = 0;
        int r = sbx_read_fd_all(fd, SECRET_MAX, &v, &n);
        close(fd);
        if (r < 0 || !v)
                return;
        while (n > 0 && (v[n - 1] == '\n' || v[n - 1] == '\r'))
                v[--n] = 0;
        size_t i;
        json_t *x;
        json_array_foreach(out, i, x) if (streq(json_string_value(x), v)) return;
        if (n)
                json_array_append_new(out, json_string(v));
}

/* Every distinct value the secret NAME has: each tenant's own and the server's (a front's sweep
 * asks a back end once per token it may hold sandboxes under). A JSON array of strings, trailing
 * newlines cut. */
json_t *mgr_secret_values(sbx_mgr *m, const char *name) {
        json_t *out = json_array();
        if (!out || !mgr_secret_name_ok(name))
                return out;
        char root[PATH_MAX], path[PATH_MAX + 300];
        snprintf(root, sizeof root, "%.4000s/tenant-secrets", m->state_dir);
        DIR *d = opendir(root);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof path, "%s/%.64s/%s", root, de->d_name, name);
                add_value(out, path);
        }
        if (d)
                closedir(d);
        if (m->secrets_dir) {
                snprintf(path, sizeof path, "%.3900s/%s", m->secrets_dir, name);
                add_value(out, path);
        }
        return out;
}
