#!/usr/bin/env bash
# netns_test.sh BUILD — a 6-server cluster on 6 "hosts" made of network
# namespaces, and a client on a seventh (docs/cluster.md, "Multi-host
# tests"):
#
#   hub namespace: bridge br0 with one veth per host (h0..h5, hc);
#   server namespaces s0..s5: eth0 = 198.51.100.1..6, strata-server on :21000;
#   client namespace c: eth0 = 198.51.100.7, netns_client (Clovis API).
#
# Only addresses of 198.51.100.0/24 are used, only inside namespaces this
# test creates; nothing is routed out of them.
#
#   1. servers up, all 6 seen by `strata cluster status` from the client;
#   2. a client with a wrong secret is refused (-EACCES, clear message);
#   3. healthy: pdclust 4+2 objects and index records (R = 3), read back;
#   4. one server cut off (its veth down) while a writer runs: every op
#      on an object whose home server is another one succeeds (its units
#      on the cut server are read or written degraded: phase 2a places a
#      4+2 group on 6 servers), ops on objects homed on the cut one fail
#      with a transport error naming it within the deadline (at least one
#      of each), index ops go on through the live replicas; the link
#      comes back;
#   5. SIGKILL of two servers while a writer runs, restart; then SIGKILL of
#      all six and restart;
#   6. every object and record acknowledged STABLE in 3-5 reads back
#      exactly (journals written by the clients as acknowledgements came).
#
# Where network namespaces cannot be made (no root, no `ip`: make deps
# installs iproute2) nothing can be checked: 1 failed.  Every
# wait is bounded; namespaces, links and processes are removed on exit.
# Ends with "N passed, N failed".  KEEP=1 keeps the data directory (logs).
set -u

B=${1:-build}
BD=$(cd "$B" 2>/dev/null && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-netns-test.XXXXXX")
P=sn$$                    # namespace names: ${P}hub ${P}s0..5 ${P}c
NS=6                      # servers
NIDX=6                    # indices @nsidx0..5
CALL_MS=3000
CONN_MS=1000
# A failing op: the call timeout, a connect attempt, and slack for 2 cores.
DEADLINE_MS=$((CALL_MS + CONN_MS + 3000))
VICTIM=2                  # the server cut off in step 4
pass=0
fail=0
bgpids=""
. "$(dirname "$0")/netns_lib.sh"

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else no "$n"; fi; }

spid() { cat "$T/s$1.pid" 2>/dev/null; }

cleanup() {
	local p i n
	for p in $bgpids; do kill -9 "$p" 2>/dev/null; done
	for i in $(seq 0 $((NS - 1))); do
		p=$(spid "$i")
		[ -n "$p" ] && kill -9 "$p" 2>/dev/null
	done
	nl_teardown # and anything else still running inside our namespaces
	if [ -n "${KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

for x in strata strata-server netns_client; do
	[ -x "$BD/$x" ] || { no "$x built"; finish; }
done

nl_hub
hub_rc=$?
if [ "$hub_rc" -eq 1 ]; then # no partition check can run: a failure
	no "network namespaces cannot be made here ($nl_why); make deps installs iproute2, the step needs root"
	finish
fi

echo "--- network: hub bridge, 6 server hosts, 1 client host (198.51.100.0/24)"
net_ok=1
[ "$hub_rc" -eq 0 ] || net_ok=0
for i in $(seq 0 $((NS - 1))); do
	host "s$i" "198.51.100.$((i + 1))" || net_ok=0
done
host c 198.51.100.7 || net_ok=0
check "namespaces and veth links made" test "$net_ok" -eq 1
[ "$net_ok" -eq 1 ] || finish

# ---------------------------------------------------------------- cluster
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/secret"
chmod 600 "$T/secret"
{
	echo "cluster:"
	echo "  name: netns"
	echo "  secret_file: secret"
	echo "  index_replicas: 3"
	echo "  connect_timeout: ${CONN_MS}ms"
	echo "  call_timeout: ${CALL_MS}ms"
	echo "device_size: 8MiB"
	echo "servers:"
	for i in $(seq 0 $((NS - 1))); do
		echo "  - name: s$i"
		echo "    address: 198.51.100.$((i + 1))"
		echo "    port: 21000"
		echo "    data_dir: s$i"
		echo "    devices:"
		for d in 1 2 3 4 5 6; do echo "      - { tier: flash }"; done
	done
} >"$T/cluster.yaml"
# The same cluster, and a secret that is not its own.
sed -e 's/^  secret_file: secret$/  secret: "not-the-secret-of-this-cluster"/' \
	"$T/cluster.yaml" >"$T/wrong.yaml"

# start I: strata-server sI in its namespace (it daemonizes).
start() {
	nsx "s$1" "$BD/strata-server" --config "$T/cluster.yaml" --name "s$1" \
		--pid-file "$T/s$1.pid" --log-file "$T/s$1.log"
}

# all_up: every server answers the client (at most 40 s, 100 tries).
all_up() {
	local i end=$((SECONDS + 40))
	for i in $(seq 1 100); do
		nsx c timeout 20 "$BD/strata" --cluster "$T/cluster.yaml" \
			cluster status >"$T/status" 2>&1 && return 0
		[ "$SECONDS" -lt "$end" ] || break
		sleep 0.2
	done
	return 1
}

wait_gone() {
	local i
	for i in $(seq 1 200); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}

# client NAME ARGS...: netns_client in the client namespace (at most 150
# s); its checks are added to ours.
client() {
	local name=$1 line p f
	shift
	nsx c timeout 150 "$BD/netns_client" "$T/cluster.yaml" "$@" \
		>"$T/$name.out" 2>&1
	client_report "$name" $?
}

client_report() {
	local name=$1 rc=$2 line p f
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/$name.out" | tail -1)
	if [ -z "$line" ]; then
		no "client $name ended without a summary (rc $rc)"
		tail -5 "$T/$name.out"
		return
	fi
	p=$(echo "$line" | awk '{print $1}')
	f=$(echo "$line" | awk '{print $3}')
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	pass=$((pass + p)); fail=$((fail + f))
	echo "     client $name: $line"
	grep -E '^(FAIL|ok   \(down\))' "$T/$name.out" | head -12 | sed 's/^/       /'
}

echo "--- 6 servers, one per namespace"
for i in $(seq 0 $((NS - 1))); do start "$i"; done
if ! all_up; then
	no "all 6 servers answer the client host (198.51.100.7)"
	sed 's/^/       /' "$T/status"
	echo "     the Clovis client's own message:"
	client probe setup 1
	echo "     (nothing else can be checked without a working client)"
	finish
fi
ok "all 6 servers answer the client host (198.51.100.7)"
check "status: 6 up" grep -q "servers: 6 up, 0 down" "$T/status"
for i in $(seq 0 $((NS - 1))); do
	check "s$i serves on 198.51.100.$((i + 1)) only" \
		grep -q "serving 198.51.100.$((i + 1)):21000" "$T/s$i.log"
done

echo "--- wrong secret"
nsx c timeout 60 "$BD/netns_client" "$T/wrong.yaml" wrongsecret \
	198.51.100.1:21000 >"$T/wrong.out" 2>&1
client_report wrong $?
grep -E '^(ok|FAIL)' "$T/wrong.out" | sed 's/^/       /'

echo "--- healthy: pdclust 4+2 objects, index records (R = 3)"
client setup setup "$NIDX"
client A write A 12 "$NIDX" "$T/j.A" --deadline-ms "$DEADLINE_MS"
client A.verify verify "$T/j.A"

echo "--- s$VICTIM cut off (link down) while a writer runs"
nsx c timeout 150 "$BD/netns_client" "$T/cluster.yaml" write W 24 "$NIDX" \
	"$T/j.W" --down "s$VICTIM" --home "$VICTIM/6" --pace-ms 150 \
	--deadline-ms "$DEADLINE_MS" \
	>"$T/W.out" 2>&1 &
wpid=$!
bgpids="$bgpids $wpid"
sleep 1
ip -n "${P}hub" link set "hs$VICTIM" down
check "s$VICTIM's link is down" \
	sh -c "ip -n ${P}hub link show hs$VICTIM | grep -q 'state DOWN'"
t0=$(date +%s)
client B write B 18 "$NIDX" "$T/j.B" --down "s$VICTIM" --home "$VICTIM/6" \
	--need-both --deadline-ms "$DEADLINE_MS"
client A.cut verify "$T/j.A" --down "s$VICTIM" --home "$VICTIM/6" \
	--need-both --deadline-ms "$DEADLINE_MS"
echo "     (ops during the cut took $(( $(date +%s) - t0 )) s)"
ip -n "${P}hub" link set "hs$VICTIM" up
wait "$wpid"
client_report W $?
check "all 6 servers answer after the link is back" all_up

echo "--- after the cut: everything acknowledged so far reads back"
cat "$T/j.A" "$T/j.W" "$T/j.B" >"$T/j.cut" 2>/dev/null
client cut.verify verify "$T/j.cut"

echo "--- SIGKILL of s0 and s3 while a writer runs, restart"
nsx c timeout 150 "$BD/netns_client" "$T/cluster.yaml" write K 24 "$NIDX" \
	"$T/j.K" --down-any --pace-ms 100 --deadline-ms "$DEADLINE_MS" \
	>"$T/K.out" 2>&1 &
kpid=$!
bgpids="$bgpids $kpid"
sleep 1
for i in 0 3; do
	p=$(spid $i)
	kill -9 "$p"
	check "s$i killed (SIGKILL)" wait_gone "$p"
done
sleep 1
for i in 0 3; do start $i; done
check "s0 and s3 restarted" all_up
wait "$kpid"
client_report K $?

echo "--- SIGKILL of all six servers, restart"
for i in $(seq 0 $((NS - 1))); do kill -9 "$(spid "$i")"; done
gone=1
for i in $(seq 0 $((NS - 1))); do wait_gone "$(spid "$i")" || gone=0; done
check "all six killed" test "$gone" -eq 1
for i in $(seq 0 $((NS - 1))); do start "$i"; done
check "all six restarted" all_up

echo "--- every acknowledged object and record reads back exactly"
cat "$T/j.A" "$T/j.W" "$T/j.B" "$T/j.K" >"$T/j.all" 2>/dev/null
check "journals list acknowledged objects" \
	test "$(grep -c '^o ' "$T/j.all")" -ge 30
check "journals list acknowledged records" \
	test "$(grep -c '^r ' "$T/j.all")" -ge 40
client final.verify verify "$T/j.all"

alive=1
for i in $(seq 0 $((NS - 1))); do kill -0 "$(spid "$i")" 2>/dev/null || alive=0; done
check "no server died on its own" test "$alive" -eq 1
finish
