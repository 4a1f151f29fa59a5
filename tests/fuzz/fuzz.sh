#!/usr/bin/env bash
# fuzz.sh BUILD [SECONDS] — build every libFuzzer target of targets.list
# with clang-14 (-fsanitize=fuzzer,address,undefined) into BUILD/fuzz/ and
# run each.
#
#   SECONDS given (make fuzz: 600): each target runs that long and the new
#     inputs it finds are added to its corpus in the tree
#     (tests/fuzz/corpus/NAME/); a target that ran fewer than FUZZ_MIN_RUNS
#     inputs (default 1000000) in that time goes on for the runs missing
#     (at most 3 x SECONDS more), and fails if it still has not.
#   SECONDS absent (make check): a bounded run of FUZZ_TOTAL seconds
#     (default 38) shared by all targets (at least 2 s each: every input of
#     the corpus and of crashes-NAME/ still runs, the rest of the time is
#     new inputs); the tree's corpus is read, new inputs go to a temporary
#     directory.
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
#             but s3_main.c, with the namespace's (S3_NS_SRCS), built
#             once per run into BUILD/fuzz/libs3gw.a, with
#             BUILD/libstrata.a and their libraries (the harness
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
	total=${FUZZ_TOTAL:-38}
	each=$(( total / (n > 0 ? n : 1) ))
	[ "$each" -lt 2 ] && each=2
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
	libcrypto json-c libcurl lua5.4"

# Objects are kept in BUILD/fuzz/obj/ and rebuilt only when their source
# or a header they include changed (clang -MMD).  cobjs SRC... compiles
# the out-of-date ones, two at a time, into the array "objs"; extra cflags
# in $xflags; returns 1 when one failed (log in BUILD/fuzz/obj.log).
uptodate() {
	local o=$1 d=${1%.o}.d f

	[ -f "$o" ] && [ -f "$d" ] || return 1
	for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$d"); do
		[ "$f" -nt "$o" ] && return 1
	done
	return 0
}
xflags=""
cobjs() {
	local src o jobs=0 bad=0

	objs=()
	for src in "$@"; do
		o="$out/obj/${src#"$B/"}"
		o="${o%.c}.o"
		objs+=("$o")
		uptodate "$o" && continue
		mkdir -p "$(dirname "$o")"
		rm -f "$o"
		# shellcheck disable=SC2086
		$CLANG $cflags $xflags -MMD -MF "${o%.o}.d" -c -o "$o" "$src" \
			>>"$out/obj.log" 2>&1 &
		jobs=$((jobs + 1))
		if [ "$jobs" -ge 2 ]; then
			wait -n || bad=1
			jobs=$((jobs - 1))
		fi
	done
	while [ "$jobs" -gt 0 ]; do
		wait -n || bad=1
		jobs=$((jobs - 1))
	done
	return $bad
}

# The gateway's objects (all but s3_main.c), once per run: "ok" or "failed".
s3gw_state=""
s3pkgs="libmicrohttpd"
s3gw_build() {
	local srcs src gw=()

	[ -n "$s3gw_state" ] && { [ "$s3gw_state" = ok ]; return; }
	s3gw_state=failed
	if [ ! -f "$B/libstrata.a" ]; then
		echo "fuzz: no $B/libstrata.a (make tests first)" \
			>>"$out/obj.log"
		return 1
	fi
	srcs=$(sed -n 's/^S3_SRCS *:= *$(addprefix gateways\/s3\/,\(.*\))$/\1/p' \
		gateways/s3/module.mk)
	# the packages the gateway's objects are compiled with (its own)
	s3pkgs=$(sed -n 's/.*pkg-config --cflags \([^)]*\) 2>\/dev\/null.*/\1/p' \
		gateways/s3/module.mk | head -1)
	for src in $srcs; do
		[ "$src" = s3_main.c ] || gw+=("gateways/s3/$src")
	done
	# the POSIX namespace the view buckets serve (S3_NS_SRCS)
	for src in $(sed -n 's/^S3_NS_SRCS *:= *\(.*\)$/\1/p' \
		gateways/s3/module.mk); do
		gw+=("$src")
	done
	xflags=$(pkg-config --cflags $libpkgs $s3pkgs)
	cobjs "${gw[@]}" || { xflags=""; return 1; }
	xflags=""
	rm -f "$out/libs3gw.a"
	ar rcs "$out/libs3gw.a" "${objs[@]}" || return 1
	s3gw_state=ok
}

: >"$out/obj.log"
# shellcheck disable=SC2086
if ! cobjs $gen core/errors.c core/log.c; then
	echo "fuzz: the common objects failed to build (see $out/obj.log)"
	grep -E 'error' "$out/obj.log" | head -5
	echo "0 passed, 1 failed"
	exit 1
fi
common=("${objs[@]}")

for line in "${targets[@]}"; do
	read -r name harness srcs <<<"$line"
	bin="$out/$name"
	corpus="tests/fuzz/corpus/$name"
	mkdir -p "$corpus"
	csrcs=()  # C sources (cached objects)
	args=()   # objects and flags
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
		*.c)
			csrcs+=("$s") ;;
		*)
			args+=("$s") ;;
		esac
	done
	if [ "${#csrcs[@]}" -gt 0 ]; then
		if ! cobjs "${csrcs[@]}"; then
			args+=(@s3gw-failed)
		else
			args+=("${objs[@]}")
		fi
	fi
	if [[ " ${args[*]} " == *" @s3gw-failed "* ]]; then
		echo "fuzz $name: its objects failed to build" \
			"(see $out/obj.log)"
		grep -E "error" "$out/obj.log" | head -5
		fail=$((fail + 1))
		continue
	fi
	# shellcheck disable=SC2086
	if ! $CLANG $cflags -o "$bin" "$harness" "${args[@]}" \
		"${common[@]}" "${largs[@]}" $libs \
		2>"$out/$name.build.log"; then
		echo "fuzz $name: build failed (see $out/$name.build.log)"
		tail -5 "$out/$name.build.log"
		fail=$((fail + 1))
		continue
	fi
	# The findings saved in crashes-NAME/ (fixed since) replay first:
	# each must now run clean.
	if compgen -G "tests/fuzz/crashes-$name/*" >/dev/null; then
		scratch=$(mktemp -d /dev/shm/strata-fuzz.XXXXXX 2>/dev/null ||
			mktemp -d)
		if (cd "$out" && FUZZ_SCRATCH=$scratch exec "./$name" \
			-timeout=5 -rss_limit_mb=2048 \
			"$top"/tests/fuzz/crashes-"$name"/*) </dev/null \
			>"$out/$name.replay.log" 2>&1; then
			echo "fuzz $name: reproducers of crashes-$name ok"
			pass=$((pass + 1))
		else
			echo "fuzz $name: FAILED: a reproducer of crashes-$name" \
				"(log $out/$name.replay.log)"
			grep -E 'ERROR|SUMMARY|runtime error' \
				"$out/$name.replay.log" | head -5
			fail=$((fail + 1))
		fi
		rm -rf "$scratch"
	fi
	if [ "$long" -eq 1 ]; then
		dirs=("$top/$corpus")
	else
		tmp=$(mktemp -d)
		dirs=("$tmp" "$top/$corpus")
	fi
	log="$out/$name.log"
	# the target's files (stores, credentials): in memory when possible
	scratch=$(mktemp -d /dev/shm/strata-fuzz.XXXXXX 2>/dev/null ||
		mktemp -d)
	(cd "$out" && FUZZ_SCRATCH=$scratch exec "./$name" -max_total_time="$each" -timeout=5 \
		-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		"${dirs[@]}") </dev/null >"$log" 2>&1
	rc=$?
	execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" |
		grep -Eo '[0-9]+$')
	if [ "$rc" -eq 0 ] && [ "$long" -eq 1 ] &&
	   [ "${execs:-0}" -lt "$min_runs" ]; then
		# slower than a million in SECONDS here: go on (from the
		# corpus it grew) for the runs missing, at most 3 x SECONDS
		(cd "$out" && FUZZ_SCRATCH=$scratch exec "./$name" \
			-runs=$((min_runs - ${execs:-0})) \
			-max_total_time=$((each * 3)) -timeout=5 \
			-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
			"${dirs[@]}") </dev/null >"$log.more" 2>&1
		rc=$?
		more=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' \
			"$log.more" | grep -Eo '[0-9]+$')
		execs=$(( ${execs:-0} + ${more:-0} ))
		cat "$log.more" >>"$log"
		rm -f "$log.more"
	fi
	rm -rf "$scratch"
	if [ "$rc" -eq 0 ] && [ "$long" -eq 1 ] &&
	   [ "${execs:-0}" -lt "$min_runs" ]; then
		echo "fuzz $name: only ${execs:-0} runs in $((each * 4))s (at" \
			"least $min_runs wanted: give it more seconds)"
		fail=$((fail + 1))
	elif [ "$rc" -eq 0 ]; then
		echo "fuzz $name: ok, ${execs:-?} runs," \
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
