#!/usr/bin/env bash
# microvm.sh — what a microvm sandbox costs, beside the native backend in the same run: the boot
# broken down (qemu's own start until the guest kernel runs, the kernel until the agent runs, the
# agent's modules and control port until it is ready; SANDBOXER_DEBUG_TIMING=1 prints them), a
# whole `sandboxer run` of /bin/true and of `python3 -c 'print(42)'` (wall clock, medians), the
# host memory per sandbox (qemu's peak RSS, from the report's usage.max_rss_kb: the relay's
# children are qemu) and the guest's RAM. The two backends alternate run by run, so a change of
# load moves both alike. Prints a table; not a test (it never fails on a slow result).
#
#   bash bench/microvm.sh [--runs N]      (default 10; each microvm run takes seconds under TCG)
#
# Where /dev/kvm does not work (a trial boot decides) the guest runs under QEMU's emulation: the
# bench policy allows it, and the table says which accelerator ran.
set -euo pipefail
runs=10
while [ $# -gt 0 ]; do
        case $1 in
        --runs) runs=${2:?}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "microvm.sh: unknown option '$1'" >&2; exit 2 ;;
        esac
        shift
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SBX=${SANDBOXER:-$ROOT/build/src/cli/sandboxer}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/policy.yaml" <<'YAML'
version: 1
modes:
  balanced:
    limits: { timeout_s: 60, budget_s: 240, cpus: 1, memory_mb: 512, pids: 128, output_mb: 10, scratch_mb: 64 }
    backends: [native, landlock]
  strict:
    limits: { timeout_s: 60, budget_s: 240, cpus: 1, memory_mb: 512, pids: 128, output_mb: 10, scratch_mb: 64 }
    backends: [microvm]
enforce: { best_effort: [memory_mb, cpus, scratch_mb, pids] }
strict: { required_when: [], allow_emulation: true }
YAML

now_ms() { date +%s%3N; }
median() { sort -n | awk '{a[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

for cmd in true py; do
        : >"$T/native-$cmd" && : >"$T/vm-$cmd"
done
: >"$T/qemu" : >"$T/kernel" : >"$T/agent" : >"$T/ready" : >"$T/rss"
accel=? ram=?
for ((i = 0; i < runs; i++)); do
        for cmd in true py; do
                if [ $cmd = true ]; then argv=(/bin/true); else argv=(python3 -c 'print(42)'); fi
                t=$(now_ms)
                "$SBX" run --policy "$T/policy.yaml" --backend native -- "${argv[@]}" >/dev/null
                echo $(($(now_ms) - t)) >>"$T/native-$cmd"
                t=$(now_ms)
                SANDBOXER_DEBUG_TIMING=1 "$SBX" run --policy "$T/policy.yaml" --backend microvm --mode strict \
                        --report "$T/r.json" -- "${argv[@]}" >/dev/null 2>"$T/err"
                echo $(($(now_ms) - t)) >>"$T/vm-$cmd"
                line=$(grep 'microvm boot:' "$T/err" || true)
                if [ -n "$line" ]; then
                        read -r q k a r < <(echo "$line" | sed -E 's/.*qemu ([0-9.]+) ms, kernel ([0-9.]+) ms, agent ([0-9.]+) ms \(ready at ([0-9.]+) ms\).*/\1 \2 \3 \4/')
                        echo "$q" >>"$T/qemu"; echo "$k" >>"$T/kernel"; echo "$a" >>"$T/agent"; echo "$r" >>"$T/ready"
                fi
                python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["usage"]["max_rss_kb"] // 1024)' "$T/r.json" >>"$T/rss"
                accel=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["microvm"]["accel"])' "$T/r.json")
                ram=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["microvm"]["memory_mb"])' "$T/r.json")
        done
done

printf 'microvm (%s), %d runs each, medians; host %s, %s CPUs\n\n' "$accel" "$runs" "$(uname -r)" "$(nproc)"
printf '| boot part | ms |\n|---|---:|\n'
printf '| qemu start -> guest kernel running | %s |\n' "$(median <"$T/qemu")"
printf '| kernel -> agent (PID 1) running | %s |\n' "$(median <"$T/kernel")"
printf '| agent: modules, control port -> ready | %s |\n' "$(median <"$T/agent")"
printf '| qemu start -> ready (boot_ms) | %s |\n\n' "$(median <"$T/ready")"
printf '| sandboxer run | native ms | microvm ms | ratio |\n|---|---:|---:|---:|\n'
for cmd in true py; do
        n=$(median <"$T/native-$cmd") v=$(median <"$T/vm-$cmd")
        label=$([ $cmd = true ] && echo /bin/true || echo "python3 -c 'print(42)'")
        printf '| %s | %s | %s | %s |\n' "$label" "$n" "$v" "$(awk -v a="$v" -v b="$n" 'BEGIN {printf "%.0fx", a / b}')"
done
printf '\nhost memory per microvm sandbox: qemu peak RSS %s MiB (median); guest RAM %s MiB (memory_mb 512 + 128)\n' \
        "$(median <"$T/rss")" "$ram"
