#!/usr/bin/env bash
# test-compat.sh — the unmodified E2B and Daytona SDKs (npm packages `e2b` and `@daytonaio/sdk`,
# pinned in tests/compat/package-lock.json, installed by scripts/setup.sh) against a real
# `sandboxer serve` on loopback: sandboxes, commands, files, PTYs, sessions, the code interpreter,
# ports and preview links, git, signed URLs, and the two agent flows end to end. The checks are
# in tests/compat/run.mjs (TAP).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-sdk.sh"
node run.mjs
