/* sandboxes.h — the control plane's sandboxes: lifecycle, supervisors, execs, files, TTLs and the
 * reaper, quotas, events; the store is the record, the supervisors are the truth about what
 * runs. HTTP-agnostic: each operation takes the caller and the request's parts and answers an
 * HTTP status with a JSON body (jansson), so the transport stays in http.c.
 *
 * Each sandbox has its own supervisor process (`sandboxer supervise`), started in a session of
 * its own so that it outlives this server; the server talks to it over its unix socket and, when
 * it starts again, re-adopts every supervisor still alive (sbx_mgr_reconcile). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "daemon/store.h"
#include "sandboxer/sandboxer.h" /* SBX_TTY_MAX */

typedef struct sbx_mgr sbx_mgr;

typedef struct sbx_caller {
        char kind[4]; /* adm | agt | atm */
        char name[128];
        char tenant[128]; /* "default" when the actor has none */
} sbx_caller;

typedef struct sbx_mgr_options {
        const char *state_dir, *runtime_dir;
        const char *exe; /* this program, for `supervise` */
        const char *policy_file; /* passed to each supervisor; NULL = default lookup */
        const char *secrets_dir; /* profile `secrets` refs are files here; NULL = none */
        const char *audit_path; /* NULL = no audit */
        unsigned quota_sandboxes, quota_execs; /* per tenant; 0 = unlimited */
        double quota_memory_mb;
        double quota_snapshot_mb; /* the bytes of a tenant's snapshots (their stored size); 0 = unlimited */
        double quota_volume_mb; /* the sizes of a tenant's volumes; 0 = unlimited */
        const char *snapshot_dir; /* the snapshot store; NULL = STATE/snapshots */
        bool stop_sandboxes; /* destroy every sandbox when the server stops */
        /* A warm pool: this many sandboxes of each of warm_profiles (NULL: profile.default) kept
         * started and unassigned; a create takes one (no supervisor start on its path) and the
         * pool is refilled behind it. Profiles with secrets are never pooled. 0 = none. */
        unsigned warm_pool;
        char *const *warm_profiles;
        /* Host routing of ports (ports.h): PORT-ID.domain; NULL = by path only */
        const char *domain;
        /* webhooks may reach loopback, private and link-local addresses (else refused) */
        bool webhook_allow_private;
        /* the registry's extension files (extensions.c); NULL: ext.local only */
        const char *registry_dir;
        /* hosts and remote extensions are probed this often (seconds; 0: 10); two misses in a row
         * make one unhealthy, and a remote extension's sandboxes failed (host_lost) */
        double heartbeat_s;
        const char *public_url; /* this node's URL as others reach it (GET /v1/node), or NULL */
        /* credits enforced (serve --credits; the policy's billing.enforce too), and how often the
         * meters sample each sandbox's cgroup (seconds; 0: 15) */
        bool credits;
        double meter_interval_s;
        double quote_ttl_s; /* how long a quote this node signs holds (deals.c; 0: 60) */
        /* billing events (billing.c): appended to this NDJSON file and/or POSTed to this URL */
        const char *billing_export, *billing_webhook;
} sbx_mgr_options;

int sbx_mgr_new(sbx_store *store, const sbx_mgr_options *o, sbx_mgr **ret, sbx_error *e);
/* Reconcile the store with what runs: re-adopt live supervisors, fail and clean up the lost
 * ones, destroy orphans; then start the reaper. Before the server opens its sockets. */
int sbx_mgr_start(sbx_mgr *m, sbx_error *e);
/* The server stops: wake the threads that wait (event streams, execs waiting on a sandbox, which
 * let go of it: the exec goes on and a re-adopting server takes its report in). Before the HTTP
 * server stops, so that no request handler is left waiting on a sandbox. */
void sbx_mgr_stop(sbx_mgr *m);
/* sbx_mgr_stop(); wait for the detached threads; stop the reaper (and, with stop_sandboxes,
 * destroy every sandbox); free. */
sbx_mgr *sbx_mgr_free(sbx_mgr *m);
/* The same, saying whether it could: -EBUSY when threads were still running after 10 s, and the
 * manager was left allocated for them (so is what they use: the caller must not free the store). */
int sbx_mgr_close(sbx_mgr *m);

/* A request's parts. */
typedef struct sbx_mgr_request {
        const sbx_caller *who;
        const char *body;
        size_t len;
        const char *(*query)(void *ctx, const char *key); /* query string arguments */
        const char *(*header)(void *ctx, const char *key);
        void *ctx;
        const char *uri; /* the request's target as sent (path and query), or NULL */
} sbx_mgr_request;

/* An answer: status and a JSON body, or raw bytes (files), or a stream (stream_fd is read to its
 * end: the operation's thread writes to the other end). */
typedef struct sbx_mgr_reply {
        unsigned code;
        json_t *json;
        char *raw;
        size_t raw_len;
        const char *ctype; /* for raw and stream */
        int stream_fd;
        /* 101 Switching Protocols to a WebSocket (code 101, ws_accept its key): once upgraded, the
         * HTTP layer calls upgrade(upgrade_ud, fd, bytes read past the head) on a thread of its
         * own and closes the connection when it returns; upgrade_drop(upgrade_ud) instead when
         * the upgrade does not happen */
        void (*upgrade)(void *ud, int fd, const char *extra, size_t n);
        void (*upgrade_drop)(void *ud);
        void *upgrade_ud;
        char ws_accept[29];
} sbx_mgr_reply;

void sbx_mgr_reply_done(sbx_mgr_reply *r);

/* A sandbox id in host-name form and back: E2B's SDKs put the id in host names (PORT-ID.DOMAIN),
 * where '_' may not go (a TLS server refuses such a name in SNI), so the E2B surface hands out
 * "sbx-HEX" and every way an id comes in takes either. canon: "sbx-HEX" → "sbx_HEX" (anything else
 * as it is, cut to 31 bytes); hostform: "sbx_HEX" → "sbx-HEX". */
const char *sbx_id_canon(const char *s, char buf[static 32]);
const char *sbx_id_hostform(const char *id, char buf[static 32]);

/* Route METHOD PATH under /v1/sandboxes and /v1/events; false when the path is not ours. */
/* This thread serves a request (its reply is on the way) / no longer: what the reply need not
 * wait for is done beside it (settle.c). */
void sbx_mgr_request_begin(void);
void sbx_mgr_request_end(void);

bool sbx_mgr_route(
        sbx_mgr *m, const char *method, const char *path, const sbx_mgr_request *rq, sbx_mgr_reply *rp);

/* Prometheus lines for /metrics. */
void sbx_mgr_metrics(sbx_mgr *m, FILE *f);

/* ---- for the compat surfaces (src/daemon/compat/): the same operations, called in-process ---
 * The others are typed in ops.h. */

/* What a compat surface keeps with a sandbox, on its record (gone with it; not stored: a
 * restarted server has none): whom it was made for, the sandbox-wide environment (an object of
 * strings; env stolen, NULL keeps the one there) and an access token, made at the first set (64
 * hex digits; "" when the host had no randomness). 0, or -ENOENT when the sandbox is not live. */
int sbx_mgr_surface_set(
        sbx_mgr *m, const char *id, const sbx_caller *who, json_t *env, char ret_token[static 65]);
/* true with the caller and a copy of the environment (NULL when none) when the sandbox has them and
 * token (NULL: not checked) is its token. */
bool sbx_mgr_surface_get(
        sbx_mgr *m, const char *id, const char *token, sbx_caller *ret_who, json_t **ret_env);
/* A new access token for a sandbox that has one (what was signed with the old one stops
 * working): 0, or -ENOENT. */
int sbx_mgr_surface_rotate(sbx_mgr *m, const char *id, char ret_token[static 65]);
/* Like sbx_mgr_surface_get, but the token is judged by check() (a signature made with it, as
 * E2B's signed file URLs are): the sandbox id, or every sandbox when id is "" (its id is then
 * written there). Under the manager's lock: check must not call back into it. */
bool sbx_mgr_surface_verify(sbx_mgr *m, char id[static 32], bool (*check)(void *ud, const char *token),
        void *ud, sbx_caller *ret_who, json_t **ret_env);
/* A surface's own state for the manager's life (E2B's process table): made by make() at the
 * first call for name, dropped by drop() when the manager is freed; NULL when it could not be
 * made (or the manager's few slots are taken). */
void *sbx_mgr_surface_state(sbx_mgr *m, const char *name, void *(*make)(void), void (*drop)(void *));

typedef struct sbx_exec_stream_cb {
        void (*on_output)(void *userdata, int fd /* 1 stdout, 2 stderr */, const char *data, size_t n);
        /* last call: the exec's report (borrowed), or NULL and a sentence when it could not run */
        void (*on_end)(void *userdata, const json_t *report, const char *error);
        void *userdata;
} sbx_exec_stream_cb;

typedef struct sbx_exec_spec {
        char *const *argv;
        char *const *env; /* NAME=VALUE; may be NULL */
        const char *cwd; /* NULL: the sandbox's default */
        double timeout_s; /* 0: the profile's */
        int stdin_fd; /* -1: none; else read by the command to EOF (e.g. a pipe the caller writes);
                       * borrowed: the caller closes its copy after the call */
        /* both > 0: on a terminal (pty.c): its output comes to on_output as fd 1, its input and
         * size through sbx_mgr_pty_input/resize; stdin_fd must be -1 */
        unsigned tty_cols, tty_rows;
        /* 1: no per-exec timeout unless timeout_s asks one, not counted in budget_s
         * (docs/long-lived.md), refused unless the profile's process.long_lived allows it; -1: so
         * where the profile allows it, else bounded; 0: bounded */
        int long_lived;
} sbx_exec_spec;

/* Start an exec in the caller's sandbox: once it has started, its id is in exec_id and 0 is
 * returned; it then runs to its end on a thread of its own, calling cb (output as it comes,
 * then on_end). On refusal: the HTTP status, with *err the JSON error body (caller decrefs). */
unsigned sbx_mgr_exec_start(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id,
        const sbx_exec_spec *spec, const sbx_exec_stream_cb *cb, char exec_id[static 32], json_t **err);
/* Terminals (pty.c). A subscriber's calls come from the PTY's own thread, under its lock: they
 * must not call back into these functions (detach after on_end, from another thread). */
typedef struct sbx_pty_cb {
        void (*on_output)(void *userdata, const char *data, size_t n);
        /* once, when the output is drained and the exec has ended: {status, exit_code, signal,
         * report | error} (borrowed) */
        void (*on_end)(void *userdata, const json_t *end);
        void (*free_userdata)(void *userdata); /* when the subscription goes; may be NULL */
        void *userdata;
} sbx_pty_cb;
typedef struct sbx_pty_sub_handle sbx_pty_sub_handle;
/* {cols, rows} of a JSON object (the native tty and resize, E2B's pty.size): true with both
 * integers from 1 to SBX_TTY_MAX in *cols and *rows. */
bool sbx_tty_size(const json_t *o, unsigned *cols, unsigned *rows);
/* 0; or 404 (no such terminal exec for the caller), 410 (it has ended), 400, with *err. */
unsigned sbx_mgr_pty_input(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id,
        const void *data, size_t n, json_t **err);
unsigned sbx_mgr_pty_resize(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id,
        unsigned cols, unsigned rows, json_t **err);
/* Hear a terminal's output from now (replay: first the last 64 KiB of it) and its end; attached
 * after the end, the replay and the end come at once. */
unsigned sbx_mgr_pty_attach(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id,
        const sbx_pty_cb *cb, bool replay, sbx_pty_sub_handle **ret, json_t **err);
void sbx_mgr_pty_detach(sbx_pty_sub_handle *h);
/* A 101 attaching to the terminal exec_id in Daytona's PTY protocol (pty.c): key is the client's
 * Sec-WebSocket-Key, protocol the subprotocol to answer (or NULL). NULL on ENOMEM. */
struct MHD_Response;
struct MHD_Response *sbx_mgr_pty_daytona_upgrade(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id,
        const char *exec_id, const char *key, const char *protocol);

/* Send a signal to a running exec: its command's process group (SIGKILL: the whole tree). 0, or
 * -ESRCH when no such exec runs, -ENOENT when there is no such sandbox for the caller. */
int sbx_mgr_exec_signal(
        sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id, int sig);
