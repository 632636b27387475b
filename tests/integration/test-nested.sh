#!/usr/bin/env bash
# test-nested.sh — sandboxer inside an unprivileged container: podman with its default seccomp
# profile and no added capability or device (what `docker run IMAGE` gives by default), on the
# base root filesystem the podman backend builds offline from the host's files, with /usr and
# this build bound read-only. There `--backend auto` runs profile.python on the landlock backend
# and says why: the container lets namespaces be made but refuses what a sandbox needs in them
# (sethostname, a fresh /proc), and the run never started on native. The Python sandbox of the
# runtime notes, composed inside a container as they state it. Root only (the podman backend).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"

[ "$(id -u)" = 0 ] || skip_all "the podman backend runs as root only (rootless podman is refused)"
require_backend podman
# a container has no cgroup of its own to give: the limits go unenforced (said as none), as a
# site running sandboxer in one would list them
sed -i 's/^enforce: .*/enforce: { best_effort: [memory_mb, cpus, scratch_mb, pids] }/' "$POL"

# the base root the podman backend made (its report names it), and the binaries of this build
run_sbx --policy "$POL" --backend podman --profile profile.python-nofork -- /usr/bin/true
ROOTFS=$(json_get "$SBX_REPORT" '[m["source"] for m in d["config"]["mounts"] if m["kind"] == "rootfs-ro"][0]' 2>/dev/null)
[ "$SBX_RC" = 0 ] && [ -d "$ROOTFS/usr" ] || { echo "Bail out! the podman backend made no base root (exit $SBX_RC): $SBX_ERR"; exit 1; }
# the build's src/ (cli/sandboxer finds ../init/sandboxer-init beside it)
SRCDIR=$(cd "$(dirname "$SANDBOXER")/.." && pwd)
[ -x "$SRCDIR/init/sandboxer-init" ] || skip_all "no sandboxer-init beside $SANDBOXER (an installed binary: this runs from a build tree)"
cp "$POL" "$SBX_TMP/nested-policy.yaml"
printf 'import os, sys\nprint("hello from pid", os.getpid(), "in", sys.version.split()[0])\n' >"$SBX_TMP/hello.py"
chmod -R a+rX "$SBX_TMP"

# podman --rm, and its default seccomp profile: --security-opt is never given
nested() { # ARG... — sandboxer ARG... in the container; stdout/stderr in $SBX_TMP/nested.{out,err}
        (cd "$SBX_TMP" && timeout 120 podman run --rm --runtime /usr/bin/runc --network none \
                --ulimit=nofile=20000:20000 --ulimit=nproc=32768:32768 \
                -v /usr:/usr:ro -v "$SRCDIR:/sbx:ro" -v "$SBX_TMP:/cfg:ro" \
                --tmpfs /tmp --tmpfs /run --rootfs "$ROOTFS" /sbx/cli/sandboxer "$@") >"$SBX_TMP/nested.out" 2>"$SBX_TMP/nested.err"
}

nested run --policy /cfg/nested-policy.yaml --profile profile.python --workspace /cfg --report /tmp/r.json -- \
        python3 hello.py
rc=$?
is "$rc" 0 "in a default podman container: profile.python through --backend auto runs" ||
        diag "$(tail -5 "$SBX_TMP/nested.err")"
like "$(cat "$SBX_TMP/nested.out")" '^hello from pid [0-9]+ in 3' "the interpreter ran and printed"

nested run --policy /cfg/nested-policy.yaml --profile profile.python --report - -- python3 -c 'print("x")'
sed -n '/^{/,/^}/p' "$SBX_TMP/nested.err" >"$SBX_TMP/nested.json"
is "$(json_get "$SBX_TMP/nested.json" 'd["backend"]')" landlock "auto picked the landlock backend"
like "$(json_get "$SBX_TMP/nested.json" 'd["backend_reason"]')" 'native skipped: sandbox setup failed: .*(sethostname|mount proc).*not permitted' \
        "and says why: native's namespaces were refused what a sandbox needs in them"
# (with a workspace the refusal comes first, from cloning its mount tree: the same fallback)
is "$(json_get "$SBX_TMP/nested.json" 'd["config"]["fences"]["namespaces"]')" none "the report: no namespaces"
like "$(json_get "$SBX_TMP/nested.json" 'd["config"]["fences"]["seccomp"]')" 'one execve.*fork allowed.*sockets refused' \
        "the report: the notes' seccomp fence (one execve, fork allowed, no sockets)"

# and the fences hold there: no second exec, no socket, nothing written outside scratch
nested run --policy /cfg/nested-policy.yaml --profile profile.python --report - -- python3 -c '
import os, socket, subprocess
try: subprocess.run(["/bin/true"]); print("EXECED")
except OSError as e: print("exec", e.errno)
try: socket.socket(socket.AF_UNIX); print("SOCKET")
except OSError as e: print("socket", e.errno)
try: open("/usr/sbx-nested", "w"); print("WROTE")
except OSError as e: print("write", e.errno)
pid = os.fork()
if pid == 0: os._exit(3)
print("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))'
like "$(tr '\n' ' ' <"$SBX_TMP/nested.out")" "^exec 1 socket 13 write (13|30) fork 3 $" \
        "inside it: a second exec and a socket refused, /usr not writable, fork works"

done_testing
