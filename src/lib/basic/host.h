/* host.h — facts about the host kernel that reports and `sandboxer doctor` both state:
 * kernel release, Landlock ABI, cgroup layout, privilege. Read-only probes, no side effects. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

typedef enum sbx_cgroup_layout {
        SBX_CGROUP_NONE, /* nothing mounted at /sys/fs/cgroup */
        SBX_CGROUP_V1, /* legacy: per-controller v1 hierarchies only */
        SBX_CGROUP_V2, /* unified: /sys/fs/cgroup is cgroup2 */
        SBX_CGROUP_HYBRID, /* v1 controllers plus a cgroup2 mount at /sys/fs/cgroup/unified */
        _SBX_CGROUP_MAX,
        _SBX_CGROUP_INVALID = -EINVAL,
} sbx_cgroup_layout;
/* "none", "v1", "v2", "hybrid" — the values of the report's host.cgroup. */
const char *sbx_cgroup_layout_to_string(sbx_cgroup_layout l);

/* uname release into buf ("6.8.0-31-generic"). Returns 0 or -errno. */
int sbx_host_kernel_release(char *buf, size_t size);

/* The kernel's Landlock ABI version: >= 1 when Landlock is available, 0 when it is not
 * (ENOSYS: not built; EOPNOTSUPP: built but disabled at boot), -errno on other failures
 * (e.g. -EPERM from a seccomp filter of a container runtime). */
int sbx_host_landlock_abi(void);

/* Layout of /sys/fs/cgroup (never fails: what cannot be read counts as not mounted). */
sbx_cgroup_layout sbx_host_cgroup_layout(void);

/* True when sandboxer runs without root (effective uid != 0). */
bool sbx_host_unprivileged(void);

/* Kernel version as major*1000+minor (6.8 → 6008), 0 when it cannot be parsed. */
unsigned sbx_host_kernel_version(void);
