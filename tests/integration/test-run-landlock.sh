#!/usr/bin/env bash
# The landlock backend (no namespaces) and profile.python: each claim attacked from inside, the
# Python standard library unmodified inside, auto's fallback where namespaces are refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"

WRAP=$SBX_BUILD/tests/tools/sbx-syscall-wrap
PY=/usr/bin/python3
[ -x $PY ] || skip_all "python3 is not installed"
abi=$("$SANDBOXER" doctor --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("landlock_abi", 0))' 2>/dev/null || echo 0)
[ "${abi:-0}" -ge 6 ] || skip_all "Landlock ABI $abi here; the landlock backend needs 6"
root=0; [ "$(id -u)" = 0 ] && root=1
# profile.python forks (bounded by limits.pids): where no cgroup can bound them (an ordinary user
# here) the test policy lets pids go unenforced, and the report says none; the default policy's
# refusal is checked below, and profile.python-nofork needs no bound at all
host_has cgroup:pids || sed -i 's/^enforce: { best_effort: \[\(.*\)\] }/enforce: { best_effort: [\1, pids] }/' "$POL"
ws=$SBX_TMP/ws; mkdir -p "$ws"; cp "$(dirname "$0")/data/stdlib_workload.py" "$ws/"; chmod -R a+rX "$ws"
L=(--policy "$POL" --backend landlock --profile profile.python --workspace "$ws")

# --- the Python standard library runs unmodified: byte-identical stdout, empty stderr ---
$PY "$ws/stdlib_workload.py" >"$SBX_TMP/outside.txt" 2>"$SBX_TMP/outside.err"
is "$?/$(wc -c <"$SBX_TMP/outside.err")" "0/0" "outside: the stdlib workload runs clean"
for be in landlock native; do
        if ! backend_check $be; then
                skip "$BACKEND_WHY" 3
                continue
        fi
        run_sbx --policy "$POL" --backend $be --profile profile.python --workspace "$ws" -- $PY stdlib_workload.py
        is "$SBX_RC" 0 "$be + profile.python: the stdlib workload exits 0"
        ok $(cmp -s "$SBX_TMP/outside.txt" "$SBX_OUT_FILE" && echo 0 || echo 1) "$be + profile.python: stdout byte-identical to outside"
        is "$(wc -c <"$SBX_ERR_FILE")" 0 "$be + profile.python: stderr empty"
done

# --- scratch: fresh, private, the only writable place, gone afterwards ---
run_sbx "${L[@]}" -- $PY -c '
import os, stat
t = os.environ["TMPDIR"]
print(t == os.environ["HOME"], oct(stat.S_IMODE(os.stat(t).st_mode)), os.listdir(t))
open(t + "/f", "w").write("x")
print(t)'
scratch=$(tail -1 "$SBX_OUT_FILE")
like "$(head -1 "$SBX_OUT_FILE")" "^True 0o700 \[\]$" "scratch is TMPDIR and HOME, mode 0700, empty at start"
ok $([ -n "$scratch" ] && [ ! -e "$scratch" ] && echo 0 || echo 1) "the scratch directory is removed after the run ($scratch)"
# where: as root the scratch is a tmpfs mounted on a directory made for the run; on a /run that
# is a disk filesystem that directory goes to /dev/shm/sandboxer (no journalled mkdir/rmdir),
# unless SANDBOXER_RUNTIME_DIR names the place, or /dev/shm/sandboxer is not ours
if [ $root = 1 ] && [ -z "${SANDBOXER_RUNTIME_DIR:-}" ]; then
        if [ "$(stat -f -c %T /run/sandboxer)" != tmpfs ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
                like "$scratch" "^/dev/shm/sandboxer/run_" "root, /run on disk: the scratch's mount point is in /dev/shm/sandboxer"
                if id sbxtest >/dev/null 2>&1 && rmdir /dev/shm/sandboxer 2>/dev/null; then
                        install -d -o sbxtest -m 0711 /dev/shm/sandboxer
                        run_sbx "${L[@]}" -- $PY -c 'import os; print(os.environ["TMPDIR"])'
                        like "$SBX_RC:$SBX_OUT" "^0:/run/sandboxer/run_" "a /dev/shm/sandboxer of another user is not used: the runtime directory is"
                        rmdir /dev/shm/sandboxer
                else
                        skip "no user sbxtest, or /dev/shm/sandboxer is in use"
                fi
        else
                like "$scratch" "^/run/sandboxer/run_" "root, /run a tmpfs: the scratch is in the runtime directory"
                skip "/dev/shm/sandboxer is not used here"
        fi
        SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt2 run_sbx "${L[@]}" -- $PY -c 'import os; print(os.environ["TMPDIR"])'
        like "$SBX_RC:$SBX_OUT" "^0:$SBX_TMP/rt2/run_" "SANDBOXER_RUNTIME_DIR holds the scratch when it is set"
else
        skip "as root without SANDBOXER_RUNTIME_DIR" 3
fi
for target in /tmp/sbx-ll-probe "$HOME/sbx-ll-probe" /var/tmp/sbx-ll-probe "$ws/new"; do
        run_sbx "${L[@]}" -- $PY -c "open('$target','w')"
        ok $([ "$SBX_RC" != 0 ] && [ ! -e "$target" ] && echo 0 || echo 1) "cannot create $target"
done
like "$SBX_ERR" 'PermissionError' "refused with EACCES (PermissionError)"

# --- reading outside the read list ---
secret=$SBX_TMP/secret.txt; echo TOPSECRET >"$secret"; chmod 644 "$secret"
run_sbx "${L[@]}" -- $PY -c "print(open('$secret').read())"
ok $([[ $SBX_OUT != *TOPSECRET* ]] && [ "$SBX_RC" != 0 ] && echo 0 || echo 1) "a world-readable host file outside the read list is refused"
run_sbx "${L[@]}" -- $PY -c "print(open('/etc/passwd').read()[:4])"
ok $([ "$SBX_RC" != 0 ] && echo 0 || echo 1) "/etc/passwd (not in profile.python's read list) is refused"

# --- network: host loopback (TCP), UDP, abstract and pathname unix sockets ---
port=$((20000 + RANDOM % 20000))
$PY -c "
import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',$port)); s.listen(1); s.settimeout(15)
a=socket.socket(socket.AF_UNIX); a.bind('\0sbx-test-$$'); a.listen(1)
try: s.accept()
except Exception: pass
" &
lpid=$!
sleep 0.3
run_sbx "${L[@]}" -- $PY -c "
import socket
for fam, typ, addr in ((socket.AF_INET, socket.SOCK_STREAM, ('127.0.0.1', $port)), (socket.AF_INET, socket.SOCK_DGRAM, ('127.0.0.1', 53)),
                       (socket.AF_UNIX, socket.SOCK_STREAM, '\0sbx-test-$$')):
    try:
        s = socket.socket(fam, typ); s.connect(addr); print('REACHED', addr)
    except OSError as e:
        print('refused', e.errno)
a, b = socket.socketpair(); a.send(b'ok'); print('socketpair', b.recv(2).decode())
"
ok $([[ $SBX_OUT != *REACHED* ]] && echo 0 || echo 1) "no TCP, UDP or abstract unix socket reaches the host"
like "$SBX_OUT" 'socketpair ok' "socketpair(AF_UNIX) still works (asyncio needs it)"
# Without profile.python's socket ban, Landlock alone stops TCP and abstract sockets.
cat >"$SBX_TMP/netprof.yaml" <<YAML
id: test.lb
version: "1.0.0"
extends: profile.python
network:
  loopback: true
YAML
# a loopback of its own is what this backend cannot give: such a profile is refused up front
run_sbx --policy "$POL" --backend landlock --profile "$SBX_TMP/netprof.yaml" -- $PY -c 'print("RAN")'
ok $([ "$SBX_RC" = 125 ] && [[ $SBX_OUT != *RAN* ]] && [[ $SBX_ERR == *"lacks net.loopback"* ]] && echo 0 || echo 1) \
        "network.loopback: true on the landlock backend: refused (125), naming net.loopback" || diag "$SBX_RC: $SBX_ERR"
# and without one no socket of any family is made: the host's abstract and TCP listeners (scoped
# and refused by Landlock behind that) are out of reach, each refusal recorded
run_sbx "${L[@]}" -- $PY -c "
import socket
try:
    s = socket.socket(socket.AF_UNIX); s.connect('\0sbx-test-$$'); print('REACHED abstract')
except OSError as e: print('abstract refused', e.errno)
try:
    s = socket.socket(); s.connect(('127.0.0.1', $port)); print('REACHED tcp')
except OSError as e: print('tcp refused', e.errno)
"
is "$(echo $SBX_OUT)" "abstract refused 13 tcp refused 13" "no socket at all: the host's abstract and TCP listeners are out of reach (EACCES)"
if host_has notif; then
        is "$(json_get "$SBX_REPORT" '[(v["kind"], v["detail"].get("family")) for v in d["violations"]]')" \
                '[["NetworkAccessViolation", "unix"], ["NetworkAccessViolation", "inet"]]' \
                "each refused socket is a NetworkAccessViolation naming its family"
else
        skip "$HOST_WHY: refusals are enforced, not observed"
fi
kill $lpid 2>/dev/null; wait $lpid 2>/dev/null

# --- signals: a host process of the same uid cannot be killed ---
sleep 30 &
victim=$!
run_sbx "${L[@]}" -- $PY -c "
import os, signal
try: os.kill($victim, signal.SIGKILL); print('KILLED')
except OSError as e: print('refused', e.errno)"
sleep 0.2
ok $(kill -0 $victim 2>/dev/null && echo 0 || echo 1) "a host process ($victim) survives a kill from the sandbox ($SBX_OUT)"
kill $victim 2>/dev/null; wait $victim 2>/dev/null

# --- what Landlock does not cover: chmod, chown, utimes, xattrs ---
mine=$SBX_TMP/mine.txt; echo x >"$mine"; chmod 644 "$mine"
[ $root = 1 ] && chown 65534 "$mine"  # as root the sandbox runs as 65534: make it "its own" file
run_sbx "${L[@]}" -- $PY -c "
import os
for name, f in (('chmod', lambda: os.chmod('$mine', 0o777)), ('utime', lambda: os.utime('$mine', (0, 0))),
                ('chown', lambda: os.chown('$mine', -1, os.getgid())), ('setxattr', lambda: os.setxattr('$mine', 'user.x', b'1'))):
    try: f(); print('CHANGED', name)
    except OSError as e: print(name, 'refused', e.errno)"
ok $([[ $SBX_OUT != *CHANGED* ]] && echo 0 || echo 1) "chmod/utime/chown/setxattr on a host file it owns are refused (seccomp)"
is "$(stat -c %a "$mine")" 644 "the file's mode is unchanged"

# --- no new processes, exactly one execve ---
run_sbx "${L[@]}" -- $PY -c "
import os, subprocess
try: subprocess.run(['/bin/true']); print('SPAWNED')
except OSError as e: print('spawn refused', e.errno)
try: os.execv('/bin/true', ['true']); print('EXECED')
except OSError as e: print('exec refused', e.errno)"
is "$SBX_OUT" "spawn refused 1
exec refused 1" "profile.python: no subprocess, no second execve (EPERM)"
if host_has notif; then # recorded by the seccomp notification listener
        is "$(json_get "$SBX_REPORT" 'sorted(set(v["kind"] for v in d["violations"]))')" '["ProcessLimitViolation"]' "the refused spawn and execve are ProcessLimitViolations"
        is "$(json_get "$SBX_REPORT" '[v["detail"].get("path") for v in d["violations"] if v.get("syscall") == "execve"]')" '["/bin/true"]' "the refused execve names its path (evidence)"
else
        skip "$HOST_WHY: refusals are enforced, not observed" 2
fi

# --- never host root ---
run_sbx "${L[@]}" -- $PY -c "import os; print(os.getuid(), os.geteuid())"
if [ $root = 1 ]; then
        is "$SBX_OUT" "65534 65534" "as root, the command runs as uid 65534 (run_as)"
else
        is "$SBX_OUT" "$(id -u) $(id -u)" "as a user, the command runs as the caller"
fi
is "$(json_get "$SBX_REPORT" 'd["backend"]+"/"+d["isolation"]')" landlock/policy "report: backend landlock, isolation policy"

# --- auto: falls back to landlock where namespaces are refused; a native-only policy fails closed ---
if [ -x "$WRAP" ]; then
        "$WRAP" --eperm-ns -- "$SANDBOXER" run --policy "$POL" --profile profile.python --report "$SBX_TMP/fb.json" -- $PY -c 'print("ran")' >"$SBX_TMP/fb.out" 2>&1
        is "$(cat "$SBX_TMP/fb.out")" ran "namespaces refused (EPERM, as in Docker): auto runs profile.python on landlock"
        is "$(json_get "$SBX_TMP/fb.json" 'd["backend"]')" landlock "the report says landlock"
        like "$(json_get "$SBX_TMP/fb.json" 'd["backend_reason"]')" 'native skipped: cannot create namespaces' "and why native was skipped"
        sed 's/backends: \[native, landlock\]/backends: [native]/' "$POL" >"$SBX_TMP/native-only.yaml"
        "$WRAP" --eperm-ns -- "$SANDBOXER" run --policy "$SBX_TMP/native-only.yaml" --profile profile.python -- $PY -c 'print("ran")' >"$SBX_TMP/no.out" 2>&1
        rc=$?
        is "$rc" 125 "a policy listing only native fails closed when namespaces are refused"
        "$WRAP" --enosys landlock_create_ruleset --enosys landlock_add_rule --enosys landlock_restrict_self -- \
                "$SANDBOXER" run "${L[@]}" -- $PY -c 'print("ran")' >"$SBX_TMP/nl.out" 2>&1
        rc=$?
        ok $([ $rc = 125 ] && ! grep -q '^ran' "$SBX_TMP/nl.out" && echo 0 || echo 1) "Landlock missing: the landlock backend fails closed"
        like "$(cat "$SBX_TMP/nl.out")" 'Landlock ABI 0' "naming the missing feature"
else
        skip "sbx-syscall-wrap not built" 6
fi
# --- data mounts are refused, pointing at network.services (the endpoint-scoped proxy) ---
for t in postgres s3 redis; do
        printf 'id: test.data\nversion: "1.0.0"\nextends: profile.python\ndata:\n  - type: %s\n    name: db\n' $t >"$SBX_TMP/data-$t.yaml"
        run_sbx "${L[@]}" --profile "$SBX_TMP/data-$t.yaml" -- $PY -c 'print("RAN")'
        ok $([ "$SBX_RC" = 125 ] && [[ $SBX_OUT != *RAN* ]] && echo 0 || echo 1) "a $t data mount is refused (exit 125, nothing runs)"
        like "$SBX_ERR" "data-$t.yaml:5:[0-9]+: data: a $t data mount is not something sandboxer mounts; name its endpoint in network.services" "with file:line:column and the way to reach it"
done

# --- as an ordinary user, what nothing can enforce here fails closed with the default policy ---
if [ $root = 0 ]; then
        run_sbx --backend landlock --profile profile.python -- $PY -c 'print("ran")'
        is "$SBX_RC" 125 "unprivileged, default policy: the landlock backend refuses to run unenforced"
        like "$SBX_ERR" 'limits\.(memory_mb|cpus|scratch_mb)' "naming the limit"
        like "$SBX_ERR" 'enforce\.best_effort' "and the policy way out"
else
        skip "fail-closed without best_effort: only an ordinary user lacks cgroups and mounts" 3
fi
# --- the command cannot signal its init (no pid namespace here: a nested Landlock signal scope) ---
# A stopped init would never hear of its supervisor's death, and the command would outlive it.
# (sh's builtins only: profile.python allows no second process)
run_sbx "${L[@]}" -- /bin/sh -c 'kill -STOP $PPID 2>/dev/null; echo "stop:$?"; kill -0 $PPID 2>/dev/null; echo "probe:$?"'
is "$SBX_RC/$(tr '\n' ' ' <<<"$SBX_OUT")" "0/stop:1 probe:1 " "the command cannot stop (or even probe) its init; the run ends normally"

# --- a run killed with SIGKILL: its scratch (named for its owner) goes with the next run, or gc ---
killed_scratch() { # start a sleeping python, SIGKILL sandboxer; sets KSCR (its scratch)
        local i out=$SBX_TMP/killed.$1.out
        leftovers_snapshot
        cp "$SBX_TMP/leftovers.before" "$SBX_TMP/leftovers.killed"
        "$SANDBOXER" run "${L[@]}" -- $PY -c 'import os, time; print(os.environ["TMPDIR"], flush=True); open(os.environ["TMPDIR"] + "/f", "w").write("x"); time.sleep(30)' >"$out" 2>"$out.err" &
        local kpid=$!
        sbx_started $kpid
        for ((i = 0; i < 100; i++)); do [ -s "$out" ] && break; sleep 0.05; done
        KSCR=$(head -1 "$out")
        pgrep -f '^/usr/bin/python3 -c import os, time' >/dev/null
        ok $? "killed run: the command was running when sandboxer was killed"
        kill -9 $kpid
        wait $kpid 2>/dev/null
        [ -n "$KSCR" ] || diag "$(cat "$out.err")"
        like "$KSCR" "/run_[0-9a-f]{24}\.$kpid\.[0-9a-f]+$" "killed run: its scratch is named for its owner ($KSCR)"
        ok $([ -d "$KSCR" ] && echo 0 || echo 1) "killed run: it left its scratch"
        # the command dies with its supervisor: no pid namespace here, so the init kills its tree
        for ((i = 0; i < 40; i++)); do pgrep -f '^/usr/bin/python3 -c import os, time' >/dev/null || break; sleep 0.05; done
        ok $([ $i -lt 40 ] && echo 0 || echo 1) "killed run: the command died with its supervisor"
}
killed_scratch 1
run_sbx "${L[@]}" -- $PY -c 'pass'
is "$SBX_RC" 0 "the next run succeeds"
ok $([ -n "$KSCR" ] && [ ! -e "$KSCR" ] && echo 0 || echo 1) "the next run removed the killed run's scratch"
cp "$SBX_TMP/leftovers.killed" "$SBX_TMP/leftovers.before" # against the state before the killed run
assert_no_leftovers "killed run: nothing left after the next run"
killed_scratch 2
out=$("$SANDBOXER" gc --json 2>&1)
like "$out" "${KSCR##*/}" "sandboxer gc: lists the killed run's scratch"
ok $([ -n "$KSCR" ] && [ ! -e "$KSCR" ] && echo 0 || echo 1) "sandboxer gc: removed it"
cp "$SBX_TMP/leftovers.killed" "$SBX_TMP/leftovers.before"
assert_no_leftovers "killed run: nothing left after gc"

# --- names in the runtime directory that only look like a run's: never taken for a dead one ---
# (garbage, no pid, a pid namespace of 0, a live owner: pid 1 in ours, another namespace's)
rt=$(dirname "${KSCR:-/nonexistent/x}")
ns=$(printf '%x' "$(stat -L -c %i /proc/self/ns/pid)")
junk=(run_garbage run_x.notapid.ff "run_y.1.0" "run_z.1.$ns" "run_w.999999999.1234abcd" "run_v..$ns")
if [ -d "$rt" ]; then
        for j in "${junk[@]}"; do mkdir "$rt/$j"; done
        run_sbx "${L[@]}" -- $PY -c 'pass'
        is "$SBX_RC" 0 "a run beside look-alike names in the runtime directory succeeds"
        left=0; for j in "${junk[@]}"; do [ -d "$rt/$j" ] && left=$((left + 1)); done
        is "$left" "${#junk[@]}" "and removes none of them"
        out=$("$SANDBOXER" gc --json 2>&1)
        ok $([[ $out != *run_garbage* && $out != *notapid* && $out != *run_z.* && $out != *run_w.* ]] && echo 0 || echo 1) "sandboxer gc lists none of them"
        left=0; for j in "${junk[@]}"; do [ -d "$rt/$j" ] && left=$((left + 1)); done
        is "$left" "${#junk[@]}" "and removes none of them"
        for j in "${junk[@]}"; do rmdir "$rt/$j"; done
else
        skip "no runtime directory seen" 4
fi

assert_no_leftovers
done_testing
