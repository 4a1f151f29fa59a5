#!/usr/bin/env bash
# idx_tomb_test.sh BUILD — index tombstones are collected, and only when
# safe (docs/cluster.md "Collecting tombstones"), on a 3-server loopback
# cluster (strata cluster up --call-timeout 3s, index_replicas 3: a
# collection settles within seconds):
#
#   1. all replicas up: 40 records PUT, 30 of them DELeted (one strata
#      call for each list, one op per record): every server
#      reports 30 tombstones collected (strata cluster status), the 10
#      others read back, the 30 do not;
#   2. one replica (not the index's first, which orders and collects) is
#      killed with SIGKILL; 20 more records, PUT before the kill, are
#      DELeted while it is down: no server collects anything for 12 s
#      (cluster status polled all along);
#      In a second index, records of the longest key (ST_KEY_MAX, 495
#      bytes: the long form of version entries, srv_idx_internal.h), PUT
#      before the kill: two DELeted and one overwritten while it is down;
#   3. it is restarted and catches up; with the other two stopped
#      (SIGSTOP) it alone serves the index: none of the 20 comes back, no
#      deleted long key either, the overwritten one has its new value;
#   4. then the 22 are collected on every server (the restarted one counts
#      from 0: 22; the others 52), and after SIGKILL and restart of all
#      three the index holds exactly the 10 records, the other two long
#      keys;
#   5. op tags (docs/cluster.md "Op tags"): the first replica, restarted
#      as strata-server-test with fault srv.idx.answer.lost, applies a DEL
#      and a PUT (no overwrite) and answers them -ETIMEDOUT (lost); the
#      next replica, verifying first (STRATA_TEST_VERIFY=1), merges them
#      and must answer 0 (not -ENOENT / -EEXIST); every replica read alone
#      holds the result; a new DEL / PUT of the same key is still refused;
#      and a GET held past the call timeout (fault srv.idx.read.slow) on
#      the only replica asked is tried once more and answers.
#
# Every wait is bounded; the servers are killed and the directory removed
# on any exit (the NVRAM devices are in the cluster directory: nvram_dir);
# KEEP=1 keeps the directory with the server logs.
# Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" tomb 24000 1000
start() { STRATA_LOG=3 srv_start "$1" "$D/cluster.yaml"; }
# tombs_all: "A B C", the tombstones s0 s1 s2 collected in their current
# runs ("-" for one that is down), from one strata cluster status call
# (with a server down each call waits out its connect timeout: one call
# per poll, not one per server).
tombs_all() {
	timeout 20 "$S" cluster status --dir "$D" 2>/dev/null |
		awk '$1 ~ /^s[0-2]$/ && /tombstones-collected/ {
			for (i = 2; i <= NF; i++) if ($i == "tombstones-collected") v[$1] = $(i - 1)
		} END {
			for (s = 0; s < 3; s++)
				printf "%s%s", (s ? " " : ""), (("s" s) in v ? v["s" s] : "-")
			print ""
		}'
}
# wait_tombs A B C [SECS]: until servers s0 s1 s2 report A B C (at most
# SECS seconds, default 40, and 400 polls).
wait_tombs() {
	local want="$1 $2 $3" got end=$((SECONDS + ${4:-40})) n=0
	while :; do
		got=$(tombs_all)
		n=$((n + 1))
		[ "$got" = "$want" ] && return 0
		[ "$SECONDS" -lt "$end" ] && [ "$n" -lt 400 ] || break
		sleep 0.2
	done
	echo "     tombstones collected: want $want, got $got"
	return 1
}
# hold_tombs A B C SECS: servers s0 s1 s2 report A B C at every poll from
# now until at least SECS seconds have passed (the last poll starts after
# them; at most 400 polls).
hold_tombs() {
	local want="$1 $2 $3" got end=$((SECONDS + $4 + 1)) n=0
	while [ "$n" -lt 400 ]; do
		got=$(tombs_all)
		n=$((n + 1))
		if [ "$got" != "$want" ]; then
			echo "     tombstones collected: want $want, got $got (poll $n)"
			return 1
		fi
		[ "$SECONDS" -ge "$end" ] && return 0
		sleep 0.5
	done
	echo "     still polling after $n polls"
	return 1
}
# puts PREFIX VPREFIX N / dels PREFIX N: the arguments of one idx put
# (KEY VALUE pairs PREFIX1 VPREFIX1 ...) or idx del (PREFIX1 ...).
puts() { local k; for k in $(seq 1 "$3"); do echo "$1$k $2$k"; done; }
# lk N: long key N, 495 bytes (ST_KEY_MAX); all four share their first
# 490 bytes, more than the long form keeps before its hash.
lk() { printf '%s%05d' "$(printf 'x%.0s' $(seq 1 490))" "$1"; }
dels() { seq -f "$1%g" 1 "$2"; }
count_keys() { echo "$out" | grep -cE "^$1"; }

cl_need strata strata-server strata-server-test

echo "--- cluster up, call timeout 3 s"
# The servers log at info level (STRATA_LOG, inherited from cluster up).
# meta_replicas 1: index replicas and their tombstones are the subject,
# and its reads of one replica alone stop the two other servers for a
# while; with replicated homes (the default with etcd) the analyzer then
# takes homes over and hands them back around the victim's restart, which
# this test's timing does not follow (make check 2026-11-30: "s0 caught
# up", "s0 alone answers" failed; not analysed further).
STRATA_LOG=3 timeout "$CL_UP_TIMEOUT" "$S" cluster up --nodes 3 --dir "$D" \
	--base-port "$PORT" --call-timeout 3s --meta-replicas 1 >"$T/up" 2>&1
cl_up_or_end "cluster up" "$T/up"
check "three servers up with 3 s call timeouts" \
	test "$(grep -c '^  call_timeout: 3000ms$' "$D/cluster.yaml")" -eq 1
check "every server answers" wait_up
check "no tombstone collected yet" wait_tombs 0 0 0 5

echo "--- all replicas up: tombstones collected"
cl idx create @tb; check "idx create" test "$rc" -eq 0
# shellcheck disable=SC2046
cl idx put @tb $(puts k v 40)
check "40 records put (one op each)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat "$T/err"
# shellcheck disable=SC2046
cl idx del @tb $(dels k 30)
check "30 records deleted (one op each)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat "$T/err"
check "30 tombstones collected on each server" wait_tombs 30 30 30
cl idx dump @tb
check "the 10 live records read back" test "$(count_keys k)" -eq 10
cl idx get @tb k7
check "a collected key stays deleted" test "$rc" -ne 0

echo "--- one replica down: nothing collected"
# shellcheck disable=SC2046
t0=$SECONDS
cl idx put @tb $(puts j w 20)
t_up=$((SECONDS - t0))
check "20 more records put (all up, $t_up s)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat "$T/err"
# The first replica orders (and collects): it logged its term.
first=$(grep -l "ordering updates in term" "$D"/s*.log | head -1 | sed 's/.*s\([0-9]\)\.log/\1/')
victim=$(( (${first:-0} + 1) % 3 ))
# (after the first replica is found from the logs: @lk's may be another)
cl idx create @lk
cl idx put @lk "$(lk 1)" lv1 "$(lk 2)" lv2 "$(lk 3)" lv3 "$(lk 4)" lv4
check "4 records of 495-byte keys put in @lk" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat "$T/err"
echo "     first replica s$first, killing s$victim"
p=$(spid $victim); kill -9 "$p"; check "s$victim killed" wait_gone "$p"
# One client process, 20 ops: the dead replica costs it one failed
# connect per down mark, not one per op (a client keeps a server it could
# not reach marked down for twice what the attempt took, at least 1 s:
# core/server/peers.h).  Checked from the client's log (STRATA_LOG=3),
# which gives each failed connect's start and the end of the mark it set
# on one monotonic clock: no attempt begins before the mark of the one
# before it ends.  Whatever the load, that holds or the contract is
# broken; the time taken is printed, not asserted.
t0=$SECONDS
# shellcheck disable=SC2046
out=$(STRATA_LOG=3 timeout 120 "$S" --cluster "$D/cluster.yaml" idx del @tb \
	$(dels j 20) 2>"$T/err")
rc=$?
took=$((SECONDS - t0))
check "20 records deleted with s$victim down ($took s; $t_up s for 20 puts all up)" \
	test "$rc" -eq 0
[ "$rc" -eq 0 ] || grep -v " info " "$T/err"
grep "server s$victim (.*connect failed" "$T/err" |
	sed 's/.*connect begun \([0-9]*\), not tried again before \([0-9]*\)\].*/\1 \2/' \
	>"$T/connects"
n_conn=$(grep -c . "$T/connects")
echo "     $n_conn failed connect(s) to s$victim: $(tr '\n' ' ' <"$T/connects")"
check "the client tried s$victim and logged it (at least one failed connect)" \
	test "$n_conn" -ge 1
check "no connect to s$victim began before the last one's down mark ended" \
	awk 'NR > 1 && $1 < until { bad = 1 } { until = $2 } END { exit bad }' \
	"$T/connects"
cl idx del @lk "$(lk 1)" "$(lk 2)"
check "2 long keys deleted with s$victim down" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat "$T/err"
cl idx put @lk "$(lk 3)" lv3-new --overwrite
check "a long key overwritten with s$victim down" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat "$T/err"
want0=30; want1=30; want2=30; eval "want$victim=-"
check "nothing collected in 12 s with s$victim down (polled)" hold_tombs $want0 $want1 $want2 12

echo "--- the replica comes back: no resurrection, then collected"
start $victim
check "s$victim restarted" wait_up
for i in $(seq 1 100); do grep -q "copied from server" "$D/s$victim.log" && break; sleep 0.1; done
check "s$victim caught up (log)" grep -q "copied from server" "$D/s$victim.log"
others=$(echo 0 1 2 | tr ' ' '\n' | grep -v "^$victim$")
# The client waits 20 s per call here: s$victim verifies the index against
# its stopped peers (probes time out) before it answers.
sed 's/call_timeout: .*/call_timeout: 20s/' "$D/cluster.yaml" >"$D/slow.yaml"
for s in $others; do kill -STOP "$(spid $s)"; done
out=$(timeout 90 "$S" --cluster "$D/slow.yaml" idx dump @tb 2>"$T/err")
rc=$?
lout=$(timeout 90 "$S" --cluster "$D/slow.yaml" idx dump @lk 2>"$T/lerr")
lrc=$?
for s in $others; do kill -CONT "$(spid $s)"; done
check "s$victim alone answers" test "$rc" -eq 0 -a "$lrc" -eq 0
[ "$rc" -eq 0 ] || cat "$T/err"
[ "$lrc" -eq 0 ] || cat "$T/lerr"
check "s$victim alone: none of the 20 deleted comes back" test "$(count_keys j)" -eq 0
check "s$victim alone: the 10 live records" test "$(count_keys k)" -eq 10
# dump prints KEY<tab>VALUE a line; the long keys differ in their last 5
# bytes
TAB=$(printf '\t')
lk_lines() { echo "$lout" | grep -c "^x*0000$1$TAB"; }
check "s$victim alone: no deleted long key comes back" \
	test "$(lk_lines 1)" -eq 0 -a "$(lk_lines 2)" -eq 0
check "s$victim alone: the overwritten long key has its new value" \
	test "$(echo "$lout" | grep -c "^x*00003${TAB}lv3-new$")" -eq 1
check "s$victim alone: the untouched long key is there" \
	test "$(echo "$lout" | grep -c "^x*00004${TAB}lv4$")" -eq 1
want0=52; want1=52; want2=52; eval "want$victim=22"
check "then the 22 tombstones are collected on every server" wait_tombs $want0 $want1 $want2 60
cl idx dump @tb
check "after collection: exactly the 10 live records" \
	test "$(count_keys k)" -eq 10 -a "$(count_keys j)" -eq 0
for v in 0 1 2; do p=$(spid $v); kill -9 "$p"; wait_gone "$p"; done
for v in 0 1 2; do start $v; done
check "all three killed and restarted" wait_up
cl idx dump @tb
check "after a full restart: exactly the 10 live records" \
	test "$rc" -eq 0 -a "$(count_keys k)" -eq 10 -a "$(count_keys j)" -eq 0
lrc=0; lout=$(timeout 60 "$S" --cluster "$D/cluster.yaml" idx dump @lk 2>"$T/lerr") || lrc=$?
check "after a full restart: exactly the two long keys left, lv3-new and lv4" \
	test "$lrc" -eq 0 -a "$(echo "$lout" | grep -c .)" -eq 2 -a \
	"$(echo "$lout" | grep -c "${TAB}lv3-new$")" -eq 1 -a \
	"$(echo "$lout" | grep -c "${TAB}lv4$")" -eq 1
for k in 3 17; do cl idx get @tb "j$k"; [ "$rc" -ne 0 ] || break; done
check "deleted keys stay deleted" test "$rc" -ne 0

echo "--- op tags: an update applied whose answer is lost, sent on"
# s$first, the index's first replica, runs as strata-server-test with fault
# srv.idx.answer.lost for the next two updates it orders: each is applied
# and durable there, then answered -ETIMEDOUT as if the answer were lost,
# so the client sends it to the next replica.  STRATA_TEST_VERIFY=1 makes
# that one verify first: it merges s$first's change (as a replica does
# under load when its peers' heartbeats were late), then finds the DEL's
# record gone (the PUT's there): without op tags -ENOENT (-EEXIST) for an
# op that did succeed (docs/cluster.md "Op tags").
# Reads tried once more (docs/cluster.md): an index whose last replica in
# ring order is s$first (clu_home(): splitmix64, mirrored), read from s$first
# alone while fault srv.idx.read.slow holds its first client GET past the
# call timeout: the client must try it once more, not fail -ETIMEDOUT.
RX=$(python3 - "$(( (first + 1) % 3 ))" <<'PY'
import sys
M = (1 << 64) - 1
def mix(x):
	x ^= x >> 30; x = (x * 0xbf58476d1ce4e5b9) & M
	x ^= x >> 27; x = (x * 0x94d049bb133111eb) & M
	return x ^ (x >> 31)
print(["e2:%x" % lo for lo in range(1, 64)
       if mix(0xe2 ^ mix(lo)) % 3 == int(sys.argv[1])][0])
PY
)
cl idx create "$RX"
check "index $RX (home s$(( (first + 1) % 3 )), s$first last) created" test "$rc" -eq 0
cl idx put "$RX" r1 rv1
check "... r1 put" test "$rc" -eq 0
p=$(spid "$first"); kill -9 "$p"; wait_gone "$p"
STRATA_LOG=3 STRATA_FAULT=srv.idx.answer.lost:0:2,srv.idx.read.slow:0:1 \
	"$BD/strata-server-test" --config "$D/cluster.yaml" --name "s$first" \
	--pid-file "$D/s$first.pid" --log-file "$D/s$first.log"
check "s$first restarted with faults srv.idx.answer.lost, srv.idx.read.slow" wait_up
alone "$first" idx get "$RX" r1
slow=$(grep -c "fault srv.idx.read.slow: GET held" "$D/s$first.log")
check "a GET held past the call timeout (${slow}x) is tried once more: r1 = rv1" \
	test "$rc" -eq 0 -a "$slow" -eq 1 -a "$(echo "$out" | grep -c rv1)" -eq 1
[ "$rc" -eq 0 ] || cat "$T/err"
lost() { grep -c "fault srv.idx.answer.lost: $1 applied" "$D/s$first.log"; }
out=$(STRATA_TEST_VERIFY=1 timeout 60 "$S" --cluster "$D/cluster.yaml" idx del @tb k31 2>"$T/err")
rc=$?
check "a DEL whose answer was lost (fired $(lost DEL)x) answers 0 from the next replica" \
	test "$rc" -eq 0 -a "$(lost DEL)" -eq 1
[ "$rc" -eq 0 ] || cat "$T/err"
check "... which found it done by the same op (log)" \
	grep -q "record(s) of a DEL already done by the same op" "$D"/s*.log
for v in 0 1 2; do
	alone $v idx get @tb k31
	check "... k31 gone on s$v" grep -q "no such key" "$T/err"
done
out=$(STRATA_TEST_VERIFY=1 timeout 60 "$S" --cluster "$D/cluster.yaml" idx put @tb k41 v41 2>"$T/err")
rc=$?
check "a PUT (no overwrite) whose answer was lost (fired $(lost PUT)x) answers 0" \
	test "$rc" -eq 0 -a "$(lost PUT)" -eq 1
[ "$rc" -eq 0 ] || cat "$T/err"
check "... which found it done by the same op (log)" \
	grep -q "record(s) of a PUT already done by the same op" "$D"/s*.log
for v in 0 1 2; do
	alone $v idx get @tb k41
	check "... k41 = v41 on s$v" test "$rc" -eq 0 -a "$(echo "$out" | grep -c v41)" -eq 1
done
cl idx del @tb k31
check "a new DEL of k31 (another op) is still 'no such key'" \
	test "$rc" -ne 0 -a "$(grep -c 'no such key' "$T/err")" -ge 1
cl idx put @tb k41 other
check "a new PUT of k41 (another op, no overwrite) is still 'key exists'" \
	test "$rc" -ne 0 -a "$(grep -c 'key exists' "$T/err")" -ge 1
cl idx get @tb k41
check "... and k41 keeps v41" test "$(echo "$out" | grep -c v41)" -eq 1

timeout 60 "$S" cluster down --dir "$D" >/dev/null 2>&1
check "cluster down" test $? -eq 0
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
