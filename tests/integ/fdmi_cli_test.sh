#!/usr/bin/env bash
# fdmi_cli_test.sh BUILD — asserting test of `strata fdmi sub|ls|rm|tail|
# reset` (clovis/cli/cli_fdmi.c) on an embedded store in a temporary
# directory: the records of an object put and index records appear in
# tail with the right op names, extents and keys; an ack means a second
# tail shows nothing, --no-ack shows them again; --count; a filter; ls
# shows the lag, then none; a consumer past its bound is LAGGING, tail
# fails naming it, reset makes it ACTIVE; tail --follow ends on SIGTERM
# with exit 0; every --json output parses (one object per line for
# tail); bad filters and options fail with one stderr line naming the
# field; rm.  No port, no server.  Ends with "N passed, N failed"; exits
# non-zero if any check failed.
set -u

B=${1:-build}
S="$(cd "$B" 2>/dev/null && pwd)/strata"
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-fdmi-cli.XXXXXX")
D=$T/data
pass=0
fail=0

# Remove the store with its devices (its NVRAM device on /dev/shm too).
cleanup() {
	[ -d "$D" ] && "$S" --data "$D" -q destroy --yes 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }

# run ARGS...: strata on the store, with a time bound; sets rc, out, err.
run() {
	timeout 60 "$S" --data "$D" --dev-size 32M "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

# good NAME ARGS...: must exit 0 with nothing on stderr.
good() {
	local name=$1
	shift
	run "$@"
	if [ "$rc" -eq 0 ] && [ ! -s "$T/err" ]; then
		ok "$name"
		return 0
	fi
	no "$name: rc $rc, stderr: $err"
	return 1
}

# bad NAME RC PATTERN ARGS...: exit RC, one stderr line "strata: ..."
# matching the extended regex PATTERN.
bad() {
	local name=$1 want=$2 pat=$3 lines
	shift 3
	run "$@"
	lines=$(awk 'END { print NR }' "$T/err")
	if [ "$rc" -eq "$want" ] && [ "$lines" -eq 1 ] &&
		grep -q '^strata: ' "$T/err" && grep -qE -- "$pat" "$T/err"; then
		ok "$name"
	else
		no "$name: rc $rc (want $want), $lines stderr lines: $err"
	fi
}

# check NAME CONDITION...: count a test condition.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else no "$name"; fi
}

# ops: the op names of the tail lines in $T/out, space-separated.
ops() { awk '{ printf "%s%s", (NR > 1 ? " " : ""), $4 }' "$T/out"; }

# Does every line of $T/out parse as a JSON object?  (JSON lines)
json_lines() {
	python3 -c '
import json, sys
n = 0
for l in open(sys.argv[1]):
    assert isinstance(json.loads(l), dict), l
    n += 1
assert n > 0' "$T/out" 2>/dev/null
}

# json_get EXPR: a Python expression over the JSON document in $T/out
# as "d".
json_get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print('"$1"')' "$T/out"; }

# lag NAME: the consumer's lag_records in 'fdmi ls --json'.
lag() {
	run --json fdmi ls
	json_get "[s['lag_records'] for s in d if s['name'] == '$1'][0]"
}

[ -x "$S" ] || { no "strata binary at $S"; echo "$pass passed, $fail failed"; exit 1; }
head -c 10000 /dev/urandom >"$T/f.bin"

echo "--- sub, ls"
good "sub feed (every record)" fdmi sub feed &&
	check "sub says what it registered" grep -q "feed registered: every record" "$T/out"
good "sub feed again, same filter: nothing changes" fdmi sub feed
good "sub wr with a filter and bounds" fdmi sub wr op=obj.write key=nope --max-bytes 1M --max-age 600
good "ls" fdmi ls
check "ls lists both consumers, ACTIVE, lag 0" test "$(awk 'NR > 1 { print $1, $2, $3, $5 }' "$T/out" | tr '\n' ';')" = "feed local ACTIVE 0;wr local ACTIVE 0;"
check "ls shows the filter as the library keeps it" grep -qE "^wr .* op=obj.write key=nope$" "$T/out"
good "ls --json" --json fdmi ls
check "ls --json: the fields of a consumer" test "$(json_get '[(s["name"], s["server"], s["state"], s["filter"], s["acked"], s["lag_records"], s["lag_bytes"], s["lag_age_ms"], s["times_lagged"], s["max_bytes"], s["max_age_ms"]) for s in d][1]')" = "('wr', 'local', 'ACTIVE', 'op=obj.write key=nope', 0, 0, 0, 0, 0, 1048576, 600000)"

echo "--- the records of a put and of index records"
good "obj put" obj put @x "$T/f.bin"
good "idx create" idx create @cat
good "idx put" idx put @cat apple red "a b" blue
good "idx put --hex" idx put @cat --hex 00ff 01
check "ls shows a lag of 7 records" test "$(lag feed)" = 7
check "ls shows lag bytes and age" test "$(json_get "[s['lag_bytes'] > 0 and s['lag_age_ms'] >= 0 for s in d if s['name'] == 'feed'][0]")" = True
good "tail --no-ack" fdmi tail feed --no-ack
check "tail: the op names in order" test "$(ops)" = "obj.create obj.write setattr idx.create idx.put idx.put idx.put"
cp "$T/out" "$T/first"
check "tail: server local, seq 1..7" test "$(awk '{ printf "%s%s:%s", (NR > 1 ? " " : ""), $1, $2 }' "$T/out")" = "local:1 local:2 local:3 local:4 local:5 local:6 local:7"
check "tail: the write's extents, the size after it" grep -qE " obj.write +[0-9a-f]+:[0-9a-f]+ +cont=0:1 ext=0\+3 size=12288$" "$T/out"
check "tail: setattr gives the byte size" grep -qE " setattr .* size=10000$" "$T/out"
check "tail: a printable key as text" grep -qE " idx.put .* key=apple size=1$" "$T/out"
check "tail: a key with a space in hex" grep -qE " idx.put .* key=0x612062 size=2$" "$T/out"
check "tail: a binary key in hex" grep -qE " idx.put .* key=0x00ff size=3$" "$T/out"
check "tail: no dtx outside a dtx" test "$(grep -c "dtx=" "$T/out")" -eq 0
good "tail --no-ack again" fdmi tail feed --no-ack
check "--no-ack: the same records again" cmp -s "$T/first" "$T/out"
check "--no-ack left the lag" test "$(lag feed)" = 7

echo "--- JSON lines"
good "tail --json --no-ack" --json fdmi tail feed --no-ack
check "tail --json: one JSON object per line" json_lines
check "tail --json: 7 lines" test "$(wc -l <"$T/out")" -eq 7
check "tail --json: the fields of a record" python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["op"] for r in rows] == ["obj.create", "obj.write", "setattr",
    "idx.create", "idx.put", "idx.put", "idx.put"], rows
assert [r["seq"] for r in rows] == list(range(1, 8))
w = rows[1]
assert w["server"] == "local" and w["extents"] == [[0, 3]], w
assert w["size"] == 12288 and w["key"] is None and w["dtx"] is None, w
assert w["container"] == "0:1" and w["time_ns"] > 0 and w["time"].endswith("Z")
assert rows[4]["key"] == "apple" and rows[4]["key_hex"] == "6170706c65"
assert rows[6]["key_hex"] == "00ff" and rows[6]["extents"] == []
' "$T/out"

echo "--- ack"
good "tail --count 2 (acked)" fdmi tail feed --count 2
check "--count 2: the first two records" test "$(ops)" = "obj.create obj.write"
check "the two are acked: lag 5" test "$(lag feed)" = 5
good "tail (acks the rest)" fdmi tail feed
check "tail: the other five" test "$(ops)" = "setattr idx.create idx.put idx.put idx.put"
good "tail after the ack" fdmi tail feed
check "acked: a second tail shows nothing" test ! -s "$T/out"
check "acked: lag 0" test "$(lag feed)" = 0
run --json fdmi ls
check "acked up to seq 7" test "$(json_get "[s['acked'] for s in d if s['name'] == 'feed'][0]")" = 7

echo "--- a filter"
good "tail wr (op=obj.write key=nope)" fdmi tail wr
check "the filter: no record (no obj.write has a key)" test ! -s "$T/out"
good "sub w2 op=obj.write,idx.put key=app" fdmi sub w2 op=obj.write,idx.put key=app --from-start
good "tail w2 --from-start" fdmi tail w2
check "from the start, filtered: idx.put apple only" test "$(ops)" = "idx.put" && check "its key" grep -q "key=apple " "$T/out"
good "sub w3 op=obj.write --from-start" fdmi sub w3 op=obj.write --from-start
good "tail w3" fdmi tail w3 && check "only obj.write" test "$(ops)" = "obj.write"
good "rm w2" fdmi rm w2
good "rm w3" fdmi rm w3

echo "--- LAGGING, follow, reset"
good "sub lag --max-bytes 1" fdmi sub lag --max-bytes 1
good "idx put k1" idx put @cat k1 v1
# tail --follow keeps the store open: once it printed the record (its
# signal handlers are in place: stdout is flushed after each batch), the
# store's trimmer runs (every second) while it waits for more
"$S" --data "$D" fdmi tail feed --follow >"$T/out" 2>"$T/err" &
fpid=$!
for i in $(seq 300); do [ -s "$T/out" ] && break; sleep 0.1; done
sleep 2.5
( sleep 20; kill -KILL "$fpid" ) >/dev/null 2>&1 &
wd=$!
kill -TERM "$fpid" 2>/dev/null
wait "$fpid"
rc=$?
kill "$wd" 2>/dev/null
if [ "$rc" -eq 0 ] && [ ! -s "$T/err" ]; then
	ok "tail --follow: ends on SIGTERM with exit 0"
else
	no "tail --follow: ends on SIGTERM with exit 0: rc $rc, stderr: $(cat "$T/err")"
fi
check "tail --follow printed the record there was" test "$(ops)" = "idx.put"
run --json fdmi ls
check "the store was open past a trim: lag is LAGGING" test "$(json_get "[(s['state'], s['times_lagged']) for s in d if s['name'] == 'lag'][0]")" = "('LAGGING', 1)"
bad "tail of a LAGGING consumer" 1 "fdmi tail lag: .*FDMI consumer lag: LAGGING.*reset" fdmi tail lag
good "reset" fdmi reset lag && check "reset says ACTIVE" grep -q "lag is ACTIVE again" "$T/out"
good "tail after the reset" fdmi tail lag
check "after the reset: nothing before it" test ! -s "$T/out"
run --json fdmi ls
check "after the reset: ACTIVE" test "$(json_get "[s['state'] for s in d if s['name'] == 'lag'][0]")" = ACTIVE
good "idx put k2" idx put @cat k2 v2
good "tail --follow --count 1" fdmi tail feed --follow --count 1
check "--follow --count 1: the new record, then the end" test "$(ops)" = "idx.put"

echo "--- tier filters: a pdclust object's records name its pool's tier"
good "sub onflash tier=1" fdmi sub onflash tier=1 op=obj.write
good "sub onsas tier=2" fdmi sub onsas tier=2 op=obj.write
head -c 70000 /dev/urandom >"$T/pd"
good "put a pdclust object on pool flash" obj put @pd "$T/pd" --layout pdclust --pool flash --data 4 --parity 2
good "tail onflash" fdmi tail onflash
check "tier=1 (flash) has the pdclust write" grep -q "obj.write" "$T/out"
good "tail onsas" fdmi tail onsas
check "tier=2 (sas) has nothing" test ! -s "$T/out"
good "rm onflash" fdmi rm onflash
good "rm onsas" fdmi rm onsas

echo "--- bad input"
bad "a filter field that does not exist" 1 "fdmi sub x: Invalid argument: FDMI filter: unknown field \"colour\"" fdmi sub x colour=red
bad "an op that does not exist" 1 "field op: unknown op \"obj.wrte\"" fdmi sub x op=obj.wrte
bad "a tier that is not a number" 1 "field tier: \"abc\"" fdmi sub x tier=abc
bad "a word that is not FIELD=VALUE" 1 "\"op\" is not FIELD=VALUE" fdmi sub x op
bad "a bad consumer name" 1 "consumer name \"a/b\"" fdmi sub a/b
bad "the same name, another filter" 1 "feed: already registered with another filter" fdmi sub feed op=idx.put
bad "--count 0" 2 "--count 0" fdmi tail feed --count 0
bad "--max-bytes 0" 2 "--max-bytes '0'" fdmi sub y --max-bytes 0
bad "--max-age not a number" 2 "--max-age 'soon' is not a number" fdmi sub y --max-age soon
bad "--follow on sub" 2 "--follow does not apply" fdmi sub y --follow
bad "sub without a name" 2 "missing arguments" fdmi sub
bad "tail of no consumer" 1 "fdmi tail nope: .*nope: not registered" fdmi tail nope
run --json fdmi ls
check "bad input registered nothing" test "$(json_get "sorted(s['name'] for s in d)")" = "['feed', 'lag', 'wr']"

echo "--- rm"
good "rm feed" fdmi rm feed && check "rm says so" grep -q "feed removed" "$T/out"
good "rm wr --json" --json fdmi rm wr
check "rm --json parses" test "$(json_get '(d["name"], d["removed"])')" = "('wr', True)"
bad "rm again" 1 "fdmi rm feed: No such file or directory: .*not registered" fdmi rm feed
good "rm lag" fdmi rm lag
good "ls of none" fdmi ls && check "ls says there is none" test "$out" = "(no FDMI consumers)"
good "ls --json of none" --json fdmi ls && check "an empty array" test "$out" = "[]"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
