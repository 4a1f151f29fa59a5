#!/bin/bash
# dev_cluster_test.sh BUILD — 'strata device fail|replace' through a
# cluster client (docs/cluster.md "Devices through a cluster client"), on a
# 3-server loopback cluster (base ports 5000-5959, group "dev" of
# tests/steps.list):
#
#   1. pdclust objects (2+1 and 4+2) are written and read back byte-exact;
#      the device s1:flash2 served reads (its owner's read counter grows);
#   2. bad names are refused with a message naming what is wrong (no such
#      server, no such device on it, an index past its devices, a name
#      without its server, a cluster-wide index past the end) and change
#      nothing; 'device replace' of an online device is refused;
#   3. 'device fail s1:flash2': the device is failed (JSON, 'devices'), s0
#      and s2 log their image of it failed; s0 is restarted; every object
#      reads back byte-exact and the device serves no read (degraded: every
#      home reads around it, s0 too after its restart); a replace before
#      the repair is refused (-EBUSY naming the server whose image is not
#      repaired);
#   4. 'repair' rebuilds units, nothing unrepairable; the device is
#      repaired; every object reads back;
#   5. 'device replace s1:flash2 new-flash2.dev' (relative: from s1's data
#      directory): the new device file is there, the device (now
#      s1:new-flash2) is online with the rebalance flag, s0 and s2 log
#      their image back online; 'rebalance' moves units back (no group
#      left with two units on one server); the flag is cleared; every
#      object reads back byte-exact and the new device serves reads;
#   6. the cluster-wide index of 'strata devices' names a device too
#      (s2:flash0 failed, repaired, replaced by an absolute path and
#      rebalanced by its index; every object reads back);
#   7. s2 stopped: 'device fail s2:flash1' fails -EHOSTDOWN naming s2;
#      'device fail s0:flash1' fails s0's device but reports that s2 could
#      not mark its image; with s2 back the same command completes (its
#      image failed, logged by s2).
#
# Every wait is bounded; the servers are killed and the directory removed
# on any exit (KEEP=1 keeps it).  Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" dev 5000 240
cl_need strata strata-server

# jq_py EXPR: evaluate EXPR over the JSON in $out (as d); prints the result.
jpy() {
	printf '%s' "$out" | python3 -c 'import json,sys
d = json.load(sys.stdin)
print(eval(sys.argv[1]))' "$1" 2>/dev/null
}

# dev_field NAME KEY: KEY of device NAME in 'strata --json devices'.
dev_field() {
	cl --json devices
	jpy "[x[\"$2\"] for x in d if x[\"name\"] == \"$1\"]"
}

# states: "NAME=STATE,REBAL ..." of every device, sorted.
states() {
	cl --json devices
	jpy '" ".join(sorted("%s=%s,%s" % (x["name"], x["state"], x["rebalance"]) for x in d))'
}

# read_all WHAT: every object reads back byte-exact.
read_all() {
	local o bad=0
	for o in $OBJS; do
		rm -f "$T/back"
		cl obj get "@$o" "$T/back"
		if ! cmp -s "$T/blob" "$T/back"; then
			bad=$((bad + 1))
			echo "     read of @$o: rc $rc: $(head -c 300 "$T/err")"
		fi
	done
	check "$1: every object reads back byte-exact" test "$bad" -eq 0
}

# refused TEXT PATTERN ARGS...: the CLI fails and its message matches.
refused() {
	local text=$1 pat=$2
	shift 2
	cl "$@"
	if [ "$rc" -ne 0 ] && grep -qE "$pat" "$T/err"; then
		ok "$text"
	else
		no "$text (rc $rc: $(head -c 300 "$T/err"))"
	fi
}

# walk KIND: strata --json KIND (repair, rebalance).  With an HA map in
# etcd a device's failure changes the map, and a new CLI process starts at
# epoch 0: its walk threads (one per server) are all refused for the older
# epoch at once and each sends again once the process took the newer one
# (core/server/peers.h); none may fail for it.
walk() {
	cl --json "$1"
}

cl_up
F=$D/cluster.yaml

echo "--- 1. objects"
head -c 3000000 /dev/urandom >"$T/blob"
OBJS="p1 p2 p3 p4 q1 q2"
bad=0
for o in p1 p2 p3 p4; do
	cl obj put "@$o" "$T/blob" --layout pdclust --data 2 --parity 1
	[ "$rc" -eq 0 ] || bad=$((bad + 1))
done
for o in q1 q2; do
	cl obj put "@$o" "$T/blob" --layout pdclust --data 4 --parity 2
	[ "$rc" -eq 0 ] || bad=$((bad + 1))
done
check "4 pdclust 2+1 and 2 pdclust 4+2 objects written" test "$bad" -eq 0
r0=$(dev_field s1:flash2 reads)
read_all "written"
r1=$(dev_field s1:flash2 reads)
check "s1:flash2 served reads ($r0 -> $r1)" \
	test "${r1//[^0-9]/}" -gt "${r0//[^0-9]/}"

echo "--- 2. bad names change nothing"
before=$(states)
refused "no such server" "no server called 's9'.*s0 s1 s2" device fail s9:flash2
refused "no such device on s1" "server s1 has no device named 'flash99'" \
	device fail s1:flash99
refused "index past s1's devices" "server s1 has devices 0\.\.[0-9]+" \
	device fail s1:99
refused "a name without its server" "SERVER:NAME" device fail flash2
refused "cluster-wide index past the end" "no such device" device fail 999
refused "no such server (replace)" "no server called 's9'" \
	device replace s9:flash2 x.dev
refused "replace of an online device" "Device or resource busy.*online" \
	device replace s1:flash2 x.dev
after=$(states)
check "nothing changed: every device online as before" \
	test "$before" = "$after" -a -n "$before"
check "no device file made by the refused replaces" \
	test ! -e "$D/s1/x.dev"

echo "--- 3. device fail s1:flash2"
cl --json device fail s1:flash2
check "device fail s1:flash2" test "$rc" -eq 0
check "answer: failed, changed" \
	test "$(jpy 'd["name"], d["state"], d["changed"]')" = "('s1:flash2', 'failed', True)"
check "devices shows s1:flash2 failed" \
	test "$(dev_field s1:flash2 state)" = "['failed']"
check "s0 and s2 failed their image of it" \
	test "$(grep -l 'remote:s1:3) failed: its server s1 marked it failed' \
		"$D/s0.log" "$D/s2.log" | wc -l)" -eq 2
cl device fail s1:flash2
check "device fail again: already failed" \
	test "$rc" -eq 0 -a "$out" = "device s1:flash2 is already failed"
# A home's image stays failed across its restart (persisted in its store):
# s0 restarted, its objects must still read around s1:flash2.
srv_stop 0
srv_start 0 "$F"
check "s0 restarted" wait_up
r2=$(dev_field s1:flash2 reads)
read_all "degraded"
r3=$(dev_field s1:flash2 reads)
check "the failed device served no read ($r2 -> $r3)" test "$r2" = "$r3"
refused "replace before repair" "Device or resource busy.*server s[02] has not repaired its image" \
	device replace s1:flash2 new-flash2.dev
check "no device file made by it" test ! -e "$D/s1/new-flash2.dev"

echo "--- 4. repair"
walk repair
check "repair" test "$rc" -eq 0
check "repair complete, rebuilt units, nothing unrepairable" \
	test "$(jpy 'd["complete"] and d["rebuilt"] > 0 and d["unrepairable"] == 0')" = True
# s0 (restarted above) homed units on the device: its degraded reads
# after the restart went around it.
check "s0 rebuilt units of its own objects" \
	test "$(sed -n 's/.*server s0: repair: [0-9]* units, \([0-9]*\) rebuilt.*/\1/p' \
		"$D/s0.log" | sort -n | tail -1)" -gt 0
check "s1:flash2 is repaired" \
	test "$(dev_field s1:flash2 state)" = "['repaired']"
read_all "repaired"

echo "--- 5. device replace s1:flash2"
cl --json device replace s1:flash2 new-flash2.dev
check "device replace s1:flash2 new-flash2.dev" test "$rc" -eq 0
check "answer: s1:new-flash2 online, to rebalance" \
	test "$(jpy 'd["name"], d["state"], d["rebalance"]')" = "('s1:new-flash2', 'online', True)"
check "the new device is in s1's data directory" test -f "$D/s1/new-flash2.dev"
check "s0 and s2 brought their image back online" \
	test "$(grep -l 'of device 3 of server s1 back online' \
		"$D/s0.log" "$D/s2.log" | wc -l)" -eq 2
refused "replace again: online" "Device or resource busy" \
	device replace s1:new-flash2 other.dev
walk rebalance
check "rebalance" test "$rc" -eq 0
check "rebalance moved units back, no group sharing a server" \
	test "$(jpy 'd["complete"] and d["moved"] > 0 and d["groups_sharing_server"] == 0')" = True
check "rebalance flag cleared" \
	test "$(dev_field s1:new-flash2 rebalance)" = "[False]"
r4=$(dev_field s1:new-flash2 reads)
read_all "rebalanced"
r5=$(dev_field s1:new-flash2 reads)
check "the new device served reads ($r4 -> $r5)" \
	test "${r5//[^0-9]/}" -gt "${r4//[^0-9]/}"

echo "--- 6. a device by its cluster-wide index"
cl --json devices
idx=$(jpy '[x["index"] for x in d if x["name"] == "s2:flash0"][0]')
cl --json device fail "$idx"
check "device fail $idx (s2:flash0)" \
	test "$rc" -eq 0 -a "$(jpy 'd["name"], d["state"]')" = "('s2:flash0', 'failed')"
check "s0 and s1 failed their image of it" \
	test "$(grep -l 'remote:s2:1) failed' "$D/s0.log" "$D/s1.log" | wc -l)" -eq 2
walk repair
check "repair" test "$rc" -eq 0
cl --json device replace "$idx" "$T/s2-new-flash0.dev"
check "device replace $idx (s2:flash0) by an absolute path" \
	test "$rc" -eq 0 -a "$(jpy 'd["name"], d["state"], d["rebalance"]')" = "('s2:s2-new-flash0', 'online', True)"
check "the new device is there" test -f "$T/s2-new-flash0.dev"
walk rebalance
check "rebalance" test "$rc" -eq 0 -a "$(jpy 'd["unrepairable"]')" = 0
read_all "after the second replace"

echo "--- 7. a server that does not answer"
srv_stop 2
refused "device fail s2:flash1 with s2 stopped" "Host is down.*s2" \
	device fail s2:flash1
refused "device fail s0:flash1 with s2 stopped: s2 named" \
	"failed on its server, but server s2 could not mark its image" \
	device fail s0:flash1
check "s0:flash1 failed on s0" test "$(dev_field s0:flash1 state)" = "['failed']"
srv_start 2 "$F"
check "s2 back" wait_up
cl device fail s0:flash1
check "device fail s0:flash1 again completes" test "$rc" -eq 0
check "s2 failed its image of s0:flash1" \
	grep -q 'remote:s0:2) failed: its server s0' "$D/s2.log"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
