#!/bin/bash
# peer_restart_test.sh BUILD [ROUNDS] — unit reads right after a peer
# restart (docs/cluster.md "A restarted peer"), on a 3-server loopback
# cluster with 4 s call timeouts (unit calls 1.33 s):
#
#   six pdclust 2+1 objects are written (on 3 servers every group has one
#   unit on each server); then ROUNDS times (default 5) one server V
#   (s0, s1, s2, s0, ...) is killed with SIGKILL and started again on the
#   same address while the others stay up; as soon as both others logged
#   that V's remote devices are reachable again, every object is read
#   back at once (homes on the other servers read V's units over their
#   data connections to V).  Asserted in each round: every read succeeds
#   byte-exact, a server replaced a connection to V's earlier run (log
#   "server sV restarted"), and after that moment no server logs V marked
#   down or unreachable, nor a unit call to V that timed out.  Before the fix each
#   home's data connection still named V's previous run: its first unit
#   read there waited for its timeout, marked V down, and groups that had
#   lost another unit too failed ("only 1 of 3 units readable").
#
# Every wait is bounded; servers are killed on any exit.  Ends with
# "N passed, N failed".
set -u

. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" peer-restart 16000 1000
ROUNDS=${2:-5}
UPCONF=$D/fast.yaml
NOBJ=6

# seen_again V I: how many times server sI logged V reachable again.
seen_again() {
	grep -c "server s$1: remote devices reachable again" "$D/s$2.log"
}

# stale_lines V I FROM: lines of sI's log after line FROM that say V was
# marked down, unreachable, or that a call to it timed out.
stale_lines() {
	tail -n +"$(($3 + 1))" "$D/s$2.log" |
		grep -E "server s$1 marked down|server s$1 unreachable|device remote:s$1:[0-9]+: server s$1 .*timed out"
}

cl_need strata strata-server

echo "--- cluster up (4 s call timeouts, info log)"
cl_up
cl_restart_fast "servers up"

head -c 1000000 /dev/urandom >"$T/blob"
bad=0
for i in $(seq 1 $NOBJ); do
	cf obj put "@pr$i" "$T/blob" --layout pdclust --data 2 --parity 1
	[ "$rc" -eq 0 ] || { bad=$((bad + 1)); cat "$T/err"; }
done
check "$NOBJ pdclust 2+1 objects written" test "$bad" -eq 0
bad=0
for i in $(seq 1 $NOBJ); do
	rm -f "$T/back"
	cf obj get "@pr$i" "$T/back"
	cmp -s "$T/blob" "$T/back" || bad=$((bad + 1))
done
check "every object reads back before any restart" test "$bad" -eq 0

for r in $(seq 1 "$ROUNDS"); do
	V=$(((r - 1) % 3))
	A=$(((V + 1) % 3))
	B=$(((V + 2) % 3))
	echo "--- round $r: s$V killed (SIGKILL) and started again"
	na=$(seen_again "$V" "$A")
	nb=$(seen_again "$V" "$B")
	p=$(spid "$V")
	kill -9 "$p"
	check "round $r: s$V gone" wait_gone "$p"
	srv_start "$V" "$D/fast.yaml" --log-level 3
	seen=0
	for k in $(seq 1 150); do
		if [ "$(seen_again "$V" "$A")" -gt "$na" ] &&
		   [ "$(seen_again "$V" "$B")" -gt "$nb" ]; then
			seen=1
			break
		fi
		sleep 0.1
	done
	check "round $r: s$A and s$B see s$V again (within 15 s)" \
		test "$seen" -eq 1
	la=$(wc -l <"$D/s$A.log")
	lb=$(wc -l <"$D/s$B.log")
	bad=0
	for i in $(seq 1 $NOBJ); do
		rm -f "$T/back"
		cf obj get "@pr$i" "$T/back"
		if ! cmp -s "$T/blob" "$T/back"; then
			bad=$((bad + 1))
			echo "     read of @pr$i: rc $rc: $(head -c 300 "$T/err")"
		fi
	done
	check "round $r: every object reads back right after the restart" \
		test "$bad" -eq 0
	nr=$(tail -n +"$((la + 1))" "$D/s$A.log" | grep -c "server s$V restarted")
	nr=$((nr + $(tail -n +"$((lb + 1))" "$D/s$B.log" | grep -c "server s$V restarted")))
	check "round $r: s$A or s$B replaced a connection to s$V's earlier run ($nr)" \
		test "$nr" -gt 0
	stale_lines "$V" "$A" "$la" >"$T/stale"
	stale_lines "$V" "$B" "$lb" >>"$T/stale"
	cut -c1-240 "$T/stale" | head -5 | sed 's/^/     /'
	check "round $r: no server marks s$V down after it is back" \
		test ! -s "$T/stale"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
