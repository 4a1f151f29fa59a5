#!/usr/bin/env bash
# run-bench.sh BUILD [--json] [--seconds S] [--only store1|store2] — run
# strata_bench (make bench).
#
# The data directory is $BENCH_DIR, else BUILD/bench-data, so that the
# stores and the raw baselines share one file system; NVRAM devices go to
# /dev/shm.  Everything the run made is removed at the end (the stores by
# strata_bench itself; raw files here too, in case it stopped half-way).
set -u
B=${1:-build}
shift || true
dir=${BENCH_DIR:-$B/bench-data}
bin=$B/strata_bench
if [ ! -x "$bin" ]; then
	echo "run-bench: $bin missing (make tests)" >&2
	exit 1
fi
mkdir -p "$dir"
# --figs ha (or fail, io: one of its groups): only the HA figures (issue
# 28, tests/bench/bench_ha.py: a 4-server cluster with a 3-member etcd
# killed and restarted, and HA on against HA off on the data path; ports
# 4000-4999).
hafigs=; prev=
for a in "$@"; do [ "$prev" = --figs ] && hafigs=$a; prev=$a; done
case "$hafigs" in
ha|fail|io)
	python3 tests/bench/bench_ha.py "$B" --dir "$dir" "$@"
	rc=$?
	rmdir "$dir" 2>/dev/null
	exit $rc ;;
esac
# strata_bench keeps the raw LMDB of group metanv in
# /dev/shm/strata-bench-lmdb-PID and removes it; removed here too in case
# it stopped half-way.
"$bin" --dir "$dir" "$@" &
bpid=$!
wait "$bpid"
rc=$?
rm -rf "/dev/shm/strata-bench-lmdb-$bpid"
[ -x "$B/strata_bench_rpc" ] && { "$B/strata_bench_rpc" "$@" || rc=1; }  # RPC vs raw libfabric
# --figs GROUP,...: strata_bench_rpc picks its own groups (rpc, rpc-rtt,
# rpc-bw, rpc-thr); strata_bench_cluster runs whole (its own --figs groups
# are for running it by hand), only when none is given or "cluster" is named.
figs=; prev=; nofigs=()
for a in "$@"; do
	if [ "$prev" = --figs ]; then figs=$a
	elif [ "$a" != --figs ]; then nofigs+=("$a"); fi
	prev=$a
done
# the cost of telemetry (issue 30): metrics on beside compiled out
# (strata_bench_addb_off, made by `make bench`), when no group or "addb"
# is named
case ",$figs," in
,,|*,addb,*) [ -x "$B/strata_bench_addb" ] && [ -x "$B/strata_bench_addb_off" ] &&
	{ "$B/strata_bench_addb" --dir "$dir" ${nofigs[@]+"${nofigs[@]}"} || rc=1; } ;;
esac
# the same cost in instructions, which the machine's load does not move
# (tests/bench/addb_instr.sh: both programs under valgrind's callgrind,
# stores under /tmp, 2-3 minutes; a line saying it was skipped when
# valgrind is missing)
addbjson=
for a in "$@"; do [ "$a" = --json ] && addbjson=--json; done
case ",$figs," in
,,|*,addb,*) [ -x "$B/strata_bench_addb" ] && [ -x "$B/strata_bench_addb_off" ] &&
	{ bash tests/bench/addb_instr.sh "$B" $addbjson || rc=1; } ;;
esac
case ",$figs," in
,,|*,cluster,*) [ -x "$B/strata_bench_cluster" ] && { "$B/strata_bench_cluster" --dir "$dir" ${nofigs[@]+"${nofigs[@]}"} || rc=1; } ;;  # 3-server cluster (issue 4)
esac
[ -x "$B/strata_bench_dtx" ] && { "$B/strata_bench_dtx" --dir "$dir" "$@" || rc=1; }  # dtx vs plain updates (issue 5)
# FDMI's cost on the write path with 0, 1 and 3 consumers beside FDMI off,
# delivery and lag (issue 31, bench_fdmi.c; about a minute and a half)
case ",$figs," in
,,|*,fdmi,*) [ -x "$B/strata_bench_fdmi" ] && { "$B/strata_bench_fdmi" --dir "$dir" ${nofigs[@]+"${nofigs[@]}"} || rc=1; } ;;
esac
# HSM (issue 31, bench_hsm.c): the time to promote a 1 GiB working set
# sas -> flash (one round of the HSM engine) beside a plain Clovis copy of
# the same bytes, and its read latency before and after, device model on
# (30 to 45 s)
case ",$figs," in
,,|*,hsm,*) [ -x "$B/strata_bench_hsm" ] && { "$B/strata_bench_hsm" --dir "$dir" ${nofigs[@]+"${nofigs[@]}"} || rc=1; } ;;
esac
# function shipping (issue 32, bench_isc.c): min/max/mean/histogram of a
# container of 1 GiB of float64 objects on a 3-server loopback cluster of
# its own (ports from BENCH_ISC_PORT, default 27600), shipped (declarative,
# Lua) beside reading everything to the client; a few minutes
case ",$figs," in
,,|*,isc,*) [ -x "$B/strata_bench_isc" ] && { "$B/strata_bench_isc" --dir "$dir" --port "${BENCH_ISC_PORT:-27600}" ${nofigs[@]+"${nofigs[@]}"} || rc=1; } ;;
esac
# dtx recovery after a participant crash (issue 5): a 3-server loopback
# cluster of our own, the decider SIGKILLed and restarted by the bench;
# at most 300 s, the cluster stopped and removed whatever happened.
if [ -x "$B/strata_bench_dtx" ] && [ -x "$B/strata" ] && [ -x "$B/strata-server" ]; then
	cdir=$dir/dtx-crash
	rm -rf "$cdir"
	if timeout 60 "$B/strata" cluster up --nodes 3 --dir "$cdir" \
		--base-port "${BENCH_DTX_PORT:-27470}" >/dev/null; then
		timeout 300 "$B/strata_bench_dtx" --recovery-crash "$cdir" \
			--recovery 10000 "$@" || rc=1
	else
		echo "run-bench: dtx crash recovery: cluster up failed" >&2
		rc=1
	fi
	timeout 60 "$B/strata" cluster down --dir "$cdir" >/dev/null 2>&1
	rm -rf "$cdir"
fi
# Placement simulation (issue 28 item 5): the real core/pg.c and
# layouts/pdclust.c over 1,000 and 10,000 servers x 10 devices and 10
# million objects, no I/O; each figure beside its goal or minimum as a
# ratio (tests/sim/strata_sim.c), the units also with the keyed placement
# (--placement hrw); about 5 min on 2 cores.  Run when no
# --figs is given or "sim" is named.
simjson=
for a in "$@"; do [ "$a" = --json ] && simjson=--json; done
case ",$figs," in
,,|*,sim,*)
	if [ -x "$B/strata-sim" ]; then
		for n in 1000 10000; do
			"$B/strata-sim" --servers "$n" $simjson || rc=1
			# the keyed placement of growing pools, beside it
			"$B/strata-sim" --servers "$n" --only data \
				--placement hrw $simjson || rc=1
		done
	fi ;;
esac
# HA figures (issue 28): failover times beside etcd's own leader
# failover, the data path with HA on beside HA off (bench_ha.py).
case ",$figs," in
,,|*,ha,*) python3 tests/bench/bench_ha.py "$B" --dir "$dir" "$@" || rc=1 ;;
esac
# the HDF5 driver (issue 34, bench_hdf5.py): 1 GiB in 1 MiB chunks through
# the driver beside a local ext4 file and direct Clovis (about a minute)
case ",$figs," in
,,|*,hdf5,*) python3 tests/bench/bench_hdf5.py "$B" --dir "$dir" ${nofigs[@]+"${nofigs[@]}"} || rc=1 ;;
esac
# the Python binding (issue 34, bench_python.py): 4 KiB reads through
# Object.read_into() beside the C API (BUILD/bench_pyc), nvram and flash,
# any CPU and one CPU; its own venv, offline; about 2 minutes
case ",$figs," in
,,|*,python,*) python3 tests/bench/bench_python.py "$B" --dir "$dir" ${nofigs[@]+"${nofigs[@]}"} || rc=1 ;;
esac
# the POSIX view (issue 33, bench_posix.py): fio through a strata-fuse
# mount beside ext4 and direct Clovis, mdtest-style metadata rates (root
# and /dev/fuse; it says SKIP otherwise; about 10 minutes)
case ",$figs," in
,,|*,posix,*) python3 tests/bench/bench_posix.py "$B" --dir "$dir" ${nofigs[@]+"${nofigs[@]}"} || rc=1 ;;
esac
[ -x "$B/strata-s3" ] && { python3 tests/bench/bench_s3.py "$B" "$dir" "$@" || rc=1; }  # S3 gateway beside direct Clovis (issue 6)
rm -rf "$dir/raw-lmdb" "$dir/raw-floor"
rm -f "$dir"/raw.dat "$dir"/raw-tier.dat "$dir"/raw-ec-*.dat \
	"$dir"/store-ec.yaml
rmdir "$dir" 2>/dev/null
exit $rc
