#!/usr/bin/env bash
# attridx_test.sh BUILD — asserting test of strata-attridx (fdmi/attridx/)
# with the strata CLI and attridx_fill (objects in a second container) on
# an embedded store in a temporary directory:
#   the first run makes the index (a rebuild from the empty store); objects
#     of several sizes and tiers (plain on flash, sas, smr; pdclust on the
#     flash pool) in the default container and in a second one reach it
#     through FDMI records; query by container, tier and size ranges lists
#     the exact id sets, in key order (container, tier, size), text and
#     JSON lines;
#   an object rewritten bigger moves in the index (its old key gone, one
#     forward key left); deleted objects leave no entry; a second run finds
#     nothing to do and leaves the index as it was (idx dump); records
#     delivered again (--no-ack, the cursor deleted) fold to the same
#     index;
#   a consumer past its bound (--max-bytes 1, the store held open past a
#     trim) is LAGGING; its next run rebuilds its index from a scan and
#     the index is exact (the same as the one kept by records);
#   a composite object moved to another tier (strata obj move) moves in
#     the index;
#   --rounds N ends after N rounds; SIGTERM ends a run with exit 0; usage
#     errors exit 2, errors 1, with one stderr line "strata-attridx: ...".
# No port, no server.  Ends with "N passed, N failed"; exits non-zero if
# any check failed.
set -u

B=${1:-build}
BD="$(cd "$B" 2>/dev/null && pwd)"
S="$BD/strata"
X="$BD/strata-attridx"
F="$BD/attridx_fill"
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-attridx.XXXXXX")
D=$T/data
pass=0
fail=0
rc=0

cleanup() {
	[ -n "${xpid:-}" ] && kill -9 "$xpid" 2>/dev/null
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

# ax ARGS...: strata-attridx on the store (time-bounded); sets rc, out, err.
ax() {
	timeout 120 "$X" --dir "$D" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else no "$name (rc $rc, out: $(head -c 2000 "$T/out"), err: $(head -c 500 "$T/err"))"; fi
}

# xbad NAME RC PATTERN ARGS...: strata-attridx exits RC with a first
# stderr line "strata-attridx: ..." matching PATTERN.
xbad() {
	local name=$1 want=$2 pat=$3
	shift 3
	timeout 60 "$X" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -eq "$want" ] && head -n 1 "$T/err" | grep -q '^strata-attridx: ' &&
		head -n 1 "$T/err" | grep -qE -- "$pat"; then
		ok "$name"
	else
		no "$name: rc $rc (want $want), stderr: $(cat "$T/err")"
	fi
}

# put NAME SIZE TIER|pdclust: a plain object on TIER (or pdclust 4+2 on
# the flash pool) in the default container; sets the variable NAME to its
# id.
put() {
	head -c "$2" /dev/urandom >"$T/f.$1"
	if [ "$3" = pdclust ]; then
		st obj put "@$1" "$T/f.$1" --layout pdclust --pool flash --data 4 --parity 2
	else
		st obj put "@$1" "$T/f.$1" --tier "$3"
	fi
	[ "$rc" -eq 0 ] || no "put @$1: $err"
	st --json obj stat "@$1"
	printf -v "$1" '%s' "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$out")"
}

# cput NAME SIZE TIER [CONTAINER]: a plain object in CONTAINER (default
# @c2) through attridx_fill; sets the variable NAME to its id.
cput() {
	head -c "$2" /dev/urandom >"$T/f.$1"
	local id
	id=$(timeout 60 "$F" "$D" put "${4:-@c2}" "@$1" "$T/f.$1" "$3" 2>"$T/err")
	[ -n "$id" ] || no "attridx_fill put @$1: $(cat "$T/err")"
	printf -v "$1" '%s' "$id"
}

# q ARGS...: the ids a query lists, one line, space-separated, in order.
q() {
	ax query "$@"
	awk '{ printf "%s%s", (NR > 1 ? " " : ""), $1 }' "$T/out"
}

# qs ARGS...: the same, sorted.
qs() {
	ax query "$@"
	awk '{ print $1 }' "$T/out" | sort | tr '\n' ' ' | sed 's/ $//'
}

# sorted IDS...: the ids sorted, space-separated.
sorted() { printf '%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//'; }

# fwd_keys ID [INDEX]: how many forward keys of object ID the index holds.
fwd_keys() {
	st idx dump "${2:-@strata-attridx}" --hex
	local hex=${1/:/}
	grep -c "^66.*${hex}	" "$T/out"
}

# any_key ID [INDEX]: how many keys of the index name object ID.
any_key() {
	st idx dump "${2:-@strata-attridx}" --hex
	local hex=${1/:/}
	grep -c "${hex}" "$T/out"
}

[ -x "$X" ] || { no "strata-attridx not built in $B"; echo "$pass passed, $fail failed"; exit 1; }
[ -x "$F" ] || { no "attridx_fill not built in $B"; echo "$pass passed, $fail failed"; exit 1; }

# ------------------------------------------------------------- usage
xbad "no --dir: usage" 2 'dir' --once
xbad "--tier tape: usage naming it" 2 'tape' --dir "$T/none" query --tier tape
xbad "--rounds 0: usage" 2 'rounds' --dir "$T/none" --rounds 0
xbad "--size-min not a size: usage" 2 'size-min' --dir "$T/none" query --size-min 12q
xbad "--json outside query: usage" 2 'query' --dir "$T/none" --json
xbad "no store: error naming the directory" 1 "$T/none" --dir "$T/none" --once

# -------------------------------------------------- the first run, objects
st devices
check "make the store" test "$rc" -eq 0
ax --once
check "first run: exit 0" test "$rc" -eq 0
check "first run: a new index, rebuilt (empty)" grep -q "a new index: rebuilding" "$T/out"
check "first run: a round" grep -qE '^round 1: 0 records' "$T/out"
xbad "query of an index that is not there" 1 'no such index' --dir "$D" --index @nosuch query

put a 300000 sas
put b 5000 sas
put c 100000 flash
put d 20000 smr
put pd 64000 pdclust
cput x 5000 flash
cput y 70000 flash
cput z 200000 sas
ax --once
check "records: exit 0" test "$rc" -eq 0
check "records: 8 objects changed, no rebuild" grep -qE '^round 1: [0-9]+ records, 8 objects changed$' "$T/out"

check "query: every object" test "$(qs)" = "$(sorted "$a" "$b" "$c" "$d" "$pd" "$x" "$y" "$z")"
check "query --container 0:1: by tier, then size" \
	test "$(q --container 0:1)" = "$pd $c $b $a $d"
check "query --container 0:1: ids, tiers, sizes" test "$(cat "$T/out" | tr '\n' ';')" = \
	"$pd flash 64000;$c flash 100000;$b sas 5000;$a sas 300000;$d smr 20000;"
check "query --container @c2 --tier flash" test "$(q --container @c2 --tier flash)" = "$x $y"
check "query --container @c2 --tier sas" test "$(q --container @c2 --tier sas)" = "$z"
check "query --container 0:1 --tier sas --size-min 10000" \
	test "$(q --container 0:1 --tier sas --size-min 10000)" = "$a"
check "query --container 0:1 --tier sas --size-max 300000 --size-min 5000" \
	test "$(q --container 0:1 --tier sas --size-min 5000 --size-max 300000)" = "$b $a"
check "query --size-max 10000 (both containers)" test "$(qs --size-max 10000)" = "$(sorted "$b" "$x")"
check "query --tier flash --size-min 60000 --size-max 100000" \
	test "$(qs --tier flash --size-min 60000 --size-max 100000)" = "$(sorted "$pd" "$c" "$y")"
check "query --tier smr" test "$(q --tier smr)" = "$d"
check "query --tier nvram: none" test -z "$(q --tier nvram)"
check "query --size-min 1K --size-max 4KiB: none" test -z "$(q --size-min 1K --size-max 4KiB)"
ax query --container @c2 --json
check "query --json: JSON lines with every field" python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = [(r["id"], r["tier"], r["size"]) for r in rows]
assert got == [(sys.argv[2], "flash", 5000), (sys.argv[3], "flash", 70000),
               (sys.argv[4], "sas", 200000)], got
assert len({r["container"] for r in rows}) == 1 and rows[0]["container"] != "0:1"
' "$T/out" "$x" "$y" "$z"

# -------------------------------------------- a rewrite, deletes, again
head -c 50000 /dev/urandom >"$T/f.b2"
timeout 60 "$F" "$D" put 0:1 @b "$T/f.b2" sas >/dev/null
check "rewrite @b bigger (5000 -> 50000)" test $? -eq 0
st obj rm @d
check "rm @d" test "$rc" -eq 0
timeout 60 "$F" "$D" rm @c2 @x
check "rm @x in @c2" test $? -eq 0
ax --once
check "after the changes: 3 objects changed" grep -qE '^round 1: [0-9]+ records, 3 objects changed$' "$T/out"
check "@b moved: sas, still before @a (50000 < 300000)" \
	test "$(q --container 0:1 --tier sas)" = "$b $a"
check "@b's new size" grep -qE "^$b sas 50000$" "$T/out"
check "@b: its old key is gone (one forward key)" test "$(fwd_keys "$b")" = 1
check "nothing is under 10000 any more (@b moved, @x gone)" test -z "$(qs --size-max 10000)"
check "@d is gone from queries" test -z "$(q --tier smr)"
check "@d: no key names it (forward nor reverse)" test "$(any_key "$d")" = 0
check "@x: no key names it" test "$(any_key "$x")" = 0
check "@c2 holds @y and @z" test "$(q --container @c2)" = "$y $z"

st idx dump @strata-attridx --hex
cp "$T/out" "$T/dump1"
ax --once
check "a second run: nothing to do" grep -qE '^round 1: 0 records, 0 objects changed$' "$T/out"
st idx dump @strata-attridx --hex
check "a second run: the index as it was" cmp -s "$T/dump1" "$T/out"

# records delivered again: folded without acking, the cursor deleted,
# folded again: the same index
put e 12345 smr
ax --once --no-ack
check "--no-ack: @e folded" test "$rc" -eq 0 -a "$(q --tier smr)" = "$e"
st idx dump @strata-attridx --hex
cp "$T/out" "$T/dump2"
st idx del @strata-attridx mcursor:local
check "delete the cursor" test "$rc" -eq 0
ax --once
check "the records come again and are folded again" grep -qE '^round 1: [1-9][0-9]* records, 0 objects changed$' "$T/out"
st idx dump @strata-attridx --hex
check "redelivered records: the same index (cursor included)" cmp -s "$T/dump2" "$T/out"
ax --once
check "then acked: nothing to do" grep -qE '^round 1: 0 records' "$T/out"

# ---------------------------------------------------------------- LAGGING
ax --consumer lag --index @lagidx --max-bytes 1 --once
check "lag consumer: its index made by a rebuild" grep -q "rebuilt: 7 objects indexed" "$T/out"
check "lag index: the same objects" test "$(qs --index @lagidx)" = "$(qs)"
put f 40000 flash
st obj rm @c
cput w 80000 smr
head -c 90000 /dev/urandom >"$T/f.a2"
timeout 60 "$F" "$D" put 0:1 @a "$T/f.a2" sas >/dev/null
st fdmi sub hold
# the store held open past a trim (every second): lag (1 byte allowed)
# is marked LAGGING
"$S" --data "$D" fdmi tail hold --follow >"$T/tail" 2>&1 &
fpid=$!
for _ in $(seq 300); do [ -s "$T/tail" ] && break; sleep 0.1; done
sleep 2.5
kill -TERM "$fpid" 2>/dev/null
wait "$fpid"
fpid=
st --json fdmi ls
check "lag is LAGGING" test "$(python3 -c 'import json,sys; print([s["state"] for s in json.loads(sys.argv[1]) if s["name"] == "lag"][0])' "$out")" = LAGGING
check "attridx (64 MiB) is not" test "$(python3 -c 'import json,sys; print([s["state"] for s in json.loads(sys.argv[1]) if s["name"] == "attridx"][0])' "$out")" = ACTIVE
ax --consumer lag --index @lagidx --once
check "LAGGING: the run says so and rebuilds" grep -q "consumer lag is LAGGING .*rebuilding the index" "$T/out"
check "LAGGING: rebuilt 8 objects" grep -q "rebuilt: 8 objects indexed" "$T/out"
check "LAGGING: the round after a rebuild" grep -qE '^round 1: .*after a rebuild$' "$T/out"
ax --once
check "the records' index: 4 objects changed" grep -qE '^round 1: [0-9]+ records, 4 objects changed$' "$T/out"
want="$(sorted "$a" "$b" "$pd" "$e" "$f" "$y" "$z" "$w")"
check "rebuilt index: exact" test "$(qs --index @lagidx)" = "$want"
check "records' index: exact" test "$(qs)" = "$want"
ax query
cp "$T/out" "$T/q1"
ax --index @lagidx query
check "both indexes list the same ids, tiers and sizes in the same order" cmp -s "$T/q1" "$T/out"
check "@a: 90000 bytes now" grep -qE "^$a sas 90000$" "$T/out"
check "@w: smr in @c2" test "$(q --container @c2 --tier smr)" = "$w"
st --json fdmi ls
check "lag is ACTIVE again" test "$(python3 -c 'import json,sys; print([s["state"] for s in json.loads(sys.argv[1]) if s["name"] == "lag"][0])' "$out")" = ACTIVE

# ---------------------------------------------- a composite object moved
head -c 30000 /dev/urandom >"$T/f.cm"
st obj put @cm "$T/f.cm" --layout composite --tier sas
st --json obj stat @cm
cm=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$out")
ax --once
check "a composite on sas: indexed on sas" test "$(q --tier sas --size-max 30000)" = "$cm"
st obj move @cm --to flash
check "obj move @cm --to flash" test "$rc" -eq 0
ax --once
check "the move: 1 object changed" grep -qE '^round 1: [0-9]+ records, 1 objects changed$' "$T/out"
check "@cm: on flash now (the tier holding its blocks)" test "$(q --tier flash --size-min 30000 --size-max 30000)" = "$cm"
check "@cm: not on sas any more" test -z "$(q --tier sas --size-max 30000)"
check "@cm: one forward key" test "$(fwd_keys "$cm")" = 1

# ------------------------------------------------------ rounds, signals
ax --rounds 2
check "--rounds 2: two rounds, exit 0" test "$rc" -eq 0 -a "$(grep -c '^round' "$T/out")" = 2
"$X" --dir "$D" >"$T/run" 2>&1 &
xpid=$!
for _ in $(seq 100); do grep -q '^round' "$T/run" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$xpid"
wait "$xpid"
rc=$?
xpid=
check "a run ends on SIGTERM with exit 0" test "$rc" -eq 0 -a -n "$(grep '^round 1' "$T/run")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
