#!/usr/bin/env bash
# test-egress-backends.sh — network.egress on the backends other than native (test-egress.sh is
# native's, and skips whole where native cannot run; the landlock backend exists for exactly those
# hosts, so its block lives here). A block per backend:
#
# - landlock: no network namespace, so the proxy listens on the host's loopback at a port of the
#   sandbox's own, with a credential in the proxy URL. Real clients reach an allowed name through
#   it (HTTP, CONNECT, SOCKS5, urllib); a denied name is refused and recorded; a connection without
#   the credential (or with a wrong one) is refused (407, SOCKS5 auth failure); a direct connect to
#   another loopback port, or to the proxy's port at another address, is refused and recorded; the
#   credential is in no report.
# - bwrap, firejail, podman: the init makes the proxy's socket at 127.0.0.1:3128 in the tool's
#   network namespace; the clients, the refusals and the transparent path as on native (no
#   resolver).
# - docker: the relay makes the proxy's socket (and a host service's) in the container's network
#   namespace (as root only: setns); the clients and the refusal as above; a direct connect finds
#   no route (no transparent path: no seccomp listener) and is not recorded; the caller's stdin
#   arrives whole behind the one-byte gate. Against the engine at $DOCKER_HOST, else podman's
#   Docker-compatible service, started here; unprivileged, the profile is refused naming
#   net.egress_proxy.
#
# Only loopback is reached: the policy's network.hosts gives the local server real-looking names.
# shellcheck disable=SC2016 # python and shell snippets in single quotes are meant literally
. "$(dirname "$0")/lib.sh"

WEB_PID='' SERVE_PID=''
cleanup() {
        [ -n "$SERVE_PID" ] && kill -KILL "$SERVE_PID" 2>/dev/null
        [ -n "$WEB_PID" ] && kill "$WEB_PID" 2>/dev/null
        sbx_cleanup
}
trap cleanup EXIT

command -v curl >/dev/null || skip_all "curl is not installed (scripts/setup.sh installs it)"

mkdir -p "$SBX_TMP/www" && echo "hello from the allowed host" >"$SBX_TMP/www/index.html"
WEB_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$WEB_PORT" --bind 127.0.0.1 --directory "$SBX_TMP/www" >/dev/null 2>&1 &
WEB_PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$WEB_PORT/" && break; sleep 0.1; done

POL=$SBX_TMP/policy.yaml
cat >"$POL" <<YAML
version: 1
run_as: 65534
enforce: { best_effort: [memory_mb, cpus, scratch_mb, pids] }
network:
  egress_allowed: ["pkgs.example.test", "*.example.test", "blocked.example.org"]
  hosts: { "pkgs.example.test": "127.0.0.1", "api.example.test": "127.0.0.1" }
YAML
cat >"$SBX_TMP/eg.yaml" <<YAML
id: eg
version: "1.0.0"
isolation: { level: policy }
network: { loopback: false, egress: ["pkgs.example.test", "*.example.test"] }
YAML
chmod 644 "$POL" "$SBX_TMP/eg.yaml"
U=http://pkgs.example.test:$WEB_PORT/
export SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt SANDBOXER_PROFILE_PATH=$SBX_TMP/profiles
mkdir -p "$SANDBOXER_PROFILE_PATH"
api() { curl -sS --max-time 60 --unix-socket "$SOCK" -X "$1" "http://sbx$2" ${3:+-d "$3"}; }

# ---- landlock ------------------------------------------------------------------------------------
landlock_block() {
        local L=(--policy "$POL" --backend landlock --profile "$SBX_TMP/eg.yaml")
        run_sbx "${L[@]}" -- /bin/sh -c 'echo "$HTTP_PROXY $HTTPS_PROXY $ALL_PROXY $NO_PROXY"; curl -sS --max-time 10 '"$U"'; curl -sS --max-time 10 --proxytunnel '"$U"'; curl -sS --max-time 10 -x "$ALL_PROXY" http://api.example.test:'"$WEB_PORT"'/; python3 -c "import urllib.request; print(urllib.request.urlopen(\"'"$U"'\", timeout=10).read().decode().strip(), \"(urllib)\")"'
        [ "$SBX_RC" = 0 ] || diag "rc $SBX_RC: $SBX_ERR"
        local first secret port
        first=$(head -1 "$SBX_OUT_FILE")
        like "$first" '^http://sbx:[0-9a-f]{32}@127\.0\.0\.1:[0-9]+ http://sbx:[0-9a-f]{32}@127\.0\.0\.1:[0-9]+ socks5h://sbx:[0-9a-f]{32}@127\.0\.0\.1:[0-9]+ localhost,127\.0\.0\.1$' \
                "landlock: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY carry sbx:SECRET and the sandbox's own port"
        secret=$(sed -n 's|^http://sbx:\([0-9a-f]*\)@.*|\1|p' <<<"$first")
        port=$(sed -n 's|^http://sbx:[0-9a-f]*@127\.0\.0\.1:\([0-9]*\) .*|\1|p' <<<"$first")
        is "$(grep -c 'hello from the allowed host' "$SBX_OUT_FILE")" 4 \
                "landlock: curl by HTTP_PROXY, by CONNECT, by SOCKS5 (a *.domain rule) and python's urllib reach the allowed names"
        is "$(json_get "$SBX_REPORT" '[d["egress"]["proxy"], d["egress"]["allowed"], d["egress"]["refused"]]')" \
                "[\"127.0.0.1:$port\", 4, 0]" "landlock: the report's egress names the host port, four allowed, none refused"
        is "$(json_get "$SBX_REPORT" 'sorted(c["via"] for c in d["egress"]["connections"])')" '["connect", "http", "http", "socks5"]' \
                "landlock: each connection says how it came"
        ok "$([ -n "$secret" ] && ! grep -q "$secret" "$SBX_REPORT" "$SBX_ERR_FILE" && echo 0 || echo 1)" \
                "landlock: the credential is in neither the report nor the messages"
        like "$(json_get "$SBX_REPORT" 'd["config"]["fences"]["egress"]')" "proxy at 127.0.0.1:$port .*credential per sandbox" \
                "landlock: the egress fence states the port and the credential"
        like "$(json_get "$SBX_REPORT" 'd["config"]["fences"]["landlock"]')" "connect to the egress proxy's port" \
                "landlock: the Landlock fence states the one port"

        # the host's other processes reach that port too: without the credential they are refused,
        # and nothing of theirs is judged or lands in the sandbox's report
        "$SANDBOXER" run --report "$SBX_TMP/bg.report.json" "${L[@]}" -- /bin/sh -c 'echo "port ${HTTP_PROXY##*:}"; sleep 4' >"$SBX_TMP/bg.out" 2>"$SBX_TMP/bg.err" &
        local bg=$! bgport=""
        sbx_started "$bg"
        for _ in $(seq 100); do
                bgport=$(sed -n 's/^port //p' "$SBX_TMP/bg.out")
                [ -n "$bgport" ] && break
                sleep 0.05
        done
        local outside
        outside=$(curl -sS --max-time 5 -x "http://127.0.0.1:$bgport" -o /dev/null -w "%{http_code}" "$U" 2>&1)
        is "$outside" 407 "landlock: a host process without the credential: 407 from the sandbox's proxy"
        curl -sS --max-time 5 -x "socks5h://127.0.0.1:$bgport" "$U" >/dev/null 2>&1
        ok "$([ $? != 0 ] && echo 0 || echo 1)" "landlock: a host process by SOCKS5 without the credential: refused"
        outside=$(python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5); s.sendall(b"GET /x HTTP/1.1\r\n\r\n"); print(s.recv(64).split(b"\r\n")[0].decode())' "$bgport" 2>&1)
        like "$outside" '^HTTP/1.1 400' "landlock: a host process's malformed request: 400, and not the sandbox's violation (it could end the sandbox)"
        wait "$bg"
        is "$(json_get "$SBX_TMP/bg.report.json" '[d["egress"]["proxy"], d["egress"]["allowed"], d["egress"]["refused"], d["violations"]]')" \
                "[\"127.0.0.1:$bgport\", 0, 0, []]" "landlock: the outsider's attempts are not the sandbox's: nothing in its report"

        # a second sandbox: a port and a secret of its own
        run_sbx "${L[@]}" -- /bin/sh -c 'echo "$HTTP_PROXY"'
        local other=${SBX_OUT#http://sbx:}
        ok "$([ -n "$other" ] && [ "${other%%@*}" != "$secret" ] && [ "${other##*:}" != "$port" ] && echo 0 || echo 1)" \
                "landlock: another sandbox gets another secret and another port"

        # refusals: a denied name, recorded with its reason
        run_sbx "${L[@]}" -- /bin/sh -c 'curl -sS --max-time 10 -D - -o /dev/null http://blocked.example.org:'"$WEB_PORT"'/ | tr -d "\r"; curl -sS --max-time 10 -x "$ALL_PROXY" http://other.example.org/ 2>&1 | head -1; echo done'
        like "$SBX_OUT" 'HTTP/1.1 403' "landlock: a name outside network.egress: HTTP 403"
        like "$SBX_OUT" 'X-Sandboxer-Refused: no_matching_allow' "landlock: with the reason in X-Sandboxer-Refused"
        like "$SBX_OUT" 'SOCKS5 connection to other.example.org. \(2\)' "landlock: SOCKS5 reply 2, not allowed by the ruleset"
        is "$(json_get "$SBX_REPORT" 'sorted((v["kind"], v["detail"]["host"], v["detail"]["via"], v["detail"]["reason"]) for v in d["violations"] if "host" in v["detail"])')" \
                '[["NetworkAccessViolation", "blocked.example.org", "proxy", "no_matching_allow"], ["NetworkAccessViolation", "other.example.org", "proxy", "no_matching_allow"]]' \
                "landlock: each refusal is a NetworkAccessViolation with host, via proxy and the reason"

        # the credential: none, or a wrong one, is refused before anything is judged
        run_sbx "${L[@]}" -- /bin/sh -c 'p=${HTTP_PROXY##*:}
curl -sS --max-time 10 -x "http://127.0.0.1:$p" -o /dev/null -w "none %{http_code}\n" '"$U"'
curl -sS --max-time 10 -x "http://sbx:0123456789abcdef0123456789abcdef@127.0.0.1:$p" -o /dev/null -w "wrong %{http_code}\n" '"$U"'
curl -sS --max-time 10 -x "http://127.0.0.1:$p" -D - -o /dev/null --proxytunnel '"$U"' 2>/dev/null | tr -d "\r" | grep -i "^HTTP/\|^proxy-authenticate"
curl -sS --max-time 10 -x "socks5h://127.0.0.1:$p" '"$U"' >/dev/null 2>&1; echo "socks none rc=$?"
curl -sS --max-time 10 -x "socks5h://sbx:wrong@127.0.0.1:$p" '"$U"' >/dev/null 2>&1; echo "socks wrong rc=$?"'
        like "$SBX_OUT" 'none 407' "landlock: plain HTTP without the credential: 407"
        like "$SBX_OUT" 'wrong 407' "landlock: with a wrong secret: 407"
        like "$SBX_OUT" 'HTTP/1.1 407' "landlock: CONNECT without the credential: 407"
        like "$SBX_OUT" 'Proxy-Authenticate: Basic realm="sandboxer"' "landlock: the 407 asks for Basic"
        like "$SBX_OUT" 'socks none rc=(97|7)' "landlock: SOCKS5 offering no authentication: refused (no acceptable method)"
        like "$SBX_OUT" 'socks wrong rc=(97|7)' "landlock: SOCKS5 with a wrong password: refused (RFC 1929 failure)"
        is "$(json_get "$SBX_REPORT" '[d["egress"]["allowed"], d["egress"]["refused"]]')" '[0, 0]' \
                "landlock: nothing without the credential was judged or let through"
        ok "$(! grep -q 'hello from the allowed host' "$SBX_OUT_FILE" && echo 0 || echo 1)" \
                "landlock: no byte of the server reached a client without the credential"

        # around the proxy: any other address or port, refused and recorded; no UDP
        run_sbx "${L[@]}" -- python3 -c '
import os, socket
p = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
print("port", p)
for host, port in (("127.0.0.1", '"$WEB_PORT"'), ("198.51.100.7", p), ("127.0.0.2", p)):
    try:
        socket.create_connection((host, port), timeout=5)
        print("REACHED", host, port)
    except OSError as e:
        print("refused", host, e.errno)
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    print("REACHED udp")
except OSError as e:
    print("udp refused", e.errno)
try:
    socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    print("REACHED inet6")
except OSError as e:
    print("inet6 refused", e.errno)
s = socket.create_connection(("127.0.0.1", p), timeout=5)
print("proxy port reached")'
        ok "$([[ $SBX_OUT != *REACHED* ]] && echo 0 || echo 1)" \
                "landlock: no direct connect (another loopback port, the proxy's port elsewhere), no UDP, no IPv6" || diag "$SBX_OUT"
        like "$SBX_OUT" 'refused 127.0.0.1' "landlock: a direct connect to another loopback port is refused"
        like "$SBX_OUT" 'refused 198.51.100.7' "landlock: the proxy's port at another address is refused (Landlock's rule names a port only)"
        like "$SBX_OUT" 'udp refused 13' "landlock: a UDP socket: EACCES"
        like "$SBX_OUT" 'proxy port reached' "landlock: the proxy's own port is reached"
        port=$(sed -n 's/^port //p' "$SBX_OUT_FILE")
        is "$(json_get "$SBX_REPORT" 'sorted((v["kind"], v["detail"].get("address"), v["detail"].get("port")) for v in d["violations"] if "address" in v["detail"])')" \
                "[[\"NetworkAccessViolation\", \"127.0.0.1\", $WEB_PORT], [\"NetworkAccessViolation\", \"127.0.0.2\", $port], [\"NetworkAccessViolation\", \"198.51.100.7\", $port]]" \
                "landlock: each direct connect is a NetworkAccessViolation with its address and port"

        # a persistent sandbox: each exec's connections found by the host's TCP table (no network
        # namespace of its own) and the process holding the socket, into that exec's report
        sed 's/^id: eg$/id: profile.eg/' "$SBX_TMP/eg.yaml" >"$SANDBOXER_PROFILE_PATH/profile.eg.yaml"
        sed 's/^run_as: 65534$/run_as: 65534\nmodes: { balanced: { backends: [landlock] }, strict: { backends: [landlock] } }/' "$POL" >"$SBX_TMP/pol-ll.yaml"
        SOCK=$SBX_TMP/s.sock
        "$SANDBOXER" serve --listen "unix:$SOCK" --state-dir "$SBX_TMP/st" --policy "$SBX_TMP/pol-ll.yaml" --stop-sandboxes 2>"$SBX_TMP/serve.log" &
        SERVE_PID=$!
        for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
        api POST /v1/sandboxes '{"profile":"profile.eg"}' >"$SBX_TMP/create.json" 2>&1
        local id
        id=$(json_get "$SBX_TMP/create.json" 'd["id"] + " " + d["backend"]')
        like "$id" "^sbx_[0-9a-f]+ landlock$" "landlock: a persistent sandbox of a profile with egress rules is created" || diag "$(cat "$SBX_TMP/create.json" "$SBX_TMP/serve.log")"
        id=${id%% *}
        api POST "/v1/sandboxes/$id/exec" '{"argv":["sh","-c","curl -sS --max-time 10 '"$U"'; curl -sS --max-time 10 -o /dev/null -w %{http_code} http://blocked.example.org/"]}' >"$SBX_TMP/x1.json"
        is "$(json_get "$SBX_TMP/x1.json" '[d["stdout"].split()[-1], d["report"]["egress"]["allowed"], [c["host"] for c in d["report"]["egress"]["connections"]], [v["detail"]["host"] for v in d["report"]["violations"] if "host" in v["detail"]]]')" \
                '["403", 1, ["pkgs.example.test"], ["blocked.example.org"]]' \
                "landlock: an exec's report has its own connection and its own refusal"
        api POST "/v1/sandboxes/$id/exec" '{"argv":["true"]}' >"$SBX_TMP/x2.json"
        is "$(json_get "$SBX_TMP/x2.json" '[d["report"]["egress"]["allowed"], d["report"]["violations"]]')" '[0, []]' \
                "landlock: the next exec's report starts empty"
        # the rules replaced while it runs: the per-sandbox proxy on the host's loopback too
        curl -sS --max-time 60 --unix-socket "$SOCK" -X PUT "http://sbx/v1/sandboxes/$id/network" \
                -d '{"egress":["blocked.example.org"],"egress_deny":["pkgs.example.test"]}' >"$SBX_TMP/net.json"
        api POST "/v1/sandboxes/$id/exec" '{"argv":["sh","-c","curl -sS --max-time 10 -o /dev/null -w %{http_code} '"$U"'"]}' >"$SBX_TMP/x3.json"
        is "$(json_get "$SBX_TMP/x3.json" '[d["stdout"], [(v["detail"]["host"], v["detail"]["reason"]) for v in d["report"]["violations"] if "host" in v["detail"]]]')" \
                '["403", [["pkgs.example.test", "denied_by_rule"]]]' \
                "landlock: PUT network replaces the running sandbox's rules (a deny rule now names the host)" ||
                diag "$(cat "$SBX_TMP/net.json")"
        api DELETE "/v1/sandboxes/$id" >/dev/null
        kill -TERM "$SERVE_PID" && wait "$SERVE_PID" 2>/dev/null
        SERVE_PID=
}

if ! backend_check landlock; then
        skip "$BACKEND_WHY" 34
elif ! host_has notif; then
        # egress on landlock needs the listener (it holds Landlock's port rule to 127.0.0.1)
        skip "$HOST_WHY: egress on the landlock backend needs the seccomp listener" 34
else
        landlock_block
fi

# ---- bwrap: the init makes the proxy's socket in bubblewrap's network namespace -----------------
cat >"$SBX_TMP/egb.yaml" <<YAML
id: egb
version: "1.0.0"
network: { egress: ["pkgs.example.test", "*.example.test"] }
YAML
chmod 644 "$SBX_TMP/egb.yaml"
tool_block() { # BACKEND POLICY — 7 checks (5 on docker)
        local be=$1 B=(--policy "$2" --backend "$1" --profile "$SBX_TMP/egb.yaml")
        run_sbx "${B[@]}" -- /bin/sh -c 'echo "$HTTP_PROXY $ALL_PROXY"; curl -sS --max-time 10 '"$U"'; curl -sS --max-time 10 --proxytunnel '"$U"'; curl -sS --max-time 10 -x "$ALL_PROXY" http://api.example.test:'"$WEB_PORT"'/; curl -sS --max-time 10 -D - -o /dev/null http://blocked.example.org:'"$WEB_PORT"'/ | tr -d "\r" | head -1'
        [ "$SBX_RC" = 0 ] || diag "rc $SBX_RC: $SBX_ERR"
        like "$SBX_OUT" '^http://127\.0\.0\.1:3128 socks5h://127\.0\.0\.1:3128' "$be: the proxy variables name 127.0.0.1:3128 (the tool's own network namespace)"
        is "$(grep -c 'hello from the allowed host' "$SBX_OUT_FILE")" 3 "$be: curl by HTTP_PROXY, CONNECT and SOCKS5 reach the allowed names"
        like "$SBX_OUT" 'HTTP/1.1 403' "$be: a name outside network.egress: HTTP 403"
        is "$(json_get "$SBX_REPORT" '[d["egress"]["proxy"], d["egress"]["allowed"], d["egress"]["refused"], sorted(c["via"] for c in d["egress"]["connections"])]')" \
                '["127.0.0.1:3128", 3, 1, ["connect", "http", "socks5"]]' "$be: the report's egress: three allowed, each with how it came, one refused"
        is "$(json_get "$SBX_REPORT" '[(v["kind"], v["detail"]["host"], v["detail"]["reason"]) for v in d["violations"]]')" \
                '[["NetworkAccessViolation", "blocked.example.org", "no_matching_allow"]]' "$be: the refusal is a NetworkAccessViolation with its reason"
        if [ "$be" = docker ]; then
                : # no transparent path: docker_block checks what a direct connect finds
        elif host_has notif; then
                run_sbx "${B[@]}" -- python3 -c '
import socket
try:
    socket.create_connection(("198.51.100.7", 80), timeout=5)
    print("REACHED")
except OSError as e:
    print("refused", e.errno)'
                like "$SBX_OUT" '^refused 111' "$be: a direct connect() to an address: judged by the transparent path, ECONNREFUSED"
                is "$(json_get "$SBX_REPORT" '[(v["kind"], v["detail"]["host"], v["detail"]["protocol"], v["detail"]["reason"]) for v in d["violations"]]')" \
                        '[["NetworkAccessViolation", "198.51.100.7", "transparent", "no_matching_allow"]]' "$be: and recorded with the address"
        else
                skip "$HOST_WHY" 2
        fi
}
if backend_check bwrap; then
        tool_block bwrap "$POL"
else
        skip "$BACKEND_WHY" 7
fi

# ---- firejail: the same, in firejail's network namespace (--net=none) ----------------------------
# firejail refuses system accounts (run_as 65534): as root an ordinary user (scratch_mb, which it
# does not size, is best effort in the policy above, as in test-conformance.sh)
fj_uid=$(id -u sbxtest 2>/dev/null || echo "")
sed "s/^run_as: .*/run_as: ${fj_uid:-65534}/" "$POL" >"$SBX_TMP/policy-fj.yaml"
chmod 644 "$SBX_TMP/policy-fj.yaml"
if ! backend_check firejail; then
        skip "$BACKEND_WHY" 7
elif [ "$(id -u)" = 0 ] && [ -z "$fj_uid" ]; then
        skip "firejail refuses system accounts and this host has no ordinary user sbxtest to run as (scripts/setup.sh makes it)" 7
else
        tool_block firejail "$SBX_TMP/policy-fj.yaml"
fi

# ---- podman: the same, in the container's network namespace (--network none) -------------------
if backend_check podman; then
        tool_block podman "$POL"
else
        skip "$BACKEND_WHY" 7
fi

# ---- docker: the relay makes the socket in the container's network namespace ------------------
# No Docker engine here: podman's Docker-compatible API service stands in (as test-conformance.sh
# starts it: its own socket, runc where crun refuses the host's cgroups).
docker_svc_pid=""
if [ -z "${DOCKER_HOST:-}" ] && [ ! -S /var/run/docker.sock ] && command -v podman >/dev/null 2>&1; then
        printf '[engine]\nruntime = "runc"\n' >"$SBX_TMP/containers.conf"
        (cd "$SBX_TMP" && CONTAINERS_CONF=$SBX_TMP/containers.conf exec podman system service --time=0 "unix://$SBX_TMP/docker-api.sock") >"$SBX_TMP/docker-api.log" 2>&1 &
        docker_svc_pid=$!
        for _ in $(seq 100); do [ -S "$SBX_TMP/docker-api.sock" ] && break; sleep 0.1; done
        export DOCKER_HOST=unix://$SBX_TMP/docker-api.sock
fi
trap '[ -n "$docker_svc_pid" ] && kill "$docker_svc_pid" 2>/dev/null && wait "$docker_svc_pid" 2>/dev/null; cleanup' EXIT
docker_block() {
        local B=(--policy "$POL" --backend docker --profile "$SBX_TMP/egb.yaml")
        tool_block docker "$POL"
        like "$(json_get "$SBX_REPORT" 'd["config"]["fences"]["egress"]')" 'proxy at 127\.0\.0\.1:3128' "docker: the egress fence names the proxy"
        # no seccomp listener, so no transparent path: an address finds no route (NetworkMode none)
        # and the proxy's loopback has nothing else listening; neither is a judged connection
        run_sbx "${B[@]}" -- python3 -c '
import socket
for host, port in (("198.51.100.7", 80), ("127.0.0.1", '"$WEB_PORT"')):
    try:
        socket.create_connection((host, port), timeout=5)
        print("REACHED", host)
    except OSError as e:
        print("refused", host, e.errno)'
        like "$SBX_OUT" 'refused 198\.51\.100\.7 101' "docker: a direct connect to an address: ENETUNREACH (no route out of the container)"
        like "$SBX_OUT" 'refused 127\.0\.0\.1 111' "docker: the host's loopback is not the container's: ECONNREFUSED"
        is "$(json_get "$SBX_REPORT" '[d["egress"]["allowed"], d["egress"]["refused"], d["violations"]]')" '[0, 0, []]' \
                "docker: a direct connect is not recorded (refused, not observed: no listener)"
        # the gate takes its one byte and nothing of the caller's stdin
        printf 'line one\nline two\n' >"$SBX_TMP/in.txt"
        run_sbx "${B[@]}" -- /bin/sh -c 'cat; curl -sS --max-time 10 -o /dev/null -w "%{http_code}\n" '"$U" <"$SBX_TMP/in.txt"
        is "$SBX_OUT" "$(printf 'line one\nline two\n200')" "docker: the caller's stdin arrives whole behind the gate, and the proxy is there"
        run_sbx "${B[@]}" -- /nonexistent/cmd </dev/null
        is "$SBX_RC" 127 "docker: behind the gate a missing command is still 127 (timeout's, through sh's exec)"
        # a host service: its port made beside the proxy's, in the container's namespace
        sed 's/^network:$/network:\n  services_allowed: [web]/' "$POL" >"$SBX_TMP/pol-svc.yaml"
        printf 'id: svc\nversion: "1.0.0"\nnetwork:\n  services:\n    - { name: web, target: "127.0.0.1:%s", port: 7000, env: WEB_URL }\n' "$WEB_PORT" >"$SBX_TMP/svc.yaml"
        chmod 644 "$SBX_TMP/pol-svc.yaml" "$SBX_TMP/svc.yaml"
        run_sbx --policy "$SBX_TMP/pol-svc.yaml" --backend docker --profile "$SBX_TMP/svc.yaml" -- /bin/sh -c 'curl -sS --max-time 10 "$WEB_URL/"'
        is "$SBX_OUT $(json_get "$SBX_REPORT" '[(s["name"], s["count"]) for s in d["services"]]')" 'hello from the allowed host [["web", 1]]' \
                "docker: network.services: the service at its port in the container, traced in the report" || diag "$SBX_ERR"
}
if [ "$(id -u)" != 0 ]; then
        if backend_check docker; then
                run_sbx --policy "$POL" --backend docker --profile "$SBX_TMP/egb.yaml" -- /bin/true
                ok "$([ "$SBX_RC" = 125 ] && [[ $SBX_ERR == *net.egress_proxy*CAP_SYS_ADMIN* ]] && echo 0 || echo 1)" \
                        "docker, unprivileged: a profile with egress rules is refused (125), naming net.egress_proxy and why" || diag "$SBX_RC: $SBX_ERR"
                skip "network.egress on docker needs root (setns into the container's network namespace)" 12
        else
                skip "$BACKEND_WHY" 13
        fi
elif backend_check docker; then
        docker_block
else
        skip "$BACKEND_WHY${docker_svc_pid:+ (the podman service started here: see $SBX_TMP/docker-api.log)}" 12
fi
reason=$("$SANDBOXER" doctor --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["backends"]["docker"]["capabilities"]["net.egress_proxy"]["how"])' 2>/dev/null)
like "$reason" '^as root only: .*setns' "docker: net.egress_proxy says it needs root, and why" || diag "$reason"

done_testing
