#!/usr/bin/env bash
# cluster_test.sh BUILD — a 3-server loopback cluster, end to end:
#
#   1. strata cluster up --nodes 3 (servers on 127.0.0.1 only), status;
#   2. the Clovis suites run unchanged against it: ut_main -s concurrency
#      -t mixed (first: it wants a fresh namespace), then -s clovis,
#      clovis_bad (suite composite left out: comp_cluster_test.sh runs it
#      against a cluster, but for move_frees_units, which reopens a local
#      store to count freed space), with STRATA_UT_CLUSTER
#      naming the cluster file so that every instance they open is a client
#      of the cluster (test builds only, clovis.c);
#   3. a client with a wrong secret is refused (-EACCES, clear message),
#      through the cluster file and through --server;
#   4. objects and index records written through the CLI, one server
#      killed with SIGKILL and restarted: everything acknowledged (STABLE)
#      reads back;
#   5. index replica catch-up: a replica is killed, records are written
#      and deleted while it is down, it is restarted, the other replicas
#      are stopped (SIGSTOP), and the changes must be read from it alone;
#   6. SIGTERM drains (after 7 below): the servers, restarted with --model (device model:
#      a 64 MiB write to sas takes ~0.5 s), are stopped while such a write
#      is in flight (the timing retried, 3 rounds at most); the server
#      reports it drained, the client gets success, the data reads back
#      after a restart; servers log "stopped cleanly", pid files go;
#   7. placement across servers (phase 2a): the servers restarted with
#      4 s call timeouts; pdclust 2+1 objects have units on every server
#      (each server logs the first unit it gets from each home); s2 is
#      stopped (SIGSTOP): objects homed elsewhere read byte-exact and are
#      written, degraded; those homed on s2 fail within 9 s naming it; s2
#      continues, is seen again, everything reads back; strata --cluster
#      repair and scrub (every server, figures summed), strata-server
#      --walk rebalance; with s2 stopped again the repair fails naming s2
#      within 15 s, and s0 stops cleanly on SIGTERM during a walk;
#      everything reads back;
#   8. strata cluster down; status then exits non-zero.
#
# Every wait is bounded; the servers are killed on any exit (trap).
# Ends with "N passed, N failed".
set -u

. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" cluster 20000 1000

# restart I: start server sI again (it daemonizes), wait until all answer.
restart() {
	srv_start "$1" "$D/cluster.yaml" || return 1
	wait_up
}

cl_need strata strata-server ut_main

echo "--- cluster up"
cl_up
grep -q "cluster of 3 servers up" "$T/up" || cat "$T/up"
check "three pid files" test -f "$D/s0.pid" -a -f "$D/s1.pid" -a -f "$D/s2.pid"
check "servers listen on loopback only" \
	test "$(grep -c 'address: 127.0.0.1' "$D/cluster.yaml")" -eq 3
timeout 20 "$S" cluster status --dir "$D" >"$T/st" 2>&1
check "status: 3 up" grep -q "servers: 3 up, 0 down" "$T/st"
check "status lists tiers" grep -qE "^  flash +18 devices" "$T/st"
check "status: no request refused yet" \
	test "$(grep -c ' 0 refused ' "$T/st")" -eq 3

# st_json DOWN [free]: strata cluster status --json, checked against the
# cluster file (names, addresses), the text form just before it in $T/st
# (servers up/down, refused/dropped/auth-failed, every device line: index,
# tier, size, state, path; free too with "free", for an idle cluster) and
# DOWN, the comma list of servers that must show as down.  Prints each
# mismatch; returns 1 if there was one.  st_json_fetch asks (into $T/stj,
# its exit code in $T/stj.rc), st_json_check compares.
st_json_fetch() {
	timeout 60 "$S" cluster status --dir "$D" --json >"$T/stj" 2>"$T/stj.err"
	echo $? >"$T/stj.rc"
}
st_json() {
	st_json_fetch
	st_json_check "$@"
}
st_json_check() {
	python3 - "$T/stj" "$T/st" "$PORT" "$1" "${2:-}" <<'PY'
import json, re, sys
jf, tf, port, down, free = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
	[x for x in sys.argv[4].split(",") if x], sys.argv[5] == "free"
bad = []
try:
	d = json.load(open(jf))
except ValueError as e:
	print("     not valid JSON: %s" % e); sys.exit(1)
top = {"servers", "servers_up", "servers_down", "devices",
       "devices_not_online", "tiers", "ha"}
skeys = {"name", "address", "state", "up", "uptime_ms", "requests",
	 "refused", "dropped", "auth_failed", "in_flight", "idx_syncs",
	 "tombstones_collected", "idx_doubts", "late_writes_refused",
	 "bytes_fenced",
	 "zc_write_bytes", "zc_read_bytes",
	 "slice_free", "devices"}
dkeys = {"index", "tier", "path", "driver", "state", "size_bytes",
	 "free_bytes", "errors", "rebalance"}
# "metrics": the requests the servers served, summed from their metrics
# (present when one server or more could be read)
if not top <= set(d) <= top | {"metrics"}:
	bad.append("top-level keys %s" % sorted(d))
if "metrics" in d and not isinstance(d["metrics"].get("served"), dict):
	bad.append("metrics without its served object: %s" % d["metrics"])
# HA (docs/ha.md): the agent's state and the map from a server that
# answered, null when none did
ha = d.get("ha")
if ha is not None and (ha["map"]["epoch"] < 1 or len(ha["map"]["servers"])
		       != 3 or ha["state"]["epoch"] < 1):
	bad.append("ha %s" % json.dumps(ha)[:200])
text = open(tf).read()
m = re.search(r"servers: (\d+) up, (\d+) down", text)
if not m or (int(m.group(1)), int(m.group(2))) != \
		(d.get("servers_up"), d.get("servers_down")):
	bad.append("servers_up/down %s/%s, text %s" % (d.get("servers_up"),
		   d.get("servers_down"), m and m.group(0)))
devs = []
for i, s in enumerate(d.get("servers", [])):
	name = "s%d" % i
	if set(s) != skeys:
		bad.append("%s keys %s" % (name, sorted(s))); continue
	isdown = name in down
	if s["name"] != name or s["address"] != "127.0.0.1:%d" % (port + i):
		bad.append("server %d is %s %s" % (i, s["name"], s["address"]))
	if s["up"] == isdown or s["state"] != ("down" if isdown else "up"):
		bad.append("%s up %s state %s, want %s" % (name, s["up"],
			   s["state"], "down" if isdown else "up"))
	if isdown:
		if s["requests"] is not None or s["slice_free"] is not None or \
		   s["devices"] != []:
			bad.append("%s down but has counters or devices" % name)
		if not re.search(r"^%s 127\.0\.0\.1:%d +DOWN$" % (name, port + i),
				 text, re.M):
			bad.append("%s not DOWN in the text form" % name)
		continue
	t = re.search(r"^%s 127\.0\.0\.1:%d +up +\d+ s +\d+ requests +(\d+) "
		      r"refused +(\d+) dropped +(\d+) auth-failed" %
		      (name, port + i), text, re.M)
	if not t or [int(x) for x in t.groups()] != \
			[s["refused"], s["dropped"], s["auth_failed"]]:
		bad.append("%s refused/dropped/auth_failed %s %s %s, text %s" %
			   (name, s["refused"], s["dropped"], s["auth_failed"],
			    t and t.group(0)))
	if len(s["slice_free"]) != 3 or s["slice_free"][i] != 0:
		bad.append("%s slice_free %s" % (name, s["slice_free"]))
	if not s["devices"]:
		bad.append("%s has no devices" % name)
	for v in s["devices"]:
		if set(v) != dkeys or not v["path"].startswith(name + ":"):
			bad.append("%s device %s" % (name, v))
	devs += s["devices"]
lines = re.findall(r"^ +(\d+) (\w+) +(\d+) MiB free of +(\d+) MiB (\w+) (\S+)$",
		   text, re.M)
if d.get("devices") != len(devs) or len(lines) != len(devs):
	bad.append("devices %s, listed %d, text lines %d" % (d.get("devices"),
		   len(devs), len(lines)))
for v, l in zip(devs, lines):
	got = [str(v["index"]), v["tier"], str(v["size_bytes"] >> 20),
	       "online" if v["state"] == "online" else "FAILED", v["path"]]
	want = [l[0], l[1], l[3], l[4], l[5]]
	if free:
		got.append(str(v["free_bytes"] >> 20)); want.append(l[2])
	if got != want:
		bad.append("device %s, text %s" % (got, want))
tiers = {t["tier"]: t["devices"] for t in d.get("tiers", [])}
for tier, n in re.findall(r"^  (\w+) +(\d+) devices", text, re.M):
	if tiers.get(tier) != int(n):
		bad.append("tier %s: %s devices, text %s" % (tier, tiers.get(tier), n))
for b in bad:
	print("     " + b)
sys.exit(1 if bad else 0)
PY
}
st_json "" free
check "status --json: valid, every key, matches the text form" test $? -eq 0
check "status --json: exit 0 with every server up" test "$(cat "$T/stj.rc")" -eq 0
timeout 20 "$S" cluster status --dir "$D" --jsn >/dev/null 2>"$T/stj.err"
check "status --jsn: usage error (exit 2)" test $? -eq 2
check "status --jsn: names the option" grep -q "unknown option '--jsn'" "$T/stj.err"

echo "--- Clovis suites against the cluster"
cl_ut "concurrency mixed" -s concurrency -t mixed
cl_ut "clovis suites" -s clovis,clovis_bad -x composite

echo "--- wrong secret refused"
mkdir -p "$T/bad"
sed "s|secret_file: secret|secret_file: $T/bad/secret|" "$D/cluster.yaml" \
	>"$T/bad/cluster.yaml"
echo "not-the-cluster-secret-0123456789" >"$T/bad/secret"
timeout 30 "$S" --cluster "$T/bad/cluster.yaml" idx ls >/dev/null 2>"$T/bad/err"
check "wrong secret (cluster file): refused" test $? -ne 0
check "wrong secret (cluster file): clear message" \
	grep -q "Permission denied.*wrong cluster secret" "$T/bad/err"
cat "$T/bad/err" | sed 's/^/     /'
STRATA_SECRET=not-the-cluster-secret-0123456789 timeout 30 "$S" \
	--server "127.0.0.1:$PORT" idx ls >/dev/null 2>"$T/bad/err2"
check "wrong secret (--server): refused" test $? -ne 0
check "wrong secret (--server): clear message" \
	grep -q "Permission denied.*wrong cluster secret" "$T/bad/err2"
STRATA_SECRET=$(cat "$D/secret") timeout 30 "$S" --server "127.0.0.1:$PORT" \
	idx ls >/dev/null 2>&1
check "right secret (--server): served" test $? -eq 0
timeout 20 "$S" cluster status --dir "$D" >"$T/st" 2>&1
check "status counts the refused connects" \
	test "$(grep -oE '[0-9]+ auth-failed' "$T/st" | awk '{s += $1} END {print s + 0}')" -ge 2

echo "--- SIGKILL and restart: STABLE data and records survive"
head -c 3000000 /dev/urandom >"$T/blob"
for i in 1 2 3 4 5 6; do
	cl obj put "@o$i" "$T/blob"; check "put @o$i" test "$rc" -eq 0
done
cl obj put @pd "$T/blob" --layout pdclust --data 4 --parity 2
check "put @pd (pdclust 4+2)" test "$rc" -eq 0
cl idx create @ix; check "idx create" test "$rc" -eq 0
# shellcheck disable=SC2046
cl idx put @ix $(for k in $(seq 1 10); do echo "k$k v$k"; done)
check "10 records put (one call, one op each)" test "$rc" -eq 0
for victim in 0 1 2; do
	p=$(spid $victim)
	kill -9 "$p"; check "server s$victim killed" wait_gone "$p"
	check "restart s$victim" restart $victim
done
for i in 1 2 3 4 5 6; do
	rm -f "$T/back"
	cl obj get "@o$i" "$T/back"
	check "@o$i reads back after SIGKILL" cmp -s "$T/blob" "$T/back"
done
cl obj get @pd "$T/back"
check "@pd reads back after SIGKILL" cmp -s "$T/blob" "$T/back"
cl idx dump @ix
check "10 records after SIGKILL" test "$(echo "$out" | grep -c '^k')" -eq 10

echo "--- index replica catch-up"
# @ix lives on all 3 servers (R = 3).  Kill s2, write while it is down.
p=$(spid 2); kill -9 "$p"; wait_gone "$p"
timeout 60 "$S" cluster status --dir "$D" >"$T/st" 2>&1
check "status with s2 killed: exit 1" test $? -eq 1
st_json s2
check "status --json with s2 killed: s2 down, s0 and s1 up, matches the text form" \
	test $? -eq 0
check "status --json with s2 killed: exit 1, valid JSON on stdout" \
	test "$(cat "$T/stj.rc")" -eq 1
cl idx put @ix k11 v11 k12 v12 k13 v13
check "puts with one replica down" test "$rc" -eq 0
cl idx del @ix k1; check "del with one replica down" test "$rc" -eq 0
check "restart s2" restart 2
# s2 verifies its replicas at start, against its live peers (bounded at
# 60 s: 10 s was once too short under make check's load, 2026-11-30).
for i in $(seq 1 600); do grep -q "copied from server" "$D/s2.log" && break; sleep 0.1; done
check "s2 logged the catch-up (within 60 s)" grep -q "copied from server" "$D/s2.log"
# Stop the other two: s2 alone must serve what it missed.
# The client tries s0 and s1 first (20 s call timeout each, the file of
# cluster up) before s2: about 40 s when quiet, more on a loaded machine
# (a fresh-root make check ran over cl's 60 s once), so this one call has
# 180 s; its time and, on a failure, its error go to the log.
for s in 0 1; do kill -STOP "$(spid $s)"; done
t0=$(date +%s)
out=$(timeout 180 "$S" --cluster "$D/cluster.yaml" idx dump @ix 2>"$T/err")
rc=$?
for s in 0 1; do kill -CONT "$(spid $s)"; done
echo "  (idx dump with s0, s1 stopped: rc $rc in $(($(date +%s) - t0)) s)"
[ "$rc" -eq 0 ] || head -3 "$T/err"
check "s2 alone answers" test "$rc" -eq 0
check "s2 alone has the 3 records it missed" \
	test "$(echo "$out" | grep -cE '^k1[123]')" -eq 3
check "s2 alone has the delete it missed" test "$(echo "$out" | grep -c '^k1	')" -eq 0
check "s2 alone has the older records" test "$(echo "$out" | grep -c '^k')" -eq 12

echo "--- placement across servers: units on every server, one stopped"
# The same cluster with 4 s call timeouts (servers and client), so that a
# stopped server costs seconds, not the 20 s of the file from cluster up.
cl_restart_fast "servers restarted (4 s timeouts, info log)"
echo "--- index replicas ordering at once: terms, merge by version"
# Two clients that disagree on the first live replica while the servers
# still see each other (an asymmetric partition, test-only
# STRATA_TEST_SKIP_SERVERS): X reaches s0 only, Y everything but s0, so s0
# orders X's updates and the first of s1/s2 in @it's ring orders Y's, both
# at once from the same seq, each in a term of its own.  Afterwards each
# replica is read alone (the other two skipped; STRATA_TEST_VERIFY: the
# SRF_VERIFY a client sends to a server it could not reach): every record
# either side acknowledged reads back from every replica, a key Y deleted
# is gone, and a key both wrote holds the value of the higher term.
cxy() { # cxy SKIP ARGS...
	local sk=$1; shift
	out=$(STRATA_TEST_SKIP_SERVERS=$sk timeout 60 "$S" --cluster "$D/fast.yaml" "$@" 2>"$T/err")
	rc=$?
}
cf idx create @it; check "idx @it created" test "$rc" -eq 0
cf idx put @it b1 base1 b2 base2 b3 base3
check "3 base records of @it" test "$rc" -eq 0
acked=" b2 b3"; bad=0
for i in 1 2 3 4 5; do
	cxy s1,s2 idx put @it "x$i" "X$i"; [ "$rc" -eq 0 ] && acked="$acked x$i" || bad=$((bad + 1))
	cxy s0 idx put @it "y$i" "Y$i"; [ "$rc" -eq 0 ] && acked="$acked y$i" || bad=$((bad + 1))
done
cxy s0 idx del @it b1; [ "$rc" -eq 0 ] || bad=$((bad + 1))
cxy s0 idx put @it kc vY --overwrite; [ "$rc" -eq 0 ] || bad=$((bad + 1))
cxy s1,s2 idx put @it kc vX --overwrite; [ "$rc" -eq 0 ] || bad=$((bad + 1))
check "both sides acknowledged every update ($bad failed)" test "$bad" -eq 0
# The terms each orderer took (its log: "ordering updates in term N"):
# s0 for X, and the one of s1/s2 that ordered Y (home: the base records).
lastterm() { grep -o "index [0-9a-f:]*: ordering updates in term [0-9]*" "$D/s$1.log" | awk '{t=$NF} END {print t+0}'; }
t0=$(lastterm 0); t1=$(lastterm 1); t2=$(lastterm 2)
[ "$t1" -gt "$t2" ] && ty=$t1 || ty=$t2
check "s0 and another replica both ordered (terms $t0 $t1 $t2)" \
	test "$t0" -gt 0 -a "$ty" -gt 0 -a "$t0" -ne "$ty"
[ "$ty" -gt "$t0" ] && want=vY || want=vX
for r in 0 1 2; do
	sk=$(echo s0 s1 s2 | tr ' ' '\n' | grep -v "^s$r\$" | paste -sd,)
	out=$(STRATA_TEST_VERIFY=1 STRATA_TEST_SKIP_SERVERS=$sk timeout 60 \
		"$S" --cluster "$D/fast.yaml" idx dump @it 2>"$T/err"); rc=$?
	miss=""
	for k in $acked; do echo "$out" | grep -q "^$k	" || miss="$miss $k"; done
	check "s$r alone: every acknowledged record of both sides (missing:$miss)" \
		test "$rc" -eq 0 -a -z "$miss"
	check "s$r alone: b1 deleted by Y is gone" test "$(echo "$out" | grep -c '^b1	')" -eq 0
	check "s$r alone: kc holds $want (higher term wins)" \
		test "$(echo "$out" | grep '^kc	' | cut -f2)" = "$want"
done
grep -q "merged" "$D/s0.log"; check "s0 logged a merge" test $? -eq 0

echo "--- a replica a writer could not reach: never read stale"
# The writer cannot reach s2 (STRATA_TEST_SKIP_SERVERS) while the servers
# see each other: no heartbeat fails, s2 is never restarted, so nothing
# but the behind marks tells s2 it missed the updates (docs/cluster.md
# "Replicas that missed updates").  s2 read alone (no STRATA_TEST_VERIFY)
# must serve the new values, or refuse; never the old ones.
cf idx create @iw; check "idx @iw created" test "$rc" -eq 0
cf idx put @iw w1 old1; cf idx put @iw w2 old2
cxy s0,s1 idx get @iw w1 # s2 serves @iw once: verified, as of now
check "s2 alone before: w1 is old1 (got: $out)" test "$rc" -eq 0 -a "$out" = old1
bad=0
cxy s2 idx put @iw w1 new1 --overwrite; [ "$rc" -eq 0 ] || bad=$((bad + 1))
cxy s2 idx del @iw w2; [ "$rc" -eq 0 ] || bad=$((bad + 1))
cxy s2 idx put @iw w3 new3; [ "$rc" -eq 0 ] || bad=$((bad + 1))
check "3 updates acknowledged without s2 ($bad failed)" test "$bad" -eq 0
cxy s0,s1 idx dump @iw
check "s2 alone: w1 new1, w2 gone, w3 new3 (got: $(echo $out))" \
	test "$rc" -eq 0 -a "$(echo "$out" | grep -c '^w1	new1$')" -eq 1 \
	-a "$(echo "$out" | grep -c '^w2	')" -eq 0 \
	-a "$(echo "$out" | grep -c '^w3	new3$')" -eq 1
cxy s0,s1 idx get @iw w1
check "s2 alone: GET w1 is new1 (got: $out)" test "$rc" -eq 0 -a "$out" = new1
grep -q "missed updates up to" "$D/s2.log"
check "s2 logged that it missed updates" test $? -eq 0
head -c 1000000 /dev/urandom >"$T/pblob"
for i in $(seq 1 6); do
	cf obj put "@pa$i" "$T/pblob" --layout pdclust --data 2 --parity 1
	[ "$rc" -eq 0 ] || break
done
check "6 pdclust 2+1 objects put" test "$rc" -eq 0
# Every server that is a home of one of them logs its object writes; each
# other server logs the first unit it got from that home: a group's three
# units lie on three servers (failure domains).
homes=0; spread=0
for h in 0 1 2; do
	grep -q "server s$h: write" "$D/s$h.log" || continue
	homes=$((homes + 1))
	n=0
	for t in 0 1 2; do
		[ "$t" = "$h" ] && continue
		grep -q "first unit from home s$h " "$D/s$t.log" && n=$((n + 1))
	done
	[ "$n" -eq 2 ] && spread=$((spread + 1))
done
check "units of every home on both other servers ($spread of $homes homes)" \
	test "$homes" -ge 2 -a "$spread" -eq "$homes"
# Stop s2 and wait for the others to notice (probes every 0.2 s, 2 s
# timeout): objects homed on s0/s1 read and write degraded, those homed on
# s2 fail within the call timeout with a message naming it.
cl_freeze_s2
good=0; bad=0; slow=0; unnamed=0
for i in $(seq 1 6); do
	rm -f "$T/pback"
	t0=$(date +%s%N)
	cf obj get "@pa$i" "$T/pback"
	ms=$((($(date +%s%N) - t0) / 1000000))
	if [ "$rc" -eq 0 ] && cmp -s "$T/pblob" "$T/pback"; then
		good=$((good + 1)); echo "$i" >>"$T/pa_good"
	elif [ "$rc" -ne 0 ]; then
		bad=$((bad + 1))
		grep -q "s2" "$T/err" || unnamed=$((unnamed + 1))
		[ "$ms" -le 9000 ] || slow=$((slow + 1))
	else
		no "@pa$i: read with s2 stopped returned other bytes"
	fi
done
echo "     reads with s2 stopped: $good byte-exact, $bad failed"
check "reads with s2 stopped: objects homed elsewhere read degraded" test "$good" -ge 1
check "reads with s2 stopped: failures name s2" test "$unnamed" -eq 0
check "reads with s2 stopped: failures within 9 s" test "$slow" -eq 0
check "reads with s2 stopped: good + failed = 6" test $((good + bad)) -eq 6
wgood=0; wbad=0; wunnamed=0
for i in $(seq 1 6); do
	cf obj put "@pb$i" "$T/pblob" --layout pdclust --data 2 --parity 1
	if [ "$rc" -eq 0 ]; then
		wgood=$((wgood + 1)); echo "$i" >>"$T/pb_good"
	else
		wbad=$((wbad + 1)); grep -q "s2" "$T/err" || wunnamed=$((wunnamed + 1))
	fi
done
echo "     writes with s2 stopped: $wgood acknowledged, $wbad failed"
check "writes with s2 stopped: as many succeed as reads did" test "$wgood" -ge 1
check "writes with s2 stopped: failures name s2" test "$wunnamed" -eq 0
kill -CONT "$(spid 2)"
for i in $(seq 1 100); do
	[ "$(grep -c "server s2: remote devices reachable again" "$D/s0.log" "$D/s1.log" |
	     grep -c ':[1-9]')" -eq 2 ] && break
	sleep 0.1
done
check "s0 and s1 see s2 again" \
	test "$(grep -c "server s2: remote devices reachable again" "$D/s0.log" "$D/s1.log" | grep -c ':[1-9]')" -eq 2
back=0
for i in $(seq 1 6); do
	for o in pa pb; do
		[ "$o" = pb ] && ! grep -qx "$i" "$T/pb_good" && continue
		rm -f "$T/pback"
		cf obj get "@$o$i" "$T/pback"
		if cmp -s "$T/pblob" "$T/pback"; then back=$((back + 1));
		else no "@$o$i reads back after s2 is back ($(cat "$T/err"))"; fi
	done
done
check "every object reads back after s2 is back ($back)" \
	test "$back" -eq $((6 + wgood))
# The HA map takes s2 back (a FAILED decision while it was stopped needs
# the analyzer's return, and a home taken over meanwhile the handback of
# s2 running again from its start): the walks below go to every server
# the map has in service.
check "the map has every server ONLINE and serving its own home (at most 180 s)" \
	cl_settled 180
grep -h "runs again from its start\|handed back by" "$D/s2.log" | cut -c1-200 |
	sed 's/^/     /'
# Repair and scrub through the Clovis API (strata --cluster F: SOP_WALK to
# every server at once, figures summed), rebalance through strata-server
# --walk; then read all.
jnum() { echo "$out" | grep -oE "\"$1\": [0-9]+" | head -1 | grep -oE '[0-9]+$'; }
cf --json repair
check "strata --cluster repair after SIGSTOP/SIGCONT: success" test "$rc" -eq 0
echo "     $out"
check "repair: units visited, 0 unrepairable" \
	test "$(jnum units)" -gt 0 -a "$(jnum unrepairable)" = 0
cf --json scrub
check "strata --cluster scrub: success, 0 corrupt" \
	test "$rc" -eq 0 -a "$(jnum corrupt)" = 0 -a "$(jnum units)" -gt 0
timeout 120 "$BD/strata-server" --config "$D/fast.yaml" --walk rebalance \
	>"$T/walk" 2>&1
check "rebalance on every server (strata-server --walk rebalance)" \
	test $? -eq 0 -a "$(grep -c ': rebalance: .* 0 unrepairable' "$T/walk")" -eq 3
# s2 stopped: the repair fails naming it, after s0 and s1 walked, within
# the call timeout (4 s) plus margin.  Then SIGTERM s0 while a walk of its
# own runs (strata-server --walk scrub --name s0): it stops cleanly, in
# bounded time (the walk stops at its next batch and is waited for).
kill -STOP "$(spid 2)"
t0=$(date +%s%N)
cf --json repair
ms=$((($(date +%s%N) - t0) / 1000000))
sed 's/^/     /' "$T/err"
check "repair with s2 stopped: fails" test "$rc" -ne 0
check "repair with s2 stopped: message names s2" grep -q "server s2 " "$T/err"
check "repair with s2 stopped: within 15 s ($ms ms)" test "$ms" -le 15000
w0=$(grep -c "server s0: scrub started" "$D/s0.log")
timeout 60 "$BD/strata-server" --config "$D/fast.yaml" --walk scrub --name s0 \
	>"$T/walk" 2>&1 &
wbg=$!
for i in $(seq 1 200); do
	[ "$(grep -c "server s0: scrub started" "$D/s0.log")" -gt "$w0" ] && break
	sleep 0.02
done
p=$(spid 0); t0=$(date +%s%N)
kill -TERM "$p"
check "s0 gone within 15 s of SIGTERM during a walk" wait_gone "$p"
ms=$((($(date +%s%N) - t0) / 1000000))
wait "$wbg"
check "s0 stopped cleanly during a walk ($ms ms)" \
	test "$(tail -5 "$D/s0.log" | grep -c "stopped cleanly")" -eq 1
grep -h "walk stopped after\|s0: scrub:" "$D/s0.log" | tail -2 | sed 's/^/     /'
kill -CONT "$(spid 2)"
"$BD/strata-server" --config "$D/fast.yaml" --name s0 --pid-file "$D/s0.pid" \
	--log-file "$D/s0.log" --log-level 3
check "s0 restarted" wait_up
# rb_diag OBJ: why OBJ did not read back: the get's exit code and error,
# expected and got sizes, the first differing byte with its block (4 KiB)
# and unit (64 KiB), its home's id, which servers answer, and the last log
# lines of every server that name it or a peer's reachability.
rb_diag() {
	local id
	echo "     $1: get exit $rc: $(cat "$T/err")"
	echo "     $1: expected $(stat -c %s "$T/pblob") bytes, got $(stat -c %s "$T/pback" 2>/dev/null || echo no file)"
	cmp "$T/pblob" "$T/pback" 2>&1 | awk '/differ/ {b = $5 + 0;
		printf "     first difference at byte %d: block %d, unit %d\n",
		b - 1, (b - 1) / 4096, (b - 1) / 65536; next} {print "     " $0}'
	cf --json obj stat "$1"
	id=$(echo "$out" | grep -oE '"id": "[0-9a-f:]+"' | cut -d'"' -f4)
	echo "     $1: id ${id:-unknown} ($(echo "$out" | grep -oE '"layout": "[a-z]+"'))"
	timeout 60 "$S" cluster status --dir "$D" --json 2>/dev/null |
		python3 -c 'import json,sys
for s in json.load(sys.stdin)["servers"]:
	print("     %s %s up %s late_writes_refused %s bytes_fenced %s" % (s["name"],
	      s["address"], s["up"], s["late_writes_refused"], s["bytes_fenced"]))' 2>&1
	for s in 0 1 2; do
		grep -hE "${id:-no-id}|unreachable|reachable again|marked down|walk|scrub|repair" \
			"$D/s$s.log" | tail -6 | sed "s/^/     s$s: /"
	done
}
back=0
for i in $(seq 1 6); do
	for o in pa pb; do
		[ "$o" = pb ] && ! grep -qx "$i" "$T/pb_good" && continue
		rm -f "$T/pback"
		cf obj get "@$o$i" "$T/pback"
		if [ "$rc" -eq 0 ] && cmp -s "$T/pblob" "$T/pback"; then
			back=$((back + 1))
		else
			rb_diag "@$o$i"
		fi
	done
done
check "every object reads back after repair and scrub ($back)" \
	test "$back" -eq $((6 + wgood))

echo "--- SIGTERM drains an op in flight"
# start_all [ARGS]: start s0..s2 (they daemonize), wait until they answer
# and the HA map settles (homes taken over while they stopped handed back).
start_all() {
	local s r=0
	for s in 0 1 2; do
		srv_start $s "$D/cluster.yaml" "$@" && continue
		r=1
		echo "     s$s did not start; the last lines of its log:"
		tail -n 6 "$D/s$s.log" | cut -c1-240 | sed 's/^/     | /'
	done
	[ "$r" -eq 0 ] && wait_up || return 1
	cl_settled 180 && return 0
	# not settled: what the map says (for the log)
	python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
for s in m["servers"]:
    print("     map: %s %s acting=%s" % (s["name"], s.get("state"), s.get("acting")))
print("     map: epoch", m.get("epoch"), "frozen", m.get("frozen"), m.get("alert", ""))' \
		"$T/map.json" 2>/dev/null || cat "$T/map.err" 2>/dev/null | head -n 3
	return 1
}
# term_all: SIGTERM every server, wait until they are gone.
term_all() {
	local p pids
	pids=$(cat "$D"/s*.pid)
	for p in $pids; do kill -TERM "$p"; done
	for p in $pids; do wait_gone "$p"; done
}
# term_first I: SIGTERM sI and wait until it is gone, then the others.
# The server a write is in flight on goes first: with replicated homes
# (meta_replicas 3) its write waits for its
# standbys' acknowledgements, which a standby stopped at the same moment
# no longer gives (the write then fails unacknowledged, -EHOSTDOWN:
# docs/cluster.md "Replicated homes").
term_first() {
	local p first
	first=$(cat "$D/s$1.pid")
	kill -TERM "$first"
	wait_gone "$first"
	for p in $(cat "$D"/s*.pid 2>/dev/null); do kill -TERM "$p"; done
	for p in 0 1 2; do [ -e "$D/s$p.pid" ] && wait_gone "$(cat "$D/s$p.pid")"; done
}
# wcount I: object writes server sI logged as they arrived
wcount() { grep -c "write .*: 1 blocks from" "$D/s$1.log"; }
cleanly() { cat "$D"/s*.log | grep -c "stopped cleanly"; }
# A clean stop of the idle cluster, then servers with the device model on
# (--model: a 64 MiB write to sas takes about half a second) logging each
# object write as it arrives (--log-level 3), a write of one 64 MiB block,
# SIGTERM as soon as a server logged it.  Retried (at most 3 rounds) in
# case the write was done before the signal came.
n0=$(cleanly)
term_all
check "idle servers stopped cleanly" test "$(cleanly)" -eq $((n0 + 3))
head -c $((64 << 20)) /dev/urandom >"$T/big"
inflight=0
for round in 1 2 3; do
	check "round $round: servers started with --model" start_all --model \
		--log-level 3
	cl obj create "@big$round" --block-size 64MiB --tier sas
	w0=$(cat "$D"/s*.log | grep -c "write .*: 1 blocks from")
	ws="$(wcount 0) $(wcount 1) $(wcount 2)"
	rm -f "$T/bigrc"
	( timeout 60 "$S" --cluster "$D/cluster.yaml" obj write "@big$round" 0 \
		"$T/big" >"$T/bigout" 2>&1; echo $? >"$T/bigrc" ) &
	bg=$!
	for i in $(seq 1 1000); do
		[ "$(cat "$D"/s*.log | grep -c "write .*: 1 blocks from")" -gt "$w0" ] && break
		[ -f "$T/bigrc" ] && break
		sleep 0.02
	done
	n0=$(cleanly)
	d0=$(cat "$D"/s*.log | grep -cE "draining [1-9][0-9]* requests in flight")
	h=0
	for s in 0 1 2; do
		[ "$(wcount $s)" -gt "$(echo $ws | cut -d' ' -f$((s + 1)))" ] && h=$s
	done
	term_first "$h"
	wait "$bg"
	check "round $round: servers stopped cleanly" test "$(cleanly)" -eq $((n0 + 3))
	check "round $round: pid files removed" \
		test ! -e "$D/s0.pid" -a ! -e "$D/s1.pid" -a ! -e "$D/s2.pid"
	if [ "$(cat "$D"/s*.log | grep -cE "draining [1-9][0-9]* requests in flight")" -gt "$d0" ]; then
		inflight=$round
		break
	fi
	echo "     round $round: the write was not in flight at SIGTERM"
done
check "a write was in flight at SIGTERM" test "$inflight" -gt 0
grep -h "draining [1-9]" "$D"/s*.log | sed 's/^/     /'
check "servers restarted" start_all
if [ "$inflight" -gt 0 ] && [ "$(cat "$T/bigrc")" = 0 ]; then
	ok "the write in flight at SIGTERM was answered"
	cl obj get "@big$inflight" "$T/bigback"
	check "the write drained at SIGTERM reads back after restart" \
		cmp -s "$T/big" "$T/bigback"
else
	no "the write in flight at SIGTERM was answered"
	sed 's/^/     /' "$T/bigout"
fi

echo "--- a failed RMA pull: clear error, nothing written or mapped"
# Test-build servers whose first object pull fails after the transfer
# (fault point srv.obj.pull, once per server): the write is refused with
# the point's message, the object keeps no data, the next write works.
if [ -x "$BD/strata-server-test" ]; then
	term_all
	for s in 0 1 2; do
		STRATA_FAULT=srv.obj.pull:0:1 "$BD/strata-server-test" \
			--config "$D/cluster.yaml" --name "s$s" \
			--pid-file "$D/s$s.pid" --log-file "$D/s$s.log"
	done
	check "test-build servers up" wait_up
	head -c $((1 << 20)) /dev/urandom >"$T/pf"
	cl obj create @pullfail --block-size 4096
	check "pullfail: created" test "$rc" -eq 0
	cl obj write @pullfail 0 "$T/pf"
	check "pullfail: the write is refused" test "$rc" -ne 0
	check "pullfail: message names the object and the fault" \
		grep -q "object .*fault point srv.obj.pull" "$T/err"
	sed 's/^/     /' "$T/err" | head -3
	cl obj read @pullfail 0 256 "$T/pfback"
	check "pullfail: nothing mapped (reads zeros)" \
		cmp -s "$T/pfback" <(head -c $((1 << 20)) /dev/zero)
	cl obj write @pullfail 0 "$T/pf"
	check "pullfail: the next write is served" test "$rc" -eq 0
	cl obj read @pullfail 0 256 "$T/pfback"
	check "pullfail: and reads back" cmp -s "$T/pf" "$T/pfback"
fi

echo "--- cluster down"
timeout 60 "$S" cluster down --dir "$D" >"$T/down" 2>&1
check "cluster down" grep -q "3 servers stopped" "$T/down"
# the text and the JSON form asked at once: with every server down each
# waits out their connect timeouts (about 12 s and 18 s alone, one after
# the other before)
timeout 20 "$S" cluster status --dir "$D" >"$T/st2" 2>&1 &
stpid=$!
st_json_fetch
wait "$stpid"
check "status after down: exit non-zero" test $? -ne 0
check "status after down: 0 up" grep -q "servers: 0 up, 3 down" "$T/st2"
cp "$T/st2" "$T/st"
st_json_check s0,s1,s2
check "status --json after down: every server down, no device" test $? -eq 0
check "status --json after down: exit 1" test "$(cat "$T/stj.rc")" -eq 1

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
