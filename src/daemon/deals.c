/* deals.c — deals between nodes (DESIGN.md, "Meters, credits and deals"), the provider's side and
 * what both sides share. A node publishes offers (GET /v1/offers: a profile it runs, at ext.local's
 * price); a requester asks for a quote (POST /v1/quotes {offer, argv, files, outputs, limits,
 * requester}) and gets one signed by this node's Ed25519 key, expiring in 60 s, its limits within
 * the profile's (beyond: 422 at quote time) and its price the most the run can cost (its timeout at
 * the rate, CPU and memory at their limits). The requester signs the quote and submits it (POST
 * /v1/deals {quote, requester_signature, files}): the quote must be this node's, unaltered and
 * unexpired, the requester a peer an adm registered whose key verifies the signature, the deal new
 * (its id is the quote's hash: a replay is refused naming it), the files those the quote hashed,
 * and the peer's pending deals within its credit limit — then 202 and a task: the run is a bounded
 * sandbox here (the profile, the files written, argv with the quote's timeout, the outputs read,
 * the sandbox destroyed), its result signed by this node (exit code, SHA-256 of stdout, stderr,
 * each output and the report, the cost: the run's actual, at most the quote's price). The
 * requester accepts or rejects it, signed; an acceptance books the receivable here (and the
 * payable there) keyed by the deal id; a rejection or a failed run voids the payment intent.
 * Deals are rows in the store: a restart goes on with each (a run cut short is run again, three
 * times at most). deals-peer.c is the requester's side. */
#include "daemon/mgr-internal.h"

#include <inttypes.h>
#include <math.h>

#include "basic/base64.h"
#include "basic/sha256.h"
#include "daemon/store-deals.h"

#define DEAL_FILES_MAX (16u * 1024 * 1024)
#define RUNS_MAX 8 /* runs at once; the rest wait their turn */

static pthread_mutex_t deals_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t deals_cond = PTHREAD_COND_INITIALIZER;
static unsigned runs_now;
static uint64_t deals_gen; /* counts changes: a waiter that read a state waits only if none came since */

void mgr_deals_changed(void) {
        pthread_mutex_lock(&deals_lock);
        deals_gen++;
        pthread_cond_broadcast(&deals_cond);
        pthread_mutex_unlock(&deals_lock);
}

uint64_t mgr_deals_gen(void) {
        pthread_mutex_lock(&deals_lock);
        uint64_t g = deals_gen;
        pthread_mutex_unlock(&deals_lock);
        return g;
}

/* Wait for a change after generation gen (or ms): false once the server stops. */
static bool wait_gen(sbx_mgr *m, uint64_t gen, int ms) {
        if (mgr_stopping(m))
                return false;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (long) (ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L)
                ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_mutex_lock(&deals_lock);
        while (deals_gen == gen)
                if (pthread_cond_timedwait(&deals_cond, &deals_lock, &ts) != 0)
                        break;
        pthread_mutex_unlock(&deals_lock);
        return !mgr_stopping(m);
}

/* Wait for a change (or ms): false once the server stops. */
bool mgr_deals_wait(sbx_mgr *m, int ms) {
        if (mgr_stopping(m))
                return false;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (long) (ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L)
                ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_mutex_lock(&deals_lock);
        (void) pthread_cond_timedwait(&deals_cond, &deals_lock, &ts);
        pthread_mutex_unlock(&deals_lock);
        return !mgr_stopping(m);
}

char *mgr_canon(json_t *o) {
        /* 15 digits: what every JSON answer of this server is written with, so a number read back
         * from one is written the same way again (a double round-trips 15 significant digits) */
        return json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
}

bool mgr_doc_sign(sbx_mgr *m, json_t *doc, const char *field) {
        json_object_del(doc, field);
        _cleanup_free_ char *c = mgr_canon(doc);
        char sig[96];
        if (!c || !mgr_node_sign(m, c, strlen(c), sig))
                return false;
        json_object_set_new(doc, field, json_string(sig));
        return true;
}

bool mgr_doc_verify(json_t *doc, const char *field, const char *pk_b64) {
        const char *sig = json_string_value(json_object_get(doc, field));
        if (!sig)
                return false;
        json_t *copy = json_copy(doc);
        json_object_del(copy, field);
        _cleanup_free_ char *c = mgr_canon(copy);
        json_decref(copy);
        return c && mgr_sig_verify(pk_b64, c, strlen(c), sig);
}

void mgr_deal_id_of(json_t *quote, char id[static 40]) {
        /* its content, not its signature's encoding (which base64 could spell more than one way) */
        json_t *q = json_copy(quote);
        json_object_del(q, "provider_signature");
        _cleanup_free_ char *c = mgr_canon(q);
        json_decref(q);
        char hex[65];
        sha256_hex(c ? c : "", c ? strlen(c) : 0, hex);
        snprintf(id, 40, "deal_%.32s", hex);
}

bool mgr_deal_id_ok(const char *s) {
        if (!s || strncmp(s, "deal_", 5) != 0 || strlen(s) != 37)
                return false;
        for (const char *p = s + 5; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/* The task and payment intent of a deal, as GET /v1/tasks answers. */
json_t *mgr_deal_task_json(sbx_mgr *m, const sbx_store_deal *d) {
        json_t *q = d->quote_json ? json_loads(d->quote_json, 0, NULL) : NULL;
        json_t *res = d->result_json ? json_loads(d->result_json, JSON_ALLOW_NUL, NULL) : NULL;
        const char *provider = json_string_value(json_object_get(q, "provider")) ?: "",
                   *requester = json_string_value(json_object_get(q, "requester")) ?: "",
                   *cur = json_string_value(json_object_get(json_object_get(q, "price"), "currency"))
                                  ?: m->currency;
        json_t *t = json_pack(
                "{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:O*, s:o, s:o, s:{s:s, s:s, s:s, s:f, s:s, s:s}}",
                "deal_id", d->deal_id, "task_id", d->deal_id, "role", d->role, "peer", d->peer, "state",
                d->state, "reason", d->reason ? json_string(d->reason) : json_null(), "result",
                res ? res : json_null(), "quote", q, "created_at", mgr_time_json(d->created_at),
                "updated_at", mgr_time_json(d->updated_at), "intent", "deal_id", d->deal_id, "payer",
                requester, "payee", provider, "amount", sbx_ledger_amount(d->amount), "currency", cur,
                "state", d->intent);
        json_object_set_new(t, "accept", json_string(d->accept));
        json_object_set_new(t, "requester_signature", json_string(d->requester_sig ?: ""));
        json_object_set_new(t, "attempts", json_integer(d->attempts));
        json_decref(q);
        return t;
}

/* ---- offers and quotes ------------------------------------------------------------------------- */

static const char *const offered[] = {"profile.default", "profile.python", NULL};

static json_t *offer_json(sbx_mgr *m, const char *profile, const char *node) {
        sbx_mgr_reply rp = {.stream_fd = -1};
        _cleanup_(sbx_config_freep) sbx_config *cfg = mgr_route_config(m, profile, NULL, &rp);
        sbx_mgr_reply_done(&rp);
        if (!cfg)
                return NULL;
        json_t *cost = mgr_cost_new("ext.local", cfg, 1);
        json_t *o = json_pack("{s:s, s:s, s:s, s:O, s:s, s:{s:f, s:f, s:f}}", "offer", profile, "profile",
                profile, "provider", node, "rate", json_object_get(cost, "rate"), "currency", m->currency,
                "limits", "timeout_s", cfg->limits.value[SBX_LIMIT_TIMEOUT_S], "memory_mb",
                cfg->limits.value[SBX_LIMIT_MEMORY_MB], "cpus", cfg->limits.value[SBX_LIMIT_CPUS]);
        json_decref(cost);
        return o;
}

unsigned sbx_ops_offers(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        (void) who;
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        const char *node = mgr_node_id(m);
        if (!node)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "this node has no key (see the log)");
        json_t *items = json_array();
        for (const char *const *p = offered; *p; p++) {
                json_t *o = offer_json(m, *p, node);
                if (o)
                        json_array_append_new(items, o);
        }
        rp->json = json_pack("{s:o}", "items", items);
        rp->code = 200;
        return 200;
}

static bool path_ok(const char *p) {
        return p && p[0] == '/' && strlen(p) < 1024 && !strstr(p, "/../") && !strstr(p, "//") &&
               strcmp(p + strlen(p) - (strlen(p) >= 3 ? 3 : 0), "/..") != 0;
}

/* files {path: base64} → {path: sha256} (NULL: rp says why); the bytes' total in *total. */
static json_t *files_hashed(json_t *files, const char *field, sbx_mgr_reply *rp) {
        if (files && !json_is_object(files)) {
                mgr_reply_err(
                        rp, 400, "invalid_argument", field, "%s: an object {path: base64 content}", field);
                return NULL;
        }
        json_t *out = json_object(), *v;
        const char *k;
        size_t total = 0;
        json_object_foreach(files, k, v) {
                size_t n = 0;
                _cleanup_free_ char *raw = NULL;
                if (!path_ok(k) || !json_is_string(v) ||
                        sbx_base64_decode(
                                json_string_value(v), strlen(json_string_value(v)), false, &raw, &n) < 0) {
                        json_decref(out);
                        mgr_reply_err(rp, 400, "invalid_argument", field,
                                "%s: '%.200s': an absolute path to a base64 string", field, k);
                        return NULL;
                }
                total += n;
                if (total > DEAL_FILES_MAX || json_object_size(files) > 256) {
                        json_decref(out);
                        mgr_reply_err(rp, 413, "payload_too_large", field,
                                "%s: at most 256 files, 16 MiB in all", field);
                        return NULL;
                }
                char hex[65];
                sha256_hex(raw, n, hex);
                json_object_set_new(out, k, json_string(hex));
        }
        return out;
}

unsigned sbx_ops_quote(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp) {
        (void) who;
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        static const char *const keys[] = {"offer", "argv", "files", "outputs", "limits", "requester", NULL};
        if (!mgr_only_keys(body, keys, "", rp))
                return rp->code;
        const char *offer = json_string_value(json_object_get(body, "offer")),
                   *requester = json_string_value(json_object_get(body, "requester"));
        json_t *argv = json_object_get(body, "argv"), *outputs = json_object_get(body, "outputs"),
               *limits = json_object_get(body, "limits"), *x;
        size_t i;
        if (!offer)
                return mgr_reply_err(rp, 400, "invalid_argument", "offer",
                        "offer: one of GET /v1/offers' (a profile id)");
        if (!mgr_node_id_ok(requester))
                return mgr_reply_err(rp, 400, "invalid_argument", "requester",
                        "requester: the requesting node's id (node_ + 32 hex)");
        if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > 256)
                return mgr_reply_err(rp, 400, "invalid_argument", "argv",
                        "argv: a non-empty array of strings (256 at most)");
        json_array_foreach(argv, i, x) if (!json_is_string(x)) return mgr_reply_err(
                rp, 400, "invalid_argument", "argv", "argv[%zu]: a string", i);
        if (outputs && (!json_is_array(outputs) || json_array_size(outputs) > 64))
                return mgr_reply_err(rp, 400, "invalid_argument", "outputs",
                        "outputs: an array of absolute paths (64 at most)");
        json_array_foreach(outputs, i, x) if (!path_ok(json_string_value(x))) return mgr_reply_err(
                rp, 400, "invalid_argument", "outputs", "outputs[%zu]: an absolute path", i);
        if (limits && !json_is_object(limits))
                return mgr_reply_err(rp, 400, "invalid_argument", "limits",
                        "limits: an object {timeout_s, memory_mb, cpus}");
        static const char *const lkeys[] = {"timeout_s", "memory_mb", "cpus", NULL};
        if (limits && !mgr_only_keys(limits, lkeys, "limits.", rp))
                return rp->code;
        bool known = false;
        for (const char *const *p = offered; *p; p++)
                known = known || streq(*p, offer);
        if (!known)
                return mgr_reply_err(rp, 404, "not_found", "offer",
                        "no offer %.200s here (GET /v1/offers lists them)", offer);
        _cleanup_(sbx_config_freep) sbx_config *cfg = mgr_route_config(m, offer, NULL, rp);
        if (!cfg)
                return rp->code;
        /* the limits: the profile's, or less; more is refused here, before anything is signed */
        static const struct {
                const char *key;
                sbx_limit_id id;
        } lim[] = {{"timeout_s", SBX_LIMIT_TIMEOUT_S}, {"memory_mb", SBX_LIMIT_MEMORY_MB},
                {"cpus", SBX_LIMIT_CPUS}};
        json_t *lq = json_object();
        for (size_t k = 0; k < ELEMENTSOF(lim); k++) {
                double have = cfg->limits.value[lim[k].id];
                json_t *v = json_object_get(limits, lim[k].key);
                if (v && (!json_is_number(v) || !(json_number_value(v) > 0))) {
                        json_decref(lq);
                        return mgr_reply_err(rp, 400, "invalid_argument", "limits",
                                "limits.%s: a number more than 0", lim[k].key);
                }
                if (v && json_number_value(v) > have) {
                        json_decref(lq);
                        mgr_reply_err(rp, 422, "limit_exceeded", "limits",
                                "limits.%s: %g is beyond what this provider's policy allows for %s (%g)",
                                lim[k].key, json_number_value(v), offer, have);
                        return rp->code;
                }
                json_object_set_new(lq, lim[k].key, json_real(v ? json_number_value(v) : have));
        }
        /* the run's sandbox lives its timeout and two minutes: within the profile's ttl.max */
        double tmax = cfg->profile ? cfg->profile->ttl_max_s : 0;
        if (tmax > 0 && json_number_value(json_object_get(lq, "timeout_s")) + 120 > tmax) {
                json_decref(lq);
                return mgr_reply_err(rp, 422, "limit_exceeded", "limits",
                        "limits.timeout_s: a run of %g s does not fit %s's ttl.max (%g s, less two minutes)",
                        json_number_value(json_object_get(lq, "timeout_s")), offer, tmax);
        }
        json_t *fh = files_hashed(json_object_get(body, "files"), "files", rp);
        if (!fh) {
                json_decref(lq);
                return rp->code;
        }
        const char *node = mgr_node_id(m);
        double timeout = json_number_value(json_object_get(lq, "timeout_s"));
        json_t *cost = mgr_cost_new("ext.local", cfg, timeout);
        /* the most it can cost: its timeout and a creation at the rate, CPU and memory at their limits */
        int64_t max = sbx_ledger_units(mgr_cost_for(cost, timeout + 5));
        char qid[40];
        mgr_random_id("quote_", qid, sizeof qid);
        int64_t now = mgr_now_ms(),
                ttl_ms = (int64_t) ((m->o.quote_ttl_s > 0 ? m->o.quote_ttl_s : 60) * 1000);
        json_t *q = json_pack(
                "{s:s, s:s, s:s, s:s, s:s, s:O, s:o, s:o, s:o, s:{s:I, s:s, s:O}, s:I, s:I, s:o, s:i}",
                "quote_id", qid, "provider", node ? node : "", "requester", requester, "offer", offer,
                "profile", offer, "argv", argv, "files", fh, "outputs",
                outputs ? json_incref(outputs) : json_array(), "limits", lq, "price", "max_units",
                (json_int_t) max, "currency", m->currency, "rate", json_object_get(cost, "rate"),
                "created_ms", (json_int_t) now, "expires_ms", (json_int_t) (now + ttl_ms), "expires_at",
                mgr_time_json(now + ttl_ms), "version", 1);
        json_decref(cost);
        if (!node || !mgr_doc_sign(m, q, "provider_signature")) {
                json_decref(q);
                return mgr_reply_err(
                        rp, 503, "unavailable", NULL, "this node cannot sign (no key: see the log)");
        }
        rp->json = json_pack("{s:o}", "quote", q);
        rp->code = 201;
        return 201;
}

/* ---- a deal submitted: checked, stored, run ----------------------------------------------------- */

static void *run_main(void *arg);

typedef struct deal_job {
        sbx_mgr *m;
        char id[40];
} deal_job;

static void run_start(sbx_mgr *m, const char *deal_id) {
        deal_job *j = calloc(1, sizeof *j);
        if (j) {
                j->m = m;
                snprintf(j->id, sizeof j->id, "%s", deal_id);
        }
        if (!j || mgr_worker_start(m, run_main, j) < 0) {
                free(j);
                sbx_log(SBX_LOG_ERROR, "deal_run_not_started", "deal", deal_id, NULL);
        }
}

/* The quote a requester sends back: this node's, unaltered, unexpired. NULL with rp filled. */
static const char *quote_refused(sbx_mgr *m, json_t *q, char *why, size_t n) {
        const char *node = mgr_node_id(m);
        char pk[64];
        if (!json_is_object(q))
                return "quote: the object POST /v1/quotes answered";
        if (!node || !mgr_node_public_key(m, pk))
                return "this node has no key";
        if (!streq_ptr(json_string_value(json_object_get(q, "provider")), node)) {
                snprintf(why, n, "quote: made by %.64s, not by this node (%s)",
                        json_string_value(json_object_get(q, "provider")) ?: "nobody", node);
                return why;
        }
        if (!mgr_doc_verify(q, "provider_signature", pk))
                return "quote: its provider_signature does not verify (altered since this node signed it)";
        int64_t exp = json_integer_value(json_object_get(q, "expires_ms"));
        if (mgr_now_ms() >= exp) {
                snprintf(why, n, "quote: expired at %s (ask for another)",
                        json_string_value(json_object_get(q, "expires_at")) ?: "?");
                return why;
        }
        return NULL;
}

unsigned sbx_ops_deal_submit(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        static const char *const keys[] = {"quote", "requester_signature", "files", NULL};
        if (!mgr_only_keys(body, keys, "", rp))
                return rp->code;
        json_t *q = json_object_get(body, "quote");
        const char *sig = json_string_value(json_object_get(body, "requester_signature"));
        char why[300], deal_id[40];
        const char *bad = quote_refused(m, q, why, sizeof why);
        sbx_store_deal seen;
        if (!bad ||
                strstr(bad, "expired")) { /* this node's quote: a deal made from it already is a replay */
                mgr_deal_id_of(q, deal_id);
                if (sbx_store_deal_get(m->store, deal_id, &seen) == 0) {
                        sbx_store_deal_clear(&seen);
                        return mgr_reply_err(rp, 409, "replayed", "quote",
                                "deal %s was already made from this quote (a quote makes one deal; ask for "
                                "another)",
                                deal_id);
                }
        }
        if (bad)
                return mgr_reply_err(rp, 422, "quote_refused", "quote", "%s", bad);
        const char *req = json_string_value(json_object_get(q, "requester"));
        sbx_store_peer peer;
        if (sbx_store_peer_get(m->store, req, &peer) < 0)
                return mgr_reply_err(rp, 403, "unknown_peer", "quote",
                        "requester %s is not a peer of this node (an adm registers it: POST /v1/peers)",
                        req);
        _cleanup_free_ char *canon = mgr_canon(q);
        if (!sig || !canon || !mgr_sig_verify(peer.public_key, canon, strlen(canon), sig))
                return mgr_reply_err(rp, 422, "deal_refused", "requester_signature",
                        "requester_signature: not %s's signature of this quote", req);
        /* the files: those the quote hashed, byte for byte */
        json_t *fh = files_hashed(json_object_get(body, "files"), "files", rp);
        if (!fh)
                return rp->code;
        bool same = json_equal(fh, json_object_get(q, "files"));
        json_decref(fh);
        if (!same)
                return mgr_reply_err(rp, 422, "deal_refused", "files",
                        "files: not the files the quote hashed (each path and its SHA-256 must match)");
        int64_t max = json_integer_value(json_object_get(json_object_get(q, "price"), "max_units"));
        _cleanup_free_ char *files = json_object_get(body, "files")
                                             ? json_dumps(json_object_get(body, "files"), JSON_COMPACT)
                                             : strdup("{}");
        sbx_store_deal d = {0};
        snprintf(d.deal_id, sizeof d.deal_id, "%s", deal_id);
        snprintf(d.role, sizeof d.role, "provider");
        snprintf(d.peer, sizeof d.peer, "%s", req);
        snprintf(d.tenant, sizeof d.tenant, "%s", who->tenant);
        snprintf(d.state, sizeof d.state, "queued");
        snprintf(d.intent, sizeof d.intent, "pending");
        snprintf(d.accept, sizeof d.accept, "manual");
        d.quote_json = canon;
        d.requester_sig = (char *) sig;
        d.files_json = files;
        d.amount = max;
        /* the peer's exposure (what its pending deals may cost) within its credit limit, and the
         * deal new — in one transaction, so two submissions cannot both pass */
        mgr_tx_begin(m);
        int64_t pending = sbx_store_deals_pending(m->store, req);
        int r = pending + max > peer.credit_limit ? -EDQUOT : sbx_store_deal_insert(m->store, &d);
        mgr_tx_end(m);
        if (r == -EEXIST)
                return mgr_reply_err(rp, 409, "replayed", "quote",
                        "deal %s was already made from this quote (a quote makes one deal; ask for another)",
                        deal_id);
        if (r == -EDQUOT) {
                mgr_reply_err(rp, 402, "payment_required", NULL,
                        "peer %s's pending deals would reach %.6f %s, over its credit limit of %.6f", req,
                        sbx_ledger_amount(pending + max), m->currency, sbx_ledger_amount(peer.credit_limit));
                json_object_set_new(json_object_get(rp->json, "error"), "shortfall",
                        json_real(sbx_ledger_amount(pending + max - peer.credit_limit)));
                return 402;
        }
        if (r < 0)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "the store: %s", strerror(-r));
        mgr_audit(m, who, "deal.submit", deal_id, "ok", req);
        run_start(m, deal_id);
        char url[80];
        snprintf(url, sizeof url, "/v1/tasks/%s", deal_id);
        rp->json = json_pack("{s:s, s:s, s:s}", "deal_id", deal_id, "task_url", url, "state", "queued");
        rp->code = 202;
        return 202;
}

/* ---- the run --------------------------------------------------------------------------------- */

static const char *no_query(void *ctx, const char *key) {
        (void) ctx;
        (void) key;
        return NULL;
}

static const char *reply_why(const sbx_mgr_reply *rp) {
        return json_string_value(json_object_get(json_object_get(rp->json, "error"), "message")) ?: "failed";
}

/* Bytes the native API answered (a string when UTF-8, else base64 with encoding "base64"). */
static void hash_out(json_t *v, const char *enc, char hex[static 65]) {
        const char *s = json_string_value(v) ?: "";
        size_t len = json_string_length(v);
        if (streq_ptr(enc, "base64")) {
                _cleanup_free_ char *raw = NULL;
                size_t n = 0;
                if (sbx_base64_decode(s, strlen(s), false, &raw, &n) == 0) {
                        sha256_hex(raw, n, hex);
                        return;
                }
        }
        sha256_hex(s, len, hex);
}

/* What an earlier attempt at deal id left (its run cut short by a crash: the sandbox was
 * re-adopted at the restart) goes before the next attempt, not at its TTL. */
static void earlier_attempts_gone(sbx_mgr *m, const sbx_caller *who, const char *id) {
        char found[16][64];
        size_t n = 0;
        pthread_mutex_lock(&m->lock);
        for (box *b = m->boxes; b && n < ELEMENTSOF(found); b = b->next)
                if (streq(b->tenant, who->tenant) && !b->busy &&
                        streq_ptr(json_string_value(json_object_get(b->metadata, "deal_id")), id))
                        snprintf(found[n++], sizeof found[0], "%s", b->id);
        pthread_mutex_unlock(&m->lock);
        for (size_t i = 0; i < n; i++) {
                sbx_mgr_reply rp = {.stream_fd = -1};
                sbx_ops_destroy_as(m, who, found[i], "deal_retried", &rp);
                sbx_mgr_reply_done(&rp);
        }
}

/* Run deal d here: 0 and the result (signed), or -1 and why. */
static int run_deal(sbx_mgr *m, const sbx_store_deal *d, json_t **ret, char *why, size_t n) {
        json_t *q = json_loads(d->quote_json, 0, NULL), *files = json_loads(d->files_json ?: "{}", 0, NULL);
        sbx_caller who = {.kind = "atm"};
        snprintf(who.name, sizeof who.name, "deal:%s", d->deal_id);
        snprintf(who.tenant, sizeof who.tenant, "peer-%s", d->peer);
        double timeout = json_number_value(json_object_get(json_object_get(q, "limits"), "timeout_s"));
        sbx_create_req cr = {.profile = json_string_value(json_object_get(q, "profile")),
                .ttl_s = timeout + 120,
                .ttl_given = true,
                .no_hold = true};
        json_t *meta = json_pack("{s:s}", "deal_id", d->deal_id);
        cr.metadata = meta;
        if (d->attempts > 1)
                earlier_attempts_gone(m, &who, d->deal_id);
        sbx_mgr_reply rp = {.stream_fd = -1};
        int rc = -1;
        char sid[64] = "";
        char *body = NULL, *rep = NULL;
        json_t *result = NULL, *outs = json_object(), *ex = NULL;
        if (sbx_ops_create(m, &who, &cr, &rp) != 201) {
                snprintf(why, n, "the sandbox could not be made: %s", reply_why(&rp));
                goto out;
        }
        snprintf(sid, sizeof sid, "%s", json_string_value(json_object_get(rp.json, "id")) ?: "");
        sbx_mgr_reply_done(&rp);
        const char *path;
        json_t *v;
        json_object_foreach(files, path, v) {
                _cleanup_free_ char *raw = NULL;
                size_t len = 0;
                (void) sbx_base64_decode(
                        json_string_value(v) ?: "", strlen(json_string_value(v) ?: ""), false, &raw, &len);
                if (sbx_ops_file_write(m, &who, sid, path, raw ?: "", len, &rp) != 200) {
                        snprintf(why, n, "file %.200s could not be written: %s", path, reply_why(&rp));
                        goto out;
                }
                sbx_mgr_reply_done(&rp);
        }
        json_t *exb = json_pack("{s:O, s:f}", "argv", json_object_get(q, "argv"), "timeout_s", timeout);
        body = json_dumps(exb, JSON_COMPACT);
        json_decref(exb);
        sbx_mgr_request rq = {.who = &who,
                .body = body,
                .len = body ? strlen(body) : 0,
                .query = no_query,
                .header = no_query};
        if (mgr_op_exec(m, &rq, sid, &rp) != 200 || !rp.json) {
                snprintf(why, n, "the run could not start: %s", reply_why(&rp));
                goto out;
        }
        ex = json_incref(rp.json);
        sbx_mgr_reply_done(&rp);
        json_t *o;
        size_t i;
        json_array_foreach(json_object_get(q, "outputs"), i, o) {
                const char *p = json_string_value(o);
                if (sbx_ops_file_read(m, &who, sid, p, &rp) == 200) {
                        char hex[65];
                        sha256_hex(rp.raw ?: "", rp.raw_len, hex);
                        json_object_set_new(outs, p, json_string(hex));
                } else
                        json_object_set_new(outs, p, json_null()); /* not there */
                sbx_mgr_reply_done(&rp);
        }
        sbx_ops_destroy(m, &who, sid, &rp);
        double actual = json_number_value(json_object_get(json_object_get(rp.json, "cost"), "actual"));
        sbx_mgr_reply_done(&rp);
        sid[0] = 0;
        int64_t max = json_integer_value(json_object_get(json_object_get(q, "price"), "max_units")),
                cost = sbx_ledger_units(actual);
        if (cost > max)
                cost = max;
        const char *enc = json_string_value(json_object_get(ex, "encoding"));
        char so[65], se[65], rs[65];
        hash_out(json_object_get(ex, "stdout"), enc, so);
        hash_out(json_object_get(ex, "stderr"), enc, se);
        rep = mgr_canon(json_object_get(ex, "report"));
        sha256_hex(rep ?: "", rep ? strlen(rep) : 0, rs);
        json_t *code = json_object_get(ex, "exit_code");
        result = json_pack("{s:s, s:s, s:O, s:s, s:s, s:s, s:O, s:s, s:I, s:s, s:I}", "deal_id", d->deal_id,
                "provider", mgr_node_id(m) ?: "", "exit_code", code ? code : json_null(), "status",
                json_string_value(json_object_get(ex, "status")) ?: "?", "stdout_sha256", so,
                "stderr_sha256", se, "files", outs, "report_sha256", rs, "cost_units", (json_int_t) cost,
                "currency",
                json_string_value(json_object_get(json_object_get(q, "price"), "currency")) ?: m->currency,
                "finished_ms", (json_int_t) mgr_now_ms());
        if (!mgr_doc_sign(m, result, "provider_signature")) {
                snprintf(why, n, "this node cannot sign (no key)");
                goto out;
        }
        /* what was signed, and beside it what the hashes are of */
        json_object_set(result, "stdout", json_object_get(ex, "stdout"));
        json_object_set(result, "stderr", json_object_get(ex, "stderr"));
        json_object_set_new(result, "encoding", json_string(enc ?: "utf-8"));
        json_object_set(result, "report", json_object_get(ex, "report"));
        *ret = TAKE_PTR(result);
        rc = 0;
out:
        sbx_mgr_reply_done(&rp);
        free(body);
        free(rep);
        json_decref(ex);
        if (sid[0]) {
                sbx_ops_destroy(m, &who, sid, &rp);
                sbx_mgr_reply_done(&rp);
        }
        json_decref(result);
        json_decref(outs);
        json_decref(meta);
        json_decref(files);
        json_decref(q);
        return rc;
}

/* The signed part of a result (what provider_signature covers). */
json_t *mgr_result_signed_part(json_t *result) {
        json_t *c = json_copy(result);
        static const char *const extra[] = {"stdout", "stderr", "encoding", "report"};
        for (size_t i = 0; i < ELEMENTSOF(extra); i++)
                json_object_del(c, extra[i]);
        return c;
}

static void *run_main(void *arg) {
        deal_job *j = arg;
        sbx_mgr *m = j->m;
        const char *id = j->id;
        /* a turn: RUNS_MAX at once */
        for (;;) {
                pthread_mutex_lock(&deals_lock);
                if (runs_now < RUNS_MAX || mgr_stopping(m)) {
                        runs_now++;
                        pthread_mutex_unlock(&deals_lock);
                        break;
                }
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 500 * 1000000L;
                if (ts.tv_nsec >= 1000000000L)
                        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
                (void) pthread_cond_timedwait(&deals_cond, &deals_lock, &ts);
                pthread_mutex_unlock(&deals_lock);
        }
        sbx_store_deal d = {0};
        if (!mgr_stopping(m) && sbx_store_deal_get(m->store, id, &d) == 0 &&
                sbx_store_deal_set(m->store, id, "queued", "running", NULL, NULL, NULL, -1, 1) == 1) {
                mgr_deals_changed();
                json_t *result = NULL;
                char why[600] = "";
                int r = d.attempts >= 3
                                ? (snprintf(why, sizeof why, "the provider stopped during its run 3 times"),
                                          -1)
                                : run_deal(m, &d, &result, why, sizeof why);
                if (r == 0) {
                        _cleanup_free_ char *text = json_dumps(result, JSON_COMPACT);
                        (void) sbx_store_deal_set(m->store, id, "running", "result_ready", NULL, text, NULL,
                                json_integer_value(json_object_get(result, "cost_units")), 0);
                } else if (mgr_stopping(m)) /* cut short by the server's stop: run again at its start */
                        (void) sbx_store_deal_set(
                                m->store, id, "running", "queued", NULL, NULL, NULL, -1, 0);
                else {
                        (void) sbx_store_deal_set(
                                m->store, id, "running", "failed", why, NULL, "void", 0, 0);
                        sbx_log(SBX_LOG_WARNING, "deal_failed", "deal", id, "error", why, NULL);
                }
                json_decref(result);
        }
        sbx_store_deal_clear(&d);
        pthread_mutex_lock(&deals_lock);
        runs_now--;
        pthread_cond_broadcast(&deals_cond);
        pthread_mutex_unlock(&deals_lock);
        mgr_deals_changed();
        free(j);
        mgr_worker_done(m);
        return NULL;
}

/* ---- tasks, decisions, lists ---------------------------------------------------------------------- */

/* Who may see deal d: an adm, the tenant that asked for it (requester), or the token its peer
 * uses here (provider: the tenant that submitted it). */
static bool deal_visible(const sbx_caller *who, const sbx_store_deal *d) {
        return streq(who->kind, "adm") || streq(who->tenant, d->tenant);
}

unsigned sbx_ops_task(sbx_mgr *m, const sbx_caller *who, const char *id, const char *wait_s,
        const char *unlike, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        double wait = 0;
        char *end;
        if (!mgr_deal_id_ok(id))
                return mgr_reply_err(rp, 404, "not_found", NULL, "no such task");
        if (wait_s && (wait = strtod(wait_s, &end), *end || !*wait_s || !(wait >= 0 && wait <= 30)))
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "wait", "wait: seconds to wait for a change, 0 to 30");
        int64_t until = mgr_now_ms() + (int64_t) (wait * 1000);
        for (;;) {
                uint64_t gen = mgr_deals_gen(); /* before the read: a change after it ends the wait */
                sbx_store_deal d;
                if (sbx_store_deal_get(m->store, id, &d) < 0 || !deal_visible(who, &d)) {
                        sbx_store_deal_clear(&d);
                        return mgr_reply_err(rp, 404, "not_found", NULL, "no such task: %s", id);
                }
                /* ?wait=S&state=X: answered once its state is not X (or after S) */
                bool changed = !unlike || !streq(unlike, d.state);
                if (changed || mgr_now_ms() >= until || mgr_stopping(m)) {
                        rp->json = mgr_deal_task_json(m, &d);
                        sbx_store_deal_clear(&d);
                        rp->code = 200;
                        return 200;
                }
                sbx_store_deal_clear(&d);
                int left = (int) (until - mgr_now_ms());
                (void) wait_gen(m, gen, left > 1000 ? 1000 : left > 0 ? left : 1);
        }
}

typedef struct list_ctx {
        json_t *items;
        const sbx_caller *who;
        sbx_mgr *m;
} list_ctx;

static void list_one(void *ud, const sbx_store_deal *d) {
        list_ctx *x = ud;
        if (deal_visible(x->who, d))
                json_array_append_new(x->items, mgr_deal_task_json(x->m, d));
}

unsigned sbx_ops_deals(
        sbx_mgr *m, const sbx_caller *who, const char *role, const char *state, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (role && !streq(role, "provider") && !streq(role, "requester"))
                return mgr_reply_err(rp, 400, "invalid_argument", "role", "role: provider or requester");
        list_ctx x = {json_array(), who, m};
        (void) sbx_store_deals(m->store, role, state, 10000, list_one, &x);
        rp->json = json_pack("{s:o}", "items", x.items);
        rp->code = 200;
        return 200;
}

/* The ledger's side of a settled deal: the provider's receivable (from deals:income), booked once. */
static void book_receivable(sbx_mgr *m, const sbx_store_deal *d) {
        char to[80];
        snprintf(to, sizeof to, "receivable:%s", d->peer);
        sbx_error e = {0};
        mgr_tx_begin(m);
        int r = d->amount > 0 && !sbx_ledger_has(m->store, d->deal_id, "receivable")
                        ? sbx_ledger_move(m->store, "deals:income", to, d->amount, m->currency, "receivable",
                                  d->deal_id, "a deal's result accepted", NULL, &e)
                        : 0;
        mgr_tx_end_ok(m, r >= 0);
        if (r < 0)
                sbx_log(SBX_LOG_ERROR, "ledger_failed", "deal", d->deal_id, "error", e.message, NULL);
}

/* What a requester signs to accept or reject a result: {deal_id, decision, reason, result}. */
json_t *mgr_decision_doc(const char *deal_id, bool accept, const char *reason, const char *result_sig) {
        return json_pack("{s:s, s:s, s:s, s:s}", "deal_id", deal_id, "decision",
                accept ? "accept" : "reject", "reason", reason ? reason : "", "result_signature",
                result_sig ? result_sig : "");
}

/* The provider's side of POST /v1/deals/ID/accept|reject: the requester's signed decision. */
unsigned mgr_deal_decided(
        sbx_mgr *m, const sbx_caller *who, sbx_store_deal *d, bool accept, json_t *body, sbx_mgr_reply *rp) {
        static const char *const keys[] = {"reason", "requester_signature", "result_signature", NULL};
        if (!mgr_only_keys(body, keys, "", rp))
                return rp->code;
        const char *reason = json_string_value(json_object_get(body, "reason")),
                   *sig = json_string_value(json_object_get(body, "requester_signature")),
                   *seen = json_string_value(json_object_get(body, "result_signature"));
        if (json_object_get(body, "reason") && (!reason || strlen(reason) > 500))
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "reason", "reason: a string of at most 500 characters");
        const char *want = accept ? "accepted" : "rejected";
        if (streq(d->state, want)) { /* said again (a retry): as it was */
                rp->json = mgr_deal_task_json(m, d);
                rp->code = 200;
                return 200;
        }
        if (!streq(d->state, "result_ready"))
                return mgr_reply_err(rp, 409, "conflict", NULL,
                        "deal %s is %s: only a result_ready one is accepted or rejected", d->deal_id,
                        d->state);
        json_t *res = json_loads(d->result_json ?: "null", JSON_ALLOW_NUL, NULL);
        /* an acceptance is of this node's result; a rejection may be of what reached the requester
         * (altered on the way: it says what it saw) */
        json_t *doc = mgr_decision_doc(d->deal_id, accept, reason,
                !accept && seen ? seen : json_string_value(json_object_get(res, "provider_signature")));
        json_decref(res);
        _cleanup_free_ char *c = mgr_canon(doc);
        json_decref(doc);
        sbx_store_peer peer;
        if (sbx_store_peer_get(m->store, d->peer, &peer) < 0 || !sig || !c ||
                !mgr_sig_verify(peer.public_key, c, strlen(c), sig))
                return mgr_reply_err(rp, 422, "decision_refused", "requester_signature",
                        "requester_signature: not %s's signature of this decision on this result", d->peer);
        if (sbx_store_deal_set(m->store, d->deal_id, "result_ready", want, accept ? NULL : reason ?: "rejected", NULL,
                    accept ? "settled" : "void", -1, 0) == 1) {
                snprintf(d->state, sizeof d->state, "%s", want);
                if (accept)
                        book_receivable(m, d);
                mgr_audit(m, who, accept ? "deal.accept" : "deal.reject", d->deal_id, "ok", reason);
                mgr_deals_changed();
        }
        sbx_store_deal e;
        if (sbx_store_deal_get(m->store, d->deal_id, &e) == 0) {
                rp->json = mgr_deal_task_json(m, &e);
                sbx_store_deal_clear(&e);
        }
        rp->code = 200;
        return 200;
}

typedef struct resume_ctx {
        struct {
                char id[40];
                bool provider, running;
        } * v;
        size_t n, cap;
} resume_ctx;

static void resume_one(void *ud, const sbx_store_deal *d) {
        resume_ctx *x = ud; /* collected: a row's callback may not call the store */
        if (x->n == x->cap) {
                size_t cap = x->cap ? x->cap * 2 : 64;
                void *v = realloc(x->v, cap * sizeof *x->v);
                if (!v)
                        return;
                x->v = v;
                x->cap = cap;
        }
        snprintf(x->v[x->n].id, sizeof x->v[x->n].id, "%s", d->deal_id);
        x->v[x->n].provider = streq(d->role, "provider");
        x->v[x->n].running = streq(d->state, "running");
        x->n++;
}

/* A result left undecided a day (the provider's side), or a day and ten minutes (the
 * requester's: the provider's expiry first): expired, the intent void, a requester's hold
 * released. Called by the reaper; does its work once a minute. */
typedef struct stale_ctx {
        int64_t before;
        resume_ctx *x;
} stale_ctx;

static void stale_one(void *ud, const sbx_store_deal *d) {
        stale_ctx *c = ud;
        int64_t cutoff = c->before - (streq(d->role, "requester") ? 10 * 60 * 1000 : 0);
        if (d->updated_at < cutoff)
                resume_one(c->x, d);
}

void mgr_deals_expire(sbx_mgr *m) {
        static int64_t last;
        int64_t now = mgr_now_ms();
        if (now - last < 60 * 1000)
                return;
        last = now;
        resume_ctx x = {0};
        stale_ctx c = {now - 24LL * 3600 * 1000, &x};
        (void) sbx_store_deals(m->store, NULL, "result_ready", 10000, stale_one, &c);
        for (size_t i = 0; i < x.n; i++) {
                sbx_store_deal d;
                if (sbx_store_deal_get(m->store, x.v[i].id, &d) < 0)
                        continue;
                if (sbx_store_deal_set(m->store, d.deal_id, "result_ready", "expired",
                            "its result was neither accepted nor rejected within a day", NULL, "void", -1,
                            0) == 1) {
                        if (!x.v[i].provider)
                                mgr_credit_release(m, d.tenant, d.deal_id);
                        sbx_log(SBX_LOG_INFO, "deal_expired", "deal", d.deal_id, NULL);
                }
                sbx_store_deal_clear(&d);
        }
        free(x.v);
        if (x.n)
                mgr_deals_changed();
}

void mgr_deals_start(sbx_mgr *m) {
        static const char *const live[] = {
                "queued", "running", "submitting", "result_ready", "accepting", "rejecting"};
        resume_ctx x = {0};
        for (size_t i = 0; i < ELEMENTSOF(live); i++)
                (void) sbx_store_deals(m->store, NULL, live[i], 100000, resume_one, &x);
        for (size_t i = 0; i < x.n; i++) {
                if (!x.v[i].provider) {
                        mgr_deal_follow(m, x.v[i].id);
                        continue;
                }
                if (x.v[i].running) /* cut short by a stop or a crash: run again */
                        (void) sbx_store_deal_set(
                                m->store, x.v[i].id, "running", "queued", NULL, NULL, NULL, -1, 0);
                sbx_store_deal d;
                if (sbx_store_deal_get(m->store, x.v[i].id, &d) == 0 && streq(d.state, "queued"))
                        run_start(m, x.v[i].id);
                sbx_store_deal_clear(&d);
        }
        free(x.v);
}
