/* store-sandboxes.h — the manager's rows in the store, typed: a sandbox's row (its record and
 * what lists filter on), idempotency keys, the event log, exec records. The manager's files
 * speak these functions; the SQL is in store-sandboxes.c alone.
 *
 * A thread may group writes in one transaction (sbx_store_tx_begin … _commit): the store's lock
 * is held throughout, and that thread's calls in between run under it. Callbacks run with the
 * store's lock held: they must not call back into the store. Strings handed to a callback are
 * the row's, valid during the call. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "daemon/store.h"

void sbx_store_tx_begin(sbx_store *s);
void sbx_store_tx_commit(sbx_store *s);
/* The open transaction undone (a statement of it failed) and the lock let go. */
void sbx_store_tx_rollback(sbx_store *s);
/* Whether this thread has a transaction open on s. */
bool sbx_store_tx_open(sbx_store *s);

/* ---- sandboxes ---- */

typedef struct sbx_store_sandbox {
        const char *id, *state, *reason, *profile, *backend, *tenant;
        int64_t created_at, expires_at, updated_at; /* ms */
        const char *record_json; /* the API record as stored */
        const char *harness, *session_id, *run_id, *job_id; /* the consumer's, for filters; NULL ok */
        int64_t supervisor_pid;
        const char *inputs_json; /* what a restart needs back ({profile, ttl_s, idle_s}) */
} sbx_store_sandbox;

/* Insert or replace the row. 0 or -errno with e. */
int sbx_store_sandbox_put(sbx_store *s, const sbx_store_sandbox *row, sbx_error *e);

/* A tenant's sandboxes (not destroyed ones unless state says so), oldest first, after the cursor
 * (after_created, after_id; after_id NULL or "" for the first page), at most limit. */
typedef struct sbx_store_sandbox_filter {
        const char *tenant;
        const char *state, *profile, *harness, *session_id, *run_id, *job_id; /* NULL: any */
        const char *front; /* the record's front.node_id; NULL: any */
        int64_t after_created;
        const char *after_id;
        int64_t limit;
} sbx_store_sandbox_filter;
typedef int (*sbx_store_list_row_fn)(void *ud, const char *record_json, int64_t created_at, const char *id);
/* The number of rows, or -errno with e. */
int sbx_store_sandbox_list(
        sbx_store *s, const sbx_store_sandbox_filter *f, sbx_store_list_row_fn fn, void *ud, sbx_error *e);

/* The stored record of the tenant's sandbox id (malloc'ed JSON text), or NULL. */
char *sbx_store_sandbox_record(sbx_store *s, const char *id, const char *tenant);

/* Every sandbox not destroyed, for a restart to reconcile. */
typedef int (*sbx_store_live_row_fn)(void *ud, const char *record_json, int64_t created_at,
        int64_t expires_at, int64_t supervisor_pid, const char *inputs_json);
int sbx_store_sandbox_live(sbx_store *s, sbx_store_live_row_fn fn, void *ud, sbx_error *e);

/* ---- idempotency keys ---- */

/* 1 with the sandbox and the body's digest it was used with (malloc'ed; either may be NULL), 0
 * when the key is unknown to the tenant, -errno. */
int sbx_store_idempotency_get(
        sbx_store *s, const char *key, const char *tenant, char **ret_sandbox_id, char **ret_body_sha);
int sbx_store_idempotency_put(sbx_store *s, const char *key, const char *tenant, const char *sandbox_id,
        int64_t created_at, const char *body_sha);

/* ---- events ---- */

/* Append an event: its sequence number, or -errno. */
int64_t sbx_store_event_add(sbx_store *s, const char *sandbox_id, const char *type, const char *state,
        const char *reason, int64_t at, const char *data_json);
/* The last sequence number given (0: none yet). */
/* An event of something that is not a sandbox (a volume: subject_id its id), in tenant's stream. */
int64_t sbx_store_event_add_tenant(sbx_store *s, const char *subject_id, const char *tenant,
        const char *type, int64_t at, const char *data_json);
int64_t sbx_store_event_last(sbx_store *s);
/* The tenant's events after seq `after` (of one sandbox, unless sandbox_id is NULL or ""), in
 * order, at most 500. */
typedef int (*sbx_store_event_row_fn)(void *ud, int64_t seq, const char *type, const char *data_json);
int sbx_store_events_after(sbx_store *s, int64_t after, const char *tenant, const char *sandbox_id,
        sbx_store_event_row_fn fn, void *ud);

/* ---- execs ---- */

typedef struct sbx_store_exec {
        const char *id, *sandbox_id, *status;
        int64_t exit_code; /* -1: none */
        int64_t started_at, ended_at; /* ms */
        const char *report_json; /* NULL in a list */
} sbx_store_exec;

/* Record an exec; keep_existing: not over one already recorded (a report taken in again). */
int sbx_store_exec_put(sbx_store *s, const sbx_store_exec *x, bool keep_existing);
bool sbx_store_exec_exists(sbx_store *s, const char *id);
/* Whether any tenant's sandbox, in any state, has ever had this id. */
bool sbx_store_sandbox_exists(sbx_store *s, const char *id);
typedef int (*sbx_store_exec_row_fn)(void *ud, const sbx_store_exec *x);
/* One exec of the sandbox, with its report. */
int sbx_store_exec_get(
        sbx_store *s, const char *sandbox_id, const char *exec_id, sbx_store_exec_row_fn fn, void *ud);
/* The sandbox's execs that ended, newest first, at most 500, without reports. */
int sbx_store_exec_list(sbx_store *s, const char *sandbox_id, sbx_store_exec_row_fn fn, void *ud);
