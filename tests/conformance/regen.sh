#!/usr/bin/env bash
# regen.sh — rewrite capabilities.tsv from `sandboxer doctor --json` after a deliberate change to a
# backend's declared capabilities; review the diff (docs/backends.md says why for each "no").
#   SANDBOXER=build/src/cli/sandboxer bash tests/conformance/regen.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"${SANDBOXER:-$here/../../build/src/cli/sandboxer}" doctor --json | python3 "$here/table.py" >"$here/capabilities.tsv"
