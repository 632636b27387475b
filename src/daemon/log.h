/* log.h — the control plane's log: one line per event on stderr, logfmt (level=… event=… key=value),
 * written with one write(2) so that threads never interleave. Values that need it are quoted and
 * escaped (JSON string escapes), so that a message from a client or an error text cannot forge
 * another key or another line. Secrets are never passed here (they are redacted by type, before). */
#pragma once

typedef enum sbx_log_level {
        SBX_LOG_ERROR,
        SBX_LOG_WARNING,
        SBX_LOG_INFO,
        _SBX_LOG_LEVEL_MAX,
} sbx_log_level;

/* sbx_log(SBX_LOG_INFO, "sandbox_state", "sandbox", id, "state", "ready", NULL): key/value string
 * pairs up to a NULL key; a NULL value is written as "-". */
void sbx_log(sbx_log_level level, const char *event, ...) __attribute__((sentinel));
