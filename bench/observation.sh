#!/usr/bin/env bash
# observation.sh — what observing costs (issue 5): three workloads, each run under the native
# backend with observation at its default (the filter's notification rules and the listener),
# with the opt-in write observation (observe.fs_writes), and off (observe: off: no notification
# rule at all, the plain filter) — in ONE hyperfine run. Prints medians and the overhead of each
# against "off". Also checks, in the same run, that an observed outside write is reported with its
# path. Not a test.
#
#   bash bench/observation.sh [--runs N]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=30
[ "${1:-}" = --runs ] && RUNS=${2:?}
command -v hyperfine >/dev/null || { echo "observation.sh: hyperfine is needed (apt-get install hyperfine)" >&2; exit 2; }
B=${SANDBOXER:-$PWD/build/src/cli/sandboxer}
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
for mode in default fswrites off; do
        case $mode in
        default) obs="" ;;
        fswrites) obs="observe: { fs_writes: true }" ;;
        off) obs="observe: off" ;;
        esac
        printf 'id: bench.%s\nversion: "1.0.0"\n%s\n' "$mode" "$obs" >"$t/$mode.yaml"
done
# syscall-heavy: 2 million getppid (never notified: the BPF's cost only)
cat >"$t/sys.py" <<'PY'
import os
for _ in range(2_000_000): os.getppid()
PY
# write-heavy, build-like: create/write/close 10,000 files in scratch
cat >"$t/write.py" <<'PY'
import os
d = os.environ["TMPDIR"] + "/out"
os.mkdir(d)
for i in range(10000):
    with open(f"{d}/f{i}.o", "w") as f: f.write("x" * 64)
PY
chmod -R a+rX "$t"
args=()
for w in sys write pass; do
        for mode in default fswrites off; do
                if [ $w = pass ]; then cmd="/usr/bin/python3 -c pass"; else cmd="/usr/bin/python3 /workspace/$w.py"; fi
                args+=(-n "$w/$mode" "$B run --profile $t/$mode.yaml --workspace $t -- $cmd")
        done
done
echo "# uptime: $(uptime)"
hyperfine -N -w 2 -r "$RUNS" --export-json "$t/o.json" "${args[@]}" >/dev/null 2>&1 || { echo "hyperfine failed" >&2; exit 1; }
python3 - "$t/o.json" <<'PY'
import json, sys
r = {x["command"]: x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]}
print("%-10s %12s %12s %12s %14s %14s" % ("workload", "off ms", "default ms", "fs_writes ms", "default vs off", "fs_writes vs off"))
for w in ("sys", "write", "pass"):
    off, dflt, fsw = r[w + "/off"], r[w + "/default"], r[w + "/fswrites"]
    print("%-10s %12.1f %12.1f %12.1f %+13.1f%% %+13.1f%%" % (w, off, dflt, fsw, (dflt / off - 1) * 100, (fsw / off - 1) * 100))
PY
# the same configurations report an outside write with its path (observed) or not (off)
for mode in default fswrites off; do
        "$B" run --profile "$t/$mode.yaml" --report "$t/r.json" -- /bin/sh -c 'echo x > /etc/evil' 2>/dev/null
        printf '%-9s outside write reported: %s\n' "$mode" "$(python3 -c "import json;d=json.load(open('$t/r.json'));print([v['detail'].get('path') for v in d['violations'] if v['kind']=='FilesystemWriteViolation'] or 'no')")"
done
