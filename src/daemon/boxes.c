/* boxes.c — a sandbox's record: kept in memory and in the store, found, referenced, listed (GET). */
#include "basic/time-util.h"
#include "daemon/mgr-internal.h"

/* ---- boxes --------------------------------------------------------------------------------- */

json_t *mgr_box_record(const box *b) {
        json_t *r = json_object();
        json_object_set_new(r, "id", json_string(b->id));
        json_object_set_new(r, "state", json_string(sbx_state_to_string(b->state)));
        json_object_set_new(r, "reason", b->reason[0] ? json_string(b->reason) : json_null());
        json_object_set_new(r, "profile", json_string(b->profile));
        json_object_set_new(r, "backend", b->backend[0] ? json_string(b->backend) : json_null());
        json_object_set_new(r, "tenant", json_string(b->tenant));
        json_object_set_new(r, "actor", json_string(b->actor));
        json_object_set_new(r, "consumer", b->consumer ? json_deep_copy(b->consumer) : json_object());
        json_object_set_new(r, "metadata", b->metadata ? json_deep_copy(b->metadata) : json_object());
        json_object_set_new(r, "network", b->network ? json_deep_copy(b->network) : json_null());
        json_object_set_new(r, "created_at", mgr_time_json(b->created_ms));
        json_object_set_new(r, "updated_at", mgr_time_json(b->updated_ms));
        json_object_set_new(r, "expires_at", mgr_time_json(b->expires_ms));
        json_object_set_new(r, "ttl_max_at", mgr_time_json(b->ttl_max_ms));
        json_object_set_new(r, "idle_s", b->idle_s > 0 ? json_real(b->idle_s) : json_null());
        json_object_set_new(r, "last_active_at", mgr_time_json(b->last_active_ms));
        json_object_set_new(r, "paused_at", b->paused_ms > 0 ? mgr_time_json(b->paused_ms) : json_null());
        json_object_set_new(r, "ttl_paused_s", json_real(b->paused_max_s));
        json_object_set_new(r, "on_expiry", json_string(b->pause_on_expiry ? "pause" : "destroy"));
        json_object_set_new(r, "auto_resume", json_boolean(b->auto_resume));
        json_object_set_new(r, "on_idle", json_string(b->idle_pause ? "pause" : "destroy"));
        json_object_set_new(r, "on_paused_max", json_string(b->paused_snapshot ? "snapshot" : "destroy"));
        json_object_set_new(r, "extension",
                json_string(b->ext[0] ? b->ext
                                      : json_string_value(json_object_get(b->route, "chosen")) ?: "ext.local"));
        json_object_set_new(r, "front", b->front[0] ? json_pack("{s:s}", "node_id", b->front) : json_null());
        json_object_set_new(r, "host",
                json_object_get(b->route, "chosen_host")
                        ? json_incref(json_object_get(b->route, "chosen_host"))
                        : json_null());
        json_object_set_new(
                r, "reachability", json_pack("{s:s++}", "exec_url", "/v1/sandboxes/", b->id, "/exec"));
        if (b->reach[0]) /* ext.compose-ssh: the host it runs on, over SSH */
                json_object_set_new(json_object_get(r, "reachability"), "ssh", json_string(b->reach));
        json_object_set_new(r, "route", b->route ? json_deep_copy(b->route) : json_null());
        json_object_set_new(r, "cost", b->cost ? json_deep_copy(b->cost) : json_null());
        json_t *mt = mgr_meter_json_locked(b, mgr_now_ms());
        if (!b->ext[0]) /* the supervisor's count at the last sample (meters.c: a restart goes on from it) */
                json_object_set_new(mt, "cgroup_cpu_s", json_real(b->meter_cpu_raw));
        json_object_set_new(r, "meters", mt);
        static const char *const seeds[] = {
                "scope", "workspace_request", "inputs", "setup_metadata", "webhook"};
        for (size_t i = 0; i < ELEMENTSOF(seeds); i++) {
                json_t *x = json_object_get(b->seed, seeds[i]);
                json_object_set_new(r, seeds[i], x ? json_deep_copy(x) : json_null());
        }
        json_object_set_new(r, "budget_s", json_real(b->budget_s));
        json_object_set_new(r, "budget_used_s", json_real(b->budget_used_s));
        json_object_set_new(r, "execs", json_integer(b->execs));
        json_object_set_new(r, "limits", b->limits ? json_deep_copy(b->limits) : json_object());
        json_object_set_new(r, "scratch", b->scratch[0] ? json_string(b->scratch) : json_null());
        json_object_set_new(r, "home", b->home[0] ? json_string(b->home) : json_null());
        json_object_set_new(r, "user", b->user[0] ? json_string(b->user) : json_null());
        json_object_set_new(r, "workspace", b->skill ? json_string("/workspace") : json_null());
        if (b->skill)
                json_object_set_new(r, "skill", json_deep_copy(b->skill));
        if (b->snapshot_src)
                json_object_set_new(r, "snapshot", json_deep_copy(b->snapshot_src));
        json_object_set_new(r, "volumes", b->volumes ? json_deep_copy(b->volumes) : json_array());
        return r;
}

const char *mgr_box_profile_ref(const box *b, char *buf, size_t n) {
        if (!b->skill)
                return b->profile;
        snprintf(buf, n, "%s/profile.yaml", b->dir);
        return buf;
}

unsigned mgr_reply_box(sbx_mgr *m, box *b, sbx_mgr_reply *rp) {
        pthread_mutex_lock(&m->lock);
        rp->json = mgr_box_record(b);
        pthread_mutex_unlock(&m->lock);
        rp->code = 200;
        mgr_box_put(m, b);
        return 200;
}

static const char *consumer_field(const box *b, const char *k) {
        return b->consumer ? json_string_value(json_object_get(b->consumer, k)) : NULL;
}

/* The row: the record and what lists filter on, made under m->lock when `lock` (a box others may
 * be changing: the settler's), else with the lock held or the box private; written after. */
static int box_save(sbx_mgr *m, box *b, bool lock) {
        if (lock)
                pthread_mutex_lock(&m->lock);
        json_t *rec = mgr_box_record(b);
        char *text = json_dumps(rec, JSON_COMPACT);
        json_decref(rec);
        json_t *in =
                json_pack("{s:s, s:f, s:f}", "profile", b->profile, "ttl_s", b->ttl_s, "idle_s", b->idle_s);
        if (b->remote_id[0]) /* a hosted service's id and token: kept, never in the record */
                json_object_set_new(in, "remote",
                        json_pack("{s:s, s:s, s:s}", "id", b->remote_id, "token", b->remote_token, "reach",
                                b->reach));
        char *inputs = json_dumps(in, JSON_COMPACT);
        json_decref(in);
        char reason[sizeof b->reason], backend[sizeof b->backend];
        snprintf(reason, sizeof reason, "%s", b->reason);
        snprintf(backend, sizeof backend, "%s", b->backend);
        static const char *const ck[] = {"harness", "session_id", "run_id", "job_id"};
        char *cv[4];
        for (size_t k = 0; k < 4; k++) {
                const char *v = consumer_field(b, ck[k]);
                cv[k] = v ? strdup(v) : NULL;
        }
        sbx_store_sandbox row = {
                .id = b->id,
                .state = sbx_state_to_string(b->state),
                .reason = reason,
                .profile = b->profile,
                .backend = backend,
                .tenant = b->tenant,
                .created_at = b->created_ms,
                .expires_at = b->expires_ms,
                .updated_at = b->updated_ms,
                .record_json = text,
                .harness = cv[0],
                .session_id = cv[1],
                .run_id = cv[2],
                .job_id = cv[3],
                .supervisor_pid = b->sv_pid,
                .inputs_json = inputs,
        };
        if (lock)
                pthread_mutex_unlock(&m->lock);
        sbx_error e = {0};
        int r = sbx_store_sandbox_put(m->store, &row, &e);
        free(text);
        free(inputs);
        for (size_t k = 0; k < 4; k++)
                free(cv[k]);
        if (r < 0) {
                char buf[1200];
                sbx_log(SBX_LOG_ERROR, "store_failed", "sandbox", b->id, "error",
                        sbx_error_format(&e, buf, sizeof buf), NULL);
        }
        return r;
}

int mgr_box_save(sbx_mgr *m, box *b) {
        return box_save(m, b, false);
}

int mgr_box_save_locking(sbx_mgr *m, box *b) {
        return box_save(m, b, true);
}

box *mgr_box_find_locked(sbx_mgr *m, const char *id, const char *tenant) {
        for (box *b = m->boxes; b; b = b->next)
                if (streq(b->id, id) && (!tenant || streq(b->tenant, tenant)))
                        return b;
        return NULL;
}

box *mgr_box_get(sbx_mgr *m, const char *id, const char *tenant) {
        pthread_mutex_lock(&m->lock);
        box *b = mgr_box_find_locked(m, id, tenant);
        if (b)
                b->refs++;
        pthread_mutex_unlock(&m->lock);
        return b;
}

void mgr_box_free(box *b) {
        if (!b)
                return;
        json_decref(b->consumer);
        json_decref(b->metadata);
        json_decref(b->network);
        json_decref(b->limits);
        json_decref(b->running);
        json_decref(b->secret_names);
        json_decref(b->seed);
        json_decref(b->profile_secrets);
        json_decref(b->route);
        json_decref(b->cost);
        json_decref(b->skill);
        json_decref(b->snapshot_src);
        json_decref(b->volumes);
        free(b->config);
        json_decref(b->surface_env);
        explicit_bzero(b->surface_token, sizeof b->surface_token);
        if (b->sv_pidfd >= 0)
                close(b->sv_pidfd);
        for (unsigned i = 0; i < b->sv_idle_n; i++)
                close(b->sv_idle[i]);
        free(b);
}

void mgr_box_put(sbx_mgr *m, box *b) {
        if (!b)
                return;
        pthread_mutex_lock(&m->lock);
        bool last = --b->refs == 0;
        pthread_mutex_unlock(&m->lock);
        if (last)
                mgr_box_free(b);
}

/* Out of the live list (destroyed); freed by the last mgr_box_put. */
void mgr_box_unlink(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        for (box **pp = &m->boxes; *pp; pp = &(*pp)->next)
                if (*pp == b) {
                        *pp = b->next;
                        b->refs--; /* the list's reference */
                        break;
                }
        pthread_mutex_unlock(&m->lock);
}

/* ---- get, list ----------------------------------------------------------------------------- */

/* The sandbox id's record for the caller: live, or stored (destroyed); 404 otherwise. */
unsigned sbx_ops_get(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, who->tenant) : NULL;
        if (b) {
                pthread_mutex_lock(&m->lock);
                rp->json = mgr_box_record(b);
                pthread_mutex_unlock(&m->lock);
                mgr_box_put(m, b);
                rp->code = 200;
                return 200;
        }
        json_t *rec = mgr_valid_sandbox_id(id) ? mgr_stored_record(m, id, who->tenant) : NULL;
        if (!rec)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
        rp->code = 200;
        rp->json = rec;
        return 200;
}

typedef struct list_ctx {
        json_t *items;
        char last_created[32], last_id[32];
        int n;
} list_ctx;

static int list_cb(void *ud, const char *record_json, int64_t created_at, const char *id) {
        list_ctx *c = ud;
        json_error_t je;
        json_t *rec = record_json ? json_loads(record_json, 0, &je) : NULL;
        if (rec)
                json_array_append_new(c->items, rec);
        snprintf(c->last_created, sizeof c->last_created, "%" PRId64, created_at);
        snprintf(c->last_id, sizeof c->last_id, "%s", id);
        c->n++;
        return 0;
}

/* Until no sandbox of tenant's (NULL: anyone's) owes the store a transition made in memory
 * (settle.c: a create's ready, an exec's active and back), at most ms. */
static void settled_tenant(sbx_mgr *m, const char *tenant, int ms) {
        struct timespec ts;
        sbx_deadline_realtime(ms, &ts); /* (ev_cond's clock) */
        pthread_mutex_lock(&m->lock);
        for (;;) {
                bool owed = false;
                for (box *b = m->boxes; b && !owed; b = b->next)
                        owed = b->persist_owed && (!tenant || streq(b->tenant, tenant));
                if (!owed || pthread_cond_timedwait(&m->ev_cond, &m->lock, &ts) == ETIMEDOUT)
                        break;
        }
        pthread_mutex_unlock(&m->lock);
}

unsigned sbx_ops_list(sbx_mgr *m, const sbx_caller *who, const sbx_list_req *req, sbx_mgr_reply *rp) {
        const char *state = req->state, *profile = req->profile, *harness = req->harness;
        const char *session = req->session_id, *run = req->run_id, *job = req->job_id, *cursor = req->cursor;
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (state && sbx_state_from_string(state) == _SBX_STATE_INVALID) {
                char known[160] = "";
                for (int i = 0; i < _SBX_STATE_MAX; i++)
                        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                                sbx_state_to_string((sbx_state) i));
                return mgr_reply_err(rp, 400, "invalid_argument", "state",
                        "state: '%.64s' is not a state (%s)", state, known);
        }
        long limit = req->limit ? (long) req->limit : 100;
        if (limit > 500)
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "limit", "limit: an integer from 1 to 500");
        int64_t c_created = 0;
        char c_id[32] = "";
        if (cursor) {
                long long cc;
                if (sscanf(cursor, "%lld.%31s", &cc, c_id) != 2 || !mgr_valid_sandbox_id(c_id))
                        return mgr_reply_err(
                                rp, 400, "invalid_argument", "cursor", "cursor: not one this server gave");
                c_created = cc;
        }
        list_ctx c = {.items = json_array()};
        sbx_error e = {0};
        sbx_store_sandbox_filter f = {
                .tenant = who->tenant,
                .state = state,
                .profile = profile,
                .harness = harness,
                .session_id = session,
                .run_id = run,
                .job_id = job,
                .front = req->front,
                .after_created = c_created,
                .after_id = c_id,
                .limit = limit,
        };
        /* the state filter is the store's: what is owed to it goes in first, so that a sandbox
         * a create answered ready is listed as ready (bounded: under a storm of execs the store
         * may be a moment behind what the records below show) */
        if (state)
                settled_tenant(m, who->tenant, 1000);
        int r = sbx_store_sandbox_list(m->store, &f, list_cb, &c, &e);
        if (r < 0) {
                json_decref(c.items);
                return mgr_reply_err(
                        rp, 503, "unavailable", NULL, "the store could not be read: %s", e.message);
        }
        json_t *next = json_null();
        if (c.n == limit) {
                char nc[80];
                snprintf(nc, sizeof nc, "%s.%s", c.last_created, c.last_id);
                json_decref(next);
                next = json_string(nc);
        }
        /* live records are fresher than the stored ones (budget, execs): overlay them */
        size_t i;
        json_t *it;
        json_array_foreach(c.items, i, it) {
                const char *id = json_string_value(json_object_get(it, "id"));
                box *b = id ? mgr_box_get(m, id, who->tenant) : NULL;
                if (b) {
                        pthread_mutex_lock(&m->lock);
                        json_array_set_new(c.items, i, mgr_box_record(b));
                        pthread_mutex_unlock(&m->lock);
                        mgr_box_put(m, b);
                }
        }
        rp->code = 200;
        rp->json = json_pack("{s:o, s:o}", "items", c.items, "next_cursor", next);
        return 200;
}

/* The caller's live sandbox for an operation: 404 unknown, 410 destroyed, 409 not usable now. */
box *mgr_usable_box(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        box *b = mgr_usable_box_held(m, who, id, rp);
        if (b && b->ext[0]) { /* another node holds it: only the native API passes it on (remote.c) */
                mgr_reply_err(rp, 422, "unsupported", "capability",
                        "sandbox %s is held by %s, which this surface does not reach; use the native API "
                        "(/v1/sandboxes/%s/...), which passes requests on to it",
                        b->id, b->ext, b->id);
                mgr_box_put(m, b);
                return NULL;
        }
        return b;
}

box *mgr_usable_box_held(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, who->tenant) : NULL;
        if (!b) {
                json_t *rec = mgr_valid_sandbox_id(id) ? mgr_stored_record(m, id, who->tenant) : NULL;
                if (rec) {
                        mgr_reply_err(rp, 410, "gone", NULL, "sandbox %s was destroyed (%s)", id,
                                json_string_value(json_object_get(rec, "reason")) ?: "destroyed");
                        json_decref(rec);
                } else
                        mgr_reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
                return NULL;
        }
        (void) mgr_auto_resume(m, b); /* paused, made with auto_resume: resumed first */
        pthread_mutex_lock(&m->lock);
        bool ok = !b->busy && sbx_state_usable(b->state);
        bool stopping = m->stopping;
        const char *st = sbx_state_to_string(b->state);
        pthread_mutex_unlock(&m->lock);
        if (stopping) { /* an exec started now would be let go of at once */
                mgr_reply_err(rp, 503, "unavailable", NULL, "the server is stopping");
                mgr_box_put(m, b);
                return NULL;
        }
        if (!ok) {
                mgr_reply_err(rp, 409, "conflict", NULL, "sandbox %s is %s%s", id, st,
                        streq(st, "ready")    ? " (being recreated or destroyed)"
                        : streq(st, "paused") ? " (resume it first)"
                                              : "");
                mgr_box_put(m, b);
                return NULL;
        }
        return b;
}
