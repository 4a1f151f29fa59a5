#!/usr/bin/env bash
# hdf5_vfd_test.sh BUILD — the HDF5 virtual file driver from C (issue 34,
# gateways/hdf5, docs/hdf5.md), through Debian's HDF5 1.10 and
# H5Pset_fapl_strata() (BUILD/h5vfd_check, gateways/hdf5/tests/):
#
#   1. the reference: the same program on a local file (HDF5's sec2
#      driver): create (groups, attributes; datasets of ints, floats, a
#      compound, fixed and variable strings; contiguous, chunked,
#      chunked+deflate, extendible), reopen and read every value, extend
#      two datasets and add a dataset and an attribute, read again; h5dump
#      of the file after the create and after the extension;
#   2. an embedded store (its NVRAM directory inside the test directory):
#      the same on strata://default/@h5a (and, after the extension,
#      reads and writes interleaved in one open: each chunk of a dataset
#      read, the next one overwritten and read back, which the driver's
#      read-ahead must not answer with old bytes, then restored); after
#      each stage the object is
#      exported through the driver's read path (H5FDopen/H5FDread) and its
#      h5dump is identical to the local file's (the dump's first line,
#      which names the file, left out); `strata obj get` gives the same
#      bytes (the object's byte size is the file's EOF); with 64 KiB blocks
#      (every edge a read-modify-write of a large block); a named container
#      and a bare object name (strata://@h5c/run1);
#   3. bad input, each with its negative errno and a message naming the
#      URL, container, object, store or setting, also on HDF5's error
#      stack: a bad URL (H5Fcreate, H5Pset_fapl_strata), a URL without
#      object, a missing container, a missing object (read-only open), an
#      object that is not HDF5 (read-only and read-write opens: -EILSEQ),
#      H5F_ACC_EXCL on an existing file, no store configured, a bad block
#      size, both a data directory and a cluster file, a data directory
#      without a store (none is made), a missing cluster file;
#      `strata obj ls` / `idx ls` and the non-HDF5 object's bytes
#      unchanged afterwards;
#   4. a 3-server loopback cluster (cluster_lib.sh, base port 4700-4744,
#      disjoint from hdf5_h5py_test.sh's 4750-4796): 2.
#      and part of 3. again through the cluster file.
#
# Every wait is bounded; servers are killed and the directory removed on
# any exit (KEEP=1 keeps it).  Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" h5vfd 4700 12
cl_need strata strata-server h5vfd_check
C=$BD/h5vfd_check
if ! command -v h5dump >/dev/null; then
	no "h5dump installed (apt-get install hdf5-tools)"
	echo "$pass passed, $fail failed"
	exit 1
fi
unset STRATA_H5_DATA STRATA_H5_CLUSTER
E=$T/store
mkdir -p "$T/nv"
EMB=(--data "$E" --nvram "$T/nv")

# h5dump of a file without its first line ('HDF5 "PATH" {').
dump() { timeout 120 h5dump "$1" 2>&1 | tail -n +2; }
# run TEXT CMD...: CMD with a time bound, its output in $T/out.
run() {
	local n=$1
	shift
	timeout 300 "$@" >"$T/out" 2>&1
	local rc=$?
	if [ $rc -eq 0 ]; then ok "$n"; else no "$n (rc $rc)"; sed 's/^/     /' "$T/out" | tail -8; fi
	return $rc
}
same_dump() { # TEXT FILE REF-DUMP
	dump "$2" >"$T/dump"
	if [ -s "$3" ] && cmp -s "$T/dump" "$3"; then ok "$1"
	else no "$1"; diff "$T/dump" "$3" | head -8 | sed 's/^/     /'; fi
}

# ---- 1. the reference on a local file
run "sec2: create" "$C" write "$T/local.h5"
run "sec2: reopen and read" "$C" verify "$T/local.h5"
dump "$T/local.h5" >"$T/local1.dump"
cp "$T/local.h5" "$T/local1.h5"
run "sec2: extend" "$C" extend "$T/local.h5"
run "sec2: reopen and read the extension" "$C" verify "$T/local.h5" extended
run "sec2: reads and writes interleaved" "$C" rmw "$T/local.h5"
dump "$T/local.h5" >"$T/local2.dump"
check "the two reference dumps differ (the comparison can fail)" \
	test "$(cmp -s "$T/local1.dump" "$T/local2.dump"; echo $?)" = 1
check "h5dump reads the reference ($(wc -l <"$T/local2.dump") lines)" \
	grep -q 'DATASET "late"' "$T/local2.dump"

# ---- 2. (and 4.) create, extend, read, export through one store
# stage_all NAME URL STORE-ARGS...: every stage on URL, dumps compared
stage_all() {
	local n=$1 url=$2
	shift 2
	run "$n: create $url" "$C" "$@" write "$url"
	run "$n: reopen and read" "$C" "$@" verify "$url"
	run "$n: export (H5FDread)" "$C" "$@" export "$url" "$T/$n-1.h5"
	same_dump "$n: h5dump after create = the local file's" "$T/$n-1.h5" \
		"$T/local1.dump"
	run "$n: extend" "$C" "$@" extend "$url"
	run "$n: reopen and read the extension" "$C" "$@" verify "$url" extended
	run "$n: reads and writes interleaved (read-ahead never stale)" "$C" "$@" rmw "$url"
	run "$n: export again" "$C" "$@" export "$url" "$T/$n-2.h5"
	same_dump "$n: h5dump after extend = the local file's" "$T/$n-2.h5" \
		"$T/local2.dump"
	check "$n: exported file as large as the local one" \
		test "$(stat -c %s "$T/$n-2.h5")" = "$(stat -c %s "$T/local.h5")"
}
stage_all emb strata://default/@h5a "${EMB[@]}"
timeout 120 "$S" --data "$E" -q obj get @h5a "$T/emb-get.h5" 2>"$T/err"
check "embedded: strata obj get gives the exported bytes" cmp -s "$T/emb-get.h5" "$T/emb-2.h5"
stage_all emb64k strata://default/@h5b "${EMB[@]}" --block 65536
timeout 120 "$S" --data "$E" obj stat @h5b >"$T/stat" 2>&1
check "64 KiB blocks: the object has them" grep -q "65536" "$T/stat"
run "named container: mkcont @h5c" "$C" "${EMB[@]}" mkcont @h5c
run "named container: create strata://@h5c/run1" "$C" "${EMB[@]}" write strata://@h5c/run1
run "named container: read" "$C" "${EMB[@]}" verify strata://@h5c/run1
timeout 60 "$S" --data "$E" -q obj ls >"$T/ls" 2>&1
check "named container: the object is not in the default container" \
	test "$(grep -c . "$T/ls")" = 2

# ---- 3. bad input
# bad_open TEXT WANT-RC WANT-MSG ARGS...: h5vfd_check open/setfapl fails
# with WANT-RC, its message (and HDF5's error stack) saying WANT-MSG
bad_open() {
	local n=$1 want=$2 msg=$3
	shift 3
	timeout 120 "$C" "$@" >"$T/bad" 2>"$T/bad.err"
	if [ $? -eq 3 ] && grep -q "rc=$want " "$T/bad" && grep -q -- "$msg" "$T/bad"; then
		ok "$n: rc $want, \"$(sed 's/.*: strata h5: //' "$T/bad" | cut -c1-90)\""
	else
		no "$n (wanted rc $want and \"$msg\")"
		sed 's/^/     /' "$T/bad" "$T/bad.err" | head -6
	fi
}
head -c 10000 /dev/urandom >"$T/junk"
timeout 60 "$S" --data "$E" -q obj put @junk "$T/junk" >/dev/null 2>&1
timeout 60 "$S" --data "$E" -q obj ls >"$T/ls0" 2>&1
timeout 60 "$S" --data "$E" -q idx ls >"$T/ix0" 2>&1
bad_open "bad URL (H5Fcreate)" -22 'bad URL "strata:/x"' "${EMB[@]}" open strata:/x trunc
check "bad URL: HDF5's error stack carries the driver's message" \
	grep -q 'strata h5: bad URL' "$T/bad.err"
bad_open "bad URL (H5Pset_fapl_strata)" -22 'bad URL "http://x/y"' "${EMB[@]}" setfapl http://x/y
bad_open "a URL naming no object" -22 'names no object' "${EMB[@]}" open strata://default/ trunc
bad_open "bad object id" -22 'object "zz:qq" is not' "${EMB[@]}" open strata://default/zz:qq trunc
bad_open "missing container" -2 'container @nocont (.*) does not exist' "${EMB[@]}" open strata://@nocont/f1 trunc
bad_open "missing object (read-only)" -2 '@missing (object .*): no such object' "${EMB[@]}" open strata://default/@missing rdonly
bad_open "non-HDF5 object (read-only)" -84 '@junk (object .*) is not an HDF5 file' "${EMB[@]}" open strata://default/@junk rdonly
bad_open "non-HDF5 object (read-write)" -84 '@junk (object .*) is not an HDF5 file' "${EMB[@]}" open strata://default/@junk rdwr
bad_open "H5F_ACC_EXCL on an existing file" -17 '@h5a (object .*) exists' "${EMB[@]}" open strata://default/@h5a excl
bad_open "no store configured" -22 'no store' open strata://default/@h5a rdonly
bad_open "bad config: block size" -22 'block size 1000 is not a power of two' "${EMB[@]}" --block 1000 setfapl strata://default/@h5x
bad_open "bad config: a data directory and a cluster file" -22 'both a data directory .* and a cluster file' "${EMB[@]}" --cluster "$T/none.yaml" setfapl strata://default/@h5x
bad_open "no store at the data directory (read-only open)" -2 "data directory $T/nostore" --data "$T/nostore" --nvram "$T/nv" open strata://default/@h5a rdonly
check "... and none was made there" test ! -e "$T/nostore"
bad_open "missing cluster file" -2 "cluster file $T/none.yaml" --cluster "$T/none.yaml" open strata://default/@h5a rdonly
timeout 60 "$S" --data "$E" -q obj ls >"$T/ls1" 2>&1
timeout 60 "$S" --data "$E" -q idx ls >"$T/ix1" 2>&1
check "bad input: the objects are unchanged" cmp -s "$T/ls0" "$T/ls1"
check "bad input: the indices are unchanged" cmp -s "$T/ix0" "$T/ix1"
timeout 60 "$S" --data "$E" -q obj get @junk "$T/junk.back" 2>/dev/null
check "bad input: the non-HDF5 object's bytes are unchanged" cmp -s "$T/junk" "$T/junk.back"
run "a good open still works after the bad ones" "$C" "${EMB[@]}" verify strata://default/@h5a extended
run "embedded store destroyed" "$S" --data "$E" -q destroy --yes

# ---- 4. a cluster
cl_up
CL=(--cluster "$D/cluster.yaml")
stage_all cluster strata://default/@h5a "${CL[@]}"
cl obj get @h5a "$T/cl-get.h5"
check "cluster: strata obj get gives the exported bytes" cmp -s "$T/cl-get.h5" "$T/cluster-2.h5"
run "cluster: named container: mkcont @h5c" "$C" "${CL[@]}" mkcont @h5c
run "cluster: named container: create" "$C" "${CL[@]}" write strata://@h5c/run1
run "cluster: named container: read" "$C" "${CL[@]}" verify strata://@h5c/run1
cl obj put @junk "$T/junk"
bad_open "cluster: missing container" -2 'container @nocont (.*) does not exist' "${CL[@]}" open strata://@nocont/f1 trunc
bad_open "cluster: non-HDF5 object" -84 '@junk (object .*) is not an HDF5 file' "${CL[@]}" open strata://default/@junk rdwr
cl obj get @junk "$T/junk.cl"
check "cluster: the non-HDF5 object's bytes are unchanged" cmp -s "$T/junk" "$T/junk.cl"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
