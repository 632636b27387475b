#!/usr/bin/env bash
# test-serve.sh — the control plane's foundation: tokens in the store, the hash-chained audit
# log, and `sandboxer serve` over a unix socket and loopback TCP (sandboxes: test-sandboxes.sh).
# shellcheck disable=SC2016 # python expressions in single quotes are meant literally
. "$(dirname "$0")/lib.sh"

ST=$SBX_TMP/state
SOCK=$SBX_TMP/run/sandboxer.sock
# a runtime directory of its own: a server takes the unknown supervisors' sockets it finds in
# its runtime directory for orphans (one server per runtime directory: checked below)
export SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt
SERVE_PID=

cleanup() {
        [ -n "$SERVE_PID" ] && kill -KILL "$SERVE_PID" 2>/dev/null
        sbx_cleanup
}
trap cleanup EXIT

# req TARGET METHOD PATH [TOKEN] — TARGET is unix:PATH or HOST:PORT. Sets H_STATUS and H_BODY
# (the body also in $SBX_TMP/body).
req() {
        H_STATUS=$(BODY_FILE=$SBX_TMP/body python3 - "$@" <<'EOF'
import http.client, os, socket, sys
target, method, path = sys.argv[1:4]
token = sys.argv[4] if len(sys.argv) > 4 else None
class Unix(http.client.HTTPConnection):
    def __init__(self, p):
        super().__init__("localhost", timeout=10)
        self.p = p
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.p)
if target.startswith("unix:"):
    c = Unix(target[5:])
else:
    host, port = target.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=10)
headers = {"Authorization": "Bearer " + token} if token else {}
try:
    c.request(method, path, headers=headers)
    r = c.getresponse()
    body, status = r.read(), r.status
except Exception as e:
    body, status = ("request failed: %s" % e).encode(), "000"
open(os.environ["BODY_FILE"], "wb").write(body)
print(status)
EOF
        )
        H_BODY=$(cat "$SBX_TMP/body")
}
# wait_up TARGET — until /healthz answers (anything), at most 10 s.
wait_up() {
        local i
        for ((i = 0; i < 100; i++)); do
                req "$1" GET /healthz
                [ "$H_STATUS" != 000 ] && return 0
                sleep 0.1
        done
        return 1
}
free_port() {
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

plan 83

# ---- tokens ----
"$SANDBOXER" token create --actor agt --name bot-1 --tenant t1 --state-dir "$ST" --json >"$SBX_TMP/t1.json" 2>"$SBX_TMP/err"
ok $? "token create --json succeeds" || diag "$(cat "$SBX_TMP/err")"
TOK1=$(json_get "$SBX_TMP/t1.json" 'd["token"]')
like "$TOK1" '^sbx_[0-9a-f]{64}$' "the token is sbx_ and 64 hex digits"
is "$(json_get "$SBX_TMP/t1.json" '[d["id"], d["actor"], d["name"], d["tenant"]]')" '[1, "agt", "bot-1", "t1"]' \
        "create --json reports id, actor, name, tenant"
TOK2=$("$SANDBOXER" token create --actor adm --name ops --state-dir "$ST" 2>"$SBX_TMP/err")
ok $? "token create (human) succeeds"
like "$TOK2" '^sbx_[0-9a-f]{64}$' "human create prints only the token on stdout"
like "$(cat "$SBX_TMP/err")" 'token 2 created for adm:ops.*only this once' "and says on stderr it is shown once"
[ "$TOK1" != "$TOK2" ]
ok $? "two tokens differ"
TOK3=$("$SANDBOXER" token create --actor atm --name ci --tenant t2 --state-dir "$ST" 2>/dev/null)
ok $? "a third token (atm) for revocation"

"$SANDBOXER" token list --json --state-dir "$ST" >"$SBX_TMP/list.json"
ok $? "token list --json succeeds"
is "$(json_get "$SBX_TMP/list.json" '[(t["id"], t["actor"], t["name"], t["tenant"], t["revoked_at"]) for t in d["items"]]')" \
        '[[1, "agt", "bot-1", "t1", null], [2, "adm", "ops", "", null], [3, "atm", "ci", "t2", null]]' \
        "token list --json shows the three, none revoked"
! grep -q -e "$TOK1" -e "${TOK1#sbx_}" "$SBX_TMP/list.json" "$ST"/sandboxer.db* 2>/dev/null
ok $? "no secret in the list or in the store (only hashes are kept)"
is "$(stat -c %a "$ST/sandboxer.db")" 600 "the store file is mode 0600"
"$SANDBOXER" token list --state-dir "$ST" >"$SBX_TMP/list.txt"
like "$(cat "$SBX_TMP/list.txt")" 'ID +ACTOR +NAME.*'$'\n''1 +agt +bot-1 +t1 ' "token list prints a table"

"$SANDBOXER" token revoke 3 --state-dir "$ST" >/dev/null
ok $? "token revoke 3 succeeds"
is "$(json_get <("$SANDBOXER" token list --json --state-dir "$ST") '[t["revoked_at"] is not None for t in d["items"]]')" \
        '[false, false, true]' "token 3 is revoked, the others are not"
"$SANDBOXER" token revoke 3 --json --state-dir "$ST" >"$SBX_TMP/rev.json"
ok $? "revoking again is not an error"
is "$(json_get "$SBX_TMP/rev.json" 'd["already"]')" true "and says it already was"
"$SANDBOXER" token revoke 99 --state-dir "$ST" 2>"$SBX_TMP/err"
is $? 1 "revoking an unknown id exits 1"
like "$(cat "$SBX_TMP/err")" 'no token with id 99' "and names the id"

# ---- the store ----
is "$(python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print(c.execute("pragma journal_mode").fetchone()[0], c.execute("select max(version) from schema_version").fetchone()[0], sorted(r[0] for r in c.execute("select name from sqlite_master where type = \"table\" and name not like \"sqlite_%\"")))' "$ST/sandboxer.db")" \
        "wal 5 ['deals', 'events', 'execs', 'idempotency', 'ledger', 'meters', 'peers', 'sandboxes', 'schema_version', 'tokens']" "the store is in WAL mode at schema version 5 with its tables"
"$SANDBOXER" token create --actor agt --name other --store "sqlite:$SBX_TMP/other.db" --state-dir "$SBX_TMP/state2" --json >/dev/null &&
        [ -s "$SBX_TMP/other.db" ] && [ ! -e "$SBX_TMP/state2/sandboxer.db" ] && [ -s "$SBX_TMP/state2/audit.log" ]
ok $? "--store sqlite:PATH puts the store there (the audit log stays in the state dir)"
"$SANDBOXER" token list --store postgres://db/x --state-dir "$ST" 2>"$SBX_TMP/err"
like "$?:$(cat "$SBX_TMP/err")" "^125:.*unsupported store URL 'postgres://db/x'" "an unsupported store URL exits 125"
cp "$ST/sandboxer.db" "$SBX_TMP/future.db"
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("insert into schema_version values (99, 0)"); c.commit()' "$SBX_TMP/future.db"
"$SANDBOXER" token list --store "sqlite:$SBX_TMP/future.db" --state-dir "$ST" 2>"$SBX_TMP/err"
like "$?:$(cat "$SBX_TMP/err")" "^125:.*schema version 99, newer than this sandboxer knows \(5\)" "a store from a newer sandboxer is refused"

# ---- bad input ----
"$SANDBOXER" token create --actor bogus --name x --state-dir "$ST" 2>"$SBX_TMP/err"
is $? 125 "token create --actor bogus exits 125"
like "$(cat "$SBX_TMP/err")" "adm, agt or atm, not 'bogus'" "and says which actors exist"
"$SANDBOXER" token create --actor agt --state-dir "$ST" 2>"$SBX_TMP/err"
is $? 125 "token create without --name exits 125"
like "$(cat "$SBX_TMP/err")" '--name NAME is required' "and says --name is required"
"$SANDBOXER" token revoke abc --state-dir "$ST" 2>/dev/null
is $? 125 "token revoke abc exits 125"
"$SANDBOXER" token frobnicate --state-dir "$ST" 2>/dev/null
is $? 125 "an unknown token subcommand exits 125"
"$SANDBOXER" serve --listen garbage --state-dir "$ST" 2>"$SBX_TMP/err"
is $? 125 "serve --listen garbage exits 125"
like "$(cat "$SBX_TMP/err")" "invalid listen address 'garbage'.*unix:PATH or HOST:PORT" "and says what an address looks like"
"$SANDBOXER" serve --listen 127.0.0.1:99999 --state-dir "$ST" 2>/dev/null
is $? 125 "serve with port 99999 exits 125"
for bad in "--warm-pool x" "--warm-pool 65" "--quota-sandboxes -1" "--quota-execs 1e3" "--quota-memory-mb lots" \
        "--secrets-dir $SBX_TMP/none" "--secrets-dir relative" "--policy $SBX_TMP/none.yaml"; do
        # shellcheck disable=SC2086 # each case is an option and its value
        "$SANDBOXER" serve $bad --listen "unix:$SBX_TMP/bad.sock" --state-dir "$ST" 2>"$SBX_TMP/err"
        is "$?:$(grep -c -- "serve: ${bad%% *}" "$SBX_TMP/err")" "125:1" "serve $bad exits 125, naming the option"
done
"$SANDBOXER" serve --warm-pool 1 --warm-profile profile.nope --listen "unix:$SBX_TMP/bad.sock" --state-dir "$ST" 2>"$SBX_TMP/err"
is "$?:$(grep -c "serve: warm profile profile.nope: no profile named 'profile.nope'.*profile list" "$SBX_TMP/err")" "125:1" \
        "serve with an unknown warm profile exits 125: the context wraps the loader's own sentence"
"$SANDBOXER" supervise --id x --socket "$SBX_TMP/s.sock" --state "$SBX_TMP/sv" --ready-fd abc 2>"$SBX_TMP/err"
is "$?:$(grep -c -- '--ready-fd' "$SBX_TMP/err")" "125:1" "supervise --ready-fd abc exits 125, naming it"
"$SANDBOXER" supervise --socket "$SBX_TMP/s.sock" 2>/dev/null
is $? 125 "supervise without --id and --state exits 125"

# ---- audit log ----
AUDIT=$ST/audit.log
is "$(wc -l <"$AUDIT")" 6 "six audit lines: 3 creates, 2 revokes, 1 failed revoke"
is "$(json_get <(sed -n 6p "$AUDIT") '[d["action"], d["target"], d["outcome"]]')" '["token.revoke", "token:99", "not_found"]' \
        "the failed revoke is audited with its outcome"
"$SANDBOXER" audit verify --state-dir "$ST" >"$SBX_TMP/out"
ok $? "audit verify --state-dir passes on the intact log"
like "$(cat "$SBX_TMP/out")" '6 lines, chain intact' "and counts the lines"
cp "$AUDIT" "$SBX_TMP/garbage.log" && echo 'garbage' >>"$SBX_TMP/garbage.log"
"$SANDBOXER" audit verify "$SBX_TMP/garbage.log" 2>"$SBX_TMP/err"
is $? 1 "audit verify fails after appending garbage"
like "$(cat "$SBX_TMP/err")" 'line 7: not an audit record' "naming line 7"
sed '3s/"token:3"/"token:1"/' "$AUDIT" >"$SBX_TMP/altered.log"
"$SANDBOXER" audit verify "$SBX_TMP/altered.log" 2>"$SBX_TMP/err"
is $? 1 "audit verify fails after altering line 3"
like "$(cat "$SBX_TMP/err")" 'line 3: its hash does not match' "naming line 3"
sz=$(stat -c %s "$AUDIT") && head -c $((sz - 20)) "$AUDIT" >"$SBX_TMP/trunc.log"
"$SANDBOXER" audit verify "$SBX_TMP/trunc.log" 2>"$SBX_TMP/err"
is $? 1 "audit verify fails when the last line is truncated"
like "$(cat "$SBX_TMP/err")" 'line 6: .*truncated' "naming line 6"
sed '2d' "$AUDIT" >"$SBX_TMP/removed.log"
"$SANDBOXER" audit verify "$SBX_TMP/removed.log" 2>"$SBX_TMP/err"
like "$?:$(cat "$SBX_TMP/err")" '^1:.*line 2: prev_hash does not match' "a removed line breaks the chain at the next one"

# ---- serve ----
mkdir -p "$(dirname "$SOCK")"
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$SOCK" # stale
PORT=$(free_port)
"$SANDBOXER" serve --listen "unix:$SOCK" --listen "127.0.0.1:$PORT" --state-dir "$ST" 2>"$SBX_TMP/serve.err" &
SERVE_PID=$!
wait_up "unix:$SOCK"
ok $? "serve answers on a unix socket that replaced a stale socket file" || diag "$(cat "$SBX_TMP/serve.err")"
is "$(stat -c %a "$SOCK")" 660 "the socket is mode 0660"
SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt2 "$SANDBOXER" serve --listen "unix:$SOCK" --state-dir "$ST" 2>"$SBX_TMP/err2"
like "$?:$(cat "$SBX_TMP/err2")" '^125:.*already answers on' "a second server on a live socket is refused (125)"
"$SANDBOXER" serve --listen "unix:$SBX_TMP/second.sock" --state-dir "$SBX_TMP/state2" 2>"$SBX_TMP/err3"
like "$?:$(cat "$SBX_TMP/err3")" "^125:.*another sandboxer serve \(pid $SERVE_PID\) already uses the runtime directory $SBX_TMP/rt .*SANDBOXER_RUNTIME_DIR" \
        "a second server in the same runtime directory is refused (125), naming the first and the fix"

req "unix:$SOCK" GET /healthz
is "$H_STATUS $H_BODY" '200 {"status":"ok"}' "GET /healthz on the socket: 200 {status: ok}"
req "unix:$SOCK" GET /v1/profiles
is "$H_STATUS" 200 "GET /v1/profiles: 200"
is "$(json_get "$SBX_TMP/body" '[p["id"] for p in d["items"] if p["id"] == "profile.default" and p["version"]]')" \
        '["profile.default"]' "lists the built-in profiles with their versions"
req "unix:$SOCK" GET /v1/sandboxes
is "$H_STATUS $(json_get "$SBX_TMP/body" 'd["items"]')" "200 []" "GET /v1/sandboxes: 200, no sandboxes yet"
req "unix:$SOCK" GET /v1/snapshots/snp_0000000000000000
is "$H_STATUS $(json_get "$SBX_TMP/body" 'd["error"]["code"]')" "404 not_found" "GET /v1/snapshots/UNKNOWN: 404 not_found JSON"
req "unix:$SOCK" POST /healthz
is "$H_STATUS $(json_get "$SBX_TMP/body" 'd["error"]["code"]')" "405 method_not_allowed" "POST /healthz: 405 JSON"

req "127.0.0.1:$PORT" GET /v1/profiles
is "$H_STATUS $(json_get "$SBX_TMP/body" 'd["error"]["code"]')" "401 unauthenticated" "TCP without a token: 401 JSON"
req "127.0.0.1:$PORT" GET /healthz "sbx_$(printf '0%.0s' {1..64})"
is "$H_STATUS" 401 "TCP with an unknown token: 401"
req "127.0.0.1:$PORT" GET /healthz "$TOK3"
is "$H_STATUS $(json_get "$SBX_TMP/body" 'd["error"]["message"]')" "401 this token has been revoked" "TCP with a revoked token: 401"
req "127.0.0.1:$PORT" GET /healthz "$TOK1"
is "$H_STATUS $H_BODY" '200 {"status":"ok"}' "TCP with a valid bearer token: 200"
req "127.0.0.1:$PORT" GET /v1/profiles "$TOK2"
is "$H_STATUS" 200 "TCP /v1/profiles with the adm token: 200"

req "unix:$SOCK" GET /metrics
is "$H_STATUS" 200 "GET /metrics: 200"
like "$H_BODY" $'\nsandboxer_up 1\n' "metrics: sandboxer_up 1"
like "$H_BODY" 'sandboxer_http_requests_total\{code="200"\} [0-9]+'$'\n''.*code="401"\} 3'$'\n''.*code="404"\} 1' \
        "metrics: requests counted by code"
grep -q "$TOK1" "$SBX_TMP/serve.err"
is $? 1 "the server log holds no token"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
is $? 0 "SIGTERM stops the server with exit 0"
SERVE_PID=
[ -s "$ST/sandboxer.db" ] && [ -s "$ST/audit.log" ] && [ ! -e "$SOCK" ]
ok $? "the store and audit log stay, the socket is gone"
is "$(json_get <("$SANDBOXER" token list --json --state-dir "$ST") 'len(d["items"])')" 3 "the tokens survive the server"

# ---- state and runtime directories that are not there yet are made, as token create makes its
# own (as systemd makes a StateDirectory= and a RuntimeDirectory=): the state dir private (0700,
# its parents too), the runtime dir 0711 as root (run_as passes through to the scratch below it)
# or 0700, its parents 0755; with the store elsewhere (--store), which makes nothing ----
NST=$SBX_TMP/new/state/dir NRT=$SBX_TMP/newrt/run/dir
SANDBOXER_STATE_DIR=$NST SANDBOXER_RUNTIME_DIR=$NRT \
        "$SANDBOXER" serve --store "sqlite:$SBX_TMP/elsewhere.db" 2>"$SBX_TMP/new.err" &
SERVE_PID=$!
wait_up "unix:$NRT/sandboxer.sock"
ok $? "serve with state and runtime dirs that do not exist yet (and the store elsewhere) starts" ||
        diag "$(cat "$SBX_TMP/new.err")"
rtmode=700; [ "$(id -u)" = 0 ] && rtmode=711
is "$(stat -c %a "$SBX_TMP/new" "$SBX_TMP/new/state" "$NST" "$SBX_TMP/newrt" "$SBX_TMP/newrt/run" "$NRT" | tr '\n' ' ')" \
        "700 700 700 755 755 $rtmode " "their modes: state 0700 with its parents, runtime $rtmode with parents 0755"
ok $([ -d "$NST/sandboxes" ] && [ -d "$NRT/sandboxes" ] && echo 0 || echo 1) "and the sandboxes' directories in each"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
is $? 0 "that server stops with exit 0"
SERVE_PID=
# a state dir others may write is refused, naming it and the fix
mkdir -p "$SBX_TMP/open"; chmod 777 "$SBX_TMP/open"
SANDBOXER_STATE_DIR=$SBX_TMP/open timeout 10 "$SANDBOXER" serve --listen "unix:$SBX_TMP/open.sock" 2>"$SBX_TMP/open.err"
is "$?:$(grep -c "state dir $SBX_TMP/open: .*not a directory of ours that only we can write.*SANDBOXER_STATE_DIR" "$SBX_TMP/open.err")" \
        "125:1" "a state dir others can write: exit 125, named, with the fix"
# a relative SANDBOXER_RUNTIME_DIR is refused (it was ignored for the default: another server's)
for v in serve run; do
        (cd "$SBX_TMP" && SANDBOXER_RUNTIME_DIR=rel/run timeout 10 "$SANDBOXER" $v -- true) 2>"$SBX_TMP/rel.err" >/dev/null
        is "$?:$(grep -c "SANDBOXER_RUNTIME_DIR is 'rel/run': it must be an absolute path" "$SBX_TMP/rel.err")" \
                "125:1" "$v: a relative SANDBOXER_RUNTIME_DIR: exit 125, named"
done

done_testing
