#!/usr/bin/env bash
# test-host-refusals.sh — parts of the suite on a host that refuses what this one allows: every
# check that needs what the host lacks is skipped with the host's reason, and none fails. The
# refusals are made with tests/tools/sbx-syscall-wrap around the nested script:
#   --kill-foreign  32-bit system calls killed outside any sandbox (some hypervisors, and kernels
#                   booted with ia32_emulation=0, kill int 0x80 with SIGSEGV; here it is SIGSYS)
#   --eperm-ns      namespaces refused (a container's seccomp profile; for an ordinary user, a
#                   host without unprivileged user namespaces)
. "$(dirname "$0")/lib.sh"

WRAP=$SBX_BUILD/tests/tools/sbx-syscall-wrap
[ -x "$WRAP" ] || skip_all "sbx-syscall-wrap is not built ($WRAP)"
[ "$(uname -m)" = x86_64 ] || skip_all "the 32-bit ABIs simulated here are x86_64's"

# nested LABEL "WRAP-OPTION..." SCRIPT [VAR=VALUE...] — run SCRIPT under the wrapper; sets NOUT (its
# TAP), and checks that it ended well: exit 0, its plan met, no failed test.
nested() {
        local label=$1 opts=$2 script=$3 rc
        shift 3
        NOUT=$SBX_TMP/$label.tap
        # shellcheck disable=SC2086 # the wrapper's options
        env "$@" timeout 300 "$WRAP" $opts -- bash "$SBX_SRC/tests/integration/$script" >"$NOUT" 2>"$NOUT.err" </dev/null
        rc=$?
        local planned ran failed
        planned=$(grep -m1 -oE '^1\.\.[0-9]+' "$NOUT" | cut -c4-)
        ran=$(grep -cE '^(not )?ok ' "$NOUT")
        failed=$(grep -c '^not ok ' "$NOUT")
        ok $([ "$rc" = 0 ] && [ "$failed" = 0 ] && [ -n "$planned" ] && { [ "$planned" = "$ran" ] || [ "$planned" = 0 ]; } && echo 0 || echo 1) \
                "$label: $script under $opts: no failure ($ran run, $(grep -c '# SKIP' "$NOUT") skipped, exit $rc)" ||
                diag "$(grep -A3 '^not ok' "$NOUT" | head -20)" "$(tail -3 "$NOUT.err")"
}
# skipped_with LABEL REGEX NAME — a skip in that run's TAP gives the host's reason
skipped_with() {
        grep -qE "^(ok [0-9]+ # SKIP|1\.\.0 # SKIP).*$2" "$SBX_TMP/$1.tap"
        ok $? "$1: $3" || diag "skips: $(grep -m5 'SKIP' "$SBX_TMP/$1.tap")"
}

# ---- a host that kills 32-bit system calls ----
nested i386-escape --kill-foreign test-escape.sh SBX_ESCAPE_ONLY="int80 x32"
skipped_with i386-escape 'int80: this host refuses i386 system calls: one made outside any sandbox died by SIGSYS' \
        "the int80 attack is skipped, outside and inside, with the host's reason"
skipped_with i386-escape 'x32: this host kills it outside any sandbox \(SIGSYS\)' \
        "the x32 attack likewise (the sandbox's kill would prove nothing)"
nested i386-seccomp --kill-foreign test-run-seccomp.sh
skipped_with i386-seccomp 'this host refuses i386 system calls.*vacuous' "the i386 checks of the seccomp fence are skipped, saying why"

# ---- a host that refuses namespaces ----
nested nons-isolation --eperm-ns test-run-isolation.sh
skipped_with nons-isolation 'backend native unavailable: namespaces: creating namespaces was refused' \
        "a script about native sandboxes skips as a whole, naming the refusal"
nested nons-conformance --eperm-ns test-conformance.sh SBX_CONFORMANCE_BACKENDS="native landlock bwrap"
skipped_with nons-conformance 'backend native unavailable: namespaces' "conformance: native skipped with the reason"
skipped_with nons-conformance 'backend bwrap unavailable: namespaces' "conformance: bwrap too (it makes namespaces as the caller)"
ok $(grep -qE '^ok [0-9]+ - landlock: report names the backend' "$NOUT" && echo 0 || echo 1) \
        "conformance: landlock, which needs no namespaces, is still checked"

done_testing
