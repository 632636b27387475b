#!/bin/bash
# guest.sh SRC BUILD SANDBOXER — run by sbx-guest-init (tests/tools) inside the guest of
# test-cgroup2-guest.sh: as root, on the host's / (read-only 9p), with only cgroup2 mounted.
# Runs the parts below one by one; each part's stdout goes to the console as "SBXG|PART|LINE"
# (the end of its stderr as "SBXG-ERR|PART|LINE"), framed by "SBXG-BEGIN PART" and
# "SBXG-END PART STATUS SECONDS". The host renumbers the parts' TAP lines into its own stream and
# fails a part that never ended (a guest that died on its way).
# (guest.sh --extras WHO: only extras(), as the user, from as_user below)
if [ "$1" != --extras ]; then
        SRC=$1 BUILD=$2 SBX=$3 ONLY=$4 # ONLY: parts to run, comma-separated (all when empty)
        export SBX_SRC=$SRC SBX_BUILD=$BUILD SANDBOXER=$SBX
        # the console is the kernel's as well: keep its messages off it (an OOM kill is KERN_ERR)
        echo 1 >/proc/sys/kernel/printk
fi
cd /tmp || exit 1
CG=/sys/fs/cgroup

part() { # part NAME COMMAND...
        local name=$1 t0=$SECONDS rc=0
        shift
        [ -z "$ONLY" ] || [[ ,$ONLY, == *",$name,"* ]] || return 0
        echo "SBXG-BEGIN $name"
        ("$@") >"/tmp/part.$name.out" 2>"/tmp/part.$name.err" </dev/null || rc=$? # (a part ends with exit)
        sed "s/^/SBXG|$name|/" "/tmp/part.$name.out"
        tail -n 40 "/tmp/part.$name.err" | sed "s/^/SBXG-ERR|$name|/"
        echo "SBXG-END $name $rc $((SECONDS - t0))"
}

# --- the guest itself: cgroup2 only, the controllers given to children -------------------------
setup() {
        . "$SRC/tests/integration/lib.sh"
        is "$(awk '$3 == "cgroup" { print $2 }' /proc/mounts)" "" "no cgroup v1 hierarchy is mounted"
        is "$(awk '$3 == "cgroup2" { print $2 " " $4 }' /proc/mounts | grep -o '^/sys/fs/cgroup .*nsdelegate' | cut -d' ' -f1)" \
                /sys/fs/cgroup "cgroup2 at /sys/fs/cgroup, nsdelegate"
        is "$(cat /proc/self/cgroup)" "0::/" "/proc/self/cgroup: the unified hierarchy only"
        echo "+memory +pids +cpu" >$CG/cgroup.subtree_control
        is "$(tr ' ' '\n' <$CG/cgroup.subtree_control | grep -xE 'memory|pids|cpu' | sort | paste -sd' ')" \
                "cpu memory pids" "memory, pids and cpu enabled for the root's children"
        diag "kernel $(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB"
        done_testing
}

# --- the v2 specifics test-run-limits.sh does not look at ---------------------------------------
# extras AS — cpu.max of a run's group, a spinner held to cpus 0.25, and CLONE_INTO_CGROUP: the
# sandbox's first process is born in its group (the kernel's own trace: cgroup_can_fork() sees
# the flag, and no cgroup_attach_task event moves a process into a run's group). AS: root, or the
# user's prefix (setpriv ...); the trace is read as root, around the user's run.
TR=/sys/kernel/tracing
extras() {
        local who=$1
        shift
        . "$SRC/tests/integration/lib.sh"
        . "$SRC/tests/integration/common-policy.sh"
        local S=(--policy "$POL" --backend native) f g
        # the policy is the caller's: readable by the user
        chmod 755 "$SBX_TMP"

        # cpu.max of the group while the run lasts
        "$@" "$SANDBOXER" run "${S[@]}" --cpus 0.25 --memory 64 --pids 32 --timeout 30 --report "$SBX_TMP/bg.json" -- sleep 4 \
                >"$SBX_TMP/bg.out" 2>&1 &
        local bg=$! i
        for ((i = 0; i < 100; i++)); do
                for g in "$CG"/sandboxer/run_* "$CG"/sbx-delegated/scope-*/sandboxer/run_*; do
                        [ -n "$(cat "$g/cgroup.procs" 2>/dev/null)" ] && break 2
                done
                g=""
                sleep 0.1
        done
        ok "$([ -n "$g" ] && echo 0 || echo 1)" "$who: the run's group ${g#"$CG"}"
        is "$(cat "$g/cpu.max" 2>/dev/null)" "25000 100000" "$who: cpus 0.25 is cpu.max 25000 100000"
        is "$(cat "$g/memory.max" 2>/dev/null)" $((64 << 20)) "$who: memory 64 is memory.max $((64 << 20))"
        is "$(cat "$g/memory.swap.max" 2>/dev/null)" 0 "$who: memory.swap.max 0"
        is "$(cat "$g/pids.max" 2>/dev/null)" 32 "$who: pids 32 is pids.max 32"
        wait $bg
        is "$?" 0 "$who: the run ends 0"

        run_sbx "${S[@]}" --cpus 0.25 --timeout 30 -- python3 -c '
import time
end = time.time() + 3
while time.time() < end:
    pass'
        is "$SBX_RC" 0 "$who: cpu spinner under cpus 0.25 exits 0"
        local ratio
        ratio=$(json_get "$SBX_REPORT" '(d["usage"]["cpu_user_ms"] + d["usage"]["cpu_sys_ms"]) / d["usage"]["wall_ms"]')
        ok "$(python3 -c "import sys; sys.exit(0 if 0.12 <= $ratio <= 0.38 else 1)" && echo 0 || echo 1)" \
                "$who: cpu/wall = $ratio under cpus 0.25 (0.12..0.38)"
        is "$(json_get "$SBX_REPORT" 'd["config"]["limits"]["cpus"]["mechanism"]')" cgroup_v2 "$who: cpus enforced by cgroup_v2"
        done_testing
}

# clone_into WHO SANDBOXER [PREFIX...] — as root: trace one run of PREFIX SANDBOXER.
clone_into() {
        local who=$1 sbx=$2
        shift 2
        . "$SRC/tests/integration/lib.sh"
        . "$SRC/tests/integration/common-policy.sh"
        chmod 755 "$SBX_TMP"
        if [ ! -w $TR/kprobe_events ]; then
                skip "no tracefs with kprobe events in the guest: CLONE_INTO_CGROUP cannot be observed" 3
                done_testing
        fi
        echo 0 >$TR/tracing_on
        echo >$TR/trace
        # kernel_clone_args starts with its u64 flags; cgroup_can_fork(child, kargs)
        echo 'p:sbxfork cgroup_can_fork flags=+0(%si):x64' >>$TR/kprobe_events
        echo 1 >$TR/events/kprobes/sbxfork/enable
        echo 1 >$TR/events/cgroup/cgroup_attach_task/enable
        echo 1 >$TR/tracing_on
        chmod 1777 "$SBX_TMP"
        "$@" "$sbx" run --policy "$POL" --backend native --memory 64 --pids 32 --timeout 30 \
                --report "$SBX_TMP/ci.json" -- /bin/true >"$SBX_TMP/ci.out" 2>&1
        local rc=$?
        echo 0 >$TR/tracing_on
        cat $TR/trace >"$SBX_TMP/trace"
        echo 0 >$TR/events/kprobes/sbxfork/enable
        echo 0 >$TR/events/cgroup/cgroup_attach_task/enable
        echo '-:sbxfork' >>$TR/kprobe_events
        is "$rc" 0 "$who: traced run exits 0"
        local into
        # CLONE_INTO_CGROUP is 0x200000000
        into=$(awk '/sbxfork:/ { for (i = 1; i <= NF; i++) if ($i ~ /^flags=/) { v = substr($i, 9); if (length(v) > 8 && substr(v, length(v) - 8, 1) ~ /[2367abef]/) print } }' "$SBX_TMP/trace" | grep -c sandboxer)
        ok "$([ "${into:-0}" -ge 1 ] && echo 0 || echo 1)" \
                "$who: sandboxer forked with CLONE_INTO_CGROUP ($into fork(s) with the flag in cgroup_can_fork)" ||
                diag "$(grep sbxfork "$SBX_TMP/trace" | head -n 5)"
        local moved
        moved=$(grep cgroup_attach_task "$SBX_TMP/trace" | grep -c 'run_[0-9a-f]')
        is "$moved" 0 "$who: no process was moved into the run's group by pid (cgroup_attach_task)" ||
                diag "$(grep cgroup_attach_task "$SBX_TMP/trace" | head -n 5)"
        done_testing
}

if [ "$1" = --extras ]; then
        SRC=$SBX_SRC BUILD=$SBX_BUILD
        extras "$2"
        exit
fi

# --- an ordinary user with a delegated subtree ---------------------------------------------------
U=sbxtest
id -u $U >/dev/null 2>&1 || U=nobody
UID_=$(id -u $U) GID_=$(id -g $U)
D=$CG/sbx-delegated
AS_USER=(setpriv --reuid="$UID_" --regid="$GID_" --clear-groups --inh-caps=-all
        env "HOME=/tmp/home-$U" "USER=$U" "LOGNAME=$U" "XDG_RUNTIME_DIR=/run/user/$UID_")
# What `systemd-run --user --scope -p Delegate=yes` gives each command: a fresh cgroup of the
# user's delegated subtree with the command alone in it (sandboxer then moves itself into a leaf
# and enables the controllers for its groups). Every sandboxer of the user's parts runs so.
cat >/tmp/sbx-scope <<EOF
#!/bin/sh
d=$D/scope-\$\$
mkdir "\$d" && echo \$\$ >"\$d/cgroup.procs" || { echo "sbx-scope: cannot make \$d" >&2; exit 125; }
exec "$SBX" "\$@"
EOF
chmod 755 /tmp/sbx-scope

delegate() {
        . "$SRC/tests/integration/lib.sh"
        mkdir -p "/tmp/home-$U" "/run/user/$UID_" && chown "$UID_:$GID_" "/tmp/home-$U" "/run/user/$UID_" && chmod 700 "/run/user/$UID_"
        # as systemd's Delegate=: the directory and these three files are the user's
        mkdir $D && chown "$UID_:$GID_" $D $D/cgroup.procs $D/cgroup.subtree_control $D/cgroup.threads
        ok $? "$D made and delegated to $U (uid $UID_)"
        # the user's tree: the binary, the scripts (the checkout may sit under a 0700 home)
        if "${AS_USER[@]}" test -x "$SBX" -a -r "$SRC/tests/integration/lib.sh" -a -r "$BUILD/src/init/sandboxer-init"; then
                USRC=$SRC UBUILD=$BUILD
        else
                USRC=/tmp/usrc UBUILD=/tmp/usrc/build
                mkdir -p $USRC/tests $UBUILD/src/cli $UBUILD/src/init
                cp -r "$SRC/tests/integration" $USRC/tests/ && cp "$SBX" $UBUILD/src/cli/sandboxer &&
                        cp "$BUILD/src/init/sandboxer-init" $UBUILD/src/init/ && chmod -R a+rX /tmp/usrc
                sed -i "s|exec \"$SBX\"|exec \"$UBUILD/src/cli/sandboxer\"|" /tmp/sbx-scope
                diag "$U cannot reach $SRC: a copy in $USRC"
        fi
        echo "$USRC $UBUILD" >/tmp/user-tree
        done_testing
}

# As the user: the shell moves itself into a leaf of the delegated group, enables the controllers
# for its children, then runs SCRIPT with every sandboxer in a scope of its own.
as_user() { # as_user SCRIPT [ARG...]
        local usrc ubuild
        read -r usrc ubuild </tmp/user-tree
        # shellcheck disable=SC2016 # expanded by that bash
        (
                # the first time into the delegated group, which then holds processes of its own no
                # more once the user's shell has moved on into its leaf; later straight to the leaf
                if [ -d $D/shell ]; then echo $BASHPID >$D/shell/cgroup.procs; else echo $BASHPID >$D/cgroup.procs; fi || exit 1
                exec "${AS_USER[@]}" SBX_SRC="$usrc" SBX_BUILD="$ubuild" SANDBOXER=/tmp/sbx-scope SBX_PER_RUN_SCOPE=1 \
                        bash -c 'mkdir -p "$0/shell" && echo $$ >"$0/shell/cgroup.procs" &&
                                echo "+memory +pids +cpu" >"$0/cgroup.subtree_control" || exit 1
                                exec "$@"' "$D" "$@"
        )
}

part setup setup
part limits-root bash "$SRC/tests/integration/test-run-limits.sh"
part v2-root extras root
part clone-root clone_into root "$SBX"
part delegate delegate
read -r USRC UBUILD </tmp/user-tree 2>/dev/null
part limits-user as_user bash "${USRC:-$SRC}/tests/integration/test-run-limits.sh"
part v2-user as_user bash "${USRC:-$SRC}/tests/integration/cgroup2-guest/guest.sh" --extras "$U"
part clone-user clone_into "$U" /tmp/sbx-scope as_user
echo "SBXG-DONE"
