#!/usr/bin/env bash
# network.egress on the microvm backend: the guest has no network card; its agent listens on
# 127.0.0.1:3128 inside and carries each connection over the control channel to the supervisor's
# proxy on the host (microvm-net.c, src/init/guest-net.c). Real clients (curl by HTTP_PROXY, by
# CONNECT, by SOCKS5) reach the allowed names; a denied name is refused and recorded as on every
# backend; bytes cross whole both ways (8 MB down on two connections at once, 3 MB up, by
# digest); nothing else of the host is reachable; a host service is reached at its port inside;
# and in a persistent sandbox each exec's connections and refusals land in its own report.
#
# Guests run under QEMU's emulation (TCG) where there is no usable KVM: once per CI, as root.
# Only loopback is reached: the policy's network.hosts gives the local server real-looking names.
# shellcheck disable=SC2016 # shell snippets in single quotes are meant literally
. "$(dirname "$0")/lib.sh"

require_microvm_root
command -v curl >/dev/null || skip_all "curl is not installed (scripts/setup.sh installs it)"

WEB_PID='' SERVE_PID=''
cleanup() {
        [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
        [ -n "$WEB_PID" ] && kill "$WEB_PID" 2>/dev/null
        sbx_cleanup
}
trap cleanup EXIT

mkdir -p "$SBX_TMP/www"
echo "hello from the allowed host" >"$SBX_TMP/www/index.html"
head -c 8000000 /dev/urandom >"$SBX_TMP/www/big.bin"
BIG=$(sha256sum "$SBX_TMP/www/big.bin" | cut -c1-64)
# a server that also answers a POST with the digest and length of its body
cat >"$SBX_TMP/web.py" <<'PY'
import hashlib, http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0")); h = hashlib.sha256(); left = n
        while left > 0:
            b = self.rfile.read(min(left, 65536))
            if not b: break
            h.update(b); left -= len(b)
        body = ("%s %d\n" % (h.hexdigest(), n - left)).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), lambda *a, **k: H(*a, directory=sys.argv[2], **k)).serve_forever()
PY
WEB_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$SBX_TMP/web.py" "$WEB_PORT" "$SBX_TMP/www" >/dev/null 2>&1 &
WEB_PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$WEB_PORT/" && break; sleep 0.1; done
UP=$(head -c 3000000 /dev/zero | sha256sum | cut -c1-64)

POL=$SBX_TMP/policy.yaml
cat >"$POL" <<YAML
version: 1
run_as: 65534
enforce: { best_effort: [memory_mb, cpus, scratch_mb, pids] }
strict: { required_when: [], allow_emulation: true }
network:
  egress_allowed: ["pkgs.example.test", "*.example.test", "blocked.example.org"]
  hosts: { "pkgs.example.test": "127.0.0.1", "api.example.test": "127.0.0.1" }
  services_allowed: [web]
YAML
cat >"$SBX_TMP/eg.yaml" <<YAML
id: eg
version: "1.0.0"
isolation: { level: policy }
network: { loopback: false, egress: ["pkgs.example.test", "*.example.test"] }
YAML
chmod 644 "$POL" "$SBX_TMP/eg.yaml"
U=http://pkgs.example.test:$WEB_PORT
export SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt SANDBOXER_PROFILE_PATH=$SBX_TMP/profiles
mkdir -p "$SANDBOXER_PROFILE_PATH"
M=(--policy "$POL" --backend microvm --profile "$SBX_TMP/eg.yaml")

plan 14

# ---- a one-shot run ------------------------------------------------------------------------------
run_sbx "${M[@]}" -- /bin/sh -c 'echo "$HTTP_PROXY"; curl -sS --max-time 30 '"$U"'/; curl -sS --max-time 30 --proxytunnel '"$U"'/; curl -sS --max-time 30 -x socks5h://127.0.0.1:3128 http://api.example.test:'"$WEB_PORT"'/; curl -sS --max-time 30 -o /dev/null -w "%{http_code}\n" http://blocked.example.org/'
[ "$SBX_RC" = 0 ] || diag "rc $SBX_RC: $SBX_ERR"
is "$SBX_OUT" "http://127.0.0.1:3128
hello from the allowed host
hello from the allowed host
hello from the allowed host
403" "the guest's HTTP_PROXY is its own 127.0.0.1:3128; HTTP, CONNECT and SOCKS5 reach the allowed names; a denied one is 403"
is "$(json_get "$SBX_REPORT" '[d["backend"], d["egress"]["proxy"], d["egress"]["allowed"], d["egress"]["refused"], sorted(c["via"] for c in d["egress"]["connections"])]')" \
        '["microvm", "127.0.0.1:3128", 3, 1, ["connect", "http", "socks5"]]' \
        "the report's egress: the proxy, three connections allowed (each says how it came), one refused"
is "$(json_get "$SBX_REPORT" '[(v["kind"], v["detail"]["host"], v["detail"]["reason"]) for v in d["violations"]]')" \
        '[["NetworkAccessViolation", "blocked.example.org", "no_matching_allow"]]' \
        "the refusal is a NetworkAccessViolation with its evidence, as on every backend"
python3 "$SBX_SRC/tests/tools/validate-report.py" "$SBX_REPORT" >/dev/null 2>&1
is "$?" 0 "the report validates against the schema"

# bytes cross whole, both ways, and two connections at once do not stop each other
run_sbx "${M[@]}" -- /bin/sh -c '
(curl -sS --max-time 120 '"$U"'/big.bin | sha256sum | cut -c1-64 >/tmp/a) &
curl -sS --max-time 120 --proxytunnel '"$U"'/big.bin | sha256sum | cut -c1-64 >/tmp/b
wait; cat /tmp/a /tmp/b
head -c 3000000 /dev/zero | curl -sS --max-time 120 -X POST -H "Content-Type: application/octet-stream" --data-binary @- '"$U"'/up'
[ "$SBX_RC" = 0 ] || diag "rc $SBX_RC: $SBX_ERR"
is "$SBX_OUT" "$BIG
$BIG
$UP 3000000" "8 MB down on two connections at once and 3 MB up arrive whole (by their digests)"
is "$(json_get "$SBX_REPORT" '[d["egress"]["allowed"], d["egress"]["bytes_down"] > 16000000, d["egress"]["bytes_up"] > 3000000]')" \
        '[3, true, true]' "the report counts their bytes"

# nothing else: no card, no route; a port of the host's loopback is the guest's own (nothing there)
run_sbx "${M[@]}" -- /bin/sh -c 'curl -sS --noproxy "*" --max-time 10 -o /dev/null http://127.0.0.1:'"$WEB_PORT"'/; echo "loopback rc=$?"; curl -sS --noproxy "*" --max-time 10 -o /dev/null http://10.0.2.2:'"$WEB_PORT"'/; echo "route rc=$?"; sed -n "s/^ *\\([a-z0-9]*\\):.*/\\1/p" /proc/net/dev'
is "$(grep -E '^(loopback|route) rc=|^lo$' "$SBX_OUT_FILE" | tr '\n' ' ')" "loopback rc=7 route rc=7 lo " \
        "past the proxy nothing is reached: the host's port is not on the guest's loopback, there is no route, lo is the one interface"

# without egress rules: no proxy, no variables, and sockets refused as before
cat >"$SBX_TMP/none.yaml" <<YAML
id: none
version: "1.0.0"
isolation: { level: policy }
network: { loopback: false }
YAML
run_sbx --policy "$POL" --backend microvm --profile "$SBX_TMP/none.yaml" -- /bin/sh -c 'echo "[${HTTP_PROXY:-}]"; curl -sS --max-time 10 -x http://127.0.0.1:3128 -o /dev/null '"$U"'/ 2>/dev/null; echo "rc=$?"'
is "$SBX_OUT:$(json_get "$SBX_REPORT" 'd["egress"]')" "[]
rc=7:null" "no egress rules: no proxy, no variables, no listener in the guest"

# ---- a host service, at its port inside ----------------------------------------------------------
cat >"$SBX_TMP/svc.yaml" <<YAML
id: svc
version: "1.0.0"
isolation: { level: policy }
network:
  loopback: false
  egress: []
  services: [{ name: web, target: "127.0.0.1:$WEB_PORT", port: 8080, protocol: http }]
YAML
run_sbx --policy "$POL" --backend microvm --profile "$SBX_TMP/svc.yaml" -- /bin/sh -c 'curl -sS --noproxy "*" --max-time 30 http://127.0.0.1:8080/'
[ "$SBX_RC" = 0 ] || diag "rc $SBX_RC: $SBX_ERR"
is "$SBX_OUT" "hello from the allowed host" "a host service is reached at its port inside the guest"
is "$(json_get "$SBX_REPORT" '[(s["name"], [(r["method"], r["path"], r["status"]) for r in s["requests"]]) for s in d["services"]]')" \
        '[["web", [["GET", "/", 200]]]]' "the service's request is in the report"

# ---- a persistent sandbox: each exec's connections and refusals in its own report ----------------
sed 's/^id: eg$/id: profile.eg/; s/^isolation: .*/isolation: { level: microvm, mode: strict, backend: auto }/' \
        "$SBX_TMP/eg.yaml" >"$SANDBOXER_PROFILE_PATH/profile.eg.yaml"
SOCK=$SBX_TMP/s.sock
"$SANDBOXER" serve --listen "unix:$SOCK" --state-dir "$SBX_TMP/st" --policy "$POL" --stop-sandboxes 2>"$SBX_TMP/serve.log" &
SERVE_PID=$!
sbx_started "$SERVE_PID"
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
api() { curl -sS --max-time 120 --unix-socket "$SOCK" -X "$1" "http://sbx$2" ${3:+-d "$3"}; }
api POST /v1/sandboxes '{"profile":"profile.eg"}' >"$SBX_TMP/create.json" 2>&1
ID=$(json_get "$SBX_TMP/create.json" 'd["id"]')
is "$(json_get "$SBX_TMP/create.json" 'd["backend"]')" microvm "a persistent microvm sandbox with egress rules is created ($ID)"
[[ $ID == sbx_* ]] || diag "$(cat "$SBX_TMP/create.json" "$SBX_TMP/serve.log")"
api POST "/v1/sandboxes/$ID/exec" '{"argv":["sh","-c","curl -sS --max-time 30 '"$U"'/; curl -sS --max-time 30 -o /dev/null -w %{http_code} http://blocked.example.org/"]}' >"$SBX_TMP/x1.json"
is "$(json_get "$SBX_TMP/x1.json" '[d["stdout"].split()[-1], d["report"]["egress"]["allowed"], [c["host"] for c in d["report"]["egress"]["connections"]], [v["detail"]["host"] for v in d["report"]["violations"]]]')" \
        '["403", 1, ["pkgs.example.test"], ["blocked.example.org"]]' \
        "an exec's report has its own connection and its own refusal"
api POST "/v1/sandboxes/$ID/exec" '{"argv":["true"]}' >"$SBX_TMP/x2.json"
is "$(json_get "$SBX_TMP/x2.json" '[d["report"]["egress"]["allowed"], d["report"]["violations"]]')" '[0, []]' \
        "the next exec's report starts empty"
api DELETE "/v1/sandboxes/$ID" >/dev/null
api GET "/v1/sandboxes/$ID" >"$SBX_TMP/gone.json"
left=""
for _ in $(seq 50); do
        left=$(pgrep -P "$SERVE_PID" -f qemu-system 2>/dev/null; for p in $(pgrep -f "sandboxer supervise --id $ID" 2>/dev/null); do echo "$p"; done)
        [ -z "$left" ] && break
        sleep 0.1
done
is "$(json_get "$SBX_TMP/gone.json" 'd["state"]'):$left" "destroyed:" "destroy: the sandbox is destroyed and its supervisor and guest are gone"
