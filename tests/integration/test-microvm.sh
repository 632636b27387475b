#!/usr/bin/env bash
# The microvm backend (strict mode): a command in a QEMU microVM whose PID 1 is sandboxer-init —
# output, exit status and stdin through the control channel; a kernel of its own (uname -r
# differs); the root view read-only with only the profile's paths; limits from the guest's own
# cgroup v2 (a memory bomb ends as memory_limit, a fork bomb stays inside); the timeout; a guest
# that cannot start is a setup error with its reason; kill -9 of sandboxer leaves no qemu; the
# report's config.microvm; --mode strict and strict.required_when select it, and without
# strict.allow_emulation a host without KVM refuses it by name.
#
# Guests run under QEMU's emulation (TCG) where there is no usable KVM: seconds each, so this
# script runs once, as root (scripts/test.sh leaves it out of the ASan pass; the unprivileged pass
# skips it).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"

require_microvm_root

# The test policy, with emulation allowed (the default policy refuses TCG).
VPOL=$SBX_TMP/policy-vm.yaml
sed 's/^strict: .*/strict: { required_when: [workspace_rw], allow_emulation: true }/' "$POL" >"$VPOL"
grep -q allow_emulation "$VPOL" || { echo "Bail out! the test policy has no strict line to replace"; exit 1; }
NOEMU=$SBX_TMP/policy-noemu.yaml
sed 's/^strict: .*/strict: { required_when: [], allow_emulation: false }/' "$POL" >"$NOEMU"
S=(--policy "$VPOL" --backend microvm --mode strict)
r() { json_get "$SBX_REPORT" "$1"; }
SBX_RUN_TIMEOUT=180

plan 31

# --- a command, its output and status; the report ---
run_sbx "${S[@]}" --timeout 60 -- /bin/sh -c 'echo out; echo err >&2; uname -r; exit 7'
is "$SBX_RC" 7 "exit status 7 comes back from the guest"
like "$SBX_OUT" "^out" "stdout from the guest"
is "$SBX_ERR" "err" "stderr from the guest, apart"
guest_kernel=$(echo "$SBX_OUT" | sed -n 2p)
ok "$([ -n "$guest_kernel" ] && [ "$guest_kernel" != "$(uname -r)" ] && echo 0 || echo 1)" \
        "uname -r inside ($guest_kernel) differs from the host's ($(uname -r))"
is "$(r 'd["backend"]')" microvm "report: backend microvm"
is "$(r 'd["isolation"]')" microvm "report: isolation microvm"
is "$(r 'd["mode"]')" strict "report: mode strict"
accel=$(r 'd["config"]["microvm"]["accel"]')
ok "$(case $accel in kvm | tcg) echo 0 ;; *) echo 1 ;; esac)" "report: config.microvm.accel ($accel)"
is "$(r 'd["config"]["microvm"]["guest_kernel"]')" "$guest_kernel" "report: config.microvm.guest_kernel is the guest's release"
boot=$(r 'd["config"]["microvm"]["boot_ms"]')
ok "$([ "$boot" -gt 0 ] && echo 0 || echo 1)" "report: config.microvm.boot_ms ($boot ms)"
diag "boot: $boot ms ($accel)"

# --- stdin, and the identity inside ---
run_sbx "${S[@]}" --timeout 60 -- /bin/sh -c 'read a; echo "got $a"; id -u; id -un; cat /proc/1/comm' <<<"hello"
is "$(echo "$SBX_OUT" | sed -n 1p)" "got hello" "stdin reaches the command"
is "$(echo "$SBX_OUT" | sed -n 2p)" 1000 "the command is uid 1000"
is "$(echo "$SBX_OUT" | sed -n 3p)" sandbox "uid 1000 is 'sandbox' (a generated /etc/passwd)"

# --- a command that does not read 5 MB of stdin while it writes 3 MB: no stall (stdin has a window) ---
t0=$(date +%s%N)
got=$(head -c 5000000 /dev/zero | "$SANDBOXER" run "${S[@]}" --timeout 60 -- /bin/sh -c 'head -c 3000000 /dev/zero | tr "\0" a' 2>/dev/null | wc -c)
ms=$((($(date +%s%N) - t0) / 1000000))
is "$got" 3000000 "3 MB out while 5 MB of stdin go unread: all of it ($ms ms, timeout 60 s)"

# --- the root view: read-only, only the profile's paths, scratch writable ---
run_sbx "${S[@]}" --timeout 60 -- /bin/sh -c '
        touch /usr/x 2>/dev/null && echo usr-writable
        touch /etc/x 2>/dev/null && echo etc-writable
        [ -e /root ] && echo root-visible; [ -e /home ] && echo home-visible; [ -e /boot ] && echo boot-visible
        echo data > /tmp/f && cat /tmp/f
        ls /sys/fs/cgroup 2>/dev/null | head -1; ls /dev | tr "\n" " "'
is "$SBX_RC" 0 "root view probe: exit 0"
ok "$(echo "$SBX_OUT" | grep -qE 'writable|visible' && echo 1 || echo 0)" "/usr and / read-only; /root, /home, /boot absent"
like "$SBX_OUT" "data" "scratch (/tmp) is writable"

# --- limits from the guest's cgroup v2 ---
run_sbx "${S[@]}" --memory 64 --timeout 60 -- python3 -c 'a = b"x" * (300 << 20); print(len(a))'
is "$SBX_RC" 137 "memory bomb: killed (exit 137)"
is "$(r 'd["status"]')" memory_limit "memory bomb: status memory_limit"
is "$(r '",".join(v["kind"] for v in d["violations"])')" MemoryLimitViolation "memory bomb: MemoryLimitViolation"
is "$(r 'd["config"]["limits"]["memory_mb"]["mechanism"]')" cgroup_v2 "memory: the guest's cgroup v2"

run_sbx "${S[@]}" --pids 20 --timeout 60 -- python3 -c '
import os, time
n = 0
try:
    for i in range(60):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError:
    pass
print(n)'
n=$(echo "$SBX_OUT" | tail -1)
ok "$([ "${n:-0}" -ge 5 ] && [ "${n:-99}" -le 20 ] && echo 0 || echo 1)" "fork bomb: held to pids 20 in the guest ($n children)"
is "$(r 'd["config"]["limits"]["pids"]["mechanism"]')" cgroup_v2 "pids: the guest's cgroup v2"

# --- the timeout ---
# (timeout_s is the command's own: from its start, not from qemu's; budget_s covers the boot)
run_sbx "${S[@]}" --timeout 1 -- /bin/sh -c 'echo STARTED; sleep 60'
is "$(r 'd["status"]')/$SBX_OUT" timeout/STARTED "timeout 1 s: the command ran, then timeout (the boot is not its time)"
is "$(r '[(v["detail"]["limit"], v["detail"]["limit_s_x1000"]) for v in d["violations"] if v["kind"] == "TimeoutViolation"]')" \
        '[["timeout_s", 1000]]' "timeout: TimeoutViolation names timeout_s, 1 s"

# --- refusals: emulation off, an explicit kernel that is not one ---
run_sbx --policy "$NOEMU" --backend microvm --mode strict --timeout 30 -- /bin/true
if [ -e /dev/kvm ] && [ "$accel" = kvm ]; then
        skip "KVM works here: emulation is not needed" 2
else
        is "$SBX_RC" 125 "no KVM, strict.allow_emulation false: refused (exit 125)"
        like "$SBX_ERR" "strict.allow_emulation" "the refusal names strict.allow_emulation"
fi
BADK=$SBX_TMP/policy-badk.yaml
sed 's/^strict: .*/strict: { required_when: [], allow_emulation: true, kernel: \/etc\/hostname }/' "$POL" >"$BADK"
run_sbx --policy "$BADK" --backend microvm --mode strict --timeout 30 -- /bin/true
is "$SBX_RC" 125 "strict.kernel that is not a kernel: refused (exit 125)"

# --- strict.required_when: workspace_rw selects the microvm backend (auto) ---
WS=$SBX_TMP/ws
mkdir -p "$WS" && chown 65534:65534 "$WS" # run_as: qemu runs as it, and the guest's writes land as it
printf 'id: t-rw\nversion: "1.0.0"\nextends: profile.default\nworkspace:\n  access: rw\n' >"$SBX_TMP/rw.yaml"
run_sbx --policy "$VPOL" --profile "$SBX_TMP/rw.yaml" --workspace "$WS" --timeout 60 -- /bin/sh -c 'echo made > "$SANDBOXER_WORKSPACE/f"; echo ok'
is "$(r 'd["backend"]')" microvm "required_when workspace_rw: the microvm backend runs it"
is "$(cat "$WS/f" 2>/dev/null)" made "a writable workspace: the guest's write reaches the host"

# --- kill -9 of sandboxer leaves no qemu ---
"$SANDBOXER" run "${S[@]}" --timeout 60 -- /bin/sleep 100 >/dev/null 2>&1 &
spid=$!
for _ in $(seq 100); do pgrep -P "$spid" >/dev/null && break; sleep 0.1; done
sleep 2
kill -9 "$spid"
wait "$spid" 2>/dev/null
left=""
for _ in $(seq 50); do
        left=$(pgrep -f "qemu-system-x86_64 .*org.sandboxer.ctl" || true)
        [ -z "$left" ] && break
        sleep 0.1
done
is "$left" "" "kill -9 of sandboxer: no qemu left"

done_testing
