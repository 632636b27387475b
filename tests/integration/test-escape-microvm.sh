#!/usr/bin/env bash
# The escape suite against the microvm backend (strict mode): every attack whose protection the
# backend claims must be blocked, inside a guest of its own. Guests run under QEMU's emulation
# where there is no usable KVM (seconds each): once per CI, in the root pass; scripts/test.sh
# leaves it out of the ASan pass. The same pass runs the suite as the ordinary user sbxtest too
# (test-escape-microvm-user.sh: a script of its own, so each stays within SBX_SCRIPT_TIMEOUT).
# Skipped where the backend cannot run (no qemu, no kernel).
if [ "$(id -u)" != 0 ]; then
        echo "1..0 # SKIP the microvm guests run once per CI, in the root pass (QEMU's emulation: seconds per guest)"
        exit 0
fi
command -v qemu-system-x86_64 >/dev/null || { echo "1..0 # SKIP qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"; exit 0; }
ls /boot/vmlinuz-* >/dev/null 2>&1 || { echo "1..0 # SKIP no guest kernel in /boot (apt-get install linux-image-amd64)"; exit 0; }
SBX_BACKEND=microvm exec bash "$(dirname "$0")/test-escape.sh"
