#!/usr/bin/env bash
# test-pty.sh — execs on a terminal (attach over a WebSocket, input, resize, the end, re-attach)
# and long-lived execs (no timeout_s, not in budget_s, where the profile allows them) through the
# real `sandboxer serve`. The checks are in pty_test.py (TAP).
. "$(dirname "$0")/lib.sh"
require_backend native

if [ "$(id -u)" != 0 ]; then
        . "$(dirname "$0")/common-policy.sh"
        export POLICY=$POL
fi
command -v python3 >/dev/null || skip_all "python3 is needed"
export SBX_TMP SANDBOXER SBX_SRC
python3 "$SBX_SRC/tests/integration/pty_test.py"
