/* util.c — shared pieces of the policy module: reading files, path and egress syntax, the
 * limits table and its bounds, environment names. */
#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "policy/policy-internal.h"

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len, sbx_error *e) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return sbx_error_set(e, errno, "read", "cannot open %s: %s", path, strerror(errno));
        if (fstat(fd, &st) < 0)
                return sbx_error_set(e, errno, "read", "cannot stat %s: %s", path, strerror(errno));
        if (S_ISDIR(st.st_mode))
                return sbx_error_set(e, EISDIR, "read", "cannot read %s: it is a directory", path);
        if (!S_ISREG(st.st_mode))
                return sbx_error_set(e, EINVAL, "read", "cannot read %s: not a regular file", path);
        if ((uint64_t) st.st_size > max)
                return sbx_error_set(e, EFBIG, "read", "%s is too large (%lld bytes, at most %zu)", path,
                        (long long) st.st_size, max);
        /* Sized by the file (a 1 MiB buffer for a 1 KB policy was an mmap, a page fault and an
         * munmap of its own), grown if the file grows while we read, up to max + 1 bytes: one
         * more than allowed, to tell "too large". */
        size_t cap = (size_t) st.st_size + 2;
        buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (n + 1 >= cap && cap < max + 2) {
                        size_t ncap = cap * 2 < max + 2 ? cap * 2 : max + 2;
                        char *nb = realloc(buf, ncap);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        cap = ncap;
                }
                ssize_t k = read(fd, buf + n, cap - 1 - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return sbx_error_set(e, errno, "read", "cannot read %s: %s", path, strerror(errno));
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > max)
                        return sbx_error_set(
                                e, EFBIG, "read", "%s is too large (more than %zu bytes)", path, max);
        }
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = n;
        return 0;
}

int path_normalize(char *p) {
        char *w = p;
        const char *r = p;

        if (p[0] != '/')
                return -EINVAL;
        if (strlen(p) >= PATH_MAX)
                return -ENAMETOOLONG;
        while (*r) {
                const char *end;
                size_t len;

                while (*r == '/')
                        r++;
                if (!*r)
                        break;
                end = strchrnul(r, '/');
                len = (size_t) (end - r);
                if (len == 1 && r[0] == '.') {
                        r = end;
                        continue;
                }
                if (len == 2 && r[0] == '.' && r[1] == '.')
                        return -EINVAL;
                *w++ = '/';
                memmove(w, r, len);
                w += len;
                r = end;
        }
        if (w == p)
                *w++ = '/';
        *w = 0;
        return 0;
}

bool path_is_under(const char *p, const char *dir) {
        size_t n = strlen(dir);

        if (streq(dir, "/"))
                return true;
        return strncmp(p, dir, n) == 0 && (p[n] == 0 || p[n] == '/');
}

static bool has_control(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return true;
        return false;
}

int ycheck_abs_path(yctx *c, const yaml_node_t *n, const char *path, char **value) {
        char *v = *value;
        int r;

        if (has_control(v))
                return yerr(c, n, "%s: the path contains a control character", path);
        if (v[0] != '/')
                return yerr(c, n, "%s: expected an absolute path, got \"%s\" (start it with '/')", path, v);
        r = path_normalize(v);
        if (r == -ENAMETOOLONG)
                return yerr(c, n, "%s: the path is too long (at most %d bytes)", path, PATH_MAX - 1);
        if (r < 0)
                return yerr(
                        c, n, "%s: \"%s\" contains a '..' component (write the path without it)", path, v);
        return 0;
}

int ycheck_name(yctx *c, const yaml_node_t *n, const char *path, char **value) {
        const char *v = *value;

        if (strlen(v) > 128 || streq(v, ".") || streq(v, ".."))
                goto bad;
        for (const char *s = v; *s; s++)
                if (!isalnum((unsigned char) *s) && !strchr("._-", *s))
                        goto bad;
        return 0;
bad:
        return yerr(c, n, "%s: \"%s\" is not a valid name (letters, digits, '.', '_', '-'; at most 128)",
                path, v);
}

int ycheck_word(yctx *c, const yaml_node_t *n, const char *path, char **value) {
        const char *v = *value;

        if (strlen(v) > 4096)
                return yerr(c, n, "%s: the value is too long (at most 4096 bytes)", path);
        for (const char *s = v; *s; s++)
                if (isspace((unsigned char) *s) || (unsigned char) *s < 0x20 || *s == 0x7f)
                        return yerr(c, n,
                                "%s: \"%s\" must be a single word (no spaces or control characters)", path,
                                v);
        return 0;
}

/* ---- egress ---- */

static bool parse_port(const char *s, unsigned *ret) {
        unsigned v = 0;

        if (!*s || strlen(s) > 5)
                return false;
        for (; *s; s++) {
                if (!isdigit((unsigned char) *s))
                        return false;
                v = v * 10 + (unsigned) (*s - '0');
        }
        if (v == 0 || v > 65535)
                return false;
        *ret = v;
        return true;
}

static bool parse_hostname(const char *s, char *ret, size_t size) {
        size_t len = strlen(s), label = 0;

        if (len == 0 || len > 253 || len >= size)
                return false;
        for (size_t i = 0; i < len; i++) {
                char ch = s[i];
                if (ch == '.') {
                        if (label == 0 || s[i - 1] == '-')
                                return false;
                        label = 0;
                } else if (isalnum((unsigned char) ch) || ch == '-' || ch == '_') {
                        if (label == 0 && ch == '-')
                                return false;
                        if (++label > 63)
                                return false;
                } else
                        return false;
                ret[i] = (char) tolower((unsigned char) ch);
        }
        if (label == 0)
                return false;
        ret[len] = 0;
        return true;
}

static bool parse_addr(const char *s, egress_rule *r) {
        if (inet_pton(AF_INET, s, r->addr) == 1) {
                r->family = AF_INET;
                r->prefix = 32;
                return true;
        }
        if (inet_pton(AF_INET6, s, r->addr) == 1) {
                r->family = AF_INET6;
                r->prefix = 128;
                return true;
        }
        return false;
}

int egress_parse(const char *s, egress_rule *ret) {
        egress_rule r = {};
        char buf[300];
        char *colon, *slash;

        if (strlen(s) >= sizeof buf)
                return -EINVAL;
        strcpy(buf, s);

        slash = strchr(buf, '/');
        if (slash) { /* CIDR, and a port after it: "10.20.0.0/16:5432" */
                unsigned prefix = 0;
                char *q = slash + 1, *pc = strchr(q, ':');
                *slash = 0;
                if (pc) {
                        *pc = 0;
                        if (!parse_port(pc + 1, &r.port))
                                return -EINVAL;
                }
                if (!parse_addr(buf, &r) || !*q || strlen(q) > 3)
                        return -EINVAL;
                for (; *q; q++) {
                        if (!isdigit((unsigned char) *q))
                                return -EINVAL;
                        prefix = prefix * 10 + (unsigned) (*q - '0');
                }
                if (prefix > r.prefix)
                        return -EINVAL;
                r.prefix = prefix;
                r.kind = EGRESS_ADDR;
                *ret = r;
                return 0;
        }
        if (buf[0] == '[') { /* [v6] or [v6]:port */
                char *close = strchr(buf, ']');
                if (!close)
                        return -EINVAL;
                *close = 0;
                if (inet_pton(AF_INET6, buf + 1, r.addr) != 1)
                        return -EINVAL;
                r.family = AF_INET6;
                r.prefix = 128;
                if (close[1] == ':') {
                        if (!parse_port(close + 2, &r.port))
                                return -EINVAL;
                } else if (close[1] != 0)
                        return -EINVAL;
                r.kind = EGRESS_ADDR;
                *ret = r;
                return 0;
        }
        if (parse_addr(buf, &r)) { /* a bare address (IPv6 without port) */
                r.kind = EGRESS_ADDR;
                *ret = r;
                return 0;
        }
        colon = strchr(buf, ':');
        if (colon) {
                if (strchr(colon + 1, ':') || !parse_port(colon + 1, &r.port))
                        return -EINVAL;
                *colon = 0;
        }
        if (parse_addr(buf, &r)) {
                r.kind = EGRESS_ADDR;
                *ret = r;
                return 0;
        }
        if (strncmp(buf, "*.", 2) == 0) {
                if (!parse_hostname(buf + 2, r.host, sizeof r.host) || !strchr(r.host, '.'))
                        return -EINVAL; /* "*.com" is too wide to mean anything but "allow" */
                r.kind = EGRESS_WILDCARD;
        } else {
                if (!parse_hostname(buf, r.host, sizeof r.host))
                        return -EINVAL;
                r.kind = EGRESS_HOST;
        }
        *ret = r;
        return 0;
}

static bool prefix_match(const unsigned char *a, const unsigned char *b, unsigned bits) {
        unsigned full = bits / 8, rest = bits % 8;

        if (memcmp(a, b, full) != 0)
                return false;
        if (rest == 0)
                return true;
        unsigned char mask = (unsigned char) (0xff << (8 - rest));
        return (a[full] & mask) == (b[full] & mask);
}

static bool host_has_suffix(const char *host, const char *domain) {
        size_t h = strlen(host), d = strlen(domain);
        return h > d + 1 && host[h - d - 1] == '.' && streq(host + h - d, domain);
}

bool egress_covers(const egress_rule *allowed, const egress_rule *want) {
        if (allowed->port != 0 && allowed->port != want->port)
                return false;
        switch (allowed->kind) {
        case EGRESS_HOST:
                return want->kind == EGRESS_HOST && streq(allowed->host, want->host);
        case EGRESS_WILDCARD:
                return (want->kind == EGRESS_HOST && host_has_suffix(want->host, allowed->host)) ||
                       (want->kind == EGRESS_WILDCARD &&
                               (streq(want->host, allowed->host) ||
                                       host_has_suffix(want->host, allowed->host)));
        case EGRESS_ADDR:
                return want->kind == EGRESS_ADDR && want->family == allowed->family &&
                       want->prefix >= allowed->prefix &&
                       prefix_match(want->addr, allowed->addr, allowed->prefix);
        default:
                return false;
        }
}

int ycheck_egress(yctx *c, const yaml_node_t *n, const char *path, char **value) {
        egress_rule r;

        if (streq(*value, "*"))
                return yerr(c, n,
                        "%s: \"*\" is not an egress rule (to share the host network use network.default: "
                        "allow)",
                        path);
        if (egress_parse(*value, &r) < 0)
                return yerr(c, n,
                        "%s: \"%s\" is not an egress rule (expected \"host\", \"*.domain\", \"host:port\", "
                        "an address or a CIDR such as \"10.0.0.0/8\")",
                        path, *value);
        return 0;
}

/* ---- limits ---- */

static const struct {
        const char *what;
        bool duration, integer;
        double max;
} limit_info[_SBX_LIMIT_MAX] = {
        [SBX_LIMIT_TIMEOUT_S] = {"a positive duration", true, false, DURATION_MAX_S},
        [SBX_LIMIT_BUDGET_S] = {"a positive duration", true, false, DURATION_MAX_S},
        [SBX_LIMIT_CPUS] = {"a positive number of CPUs (fractions allowed)", false, false, CPUS_MAX},
        [SBX_LIMIT_MEMORY_MB] = {"a positive number of MiB", false, false, SIZE_MAX_MB},
        [SBX_LIMIT_PIDS] = {"a whole number of processes, at least 1", false, true, PIDS_MAX},
        [SBX_LIMIT_OUTPUT_MB] = {"a positive number of MiB", false, false, SIZE_MAX_MB},
        [SBX_LIMIT_SCRATCH_MB] = {"a positive number of MiB", false, false, SIZE_MAX_MB},
};

const char *limit_what(sbx_limit_id l) {
        return limit_info[l].what;
}

int limit_check_value(sbx_limit_id l, double v) {
        if (!isfinite(v) || v <= 0 || v > limit_info[l].max)
                return -ERANGE;
        if (limit_info[l].integer && v != (double) (int64_t) v)
                return -EINVAL;
        return 0;
}

int yparse_limits(yctx *c, const yaml_node_t *n, const char *where, sbx_source src, sbx_limits *l) {
        const char *keys[_SBX_LIMIT_MAX];
        yaml_node_t *v[_SBX_LIMIT_MAX];
        char path[256], got[96];
        int r;

        for (int i = 0; i < _SBX_LIMIT_MAX; i++)
                keys[i] = sbx_limit_to_string((sbx_limit_id) i);
        r = ymap(c, n, where, keys, _SBX_LIMIT_MAX, v);
        if (r < 0)
                return r;
        for (int i = 0; i < _SBX_LIMIT_MAX; i++) {
                if (!v[i])
                        continue;
                ypath(path, sizeof path, where, keys[i]);
                if (limit_info[i].duration)
                        r = yget_duration(c, v[i], path, false, limit_info[i].max, &l->value[i]);
                else if (ynode_kind(v[i]) == YK_STRING && strstr(limit_info[i].what, "MiB") &&
                         sbx_parse_number(yscalar(v[i]), &(double){0}) < 0)
                        r = yerr(c, v[i],
                                "%s: expected %s, got %s (sizes are plain numbers of MiB: 1024 for 1 GiB)",
                                path, limit_info[i].what, ynode_describe(v[i], got, sizeof got));
                else
                        r = yget_number(c, v[i], path, limit_info[i].what, limit_info[i].integer, false,
                                limit_info[i].max, &l->value[i]);
                if (r < 0)
                        return r;
                l->set[i] = true;
                l->source[i] = src;
        }
        return 0;
}

/* ---- environment ---- */

int sbx_env_name_check(const char *name, const char **ret_why) {
        return env_name_check(name, ret_why);
}

int env_name_check(const char *name, const char **ret_why) {
        if (!*name || strlen(name) > 255 || !(isalpha((unsigned char) name[0]) || name[0] == '_')) {
                *ret_why = "names are [A-Za-z_][A-Za-z0-9_]*";
                return -EINVAL;
        }
        for (const char *s = name; *s; s++)
                if (!isalnum((unsigned char) *s) && *s != '_') {
                        *ret_why = "names are [A-Za-z_][A-Za-z0-9_]*";
                        return -EINVAL;
                }
        if (streq(name, "TMPDIR")) {
                *ret_why = "TMPDIR always names the sandbox's scratch directory";
                return -EPERM;
        }
        if (strncmp(name, "SANDBOXER_", STRLEN("SANDBOXER_")) == 0) {
                *ret_why = "SANDBOXER_* variables are set by sandboxer itself";
                return -EPERM;
        }
        return 0;
}
