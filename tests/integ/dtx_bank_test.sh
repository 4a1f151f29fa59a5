#!/usr/bin/env bash
# dtx_bank_test.sh BUILD [SECONDS [netns]] — bank transfers in dtxs on a
# 3-server cluster while servers and clients are SIGKILLed and restarted at
# random (dtm/README.md):
#
#   3 client processes (dtx_crash run, 4 threads each, 16 accounts each,
#   every transfer = 3 participants: accounts index, accounts object,
#   transfer log) run for SECONDS (default 45); every 2-4 s one random
#   server or client process is SIGKILLed, and restarted 1-3 s later
#   (servers as strata-server-test, clients as a new dtx_crash run that
#   first waits until nothing is in doubt); at the end the clients are
#   killed, every server is up, nothing may stay in doubt past 30 s, and
#   dtx_crash check must find both totals exact, no account torn, every
#   STABLE transfer in the log and no failed transfer in it.
#
# netns: the same on "hosts" made of network namespaces (tests/integ/
# netns_lib.sh): servers s0..s2 in namespaces of their own (198.51.100.1-3),
# the clients and the CLI in a fourth (198.51.100.4), all linked by veths to
# a bridge; the random events are then a server SIGKILL, a client SIGKILL
# or a server's link cut (its veth down on the bridge side) for 1-3 s.
# Where namespaces cannot be made (no root, no `ip`) it fails: 1 failed.
# Bounded: SECONDS of chaos (at most 120), every wait bounded; servers and
# clients killed (and namespaces removed) on any exit.  Ends with
# "N passed, N failed".
set -u

B=${1:-build}
SECS=${2:-45}
[ "$SECS" -gt 120 ] && SECS=120
NETNS=0
[ "${3:-}" = netns ] && NETNS=1
BD=$(cd "$B" 2>/dev/null && pwd)
S=$BD/strata
X=$BD/dtx_crash
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-dtx-bank.XXXXXX")
D=$T/cl
F=$D/fast.yaml
PORT=$((10000 + ($$ % 500) * 4))   # 10000-11999: tests/steps.list, group bank
NCLI=3
PER=16
NACC=$((NCLI * PER))
pass=0
fail=0
declare -a CPID
P=sb$$                    # namespace names (netns): ${P}hub ${P}s0..2 ${P}c
. "$(dirname "$0")/netns_lib.sh"

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else no "$n"; fi; }

spid() { cat "$D/s$1.pid" 2>/dev/null; }

cleanup() {
	local f p
	for p in "${CPID[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null; done
	for f in "$D"/s*.pid "$D"/etcd*.pid; do
		[ -f "$f" ] || continue
		kill -9 "$(cat "$f")" 2>/dev/null
	done
	nl_teardown
	if [ "$fail" -gt 0 ] || [ "${KEEP:-0}" = 1 ]; then
		echo "kept $T (servers' logs and data, for the failure)"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for x in strata strata-server-test dtx_crash; do
	[ -x "$BD/$x" ] || { no "$x built"; echo "$pass passed, $fail failed"; exit 1; }
done

wait_gone() {
	local i
	for i in $(seq 1 200); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}
# inc CMD...: run CMD where the clients are (the client namespace).
inc() { if [ "$NETNS" -eq 1 ]; then nsx c "$@"; else "$@"; fi; }
start() {
	rm -f "$D/s$1.pid"
	if [ "$NETNS" -eq 1 ]; then
		nsx "s$1" "$BD/strata-server-test" --config "$F" --name "s$1" \
			--pid-file "$D/s$1.pid" --log-file "$D/s$1.log" --log-level 3
	else
		"$BD/strata-server-test" --config "$F" --name "s$1" \
			--pid-file "$D/s$1.pid" --log-file "$D/s$1.log" --log-level 3
	fi
}
kill9() { local p; p=$(spid "$1"); [ -n "$p" ] && kill -9 "$p" 2>/dev/null && wait_gone "$p"; }
wait_up() {
	local i
	for i in $(seq 1 60); do
		inc timeout 20 "$S" --cluster "$F" dtx ls >"$T/ls" 2>&1 &&
			! grep -q DOWN "$T/ls" && return 0
		sleep 0.5
	done
	return 1
}
seed=100
client() { # client I: a new run over accounts I*PER..
	seed=$((seed + 1))
	if [ "$NETNS" -eq 1 ]; then # ip netns exec execs: $! is the client
		(exec ip netns exec "${P}c" "$X" run "$F" "$T/ack$1" "$seed" 0 \
			$PER $(($1 * PER)) >>"$T/client$1.log" 2>&1) &
	else
		(exec "$X" run "$F" "$T/ack$1" "$seed" 0 $PER $(($1 * PER)) \
			>>"$T/client$1.log" 2>&1) &
	fi
	CPID[$1]=$!
}

if [ "$NETNS" -eq 1 ]; then
	nl_hub
	hub_rc=$?
	if [ "$hub_rc" -eq 1 ]; then # no partition check can run: a failure
		no "network namespaces cannot be made here ($nl_why); make deps installs iproute2, the step needs root"
		echo "$pass passed, $fail failed"
		exit 1
	fi
	echo "--- network: hub bridge, servers s0..s2 and the clients' host c (198.51.100.0/24)"
	net_ok=1
	[ "$hub_rc" -eq 0 ] || net_ok=0
	for s in 0 1 2; do host "s$s" "198.51.100.$((s + 1))" || net_ok=0; done
	host c 198.51.100.4 || net_ok=0
	check "namespaces and veth links made" test "$net_ok" -eq 1
	[ "$net_ok" -eq 1 ] || { echo "$pass passed, $fail failed"; exit 1; }
	echo "--- cluster of 3 in namespaces, $NCLI clients, $SECS s of random SIGKILLs and link cuts"
else
	echo "--- cluster of 3, $NCLI clients, $SECS s of random SIGKILLs"
fi
# In namespaces the servers could not reach the etcd cluster up starts on
# the host's loopback: that run is without HA (--no-etcd); what it checks
# is dtx under kills and cuts (HA's partition behaviour: ha_test.sh).
noetcd=
[ "$NETNS" -eq 1 ] && noetcd=--no-etcd
timeout 660 "$S" cluster up --nodes 3 --dir "$D" --base-port "$PORT" \
	$noetcd >"$T/up" 2>&1
# a failed cluster up ends the step with that one failure (no cascade)
check "cluster up" grep -q "cluster of 3 servers up" "$T/up" ||
	{ tail -12 "$T/up"; echo "$pass passed, $fail failed"; exit 1; }
for s in 0 1 2; do kill9 $s; done
if [ "$NETNS" -eq 1 ]; then
	# the stores cluster up made, served from the namespaces: server sI
	# at 198.51.100.(I+1):21000; short connects (a cut costs 1 s each)
	awk '/^  - name: s/ { n = substr($3, 2) }
	     /^    address:/ { print "    address: 198.51.100." n + 1; next }
	     /^    port:/ { print "    port: 21000"; next }
	     /^  connect_timeout:/ { print "  connect_timeout: 1000ms"; next }
	     /^  call_timeout:/ { print "  call_timeout: 4s"; next }
	     { print }' "$D/cluster.yaml" >"$F"
else
	sed 's/call_timeout: .*/call_timeout: 4s/' "$D/cluster.yaml" >"$F"
fi
for s in 0 1 2; do start $s; done
check "servers up" wait_up
inc timeout 120 "$X" init "$F" $NACC >"$T/init" 2>&1
check "init: $NACC accounts" test $? -eq 0
for c in $(seq 0 $((NCLI - 1))); do client "$c"; done

end=$(($(date +%s) + SECS))
kills_s=0
kills_c=0
cuts=0
RANDOM=$$
while [ "$(date +%s)" -lt "$end" ]; do
	sleep $((2 + RANDOM % 3))
	ev=$((RANDOM % (2 + NETNS)))
	if [ "$ev" -eq 2 ]; then
		s=$((RANDOM % 3))
		nl_cut "s$s"
		cuts=$((cuts + 1))
		sleep $((1 + RANDOM % 3))
		nl_mend "s$s"
	elif [ "$ev" -eq 0 ]; then
		s=$((RANDOM % 3))
		kill9 "$s"
		kills_s=$((kills_s + 1))
		sleep $((1 + RANDOM % 3))
		start "$s"
	else
		c=$((RANDOM % NCLI))
		kill -9 "${CPID[$c]}" 2>/dev/null
		wait "${CPID[$c]}" 2>/dev/null
		kills_c=$((kills_c + 1))
		sleep $((1 + RANDOM % 3))
		client "$c"
	fi
done
echo "  $kills_s server kills, $kills_c client kills, $cuts link cuts"
for c in $(seq 0 $((NCLI - 1))); do kill -9 "${CPID[$c]}" 2>/dev/null; wait "${CPID[$c]}" 2>/dev/null; done
for s in 0 1 2; do kill -0 "$(spid $s)" 2>/dev/null || start "$s"; done
check "every server up at the end" wait_up
ok=1
# termination, and restarted servers' replays: a dtx whose coordinator
# was killed is ended by its participants' recovery timers, slower on a
# loaded machine (at most 240 s; a dtx stuck in doubt stays so forever)
end=$((SECONDS + 240))
while [ "$SECONDS" -lt "$end" ]; do
	if inc timeout 20 "$S" --cluster "$F" dtx ls >"$T/ls" 2>&1 &&
	   grep -q "in doubt: 0, servers down: 0" "$T/ls"; then ok=0; break; fi
	sleep 0.5
done
check "nothing in doubt within 240 s" test $ok -eq 0
[ $ok -eq 0 ] || sed 's/^/     /' "$T/ls" | head -n 20
check "clients never saw a torn account" \
	test "$(cat "$T"/client*.log 2>/dev/null | grep -c torn)" -eq 0
cat "$T"/ack? >"$T/ack" 2>/dev/null
echo "  transfers: $(grep -vc ' [FU]' "$T/ack") STABLE, $(grep -c ' F' "$T/ack") failed, $(grep -c ' U' "$T/ack") unknown"
check "some transfers STABLE" test "$(grep -vc ' [FU]' "$T/ack")" -gt 20
inc timeout 120 "$X" check "$F" "$T/ack" $NACC >"$T/check" 2>&1
rc=$?
cat "$T/check"
check "totals exact, no half transfer, every STABLE transfer present" test $rc -eq 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
