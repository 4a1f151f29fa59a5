#!/usr/bin/env bash
# posix_doubt_test.sh BUILD — a POSIX change whose cluster dtx ends in
# doubt (gateways/posix/ns_io.c, ns_tx_outcome(); docs/posix.md "Changes
# in doubt"), through a strata-fuse mount of a 3-server cluster (no etcd,
# ports 2100-2299: base 2100-2296 from the PID, slots of 4):
#
#   1. files made through the mount; every server restarted as
#      strata-server-test with fault dtx.part.decide.after (the decider
#      of the next dtx decides COMMIT, logs it, and is SIGKILLed before it
#      answers: the client's commit ends -ETIMEDOUT, in doubt); a watcher
#      starts a killed server again 2 s after it died;
#      `mv a1 b1` must succeed (the mount waits for the decision and reads
#      the change back: applied), b1 is there with a1's bytes, a1 is gone;
#      before, mv failed although the rename was applied;
#   2. the same with dtx.part.decide.before (the decider is killed before
#      it decides: the dtx aborts): `mv a2 b2` fails and nothing changed
#      (a2 there, b2 not).
#
# Skips where /dev/fuse or fusermount3 is missing.  Every wait is bounded;
# the mount, the watcher and the servers are stopped on any exit.  Ends
# with "N passed, N failed".
set -u
CL_UP_ARGS="--no-etcd"
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" posixdoubt 2100 50
cl_need strata strata-server strata-server-test strata-fuse
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "skip: /dev/fuse or fusermount3 missing (no FUSE here)"
	echo "0 passed, 0 failed"
	exit 0
fi
F=$BD/strata-fuse
MNT=$T/mnt
mkdir -p "$MNT"
fpid=""
wpid=""
end_all() {
	[ -n "$wpid" ] && kill -KILL "$wpid" 2>/dev/null
	if [ -n "$fpid" ] && kill -0 "$fpid" 2>/dev/null; then
		kill -TERM "$fpid" 2>/dev/null
		for _ in $(seq 1 100); do
			kill -0 "$fpid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$fpid" 2>/dev/null
	fi
	grep -q " $MNT " /proc/mounts && fusermount3 -u -z "$MNT" 2>/dev/null
	cl_cleanup
}
trap end_all EXIT

# restart_all FAULT: every server SIGKILLed and started again as
# strata-server-test with STRATA_FAULT=FAULT (fires once per server).
restart_all() {
	local i p
	for i in 0 1 2; do
		p=$(spid "$i")
		[ -n "$p" ] && kill -9 "$p" 2>/dev/null && wait_gone "$p"
	done
	for i in 0 1 2; do
		STRATA_LOG=3 STRATA_FAULT="$1:0:1" "$BD/strata-server-test" \
			--config "$D/cluster.yaml" --name "s$i" \
			--pid-file "$D/s$i.pid" --log-file "$D/s$i.log"
	done
	wait_up
}

# watcher: for at most 150 s, a server whose process is gone is started
# again (plain strata-server, no fault) 2 s after it was seen gone.
watcher() {
	local end=$((SECONDS + 150)) i p
	while [ "$SECONDS" -lt "$end" ]; do
		for i in 0 1 2; do
			p=$(spid "$i")
			if [ -z "$p" ] || ! kill -0 "$p" 2>/dev/null; then
				sleep 2
				echo "watcher: starting s$i again" >>"$T/watcher"
				srv_start "$i" "$D/cluster.yaml"
			fi
		done
		sleep 0.2
	done
}

echo "--- 3 servers, no etcd; a strata-fuse mount of the cluster"
cl_up
STRATA_LOG=4 "$F" --cluster "$D/cluster.yaml" --mkfs -f "$MNT" >"$T/fuse.log" 2>&1 &
fpid=$!
for _ in $(seq 1 600); do
	grep -q " $MNT fuse.strata " /proc/mounts && break
	kill -0 "$fpid" 2>/dev/null || break
	sleep 0.1
done
check "strata-fuse mounts the cluster" grep -q " $MNT fuse.strata " /proc/mounts
for i in 1 2; do head -c 5000 /dev/urandom >"$T/a$i"; cp "$T/a$i" "$MNT/a$i"; done
check "two files made through the mount" cmp -s "$T/a1" "$MNT/a1"

# killed FAULT SRC DST: every server restarted with FAULT, the watcher
# on, `mv SRC DST` in the mount (its status in rc, its stderr in
# $T/mv.err), the fault's kill checked in the logs, the watcher stopped
# and the cluster up again.
killed() {
	check "servers restarted with fault $1" restart_all "$1"
	watcher &
	wpid=$!
	timeout 120 mv "$MNT/$2" "$MNT/$3" 2>"$T/mv.err"
	rc=$?
	check "a decider killed by the fault (log)" \
		grep -q "fault point $1: SIGKILL" "$D"/s*.log
	kill -KILL "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null; wpid=""
	wait_up
}

echo "--- decider killed after its COMMIT decision: applied, mv succeeds"
killed dtx.part.decide.after a1 b1
check "mv a1 b1 succeeds (rc $rc; $(head -c 200 "$T/mv.err"))" test "$rc" -eq 0
check "b1 has a1's bytes" cmp -s "$T/a1" "$MNT/b1"
check "a1 is gone" test ! -e "$MNT/a1"

echo "--- decider killed before its decision: aborted, mv fails, nothing changed"
killed dtx.part.decide.before a2 b2
check "mv a2 b2 fails (rc $rc; $(head -c 200 "$T/mv.err"))" test "$rc" -ne 0
check "a2 is still there with its bytes" cmp -s "$T/a2" "$MNT/a2"
check "b2 was not made" test ! -e "$MNT/b2"
check "the mount's log names the abort" \
	grep -q "then aborted: nothing of it applied" "$T/fuse.log"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
