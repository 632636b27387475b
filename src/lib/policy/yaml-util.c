/* yaml-util.c — strict, positioned access to a libyaml document (see yaml-util.h). */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "basic/strv.h"
#include "policy/yaml-util.h"

int yerr_errno(yctx *c, int errnum, const yaml_node_t *n, const char *fmt, ...) {
        char msg[sizeof c->e->message];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        return sbx_error_set_at(c->e, errnum, c->name, n ? (unsigned) n->start_mark.line + 1 : 1,
                n ? (unsigned) n->start_mark.column + 1 : 1, "%s", msg);
}

int yerr(yctx *c, const yaml_node_t *n, const char *fmt, ...) {
        char msg[sizeof c->e->message];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        return yerr_errno(c, EINVAL, n, "%s", msg);
}

static int yerr_mark(yctx *c, yaml_mark_t m, const char *fmt, ...) _printf_(3, 4);
static int yerr_mark(yctx *c, yaml_mark_t m, const char *fmt, ...) {
        char msg[sizeof c->e->message];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        return sbx_error_set_at(
                c->e, EINVAL, c->name, (unsigned) m.line + 1, (unsigned) m.column + 1, "%s", msg);
}

static int parser_error(yctx *c, const yaml_parser_t *p, const char *text, size_t len) {
        if (p->error == YAML_MEMORY_ERROR)
                return sbx_error_set(c->e, ENOMEM, "yaml: parse", "out of memory parsing %s", c->name);
        if (p->error == YAML_READER_ERROR) {
                /* the reader reports a byte offset, not a mark */
                yaml_mark_t m = {};
                for (size_t i = 0; i < len && i < p->problem_offset; i++)
                        if (text[i] == '\n')
                                m.line++, m.column = 0;
                        else if (((unsigned char) text[i] & 0xc0) != 0x80)
                                m.column++;
                if (p->problem_value >= 0)
                        return yerr_mark(c, m, "invalid YAML: %s (byte 0x%02x)",
                                p->problem ? p->problem : "bad input", (unsigned) p->problem_value & 0xff);
                return yerr_mark(c, m, "invalid YAML: %s", p->problem ? p->problem : "bad input");
        }
        if (p->context)
                return yerr_mark(c, p->problem_mark, "invalid YAML: %s %s (line %zu column %zu)",
                        p->problem ? p->problem : "syntax error", p->context, p->context_mark.line + 1,
                        p->context_mark.column + 1);
        return yerr_mark(c, p->problem_mark, "invalid YAML: %s", p->problem ? p->problem : "syntax error");
}

/* First pass over the events: refuse what the model never needs and what could blow up a
 * walk (aliases: "billion laughs"), before anything is built. */
static int prescan(yctx *c, const char *text, size_t len) {
        yaml_parser_t p;
        unsigned depth = 0, docs = 0;
        int r = 0;

        if (!yaml_parser_initialize(&p))
                return sbx_error_set(c->e, ENOMEM, "yaml: parse", "out of memory");
        yaml_parser_set_input_string(&p, (const unsigned char *) text, len);
        for (bool done = false; !done && r == 0;) {
                yaml_event_t ev;
                const unsigned char *anchor = NULL, *tag = NULL;

                if (!yaml_parser_parse(&p, &ev)) {
                        r = parser_error(c, &p, text, len);
                        break;
                }
                switch (ev.type) {
                case YAML_STREAM_END_EVENT:
                        done = true;
                        break;
                case YAML_DOCUMENT_START_EVENT:
                        if (++docs > 1)
                                r = yerr_mark(c, ev.start_mark,
                                        "only one YAML document is allowed per file (found a second '---')");
                        break;
                case YAML_ALIAS_EVENT:
                        r = yerr_mark(c, ev.start_mark,
                                "aliases (*%s) are not supported: write the value out in full",
                                (const char *) ev.data.alias.anchor);
                        break;
                case YAML_SCALAR_EVENT:
                        anchor = ev.data.scalar.anchor;
                        tag = ev.data.scalar.tag;
                        break;
                case YAML_SEQUENCE_START_EVENT:
                case YAML_MAPPING_START_EVENT:
                        if (ev.type == YAML_SEQUENCE_START_EVENT)
                                anchor = ev.data.sequence_start.anchor, tag = ev.data.sequence_start.tag;
                        else
                                anchor = ev.data.mapping_start.anchor, tag = ev.data.mapping_start.tag;
                        if (++depth > YAML_MAX_DEPTH)
                                r = yerr_mark(
                                        c, ev.start_mark, "nesting deeper than %d levels", YAML_MAX_DEPTH);
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        depth--;
                        break;
                case YAML_NO_EVENT:
                case YAML_STREAM_START_EVENT:
                case YAML_DOCUMENT_END_EVENT:
                default:
                        break;
                }
                if (r == 0 && anchor)
                        r = yerr_mark(c, ev.start_mark,
                                "anchors (&%s) and aliases are not supported: write the value out in full",
                                (const char *) anchor);
                else if (r == 0 && tag)
                        r = yerr_mark(c, ev.start_mark,
                                "tags (%s) are not supported: write a plain value (quote it to make it a "
                                "string)",
                                (const char *) tag);
                yaml_event_delete(&ev);
        }
        yaml_parser_delete(&p);
        return r;
}

int yctx_load(yctx *c, const char *text, size_t len, const char *name, sbx_error *e) {
        yaml_parser_t p;
        int r;

        *c = (yctx){.name = name, .e = e};
        if (len > YAML_MAX_INPUT)
                return sbx_error_set_at(e, EINVAL, name, 1, 1, "file too large (%zu bytes, at most %d)", len,
                        YAML_MAX_INPUT);
        r = prescan(c, text, len);
        if (r < 0)
                return r;
        if (!yaml_parser_initialize(&p))
                return sbx_error_set(e, ENOMEM, "yaml: parse", "out of memory");
        yaml_parser_set_input_string(&p, (const unsigned char *) text, len);
        if (!yaml_parser_load(&p, &c->doc)) {
                r = parser_error(c, &p, text, len);
                yaml_parser_delete(&p);
                return r;
        }
        yaml_parser_delete(&p);
        c->loaded = true;
        return 0;
}

void yctx_done(yctx *c) {
        if (c->loaded)
                yaml_document_delete(&c->doc);
        c->loaded = false;
}

yaml_node_t *yctx_root(yctx *c) {
        return c->loaded ? yaml_document_get_root_node(&c->doc) : NULL;
}

static yaml_node_t *ynode(yctx *c, int index) {
        return yaml_document_get_node(&c->doc, index);
}

const char *yscalar(const yaml_node_t *n) {
        return n && n->type == YAML_SCALAR_NODE ? (const char *) n->data.scalar.value : NULL;
}

static bool is_digits(const char *s, int (*cls)(int)) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!cls((unsigned char) *s))
                        return false;
        return true;
}

static int isodigit_(int ch) {
        return ch >= '0' && ch <= '7';
}

/* YAML 1.2 core schema number forms (plus the special floats, refused later). */
static bool plain_is_number(const char *s) {
        if (strncmp(s, "0x", 2) == 0)
                return is_digits(s + 2, isxdigit);
        if (strncmp(s, "0o", 2) == 0)
                return is_digits(s + 2, isodigit_);
        if (*s == '-' || *s == '+')
                s++;
        if (streq(s, ".inf") || streq(s, ".Inf") || streq(s, ".INF") || streq(s, ".nan") ||
                streq(s, ".NaN") || streq(s, ".NAN"))
                return true;
        bool digits = false;
        while (isdigit((unsigned char) *s))
                s++, digits = true;
        if (*s == '.') {
                s++;
                while (isdigit((unsigned char) *s))
                        s++, digits = true;
        }
        if (!digits)
                return false;
        if (*s == 'e' || *s == 'E') {
                s++;
                if (*s == '-' || *s == '+')
                        s++;
                if (!isdigit((unsigned char) *s))
                        return false;
                while (isdigit((unsigned char) *s))
                        s++;
        }
        return *s == 0;
}

ykind ynode_kind(const yaml_node_t *n) {
        const char *s;

        switch (n->type) {
        case YAML_SEQUENCE_NODE:
                return YK_LIST;
        case YAML_MAPPING_NODE:
                return YK_MAP;
        case YAML_SCALAR_NODE:
                break;
        case YAML_NO_NODE:
        default:
                return YK_NULL;
        }
        if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
                return YK_STRING;
        s = yscalar(n);
        if (streq(s, "") || streq(s, "~") || streq(s, "null") || streq(s, "Null") || streq(s, "NULL"))
                return YK_NULL;
        if (streq(s, "true") || streq(s, "True") || streq(s, "TRUE") || streq(s, "false") ||
                streq(s, "False") || streq(s, "FALSE"))
                return YK_BOOL;
        if (plain_is_number(s))
                return YK_NUMBER;
        return YK_STRING;
}

const char *ykind_name(ykind k) {
        static const char *const names[] = {
                [YK_NULL] = "null",
                [YK_BOOL] = "a boolean",
                [YK_NUMBER] = "a number",
                [YK_STRING] = "a string",
                [YK_LIST] = "a list",
                [YK_MAP] = "a mapping",
        };
        return (unsigned) k < ELEMENTSOF(names) ? names[k] : "?";
}

const char *ynode_describe(const yaml_node_t *n, char *buf, size_t size) {
        ykind k = ynode_kind(n);
        const unsigned char *s;
        size_t len, o = 0;

        if (k == YK_LIST || k == YK_MAP || k == YK_NULL) {
                snprintf(buf, size, "%s", ykind_name(k));
                return buf;
        }
        if (size < 8) {
                snprintf(buf, size, "?");
                return buf;
        }
        s = n->data.scalar.value;
        len = n->data.scalar.length;
        if (k == YK_STRING)
                buf[o++] = '"';
        for (size_t i = 0; i < len && o + 8 < size; i++) {
                if (i >= 60) {
                        o += (size_t) snprintf(buf + o, size - o, "...");
                        break;
                }
                if (s[i] == '"' || s[i] == '\\')
                        o += (size_t) snprintf(buf + o, size - o, "\\%c", s[i]);
                else if (s[i] < 0x20 || s[i] == 0x7f)
                        o += (size_t) snprintf(buf + o, size - o, "\\x%02x", s[i]);
                else
                        buf[o++] = (char) s[i];
        }
        if (k == YK_STRING)
                buf[o++] = '"';
        buf[o] = 0;
        return buf;
}

const char *ypath(char *buf, size_t size, const char *parent, const char *key) {
        if (isempty(parent))
                snprintf(buf, size, "%s", key);
        else
                snprintf(buf, size, "%s.%s", parent, key);
        return buf;
}

const char *ypath_index(char *buf, size_t size, const char *parent, size_t i) {
        snprintf(buf, size, "%s[%zu]", parent, i);
        return buf;
}

static size_t levenshtein(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b), prev[65], cur[65];

        if (la > 64 || lb > 64)
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                prev[j] = j;
        for (size_t i = 1; i <= la; i++) {
                cur[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
                        cur[j] = MIN(MIN(prev[j] + 1, cur[j - 1] + 1), sub);
                }
                memcpy(prev, cur, sizeof(size_t) * (lb + 1));
        }
        return prev[lb];
}

const char *ysuggest(const char *s, const char *const *keys, size_t n_keys) {
        const char *best = NULL;
        size_t best_d = 3, n = strlen(s);

        for (size_t i = 0; i < n_keys; i++) {
                size_t d = levenshtein(s, keys[i]);
                if (d < best_d)
                        best = keys[i], best_d = d;
        }
        if (best || n < 3)
                return best;
        /* "memory" for "memory_mb", "timeout" for "timeout_s" */
        for (size_t i = 0; i < n_keys; i++)
                if (strncmp(keys[i], s, n) == 0)
                        return keys[i];
        return NULL;
}

static int check_key(yctx *c, const yaml_node_t *k, const char *where, const char **ret) {
        char got[96];

        if (ynode_kind(k) == YK_LIST || ynode_kind(k) == YK_MAP || k->data.scalar.length == 0 ||
                strlen(yscalar(k)) != k->data.scalar.length)
                return yerr(c, k, "%s%s: keys must be plain names, got %s",
                        isempty(where) ? "top level" : where, "", ynode_describe(k, got, sizeof got));
        *ret = yscalar(k);
        return 0;
}

int ymap(yctx *c, const yaml_node_t *n, const char *where, const char *const *keys, size_t n_keys,
        yaml_node_t **ret_values) {
        char got[96], expected[512];
        size_t o = 0;

        if (n->type != YAML_MAPPING_NODE)
                return yerr(c, n, "%s: expected a mapping, got %s", isempty(where) ? "top level" : where,
                        ynode_describe(n, got, sizeof got));
        for (size_t i = 0; i < n_keys; i++)
                ret_values[i] = NULL;
        for (yaml_node_pair_t *pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top;
                pair++) {
                yaml_node_t *k = ynode(c, pair->key), *v = ynode(c, pair->value);
                const char *key;
                size_t i;
                int r;

                r = check_key(c, k, where, &key);
                if (r < 0)
                        return r;
                for (i = 0; i < n_keys; i++)
                        if (streq(keys[i], key))
                                break;
                if (i == n_keys) {
                        const char *hint = ysuggest(key, keys, n_keys);
                        o = 0;
                        expected[0] = 0;
                        for (size_t j = 0; j < n_keys && o < sizeof expected; j++)
                                o += (size_t) snprintf(
                                        expected + o, sizeof expected - o, "%s%s", j ? ", " : "", keys[j]);
                        if (hint)
                                return yerr(c, k,
                                        "unknown key '%s' %s%s (did you mean '%s'? expected one of: %s)",
                                        key, isempty(where) ? "at top level" : "in ",
                                        isempty(where) ? "" : where, hint, expected);
                        return yerr(c, k, "unknown key '%s' %s%s (expected one of: %s)", key,
                                isempty(where) ? "at top level" : "in ", isempty(where) ? "" : where,
                                expected);
                }
                if (ret_values[i]) {
                        /* the value node's position identifies the first occurrence */
                        return yerr(c, k, "duplicate key '%s' %s%s (first given at line %zu)", key,
                                isempty(where) ? "at top level" : "in ", isempty(where) ? "" : where,
                                ret_values[i]->start_mark.line + 1);
                }
                ret_values[i] = v;
        }
        return 0;
}

int ymap_each(
        yctx *c, const yaml_node_t *n, const char *where, size_t max_pairs, ymap_fn fn, void *userdata) {
        yaml_node_pair_t *start = n->data.mapping.pairs.start;
        char got[96], path[256];
        size_t n_pairs;

        if (n->type != YAML_MAPPING_NODE)
                return yerr(
                        c, n, "%s: expected a mapping, got %s", where, ynode_describe(n, got, sizeof got));
        n_pairs = (size_t) (n->data.mapping.pairs.top - start);
        if (n_pairs > max_pairs)
                return yerr(c, n, "%s: too many entries (%zu, at most %zu)", where, n_pairs, max_pairs);
        for (size_t i = 0; i < n_pairs; i++) {
                yaml_node_t *k = ynode(c, start[i].key);
                const char *key;
                int r;

                r = check_key(c, k, where, &key);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++) {
                        const char *other = yscalar(ynode(c, start[j].key));
                        if (other && streq(other, key))
                                return yerr(c, k, "duplicate key '%s' in %s (first given at line %zu)", key,
                                        where, ynode(c, start[j].key)->start_mark.line + 1);
                }
                r = fn(c, key, k, ynode(c, start[i].value), ypath(path, sizeof path, where, key), userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int want(yctx *c, const yaml_node_t *n, const char *path, const char *what) {
        char got[96];
        return yerr(c, n, "%s: expected %s, got %s", path, what, ynode_describe(n, got, sizeof got));
}

static int scalar_text(yctx *c, const yaml_node_t *n, const char *path, const char *what, const char **ret) {
        ykind k = ynode_kind(n);

        if (k == YK_LIST || k == YK_MAP || k == YK_NULL)
                return want(c, n, path, what);
        if (strlen(yscalar(n)) != n->data.scalar.length)
                return yerr(c, n, "%s: the value contains a NUL character", path);
        *ret = yscalar(n);
        return 0;
}

int yget_string(yctx *c, const yaml_node_t *n, const char *path, const char *what, char **ret) {
        const char *s = NULL;
        char *copy;
        int r;

        r = scalar_text(c, n, path, what ? what : "a string", &s);
        if (r < 0)
                return r;
        if (!*s)
                return yerr(c, n, "%s: expected %s, got an empty string", path, what ? what : "a string");
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

int yget_string_or_null(yctx *c, const yaml_node_t *n, const char *path, const char *what, char **ret) {
        if (ynode_kind(n) == YK_NULL) {
                *ret = NULL;
                return 0;
        }
        return yget_string(c, n, path, what, ret);
}

int yget_bool(yctx *c, const yaml_node_t *n, const char *path, bool *ret) {
        const char *s = yscalar(n);

        if (ynode_kind(n) != YK_BOOL)
                return want(c, n, path, "true or false");
        *ret = s[0] == 't' || s[0] == 'T';
        return 0;
}

int yget_enum(yctx *c, const yaml_node_t *n, const char *path, int (*from_string)(const char *),
        const char *choices, int *ret) {
        char got[96];
        ykind k = ynode_kind(n);
        int v;

        if (k == YK_LIST || k == YK_MAP || k == YK_NULL)
                return yerr(c, n, "%s: expected one of %s, got %s", path, choices,
                        ynode_describe(n, got, sizeof got));
        v = from_string(yscalar(n));
        if (v < 0)
                return yerr(c, n, "%s: expected one of %s, got %s", path, choices,
                        ynode_describe(n, got, sizeof got));
        *ret = v;
        return 0;
}

static int number_problem(yctx *c, const yaml_node_t *n, const char *path, const char *what, double v,
        bool integer, bool allow_zero, double max) {
        char got[96];

        ynode_describe(n, got, sizeof got);
        if (isnan(v) || isinf(v))
                return yerr(c, n, "%s: expected %s, got %s (not a finite number)", path, what, got);
        if (v < 0)
                return yerr(c, n, "%s: expected %s, got %s (negative)", path, what, got);
        if (v == 0 && !allow_zero)
                return yerr(c, n, "%s: expected %s, got %s (zero is not allowed)", path, what, got);
        if (v > max)
                return yerr(c, n, "%s: expected %s, got %s (more than %.15g)", path, what, got, max);
        if (integer && v != (double) (int64_t) v)
                return yerr(c, n, "%s: expected %s, got %s (not a whole number)", path, what, got);
        return 0;
}

/* The number in a plain scalar already classified as YK_NUMBER; -ERANGE/-EDOM for what
 * sbx_parse_number() refuses but which is a number (sign, inf, nan, hex). */
static int plain_number(const char *s, double *ret) {
        bool neg = false;

        if (*s == '+' || *s == '-')
                neg = *s == '-', s++;
        if (strcasecmp(s, ".inf") == 0) {
                *ret = neg ? -INFINITY : INFINITY;
                return 0;
        }
        if (strcasecmp(s, ".nan") == 0) {
                *ret = NAN;
                return 0;
        }
        if (strncmp(s, "0x", 2) == 0 || strncmp(s, "0o", 2) == 0)
                return -EDOM;
        if (sbx_parse_number(s, ret) < 0)
                return -ERANGE;
        if (neg)
                *ret = -*ret;
        return 0;
}

int yget_number(yctx *c, const yaml_node_t *n, const char *path, const char *what, bool integer,
        bool allow_zero, double max, double *ret) {
        char got[96];
        double v;
        int r;

        if (ynode_kind(n) != YK_NUMBER) {
                if (ynode_kind(n) == YK_STRING && sbx_parse_number(yscalar(n), &v) >= 0)
                        return yerr(c, n,
                                "%s: expected %s, got the string %s (write the number without quotes)", path,
                                what, ynode_describe(n, got, sizeof got));
                return want(c, n, path, what);
        }
        r = plain_number(yscalar(n), &v);
        if (r == -EDOM)
                return yerr(c, n, "%s: expected %s, got %s (write it in decimal)", path, what,
                        ynode_describe(n, got, sizeof got));
        if (r < 0)
                return yerr(c, n, "%s: expected %s, got %s (out of range)", path, what,
                        ynode_describe(n, got, sizeof got));
        r = number_problem(c, n, path, what, v, integer, allow_zero, max);
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

int yget_duration(
        yctx *c, const yaml_node_t *n, const char *path, bool allow_zero, double max, double *ret) {
        const char *what = allow_zero ? "a duration (seconds, or \"30s\", \"90m\", \"4h\", \"2d\")"
                                      : "a positive duration (seconds, or \"30s\", \"90m\", \"4h\", \"2d\")";
        char got[96];
        double v;
        int r;

        switch (ynode_kind(n)) {
        case YK_NUMBER:
                return yget_number(c, n, path, what, false, allow_zero, max, ret);
        case YK_STRING:
                if (sbx_parse_duration(yscalar(n), &v) < 0) {
                        const char *s = yscalar(n);
                        if (*s == '-')
                                return yerr(c, n, "%s: expected %s, got %s (negative)", path, what,
                                        ynode_describe(n, got, sizeof got));
                        return want(c, n, path, what);
                }
                r = number_problem(c, n, path, what, v, false, allow_zero, max);
                if (r < 0)
                        return r;
                *ret = v;
                return 0;
        case YK_NULL:
        case YK_BOOL:
        case YK_LIST:
        case YK_MAP:
        default:
                return want(c, n, path, what);
        }
}

int yget_strv(yctx *c, const yaml_node_t *n, const char *path, const char *what, size_t max_items,
        ystr_check_fn check, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        char got[96], what_list[160], item_path[256];
        size_t n_items;

        snprintf(what_list, sizeof what_list, "a list of %s", what);
        if (n->type != YAML_SEQUENCE_NODE)
                return yerr(c, n, "%s: expected %s, got %s", path, what_list,
                        ynode_describe(n, got, sizeof got));
        n_items = (size_t) (n->data.sequence.items.top - n->data.sequence.items.start);
        if (n_items > max_items)
                return yerr(c, n, "%s: too many entries (%zu, at most %zu)", path, n_items, max_items);
        l = calloc(n_items + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n_items; i++) {
                yaml_node_t *item = ynode(c, n->data.sequence.items.start[i]);
                int r;

                ypath_index(item_path, sizeof item_path, path, i);
                r = yget_string(c, item, item_path, what, &l[i]);
                if (r < 0)
                        return r;
                if (check) {
                        r = check(c, item, item_path, &l[i]);
                        if (r < 0)
                                return r;
                }
                for (size_t j = 0; j < i; j++)
                        if (streq(l[j], l[i]))
                                return yerr(c, item, "%s: duplicate entry \"%s\" (also %s[%zu])", item_path,
                                        l[i], path, j);
        }
        *ret = TAKE_PTR(l);
        return 0;
}
