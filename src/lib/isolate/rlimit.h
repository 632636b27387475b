/* rlimit.h — resource limits set in the sandbox child between clone and execve: a plan built in
 * the parent (plain numbers), applied with syscalls only. RLIMIT_CORE is 0 in every plan; the
 * others stand in for a sandbox-wide limit only where no cgroup enforces it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#define SBX_RLIMIT_PLAN_MAX 8

typedef struct sbx_rlimit_item {
        int resource;
        struct rlimit lim;
} sbx_rlimit_item;

typedef struct sbx_rlimit_plan {
        size_t n;
        sbx_rlimit_item items[SBX_RLIMIT_PLAN_MAX];
} sbx_rlimit_plan;

/* Parent side. Start a plan: RLIMIT_CORE 0 (no core dumps, always). */
void sbx_rlimit_plan_init(sbx_rlimit_plan *plan);
/* Set (or replace) `resource` to soft = hard = value. 0, -EINVAL, -E2BIG when the plan is full. */
int sbx_rlimit_plan_set(sbx_rlimit_plan *plan, int resource, rlim_t value);
/* The value planned for `resource`, or RLIM_INFINITY when the plan leaves it alone. */
rlim_t sbx_rlimit_plan_get(const sbx_rlimit_plan *plan, int resource);

/* pids without a pids cgroup: RLIMIT_NPROC = pids. The kernel counts the tasks (threads too) of
 * the real uid per user namespace, so this is the sandbox's own count only when the sandbox runs
 * under a uid of its own in a fresh user namespace (and without CAP_SYS_RESOURCE/CAP_SYS_ADMIN,
 * which bypass it). `own_uid_in_fresh_userns` states that; -EOPNOTSUPP when it is false (an
 * NPROC limit would count the caller's other processes too). */
int sbx_rlimit_plan_pids(sbx_rlimit_plan *plan, uint64_t pids, bool own_uid_in_fresh_userns);
/* memory without a memory cgroup: RLIMIT_AS = bytes, which bounds the sandbox only when it is a
 * single process (process.allow_spawn: false; threads share the address space). -EOPNOTSUPP when
 * spawning is allowed. */
int sbx_rlimit_plan_memory(sbx_rlimit_plan *plan, uint64_t bytes, bool spawn_forbidden);

/* Child side (between clone and execve: syscalls only, no malloc, no stdio). Sets every item,
 * never above the current hard limit (an unprivileged process cannot raise it; a lower one stays).
 * Returns 0, or -errno with the failing resource in *ret_failed_resource (may be NULL). */
int sbx_rlimit_apply(const sbx_rlimit_plan *plan, int *ret_failed_resource);
