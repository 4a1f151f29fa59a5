#!/usr/bin/env bash
# ec_crash_test.sh BUILD — a server SIGKILLed in the middle of a parallel
# erasure-coded write and between the commits of a replicated index update
# (issue 29, "Tests"): afterwards every object and every record is at its
# old or its new value, on every replica, never mixed.
#
# A 3-server cluster on 127.0.0.1 (ports 6100-6102, no etcd: no HA, the
# dead server is restarted by the test), test-build servers
# (strata-server-test) for the fault points.  Objects are pdclust 4+2 with
# 64 KiB units (a full stripe is 256 KiB of data) and 8 MiB long.
# `strata obj write` sends a file in ops of 1 MiB (clovis/cli/cli_io.c,
# several in flight): each op covers four stripes and is atomic, the whole
# file is not; so each 1 MiB piece must read back whole at one version,
# never a mix of two.
#   1. stripe.write.die: the home of such an object dies in an op after
#      its first stripe's six units are on their devices (on all three
#      servers, written in parallel) and before any record of the op is
#      committed.  Restarted, the object's pieces read back each whole at
#      the old or the new version, the piece of the killed op at the old
#      one; a new write then succeeds and reads back.
#   2. Real SIGKILLs with no fault point: a writer rewrites 6 such objects
#      in turn with new versions while a random server is SIGKILLed at a
#      random moment, the writer still writing (3 rounds, each bounded
#      in time: the writer stops 2 s after the kill, or at 20 s); once it
#      is back, each piece of each object reads back whole at one version
#      written to it, never older than the last write acknowledged.
#   3. srv.idx.seq.die: the ordering replica of an index (its first) dies
#      with an overwrite durable there and the client unanswered (the
#      client's retry on the next replica meets the same fault there; the
#      point fires for copies too, none is sent here: the client sends
#      copies only after the ordering replica answered).
#      Restarted, each of the three replicas read alone has the key at the
#      old or the new value (the new one if the client was answered 0),
#      the same on all three; the other keys are unchanged there.  Before
#      the records and their versions were one commit (srv_internal.h
#      srv_ridx_one_apply()), the point was between the two commits and
#      the replicas disagreed for good: old5 on s0, new5 on s1 and s2.
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" eccrash 6100 1
cl_need strata strata-server strata-server-test

MIB=$((1 << 20))
NBLK=$((8 * MIB / 4096))  # 4 KiB blocks of an object
NOBJ=6
# pieces.py FILE V0 V1 ...: for each 1 MiB piece of FILE, the highest N
# such that the piece is that piece of file VN, -1 when it is none of
# them (a mix); eight -1 when FILE is not 8 MiB long
cat >"$T/pieces.py" <<'EOF'
import sys
MIB = 1 << 20
got = open(sys.argv[1], "rb").read()
vers = [open(f, "rb").read() for f in sys.argv[2:]]
out = []
for p in range(8):
    piece = got[p * MIB:(p + 1) * MIB]
    n = -1
    for i, v in enumerate(vers):
        if len(got) == 8 * MIB and v[p * MIB:(p + 1) * MIB] == piece:
            n = i
    out.append(str(n))
print(" ".join(out))
EOF

# ver O N: the file of version N of object O (8 MiB, its own bytes)
ver() { echo "$T/o$1.v$2"; }
mkver() { head -c $((8 * MIB)) /dev/urandom >"$(ver "$1" "$2")"; }
# pieces_of O: the version of each 1 MiB piece of @ecO as it reads now
# ("none" when the read fails)
pieces_of() {
	local n vs=""
	rm -f "$T/rd"
	if ! timeout 120 "$S" --cluster "$D/cluster.yaml" obj read "@ec$1" 0 \
		"$NBLK" "$T/rd" >/dev/null 2>>"$T/err"; then
		echo none
		return
	fi
	for n in $(seq 0 "${last_try[$1]}"); do vs="$vs $(ver "$1" "$n")"; done
	# shellcheck disable=SC2086
	python3 "$T/pieces.py" "$T/rd" $vs
}
# all_at O N: every piece of @ecO at version N
all_at() { [ "$(pieces_of "$1")" = "$2 $2 $2 $2 $2 $2 $2 $2" ]; }
# start server sI as a test build with STRATA_FAULT=$2
tsrv_start() {
	STRATA_FAULT=$2 "$BD/strata-server-test" --config "$D/cluster.yaml" \
		--name "s$1" --pid-file "$D/s$1.pid" --log-file "$D/s$1.log"
}
# every server stopped and started again as a test build with faults $1
all_test() {
	local i
	for i in 0 1 2; do srv_stop "$i"; done
	for i in 0 1 2; do tsrv_start "$i" "$1"; done
	wait_up
}
# every server not running started, every one running restarted, as a
# release build
all_release() {
	local i
	for i in 0 1 2; do
		if kill -0 "$(spid "$i")" 2>/dev/null; then srv_stop "$i"; fi
		srv_start "$i" "$D/cluster.yaml"
	done
	wait_up
}
# a server that died at fault point $1 (empty: none)
died_at() {
	local i
	for i in 0 1 2; do
		if ! kill -0 "$(spid "$i")" 2>/dev/null &&
			grep -q "fault point $1" "$D/s$i.log"; then
			echo "$i"
			return
		fi
	done
}

echo "--- 3 servers, no etcd, 5 s call timeout"
CL_UP_ARGS="--no-etcd --call-timeout 5s" cl_up
declare -a last_try last_ack
for o in $(seq 1 $NOBJ); do
	mkver "$o" 0
	last_try[o]=0
	last_ack[o]=0
	cl obj create "@ec$o" --layout pdclust --data 4 --parity 2 --unit 64K
	[ "$rc" -eq 0 ] || echo "     create @ec$o: $(tail -1 "$T/err")"
	cl obj write "@ec$o" 0 "$(ver "$o" 0)"
	[ "$rc" -eq 0 ] || echo "     write @ec$o: $(tail -1 "$T/err")"
done
n=0
for o in $(seq 1 $NOBJ); do all_at "$o" 0 && n=$((n + 1)); done
check "$NOBJ pdclust 4+2 objects of 8 MiB (64 KiB units) written and read back ($n)" \
	test "$n" -eq "$NOBJ"

echo "--- 1. a home killed in an op, between its stripes (stripe.write.die)"
check "the servers restarted as test builds, fault stripe.write.die armed" \
	all_test stripe.write.die:0:1
mkver 1 1
last_try[1]=1
cl obj write @ec1 0 "$(ver 1 1)"
v=$(died_at stripe.write.die)
check "the write failed (rc $rc): the home s${v:-?} of @ec1 died at the fault point" \
	test "$rc" -ne 0 -a -n "$v"
g=""
if [ -n "$v" ]; then
	g=$(sed -n "s/.*fault point stripe.write.die: killed after group \([0-9]*\)'s units were written, 3 group(s).*/\1/p" "$D/s$v.log" | head -1)
	check "... in an op of 4 stripes, once its first one's units were written (group ${g:-?}, its log)" \
		test -n "$g"
fi
check "every server a release build again" all_release
p=$(pieces_of 1)
echo "     @ec1's pieces read at versions: $p"
ok_p=1
for x in $p; do case "$x" in 0 | 1) ;; *) ok_p=0 ;; esac; done
check "every 1 MiB piece of @ec1 whole at the old or the new version" \
	test "$ok_p" -eq 1
if [ -n "$g" ]; then
	k=$((g / 4))
	check "... the piece of the killed op (piece $k) at the old one" \
		test "$(echo "$p" | cut -d' ' -f$((k + 1)))" = 0
fi
n=0
for o in $(seq 2 $NOBJ); do all_at "$o" 0 && n=$((n + 1)); done
check "every other object unchanged ($n of $((NOBJ - 1)))" test "$n" -eq $((NOBJ - 1))
cl obj write @ec1 0 "$(ver 1 1)"
check "a new write of @ec1 then succeeds (rc $rc) and reads back" all_at 1 1
[ "$rc" -eq 0 ] && last_ack[1]=1

echo "--- 2. a random server SIGKILLed while objects are rewritten (3 rounds)"
seed=${EC_CRASH_SEED:-$$}
RANDOM=$seed
echo "     seed $seed (EC_CRASH_SEED replays)"
# writer ROUND: rewrite the objects in turn, each with its next version
# (next.O, made here), until stop.ROUND exists or 20 s passed; "O N
# ok|fail" per write in w.ROUND
writer() {
	local r=$1 end=$((SECONDS + 20)) o n
	: >"$T/w.$r"
	while [ "$SECONDS" -lt "$end" ]; do
		for o in $(seq 1 $NOBJ); do
			[ -f "$T/stop.$r" ] && return 0
			n=$(cat "$T/next.$o")
			mkver "$o" "$n"
			echo $((n + 1)) >"$T/next.$o"
			if timeout 60 "$S" --cluster "$D/cluster.yaml" obj write \
				"@ec$o" 0 "$(ver "$o" "$n")" >/dev/null 2>&1; then
				echo "$o $n ok" >>"$T/w.$r"
			else
				echo "$o $n fail" >>"$T/w.$r"
			fi
		done
	done
}
for r in 1 2 3; do
	for o in $(seq 1 $NOBJ); do echo $((last_try[o] + 1)) >"$T/next.$o"; done
	rm -f "$T/stop.$r"
	writer "$r" &
	wpid=$!
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.1f", 0.5 + (r % 20) / 10 }')"
	victim=$((RANDOM % 3))
	vp=$(spid "$victim")
	check "round $r: the writer still writing when s$victim is SIGKILLed" \
		kill -0 "$wpid"
	kill -9 "$vp" 2>/dev/null
	wait_gone "$vp"
	sleep 2
	touch "$T/stop.$r"
	wait "$wpid"
	for o in $(seq 1 $NOBJ); do
		n=$(awk -v o="$o" '$1 == o { n = $2 } END { print n + 0 }' "$T/w.$r")
		[ "$n" -gt "${last_try[o]}" ] && last_try[o]=$n
		n=$(awk -v o="$o" '$1 == o && $3 == "ok" { n = $2 } END { print n + 0 }' "$T/w.$r")
		[ "$n" -gt "${last_ack[o]}" ] && last_ack[o]=$n
	done
	echo "     round $r: s$victim killed; $(grep -c ok "$T/w.$r") writes acknowledged, $(grep -c fail "$T/w.$r") failed"
	srv_start "$victim" "$D/cluster.yaml"
	check "round $r: s$victim restarted" wait_up
	bad=""
	for o in $(seq 1 $NOBJ); do
		p=$(pieces_of "$o")
		if [ "$p" = none ]; then
			bad="$bad @ec$o:unreadable"
			continue
		fi
		for x in $p; do
			if [ "$x" -lt "${last_ack[o]}" ]; then
				bad="$bad @ec$o:[$p]<v${last_ack[o]}"
				break
			fi
		done
	done
	check "round $r: every piece of every object whole at one version written, none older than the last acknowledged${bad:+ (bad:$bad)}" \
		test -z "$bad"
done

echo "--- 3. an index's ordering replica killed with an update durable, unanswered (srv.idx.seq.die)"
cl idx create @ic
for k in 1 2 3 4 5 6 7 8; do cl idx put @ic "k$k" "old$k"; done
cl idx get @ic k5
check "an index of 8 records (k5 = old5)" test "$rc" -eq 0 -a "$out" = old5
check "the servers restarted as test builds, fault srv.idx.seq.die armed" \
	all_test srv.idx.seq.die:0:1
cl idx put @ic k5 new5 --overwrite
prc=$rc
dead=""
for i in 0 1 2; do kill -0 "$(spid "$i")" 2>/dev/null || dead="$dead s$i"; done
v=$(died_at srv.idx.seq.die)
check "the overwrite's ordering replica died at the fault point (dead:${dead:- none}; client rc $prc)" \
	test -n "$v"
check "every server a release build again" all_release
# every replica alone has k5 at one value, old5 or new5 (new5 when the
# client was answered 0), the same on all three
k5=""
agreed() {
	local i vals=""
	for i in 0 1 2; do
		alone "$i" idx get @ic k5
		[ "$rc" -eq 0 ] || return 1
		vals="$vals $out"
	done
	# shellcheck disable=SC2086
	set -- $vals
	[ "$1" = "$2" ] && [ "$2" = "$3" ] || return 1
	case "$1" in
	new5) ;;
	old5) [ "$prc" -ne 0 ] || return 1 ;;
	*) return 1 ;;
	esac
	k5=$1
}
check "k5 the same on every replica read alone, old5 or new5 (new5 if acknowledged)" \
	poll 60 agreed
echo "     k5 = ${k5:-?}"
if [ -z "$k5" ]; then
	for i in 0 1 2; do
		alone "$i" idx get @ic k5
		echo "     s$i: rc $rc '$out' $(tail -1 "$T/err")"
	done
fi
others() {
	local i k
	for i in 0 1 2; do
		for k in 1 2 3 4 6 7 8; do
			alone "$i" idx get @ic "k$k"
			[ "$rc" -eq 0 ] && [ "$out" = "old$k" ] || return 1
		done
	done
}
check "the other 7 records unchanged on every replica" others

timeout 60 "$S" cluster down --dir "$D" >/dev/null 2>&1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
