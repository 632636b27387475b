/* error.h — the story behind a -errno: which step failed, why, and (for parsers) where.
 * Library functions return -errno and, when the caller passes one, fill a struct sbx_error. */
#pragma once

#include <stdarg.h>

#include "macro.h"

typedef struct sbx_error {
        int errnum; /* positive errno, 0 when unset */
        char step[96]; /* machine-ish step name: "mount: bind /usr", "profile: parse" */
        char message[768]; /* human sentence: what, why, and the fix */
        char file[256]; /* for parse errors: the file, "" otherwise */
        unsigned line, column;
} sbx_error;

/* Fill *e (if non-NULL) and return -errnum. errnum may be given positive or negative. */
int sbx_error_set(sbx_error *e, int errnum, const char *step, const char *fmt, ...) _printf_(4, 5);
int sbx_error_setv(sbx_error *e, int errnum, const char *step, const char *fmt, va_list ap);
/* Same, with a file position (line/column 1-based). */
int sbx_error_set_at(sbx_error *e, int errnum, const char *file, unsigned line, unsigned column,
        const char *fmt, ...) _printf_(6, 7);
/* Add context to an error as it rises: prefix "CONTEXT: " to *e's message, keeping its errno,
 * step and file position. r is the callee's negative errno; when the callee left *e unset, the
 * message becomes "CONTEXT: strerror(-r)". Returns r (or -EIO when r is not negative), so a
 * caller writes `return sbx_error_wrap(e, r, "profile %s", name);`. A message that would not fit
 * loses its tail, never the context. */
int sbx_error_wrap(sbx_error *e, int r, const char *fmt, ...) _printf_(3, 4);
/* The errno's symbolic name ("ENOSYS"), NULL if unknown. */
const char *sbx_errno_name(int errnum);
/* "file:line:col: message" or "step: message" into buf. */
const char *sbx_error_format(const sbx_error *e, char *buf, size_t size);
