/* jsonw.h — a small streaming JSON writer into a growable buffer (reports, doctor --json, the
 * HTTP server). Output is always valid JSON: strings are fully escaped (control characters,
 * invalid UTF-8 becomes \ufffd), non-finite doubles become null, misuse is an error.
 *
 * Errors are sticky: once a call fails (-ENOMEM, or -EINVAL for misuse such as a value where a
 * key is expected or mismatched end calls), every later call returns the same error and
 * jsonw_finish() reports it, so a sequence of writes needs one check at the end. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "macro.h"

#define JSONW_MAX_DEPTH 64

typedef struct jsonw {
        char *buf; /* owned; NUL-terminated while error == 0 */
        size_t len, cap;
        int error; /* sticky -errno, 0 = fine */
        bool pretty; /* newlines and two-space indent */
        unsigned depth;
        bool expect_value; /* a key was written: the next thing must be its value */
        bool done; /* a complete top-level value was written */
        char stack[JSONW_MAX_DEPTH]; /* '{' or '[' per open container */
        bool nonempty[JSONW_MAX_DEPTH]; /* container has at least one member */
} jsonw;

/* Initialise an empty writer (no allocation yet). */
void jsonw_init(jsonw *w, bool pretty);
/* Free the buffer; the writer may be initialised again. Accepts an already-done writer. */
void jsonw_done(jsonw *w);
#define _cleanup_jsonw_ _cleanup_(jsonw_done)

int jsonw_begin_object(jsonw *w);
int jsonw_end_object(jsonw *w);
int jsonw_begin_array(jsonw *w);
int jsonw_end_array(jsonw *w);
/* A member name inside an object; must be followed by exactly one value. Escaped like strings. */
int jsonw_key(jsonw *w, const char *key);

/* s == NULL writes null. */
int jsonw_string(jsonw *w, const char *s);
/* n bytes of s (may contain NUL bytes, written as \u0000); s == NULL writes null. */
int jsonw_string_len(jsonw *w, const char *s, size_t n);
int jsonw_int(jsonw *w, int64_t v);
int jsonw_uint(jsonw *w, uint64_t v);
/* Shortest of %.15g/%.16g/%.17g that reads back exactly, always with '.' as the decimal
 * point whatever the locale; NaN and infinities write null. */
int jsonw_double(jsonw *w, double v);
int jsonw_bool(jsonw *w, bool v);
int jsonw_null(jsonw *w);

/* key + value shorthands. */
int jsonw_kv_string(jsonw *w, const char *key, const char *s);
int jsonw_kv_int(jsonw *w, const char *key, int64_t v);
int jsonw_kv_uint(jsonw *w, const char *key, uint64_t v);
int jsonw_kv_double(jsonw *w, const char *key, double v);
int jsonw_kv_bool(jsonw *w, const char *key, bool v);
int jsonw_kv_null(jsonw *w, const char *key);

/* Complete the document: checks that exactly one top-level value was written and every
 * container closed, appends a newline when `newline`, and hands over the NUL-terminated text
 * (ret_len may be NULL). On success the writer is reset to empty. Returns the sticky error,
 * or -EINVAL if the document is incomplete. */
int jsonw_finish(jsonw *w, bool newline, char **ret, size_t *ret_len);

/* Escape one string (with the quotes) into a fresh buffer: a helper for callers that build JSON
 * fragments by hand. */
int json_quote(const char *s, size_t n, char **ret);
/* s as a JSON string literal (the same escaping; NULL as null) to f: for output written as it
 * goes (also a valid YAML double-quoted scalar). 0 or -errno. */
int json_fputs(FILE *f, const char *s);
