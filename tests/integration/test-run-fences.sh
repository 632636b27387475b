#!/usr/bin/env bash
# Kernel fences of the native backend, each reached by going around the others: Landlock,
# capabilities, no_new_privs, never host root (idmapped workspace), setuid binaries.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"
require_backend native # its sandboxes are native ones (skipped with the reason where the host cannot)

S=(--policy "$POL" --backend native)
root=0; [ "$(id -u)" = 0 ] && root=1

# --- Landlock alone refuses what a (deliberately) wide mount view would allow ---
run_sbx "${S[@]}" -- /bin/sh -c 'cat /etc/debian_version 2>&1; echo rc=$?'
like "$SBX_OUT" 'No such file' "without the test hook, /etc/debian_version is not in the view"
if [ "$("$SANDBOXER" doctor --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["build"]["test_hooks"])')" != True ]; then
        skip "this build has no test hooks (meson -Dtest_hooks=true; scripts/test.sh turns it on)" 4
else
SANDBOXER_TEST_EXTRA_RO_BIND=/etc run_sbx "${S[@]}" -- /bin/sh -c 'ls /etc >/dev/null && echo listed; cat /etc/debian_version 2>&1; cat /etc/passwd | head -1'
like "$SBX_OUT" 'listed' "wide view: /etc is mounted and listable"
like "$SBX_OUT" 'debian_version: Permission denied' "wide view: Landlock refuses a world-readable file outside the read list"
like "$SBX_OUT" '^listed
.*
sandbox:x:1000' "wide view: the generated /etc/passwd (ruled in) is still readable"
SANDBOXER_TEST_EXTRA_RO_BIND=/var run_sbx "${S[@]}" -- /bin/sh -c 'for f in /var/lib/dpkg/status /var/log/lastlog; do head -c 10 $f >/dev/null 2>&1 && echo "READ $f"; done; echo done'
is "$SBX_OUT" done "wide view: nothing under an unruled /var is readable"
fi

# Landlock is in force on the command and on its init (one domain): the init stays visible to the
# command (its status, cmdline), while what ptrace would guard (environ, mem, fds) is refused —
# the init is not dumpable.
run_sbx "${S[@]}" -- /bin/sh -c 'grep -q sandboxer-init /proc/1/cmdline && grep -q "^Name:" /proc/1/status && echo init-visible; cat /proc/1/environ >/dev/null 2>&1 || echo init-guarded; cat /proc/self/status | grep -E "^(NoNewPrivs|Seccomp):"'
like "$SBX_OUT" 'init-visible' "the command still sees its init in /proc (same Landlock domain)"
like "$SBX_OUT" 'init-guarded' "but not its environ, mem or fds (the init is not dumpable)"
like "$SBX_OUT" 'NoNewPrivs:	1' "no_new_privs is set"

# --- capabilities: every set empty ---
run_sbx "${S[@]}" -- /bin/sh -c 'grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb):" /proc/self/status | cut -f2 | sort -u; grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb):" /proc/1/status | cut -f2 | sort -u'
is "$SBX_OUT" "0000000000000000
0000000000000000" "all five capability sets are zero, for the command and its init"

# --- a setuid-root binary in the workspace yields no privilege ---
ws=$SBX_TMP/suid; mkdir -p "$ws"
cp /usr/bin/id "$ws/suid-id"
if [ $root = 1 ]; then
        chown root:root "$ws/suid-id"; chmod 4755 "$ws/suid-id"
        run_sbx "${S[@]}" --workspace "$ws" -- /bin/sh -c './suid-id -u; ./suid-id -ru'
        is "$SBX_OUT" "1000
1000" "a setuid-root binary in the workspace runs as the sandbox user"
else
        skip "setuid-root binary: needs root to create one"
fi

# --- never host root: what the command runs as, seen from the host ---
run_sbx "${S[@]}" -- /bin/sh -c 'sleep 0.5 & echo $!; wait' &
bgpid=$!
sleep 0.3
hostuids=$(ps -o uid= -C sleep 2>/dev/null | sort -u | tr -d ' ')
wait $bgpid
if [ $root = 1 ]; then
        like "$hostuids" '65534' "as root, the command runs as host uid 65534 (policy run_as)"
else
        like "$hostuids" "$(id -u)" "as a user, the command runs as the caller's uid"
fi

# --- rw workspace: writes land owned by the workspace's owner ---
cat >"$SBX_TMP/rw.yaml" <<'YAML'
id: test.rw
version: "1.0.0"
workspace:
  access: rw
YAML
ws=$SBX_TMP/rwws; mkdir -p "$ws"
if [ $root = 1 ]; then
        chown sbxtest:sbxtest "$ws" 2>/dev/null || chown 65533:65533 "$ws"
fi
owner=$(stat -c %u:%g "$ws")
run_sbx "${S[@]}" --profile "$SBX_TMP/rw.yaml" --workspace "$ws" -- /bin/sh -c 'echo data > out.txt && mkdir sub && echo wrote'
is "$SBX_OUT" wrote "rw workspace is writable from inside"
is "$(stat -c %u:%g "$ws/out.txt")" "$owner" "a file written inside lands owned by the workspace's owner ($owner)"
is "$(stat -c %u:%g "$ws/sub")" "$owner" "a directory made inside lands owned by the workspace's owner"
if [ $root = 1 ]; then
        is "$(json_get "$SBX_REPORT" '[m["kind"] for m in d["config"]["mounts"] if m["target"]=="/workspace"][0]')" bind-rw-idmapped "as root the rw workspace is an idmapped mount"
        rootws=$SBX_TMP/rootws; mkdir -p "$rootws"
        run_sbx "${S[@]}" --profile "$SBX_TMP/rw.yaml" --workspace "$rootws" -- /bin/true
        is "$SBX_RC" 125 "a writable workspace owned by root is refused"
        like "$SBX_ERR" 'owned by root' "and the message says why"
else
        skip "idmapped workspace: root only" 3
fi
assert_no_leftovers
done_testing
