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
#   down or unreachable, nor a unit call to V that timed out.  Last, with
#   s1's port held by another socket, strata cluster up fails naming s1
#   and quoting its log ("Address already in use"), and stops s0 and s2
#   again.  Before the fix each
#   home's data connection still named V's previous run: its first unit
#   read there waited for its timeout, marked V down, and groups that had
#   lost another unit too failed ("only 1 of 3 units readable").
#
# Then "asked again": s0 with its probes off (fault rdev.probe.off), s1
# and s2 killed: s0's reads fail -EHOSTDOWN naming the unreachable
# devices; s1 and s2 restarted: s0's reads succeed at once, asking the
# servers it still marks down again (docs/cluster.md "Reachability").
#
# Then a stop while a request waits on a frozen server (fault
# srv.list.hold): the stop fails the request's calls and stops cleanly.
#
# The cluster runs without HA (--no-etcd): what is checked is the data
# path's own connections, and the HA agent's prober (an endpoint of its
# own, ha/srv_ha.c) logs "marked down" too when a probe of a peer that
# just restarted times out on a loaded machine (CI 2026-11-29, round 4).
#
# Every wait is bounded; servers are killed on any exit.  Ends with
# "N passed, N failed".
set -u

. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" peer-restart 16000 1000
ROUNDS=${2:-5}
UPCONF=$D/fast.yaml
NOBJ=6
CL_UP_ARGS=--no-etcd

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

# read_back I...: read @prI back for each I; bad = how many differ or
# failed (each said).
read_back() {
	local i
	bad=0
	for i in "$@"; do
		rm -f "$T/back"
		cf obj get "@pr$i" "$T/back"
		if ! cmp -s "$T/blob" "$T/back"; then
			bad=$((bad + 1))
			echo "     read of @pr$i: rc $rc: $(head -c 300 "$T/err")"
		fi
	done
}

cl_need strata strata-server strata-server-test

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
	read_back $(seq 1 $NOBJ)
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

# A read short of units asks a peer marked down again before it fails
# (docs/cluster.md "A restarted peer"): s0 runs with its probers off
# (fault rdev.probe.off), so once it marked s1 and s2 down only a read
# can find them back.  Both are killed: s0's reads of its objects fail
# -EHOSTDOWN naming the unreachable devices (not -EIO: nothing is lost);
# both restart: the same reads succeed at once.  Before the fix s0 read
# around the marks: "only 1 of 3 units readable" (-EIO) until a probe.
echo "--- a read asks peers marked down again (s0's probes off)"
srv_stop 0
STRATA_FAULT=rdev.probe.off "$BD/strata-server-test" --config "$D/fast.yaml" \
	--name s0 --pid-file "$D/s0.pid" --log-file "$D/s0.log" --log-level 3
check "s0 restarted with its probes off" wait_up
for s in 1 2; do kill -9 "$(spid $s)"; done
gone=1
for s in 1 2; do wait_gone "$(spid $s)" || gone=0; done
check "s1 and s2 killed (SIGKILL)" test "$gone" -eq 1
home0=""
for i in $(seq 1 $NOBJ); do
	cf obj get "@pr$i" "$T/back"
	echo "     @pr$i: rc $rc: $(head -c 300 "$T/err")"
	if grep -q "unreachable now: remote:s" "$T/err"; then
		home0="$home0 $i"
		check "@pr$i (home s0) while s1 and s2 are away: -EHOSTDOWN, not -EIO (rc $rc)" \
			grep -q "Host is down" "$T/err"
	fi
done
check "some object is homed on s0 (read there while s1 and s2 are away)" \
	test -n "$home0"
for s in 1 2; do srv_start $s "$D/fast.yaml" --log-level 3; done
check "s1 and s2 restarted" wait_up
l0=$(wc -l <"$D/s0.log")
read_back $home0
check "s0's objects read back at once, s1 and s2 still marked down by s0's probes" \
	test "$bad" -eq 0
check "s0 logged s1 or s2 reachable again (asked by a read)" \
	sh -c "tail -n +$((l0 + 1)) '$D/s0.log' | grep -q 'server s[12]: remote devices reachable again'"

# A stop while a request waits on another server (docs/cluster.md
# "strata-server"): s1 runs as strata-server-test with fault
# srv.list.hold, s2 is frozen (SIGSTOP), and a listing makes s1 call s2
# again and again, longer than the stop's first wait (call timeout + 5 s);
# s1 gets SIGTERM meanwhile.  It must fail those calls and stop cleanly.
# Before, it freed its peer table and store under the running handler
# after that wait (make check: a server crashed in srv_idx at the end of
# shm_cluster_test.sh, after its peers had stopped).
echo "--- a stop while a request waits on a frozen server"
held() { tail -n +$((l1 + 1)) "$D/s1.log" | grep -q "fault srv.list.hold: calling server s2"; }
srv_stop 1
l1=$(wc -l <"$D/s1.log")
STRATA_FAULT=srv.list.hold:0:1 "$BD/strata-server-test" --config "$D/fast.yaml" \
	--name s1 --pid-file "$D/s1.pid" --log-file "$D/s1.log" --log-level 3
check "s1 restarted with fault srv.list.hold" wait_up
kill -STOP "$(spid 2)"
timeout 120 "$S" --cluster "$D/fast.yaml" obj ls >"$T/ls.out" 2>&1 &
lspid=$!
for i in $(seq 1 300); do held && break; sleep 0.1; done
check "s1's listing holds on s2 (frozen)" held
p1=$(spid 1)
kill "$p1"
# the stop's first wait is 4 + 5 s; then the calls fail at once
for i in $(seq 1 900); do kill -0 "$p1" 2>/dev/null || break; sleep 0.1; done
check "s1 gone after SIGTERM (within 90 s)" sh -c "! kill -0 $p1 2>/dev/null"
tail -n +$((l1 + 1)) "$D/s1.log" | grep -E "srv.list.hold|in flight|stopped" |
	cut -c1-220 | sed 's/^/     /'
check "s1 failed its requests' calls to other servers at the stop" \
	sh -c "tail -n +$((l1 + 1)) '$D/s1.log' | grep -q 'requests still in flight after .*failing their calls to other servers'"
check "the held request ended with the stop's -ESHUTDOWN, not on its own" \
	sh -c "tail -n +$((l1 + 1)) '$D/s1.log' | grep -q 'fault srv.list.hold: ended after .*: -108 '"
check "s1 stopped cleanly" \
	sh -c "tail -n +$((l1 + 1)) '$D/s1.log' | grep -q 'strata-server s1: stopped cleanly'"
kill -CONT "$(spid 2)"
wait "$lspid" 2>/dev/null
srv_start 1 "$D/fast.yaml" --log-level 3
check "s1 started again, s2 thawed" wait_up

# strata cluster up names a server that gave up at start and stops the
# others again: here s1's port is held by a listener (as an outgoing
# connection holding a port of the kernel's ephemeral range would), so s1
# cannot bind.
echo "--- cluster up with s1's port taken"
for s in 0 1 2; do srv_stop $s; done
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); print("held", flush=True)
time.sleep(60)' $((PORT + 1)) >"$T/held" 2>&1 &
holder=$!
for i in $(seq 1 50); do grep -q held "$T/held" && break; sleep 0.1; done
D=$T/cu   # cl_cleanup now stops this directory's servers on any exit
timeout 60 "$S" cluster up --nodes 3 --dir "$D" --base-port "$PORT" --no-etcd >"$T/cu.out" 2>&1
rc=$?
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
sed 's/^/     /' "$T/cu.out" | cut -c1-240
check "cluster up fails when s1 cannot bind" test "$rc" -ne 0
check "the error names s1 and quotes its log (the port in use)" \
	grep -q "server s1 did not start: .*Address already in use" "$T/cu.out"
check "s1 left no pid file" test ! -e "$D/s1.pid"
# s0 and s2 are stopped; s1, which gave up, removes its pid file as it
# exits, and may still hold it when cluster up stops the others (then it
# is signalled and counted too: 3)
check "s0 and s2, which had started, were stopped again" \
	grep -qE "^[23] servers stopped" "$T/cu.out"
check "no pid file left" test -z "$(ls "$D"/s*.pid 2>/dev/null)"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
