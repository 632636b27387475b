/* lifecycle-ops.c — what moves a sandbox between states: the checked transition, TTL, recreate, destroy. */
#include "daemon/mgr-internal.h"

#include <dirent.h>

#include "basic/rm-rf.h"

static void persist(sbx_mgr *m, box *b, sbx_state state, const char *reason) {
        bool own = !sbx_store_tx_open(m->store);
        if (own)
                mgr_tx_begin(m);
        (void) mgr_box_save_locking(m, b); /* after a reply, requests may be changing it */
        mgr_emit(m, b, "sandbox.state", NULL);
        if (own)
                mgr_tx_end(m);
        sbx_log(SBX_LOG_INFO, "sandbox_state", "sandbox", b->id, "state", sbx_state_to_string(state),
                "reason", reason, NULL);
}

/* Under m->lock: b's owed transition stored before another is made (not waited for inside a
 * transaction of this thread's: the settler's store write would wait for it). */
static void settled_locked(sbx_mgr *m, box *b) {
        while (b->persist_owed && !sbx_store_tx_open(m->store))
                pthread_cond_wait(&m->ev_cond, &m->lock);
}

typedef struct owed_exec {
        struct owed_exec *next;
        sbx_store_exec x;
        char *status, *report_json;
        char id[32], state_at[16];
        json_t *code; /* its exit code, or null */
} owed_exec;

static void owed_exec_free(owed_exec *o) {
        free(o->status);
        free(o->report_json);
        json_decref(o->code);
        free(o);
}

/* b's owed records and transition stored and streamed, in one transaction (nobody changed b's
 * state meanwhile: they wait for this). */
void mgr_settle_box(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        sbx_state st = b->state;
        char reason[sizeof b->reason];
        snprintf(reason, sizeof reason, "%s", b->reason);
        owed_exec *execs = b->owed_execs;
        b->owed_execs = NULL;
        bool state = b->state_owed;
        pthread_mutex_unlock(&m->lock);
        mgr_tx_begin(m);
        while (execs) {
                owed_exec *o = execs;
                execs = o->next;
                (void) sbx_store_exec_put(m->store, &o->x, false);
                mgr_emit(m, b, "sandbox.exec",
                        json_pack("{s:s, s:s?, s:O, s:s}", "exec_id", o->id, "status", o->status,
                                "exit_code", o->code, "state", o->state_at));
                owed_exec_free(o);
        }
        if (state)
                persist(m, b, st, reason);
        else
                (void) mgr_box_save_locking(m, b); /* its counters */
        mgr_tx_end(m);
        pthread_mutex_lock(&m->lock);
        b->persist_owed = b->state_owed = false;
        pthread_cond_broadcast(&m->ev_cond);
        pthread_mutex_unlock(&m->lock);
        mgr_box_put(m, b);
}

bool mgr_exec_in_hand_locked(const box *b, const char *id) {
        for (const owed_exec *o = b->owed_execs; o; o = o->next)
                if (streq(o->id, id))
                        return true;
        return b->running && json_object_get(b->running, id);
}

/* An ended exec's record and event, and (ready: the last exec running ended) the sandbox's
 * move from active back to ready, stored and streamed by the settler beside the reply, in that
 * order, in one transaction. Like a transition, it waits for what b already owes. false (not a
 * request's thread, or out of memory): nothing done, the caller stores them in place. */
bool mgr_exec_end_later(sbx_mgr *m, box *b, const sbx_store_exec *x, const char *state_at, bool ready) {
        if (!mgr_replying())
                return false;
        owed_exec *o = calloc(1, sizeof *o);
        if (!o)
                return false;
        snprintf(o->id, sizeof o->id, "%s", x->id);
        snprintf(o->state_at, sizeof o->state_at, "%s", state_at);
        o->status = x->status ? strdup(x->status) : NULL;
        o->report_json = x->report_json ? strdup(x->report_json) : NULL;
        o->code = x->exit_code >= 0 ? json_integer(x->exit_code) : json_null();
        if ((x->status && !o->status) || (x->report_json && !o->report_json) || !o->code) {
                owed_exec_free(o);
                return false;
        }
        o->x = *x;
        o->x.id = o->id;
        o->x.sandbox_id = b->id;
        o->x.status = o->status;
        o->x.report_json = o->report_json;
        sbx_error e = {0};
        pthread_mutex_lock(&m->lock);
        settled_locked(m, b);
        owed_exec **pp = &b->owed_execs;
        while (*pp)
                pp = &(*pp)->next;
        *pp = o;
        /* (asked again here: an exec that began since the caller looked keeps it active) */
        if (ready && b->execs_running == 0 && !b->busy && b->state == SBX_STATE_ACTIVE &&
                sbx_state_transition_check(b->state, SBX_STATE_READY, &e) >= 0) {
                b->state = SBX_STATE_READY;
                snprintf(b->reason, sizeof b->reason, "exec_done");
                b->updated_ms = mgr_now_ms();
                b->state_owed = true;
        }
        bool queue = !b->persist_owed;
        if (queue) {
                b->persist_owed = true;
                b->refs++;
        }
        pthread_mutex_unlock(&m->lock);
        if (queue && !mgr_settle_later(m, b)) /* no settler (stopping, or too many owed): here */
                mgr_settle_box(m, b);
        return true;
}

bool mgr_set_state_from_after_reply(
        sbx_mgr *m, box *b, sbx_state only_from, sbx_state state, const char *reason) {
        if (!mgr_replying())
                return mgr_set_state_from(m, b, only_from, state, reason);
        sbx_error e = {0};
        pthread_mutex_lock(&m->lock);
        settled_locked(m, b);
        if (only_from != _SBX_STATE_INVALID && b->state != only_from) {
                pthread_mutex_unlock(&m->lock); /* a race lost (to a destroy): not an error */
                return false;
        }
        int r = sbx_state_transition_check(b->state, state, &e);
        bool queue = false;
        if (r >= 0) {
                b->state = state;
                snprintf(b->reason, sizeof b->reason, "%s", reason ? reason : "");
                b->updated_ms = mgr_now_ms();
                b->state_owed = true;
                /* with this thread's exec record still owed (it is not settled inside a
                 * transaction): one settle stores both */
                queue = !b->persist_owed;
                if (queue) {
                        b->persist_owed = true;
                        b->refs++;
                }
        }
        pthread_mutex_unlock(&m->lock);
        if (r < 0) {
                sbx_log(SBX_LOG_ERROR, "lifecycle_refused", "sandbox", b->id, "reason", reason, "error",
                        e.message, NULL);
                return false;
        }
        if (queue && !mgr_settle_later(m, b)) /* no settler (stopping, or too many owed): here */
                mgr_settle_box(m, b);
        return true;
}

bool mgr_set_state_after_reply(sbx_mgr *m, box *b, sbx_state state, const char *reason) {
        return mgr_set_state_from_after_reply(m, b, _SBX_STATE_INVALID, state, reason);
}

/* b's owed transition, if any, stored and streamed before the caller goes on (outside a
 * transaction of its own: the settler's write would wait for it). */
void mgr_settled(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        settled_locked(m, b);
        pthread_mutex_unlock(&m->lock);
}

/* A lifecycle transition: checked against the table (lifecycle.c), stored and streamed. The box
 * is the caller's (busy or private). With `only_from` valid, the transition happens only if b is
 * in that state now (a race lost to a destroy is not an error: false, nothing logged); an
 * illegal transition is a bug: refused and logged. */
bool mgr_set_state_from(sbx_mgr *m, box *b, sbx_state only_from, sbx_state state, const char *reason) {
        sbx_error e = {0};
        pthread_mutex_lock(&m->lock);
        settled_locked(m, b);
        sbx_state was = b->state;
        bool lost = only_from != _SBX_STATE_INVALID && was != only_from;
        int r = lost ? 0 : sbx_state_transition_check(was, state, &e);
        if (!lost && r >= 0) {
                b->state = state;
                snprintf(b->reason, sizeof b->reason, "%s", reason ? reason : "");
                b->updated_ms = mgr_now_ms();
        }
        pthread_mutex_unlock(&m->lock);
        if (lost)
                return false;
        if (r < 0) {
                sbx_log(SBX_LOG_ERROR, "lifecycle_refused", "sandbox", b->id, "reason", reason, "error",
                        e.message, NULL);
                return false;
        }
        persist(m, b, state, reason);
        return true;
}

bool mgr_set_state(sbx_mgr *m, box *b, sbx_state state, const char *reason) {
        return mgr_set_state_from(m, b, _SBX_STATE_INVALID, state, reason);
}

void mgr_remove_dir(box *b) {
        (void) sbx_rm_rf(b->dir);
}

/* A recreate starts the sandbox afresh from the same inputs: a skill's verified copy and its
 * derived profile (skills.c) stay, everything else of its directory goes. */
static void remove_dir_for_recreate(box *b) {
        if (!b->skill) {
                mgr_remove_dir(b);
                return;
        }
        DIR *d = opendir(b->dir);
        for (struct dirent *de; d && (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, "..") || streq(de->d_name, "workspace") ||
                        streq(de->d_name, "profile.yaml"))
                        continue;
                char p[PATH_MAX + 260];
                snprintf(p, sizeof p, "%s/%s", b->dir, de->d_name);
                (void) sbx_rm_rf(p);
        }
        if (d)
                closedir(d);
}

void mgr_cost_settle_locked(box *b, int64_t now_ms) {
        if (!b->cost || !json_is_null(json_object_get(b->cost, "actual")))
                return;
        json_object_set_new(b->cost, "actual", json_real(mgr_cost_accrued_locked(b, now_ms)));
}

void mgr_box_failed_ended(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        if (b->cost) /* it never ran: nothing to charge */
                json_object_set_new(b->cost, "actual", json_real(0));
        b->meter_ended = true;
        b->meter_ms = mgr_now_ms();
        pthread_mutex_unlock(&m->lock);
        mgr_box_ended(m, b);
}

void mgr_box_ended(sbx_mgr *m, box *b) {
        mgr_meter_sample(m, b, true); /* the last: its supervisor is still there */
        pthread_mutex_lock(&m->lock);
        mgr_cost_settle_locked(b, mgr_now_ms());
        pthread_mutex_unlock(&m->lock);
        mgr_meter_store(m, b);
        mgr_credit_settle(m, b);
}

/* The whole destroy: destroying → (supervisor ends, leftovers removed) → destroyed. */
void mgr_destroy_box(sbx_mgr *m, box *b, const char *reason) {
        pthread_mutex_lock(&m->lock);
        bool already = b->state == SBX_STATE_DESTROYING; /* a restart finishing one */
        pthread_mutex_unlock(&m->lock);
        if (!already)
                (void) mgr_set_state(m, b, SBX_STATE_DESTROYING, reason);
        if (!b->meter_ended) /* its meters' last sample, before its supervisor goes */
                mgr_meter_sample(m, b, true);
        if (b->ext[0]) { /* held by another node: told to go there (remote.c) */
                if (!b->ext_gone)
                        mgr_remote_teardown(m, b);
        } else
                mgr_sv_stop(m, b);
        mgr_remove_dir(b);
        mgr_box_ended(m, b);
        mgr_set_state(m, b, SBX_STATE_DESTROYED, reason);
        atomic_fetch_add(&m->n_destroyed, 1);
        mgr_box_unlink(m, b);
}

/* Claim b for a destroy/recreate (one at a time). */
static bool claim(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        bool ok = !b->busy;
        if (ok)
                b->busy = true;
        pthread_mutex_unlock(&m->lock);
        return ok;
}

/* ---- ttl, recreate, destroy ---------------------------------------------------------------- */

unsigned sbx_ops_extend(sbx_mgr *m, const sbx_caller *who, const char *id, double ext, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!(ext > 0) || ext > 366 * 86400.0)
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "extend_s", "extend_s: a positive number of seconds");
        box *b = mgr_usable_box_held(m, who, id, rp);
        if (!b)
                return rp->code;
        pthread_mutex_lock(&m->lock);
        int64_t base = b->expires_ms > mgr_now_ms() ? b->expires_ms : mgr_now_ms();
        int64_t want = base + (int64_t) (ext * 1000);
        int64_t to = want > b->ttl_max_ms ? b->ttl_max_ms : want;
        /* with credits, the hold covers the longer TTL (billing.hold_s: raised as it runs instead) */
        double more = m->credits && m->hold_s <= 0 && b->cost && to > b->expires_ms
                              ? mgr_cost_for(b->cost, (double) (to - b->expires_ms) / 1000.0) -
                                        mgr_cost_for(b->cost, 0)
                              : 0;
        char tenant[sizeof b->tenant];
        snprintf(tenant, sizeof tenant, "%s", b->tenant);
        pthread_mutex_unlock(&m->lock);
        if (more > 0) {
                if (mgr_credit_hold(m, tenant, b->id, more, rp)) {
                        mgr_box_put(m, b);
                        return rp->code;
                }
                pthread_mutex_lock(&m->lock);
                b->held += sbx_ledger_units(more);
                pthread_mutex_unlock(&m->lock);
        }
        pthread_mutex_lock(&m->lock);
        b->expires_ms = to;
        b->updated_ms = mgr_now_ms();
        bool capped = want > b->ttl_max_ms;
        pthread_mutex_unlock(&m->lock);
        (void) mgr_box_save(m, b);
        mgr_emit(m, b, "sandbox.ttl", json_pack("{s:b}", "capped", capped));
        mgr_audit(m, who, "sandbox.ttl", b->id, "ok", capped ? "capped at ttl.max" : NULL);
        return mgr_reply_box(m, b, rp);
}

unsigned sbx_ops_set_metadata(
        sbx_mgr *m, const sbx_caller *who, const char *id, json_t *metadata, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!mgr_string_map(metadata, "metadata", 64, rp))
                return rp->code;
        box *b = mgr_usable_box_held(m, who, id, rp);
        if (!b)
                return rp->code;
        pthread_mutex_lock(&m->lock);
        json_decref(b->metadata);
        b->metadata = json_deep_copy(metadata);
        b->updated_ms = mgr_now_ms();
        pthread_mutex_unlock(&m->lock);
        (void) mgr_box_save(m, b);
        mgr_audit(m, who, "sandbox.metadata", b->id, "ok", NULL);
        return mgr_reply_box(m, b, rp);
}

unsigned sbx_ops_metrics(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        box *b = mgr_usable_box(m, who, id, rp);
        if (!b)
                return rp->code;
        json_t *info = mgr_sv_call(b, SBX_SV_OP_INFO, 3000), *u = json_object_get(info, "usage");
        if (!json_is_object(u)) {
                json_decref(info);
                mgr_box_put(m, b);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "%s",
                        info ? "the sandbox's supervisor does not report usage (an older one: recreate the "
                               "sandbox)"
                             : "the sandbox's supervisor did not answer");
        }
        double cpu_s = json_number_value(json_object_get(u, "cpu_s")),
               cpus = json_number_value(json_object_get(u, "cpus"));
        int64_t now = mgr_now_ms();
        /* the CPU used since the last sample (or since the sandbox started), of its cpus */
        pthread_mutex_lock(&m->lock);
        double base_s = b->metrics_ms ? b->metrics_cpu_s : 0;
        int64_t base_ms = b->metrics_ms ? b->metrics_ms : b->created_ms;
        if (cpu_s >= 0) {
                b->metrics_cpu_s = cpu_s;
                b->metrics_ms = now;
        }
        pthread_mutex_unlock(&m->lock);
        double wall = (double) (now - base_ms) / 1000.0, pct = -1;
        if (cpu_s >= 0 && wall > 0 && cpus > 0)
                pct = 100.0 * (cpu_s - base_s) / wall / cpus;
        if (pct > 100)
                pct = 100;
        rp->json = json_pack("{s:s, s:o, s:f, s:f, s:f, s:O, s:O, s:O, s:O, s:O}", "sandbox_id", b->id,
                "timestamp", mgr_time_json(now), "cpu_count", cpus, "cpu_used_pct", pct < 0 ? -1.0 : pct,
                "cpu_s", cpu_s, "memory_used_bytes", json_object_get(u, "memory_bytes"),
                "memory_total_bytes", json_object_get(u, "memory_limit_bytes"), "disk_used_bytes",
                json_object_get(u, "disk_used_bytes"), "disk_total_bytes",
                json_object_get(u, "disk_total_bytes"), "pids", json_object_get(u, "pids"));
        rp->code = 200;
        json_decref(info);
        mgr_box_put(m, b);
        return 200;
}

unsigned sbx_ops_recreate(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        box *b = mgr_usable_box(m, who, id, rp);
        if (!b)
                return rp->code;
        if (!claim(m, b)) {
                mgr_box_put(m, b);
                return mgr_reply_err(rp, 409, "conflict", NULL, "sandbox %s is being changed", id);
        }
        mgr_set_state(m, b, SBX_STATE_DESTROYING, "recreate");
        mgr_sv_stop(m, b);
        remove_dir_for_recreate(b);
        pthread_mutex_lock(&m->lock);
        b->init_pid = b->sv_pid = 0;
        double used = b->budget_used_s;
        pthread_mutex_unlock(&m->lock);
        mgr_set_state(m, b, SBX_STATE_PROVISIONING, "recreate");
        unsigned code = mgr_provision(m, b, used, "recreate", rp);
        pthread_mutex_lock(&m->lock);
        b->busy = false;
        pthread_mutex_unlock(&m->lock);
        mgr_audit(m, who, "sandbox.recreate", b->id, code ? "failed" : "ok", NULL);
        if (!code) {
                pthread_mutex_lock(&m->lock);
                rp->json = mgr_box_record(b);
                pthread_mutex_unlock(&m->lock);
                rp->code = 200;
        }
        mgr_box_put(m, b);
        return rp->code;
}

unsigned sbx_ops_destroy(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        return sbx_ops_destroy_as(m, who, id, "user_delete", rp);
}

unsigned sbx_ops_destroy_as(
        sbx_mgr *m, const sbx_caller *who, const char *id, const char *reason, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, who->tenant) : NULL;
        if (!b) {
                json_t *rec = mgr_valid_sandbox_id(id) ? mgr_stored_record(m, id, who->tenant) : NULL;
                if (!rec)
                        return mgr_reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
                rp->code = 200; /* already gone: the final record, again */
                rp->json = rec;
                return 200;
        }
        if (!claim(m, b)) {
                /* another destroy is under way: wait for it, then answer the final record */
                for (int i = 0; i < 300; i++) {
                        pthread_mutex_lock(&m->lock);
                        bool done = b->state == SBX_STATE_DESTROYED;
                        pthread_mutex_unlock(&m->lock);
                        if (done)
                                break;
                        usleep(50000);
                }
        } else {
                mgr_destroy_box(m, b, reason);
                mgr_audit(m, who, "sandbox.destroy", b->id, "ok",
                        streq(reason, "user_delete") ? NULL : reason);
        }
        return mgr_reply_box(m, b, rp);
}
