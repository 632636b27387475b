#!/usr/bin/env bash
# The cgroup v2 limits on a real cgroup-v2-only kernel: this host may be v1 or hybrid (its memory,
# pids and cpu on v1), so the native backend's v2 path (src/lib/isolate/cgroup*.c) is otherwise
# checked on a fake cgroupfs only. Here a QEMU guest (TCG where there is no KVM) boots the host's
# Debian kernel the way the microvm backend does (its cached uncompressed vmlinux and TSC rate, an
# initramfs made by the same code, tests/tools/sbx-guest-image) with tests/tools/sbx-guest-init as
# PID 1: the host's / read-only over 9p as the root, tmpfs on /tmp and /run, and only cgroup2 at
# /sys/fs/cgroup (nsdelegate; memory, pids, cpu enabled for children). In it
# cgroup2-guest/guest.sh runs, as root and then as an ordinary user (sbxtest, else nobody) in a
# subtree delegated to it as systemd's Delegate= does, each sandboxer in a scope of its own
# (what `systemd-run --user --scope -p Delegate=yes` gives):
#   - test-run-limits.sh unchanged (memory bomb → memory_limit with MemoryLimitViolation, fork and
#     thread bombs held to pids with ProcessLimitViolation, cpus 0.5, mechanisms cgroup_v2, no
#     leftovers, clean-up after a killed supervisor), asserted to take its cgroup_v2 branch;
#   - the group's cpu.max/memory.max/memory.swap.max/pids.max, a spinner held to cpus 0.25;
#   - CLONE_INTO_CGROUP, seen in the guest kernel's trace: a kprobe on cgroup_can_fork() shows
#     sandboxer's clone3 with the flag, and no cgroup_attach_task event moves a process into a
#     run's group by pid.
# The guest's console carries each part's TAP lines, renumbered here; a part that never ended (a
# guest that died, or hung until SBX_GUEST_TIMEOUT, 420 s, when qemu is killed) fails. ~2-2.5
# minutes on an idle 2-CPU host under TCG (the phases' times are in the diag lines; each
# test-run-limits.sh pass ~45 s, mostly python starting over 9p); twice that on a busy one. A
# checkout, build or binary under a directory the guest mounts its own tmpfs on (/tmp, /run,
# /var/tmp, /dev/shm: CI clones into $(mktemp -d)) is one more read-only 9p export, which
# sbx-guest-init mounts at the same path over that tmpfs (--9p=TAG:PATH); the guest's scratch
# (the parts' SBX_TMP, TMPDIR=/tmp) stays on its own tmpfs. Under /dev, /proc or /sys: refused.
# By hand: SBX_GUEST_PARTS=setup,limits-root runs only those parts; SBX_GUEST_CONSOLE=FILE keeps
# the console. Root only, once per CI: scripts/test.sh runs it in the root pass and leaves it out
# of the ASan pass (guests under QEMU's emulation); the unprivileged pass skips it.
if [ "$(id -u)" != 0 ]; then
        echo "1..0 # SKIP the cgroup2 guest runs once per CI, in the root pass (QEMU's emulation: minutes)"
        exit 0
fi
command -v qemu-system-x86_64 >/dev/null || { echo "1..0 # SKIP qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"; exit 0; }
ls /boot/vmlinuz-* >/dev/null 2>&1 || { echo "1..0 # SKIP no guest kernel in /boot (apt-get install linux-image-amd64)"; exit 0; }
. "$(dirname "$0")/lib.sh"

SRC=$(cd "$(dirname "$0")/../.." && pwd -P) # physical: a symlink into /tmp is hidden in the guest too
GINIT=$SBX_BUILD/tests/tools/sbx-guest-init GIMAGE=$SBX_BUILD/tests/tools/sbx-guest-image
for f in "$GINIT" "$GIMAGE" "$SANDBOXER"; do
        [ -x "$f" ] || { echo "Bail out! $f is not built (ninja -C $SBX_BUILD)"; exit 1; }
done
SBX_ABS=$(readlink -f "$SANDBOXER") BUILD_ABS=$(readlink -f "$SBX_BUILD")
case "$SRC$BUILD_ABS$SBX_ABS" in *[[:space:]]*)
        echo "Bail out! the guest's command line cannot carry paths with spaces: $SRC, $BUILD_ABS"; exit 1 ;;
esac
# What the guest's own tmpfs hide is exported again and mounted at the same path over them: the
# outermost of the checkout, the build and the binary's directory, each once (the build is
# usually inside the checkout: one export). virtio-mmio transports of -M microvm are few (8):
# the root and at most 3 more.
shares=() share_args=()
for d in "$SRC" "$BUILD_ABS" "${SBX_ABS%/*}"; do
        case $d/ in
        /tmp/* | /run/* | /var/tmp/* | /dev/shm/*) ;;
        /dev/* | /proc/* | /sys/*)
                echo "Bail out! $d is under /dev, /proc or /sys, which the guest fills with its own kernel file systems: use a checkout and build elsewhere"
                exit 1
                ;;
        *) continue ;;
        esac
        case $d/ in /tmp/ | /run/ | /var/tmp/ | /dev/shm/)
                echo "Bail out! $d is itself a directory the guest mounts its own tmpfs on: use a checkout and build in a directory below it"
                exit 1
                ;;
        esac
        for s in "${shares[@]}"; do [[ $d/ == "$s"/* ]] && continue 2; done
        keep=()
        for s in "${shares[@]}"; do [[ $s/ == "$d"/* ]] || keep+=("$s"); done
        shares=(${keep[@]+"${keep[@]}"} "$d")
done
qshares=()
for i in "${!shares[@]}"; do
        qshares+=(-fsdev "local,id=share$i,path=${shares[i]//,/,,},security_model=none,readonly=on,multidevs=remap"
                -device "virtio-9p-device,fsdev=share$i,mount_tag=share$i")
        share_args+=("--9p=share$i:${shares[i]}")
done
QPID=""
cleanup() {
        [ -z "$QPID" ] || kill "$QPID" 2>/dev/null
        sbx_cleanup
}
trap cleanup EXIT

# --- the image: the microvm backend's cache (a miss costs a few seconds, once) ---
t0=$SECONDS
img=$("$GIMAGE" "$GINIT" 2>&1)
ok $? "guest image: kernel and initramfs ($((SECONDS - t0)) s)" || { diag "$img"; done_testing; }
kernel=$(sed -n 's/^kernel=//p' <<<"$img") initrd=$(sed -n 's/^initrd=//p' <<<"$img")
release=$(sed -n 's/^release=//p' <<<"$img") tsc=$(sed -n 's/^tsc_khz=//p' <<<"$img")
# without the rate the guest calibrates its clock, and ~1 boot in 10 hangs doing it
[ -n "$tsc" ]
ok $? "the host's TSC rate for tsc_early_khz: ${tsc:-unknown} kHz" || diag "$(sed -n 's/^tsc_why=//p' <<<"$img")"

# --- the guest ---
LOG=$SBX_TMP/console.log
limit=${SBX_GUEST_TIMEOUT:-420}
cmdline="console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init cryptomgr.notests random.trust_cpu=on"
cmdline+=" i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd${tsc:+ tsc_early_khz=$tsc}"
cmdline+=" --${share_args[*]:+ ${share_args[*]}} $SRC/tests/integration/cgroup2-guest/guest.sh $SRC $BUILD_ABS $SBX_ABS ${SBX_GUEST_PARTS:-}"
t0=$SECONDS
timeout -k 5 "$limit" qemu-system-x86_64 -M microvm,x-option-roms=off,rtc=on -accel tcg -cpu max -smp 2 -m 512M \
        -nodefaults -no-user-config -display none -serial stdio -no-reboot \
        -kernel "$kernel" -initrd "$initrd" -append "$cmdline" \
        -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
        -device virtio-9p-device,fsdev=hostroot,mount_tag=hostroot ${qshares[@]+"${qshares[@]}"} </dev/null >"$LOG" 2>&1 &
QPID=$!
wait $QPID
qrc=$?
QPID=""
[ -z "${SBX_GUEST_CONSOLE:-}" ] || cp "$LOG" "$SBX_GUEST_CONSOLE" # keep it (by hand: SBX_GUEST_CONSOLE=FILE)
guest_s=$((SECONDS - t0))
diag "guest: kernel $release, TCG, 2 vCPUs, 512 MiB: $guest_s s in all (qemu status $qrc)"
[ "$qrc" != 124 ] && [ "$qrc" != 137 ]
ok $? "the guest ended by itself within ${limit} s" || diag "console (last lines):" "$(tail -n 30 "$LOG")"
grep -q '^sbx-guest: root ready' "$LOG"
ok $? "the guest booted into the host's root over 9p${shares[*]:+, with ${shares[*]} exported again over its tmpfs}" ||
        diag "console (last lines):" "$(tail -n 30 "$LOG")"

# --- the parts' TAP, renumbered: "R 0|1|S TEXT", "D TEXT" ---
while IFS= read -r line; do
        kind=${line%% *} rest=${line#* }
        case $kind in
        R)
                st=${rest%% *} text=${rest#* }
                if [ "$st" = S ]; then skip "$text"; else ok "$st" "$text"; fi
                ;;
        D) diag "$rest" ;;
        *) ;;
        esac
done < <(python3 - "$LOG" <<'EOF'
import re, sys
PARTS = ["setup", "limits-root", "v2-root", "clone-root", "delegate", "limits-user", "v2-user", "clone-user"]
parts = {p: {"out": [], "err": [], "begun": False, "end": None} for p in PARTS}
done = False
for raw in open(sys.argv[1], encoding="utf-8", errors="replace"):
    l = raw.rstrip("\r\n")
    m = re.match(r"^SBXG-(BEGIN|END) (\S+)(?: (-?\d+) (\d+))?$", l)
    if m and m.group(2) in parts:
        if m.group(1) == "BEGIN":
            parts[m.group(2)]["begun"] = True
        else:
            parts[m.group(2)]["end"] = (int(m.group(3)), int(m.group(4)))
        continue
    m = re.match(r"^SBXG(-ERR)?\|([^|]+)\|(.*)$", l)
    if m and m.group(2) in parts:
        parts[m.group(2)]["err" if m.group(1) else "out"].append(m.group(3))
    if l == "SBXG-DONE":
        done = True

def R(st, text): print("R %s %s" % (st, text.replace("\n", " ")))
def D(text): print("D " + text)

timing = []
for name in PARTS:
    p = parts[name]
    n = failed = 0
    planned = None
    skipped_all = None
    for l in p["out"]:
        m = re.match(r"^1\.\.(\d+)\s*(?:#\s*(?:skip\w*\s*)?(.*))?$", l, re.I)
        if m:
            planned = int(m.group(1))
            if planned == 0:
                skipped_all = (m.group(2) or "").strip()
            continue
        m = re.match(r"^(not )?ok\b\s*\d*\s*(?:-\s*)?(.*)$", l)
        if m:
            n += 1
            text = m.group(2)
            if re.search(r"#\s*SKIP\b", text, re.I):
                R("S", "%s: %s" % (name, re.sub(r"^#\s*SKIP\s*", "", text, flags=re.I)))
            else:
                R(1 if m.group(1) else 0, "%s: %s" % (name, text))
                failed += bool(m.group(1))
        elif l.startswith("#"):
            D("%s: %s" % (name, l.lstrip("# ")))
    if not p["begun"] or p["end"] is None:
        R(1, "%s: the part ended (the guest %s)" % (name, "stopped during it" if p["begun"] else "never started it"))
        for l in p["err"][-10:]:
            D("%s stderr: %s" % (name, l))
        continue
    rc, secs = p["end"]
    timing.append("%s %ds" % (name, secs))
    ok = rc == 0 and skipped_all is None and (planned is None or planned == n) and n > 0
    why = []
    if skipped_all is not None: why.append("skipped as a whole: " + skipped_all)
    if planned is not None and planned != n: why.append("planned %d, ran %d" % (planned, n))
    if n == 0: why.append("no TAP line")
    if rc != 0: why.append("status %d" % rc)
    R(0 if ok else 1, "%s: complete in %d s (%d tests%s)" % (name, secs, n, "; " + ", ".join(why) if why else ""))
    if not ok or failed:
        for l in p["err"][-15:]:
            D("%s stderr: %s" % (name, l))
    if name.startswith("limits-"):
        # test-run-limits.sh says which branch it took: a host it judged without cgroups would
        # take the other one and pass without a single cgroup check
        R(0 if any(re.search(r"limits by cgroup_v2$", l) for l in p["out"]) else 1,
          "%s: test-run-limits.sh took its cgroup branch, limits by cgroup_v2" % name)
D("phases: " + ", ".join(timing))
R(0 if done else 1, "the guest ran every part")
EOF
)
grep -q '^sbx-guest: exit 0' "$LOG"
ok $? "the guest's script exited 0" || diag "$(grep '^sbx-guest:' "$LOG")"
diag "total $SECONDS s"
done_testing
