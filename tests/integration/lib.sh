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
# stdin is the caller's. Takes a leftovers snapshot first (for assert_no_leftovers). A run that
# outlives SBX_RUN_TIMEOUT seconds (default 120) is sent SIGTERM, then SIGKILL 10 s later.
run_sbx() {
        SBX_RUN_N=$((SBX_RUN_N + 1))
        local base=$SBX_TMP/run$SBX_RUN_N start=$SECONDS
        SBX_REPORT=$base.report.json SBX_OUT_FILE=$base.out SBX_ERR_FILE=$base.err
        leftovers_snapshot
        timeout --preserve-status -k 10 "${SBX_RUN_TIMEOUT:-120}" \
                "$SANDBOXER" run --report "$SBX_REPORT" "$@" >"$SBX_OUT_FILE" 2>"$SBX_ERR_FILE"
        SBX_RC=$?
        [ $((SECONDS - start)) -lt "${SBX_RUN_TIMEOUT:-120}" ] || diag "run_sbx: still running after ${SBX_RUN_TIMEOUT:-120}s, killed: $*"
        SBX_OUT=$(cat "$SBX_OUT_FILE") SBX_ERR=$(cat "$SBX_ERR_FILE")
        return 0
}

# ---- leftovers: what a run may leave on the host, compared with a snapshot taken before ----
# Other people's sandboxes may come and go meanwhile (a shared machine), so only what is ours
# counts. A process is ours when it or an ancestor is this script or carries SBX_LEFTOVER_TAG
# (every sandboxer this script starts inherits it), or when it is an orphan (a sandbox process
# whose parent is pid 1). A cgroup or file is ours when its name holds a run id that our own
# runs printed (anything under SBX_TMP); with CI=true or SBX_LEFTOVERS_STRICT=1 every new one is.
export SBX_LEFTOVER_TAG=sbxtag-$$-$RANDOM$RANDOM
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
_sbx_state() {
        local p name ids=""
        for p in /proc/[0-9]*; do # sandboxer processes, and anything in another pid namespace
                read -r name <"$p/comm" 2>/dev/null || continue
                if [ "$name" = sandboxer-init ] || [ "$name" = sandboxer ] ||
                        { [ -e "$p/ns/pid" ] && ! [ "$p/ns/pid" -ef "/proc/$$/ns/pid" ]; }; then
                        _sbx_ours "${p#/proc/}" && echo "process ${p#/proc/} $name"
                fi
        done 2>/dev/null
        # (podman's own storage mount comes and goes with its containers: the engine's, not ours)
        awk '$5 !~ "^/var/lib/containers/storage" { print "mount " $1 " " $5 }' /proc/self/mountinfo
        if [ "${CI:-}" != true ] && [ "${SBX_LEFTOVERS_STRICT:-}" != 1 ]; then
                ids=$(grep -rhoaE 'run_[0-9a-f]{24}' "$SBX_TMP" 2>/dev/null | sort -u | paste -sd'|')
                ids=${ids:-no-run-id-seen}
        fi
        {
                shopt -s nullglob
                for p in /tmp/sandboxer* /run/sandboxer/* /dev/shm/sandboxer/* "${XDG_RUNTIME_DIR:-/run/user/$(id -u)}"/sandboxer/*; do
                        echo "file $p"
                done
                find /sys/fs/cgroup -type d -path '*/sandboxer*/*' 2>/dev/null | sed 's/^/cgroup /'
        } | grep -E -- "${ids:-.}"
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
