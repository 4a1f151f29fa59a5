#!/bin/bash
# repl_test.sh BUILD — replicated homes (docs/cluster.md "Replicated
# homes") on a 3-server loopback cluster without etcd, with
# cluster.meta_replicas 3 (every server is a standby of the two others)
# and 4 s call timeouts:
#
#   each server logs both its standbys in sync; objects and indices are
#   written, some removed; the servers are stopped; each standby's shadow
#   of each home (DATA_DIR/shadow-sH) holds exactly the home's LMDB tables
#   (mdb_dump of every table, in key order, compared line by line);
#   then with the servers up again s2 is killed with SIGKILL, more objects
#   are written (the homes drop s2 and go on), s2 is started again: s0 and
#   s1 re-sync it by snapshot (logged), and s2's own standbys too (its
#   store was written at its open); after a stop, every shadow equals its
#   home again.  Then s1 and s2 killed: s0 acknowledges no write (its
#   homed ones fail "on no standby of its metadata", -EHOSTDOWN).  Last,
#   a standby refusing home s0's ships as from a stale sender (fault
#   point, test build): s0 acknowledges none of its homed writes.
#
# Every wait is bounded; servers are killed on any exit.  Ends with
# "N passed, N failed".
set -u

. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" repl 29200 200
cl_need strata strata-server
command -v mdb_dump >/dev/null || { no "mdb_dump installed (lmdb-utils)"; echo "$pass passed, $fail failed"; exit 1; }
UPCONF=$D/repl.yaml
CL_UP_ARGS="--no-etcd"
cl_up

# The cluster file with meta_replicas 3 and 4 s call timeouts.
sed -e 's/call_timeout: .*/call_timeout: 4s/' \
	-e '/^cluster:/a\  meta_replicas: 3' "$D/cluster.yaml" >"$UPCONF"
check "repl.yaml has meta_replicas" grep -q "meta_replicas: 3" "$UPCONF"
# ddir I: sI's data directory (relative ones from the file's directory).
ddir() {
	local d
	d=$(awk -v n="s$1" '$0 ~ "name: "n"$" {f=1} f && /data_dir:/ {print $2; exit}' "$UPCONF")
	case $d in /*) echo "$d" ;; *) echo "$D/$d" ;; esac
}

r() {
	out=$(timeout 60 "$S" --cluster "$UPCONF" "$@" 2>"$T/err")
	rc=$?
	return "$rc"
}

# in_sync I: lines of sI's log saying a standby is in sync.
in_sync() { grep -Ec "standby s[0-9] (of home s[0-9] )?in sync" "$D/s$1.log" 2>/dev/null; }

# wait_sync I N: until sI logged N "in sync" lines (at most 60 s).
wait_sync() {
	local k
	for k in $(seq 1 300); do
		[ "$(in_sync "$1")" -ge "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

restart_all() {
	local s
	for s in 0 1 2; do srv_stop $s; done
	for s in 0 1 2; do srv_start $s "$UPCONF" --log-level 3; done
	check "$1" wait_up
}

# dump DIR: every table of the LMDB environment in DIR, records only.
dump() {
	mdb_dump -a "$1" 2>&1 | grep -E '^(database=| )'
}

# compare_all TEXT: every shadow of every home equals the home's store.
compare_all() {
	local h s bad=0 n=0
	for h in 0 1 2; do
		dump "$(ddir $h)/meta" >"$T/home$h"
		for s in 0 1 2; do
			[ $s = $h ] && continue
			n=$((n + 1))
			dump "$(ddir $s)/shadow-s$h" >"$T/sh$s-$h"
			if ! cmp -s "$T/home$h" "$T/sh$s-$h"; then
				bad=$((bad + 1))
				echo "     s$s's shadow of s$h differs:"
				diff "$T/home$h" "$T/sh$s-$h" | head -6 | sed 's/^/       /'
			fi
		done
	done
	echo "     $n shadows, $(wc -l <"$T/home0") records lines in s0's store"
	check "$1" test "$bad" = 0 -a "$n" = 6 -a "$(wc -l <"$T/home0")" -gt 20
}

restart_all "servers restarted with meta_replicas 3"
for s in 0 1 2; do
	check "s$s: both standbys in sync" wait_sync $s 2
done

head -c 300000 /dev/urandom >"$T/blob"
bad=0
for i in $(seq 1 12); do
	r obj put "@ro$i" "$T/blob" || bad=$((bad + 1))
done
check "12 objects written" test "$bad" = 0
for i in 1 2 3; do
	r idx create "@ri$i"
	r idx put "@ri$i" a 1 b 2 c 3 d 4 e 5 || bad=$((bad + 1))
	r idx del "@ri$i" b || bad=$((bad + 1))
done
r obj rm "@ro3" || bad=$((bad + 1))
r idx rm "@ri2" || bad=$((bad + 1))
check "indices written, an object and an index removed" test "$bad" = 0

for s in 0 1 2; do srv_stop $s; done
compare_all "every shadow equals its home after a stop"

# A standby killed: the homes go on, and re-sync it when it is back.
for s in 0 1 2; do srv_start $s "$UPCONF" --log-level 3; done
check "servers up again" wait_up
for s in 0 1 2; do wait_sync $s 4; done
check "every standby in sync again after the restart" \
	test "$(in_sync 0)" -ge 4 -a "$(in_sync 1)" -ge 4 -a "$(in_sync 2)" -ge 4
kill -9 "$(spid 2)"
wait_gone "$(spid 2)"
bad=0
for i in $(seq 20 27); do
	r obj put "@ro$i" "$T/blob" || bad=$((bad + 1))
done
check "8 objects written with s2 killed (homes s0, s1 go on)" test "$bad" -le 4
b0=$(grep -Ec "standby s2 (of home s[0-9] )?in sync" "$D/s0.log")
b1=$(grep -Ec "standby s2 (of home s[0-9] )?in sync" "$D/s1.log")
rm -f "$D/s2.pid"
srv_start 2 "$UPCONF" --log-level 3
check "s2 up again" wait_up
for k in $(seq 1 300); do
	[ "$(grep -Ec "standby s2 (of home s[0-9] )?in sync" "$D/s0.log")" -gt "$b0" ] &&
		[ "$(grep -Ec "standby s2 (of home s[0-9] )?in sync" "$D/s1.log")" -gt "$b1" ] && break
	sleep 0.2
done
check "s0 and s1 re-synced s2 after its restart" \
	test "$(grep -Ec "standby s2 (of home s[0-9] )?in sync" "$D/s0.log")" -gt "$b0" -a \
	"$(grep -Ec "standby s2 (of home s[0-9] )?in sync" "$D/s1.log")" -gt "$b1"
check "s2 caught up by snapshot" grep -q "shadow of s[01] installed from a snapshot" "$D/s2.log"
for i in $(seq 28 31); do
	r obj put "@ro$i" "$T/blob" || bad=$((bad + 1))
done
check "objects written after s2 came back" test "$bad" -le 4
for s in 0 1 2; do srv_stop $s; done
compare_all "every shadow equals its home after s2's SIGKILL and re-sync"

# No standby left: s0 alone acknowledges nothing (a write STABLE on the
# home only would be missing from the shadow a takeover serves).
for s in 0 1 2; do srv_start $s "$UPCONF" --log-level 3; done
check "servers up for the last section" wait_up
for s in 0; do wait_sync $s 2; done
kill -9 "$(spid 1)" "$(spid 2)"
wait_gone "$(spid 1)"
wait_gone "$(spid 2)"
acked=0
alone=0
for i in $(seq 40 45); do
	if r obj put "@ro$i" "$T/blob"; then
		acked=$((acked + 1))
	elif grep -q "on no standby of its metadata" "$T/err"; then
		alone=$((alone + 1))
	fi
	echo "     @ro$i: rc $rc: $(head -c 200 "$T/err")"
done
check "with both standbys killed no write is acknowledged ($acked)" \
	test "$acked" -eq 0
check "a write homed on s0 fails: on no standby of its metadata ($alone)" \
	test "$alone" -gt 0
srv_stop 0

# A standby that refuses the home's ships as from a stale sender (it
# follows a map in which another server acts for the home; here fault
# point srv.repl.stale.s0 of a test build s1): the home acknowledges none
# of its writes, though its other standby acknowledged them: such a write
# would be missing from the server that now acts for the home, and lost
# at its next re-sync.  Writes homed on s1 and s2 go on.
if [ -x "$BD/strata-server-test" ]; then
	rm -f "$D"/s*.pid
	n0=$(in_sync 0)
	srv_start 0 "$UPCONF" --log-level 3
	STRATA_FAULT=srv.repl.stale.s0 "$BD/strata-server-test" \
		--config "$UPCONF" --name s1 --pid-file "$D/s1.pid" \
		--log-file "$D/s1.log" --log-level 3
	srv_start 2 "$UPCONF" --log-level 3
	check "servers up, s1 refusing home s0's write sets" wait_up
	wait_sync 0 $((n0 + 2))
	acked=0; deposed=0; other=0
	for i in $(seq 50 59); do
		if r obj put "@ro$i" "$T/blob"; then
			acked=$((acked + 1))
		elif grep -q "another server acts for the home" "$T/err"; then
			deposed=$((deposed + 1))
		else
			other=$((other + 1))
			echo "     @ro$i: rc $rc: $(head -c 200 "$T/err")"
		fi
	done
	echo "     acknowledged $acked, refused as deposed $deposed, other $other"
	check "writes homed on s0 are not acknowledged, naming the refusal ($deposed)" \
		test "$deposed" -gt 0 -a "$other" -eq 0
	check "writes homed on s1 and s2 are ($acked)" test "$acked" -gt 0
	check "s1 logged the refusals (fault point)" \
		grep -q "fault point srv.repl.stale.s0" "$D/s0.log"
	for s in 0 1 2; do srv_stop $s; done
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
