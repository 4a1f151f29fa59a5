#!/usr/bin/env bash
# cluster_geom_test.sh BUILD — the cluster file's server list cannot
# change under the servers' stores (docs/cluster.md "The server list"):
# object homes (hash mod servers) and device slices (slice I of S) follow
# the list, so a server refuses a file that lists more or fewer servers,
# or puts it at another place, before it serves anything.
#
#   1. 3 servers, no etcd (ports 2300-2399: base 2300-2396 from the PID);
#      6 objects (pdclust 4+2 and plain) and an index of 20 records;
#   2. the cluster stopped, a 4th server added to the file (what the CLI
#      once advised for `server add ADDR:PORT`; 8 of 9 objects were then
#      unreachable): s0 refuses to start, naming 3 and 4 servers;
#   3. s1 and s2 swapped in the file: s1 refuses, naming places 1 and 2;
#   4. the file as it was: the cluster starts, every object reads back
#      byte-exact and the index holds its 20 records;
#   5. a client given the 4-server file: a server that is not an object's
#      home by its own file refuses the request naming the home (never
#      "does not exist": the wrong store's answer); an index reads whole
#      or is refused by a server that holds no replica of it;
#   6. `strata server add ADDR:PORT` is refused (-ENOTSUP) without
#      advising to add the server to the file.
#
# Every wait is bounded; servers are killed and the directory removed on
# any exit.  Ends with "N passed, N failed".
set -u
CL_UP_ARGS="--no-etcd"
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" geom 2300 25
cl_need strata strata-server

# start_one I FILE: start server sI with FILE; rc 0 when it serves, 1
# when it refused (its log says so, its process gone), 2 neither within
# 60 s.  Only the log lines after the start count.
start_one() {
	local i=$1 f=$2 n p
	n=$(wc -l <"$D/s$i.log" 2>/dev/null || echo 0)
	rm -f "$D/s$i.pid"
	srv_start "$i" "$f" >/dev/null 2>&1
	for _ in $(seq 1 600); do
		p=$(spid "$i")
		if tail -n +"$((n + 1))" "$D/s$i.log" | grep -q "serving" &&
		   [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
			return 0
		fi
		if tail -n +"$((n + 1))" "$D/s$i.log" |
		   grep -q "cluster file makes it"; then
			for _ in $(seq 1 100); do
				pgrep -f -- "--name s$i --pid-file $D/" \
					>/dev/null || return 1
				sleep 0.1
			done
			return 2
		fi
		sleep 0.1
	done
	return 2
}

echo "--- 3 servers, data"
cl_up
head -c 3000000 /dev/urandom >"$T/f"
ok_puts=0
for i in 1 2 3 4; do
	cl obj put "@g$i" "$T/f" --layout pdclust --data 4 --parity 2
	[ "$rc" -eq 0 ] && ok_puts=$((ok_puts + 1))
done
for i in 5 6; do
	cl obj put "@g$i" "$T/f"
	[ "$rc" -eq 0 ] && ok_puts=$((ok_puts + 1))
done
check "6 objects put" test "$ok_puts" -eq 6
cl idx create @gx
# shellcheck disable=SC2046
cl idx put @gx $(for k in $(seq 1 20); do echo "k$k v$k"; done)
check "an index of 20 records" test "$rc" -eq 0
cp "$D/cluster.yaml" "$T/orig.yaml"
timeout 60 "$S" cluster down --dir "$D" >/dev/null 2>&1
check "cluster stopped" test "$(pgrep -fc -- "--config $D/")" -eq 0

echo "--- a 4th server added to the file: refused"
python3 - "$D/cluster.yaml" "$D/four.yaml" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
i = s.index("  - name: s2")
blk = s[i:]
port = int(re.search(r"port: (\d+)", blk).group(1))
blk = (blk.replace("name: s2", "name: s3")
          .replace("port: %d" % port, "port: %d" % (port + 1))
          .replace("data_dir: s2", "data_dir: s3")
          .replace("nvram_dir: s2", "nvram_dir: s3"))
open(sys.argv[2], "w").write(s.rstrip("\n") + "\n" + blk)
PY
cp "$D/four.yaml" "$D/cluster.yaml"
start_one 0 "$D/cluster.yaml"
rc=$?
check "s0 does not start with 4 servers in the file (rc $rc)" test "$rc" -eq 1
check "... saying it is server 0 of 3, the file makes it 0 of 4" \
	grep -q "is server 0 of 3 servers, the cluster file makes it 0 of 4" "$D/s0.log"

echo "--- s1 and s2 swapped in the file: refused"
python3 - "$T/orig.yaml" "$D/cluster.yaml" <<'PY'
import sys
s = open(sys.argv[1]).read()
a, b = s.index("  - name: s1"), s.index("  - name: s2")
open(sys.argv[2], "w").write(s[:a] + s[b:].rstrip("\n") + "\n" + s[a:b])
PY
start_one 1 "$D/cluster.yaml"
rc=$?
check "s1 does not start at place 2 (rc $rc)" test "$rc" -eq 1
check "... saying it is server 1 of 3, the file makes it 2 of 3" \
	grep -q "is server 1 of 3 servers, the cluster file makes it 2 of 3" "$D/s1.log"

echo "--- the file as it was: everything there"
cp "$T/orig.yaml" "$D/cluster.yaml"
for i in 0 1 2; do srv_start "$i" "$D/cluster.yaml" >/dev/null 2>&1; done
check "the three servers start again" wait_up
same=0
for i in 1 2 3 4 5 6; do
	rm -f "$T/g"
	cl obj get "@g$i" "$T/g"
	[ "$rc" -eq 0 ] && cmp -s "$T/f" "$T/g" && same=$((same + 1))
done
check "every object reads back byte-exact ($same of 6)" test "$same" -eq 6
cl idx dump @gx
check "the index holds its 20 records" test "$(echo "$out" | grep -c '^k')" -eq 20

echo "--- a client with the 4-server file: refused, never misplaced"
# Its homes are hash mod 4: an object whose home differs goes to a server
# that is not its home, which refuses it (-EREMCHG, naming the home), or
# to s3, which does not run; before, the wrong server answered "does not
# exist" (and would have made a new object there, found by no one else).
gone=0; wrong=0
for i in 1 2 3 4 5 6; do
	out=$(timeout 60 "$S" --cluster "$D/four.yaml" obj get "@g$i" "$T/g4" 2>&1)
	echo "$out" | grep -q "does not exist" && gone=$((gone + 1))
	echo "$out" | grep -q "is homed on server" && wrong=$((wrong + 1))
	echo "     @g$i: $(echo "$out" | tail -n 1 | cut -c1-200)"
done
check "no object 'does not exist' through the wrong file ($gone)" test "$gone" -eq 0
check "objects homed elsewhere are refused naming their home ($wrong)" test "$wrong" -ge 1
# An index through the 4-server file: its records, or a refusal by a
# server that holds no replica of it -- never an empty index made there.
out=$(timeout 60 "$S" --cluster "$D/four.yaml" idx dump @gx 2>&1)
n=$(echo "$out" | grep -c '^k')
echo "     idx dump @gx: $n records; $(echo "$out" | tail -n 1 | cut -c1-200)"
check "the index through the 4-server file: 20 records or refused ($n)" \
	sh -c "test $n -eq 20 || echo \"\$1\" | grep -q 'is replicated on'" _ "$out"
timeout 60 "$S" --cluster "$D/four.yaml" idx create @gy >/dev/null 2>&1
timeout 60 "$S" --cluster "$D/four.yaml" idx put @gy k1 v1 >/dev/null 2>&1
cl idx dump @gy
check "an index made through the 4-server file is not half-made (rc $rc)" \
	sh -c "test $rc -ne 0 || test \"\$(echo \"\$1\" | grep -c '^k')\" -eq 1" _ "$out"

echo "--- server add of a new server: refused, no advice to edit the file"
cl server add 127.0.0.1:2399
check "server add ADDR:PORT: -ENOTSUP (rc $rc)" test "$rc" -ne 0
check "... not advising to add it to the file" \
	sh -c "! grep -qi 'add it to the file' '$T/err' && grep -qi 'cannot join' '$T/err'"

timeout 60 "$S" cluster down --dir "$D" >/dev/null 2>&1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
