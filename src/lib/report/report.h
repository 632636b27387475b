/* report.h — the report of one run/exec (schema sandboxer.report/v1, docs/report.schema.json):
 * filled by the supervisor and backends, serialised to JSON here. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "basic/macro.h"
#include "policy/policy.h"

typedef enum sbx_status {
        SBX_STATUS_EXITED,
        SBX_STATUS_SIGNALED,
        SBX_STATUS_TIMEOUT,
        SBX_STATUS_MEMORY_LIMIT,
        SBX_STATUS_PROCESS_LIMIT,
        SBX_STATUS_OUTPUT_LIMIT,
        SBX_STATUS_VIOLATION,
        SBX_STATUS_CANCELLED,
        SBX_STATUS_SETUP_ERROR,
        _SBX_STATUS_MAX,
        _SBX_STATUS_INVALID = -EINVAL,
} sbx_status;
const char *sbx_status_to_string(sbx_status s);
sbx_status sbx_status_from_string(const char *s);
/* Precedence of DESIGN.md: setup_error > timeout > memory_limit > process_limit >
 * output_limit > violation > signaled > exited (cancelled ranks just below setup_error).
 * Returns the status that wins. */
sbx_status sbx_status_merge(sbx_status a, sbx_status b);

typedef enum sbx_violation_kind {
        SBX_VIOLATION_NETWORK_ACCESS,
        SBX_VIOLATION_FILESYSTEM_WRITE,
        SBX_VIOLATION_TIMEOUT,
        SBX_VIOLATION_PROCESS_LIMIT,
        SBX_VIOLATION_SYSCALL,
        SBX_VIOLATION_MEMORY_LIMIT,
        SBX_VIOLATION_OUTPUT_LIMIT,
        SBX_VIOLATION_STRICT_MODE_UNAVAILABLE,
        SBX_VIOLATION_STRICT_MODE_REQUIRED,
        _SBX_VIOLATION_MAX,
        _SBX_VIOLATION_INVALID = -EINVAL,
} sbx_violation_kind;
/* "NetworkAccessViolation", ... exactly as DESIGN.md names them. */
const char *sbx_violation_kind_to_string(sbx_violation_kind k);
sbx_violation_kind sbx_violation_kind_from_string(const char *s);

typedef enum sbx_mechanism {
        SBX_MECH_NONE,
        SBX_MECH_CGROUP_V2,
        SBX_MECH_CGROUP_V1,
        SBX_MECH_RLIMIT,
        SBX_MECH_SECCOMP,
        SBX_MECH_SUPERVISOR,
        SBX_MECH_TMPFS,
        _SBX_MECH_MAX,
        _SBX_MECH_INVALID = -EINVAL,
} sbx_mechanism;
const char *sbx_mechanism_to_string(sbx_mechanism m);
sbx_mechanism sbx_mechanism_from_string(const char *s);

/* One detail key/value of a violation: string or integer. */
typedef struct sbx_detail {
        char key[32];
        char *str; /* owned; NULL when the value is an integer */
        int64_t num;
} sbx_detail;

#define SBX_VIOLATION_MAX_DETAILS 6
#define SBX_REPORT_MAX_VIOLATIONS 64 /* distinct events kept; more are counted in dropped */

typedef struct sbx_violation {
        sbx_violation_kind kind;
        const char *action; /* "denied" | "killed" | "refused" (static string) */
        int64_t first_at_ms, last_at_ms;
        uint64_t count;
        char syscall[32]; /* "" when not a syscall event */
        sbx_detail detail[SBX_VIOLATION_MAX_DETAILS];
        size_t n_detail;
} sbx_violation;

typedef struct sbx_mount_info {
        char *source; /* host path, "tmpfs", "proc", ... */
        char *target; /* inside */
        char *kind; /* "bind-ro" | "bind-rw" | "tmpfs" | "proc" | "dev" */
} sbx_mount_info;

/* One connection the egress proxy let through (the report's egress.connections). */
typedef struct sbx_report_conn {
        char *host; /* owned */
        unsigned port;
        const char *via; /* "connect" | "http" | "socks5" (static) */
        char *rule; /* owned: the allow rule that let it through */
        uint64_t bytes_up, bytes_down; /* out of the sandbox, into it */
        int64_t at_ms; /* when it ended, from the start */
        int64_t ms; /* how long it lasted */
        bool unreachable; /* allowed, but nothing answered there (or the name has no address) */
} sbx_report_conn;
#define SBX_REPORT_MAX_CONNS 1000 /* kept; more are counted in egress.connections_dropped */

/* One exchange with a host service (the report's services[].requests): an HTTP request, or a tcp
 * service's connection (method NULL). */
typedef struct sbx_report_request {
        const char *service; /* its name */
        char *method, *path; /* owned; NULL for a tcp connection */
        int status; /* the answer's status, 0 none */
        uint64_t bytes_up, bytes_down; /* to the service, from it */
        int64_t at_ms, ms;
} sbx_report_request;
#define SBX_REPORT_MAX_SERVICES 16
#define SBX_REPORT_MAX_REQUESTS 1000 /* kept per service; more are counted */
typedef struct sbx_report_service {
        char *name, *target; /* owned */
        bool tcp;
        uint64_t count, bytes_up, bytes_down, dropped;
        sbx_report_request *requests; /* owned */
        size_t n_requests;
} sbx_report_service;

typedef struct sbx_report {
        char id[48]; /* "run_" + 24 hex */
        sbx_status status;
        /* exit */
        bool has_exit_code;
        int exit_code;
        int exit_signal; /* 0 = null */
        bool killed_by_sandbox;
        int cli_exit; /* what `sandboxer run` returns (not serialised) */

        sbx_mode mode;
        const char *backend; /* "native", ... or NULL before a backend was chosen */
        const char *isolation; /* "container" | "policy" | "microvm" | NULL */
        char *backend_reason; /* why this backend (auto choice, skips), owned, may be NULL */

        sbx_violation violations[SBX_REPORT_MAX_VIOLATIONS];
        size_t n_violations;
        uint64_t violations_dropped;

        /* config */
        const sbx_config *config; /* borrowed; may be NULL on early setup errors */
        sbx_mechanism limit_mechanism[_SBX_LIMIT_MAX];
        sbx_mount_info *mounts; /* owned */
        size_t n_mounts;
        const char *observation; /* "active" | "unavailable" | "off" */
        /* Where the evidence of refused file writes comes from: "landlock_audit" (the kernel's
         * own Landlock denial records), "notify" (observe.fs_writes), "none" (refused, not
         * recorded); NULL before a backend decided. The note says why (what is missing). */
        const char *fs_write_evidence;
        char fs_write_note[512];
        /* The fences in force, by name ("namespaces", "landlock", "seccomp", "capabilities",
         * "no_new_privs", "user"), each a short statement of what was enforced. */
#define SBX_REPORT_MAX_FENCES 12
        sbx_detail fences[SBX_REPORT_MAX_FENCES];
        size_t n_fences;

        /* The microvm backend's guest (config.microvm; accel NULL: not a microvm run). */
        struct {
                const char *accel; /* "kvm" | "tcg" */
                int vcpus;
                int64_t memory_mb; /* the guest's RAM */
                char guest_kernel[128]; /* its release */
                int64_t boot_ms; /* qemu started -> the guest agent ready */
        } microvm;

        /* usage */
        int64_t wall_ms, cpu_user_ms, cpu_sys_ms, max_rss_kb, pids_peak;
        uint64_t stdout_bytes, stderr_bytes;
        bool output_truncated;

        /* timings */
        int64_t setup_ms, exec_ms, teardown_ms;

        /* host */
        char kernel[128];
        int landlock_abi; /* -1 unknown, 0 none */
        const char *cgroup; /* "v1" | "v2" | "hybrid" | "none" */
        bool unprivileged;

        char *error; /* owned; NULL = null */
        /* The egress proxy (network.egress): egress_proxy NULL when none ran ("egress": null). */
        const char *egress_proxy; /* "127.0.0.1:PORT": egress_proxy_addr, or static */
        char egress_proxy_addr[24];
        uint64_t egress_allowed, egress_refused, egress_bytes_up, egress_bytes_down;
        sbx_report_conn *egress_conns; /* owned */
        size_t n_egress_conns;
        uint64_t egress_conns_dropped;
        /* A signed skill's run (`sandboxer skill run`): skill_name[0] 0 when none ("skill": null). */
        char skill_name[65], skill_version[65], skill_digest[65], skill_key_id[17];
        /* network.services: what went through each (services: [] when none) */
        sbx_report_service services[SBX_REPORT_MAX_SERVICES];
        size_t n_services;
} sbx_report;

/* Fresh report with a new random id, status exited, host facts filled. */
int sbx_report_new(sbx_report **ret);
sbx_report *sbx_report_free(sbx_report *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_report *, sbx_report_free);

/* Record a violation, merging into an identical earlier one (same kind, action, syscall,
 * details): count++ and first/last_at_ms widened. Details are key/value pairs (a string when
 * .str is non-NULL, else the integer .num); the strings are copied. action NULL = "denied"
 * (otherwise it must be a static string); syscall NULL or "" = not a syscall event. Beyond
 * SBX_REPORT_MAX_VIOLATIONS distinct events, new ones only increment violations_dropped.
 * Returns 1 when a new entry was added, 0 when merged or dropped, -EINVAL / -E2BIG (more
 * than SBX_VIOLATION_MAX_DETAILS details) / -ENOMEM. */
int sbx_report_add_violation(sbx_report *r, sbx_violation_kind kind, const char *action, int64_t at_ms,
        const char *syscall, const sbx_detail *details, size_t n_details);
/* Keep one allowed connection (strings copied): beyond SBX_REPORT_MAX_CONNS only counted.
 * Counts it in egress_allowed and its bytes in the totals. 0 or -ENOMEM. */
int sbx_report_add_conn(sbx_report *r, const sbx_report_conn *c);
/* Name a service (before its requests; copied). -E2BIG past SBX_REPORT_MAX_SERVICES. */
int sbx_report_add_service(sbx_report *r, const char *name, const char *target, bool tcp);
/* One exchange with the service rq->service (named before; strings copied): counted, its bytes
 * added, kept among the first SBX_REPORT_MAX_REQUESTS. -ENOENT for an unknown service. */
int sbx_report_add_request(sbx_report *r, const sbx_report_request *rq);
/* Replace the error message (copied). fmt NULL clears it. */
int sbx_report_set_error(sbx_report *r, const char *fmt, ...) _printf_(2, 3);
/* Replace backend_reason (copied). fmt NULL clears it. */
int sbx_report_set_backend_reason(sbx_report *r, const char *fmt, ...) _printf_(2, 3);
/* Raise r->status to `s` if it wins under the precedence above (sbx_status_merge). */
void sbx_report_merge_status(sbx_report *r, sbx_status s);
/* A persistent sandbox's exec reports: what the sandbox's set-up recorded (mode, backend,
 * config, mechanisms, mounts, fences, observation) copied from src. */
int sbx_report_copy_setup(sbx_report *dst, const sbx_report *src);
/* Copies all three strings. */
int sbx_report_add_mount(sbx_report *r, const char *source, const char *target, const char *kind);
/* Forget what a backend attempt recorded (mounts, fences, mechanisms, backend), before the next
 * backend runs the same request. */
void sbx_report_reset_run(sbx_report *r);
/* Record a fence (name → description, copied; replaces an earlier one of the same name). */
int sbx_report_set_fence(sbx_report *r, const char *name, const char *fmt, ...) _printf_(3, 4);
/* The egress proxy's address ("127.0.0.1:PORT"), copied into the report: egress is no longer null. */
void sbx_report_set_egress_proxy(sbx_report *r, const char *addr);

/* Serialise as one JSON document (pretty when `pretty`), newline-terminated. */
int sbx_report_to_json(const sbx_report *r, bool pretty, char **ret);
/* Write the pretty JSON to fd (all of it, retrying short writes and EINTR). */
int sbx_report_write_fd(const sbx_report *r, int fd);
/* Create/truncate path (mode 0644 before umask) and write the pretty JSON to it. */
int sbx_report_write_file(const sbx_report *r, const char *path);
