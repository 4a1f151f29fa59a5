#!/usr/bin/env bash
# asan.sh [PART] — build the test programs with AddressSanitizer
# (build-asan/) and run the CUnit suites under it, all of them or one PART
# (net or local, see tests/ut_part.sh); its last line is the runner's
# "N passed, N failed".  Leak checking is on.  PART "build" only builds
# (make check does, before its steps: compiling beside the first steps,
# the HA ones with their 3 s leases, loaded the 2 cores to 20).
set -euo pipefail
cd "$(dirname "$0")/.."
part=${1:-all}
# BUILD is set explicitly: a "make BUILD=x check" must not point it at x.
# Only what the suites run: the runner and the server the "server" suite
# starts beside it (not the CLI, gateway, benchmarks or crash tools).
# steps.list starts the two parts together: one builds under the lock, the
# other waits for it and then finds nothing left to make.
#
# What keeps this build short (it is most of the step's time in make
# check; tests/README.md "Workers"):
#   -O1    ASan's own recommendation; it compiles in about 55 % of the CPU
#          time of -O2 and the suites take the same time (CPU time of the
#          local part 52.9 s at -O1, 54.4 s at -O2).  -g stays: reports
#          name files, lines and inlined frames.  A build-asan/ made
#          earlier at -O2 keeps its objects (make does not track flags);
#          `rm -rf build-asan` makes them again at -O1.
#   one set of library objects: the runner links the test library
#          (tobj/, fault points compiled in but never armed unless a test
#          arms them), and the server the "server" suite starts is
#          strata-server-test, made from the same objects, instead of
#          strata-server, which would need every library source compiled
#          a second time (obj/) for nothing but that suite.  srv_ut.c
#          starts "strata-server beside this program" (/proc/self/exe):
#          build-asan/ut/ holds hard links ut_main and strata-server (the
#          latter to strata-server-test), and isc_native_fn.so (the
#          isc suites' sample native function, found beside ut_main).  The plain parts (ut_part.sh
#          build/ut_main) still run the release strata-server.
mkdir -p build-asan
(
	flock 9
	make --no-print-directory -j"$(nproc)" SAN=asan BUILD=build-asan \
		OPT=-O1 build-asan/ut_main build-asan/strata-server-test \
		>/dev/null
	mkdir -p build-asan/ut
	ln -f build-asan/ut_main build-asan/ut/ut_main
	ln -f build-asan/strata-server-test build-asan/ut/strata-server
	# the sample native function the isc suites load beside ut_main
	ln -f build-asan/isc_native_fn.so build-asan/ut/isc_native_fn.so
) 9>build-asan/.build.lock
[ "$part" != build ] || exit 0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
# The heaviest loop-type tests run fewer rounds under ASan (tests/ut.h
# ut_rounds(); every round asserts in full, the plain runs do all rounds):
# analyzer/random 100 of 300 seeds, smr/clean_with_reader 16 of 40 passes.
export STRATA_UT_QUICK=1
exec tests/ut_part.sh build-asan/ut/ut_main "$part"
