/* credits.c — credits (DESIGN.md, "Meters, credits and deals"), enforced only when the site turns
 * them on (serve --credits, or the policy file's billing.enforce). The ledger (store-ledger.h) has these
 * accounts: "tenant:T", what tenant T may spend; "hold:T", what T's running sandboxes hold;
 * "grants", what the site granted (it goes negative by as much); "usage:EXT", what sandboxes cost
 * on extension EXT. A create holds its estimate — the TTL (or billing.hold_s of it) at the
 * profile's limits, priced by the chosen extension — from tenant:T to hold:T, in one store
 * transaction: two creates racing for the last credit are serialised there, and the second is
 * answered 402 payment_required with the shortfall. The reaper raises a hold as the sandbox's
 * metered cost nears it; when the balance cannot, the sandbox runs billing.grace_s longer (default
 * 30 s) and is then expired, reason credits_exhausted. Its end settles the hold: its actual cost to
 * usage:EXT, the rest back to tenant:T. Holds are keyed by the sandbox id, so a settle done twice
 * (a restart) finds nothing held the second time. */
#include "daemon/mgr-internal.h"

#include <inttypes.h>
#include <math.h>

#include "daemon/store-ledger.h"

#define ACCT(buf, kind, name) snprintf(buf, sizeof buf, "%s:%s", kind, name)

static json_t *amount_json(int64_t units) {
        return json_real(sbx_ledger_amount(units));
}

double mgr_credit_hold_amount(sbx_mgr *m, json_t *cost, double ttl_s) {
        double s = m->hold_s > 0 && m->hold_s < ttl_s ? m->hold_s : ttl_s;
        return cost ? mgr_cost_for(cost, s) : 0;
}

unsigned mgr_credit_hold(sbx_mgr *m, const char *tenant, const char *id, double amount, sbx_mgr_reply *rp) {
        int64_t units = sbx_ledger_units(amount);
        if (!m->credits || units <= 0)
                return 0;
        char from[200], to[200];
        ACCT(from, "tenant", tenant);
        ACCT(to, "hold", tenant);
        sbx_error e = {0};
        mgr_tx_begin(m);
        int64_t bal = sbx_ledger_sum(m->store, from, NULL);
        /* a hold for what has been settled already (a destroy that came first) is not taken */
        bool settled =
                id && (sbx_ledger_has(m->store, id, "charge") || sbx_ledger_has(m->store, id, "release"));
        int r = settled               ? -ESTALE
                : bal >= units && !id ? 0
                : bal >= units        ? sbx_ledger_move(m->store, from, to, units, m->currency, "hold", id,
                                                "create: the estimate for its TTL", NULL, &e)
                                      : -ENOSPC;
        mgr_tx_end_ok(m, r >= 0 || r == -ENOSPC || r == -ESTALE);
        if (r == -ESTALE)
                return mgr_reply_err(
                        rp, 409, "conflict", NULL, "%s has ended: nothing more is held for it", id);
        if (r == -ENOSPC) {
                mgr_reply_err(rp, 402, "payment_required", NULL,
                        "tenant %s has %.6f %s; this sandbox's hold (its estimated cost for its TTL) is "
                        "%.6f: "
                        "short by %.6f %s (an adm grants credits: sandboxer credits grant)",
                        tenant, sbx_ledger_amount(bal), m->currency, sbx_ledger_amount(units),
                        sbx_ledger_amount(units - bal), m->currency);
                json_t *err = json_object_get(rp->json, "error");
                json_object_set_new(err, "shortfall", amount_json(units - bal));
                json_object_set_new(err, "balance", amount_json(bal));
                json_object_set_new(err, "hold", amount_json(units));
                json_object_set_new(err, "currency", json_string(m->currency));
                return 402;
        }
        if (r < 0)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "the ledger: %s", e.message);
        return 0;
}

/* The end of sandbox id: what it held → its cost to usage:EXT (beyond the hold: from the tenant's
 * balance), the rest back. Nothing when nothing is held and it was charged before. */
static void settle_ref(sbx_mgr *m, const char *tenant, const char *id, const char *ext, int64_t cost) {
        char bal[200], hold[200], usage[200];
        ACCT(bal, "tenant", tenant);
        ACCT(hold, "hold", tenant);
        ACCT(usage, "usage", ext);
        sbx_error e = {0};
        mgr_tx_begin(m);
        int64_t held = sbx_ledger_sum(m->store, hold, id);
        int r = 0;
        /* charged once: a hold left over after its charge (taken as it ended) is only released */
        if (sbx_ledger_has(m->store, id, "charge"))
                cost = 0;
        else if (!m->credits && held <= 0)
                cost = 0;
        if (held > 0 || cost > 0) {
                int64_t from_hold = cost < held ? cost : held;
                if (from_hold > 0)
                        r = sbx_ledger_move(m->store, hold, usage, from_hold, m->currency, "charge", id,
                                "its cost, from its hold", NULL, &e);
                if (r >= 0 && cost > from_hold)
                        r = sbx_ledger_move(m->store, bal, usage, cost - from_hold, m->currency, "charge",
                                id, "its cost beyond its hold", NULL, &e);
                if (r >= 0 && held > from_hold)
                        r = sbx_ledger_move(m->store, hold, bal, held - from_hold, m->currency, "release",
                                id, "the rest of its hold", NULL, &e);
        }
        mgr_tx_end_ok(m, r >= 0);
        if (r < 0)
                sbx_log(SBX_LOG_ERROR, "ledger_failed", "sandbox", id, "error", e.message, NULL);
}

void mgr_credit_settle(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        /* a deal's run on this provider (deals.c) is paid for by the deal, not by a tenant here */
        bool deal_run = strncmp(b->actor, "atm:deal:", 9) == 0 && strncmp(b->tenant, "peer-", 5) == 0;
        bool any = !deal_run && (m->credits || b->held > 0);
        json_t *actual = json_object_get(b->cost, "actual");
        int64_t now = mgr_now_ms();
        int64_t cost = sbx_ledger_units(
                json_is_number(actual) ? json_number_value(actual) : mgr_cost_accrued_locked(b, now));
        char id[sizeof b->id], tenant[sizeof b->tenant], ext[sizeof b->ext];
        snprintf(id, sizeof id, "%s", b->id);
        snprintf(tenant, sizeof tenant, "%s", b->tenant);
        snprintf(ext, sizeof ext, "%s",
                b->ext[0] ? b->ext : json_string_value(json_object_get(b->route, "chosen")) ?: "ext.local");
        b->held = 0;
        pthread_mutex_unlock(&m->lock);
        if (any)
                settle_ref(m, tenant, id, ext, cost);
}

typedef struct open_hold {
        char tenant[128], id[64];
        int64_t sum;
} open_hold;

typedef struct open_ctx {
        open_hold *v;
        size_t n, cap;
} open_ctx;

static void collect_open(void *ud, const char *account, const char *ref, int64_t sum) {
        open_ctx *c = ud;
        if (c->n == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 16;
                open_hold *v = realloc(c->v, cap * sizeof *v);
                if (!v)
                        return;
                c->v = v;
                c->cap = cap;
        }
        open_hold *h = &c->v[c->n++];
        snprintf(h->tenant, sizeof h->tenant, "%s", account + 5); /* "hold:" */
        snprintf(h->id, sizeof h->id, "%s", ref);
        h->sum = sum;
}

void mgr_credit_reconcile(sbx_mgr *m) {
        open_ctx c = {0};
        (void) sbx_ledger_open_refs(m->store, "hold:", collect_open, &c);
        for (size_t i = 0; i < c.n; i++) {
                open_hold *h = &c.v[i];
                if (strncmp(h->id, "deal_", 5) == 0) /* a deal's hold: its own flow settles or voids it */
                        continue;
                pthread_mutex_lock(&m->lock);
                box *b = mgr_box_find_locked(m, h->id, NULL);
                if (b)
                        b->held = h->sum;
                pthread_mutex_unlock(&m->lock);
                if (b)
                        continue;
                /* it ended while no server settled it: its stored meters' cost, if any */
                double cost = 0;
                char ext[72] = "ext.local";
                (void) sbx_store_meter_cost(m->store, h->id, &cost, ext);
                sbx_log(SBX_LOG_INFO, "hold_settled_at_start", "sandbox", h->id, "tenant", h->tenant, NULL);
                settle_ref(m, h->tenant, h->id, ext, sbx_ledger_units(cost));
        }
        free(c.v);
}

bool mgr_credit_check(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        int64_t now = mgr_now_ms();
        bool ending = b->busy || !sbx_state_usable(b->state) || b->paused_ms > 0;
        int64_t acc = sbx_ledger_units(mgr_cost_accrued_locked(b, now)), held = b->held;
        /* what a second costs at most (its limits), and how much more is worth holding: the next
         * window (billing.hold_s, else the rest of its TTL), two samples at least */
        double per_s = b->cost ? mgr_cost_for(b->cost, 1) - mgr_cost_for(b->cost, 0) : 0;
        double left_s = (double) (b->expires_ms - now) / 1000.0;
        double window = m->hold_s > 0 && m->hold_s < left_s ? m->hold_s : left_s;
        if (window < 2 * m->meter_interval_s)
                window = 2 * m->meter_interval_s;
        char id[sizeof b->id], tenant[sizeof b->tenant];
        snprintf(id, sizeof id, "%s", b->id);
        snprintf(tenant, sizeof tenant, "%s", b->tenant);
        pthread_mutex_unlock(&m->lock);
        if (ending || per_s <= 0)
                return false;
        int64_t soon = acc + sbx_ledger_units(per_s * 2 * m->meter_interval_s);
        if (soon > held) { /* raise it: what the balance allows, up to the next window's worth */
                int64_t want = acc + sbx_ledger_units(per_s * window) - held;
                char from[200], to[200];
                ACCT(from, "tenant", tenant);
                ACCT(to, "hold", tenant);
                sbx_error e = {0};
                mgr_tx_begin(m);
                int64_t bal = sbx_ledger_sum(m->store, from, NULL);
                int64_t take = want < bal ? want : bal;
                if (sbx_ledger_has(m->store, id, "charge")) /* it ended meanwhile */
                        take = 0;
                int r = take > 0 ? sbx_ledger_move(m->store, from, to, take, m->currency, "hold", id,
                                           "raised: its usage neared its hold", NULL, &e)
                                 : 0;
                mgr_tx_end_ok(m, r >= 0);
                if (r < 0)
                        sbx_log(SBX_LOG_ERROR, "ledger_failed", "sandbox", id, "error", e.message, NULL);
                else if (take > 0)
                        held += take;
        }
        pthread_mutex_lock(&m->lock);
        b->held = held;
        bool exhausted = false, began = false;
        if (acc < held)
                b->short_since_ms = 0;
        else {
                if (!b->short_since_ms) {
                        b->short_since_ms = now;
                        began = true;
                }
                exhausted = now - b->short_since_ms >= (int64_t) (m->grace_s * 1000);
        }
        pthread_mutex_unlock(&m->lock);
        if (began) { /* its grace starts: said in the log and as an event */
                char g[32];
                snprintf(g, sizeof g, "%.1f", m->grace_s);
                sbx_log(SBX_LOG_WARNING, "credits_short", "sandbox", id, "tenant", tenant, "grace_s", g,
                        NULL);
                mgr_emit(m, b, "sandbox.credits_short",
                        json_pack("{s:f, s:f, s:f}", "held", sbx_ledger_amount(held), "used",
                                sbx_ledger_amount(acc), "grace_s", m->grace_s));
        }
        return exhausted;
}

/* ---- the API ------------------------------------------------------------------------------- */

static json_t *credits_json(sbx_mgr *m, const char *tenant) {
        char bal[200], hold[200];
        ACCT(bal, "tenant", tenant);
        ACCT(hold, "hold", tenant);
        return json_pack("{s:s, s:o, s:o, s:s, s:b}", "tenant", tenant, "balance",
                amount_json(sbx_ledger_sum(m->store, bal, NULL)), "held",
                amount_json(sbx_ledger_sum(m->store, hold, NULL)), "currency", m->currency, "enforced",
                m->credits);
}

unsigned sbx_ops_credits(sbx_mgr *m, const sbx_caller *who, const char *tenant, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (tenant && !streq(tenant, who->tenant) && !streq(who->kind, "adm"))
                return mgr_reply_err(
                        rp, 403, "forbidden", "tenant", "another tenant's credits are an adm's to read");
        rp->json = credits_json(m, tenant ? tenant : who->tenant);
        rp->code = 200;
        return 200;
}

unsigned sbx_ops_credit_grant(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!streq(who->kind, "adm"))
                return mgr_reply_err(
                        rp, 403, "forbidden", NULL, "granting credits is the operator's (an adm token)");
        static const char *const keys[] = {"tenant", "amount", "note", NULL};
        if (!mgr_only_keys(body, keys, "", rp))
                return rp->code;
        json_t *t = json_object_get(body, "tenant"), *a = json_object_get(body, "amount"),
               *n = json_object_get(body, "note");
        const char *tenant = json_string_value(t);
        if (!tenant || !tenant[0] || strlen(tenant) >= 128)
                return mgr_reply_err(rp, 400, "invalid_argument", "tenant",
                        "tenant: a tenant name (1 to 127 characters)");
        if (!json_is_number(a) || !(json_number_value(a) > 0) || json_number_value(a) > 1e12 ||
                sbx_ledger_units(json_number_value(a)) <= 0)
                return mgr_reply_err(rp, 400, "invalid_argument", "amount",
                        "amount: a number more than 0 (at least 0.000001) and at most 1e12, in %s",
                        m->currency);
        if (n && (!json_is_string(n) || strlen(json_string_value(n)) > 500))
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "note", "note: a string of at most 500 characters");
        char to[200], tx[40];
        ACCT(to, "tenant", tenant);
        sbx_error e = {0};
        mgr_tx_begin(m);
        int r = sbx_ledger_move(m->store, "grants", to, sbx_ledger_units(json_number_value(a)), m->currency,
                "grant", "", json_string_value(n) ?: "", tx, &e);
        mgr_tx_end_ok(m, r >= 0);
        if (r < 0)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "the ledger: %s", e.message);
        char detail[300];
        snprintf(detail, sizeof detail, "%.6f %s to %s (%s)", json_number_value(a), m->currency, tenant, tx);
        mgr_audit(m, who, "credits.grant", tenant, "ok", detail);
        rp->json = credits_json(m, tenant);
        json_object_set_new(rp->json, "tx", json_string(tx));
        rp->code = 200;
        return 200;
}

typedef struct ledger_ctx {
        json_t *items;
        const char *tenant; /* only its accounts' rows (NULL: all) */
        int64_t last;
} ledger_ctx;

static int ledger_row(void *ud, int n, const char *const *c) {
        ledger_ctx *x = ud;
        x->last = strtoll(c[0], NULL, 10);
        if (x->tenant) {
                const char *colon = strchr(c[3], ':');
                if (!colon || !streq(colon + 1, x->tenant) ||
                        !(strncmp(c[3], "tenant:", 7) == 0 || strncmp(c[3], "hold:", 5) == 0))
                        return 0;
        }
        json_array_append_new(x->items,
                json_pack("{s:I, s:s, s:o, s:s, s:o, s:s, s:s, s:s, s:s, s:s, s:s}", "seq",
                        (json_int_t) x->last, "tx", c[1], "at", mgr_time_json(strtoll(c[2], NULL, 10)),
                        "account", c[3], "amount", amount_json(strtoll(c[4], NULL, 10)), "currency", c[5],
                        "kind", c[6], "ref", c[7], "note", c[8], "prev", c[9], "hash", c[10]));
        return 0;
}

unsigned sbx_ops_ledger(
        sbx_mgr *m, const sbx_caller *who, const char *cursor, const char *limit_s, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        char *end;
        int64_t after = 0, limit = 100;
        if (cursor && (after = strtoll(cursor, &end, 10), *end || !*cursor || after < 0))
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "cursor", "cursor: the next_cursor of the page before");
        if (limit_s && (limit = strtoll(limit_s, &end, 10), *end || !*limit_s || limit < 1 || limit > 1000))
                return mgr_reply_err(rp, 400, "invalid_argument", "limit", "limit: 1 to 1000");
        ledger_ctx x = {.items = json_array(),
                .tenant = streq(who->kind, "adm") ? NULL : who->tenant,
                .last = after};
        int r = sbx_ledger_rows(m->store, after, (int) limit, NULL, ledger_row, &x);
        if (r < 0) {
                json_decref(x.items);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "the ledger could not be read");
        }
        char next[32];
        snprintf(next, sizeof next, "%" PRId64, x.last);
        rp->json = json_pack("{s:o, s:o}", "items", x.items, "next_cursor",
                r == (int) limit ? json_string(next) : json_null());
        rp->code = 200;
        return 200;
}

/* ---- deals (deals-peer.c): what a tenant's deal costs, paid to a payable account ------------ */

void mgr_credit_pay(
        sbx_mgr *m, const char *tenant, const char *ref, const char *to, int64_t amount, const char *kind) {
        char bal[200], hold[200];
        ACCT(bal, "tenant", tenant);
        ACCT(hold, "hold", tenant);
        sbx_error e = {0};
        int r = 0;
        mgr_tx_begin(m);
        if (!sbx_ledger_has(m->store, ref, kind)) {
                int64_t held = sbx_ledger_sum(m->store, hold, ref);
                int64_t from_hold = amount < held ? amount : held;
                if (from_hold > 0)
                        r = sbx_ledger_move(m->store, hold, to, from_hold, m->currency, kind, ref,
                                "from its hold", NULL, &e);
                if (r >= 0 && amount > from_hold)
                        r = sbx_ledger_move(m->store, bal, to, amount - from_hold, m->currency, kind, ref,
                                held > 0 ? "beyond its hold" : "", NULL, &e);
                if (r >= 0 && held > from_hold)
                        r = sbx_ledger_move(m->store, hold, bal, held - from_hold, m->currency, "release",
                                ref, "the rest of its hold", NULL, &e);
        }
        mgr_tx_end_ok(m, r >= 0);
        if (r < 0)
                sbx_log(SBX_LOG_ERROR, "ledger_failed", "ref", ref, "error", e.message, NULL);
}

void mgr_credit_release(sbx_mgr *m, const char *tenant, const char *ref) {
        char bal[200], hold[200];
        ACCT(bal, "tenant", tenant);
        ACCT(hold, "hold", tenant);
        sbx_error e = {0};
        mgr_tx_begin(m);
        int64_t held = sbx_ledger_sum(m->store, hold, ref);
        int r = held > 0 ? sbx_ledger_move(m->store, hold, bal, held, m->currency, "release", ref, "voided",
                                   NULL, &e)
                         : 0;
        mgr_tx_end_ok(m, r >= 0);
        if (r < 0)
                sbx_log(SBX_LOG_ERROR, "ledger_failed", "ref", ref, "error", e.message, NULL);
}
