/* store-deals.c — the SQL of deals between nodes (store-deals.h). */
#include "daemon/store-deals.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/macro.h"
#include "daemon/store-sandboxes.h"

#define SQL(s, ...)                                                                                         \
        (sbx_store_tx_open(s) ? sbx_store_sql_locked((s), __VA_ARGS__) : sbx_store_sql((s), __VA_ARGS__))

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define COPY(dst, src) snprintf(dst, sizeof dst, "%s", (src) ? (src) : "")

int sbx_store_peer_put(sbx_store *s, const sbx_store_peer *p) {
        return SQL(s,
                "INSERT OR REPLACE INTO peers (node_id, public_key, url, extension, credit_limit, "
                "created_at) "
                "VALUES (?1, ?2, ?3, NULLIF(?4, ''), ?5, ?6)",
                NULL, NULL, NULL, "ssssii", p->node_id, p->public_key, p->url, p->extension, p->credit_limit,
                p->created_at ? p->created_at : now_ms());
}

static void peer_of(const char *const *c, sbx_store_peer *p) {
        *p = (sbx_store_peer){0};
        COPY(p->node_id, c[0]);
        COPY(p->public_key, c[1]);
        COPY(p->url, c[2]);
        COPY(p->extension, c[3]);
        p->credit_limit = c[4] ? strtoll(c[4], NULL, 10) : 0;
        p->created_at = c[5] ? strtoll(c[5], NULL, 10) : 0;
}

static int peer_one(void *ud, int n, const char *const *c) {
        peer_of(c, ud);
        return 0;
}

int sbx_store_peer_get(sbx_store *s, const char *node_id, sbx_store_peer *ret) {
        int r = SQL(s,
                "SELECT node_id, public_key, url, extension, credit_limit, created_at FROM peers WHERE "
                "node_id = ?1",
                peer_one, ret, NULL, "s", node_id);
        return r < 0 ? r : r == 0 ? -ENOENT : 0;
}

int sbx_store_peer_delete(sbx_store *s, const char *node_id) {
        int r = SQL(
                s, "DELETE FROM peers WHERE node_id = ?1 RETURNING node_id", NULL, NULL, NULL, "s", node_id);
        return r < 0 ? r : r == 0 ? -ENOENT : 0;
}

typedef struct peers_ctx {
        void (*fn)(void *ud, const sbx_store_peer *p);
        void *ud;
} peers_ctx;

static int peers_row(void *ud, int n, const char *const *c) {
        peers_ctx *x = ud;
        sbx_store_peer p;
        peer_of(c, &p);
        x->fn(x->ud, &p);
        return 0;
}

int sbx_store_peers(sbx_store *s, void (*fn)(void *ud, const sbx_store_peer *p), void *ud) {
        peers_ctx x = {fn, ud};
        return SQL(s,
                "SELECT node_id, public_key, url, extension, credit_limit, created_at FROM peers ORDER BY "
                "created_at",
                peers_row, &x, NULL, "");
}

/* ---- deals ------------------------------------------------------------------------------------- */

void sbx_store_deal_clear(sbx_store_deal *d) {
        free(d->quote_json);
        free(d->requester_sig);
        free(d->files_json);
        free(d->reason);
        free(d->result_json);
        *d = (sbx_store_deal){0};
}

#define DEAL_COLS                                                                                           \
        "deal_id, role, peer, tenant, quote_json, requester_sig, files_json, state, reason, result_json, "  \
        "intent, amount, accept, attempts, created_at, updated_at"

static char *dup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

static void deal_of(const char *const *c, sbx_store_deal *d) {
        *d = (sbx_store_deal){0};
        COPY(d->deal_id, c[0]);
        COPY(d->role, c[1]);
        COPY(d->peer, c[2]);
        COPY(d->tenant, c[3]);
        d->quote_json = dup_or_null(c[4]);
        d->requester_sig = dup_or_null(c[5]);
        d->files_json = dup_or_null(c[6]);
        COPY(d->state, c[7]);
        d->reason = dup_or_null(c[8]);
        d->result_json = dup_or_null(c[9]);
        COPY(d->intent, c[10]);
        d->amount = c[11] ? strtoll(c[11], NULL, 10) : 0;
        COPY(d->accept, c[12]);
        d->attempts = c[13] ? strtoll(c[13], NULL, 10) : 0;
        d->created_at = c[14] ? strtoll(c[14], NULL, 10) : 0;
        d->updated_at = c[15] ? strtoll(c[15], NULL, 10) : 0;
}

int sbx_store_deal_insert(sbx_store *s, const sbx_store_deal *d) {
        sbx_error e = {0};
        int64_t t = now_ms();
        int r = SQL(s,
                "INSERT INTO deals (" DEAL_COLS
                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                "0, ?14, ?14)",
                NULL, NULL, &e, "sssssssssssisi", d->deal_id, d->role, d->peer, d->tenant, d->quote_json,
                d->requester_sig, d->files_json, d->state, d->reason, d->result_json,
                d->intent[0] ? d->intent : "pending", d->amount, d->accept[0] ? d->accept : "auto", t);
        if (r < 0 && strstr(e.message, "UNIQUE"))
                return -EEXIST;
        return r < 0 ? r : 0;
}

static int deal_one(void *ud, int n, const char *const *c) {
        deal_of(c, ud);
        return 0;
}

int sbx_store_deal_get(sbx_store *s, const char *deal_id, sbx_store_deal *ret) {
        *ret = (sbx_store_deal){0};
        int r = SQL(
                s, "SELECT " DEAL_COLS " FROM deals WHERE deal_id = ?1", deal_one, ret, NULL, "s", deal_id);
        return r < 0 ? r : r == 0 ? -ENOENT : 0;
}

int sbx_store_deal_set(sbx_store *s, const char *deal_id, const char *from, const char *state,
        const char *reason, const char *result_json, const char *intent, int64_t amount, int attempts_add) {
        return SQL(s,
                "UPDATE deals SET state = ?3, reason = ?4, result_json = COALESCE(?5, result_json), intent "
                "= "
                "COALESCE(?6, intent), amount = CASE WHEN ?7 < 0 THEN amount ELSE ?7 END, attempts = "
                "attempts + "
                "?8, updated_at = ?9 WHERE deal_id = ?1 AND (?2 IS NULL OR state = ?2) RETURNING deal_id",
                NULL, NULL, NULL, "ssssssiii", deal_id, from, state, reason, result_json, intent, amount,
                (int64_t) attempts_add, now_ms());
}

typedef struct deals_ctx {
        void (*fn)(void *ud, const sbx_store_deal *d);
        void *ud;
} deals_ctx;

static int deals_row(void *ud, int n, const char *const *c) {
        deals_ctx *x = ud;
        sbx_store_deal d;
        deal_of(c, &d);
        x->fn(x->ud, &d);
        sbx_store_deal_clear(&d);
        return 0;
}

int sbx_store_deals(sbx_store *s, const char *role, const char *state, int limit,
        void (*fn)(void *ud, const sbx_store_deal *d), void *ud) {
        deals_ctx x = {fn, ud};
        return SQL(s,
                "SELECT " DEAL_COLS
                " FROM deals WHERE (?1 IS NULL OR role = ?1) AND (?2 IS NULL OR state = ?2) "
                "ORDER BY created_at, deal_id LIMIT ?3",
                deals_row, &x, NULL, "ssi", role, state, (int64_t) limit);
}

static int sum_row(void *ud, int n, const char *const *c) {
        *(int64_t *) ud = c[0] ? strtoll(c[0], NULL, 10) : 0;
        return 0;
}

int64_t sbx_store_deals_pending(sbx_store *s, const char *peer) {
        int64_t v = 0;
        (void) SQL(s,
                "SELECT COALESCE(SUM(amount), 0) FROM deals WHERE role = 'provider' AND peer = ?1 AND "
                "intent = "
                "'pending'",
                sum_row, &v, NULL, "s", peer);
        return v;
}
