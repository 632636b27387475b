#!/usr/bin/env bash
# The escape suite against the podman backend (root: rootless podman is refused by the backend):
# every attack whose protection podman claims must be blocked. Skipped where podman cannot run.
if [ "$(id -u)" != 0 ]; then
        echo "1..0 # SKIP the podman backend runs as root only (rootless podman is refused)"
        exit 0
fi
SBX_BACKEND=podman exec bash "$(dirname "$0")/test-escape.sh"
