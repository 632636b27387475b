/* audit.h — the append-only audit log: one JSON line per state-changing request, chained by
 * hashes so that altering, reordering or cutting a line is detectable.
 *
 * Line format (prev_hash and hash always last, in this order):
 *   {"time":"…Z","actor":"adm:root","action":"token.create","target":"token:3","outcome":"ok",
 *    "prev_hash":"<sha256 hex of the previous line's text, 64 zeros for the first>",
 *    "hash":"<sha256 hex of this line's text up to and including prev_hash's closing quote>"}
 * Limit: removing whole lines from the end leaves a valid shorter chain; anchor the last hash
 * elsewhere (e.g. ship lines to a log host) to detect that. */
#pragma once

#include <stdbool.h>

#include "basic/error.h"

#define SBX_AUDIT_FILE "audit.log"

/* Append one line to `path` (created 0600), under an exclusive flock so concurrent writers
 * chain correctly; fsynced. Refuses (-EBADMSG) to extend a log whose last line is partial.
 * detail may be NULL. */
int sbx_audit_append(const char *path, const char *actor, const char *action, const char *target,
        const char *outcome, const char *detail, sbx_error *e);
/* The same, fsynced only if sync; and the fsync of a log written without it. */
int sbx_audit_append_x(const char *path, const char *actor, const char *action, const char *target,
        const char *outcome, const char *detail, bool sync, sbx_error *e);
int sbx_audit_sync(const char *path, sbx_error *e);

/* Verify the chain of `path`. 0 with *ret_lines the number of lines when intact; -EBADMSG with
 * e->line and a message naming the first bad line otherwise; -errno if unreadable. */
int sbx_audit_verify(const char *path, unsigned *ret_lines, sbx_error *e);

/* "adm:NAME" for the calling user (the CLI acting on the store directly). Newly allocated. */
int sbx_audit_local_actor(char **ret);
