#!/usr/bin/env bash
# The escape suite against the landlock backend (no namespaces): every attack whose protection
# that backend claims must be blocked; the ones that need namespaces are skipped with the reason.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
        # An ordinary user here has no cgroup delegation and, without a user namespace of its own,
        # no RLIMIT_NPROC that counts only the sandbox: the fork and memory bombs would run
        # unbounded on the host. The landlock backend refuses such runs itself (fail closed).
        skip_all "landlock backend as an ordinary user: no bound for the bombs on this host"
fi
SBX_BACKEND=landlock exec bash "$(dirname "$0")/test-escape.sh"
