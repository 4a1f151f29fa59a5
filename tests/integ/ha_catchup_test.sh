#!/usr/bin/env bash
# ha_catchup_test.sh BUILD — a takeover catches up from the standby that
# holds more before it serves (docs/cluster.md "Taking over a home", "The
# catch-up"): 3 servers (strata-server-test) and one etcd member on
# loopback, `strata cluster up --ha-test --meta-replicas 3`:
#
#   1. the first standby B of home s0 (s0's log names it) is restarted with
#      fault point srv.repl.refuse.s0: it refuses s0's write sets and
#      snapshots, as a standby the home dropped (cut off, or too slow) would
#      miss them; s0 goes on with its other standby C;
#   2. pdclust 1+2 objects homed on s0 are written (acknowledged: on s0
#      and C);
#   3. s0 is SIGKILLed: the analyzer moves its home to B, its first ONLINE
#      standby (s0's HOME_INSYNC events are lost, fault point
#      srv.home.insync.noreport: with them it would choose C), whose own
#      copy misses those writes.  s0 recorded C alone in
#      sync (etcd), and C, restarted with fault point srv.home.copy.refuse,
#      does not answer B's first 12 asks: B waits for it (logged) instead
#      of serving what it has, then copies C's copy before it serves, and
#      every acknowledged object reads back byte-exact.  Before the
#      catch-up, B served its own copy; before the record, it served it
#      when C did not answer: the acknowledged objects were gone.
#
# Ports 6800-6809 (fixed, used by no other step: tests/steps.list).  Every
# wait is bounded; servers and etcd are killed on any exit.  Ends with
# "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" hacatch 6800 1
cl_need strata strata-server-test

F=$D/cluster.yaml
. "$(dirname "$0")/ha_lib.sh"
HA_SERVERS=3 # for ids (ha_lib.sh)

echo "--- 3 servers (test builds), one etcd member, meta_replicas 3"
# every server (test builds) with fault point srv.home.insync.noreport:
# the records of standbys in sync reach etcd, their HOME_INSYNC events do
# not (as when etcd was unreachable right then), so that the analyzer
# moves s0's home to its first ONLINE standby and the catch-up, the
# safety net, is what this step tests (with the events it would move it
# to the standby in sync: ha_standby_test.sh, analyzer case home_insync)
STRATA_FAULT=srv.home.insync.noreport \
	STRATA_SERVER="$BD/strata-server-test" timeout 400 "$S" cluster up \
	--nodes 3 --dir "$D" --base-port "$PORT" --ha-test \
	--meta-replicas 3 >"$T/up.out" 2>&1
cl_up_or_end "cluster of 3 servers up" "$T/up.out"
check "the map settles (every server ONLINE, serving its own home)" \
	cl_settled 240
B=$(sed -n "s/.*server s0: home s0's metadata replicated to 2 standby(s), first \(s[0-9]\),.*/\1/p" \
	"$D/s0.log" | tail -1)
check "s0's log names its first standby ($B)" test -n "$B"
C=s1; [ "$B" = s1 ] && C=s2
echo "     home s0: standbys $B (first), $C"

echo "--- $B restarted refusing home s0's write sets (fault point)"
srv_stop "${B#s}"
STRATA_FAULT=srv.repl.refuse.s0 "$BD/strata-server-test" --config "$F" \
	--name "$B" --pid-file "$D/$B.pid" --log-file "$D/$B.log"
check "$B up again, the map settled (its home back)" cl_settled 240
# C, the standby s0 keeps in sync, will not answer a takeover's first 12
# asks for its copy (fault point srv.home.copy.refuse)
srv_stop "${C#s}"
STRATA_FAULT=srv.home.copy.refuse:0:12 "$BD/strata-server-test" \
	--config "$F" --name "$C" --pid-file "$D/$C.pid" --log-file "$D/$C.log"
check "$C restarted (refusing its first 12 copies), the map settled" \
	cl_settled 240

echo "--- objects homed on s0, acknowledged by s0 and $C alone"
head -c 299008 /dev/urandom >"$T/blob"
# pdclust 1+2: any one unit reads it back.  A unit write to a server the
# home still marks unreachable (just restarted) is skipped (a degraded
# write), and s0's own units die with it: 2+1 lost an object so once
# (3 of 4 read back), which is not what this step checks.
check "every server answers" wait_up
PD=$(ids 4 0 1000)
n=0
for id in $PD; do
	cl obj put "$id" "$T/blob" --layout pdclust --data 1 --parity 2
	[ "$rc" -eq 0 ] && n=$((n + 1))
	[ "$rc" -eq 0 ] || echo "     put $id: $(tail -1 "$T/err" | head -c 200)"
done
check "4 pdclust 1+2 objects homed on s0 put ($n)" test "$n" -eq 4
n=0
for id in $PD; do same "$id" "$T/blob" && n=$((n + 1)); done
check "they read back ($n of 4)" test "$n" -eq 4
# (its first refusal may be another: a standby fenced for a moment as
# it starts)
check "s0 keeps $B behind (s0's log)" \
	grep -Eq "standby $B of home s0('s metadata is behind| not re-synced)" \
	"$D/s0.log"
check "s0 recorded its standbys in sync: $C alone" \
	grep -q "server s0: home s0's standbys in sync from write set [0-9]*: $C (recorded)" \
	"$D/s0.log"

echo "--- s0 killed: $B takes its home over, caught up from $C"
kill -9 "$(spid 0)"
on_b() { [ "$(acting 0)" = "$B" ]; }
if ! poll 180 on_b; then
	no "the analyzer moves home s0 to $B (its first ONLINE standby)"
	ha map; echo "$out" | head -c 1500 | sed 's/^/     map: /'
	ha decisions; echo "$out" | tail -8 | cut -c1-240 | sed 's/^/     dec: /'
else
	ok "the analyzer moves home s0 to $B (its first ONLINE standby)"
fi
check "$B, not in that record, waited for $C before it served" \
	poll 60 grep -q "takeover of home s0: this server's copy .* waiting for one of them ($C)" \
	"$D/$B.log"
check "$B caught up from $C's copy before it served" \
	poll 60 grep -q "takeover of home s0: caught up from standby $C's copy" \
	"$D/$B.log"
grep -h "caught up from\|copy of its shadow of home s0" "$D/$B.log" "$D/$C.log" |
	cut -c1-220 | sed 's/^/     /'
all_back() {
	nb=0
	for id in $PD; do same "$id" "$T/blob" && nb=$((nb + 1)); done
	[ "$nb" -eq 4 ]
}
check "every acknowledged object homed on s0 reads back byte-exact from $B" \
	poll 120 all_back
echo "     ($nb of 4)"
for id in $PD; do
	same "$id" "$T/blob" ||
		echo "     $id: $(tail -1 "$T/rerr" | head -c 300)"
done
cl obj put "$(ids 1 0 2000)" "$T/blob" --layout pdclust --data 2 --parity 1
check "$B takes new writes of home s0" test "$rc" -eq 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
