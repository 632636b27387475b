#!/usr/bin/env bash
# fences.sh — what each kernel fence costs: `sandboxer run -- /bin/true` on the native backend
# with every layer, then with one layer turned off at a time, then with all of them off (the
# namespaces and mounts alone), in ONE hyperfine run. Layers are turned off only in a separate
# benchmark build (meson -Dbench_knobs=true, SANDBOXER_BENCH_DISABLE=...): release builds have no
# such switch. Prints medians and the difference each layer makes; not a test.
#
#   bash bench/fences.sh [--runs N]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=100
[ "${1:-}" = --runs ] && RUNS=${2:?}
command -v hyperfine >/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -q hyperfine >/dev/null; }
command -v hyperfine >/dev/null || { echo "fences.sh: hyperfine is needed (apt-get install hyperfine)" >&2; exit 2; }
BUILD=build-bench
if [ ! -d $BUILD ]; then meson setup $BUILD -Dbench_knobs=true >/dev/null || exit 2; fi
ninja -C $BUILD >/dev/null || exit 2
B=$PWD/$BUILD/src/cli/sandboxer
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cases=("all" "no-landlock:landlock" "no-seccomp:seccomp" "no-caps:caps" "no-cgroup:cgroup" "none:landlock,seccomp,caps,cgroup")
args=()
for c in "${cases[@]}"; do
        name=${c%%:*} off=${c#*:}; [ "$c" = all ] && off=""
        args+=(-n "$name" "env SANDBOXER_BENCH_DISABLE=$off $B run -- /bin/true")
done
echo "# uptime: $(uptime)"
hyperfine -N -w 10 -r "$RUNS" --export-json "$out/f.json" "${args[@]}" >/dev/null 2>&1 || { echo "hyperfine failed" >&2; exit 1; }
python3 - "$out/f.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
med = {k: v["median"] * 1000 for k, v in r.items()}
allm = med["all"]
print("%-12s %10s %14s" % ("layers", "median ms", "vs all"))
for k in ["all", "no-landlock", "no-seccomp", "no-caps", "no-cgroup", "none"]:
    print("%-12s %10.2f %+13.2f" % (k, med[k], med[k] - allm))
print("\nthe cost of a layer = all - no-<layer>; 'none' = namespaces, mounts, init, supervisor, report")
PY
