#!/usr/bin/env bash
# repair_test.sh BUILD — end-to-end test of redundancy and repair through the
# strata tool, on stores in a temporary directory.
#
# Store A (the default fourteen devices, 16 MiB each) holds pdclust 4+2+1
# and three-way mirror objects over the flash pool.  Two flash devices fail
# one after the other; every object must read back byte for byte after each
# failure, after 'strata repair', after 'device replace' and 'strata
# rebalance'; 'strata scrub' must then find nothing wrong.  Then units are
# damaged on disk behind the store's back (two flash device files written
# while no process has the store open): scrub must find and rebuild them,
# the data must read back exactly, and a second scrub must find nothing.
#
# Store B (made from a YAML configuration: one flash and four sas devices)
# holds a mirror object of many small units.  With one sas device failed,
# 'strata --model repair' (sas latency: milliseconds per unit) is killed
# with SIGKILL once its progress line (drawn on a pseudo-terminal) shows
# that its first batch has committed; the next repair must say it resumed,
# finish, and the data must read back exactly.  Then a second device fails
# and a repair is stopped with SIGTERM as soon as it draws its progress
# line: it must exit 1, erase that line and say so on one line, and the
# next repair must resume it.  Both wait on the repair's progress, not on a
# fixed sleep (under load a repair killed 1 s after its start had not
# committed a batch yet, so it did not resume).
#
# Ends with "N passed, N failed"; exits non-zero if any check failed.  Every
# strata run and every wait is bounded; the whole script takes about 20 s.
set -u

B=${1:-build}
S="$(cd "$B" 2>/dev/null && pwd)/strata"
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-repair-test.XXXXXX")
A=$T/a
K=$T/k
LIMIT=60
pass=0
fail=0

# Kill a repair still running, remove both stores with their devices (NVRAM
# included) and the temp dir.
cleanup() {
	local d f
	for f in "$T"/*.pid; do
		[ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	for d in "$A" "$K"; do
		[ -d "$d" ] && timeout "$LIMIT" "$S" --data "$d" -q destroy --yes \
			2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }

# st DIR ARGS...: run strata on store DIR; sets rc, out (stdout), err.
st() {
	local dir=$1
	shift
	timeout "$LIMIT" "$S" --data "$dir" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

# good NAME DIR ARGS...: must exit 0 with nothing on stderr.
good() {
	local name=$1
	shift
	st "$@"
	if [ "$rc" -eq 0 ] && [ ! -s "$T/err" ]; then
		ok "$name"
		return 0
	fi
	no "$name: rc $rc, stderr: $err"
	return 1
}

# check NAME CONDITION...: count a test condition.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else no "$name"; fi
}

# Evaluate a Python expression over the JSON document in $T/out as "d".
jget() {
	python3 -c 'import json,sys; d=json.load(sys.stdin); print('"$1"')' \
		<"$T/out" 2>/dev/null
}

# jtrue NAME EXPR: a check that EXPR over the last JSON output is True.
jtrue() {
	local got
	got=$(jget "$2")
	if [ "$got" = True ]; then ok "$1"; else no "$1 ($2 on $out)"; fi
}

# verify DIR WHEN ID...: every object must read back equal to its source
# file $T/src.NAME (NAME: the id without '@'); one check per object.
verify() {
	local dir=$1 when=$2 id name
	shift 2
	for id in "$@"; do
		name=${id#@}
		rm -f "$T/got.$name"
		st "$dir" -q obj get "$id" "$T/got.$name"
		if [ "$rc" -eq 0 ] && cmp -s "$T/src.$name" "$T/got.$name"; then
			ok "$when: $id reads back exactly"
		else
			no "$when: $id reads back exactly (rc $rc: $err)"
		fi
	done
}

# state DIR DEV: the state 'strata devices' shows for device DEV (a name).
state() {
	st "$1" --json devices
	jget '[x["state"] for x in d if x["name"] == "'"$2"'"][0]'
}

# damage FILE...: write 64 random bytes into every 64 KiB of the data area
# (past the 4 KiB superblock) of each device file: every 64 KiB unit there
# and one in sixteen 4 KiB units is hit.
damage() {
	python3 - "$@" <<'EOF'
import os, sys
for path in sys.argv[1:]:
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        off = 4096 + 1000
        while off + 64 <= size:
            f.seek(off)
            f.write(os.urandom(64))
            off += 65536
        f.flush()
        os.fsync(f.fileno())
EOF
}

# ptyrun PIDFILE TTYLOG CMD...: run CMD with its stderr on a
# pseudo-terminal (so that a walk draws its progress line there), stdin
# from /dev/null and stdout as given; write its pid to PIDFILE, copy what
# it draws to TTYLOG, and exit with its status (128 + N after signal N).
ptyrun() {
	python3 - "$@" <<'EOF'
import os, pty, subprocess, sys
pidf, log, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
m, s = pty.openpty()
p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=s)
os.close(s)
with open(pidf + ".tmp", "w") as f:
    f.write("%d\n" % p.pid)
os.rename(pidf + ".tmp", pidf)
with open(log, "wb", buffering=0) as f:
    while True:
        try:
            b = os.read(m, 4096)
        except OSError:
            break
        if not b:
            break
        f.write(b)
rc = p.wait()
sys.exit(128 - rc if rc < 0 else rc)
EOF
}

# wait_file FILE SECS: until FILE exists (at most SECS s).
wait_file() {
	local end=$((SECONDS + $2))
	while [ ! -s "$1" ] && [ "$SECONDS" -lt "$end" ]; do sleep 0.05; done
	[ -s "$1" ]
}

# units_drawn TTYLOG: the units done of the last progress line drawn
# ("repair [###...]  NN% DONE / TOTAL units  S s"), empty before the first.
units_drawn() {
	tr '\r' '\n' <"$1" | grep -oE '[0-9]+ / [0-9]+ units' | tail -1 |
		cut -d' ' -f1
}

# wait_units TTYLOG PID N SECS: until the progress line shows at least N
# units done (0: success) or PID is gone or SECS s have passed (1).
wait_units() {
	local end=$((SECONDS + $4)) n
	while [ "$SECONDS" -lt "$end" ] && kill -0 "$2" 2>/dev/null; do
		n=$(units_drawn "$1")
		[ "${n:-0}" -ge "$3" ] && return 0
		sleep 0.05
	done
	return 1
}

# tty_err TTYLOG: what a terminal shows of stderr once the walk has erased
# its progress line ("\r\e[K"): the lines after the last erase.
tty_err() {
	python3 - "$1" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read().decode(errors="replace")
sys.stdout.write(b.rsplit("\r\x1b[K", 1)[-1].replace("\r\n", "\n"))
EOF
}

[ -x "$S" ] || { no "strata binary at $S"; echo "$pass passed, $fail failed"; exit 1; }
command -v python3 >/dev/null || { no "python3 is needed"; echo "$pass passed, $fail failed"; exit 1; }

echo "--- store A: objects over the flash pool"
head -c $((3 * 1048576 + 123)) /dev/urandom >"$T/src.pd"
head -c $((1048576 + 7)) /dev/urandom >"$T/src.pd16"
head -c $((2 * 1048576)) /dev/urandom >"$T/src.mir"
head -c 40960 /dev/urandom >"$T/src.mw"
OBJS="@pd @pd16 @mir @mw"
good "put pdclust 4+2+1 (makes the store)" "$A" --dev-size 16M obj put @pd \
	"$T/src.pd" --layout pdclust --pool flash --data 4 --parity 2 --spare 1
good "put pdclust 4+2+1 with 16 KiB units" "$A" obj put @pd16 \
	"$T/src.pd16" --layout pdclust --pool flash --data 4 --parity 2 \
	--spare 1 --unit 16K
good "put mirror of 3 copies" "$A" obj put @mir "$T/src.mir" --layout mirror \
	--pool flash --copies 3
good "create mirror of 3 copies, 4 KiB units" "$A" obj create @mw \
	--layout mirror --pool flash --copies 3 --spare 1 --unit 4K
good "obj write into the mirror" "$A" obj write @mw 0 "$T/src.mw"
good "stat pdclust" "$A" --json obj stat @pd
jtrue "stat shows pdclust 4+2+1 on flash" \
	'(d["layout"], d["data_units"], d["parity_units"], d["spare_units"], d["pool"]) == ("pdclust", 4, 2, 1, "flash")'
good "stat mirror" "$A" --json obj stat @mw
jtrue "stat shows mirror of 3 with 4 KiB units" \
	'(d["layout"], d["copies"], d["spare_units"], d["unit_size"]) == ("mirror", 3, 1, 4096)'
verify "$A" "healthy" $OBJS

echo "--- store A: two failures"
good "device fail flash3" "$A" device fail flash3
check "flash3 is failed" test "$(state "$A" flash3)" = failed
verify "$A" "flash3 failed" $OBJS
good "device fail by index (6 = flash5)" "$A" device fail 6
check "flash5 is failed" test "$(state "$A" flash5)" = failed
verify "$A" "flash3, flash5 failed" $OBJS
good "tiers with two failed" "$A" --json tiers
jtrue "tiers: 2 of 8 flash offline" \
	'[(t["devices"], t["offline"]) for t in d if t["tier"] == "flash"] == [(8, 2)]'

echo "--- store A: repair"
good "repair" "$A" --json repair
jtrue "repair completed, nothing unrepairable" \
	'd["complete"] and d["unrepairable"] == 0 and not d["resumed"]'
jtrue "repair rebuilt units" 'd["rebuilt"] > 0 and d["units"] > 0 and d["bytes"] > 0'
check "flash3 is repaired" test "$(state "$A" flash3)" = repaired
check "flash5 is repaired" test "$(state "$A" flash5)" = repaired
verify "$A" "repaired" $OBJS
good "repair again finds nothing" "$A" --json repair
jtrue "second repair rebuilt nothing" 'd["rebuilt"] == 0 and d["complete"]'

echo "--- store A: replace and rebalance"
good "device replace flash3" "$A" device replace flash3 "$T/new-flash3.dev"
check "replacement file made" test -s "$T/new-flash3.dev"
check "replacement is online" test "$(state "$A" new-flash3)" = online
jtrue "replacement waits for rebalance" \
	'[x["rebalance"] for x in d if x["index"] == 4] == [True]'
verify "$A" "replaced" $OBJS
good "rebalance" "$A" --json rebalance
jtrue "rebalance moved units back" 'd["moved"] > 0 and d["complete"]'
good "devices after rebalance" "$A" --json devices
jtrue "replacement holds data, rebalance done" \
	'[(x["rebalance"], x["free_bytes"] < x["size_bytes"]) for x in d if x["index"] == 4] == [(False, True)]'
verify "$A" "rebalanced" $OBJS
good "scrub" "$A" --json scrub
jtrue "scrub finds nothing corrupt" \
	'd["corrupt"] == 0 and d["unrepairable"] == 0 and d["units"] > 0'

echo "--- store A: damage on disk, then scrub"
damage "$A/devices/flash0.dev" "$A/devices/flash7.dev"
good "scrub of damaged store" "$A" --json scrub
jtrue "scrub found corrupt units" 'd["corrupt"] > 0'
jtrue "scrub rebuilt them" 'd["rebuilt"] > 0 and d["unrepairable"] == 0'
verify "$A" "scrubbed" $OBJS
good "second scrub" "$A" --json scrub
jtrue "second scrub finds nothing corrupt" 'd["corrupt"] == 0 and d["rebuilt"] == 0'

echo "--- store B: repair killed with SIGKILL, then resumed"
cat >"$T/k.yaml" <<'EOF'
device_size: 48MiB
devices:
  - { tier: flash }
  - { tier: sas }
  - { tier: sas }
  - { tier: sas }
  - { tier: sas }
EOF
head -c $((24 * 1048576)) /dev/urandom >"$T/src.many"
good "store from --config" "$K" --config "$T/k.yaml" --json pools
jtrue "configured pools" '[(p["name"], len(p["devices"])) for p in d] == [("flash", 1), ("sas", 4)]'
jtrue "configured device size" 'all(p["size_bytes"] == len(p["devices"]) * 48 * 1048576 for p in d)'
good "put mirror of 8 KiB units on sas" "$K" obj put @many "$T/src.many" \
	--layout mirror --pool sas --unit 8K
good "device fail sas1" "$K" device fail sas1
# 6144 unit records, 1536 of them on sas1: with the model (milliseconds
# per sas I/O, 16 groups in flight) the repair takes about 3 s alone, in
# batches of 256 records.  Each batch's commit is queued once the one
# before it is durable, and the progress line is drawn before each batch
# (at most every 0.1 s): once it shows 512 units, the first batch's place
# is durable and a kill must leave something to resume.
ptyrun "$T/killed.pid" "$T/killed.tty" "$S" --data "$K" --model repair \
	>"$T/killed.out" &
hpid=$!
wait_file "$T/killed.pid" 30
pid=$(cat "$T/killed.pid" 2>/dev/null)
wait_units "$T/killed.tty" "${pid:-0}" 512 60
r=$?
check "repair with the device model running, progress at $(units_drawn "$T/killed.tty") units (at least 512)" \
	test "$r" -eq 0
[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
wait "$hpid" 2>/dev/null
check "repair was killed" test $? -eq 137
good "repair after the kill" "$K" --json repair
jtrue "repair resumed and completed" 'd["resumed"] and d["complete"] and d["unrepairable"] == 0'
jtrue "resumed repair visited fewer units than the store has" 'd["units"] < 6144'
check "sas1 is repaired" test "$(state "$K" sas1)" = repaired
verify "$K" "after the resumed repair" @many

echo "--- store B: repair stopped with SIGTERM, then resumed"
good "device fail sas2" "$K" device fail sas2
# SIGTERM once the walk draws its progress line: before that the walk has
# not caught SIGTERM yet (a library of the process exits 1 on it, saying
# nothing).  The walk stops after its current batch, which is committed.
ptyrun "$T/term.pid" "$T/term.tty" "$S" --data "$K" --model --json repair \
	>"$T/out" &
hpid=$!
wait_file "$T/term.pid" 30
pid=$(cat "$T/term.pid" 2>/dev/null)
wait_units "$T/term.tty" "${pid:-0}" 1 60
r=$?
check "repair running, progress drawn ($(units_drawn "$T/term.tty") units)" \
	test "$r" -eq 0
[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
wait "$hpid"
rc=$?
tty_err "$T/term.tty" >"$T/err"
check "stopped repair exits 1" test "$rc" -eq 1
check "stopped repair erases its progress line and says so on one line" test "$(wc -l <"$T/err")" -eq 1 -a -n "$(grep '^strata: repair: .*stopped after [0-9]* units; run it again to resume' "$T/err")"
jtrue "stopped repair prints an incomplete summary" 'not d["complete"] and d["units"] > 0'
check "sas2 is still failed" test "$(state "$K" sas2)" = failed
good "repair after the stop" "$K" --json repair
jtrue "repair resumed after the stop" 'd["resumed"] and d["complete"]'
check "sas2 is repaired" test "$(state "$K" sas2)" = repaired
verify "$K" "after the stopped repair" @many
good "repair text summary" "$K" repair
check "text summary has the figures" grep -qE '^repair: [0-9]+ units, .* read, [0-9]+ rebuilt, [0-9]+ moved, [0-9]+ corrupt, [0-9]+ unrepairable, [0-9]+ devices read from, .* s, .* MiB/s$' "$T/out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
