/* reaper.c — the reaper (TTLs, idle, dead supervisors) and the reconcile at start (re-adopt, fail, clean
 * up). */
#include "daemon/mgr-internal.h"

#include <dirent.h>
#include <poll.h>
#include <sys/syscall.h>
#include "basic/rm-rf.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "isolate/cgroup.h"

/* ---- reaper, reconcile ------------------------------------------------------------------------- */

/* The cgroups that supervisors killed with SIGKILL left behind (their names say whose they were:
 * sbx_cgroup_gc_dead_owners()). The supervisors this server starts do not look for them at each
 * create (sbx_run_set_sweep_leftovers(false)): the scan grows with the sandboxes alive. This
 * thread does, at start, after a supervisor died, and once a minute. A group still populated
 * (its processes dying) stays for the next sweep. */
#define SWEEP_EVERY_MS (60 * 1000)
static void sweep_leftovers(void) {
        sbx_cgroup_probe_result probe = {0};
        if (sbx_cgroup_probe("/sys/fs/cgroup", NULL, &probe) >= 0) {
                _cleanup_strv_free_ char **names = NULL;
                int n = sbx_cgroup_gc_dead_owners(&probe, &names);
                if (n > 0) {
                        char count[16];
                        snprintf(count, sizeof count, "%d", n);
                        sbx_log(SBX_LOG_INFO, "cgroups_swept", "count", count, "first",
                                names ? names[0] : NULL, NULL);
                }
        }
        sbx_cgroup_probe_result_done(&probe);
}

void *mgr_reaper_main(void *arg) {
        sbx_mgr *m = arg;
        /* the sweep's clock is monotonic (a wall clock stepped back must not hold it off) */
        uint64_t sweep_at = 0; /* at start */
        int quick = 0; /* sweeps left at short intervals after a supervisor died */
        for (;;) {
                pthread_mutex_lock(&m->lock);
                /* a look every 250 ms, not at each event: ev_cond is broadcast at every event of
                 * every sandbox, and a look walks them all (under the lock the API needs). On the
                 * monotonic clock, whatever ev_cond's: a wall clock stepped back does not stretch it. */
                struct timespec ts;
                sbx_deadline_monotonic(250, &ts);
                while (!m->stopping &&
                        pthread_cond_clockwait(&m->ev_cond, &m->lock, CLOCK_MONOTONIC, &ts) != ETIMEDOUT)
                        ;
                if (m->stopping) {
                        pthread_mutex_unlock(&m->lock);
                        break;
                }
                /* pick the work under the lock, do it outside */
                box *todo[64];
                const char *why[64];
                size_t n = 0;
                int64_t t = mgr_now_ms();
                for (box *b = m->boxes; b && n < ELEMENTSOF(todo); b = b->next) {
                        bool paused = b->state == SBX_STATE_PAUSED;
                        if (b->busy || !(sbx_state_usable(b->state) || paused))
                                continue;
                        const char *w = NULL;
                        if (b->sv_pidfd >= 0 && mgr_pidfd_dead(b->sv_pidfd))
                                w = "supervisor_lost";
                        else if (paused) /* its clocks stand still; only ttl.paused runs */
                                w = b->paused_max_s > 0 &&
                                                    t - b->paused_ms >= (int64_t) (b->paused_max_s * 1000) &&
                                                    t >= b->archive_retry_ms
                                            ? "paused_expired"
                                            : NULL;
                        else if (t >= b->expires_ms)
                                w = b->pause_on_expiry && t < b->ttl_max_ms ? "ttl_pause" : "ttl_expiry";
                        else if (b->idle_s > 0 && b->execs_running == 0 &&
                                 t - b->last_active_ms >= (int64_t) (b->idle_s * 1000))
                                w = b->idle_pause ? "idle_pause" : "idle";
                        if (w) {
                                b->busy = true;
                                b->refs++;
                                todo[n] = b;
                                why[n++] = w;
                        }
                }
                /* the meters' samples that are due (and with credits, the hold's check) */
                box *due[32];
                size_t nd = 0;
                for (box *b = m->boxes; b && nd < ELEMENTSOF(due); b = b->next)
                        if (!b->busy && sbx_state_usable(b->state) && b->paused_ms == 0 &&
                                t >= b->meter_next_ms && (b->ext[0] || b->sv_pid > 0)) {
                                b->refs++;
                                due[nd++] = b;
                        }
                box *adopted[16];
                size_t na = 0;
                for (box *b = m->boxes; b && na < ELEMENTSOF(adopted); b = b->next)
                        if (b->adopted_inflight && !b->busy) {
                                b->refs++;
                                adopted[na++] = b;
                        }
                pthread_mutex_unlock(&m->lock);
                for (size_t i = 0; i < nd; i++) {
                        box *b = due[i];
                        mgr_meter_sample(m, b, false);
                        mgr_meter_store(m, b);
                        if (m->credits && mgr_credit_check(m, b)) {
                                pthread_mutex_lock(&m->lock);
                                bool mine = !b->busy && sbx_state_usable(b->state);
                                if (mine)
                                        b->busy = true;
                                pthread_mutex_unlock(&m->lock);
                                if (mine) { /* its usage passed its hold, no balance, grace spent */
                                        atomic_fetch_add(&m->n_expired, 1);
                                        mgr_set_state(m, b, SBX_STATE_EXPIRED, "credits_exhausted");
                                        mgr_destroy_box(m, b, "credits_exhausted");
                                        mgr_audit(m, NULL, "sandbox.destroy", b->id, "ok",
                                                "credits_exhausted");
                                }
                        }
                        mgr_box_put(m, b);
                }
                mgr_deals_expire(m); /* results left undecided a day (once a minute) */
                /* execs that a previous server started: their reports, once they ended */
                for (size_t i = 0; i < na; i++) {
                        box *b = adopted[i];
                        json_t *info = mgr_sv_call(b, SBX_SV_OP_INFO, 2000);
                        if (!info || json_integer_value(json_object_get(info, "execs_running")) == 0) {
                                mgr_ingest_exec_reports(m, b);
                                b->adopted_inflight--;
                        }
                        json_decref(info);
                        mgr_box_put(m, b);
                }
                for (size_t i = 0; i < n; i++) {
                        box *b = todo[i];
                        /* its supervisor wrote the sandbox's report as it ended: the sandbox
                         * itself ended (its init, or its guest, died), not the supervisor */
                        char rep[sizeof b->dir + 16];
                        snprintf(rep, sizeof rep, "%s/sandbox.json", b->dir);
                        if (streq(why[i], "supervisor_lost") && access(rep, F_OK) == 0)
                                why[i] = "sandbox_ended";
                        /* on_expiry "pause": paused at its TTL; on_idle "pause": after idle_s
                         * (destroyed when it cannot be) */
                        if (streq(why[i], "ttl_pause") || streq(why[i], "idle_pause")) {
                                const char *as = streq(why[i], "ttl_pause") ? "ttl_expiry" : "idle";
                                unsigned code = mgr_freeze_box(m, b, true, as, NULL);
                                if (!code) {
                                        mgr_audit(m, NULL, "sandbox.pause", b->id, "ok", as);
                                        pthread_mutex_lock(&m->lock);
                                        b->busy = false;
                                        pthread_mutex_unlock(&m->lock);
                                        mgr_box_put(m, b);
                                        continue;
                                }
                                sbx_log(SBX_LOG_WARNING, "pause_failed", "sandbox", b->id, "reason", as,
                                        NULL);
                                why[i] = as;
                        }
                        /* on_paused_max "snapshot": its files kept as "archive:ID" first; when that
                         * fails it stays paused (nothing lost) and is tried again in 5 minutes */
                        if (streq(why[i], "paused_expired") && b->paused_snapshot) {
                                /* on_paused_max "snapshot": its files kept as "archive:ID" first. A
                                 * failure that can pass (the store full, the quota, the server busy)
                                 * leaves it paused and is tried again 5 minutes later, 12 times at
                                 * most; one that cannot (a microvm's files, too many files) or the
                                 * 12th: destroyed as paused_expired, the log and the audit say why */
                                char name[64];
                                snprintf(name, sizeof name, "archive:%s", b->id);
                                sbx_mgr_reply sr;
                                unsigned code = mgr_snapshot_held(m, b, name, &sr);
                                if (code != 201) {
                                        const char *msg = json_string_value(json_object_get(
                                                json_object_get(sr.json, "error"), "message"));
                                        bool lasting = code == 409 || code == 413 || code == 400 ||
                                                       ++b->archive_tries >= 12;
                                        sbx_log(SBX_LOG_WARNING, "archive_failed", "sandbox", b->id, "error",
                                                msg ?: "?", "then",
                                                lasting ? "destroyed" : "retried in 5 minutes", NULL);
                                        mgr_audit(m, NULL, "sandbox.archive", b->id, "failed", msg);
                                        sbx_mgr_reply_done(&sr);
                                        if (!lasting) {
                                                pthread_mutex_lock(&m->lock);
                                                b->archive_retry_ms = mgr_now_ms() + 300 * 1000;
                                                b->busy = false;
                                                pthread_mutex_unlock(&m->lock);
                                                mgr_box_put(m, b);
                                                continue;
                                        }
                                } else {
                                        sbx_mgr_reply_done(&sr);
                                        why[i] = "archived";
                                }
                        }
                        if (streq(why[i], "supervisor_lost") || streq(why[i], "sandbox_ended")) {
                                /* what a killed supervisor left: swept a second from now and
                                 * three times more, further apart (its processes may still be
                                 * dying: a populated group cannot be removed) */
                                sweep_at = MIN(sweep_at, sbx_now_ns() + 1000 * 1000000ull);
                                quick = 3;
                                atomic_fetch_add(&m->n_failed, 1);
                                mgr_set_state(m, b, SBX_STATE_FAILED, why[i]);
                        } else {
                                atomic_fetch_add(&m->n_expired, 1);
                                mgr_set_state(m, b, SBX_STATE_EXPIRED, why[i]);
                        }
                        mgr_destroy_box(m, b, why[i]);
                        mgr_audit(m, NULL, "sandbox.destroy", b->id, "ok", why[i]);
                        mgr_box_put(m, b);
                }
                if (sbx_now_ns() >= sweep_at) {
                        sweep_leftovers();
                        /* after a death: 1, 2, 4 and 8 s after it; else once a minute */
                        uint64_t next_ms = quick > 0 ? (uint64_t) 1000 << (3 - quick) : SWEEP_EVERY_MS;
                        if (quick > 0)
                                quick--;
                        sweep_at = sbx_now_ns() + next_ms * 1000000ull;
                }
        }
        return NULL;
}

typedef struct load_ctx {
        sbx_mgr *m;
        box *list;
} load_ctx;

static int load_cb(void *ud, const char *record_json, int64_t created_at, int64_t expires_at,
        int64_t supervisor_pid, const char *inputs_json) {
        load_ctx *c = ud;
        json_error_t je;
        json_t *rec = record_json ? json_loads(record_json, 0, &je) : NULL;
        if (!rec)
                return 0;
        box *b = calloc(1, sizeof *b);
        if (!b) {
                json_decref(rec);
                return 0;
        }
        b->sv_pidfd = -1;
        b->refs = 1;
#define S(f, k) snprintf(b->f, sizeof b->f, "%s", json_string_value(json_object_get(rec, k)) ?: "")
        S(id, "id");
        S(tenant, "tenant");
        S(actor, "actor");
        S(profile, "profile");
        S(backend, "backend");
        S(reason, "reason");
        S(scratch, "scratch");
        S(home, "home");
        S(user, "user");
#undef S
        b->state = sbx_state_from_string(json_string_value(json_object_get(rec, "state")));
        if (b->state == _SBX_STATE_INVALID) { /* not a state this server knows: destroyed at once */
                sbx_log(SBX_LOG_WARNING, "unknown_state", "sandbox", b->id, "state",
                        json_string_value(json_object_get(rec, "state")), NULL);
                b->state = SBX_STATE_FAILED;
        }
        b->consumer = json_incref(json_object_get(rec, "consumer"));
        b->metadata = json_incref(json_object_get(rec, "metadata"));
        json_t *net = json_object_get(rec, "network");
        b->network = json_is_object(net) ? json_incref(net) : NULL;
        b->limits = json_incref(json_object_get(rec, "limits"));
        if (json_is_object(json_object_get(rec, "skill"))) /* its workspace and profile in b->dir */
                b->skill = json_incref(json_object_get(rec, "skill"));
        b->created_ms = created_at ? created_at : mgr_now_ms();
        b->expires_ms = expires_at ? expires_at : mgr_now_ms();
        b->updated_ms = mgr_now_ms();
        b->last_active_ms = mgr_now_ms();
        b->sv_pid = (pid_t) supervisor_pid;
        json_t *in = NULL;
        if (inputs_json)
                in = json_loads(inputs_json, 0, &je);
        b->ttl_s = json_number_value(json_object_get(in, "ttl_s"));
        json_t *rem = json_object_get(in, "remote");
        snprintf(b->remote_id, sizeof b->remote_id, "%s",
                json_string_value(json_object_get(rem, "id")) ?: "");
        snprintf(b->remote_token, sizeof b->remote_token, "%s",
                json_string_value(json_object_get(rem, "token")) ?: "");
        snprintf(b->reach, sizeof b->reach, "%s", json_string_value(json_object_get(rem, "reach")) ?: "");
        json_decref(in);
        b->idle_s = json_number_value(json_object_get(rec, "idle_s"));
        b->budget_s = json_number_value(json_object_get(rec, "budget_s"));
        b->budget_used_s = json_number_value(json_object_get(rec, "budget_used_s"));
        b->execs = json_integer_value(json_object_get(rec, "execs"));
        b->memory_mb = json_number_value(json_object_get(b->limits, "memory_mb"));
        /* ttl_max_at back from its text: created + (ttl_max_at - created) kept in the record */
        const char *tm = json_string_value(json_object_get(rec, "ttl_max_at"));
        struct tm t = {0};
        int ms = 0;
        if (tm && sscanf(tm, "%d-%d-%dT%d:%d:%d.%dZ", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour,
                          &t.tm_min, &t.tm_sec, &ms) == 7) {
                t.tm_year -= 1900;
                t.tm_mon -= 1;
                b->ttl_max_ms = (int64_t) timegm(&t) * 1000 + ms;
        } else
                b->ttl_max_ms = b->expires_ms;
        const char *pa = json_string_value(json_object_get(rec, "paused_at"));
        struct tm pt = {0};
        if (pa && sscanf(pa, "%d-%d-%dT%d:%d:%d.%dZ", &pt.tm_year, &pt.tm_mon, &pt.tm_mday, &pt.tm_hour,
                          &pt.tm_min, &pt.tm_sec, &ms) == 7) {
                pt.tm_year -= 1900;
                pt.tm_mon -= 1;
                b->paused_ms = (int64_t) timegm(&pt) * 1000 + ms;
        }
        b->paused_max_s = json_number_value(json_object_get(rec, "ttl_paused_s"));
        b->pause_on_expiry = streq_ptr(json_string_value(json_object_get(rec, "on_expiry")), "pause");
        b->auto_resume = json_is_true(json_object_get(rec, "auto_resume"));
        b->idle_pause = streq_ptr(json_string_value(json_object_get(rec, "on_idle")), "pause");
        b->paused_snapshot = streq_ptr(json_string_value(json_object_get(rec, "on_paused_max")), "snapshot");
        if (json_is_object(json_object_get(rec, "route")))
                b->route = json_incref(json_object_get(rec, "route"));
        if (json_is_object(json_object_get(rec, "cost")))
                b->cost = json_deep_copy(json_object_get(rec, "cost"));
        mgr_meter_reload(b, rec);
        const char *ext = json_string_value(json_object_get(rec, "extension"));
        if (ext && !streq(ext, "ext.local")) /* held by another node (remote.c) */
                snprintf(b->ext, sizeof b->ext, "%s", ext);
        snprintf(b->front, sizeof b->front, "%s",
                json_string_value(json_object_get(json_object_get(rec, "front"), "node_id")) ?: "");
        b->seed = json_object();
        static const char *const seeds[] = {
                "scope", "workspace_request", "inputs", "setup_metadata", "webhook"};
        for (size_t i = 0; i < ELEMENTSOF(seeds); i++)
                if (json_object_get(rec, seeds[i]) && !json_is_null(json_object_get(rec, seeds[i])))
                        json_object_set(b->seed, seeds[i], json_object_get(rec, seeds[i]));
        b->snapshot_src = json_incref(json_object_get(rec, "snapshot"));
        if (json_array_size(json_object_get(rec, "volumes")))
                b->volumes = json_incref(json_object_get(rec, "volumes"));
        if (!(b->paused_max_s > 0))
                b->paused_max_s = 24 * 3600.0;
        json_decref(rec);
        snprintf(b->sock, sizeof b->sock, "%s/sandboxes/%s.sock", c->m->runtime_dir, b->id);
        snprintf(b->dir, sizeof b->dir, "%s/sandboxes/%s", c->m->state_dir, b->id);
        b->next = c->list;
        c->list = b;
        return 0;
}

/* What a restart finds: each stored sandbox that is not destroyed either has its supervisor
 * answering on its socket (re-adopted, its execs in flight carry on) or is lost (failed, cleaned
 * up, destroyed); supervisor sockets nobody knows are orphans, destroyed. */
void mgr_reconcile(sbx_mgr *m) {
        load_ctx c = {.m = m};
        mgr_skills_reconcile(m);
        (void) sbx_store_sandbox_live(m->store, load_cb, &c, NULL);
        while (c.list) {
                box *b = c.list;
                c.list = b->next;
                if (b->ext[0]) { /* no supervisor here: the back end is asked (remote.c) */
                        pthread_mutex_lock(&m->lock);
                        b->refs++;
                        b->next = m->boxes;
                        m->boxes = b;
                        pthread_mutex_unlock(&m->lock);
                        mgr_remote_reconcile(m, b);
                        mgr_box_put(m, b);
                        continue;
                }
                json_t *info = mgr_sv_call(b, SBX_SV_OP_INFO, 3000);
                if (info && json_is_true(json_object_get(info, "ok")) && !sbx_state_ending(b->state)) {
                        b->sv_pid = (pid_t) json_integer_value(json_object_get(info, "pid"));
                        b->init_pid = (pid_t) json_integer_value(json_object_get(info, "init_pid"));
                        b->sv_pidfd = b->sv_pid > 0 ? (int) syscall(SYS_pidfd_open, b->sv_pid, 0) : -1;
                        double used = json_number_value(json_object_get(info, "budget_used_s"));
                        if (used > b->budget_used_s)
                                b->budget_used_s = used;
                        pthread_mutex_lock(&m->lock);
                        b->next = m->boxes;
                        m->boxes = b;
                        pthread_mutex_unlock(&m->lock);
                        mgr_ingest_exec_reports(m, b);
                        b->adopted_inflight =
                                json_integer_value(json_object_get(info, "execs_running")) > 0 ? 2 : 0;
                        /* paused: its supervisor kept it frozen. Frozen but not paused by its
                         * record: a snapshot (or a pause) that never answered — the server died
                         * while it read the sandbox: thawed, it runs on. */
                        bool frozen = json_is_true(json_object_get(info, "frozen"));
                        if (frozen && (b->state != SBX_STATE_PAUSED || streq(b->reason, "snapshot"))) {
                                json_decref(mgr_sv_call_body(b,
                                        json_pack("{s:s, s:b}", "op", SBX_SV_OP_FREEZE, "frozen", false),
                                        10000));
                                frozen = false;
                                sbx_log(SBX_LOG_INFO, "thawed", "sandbox", b->id, NULL);
                        }
                        if (!frozen)
                                b->paused_ms = 0;
                        if (!frozen && b->state == SBX_STATE_PAUSED) /* thawed: paused → ready */
                                mgr_set_state(m, b, SBX_STATE_READY, "readopted");
                        else
                                mgr_set_state(
                                        m, b, frozen ? SBX_STATE_PAUSED : SBX_STATE_READY, "readopted");
                        atomic_fetch_add(&m->n_readopted, 1);
                        char sv[16];
                        snprintf(sv, sizeof sv, "%d", (int) b->sv_pid);
                        sbx_log(SBX_LOG_INFO, "readopted", "sandbox", b->id, "supervisor", sv, NULL);
                } else {
                        pthread_mutex_lock(&m->lock);
                        b->refs++;
                        b->next = m->boxes;
                        m->boxes = b;
                        pthread_mutex_unlock(&m->lock);
                        if (info) {
                                /* alive but on its way out: finish the destroy */
                                b->sv_pid = (pid_t) json_integer_value(json_object_get(info, "pid"));
                                b->sv_pidfd =
                                        b->sv_pid > 0 ? (int) syscall(SYS_pidfd_open, b->sv_pid, 0) : -1;
                        } else if (!sbx_state_ending(b->state))
                                mgr_set_state(m, b, SBX_STATE_FAILED, "supervisor_lost");
                        mgr_destroy_box(m, b, info ? b->reason : "supervisor_lost");
                        mgr_box_put(m, b);
                }
                json_decref(info);
        }
        /* orphan supervisors: a socket in the runtime dir that no stored sandbox names */
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/sandboxes", m->runtime_dir);
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (l != 25 || !streq(de->d_name + 20, ".sock"))
                        continue;
                char id[32];
                snprintf(id, sizeof id, "%.20s", de->d_name);
                pthread_mutex_lock(&m->lock);
                bool known = mgr_box_find_locked(m, id, NULL) != NULL;
                pthread_mutex_unlock(&m->lock);
                if (known || !mgr_valid_sandbox_id(id))
                        continue;
                box tmp = {.sv_pidfd = -1, .sv_pid = 1};
                if (strlen(dir) + 1 + l >= sizeof tmp.sock)
                        continue;
                snprintf(tmp.sock, sizeof tmp.sock, "%.80s/%.25s", dir, de->d_name);
                json_t *info = mgr_sv_call(&tmp, SBX_SV_OP_INFO, 2000);
                if (info) {
                        tmp.sv_pid = (pid_t) json_integer_value(json_object_get(info, "pid"));
                        tmp.sv_pidfd = (int) syscall(SYS_pidfd_open, tmp.sv_pid, 0);
                        sbx_log(SBX_LOG_INFO, "orphan_destroyed", "supervisor_socket", tmp.sock, NULL);
                }
                json_decref(info);
                json_decref(mgr_sv_call(&tmp, SBX_SV_OP_DESTROY, 2000));
                if (tmp.sv_pidfd >= 0) {
                        struct pollfd pf = {.fd = tmp.sv_pidfd, .events = POLLIN};
                        (void) poll(&pf, 1, DESTROY_WAIT_MS);
                        close(tmp.sv_pidfd);
                }
                (void) unlinkat(dirfd(d), de->d_name, 0);
        }
        if (d)
                closedir(d);
        /* state dirs of sandboxes that are gone */
        snprintf(dir, sizeof dir, "%s/sandboxes", m->state_dir);
        d = opendir(dir);
        while (d && (de = readdir(d))) {
                if (!mgr_valid_sandbox_id(de->d_name))
                        continue;
                pthread_mutex_lock(&m->lock);
                bool known = mgr_box_find_locked(m, de->d_name, NULL) != NULL;
                pthread_mutex_unlock(&m->lock);
                if (!known) {
                        char p[PATH_MAX + 64];
                        snprintf(p, sizeof p, "%.4000s/%.20s", dir, de->d_name);
                        (void) sbx_rm_rf(p);
                }
        }
        if (d)
                closedir(d);
}
