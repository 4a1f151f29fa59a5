#!/usr/bin/env bash
# h5map_test.sh BUILD — asserting test of the HDF5 object view
# (gateways/hdf5/h5map.h, `strata h5 import|export|ls|rm`):
#   files made by $BUILD/h5gen (HDF5's C library, no h5py): basic.h5 with
#     every supported feature, latest.h5 (latest format, creation order
#     tracked), five files with one unsupported feature each;
#   embedded store: import, export; `h5dump` of the original and of the
#     export identical from the second line on, `h5dump -p` (layouts,
#     filters, fill values, storage sizes) identical but for the storage
#     OFFSET lines; the raw data of every fixed-type dataset byte-exact
#     (`h5dump -b FILE`); superblock version kept;
#   the mapping seen through the plain CLI: `idx ls` holds one index per
#     group and dataset and the catalogue, `obj ls` one object per dataset;
#     a group's index records its links and attributes; a contiguous
#     dataset's object is the array's bytes (`obj get` = `h5dump -b`); a
#     chunked one holds each chunk decompressed at chunk index x slot
#     (`obj read` of chunks compared with the array cut by python3); FDMI
#     shows one write of one extent per stored chunk, none for the chunks
#     the file never allocated; the object's block size fits the chunk;
#   bad input changes nothing: not an HDF5 file, a missing file, a name that
#     exists, each unsupported feature (the message names its HDF5 path),
#     a bad container id, an export from a missing container or name, onto
#     an existing file, into a missing directory; an import that runs out
#     of space midway leaves no index, object or container; an interrupted
#     import's BUILDING record is refused by export and import and cleared
#     by `h5 rm`, which leaves none of its indices and objects;
#   records changed on the store (`idx put`): export fails with a message
#     naming the record, never a crash, for a string type under a raw-data
#     flag (attribute and dataset), a datatype with bytes after it, a
#     dataspace whose extent size points past the record, chunk dims or an
#     element size that do not match the header's chunk, attribute data
#     missing, a header with bytes after it; with the records put back the
#     export is exact again; `h5 rm` leaves (and names) a dataset whose
#     header is damaged and does not follow a link to another import's
#     index, keeps the record, and finishes once those are removed by hand;
#   depth: 256 groups on a path (the root included) and a dataset below
#     them import, export exactly, list and remove; 257 are refused;
#   chunked variable-length strings with chunks never allocated: `h5dump
#     -p` equal (the same chunks allocated, the same storage size);
#   `h5 rm` removes every index and object;
#   a 3-server loopback cluster (tests/integ/cluster_lib.sh, ports
#     4800-4899): import, export, h5dump identical, data byte-exact, rm.
# Ends with "N passed, N failed"; exits non-zero if any check failed.
set -u

. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" h5map 4800 25
G=$BD/h5gen
E=$T/data        # the embedded store
F=$T/files       # HDF5 files
mkdir -p "$F"
rc=0

emb_cleanup() {
	[ -d "$E" ] && "$S" --data "$E" -q destroy --yes 2>/dev/null
	[ -d "$T/small" ] && "$S" --data "$T/small" -q destroy --yes 2>/dev/null
}
trap 'emb_cleanup; cl_cleanup' EXIT

# st ARGS...: strata on the embedded store; sets rc, out, err.
st() {
	timeout 300 "$S" --data "$E" --dev-size 64M "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

# refused TEXT PATTERN: the last command failed (exit 1) with one stderr
# line matching PATTERN.
refused() {
	if [ "$rc" -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
		grep -qE "$2" "$T/err"; then
		ok "$1"
	else
		no "$1 (rc $rc: $err)"
	fi
}

# dump_same TEXT A B [-p]: h5dump of A and B identical from line 2 (with
# -p: also the properties, storage OFFSET lines left out).
dump_same() {
	local o=${4:-}
	h5dump $o "$2" 2>&1 | tail -n +2 | grep -v "^ *OFFSET " >"$T/d1"
	h5dump $o "$3" 2>&1 | tail -n +2 | grep -v "^ *OFFSET " >"$T/d2"
	if [ -s "$T/d1" ] && cmp -s "$T/d1" "$T/d2"; then
		ok "$1 ($(wc -l <"$T/d1") lines)"
	else
		no "$1"
		diff "$T/d1" "$T/d2" | head -8 | sed 's/^/     /'
	fi
}

# raw FILE DSET OUT: the dataset's raw bytes as the file stores them.
raw() {
	rm -f "$3"
	h5dump -d "$2" -b FILE -o "$3" "$1" >/dev/null 2>&1
}

# The fixed-type datasets of basic.h5 (their bytes compared one by one).
FIXED="/ints/i8 /ints/u8 /ints/i16be /ints/u16 /ints/i32 /ints/u32be
/ints/i64 /ints/u64 /floats/f32 /floats/f64be /floats/f64s /strings/fixed
/strings/fixed_sp /compound/table /compound/packed /compound/arrays
/types/enum /types/opaque /types/bitfield /types/compact
/chunked/plain /chunked/gzip /chunked/sparse /chunked/unlimited
/chunked/fletcher /chunked/bigchunk /nested/a/b/c/d/leaf /big/contig"

# data_same TEXT A B: every FIXED dataset byte-exact in A and B.
data_same() {
	local d bad=
	for d in $FIXED; do
		raw "$2" "$d" "$T/r1"
		raw "$3" "$d" "$T/r2"
		[ -s "$T/r1" ] && cmp -s "$T/r1" "$T/r2" || bad="$bad $d"
	done
	if [ -z "$bad" ]; then ok "$1 ($(echo $FIXED | wc -w) datasets)"
	else no "$1: differ:$bad"; fi
}

# field PATH KEY [FILE]: KEY=value of PATH's line in FILE (h5 ls output;
# default $T/map).
field() {
	awk -v p="$1" -v k="$2" '$2 == p { for (i = 3; i <= NF; i++)
		if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' \
		"${3:-$T/map}"
}

# hexkey TEXT: TEXT as the hex of an index key.
hexkey() { printf %s "$1" | od -An -tx1 | tr -d ' \n'; }

# rec_edit IDX KEY PYTHON: record KEY (hex) of index IDX changed on the
# store by PYTHON, statements on the bytearray b (its value; struct and
# the helpers attr(b) -> offsets of type, tlen, space, slen, data and
# hdr(b) -> rank, type offset, tlen at hand); the old value in $saved
# (rec_put puts it back).  Sets rc of the put.
rec_edit() {
	local new
	st idx get "$1" "$2" --hex
	saved=$out
	new=$(python3 - "$saved" <<EOF
import struct, sys
b = bytearray.fromhex(sys.argv[1])
def attr(b):
    tl = struct.unpack_from('<I', b, 7)[0]
    sl = struct.unpack_from('<I', b, 11 + tl)[0]
    return 11, tl, 15 + tl, sl, 23 + tl + sl
def hdr(b):
    rank = struct.unpack_from('<I', b, 37)[0]
    o = 81 + 8 * rank
    return rank, o + 4, struct.unpack_from('<I', b, o)[0]
$3
print(b.hex())
EOF
)
	[ -n "$saved" ] && [ -n "$new" ] && [ "$new" != "$saved" ] &&
		st idx put "$1" "$2" "$new" --hex --overwrite || rc=99
}
rec_put() { st idx put "$1" "$2" "$saved" --hex --overwrite; }

# export_refused TEXT PATTERN: export of default/t fails (exit 1: not a
# crash, whose status is 128 and more) with one line matching PATTERN,
# and leaves no file.
export_refused() {
	rm -f "$T/t.h5"
	st h5 export default/t "$T/t.h5"
	if [ "$rc" -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
		grep -qE "$2" "$T/err" && [ ! -e "$T/t.h5" ]; then
		ok "$1"
	else
		no "$1 (rc $rc: $err)"
	fi
}

# ------------------------------------------------------------- files
cl_need h5gen strata
if "$G" "$F" && [ -s "$F/basic.h5" ] && [ -s "$F/vlencomp.h5" ] &&
	[ -s "$F/deep.h5" ] && [ -s "$F/deeper.h5" ] && [ -s "$F/vlensparse.h5" ]; then
	ok "h5gen made the test files"
else
	no "h5gen made the test files"
	echo "$pass passed, $fail failed"
	exit 1
fi
command -v h5dump >/dev/null || { no "h5dump installed (hdf5-tools)"; echo "$pass passed, $fail failed"; exit 1; }
command -v python3 >/dev/null || { no "python3 installed"; echo "$pass passed, $fail failed"; exit 1; }

# ------------------------------------------------ embedded: round trip
st h5 import "$F/basic.h5" default/basic
[ "$rc" -eq 0 ] && echo "$out" | grep -q "imported .*basic.h5 as default/basic: 15 groups, 35 datasets" &&
	ok "import basic.h5 as default/basic" || no "import basic.h5 (rc $rc: $out $err)"
st h5 export default/basic "$T/basic.out.h5"
[ "$rc" -eq 0 ] && [ -s "$T/basic.out.h5" ] && ok "export default/basic" ||
	no "export default/basic (rc $rc: $err)"
dump_same "h5dump of the export equals the original's" "$F/basic.h5" "$T/basic.out.h5"
dump_same "h5dump -p (layout, filters, fill, storage sizes) equal but for OFFSET" \
	"$F/basic.h5" "$T/basic.out.h5" -p
data_same "raw data byte-exact" "$F/basic.h5" "$T/basic.out.h5"
# the comparisons can fail: one byte of /ints/i32's data changed in a copy
# of the export (its storage OFFSET from h5dump -p) is seen by both
cp "$T/basic.out.h5" "$T/tampered.h5"
off=$(h5dump -p -d /ints/i32 "$T/tampered.h5" | awk '$1 == "OFFSET" { print $2 }')
printf '\x5a' | dd of="$T/tampered.h5" bs=1 seek="$((off + 5))" conv=notrunc 2>/dev/null
raw "$F/basic.h5" /ints/i32 "$T/r1"
raw "$T/tampered.h5" /ints/i32 "$T/r2"
h5dump -d /ints/i32 "$F/basic.h5" | tail -n +2 >"$T/u1"
h5dump -d /ints/i32 "$T/tampered.h5" | tail -n +2 >"$T/u2"
[ -n "$off" ] && [ -s "$T/r2" ] && ! cmp -s "$T/r1" "$T/r2" && ! cmp -s "$T/u1" "$T/u2" &&
	ok "a byte changed in a copy shows in h5dump and in the raw data (the comparisons can fail)" ||
	no "a changed byte is seen (offset '$off')"

st h5 import "$F/latest.h5" default
[ "$rc" -eq 0 ] && ok "import latest.h5 (name from the file)" || no "import latest.h5 (rc $rc: $err)"
st h5 export default/latest.h5 "$T/latest.out.h5"
[ "$rc" -eq 0 ] && ok "export default/latest.h5" || no "export latest (rc $rc: $err)"
dump_same "latest.h5: h5dump equal" "$F/latest.h5" "$T/latest.out.h5"
dump_same "latest.h5: h5dump -p equal but for OFFSET" "$F/latest.h5" "$T/latest.out.h5" -p
v1=$(h5dump -B "$F/latest.h5" | grep -m1 SUPERBLOCK_VERSION)
v2=$(h5dump -B "$T/latest.out.h5" | grep -m1 SUPERBLOCK_VERSION)
[ -n "$v1" ] && [ "$v1" = "$v2" ] && ok "superblock version kept ($v1)" ||
	no "superblock version kept ('$v1' / '$v2')"
st h5 export default "$T/x.h5"
refused "export without NAME from a container of two files" "holds 2 HDF5 files: basic, latest.h5"
[ ! -e "$T/x.h5" ] && ok "  and no output file" || no "  and no output file"

# ------------------------------------------------ the mapping, seen plainly
st h5 ls default/basic
echo "$out" >"$T/map"
ng=$(grep -c "^group " "$T/map")
nd=$(grep -c "^dataset " "$T/map")
[ "$ng" -eq 15 ] && [ "$nd" -eq 35 ] && ok "h5 ls: 15 groups, 35 datasets" ||
	no "h5 ls: groups $ng datasets $nd"
grep -qE "^hard +/links/root -> /$" "$T/map" &&
	grep -qE "^soft +/links/dangling -> /no/such/thing$" "$T/map" &&
	ok "h5 ls: hard link to the root, dangling soft link" || no "h5 ls: links"
st h5 ls default/latest.h5
echo "$out" >"$T/map2"
st idx ls
nidx=$(echo "$out" | grep -c .)
want=$(( (ng + nd) * 2 + 1 ))
[ "$nidx" -eq "$want" ] && ok "idx ls: one index per group and dataset of both files, plus the catalogue ($nidx)" ||
	no "idx ls: $nidx indices, want $want"
st obj ls
echo "$out" | sort >"$T/objs"
awk '$1 == "dataset" { for (i = 3; i <= NF; i++) if ($i ~ /^obj=/) print substr($i, 5) }' \
	"$T/map" "$T/map2" | sort >"$T/want"
cmp -s "$T/objs" "$T/want" && [ "$(wc -l <"$T/objs")" -eq $((nd * 2)) ] &&
	ok "obj ls: exactly the datasets' objects ($((nd * 2)))" || no "obj ls: objects differ from the datasets'"
gidx=$(field /links idx)
st idx dump "$gidx"
[ "$rc" -eq 0 ] && [ "$(echo "$out" | grep -c '^l')" -eq 5 ] &&
	echo "$out" | grep -q "^lto_i8"$'\t'"S/ints/i8$" &&
	ok "the /links index holds its 5 link records (soft: 'S' and the target)" ||
	no "the /links index records (rc $rc: $out)"
ridx=$(field / idx)
st idx next "$ridx" a --count 6
[ "$(echo "$out" | cut -f1 | tr '\n' ' ')" = "acoeffs aempty anote atitle autf8 aversion " ] &&
	ok "the root index holds its 6 attributes in name order" || no "root attributes: $out"

# a contiguous dataset's object: the array's bytes in row-major order
obj=$(field /big/contig obj)
st obj get "$obj" "$T/contig.bin"
raw "$F/basic.h5" /big/contig "$T/contig.want"
[ "$rc" -eq 0 ] && cmp -s "$T/contig.bin" "$T/contig.want" &&
	ok "obj get of /big/contig = its array bytes ($(stat -c %s "$T/contig.want") bytes)" ||
	no "obj get of /big/contig (rc $rc)"

# chunked: chunk i at block i * slot, decompressed, row-major in the chunk
chk() { # chk TEXT DSET CHUNK_INDEX
	local o b s
	o=$(field "$2" obj)
	b=$(field "$2" block)
	s=$(field "$2" slot)
	raw "$F/basic.h5" "$2" "$T/arr.bin"
	st obj read "$o" $(($3 * s)) "$s" "$T/chunk.bin"
	python3 - "$T/arr.bin" "$T/chunk.bin" "$2" "$3" "$b" "$s" <<'EOF'
import sys
arr, got = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
name, ci, block, slot = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
shape = {'/chunked/plain': ((10, 13), (4, 4), 4),
         '/chunked/gzip': ((20, 30, 4), (5, 7, 4), 8),
         '/chunked/sparse': ((100, 100), (10, 10), 2)}[name]
dims, ch, es = shape
grid = [(d + c - 1) // c for d, c in zip(dims, ch)]
coord, r = [], ci
for g in reversed(grid):
    coord.insert(0, r % g); r //= g
want = bytearray(slot * block)
def walk(k, src, dst):
    if k == len(dims):
        want[dst * es:(dst + 1) * es] = arr[src * es:(src + 1) * es]; return
    for j in range(ch[k]):
        x = coord[k] * ch[k] + j
        if x >= dims[k]: break
        s2, d2 = src * dims[k] + x, dst * ch[k] + j
        walk(k + 1, s2, d2)
walk(0, 0, 0)
sys.exit(0 if bytes(want) == got else 1)
EOF
	[ $? -eq 0 ] && [ "$rc" -eq 0 ] && ok "$1" || no "$1 (rc $rc)"
}
chk "/chunked/plain: edge chunk 11 at its slot, zero-padded" /chunked/plain 11
chk "/chunked/gzip: chunk 7 decompressed (deflate + shuffle)" /chunked/gzip 7
chk "/chunked/sparse: chunk 14 (written, fill elsewhere)" /chunked/sparse 14
[ "$(field /chunked/plain block)" = 512 ] && [ "$(field /chunked/gzip block)" = 2048 ] &&
	[ "$(field /chunked/bigchunk block)" = 524288 ] &&
	ok "block size: the chunk's bytes rounded up to a power of two (64 B -> 512, 1120 B -> 2048, 360000 B -> 512 KiB)" ||
	no "block sizes: $(field /chunked/plain block) $(field /chunked/gzip block) $(field /chunked/bigchunk block)"
[ "$(field /chunked/sparse chunks)" = 2/100 ] && ok "/chunked/sparse: 2 of 100 chunks stored" ||
	no "/chunked/sparse chunks $(field /chunked/sparse chunks)"

# one write of one extent per chunk: FDMI records of a fresh import
st fdmi sub h5w op=obj.write
st h5 import "$F/basic.h5" default/again
st fdmi tail h5w
echo "$out" >"$T/fdmi"
st h5 ls default/again
echo "$out" >"$T/map"
for d in /chunked/gzip /chunked/sparse /chunked/plain; do
	o=$(field $d obj)
	n=$(field $d chunks)
	got=$(grep " $o " "$T/fdmi" | grep -o 'ext=[^ ]*' | tr '\n' ' ')
	want=$(python3 - "$d" <<'EOF'
import sys
n = {'/chunked/gzip': list(range(20)), '/chunked/sparse': [14, 15],
     '/chunked/plain': list(range(12))}[sys.argv[1]]
print(' '.join('ext=%d+1' % i for i in n) + ' ')
EOF
)
	[ -n "$got" ] && [ "$got" = "$want" ] &&
		ok "FDMI: $d written as $(echo $got | wc -w) single-extent writes, one per stored chunk ($n)" ||
		no "FDMI: $d writes '$got' want '$want'"
done
st fdmi rm h5w
st h5 rm default/again
[ "$rc" -eq 0 ] && ok "h5 rm default/again: $out" || no "h5 rm default/again (rc $rc: $err)"

# ------------------------------------------------ bad input changes nothing
st idx ls; before_idx=$out
st obj ls; before_obj=$out
unchanged() {
	st idx ls; local a=$out
	st obj ls
	[ "$a" = "$before_idx" ] && [ "$out" = "$before_obj" ] && ok "  $1: no index or object added" ||
		no "  $1: the store changed"
}
echo "just text" >"$F/notes.txt"
st h5 import "$F/notes.txt" default/notes
refused "a file that is not HDF5 is refused" "not an HDF5 file"
unchanged "not HDF5"
st h5 import "$F/nosuch.h5" default/nosuch
refused "a missing file is refused" "No such file or directory"
st h5 import "$F/basic.h5" default/basic
refused "a name that exists is refused" "default/basic exists|0:1/basic exists"
unchanged "existing name"
for b in "ext.h5:/grp/ext: an external link" "ref.h5:/grp/refs: references" \
	"vlenseq.h5:/grp/seq: variable-length sequences" \
	"named.h5:/grp/mytype: a committed" \
	"vlencomp.h5:/grp/comp: a variable-length string inside a compound"; do
	st h5 import "$F/${b%%:*}" @h5bad/x
	refused "unsupported: ${b%%:*} refused naming its path" "Operation not supported: ${b#*:}"
done
st h5 ls @h5bad
refused "  and no container made for them" "does not exist"
unchanged "unsupported features"
st h5 import "$F/basic.h5" "bad id/x"
[ "$rc" -eq 2 ] && ok "a bad container id is a usage error" || no "bad container id (rc $rc)"
st h5 export @nocontainer/x "$T/n.h5"
refused "export from a missing container is refused" "container .* does not exist"
[ ! -e "$T/n.h5" ] && ok "  and makes no file" || no "  and makes no file"
st h5 export default/nothere "$T/n.h5"
refused "export of a missing name is refused" "no HDF5 file of that name"
st h5 export default/basic "$T/basic.out.h5"
refused "export onto an existing file is refused" "exists: export makes a new file"
st h5 export default/basic "$T/nodir/x.h5"
refused "export into a missing directory is refused naming the path" \
	"No such file or directory: .*/nodir/x.h5: its directory"

# an interrupted import: its record BUILDING (made by flipping the state
# byte of a complete one, as a crash leaves it)
cat_id=@strata.h5.catalogue:0:1
key=$(printf %s latest.h5 | od -An -tx1 | tr -d ' \n')
st idx get "$cat_id" "$key" --hex
v=$out
[ "${v:12:2}" = 02 ] && ok "catalogue record of latest.h5 is COMPLETE (state byte 2)" || no "catalogue record: $v"
st idx put "$cat_id" "$key" "${v:0:12}01${v:14}" --hex --overwrite
st h5 export default/latest.h5 "$T/b.h5"
refused "export of an interrupted (BUILDING) import is refused" "did not complete"
st h5 import "$F/latest.h5" default/latest.h5
refused "import onto an interrupted import is refused" "runs, or was interrupted"
st h5 rm default/latest.h5
[ "$rc" -eq 0 ] && ok "h5 rm clears the interrupted import: $out" || no "h5 rm latest (rc $rc: $err)"
# none of its indices and objects is left: what is left is basic's
awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^(idx|obj)=/) print substr($i, 5) }' \
	"$T/map2" >"$T/latest.ids"
st idx ls; a=$out
st obj ls; b=$out
n=$(printf '%s\n%s\n' "$a" "$b" | grep -cxFf "$T/latest.ids")
[ -s "$T/latest.ids" ] && [ "$n" -eq 0 ] && [ "$(echo "$a" | grep -c .)" -eq $((ng + nd + 1)) ] &&
	[ "$(echo "$b" | grep -c .)" -eq "$nd" ] &&
	ok "  and leaves none of its indices and objects (basic's $((ng + nd)) indices, the catalogue, $nd objects left)" ||
	no "  and leaves nothing of it ($n of its ids left; $(echo "$a" | grep -c .) indices, $(echo "$b" | grep -c .) objects)"
st idx ls; idx0=$out
st obj ls; obj0=$out

# ------------------------------------------------ records changed on the store
st h5 import "$F/basic.h5" default/t
st h5 ls default/t
echo "$out" >"$T/mapt"
[ "$rc" -eq 0 ] && [ "$(grep -c "^dataset " "$T/mapt")" -eq 35 ] && ok "import basic.h5 again as default/t" ||
	no "import default/t (rc $rc: $err)"
ridx=$(field / idx "$T/mapt")
# edit TEXT IDX KEY PYTHON PATTERN: the record changed, export refused
# naming it, the record put back
edit() {
	rec_edit "$2" "$3" "$4"
	if [ "$rc" -ne 0 ]; then no "$1: the record could not be changed (rc $rc)"; return; fi
	export_refused "$1" "$5"
	rec_put "$2" "$3"
}
edit "a string attribute under a raw-data flag (8 bytes of data: a pointer) is refused, no crash" \
	"$ridx" "$(hexkey anote)" 'to, tl, so, sl, do = attr(b); b[6] = 0
b[do - 8:] = struct.pack("<Q", 8) + bytes([0x10, 0, 0, 0, 0, 0, 0, 0])' \
	"/ attribute 'note': the record is damaged: its datatype is a variable-length string, its flag says raw bytes"
edit "a string dataset under a raw-data flag is refused, no crash" \
	"$(field /strings/vlen idx "$T/mapt")" 68 'b[32] = 0' \
	"/strings/vlen \(header\): the record is damaged: its datatype is a variable-length string"
edit "a datatype with 4 bytes after it (tlen + 4) is refused" \
	"$ridx" "$(hexkey aversion)" 'to, tl, so, sl, do = attr(b)
b[to + tl:to + tl] = bytes(4); struct.pack_into("<I", b, 7, tl + 4)' \
	"/ attribute 'version': the record is damaged: its datatype \(([0-9]+) bytes\) does not decode"
edit "a dataspace whose extent size points 2 GiB past the record is refused, no crash" \
	"$ridx" "$(hexkey acoeffs)" 'to, tl, so, sl, do = attr(b)
struct.pack_into("<I", b, so + 3, 0x7fffff00)' \
	"/ attribute 'coeffs': the record is damaged: its dataspace"
edit "chunk dims 3x64 for a grid of 3x4 chunks are refused (a 768 B read from a 512 B buffer)" \
	"$(field /chunked/unlimited idx "$T/mapt")" 68 'struct.pack_into("<Q", b, 89, 64)' \
	"/chunked/unlimited: the header is damaged: its chunk dims do not make a grid of the 3 chunks"
edit "an element of 8 bytes in chunks of 4-byte floats is refused (720000 B read from 512 KiB)" \
	"$(field /chunked/bigchunk idx "$T/mapt")" 68 'rank, to, tl = hdr(b)
struct.pack_into("<I", b, to + 6, 8)' \
	"/chunked/bigchunk: the header is damaged: a chunk of 720000 bytes in 1 blocks of 524288, it says 360000"
edit "an attribute of one element without its data bytes is refused" \
	"$ridx" "$(hexkey aversion)" 'to, tl, so, sl, do = attr(b); b[do - 8:] = bytes(8)' \
	"/ attribute 'version': the record is damaged: 0 bytes of data for 1 elements"
edit "a header with a byte after it is refused" \
	"$(field /ints/i8 idx "$T/mapt")" 68 'b.append(0)' \
	"/ints/i8: header record is damaged"
rm -f "$T/t.h5"
st h5 export default/t "$T/t.h5"
[ "$rc" -eq 0 ] && ok "  with the records put back, export works" || no "  export after the records were put back (rc $rc: $err)"
dump_same "  and h5dump -p equals the original's" "$F/basic.h5" "$T/t.h5" -p

# h5 rm: a damaged dataset header is left and named (its object with it),
# a link to another import's index is not followed; the record stays
st h5 import "$F/vlensparse.h5" @h5o/o
st h5 ls @h5o/o
oroot=$(echo "$out" | awk '$2 == "/" { print substr($3, 5) }')
i8=$(field /ints/i8 idx "$T/mapt")
i8o=$(field /ints/i8 obj "$T/mapt")
lidx=$(field /links idx "$T/mapt")
rec_edit "$i8" 68 'b[0] ^= 0xff'
r1=$rc
rec_edit "$lidx" "$(hexkey lfloats_alias)" "h, l = '$oroot'.split(':')
b[2:] = struct.pack('<QQ', int(h, 16), int(l, 16))"
[ "$r1" -eq 0 ] && [ "$rc" -eq 0 ] && [ -n "$oroot" ] && ok "i8's header damaged, /links/floats_alias pointed at @h5o/o's root" ||
	no "records changed for rm (rc $r1 $rc, root '$oroot')"
st h5 rm default/t
[ "$rc" -eq 1 ] && grep -q "left 2 entities" "$T/err" && grep -q "remove what is left by hand" "$T/err" &&
	ok "h5 rm of it fails naming what it left: $err" || no "h5 rm with damaged records (rc $rc: $err)"
st h5 ls @h5o/o
[ "$rc" -eq 0 ] && [ "$(echo "$out" | grep -c .)" -eq 3 ] && ok "  the other import's index was not followed (@h5o/o whole)" ||
	no "  @h5o/o after rm of default/t (rc $rc: $out $err)"
st idx ls; a=$out
st obj ls; b=$out
echo "$a" | grep -qx "$i8" && echo "$a" | grep -qx "$lidx" && echo "$b" | grep -qx "$i8o" &&
	[ "$(echo "$a" | grep -c .)" -eq $(($(echo "$idx0" | grep -c .) + 4)) ] &&
	ok "  left: the damaged dataset's index and object, the groups above it (/ints, /), /links; the rest removed" ||
	no "  what rm left: $(echo "$a" | grep -c .) indices"
st h5 ls default
echo "$out" | grep -q "^t " && ok "  the record stays" || no "  the record stays ($out)"
st idx rm "$i8"; st obj rm "$i8o"; st idx rm "$lidx"
st h5 rm default/t
[ "$rc" -eq 0 ] && ok "once they are removed by hand, h5 rm finishes: $out" || no "h5 rm again (rc $rc: $err)"
st idx ls; a=$out
st obj ls
[ "$a" = "$idx0" ] && [ "$out" = "$obj0" ] && ok "  nothing of default/t is left" || no "  left of default/t: $a $out"
st h5 rm @h5o/o
[ "$rc" -eq 0 ] && ok "h5 rm @h5o/o" || no "h5 rm @h5o/o (rc $rc: $err)"

# ------------------------------------------------ depth: one rule both ways
st h5 import "$F/deep.h5" default/deep
[ "$rc" -eq 0 ] && echo "$out" | grep -q "256 groups, 1 datasets" &&
	ok "256 groups on a path (the root included) and a dataset below: imported" ||
	no "import deep.h5 (rc $rc: $err)"
rm -f "$T/deep.h5"
st h5 export default/deep "$T/deep.h5"
[ "$rc" -eq 0 ] && ok "  exported" || no "  export deep (rc $rc: $err)"
dump_same "  h5dump equal" "$F/deep.h5" "$T/deep.h5"
st h5 ls default/deep
[ "$rc" -eq 0 ] && [ "$(echo "$out" | grep -c "^group ")" -eq 256 ] && ok "  listed (256 groups)" ||
	no "  h5 ls deep (rc $rc: $err)"
st h5 rm default/deep
[ "$rc" -eq 0 ] && echo "$out" | grep -q "256 groups, 1 datasets" && ok "  removed: $out" || no "  h5 rm deep (rc $rc: $err)"
st idx ls; a=$out
st obj ls
[ "$a" = "$idx0" ] && [ "$out" = "$obj0" ] && ok "  nothing of it left" || no "  left of default/deep"
st h5 import "$F/deeper.h5" default/deeper
refused "257 groups on a path are refused" "Operation not supported: groups nested deeper than 256: /g/g/"

# ------------------------------------------------ sparse chunked strings
st h5 import "$F/vlensparse.h5" default/vs
st h5 ls default/vs
echo "$out" >"$T/mapv"
[ "$(field /s1 chunks "$T/mapv")" = 2/10 ] && [ "$(field /s2 chunks "$T/mapv")" = 4/9 ] &&
	ok "chunked strings: the map keeps the chunks the file allocated (2/10, 4/9)" ||
	no "chunked strings map: $(field /s1 chunks "$T/mapv") $(field /s2 chunks "$T/mapv")"
rm -f "$T/vs.h5"
st h5 export default/vs "$T/vs.h5"
[ "$rc" -eq 0 ] && ok "  exported" || no "  export vs (rc $rc: $err)"
dump_same "  h5dump equal" "$F/vlensparse.h5" "$T/vs.h5"
dump_same "  h5dump -p equal: no chunk allocated that was not (storage sizes)" "$F/vlensparse.h5" "$T/vs.h5" -p
st h5 rm default/vs
[ "$rc" -eq 0 ] && ok "  removed" || no "  h5 rm vs (rc $rc: $err)"

# running out of space midway: everything made is removed again
SM=$T/small
timeout 120 "$S" --data "$SM" --dev-size 4M -q idx ls >/dev/null 2>&1
timeout 120 "$S" --data "$SM" h5 import "$F/basic.h5" @sm/b >"$T/out" 2>"$T/err"
rc=$?; err=$(cat "$T/err")
refused "an import out of space fails" "No space left on device"
a=$(timeout 60 "$S" --data "$SM" idx ls 2>&1)$(timeout 60 "$S" --data "$SM" obj ls 2>&1)
timeout 60 "$S" --data "$SM" h5 ls @sm >/dev/null 2>"$T/err"
[ -z "$a" ] && grep -q "does not exist" "$T/err" &&
	ok "  and leaves no index, object or container" || no "  and leaves nothing ($a, $(cat "$T/err"))"
"$S" --data "$SM" -q destroy --yes 2>/dev/null

# ------------------------------------------------ rm
st h5 rm default/basic
[ "$rc" -eq 0 ] && echo "$out" | grep -q "15 groups, 35 datasets" && ok "h5 rm default/basic: $out" ||
	no "h5 rm default/basic (rc $rc: $out $err)"
st idx ls; a=$out
st obj ls
[ -z "$a" ] && [ -z "$out" ] && ok "no index or object left (the empty catalogue too)" ||
	no "left after rm: $a $out"
st h5 ls default
[ "$rc" -eq 0 ] && [ -z "$out" ] && ok "h5 ls default: no file" || no "h5 ls default (rc $rc: $out)"
"$S" --data "$E" -q destroy --yes 2>/dev/null
[ ! -d "$E" ] && ok "embedded store destroyed" || no "embedded store destroyed"

# ------------------------------------------------ cluster
CL_UP_ARGS=--no-etcd cl_up
cl h5 import "$F/basic.h5" @h5c/basic
[ "$rc" -eq 0 ] && ok "cluster: import ($out)" || no "cluster: import (rc $rc: $(cat "$T/err"))"
cl h5 export @h5c/basic "$T/cl.out.h5"
[ "$rc" -eq 0 ] && ok "cluster: export" || no "cluster: export (rc $rc: $(cat "$T/err"))"
dump_same "cluster: h5dump equal" "$F/basic.h5" "$T/cl.out.h5"
dump_same "cluster: h5dump -p equal but for OFFSET" "$F/basic.h5" "$T/cl.out.h5" -p
data_same "cluster: raw data byte-exact" "$F/basic.h5" "$T/cl.out.h5"
cl h5 import "$F/basic.h5" @h5c/basic
[ "$rc" -eq 1 ] && grep -q "exists" "$T/err" && ok "cluster: re-import refused" || no "cluster: re-import (rc $rc)"
cl h5 rm @h5c/basic
[ "$rc" -eq 0 ] && ok "cluster: rm ($out)" || no "cluster: rm (rc $rc: $(cat "$T/err"))"
cl h5 ls @h5c
[ "$rc" -eq 0 ] && [ -z "$out" ] && ok "cluster: nothing left in the container" || no "cluster: ls after rm ($out)"
timeout 120 "$S" cluster down --dir "$D" >/dev/null 2>&1

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
