/* pause.c — pause and resume (DESIGN.md, "Persistence"). A paused sandbox's processes are frozen
 * by its cgroup (its supervisor's sbx_sandbox_freeze(): v2 cgroup.freeze, else the v1 freezer)
 * and keep their memory, descriptors and files; its supervisor stays, so a restart of `serve`
 * re-adopts it paused. While paused: no exec or file operation (409), the TTL and idle clocks
 * stand still (resume moves expires_at and ttl_max_at on by the time paused), the execs running
 * keep their timeout's remaining time, and budget_s is not charged; it stays paused for at most
 * the profile's ttl.paused (default 24 h), then it is destroyed (reason `paused_expired`) — no
 * snapshot is taken (snapshots are not built yet). Pausing a paused sandbox and resuming a
 * running one answer 200 with the record unchanged. */
#include "daemon/mgr-internal.h"

#include <unistd.h>

#include "supervise/sv-protocol.h"

static json_t *sv_freeze(const box *b, bool frozen) {
        return mgr_sv_call_body(b, json_pack("{s:s, s:b}", "op", SBX_SV_OP_FREEZE, "frozen", frozen), 10000);
}

/* The box, claimed (busy) for the change; NULL with rp filled, or with *same set when it is
 * in the state asked for already (rp: its record, 200). */
static box *claim_box(sbx_mgr *m, const sbx_caller *who, const char *id, bool pause, sbx_mgr_reply *rp) {
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, who->tenant) : NULL;
        if (b) {
                pthread_mutex_lock(&m->lock);
                bool paused = b->state == SBX_STATE_PAUSED, usable = sbx_state_usable(b->state);
                bool ok = !b->busy && (paused || usable) && !m->stopping;
                if (ok && paused != pause)
                        b->busy = true;
                pthread_mutex_unlock(&m->lock);
                if (ok && paused == pause) {
                        mgr_reply_box(m, b, rp); /* as asked already: the record, unchanged */
                        return NULL;
                }
                if (ok)
                        return b;
                mgr_box_put(m, b);
        }
        /* not found, gone, busy, stopping, or in another state: the usual answers */
        b = mgr_usable_box(m, who, id, rp);
        if (b) { /* it changed meanwhile */
                mgr_box_put(m, b);
                mgr_reply_err(rp, 409, "conflict", NULL, "sandbox %s is being changed; try again", id);
        }
        return NULL;
}

static void release(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        b->busy = false;
        pthread_mutex_unlock(&m->lock);
}

/* The change itself, on a box claimed (busy) by the caller: its supervisor freezes or thaws it,
 * then the record. 0, or an HTTP status with rp filled (rp may be NULL: nothing kept). */
unsigned mgr_freeze_box(sbx_mgr *m, box *b, bool pause, const char *reason, sbx_mgr_reply *rp) {
        sbx_mgr_reply scratch = {.stream_fd = -1};
        if (!rp)
                rp = &scratch;
        if (pause) /* its meters up to now (nothing counts while it is paused) */
                mgr_meter_sample(m, b, false);
        json_t *ans = sv_freeze(b, pause);
        unsigned code = 0;
        if (!ans || !json_is_true(json_object_get(ans, "ok"))) {
                int err = (int) json_integer_value(json_object_get(ans, "errno"));
                const char *msg = json_string_value(json_object_get(ans, "error"));
                if (!ans)
                        code = mgr_reply_err(
                                rp, 503, "unavailable", NULL, "the sandbox's supervisor did not answer");
                else if (err == EOPNOTSUPP)
                        code = mgr_reply_err(rp, 409, "unsupported", NULL, "sandbox %s cannot be paused: %s",
                                b->id, msg ? msg : "its backend cannot freeze it");
                else if (err == EBUSY)
                        code = mgr_reply_err(rp, 409, "conflict", NULL, "%s", msg ? msg : "busy");
                else if (err == EINVAL && !msg)
                        code = mgr_reply_err(rp, 503, "unavailable", NULL,
                                "the sandbox's supervisor does not know pause (an older one: recreate the "
                                "sandbox)");
                else
                        code = mgr_reply_err(rp, 503, "unavailable", NULL, "cannot %s sandbox %s: %s",
                                pause ? "pause" : "resume", b->id, msg ? msg : "its supervisor failed");
                json_decref(ans);
                sbx_mgr_reply_done(&scratch);
                return code;
        }
        json_decref(ans);
        int64_t now = mgr_now_ms();
        pthread_mutex_lock(&m->lock);
        if (pause)
                b->paused_ms = now;
        else {
                b->meter_ms = now; /* its memory is counted from here again (meters.c) */
                /* the clocks stood still: TTL, its cap and idle go on from where they were */
                int64_t d = b->paused_ms > 0 && now > b->paused_ms ? now - b->paused_ms : 0;
                if (b->cost) /* not charged while paused */
                        json_object_set_new(b->cost, "paused_s",
                                json_real(json_number_value(json_object_get(b->cost, "paused_s")) +
                                          d / 1000.0));
                b->expires_ms += d;
                b->ttl_max_ms += d;
                /* paused at its TTL (on_expiry "pause"): a TTL of its own again, within ttl.max */
                if (b->expires_ms <= now) {
                        b->expires_ms = now + (int64_t) (b->ttl_s * 1000);
                        if (b->expires_ms > b->ttl_max_ms)
                                b->expires_ms = b->ttl_max_ms;
                }
                b->last_active_ms = now;
                b->paused_ms = 0;
        }
        pthread_mutex_unlock(&m->lock);
        mgr_set_state(m, b, pause ? SBX_STATE_PAUSED : SBX_STATE_READY, reason);
        return 0;
}

bool mgr_auto_resume(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        bool go = b->state == SBX_STATE_PAUSED && b->auto_resume && !b->busy && !m->stopping;
        if (go)
                b->busy = true;
        pthread_mutex_unlock(&m->lock);
        if (!go)
                return false;
        unsigned code = mgr_freeze_box(m, b, false, "auto_resume", NULL);
        if (!code)
                mgr_audit(m, NULL, "sandbox.resume", b->id, "ok", "auto_resume");
        release(m, b);
        return code == 0;
}

static unsigned freeze_op(sbx_mgr *m, const sbx_caller *who, const char *id, bool pause, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        box *b = claim_box(m, who, id, pause, rp);
        if (!b)
                return rp->code;
        const char *action = pause ? "sandbox.pause" : "sandbox.resume";
        unsigned code = mgr_freeze_box(m, b, pause, pause ? "user_pause" : "user_resume", rp);
        release(m, b);
        if (code) {
                mgr_audit(m, who, action, b->id, "failed",
                        json_string_value(json_object_get(json_object_get(rp->json, "error"), "message")));
                mgr_box_put(m, b);
                return code;
        }
        mgr_audit(m, who, action, b->id, "ok", NULL);
        return mgr_reply_box(m, b, rp);
}

unsigned sbx_ops_pause(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        return freeze_op(m, who, id, true, rp);
}

unsigned sbx_ops_resume(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        return freeze_op(m, who, id, false, rp);
}

unsigned sbx_ops_set_lifecycle(
        sbx_mgr *m, const sbx_caller *who, const char *id, const sbx_lifecycle_req *l, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (l->has_idle && !(l->idle_s >= 0 && l->idle_s <= 366 * 86400.0))
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "idle_s", "idle_s: 0 (none) to 366 days of seconds");
        if (l->has_paused_max && !(l->paused_max_s >= 1 && l->paused_max_s <= 30 * 86400.0))
                return mgr_reply_err(rp, 400, "invalid_argument", "paused_max_s",
                        "paused_max_s: 1 s to 30 days of seconds");
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, who->tenant) : NULL;
        if (b) { /* a paused one's settings may change too */
                pthread_mutex_lock(&m->lock);
                bool ok = !b->busy && (sbx_state_usable(b->state) || b->state == SBX_STATE_PAUSED);
                if (ok) {
                        if (l->has_idle)
                                b->idle_s = l->idle_s;
                        if (l->has_on_idle)
                                b->idle_pause = l->idle_pause;
                        if (l->has_paused_max)
                                b->paused_max_s = l->paused_max_s;
                        if (l->has_on_paused_max)
                                b->paused_snapshot = l->paused_snapshot;
                        b->updated_ms = mgr_now_ms();
                }
                pthread_mutex_unlock(&m->lock);
                if (ok) {
                        (void) mgr_box_save(m, b);
                        mgr_audit(m, who, "sandbox.lifecycle", b->id, "ok", NULL);
                        return mgr_reply_box(m, b, rp);
                }
                mgr_box_put(m, b);
        }
        b = mgr_usable_box(m, who, id, rp); /* the usual answers: 404, 410, 409 */
        if (b) {
                mgr_box_put(m, b);
                mgr_reply_err(rp, 409, "conflict", NULL, "sandbox %s is being changed; try again", id);
        }
        return rp->code;
}
