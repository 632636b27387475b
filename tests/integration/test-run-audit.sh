#!/usr/bin/env bash
# Refused writes recorded from the kernel's own Landlock denial records (audit, Landlock ABI 7):
# the evidence source each run reports, the path of a refused write and of a refused creation,
# nothing recorded for allowed writes, the sandbox's own records told apart from another's,
# on_violation: kill, and what is said where the source is unavailable. As root the test turns
# the host's audit on for its own duration (tests/tools/audit-ctl.py) and back as it was.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"

CTL="python3 $SBX_SRC/tests/tools/audit-ctl.py"
# a runtime dir of our own: sandboxer remembers the host's audit state there for a few seconds
export SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt
forget() { rm -f "$SANDBOXER_RUNTIME_DIR/audit.state"; }
abi=$("$SANDBOXER" doctor --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("landlock_abi", 0))' 2>/dev/null || echo 0)
[ "${abi:-0}" -ge 6 ] || skip_all "Landlock ABI $abi here; the landlock backend needs 6"
LLP=$SBX_TMP/ll.yaml
cat >"$LLP" <<'YAML'
id: test.audit
version: "1.0.0"
extends: profile.default
isolation: { level: policy }
network: { loopback: false }
YAML
chmod 644 "$LLP"
# without a cgroup (an ordinary user here) nothing bounds pids on the landlock backend
sed -i 's/^enforce: .*/enforce: { best_effort: [memory_mb, cpus, scratch_mb, pids] }/' "$POL"
L=(--policy "$POL" --backend landlock --profile "$LLP")
evidence() { json_get "$SBX_REPORT" 'd["fs_write_evidence"]["source"]'; }
fsw() { # the FilesystemWriteViolations of the last run: "path access source" lines
        json_get "$SBX_REPORT" '"\n".join("%s %s %s" % (v["detail"].get("path"), v["detail"].get("access"), v["detail"].get("source")) for v in d["violations"] if v["kind"] == "FilesystemWriteViolation")'
}

if [ "$(id -u)" != 0 ]; then
        plan 3
        run_sbx "${L[@]}" -- /bin/sh -c 'echo x > /var/tmp/sbx-audit-unpriv-$$ 2>/dev/null; true'
        is "$(evidence)" none "as an ordinary user: no audit source (fs_write_evidence.source none)"
        like "$(json_get "$SBX_REPORT" 'd["fs_write_evidence"]["note"]')" "needs root.*observe.fs_writes" \
                "the note says why, and what records writes instead"
        run_sbx "${L[@]}" -- /bin/true
        is "$SBX_RC" 0 "and the run is unaffected"
        exit 0
fi
[ "${abi:-0}" -ge 7 ] || skip_all "Landlock ABI $abi here: denial records need 7"
$CTL status >/dev/null 2>&1 || skip_all "the kernel's audit cannot be asked here (no CONFIG_AUDIT, or a container)"
plan 31

# ---- audit off: said so, nothing else changes ----
state0=$($CTL status)
if [ "$state0" = enabled=0 ]; then
        run_sbx "${L[@]}" -- /bin/sh -c 'echo x > /var/tmp/sbx-audit-off-$$ 2>/dev/null; true'
        is "$(evidence)" none "audit disabled: fs_write_evidence.source none"
        like "$(json_get "$SBX_REPORT" 'd["fs_write_evidence"]["note"]')" "audit is disabled \(auditctl -e 1" \
                "the note names the cause and the fix"
        like "$("$SANDBOXER" doctor | grep '^landlock_audit')" "landlock_audit +no +the host's audit is disabled" \
                "doctor: landlock_audit no, saying why"
else
        skip "the host's audit is already on: the disabled case cannot be shown without turning it off" 3
fi

STATE=$SBX_TMP/audit.state
$CTL on "$STATE" >/dev/null || { echo "Bail out! cannot turn audit on"; exit 1; }
trap '$CTL restore "$STATE" >/dev/null; sbx_cleanup' EXIT
forget
is "$("$SANDBOXER" doctor --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["features"]["landlock_audit"]["available"])')" \
        True "doctor: landlock_audit available once audit is on"

# ---- a refused write to an existing file, and a refused creation ----
ww=/var/tmp/sbx-audit-$$-ww
echo original >"$ww"
chmod 666 "$ww"
run_sbx "${L[@]}" -- /bin/sh -c "echo tampered >> $ww; echo rc=\$?"
is "$(evidence)" landlock_audit "audit on, as root, landlock backend: fs_write_evidence.source landlock_audit"
is "$SBX_OUT" "rc=2" "the write was refused (the shell's redirection failed)"
is "$(cat "$ww")" original "and the file is unchanged"
is "$(fsw)" "$ww fs.write_file landlock_audit" "a FilesystemWriteViolation with the file's path, fs.write_file, from the audit records"
run_sbx "${L[@]}" -- /bin/sh -c "echo x > /var/tmp/sbx-audit-$$-new; echo rc=\$?"
ok $([ ! -e /var/tmp/sbx-audit-$$-new ] && echo 0 || echo 1) "a creation in a world-writable host directory is refused"
is "$(fsw)" "/var/tmp fs.make_reg landlock_audit" "recorded with the directory the kernel resolved and fs.make_reg"
is "$(json_get "$SBX_REPORT" '[v["count"] for v in d["violations"] if v["kind"] == "FilesystemWriteViolation"]')" "[1]" \
        "counted once"

# ---- the remembered audit state: a damaged file is asked again, not believed ----
printf 'garbage\n' >"$SANDBOXER_RUNTIME_DIR/audit.state"
touch "$SANDBOXER_RUNTIME_DIR/audit.state"
run_sbx "${L[@]}" -- /bin/true
is "$(evidence):$(cat "$SANDBOXER_RUNTIME_DIR/audit.state")" "landlock_audit:0" \
        "a damaged audit.state is replaced by the kernel's answer (audit on: 0)"

# ---- allowed writes: nothing recorded ----
run_sbx "${L[@]}" -- /bin/sh -c 'i=0; while [ $i -lt 200 ]; do echo $i > "$TMPDIR/f$i"; i=$((i+1)); done; ls "$TMPDIR" | wc -l'
is "$SBX_OUT" 200 "200 files written in scratch"
is "$(json_get "$SBX_REPORT" 'len(d["violations"])')" 0 "no violation recorded for writes the sandbox may make"

# ---- repeated refusals: counted, not repeated ----
run_sbx "${L[@]}" -- /bin/sh -c "i=0; while [ \$i -lt 20 ]; do echo x >> $ww 2>/dev/null; i=\$((i+1)); done; true"
is "$(json_get "$SBX_REPORT" '[(v["count"], v["detail"]["path"]) for v in d["violations"] if v["kind"] == "FilesystemWriteViolation"]')" \
        "[[20, \"$ww\"]]" "20 refused writes of one file: one violation, count 20"

# ---- two sandboxes at once: each records only its own ----
for k in a b; do echo orig >"$ww.$k"; chmod 666 "$ww.$k"; done
"$SANDBOXER" run "${L[@]}" --report "$SBX_TMP/a.json" -- /bin/sh -c "sleep 0.2; echo x >> $ww.a; sleep 0.2" 2>/dev/null &
pa=$!
"$SANDBOXER" run "${L[@]}" --report "$SBX_TMP/b.json" -- /bin/sh -c "sleep 0.2; echo x >> $ww.b; sleep 0.2" 2>/dev/null &
pb=$!
sbx_started $pa $pb
wait $pa $pb
for k in a b; do
        got=$(json_get "$SBX_TMP/$k.json" '[v["detail"]["path"] for v in d["violations"] if v["kind"] == "FilesystemWriteViolation"]')
        is "$got" "[\"$ww.$k\"]" "concurrent sandbox $k: its own refused write only"
done

# ---- on_violation: kill ----
KP=$SBX_TMP/kill.yaml
printf 'id: test.audit-kill\nversion: "1.0.0"\nextends: %s\non_violation: kill\n' "$LLP" >"$KP"
chmod 644 "$KP"
run_sbx --policy "$POL" --backend landlock --profile "$KP" -- /bin/sh -c "echo x >> $ww; sleep 5; echo survived"
is "$(json_get "$SBX_REPORT" 'd["status"]')" violation "on_violation: kill ends the sandbox on the recorded denial (status violation)"
ok $([[ $SBX_OUT != *survived* ]] && echo 0 || echo 1) "the command did not go on"

# ---- the native backend: its own tree is recorded; the host's read-only binds refuse first ----
run_sbx --policy "$POL" --backend native -- /bin/sh -c 'echo x > /etc/sbx-audit; echo rc=$?; mkdir /sbx-audit-dir; echo rc=$?; ls /etc/sbx-audit 2>&1 >/dev/null | grep -c "No such"'
is "$(evidence)" landlock_audit "native backend: landlock_audit as well"
is "$SBX_OUT" "$(printf 'rc=2\nrc=1\n1')" "native: a creation in /etc and a mkdir in / are refused (the root is Landlock's to refuse)"
like "$SBX_ERR" "Permission denied" "refused by Landlock (EACCES), not by a read-only mount (EROFS)"
is "$(fsw | sort)" "$(printf '/ fs.make_dir landlock_audit\n/etc fs.make_reg landlock_audit')" \
        "native: both recorded, with the directory the kernel resolved and the right refused"
run_sbx --policy "$POL" --backend native -- /bin/sh -c 'echo x > /usr/sbx-audit 2>/dev/null; true'
is "$(json_get "$SBX_REPORT" 'len(d["violations"])')" 0 "native: a write onto the read-only bind of /usr is refused by the mount first, not recorded"
like "$(json_get "$SBX_REPORT" 'd["fs_write_evidence"]["note"]')" "read-only bind of a host path .* is refused by the mount first" \
        "and the note says what it cannot see: writes onto the host's read-only binds"
OP=$SBX_TMP/obs-off.yaml
printf 'id: test.audit-obs-off\nversion: "1.0.0"\nobserve: off\n' >"$OP"
chmod 644 "$OP"
run_sbx --policy "$POL" --backend native --profile "$OP" -- /bin/sh -c 'mkdir /sbx-audit-dir'
like "$SBX_ERR" "Read-only file system" "native, records not read (observe: off): the root is a read-only mount as well"

# ---- observe.fs_writes asks for the notification instead ----
NP=$SBX_TMP/notify.yaml
printf 'id: test.audit-notify\nversion: "1.0.0"\nextends: %s\nobserve: { fs_writes: true }\n' "$LLP" >"$NP"
chmod 644 "$NP"
run_sbx --policy "$POL" --backend landlock --profile "$NP" -- /bin/sh -c "echo x >> $ww 2>/dev/null; true"
is "$(evidence)" notify "observe.fs_writes: fs_write_evidence.source notify"
is "$(json_get "$SBX_REPORT" '[v["detail"].get("source") for v in d["violations"] if v["kind"] == "FilesystemWriteViolation"]')" "[null]" \
        "one violation, from the notification (not twice)"

# audit turned off while a sandbox runs: the run says so rather than claim the evidence
"$SANDBOXER" run "${L[@]}" --report "$SBX_TMP/off.json" -- /bin/sh -c "sleep 0.5; echo x >> $ww 2>/dev/null; true" &
sleep 0.2
echo 0 >"$SBX_TMP/off.state"
$CTL restore "$SBX_TMP/off.state" >/dev/null
wait
SBX_REPORT=$SBX_TMP/off.json
is "$(evidence)" none "audit turned off during a run: fs_write_evidence.source none"
like "$(json_get "$SBX_REPORT" 'd["fs_write_evidence"]["note"]')" "audit was off at the end of the run" "saying so"
$CTL on "$SBX_TMP/off2.state" >/dev/null

rm -f "$ww" "$ww.a" "$ww.b"
$CTL restore "$STATE" >/dev/null
is "$($CTL status)" "$state0" "the host's audit is as it was ($state0)"
done_testing
