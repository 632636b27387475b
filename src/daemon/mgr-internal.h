/* mgr-internal.h — what the manager's files (sandboxes.c, boxes.c, create.c, exec.c, ...) share:
 * the sandbox record, the manager, and the helpers one file defines for another. Not installed, not
 * for http.c or compat/ (they use sandboxes.h). */
#pragma once

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <limits.h>

#include "basic/macro.h"
#include "daemon/store-ledger.h"
#include "daemon/lifecycle.h"
#include "daemon/log.h"
#include "daemon/ops.h"
#include "daemon/sandboxes.h"
#include "daemon/store-sandboxes.h"
#include "daemon/store.h"
#include "policy/policy.h"
#include "supervise/sv-protocol.h"

#define MAX_BODY_JSON (1024 * 1024)
#define FILE_MAX (64ull * 1024 * 1024)
#define PROVISION_TIMEOUT_MS 30000
#define DESTROY_WAIT_MS 10000

typedef struct box {
        char id[32];
        char tenant[128];
        char actor[140];
        char profile[256];
        char backend[16];
        sbx_state state;
        char reason[64];
        char scratch[512];
        char home[256]; /* the profile's filesystem.home, "" without one */
        char user[64]; /* the name of uid 1000 inside (the profile's user), "" when not known */
        /* held by another node (remote.c): the extension that holds it, "" when it is this
         * host's own; ext_gone: the back end no longer has it (nothing to tear down there) */
        char ext[72];
        bool ext_gone;
        bool first_exec_done; /* its first exec was timed (route.c: lowest-latency) */
        /* what the settler stores once the reply went (settle.c): its last transition
         * (state_owed), the records of execs that ended (owed_execs, oldest first) */
        bool persist_owed, state_owed;
        struct owed_exec *owed_execs;
        char front[40]; /* made for another node's front (its node id), "" when asked here */
        /* a hosted service's own id for it and its access token (ext-e2b.c), "" for a sandboxer
         * node's (the same id) */
        char remote_id[128];
        char remote_token[256];
        char reach[300]; /* ext.compose-ssh: the SSH endpoint, ssh://USER@HOST:PORT ("" otherwise) */
        json_t *consumer, *metadata, *limits;
        json_t *seed; /* the create's {scope, workspace_request, inputs, setup_metadata} as given */
        json_t *profile_secrets; /* the names its profile grants (the server's store may serve them) */
        json_t *route; /* the ranking that placed it (route.c): {strategy, chosen, candidates, …} */
        json_t *cost; /* {estimated, actual, currency, rate, paused_s} (estimate.c), or NULL */
        json_t *network; /* {egress, egress_deny}: the rules in force (NULL: not known) */
        json_t *running; /* exec_id → {argv, started_at}: execs this server started, running */
        json_t *secret_names; /* the profile's `secrets` (NULL: not known yet, read the profile) */
        /* made from a skill (create {skill}): {id, name, version, digest, key_id}, else NULL; its
         * workspace is dir/workspace (the verified files), its profile dir/profile.yaml */
        json_t *skill;
        /* The profile and policy as resolved for it (sbx_config_encode()), handed to its supervisor
         * at every start; NULL for one re-adopted by a restarted server until it is provisioned
         * again (then resolved again). config_sha: their SHA-256, "" with none. */
        char *config;
        size_t config_len;
        char config_sha[65];
        /* the compat surfaces' (surface.c): the sandbox-wide environment, envd's token and whom
         * it was made for; in memory only */
        bool surface_set;
        bool ports_public; /* its ports answer without credentials (ports.c) */
        char surface_token[65];
        sbx_caller surface_who;
        json_t *surface_env;
        int64_t created_ms, updated_ms, expires_ms, ttl_max_ms, last_active_ms;
        int64_t paused_ms; /* paused since (pause.c); 0: not paused */
        double paused_max_s; /* the profile's ttl.paused: the longest it stays paused */
        bool pause_on_expiry; /* create's on_expiry "pause": the reaper pauses it at expires_at */
        bool auto_resume; /* create's auto_resume: an exec or file operation resumes it */
        bool idle_pause; /* on_idle "pause": idle_s without an exec pauses it (else destroys it) */
        bool paused_snapshot; /* on_paused_max "snapshot": kept as a snapshot ("archive:ID") before
                               * it is destroyed at its paused cap (reason archived) */
        int64_t archive_retry_ms; /* that snapshot failed: not tried again before */
        unsigned archive_tries; /* how many times it failed (12: given up) */
        char restoring[24]; /* the snapshot its files are being written from (create {snapshot}) */
        json_t *snapshot_src; /* made from a snapshot: {id, config_changed}, else NULL */
        json_t *volumes; /* the volumes it mounts: [{name, mount, access}], or NULL */
        double idle_s, ttl_s;
        /* meters (meters.c): CPU seconds and memory MiB-seconds from its cgroup, sampled by the
         * reaper, at pause and at its end; meter_cpu_raw is the supervisor's count at the last
         * sample (a recreate starts a new one from 0: what the old one counted stays in cpu_s) */
        double meter_cpu_s, meter_cpu_raw, meter_mem_mib_s;
        uint64_t meter_mem_bytes, meter_egress;
        int64_t meter_ms, meter_next_ms;
        bool meter_ended; /* its last sample is taken: the meters are final */
        /* credits (credits.c): what the ledger holds for it (millionths), and since when its usage
         * has reached that with no balance left to raise it (0: not) */
        int64_t held;
        int64_t short_since_ms;
        double metrics_cpu_s; /* the last metrics sample's CPU seconds, at metrics_ms (0: none) */
        int64_t metrics_ms;
        double budget_s, budget_used_s;
        double memory_mb;
        int64_t execs;
        unsigned execs_running;
        pid_t sv_pid, init_pid;
        int sv_pidfd;
        /* connections to its supervisor an exec answered on and left open for the next (its
         * thread there waits for another request): under m->lock (supervisors.c) */
        int sv_idle[4];
        unsigned sv_idle_n;
        bool busy; /* a destroy or recreate holds it */
        bool sv_child; /* the supervisor is our child (started by this server): reap it */
        int adopted_inflight; /* re-adopted with execs running: their reports are to be taken in
                               * (reaper ticks to go once none runs; the last report may land
                               * just after the count drops) */
        unsigned refs;
        char sock[sizeof(((struct sockaddr_un *) 0)->sun_path)];
        char dir[PATH_MAX];
        struct box *next;
} box;

#define SETTLE_MAX 256

struct sbx_mgr {
        sbx_store *store;
        sbx_mgr_options o;
        char *state_dir, *runtime_dir, *exe, *policy_file, *secrets_dir, *audit_path, *snapshot_dir;
        bool supervise_exe_lean; /* exe is sandboxer-supervise, not `sandboxer supervise` */
        pthread_mutex_t lock;
        pthread_cond_t ev_cond;
        /* the settler (settle.c) */
        pthread_mutex_t settle_lock;
        pthread_cond_t settle_cond;
        box *settle_q[SETTLE_MAX];
        unsigned settle_n;
        bool settle_audit, settle_started, settle_stop, settle_done;
        pthread_t settler;
        box *boxes;
        int64_t last_seq;
        pthread_t reaper;
        bool reaper_started, stopping;
        _Atomic uint64_t n_created, n_destroyed, n_failed, n_execs, n_expired, n_readopted, n_warm_used;
        /* the warm pool: started, unassigned sandboxes (not in the store until taken) */
        box *pool;
        char **warm_profiles;
        pthread_t filler;
        bool filler_started;
        pthread_t webhooks; /* webhooks.c */
        bool webhooks_started;
        pthread_t hosts_thread; /* hosts.c: heartbeats; hosts_kick wakes it (a host added) */
        bool hosts_started, hosts_kick;
        pthread_cond_t hosts_cond;
        /* detached threads (exec streams, event streams, the compat surfaces' execs): counted, so
         * that the manager outlives them; stop_efd wakes the ones that wait on a sandbox */
        unsigned workers;
        pthread_cond_t workers_cond;
        int stop_efd;
        /* the supervisors' spawner (spawner.c): its end of the pair (-1: none), its pid, when one
         * was last started; under spawner_lock (one request at a time) */
        pthread_mutex_t spawner_lock;
        int spawner_fd;
        pid_t spawner_pid;
        int64_t spawner_tried_ms;
        char policy_sha[65]; /* of the policy file last seen (state dir: policy.sha256) */
        /* credits (credits.c): enforced (serve --credits or the policy's billing.enforce, read at
         * start), the currency, how long a hold covers (0: the TTL), the grace after usage
         * reaches a hold that cannot be raised, and how often the meters are sampled */
        bool credits;
        char currency[16];
        double hold_s, grace_s, meter_interval_s;
        struct {
                const char *name;
                void *state;
                void (*drop)(void *state);
        } surfaces[8]; /* the compat surfaces' own tables (sbx_mgr_surface_state) */
        /* ports.c: the key of preview tokens and signed paths (state dir: port-key), loaded at the
         * first use; signed tokens revoked before their expiry (token → exp) */
        uint8_t port_key[32];
        bool port_key_loaded;
        char *domain;
        json_t *revoked;
};

/* A hook mgr_sv_spawn_hooked() runs once the supervisor is started (see there). */
typedef void (*spawn_hook)(void *ud);

/* How an exec's output is taken: streamed to sink as it comes, or collected. */
typedef struct exec_io {
        /* sink for output as it comes (stream), or NULL to collect */
        void (*sink)(void *ud, int which, const char *data, size_t n);
        void *ud;
        char *out, *err;
        size_t out_len, err_len, out_cap, err_cap;
} exec_io;

/* mgr-util.c */
int mgr_worker_start(sbx_mgr *m, void *(*fn)(void *), void *arg);
void mgr_worker_done(sbx_mgr *m);
int64_t mgr_now_ms(void);
json_t *mgr_time_json(int64_t ms);
/* Whether the JSON array a holds the string s; qsort's comparator for an array of char *. */
bool mgr_json_has_str(const json_t *a, const char *s);
int mgr_cmp_strp(const void *a, const void *b);
void mgr_random_id(const char *prefix, char *buf, size_t size);
bool mgr_valid_sandbox_id(const char *s);
json_t *mgr_err_json(const char *code, const char *field, const char *fmt, ...) _printf_(3, 4);
unsigned mgr_reply_err(sbx_mgr_reply *rp, unsigned code, const char *ecode, const char *field,
        const char *fmt, ...) _printf_(5, 6);
void mgr_audit(sbx_mgr *m, const sbx_caller *who, const char *action, const char *target,
        const char *outcome, const char *detail);
json_t *mgr_parse_body(const sbx_mgr_request *rq, sbx_mgr_reply *rp, bool empty_ok);
bool mgr_only_keys(json_t *o, const char *const *allowed, const char *prefix, sbx_mgr_reply *rp);
bool mgr_string_map(json_t *o, const char *field, size_t max_keys, sbx_mgr_reply *rp);
void mgr_tx_begin(sbx_mgr *m);
void mgr_tx_end(sbx_mgr *m);
/* Committed when ok, else rolled back */
void mgr_tx_end_ok(sbx_mgr *m, bool ok);
bool mgr_stopping(sbx_mgr *m);
bool mgr_utf8_valid(const unsigned char *s, size_t n);
json_t *mgr_base64_json(const unsigned char *s, size_t n);

/* network.c */
json_t *mgr_network_json(char *const *egress, char *const *deny);
int mgr_network_apply(const sbx_network_req *n, sbx_profile *pr);
/* b provisioned again (recreate, a re-adopted one restarted): its rules (b->network) sent to its
 * new supervisor; where that cannot be (no proxy now), the record says null and it is logged. */
void mgr_network_reapply(sbx_mgr *m, box *b);

/* boxes.c */
json_t *mgr_box_record(const box *b);
/* 200 with b's record in rp; b's reference (mgr_usable_box's) put. */
unsigned mgr_reply_box(sbx_mgr *m, box *b, sbx_mgr_reply *rp);
/* What b's profile is loaded by: its name, or for a skill's sandbox the file its create derived,
 * b->dir/profile.yaml (b->profile is then that file's id, skill.NAME). buf: PATH_MAX + 16. */
const char *mgr_box_profile_ref(const box *b, char *buf, size_t n);
int mgr_box_save(sbx_mgr *m, box *b);
/* The same for a box others may change meanwhile (no lock held): its texts made under m->lock. */
int mgr_box_save_locking(sbx_mgr *m, box *b);
box *mgr_box_find_locked(sbx_mgr *m, const char *id, const char *tenant);
box *mgr_box_get(sbx_mgr *m, const char *id, const char *tenant);
void mgr_box_free(box *b);
void mgr_box_put(sbx_mgr *m, box *b);
void mgr_box_unlink(sbx_mgr *m, box *b);
box *mgr_usable_box(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
/* The same for one another node may hold (the front's own part of a TTL or metadata change). */
box *mgr_usable_box_held(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);

/* events.c */
void mgr_emit(sbx_mgr *m, const box *b, const char *type, json_t *data /* stolen */);
/* An event stored with sequence number seq: the streams and the webhooks are woken. */
void mgr_event_posted(sbx_mgr *m, int64_t seq);
unsigned mgr_op_events(sbx_mgr *m, const sbx_mgr_request *rq, sbx_mgr_reply *rp);

/* lifecycle-ops.c */
bool mgr_set_state_from(sbx_mgr *m, box *b, sbx_state only_from, sbx_state state, const char *reason);
bool mgr_set_state(sbx_mgr *m, box *b, sbx_state state, const char *reason);
/* The same, on a request's thread: in memory now, stored and streamed by the settler beside the
 * reply (settle.c); any other transition of b waits for that. Elsewhere it is mgr_set_state. */
bool mgr_set_state_after_reply(sbx_mgr *m, box *b, sbx_state state, const char *reason);
bool mgr_set_state_from_after_reply(
        sbx_mgr *m, box *b, sbx_state only_from, sbx_state state, const char *reason);
void mgr_settled(sbx_mgr *m, box *b);
/* An ended exec's record and event and (ready) b's move back to ready, stored by the settler
 * beside the reply; a reader of b's execs waits for them (mgr_settled). false: not on a
 * request's thread, the caller stores them. */
bool mgr_exec_end_later(sbx_mgr *m, box *b, const sbx_store_exec *x, const char *state_at, bool ready);
/* Under m->lock: this server has exec id of b in hand (running, or its record owed to the
 * store): not one to take in from what its supervisor kept. */
bool mgr_exec_in_hand_locked(const box *b, const char *id);
void mgr_settle_box(sbx_mgr *m, box *b);
/* settle.c: true on a thread serving a request (sbx_mgr_request_begin); b's owed transition, or
 * an fsync of the audit log, handed to the settler (false: none runs; do it here). */
bool mgr_replying(void);
/* meters.c: b's wall seconds alive (not paused) at now, or at its end */
double mgr_meter_wall_locked(const box *b, int64_t now);
/* Sample b's cgroup through its supervisor (not under m->lock); final: its last sample (at its end) */
void mgr_meter_sample(sbx_mgr *m, box *b, bool final);
/* An exec's report: its egress bytes counted (under m->lock) */
void mgr_meter_exec_locked(box *b, json_t *report);
/* {wall_s, cpu_s, mem_mib_s, egress_bytes, creations, final} (under m->lock) */
json_t *mgr_meter_json_locked(const box *b, int64_t now);
void mgr_meter_reload(box *b, json_t *rec);
/* What b has cost so far: its extension's rate applied to its meters (under m->lock) */
double mgr_cost_accrued_locked(const box *b, int64_t now);
/* b's meters into the store's meters table */
void mgr_meter_store(sbx_mgr *m, box *b);
void mgr_meters_prometheus(sbx_mgr *m, FILE *f);
unsigned sbx_ops_meters(sbx_mgr *m, const sbx_caller *who, const char *sandbox, const char *from,
        const char *to, const char *tenant, const char *by, sbx_mgr_reply *rp);

/* credits.c */
/* A hold of amount for sandbox id (before it is made; NULL: only whether the balance has it): 0,
 * or 402 payment_required in rp. Nothing when credits are off. */
unsigned mgr_credit_hold(sbx_mgr *m, const char *tenant, const char *id, double amount, sbx_mgr_reply *rp);
/* What a create holds: the cost (b->cost's rate) for its TTL, or for billing.hold_s of it */
double mgr_credit_hold_amount(sbx_mgr *m, json_t *cost, double ttl_s);
/* b ended: its hold settled with its actual cost, the rest released (once: a second call finds no
 * hold) */
void mgr_credit_settle(sbx_mgr *m, box *b);
/* at start: holds of sandboxes no longer known settled from their stored meters */
void mgr_credit_reconcile(sbx_mgr *m);
/* the reaper's check of a running sandbox: its hold raised as its usage nears it; true when it
 * has run past its hold with no balance for grace_s (to be expired: credits_exhausted) */
bool mgr_credit_check(sbx_mgr *m, box *b);
/* A deal's cost paid from the tenant's hold for ref (the rest released) or balance to account
 * `to`, as rows of kind (once: a second call finds them); a voided one's hold released */
void mgr_credit_pay(
        sbx_mgr *m, const char *tenant, const char *ref, const char *to, int64_t amount, const char *kind);
void mgr_credit_release(sbx_mgr *m, const char *tenant, const char *ref);
unsigned sbx_ops_credits(sbx_mgr *m, const sbx_caller *who, const char *tenant, sbx_mgr_reply *rp);
unsigned sbx_ops_credit_grant(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp);
unsigned sbx_ops_ledger(
        sbx_mgr *m, const sbx_caller *who, const char *cursor, const char *limit, sbx_mgr_reply *rp);

/* deals.c, deals-peer.c: deals between nodes */
typedef struct sbx_store_deal sbx_store_deal;
void mgr_deals_changed(void);
uint64_t mgr_deals_gen(void);
bool mgr_deals_wait(sbx_mgr *m, int ms);
char *mgr_canon(json_t *o); /* the form signatures are over: compact, keys sorted */
bool mgr_doc_sign(sbx_mgr *m, json_t *doc, const char *field);
bool mgr_doc_verify(json_t *doc, const char *field, const char *pk_b64);
void mgr_deal_id_of(json_t *quote, char id[static 40]);
bool mgr_deal_id_ok(const char *s);
json_t *mgr_deal_task_json(sbx_mgr *m, const sbx_store_deal *d);
json_t *mgr_result_signed_part(json_t *result);
json_t *mgr_decision_doc(const char *deal_id, bool accept, const char *reason, const char *result_sig);
unsigned mgr_deal_decided(
        sbx_mgr *m, const sbx_caller *who, sbx_store_deal *d, bool accept, json_t *body, sbx_mgr_reply *rp);
void mgr_deals_start(sbx_mgr *m);
void mgr_deals_expire(sbx_mgr *m);
/* billing.c: the billing events' exporter, with --billing-export or --billing-webhook */
void mgr_billing_start(sbx_mgr *m);
void mgr_deal_follow(sbx_mgr *m, const char *deal_id);
unsigned sbx_ops_offers(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
unsigned sbx_ops_quote(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp);
unsigned sbx_ops_deal_submit(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp);
unsigned sbx_ops_task(sbx_mgr *m, const sbx_caller *who, const char *id, const char *wait,
        const char *unlike, sbx_mgr_reply *rp);
unsigned sbx_ops_deals(
        sbx_mgr *m, const sbx_caller *who, const char *role, const char *state, sbx_mgr_reply *rp);
unsigned sbx_ops_deal_decide(
        sbx_mgr *m, const sbx_caller *who, const char *id, bool accept, json_t *body, sbx_mgr_reply *rp);
unsigned sbx_ops_peer_add(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp);
unsigned sbx_ops_peers(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
unsigned sbx_ops_peer_delete(sbx_mgr *m, const sbx_caller *who, const char *node_id, sbx_mgr_reply *rp);
unsigned sbx_ops_invoke(
        sbx_mgr *m, const sbx_caller *who, const char *node_id, json_t *body, sbx_mgr_reply *rp);
unsigned sbx_ops_verify(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp);

/* estimate.c: a new sandbox's cost on extension ext — the registry's rate then, at the profile's
 * CPU and memory limits; `estimated` for ttl_s, `actual` null until it ends — and what that rate
 * comes to for a number of seconds alive. */
json_t *mgr_cost_new(const char *ext, const sbx_config *cfg, double ttl_s);
/* route.c: profile (NULL: profile.default) resolved, and route checked, for a ranking without a
 * create (explain, estimate): NULL with rp filled (400; 422 unknown_profile). */
sbx_config *mgr_route_config(sbx_mgr *m, const char *profile, json_t *route, sbx_mgr_reply *rp);
double mgr_cost_for(json_t *cost, double seconds);
/* At its end (lifecycle-ops.c): b's actual cost, its seconds alive less those paused. Under
 * m->lock. */
void mgr_cost_settle_locked(box *b, int64_t now_ms);
/* b has ended (destroyed, or failed and unlinked): its last meters sample (if not taken), its
 * actual cost, its meters stored, its hold settled */
void mgr_box_ended(sbx_mgr *m, box *b);
/* The same for one whose provision failed: nothing charged */
void mgr_box_failed_ended(sbx_mgr *m, box *b);
bool mgr_settle_later(sbx_mgr *m, box *b);
bool mgr_audit_sync_later(sbx_mgr *m);
int mgr_settler_start(sbx_mgr *m);
void mgr_settler_stop(sbx_mgr *m);
void mgr_remove_dir(box *b);
void mgr_destroy_box(sbx_mgr *m, box *b, const char *reason);

/* pause.c: pause or resume b, claimed (busy) by the caller, for reason: 0, or an HTTP status with
 * rp filled (NULL: not kept). auto_resume: a paused b made with auto_resume is resumed (true) —
 * what an exec or a file operation on it does first. */
unsigned mgr_freeze_box(sbx_mgr *m, box *b, bool pause, const char *reason, sbx_mgr_reply *rp);
bool mgr_auto_resume(sbx_mgr *m, box *b);

/* snapshot.c: the store made whole again at start (what a killed snapshot left removed); a
 * snapshot's manifest for a create from it (NULL: none, or another tenant's), b marked as its
 * user; its files into b once b runs (0, or an HTTP status with rp filled). */
void mgr_snapshots_reconcile(sbx_mgr *m);
json_t *mgr_snapshot_take(sbx_mgr *m, const char *id, const char *tenant, box *b);
unsigned mgr_snapshot_restore(sbx_mgr *m, box *b, const json_t *man, sbx_mgr_reply *rp);
/* A snapshot named name of b, which the caller holds busy (the reaper: its tenant's, made by the
 * server): 201 with rp filled, or the error. */
unsigned mgr_snapshot_held(sbx_mgr *m, box *b, const char *name, sbx_mgr_reply *rp);

/* volumes.c: where the tenant's volume `name` is mounted on the host (mounted first when it is
 * not), into buf; NULL with *err (-ENOENT: no such volume). */
const char *mgr_volume_host(
        sbx_mgr *m, const char *tenant, const char *name, char *buf, size_t size, int *err);
/* volume-files.c: /v1/volumes/NAME/{files,dir,stat} (sub: "/files", …) decoded and answered. */
void mgr_volume_files_route(sbx_mgr *m, const char *method, const sbx_mgr_request *rq, const char *name,
        const char *sub, sbx_mgr_reply *rp);
/* volumes.c: the record of the volume whose id is id (any tenant's), NULL: none. */
json_t *mgr_volume_by_id(sbx_mgr *m, const char *id);
/* volumes.c: an event about a volume (type volume.*), in its tenant's stream. */
void mgr_volume_event(sbx_mgr *m, const json_t *vol, const char *type, json_t *data /* stolen */);

/* extensions.c: the registry — ext.local and `serve --registry DIR`'s files (0, or -EINVAL with
 * e naming file:line:column); its entries as GET /v1/extensions lists them (a copy, ext.local's
 * capabilities and health probed at most once a minute). */
int mgr_registry_load(const char *dir, sbx_error *e);
json_t *mgr_registry(sbx_mgr *m);

/* route.c: a create's (or explain's) route checked (400 naming the field); the ranking for cfg
 * under that route (the profile's when NULL): {strategy, chosen (null: nothing qualifies),
 * allow_fallbacks, constraints, candidates: [{extension, host, ok, why_not, cost_per_hour,
 * latency_ms}]}, NULL with rp filled (422) when the profile's route cannot be read; a provision's
 * latency on an extension, for lowest-latency. */
bool mgr_route_decode(json_t *r, const char *prefix, sbx_mgr_reply *rp);
json_t *mgr_route_rank(sbx_mgr *m, const sbx_config *cfg, json_t *req_route, sbx_mgr_reply *rp);
void mgr_route_observe(const char *extension, double ms);
/* Whether this exec is sandbox id's first (then ext says where it is held), and its time. */
bool mgr_route_first_exec(sbx_mgr *m, const char *id, const char *tenant, char ext[static 72]);
void mgr_route_observe_exec(const char *extension, double ms);

/* hosts.c: the heartbeat thread; the hosts an extension places on (copies, NULL: none). */
void *mgr_hosts_main(void *ud);
json_t *mgr_hosts_of(sbx_mgr *m, const char *extension);

/* webhooks.c: a create's webhook {url} (http or https, ≤ 2048 bytes); its subscription (the
 * sandbox's state events from its first, delivered by the webhooks thread); the subscriptions
 * kept in the state dir, read at start; the thread; the tenant's signing key ("whk_" + 32 hex). */
bool mgr_webhook_url_ok(const char *url);
void mgr_webhook_add(sbx_mgr *m, const char *sandbox, const char *tenant, const char *url);
void mgr_webhooks_load(sbx_mgr *m);
void *mgr_webhooks_main(void *ud);
bool mgr_webhook_key(sbx_mgr *m, const char *tenant, char ret[static 37]);

/* secrets.c: the secret name for tenant: the tenant's own, else (server_too: a profile names it)
 * the server's --secrets-dir; an O_RDONLY fd, where it was found in where (a description), or
 * -errno (-ENOENT: none has it). */
int mgr_secret_open(
        sbx_mgr *m, const char *tenant, const char *name, bool server_too, char *where, size_t size);

/* ports.c: 32 hex digits of HMAC(the server's key, text) (false: no key could be made); two
 * strings compared in constant time (for equal lengths). */
bool mgr_mac(sbx_mgr *m, const char *text, char ret[static 33]);
bool mgr_same(const char *a, const char *b);

/* node.c: this node's id ("node_" + 32 hex; NULL: no key could be made or read) */
const char *mgr_node_id(sbx_mgr *m);
bool mgr_node_id_ok(const char *s);
/* msg signed with this node's key (Ed25519): the signature in base64; false without a key */
bool mgr_node_sign(sbx_mgr *m, const void *msg, size_t len, char sig_b64[static 96]);
bool mgr_node_public_key(sbx_mgr *m, char pk_b64[static 64]);
/* A base64 Ed25519 public key: its 32 bytes (false: not one); the node id it names */
bool mgr_key_decode(const char *pk_b64, unsigned char pk[static 32]);
void mgr_key_node_id(const unsigned char pk[static 32], char id[static 40]);
/* sig_b64 is pk_b64's signature of msg */
bool mgr_sig_verify(const char *pk_b64, const void *msg, size_t len, const char *sig_b64);

/* extensions.c: one registry entry (a copy, with its auth and tls; NULL: none such); an
 * extension's health as its probe found it (taken) */
json_t *mgr_registry_entry(const char *id);
void mgr_registry_set_health(const char *id, json_t *health);

/* remote.c: sandboxes held by another node (ext.sandboxer). The id a front asks the back end for
 * (from the Idempotency-Key when there is one, so a retried create lands on the same sandbox);
 * b provisioned on ext with the create's body, meanwhile(ud) run once the request is on its way
 * (0 with the back end's fields in b, unsaved: the caller stores them with the ready state; or
 * -errno with why: the next candidate is tried); a request under /v1/sandboxes/ID for such a sandbox (false:
 * not one, or the front's own operation follows: a destroy, the TTL, the metadata); b's teardown there (what
 * cannot be told now is kept and told when it answers); the probes of the hosts thread; b at a restart. */
void mgr_remote_id(sbx_mgr *m, const char *tenant, const char *key, char *buf, size_t n);
int mgr_remote_provision(sbx_mgr *m, box *b, const char *ext, json_t *body, const char *idem_key,
        spawn_hook meanwhile, void *ud, char *why, size_t whysz);
bool mgr_remote_route(sbx_mgr *m, const char *method, const char *id, const char *sub,
        const sbx_mgr_request *rq, sbx_mgr_reply *rp);
void mgr_remote_teardown(sbx_mgr *m, box *b);
/* The supervisors' spawner (spawner.c): started with the server. mgr_spawner_spawn: 0 when it
 * answered (*ret_err: the spawn's errno); 1 when it was not asked (the caller spawns itself);
 * -errno when it was asked and did not answer (the create fails: it may have started one). */
int mgr_spawner_start(sbx_mgr *m);
void mgr_spawner_stop(sbx_mgr *m);
int mgr_spawner_spawn(sbx_mgr *m, const char *logpath, char *const argv[], int ready_fd, int secrets_fd,
        int config_fd, pid_t *ret_pid, int *ret_pidfd, int *ret_err);
void mgr_remote_probe(sbx_mgr *m);
/* The probes mgr_remote_probe() left under way, waited for (the hosts thread, as it ends). */
void mgr_remote_probe_stop(void);
/* A registered host stopped answering (two heartbeats in a row): the sandboxes placed on it
 * failed (host_lost); one answers again: what its extension could not be told is told now. */
void mgr_remote_host_lost(sbx_mgr *m, const char *host, const char *why);
void mgr_remote_host_back(sbx_mgr *m, const char *ext);
void mgr_remote_reconcile(sbx_mgr *m, box *b);

/* supervisors.c */
int mgr_sv_connect(const box *b);
int mgr_sv_send(int fd, json_t *req, const int *fds, int nfds);
json_t *mgr_sv_recv(int fd, int timeout_ms);
/* A connection to b's supervisor for an exec: one left open by an earlier exec (*reused), else
 * a new one. After a whole answer that says "keep", mgr_sv_keep() leaves it for the next. */
int mgr_sv_take(sbx_mgr *m, box *b, bool *reused);
void mgr_sv_keep(sbx_mgr *m, box *b, int fd);
/* Its supervisor is gone or going: the connections left open are closed. */
void mgr_sv_drop_idle(sbx_mgr *m, box *b);
json_t *mgr_sv_call(const box *b, const char *op, int timeout_ms);
/* The same with a request of the caller's (taken). */
json_t *mgr_sv_call_body(const box *b, json_t *req, int timeout_ms);
bool mgr_pidfd_dead(int pidfd);
bool mgr_secret_name_ok(const char *s);
json_t *mgr_secret_values(sbx_mgr *m, const char *name);
int mgr_sv_spawn_hooked(
        sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz, spawn_hook meanwhile, void *ud);
int mgr_sv_spawn(sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz);
void mgr_ingest_exec_reports(sbx_mgr *m, box *b);
void mgr_sv_stop(sbx_mgr *m, box *b);

/* create.c */
int mgr_box_set_config(box *b, const sbx_config *cfg);
int mgr_box_resolve(sbx_mgr *m, box *b, char *msg, size_t msgsz);
const char *mgr_quota_check(
        sbx_mgr *m, const char *tenant, double memory_mb, bool exec, char *msg, size_t sz);
json_t *mgr_stored_record(sbx_mgr *m, const char *id, const char *tenant);
void mgr_policy_seen(sbx_mgr *m, const sbx_policy *p);
unsigned mgr_provision(sbx_mgr *m, box *b, double budget_used, const char *reason, sbx_mgr_reply *rp);
void *mgr_filler_main(void *arg);
unsigned mgr_op_create(sbx_mgr *m, const sbx_mgr_request *rq, sbx_mgr_reply *rp);

/* skills.c */
bool mgr_valid_skill_id(const char *s);
/* For a create {skill: id}: the tenant's skill verified again (with the policy of now) into
 * sandbox_dir/workspace and its profile derived into sandbox_dir/profile.yaml; *ret_skill gets
 * {id, name, version, digest, key_id}. 0, or an HTTP status with rp filled (404, 422, 503). */
unsigned mgr_skill_prepare(sbx_mgr *m, const sbx_caller *who, const char *id, const char *sandbox_dir,
        json_t **ret_skill, sbx_mgr_reply *rp);
/* An exec of a skill's sandbox ended (rep: its report): an audit line naming the skill, the exit
 * and what the fences stopped (violations: kills, network attempts), the egress and service
 * counts. Nothing for another sandbox. */
void mgr_skill_audit_exec(sbx_mgr *m, const box *b, const char *exec_id, json_t *rep);
/* An exec's report in a skill's sandbox names the skill, as `skill run`'s does: report.skill =
 * {name, version, digest, key_id} (the supervisor does not know it). */
void mgr_skill_stamp_report(const box *b, json_t *rep);
/* At start: what an upload or a delete cut short left in the skills' directory goes. */
void mgr_skills_reconcile(sbx_mgr *m);

/* exec.c */
const char *mgr_no_answer(sbx_mgr *m, const char *gone);
json_t *mgr_sv_exec(
        sbx_mgr *m, box *b, json_t *req, const char *in_data, size_t in_len, int in_fd, exec_io *io);
unsigned mgr_op_exec(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, sbx_mgr_reply *rp);

/* pty.c */
typedef struct mgr_pty mgr_pty;
mgr_pty *mgr_pty_new(sbx_mgr *m, const box *b, const char *exec_id, unsigned cols, unsigned rows);
int mgr_pty_publish(mgr_pty *p, int master);
void mgr_pty_ended(mgr_pty *p, json_t *end /* stolen */);
mgr_pty *mgr_pty_ref(mgr_pty *p);
/* Let go of a subscription's handle: the subscriber stays until the terminal is freed. */
void mgr_pty_forget_handle(sbx_pty_sub_handle *h);
void mgr_pty_put(mgr_pty *p);
/* Its end ({status, exit_code, signal, report | error, errno?}, a reference), once it has ended
 * within timeout_ms; else NULL. */
json_t *mgr_pty_wait_end(mgr_pty *p, int timeout_ms);
unsigned mgr_op_pty_attach(
        sbx_mgr *m, const sbx_mgr_request *rq, const char *id, const char *exec_id, sbx_mgr_reply *rp);
unsigned mgr_op_pty_write(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, const char *exec_id,
        bool resize, sbx_mgr_reply *rp);
json_t *mgr_pty_describe(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id);

/* ports.c: POST /v1/sandboxes/ID/previews {port, expires_s?}, DELETE …/previews/TOKEN */
unsigned mgr_op_previews(
        sbx_mgr *m, const sbx_mgr_request *rq, const char *id, const char *token, sbx_mgr_reply *rp);

/* files.c */

/* surface.c */
void mgr_surfaces_free(sbx_mgr *m);

/* reaper.c */
void *mgr_reaper_main(void *arg);
void mgr_reconcile(sbx_mgr *m);
