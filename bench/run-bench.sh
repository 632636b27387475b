#!/usr/bin/env bash
# run-bench.sh — start-up + teardown cost of one sandboxed command, sandboxer against the usual
# tools, in ONE hyperfine run (warmup, >= 100 runs each, -N: no shell in between). Prints figures;
# not a test (it never fails on a slow result).
#
#   bash bench/run-bench.sh [--runs N] [--no-wait] [--no-install] [--out DIR]
#
# Environment: SANDBOXER (the binary; default build/src/cli/sandboxer), BENCH_MAX_LOAD (wait until
# the 1-minute load average is below it, default 1.0; the machine may be shared), BENCH_WAIT_S
# (give up waiting after this many seconds, default 300).
#
# Installs what it needs when missing (apt: hyperfine, bubblewrap, firejail, crun; as root).
# Measured, each with /bin/true (and sandboxer and bwrap with python3 -c pass too):
#   sandboxer run          the default profile: every layer (namespaces, read-only binds, tmpfs
#                          scratch, Landlock, no capabilities, no_new_privs, rlimits) plus, as
#                          root, cgroup limits (memory, pids, cpu); report written per run
#   bwrap --unshare-all    the same filesystem view (binds of the default profile)
#   unshare -Urnpf --mount-proc
#   firejail --noprofile --quiet --net=none --private
#   crun run               if it works on this host (it refuses on a hybrid cgroup host: said so)
# Then: a table of medians and ratios against bwrap, the JSON export, and a check that the
# report of a measured sandboxer run shows every layer in force.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
RUNS=200 WAIT=1 INSTALL=1 OUT=""
while [ $# -gt 0 ]; do
        case $1 in
        --runs) RUNS=${2:?}; shift ;;
        --no-wait) WAIT=0 ;;
        --no-install) INSTALL=0 ;;
        --out) OUT=${2:?}; shift ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run-bench.sh: unknown option '$1'" >&2; exit 2 ;;
        esac
        shift
done
[ "$RUNS" -ge 100 ] || { echo "run-bench.sh: --runs must be >= 100" >&2; exit 2; }
SANDBOXER=${SANDBOXER:-$ROOT/build/src/cli/sandboxer}
[ -x "$SANDBOXER" ] || { echo "run-bench.sh: no sandboxer at $SANDBOXER (build first, or set SANDBOXER)" >&2; exit 2; }
SANDBOXER=$(realpath "$SANDBOXER")
OUT=${OUT:-$(mktemp -d /tmp/sbx-bench.XXXXXX)}
mkdir -p "$OUT"
PY=/usr/bin/python3 # Debian's, not a per-user shim: what the sandbox sees too
say() { printf '%s\n' "$*"; }

# ---- tools ------------------------------------------------------------------------------------
need() { # need COMMAND PACKAGE
        command -v "$1" >/dev/null 2>&1 && return 0
        if [ "$INSTALL" = 1 ] && [ "$(id -u)" = 0 ]; then
                say "installing $2 (apt)"
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 ||
                        { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1; }
        fi
        command -v "$1" >/dev/null 2>&1
}
need hyperfine hyperfine || { echo "run-bench.sh: hyperfine missing and not installable" >&2; exit 2; }
need bwrap bubblewrap || { echo "run-bench.sh: bwrap missing and not installable" >&2; exit 2; }
need unshare util-linux
HAVE_FIREJAIL=0 HAVE_CRUN=0
need firejail firejail && HAVE_FIREJAIL=1
need crun crun && HAVE_CRUN=1

# ---- the machine ------------------------------------------------------------------------------
say "machine: $(uname -srm); $(nproc) cpus ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
say "         $(. /etc/os-release && echo "$PRETTY_NAME"); cgroup: $(stat -fc %T /sys/fs/cgroup)$([ -d /sys/fs/cgroup/unified ] && echo ' + cgroup2 at /sys/fs/cgroup/unified (hybrid)'); running as $(id -un)"
say "tools:   $("$SANDBOXER" --version 2>/dev/null | head -1 || echo sandboxer), $(bwrap --version), $(hyperfine --version)$([ $HAVE_FIREJAIL = 1 ] && echo ", firejail $(firejail --version | head -1 | awk '{print $NF}')")$([ $HAVE_CRUN = 1 ] && echo ", crun $(crun --version | head -1 | awk '{print $NF}')")"
if [ "$WAIT" = 1 ]; then
        max=${BENCH_MAX_LOAD:-1.0} deadline=$((SECONDS + ${BENCH_WAIT_S:-300}))
        while :; do
                load=$(cut -d' ' -f1 /proc/loadavg)
                python3 -c "import sys; sys.exit(0 if $load < $max else 1)" && break
                [ $SECONDS -ge $deadline ] && { say "load still $load after waiting: measuring anyway (noisy)"; break; }
                sleep 10
        done
fi
say "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at start"

# ---- the commands -------------------------------------------------------------------------------
# bwrap with the default profile's view: read-only /usr, the /bin /lib /lib64 symlinks, the /etc
# files of filesystem.read, fresh /proc, minimal /dev, tmpfs /tmp as TMPDIR and HOME, uid 1000,
# its own hostname, a clean environment.
BWRAP=(bwrap --unshare-all --die-with-parent --new-session
        --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64
        --ro-bind /etc/ssl/certs /etc/ssl/certs --ro-bind /etc/resolv.conf /etc/resolv.conf
        --ro-bind /etc/hosts /etc/hosts --symlink "$(readlink /etc/localtime)" /etc/localtime
        --proc /proc --dev /dev --tmpfs /tmp --uid 1000 --gid 1000 --hostname sandbox --chdir /tmp
        --clearenv --setenv PATH /usr/local/bin:/usr/bin:/bin --setenv TMPDIR /tmp --setenv HOME /tmp
        --setenv LANG C.UTF-8)
UNSHARE=(unshare -Urnpf --mount-proc)
FIREJAIL=(firejail --noprofile --quiet --net=none --private)
SBX=("$SANDBOXER" run --report "$OUT/report.json")

NAMES=() CMDS=()
add() { NAMES+=("$1"); CMDS+=("$2"); }
q() { local s="" a; for a in "$@"; do s+="${s:+ }$(printf '%q' "$a")"; done; echo "$s"; }
add "sandboxer /bin/true" "$(q "${SBX[@]}" -- /bin/true)"
add "sandboxer python3 -c pass" "$(q "${SBX[@]}" -- python3 -c pass)"
add "bwrap /bin/true" "$(q "${BWRAP[@]}" /bin/true)"
add "bwrap python3 -c pass" "$(q "${BWRAP[@]}" "$PY" -c pass)"
add "unshare /bin/true" "$(q "${UNSHARE[@]}" /bin/true)"
if [ $HAVE_FIREJAIL = 1 ]; then
        if "${FIREJAIL[@]}" /bin/true >"$OUT/firejail.err" 2>&1; then
                add "firejail /bin/true" "$(q "${FIREJAIL[@]}" /bin/true)"
        else
                say "firejail: not measured, it fails here: $(tail -1 "$OUT/firejail.err")"
        fi
else
        say "firejail: not measured (not installed, and not installable here)"
fi

# crun: a bundle whose rootfs is empty and whose mounts give the same view.
CRUN_NOTE=""
if [ $HAVE_CRUN = 1 ]; then
        B=$OUT/crun-bundle
        mkdir -p "$B/rootfs"
        python3 - "$B" <<'EOF'
import json, os, sys
b = sys.argv[1]
ro = ["rbind", "ro", "nosuid", "nodev"]
cfg = {
    "ociVersion": "1.0.2",
    "process": {"terminal": False, "user": {"uid": 1000, "gid": 1000}, "args": ["/bin/true"],
                "env": ["PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=/tmp", "HOME=/tmp"], "cwd": "/tmp",
                "noNewPrivileges": True, "capabilities": {}},
    "root": {"path": "rootfs", "readonly": True},
    "hostname": "sandbox",
    "mounts": [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755", "size=64k"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
        {"destination": "/usr", "type": "bind", "source": "/usr", "options": ro},
        {"destination": "/etc/ssl/certs", "type": "bind", "source": "/etc/ssl/certs", "options": ro},
    ],
    "linux": {"namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount", "cgroup")],
              "resources": {"memory": {"limit": 1 << 30}, "pids": {"limit": 256}}},
}
for l, t in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
    os.makedirs(os.path.join(b, "rootfs"), exist_ok=True)
    p = os.path.join(b, "rootfs", l)
    if not os.path.lexists(p):
        os.symlink(t, p)
json.dump(cfg, open(os.path.join(b, "config.json"), "w"), indent=1)
EOF
        if (cd "$B" && crun run "bench-probe-$$" >"$OUT/crun.err" 2>&1); then
                add "crun /bin/true" "crun --root $OUT/crun-state run --bundle $B bench-$$"
        else
                CRUN_NOTE="crun: not measured, it refuses here: $(grep -v '^$' "$OUT/crun.err" | tail -1)"
                [ -d /sys/fs/cgroup/unified ] && CRUN_NOTE+=" (a hybrid cgroup host: crun wants cgroup v2 controllers or a pure v1 layout)"
                say "$CRUN_NOTE"
                crun delete -f "bench-probe-$$" >/dev/null 2>&1
        fi
else
        say "crun: not measured (not installed, and not installable here)"
fi
command -v runc >/dev/null 2>&1 || say "runc: not measured (not installed; it needs the same OCI bundle as crun and adds nothing crun does not show here)"

# Each command once by hand first: a tool that fails here is left out, not timed.
for i in "${!CMDS[@]}"; do
        if ! eval "${CMDS[i]}" >/dev/null 2>"$OUT/check.err"; then
                say "${NAMES[i]}: fails here, left out: $(tail -1 "$OUT/check.err")"
                unset 'NAMES[i]' 'CMDS[i]'
        fi
done
NAMES=("${NAMES[@]}") CMDS=("${CMDS[@]}")

say ""
say "exact commands:"
for i in "${!CMDS[@]}"; do say "  [${NAMES[i]}]  ${CMDS[i]}"; done
say ""

# crun needs a fresh container name per run: hyperfine's {n}-free way is a --prepare that deletes.
HF=(hyperfine -N --warmup 10 --runs "$RUNS" --export-json "$OUT/hyperfine.json" --style basic)
for i in "${!CMDS[@]}"; do
        if [[ ${NAMES[i]} == crun* ]]; then
                HF+=(--prepare "crun --root $OUT/crun-state delete -f bench-$$")
        else
                HF+=(--prepare "/bin/true")
        fi
        HF+=(-n "${NAMES[i]}" "${CMDS[i]}")
done
"${HF[@]}" >"$OUT/hyperfine.txt" 2>&1
hf_rc=$?
[ $hf_rc = 0 ] || { cat "$OUT/hyperfine.txt"; say "hyperfine failed ($hf_rc)"; }
say "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at the end"
say ""

# ---- the table ------------------------------------------------------------------------------------
python3 - "$OUT/hyperfine.json" <<'EOF'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
by = {r["command"]: r for r in res}
def ref(name):
    return by.get("bwrap python3 -c pass" if "python3" in name else "bwrap /bin/true")
print("| command | median ms | mean ± sd ms | min ms | runs | vs bwrap (median) |")
print("|---|---:|---:|---:|---:|---:|")
for r in res:
    b = ref(r["command"])
    ratio = "%.2f×" % (r["median"] / b["median"]) if b else "—"
    print("| %s | %.2f | %.2f ± %.2f | %.2f | %d | %s |" % (
        r["command"], r["median"] * 1e3, r["mean"] * 1e3, r["stddev"] * 1e3, r["min"] * 1e3,
        len(r["times"]), ratio))
s = by.get("sandboxer /bin/true"); b = by.get("bwrap /bin/true")
if s and b:
    print("\ntarget: sandboxer /bin/true <= 0.8 × bwrap's median: %.2f× — %s" % (
        s["median"] / b["median"], "met" if s["median"] <= 0.8 * b["median"] else "NOT met"))
EOF
say "JSON: $OUT/hyperfine.json"

# ---- every layer active in a measured run -------------------------------------------------------------
say ""
python3 - "$OUT/report.json" "$(id -u)" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
root = sys.argv[2] == "0"
lim = d["config"]["limits"]
fences = d["config"].get("fences") or {}
want = {
    "backend native": d["backend"] == "native",
    "isolation container": d["isolation"] == "container",
    "status exited 0": d["status"] == "exited" and d["exit"]["code"] == 0,
    "namespaces": "namespaces" in fences,
    "landlock": "landlock" in fences,
    "capabilities dropped": "capabilities" in fences,
    "no_new_privs": "no_new_privs" in fences,
    "scratch by tmpfs": lim["scratch_mb"]["mechanism"] == "tmpfs",
    "timeout by supervisor": lim["timeout_s"]["mechanism"] == "supervisor",
}
for k in ("memory_mb", "pids", "cpus"):
    m = lim[k]["mechanism"]
    want["%s by %s" % (k, m)] = m.startswith("cgroup_") if root else m != "none" or k != "pids"
bad = [k for k, v in want.items() if not v]
print("report of a measured run (%s): %s" % (d["id"], ", ".join(want)))
print("  fences: " + "; ".join("%s: %s" % kv for kv in fences.items()))
print("every layer active: " + ("yes" if not bad else "NO — missing: " + ", ".join(bad)))
EOF
