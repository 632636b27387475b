/* classify.c — how a run ended, into the report: the one classification every backend uses. */
#include "backend/common.h"

#include <sys/wait.h>

/* What the supervisor saw, into the report: the command's end, then what the sandbox did to it
 * (DESIGN.md precedence), the limits hit with their evidence. The one classification of how a
 * run ended: run and exec (native, landlock, bwrap, firejail, persistent sandboxes) and the
 * container engines (sbx_oci_run), which say how they differ in o. */
int sbx_backend_classify_ex(const sbx_config *cfg, sbx_report *rep, const sbx_supervise_result *rp,
        const sbx_supervise_params *svpp, sbx_cgroup *cg, uint64_t t0, uint64_t ready_ns,
        const sbx_classify_opts *o, sbx_error *e) {
        static const sbx_classify_opts none = {0};
        const sbx_supervise_result res = *rp;
        const sbx_supervise_params svp = *svpp;
        double timeout = cfg->limits.value[SBX_LIMIT_TIMEOUT_S];
        double budget = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        if (!o)
                o = &none;
        rep->wall_ms = (int64_t) ((res.reaped_ns - t0) / 1000000);
        rep->exec_ms = res.started_ns ? (int64_t) ((res.ended_ns - res.started_ns) / 1000000) : 0;
        rep->teardown_ms = (int64_t) ((sbx_now_ns() - res.ended_ns) / 1000000);
        rep->cpu_user_ms = res.rusage.ru_utime.tv_sec * 1000 + res.rusage.ru_utime.tv_usec / 1000;
        rep->cpu_sys_ms = res.rusage.ru_stime.tv_sec * 1000 + res.rusage.ru_stime.tv_usec / 1000;
        rep->max_rss_kb = res.rusage.ru_maxrss;
        rep->stdout_bytes = res.stdout_bytes;
        rep->stderr_bytes = res.stderr_bytes;
        rep->output_truncated = res.output_limited;
        sbx_cgroup_stats cst = {0};
        /* what the report uses; the peak memory only as evidence of an OOM, below (all of them
         * where the cgroup's figures stand for the usage) */
        bool have_stats = cg && sbx_cgroup_stats_read_some(cg,
                                        o->container_usage ? SBX_CG_STAT_ALL
                                                           : SBX_CG_STAT_OOM | SBX_CG_STAT_PIDS |
                                                                     SBX_CG_STAT_PIDS_REFUSED,
                                        &cst) >= 0;
        if (have_stats && cst.pids_peak != SBX_CG_UNKNOWN)
                rep->pids_peak = (int64_t) cst.pids_peak;
        if (o->container_usage && have_stats && cst.cpu_usage_usec != SBX_CG_UNKNOWN) {
                /* the container's CPU time, all of it (user and system are not told apart) */
                rep->cpu_user_ms = (int64_t) (cst.cpu_usage_usec / 1000);
                rep->cpu_sys_ms = 0;
        }
        if (o->container_usage && have_stats && cst.memory_peak_bytes != SBX_CG_UNKNOWN)
                rep->max_rss_kb = (int64_t) (cst.memory_peak_bytes / 1024);

        /* Classify: what the command did, then what the sandbox did to it (precedence). */
        switch (res.end) {
        case SBX_SV_EXITED:
                rep->status = SBX_STATUS_EXITED;
                rep->has_exit_code = true;
                rep->exit_code = res.code;
                rep->cli_exit = res.code;
                break;
        case SBX_SV_SIGNALED:
                rep->status = SBX_STATUS_SIGNALED;
                rep->exit_signal = res.signal;
                rep->cli_exit = 128 + res.signal;
                break;
        case SBX_SV_EXEC_FAILED:
                rep->status = SBX_STATUS_EXITED;
                rep->has_exit_code = true;
                rep->exit_code = res.code;
                rep->cli_exit = res.code;
                (void) sbx_report_set_error(rep, "%s: %s: %s",
                        res.code == 127 ? "command not found" : "command not executable", res.text,
                        strerror(res.exec_errno));
                break;
        case SBX_SV_SETUP_FAILED:
        default:
                if (!res.killed) {
                        rep->status = SBX_STATUS_SETUP_ERROR;
                        rep->cli_exit = 125;
                        return sbx_error_set(e, res.exec_errno ? res.exec_errno : EIO, "sandbox init",
                                "sandbox setup failed inside the %s: %s%s%s",
                                o->container_usage ? "container" : "sandbox", res.text,
                                res.exec_errno ? ": " : "", res.exec_errno ? strerror(res.exec_errno) : "");
                }
                /* Killed by us before the command ended: the cause below says which. */
                rep->status = SBX_STATUS_SIGNALED;
                rep->exit_signal = SIGKILL;
                rep->cli_exit = 128 + SIGKILL;
                break;
        }
        if (res.killed) {
                rep->killed_by_sandbox = true;
                if (rep->has_exit_code && res.end != SBX_SV_EXITED)
                        rep->has_exit_code = false;
        }
        if (res.output_limited) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_OUTPUT_LIMIT);
                sbx_detail d[2] = {{.key = "limit_bytes", .num = (int64_t) svp.output_cap},
                        {.key = "mechanism", .str = (char *) "supervisor"}};
                (void) sbx_report_add_violation(rep, SBX_VIOLATION_OUTPUT_LIMIT, "killed",
                        (int64_t) ((res.ended_ns - ready_ns) / 1000000), NULL, d, 2);
                if (rep->cli_exit < 128)
                        rep->cli_exit = 128 + SIGKILL;
        }
        if (have_stats && cst.pids_refused != SBX_CG_UNKNOWN && cst.pids_refused > 0) {
                /* A refusal the command survives: recorded, status left to how it ended. */
                sbx_detail d[2] = {{.key = "limit", .num = (int64_t) cfg->limits.value[SBX_LIMIT_PIDS]},
                        {.key = "refused", .num = (int64_t) cst.pids_refused}};
                (void) sbx_report_add_violation(
                        rep, SBX_VIOLATION_PROCESS_LIMIT, "denied", rep->exec_ms, NULL, d, 2);
        }
        if (res.violation_killed) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_VIOLATION);
                rep->killed_by_sandbox = true;
        }
        rep->observation = res.listener ? "active" : res.observation_unavailable ? "unavailable" : "off";
        if (res.oom || o->engine_oom ||
                (have_stats && cst.oom_kills != SBX_CG_UNKNOWN && cst.oom_kills > 0)) {
                sbx_cgroup_stats peak;
                if (!o->container_usage && cg &&
                        sbx_cgroup_stats_read_some(cg, SBX_CG_STAT_MEMORY_PEAK, &peak) >= 0)
                        cst.memory_peak_bytes = peak.memory_peak_bytes;
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_MEMORY_LIMIT);
                /* Evidence from the cgroup itself: its OOM event (we end the sandbox on it, which
                 * can beat the kernel's own OOM kill, then oom_kills stays 0) and its counters;
                 * an engine's own word where there is an engine. */
                sbx_detail d[5] = {
                        {.key = "limit_mb", .num = (int64_t) cfg->limits.value[SBX_LIMIT_MEMORY_MB]},
                        {.key = "oom_kills",
                                .num = (int64_t) (have_stats && cst.oom_kills != SBX_CG_UNKNOWN
                                                          ? cst.oom_kills
                                                          : 0)},
                        {.key = "peak_bytes",
                                .num = (int64_t) (have_stats && cst.memory_peak_bytes != SBX_CG_UNKNOWN
                                                          ? cst.memory_peak_bytes
                                                          : 0)},
                        {.key = "oom_event", .num = res.oom ? 1 : 0},
                        {.key = "engine_oom_killed", .num = o->engine_oom ? 1 : 0}};
                (void) sbx_report_add_violation(
                        rep, SBX_VIOLATION_MEMORY_LIMIT, "killed", rep->exec_ms, NULL, d, o->engine ? 5 : 4);
                rep->killed_by_sandbox = true;
        }
        if (res.cancel_signal) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_CANCELLED);
                rep->cli_exit = 128 + res.cancel_signal;
        }
        if (res.timed_out) {
                rep->status = sbx_status_merge(rep->status, SBX_STATUS_TIMEOUT);
                /* the command's own clock (command_timeout_s, from its start), or the run's */
                double cmd = svp.command_timeout_s;
                int64_t started_ms = res.started_ns > svp.start_ns
                                             ? (int64_t) ((res.started_ns - svp.start_ns) / 1000000)
                                             : -1;
                bool by_cmd = cmd > 0 && started_ms >= 0 &&
                              res.timeout_at_ms - started_ms >= (int64_t) (cmd * 1000) - 50;
                sbx_detail d[2] = {
                        {.key = "limit_s_x1000", .num = (int64_t) ((by_cmd ? cmd : svp.timeout_s) * 1000)},
                        {.key = "limit",
                                .str = (char *) (by_cmd                           ? "timeout_s"
                                                 : cmd > 0                        ? "budget_s"
                                                 : o->timeout_key                 ? o->timeout_key
                                                 : budget > 0 && budget < timeout ? "budget_s"
                                                                                  : "timeout_s")}};
                (void) sbx_report_add_violation(
                        rep, SBX_VIOLATION_TIMEOUT, "killed", res.timeout_at_ms, NULL, d, 2);
                rep->cli_exit = 124;
        }
        return 0;
}

int sbx_backend_classify(const sbx_config *cfg, sbx_report *rep, const sbx_supervise_result *res,
        const sbx_supervise_params *svp, sbx_cgroup *cg, uint64_t t0, uint64_t ready_ns,
        const char *timeout_key, sbx_error *e) {
        sbx_classify_opts o = {.timeout_key = timeout_key};
        return sbx_backend_classify_ex(cfg, rep, res, svp, cg, t0, ready_ns, &o, e);
}
