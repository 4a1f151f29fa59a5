#!/usr/bin/env bash
# hsm_cli_test.sh BUILD — asserting test of strata-hsm (fdmi/hsm/) with the
# strata CLI on an embedded store in a temporary directory:
#   --check takes a good policy and refuses bad ones with one stderr line
#     naming the file, line and field;
#   composite objects made with `strata obj create|put --layout composite`
#     on sas and flash; --dry-run prints what it would move and moves,
#     logs and acks nothing; --once promotes the cold-tier class to flash
#     (obj stat shows the blocks on a flash layer, above the sas one),
#     data byte-exact; a plain object is left where it is, noted once;
#   actions (text and --json lines) list the move; undo N moves it back
#     (logged as the undo of N), data byte-exact;
#   heat: reads made by other processes (`strata obj read`) reach the
#     catalog through FDMI (OBJ_READ records): a heat_min class picks the
#     object read, not the one left alone, and promotes only the blocks
#     read (its hot span); catalog ID (text, --json) shows its runs of
#     blocks per tier; a bad id is a usage error naming it, an id not in
#     the catalog an error naming it; undo moves the span back;
#   a run killed with SIGKILL mid-rounds leaves every object readable and
#     exact, and the next --once goes on;
#   --rounds N ends after N rounds (interval 1s); usage errors exit 2;
#   strata obj layers and obj move --to TIER [--range A:B] (text, JSON,
#     usage errors, a plain object refused).
# No port, no server.  Ends with "N passed, N failed"; exits non-zero if
# any check failed.
set -u

B=${1:-build}
BD="$(cd "$B" 2>/dev/null && pwd)"
S="$BD/strata"
H="$BD/strata-hsm"
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-hsm-cli.XXXXXX")
D=$T/data
pass=0
fail=0
rc=0

cleanup() {
	[ -n "${hpid:-}" ] && kill -9 "$hpid" 2>/dev/null
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

# hs ARGS...: strata-hsm (time-bounded); sets rc, out, err.
hs() {
	timeout 120 "$H" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else no "$name (rc $rc, out: $out, err: $err)"; fi
}

# hbad NAME RC PATTERN ARGS...: strata-hsm exits RC with one stderr line
# "strata-hsm: ..." matching PATTERN (usage errors may add the usage).
hbad() {
	local name=$1 want=$2 pat=$3
	shift 3
	hs "$@"
	if [ "$rc" -eq "$want" ] && head -n 1 "$T/err" | grep -q '^strata-hsm: ' &&
		head -n 1 "$T/err" | grep -qE -- "$pat"; then
		ok "$name"
	else
		no "$name: rc $rc (want $want), stderr: $err"
	fi
}

# blocks ID TIER: blocks of object ID on layers of TIER (obj stat --json).
blocks() {
	st --json obj stat "$1"
	python3 -c '
import json, sys
o = json.loads(sys.stdin.read())
print(sum(l["blocks"] for l in o.get("layers", []) if l.get("tier") == sys.argv[1]))
' "$2" <<<"$out"
}

# same ID FILE: object ID reads back as FILE.
same() {
	st obj get "$1" "$T/got" && cmp -s "$T/got" "$2"
}

# json_lines: every line of $T/out is a JSON object.
json_lines() {
	python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert isinstance(o, dict)
    n += 1
assert n > 0
' "$T/out"
}

[ -x "$H" ] || { no "strata-hsm not built in $B"; echo "$pass passed, $fail failed"; exit 1; }

# ---------------------------------------------------------------- --check
cat >"$T/promote.yaml" <<'EOF'
interval: 1s
classes:
  - name: cold
    tier: sas
rules:
  - class: cold
    action: promote
    to: flash
EOF
hs --check "$T/promote.yaml"
check "--check takes a good policy" test "$rc" -eq 0 -a "${out#ok}" != "$out"
printf 'classes:\n  - name: a\n    heat_min: 3\n    heat_max: 1\n' >"$T/b1.yaml"
hbad "--check: heat_max below heat_min (line, field)" 1 \
	'b1.yaml:4: classes\[0\]\.heat_max' --check "$T/b1.yaml"
printf 'classes:\n  - name: a\n    colour: red\n' >"$T/b2.yaml"
hbad "--check: an unknown key" 1 'b2.yaml:3: classes\[0\]\.colour: unknown key' \
	--check "$T/b2.yaml"
printf 'classes:\n  - name: a\nrules:\n  - { class: a, action: promote, to: tape }\n' >"$T/b3.yaml"
hbad "--check: not a tier" 1 'b3.yaml:4: rules\[0\]\.to: "tape" is not a tier' \
	--check "$T/b3.yaml"
printf 'rules:\n  - { class: nosuch, action: demote, to: sas }\n' >"$T/b4.yaml"
hbad "--check: a rule of an unknown class" 1 'b4.yaml:2: rules\[0\]\.class' \
	--check "$T/b4.yaml"
hbad "--check: no such file" 1 'nosuch.yaml' --check "$T/nosuch.yaml"
hbad "no --policy: usage" 2 'policy' --dir "$D"
hbad "undo without a number: usage" 2 'undo' --dir "$D" --policy "$T/promote.yaml" undo abc

# ----------------------------------------------------- objects, dry run
head -c 300000 /dev/urandom >"$T/a"
head -c 200000 /dev/urandom >"$T/b"
head -c 100000 /dev/urandom >"$T/p"
st obj put @cold "$T/a" --layout composite --tier sas
check "put a composite object on sas" test "$rc" -eq 0
st obj put @warm "$T/b" --layout composite --tier flash
check "put a composite object on flash" test "$rc" -eq 0
st obj put @plain "$T/p" --tier sas
check "put a plain object on sas" test "$rc" -eq 0
st obj stat @cold
check "stat shows the composite's layer" grep -qE '^layer 1 +priority 100, plain on sas, 74 blocks' "$T/out"
st obj create @bad --layout composite --pool flash
check "--pool with composite: usage error" test "$rc" -eq 2

hs --dir "$D" --policy "$T/promote.yaml" --dry-run
check "dry run: exit 0" test "$rc" -eq 0
check "dry run: would move @cold from sas to flash" grep -qE '^would move .* \(300000 bytes\) from sas to flash: rule 1 \(class cold\)' "$T/out"
check "dry run: the round says so" grep -qE 'round 1: .* 1 actions: 0 done.*\(dry run\)' "$T/out"
check "dry run: nothing moved" test "$(blocks @cold sas)" = 74
hs --dir "$D" --policy "$T/promote.yaml" actions
check "dry run: nothing logged" test "$rc" -eq 0 -a -z "$out"
hs --dir "$D" --policy "$T/promote.yaml" --dry-run
check "a second dry run says the same" grep -qE '^would move .* from sas to flash' "$T/out"

# ----------------------------------------------------------- a real round
hs --dir "$D" --policy "$T/promote.yaml" --once
check "--once: exit 0" test "$rc" -eq 0
check "--once: action 1 done" grep -qE '^action 1: .* sas -> flash, 303104 bytes, done \(rule 1 \(class cold\)\)' "$T/out"
check "the plain object is left, noted" grep -qE 'is not composite .*left where it is' "$T/out"
check "@cold: every block on flash" test "$(blocks @cold flash)" = 74 -a "$(blocks @cold sas)" = 0
st obj stat @cold
check "@cold: the flash layer is the top (writes land on flash)" grep -qE '^layer 2 +priority 101, plain on flash, 74 blocks' "$T/out"
check "@cold reads back exactly" same @cold "$T/a"
check "@warm was not moved" test "$(blocks @warm flash)" = 49
check "@plain reads back exactly" same @plain "$T/p"
hs --dir "$D" --policy "$T/promote.yaml" --once
check "a second round: nothing to move" grep -qE '0 actions' "$T/out"
check "the plain object is noted once" test "$(grep -c 'not composite' "$T/out")" = 0

hs --dir "$D" --policy "$T/promote.yaml" actions
check "actions: the move" grep -qE '^ +1 +[0-9a-f]+:[0-9a-f]+ +sas +-> flash +303104 bytes +done' "$T/out"
hs --dir "$D" --policy "$T/promote.yaml" actions --json
check "actions --json: JSON lines" json_lines
check "actions --json: its fields" grep -q '"from": "sas", "to": "flash", "blocks": 74, "bytes": 303104, "state": "done", "undo_of": 0' "$T/out"

# ------------------------------------------------------------------ undo
hs --dir "$D" --policy "$T/promote.yaml" undo 1
check "undo 1: exit 0" test "$rc" -eq 0
check "undo 1: logged as action 2" grep -qE '^action 2: .* flash -> sas, 303104 bytes, done \(undo of action 1\)' "$T/out"
check "@cold: back on sas" test "$(blocks @cold sas)" = 74 -a "$(blocks @cold flash)" = 0
check "@cold reads back exactly after the undo" same @cold "$T/a"
hs --dir "$D" --policy "$T/promote.yaml" actions --json
check "actions --json: undo_of 1" grep -q '"undo_of": 1' "$T/out"
hbad "undo of no such action" 1 'no action 99' --dir "$D" --policy "$T/promote.yaml" undo 99

# ------------------------------------------------- obj layers, obj move
head -c 100000 /dev/urandom >"$T/m"
st obj put @m "$T/m" --layout composite --tier sas
st obj layers @m
check "obj layers: one plain layer on sas" test "$(head -n 1 "$T/out")" = "layer 1      priority 100, plain on sas, 25 blocks"
st obj move @m --to flash --range 0:10
check "obj move --range: 10 blocks up, to a new top layer" grep -qE '^moved 10 blocks of @m \(of blocks 0 to 9\) to layer 2 on flash$' "$T/out"
check "obj move: 10 on flash, 15 on sas" test "$(blocks @m flash)" = 10 -a "$(blocks @m sas)" = 15
check "obj move: exact" same @m "$T/m"
st --json obj move @m --to smr
check "obj move --json: all 25 to smr, the empty sas layer dropped" grep -q '"to": "smr", "layer": 3, "start": 0, "end": 25, "moved_blocks": 25, "left_blocks": 0, "dropped_layers": 1' "$T/out"
check "obj move: exact on smr" same @m "$T/m"
st --json obj layers @m
check "obj layers --json: the (empty) top on flash, the data on smr" python3 -c '
import json, sys
o = json.loads(sys.argv[1])
ls = [(l["layer"], l["tier"], l["blocks"]) for l in o["layers"]]
assert ls == [(2, "flash", 0), (3, "smr", 25)], ls
' "$out"
st obj move @m
check "obj move without --to: usage" test "$rc" -eq 2
st obj move @m --to tape
check "obj move --to tape: usage naming it" test "$rc" -eq 2 -a -n "$(grep "tape" "$T/err")"
st obj move @m --to sas --range 5:2
check "obj move --range 5:2: usage" test "$rc" -eq 2
st obj move @plain --to flash
check "obj move of a plain object: refused, named" test "$rc" -eq 1 -a -n "$(grep "@plain: layout plain, not composite" "$T/err")"
check "the refused move changed nothing" same @plain "$T/p"

# ------------------------------------------------------------------ heat
cat >"$T/heat.yaml" <<'EOF'
window: 1h
classes:
  - name: hot
    heat_min: 3
    tier: sas
rules:
  - class: hot
    action: promote
    to: flash
EOF
head -c 40000 /dev/urandom >"$T/h1"
head -c 40000 /dev/urandom >"$T/h2"
st obj put @h1 "$T/h1" --layout composite --tier sas
st obj put @h2 "$T/h2" --layout composite --tier sas
hs --dir "$D" --policy "$T/heat.yaml" --db "$T/heat.sqlite" --consumer heat --once
check "heat: nothing read yet, nothing moved" grep -qE '0 actions' "$T/out"
for i in 1 2 3 4; do st obj read @h1 0 2 "$T/r"; done
check "heat: reads by another process" test "$rc" -eq 0
hs --dir "$D" --policy "$T/heat.yaml" --db "$T/heat.sqlite" --consumer heat --dry-run
check "heat: a dry run would move the blocks read" grep -qE '^would move .* blocks 0 to 1 \(8192 bytes\) from sas to flash: rule 1' "$T/out"
hs --dir "$D" --policy "$T/heat.yaml" --db "$T/heat.sqlite" --consumer heat --once
check "heat: the blocks read of the object read are promoted" grep -qE '^action 1: .* blocks 0 to 1 sas -> flash, 8192 bytes, done \(rule 1 \(class hot\)\)' "$T/out"
check "heat: only that one" test "$(grep -c '^action' "$T/out")" = 1
check "heat: @h1 blocks 0..1 on flash, the rest on sas; @h2 still on sas" \
	test "$(blocks @h1 flash)" = 2 -a "$(blocks @h1 sas)" = 8 -a "$(blocks @h2 sas)" = 10
hs --dir "$D" --policy "$T/heat.yaml" --db "$T/heat.sqlite" --consumer heat --once
check "heat: a second round: the hot span is there, nothing to move" grep -qE '0 actions' "$T/out"

# ------------------------------------------------------------- catalog ID
hc() { hs --dir "$D" --policy "$T/heat.yaml" --db "$T/heat.sqlite" --consumer heat "$@"; }
hc catalog @h1
check "catalog @h1: exit 0" test "$rc" -eq 0
check "catalog @h1: the object, its heat and hot span" \
	grep -qE '^object [0-9a-f]+:[0-9a-f]+: composite, 40000 bytes, most on sas, 4 reads in the window \(blocks 0 to 1\)$' "$T/out"
check "catalog @h1: its runs, start, blocks, tier" test "$(tail -n 3 "$T/out" | tr -s ' ')" = \
	"$(printf ' start blocks tier\n 0 2 flash\n 2 8 sas')"
hc catalog @h1 --json
check "catalog @h1 --json: one JSON object with the runs" python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o["layout"] == "composite" and o["size"] == 40000 and o["tier"] == "sas", o
assert o["heat"] == 4 and o["hot_start"] == 0 and o["hot_end"] == 2, o
ext = [(e["start"], e["blocks"], e["tier"]) for e in o["extents"]]
assert ext == [(0, 2, "flash"), (2, 8, "sas")], ext
' "$T/out"
hc catalog @h2
check "catalog @h2 (not read, so not looked at): no runs recorded" grep -q '^no extents recorded' "$T/out"
hbad "catalog of a bad id: usage naming it" 2 'catalog: "zz:" is not an object id' \
	--dir "$D" --policy "$T/heat.yaml" catalog zz:
hbad "catalog without an id: usage" 2 'catalog' --dir "$D" --policy "$T/heat.yaml" catalog
hbad "catalog of an object not in the catalog: named" 1 'object 1:7 is not in the catalog' \
	--dir "$D" --policy "$T/heat.yaml" --db "$T/heat.sqlite" --consumer heat catalog 1:7
# (a read of all of @h1: the next round's hot span would be all of it)
check "heat: @h1 exact" same @h1 "$T/h1"
hc undo 1
check "undo of the hot-span promotion: those blocks back" \
	grep -qE '^action 2: .* blocks 0 to 1 flash -> sas, 8192 bytes, done \(undo of action 1\)' "$T/out"
check "after the undo: @h1 all on sas" test "$(blocks @h1 sas)" = 10 -a "$(blocks @h1 flash)" = 0
check "after the undo: @h1 exact" same @h1 "$T/h1"
hc catalog @h1 --json
check "catalog @h1 after the undo: one run on sas" grep -q '"extents": \[{"start": 0, "blocks": 10, "tier": "sas"}\]' "$T/out"

# -------------------------------------------- SIGKILL mid-rounds, rounds
cat >"$T/flip.yaml" <<'EOF'
interval: 1s
rate:
  bytes_per_s: 1MiB
classes:
  - name: any
    tier: sas
rules:
  - class: any
    action: promote
    to: flash
EOF
head -c 4000000 /dev/urandom >"$T/big"
st obj put @big "$T/big" --layout composite --tier sas
"$H" --dir "$D" --policy "$T/flip.yaml" --db "$T/flip.sqlite" --consumer flip \
	>"$T/flip.out" 2>&1 &
hpid=$!
# killed while it moves (paced at 1 MiB/s, @big alone takes ~4 s)
for _ in $(seq 1 100); do
	grep -q 'action\|round' "$T/flip.out" 2>/dev/null && break
	[ -s "$D/hsm.sqlite" ] || true
	sleep 0.05
done
sleep 1
kill -9 "$hpid" 2>/dev/null
wait "$hpid" 2>/dev/null
hpid=
check "killed mid-move: @big reads back exactly" same @big "$T/big"
check "killed mid-move: @cold exact" same @cold "$T/a"
hs --dir "$D" --policy "$T/flip.yaml" --db "$T/flip.sqlite" --consumer flip --once
check "after the kill: the next round runs" test "$rc" -eq 0
check "after the kill: @big on flash" test "$(blocks @big flash)" = 977 -a "$(blocks @big sas)" = 0
check "after the kill: @big exact" same @big "$T/big"
t0=$(date +%s)
hs --dir "$D" --policy "$T/flip.yaml" --db "$T/flip.sqlite" --consumer flip --rounds 2
check "--rounds 2: ends by itself" test "$rc" -eq 0 -a "$(grep -c '^round' "$T/out")" = 2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
