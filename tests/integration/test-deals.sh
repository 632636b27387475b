#!/usr/bin/env bash
# test-deals.sh — deals between two `sandboxer serve` nodes on loopback, each provider and
# requester: quotes, signed deals, results, tampering, 100 deals, kill -9 at random points,
# both ledgers reconciled. The checks are in deals_test.py (TAP).
. "$(dirname "$0")/lib.sh"
require_backend native
command -v python3 >/dev/null || skip_all "python3 is needed"
if [ "$(id -u)" != 0 ]; then
        . "$(dirname "$0")/common-policy.sh"
        export POLICY=$POL
fi
export SBX_TMP SANDBOXER SBX_SRC
python3 "$SBX_SRC/tests/integration/deals_test.py"
