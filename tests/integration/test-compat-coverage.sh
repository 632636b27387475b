#!/usr/bin/env bash
# test-compat-coverage.sh — every public method of the unmodified E2B and Daytona SDKs called once
# against a real `sandboxer serve` (tests/compat/coverage.mjs): TAP per method (a method that
# stops working fails; one deferred to another issue is expected to fail, saying which) and the
# table docs/compat.md carries (COVERAGE_MD=FILE writes it). About 10 s: every pass runs it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/common-sdk.sh"
node coverage.mjs
