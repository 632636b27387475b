/* names.c — the string forms of the policy enums, exactly as they are spelled in YAML, in
 * reports and on the command line. */
#include <string.h>

#include "policy/policy.h"

#define DEFINE_STRING_TABLE(name, type, max, ...)                                                           \
        static const char *const name##_table[max] = {__VA_ARGS__};                                         \
        const char *name##_to_string(type v) {                                                              \
                if ((int) v < 0 || (int) v >= (int) (max))                                                  \
                        return NULL;                                                                        \
                return name##_table[v];                                                                     \
        }

#define DEFINE_STRING_TABLE_FROM(name, type, max)                                                           \
        type name##_from_string(const char *s) {                                                            \
                if (!s)                                                                                     \
                        return (type) -EINVAL;                                                              \
                for (int i = 0; i < (int) (max); i++)                                                       \
                        if (name##_table[i] && streq(name##_table[i], s))                                   \
                                return (type) i;                                                            \
                return (type) -EINVAL;                                                                      \
        }

DEFINE_STRING_TABLE(sbx_source, sbx_source, _SBX_SRC_MAX, [SBX_SRC_BUILTIN] = "builtin",
        [SBX_SRC_POLICY] = "policy", [SBX_SRC_PROFILE] = "profile", [SBX_SRC_FLAG] = "flag");

DEFINE_STRING_TABLE(sbx_limit, sbx_limit_id,
        _SBX_LIMIT_MAX, [SBX_LIMIT_TIMEOUT_S] = "timeout_s", [SBX_LIMIT_BUDGET_S] = "budget_s",
        [SBX_LIMIT_CPUS] = "cpus", [SBX_LIMIT_MEMORY_MB] = "memory_mb", [SBX_LIMIT_PIDS] = "pids",
        [SBX_LIMIT_OUTPUT_MB] = "output_mb", [SBX_LIMIT_SCRATCH_MB] = "scratch_mb");
DEFINE_STRING_TABLE_FROM(sbx_limit, sbx_limit_id, _SBX_LIMIT_MAX)

static const char *const limit_flag_table[_SBX_LIMIT_MAX] = {
        [SBX_LIMIT_TIMEOUT_S] = "--timeout",
        [SBX_LIMIT_BUDGET_S] = "--budget",
        [SBX_LIMIT_CPUS] = "--cpus",
        [SBX_LIMIT_MEMORY_MB] = "--memory",
        [SBX_LIMIT_PIDS] = "--pids",
        [SBX_LIMIT_OUTPUT_MB] = "--output",
        [SBX_LIMIT_SCRATCH_MB] = "--scratch",
};

const char *sbx_limit_to_flag(sbx_limit_id l) {
        if ((int) l < 0 || l >= _SBX_LIMIT_MAX)
                return NULL;
        return limit_flag_table[l];
}

sbx_limit_id sbx_limit_from_flag(const char *s) {
        if (!s)
                return _SBX_LIMIT_INVALID;
        for (int i = 0; i < _SBX_LIMIT_MAX; i++)
                if (streq(limit_flag_table[i], s))
                        return (sbx_limit_id) i;
        return _SBX_LIMIT_INVALID;
}

DEFINE_STRING_TABLE(
        sbx_mode, sbx_mode, _SBX_MODE_MAX, [SBX_MODE_BALANCED] = "balanced", [SBX_MODE_STRICT] = "strict");
DEFINE_STRING_TABLE_FROM(sbx_mode, sbx_mode, _SBX_MODE_MAX)

DEFINE_STRING_TABLE(sbx_level, sbx_level, _SBX_LEVEL_MAX, [SBX_LEVEL_POLICY] = "policy",
        [SBX_LEVEL_CONTAINER] = "container", [SBX_LEVEL_MICROVM] = "microvm");
DEFINE_STRING_TABLE_FROM(sbx_level, sbx_level, _SBX_LEVEL_MAX)

DEFINE_STRING_TABLE(sbx_backend, sbx_backend_id, _SBX_BACKEND_MAX, [SBX_BACKEND_AUTO] = "auto",
        [SBX_BACKEND_NATIVE] = "native", [SBX_BACKEND_LANDLOCK] = "landlock", [SBX_BACKEND_BWRAP] = "bwrap",
        [SBX_BACKEND_FIREJAIL] = "firejail", [SBX_BACKEND_PODMAN] = "podman",
        [SBX_BACKEND_DOCKER] = "docker", [SBX_BACKEND_MICROVM] = "microvm");
DEFINE_STRING_TABLE_FROM(sbx_backend, sbx_backend_id, _SBX_BACKEND_MAX)

DEFINE_STRING_TABLE(sbx_access, sbx_access,
        _SBX_ACCESS_MAX, [SBX_ACCESS_NONE] = "none", [SBX_ACCESS_RO] = "ro", [SBX_ACCESS_RW] = "rw");
DEFINE_STRING_TABLE_FROM(sbx_access, sbx_access, _SBX_ACCESS_MAX)

DEFINE_STRING_TABLE(sbx_on_violation, sbx_on_violation,
        _SBX_ON_VIOLATION_MAX, [SBX_ON_VIOLATION_DENY] = "deny", [SBX_ON_VIOLATION_KILL] = "kill");
DEFINE_STRING_TABLE_FROM(sbx_on_violation, sbx_on_violation, _SBX_ON_VIOLATION_MAX)

DEFINE_STRING_TABLE(sbx_cmd_mode, sbx_cmd_mode, _SBX_CMD_MODE_MAX, [SBX_CMD_MODE_OFF] = "off",
        [SBX_CMD_MODE_WARN] = "warn", [SBX_CMD_MODE_STRICT] = "strict");
DEFINE_STRING_TABLE_FROM(sbx_cmd_mode, sbx_cmd_mode, _SBX_CMD_MODE_MAX)

DEFINE_STRING_TABLE(sbx_observe, sbx_observe, _SBX_OBSERVE_MAX, [SBX_OBSERVE_AUTO] = "auto",
        [SBX_OBSERVE_REQUIRED] = "required", [SBX_OBSERVE_OFF] = "off");
DEFINE_STRING_TABLE_FROM(sbx_observe, sbx_observe, _SBX_OBSERVE_MAX)

DEFINE_STRING_TABLE(sbx_field, sbx_field, _SBX_F_MAX, [SBX_F_LEVEL] = "isolation.level",
        [SBX_F_MODE] = "isolation.mode", [SBX_F_BACKEND] = "isolation.backend",
        [SBX_F_NET_DEFAULT] = "network.default", [SBX_F_NET_EGRESS] = "network.egress",
        [SBX_F_NET_LOOPBACK] = "network.loopback", [SBX_F_WS_PATH] = "workspace.path",
        [SBX_F_WS_MOUNT] = "workspace.mount", [SBX_F_WS_ACCESS] = "workspace.access",
        [SBX_F_FS_READ] = "filesystem.read", [SBX_F_FS_WRITE] = "filesystem.write",
        [SBX_F_FS_EXEC] = "filesystem.exec", [SBX_F_ALLOW_SPAWN] = "process.allow_spawn",
        [SBX_F_ALLOW_EXEC] = "process.allow_exec", [SBX_F_COMMANDS] = "process.commands",
        [SBX_F_ON_VIOLATION] = "on_violation", [SBX_F_ENV] = "env", [SBX_F_SECRETS] = "secrets",
        [SBX_F_TTL] = "ttl", [SBX_F_OBSERVE] = "observe", [SBX_F_HIGH_RISK] = "high_risk",
        [SBX_F_CWD] = "cwd", [SBX_F_PLACEMENT] = "placement", [SBX_F_ROUTE] = "route",
        [SBX_F_METADATA] = "metadata", [SBX_F_FS_HOME] = "filesystem.home", [SBX_F_USER] = "user",
        [SBX_F_LONG_LIVED] = "process.long_lived", [SBX_F_NET_SERVICES] = "network.services");
DEFINE_STRING_TABLE_FROM(sbx_field, sbx_field, _SBX_F_MAX)
