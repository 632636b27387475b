/* store-sandboxes.c — the manager's rows, typed: sandboxes, idempotency keys, events and execs
 * (store-sandboxes.h). The only SQL of the control plane outside store.c. */
#include "daemon/store-sandboxes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- transactions ------------------------------------------------------------------------- */

/* The thread's open transaction: its statements run under the lock it already holds. */
static __thread sbx_store *tx_store;

#define SQL(s, ...)                                                                                         \
        (tx_store == (s) ? sbx_store_sql_locked((s), __VA_ARGS__) : sbx_store_sql((s), __VA_ARGS__))

void sbx_store_tx_begin(sbx_store *s) {
        sbx_store_lock(s);
        tx_store = s;
        (void) sbx_store_sql_locked(s, "BEGIN IMMEDIATE", NULL, NULL, NULL, "");
}

bool sbx_store_tx_open(sbx_store *s) {
        return tx_store == s;
}

void sbx_store_tx_rollback(sbx_store *s) {
        (void) sbx_store_sql_locked(s, "ROLLBACK", NULL, NULL, NULL, "");
        tx_store = NULL;
        sbx_store_unlock(s);
}

void sbx_store_tx_commit(sbx_store *s) {
        (void) sbx_store_sql_locked(s, "COMMIT", NULL, NULL, NULL, "");
        tx_store = NULL;
        sbx_store_unlock(s);
}

static int64_t num(const char *s) {
        return s ? strtoll(s, NULL, 10) : 0;
}

/* ---- sandboxes ---------------------------------------------------------------------------- */

int sbx_store_sandbox_put(sbx_store *s, const sbx_store_sandbox *r, sbx_error *e) {
        return SQL(s,
                "INSERT OR REPLACE INTO sandboxes (id, state, reason, profile, backend, tenant, "
                "consumer_json, metadata_json, created_at, expires_at, updated_at, record_json, harness, "
                "session_id, run_id, job_id, supervisor_pid, inputs_json) "
                "VALUES (?,?,?,?,?,?,NULL,NULL,?,?,?,?,?,?,?,?,?,?)",
                NULL, NULL, e, "ssssssiiisssssis", r->id, r->state, r->reason, r->profile, r->backend,
                r->tenant, r->created_at, r->expires_at, r->updated_at, r->record_json, r->harness,
                r->session_id, r->run_id, r->job_id, r->supervisor_pid, r->inputs_json);
}

typedef struct list_ctx {
        sbx_store_list_row_fn fn;
        void *ud;
} list_ctx;

static int list_row(void *ud, int n, const char *const *cols) {
        list_ctx *c = ud;
        return c->fn(c->ud, cols[0], num(cols[1]), cols[2] ? cols[2] : "");
}

int sbx_store_sandbox_list(
        sbx_store *s, const sbx_store_sandbox_filter *f, sbx_store_list_row_fn fn, void *ud, sbx_error *e) {
        list_ctx c = {fn, ud};
        return SQL(s,
                "SELECT record_json, created_at, id FROM sandboxes WHERE tenant = ?1 "
                "AND (?2 IS NULL AND state != 'destroyed' OR state = ?2) AND (?3 IS NULL OR profile = ?3) "
                "AND (?4 IS NULL OR harness = ?4) AND (?5 IS NULL OR session_id = ?5) "
                "AND (?6 IS NULL OR run_id = ?6) AND (?7 IS NULL OR job_id = ?7) "
                "AND (?8 = '' OR created_at > ?9 OR (created_at = ?9 AND id > ?8)) "
                "AND (?11 IS NULL OR json_extract(record_json, '$.front.node_id') = ?11) "
                "ORDER BY created_at, id LIMIT ?10",
                list_row, &c, e, "ssssssssiis", f->tenant, f->state, f->profile, f->harness, f->session_id,
                f->run_id, f->job_id, f->after_id ? f->after_id : "", f->after_created, f->limit, f->front);
}

static int first_text(void *ud, int n, const char *const *cols) {
        char **ret = ud;
        free(*ret);
        *ret = n > 0 && cols[0] ? strdup(cols[0]) : NULL;
        return 0;
}

char *sbx_store_sandbox_record(sbx_store *s, const char *id, const char *tenant) {
        char *rec = NULL;
        (void) SQL(s, "SELECT record_json FROM sandboxes WHERE id = ? AND tenant = ?", first_text, &rec,
                NULL, "ss", id, tenant);
        return rec;
}

typedef struct live_ctx {
        sbx_store_live_row_fn fn;
        void *ud;
} live_ctx;

static int live_row(void *ud, int n, const char *const *cols) {
        live_ctx *c = ud;
        return c->fn(c->ud, cols[0], num(cols[1]), num(cols[2]), num(cols[3]), cols[4]);
}

int sbx_store_sandbox_live(sbx_store *s, sbx_store_live_row_fn fn, void *ud, sbx_error *e) {
        live_ctx c = {fn, ud};
        return SQL(s,
                "SELECT record_json, created_at, expires_at, supervisor_pid, inputs_json FROM sandboxes "
                "WHERE state != 'destroyed'",
                live_row, &c, e, "");
}

/* ---- idempotency keys --------------------------------------------------------------------- */

typedef struct idem_ctx {
        char **sandbox_id, **body_sha;
        bool found;
} idem_ctx;

static int idem_row(void *ud, int n, const char *const *cols) {
        idem_ctx *c = ud;
        c->found = true;
        *c->sandbox_id = cols[0] ? strdup(cols[0]) : NULL;
        *c->body_sha = n > 1 && cols[1] ? strdup(cols[1]) : NULL;
        return 0;
}

int sbx_store_idempotency_get(
        sbx_store *s, const char *key, const char *tenant, char **ret_sandbox_id, char **ret_body_sha) {
        idem_ctx c = {ret_sandbox_id, ret_body_sha, false};
        *ret_sandbox_id = *ret_body_sha = NULL;
        int r = SQL(s, "SELECT sandbox_id, body_sha256 FROM idempotency WHERE key = ? AND tenant = ?",
                idem_row, &c, NULL, "ss", key, tenant);
        return r < 0 ? r : c.found;
}

int sbx_store_idempotency_put(sbx_store *s, const char *key, const char *tenant, const char *sandbox_id,
        int64_t created_at, const char *body_sha) {
        return SQL(s,
                "INSERT OR REPLACE INTO idempotency (key, tenant, sandbox_id, created_at, body_sha256) "
                "VALUES (?,?,?,?,?)",
                NULL, NULL, NULL, "sssis", key, tenant, sandbox_id, created_at, body_sha);
}

/* ---- events ------------------------------------------------------------------------------- */

static int first_num(void *ud, int n, const char *const *cols) {
        *(int64_t *) ud = n > 0 ? num(cols[0]) : 0;
        return 0;
}

int64_t sbx_store_event_add(sbx_store *s, const char *sandbox_id, const char *type, const char *state,
        const char *reason, int64_t at, const char *data_json) {
        int64_t seq = 0;
        int r = SQL(s,
                "INSERT INTO events (sandbox_id, type, state, reason, at, data_json) VALUES (?,?,?,?,?,?) "
                "RETURNING seq",
                first_num, &seq, NULL, "ssssis", sandbox_id, type, state, reason, at, data_json);
        return r < 0 ? r : seq;
}

int64_t sbx_store_event_add_tenant(sbx_store *s, const char *subject_id, const char *tenant,
        const char *type, int64_t at, const char *data_json) {
        int64_t seq = 0;
        int r = SQL(s,
                "INSERT INTO events (sandbox_id, tenant, type, at, data_json) VALUES (?,?,?,?,?) RETURNING "
                "seq",
                first_num, &seq, NULL, "sssis", subject_id, tenant, type, at, data_json);
        return r < 0 ? r : seq;
}

int64_t sbx_store_event_last(sbx_store *s) {
        int64_t seq = 0;
        (void) SQL(s, "SELECT MAX(seq) FROM events", first_num, &seq, NULL, "");
        return seq;
}

typedef struct ev_ctx {
        sbx_store_event_row_fn fn;
        void *ud;
} ev_ctx;

static int ev_row(void *ud, int n, const char *const *cols) {
        ev_ctx *c = ud;
        return c->fn(c->ud, num(cols[0]), cols[1] ? cols[1] : "", cols[2]);
}

int sbx_store_events_after(sbx_store *s, int64_t after, const char *tenant, const char *sandbox_id,
        sbx_store_event_row_fn fn, void *ud) {
        ev_ctx c = {fn, ud};
        return SQL(s,
                "SELECT e.seq, e.type, e.data_json FROM events e LEFT JOIN sandboxes s ON s.id = "
                "e.sandbox_id WHERE e.seq > ?1 AND COALESCE(s.tenant, e.tenant) = ?2 AND (?3 = '' OR "
                "e.sandbox_id = ?3) ORDER BY e.seq LIMIT 500",
                ev_row, &c, NULL, "iss", after, tenant, sandbox_id ? sandbox_id : "");
}

/* ---- execs -------------------------------------------------------------------------------- */

int sbx_store_exec_put(sbx_store *s, const sbx_store_exec *x, bool keep_existing) {
        return SQL(s,
                keep_existing
                        ? "INSERT OR IGNORE INTO execs (id, sandbox_id, status, exit_code, started_at, "
                          "ended_at, report_json) VALUES (?,?,?,?,?,?,?)"
                        : "INSERT OR REPLACE INTO execs (id, sandbox_id, status, exit_code, "
                          "started_at, ended_at, report_json) VALUES (?,?,?,?,?,?,?)",
                NULL, NULL, NULL, "sssiiis", x->id, x->sandbox_id, x->status, x->exit_code, x->started_at,
                x->ended_at, x->report_json);
}

static int exists_row(void *ud, int n, const char *const *cols) {
        *(bool *) ud = true;
        return 0;
}

bool sbx_store_sandbox_exists(sbx_store *s, const char *id) {
        bool have = false;
        (void) SQL(s, "SELECT 1 FROM sandboxes WHERE id = ?", exists_row, &have, NULL, "s", id);
        return have;
}

bool sbx_store_exec_exists(sbx_store *s, const char *id) {
        bool have = false;
        (void) SQL(s, "SELECT 1 FROM execs WHERE id = ?", exists_row, &have, NULL, "s", id);
        return have;
}

typedef struct exec_ctx {
        sbx_store_exec_row_fn fn;
        void *ud;
        const char *sandbox_id;
} exec_ctx;

static int exec_row(void *ud, int n, const char *const *cols) {
        exec_ctx *c = ud;
        sbx_store_exec x = {
                .id = cols[0] ? cols[0] : "",
                .sandbox_id = c->sandbox_id,
                .status = cols[1],
                .exit_code = cols[2] ? num(cols[2]) : -1,
                .started_at = num(cols[3]),
                .ended_at = num(cols[4]),
                .report_json = n > 5 ? cols[5] : NULL,
        };
        return c->fn(c->ud, &x);
}

int sbx_store_exec_get(
        sbx_store *s, const char *sandbox_id, const char *exec_id, sbx_store_exec_row_fn fn, void *ud) {
        exec_ctx c = {fn, ud, sandbox_id};
        return SQL(s,
                "SELECT id, status, exit_code, started_at, ended_at, report_json FROM execs WHERE "
                "sandbox_id = ? AND id = ?",
                exec_row, &c, NULL, "ss", sandbox_id, exec_id);
}

int sbx_store_exec_list(sbx_store *s, const char *sandbox_id, sbx_store_exec_row_fn fn, void *ud) {
        exec_ctx c = {fn, ud, sandbox_id};
        return SQL(s,
                "SELECT id, status, exit_code, started_at, ended_at FROM execs WHERE sandbox_id = ? "
                "ORDER BY ended_at DESC LIMIT 500",
                exec_row, &c, NULL, "s", sandbox_id);
}
