/* remote-health.c — the health of remote extensions (other sandboxer nodes, E2B, Daytona) and of
 * hosts, as the hosts thread hears it (hosts.c): each extension probed at every beat, all at once;
 * after PROBE_MISSES misses in a row its sandboxes are failed (host_lost) and what they hold at
 * the back end is kept to be torn down when it answers again (remote.c's pending teardowns). */
#include "daemon/remote.h"

#define PROBE_MISSES 2

/* ---- health --------------------------------------------------------------------------------- */

static pthread_mutex_t miss_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *misses; /* extension id → misses in a row */
static json_t *answered; /* extension id → true once it has answered a probe */

/* The sandboxes of extension ext (or placed on host): failed, their teardown kept for when it
 * answers again (not tried now: it does not answer). */
static void lost(sbx_mgr *m, const char *ext, const char *host, const char *why) {
        for (;;) {
                box *b = NULL;
                pthread_mutex_lock(&m->lock);
                for (box *x = m->boxes; x && !b; x = x->next) {
                        bool there = host ? x->ext[0] && streq_ptr(json_string_value(json_object_get(
                                                                           x->route, "chosen_host")),
                                                                 host)
                                          : streq(x->ext, ext);
                        if (there && !x->busy && !sbx_state_ending(x->state)) {
                                b = x;
                                b->busy = true;
                                b->refs++;
                        }
                }
                pthread_mutex_unlock(&m->lock);
                if (!b)
                        break;
                atomic_fetch_add(&m->n_failed, 1);
                mgr_set_state(m, b, SBX_STATE_FAILED, "host_lost");
                sbx_log(SBX_LOG_WARNING, "remote_host_lost", "extension", b->ext, "sandbox", b->id, "error",
                        why, NULL);
                remote_pend_add(
                        m, b->ext, b->id, b->remote_id[0] ? b->remote_id : b->id, b->reach, b->tenant);
                pthread_mutex_lock(&m->lock);
                b->ext_gone = true; /* told when it answers again (remote-pending.json) */
                pthread_mutex_unlock(&m->lock);
                mgr_destroy_box(m, b, "host_lost");
                mgr_audit(m, NULL, "sandbox.destroy", b->id, "ok", "host_lost");
                mgr_box_put(m, b);
        }
}

void mgr_remote_host_lost(sbx_mgr *m, const char *host, const char *why) {
        lost(m, NULL, host, why);
}

void mgr_remote_host_back(sbx_mgr *m, const char *ext) {
        remote_pend_flush(m, ext);
}

/* One extension's probe: its health kept; at its second miss in a row and every one after it, its
 * sandboxes are lost (at every miss, not only the second: a sandbox busy at that moment, an exec
 * in flight, is caught at the next probe). */
static void probe_one(sbx_mgr *m, const char *id, const char *kind) {
        remote_ep ep;
        char why[700] = "";
        (void) remote_ep_of(m, NULL, id, &ep, why, sizeof why); /* a token is not needed to be heard */
        why[0] = 0;
        remote_resp r;
        int64_t t0 = mgr_now_ms();
        const char *path = streq(kind, "sandboxer") ? "/healthz" : "/health";
        long code = remote_call(
                m, &ep, "GET", path, NULL, 0, NULL, false, NULL, NULL, 3000, &r, why, sizeof why);
        remote_resp_done(&r);
        bool ok = code > 0 && code < 500;
        if (code >= 500)
                snprintf(why, sizeof why, "%s answered %ld at %s", id, code, path);
        double ms = (double) (mgr_now_ms() - t0);
        pthread_mutex_lock(&miss_lock);
        if (!misses)
                misses = json_object();
        if (!answered)
                answered = json_object();
        if (ok)
                json_object_set_new(answered, id, json_true());
        bool once = json_is_true(json_object_get(answered, id));
        json_int_t before = json_integer_value(json_object_get(misses, id));
        bool seen = json_object_get(misses, id) != NULL;
        json_int_t now = ok ? 0 : before + 1;
        json_object_set_new(misses, id, json_integer(now));
        pthread_mutex_unlock(&miss_lock);
        /* one miss is a blip (still healthy, said in the reason); two in a row: lost; one that
         * never answered is not healthy yet */
        bool healthy = ok || (once && now < PROBE_MISSES);
        mgr_registry_set_health(
                id, json_pack("{s:b, s:o, s:o, s:s*}", "ok", healthy, "checked_at", mgr_time_json(t0),
                            "latency_ms", ok ? json_real(ms) : json_null(), "reason", ok ? NULL : why));
        if (now == PROBE_MISSES)
                sbx_log(SBX_LOG_WARNING, "extension_unhealthy", "extension", id, "reason", why, NULL);
        if (now >= PROBE_MISSES)
                lost(m, id, NULL, why);
        if (ok && (before >= PROBE_MISSES || !seen)) {
                if (seen)
                        sbx_log(SBX_LOG_INFO, "extension_healthy", "extension", id, NULL);
                remote_pend_flush(m, id);
                (void) remote_sweep(m, id); /* what it holds for this front alone */
        }
}

/* The probes under way, one thread each. Only the hosts thread starts, joins and reads them; a
 * probe's own thread sets done as it ends. */
#define PROBE_SLOTS 64
typedef struct {
        sbx_mgr *m;
        char id[128], kind[16];
        pthread_t t;
        bool used;
        atomic_bool done;
} probe_slot;
static probe_slot slots[PROBE_SLOTS];

static void *probe_thread(void *ud) {
        probe_slot *s = ud;
        probe_one(s->m, s->id, s->kind);
        atomic_store(&s->done, true);
        return NULL;
}

static void slots_join(bool all) {
        for (size_t k = 0; k < PROBE_SLOTS; k++)
                if (slots[k].used && (all || atomic_load(&slots[k].done))) {
                        pthread_join(slots[k].t, NULL);
                        slots[k].used = false;
                }
}

/* Every remote extension probed at once, each on a thread of its own, and none waited for: one
 * that takes its whole timeout to fail (a stopped node, a name that does not resolve), or one
 * that came back with a backlog of teardowns to be told, does not delay hearing that another is
 * gone. An extension whose last probe is still under way is not probed again until it ends. */
void mgr_remote_probe(sbx_mgr *m) {
        slots_join(false);
        json_t *reg = mgr_registry(m), *x;
        size_t i;
        json_array_foreach(reg, i, x) {
                const char *id = json_string_value(json_object_get(x, "id"));
                const char *kind = json_string_value(json_object_get(x, "kind"));
                if (!id ||
                        !(streq_ptr(kind, "sandboxer") || streq_ptr(kind, "e2b") ||
                                streq_ptr(kind, "daytona")) ||
                        mgr_stopping(m))
                        continue;
                probe_slot *s = NULL;
                bool busy = false;
                for (size_t k = 0; k < PROBE_SLOTS && !busy; k++) {
                        busy = slots[k].used && streq(slots[k].id, id);
                        if (!slots[k].used && !s)
                                s = &slots[k];
                }
                if (busy)
                        continue;
                char kb[16];
                snprintf(kb, sizeof kb, "%s", kind);
                if (!s) { /* more extensions than slots: probed here, in turn */
                        probe_one(m, id, kb);
                        continue;
                }
                s->m = m;
                snprintf(s->id, sizeof s->id, "%s", id);
                snprintf(s->kind, sizeof s->kind, "%s", kind);
                atomic_store(&s->done, false);
                s->used = pthread_create(&s->t, NULL, probe_thread, s) == 0;
                if (!s->used) /* no thread to be had: probed here */
                        probe_one(m, s->id, s->kind);
        }
        json_decref(reg);
}

void mgr_remote_probe_stop(void) {
        slots_join(true);
}
