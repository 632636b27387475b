/* backend.h — the backend interface: each backend probes its own availability (with a reason a
 * person can act on), declares its isolation level, and runs a configuration under the shared
 * supervisor and report. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "policy/policy.h"
#include "report/report.h"

/* A secret of the control plane's store, delivered as the file /run/secrets/NAME. */
typedef struct sbx_secret {
        char *name;
        char *value;
        size_t len;
} sbx_secret;

/* A volume of the control plane: a host directory (its filesystem's own: a loop-mounted image)
 * bound at target inside, read-only unless rw. */
typedef struct sbx_volume {
        char *host, *target;
        bool rw;
} sbx_volume;

typedef struct sbx_run_io {
        int in_fd, out_fd, err_fd; /* the caller's stdio for the command */
        bool handle_signals;
        bool keep_leftovers; /* killed runs' cgroups not swept at this start: the caller does it */
        bool tty; /* give the command a pseudo-terminal, relayed to these fds */
        struct sbx_sandbox *persist; /* a persistent sandbox: no command, execs on request */
        const sbx_secret *secrets; /* the profile's secrets, resolved (control plane) */
        size_t n_secrets;
        const sbx_volume *volumes; /* the control plane's volumes (native backend only) */
        size_t n_volumes;
} sbx_run_io;

/* What a backend declares it enforces, limits and observes (docs/backends.md has the table with
 * the reasons; tests/conformance/capabilities.tsv is the checked-in copy the conformance suite
 * holds each backend to). A declared "yes" is a claim the suite attacks; a "no" carries the
 * reason, and a profile that needs it is refused on that backend (exit 125, naming it). */
typedef enum sbx_cap {
        SBX_CAP_FS_READONLY, /* /, /etc, /usr and every read path read-only */
        SBX_CAP_FS_PRIVATE_VIEW, /* only the profile's read paths can be read */
        SBX_CAP_FS_WRITE_PATHS, /* filesystem.write: host paths made writable */
        SBX_CAP_FS_EXEC_RULES, /* filesystem.exec: only the listed paths may be executed */
        SBX_CAP_WORKSPACE_RO,
        SBX_CAP_WORKSPACE_RW,
        SBX_CAP_SCRATCH, /* a fresh private TMPDIR/HOME, gone after the run */
        SBX_CAP_HOME, /* filesystem.home: a writable home at a path of its own, HOME there */
        SBX_CAP_NET_DENY, /* no route out of the sandbox */
        SBX_CAP_NET_LOOPBACK, /* a loopback of the sandbox's own */
        SBX_CAP_NET_HOST, /* network.default: allow (the host network shared) */
        SBX_CAP_NET_EGRESS, /* network.egress: outbound only through the supervisor's proxy */
        SBX_CAP_PID_ISOLATION, /* host processes invisible and unsignalable */
        SBX_CAP_IPC_ISOLATION,
        SBX_CAP_HOSTNAME, /* a hostname of its own */
        SBX_CAP_IDENTITY, /* uid 1000 "sandbox" with a generated /etc/passwd and group */
        SBX_CAP_SECCOMP, /* the rule table (DESIGN: escape surface refused) */
        SBX_CAP_LANDLOCK, /* a Landlock domain as a second filesystem fence */
        SBX_CAP_CAPS_DROPPED, /* no capabilities in the sandbox */
        SBX_CAP_NO_NEW_PRIVS,
        SBX_CAP_NOT_HOST_ROOT, /* the command is never host root */
        SBX_CAP_SPAWN_FENCE, /* process.allow_spawn or allow_exec false (exactly one execve) */
        SBX_CAP_LIMIT_TIMEOUT,
        SBX_CAP_LIMIT_OUTPUT,
        SBX_CAP_LIMIT_MEMORY,
        SBX_CAP_LIMIT_PIDS,
        SBX_CAP_LIMIT_CPUS,
        SBX_CAP_LIMIT_SCRATCH,
        SBX_CAP_OBSERVE_NETWORK, /* NetworkAccessViolation recorded */
        SBX_CAP_OBSERVE_FS_WRITE, /* FilesystemWriteViolation recorded (observe.fs_writes) */
        SBX_CAP_OBSERVE_SYSCALL, /* SyscallViolation recorded */
        SBX_CAP_OBSERVE_PROCESS, /* ProcessLimitViolation recorded */
        SBX_CAP_OBSERVE_MEMORY, /* MemoryLimitViolation recorded */
        SBX_CAP_OBSERVE_TIMEOUT, /* TimeoutViolation recorded */
        SBX_CAP_OBSERVE_OUTPUT, /* OutputLimitViolation recorded */
        _SBX_CAP_MAX,
        _SBX_CAP_INVALID = -EINVAL,
} sbx_cap;

/* "fs.readonly", "limit.memory_mb", "observe.SyscallViolation", ... */
const char *sbx_cap_to_string(sbx_cap c);
sbx_cap sbx_cap_from_string(const char *s);

typedef struct sbx_cap_decl {
        bool yes;
        const char *how; /* yes: the mechanism; no: why not (and what to use instead) */
} sbx_cap_decl;

typedef struct sbx_backend {
        sbx_backend_id id;
        sbx_level level; /* the isolation level it provides */
        bool implemented;
        const sbx_cap_decl *caps; /* _SBX_CAP_MAX entries; NULL when not implemented (all no) */
        /* 0 if usable here; else -errno and a reason (what is missing and the fix). */
        int (*probe)(char *reason, size_t size);
        /* Optional: whether it can run under this site policy (the microvm backend: emulation
         * only where the policy allows it; its strict.kernel); the same return as probe. */
        int (*probe_policy)(const sbx_policy *pol, char *reason, size_t size);
        /* Run argv under cfg; fills the report (status, exit, usage, timings, mechanisms);
         * returns 0 when the command ran (whatever its outcome), -errno on a setup error
         * (report->status is then setup_error and *e says why). */
        int (*run)(const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep,
                sbx_error *e);
        /* Persistence, a capability: start a persistent sandbox (io->persist set, no command; its
         * init forks each exec on request) and supervise it until it is destroyed; the same
         * return as run. NULL for a backend that cannot hold one; persist_why then says why and
         * what to use instead. */
        int (*start)(const sbx_config *cfg, const sbx_run_io *io, sbx_report *rep, sbx_error *e);
        const char *persist_why;
} sbx_backend;

const sbx_backend *sbx_backend_get(sbx_backend_id id);

/* The declaration of c by b (never NULL: "not implemented" for a backend without a table). */
const sbx_cap_decl *sbx_backend_cap(const sbx_backend *b, sbx_cap c);
/* The first capability cfg needs that b lacks (a "no" the policy's enforce.best_effort does not
 * excuse), or _SBX_CAP_INVALID when b covers cfg. */
sbx_cap sbx_backend_caps_missing(const sbx_backend *b, const sbx_config *cfg);
/* The capabilities every backend of level l must declare "yes" to offer it (a bitmask of
 * 1ull << sbx_cap). */
uint64_t sbx_level_min_caps(sbx_level l);

/* Pick the backend for cfg: an explicit one must meet the profile's isolation level and be
 * available; "auto" walks the policy's list for the mode, skipping (and recording why) those
 * that are unavailable or below the level. *ret_note (owned) says what was chosen and why. */
int sbx_backend_select(const sbx_config *cfg, const sbx_backend **ret, char **ret_note, sbx_error *e);
/* The same, skipping the backends whose bit (1u << id) is in `exclude`, and naming `prior`
 * (why earlier choices fell through, may be NULL) in the note. */
int sbx_backend_select_excluding(const sbx_config *cfg, unsigned exclude, const char *prior,
        const sbx_backend **ret, char **ret_note, sbx_error *e);

/* True when a run failed because namespaces were refused at clone (EPERM inside a container's
 * seccomp profile, ENOSPC with user.max_user_namespaces=0): `auto` then tries the next backend. */
bool sbx_backend_error_is_ns_refusal(const sbx_error *e);

/* Platforms without Linux sandboxing (the build guards the Linux backends out): run the command
 * with no sandbox at all, only a timeout, recorded as backend "none". Used only on the explicit
 * request SANDBOXER_ALLOW_UNSANDBOXED=1. */
int sbx_backend_none_run(
        const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e);

extern const sbx_backend sbx_backend_native;
extern const sbx_backend sbx_backend_landlock;
extern const sbx_backend sbx_backend_bwrap;
extern const sbx_backend sbx_backend_firejail;
extern const sbx_backend sbx_backend_microvm;
/* The microvm backend's accelerator under policy pol: 1 KVM (a VM could be made), 0 QEMU's
 * emulation (no KVM, and the policy's strict.allow_emulation allows it), -EOPNOTSUPP neither;
 * why says which and why. */
int sbx_microvm_accel(const sbx_policy *pol, char *why, size_t size);
