#!/usr/bin/env bash
# test-load-leak.sh — many sandboxes at once, and nothing of theirs left afterwards. On every
# backend available here, WORKERS concurrent loops of RUNS `sandboxer run`s each, in turn: one
# that ends normally (leaving a child behind to be killed), one stopped by its timeout, one ended
# by its memory limit (where a cgroup enforces it), and one whose sandboxer is killed with SIGKILL
# while its command runs. Beside them a `sandboxer serve` holds sandboxes and runs execs into them
# (ending normally and by timeout) the whole time, so runs, supervisors and their clean-ups share
# the cgroup bases and race each other's gc. Every run must end as its kind says; after each
# backend (and the run after the kills, which removes what killed runs leave) and after the
# server's sandboxes are destroyed, no cgroup, mount, per-run directory or process of theirs may
# remain (lib.sh's leftovers, told by the runs' own ids and pids: another sandboxer on the host
# may come and go meanwhile).
#   SBX_LOAD_WORKERS=N SBX_LOAD_RUNS=N     per backend (default 4 x 20; CI=true: 3 x 8)
#   SBX_LOAD_BACKENDS="native landlock"    which backends (default: all that can run here)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"

if [ "${CI:-}" = true ]; then W=${SBX_LOAD_WORKERS:-3} R=${SBX_LOAD_RUNS:-8}; else W=${SBX_LOAD_WORKERS:-4} R=${SBX_LOAD_RUNS:-20}; fi
[ -x "$SBX_BUILD/tests/escape/memory_bomb" ] || skip_all "the escape corpus is not built ($SBX_BUILD/tests/escape)"
command -v python3 >/dev/null || skip_all "python3 is needed to read reports"
ROOT=0; [ "$(id -u)" = 0 ] && ROOT=1
TAG=$$$RANDOM
T0=$SECONDS

# not under /tmp: firejail shows host paths at their place, and /tmp is its own private tmpfs
# (a checkout under /tmp: the home directory, where there is one outside it)
WS=""
for d in "$SBX_BUILD" "$HOME"; do
        case $(readlink -f "$d" 2>/dev/null) in /tmp | /tmp/* | /var/tmp | /var/tmp/* | "") continue ;; *) ;; esac
        WS=$(mktemp -d "$d/.sbx-load-ws.XXXXXX" 2>/dev/null) && break
done
[ -n "$WS" ] || WS=$(mktemp -d "$SBX_TMP/ws.XXXXXX") || exit 1
chmod 755 "$WS"
cp "$SBX_BUILD/tests/escape/memory_bomb" "$WS/"; chmod -R a+rX "$WS"
# a profile every backend takes (isolation level policy), and firejail's run_as as in conformance
P=$SBX_TMP/load.yaml
printf 'id: load\nversion: "1.0.0"\nextends: profile.default\nisolation:\n  level: policy\nnetwork:\n  loopback: false\n' >"$P"
POL_FJ=$SBX_TMP/policy-firejail.yaml
fj_uid=$(id -u sbxtest 2>/dev/null || echo "")
sed "s/^run_as: .*/run_as: ${fj_uid:-65534}/" "$POL" >"$POL_FJ"
chmod 644 "$P" "$POL_FJ"

SERVE_PID="" DOCKER_SVC="" EXEC_LOOP=""
load_cleanup() {
        [ "$BASHPID" = "$$" ] || exit
        touch "$SBX_TMP/stop"
        [ -z "$EXEC_LOOP" ] || { kill "$EXEC_LOOP" 2>/dev/null; wait "$EXEC_LOOP" 2>/dev/null; }
        [ -z "$SERVE_PID" ] || { kill -TERM "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID" 2>/dev/null; }
        [ -z "$DOCKER_SVC" ] || { kill "$DOCKER_SVC" 2>/dev/null; wait "$DOCKER_SVC" 2>/dev/null; }
        pkill -KILL -f "^sleep 3[0-9]\.$TAG" 2>/dev/null
        rm -rf "$WS"
        sbx_cleanup
}
trap load_cleanup EXIT

# ---- the backends --------------------------------------------------------------------------------
# docker: podman's Docker-compatible service stands in for an engine (as in test-conformance.sh)
if [ $ROOT = 1 ] && [ -z "${DOCKER_HOST:-}" ] && [ ! -S /var/run/docker.sock ] && command -v podman >/dev/null &&
        [[ " ${SBX_LOAD_BACKENDS:-docker} " == *" docker "* ]]; then
        printf '[engine]\nruntime = "runc"\n' >"$SBX_TMP/containers.conf"
        (cd "$SBX_TMP" && CONTAINERS_CONF=$SBX_TMP/containers.conf exec podman system service --time=0 \
                "unix://$SBX_TMP/docker.sock") >"$SBX_TMP/docker-api.log" 2>&1 &
        DOCKER_SVC=$!
        for _ in $(seq 100); do [ -S "$SBX_TMP/docker.sock" ] && break; sleep 0.1; done
        [ -S "$SBX_TMP/docker.sock" ] && export DOCKER_HOST=unix://$SBX_TMP/docker.sock
fi
BACKENDS=()
for be in ${SBX_LOAD_BACKENDS:-native landlock bwrap firejail podman docker}; do
        backend_check "$be"
        case $? in
        0) ;;
        2) ok 1 "$be: $BACKEND_WHY"; continue ;;
        *) diag "not loaded: $BACKEND_WHY"; continue ;;
        esac
        pol=$POL; [ "$be" = firejail ] && [ $ROOT = 1 ] && pol=$POL_FJ
        if [ "$be" = firejail ] && [ $ROOT = 1 ] && [ -z "$fj_uid" ]; then
                diag "not loaded: firejail refuses system accounts, and there is no ordinary user sbxtest to run its sandboxes as"
                continue
        fi
        run_sbx --policy "$pol" --backend "$be" --profile "$P" -- true
        if [ "$SBX_RC" = 0 ]; then
                BACKENDS+=("$be")
        elif setup_refused_by_host; then
                diag "not loaded: $be: $HOST_WHY"
        else
                ok 1 "$be: doctor calls it ready, and it cannot run /bin/true here" || diag "exit $SBX_RC: $(head -c 400 <<<"$SBX_ERR")"
        fi
done
[ ${#BACKENDS[@]} -gt 0 ] || skip_all "no backend can run here"

# ---- the server beside the runs: its own state and runtime dirs (a server destroys the unknown
# sandboxes it finds in its runtime dir), the host's cgroup bases ---------------------------------
SRV=(env SANDBOXER_STATE_DIR="$SBX_TMP/state" SANDBOXER_RUNTIME_DIR="$SBX_TMP/rt")
SOCK=$SBX_TMP/rt/sandboxer.sock
leftovers_snapshot
cp "$SBX_TMP/leftovers.before" "$SBX_TMP/leftovers.start"
"${SRV[@]}" "$SANDBOXER" serve --policy "$POL" >"$SBX_TMP/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
IDS=()
for i in 1 2 3; do
        id=$("${SRV[@]}" "$SANDBOXER" create --ttl 900 --harness load 2>>"$SBX_TMP/serve.log") && IDS+=("$id")
done
is "${#IDS[@]}" 3 "the server holds 3 sandboxes beside the runs" || diag "$(tail -5 "$SBX_TMP/serve.log")"
# their supervisors are ours: their pids name their groups
SUPS=" "
for p in /proc/[0-9]*; do
        [[ $(cat "$p/comm" 2>/dev/null) == sandboxer-sup* ]] && _sbx_ours "${p#/proc/}" && SUPS+="${p#/proc/} "
done
# shellcheck disable=SC2086 # a list of pids
sbx_started $SUPS
# While the load runs, the server's sandboxes and the exec loop are busy by design: their
# processes (below a supervisor, or the exec loop's clients) are not the runs' leftovers.
busy() { # PID — is it below the server's supervisors or the exec loop?
        local p=$1 k v
        while [ "$p" -gt 1 ]; do
                [[ $SUPS == *" $p "* || $p == "$EXEC_LOOP" ]] && return 0
                k=""
                { while read -r k v; do [ "$k" = PPid: ] && break; done <"/proc/$p/status"; } 2>/dev/null
                [ "$k" = PPid: ] || return 1
                p=$v
        done
        return 1
}
runs_state() { # _sbx_state without the server's busy processes
        local kind pid rest
        _sbx_state | while read -r kind pid rest; do
                if [ "$kind" = process ]; then
                        busy "$pid" && continue
                        # gone meanwhile (an exec's short-lived child, its parent gone before we
                        # could walk up): not left behind
                        [ -e "/proc/$pid" ] || continue
                fi
                echo "$kind $pid${rest:+ $rest}"
        done
}
# left_since FILE — what is new since the snapshot FILE, seen twice 0.2 s apart (a process of the
# server's busy sandboxes can be caught between its parent's exit and its own)
left_since() {
        local a b
        a=$(runs_state | LC_ALL=C sort | LC_ALL=C comm -13 "$1" -)
        [ -n "$a" ] || return 0
        sleep 0.2
        b=$(runs_state | LC_ALL=C sort | LC_ALL=C comm -13 "$1" -)
        LC_ALL=C comm -12 <(echo "$a") <(echo "$b")
}
# execs into them the whole time: ordinary ones, and one stopped by its timeout now and then
(
        n=0
        while [ ! -e "$SBX_TMP/stop" ]; do
                for id in "${IDS[@]}"; do
                        if [ $((n % 5)) = 4 ]; then
                                "${SRV[@]}" "$SANDBOXER" exec "$id" --timeout 0.3 -- sh -c 'sleep 5 & sleep 5' >/dev/null 2>&1
                                rc=$?; [ $rc = 124 ] || echo "exec $n in $id: timeout gave $rc" >>"$SBX_TMP/exec.bad"
                        else
                                out=$("${SRV[@]}" "$SANDBOXER" exec "$id" -- sh -c 'echo in-$$; sleep 0.02 &' 2>&1)
                                [[ $out == in-* ]] || echo "exec $n in $id: '$out'" >>"$SBX_TMP/exec.bad"
                        fi
                        n=$((n + 1))
                done
                echo $n >"$SBX_TMP/exec.count"
        done
) </dev/null &
EXEC_LOOP=$!

# ---- one run of a kind (in a worker) -------------------------------------------------------------
# one_run BACKEND KIND BASE — a line "KIND ok|bad DETAIL" into BASE.result
one_run() {
        local be=$1 kind=$2 base=$3 rc st pid i pol=$POL
        [ "$be" = firejail ] && [ $ROOT = 1 ] && pol=$POL_FJ
        local B=(--policy "$pol" --backend "$be" --profile "$P" --report "$base.json")
        case $kind in
        ok | timeout | memory)
                local opts=() cmd=(/bin/sh -c 'echo hi; sleep 30 & exit 0') want="0/exited"
                case $kind in
                timeout) opts=(--timeout 0.5) cmd=(/bin/sh -c 'sleep 30 & sleep 30') want="124/timeout" ;;
                memory) opts=(--memory 32 --workspace "$WS") cmd=(./memory_bomb 256) want="/memory_limit" ;;
                *) ;;
                esac
                # shellcheck disable=SC2016 # expanded by that sh
                sh -c 'echo $$ >>"$0"; exec "$@"' "$SBX_TMP/owner-pids" \
                        "$SANDBOXER" run "${B[@]}" "${opts[@]}" -- "${cmd[@]}" </dev/null >"$base.out" 2>"$base.err"
                rc=$?
                st=$(json_get "$base.json" 'd["status"]' 2>/dev/null)
                if [[ "$rc/$st" == *"$want" ]]; then
                        echo "$kind ok" >"$base.result"
                else
                        echo "$kind bad exit $rc, status ${st:-none} (wanted $want): $(head -c 200 "$base.err" | tr '\n' ' ')" >"$base.result"
                fi
                ;;
        kill)
                "$SANDBOXER" run "${B[@]}" -- /bin/sh -c "echo started; exec sleep 3${RANDOM:0:1}.$TAG" </dev/null >"$base.out" 2>"$base.err" &
                pid=$!
                sbx_started $pid
                for ((i = 0; i < 400; i++)); do grep -q started "$base.out" 2>/dev/null && break; sleep 0.025; done
                kill -KILL $pid 2>/dev/null
                wait $pid 2>/dev/null
                rc=$?
                if [ $i -lt 400 ] && [ $rc = 137 ]; then
                        echo "kill ok" >"$base.result"
                else
                        echo "kill bad: started ${i}x25ms, exit $rc: $(head -c 200 "$base.err" | tr '\n' ' ')" >"$base.result"
                fi
                ;;
        *) echo "$kind bad: unknown kind" >"$base.result" ;;
        esac
}

# ---- the load, backend after backend -------------------------------------------------------------
total=0 kills=0 bad_total=0
for be in "${BACKENDS[@]}"; do
        t0=$SECONDS
        KINDS=(ok timeout kill)
        # memory: where a cgroup enforces memory_mb here (the report says which mechanism)
        run_sbx --policy "$([ "$be" = firejail ] && [ $ROOT = 1 ] && echo "$POL_FJ" || echo "$POL")" --backend "$be" \
                --profile "$P" --workspace "$WS" --memory 32 -- ./memory_bomb 256
        if [ "$(json_get "$SBX_REPORT" 'd["status"]' 2>/dev/null)" = memory_limit ]; then
                KINDS+=(memory)
        elif [ "$SBX_RC" = 125 ] && [[ $SBX_ERR == *"is under /tmp or /var/tmp, which firejail replaces"* ||
                $SBX_ERR == *"cannot be read by uid"*"no mount namespace to bring it in"* ]]; then
                # where this checkout lives: under /tmp, or below a directory run_as cannot pass
                diag "$be: no memory limit kind: no workspace here that it can take: ${SBX_ERR#sandboxer: }"
        else
                diag "$be: no memory limit kind here (memory_mb by $(json_get "$SBX_REPORT" 'd["config"]["limits"]["memory_mb"]["mechanism"]' 2>/dev/null))"
        fi
        runs_state | LC_ALL=C sort >"$SBX_TMP/leftovers.$be"
        workers=()
        for ((w = 0; w < W; w++)); do
                (
                        for ((i = 0; i < R; i++)); do
                                one_run "$be" "${KINDS[(i + w) % ${#KINDS[@]}]}" "$SBX_TMP/l.$be.$w.$i"
                        done
                ) &
                workers+=($!)
        done
        wait "${workers[@]}"
        n=$(cat "$SBX_TMP"/l."$be".*.result 2>/dev/null | wc -l)
        bad=$(grep -h ' bad' "$SBX_TMP"/l."$be".*.result 2>/dev/null)
        k=$(cat "$SBX_TMP"/l."$be".*.result 2>/dev/null | grep -c '^kill ')
        counts=$(cat "$SBX_TMP"/l."$be".*.result | awk '{ c[$1]++ } END { for (k in c) printf "%s %d, ", k, c[k] }')
        is "$n/$bad" "$((W * R))/" "$be: $((W * R)) runs, $W at a time (${counts%, }), each ended as its kind says" ||
                diag "$(head -c 1500 <<<"$bad")"
        total=$((total + n)) kills=$((kills + k)) bad_total=$((bad_total + $(grep -c . <<<"$bad")))
        # the killed runs' commands died with their sandboxer
        gone=1
        for _ in $(seq 100); do pgrep -f "^sleep 3[0-9]\.$TAG" >/dev/null || { gone=0; break; }; sleep 0.05; done
        ok $gone "$be: the commands of the $k killed runs died with their sandboxer" || diag "$(pgrep -af "^sleep 3[0-9]\.$TAG")"
        # what killed runs leave (their groups, scratch, a wrapper's files) goes with the next run;
        # an engine (podman, docker) tears its containers down on its own time, then gc
        run_sbx --policy "$([ "$be" = firejail ] && [ $ROOT = 1 ] && echo "$POL_FJ" || echo "$POL")" --backend "$be" --profile "$P" -- true
        for _ in $(seq 100); do
                [ -z "$(left_since "$SBX_TMP/leftovers.$be")" ] && break
                case $be in podman | docker) "$SANDBOXER" gc >/dev/null 2>&1 ;; *) ;; esac
                sleep 0.1
        done
        left=$(left_since "$SBX_TMP/leftovers.$be")
        is "$left" "" "$be: after the load and the next run, nothing of theirs is left ($((SECONDS - t0)) s)" ||
                while read -r kind pid _; do
                        [ "$kind" = process ] || continue
                        diag "$pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null); ppid $(awk '/^PPid/ {print $2}' "/proc/$pid/status" 2>/dev/null); $(grep -E '^[0-9]+:(memory|pids|name=systemd):' "/proc/$pid/cgroup" 2>/dev/null | tr '\n' ' ')"
                done <<<"$left"
        left=$(grep -c . <<<"$left")
        diag "$be: $n runs ($k killed with SIGKILL), $W at a time, in $((SECONDS - t0)) s; leftovers $left"
done

# ---- the server's sandboxes: exec results, then destroyed, then the server stopped ---------------
touch "$SBX_TMP/stop"
wait "$EXEC_LOOP" 2>/dev/null
EXEC_LOOP=""
execs=$(cat "$SBX_TMP/exec.count" 2>/dev/null || echo 0)
ok $([ "$execs" -gt 0 ] && [ ! -s "$SBX_TMP/exec.bad" ] && echo 0 || echo 1) \
        "the server's $execs execs beside the load each ended as they should" || diag "$(head -20 "$SBX_TMP/exec.bad")"
for id in "${IDS[@]}"; do "${SRV[@]}" "$SANDBOXER" destroy "$id" >/dev/null 2>&1; done
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
is $? 0 "the server stops with exit 0"
SERVE_PID=""
is "$(grep -c 'lifecycle_refused' "$SBX_TMP/serve.log")" 0 "under load, no lifecycle transition outside the table was attempted" ||
        diag "$(grep 'lifecycle_refused' "$SBX_TMP/serve.log" | head -3)"
for _ in $(seq 40); do
        [ -z "$(_sbx_state | LC_ALL=C sort | LC_ALL=C comm -13 "$SBX_TMP/leftovers.start" -)" ] && break
        sleep 0.05
done
cp "$SBX_TMP/leftovers.start" "$SBX_TMP/leftovers.before"
assert_no_leftovers "after everything (the server's sandboxes destroyed): nothing of theirs is left"
left=$(_sbx_state | LC_ALL=C sort | LC_ALL=C comm -13 "$SBX_TMP/leftovers.start" - | grep -c .)
diag "load: $total runs on ${#BACKENDS[@]} backends (${BACKENDS[*]}), $W at a time, $kills killed with SIGKILL, $bad_total ended otherwise than their kind; $execs execs into 3 server sandboxes beside them; leftovers $left; $((SECONDS - T0)) s"
done_testing
