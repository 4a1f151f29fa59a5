#!/usr/bin/env bash
# fuzz.sh BUILD [SECONDS] — build every libFuzzer target of targets.list
# with clang-14 (-fsanitize=fuzzer,address,undefined) into BUILD/fuzz/ and
# run each.
#
#   SECONDS given (make fuzz: 600): each target runs that long and the new
#     inputs it finds are added to its corpus in the tree
#     (tests/fuzz/corpus/NAME/); a target that ran fewer than FUZZ_MIN_RUNS
#     inputs (default 1000000) in that time fails: give it more seconds.
#   SECONDS absent (make check): a bounded run of FUZZ_TOTAL seconds
#     (default 48) shared by all targets (at least 3 s each); the tree's
#     corpus is read, new inputs go to a temporary directory.
# FUZZ_ONLY="NAME ..." runs only those targets.
# A target passes when libFuzzer finds no crash, leak, timeout, abort or
# undefined behaviour.
# Ends with "N passed, N failed" (one test per target).
#
# targets.list SOURCES may hold, besides C files:
#   pkg:NAME  pkg-config's --cflags and --libs of NAME;
#   -...      a compiler or linker flag, passed as is;
#   @lib      BUILD/libstrata.a (not instrumented) and its libraries, for
#             what the instrumented sources call beyond themselves;
#   @s3gw     the S3 gateway: its sources (S3_SRCS of gateways/s3/module.mk)
#             but s3_main.c, built once per run into BUILD/fuzz/libs3gw.a,
#             with BUILD/libstrata.a and their libraries (the harness
#             includes s3_main.c itself, see fuzz_s3.h).
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
min_runs=${FUZZ_MIN_RUNS:-1000000}

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
mapfile -t targets < <(grep -Ev '^[[:space:]]*(#|$)' "$here/targets.list" |
	while read -r t rest; do
		if [ -z "${FUZZ_ONLY:-}" ] || [[ " $FUZZ_ONLY " == *" $t "* ]]
		then
			echo "$t $rest"
		fi
	done)
n=${#targets[@]}
if [ -z "$secs" ]; then
	total=${FUZZ_TOTAL:-48}
	each=$(( total / (n > 0 ? n : 1) ))
	[ "$each" -lt 3 ] && each=3
	long=0
else
	each=$secs
	long=1
fi
# Undefined behaviour aborts the target, but for the known findings
# ubsan.ignore lists (README.md "Findings").
san="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fsanitize-ignorelist=$here/ubsan.ignore"
cflags="-g -O1 -std=gnu11 -D_GNU_SOURCE $san -I. -I$B/gen \
	$(pkg-config --cflags libprotobuf-c libfabric)"
libs="$(pkg-config --libs libprotobuf-c)"
libpkgs="lmdb libpmem2 libisal liburcu yaml-0.1 libprotobuf-c libfabric \
	libcrypto"

# The gateway's objects (all but s3_main.c), once per run: "ok" or "failed".
s3gw_state=""
s3pkgs="libmicrohttpd"
s3gw_build() {
	local srcs src obj objs=()

	[ -n "$s3gw_state" ] && { [ "$s3gw_state" = ok ]; return; }
	s3gw_state=failed
	if [ ! -f "$B/libstrata.a" ]; then
		echo "fuzz: no $B/libstrata.a (make tests first)" \
			>"$out/s3gw.build.log"
		return 1
	fi
	srcs=$(sed -n 's/^S3_SRCS *:= *$(addprefix gateways\/s3\/,\(.*\))$/\1/p' \
		gateways/s3/module.mk)
	# the packages the gateway's objects are compiled with (its own)
	s3pkgs=$(sed -n 's/.*pkg-config --cflags \([^)]*\) 2>\/dev\/null.*/\1/p' \
		gateways/s3/module.mk | head -1)
	mkdir -p "$out/s3gw"
	rm -f "$out/s3gw/"*.o
	: >"$out/s3gw.build.log"
	for src in $srcs; do
		[ "$src" = s3_main.c ] && continue
		obj="$out/s3gw/${src%.c}.o"
		objs+=("$obj")
		# shellcheck disable=SC2046
		$CLANG $cflags $(pkg-config --cflags $libpkgs $s3pkgs) -c \
			-o "$obj" "gateways/s3/$src" \
			>>"$out/s3gw.build.log" 2>&1 &
	done
	wait || true
	for obj in "${objs[@]}"; do
		[ -f "$obj" ] || return 1
	done
	rm -f "$out/libs3gw.a"
	ar rcs "$out/libs3gw.a" "${objs[@]}" || return 1
	s3gw_state=ok
}

for line in "${targets[@]}"; do
	read -r name harness srcs <<<"$line"
	bin="$out/$name"
	corpus="tests/fuzz/corpus/$name"
	mkdir -p "$corpus"
	args=()   # sources and flags
	largs=()  # archives and libraries, after every object
	for s in $srcs; do
		case "$s" in
		pkg:*)
			# shellcheck disable=SC2207
			largs+=($(pkg-config --cflags --libs "${s#pkg:}")) ;;
		@s3gw)
			if ! s3gw_build; then
				args+=(@s3gw-failed)
				continue
			fi
			# shellcheck disable=SC2207
			largs+=("$out/libs3gw.a" "$B/libstrata.a"
			       $(pkg-config --cflags --libs $libpkgs \
				 $s3pkgs) -lpthread) ;;
		@lib)
			# shellcheck disable=SC2207
			largs+=("$B/libstrata.a" $(pkg-config --cflags --libs \
				$libpkgs) -lpthread) ;;
		*)
			args+=("$s") ;;
		esac
	done
	if [[ " ${args[*]} " == *" @s3gw-failed "* ]]; then
		echo "fuzz $name: the gateway's objects failed to build" \
			"(see $out/s3gw.build.log)"
		grep -E 'error' "$out/s3gw.build.log" | head -5
		fail=$((fail + 1))
		continue
	fi
	# shellcheck disable=SC2086
	if ! $CLANG $cflags -o "$bin" "$harness" "${args[@]}" $gen \
		core/errors.c core/log.c "${largs[@]}" $libs \
		2>"$out/$name.build.log"; then
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
		-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		"${dirs[@]}") </dev/null >"$log" 2>&1
	rc=$?
	execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" |
		grep -Eo '[0-9]+$')
	if [ "$rc" -eq 0 ] && [ "$long" -eq 1 ] &&
	   [ "${execs:-0}" -lt "$min_runs" ]; then
		echo "fuzz $name: only ${execs:-0} runs in ${each}s (at least" \
			"$min_runs wanted: give it more seconds)"
		fail=$((fail + 1))
	elif [ "$rc" -eq 0 ]; then
		echo "fuzz $name: ok, ${execs:-?} runs in ${each}s," \
			"corpus $(ls "$corpus" | wc -l) files"
		pass=$((pass + 1))
	else
		echo "fuzz $name: FAILED (rc $rc), log $log; crash input in $out/"
		grep -E 'ERROR|SUMMARY|runtime error|==[0-9]+==' "$log" | head -5
		fail=$((fail + 1))
	fi
	[ "$long" -eq 0 ] && rm -rf "$tmp"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
