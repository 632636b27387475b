#!/usr/bin/env bash
# test-serve-tls.sh — `serve --tls-cert/--tls-key`: TCP listeners serve HTTPS (a client that
# checks the certificate reaches the API, with its token; plain HTTP and an unverified peer do
# not), unix sockets stay plain; bad TLS flags are refused with the cause.
. "$(dirname "$0")/lib.sh"

command -v openssl >/dev/null || skip_all "openssl is not installed (scripts/setup.sh installs it)"
command -v curl >/dev/null || skip_all "curl is not installed (scripts/setup.sh installs it)"
export SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt
# no cgroup delegation for an ordinary user here: memory, cpus and scratch best-effort
. "$(dirname "$0")/common-policy.sh"
ST=$SBX_TMP/state
SERVE_PID=
cleanup() {
        [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
        sbx_cleanup
}
trap cleanup EXIT

plan 9

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=127.0.0.1" \
        -addext "subjectAltName=IP:127.0.0.1" -keyout "$SBX_TMP/key.pem" -out "$SBX_TMP/cert.pem" 2>/dev/null
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TOKEN=$("$SANDBOXER" token create --actor agt --name tls --state-dir "$ST" 2>/dev/null)
"$SANDBOXER" serve --listen "127.0.0.1:$PORT" --listen "unix:$SBX_TMP/s.sock" --state-dir "$ST" \
        --tls-cert "$SBX_TMP/cert.pem" --tls-key "$SBX_TMP/key.pem" --policy "$POL" --stop-sandboxes 2>"$SBX_TMP/serve.log" &
SERVE_PID=$!
sbx_started "$SERVE_PID"
for _ in $(seq 100); do [ -S "$SBX_TMP/s.sock" ] && break; sleep 0.1; done

H=(-H "Authorization: Bearer $TOKEN")
for _ in $(seq 50); do curl -s --max-time 2 --cacert "$SBX_TMP/cert.pem" "https://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
is "$(curl -sS --max-time 10 --cacert "$SBX_TMP/cert.pem" "${H[@]}" "https://127.0.0.1:$PORT/healthz" 2>&1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])')" \
        ok "HTTPS: a client that checks the certificate against it reaches /healthz"
curl -sS --max-time 10 --cacert "$SBX_TMP/cert.pem" "${H[@]}" -X POST -d '{}' "https://127.0.0.1:$PORT/v1/sandboxes" >"$SBX_TMP/c.json"
ID=$(json_get "$SBX_TMP/c.json" 'd["id"]')
curl -sS --max-time 30 --cacert "$SBX_TMP/cert.pem" "${H[@]}" -X POST -d '{"argv":["echo","over tls"]}' \
        "https://127.0.0.1:$PORT/v1/sandboxes/$ID/exec" >"$SBX_TMP/x.json"
is "$(json_get "$SBX_TMP/x.json" 'd["stdout"]')" "over tls" "HTTPS with a token: create and exec"
curl -sS --max-time 10 "https://127.0.0.1:$PORT/healthz" >/dev/null 2>"$SBX_TMP/e1"
like "$?:$(cat "$SBX_TMP/e1")" "^60:.*certificate" "a client that cannot verify the certificate is refused by curl (60)"
curl -sS --max-time 10 "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1
ok "$([ $? -ne 0 ] && echo 0 || echo 1)" "plain HTTP on the TLS port gets no answer"
is "$(curl -sS --max-time 10 --unix-socket "$SBX_TMP/s.sock" http://sbx/healthz | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])')" \
        ok "the unix socket stays plain HTTP"
curl -sS --max-time 10 --cacert "$SBX_TMP/cert.pem" "${H[@]}" -X DELETE "https://127.0.0.1:$PORT/v1/sandboxes/$ID" >/dev/null
kill "$SERVE_PID" && wait "$SERVE_PID" 2>/dev/null
SERVE_PID=

"$SANDBOXER" serve --listen "127.0.0.1:$PORT" --state-dir "$ST" --tls-cert "$SBX_TMP/cert.pem" 2>"$SBX_TMP/e2" &
p=$!
sleep 0.5
kill "$p" 2>/dev/null
wait "$p"
like "$?:$(cat "$SBX_TMP/e2")" "^125:.*--tls-cert and --tls-key go together" "--tls-cert without --tls-key: refused, saying so"
echo "not a certificate" >"$SBX_TMP/bad.pem"
timeout 10 "$SANDBOXER" serve --listen "127.0.0.1:$PORT" --state-dir "$ST" --tls-cert "$SBX_TMP/bad.pem" \
        --tls-key "$SBX_TMP/key.pem" 2>"$SBX_TMP/e3"
like "$?:$(cat "$SBX_TMP/e3")" "^125:.*bad.pem: not PEM" "a file that is not PEM: refused, naming it"
timeout 10 "$SANDBOXER" serve --listen "127.0.0.1:$PORT" --state-dir "$ST" --tls-cert "$SBX_TMP/nope.pem" \
        --tls-key "$SBX_TMP/key.pem" 2>"$SBX_TMP/e4"
like "$?:$(cat "$SBX_TMP/e4")" "^125:.*nope.pem: No such file" "a missing certificate file: refused, naming it"
cp "$SBX_TMP/cert.pem" "$SBX_TMP/notkey.pem"
timeout 10 "$SANDBOXER" serve --listen "127.0.0.1:$PORT" --state-dir "$ST" --tls-cert "$SBX_TMP/cert.pem" \
        --tls-key "$SBX_TMP/notkey.pem" 2>"$SBX_TMP/e5"
like "$?:$(cat "$SBX_TMP/e5")" "^125:.*is the key the certificate's" "a key that is not one: serve does not start, saying what to check"
