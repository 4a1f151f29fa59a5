#!/usr/bin/env bash
# dtx_crash.sh BUILD [ROUNDS] — SIGKILL crash test of dtxs in embedded mode.
#
# dtx_crash init makes 64 accounts held twice (index records and object
# blocks); then ROUNDS times (default 20) dtx_crash run transfers money in
# dtxs from 4 threads and is killed with SIGKILL after a random 50-500 ms,
# and dtx_crash check proves the totals exact in both forms, no account
# half-applied and every transfer acknowledged STABLE present.  One more
# round arms the fault point dtx.apply.mid (STRATA_FAULT) in a run of a
# fixed number of transfers: the dtxs it fails must leave no trace.
# Prints the seed (DTX_SEED replays), elapsed time, "N passed, N failed".
set -u
B=${1:-build}
ROUNDS=${2:-20}
bin=$B/dtx_crash
seed=${DTX_SEED:-$$}
RANDOM=$seed
NACC=64
start=$(date +%s%N)

if [ ! -x "$bin" ]; then
	echo "dtx_crash: $bin missing (make tests)"
	echo "0 passed, 1 failed"
	exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-dtxcrash.XXXXXX")
store=$work/store
ack=$work/ack.log
trap '"$bin" destroy "$store" > /dev/null 2>&1; rm -rf "$work"' EXIT
: > "$ack"
echo "dtx_crash: seed $seed, $ROUNDS rounds, store $store"
if ! "$bin" init "$store" $NACC > "$work/init.log" 2>&1; then
	cat "$work/init.log"
	echo "0 passed, 1 failed"
	exit 1
fi
pass=0
fail=0

check_round() {
	if "$bin" check "$store" "$ack" $NACC > "$work/check.log" 2>&1; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "dtx_crash: $1 FAILED"
		sed 's/^/  run: /' "$work/run.log" | tail -5
		sed 's/^/  check: /' "$work/check.log" | tail -10
	fi
}

# Fault round: 30 transfers per thread, the 3rd..5th dtx applies fail.
before=$(grep -c ' F$' "$ack")
STRATA_FAULT=dtx.apply.mid:2:3 "$bin" run "$store" "$ack" 1 30 $NACC \
	> "$work/run.log" 2>&1
rc=$?
after=$(grep -c ' F$' "$ack")
if [ "$rc" -ne 0 ] || [ "$after" -le "$before" ]; then
	fail=$((fail + 1))
	echo "dtx_crash: fault round: run rc $rc, $((after - before)) failed dtxs (expected > 0)"
else
	check_round "fault round"
	echo "dtx_crash: fault dtx.apply.mid: $((after - before)) dtxs failed, none left a trace"
fi

for round in $(seq 1 "$ROUNDS"); do
	"$bin" run "$store" "$ack" $((round + 1)) 0 $NACC > "$work/run.log" 2>&1 &
	pid=$!
	ms=$((50 + RANDOM % 451))
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	check_round "round $round (killed after $ms ms)"
done

# Negative control: a copy of the store with one account torn (changed in
# the index only, outside a dtx) must fail the check.
cp -a "$store" "$work/torn"
if "$bin" tear "$work/torn" > "$work/tear.log" 2>&1 &&
   ! "$bin" check "$work/torn" "$ack" $NACC > "$work/check-torn.log" 2>&1 &&
   grep -q '1 half-applied' "$work/check-torn.log"; then
	pass=$((pass + 1))
	echo "dtx_crash: negative control: a torn account is caught"
else
	fail=$((fail + 1))
	echo "dtx_crash: negative control FAILED: the checker missed a torn account"
	cat "$work/tear.log" "$work/check-torn.log" | tail -5
fi
rm -rf "$work/torn"

acks=$(grep -vc ' F$' "$ack")
echo "dtx_crash: $acks transfers acknowledged STABLE over $ROUNDS killed rounds"
tail -1 "$work/check.log"
if [ "$acks" -lt "$ROUNDS" ]; then
	echo "dtx_crash: too few acknowledged transfers ($acks)"
	fail=$((fail + 1))
fi
end=$(date +%s%N)
echo "dtx_crash: elapsed $(( (end - start) / 1000000 )) ms"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
