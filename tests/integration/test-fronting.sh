#!/usr/bin/env bash
# test-fronting.sh — one node fronting others (ext.sandboxer): three `sandboxer serve` on
# loopback, B and C over HTTPS with their own certificates and tokens, A routing to them; the API
# through the front, fallback, loops refused, a back end killed and back (no split brain), the
# front restarted. The checks are in fronting_test.py (TAP).
. "$(dirname "$0")/lib.sh"
require_backend native
command -v python3 >/dev/null || skip_all "python3 is needed"
command -v openssl >/dev/null || skip_all "openssl is not installed (scripts/setup.sh installs it)"
if [ "$(id -u)" != 0 ]; then
        . "$(dirname "$0")/common-policy.sh"
        export POLICY=$POL
fi
export SBX_TMP SANDBOXER SBX_SRC
python3 "$SBX_SRC/tests/integration/fronting_test.py"
