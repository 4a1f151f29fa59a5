#!/usr/bin/env bash
# shm_cluster_test.sh BUILD — a 3-server cluster on libfabric provider shm
# (between processes on one host, core/rpc/README.md), end to end:
#
#   1. strata cluster up --nodes 3 writes the cluster file (devices of every
#      tier); its tcp servers are stopped, the file switched to provider
#      shm, and the three servers started together, three rounds (stopped
#      with SIGTERM between them): every server must come up and stay up.
#      Before the shm region check of core/rpc/ep.c (av_shm_check) every
#      server of such a start died of SIGSEGV in fi_inject within seconds
#      (libfabric 1.17 mapping a peer region that did not exist yet);
#   2. status shows 3 servers up;
#   3. the Clovis suites run unchanged against it (as cluster_test.sh does
#      on tcp: -s clovis,clovis_bad -x composite);
#   4. objects (plain and pdclust 2+1) and index records through the CLI
#      read back byte-exact;
#   5. s1 and s2 SIGKILLed and restarted (their stale regions left in
#      /dev/shm): all three up again, the regions of the killed processes'
#      unnamed endpoints removed by the next endpoint opened on shm,
#      everything reads back, no server died;
#   6. SIGTERM: every server stops cleanly.
#
# Region names are the servers' "127.0.0.1:PORT" (no TCP port is bound on
# shm), ports 32000-32758 (no other step uses them).  Every wait is bounded;
# the servers are killed on any exit (trap).  Ends with "N passed, N failed".
set -u

. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" shm 32000 190    # ports 32000-32758
cl_need strata strata-server ut_main
# On any exit the servers' regions go too: the named ones
# (/dev/shm/127.0.0.1:PORT) and those of the servers' unnamed endpoints
# (PID:X:N: cl_cleanup kills with SIGKILL, which leaves them).
shm_cleanup() {
	local i p pids=""
	for i in 0 1 2; do pids="$pids $(spid $i)"; done
	cl_cleanup
	for i in 0 1 2; do rm -f "/dev/shm/127.0.0.1:$((PORT + i))"; done
	for p in $pids; do rm -f /dev/shm/"$p":*; done
}
trap shm_cleanup EXIT

# up3: until status shows 3 servers up (at most 30 s).
up3() {
	local i
	for i in $(seq 1 30); do
		timeout 20 "$S" --cluster "$D/cluster.yaml" cluster status \
			>"$T/st" 2>&1
		grep -q "servers: 3 up, 0 down" "$T/st" && return 0
		sleep 1
	done
	cat "$T/st"
	return 1
}

start() { rm -f "$D/s$1.pid"; srv_start "$1" "$D/cluster.yaml" --log-level 3; }

# stop_all SIG: signal every server and wait until each is gone.
stop_all() {
	local i p
	for i in 0 1 2; do
		p=$(spid $i)
		[ -n "$p" ] || continue
		kill "-$1" "$p" 2>/dev/null
		wait_gone "$p"
	done
}

# alive3: every server's process is still there (a server that died,
# e.g. of SIGSEGV, leaves its pid file behind).
alive3() {
	local i p
	for i in 0 1 2; do
		p=$(spid $i)
		[ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 1
	done
}

echo "--- cluster file from strata cluster up, switched to shm"
# meta_replicas 1: the subject is the shm provider.  With replicated homes
# (the default with etcd) one server's SIGTERM, after its standbys had
# stopped, did not end within 60 s once (make check 2026-11-30: "every
# server stopped cleanly"; docs/cluster.md "Replicated homes", Not yet)
CL_UP_ARGS="--meta-replicas 1"
cl_up
stop_all 9
sed -i 's/^\(  *provider: \).*/\1"shm"/' "$D/cluster.yaml"
grep -q 'provider: "shm"' "$D/cluster.yaml" ||
	sed -i 's/^cluster:$/cluster:\n  provider: "shm"/' "$D/cluster.yaml"
check "cluster file names provider shm" grep -q 'provider: "shm"' "$D/cluster.yaml"

echo "--- three servers started together, three rounds"
for r in 1 2 3; do
	for i in 0 1 2; do start $i & done
	wait
	check "round $r: 3 servers up" up3
	sleep 2
	check "round $r: no server died (SIGSEGV in fi_inject before the fix)" \
		alive3
	[ "$r" -lt 3 ] && stop_all TERM
done

echo "--- Clovis suites against the cluster on shm"
cl_ut "clovis suites on shm" -s clovis,clovis_bad -x composite

echo "--- objects and index records through the CLI"
C="timeout 60 $S --cluster $D/cluster.yaml"
head -c 3000000 /dev/urandom >"$T/in"
$C obj put 5:1 "$T/in" >"$T/o" 2>&1
check "plain object put" test $? -eq 0
$C obj put 5:2 "$T/in" --layout pdclust --data 2 --parity 1 >"$T/o" 2>&1
check "pdclust 2+1 object put" test $? -eq 0
$C idx create 5:3 >"$T/o" 2>&1
check "index create" test $? -eq 0
put3() {
	local k
	for k in 1 2 3; do
		$C idx put 5:3 "k$k" "v$k" >"$T/o" 2>&1 || return 1
	done
}
check "3 records put" put3

# readback: both objects byte-exact and the three records in order.
readback() {
	rm -f "$T/o1" "$T/o2"
	$C obj get 5:1 "$T/o1" >/dev/null 2>&1 && cmp -s "$T/in" "$T/o1" &&
	$C obj get 5:2 "$T/o2" >/dev/null 2>&1 && cmp -s "$T/in" "$T/o2" &&
	test "$($C idx get 5:3 k2 2>/dev/null)" = v2 &&
	test "$($C idx next 5:3 k1 --count 3 2>/dev/null | grep -c "^k[123]")" -eq 3
}
check "objects and records read back" readback

echo "--- s1 and s2 SIGKILLed and restarted"
killed=""
for i in 1 2; do
	p=$(spid $i)
	killed="$killed $p"
	kill -9 "$p"
	wait_gone "$p"
done
# left(): the regions of the killed servers' unnamed endpoints (PID:0:N)
left() { local p; for p in $killed; do ls /dev/shm | grep "^$p:"; done; }
check "their regions stay behind in /dev/shm ($(left | wc -l) unnamed)" \
	test -e "/dev/shm/127.0.0.1:$((PORT + 1))" -a "$(left | wc -l)" -gt 0
for i in 1 2; do start $i; done
check "3 servers up after the restart" up3
check "the regions of the killed processes were removed (ep_shm_sweep)" \
	test "$(left | wc -l)" -eq 0
check "everything reads back after the restart" readback
check "no server died" alive3

echo "--- SIGTERM"
# the logs are appended to: count only what this stop writes
lines=()
for i in 0 1 2; do lines[$i]=$(wc -l <"$D/s$i.log"); done
stop_all TERM
clean=0
for i in 0 1 2; do
	tail -n +$((lines[i] + 1)) "$D/s$i.log" | grep -q "stopped cleanly" &&
		clean=$((clean + 1))
done
check "every server stopped cleanly" test "$clean" -eq 3
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
