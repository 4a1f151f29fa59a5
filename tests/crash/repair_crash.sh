#!/usr/bin/env bash
# repair_crash.sh BUILD [ROUNDS] — crash tests of repair and of the SMR
# cleaner (program: BUILD/repair_crash, see tests/crash/repair_crash.c).
#
# Repair, ROUNDS times (default 5), each on a new store: repair_crash rinit
# fills pdclust and mirror objects on six sas devices (content from a seed)
# and fails one device; "repair_crash repair DIR model" repairs it with the
# device model on and is killed with SIGKILL at a random point of the walk:
# after a random number (0-4) of its progress lines ("batch N", one between
# batches) and then a random 0-40 ms, so kills land before, between and
# inside batches whatever the speed of the machine (the walk has about 5
# batches); a second repair must finish, and rcheck must find every byte,
# the device REPAIRED, no read needing reconstruction and a clean scrub.
# At least one second repair must report that it resumed the killed one
# (one more check; a kill after 2 progress lines always leaves a durable
# batch, since batch i + 1 is queued only once batch i is durable, and the
# last round kills after at least 2 when no earlier round resumed).
#
# SMR cleaning, ROUNDS times on one store: swrite overwrites ranges of two
# SMR objects (logging each write before launch and once STABLE) and runs
# the cleaner; it is killed a random 0-600 ms after it says "cleaning";
# scheck must find every acknowledged block, the write in flight all there
# or not at all, and the same after cleaning again.
#
# Prints the seed (CRASH_SEED replays it), one line per round, the elapsed
# time and "N passed, N failed".  Stores live under $TMPDIR (default /tmp)
# and are removed at the end unless CRASH_KEEP is set.
set -u
B=${1:-build}
ROUNDS=${2:-5}
prog=$B/repair_crash
seed=${CRASH_SEED:-$$}
RANDOM=$seed
start=$(date +%s%N)
pass=0
fail=0

if [ ! -x "$prog" ]; then
	echo "repair_crash: $prog missing (make tests)"
	echo "0 passed, 1 failed"
	exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-rcrash.XXXXXX")
cleanup() {
	[ -n "${CRASH_KEEP:-}" ] && { echo "repair_crash: kept $work"; return; }
	rm -rf "$work"
}
trap cleanup EXIT
echo "repair_crash: seed $seed, $ROUNDS rounds each, under $work"

# Sleep a number of milliseconds.
sleep_ms() {
	sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"
}

# Wait (at most 30 s) until file $1 has a line $2; false if it never does
# or process $3 ends first.
wait_line() {
	local i
	for i in $(seq 1 3000); do
		grep -qx "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# Wait (at most 30 s) until file $1 has $2 lines starting with "batch ";
# false if it never does or process $3 ends first.
wait_batches() {
	local i
	for i in $(seq 1 3000); do
		[ "$(grep -c '^batch ' "$1" 2>/dev/null)" -ge "$2" ] && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# Start "$@" in the background with output to $log, wait for line $word,
# then for $batches progress lines (0: none), kill it a random 0..$max ms
# later.  Sets ms and killed (1 if the kill landed, 0 if it had ended;
# then its status must be 0).
kill_during() {
	local word=$1 max=$2 pid st
	shift 2
	"$@" > "$log" 2>&1 &
	pid=$!
	killed=0
	ms=$((RANDOM % (max + 1)))
	if wait_line "$log" "$word" "$pid" &&
	   wait_batches "$log" "${batches:-0}" "$pid"; then
		sleep_ms "$ms"
	fi
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	st=$?
	[ "$st" -eq 137 ] && killed=1
	[ "$st" -eq 137 ] || [ "$st" -eq 0 ]
}

report() {
	local ok=$1 what=$2
	if [ "$ok" -eq 0 ]; then
		pass=$((pass + 1))
		echo "repair_crash: $what: ok"
	else
		fail=$((fail + 1))
		echo "repair_crash: $what: FAILED"
		for f in "$work"/*.log; do
			sed "s|^|  $(basename "$f"): |" "$f" | grep -v '^.*: strata\[' | tail -6
		done
	fi
}

resumed=0
for round in $(seq 1 "$ROUNDS"); do
	store=$work/repair$round
	s=$((seed * 10 + round))
	rm -f "$work"/*.log
	log=$work/rinit.log
	ok=1
	if "$prog" rinit "$store" "$s" > "$log" 2>&1; then
		log=$work/repair1.log
		batches=$((RANDOM % 5))
		# the last round kills after 2 progress lines when no round
		# has resumed yet, so that the resume check below cannot fail
		# by the draw alone (0 or 1 line in all 5 rounds: ~1 % of
		# seeds, e.g. 9246)
		[ "$round" -eq "$ROUNDS" ] && [ "$resumed" -eq 0 ] &&
			[ "$batches" -lt 2 ] && batches=2
		kb=$batches
		kill_during repairing 40 "$prog" repair "$store" model
		st=$?
		batches=0
		if [ "$st" -eq 0 ]; then
			log=$work/repair2.log
			if "$prog" repair "$store" > "$log" 2>&1; then
				grep -q 'resumed 1' "$log" && resumed=$((resumed + 1))
				log=$work/rcheck.log
				"$prog" rcheck "$store" "$s" > "$log" 2>&1 && ok=0
			fi
		fi
	fi
	info=$(grep -o 'resumed [01] rebuilt [0-9]*' "$work/repair2.log" 2>/dev/null)
	report $ok "repair round $round (seed $s, killed $killed after $kb batches + $ms ms; then $info)"
	rm -rf "$store" "$store.yaml"
done
[ "$resumed" -gt 0 ]
report $? "repairs that resumed a killed one: $resumed of $ROUNDS"

store=$work/smr
ack=$work/smr.ack
rm -f "$work"/*.log
log=$work/sinit.log
if "$prog" sinit "$store" "$ack" > "$log" 2>&1; then
	for round in $(seq 1 "$ROUNDS"); do
		rm -f "$work"/*.log
		log=$work/swrite.log
		ok=1
		if kill_during cleaning 600 "$prog" swrite "$store" "$ack" "$round"; then
			log=$work/scheck.log
			"$prog" scheck "$store" "$ack" > "$log" 2>&1 && ok=0
		fi
		info=$(grep -o 'write in flight: [a-z]*' "$work/scheck.log" 2>/dev/null)
		report $ok "smr round $round (killed $killed after $ms ms; $(grep -c '^A' "$ack") writes acknowledged; $info)"
	done
else
	report 1 "smr init"
fi

end=$(date +%s%N)
echo "repair_crash: elapsed $(( (end - start) / 1000000 )) ms"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
