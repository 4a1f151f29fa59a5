#!/usr/bin/env bash
# hdf5_h5py_test.sh BUILD — the HDF5 driver as a plugin under unmodified
# h5py (issue 34, docs/hdf5.md): PyPI h5py 3.16.0 with its bundled
# libhdf5 2.0.0, in a venv of its own made offline (tests/pyvenv.sh), loads
# BUILD/hdf5-plugin/libh5fd_strata.so by name (HDF5_DRIVER=strata,
# HDF5_PLUGIN_PATH, HDF5_DRIVER_CONFIG=data=DIR or cluster=FILE);
# gateways/hdf5/tests/h5py_check.py does the work:
#
#   1. the reference: the same script on a local file, h5py's default
#      driver (create: groups, attributes, datasets of ints, floats, a
#      compound, fixed and variable strings, contiguous, chunked, gzip,
#      extendible; reopen and read; extend; read again); h5dump of both
#      stages;
#   2. an embedded store (NVRAM directory inside the test directory):
#      the same through the plugin on strata://default/@py; after each
#      stage the object (`strata obj get`) dumps like the local file
#      (Debian's h5dump 1.10 reading what libhdf5 2.0 wrote); the same
#      again with no HDF5_* environment, h5py.File(URL, mode,
#      driver="strata", config=...) (h5py.register_driver() over
#      H5Pset_driver_by_name(), h5py.h5pl.prepend()); the plugin links no
#      libhdf5, and binds to h5py's: bad input (a missing container or
#      object, a bad URL, a bad config item or block size, no store, a
#      data directory without a store) raises OSError carrying the
#      driver's message, naming the thing;
#   3. crash: a Python process writes 4 MiB, calls f.flush(), prints
#      "flushed", writes 4 MiB more without a flush, prints "unflushed"
#      and is killed with SIGKILL; the reopened file holds the flushed data
#      byte for byte; the same without f.flush() does not open (its EOF
#      was never saved: the check can fail);
#   4. a 3-server loopback cluster (base port 4750-4794, disjoint from
#      hdf5_vfd_test.sh's 4700-4746): 2. and 3. again.
#
# Every wait is bounded; servers are killed and the directory removed on
# any exit (KEEP=1 keeps it).  Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" h5py 4750 12
cl_need strata strata-server hdf5-plugin/libh5fd_strata.so
TOP=$(cd "$(dirname "$0")/../.." && pwd)
PYC=$TOP/gateways/hdf5/tests/h5py_check.py
unset HDF5_DRIVER HDF5_DRIVER_CONFIG HDF5_PLUGIN_PATH STRATA_H5_DATA STRATA_H5_CLUSTER
if ! command -v h5dump >/dev/null; then
	no "h5dump installed (apt-get install hdf5-tools)"
	echo "$pass passed, $fail failed"
	exit 1
fi
if ! timeout 600 "$TOP/tests/pyvenv.sh" "$T/venv" h5py >"$T/venv.log" 2>&1; then
	no "venv with h5py (tests/pyvenv.sh)"
	tail -5 "$T/venv.log" | sed 's/^/     /'
	echo "$pass passed, $fail failed"
	exit 1
fi
ok "venv with h5py (tests/pyvenv.sh, offline)"
P=$T/venv/bin/python3
E=$T/store
mkdir -p "$T/nv"

dump() { timeout 120 h5dump "$1" 2>&1 | tail -n +2; }
# run TEXT CMD...: bounded, output in $T/out, shown on failure
run() {
	local n=$1
	shift
	timeout 300 "$@" >"$T/out" 2>&1
	local rc=$?
	if [ $rc -eq 0 ]; then ok "$n"; else no "$n (rc $rc)"; sed 's/^/     /' "$T/out" | tail -8; fi
	return $rc
}
same_dump() {
	dump "$2" >"$T/dump"
	if [ -s "$3" ] && cmp -s "$T/dump" "$3"; then ok "$1"
	else no "$1"; diff "$T/dump" "$3" | head -8 | sed 's/^/     /'; fi
}
# through CONFIG: TH, the command prefix that selects and configures the
# plugin (env, so that timeout and kill reach the Python process itself)
through() {
	TH=(env HDF5_DRIVER=strata "HDF5_PLUGIN_PATH=$BD/hdf5-plugin"
	    "HDF5_DRIVER_CONFIG=$1")
}

ver=$("$P" "$PYC" driver 2>&1)
check "h5py runs its bundled libhdf5 ($ver)" test -n "${ver#libhdf5 }"
check "the plugin links no libhdf5 (ldd)" \
	bash -c "! ldd '$BD/hdf5-plugin/libh5fd_strata.so' | grep -q libhdf5"

# ---- 1. the reference
run "local: create" "$P" "$PYC" write "$T/local.h5"
run "local: reopen and read" "$P" "$PYC" verify "$T/local.h5"
dump "$T/local.h5" >"$T/local1.dump"
run "local: extend" "$P" "$PYC" extend "$T/local.h5"
run "local: reopen and read the extension" "$P" "$PYC" verify "$T/local.h5" x
dump "$T/local.h5" >"$T/local2.dump"
check "the two reference dumps differ (the comparison can fail)" \
	test "$(cmp -s "$T/local1.dump" "$T/local2.dump"; echo $?)" = 1

# get NAME FILE: the object out of the current store ($GET: CLI args)
# (never on an embedded store the plugin did not make: the CLI would
# create one, its NVRAM device on /dev/shm)
get() {
	[ "${GET[0]}" = --cluster ] || [ -e "$E" ] || return 1
	timeout 120 "$S" "${GET[@]}" -q obj get "$1" "$2" >/dev/null 2>&1
}

# stages NAME CONFIG: 2. on one store (sets TH)
stages() {
	local n=$1
	through "$2"
	run "$n: create strata://default/@py" "${TH[@]}" "$P" "$PYC" write strata://default/@py
	run "$n: reopen and read" "${TH[@]}" "$P" "$PYC" verify strata://default/@py
	get @py "$T/$n-1.h5"
	same_dump "$n: h5dump after create = the local file's" "$T/$n-1.h5" "$T/local1.dump"
	run "$n: extend" "${TH[@]}" "$P" "$PYC" extend strata://default/@py
	run "$n: reopen and read the extension" "${TH[@]}" "$P" "$PYC" verify strata://default/@py x
	get @py "$T/$n-2.h5"
	same_dump "$n: h5dump after extend = the local file's" "$T/$n-2.h5" "$T/local2.dump"
	# the same without the environment: h5py.File(..., driver="strata")
	local A=("$P" "$PYC" --driver "$BD/hdf5-plugin" "$2")
	run "$n: driver=\"strata\" (no HDF5_* environment): create" "${A[@]}" write strata://default/@pyarg
	run "$n: driver=\"strata\": extend" "${A[@]}" extend strata://default/@pyarg
	run "$n: driver=\"strata\": reopen and read" "${A[@]}" verify strata://default/@pyarg x
	get @pyarg "$T/$n-arg.h5"
	same_dump "$n: driver=\"strata\": h5dump = the local file's" "$T/$n-arg.h5" "$T/local2.dump"
	# bad input: an OSError naming the thing, the process alive
	fails_with "$n: missing container" 'strata://@nocont/x: container @nocont .* does not exist' "$2" strata://@nocont/x w
	fails_with "$n: missing object" 'strata://default/@nope (object .*): no such object' "$2" strata://default/@nope r
	fails_with "$n: bad URL" 'bad URL "strata:/x": it must be strata://CONTAINER/NAME' "$2" strata:/x w
	fails_with "$n: bad config item" 'config: unknown item "colour"' "$2,colour=red" strata://default/@py r
	fails_with "$n: bad block size" 'block size 3000 is not a power of two' "$2,block=3000" strata://default/@py w
	fails_with "$n: no store configured" 'strata h5: no store' "" strata://default/@py r
}

# fails_with TEXT PATTERN CONFIG URL MODE: h5py.File(URL, MODE) through
# the plugin configured by CONFIG raises OSError with a message matching
# PATTERN (HDF5's error stack carries the driver's message to h5py)
fails_with() {
	local n=$1 pat=$2
	through "$3"
	timeout 120 "${TH[@]}" "$P" "$PYC" fails "$4" "$5" >"$T/exc" 2>&1
	local rc=$?
	if [ $rc -eq 0 ] && grep -q -- "$pat" "$T/exc"; then
		ok "$n: \"$(sed 's/.*(strata h5: //' "$T/exc" | cut -c1-80)\""
	else
		no "$n (rc $rc, wanted \"$pat\")"
		sed 's/^/     /' "$T/exc" | tail -4
	fi
}

# crash MODE (plugin prefix TH): a writer killed with SIGKILL once it printed
# what MODE prints after its first 4 MiB ("flushed" or "written") and then
# "unflushed" (4 MiB more written and an attribute changed, no flush since);
# 0 when it printed both within 120 s
crash() {
	local mode=$1 word pid i
	word=flushed
	[ "$mode" = noflush ] && word=written
	: >"$T/crash.out"
	"${TH[@]}" "$P" "$PYC" "$mode" "strata://default/@crash-$mode" \
		>"$T/crash.out" 2>&1 &
	pid=$!
	for i in $(seq 1 600); do
		grep -q "^unflushed" "$T/crash.out" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	grep -q "^$word" "$T/crash.out" && grep -q "^unflushed" "$T/crash.out"
}
crash_all() {
	local n=$1
	through "$2"
	check "$n: a writer printed \"flushed\", wrote more, was killed (SIGKILL)" crash crash
	run "$n: reopened, the flushed data is there" "${TH[@]}" "$P" "$PYC" after strata://default/@crash-crash
	check "$n: a writer without f.flush() was killed" crash noflush
	timeout 120 "${TH[@]}" "$P" "$PYC" after strata://default/@crash-noflush >"$T/out" 2>&1
	check "$n: ... and its file does not open (never flushed)" \
		grep -q "is not an HDF5 file" "$T/out"
}

# ---- 2. and 3. embedded
GET=(--data "$E")
stages emb "data=$E,nvram=$T/nv"
fails_with "emb: no store at the data directory" "data directory $T/nostore: No such file" "data=$T/nostore,nvram=$T/nv" strata://default/@py r
check "emb: ... and none was made there" test ! -e "$T/nostore"
crash_all emb "data=$E,nvram=$T/nv"
[ -e "$E" ] && run "embedded store destroyed" "$S" --data "$E" -q destroy --yes

# ---- 4. a cluster
cl_up
GET=(--cluster "$D/cluster.yaml")
stages cluster "cluster=$D/cluster.yaml"
crash_all cluster "cluster=$D/cluster.yaml"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
