#!/usr/bin/env bash
# run-demo.sh BUILD — the embedded demo of Strata, run by `make run`.
#
# Makes a fresh store in ./strata-demo and drives it with BUILD/strata:
# objects with 512 B, 4 KiB and 1 MiB blocks on the nvram, flash and sas
# tiers, written and read back; a multi-MiB file put and got; an index with
# a few dozen records scanned with next and dump; the devices and the
# statistics.  Every result is checked; the script exits non-zero on the
# first mismatch.
set -uo pipefail

B=${1:-build}
S="$(cd "$B" 2>/dev/null && pwd)/strata"
DEMO=./strata-demo
[ -x "$S" ] || { echo "demo: $S not found; run make first" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/strata-demo.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# Run strata on the demo store.
st() { "$S" --data "$DEMO" "$@"; }

# Print a step heading.
step() { printf '\n== %s\n' "$*"; }

# Stop the demo with a message.
die() { echo "demo: FAILED: $*" >&2; exit 1; }

# Run a command that must succeed; stop the demo if it does not.
must() { "$@" || die "$*"; }

# Remove a previous demo store with all its devices (its NVRAM device lives
# under /dev/shm, outside the directory), then whatever else is left.
store_rm() {
	[ -e "$1" ] || return 0
	"$S" --data "$1" -q destroy --yes 2>/dev/null
	rm -rf "$1"
}

# Write SIZE bytes of generated data to FILE.
gen() { head -c "$2" /dev/urandom >"$1" || die "generate $1"; }

start=$(date +%s%N)
step "A fresh store in $DEMO (made on first use)"
store_rm "$DEMO"
must st devices

step "Objects with 512 B, 4 KiB and 1 MiB blocks on nvram, flash and sas"
must st obj create @demo-nvram --block-size 512 --tier nvram
must st obj create @demo-flash --block-size 4K --tier flash
must st obj create @demo-sas --block-size 1M --tier sas
gen "$WORK/n.in" $((64 * 1024 + 100))
gen "$WORK/f.in" $((1024 * 1024))
gen "$WORK/s.in" $((3 * 1024 * 1024 + 5000))
must st obj write @demo-nvram 0 "$WORK/n.in"
must st obj write @demo-flash 16 "$WORK/f.in"
must st obj write @demo-sas 0 "$WORK/s.in"

step "Read them back and compare"
must st obj read @demo-nvram 0 129 "$WORK/n.out"
must st obj read @demo-flash 16 256 "$WORK/f.out"
must st obj read @demo-sas 0 4 "$WORK/s.out"
cmp -n $((64 * 1024 + 100)) "$WORK/n.in" "$WORK/n.out" || die "nvram data differs"
cmp "$WORK/f.in" "$WORK/f.out" || die "flash data differs"
cmp -n $((3 * 1024 * 1024 + 5000)) "$WORK/s.in" "$WORK/s.out" || die "sas data differs"
[ "$(tail -c +$((3 * 1024 * 1024 + 5001)) "$WORK/s.out" | tr -d '\0' | wc -c)" -eq 0 ] ||
	die "padding of the last sas block is not zeros"
must st obj read @demo-flash 0 16 "$WORK/hole.out"
[ "$(tr -d '\0' <"$WORK/hole.out" | wc -c)" -eq 0 ] || die "unwritten blocks are not zeros"
echo "all three objects read back what was written; unwritten blocks read as zeros"
must st obj stat @demo-sas

step "Put and get a 24 MiB file"
gen "$WORK/big.in" $((24 * 1024 * 1024 + 777))
must st obj put @demo-file "$WORK/big.in" --block-size 64K --tier flash
must st obj get @demo-file "$WORK/big.out"
cmp "$WORK/big.in" "$WORK/big.out" || die "put/get data differs"
echo "the file came back byte for byte"

step "An index with 40 records"
must st idx create @demo-index
for i in $(seq 1 40); do
	st -q idx put @demo-index "$(printf 'user:%03d' "$i")" "name-$i score=$((i * 37 % 101))" ||
		die "idx put $i"
done
must st idx get @demo-index user:007
st idx next @demo-index user:010 --count 5 | tee "$WORK/next.out" || die "idx next"
[ "$(wc -l <"$WORK/next.out")" -eq 5 ] && [ "$(head -c 8 "$WORK/next.out")" = user:010 ] ||
	die "idx next returned the wrong records"
st idx dump @demo-index >"$WORK/dump.out" || die "idx dump"
[ "$(wc -l <"$WORK/dump.out")" -eq 40 ] || die "idx dump did not return 40 records"
cut -f1 "$WORK/dump.out" | sort -c || die "idx dump is not in key order"
echo "dump: 40 records in key order ($(head -1 "$WORK/dump.out" | cut -f1) .. $(tail -1 "$WORK/dump.out" | cut -f1))"

step "What is in the store"
must st obj ls
must st idx ls

step "Devices"
must st devices

step "Statistics (every op of this demo, launch to stable)"
must st stats

step "The S3 gateway on the demo store (strata-s3; an aws cli example)"
GW="$(dirname "$S")/strata-s3"
if [ -x "$GW" ]; then
	rm -f "$DEMO.s3-creds" "$WORK/port"
	must st s3 user add demo "$DEMO.s3-creds" >"$WORK/user"
	"$GW" --data "$DEMO" --port 0 --port-file "$WORK/port" --creds "$DEMO.s3-creds" >/dev/null 2>"$WORK/gw.err" &
	gw=$!
	for i in $(seq 1 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
	[ -s "$WORK/port" ] || { kill $gw; die "strata-s3 did not start: $(cat "$WORK/gw.err")"; }
	EP=http://127.0.0.1:$(cat "$WORK/port")
	export AWS_ACCESS_KEY_ID=$(awk '/access_key/{print $2}' "$WORK/user") AWS_DEFAULT_REGION=us-east-1
	export AWS_SECRET_ACCESS_KEY=$(awk '/secret_key/{print $2}' "$WORK/user")
	echo "strata-s3 listening on $EP (user demo, keys in $DEMO.s3-creds)"
	if command -v aws >/dev/null; then
		echo "\$ aws --endpoint-url $EP s3 mb s3://demo && aws ... s3 cp big.in s3://demo/ && aws ... s3 ls s3://demo"
		aws --endpoint-url "$EP" s3 mb s3://demo && aws --endpoint-url "$EP" s3 cp "$WORK/big.in" s3://demo/big.in >/dev/null &&
			aws --endpoint-url "$EP" s3 ls s3://demo && aws --endpoint-url "$EP" s3 cp s3://demo/big.in "$WORK/big.s3" >/dev/null &&
			cmp "$WORK/big.in" "$WORK/big.s3" && echo "the 24 MiB file came back through S3 byte for byte" ||
			{ kill $gw; die "aws cli against strata-s3"; }
	else
		echo "(aws cli not installed: make deps installs it)"
	fi
	kill -TERM $gw; wait $gw
fi

# The POSIX view: the demo store's namespace mounted for a moment
# (strata-fuse, docs/posix.md), a file written and read through it, ls -l.
FS="$(dirname "$S")/strata-fuse"
if [ -x "$FS" ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null &&
   [ "$(id -u)" = 0 ]; then
	echo
	echo "== POSIX view: $FS --data $DEMO --mkfs $WORK/mnt"
	mkdir -p "$WORK/mnt"
	"$FS" --data "$DEMO" --mkfs -f "$WORK/mnt" 2>"$WORK/fuse.err" &
	fsd=$!
	for i in $(seq 1 300); do
		grep -q " $WORK/mnt fuse.strata " /proc/mounts && break
		kill -0 $fsd 2>/dev/null || break
		sleep 0.1
	done
	grep -q " $WORK/mnt fuse.strata " /proc/mounts ||
		die "strata-fuse did not mount: $(cat "$WORK/fuse.err")"
	mkdir -p "$WORK/mnt/docs" && cp README.md "$WORK/mnt/docs/README.md" &&
		ln -sf docs/README.md "$WORK/mnt/readme" &&
		cmp README.md "$WORK/mnt/readme" ||
		{ fusermount3 -u "$WORK/mnt"; die "a file through the mount"; }
	echo "\$ ls -l $WORK/mnt $WORK/mnt/docs"
	ls -l "$WORK/mnt" "$WORK/mnt/docs"
	fusermount3 -u "$WORK/mnt" && wait $fsd || die "strata-fuse did not unmount cleanly"
	echo "unmounted; the tree stays in the store (mount it again with the same command)"
else
	echo
	echo "(POSIX view: as root with /dev/fuse, mount the store with $FS --data $DEMO --mkfs MOUNTPOINT)"
fi

elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
cat <<EOF

== Done in $((elapsed / 1000)).$(printf %03d $((elapsed % 1000))) s: the demo store is in $DEMO
  - 3 objects (512 B / nvram, 4 KiB / flash, 1 MiB / sas) written, read and compared
  - a 24 MiB file put and got back with cmp
  - the store mounted with strata-fuse (as root): a file copied in, a symlink, ls -l
  - an index of 40 records, scanned with next and dump
  - devices and statistics of the store

Next, try:
  $B/strata --data $DEMO obj stat @demo-file
  $B/strata --data $DEMO idx next @demo-index user:020 --count 3 --json
  $B/strata --data $DEMO obj get @demo-nvram - | head -c 64 | od -A d -t x1
  $B/strata --data $DEMO bench
  $B/strata --help
  $B/strata-fuse --data $DEMO --mkfs /mnt/strata && ls -l /mnt/strata   # fusermount3 -u /mnt/strata
  $B/strata-s3 --data $DEMO --creds $DEMO.s3-creds --port 8333 &   # then:
  aws --endpoint-url http://127.0.0.1:8333 s3 ls s3://demo   # keys: $B/strata s3 user ls $DEMO.s3-creds
EOF
