#!/usr/bin/env bash
# asan.sh [PART] — build the test programs with AddressSanitizer
# (build-asan/) and run the CUnit suites under it, all of them or one PART
# (net or local, see tests/ut_part.sh); its last line is the runner's
# "N passed, N failed".  Leak checking is on.
set -euo pipefail
cd "$(dirname "$0")/.."
part=${1:-all}
# BUILD is set explicitly: a "make BUILD=x check" must not point it at x.
# Only what the suites run: the runner and the server the "server" suite
# starts beside it (not the CLI, gateway, benchmarks or crash tools).
# steps.list starts the two parts together: one builds under the lock, the
# other waits for it and then finds nothing left to make.
mkdir -p build-asan
flock build-asan/.build.lock \
	make --no-print-directory -j"$(nproc)" SAN=asan BUILD=build-asan \
	build-asan/ut_main build-asan/strata-server >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
exec tests/ut_part.sh build-asan/ut_main "$part"
