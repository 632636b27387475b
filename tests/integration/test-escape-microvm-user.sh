#!/usr/bin/env bash
# The escape suite against the microvm backend (strict mode) as an ordinary user: test-escape.sh
# run as `sbxtest` (qemu then runs as that user, the guest image is cached under its
# ~/.cache), then kill -9 of that user's sandboxer must leave none of its qemu. The microvm
# scripts run once per CI, in the root pass (QEMU's emulation where there is no KVM: seconds per
# guest), so this one is root's way of running them as the ordinary user; test-escape-microvm.sh
# is the same suite as root (two scripts: each stays within SBX_SCRIPT_TIMEOUT).
# The user is the one scripts/test.sh creates; without it, this script skips. The tree it runs is
# SBX_UNPRIV_SRC / SBX_UNPRIV_BUILD when scripts/test.sh passes them (a copy that user can read
# when the repo sits under a 0700 home), else SBX_SRC / SBX_BUILD when that user can read them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"

U=sbxtest
[ "$(id -u)" = 0 ] || skip_all "the microvm guests run once per CI, in the root pass (QEMU's emulation: seconds per guest); it runs them as $U"
command -v qemu-system-x86_64 >/dev/null || skip_all "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
ls /boot/vmlinuz-* >/dev/null 2>&1 || skip_all "no guest kernel in /boot (apt-get install linux-image-amd64)"
id "$U" >/dev/null 2>&1 || skip_all "no user $U (scripts/test.sh creates it: useradd --create-home --user-group --shell /bin/bash $U)"
UHOME=$(getent passwd "$U" | cut -d: -f6)
runuser -u "$U" -- test -d "$UHOME" -a -w "$UHOME" ||
        skip_all "$U's home ${UHOME:-<none>} is not a directory it can write (the guest image is cached under it)"

# A tree the user can read: the runner's copy, else this one.
US=$SBX_SRC UB=$SBX_BUILD
if [ "${SBX_TEST_PASS:-}" = root ] && [ -n "${SBX_UNPRIV_SRC:-}" ] && [ -n "${SBX_UNPRIV_BUILD:-}" ]; then
        US=$SBX_UNPRIV_SRC UB=$SBX_UNPRIV_BUILD
fi
# shellcheck disable=SC2016 # expanded by that sh
runuser -u "$U" -- sh -c 'test -x "$1/src/cli/sandboxer" && test -r "$1/src/init/sandboxer-init" &&
        test -x "$1/tests/escape/read_file" && test -r "$2/tests/integration/test-escape.sh" &&
        test -r "$2/tests/escape/manifest.tsv"' sh "$UB" "$US" ||
        skip_all "$U cannot read the tree ($US, build $UB): run it through scripts/test.sh, which passes a copy it can (SBX_UNPRIV_SRC, SBX_UNPRIV_BUILD), or from a tree it can read"
USBX=$UB/src/cli/sandboxer

# as_user COMMAND... — as the user, with a clean environment like scripts/test.sh's unprivileged
# pass, from the tree (the caller's directory may be out of its reach).
UENV=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$UHOME" USER="$U"
        LOGNAME="$U" LANG=C.UTF-8 TERM=dumb SANDBOXER="$USBX" SBX_BUILD="$UB" SBX_SRC="$US")
[ -z "${CI:-}" ] || UENV+=(CI="$CI")
for v in $(compgen -e | grep -E '^SBX_' || true); do
        case $v in SBX_BUILD | SBX_SRC | SBX_TEST_PASS | SBX_BACKEND | SBX_UNPRIV_* | SBX_SCRIPT_TIMEOUT) ;; *) UENV+=("$v=${!v}") ;; esac
done
as_user() { (cd "$US" && runuser -u "$U" -- "${UENV[@]}" "$@"); }

# ---- the escape suite, as the user: its TAP lines renumbered into this script's --------------
T0=$SECONDS
plan_seen="" bailed=0
while IFS= read -r l; do
        if [[ $l =~ ^(not\ )?ok\ [0-9]+(.*)$ ]]; then
                _tap_n=$((_tap_n + 1))
                [ -z "${BASH_REMATCH[1]}" ] || [[ ${BASH_REMATCH[2]} == *"# TODO"* ]] || _tap_failed=$((_tap_failed + 1))
                echo "${BASH_REMATCH[1]}ok $_tap_n${BASH_REMATCH[2]}"
        elif [[ $l =~ ^1\.\.([0-9]+)(.*)$ ]]; then
                plan_seen=$l
        elif [[ $l == "Bail out!"* ]]; then
                bailed=1
                echo "# as $U: $l"
        else
                echo "$l"
        fi
done < <(as_user SBX_BACKEND=microvm bash "$US/tests/integration/test-escape.sh" 2>"$SBX_TMP/suite.err" </dev/null)
wait $! 2>/dev/null
suite_rc=$?
n_suite=$_tap_n suite_failed=$_tap_failed
if [[ $plan_seen == "1..0 # SKIP"* ]] && [ "$n_suite" = 0 ]; then
        skip "the escape suite as $U: ${plan_seen#1..0 # SKIP }"
else
        ok "$([ "$bailed" = 0 ] && [ "$plan_seen" = "1..$n_suite" ] && { [ "$suite_rc" = 0 ] || [ "$suite_failed" -gt 0 ]; } && echo 0 || echo 1)" \
                "the escape suite as $U ran to its plan (${plan_seen:-no plan}, $n_suite tests, exit $suite_rc)" ||
                diag "stderr: $(tail -c 600 "$SBX_TMP/suite.err")"
fi
diag "the escape suite as $U: $((SECONDS - T0)) s"

# ---- kill -9 of the user's sandboxer leaves none of its qemu ---------------------------------
VPOL=$SBX_TMP/policy-vm.yaml
sed 's/^strict: .*/strict: { required_when: [], allow_emulation: true }/' "$POL" >"$VPOL"
chmod 644 "$VPOL"
# descendants PID — every process under PID
descendants() {
        local c
        for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done
}
KD=$SBX_TMP/kill # the user's: its sandboxer's pid is written there
mkdir -p "$KD" && chown "$U:" "$KD"
# shellcheck disable=SC2016 # expanded by that sh
as_user sh -c 'echo $$ >"$0"; exec "$@"' "$KD/pid" \
        "$USBX" run --policy "$VPOL" --backend microvm --mode strict --timeout 60 -- /bin/sleep 100 \
        >"$KD/out" 2>"$KD/err" </dev/null &
wrapper=$!
spid=""
for _ in $(seq 100); do
        spid=$(cat "$KD/pid" 2>/dev/null)
        [ -n "$spid" ] && break
        sleep 0.1
done
# its qemu: a process under that sandboxer (never any other's: others may boot guests meanwhile)
qemus=""
if [[ $spid =~ ^[0-9]+$ ]]; then
        for _ in $(seq 300); do
                qemus=""
                for p in $(descendants "$spid"); do
                        [[ $(cat "/proc/$p/comm" 2>/dev/null) == qemu-system-* ]] && qemus+="$p "
                done
                [ -n "$qemus" ] && break
                sleep 0.1
        done
fi
ok "$([ -n "$qemus" ] && echo 0 || echo 1)" "as $U: sandboxer (${spid:-no pid}) started qemu (${qemus% })" ||
        diag "stderr: $(head -c 400 "$KD/err")"
sleep 2
qowner=$(for p in $qemus; do stat -c %U "/proc/$p"; done | sort -u | tr '\n' ' ')
is "${qowner% }" "${qemus:+$U}" "as $U: its qemu runs as $U"
if [ -n "$qemus" ]; then
        kill -9 "$spid"
        wait "$wrapper" 2>/dev/null
        left=""
        for _ in $(seq 50); do
                left=""
                for p in $qemus; do [[ $(cat "/proc/$p/comm" 2>/dev/null) == qemu-system-* ]] && left+="$p "; done
                [ -z "$left" ] && break
                sleep 0.1
        done
        is "${left% }" "" "as $U: kill -9 of sandboxer leaves none of its qemu"
        for p in $left; do [ "$(stat -c %U "/proc/$p" 2>/dev/null)" = "$U" ] && kill -9 "$p"; done
else
        [[ ! $spid =~ ^[0-9]+$ ]] || kill -9 "$spid" 2>/dev/null
        wait "$wrapper" 2>/dev/null
        skip "as $U: kill -9 of sandboxer: no qemu of its to look for"
fi

done_testing
