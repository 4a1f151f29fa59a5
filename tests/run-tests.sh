#!/usr/bin/env bash
# run-tests.sh BUILD — run every test of Strata and total them.
#
# Each step is a program or script that ends its output with the line
# "N passed, N failed"; this script adds them up and ends with the same line
# for the whole run.  A step that exits non-zero without such a line counts
# as one failed test.  Steps are listed in tests/steps.list, one per line:
# a lane ("local" or "net") and the command ("$B" is the build directory).
#
# The two lanes run side by side, each lane's steps one after another in
# list order: most steps wait far more than they compute (servers' call
# timeouts, restarts, SIGKILL loops), so on 2 cores two lanes take about
# half the time of one.  The lanes keep apart what two steps could share:
# every step that starts servers on a fixed loopback port range is in
# lane "net", but for two whose ranges no other step uses (steps.list).
# TEST_JOBS=1 runs every step in list order, one at a time.
set -u
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
cd "$top" || exit 2
export B
jobs=${TEST_JOBS:-2}
# NVRAM devices of test stores (/dev/shm/strata-*) present before the run:
# anything new still there at the end is named in a warning (not counted
# as a failure; another job running at the same time may own it).
shm_before=$(ls -d /dev/shm/strata-* 2>/dev/null | sort)
log_dir="$B/test-logs"
mkdir -p "$log_dir"
res_dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-run-tests.XXXXXX") || exit 2
trap 'rm -rf "$res_dir"' EXIT

# run_step STEP RESULTS: run one step, append "passed failed" to RESULTS
# and print its line (and the tail of its log on failure) as one block.
run_step() {
	local step=$1 res=$2 name log start rc line p f out
	name=$(echo "$step" | awk '{print $1}' | xargs basename)
	log="$log_dir/$name.log"
	# a step listed twice (other arguments) keeps both logs
	[ -e "$res_dir/seen.$name" ] && log="$log_dir/$name.$(wc -l <"$res_dir/seen.$name").log"
	echo >>"$res_dir/seen.$name"
	start=$(date +%s)
	eval "$step" </dev/null >"$log" 2>&1
	rc=$?
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	if [ -n "$line" ]; then
		p=$(echo "$line" | awk '{print $1}')
		f=$(echo "$line" | awk '{print $3}')
		[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	else
		p=0; f=1
		[ "$rc" -eq 0 ] && { p=1; f=0; }
	fi
	echo "$p $f" >>"$res"
	out=$(printf '%-28s %4d passed, %3d failed  (%ss)  log: %s' "$name" \
		"$p" "$f" "$(( $(date +%s) - start ))" "$log")
	if [ "$f" -ne 0 ]; then
		out="$out
---- last lines of $log ----
$(tail -25 "$log")
----"
	fi
	# one write per block, so that the lanes' lines do not interleave
	flock "$res_dir/print.lock" printf '%s\n' "$out"
}

# run_lane LANE: the steps of LANE ("" for all) in list order.
run_lane() {
	local step
	while IFS= read -r step; do
		case "$step" in ''|'#'*) continue ;; esac
		[ -n "$1" ] && [ "${step%% *}" != "$1" ] && continue
		run_step "${step#* }" "$res_dir/res.${1:-all}"
	done < "$here/steps.list"
}

start=$(date +%s)
if [ "$jobs" -le 1 ]; then
	run_lane ""
else
	run_lane local & lpid=$!
	run_lane net & npid=$!
	wait "$lpid" "$npid"
fi
pass=0 fail=0
while read -r p f; do
	pass=$((pass + p)); fail=$((fail + f))
done < <(cat "$res_dir"/res.* 2>/dev/null)
nsteps=$(grep -cvE '^(#|$)' "$here/steps.list")
ran=$(cat "$res_dir"/res.* 2>/dev/null | wc -l)
if [ "$ran" -ne "$nsteps" ]; then
	echo "run-tests.sh: $ran of $nsteps steps reported"
	fail=$((fail + nsteps - ran))
fi
for f in $(comm -13 <(echo "$shm_before") \
	   <(ls -d /dev/shm/strata-* 2>/dev/null | sort)); do
	echo "WARNING: $f was made during this run and is still there" \
	     "(a test did not remove its store's NVRAM device, or another" \
	     "job's)"
done
echo "all steps: $(( $(date +%s) - start ))s with $jobs lane(s)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
