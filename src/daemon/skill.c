/* skill.c — see skill.h. */
#include "daemon/skill.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/io.h"
#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "policy/yaml-util.h"

#define MANIFEST "skill.yaml"
#define FILES_MAX 4096
#define FILE_MAX_BYTES (256LL << 20)
#define SECRET_MAGIC "sandboxer-skill-key-v1 ed25519 "
#define PUBLIC_MAGIC "sandboxer-skill-pub-v1 ed25519 "

sbx_skill *sbx_skill_free(sbx_skill *s) {
        if (!s)
                return NULL;
        strv_free(s->entrypoint);
        strv_free(s->files);
        strv_free(s->allowed_hosts);
        json_decref(s->doc);
        free(s);
        return NULL;
}

static int read_text(const char *path, char **ret, size_t *ret_len, size_t max) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EISDIR;
        if ((size_t) st.st_size > max)
                return -EFBIG;
        char *b = malloc((size_t) st.st_size + 1);
        if (!b)
                return -ENOMEM;
        size_t n = 0;
        while (n < (size_t) st.st_size) {
                ssize_t k = read(fd, b + n, (size_t) st.st_size - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                n += (size_t) k;
        }
        b[n] = 0;
        *ret = b;
        *ret_len = n;
        return 0;
}

/* ---- the manifest ------------------------------------------------------------------------- */

static bool good_name(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 64)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
                            *p == '-'))
                        return false;
        return true;
}

/* A path inside the skill: relative, no "." or ".." components, no empty ones. */
static bool good_relpath(const char *s) {
        if (!*s || *s == '/' || strlen(s) > 1024)
                return false;
        for (const char *p = s; *p;) {
                const char *slash = strchr(p, '/');
                size_t l = slash ? (size_t) (slash - p) : strlen(p);
                if (l == 0 || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p += l + (slash ? 1 : 0);
                if (slash && !*p)
                        return false;
        }
        return true;
}

static bool good_hex(const char *s, size_t n) {
        if (strlen(s) != n)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

typedef struct file_ctx {
        sbx_skill *s;
        json_t *obj;
} file_ctx;

static int file_one(yctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, const char *path, void *ud) {
        file_ctx *f = ud;
        if (!good_relpath(key) || streq(key, MANIFEST))
                return yerr(c, k, "%s: \"%s\" is not a relative path inside the skill (no \"..\", not %s)",
                        path, key, MANIFEST);
        _cleanup_free_ char *h = NULL, *entry = NULL;
        int r = yget_string(c, v, path, "a sha256 (64 lowercase hex digits)", &h);
        if (r < 0)
                return r;
        if (!good_hex(h, 64))
                return yerr(c, v, "%s.%s: \"%s\" is not a sha256 (64 lowercase hex digits)", path, key, h);
        if (asprintf(&entry, "%s=%s", key, h) < 0 || strv_extend(&f->s->files, entry) < 0 ||
                json_object_set_new(f->obj, key, json_string(h)) < 0)
                return -ENOMEM;
        return 0;
}

static json_t *json_number(double v) {
        return v == floor(v) && fabs(v) < 9e15 ? json_integer((json_int_t) v) : json_real(v);
}

static json_t *json_strv(char *const *l) {
        json_t *a = json_array();
        for (char *const *i = l; a && i && *i; i++)
                if (json_array_append_new(a, json_string(*i)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static int parse_sandbox(yctx *c, yaml_node_t *n, sbx_skill *s, json_t *obj) {
        static const char *const keys[] = {
                "memory_mb", "timeout_s", "allow_spawn", "network", "allowed_hosts"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r = ymap(c, n, "sandbox", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                if ((r = yget_number(c, v[0], "sandbox.memory_mb", "a positive number of MiB", true, false,
                             1 << 20, &s->memory_mb)) < 0)
                        return r;
                s->has_memory = true;
                json_object_set_new(obj, "memory_mb", json_number(s->memory_mb));
        }
        if (v[1]) {
                if ((r = yget_number(c, v[1], "sandbox.timeout_s", "a positive number of seconds", false,
                             false, 86400, &s->timeout_s)) < 0)
                        return r;
                s->has_timeout = true;
                json_object_set_new(obj, "timeout_s", json_number(s->timeout_s));
        }
        if (v[2]) {
                if ((r = yget_bool(c, v[2], "sandbox.allow_spawn", &s->allow_spawn)) < 0)
                        return r;
                s->has_allow_spawn = true;
                json_object_set_new(obj, "allow_spawn", json_boolean(s->allow_spawn));
        }
        if (v[3]) {
                _cleanup_free_ char *net = NULL;
                if ((r = yget_string(c, v[3], "sandbox.network", "none or allowlist", &net)) < 0)
                        return r;
                if (!streq(net, "none") && !streq(net, "allowlist"))
                        return yerr(c, v[3], "sandbox.network: expected none or allowlist, got \"%s\"", net);
                s->network_allowlist = streq(net, "allowlist");
                json_object_set_new(obj, "network", json_string(net));
        }
        if (v[4]) {
                if ((r = yget_strv(c, v[4], "sandbox.allowed_hosts", "egress rules (host names)", 256, NULL,
                             &s->allowed_hosts)) < 0)
                        return r;
                json_object_set_new(obj, "allowed_hosts", json_strv(s->allowed_hosts));
        }
        if (strv_length(s->allowed_hosts) > 0 && !s->network_allowlist)
                return yerr(c, v[4], "sandbox.allowed_hosts: needs network: allowlist");
        return 0;
}

static int parse_manifest(yctx *c, sbx_skill *s, json_t *doc, json_t **ret_sig) {
        static const char *const keys[] = {
                "name", "version", "entrypoint", "files", "sandbox", "signature", "description"};
        yaml_node_t *root = yctx_root(c), *v[ELEMENTSOF(keys)];
        char got[96];
        int r;
        if (!root || root->type != YAML_MAPPING_NODE)
                return yerr(c, root,
                        "a skill manifest is a mapping (name, version, entrypoint, files, ...), got %s",
                        root ? ynode_describe(root, got, sizeof got) : "nothing");
        if ((r = ymap(c, root, "", keys, ELEMENTSOF(keys), v)) < 0)
                return r;
        for (size_t i = 0; i < 3; i++)
                if (!v[i])
                        return yerr(c, root, "missing required key '%s'", keys[i]);
        _cleanup_free_ char *name = NULL, *version = NULL, *desc = NULL;
        if ((r = yget_string(c, v[0], "name", "a name of [a-z0-9._-]", &name)) < 0)
                return r;
        if (!good_name(name))
                return yerr(c, v[0], "name: \"%s\" is not a skill name (1 to 64 of a-z, 0-9, '.', '_', '-')",
                        name);
        if ((r = yget_string(c, v[1], "version", "a version such as \"1.0.0\"", &version)) < 0)
                return r;
        if (!good_name(version))
                return yerr(c, v[1], "version: \"%s\" is not a version (1 to 64 of a-z, 0-9, '.', '_', '-')",
                        version);
        snprintf(s->name, sizeof s->name, "%s", name);
        snprintf(s->version, sizeof s->version, "%s", version);
        if ((r = yget_strv(
                     c, v[2], "entrypoint", "the command and its arguments", 256, NULL, &s->entrypoint)) < 0)
                return r;
        if (strv_length(s->entrypoint) == 0)
                return yerr(c, v[2], "entrypoint: empty (expected the command and its arguments)");
        json_object_set_new(doc, "name", json_string(name));
        json_object_set_new(doc, "version", json_string(version));
        if (v[6]) {
                if ((r = yget_string(c, v[6], "description", "a sentence", &desc)) < 0)
                        return r;
                json_object_set_new(doc, "description", json_string(desc));
        }
        json_object_set_new(doc, "entrypoint", json_strv(s->entrypoint));
        json_t *files = json_object();
        json_object_set_new(doc, "files", files);
        s->files = calloc(1, sizeof(char *));
        if (!s->files)
                return -ENOMEM;
        if (v[3] && ynode_kind(v[3]) != YK_NULL &&
                (r = ymap_each(c, v[3], "files", FILES_MAX, file_one, &(file_ctx){s, files})) < 0)
                return r;
        if (v[4]) {
                json_t *sb = json_object();
                json_object_set_new(doc, "sandbox", sb);
                if ((r = parse_sandbox(c, v[4], s, sb)) < 0)
                        return r;
        }
        if (v[5]) {
                static const char *const sk[] = {"key_id", "ed25519"};
                yaml_node_t *sv[2];
                _cleanup_free_ char *kid = NULL, *sig = NULL;
                if ((r = ymap(c, v[5], "signature", sk, 2, sv)) < 0)
                        return r;
                if (!sv[0] || !sv[1])
                        return yerr(c, v[5], "signature: needs key_id and ed25519");
                if ((r = yget_string(c, sv[0], "signature.key_id", "16 hex digits", &kid)) < 0 ||
                        (r = yget_string(c, sv[1], "signature.ed25519", "a base64 signature", &sig)) < 0)
                        return r;
                if (!good_hex(kid, 16))
                        return yerr(
                                c, sv[0], "signature.key_id: \"%s\" is not a key id (16 hex digits)", kid);
                snprintf(s->key_id, sizeof s->key_id, "%s", kid);
                *ret_sig = json_pack("{s:s, s:s}", "key_id", kid, "ed25519", sig);
        }
        return 0;
}

static int canonical(json_t *doc, char **ret) {
        char *t = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

static int load(const char *dir, sbx_skill **ret, json_t **ret_sig, sbx_error *e) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_text(path, &text, &len, YAML_MAX_INPUT);
        if (r < 0)
                return sbx_error_set(e, -r, "skill", "%s: %s", path,
                        r == -ENOENT ? "no such file (a skill is a directory with a skill.yaml)"
                                     : strerror(-r));
        _cleanup_(sbx_skill_freep) sbx_skill *s = calloc(1, sizeof *s);
        if (!s || !(s->doc = json_object()))
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        yctx c = {0};
        if ((r = yctx_load(&c, text, len, path, e)) >= 0) {
                r = parse_manifest(&c, s, s->doc, ret_sig);
                if (r == -ENOMEM)
                        sbx_error_set(e, ENOMEM, "skill", "out of memory");
        }
        yctx_done(&c);
        if (r < 0)
                return r;
        _cleanup_free_ char *canon = NULL;
        if (canonical(s->doc, &canon) < 0)
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        sha256_hex(canon, strlen(canon), s->digest);
        *ret = TAKE_PTR(s);
        return 0;
}

int sbx_skill_load(const char *dir, sbx_skill **ret, sbx_error *e) {
        json_t *sig = NULL;
        int r = load(dir, ret, &sig, e);
        json_decref(sig);
        return r;
}

/* ---- the files ------------------------------------------------------------------------------ */

/* Every regular file under dir (relative paths, sorted), skill.yaml left out; anything else (a
 * symlink, a device, a fifo) is refused by name. */
static int walk(const char *root, const char *rel, char ***list, sbx_error *e) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return sbx_error_set(e, errno, "skill", "%s: %m", path);
        DIR *d = fdopendir(TAKE_FD(fd));
        if (!d)
                return sbx_error_set(e, errno, "skill", "%s: %m", path);
        int r = 0;
        for (struct dirent *de; r >= 0 && (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                char sub[4096];
                snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        r = sbx_error_set(e, errno, "skill", "%s: %m", sub);
                else if (S_ISDIR(st.st_mode))
                        r = walk(root, sub, list, e);
                else if (!S_ISREG(st.st_mode))
                        r = sbx_error_set(e, EBADMSG, "skill",
                                "%s: not a regular file (a skill holds files and directories only: no "
                                "symlinks, devices or fifos)",
                                sub);
                else if (!streq(sub, MANIFEST)) {
                        if (strv_length(*list) >= FILES_MAX)
                                r = sbx_error_set(e, E2BIG, "skill", "more than %d files", FILES_MAX);
                        else if (strv_extend(list, sub) < 0)
                                r = sbx_error_set(e, ENOMEM, "skill", "out of memory");
                }
        }
        closedir(d);
        return r;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The sha256 of root/rel, read once; copied to staging/rel on the way when staging. */
static int hash_file(const char *root, const char *rel, const char *staging, char hex[65], sbx_error *e) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, rel);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return sbx_error_set(e, errno == ENOENT ? EBADMSG : errno, "skill", "%s: %s", rel,
                        errno == ENOENT ? "listed in the manifest but missing" : strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return sbx_error_set(e, EBADMSG, "skill", "%s: not a regular file", rel);
        if (st.st_size > FILE_MAX_BYTES)
                return sbx_error_set(
                        e, EFBIG, "skill", "%s: larger than %lld MiB", rel, FILE_MAX_BYTES >> 20);
        _cleanup_close_ int out = -EBADF;
        if (staging) {
                char dst[4096];
                snprintf(dst, sizeof dst, "%s/%s", staging, rel);
                for (char *p = strchr(dst + strlen(staging) + 1, '/'); p; p = strchr(p + 1, '/')) {
                        *p = 0;
                        (void) mkdir(dst, 0755);
                        *p = '/';
                }
                out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, st.st_mode & 0755);
                if (out < 0)
                        return sbx_error_set(e, errno, "skill", "staging %s: %m", rel);
        }
        sha256_ctx c;
        sha256_init(&c);
        char buf[65536];
        for (;;) {
                ssize_t k = read(fd, buf, sizeof buf);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return sbx_error_set(e, errno, "skill", "%s: %m", rel);
                if (k == 0)
                        break;
                sha256_update(&c, buf, (size_t) k);
                if (out >= 0 && sbx_write_all(out, buf, (size_t) k) < 0)
                        return sbx_error_set(e, errno, "skill", "staging %s: %m", rel);
        }
        uint8_t d[SHA256_DIGEST_SIZE];
        sha256_final(&c, d);
        for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
                snprintf(hex + 2 * i, 3, "%02x", d[i]);
        return 0;
}

/* ---- keys ------------------------------------------------------------------------------------ */

static void key_id_of(const unsigned char pk[crypto_sign_PUBLICKEYBYTES], char id[17]) {
        char hex[65];
        sha256_hex(pk, crypto_sign_PUBLICKEYBYTES, hex);
        memcpy(id, hex, 16);
        id[16] = 0;
}

static int decode_exact(const char *b64, void *out, size_t n) {
        _cleanup_free_ char *raw = NULL;
        size_t len = 0;
        if (sbx_base64_decode(b64, strlen(b64), false, &raw, &len) < 0 || len != n)
                return -EINVAL;
        memcpy(out, raw, n);
        return 0;
}

int sbx_skill_keygen(const char *secret_path, char key_id[17], sbx_error *e) {
        if (sodium_init() < 0)
                return sbx_error_set(e, EIO, "skill", "libsodium cannot start");
        unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES],
                seed[crypto_sign_SEEDBYTES];
        randombytes_buf(seed, sizeof seed);
        crypto_sign_seed_keypair(pk, sk, seed);
        key_id_of(pk, key_id);
        _cleanup_free_ char *s64 = sbx_base64_encode(seed, sizeof seed),
                            *p64 = sbx_base64_encode(pk, sizeof pk);
        sodium_memzero(seed, sizeof seed);
        sodium_memzero(sk, sizeof sk);
        if (!s64 || !p64)
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        char pub[4096];
        snprintf(pub, sizeof pub, "%s.pub", secret_path);
        _cleanup_close_ int fd =
                open(secret_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return sbx_error_set(e, errno, "skill", "%s: %m%s", secret_path,
                        errno == EEXIST ? " (a key is never overwritten: choose another path)" : "");
        char line[256];
        int n = snprintf(line, sizeof line, SECRET_MAGIC "%s\n", s64);
        sodium_memzero(s64, strlen(s64));
        int r = sbx_write_all(fd, line, (size_t) n);
        sodium_memzero(line, sizeof line);
        if (r < 0)
                return sbx_error_set(e, -r, "skill", "%s: %s", secret_path, strerror(-r));
        _cleanup_close_ int pfd = open(pub, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (pfd < 0)
                return sbx_error_set(e, errno, "skill", "%s: %m", pub);
        n = snprintf(line, sizeof line, PUBLIC_MAGIC "%s %s\n", key_id, p64);
        if ((r = sbx_write_all(pfd, line, (size_t) n)) < 0)
                return sbx_error_set(e, -r, "skill", "%s: %s", pub, strerror(-r));
        return 0;
}

static int read_secret(const char *path, unsigned char pk[crypto_sign_PUBLICKEYBYTES],
        unsigned char sk[crypto_sign_SECRETKEYBYTES], sbx_error *e) {
        _cleanup_free_ char *t = NULL;
        size_t len;
        int r = read_text(path, &t, &len, 4096);
        if (r < 0)
                return sbx_error_set(e, -r, "skill", "%s: %s", path, strerror(-r));
        unsigned char seed[crypto_sign_SEEDBYTES];
        char *nl = strchr(t, '\n');
        if (nl)
                *nl = 0;
        if (strncmp(t, SECRET_MAGIC, strlen(SECRET_MAGIC)) != 0 ||
                decode_exact(t + strlen(SECRET_MAGIC), seed, sizeof seed) < 0) {
                sodium_memzero(t, len);
                return sbx_error_set(e, EINVAL, "skill",
                        "%s: not a sandboxer skill key (made by 'sandboxer skill keygen')", path);
        }
        sodium_memzero(t, len);
        crypto_sign_seed_keypair(pk, sk, seed);
        sodium_memzero(seed, sizeof seed);
        return 0;
}

/* A trusted public key file: its id and key. */
static int read_public(
        const char *path, char id[17], unsigned char pk[crypto_sign_PUBLICKEYBYTES], sbx_error *e) {
        _cleanup_free_ char *t = NULL;
        size_t len;
        int r = read_text(path, &t, &len, 4096);
        if (r < 0)
                return sbx_error_set(e, -r, "skill", "trusted key %s: %s", path, strerror(-r));
        char kid[17] = "", b64[128] = "";
        if (strncmp(t, PUBLIC_MAGIC, strlen(PUBLIC_MAGIC)) != 0 ||
                sscanf(t + strlen(PUBLIC_MAGIC), "%16s %127s", kid, b64) != 2 ||
                decode_exact(b64, pk, 32) < 0)
                return sbx_error_set(e, EINVAL, "skill",
                        "trusted key %s: not a sandboxer skill public key (the .pub that 'sandboxer skill "
                        "keygen' writes)",
                        path);
        key_id_of(pk, id);
        if (!streq(id, kid))
                return sbx_error_set(
                        e, EINVAL, "skill", "trusted key %s: its id says %s, its key is %s", path, kid, id);
        return 0;
}

/* ---- writing the manifest back ------------------------------------------------------------ */

static void emit_value(FILE *f, json_t *v) {
        char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
        fputs(t ? t : "null", f);
        free(t);
}

/* YAML that is also what sandboxer reads back the same: scalars as JSON (a valid YAML flow
 * scalar), lists as flow sequences, mappings in blocks. */
static void emit(FILE *f, json_t *obj, int indent) {
        const char *k;
        json_t *v;
        json_object_foreach(obj, k, v) {
                fprintf(f, "%*s", indent, "");
                json_t *key = json_string(k);
                if (good_name(k) && !strchr(k, '.'))
                        fputs(k, f);
                else
                        emit_value(f, key);
                json_decref(key);
                if (json_is_object(v) && json_object_size(v) > 0) {
                        fputs(":\n", f);
                        emit(f, v, indent + 2);
                } else {
                        fputs(": ", f);
                        emit_value(f, v);
                        fputc('\n', f);
                }
        }
}

static int sign_with(
        const char *dir, const unsigned char *pk, const unsigned char *sk, sbx_skill **ret, sbx_error *e) {
        _cleanup_(sbx_skill_freep) sbx_skill *s = NULL;
        int r = sbx_skill_load(dir, &s, e);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **list = calloc(1, sizeof(char *));
        if (!list)
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        if ((r = walk(dir, "", &list, e)) < 0)
                return r;
        qsort(list, strv_length(list), sizeof *list, cmp_str);
        json_t *files = json_object();
        if (!files || json_object_set_new(s->doc, "files", files) < 0)
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        strv_free(s->files);
        if (!(s->files = calloc(1, sizeof(char *))))
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        for (char **i = list; *i; i++) {
                char hex[65];
                _cleanup_free_ char *entry = NULL;
                if ((r = hash_file(dir, *i, NULL, hex, e)) < 0)
                        return r;
                if (json_object_set_new(files, *i, json_string(hex)) < 0 ||
                        asprintf(&entry, "%s=%s", *i, hex) < 0 || strv_extend(&s->files, entry) < 0)
                        return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        }
        _cleanup_free_ char *canon = NULL;
        if (canonical(s->doc, &canon) < 0)
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        sha256_hex(canon, strlen(canon), s->digest);
        unsigned char sig[crypto_sign_BYTES];
        crypto_sign_detached(sig, NULL, (const unsigned char *) canon, strlen(canon), sk);
        key_id_of(pk, s->key_id);
        _cleanup_free_ char *sig64 = sbx_base64_encode(sig, sizeof sig);
        json_t *out_doc = json_deep_copy(s->doc);
        if (!sig64 || !out_doc ||
                json_object_set_new(out_doc, "signature",
                        json_pack("{s:s, s:s}", "key_id", s->key_id, "ed25519", sig64)) < 0) {
                json_decref(out_doc);
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        }
        char path[4096], tmp[4200];
        snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
        snprintf(tmp, sizeof tmp, "%s.sign-%d", path, (int) getpid());
        FILE *f = fopen(tmp, "wxe");
        if (!f) {
                json_decref(out_doc);
                return sbx_error_set(e, errno, "skill", "%s: %m", tmp);
        }
        fprintf(f, "# signed by 'sandboxer skill sign' (key %s): edit, then sign again\n", s->key_id);
        emit(f, out_doc, 0);
        json_decref(out_doc);
        if (fclose(f) != 0 || rename(tmp, path) < 0) {
                r = sbx_error_set(e, errno, "skill", "%s: %m", path);
                (void) unlink(tmp);
                return r;
        }
        if (ret)
                *ret = TAKE_PTR(s);
        return 0;
}

int sbx_skill_sign(const char *dir, const char *secret_path, sbx_skill **ret, sbx_error *e) {
        if (sodium_init() < 0)
                return sbx_error_set(e, EIO, "skill", "libsodium cannot start");
        unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
        int r = read_secret(secret_path, pk, sk, e);
        if (r >= 0)
                r = sign_with(dir, pk, sk, ret, e);
        sodium_memzero(sk, sizeof sk);
        return r;
}

/* ---- verifying ---------------------------------------------------------------------------- */

int sbx_skill_verify(const char *dir, char *const *trusted_keys, bool require_signature, const char *staging,
        sbx_skill **ret, sbx_error *e) {
        if (sodium_init() < 0)
                return sbx_error_set(e, EIO, "skill", "libsodium cannot start");
        json_t *sigobj = NULL;
        _cleanup_(sbx_skill_freep) sbx_skill *s = NULL;
        int r = load(dir, &s, &sigobj, e);
        if (r < 0)
                return r;
        /* the signature over the manifest, first: a changed manifest is caught here */
        if (!sigobj) {
                if (require_signature)
                        return sbx_error_set(e, EPERM, "skill",
                                "%s: unsigned (no signature: in skill.yaml), and the policy requires a "
                                "signature (skills.require_signature); sign it with 'sandboxer skill sign'",
                                dir);
        } else {
                const char *b64 = json_string_value(json_object_get(sigobj, "ed25519"));
                unsigned char sig[crypto_sign_BYTES], pk[crypto_sign_PUBLICKEYBYTES];
                bool have_key = false;
                for (char *const *k = trusted_keys; k && *k && !have_key; k++) {
                        char id[17];
                        if ((r = read_public(*k, id, pk, e)) < 0) {
                                json_decref(sigobj);
                                return r;
                        }
                        have_key = streq(id, s->key_id);
                }
                if (!have_key) {
                        json_decref(sigobj);
                        return sbx_error_set(e, EPERM, "skill",
                                "%s: signed by key %s, which is not a trusted key (the policy's "
                                "skills.trusted_keys)",
                                dir, s->key_id);
                }
                _cleanup_free_ char *canon = NULL;
                bool good = b64 && decode_exact(b64, sig, sizeof sig) == 0 &&
                            canonical(s->doc, &canon) == 0 &&
                            crypto_sign_verify_detached(
                                    sig, (const unsigned char *) canon, strlen(canon), pk) == 0;
                json_decref(sigobj);
                if (!good)
                        return sbx_error_set(e, EPERM, "skill",
                                "%s: bad signature: skill.yaml does not match what key %s signed (changed "
                                "after signing?)",
                                dir, s->key_id);
        }
        /* then every file, as listed, and nothing else */
        _cleanup_strv_free_ char **list = calloc(1, sizeof(char *));
        if (!list)
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        if ((r = walk(dir, "", &list, e)) < 0)
                return r;
        for (char **i = list; *i; i++) {
                bool listed = false;
                size_t l = strlen(*i);
                /* "path=sha256": the hash follows the last '=' (a path may hold one) */
                STRV_FOREACH(f, s->files)
                        listed =
                                listed || ((size_t) (strrchr(*f, '=') - *f) == l && strncmp(*f, *i, l) == 0);
                if (!listed)
                        return sbx_error_set(
                                e, EBADMSG, "skill", "%s: not listed in the manifest (an extra file)", *i);
        }
        STRV_FOREACH(f, s->files) {
                char *eq = strrchr(*f, '=');
                *eq = 0;
                char hex[65];
                r = hash_file(dir, *f, staging, hex, e);
                if (r >= 0 && !streq(hex, eq + 1))
                        r = sbx_error_set(e, EBADMSG, "skill",
                                "%s: changed: its sha256 is %s, the manifest says %s", *f, hex, eq + 1);
                *eq = '=';
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

/* ---- the sandbox -------------------------------------------------------------------------- */

int sbx_skill_profile(
        const sbx_skill *s, double base_memory_mb, double base_timeout_s, char **ret, sbx_error *e) {
        if (s->has_memory && base_memory_mb > 0 && s->memory_mb > base_memory_mb)
                return sbx_error_set(e, EPERM, "skill",
                        "%s: sandbox.memory_mb %g is more than profile.skill allows (%g)", s->name,
                        s->memory_mb, base_memory_mb);
        if (s->has_timeout && base_timeout_s > 0 && s->timeout_s > base_timeout_s)
                return sbx_error_set(e, EPERM, "skill",
                        "%s: sandbox.timeout_s %g is more than profile.skill allows (%g)", s->name,
                        s->timeout_s, base_timeout_s);
        if (s->has_allow_spawn && s->allow_spawn)
                return sbx_error_set(e, EPERM, "skill",
                        "%s: sandbox.allow_spawn: true is more than profile.skill allows (no new processes)",
                        s->name);
        char *t = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&t, &n);
        if (!f)
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        fprintf(f, "id: skill.%s\nversion: \"1.0.0\"\nextends: profile.skill\non_violation: kill\n",
                s->name);
        if (s->has_memory || s->has_timeout) {
                fputs("limits:\n", f);
                if (s->has_memory)
                        fprintf(f, "  memory_mb: %.17g\n", s->memory_mb);
                if (s->has_timeout)
                        fprintf(f, "  timeout_s: %.17g\n", s->timeout_s);
        }
        fputs("network:\n  egress: [", f);
        for (char **h = s->network_allowlist ? s->allowed_hosts : NULL; h && *h; h++) {
                json_t *j = json_string(*h);
                if (h != s->allowed_hosts)
                        fputs(", ", f);
                emit_value(f, j);
                json_decref(j);
        }
        fputs("]\nworkspace:\n  access: ro\n", f);
        if (fclose(f) != 0) {
                free(t);
                return sbx_error_set(e, ENOMEM, "skill", "out of memory");
        }
        *ret = t;
        return 0;
}
