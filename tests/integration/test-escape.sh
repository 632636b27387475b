#!/usr/bin/env bash
# The escape suite (tests/escape/): every attack of manifest.tsv, first shown to succeed WITHOUT
# the sandbox (same user, same fixtures: it must print ESCAPED, or the manifest says why it
# cannot here), then run inside `sandboxer run --backend $SBX_BACKEND` (default native). Three
# outcomes, named in each test: blocked as expected (pass), escaped (fail), error (fail: did not
# run, crashed, unexpected errno, no verdict line). Attacks the backend cannot cover (the
# manifest's `needs`) are skipped with the reason. Nothing may be left on the host after each.
#   SBX_BACKEND=landlock bash tests/integration/test-escape.sh
#   SBX_ESCAPE_ONLY='read_secret fork_bomb' ...    only these attacks
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"

ESC=$SBX_BUILD/tests/escape
MANIFEST=$SBX_SRC/tests/escape/manifest.tsv
BACKEND=${SBX_BACKEND:-native}
if [ "$BACKEND" = microvm ]; then # QEMU's emulation where there is no usable KVM; doctor judges by it
        sed -i 's/^strict: .*/strict: { required_when: [], allow_emulation: true }/' "$POL"
        export SBX_DOCTOR_POLICY=$POL
fi
[ "$(uname -m)" = x86_64 ] || skip_all "the corpus is x86_64 (int 0x80, x32, syscall numbers)"
[ -x "$ESC/read_file" ] || skip_all "escape corpus not built ($ESC)"
[ -r "$MANIFEST" ] || skip_all "no manifest ($MANIFEST)"
PY=$(command -v python3) || skip_all "python3 needed for the host listeners"
ROOT=0; [ "$(id -u)" = 0 ] && ROOT=1
TAG=sbxesc$$r$RANDOM
T0=$SECONDS

# ---- fixtures (outside the sandbox) --------------------------------------------------------------
FX=$SBX_TMP/fx WS=$SBX_TMP/ws OSCR=$SBX_TMP/outside-scratch
mkdir -p "$FX/hostdir" "$WS" "$OSCR"
chmod 755 "$FX" "$WS"; chmod 777 "$FX/hostdir" # world-writable: only the sandbox's fences refuse it
SECRET=$FX/secret.txt
echo "SBXSECRET-file-$TAG" >"$SECRET"; chmod 644 "$SECRET"
HOMESECRETNAME=.sbx-escape-secret-$TAG HOMESECRET=""
if [ -n "${HOME:-}" ] && [ -d "$HOME" ] && (umask 077; echo "SBXSECRET-home-$TAG" >"$HOME/$HOMESECRETNAME") 2>/dev/null; then
        HOMESECRET=$HOME/$HOMESECRETNAME
fi
export SBX_SECRET_ENV="SBXSECRET-env-$TAG" # reaches sandboxer; must not reach the command
for a in "$ESC"/*; do [ -f "$a" ] && [ -x "$a" ] && cp "$a" "$WS/"; done
ln -s "$SECRET" "$WS/evil_secret"
ln -s "${HOME:-/nonexistent}" "$WS/evil"
ln -s "$FX/hostdir" "$WS/evil_dir"
if [ $ROOT = 1 ]; then # a setuid-root copy of suid_euid
        cp "$ESC/suid_euid" "$WS/suid-euid" && chown root:root "$WS/suid-euid" && chmod 4755 "$WS/suid-euid"
fi
chmod -R a+rX "$WS"
HOSTNAME_BEFORE=$(uname -n)

BG=() # background processes of ours, killed at exit
escape_cleanup() {
        local p
        [ "$BASHPID" = "$$" ] || exit # a child between fork and exec (bash runs EXIT traps on SIGTERM)
        for p in "${BG[@]}"; do kill -9 "$p" 2>/dev/null; done
        pkill -9 -f "daemonize $TAG" 2>/dev/null
        [ -z "$HOMESECRET" ] || rm -f "$HOMESECRET"
        sbx_cleanup
}
trap escape_cleanup EXIT

# Host listeners: TCP and UDP on 127.0.0.1:PORT, abstract @TAG, pathname sockets in FX (outside
# the view) and in the workspace (default mode, the caller's). Each answers HOSTDATA.
PORT=$((20000 + RANDOM % 20000))
"$PY" - "$PORT" "$TAG" "$FX/host.sock" "$WS/host.sock" "$FX/hostdir/world.sock" "$FX/ready" <<'PYEOF' >/dev/null 2>&1 &
import os, select, socket, sys
port, tag, p1, p2, p3, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
ls = []
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t.bind(("127.0.0.1", port)); ls.append(t)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", port))
a = socket.socket(socket.AF_UNIX); a.bind("\0" + tag); ls.append(a)
for p in (p1, p2, p3):
    s = socket.socket(socket.AF_UNIX); s.bind(p); ls.append(s)
os.chmod(p3, 0o777)  # world-writable, as a system bus socket is on many hosts
for s in ls:
    s.listen(16)
open(ready, "w").close()
while True:
    r, _, _ = select.select(ls + [u], [], [], 900)
    if not r:
        break
    for s in r:
        if s is u:
            _, addr = u.recvfrom(64); u.sendto(b"HOSTDATA", addr)
        else:
            c, _ = s.accept(); c.sendall(b"HOSTDATA"); c.close()
PYEOF
BG+=($!); disown $!
for ((i = 0; i < 100; i++)); do [ -e "$FX/ready" ] && break; sleep 0.05; done
[ -e "$FX/ready" ] || { echo "Bail out! host listeners did not start"; exit 1; }
chmod -R a+rX "$WS"

# A process of the caller's on the host (kill_host, see_host_pid; the init stand-in outside).
sleeper() { # SECS [EXE] — start one, sets SLEEPER once it runs EXE (not the forked shell)
        local exe i
        exe=$(readlink -f "$(command -v "${2:-sleep}")")
        "$exe" "$1" </dev/null >/dev/null 2>&1 &
        SLEEPER=$!
        BG+=("$SLEEPER")
        disown "$SLEEPER"
        for ((i = 0; i < 200; i++)); do
                [ "$(readlink "/proc/$SLEEPER/exe" 2>/dev/null)" = "$exe" ] && return 0
                sleep 0.01
        done
}
cp "$(command -v sleep)" "$FX/victim"

# The profile: the default one on native; on other backends one that only asks for what they
# claim (isolation.level policy: the landlock backend refuses to run profile.default's container).
PROF=()
if [ -n "${SBX_ESCAPE_PROFILE:-}" ]; then
        PROF=(--profile "$SBX_ESCAPE_PROFILE")
elif [ "$BACKEND" != native ]; then
        cat >"$SBX_TMP/escape-profile.yaml" <<'YAML'
id: test.escape
version: "1.0.0"
extends: profile.default
isolation:
  level: policy
YAML
        # the landlock backend has no loopback of its own to offer, and refuses a profile asking
        # for one
        [ "$BACKEND" != landlock ] || printf 'network:\n  loopback: false\n' >>"$SBX_TMP/escape-profile.yaml"
        # the microvm backend is strict mode's
        [ "$BACKEND" != microvm ] || sed -i 's/^  level: policy$/  level: policy\n  mode: strict/' "$SBX_TMP/escape-profile.yaml"
        chmod 644 "$SBX_TMP/escape-profile.yaml"
        PROF=(--profile "$SBX_TMP/escape-profile.yaml")
fi

# An ordinary user here may have no cgroup and no user namespace of the sandbox's own on the
# landlock backend: pids unenforced is then allowed (the report says none), and the attacks that
# need it (the fork bomb) are skipped, saying so.
if [ "$BACKEND" = landlock ] && [ $ROOT = 0 ]; then
        sed -i 's/^enforce: { best_effort: \[\(.*\)\] }/enforce: { best_effort: [\1, pids] }/' "$POL"
fi

# ---- what the backend provides --------------------------------------------------------------------
PROVIDES=" ${SBX_BACKEND_PROVIDES:-} "
case $BACKEND in
native) PROVIDES+=" namespaces landlock seccomp " ;;
landlock) PROVIDES+=" landlock seccomp " ;;
*)      # the others: what their declared capabilities claim (sandboxer doctor --json) is attacked
        PROVIDES+=" $("$SANDBOXER" doctor --json 2>/dev/null | python3 -c '
import json, sys
c = json.load(sys.stdin)["backends"][sys.argv[1]]["capabilities"]
yes = lambda k: c.get(k, {}).get("yes")
out = []
if yes("pid_isolation") and yes("ipc_isolation") and yes("net.deny") and yes("fs.private_view"):
    out.append("namespaces")
if yes("landlock"):
    out.append("landlock")
if yes("seccomp"):
    out.append("seccomp")
print(" ".join(out))' "$BACKEND" 2>/dev/null) " ;;
esac
[ $ROOT = 1 ] && PROVIDES+=" root "
# A backend this host (or build) cannot run: nothing to attack, said with the reason. One that
# setup.sh installs and is missing under CI, or one doctor calls ready that then cannot run
# /bin/true, is a failure.
backend_check "$BACKEND"
case $? in
1) skip_all "$BACKEND_WHY" ;;
2) echo "Bail out! $BACKEND_WHY"; exit 1 ;;
*) ;;
esac
run_sbx --policy "$POL" --backend "$BACKEND" "${PROF[@]}" --memory 64 -- /bin/true
CGMECH=$(json_get "$SBX_REPORT" 'd["config"]["limits"]["memory_mb"]["mechanism"]' 2>/dev/null)
case $CGMECH in cgroup*) PROVIDES+=" cgroup " ;; *) ;; esac
PIDMECH=$(json_get "$SBX_REPORT" 'd["config"]["limits"]["pids"]["mechanism"]' 2>/dev/null)
case $PIDMECH in none | "") ;; *) PROVIDES+=" pids " ;; esac
SCRMECH=$(json_get "$SBX_REPORT" 'd["config"]["limits"]["scratch_mb"]["mechanism"]' 2>/dev/null)
case $SCRMECH in none | "") ;; *) PROVIDES+=" scratch " ;; esac
if [ "$SBX_RC" != 0 ]; then
        setup_refused_by_host && skip_all "backend $BACKEND: $HOST_WHY"
        echo "Bail out! backend $BACKEND cannot run /bin/true here (exit $SBX_RC): $(head -c 300 "$SBX_ERR_FILE")"
        exit 1
fi
diag "backend $BACKEND provides:$PROVIDES(memory_mb by ${CGMECH:-?}); caller $(id -un)"

# needs_missing NEEDS — why the backend here lacks some of NEEDS (a|b any-of, comma all-of).
needs_missing() {
        local group alt hit groups alts
        [ "$1" = - ] && return 0
        IFS=, read -ra groups <<<"$1"
        for group in "${groups[@]}"; do
                hit=0
                IFS='|' read -ra alts <<<"$group"
                for alt in "${alts[@]}"; do [[ $PROVIDES == *" $alt "* ]] && hit=1; done
                [ $hit = 1 ] && continue
                case $group in
                root) printf 'a root caller (this is %s); ' "$(id -un)" ;;
                cgroup) printf 'memory_mb enforced (backend %s here: mechanism %s); ' "$BACKEND" "${CGMECH:-unknown}" ;;
                pids) printf 'pids enforced (backend %s here: mechanism %s); ' "$BACKEND" "${PIDMECH:-unknown}" ;;
                scratch) printf 'scratch_mb enforced (backend %s here: mechanism %s); ' "$BACKEND" "${SCRMECH:-unknown}" ;;
                *) printf '%s, which backend %s does not provide; ' "${group//|/ or }" "$BACKEND" ;;
                esac
        done
}

# sysctl_ok SPEC — SPEC is PATH=V or PATH<=V under /proc/sys; a missing file satisfies it.
sysctl_ok() {
        local path=${1%%[<=]*} want=${1##*=} v
        v=$(cat "/proc/sys/$path" 2>/dev/null) || return 0
        if [[ $1 == *"<="* ]]; then [ "$v" -le "$want" ]; else [ "$v" = "$want" ]; fi
}

# expand WORD... — the manifest's placeholders for one run (CTX outside|inside); sets ARGV.
expand() {
        local w
        ARGV=()
        for w in "$@"; do
                w=${w//\{SECRET\}/$SECRET}
                w=${w//\{HOMESECRET\}/$HOMESECRET}
                w=${w//\{HOMESECRETNAME\}/$HOMESECRETNAME}
                w=${w//\{HOSTDIR\}/$FX/hostdir}
                w=${w//\{HOSTSOCK\}/$FX/host.sock}
                w=${w//\{WORLDSOCK\}/$FX/hostdir/world.sock}
                w=${w//\{PORT\}/$PORT}
                w=${w//\{ABSTRACT\}/$TAG}
                w=${w//\{TAG\}/$RUNTAG}
                w=${w//\{HOSTNAME\}/$HOSTNAME_BEFORE}
                w=${w//\{HOSTPID\}/$HOSTPID}
                w=${w//\{INIT\}/$INIT}
                ARGV+=("$w")
        done
}

# verdict_line FILE — the attack's line (empty if none); verdict_count FILE — how many there are.
verdict_line() { grep -m1 -E '^(ESCAPED|BLOCKED|ERROR|STARTED)( |$)' "$1"; }
verdict_count() { grep -cE '^(ESCAPED|BLOCKED|ERROR|STARTED)( |$)' "$1"; }
daemon_alive() { pgrep -f "daemonize $1( |\$)" >/dev/null 2>&1; }
daemon_gone() { # TAG — wait up to 2 s for it to be gone
        local i
        for ((i = 0; i < 40; i++)); do daemon_alive "$1" || return 0; sleep 0.05; done
        return 1
}

# ---- the attacks ----------------------------------------------------------------------------------
n_att=0 n_blocked=0 n_escaped=0 n_error=0 n_skipped=0 n_known=0
while IFS=$'\t' read -r name cmd opts needs inside outside note known; do
        [[ -z $name || $name == \#* ]] && continue
        if [ -n "${SBX_ESCAPE_ONLY:-}" ] && [[ " $SBX_ESCAPE_ONLY " != *" $name "* ]]; then continue; fi
        n_att=$((n_att + 1))
        read -ra words <<<"$cmd"
        prog=${words[0]}
        missing=$(needs_missing "$needs")
        if [ -n "$missing" ]; then
                skip "$name: needs ${missing%; } ($note)" 3
                n_skipped=$((n_skipped + 1))
                continue
        fi
        if [[ $cmd == *"{HOMESECRET"* ]] && [ -z "$HOMESECRET" ]; then
                skip "$name: cannot plant a secret in HOME (${HOME:-unset})" 3
                n_skipped=$((n_skipped + 1))
                continue
        fi
        timeout_s=20
        [[ " $opts " =~ " --timeout "([0-9.]+) ]] && timeout_s=${BASH_REMATCH[1]}

        # -- outside: the same program, same fixtures, same user, no sandbox --
        mode=${outside%%;*} cond=""
        [[ $outside == *";"* ]] && cond=${outside#*;}
        # What the attack needs of the host itself (host:FEATURE; userns for the attacks shown in
        # namespaces of their own): without it the attack fails outside, and failing inside
        # proves nothing. The three checks are skipped with the host's reason.
        hostneed=""
        [[ $cond == host:* ]] && hostneed=${cond#host:}
        [ "$mode" = userns ] && hostneed=userns
        if [ -n "$hostneed" ] && ! host_has "$hostneed"; then
                skip "$name: $HOST_WHY, so the check would be vacuous ($note)" 3
                n_skipped=$((n_skipped + 1))
                continue
        fi
        why=""
        case $mode in
        root | nobody) [ $ROOT = 1 ] || why="outside needs root: $note" ;;
        escaped | userns) ;;
        *) why="unknown outside mode '$mode'" ;;
        esac
        if [ -z "$why" ] && [[ $cond == req:* ]] && [ $ROOT = 0 ] && ! sysctl_ok "${cond#req:}"; then
                spec=${cond#req:}
                why="needs ${spec} for an unprivileged caller, this host has $(cat "/proc/sys/${spec%%[<=]*}" 2>/dev/null): $note"
        fi
        RUNTAG=$TAG-o$n_att
        sleeper 60; HOSTPID=$SLEEPER
        sleeper 5 "$FX/victim"; INIT=$SLEEPER
        [ "$prog" = proc_exe_overwrite ] && { kill -9 "$INIT"; sleeper 1 "$FX/victim"; INIT=$SLEEPER; }
        expand "${words[@]}"
        if [ -n "$why" ]; then
                skip "$name: outside check skipped: $why"
        else
                prefix=()
                case $mode in
                userns) prefix=(unshare --user --map-root-user --mount --net --uts --ipc --) ;;
                nobody) prefix=(setpriv --reuid=65534 --regid=65534 --clear-groups --) ;;
                *) ;;
                esac
                (cd "$WS" && env -i PATH=/usr/bin:/bin HOME="${HOME:-/}" TMPDIR="$OSCR" SBX_SECRET_ENV="$SBX_SECRET_ENV" \
                        "${prefix[@]}" timeout -k 1 "$timeout_s" "./$prog" "${ARGV[@]:1}") \
                        5<"$SECRET" 9<"$SECRET" </dev/null >"$SBX_TMP/outside.out" 2>/dev/null
                orc=$?
                line=$(verdict_line "$SBX_TMP/outside.out")
                # An attack the sandbox is to kill (signal:SYS) that the host already kills outside
                # any sandbox (a filter above us, a hypervisor): dying inside would prove nothing.
                if [ -z "$line" ] && [ "$orc" -gt 128 ] && [[ $inside == *signal:SYS* ]]; then
                        skip "$name: this host kills it outside any sandbox (SIG$(kill -l $((orc - 128)) 2>/dev/null)), so the check inside would be vacuous ($note)" 3
                        n_skipped=$((n_skipped + 1))
                        kill -9 "$HOSTPID" "$INIT" 2>/dev/null
                        continue
                fi
                if [ "$prog" = daemonize ]; then
                        if [[ $line == STARTED* ]] && daemon_alive "$RUNTAG"; then line="ESCAPED daemon $RUNTAG outlived its command"; fi
                        pkill -9 -f "daemonize $RUNTAG" 2>/dev/null
                fi
                if [[ $line == ESCAPED* ]]; then
                        ok 0 "$name: outside: escaped without the sandbox (${line#ESCAPED })"
                elif [[ $cond == ifnot:* ]] && [[ $line == "BLOCKED ${cond#ifnot:}"* ]]; then
                        skip "$name: outside check: this host answers ${cond#ifnot:} ($note)"
                else
                        ok 1 "$name: outside: did not escape without the sandbox, so the inside check would be vacuous" ||
                                diag "got: '${line:-<no verdict line>}' (mode $mode)"
                fi
        fi
        kill -9 "$HOSTPID" "$INIT" 2>/dev/null

        # -- inside --
        RUNTAG=$TAG-i$n_att
        sleeper 60; HOSTPID=$SLEEPER
        INIT=parent
        expand "${words[@]}"
        extra=()
        [ "$opts" = - ] || read -ra extra <<<"$opts"
        [[ " $opts " == *" --timeout "* ]] || extra+=(--timeout 20)
        run_sbx --policy "$POL" --backend "$BACKEND" "${PROF[@]}" --workspace "$WS" "${extra[@]}" -- "./$prog" "${ARGV[@]:1}" </dev/null
        line=$(verdict_line "$SBX_OUT_FILE")
        status=$(json_get "$SBX_REPORT" 'd["status"]' 2>/dev/null)
        outcome=blocked detail=""
        if [[ $line == ESCAPED* ]]; then
                outcome=escaped detail=$line
        elif [ "$(verdict_count "$SBX_OUT_FILE")" -gt 1 ]; then
                outcome=error detail="$(verdict_count "$SBX_OUT_FILE") verdict lines"
        else
                IFS=+ read -ra conds <<<"$inside"
                for c in "${conds[@]}"; do
                        case $c in
                        BLOCKED:*)
                                if [[ $line != BLOCKED\ * ]]; then
                                        outcome=error detail="expected BLOCKED, got '${line:-<no verdict line>}'"
                                else
                                        how=${line#BLOCKED }; how=${how%% *}
                                        IFS=, read -ra toks <<<"$how"
                                        for t in "${toks[@]}"; do
                                                [[ "|${c#BLOCKED:}|" == *"|$t|"* ]] ||
                                                        { outcome=error detail="unexpected '$t' in '$line' (expected ${c#BLOCKED:})"; }
                                        done
                                fi
                                ;;
                        line:*) [[ $line == "${c#line:}"* ]] || outcome=error detail="expected a ${c#line:} line, got '${line:-<none>}'" ;;
                        signal:SYS)
                                [ "$SBX_RC" = 159 ] && [ "$status" = signaled ] ||
                                        outcome=error detail="expected death by SIGSYS (159/signaled), got $SBX_RC/$status '${line}'"
                                ;;
                        status:*) [ "$status" = "${c#status:}" ] || outcome=error detail="expected status ${c#status:}, got $status (exit $SBX_RC) '${line}'" ;;
                        alive) kill -0 "$HOSTPID" 2>/dev/null || outcome=escaped detail="the host process $HOSTPID was killed" ;;
                        nodaemon) daemon_gone "$RUNTAG" || outcome=escaped detail="daemon $RUNTAG still runs on the host after the run: $(pgrep -af "daemonize $RUNTAG")" ;;
                        hostname) [ "$(uname -n)" = "$HOSTNAME_BEFORE" ] || outcome=escaped detail="host hostname is now $(uname -n)" ;;
                        *) outcome=error detail="manifest: unknown condition '$c'" ;;
                        esac
                        [ $outcome = blocked ] || break
                done
                [ $outcome != blocked ] || detail="${line:+$line; }status $status, exit $SBX_RC"
        fi
        if [ "$status" = setup_error ] && [ $outcome != escaped ]; then
                outcome=error detail="setup_error: $(json_get "$SBX_REPORT" 'd["error"]' 2>/dev/null)"
        fi
        case $outcome in
        blocked) ok 0 "$name: inside: blocked ($detail)"; n_blocked=$((n_blocked + 1)) ;;
        escaped)
                if [ "$known" != - ]; then
                        echo "not ok $((_tap_n += 1)) - $name: inside: ESCAPED ($detail) # TODO known escape: $known"
                        n_known=$((n_known + 1))
                else
                        ok 1 "$name: inside: ESCAPED ($detail)"
                        n_escaped=$((n_escaped + 1))
                fi
                ;;
        *)
                ok 1 "$name: inside: error ($detail)" || diag "exit $SBX_RC, status $status; stderr: $(head -c 400 "$SBX_ERR_FILE")"
                n_error=$((n_error + 1))
                ;;
        esac
        pkill -9 -f "daemonize $RUNTAG" 2>/dev/null
        kill -9 "$HOSTPID" 2>/dev/null
        assert_no_leftovers "$name: nothing left on the host"
done <"$MANIFEST"

# Every program built is named by the manifest (suid_euid is planted, not run directly).
if [ -z "${SBX_ESCAPE_ONLY:-}" ]; then
        unused=""
        for a in "$SBX_SRC"/tests/escape/attacks/*.c; do
                a=$(basename "$a" .c)
                [ "$a" = suid_euid ] || grep -qP "^[^#\t]+\t$a( |\t)" "$MANIFEST" || unused+="$a "
        done
        is "$unused" "" "every attack program is in the manifest"
        ok "$([ "$n_att" -ge 30 ] && echo 0 || echo 1)" "at least 30 attacks in the manifest ($n_att)"
fi
diag "backend $BACKEND as $(id -un): $n_att attacks — $n_blocked blocked, $n_escaped escaped, $n_known known escapes (TODO), $n_error errors, $n_skipped skipped; $((SECONDS - T0)) s"
done_testing
