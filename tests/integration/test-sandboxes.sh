#!/usr/bin/env bash
# test-sandboxes.sh — the control plane's persistent sandboxes end to end: the real `sandboxer
# serve` driven over HTTP (lifecycle, exec, streaming, files, TTL, idempotency, tenants, quotas,
# bad input, restart recovery after kill -9, audit), every response validated against
# docs/openapi.json. The checks are in sandboxes_test.py (TAP).
. "$(dirname "$0")/lib.sh"
require_backend native # its sandboxes are native ones (skipped with the reason where the host cannot)

if [ "$(id -u)" != 0 ]; then
        # No cgroup delegation for an ordinary user here: memory, cpus and scratch best-effort.
        . "$(dirname "$0")/common-policy.sh"
        export POLICY=$POL
fi
command -v python3 >/dev/null || skip_all "python3 is needed"
export SBX_TMP SANDBOXER SBX_SRC
python3 "$SBX_SRC/tests/integration/sandboxes_test.py"
