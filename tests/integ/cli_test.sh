#!/usr/bin/env bash
# cli_test.sh BUILD — asserting test of every strata command, with good and
# bad input, on stores in a temporary directory: the main one (default
# configuration, 32 MiB devices), a second one for device failure, repair,
# rebalance, scrub and SMR cleaning, and stores made from YAML files.
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
D2=$T/data2
C=$T/conf
STORE=$D
DEVSIZE=32M
pass=0
fail=0

# Remove the store with its devices (NVRAM included) and the temp dir.
cleanup() {
	local d
	# the --meta-nvram case moves the store's NVRAM metadata away for a
	# moment: put it back so that the destroy below removes it
	[ -n "${mnlink:-}" ] && [ -d "$mnlink.away" ] && mv "$mnlink.away" "$mnlink"
	for d in "$D" "$D2" "$C" "$T/c2" "$T/c3" "$T/metanv"; do
		[ -d "$d" ] && "$S" --data "$d" -q destroy --yes 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }

# Run strata on the store $STORE (made with devices of $DEVSIZE unless it
# is empty); sets rc, out (stdout) and err (stderr).
run() {
	"$S" --data "$STORE" ${DEVSIZE:+--dev-size "$DEVSIZE"} "$@" \
		>"$T/out" 2>"$T/err"
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

[ -x "$S" ] || { no "strata binary at $S"; echo "$pass passed, $fail failed"; exit 1; }

echo "--- help and usage"
good "help" --help && check "help lists commands" grep -q "obj create" "$T/out"
good "help obj put" help obj put && check "command help" grep -q "obj put ID" "$T/out"
good "obj put --help" obj put --help && check "--help after command" grep -q "block-size" "$T/out"
good "obj --help lists group" obj --help && check "group help" grep -q "obj rm" "$T/out"
good "help lists the new commands" --help
for w in "strata tiers" "strata pools" "strata device fail DEV" \
	"strata device replace DEV NEWPATH" "strata repair" "strata rebalance" \
	"strata scrub" "strata smr clean" "--config FILE" "--model"; do
	check "help names '$w'" grep -qF -- "$w" "$T/out"
done
good "obj create --help" obj create --help
check "obj create help has the layout options" test "$(grep -cE -- '--(layout|pool|data|parity|spare|copies|unit) ' "$T/out")" -ge 7
good "help device" help device && check "device group help" grep -q "device replace" "$T/out"
good "smr clean --help" smr clean --help && check "smr clean help has --live" grep -q -- "--live PCT" "$T/out"
good "repair --help" repair --help && check "repair help says it resumes" grep -q "resumes" "$T/out"
good "help idx put" help idx put
check "idx put help shows the list form" grep -qF "ID KEY VALUE [KEY VALUE ...]" "$T/out"
good "help idx del" help idx del
check "idx del help shows the list form" grep -qF "ID KEY [KEY ...]" "$T/out"
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
bad "device alone" 2 "'device' needs a sub-command" device
bad "unknown device sub-command" 2 "unknown command 'device frob'" device frob
bad "smr alone" 2 "'smr' needs a sub-command" smr
bad "device fail without DEV" 2 "missing arguments" device fail
bad "device replace without NEWPATH" 2 "missing arguments" device replace flash0
bad "device replace extra argument" 2 "too many arguments" device replace flash0 a b
bad "repair extra argument" 2 "too many arguments" repair now
bad "smr clean two devices" 2 "too many arguments" smr clean smr0 smr1
bad "--live for repair" 2 "--live does not apply" repair --live 5
bad "--layout for obj ls" 2 "--layout does not apply" obj ls --layout mirror
bad "--live not a number" 2 "--live 'x' is not a number" smr clean --live x
bad "--live above 100" 2 "--live 101 is not a percentage" smr clean --live 101
bad "--config empty" 2 "--config needs a file" --config "" obj ls
bad "--model takes no value" 2 "option --model takes no value" --model=1 obj ls
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
good "obj create on smr" obj create @smr --tier smr
check "smr create message" grep -q "4096-byte blocks on smr" "$T/out"
good "obj stat smr" --json obj stat @smr
check "plain object on smr" test "$(json_get 'd["layout"], d["tier"]' <"$T/out")" = "plain smr"
good "obj stat text of plain" obj stat @smr
check "plain stat text: layout and tier lines" test "$(grep -cE '^(layout +plain|tier +smr \(device 13\))$' "$T/out")" -eq 2

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
check "obj ls lists 12 objects" test "$(wc -l <"$T/out")" -eq 12
check "obj ls has 1:2" grep -qx "1:2" "$T/out"
good "obj ls --json" --json obj ls
check "obj ls JSON has 12 ids" test "$(json_get 'len(d)' <"$T/out")" -eq 12
good "obj create @gone" obj create @gone
good "obj rm" obj rm @gone
STRATA_DATA=$D "$S" obj ls >"$T/env.out" 2>"$T/err"
check "STRATA_DATA selects the store" test $? -eq 0 -a "$(wc -l <"$T/env.out")" -eq 12

echo "--- layouts"
good "pdclust 4+2+1, 16 KiB units" obj create @pd --layout pdclust --pool flash --data 4 --parity 2 --spare 1 --unit 16K
check "create names the layout" grep -q "4096-byte blocks, pdclust 4+2+1 on pool flash, 16.0 KiB units" "$T/out"
good "stat pdclust" --json obj stat @pd
check "stat JSON is valid" json_ok <"$T/out"
check "pdclust geometry" test "$(json_get 'd["layout"], d["pool"], d["pool_index"], d["data_units"], d["parity_units"], d["spare_units"], d["unit_size"]' <"$T/out")" = "pdclust flash 1 4 2 1 16384"
check "no tier for pdclust" test "$(json_get '"tier" in d or "device" in d' <"$T/out")" = False
good "stat pdclust text" obj stat @pd
check "stat text: geometry, unit, pool" test "$(grep -cE '^(layout +pdclust|geometry +4\+2\+1 .*|unit size +16384 \(16.0 KiB\)|pool +flash \(index 1\))$' "$T/out")" -eq 4
good "pdclust defaults" obj create @pdd --layout pdclust --pool flash
good "stat pdclust defaults" --json obj stat @pdd
check "pdclust defaults are 4+2+0, 64 KiB units" test "$(json_get 'd["data_units"], d["parity_units"], d["spare_units"], d["unit_size"]' <"$T/out")" = "4 2 0 65536"
good "--data after the command, --data DIR before it" obj create @pd5 --layout pdclust --pool flash --data 5
good "stat --data 5" --json obj stat @pd5
check "--data alone keeps parity 2" test "$(json_get 'd["data_units"], d["parity_units"]' <"$T/out")" = "5 2"
good "--parity alone" obj create @pk --layout pdclust --pool 1 --parity 1
good "stat --parity 1" --json obj stat @pk
check "--parity alone keeps data 4; pool by index" test "$(json_get 'd["data_units"], d["parity_units"], d["pool"]' <"$T/out")" = "4 1 flash"
good "mirror of 3" obj create @mi --layout mirror --pool flash --copies 3 --spare 1
check "mirror create message" grep -q "mirror 3 copies +1 spare on pool flash, 64.0 KiB units" "$T/out"
good "stat mirror" --json obj stat @mi
check "mirror geometry" test "$(json_get 'd["layout"], d["copies"], d["spare_units"], d["pool"], "parity_units" in d' <"$T/out")" = "mirror 3 1 flash False"
good "mirror default copies" --json obj create @m2 --layout mirror --pool sas --unit 1M
check "mirror JSON create" test "$(json_get 'd["layout"], d["copies"], d["pool"], d["unit_size"]' <"$T/out")" = "mirror 2 sas 1048576"
good "stat mirror text" obj stat @mi
check "mirror stat text" grep -qE '^geometry +3 copies, 1 spare$' "$T/out"
good "plain by --layout" --json obj create @pl --layout plain --tier sas
check "plain on sas" test "$(json_get 'd["layout"], d["tier"]' <"$T/out")" = "plain sas"
head -c $((2 * 1048576 + 99)) /dev/urandom >"$T/lay"
good "obj put pdclust" obj put @pdput "$T/lay" --layout pdclust --pool flash --data 3 --parity 2 --unit 4K
check "put names the layout" grep -q "pdclust 3+2+0 on pool flash, 4.0 KiB units" "$T/out"
good "obj get pdclust" obj get @pdput "$T/lay.out"
check "pdclust put/get round trip" cmp "$T/lay" "$T/lay.out"
good "obj put mirror --json" --json obj put @miput "$T/lay" --layout mirror --pool flash --copies 4 --block-size 64K
check "put JSON has the layout" test "$(json_get 'd["layout"], d["copies"], d["unit_size"], d["bytes"]' <"$T/out")" = "mirror 4 65536 2097251"
good "obj get mirror" obj get @miput "$T/lay.out"
check "mirror put/get round trip" cmp "$T/lay" "$T/lay.out"
good "obj write and read pdclust" obj write @pd 3 "$T/small"
good "obj read pdclust" obj read @pd 3 1 "$T/pd.out"
check "pdclust block round trip" cmp -n 1500 "$T/small" "$T/pd.out"

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

echo "--- idx put and idx del of several records"
good "idx create @L" idx create @L
good "idx put of 3 records" idx put @L a 1 b 2 c 3
check "put list says how many" test "$out" = "stored 3 records in @L"
good "idx dump @L" idx dump @L
check "the 3 records in order" test "$(tr '\t\n' ':,' <"$T/out")" = "a:1,b:2,c:3,"
good "idx put list --json" --json idx put @L d 4 e 5
check "put list JSON counts the records" test "$(json_get 'd["stored"], d["records"]' <"$T/out")" = "True 2"
good "idx put list --overwrite" idx put @L a 10 b 20 --overwrite
good "idx get a overwritten" idx get @L a && check "a is 10" test "$out" = "10"
good "idx put list --hex" idx put @L --hex 00 01 0102 0304
good "idx get --hex from the list" idx get @L --hex 0102 && check "hex list value" test "$out" = "0304"
bad "a del list in hex of text keys" 2 "KEY of record 1 'd' is not an even number of hex digits" idx del @L --hex d e
good "idx del of 2 records" idx del @L d e
check "del list output" test "$out" = "deleted 2 records from @L"
good "idx del --json list" --json idx del @L --hex 00 0102
check "del list JSON counts the records" test "$(json_get 'd["deleted"], d["records"]' <"$T/out")" = "True 2"
bad "put list stops at the first existing key" 1 \
	"idx put @L key 'b' \(record 2 of 3; the 1 before it stored\): File exists: key exists" \
	idx put @L f 6 b 99 g 7
good "dump after the failed put list" idx dump @L
check "the record before it stored, b kept, the one after not stored" \
	test "$(tr '\t\n' ':,' <"$T/out")" = "a:10,b:20,c:3,f:6,"
bad "del list stops at the first missing key" 1 \
	"idx del @L key 'zz' \(record 2 of 3; the 1 before it deleted\): .*no such key" \
	idx del @L f zz c
good "dump after the failed del list" idx dump @L
check "the key before it deleted, the one after kept" \
	test "$(tr '\t\n' ':,' <"$T/out")" = "a:10,b:20,c:3,"
good "idx put of 512 records" idx put @L $(for n in $(seq 1 512); do echo "m$n x$n"; done)
good "idx dump of 515 records" idx dump @L && check "515 records" test "$(wc -l <"$T/out")" -eq 515
good "idx del of 512 records" idx del @L $(seq -f 'm%g' 1 512)
good "idx dump after" idx dump @L && check "3 records left" test "$(wc -l <"$T/out")" -eq 3

echo "--- management"
good "devices" devices
check "devices lists four tiers" test "$(awk 'NR > 1 { print $3 }' "$T/out" | sort -u | tr '\n' ' ')" = "flash nvram sas smr "
check "devices names" test "$(awk 'NR > 1 { printf "%s ", $2 }' "$T/out")" = "nvram0 flash0 flash1 flash2 flash3 flash4 flash5 flash6 flash7 sas0 sas1 sas2 sas3 smr0 "
check "devices all online" test "$(awk 'NR > 1 { print $10 }' "$T/out" | sort -u)" = "online"
check "smr row: zone size times zones is the size, all empty" test "$(awk '$2 == "smr0" { print $16, $15 * $17, ($18 == $17) }' "$T/out")" = "MiB 32 1"
check "other rows show no zones" test "$(awk 'NR > 1 && $2 != "smr0" { print $15 $16 $17 }' "$T/out" | sort -u)" = "---"
good "devices --json" --json devices
check "devices JSON" test "$(json_get 'sorted(set(x["tier"] for x in d))' <"$T/out")" = "['flash', 'nvram', 'sas', 'smr']"
check "devices JSON has 14 devices, states, errors, flags" test "$(json_get 'len(d), set(x["state"] for x in d), sum(x["errors"] for x in d), any(x["rebalance"] or x["model"] for x in d)' <"$T/out")" = "14 {'online'} 0 False"
check "zones only on smr" test "$(json_get '[(x["name"], x["zones"] > 0, x["zones_empty"] <= x["zones"], x["zone_size"] > 0) for x in d if x["zones"] or x["zone_size"]]' <"$T/out")" = "[('smr0', True, True, True)]"
good "devices --model" --model --json devices
check "--model turns the model on for every device" test "$(json_get 'all(x["model"] for x in d)' <"$T/out")" = True
good "tiers" tiers
check "tiers text" test "$(awk 'NR > 1 { printf "%s:%s ", $1, $2 }' "$T/out")" = "nvram:1 flash:8 sas:4 smr:1 "
good "tiers --json" --json tiers
check "tiers JSON sizes" test "$(json_get '[(t["tier"], t["devices"], t["offline"], t["size_bytes"] // 1048576, t["free_bytes"] <= t["size_bytes"]) for t in d]' <"$T/out")" = "[('nvram', 1, 0, 32, True), ('flash', 8, 0, 256, True), ('sas', 4, 0, 128, True), ('smr', 1, 0, 32, True)]"
check "flash is in use" test "$(json_get '[t["free_bytes"] < t["size_bytes"] for t in d if t["tier"] == "flash"][0]' <"$T/out")" = True
good "pools" pools
check "pools text lists members" grep -qE '^1 +flash +8 .* flash0\(1\) flash1\(2\) .* flash7\(8\)$' "$T/out"
good "pools --json" --json pools
check "pools JSON" test "$(json_get '[(p["index"], p["name"], [m["index"] for m in p["devices"]]) for p in d]' <"$T/out")" = "[(0, 'nvram', [0]), (1, 'flash', [1, 2, 3, 4, 5, 6, 7, 8]), (2, 'sas', [9, 10, 11, 12]), (3, 'smr', [13])]"
check "pool member names" test "$(json_get '[m["name"] for m in d[2]["devices"]]' <"$T/out")" = "['sas0', 'sas1', 'sas2', 'sas3']"
good "stats" stats && check "stats shows obj.write" grep -q "obj.write" "$T/out"
good "stats --json" --json stats
check "stats JSON counts writes" test "$(json_get '[s["count"] > 0 for s in d if s["op"] == "obj.write"][0]' <"$T/out")" = True
good "bench small" bench --ops 16
check "bench reports all tests" test "$(grep -cE '^(obj write|obj read|idx put|idx get)' "$T/out")" -eq 6
good "bench --json one size" --json bench --ops 20 --block-size 64K
check "bench JSON" test "$(json_get '[r["test"] for r in d]' <"$T/out")" = "['obj write 64.0 KiB', 'obj read 64.0 KiB', 'idx put', 'idx get']"
good "bench left nothing behind" obj ls
check "bench removed its objects" test "$(wc -l <"$T/out")" -eq 21

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
		for o in @plain @n @f @s 1:2 @big @odd @empty @stdin @j @quiet \
			@smr @pd @pdd @pd5 @pk @mi @m2 @pl @pdput @miput; do
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
bad "unknown tier" 2 "unknown tier 'tape' \(use nvram, flash, sas or smr\)" obj create @x --tier tape
bad "unknown pool" 1 "create object @x: Invalid argument: no pool named 'nope' \(pools: nvram, flash, sas, smr\)" obj create @x --layout pdclust --pool nope
bad "put to unknown pool" 1 "create object @x: .*no pool named 'fast'" obj put @x "$T/small" --layout mirror --pool fast
bad "pool index out of range" 1 "no pool named '9'" obj create @x --layout mirror --pool 9
bad "unknown layout" 2 "unknown layout 'raid5' \(use plain, pdclust, mirror or composite\)" obj create @x --layout raid5
bad "unit not a power of two" 2 "unit size 3K is not a power of two" obj create @x --layout pdclust --pool flash --unit 3K
bad "unit too small" 2 "unit size 2K is outside 4K..16M" obj create @x --layout pdclust --pool flash --unit 2K
bad "unit too large" 2 "unit size 32M is outside 4K..16M" obj create @x --layout mirror --pool flash --unit 32M
bad "unit not a size" 2 "bad unit size 'big'" obj create @x --layout mirror --pool flash --unit big
bad "unit smaller than block" 1 "create object @x: Invalid argument: .*unit shift 12 smaller than block shift 16" obj create @x --layout pdclust --pool flash --unit 4K --block-size 64K
bad "mirror with --parity" 2 "a mirror has no parity: --parity does not apply" obj create @x --layout mirror --pool flash --parity 1
bad "mirror with --data" 2 "a mirror takes --copies, not --data" obj create @x --layout mirror --pool flash --data 2
bad "pdclust with --copies" 2 "--copies applies to mirror only" obj create @x --layout pdclust --pool flash --copies 2
bad "one copy" 2 "--copies must be at least 2" obj create @x --layout mirror --pool flash --copies 1
bad "zero data units" 2 "--data must be at least 1" obj create @x --layout pdclust --pool flash --data 0
bad "too many data units" 2 "--data 33 is more than 32 units" obj create @x --layout pdclust --pool flash --data 33
bad "--data a directory after the command" 2 "--data '/tmp' is not a number: after the command" obj create @x --data /tmp
bad "--spare not a number" 2 "--spare 'one' is not a number" obj create @x --layout mirror --pool flash --spare one
bad "geometry without --layout" 2 "--pool needs --layout pdclust or mirror" obj create @x --pool flash
bad "--unit without --layout" 2 "--unit needs --layout pdclust or mirror" obj put @x "$T/small" --unit 64K
bad "geometry with plain" 2 "--copies does not apply to the plain layout" obj create @x --layout plain --copies 3
bad "--tier with pdclust" 2 "--tier applies to the plain and composite layouts only" obj create @x --layout pdclust --tier sas
bad "group wider than the pool" 1 "create object @x: Invalid argument: " obj create @x --layout pdclust --pool sas --data 4 --parity 2
bad "mirror wider than the pool" 1 "create object @x: Invalid argument: " obj create @x --layout mirror --pool smr --copies 2
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
bad "put list: a key without value" 2 "KEY VALUE pairs expected after the ID: 3 arguments, the last key 'nk2' has no value" idx put @i nk1 v nk2
bad "put list: empty key" 2 "KEY of record 2 of 2 is empty" idx put @i nk1 v "" v
bad "del list: empty key" 2 "KEY of record 2 of 2 is empty" idx del @i k01 ""
bad "put list: bad hex in record 2" 2 "KEY of record 2 '0g' is not an even number of hex digits" idx put @i --hex 0a0a 01 0g 02
bad "put list: bad hex value" 2 "VALUE of record 1 'zz' is not an even number of hex digits" idx put @i --hex 0a0a zz 0b0b 01
bad "put list: key too long in record 3" 1 "idx put @i key 'k+'\.\.\. \(496 bytes\) \(record 3 of 3\): .*longer than 495 bytes; nothing changed" idx put @i nk1 v nk2 v "$long" v
bad "del list: key too long" 1 "idx del @i key .*\(record 2 of 2\): .*longer than 495" idx del @i k01 "$long"
bad "del list of 513 keys" 2 "513 records: at most 512 per command" idx del @i $(seq 1 513)
bad "put list of 513 records" 2 "too many arguments" idx put @i $(seq 1 1026)
bad "put list to a missing index" 1 "open index @nolist" idx put @nolist a 1 b 2
bad "put list to no store" 2 "KEY VALUE pairs expected" --data "$T/nolist" idx put @i a 1 b
check "a refused list made no store" test ! -e "$T/nolist"
bad "cluster up --call-timeout without a number" 2 "--call-timeout 'soon' is not a duration" cluster up --dir "$T/nocl" --call-timeout soon
bad "cluster up --call-timeout bad unit" 2 "--call-timeout '3h': the unit must be ms or s" cluster up --dir "$T/nocl" --call-timeout 3h
bad "cluster up --call-timeout 0" 2 "--call-timeout 0s is outside 1ms..1h" cluster up --dir "$T/nocl" --call-timeout 0s
bad "cluster up --call-timeout past 1 h" 2 "--call-timeout 3601s is outside 1ms..1h" cluster up --dir "$T/nocl" --call-timeout 3601s
bad "cluster up --device-fill neither zero nor reserve" 2 "--device-fill 'fast': zero or reserve" cluster up --dir "$T/nocl" --device-fill fast
check "a refused cluster up made no directory" test ! -e "$T/nocl"
bad "--device-fill is for cluster up" 2 "--device-fill does not apply" idx ls --device-fill zero
bad "--call-timeout is for cluster up" 2 "--call-timeout does not apply" idx ls --call-timeout 3s
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

nvram=$("$S" --data "$D" devices | awk '$3 == "nvram" { print $NF }')
check "NVRAM device exists" test -f "$nvram"
good "destroy --yes" destroy --yes
check "destroy removed the directory" test ! -e "$D"
check "destroy removed the NVRAM device" test ! -e "$nvram"

echo "--- --meta-nvram: a store with its metadata on NVRAM (/dev/shm)"
STORE=$T/metanv
good "--meta-nvram idx create" --meta-nvram idx create @mn
good "idx put" idx put @mn k1 v1
good "reopen (no flag): idx get" idx get @mn k1
check "the record read back" test "$out" = v1
mnlink=$(readlink "$STORE/meta")
case "$mnlink" in /dev/shm/strata-*-meta) ok "meta links to $mnlink" ;;
*) no "meta links to /dev/shm/strata-*-meta (got '$mnlink')" ;; esac
mv "$mnlink" "$mnlink.away"
bad "metadata on NVRAM missing" 1 "$mnlink.*missing" idx get @mn k1
mv "$mnlink.away" "$mnlink"
good "destroy --yes (metadata on NVRAM)" destroy --yes
check "destroy removed the NVRAM metadata" test ! -e "$mnlink"
STORE=$D

echo "--- devices, repair, rebalance, scrub, smr clean (second store)"
STORE=$D2
head -c $((1048576 + 5)) /dev/urandom >"$T/r.pd"
head -c 700000 /dev/urandom >"$T/r.mi"
good "put pdclust on the second store" obj put @rpd "$T/r.pd" --layout pdclust --pool flash --data 4 --parity 2 --spare 1 --unit 16K
good "put mirror on the second store" obj put @rmi "$T/r.mi" --layout mirror --pool flash --copies 3 --unit 4K
good "device fail by name" device fail flash3
check "fail message" grep -qx "device 4 (flash3) failed: its units are read degraded until 'strata repair' rebuilds them" "$T/out"
good "device fail again by index" device fail 4
check "already failed" grep -qx "device 4 (flash3) is already failed" "$T/out"
good "device fail --json" --json device fail flash3
check "fail JSON" test "$(json_get 'd["device"], d["name"], d["state"], d["changed"]' <"$T/out")" = "4 flash3 failed False"
good "-q device fail" -q device fail flash3 && check "-q fail prints nothing" test -z "$out"
bad "fail of a nonexistent device" 1 "device fail nope: No such device: no device named 'nope' \(see 'strata devices'\)" device fail nope
bad "fail of an index past the end" 1 "device fail 14: No such device: device 14: no such device \(the store has 14, 0..13\)" device fail 14
bad "replace of an online device" 1 "device replace flash2: Device or resource busy: .*is online" device replace flash2 "$T/nf2.dev"
check "refused replace made no file" test ! -e "$T/nf2.dev"
bad "replace before repair" 1 "device replace flash3: Device or resource busy: .*failed but not repaired" device replace flash3 "$T/nf3.dev"
bad "replace with an empty path" 2 "NEWPATH is empty" device replace flash3 ""
good "devices after the failure" --json devices
check "flash3 failed, others online" test "$(json_get '[x["name"] for x in d if x["state"] != "online"], [x["state"] for x in d if x["name"] == "flash3"]' <"$T/out")" = "['flash3'] ['failed']"
good "devices text after the failure" devices
check "devices text shows failed" test "$(awk '$2 == "flash3" { print $10 }' "$T/out")" = failed
good "tiers after the failure" --json tiers
check "one flash device offline" test "$(json_get '[t["offline"] for t in d if t["tier"] == "flash"]' <"$T/out")" = "[1]"
good "degraded get of pdclust" obj get @rpd "$T/r.out" && check "degraded pdclust read is exact" cmp "$T/r.pd" "$T/r.out"
good "degraded get of mirror" obj get @rmi "$T/r.out" && check "degraded mirror read is exact" cmp "$T/r.mi" "$T/r.out"
good "repair" repair
check "repair summary line" grep -qE '^repair: [0-9]+ units, [0-9.]+ [KMG]iB read, [1-9][0-9]* rebuilt, 0 moved, 0 corrupt, 0 unrepairable, [1-9][0-9]* devices read from, [0-9.]+ s, [0-9.]+ MiB/s$' "$T/out"
check "repair summary is one line" test "$(wc -l <"$T/out")" -eq 1
good "devices after repair" --json devices
check "flash3 repaired" test "$(json_get '[x["state"] for x in d if x["name"] == "flash3"]' <"$T/out")" = "['repaired']"
good "repair --json with nothing left" --json repair
check "repair JSON" test "$(json_get 'd["walk"], d["complete"], d["resumed"], d["rebuilt"], d["unrepairable"], d["units"] > 0, d["groups_sharing_server"], sorted(d)' <"$T/out")" = "repair True False 0 0 True 0 ['bytes', 'complete', 'corrupt', 'devices_read', 'elapsed_ns', 'groups_sharing_server', 'mib_per_s', 'moved', 'rebuilt', 'resumed', 'seconds', 'units', 'unrepairable', 'walk', 'walk_total']"
check "repair JSON whole-walk totals equal this call's (not resumed)" test "$(json_get 'd["walk_total"]["units"] == d["units"], d["walk_total"]["rebuilt"] == d["rebuilt"], sorted(d["walk_total"])' <"$T/out")" = "True True ['corrupt', 'moved', 'rebuilt', 'units', 'unrepairable']"
bad "replace onto an existing file" 1 "device replace flash3: File exists: " device replace flash3 "$T/small"
(cd "$T" && "$S" --data "$D2" device replace flash3 nf3.dev >"$T/out" 2>"$T/err")
check "replace with a relative path" test $? -eq 0 -a ! -s "$T/err"
check "replace message" grep -qxF "device 4 replaced by $T/nf3.dev (now online, named nf3); 'strata rebalance' moves its units back" "$T/out"
good "devices after replace" --json devices
check "replacement kept with an absolute path" test "$(json_get '[(x["name"], x["path"], x["state"], x["rebalance"]) for x in d if x["index"] == 4]' <"$T/out")" = "[('nf3', '$T/nf3.dev', 'online', True)]"
good "devices text after replace" devices
check "devices text: rebal yes" test "$(awk '$2 == "nf3" { print $10, $12 }' "$T/out")" = "online yes"
bad "replace of a replaced device" 1 "device replace nf3: Device or resource busy: .*is online" device replace nf3 "$T/nf3b.dev"
good "rebalance --json" --json rebalance
check "rebalance moved units" test "$(json_get 'd["walk"], d["complete"], d["moved"] > 0, d["rebuilt"], d["unrepairable"]' <"$T/out")" = "rebalance True True 0 0"
good "rebalance text" rebalance
check "rebalance summary line" grep -qE '^rebalance: [0-9]+ units, .* 0 moved, 0 corrupt, 0 unrepairable, ' "$T/out"
good "devices after rebalance" --json devices
check "rebalance flag cleared" test "$(json_get '[x["rebalance"] for x in d if x["index"] == 4]' <"$T/out")" = "[False]"
good "scrub --json" --json scrub
check "scrub finds nothing" test "$(json_get 'd["walk"], d["complete"], d["corrupt"], d["rebuilt"], d["units"] > 0, d["devices_read"] > 0' <"$T/out")" = "scrub True 0 0 True True"
good "scrub not on a terminal" scrub
check "only the summary when not on a terminal" test "$(wc -l <"$T/out")" -eq 1 -a -n "$(grep '^scrub: ' "$T/out")"
good "get after rebalance" obj get @rpd "$T/r.out" && check "pdclust exact after rebalance" cmp "$T/r.pd" "$T/r.out"
good "get mirror after rebalance" obj get @rmi "$T/r.out" && check "mirror exact after rebalance" cmp "$T/r.mi" "$T/r.out"
if command -v script >/dev/null 2>&1; then
	script -qec "'$S' --data '$D2' scrub" /dev/null >"$T/tty" 2>&1
	check "walk progress on a terminal" grep -qE "scrub \[#+\] 100% [0-9]+ / [0-9]+ units" "$T/tty"
	script -qec "'$S' --data '$D2' -q scrub" /dev/null >"$T/tty" 2>&1
	check "no progress or summary with -q" test ! -s "$T/tty"
fi
head -c $((3 * 1048576)) /dev/urandom >"$T/s.big"
good "put on smr" obj put @s1 "$T/s.big" --tier smr
good "put more on smr" obj put @s2 "$T/s.big" --tier smr
good "rm frees smr space" obj rm @s1
good "smr clean" smr clean
check "smr clean summary" grep -qE '^smr clean: [0-9]+ zones reset, .* of live data moved, [0-9]+ records re-pointed \(zones at most 25% live\)$' "$T/out"
good "smr clean --json by name" --json smr clean smr0 --live 100
check "smr clean JSON" test "$(json_get 'd["device"], d["live_pct"], d["zones_reset"] >= 0, sorted(d)' <"$T/out")" = "13 100 True ['bytes_moved', 'device', 'live_pct', 'records_moved', 'zones_reset']"
good "smr clean --json of all" --json smr clean --live 0
check "smr clean JSON of all devices" test "$(json_get 'd["device"], d["live_pct"]' <"$T/out")" = "None 0"
good "smr clean by index" -q smr clean 13 && check "-q smr clean prints nothing" test -z "$out"
good "get after cleaning" obj get @s2 "$T/s.out" && check "smr data exact after cleaning" cmp "$T/s.big" "$T/s.out"
bad "smr clean of a flash device" 1 "smr clean flash1: Invalid argument: device 2 is not a zoned \(SMR\) device" smr clean flash1
bad "smr clean of an unknown device" 1 "smr clean smr9: No such device: no device named 'smr9'" smr clean smr9
for dev in flash4 flash5 flash6 flash7; do
	good "fail $dev" -q device fail "$dev"
done
bad "repair with more than K units lost" 1 "^strata: repair: Input/output error: .*could not be rebuilt" --json repair
check "unrepairable repair still prints its summary" test "$(json_get 'd["complete"], d["unrepairable"] > 0' <"$T/out")" = "False True"

echo "--- store configuration"
STORE=$C
DEVSIZE=
cat >"$T/good.yaml" <<'EOF'
device_size: 16MiB
devices:
  - { name: f0, tier: flash }
  - { name: f1, tier: flash }
  - { name: f2, tier: flash }
  - { name: f3, tier: flash }
  - { name: f4, tier: flash }
  - { name: f5, tier: flash }
  - { name: f6, tier: flash }
  - { tier: sas, size: 32MiB }
pools:
  - { name: fast, devices: [f0, f1, f2, f3, f4, f5, f6] }
layouts:
  default: { type: pdclust, pool: fast, data: 4, parity: 2, spare: 1, unit: 64KiB }
EOF
good "store from --config" --config "$T/good.yaml" --json pools
check "configured pools" test "$(json_get '[(p["name"], len(p["devices"]), p["size_bytes"] // 1048576) for p in d]' <"$T/out")" = "[('fast', 7, 112), ('flash', 7, 112), ('sas', 1, 32)]"
good "devices of the configured store" --json devices
check "configured names and tiers" test "$(json_get '" ".join(x["name"] + ":" + x["tier"] for x in d)' <"$T/out")" = "f0:flash f1:flash f2:flash f3:flash f4:flash f5:flash f6:flash sas0:sas"
good "obj create takes the configured default layout" obj create @c
check "default layout message" grep -q "4096-byte blocks, pdclust 4+2+1 on pool fast, 64.0 KiB units" "$T/out"
good "--tier still means plain" --json obj create @cs --tier sas
check "plain on sas in the configured store" test "$(json_get 'd["layout"], d["tier"]' <"$T/out")" = "plain sas"
good "put with the default layout" obj put @cp "$T/lay"
good "get with the default layout" obj get @cp "$T/lay.out" && check "configured store round trip" cmp "$T/lay" "$T/lay.out"
good "--config is ignored once the store exists" --config "$T/none.yaml" obj ls
check "configured store lists 3 objects" test "$(wc -l <"$T/out")" -eq 3
cat >"$T/bad.yaml" <<'EOF'
devices:
  - { name: f0, tier: flash }
layouts:
  default: { type: pdclust, pool: nope }
EOF
bad "--config of a missing file" 1 "open store '$T/c2': No such file or directory: .*none.yaml" --data "$T/c2" --config "$T/none.yaml" obj ls
bad "--config with an error" 1 "open store '$T/c3': Invalid argument: .*conf line 4: layouts.default.pool: unknown pool \"nope\"" --data "$T/c3" --config "$T/bad.yaml" obj ls
STORE=$D
DEVSIZE=32M

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
