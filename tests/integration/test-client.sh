#!/usr/bin/env bash
# test-client.sh — the API client verbs (create, ls, get, exec, cp, extend, recreate, destroy,
# events) against a real `sandboxer serve` on a unix socket: what they print, their exit statuses
# (the command's own for exec: 124, 128+N, 127 …; 125 for a refused request), bad arguments, and a
# server that is not there. --json output is validated against docs/openapi.json.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || . "$(dirname "$0")/common-policy.sh"
require_backend native # its sandboxes are native ones (skipped with the reason where the host cannot)
export SANDBOXER_RUNTIME_DIR=$SBX_TMP/run SANDBOXER_STATE_DIR=$SBX_TMP/state
SOCK=$SANDBOXER_RUNTIME_DIR/sandboxer.sock
V=$SBX_SRC/tests/tools/validate-api.py DOC=$SBX_SRC/docs/openapi.json
S=$SANDBOXER
SERVE_PID=
cleanup() {
        [ -n "$SERVE_PID" ] && kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
        sbx_cleanup
}
trap cleanup EXIT
valid() { # METHOD TEMPLATE STATUS FILE — validated when the validator can run
        python3 -c 'import jsonschema' 2>/dev/null || return 0
        python3 "$V" "$DOC" "$@"
}

# ---- without a server ----
out=$("$S" ls --server "unix:$SBX_TMP/none.sock" 2>&1)
is "$?:$(grep -c 'is .sandboxer serve. running' <<<"$out")" "125:1" "no server: exit 125, the message names the socket and the fix"
for verb in create ls get exec cp extend recreate destroy events; do
        "$S" $verb --help >"$SBX_TMP/help" 2>&1
        ok $? "sandboxer $verb --help exits 0"
done
"$S" get not-an-id >/dev/null 2>&1; is $? 125 "get with a bad id: 125"
"$S" exec sbx_0123456789abcdef >/dev/null 2>&1; is $? 125 "exec without a command: 125"
"$S" create --ttl -5 >/dev/null 2>&1; is $? 125 "create --ttl -5: 125"
"$S" create --meta novalue >/dev/null 2>&1; is $? 125 "create --meta without =: 125"
"$S" cp a b >/dev/null 2>&1; is $? 125 "cp with no ID:PATH side: 125"
"$S" extend sbx_0123456789abcdef soon >/dev/null 2>&1; is $? 125 "extend with a bad duration: 125"
"$S" ls --server 127.0.0.1:9 >/dev/null 2>&1; is $? 125 "TCP without a token: 125"

# ---- against a server ----
"$S" serve ${POL:+--policy "$POL"} >"$SBX_TMP/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
ID=$("$S" create --harness cli --meta team=qa --ttl 600)
like "$ID" '^sbx_[0-9a-f]{16}$' "create prints the new id"
"$S" create --json --profile profile.default >"$SBX_TMP/c.json"
valid POST /v1/sandboxes 201 "$SBX_TMP/c.json"
ok $? "create --json: the record, valid against the OpenAPI document"
ID2=$(json_get "$SBX_TMP/c.json" 'd["id"]')
out=$("$S" ls --harness cli)
like "$out" "^ID +STATE.*"$'\n'"$ID +ready +profile.default" "ls: a table, filtered by --harness"
"$S" ls --json >"$SBX_TMP/ls.json"
valid GET /v1/sandboxes 200 "$SBX_TMP/ls.json"
ok $? "ls --json: the list, valid"
like "$("$S" get "$ID")" $'(^|\n)state +ready' "get: key value lines"
out=$("$S" exec "$ID" -- sh -c 'echo out; echo err >&2; exit 3' 2>"$SBX_TMP/err")
is "$?:$out:$(cat "$SBX_TMP/err")" "3:out:err" "exec: output on ours, its exit status ours"
out=$(printf 'in\0put' | "$S" exec "$ID" --stdin -- od -An -c | tr -s ' ')
is "$out" " i n \\0 p u t" "exec --stdin: our standard input, bytes intact"
"$S" exec "$ID" --timeout 0.3 -- sleep 5; is $? 124 "exec: a timeout is 124"
"$S" exec "$ID" -- sh -c 'kill -9 $$'; is $? 137 "exec: killed by signal 9 is 137"
"$S" exec "$ID" -- no-such-command 2>/dev/null; is $? 127 "exec: not found is 127"
out=$("$S" exec "$ID" --env A=1 --cwd /tmp -- sh -c 'echo $A $(pwd)')
is "$out" "1 /tmp" "exec --env and --cwd"
out=$("$S" exec "$ID" --stream -- sh -c 'echo a; echo b >&2; echo c')
is "$out" "a
c" "exec --stream: output as it comes"
"$S" exec "$ID" --json -- true >"$SBX_TMP/x.json"
valid POST '/v1/sandboxes/{id}/exec' 200 "$SBX_TMP/x.json"
ok $? "exec --json: the result with its report, valid"
printf 'file\ndata\n' >"$SBX_TMP/in.txt"
"$S" cp "$SBX_TMP/in.txt" "$ID:/tmp/in.txt"; ok $? "cp up"
"$S" cp "$ID:/tmp/in.txt" "$SBX_TMP/back.txt"; ok $? "cp down"
cmp -s "$SBX_TMP/in.txt" "$SBX_TMP/back.txt"; ok $? "cp: the same bytes back"
"$S" cp "$ID:/etc/passwd" "$SBX_TMP/x" 2>"$SBX_TMP/err"
is "$?:$(grep -c 'HTTP 400, invalid_argument' "$SBX_TMP/err")" "125:1" "cp of a path outside scratch: 125 with the server's reason"
like "$("$S" extend "$ID" 60)" "^$ID ready until " "extend"
like "$("$S" recreate "$ID")" "^$ID ready" "recreate"
out=$(timeout 2 "$S" events --sandbox "$ID" --last-event-id 0 | awk '{print $2}' | tr '\n' ' ')
like "$out" "^requested provisioning ready active exec ready" "events: the lifecycle from the start"
is "$("$S" destroy "$ID")" "$ID destroyed" "destroy"
is "$("$S" destroy "$ID")" "$ID destroyed" "destroy again: the same answer"
"$S" exec "$ID" -- true 2>"$SBX_TMP/err"
is "$?:$(grep -c 'HTTP 410' "$SBX_TMP/err")" "125:1" "exec in a destroyed sandbox: 125, HTTP 410"
"$S" destroy "$ID2" >/dev/null
is "$("$S" ls | wc -l)" 1 "ls: only the header once all are destroyed"
done_testing
