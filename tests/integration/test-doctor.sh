#!/usr/bin/env bash
# test-doctor.sh — `sandboxer doctor`: JSON shape, exit status agrees with the backends,
# native available as root on a host that allows namespaces, bad arguments exit 125. TAP.
set -u

SANDBOXER="${SANDBOXER:?SANDBOXER must name the sandboxer binary}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-doctor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

n=0
failed=0
ok() { # ok COND-STATUS DESCRIPTION
        n=$((n + 1))
        if [ "$1" -eq 0 ]; then
                echo "ok $n - $2"
        else
                echo "not ok $n - $2"
                failed=$((failed + 1))
        fi
}
skip() {
        n=$((n + 1))
        echo "ok $n # SKIP $1"
}
diag() { sed 's/^/# /' "$@"; }

echo "1..21"

"$SANDBOXER" doctor --json >"$tmp/out.json" 2>"$tmp/err"
rc=$?
ok $([ $rc -eq 0 ] || [ $rc -eq 1 ]; echo $?) "doctor --json exits 0 or 1 (got $rc)"
[ $rc -le 1 ] || diag "$tmp/err"

python3 - "$tmp/out.json" >"$tmp/shape" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d.get("kernel"), str) and d["kernel"], "kernel"
assert d.get("landlock_abi") is None or isinstance(d["landlock_abi"], int), "landlock_abi"
assert d.get("cgroup") in ("v1", "v2", "hybrid", "none"), "cgroup"
assert isinstance(d.get("unprivileged"), bool), "unprivileged"
assert d.get("build", {}).get("libc") in ("musl", "glibc"), "build.libc"
assert isinstance(d["build"].get("version"), str) and d["build"]["version"], "build.version"
EOF
ok $? "output is JSON with build, kernel, landlock_abi, cgroup, unprivileged"
[ -s "$tmp/shape" ] && diag "$tmp/shape"

# the libc doctor names is the one the binary was linked with: a musl CLI is a static PIE
libc=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["build"]["libc"])' "$tmp/out.json" 2>/dev/null)
"$SANDBOXER" doctor 2>/dev/null | head -n1 >"$tmp/first"
st=0
grep -q "linked against $libc" "$tmp/first" || st=1
if [ "$libc" = musl ] && command -v readelf >/dev/null 2>&1 && readelf -l "$SANDBOXER" 2>/dev/null | grep -q INTERP; then
        echo "a musl CLI with a program interpreter (dynamically linked)" >>"$tmp/first"
        st=1
fi
ok $st "doctor names the CLI's libc ($libc) in its first line, and a musl CLI has no loader"
[ "$st" = 0 ] || diag "$tmp/first"

python3 - "$tmp/out.json" >"$tmp/feat" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["features"]
for name in ("namespaces", "landlock", "seccomp", "seccomp_user_notif", "no_new_privs", "landlock_audit", "pidfd_open",
             "clone3", "close_range", "openat2", "cgroup", "cgroup_memory", "cgroup_pids", "cgroup_cpu",
             "cgroup_freezer", "syscalls_32bit"):
    assert name in f, "missing feature " + name
for name, v in f.items():
    assert isinstance(v.get("available"), bool), name + ".available"
    assert isinstance(v.get("detail"), str) and v["detail"], name + ".detail"
EOF
ok $? "features: every probe present with available (bool) and a detail"
[ -s "$tmp/feat" ] && diag "$tmp/feat"

python3 - "$tmp/out.json" >"$tmp/back" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
b = d["backends"]
assert set(b) == {"native", "landlock", "bwrap", "firejail", "podman", "docker", "microvm"}, sorted(b)
for name, v in b.items():
    assert isinstance(v.get("available"), bool), name + ".available"
    assert isinstance(v.get("reason"), str) and v["reason"], name + ": no reason given"
    assert v.get("cause") in ("none", "not_implemented", "tool_missing", "host"), name + ".cause: %r" % v.get("cause")
    assert (v["cause"] == "none") == v["available"], name + ": cause none exactly when available"
    assert (v["cause"] == "not_implemented") == (not v["implemented"]), name + ": not_implemented exactly when so"
    pe = v.get("persistent") or {}
    assert pe.get("yes") == (name in ("native", "landlock", "microvm")), name + ".persistent.yes: %r" % pe
    assert isinstance(pe.get("how"), str) and pe["how"], name + ".persistent: no how or why"
EOF
ok $? "backends: all seven, each with available, a reason and a cause that agrees, and whether it holds persistent sandboxes (why not)"
[ -s "$tmp/back" ] && diag "$tmp/back"

any=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(int(any(v["available"] for v in d["backends"].values())))' "$tmp/out.json" 2>/dev/null)
ok $([ "$any" = 1 ] && [ $rc -eq 0 ] || { [ "$any" = 0 ] && [ $rc -eq 1 ]; }; echo $?) \
        "exit status 0 iff some backend is available (any=$any, rc=$rc)"

python3 - "$tmp/out.json" >"$tmp/cons" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
f, n = d["features"], d["backends"]["native"]
if n["available"]:
    assert f["namespaces"]["available"] and f["seccomp"]["available"], "native available without its features"
if not f["namespaces"]["available"]:
    assert not n["available"], "native available though namespaces are not"
    assert f["namespaces"]["detail"] in n["reason"], "native's reason does not carry the namespaces detail"
EOF
ok $? "native is available exactly when namespaces and seccomp are, and says why not"
[ -s "$tmp/cons" ] && diag "$tmp/cons"

# Root with no seccomp filter and a fully visible /proc: nothing legitimate stops namespaces
# (container runtimes restrict exactly these two), so native must be available.
seccomp_mode=$(awk '/^Seccomp:/ {print $2}' /proc/self/status)
proc_masked=$(awk '$5 ~ "^/proc/" && $5 !~ "^/proc/sys/fs/binfmt_misc" {print $5}' /proc/self/mountinfo | head -3 | tr '\n' ' ')
if [ "$(id -u)" -eq 0 ] && [ "${seccomp_mode:-0}" = 0 ] && [ -z "$proc_masked" ]; then
        native=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["backends"]["native"]["available"])' "$tmp/out.json" 2>&1)
        ok $([ "$native" = True ]; echo $?) "as root, unfiltered, /proc fully visible: native is available"
        [ "$native" = True ] || python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["backends"]["native"]["reason"])' "$tmp/out.json" | diag
else
        skip "uid $(id -u), seccomp mode ${seccomp_mode:-?}, /proc overmounts '${proc_masked}': native may rightly be unavailable"
fi

# a backend whose program is not in PATH: cause tool_missing (a test suite tells that from the host)
env PATH=/nonexistent "$SANDBOXER" doctor --json >"$tmp/nopath.json" 2>/dev/null
ok $(python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))["backends"]
assert all(b[k]["cause"] == "tool_missing" and "not found in PATH" in b[k]["reason"] for k in ("bwrap", "firejail", "podman", "docker")), b
assert b["native"]["cause"] in ("none", "host")' "$tmp/nopath.json" 2>&1 >/dev/null; echo $?) \
        "PATH without the tools: bwrap, firejail, podman and docker say tool_missing, not host"

# 32-bit system calls: doctor's trial agrees with one made here outside any sandbox; under a
# filter that kills them (as a host that refuses them does) it says refused, and why
probe=${SBX_BUILD:-$(dirname "$SANDBOXER")/../..}/tests/tools/sbx-probe
wrap=${SBX_BUILD:-$(dirname "$SANDBOXER")/../..}/tests/tools/sbx-syscall-wrap
s32=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["features"]["syscalls_32bit"]; print(f["available"], f["detail"])' "$tmp/out.json" 2>&1)
if [ -x "$probe" ] && [ -x "$wrap" ] && [ "$(uname -m)" = x86_64 ]; then
        out=$("$probe" int80 2>/dev/null)
        if [[ $out =~ returned\ [0-9]+$ ]]; then want="True i386 (int 0x80): accepted by the host"; else want="i386 (int 0x80): refused"; fi
        ok $([[ "$s32" == *"$want"* ]]; echo $?) "syscalls_32bit agrees with int 0x80 made outside any sandbox ('${out//$'\n'/ }')"
        [[ "$s32" == *"$want"* ]] || echo "$s32" | diag
        "$wrap" --kill-foreign -- "$SANDBOXER" doctor >"$tmp/k.table" 2>&1
        ok $(grep -Eq '^syscalls_32bit +no +i386 \(int 0x80\): refused above us: a seccomp filter .*SIGSYS.*; x32: refused above us' "$tmp/k.table"; echo $?) \
                "under a filter that kills 32-bit calls: syscalls_32bit no, saying refused above us (SIGSYS)"
        grep '^syscalls_32bit' "$tmp/k.table" | diag
else
        skip "sbx-probe and sbx-syscall-wrap (x86_64) are needed to judge syscalls_32bit"
        skip "sbx-probe and sbx-syscall-wrap (x86_64) are needed to judge syscalls_32bit"
fi

"$SANDBOXER" doctor >"$tmp/table" 2>&1
rc2=$?
ok $([ $rc2 -eq $rc ] && grep -q '^FEATURE  *STATUS  *DETAIL' "$tmp/table" &&
        grep -q '^BACKEND  *STATUS  *REASON' "$tmp/table" && grep -Eq '^native  +(yes|no)  ' "$tmp/table"; echo $?) \
        "human output: aligned feature and backend tables, same exit status"

"$SANDBOXER" doctor --bogus >"$tmp/bogus.out" 2>"$tmp/bogus.err"
rc3=$?
ok $([ $rc3 -eq 125 ]; echo $?) "doctor --bogus exits 125 (got $rc3)"
ok $(grep -q -- '--bogus' "$tmp/bogus.err" && [ ! -s "$tmp/bogus.out" ]; echo $?) "and names the argument on stderr only"

"$SANDBOXER" doctor --help >"$tmp/help" 2>&1
ok $([ $? -eq 0 ] && grep -q 'Usage: sandboxer doctor' "$tmp/help"; echo $?) "doctor --help exits 0 with usage"

if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
        setpriv --reuid=65534 --regid=65534 --clear-groups "$SANDBOXER" doctor --json >"$tmp/user.json" 2>"$tmp/user.err"
        urc=$?
        ok $([ $urc -le 1 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["unprivileged"] is True' "$tmp/user.json"; echo $?) \
                "as an ordinary user (65534): doctor runs and says unprivileged (rc $urc)"
        [ $urc -le 1 ] || diag "$tmp/user.err"
else
        skip "needs root and setpriv to try an ordinary user"
fi

# --policy FILE: a missing file, malformed YAML, a bad strict key, no FILE — each 125, named
"$SANDBOXER" doctor --policy "$tmp/nonexistent.yaml" >/dev/null 2>"$tmp/e1"; rc=$?
ok $([ $rc -eq 125 ] && grep -q nonexistent "$tmp/e1"; echo $?) "doctor --policy with a missing file: 125, names it (got $rc)"
printf 'version: 1\nstrict: [\n' >"$tmp/bad.yaml"
"$SANDBOXER" doctor --policy "$tmp/bad.yaml" >/dev/null 2>"$tmp/e2"; rc=$?
ok $([ $rc -eq 125 ] && [ -s "$tmp/e2" ]; echo $?) "doctor --policy with malformed YAML: 125 with a message (got $rc)"
printf 'version: 1\nstrict: { allow_emulation: maybe }\n' >"$tmp/bad2.yaml"
"$SANDBOXER" doctor --policy "$tmp/bad2.yaml" >/dev/null 2>"$tmp/e3"; rc=$?
ok $([ $rc -eq 125 ] && grep -q strict.allow_emulation "$tmp/e3"; echo $?) "doctor --policy, strict.allow_emulation not a bool: 125, names the key (got $rc)"
"$SANDBOXER" doctor --policy >/dev/null 2>"$tmp/e4"; rc=$?
ok $([ $rc -eq 125 ] && grep -q "needs a FILE" "$tmp/e4"; echo $?) "doctor --policy without FILE: 125 (got $rc)"

# persistence: whether pause has a freezer here (said either way) and that no checkpointer is used
ok $(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["persistence"]; sys.exit(0 if isinstance(p["freezer"]["available"], bool) and p["freezer"]["detail"] and p["checkpoint"]["available"] is False and "host restart" in p["checkpoint"]["detail"] else 1)' "$tmp/out.json"; echo $?) "doctor --json says whether pause has a freezer here, and that memory is not kept across a host restart"

[ $failed -eq 0 ]
