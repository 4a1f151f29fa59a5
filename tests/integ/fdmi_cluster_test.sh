#!/usr/bin/env bash
# fdmi_cluster_test.sh BUILD — FDMI in cluster mode (issue 31, fdmi/README.md
# "Cluster mode"): 3 servers and one etcd member on loopback, `strata
# cluster up --meta-replicas 3` (each home's metadata, and with it its
# FDMI log, mirrored on the two other servers; index records on 3
# replicas):
#
#   1. a consumer registered through a cluster client is on every server
#      (`fdmi ls`: one entry per server, ACTIVE);
#   2. objects homed on each server (plain and pdclust 2+1), an index of 30
#      records put and 3 deleted: every change has exactly one record in
#      the whole cluster (no duplicate from a home's standbys, none from
#      the further index replicas), each object's records come from its
#      home server, each key's from one server; sequence numbers rise per
#      server; after the ack a second read gives nothing;
#   3. a filtered consumer (op=idx.put key=k1) gets exactly the puts of the
#      keys starting with k1;
#   4. one server SIGKILLed and restarted: the consumer's cursor survived
#      (nothing acked comes again), the records of new changes homed on it
#      come with sequence numbers above its earlier ones;
#   5. `fdmi rm` removes the consumer from every server.
#
# Ports 26000-26999 (group pb, tests/steps.list); every wait is bounded;
# everything is killed and removed on any exit.  Ends with "N passed, N
# failed".
set -u
CL_UP_ARGS="--meta-replicas 3"
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" fdmi 26000 250
cl_need strata strata-server

F=$D/cluster.yaml
HA_SERVERS=3
. "$(dirname "$0")/ha_lib.sh"

echo "--- 3 servers, one etcd member, meta_replicas 3"
cl_up
check "every home served by itself" cl_settled 180

# tail NAME [ARGS]: every record the consumer has now, JSON lines in
# $T/recs (acked unless --no-ack is given)
tail_all() {
	local name=$1
	shift
	timeout 120 "$S" --cluster "$F" fdmi tail "$name" --json "$@" \
		>"$T/recs" 2>"$T/err"
	rc=$?
}
# count PYEXPR: records r (dicts) of $T/recs for which PYEXPR holds
count() {
	python3 - "$T/recs" "$1" <<'EOF'
import json, sys
n = 0
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    r = json.loads(line)
    if eval(sys.argv[2]):
        n += 1
print(n)
EOF
}

echo "--- a consumer on every server"
cl fdmi sub all
check "fdmi sub all (rc $rc)" test "$rc" -eq 0
cl fdmi ls --json
echo "$out" >"$T/ls"
check "fdmi ls: one ACTIVE entry per server" test "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sorted(s["server"] for s in d if s["name"] == "all" and s["state"] == "ACTIVE"))' "$T/ls")" = "['s0', 's1', 's2']"
cl fdmi sub all "op=obj.write"
check "the same name with another filter is refused (rc $rc)" test "$rc" -ne 0
grep -q "all" "$T/err" || no "the refusal names the consumer ($(cat "$T/err"))"

echo "--- changes on every home"
head -c 200000 /dev/urandom >"$T/blob"
objs=""
for h in 0 1 2; do
	for id in $(ids 2 "$h" $((1000 + 100 * h))); do
		cl obj put "$id" "$T/blob"
		[ "$rc" -eq 0 ] && objs="$objs $id/$h"
	done
	for id in $(ids 1 "$h" $((5000 + 100 * h))); do
		cl obj put "$id" "$T/blob" --layout pdclust --data 2 --parity 1
		[ "$rc" -eq 0 ] && objs="$objs $id/$h"
	done
done
check "9 objects put, 3 homed on each server" test "$(echo $objs | wc -w)" -eq 9
kv=""
for i in $(seq 1 30); do kv="$kv k$i v$i"; done
cl idx create @fix
cl idx put @fix $kv
check "an index of 30 records (rc $rc)" test "$rc" -eq 0
cl idx del @fix k5 k6 k7
check "3 records deleted (rc $rc)" test "$rc" -eq 0

tail_all all
check "fdmi tail all (rc $rc)" test "$rc" -eq 0
echo "     $(wc -l <"$T/recs") records; by server: $(python3 -c '
import json, sys, collections
c = collections.Counter(json.loads(l)["server"] for l in open(sys.argv[1]) if l.strip())
print(dict(sorted(c.items())))' "$T/recs")"
bad=0
for oh in $objs; do
	id=${oh%/*}; h=${oh#*/}
	n=$(count "r['op'] == 'obj.create' and r['id'] == '$id'")
	w=$(count "r['op'] == 'obj.write' and r['id'] == '$id'")
	o=$(count "r['id'] == '$id' and r['server'] != 's$h'")
	if [ "$n" != 1 ] || [ "$w" -lt 1 ] || [ "$o" != 0 ]; then
		bad=$((bad + 1))
		echo "     $id (home s$h): $n obj.create, $w obj.write, $o from other servers"
	fi
done
check "each object: one obj.create, its writes, all from its home" test "$bad" -eq 0
echo "     obj.write records: $(count "r['op'] == 'obj.write'") (9 puts of 200000 bytes, in chunks)"
check "idx.create of @fix: exactly one" \
	test "$(count "r['op'] == 'idx.create'")" -eq 1
check "idx.put: exactly one record per key (30)" test "$(python3 - "$T/recs" <<'EOF'
import json, sys, collections
c = collections.Counter(r["key"] for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip())
                        if r["op"] == "idx.put")
print(len(c) == 30 and all(v == 1 for v in c.values()) and sum(c.values()))
EOF
)" = 30
check "idx.del: exactly k5 k6 k7, once each" test "$(python3 - "$T/recs" <<'EOF'
import json, sys
ks = sorted(r["key"] for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip())
            if r["op"] == "idx.del")
print(ks)
EOF
)" = "['k5', 'k6', 'k7']"
check "sequence numbers rise per server" python3 - "$T/recs" <<'EOF'
import json, sys
last = {}
for l in open(sys.argv[1]):
    if not l.strip():
        continue
    r = json.loads(l)
    if r["seq"] <= last.get(r["server"], 0):
        sys.exit(1)
    last[r["server"]] = r["seq"]
EOF
python3 - "$T/recs" >"$T/maxseq" <<'EOF'
import json, sys
m = {}
for l in open(sys.argv[1]):
    if l.strip():
        r = json.loads(l)
        m[r["server"]] = max(m.get(r["server"], 0), r["seq"])
for s in sorted(m):
    print(s, m[s])
EOF
tail_all all
check "after the ack, a second read gives nothing ($(wc -l <"$T/recs"))" \
	test "$rc" -eq 0 -a "$(wc -l <"$T/recs")" -eq 0

echo "--- a filtered consumer"
cl fdmi sub k1puts op=idx.put key=k1
check "fdmi sub k1puts op=idx.put key=k1 (rc $rc)" test "$rc" -eq 0
kv=""
for i in 1 2 10 11 12 20 21; do kv="$kv k$i w$i"; done
cl idx put @fix $kv --overwrite
[ "$rc" -eq 0 ] || cl idx put @fix $kv
check "7 records put again (rc $rc)" test "$rc" -eq 0
tail_all k1puts
check "k1puts gets the puts of k1, k10, k11, k12 only" test "$(python3 - "$T/recs" <<'EOF'
import json, sys
print(sorted((r["op"], r["key"]) for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip())))
EOF
)" = "[('idx.put', 'k1'), ('idx.put', 'k10'), ('idx.put', 'k11'), ('idx.put', 'k12')]"

echo "--- s1 killed and restarted"
tail_all all # the puts above, acked
kill -9 "$(spid 1)"
wait_gone "$(spid 1)"
srv_start 1 "$F"
check "s1 back" wait_ready
tail_all all --no-ack
check "nothing acked comes again after s1's restart ($(wc -l <"$T/recs"))" \
	test "$rc" -eq 0 -a "$(wc -l <"$T/recs")" -eq 0
new=$(ids 1 1 9000)
cl obj put "$new" "$T/blob"
check "a new object homed on s1 put (rc $rc)" test "$rc" -eq 0
tail_all all
s1max=$(awk '$1 == "s1" { print $2 }' "$T/maxseq")
check "its records come from s1, numbered past s1's earlier ones (> ${s1max:-?})" \
	test "$(count "r['server'] == 's1' and r['id'] == '$new' and r['seq'] > ${s1max:-0}")" -ge 2

echo "--- fdmi rm"
cl fdmi rm all
check "fdmi rm all (rc $rc)" test "$rc" -eq 0
cl fdmi ls --json
echo "$out" >"$T/ls"
check "all is gone from every server" test "$(python3 -c '
import json, sys
print(sum(1 for s in json.load(open(sys.argv[1])) if s["name"] == "all"))' "$T/ls")" = 0
cl fdmi rm all
check "rm of a consumer not there fails (rc $rc)" test "$rc" -ne 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
