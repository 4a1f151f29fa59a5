#!/usr/bin/env bash
# ha_test.sh BUILD — the HA subsystem live (docs/ha.md): 4 servers and a
# 3-member etcd on loopback, `strata cluster up --ha-test` (the analyzer's
# test presets: quiet window 1 s, down-out 5 s, flapping 5 in 60 s; a 2 s
# membership lease):
#
#   1. the map and the agents: every server acts under the same epoch, not
#      fenced, one analyzer leader; 4 SRV_JOINED events; a client's first
#      request (epoch 0) is refused -EREMCHG and sent again under the
#      server's epoch (the client's log says so);
#   2. a server killed (SIGKILL): the others report it unreachable, its
#      lease lapses; the analyzer marks it FAILED, after the down-out
#      delay OUT with a repair job, whose walks run and end (JOB_DONE ->
#      REPAIRED); every pdclust 2+1 object homed elsewhere reads back
#      byte-exact throughout; the epoch only grows, one per decision;
#   3. it restarts: SRV_JOINED; the analyzer rebalances onto it
#      (REBALANCING, JOB_REBALANCE, JOB_DONE -> ONLINE); the leader is
#      killed while it runs that job (held while a file exists by fault
#      ha.job.hold: the cluster runs strata-server-test) and restarted:
#      the next leader adopts the job (its log says so) and its end
#      takes it ONLINE;
#   4. the analyzer's leader killed: another server leads within a bound;
#      it restarts; no decision is taken twice (the log's seqs strictly
#      grow and no two carry the same change);
#   5. etcd's leader killed, then a server frozen (SIGSTOP) past its lease:
#      the decisions go on through the other members; the frozen server,
#      continued, logs its fence and serves again under the current epoch;
#   6. flapping: a server stopped and continued five times within the
#      window is QUARANTINED, and no repair job is ever started for it.
#
# Every wait is bounded (polls of at most 120 s); ports 6000-6009 (group
# ha, tests/steps.list); everything is killed and removed on any exit.
# Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" ha 6000 1
cl_need strata strata-server strata-server-test

F=$D/cluster.yaml
. "$(dirname "$0")/ha_lib.sh"
epoch() { ha state; echo "$out" | jget 'd["epoch"]' 2>/dev/null; }
# The decisions log: seqs strictly grow, no job is started twice, and no
# decision sets a target to the state the previous one about it set (a
# decision applied twice would; a target may go through one state again,
# e.g. FAILED and ONLINE twice, with other decisions between).
no_dup_decisions() {
	ha decisions --json
	echo "$out" | python3 -c '
import json, sys
state, jobs, ended, last = {}, set(), set(), 0
for l in sys.stdin:
    if not l.strip():
        continue
    d = json.loads(l)
    t = (d["target"], d["dev"])
    dup = d["seq"] <= last
    if d["kind"] in ("SET_STATE", "JOB_REPAIR", "JOB_REBALANCE"):
        dup = dup or state.get(t) == d["state"]
        state[t] = d["state"]
    if d["kind"] in ("JOB_REPAIR", "JOB_REBALANCE"):
        # a job is started once (JOB_PAUSE and JOB_ABORT name one)
        dup = dup or d["job"] in jobs
        jobs.add(d["job"])
    elif d["kind"] in ("JOB_PAUSE", "JOB_ABORT"):
        dup = dup or d["job"] not in jobs or d["job"] in ended
        ended.add(d["job"])
    if dup:
        print("duplicate or out of order:", l.strip()); sys.exit(1)
    last = d["seq"]
'
}

echo "--- 4 servers, a 3-member etcd, the HA test presets"
# strata-server-test with fault ha.job.hold: a rebalance job waits while
# $T/hold exists before its first call (the leader is killed during one)
# meta_replicas 1: the map, the analyzer, jobs and fencing, as before
# homes were replicated by default; with them, a server frozen past its
# lease and continued runs again from its start for its home's handback
# instead of renewing its lease (make check 2026-11-30: the fence checks
# below).  Takeovers: ha_home_test.sh, ha_inflight_test.sh, ha_netns_test.sh.
STRATA_SERVER=$BD/strata-server-test STRATA_FAULT=ha.job.hold:0:0 \
	STRATA_JOB_HOLD=$T/hold \
	timeout 400 "$S" cluster up --nodes 4 --dir "$D" --base-port "$PORT" \
	--etcd-members 3 --ha-test --meta-replicas 1 >"$T/up.out" 2>&1
cl_up_or_end "cluster of 4 servers and 3 etcd members up" "$T/up.out"
check "the cluster file names 3 etcd endpoints and the test presets" \
	grep -q 'ha_rules: test' "$F"
for i in 0 1 2 3; do
	ha state "s$i"
	echo "     s$i: $out"
	check "s$i: epoch >= 1, not fenced, a leader named" test \
		"$(echo "$out" | jget 'd["server"] == "s'$i'" and d["epoch"] >= 1 and not d["fenced"] and d["leader"] != ""')" = True
done
joined4() {
	ha events --json
	[ "$(echo "$out" | grep '"SRV_JOINED"' |
	     sed 's/.*"target":"\([^"]*\)".*/\1/' | sort -u | wc -l)" -eq 4 ]
}
check "every server joined (SRV_JOINED of s0..s3)" poll 30 joined4
out=$(STRATA_LOG=3 timeout 60 "$S" --cluster "$F" idx create @ix 2>&1)
check "a client's first request (epoch 0) refused, sent again under the map's epoch" \
	grep -q "a server refused a request of the older one" <<<"$out"

echo "--- data: 12 pdclust 2+1 objects, an index"
head -c 300000 /dev/urandom >"$T/blob"
for i in $(seq 1 12); do
	cl obj put "@p$i" "$T/blob" --layout pdclust --data 2 --parity 1 || break
done
check "12 objects put" test "$rc" -eq 0
cl idx put @ix k1 v1 k2 v2
check "index records put" test "$rc" -eq 0
# read_all [DEAD]: how many of the 12 read back byte-exact into rok; a
# read that answers wrong bytes is a failure of its own (rbad), and so is
# one that fails for any other reason than its home being the dead
# server DEAD (rother): object metadata still lives on one home
# (docs/ha.md "Not done yet").
read_all() {
	rok=0; rbad=0; rother=0
	for i in $(seq 1 12); do
		rm -f "$T/back"
		if ! timeout 60 "$S" --cluster "$F" obj get "@p$i" "$T/back" \
			2>"$T/rerr"; then
			grep -q "server ${1:-none} (" "$T/rerr" ||
				{ rother=$((rother + 1)); cat "$T/rerr"; }
			continue
		fi
		if cmp -s "$T/blob" "$T/back"; then rok=$((rok + 1));
		else rbad=$((rbad + 1)); fi
	done
}
read_all
check "all 12 read back with every server up ($rok)" test "$rok" -eq 12

echo "--- a server killed: FAILED, OUT, repaired"
L=$(leader)
V=3; [ "$L" = s3 ] && V=2
e0=$(epoch)
echo "     leader $L, killing s$V (epoch $e0)"
kill -9 "$(spid $V)"
check "s$V reported unreachable by two others" \
	poll 60 sh -c "'$S' --cluster '$F' ha events --json 2>/dev/null | grep '\"SRV_UNREACHABLE\"' | grep -c '\"target\":\"s$V\"' | awk '\$1 >= 2 {ok=1} END {exit !ok}'"
check "... and the analyzer marks it FAILED" \
	poll 60 dec_has "\"SET_STATE\".*\"target\":\"s$V\".*\"state\":\"FAILED\""
check "after the down-out delay: a repair job for s$V" \
	poll 90 dec_has "\"JOB_REPAIR\".*\"target\":\"s$V\""
check "... whose end (JOB_DONE) makes it REPAIRED" \
	poll 180 dec_has "\"target\":\"s$V\".*\"state\":\"REPAIRED\""
# job_units KIND: the units the last JOB_DONE about s$V counted
job_units() {
	ha events --json
	echo "$out" | grep '"JOB_DONE"' | grep "\"target\":\"s$V\"" | tail -1 |
		jget 'd["count"]'
}
n=$(job_units)
check "the repair rebuilt units that were on s$V ($n): every store saw its devices failed" \
	test "${n:-0}" -gt 0
read_all "s$V"
echo "     $rok of 12 read back byte-exact with s$V out, $rbad wrong"
check "no object read back wrong with s$V out" test "$rbad" -eq 0
check "every object homed on another server reads back ($rok; $rother failed otherwise)" \
	test "$rother" -eq 0 -a "$rok" -ge 1
e1=$(epoch)
check "the epoch grew with the decisions ($e0 -> $e1)" test "$e1" -gt "$e0"
check "the decisions log: no change twice, seqs growing" no_dup_decisions

echo "--- it comes back: rebalanced"
touch "$T/hold"
srv_start $V "$F"
check "s$V restarted" wait_up
check "s$V joined again" \
	poll 60 sh -c "'$S' --cluster '$F' ha events --json 2>/dev/null | grep '\"SRV_JOINED\"' | grep -c '\"target\":\"s$V\"' | awk '\$1 >= 2 {ok=1} END {exit !ok}'"
check "the analyzer rebalances onto s$V (JOB_REBALANCE)" \
	poll 90 dec_has "\"JOB_REBALANCE\".*\"target\":\"s$V\""
# The leader killed while it runs that job (held by fault ha.job.hold)
# and started again at once (a restart; or FAILED then back: one target
# down, within the tolerance): the next leader adopts the job and runs it
# (before, a job whose leader died was never run: s$V stayed REBALANCING).
ha decisions --json
J=$(echo "$out" | grep '"JOB_REBALANCE"' | grep "\"target\":\"s$V\"" |
	tail -1 | jget 'd["job"]')
# the held job, as cluster status shows it (issue 28 item 4: running
# jobs with their progress)
job_shown() {
	cl cluster status
	grep -q "ha: job $J rebalance of s$V: 0 of [0-9]* servers walked" <<<"$out"
}
check "cluster status shows job $J running, no server walked yet" \
	poll 30 job_shown
grep "ha: job" <<<"$out" | sed 's/^/     /'
L=$(leader); LI=${L#s}
echo "     killing the leader $L during job $J, restarting it"
kill -9 "$(spid "$LI")"
wait_gone "$(spid "$LI")"
# asked at once: the next leader adopts the job within seconds, and runs
# it to its end unless it holds it too (a server restarted by this test
# runs without the fault)
check "$L was holding job $J when it was killed (no end of it yet)" \
	sh -c "! '$S' --cluster '$F' ha events --json 2>/dev/null | grep '\"JOB_DONE\"' | grep -q '\"job\":$J}'"
srv_start "$LI" "$F"
check "$L restarted" wait_up
rm -f "$T/hold"
adopted() { grep -q "leader: adopts job $J " "$D"/s*.log; }
check "a leader adopts job $J (its old leader died with it)" poll 90 adopted
check "... and takes it back ONLINE when the job is done" \
	poll 180 dec_has "\"target\":\"s$V\".*\"state\":\"ONLINE\""
n=$(job_units)
check "the rebalance moved units back onto s$V ($n)" test "${n:-0}" -gt 0
# (what the servers logged of that job, when it moved nothing)
[ "${n:-0}" -gt 0 ] || grep -h "job $J\b" "$D"/s*.log | tail -n 30 |
	cut -c1-240 | sed 's/^/     log: /'
read_all
check "all 12 objects read back byte-exact after the rebalance ($rok)" \
	test "$rok" -eq 12

echo "--- the analyzer's leader killed"
L=$(leader); LI=${L#s}
echo "     killing the leader $L"
kill -9 "$(spid "$LI")"
newl() { local l; l=$(leader); [ -n "$l" ] && [ "$l" != "$L" ]; }
t0=$SECONDS
check "another server leads" poll 60 newl
echo "     new leader $(leader) after $((SECONDS - t0)) s"
srv_start "$LI" "$F"
check "$L restarted" wait_up
check "no decision taken twice" no_dup_decisions

echo "--- etcd's leader killed, then a server frozen past its lease"
eps=$(sed -n 's/.*etcd: \[ \(.*\) \]/\1/p' "$F" | tr -d '"' | tr -d ' ')
el=$(ETCDCTL_API=3 timeout 20 etcdctl --endpoints "$eps" endpoint status \
	-w json 2>/dev/null | python3 -c '
import json, sys
st = json.load(sys.stdin)
for s in st:
    if s["Status"]["header"]["member_id"] == s["Status"]["leader"]:
        print(s["Endpoint"].rsplit(":", 1)[1])')
ep=""
for f in "$D"/etcd*.pid; do
	p=$(cat "$f" 2>/dev/null)
	[ -n "$p" ] && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null |
		grep -q -- "--listen-client-urls http://127.0.0.1:$el " && ep=$p
done
echo "     etcd leader on port $el (pid ${ep:-?})"
check "etcd's leader found" test -n "$ep"
[ -n "$ep" ] && kill -9 "$ep"
Z=1; [ "$(leader)" = s1 ] && Z=2
e2=$(epoch)
kill -STOP "$(spid $Z)"
sleep 6
check "decisions go on through the other etcd members: s$Z marked FAILED" \
	poll 60 dec_has "\"SET_STATE\".*\"target\":\"s$Z\".*\"state\":\"FAILED\""
kill -CONT "$(spid $Z)"
# (its lease thread logs the fence when its renewal gives up, after the
# etcd client's tries, which a killed etcd member lengthens: about 25 s
# alone, longer on a loaded machine: docs/ha.md "Not done yet")
check "s$Z, continued, fenced itself (its log)" \
	poll 90 grep -q "fenced: membership lease not renewed" "$D/s$Z.log"
check "... until its lease was renewed and the map read again" \
	poll 90 grep -q "lease renewed and map read (epoch" "$D/s$Z.log"
zst() {
	local e
	e=$(epoch)
	ha state "s$Z"
	[ "$(echo "$out" | jget 'd["fenced"]' 2>/dev/null)" = False ] &&
	[ "$(echo "$out" | jget 'd["epoch"]')" -ge "$e" ]
}
check "... and serves again under the current epoch" poll 60 zst
cl idx get @ix k1
check "the index answers after all this" test "$rc" -eq 0 -a "$out" = v1
check "no decision taken twice" no_dup_decisions
e3=$(epoch)
check "epochs grew ($e2 -> $e3)" test "$e3" -gt "$e2"

echo "--- flapping: quarantined, never repaired"
Q=0; [ "$(leader)" = s0 ] && Q=3
# repairs: the repair jobs decided for s$Q so far (an earlier step may
# have repaired it legitimately: the killed leader, if its restart took
# longer than the down-out delay)
repairs() {
	ha decisions --json
	echo "$out" | grep '"JOB_REPAIR"' | grep -c "\"target\":\"s$Q\""
}
r0=$(repairs)
for k in 1 2 3 4 5; do
	kill -STOP "$(spid $Q)"; sleep 3
	kill -CONT "$(spid $Q)"; sleep 3
done
check "s$Q QUARANTINED" \
	poll 60 dec_has "\"SET_STATE\".*\"target\":\"s$Q\".*\"state\":\"QUARANTINED\""
sleep 8 # past the down-out delay: a repair would be decided by now
r1=$(repairs)
check "no repair job for s$Q while it flapped ($r0 before, $r1 after)" \
	test "$r1" -eq "$r0"
[ "$r1" -eq "$r0" ] || echo "$out" | grep "\"target\":\"s$Q\""
check "no decision taken twice" no_dup_decisions

timeout 120 "$S" cluster down --dir "$D" >"$T/down" 2>&1
check "cluster down (servers and etcd)" grep -q "etcd: [0-9]* members stopped" "$T/down"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] || cl_diag
[ "$fail" -eq 0 ]
