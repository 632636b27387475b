/* jsonw.c — streaming JSON writer: structure checking, string escaping with UTF-8 repair,
 * locale-independent shortest round-trip doubles. */
#include "jsonw.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jsonw_init(jsonw *w, bool pretty) {
        *w = (jsonw){.pretty = pretty};
}

void jsonw_done(jsonw *w) {
        if (!w)
                return;
        bool pretty = w->pretty;
        free(w->buf);
        jsonw_init(w, pretty);
}

static int fail(jsonw *w, int r) {
        if (w->error == 0)
                w->error = r;
        return w->error;
}

static int emit(jsonw *w, const char *s, size_t n) {
        if (w->error)
                return w->error;
        if (n >= SIZE_MAX - w->len - 1)
                return fail(w, -ENOMEM);
        if (w->len + n + 1 > w->cap) {
                size_t cap = w->cap ? w->cap : 256;
                while (cap < w->len + n + 1) {
                        if (cap > SIZE_MAX / 2)
                                return fail(w, -ENOMEM);
                        cap *= 2;
                }
                char *b = realloc(w->buf, cap);
                if (!b)
                        return fail(w, -ENOMEM);
                w->buf = b;
                w->cap = cap;
        }
        memcpy(w->buf + w->len, s, n);
        w->len += n;
        w->buf[w->len] = 0;
        return 0;
}

static int emit_indent(jsonw *w, unsigned depth) {
        static const char spaces[] = "                                ";
        int r = emit(w, "\n", 1);
        for (size_t n = (size_t) depth * 2; r == 0 && n > 0;) {
                size_t k = MIN(n, STRLEN(spaces));
                r = emit(w, spaces, k);
                n -= k;
        }
        return r;
}

/* Position the writer for a value: separators, indentation, and the structural checks. */
static int begin_value(jsonw *w) {
        if (w->error)
                return w->error;
        if (w->depth == 0)
                return w->done ? fail(w, -EINVAL) : 0;
        unsigned top = w->depth - 1;
        if (w->stack[top] == '{') {
                if (!w->expect_value)
                        return fail(w, -EINVAL);
                w->expect_value = false;
                return 0;
        }
        int r = 0;
        if (w->nonempty[top])
                r = emit(w, ",", 1);
        if (r == 0 && w->pretty)
                r = emit_indent(w, w->depth);
        w->nonempty[top] = true;
        return r;
}

static void end_value(jsonw *w) {
        if (w->depth == 0 && w->error == 0)
                w->done = true;
}

/* Length of the UTF-8 sequence at s (n > 0 bytes available). *ok says whether it is a
 * well-formed scalar value (Unicode Table 3-7: no overlongs, surrogates or > U+10FFFF); when
 * not, the return value is the length of the maximal ill-formed subpart, which becomes one
 * U+FFFD, the practice of the Unicode standard and of WHATWG decoders. */
static size_t utf8_sequence(const uint8_t *s, size_t n, bool *ok) {
        uint8_t c = s[0], lo = 0x80, hi = 0xBF;
        size_t need;

        if (c >= 0xC2 && c <= 0xDF)
                need = 1;
        else if (c == 0xE0) {
                need = 2;
                lo = 0xA0;
        } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
                need = 2;
        else if (c == 0xED) {
                need = 2;
                hi = 0x9F;
        } else if (c == 0xF0) {
                need = 3;
                lo = 0x90;
        } else if (c >= 0xF1 && c <= 0xF3)
                need = 3;
        else if (c == 0xF4) {
                need = 3;
                hi = 0x8F;
        } else {
                *ok = false;
                return 1;
        }
        for (size_t k = 1; k <= need; k++) {
                if (k >= n || s[k] < lo || s[k] > hi) {
                        *ok = false;
                        return k;
                }
                lo = 0x80;
                hi = 0xBF;
        }
        *ok = true;
        return need + 1;
}

static int emit_escaped(jsonw *w, const char *str, size_t n) {
        const uint8_t *s = (const uint8_t *) str;
        int r = emit(w, "\"", 1);

        for (size_t i = 0; r == 0 && i < n;) {
                size_t start = i;
                while (i < n && s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\')
                        i++;
                if (i > start && (r = emit(w, str + start, i - start)) < 0)
                        break;
                if (i >= n)
                        break;

                uint8_t c = s[i];
                if (c < 0x80) {
                        char esc[8];
                        switch (c) {
                        case '"':
                                r = emit(w, "\\\"", 2);
                                break;
                        case '\\':
                                r = emit(w, "\\\\", 2);
                                break;
                        case '\b':
                                r = emit(w, "\\b", 2);
                                break;
                        case '\f':
                                r = emit(w, "\\f", 2);
                                break;
                        case '\n':
                                r = emit(w, "\\n", 2);
                                break;
                        case '\r':
                                r = emit(w, "\\r", 2);
                                break;
                        case '\t':
                                r = emit(w, "\\t", 2);
                                break;
                        default: /* other C0 controls and DEL */
                                snprintf(esc, sizeof esc, "\\u%04x", c);
                                r = emit(w, esc, 6);
                                break;
                        }
                        i++;
                        continue;
                }

                bool ok;
                size_t l = utf8_sequence(s + i, n - i, &ok);
                if (!ok)
                        r = emit(w, "\\ufffd", 6);
                else if (l == 3 && c == 0xE2 && s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9))
                        /* U+2028/U+2029 are valid JSON but end lines in JavaScript: escape. */
                        r = emit(w, s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 6);
                else
                        r = emit(w, str + i, l);
                i += l;
        }
        if (r == 0)
                r = emit(w, "\"", 1);
        return r;
}

static int begin_container(jsonw *w, char open) {
        int r = begin_value(w);
        if (r < 0)
                return r;
        if (w->depth >= JSONW_MAX_DEPTH)
                return fail(w, -EINVAL);
        r = emit(w, &open, 1);
        if (r < 0)
                return r;
        w->stack[w->depth] = open;
        w->nonempty[w->depth] = false;
        w->depth++;
        return 0;
}

static int end_container(jsonw *w, char open, char close) {
        if (w->error)
                return w->error;
        if (w->depth == 0 || w->stack[w->depth - 1] != open || w->expect_value)
                return fail(w, -EINVAL);
        int r = 0;
        if (w->pretty && w->nonempty[w->depth - 1])
                r = emit_indent(w, w->depth - 1);
        if (r == 0)
                r = emit(w, &close, 1);
        if (r < 0)
                return r;
        w->depth--;
        end_value(w);
        return 0;
}

int jsonw_begin_object(jsonw *w) {
        return begin_container(w, '{');
}

int jsonw_end_object(jsonw *w) {
        return end_container(w, '{', '}');
}

int jsonw_begin_array(jsonw *w) {
        return begin_container(w, '[');
}

int jsonw_end_array(jsonw *w) {
        return end_container(w, '[', ']');
}

int jsonw_key(jsonw *w, const char *key) {
        if (w->error)
                return w->error;
        if (!key || w->depth == 0 || w->stack[w->depth - 1] != '{' || w->expect_value)
                return fail(w, -EINVAL);
        unsigned top = w->depth - 1;
        int r = 0;
        if (w->nonempty[top])
                r = emit(w, ",", 1);
        if (r == 0 && w->pretty)
                r = emit_indent(w, w->depth);
        if (r == 0)
                r = emit_escaped(w, key, strlen(key));
        if (r == 0)
                r = w->pretty ? emit(w, ": ", 2) : emit(w, ":", 1);
        if (r < 0)
                return r;
        w->nonempty[top] = true;
        w->expect_value = true;
        return 0;
}

static int scalar(jsonw *w, const char *text, size_t n) {
        int r = begin_value(w);
        if (r == 0)
                r = emit(w, text, n);
        if (r == 0)
                end_value(w);
        return r;
}

int jsonw_string_len(jsonw *w, const char *s, size_t n) {
        if (!s)
                return jsonw_null(w);
        int r = begin_value(w);
        if (r == 0)
                r = emit_escaped(w, s, n);
        if (r == 0)
                end_value(w);
        return r;
}

int jsonw_string(jsonw *w, const char *s) {
        return jsonw_string_len(w, s, s ? strlen(s) : 0);
}

int jsonw_int(jsonw *w, int64_t v) {
        char b[32];
        int n = snprintf(b, sizeof b, "%" PRId64, v);
        return scalar(w, b, (size_t) n);
}

int jsonw_uint(jsonw *w, uint64_t v) {
        char b[32];
        int n = snprintf(b, sizeof b, "%" PRIu64, v);
        return scalar(w, b, (size_t) n);
}

/* The "C" numeric locale, created once and kept for the life of the process. NULL when it
 * cannot be had (out of memory): callers then fall back to %.17g, which always round-trips. */
static locale_t c_numeric_locale(void) {
        static locale_t cached = (locale_t) 0;
        locale_t l = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
        if (l)
                return l;
        l = newlocale(LC_NUMERIC_MASK, "C", (locale_t) 0);
        if (!l)
                return (locale_t) 0;
        locale_t expected = (locale_t) 0;
        if (!__atomic_compare_exchange_n(&cached, &expected, l, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                freelocale(l);
                return expected;
        }
        return l;
}

/* Format with printf in whatever locale is current, then turn the decimal point (which a
 * locale may spell "," or as a multi-byte sequence) into '.'. %g never groups digits, so
 * anything that is not a digit, sign or exponent marker is the decimal point. */
static size_t format_double(char *b, size_t size, int precision, double v) {
        char raw[64];
        int n = snprintf(raw, sizeof raw, "%.*g", precision, v);
        size_t o = 0;
        bool in_point = false;
        for (int i = 0; i < n && o + 1 < size; i++) {
                char c = raw[i];
                if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e' || c == 'E') {
                        b[o++] = c;
                        in_point = false;
                } else if (!in_point) {
                        b[o++] = '.';
                        in_point = true;
                }
        }
        b[o] = 0;
        return o;
}

int jsonw_double(jsonw *w, double v) {
        if (!isfinite(v))
                return jsonw_null(w);

        char b[64];
        size_t n = 0;
        /* A whole number below 10^15 (most of ours: limits, seconds, counts) is its integer,
         * which is exact and what %.15g prints: no trip through printf's and strtod's
         * arbitrary-precision paths (tens of microseconds for a report's worth with musl). */
        if (fabs(v) < 1e15 && v == (double) (int64_t) v && !(v == 0 && signbit(v))) {
                n = (size_t) snprintf(b, sizeof b, "%" PRId64, (int64_t) v);
                return scalar(w, b, n);
        }
        locale_t c = c_numeric_locale();
        for (int precision = c ? 15 : 17; precision <= 17; precision++) {
                n = format_double(b, sizeof b, precision, v);
                if (!c || strtod_l(b, NULL, c) == v)
                        break;
        }
        return scalar(w, b, n);
}

int jsonw_bool(jsonw *w, bool v) {
        return v ? scalar(w, "true", 4) : scalar(w, "false", 5);
}

int jsonw_null(jsonw *w) {
        return scalar(w, "null", 4);
}

int jsonw_kv_string(jsonw *w, const char *key, const char *s) {
        int r = jsonw_key(w, key);
        return r < 0 ? r : jsonw_string(w, s);
}

int jsonw_kv_int(jsonw *w, const char *key, int64_t v) {
        int r = jsonw_key(w, key);
        return r < 0 ? r : jsonw_int(w, v);
}

int jsonw_kv_uint(jsonw *w, const char *key, uint64_t v) {
        int r = jsonw_key(w, key);
        return r < 0 ? r : jsonw_uint(w, v);
}

int jsonw_kv_double(jsonw *w, const char *key, double v) {
        int r = jsonw_key(w, key);
        return r < 0 ? r : jsonw_double(w, v);
}

int jsonw_kv_bool(jsonw *w, const char *key, bool v) {
        int r = jsonw_key(w, key);
        return r < 0 ? r : jsonw_bool(w, v);
}

int jsonw_kv_null(jsonw *w, const char *key) {
        int r = jsonw_key(w, key);
        return r < 0 ? r : jsonw_null(w);
}

int jsonw_finish(jsonw *w, bool newline, char **ret, size_t *ret_len) {
        if (w->error)
                return w->error;
        if (!ret || w->depth != 0 || !w->done)
                return fail(w, -EINVAL);
        int r = newline ? emit(w, "\n", 1) : 0;
        if (r < 0)
                return r;
        if (ret_len)
                *ret_len = w->len;
        *ret = TAKE_PTR(w->buf);
        jsonw_done(w);
        return 0;
}

int json_quote(const char *s, size_t n, char **ret) {
        _cleanup_jsonw_ jsonw w;
        jsonw_init(&w, false);
        int r = jsonw_string_len(&w, s ? s : "", s ? n : 0);
        if (r < 0)
                return r;
        return jsonw_finish(&w, false, ret, NULL);
}

int json_fputs(FILE *f, const char *s) {
        if (!s)
                return fputs("null", f) < 0 ? -EIO : 0;
        char *q = NULL;
        int r = json_quote(s, strlen(s), &q);
        if (r < 0)
                return r;
        r = fputs(q, f) < 0 ? -EIO : 0;
        free(q);
        return r;
}
