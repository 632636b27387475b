/* parse-cache.c — policy and profile files as they parsed, kept in the cache directory for the
 * next runs.
 *
 * A site policy (/etc/sandboxer/policy.yaml, or --policy) and a profile file are parsed at every
 * run: libyaml's document load and our walk of it took 0.12 ms for the 1.1 KB default policy and
 * 0.06 ms for a 200-byte profile in a fresh process on the development VM — a tenth of what
 * sandboxer adds to a bwrap run. The result depends on the file's bytes, its name (error
 * positions, source_file) and the code that parsed it (the built-in policy a file is laid over,
 * the structures' layout), nothing else: an entry is keyed by all three (sbx_code_identity()),
 * so an edited file, another path or a rebuild misses. Only successful parses are kept: a file
 * with an error is parsed again, for the exact message.
 *
 * An entry: a header (magic, kind, the structure's size, the payload's length and SHA-256), then
 * the payload: the structure's bytes with its pointer fields cleared, then those fields in the
 * order of the table below — a string as u32 length+1 (0: NULL) and its bytes, a list as u32
 * count+1 (0: NULL) and its strings, the environment as name/value strings (n_env of them, a
 * field of the structure). The structure's bytes are this build's own layout (the key says so).
 * A damaged or truncated entry fails its digest or its bounds and is parsed again; one that is
 * not ours alone (owner, mode) is not read (sbx_cache_read()).
 *
 * Every pointer field must be in the table: tests/unit/test-policy.c reads each built-in back
 * after freeing the original, so a field copied as a raw pointer is a use after free there. */
#include "policy/parse-cache.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cache.h"
#include "basic/sha256.h"
#include "basic/strv.h"

#define ENTRY_MAX (1024 * 1024)
#define MAGIC "SBXPARS1"

typedef enum ptr_kind { P_STR, P_STRV, P_ENV } ptr_kind;
typedef struct ptr_field {
        size_t off;
        ptr_kind kind;
} ptr_field;

#define PF(type, field, kind)                                                                               \
        { offsetof(type, field), kind }
static const ptr_field profile_ptrs[] = {
        PF(sbx_profile, id, P_STR),
        PF(sbx_profile, version, P_STR),
        PF(sbx_profile, extends, P_STR),
        PF(sbx_profile, source_file, P_STR),
        PF(sbx_profile, egress, P_STRV),
        PF(sbx_profile, egress_deny, P_STRV),
        PF(sbx_profile, net_services, P_STRV),
        PF(sbx_profile, ws_path, P_STR),
        PF(sbx_profile, ws_mount, P_STR),
        PF(sbx_profile, fs_home, P_STR),
        PF(sbx_profile, user, P_STR),
        PF(sbx_profile, fs_read, P_STRV),
        PF(sbx_profile, fs_write, P_STRV),
        PF(sbx_profile, fs_exec, P_STRV),
        PF(sbx_profile, cmd_allow, P_STRV),
        PF(sbx_profile, cmd_deny, P_STRV),
        PF(sbx_profile, env, P_ENV),
        PF(sbx_profile, secrets, P_STRV),
        PF(sbx_profile, placement_prefer, P_STRV),
        PF(sbx_profile, placement_fallback, P_STRV),
        PF(sbx_profile, route_strategy, P_STR),
        PF(sbx_profile, route_fallback, P_STRV),
        PF(sbx_profile, cost_class, P_STR),
        PF(sbx_profile, latency_class, P_STR),
        PF(sbx_profile, cwd, P_STR),
        PF(sbx_profile, route_constraints, P_STRV),
};
static const ptr_field policy_ptrs[] = {
        PF(sbx_policy, source_file, P_STR),
        PF(sbx_policy, write_allowed, P_STRV),
        PF(sbx_policy, strict_kernel, P_STR),
        PF(sbx_policy, egress_allowed, P_STRV),
        PF(sbx_policy, net_hosts, P_STRV),
        PF(sbx_policy, services_allowed, P_STRV),
        PF(sbx_policy, skill_keys, P_STRV),
};

static const struct kind_info {
        const char *name;
        size_t size;
        const ptr_field *ptrs;
        size_t n_ptrs;
} kinds[_SBX_PARSE_CACHE_KIND_MAX] = {
        [SBX_PARSE_CACHE_POLICY] = {"policy", sizeof(sbx_policy), policy_ptrs, ELEMENTSOF(policy_ptrs)},
        [SBX_PARSE_CACHE_PROFILE] = {"profile", sizeof(sbx_profile), profile_ptrs, ELEMENTSOF(profile_ptrs)},
};

typedef struct header {
        char magic[8];
        uint32_t kind, size;
        uint64_t payload_len;
        uint8_t digest[32];
} header;

/* <cache>/parse-<hex>.bin, keyed by kind, name, text and the code. */
static int entry_path(
        sbx_parse_cache_kind k, const char *text, size_t len, const char *name, char *buf, size_t size) {
        char dir[PATH_MAX];
        sbx_code_id code;
        if (sbx_code_identity(&code) < 0 || sbx_cache_dir(dir, sizeof dir) < 0)
                return -ENOENT;
        sha256_ctx c;
        uint8_t d[32];
        sha256_init(&c);
        sha256_update(&c, kinds[k].name, strlen(kinds[k].name) + 1);
        sha256_update(&c, &code, sizeof code);
        sha256_update(&c, name, strlen(name) + 1);
        sha256_update(&c, text, len);
        sha256_final(&c, d);
        char hex[25];
        for (size_t i = 0; i < 12; i++)
                snprintf(hex + 2 * i, 3, "%02x", d[i]);
        if ((size_t) snprintf(buf, size, "%s/parse-%s.bin", dir, hex) >= size)
                return -ENAMETOOLONG;
        return 0;
}

/* ---- writing ---- */

typedef struct wbuf {
        char *p;
        size_t n, cap;
        bool oom;
} wbuf;

static void put(wbuf *w, const void *data, size_t len) {
        if (w->oom)
                return;
        if (w->n + len > w->cap) {
                size_t cap = w->cap ? w->cap : 4096;
                while (cap < w->n + len)
                        cap *= 2;
                char *np = realloc(w->p, cap);
                if (!np) {
                        w->oom = true;
                        return;
                }
                w->p = np;
                w->cap = cap;
        }
        memcpy(w->p + w->n, data, len);
        w->n += len;
}

static void put_u32(wbuf *w, uint32_t v) {
        put(w, &v, sizeof v);
}

static void put_str(wbuf *w, const char *s) {
        if (!s) {
                put_u32(w, 0);
                return;
        }
        size_t l = strlen(s);
        if (l >= UINT32_MAX) {
                w->oom = true;
                return;
        }
        put_u32(w, (uint32_t) l + 1);
        put(w, s, l);
}

int sbx_parse_cache_encode(sbx_parse_cache_kind k, const void *obj, char **ret, size_t *ret_len) {
        if ((unsigned) k >= _SBX_PARSE_CACHE_KIND_MAX || !obj || !ret || !ret_len)
                return -EINVAL;
        const struct kind_info *ki = &kinds[k];
        wbuf w = {0};
        header h = {.kind = (uint32_t) k, .size = (uint32_t) ki->size};
        memcpy(h.magic, MAGIC, sizeof h.magic);
        put(&w, &h, sizeof h);
        _cleanup_free_ char *raw = malloc(ki->size);
        if (!raw) {
                free(w.p);
                return -ENOMEM;
        }
        memcpy(raw, obj, ki->size);
        for (size_t i = 0; i < ki->n_ptrs; i++)
                memset(raw + ki->ptrs[i].off, 0, sizeof(void *));
        put(&w, raw, ki->size);
        for (size_t i = 0; i < ki->n_ptrs; i++) {
                const void *field = (const char *) obj + ki->ptrs[i].off;
                switch (ki->ptrs[i].kind) {
                case P_STR:
                        put_str(&w, *(char *const *) field);
                        break;
                case P_STRV: {
                        char *const *v = *(char **const *) field;
                        size_t n = v ? strv_length(v) : 0;
                        put_u32(&w, v ? (uint32_t) n + 1 : 0);
                        for (size_t j = 0; j < n; j++)
                                put_str(&w, v[j]);
                        break;
                }
                case P_ENV: {
                        const sbx_profile *p = obj;
                        for (size_t j = 0; j < p->n_env; j++) {
                                put_str(&w, p->env[j].name);
                                put_str(&w, p->env[j].value);
                        }
                        break;
                }
                default:
                        w.oom = true;
                }
        }
        if (w.oom || w.n > ENTRY_MAX) {
                free(w.p);
                return w.oom ? -ENOMEM : -E2BIG;
        }
        header *hp = (header *) w.p;
        hp->payload_len = w.n - sizeof h;
        sha256_ctx c;
        sha256_init(&c);
        sha256_update(&c, w.p + sizeof h, w.n - sizeof h);
        sha256_final(&c, hp->digest);
        *ret = w.p;
        *ret_len = w.n;
        return 0;
}

void sbx_parse_cache_store(
        sbx_parse_cache_kind k, const char *text, size_t len, const char *name, const void *obj) {
        char path[PATH_MAX + 32];
        if ((unsigned) k >= _SBX_PARSE_CACHE_KIND_MAX || !obj ||
                entry_path(k, text, len, name, path, sizeof path) < 0)
                return;
        _cleanup_free_ char *data = NULL;
        size_t n;
        if (sbx_parse_cache_encode(k, obj, &data, &n) >= 0)
                (void) sbx_cache_store(path, data, n, "parse-", 64);
}

/* ---- reading ---- */

typedef struct rbuf {
        const char *p;
        size_t n, at;
} rbuf;

static int get_u32(rbuf *r, uint32_t *v) {
        if (r->n - r->at < sizeof *v)
                return -EBADMSG;
        memcpy(v, r->p + r->at, sizeof *v);
        r->at += sizeof *v;
        return 0;
}

static int get_str(rbuf *r, char **ret) {
        uint32_t l;
        *ret = NULL;
        if (get_u32(r, &l) < 0)
                return -EBADMSG;
        if (l == 0)
                return 0;
        if (r->n - r->at < (size_t) l - 1)
                return -EBADMSG;
        char *s = strndup(r->p + r->at, (size_t) l - 1);
        if (!s)
                return -ENOMEM;
        if (strlen(s) != (size_t) l - 1) { /* a NUL inside: not what was written */
                free(s);
                return -EBADMSG;
        }
        r->at += (size_t) l - 1;
        *ret = s;
        return 0;
}

static void free_obj(sbx_parse_cache_kind k, void *obj) {
        if (k == SBX_PARSE_CACHE_POLICY)
                sbx_policy_free(obj);
        else
                sbx_profile_free(obj);
}

int sbx_parse_cache_decode(sbx_parse_cache_kind k, const char *data, size_t n, void **ret) {
        int r;
        if ((unsigned) k >= _SBX_PARSE_CACHE_KIND_MAX || !data || !ret)
                return -EINVAL;
        const struct kind_info *ki = &kinds[k];
        header h;
        if (n < sizeof h)
                return -EBADMSG;
        memcpy(&h, data, sizeof h);
        if (memcmp(h.magic, MAGIC, sizeof h.magic) != 0 || h.kind != (uint32_t) k || h.size != ki->size ||
                h.payload_len != n - sizeof h || h.payload_len < ki->size)
                return -EBADMSG;
        sha256_ctx c;
        uint8_t d[32];
        sha256_init(&c);
        sha256_update(&c, data + sizeof h, n - sizeof h);
        sha256_final(&c, d);
        if (memcmp(d, h.digest, sizeof d) != 0)
                return -EBADMSG;

        rbuf rb = {.p = data + sizeof h, .n = n - sizeof h, .at = ki->size};
        char *obj = malloc(ki->size);
        if (!obj)
                return -ENOMEM;
        memcpy(obj, rb.p, ki->size);
        /* Every pointer NULL first: a failure half-way frees what was restored, nothing else. */
        for (size_t i = 0; i < ki->n_ptrs; i++)
                memset(obj + ki->ptrs[i].off, 0, sizeof(void *));
        size_t n_env = k == SBX_PARSE_CACHE_PROFILE ? ((sbx_profile *) obj)->n_env : 0;
        if (k == SBX_PARSE_CACHE_PROFILE)
                ((sbx_profile *) obj)->n_env = 0; /* counted up as the entries are restored */
        r = 0;
        for (size_t i = 0; r >= 0 && i < ki->n_ptrs; i++) {
                void *field = obj + ki->ptrs[i].off;
                switch (ki->ptrs[i].kind) {
                case P_STR:
                        r = get_str(&rb, (char **) field);
                        break;
                case P_STRV: {
                        uint32_t cnt;
                        if ((r = get_u32(&rb, &cnt)) < 0 || cnt == 0)
                                break;
                        if ((size_t) cnt - 1 > (rb.n - rb.at) / sizeof(uint32_t)) {
                                r = -EBADMSG;
                                break;
                        }
                        char **v = calloc((size_t) cnt, sizeof(char *));
                        if (!v) {
                                r = -ENOMEM;
                                break;
                        }
                        *(char ***) field = v;
                        for (size_t j = 0; r >= 0 && j + 1 < cnt; j++) {
                                r = get_str(&rb, &v[j]);
                                if (r >= 0 && !v[j])
                                        r = -EBADMSG;
                        }
                        break;
                }
                case P_ENV: {
                        sbx_profile *p = (sbx_profile *) obj;
                        if (n_env > (rb.n - rb.at) / (2 * sizeof(uint32_t))) {
                                r = -EBADMSG;
                                break;
                        }
                        if (n_env == 0)
                                break;
                        p->env = calloc(n_env, sizeof *p->env);
                        if (!p->env) {
                                r = -ENOMEM;
                                break;
                        }
                        for (size_t j = 0; r >= 0 && j < n_env; j++) {
                                r = get_str(&rb, &p->env[j].name);
                                if (r >= 0)
                                        r = get_str(&rb, &p->env[j].value);
                                if (r >= 0 && (!p->env[j].name || !p->env[j].value))
                                        r = -EBADMSG;
                                p->n_env = j + 1;
                        }
                        break;
                }
                default:
                        r = -EINVAL;
                }
        }
        if (r >= 0 && rb.at != rb.n)
                r = -EBADMSG;
        if (r < 0) {
                free_obj(k, obj);
                return r;
        }
        *ret = obj;
        return 0;
}

int sbx_parse_cache_load(
        sbx_parse_cache_kind k, const char *text, size_t len, const char *name, void **ret) {
        char path[PATH_MAX + 32];
        int r;
        if ((unsigned) k >= _SBX_PARSE_CACHE_KIND_MAX || !ret)
                return -EINVAL;
        if ((r = entry_path(k, text, len, name, path, sizeof path)) < 0)
                return r;
        _cleanup_free_ char *data = NULL;
        size_t n;
        if ((r = sbx_cache_read(path, ENTRY_MAX, &data, &n)) < 0)
                return r;
        return sbx_parse_cache_decode(k, data, n, ret);
}
