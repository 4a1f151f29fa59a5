#!/usr/bin/env bash
# integrity_test.sh BUILD — asserting test of strata-integrity
# (fdmi/integrity/) with the strata CLI on an embedded store in a
# temporary directory:
#   the first run registers the consumer; a pdclust object (4+2 on the
#     flash pool, every 64 KiB unit marked with its number) and a plain
#     one are written; a run with a long --delay checks nothing and keeps
#     both pending (acked, in the state file); a run killed with SIGKILL
#     after its ack forgets nothing either;
#   one data unit is damaged on disk (found by its mark in the device
#     files while no process has the store open): --once --delay 0 reports
#     the object "repaired 1 units" (its scrub, clovis_obj_scrub()), the
#     plain one "not checkable (plain)"; the object then reads back
#     byte-exact;
#   a second run checks nothing (nothing written since); a write makes
#     the object pending again and the next run reports it ok, every one
#     of its 24 units checked (parity units too);
#   three units of one group damaged (more than its 2 parity units): the
#     object is reported unrepairable, naming the group;
#   a deleted object leaves the pending set;
#   with the consumer removed (strata fdmi rm), the next run rescans the
#     objects modified since its last record and checks them;
#   a consumer past its bound (registered with --max-bytes 1, the store
#     held open past a trim) is LAGGING: the next run rescans the objects
#     modified since its last record and checks them;
#   log (text and JSON lines) lists every check; --rounds N ends after N
#     rounds; usage errors exit 2, errors 1, with one stderr line
#     "strata-integrity: ...".
# No port, no server.  Ends with "N passed, N failed"; exits non-zero if
# any check failed.
set -u

B=${1:-build}
BD="$(cd "$B" 2>/dev/null && pwd)"
S="$BD/strata"
G="$BD/strata-integrity"
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-integrity.XXXXXX")
D=$T/data
pass=0
fail=0
rc=0

cleanup() {
	[ -n "${gpid:-}" ] && kill -9 "$gpid" 2>/dev/null
	[ -n "${fpid:-}" ] && kill -9 "$fpid" 2>/dev/null
	[ -d "$D" ] && "$S" --data "$D" -q destroy --yes 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }

# st ARGS...: strata on the store (time-bounded); sets rc, out, err.
st() {
	timeout 120 "$S" --data "$D" --dev-size 32M "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

# ig ARGS...: strata-integrity on the store (time-bounded); sets rc, out,
# err.
ig() {
	timeout 120 "$G" --dir "$D" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else no "$name (rc $rc, out: $out, err: $err)"; fi
}

# gbad NAME RC PATTERN ARGS...: strata-integrity exits RC with a first
# stderr line "strata-integrity: ..." matching PATTERN.
gbad() {
	local name=$1 want=$2 pat=$3
	shift 3
	timeout 60 "$G" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -eq "$want" ] && head -n 1 "$T/err" | grep -q '^strata-integrity: ' &&
		head -n 1 "$T/err" | grep -qE -- "$pat"; then
		ok "$name"
	else
		no "$name: rc $rc (want $want), stderr: $(cat "$T/err")"
	fi
}

# marked FILE TAG UNITS: UNITS units of 64 KiB, unit u filled with the
# mark "TAG-unit-u;" over and over.
marked() {
	python3 - "$@" <<'EOF'
import sys
path, tag, units = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path, "wb") as f:
    for u in range(units):
        m = ("%s-unit-%04d;" % (tag, u)).encode()
        f.write((m * (65536 // len(m) + 1))[:65536])
EOF
}

# damage TAG UNIT...: overwrite 64 bytes in the middle of each unit whose
# mark is "TAG-unit-UNIT;" in the store's device files (the store closed);
# prints how many units it found.
damage() {
	python3 - "$D" "$@" <<'EOF'
import glob, os, sys
d, tag, units = sys.argv[1], sys.argv[2], sys.argv[3:]
found = 0
for u in units:
    m = ("%s-unit-%04d;" % (tag, int(u))).encode()
    for p in sorted(glob.glob(d + "/devices/*.dev")):
        data = open(p, "rb").read()
        i = data.find(m)
        if i < 0:
            continue
        start = i - i % 4096          # the unit starts on a block
        with open(p, "r+b") as f:
            f.seek(start + 30000)
            f.write(os.urandom(64))
            f.flush()
            os.fsync(f.fileno())
        found += 1
        break
print(found)
EOF
}

# idof NAME: the id of object @NAME (obj stat --json).
idof() {
	st --json obj stat "@$1"
	python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$out"
}

# state NAME: the state of consumer NAME (fdmi ls --json).
cstate() {
	st --json fdmi ls
	python3 -c 'import json,sys; print([s["state"] for s in json.loads(sys.argv[1]) if s["name"] == sys.argv[2]][0])' "$out" "$1"
}

[ -x "$G" ] || { no "strata-integrity not built in $B"; echo "$pass passed, $fail failed"; exit 1; }

# ------------------------------------------------------------- usage
gbad "no --dir: usage" 2 'dir' --once
gbad "--delay not seconds: usage" 2 'delay' --dir "$T/none" --delay soon
gbad "--interval 0: usage" 2 'interval' --dir "$T/none" --interval 0
gbad "--rounds 0: usage" 2 'rounds' --dir "$T/none" --rounds 0
gbad "--json outside log: usage" 2 'log' --dir "$T/none" --json
gbad "no store: error naming the directory" 1 "$T/none" --dir "$T/none" --once
gbad "log of no state file: error naming it" 1 'nosuch.sqlite' --state "$T/nosuch.sqlite" log

# ------------------------------------------------- registration, pending
st devices
check "make the store" test "$rc" -eq 0
ig --once
check "first run: exit 0, nothing to do" test "$rc" -eq 0 -a -n "$(grep -E '^round 1: 0 records, 0 checked' "$T/out")"
check "first run: the state file" test -s "$D/integrity.sqlite"

marked "$T/x" xobj 16
head -c 100000 /dev/urandom >"$T/p"
st obj put @x "$T/x" --layout pdclust --pool flash --data 4 --parity 2
check "put a pdclust object (16 units of 64 KiB)" test "$rc" -eq 0
st obj put @pl "$T/p" --tier sas
check "put a plain object" test "$rc" -eq 0
X=$(idof x)
PL=$(idof pl)

ig --once --delay 3600
check "--delay 3600: records folded, nothing checked, 2 pending" \
	grep -qE '^round 1: [1-9][0-9]* records, 0 checked: .*; 2 pending$' "$T/out"
st --json fdmi ls
check "the records are acked (lag 0)" test "$(python3 -c 'import json,sys; print([s["lag_records"] for s in json.loads(sys.argv[1]) if s["name"] == "integrity"][0])' "$out")" = 0
# a run killed after its ack (long --delay: it never checks): nothing lost
"$G" --dir "$D" --delay 3600 --interval 1 >"$T/run" 2>&1 &
gpid=$!
for _ in $(seq 100); do grep -q '^round 1' "$T/run" 2>/dev/null && break; sleep 0.1; done
kill -9 "$gpid"
wait "$gpid" 2>/dev/null
gpid=
check "a run killed with SIGKILL after its round" grep -qE '^round 1: .*; 2 pending$' "$T/run"

# ------------------------------------------------ a damaged unit, repaired
check "damage one data unit of @x on disk" test "$(damage xobj 5)" = 1
ig --once --delay 0
check "--delay 0: exit 0" test "$rc" -eq 0
check "@x: repaired 1 units" grep -qE "^$X 1048576 bytes: repaired 1 units$" "$T/out"
check "@pl: not checkable (plain)" grep -qE "^$PL 100000 bytes: not checkable \(plain\)$" "$T/out"
check "the round: 2 checked, 1 repaired, 1 not checkable, 0 pending" \
	grep -qE '^round 1: 0 records, 2 checked: 0 ok, 1 repaired, 0 unrepairable, 1 not checkable, 0 not checked; 0 pending$' "$T/out"
st obj get @x "$T/got"
check "@x reads back byte-exact" cmp -s "$T/got" "$T/x"
ig --once --delay 0
check "a second run: nothing written since, nothing checked" \
	grep -qE '^round 1: 0 records, 0 checked: .*; 0 pending$' "$T/out"
st scrub --json
check "scrub finds nothing corrupt after the repair" test "$rc" -eq 0 -a \
	"$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["corrupt"])' "$out")" = 0
head -c 8192 /dev/urandom >"$T/w"
st obj write @x 0 "$T/w"
ig --once --delay 0
# every unit: 4 groups of 4 data and 2 parity units
check "written again: checked again, ok, all 24 units (parity too)" grep -qE "^$X 1048576 bytes: ok \(24 units\)$" "$T/out"
check "only @x" test "$(grep -c bytes: "$T/out")" = 1

# ------------------------------------------------------------ unrepairable
marked "$T/u" uobj 8
st obj put @u "$T/u" --layout pdclust --pool flash --data 4 --parity 2
U=$(idof u)
check "damage 3 units of one group of @u (2 parity units)" test "$(damage uobj 0 1 2)" = 3
ig --once --delay 0
check "@u: unrepairable, naming the group" grep -qE "^$U 524288 bytes: unrepairable: .*group 0 .*only 3 of 6 units readable" "$T/out"
check "the round counts it" grep -qE '^round 1: .* 1 unrepairable' "$T/out"

# ----------------------------------------------------------------- delete
head -c 5000 /dev/urandom >"$T/d"
st obj put @del "$T/d" --layout mirror --pool flash --copies 2
ig --once --delay 3600
check "@del pending" grep -qE '; 1 pending$' "$T/out"
st obj rm @del
ig --once --delay 0
check "deleted: out of the pending set, not checked" \
	grep -qE '^round 1: [1-9][0-9]* records, 0 checked: .*; 0 pending$' "$T/out"

# ------------------------------------------- the consumer removed meanwhile
st fdmi rm integrity
check "fdmi rm integrity" test "$rc" -eq 0
head -c 20000 /dev/urandom >"$T/l"
st obj put @late "$T/l" --layout pdclust --pool flash --data 2 --parity 1
LATE=$(idof late)
ig --once --delay 0
check "a state file older than its consumer: rescanned" grep -q "rescanned: 1 objects modified since" "$T/out"
check "the object written while no consumer was registered is checked" grep -qE "^$LATE 20000 bytes: ok \([0-9]+ units\)$" "$T/out"

# ---------------------------------------------------------------- LAGGING
st fdmi sub lagi op=obj.write,obj.alloc,layer.move,obj.delete --max-bytes 1
check "sub lagi (the plugin's filter, 1 byte)" test "$rc" -eq 0
ig --once --consumer lagi --state "$T/lagi.sqlite"
check "lagi: the plugin takes the consumer (same filter)" test "$rc" -eq 0
head -c 70000 /dev/urandom >"$T/m"
st obj put @mir "$T/m" --layout mirror --pool sas --copies 2
MIR=$(idof mir)
st fdmi sub hold
"$S" --data "$D" fdmi tail hold --follow >"$T/tail" 2>&1 &
fpid=$!
for _ in $(seq 300); do [ -s "$T/tail" ] && break; sleep 0.1; done
sleep 2.5
kill -TERM "$fpid" 2>/dev/null
wait "$fpid"
fpid=
check "lagi is LAGGING" test "$(cstate lagi)" = LAGGING
ig --once --consumer lagi --state "$T/lagi.sqlite" --delay 0
check "LAGGING: the run says so and rescans" grep -q "consumer lagi is LAGGING .*rescanning" "$T/out"
check "LAGGING: one object modified since its last record" grep -q "rescanned: 1 objects modified since" "$T/out"
check "LAGGING: the object written meanwhile is checked" grep -qE "^$MIR 70000 bytes: ok \([0-9]+ units\)$" "$T/out"
check "LAGGING: the round says it rescanned" grep -qE '^round 1: .*\(after a rescan\)$' "$T/out"
check "lagi is ACTIVE again" test "$(cstate lagi)" = ACTIVE

# -------------------------------------------------------- log, rounds
"$G" --dir "$D" log >"$T/out" 2>"$T/err"
rc=$?
check "log: every check of the default state file" test "$rc" -eq 0 -a "$(wc -l <"$T/out")" = 5
check "log: the repair" grep -qE "Z $X 1048576 bytes: repaired 1 units$" "$T/out"
"$G" --dir "$D" log --json >"$T/out" 2>"$T/err"
check "log --json: JSON lines" python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["result"].split(":")[0].split(" (")[0] for r in rows] == [
    "repaired 1 units", "not checkable", "ok", "unrepairable", "ok"], rows
assert rows[0]["id"] == sys.argv[2] and rows[0]["bytes"] == 1048576
assert all(r["time_ns"] > 0 and r["time"].endswith("Z") for r in rows)
' "$T/out" "$X"
ig --rounds 2 --interval 1
check "--rounds 2 --interval 1: two rounds" test "$rc" -eq 0 -a "$(grep -c '^round' "$T/out")" = 2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
