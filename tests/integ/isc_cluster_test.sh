#!/usr/bin/env bash
# isc_cluster_test.sh BUILD — function shipping on a 3-server cluster
# (issue 32, "Tests"; docs/isc.md "Where a function runs"): 3 servers and
# one etcd member on loopback (`strata cluster up`, info logging):
#
#   1. the examples against the cluster (cluster:FILE): isc_stats (a
#      pdclust 4+2 float64 array: declarative and Lua statistics equal the
#      client's), isc_grep (an index: declarative `contains` and a Lua
#      string.find grep equal the client's), isc_wordcount (a container of
#      pdclust 4+2 text objects, Lua granule "object": every member's
#      count of every word equals the client's);
#   2. the CLI through --cluster: the same statistics as the embedded
#      test (tests/integ/isc_test.sh) over a pdclust 4+2 object (run on
#      every server holding its units: servers 3) and a plain one, whole
#      and over a block range; a grep over an index and a key range; the
#      default container's float64 members each under its id;
#   3. a server SIGKILLed during a container-wide call (Lua statistics
#      over 25 pdclust 4+2 objects, 4 s call timeouts; the plain object
#      removed first): the call, bounded by `timeout`, either completes
#      with every member's statistics equal Python's (the dead server's
#      units mapped from degraded reads, its homes served by the server
#      the map names) or fails with one clear line; it never hangs; with
#      the server still
#      down a second call completes degraded (is_degraded > 0) or fails
#      clearly, within the bound; the server restarted, the call is
#      complete and equal again;
#   4. a native function is refused by the servers, whose cluster file
#      allows none (naming the function and the server);
#   5. the servers restarted with a cluster file whose isc_native allows
#      the sample native function: the Clovis suite isc_api against the
#      cluster (every kind equal to the client's computation, objects,
#      indices, a container, the registry, hostile Lua on the servers,
#      the native function allowed); afterwards every server is up, its
#      Lua memory gauge (strata_isc_lua_bytes) is back to 0 and its failed
#      runs counted.
#
# Ports 27000-27999 (group pb, tests/steps.list: shared with
# comp_cluster_test.sh, hsm_cluster_test.sh and plugins_cluster_test.sh,
# never at the same time); every wait is bounded; everything is killed
# and removed on any exit.  Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" isccl 27000 250
cl_need strata strata-server examples/isc_stats examples/isc_grep examples/isc_wordcount

F=$D/cluster.yaml
# the bound of every call that may meet a dead server: its deadline and
# a few call timeouts of fast.yaml (4 s), with room for a loaded machine
CALL_BOUND=300

PYLIB=$T/isclib.py
cat >"$PYLIB" <<'EOF'
import math, struct, sys

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
    return list(struct.unpack_from("<%dd" % n, open(path, "rb").read(), first * 8))

def hist(v, lo, hi, nb):
    h = [0] * nb
    for x in v:
        b = math.floor((x - lo) / ((hi - lo) / nb))
        h[min(max(b, 0), nb - 1)] += 1
    return h

def parse(path):
    out = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line:
            k, t, v = line.split("\t")
            out[k] = (t, v)
    return out

def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))

def check_stats(r, v, kind, pfx=""):
    bad = []
    def num(key, want, exact, typ):
        got = r.get(pfx + key)
        if got is None or got[0] != typ:
            bad.append("%s%s: %s" % (pfx, key, got)); return
        g = float(got[1])
        if (exact and g != want) or (not exact and not close(g, want)):
            bad.append("%s%s: %r, want %r" % (pfx, key, g, want))
    if kind == "decl":
        num("count", len(v), True, "count")
        num("min(x)", min(v), True, "min")
        num("max(x)", max(v), True, "max")
        num("mean(x)", sum(v) / len(v), False, "float")
        num("sum(x)", sum(v), False, "sum")
        got = r.get(pfx + "hist(x)")
        want = [-64.0, 64.0] + hist(v, -64.0, 64.0, 32)
        if got is None or [float(x) for x in got[1].split(",")] != [float(x) for x in want]:
            bad.append("%shist(x): %s" % (pfx, got))
    else:
        num("min", min(v), True, "min")
        num("max", max(v), True, "max")
        num("sum", sum(v), False, "sum")
        num("n", len(v), True, "isum")
    return bad

def log_value(i):
    h = (i * 0x9e3779b97f4a7c15) % (1 << 64)
    h ^= h >> 29
    w = ["pump", "valve", "sensor", "relay"][h % 4]
    if h % 11 == 0:
        return "t=%d ERROR: %s %d stuck" % (i, w, h % 97)
    return "t=%d INFO: %s %d ok" % (i, w, h % 97)
EOF
py() { local c=$1; shift; python3 -c "import sys; sys.path.insert(0, '$T'); from isclib import *; $c" "$@"; }

# c ARGS / cfast ARGS: the CLI against cluster.yaml / fast.yaml (4 s call
# timeouts), bounded; rc, out ($T/out), err ($T/err)
c() {
	timeout "$CALL_BOUND" "$S" --cluster "$F" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
}
cfast() {
	timeout "$CALL_BOUND" "$S" --cluster "$D/fast.yaml" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
}
good() { local n=$1; shift; c "$@"; if [ "$rc" -eq 0 ]; then ok "$n"; else no "$n: rc $rc: $(cat "$T/err")"; fi; }
fig() { sed -n "s/.* \([0-9]*\) $1.*/\1/p" "$T/err" | head -n 1; }
# stats_ok NAME KIND DATA FIRST N [PFX]: as in isc_test.sh
stats_ok() {
	local msg
	msg=$(py '
r = parse(sys.argv[1]); v = read_array(sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
print("; ".join(check_stats(r, v, sys.argv[2], sys.argv[6] if len(sys.argv) > 6 else "")[:4]))' \
		"$T/out" "$2" "$3" "$4" "$5" "${6:-}" 2>&1)
	if [ -z "$msg" ]; then ok "$1"; else no "$1: $msg"; fi
}
# ex NAME ARGS: an example against the cluster, checked
ex() {
	local n=$1 line
	shift
	timeout 600 "$BD/examples/$n" "cluster:$F" "$@" >"$T/ex" 2>&1
	rc=$?
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/ex" | tail -n 1)
	echo "     $n $*: ${line:-no summary}"
	grep -E "^      (shipped|declarative|Lua|local)" "$T/ex" | head -n 6 | sed 's/^ */     /'
	if [ "$rc" -eq 0 ] && [ -n "$line" ] && [ "${line#* passed, }" = "0 failed" ]; then
		ok "example $n against the cluster"
	else
		no "example $n against the cluster (rc $rc)"
		grep -E "FAIL|rc -" "$T/ex" | head -n 10 | sed 's/^/     /'
	fi
}

echo "--- 3 servers, one etcd member, info logging"
export STRATA_LOG=3
cl_up
unset STRATA_LOG
check "every home served by itself" cl_settled 180
cl_fast 4

echo "--- 1. the examples against the cluster"
ex isc_stats
ex isc_grep
ex isc_wordcount

echo "--- 2. the CLI through --cluster"
cat >"$T/stats.decl" <<'EOF'
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
local mn, mx, s, n = math.huge, -math.huge, 0.0, 0
function map(ext)
  if ext.length == nil then return end -- an index member: no extent
  local d = read(ext.offset, ext.length)
  for p = 1, #d - 7, 8 do
    local x = string.unpack("<d", d, p)
    if x < mn then mn = x end
    if x > mx then mx = x end
    s = s + x
    n = n + 1
  end
end
function finish()
  if n == 0 then return end
  emit("min", mn, "min"); emit("max", mx, "max")
  emit("sum", s, "sum"); emit("n", n, "sum")
end
EOF
printf 'where value contains "ERROR"\nrecords\n' >"$T/grep.decl"
good "isc register stats --decl" isc register stats --decl "$T/stats.decl"
good "isc register stats.lua --lua" isc register stats.lua --lua "$T/stats.lua"
good "isc register grep --decl" isc register grep --decl "$T/grep.decl"
good "isc list: 3 functions and the examples'" isc list
check "list names stats, stats.lua and grep" test "$(grep -cE '^(stats|stats.lua|grep)	' "$T/out")" = 3
py 'write_array(sys.argv[1], 262144, 7)' "$T/arr.bin"
py 'write_array(sys.argv[1], 49152, 11)' "$T/arr2.bin"
good "obj put @arr --layout pdclust --data 4 --parity 2" obj put @arr "$T/arr.bin" --layout pdclust --data 4 --parity 2
good "obj put @plain --tier flash" obj put @plain "$T/arr2.bin" --tier flash
good "isc call stats --obj @arr" isc call stats --obj @arr
stats_ok "declarative statistics of the pdclust object equal Python's" decl "$T/arr.bin" 0 262144
echo "     $(tail -n 1 "$T/err")"
check "it ran on the 3 servers holding units ($(fig servers) servers)" test "$(fig servers)" = 3
check "bytes mapped: 2 MiB ($(fig "bytes mapped"))" test "$(fig "bytes mapped")" = 2097152
check "bytes of result under 1 % of the bytes mapped ($(fig "bytes of result"))" test "$(fig "bytes of result")" -gt 0 -a "$(fig "bytes of result")" -lt 20971
good "isc call stats.lua --obj @arr" isc call stats.lua --obj @arr
stats_ok "Lua statistics of the pdclust object equal Python's" lua "$T/arr.bin" 0 262144
good "isc call stats --obj @arr --start 16 --blocks 320" isc call stats --obj @arr --start 16 --blocks 320
stats_ok "a block range: the statistics of blocks 16..335 only" decl "$T/arr.bin" $((16 * 512)) $((320 * 512))
good "isc call stats --obj @plain" isc call stats --obj @plain
stats_ok "declarative statistics of the plain object" decl "$T/arr2.bin" 0 49152
good "isc call stats.lua --obj @plain" isc call stats.lua --obj @plain
stats_ok "Lua statistics of the plain object" lua "$T/arr2.bin" 0 49152
py '
for i in range(300):
    print("rec:%05d" % i); print(log_value(i))' >"$T/recs"
mapfile -t recs <"$T/recs"
good "idx create @log" idx create @log
good "idx put @log: 300 records" idx put @log "${recs[@]}"
for range in "0 300" "100 250"; do
	set -- $range
	if [ "$1" = 0 ]; then good "isc call grep --idx @log" isc call grep --idx @log
	else good "isc call grep --idx @log --from rec:00100 --to rec:00250" isc call grep --idx @log --from rec:00100 --to rec:00250; fi
	msg=$(py '
want = [("rec:%05d" % i, log_value(i)) for i in range(int(sys.argv[2]), int(sys.argv[3])) if "ERROR" in log_value(i)]
got = [tuple(l.rstrip("\n").split("\t")) for l in open(sys.argv[1]) if l.strip()]
print("" if want and [(k, v) for k, t, v in got] == want and all(t == "match" for k, t, v in got) else "%d records, want %d" % (len(got), len(want)))' "$T/out" "$1" "$2")
	if [ -z "$msg" ]; then ok "grep [$1, $2): exactly Python's matches"; else no "grep [$1, $2): $msg"; fi
done
good "isc call stats --container 0:1" isc call stats --container 0:1
for m in arr plain; do
	id=$("$S" --cluster "$F" --json obj stat "@$m" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	f=$T/arr.bin; [ "$m" = plain ] && f=$T/arr2.bin
	stats_ok "container 0:1: member @$m under its id $id" decl "$f" 0 $(($(stat -c %s "$f") / 8)) "$id:"
done

echo "--- 3. a server SIGKILLed during a container-wide call"
# The plain object goes first: a plain object homed on the server killed
# has its only copy there, and the call would rightly fail for it; every
# member left has 4+2 units, so the call can complete from the survivors
# (the dead server's homes served by the server the map names for them).
good "obj rm @plain (its one copy would die with its home)" obj rm @plain
# 24 pdclust 4+2 objects of 1 MiB; the CLI puts into the default
# container, so the call runs on every member there: @arr, @plain, these
# and the index @log (its map returns at once: no extent).
NK=24
py 'write_array(sys.argv[1], 131072, 99)' "$T/k.bin"
for i in $(seq 1 $NK); do
	c obj put "@k$i" "$T/k.bin" --layout pdclust --data 4 --parity 2
	[ "$rc" = 0 ] || no "obj put @k$i: $(cat "$T/err")"
done
ok "$NK objects of 1 MiB put (pdclust 4+2)"
# a slower Lua statistics (a busy loop per extent), so that the call lasts
# long enough to be hit
sed 's/^function map(ext)$/function map(ext)\n  for i = 1, 300000 do end/' "$T/stats.lua" >"$T/slow.lua"
good "register slow (Lua)" isc register slow --lua "$T/slow.lua"
# members_ok NAME: every member of the container in $T/out has Python's
# Lua statistics
kid() { "$S" --cluster "$F" --json obj stat "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
ids="$(kid @arr)=$T/arr.bin"
for i in $(seq 1 $NK); do ids="$ids $(kid "@k$i")=$T/k.bin"; done
members_ok() {
	local msg
	msg=$(py '
r = parse(sys.argv[1]); bad = []
for pair in sys.argv[2].split():
    m, f = pair.split("=")
    v = read_array(f, 0, len(open(f, "rb").read()) // 8)
    bad += check_stats(r, v, "lua", m + ":")
print("%d problems: %s" % (len(bad), bad[:3]) if bad else "")' "$T/out" "$ids" 2>&1)
	if [ -z "$msg" ]; then ok "$1"; else no "$1: $msg"; fi
}
t0=$SECONDS
cfast isc call slow --container 0:1 --deadline 20000
base=$((SECONDS - t0))
check "the container call, all servers up (rc $rc, $base s)" test "$rc" = 0
members_ok "all up: every member's statistics equal Python's"
echo "     $(tail -n 1 "$T/err")"
# the call in the background, s1 SIGKILLed in its middle
t0=$SECONDS
timeout "$CALL_BOUND" "$S" --cluster "$D/fast.yaml" isc call slow --container 0:1 \
	--deadline 20000 >"$T/out" 2>"$T/err" &
cpid=$!
sleep "$(python3 -c "print(max(0.3, $base / 2.5))")"
kill -9 "$(spid 1)"
wait "$cpid"
rc=$?
took=$((SECONDS - t0))
echo "     s1 SIGKILLed during the call: rc $rc after $took s; $(tail -n 1 "$T/err")"
check "the call did not hang (rc $rc, not timeout's 124; $took s <= $CALL_BOUND)" test "$rc" != 124 -a "$took" -lt "$CALL_BOUND"
if [ "$rc" = 0 ]; then
	members_ok "completed from the survivors: every member's statistics equal Python's"
else
	check "failed clearly: one line naming the call ($(cat "$T/err"))" \
		test "$(wc -l <"$T/err")" = 1 -a "$(grep -c '^strata: isc call slow on 0:1: ' "$T/err")" = 1
fi
t0=$SECONDS
cfast isc call stats.lua --container 0:1
took=$((SECONDS - t0))
echo "     s1 down: rc $rc after $took s; $(tail -n 1 "$T/err")"
check "s1 down: the call did not hang (rc $rc, $took s)" test "$rc" != 124 -a "$took" -lt "$CALL_BOUND"
if [ "$rc" = 0 ]; then
	members_ok "s1 down: complete, every member's statistics equal Python's"
	check "s1 down: units mapped from degraded reads ($(fig "degraded units"))" test "$(fig "degraded units")" -gt 0
else
	check "s1 down: failed clearly: one line ($(cat "$T/err"))" \
		test "$(wc -l <"$T/err")" = 1 -a "$(grep -c '^strata: isc call stats.lua on 0:1: ' "$T/err")" = 1
fi
srv_start 1 "$F"
check "s1 back" wait_ready
c isc call stats.lua --container 0:1
check "s1 back: the call succeeds (rc $rc)" test "$rc" = 0
members_ok "s1 back: every member's statistics equal Python's"

echo "--- 4. a native function, not allowed by the cluster file"
good "register nat --native (a shared object's path)" isc register nat --native "$BD/libstrata.so"
c isc call nat --obj @arr
check "refused (rc $rc): $(cat "$T/err")" test "$rc" = 1
grep -qE "isc call nat on @arr: .*nat.*(allow|permitted)" "$T/err" ||
	no "the refusal names the function and says it is not allowed"
grep -qE "s[0-2]" "$T/err" || no "the refusal names the server ($(cat "$T/err"))"
good "the servers still answer: stats" isc call stats --obj @arr
stats_ok "... with the same statistics" decl "$T/arr.bin" 0 262144

echo "--- 5. the Clovis suite isc_api against the cluster; native allowed by the cluster file"
# every kind against the client's computation, hostile Lua on the
# servers, the registry, a container; the servers restarted with a
# cluster file whose isc_native allows the sample native function
so=$(realpath "$BD/isc_native_fn.so")
sed "s|^cluster:$|cluster:\n  isc_native: [ \"$so\" ]|" "$D/fast.yaml" >"$D/native.yaml"
check "native.yaml allows the sample" grep -q "isc_native: \[ \"$so\" \]" "$D/native.yaml"
for s in 0 1 2; do srv_stop $s; done
for s in 0 1 2; do srv_start $s "$D/native.yaml" --log-level 3; done
check "the servers back with isc_native" wait_up
check "the map settles after the restart (at most 180 s)" cl_settled 180
# metric S NAME: server sS's value of NAME (its metrics region)
metric() { "$S" metrics --pid "$(spid "$1")" 2>/dev/null | awk -v m="$2" '$1 == m { print $2 }'; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$(spid "$1")/status" 2>/dev/null; }
for s in 0 1 2; do
	eval "failed0_$s=\$(metric $s strata_isc_failed_total)"
	eval "rss0_$s=\$(rss $s)"
done
export STRATA_UT_ISC_NATIVE=1
cl_ut "suite isc_api (every kind, hostile scripts, native allowed)" -s isc_api
unset STRATA_UT_ISC_NATIVE
grep -q "native_allowed ...passed" "$T/ut" && ok "native_allowed ran and passed against the cluster" ||
	no "native_allowed did not pass against the cluster"
grown=0
for s in 0 1 2; do
	p=$(spid $s)
	check "s$s still up after the hostile scripts" kill -0 "$p"
	lb=$(metric $s strata_isc_lua_bytes)
	check "s$s: Lua memory back to 0 bytes (strata_isc_lua_bytes $lb)" test "$lb" = 0
	eval "f0=\$failed0_$s; r0=\$rss0_$s"
	f1=$(metric $s strata_isc_failed_total)
	[ "${f1:-0}" -gt "${f0:-0}" ] && grown=$((grown + 1))
	echo "     s$s: runs failed ${f0:-0} -> ${f1:-0}; RSS ${r0:-?} -> $(rss $s) KiB"
done
check "the hostile scripts failed on the servers ($grown servers counted failed runs)" test "$grown" -gt 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
