#!/usr/bin/env bash
# test-billing.sh — meters, credits and the ledger on `sandboxer serve` nodes on loopback: a fresh
# install never answers 402; holds, settles, grants, races, extends, credits_exhausted, a kill -9,
# the ledger's chain. The checks are in billing_test.py (TAP).
. "$(dirname "$0")/lib.sh"
require_backend native
command -v python3 >/dev/null || skip_all "python3 is needed"
if [ "$(id -u)" != 0 ]; then
        . "$(dirname "$0")/common-policy.sh"
        export POLICY=$POL
fi
export SBX_TMP SANDBOXER SBX_SRC
python3 "$SBX_SRC/tests/integration/billing_test.py"
