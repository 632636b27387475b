/* policy.h — the policy model: profiles (YAML recipes), the site policy file (defaults and
 * ceilings), and the effective configuration of one run with the source of every value.
 *
 * Rules (DESIGN.md): the policy file's mode limits are the defaults *and* the ceilings; a
 * profile may only narrow them; per-request overrides (flags) are refused unless the policy
 * file lists them in overrides.allowed. Unknown YAML keys are errors with file:line:column. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "basic/error.h"

typedef enum sbx_source {
        SBX_SRC_BUILTIN, /* compiled-in default */
        SBX_SRC_POLICY, /* the policy file */
        SBX_SRC_PROFILE, /* the profile (or one it extends) */
        SBX_SRC_FLAG, /* command line / request */
        _SBX_SRC_MAX,
        _SBX_SRC_INVALID = -EINVAL,
} sbx_source;
const char *sbx_source_to_string(sbx_source s);

typedef enum sbx_limit_id {
        SBX_LIMIT_TIMEOUT_S,
        SBX_LIMIT_BUDGET_S,
        SBX_LIMIT_CPUS,
        SBX_LIMIT_MEMORY_MB,
        SBX_LIMIT_PIDS,
        SBX_LIMIT_OUTPUT_MB,
        SBX_LIMIT_SCRATCH_MB,
        _SBX_LIMIT_MAX,
        _SBX_LIMIT_INVALID = -EINVAL,
} sbx_limit_id;
/* "timeout_s", "budget_s", ... exactly as in YAML. */
const char *sbx_limit_to_string(sbx_limit_id l);
sbx_limit_id sbx_limit_from_string(const char *s);
/* The per-request flag of a limit: "--timeout", "--budget", "--cpus", "--memory", "--pids",
 * "--output", "--scratch". */
const char *sbx_limit_to_flag(sbx_limit_id l);
sbx_limit_id sbx_limit_from_flag(const char *s);

typedef struct sbx_limits {
        double value[_SBX_LIMIT_MAX]; /* seconds, cpus, MiB or a count; meaningful if set[] */
        bool set[_SBX_LIMIT_MAX];
        sbx_source source[_SBX_LIMIT_MAX];
} sbx_limits;

/* A limit given in MiB (memory_mb, output_mb, scratch_mb) in bytes; scratch_mb rounded up to a
 * whole MiB (a tmpfs size=, an engine's --tmpfs). The one conversion every backend uses. */
static inline uint64_t sbx_limit_bytes(const sbx_limits *l, sbx_limit_id id) {
        double v = l->value[id];
        if (!(v > 0))
                return 0;
        if (id == SBX_LIMIT_SCRATCH_MB) {
                uint64_t w = (uint64_t) v;
                return ((double) w < v ? w + 1 : w) * 1048576u;
        }
        return (uint64_t) (v * 1048576.0);
}

typedef enum sbx_mode {
        SBX_MODE_BALANCED,
        SBX_MODE_STRICT,
        _SBX_MODE_MAX,
        _SBX_MODE_INVALID = -EINVAL,
} sbx_mode;
const char *sbx_mode_to_string(sbx_mode m);
sbx_mode sbx_mode_from_string(const char *s);

typedef enum sbx_level {
        SBX_LEVEL_POLICY, /* landlock backend: no namespaces */
        SBX_LEVEL_CONTAINER, /* namespaces */
        SBX_LEVEL_MICROVM,
        _SBX_LEVEL_MAX,
        _SBX_LEVEL_INVALID = -EINVAL,
} sbx_level;
const char *sbx_level_to_string(sbx_level l);
sbx_level sbx_level_from_string(const char *s);

typedef enum sbx_backend_id {
        SBX_BACKEND_AUTO,
        SBX_BACKEND_NATIVE,
        SBX_BACKEND_LANDLOCK,
        SBX_BACKEND_BWRAP,
        SBX_BACKEND_FIREJAIL,
        SBX_BACKEND_PODMAN,
        SBX_BACKEND_DOCKER,
        SBX_BACKEND_MICROVM,
        _SBX_BACKEND_MAX,
        _SBX_BACKEND_INVALID = -EINVAL,
} sbx_backend_id;
const char *sbx_backend_to_string(sbx_backend_id b);
sbx_backend_id sbx_backend_from_string(const char *s);

typedef enum sbx_access {
        SBX_ACCESS_NONE,
        SBX_ACCESS_RO,
        SBX_ACCESS_RW,
        _SBX_ACCESS_MAX,
        _SBX_ACCESS_INVALID = -EINVAL,
} sbx_access;
const char *sbx_access_to_string(sbx_access a);
sbx_access sbx_access_from_string(const char *s);

typedef enum sbx_on_violation {
        SBX_ON_VIOLATION_DENY,
        SBX_ON_VIOLATION_KILL,
        _SBX_ON_VIOLATION_MAX,
        _SBX_ON_VIOLATION_INVALID = -EINVAL,
} sbx_on_violation;
const char *sbx_on_violation_to_string(sbx_on_violation v);
sbx_on_violation sbx_on_violation_from_string(const char *s);

typedef enum sbx_cmd_mode {
        SBX_CMD_MODE_OFF,
        SBX_CMD_MODE_WARN,
        SBX_CMD_MODE_STRICT,
        _SBX_CMD_MODE_MAX,
        _SBX_CMD_MODE_INVALID = -EINVAL,
} sbx_cmd_mode;
const char *sbx_cmd_mode_to_string(sbx_cmd_mode m);
sbx_cmd_mode sbx_cmd_mode_from_string(const char *s);

typedef enum sbx_observe {
        SBX_OBSERVE_AUTO, /* observe where possible, say "unavailable" otherwise */
        SBX_OBSERVE_REQUIRED, /* setup error when the notification listener cannot be had */
        SBX_OBSERVE_OFF,
        _SBX_OBSERVE_MAX,
        _SBX_OBSERVE_INVALID = -EINVAL,
} sbx_observe;
const char *sbx_observe_to_string(sbx_observe o);
sbx_observe sbx_observe_from_string(const char *s);

/* Fields of a profile, for provenance: which ones a profile (or the file it extends) set. */
typedef enum sbx_field {
        SBX_F_LEVEL,
        SBX_F_MODE,
        SBX_F_BACKEND,
        SBX_F_NET_DEFAULT,
        SBX_F_NET_EGRESS,
        SBX_F_NET_LOOPBACK,
        SBX_F_WS_PATH,
        SBX_F_WS_MOUNT,
        SBX_F_WS_ACCESS,
        SBX_F_FS_READ,
        SBX_F_FS_WRITE,
        SBX_F_FS_EXEC,
        SBX_F_ALLOW_SPAWN,
        SBX_F_ALLOW_EXEC,
        SBX_F_COMMANDS,
        SBX_F_ON_VIOLATION,
        SBX_F_ENV,
        SBX_F_SECRETS,
        SBX_F_TTL,
        SBX_F_OBSERVE,
        SBX_F_HIGH_RISK,
        SBX_F_CWD,
        SBX_F_PLACEMENT,
        SBX_F_ROUTE,
        SBX_F_METADATA,
        SBX_F_FS_HOME,
        SBX_F_USER,
        SBX_F_LONG_LIVED,
        SBX_F_NET_SERVICES,
        _SBX_F_MAX,
        _SBX_F_INVALID = -EINVAL,
} sbx_field;
/* The YAML key path of a field: "isolation.level", "network.egress", "env", ... */
const char *sbx_field_to_string(sbx_field f);
sbx_field sbx_field_from_string(const char *s);

typedef struct sbx_env_var {
        char *name;
        char *value;
} sbx_env_var;

/* A parsed profile. Strings and vectors are owned by the profile. */
typedef struct sbx_profile {
        char *id;
        char *version;
        char *extends; /* NULL if none */
        char *source_file; /* file it was read from, or "builtin:<id>" */

        sbx_level level;
        sbx_mode mode;
        sbx_backend_id backend;

        bool net_allow; /* network.default: allow */
        char **egress; /* strv */
        /* network.egress_deny: refused as denied_by_rule unless an egress rule covers them (allow
         * beats deny, E2B's order); they never open anything, so the policy does not bound them */
        char **egress_deny;
        /* network.services: host services reached at 127.0.0.1:port inside, each
         * "name\ttarget\tport\tenv\tprotocol" (env "" none; protocol http or tcp) */
        char **net_services;
        bool loopback;

        char *ws_path; /* NULL = no workspace */
        char *ws_mount; /* default /workspace */
        sbx_access ws_access;

        char **fs_read; /* strv of absolute host paths */
        char **fs_write;
        char **fs_exec; /* NULL = anything readable may run */
        bool fs_exec_set; /* true when a list was given (possibly empty) */

        bool allow_spawn; /* false: no fork/vfork/clone but threads, and one execve */
        bool allow_exec; /* false: one execve (the command's), fork allowed */
        bool long_lived; /* a persistent sandbox's execs may be long-lived (PTYs, sessions, servers:
                          * no per-exec timeout, not counted in budget_s; docs/long-lived.md) */
        sbx_cmd_mode cmd_mode;
        char **cmd_allow;
        char **cmd_deny;

        sbx_limits limits; /* source[] is SBX_SRC_PROFILE for the set ones */
        sbx_on_violation on_violation;

        sbx_env_var *env; /* n_env entries */
        size_t n_env;
        char **secrets;

        double ttl_default_s, ttl_max_s, ttl_idle_s; /* 0 = unset / null */
        double ttl_paused_s; /* the longest a sandbox stays paused (then destroyed); 0 = unset (24 h) */
        char **placement_prefer, **placement_fallback;
        char *route_strategy;
        char **route_fallback;
        char *cost_class, *latency_class;

        sbx_observe observe;
        bool observe_fs_writes;
        bool high_risk;
        char *cwd; /* default working directory inside; NULL = home, else scratch */
        char *fs_home; /* filesystem.home: a writable home there (in scratch), HOME; NULL = none */
        char *user; /* the name of uid 1000 inside (default "sandbox") */
        char **route_constraints; /* route.constraints as "key=value" strv (lists joined by ',') */

        bool field_set[_SBX_F_MAX]; /* which fields this profile (or its parents) set */

        /* Internal to src/lib/policy: which leaf values were set (finer than field_set, for
         * merging along `extends`), and where `extends` was written (for chain errors). */
        uint64_t leaf_set_;
        unsigned extends_line_, extends_column_;
} sbx_profile;

sbx_profile *sbx_profile_free(sbx_profile *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_profile *, sbx_profile_free);

/* Exactly one execve in the sandbox (the command's): process.allow_spawn or allow_exec false. */
static inline bool sbx_profile_exec_once(const sbx_profile *p) {
        return !p->allow_spawn || !p->allow_exec;
}

/* Outbound connections go through the egress proxy: network.egress names some and the network is
 * otherwise denied (with network.default: allow there is nothing to proxy). */
static inline bool sbx_profile_egress_proxied(const sbx_profile *p) {
        return !p->net_allow && ((p->egress && p->egress[0]) || (p->egress_deny && p->egress_deny[0]) ||
                                        (p->net_services && p->net_services[0]));
}

/* Parse a profile from YAML text. `name` is used in error positions (a file path or
 * "builtin:ID"). Does not resolve `extends`. On error: -EINVAL and e->file/line/column. */
int sbx_profile_parse(const char *text, size_t len, const char *name, sbx_profile **ret, sbx_error *e);

/* Load a profile by NAME (a built-in id such as "profile.python", or a profile found in the
 * search path) or by FILE (anything containing '/' or ending in .yaml/.yml), then resolve its
 * `extends` chain (single inheritance, cycles refused, depth ≤ 8), child values winning. */
int sbx_profile_load(const char *name_or_file, sbx_profile **ret, sbx_error *e);

/* The directories searched for profiles by id, in order: each entry of
 * $SANDBOXER_PROFILE_PATH (colon separated), then /etc/sandboxer/profiles. A profile with id
 * ID is the file DIR/ID.yaml (or .yml); the first found wins, also over a built-in of that id. */
int sbx_profile_search_path(char ***ret_dirs);

/* Write a (merged) profile as YAML that sbx_profile_parse() accepts again, or as JSON. */
int sbx_profile_dump(const sbx_profile *p, bool json, FILE *f);

/* Built-in profiles: ids in a stable order, NULL-terminated; text by id (NULL if unknown). */
const char *const *sbx_builtin_profile_ids(void);
const char *sbx_builtin_profile_text(const char *id);

/* The site policy file. */
typedef struct sbx_policy {
        char *source_file; /* path, or "builtin" */
        char sha256[65]; /* hex digest of the file's bytes */
        int version;
        sbx_limits mode_limits[_SBX_MODE_MAX]; /* defaults and ceilings per mode */
        sbx_backend_id mode_backends[_SBX_MODE_MAX][_SBX_BACKEND_MAX]; /* order for auto */
        size_t n_mode_backends[_SBX_MODE_MAX];
        bool overrides_per_request;
        bool override_allowed[_SBX_LIMIT_MAX]; /* overrides.allowed */
        bool best_effort[_SBX_LIMIT_MAX]; /* enforce.best_effort */
        uint32_t run_as; /* host uid when running as root */
        bool strict_when_high_risk, strict_when_network_egress, strict_when_workspace_rw;
        /* strict.allow_emulation: the microvm backend may run its guest under QEMU's TCG where
         * there is no KVM (tests, CI); strict.kernel: the guest kernel (NULL: the Debian package's) */
        bool strict_allow_emulation;
        char *strict_kernel;
        char **write_allowed; /* filesystem.write_allowed */
        char **egress_allowed; /* network.egress_allowed */
        /* network.hosts: the egress proxy's own name map, "name=address" (the site's choice: a
         * name here passes whatever its address; tests give loopback servers real names) */
        char **net_hosts;
        char **services_allowed; /* network.services_allowed: service names or targets */
        bool allow_host_network; /* network.allow_host */
        bool long_lived_allowed; /* process.long_lived_allowed: execs of profiles with
                                  * process.long_lived may be long-lived (default false) */
        /* skills: the public key files a skill's signature must be by (trusted_keys), and whether
         * an unsigned skill is refused (require_signature, default true) */
        char **skill_keys;
        bool skill_unsigned_ok; /* require_signature: false */
        /* billing (serve's credits): enforce (default false), the site's currency (default USD),
         * hold_s (how much of a sandbox's time a hold covers, raised as it runs; 0: its TTL) and
         * grace_s (how long a sandbox runs past a hold that cannot be raised, default 30) */
        bool billing_enforce;
        char billing_currency[8];
        double billing_hold_s, billing_grace_s;
} sbx_policy;

sbx_policy *sbx_policy_free(sbx_policy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_policy *, sbx_policy_free);

int sbx_policy_parse(const char *text, size_t len, const char *name, sbx_policy **ret, sbx_error *e);
/* path NULL: /etc/sandboxer/policy.yaml if it exists, else the built-in default. */
int sbx_policy_load(const char *path, sbx_policy **ret, sbx_error *e);

/* An environment variable a profile, a flag or an API request may set: [A-Za-z_][A-Za-z0-9_]*, at
 * most 255 bytes, and not TMPDIR nor SANDBOXER_* (set by sandboxer itself). 0, or -EINVAL/-EPERM
 * with *ret_why saying which rule. */
int sbx_env_name_check(const char *name, const char **ret_why);
const char *sbx_builtin_policy_text(void);

/* Check that profile p only narrows policy pol for mode m: limits within the ceilings of
 * that mode, filesystem.write under filesystem.write_allowed, network.egress within
 * network.egress_allowed, network.default: allow only with network.allow_host. -EPERM with a
 * message naming the profile key, the policy key and the fix. */
int sbx_policy_check_profile(const sbx_policy *pol, const sbx_profile *p, sbx_mode m, sbx_error *e);
/* Whether an egress rule is within the policy's network.egress_allowed. */
bool sbx_policy_egress_allowed(const sbx_policy *pol, const char *rule);

/* Per-request values (flags). has_* say which were given. */
typedef struct sbx_request {
        const char *profile; /* NULL = profile.default */
        const char *policy_file; /* NULL = default lookup */
        /* The policy and the (merged) profile as a control plane resolved them
         * (sbx_config_encode()): used instead of loading profile and policy_file again. */
        const char *resolved;
        size_t resolved_len;
        sbx_backend_id backend; /* valid if has_backend */
        bool has_backend;
        sbx_mode mode;
        bool has_mode;
        const char *workspace; /* host dir */
        const char *cwd;
        char **env; /* NAME=VALUE strv from --env */
        double limit[_SBX_LIMIT_MAX];
        bool has_limit[_SBX_LIMIT_MAX];
} sbx_request;

/* The effective configuration of one run: every value resolved, with where it came from. */
typedef struct sbx_config {
        sbx_policy *policy; /* owned */
        sbx_profile *profile; /* owned; merged (extends resolved) */
        sbx_mode mode;
        sbx_source mode_source;
        sbx_backend_id backend; /* requested: AUTO or a name */
        sbx_source backend_source;
        sbx_limits limits; /* all set; source[] filled */
        char *workspace; /* host path or NULL */
        sbx_source workspace_source;
        char *cwd; /* inside path, NULL = HOME (scratch) */
        sbx_source cwd_source;
        sbx_env_var *env; /* final env additions (profile env + --env), owned */
        size_t n_env;
        sbx_source *env_source; /* n_env entries: builtin, profile or flag */
        bool strict_required; /* a policy trigger fired */
        char *strict_reason; /* which trigger, or NULL */
} sbx_config;

sbx_config *sbx_config_free(sbx_config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_config *, sbx_config_free);

/* Load policy and profile, check the profile narrows the policy, apply request overrides
 * (refused with -EPERM naming the policy key unless allowed), fill every limit from the
 * policy's mode defaults. Errors: -EINVAL (bad input), -EPERM (policy refusal), -ENOENT. */
int sbx_config_resolve(const sbx_request *req, sbx_config **ret, sbx_error *e);

/* Execs may be long-lived: the profile's process.long_lived and the policy file's
 * process.long_lived_allowed (docs/long-lived.md). */
static inline bool sbx_config_long_lived(const sbx_config *c) {
        return c && c->profile->long_lived && c->policy->long_lived_allowed;
}

/* c's policy and profile as bytes for sbx_request.resolved (this build's own format: for a
 * supervisor of the same build), and their SHA-256. 0 or -errno. */
int sbx_config_encode(const sbx_config *c, char **ret, size_t *ret_len, char ret_sha256[static 65]);

/* Print every effective value of c with where it came from (builtin, the policy file, the
 * profile id@version, a flag): aligned text, or one JSON object
 * {"mode":{"value":"balanced","source":"builtin"},"limits":{"timeout_s":{"value":45,...}}}.
 * Used by `sandboxer run --dry-run`. Returns 0 or -EIO when writing failed. */
int sbx_config_describe(const sbx_config *c, bool json, FILE *f);

/* Size/duration parsing (YAML values and flags): "1.5" seconds, "30s", "4h", "2d";
 * sizes as MiB numbers. Return -EINVAL on garbage, negative, NaN, overflow. */
int sbx_parse_duration(const char *s, double *ret_seconds);
int sbx_parse_number(const char *s, double *ret);
