#!/usr/bin/env bash
# ha_inflight_test.sh BUILD — a running client whose write is waiting on a
# home that dies (clovis/README.md "Clients and a dead server"): 4 servers
# and one etcd member on loopback, `strata cluster up --ha-test
# --meta-replicas 3 --call-timeout 60s` (the analyzer's test presets, a
# 3 s lease; a call timeout far longer than detection and decision):
#
#   1. a client (`strata obj put ID FIFO`) creates an object homed on a
#      victim V (not the analyzer's leader) and waits for its data;
#   2. V is SIGKILLed and the data written into the FIFO at once: the
#      client's WRITE goes to V on the connection it holds, whose loss the
#      transport does not report.  The analyzer marks V FAILED and moves
#      its home; the client's map watcher sees V out of service, the call
#      ends then (not at its 60 s deadline) and the write goes to the
#      acting server.  Checked: the put succeeds in under 30 s from the
#      kill (half the call timeout; before the watcher it ended only
#      after the 60 s timeout), its log says V is FAILED in the map and
#      that a waiting call was failed, and the object reads back
#      byte-exact;
#   3. a new client (its map read at open has V FAILED) writes another
#      object homed on V and never tries V: its log names V FAILED in the
#      map, and no connect to V;
#   4. distributed transactions (bank transfers, dtx_crash) whose
#      account object is homed on V run while V's home is taken over, and
#      again after V got it back: totals exact, nothing half-applied,
#      every STABLE transfer there (dtm/README.md "Participants are
#      homes"); the operator's requests (docs/ha.md "Commands"): `server add
#      ADDR:PORT`, `server drain` of a server the map does not have and
#      `ha report fail` of a device it does not have are refused, naming
#      what, and keep no event; V restarted, the map settles (every server
#      ONLINE, serving its own home); `server drain D` (another server
#      than the leader) makes D OUT, moves its home to a standby and
#      repairs it (REPAIRED), an object homed on D reads back meanwhile;
#      `server add D` rebalances it back ONLINE, and D, whose home is
#      served by the standby, runs again from its start (same pid) and
#      gets its home back; everything reads back byte-exact;
#   5. V restarted as strata-server-test with fault dtx.part.apply: a
#      transfer's COMMIT kills it in its apply; the analyzer moves its
#      home, the acting server loads V's dtx log (the dtx in doubt) and
#      resolves it by termination (COMMITTED: the decider is home s0),
#      nothing is left in doubt and the accounts are exact;
#   6. every server stopped at once (SIGTERM) while V's home is served by
#      W, V started first: its handover waits for W (down) and is made
#      once W runs again; the map settles, V never ran again from its
#      start, everything reads back, the accounts are exact.
#
# Every wait is bounded; ports 6700-6709 (no other step uses them,
# tests/steps.list); run it under flock /tmp/strata-ports.lock; everything
# is killed and removed on any exit.  Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" hainfl 6700 1
cl_need strata strata-server strata-server-test dtx_crash

F=$D/cluster.yaml
. "$(dirname "$0")/ha_lib.sh"
# id H BASE: an id "7:LO" homed on server index H of 4 (clu_home()), LO
# from BASE on.
id_on() {
	python3 - "$1" "$2" <<'EOF'
import sys
h, lo = int(sys.argv[1]), int(sys.argv[2])
M = (1 << 64) - 1
def mix(x):
    x ^= x >> 30; x = (x * 0xbf58476d1ce4e5b9) & M
    x ^= x >> 27; x = (x * 0x94d049bb133111eb) & M
    return x ^ (x >> 31)
while mix(0x7 ^ mix(lo)) % 4 != h:
    lo += 1
print("7:%x" % lo)
EOF
}
acting_is_set() {
	ha map
	[ -n "$(echo "$out" | jget '[s for s in d["servers"] if s["name"] == "s'$V'"][0].get("acting", "")' 2>/dev/null)" ]
}
cl_obj() { timeout 60 "$S" --cluster "$F" obj "$@"; }
not_grep() { ! grep -q "$@"; }

echo "--- 4 servers, one etcd member, meta_replicas 3, test presets, 60 s call timeout"
timeout 400 "$S" cluster up --nodes 4 --dir "$D" --base-port "$PORT" \
	--etcd-members 1 --ha-test --meta-replicas 3 --call-timeout 60s \
	>"$T/up.out" 2>&1
cl_up_or_end "cluster of 4 servers and an etcd member up" "$T/up.out"
check "the cluster file has 60 s call timeouts" \
	grep -q 'call_timeout: 60000ms' "$F"
# the leader acts on lapsed members after holding the key two TTLs
poll 60 test -n "$(leader)"
sleep 7
L=$(leader)
V=2; [ "$L" = s2 ] && V=1
echo "     analyzer leader $L, victim s$V"
head -c 65536 /dev/urandom >"$T/blob"
head -c 65536 /dev/urandom >"$T/blob2"
# bank accounts for section 4 (dtx_crash; its object homed on s$V, pdclust
# 1+1): made while every server is up
export DTX_CRASH_HOMES=4:$V
timeout 120 "$BD/dtx_crash" init "$F" 16 >"$T/dtx.out" 2>&1
check "dtx: 16 accounts made (their object homed on s$V)" test $? -eq 0

echo "--- a running client's write waiting on s$V when it dies"
ID=$(id_on "$V" 1000)
mkfifo "$T/fifo"
exec 7<>"$T/fifo" # held open read-write: the client's open never blocks
# (fd 7 closed in the client: a writer it held itself would keep it from
# ever reading the FIFO's end)
STRATA_LOG=3 timeout 150 "$S" --cluster "$F" obj put "$ID" "$T/fifo" \
	--layout pdclust --data 2 --parity 1 >"$T/put.out" 2>"$T/put.err" 7>&- &
CP=$!
poll 90 cl_obj stat "$ID" >/dev/null 2>&1
check "the running client created $ID (homed on s$V)" cl_obj stat "$ID"
t0=$(date +%s.%N)
kill -9 "$(spid "$V")"
cat "$T/blob" >&7
exec 7>&-
wait "$CP"
prc=$?
el=$(echo "$(date +%s.%N) - $t0" | bc)
echo "     kill -> the running client's put done: $el s (rc $prc)"
check "its put succeeded" test "$prc" -eq 0
check "within 30 s of the kill, half the 60 s call timeout ($el s)" \
	test "$(echo "$el < 30" | bc)" = 1
check "its log: s$V FAILED in the cluster map, the waiting call failed" \
	grep -q "server s$V: FAILED in the cluster map (epoch [0-9]*): 1 call" \
	"$T/put.err"
check "its log: the write went to the server acting for home s$V" \
	grep -q "object $ID: server s$V unreachable; the map has home s$V served by" \
	"$T/put.err"
[ "$fail" -gt 0 ] && grep -v "endpoint.*open" "$T/put.err" | tail -8 | cut -c1-240
rm -f "$T/back"
cl_obj get "$ID" "$T/back" 2>/dev/null
check "$ID reads back byte-exact" cmp -s "$T/blob" "$T/back"

echo "--- a new client after the move"
poll 60 acting_is_set
ID2=$(id_on "$V" 5000)
STRATA_LOG=3 timeout 60 "$S" --cluster "$F" obj put "$ID2" "$T/blob2" \
	--layout pdclust --data 2 --parity 1 >/dev/null 2>"$T/put2.err"
check "it wrote $ID2 (homed on s$V)" test $? -eq 0
# (FAILED, or already OUT, REPAIRING or REPAIRED: down-out is 5 s here)
check "its map read at open has s$V out of service: not contacted" \
	grep -Eq "server s$V: (FAILED|OUT|REPAIRING|REPAIRED) in the cluster map" \
	"$T/put2.err"
check "it never tried to connect to s$V" \
	not_grep "server s$V (.*): connect failed" "$T/put2.err"
rm -f "$T/back"
cl_obj get "$ID2" "$T/back" 2>/dev/null
check "$ID2 reads back byte-exact" cmp -s "$T/blob2" "$T/back"

echo "--- the operator's requests: refused ones, then drain and add"
timeout 60 "$S" --cluster "$F" server add 127.0.0.1:6799 >/dev/null 2>"$T/op.err"
check "server add of a server not in the cluster file: refused (-ENOTSUP)" \
	sh -c "[ $? -ne 0 ] && grep -q 'cannot join a cluster yet' '$T/op.err'"
timeout 60 "$S" --cluster "$F" server drain s9 >/dev/null 2>"$T/op.err"
check "server drain s9: refused, the server named" \
	sh -c "[ $? -ne 0 ] && grep -q \"server 's9' is not in the cluster map\" '$T/op.err'"
timeout 60 "$S" --cluster "$F" ha report fail s0/nodev >/dev/null 2>"$T/op.err"
check "ha report fail s0/nodev: refused, the device named" \
	sh -c "[ $? -ne 0 ] && grep -q \"has no device 'nodev'\" '$T/op.err'"
# (the servers' own events go on meanwhile: none may name what was refused)
no_refused_event() {
	ha events --json
	[ "$rc" -eq 0 ] &&
		! echo "$out" | grep -Eq '"(s9|nodev|127\.0\.0\.1:6799)"'
}
check "the refused requests kept no event" no_refused_event
# Distributed transactions over a home taken over (dtm/README.md
# "Participants are homes"): bank transfers whose account object is homed
# on s$V (dead, its home served by a standby) run on the acting server;
# totals exact, nothing half-applied, every STABLE transfer there; and
# again once s$V got its home back (the records went with it).
# (the accounts were made before s$V died, above)
timeout 300 "$BD/dtx_crash" run "$F" "$T/ack" 7 10 16 >>"$T/dtx.out" 2>&1
# most_stable N: at least N transfers in the ack file, and more than
# half of them STABLE (the others failed cleanly or ended in doubt, each
# said: a COMMIT slowed past the client's deadline by index copies to the
# dead replica, an index replica still verifying after a restart; the
# check below holds either way)
most_stable() {
	local n ok
	n=$(wc -l <"$T/ack")
	ok=$(grep -cv ' [FU]$' "$T/ack")
	echo "     transfers: $n, STABLE: $ok"
	grep -h "transfer .*: -" "$T/dtx.out" | cut -c1-200 | sed 's/^/     /' | tail -4
	[ "$n" -ge "$1" ] && [ $((2 * ok)) -gt "$n" ]
}
check "dtx: transfers over s$V's home on its acting server, most STABLE" \
	most_stable 20
timeout 120 "$BD/dtx_crash" check "$F" "$T/ack" 16 >>"$T/dtx.out" 2>&1
check "dtx: totals exact, nothing half-applied, every STABLE transfer there" \
	test $? -eq 0
check "dtx: the server acting for s$V's home took its dtx log (its log)" \
	sh -c "grep -q 'dtx log of home s$V loaded (acting for it)' $D/s*.log"
[ "$fail" -gt 0 ] && tail -4 "$T/dtx.out"
srv_start "$V" "$F"
check "s$V restarted: the map settles (every server ONLINE, serving its own home)" \
	cl_settled 240
timeout 120 "$BD/dtx_crash" check "$F" "$T/ack" 16 >>"$T/dtx.out" 2>&1
check "dtx: the same after s$V got its home back" test $? -eq 0
timeout 300 "$BD/dtx_crash" run "$F" "$T/ack" 8 5 16 >>"$T/dtx.out" 2>&1
check "dtx: more transfers with s$V serving its home, most STABLE" \
	most_stable 30
timeout 120 "$BD/dtx_crash" check "$F" "$T/ack" 16 >>"$T/dtx.out" 2>&1
check "dtx: checked again" test $? -eq 0
[ "$fail" -gt 0 ] && tail -4 "$T/dtx.out"
L=$(leader)
for DR in 0 1 2 3; do [ "$DR" != "$V" ] && [ "s$DR" != "$L" ] && break; done
ID3=$(id_on "$DR" 9000)
cl_obj put "$ID3" "$T/blob" --layout pdclust --data 2 --parity 1 >/dev/null 2>&1
check "$ID3 (homed on s$DR) written" test $? -eq 0
dpid=$(spid "$DR")
timeout 60 "$S" --cluster "$F" server drain "s$DR" >"$T/op.out" 2>&1
check "server drain s$DR: reported" grep -q "reported OP_DRAIN s$DR" "$T/op.out"
check "the analyzer makes s$DR OUT" \
	poll 60 dec_has "\"SET_STATE\".*\"target\":\"s$DR\".*\"state\":\"OUT\""
check "... moves its home to a standby" \
	poll 60 dec_has "\"HOME_MOVE\".*\"target\":\"s$DR\""
check "... and repairs it (REPAIRED)" \
	poll 180 dec_has "\"target\":\"s$DR\".*\"state\":\"REPAIRED\""
same3() { rm -f "$T/back"; cl_obj get "$ID3" "$T/back" 2>/dev/null && cmp -s "$T/blob" "$T/back"; }
check "$ID3 reads back byte-exact with s$DR drained" poll 60 same3
timeout 60 "$S" --cluster "$F" server add "s$DR" >"$T/op.out" 2>&1
check "server add s$DR: reported" grep -q "reported OP_ADD s$DR" "$T/op.out"
check "the analyzer rebalances s$DR back ONLINE" \
	poll 180 dec_has "\"SET_STATE\".*\"target\":\"s$DR\".*\"state\":\"ONLINE\""
rerun() { grep -q "server s$DR: runs again from its start" "$D/s$DR.log"; }
check "s$DR runs again from its start for its home" poll 90 rerun
check "... under the same pid ($dpid)" \
	sh -c "[ '$(spid "$DR")' = '$dpid' ] && kill -0 '$dpid'"
check "the map settles again: s$DR serves its home" cl_settled 180
n=0
for x in "$ID:blob" "$ID2:blob2" "$ID3:blob"; do
	rm -f "$T/back"
	cl_obj get "${x%:*}" "$T/back" 2>/dev/null &&
		cmp -s "$T/${x##*:}" "$T/back" && n=$((n + 1))
done
check "every object reads back byte-exact ($n of 3)" test "$n" -eq 3

# A participant killed in its apply (fault dtx.part.apply: the COMMIT is
# decided, s$V dies before its commit of the members): its PREPARED record
# is in its home's store and on its standbys; the server the analyzer
# moves its home to loads that home's dtx log and resolves the dtx by
# termination (the decider, home s0, has it COMMITTED) on the shadow it
# serves: the accounts stay exact (dtm/README.md "Participants are homes").
echo "--- s$V killed in a dtx apply: the server acting for its home finishes it"
kill -9 "$(spid "$V")"
wait_gone "$(spid "$V")"
# its death seen first (the home moved): a start before it found the map
# unchanged, kept its home, lost it to the move moments later and ran
# again from its start, and cl_settled could pass on the old map meanwhile
# (the dtx then had the acting server, not s$V, as the participant)
check "s$V killed: the analyzer moves its home" poll 90 acting_is_set
STRATA_FAULT=dtx.part.apply:0:1 "$BD/strata-server-test" --config "$F" \
	--name "s$V" --pid-file "$D/s$V.pid" --log-file "$D/s$V.log"
check "s$V restarted with fault dtx.part.apply: the map settles" cl_settled 240
vpid=$(spid "$V")
STRATA_LOG=3 timeout 300 "$BD/dtx_crash" run "$F" "$T/ack" 9 3 16 \
	>>"$T/dtx.out" 2>&1
check "s$V died at the fault point (SIGKILL in its apply)" \
	sh -c "! kill -0 $vpid 2>/dev/null && grep -q 'fault point dtx.part.apply' '$D/s$V.log'"
check "its home moves to a standby" poll 90 acting_is_set
# by its termination, or by the client's DECIDE sent again to it once the
# map moved the home (cluster_dtx_call(), whichever comes first)
resolved() {
	grep -q "(home s$V): in doubt, resolved by termination: COMMITTED" $D/s*.log ||
		grep -q "dtx request to home s$V: server s$V unreachable; the map has home s$V served by" "$T/dtx.out"
}
check "the acting server finishes s$V's dtx (termination, or the DECIDE sent to it)" \
	poll 120 resolved
check "... after loading s$V's dtx log with it in doubt" \
	sh -c "grep -q 'dtx log of home s$V loaded (acting for it): [1-9]' $D/s*.log"
timeout 120 "$BD/dtx_crash" fence "$F" 60 >>"$T/dtx.out" 2>&1
check "no dtx left in doubt" test $? -eq 0
timeout 120 "$BD/dtx_crash" check "$F" "$T/ack" 16 >>"$T/dtx.out" 2>&1
check "dtx: totals exact, nothing half-applied, every STABLE transfer there" \
	test $? -eq 0
[ "$fail" -gt 0 ] && tail -4 "$T/dtx.out"

# Every server stopped while s$V's home is served by W, s$V started
# first: its handover (before its store opens) finds W down, and waits
# for it, reading the map again (docs/cluster.md "The handover"), instead
# of starting without its home and running again from its start later
# (a single try did: zc_nvram_cluster_test.sh's restart of every server,
# with the clovis suites failing meanwhile).
echo "--- every server stopped, s$V (its home served by another) started first"
# its repair ended first: stopped before the down-out delay (5 s here),
# s$V would be made OUT and REPAIRING by the restarted leader while it
# waits for its handback, and a server lost for good gets no handback
# until it is up again (it starts without its home and runs again from
# its start: srv_ha.c handback_refused(), analyzer.c home_step())
repaired() { [ "$(srv_state "s$V")" = REPAIRED ]; }
check "s$V's repair ends first (REPAIRED: its return is a rebalance)" \
	poll 120 repaired
ha map
W=$(echo "$out" | jget '[s for s in d["servers"] if s["name"] == "s'$V'"][0].get("acting", "")' 2>/dev/null)
W=${W#s}
check "s$V's home is served by another server (s${W:-?})" \
	test -n "$W" -a "$W" != "$V"
vl=$(wc -l <"$D/s$V.log")
others=""
for i in 0 1 2 3; do [ "$i" != "$V" ] && others="$others $i"; done
# at once (SIGTERM), so that no analyzer moves a home meanwhile
pids=""
for i in $others; do pids="$pids $(spid "$i")"; done
kill $pids 2>/dev/null
for p in $pids; do wait_gone "$p" || no "a server gone within 60 s of SIGTERM"; done
srv_start "$V" "$F"
vnew() { tail -n +$((vl + 1)) "$D/s$V.log"; }
vsaid() { vnew | grep -q "$1"; }
check "s$V waits for its home's handback (s$W is down)" \
	poll 60 vsaid "waiting up to 60 s for its handback"
for i in $others; do srv_start "$i" "$F"; done
check "... and gets it at its start from s$W" \
	poll 120 vsaid "its home's metadata handed back by s$W"
check "the map settles: every server ONLINE, serving its own home" \
	cl_settled 240
check "s$V did not run again from its start (its handback was made)" \
	sh -c "! tail -n +$((vl + 1)) '$D/s$V.log' | grep -q 'runs again from its start'"
n=0
for x in "$ID:blob" "$ID2:blob2" "$ID3:blob"; do
	rm -f "$T/back"
	cl_obj get "${x%:*}" "$T/back" >/dev/null 2>&1 &&
		cmp -s "$T/${x##*:}" "$T/back" && n=$((n + 1))
done
check "every object reads back byte-exact after the restart ($n of 3)" \
	test "$n" -eq 3
timeout 120 "$BD/dtx_crash" check "$F" "$T/ack" 16 >>"$T/dtx.out" 2>&1
check "dtx: totals exact after the restart of every server" test $? -eq 0
[ "$fail" -gt 0 ] && tail -4 "$T/dtx.out"
unset DTX_CRASH_HOMES

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
