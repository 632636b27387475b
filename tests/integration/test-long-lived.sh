#!/usr/bin/env bash
# test-long-lived.sh — a terminal and an HTTP server held in one sandbox for five minutes
# (SBX_HOLD_S, default 300), both answering every 30 s: long-lived execs are bounded by the
# sandbox's life, not by timeout_s nor budget_s (docs/long-lived.md). Slow by design: scripts/test.sh
# runs it once, as root.
. "$(dirname "$0")/lib.sh"
require_backend native
[ "$(id -u)" = 0 ] || skip_all "run once, as root (five minutes of waiting)"
command -v python3 >/dev/null || skip_all "python3 is needed"
export SBX_TMP SANDBOXER SBX_SRC SBX_HOLD_S=${SBX_HOLD_S:-300}
python3 "$SBX_SRC/tests/integration/pty_test.py"
