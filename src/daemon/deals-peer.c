/* deals-peer.c — deals between nodes, the requester's side (deals.c is the provider's): the peers
 * an adm registers (POST /v1/peers {node_id, public_key, url, credit_limit, extension}: the key
 * must name the node id; the extension, an ext.sandboxer registry entry, is how this node reaches
 * it — its URL, token and TLS), and a tenant's deal with one (POST /v1/peers/NODE/deals {offer,
 * argv, files, outputs, limits, accept}): this node asks the peer for a quote, verifies it (the
 * peer's key, this node as requester, what was asked), holds its price from the tenant's credits
 * when they are enforced, signs it, stores the deal and submits it, and answers 202 with the task;
 * a follower thread then keeps the deal's state in step with the provider's (long polls), verifies
 * the result when it is ready (the provider's signature, the deal, the price, stdout and stderr
 * against their hashes) and accepts it (accept "auto", the default) or waits for the tenant's
 * POST /v1/deals/ID/accept|reject (accept "manual"); a result that does not verify is rejected,
 * naming why. An accepted deal books the payable here — from the tenant's hold (or balance) to
 * payable:PROVIDER, keyed by the deal id — as the provider books its receivable. Every step is
 * stored first, so a restart goes on from where it was: a deal not yet submitted is submitted
 * again (a replay the provider names is that same deal), one accepted there is booked here. */
#include "daemon/remote.h"

#include <inttypes.h>

#include "basic/base64.h"
#include "basic/sha256.h"
#include "daemon/store-deals.h"

static bool is_adm(const sbx_caller *who, sbx_mgr_reply *rp) {
        if (streq(who->kind, "adm"))
                return true;
        mgr_reply_err(rp, 403, "forbidden", NULL,
                "peers are the operator's to register and remove (an adm token)");
        return false;
}

static json_t *peer_json(const sbx_store_peer *p) {
        return json_pack("{s:s, s:s, s:s, s:s?, s:f, s:o}", "node_id", p->node_id, "public_key",
                p->public_key, "url", p->url, "extension", p->extension[0] ? p->extension : NULL,
                "credit_limit", sbx_ledger_amount(p->credit_limit), "created_at",
                mgr_time_json(p->created_at));
}

unsigned sbx_ops_peer_add(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!is_adm(who, rp))
                return rp->code;
        static const char *const keys[] = {
                "node_id", "public_key", "url", "credit_limit", "extension", NULL};
        if (!mgr_only_keys(body, keys, "", rp))
                return rp->code;
        const char *id = json_string_value(json_object_get(body, "node_id")),
                   *pk = json_string_value(json_object_get(body, "public_key")),
                   *url = json_string_value(json_object_get(body, "url")),
                   *ext = json_string_value(json_object_get(body, "extension"));
        json_t *cl = json_object_get(body, "credit_limit");
        unsigned char raw[32];
        char derived[40];
        if (!mgr_node_id_ok(id))
                return mgr_reply_err(rp, 400, "invalid_argument", "node_id",
                        "node_id: a node's id (node_ + 32 hex; GET /v1/node)");
        if (!mgr_key_decode(pk, raw))
                return mgr_reply_err(rp, 400, "invalid_argument", "public_key",
                        "public_key: an Ed25519 key in base64 (GET /v1/node)");
        mgr_key_node_id(raw, derived);
        if (!streq(derived, id))
                return mgr_reply_err(rp, 400, "invalid_argument", "node_id",
                        "node_id: %s is not the node whose key this is (%s)", id, derived);
        if (streq_ptr(mgr_node_id(m), id))
                return mgr_reply_err(rp, 400, "invalid_argument", "node_id", "node_id: this node itself");
        if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
                strlen(url) >= 1024)
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "url", "url: the peer's http:// or https:// URL");
        if (!json_is_number(cl) || json_number_value(cl) < 0 || json_number_value(cl) > 1e12)
                return mgr_reply_err(rp, 400, "invalid_argument", "credit_limit",
                        "credit_limit: how much its pending deals may cost here, a number from 0 to 1e12");
        if (json_object_get(body, "extension")) {
                json_t *x = ext ? mgr_registry_entry(ext) : NULL;
                bool ok = x && streq_ptr(json_string_value(json_object_get(x, "kind")), "sandboxer");
                json_decref(x);
                if (!ok)
                        return mgr_reply_err(rp, 400, "invalid_argument", "extension",
                                "extension: a registry entry of kind sandboxer (serve --registry), how this "
                                "node "
                                "reaches the peer");
        }
        sbx_store_peer p = {0}, old;
        bool had = sbx_store_peer_get(m->store, id, &old) == 0;
        snprintf(p.node_id, sizeof p.node_id, "%s", id);
        snprintf(p.public_key, sizeof p.public_key, "%s", pk);
        snprintf(p.url, sizeof p.url, "%s", url);
        snprintf(p.extension, sizeof p.extension, "%s", ext ? ext : "");
        p.credit_limit = sbx_ledger_units(json_number_value(cl));
        p.created_at = had ? old.created_at : mgr_now_ms();
        if (sbx_store_peer_put(m->store, &p) < 0)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "the store could not keep the peer");
        mgr_audit(m, who, "peer.add", id, "ok", url);
        rp->json = peer_json(&p);
        rp->code = had ? 200 : 201;
        return rp->code;
}

static void peers_one(void *ud, const sbx_store_peer *p) {
        json_array_append_new(ud, peer_json(p));
}

unsigned sbx_ops_peers(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        (void) who;
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        json_t *items = json_array();
        (void) sbx_store_peers(m->store, peers_one, items);
        rp->json = json_pack("{s:o}", "items", items);
        rp->code = 200;
        return 200;
}

unsigned sbx_ops_peer_delete(sbx_mgr *m, const sbx_caller *who, const char *node_id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!is_adm(who, rp))
                return rp->code;
        sbx_store_peer p;
        if (!mgr_node_id_ok(node_id) || sbx_store_peer_get(m->store, node_id, &p) < 0)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no such peer");
        (void) sbx_store_peer_delete(m->store, node_id);
        mgr_audit(m, who, "peer.delete", node_id, "ok", NULL);
        rp->json = peer_json(&p);
        rp->code = 200;
        return 200;
}

/* ---- the requester's calls to a provider ---------------------------------------------------------- */

/* How peer is reached (its extension's endpoint): false with why. */
static bool peer_ep(
        sbx_mgr *m, const char *tenant, const sbx_store_peer *p, remote_ep *ep, char *why, size_t n) {
        if (!p->extension[0]) {
                snprintf(why, n,
                        "peer %s has no extension to reach it by (register it with extension: an "
                        "ext.sandboxer registry entry)",
                        p->node_id);
                return false;
        }
        return remote_ep_of(m, tenant, p->extension, ep, why, n);
}

/* A JSON call to the provider: the status (0: no answer), the answer's JSON in *ret. */
static long peer_call(sbx_mgr *m, const remote_ep *ep, const char *method, const char *path, json_t *body,
        long timeout_ms, json_t **ret, char *why, size_t n) {
        _cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        static const char *const hdr[] = {"Content-Type: application/json", NULL};
        remote_resp r = {0};
        long code = remote_call(m, ep, method, path, text, text ? strlen(text) : 0, hdr, true, NULL, NULL,
                timeout_ms, &r, why, n);
        *ret = r.body ? json_loadb(r.body, r.len, JSON_ALLOW_NUL, NULL) : NULL;
        if (code && code >= 300)
                remote_answer_why(ep, &r, why, n);
        remote_resp_done(&r);
        return code;
}

/* The quote the provider answered, checked against what was asked: NULL, or why not. */
static const char *quote_wrong(
        sbx_mgr *m, const sbx_store_peer *p, json_t *q, json_t *asked, char *why, size_t n) {
        const char *me = mgr_node_id(m);
        if (!json_is_object(q))
                return "the provider answered no quote";
        if (!streq_ptr(json_string_value(json_object_get(q, "provider")), p->node_id))
                return "the quote names another provider";
        if (!mgr_doc_verify(q, "provider_signature", p->public_key))
                return "the quote's provider_signature does not verify with the peer's key";
        if (!streq_ptr(json_string_value(json_object_get(q, "requester")), me))
                return "the quote names another requester";
        if (!json_equal(json_object_get(q, "argv"), json_object_get(asked, "argv")) ||
                !streq_ptr(json_string_value(json_object_get(q, "offer")),
                        json_string_value(json_object_get(asked, "offer"))))
                return "the quote is not for the command and offer asked";
        if (json_integer_value(json_object_get(q, "expires_ms")) <= mgr_now_ms())
                return "the quote has expired already";
        json_t *mu = json_object_get(json_object_get(q, "price"), "max_units");
        if (!json_is_integer(mu) || json_integer_value(mu) < 0) {
                snprintf(why, n, "the quote's price is not a whole number of millionths, 0 or more");
                return why;
        }
        if (!streq_ptr(json_string_value(json_object_get(json_object_get(q, "price"), "currency")),
                    m->currency)) {
                snprintf(why, n, "the quote is in %s, this node bills in %s",
                        json_string_value(json_object_get(json_object_get(q, "price"), "currency"))
                                ?: "nothing",
                        m->currency);
                return why;
        }
        return NULL;
}

/* The result the provider answered, checked: NULL, or why it is refused. */
static const char *result_wrong(
        const sbx_store_deal *d, const sbx_store_peer *p, json_t *res, char *why, size_t n) {
        json_t *q = json_loads(d->quote_json, 0, NULL);
        const char *bad = NULL;
        if (!json_is_object(res))
                bad = "no result";
        else if (!streq_ptr(json_string_value(json_object_get(res, "deal_id")), d->deal_id))
                bad = "the result is another deal's (a replayed result)";
        else if (!streq_ptr(json_string_value(json_object_get(res, "provider")), p->node_id))
                bad = "the result names another provider";
        else {
                json_t *part = mgr_result_signed_part(res);
                bool ok = mgr_doc_verify(part, "provider_signature", p->public_key);
                json_decref(part);
                if (!ok)
                        bad = "the result's provider_signature does not verify with the provider's key "
                              "(altered)";
        }
        json_t *cu = json_object_get(res, "cost_units");
        if (!bad && (!json_is_integer(cu) || json_integer_value(cu) < 0))
                bad = "the result's cost is not a whole number of millionths, 0 or more";
        if (!bad && json_integer_value(cu) >
                            json_integer_value(json_object_get(json_object_get(q, "price"), "max_units")))
                bad = "the result costs more than the quote's price";
        if (!bad) { /* the report given beside its hash is what it hashes */
                _cleanup_free_ char *rc = mgr_canon(json_object_get(res, "report"));
                char hex[65];
                sha256_hex(rc ? rc : "", rc ? strlen(rc) : 0, hex);
                if (!streq_ptr(json_string_value(json_object_get(res, "report_sha256")), hex))
                        bad = "the result's report is not what its report_sha256 hashes";
        }
        if (!bad) { /* the output given beside the hashes is what they hash */
                const char *enc = json_string_value(json_object_get(res, "encoding"));
                static const char *const f[] = {"stdout", "stderr"};
                for (size_t i = 0; i < 2 && !bad; i++) {
                        json_t *v = json_object_get(res, f[i]);
                        const char *s = json_string_value(v) ?: "";
                        size_t sl = json_string_length(v), len = sl; /* a NUL in it counts too */
                        char hex[65], key[32];
                        _cleanup_free_ char *raw = NULL;
                        if (streq_ptr(enc, "base64") && sbx_base64_decode(s, sl, false, &raw, &len) == 0)
                                sha256_hex(raw, len, hex);
                        else
                                sha256_hex(s, sl, hex);
                        snprintf(key, sizeof key, "%s_sha256", f[i]);
                        if (!streq_ptr(json_string_value(json_object_get(res, key)), hex)) {
                                snprintf(why, n, "the result's %s is not what its %s hashes", f[i], key);
                                bad = why;
                        }
                }
        }
        json_decref(q);
        return bad;
}

static void void_deal(
        sbx_mgr *m, const sbx_store_deal *d, const char *from, const char *state, const char *reason) {
        if (sbx_store_deal_set(m->store, d->deal_id, from, state, reason, NULL, "void", -1, 0) == 1)
                mgr_credit_release(m, d->tenant, d->deal_id);
        mgr_deals_changed();
}

/* Submit d to its provider: 0 submitted (or known there already), 1 refused (d failed), -1 not
 * reached (try again). */
static int submit(sbx_mgr *m, const sbx_store_deal *d, const remote_ep *ep, char *why, size_t n,
        long *ret_code, char ret_ecode[static 48]) {
        json_t *q = json_loads(d->quote_json, 0, NULL), *files = json_loads(d->files_json ?: "{}", 0, NULL),
               *ans = NULL;
        json_t *body = json_pack(
                "{s:o, s:s, s:o}", "quote", q, "requester_signature", d->requester_sig, "files", files);
        long code = peer_call(m, ep, "POST", "/v1/deals", body, 30000, &ans, why, n);
        json_decref(body);
        const char *ecode = json_string_value(json_object_get(json_object_get(ans, "error"), "code"));
        *ret_code = code;
        snprintf(ret_ecode, 48, "%s", ecode ? ecode : "deal_refused");
        int r;
        if (code == 202 || (code == 409 && streq_ptr(ecode, "replayed")))
                r = sbx_store_deal_set(
                            m->store, d->deal_id, "submitting", "queued", NULL, NULL, NULL, -1, 0) >= 0
                            ? 0
                            : -1;
        else if (code >= 400 && code < 500) {
                void_deal(m, d, "submitting", "failed", why);
                r = 1;
        } else
                r = -1;
        json_decref(ans);
        mgr_deals_changed();
        return r;
}

/* The requester's decision sent to the provider and booked: 0 done, -1 not reached. */
static int decide(sbx_mgr *m, const sbx_store_deal *d, const remote_ep *ep, bool accept, const char *reason,
        char *why, size_t n) {
        json_t *res = json_loads(d->result_json ?: "null", JSON_ALLOW_NUL, NULL);
        char seen[128]; /* the signature of the result as it reached this node */
        snprintf(seen, sizeof seen, "%s",
                json_string_value(json_object_get(res, "provider_signature")) ?: "");
        json_t *doc = mgr_decision_doc(d->deal_id, accept, reason, seen);
        int64_t cost = json_integer_value(json_object_get(res, "cost_units"));
        json_decref(res);
        _cleanup_free_ char *c = mgr_canon(doc);
        json_decref(doc);
        char sig[96];
        if (!c || !mgr_node_sign(m, c, strlen(c), sig)) {
                snprintf(why, n, "this node cannot sign (no key)");
                return -1;
        }
        json_t *body = json_pack("{s:s, s:s, s:s}", "reason", reason ? reason : "", "requester_signature",
                       sig, "result_signature", seen),
               *ans = NULL;
        char path[120];
        snprintf(path, sizeof path, "/v1/deals/%s/%s", d->deal_id, accept ? "accept" : "reject");
        long code = peer_call(m, ep, "POST", path, body, 30000, &ans, why, n);
        json_decref(body);
        const char *there = json_string_value(json_object_get(ans, "state"));
        int r = -1;
        if (code == 200 && streq_ptr(there, accept ? "accepted" : "rejected")) {
                if (accept) { /* the payable, from the tenant's hold or balance */
                        char to[80];
                        snprintf(to, sizeof to, "payable:%s", d->peer);
                        mgr_credit_pay(m, d->tenant, d->deal_id, to, cost, "payable");
                } else
                        mgr_credit_release(m, d->tenant, d->deal_id);
                (void) sbx_store_deal_set(m->store, d->deal_id, NULL, accept ? "accepted" : "rejected",
                        accept ? NULL : reason, NULL, accept ? "settled" : "void", accept ? cost : -1, 0);
                r = 0;
        } else if (code >= 400 && code < 500) {
                void_deal(m, d, NULL, "failed", why);
                r = 0;
        }
        json_decref(ans);
        mgr_deals_changed();
        return r;
}

typedef struct follow_job {
        sbx_mgr *m;
        char id[40];
} follow_job;

static void *follow_main(void *arg) {
        follow_job *j = arg;
        sbx_mgr *m = j->m;
        int backoff = 200;
        while (!mgr_stopping(m)) {
                sbx_store_deal d;
                if (sbx_store_deal_get(m->store, j->id, &d) < 0)
                        break;
                bool live = streq(d.state, "submitting") || streq(d.state, "queued") ||
                            streq(d.state, "running") || streq(d.state, "result_ready") ||
                            streq(d.state, "accepting") || streq(d.state, "rejecting");
                if (!live || (streq(d.state, "result_ready") && streq(d.accept, "manual"))) {
                        sbx_store_deal_clear(&d);
                        break; /* ended, or the tenant decides */
                }
                sbx_store_peer p;
                remote_ep ep = {0};
                char why[600] = "";
                int r = 0;
                if (sbx_store_peer_get(m->store, d.peer, &p) < 0 ||
                        !peer_ep(m, d.tenant, &p, &ep, why, sizeof why)) {
                        void_deal(m, &d, NULL, "failed", why[0] ? why : "the provider is no longer a peer");
                        sbx_store_deal_clear(&d);
                        break;
                }
                long sc;
                char ec[48];
                if (streq(d.state, "submitting"))
                        r = submit(m, &d, &ep, why, sizeof why, &sc, ec) < 0 ? -1 : 0;
                else if (streq(d.state, "accepting") || streq(d.state, "rejecting") ||
                         streq(d.state, "result_ready"))
                        r = decide(m, &d, &ep, !streq(d.state, "rejecting"), d.reason, why, sizeof why);
                else { /* queued, running: the provider's task, waited on */
                        char path[160];
                        snprintf(path, sizeof path, "/v1/tasks/%s?wait=10&state=%s", d.deal_id, d.state);
                        json_t *t = NULL;
                        long code = peer_call(m, &ep, "GET", path, NULL, 20000, &t, why, sizeof why);
                        const char *st = json_string_value(json_object_get(t, "state"));
                        if (code == 404)
                                void_deal(m, &d, d.state, "failed", "the provider does not know this deal");
                        else if (code != 200 || !st)
                                r = -1;
                        else if (streq(st, "running") || streq(st, "queued")) {
                                if (!streq(st, d.state))
                                        (void) sbx_store_deal_set(
                                                m->store, d.deal_id, d.state, st, NULL, NULL, NULL, -1, 0);
                        } else if (streq(st, "failed") || streq(st, "expired"))
                                void_deal(m, &d, d.state, st,
                                        json_string_value(json_object_get(t, "reason"))
                                                ?: "the provider's run failed");
                        else if (streq(st, "result_ready") || streq(st, "accepted") ||
                                 streq(st, "rejected")) {
                                json_t *res = json_object_get(t, "result");
                                const char *bad = result_wrong(&d, &p, res, why, sizeof why);
                                _cleanup_free_ char *text = json_dumps(res, JSON_COMPACT);
                                const char *next = bad                       ? "rejecting"
                                                   : streq(st, "rejected")   ? "rejecting"
                                                   : streq(st, "accepted")   ? "accepting"
                                                   : streq(d.accept, "auto") ? "accepting"
                                                                             : "result_ready";
                                (void) sbx_store_deal_set(m->store, d.deal_id, d.state, next, bad, text,
                                        NULL,
                                        bad ? -1 : json_integer_value(json_object_get(res, "cost_units")),
                                        0);
                                if (bad)
                                        sbx_log(SBX_LOG_WARNING, "deal_result_refused", "deal", d.deal_id,
                                                "why", bad, NULL);
                        }
                        json_decref(t);
                        mgr_deals_changed();
                }
                sbx_store_deal_clear(&d);
                if (r < 0) { /* not reached: again, a little later each time */
                        (void) mgr_deals_wait(m, backoff);
                        backoff = backoff < 5000 ? backoff * 2 : 5000;
                } else
                        backoff = 200;
        }
        free(j);
        mgr_worker_done(m);
        return NULL;
}

void mgr_deal_follow(sbx_mgr *m, const char *deal_id) {
        follow_job *j = calloc(1, sizeof *j);
        if (j) {
                j->m = m;
                snprintf(j->id, sizeof j->id, "%s", deal_id);
        }
        if (!j || mgr_worker_start(m, follow_main, j) < 0) {
                free(j);
                sbx_log(SBX_LOG_ERROR, "deal_follow_not_started", "deal", deal_id, NULL);
        }
}

/* ---- a tenant's deal ------------------------------------------------------------------------------ */

unsigned sbx_ops_invoke(
        sbx_mgr *m, const sbx_caller *who, const char *node_id, json_t *body, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        static const char *const keys[] = {"offer", "argv", "files", "outputs", "limits", "accept", NULL};
        if (!mgr_only_keys(body, keys, "", rp))
                return rp->code;
        const char *accept = json_string_value(json_object_get(body, "accept"));
        if (json_object_get(body, "accept") && !streq_ptr(accept, "auto") && !streq_ptr(accept, "manual"))
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "accept", "accept: auto (the default) or manual");
        sbx_store_peer p;
        if (!mgr_node_id_ok(node_id) || sbx_store_peer_get(m->store, node_id, &p) < 0)
                return mgr_reply_err(
                        rp, 404, "not_found", NULL, "no such peer (an adm registers it: POST /v1/peers)");
        remote_ep ep = {0};
        char why[600] = "";
        if (!peer_ep(m, who->tenant, &p, &ep, why, sizeof why))
                return mgr_reply_err(rp, 422, "unreachable_peer", "peer", "%s", why);
        const char *me = mgr_node_id(m);
        if (!me)
                return mgr_reply_err(rp, 503, "unavailable", NULL, "this node has no key (see the log)");
        /* the quote */
        json_t *ask = json_deep_copy(body), *ans = NULL;
        json_object_del(ask, "accept");
        json_object_set_new(ask, "requester", json_string(me));
        long code = peer_call(m, &ep, "POST", "/v1/quotes", ask, 30000, &ans, why, sizeof why);
        if (code != 201) {
                json_decref(ask);
                json_t *e = json_object_get(ans, "error");
                unsigned st = code >= 400 && code < 500 ? (unsigned) code : 502;
                mgr_reply_err(rp, st, st == 502 ? "peer_unreachable" : json_string_value(json_object_get(e, "code")) ?: "quote_refused",
                        json_string_value(json_object_get(e, "field")), "the provider %s: %s", node_id, why);
                json_decref(ans);
                return rp->code;
        }
        json_t *q = json_incref(json_object_get(ans, "quote"));
        json_decref(ans);
        const char *bad = quote_wrong(m, &p, q, ask, why, sizeof why);
        json_decref(ask);
        if (bad) {
                json_decref(q);
                return mgr_reply_err(rp, 502, "quote_invalid", NULL,
                        "the provider %s's quote is refused: %s", node_id, bad);
        }
        /* signed, held, stored, submitted */
        char deal_id[40], sig[96];
        mgr_deal_id_of(q, deal_id);
        _cleanup_free_ char *canon = mgr_canon(q);
        json_decref(q);
        if (!canon || !mgr_node_sign(m, canon, strlen(canon), sig))
                return mgr_reply_err(rp, 503, "unavailable", NULL, "this node cannot sign (no key)");
        json_t *qq = json_loads(canon, 0, NULL);
        int64_t max = json_integer_value(json_object_get(json_object_get(qq, "price"), "max_units"));
        json_decref(qq);
        if (mgr_credit_hold(m, who->tenant, deal_id, sbx_ledger_amount(max), rp))
                return rp->code;
        _cleanup_free_ char *files = json_object_get(body, "files")
                                             ? json_dumps(json_object_get(body, "files"), JSON_COMPACT)
                                             : strdup("{}");
        sbx_store_deal d = {0};
        snprintf(d.deal_id, sizeof d.deal_id, "%s", deal_id);
        snprintf(d.role, sizeof d.role, "requester");
        snprintf(d.peer, sizeof d.peer, "%s", node_id);
        snprintf(d.tenant, sizeof d.tenant, "%s", who->tenant);
        snprintf(d.state, sizeof d.state, "submitting");
        snprintf(d.intent, sizeof d.intent, "pending");
        snprintf(d.accept, sizeof d.accept, "%s", accept ? accept : "auto");
        d.quote_json = canon;
        d.requester_sig = sig;
        d.files_json = files;
        d.amount = max;
        if (sbx_store_deal_insert(m->store, &d) < 0) {
                mgr_credit_release(m, who->tenant, deal_id);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "the store could not keep the deal");
        }
        mgr_audit(m, who, "deal.request", deal_id, "ok", node_id);
        long sc = 0;
        char ec[48];
        int r = submit(m, &d, &ep, why, sizeof why, &sc, ec);
        if (r == 1) /* the provider's answer (402: the peer's credit limit there), with its reason */
                return mgr_reply_err(rp, (unsigned) sc, sc == 409 || sc == 403 ? "deal_refused" : ec, NULL,
                        "the provider %s refused the deal: %s", node_id, why);
        mgr_deal_follow(m, deal_id); /* and a submission not answered is retried there */
        char url[80];
        snprintf(url, sizeof url, "/v1/tasks/%s", deal_id);
        rp->json = json_pack("{s:s, s:s, s:s}", "deal_id", deal_id, "task_url", url, "state",
                r == 0 ? "queued" : "submitting");
        rp->code = 202;
        return 202;
}

unsigned sbx_ops_deal_decide(
        sbx_mgr *m, const sbx_caller *who, const char *id, bool accept, json_t *body, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        sbx_store_deal d;
        if (!mgr_deal_id_ok(id) || sbx_store_deal_get(m->store, id, &d) < 0)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no such deal");
        if (!streq(who->kind, "adm") && !streq(who->tenant, d.tenant)) {
                sbx_store_deal_clear(&d);
                return mgr_reply_err(rp, 404, "not_found", NULL, "no such deal");
        }
        unsigned code;
        if (streq(d.role, "provider"))
                code = mgr_deal_decided(m, who, &d, accept, body, rp);
        else {
                static const char *const keys[] = {"reason", NULL};
                const char *reason = json_string_value(json_object_get(body, "reason"));
                if (!mgr_only_keys(body, keys, "", rp))
                        code = rp->code;
                else if (json_object_get(body, "reason") && (!reason || strlen(reason) > 500))
                        code = mgr_reply_err(rp, 400, "invalid_argument", "reason",
                                "reason: a string of at most 500 characters");
                else if (!accept && !reason)
                        code = mgr_reply_err(
                                rp, 400, "invalid_argument", "reason", "reason: a rejection says why");
                else if (!streq(d.state, "result_ready") &&
                         !streq(d.state, accept ? "accepted" : "rejected"))
                        code = mgr_reply_err(rp, 409, "conflict", NULL,
                                "deal %s is %s: only a result_ready one is decided", id, d.state);
                else {
                        if (streq(d.state, "result_ready") &&
                                sbx_store_deal_set(m->store, id, "result_ready",
                                        accept ? "accepting" : "rejecting", accept ? NULL : reason, NULL,
                                        NULL, -1, 0) == 1) {
                                sbx_store_peer p;
                                remote_ep ep = {0};
                                char why[600] = "";
                                sbx_store_deal_clear(&d);
                                (void) sbx_store_deal_get(m->store, id, &d);
                                if (sbx_store_peer_get(m->store, d.peer, &p) < 0 ||
                                        !peer_ep(m, d.tenant, &p, &ep, why, sizeof why) ||
                                        decide(m, &d, &ep, accept, reason, why, sizeof why) < 0)
                                        mgr_deal_follow(
                                                m, id); /* not reached: the follower goes on trying */
                                mgr_audit(m, who, accept ? "deal.accept" : "deal.reject", id, "ok", reason);
                        }
                        sbx_store_deal_clear(&d);
                        (void) sbx_store_deal_get(m->store, id, &d);
                        rp->json = mgr_deal_task_json(m, &d);
                        code = rp->code = 200;
                }
        }
        sbx_store_deal_clear(&d);
        return code;
}

/* POST /v1/verify {quote} or {result}: whether a peer's (or this node's) signature holds. */
unsigned sbx_ops_verify(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp) {
        (void) who;
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        static const char *const keys[] = {"quote", "result", NULL};
        if (!mgr_only_keys(body, keys, "", rp))
                return rp->code;
        json_t *q = json_object_get(body, "quote"), *res = json_object_get(body, "result");
        if (!!q == !!res)
                return mgr_reply_err(rp, 400, "invalid_argument", NULL, "one of quote or result");
        char why[600] = "";
        const char *bad = NULL, *signer = NULL;
        if (q) {
                const char *prov = json_string_value(json_object_get(q, "provider"));
                sbx_store_peer p;
                char pk[64];
                if (prov && streq_ptr(prov, mgr_node_id(m)) && mgr_node_public_key(m, pk))
                        bad = mgr_doc_verify(q, "provider_signature", pk)
                                      ? NULL
                                      : "provider_signature does not verify (altered)";
                else if (!prov || sbx_store_peer_get(m->store, prov, &p) < 0)
                        bad = "the quote's provider is not a peer of this node";
                else
                        bad = mgr_doc_verify(q, "provider_signature", p.public_key)
                                      ? NULL
                                      : "provider_signature does not verify (altered)";
                if (!bad && json_integer_value(json_object_get(q, "expires_ms")) <= mgr_now_ms())
                        bad = "the quote has expired";
                signer = prov;
        } else {
                const char *id = json_string_value(json_object_get(res, "deal_id"));
                sbx_store_deal d;
                sbx_store_peer p;
                if (!mgr_deal_id_ok(id) || sbx_store_deal_get(m->store, id, &d) < 0)
                        bad = "the result names no deal this node knows";
                else {
                        if (!streq(d.role, "requester") || sbx_store_peer_get(m->store, d.peer, &p) < 0)
                                bad = "the result's deal is not one this node requested";
                        else
                                bad = result_wrong(&d, &p, res, why, sizeof why);
                        sbx_store_deal_clear(&d);
                }
                signer = json_string_value(json_object_get(res, "provider"));
        }
        if (bad)
                return mgr_reply_err(rp, 422, "invalid_signature", q ? "quote" : "result", "%s", bad);
        rp->json = json_pack("{s:b, s:s?}", "valid", 1, "signer", signer);
        rp->code = 200;
        return 200;
}
