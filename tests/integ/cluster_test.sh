#!/usr/bin/env bash
# cluster_test.sh BUILD — a 3-server loopback cluster, end to end:
#
#   1. strata cluster up --nodes 3 (servers on 127.0.0.1 only), status;
#   2. the Clovis suites (ut_main -s clovis,clovis_bad) with
#      STRATA_UT_CLUSTER naming the cluster file, so every instance they
#      open is a client of the cluster (test builds only, clovis.c);
#   3. objects and index records written through the CLI, one server
#      killed with SIGKILL and restarted: everything acknowledged (STABLE)
#      reads back;
#   4. index replica catch-up: a replica is killed, records are written
#      while it is down, it is restarted, the other replicas are stopped,
#      and the records must be read from it alone;
#   5. SIGTERM drains: a server stopped while a large write is in flight
#      lets it finish; its pid file goes; strata cluster down.
#
# Every wait is bounded.  Ends with "N passed, N failed".
set -u

B=${1:-build}
BD=$(cd "$B" 2>/dev/null && pwd)
S=$BD/strata
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-cluster-test.XXXXXX")
D=$T/cl
PORT=$((22000 + ($$ % 2000) * 4))
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else no "$n"; fi; }

cleanup() {
	"$S" cluster down --dir "$D" -q >/dev/null 2>&1
	for f in "$D"/s*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

# cl ARGS...: the CLI against the cluster; sets rc and out.
cl() {
	out=$("$S" --cluster "$D/cluster.yaml" "$@" 2>"$T/err")
	rc=$?
}

# pid of server sI
spid() { cat "$D/s$1.pid" 2>/dev/null; }

# wait_gone PID: until the process is gone (at most 20 s).
wait_gone() {
	local i
	for i in $(seq 1 200); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}

# restart I: start server sI again (it daemonizes), wait until it answers.
restart() {
	"$BD/strata-server" --config "$D/cluster.yaml" --name "s$1" \
		--pid-file "$D/s$1.pid" --log-file "$D/s$1.log" || return 1
	local i
	for i in $(seq 1 100); do
		"$S" cluster status --dir "$D" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

for x in strata strata-server ut_main; do
	[ -x "$BD/$x" ] || { no "$x built"; echo "$pass passed, $fail failed"; exit 1; }
done

echo "--- cluster up"
"$S" cluster up --nodes 3 --dir "$D" --base-port "$PORT" >"$T/up" 2>&1
check "cluster up" grep -q "cluster of 3 servers up" "$T/up"
check "three pid files" test -f "$D/s0.pid" -a -f "$D/s1.pid" -a -f "$D/s2.pid"
check "servers listen on loopback only" \
	test "$(grep -c 'address: 127.0.0.1' "$D/cluster.yaml")" -eq 3
"$S" cluster status --dir "$D" >"$T/st" 2>&1
check "status: 3 up" grep -q "servers: 3 up, 0 down" "$T/st"
check "status lists tiers" grep -qE "^  flash +18 devices" "$T/st"

echo "--- Clovis suites against the cluster"
STRATA_UT_CLUSTER=$D/cluster.yaml timeout 600 "$BD/ut_main" -s clovis,clovis_bad \
	>"$T/ut" 2>&1
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/ut" | tail -1)
echo "     ut_main: $line"
check "clovis suites ran" test -n "$line"
check "clovis suites pass against the cluster" test "$(echo "$line" | awk '{print $3}')" = 0
[ "$(echo "$line" | awk '{print $3}')" = 0 ] || grep -E "FAILED|Test: .*FAIL" "$T/ut" | head -20

echo "--- SIGKILL and restart: STABLE data and records survive"
head -c 3000000 /dev/urandom >"$T/blob"
for i in 1 2 3 4 5 6; do
	cl obj put "@o$i" "$T/blob"; check "put @o$i" test "$rc" -eq 0
done
cl idx create @ix; check "idx create" test "$rc" -eq 0
for k in 1 2 3 4 5 6 7 8 9 10; do cl idx put @ix "k$k" "v$k"; done
check "10 records put" test "$rc" -eq 0
victim=1
p=$(spid $victim)
kill -9 "$p"; check "server s$victim killed" wait_gone "$p"
check "restart s$victim" restart $victim
for i in 1 2 3 4 5 6; do
	cl obj get "@o$i" "$T/back"
	check "@o$i reads back after SIGKILL" cmp -s "$T/blob" "$T/back"
done
cl idx dump @ix
check "10 records after SIGKILL" test "$(echo "$out" | grep -c '^k')" -eq 10

echo "--- index replica catch-up"
# @ix lives on all 3 servers (R = 3).  Kill s2, write while it is down.
p=$(spid 2); kill -9 "$p"; wait_gone "$p"
for k in 11 12 13; do cl idx put @ix "k$k" "v$k"; done
check "puts with one replica down" test "$rc" -eq 0
cl idx del @ix k1; check "del with one replica down" test "$rc" -eq 0
check "restart s2" restart 2
# s2 verifies its replicas at start, against its live peers.
for i in $(seq 1 100); do grep -q "copied from server" "$D/s2.log" && break; sleep 0.1; done
check "s2 logged the catch-up" grep -q "copied from server" "$D/s2.log"
# Stop the other two: s2 alone must serve what it missed.
for s in 0 1; do p=$(spid $s); kill -STOP "$p"; done
sleep 0.2
cl idx dump @ix
for s in 0 1; do p=$(spid $s); kill -CONT "$p"; done
check "s2 alone has the 3 records it missed" \
	test "$(echo "$out" | grep -cE '^k1[123]')" -eq 3
check "s2 alone has the delete it missed" test "$(echo "$out" | grep -c '^k1	')" -eq 0

echo "--- SIGTERM drains an op in flight"
head -c 60000000 /dev/urandom >"$T/big"
( "$S" --cluster "$D/cluster.yaml" obj put @big "$T/big" >"$T/bigout" 2>&1; echo $? >"$T/bigrc" ) &
bg=$!
sleep 0.3
home_pids=$(cat "$D"/s*.pid)
for p in $home_pids; do kill -TERM "$p"; done
for p in $home_pids; do wait_gone "$p"; done
wait "$bg"
check "servers stopped cleanly" test "$(grep -l 'stopped cleanly' "$D"/s*.log | wc -l)" -eq 3
check "pid files removed" test ! -e "$D/s0.pid" -a ! -e "$D/s1.pid" -a ! -e "$D/s2.pid"
# The put either finished (drained) or was refused before it started
# (ESHUTDOWN); never half-done: restart and check.
for s in 0 1 2; do restart $s >/dev/null 2>&1; done
if [ "$(cat "$T/bigrc")" = 0 ]; then
	cl obj get @big "$T/bigback"
	check "write in flight at SIGTERM finished and reads back" cmp -s "$T/big" "$T/bigback"
else
	cl obj stat @big
	check "refused put left no object" test "$rc" -ne 0
fi

echo "--- cluster down"
"$S" cluster down --dir "$D" >"$T/down" 2>&1
check "cluster down" grep -q "3 servers stopped" "$T/down"
"$S" cluster status --dir "$D" >"$T/st2" 2>&1
check "status after down: exit non-zero" test $? -ne 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
