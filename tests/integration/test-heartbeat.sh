#!/usr/bin/env bash
# test-heartbeat.sh — the heartbeat of hosts and remote extensions with one extension that never
# answers: the others are still probed at every beat, and a host added meanwhile is checked at
# once. The checks are in heartbeat_test.py (TAP).
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_all "python3 is needed"
export SBX_TMP SANDBOXER SBX_SRC
python3 "$SBX_SRC/tests/integration/heartbeat_test.py"
