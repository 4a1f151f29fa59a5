#!/usr/bin/env bash
# isc_test.sh BUILD — function shipping end to end on embedded stores
# (issue 32; docs/isc.md, clovis/cli/README.md "Function shipping"):
#
#   1. the examples (clovis/examples/isc_stats, isc_grep, isc_wordcount)
#      run on stores of their own, pdclust 4+2 and plain, each comparing
#      what it shipped with what it computed over the data read back;
#   2. `strata isc register|list|show|unregister`: digests (64 hex digits,
#      the same code the same digest, other code another), the listing,
#      the code shown back byte-exact, a name forgotten;
#   3. `strata isc call` on objects: the declarative and a Lua
#      min/max/mean/sum/count/histogram of a float64 array (a pdclust 4+2
#      object and a plain one) equal Python's over the same file, whole
#      and over a block range; --json equals the text; the figures line
#      (bytes mapped = the bytes of the range);
#   4. on an index: `where value contains` + records (MATCH records, with
#      their values), over a key range, and a Lua grep with --args, each
#      equal to Python's grep of the records put;
#   5. on a container (the default container 0:1 of a store of its own):
#      the declarative statistics of each float64 member under its id
#      (HI:LO:min(x)), the index member left out; a Lua word count
#      (granule "object") over a store of text objects, every member's
#      count of every word equal to Python's;
#   6. bad input, refused with one stderr line naming the function and
#      the reason: usage errors (no code, two kinds, no target, two
#      targets, options of another target, --deadline 0, --blocks 0, bad
#      sizes), syntax errors (declarative and Lua: with their line), bad
#      names, an unknown function, a missing object, a record size on an
#      index; hostile Lua (error(), an endless loop past --deadline, a
#      memory bomb past --mem, output past --out-max, os.execute,
#      io.open, load of bytecode, deep recursion), each failing its call
#      within a bound; a native function refused (embedded: no
#      cc_isc_native); after all of them the good call still answers the
#      same.
#
# No port; stores in a temporary directory, destroyed at the end.  Ends
# with "N passed, N failed".
set -u

B=${1:-build}
BD=$(cd "$B" 2>/dev/null && pwd)
S=$BD/strata
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-isc-test.XXXXXX")
pass=0
fail=0

cleanup() {
	local d
	for d in "$T"/d*; do
		[ -d "$d" ] && "$S" --data "$d" -q destroy --yes 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else no "$n"; fi; }

STORE=$T/d1
# st ARGS: strata on $STORE (64 MiB devices); rc, out ($T/out), err
st() {
	timeout 120 "$S" --data "$STORE" --dev-size 64M "$@" >"$T/out" \
		2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}
# good NAME ARGS: exit 0 (stderr may hold the figures line)
good() {
	local n=$1
	shift
	st "$@"
	if [ "$rc" -eq 0 ]; then ok "$n"; return 0; fi
	no "$n: rc $rc: $err"
	return 1
}
# bad NAME RC PATTERN ARGS: exit RC with one stderr line "strata: ..."
# matching the extended regex PATTERN
bad() {
	local n=$1 want=$2 pat=$3 lines
	shift 3
	st "$@"
	lines=$(awk 'END { print NR }' "$T/err")
	if [ "$rc" -eq "$want" ] && [ "$lines" -eq 1 ] &&
		grep -q '^strata: ' "$T/err" && grep -qE -- "$pat" "$T/err"; then
		ok "$n"
	else
		no "$n: rc $rc (want $want), $lines stderr lines: $err"
	fi
}

for x in strata examples/isc_stats examples/isc_grep examples/isc_wordcount; do
	[ -x "$BD/$x" ] || { no "$x built"; echo "$pass passed, $fail failed"; exit 1; }
done

# ex NAME ARGS: run example NAME (ARGS), checked: exit 0 and its summary
# line says nothing failed
ex() {
	local n=$1 line
	shift
	timeout 600 "$BD/examples/$n" "$@" >"$T/ex" 2>&1
	rc=$?
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/ex" | tail -n 1)
	echo "     $n $*: ${line:-no summary}"
	if [ "$rc" -eq 0 ] && [ -n "$line" ] && [ "${line#* passed, }" = "0 failed" ]; then
		ok "example $n $*"
	else
		no "example $n $* (rc $rc)"
		grep -E "FAIL|rc -" "$T/ex" | head -n 10 | sed 's/^/     /'
	fi
}

echo "--- 1. the examples"
ex isc_stats
ex isc_stats --layout plain --mib 2
ex isc_grep
ex isc_wordcount
ex isc_wordcount --layout plain --objects 3

# The Python side: the float64 array, the records, the text, and the
# expected results.
PYLIB=$T/isclib.py
cat >"$PYLIB" <<'EOF'
import json, math, re, struct, sys

def values(n, seed):
    out, s = [], seed
    for i in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        noise = (s >> 11) / float(1 << 53) - 0.5
        out.append(20.0 * math.sin(i / 300.0) + 15.0 * noise + 40.0 * (i % 1000 == 0))
    return out

def write_array(path, n, seed):
    with open(path, "wb") as f:
        f.write(struct.pack("<%dd" % n, *values(n, seed)))

def read_array(path, first, n):
    data = open(path, "rb").read()
    return list(struct.unpack_from("<%dd" % n, data, first * 8))

def hist(v, lo, hi, nb):
    h = [0] * nb
    for x in v:
        b = math.floor((x - lo) / ((hi - lo) / nb))
        h[min(max(b, 0), nb - 1)] += 1
    return h

# One CLI result line: KEY TAB TYPE TAB VALUE -> key: (type, value text)
def parse(path):
    out = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if not line:
            continue
        k, t, v = line.split("\t")
        out[k] = (t, v)
    return out

def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))

# decl or lua statistics of v, checked against the parsed result r (keys
# prefixed by pfx); returns a list of problems
def check_stats(r, v, kind, pfx=""):
    bad = []
    def num(key, want, exact, typ):
        got = r.get(pfx + key)
        if got is None:
            bad.append("no %s%s" % (pfx, key)); return
        if got[0] != typ:
            bad.append("%s%s: type %s, not %s" % (pfx, key, got[0], typ)); return
        g = float(got[1])
        if (exact and g != want) or (not exact and not close(g, want)):
            bad.append("%s%s: %r, want %r" % (pfx, key, g, want))
    if not v:
        return ["no values"]
    if kind == "decl":
        num("count", len(v), True, "count")
        num("min(x)", min(v), True, "min")
        num("max(x)", max(v), True, "max")
        num("mean(x)", sum(v) / len(v), False, "float")
        num("sum(x)", sum(v), False, "sum")
        got = r.get(pfx + "hist(x)")
        want = [-64.0, 64.0] + hist(v, -64.0, 64.0, 32)
        if got is None or got[0] != "hist":
            bad.append("no %shist(x)" % pfx)
        elif [float(x) for x in got[1].split(",")] != [float(x) for x in want]:
            bad.append("%shist(x): %s, want %s" % (pfx, got[1], want))
    else:
        num("min", min(v), True, "min")
        num("max", max(v), True, "max")
        num("sum", sum(v), False, "sum")
        num("n", len(v), True, "isum")
        h = hist(v, -64.0, 64.0, 32)
        for i in range(32):
            if h[i]:
                num("hist%02d" % i, h[i], True, "isum")
    return bad

def log_value(i):
    h = (i * 0x9e3779b97f4a7c15) % (1 << 64)
    h ^= h >> 29
    w = ["pump", "valve", "sensor", "relay"][h % 4]
    if h % 11 == 0:
        return "t=%d ERROR: %s %d stuck" % (i, w, h % 97)
    return "t=%d INFO: %s %d ok" % (i, w, h % 97)

VOCAB = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda "
         "mu nu xi omicron pi rho sigma tau upsilon").split()

def text(seed, nbytes):
    s, out, n = seed, [], 0
    while n < nbytes:
        s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        w = VOCAB[(s >> 33) % len(VOCAB) * ((s >> 40) % 3 + 1) // 3 % len(VOCAB)]
        if (s >> 20) % 13 == 0:
            w = w.capitalize()
        sep = "\n" if (s >> 50) % 9 == 0 else ", " if (s >> 45) % 7 == 0 else " "
        out.append(w + sep)
        n += len(w) + len(sep)
    return "".join(out)

def words(t):
    c = {}
    for w in re.findall(r"[A-Za-z]+", t):
        w = w.lower()
        c[w] = c.get(w, 0) + 1
    return c
EOF
# py CODE ARGS: Python with the library above imported
py() { local c=$1; shift; python3 -c "import sys; sys.path.insert(0, '$T'); from isclib import *; $c" "$@"; }

# stats_ok NAME KIND DATA FIRST N [PFX]: the result in $T/out holds the
# KIND (decl, lua) statistics of values FIRST..FIRST+N-1 of file DATA
stats_ok() {
	local msg
	msg=$(py '
r = parse(sys.argv[1]); v = read_array(sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
bad = check_stats(r, v, sys.argv[2], sys.argv[6] if len(sys.argv) > 6 else "")
print("; ".join(bad[:4]))' "$T/out" "$2" "$3" "$4" "$5" "${6:-}" 2>&1)
	if [ -z "$msg" ]; then ok "$1"; else no "$1: $msg"; fi
}

# the figures line of the last call: FIELD (runs, servers, "bytes mapped",
# ...) as a number
fig() { sed -n "s/.* \([0-9]*\) $1.*/\1/p" "$T/err" | head -n 1; }

echo "--- 2. register, list, show, unregister"
cat >"$T/stats.decl" <<'EOF'
# statistics of a float64 array
record 8
field x f64 0
count
min x
max x
mean x
sum x
hist x -64 64 32
EOF
cat >"$T/stats.lua" <<'EOF'
-- the same figures, in Lua: one map per extent, emitted at the end
local LO, HI, NB = -64.0, 64.0, 32
local W = (HI - LO) / NB
local mn, mx, s, n, h = math.huge, -math.huge, 0.0, 0, {}
for i = 0, NB - 1 do h[i] = 0 end
function map(ext)
  local d = read(ext.offset, ext.length)
  for p = 1, #d - 7, 8 do
    local x = string.unpack("<d", d, p)
    if x < mn then mn = x end
    if x > mx then mx = x end
    s = s + x
    n = n + 1
    local b = math.floor((x - LO) / W)
    if b < 0 then b = 0 elseif b >= NB then b = NB - 1 end
    h[b] = h[b] + 1
  end
end
function finish()
  if n == 0 then return end
  emit("min", mn, "min")
  emit("max", mx, "max")
  emit("sum", s, "sum")
  emit("n", n, "sum")
  for i = 0, NB - 1 do
    if h[i] > 0 then emit(string.format("hist%02d", i), h[i], "sum") end
  end
end
EOF
good "isc register stats --decl" isc register stats --decl "$T/stats.decl"
dg1=$out
check "register prints a digest of 64 hex digits ($dg1)" grep -qxE '[0-9a-f]{64}' "$T/out"
good "isc register stats.lua --lua" isc register stats.lua --lua "$T/stats.lua"
dgl=$out
good "the same code under another name" isc register stats2 --decl "$T/stats.decl"
check "the same code has the same digest" test "$out" = "$dg1"
check "other code has another digest" test "$dgl" != "$dg1" -a -n "$dgl"
good "isc list" isc list
check "list: stats, decl, its digest" grep -qxP "stats\tdecl\t$dg1" "$T/out"
check "list: stats.lua, lua" grep -qxP "stats.lua\tlua\t$dgl" "$T/out"
check "list: in name order" test "$(cut -f1 "$T/out" | tr '\n' ' ')" = "stats stats.lua stats2 "
good "isc list --json" isc list --json
check "list --json: 3 functions, stats first" test "$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d), d[0]["name"], d[0]["kind"], d[0]["digest"])')" = "3 stats decl $dg1"
good "isc show stats.lua" isc show stats.lua
check "show: kind and digest" grep -qx "kind     lua" "$T/out"
check "show: the digest" grep -qx "digest   $dgl" "$T/out"
good "isc show --json" isc show stats.lua --json
check "show --json: the code byte-exact" test "$(echo "$out" | python3 -c 'import json,sys; sys.stdout.write(json.load(sys.stdin)["code"])' | cmp - "$T/stats.lua" && echo same)" = same
good "isc unregister stats2" isc unregister stats2
check "unregister says so" test "$out" = "unregistered function stats2"
st isc list
check "stats2 no longer listed" test "$(grep -c stats2 "$T/out")" = 0
bad "show of a forgotten name" 1 "stats2.*not registered" isc show stats2
bad "unregister twice" 1 "isc unregister stats2: .*stats2 is not registered" isc unregister stats2
st isc register stats2 --decl - <"$T/stats.decl"
check "register from standard input (rc $rc), the same digest" test "$rc" = 0 -a "$out" = "$dg1"

echo "--- 3. calls on objects"
py 'write_array(sys.argv[1], 262144, 7)' "$T/arr.bin"      # 2 MiB
py 'write_array(sys.argv[1], 49152, 11)' "$T/arr2.bin"     # 384 KiB
good "obj put @arr (pdclust 4+2, 64 KiB units)" obj put @arr "$T/arr.bin" --layout pdclust --data 4 --parity 2
good "obj put @plain (plain on flash)" obj put @plain "$T/arr2.bin" --tier flash
good "isc call stats --obj @arr" isc call stats --obj @arr
stats_ok "declarative statistics of @arr equal Python's" decl "$T/arr.bin" 0 262144
check "the figures line: bytes mapped = 2 MiB ($(fig "bytes mapped"))" test "$(fig "bytes mapped")" = 2097152
check "the figures line: runs on more than one device ($(fig runs) runs)" test "$(fig runs)" -gt 1
grep -q "isc call stats: 6 records" "$T/err" || no "figures line says 6 records: $err"
cp "$T/out" "$T/text.out"
good "isc call stats --obj @arr --json" isc call stats --obj @arr --json
check "--json: the same records as the text" test "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = [l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.strip()]
ok = len(d["records"]) == len(t)
for r, (k, ty, v) in zip(d["records"], t):
    val = r["value"]
    if isinstance(val, dict):
        val = [val["lo"], val["hi"]] + val["counts"]
        v = [float(x) for x in v.split(",")]
        ok = ok and [float(x) for x in val] == v
    else:
        ok = ok and float(val) == float(v)
    ok = ok and r["key"] == k and r["type"] == ty
ok = ok and d["stats"]["bytes_mapped"] == 2097152
print(ok)' "$T/out" "$T/text.out")" = True
good "isc call stats.lua --obj @arr" isc call stats.lua --obj @arr
stats_ok "Lua statistics of @arr equal Python's" lua "$T/arr.bin" 0 262144
good "isc call stats --obj @arr --start 16 --blocks 320" isc call stats --obj @arr --start 16 --blocks 320
stats_ok "a block range: the statistics of blocks 16..335 only" decl "$T/arr.bin" $((16 * 512)) $((320 * 512))
check "a block range: bytes mapped = 320 blocks ($(fig "bytes mapped"))" test "$(fig "bytes mapped")" = $((320 * 4096))
good "isc call stats.lua over the same range" isc call stats.lua --obj @arr --start 16 --blocks 320
stats_ok "Lua over the block range" lua "$T/arr.bin" $((16 * 512)) $((320 * 512))
good "isc call stats --obj @plain" isc call stats --obj @plain
stats_ok "declarative statistics of the plain object" decl "$T/arr2.bin" 0 49152
good "isc call stats.lua --obj @plain" isc call stats.lua --obj @plain
stats_ok "Lua statistics of the plain object" lua "$T/arr2.bin" 0 49152
good "quiet call: no figures line" -q isc call stats --obj @plain
check "-q: nothing on stderr" test ! -s "$T/err"

echo "--- 4. calls on an index"
py '
for i in range(400):
    print("rec:%05d" % i); print(log_value(i))' >"$T/recs"
mapfile -t recs <"$T/recs"
good "idx create @log" idx create @log
good "idx put @log: 200 records" idx put @log "${recs[@]:0:400}"
good "idx put @log: 200 more" idx put @log "${recs[@]:400:400}"
printf 'where value contains "ERROR"\nrecords\n' >"$T/grep.decl"
cat >"$T/grep.lua" <<'EOF'
-- grep: the records whose value holds ARGS (plain text)
function map()
  local k = nil
  repeat
    local ks, vs = next(k, 64)
    for i = 1, #ks do
      if string.find(vs[i], ARGS, 1, true) then emit(ks[i], vs[i]) end
      k = ks[i]
    end
  until #ks == 0
end
EOF
good "register grep --decl" isc register grep --decl "$T/grep.decl"
good "register grep.lua --lua" isc register grep.lua --lua "$T/grep.lua"
# grep_ok NAME TYPE WORD LO HI: $T/out lists exactly the records of
# [LO, HI) whose value holds WORD, with their values, of type TYPE
grep_ok() {
	local msg
	msg=$(py '
want = [("rec:%05d" % i, log_value(i)) for i in range(int(sys.argv[4]), int(sys.argv[5])) if sys.argv[3] in log_value(i)]
got = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
bad = [] if len(want) > 0 else ["no match to find"]
if [(k, v) for k, t, v in got] != want:
    bad.append("%d records, want %d; first %s" % (len(got), len(want), got[:1]))
if any(t != sys.argv[2] for k, t, v in got):
    bad.append("types %s" % sorted(set(t for k, t, v in got)))
print("; ".join(bad))' "$T/out" "$2" "$3" "$4" "$5" 2>&1)
	if [ -z "$msg" ]; then ok "$1"; else no "$1: $msg"; fi
}
good "isc call grep --idx @log" isc call grep --idx @log
grep_ok "declarative grep: every ERROR record, MATCH with its value" match ERROR 0 400
good "isc call grep --idx @log --from rec:00100 --to rec:00250" isc call grep --idx @log --from rec:00100 --to rec:00250
grep_ok "declarative grep over [rec:00100, rec:00250)" match ERROR 100 250
good "isc call grep.lua --idx @log --args ERROR" isc call grep.lua --idx @log --args ERROR
grep_ok "Lua grep (string.find ARGS): every ERROR record" bytes ERROR 0 400
good "isc call grep.lua --args valve --from rec:00300" isc call grep.lua --idx @log --args valve --from rec:00300
grep_ok "Lua grep of another word from rec:00300" bytes valve 300 400
good "isc call grep --idx @log --hex --from (hex)" isc call grep --idx @log --hex --from "$(printf 'rec:00390' | od -An -tx1 | tr -d ' \n')"
hexkey=$(py '
print([("rec:%05d" % i) for i in range(390, 400) if "ERROR" in log_value(i)][0].encode().hex())')
check "--hex: keys as hex digits ($hexkey)" test "$(head -n 1 "$T/out" | cut -f1)" = "$hexkey"

echo "--- 5. calls on containers"
STORE=$T/d2
py 'write_array(sys.argv[1], 65536, 21)' "$T/c1.bin"
py 'write_array(sys.argv[1], 32768, 22)' "$T/c2.bin"
good "store 2: obj put @c1 (pdclust)" obj put @c1 "$T/c1.bin" --layout pdclust
good "store 2: obj put @c2 (plain)" obj put @c2 "$T/c2.bin" --tier flash
good "store 2: idx create @i, a record" idx create @i
good "store 2: idx put" idx put @i k v
good "store 2: register stats" isc register stats --decl "$T/stats.decl"
good "isc call stats --container 0:1" isc call stats --container 0:1
for m in c1 c2; do
	id=$("$S" --data "$STORE" --json obj stat "@$m" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	stats_ok "container: member @$m ($id) has its own statistics" decl "$T/$m.bin" 0 $(($(stat -c %s "$T/$m.bin") / 8)) "$id:"
done
check "container: 2 members ran (the index has no records of 8 bytes)" test "$(fig members)" = 2
check "container: 12 records" test "$(wc -l <"$T/out")" = 12
good "isc call stats --container 0:1 --json" isc call stats --container 0:1 --json
check "--json: a member member per record" test "$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(set(r["member"] for r in d["records"])), d["stats"]["members"])')" = "2 2"

STORE=$T/d3
cat >"$T/wc.lua" <<'EOF'
-- word count: every object whole at its home
granule = "object"
function map(ext)
  local counts = {}
  for w in read(ext.offset, ext.length):gmatch("%a+") do
    w = w:lower()
    counts[w] = (counts[w] or 0) + 1
  end
  for w, n in pairs(counts) do emit(w, n, "sum") end
end
EOF
for i in 1 2 3; do
	py 'sys.stdout.write(text(int(sys.argv[1]), int(sys.argv[2])))' "$i" $((i * 150000)) >"$T/t$i.txt"
	good "store 3: obj put @t$i (text, pdclust)" obj put "@t$i" "$T/t$i.txt" --layout pdclust
done
good "store 3: register wc --lua" isc register wc --lua "$T/wc.lua"
good "isc call wc --container 0:1" isc call wc --container 0:1
ids=""
for i in 1 2 3; do
	ids="$ids $("$S" --data "$STORE" --json obj stat "@t$i" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
done
msg=$(py '
ids = sys.argv[2].split()
got = {}
for l in open(sys.argv[1]):
    k, t, v = l.rstrip("\n").split("\t")
    m, w = k.rsplit(":", 1)
    assert t == "isum", t
    got[(m, w)] = int(v)
want = {}
for i, m in enumerate(ids):
    for w, n in words(open(sys.argv[3] + "/t%d.txt" % (i + 1)).read()).items():
        want[(m, w)] = n
bad = [k for k in set(got) | set(want) if got.get(k) != want.get(k)]
print("%d of %d wrong: %s" % (len(bad), len(want), bad[:3]) if bad or not want else "")' "$T/out" "$ids" "$T" 2>&1)
if [ -z "$msg" ]; then ok "Lua word count: every member's count of every word equals Python's"; else no "Lua word count: $msg"; fi
check "word count: 3 members" test "$(fig members)" = 3

echo "--- 6. bad input"
STORE=$T/d1
bad "register without code" 2 "one of --decl FILE, --lua FILE or --native PATH" isc register f
bad "register with two kinds" 2 "one of --decl" isc register f --decl "$T/stats.decl" --lua "$T/stats.lua"
bad "register of a missing file" 1 "open '$T/none'" isc register f --lua "$T/none"
: >"$T/empty"
bad "register of an empty file" 2 "is empty" isc register f --lua "$T/empty"
bad "register --decl for a call option" 2 "--obj does not apply" isc register f --decl "$T/stats.decl" --obj @arr
printf 'record 8\nfield x f64 0\nmin y\n' >"$T/bad.decl"
bad "declarative syntax error: named with its line" 1 "isc register badd: .*line 3" isc register badd --decl "$T/bad.decl"
printf 'function map(ext)\n  local x = \nend\n' >"$T/bad.lua"
bad "Lua syntax error: named with its line" 1 "isc register badl: .*3" isc register badl --lua "$T/bad.lua"
st isc list
check "nothing registered by the failed registrations" test "$(grep -c '^bad' "$T/out")" = 0
bad "a bad name" 1 "bad name" isc register "bad name" --decl "$T/stats.decl"
bad "call of an unknown function" 1 "isc call nosuch on @arr: .*nosuch is not registered" isc call nosuch --obj @arr
bad "call without a target" 2 "one of --obj ID, --idx ID or --container ID" isc call stats
bad "call with two targets" 2 "one of --obj ID" isc call stats --obj @arr --idx @log
bad "--start with --idx" 2 "--start and --blocks are for an object" isc call grep --idx @log --start 1
bad "--to with --obj" 2 "--from and --to are for an index" isc call stats --obj @arr --to x
bad "--blocks 0" 2 "--blocks 0" isc call stats --obj @arr --blocks 0
bad "--deadline 0" 2 "--deadline 0" isc call stats --obj @arr --deadline 0
bad "--mem not a size" 2 "--mem 'lots' is not a size" isc call stats.lua --obj @arr --mem lots
bad "--hex key not hex" 2 "--from 'xyz' is not hex" isc call grep --idx @log --hex --from xyz
bad "--out-max past the library's limit" 1 "isc call stats on @arr: .*stats.*output cap" isc call stats --obj @arr --out-max 1G
bad "a bad id" 2 "bad id" isc call stats --obj nonsense
bad "a missing object" 1 "isc call stats on @nothere: No such file" isc call stats --obj @nothere
bad "a record size on an index" 1 "isc call stats on @log: .*stats" isc call stats --idx @log
# hostile Lua: each fails its call, within a bound, naming the function
hostile() { # NAME RC-PATTERN CODE [CALL OPTIONS...]
	local n=$1 pat=$2 code=$3 t0
	shift 3
	printf '%s\n' "$code" >"$T/$n.lua"
	st isc register "$n" --lua "$T/$n.lua"
	[ "$rc" = 0 ] || { no "register $n: $err"; return; }
	t0=$SECONDS
	bad "hostile Lua $n: refused naming it ($pat)" 1 "isc call $n on @arr: .*$n.*$pat" isc call "$n" --obj @arr "$@"
	check "hostile Lua $n: within 30 s ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -le 30
}
hostile lerror "boom" 'function map(ext) error("boom") end'
hostile lloop "(deadline|[Tt]imed out)" 'function map(ext) while true do end end' --deadline 300
hostile lbomb "(memory|[Cc]annot allocate)" 'local t = {} function map(ext) for i = 1, 1e9 do t[i] = string.rep("x", 1024) .. i end end' --mem 4M
hostile lhuge "(output|too long|[Aa]rgument list)" 'function map(ext) for i = 1, 100000 do emit("k" .. i, string.rep("y", 100)) end end' --out-max 64K
hostile los "os" 'function map(ext) os.execute("touch /tmp/isc-pwned") end'
hostile lio "io" 'function map(ext) io.open("/etc/passwd") end'
hostile lload "(binary|text|load)" 'function map(ext) local f = assert(load(string.dump(function() return 1 end))) f() end'
# deep recursion: the Lua stack grows in the state's memory, so under the
# default 8 MiB cap it ends as out of memory; with room, as a stack overflow
hostile lrec "(stack overflow|out of memory)" 'local function r(n) return 1 + r(n + 1) end function map(ext) r(1) end'
bad "hostile Lua lrec with --mem 256M: a stack overflow" 1 "isc call lrec on @arr: .*lrec.*stack overflow" isc call lrec --obj @arr --mem 256M
check "os.execute ran nothing" test ! -e /tmp/isc-pwned
native=$BD/libstrata.so
good "register a native function (its path)" isc register nat --native "$native"
bad "a native function is refused without cc_isc_native" 1 "isc call nat on @arr: .*nat.*(allow|permitted|refused)" isc call nat --obj @arr
good "after every refusal the good call still answers" isc call stats --obj @arr
stats_ok "... with the same statistics" decl "$T/arr.bin" 0 262144

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
