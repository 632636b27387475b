/* test-report.c — the JSON writer and the report: status precedence, violation merge and cap,
 * escaping, the setup-error report without a config, a strict JSON parse of everything written
 * (round trip of the values), and validation against docs/report.schema.json when python3 has
 * jsonschema. */
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/host.h"
#include "basic/jsonw.h"
#include "report/report.h"
#include "tap.h"

/* ---- a strict little JSON parser (RFC 8259), to check what the writer wrote --------------- */

typedef struct jnode {
        char type; /* 'n' null, 'b' bool, 'd' number, 's' string, 'a' array, 'o' object */
        bool b;
        double num;
        char *str; /* decoded UTF-8 (may hold NULs: see slen) */
        size_t slen;
        struct jnode **kids;
        char **keys; /* objects */
        size_t n;
} jnode;

static void jfree(jnode *n) {
        if (!n)
                return;
        for (size_t i = 0; i < n->n; i++) {
                jfree(n->kids[i]);
                if (n->keys)
                        free(n->keys[i]);
        }
        free(n->kids);
        free(n->keys);
        free(n->str);
        free(n);
}

typedef struct {
        const char *p, *end;
        int depth;
} jparser;

static void ws(jparser *j) {
        while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
                j->p++;
}

static int hex4(jparser *j, unsigned *ret) {
        unsigned v = 0;
        for (int i = 0; i < 4; i++, j->p++) {
                if (j->p >= j->end)
                        return -1;
                char c = *j->p;
                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (unsigned) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (unsigned) (c - 'A' + 10);
                else
                        return -1;
        }
        *ret = v;
        return 0;
}

static void put_utf8(char *o, size_t *l, unsigned cp) {
        if (cp < 0x80)
                o[(*l)++] = (char) cp;
        else if (cp < 0x800) {
                o[(*l)++] = (char) (0xC0 | (cp >> 6));
                o[(*l)++] = (char) (0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
                o[(*l)++] = (char) (0xE0 | (cp >> 12));
                o[(*l)++] = (char) (0x80 | ((cp >> 6) & 0x3F));
                o[(*l)++] = (char) (0x80 | (cp & 0x3F));
        } else {
                o[(*l)++] = (char) (0xF0 | (cp >> 18));
                o[(*l)++] = (char) (0x80 | ((cp >> 12) & 0x3F));
                o[(*l)++] = (char) (0x80 | ((cp >> 6) & 0x3F));
                o[(*l)++] = (char) (0x80 | (cp & 0x3F));
        }
}

/* Raw bytes inside strings must be well-formed UTF-8 (the writer promises that). */
static size_t utf8_ok(const unsigned char *s, size_t n) {
        unsigned char c = s[0];
        size_t need;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c < 0x80)
                return 1;
        if (c >= 0xC2 && c <= 0xDF)
                need = 1;
        else if (c == 0xE0)
                need = 2, lo = 0xA0;
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
                need = 2;
        else if (c == 0xED)
                need = 2, hi = 0x9F;
        else if (c == 0xF0)
                need = 3, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3)
                need = 3;
        else if (c == 0xF4)
                need = 3, hi = 0x8F;
        else
                return 0;
        for (size_t k = 1; k <= need; k++) {
                if (k >= n || s[k] < lo || s[k] > hi)
                        return 0;
                lo = 0x80, hi = 0xBF;
        }
        return need + 1;
}

static int parse_string(jparser *j, char **ret, size_t *ret_len) {
        if (j->p >= j->end || *j->p != '"')
                return -1;
        j->p++;
        char *o = malloc((size_t) (j->end - j->p) + 4);
        size_t l = 0;
        while (j->p < j->end && *j->p != '"') {
                unsigned char c = (unsigned char) *j->p;
                if (c < 0x20)
                        goto fail;
                if (c != '\\') {
                        size_t k = utf8_ok((const unsigned char *) j->p, (size_t) (j->end - j->p));
                        if (k == 0)
                                goto fail;
                        memcpy(o + l, j->p, k);
                        l += k;
                        j->p += k;
                        continue;
                }
                if (++j->p >= j->end)
                        goto fail;
                char e = *j->p++;
                unsigned cp, lo;
                switch (e) {
                case '"':
                case '\\':
                case '/':
                        o[l++] = e;
                        break;
                case 'b':
                        o[l++] = '\b';
                        break;
                case 'f':
                        o[l++] = '\f';
                        break;
                case 'n':
                        o[l++] = '\n';
                        break;
                case 'r':
                        o[l++] = '\r';
                        break;
                case 't':
                        o[l++] = '\t';
                        break;
                case 'u':
                        if (hex4(j, &cp) < 0)
                                goto fail;
                        if (cp >= 0xD800 && cp <= 0xDBFF) {
                                if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u')
                                        goto fail;
                                j->p += 2;
                                if (hex4(j, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
                                        goto fail;
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        } else if (cp >= 0xDC00 && cp <= 0xDFFF)
                                goto fail;
                        put_utf8(o, &l, cp);
                        break;
                default:
                        goto fail;
                }
        }
        if (j->p >= j->end)
                goto fail;
        j->p++;
        o[l] = 0;
        *ret = o;
        if (ret_len)
                *ret_len = l;
        return 0;
fail:
        free(o);
        return -1;
}

static jnode *parse_value(jparser *j);

static int add_kid(jnode *n, jnode *kid, char *key) {
        n->kids = realloc(n->kids, (n->n + 1) * sizeof *n->kids);
        if (n->type == 'o')
                n->keys = realloc(n->keys, (n->n + 1) * sizeof *n->keys);
        n->kids[n->n] = kid;
        if (n->type == 'o')
                n->keys[n->n] = key;
        n->n++;
        return 0;
}

static bool parse_number(jparser *j, jnode *n) {
        const char *s = j->p;
        if (j->p < j->end && *j->p == '-')
                j->p++;
        if (j->p >= j->end)
                return false;
        if (*j->p == '0')
                j->p++;
        else if (*j->p >= '1' && *j->p <= '9')
                while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
                        j->p++;
        else
                return false;
        if (j->p < j->end && *j->p == '.') {
                j->p++;
                if (j->p >= j->end || *j->p < '0' || *j->p > '9')
                        return false;
                while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
                        j->p++;
        }
        if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
                j->p++;
                if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
                        j->p++;
                if (j->p >= j->end || *j->p < '0' || *j->p > '9')
                        return false;
                while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
                        j->p++;
        }
        char buf[64];
        size_t l = (size_t) (j->p - s);
        if (l >= sizeof buf)
                return false;
        memcpy(buf, s, l);
        buf[l] = 0;
        n->num = strtod(buf, NULL);
        return true;
}

static jnode *parse_value(jparser *j) {
        ws(j);
        if (j->p >= j->end || ++j->depth > 100)
                return NULL;
        jnode *n = calloc(1, sizeof *n);
        char c = *j->p;
        if (c == '{' || c == '[') {
                n->type = c == '{' ? 'o' : 'a';
                char close = c == '{' ? '}' : ']';
                j->p++;
                ws(j);
                if (j->p < j->end && *j->p == close) {
                        j->p++;
                        goto out;
                }
                for (;;) {
                        char *key = NULL;
                        ws(j);
                        if (n->type == 'o') {
                                if (parse_string(j, &key, NULL) < 0)
                                        goto fail;
                                ws(j);
                                if (j->p >= j->end || *j->p != ':') {
                                        free(key);
                                        goto fail;
                                }
                                j->p++;
                        }
                        jnode *kid = parse_value(j);
                        if (!kid) {
                                free(key);
                                goto fail;
                        }
                        add_kid(n, kid, key);
                        ws(j);
                        if (j->p < j->end && *j->p == ',') {
                                j->p++;
                                continue;
                        }
                        if (j->p < j->end && *j->p == close) {
                                j->p++;
                                break;
                        }
                        goto fail;
                }
        } else if (c == '"') {
                n->type = 's';
                if (parse_string(j, &n->str, &n->slen) < 0)
                        goto fail;
        } else if (j->end - j->p >= 4 && strncmp(j->p, "null", 4) == 0) {
                n->type = 'n';
                j->p += 4;
        } else if (j->end - j->p >= 4 && strncmp(j->p, "true", 4) == 0) {
                n->type = 'b';
                n->b = true;
                j->p += 4;
        } else if (j->end - j->p >= 5 && strncmp(j->p, "false", 5) == 0) {
                n->type = 'b';
                j->p += 5;
        } else {
                n->type = 'd';
                if (!parse_number(j, n))
                        goto fail;
        }
out:
        j->depth--;
        return n;
fail:
        jfree(n);
        return NULL;
}

/* Parse a whole document (trailing whitespace allowed, nothing else); NULL if invalid. */
static jnode *jparse(const char *text) {
        jparser j = {.p = text, .end = text + strlen(text)};
        jnode *n = parse_value(&j);
        ws(&j);
        if (n && j.p != j.end) {
                jfree(n);
                return NULL;
        }
        return n;
}

/* Look up "a.b.0.c" (numbers index arrays). */
static const jnode *jget(const jnode *n, const char *path) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", path);
        char *save = NULL;
        for (char *t = strtok_r(buf, ".", &save); n && t; t = strtok_r(NULL, ".", &save)) {
                const jnode *next = NULL;
                if (n->type == 'o') {
                        for (size_t i = 0; i < n->n; i++)
                                if (strcmp(n->keys[i], t) == 0)
                                        next = n->kids[i];
                } else if (n->type == 'a') {
                        char *e;
                        unsigned long i = strtoul(t, &e, 10);
                        if (!*e && i < n->n)
                                next = n->kids[i];
                }
                n = next;
        }
        return n;
}

static const char *jstr(const jnode *root, const char *path) {
        const jnode *n = jget(root, path);
        return n && n->type == 's' ? n->str : NULL;
}

static double jnum(const jnode *root, const char *path) {
        const jnode *n = jget(root, path);
        return n && n->type == 'd' ? n->num : NAN;
}

static bool jis(const jnode *root, const char *path, char type) {
        const jnode *n = jget(root, path);
        return n && n->type == type;
}

/* ---- helpers ------------------------------------------------------------------------------ */

/* Write one string value compactly and return the JSON text (static buffer). */
static const char *quoted(const char *s, size_t n) {
        static char out[512];
        char *q = NULL;
        if (json_quote(s, n, &q) < 0)
                return "(error)";
        snprintf(out, sizeof out, "%s", q);
        free(q);
        return out;
}

static const char *dbl(double v) {
        static char out[64];
        jsonw w;
        char *t = NULL;
        jsonw_init(&w, false);
        jsonw_double(&w, v);
        if (jsonw_finish(&w, false, &t, NULL) < 0)
                return "(error)";
        snprintf(out, sizeof out, "%s", t);
        free(t);
        return out;
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_names(void) {
        static const char *const statuses[] = {"exited", "signaled", "timeout", "memory_limit",
                "process_limit", "output_limit", "violation", "cancelled", "setup_error"};
        bool all = true;
        for (int i = 0; i < _SBX_STATUS_MAX; i++)
                all = all && sbx_status_to_string(i) && streq(sbx_status_to_string(i), statuses[i]) &&
                      sbx_status_from_string(statuses[i]) == i;
        ok(all, "status names round-trip");
        ok(!sbx_status_to_string(_SBX_STATUS_MAX) && !sbx_status_to_string(-1) &&
                        sbx_status_from_string("bogus") == _SBX_STATUS_INVALID &&
                        sbx_status_from_string(NULL) < 0,
                "status names: out of range and unknown refused");

        static const char *const kinds[] = {"NetworkAccessViolation", "FilesystemWriteViolation",
                "TimeoutViolation", "ProcessLimitViolation", "SyscallViolation", "MemoryLimitViolation",
                "OutputLimitViolation", "StrictModeUnavailable", "StrictModeRequired"};
        all = ELEMENTSOF(kinds) == _SBX_VIOLATION_MAX;
        for (int i = 0; all && i < _SBX_VIOLATION_MAX; i++)
                all = streq(sbx_violation_kind_to_string(i), kinds[i]) &&
                      sbx_violation_kind_from_string(kinds[i]) == i;
        ok(all, "violation kind names exactly as DESIGN.md");

        static const char *const mechs[] = {
                "none", "cgroup_v2", "cgroup_v1", "rlimit", "seccomp", "supervisor", "tmpfs"};
        all = ELEMENTSOF(mechs) == _SBX_MECH_MAX;
        for (int i = 0; all && i < _SBX_MECH_MAX; i++)
                all = streq(sbx_mechanism_to_string(i), mechs[i]) &&
                      sbx_mechanism_from_string(mechs[i]) == i;
        ok(all, "mechanism names");
}

static void test_status_precedence(void) {
        /* Highest first. */
        static const sbx_status order[] = {SBX_STATUS_SETUP_ERROR, SBX_STATUS_CANCELLED, SBX_STATUS_TIMEOUT,
                SBX_STATUS_MEMORY_LIMIT, SBX_STATUS_PROCESS_LIMIT, SBX_STATUS_OUTPUT_LIMIT,
                SBX_STATUS_VIOLATION, SBX_STATUS_SIGNALED, SBX_STATUS_EXITED};
        bool all = ELEMENTSOF(order) == _SBX_STATUS_MAX;
        for (size_t i = 0; i < ELEMENTSOF(order); i++)
                for (size_t k = 0; k < ELEMENTSOF(order); k++) {
                        sbx_status want = order[MIN(i, k)];
                        if (sbx_status_merge(order[i], order[k]) != want) {
                                diag("merge(%s, %s) = %s, want %s", sbx_status_to_string(order[i]),
                                        sbx_status_to_string(order[k]),
                                        sbx_status_to_string(sbx_status_merge(order[i], order[k])),
                                        sbx_status_to_string(want));
                                all = false;
                        }
                }
        ok(all, "status precedence: setup_error > cancelled > timeout > memory > process > output > "
                "violation > signaled > exited, symmetric");
        is_int(sbx_status_merge(_SBX_STATUS_INVALID, SBX_STATUS_EXITED), SBX_STATUS_EXITED,
                "an invalid status never wins");

        _cleanup_(sbx_report_freep) sbx_report *r = NULL;
        if (sbx_report_new(&r) < 0)
                return (void) ok(false, "sbx_report_new");
        sbx_report_merge_status(r, SBX_STATUS_SIGNALED);
        sbx_report_merge_status(r, SBX_STATUS_TIMEOUT);
        sbx_report_merge_status(r, SBX_STATUS_VIOLATION);
        is_str(sbx_status_to_string(r->status), "timeout", "merge_status keeps the winner");
}

static void test_new(void) {
        _cleanup_(sbx_report_freep) sbx_report *a = NULL, *b = NULL;
        is_int(sbx_report_new(&a), 0, "sbx_report_new");
        is_int(sbx_report_new(&b), 0, "sbx_report_new again");
        if (!a || !b)
                return;
        bool shape = strlen(a->id) == 28 && strncmp(a->id, "run_", 4) == 0 &&
                     strspn(a->id + 4, "0123456789abcdef") == 24;
        ok(shape, "id is run_ + 24 hex (%s)", a->id);
        ok(strcmp(a->id, b->id) != 0, "ids differ");
        is_int(a->status, SBX_STATUS_EXITED, "fresh report: exited");
        ok(a->kernel[0] != 0, "host kernel filled (%s)", a->kernel);
        ok(a->cgroup && (streq(a->cgroup, "v1") || streq(a->cgroup, "v2") || streq(a->cgroup, "hybrid") ||
                                streq(a->cgroup, "none")),
                "host cgroup layout (%s)", a->cgroup ? a->cgroup : "(null)");
        is_int(a->unprivileged, geteuid() != 0, "host unprivileged matches euid");
        int abi = sbx_host_landlock_abi();
        is_int(a->landlock_abi, abi < 0 ? -1 : abi, "host landlock ABI (%d)", a->landlock_abi);
}

static void test_violations(void) {
        _cleanup_(sbx_report_freep) sbx_report *r = NULL;
        if (sbx_report_new(&r) < 0)
                return (void) ok(false, "sbx_report_new");

        sbx_detail d[3] = {
                {.key = "family", .str = (char *) "inet"},
                {.key = "address", .str = (char *) "10.0.0.1"},
                {.key = "port", .num = 443},
        };
        is_int(sbx_report_add_violation(r, SBX_VIOLATION_NETWORK_ACCESS, "denied", 12, "connect", d, 3), 1,
                "first violation added");
        for (int i = 0; i < 99; i++)
                sbx_report_add_violation(r, SBX_VIOLATION_NETWORK_ACCESS, "denied", 13 + i, "connect", d, 3);
        is_int(sbx_report_add_violation(r, SBX_VIOLATION_NETWORK_ACCESS, "denied", 5, "connect", d, 3), 0,
                "identical violation merged");
        is_int(r->n_violations, 1, "100 identical connects: one entry");
        is_int(r->violations[0].count, 101, "count 101");
        is_int(r->violations[0].first_at_ms, 5, "first_at_ms is the earliest");
        is_int(r->violations[0].last_at_ms, 111, "last_at_ms is the latest");

        d[2].num = 80;
        sbx_report_add_violation(r, SBX_VIOLATION_NETWORK_ACCESS, "denied", 20, "connect", d, 3);
        sbx_report_add_violation(r, SBX_VIOLATION_NETWORK_ACCESS, "killed", 20, "connect", d, 3);
        sbx_report_add_violation(r, SBX_VIOLATION_NETWORK_ACCESS, "denied", 20, "sendto", d, 3);
        sbx_report_add_violation(r, SBX_VIOLATION_NETWORK_ACCESS, "denied", 20, "connect", d, 2);
        is_int(r->n_violations, 5, "differing detail, action, syscall, detail count: separate entries");

        is_int(sbx_report_add_violation(r, SBX_VIOLATION_SYSCALL, NULL, 1, NULL, NULL, 0), 1,
                "no action (= denied), no syscall, no details");
        is_str(r->violations[5].action, "denied", "default action denied");
        is_int(sbx_report_add_violation(r, _SBX_VIOLATION_MAX, NULL, 1, NULL, NULL, 0), -EINVAL,
                "invalid kind refused");
        sbx_detail many[SBX_VIOLATION_MAX_DETAILS + 1] = {};
        is_int(sbx_report_add_violation(r, SBX_VIOLATION_SYSCALL, NULL, 1, NULL, many, ELEMENTSOF(many)),
                -E2BIG, "too many details refused");

        /* Fill to the cap with distinct paths, then overflow. */
        char path[64];
        sbx_detail fd[1] = {{.key = "path"}};
        fd[0].str = path;
        size_t before = r->n_violations;
        for (int i = 0; i < SBX_REPORT_MAX_VIOLATIONS + 10; i++) {
                snprintf(path, sizeof path, "/etc/file%d", i);
                sbx_report_add_violation(r, SBX_VIOLATION_FILESYSTEM_WRITE, "denied", i, "openat", fd, 1);
        }
        is_int(r->n_violations, SBX_REPORT_MAX_VIOLATIONS, "distinct violations capped at %d",
                SBX_REPORT_MAX_VIOLATIONS);
        is_int(r->violations_dropped, before + 10, "the rest counted in violations_dropped");
        snprintf(path, sizeof path, "/etc/file0");
        is_int(sbx_report_add_violation(r, SBX_VIOLATION_FILESYSTEM_WRITE, "denied", 500, "openat", fd, 1),
                0, "a known violation still merges when full");
        is_int(r->violations[before].count, 2, "merged into its entry");
        is_int(r->violations_dropped, before + 10, "and is not counted as dropped");

        _cleanup_free_ char *json = NULL;
        is_int(sbx_report_to_json(r, false, &json), 0, "report with violations serialises");
        jnode *root = json ? jparse(json) : NULL;
        ok(root, "and parses as JSON");
        is_str(jstr(root, "violations.0.kind"), "NetworkAccessViolation", "violations[0].kind");
        is_int(jnum(root, "violations.0.count"), 101, "violations[0].count");
        is_int(jnum(root, "violations.0.at_ms"), 5, "violations[0].at_ms = first_at_ms");
        is_int(jnum(root, "violations.0.last_at_ms"), 111, "violations[0].last_at_ms");
        is_str(jstr(root, "violations.0.syscall"), "connect", "violations[0].syscall");
        is_str(jstr(root, "violations.0.detail.address"), "10.0.0.1", "violations[0].detail.address");
        is_int(jnum(root, "violations.0.detail.port"), 443, "violations[0].detail.port is a number");
        ok(!jget(root, "violations.5.syscall"), "no syscall key when not a syscall event");
        ok(jis(root, "violations.5.detail", 'o') && jget(root, "violations.5.detail")->n == 0,
                "empty detail object");
        is_int(jnum(root, "violations_dropped"), (double) (before + 10), "violations_dropped serialised");
        ok(jget(root, "violations")->n == SBX_REPORT_MAX_VIOLATIONS, "violations array capped");
        jfree(root);
}

static void test_escaping(void) {
        is_str(quoted("a\"b\\c/d", 7), "\"a\\\"b\\\\c/d\"", "quotes and backslashes escaped");
        is_str(quoted("\b\f\n\r\t", 5), "\"\\b\\f\\n\\r\\t\"", "short escapes");
        is_str(quoted("\x01\x1f\x7f", 3), "\"\\u0001\\u001f\\u007f\"", "other control chars as \\u00XX");
        is_str(quoted("a\0b", 3), "\"a\\u0000b\"", "embedded NUL");
        is_str(quoted("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 12),
                "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "valid UTF-8 passes through");
        is_str(quoted("\xff", 1), "\"\\ufffd\"", "invalid byte → \\ufffd");
        is_str(quoted("a\xe2\x82", 3), "\"a\\ufffd\"", "truncated sequence at the end → one \\ufffd");
        is_str(quoted("\xe2\x82z", 3), "\"\\ufffdz\"", "truncated sequence mid-string keeps the next char");
        is_str(quoted("\xc0\xaf", 2), "\"\\ufffd\\ufffd\"", "overlong encoding rejected");
        is_str(quoted("\xed\xa0\x80", 3), "\"\\ufffd\\ufffd\\ufffd\"", "UTF-16 surrogate rejected");
        is_str(quoted("\xf4\x90\x80\x80", 4), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", "above U+10FFFF rejected");
        is_str(quoted("\xe2\x80\xa8\xe2\x80\xa9", 6), "\"\\u2028\\u2029\"", "U+2028/2029 escaped");

        /* Every byte value, in every position: output must parse and be valid UTF-8. */
        char all[256 * 3];
        for (int i = 0; i < 256; i++)
                all[i] = all[256 + i] = (char) i, all[512 + i] = (char) (255 - i);
        char *q = NULL;
        int r = json_quote(all, sizeof all, &q);
        jnode *n = r == 0 ? jparse(q) : NULL;
        ok(n && n->type == 's', "all 256 byte values: output parses as a JSON string");
        jfree(n);
        free(q);

        /* Round trip of a valid string with everything that needs escaping. */
        static const char src[] = "line1\nline2\t\"q\" \\ \x01 \xc3\xa9 \xf0\x9f\x98\x80 \xe2\x80\xa8";
        q = NULL;
        json_quote(src, STRLEN(src), &q);
        n = q ? jparse(q) : NULL;
        ok(n && n->slen == STRLEN(src) && memcmp(n->str, src, STRLEN(src)) == 0,
                "escaped string decodes back to the original");
        jfree(n);
        free(q);

        /* json_fputs: the same escaping, written as it goes (profile show, profile list --json). */
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        json_fputs(f, "a\"\x01\xff\xe2\x80\xa8");
        fputc(' ', f);
        json_fputs(f, NULL);
        fclose(f);
        is_str(buf, "\"a\\\"\\u0001\\ufffd\\u2028\" null", "json_fputs escapes as json_quote; NULL is null");
        free(buf);
}

static void test_numbers(void) {
        is_str(dbl(0.1), "0.1", "0.1 shortest");
        is_str(dbl(45), "45", "integral double");
        is_str(dbl(1.5), "1.5", "1.5");
        is_str(dbl(-0.0), "-0", "negative zero");
        /* whole numbers take the integer path: the text %.15g gives, up to its 15 digits */
        is_str(dbl(0), "0", "zero");
        is_str(dbl(-7), "-7", "a negative whole number");
        is_str(dbl(123456789012345.0), "123456789012345", "15 digits, whole");
        is_str(dbl(-999999999999999.0), "-999999999999999", "the largest negative whole number below 1e15");
        is_str(dbl(1e15), "1e+15", "1e15 is %%.15g's, not the integer path's");
        is_str(dbl(4503599627370497.0), "4503599627370497",
                "above 2^52: still the shortest that round-trips");
        is_str(dbl(NAN), "null", "NaN → null");
        is_str(dbl(INFINITY), "null", "inf → null");
        is_str(dbl(-INFINITY), "null", "-inf → null");
        bool all = true;
        const double vals[] = {1.0 / 3, 2.0 / 3, 1e300, -1e-300, 5e-324, 1.7976931348623157e308,
                123456789.125, 0.30000000000000004};
        for (size_t i = 0; i < ELEMENTSOF(vals); i++) {
                const char *s = dbl(vals[i]);
                jnode *n = jparse(s);
                if (!n || n->type != 'd' || n->num != vals[i]) {
                        diag("%.17g written as %s", vals[i], s);
                        all = false;
                }
                jfree(n);
        }
        ok(all, "doubles round-trip exactly and parse as JSON numbers");

        const char *loc = NULL;
        static const char *const comma_locales[] = {
                "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "ru_RU.UTF-8"};
        for (size_t i = 0; i < ELEMENTSOF(comma_locales) && !loc; i++)
                loc = setlocale(LC_NUMERIC, comma_locales[i]);
        if (loc) {
                is_str(dbl(1.5), "1.5", "decimal point is '.' under LC_NUMERIC=%s", loc);
                setlocale(LC_NUMERIC, "C");
        } else
                skip(1, "no locale with a decimal comma installed");

        char *t = NULL;
        jsonw w;
        jsonw_init(&w, false);
        jsonw_begin_array(&w);
        jsonw_int(&w, INT64_MIN);
        jsonw_int(&w, INT64_MAX);
        jsonw_uint(&w, UINT64_MAX);
        jsonw_end_array(&w);
        jsonw_finish(&w, false, &t, NULL);
        is_str(t, "[-9223372036854775808,9223372036854775807,18446744073709551615]", "64-bit integers");
        free(t);
}

static void test_structure(void) {
        jsonw w;
        char *t = NULL;
        size_t len = 0;

        jsonw_init(&w, true);
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "a", "x");
        jsonw_key(&w, "b");
        jsonw_begin_array(&w);
        jsonw_int(&w, 1);
        jsonw_bool(&w, false);
        jsonw_null(&w);
        jsonw_end_array(&w);
        jsonw_key(&w, "e");
        jsonw_begin_object(&w);
        jsonw_end_object(&w);
        jsonw_key(&w, "f");
        jsonw_begin_array(&w);
        jsonw_end_array(&w);
        jsonw_end_object(&w);
        is_int(jsonw_finish(&w, true, &t, &len), 0, "pretty document finishes");
        is_str(t,
                "{\n  \"a\": \"x\",\n  \"b\": [\n    1,\n    false,\n    null\n  ],\n  \"e\": {},\n  \"f\": "
                "[]\n}\n",
                "pretty layout, empty containers compact");
        is_int(len, t ? strlen(t) : 0, "ret_len is the length");
        free(t);
        jsonw_done(&w);

        jsonw_init(&w, false);
        jsonw_begin_object(&w);
        is_int(jsonw_int(&w, 1), -EINVAL, "value without key in an object refused");
        is_int(jsonw_key(&w, "k"), -EINVAL, "errors are sticky");
        t = NULL;
        is_int(jsonw_finish(&w, false, &t, NULL), -EINVAL, "finish reports the sticky error");
        ok(!t, "no text on error");
        jsonw_done(&w);

        jsonw_init(&w, false);
        jsonw_begin_array(&w);
        is_int(jsonw_end_object(&w), -EINVAL, "mismatched end refused");
        jsonw_done(&w);

        jsonw_init(&w, false);
        jsonw_begin_array(&w);
        is_int(jsonw_key(&w, "k"), -EINVAL, "key inside an array refused");
        jsonw_done(&w);

        jsonw_init(&w, false);
        jsonw_begin_object(&w);
        jsonw_key(&w, "k");
        is_int(jsonw_end_object(&w), -EINVAL, "key without value refused");
        jsonw_done(&w);

        jsonw_init(&w, false);
        jsonw_begin_array(&w);
        is_int(jsonw_finish(&w, false, &t, NULL), -EINVAL, "unclosed container: finish refuses");
        jsonw_done(&w);

        jsonw_init(&w, false);
        jsonw_int(&w, 1);
        is_int(jsonw_int(&w, 2), -EINVAL, "second top-level value refused");
        jsonw_done(&w);

        jsonw_init(&w, false);
        is_int(jsonw_finish(&w, false, &t, NULL), -EINVAL, "empty document refused");
        jsonw_done(&w);

        jsonw_init(&w, false);
        int r = 0;
        for (int i = 0; i <= JSONW_MAX_DEPTH && r == 0; i++)
                r = jsonw_begin_array(&w);
        is_int(r, -EINVAL, "nesting beyond JSONW_MAX_DEPTH refused");
        jsonw_done(&w);

        /* A large document: the buffer grows. */
        jsonw_init(&w, false);
        jsonw_begin_array(&w);
        for (int i = 0; i < 100000; i++)
                jsonw_string(&w, "0123456789");
        jsonw_end_array(&w);
        t = NULL;
        is_int(jsonw_finish(&w, false, &t, &len), 0, "100000 strings");
        is_int(len, 1 + 100000 * 13 - 1 + 1, "of the expected length");
        free(t);
}

static void test_setup_error_report(const char *dir) {
        _cleanup_(sbx_report_freep) sbx_report *r = NULL;
        if (sbx_report_new(&r) < 0)
                return (void) ok(false, "sbx_report_new");
        r->status = SBX_STATUS_SETUP_ERROR;
        r->cli_exit = 125;
        is_int(sbx_report_set_error(r, "profile %s: unknown key 'lmits' at %d:%d", "x.yaml", 3, 1), 0,
                "set_error");
        _cleanup_free_ char *json = NULL;
        is_int(sbx_report_to_json(r, true, &json), 0, "setup error report without config serialises");
        jnode *root = json ? jparse(json) : NULL;
        ok(root, "and parses");
        is_str(jstr(root, "schema"), "sandboxer.report/v1", "schema");
        is_str(jstr(root, "status"), "setup_error", "status setup_error");
        is_str(jstr(root, "error"), "profile x.yaml: unknown key 'lmits' at 3:1", "error message");
        ok(jis(root, "exit.code", 'n') && jis(root, "exit.signal", 'n'), "exit code and signal null");
        ok(jis(root, "backend", 'n') && jis(root, "isolation", 'n'), "backend and isolation null");
        ok(jis(root, "config", 'o'), "config is an object");
        ok(jis(root, "config.profile", 'n') && jis(root, "config.policy_sha256", 'n') &&
                        jis(root, "config.policy_file", 'n') && jis(root, "config.limits", 'n') &&
                        jis(root, "config.network", 'n') && jis(root, "config.process", 'n') &&
                        jis(root, "config.workspace", 'n') && jis(root, "config.filesystem", 'n'),
                "its fields are null");
        ok(jis(root, "config.mounts", 'a') && jget(root, "config.mounts")->n == 0, "mounts empty");
        ok(jis(root, "host.unprivileged", 'b') && jis(root, "host.kernel", 's'), "host filled");
        jfree(root);

        char p[512];
        snprintf(p, sizeof p, "%s/setup-error.json", dir);
        is_int(sbx_report_write_file(r, p), 0, "write_file");

        /* The same through write_fd, compact check of the bytes. */
        snprintf(p, sizeof p, "%s/setup-error-fd.json", dir);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        is_int(sbx_report_write_fd(r, fd), 0, "write_fd");
        is_int(sbx_report_write_fd(r, -1), -EBADF, "write_fd(-1) refused");

        r->status = -5;
        _cleanup_free_ char *bad = NULL;
        is_int(sbx_report_to_json(r, false, &bad), -EINVAL, "invalid status refused");
}

static char *ro_paths[] = {(char *) "/usr", (char *) "/lib", (char *) "/etc/ssl/certs", NULL};
static char *egress[] = {(char *) "pypi.org:443", (char *) "*.example.com", NULL};
static char *empty[] = {NULL};
static char *cmds[] = {(char *) "python3", NULL};

static void fill_full_report(sbx_report *r, sbx_profile *p, sbx_policy *pol, sbx_config *c) {
        *p = (sbx_profile){
                .id = (char *) "profile.python",
                .version = (char *) "1.0.0",
                .net_allow = false,
                .egress = egress,
                .loopback = true,
                .ws_mount = (char *) "/workspace",
                .ws_access = SBX_ACCESS_RO,
                .fs_read = ro_paths,
                .fs_write = empty,
                .fs_exec = cmds,
                .fs_exec_set = true,
                .allow_spawn = false,
                .cmd_mode = SBX_CMD_MODE_WARN,
                .cmd_allow = cmds,
                .cmd_deny = empty,
                .on_violation = SBX_ON_VIOLATION_KILL,
        };
        *pol = (sbx_policy){.source_file = (char *) "builtin"};
        memset(pol->sha256, 'a', 64);
        *c = (sbx_config){.policy = pol,
                .profile = p,
                .mode = SBX_MODE_BALANCED,
                .workspace = (char *) "/home/u/src \"quoted\""};
        static const double vals[_SBX_LIMIT_MAX] = {45, 180, 1.5, 1024, 256, 10, 512};
        for (int i = 0; i < _SBX_LIMIT_MAX; i++) {
                c->limits.value[i] = vals[i];
                c->limits.set[i] = true;
                c->limits.source[i] = i == SBX_LIMIT_TIMEOUT_S ? SBX_SRC_PROFILE : SBX_SRC_POLICY;
        }
        r->config = c;
        r->limit_mechanism[SBX_LIMIT_MEMORY_MB] = SBX_MECH_CGROUP_V2;
        r->limit_mechanism[SBX_LIMIT_PIDS] = SBX_MECH_CGROUP_V1;
        r->limit_mechanism[SBX_LIMIT_TIMEOUT_S] = SBX_MECH_SUPERVISOR;
        r->limit_mechanism[SBX_LIMIT_SCRATCH_MB] = SBX_MECH_TMPFS;
        r->limit_mechanism[SBX_LIMIT_OUTPUT_MB] = SBX_MECH_SUPERVISOR;
        r->limit_mechanism[SBX_LIMIT_CPUS] = SBX_MECH_RLIMIT;
        r->status = SBX_STATUS_VIOLATION;
        r->has_exit_code = false;
        r->exit_signal = 31;
        r->killed_by_sandbox = true;
        r->backend = "native";
        r->isolation = "container";
        r->observation = "active";
        sbx_report_set_backend_reason(r, "auto: first of [native, landlock] available");
        r->egress_proxy = "127.0.0.1:3128";
        is_int(sbx_report_add_conn(r, &(sbx_report_conn){.host = (char *) "pypi.org",
                                              .port = 443,
                                              .via = "connect",
                                              .rule = (char *) "pypi.org",
                                              .bytes_up = 517,
                                              .bytes_down = 6000,
                                              .at_ms = 40,
                                              .ms = 12}),
                0, "a connection kept");
        r->egress_refused = 2;
        sbx_report_add_mount(r, "/usr", "/usr", "bind-ro");
        sbx_report_add_mount(r, "tmpfs", "/tmp", "tmpfs");
        sbx_detail d[] = {{.key = "path", .str = (char *) "/etc/pa\x01sswd\xff"},
                {.key = "access", .str = (char *) "write"}};
        sbx_report_add_violation(r, SBX_VIOLATION_FILESYSTEM_WRITE, "denied", 3, NULL, d, 2);
        sbx_detail s[] = {{.key = "nr", .num = 41}};
        sbx_report_add_violation(r, SBX_VIOLATION_SYSCALL, "killed", 7, "socket", s, 1);
        r->wall_ms = 1234;
        r->cpu_user_ms = 10;
        r->max_rss_kb = 20480;
        r->pids_peak = 3;
        r->stdout_bytes = 1ULL << 40;
        r->setup_ms = 12;
        r->exec_ms = 1200;
        r->teardown_ms = 22;
}

static void test_full_report(const char *dir) {
        _cleanup_(sbx_report_freep) sbx_report *r = NULL;
        if (sbx_report_new(&r) < 0)
                return (void) ok(false, "sbx_report_new");
        sbx_profile p;
        sbx_policy pol;
        sbx_config c;
        fill_full_report(r, &p, &pol, &c);

        for (int pretty = 0; pretty <= 1; pretty++) {
                _cleanup_free_ char *json = NULL;
                is_int(sbx_report_to_json(r, pretty, &json), 0, "full report serialises (%s)",
                        pretty ? "pretty" : "compact");
                ok(json && json[strlen(json) - 1] == '\n', "newline-terminated");
                ok(json && (pretty || strchr(json, '\n') == json + strlen(json) - 1), "compact is one line");
                jnode *root = json ? jparse(json) : NULL;
                ok(root, "parses");
                is_str(jstr(root, "config.profile"), "profile.python@1.0.0", "config.profile id@version");
                is_int(jnum(root, "config.limits.cpus.value"), 1.5, "config.limits.cpus.value");
                is_str(jstr(root, "config.limits.timeout_s.source"), "profile", "limits source");
                is_str(jstr(root, "config.limits.memory_mb.mechanism"), "cgroup_v2", "limits mechanism");
                is_str(jstr(root, "config.limits.budget_s.mechanism"), "none", "unset mechanism is none");
                is_str(jstr(root, "config.workspace.path"), "/home/u/src \"quoted\"",
                        "workspace path round-trips");
                is_str(jstr(root, "config.workspace.access"), "ro", "workspace access");
                is_str(jstr(root, "config.network.default"), "deny", "network default");
                is_str(jstr(root, "config.network.egress.1"), "*.example.com", "egress list");
                is_str(jstr(root, "config.mounts.1.kind"), "tmpfs", "mounts");
                ok(jis(root, "config.process.allow_spawn", 'b') &&
                                !jget(root, "config.process.allow_spawn")->b,
                        "process.allow_spawn false");
                is_str(jstr(root, "config.on_violation"), "kill", "on_violation");
                is_str(jstr(root, "violations.0.detail.path"), "/etc/pa\x01sswd\xef\xbf\xbd",
                        "control char kept, invalid byte became U+FFFD");
                is_int(jnum(root, "exit.signal"), 31, "exit.signal");
                ok(jis(root, "exit.code", 'n'), "exit.code null");
                is_int(jnum(root, "usage.stdout_bytes"), (double) (1ULL << 40), "large usage counter");
                is_str(jstr(root, "backend_reason"), "auto: first of [native, landlock] available",
                        "backend_reason");
                is_str(jstr(root, "egress.connections.0.host"), "pypi.org", "egress connection host");
                is_int(jnum(root, "egress.bytes_down"), 6000, "egress bytes counted");
                is_int(jnum(root, "egress.allowed"), 1, "egress allowed counted");
                jfree(root);
        }

        char path[512];
        snprintf(path, sizeof path, "%s/full.json", dir);
        is_int(sbx_report_write_file(r, path), 0, "write full report");

        /* Done with the borrowed config: detach it before the stack frame goes. */
        r->config = NULL;
}

static int run(const char *cmd) {
        int s = system(cmd);
        if (s < 0 || !WIFEXITED(s))
                return -1;
        return WEXITSTATUS(s);
}

static void test_schema(const char *dir) {
        if (run("python3 -c 'import jsonschema' >/dev/null 2>&1") != 0) {
                skip(4, "python3 with the jsonschema module is not available (apt install "
                        "python3-jsonschema)");
                return;
        }
        char cmd[2048];
        const char *tool = SBX_SOURCE_ROOT "/tests/tools/validate-report.py";

        snprintf(cmd, sizeof cmd,
                "python3 %s %s/setup-error.json %s/setup-error-fd.json %s/full.json >/dev/null", tool, dir,
                dir, dir);
        is_int(run(cmd), 0, "sample reports validate against docs/report.schema.json");

        /* A fresh, default report (exited, nothing filled). */
        _cleanup_(sbx_report_freep) sbx_report *r = NULL;
        char p[512];
        snprintf(p, sizeof p, "%s/fresh.json", dir);
        if (sbx_report_new(&r) == 0) {
                r->has_exit_code = true;
                sbx_report_write_file(r, p);
        }
        snprintf(cmd, sizeof cmd, "python3 %s %s >/dev/null", tool, p);
        is_int(run(cmd), 0, "fresh report validates");

        /* The schema must refuse what is wrong (a check that can fail). */
        snprintf(cmd, sizeof cmd,
                "sed 's/\"status\": \"exited\"/\"status\": \"finished\"/' %s > %s/bad-status.json && "
                "python3 %s %s/bad-status.json 2>/dev/null",
                p, dir, tool, dir);
        is_int(run(cmd), 1, "an unknown status is refused by the schema");
        snprintf(cmd, sizeof cmd,
                "sed 's/\"kind\": \"SyscallViolation\"/\"kind\": \"SyscallViolations\"/' %s/full.json > "
                "%s/bad-kind.json && "
                "python3 %s %s/bad-kind.json 2>/dev/null",
                dir, dir, tool, dir);
        is_int(run(cmd), 1, "an unknown violation kind is refused by the schema");
}

int main(void) {
        char dir[] = "/tmp/test-report.XXXXXX";
        if (!mkdtemp(dir)) {
                printf("Bail out! mkdtemp: %m\n");
                return 1;
        }

        test_names();
        test_status_precedence();
        test_new();
        test_violations();
        test_escaping();
        test_numbers();
        test_structure();
        test_setup_error_report(dir);
        test_full_report(dir);
        test_schema(dir);

        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) run(cmd);
        return done_testing();
}
