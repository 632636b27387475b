#!/usr/bin/env bash
# A build for a platform without Linux sandboxing (-Dsandbox_platform=false, built here on Linux
# to test the guard): it refuses to run anything, unless SANDBOXER_ALLOW_UNSANDBOXED=1 is set,
# which prints a warning and records backend none.
. "$(dirname "$0")/lib.sh"
command -v meson >/dev/null && command -v ninja >/dev/null || skip_all "meson and ninja are needed to build the unsandboxed configuration"
B=$SBX_TMP/nosbx
if ! meson setup "$B" "$SBX_SRC" -Dsandbox_platform=false >"$SBX_TMP/setup.log" 2>&1 || ! ninja -C "$B" src/cli/sandboxer >"$SBX_TMP/build.log" 2>&1; then
        tail -n 20 "$SBX_TMP/setup.log" "$SBX_TMP/build.log" | sed 's/^/# /'
        ok 1 "the unsandboxed configuration builds"
        done_testing
fi
ok 0 "the unsandboxed configuration builds"
N=$B/src/cli/sandboxer
"$N" run --report "$SBX_TMP/r1.json" -- /bin/echo RAN >"$SBX_TMP/o1" 2>"$SBX_TMP/e1"
is "$?" 125 "without SANDBOXER_ALLOW_UNSANDBOXED: exit 125"
ok $([ ! -s "$SBX_TMP/o1" ] && echo 0 || echo 1) "and nothing ran"
like "$(cat "$SBX_TMP/e1")" 'cannot sandbox.*SANDBOXER_ALLOW_UNSANDBOXED=1' "the message says why and how"
is "$(json_get "$SBX_TMP/r1.json" 'd["status"]')" setup_error "report: setup_error"
SANDBOXER_ALLOW_UNSANDBOXED=1 "$N" run --report "$SBX_TMP/r2.json" -- /bin/echo RAN >"$SBX_TMP/o2" 2>"$SBX_TMP/e2"
is "$?/$(cat "$SBX_TMP/o2")" "0/RAN" "with SANDBOXER_ALLOW_UNSANDBOXED=1 the command runs"
like "$(cat "$SBX_TMP/e2")" 'WARNING.*WITHOUT a sandbox' "with a warning"
is "$(json_get "$SBX_TMP/r2.json" 'd["backend"]+"/"+d["isolation"]')" none/none "report: backend none, isolation none"
is "$(json_get "$SBX_TMP/r2.json" 'd["config"]["limits"]["memory_mb"]["mechanism"]')" none "report: limits enforced by nothing"
SANDBOXER_ALLOW_UNSANDBOXED=1 "$N" run --policy /dev/null -- true >/dev/null 2>&1
ok $([ $? = 125 ] && echo 0 || echo 1) "policy errors are still errors"
SANDBOXER_ALLOW_UNSANDBOXED=1 "$N" run --report "$SBX_TMP/r3.json" -- no-such-command-xyz >/dev/null 2>&1
is "$?" 127 "command not found: 127"
"$N" doctor >/dev/null
is "$?" 1 "doctor: no backend on this platform (exit 1)"
# a build made with meson's defaults has none of the hooks only tests use
is "$(meson introspect "$B" --buildoptions | python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "test_hooks"][0])')" False \
        "meson's default build: test_hooks off"
if [ -x /usr/bin/python3 ]; then
        python3 "$SBX_SRC/tests/tools/validate-report.py" "$SBX_TMP/r2.json" >/dev/null 2>&1
        ok $? "the unsandboxed report validates against the schema"
fi
done_testing
