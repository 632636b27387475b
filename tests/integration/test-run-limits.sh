#!/usr/bin/env bash
# `sandboxer run`: resource limits hit for real — memory, pids (processes and threads), CPU quota,
# scratch size, core dumps — each checked in the report (status, violation, figures, mechanism),
# with nothing left on the host after each; clean-up after a supervisor killed with SIGKILL; and
# as an unprivileged user: a clear refusal by default, fallbacks with the test policy.
# Every bomb here runs inside a sandbox whose own limit bounds it (and is finite by itself).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"
require_backend native # its sandboxes are native ones (skipped with the reason where the host cannot)

S=(--policy "$POL" --backend native)
r() { json_get "$SBX_REPORT" "$1"; } # r EXPR — a value of the last run's report
# Can a sandbox get memory, pids and cpu groups of its own here (root, or a delegated cgroup)?
# Judged outside sandboxer; the cases below that need them are skipped with the host's reason.
CG=1 CGWHY=""
for c in memory pids cpu; do host_has "cgroup:$c" || { CG=0 CGWHY=$HOST_WHY; break; }; done
CGMECH=cgroup_v1 # what enforces memory/pids/cpus here
if [ $CG = 1 ]; then
        grep -qE '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup || CGMECH=cgroup_v2
fi
# The violation of a kind, as JSON (null when absent).
viol() { r "([v for v in d['violations'] if v['kind'] == '$1'] or [None])[0]"; }
vdetail() { r "[v for v in d['violations'] if v['kind'] == '$1'][0]['detail']['$2']"; }
mech() { r "d['config']['limits']['$1']['mechanism']"; }

# ---------------------------------------------------------------------------------------------
if [ $CG = 1 ]; then
        diag "as $(id -un): limits by $CGMECH"

        # --- memory: 200 MiB touched under 32 MiB ---
        run_sbx "${S[@]}" --memory 32 --timeout 30 -- python3 -c 'a = b"x" * (200 << 20); print(len(a))'
        is "$SBX_RC" 137 "memory bomb: killed (exit 137)"
        is "$(r 'd["status"]')" memory_limit "memory bomb: status memory_limit"
        is "$(vdetail MemoryLimitViolation limit_mb)" 32 "memory bomb: MemoryLimitViolation with limit_mb 32"
        ok "$( { [ "$(vdetail MemoryLimitViolation oom_kills 2>/dev/null || echo 0)" -ge 1 ] ||
                 [ "$(vdetail MemoryLimitViolation oom_event 2>/dev/null || echo 0)" = 1 ]; } && echo 0 || echo 1)" \
                "memory bomb: the cgroup's own OOM evidence (oom_kill counter or OOM event)"
        peak=$(vdetail MemoryLimitViolation peak_bytes 2>/dev/null || echo -1)
        ok "$([ "$peak" -gt $((16 << 20)) ] && [ "$peak" -le $((33 << 20)) ] && echo 0 || echo 1)" \
                "memory bomb: peak $peak bytes, at the 32 MiB limit"
        is "$(r 'd["exit"]["killed_by_sandbox"]')" true "memory bomb: killed_by_sandbox"
        is "$(mech memory_mb)" "$CGMECH" "memory bomb: memory_mb enforced by $CGMECH"
        assert_no_leftovers "memory bomb: nothing left"

        # --- pids: a bounded fork bomb (64 forks at most) under 16 tasks ---
        run_sbx "${S[@]}" --pids 16 --timeout 30 -- python3 -c '
import os, time
ok = failed = 0
for i in range(64):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        ok += 1
    except OSError:
        failed += 1
print(ok, failed)'
        read -r forked refused <<<"$SBX_OUT"
        is "$SBX_RC" 0 "fork bomb: the command survives the refusals and exits 0"
        is "$(r 'd["status"]')" exited "fork bomb: status stays exited"
        ok "$([ "${forked:-99}" -le 14 ] && [ "${refused:-0}" -ge 50 ] && echo 0 || echo 1)" \
                "fork bomb: bounded ($forked forks, $refused refused; init and python count too)"
        is "$(vdetail ProcessLimitViolation limit)" 16 "fork bomb: ProcessLimitViolation with limit 16"
        ok "$([ "$(vdetail ProcessLimitViolation refused 2>/dev/null || echo 0)" -ge 1 ] && echo 0 || echo 1)" \
                "fork bomb: refusal count $(vdetail ProcessLimitViolation refused 2>/dev/null) recorded"
        ok "$([ "$(r 'd["usage"]["pids_peak"]')" -le 16 ] && echo 0 || echo 1)" \
                "fork bomb: pids_peak $(r 'd["usage"]["pids_peak"]') <= 16"
        is "$(mech pids)" "$CGMECH" "fork bomb: pids enforced by $CGMECH"
        assert_no_leftovers "fork bomb: nothing left (the sleeping children included)"

        # --- threads count as tasks ---
        run_sbx "${S[@]}" --pids 16 --timeout 30 -- python3 -c '
import threading, time
started = failed = 0
for i in range(40):
    try:
        threading.Thread(target=time.sleep, args=(1,), daemon=True).start()
        started += 1
    except RuntimeError:
        failed += 1
print(started, failed)'
        read -r started tfailed <<<"$SBX_OUT"
        is "$SBX_RC" 0 "threads: the command exits 0"
        ok "$([ "${tfailed:-0}" -ge 20 ] && [ "${started:-99}" -le 14 ] && echo 0 || echo 1)" \
                "threads: 40 threads under pids 16: $started started, $tfailed refused"
        ok "$([ "$(vdetail ProcessLimitViolation refused 2>/dev/null || echo 0)" -ge 1 ] && echo 0 || echo 1)" \
                "threads: ProcessLimitViolation recorded"
        assert_no_leftovers "threads: nothing left"

        # --- cpus 0.5: a spinner that ends by itself after 2 s of wall time ---
        run_sbx "${S[@]}" --cpus 0.5 --timeout 30 -- python3 -c '
import time
end = time.time() + 2
while time.time() < end:
    pass'
        is "$SBX_RC" 0 "cpu spinner: exits 0 after 2 s"
        ratio=$(r '(d["usage"]["cpu_user_ms"] + d["usage"]["cpu_sys_ms"]) / d["usage"]["wall_ms"]')
        ok "$(python3 -c "import sys; sys.exit(0 if 0.3 <= $ratio <= 0.7 else 1)" && echo 0 || echo 1)" \
                "cpu spinner: cpu/wall = $ratio under cpus 0.5 (0.3..0.7)"
        is "$(mech cpus)" "$CGMECH" "cpu spinner: cpus enforced by $CGMECH"
        assert_no_leftovers "cpu spinner: nothing left"
fi

# --- scratch: 100 MiB into a 16 MiB scratch. The tmpfs refuses (ENOSPC) like a full disk, and
# the command sees its own error: not a violation (DESIGN names none; the command survives and
# decides), status stays how it ended. The report shows the mechanism.
run_sbx "${S[@]}" --scratch 16 --timeout 30 -- /bin/sh -c 'dd if=/dev/zero of="$TMPDIR/fill" bs=1M count=100 2>&1; echo "dd=$?"; df -k "$TMPDIR" | tail -1'
like "$SBX_OUT" 'No space left on device' "scratch fill: ENOSPC inside"
like "$SBX_OUT" 'dd=1' "scratch fill: the command's own error (dd exits 1)"
like "$SBX_OUT" ' 16384 ' "scratch fill: scratch is 16 MiB"
is "$SBX_RC/$(r 'd["status"]')" 0/exited "scratch fill: status exited, exit 0 (the command decided)"
is "$(r 'len(d["violations"])')" 0 "scratch fill: no violation recorded"
is "$(mech scratch_mb)" tmpfs "scratch fill: scratch_mb enforced by tmpfs"
assert_no_leftovers "scratch fill: nothing left"

# --- core dumps are off ---
run_sbx "${S[@]}" -- /bin/sh -c 'ulimit -c; ulimit -H -c'
is "$SBX_OUT" "0
0" "RLIMIT_CORE 0 (soft and hard)"
assert_no_leftovers

# ---------------------------------------------------------------------------------------------
if [ $CG = 0 ]; then
        diag "as $(id -un): $CGWHY"
        # The default policy lists nothing under best_effort: memory and cpus cannot be enforced.
        run_sbx --backend native -- /bin/true
        is "$SBX_RC" 125 "default policy: fails closed (125)"
        like "$SBX_ERR" 'limits\.(memory_mb|cpus)' "default policy: the message names the limit"
        like "$SBX_ERR" 'best_effort' "default policy: the message names the policy fix"
        like "$SBX_ERR" 'root|delegat' "default policy: the message names the host fix"
        is "$(r 'd["status"]')" setup_error "default policy: report status setup_error"
        assert_no_leftovers

        # The test policy: memory_mb and cpus best effort, pids by RLIMIT_NPROC.
        run_sbx "${S[@]}" -- /bin/true
        is "$SBX_RC" 0 "test policy: runs"
        is "$(mech memory_mb)/$(mech cpus)/$(mech pids)" none/none/rlimit \
                "test policy: memory_mb none, cpus none, pids rlimit"

        run_sbx "${S[@]}" --pids 16 --timeout 30 -- python3 -c '
import os, time
ok = failed = 0
for i in range(64):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        ok += 1
    except OSError:
        failed += 1
print(ok, failed)'
        read -r forked refused <<<"$SBX_OUT"
        is "$SBX_RC" 0 "fork bomb (rlimit): the command exits 0"
        ok "$([ "${forked:-99}" -le 15 ] && [ "${refused:-0}" -ge 49 ] && echo 0 || echo 1)" \
                "fork bomb (rlimit): stopped by RLIMIT_NPROC ($forked forks, $refused refused)"
        assert_no_leftovers "fork bomb (rlimit): nothing left"
fi

# --- doctor: each controller usable or why not ---
"$SANDBOXER" doctor --json >"$SBX_TMP/doctor.json" 2>/dev/null
for c in memory pids cpu freezer; do
        av=$(json_get "$SBX_TMP/doctor.json" "d['features']['cgroup_$c']['available']")
        detail=$(json_get "$SBX_TMP/doctor.json" "d['features']['cgroup_$c']['detail']")
        if [ "$av" = true ]; then
                ok 0 "doctor: cgroup $c usable: $detail"
        else
                like "$detail" 'not|no |cannot' "doctor: cgroup $c not usable, and why: ${detail:0:80}..."
        fi
done
want=$(for c in memory pids cpu; do host_has "cgroup:$c" && echo true || echo false; done | paste -sd, | sed 's/,/, /g')
is "$(json_get "$SBX_TMP/doctor.json" "[d['features']['cgroup_' + c]['available'] for c in ('memory', 'pids', 'cpu')]")" \
        "[$want]" "doctor agrees with the host on memory, pids, cpu: [$want]"
if [ $CG = 0 ]; then
        like "$(json_get "$SBX_TMP/doctor.json" "d['features']['cgroup_memory']['detail']")" 'fix' \
                "doctor unprivileged: the memory controller's reason names the fix"
fi

# ---------------------------------------------------------------------------------------------
# A `sandboxer run` killed with SIGKILL: its sandbox dies with it (PDEATHSIG; the pid namespace
# goes with its init), and the cgroups it leaves are removed by the next run (or `sandboxer gc`).
groups_of() { find /sys/fs/cgroup -type d -name "run_*.$1.*" 2>/dev/null; }
procs_of() { # PID — processes left in its groups, or the sleep it ran (when there is no cgroup)
        local g
        for g in $(groups_of "$1"); do cat "$g/cgroup.procs" 2>/dev/null; done
        pgrep -f "^sleep $2\$" 2>/dev/null
}
killed_run() { # start `sleep DUR` in a sandbox, SIGKILL the supervisor; sets KPID
        local dur=$1 i
        leftovers_snapshot
        "$SANDBOXER" run "${S[@]}" --report "$SBX_TMP/killed.$dur.json" -- sleep "$dur" &
        KPID=$!
        sbx_started $KPID
        for ((i = 0; i < 100; i++)); do # until the sleep runs inside
                pgrep -f "^sleep $dur\$" >/dev/null && break
                sleep 0.05
        done
        pgrep -f "^sleep $dur\$" >/dev/null
        ok $? "killed run: sleep $dur is running in the sandbox"
        kill -9 "$KPID"
        wait "$KPID" 2>/dev/null
        local start=$SECONDS gone=1
        for ((i = 0; i < 20; i++)); do
                [ -z "$(procs_of "$KPID" "$dur")" ] && { gone=0; break; }
                sleep 0.05
        done
        ok $gone "killed run: its sandbox processes are gone within 1 s" || diag "left: $(procs_of "$KPID" "$dur")"
}
dur=30.$$1
killed_run "$dur"
# SBX_PER_RUN_SCOPE=1: each sandboxer runs alone in a fresh delegated cgroup of its own, as under
# `systemd-run --user --scope -p Delegate=yes` (test-cgroup2-guest.sh's ordinary user): the next
# run's, and gc's, groups are under another scope, and the dead scope is its manager's to remove.
if [ $CG = 1 ] && [ "${SBX_PER_RUN_SCOPE:-}" = 1 ]; then
        run_sbx "${S[@]}" -- /bin/true
        is "$SBX_RC" 0 "the next run succeeds"
        skip "a scope per run: the killed run's groups are under its own scope, not the next run's" 2
        for g in $(groups_of "$KPID"); do rmdir "$g"; done
elif [ $CG = 1 ]; then
        left=$(groups_of "$KPID")
        ok "$([ -n "$left" ] && echo 0 || echo 1)" "killed run: it left its cgroups ($(echo "$left" | wc -l) dirs)"
        run_sbx "${S[@]}" -- /bin/true
        is "$SBX_RC" 0 "the next run succeeds"
        is "$(groups_of "$KPID")" "" "the next run removed the killed run's cgroups"
else
        run_sbx "${S[@]}" -- /bin/true
        is "$SBX_RC" 0 "the next run succeeds"
        skip "$CGWHY: no groups to remove" 2
fi
assert_no_leftovers "killed run: nothing left after the next run"

dur=30.$$2
killed_run "$dur"
if [ $CG = 1 ] && [ "${SBX_PER_RUN_SCOPE:-}" = 1 ]; then
        "$SANDBOXER" gc --json >/dev/null 2>&1
        ok $? "sandboxer gc: runs"
        skip "a scope per run: gc looks under its own scope only" 1
        for g in $(groups_of "$KPID"); do rmdir "$g"; done
elif [ $CG = 1 ]; then
        out=$("$SANDBOXER" gc --json 2>&1)
        like "$out" "run_[0-9a-f]+\.$KPID\." "sandboxer gc: lists the killed run's group"
        is "$(groups_of "$KPID")" "" "sandboxer gc: removed the killed run's cgroups"
else
        "$SANDBOXER" gc --json >/dev/null 2>&1
        ok $? "sandboxer gc: runs unprivileged (nothing of ours to remove)"
        skip "$CGWHY" 1
fi
assert_no_leftovers "killed run: nothing left after gc"

# A container engine makes its own group below ours (runc's libpod-..., in every v1 hierarchy);
# a dead run's group with one still below it is removed with it, not left busy.
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/blkio ] && [ -w /sys/fs/cgroup/blkio ]; then
        dead=$(sh -c 'echo $$')
        ns=$(printf '%x' "$(stat -L -c %i /proc/self/ns/pid)")
        g=/sys/fs/cgroup/blkio/sandboxer/run_0123456789abcdef01234567.$dead.$ns
        mkdir -p "$g/libpod-test"
        "$SANDBOXER" gc >/dev/null 2>&1
        [ ! -e "$g" ]
        ok $? "sandboxer gc removes a dead run's group with an engine's group below it"
        rmdir "$g/libpod-test" "$g" 2>/dev/null
else
        skip "needs root and a v1 blkio hierarchy" 1
fi
SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt-dry "$SANDBOXER" gc --dry-run >/dev/null 2>&1
ok $([ $? = 0 ] && [ ! -e "$SBX_TMP/rt-dry" ] && echo 0 || echo 1) "sandboxer gc --dry-run creates nothing, not even the runtime directory"

done_testing
