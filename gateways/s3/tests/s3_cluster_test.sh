#!/usr/bin/env bash
# s3_cluster_test.sh BUILD — strata-s3 in cluster mode (tests/steps.list).
#
# Starts a 3-server loopback cluster (strata cluster up --nodes 3, servers
# on 127.0.0.1 only), runs BUILD/strata-s3 against it (--cluster FILE, a
# free port on 127.0.0.1), then, each asserting:
#   1. a subset of s3_conformance.py (buckets, put/get/range/head/delete,
#      copy, conditionals, long keys, listing with delimiter and
#      continuation, DeleteObjects, multipart, access errors);
#      s3_bconf.py (bucket versioning, CORS, lifecycle expiration: the
#      gateway runs with a lifecycle pass every second, a 2 s "day");
#      s3_subres.py (sub-resources: 501 for what is not implemented,
#      tagging, ACLs, anonymous access, policies, on the cluster's indices);
#   2. s3_kill.py against the cluster: SIGKILL of the gateway during
#      uploads, restart, nothing partial visible, the interrupted objects
#      reclaimed, free space of the cluster's devices equal after;
#   3. strata cluster down.
# Python is the venv of `make deps` (tests/tools.sh); when it cannot import
# boto3 the step fails at once (one failure, nothing else run).
# Every wait is bounded; servers and gateway are killed on any exit.
# Ends with "N passed, N failed".
set -u
B=${1:-build}
B=$(cd "$B" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
GW=$B/strata-s3
S=$B/strata
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-s3-cluster.XXXXXX")
D=$T/cl
PORT=$((12000 + ($$ % 1000) * 4))  # 12000-15999: tests/steps.list (no other step)
pass=0
fail=0
gw_pid=

. "$HERE/../../../tests/tools.sh"
if ! tools_check py >"$T/tools.out"; then
	echo "FAIL s3 gateway cluster tests cannot run: $(cat "$T/tools.out")"
	echo "0 passed, 1 failed"
	rm -rf "$T"
	exit 1
fi

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }

cleanup() {
	local f
	[ -n "$gw_pid" ] && kill -9 "$gw_pid" 2>/dev/null
	for f in "$D"/s*.pid "$D"/etcd*.pid; do
		[ -f "$f" ] || continue
		kill -CONT "$(cat "$f")" 2>/dev/null
		kill -9 "$(cat "$f")" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

# Run a python part; add its "N passed, N failed" line to the totals.
part() {
	local name=$1 line p f
	shift
	timeout 900 "$STRATA_PY" "$@" >"$T/$name.log" 2>&1
	grep -E '^(ok|FAIL|SKIP) ' "$T/$name.log" | sed "s/^\(ok  \|FAIL\) /\1 cluster: /"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/$name.log" | tail -1)
	if [ -z "$line" ]; then
		no "$name: no result line"
		tail -20 "$T/$name.log"
		return
	fi
	p=${line%% passed*}
	f=${line#*passed, }
	f=${f%% failed*}
	pass=$((pass + p))
	fail=$((fail + f))
	[ "$f" -eq 0 ] || grep -A6 '^FAIL' "$T/$name.log" | head -60
}

for x in strata strata-server strata-s3; do
	[ -x "$B/$x" ] || { no "$x built"; finish; }
done

timeout 660 "$S" cluster up --nodes 3 --dir "$D" --base-port "$PORT" >"$T/up" 2>&1 # it waits on progress, 600 s at most
if grep -q "cluster of 3 servers up" "$T/up"; then
	ok "cluster of 3 servers up (loopback, base port $PORT)"
else
	no "cluster up: $(tail -5 "$T/up")"
	finish
fi
[ "$(grep -c 'address: 127.0.0.1' "$D/cluster.yaml")" -eq 3 ] &&
	ok "servers on loopback only" || no "servers on loopback only"

"$S" s3 user add alice "$T/creds" >/dev/null 2>&1 &&
	"$S" s3 user add bob "$T/creds" >/dev/null 2>&1 &&
	[ "$(wc -l <"$T/creds")" -eq 2 ] && ok "two users" || { no "users"; finish; }

"$GW" --cluster "$D/cluster.yaml" --port 0 --port-file "$T/port" \
	--creds "$T/creds" --timeout 5 --lifecycle-interval 1 \
	--lifecycle-day 2 >"$T/gw.out" 2>"$T/gw.err" &
gw_pid=$!
for i in $(seq 1 600); do
	[ -s "$T/port" ] && break
	kill -0 "$gw_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -s "$T/port" ]; then
	ok "gateway on the cluster listens"
else
	no "gateway start: $(tail -5 "$T/gw.err")"
	finish
fi
EP=http://127.0.0.1:$(cat "$T/port")

CASES=bucket_create,bucket_create_again_own,bucket_head_missing,\
bucket_list_own_only,bucket_delete_not_empty,bucket_delete_and_recreate,\
put_get_small,etag_is_quoted_md5,put_empty,put_multi_chunk,\
put_inline_threshold_edges,put_content_md5_bad,get_missing_key,\
head_object_fields,user_metadata_roundtrip,overwrite_replaces,\
overwrite_large_with_small_and_back,delete_object,\
delete_missing_object_is_204,range_first_bytes,range_across_chunks,\
range_invalid,if_none_match_304,put_if_none_match_star_existing,\
key_1024_bytes,long_keys_same_prefix_distinct,other_user_get_denied,\
wrong_secret,copy_same_bucket,copy_across_buckets_large,\
copy_missing_source,list_empty_bucket,list_all_sorted,list_prefix,list_delimiter,\
list_delimiter_with_prefix,list_start_after,list_continuation_thousands,\
delete_objects_many,multipart_complete,multipart_range_across_parts,\
multipart_abort,multipart_entity_too_small,multipart_part_replaced,\
delete_bucket_aborts_pending_uploads
part conformance "$HERE/s3_conformance.py" "$EP" "$T/creds" "$CASES"
part bconf "$HERE/s3_bconf.py" "$EP" "$T/creds" 2
part subres "$HERE/s3_subres.py" "$EP" "$T/creds"

kill -TERM "$gw_pid" 2>/dev/null
for i in $(seq 1 300); do kill -0 "$gw_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$gw_pid" 2>/dev/null && no "gateway stops on SIGTERM" || ok "gateway stops on SIGTERM"
kill -9 "$gw_pid" 2>/dev/null
wait "$gw_pid" 2>/dev/null
gw_pid=

part kill "$HERE/s3_kill.py" "$T" "$GW" "$S" "$D/cluster.yaml"

timeout 60 "$S" cluster down --dir "$D" >"$T/down" 2>&1
grep -q "3 servers stopped" "$T/down" && ok "cluster down" || no "cluster down: $(tail -3 "$T/down")"
finish
