/* persist.h — persistent sandboxes: the sandbox's init runs with --serve and forks one process for
 * each exec, from inside (nothing joins with setns); the supervisor's loop watches the init and
 * the one seccomp listener and routes each notification to the exec it belongs to, while each
 * exec is supervised, timed, capped and reported by the same loop code as a one-shot run
 * (sbx_supervise on that process). DESIGN.md: run = create + exec + destroy, one path. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/common.h"
#include "sandboxer/sandboxer.h"

/* Called by sbx_backend_launch when io->persist is set, after the spawn: wires svp (the
 * sandbox-wide loop's parameters) to the sandbox — route, serving, extra fd — and keeps what
 * execs need. ctl_fd: a duplicate of our end of the init's fd 3 (owned by sb from here). */
int sbx_persist_attach(sbx_sandbox *sb, const sbx_config *cfg, sbx_report *rep, sbx_supervise_params *svp,
        sbx_cgroup *cg, int ctl_fd, pid_t init_pid, int init_pidfd, char *const *envp, const char *cwd,
        sbx_error *e);
/* The init reported it was serving: its end is the sandbox's end, not a set-up failure. */
bool sbx_persist_served(sbx_sandbox *sb);
/* The init is gone: refuse new execs, wait for those in flight to finish. */
void sbx_persist_detach(sbx_sandbox *sb);
/* A persistent sandbox ended (killed, destroyed): its execs have their reports; its own says it
 * ended (t0: the launch's start). */
void sbx_persist_report_end(sbx_report *rep, const sbx_supervise_result *res, uint64_t t0);

sbx_sandbox *sbx_sandbox_new_internal(const sbx_serve_hooks *hooks);
sbx_sandbox *sbx_sandbox_free_internal(sbx_sandbox *sb);
