/* plan.h — the run plan: what a run is, decided once from the configuration and the backend's
 * traits, before any backend-specific work. Who the command runs as, where the workspace is and
 * whether it may be used at all, which host paths are bound where (each resolved once), the
 * limits in bytes. A backend translates the plan into its own terms — mount operations,
 * bubblewrap's or podman's arguments, Docker's JSON, Landlock rules — and decides none of it
 * again. (What enforces each limit is the limit planner's: limits.c for the backends that run
 * our init, oci.c for the container engines.) */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/common.h"

typedef enum sbx_plan_flags {
        /* The sandbox has a mount view of its own, built from the plan's binds: the workspace
         * appears at workspace.mount (else /workspace). Without it, at its host path. */
        SBX_PLAN_MOUNT_VIEW = 1u << 0,
        /* As root, a writable workspace is idmapped to its owner (native): no ownership
         * refusal, but a workspace owned by root is refused (its writes would be root's). */
        SBX_PLAN_WS_IDMAP = 1u << 1,
        /* As root, the command's uid reaches the workspace by its host path itself (no mount
         * namespace to bring it in, or the tool binds it as that uid): checked here. */
        SBX_PLAN_WS_REACH = 1u << 2,
        /* The command runs as run_as whoever we are (a root engine runs it: docker). */
        SBX_PLAN_RUN_AS = 1u << 3,
        /* The test hook SANDBOXER_TEST_EXTRA_RO_BIND widens this backend's mount view
         * (-Dtest_hooks=true builds only; native). */
        SBX_PLAN_TEST_EXTRA_BIND = 1u << 4,
} sbx_plan_flags;

typedef struct sbx_plan_traits {
        const char *backend; /* its name, in errors */
        unsigned flags; /* sbx_plan_flags */
        /* The way out named when a writable workspace is refused because the command's uid does
         * not own it (backends without SBX_PLAN_WS_IDMAP). */
        const char *ws_owner_fix;
} sbx_plan_traits;

/* A host path resolved for a bind. */
typedef enum sbx_bind_kind {
        SBX_BIND_MISSING, /* absent or dangling: skipped, reported "missing" */
        SBX_BIND_SYMLINK, /* a symlink kept as one: link (its text), real (its target) */
        SBX_BIND_PATH, /* bind real */
} sbx_bind_kind;
typedef struct sbx_bind {
        sbx_bind_kind kind;
        char *real; /* owned; NULL when missing */
        char *link; /* owned; SBX_BIND_SYMLINK only */
        size_t link_len;
} sbx_bind;

typedef struct sbx_plan_bind {
        const char *host; /* as the profile names it (borrowed) */
        const char *target; /* where the sandbox sees it */
        bool rw;
        bool workspace; /* the workspace's own bind (last) */
        sbx_bind at; /* resolved once: missing, a symlink kept as one, or a real path */
} sbx_plan_bind;

typedef struct sbx_run_plan {
        /* Identity: the host uid and gid the command (or the tool that makes the sandbox) runs
         * as — run_as when we are root (or SBX_PLAN_RUN_AS), else the caller's. */
        bool root;
        uid_t uid;
        gid_t gid;

        /* The workspace: none, read-only or writable (SBX_ACCESS_NONE without one). */
        sbx_access ws;
        const char *ws_host; /* as given */
        char *ws_real; /* its real path */
        uid_t ws_owner;
        gid_t ws_group;
        const char *ws_target; /* workspace.mount, else /workspace */
        const char *ws_path; /* where the command finds it: ws_target in a mount view, else
                              * ws_host; NULL without a workspace */
        const char *ws_rw; /* ws_path when writable, else NULL (the writable set) */

        /* The mount view's binds (SBX_PLAN_MOUNT_VIEW only): filesystem.read sorted, parents
         * before children, then filesystem.write (rw), then the workspace. */
        sbx_plan_bind *binds;
        size_t n_binds;
        char **reads; /* the sorted read list the binds were resolved against */

        /* filesystem.home: a writable home at this path (the backends that claim the home
         * capability make it), HOME and the default cwd; NULL: none. */
        const char *home;

        /* Limits, sizes in bytes (0: none). */
        uint64_t memory_bytes, scratch_bytes, output_bytes;
        uint64_t pids;
        double cpus;
} sbx_run_plan;

/* Decide the plan for cfg on a backend with traits t: identity, the workspace (refused with the
 * cause and the fix when this backend cannot use it), binds, limits. 0 or -errno (*e says why).
 * *ret is zeroed first; sbx_run_plan_done() frees it whatever the outcome. */
int sbx_run_plan_make(const sbx_config *cfg, const sbx_plan_traits *t, sbx_run_plan *ret, sbx_error *e);
void sbx_run_plan_done(sbx_run_plan *p);

/* The working directory: the configuration's, else the home, else the workspace, else scratch. */
const char *sbx_run_plan_cwd(const sbx_config *cfg, const sbx_run_plan *p, const char *scratch);

/* A missing bind into the report ("missing"); true when b is missing (nothing to translate). */
bool sbx_plan_bind_missing(sbx_report *rep, const sbx_plan_bind *b);
