#!/usr/bin/env bash
# zc_nvram_cluster_test.sh BUILD — zero-copy transfers between clients and
# NVRAM-tier (pmem2) devices on a 3-server loopback cluster whose NVRAM
# directories are on /dev/shm (docs/data-path.md "Zero-copy units on
# NVRAM", core/server/srv_zc.c):
#
#   1. a plain NVRAM object: 3 MiB written (RMA) and 8 KiB (inline), read
#      back byte for byte, a hole past them reads as zeros; the servers'
#      zero-copy counters (cluster status --json: zc_write_bytes,
#      zc_read_bytes) grew by at least the bytes moved;
#   2. a plain flash object: written and read back, the zero-copy
#      counters do not move (the bounce path);
#   3. an acknowledged overwrite, then SIGKILL of every server and a
#      restart: the overwritten data reads back (persisted before the
#      commit that mapped it), counters start again from 0; that lone
#      write, and one after the restart, were committed in the thread that
#      pulled them (eng_commit_release; the servers' info log says so per
#      write, and the count at a clean stop);
#   4. the servers restarted with STRATA_SRV_ZC=0: the same bytes read
#      back through the bounce path, a write and read work, counters stay
#      0 (the counter reflects the path, not the request);
#   5. the Clovis suites run against this cluster (as cluster_test.sh).
#
# Every wait is bounded; servers are killed and T and the /dev/shm
# directory removed on any exit (KEEP=1 keeps them).  Ends with "N passed,
# N failed".
set -u
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" zc 28000 1000
cl_need strata strata-server ut_main
cl_shm

# zc FIELD: the sum of FIELD over the servers of cluster status --json
zc() {
	timeout 30 "$S" cluster status --dir "$D" --json 2>/dev/null |
		python3 -c 'import json, sys
d = json.load(sys.stdin)
print(sum(s.get(sys.argv[1]) or 0 for s in d["servers"]))' "$1"
}

timeout "$CL_UP_TIMEOUT" "$S" cluster up --nodes 3 --dir "$D" --base-port "$PORT" \
	--nvram-dir "$NV" >"$T/up" 2>&1
cl_up_or_end "cluster up, NVRAM directories on /dev/shm" "$T/up"
check "each server's NVRAM device is in NV" \
	test "$(ls "$NV"/s*/strata-*nvram*.dev 2>/dev/null | wc -l)" -eq 3

echo "--- a plain NVRAM object"
head -c $((3 << 20)) /dev/urandom >"$T/big"
head -c 8192 /dev/urandom >"$T/small"
w0=$(zc zc_write_bytes); r0=$(zc zc_read_bytes)
check "counters readable, 0 at start" test "$w0" = 0 -a "$r0" = 0
cl obj create @zn --tier nvram --block-size 4096
check "create on nvram" test "$rc" -eq 0
cl obj write @zn 0 "$T/big"
check "write 3 MiB" test "$rc" -eq 0
cl obj write @zn 1024 "$T/small"
check "write 8 KiB at block 1024 (inline)" test "$rc" -eq 0
cl obj read @zn 0 768 "$T/back"
check "3 MiB read back the same" cmp -s "$T/big" "$T/back"
cl obj read @zn 1024 2 "$T/back"
check "8 KiB read back the same" cmp -s "$T/small" "$T/back"
cl obj read @zn 768 256 "$T/hole"
check "the hole reads as zeros" \
	cmp -s "$T/hole" <(head -c $((1 << 20)) /dev/zero)
w1=$(zc zc_write_bytes); r1=$(zc zc_read_bytes)
echo "     zero-copy bytes: written $w1, read $r1"
check "zero-copy writes counted (>= 3 MiB + 8 KiB)" \
	test "$w1" -ge $(((3 << 20) + 8192))
check "zero-copy reads counted (>= 3 MiB + 8 KiB)" \
	test "$r1" -ge $(((3 << 20) + 8192))

echo "--- a plain flash object: the bounce path"
cl obj create @zf --tier flash --block-size 4096
cl obj write @zf 0 "$T/big"
check "flash write" test "$rc" -eq 0
cl obj read @zf 0 768 "$T/back"
check "flash read back the same" cmp -s "$T/big" "$T/back"
check "zero-copy counters unchanged" \
	test "$(zc zc_write_bytes)" = "$w1" -a "$(zc zc_read_bytes)" = "$r1"

# here: how many zero-copy writes the servers' logs say were committed in
# their pulling thread (eng_commit_release; logged at --log-level 3)
here() { cat "$D"/s?.log 2>/dev/null | grep -c "committed in its pulling thread"; }

echo "--- acknowledged overwrite, SIGKILL of every server, restart"
for i in 0 1 2; do srv_stop $i; done
for i in 0 1 2; do srv_start $i "$D/cluster.yaml" --log-level 3; done
check "three servers up (info logging), the map settled" wait_ready
h0=$(here)
head -c $((1 << 20)) /dev/urandom >"$T/over"
cl obj write @zn 256 "$T/over"
check "overwrite 1 MiB at block 256 acknowledged" test "$rc" -eq 0
h1=$(here)
check "that lone write committed in its pulling thread ($h0 -> $h1)" \
	test "$h1" -gt "$h0"
{ head -c $((1 << 20)) "$T/big"; cat "$T/over"
  tail -c +$(((2 << 20) + 1)) "$T/big"; } >"$T/expect"
for i in 0 1 2; do
	p=$(spid $i)
	kill -9 "$p" 2>/dev/null
	wait_gone "$p" || no "s$i gone after SIGKILL"
done
for i in 0 1 2; do srv_start $i "$D/cluster.yaml" --log-level 3; done
check "three servers up again, the map settled" wait_ready
check "counters from 0 in the new run" test "$(zc zc_write_bytes)" = 0
cl obj read @zn 0 768 "$T/back"
check "overwritten object reads back after SIGKILL" cmp -s "$T/expect" "$T/back"
cl obj read @zn 1024 2 "$T/back"
check "8 KiB reads back after SIGKILL" cmp -s "$T/small" "$T/back"
check "that read went zero-copy" test "$(zc zc_read_bytes)" -ge $((3 << 20))
h0=$(here)
cl obj write @zn 256 "$T/over"
check "the same 1 MiB written again after the restart" test "$rc" -eq 0
check "committed in its pulling thread" test "$(here)" -gt "$h0"

echo "--- the same servers with STRATA_SRV_ZC=0"
for i in 0 1 2; do srv_stop $i; done
check "a stopped server counted it (zero-copy writes: N >= 1 committed in their pulling thread)" \
	grep -Eq "zero-copy writes: [1-9][0-9]* committed in their pulling" \
	"$D"/s?.log
for i in 0 1 2; do STRATA_SRV_ZC=0 srv_start $i "$D/cluster.yaml"; done
check "three servers up (zero-copy off), the map settled" wait_ready
cl obj read @zn 0 768 "$T/back"
check "object reads back through the bounce path" cmp -s "$T/expect" "$T/back"
cl obj write @zn 0 "$T/over"
cl obj read @zn 0 256 "$T/back"
check "write and read with zero-copy off" cmp -s "$T/over" "$T/back"
check "counters stay 0 with zero-copy off" \
	test "$(zc zc_write_bytes)" = 0 -a "$(zc zc_read_bytes)" = 0
for i in 0 1 2; do srv_stop $i; done
for i in 0 1 2; do srv_start $i "$D/cluster.yaml"; done
check "three servers up (zero-copy on), the map settled" wait_ready

echo "--- the Clovis suites against this cluster"
cl_ut "clovis suites" -s clovis,clovis_bad -x composite
timeout 60 "$S" cluster down --dir "$D" >/dev/null 2>&1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
