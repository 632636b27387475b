/* ops.h — the control plane's operations, typed: what the native API (routes.c decodes its
 * requests into these) and the compat surfaces (src/daemon/compat/, which translate E2B's and
 * Daytona's calls) both call. No paths, no query strings, no JSON bodies to build and parse back:
 * a request structure in, a reply out.
 *
 * Each answers an HTTP status (also in rp->code) with rp filled: a JSON record or body (rp->json),
 * raw bytes (rp->raw, a file), or an error body {error: {code, message, field?}} (DESIGN.md); the
 * caller frees rp with sbx_mgr_reply_done(). Every operation acts for `who` (its tenant bounds
 * what it sees) and is audited as itself, whichever surface called it. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/sandboxes.h"

/* A sandbox's egress rules as an API request gives them: each list given (has_*) replaces the
 * profile's at create; PUT /v1/sandboxes/{id}/network replaces both (a list not given: none). */
typedef struct sbx_network_req {
        char **egress, **deny; /* strv, or NULL */
        bool has_egress, has_deny;
} sbx_network_req;

/* Decode {egress, egress_deny} (j NULL: nothing given); prefix names the fields in errors
 * ("network." at create, "" for the PUT's body). false with rp filled (400) otherwise. */
bool mgr_network_decode(json_t *j, const char *prefix, sbx_network_req *ret, sbx_mgr_reply *rp);
void sbx_network_req_done(sbx_network_req *n);

typedef struct sbx_create_req {
        const char *profile; /* NULL: profile.default */
        double ttl_s; /* with ttl_given; else the profile's ttl.default */
        bool ttl_given;
        json_t *consumer; /* {harness, session_id, run_id, job_id} strings, or NULL; borrowed */
        json_t *metadata; /* an object of strings, or NULL; borrowed */
        const char *idempotency_key; /* NULL: none */
        const char *skill; /* a skill id (POST /v1/skills): its profile and files; NULL: none */
        const sbx_network_req *network; /* NULL: the profile's rules */
        bool pause_on_expiry; /* on_expiry "pause": paused at expires_at, not destroyed */
        bool auto_resume; /* an exec or file operation resumes it when paused */
        json_t *volumes; /* [{name, mount, access: ro|rw}] (borrowed), or NULL */
        const char *snapshot; /* a snapshot id: its files in the new sandbox (its profile unless
                               * profile is given); NULL: none */
        /* The seeds' shapes (DESIGN.md, "Create, seeds' shapes"), kept in the record as given
         * (NULL: not given): scope (session|agent|shared), workspace {mode, access} (access
         * narrows the profile's), inputs (an object), setup_metadata {instructions?,
         * instructions_ref?, secret_refs?} — secret_refs (an array of names, borrowed) resolved
         * like a profile's secrets, at /run/secrets/NAME. */
        const char *scope;
        json_t *workspace, *inputs, *setup_metadata, *secret_refs;
        const char *webhook_url; /* webhook {url}: each state transition POSTed there (webhooks.c) */
        json_t *route; /* {strategy, fallback, allow_fallbacks, constraints} (route.c), or NULL: the
                        * profile's */
        json_t *body; /* the request as given (borrowed): what a remote extension is sent */
        /* the Sandboxer-Front header of a front that provisions here (remote.c): "node=NODE_ID;
         * sandbox=ID", the id it asks for; NULL: none */
        const char *front;
        /* a deal's run on its provider (deals.c): paid for by the deal, not held from credits */
        bool no_hold;
} sbx_create_req;

/* 201 with the record (200 with the same record when the key is replayed with the same
 * request); 400, 409, 422 (unknown profile, a secret unavailable), 429 (quota), 503. */
unsigned sbx_ops_create(sbx_mgr *m, const sbx_caller *who, const sbx_create_req *req, sbx_mgr_reply *rp);

/* Signed skills (DESIGN.md, "Signed skills"): a skill directory as a tar (ctype NULL or
 * application/x-tar), verified against the policy's trusted keys and kept for the caller's
 * tenant: 201 with its record {id, name, version, digest, key_id, entrypoint, files, tenant,
 * created_at}; 400 (not a tar, an entry that is no regular file or directory, or outside it),
 * 413 (over 64 MiB), 415, 422 (verification: the message names the file or key), 429 (256 skills
 * kept by the tenant: quota.skills). */
unsigned sbx_ops_skill_upload(sbx_mgr *m, const sbx_caller *who, const char *ctype, const void *data,
        size_t len, sbx_mgr_reply *rp);
/* 200 {items: [record]}, the tenant's, oldest first. */
unsigned sbx_ops_skill_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
/* 200 with the record; 404 (also another tenant's). Delete: 200 with the record it was. */
unsigned sbx_ops_skill_get(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
unsigned sbx_ops_skill_delete(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
/* Replace a running sandbox's egress rules: 200 with the record; 400, 403 (outside the policy),
 * 404, 409 (made without egress rules: it has no proxy to change), 410. */
unsigned sbx_ops_set_network(
        sbx_mgr *m, const sbx_caller *who, const char *id, const sbx_network_req *n, sbx_mgr_reply *rp);

/* 200 with the record (also a destroyed one's); 404. */
unsigned sbx_ops_get(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);

typedef struct sbx_list_req {
        const char *state; /* NULL: every state but destroyed */
        const char *profile, *harness, *session_id, *run_id, *job_id; /* NULL: any */
        const char *front; /* a front node's id: the sandboxes it asked this node for; NULL: any */
        unsigned limit; /* 1..500; 0: 100 */
        const char *cursor; /* next_cursor of the page before, or NULL */
} sbx_list_req;

/* 200 {items: [record], next_cursor}; 400 (a state that is none, a bad cursor or limit). */
unsigned sbx_ops_list(sbx_mgr *m, const sbx_caller *who, const sbx_list_req *req, sbx_mgr_reply *rp);

/* Extend the TTL by extend_s seconds (capped by the profile's ttl.max): 200 with the record;
 * 400, 404, 409, 410. */
unsigned sbx_ops_extend(
        sbx_mgr *m, const sbx_caller *who, const char *id, double extend_s, sbx_mgr_reply *rp);
/* Destroyed and provisioned again, the same id: 200 with the record; 404, 409, 410, 503. */
/* What the sandbox uses now: {sandbox_id, timestamp, cpu_count, cpu_used_pct (since the last
 * sample, or the start), cpu_s, memory_used_bytes, memory_total_bytes, disk_used_bytes,
 * disk_total_bytes (its scratch), pids}; -1 where the host does not tell. */
unsigned sbx_ops_metrics(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
/* Replace a sandbox's metadata (an object of at most 64 strings): 200 with the record. */
unsigned sbx_ops_set_metadata(
        sbx_mgr *m, const sbx_caller *who, const char *id, json_t *metadata, sbx_mgr_reply *rp);
unsigned sbx_ops_recreate(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
/* A sandbox's lifecycle settings (pause.c), each given one replaced: idle_s (0: none), on_idle
 * (pause: idle_s without an exec pauses it, else destroys it), paused_max_s (how long it stays
 * paused, 1 s to 30 days). 200 with the record; 400, 404, 409, 410. */
typedef struct sbx_lifecycle_req {
        double idle_s, paused_max_s;
        bool idle_pause;
        bool paused_snapshot; /* on_paused_max "snapshot" (else "destroy") */
        bool has_idle, has_on_idle, has_paused_max, has_on_paused_max;
} sbx_lifecycle_req;
unsigned sbx_ops_set_lifecycle(
        sbx_mgr *m, const sbx_caller *who, const char *id, const sbx_lifecycle_req *l, sbx_mgr_reply *rp);
/* Pause (its processes frozen, its clocks stopped) or resume a sandbox (pause.c): 200 with the
 * record (also when it was so already); 404, 409 (busy, another state, or `unsupported`: it
 * cannot freeze here, the message says why), 410, 503. */
unsigned sbx_ops_pause(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
unsigned sbx_ops_resume(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
/* Snapshots (snapshot.c): of a sandbox's scratch and home, frozen while read — 201
 * {id, name, tenant, sandbox_id, profile, created_at, size, stored, sha256, files, skipped,
 * consistent, memory}; 404, 409 (busy, `unsupported`: microvm), 413 (too many files), 429
 * (quota.snapshot_mb), 503, 507 (the store is full: nothing is kept, the sandbox runs on). List,
 * get and delete are the tenant's own (404 for another's); delete: 409 while a sandbox is being
 * made from it. */
/* Volumes (volumes.c): named per tenant, {id, name, tenant, size_mb, created_at}. Create: 201;
 * 400, 409 (the name is taken; `unsupported`: the server is not root), 429 (quota.volume_mb), 503,
 * 507. Delete: 409 while a live sandbox mounts it (naming it). */
bool sbx_volume_name_ok(const char *s); /* 1 to 63 of [A-Za-z0-9._-], not starting with . or - */
unsigned sbx_ops_volume_create(
        sbx_mgr *m, const sbx_caller *who, const char *name, double size_mb, sbx_mgr_reply *rp);
unsigned sbx_ops_volume_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
unsigned sbx_ops_volume_get(sbx_mgr *m, const sbx_caller *who, const char *name, sbx_mgr_reply *rp);
unsigned sbx_ops_volume_delete(sbx_mgr *m, const sbx_caller *who, const char *name, sbx_mgr_reply *rp);
/* Hosts (hosts.c): add (adm; body {id, extension, address, capacity?: {cpus, memory_mb,
 * sandboxes}, labels?}: 201 the host; 400, 403, 404 no such extension, 409 the id is taken),
 * list (200 {items}), delete (adm; 200 the host it was; 404). */
unsigned sbx_ops_host_add(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp);
unsigned sbx_ops_host_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
unsigned sbx_ops_host_delete(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
/* The registry of extensions (extensions.c): 200 {items: [{id, kind, description, url,
 * capabilities: {isolation, backends, regions, gpu, persistence, snapshot, pause}, pricing: {model,
 * per_second, per_creation, per_cpu_second, per_gib_second, currency}, health: {ok, checked_at,
 * latency_ms, reason?}}]}. */
/* GET /v1/node: {node_id, public_key, url}. */
unsigned sbx_ops_node(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
unsigned sbx_ops_extensions(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
/* POST /v1/route/explain (route.c): the ranking a create of profile (NULL: profile.default) with
 * route (NULL: the profile's) would make, without creating: 200 {strategy, chosen (null: nothing
 * qualifies, where create answers 422 no_route), allow_fallbacks, constraints, candidates}; 400,
 * 422 (unknown profile). */
unsigned sbx_ops_route_explain(
        sbx_mgr *m, const sbx_caller *who, const char *profile, json_t *route, sbx_mgr_reply *rp);
/* POST /v1/estimate (estimate.c): what a sandbox of profile (NULL: profile.default) would cost
 * for duration_s on each extension route would consider: 200 {profile, duration_s, items:
 * [{extension, host, cost, currency, breakdown: {creation, wall, cpu, memory}}], chosen}; 400
 * (a duration out of range, a bad route), 422 (unknown profile). */
unsigned sbx_ops_estimate(sbx_mgr *m, const sbx_caller *who, const char *profile, double duration_s,
        json_t *route, sbx_mgr_reply *rp);
/* The tenant's webhook signing key (webhooks.c): 200 {tenant, key}; a webhook's body is signed
 * with it (Sandboxer-Signature: sha256=HMAC-SHA-256(key, body)). */
unsigned sbx_ops_webhook_key(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
/* A tenant's own secrets (secrets.c): put (the value, at most 64 KiB; 201 new, 200 replaced:
 * {name, created_at}), list ({items: [{name, created_at}]}: never a value), delete (200 {name};
 * 404). Write-only: no call returns a value. */
unsigned sbx_ops_secret_put(sbx_mgr *m, const sbx_caller *who, const char *name, const void *data,
        size_t len, sbx_mgr_reply *rp);
unsigned sbx_ops_secret_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
unsigned sbx_ops_secret_delete(sbx_mgr *m, const sbx_caller *who, const char *name, sbx_mgr_reply *rp);
/* j written to path whole or not at all: a temporary file (0600, never through a symlink),
 * fsync'ed, renamed over it. 0 or -errno. */
int sbx_json_file_save(const char *path, json_t *j, size_t flags);
/* The server's state directory (what the compatibility surfaces keep of their own goes there). */
const char *sbx_ops_state_dir(sbx_mgr *m);
/* The token that lets E2B's volume content API reach volume vol (its record) alone: "vt_" and 32
 * hex digits of an HMAC by the server's key (false: no key); the volume whose id is id when token
 * is its token (its record; NULL otherwise). */
bool sbx_ops_volume_token(sbx_mgr *m, const json_t *vol, char ret[static 36]);
json_t *sbx_ops_volume_by_token(sbx_mgr *m, const char *id, const char *token);
/* A volume's files without a sandbox (volume-files.c), path relative to its root ("/" or "" is
 * the root): read (raw bytes), write (the bytes; missing parents made), stat and list (entries
 * {name, path, type, size, mode, uid, gid, atime, mtime, ctime, target?}; list: {items}), mkdir,
 * set uid/gid/mode, remove (a directory with what is in it). New entries belong to the owner of
 * the volume's root unless uid/gid say otherwise. A symlink is never followed (400 naming it).
 * 200 (write, mkdir: 201); 400, 404 (no volume, no such path), 409 (exists, not a directory, is a
 * directory), 413, 507 (the volume is full: nothing is left half-written). */
typedef enum {
        SBX_VOLF_READ,
        SBX_VOLF_WRITE,
        SBX_VOLF_STAT,
        SBX_VOLF_LIST,
        SBX_VOLF_MKDIR,
        SBX_VOLF_CHMETA,
        SBX_VOLF_REMOVE,
} sbx_volf_op;
typedef struct sbx_volf_req {
        sbx_volf_op op;
        const char *path;
        const void *data; /* write */
        size_t len;
        int depth; /* list: 1 (default) to 16 */
        bool parents; /* mkdir: make missing parents too (E2B's force) */
        long long uid, gid, mode; /* -1: not given */
} sbx_volf_req;
unsigned sbx_ops_volume_files(
        sbx_mgr *m, const sbx_caller *who, const char *name, const sbx_volf_req *r, sbx_mgr_reply *rp);
bool mgr_valid_snapshot_id(const char *s); /* snp_ and 16 hex digits */
unsigned sbx_ops_snapshot_create(
        sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *name, sbx_mgr_reply *rp);
unsigned sbx_ops_snapshot_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp);
unsigned sbx_ops_snapshot_get(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
unsigned sbx_ops_snapshot_delete(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
/* 200 with the final record (also when it was already destroyed); 404. */
unsigned sbx_ops_destroy(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp);
/* The same for a reason of the caller's (the record's, the audit line's): Daytona's "archived". */
unsigned sbx_ops_destroy_as(
        sbx_mgr *m, const sbx_caller *who, const char *id, const char *reason, sbx_mgr_reply *rp);

/* A file inside the sandbox, read by the sandbox itself (its fences apply): 200 with its bytes
 * in rp->raw; written: 200 {path, size}. 400, 403, 404, 409, 410, 413. */
unsigned sbx_ops_file_read(
        sbx_mgr *m, const sbx_caller *who, const char *id, const char *path, sbx_mgr_reply *rp);
unsigned sbx_ops_file_write(sbx_mgr *m, const sbx_caller *who, const char *id, const char *path,
        const void *data, size_t len, sbx_mgr_reply *rp);

/* The execs of a sandbox (exec_id NULL: those that ended and those running) or one, with its
 * report: 200; 404. */
unsigned sbx_ops_execs(
        sbx_mgr *m, const sbx_caller *who, const char *id, const char *exec_id, sbx_mgr_reply *rp);

/* An exec, started and streamed to callbacks: sbx_mgr_exec_start() and sbx_mgr_exec_signal()
 * in sandboxes.h. */
