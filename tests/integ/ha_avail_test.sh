#!/usr/bin/env bash
# ha_avail_test.sh BUILD — availability with a server lost, each server in
# turn (issue 28, "Tests"): 4 servers and a 3-member etcd on loopback,
# `strata cluster up --ha-test --meta-replicas 3 --etcd-members 3`, a
# client (netns_client, the Clovis API) writing objects (pdclust 4+2 and
# 3-way mirror in turn: --mixed) and index records, and journaling each
# one acknowledged STABLE:
#
#   for each server sI in turn:
#     1. the client writes objects and records while sI is SIGKILLed
#        (errors allowed only as transport errors: --down-any);
#     2. the failover time: from the kill to the first successful write
#        of a new object homed on sI (`strata obj put`, tried every 0.5 s,
#        at most 180 s), printed;
#     3. the analyzer moves sI's home to a standby; the time from the kill
#        to every object and record the client was acknowledged so far
#        reading back byte-exact is measured and printed (the failover as
#        a user sees it; no timing assertion, each wait bounded);
#     4. sI restarted: its home handed back, the map settled;
#   at the end every object and record of every round reads back
#   byte-exact: nothing acknowledged was lost across the four failovers.
#
# Plain objects are not in it: a plain object has one copy, on its home's
# own devices, and cannot be read while that server is dead (docs/ha.md
# "Homes taken over").
#
# Before index replicas retried a failed catch-up on their own
# (SRV_BEHIND_RETRY_MS), round 3 failed every run: the index whose other
# two replicas had each missed a round (their catch-up refused once,
# -EREMCHG, by a peer at a newer map epoch, and never tried again) refused
# its updates with -ESTALE once its one replica ahead was killed.
#
# Ports 6200-6209 (fixed, used by no other step: tests/steps.list).  Every
# wait is bounded; servers and etcd are killed on any exit.  Ends with
# "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" haavail 6200 1
cl_need strata strata-server netns_client

F=$D/cluster.yaml
. "$(dirname "$0")/ha_lib.sh"
NIDX=4

ha_up4 3

# client ARGS...: netns_client against the cluster; its output in
# $T/client.out
client() {
	timeout 300 "$BD/netns_client" "$F" "$@" >"$T/client.out" 2>&1
}
clean() { tail -1 "$T/client.out" | grep -Eq '^[0-9]+ passed, 0 failed'; }
head -c 65536 /dev/urandom >"$T/blob"
client setup "$NIDX"
check "indices made" clean

for i in 0 1 2 3; do
	echo "--- round $i: s$i killed while the client writes"
	J=$T/j$i
	: >"$J"
	# A call in flight to sI when it is killed ends when the map marks
	# sI FAILED (its connections failed then: core/server/peers.c) or
	# at its call timeout (20 s), whichever comes first: on a loaded
	# machine the analyzer's decision can come after 10 s, so a failing
	# op must fail within that timeout plus 10 s of slack.
	timeout 300 "$BD/netns_client" "$F" write "a$i" 30 "$NIDX" "$J" \
		--down-any --mixed --pace-ms 100 --deadline-ms 30000 \
		>"$T/w$i.out" 2>&1 &
	wp=$!
	sleep 2
	t0=$(date +%s.%N)
	kill -9 "$(spid "$i")"
	# the failover: the first write of a new object homed on sI
	first_put "$(ids 60 "$i" $((7000 + 100 * i)))" "$T/blob" "$t0" 180 \
		--layout mirror --copies 3
	t1=$(date +%s.%N)
	check "a new object homed on s$i written within 180 s of the kill" \
		test -n "$first"
	[ -z "$first" ] && sed 's/^/     put: /' "$T/perr" | tail -3
	echo "     failover: s$i killed -> first write of an object homed on it: $(python3 -c "print('%.1f' % ($t1 - $t0))") s"
	moved() { local a; a=$(acting "$i"); [ -n "$a" ] && [ "$a" != "s$i" ]; }
	check "the analyzer moves home s$i to a standby" poll 180 moved
	wait "$wp"
	check "the writer's failures were transport errors only" \
		grep -Eq '^[0-9]+ passed, 0 failed' <(tail -1 "$T/w$i.out")
	grep '^FAIL' "$T/w$i.out" | head -3 | cut -c1-240 | sed 's/^/     /'
	echo "     $(grep -c '^o ' "$J") objects, $(grep -c '^r ' "$J") records acknowledged"
	all_back() { client verify "$J"; clean; }
	check "every acknowledged object and record reads back byte-exact" \
		poll 120 all_back
	t1=$(date +%s.%N)
	clean || grep '^FAIL' "$T/client.out" | head -3 | cut -c1-240 | sed 's/^/     /'
	echo "     s$i killed -> all acknowledged updates read back: $(python3 -c "print('%.1f' % ($t1 - $t0))") s"
	rm -f "$D/s$i.pid"
	srv_start "$i" "$F"
	back() { [ -z "$(acting "$i")" ]; }
	check "s$i restarted, its home handed back (within 240 s)" \
		poll 240 back
	check "the map settles" cl_settled 240
done

echo "--- every round's acknowledged updates"
cat "$T"/j0 "$T"/j1 "$T"/j2 "$T"/j3 >"$T/all"
client verify "$T/all"
check "all $(wc -l <"$T/all") acknowledged objects and records read back byte-exact" clean
clean || grep '^FAIL' "$T/client.out" | head -5 | cut -c1-240 | sed 's/^/     /'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
