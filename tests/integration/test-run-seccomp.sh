#!/usr/bin/env bash
# The seccomp fence, reached with namespaces in place: each call is first shown to work (or to
# fail differently) outside the sandbox, so no check is vacuous. Also: missing kernel features
# fail closed (a wrapper answers ENOSYS for Landlock, EPERM for namespaces, ENOSYS for clone3).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"
require_backend native # its sandboxes are native ones (skipped with the reason where the host cannot)

PROBE=$SBX_BUILD/tests/tools/sbx-probe
WRAP=$SBX_BUILD/tests/tools/sbx-syscall-wrap
[ -x "$PROBE" ] || skip_all "sbx-probe not built ($PROBE)"
[ "$(uname -m)" = x86_64 ] || skip_all "the probes are x86_64 syscall numbers"
ws=$SBX_TMP/probe; mkdir -p "$ws"; cp "$PROBE" "$ws/"; chmod -R a+rX "$ws"
S=(--policy "$POL" --backend native --workspace "$ws")

# name, syscall number and args; expected errno inside (EPERM: refused by the filter).
while read -r name nr args; do
        [ -n "$name" ] || continue
        run_sbx "${S[@]}" -- ./sbx-probe nr "$nr" $args
        is "$SBX_OUT" "errno EPERM" "seccomp refuses $name ($nr) inside the sandbox"
done <<'LIST'
mount 165 0 0 0 0 0
umount2 166 0 0
pivot_root 155 0 0
chroot 161 0
unshare 272 0
setns 308 0 0
ptrace 101 0 0 0 0
process_vm_readv 310 0 0 0 0 0 0
keyctl 250 0 0 0 0 0
add_key 248 0 0 0 0 0
bpf 321 0 0 0
perf_event_open 298 0 0 0 0 0
userfaultfd 323 0
io_uring_setup 425 0 0
kexec_load 246 0 0 0 0
init_module 175 0 0 0
reboot 169 0 0 0 0
swapon 167 0 0
acct 163 0
fsopen 430 0 0
open_tree 428 0 0 0
move_mount 429 0 0 0 0 0
mount_setattr 442 0 0 0 0 0
clone(CLONE_NEWUSER) 56 0x10000000 0 0 0 0
socket(AF_PACKET) 41 17 3 0
socket(AF_VSOCK) 41 40 1 0
socket(AF_INET,SOCK_RAW) 41 2 3 1
LIST

# Compatibility answers: ENOSYS, so libc takes its fallback.
run_sbx "${S[@]}" -- ./sbx-probe clone3
is "$SBX_OUT" "errno ENOSYS" "clone3 answers ENOSYS (libc falls back to clone)"
for nr in 470 600 1000; do
        run_sbx "${S[@]}" -- ./sbx-probe nr $nr
        is "$SBX_OUT" "errno ENOSYS" "syscall $nr (beyond the filter's table) answers ENOSYS"
done
# Ordinary calls still work.
run_sbx "${S[@]}" -- ./sbx-probe nr 39
like "$SBX_OUT" '^ok [0-9]+$' "getpid works"
run_sbx "${S[@]}" -- ./sbx-probe nr 41 2 1 0
like "$SBX_OUT" '^ok [0-9]+$' "an ordinary TCP socket (own network namespace) can be created"

# TIOCSTI: works on a pty outside, refused inside (also with garbage in the upper 32 bits).
out=$("$PROBE" tiocsti 2>&1)
if [ "$(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null || echo 1)" = 1 ]; then
        is "$out" "ok 0
ok 0" "outside: TIOCSTI on its own pty succeeds (the probe is not vacuous)"
else
        skip "outside TIOCSTI control: dev.tty.legacy_tiocsti=0 refuses it on this host anyway"
fi
run_sbx "${S[@]}" -- ./sbx-probe tiocsti
is "$SBX_OUT" "errno EPERM
errno EPERM" "inside: TIOCSTI refused, including a command with the upper 32 bits set"

# Foreign ABIs: the process is killed. Where the host itself refuses the i386 ABI (int 0x80 dies
# by SIGSEGV outside any sandbox, as on some hypervisors) the inside check would prove nothing.
if host_has i386; then
        ok 0 "outside: int 0x80 returns (the check inside is not vacuous)"
        run_sbx "${S[@]}" -- ./sbx-probe int80
        is "$SBX_OUT" "calling" "inside: the i386 ABI (int 0x80) never returns"
        is "$SBX_RC/$(json_get "$SBX_REPORT" 'd["status"]')" "159/signaled" "killed by SIGSYS: exit 159, status signaled"
else
        skip "$HOST_WHY: the i386 checks inside would be vacuous" 3
fi
# x32 calls are killed by the filter whether or not the kernel has them (it looks at the number).
run_sbx "${S[@]}" -- ./sbx-probe x32
is "$SBX_OUT/$SBX_RC" "calling/159" "inside: the x32 ABI is killed too"

# The report names the seccomp fence.
run_sbx "${S[@]}" -- /bin/true
like "$(json_get "$SBX_REPORT" 'd["config"]["fences"]["seccomp"]')" 'ENOSYS' "report: config.fences.seccomp"

# --- fail closed when a kernel feature is missing ---
if [ -x "$WRAP" ]; then
        "$WRAP" --enosys landlock_create_ruleset --enosys landlock_add_rule --enosys landlock_restrict_self -- \
                "$SANDBOXER" run --policy "$POL" --report "$SBX_TMP/ll.json" -- /bin/echo RAN >"$SBX_TMP/ll.out" 2>"$SBX_TMP/ll.err"
        rc=$?
        is "$rc" 125 "Landlock missing (ENOSYS): exit 125"
        like "$(cat "$SBX_TMP/ll.err")" 'Landlock.*ABI 0' "the message names the missing feature"
        ok $([ ! -s "$SBX_TMP/ll.out" ] && echo 0 || echo 1) "and the command never ran"
        is "$(json_get "$SBX_TMP/ll.json" 'd["status"]')" setup_error "report: setup_error"
        "$WRAP" --eperm-ns -- "$SANDBOXER" run --policy "$POL" --backend native -- /bin/echo RAN >"$SBX_TMP/ns.out" 2>"$SBX_TMP/ns.err"
        rc=$?
        is "$rc" 125 "namespaces refused (EPERM, as in Docker): exit 125 on --backend native"
        like "$(cat "$SBX_TMP/ns.err")" 'namespaces refused|cannot create namespaces' "the message names the cause"
        "$WRAP" --enosys clone3 -- "$SANDBOXER" run --policy "$POL" -- /bin/echo fallback-ok >"$SBX_TMP/c3.out" 2>&1
        is "$(cat "$SBX_TMP/c3.out")" fallback-ok "clone3 missing (ENOSYS): sandboxer falls back to clone"
        "$WRAP" --enosys openat2 -- "$SANDBOXER" run --policy "$POL" -- /bin/echo openat2-ok >"$SBX_TMP/o2.out" 2>&1
        is "$(cat "$SBX_TMP/o2.out")" openat2-ok "openat2 missing (ENOSYS): runs unchanged"
else
        skip "sbx-syscall-wrap not built" 8
fi
# The compiled programs are cached (keyed by options and build): a damaged or foreign cache file
# is never used — the filter is compiled again and still refuses.
export SANDBOXER_CACHE_DIR=$SBX_TMP/cache
run_sbx "${S[@]}" -- ./sbx-probe nr 272 0
cached=("$SANDBOXER_CACHE_DIR"/seccomp-*.bpf)
[ -s "${cached[0]}" ]
ok $? "the seccomp programs are cached ($(basename "${cached[0]}"))"
run_sbx "${S[@]}" -- ./sbx-probe nr 272 0
is "$SBX_OUT" "errno EPERM" "from the cache: unshare still refused"
for damage in truncate garbage; do
        if [ $damage = truncate ]; then truncate -s 100 "${cached[0]}"; else head -c 1056 /dev/urandom >"${cached[0]}"; fi
        run_sbx "${S[@]}" -- ./sbx-probe nr 272 0
        is "$SBX_OUT:$SBX_RC" "errno EPERM:1" "a cache file damaged ($damage): compiled again, unshare still refused"
done
chmod 666 "${cached[0]}"
run_sbx "${S[@]}" -- ./sbx-probe nr 165 0 0 0 0 0
is "$SBX_OUT" "errno EPERM" "a cache file others may write is not read"
unset SANDBOXER_CACHE_DIR
# An ordinary user's cache is ~/.cache/sandboxer; a fresh account has no ~/.cache yet, and
# without it every run compiled its filter again (~0.2 ms).
if [ "$(id -u)" != 0 ]; then
        mkdir "$SBX_TMP/home"
        HOME=$SBX_TMP/home run_sbx "${S[@]}" -- /bin/true
        cached=("$SBX_TMP"/home/.cache/sandboxer/seccomp-*.bpf)
        [ -s "${cached[0]}" ] && [ "$(stat -c %a "$SBX_TMP/home/.cache")" = 700 ]
        ok $? "no ~/.cache yet: made (0700), and the programs cached in ~/.cache/sandboxer"
else
        skip "root's cache is /var/cache/sandboxer: the ~/.cache case is checked in the unprivileged pass"
fi
assert_no_leftovers
done_testing
