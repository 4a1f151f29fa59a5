#!/usr/bin/env bash
# cli_test.sh BUILD — asserting test of every strata command, with good and
# bad input, on a store in a temporary directory.
#
# Good cases must exit 0 with an empty stderr and the expected output.  Bad
# cases must exit non-zero (1 for failures, 2 for usage errors) with exactly
# one stderr line "strata: ..." naming the problem.  After the bad cases the
# store must be unchanged.  Ends with "N passed, N failed"; exits non-zero
# if any check failed.
set -u

B=${1:-build}
S="$(cd "$B" 2>/dev/null && pwd)/strata"
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-cli-test.XXXXXX")
D=$T/data
pass=0
fail=0

# Remove the store with its devices (NVRAM included) and the temp dir.
cleanup() {
	[ -d "$D" ] && "$S" --data "$D" -q destroy --yes 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }

# Run strata on the test store; sets rc, out (stdout) and err (stderr).
run() {
	"$S" --data "$D" --dev-size 256M "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(tr -d '\0' <"$T/out")
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

# bad NAME RC PATTERN ARGS...: must exit RC with one stderr line that starts
# with "strata: " and matches the extended regex PATTERN.
bad() {
	local name=$1 want=$2 pat=$3 lines
	shift 3
	run "$@"
	lines=$(awk 'END { print NR }' "$T/err")
	[ -n "${SHOW_ERR:-}" ] && echo "     stderr: $err"
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

# Is stdin valid JSON?  Prints nothing.
json_ok() { python3 -c 'import json,sys; json.load(sys.stdin)' 2>/dev/null; }

# Evaluate a Python expression over the JSON document on stdin as "d".
json_get() { python3 -c 'import json,sys; d=json.load(sys.stdin); print('"$1"')'; }

# Are all bytes of the file NUL?
all_zero() { [ "$(tr -d '\0' <"$1" | wc -c)" -eq 0 ]; }

[ -x "$S" ] || { no "strata binary at $S"; nvram=$("$S" --data "$D" devices | awk '$2 == "nvram" { print $NF }')
check "NVRAM device exists" test -f "$nvram"
good "destroy --yes" destroy --yes
check "destroy removed the directory" test ! -e "$D"
check "destroy removed the NVRAM device" test ! -e "$nvram"

echo "$pass passed, $fail failed"; exit 1; }

echo "--- help and usage"
good "help" --help && check "help lists commands" grep -q "obj create" "$T/out"
good "help obj put" help obj put && check "command help" grep -q "obj put ID" "$T/out"
good "obj put --help" obj put --help && check "--help after command" grep -q "block-size" "$T/out"
good "obj --help lists group" obj --help && check "group help" grep -q "obj rm" "$T/out"
check "help made no store" test ! -e "$D"
bad "no command" 2 "no command" 
bad "unknown command" 2 "unknown command 'frob'" frob
bad "unknown sub-command" 2 "unknown command 'obj frob'" obj frob
bad "group alone" 2 "needs a sub-command" idx
bad "unknown option" 2 "unknown option '--bogus'" obj ls --bogus
bad "unknown short option" 2 "unknown option '-z'" -z obj ls
bad "option for another command" 2 "--tier does not apply" obj ls --tier flash
bad "option needs value" 2 "--data needs a value" obj ls --data
bad "missing argument" 2 "missing arguments" obj create
bad "too many arguments" 2 "too many arguments" obj stat @a @b
bad "help of unknown command" 2 "unknown command 'nope'" help nope
check "usage errors made no store" test ! -e "$D"

echo "--- objects"
good "obj ls on a new store" obj ls && check "new store has no objects" test -z "$out"
check "store created on first use" test -d "$D"
good "obj ls --json" --json obj ls && check "empty list is []" test "$out" = "[]"
good "obj create default" obj create @plain
good "obj create 512 B nvram" obj create @n --block-size 512 --tier nvram
good "obj create 4K flash" obj create @f --block-size 4K --tier flash
good "obj create 1M sas" obj create @s --block-size 1M --tier sas
good "obj create --block-shift 13" obj create 1:2 --block-shift 13
good "obj create -q prints nothing" -q obj create @quiet && check "-q is quiet" test -z "$out"
good "obj stat --json" obj stat @n --json
check "stat JSON is valid" json_ok <"$T/out"
check "stat shows 512 B on nvram" test "$(json_get 'd["block_size"], d["tier"]' <"$T/out")" = "512 nvram"
good "obj stat default" --json obj stat @plain
check "default is 4 KiB on flash" test "$(json_get 'd["block_size"], d["tier"]' <"$T/out")" = "4096 flash"
good "obj stat shift 13" --json obj stat 1:2
check "block shift 13 is 8 KiB" test "$(json_get 'd["block_size"], d["id"]' <"$T/out")" = "8192 1:2"
good "obj stat text" obj stat @s && check "stat text names tier" grep -q "sas" "$T/out"

head -c 1500 /dev/urandom >"$T/small"
good "obj write file" obj write @n 0 "$T/small"
good "obj read to file" obj read @n 0 3 "$T/small.out"
check "read size is 3 blocks" test "$(stat -c %s "$T/small.out")" -eq 1536
check "read data matches" cmp -n 1500 "$T/small" "$T/small.out"
tail -c 36 "$T/small.out" >"$T/pad"
check "last block is zero-padded" all_zero "$T/pad"
good "obj read unwritten blocks" obj read @n 100 4 "$T/zero.out"
check "unwritten blocks are zeros" all_zero "$T/zero.out"
printf 'hello, strata\n' | "$S" --data "$D" obj write @f 5 - >/dev/null 2>"$T/err"
check "obj write from stdin" test $? -eq 0 -a ! -s "$T/err"
good "obj read to stdout" obj read @f 5 1
check "stdout read matches" test "$(head -c 14 "$T/out")" = "hello, strata"
good "obj stat after write" --json obj stat @f
check "size grew to 6 blocks" test "$(json_get 'd["size_blocks"]' <"$T/out")" -eq 6

head -c $((3 * 1024 * 1024)) /dev/urandom >"$T/big"
good "obj put 3 MiB" obj put @big "$T/big"
good "obj get" obj get @big "$T/big.out"
check "put/get round trip" cmp "$T/big" "$T/big.out"
head -c $((1024 * 1024 + 123)) /dev/urandom >"$T/odd"
good "obj put odd size on sas" obj put @odd "$T/odd" --block-size 64K --tier sas
good "obj stat odd" --json obj stat @odd
check "byte size recorded" test "$(json_get 'd["size_bytes"], d["size_blocks"], d["tier"]' <"$T/out")" = "1048699 17 sas"
good "obj get odd to stdout" obj get @odd -
check "get to stdout is cut to the byte size" cmp "$T/odd" "$T/out"
: >"$T/empty"
good "obj put empty file" obj put @empty "$T/empty"
good "obj get empty object" obj get @empty "$T/empty.out"
check "empty round trip" test -f "$T/empty.out" -a ! -s "$T/empty.out"
"$S" --data "$D" -q obj put @stdin - <"$T/small" 2>"$T/err"
check "obj put from stdin" test $? -eq 0 -a ! -s "$T/err"
good "obj get of stdin put" obj get @stdin "$T/stdin.out"
check "stdin put round trip" cmp "$T/small" "$T/stdin.out"
good "obj put --json" --json obj put @j "$T/small"
check "put JSON is valid" json_ok <"$T/out"

if command -v script >/dev/null 2>&1; then
	head -c $((9 * 1024 * 1024)) /dev/zero >"$T/nine"
	script -qec "'$S' --data '$D' obj put @tty '$T/nine'" /dev/null >"$T/tty" 2>&1
	check "progress bar on a terminal" grep -q "put \[#*\] 100%" "$T/tty"
	script -qec "'$S' --data '$D' -q obj get @tty '$T/nine.out'" /dev/null >"$T/tty" 2>&1
	check "no progress bar with -q" test ! -s "$T/tty"
	check "terminal put/get round trip" cmp "$T/nine" "$T/nine.out"
	good "obj rm @tty" obj rm @tty
fi
for cmd in "obj create @js" "obj write @js 0 $T/small" \
	"obj read @js 0 1 $T/js.out" "obj rm @js" \
	"idx create @jx" "idx put @jx a b" "idx get @jx a" "idx del @jx a" \
	"idx rm @jx" "bench --ops 5 --block-size 4K" "stats"; do
	# shellcheck disable=SC2086
	good "--json $cmd" --json $cmd && check "--json $cmd is valid JSON" json_ok <"$T/out"
done
good "obj ls" obj ls
check "obj ls lists 11 objects" test "$(wc -l <"$T/out")" -eq 11
check "obj ls has 1:2" grep -qx "1:2" "$T/out"
good "obj ls --json" --json obj ls
check "obj ls JSON has 11 ids" test "$(json_get 'len(d)' <"$T/out")" -eq 11
good "obj create @gone" obj create @gone
good "obj rm" obj rm @gone
STRATA_DATA=$D "$S" obj ls >"$T/env.out" 2>"$T/err"
check "STRATA_DATA selects the store" test $? -eq 0 -a "$(wc -l <"$T/env.out")" -eq 11

echo "--- indices"
good "idx create" idx create @i
good "idx put" idx put @i k01 v01
good "idx get" idx get @i k01 && check "idx get value" test "$out" = "v01"
good "idx put --overwrite" idx put @i k01 "new value" --overwrite
good "idx get overwritten" idx get @i k01 && check "value replaced" test "$out" = "new value"
for n in $(seq 2 30); do
	"$S" --data "$D" -q idx put @i "$(printf 'k%02d' "$n")" "v$n" 2>>"$T/puts.err" || no "idx put k$n"
done
check "30 puts quiet" test ! -s "$T/puts.err"
good "idx dump" idx dump @i
check "dump has 30 records" test "$(wc -l <"$T/out")" -eq 30
check "dump is in key order" sh -c "cut -f1 '$T/out' | sort -c"
check "dump record format" test "$(sed -n 2p "$T/out")" = "$(printf 'k02\tv2')"
good "idx next from key" idx next @i k10 --count 3
check "next gives k10 k11 k12" test "$(cut -f1 "$T/out" | tr '\n' ' ')" = "k10 k11 k12 "
good "idx next --exclude-start" idx next @i k10 --count 2 --exclude-start
check "exclude start gives k11 k12" test "$(cut -f1 "$T/out" | tr '\n' ' ')" = "k11 k12 "
good "idx next from the first" idx next @i
check "next defaults to 10 records from k01" test "$(wc -l <"$T/out")" -eq 10 -a "$(head -c 3 "$T/out")" = "k01"
good "idx next between keys" idx next @i k295 --count 100
check "next stops at the end" test "$(cut -f1 "$T/out" | tr '\n' ' ')" = "k30 "
good "idx next --json" --json idx next @i k05 --count 2
check "next JSON" test "$(json_get '[r["key"] for r in d]' <"$T/out")" = "['k05', 'k06']"
good "idx dump --json" --json idx dump @i
check "dump JSON has 30 records" test "$(json_get 'len(d)' <"$T/out")" -eq 30
good "idx put --hex" idx put @i --hex 00ff 0102
good "idx get --hex" idx get @i --hex 00ff && check "hex value" test "$out" = "0102"
good "idx next --hex" idx next @i --hex 00 --count 1 && check "hex next" test "$out" = "$(printf '00ff\t0102')"
good "idx put awkward key" idx put @i "$(printf 'q"b\\\\s\tn\nx')" "$(printf 'v\001')"
good "idx put non-UTF-8 value" idx put @i --hex 7a7a ff80c3
good "idx dump --json awkward" --json idx dump @i
check "JSON escapes quotes, backslashes, controls" json_ok <"$T/out"
check "JSON keeps the awkward key" test "$(json_get 'any(r["key"] == "q\"b\\\\s\tn\nx" for r in d)' <"$T/out")" = True
check "non-UTF-8 bytes as \\u00XX" test "$(json_get 'd[-1]["value"] == "\u00ff\u0080\u00c3"' <"$T/out")" = True
good "idx get escaped text" idx get @i "$(printf 'q"b\\\\s\tn\nx')"
check "text output escapes control bytes" test "$out" = 'v\x01'
good "idx del" idx del @i k30
good "idx dump after del" idx dump @i
check "deleted record gone" test "$(grep -c '^k30' "$T/out")" -eq 0
good "idx create second" idx create @i2
good "idx ls" idx ls && check "idx ls lists 2" test "$(wc -l <"$T/out")" -eq 2
good "idx ls --json" --json idx ls && check "idx ls JSON" test "$(json_get 'len(d)' <"$T/out")" -eq 2
good "idx dump empty index" idx dump @i2 && check "empty dump prints nothing" test -z "$out"
good "idx rm" idx rm @i2
good "idx ls after rm" idx ls && check "idx ls lists 1" test "$(wc -l <"$T/out")" -eq 1

echo "--- management"
good "devices" devices
check "devices lists three tiers" test "$(awk 'NR > 1 { print $2 }' "$T/out" | sort | tr '\n' ' ')" = "flash nvram sas "
good "devices --json" --json devices
check "devices JSON" test "$(json_get 'sorted(x["tier"] for x in d)' <"$T/out")" = "['flash', 'nvram', 'sas']"
good "stats" stats && check "stats shows obj.write" grep -q "obj.write" "$T/out"
good "stats --json" --json stats
check "stats JSON counts writes" test "$(json_get '[s["count"] > 0 for s in d if s["op"] == "obj.write"][0]' <"$T/out")" = True
good "bench small" bench --ops 40
check "bench reports all tests" test "$(grep -cE '^(obj write|obj read|idx put|idx get)' "$T/out")" -eq 6
good "bench --json one size" --json bench --ops 20 --block-size 64K
check "bench JSON" test "$(json_get '[r["test"] for r in d]' <"$T/out")" = "['obj write 64.0 KiB', 'obj read 64.0 KiB', 'idx put', 'idx get']"
good "bench left nothing behind" obj ls
check "bench removed its objects" test "$(wc -l <"$T/out")" -eq 11

echo "--- entities to delete before the snapshot"
good "obj create @del" obj create @del
good "obj rm @del" obj rm @del
good "idx create @deli" idx create @deli
good "idx rm @deli" idx rm @deli

# The store's visible state: ids, index records, object attributes.
snapshot() {
	{
		"$S" --data "$D" obj ls
		"$S" --data "$D" idx ls
		"$S" --data "$D" idx dump @i --hex
		for o in @plain @n @f @s 1:2 @big @odd @empty @stdin @j @quiet; do
			"$S" --data "$D" --json obj stat "$o" |
				python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("mtime_ns"); print(sorted(d.items()))'
		done
	} 2>&1
}
snapshot >"$T/before"

echo "--- bad input"
long=$(head -c 496 /dev/zero | tr '\0' k)
bad "block size not a power of two" 2 "block size 1000 is not a power of two" obj create @x --block-size 1000
bad "block size too small" 1 "create object @x" obj create @x --block-size 256
bad "block size too large" 1 "create object @x" obj create @x --block-size 128M
bad "block shift too large" 1 "create object @x" obj create @x --block-shift 27
bad "block size not a size" 2 "bad block size 'big'" obj create @x --block-size big
bad "both block options" 2 "not both" obj create @x --block-size 4K --block-shift 12
bad "unknown tier" 2 "unknown tier 'tape'" obj create @x --tier tape
bad "create existing object" 1 "create object @n: .*exist" obj create @n
bad "create existing index" 1 "create index @i: .*exist" idx create @i
bad "bad id syntax" 2 "bad id 'nope'" obj create nope
bad "bad hex id" 2 "bad id '12:zz'" obj stat 12:zz
bad "reserved id" 1 "create object 0:5" obj create 0:5
bad "read of missing object" 1 "open object @missing: .*" obj read @missing 0 1
bad "stat of missing object" 1 "open object @missing" obj stat @missing
bad "rm of missing object" 1 "open object @missing" obj rm @missing
bad "get of missing object" 1 "open object @missing" obj get @missing "$T/x"
check "failed get made no file" test ! -e "$T/x"
bad "write to missing object" 1 "open object @missing" obj write @missing 0 "$T/small"
bad "index is not an object" 1 "open object @i" obj stat @i
bad "object is not an index" 1 "open index @n" idx dump @n
bad "write of missing file" 1 "open '$T/nofile'" obj write @n 0 "$T/nofile"
bad "put of missing file" 1 "open '$T/nofile'" obj put @p "$T/nofile"
bad "put made no object" 1 "open object @p" obj stat @p
bad "put over existing object" 1 "create object @n" obj put @n "$T/small"
bad "get into missing directory" 1 "create '$T/nodir/x'" obj get @n "$T/nodir/x"
bad "read start not a number" 2 "START_BLOCK 'x' is not a number" obj read @n x 1
bad "read of zero blocks" 2 "NR_BLOCKS must be at least 1" obj read @n 0 0
bad "read past the last block" 2 "last block" obj read @n 281474976710655 2
bad "read missing argument" 2 "missing arguments" obj read @n 0
bad "key longer than 495 bytes" 1 "idx put @i key .*: .*" idx put @i "$long" v
bad "get with too long key" 1 "idx get @i key" idx get @i "$long"
bad "put of existing key" 1 "key exists" idx put @i k01 other
bad "get of missing key" 1 "idx get @i key 'nokey': .*no such key" idx get @i nokey
bad "del of missing key" 1 "idx del @i key 'nokey': .*no such key" idx del @i nokey
bad "next past the end" 1 "idx next @i: .*no record at or after key 'zzz'" idx next @i zzz
bad "next after the last key" 1 "no record after key 'zz'" idx next @i zz --exclude-start
bad "next count zero" 2 "count must be at least 1" idx next @i --count 0
bad "next count not a number" 2 "count 'many' is not a number" idx next @i --count many
bad "bad hex key" 2 "not an even number of hex digits" idx put @i --hex 0g 00
bad "odd hex key" 2 "not an even number of hex digits" idx get @i --hex abc
bad "ops of missing index" 1 "open index @missing" idx get @missing k
bad "put to deleted index" 1 "open index @deli" idx put @deli k v
bad "dump of deleted index" 1 "open index @deli" idx dump @deli
bad "rm of deleted index" 1 "open index @deli" idx rm @deli
bad "read of deleted object" 1 "open object @del" obj read @del 0 1
bad "stat of deleted object" 1 "open object @del" obj stat @del
bad "rm of deleted object" 1 "open object @del" obj rm @del
bad "stats extra argument" 2 "too many arguments" stats now
bad "bench zero ops" 2 "ops must be at least 1" bench --ops 0
bad "store in a file" 1 "open store|create data directory" --data "$T/small" obj ls
bad "bad device size" 2 "bad device size" --dev-size lots obj ls

snapshot >"$T/after"
check "store unchanged by the bad cases" cmp -s "$T/before" "$T/after"
[ -s "$T/before" ] && ! grep -q '^strata:' "$T/before"
check "snapshot read the whole store" test $? -eq 0

bad "destroy needs --yes" 2 "add --yes" destroy
bad "destroy of no store" 1 "destroy store '$T/none'" --data "$T/none" destroy --yes
check "store still there" test -d "$D/devices"
good "stats --reset" stats --reset
good "stats --json after reset" --json stats
check "reset cleared the counts" test "$(json_get 'sum(s["count"] for s in d if s["op"] != "commit")' <"$T/out")" -eq 0

nvram=$("$S" --data "$D" devices | awk '$2 == "nvram" { print $NF }')
check "NVRAM device exists" test -f "$nvram"
good "destroy --yes" destroy --yes
check "destroy removed the directory" test ! -e "$D"
check "destroy removed the NVRAM device" test ! -e "$nvram"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
