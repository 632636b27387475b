#!/usr/bin/env bash
# test-ports.sh — a sandbox's ports through the real `sandboxer serve`: HTTP and WebSocket proxied
# to a server inside, by path, by Host (--domain) and by signed URL; who may; the failures. The
# checks are in ports_test.py (TAP).
. "$(dirname "$0")/lib.sh"
require_backend native

if [ "$(id -u)" != 0 ]; then
        . "$(dirname "$0")/common-policy.sh"
        export POLICY=$POL
fi
command -v python3 >/dev/null || skip_all "python3 is needed"
export SBX_TMP SANDBOXER SBX_SRC
python3 "$SBX_SRC/tests/integration/ports_test.py"
