#!/usr/bin/env bash
# metanv_cluster_test.sh BUILD — cluster servers whose stores keep their
# metadata on the NVRAM device directory (cluster key servers[].meta_nvram,
# written by 'strata --meta-nvram cluster up'), on a 3-server loopback
# cluster:
#
#   1. the cluster file says meta_nvram: true for every server, and each
#      server's DATA_DIR/meta is a link to NVDIR/strata-UUID-meta (here
#      NVDIR is the server's nvram_dir in the cluster directory);
#   2. an object of 64 blocks and 8 index records are written and read
#      back;
#   3. every server is killed with SIGKILL and restarted: the object and
#      the records read back the same;
#   4. 'cluster up --nvram-dir NV' (NV on /dev/shm, made by the test):
#      a path with a space is refused naming --nvram-dir before anything
#      is made; then each server's nvram_dir is NV/sI, its DATA_DIR/meta
#      links to NV/sI/strata-UUID-meta, and the object and records are
#      written and read back on that cluster.
#
# Every wait is bounded; the servers are killed and the directories (T and
# NV) removed on any exit; KEEP=1 keeps them.  Ends with "N passed, N
# failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" metanv 20000 1000
cl_need strata strata-server
cl_shm

# meta_links DIR: every server's DATA_DIR/meta links to
# DIR/sI/strata-UUID-meta holding a data.mdb
meta_links() {
	local i n=0
	for i in 0 1 2; do
		case "$(readlink "$D/s$i/meta")" in
		"$1"/s$i/strata-*-meta)
			[ -f "$D/s$i/meta/data.mdb" ] && n=$((n + 1)) ;;
		esac
	done
	[ "$n" -eq 3 ]
}

echo "--- strata --meta-nvram cluster up"
timeout "$CL_UP_TIMEOUT" "$S" --meta-nvram cluster up --nodes 3 --dir "$D" \
	--base-port "$PORT" >"$T/up" 2>&1
cl_up_or_end "cluster up" "$T/up"
check "cluster file: meta_nvram for 3 servers" \
	test "$(grep -c 'meta_nvram: true' "$D/cluster.yaml")" -eq 3
check "each server's meta links to its NVRAM directory" meta_links "$D"

echo "--- write and read"
head -c $((64 * 4096)) /dev/urandom >"$T/data"
write_all() {
	cl obj create @mo --block-size 4096; check "obj create" test "$rc" -eq 0
	cl obj write @mo 0 "$T/data"; check "obj write 64 blocks" test "$rc" -eq 0
	cl idx create @mi; check "idx create" test "$rc" -eq 0
	for k in $(seq 1 8); do cl idx put @mi "k$k" "v$k"; [ "$rc" -eq 0 ] || break; done
	check "8 records put" test "$rc" -eq 0
}
write_all
readback() {
	local k
	cl obj read @mo 0 64 "$T/back"
	[ "$rc" -eq 0 ] && cmp -s "$T/data" "$T/back" || return 1
	for k in $(seq 1 8); do
		cl idx get @mi "k$k"
		[ "$rc" -eq 0 ] && [ "$out" = "v$k" ] || return 1
	done
}
check "object and records read back" readback

echo "--- SIGKILL and restart of every server"
for i in 0 1 2; do
	p=$(spid $i)
	kill -9 "$p" 2>/dev/null
	wait_gone "$p" || no "s$i gone after SIGKILL"
done
for i in 0 1 2; do srv_start $i "$D/cluster.yaml"; done
check "three servers up again" wait_up
check "object and records read back after the restart" readback

timeout 60 "$S" cluster down --dir "$D" >/dev/null 2>&1

echo "--- cluster up --nvram-dir $NV"
rm -rf "$D"
timeout 60 "$S" --meta-nvram cluster up --nodes 3 --dir "$D" \
	--base-port "$PORT" --nvram-dir "$T/nv dir" >"$T/up" 2>&1
rc=$?
check "--nvram-dir with a space refused, naming the option" \
	grep -q -- "--nvram-dir: '$T/nv dir': only letters" "$T/up"
check "... exit status 1, neither D nor the directory made" \
	test "$rc" -eq 1 -a ! -e "$T/nv dir" -a ! -e "$D"
timeout "$CL_UP_TIMEOUT" "$S" --meta-nvram cluster up --nodes 3 --dir "$D" \
	--base-port "$PORT" --nvram-dir "$NV" >"$T/up" 2>&1
cl_up_or_end "cluster up --nvram-dir" "$T/up"
check "cluster file: nvram_dir NV/sI for 3 servers" \
	test "$(grep -c "nvram_dir: $NV/s[012]\$" "$D/cluster.yaml")" -eq 3
check "each server's meta links to NV/sI" meta_links "$NV"
write_all
check "object and records read back" readback
timeout 60 "$S" cluster down --dir "$D" >/dev/null 2>&1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
