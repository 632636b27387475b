#!/usr/bin/env bash
# The docker backend against a fake Docker-API engine (tests/tools/fake-docker-engine.py): what
# it asks of the engine and in what order, how it takes the engine's answers (podman's and
# Docker's flavours, a command that runs on after closing its output, a missing image, an answer
# that is not JSON) and what it refuses (a rootless engine on cgroup v1 with limits to enforce).
# The conformance suite runs the same backend against a real engine (podman's service).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"

command -v python3 >/dev/null || skip_all "needs python3 for the fake engine"
FAKE=$SBX_SRC/tests/tools/fake-docker-engine.py
export SANDBOXER_CACHE_DIR=$SBX_TMP/cache # the sweep's stamp starts absent
# run_as the caller when unprivileged (as sandboxer requires there), and the limits best effort: as an ordinary user the fake engine is rootless, which on cgroup v1 is a
# refusal of its own (tested below)
[ "$(id -u)" = 0 ] || sed -i "s/^run_as: .*/run_as: $(id -u)/" "$POL"
sed -i "s/^enforce: .*/enforce: { best_effort: [memory_mb, cpus, scratch_mb, pids] }/" "$POL"

engine_pid=""
# engine [OPTION]... — (re)start the fake engine on a fresh socket, its log at $LOG
n_engine=0
engine() {
        stop_engine
        n_engine=$((n_engine + 1))
        SOCK=$SBX_TMP/engine$n_engine.sock LOG=$SBX_TMP/engine$n_engine.log
        : >"$LOG"
        python3 "$FAKE" --log "$LOG" "$@" "$SOCK" 2>"$SBX_TMP/engine$n_engine.err" &
        engine_pid=$!
        for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
        export DOCKER_HOST=unix://$SOCK
}
stop_engine() {
        [ -n "$engine_pid" ] && kill "$engine_pid" 2>/dev/null && wait "$engine_pid" 2>/dev/null
        engine_pid=""
}
trap 'stop_engine; sbx_cleanup' EXIT
# the requests of the log, in order, ids and queries taken out; without the sweep's list, which
# the guard makes beside the run (its place in the order is not fixed)
requests() { grep -v '^BODY \|^GET /v1.41/containers/json' "$LOG" | sed -E 's/[0-9a-f]{64}/ID/; s/\?.*//' | paste -sd' '; }
# the first create's body, as a file
body() { sed -n 's/^BODY //p' "$LOG" | head -1 >"$SBX_TMP/body.json"; echo "$SBX_TMP/body.json"; }

# ---- podman's flavour: the requests of a run, and nothing more --------------------------------
engine
run_sbx --policy "$POL" --backend docker -- /bin/true
is "$SBX_RC" 0 "a run against the engine exits 0" || diag "$SBX_ERR"
is "$(requests)" "GET /_ping POST /v1.41/containers/create POST /v1.41/containers/ID/attach POST /v1.41/containers/ID/start GET /v1.41/containers/ID/json DELETE /v1.41/containers/ID" \
        "the requests: one _ping (the probe's, not repeated), create, attach, start, inspect, delete (no /info, /version or wait)"
like "$(json_get "$(body)" 'd["HostConfig"]["SecurityOpt"][1]')" '^seccomp=/.*\.json$' \
        "podman (Libpod-Api-Version): the seccomp profile is named by path"
is "$(json_get "$SBX_REPORT" 'd["exit"]["code"]')" 0 "the report has the exit code"
# the command's arguments echo back in the inspect (Args: "ExitCode", "Running", ...), and a
# nested ExitCode (Health.Log) too: the exit code is State's
engine --exit 3 --output "hello from the engine"
run_sbx --policy "$POL" --backend docker -- /bin/true
is "$SBX_RC" 3 "the exit code is State.ExitCode from the inspect"
is "$SBX_OUT" "hello from the engine" "the attached stream is relayed to stdout"

# ---- Docker's flavour: the profile's content ----------------------------------------------------
engine --docker
run_sbx --policy "$POL" --backend docker -- /bin/true
is "$SBX_RC" 0 "Docker's flavour: exits 0" || diag "$SBX_ERR"
opt=$(json_get "$(body)" 'd["HostConfig"]["SecurityOpt"][1]')
like "${opt:0:9}" '^seccomp=\{' "Docker (no Libpod-Api-Version): the seccomp profile goes as its content"
printf '%s' "${opt#seccomp=}" | python3 -c 'import json, sys; p = json.load(sys.stdin); sys.exit(0 if p["defaultAction"] and p["syscalls"] else 1)'
ok $? "the content is the JSON profile (defaultAction, syscalls)"

# ---- a command that closed its output and runs on: the inspect says running, so: wait ----------
engine --runs-on --exit 4
run_sbx --policy "$POL" --backend docker -- /bin/true
is "$SBX_RC" 4 "still running after its output ended: the exit code comes after a wait"
like "$(requests)" "/start GET [^ ]+/json POST [^ ]+/wait GET [^ ]+/json DELETE" "inspect, wait, inspect again"

# ---- no image yet: the create's 404 imports it and creates again ---------------------------------
engine --no-image
run_sbx --policy "$POL" --backend docker -- /bin/true
is "$SBX_RC" 0 "no image: imported, then run" || diag "$SBX_ERR"
like "$(requests)" "POST /v1.41/containers/create GET /v1.41/images/[^ ]+/json POST /v1.41/images/create (GET /v1.41/images/[^ ]+/json )?POST /v1.41/containers/create POST" \
        "create (404), image check, import, create again"

# ---- an engine that answers nonsense ------------------------------------------------------------
engine --bad-create
run_sbx --policy "$POL" --backend docker -- /bin/true
is "$SBX_RC" 125 "a create answer that is not JSON: 125"
like "$SBX_ERR" "docker: create the container" "the error names the step"

# ---- the sweep: a dead owner's container is deleted, at most once every 10 s ---------------------
ns=$(printf '%x' "$(stat -Lc %i /proc/self/ns/pid)")
dead=4194000
while kill -0 $dead 2>/dev/null; do dead=$((dead + 1)); done
rm -rf "$SANDBOXER_CACHE_DIR"
engine --delay 400 --list "[{\"Id\":\"deadbeef\",\"Labels\":{\"io.sandboxer.owner\":\"$dead.$ns\"}},{\"Id\":\"alive\",\"Labels\":{\"io.sandboxer.owner\":\"$$.$ns\"}},{\"Id\":\"other-ns\",\"Labels\":{\"io.sandboxer.owner\":\"$dead.1\"}}]"
run_sbx --policy "$POL" --backend docker -- /bin/true
is "$SBX_RC" 0 "a run with leftovers listed exits 0"
like "$(requests)" "DELETE /v1.41/containers/deadbeef" "the container of a dead owner is deleted"
if grep -q "DELETE /v1.41/containers/alive\|DELETE /v1.41/containers/other-ns" "$LOG"; then ok 1 "a live owner's or another pid namespace's container is left alone"; else ok 0 "a live owner's or another pid namespace's container is left alone"; fi
: >"$LOG"
run_sbx --policy "$POL" --backend docker -- /bin/true
if grep -q "GET /v1.41/containers/json" "$LOG"; then ok 1 "no second sweep within 10 s"; else ok 0 "no second sweep within 10 s"; fi

# ---- network.egress: the request's shape, and the sockets in the container's namespace ----------
sed 's/^network: .*/network: { egress_allowed: ["pkgs.example.test"], allow_host: false }/' "$POL" >"$SBX_TMP/pol-eg.yaml"
printf 'id: eg\nversion: "1.0.0"\nnetwork: { egress: ["pkgs.example.test"] }\n' >"$SBX_TMP/eg.yaml"
chmod 644 "$SBX_TMP/pol-eg.yaml" "$SBX_TMP/eg.yaml"
EG=(--policy "$SBX_TMP/pol-eg.yaml" --backend docker --profile "$SBX_TMP/eg.yaml")
if [ "$(id -u)" != 0 ]; then
        engine
        run_sbx "${EG[@]}" -- /bin/true
        is "$SBX_RC" 125 "network.egress unprivileged: refused (125)"
        like "$SBX_ERR" "net.egress_proxy: .*setns.*CAP_SYS_ADMIN" "the error names the capability and why (setns needs CAP_SYS_ADMIN)"
        skip "network.egress on docker: root only (setns into the container's network namespace)" 7
elif ! unshare --net --pid --fork true 2>/dev/null; then
        skip "unshare --net --pid cannot run here: the fake engine's containers need it" 9
else
        engine --netns
        run_sbx "${EG[@]}" --env HTTP_PROXY=http://elsewhere:1 -- /bin/true
        is "$SBX_RC" 0 "network.egress: a run exits 0" || diag "$SBX_ERR $(cat "$SBX_TMP/engine$n_engine.err")"
        # shellcheck disable=SC2016 # the gate's script, literally
        is "$(json_get "$(body)" '" | ".join(d["Entrypoint"][:5])')" \
                '/bin/sh | -c | [ "$(dd bs=1 count=1 status=none)" = G ] || exit 125; exec "$@" | sh | /usr/bin/timeout' \
                "the Entrypoint gates timeout and the command behind one byte on stdin (sh, dd bs=1)"
        is "$(json_get "$(body)" '[d["HostConfig"]["NetworkMode"], d["AttachStdin"], d["OpenStdin"], d["StdinOnce"]]')" '["none", true, true, true]' \
                "NetworkMode none, and stdin always attached (the gate's way in)"
        is "$(json_get "$(body)" 'sorted(v for v in d["Env"] if "proxy" in v.lower())')" \
                '["ALL_PROXY=socks5h://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128", "NO_PROXY=localhost,127.0.0.1", "all_proxy=socks5h://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "no_proxy=localhost,127.0.0.1"]' \
                "Env: the proxy variables at 127.0.0.1:3128, the caller's HTTP_PROXY dropped"
        is "$(grep '^GATE\|^LISTEN' "$LOG" | paste -sd' ')" "GATE G LISTEN 127.0.0.1:3128" \
                "the gate byte came once the proxy's socket listened at 127.0.0.1:3128 in the container's network namespace"
        like "$(requests)" "/start GET [^ ]+/json GET [^ ]+/json GATE G LISTEN [^ ]+ GET [^ ]+/json DELETE" \
                "State.Pid read twice around the pidfd (the init did not change), the gate opened, then the exit code"
        is "$(json_get "$SBX_REPORT" 'd["egress"]["proxy"]')" "127.0.0.1:3128" "the report names the proxy"
        engine
        run_sbx --policy "$POL" --backend docker -- /bin/true
        is "$(json_get "$(body)" 'd["Entrypoint"][0]')" "/usr/bin/timeout" "without network.egress: no gate (timeout is the Entrypoint)"
        # an engine whose inspect has no State.Pid: no socket, so no gate byte; the container goes
        engine
        run_sbx "${EG[@]}" -- /bin/true
        ok "$([ "$SBX_RC" = 125 ] && [[ $SBX_ERR == *"network.egress: inspect: no State.Pid"* ]] && [[ $(requests) == *"/json DELETE"* ]] && echo 0 || echo 1)" \
                "no State.Pid: 125 naming the step, the container deleted, the gate never opened" || diag "$SBX_RC $SBX_ERR $(requests)"
fi

# ---- rootless on cgroup v1: limits it would ignore are refused ----------------------------------
if [ ! -d /sys/fs/cgroup/memory ]; then
        skip "cgroup v1 only: a rootless engine on v2 enforces limits" 2
elif [ "$(id -u)" = 0 ] && ! command -v setpriv >/dev/null; then
        skip "needs setpriv to run the fake engine as an ordinary user" 2
else
        stop_engine
        d=$SBX_TMP/rootless
        mkdir -p "$d" && chmod 777 "$d" && cp "$FAKE" "$d/engine.py" && chmod 755 "$d/engine.py"
        SOCK=$d/engine.sock
        if [ "$(id -u)" = 0 ]; then # the system's python: root's own may sit in a 0700 home
                setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$d/engine.py" "$SOCK" 2>"$d/engine.err" &
        else
                python3 "$d/engine.py" "$SOCK" 2>"$d/engine.err" &
        fi
        engine_pid=$!
        for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
        export DOCKER_HOST=unix://$SOCK
        sed "s/^enforce: .*/enforce: { best_effort: [cpus, scratch_mb, pids] }/" "$POL" >"$SBX_TMP/strict-mem.yaml"
        run_sbx --policy "$SBX_TMP/strict-mem.yaml" --backend docker -- /bin/true
        is "$SBX_RC" 125 "a rootless engine (it listens as an ordinary uid) on cgroup v1: memory_mb refused"
        like "$SBX_ERR" "rootless \(it listens as uid [1-9][0-9]*\) on cgroup v1.*enforce.best_effort" \
                "the error says why (the listener's uid) and the ways out"
fi
stop_engine
assert_no_leftovers 2>/dev/null || true
done_testing
