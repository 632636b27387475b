/* backend.h — the backend interface: each backend probes its own availability (with a reason a
 * person can act on), declares its isolation level, and runs a configuration under the shared
 * supervisor and report. */
#pragma once

#include <stdbool.h>

#include "basic/error.h"
#include "policy/policy.h"
#include "report/report.h"

typedef struct sbx_run_io {
        int in_fd, out_fd, err_fd;  /* the caller's stdio for the command */
        bool handle_signals;
} sbx_run_io;

typedef struct sbx_backend {
        sbx_backend_id id;
        sbx_level level;            /* the isolation level it provides */
        bool implemented;
        /* 0 if usable here; else -errno and a reason (what is missing and the fix). */
        int (*probe)(char *reason, size_t size);
        /* Run argv under cfg; fills the report (status, exit, usage, timings, mechanisms);
         * returns 0 when the command ran (whatever its outcome), -errno on a setup error
         * (report->status is then setup_error and *e says why). */
        int (*run)(const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e);
} sbx_backend;

const sbx_backend *sbx_backend_get(sbx_backend_id id);

/* Pick the backend for cfg: an explicit one must meet the profile's isolation level and be
 * available; "auto" walks the policy's list for the mode, skipping (and recording why) those
 * that are unavailable or below the level. *ret_note (owned) says what was chosen and why. */
int sbx_backend_select(const sbx_config *cfg, const sbx_backend **ret, char **ret_note, sbx_error *e);
/* The same, skipping the backends whose bit (1u << id) is in `exclude`, and naming `prior`
 * (why earlier choices fell through, may be NULL) in the note. */
int sbx_backend_select_excluding(const sbx_config *cfg, unsigned exclude, const char *prior, const sbx_backend **ret,
                                 char **ret_note, sbx_error *e);

/* True when a run failed because namespaces were refused at clone (EPERM inside a container's
 * seccomp profile, ENOSPC with user.max_user_namespaces=0): `auto` then tries the next backend. */
bool sbx_backend_error_is_ns_refusal(const sbx_error *e);

extern const sbx_backend sbx_backend_native;
extern const sbx_backend sbx_backend_landlock;
