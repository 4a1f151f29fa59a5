# cluster_lib.sh — a 3-server loopback cluster for the integration tests
# (sourced by cluster_test.sh, idx_tomb_test.sh, rdev_fence_test.sh,
# peer_restart_test.sh and shm_cluster_test.sh).
#
# The caller sources it after 'set -u' and calls cl_init first; then
#
#   cl_init BUILD TAG BASE SPREAD
#                  set BD (BUILD made absolute), S (the CLI), T (a new
#                  temporary directory strata-TAG-test.*), D (the cluster
#                  directory, $T/cl), PORT (BASE + (pid % SPREAD) * 4),
#                  pass and fail; kill the servers (and the etcd members
#                  cluster up starts, D/etcd*.pid) and remove T on any exit
#                  (KEEP=1 keeps T and says so); after a failure, print
#                  each server's pid file and last log lines (cl_diag)
#   cl_port_note P a note when P..P+2 reach the kernel's ephemeral port
#                  range (a restart could find its port taken)
#   ok/no TEXT     count and print a pass / a failure
#   check TEXT CMD run CMD, ok or no
#   cl_need BIN... every BIN built in BD, or a failure and exit 1
#   cl_shm         NV=/dev/shm/strata-TAG-test.PID, removed on any exit with
#                  T (kept with it under KEEP=1)
#   cl_up          strata cluster up --nodes 3 in D (plus $CL_UP_ARGS),
#                  checked; when it
#                  fails, the step ends there with that one failure (and
#                  the servers' diagnostics): every later check would only
#                  time out against servers that are not there
#   cl_up_or_end TEXT FILE
#                  after a `cluster up` run by the caller with its output
#                  in FILE: ok TEXT when it said the cluster is up, else
#                  the same single failure and end of the step
#   cl_fast SECS   $D/fast.yaml: the cluster file with SECS s call timeouts
#   cl_restart_fast TEXT
#                  cl_fast 4, then stop every server and start it again on
#                  fast.yaml with info logging; checked as TEXT, then the
#                  HA map settles (cl_settled 180, checked)
#   cl_freeze_s2   SIGSTOP server s2 and wait (at most 10 s) until s0 and s1
#                  log it unreachable; checked
#   cl/cf ARGS...  the CLI against $D/cluster.yaml / $D/fast.yaml; sets rc
#                  and out (stderr in $T/err)
#   alone I ARGS...
#                  the CLI against $D/cluster.yaml with its requests to
#                  server sI alone (the two others skipped:
#                  STRATA_TEST_SKIP_SERVERS); sets rc and out
#   poll SECS CMD...
#                  until CMD succeeds, at most SECS s (then CMD once
#                  more, its status returned)
#   srv_start I FILE [ARGS...]
#                  start server sI with cluster file FILE (it daemonizes)
#   spid I         pid of server sI
#   srv_stop I     SIGTERM to sI and wait until it is gone; a failure if it
#                  had no pid file or stays
#   wait_gone PID  until the process is gone (at most 20 s)
#   cl_ut NAME ARGS...
#                  one ut_main run (ARGS: its suites) against the cluster
#                  file $D/cluster.yaml, checked as NAME: it ran, and every
#                  test passed (the failures printed otherwise)
#   cl_settled SECS
#                  (0 at once without etcd in $D/cluster.yaml)
#                  until the HA map (asked through $D/cluster.yaml) has
#                  every server ONLINE and serving its own home, at most
#                  SECS s; 0 then, else 1.  A server that was stopped or
#                  cut off long enough to be declared FAILED comes back
#                  through the analyzer (and, with its home taken over,
#                  runs again from its start for the handback:
#                  docs/cluster.md "A home back without a restart")
#   wait_up        until every server answers (at most ~20 s), asked through
#                  the cluster file $UPCONF if the caller set it, else
#                  through --dir $D

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else no "$n"; fi; }

# After a failure: each server's pid file and the last lines of its log,
# printed after the summary line; for a server still running, where each
# of its threads is (gdb, innermost function first), so that a hang found
# by a loaded run says where; for one whose process is gone, the kernel's
# last crash lines (dmesg).  The lines that begin "diag: " (per server: its
# state, its log's last line, the kernel's words) are also shown by
# tests/run-tests.sh in its summary of failed steps, which a CI log's
# tail keeps; "diag-log:" and "diag-thread:" lines stay in the step's log.
cl_diag() {
	local f n p
	for f in "$D"/s*.log; do
		[ -f "$f" ] || continue
		n=$(basename "$f" .log)
		p=$(cat "$D/$n.pid" 2>/dev/null)
		if [ -z "$p" ]; then
			echo "diag: $n: no pid file"
		elif kill -0 "$p" 2>/dev/null; then
			echo "diag: $n: pid $p running"
		else
			# a pid file without its process: it died without a
			# clean stop (the kernel names a crash's thread, not
			# the process)
			echo "diag: $n: pid $p GONE without a clean stop (killed, or crashed)"
			dmesg 2>/dev/null | grep -E "strata.*(segfault|trap|error)" |
				tail -n 2 | cut -c1-180 | sed "s/^/diag: $n: kernel: /"
		fi
		tail -n 1 "$f" | cut -c1-200 | sed "s/^/diag: $n: last log line: /"
		tail -n 6 "$f" | cut -c1-200 | sed "s/^/diag-log: $n: /"
		[ -n "$p" ] && kill -0 "$p" 2>/dev/null || continue
		command -v gdb >/dev/null || continue
		timeout 60 gdb -batch -p "$p" -ex "thread apply all bt 10" \
			2>/dev/null | awk -v n="$n" '
			/^Thread / { if (l != "") print l; l = "diag-thread: " n " " $2 ":"; next }
			/^#[0-9]/ { fn = ($2 ~ /^0x/) ? $4 : $2
				    if (fn !~ /^(__|start_thread|clone)/)
					    l = l " " fn }
			END { if (l != "") print l }' | cut -c1-200 | head -40
	done
}

cl_cleanup() {
	local f
	[ "${fail:-0}" -gt 0 ] && cl_diag
	for f in "$D"/s*.pid "$D"/etcd*.pid; do
		[ -f "$f" ] || continue
		kill -CONT "$(cat "$f")" 2>/dev/null
		kill -9 "$(cat "$f")" 2>/dev/null
	done
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
	[ -z "${NV:-}" ] && return
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $NV"; else rm -rf "$NV"; fi
}

cl_init() {
	BD=$(cd "$1" 2>/dev/null && pwd)
	S=$BD/strata
	T=$(mktemp -d "${TMPDIR:-/tmp}/strata-$2-test.XXXXXX")
	D=$T/cl
	CL_NAME=$2
	PORT=$(($3 + ($$ % $4) * 4))
	cl_port_note "$PORT"
	pass=0
	fail=0
	trap cl_cleanup EXIT
	trap 'exit 1' INT TERM
}

# Fixed server ports must stay below the kernel's ephemeral range: a port
# in it can be taken by any outgoing connection (the servers' own calls to
# each other included) between a server's stop and its restart, or before
# its first start.  Say so when PORT+2 is in it.
cl_port_note() {
	local lo
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	[ -n "$lo" ] && [ $(($1 + 2)) -ge "$lo" ] &&
		echo "note: base port $1 is in the kernel's ephemeral range (from $lo)"
	return 0
}

cl_shm() {
	NV=/dev/shm/strata-$CL_NAME-test.$$
}

cl_need() {
	local x
	for x in "$@"; do
		[ -x "$BD/$x" ] || { no "$x built"; echo "$pass passed, $fail failed"; exit 1; }
	done
}

# cluster up waits on the servers' progress (at most 600 s in all, less
# when a server dies or stops making progress): the bound here is above it.
CL_UP_TIMEOUT=660

cl_up() {
	# shellcheck disable=SC2086 # CL_UP_ARGS: extra words, e.g. --no-etcd
	timeout "$CL_UP_TIMEOUT" "$S" cluster up --nodes 3 --dir "$D" \
		--base-port "$PORT" ${CL_UP_ARGS:-} >"$T/up" 2>&1
	echo "rc $?" >>"$T/up"
	cl_up_or_end "cluster up" "$T/up"
}

cl_up_or_end() {
	if grep -q "cluster of [0-9]* servers up" "$2"; then
		ok "$1"
		return 0
	fi
	no "$1: the step stops here (nothing else can be checked)"
	sed 's/^/     up: /' "$2" | tail -12
	echo "$pass passed, $fail failed"
	exit 1
}

cl_fast() {
	sed "s/call_timeout: .*/call_timeout: $1s/" "$D/cluster.yaml" >"$D/fast.yaml"
}

cl_restart_fast() {
	local s p
	cl_fast 4
	for s in 0 1 2; do srv_stop $s; done
	for s in 0 1 2; do srv_start $s "$D/fast.yaml" --log-level 3; done
	check "$1" wait_up
	# stopped one after the other, the first ones' homes were taken
	# over by the last: handed back as they settle
	check "the map settles after the restart (at most 180 s)" cl_settled 180
}

# How many of s0 and s1 have logged s2 unreachable.
s2_noticed() {
	grep -c "server s2 unreachable" "$D/s0.log" "$D/s1.log" | grep -c ':[1-9]'
}

cl_settled() {
	local end=$((SECONDS + $1))

	grep -q "etcd:" "$D/cluster.yaml" || return 0 # no HA map
	while :; do
		timeout 60 "$S" --cluster "$D/cluster.yaml" ha map \
			>"$T/map.json" 2>"$T/map.err" &&
			python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
sys.exit(not all(s.get("state") == "ONLINE" and not s.get("acting")
                 for s in m["servers"]))' "$T/map.json" && return 0
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 1
	done
}

# wait_ready: wait_up, then (a cluster with a map: replicated homes by
# default) until the map settles, every home served by its own server:
# after a restart of every server, a home the analyzer moved while its
# server was stopped is handed back at that server's start, and a test
# that checks one server's own path (zero-copy counters, its log) must
# not run meanwhile.
wait_ready() { wait_up && cl_settled 240; }

cl_freeze_s2() {
	local i
	kill -STOP "$(spid 2)"
	for i in $(seq 1 100); do
		[ "$(s2_noticed)" -eq 2 ] && break
		sleep 0.1
	done
	check "s0 and s1 noticed s2 is unreachable" test "$(s2_noticed)" -eq 2
}

cl() {
	out=$(timeout 60 "$S" --cluster "$D/cluster.yaml" "$@" 2>"$T/err")
	rc=$?
}
cf() {
	out=$(timeout 60 "$S" --cluster "$D/fast.yaml" "$@" 2>"$T/err")
	rc=$?
}

alone() {
	local sk
	sk=$(echo 0 1 2 | tr ' ' '\n' | grep -v "^$1$" | sed 's/^/s/' | paste -sd,)
	shift
	out=$(STRATA_TEST_SKIP_SERVERS=$sk timeout 60 "$S" --cluster "$D/cluster.yaml" "$@" 2>"$T/err")
	rc=$?
}
poll() {
	local end=$((SECONDS + $1))
	shift
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" && return 0
		sleep 0.5
	done
	"$@"
}

srv_start() {
	local i=$1 f=$2
	shift 2
	"$BD/strata-server" --config "$f" --name "s$i" \
		--pid-file "$D/s$i.pid" --log-file "$D/s$i.log" "$@"
}

spid() { cat "$D/s$1.pid" 2>/dev/null; }

# Stop server sI (SIGTERM) and wait until it is gone; a failure when it
# has no pid file (it was not running) or does not go within 20 s.
srv_stop() {
	local p
	p=$(spid "$1")
	if [ -z "$p" ]; then
		no "s$1 was running before its stop (no pid file)"
		return 1
	fi
	kill "$p" 2>/dev/null
	wait_gone "$p" || { no "s$1 gone within 60 s of SIGTERM"; return 1; }
}

wait_gone() {
	local i
	for i in $(seq 1 600); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}

# wait_up: until `cluster status` answers from every server, at most
# CL_WAIT_UP_SECS (default 180 s: a server's start on a loaded machine,
# load 80 on 2 cores, took over 20 s in CI).  On a timeout the last
# answer is shown.
CL_WAIT_UP_SECS=${CL_WAIT_UP_SECS:-180}
wait_up() {
	local end=$((SECONDS + CL_WAIT_UP_SECS)) where
	if [ -n "${UPCONF:-}" ]; then where="--cluster $UPCONF"; else where="--dir $D"; fi
	while :; do
		# shellcheck disable=SC2086
		timeout 30 "$S" cluster status $where >"$T/wait_up" 2>&1 && return 0
		[ "$SECONDS" -lt "$end" ] || break
		sleep 0.3
	done
	echo "     wait_up: no full answer within ${CL_WAIT_UP_SECS} s; last:"
	tail -n 4 "$T/wait_up" | cut -c1-240 | sed 's/^/     | /'
	return 1
}

cl_ut() {
	local name=$1 line
	shift
	# (bounded for a hang, not for speed: on a loaded machine, load 80 on
	# 2 cores, a run may take minutes; what it printed last is shown when
	# it ended without its summary)
	# The suites' client waits up to 120 s for each call (the cluster's
	# 20 s, made for the fault tests, is not a bound a 64 MiB block
	# write keeps on a machine whose disk the other steps saturate)
	sed "s/call_timeout: .*/call_timeout: 120s/" "$D/cluster.yaml" \
		>"$D/ut.yaml"
	STRATA_UT_CLUSTER=$D/ut.yaml timeout 600 "$BD/ut_main" "$@" \
		>"$T/ut" 2>&1
	echo "rc $?" >>"$T/ut"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/ut" | tail -1)
	echo "     ut_main $*: $line"
	check "$name ran" test -n "$line"
	[ -n "$line" ] || tail -n 8 "$T/ut" | cut -c1-240 | sed 's/^/     ut: /'
	check "$name pass against the cluster" \
		test "$(echo "$line" | awk '{print ($1 > 0 && $3 == 0) ? 1 : 0}')" = 1
	[ "$(echo "$line" | awk '{print $3}')" = 0 ] ||
		grep -E "FAILED|^    [0-9]+\. |^idx_fill|error" "$T/ut" | head -30
	grep -o "skipped in cluster mode ([^)]*)" "$T/ut" | sed 's/^/     /'
}
