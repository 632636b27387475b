# lib.sh — shared TAP helpers for the integration scripts (bash). Source it first:
#     . "$(dirname "$0")/lib.sh"
# The runner (scripts/test.sh) sets SANDBOXER (the binary), SBX_BUILD (build dir), SBX_SRC (repo
# root); defaults below let a script run by hand from the tree. It counts every `ok`/`not ok`
# line, `# SKIP` as skipped; `skip_all` or `exit 77` skips a whole script. A script that dies
# before its plan is met counts as a failure. Do not `set -e`: a failed check must not end it.
# shellcheck shell=bash disable=SC2034 # SBX_RC, SBX_OUT, ... are set for the scripts that source this file

: "${SBX_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${SBX_BUILD:=$SBX_SRC/build}"
: "${SANDBOXER:=$SBX_BUILD/src/cli/sandboxer}"
export SANDBOXER SBX_BUILD SBX_SRC

_tap_n=0 _tap_failed=0 _tap_planned=0 SBX_RUN_N=0
SBX_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sbxtest.XXXXXX") || exit 1 # this script's own scratch
chmod 755 "$SBX_TMP"                                              # a workspace must be reachable
sbx_cleanup() { rm -rf "$SBX_TMP"; }                              # call it from your own EXIT trap
trap sbx_cleanup EXIT

plan() { _tap_planned=$1; echo "1..$1"; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; } # each argument a line
# The script line a failure is reported at: the first caller outside this file.
_tap_where() {
        local i
        for ((i = 1; i < ${#BASH_SOURCE[@]}; i++)); do
                [ "${BASH_SOURCE[i]}" != "${BASH_SOURCE[0]}" ] && { echo "${BASH_SOURCE[i]}:${BASH_LINENO[i - 1]}"; return; }
        done
}
# ok STATUS NAME — passes when STATUS is 0: `[ -e "$f" ]; ok $? "f exists"`. Returns STATUS.
ok() {
        local st=$1; shift
        _tap_n=$((_tap_n + 1))
        if [ "$st" = 0 ]; then echo "ok $_tap_n - $*"; return 0; fi
        _tap_failed=$((_tap_failed + 1))
        echo "not ok $_tap_n - $*"
        echo "#   Failed test at $(_tap_where)"
        return 1
}
# is GOT EXPECTED NAME — string equality.
is() {
        [ "$1" = "$2" ]
        ok $? "$3" || diag "     got: '$1'" "expected: '$2'"
}
# like GOT REGEX NAME — bash extended regular expression match ([[ =~ ]]).
like() {
        [[ $1 =~ $2 ]]
        ok $? "$3" || diag "     got: '$1'" "expected to match: /$2/"
}
# skip REASON [N] — N tests (default 1) that cannot run here.
skip() { local i; for ((i = 0; i < ${2:-1}; i++)); do _tap_n=$((_tap_n + 1)); echo "ok $_tap_n # SKIP $1"; done; }
# skip_all REASON — nothing of this script can run here: counted once as skipped.
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
# done_testing — print the plan when none was given; exit non-zero when any test failed.
done_testing() {
        [ "$_tap_planned" = 0 ] && echo "1..$_tap_n"
        if [ "$_tap_planned" != 0 ] && [ "$_tap_planned" != "$_tap_n" ]; then
                diag "planned $_tap_planned tests but ran $_tap_n"; exit 1
        fi
        [ "$_tap_failed" = 0 ] || diag "failed $_tap_failed of $_tap_n tests"
        exit $((_tap_failed > 0))
}

# json_get FILE EXPR — evaluate a python expression on d (the parsed JSON; FILE "-" is stdin):
# `json_get "$SBX_REPORT" 'd["exit"]["code"]'`. Strings and numbers print as they are,
# everything else as JSON (true, null, [...]). Fails with a message when EXPR does not apply.
json_get() {
        python3 - "$1" "$2" <<'EOF'
import json, sys
try:
    d = json.load(sys.stdin if sys.argv[1] == "-" else open(sys.argv[1], encoding="utf-8"))
    v = eval(sys.argv[2], {"d": d})
except Exception as e:
    sys.exit("json_get %s %s: %s: %s" % (sys.argv[1], sys.argv[2], type(e).__name__, e))
print(v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else json.dumps(v))
EOF
}

# run_sbx [RUN-OPTION]... -- COMMAND [ARG]... — `sandboxer run` with the report written to a
# file. Sets SBX_RC (exit status), SBX_OUT / SBX_ERR (stdout / stderr text; the files are
# SBX_OUT_FILE / SBX_ERR_FILE) and SBX_REPORT (the report's path: absent if none was written).
# stdin is the caller's. Takes a leftovers snapshot first (for assert_no_leftovers) and records
# the run's pid (sbx_started). A run that outlives SBX_RUN_TIMEOUT seconds (default 120) is sent
# SIGTERM, then SIGKILL 10 s later.
run_sbx() {
        SBX_RUN_N=$((SBX_RUN_N + 1))
        local base=$SBX_TMP/run$SBX_RUN_N start=$SECONDS
        SBX_REPORT=$base.report.json SBX_OUT_FILE=$base.out SBX_ERR_FILE=$base.err
        leftovers_snapshot
        # the shell records its own pid, then becomes sandboxer: the pid its groups and
        # directories are named by (run_<id>.<pid>.<pidns>)
        # shellcheck disable=SC2016 # expanded by that sh
        timeout --preserve-status -k 10 "${SBX_RUN_TIMEOUT:-120}" \
                sh -c 'echo $$ >>"$0"; exec "$@"' "$SBX_TMP/owner-pids" \
                "$SANDBOXER" run --report "$SBX_REPORT" "$@" >"$SBX_OUT_FILE" 2>"$SBX_ERR_FILE"
        SBX_RC=$?
        [ $((SECONDS - start)) -lt "${SBX_RUN_TIMEOUT:-120}" ] || diag "run_sbx: still running after ${SBX_RUN_TIMEOUT:-120}s, killed: $*"
        SBX_OUT=$(cat "$SBX_OUT_FILE") SBX_ERR=$(cat "$SBX_ERR_FILE")
        return 0
}

# ---- the host: what a check means can depend on it ----------------------------------------------
# Probed outside any sandbox, once per script. A check that needs what the host lacks is skipped
# with the host's reason, never failed and never run vacuously (an attack that cannot succeed
# outside proves nothing when it fails inside).
# host_has FEATURE — 0 when the host has it, else 1 with HOST_WHY saying why:
#   i386           i386 system calls (int 0x80) return outside any sandbox (some hypervisors, and
#                  kernels booted with ia32_emulation=0, kill the caller with SIGSEGV instead)
#   x32            x32 system calls return (most kernels are built without them)
#   userns         this user may make a user namespace (unshare -U)
#   notif          a seccomp notification listener can be installed (not nested under one)
#   landlock:N     Landlock ABI N or newer
#   cgroup:NAME    a sandbox may get a cgroup of its own for controller NAME (memory, pids, cpu)
host_has() {
        HOST_WHY=""
        local out rc sig f
        case $1 in
        i386 | x32)
                f=$SBX_BUILD/tests/tools/sbx-probe
                [ -x "$f" ] || { HOST_WHY="cannot tell: $f is not built"; return 1; }
                out=$("$f" "${1/i386/int80}" 2>/dev/null)
                rc=$?
                [[ $out =~ returned\ ([0-9]+)$ ]] && return 0
                if [ "$rc" -gt 128 ]; then
                        sig=$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))
                        HOST_WHY="this host refuses $1 system calls: one made outside any sandbox died by SIG$sig"
                        case $sig in
                        SEGV) HOST_WHY+=" (emulation off in the kernel, ia32_emulation=0, or refused by the hypervisor)" ;;
                        SYS) HOST_WHY+=" (a seccomp filter this test runs under)" ;;
                        *) ;;
                        esac
                elif [[ $out == *"returned -38" ]]; then
                        HOST_WHY="this kernel has no $1 system calls (ENOSYS outside any sandbox)"
                else
                        HOST_WHY="$1 system calls outside any sandbox: '${out//$'\n'/ }' (exit $rc)"
                fi
                return 1
                ;;
        userns)
                out=$(unshare -U true 2>&1) && return 0
                HOST_WHY="this host refuses $(id -un) a user namespace (unshare -U: ${out:-refused})"
                return 1
                ;;
        notif) _host_doctor_feature seccomp_user_notif ;;
        landlock:*)
                local abi
                abi=$(_host_doctor_get 'd["landlock_abi"] or 0')
                [ "${abi:-0}" -ge "${1#landlock:}" ] && return 0
                HOST_WHY="Landlock ABI ${abi:-0} here (${1#landlock:} needed)"
                return 1
                ;;
        cgroup:*) _host_cgroup "${1#cgroup:}" ;;
        *)
                HOST_WHY="host_has: unknown feature '$1'"
                return 1
                ;;
        esac
}
# A controller a sandbox can get a group of its own in: our own group in its hierarchy (v1), or
# in the unified one with the controller listed there (v2), is a directory we may write. Judged
# here, apart from sandboxer's own probe (test-run-limits compares the two).
_host_cgroup() {
        local c=$1 own dir
        own=$(awk -F: -v c="$c" '$2 ~ "(^|,)" c "(,|$)" { print $3; exit }' /proc/self/cgroup)
        if [ -n "$own" ] && [ -d "/sys/fs/cgroup/$c" ]; then
                dir=/sys/fs/cgroup/$c$own
        else
                own=$(awk -F: '$1 == 0 { print $3; exit }' /proc/self/cgroup)
                dir=/sys/fs/cgroup${own%/}
                [ -d /sys/fs/cgroup/unified ] && dir=/sys/fs/cgroup/unified${own%/}
                if ! grep -qw "$c" "$dir/cgroup.controllers" 2>/dev/null; then
                        HOST_WHY="no $c controller for our cgroup here (neither a v1 hierarchy nor in $dir/cgroup.controllers)"
                        return 1
                fi
        fi
        [ -w "$dir" ] && return 0
        HOST_WHY="our $c cgroup $dir is not writable by $(id -un) (no delegation): a sandbox cannot get a $c group"
        return 1
}
# What `sandboxer doctor --json` says of this host, asked once per script.
# (Asked again when DOCKER_HOST changes: a script may start a Docker-compatible service.)
_host_doctor_get() {
        local f=$SBX_TMP/doctor.${DOCKER_HOST//[^A-Za-z0-9]/_}.json
        [ -s "$f" ] || "$SANDBOXER" doctor --json ${SBX_DOCTOR_POLICY:+--policy "$SBX_DOCTOR_POLICY"} >"$f" 2>/dev/null
        json_get "$f" "$1" 2>/dev/null
}
_host_doctor_feature() {
        [ "$(_host_doctor_get "d['features']['$1']['available']")" = true ] && return 0
        HOST_WHY="$1: $(_host_doctor_get "d['features']['$1']['detail']")"
        return 1
}

# backend_check BACKEND — can it run here? 0: yes. 1: no, for a reason of the host's or of this
# build (BACKEND_WHY; the caller skips). 2: no, and that is a failure (BACKEND_WHY): under CI=true
# a backend whose program scripts/setup.sh installs (bwrap, firejail, podman) may not be missing.
# A backend that is available and then fails to run is the caller's failure, never a skip.
backend_check() {
        local cause
        BACKEND_WHY=""
        cause=$(_host_doctor_get "d['backends']['$1']['cause']")
        [ "$cause" = none ] && return 0
        if [ -z "$cause" ]; then # doctor itself failed: never a reason to skip
                BACKEND_WHY="backend $1: sandboxer doctor --json gave no answer for it"
                return 2
        fi
        BACKEND_WHY="backend $1 unavailable: $(_host_doctor_get "d['backends']['$1']['reason']")"
        if [ "$cause" = tool_missing ] && [ "${CI:-}" = true ]; then
                case $1 in bwrap | firejail | podman)
                        BACKEND_WHY+=" — scripts/setup.sh installs it, so under CI it must be there"
                        return 2
                        ;;
                *) ;;
                esac
        fi
        return 1
}

# require_backend BACKEND — for a script about that backend: skip it all with the host's reason
# when it cannot run here (native without user namespaces, say), bail out when that is a failure.
require_backend() {
        backend_check "$1"
        case $? in
        1) skip_all "$BACKEND_WHY" ;;
        2) echo "Bail out! $BACKEND_WHY"; exit 1 ;;
        *) ;;
        esac
}

# The microvm guests: as root only (once per CI: QEMU's emulation takes seconds per guest), with
# qemu and a guest kernel; skips the script otherwise, saying which and the fix.
require_microvm_root() {
        [ "$(id -u)" = 0 ] || skip_all "the microvm guests run once per CI, in the root pass (QEMU's emulation: seconds per guest)"
        command -v qemu-system-x86_64 >/dev/null || skip_all "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
        ls /boot/vmlinuz-* >/dev/null 2>&1 || skip_all "no guest kernel in /boot (apt-get install linux-image-amd64)"
}

# setup_refused_by_host — did the last run_sbx end in a setup error that is the host's (a limit
# nothing here can enforce: no cgroup delegation for this user)? Sets HOST_WHY.
setup_refused_by_host() {
        HOST_WHY=""
        [ "$SBX_RC" = 125 ] && [[ $SBX_ERR == *"cannot enforce limits."*" here"* ]] || return 1
        HOST_WHY="the host: ${SBX_ERR#sandboxer: }"
        return 0
}

# ---- leftovers: what a run may leave on the host, compared with a snapshot taken before ----
# Other sandboxers may run on the same host meanwhile (a server with its sandboxes, another
# person's runs), so only what is ours counts, told by the run's own ids:
#  - a process is ours when it or an ancestor is this script or carries SBX_LEFTOVER_TAG (every
#    sandboxer this script starts inherits it), or when it is an orphaned sandbox process;
#  - a cgroup or a per-run directory is ours when its name carries the id of a run of ours (any
#    run_<24 hex> written under SBX_TMP: reports, outputs) or the pid of a sandboxer we started
#    (names are run_<id>.<pid>.<pidns>, sbx_cgroup_owned_name(); run_sbx records the pids, and a
#    script that starts sandboxer itself in the background calls sbx_started $!);
#  - a new mount in this mount namespace counts whoever made it (sandboxes mount in their own).
# What every run shares (the runtime directory itself, the server's sandboxes/, cached files) is
# not a run's leftover and is not listed.
export SBX_LEFTOVER_TAG=sbxtag-$$-$RANDOM$RANDOM
: >>"$SBX_TMP/owner-pids"
sbx_started() { local p; for p in "$@"; do echo "$p" >>"$SBX_TMP/owner-pids"; done; }
_sbx_ours() { # PID
        local p=$1 e k v ppid comm foreign
        while [ "$p" -gt 1 ]; do
                [ "$p" = $$ ] && return 0
                mapfile -d '' -t e <"/proc/$p/environ" 2>/dev/null || return 1 # another user's
                for k in "${e[@]}"; do [ "$k" = "SBX_LEFTOVER_TAG=$SBX_LEFTOVER_TAG" ] && return 0; done
                read -r comm <"/proc/$p/comm" 2>/dev/null || return 1
                foreign=0
                [ "/proc/$p/ns/pid" -ef "/proc/$$/ns/pid" ] || foreign=1
                # A host process without our tag (someone else's shell, sandboxer, bwrap): not ours.
                [ $foreign = 0 ] && [ "$comm" != sandboxer-init ] && return 1
                ppid=0
                while read -r k v; do [ "$k" = PPid: ] && { ppid=$v; break; }; done <"/proc/$p/status" 2>/dev/null
                [ "$ppid" -le 1 ] && return 0 # an orphaned sandbox process
                p=$ppid
        done
        return 1
}
# The pattern a name of ours matches: a run id seen under SBX_TMP, or .PID.PIDNS of a sandboxer
# we started (our pid namespace: the owner's pid means nothing in another).
_sbx_ours_pattern() {
        local ids pids ns
        ids=$(grep -rhoaE 'run_[0-9a-f]{24}' "$SBX_TMP" 2>/dev/null | sort -u | paste -sd'|')
        pids=$(sort -u "$SBX_TMP/owner-pids" 2>/dev/null | grep -E '^[0-9]+$' | paste -sd'|')
        ns=$(printf '%x' "$(stat -L -c %i /proc/self/ns/pid)")
        echo "run_(${ids:-no-run-id-seen})|run_[0-9a-f]{24}\.(${pids:-0})\.$ns(/|\$)"
}
_sbx_state() {
        local p name d
        for p in /proc/[0-9]*; do # sandboxer processes, and anything in another pid namespace
                read -r name <"$p/comm" 2>/dev/null || continue
                if [[ $name == sandboxer* ]] || { [ -e "$p/ns/pid" ] && ! [ "$p/ns/pid" -ef "/proc/$$/ns/pid" ]; }; then
                        _sbx_ours "${p#/proc/}" && echo "process ${p#/proc/} $name"
                fi
        done 2>/dev/null
        # (the tools' own: podman's storage mount comes and goes with its containers; firejail
        # mounts its /run/firejail directories once, at its first run after boot, and keeps them)
        awk '$5 !~ "^(/var/lib/containers/storage|/run/firejail/)" { print "mount " $1 " " $5 }' /proc/self/mountinfo
        {
                shopt -s nullglob
                # per-run entries in every runtime and scratch directory a run may use
                for d in /run/sandboxer /tmp/sandboxer-* /dev/shm/sandboxer ${XDG_RUNTIME_DIR:+"$XDG_RUNTIME_DIR/sandboxer"} \
                        ${SANDBOXER_RUNTIME_DIR:+"$SANDBOXER_RUNTIME_DIR"}; do
                        for p in "$d"/run_*; do echo "file $p"; done
                done
                find /sys/fs/cgroup -type d -path '*/sandboxer*/*' 2>/dev/null | sed 's/^/cgroup /'
        } | grep -E -- "$(_sbx_ours_pattern)"
}
leftovers_snapshot() { _sbx_state | LC_ALL=C sort >"$SBX_TMP/leftovers.before"; }
# assert_no_leftovers [NAME] — one test: nothing of ours appeared since the last snapshot
# (run_sbx takes one before each run).
assert_no_leftovers() {
        local new
        [ -f "$SBX_TMP/leftovers.before" ] || leftovers_snapshot
        new=$(_sbx_state | LC_ALL=C sort | LC_ALL=C comm -13 "$SBX_TMP/leftovers.before" -)
        [ -z "$new" ]
        ok $? "${1:-nothing left on the host}" || diag "left behind:" "$new"
}
