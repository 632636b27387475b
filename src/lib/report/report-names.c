/* report-names.c — string forms of the report enums (status, violation kinds, mechanisms),
 * exactly as docs/report.schema.json spells them, and the status precedence. */
#include <string.h>

#include "report/report.h"

static const char *const status_table[_SBX_STATUS_MAX] = {
        [SBX_STATUS_EXITED] = "exited",
        [SBX_STATUS_SIGNALED] = "signaled",
        [SBX_STATUS_TIMEOUT] = "timeout",
        [SBX_STATUS_MEMORY_LIMIT] = "memory_limit",
        [SBX_STATUS_PROCESS_LIMIT] = "process_limit",
        [SBX_STATUS_OUTPUT_LIMIT] = "output_limit",
        [SBX_STATUS_VIOLATION] = "violation",
        [SBX_STATUS_CANCELLED] = "cancelled",
        [SBX_STATUS_SETUP_ERROR] = "setup_error",
};

static const char *const violation_kind_table[_SBX_VIOLATION_MAX] = {
        [SBX_VIOLATION_NETWORK_ACCESS] = "NetworkAccessViolation",
        [SBX_VIOLATION_FILESYSTEM_WRITE] = "FilesystemWriteViolation",
        [SBX_VIOLATION_TIMEOUT] = "TimeoutViolation",
        [SBX_VIOLATION_PROCESS_LIMIT] = "ProcessLimitViolation",
        [SBX_VIOLATION_SYSCALL] = "SyscallViolation",
        [SBX_VIOLATION_MEMORY_LIMIT] = "MemoryLimitViolation",
        [SBX_VIOLATION_OUTPUT_LIMIT] = "OutputLimitViolation",
        [SBX_VIOLATION_STRICT_MODE_UNAVAILABLE] = "StrictModeUnavailable",
        [SBX_VIOLATION_STRICT_MODE_REQUIRED] = "StrictModeRequired",
};

static const char *const mechanism_table[_SBX_MECH_MAX] = {
        [SBX_MECH_NONE] = "none",
        [SBX_MECH_CGROUP_V2] = "cgroup_v2",
        [SBX_MECH_CGROUP_V1] = "cgroup_v1",
        [SBX_MECH_RLIMIT] = "rlimit",
        [SBX_MECH_SECCOMP] = "seccomp",
        [SBX_MECH_SUPERVISOR] = "supervisor",
        [SBX_MECH_TMPFS] = "tmpfs",
};

static const char *lookup(const char *const *table, int max, int v) {
        if (v < 0 || v >= max)
                return NULL;
        return table[v];
}

static int reverse_lookup(const char *const *table, int max, const char *s) {
        if (!s)
                return -EINVAL;
        for (int i = 0; i < max; i++)
                if (table[i] && streq(table[i], s))
                        return i;
        return -EINVAL;
}

const char *sbx_status_to_string(sbx_status s) {
        return lookup(status_table, _SBX_STATUS_MAX, s);
}

sbx_status sbx_status_from_string(const char *s) {
        return reverse_lookup(status_table, _SBX_STATUS_MAX, s);
}

const char *sbx_violation_kind_to_string(sbx_violation_kind k) {
        return lookup(violation_kind_table, _SBX_VIOLATION_MAX, k);
}

sbx_violation_kind sbx_violation_kind_from_string(const char *s) {
        return reverse_lookup(violation_kind_table, _SBX_VIOLATION_MAX, s);
}

const char *sbx_mechanism_to_string(sbx_mechanism m) {
        return lookup(mechanism_table, _SBX_MECH_MAX, m);
}

sbx_mechanism sbx_mechanism_from_string(const char *s) {
        return reverse_lookup(mechanism_table, _SBX_MECH_MAX, s);
}

/* Higher wins. cancelled ranks just below setup_error: a cancelled run's end is the
 * cancellation, whatever the limits were doing at that moment. */
static int status_rank(sbx_status s) {
        switch (s) {
        case SBX_STATUS_EXITED:
                return 1;
        case SBX_STATUS_SIGNALED:
                return 2;
        case SBX_STATUS_VIOLATION:
                return 3;
        case SBX_STATUS_OUTPUT_LIMIT:
                return 4;
        case SBX_STATUS_PROCESS_LIMIT:
                return 5;
        case SBX_STATUS_MEMORY_LIMIT:
                return 6;
        case SBX_STATUS_TIMEOUT:
                return 7;
        case SBX_STATUS_CANCELLED:
                return 8;
        case SBX_STATUS_SETUP_ERROR:
                return 9;
        case _SBX_STATUS_MAX:
        case _SBX_STATUS_INVALID:
        default:
                return 0;
        }
}

sbx_status sbx_status_merge(sbx_status a, sbx_status b) {
        return status_rank(b) > status_rank(a) ? b : a;
}
