/* profile-load.c — finding profiles by id (the search path, then the built-ins) or by file, and
 * resolving `extends`: the chain loaded, checked for depth and cycles, and folded root first. */
#include <libgen.h>
#include <string.h>

#include "basic/strv.h"
#include "policy/parse-cache.h"
#include "policy/policy-internal.h"
#include "policy/profile-internal.h"

int sbx_profile_search_path(char ***ret_dirs) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        const char *env = secure_getenv("SANDBOXER_PROFILE_PATH");
        int r;

        if (!l)
                return -ENOMEM;
        if (env) {
                _cleanup_free_ char *copy = strdup(env);
                char *save = NULL;
                if (!copy)
                        return -ENOMEM;
                for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                        if (strv_contains(l, d))
                                continue;
                        r = strv_extend(&l, d);
                        if (r < 0)
                                return r;
                }
        }
        if (!strv_contains(l, SYSTEM_PROFILE_DIR)) {
                r = strv_extend(&l, SYSTEM_PROFILE_DIR);
                if (r < 0)
                        return r;
        }
        *ret_dirs = TAKE_PTR(l);
        return 0;
}

static bool looks_like_file(const char *s) {
        size_t n = strlen(s);
        return strchr(s, '/') || (n > 5 && streq(s + n - 5, ".yaml")) || (n > 4 && streq(s + n - 4, ".yml"));
}

/* Parse a profile file; key = its canonical path (for cycle detection). */
static int load_file(const char *path, sbx_profile **ret, char **ret_key, sbx_error *e) {
        _cleanup_free_ char *text = NULL, *key = NULL;
        size_t len;
        int r;

        r = read_full_file(path, PROFILE_MAX_FILE, &text, &len, e);
        if (r < 0)
                return r;
        key = realpath(path, NULL);
        if (!key)
                return sbx_error_set(
                        e, errno, "profile: load", "cannot resolve %s: %s", path, strerror(errno));
        if (sbx_parse_cache_load(SBX_PARSE_CACHE_PROFILE, text, len, path, (void **) ret) < 0) {
                r = sbx_profile_parse(text, len, path, ret, e);
                if (r < 0)
                        return r;
                sbx_parse_cache_store(SBX_PARSE_CACHE_PROFILE, text, len, path, *ret);
        }
        *ret_key = TAKE_PTR(key);
        return 0;
}

/* Find the file of profile `id` in the search path: DIR/ID.yaml or DIR/ID.yml. */
static int find_in_search_path(const char *id, char **ret_path) {
        _cleanup_strv_free_ char **dirs = NULL;
        int r;

        r = sbx_profile_search_path(&dirs);
        if (r < 0)
                return r;
        STRV_FOREACH(d, dirs) {
                static const char *const exts[] = {".yaml", ".yml"};
                for (size_t i = 0; i < ELEMENTSOF(exts); i++) {
                        char *path = NULL;
                        if (asprintf(&path, "%s/%s%s", *d, id, exts[i]) < 0)
                                return -ENOMEM;
                        if (access(path, F_OK) == 0) {
                                *ret_path = path;
                                return 1;
                        }
                        free(path);
                }
        }
        return 0;
}

static int load_by_id(const char *id, sbx_profile **ret, char **ret_key, sbx_error *e) {
        _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
        _cleanup_free_ char *path = NULL, *key = NULL;
        const char *text;
        size_t len;
        int r;

        r = find_in_search_path(id, &path);
        if (r < 0)
                return sbx_error_set(e, r, "profile: load", "out of memory");
        if (r > 0) {
                r = load_file(path, &p, &key, e);
                if (r < 0)
                        return r;
                if (!streq(p->id, id))
                        return sbx_error_set_at(e, EINVAL, path, 1, 1,
                                "the file declares id '%s' but is found as '%s' (name the file %s.yaml or "
                                "fix its id)",
                                p->id, id, p->id);
                *ret = TAKE_PTR(p);
                *ret_key = TAKE_PTR(key);
                return 0;
        }
        text = builtin_profile_text_len(id, &len);
        if (!text)
                return -ENOENT;
        if (asprintf(&key, "builtin:%s", id) < 0)
                return -ENOMEM;
        r = builtin_profile_snapshot(id, &p);
        if (r == -ENOMEM)
                return sbx_error_set(e, r, "profile: load", "out of memory");
        if (r < 0)
                r = sbx_profile_parse(text, len, key, &p, e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        *ret_key = TAKE_PTR(key);
        return 0;
}

static const char *search_path_text(char *buf, size_t size) {
        _cleanup_strv_free_ char **dirs = NULL;
        size_t o = 0;

        buf[0] = 0;
        if (sbx_profile_search_path(&dirs) < 0)
                return buf;
        STRV_FOREACH(d, dirs)
                if (o < size)
                        o += (size_t) snprintf(buf + o, size - o, "%s%s", o ? ":" : "", *d);
        return buf;
}

static char *dir_of(const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return NULL;
        return strdup(dirname(copy));
}

int sbx_profile_load(const char *name_or_file, sbx_profile **ret, sbx_error *e) {
        sbx_profile *chain[PROFILE_MAX_EXTENDS + 1] = {};
        char *keys[PROFILE_MAX_EXTENDS + 1] = {};
        size_t n = 0;
        int r;

        if (isempty(name_or_file))
                return sbx_error_set(e, EINVAL, "profile: load", "no profile name given");

        if (looks_like_file(name_or_file))
                r = load_file(name_or_file, &chain[0], &keys[0], e);
        else {
                r = profile_valid_id(name_or_file) ? load_by_id(name_or_file, &chain[0], &keys[0], e)
                                                   : -ENOENT;
                if (r == -ENOENT) {
                        char sp[512];
                        r = sbx_error_set(e, ENOENT, "profile: load",
                                "no profile named '%s' (not a built-in, and no %s.yaml in %s); "
                                "'sandboxer profile list' shows the known ones",
                                name_or_file, name_or_file, search_path_text(sp, sizeof sp));
                }
        }
        if (r < 0)
                goto finish;
        n = 1;

        while (chain[n - 1]->extends) {
                sbx_profile *cur = chain[n - 1];
                const char *ref = cur->extends;

                if (n > PROFILE_MAX_EXTENDS) {
                        r = sbx_error_set_at(e, EINVAL, cur->source_file, cur->extends_line_,
                                cur->extends_column_,
                                "extends: the chain from %s is deeper than %d profiles", chain[0]->id,
                                PROFILE_MAX_EXTENDS);
                        goto finish;
                }
                if (looks_like_file(ref)) {
                        _cleanup_free_ char *path = NULL;
                        if (strncmp(keys[n - 1], "builtin:", 8) == 0) {
                                r = sbx_error_set_at(e, EINVAL, cur->source_file, cur->extends_line_,
                                        cur->extends_column_,
                                        "extends: a built-in profile cannot extend a file (%s)", ref);
                                goto finish;
                        } else if (ref[0] != '/') {
                                /* relative to the directory of the extending file */
                                _cleanup_free_ char *dir = dir_of(cur->source_file);
                                if (!dir || asprintf(&path, "%s/%s", dir, ref) < 0) {
                                        r = -ENOMEM;
                                        goto finish;
                                }
                        } else if (!(path = strdup(ref))) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        if (access(path, F_OK) < 0) {
                                r = sbx_error_set_at(e, ENOENT, cur->source_file, cur->extends_line_,
                                        cur->extends_column_,
                                        "extends: cannot find the profile file %s (%s)", path,
                                        strerror(errno));
                                goto finish;
                        }
                        r = load_file(path, &chain[n], &keys[n], e);
                } else {
                        r = load_by_id(ref, &chain[n], &keys[n], e);
                        if (r == -ENOENT) {
                                char sp[512];
                                r = sbx_error_set_at(e, ENOENT, cur->source_file, cur->extends_line_,
                                        cur->extends_column_,
                                        "extends: no profile named '%s' (not a built-in, and no %s.yaml in "
                                        "%s)",
                                        ref, ref, search_path_text(sp, sizeof sp));
                        }
                }
                if (r < 0)
                        goto finish;
                n++;
                for (size_t i = 0; i < n - 1; i++)
                        if (streq(keys[i], keys[n - 1])) {
                                char cyc[512];
                                size_t o = 0;
                                for (size_t j = i; j < n && o < sizeof cyc; j++)
                                        o += (size_t) snprintf(cyc + o, sizeof cyc - o, "%s%s",
                                                j > i ? " -> " : "", chain[j]->id);
                                r = sbx_error_set_at(e, EINVAL, cur->source_file, cur->extends_line_,
                                        cur->extends_column_, "extends: cycle %s", cyc);
                                goto finish;
                        }
        }

        /* fold from the root ancestor down: each child takes what it did not set */
        for (size_t i = n - 1; i > 0; i--) {
                r = profile_inherit(chain[i - 1], chain[i]);
                if (r < 0)
                        goto finish;
        }
        if (chain[0]->ttl_default_s > chain[0]->ttl_max_s && chain[0]->ttl_max_s > 0) {
                r = sbx_error_set(e, EINVAL, "profile: extends",
                        "%s: ttl.default (%.15gs) is longer than ttl.max (%.15gs) once merged with what it "
                        "extends",
                        chain[0]->id, chain[0]->ttl_default_s, chain[0]->ttl_max_s);
                goto finish;
        }
        *ret = TAKE_PTR(chain[0]);
        r = 0;
finish:
        if (r == -ENOMEM)
                (void) sbx_error_set(e, ENOMEM, "profile: load", "out of memory");
        for (size_t i = 0; i < ELEMENTSOF(chain); i++) {
                sbx_profile_free(chain[i]);
                free(keys[i]);
        }
        return r;
}
