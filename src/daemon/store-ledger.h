/* store-ledger.h — the credit ledger (DESIGN.md, "Meters, credits and deals"): append-only, double-entry,
 * hash-chained rows in the store. Amounts are integers in millionths of the currency. Every
 * movement is one transaction of two rows — the amount taken from one account and given to
 * another — so the rows of a transaction, and of the whole ledger, sum to zero. Each row's hash is
 * SHA-256 over its fields and the hash of the row before it, like the audit log's. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "daemon/store.h"

#define SBX_LEDGER_UNIT 1000000LL /* millionths */

/* Move amount (> 0) from one account to another: two rows, one transaction id (returned in
 * ret_tx, 40 bytes, when not NULL). Inside the caller's open store transaction
 * (sbx_store_tx_begin), which is what serialises two movements from the same account. */
int sbx_ledger_move(sbx_store *s, const char *from, const char *to, int64_t amount, const char *currency,
        const char *kind, const char *ref, const char *note, char *ret_tx, sbx_error *e);
/* Whether a row of this ref and kind is in the ledger (a booking done already). */
bool sbx_ledger_has(sbx_store *s, const char *ref, const char *kind);
/* The sum of an account's rows (ref: only those rows with that ref; NULL: all). */
int64_t sbx_ledger_sum(sbx_store *s, const char *account, const char *ref);
/* Each account (of those starting with prefix) and ref whose rows do not sum to zero: fn(ud,
 * account, ref, sum). */
int sbx_ledger_open_refs(sbx_store *s, const char *prefix,
        void (*fn)(void *ud, const char *account, const char *ref, int64_t sum), void *ud);
/* Rows after seq `after`, at most limit, oldest first: fn(ud, row) with the row's columns (seq,
 * tx, at, account, amount, currency, kind, ref, note, prev, hash) as text. */
int sbx_ledger_rows(sbx_store *s, int64_t after, int limit, const char *account_prefix,
        int (*fn)(void *ud, int n, const char *const *cols), void *ud);
/* Check the chain: each row's prev is the hash of the row before it, its hash matches its
 * fields, seq counts up from 1 without a gap, and each transaction's rows sum to zero.
 * 0 intact (*ret_rows: how many), -EBADMSG broken (why says which row and how). */
int sbx_ledger_verify(sbx_store *s, int64_t *ret_rows, char *why, size_t why_len);
/* A decimal amount in the currency → millionths, and back (6 places). */
int64_t sbx_ledger_units(double amount);
double sbx_ledger_amount(int64_t units);

/* ---- meters (meters.c): one row per sandbox, its totals -------------------------------------- */
typedef struct sbx_store_meter {
        const char *sandbox_id, *tenant, *extension, *profile, *currency;
        int64_t started_at, ended_at; /* ms; ended_at 0: running */
        double wall_s, cpu_s, mem_mib_s, cost;
        bool cpu_known, mem_known; /* false: NULL (another node holds it) */
        int64_t egress_bytes;
} sbx_store_meter;

int sbx_store_meter_put(sbx_store *s, const sbx_store_meter *m);
/* Rows of tenant (NULL: every tenant's) and sandbox (NULL: any) alive within [from, to] (ms), in
 * the order they started: fn(ud, n, cols) with sandbox_id, tenant, extension, profile, started_at,
 * ended_at, wall_s, cpu_s, mem_mib_s, egress_bytes, creations, cost, currency as text. */
int sbx_store_meters(sbx_store *s, const char *tenant, const char *sandbox, int64_t from, int64_t to,
        int (*fn)(void *ud, int n, const char *const *cols), void *ud, sbx_error *e);
/* Their sums per tenant and extension: fn with tenant, extension, wall_s, cpu_s, mem_mib_s,
 * egress_bytes, creations, cost. */
int sbx_store_meter_sums(sbx_store *s, int (*fn)(void *ud, int n, const char *const *cols), void *ud);
/* One sandbox's stored cost and extension: 0, or -ENOENT. ext: 72 bytes. */
int sbx_store_meter_cost(sbx_store *s, const char *sandbox_id, double *ret_cost, char *ext);
/* Each exec of a sandbox, from its report: fn with id, status, started_at, ended_at, wall_ms,
 * cpu_user_ms, cpu_sys_ms, max_rss_kb, egress bytes up, down (NULL where the report has none). */
int sbx_store_exec_usage(
        sbx_store *s, const char *sandbox_id, int (*fn)(void *ud, int n, const char *const *cols), void *ud);
