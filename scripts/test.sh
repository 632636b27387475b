#!/usr/bin/env bash
# test.sh — the whole test suite, the one command CI runs (.ci/run) and the README names.
#
#   bash scripts/test.sh [--quick] [--only unit|integration|asan|clang|format[,...]] [--no-unpriv]
#
# Sections: unit (meson suites `unit` and `fuzz`: the unit tests and the fuzz corpora replayed),
# integration (every tests/integration/test-*.sh, as root and as the unprivileged user
# `sbxtest` this script creates; as a non-root caller, once as that caller), asan (an
# ASan+UBSan build: its unit tests, then the integration scripts as root against its binary),
# clang (the whole tree built with clang, which refuses what gcc lets through: a goto that jumps
# past the initialisation of a cleanup variable frees garbage at run time), format (clang-format
# over src/ include/ tests/unit).
#
# Counting: every TAP assertion is one test — each `ok` line passes, each `not ok` fails, each
# `# SKIP` (and `not ok ... # TODO`) is skipped. A program or script also counts:
#   - as one skipped test when it skips as a whole (`1..0 # SKIP why`, or exit status 77);
#   - as one test by its exit status when it prints no TAP at all;
#   - as one more failure when it misses its plan, bails out, times out, or exits non-zero
#     without a failed assertion (a sanitizer report at exit, a crash, `set -e`).
# The format check is one test; a formatting difference fails it (SBX_STRICT_FORMAT=0 reports
# it as skipped instead, e.g. with another clang-format version). The last line is `N passed, N failed, N skipped`
# and the exit status is non-zero when anything failed.
#
# The builds it tests have the hooks only tests use (meson -Dtest_hooks=true: build/ is
# reconfigured so; a build made by scripts/setup.sh alone has none).
# Environment: CI=true makes warnings errors (meson -Dwerror=true). SBX_STRICT_FORMAT=0 only
# reports formatting differences. SBX_ASAN_INTEGRATION="test-a.sh test-b.sh" limits the scripts run against the
# ASan binary (default: all but test-long-lived.sh, five minutes of waiting, run once as root,
# the microvm scripts and test-*-guest.sh, guests under QEMU's emulation, run once, in the root
# pass (as root, and as sbxtest by test-escape-microvm-user.sh; the unprivileged pass skips them
# too), and
# the heavy test-load-leak.sh, which runs once, in the root and the
# unprivileged passes). SBX_SCRIPT_TIMEOUT (s, default 600) per integration script.
# SBX_VERBOSE=1 prints every TAP line. SBX_SKIP_SETUP=1 skips scripts/setup.sh (no apt, no
# reconfigure; still builds). Logs: build/test-logs/.
#
# One test by hand: `SANDBOXER=$PWD/build/src/cli/sandboxer bash tests/integration/test-x.sh`,
# or `meson test -C build test-policy --print-errorlogs`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
# Debian's tools first (its python3 has python3-jsonschema; a per-user pyenv shim would not).
SYS_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

quick=0 unpriv=1 only=""
while [ $# -gt 0 ]; do
        case $1 in
        --quick) quick=1 ;;
        --no-unpriv) unpriv=0 ;;
        --only) only=${2:?--only needs unit, integration, asan, clang or format}; shift ;;
        --only=*) only=${1#--only=} ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "test.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        esac
        shift
done
want() { # want SECTION — is this section selected?
        if [ -n "$only" ]; then [[ ",$only," == *",$1,"* ]]; return; fi
        [ "$1" != asan ] || [ "$quick" = 0 ]
}
for s in ${only//,/ }; do
        case $s in unit | integration | asan | clang | format) ;; *) echo "test.sh: --only: unknown section '$s'" >&2; exit 2 ;; esac
done

WERROR=false
[ "${CI:-}" = true ] && WERROR=true
BUILD=$ROOT/build ASAN_BUILD=$ROOT/build-asan
T0=$SECONDS
COUNTS=$(mktemp -d /tmp/sbx-test-counts.XXXXXX)
UNPRIV_COPY=""
cleanup() {
        rm -rf "$COUNTS"
        [ -z "$UNPRIV_COPY" ] || rm -rf "$UNPRIV_COPY"
}
trap cleanup EXIT
SUMMARY=()

# ---- counting (one implementation for every TAP stream) ----------------------------------------
TAPCOUNT=$(
        cat <<'PYEOF'
import json, os, re, sys

VERBOSE = os.environ.get("SBX_VERBOSE") == "1"

def tail(text, n=15):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-n:]

def count(label, out, err, rc, secs, timed_out, counts_file, timeout=None):
    """Count one program's TAP stream (out) given its exit status; print one line, details on failure."""
    p = f = s = n = 0
    planned = None
    skip_reason = None
    problems, details = [], []
    lines = out.splitlines()
    for i, l in enumerate(lines):
        m = re.match(r"^1\.\.(\d+)\s*(?:#\s*(?:skip\w*\s*)?(.*))?$", l, re.I)
        if m:
            planned = int(m.group(1))
            if planned == 0:
                skip_reason = (m.group(2) or "no tests").strip()
            continue
        if l.startswith("Bail out!"):
            problems.append(l)
            continue
        m = re.match(r"^(not )?ok\b(.*)$", l)
        if not m:
            continue
        n += 1
        d = re.search(r"#\s*(SKIP|TODO)\b", m.group(2), re.I)
        if d:
            s += 1
        elif m.group(1):
            f += 1
            details.append(l)
            for follow in lines[i + 1:]:
                if not follow.startswith("#"):
                    break
                details.append(follow)
        else:
            p += 1
    if timed_out:
        problems.append("timed out after %ss" % (timeout or secs))
    elif rc == 77 and n == 0:
        skip_reason = skip_reason or (tail(out + "\n" + err, 1) or ["exit status 77"])[0].lstrip("# ")
    elif n == 0 and planned is None:
        # Not a TAP program: one test, judged by its exit status.
        if rc == 0:
            p = 1
        else:
            problems.append("exited with status %d" % rc)
    if skip_reason is not None and n == 0 and not problems and rc in (0, 77):
        s = 1
    else:
        skip_reason = None
        if planned is not None and planned != n and not timed_out and not any(x.startswith("Bail out!") for x in problems):
            problems.append("planned %d tests but ran %d" % (planned, n))
        if rc not in (0, 77) and f == 0 and not problems:
            problems.append("exited with status %d and no failed test" % rc)
    f += len(problems)
    status = "FAIL" if f else ("SKIP" if skip_reason is not None else "ok")
    what = skip_reason if skip_reason is not None else "%d passed, %d failed, %d skipped" % (p, f, s)
    print("  %-4s  %-44s %-40s %6.1fs" % (status, label, what, secs), flush=True)
    if VERBOSE:
        for l in lines:
            print("          | " + l)
    if f:
        for l in details[:60]:
            print("          " + l)
        for pr in problems:
            print("          !! " + pr)
        t = tail(err)
        if t:
            print("          stderr (last %d lines):" % len(t))
            for l in t:
                print("          > " + l[:300])
    with open(counts_file, "a") as fh:
        fh.write("%d %d %d\n" % (p, f, s))

def main():
    mode = sys.argv[1]
    if mode == "stream":
        label, outf, errf, rc, secs, timed_out, counts_file, timeout = sys.argv[2:10]
        rd = lambda fn: open(fn, encoding="utf-8", errors="replace").read() if os.path.exists(fn) else ""
        count(label, rd(outf), rd(errf), int(rc), float(secs), timed_out == "1", counts_file, timeout)
    elif mode == "meson":
        testlog, counts_file, meson_rc, meson_out, prefix = sys.argv[2:7]
        entries = []
        if os.path.exists(testlog):
            with open(testlog, encoding="utf-8", errors="replace") as fh:
                entries = [json.loads(l) for l in fh if l.strip()]
        if not entries:
            print("  FAIL  meson test ran nothing (status %s); its output:" % meson_rc)
            try:
                for l in tail(open(meson_out, encoding="utf-8", errors="replace").read(), 25):
                    print("          > " + l)
            except OSError:
                pass
            with open(counts_file, "a") as fh:
                fh.write("0 1 0\n")
            return
        for e in entries:
            result = e.get("result", "")
            rc = e.get("returncode")
            rc = 0 if rc is None else int(rc)
            out = e.get("stdout") or ""
            err = e.get("stderr") or ""
            count(prefix + e["name"], out, err, rc, float(e.get("duration") or 0),
                  result == "TIMEOUT", counts_file, e.get("timeout"))

main()
PYEOF
)
tapcount() { python3 -c "$TAPCOUNT" "$@"; }

section_begin() {
        SECTION=$1 SECTION_T0=$SECONDS
        : >"$COUNTS/$SECTION"
        printf '\n== %s\n' "$2"
}
section_end() {
        local p f s
        read -r p f s < <(awk '{ p += $1; f += $2; s += $3 } END { print p+0, f+0, s+0 }' "$COUNTS/$SECTION")
        SUMMARY+=("$(printf '%-22s %4d passed, %3d failed, %3d skipped  %5ds' "$SECTION" "$p" "$f" "$s" $((SECONDS - SECTION_T0)))")
        printf -- '-- %s: %d passed, %d failed, %d skipped (%ds)\n' "$SECTION" "$p" "$f" "$s" $((SECONDS - SECTION_T0))
}
record() { echo "$1 $2 $3" >>"$COUNTS/$SECTION"; } # record PASSED FAILED SKIPPED (a check of our own)
finish() {
        local p f s
        printf '\n== summary (%ds)\n' $((SECONDS - T0))
        local line
        for line in "${SUMMARY[@]}"; do echo "  $line"; done
        read -r p f s < <(cat "$COUNTS"/* 2>/dev/null | awk '{ p += $1; f += $2; s += $3 } END { print p+0, f+0, s+0 }')
        echo "logs: $LOGS"
        echo "$p passed, $f failed, $s skipped"
        [ "$f" = 0 ]
}

# ---- setup: dependencies and the build ---------------------------------------------------------
LOGS=$BUILD/test-logs
section_begin build "setup and build"
build_ok=1
if [ "${SBX_SKIP_SETUP:-}" = 1 ]; then
        { meson configure "$BUILD" -Dtest_hooks=true && ninja -C "$BUILD"; } || build_ok=0
else
        bash "$ROOT/scripts/setup.sh" --no-demo --test-hooks || build_ok=0
fi
LOGS=$BUILD/test-logs
mkdir -p "$LOGS"
if [ "$build_ok" = 1 ] && [ -x "$BUILD/src/cli/sandboxer" ]; then
        record 1 0 0
else
        echo "  FAIL  setup/build of $BUILD failed (see above); nothing else can run"
        record 0 1 0
        section_end
        finish || exit 1
fi
section_end
rm -rf "${LOGS:?}"/*

# ---- unit: the meson suites `unit` and `fuzz` --------------------------------------------------
# meson test TESTLOG-PREFIX BUILD-DIR [meson test args] — run, then count from testlog.json.
meson_suites() {
        local prefix=$1 dir=$2 rc=0
        shift 2
        rm -f "$dir/meson-logs/testlog.json"
        meson test -C "$dir" --no-rebuild --suite unit --suite fuzz --print-errorlogs "$@" \
                >"$LOGS/$SECTION.meson.log" 2>&1 || rc=$?
        tapcount meson "$dir/meson-logs/testlog.json" "$COUNTS/$SECTION" "$rc" "$LOGS/$SECTION.meson.log" "$prefix" ||
                record 0 1 0
}
if want unit; then
        section_begin unit "unit tests and fuzz corpora (meson suites unit, fuzz)"
        meson_suites "" "$BUILD"
        section_end
fi

# ---- integration: tests/integration/*.sh -------------------------------------------------------
# Scripts are test-*.sh; other *.sh files there (lib.sh, common-*.sh) are helpers they source.
mapfile -t SCRIPTS < <(find "$ROOT/tests/integration" -maxdepth 1 -name 'test-*.sh' -printf '%f\n' | sort)

# run_scripts LABEL USER SRC BUILD-DIR SANDBOXER [SCRIPT...] — each script with a clean
# environment, as USER (empty: as the caller), stdin /dev/null, under a timeout.
run_scripts() {
        local label=$1 user=$2 src=$3 bdir=$4 binary=$5 script rc t0 out err timed_out v home
        shift 5
        [ $# -gt 0 ] || { echo "  (no integration scripts)"; return 0; }
        local limit=${SBX_SCRIPT_TIMEOUT:-600}
        home=$HOME
        [ -z "$user" ] || home=$(getent passwd "$user" | cut -d: -f6)
        local envv=(env -i PATH="$SYS_PATH" HOME="$home" USER="${user:-$(id -un)}" LOGNAME="${user:-$(id -un)}"
                LANG=C.UTF-8 TERM=dumb SANDBOXER="$binary" SBX_BUILD="$bdir" SBX_SRC="$src" SBX_TEST_PASS="$label")
        [ -z "${CI:-}" ] || envv+=(CI="$CI")
        for v in $(compgen -e | grep -E '^(SBX_|ASAN_OPTIONS$|UBSAN_OPTIONS$)' || true); do
                case $v in SBX_BUILD | SBX_SRC | SBX_TEST_PASS) ;; *) envv+=("$v=${!v}") ;; esac
        done
        for script in "$@"; do
                out=$LOGS/${script%.sh}.$label.out err=$LOGS/${script%.sh}.$label.err
                t0=$(date +%s%N) rc=0 timed_out=0
                if [ -n "$user" ]; then
                        (cd "$src" && runuser -u "$user" -- "${envv[@]}" timeout -k 10 "$limit" bash "$src/tests/integration/$script") \
                                </dev/null >"$out" 2>"$err" || rc=$?
                else
                        (cd "$src" && "${envv[@]}" timeout -k 10 "$limit" bash "$src/tests/integration/$script") \
                                </dev/null >"$out" 2>"$err" || rc=$?
                fi
                local secs
                secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
                { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [ "${secs%.*}" -ge "$limit" ] && timed_out=1
                tapcount stream "$script [$label]" "$out" "$err" "$rc" "$secs" "$timed_out" "$COUNTS/$SECTION" "$limit" ||
                        record 0 1 0
        done
}

# The unprivileged user, and a tree it can read: the repo may sit under a 0700 home (/root).
UNPRIV_USER=sbxtest
prepare_unpriv() {
        id "$UNPRIV_USER" >/dev/null 2>&1 ||
                useradd --create-home --user-group --shell /bin/bash "$UNPRIV_USER" ||
                return 1
        # shellcheck disable=SC2016 # expanded by that sh
        if runuser -u "$UNPRIV_USER" -- sh -c 'test -x "$1/src/cli/sandboxer" && test -r "$1/src/init/sandboxer-init" &&
                        test -r "$2/tests/integration/lib.sh" && test -x "$2/tests"' sh "$BUILD" "$ROOT"; then
                U_SRC=$ROOT U_BUILD=$BUILD
                return 0
        fi
        UNPRIV_COPY=$(mktemp -d /tmp/sbx-unpriv.XXXXXX)
        echo "  ($UNPRIV_USER cannot reach $ROOT: testing a copy in $UNPRIV_COPY)"
        mkdir -p "$UNPRIV_COPY/src/build"
        tar -C "$ROOT" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$UNPRIV_COPY/src" -xf -
        tar -C "$BUILD" --exclude='*.p' --exclude=./test-logs -cf - . | tar -C "$UNPRIV_COPY/src/build" -xf -
        chmod -R a+rX "$UNPRIV_COPY"
        U_SRC=$UNPRIV_COPY/src U_BUILD=$UNPRIV_COPY/src/build
}

if want integration; then
        if [ "$(id -u)" = 0 ]; then
                # The ordinary user exists for the root pass too: the firejail backend refuses
                # system accounts, so as root its tests run as this user's uid (run_as).
                # It and the tree it can read exist before the root pass: the microvm guests run
                # once per CI, in that pass, as root and as this user (test-escape-microvm-user.sh,
                # given the tree as SBX_UNPRIV_SRC and SBX_UNPRIV_BUILD).
                section_begin integration-root "integration tests as root (${#SCRIPTS[@]} scripts)"
                unpriv_ready=0
                if prepare_unpriv; then
                        unpriv_ready=1
                        export SBX_UNPRIV_SRC=$U_SRC SBX_UNPRIV_BUILD=$U_BUILD
                fi
                run_scripts root "" "$ROOT" "$BUILD" "$BUILD/src/cli/sandboxer" "${SCRIPTS[@]}"
                section_end
                unset SBX_UNPRIV_SRC SBX_UNPRIV_BUILD
                if [ "$unpriv" = 1 ]; then
                        section_begin integration-unpriv "integration tests as the unprivileged user $UNPRIV_USER"
                        if [ "$unpriv_ready" = 1 ]; then
                                run_scripts unpriv "$UNPRIV_USER" "$U_SRC" "$U_BUILD" "$U_BUILD/src/cli/sandboxer" "${SCRIPTS[@]}"
                        else
                                echo "  FAIL  cannot create the user $UNPRIV_USER"
                                record 0 1 0
                        fi
                        section_end
                fi
        else
                section_begin integration-user "integration tests as $(id -un) (not root: no root pass)"
                run_scripts user "" "$ROOT" "$BUILD" "$BUILD/src/cli/sandboxer" "${SCRIPTS[@]}"
                section_end
        fi
fi

# ---- asan: ASan+UBSan build, its unit tests, the integration scripts against its binary --------
if want asan; then
        section_begin asan "ASan+UBSan build: unit tests, then integration as root"
        asan_opts=("-Db_sanitize=address,undefined" -Db_lundef=false "-Dwerror=$WERROR" -Dtest_hooks=true)
        asan_ok=1
        {
                if [ -f "$ASAN_BUILD/meson-private/coredata.dat" ]; then
                        meson configure "$ASAN_BUILD" "${asan_opts[@]}" ||
                                meson setup --wipe "$ASAN_BUILD" "${asan_opts[@]}"
                else
                        rm -rf "$ASAN_BUILD"
                        meson setup "$ASAN_BUILD" "${asan_opts[@]}"
                fi && ninja -C "$ASAN_BUILD"
        } >"$LOGS/asan.build.log" 2>&1 || asan_ok=0
        if [ "$asan_ok" = 1 ]; then
                record 1 0 0
                echo "  ok    ASan+UBSan build ($ASAN_BUILD)"
                export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:print_summary=1
                export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:print_summary=1
                meson_suites "asan " "$ASAN_BUILD" --timeout-multiplier 3
                # Sanitizer reports from the CLI go to files, so a script that swallows the
                # binary's stderr still cannot hide one.
                ASAN_LOGS=$LOGS/asan-reports
                mkdir -p "$ASAN_LOGS"
                chmod 1777 "$ASAN_LOGS"
                ASAN_OPTIONS+=":log_path=$ASAN_LOGS/asan"
                UBSAN_OPTIONS+=":log_path=$ASAN_LOGS/ubsan"
                subset=()
                for s in ${SBX_ASAN_INTEGRATION:-${SCRIPTS[*]}}; do
                        [ -n "${SBX_ASAN_INTEGRATION:-}" ] || [ "$s" != test-load-leak.sh ] || continue
                        [ -n "${SBX_ASAN_INTEGRATION:-}" ] || [ "$s" != test-long-lived.sh ] || continue
                        # the microvm guests and the cgroup2 guest (test-*-guest.sh; QEMU's emulation
                        # where there is no KVM): once, in the root pass (as root and as sbxtest)
                        case $s in *microvm* | *-guest.sh) [ -n "${SBX_ASAN_INTEGRATION:-}" ] || continue ;; esac
                        subset+=("$s")
                done
                SBX_SCRIPT_TIMEOUT=${SBX_SCRIPT_TIMEOUT:-900} \
                        run_scripts asan "" "$ROOT" "$ASAN_BUILD" "$ASAN_BUILD/src/cli/sandboxer" "${subset[@]}"
                unset ASAN_OPTIONS UBSAN_OPTIONS
                mapfile -t reports < <(find "$ASAN_LOGS" -type f | sort)
                if [ ${#reports[@]} -gt 0 ]; then
                        echo "  FAIL  ${#reports[@]} sanitizer reports from the CLI during the integration scripts; the first:"
                        for r in "${reports[@]:0:3}"; do
                                echo "          $r:"
                                # a warning-only report has none of these lines: || true, or
                                # set -e would end the runner before its summary line
                                { grep -E 'ERROR|WARNING|runtime error|SUMMARY' "$r" || true; } | head -5 | sed 's/^/          > /'
                        done
                        record 0 1 0
                else
                        echo "  ok    no sanitizer report from the CLI"
                        record 1 0 0
                fi
        else
                echo "  FAIL  ASan+UBSan build failed; last lines of $LOGS/asan.build.log:"
                tail -n 25 "$LOGS/asan.build.log" | sed 's/^/          > /'
                record 0 1 0
        fi
        section_end
fi

# ---- clang: the tree built with clang ------------------------------------------------------------
# gcc compiles a goto past the initialisation of a _cleanup_ variable without a word (its
# -Wjump-misses-init flags every skipped initialisation, harmless ones too); clang refuses it.
# One test: the build, errors only (clang's own warnings are not gcc's and are not made errors).
CLANG_BUILD=$ROOT/build-clang
if want clang; then
        section_begin clang "the tree built with clang (what gcc lets through)"
        if command -v clang >/dev/null 2>&1; then
                {
                        if [ -f "$CLANG_BUILD/meson-private/coredata.dat" ]; then
                                true
                        else
                                rm -rf "$CLANG_BUILD"
                                CC=clang meson setup "$CLANG_BUILD" -Dwerror=false
                        fi && ninja -C "$CLANG_BUILD"
                } >"$LOGS/clang.build.log" 2>&1 && clang_ok=1 || clang_ok=0
                if [ "$clang_ok" = 1 ]; then
                        echo "  ok    built with clang ($CLANG_BUILD)"
                        record 1 0 0
                else
                        echo "  FAIL  the clang build failed; its errors ($LOGS/clang.build.log):"
                        { grep -E 'error:|note: jump' "$LOGS/clang.build.log" || tail -n 15 "$LOGS/clang.build.log"; } |
                                head -n 20 | sed 's/^/          > /'
                        record 0 1 0
                fi
        else
                echo "  SKIP  clang is not installed (scripts/setup.sh installs it)"
                record 0 0 1
        fi
        section_end
fi

# ---- format: clang-format --dry-run --Werror ---------------------------------------------------
if want format; then
        section_begin format "clang-format over src/ include/ tests/unit"
        if command -v clang-format >/dev/null 2>&1; then
                bad=()
                while IFS= read -r f; do
                        clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
                done < <(find src include tests/unit -type f -name '*.[ch]' 2>/dev/null | sort)
                if [ ${#bad[@]} -eq 0 ]; then
                        echo "  ok    every file is formatted"
                        record 1 0 0
                elif [ "${SBX_STRICT_FORMAT:-1}" = 1 ]; then
                        echo "  FAIL  ${#bad[@]} files differ from .clang-format: ${bad[*]}"
                        record 0 1 0
                else
                        echo "  SKIP  ${#bad[@]} files differ from .clang-format (not enforced: SBX_STRICT_FORMAT=0): ${bad[*]}"
                        record 0 0 1
                fi
        else
                echo "  SKIP  clang-format is not installed"
                record 0 0 1
        fi
        section_end
fi

finish
