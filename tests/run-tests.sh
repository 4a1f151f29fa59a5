#!/usr/bin/env bash
# run-tests.sh BUILD — run every test of Strata and total them.
#
# Each step is a program or script that ends its output with the line
# "N passed, N failed"; this script adds them up and ends with the same line
# for the whole run.  A step that exits non-zero without such a line counts
# as one failed test, and so does a step that reports "0 passed, 0 failed"
# (it checked nothing: a tool it needs is missing).  Steps are listed in
# tests/steps.list, one per line: a group and the command ("$B" is the
# build directory).
#
# TEST_JOBS workers (default 3) take steps from one queue in list order:
# most steps wait far more than they compute (servers' call timeouts,
# restarts, SIGKILL loops: about a quarter of their wall time is CPU), so
# on 2 cores three workers take about a third of the time of one (five
# loaded the 2 cores to 16-22, and the HA steps' takeovers outlasted
# their bounds: tests/README.md "Workers").  Steps of one group (a loopback port range, or
# anything else two steps must not share) never run at the same time: a
# free worker takes the first step not yet run whose group is not running;
# group "-" shares nothing.  The list is ordered longest first, so the
# short steps fill the ends.  TEST_JOBS=1 runs every step in list order,
# one at a time.
set -u
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
cd "$top" || exit 2
export B
jobs=${TEST_JOBS:-3}
case "$jobs" in ''|*[!0-9]*|0) echo "run-tests.sh: TEST_JOBS='$jobs' is not a count of 1 or more" >&2; exit 2 ;; esac
# NVRAM devices of test stores (/dev/shm/strata-*) present before the run:
# anything new still there at the end is named in a warning (not counted
# as a failure; another job running at the same time may own it).
# Metrics regions (strata-addb.PID, addb/addb.h) are not devices: those of
# processes a test SIGKILLed stay until swept, which the end of the run
# does ($B/strata metrics --sweep).
shm_list() { ls -d /dev/shm/strata-* 2>/dev/null | grep -v '/strata-addb\.' | sort; }
shm_before=$(shm_list)
log_dir="$B/test-logs"
mkdir -p "$log_dir"
res_dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-run-tests.XXXXXX") || exit 2
trap 'rm -rf "$res_dir"' EXIT

# queue_make: $res_dir/queue gets one line per step, "LOG GROUP COMMAND",
# in list order; a step named twice (other arguments) gets a second log.
queue_make() {
	local grp cmd name log
	declare -A seen=()
	while read -r grp cmd; do
		case "$grp" in ''|'#'*) continue ;; esac
		name=$(echo "$cmd" | awk '{print $1}' | xargs basename)
		log="$log_dir/$name.log"
		[ -n "${seen[$name]:-}" ] && log="$log_dir/$name.${seen[$name]}.log"
		seen[$name]=$(( ${seen[$name]:-0} + 1 ))
		printf '%s %s %s\n' "$log" "$grp" "$cmd"
	done < "$here/steps.list" > "$res_dir/queue"
	: > "$res_dir/busy"
}

# queue_take: under the queue lock, print the first queued step whose
# group is not running and take it off the queue (its group marked busy);
# print "wait" when every queued step's group is running, "" when none is
# left.
queue_take() {
	local line grp took=""
	exec 9>"$res_dir/queue.lock"
	flock 9
	: > "$res_dir/queue.new"
	while IFS= read -r line; do
		grp=$(echo "$line" | awk '{print $2}')
		if [ -z "$took" ] && { [ "$grp" = - ] ||
		   ! grep -qxF -- "$grp" "$res_dir/busy"; }; then
			took=$line
			[ "$grp" = - ] || echo "$grp" >> "$res_dir/busy"
		else
			echo "$line" >> "$res_dir/queue.new"
		fi
	done < "$res_dir/queue"
	mv "$res_dir/queue.new" "$res_dir/queue"
	if [ -n "$took" ]; then echo "$took"
	elif [ -s "$res_dir/queue" ]; then echo wait
	fi
	exec 9>&-
}

# queue_done GROUP: the group's step ended; others of it may start.
queue_done() {
	[ "$1" = - ] && return
	exec 9>"$res_dir/queue.lock"
	flock 9
	grep -vxF -- "$1" "$res_dir/busy" > "$res_dir/busy.new"
	mv "$res_dir/busy.new" "$res_dir/busy"
	exec 9>&-
}

# run_step LOG COMMAND RESULTS: run one step, append "passed failed" to
# RESULTS and print its line (and the tail of its log on failure) as one
# block.
run_step() {
	local log=$1 step=$2 res=$3 name start rc line p f out cpu
	name=$(basename "$log" .log)
	start=$(date +%s)
	# in a subshell whose `times` gives the CPU the step's processes
	# used (those it waited for: a daemonized server's is not counted)
	# (`times` itself in this shell, not in a pipe's subshell)
	( eval "$step" </dev/null >"$log" 2>&1; rc=$?
	  times >"$res_dir/times-of.$name"; exit $rc )
	rc=$?
	cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%d\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] + 0.5 }' \
		"$res_dir/times-of.$name" 2>/dev/null | tee "$res_dir/cpu.$name")
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	if [ -n "$line" ]; then
		p=$(echo "$line" | awk '{print $1}')
		f=$(echo "$line" | awk '{print $3}')
		[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
		# a step that checked nothing (a tool missing, nothing it
		# could run) is a failure, never a silent pass
		[ "$p" -eq 0 ] && [ "$f" -eq 0 ] && f=1
	else
		p=0; f=1
		[ "$rc" -eq 0 ] && { p=1; f=0; }
	fi
	echo "$p $f" >>"$res"
	[ "$f" -ne 0 ] && echo "$name $f $log" >>"$res_dir/failed"
	echo "$(( $(date +%s) - start )) $name" >>"$res_dir/times.$BASHPID"
	out=$(printf '%-28s %4d passed, %3d failed  (%ss, cpu %ss)  log: %s' \
		"$name" "$p" "$f" "$(( $(date +%s) - start ))" "${cpu:-?}" "$log")
	if [ "$f" -ne 0 ]; then
		out="$out
---- last lines of $log ----
$(tail -25 "$log")
----"
	fi
	# one write per block, so that the workers' lines do not interleave
	flock "$res_dir/print.lock" printf '%s\n' "$out"
}

# worker N: take steps until the queue is empty.  A worker with nothing
# it may start looks again each second (bounded: every running step ends).
worker() {
	local t log grp cmd
	while :; do
		t=$(queue_take)
		case "$t" in
		'') return ;;
		wait) sleep 1; continue ;;
		esac
		read -r log grp cmd <<<"$t"
		run_step "$log" "$cmd" "$res_dir/res.$1"
		queue_done "$grp"
	done
}

# busy_ticks: the machine's CPU time so far (user, nice, system, irq,
# softirq, steal of every CPU, in clock ticks): the run's own and any
# other job's (steps.list is ordered by wall times, which depend on it).
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
start=$(date +%s)
busy0=$(busy_ticks)
queue_make
pids=()
for ((i = 1; i <= jobs; i++)); do
	worker "$i" & pids+=($!)
done
wait "${pids[@]}"
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
[ -x "$B/strata" ] && "$B/strata" -q metrics --sweep >/dev/null 2>&1
for f in $(comm -13 <(echo "$shm_before") <(shm_list)); do
	echo "WARNING: $f was made during this run and is still there" \
	     "(a test did not remove its store's NVRAM device, or another" \
	     "job's)"
done
wall=$(( $(date +%s) - start ))
echo "all steps: ${wall}s with $jobs worker(s)"
# How busy the machine was: the steps' CPU (each step's line: "cpu Ns")
# beside the CPU the machine had; a run whose CPUs were busy all along
# goes faster only with less CPU, not with another order.
echo "machine CPU busy: $(( ($(busy_ticks) - busy0) / $(getconf CLK_TCK) ))s of $(( wall * $(nproc) ))s" \
     "($(nproc) CPUs); the steps' own: $(cat "$res_dir"/cpu.* 2>/dev/null |
	awk '{ s += $1 } END { print s + 0 }')s"
# The longest steps, in one line near the end (a CI summary shows only
# the last lines): where the run's time went.
echo "longest steps: $(cat "$res_dir"/times.* 2>/dev/null | sort -rn |
	head -12 | awk '{printf "%s%s %ss", (NR > 1 ? ", " : ""), $2, $1}')"
# fail_lines LOG: the failing lines of a step's log, each with the lines
# that follow it up to the next check (what a test prints after a failure:
# the tail of a tool's output, a suite's failing tests), at most 16 lines,
# then a cluster test's diagnosis lines ("diag: ", at most 12);
# a device's "failed: ..." log lines (expected in the repair suites) are
# not failures.
fail_lines() {
	grep -vE 'core/dev\.c:[0-9]+: device .* failed: ' "$1" |
		awk 'BEGIN { n = 0 }
		/^ *ok |^[0-9]+ passed, [0-9]+ failed$|(^|[^0-9])0 failed|none left a trace/ { after = 0; next }
		/FAIL|failures|^ +[0-9]+\. .*:[0-9]+ |ASSERT|ERROR|Assertion|not ok|[Ff]ailed/ { after = 4 }
		after > 0 { print; after--; if (++n >= 16) exit }'
	# A cluster test's diagnosis after a failure (cluster_lib.sh
	# cl_diag): each server running or gone, its log's last line.
	grep -E '^diag: ' "$1" | head -n 12
}

# The failed steps again, with their failing lines, just above the total:
# a reader of only the last lines (a CI summary) still sees what failed.
if [ -s "$res_dir/failed" ]; then
	echo "failed steps:"
	while read -r name f log; do
		echo "  $name: $f failed (log: $log)"
		fail_lines "$log" | sed 's/^/    /'
	done < "$res_dir/failed"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
