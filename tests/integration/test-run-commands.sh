#!/usr/bin/env bash
# process.commands: the first token checked before the sandbox starts; in strict mode Landlock's
# execute rights stop everything else (a renamed copy included), the supervisor's view of each
# execve is the evidence; warn records and lets through.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"
require_backend native # its sandboxes are native ones (skipped with the reason where the host cannot)
cat >"$SBX_TMP/strict.yaml" <<'YAML'
id: test.commands.strict
version: "1.0.0"
process:
  commands: { mode: strict, allow: [sh, cp], deny: [curl] }
YAML
sed 's/strict/warn/g' "$SBX_TMP/strict.yaml" >"$SBX_TMP/warn.yaml"
S=(--policy "$POL" --backend native)
kinds() { json_get "$SBX_REPORT" '[v["action"]+":"+v["detail"].get("path", v["detail"].get("command", "")) for v in d["violations"]]'; }

run_sbx "${S[@]}" --profile "$SBX_TMP/strict.yaml" -- ls /
is "$SBX_RC" 125 "strict: a first command outside the allowlist is refused before the sandbox starts"
like "$SBX_ERR" "'ls' is not allowed by the profile's process.commands" "the message names the command and the rule"
is "$(kinds)" '["refused:ls"]' "report: ProcessLimitViolation refused, with the command"
run_sbx "${S[@]}" --profile "$SBX_TMP/strict.yaml" -- /usr/bin/curl http://x
is "$SBX_RC" 125 "strict: a denied command is refused"

run_sbx "${S[@]}" --profile "$SBX_TMP/strict.yaml" -- sh -c 'echo in-sh; ls / >/dev/null 2>&1; echo ls=$?'
is "$SBX_OUT" "in-sh
ls=126" "strict: the allowed shell runs; ls from inside it is refused (126)"
like "$(kinds)" 'denied:/usr/bin/ls' "the refused execve is recorded with its path"
run_sbx "${S[@]}" --profile "$SBX_TMP/strict.yaml" -- sh -c 'cp /usr/bin/ls "$TMPDIR/sh" && "$TMPDIR/sh" / >/dev/null 2>&1; echo rc=$?'
is "$SBX_OUT" "rc=126" "strict: a copy of ls renamed to an allowed name cannot run (Landlock execute rights)"

run_sbx "${S[@]}" --profile "$SBX_TMP/warn.yaml" -- sh -c 'ls / >/dev/null && echo ls-ran'
is "$SBX_OUT" ls-ran "warn: ls runs"
like "$(kinds)" 'warned:/usr/bin/ls' "warn: and is recorded as warned"
run_sbx "${S[@]}" --profile "$SBX_TMP/warn.yaml" -- ls /
is "$SBX_RC" 0 "warn: a first command outside the allowlist runs"
like "$(kinds)" '^\["warned:ls"' "warn: recorded as warned (before the start, then the execve itself)"
assert_no_leftovers
done_testing
