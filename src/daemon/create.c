/* create.c — create: quotas, idempotency, profile and policy resolved, the supervisor started or a warm one
 * taken; the warm pool. */
#include "daemon/mgr-internal.h"
#include "basic/debug.h"

#include "basic/strv.h"

#include "basic/rm-rf.h"
#include "basic/sha256.h"

/* ---- quotas -------------------------------------------------------------------------------- */

const char *mgr_quota_check(
        sbx_mgr *m, const char *tenant, double memory_mb, bool exec, char *msg, size_t sz) {
        unsigned n = 0, execs = 0;
        double mem = 0;
        pthread_mutex_lock(&m->lock);
        for (box *b = m->boxes; b; b = b->next)
                if (streq(b->tenant, tenant)) {
                        n++;
                        execs += b->execs_running;
                        mem += b->memory_mb;
                }
        pthread_mutex_unlock(&m->lock);
        if (!exec && m->o.quota_sandboxes && n >= m->o.quota_sandboxes) {
                snprintf(msg, sz,
                        "tenant '%s' has %u sandboxes alive (quota sandboxes: %u); destroy one first",
                        tenant, n, m->o.quota_sandboxes);
                return "quota.sandboxes";
        }
        if (!exec && m->o.quota_memory_mb > 0 && mem + memory_mb > m->o.quota_memory_mb) {
                snprintf(msg, sz,
                        "tenant '%s' would hold %g MiB of sandbox memory (quota memory_mb: %g); destroy one "
                        "or use a profile with a smaller memory_mb",
                        tenant, mem + memory_mb, m->o.quota_memory_mb);
                return "quota.memory_mb";
        }
        if (exec && m->o.quota_execs && execs >= m->o.quota_execs) {
                snprintf(msg, sz, "tenant '%s' has %u execs running (quota execs: %u); retry when one ends",
                        tenant, execs, m->o.quota_execs);
                return "quota.execs";
        }
        return NULL;
}

/* ---- create -------------------------------------------------------------------------------- */

typedef struct idem_row {
        char *sandbox_id, *body_sha;
        bool found;
} idem_row;

json_t *mgr_stored_record(sbx_mgr *m, const char *id, const char *tenant) {
        char *text = sbx_store_sandbox_record(m->store, id, tenant);
        json_error_t je;
        json_t *rec = text ? json_loads(text, 0, &je) : NULL;
        free(text);
        return rec;
}

/* A profile id, never a file name: the loader takes a name ending in .yaml or .yml as a file, which
 * here would be one in the server's working directory. */
static bool profile_id_ok(const char *s) {
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > 200 || (n > 5 && streq(s + n - 5, ".yaml")) || (n > 4 && streq(s + n - 4, ".yml")))
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
                            *p == '-'))
                        return false;
        return true;
}

static json_t *limits_json(const sbx_config *cfg) {
        json_t *l = json_object();
        for (int i = 0; i < _SBX_LIMIT_MAX; i++)
                json_object_set_new(
                        l, sbx_limit_to_string((sbx_limit_id) i), json_real(cfg->limits.value[i]));
        return l;
}

/* What b's supervisor is handed: cfg's profile and policy as they were resolved, never their names
 * to resolve again (a file edited in between would make the two disagree). 0 or -errno. */
int mgr_box_set_config(box *b, const sbx_config *cfg) {
        char *data = NULL, sha[65];
        size_t n = 0;
        int r = sbx_config_encode(cfg, &data, &n, sha);
        if (r < 0)
                return r;
        free(b->config);
        b->config = data;
        snprintf(b->user, sizeof b->user, "%s",
                cfg->profile && cfg->profile->user ? cfg->profile->user : "sandbox");
        b->config_len = n;
        snprintf(b->config_sha, sizeof b->config_sha, "%s", sha);
        return 0;
}

/* Resolve b's profile (by its name) with the server's policy now: for a sandbox that has no
 * resolved configuration (a pooled one, or one a restarted server re-adopted, provisioned again).
 * 0, or -errno with the loader's sentence in msg. */
int mgr_box_resolve(sbx_mgr *m, box *b, char *msg, size_t msgsz) {
        _cleanup_(sbx_config_freep) sbx_config *cfg = NULL;
        char pref[PATH_MAX + 16];
        sbx_request req = {
                .profile = mgr_box_profile_ref(b, pref, sizeof pref), .policy_file = m->policy_file};
        sbx_error e = {0};
        int r = sbx_config_resolve(&req, &cfg, &e);
        if (r < 0) {
                char buf[1200];
                snprintf(msg, msgsz, "%s", sbx_error_format(&e, buf, sizeof buf));
                return r;
        }
        r = mgr_box_set_config(b, cfg);
        if (r < 0)
                snprintf(msg, msgsz, "cannot encode the resolved configuration: %s", strerror(-r));
        return r;
}

/* Provision b (state provisioning → ready | failed). 0 or an HTTP status with rp filled. */
static unsigned provision_hooked(sbx_mgr *m, box *b, double budget_used, const char *reason,
        sbx_mgr_reply *rp, spawn_hook meanwhile, void *ud) {
        char msg[1200] = "";
        int r = b->config ? 0 : mgr_box_resolve(m, b, msg, sizeof msg);
#if SBX_TEST_HOOKS
        /* Test hook (-Dtest_hooks=true only): a sandbox whose metadata has this key fails to
         * start here, for a test of the route's fallback after ext.local. */
        const char *fail_key = getenv("SANDBOXER_TEST_SPAWN_FAIL_META");
        if (r >= 0 && fail_key && json_object_get(b->metadata, fail_key)) {
                snprintf(msg, sizeof msg, "refused by the test hook SANDBOXER_TEST_SPAWN_FAIL_META");
                r = -EIO;
        }
#endif
        if (r >= 0)
                r = mgr_sv_spawn_hooked(m, b, budget_used, msg, sizeof msg, meanwhile, ud);
        else if (meanwhile)
                meanwhile(ud); /* the first states go in before the failure, as for a spawn's */
        if (r < 0) {
                atomic_fetch_add(&m->n_failed, 1);
                mgr_set_state(m, b, SBX_STATE_FAILED, "provision_error");
                mgr_remove_dir(b);
                (void) unlink(b->sock);
                if (streq(reason, "recreate")) /* it ran before: what it used is charged */
                        mgr_box_ended(m, b);
                else
                        mgr_box_failed_ended(m, b);
                mgr_set_state(m, b, SBX_STATE_DESTROYED, "provision_error");
                mgr_box_unlink(m, b);
                return mgr_reply_err(
                        rp, 503, "provision_failed", NULL, "the sandbox could not be started: %s", msg);
        }
        pthread_mutex_lock(&m->lock);
        b->last_active_ms = mgr_now_ms();
        pthread_mutex_unlock(&m->lock);
        if (!streq(reason, "provisioned")) /* provisioned again: the rules it had, not its profile's */
                mgr_network_reapply(m, b);
        /* in memory now, stored by the settler beside the reply (0.3 ms of a create's path) */
        mgr_set_state_after_reply(m, b, SBX_STATE_READY, reason);
        return 0;
}

/* Policy-file changes go to the audit log when they are first seen (at start and at the first
 * create after the file changed), with the digest before and after. */
void mgr_policy_seen(sbx_mgr *m, const sbx_policy *p) {
        if (!p || streq(p->sha256, m->policy_sha))
                return;
        pthread_mutex_lock(&m->lock);
        bool changed = !streq(p->sha256, m->policy_sha);
        char was[65];
        snprintf(was, sizeof was, "%s", m->policy_sha);
        if (changed)
                snprintf(m->policy_sha, sizeof m->policy_sha, "%s", p->sha256);
        pthread_mutex_unlock(&m->lock);
        if (!changed)
                return;
        char path[PATH_MAX + 32], tmp[PATH_MAX + 40], detail[256];
        snprintf(path, sizeof path, "%.4000s/policy.sha256", m->state_dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "we");
        if (f) {
                fprintf(f, "%s\n", p->sha256);
                if (fclose(f) == 0)
                        (void) rename(tmp, path);
        }
        snprintf(detail, sizeof detail, "sha256 %s (before: %s)", p->sha256, was[0] ? was : "none");
        mgr_audit(m, NULL, "policy.load", p->source_file ? p->source_file : "builtin", "ok", detail);
        sbx_log(SBX_LOG_INFO, "policy_loaded", "file", p->source_file ? p->source_file : "builtin", "sha256",
                p->sha256, NULL);
}

unsigned mgr_provision(sbx_mgr *m, box *b, double budget_used, const char *reason, sbx_mgr_reply *rp) {
        return provision_hooked(m, b, budget_used, reason, rp, NULL, NULL);
}

/* A create's first states (requested, provisioning; ready for a pooled one) and its
 * Idempotency-Key, in one transaction; once stored (saved: a remote create's next candidate),
 * only the record again. */
typedef struct first_states {
        sbx_mgr *m;
        box *b;
        const char *key, *tenant, *body_sha;
        bool warm, saved;
} first_states;

static void store_first_states(void *ud) {
        first_states *f = ud;
        sbx_mgr *m = f->m;
        box *b = f->b;
        if (f->saved) {
                (void) mgr_box_save(m, b);
                return;
        }
        f->saved = true;
        mgr_tx_begin(m);
        (void) mgr_box_save(m, b);
        mgr_emit(m, b, "sandbox.state", NULL);
        if (f->key)
                (void) sbx_store_idempotency_put(
                        m->store, f->key, f->tenant, b->id, mgr_now_ms(), f->body_sha);
        mgr_set_state(m, b, SBX_STATE_PROVISIONING, "create");
        if (f->warm) {
                /* started ahead of time: ready now */
                b->last_active_ms = mgr_now_ms();
                mgr_set_state(m, b, SBX_STATE_READY, "provisioned");
                atomic_fetch_add(&m->n_warm_used, 1);
        }
        mgr_tx_end(m);
}

/* ---- the warm pool ------------------------------------------------------------------------- */

static bool warm_profile(sbx_mgr *m, const char *profile) {
        for (char **p = m->warm_profiles; p && *p; p++)
                if (streq(*p, profile))
                        return true;
        return false;
}

/* A live pooled sandbox of that profile, taken out of the pool (NULL: none). One whose
 * configuration is not the create's (the profile or the policy file was edited since it was
 * started) is stale: stopped, and the next tried. */
static box *pool_take(sbx_mgr *m, const char *profile, const char *config_sha) {
        if (!m->o.warm_pool || !warm_profile(m, profile))
                return NULL;
        for (;;) {
                pthread_mutex_lock(&m->lock);
                box *b = NULL;
                for (box **pp = &m->pool; *pp; pp = &(*pp)->next)
                        if (streq((*pp)->profile, profile)) {
                                b = *pp;
                                *pp = b->next;
                                b->next = NULL;
                                break;
                        }
                pthread_cond_broadcast(&m->ev_cond); /* the filler refills */
                pthread_mutex_unlock(&m->lock);
                bool stale = b && !streq(b->config_sha, config_sha);
                if (!b || (!stale && !mgr_pidfd_dead(b->sv_pidfd)))
                        return b;
                /* its supervisor died meanwhile, or it is stale: clean up, try the next */
                if (stale)
                        sbx_log(SBX_LOG_INFO, "warm_pool_stale", "profile", profile, "sandbox", b->id, NULL);
                mgr_sv_stop(m, b);
                mgr_remove_dir(b);
                mgr_box_free(b);
        }
}

static unsigned pool_count(sbx_mgr *m, const char *profile) {
        unsigned n = 0;
        for (box *b = m->pool; b; b = b->next)
                n += streq(b->profile, profile);
        return n;
}

void *mgr_filler_main(void *arg) {
        sbx_mgr *m = arg;
        unsigned failures = 0;
        for (;;) {
                const char *need = NULL;
                pthread_mutex_lock(&m->lock);
                while (!m->stopping) {
                        for (char **p = m->warm_profiles; p && *p && !need; p++)
                                if (pool_count(m, *p) < m->o.warm_pool)
                                        need = *p;
                        if (need)
                                break;
                        pthread_cond_wait(&m->ev_cond, &m->lock);
                }
                bool stop = m->stopping;
                pthread_mutex_unlock(&m->lock);
                if (stop)
                        break;
                box *b = calloc(1, sizeof *b);
                if (!b)
                        break;
                b->sv_pidfd = -1;
                b->refs = 1;
                mgr_random_id("sbx_", b->id, sizeof b->id);
                snprintf(b->profile, sizeof b->profile, "%s", need);
                snprintf(b->sock, sizeof b->sock, "%s/sandboxes/%s.sock", m->runtime_dir, b->id);
                snprintf(b->dir, sizeof b->dir, "%s/sandboxes/%s", m->state_dir, b->id);
                b->secret_names = json_array();
                char msg[1200];
                if (mgr_box_resolve(m, b, msg, sizeof msg) < 0 ||
                        mgr_sv_spawn(m, b, 0, msg, sizeof msg) < 0) {
                        sbx_log(SBX_LOG_WARNING, "warm_pool_failed", "profile", need, "error", msg, NULL);
                        mgr_remove_dir(b);
                        mgr_box_free(b);
                        /* back off: 0.1 s, doubling to 5 s */
                        unsigned ms = 100u << (failures < 6 ? failures : 6);
                        failures++;
                        usleep((ms > 5000 ? 5000 : ms) * 1000);
                        continue;
                }
                failures = 0;
                pthread_mutex_lock(&m->lock);
                b->next = m->pool;
                m->pool = b;
                pthread_mutex_unlock(&m->lock);
                sbx_log(SBX_LOG_INFO, "warm_pool_added", "profile", need, "sandbox", b->id, NULL);
        }
        return NULL;
}

static void create_req_digest(const sbx_create_req *req, char out[static 65]) {
        json_t *j = json_object();
        if (req->profile)
                json_object_set_new(j, "profile", json_string(req->profile));
        if (req->ttl_given)
                json_object_set_new(j, "ttl_s", json_real(req->ttl_s));
        if (req->consumer)
                json_object_set(j, "consumer", req->consumer);
        if (req->metadata)
                json_object_set(j, "metadata", req->metadata);
        if (req->network) {
                json_t *n = json_object();
                if (req->network->has_egress)
                        json_object_set_new(n, "egress", mgr_network_json(req->network->egress, NULL));
                if (req->network->has_deny)
                        json_object_set_new(n, "egress_deny", mgr_network_json(req->network->deny, NULL));
                json_object_set_new(j, "network", n);
        }
        if (req->skill)
                json_object_set_new(j, "skill", json_string(req->skill));
        if (req->snapshot)
                json_object_set_new(j, "snapshot", json_string(req->snapshot));
        if (req->volumes)
                json_object_set(j, "volumes", req->volumes);
        if (req->pause_on_expiry)
                json_object_set_new(j, "on_expiry", json_string("pause"));
        if (req->auto_resume)
                json_object_set_new(j, "auto_resume", json_true());
        if (req->scope)
                json_object_set_new(j, "scope", json_string(req->scope));
        if (req->workspace)
                json_object_set(j, "workspace", req->workspace);
        if (req->inputs)
                json_object_set(j, "inputs", req->inputs);
        if (req->setup_metadata)
                json_object_set(j, "setup_metadata", req->setup_metadata);
        if (req->webhook_url)
                json_object_set_new(j, "webhook", json_string(req->webhook_url));
        if (req->route)
                json_object_set(j, "route", req->route);
        char *canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        sha256_hex(canon ? canon : "", canon ? strlen(canon) : 0, out);
        free(canon);
        json_decref(j);
}

/* The create's seeds' shapes as the record keeps them (as given). */
static json_t *seed_of(const sbx_create_req *req) {
        json_t *seed = json_object();
        if (req->scope)
                json_object_set_new(seed, "scope", json_string(req->scope));
        if (req->workspace)
                json_object_set(seed, "workspace_request", req->workspace);
        if (req->inputs)
                json_object_set(seed, "inputs", req->inputs);
        if (req->setup_metadata)
                json_object_set(seed, "setup_metadata", req->setup_metadata);
        if (req->webhook_url)
                json_object_set_new(seed, "webhook", json_pack("{s:s}", "url", req->webhook_url));
        return seed;
}

/* Sandboxer-Front: "node=NODE_ID; sandbox=ID" (remote.c): the front's node id and the id it asks
 * for. false with rp filled: malformed (400), this node itself (422: a route that loops), an id
 * taken (409). */
static bool front_decode(
        sbx_mgr *m, const char *h, char node[static 40], char sid[static 32], sbx_mgr_reply *rp) {
        char n[64] = "", s[64] = "";
        if (sscanf(h, "node=%63[^;]; sandbox=%63s", n, s) != 2 || !mgr_node_id_ok(n) ||
                !mgr_valid_sandbox_id(s)) {
                mgr_reply_err(rp, 400, "invalid_argument", "Sandboxer-Front",
                        "Sandboxer-Front: \"node=NODE_ID; sandbox=ID\" (a front asking this node for a "
                        "sandbox)");
                return false;
        }
        if (streq_ptr(mgr_node_id(m), n)) {
                mgr_reply_err(rp, 422, "route_loop", "Sandboxer-Front",
                        "this node (%s) is the front that asks: a registry entry of kind sandboxer points "
                        "back "
                        "at this node; remove it",
                        n);
                return false;
        }
        box *live = mgr_box_get(m, s, NULL);
        bool taken = live || sbx_store_sandbox_exists(m->store, s); /* anyone's, ever */
        if (live)
                mgr_box_put(m, live);
        if (taken) {
                mgr_reply_err(rp, 409, "conflict", "Sandboxer-Front", "sandbox id %s is taken here", s);
                return false;
        }
        snprintf(node, 40, "%s", n);
        snprintf(sid, 32, "%s", s);
        return true;
}

/* The route chose another node (remote.c): the front's record b made once, its sandbox
 * provisioned on each qualifying candidate in turn (the same id) until one holds it, each
 * failure written into its candidate's "error". 0 when a local candidate comes next (route's
 * chosen set to ext.local: the caller provisions here), else the HTTP code with rp filled. */
static unsigned create_remote(sbx_mgr *m, const sbx_caller *who, const sbx_create_req *req,
        const sbx_config *cfg, json_t *route, double ttl, double ttl_max, const char *body_sha,
        sbx_mgr_reply *rp) {
        json_t *cands = json_object_get(route, "candidates"), *c;
        first_states fs = {0};
        bool allow_fb = !json_is_false(json_object_get(route, "allow_fallbacks"));
        box *b = NULL;
        size_t i;
        unsigned code = 0;
        const char *pr = req->profile       ? req->profile
                         : cfg->profile->id ? cfg->profile->id
                                            : "profile.default";
        json_array_foreach(cands, i, c) {
                const char *ext = json_string_value(json_object_get(c, "extension"));
                if (!json_is_true(json_object_get(c, "ok")) || !ext)
                        continue;
                if (streq(ext, "ext.local")) {
                        if (json_object_get(c, "error")) /* tried, and failed (local_fallback) */
                                continue;
                        if (b) /* the remote attempts before it: that record ends failed */
                                break;
                        json_object_set_new(route, "chosen", json_string(ext));
                        json_object_set(route, "chosen_host", json_object_get(c, "host"));
                        return 0;
                }
                if (req->skill || req->snapshot || json_array_size(req->volumes)) {
                        json_object_set_new(c, "ok", json_false());
                        json_object_set_new(c, "why_not",
                                json_string("volumes, snapshots and skills are this node's own: only "
                                            "ext.local can take this create"));
                        continue;
                }
                if (!b) {
                        b = calloc(1, sizeof *b);
                        if (!b)
                                return mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
                        b->refs = 2;
                        b->sv_pidfd = -1;
                        mgr_remote_id(m, who->tenant, req->idempotency_key, b->id, sizeof b->id);
                        snprintf(b->tenant, sizeof b->tenant, "%s", who->tenant);
                        snprintf(b->actor, sizeof b->actor, "%s:%s", who->kind, who->name);
                        snprintf(b->profile, sizeof b->profile, "%s", pr);
                        snprintf(b->ext, sizeof b->ext, "%s", ext);
                        b->consumer = req->consumer ? json_deep_copy(req->consumer) : json_object();
                        b->metadata = req->metadata ? json_deep_copy(req->metadata) : json_object();
                        b->limits = limits_json(cfg);
                        b->secret_names = json_array();
                        b->created_ms = b->updated_ms = b->last_active_ms = mgr_now_ms();
                        b->ttl_s = ttl;
                        b->expires_ms = b->created_ms + (int64_t) (ttl * 1000);
                        b->ttl_max_ms = b->created_ms + (int64_t) (ttl_max * 1000);
                        b->paused_max_s =
                                cfg->profile->ttl_paused_s > 0 ? cfg->profile->ttl_paused_s : 24 * 3600.0;
                        b->route = json_incref(route);
                        b->cost = mgr_cost_new(ext, cfg, ttl);
                        if (m->credits &&
                                !req->no_hold) { /* its hold, before anything is made (402 without) */
                                double hold = mgr_credit_hold_amount(m, b->cost, ttl);
                                if (mgr_credit_hold(m, who->tenant, b->id, hold, rp)) {
                                        mgr_box_free(b);
                                        return rp->code;
                                }
                                b->held = sbx_ledger_units(hold);
                        }
                        b->seed = seed_of(req);
                        snprintf(b->sock, sizeof b->sock, "%s/sandboxes/%s.sock", m->runtime_dir, b->id);
                        snprintf(b->dir, sizeof b->dir, "%s/sandboxes/%s", m->state_dir, b->id);
                        b->state = SBX_STATE_REQUESTED;
                        snprintf(b->reason, sizeof b->reason, "create");
                        pthread_mutex_lock(&m->lock);
                        bool dup = mgr_box_find_locked(m, b->id, NULL) != NULL;
                        if (!dup) {
                                b->busy = true;
                                b->next = m->boxes;
                                m->boxes = b;
                        }
                        pthread_mutex_unlock(&m->lock);
                        if (dup) { /* that key's sandbox is being made by another request */
                                mgr_box_free(b);
                                return mgr_reply_err(rp, 409, "conflict", "Idempotency-Key",
                                        "a create with this Idempotency-Key is under way; retry");
                        }
                        if (req->webhook_url)
                                mgr_webhook_add(m, b->id, who->tenant, req->webhook_url);
                        fs = (first_states){.m = m,
                                .b = b,
                                .key = req->idempotency_key,
                                .tenant = who->tenant,
                                .body_sha = body_sha};
                } else {
                        json_t *cost = mgr_cost_new(ext, cfg, ttl);
                        pthread_mutex_lock(&m->lock);
                        snprintf(b->ext, sizeof b->ext, "%s", ext);
                        json_decref(b->cost);
                        b->cost = cost;
                        pthread_mutex_unlock(&m->lock);
                        fs.saved = true;
                }
                /* stored while the back end makes it (it is in memory, so a restart's sweep
                 * of the back end spares it: remote.c) */
                char why[800] = "";
                if (mgr_remote_provision(m, b, ext, req->body, req->idempotency_key, store_first_states, &fs,
                            why, sizeof why) == 0) {
                        json_object_set_new(route, "chosen", json_string(ext));
                        json_object_set(route, "chosen_host", json_object_get(c, "host"));
                        /* another node's: stored beside the reply (a front dying in that instant
                         * finds it provisioning at restart, asks the node, adopts it); a hosted
                         * service's now — its id and token are in that write, and a restart
                         * could not ask for it without them */
                        if (b->remote_id[0])
                                mgr_set_state(m, b, SBX_STATE_READY, "provisioned");
                        else
                                mgr_set_state_after_reply(m, b, SBX_STATE_READY, "provisioned");
                        pthread_mutex_lock(&m->lock);
                        b->busy = false;
                        pthread_mutex_unlock(&m->lock);
                        atomic_fetch_add(&m->n_created, 1);
                        char detail[400];
                        snprintf(detail, sizeof detail, "%s on %s", b->profile, ext);
                        mgr_audit(m, who, "sandbox.create", b->id, "ok", detail);
                        rp->code = 201;
                        pthread_mutex_lock(&m->lock);
                        rp->json = mgr_box_record(b);
                        pthread_mutex_unlock(&m->lock);
                        mgr_box_put(m, b);
                        return 201;
                }
                json_object_set_new(c, "error", json_string(why));
                sbx_log(SBX_LOG_WARNING, "provision_failed", "sandbox", b->id, "extension", ext, "error",
                        why, NULL);
                if (!allow_fb)
                        break;
        }
        if (!b)
                code = mgr_reply_err(rp, 422, "no_route", "route",
                        "no extension qualifies for this create and route (each candidate says why)");
        else {
                atomic_fetch_add(&m->n_failed, 1);
                mgr_set_state(m, b, SBX_STATE_FAILED, "provision_error");
                b->ext_gone = true; /* each failed attempt's teardown is pending (remote.c) */
                mgr_box_failed_ended(m, b);
                mgr_set_state(m, b, SBX_STATE_DESTROYED, "provision_error");
                mgr_box_unlink(m, b);
                mgr_audit(m, who, "sandbox.create", b->id, "failed", NULL);
                mgr_box_put(m, b);
                code = mgr_reply_err(rp, 503, "provision_failed", "route",
                        "every candidate the route allows failed to provision (each candidate's error says "
                        "why)");
        }
        json_object_set(json_object_get(rp->json, "error"), "candidates", cands);
        return code;
}

/* ext.local could not start it (rp: its 503): the route's next candidates are tried as for any
 * failed candidate — the same create on another extension, under an id of its own there (the
 * failed one stays destroyed, provision_error); ext.local's error is kept in its candidate. 0
 * when nothing is left to try (rp as it was). */
static unsigned local_fallback(sbx_mgr *m, const sbx_caller *who, const sbx_create_req *req,
        const sbx_config *cfg, const box *b, double ttl, double ttl_max, const char *body_sha,
        sbx_mgr_reply *rp) {
        if (!b->route || json_is_false(json_object_get(b->route, "allow_fallbacks")) || b->skill ||
                b->snapshot_src || json_array_size(b->volumes) || b->front[0] || rp->code != 503)
                return 0;
        json_t *route = json_deep_copy(b->route), *c;
        bool after = false, left = false;
        size_t i;
        json_array_foreach(json_object_get(route, "candidates"), i, c) {
                const char *ext = json_string_value(json_object_get(c, "extension"));
                if (streq_ptr(ext, "ext.local")) {
                        const char *why = json_string_value(
                                json_object_get(json_object_get(rp->json, "error"), "message"));
                        json_object_set_new(c, "error", json_string(why ? why : "could not be started"));
                        after = true;
                } else if (after && json_is_true(json_object_get(c, "ok")))
                        left = true;
        }
        unsigned code = 0;
        if (left) {
                sbx_mgr_reply r2 = {.stream_fd = -1};
                code = create_remote(m, who, req, cfg, route, ttl, ttl_max, body_sha, &r2);
                if (code) {
                        sbx_mgr_reply_done(rp);
                        *rp = r2;
                } else
                        sbx_mgr_reply_done(&r2);
        }
        json_decref(route);
        return code;
}

unsigned sbx_ops_create(sbx_mgr *m, const sbx_caller *who, const sbx_create_req *req, sbx_mgr_reply *rp) {
        _cleanup_(sbx_config_freep) sbx_config *cfg = NULL;
        _cleanup_free_ char *config = NULL;
        size_t config_len = 0;
        char config_sha[65] = "";
        static const char *const ckeys[] = {"actor", "harness", "session_id", "run_id", "job_id", NULL};
        idem_row idem = {0};
        box *b = NULL;
        unsigned code = 0;
        const char *who_tenant = who->tenant;
        const char *key = req->idempotency_key;
        json_t *jc = req->consumer, *jm = req->metadata;
        char body_sha[65] = "";
        /* a create {skill}: its sandbox's id and directory made first (the skill's files are
         * verified into it), its profile the one derived there */
        char skill_sid[32] = "", skill_dir[PATH_MAX] = "", skill_profile[PATH_MAX + 16] = "";
        json_t *skill = NULL;
        json_t *snap = NULL; /* create {snapshot}: its manifest */
        json_t *vols = NULL; /* create {volumes}: as the record keeps them */
        json_t *route = NULL; /* the ranking (route.c) */
        char snap_profile[256] = "";
        char front_node[40] = "", front_sid[32] = ""; /* a front's create (Sandboxer-Front) */
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        sbx_debug_mark("serve: create begins");

        if (req->snapshot) {
                snap = mgr_valid_snapshot_id(req->snapshot)
                               ? mgr_snapshot_take(m, req->snapshot, who->tenant, NULL)
                               : NULL;
                if (!snap) {
                        mgr_reply_err(
                                rp, 404, "not_found", "snapshot", "no snapshot '%.64s'", req->snapshot);
                        goto out;
                }
                snprintf(snap_profile, sizeof snap_profile, "%s",
                        json_string_value(json_object_get(snap, "profile")) ?: "profile.default");
        }
        const char *profile = req->profile ? req->profile : snap ? snap_profile : "profile.default";
        /* volumes: [{name, mount, access}], each the tenant's (mounted on the host here) */
        if (req->volumes && !json_is_null(req->volumes)) {
                json_t *v;
                size_t i;
                if (!json_is_array(req->volumes) || json_array_size(req->volumes) > 16) {
                        mgr_reply_err(rp, 400, "invalid_argument", "volumes",
                                "volumes: an array of at most 16 {name, mount, access: ro|rw}");
                        goto out;
                }
                vols = json_array();
                json_array_foreach(req->volumes, i, v) {
                        const char *name = json_string_value(json_object_get(v, "name")),
                                   *mount = json_string_value(json_object_get(v, "mount")),
                                   *access = json_string_value(json_object_get(v, "access"));
                        json_t *ja = json_object_get(v, "access");
                        if (!json_is_object(v) || json_object_size(v) > 3 || !name || !mount ||
                                mount[0] != '/' || streq(mount, "/") || strstr(mount, "..") ||
                                strlen(mount) > 256 ||
                                (ja && !(access && (streq(access, "ro") || streq(access, "rw"))))) {
                                mgr_reply_err(rp, 400, "invalid_argument", "volumes",
                                        "volumes[%zu]: {name, mount (an absolute path inside, not /), "
                                        "access: ro|rw}",
                                        i);
                                json_decref(vols);
                                vols = NULL;
                                goto out;
                        }
                        char host[PATH_MAX];
                        int err = 0;
                        if (!mgr_volume_host(m, who->tenant, name, host, sizeof host, &err)) {
                                mgr_reply_err(rp, err == -ENOENT ? 404 : 503,
                                        err == -ENOENT ? "not_found" : "unavailable", "volumes",
                                        "volume '%.64s': %s", name,
                                        err == -ENOENT ? "no such volume" : strerror(-err));
                                json_decref(vols);
                                vols = NULL;
                                goto out;
                        }
                        json_array_append_new(vols, json_pack("{s:s, s:s, s:s}", "name", name, "mount",
                                                            mount, "access", access ? access : "rw"));
                }
        }
        if (req->snapshot && req->skill) {
                mgr_reply_err(rp, 400, "invalid_argument", "snapshot",
                        "snapshot and skill: give one (a skill's sandbox starts from its verified files)");
                goto out;
        }
        if (req->skill && req->profile) {
                mgr_reply_err(rp, 400, "invalid_argument", "profile",
                        "profile and skill: give one; a skill's sandbox has the skill's own profile "
                        "(skill.NAME, extending profile.skill)");
                goto out;
        }
        if (req->skill && req->network) {
                mgr_reply_err(rp, 400, "invalid_argument", "network",
                        "network and skill: give one; a skill's sandbox has the network its manifest "
                        "asked for (sandbox.allowed_hosts)");
                goto out;
        }
        if (req->skill && !mgr_valid_skill_id(req->skill)) {
                mgr_reply_err(rp, 404, "not_found", "skill", "no skill '%.64s'", req->skill);
                goto out;
        }
        if (!req->skill && !profile_id_ok(profile)) {
                mgr_reply_err(rp, 400, "invalid_argument", "profile",
                        "profile: '%.200s' is not a profile id ([a-z0-9._-], at most 200, not ending in "
                        ".yaml "
                        "or .yml)",
                        profile);
                goto out;
        }
        if (req->ttl_given && (!(req->ttl_s > 0) || req->ttl_s > 366 * 86400.0)) {
                mgr_reply_err(
                        rp, 400, "invalid_argument", "ttl_s", "ttl_s: must be a positive number of seconds");
                goto out;
        }
        if (jc && (!json_is_object(jc) || !mgr_only_keys(jc, ckeys, "consumer.", rp) ||
                          !mgr_string_map(jc, "consumer", 4, rp))) {
                if (!rp->json)
                        mgr_reply_err(rp, 400, "invalid_argument", "consumer",
                                "consumer: must be an object {harness, session_id, run_id, job_id}");
                goto out;
        }
        if (jc) {
                const char *k;
                json_t *v;
                json_object_foreach(jc, k, v) if (json_string_length(v) > 256) {
                        mgr_reply_err(rp, 400, "invalid_argument", "consumer",
                                "consumer.%s: at most 256 bytes", k);
                        goto out;
                }
        }
        if (jm && !mgr_string_map(jm, "metadata", 64, rp))
                goto out;
        if (key && (strlen(key) == 0 || strlen(key) > 255)) {
                mgr_reply_err(
                        rp, 400, "invalid_argument", "Idempotency-Key", "Idempotency-Key: 1 to 255 bytes");
                goto out;
        }

        /* Idempotency: the same key and request answer the same sandbox. */
        if (key) {
                create_req_digest(req, body_sha);
                idem.found = sbx_store_idempotency_get(
                                     m->store, key, who_tenant, &idem.sandbox_id, &idem.body_sha) > 0;
                if (idem.found) {
                        if (idem.body_sha && !streq(idem.body_sha, body_sha)) {
                                mgr_reply_err(rp, 409, "conflict", "Idempotency-Key",
                                        "this Idempotency-Key was used with a different body");
                                goto out;
                        }
                        box *live = mgr_box_get(m, idem.sandbox_id, who_tenant);
                        json_t *rec = NULL;
                        if (live) {
                                pthread_mutex_lock(&m->lock);
                                rec = mgr_box_record(live);
                                pthread_mutex_unlock(&m->lock);
                                mgr_box_put(m, live);
                        } else
                                rec = mgr_stored_record(m, idem.sandbox_id, who_tenant);
                        if (rec) {
                                rp->code = 200;
                                rp->json = rec;
                                goto out;
                        }
                }
        }

        if (req->front && !front_decode(m, req->front, front_node, front_sid, rp))
                goto out;
        if (req->skill) {
                mgr_random_id("sbx_", skill_sid, sizeof skill_sid);
                snprintf(skill_dir, sizeof skill_dir, "%.4000s/sandboxes/%s", m->state_dir, skill_sid);
                snprintf(skill_profile, sizeof skill_profile, "%s/profile.yaml", skill_dir);
                if (mgr_skill_prepare(m, who, req->skill, skill_dir, &skill, rp))
                        goto out;
                profile = skill_profile;
        }

        /* The profile and the policy: what it may be, before anything starts. */
        sbx_request rreq = {.profile = profile, .policy_file = m->policy_file};
        sbx_error e = {0};
        if (sbx_config_resolve(&rreq, &cfg, &e) < 0) {
                char buf[1200];
                bool unknown = e.errnum == ENOENT;
                mgr_reply_err(rp, unknown ? 422 : 400, unknown ? "unknown_profile" : "invalid_argument",
                        "profile", "%s", sbx_error_format(&e, buf, sizeof buf));
                goto out;
        }
        mgr_policy_seen(m, cfg->policy);
        if (req->network) { /* the request's rules over the profile's, within the same policy */
                if (mgr_network_apply(req->network, cfg->profile) < 0) {
                        mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
                        goto out;
                }
                if (sbx_policy_check_profile(cfg->policy, cfg->profile, cfg->mode, &e) < 0) {
                        char buf[1200];
                        mgr_reply_err(rp, 403, "forbidden", "network.egress", "%s",
                                sbx_error_format(&e, buf, sizeof buf));
                        goto out;
                }
        }
        const sbx_profile *pr = cfg->profile;
        double ttl_default = pr->ttl_default_s > 0 ? pr->ttl_default_s : 4 * 3600.0;
        double ttl_max = pr->ttl_max_s > 0 ? pr->ttl_max_s : 24 * 3600.0;
        double ttl = req->ttl_given ? req->ttl_s : ttl_default;
        if (ttl > ttl_max) {
                mgr_reply_err(rp, 400, "invalid_argument", "ttl_s",
                        "ttl_s: %g is more than the profile's ttl.max (%g s)", ttl, ttl_max);
                goto out;
        }
        for (char **sn = pr->secrets; sn && *sn; sn++) {
                int sfd = mgr_secret_open(m, who_tenant, *sn, true, NULL, 0);
                if (sfd < 0) {
                        mgr_reply_err(rp, 422, "secret_unavailable", "secrets",
                                "profile %s needs the secret '%s', which is neither the tenant's (PUT "
                                "/v1/secrets/%s) nor in the server's secret store%s",
                                profile, *sn, *sn, m->secrets_dir ? "" : " (it has no --secrets-dir)");
                        goto out;
                }
                close(sfd);
        }
        json_t *ref;
        size_t ri;
        json_array_foreach(req->secret_refs, ri, ref) {
                bool granted = strv_contains(pr->secrets, json_string_value(ref)); /* the profile's too */
                int sfd = mgr_secret_open(m, who_tenant, json_string_value(ref), granted, NULL, 0);
                if (sfd < 0) {
                        mgr_reply_err(rp, 422, "secret_unavailable", "setup_metadata.secret_refs",
                                "setup_metadata.secret_refs: '%s' is not a secret of the tenant's (PUT "
                                "/v1/secrets/%s; the server's own are for profiles to grant)",
                                json_string_value(ref), json_string_value(ref));
                        goto out;
                }
                close(sfd);
        }
        char qmsg[512];
        const char *q = mgr_quota_check(
                m, who_tenant, cfg->limits.value[SBX_LIMIT_MEMORY_MB], false, qmsg, sizeof qmsg);
        if (q) {
                mgr_reply_err(rp, 429, "quota_exceeded", q, "%s", qmsg);
                goto out;
        }

        /* workspace.access narrows the profile's (none < ro < rw), never widens it */
        const char *wacc = json_string_value(json_object_get(req->workspace, "access"));
        if (wacc) {
                sbx_access want = streq(wacc, "rw")   ? SBX_ACCESS_RW
                                  : streq(wacc, "ro") ? SBX_ACCESS_RO
                                                      : SBX_ACCESS_NONE;
                if (want > cfg->profile->ws_access) {
                        mgr_reply_err(rp, 403, "forbidden", "workspace.access",
                                "workspace.access: %s asks more than profile %s allows (%s)", wacc, profile,
                                sbx_access_to_string(cfg->profile->ws_access));
                        goto out;
                }
                cfg->profile->ws_access = want;
        }

        /* Where it goes (route.c): this build holds sandboxes on ext.local; every other extension
         * is a candidate passed over with its reason, and the record keeps the ranking */
        route = mgr_route_rank(m, cfg, req->route, rp);
        if (!route)
                goto out;
        const char *chosen = json_string_value(json_object_get(route, "chosen"));
        if (!chosen) {
                mgr_reply_err(rp, 422, "no_route", "route",
                        "no extension qualifies for this profile and route (each candidate says why)");
                json_object_set(json_object_get(rp->json, "error"), "candidates",
                        json_object_get(route, "candidates"));
                goto out;
        }
        if (front_sid[0] && !streq(chosen, "ext.local")) { /* one hop: a front's create is held here */
                mgr_reply_err(rp, 422, "no_route", "route",
                        "a front (%s) asked this node for a sandbox, but its route here chose %s: a node "
                        "provisions what a front asks on its own backends (ext.local)",
                        front_node, chosen);
                goto out;
        }
        if (!streq(chosen, "ext.local")) {
                code = create_remote(m, who, req, cfg, route, ttl, ttl_max, key ? body_sha : "", rp);
                if (code)
                        goto out;
        }

        /* What its supervisor is handed: this resolution, not the names to resolve again. */
        int cr = sbx_config_encode(cfg, &config, &config_len, config_sha);
        if (cr < 0) {
                mgr_reply_err(rp, 503, "unavailable", NULL, "cannot encode the resolved configuration: %s",
                        strerror(-cr));
                goto out;
        }
        /* (a snapshot's files go into a fresh one: nothing of a pooled one's may mix in; a front
         * names the id, which a pooled one's files are already named by) */
        if (m->credits && !req->no_hold) { /* the balance first: a 402 starts nothing and takes nothing from
                                              the pool */
                json_t *cost = mgr_cost_new("ext.local", cfg, ttl);
                code = mgr_credit_hold(m, who_tenant, NULL, mgr_credit_hold_amount(m, cost, ttl), rp);
                json_decref(cost);
                if (code)
                        goto out;
        }
        box *warm = !(pr->secrets && pr->secrets[0]) && !json_array_size(req->secret_refs) && !skill &&
                                    !snap && !vols && !front_sid[0]
                            ? pool_take(m, profile, config_sha)
                            : NULL;
        b = warm ? warm : calloc(1, sizeof *b);
        if (!b) {
                mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
                goto out;
        }
        b->refs = 2; /* the list's and ours */
        if (!warm) {
                b->sv_pidfd = -1;
                if (skill_sid[0])
                        snprintf(b->id, sizeof b->id, "%s", skill_sid);
                else if (front_sid[0])
                        snprintf(b->id, sizeof b->id, "%s", front_sid);
                else
                        mgr_random_id("sbx_", b->id, sizeof b->id);
                b->config = TAKE_PTR(config);
                b->config_len = config_len;
                snprintf(b->config_sha, sizeof b->config_sha, "%s", config_sha);
        }
        snprintf(b->tenant, sizeof b->tenant, "%s", who_tenant);
        snprintf(b->actor, sizeof b->actor, "%s:%s", who->kind, who->name);
        snprintf(b->front, sizeof b->front, "%s", front_node);
        if (skill) /* the derived profile's id (its file: mgr_box_profile_ref) */
                snprintf(b->profile, sizeof b->profile, "skill.%s",
                        json_string_value(json_object_get(skill, "name")));
        else
                snprintf(b->profile, sizeof b->profile, "%s", profile);
        snprintf(b->user, sizeof b->user, "%s",
                cfg->profile && cfg->profile->user ? cfg->profile->user : "sandbox");
        b->consumer = jc ? json_deep_copy(jc) : json_object();
        b->metadata = jm ? json_deep_copy(jm) : json_object();
        json_decref(b->network); /* a pooled one's: the profile's, the same */
        b->network = mgr_network_json(pr->egress, pr->egress_deny);
        b->limits = limits_json(cfg);
        json_decref(b->secret_names); /* a pooled one has its own (empty) */
        b->secret_names = json_array();
        for (char **sn = pr->secrets; sn && *sn; sn++)
                json_array_append_new(b->secret_names, json_string(*sn));
        json_decref(b->profile_secrets);
        b->profile_secrets = json_deep_copy(b->secret_names);
        json_array_foreach(req->secret_refs, ri, ref) /* the create's own, once each */
                if (!strv_contains(pr->secrets, json_string_value(ref)))
                        json_array_append(b->secret_names, ref);
        b->skill = TAKE_PTR(skill);
        skill_dir[0] = 0; /* b's directory now: removed with it */
        b->created_ms = b->updated_ms = mgr_now_ms();
        b->ttl_s = ttl;
        b->expires_ms = b->created_ms + (int64_t) (ttl * 1000);
        b->ttl_max_ms = b->created_ms + (int64_t) (ttl_max * 1000);
        b->idle_s = pr->ttl_idle_s;
        b->paused_max_s = pr->ttl_paused_s > 0 ? pr->ttl_paused_s : 24 * 3600.0;
        b->pause_on_expiry = req->pause_on_expiry;
        b->volumes = TAKE_PTR(vols);
        if (snap) /* where it came from, and whether the profile and policy resolve as they did then */
                b->snapshot_src = json_pack("{s:s, s:b}", "id", req->snapshot, "config_changed",
                        !streq_ptr(json_string_value(json_object_get(snap, "config_sha")), config_sha));
        b->auto_resume = req->auto_resume;
        json_decref(b->route);
        b->route = TAKE_PTR(route);
        json_decref(b->cost); /* a pooled one's: priced from its taking */
        b->cost = mgr_cost_new("ext.local", cfg, ttl);
        if (m->credits && !req->no_hold) { /* its hold, keyed by its id; a race lost since the check: 402 */
                double hold = mgr_credit_hold_amount(m, b->cost, ttl);
                if (mgr_credit_hold(m, who_tenant, b->id, hold, rp)) {
                        if (warm) { /* started for the pool: stopped */
                                mgr_sv_stop(m, b);
                                mgr_remove_dir(b);
                        }
                        b->refs = 1;
                        goto out;
                }
                b->held = sbx_ledger_units(hold);
        }
        json_decref(b->seed); /* the seeds' shapes, as given */
        b->seed = seed_of(req);
        b->budget_s = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        b->memory_mb = cfg->limits.value[SBX_LIMIT_MEMORY_MB];
        if (!warm) {
                snprintf(b->sock, sizeof b->sock, "%s/sandboxes/%s.sock", m->runtime_dir, b->id);
                snprintf(b->dir, sizeof b->dir, "%s/sandboxes/%s", m->state_dir, b->id);
        }
        b->state = SBX_STATE_REQUESTED;
        snprintf(b->reason, sizeof b->reason, "create");
        pthread_mutex_lock(&m->lock);
        b->busy = true;
        b->next = m->boxes;
        m->boxes = b;
        pthread_mutex_unlock(&m->lock);
        if (req->webhook_url) /* from its first event: a failed provision is told too */
                mgr_webhook_add(m, b->id, who_tenant, req->webhook_url);
        first_states fs = {
                .m = m, .b = b, .key = key, .tenant = who_tenant, .body_sha = body_sha, .warm = warm};
        if (warm) {
                store_first_states(&fs);
                code = 0;
        } else { /* stored while the supervisor starts */
                if (snap) { /* its user: not deleted meanwhile */
                        pthread_mutex_lock(&m->lock);
                        snprintf(b->restoring, sizeof b->restoring, "%s", req->snapshot);
                        pthread_mutex_unlock(&m->lock);
                }
                code = provision_hooked(m, b, 0, "provisioned", rp, store_first_states, &fs);
                /* then the snapshot's files, before anything of its own runs */
                if (snap && !code && (code = mgr_snapshot_restore(m, b, snap, rp)) != 0)
                        mgr_destroy_box(m, b, "provision_error");
                pthread_mutex_lock(&m->lock);
                b->restoring[0] = 0;
                pthread_mutex_unlock(&m->lock);
        }
        pthread_mutex_lock(&m->lock);
        b->busy = false;
        pthread_mutex_unlock(&m->lock);
        if (code) {
                mgr_audit(m, who, "sandbox.create", b->id, "failed", NULL);
                code = local_fallback(m, who, req, cfg, b, ttl, ttl_max, key ? body_sha : "", rp);
                goto out;
        }
        atomic_fetch_add(&m->n_created, 1);
        /* lowest-latency's measure: this create's provision time on its extension (a pooled one
         * counts too: that is what the next create there is likely to get) */
        mgr_route_observe(json_string_value(json_object_get(b->route, "chosen")) ?: "ext.local",
                (double) (mgr_now_ms() - b->created_ms));
        if (b->skill) {
                /* the skill's runs are attributable from here: the sandbox id is on every exec's
                 * audit line and report */
                char detail[400];
                snprintf(detail, sizeof detail, "skill %s %s@%s digest %s key %s",
                        json_string_value(json_object_get(b->skill, "id")),
                        json_string_value(json_object_get(b->skill, "name")),
                        json_string_value(json_object_get(b->skill, "version")),
                        json_string_value(json_object_get(b->skill, "digest")),
                        json_string_value(json_object_get(b->skill, "key_id")) ?: "none");
                mgr_audit(m, who, "sandbox.create", b->id, "ok", detail);
        } else if (snap) {
                char detail[400];
                snprintf(detail, sizeof detail, "%s from snapshot %s", profile, req->snapshot);
                mgr_audit(m, who, "sandbox.create", b->id, "ok", detail);
        } else
                mgr_audit(m, who, "sandbox.create", b->id, "ok", profile);
        rp->code = 201;
        pthread_mutex_lock(&m->lock);
        rp->json = mgr_box_record(b);
        pthread_mutex_unlock(&m->lock);
out:
        if (b)
                mgr_box_put(m, b);
        if (skill_dir[0]) /* prepared for a sandbox that was not made */
                (void) sbx_rm_rf(skill_dir);
        json_decref(skill);
        json_decref(snap);
        json_decref(vols);
        json_decref(route);
        free(idem.sandbox_id);
        free(idem.body_sha);
        return rp->code;
}
