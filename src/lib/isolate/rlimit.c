/* rlimit.c — rlimit plans: built in the parent, applied in the child with syscalls only. */
#include "rlimit.h"

#include <errno.h>

void sbx_rlimit_plan_init(sbx_rlimit_plan *plan) {
        *plan = (sbx_rlimit_plan){};
        (void) sbx_rlimit_plan_set(plan, RLIMIT_CORE, 0);
}

int sbx_rlimit_plan_set(sbx_rlimit_plan *plan, int resource, rlim_t value) {
        if (!plan || resource < 0 || resource >= RLIM_NLIMITS)
                return -EINVAL;
        for (size_t i = 0; i < plan->n; i++)
                if (plan->items[i].resource == resource) {
                        plan->items[i].lim = (struct rlimit){value, value};
                        return 0;
                }
        if (plan->n >= SBX_RLIMIT_PLAN_MAX)
                return -E2BIG;
        plan->items[plan->n++] = (sbx_rlimit_item){resource, {value, value}};
        return 0;
}

rlim_t sbx_rlimit_plan_get(const sbx_rlimit_plan *plan, int resource) {
        for (size_t i = 0; plan && i < plan->n; i++)
                if (plan->items[i].resource == resource)
                        return plan->items[i].lim.rlim_max;
        return RLIM_INFINITY;
}

int sbx_rlimit_plan_pids(sbx_rlimit_plan *plan, uint64_t pids, bool own_uid_in_fresh_userns) {
        if (pids == 0)
                return -EINVAL;
        if (!own_uid_in_fresh_userns)
                return -EOPNOTSUPP;
        return sbx_rlimit_plan_set(plan, RLIMIT_NPROC, (rlim_t) pids);
}

int sbx_rlimit_plan_memory(sbx_rlimit_plan *plan, uint64_t bytes, bool spawn_forbidden) {
        if (bytes == 0)
                return -EINVAL;
        if (!spawn_forbidden)
                return -EOPNOTSUPP;
        return sbx_rlimit_plan_set(plan, RLIMIT_AS, (rlim_t) bytes);
}

int sbx_rlimit_apply(const sbx_rlimit_plan *plan, int *ret_failed_resource) {
        for (size_t i = 0; plan && i < plan->n; i++) {
                const sbx_rlimit_item *it = &plan->items[i];
                struct rlimit cur, want = it->lim;
                if (getrlimit(it->resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
                        if (want.rlim_max == RLIM_INFINITY || want.rlim_max > cur.rlim_max)
                                want.rlim_max = cur.rlim_max;
                        if (want.rlim_cur == RLIM_INFINITY || want.rlim_cur > want.rlim_max)
                                want.rlim_cur = want.rlim_max;
                }
                if (setrlimit(it->resource, &want) < 0) {
                        if (ret_failed_resource)
                                *ret_failed_resource = it->resource;
                        return errno > 0 ? -errno : -EIO;
                }
        }
        return 0;
}
