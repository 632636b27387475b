#!/usr/bin/env bash
# --tty: the command gets a pseudo-terminal of its own as 0, 1, 2 and controlling terminal; the
# caller's keystrokes reach it; without --tty it has no controlling terminal.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-policy.sh"
require_backend native # its sandboxes are native ones (skipped with the reason where the host cannot)
[ -x /usr/bin/python3 ] || skip_all "python3 is needed to drive a terminal"
drive() { # drive INPUT ARGS... → the session's output (the caller side is a pty)
        /usr/bin/python3 - "$@" <<'PY'
import os, pty, select, sys, time
inp, args = sys.argv[1].encode(), sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(args[0], args)
time.sleep(0.3)
os.write(fd, inp)
out, end = b"", time.time() + 10
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.5)
    if r:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        out += d
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
print("EXIT=%d" % os.waitstatus_to_exitcode(st))
PY
}
S=("$SANDBOXER" run --policy "$POL" --backend native)
out=$(drive $'typed-line\n' "${S[@]}" --tty -- /bin/sh -c '[ -t 0 ] && [ -t 1 ] && echo all-tty; read l; echo "got:$l"; ps -o tty= -p $$ 2>/dev/null || cat /proc/self/stat | cut -d" " -f7')
like "$out" 'all-tty' "--tty: stdin and stdout are a terminal"
like "$out" 'got:typed-line' "--tty: what the caller types reaches the command"
like "$out" 'EXIT=0' "--tty: the exit status passes through"
stat_tty=$(drive '' "${S[@]}" --tty -- /bin/sh -c 'cut -d" " -f7 /proc/self/stat')
ok $([[ $(grep -o '^[0-9]*' <<<"$stat_tty" | head -1) != 0 ]] && echo 0 || echo 1) "--tty: the command has a controlling terminal (tty_nr $(head -1 <<<"$stat_tty"))"
no_tty=$(drive '' "${S[@]}" -- /bin/sh -c 'cut -d" " -f7 /proc/self/stat')
is "$(head -1 <<<"$no_tty")" 0 "without --tty: no controlling terminal, even with the caller's terminal as stdin"
out=$(drive '' "${S[@]}" --tty -- /bin/sh -c 'exit 7')
like "$out" 'EXIT=7' "--tty: exit 7 passes through"
assert_no_leftovers
done_testing
