#!/usr/bin/env bash
# The escape suite against the bwrap backend: every attack whose protection bwrap claims (its
# declared capabilities, `sandboxer doctor --json`) must be blocked; the others are skipped with
# the reason. Skipped where bubblewrap cannot run.
SBX_BACKEND=bwrap exec bash "$(dirname "$0")/test-escape.sh"
