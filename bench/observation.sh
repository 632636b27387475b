#!/usr/bin/env bash
# observation.sh — what observing costs (issue 5): three workloads, each run with observation at
# its default (the filter's notification rules and the listener; as root with the host's audit
# on, also the kernel's Landlock denial records), with the opt-in write observation
# (observe.fs_writes), and off (observe: off: no notification rule at all, the plain filter) — on
# the native and the landlock backends, in ONE hyperfine run. Prints medians and the overhead of
# each against "off". Also checks, in the same run, that an outside write is reported with its
# path, and by which source. Not a test.
#
#   bash bench/observation.sh [--runs N] [--no-audit]
#
# As root, the host's audit is turned on for the bench's duration (tests/tools/audit-ctl.py:
# with the rule '-a never,task' where it was off, so that no process pays syscall auditing) and
# set back as it was at the end; --no-audit leaves it alone.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=30 AUDIT=1
while [ $# -gt 0 ]; do
        case $1 in
        --runs) RUNS=${2:?}; shift ;;
        --no-audit) AUDIT=0 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "observation.sh: unknown option '$1'" >&2; exit 2 ;;
        esac
        shift
done
command -v hyperfine >/dev/null || { echo "observation.sh: hyperfine is needed (apt-get install hyperfine)" >&2; exit 2; }
B=${SANDBOXER:-$PWD/build/src/cli/sandboxer}
t=$(mktemp -d)
CTL="python3 $PWD/tests/tools/audit-ctl.py"
restore=""
cleanup() {
        [ -z "$restore" ] || $CTL restore "$t/audit.state" >/dev/null
        rm -rf "$t" /var/tmp/sbx-bench-evil-$$ 2>/dev/null
}
trap cleanup EXIT
if [ "$AUDIT" = 1 ] && [ "$(id -u)" = 0 ] && $CTL on "$t/audit.state" >/dev/null 2>&1; then
        restore=1
        echo "# the host's audit: on for the bench (was $(cat "$t/audit.state" | sed 's/^/enabled=/')), set back at the end"
fi
for mode in default fswrites off; do
        case $mode in
        default) obs="" ;;
        fswrites) obs="observe: { fs_writes: true }" ;;
        off) obs="observe: off" ;;
        esac
        printf 'id: bench.%s\nversion: "1.0.0"\n%s\n' "$mode" "$obs" >"$t/$mode.yaml"
        printf 'id: bench.ll-%s\nversion: "1.0.0"\nisolation: { level: policy }\n%s\n' "$mode" "$obs" >"$t/ll-$mode.yaml"
done
# the landlock backend has no cgroup for pids as an ordinary user: best effort there
sed 's/^enforce:.*/enforce: { best_effort: [memory_mb, cpus, pids] }/' policy/default.yaml >"$t/policy.yaml"
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
for be in native landlock; do
        for w in sys write pass; do
                for mode in default fswrites off; do
                        if [ $be = native ]; then p=$t/$mode.yaml ws=/workspace; else p=$t/ll-$mode.yaml ws=$t; fi
                        if [ $w = pass ]; then cmd="/usr/bin/python3 -c pass"; else cmd="/usr/bin/python3 $ws/$w.py"; fi
                        args+=(-n "$be/$w/$mode" "$B run --policy $t/policy.yaml --backend $be --profile $p --workspace $t -- $cmd")
                done
        done
done
echo "# uptime: $(uptime)"
hyperfine -N -w 2 -r "$RUNS" --export-json "$t/o.json" "${args[@]}" >/dev/null 2>&1 || { echo "hyperfine failed" >&2; exit 1; }
python3 - "$t/o.json" <<'PY'
import json, sys
r = {x["command"]: x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]}
print("%-9s %-7s %10s %12s %13s %15s %17s" % ("backend", "load", "off ms", "default ms", "fs_writes ms", "default vs off", "fs_writes vs off"))
for be in ("native", "landlock"):
    for w in ("sys", "write", "pass"):
        off, dflt, fsw = r[be + "/" + w + "/off"], r[be + "/" + w + "/default"], r[be + "/" + w + "/fswrites"]
        print("%-9s %-7s %10.1f %12.1f %13.1f %+14.1f%% %+16.1f%%" % (be, w, off, dflt, fsw, (dflt / off - 1) * 100, (fsw / off - 1) * 100))
PY
# the same configurations: is an outside write reported, with which path, from which source?
# (native: onto the read-only /etc; landlock: into the world-writable /var/tmp)
echo
for be in native landlock; do
        for mode in default fswrites off; do
                if [ $be = native ]; then p=$t/$mode.yaml target=/etc/evil; else p=$t/ll-$mode.yaml target=/var/tmp/sbx-bench-evil-$$; fi
                "$B" run --policy "$t/policy.yaml" --backend $be --profile "$p" --report "$t/r.json" -- /bin/sh -c "echo x > $target" 2>/dev/null
                python3 - "$t/r.json" "$be" "$mode" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = [(x["detail"].get("path"), x["detail"].get("access", "")) for x in d["violations"] if x["kind"] == "FilesystemWriteViolation"]
ev = d.get("fs_write_evidence") or {}
print("%-9s %-9s outside write reported: %-40s evidence: %s" % (sys.argv[2], sys.argv[3], " ".join("%s %s" % p for p in v) or "no", ev.get("source")))
PY
        done
done
