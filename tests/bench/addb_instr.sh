#!/usr/bin/env bash
# addb_instr.sh BUILD [--json] [--writes N] [--gets N] [--rounds K]
#                [--keep DIR]
# The CPU cost of the always-on metrics (issue 30) in instructions, which
# do not move with the machine's load as wall-clock figures do (20-40 % a
# side on a shared 2-core machine, ten times the 2 % goal).  --keep DIR
# keeps callgrind's files there, for callgrind_annotate.
#
# Each of strata_bench_addb (metrics on) and strata_bench_addb_off (every
# library object built with -DSTRATA_NO_ADDB) runs under valgrind
# --tool=callgrind --instr-atstart=no, once per workload: the bench makes
# its store uninstrumented, then runs N 4 KiB writes to STABLE at 16 in
# flight, or N index GETs at 1 in flight, between callgrind's START and
# STOP_INSTRUMENTATION (--one --ops N --phase w4k|get1), so that the
# count is that of the workload alone, every thread of the process.  The
# figure is the "totals:" line of callgrind's file over the ops made.
# The GET count repeats to 0.01 %, one run a side; the write count moves
# 1-2 % from run to run (how many group commits the writes fall into, with
# their LMDB commits, depends on the timing), so writes run in K rounds
# (default 3), the two sides of a round side by side, and the figures are
# the medians, the ratio the median of the rounds' ratios.
#
# What it counts: user-space instructions (callgrind's Ir).  Not counted:
# the kernel (system calls, pwrite, fsync, futex waits) and the devices'
# time; clock reads are system calls under valgrind (no vDSO), so the
# vDSO's part of each clock read of the metrics is missing here.
#
# Skipped, with a line saying so, when valgrind is not installed.  The
# stores go to a temporary directory under /tmp (files, O_DIRECT), their
# NVRAM devices to /dev/shm; all removed at the end.  2-3 minutes on 2
# cores.
set -u
B=${1:-build}
shift || true
json=0 writes=3200 gets=20000 rounds=3 keep=
while [ $# -gt 0 ]; do
	case $1 in
	--json) json=1 ;;
	--writes) writes=$2; shift ;;
	--gets) gets=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--keep) keep=$2; shift ;;
	*) ;;  # run-bench.sh's other options are not ours
	esac
	shift
done
say() { if [ $json = 1 ]; then echo "$@" >&2; else echo "$@"; fi; }
if ! command -v valgrind >/dev/null 2>&1; then
	say "# addb_instr: valgrind not installed: instruction counts of" \
		"issue 30 skipped (apt-get install valgrind)"
	exit 0
fi
on=$B/strata_bench_addb off=$B/strata_bench_addb_off
for b in "$on" "$off"; do
	if [ ! -x "$b" ]; then
		echo "addb_instr: $b missing (make $b)" >&2
		exit 1
	fi
done
tmp=$(mktemp -d /tmp/strata-addb-instr.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
[ -n "$keep" ] && mkdir -p "$keep"
# Both programs run as $tmp/X/strata_bench_addb with their stores in
# $tmp/X: a program name 4 bytes longer moves the initial stack, and with
# it the alignment of the bench's key buffers, which changes the
# instructions glibc's memcmp takes inside LMDB by 1 % of a GET.
mkdir "$tmp/a" "$tmp/b" && cp "$on" "$tmp/a/strata_bench_addb" &&
	cp "$off" "$tmp/b/strata_bench_addb" || exit 1
on=$tmp/a/strata_bench_addb off=$tmp/b/strata_bench_addb

# count TAG BIN PHASE N: instructions of N ops of PHASE, and the ops
# made, as "INSTR OPS" in $tmp/TAG.res; returns non-zero on failure.
count() {
	local tag=$1 bin=$2 phase=$3 n=$4 out line ops
	out=$tmp/$tag.cg
	line=$(valgrind --tool=callgrind --instr-atstart=no \
		--callgrind-out-file="$out" "$bin" --dir "${bin%/*}" --one \
		--ops "$n" --phase "$phase" 2>"$tmp/$tag.log")
	case $line in
	*"marks 1"*) ;;
	*) echo "addb_instr: $bin --phase $phase: no callgrind marks or" \
		"failed ('$line'; built without <valgrind/callgrind.h>?):" \
		"$(tail -3 "$tmp/$tag.log")" >&2
	   return 1 ;;
	esac
	if [ "$phase" = w4k ]; then ops=${line#*writes }; else ops=${line#*gets }; fi
	ops=${ops%% *}
	[ -n "$keep" ] && cp "$out" "$keep/$tag.callgrind.out"
	line=$(awk '/^totals:/ {print $2}' "$out")
	if [ "${line:-0}" = 0 ] || [ "${ops:-0}" = 0 ]; then
		echo "addb_instr: $bin --phase $phase: no count in $out" >&2
		return 1
	fi
	echo "$line $ops" >"$tmp/$tag.res"
}

# round PHASE N R: both sides of round R side by side; prints
# "OURS RAW RATIO" (instructions per op).
round() {
	local phase=$1 n=$2 r=$3 p1 p2 ok=0 i_on o_on i_off o_off
	count "off-$phase-$r" "$off" "$phase" "$n" & p1=$!
	count "on-$phase-$r" "$on" "$phase" "$n" & p2=$!
	wait $p1 || ok=1
	wait $p2 || ok=1
	[ $ok = 0 ] || return 1
	read -r i_off o_off <"$tmp/off-$phase-$r.res"
	read -r i_on o_on <"$tmp/on-$phase-$r.res"
	awk -v a="$i_on" -v b="$o_on" -v c="$i_off" -v d="$o_off" 'BEGIN {
		printf "%.1f %.1f %.4f\n", a / b, c / d, (a / b) / (c / d) }'
}

say "# addb_instr: CPU cost of the metrics in user-space instructions" \
	"(valgrind --tool=callgrind; kernel time, fsync and device time not" \
	"counted); embedded store in $tmp: flash = files (O_DIRECT), NVRAM" \
	"emulated on /dev/shm (tmpfs) through PMDK"
rc=0 first=1
[ $json = 1 ] && echo "["
[ $json = 0 ] && printf "%-28s %9s %9s %7s  %-8s %-11s %s\n" name ours raw \
	ratio unit goal "raw = telemetry compiled out"
for phase in w4k get1; do
	if [ $phase = w4k ]; then
		n=$writes qd=16 k=$rounds name="4K write qd16, metrics"
	else
		n=$gets qd=1 k=1 name="idx GET qd1, metrics"
	fi
	: >"$tmp/$phase.figs"
	for ((r = 1; r <= k; r++)); do
		round $phase "$n" $r >>"$tmp/$phase.figs" || { rc=1; break; }
	done
	[ "$(wc -l <"$tmp/$phase.figs")" = "$k" ] || continue
	# medians of the rounds' figures and ratios, and the ratios' range
	fig=$(sort -n -k3 "$tmp/$phase.figs" | awk '
		{ o[NR] = $1; w[NR] = $2; q[NR] = $3 }
		function med(v, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		}
		END { printf "%.1f %.1f %.4f %.4f %.4f %s\n", med(o, NR),
			med(w, NR), med(q, NR), q[1], q[NR],
			med(q, NR) <= 1.02 ? "met" : "NOT" }')
	read -r ours raw ratio rmin rmax met <<<"$fig"
	if [ $json = 1 ]; then
		[ $first = 1 ] || echo ","
		printf '  {"name": "%s", "ours": %s, "raw": %s, "ratio": %s, ' \
			"$name" "$ours" "$raw" "$ratio"
		printf '"unit": "instr/op", "in_flight": %s, "ops": %s, ' "$qd" "$n"
		printf '"rounds": %s, "ratio_min": %s, "ratio_max": %s, ' \
			"$k" "$rmin" "$rmax"
		printf '"emulation": "user-space instructions (callgrind Ir), '
		printf 'kernel and device time not counted; flash = files '
		printf '(O_DIRECT), NVRAM on /dev/shm", "lower_is_better": true, '
		printf '"goal": 1.02, "met": %s}' \
			"$([ "$met" = met ] && echo true || echo false)"
		first=0
	else
		extra="$n ops"
		[ "$k" -gt 1 ] && extra="$extra; median of $k rounds, ratios $rmin-$rmax"
		printf "%-28s %9s %9s %7s  %-8s %-11s %s\n" "$name" "$ours" \
			"$raw" "$ratio" instr/op "<=1.02 $met" "$extra"
	fi
done
[ $json = 1 ] && printf "\n]\n"
say "# CPU cost only: fsync, pwrite and the kernel's part of clock reads" \
	"are not instructions counted here"
exit $rc
