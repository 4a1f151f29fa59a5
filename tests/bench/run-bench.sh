#!/usr/bin/env bash
# run-bench.sh BUILD [--json] [--seconds S] — run strata_bench (make bench).
#
# The data directory is $BENCH_DIR, else BUILD/bench-data, so that the store
# and the raw baselines share one file system; the NVRAM device goes to
# /dev/shm.  Everything the run made is removed at the end.
set -u
B=${1:-build}
shift || true
dir=${BENCH_DIR:-$B/bench-data}
bin=$B/strata_bench
if [ ! -x "$bin" ]; then
	echo "run-bench: $bin missing (make tests)" >&2
	exit 1
fi
mkdir -p "$dir"
"$bin" --dir "$dir" "$@"
rc=$?
rm -rf "$dir/raw-lmdb"
rmdir "$dir" 2>/dev/null
exit $rc
