#!/usr/bin/env bash
# `sandboxer run`: exit codes, timeout, budget, output cap, daemonised leftovers, cancellation,
# and the report on every outcome — with nothing left on the host after each.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"
require_backend native # its sandboxes are native ones (skipped with the reason where the host cannot)

S=(--policy "$POL" --backend native)
status() { json_get "$SBX_REPORT" 'd["status"]'; }

# --- exit codes ---
run_sbx "${S[@]}" -- /bin/sh -c 'exit 0'
is "$SBX_RC" 0 "exit 0 passes through"
run_sbx "${S[@]}" -- /bin/sh -c 'exit 3'
is "$SBX_RC" 3 "exit 3 passes through"
is "$(json_get "$SBX_REPORT" 'd["exit"]["code"]')" 3 "report exit.code 3"
run_sbx "${S[@]}" -- /bin/sh -c 'kill -USR1 $$'
is "$SBX_RC" $((128 + 10)) "death by SIGUSR1 gives 138"
is "$(status)/$(json_get "$SBX_REPORT" 'd["exit"]["signal"]')" signaled/10 "report: signaled, signal 10"
run_sbx "${S[@]}" -- no-such-command-xyz
is "$SBX_RC" 127 "command not found: 127"
is "$(status)/$(json_get "$SBX_REPORT" 'd["exit"]["code"]')" exited/127 "report: exited, code 127"
like "$(json_get "$SBX_REPORT" 'd["error"]')" 'not found.*no-such-command-xyz' "report error names the command"
run_sbx "${S[@]}" -- /etc/passwd
is "$SBX_RC" 126 "not executable: 126"
like "$(json_get "$SBX_REPORT" 'd["error"]')" 'not executable' "report error says not executable"
run_sbx "${S[@]}" -- /tmp
is "$SBX_RC" 126 "a directory: 126"
assert_no_leftovers

# --- a caller that ignores SIGCHLD and SIGPIPE: ignored dispositions survive exec, but they are
# the caller's. SIGCHLD ignored had the kernel reap the command behind the init's back (the run
# hung until its timeout); the command starts with every disposition at its default. ---
# (the landlock backend's /proc is unreadable unless the profile lists it: this one does)
printf 'id: test.py-proc\nversion: "1.0.0"\nextends: profile.python-nofork\nfilesystem:\n  read: [/usr, /lib, /lib64, /bin, /proc]\n' >"$SBX_TMP/py-proc.yaml"
chmod 644 "$SBX_TMP/py-proc.yaml"
for be in native landlock; do
        prof=(); [ $be = landlock ] && prof=(--profile "$SBX_TMP/py-proc.yaml")
        out=$(timeout 30 python3 -c '
import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$SANDBOXER" run --policy "$POL" --backend $be "${prof[@]}" -- \
                /bin/grep -h SigIgn /proc/self/status /nonexistent 2>&1)
        rc=$? # grep: 2, a file missing
        is "$rc" 2 "$be: caller ignoring SIGCHLD: the exit code comes through (no hang)"
        like "$out" 'SigIgn:[[:space:]]+0+'$'\n' "$be: the command's dispositions are the defaults"
done
assert_no_leftovers

# --- 125: sandboxer's own failures, with a setup_error report ---
run_sbx "${S[@]}" --bogus-flag -- /bin/true
is "$SBX_RC" 125 "unknown option: 125"
is "$(status)" setup_error "unknown option: report status setup_error"
run_sbx "${S[@]}" --profile /nonexistent/profile.yaml -- /bin/true
is "$SBX_RC" 125 "missing profile file: 125"
like "$SBX_ERR" 'nonexistent/profile.yaml' "missing profile: message names the file"
is "$(status)" setup_error "missing profile: report written, setup_error"
echo 'id: [' >"$SBX_TMP/bad.yaml"
run_sbx "${S[@]}" --profile "$SBX_TMP/bad.yaml" -- /bin/true
is "$SBX_RC" 125 "malformed profile: 125"
like "$SBX_ERR" 'bad.yaml:[0-9]+:[0-9]+' "malformed profile: file:line:column"
# Policy and profile files are kept as they parsed (the cache directory), keyed by their bytes:
# an edit between two runs applies at once, and a file broken by an edit fails with its position.
export SANDBOXER_CACHE_DIR=$SBX_TMP/cache
sed 's/timeout_s: 45,/timeout_s: 41,/' "$POL" >"$SBX_TMP/pc.yaml"
run_sbx --policy "$SBX_TMP/pc.yaml" --backend native -- /bin/true
run_sbx --policy "$SBX_TMP/pc.yaml" --backend native -- /bin/true
is "$(json_get "$SBX_REPORT" 'd["config"]["limits"]["timeout_s"]["value"]')" 41 "policy file, second run: timeout_s 41"
ls "$SANDBOXER_CACHE_DIR"/parse-*.bin >/dev/null 2>&1
ok $? "the parsed policy file is kept in the cache directory"
sed -i 's/timeout_s: 41,/timeout_s: 42,/' "$SBX_TMP/pc.yaml"
run_sbx --policy "$SBX_TMP/pc.yaml" --backend native -- /bin/true
is "$(json_get "$SBX_REPORT" 'd["config"]["limits"]["timeout_s"]["value"]')" 42 "the file edited: timeout_s 42 at once"
sed -i 's/^run_as: .*/run_az: 1/' "$SBX_TMP/pc.yaml"
run_sbx --policy "$SBX_TMP/pc.yaml" --backend native -- /bin/true
is "$SBX_RC" 125 "the file broken by an edit: 125"
like "$SBX_ERR" 'pc.yaml:[0-9]+:[0-9]+.*run_az' "and the error names file, line, column and key"
unset SANDBOXER_CACHE_DIR
run_sbx --timeout 5 -- /bin/true
is "$SBX_RC" 125 "per-request override refused by the default policy: 125"
like "$SBX_ERR" 'timeout_s' "refusal names the policy key timeout_s"
run_sbx "${S[@]}" --cwd /nonexistent -- /bin/true
is "$SBX_RC" 125 "missing working directory: 125"
is "$(status)" setup_error "missing working directory: setup_error"
run_sbx "${S[@]}" --backend nosuch -- /bin/true
is "$SBX_RC" 125 "unknown backend: 125"
run_sbx "${S[@]}" --mode strict -- /bin/true
is "$SBX_RC" 125 "strict mode with no strict backend: 125"
is "$(json_get "$SBX_REPORT" 'd["violations"][0]["kind"]')" StrictModeUnavailable "report names StrictModeUnavailable"
run_sbx "${S[@]}"
is "$SBX_RC" 125 "no command: 125"
assert_no_leftovers

# --- timeout: a command that ignores SIGTERM, and a child that does too ---
start=$(date +%s%N)
run_sbx "${S[@]}" --timeout 1 -- /bin/sh -c 'trap "" TERM; (trap "" TERM; sleep 60) & sleep 60'
ms=$((($(date +%s%N) - start) / 1000000))
is "$SBX_RC" 124 "timeout: exit 124"
is "$(status)" timeout "timeout: status timeout"
is "$(json_get "$SBX_REPORT" 'd["violations"][0]["kind"]')" TimeoutViolation "timeout: TimeoutViolation recorded"
is "$(json_get "$SBX_REPORT" 'd["exit"]["killed_by_sandbox"]')" true "timeout: killed_by_sandbox"
ok $([ $ms -lt 3000 ] && echo 0 || echo 1) "timeout: returned in ${ms} ms (limit 1 s)"
assert_no_leftovers "timeout: nothing left (SIGTERM-immune children included)"

# Fractional seconds.
start=$(date +%s%N)
run_sbx "${S[@]}" --timeout 0.3 -- /bin/sleep 10
ms=$((($(date +%s%N) - start) / 1000000))
ok $([ "$SBX_RC" = 124 ] && [ $ms -lt 1500 ] && echo 0 || echo 1) "timeout 0.3 s honoured (${ms} ms)"

# Budget smaller than the timeout ends the run too.
run_sbx "${S[@]}" --budget 0.5 -- /bin/sleep 10
is "$SBX_RC/$(status)" 124/timeout "budget_s ends the run"
is "$(json_get "$SBX_REPORT" 'd["violations"][0]["detail"]["limit"]')" budget_s "violation names budget_s"

# --- a daemonised grandchild does not outlive the run ---
start=$(date +%s%N)
run_sbx "${S[@]}" -- /bin/sh -c 'setsid /bin/sh -c "sleep 100" </dev/null >/dev/null 2>&1 & echo parent-done'
ms=$((($(date +%s%N) - start) / 1000000))
is "$SBX_RC/$SBX_OUT" "0/parent-done" "daemonising command exits 0"
ok $([ $ms -lt 2000 ] && echo 0 || echo 1) "run returns when the command ends (${ms} ms), not when the daemon does"
assert_no_leftovers "daemonised grandchild killed"
# Holding the output pipe open does not keep the run alive either.
start=$(date +%s%N)
run_sbx "${S[@]}" -- /bin/sh -c '(sleep 100 &) ; echo out'
ms=$((($(date +%s%N) - start) / 1000000))
ok $([ "$SBX_RC" = 0 ] && [ $ms -lt 2000 ] && echo 0 || echo 1) "a grandchild holding stdout does not hold the run (${ms} ms)"
assert_no_leftovers

# --- output cap ---
run_sbx "${S[@]}" --output 1 -- /usr/bin/yes
is "$(status)" output_limit "output flood: status output_limit"
is "$(json_get "$SBX_REPORT" 'd["usage"]["stdout_bytes"]')" 1048576 "output flood: exactly 1 MiB counted"
is "$(stat -c %s "$SBX_OUT_FILE")" 1048576 "output flood: exactly 1 MiB passed through"
is "$(json_get "$SBX_REPORT" 'd["usage"]["output_truncated"]')" true "output flood: output_truncated"
is "$(json_get "$SBX_REPORT" 'd["violations"][0]["kind"]')" OutputLimitViolation "output flood: OutputLimitViolation"
ok $([ "$SBX_RC" -ge 128 ] && echo 0 || echo 1) "output flood: non-zero exit ($SBX_RC)"
run_sbx "${S[@]}" --output 1 -- /bin/sh -c 'yes >&2'
is "$(json_get "$SBX_REPORT" 'd["usage"]["stderr_bytes"]')" 1048576 "stderr counts against the cap"
assert_no_leftovers

# --- cancellation: SIGTERM to sandboxer is forwarded; grace; kill; report says cancelled ---
for sig in TERM INT HUP; do
        rep=$SBX_TMP/cancel-$sig.json
        "$SANDBOXER" run "${S[@]}" --report "$rep" -- /bin/sh -c 'trap "" TERM INT HUP; sleep 60' >/dev/null 2>&1 &
        pid=$!
        sbx_started $pid
        sleep 0.5
        start=$(date +%s%N)
        kill -$sig $pid
        wait $pid
        rc=$?
        ms=$((($(date +%s%N) - start) / 1000000))
        signum=$(kill -l $sig)
        is "$rc" $((128 + signum)) "SIG$sig: exit 128+$signum"
        is "$(json_get "$rep" 'd["status"]')" cancelled "SIG$sig: report status cancelled"
        ok $([ $ms -lt 5000 ] && echo 0 || echo 1) "SIG$sig: ignored by the command, killed after the grace (${ms} ms)"
done
# A command that handles the forwarded signal ends at once.
"$SANDBOXER" run "${S[@]}" --report "$SBX_TMP/c2.json" -- /bin/sh -c 'trap "echo got-term; exit 0" TERM; sleep 60 & wait' >"$SBX_TMP/c2.out" 2>&1 &
pid=$!
sbx_started $pid
sleep 0.5
start=$(date +%s%N)
kill -TERM $pid
wait $pid
ms=$((($(date +%s%N) - start) / 1000000))
like "$(cat "$SBX_TMP/c2.out")" got-term "the command received the forwarded SIGTERM"
ok $([ $ms -lt 1500 ] && echo 0 || echo 1) "and ended without waiting for the grace (${ms} ms)"
leftovers_snapshot; sleep 0.2
assert_no_leftovers "after cancellations: nothing left"

# --- report destinations ---
out=$("$SANDBOXER" run "${S[@]}" --report - -- /bin/true 2>&1 >/dev/null)
like "$out" '"schema": "sandboxer.report/v1"' "--report - writes the report to stderr"
out=$("$SANDBOXER" run "${S[@]}" --report-fd 9 -- /bin/true 9>&1 >/dev/null 2>/dev/null)
like "$out" '"status": "exited"' "--report-fd 9 writes the report to fd 9"
run_sbx "${S[@]}" --report-fd 99 -- /bin/true
is "$SBX_RC" 125 "--report-fd of a closed descriptor: 125"
done_testing
