#!/usr/bin/env bash
# The escape suite against the landlock backend (no namespaces): every attack whose protection
# that backend claims must be blocked; the ones that need namespaces are skipped with the reason.
# As an ordinary user (the sandbox then runs as the caller's own uid: its own sockets and files
# are within reach of the file modes) the pids limit may go unenforced here, and the fork bomb
# is skipped saying so (test-escape.sh).
SBX_BACKEND=landlock exec bash "$(dirname "$0")/test-escape.sh"
