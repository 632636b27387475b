#!/usr/bin/env bash
# test-services.sh — network.services (DESIGN.md, "Network: egress allowlist and host services";
# docs/network.md): a host service on a unix socket reached inside at 127.0.0.1:PORT by the URL
# in its variable, each HTTP request traced (method, path, status, bytes) in the report; a tcp
# "data service" (a stand-in for PostgreSQL or Redis) reached the same way, its connections and
# bytes traced; no other host port answers; the policy bounds which services a profile may name;
# a persistent sandbox's execs each get their own requests.
# shellcheck disable=SC2016 # python expressions in single quotes are meant literally
. "$(dirname "$0")/lib.sh"
require_backend native

PIDS=()
cleanup() {
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
        sbx_cleanup
}
trap cleanup EXIT
command -v curl >/dev/null || skip_all "curl is not installed (scripts/setup.sh installs it)"

# the "core API": HTTP on a unix socket, outside every sandbox
cat >"$SBX_TMP/core.py" <<'EOF'
import http.server, os, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def address_string(self): return "unix"
    def log_message(self, *a): pass
    def reply(self, code, text):
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.reply(404 if self.path.startswith("/missing") else 200, "core: %s\n" % self.path)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        self.reply(201, "core: got %d bytes\n" % len(self.rfile.read(n)))
class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    def get_request(self):
        return super().get_request()[0], ("unix", 0)
if os.path.exists(sys.argv[1]):
    os.unlink(sys.argv[1])
s = S(sys.argv[1], H)
os.chmod(sys.argv[1], 0o666)
s.serve_forever()
EOF
# the "database": a tcp echo on the host's loopback
cat >"$SBX_TMP/echo.py" <<'EOF'
import socket, sys, threading
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(16)
print(l.getsockname()[1], flush=True)
def one(c):
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()
while True:
    threading.Thread(target=one, args=(l.accept()[0],), daemon=True).start()
EOF
chmod -R a+rX "$SBX_TMP"
python3 "$SBX_TMP/core.py" "$SBX_TMP/core.sock" &
PIDS+=($!)
python3 "$SBX_TMP/echo.py" >"$SBX_TMP/echo.port" &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$SBX_TMP/core.sock" ] && [ -s "$SBX_TMP/echo.port" ] && break; sleep 0.1; done
ECHO_PORT=$(cat "$SBX_TMP/echo.port")
OTHER_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

POL=$SBX_TMP/policy.yaml
cat >"$POL" <<YAML
version: 1
run_as: 65534
enforce: { best_effort: [memory_mb, cpus, scratch_mb] }
network: { services_allowed: [core, "127.0.0.1:$ECHO_PORT"] }
YAML
cat >"$SBX_TMP/svc.yaml" <<YAML
id: test.services
version: "1.0.0"
network:
  loopback: false
  services:
    - { name: core, target: "unix:$SBX_TMP/core.sock", port: 7000, env: CORE_URL }
    - { name: db, target: "127.0.0.1:$ECHO_PORT", port: 5432, env: DB_ADDR, protocol: tcp }
YAML
chmod 644 "$POL" "$SBX_TMP/svc.yaml"
S=(--policy "$POL" --backend native --profile "$SBX_TMP/svc.yaml")

run_sbx "${S[@]}" -- /bin/sh -c 'echo "$CORE_URL $DB_ADDR"; curl -sS --max-time 10 "$CORE_URL/v1/things?x=1"; curl -sS --max-time 10 -X POST --data-binary hello-body "$CORE_URL/v1/items"; curl -sS --max-time 10 -o /dev/null -w "%{http_code}\n" "$CORE_URL/missing"'
like "$SBX_OUT" '^http://127.0.0.1:7000 127.0.0.1:5432' "each service's variable holds its address inside (a URL for http)"
like "$SBX_OUT" 'core: /v1/things\?x=1' "a GET reaches the service on its unix socket"
like "$SBX_OUT" 'core: got 10 bytes' "a POST with its body too"
like "$SBX_OUT" $'\n404$' "the service's own status comes back"
is "$(json_get "$SBX_REPORT" '[(q["method"], q["path"], q["status"], q["bytes_up"] > 0, q["bytes_down"] > 0) for s in d["services"] if s["name"] == "core" for q in s["requests"]]')" \
        '[["GET", "/v1/things?x=1", 200, true, true], ["POST", "/v1/items", 201, true, true], ["GET", "/missing", 404, true, true]]' \
        "every request is traced: method, path, status, bytes"
is "$(json_get "$SBX_REPORT" '[(s["name"], s["protocol"], s["count"]) for s in d["services"]]')" '[["core", "http", 3], ["db", "tcp", 0]]' \
        "the report lists each service with its count"
python3 "$SBX_SRC/tests/tools/validate-report.py" "$SBX_REPORT" >/dev/null 2>&1
is "$?" 0 "the report validates against the schema"

# --- a tcp data service: connections and bytes, nothing parsed ---
run_sbx "${S[@]}" -- python3 -c '
import os, socket
h, p = os.environ["DB_ADDR"].split(":")
for i in range(2):
    s = socket.create_connection((h, int(p)), timeout=10)
    s.sendall(b"x" * 1000)
    got = b""
    while len(got) < 1000:
        got += s.recv(4096)
    s.close()
print("echoed", len(got))'
like "$SBX_OUT" 'echoed 1000' "a tcp service (a database's stand-in) is reached at its address inside"
is "$(json_get "$SBX_REPORT" '[(s["count"], s["bytes_up"], s["bytes_down"], [q["method"] for q in s["requests"]]) for s in d["services"] if s["name"] == "db"]')" \
        '[[2, 2000, 2000, [null, null]]]' "its connections are traced with their bytes each way"

# --- nothing else of the host ---
run_sbx "${S[@]}" -- /bin/sh -c 'curl -sS --max-time 5 http://127.0.0.1:'"$OTHER_PORT"'/ >/dev/null 2>&1; echo "other rc=$?"; curl -sS --max-time 5 --unix-socket '"$SBX_TMP/core.sock"' http://x/ >/dev/null 2>&1; echo "socket rc=$?"'
like "$SBX_OUT" 'other rc=7' "another host port does not answer"
like "$SBX_OUT" 'socket rc=7' "nor does the service's own socket, directly"

# --- the policy bounds them ---
sed 's/services_allowed: \[core, /services_allowed: [/' "$POL" >"$SBX_TMP/pol2.yaml"
chmod 644 "$SBX_TMP/pol2.yaml"
run_sbx --policy "$SBX_TMP/pol2.yaml" --backend native --profile "$SBX_TMP/svc.yaml" -- /bin/true
is "$SBX_RC" 125 "a service the policy does not allow: exit 125"
like "$SBX_ERR" 'network.services core .* is not allowed by .*network.services_allowed' "naming it and where to allow it"
bad() { # NAME YAML-SERVICE PATTERN
        printf 'id: t\nversion: "1.0.0"\nnetwork:\n  services:\n    - %s\n' "$2" >"$SBX_TMP/bad.yaml"
        run_sbx --policy "$POL" --profile "$SBX_TMP/bad.yaml" -- /bin/true
        is "$SBX_RC" 125 "$1: exit 125"
        like "$SBX_ERR" "$3" "$1: said"
}
bad "no port" '{ name: x, target: "unix:/x" }' 'needs name, target and port'
bad "the proxy's port" '{ name: x, target: "unix:/x", port: 3128 }' "port: 3128 is the egress proxy's"
bad "a relative socket" '{ name: x, target: "unix:x", port: 80 }' 'is not unix:/absolute/path or host:port'
bad "an unknown protocol" '{ name: x, target: "unix:/x", port: 80, protocol: grpc }' 'expected http or tcp'
bad "an unknown key" '{ name: x, target: "unix:/x", port: 80, pot: 1 }' "unknown key 'pot'"
printf 'id: t\nversion: "1.0.0"\nnetwork:\n  services:\n    - { name: x, target: "unix:/x", port: 80 }\n    - { name: x, target: "unix:/y", port: 81 }\n' >"$SBX_TMP/bad.yaml"
run_sbx --policy "$POL" --profile "$SBX_TMP/bad.yaml" -- /bin/true
like "$SBX_RC:$SBX_ERR" '^125:.*a second service named x' "two services of one name: exit 125"
run_sbx --policy "$POL" --backend landlock --profile "$SBX_TMP/svc.yaml" -- /bin/true
like "$SBX_RC:$SBX_ERR" '^125:.*(net.egress_proxy|net.loopback|isolation level)' "a backend without the supervisor's proxy refuses services"

# --- a persistent sandbox: each exec's requests in its own report ---
export SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt SANDBOXER_PROFILE_PATH=$SBX_TMP/profiles
mkdir -p "$SANDBOXER_PROFILE_PATH" && sed 's/^id: test.services$/id: profile.svc/' "$SBX_TMP/svc.yaml" >"$SANDBOXER_PROFILE_PATH/profile.svc.yaml"
SOCK=$SBX_TMP/s.sock
"$SANDBOXER" serve --listen "unix:$SOCK" --state-dir "$SBX_TMP/st" --policy "$POL" --stop-sandboxes 2>"$SBX_TMP/serve.log" &
SERVE=$!
PIDS+=("$SERVE")
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
api() { curl -sS --max-time 60 --unix-socket "$SOCK" -X "$1" "http://sbx$2" ${3:+-d "$3"}; }
api POST /v1/sandboxes '{"profile":"profile.svc"}' >"$SBX_TMP/create.json"
ID=$(json_get "$SBX_TMP/create.json" 'd["id"]')
api POST "/v1/sandboxes/$ID/exec" '{"argv":["sh","-c","curl -sS $CORE_URL/one; curl -sS $CORE_URL/two"]}' >"$SBX_TMP/x1.json"
api POST "/v1/sandboxes/$ID/exec" '{"argv":["sh","-c","curl -sS $CORE_URL/three"]}' >"$SBX_TMP/x2.json"
is "$(json_get "$SBX_TMP/x1.json" '[q["path"] for s in d["report"]["services"] for q in s["requests"]]'):$(json_get "$SBX_TMP/x2.json" '[q["path"] for s in d["report"]["services"] for q in s["requests"]]')" \
        '["/one", "/two"]:["/three"]' "each exec's report has its own requests"
api DELETE "/v1/sandboxes/$ID" >/dev/null
kill -TERM "$SERVE" && wait "$SERVE" 2>/dev/null

done_testing
