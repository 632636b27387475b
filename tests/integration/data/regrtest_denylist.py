"""regrtest_denylist.py [REGRTEST-OPTION]... MODULE... — CPython's own regression modules, run in this process under
the Python-sandbox runtime notes' seccomp deny-list alone: execve and execveat (after the exec that
started this interpreter), socket, connect and bind refused; everything else allowed (socketpair
too), no Landlock, no namespaces. What passes here is what profile.python must let pass.
(python3-seccomp; the same errnos sandboxer's filter answers: EPERM for exec, EACCES for the
network calls.)"""
import errno
import sys

import seccomp

f = seccomp.SyscallFilter(seccomp.ALLOW)
for name in ("execve", "execveat"):
    f.add_rule(seccomp.ERRNO(errno.EPERM), name)
for name in ("socket", "connect", "bind"):
    f.add_rule(seccomp.ERRNO(errno.EACCES), name)
f.load()

from test.libregrtest.main import main  # noqa: E402  (after the filter, as inside the sandbox)

sys.argv[0] = "regrtest"
main()  # its own arguments, as `python3 -m test ARGS` takes them
