#!/usr/bin/env bash
# backends.sh — sandboxer's own overhead per backend: `/bin/true` and `python3 -c pass` through
# `sandboxer run --backend B` against the same sandbox run by hand. For bwrap and firejail "by
# hand" is the exact command line sandboxer generated (SANDBOXER_DEBUG_ARGV=1 prints it), with the
# sandboxer-init part (`-- INIT --cwd ... --seccomp-fd 4 --`) taken out, and bwrap's `--seccomp 5`
# (a descriptor only sandboxer holds) too; for native and landlock, which are sandboxer's own,
# it is the command run bare. The difference is what sandboxer adds: policy and profile loading,
# the seccomp compile, cgroups (as root), the init, the supervisor, the report. Target: <= 2 ms
# median per backend. The two run alternately, pair after pair; OVERHEAD is the median of the
# pairs' differences (a load change moves both sides alike). Prints a table; not a test (it
# never fails on a slow result).
# podman: "by hand" is the generated `podman run` line with the init taken out, and with what
# only sandboxer holds: --preserve-fds (its descriptors) and --cgroup-parent (its per-run group,
# which holds the limits; podman then makes its own, given the same limits: --memory, --cpus,
# --pids-limit); each podman run is followed by 0.1 s for its `container cleanup`, which would
# otherwise overlap the next run. Row podman* runs both lines through tests/tools/fake-podman,
# which runs the line's command at once on the host: sandboxer's own cost (its process, cgroup,
# init, supervisor, report) without podman's run, which varies by ±10 ms. docker speaks the
# API, so "by hand" is the create body sandboxer sent, replayed with the requests a client must
# send (bench/docker-byhand.py: create, attach, start, inspect, delete; timed inside its process,
# so sandboxer's process start counts against it), against podman's Docker-compatible service
# when no DOCKER_HOST is set (started and stopped here), and against a fake engine that answers
# at once (row docker*): podman's run varies by tens of ms, far more than the 2 ms to be measured.
#
#   bash bench/backends.sh [--runs N] [--only BACKEND[,BACKEND...]]
#
# Environment: SANDBOXER (default build/src/cli/sandboxer). As root the tools run as the policy's
# run_as uid, as sandboxer runs them (the harness's child switches uid before its exec); firejail
# needs an ordinary uid: sbxtest if present.
# Unprivileged (no cgroup delegation here) the cgroup limits are best_effort in the bench policy.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=50 ONLY=native,landlock,bwrap,firejail,podman,docker
while [ $# -gt 0 ]; do
        case $1 in
        --runs) RUNS=${2:?}; shift ;;
        --only) ONLY=${2:?}; shift ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "backends.sh: unknown option '$1'" >&2; exit 2 ;;
        esac
        shift
done
for be in ${ONLY//,/ }; do
        case $be in native | landlock | bwrap | firejail | podman | docker) ;; *) echo "backends.sh: --only: unknown backend '$be'" >&2; exit 2 ;; esac
done
SBX=${SANDBOXER:-$PWD/build/src/cli/sandboxer}
[ -x "$SBX" ] || { echo "backends.sh: no sandboxer at $SBX (build first, or set SANDBOXER)" >&2; exit 1; }
TMP=$(mktemp -d); chmod 755 "$TMP"; trap 'rm -rf "$TMP"' EXIT
uid=$(id -u sbxtest 2>/dev/null || echo 65534)
POL=$TMP/policy.yaml
sed -e "s/^run_as: .*/run_as: $uid/" -e "s/^enforce: .*/enforce: { best_effort: [scratch_mb$( [ "$(id -u)" = 0 ] || echo ', memory_mb, cpus, pids') ] }/" policy/default.yaml >"$POL"
PROF=$TMP/bench.yaml
printf 'id: bench\nversion: "1.0.0"\nextends: profile.default\nisolation:\n  level: policy\nfilesystem:\n  read: [/usr, /lib, /lib64, /bin, /etc/ssl/certs, /etc/localtime, /etc/python3, /etc/python3.11]\n' >"$PROF"
chmod 644 "$POL" "$PROF"
# As root the tools run by hand as the policy's run_as uid, as sandboxer runs them: the harness's
# child switches to it between fork and exec (subprocess's user=/group=/extra_groups=), as
# sandboxer's does, so no setuid helper's own exec (setpriv: 1.2 ms) sits in either figure.
AS_UID=""; [ "$(id -u)" = 0 ] && AS_UID=$uid

# paired RUNS AS_UID N CMD_A... CMD_B... — CMD_A (its first N words) and CMD_B run alternately,
# one after the other, RUNS times each (after 3 rounds not counted), CMD_B as uid AS_UID when
# that is set.
# Prints "median_A median_B median(A - B) low high" in ms: the difference of each pair, so a load
# change during the measurement moves both sides alike, and the 95% interval of that median (order
# statistics: distribution-free). "nan" when a command fails.
paired() {
        python3 - "$@" <<'EOF'
import math, os, statistics, subprocess, sys, time
runs, as_uid, na = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
settle = float(os.environ.get("PAIR_SETTLE", "0"))
a, b = sys.argv[4:4 + na], sys.argv[4 + na:]
kw = dict(user=int(as_uid), group=int(as_uid), extra_groups=[]) if as_uid else {}
def once(cmd, **k):
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **k).returncode
    t = (time.perf_counter() - t0) * 1000
    time.sleep(settle)   # what a run leaves behind (podman's cleanup) ends before the next starts
    return t, rc
ta, tb = [], []
for n in range(runs + 3):
    x, ra = once(a)
    y, rb = once(b, **kw)
    if ra != 0 or rb != 0:
        print("nan nan nan nan nan"); sys.exit(0)
    if n >= 3:
        ta.append(x); tb.append(y)
d = sorted(x - y for x, y in zip(ta, tb))
k = 1.96 * math.sqrt(len(d)) / 2      # the median's 95% interval: order statistics (sign test)
lo, hi = d[max(0, math.floor(len(d) / 2 - k))], d[min(len(d) - 1, math.ceil(len(d) / 2 + k))]
print("%.2f %.2f %.2f %.2f %.2f" % (statistics.median(ta), statistics.median(tb), statistics.median(d), lo, hi))
EOF
}

# direct_argv BACKEND CMD... — the tool's command line sandboxer generated, without the init.
direct_argv() {
        local be=$1; shift
        SANDBOXER_DEBUG_ARGV=1 "$SBX" run --policy "$POL" --backend "$be" --profile "$PROF" --report "$TMP/report.$be" -- /bin/true 2>&1 >/dev/null |
                sed -n "s/^sandboxer: $be argv: //p" | head -1 >"$TMP/argv.$be"
        python3 - "$TMP/argv.$be" "$@" <<'EOF'
import json, os, shlex, sys
a = shlex.split(open(sys.argv[1]).read())
cmd = sys.argv[2:]
if a[0] == "podman":
    a = a[:a.index("/.sandboxer-init")]   # the init and its arguments follow the rootfs
    out = [x for x in a if not x.startswith("--cgroup-parent=")]
    for f in ("--preserve-fds", "--cgroups", "--pids-limit"):   # sandboxer's fds; with --cgroup-parent
        if f in out:
            j = out.index(f); del out[j:j + 2]
    # sandboxer's group (--cgroup-parent) holds the limits; by hand they go to podman, as sandboxer
    # itself passes them where it has no group of its own: the same sandbox, podman's way
    lim = json.load(open(sys.argv[1].replace("argv.", "report.")))["config"]["limits"]
    if any(lim[k]["mechanism"].startswith("cgroup") for k in ("memory_mb", "pids", "cpus")):
        mem = int(lim["memory_mb"]["value"] * 1048576)
        out[2:2] = ["--memory=%d" % mem, "--memory-swap=%d" % mem, "--cpus=%g" % lim["cpus"]["value"],
                    "--pids-limit=%d" % lim["pids"]["value"]]
    print("\0".join(out + cmd), end="")
    sys.exit(0)
i = a.index("--")                      # the tool's own options end here; the init follows
a = a[:i]
for j, x in enumerate(a):              # firejail's generated profile goes with its run (the next
    if x.startswith("--profile="):     # sandboxer run removes a dead run's files): a copy of ours
        import os, shutil
        dst = os.path.join(os.path.dirname(sys.argv[1]), "firejail.profile")
        shutil.copyfile(x[len("--profile="):], dst)
        os.chmod(dst, 0o644)
        a[j] = "--profile=" + dst
if "--seccomp" in a:                   # bwrap's program arrives on fd 5, which only sandboxer holds
    j = a.index("--seccomp"); del a[j:j + 2]
print("\0".join(a + ["--"] + cmd), end="")
EOF
}

svc=""
if [ -z "${DOCKER_HOST:-}" ] && [ ! -S /var/run/docker.sock ] && command -v podman >/dev/null 2>&1; then
        printf '[engine]\nruntime = "runc"\n' >"$TMP/containers.conf"
        CONTAINERS_CONF=$TMP/containers.conf podman system service --time=0 "unix://$TMP/docker.sock" >/dev/null 2>&1 &
        svc=$!
        for _ in $(seq 100); do [ -S "$TMP/docker.sock" ] && break; sleep 0.1; done
        export DOCKER_HOST=unix://$TMP/docker.sock
fi
fake=""
FAKEBIN=$TMP/fakebin # podman* : tests/tools/fake-podman as podman
mkdir -p "$FAKEBIN" && ln -s "$PWD/tests/tools/fake-podman" "$FAKEBIN/podman"
trap '[ -n "$svc" ] && kill $svc 2>/dev/null; [ -n "$fake" ] && kill $fake 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT

# docker_pair SOCKET CMD... — the docker backend against the engine at SOCKET, paired with the
# same create body sent by hand (bench/docker-byhand.py: create, attach, start, inspect, delete).
docker_pair() {
        local sock=$1; shift
        DOCKER_HOST=unix://$sock SANDBOXER_DEBUG_ARGV=1 "$SBX" run --policy "$POL" --backend docker --profile "$PROF" -- "$@" 2>&1 >/dev/null |
                sed -n 's/^sandboxer: docker: POST [^ ]* //p' | head -1 >"$TMP/body.json"
        DOCKER_HOST=unix://$sock python3 bench/docker-byhand.py "$RUNS" "$sock" "$TMP/body.json" -- \
                "$SBX" run --policy "$POL" --backend docker --profile "$PROF" -- "$@"
}
python3 tests/tools/fake-docker-engine.py "$TMP/fake.sock" 2>/dev/null &
fake=$!
for _ in $(seq 100); do [ -S "$TMP/fake.sock" ] && break; sleep 0.05; done

printf '%-9s %-26s %10s %10s %10s  %s\n' BACKEND COMMAND "SBX ms" "DIRECT ms" "OVERHEAD" "95% interval"
for be in ${ONLY//,/ }; do
        if ! "$SBX" run --policy "$POL" --backend $be --profile "$PROF" -- /bin/true >/dev/null 2>&1; then
                printf '%-9s unavailable here: %s\n' $be "$("$SBX" run --policy "$POL" --backend $be --profile "$PROF" -- /bin/true 2>&1 | head -1 | cut -c1-100)"
                continue
        fi
        for c in "/bin/true" "/usr/bin/python3 -c pass"; do # absolute: the caller's PATH may hold a shim
                read -r -a cmd <<<"$c"
                sbx=("$SBX" run --policy "$POL" --backend $be --profile "$PROF" -- "${cmd[@]}")
                case $be in
                native | landlock) read -r s d o lo hi < <(paired "$RUNS" "" ${#sbx[@]} "${sbx[@]}" "${cmd[@]}") ;; # bare, as the caller
                docker)
                        # against the fake engine first (a row of its own), then the engine
                        read -r s d o lo hi < <(docker_pair "$TMP/fake.sock" "${cmd[@]}")
                        printf '%-9s %-26s %10s %10s %10s  %s\n' "docker*" "$c" "$s" "$d" "$o" "$lo..$hi"
                        read -r s d o lo hi < <(PAIR_SETTLE=0.1 docker_pair "${DOCKER_HOST#unix://}" "${cmd[@]}")
                        ;;
                podman)
                        # podman runs as root and drops to run_as itself (--user). First through
                        # tests/tools/fake-podman, which runs the line's command at once (row
                        # podman*): sandboxer's own cost without podman's ±10 ms; then podman, each
                        # run given 0.1 s to finish its `container cleanup` before the next starts
                        mapfile -d '' -t direct < <(PATH=$FAKEBIN:$PATH direct_argv $be "${cmd[@]}")
                        read -r s d o lo hi < <(PATH=$FAKEBIN:$PATH paired "$RUNS" "" ${#sbx[@]} "${sbx[@]}" "${direct[@]}")
                        printf '%-9s %-26s %10s %10s %10s  %s\n' "podman*" "$c" "$s" "$d" "$o" "$lo..$hi"
                        mapfile -d '' -t direct < <(direct_argv $be "${cmd[@]}")
                        [ "$c" = /bin/true ] && echo "# $be by hand: ${direct[*]}" >&2
                        read -r s d o lo hi < <(PAIR_SETTLE=0.1 paired "$RUNS" "" ${#sbx[@]} "${sbx[@]}" "${direct[@]}")
                        ;;
                *)
                        mapfile -d '' -t direct < <(direct_argv $be "${cmd[@]}")
                        [ "$c" = /bin/true ] && echo "# $be by hand${AS_UID:+ (as uid $AS_UID)}: ${direct[*]}" >&2
                        read -r s d o lo hi < <(paired "$RUNS" "$AS_UID" ${#sbx[@]} "${sbx[@]}" "${direct[@]}")
                        ;;
                esac
                printf '%-9s %-26s %10s %10s %10s  %s\n' $be "$c" "$s" "$d" "$o" "$lo..$hi"
        done
done
echo "podman*: through tests/tools/fake-podman, which runs the generated line's command at once on the host: sandboxer's own cost, without podman's"
echo "docker*: against a fake engine that answers at once (tests/tools/fake-docker-engine.py): sandboxer's own cost, without the engine's (podman's run varies by tens of ms)"
rm -f /run/sandboxer/firejail-*.profile "${XDG_RUNTIME_DIR:-/nonexistent}"/sandboxer/firejail-*.profile /tmp/sandboxer-"$(id -u)"/firejail-*.profile 2>/dev/null
