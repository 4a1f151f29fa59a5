#!/usr/bin/env bash
# s3_posix_test.sh BUILD — view buckets of strata-s3: a directory of a POSIX
# namespace (gateways/posix/ns.h) served as an S3 bucket, without copying
# data (tests/steps.list; gateways/s3/README.md, "POSIX view buckets").
#
# Two users in a credentials file made by `strata s3 user add`, then
# s3_posix_view.py (each check asserting):
#   1. embedded: a store in a temporary directory, opened in turn by
#      BUILD/s3_posix_tool (the namespace's API: mkfs, files written and
#      read) and BUILD/strata-s3 (port 0, 127.0.0.1) with view buckets:
#      both directions byte for byte (boto3, aws cli), listings in S3 key
#      order against a model, refusals, configurations refused, and the
#      kill test (BUILD/strata-s3-test killed before and after the link;
#      nothing leaked, nothing lost);
#   2. cluster: a 1-server loopback cluster (strata cluster up --nodes 1
#      --no-etcd, base port in 28000-31999: group "pd" of steps.list), the
#      tool and the gateway at once: what each side sees during the
#      other's updates.
# Python is the venv of `make deps` (tests/tools.sh); aws cli is Debian's.
# Every wait is bounded; the server is killed on any exit, and
# s3_posix_view.py kills the gateways and tools it started.  Ends with "N passed, N failed".
set -u
B=${1:-build}
B=$(cd "$B" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
S=$B/strata
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-s3-posix.XXXXXX")
D=$T/cl
PORT=$((28000 + ($$ % 1000) * 4))  # 28000-31999: group pd (tests/steps.list)
pass=0
fail=0

. "$HERE/../../../tests/tools.sh"

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

cleanup() {
	local f
	for f in "$D"/s*.pid; do
		[ -f "$f" ] || continue
		kill -9 "$(cat "$f")" 2>/dev/null
	done
	[ -d "$T/pv" ] && "$S" --data "$T/pv" -q destroy --yes 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! tools_check py aws >"$T/tools.out"; then
	no "view bucket tests cannot run: $(cat "$T/tools.out")"
	finish
fi
for x in strata strata-s3 strata-s3-test s3_posix_tool strata-server; do
	[ -x "$B/$x" ] || { no "$x built"; finish; }
done
export STRATA_AWS

# Run a python part; add its "N passed, N failed" line to the totals.
part() {
	local name=$1 line p f t0=$SECONDS
	shift
	timeout 900 "$STRATA_PY" "$@" >"$T/$name.log" 2>&1
	grep -E '^(ok|FAIL|SKIP) ' "$T/$name.log"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/$name.log" | tail -1)
	echo "---- part $name: $((SECONDS - t0)) s: ${line:-no result line}"
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
	[ "$f" -eq 0 ] || { grep -B2 -A8 'Traceback' "$T/$name.log" | head -40; tail -30 "$T/pv-gw.err"; }
}

"$S" s3 user add alice "$T/creds" >"$T/u" 2>&1 &&
	"$S" s3 user add bob "$T/creds" >>"$T/u" 2>&1 &&
	[ "$(wc -l <"$T/creds")" -eq 2 ] && ok "strata s3 user add (2 users)" ||
	{ no "strata s3 user add: $(cat "$T/u")"; finish; }

part embedded "$HERE/s3_posix_view.py" "$T" "$B" embedded
"$S" --data "$T/pv" -q destroy --yes >/dev/null 2>&1 && [ ! -e "$T/pv" ] &&
	ok "embedded store destroyed" || no "embedded store destroy"

timeout 300 "$S" cluster up --nodes 1 --dir "$D" --base-port "$PORT" --no-etcd >"$T/up" 2>&1
if grep -q "cluster of 1 servers up" "$T/up"; then
	ok "cluster of 1 server up (loopback, base port $PORT)"
	part cluster "$HERE/s3_posix_view.py" "$T" "$B" cluster "$D/cluster.yaml"
	timeout 60 "$S" cluster down --dir "$D" >"$T/down" 2>&1
	grep -q "1 servers stopped" "$T/down" && ok "cluster down" || no "cluster down: $(tail -3 "$T/down")"
else
	no "cluster up: $(tail -5 "$T/up")"
fi
finish
