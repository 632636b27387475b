#!/usr/bin/env bash
# Isolation claims of `sandboxer run` (native backend), each attacked from inside.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"
require_backend native # its sandboxes are native ones (skipped with the reason where the host cannot)

S=(--policy "$POL" --backend native)

# Host processes are invisible: only the sandbox's own (init + the command) are in /proc.
run_sbx "${S[@]}" -- /bin/sh -c 'for p in /proc/[0-9]*; do cat $p/comm; done | sort -u | tr "\n" " "'
is "$SBX_RC" 0 "ps: run succeeds"
others=$(echo $SBX_OUT | tr ' ' '\n' | grep -vxE 'cat|sandboxer-init|sh|sort|tr')
ok $([ -z "$others" ] && [[ $SBX_OUT == *sandboxer-init* ]] && echo 0 || echo 1) "host processes invisible: only the init and the command's own (saw: $SBX_OUT)"
assert_no_leftovers

# Our own pid is not visible inside.
run_sbx "${S[@]}" -- /bin/sh -c "test -e /proc/$$ && echo visible || echo hidden"
is "$SBX_OUT" hidden "the test's own pid $$ is not visible inside"

# Host loopback unreachable: a listener on the host's 127.0.0.1 cannot be reached.
port=$((20000 + RANDOM % 20000))
python3 -c "
import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',$port)); s.listen(1)
s.settimeout(20)
try:
    c,_=s.accept(); c.send(b'HOSTDATA'); c.close()
except Exception: pass
" &
lpid=$!
sleep 0.3
run_sbx "${S[@]}" -- /usr/bin/python3 -c "
import socket
s=socket.socket()
s.settimeout(2)
try:
    s.connect(('127.0.0.1',$port)); print('reached', s.recv(8))
except OSError as e:
    print('unreachable', e.errno)
"
like "$SBX_OUT" '^unreachable' "host loopback listener unreachable from inside"
kill $lpid 2>/dev/null; wait $lpid 2>/dev/null

# Loopback inside works (own namespace).
run_sbx "${S[@]}" -- /usr/bin/python3 -c "
import socket
s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(1); p=s.getsockname()[1]
c=socket.socket(); c.connect(('127.0.0.1',p)); a,_=s.accept(); a.send(b'hi'); print(c.recv(2).decode())
"
is "$SBX_OUT" hi "loopback inside the sandbox's own namespace works"

# No network interface but lo.
run_sbx "${S[@]}" -- /bin/sh -c 'ls /sys/class/net 2>/dev/null || cat /proc/net/dev | tail -n +3 | cut -d: -f1'
like "$(echo $SBX_OUT)" '^lo$' "only lo exists inside"

# Host files outside the read list are absent.
secret=$SBX_TMP/secret.txt
echo TOPSECRET >"$secret"; chmod 644 "$secret"
run_sbx "${S[@]}" -- /bin/sh -c "cat $secret 2>&1; ls /root /home /var /opt /srv /work 2>&1 | head -5"
ok $([[ $SBX_OUT != *TOPSECRET* ]] && echo 0 || echo 1) "a host file outside the read list is not readable"
like "$SBX_OUT" 'No such file' "it is absent, not merely denied"
run_sbx "${S[@]}" -- /bin/sh -c 'ls /'
is "$(echo $SBX_OUT)" "bin dev etc lib lib64 proc tmp usr" "the root holds only the read list, /dev, /proc, /tmp"

# The loader's index comes with the library directories (not with a read list without them), so
# a dynamic program finds its libraries as on the host, without the hwcaps search.
if [ -f /etc/ld.so.cache ]; then
        run_sbx "${S[@]}" -- /bin/sh -c 'ls /etc; head -c 16 /etc/ld.so.cache | tr -cd "a-z-"'
        like "$SBX_OUT" 'ld\.so\.cache' "/etc/ld.so.cache is in the view with the library directories"
        like "$SBX_OUT" 'glibc-ld' "and it is the host's (its magic is readable)"
        nolib=$SBX_TMP/nolib.yaml
        printf 'id: nolib\nversion: "1.0.0"\nextends: profile.default\nfilesystem:\n  read: [/etc/hosts]\n' >"$nolib"
        "$SANDBOXER" run --policy "$POL" --profile "$nolib" --dry-run >"$SBX_TMP/nolib.out" 2>&1
        ok $(grep -q 'filesystem.read .*"/etc/hosts"\]' "$SBX_TMP/nolib.out" && ! grep -q ld.so.cache "$SBX_TMP/nolib.out" && echo 0 || echo 1) \
                "a read list without library directories does not get it"
else
        skip "the host has no /etc/ld.so.cache" 3
fi

# /, /etc, /usr are read-only; /tmp (scratch) is writable.
for p in /x /etc/x /usr/x /usr/bin/x /dev/x /proc/x; do
        run_sbx "${S[@]}" -- /bin/sh -c "echo pwned > $p && echo WROTE"
        ok $([[ $SBX_OUT != *WROTE* ]] && echo 0 || echo 1) "$p not writable"
done
run_sbx "${S[@]}" -- /bin/sh -c 'echo data > /tmp/f && cat /tmp/f && echo $TMPDIR $HOME'
is "$SBX_OUT" "data
/tmp /tmp" "scratch /tmp is writable and is TMPDIR and HOME"

# filesystem.home: a writable home of its own (a directory of scratch bound there), HOME and the
# default cwd, uid 1000 named by the profile's user, counted in scratch_mb.
cat >"$SBX_TMP/home.yaml" <<'YAML'
id: home
version: "1.0.0"
extends: profile.default
filesystem:
  home: /home/user
user: user
YAML
run_sbx "${S[@]}" --profile "$SBX_TMP/home.yaml" -- /bin/sh -c 'echo $HOME; pwd; id -un; getent passwd 1000 | cut -d: -f6; echo hi >~/f && cat /home/user/f; ls -A /tmp; touch /home/x 2>/dev/null && echo WROTE; stat -c %u ~'
is "$SBX_OUT" "/home/user
/home/user
user
/home/user
hi
.home
1000" "home: HOME and cwd there, writable, uid 1000 named user at home there, in scratch; /home itself read-only"
run_sbx "${S[@]}" --profile "$SBX_TMP/home.yaml" --scratch 2 -- /bin/sh -c 'head -c 8000000 /dev/zero >~/big; echo $?'
ok $([ "$(tail -1 <<<"$SBX_OUT")" != 0 ] && echo 0 || echo 1) "home: its writes count in scratch_mb (8 MB do not fit in 2 MiB)"
run_sbx "${S[@]}" --profile "$SBX_TMP/home.yaml" --cwd /tmp -- /bin/sh -c 'pwd; echo $HOME'
is "$SBX_OUT" "/tmp
/home/user" "home: --cwd still wins over the home"
run_sbx --policy "$POL" --backend bwrap --profile "$SBX_TMP/home.yaml" -- /bin/true
is "$SBX_RC" 125 "home: a backend without it refuses the profile (bwrap)"
like "$SBX_ERR" "lacks home" "and names the capability"
for bad in 'home: tmp/x|absolute path' 'home: /|root or its scratch' 'home: /tmp|root or its scratch' 'home: /proc/x|under /proc'; do
        printf 'id: badhome\nversion: "1.0.0"\nfilesystem:\n  %s\n' "${bad%%|*}" >"$SBX_TMP/badhome.yaml"
        run_sbx "${S[@]}" --profile "$SBX_TMP/badhome.yaml" -- /bin/true
        ok $([ "$SBX_RC" = 125 ] && [[ $SBX_ERR == *"filesystem.home"* && $SBX_ERR == *"${bad#*|}"* ]] && echo 0 || echo 1) \
                "filesystem.${bad%%|*}: refused naming the key and why ($SBX_ERR)"
done
printf 'id: baduser\nversion: "1.0.0"\nuser: "Root Admin"\n' >"$SBX_TMP/baduser.yaml"
run_sbx "${S[@]}" --profile "$SBX_TMP/baduser.yaml" -- /bin/true
ok $([ "$SBX_RC" = 125 ] && [[ $SBX_ERR == *"user: \"Root Admin\" is not a user name"* ]] && echo 0 || echo 1) "user: a name /etc/passwd cannot hold is refused ($SBX_ERR)"

# Read-only workspace: readable, not writable.
ws=$SBX_TMP/ws; mkdir -p "$ws"; echo src >"$ws/file.c"; chmod -R a+rX "$ws"
run_sbx "${S[@]}" --workspace "$ws" -- /bin/sh -c 'pwd; echo $SANDBOXER_WORKSPACE; cat file.c; echo x > new 2>/dev/null && echo WROTE; echo x >> file.c 2>/dev/null && echo APPENDED; true'
is "$SBX_OUT" "/workspace
/workspace
src" "ro workspace: cwd, SANDBOXER_WORKSPACE, readable, not writable"
is "$(cat "$ws/file.c")" src "workspace file unchanged on the host"
ok $([ ! -e "$ws/new" ] && echo 0 || echo 1) "nothing created in the ro workspace"

# The init is not dumpable: its /proc/1/environ (and mem, fds) are out of the command's reach,
# so the command can neither read what the init holds nor take it over.
export LEAKME=secretvalue
run_sbx "${S[@]}" -- /bin/sh -c 'tr "\0" "\n" </proc/1/environ 2>/dev/null || echo refused; cat /proc/1/status | grep -c ^Name'
is "$SBX_OUT" "refused
1" "/proc/1/environ of the sandbox's init is refused to the command (its status stays readable)"
run_sbx "${S[@]}" -- /usr/bin/env
ok $([[ $SBX_OUT != *LEAKME* ]] && echo 0 || echo 1) "the caller's environment does not reach the command"
unset LEAKME

# fd 3+ of the caller are not inherited (by the command, nor through the init).
exec 7<"$secret" 8>"$SBX_TMP/fd8"
run_sbx "${S[@]}" -- /bin/sh -c 'ls /proc/self/fd | sort -n | tr "\n" " "; ls /proc/1/fd 2>&1 | tr "\n" " "'
exec 7<&- 8>&-
like "$SBX_OUT" '^0 1 2 3 ' "the command holds only 0 1 2 (3 is ls's own directory fd)"
ok $([[ $SBX_OUT != *" 7 "* && $SBX_OUT != *" 8 "* ]] && echo 0 || echo 1) "caller's fds 7 and 8 not inherited"

# Hostname: the sandbox has its own; a change attempt stays inside.
host_before=$(hostname)
run_sbx "${S[@]}" -- /bin/sh -c 'hostname; hostname pwned 2>/dev/null; cat /proc/sys/kernel/hostname'
like "$SBX_OUT" '^sandbox' "hostname inside is 'sandbox'"
is "$(hostname)" "$host_before" "host's hostname unchanged"

# Never host root: uid inside is 1000 (sandbox), no capabilities.
run_sbx "${S[@]}" -- /bin/sh -c 'id -u; id -un; grep CapEff /proc/self/status'
is "$SBX_OUT" "1000
sandbox
CapEff:	0000000000000000" "runs as uid 1000 'sandbox' with no effective capabilities"

# stdin passes through.
out=$(echo piped-in | "$SANDBOXER" run "${S[@]}" -- /bin/cat)
is "$out" piped-in "stdin passes through to the command"

# The report says native/container and lists the mounts.
run_sbx "${S[@]}" -- /bin/true
is "$(json_get "$SBX_REPORT" 'd["backend"]+"/"+d["isolation"]')" native/container "report: backend native, isolation container"
is "$(json_get "$SBX_REPORT" 'd["status"]')" exited "report: status exited"
assert_no_leftovers "nothing left on the host after the runs"
done_testing
