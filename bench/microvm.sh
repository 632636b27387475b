#!/usr/bin/env bash
# microvm.sh — what a microvm sandbox costs, beside the native backend in the same run: the boot
# broken down (qemu's own start until the guest kernel runs, the kernel until the agent runs, the
# agent's modules and control port until it is ready; SANDBOXER_DEBUG_TIMING=1 prints them), a
# whole `sandboxer run` of /bin/true and of `python3 -c 'print(42)'` (wall clock, medians), the
# host memory per sandbox (qemu's peak RSS, from the report's usage.max_rss_kb: the relay's
# children are qemu) and the guest's RAM. The two backends alternate run by run, so a change of
# load moves both alike. Prints a table; not a test (it never fails on a slow result).
#
#   bash bench/microvm.sh [--runs N] [--serve-runs N] [--no-serve]
#                                        (default 10; each microvm run takes seconds under TCG)
#
# Then persistent sandboxes in `serve`, the two backends side by side in one server (medians, over
# HTTP on its unix socket): create -> first exec of /bin/true from the warm pool (a booted guest
# waiting), cold (the boot paid), and an exec into a ready sandbox. --serve-runs N (default
# --runs) of each; --no-serve skips them.
#
# Where /dev/kvm does not work (a trial boot decides) the guest runs under QEMU's emulation: the
# bench policy allows it, and the table says which accelerator ran.
set -euo pipefail
runs=10 serve_runs="" serve=1
while [ $# -gt 0 ]; do
        case $1 in
        --runs) runs=${2:?}; shift ;;
        --serve-runs) serve_runs=${2:?}; shift ;;
        --no-serve) serve=0 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "microvm.sh: unknown option '$1'" >&2; exit 2 ;;
        esac
        shift
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SBX=${SANDBOXER:-$ROOT/build/src/cli/sandboxer}
T=$(mktemp -d)
SRV=""
trap '[ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
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

[ "$serve" = 1 ] || exit 0
# --- persistent sandboxes: one server, both backends, a warm pool of one for each ---
mkdir -p "$T/profiles" "$T/st" "$T/sec"
chmod 700 "$T/sec"
printf 'id: b-vm\nversion: "1.0.0"\nextends: profile.default\nisolation: { level: microvm, mode: strict, backend: auto }\n' >"$T/profiles/b-vm.yaml"
printf 'id: b-native\nversion: "1.0.0"\nextends: profile.default\n' >"$T/profiles/b-native.yaml"
SANDBOXER_PROFILE_PATH=$T/profiles SANDBOXER_RUNTIME_DIR=$T/run "$SBX" serve --listen "unix:$T/s.sock" --state-dir "$T/st" --secrets-dir "$T/sec" \
        --policy "$T/policy.yaml" --warm-pool 1 --warm-profile b-vm --warm-profile b-native >"$T/serve.log" 2>&1 &
SRV=$!
python3 - "$T" "${serve_runs:-$runs}" <<'PY'
import http.client, json, os, socket, statistics, sys, time
T, runs = sys.argv[1], int(sys.argv[2])
SOCK = os.path.join(T, "s.sock")

class Unix(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("localhost", timeout=300)
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(SOCK)

def req(method, path, body=None):
    c = Unix()
    c.request(method, path, body=json.dumps(body) if body is not None else None)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data) if data else None

def pooled(profile):
    """sandboxes the warm pool holds for profile (from the server's log)"""
    added = [l for l in open(os.path.join(T, "serve.log")) if "warm_pool_added profile=%s " % profile in l]
    return len(added)

for _ in range(600):
    if os.path.exists(SOCK):
        break
    time.sleep(0.1)

def first_exec(profile, warm):
    if warm:  # wait for the pool to hold one (refilled after the last create)
        want = first_exec.taken.get(profile, 0) + 1
        for _ in range(1200):
            if pooled(profile) >= want:
                break
            time.sleep(0.05)
        first_exec.taken[profile] = want
    body = {"profile": profile}
    t0 = time.monotonic()
    s, rec = req("POST", "/v1/sandboxes", body)
    if s != 201:
        sys.exit("create %s: %s %s" % (profile, s, rec))
    s, out = req("POST", "/v1/sandboxes/%s/exec" % rec["id"], {"argv": ["/bin/true"]})
    ms = (time.monotonic() - t0) * 1000
    if s != 200:
        sys.exit("exec: %s %s" % (s, out))
    return rec["id"], ms
first_exec.taken = {}

res = {k: [] for k in ("warm-vm", "warm-native", "cold-vm", "cold-native", "exec-vm", "exec-native")}
for i in range(runs):
    for b in ("vm", "native"):
        sid, ms = first_exec("b-" + b, True)
        res["warm-" + b].append(ms)
        for _ in range(3):
            t0 = time.monotonic()
            s, _ = req("POST", "/v1/sandboxes/%s/exec" % sid, {"argv": ["/bin/true"]})
            res["exec-" + b].append((time.monotonic() - t0) * 1000)
        req("DELETE", "/v1/sandboxes/" + sid)
# cold: a profile the pool does not keep (the same sandbox otherwise)
for f, base in (("c-vm", "b-vm"), ("c-native", "b-native")):
    src = open(os.path.join(T, "profiles", base + ".yaml")).read().replace("id: " + base, "id: " + f)
    open(os.path.join(T, "profiles", f + ".yaml"), "w").write(src)
for i in range(max(3, runs // 2)):
    for b in ("vm", "native"):
        sid, ms = first_exec("c-" + b, False)
        res["cold-" + b].append(ms)
        req("DELETE", "/v1/sandboxes/" + sid)

med = {k: statistics.median(v) for k, v in res.items() if v}
print("\npersistent sandboxes in serve (HTTP on a unix socket, /bin/true), medians of %d:\n" % runs)
print("| | native ms | microvm ms | ratio |\n|---|---:|---:|---:|")
for k, label in (("warm", "create -> first exec, from the warm pool"), ("cold", "create -> first exec, cold (boot paid)"),
                 ("exec", "exec into a ready sandbox")):
    n, v = med[k + "-native"], med[k + "-vm"]
    print("| %s | %.1f | %.1f | %.1fx |" % (label, n, v, v / n))
PY
