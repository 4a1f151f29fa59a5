#!/usr/bin/env bash
# asan.sh — build the test programs with AddressSanitizer (build-asan/) and
# run the CUnit suites under it; its last line is the runner's
# "N passed, N failed".  Leak checking is on.
set -euo pipefail
cd "$(dirname "$0")/.."
# BUILD is set explicitly: a "make BUILD=x check" must not point it at x.
# Only what the suites run: the runner and the server the "server" suite
# starts beside it (not the CLI, gateway, benchmarks or crash tools).
make --no-print-directory -j"$(nproc)" SAN=asan BUILD=build-asan \
	build-asan/ut_main build-asan/strata-server >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
exec build-asan/ut_main
