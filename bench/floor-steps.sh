#!/usr/bin/env bash
# floor-steps.sh — where the distance between the floor and `sandboxer run` goes: the floor
# prototype (../shared/bench/floor-proto.c, rebuilt here as bench/floor-steps.c), then the same
# with the child joining its cgroups itself (as sandboxer does, instead of being moved by pid),
# then sandboxer's remaining pieces added one at a time (an init, an init that is a program of
# its own, /dev, the generated /etc, the size-limited scratch, loopback, the cpu group, the
# seccomp listener, a report), beside `sandboxer run` and bwrap, interleaved round by round
# (bench/startup.py --steps). Prints medians, what each step adds (difference of medians and
# median of the per-round differences), each line against the floor and bwrap. Not a test.
#
#   bash bench/floor-steps.sh [--rounds N] [--json FILE]     (as root, on a cgroup v1 host)
# Environment: SANDBOXER (default build/src/cli/sandboxer).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
case "${1:-}" in -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
exec python3 bench/startup.py --steps "$@"
