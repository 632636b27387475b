/* skills.c — signed skills in the control plane (DESIGN.md, "Signed skills"): POST /v1/skills
 * takes a skill directory as a tar, verifies it against the policy's trusted keys and keeps the
 * verified bytes, tenant-owned; GET, DELETE; and what a create {skill: ID} needs (the skill's
 * files verified again into the sandbox's workspace, its derived profile).
 *
 * On disk, under the state directory: skills/ID/skill.json (the record) and skills/ID/files/
 * (exactly the bytes that were verified, skill.yaml with them). A JSON file per skill rather
 * than a table: the files live beside it anyway, and a skill is removed with its directory. */
#include "daemon/mgr-internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/io.h"
#include "basic/rm-rf.h"
#include "basic/strv.h"
#include "daemon/skill.h"

#define SKILL_TAR_MAX (64ull * 1024 * 1024)
#define SKILL_ENTRIES_MAX 4096
#define SKILLS_PER_TENANT_MAX 256

bool mgr_valid_skill_id(const char *s) {
        if (!s || strncmp(s, "skl_", 4) != 0 || strlen(s) != 20)
                return false;
        for (const char *p = s + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

static void skills_dir(sbx_mgr *m, char *buf, size_t n) {
        snprintf(buf, n, "%.4000s/skills", m->state_dir);
}

/* ---- the tar ------------------------------------------------------------------------------ */

/* A tar entry's name made relative and checked: "./a/b" → "a/b"; NULL for the archive's root
 * ("." or "./"); why set (and NULL) when it is absolute or has a ".." component. */
static const char *entry_rel(const char *name, char *buf, size_t n, const char **why) {
        *why = NULL;
        if (!name || !*name) {
                *why = "an empty name";
                return NULL;
        }
        if (name[0] == '/') {
                *why = "an absolute path";
                return NULL;
        }
        size_t o = 0;
        for (const char *p = name; *p;) {
                const char *e = strchrnul(p, '/');
                size_t l = (size_t) (e - p);
                if (l == 2 && p[0] == '.' && p[1] == '.') {
                        *why = "a '..' component";
                        return NULL;
                }
                if (l > 0 && !(l == 1 && p[0] == '.')) {
                        if (o + l + 2 > n) {
                                *why = "a path too long";
                                return NULL;
                        }
                        if (o)
                                buf[o++] = '/';
                        memcpy(buf + o, p, l);
                        o += l;
                }
                p = *e ? e + 1 : e;
        }
        buf[o] = 0;
        return o ? buf : NULL;
}

static bool printable_utf8(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return false;
        return mgr_utf8_valid((const unsigned char *) s, strlen(s));
}

/* mkdir -p of rel's parents under dirfd (no symlink is ever made here, so none is met). */
static int make_parents(int dirfd, char *rel) {
        for (char *p = strchr(rel, '/'); p; p = strchr(p + 1, '/')) {
                *p = 0;
                int r = mkdirat(dirfd, rel, 0755) < 0 && errno != EEXIST ? -errno : 0;
                *p = '/';
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Extract the tar in body into the empty directory dir: regular files and directories only.
 * 0, or an HTTP status with rp filled (400 naming the entry). */
static unsigned extract(const char *body, size_t len, const char *dir, sbx_mgr_reply *rp) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "%s: %s", dir, strerror(errno));
        struct archive *a = archive_read_new();
        if (!a)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
        /* tar (ustar, pax, GNU) and nothing else: no compression, so what is written is never
         * more than what was sent */
        archive_read_support_format_tar(a);
        archive_read_support_filter_none(a);
        unsigned code = 0;
        unsigned entries = 0;
        uint64_t total = 0;
        if (archive_read_open_memory(a, body, len) != ARCHIVE_OK) {
                code = mgr_reply_err(rp, 400, "invalid_argument", "body",
                        "the body is not an uncompressed tar archive (%s); send the skill directory as one: "
                        "tar -C DIR "
                        "-cf - .",
                        archive_error_string(a) ?: "unreadable");
                goto out;
        }
        for (;;) {
                struct archive_entry *en;
                int ar = archive_read_next_header(a, &en);
                if (ar == ARCHIVE_EOF)
                        break;
                if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
                        code = mgr_reply_err(rp, 400, "invalid_argument", "body",
                                "the body is not an uncompressed tar archive, or a damaged one (%s); send "
                                "the skill "
                                "directory as one: tar -C DIR -cf - .",
                                archive_error_string(a) ?: "unreadable");
                        goto out;
                }
                const char *name = archive_entry_pathname(en), *why = NULL;
                char rel[4096], shown[301];
                if (name && !printable_utf8(name)) {
                        /* the messages that name it (here, and the verification's) are JSON text */
                        size_t i = 0;
                        for (const char *p = name; *p && i < sizeof shown - 1; p++)
                                shown[i++] =
                                        (unsigned char) *p >= 0x20 && (unsigned char) *p < 0x7f ? *p : '?';
                        shown[i] = 0;
                        code = mgr_reply_err(rp, 400, "invalid_argument", "body",
                                "tar entry '%s': a name that is not printable UTF-8 (shown with ? for its "
                                "other bytes); name the skill's files in UTF-8",
                                shown);
                        goto out;
                }
                const char *r = entry_rel(name, rel, sizeof rel, &why);
                mode_t type = archive_entry_filetype(en);
                if (!why && archive_entry_hardlink(en))
                        why = "a hard link";
                else if (!why && type == AE_IFLNK)
                        why = "a symbolic link";
                else if (!why && type != AE_IFREG && type != AE_IFDIR)
                        why = "not a regular file or a directory (a device, fifo or socket)";
                if (why) {
                        code = mgr_reply_err(rp, 400, "invalid_argument", "body",
                                "tar entry '%.300s': %s; a skill holds regular files and directories only, "
                                "under its own directory",
                                name ? name : "", why);
                        goto out;
                }
                if (++entries > SKILL_ENTRIES_MAX) {
                        code = mgr_reply_err(rp, 400, "invalid_argument", "body", "more than %d tar entries",
                                SKILL_ENTRIES_MAX);
                        goto out;
                }
                if (!r) /* the root itself */
                        continue;
                int er = make_parents(dfd, rel);
                if (er >= 0 && type == AE_IFDIR)
                        er = mkdirat(dfd, rel, 0755) < 0 && errno != EEXIST ? -errno : 0;
                else if (er >= 0) {
                        la_int64_t sz = archive_entry_size(en);
                        total += sz > 0 ? (uint64_t) sz : 0;
                        if (total > SKILL_TAR_MAX) {
                                code = mgr_reply_err(rp, 413, "payload_too_large", "body",
                                        "the skill's files are over 64 MiB");
                                goto out;
                        }
                        /* an entry twice is refused (O_EXCL): which one would be verified? */
                        _cleanup_close_ int fd =
                                openat(dfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                                        (archive_entry_perm(en) & 0111) ? 0755 : 0644);
                        if (fd < 0 && errno == EEXIST) {
                                code = mgr_reply_err(rp, 400, "invalid_argument", "body",
                                        "tar entry '%.300s': given twice", name);
                                goto out;
                        }
                        er = fd < 0 ? -errno : 0;
                        char buf[65536];
                        for (la_ssize_t k; er >= 0 && (k = archive_read_data(a, buf, sizeof buf)) != 0;) {
                                if (k < 0) {
                                        code = mgr_reply_err(rp, 400, "invalid_argument", "body",
                                                "tar entry '%.300s': %s", name,
                                                archive_error_string(a) ?: "unreadable");
                                        goto out;
                                }
                                er = sbx_write_all(fd, buf, (size_t) k);
                        }
                }
                if (er < 0) {
                        code = mgr_reply_err(rp, 400, "invalid_argument", "body", "tar entry '%.300s': %s",
                                name, strerror(-er));
                        goto out;
                }
        }
out:
        archive_read_free(a);
        return code;
}

/* The directory that holds skill.yaml: dir itself (tar -C SKILL -cf - .) or its only
 * subdirectory (tar -cf - SKILL). */
static bool manifest_dir(const char *dir, char *buf, size_t n) {
        char p[PATH_MAX + 600];
        snprintf(p, sizeof p, "%s/skill.yaml", dir);
        if (access(p, F_OK) == 0) {
                snprintf(buf, n, "%s", dir);
                return true;
        }
        DIR *d = opendir(dir);
        if (!d)
                return false;
        int found = 0;
        char only[256] = "";
        for (struct dirent *de; (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                found++;
                snprintf(only, sizeof only, "%s", de->d_name);
        }
        closedir(d);
        if (found != 1)
                return false;
        snprintf(buf, n, "%s/%s", dir, only);
        snprintf(p, sizeof p, "%s/skill.yaml", buf);
        return access(p, F_OK) == 0;
}

/* Copy src to dst (new, mode 0644): the manifest kept beside the files it names. 0 or -errno. */
static int copy_file(const char *src, const char *dst) {
        _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (in < 0)
                return -errno;
        _cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (out < 0)
                return -errno;
        char buf[65536];
        for (;;) {
                ssize_t k = read(in, buf, sizeof buf);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return 0;
                int r = sbx_write_all(out, buf, (size_t) k);
                if (r < 0)
                        return r;
        }
}

/* ---- records ------------------------------------------------------------------------------- */

static json_t *load_record(sbx_mgr *m, const char *id, const char *tenant) {
        if (!mgr_valid_skill_id(id))
                return NULL;
        char p[PATH_MAX];
        skills_dir(m, p, sizeof p);
        size_t l = strlen(p);
        snprintf(p + l, sizeof p - l, "/%s/skill.json", id);
        json_error_t je;
        json_t *rec = json_load_file(p, 0, &je);
        if (rec && tenant && !streq(json_string_value(json_object_get(rec, "tenant")) ?: "", tenant)) {
                json_decref(rec);
                return NULL;
        }
        return rec;
}

/* The policy's trusted keys and the profile.skill limits the manifest may only narrow;
 * sbx_policy_load's error in e. */
static int skill_policy(sbx_mgr *m, sbx_policy **ret_pol, double *ret_mem, double *ret_tmo, sbx_error *e) {
        _cleanup_(sbx_policy_freep) sbx_policy *pol = NULL;
        _cleanup_(sbx_profile_freep) sbx_profile *base = NULL;
        int r = sbx_policy_load(m->policy_file, &pol, e);
        if (r < 0)
                return r;
        r = sbx_profile_load("profile.skill", &base, e);
        if (r < 0)
                return r;
        *ret_mem = base->limits.set[SBX_LIMIT_MEMORY_MB]
                           ? base->limits.value[SBX_LIMIT_MEMORY_MB]
                           : pol->mode_limits[SBX_MODE_BALANCED].value[SBX_LIMIT_MEMORY_MB];
        *ret_tmo = base->limits.set[SBX_LIMIT_TIMEOUT_S]
                           ? base->limits.value[SBX_LIMIT_TIMEOUT_S]
                           : pol->mode_limits[SBX_MODE_BALANCED].value[SBX_LIMIT_TIMEOUT_S];
        *ret_pol = TAKE_PTR(pol);
        return 0;
}

/* The verification's refusal, its paths made the skill's own: "DIR/skill.yaml:4:1: ..." is
 * "skill.yaml:4:1: ...", "DIR: unsigned ..." is "AS: unsigned ..." (DIR is the server's). */
static unsigned reply_verify_error(sbx_mgr_reply *rp, const sbx_error *e, const char *dir, const char *as) {
        char buf[1200], out[1200];
        const char *s = sbx_error_format(e, buf, sizeof buf);
        size_t dl = strlen(dir), o = 0;
        while (*s && o < sizeof out - 8) {
                if (strncmp(s, dir, dl) == 0 && s[dl] == '/') {
                        s += dl + 1;
                        continue;
                }
                if (strncmp(s, dir, dl) == 0) {
                        o += (size_t) snprintf(out + o, sizeof out - o, "%s", as);
                        if (o >= sizeof out)
                                o = sizeof out - 1;
                        s += dl;
                        continue;
                }
                out[o++] = *s++;
        }
        out[o] = 0;
        return mgr_reply_err(rp, 422, "skill_rejected", "body", "%s", out);
}

/* Verify the skill in src against the policy now, copying the verified bytes into the empty
 * directory staging, and derive its profile (YAML) into profile_path when not NULL. 0, or an HTTP
 * status with rp filled (422 naming the file or key). */
static unsigned verify_into(sbx_mgr *m, const char *src, const char *staging, const char *profile_path,
        sbx_skill **ret, sbx_mgr_reply *rp) {
        _cleanup_(sbx_policy_freep) sbx_policy *pol = NULL;
        _cleanup_(sbx_skill_freep) sbx_skill *s = NULL;
        _cleanup_free_ char *text = NULL;
        double mem = 0, tmo = 0;
        sbx_error e = {0};
        if (skill_policy(m, &pol, &mem, &tmo, &e) < 0) {
                char buf[1200];
                return mgr_reply_err(rp, 503, "unavailable", NULL, "the policy: %s",
                        sbx_error_format(&e, buf, sizeof buf));
        }
        if (sbx_skill_verify(src, pol->skill_keys, !pol->skill_unsigned_ok, staging, &s, &e) < 0 ||
                sbx_skill_profile(s, mem, tmo, &text, &e) < 0)
                return reply_verify_error(rp, &e, src, "skill");
        if (profile_path) {
                FILE *f = fopen(profile_path, "wxe");
                /* an exec that names no cwd runs in the skill's directory, as `skill run` does */
                if (!f || fputs(text, f) < 0 ||
                        (!strstr(text, "\ncwd:") && fputs("cwd: /workspace\n", f) < 0) || fclose(f) != 0)
                        return mgr_reply_err(
                                rp, 503, "unavailable", NULL, "%s: %s", profile_path, strerror(errno));
                /* what the policy allows (egress to allowed_hosts): checked as a create would */
                _cleanup_(sbx_config_freep) sbx_config *cfg = NULL;
                sbx_request rreq = {.profile = profile_path, .policy_file = m->policy_file};
                if (sbx_config_resolve(&rreq, &cfg, &e) < 0)
                        return reply_verify_error(rp, &e, profile_path, "the skill's profile");
        }
        *ret = TAKE_PTR(s);
        return 0;
}

/* ---- upload, list, get, delete -------------------------------------------------------------- */

static unsigned tenant_skills(sbx_mgr *m, const char *tenant) {
        char root[PATH_MAX];
        skills_dir(m, root, sizeof root);
        unsigned n = 0;
        DIR *d = opendir(root);
        for (struct dirent *de; d && (de = readdir(d));) {
                json_t *rec = load_record(m, de->d_name, tenant);
                n += rec != NULL;
                json_decref(rec);
        }
        if (d)
                closedir(d);
        return n;
}

unsigned sbx_ops_skill_upload(sbx_mgr *m, const sbx_caller *who, const char *ctype, const void *data,
        size_t len, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (len > SKILL_TAR_MAX)
                return mgr_reply_err(rp, 413, "payload_too_large", "body",
                        "the skill's tar is %zu bytes, over 64 MiB", len);
        if (ctype && !(strncmp(ctype, "application/x-tar", 17) == 0 ||
                             strncmp(ctype, "application/octet-stream", 24) == 0))
                return mgr_reply_err(rp, 415, "unsupported_media_type", "Content-Type",
                        "Content-Type: %.100s; send the skill directory as a tar (application/x-tar)",
                        ctype);
        if (len == 0)
                return mgr_reply_err(rp, 400, "invalid_argument", "body",
                        "an empty body; send the skill directory as a tar: tar -C DIR -cf - .");
        /* each is up to 64 MiB on the server's disk */
        if (tenant_skills(m, who->tenant) >= SKILLS_PER_TENANT_MAX)
                return mgr_reply_err(rp, 429, "quota_exceeded", "quota.skills",
                        "tenant '%s' has %d skills (the most a tenant may keep); delete one first",
                        who->tenant, SKILLS_PER_TENANT_MAX);
        char root[PATH_MAX], tmp[PATH_MAX], in[PATH_MAX + 8], files[PATH_MAX + 8], prof[PATH_MAX + 16],
                top[PATH_MAX + 260];
        skills_dir(m, root, sizeof root);
        if (mkdir(root, 0700) < 0 && errno != EEXIST)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "%s: %s", root, strerror(errno));
        snprintf(tmp, sizeof tmp, "%.4000s/.upload-XXXXXX", root);
        if (!mkdtemp(tmp))
                return mgr_reply_err(rp, 503, "unavailable", NULL, "%s: %s", root, strerror(errno));
        snprintf(in, sizeof in, "%s/in", tmp);
        snprintf(files, sizeof files, "%s/files", tmp);
        snprintf(prof, sizeof prof, "%s/profile.yaml", tmp);
        _cleanup_(sbx_skill_freep) sbx_skill *s = NULL;
        char id[32];
        unsigned code = 0;
        if (mkdir(in, 0700) < 0 || mkdir(files, 0755) < 0) {
                code = mgr_reply_err(rp, 503, "unavailable", NULL, "%s: %s", tmp, strerror(errno));
                goto fail;
        }
        if ((code = extract(data, len, in, rp)))
                goto fail;
        if (!manifest_dir(in, top, sizeof top)) {
                code = mgr_reply_err(rp, 422, "skill_rejected", "body",
                        "no skill.yaml at the tar's top (nor in its only directory); make the tar of the "
                        "skill directory: tar -C DIR -cf - .");
                goto fail;
        }
        if ((code = verify_into(m, top, files, prof, &s, rp)))
                goto fail;
        (void) unlink(prof); /* derived again at each create, with the policy of then */
        char msrc[PATH_MAX + 300], mdst[PATH_MAX + 32];
        snprintf(msrc, sizeof msrc, "%s/skill.yaml", top);
        snprintf(mdst, sizeof mdst, "%s/skill.yaml", files);
        int cr = copy_file(msrc, mdst);
        if (cr < 0) {
                code = mgr_reply_err(rp, 503, "unavailable", NULL, "%s: %s", mdst, strerror(-cr));
                goto fail;
        }
        (void) sbx_rm_rf(in);
        mgr_random_id("skl_", id, sizeof id);
        json_t *rec = json_object();
        json_object_set_new(rec, "id", json_string(id));
        json_object_set_new(rec, "name", json_string(s->name));
        json_object_set_new(rec, "version", json_string(s->version));
        json_object_set_new(rec, "digest", json_string(s->digest));
        json_object_set_new(rec, "key_id", s->key_id[0] ? json_string(s->key_id) : json_null());
        json_t *ep = json_array();
        for (char **a = s->entrypoint; a && *a; a++)
                json_array_append_new(ep, json_string(*a));
        json_object_set_new(rec, "entrypoint", ep);
        json_object_set_new(rec, "files", json_integer((json_int_t) strv_length(s->files)));
        json_object_set_new(rec, "tenant", json_string(who->tenant));
        json_object_set_new(rec, "created_at", mgr_time_json(mgr_now_ms()));
        char rpath[PATH_MAX + 16], final[PATH_MAX + 32];
        snprintf(rpath, sizeof rpath, "%s/skill.json", tmp);
        snprintf(final, sizeof final, "%s/%s", root, id);
        if (json_dump_file(rec, rpath, JSON_COMPACT) < 0 || rename(tmp, final) < 0) {
                json_decref(rec);
                code = mgr_reply_err(rp, 503, "unavailable", NULL, "cannot store the skill in %s: %s", root,
                        strerror(errno));
                goto fail;
        }
        char detail[300];
        snprintf(detail, sizeof detail, "%s@%s digest %s key %s", s->name, s->version, s->digest,
                s->key_id[0] ? s->key_id : "none");
        mgr_audit(m, who, "skill.upload", id, "ok", detail);
        sbx_log(SBX_LOG_INFO, "skill_uploaded", "skill", id, "name", s->name, "digest", s->digest, NULL);
        rp->code = 201;
        rp->json = rec;
        return 201;
fail:
        (void) sbx_rm_rf(tmp);
        if (code == 422 || code == 400) {
                const char *msg =
                        json_string_value(json_object_get(json_object_get(rp->json, "error"), "message"));
                mgr_audit(m, who, "skill.upload", "-", "refused", msg);
        }
        return code;
}

unsigned sbx_ops_skill_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        char root[PATH_MAX];
        skills_dir(m, root, sizeof root);
        json_t *items = json_array();
        DIR *d = opendir(root);
        for (struct dirent *de; d && (de = readdir(d));) {
                json_t *rec = load_record(m, de->d_name, who->tenant);
                if (rec)
                        json_array_append_new(items, rec);
        }
        if (d)
                closedir(d);
        /* oldest first: created_at is ISO 8601 UTC, ordered as text */
        size_t n = json_array_size(items);
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0; j--) {
                        json_t *a = json_array_get(items, j - 1), *b = json_array_get(items, j);
                        const char *ta = json_string_value(json_object_get(a, "created_at")) ?: "",
                                   *tb = json_string_value(json_object_get(b, "created_at")) ?: "";
                        if (strcmp(ta, tb) <= 0)
                                break;
                        json_incref(a);
                        json_array_set(items, j - 1, b);
                        json_array_set_new(items, j, a);
                }
        rp->code = 200;
        rp->json = json_pack("{s:o}", "items", items);
        return 200;
}

unsigned sbx_ops_skill_get(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        json_t *rec = load_record(m, id, who->tenant);
        if (!rec)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no skill '%.64s'", id);
        rp->code = 200;
        rp->json = rec;
        return 200;
}

unsigned sbx_ops_skill_delete(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        json_t *rec = load_record(m, id, who->tenant);
        if (!rec)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no skill '%.64s'", id);
        char root[PATH_MAX], dir[PATH_MAX + 32], gone[PATH_MAX + 48];
        skills_dir(m, root, sizeof root);
        snprintf(dir, sizeof dir, "%s/%s", root, id);
        /* out of sight at once (a rename), then removed: a get or create meanwhile sees none */
        snprintf(gone, sizeof gone, "%s/.deleted-%s", root, id);
        if (rename(dir, gone) < 0) {
                json_decref(rec);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "%s: %s", dir, strerror(errno));
        }
        (void) sbx_rm_rf(gone);
        mgr_audit(m, who, "skill.delete", id, "ok", json_string_value(json_object_get(rec, "digest")));
        rp->code = 200;
        rp->json = rec;
        return 200;
}

void mgr_skills_reconcile(sbx_mgr *m) {
        char root[PATH_MAX];
        skills_dir(m, root, sizeof root);
        DIR *d = opendir(root);
        for (struct dirent *de; d && (de = readdir(d));) {
                if (strncmp(de->d_name, ".upload-", 8) != 0 && strncmp(de->d_name, ".deleted-", 9) != 0)
                        continue;
                char p[PATH_MAX + 260];
                snprintf(p, sizeof p, "%s/%s", root, de->d_name);
                (void) sbx_rm_rf(p);
        }
        if (d)
                closedir(d);
}

/* ---- create {skill: ID} ------------------------------------------------------------------- */

/* The sandbox's user (another uid than the server's) reads every file and enters every
 * directory of the copy, whatever the server's umask made of the modes. */
static int readable(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        if (type == FTW_D || type == FTW_DP)
                (void) chmod(path, 0755);
        else if (type == FTW_F)
                (void) chmod(path, (st->st_mode & 0111) ? 0755 : 0644);
        return 0;
}

unsigned mgr_skill_prepare(sbx_mgr *m, const sbx_caller *who, const char *id, const char *sandbox_dir,
        json_t **ret_skill, sbx_mgr_reply *rp) {
        json_t *rec = load_record(m, id, who->tenant);
        if (!rec)
                return mgr_reply_err(rp, 404, "not_found", "skill", "no skill '%.64s'", id);
        char src[PATH_MAX + 64], ws[PATH_MAX + 16], prof[PATH_MAX + 16];
        skills_dir(m, src, sizeof src);
        size_t l = strlen(src);
        snprintf(src + l, sizeof src - l, "/%s/files", id);
        snprintf(ws, sizeof ws, "%s/workspace", sandbox_dir);
        snprintf(prof, sizeof prof, "%s/profile.yaml", sandbox_dir);
        /* the sandbox's user reads the workspace: the directory above it may be passed through */
        if ((mkdir(sandbox_dir, 0711) < 0 && errno != EEXIST) || chmod(sandbox_dir, 0711) < 0 ||
                mkdir(ws, 0755) < 0) {
                json_decref(rec);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "%s: %s", sandbox_dir, strerror(errno));
        }
        /* verified again, into the sandbox's own copy: the keys the policy trusts now decide, and
         * what runs is what was just verified */
        _cleanup_(sbx_skill_freep) sbx_skill *s = NULL;
        unsigned code = verify_into(m, src, ws, prof, &s, rp);
        if (code) {
                json_decref(rec);
                return code;
        }
        (void) nftw(ws, readable, 16, FTW_PHYS);
        json_t *sk = json_object();
        static const char *const keep[] = {"id", "name", "version", "digest", "key_id"};
        for (size_t i = 0; i < ELEMENTSOF(keep); i++)
                json_object_set(sk, keep[i], json_object_get(rec, keep[i]) ?: json_null());
        json_decref(rec);
        *ret_skill = sk;
        return 0;
}

/* ---- a skill's runs in the audit log ------------------------------------------------------ */

void mgr_skill_stamp_report(const box *b, json_t *rep) {
        if (!b->skill || !json_is_object(rep) || json_is_object(json_object_get(rep, "skill")))
                return;
        json_t *k = json_object_get(b->skill, "key_id");
        json_object_set_new(rep, "skill",
                json_pack("{s:O?, s:O?, s:O?, s:O}", "name", json_object_get(b->skill, "name"), "version",
                        json_object_get(b->skill, "version"), "digest", json_object_get(b->skill, "digest"),
                        "key_id", k ? k : json_null()));
}

void mgr_skill_audit_exec(sbx_mgr *m, const box *b, const char *exec_id, json_t *rep) {
        if (!b->skill)
                return;
        char *t = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&t, &n);
        if (!f)
                return;
        json_t *code = json_object_get(json_object_get(rep, "exit"), "code"),
               *sig = json_object_get(json_object_get(rep, "exit"), "signal");
        fprintf(f, "exec %s skill %s %s@%s digest %s: ", exec_id,
                json_string_value(json_object_get(b->skill, "id")) ?: "?",
                json_string_value(json_object_get(b->skill, "name")) ?: "?",
                json_string_value(json_object_get(b->skill, "version")) ?: "?",
                json_string_value(json_object_get(b->skill, "digest")) ?: "?");
        if (json_is_integer(code))
                fprintf(f, "exit %" JSON_INTEGER_FORMAT, json_integer_value(code));
        else if (json_is_integer(sig))
                fprintf(f, "signal %" JSON_INTEGER_FORMAT, json_integer_value(sig));
        else
                fputs("no exit", f);
        /* what it tried that the fences stopped (kills, network attempts, ...): kind, action,
         * count and what it was at (the host, the path, the syscall) */
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(rep, "violations"), i, v) {
                if (i >= 16) {
                        fprintf(f, "; %zu more violations",
                                json_array_size(json_object_get(rep, "violations")) - i);
                        break;
                }
                fprintf(f, "; %s %s x%" JSON_INTEGER_FORMAT,
                        json_string_value(json_object_get(v, "kind")) ?: "?",
                        json_string_value(json_object_get(v, "action")) ?: "?",
                        json_integer_value(json_object_get(v, "count")));
                const char *k;
                json_t *d;
                json_object_foreach(json_object_get(v, "detail"), k, d) {
                        if (json_is_string(d))
                                fprintf(f, " %s=%.200s", k, json_string_value(d));
                        else if (json_is_integer(d))
                                fprintf(f, " %s=%" JSON_INTEGER_FORMAT, k, json_integer_value(d));
                }
        }
        json_t *eg = json_object_get(rep, "egress");
        if (json_is_object(eg))
                fprintf(f, "; egress allowed %" JSON_INTEGER_FORMAT " refused %" JSON_INTEGER_FORMAT,
                        json_integer_value(json_object_get(eg, "allowed")),
                        json_integer_value(json_object_get(eg, "refused")));
        json_array_foreach(json_object_get(rep, "services"), i, v) fprintf(f,
                "; service %s x%" JSON_INTEGER_FORMAT, json_string_value(json_object_get(v, "name")) ?: "?",
                json_integer_value(json_object_get(v, "count")));
        if (fclose(f) != 0) {
                free(t);
                return;
        }
        const char *status = json_string_value(json_object_get(rep, "status"));
        mgr_audit(m, NULL, "skill.exec.end", b->id, status ? status : "unknown", t);
        free(t);
}
