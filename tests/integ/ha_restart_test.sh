#!/bin/bash
# ha_restart_test.sh BUILD — a whole-cluster stop after which one server
# does not come back (docs/ha.md "The leader adds what only it can see",
# the start grace): 3 servers and one etcd member on loopback,
# `strata cluster up --ha-test --meta-replicas 3` (start grace 20 s):
#
#   1. pdclust 1+2 objects homed on s2 are written;
#   2. every server is SIGKILLed at once (a power cut; etcd stays);
#   3. s0 starts again, and s1 8 s later (slow to start, within the
#      grace): s2 never does.  The leader never saw s2's member key, its
#      probes' first look at s2 is silent and s2's last run ended
#      unlogged: only the start grace proves s2 gone.  Checked: s2 FAILED
#      with a lease expiry of the run the event log shows, s1 never
#      failed, s2's home taken over and its objects read back byte-exact;
#   4. s2 OUT after the down-out delay, its repair ends; s2 starts again:
#      it is taken back, gets its home back, and its objects still read
#      back; a pdclust 2+0 object homed on s0, whose units on s2 the
#      repair could not rebuild (no parity), reads back once s2 is back
#      (s0's images of s2's devices, failed by the repair, come back with
#      the server; before, they stayed failed and the object unreadable);
#   5. s2 killed again, its repair jobs now failing after they failed its
#      images (fault ha.job.fail in s0 and s1, test builds): s2 back comes
#      back by rule return, and the leader brings the images back then
#      too (before, a plain return left them failed: the 2+0 object never
#      read again).
# Before the grace, s2 stayed ONLINE in the map for ever and its objects
# answered nothing.
#
# Ports 6400-6409 (fixed, used by no other step: tests/steps.list).  Every
# wait is bounded; servers and etcd are killed on any exit.  Ends with
# "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" harestart 6400 1
cl_need strata strata-server strata-server-test

F=$D/cluster.yaml
. "$(dirname "$0")/ha_lib.sh"
ha_up 3

echo "--- pdclust 1+2 objects homed on s2"
head -c 300000 /dev/urandom >"$T/blob"
PD=$(ids 4 2 100)
# shellcheck disable=SC2086
put_ids "$T/blob" "--layout pdclust --data 1 --parity 2" $PD
check "4 pdclust 1+2 objects homed on s2 put ($n)" test "$n" -eq 4
# no parity: its units on s2 cannot be rebuilt while s2 is away, and
# read again only once s2 is back
head -c 2000000 /dev/urandom >"$T/blob0"
K0=$(ids 1 0 500)
cl obj put "$K0" "$T/blob0" --layout pdclust --data 2 --parity 0
check "a pdclust 2+0 object homed on s0 put" test "$rc" -eq 0

echo "--- every server SIGKILLed at once; s0 and s1 (8 s later) start again"
for i in 0 1 2; do P[$i]=$(spid "$i"); done
kill -9 "${P[0]}" "${P[1]}" "${P[2]}" 2>/dev/null
for i in 0 1 2; do wait_gone "${P[$i]}"; done
rm -f "$D"/s[012].pid
# test builds, fault ha.job.fail after one pass: the first repair job a
# leader runs (s2's, below) works, every later one fails after failing
# the images (step 5)
tstart() {
	STRATA_FAULT=ha.job.fail:1:0 "$BD/strata-server-test" --config "$F" \
		--name "s$1" --pid-file "$D/s$1.pid" --log-file "$D/s$1.log"
}
tstart 0
sleep 8
tstart 1
# not wait_up: `cluster status` fails while s2 is down
two_up() { kill -0 "$(spid 0)" 2>/dev/null && kill -0 "$(spid 1)" 2>/dev/null; }
check "s0 and s1 run again" poll 60 two_up
s2_failed() { [ "$(srv_state s2)" = FAILED ] || srv_lost s2; }
check "s2, never back, is FAILED after the start grace" poll 150 s2_failed
check "a leader logged the start grace's proof about s2" \
	grep -q "server s2 has not registered within the start grace" \
	"$D/s0.log" "$D/s1.log"
ha events --json
check "the proof is s2's lease expiry, of its last run (the log's)" \
	python3 - "$out" <<'EOF'
import json, sys
ev = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
joined = [e for e in ev if e.get("kind") == "SRV_JOINED" and
          e.get("target") == "s2"]
exp = [e for e in ev if e.get("kind") == "SRV_LEASE_EXPIRED" and
       e.get("target") == "s2"]
# one expiry, of the run the log shows joined last
sys.exit(not (joined and len(exp) == 1 and
              exp[0].get("incarnation") == joined[-1].get("incarnation")))
EOF
echo "$out" | grep '"s2"' | grep -E "JOINED|LEASE|EXIT" | cut -c1-200 | sed 's/^/     /'
check "s1 (slow to start, within the grace) was never failed" \
	test "$(srv_state s1)" = ONLINE
ha decisions --json
check "no decision failed s1" python3 - "$out" <<'EOF'
import json, sys
ds = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
sys.exit(any(d.get("target") == "s1" and d.get("state") == "FAILED"
             for d in ds))
EOF
on_other() { a=$(acting 2); [ "$a" = s0 ] || [ "$a" = s1 ]; }
check "s2's home is taken over" poll 120 on_other
echo "     home s2 served by $(acting 2)"
all_back() {
	nb=0
	for id in $PD; do same "$id" "$T/blob" && nb=$((nb + 1)); done
	[ "$nb" -eq 4 ]
}
check "every object homed on s2 reads back byte-exact" poll 120 all_back
echo "     ($nb of 4)"

repaired() { [ "$(srv_state s2)" = REPAIRED ]; }
check "s2 OUT after the down-out delay, its repair ends (REPAIRED)" \
	poll 180 repaired
grep -h "repair: " "$D/s0.log" "$D/s1.log" | cut -c1-200 | sed 's/^/     /'

echo "--- s2 starts again"
srv_start 2 "$F"
check "s2 is taken back and serves its home again" cl_settled 240
check "every object homed on s2 reads back byte-exact from s2" \
	poll 120 all_back
# s0's images of s2's devices, failed by the repair, whose units of the
# 2+0 object could not be rebuilt: back ONLINE with s2 (the rebalance's
# DevReq.server); before, left failed, that object never read again
k0_back() { same "$K0" "$T/blob0"; }
check "the pdclust 2+0 object homed on s0 reads back byte-exact" \
	poll 60 k0_back
[ -s "$T/rerr" ] && ! k0_back && echo "     $(tail -1 "$T/rerr" | head -c 300)"
check "s0 brought its images of s2's devices back with s2 (its log)" \
	grep -q "of server s2 back online with its server" "$D/s0.log"

echo "--- s2 killed again: its repair fails (fault), s2 back before the next"
nback=$(grep -c "of server s2 back online with its server" "$D/s0.log")
njf() {
	ha events --json
	echo "$out" | grep -Ec '"kind":"JOB_FAILED","reporter":"[^"]*","target":"s2"'
}
jf0=$(njf)
kill -9 "$(spid 2)" 2>/dev/null
wait_gone "$(spid 2)"
rm -f "$D/s2.pid"
jf() { [ "$(njf)" -gt "$jf0" ]; }
check "a repair job of s2 fails (fault ha.job.fail), its images failed" \
	poll 180 jf
srv_start 2 "$F"
check "s2 is back, with its home" cl_settled 240
ha decisions --json
check "s2 came back by rule return (not a rebalance after a repair)" \
	python3 - "$out" <<'EOF'
import json, sys
ds = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
# its last state change (a handback, HOME_MOVE, may follow it)
s2 = [d for d in ds if d.get("target") == "s2" and not d.get("dev") and
      d.get("kind") in ("SET_STATE", "JOB_REPAIR", "JOB_REBALANCE")]
sys.exit(not (s2 and s2[-1].get("rule") == "return" and
              s2[-1].get("state") == "ONLINE"))
EOF
check "the pdclust 2+0 object reads back again" poll 60 k0_back
more_back() {
	[ "$(grep -c "of server s2 back online with its server" "$D/s0.log")" -gt "$nback" ]
}
check "s0 brought its images of s2's devices back at that return" \
	poll 30 more_back

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
