#!/usr/bin/env bash
# test-run-tools.sh — the wrapped tools as sandboxer finds them on PATH: a tool that is a script
# (a site's wrapper named bwrap or podman) runs like the binary it wraps; one that cannot be
# executed is refused with its name in the message; one that runs the command without the
# namespaces it claims (tests/tools/fake-bwrap, as firejail does when it believes it is nested) is
# stopped by the init before the command starts. podman's side of a run is checked without podman
# through tests/tools/fake-podman, which runs the generated line's command at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"
sed -i "s/best_effort: \[memory_mb, cpus, scratch_mb\]/best_effort: [memory_mb, cpus, pids, scratch_mb]/" "$POL" # an ordinary user here: no cgroup

BIN=$SBX_TMP/bin
mkdir -p "$BIN"
chmod 755 "$BIN"

# 1-4: bwrap behind a wrapper script (unavailable for the host's reason: a skip; missing under CI,
# where setup.sh installs it, or ready and then not running: a failure)
backend_check bwrap
bwrap_ok=$?
if [ $bwrap_ok = 0 ] && ! "$SANDBOXER" run --policy "$POL" --backend bwrap -- /bin/true >/dev/null 2>"$SBX_TMP/err"; then
        ok 1 "bwrap: doctor calls it ready, and it cannot run /bin/true here" || diag "$(head -c 400 "$SBX_TMP/err")"
        skip "bwrap cannot run" 3
elif [ $bwrap_ok = 2 ]; then
        ok 1 "$BACKEND_WHY"
        skip "bwrap is missing" 3
elif [ $bwrap_ok = 1 ]; then
        skip "$BACKEND_WHY" 4
else
        printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v bwrap)" >"$BIN/bwrap"
        chmod 755 "$BIN/bwrap"
        out=$(PATH=$BIN:$PATH "$SANDBOXER" run --policy "$POL" --backend bwrap --report "$SBX_TMP/bwrap.json" -- /bin/echo wrapped 2>"$SBX_TMP/err")
        rc=$?
        is "$rc" 0 "bwrap as a wrapper script: exit 0" || diag "$(cat "$SBX_TMP/err")"
        is "$out" wrapped "bwrap as a wrapper script: the command's output"
        like "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["backend"], d["status"])' "$SBX_TMP/bwrap.json" 2>&1)" \
                '^bwrap exited$' "bwrap as a wrapper script: the report names the backend and the exit"
        # the script keeps its own descriptor (6) open for its interpreter: the command must not
        fds=$(PATH=$BIN:$PATH "$SANDBOXER" run --policy "$POL" --backend bwrap -- /bin/ls /proc/self/fd 2>&1)
        is "$(echo $fds)" "0 1 2 3" "bwrap as a wrapper script: the command holds stdio and ls's own fd only"
fi

# 5-6: a tool that is neither ELF nor script: refused, named
printf 'this is not a program\n' >"$BIN/bwrap"
chmod 755 "$BIN/bwrap"
if ! command -v bwrap >/dev/null 2>&1; then
        skip "bwrap not installed (the backend's probe refuses first)" 2
else
        err=$(PATH=$BIN:$PATH "$SANDBOXER" run --policy "$POL" --backend bwrap -- /bin/true 2>&1 >/dev/null)
        rc=$?
        is "$rc" 125 "a tool that cannot be executed: exit 125"
        like "$err" 'execute .*bwrap.*[Ee]xec format error' "the message names the tool and the cause"
fi

# a tool that runs the command without the namespaces it claims (as firejail does when it
# believes it is already sandboxed): the init refuses to start it, nothing runs, exit 125
ln -sf "$SBX_SRC/tests/tools/fake-bwrap" "$BIN/bwrap"
if [ $bwrap_ok = 1 ] || [ $bwrap_ok = 2 ]; then
        skip "bwrap backend unavailable here: the backend's probe refuses first" 3
else
        out=$(PATH=$BIN:$PATH "$SANDBOXER" run --policy "$POL" --backend bwrap --report "$SBX_TMP/fake.json" -- \
                /bin/sh -c 'echo RAN-UNSANDBOXED' 2>"$SBX_TMP/err")
        rc=$?
        is "$rc/$out" "125/" "a tool that builds no namespaces: exit 125, and the command never ran"
        like "$(cat "$SBX_TMP/err")" 'init: not isolated: the host.s [a-z]+ namespace' "the message says the sandbox was not isolated"
        is "$(json_get "$SBX_TMP/fake.json" 'd["status"]')" setup_error "the report: setup_error"
fi

# 7-10: podman's side of a run, through the fake (root only: the backend refuses rootless podman)
if [ "$(id -u)" != 0 ]; then
        skip "the podman backend runs as root only" 4
elif ! "$SANDBOXER" doctor 2>/dev/null | grep -q .; then
        skip "doctor failed" 4
else
        ln -sf "$SBX_SRC/tests/tools/fake-podman" "$BIN/podman"
        out=$(PATH=$BIN:$PATH "$SANDBOXER" run --policy "$POL" --backend podman --report "$SBX_TMP/podman.json" -- /bin/sh -c 'echo out; echo err >&2; exit 3' 2>"$SBX_TMP/err")
        rc=$?
        if grep -Eq 'backend podman is unavailable|cannot use the podman backend' "$SBX_TMP/err"; then
                skip "podman backend unavailable here: $(head -1 "$SBX_TMP/err")" 4
        else
                is "$rc" 3 "fake podman: the command's exit code through the init"
                is "$out" out "fake podman: stdout relayed"
                like "$(cat "$SBX_TMP/err")" 'err' "fake podman: stderr relayed"
                like "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["backend"], d["status"], d["exit"]["code"])' "$SBX_TMP/podman.json" 2>&1)" \
                        '^podman exited 3$' "fake podman: the report (backend, status, exit code)"
        fi
fi

done_testing
