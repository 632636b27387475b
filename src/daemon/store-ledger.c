/* store-ledger.c — the credit ledger's rows (store-ledger.h). */
#include "daemon/store-ledger.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "basic/macro.h"
#include "basic/sha256.h"
#include "daemon/store-sandboxes.h"

#define ZERO_HASH "0000000000000000000000000000000000000000000000000000000000000000"

/* in the thread's open transaction, or one statement under the store's lock */
#define SQL(s, ...)                                                                                         \
        (sbx_store_tx_open(s) ? sbx_store_sql_locked((s), __VA_ARGS__) : sbx_store_sql((s), __VA_ARGS__))

int64_t sbx_ledger_units(double amount) {
        return (int64_t) llround(amount * (double) SBX_LEDGER_UNIT);
}

double sbx_ledger_amount(int64_t units) {
        return (double) units / (double) SBX_LEDGER_UNIT;
}

/* The hash of one row: its fields joined by 0x1f, then the row before it's hash. */
static void row_hash(int64_t seq, const char *tx, int64_t at, const char *account, int64_t amount,
        const char *currency, const char *kind, const char *ref, const char *note, const char *prev,
        char out[static 65]) {
        char *text = NULL;
        int n = asprintf(&text,
                "%" PRId64 "\x1f%s\x1f%" PRId64 "\x1f%s\x1f%" PRId64 "\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", seq,
                tx, at, account, amount, currency, kind, ref, note, prev);
        if (n < 0) {
                memset(out, 'x', 64); /* never a valid hash: the chain shows it */
                out[64] = 0;
                return;
        }
        sha256_hex(text, (size_t) n, out);
        free(text);
}

typedef struct last_row {
        int64_t seq;
        char hash[65];
} last_row;

static int last_cb(void *ud, int n, const char *const *cols) {
        last_row *l = ud;
        l->seq = cols[0] ? strtoll(cols[0], NULL, 10) : 0;
        snprintf(l->hash, sizeof l->hash, "%s", cols[1] ? cols[1] : "");
        return 0;
}

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sbx_ledger_move(sbx_store *s, const char *from, const char *to, int64_t amount, const char *currency,
        const char *kind, const char *ref, const char *note, char *ret_tx, sbx_error *e) {
        if (!sbx_store_tx_open(s))
                return sbx_error_set(e, EINVAL, "ledger", "a movement outside a transaction");
        if (amount <= 0 || !from || !to || streq(from, to))
                return sbx_error_set(e, EINVAL, "ledger", "a movement of %" PRId64 " from %s to %s", amount,
                        from ?: "?", to ?: "?");
        unsigned char rnd[12];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t) sizeof rnd)
                return sbx_error_set(e, errno, "ledger", "getrandom: %m");
        char tx[40] = "tx_";
        for (size_t i = 0; i < sizeof rnd; i++)
                snprintf(tx + 3 + 2 * i, 3, "%02x", rnd[i]);
        last_row l = {.seq = 0, .hash = ZERO_HASH};
        int r = SQL(s, "SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1", last_cb, &l, e, "");
        if (r < 0)
                return r;
        int64_t at = now_ms();
        const char *acct[2] = {from, to};
        int64_t amt[2] = {-amount, amount};
        for (int i = 0; i < 2; i++) {
                char h[65];
                int64_t seq = l.seq + 1;
                row_hash(seq, tx, at, acct[i], amt[i], currency, kind, ref ?: "", note ?: "", l.hash, h);
                r = SQL(s,
                        "INSERT INTO ledger (seq, tx, at, account, amount, currency, kind, ref, note, prev, "
                        "hash) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        NULL, NULL, e, "isisissssss", seq, tx, at, acct[i], amt[i], currency, kind,
                        ref ?: "", note ?: "", l.hash, h);
                if (r < 0)
                        return r;
                l.seq = seq;
                memcpy(l.hash, h, sizeof h);
        }
        if (ret_tx)
                memcpy(ret_tx, tx, sizeof tx);
        return 0;
}

static int sum_cb(void *ud, int n, const char *const *cols) {
        *(int64_t *) ud = cols[0] ? strtoll(cols[0], NULL, 10) : 0;
        return 0;
}

int64_t sbx_ledger_sum(sbx_store *s, const char *account, const char *ref) {
        int64_t v = 0;
        if (ref)
                (void) SQL(s, "SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE account = ?1 AND ref = ?2",
                        sum_cb, &v, NULL, "ss", account, ref);
        else
                (void) SQL(s, "SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE account = ?1", sum_cb, &v,
                        NULL, "s", account);
        return v;
}

typedef struct open_ctx {
        void (*fn)(void *ud, const char *account, const char *ref, int64_t sum);
        void *ud;
} open_ctx;

static int open_cb(void *ud, int n, const char *const *cols) {
        open_ctx *c = ud;
        c->fn(c->ud, cols[0] ?: "", cols[1] ?: "", cols[2] ? strtoll(cols[2], NULL, 10) : 0);
        return 0;
}

int sbx_ledger_open_refs(sbx_store *s, const char *prefix,
        void (*fn)(void *ud, const char *account, const char *ref, int64_t sum), void *ud) {
        open_ctx c = {fn, ud};
        char like[300];
        snprintf(like, sizeof like, "%s%%", prefix);
        return SQL(s,
                "SELECT account, ref, SUM(amount) FROM ledger WHERE account LIKE ?1 GROUP BY account, ref "
                "HAVING SUM(amount) != 0",
                open_cb, &c, NULL, "s", like);
}

int sbx_ledger_rows(sbx_store *s, int64_t after, int limit, const char *account_prefix,
        int (*fn)(void *ud, int n, const char *const *cols), void *ud) {
        char like[300];
        snprintf(like, sizeof like, "%s%%", account_prefix ?: "");
        return SQL(s,
                "SELECT seq, tx, at, account, amount, currency, kind, ref, note, prev, hash FROM ledger "
                "WHERE seq > ?1 AND account LIKE ?2 ORDER BY seq LIMIT ?3",
                fn, ud, NULL, "isi", after, like, (int64_t) limit);
}

typedef struct verify_ctx {
        int64_t rows, expect;
        char prev[65];
        char tx[40];
        int64_t tx_sum;
        char *why;
        size_t why_len;
        bool bad;
} verify_ctx;

static int tx_close(verify_ctx *v) {
        if (v->tx[0] && v->tx_sum != 0) {
                snprintf(v->why, v->why_len, "transaction %s does not sum to zero (%" PRId64 ")", v->tx,
                        v->tx_sum);
                v->bad = true;
                return -EBADMSG;
        }
        return 0;
}

static int verify_cb(void *ud, int n, const char *const *c) {
        verify_ctx *v = ud;
        for (int i = 0; i < 11; i++)
                if (!c[i]) {
                        snprintf(v->why, v->why_len, "row %s: a NULL field", c[0] ?: "?");
                        v->bad = true;
                        return -EBADMSG;
                }
        int64_t seq = strtoll(c[0], NULL, 10), at = strtoll(c[2], NULL, 10),
                amount = strtoll(c[4], NULL, 10);
        if (seq != v->expect) {
                snprintf(v->why, v->why_len, "row %" PRId64 " follows row %" PRId64 " (rows removed)", seq,
                        v->expect - 1);
                v->bad = true;
                return -EBADMSG;
        }
        if (!streq(c[9], v->prev)) {
                snprintf(v->why, v->why_len,
                        "row %" PRId64 ": its prev is not the hash of the row before it (a row altered, "
                        "inserted or removed)",
                        seq);
                v->bad = true;
                return -EBADMSG;
        }
        char h[65];
        row_hash(seq, c[1], at, c[3], amount, c[5], c[6], c[7], c[8], c[9], h);
        if (!streq(h, c[10])) {
                snprintf(v->why, v->why_len, "row %" PRId64 ": its hash does not match its fields (altered)",
                        seq);
                v->bad = true;
                return -EBADMSG;
        }
        if (!streq(c[1], v->tx)) {
                if (tx_close(v) < 0)
                        return -EBADMSG;
                snprintf(v->tx, sizeof v->tx, "%s", c[1]);
                v->tx_sum = 0;
        }
        v->tx_sum += amount;
        memcpy(v->prev, h, sizeof h);
        v->expect++;
        v->rows++;
        return 0;
}

int sbx_ledger_verify(sbx_store *s, int64_t *ret_rows, char *why, size_t why_len) {
        verify_ctx v = {.expect = 1, .prev = ZERO_HASH, .why = why, .why_len = why_len};
        why[0] = 0;
        sbx_error e = {0};
        int r = SQL(s,
                "SELECT seq, tx, at, account, amount, currency, kind, ref, note, prev, hash FROM ledger "
                "ORDER BY "
                "seq",
                verify_cb, &v, &e, "");
        if (!v.bad && r >= 0)
                (void) tx_close(&v);
        if (ret_rows)
                *ret_rows = v.rows;
        if (v.bad)
                return -EBADMSG;
        if (r < 0) {
                snprintf(
                        why, why_len, "cannot read the ledger: %s", e.message[0] ? e.message : strerror(-r));
                return r;
        }
        return 0;
}

/* ---- meters ----------------------------------------------------------------------------------- */

int sbx_store_meter_put(sbx_store *s, const sbx_store_meter *m) {
        char cpu[32], mem[32];
        snprintf(cpu, sizeof cpu, "%.6f", m->cpu_s);
        snprintf(mem, sizeof mem, "%.6f", m->mem_mib_s);
        return SQL(s,
                "INSERT INTO meters (sandbox_id, tenant, extension, profile, started_at, ended_at, wall_s, "
                "cpu_s, mem_mib_s, egress_bytes, creations, cost, currency, updated_at) "
                "VALUES (?1, ?2, ?3, ?4, ?5, NULLIF(?6, 0), ?7, CAST(?8 AS REAL), CAST(?9 AS REAL), ?10, 1, "
                "?11, "
                "?12, ?13) "
                "ON CONFLICT (sandbox_id) DO UPDATE SET ended_at = excluded.ended_at, wall_s = "
                "excluded.wall_s, cpu_s = excluded.cpu_s, mem_mib_s = excluded.mem_mib_s, egress_bytes = "
                "excluded.egress_bytes, cost = excluded.cost, updated_at = excluded.updated_at",
                NULL, NULL, NULL, "ssssiidssidsi", m->sandbox_id, m->tenant, m->extension, m->profile,
                m->started_at, m->ended_at, m->wall_s, m->cpu_known ? cpu : NULL, m->mem_known ? mem : NULL,
                m->egress_bytes, m->cost, m->currency, now_ms());
}

int sbx_store_meters(sbx_store *s, const char *tenant, const char *sandbox, int64_t from, int64_t to,
        int (*fn)(void *ud, int n, const char *const *cols), void *ud, sbx_error *e) {
        return SQL(s,
                "SELECT sandbox_id, tenant, extension, profile, started_at, ended_at, wall_s, cpu_s, "
                "mem_mib_s, egress_bytes, creations, cost, currency FROM meters WHERE (?1 IS NULL OR tenant "
                "= "
                "?1) AND (?2 IS NULL OR sandbox_id = ?2) AND started_at <= ?3 AND (ended_at IS NULL OR "
                "ended_at >= ?4) ORDER BY started_at, sandbox_id LIMIT 10000",
                fn, ud, e, "ssii", tenant, sandbox, to, from);
}

int sbx_store_meter_sums(sbx_store *s, int (*fn)(void *ud, int n, const char *const *cols), void *ud) {
        return SQL(s,
                "SELECT tenant, extension, SUM(wall_s), SUM(COALESCE(cpu_s, 0)), SUM(COALESCE(mem_mib_s, "
                "0)), "
                "SUM(egress_bytes), SUM(creations), SUM(COALESCE(cost, 0)) FROM meters GROUP BY tenant, "
                "extension ORDER BY tenant, extension",
                fn, ud, NULL, "");
}

typedef struct cost_row {
        double cost;
        char *ext;
        bool found;
} cost_row;

static int cost_cb(void *ud, int n, const char *const *c) {
        cost_row *r = ud;
        r->cost = c[0] ? strtod(c[0], NULL) : 0;
        snprintf(r->ext, 72, "%s", c[1] ? c[1] : "ext.local");
        r->found = true;
        return 0;
}

int sbx_store_meter_cost(sbx_store *s, const char *sandbox_id, double *ret_cost, char *ext) {
        cost_row r = {.ext = ext};
        (void) SQL(s, "SELECT cost, extension FROM meters WHERE sandbox_id = ?1", cost_cb, &r, NULL, "s",
                sandbox_id);
        *ret_cost = r.cost;
        return r.found ? 0 : -ENOENT;
}

static int has_cb(void *ud, int n, const char *const *c) {
        *(bool *) ud = true;
        return 0;
}

bool sbx_ledger_has(sbx_store *s, const char *ref, const char *kind) {
        bool has = false;
        (void) SQL(s, "SELECT 1 FROM ledger WHERE ref = ?1 AND kind = ?2 LIMIT 1", has_cb, &has, NULL, "ss",
                ref, kind);
        return has;
}

int sbx_store_exec_usage(sbx_store *s, const char *sandbox_id,
        int (*fn)(void *ud, int n, const char *const *cols), void *ud) {
        return SQL(s,
                "SELECT id, status, started_at, ended_at, json_extract(report_json, '$.usage.wall_ms'), "
                "json_extract(report_json, '$.usage.cpu_user_ms'), json_extract(report_json, "
                "'$.usage.cpu_sys_ms'), "
                "json_extract(report_json, '$.usage.max_rss_kb'), json_extract(report_json, "
                "'$.egress.bytes_up'), "
                "json_extract(report_json, '$.egress.bytes_down') FROM execs WHERE sandbox_id = ?1 ORDER BY "
                "started_at, id LIMIT 10000",
                fn, ud, NULL, "s", sandbox_id);
}
