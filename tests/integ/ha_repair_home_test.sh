#!/usr/bin/env bash
# ha_repair_home_test.sh BUILD — the repair of a taken-over home's units
# (docs/cluster.md "Walks of a taken-over home"): 4 servers and one etcd
# member on loopback, `strata cluster up --ha-test --meta-replicas 3`:
#
#   1. 10 pdclust 2+1 objects homed on V (not the analyzer's leader), each
#      with units on 3 of the 4 servers;
#   2. V SIGKILLed: its home moves to a standby A; past the presets' 5 s
#      down-out the analyzer starts a repair job, and A, walking the
#      engine it acts for V with (its images of V's devices failed by the
#      job), rebuilds the units V held elsewhere (A's log); the map has V
#      REPAIRED;
#   3. another server D SIGKILLed: every object homed on V reads back
#      byte-exact (two of its three units lost otherwise for the objects
#      that had units on V and D: before, V's units stayed degraded until
#      V's return);
#   4. D and V restarted: V's home is handed back; V's own devices, failed
#      only because V was lost (EDF_HOME_LOST), are back online to be
#      rebalanced (V's log), and every object reads back from V.
#
# Ports 6300-6309 (fixed, used by no other step: tests/steps.list).  Every
# wait is bounded; servers and etcd are killed on any exit.  Ends with
# "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" harepair 6300 1
cl_need strata strata-server

F=$D/cluster.yaml
. "$(dirname "$0")/ha_lib.sh"
ha_up4

L=$(leader)
V=1; [ "$L" = s1 ] && V=2
echo "     analyzer leader $L; the victim is s$V"

echo "--- 10 pdclust 2+1 objects homed on s$V"
head -c 199680 /dev/urandom >"$T/blob"
PD=$(ids 10 "$V" 1000)
put_ids "$T/blob" "--layout pdclust --data 2 --parity 1" $PD
check "10 objects put ($n)" test "$n" -eq 10
all_back() {
	nb=0
	for id in $PD; do same "$id" "$T/blob" && nb=$((nb + 1)); done
	[ "$nb" -eq 10 ]
}
check "they read back" all_back

echo "--- s$V killed: its home taken over, its units repaired"
kill -9 "$(spid "$V")"
moved() { A=$(acting "$V"); [ -n "$A" ] && [ "$A" != "s$V" ]; }
check "the analyzer moves home s$V to a standby" poll 180 moved
echo "     home s$V served by $A"
repaired() { [ "$(srv_state "s$V")" = REPAIRED ]; }
check "the repair job ends: s$V REPAIRED in the map (within 240 s)" \
	poll 240 repaired
R=$(sed -n "s/.*server $A: repair of home s$V (acting for it): [0-9]* units, \([0-9]*\) rebuilt.*/\1/p" "$D/$A.log" | sort -n | tail -1)
echo "     $A rebuilt ${R:-no} units of home s$V"
check "$A rebuilt units of home s$V (its log: ${R:-none})" \
	test "${R:-0}" -gt 0
check "... and marked its images of s$V's devices failed first" \
	grep -q "server $A: acting for home s$V: its device .* failed: its server is lost" "$D/$A.log"

echo "--- another server killed: every object homed on s$V reads back"
DD=""
for i in 0 1 2 3; do
	[ "s$i" != "s$V" ] && [ "s$i" != "$A" ] && [ "s$i" != "$L" ] && DD=$i
done
[ -n "$DD" ] || for i in 0 1 2 3; do
	[ "s$i" != "s$V" ] && [ "s$i" != "$A" ] && DD=$i
done
kill -9 "$(spid "$DD")"
wait_gone "$(spid "$DD")" 2>/dev/null
echo "     s$DD killed"
check "all 10 objects homed on s$V read back byte-exact with s$V and s$DD dead" \
	poll 60 all_back
echo "     ($nb of 10)"

echo "--- s$DD and s$V restarted: the home handed back"
rm -f "$D/s$DD.pid" "$D/s$V.pid"
srv_start "$DD" "$F"
srv_start "$V" "$F"
back() { [ -z "$(acting "$V")" ] || [ "$(acting "$V")" = "s$V" ]; }
check "the analyzer hands home s$V back (within 240 s)" poll 240 back
check "s$V's own devices, failed only because it was lost, are back online" \
	grep -q "was repaired while its server was lost (its home served elsewhere): back online, to be rebalanced" "$D/s$V.log"
check "every object reads back from s$V" poll 60 all_back

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
