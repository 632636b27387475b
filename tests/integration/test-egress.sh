#!/usr/bin/env bash
# test-egress.sh — network.egress through the supervisor's proxy (DESIGN.md, "Network: egress
# allowlist and host services"): real clients inside (curl by HTTP_PROXY, by CONNECT, by SOCKS5,
# python's urllib) reach allowed names and are refused the rest at once, each refusal a
# NetworkAccessViolation with its reason, each connection in the report with its bytes; a direct
# connect() is refused and recorded; on_violation: kill ends the run; a persistent sandbox's
# execs get their own connections and refusals. Only loopback is reached: the policy's
# network.hosts gives the local servers real-looking names.
# shellcheck disable=SC2016 # python expressions in single quotes are meant literally
. "$(dirname "$0")/lib.sh"
require_backend native

SERVE_PID= WEB_PID=
cleanup() {
        [ -n "$SERVE_PID" ] && kill -KILL "$SERVE_PID" 2>/dev/null
        [ -n "$WEB_PID" ] && kill "$WEB_PID" 2>/dev/null
        sbx_cleanup
}
trap cleanup EXIT

command -v curl >/dev/null || skip_all "curl is not installed (scripts/setup.sh installs it)"

# a web server on the host's loopback, outside every sandbox
mkdir -p "$SBX_TMP/www" && echo "hello from the allowed host" >"$SBX_TMP/www/index.html"
WEB_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$WEB_PORT" --bind 127.0.0.1 --directory "$SBX_TMP/www" >/dev/null 2>&1 &
WEB_PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$WEB_PORT/" && break; sleep 0.1; done

POL=$SBX_TMP/policy.yaml
cat >"$POL" <<YAML
version: 1
overrides: { per_request: true, allowed: [timeout_s, memory_mb, cpus, scratch_mb, pids] }
enforce: { best_effort: [memory_mb, cpus, scratch_mb] }
run_as: 65534
network:
  egress_allowed: ["pkgs.example.test", "*.example.test", "localhost", "blocked.example.org"]
  hosts: { "pkgs.example.test": "127.0.0.1", "api.example.test": "127.0.0.1", "git.example.test": "127.0.0.1" }
YAML
chmod 644 "$POL"
prof() { # NAME EGRESS-LIST [EXTRA-YAML]
        cat >"$SBX_TMP/$1.yaml" <<YAML
id: $1
version: "1.0.0"
network: { egress: $2 }
${3:-}
YAML
        chmod 644 "$SBX_TMP/$1.yaml"
}
prof eg '["pkgs.example.test", "*.example.test", "localhost"]'
prof egkill '["pkgs.example.test"]' 'on_violation: kill'
S=(--policy "$POL" --backend native --profile "$SBX_TMP/eg.yaml")
U=http://pkgs.example.test:$WEB_PORT/

# --- the proxy variables, and the allowed name through them ---
run_sbx "${S[@]}" -- /bin/sh -c 'echo "$HTTP_PROXY $HTTPS_PROXY $ALL_PROXY $NO_PROXY"; curl -sS --max-time 10 '"$U"
like "$SBX_OUT" '^http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1' \
        "HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY name the proxy"
like "$SBX_OUT" 'hello from the allowed host' "curl reaches an allowed name through HTTP_PROXY (plain HTTP, absolute URI)"
is "$(json_get "$SBX_REPORT" '[d["egress"]["proxy"], d["egress"]["allowed"], d["egress"]["refused"]]')" \
        '["127.0.0.1:3128", 1, 0]' "the report's egress: the proxy, one connection allowed, none refused"
is "$(json_get "$SBX_REPORT" '[(c["type"], c["host"], c["port"] > 0, c["via"], c["rule"], c["bytes_down"] > 27, c["bytes_up"] > 0) for c in d["egress"]["connections"]]')" \
        '[["network.egress", "pkgs.example.test", true, "http", "pkgs.example.test", true, true]]' \
        "the connection is in the report with its rule and its bytes each way"
like "$(json_get "$SBX_REPORT" 'd["config"]["fences"]["egress"]')" "proxy at 127.0.0.1:3128" "the egress fence is stated"

# --- CONNECT, SOCKS5, python's urllib, a wildcard rule ---
run_sbx "${S[@]}" -- /bin/sh -c 'curl -sS --max-time 10 --proxytunnel '"$U"'; curl -sS --max-time 10 -x socks5h://127.0.0.1:3128 http://api.example.test:'"$WEB_PORT"'/; python3 -c "import urllib.request; print(urllib.request.urlopen(\"'"$U"'\", timeout=10).read().decode().strip(), \"(urllib)\")"'
is "$(grep -c 'hello from the allowed host' "$SBX_OUT_FILE")" 3 "CONNECT, SOCKS5 (a *.domain rule) and urllib all reach the server"
is "$(json_get "$SBX_REPORT" 'sorted(c["via"] for c in d["egress"]["connections"])')" '["connect", "http", "socks5"]' \
        "each connection says how it came (CONNECT, an absolute URI, SOCKS5)"
is "$(json_get "$SBX_REPORT" '[c["rule"] for c in d["egress"]["connections"] if c["via"] == "socks5"]')" '["*.example.test"]' \
        "the wildcard rule is named as the one that allowed it"

# --- refusals: at once, told apart from a network failure, recorded with the reason ---
t0=$SECONDS
run_sbx "${S[@]}" -- /bin/sh -c 'curl -sS --max-time 10 -D - -o /dev/null http://blocked.example.org:'"$WEB_PORT"'/ | tr -d "\r"; curl -sS --max-time 10 --noproxy "" -o /dev/null -w "%{http_code}\n" http://localhost:'"$WEB_PORT"'/; curl -sS --max-time 10 -x socks5h://127.0.0.1:3128 http://other.example.org/ 2>&1 | head -1; echo done'
[ $((SECONDS - t0)) -lt 8 ]
ok $? "refusals answer at once"
like "$SBX_OUT" 'HTTP/1.1 403' "a name outside network.egress: HTTP 403"
like "$SBX_OUT" 'X-Sandboxer-Refused: no_matching_allow' "with the reason in X-Sandboxer-Refused"
like "$SBX_OUT" $'\n403\n' "localhost, allowed by a rule, resolves into loopback: refused too"
like "$SBX_OUT" 'SOCKS5 connection to other.example.org. \(2\)' "SOCKS5: reply 2, not allowed by the ruleset"
is "$(json_get "$SBX_REPORT" 'sorted((v["kind"], v["detail"]["host"], v["detail"]["via"], v["detail"]["reason"]) for v in d["violations"])')" \
        '[["NetworkAccessViolation", "blocked.example.org", "proxy", "no_matching_allow"], ["NetworkAccessViolation", "localhost", "proxy", "resolves_to_denied"], ["NetworkAccessViolation", "other.example.org", "proxy", "no_matching_allow"]]' \
        "each refusal is a NetworkAccessViolation with host, via proxy and the reason"
is "$(json_get "$SBX_REPORT" '[d["egress"]["refused"], d["status"], d["exit"]["code"]]')" '[3, "exited", 0]' \
        "refusals are counted; with on_violation: deny the command goes on"

# --- TLS: the server name inside the tunnel is judged too (no fronting an allowed name) ---
run_sbx "${S[@]}" -- python3 -c '
import socket, ssl, sys
def attempt(sni):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT pkgs.example.test:%s HTTP/1.1\r\n\r\n" % sys.argv[1].encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ssl.create_default_context().wrap_bio(inb, outb, server_hostname=sni)
    try:
        o.do_handshake()
    except ssl.SSLWantReadError:
        pass
    s.sendall(outb.read())
    got = s.recv(100)
    print(sni, head.split(b"\r\n")[0].decode(), "answered" if got else "closed")
attempt("pkgs.example.test")
attempt("evil.example.org")' "$WEB_PORT"
like "$SBX_OUT" 'pkgs.example.test HTTP/1.1 200 Connection Established answered' "a TLS ClientHello naming the allowed host goes through"
like "$SBX_OUT" 'evil.example.org HTTP/1.1 200 Connection Established closed' "one naming another host is stopped before the server sees it"
is "$(json_get "$SBX_REPORT" '[(v["detail"]["host"], v["detail"]["protocol"], v["detail"]["reason"]) for v in d["violations"]]')" \
        '[["evil.example.org", "tls", "no_matching_allow"]]' "and recorded with the server name it gave"

# --- a malformed target ---
run_sbx "${S[@]}" -- python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"CONNECT bad_host!:80 HTTP/1.1\r\nHost: bad_host!:80\r\n\r\n")
print(s.recv(200).split(b"\r\n")[0].decode())'
like "$SBX_OUT" '403' "a malformed CONNECT target: 403"
is "$(json_get "$SBX_REPORT" '[v["detail"]["reason"] for v in d["violations"]]')" '["malformed_host"]' "recorded as malformed_host"

# the transparent path needs the seccomp listener: where sandboxer runs under a seccomp filter
# itself (nested), there is none, and such connects fail closed unrecorded (docs/network.md)
if host_has notif; then
# --- the transparent path: programs that ignore the proxy variables reach the proxy anyway ---
run_sbx "${S[@]}" -- /bin/sh -c 'cat /etc/resolv.conf; getent hosts pkgs.example.test; curl -sS --max-time 10 --noproxy "*" '"$U"'; curl -sS --max-time 10 --noproxy "*" -o /dev/null http://blocked.example.org:'"$WEB_PORT"'/ 2>&1; echo "curl rc=$?"'
like "$SBX_OUT" 'nameserver 127.0.0.1' "the sandbox's resolver is the supervisor's, at 127.0.0.1"
like "$SBX_OUT" '198\.1[89]\.[0-9]+\.[0-9]+ +pkgs\.example\.test' "a name resolves to a synthetic address of 198.18.0.0/15"
like "$SBX_OUT" 'hello from the allowed host' "curl --noproxy '*' reaches an allowed name through the proxy all the same"
like "$SBX_OUT" 'curl rc=7' "and a denied one is refused at connect()"
is "$(json_get "$SBX_REPORT" '[(c["host"], c["via"]) for c in d["egress"]["connections"]] + [(v["detail"]["host"], v["detail"]["protocol"], v["detail"]["reason"], v["syscall"]) for v in d["violations"]]')" \
        '[["pkgs.example.test", "transparent"], ["blocked.example.org", "transparent", "no_matching_allow", "connect"]]' \
        "both are in the report by name: the connection, and the refusal at connect()"
python3 "$SBX_SRC/tests/tools/validate-report.py" "$SBX_REPORT" >/dev/null 2>&1
is "$?" 0 "a report with transparent connections validates against the schema"
run_sbx "${S[@]}" -- python3 -c '
import socket, sys, threading
out = []
def go():
    s = socket.create_connection(("pkgs.example.test", int(sys.argv[1])), timeout=10)
    s.sendall(b"GET / HTTP/1.0\r\nHost: pkgs.example.test\r\n\r\n")
    out.append(s.recv(100).split(b"\r\n")[0].decode())
t = threading.Thread(target=go)
t.start()
t.join()
print("thread:", out)' "$WEB_PORT"
like "$SBX_OUT" "thread: \['HTTP/1.0 200 OK'\]" "a connect() from a thread (not the process's main one) takes the transparent path too"
prof egnolo '["pkgs.example.test"], loopback: false'
run_sbx --policy "$POL" --backend native --profile "$SBX_TMP/egnolo.yaml" -- /bin/sh -c 'getent hosts pkgs.example.test && curl -sS --max-time 10 --noproxy "*" '"$U"
is "$(json_get "$SBX_REPORT" '[d["status"], d["violations"]]'):$(grep -c 'hello from the allowed host' "$SBX_OUT_FILE")" '["exited", []]:1' \
        "with network.loopback: false the resolver and the proxy are still reached, and nothing is recorded against them"
if command -v node >/dev/null; then
        run_sbx "${S[@]}" -- node -e 'fetch(process.argv[1]).then(r => r.text()).then(t => console.log("node:", t.trim()), e => console.log("node failed:", e.cause && e.cause.code))' "$U"
        is "$SBX_OUT" "node: hello from the allowed host" "node's fetch, which ignores the proxy variables, reaches an allowed name"
else
        skip "node is not installed" 1
fi

# --- around the proxy: a connect() to an address is judged as one, refused and recorded ---
run_sbx "${S[@]}" -- python3 -c '
import socket
try:
    socket.create_connection(("198.51.100.7", 80), timeout=5)
except OSError as e:
    print("refused", e.errno)'
like "$SBX_OUT" '^refused 111' "a direct connect() to an address no rule names: ECONNREFUSED at once"
is "$(json_get "$SBX_REPORT" '[(v["kind"], v.get("syscall"), v["detail"]["host"], v["detail"]["reason"]) for v in d["violations"]]')" \
        '[["NetworkAccessViolation", "connect", "198.51.100.7", "no_matching_allow"]]' "and is recorded with the address"
else
        skip "$HOST_WHY" 11
fi
run_sbx "${S[@]}" -- python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"x", ("198.51.100.7", 53)); print("sent?")
except OSError as e:
    print("udp refused", e.errno)'
like "$SBX_OUT" 'udp refused' "UDP out of the sandbox has no way at all"

# --- real tools: git over https (a local TLS server, a CA the test makes), pip from a local index ---
if command -v git >/dev/null && command -v openssl >/dev/null; then
        G=$SBX_TMP/git && mkdir -p "$G"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout "$G/key.pem" -out "$G/ca.pem" -days 2 -subj "/CN=git.example.test" \
                -addext "subjectAltName=DNS:git.example.test" -addext "basicConstraints=critical,CA:TRUE" >/dev/null 2>&1
        git init -q --bare "$G/repo.git"
        git clone -q "$G/repo.git" "$G/w" 2>/dev/null
        echo "cloned through the proxy" >"$G/w/README"
        git -C "$G/w" add README && git -C "$G/w" -c user.email=t@t -c user.name=t commit -qm init && git -C "$G/w" push -q origin HEAD:master 2>/dev/null
        git -C "$G/repo.git" update-server-info
        cat >"$G/tls.py" <<'PY'
import functools, http.server, ssl, sys
root, cert, key, portfile = sys.argv[1:5]
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(H, directory=root))
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(portfile, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
        python3 "$G/tls.py" "$G" "$G/ca.pem" "$G/key.pem" "$G/port" &
        GIT_PID=$!
        for _ in $(seq 50); do [ -s "$G/port" ] && break; sleep 0.1; done
        chmod -R a+rX "$G"
        run_sbx "${S[@]}" --workspace "$G" --env GIT_SSL_CAINFO=/workspace/ca.pem -- /bin/sh -c 'cd /tmp && git clone -q https://git.example.test:'"$(cat "$G/port")"'/repo.git c && cat c/README'
        is "$SBX_RC:$SBX_OUT" "0:cloned through the proxy" "git clone over https through the proxy (its CA from GIT_SSL_CAINFO)"
        [ "$SBX_RC" = 0 ] || diag "$SBX_ERR"
        is "$(json_get "$SBX_REPORT" 'sorted(set((c["host"], c["via"]) for c in d["egress"]["connections"]))')" '[["git.example.test", "connect"]]' \
                "each of git's connections is in the report: CONNECT to the allowed name"
        kill "$GIT_PID" 2>/dev/null
else
        skip "git or openssl is not installed (scripts/setup.sh installs them)" 2
fi
if /usr/bin/python3 -m pip --version >/dev/null 2>&1; then
        mkdir -p "$SBX_TMP/www/simple/sbxdemo"
        /usr/bin/python3 - "$SBX_TMP/www/simple" <<'PY'
import base64, hashlib, sys, zipfile
root = sys.argv[1]
files = {"sbxdemo/__init__.py": b"VALUE = 'installed through the proxy'\n",
         "sbxdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n",
         "sbxdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
rec = ["%s,sha256=%s,%d" % (n, base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode(), len(d)) for n, d in files.items()]
files["sbxdemo-1.0.dist-info/RECORD"] = ("\n".join(rec + ["sbxdemo-1.0.dist-info/RECORD,,"]) + "\n").encode()
with zipfile.ZipFile(root + "/sbxdemo/sbxdemo-1.0-py3-none-any.whl", "w") as z:
    for n, d in files.items():
        z.writestr(n, d)
open(root + "/sbxdemo/index.html", "w").write('<a href="sbxdemo-1.0-py3-none-any.whl">sbxdemo-1.0-py3-none-any.whl</a>\n')
open(root + "/index.html", "w").write('<a href="sbxdemo/">sbxdemo</a>\n')
PY
        chmod -R a+rX "$SBX_TMP/www"
        PIP=(/usr/bin/python3 -m pip install -q --no-cache-dir --disable-pip-version-check --break-system-packages --target /tmp/site)
        run_sbx "${S[@]}" -- /bin/sh -c "${PIP[*]} --trusted-host pkgs.example.test --index-url http://pkgs.example.test:$WEB_PORT/simple/ sbxdemo && PYTHONPATH=/tmp/site /usr/bin/python3 -c 'import sbxdemo; print(sbxdemo.VALUE)'"
        is "$SBX_RC:$SBX_OUT" "0:installed through the proxy" "pip install from a local package index, through the proxy"
        t0=$SECONDS
        run_sbx "${S[@]}" -- /bin/sh -c "${PIP[*]} --retries 0 --timeout 5 --trusted-host blocked.example.org --index-url http://blocked.example.org:$WEB_PORT/simple/ sbxdemo"
        [ "$SBX_RC" != 0 ] && [ $((SECONDS - t0)) -lt 30 ]
        ok $? "pip from an index outside network.egress fails, at once"
        is "$(json_get "$SBX_REPORT" 'sorted(set((v["detail"]["host"], v["detail"]["reason"]) for v in d["violations"]))')" \
                '[["blocked.example.org", "no_matching_allow"]]' "with the violation in the report"
else
        skip "pip is not installed (scripts/setup.sh installs python3-pip)" 3
fi

# --- on_violation: kill ---
run_sbx --policy "$POL" --backend native --profile "$SBX_TMP/egkill.yaml" -- /bin/sh -c 'curl -sS --max-time 10 -o /dev/null http://blocked.example.org:'"$WEB_PORT"'/; sleep 5; echo survived'
is "$SBX_RC:$(json_get "$SBX_REPORT" '[d["status"], d["violations"][0]["action"], d["violations"][0]["detail"]["reason"]]')" \
        '137:["violation", "killed", "no_matching_allow"]' "on_violation: kill ends the sandbox at the refusal"
unlike() { if [[ $1 =~ $2 ]]; then ok 1 "$3"; else ok 0 "$3"; fi; }
unlike "$SBX_OUT" survived "the command did not go on"

# --- where the proxy does not exist yet, egress rules are refused, not ignored (landlock and
# bwrap have it: test-egress-backends.sh) ---
lacking=$("$SANDBOXER" doctor --json 2>/dev/null | python3 -c 'import json,sys
d = json.load(sys.stdin)["backends"]
print(next((b for b, v in d.items() if v["available"] and not v["capabilities"]["net.egress_proxy"]["yes"]), ""))' 2>/dev/null)
if [ -n "$lacking" ]; then
        run_sbx --policy "$POL" --backend "$lacking" --profile "$SBX_TMP/eg.yaml" -- /bin/true
        is "$SBX_RC" 125 "the $lacking backend refuses network.egress"
        like "$SBX_ERR" 'net.egress_proxy' "naming the capability it lacks"
else
        skip "no backend available here lacks net.egress_proxy" 2
fi
# without egress rules, nothing changes: no proxy, no variables, sockets refused as before
run_sbx --policy "$POL" --backend native -- /bin/sh -c 'echo "[${HTTP_PROXY:-}]"'
is "$SBX_OUT:$(json_get "$SBX_REPORT" 'd["egress"]')" "[]:null" "no egress rules: no proxy and no variables"

# --- a persistent sandbox: each exec's connections and refusals in its own report ---
export SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt SANDBOXER_PROFILE_PATH=$SBX_TMP/profiles
mkdir -p "$SANDBOXER_PROFILE_PATH" && sed 's/^id: eg$/id: profile.eg/' "$SBX_TMP/eg.yaml" >"$SANDBOXER_PROFILE_PATH/profile.eg.yaml"
SOCK=$SBX_TMP/s.sock
"$SANDBOXER" serve --listen "unix:$SOCK" --state-dir "$SBX_TMP/st" --policy "$POL" --stop-sandboxes 2>"$SBX_TMP/serve.log" &
SERVE_PID=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
api() { curl -sS --max-time 60 --unix-socket "$SOCK" -X "$1" "http://sbx$2" ${3:+-d "$3"}; }
api POST /v1/sandboxes '{"profile":"profile.eg"}' >"$SBX_TMP/create.json" 2>&1
ID=$(json_get "$SBX_TMP/create.json" 'd["id"]')
like "$ID" "^sbx_" "a sandbox of a profile with egress rules is created"
[[ $ID == sbx_* ]] || diag "$(cat "$SBX_TMP/create.json" "$SBX_TMP/serve.log")"
api POST "/v1/sandboxes/$ID/exec" '{"argv":["sh","-c","curl -sS --max-time 10 '"$U"'; curl -sS --max-time 10 -o /dev/null -w %{http_code} http://blocked.example.org/"]}' >"$SBX_TMP/x1.json"
is "$(json_get "$SBX_TMP/x1.json" '[d["stdout"].split()[-1], d["report"]["egress"]["allowed"], [c["host"] for c in d["report"]["egress"]["connections"]], [v["detail"]["host"] for v in d["report"]["violations"]]]')" \
        '["403", 1, ["pkgs.example.test"], ["blocked.example.org"]]' \
        "an exec's report has its own connection and its own refusal"
api POST "/v1/sandboxes/$ID/exec" '{"argv":["true"]}' >"$SBX_TMP/x2.json"
is "$(json_get "$SBX_TMP/x2.json" '[d["report"]["egress"]["allowed"], d["report"]["violations"]]')" '[0, []]' \
        "the next exec's report starts empty"
if host_has notif; then
api POST "/v1/sandboxes/$ID/exec" '{"argv":["sh","-c","curl -sS --max-time 10 --noproxy * -o /dev/null '"$U"'; curl -sS --max-time 10 --noproxy * -o /dev/null http://blocked.example.org/; echo rc=$?"]}' >"$SBX_TMP/x3.json"
is "$(json_get "$SBX_TMP/x3.json" '[d["stdout"].split()[-1], [(c["host"], c["via"]) for c in d["report"]["egress"]["connections"]], [(v["detail"]["host"], v["syscall"]) for v in d["report"]["violations"]]]')" \
        '["rc=7", [["pkgs.example.test", "transparent"]], [["blocked.example.org", "connect"]]]' \
        "the transparent path in a persistent sandbox: the exec's own connection and refusal"
else
        skip "$HOST_WHY" 1
fi
api DELETE "/v1/sandboxes/$ID" >/dev/null

# --- the rules from the API: given at create, replaced while it runs ---
sed 's/^id: eg$/id: profile.none/; s/^network: .*$/network: { egress: [] }/' "$SBX_TMP/eg.yaml" >"$SANDBOXER_PROFILE_PATH/profile.none.yaml"
code() { curl -sS --max-time 60 --unix-socket "$SOCK" -o "$SBX_TMP/code.json" -w '%{http_code}' -X "$1" "http://sbx$2" ${3:+-d "$3"}; }
is "$(code POST /v1/sandboxes '{"profile":"profile.none","network":{"egress":["evil.example.org"]}}'):$(json_get "$SBX_TMP/code.json" 'd["error"]["field"]')" \
        "403:network.egress" "create: an egress rule outside the policy's egress_allowed is 403"
is "$(code POST /v1/sandboxes '{"profile":"profile.none","network":{"egress":["a b"]}}'):$(json_get "$SBX_TMP/code.json" 'd["error"]["field"]')" \
        "400:network.egress" "create: a rule that does not parse is 400 naming network.egress"
is "$(code POST /v1/sandboxes '{"profile":"profile.none","network":{"egress":[],"allowOut":[]}}'):$(json_get "$SBX_TMP/code.json" 'd["error"]["field"]')" \
        "400:network.allowOut" "create: an unknown key under network is 400 naming it"
is "$(code POST /v1/sandboxes '{"profile":"profile.none","network":{"egress_deny":"x"}}'):$(json_get "$SBX_TMP/code.json" 'd["error"]["field"]')" \
        "400:network.egress_deny" "create: egress_deny that is not a list is 400"
code POST /v1/sandboxes '{"profile":"profile.none","network":{"egress":["api.example.test"],"egress_deny":["blocked.example.org"]}}' >/dev/null
cp "$SBX_TMP/code.json" "$SBX_TMP/create2.json"
ID=$(json_get "$SBX_TMP/create2.json" 'd["id"]')
is "$(json_get "$SBX_TMP/create2.json" 'd.get("network")')" '{"egress": ["api.example.test"], "egress_deny": ["blocked.example.org"]}' \
        "create with network: the record carries the rules in force"
[[ $ID == sbx_* ]] || diag "$(cat "$SBX_TMP/create2.json" "$SBX_TMP/serve.log")"
probe='{"argv":["sh","-c","for h in api pkgs; do curl -sS --max-time 10 -o /dev/null -w \"%{http_code} \" http://$h.example.test:'"$WEB_PORT"'/; done; curl -sS --max-time 10 -o /dev/null -w %{http_code} http://blocked.example.org/"]}'
api POST "/v1/sandboxes/$ID/exec" "$probe" >"$SBX_TMP/n1.json"
is "$(json_get "$SBX_TMP/n1.json" '[d["stdout"], [(v["detail"]["host"], v["detail"]["reason"]) for v in d["report"]["violations"]]]')" \
        '["200 403 403", [["pkgs.example.test", "no_matching_allow"], ["blocked.example.org", "denied_by_rule"]]]' \
        "the create's rules replace the profile's: its allowed name answers, the rest are refused with their reasons"
is "$(code PUT "/v1/sandboxes/$ID/network" '{"egress":["pkgs.example.test"]}'):$(json_get "$SBX_TMP/code.json" 'd["network"]')" \
        '200:{"egress": ["pkgs.example.test"], "egress_deny": []}' "PUT network replaces the rules (a list left out is empty)"
api POST "/v1/sandboxes/$ID/exec" "$probe" >"$SBX_TMP/n2.json"
is "$(json_get "$SBX_TMP/n2.json" '[d["stdout"], [(v["detail"]["host"], v["detail"]["reason"]) for v in d["report"]["violations"]]]')" \
        '["403 200 403", [["api.example.test", "no_matching_allow"], ["blocked.example.org", "no_matching_allow"]]]' \
        "the running sandbox's connections are judged by the new rules"
is "$(code PUT "/v1/sandboxes/$ID/network" '{"egress":["evil.example.org"]}'):$(json_get "$SBX_TMP/code.json" 'd["error"]["field"]')" \
        "403:network.egress" "PUT network outside the policy is 403, and the rules stay"
api GET "/v1/sandboxes/$ID" >"$SBX_TMP/n3.json"
is "$(json_get "$SBX_TMP/n3.json" 'd["network"]["egress"]')" '["pkgs.example.test"]' "a refused change leaves the record's rules"
api POST "/v1/sandboxes/$ID/recreate" >/dev/null
api POST "/v1/sandboxes/$ID/exec" "$probe" >"$SBX_TMP/n4.json"
is "$(json_get "$SBX_TMP/n4.json" 'd["stdout"]')" "403 200 403" "recreate keeps the rules the sandbox had, not its create's"
is "$(code PUT "/v1/sandboxes/$ID/network" '{"egress":"x"}'):$(code PUT "/v1/sandboxes/$ID/network" '[]'):$(code POST "/v1/sandboxes/$ID/network" '{}')" \
        "400:400:405" "PUT network: a bad body is 400, another method 405"
api DELETE "/v1/sandboxes/$ID" >/dev/null
code POST /v1/sandboxes '{"profile":"profile.none"}' >/dev/null
ID=$(json_get "$SBX_TMP/code.json" 'd["id"]')
is "$(code PUT "/v1/sandboxes/$ID/network" '{"egress":["pkgs.example.test"]}'):$(json_get "$SBX_TMP/code.json" 'd["error"]["field"]')" \
        "409:network" "PUT network on a sandbox made without rules (no proxy) is 409 naming the fix"
api DELETE "/v1/sandboxes/$ID" >/dev/null
kill -TERM "$SERVE_PID" && wait "$SERVE_PID" 2>/dev/null
SERVE_PID=

done_testing
