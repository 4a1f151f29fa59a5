#!/usr/bin/env bash
# fuzz.sh BUILD [SECONDS] — build every libFuzzer target of targets.list
# with clang-14 (-fsanitize=fuzzer,address) into BUILD/fuzz/ and run each.
#
#   SECONDS given (make fuzz: 600): each target runs that long and the new
#     inputs it finds are added to its corpus in the tree
#     (tests/fuzz/corpus/NAME/).
#   SECONDS absent (make check): a bounded run of FUZZ_TOTAL seconds
#     (default 24) shared by all targets (at least 3 s each); the tree's
#     corpus is read, new inputs go to a temporary directory.
# A target passes when libFuzzer finds no crash, leak, timeout or abort.
# Ends with "N passed, N failed" (one test per target).
set -u
B=${1:-build}
secs=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top" || exit 2
CLANG=${CLANG:-clang-14}
out="$B/fuzz"
mkdir -p "$out"
pass=0 fail=0

if ! command -v "$CLANG" >/dev/null; then
	echo "fuzz: $CLANG not found (make deps installs clang-14)"
	echo "0 passed, 1 failed"
	exit 1
fi
gen=$(find "$B/gen" -name '*.pb-c.c' 2>/dev/null | sort)
if [ -z "$gen" ]; then
	echo "fuzz: no generated protobuf-c code in $B/gen (make tests first)"
	echo "0 passed, 1 failed"
	exit 1
fi
mapfile -t targets < <(grep -Ev '^[[:space:]]*(#|$)' "$here/targets.list")
n=${#targets[@]}
if [ -z "$secs" ]; then
	total=${FUZZ_TOTAL:-24}
	each=$(( total / (n > 0 ? n : 1) ))
	[ "$each" -lt 3 ] && each=3
	long=0
else
	each=$secs
	long=1
fi
cflags="-g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address \
	-I. -I$B/gen $(pkg-config --cflags libprotobuf-c libfabric)"
libs="$(pkg-config --libs libprotobuf-c)"

for line in "${targets[@]}"; do
	read -r name harness srcs <<<"$line"
	bin="$out/$name"
	corpus="tests/fuzz/corpus/$name"
	mkdir -p "$corpus"
	# shellcheck disable=SC2086
	if ! $CLANG $cflags -o "$bin" "$harness" $srcs $gen core/errors.c \
		core/log.c $libs 2>"$out/$name.build.log"; then
		echo "fuzz $name: build failed (see $out/$name.build.log)"
		tail -5 "$out/$name.build.log"
		fail=$((fail + 1))
		continue
	fi
	if [ "$long" -eq 1 ]; then
		dirs=("$top/$corpus")
	else
		tmp=$(mktemp -d)
		dirs=("$tmp" "$top/$corpus")
	fi
	log="$out/$name.log"
	(cd "$out" && exec "./$name" -max_total_time="$each" -timeout=5 \
		-rss_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
		"${dirs[@]}") >"$log" 2>&1
	rc=$?
	execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" |
		grep -Eo '[0-9]+$')
	if [ "$rc" -eq 0 ]; then
		echo "fuzz $name: ok, ${execs:-?} runs in ${each}s," \
			"corpus $(ls "$corpus" | wc -l) files"
		pass=$((pass + 1))
	else
		echo "fuzz $name: FAILED (rc $rc), log $log; crash input in $out/"
		grep -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | head -5
		fail=$((fail + 1))
	fi
	[ "$long" -eq 0 ] && rm -rf "$tmp"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
