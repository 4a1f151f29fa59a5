#!/usr/bin/env bash
# ha_replay_test.sh BUILD — asserting test of `strata ha replay` (the HA
# event analyzer over a recorded history, clovis/cli/cli_ha.c) on the
# histories of tests/data/ha/: the exact text output, the JSON lines, the
# same output twice, standard input, and bad files refused with one stderr
# line naming the file and line.  No store, no port, no server.  Ends with
# "N passed, N failed"; exits non-zero if any check failed.
set -u

B=${1:-build}
S="$(cd "$B" 2>/dev/null && pwd)/strata"
DATA="$(cd "$(dirname "$0")/../data/ha" && pwd)"
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-ha-replay.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }

# run ARGS...: strata with a time bound; sets rc, out, err.
run() {
	timeout 60 "$S" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

# bad NAME RC PATTERN ARGS...: exit RC, one stderr line matching PATTERN.
bad() {
	local name=$1 want=$2 pat=$3 lines
	shift 3
	run "$@"
	lines=$(awk 'END { print NR }' "$T/err")
	if [ "$rc" -eq "$want" ] && [ "$lines" -eq 1 ] &&
		grep -q '^strata: ' "$T/err" && grep -qE -- "$pat" "$T/err"; then
		ok "$name"
	else
		no "$name: rc $rc (want $want), $lines stderr lines: $err"
	fi
}

[ -x "$S" ] || { no "strata binary at $S"; echo "$pass passed, $fail failed"; exit 1; }

echo "--- text output"
run ha replay "$DATA/server_loss.jsonl"
if [ "$rc" -eq 0 ] && [ -z "$err" ] && diff -u "$DATA/server_loss.expected" "$T/out"; then
	ok "server loss: the expected decisions"
else
	no "server loss: rc $rc, stderr: $err"
fi
cp "$T/out" "$T/first"
run ha replay "$DATA/server_loss.jsonl"
if cmp -s "$T/first" "$T/out"; then ok "same input, same output"; else no "two runs differ"; fi
run ha replay - <"$DATA/server_loss.jsonl"
if [ "$rc" -eq 0 ] && cmp -s "$T/first" "$T/out"; then ok "from standard input"; else no "stdin: rc $rc, $err"; fi
run ha replay "$DATA/flapping.jsonl"
if [ "$rc" -eq 0 ] && [ "$(grep -c QUARANTINED "$T/out")" -eq 1 ] &&
	! grep -qE "JOB_REPAIR|OUT" "$T/out" &&
	grep -q "^replay: 9 events, 1 decisions" "$T/out"; then
	ok "flapping: quarantined, never repaired"
else
	no "flapping: rc $rc: $out"
fi

echo "--- JSON lines"
run --json ha replay "$DATA/server_loss.jsonl"
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$T/out")" -eq 9 ] &&
	python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
want = [("SET_STATE", "s2", "", "FAILED"), ("SET_STATE", "s2", "", "OUT"),
        ("JOB_REPAIR", "s2", "", "REPAIRING"), ("SET_STATE", "s2", "", "REPAIRED"),
        ("JOB_REBALANCE", "s2", "", "REBALANCING"), ("SET_STATE", "s2", "", "ONLINE"),
        ("SET_STATE", "s1", "d1", "FAILED"), ("SET_STATE", "s1", "d1", "OUT"),
        ("JOB_REPAIR", "s1", "d1", "REPAIRING")]
got = [(r["kind"], r["target"], r["dev"], r["state"]) for r in rows]
assert got == want, got
assert [r["seq"] for r in rows] == list(range(11, 20))
assert rows[2]["job"] == 13 and rows[4]["job"] == 15
assert rows[0]["time_ms"] == 11500 and rows[0]["rule"] == "server-down"
' "$T/out"; then
	ok "--json: one object per decision, seqs are epochs"
else
	no "--json: rc $rc: $out"
fi

echo "--- bad files"
printf '%s\n' '{"seq": 1, "time_ms": 1, "kind": "SRV_EXIT", "target": "s1"}' \
	'{"seq": 2, "time_ms": 2, "kind": "SRV_BOOM", "target": "s1"}' >"$T/kind.jsonl"
bad "unknown kind names file and line" 1 "$T/kind.jsonl:2: ha event: key 'kind': 'SRV_BOOM' is not one" ha replay "$T/kind.jsonl"
if [ ! -s "$T/out" ]; then ok "nothing printed for a bad file"; else no "stdout of a bad file: $out"; fi
printf '%s\n' '# c' '' '{"seq": 1, "time_ms": 1, "kind": "SRV_EXIT", "target": "s1"' >"$T/json.jsonl"
bad "bad JSON names file and line" 1 "$T/json.jsonl:3: line: bad JSON" ha replay "$T/json.jsonl"
printf '%s\n' '{"seq": 3, "time_ms": 1, "kind": "SRV_EXIT", "target": "s1"}' \
	'{"seq": 3, "time_ms": 1, "kind": "SRV_EXIT", "target": "s2"}' >"$T/seq.jsonl"
bad "seq not increasing" 1 "$T/seq.jsonl:2: seq 3 is not above the one before" ha replay "$T/seq.jsonl"
printf '%s\n' '{"map": {"tolerance": 1, "servers": [{"name": "s0", "rack": "r1"}]}}' >"$T/map.jsonl"
bad "unknown map key" 1 "$T/map.jsonl:1: map: server 0: key 'rack'" ha replay "$T/map.jsonl"
printf '%s\n' '{"seq": 1, "time_ms": 1, "kind": "SRV_EXIT", "target": "s1"}' \
	'{"map": {"tolerance": 1, "servers": []}}' >"$T/hdr.jsonl"
bad "header not first" 1 "$T/hdr.jsonl:2: a header" ha replay "$T/hdr.jsonl"
printf '%s\n' '{"rules": {"preset": "test", "quiet_ms": -5}}' >"$T/rules.jsonl"
bad "negative rule" 1 "$T/rules.jsonl:1: rules: key 'quiet_ms' must be a non-negative integer" ha replay "$T/rules.jsonl"
bad "missing file" 1 "ha replay: open $T/none.jsonl: No such file or directory" ha replay "$T/none.jsonl"
bad "no file given" 2 "usage: missing arguments" ha replay

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
