# ha_lib.sh — helpers shared by the loopback HA steps (ha_test.sh,
# ha_home_test.sh), sourced after cluster_lib.sh and cl_init, with F the
# cluster file.
#   ha WHAT [ARGS]   strata ha WHAT against the cluster; out, rc
#   jget EXPR        a Python expression over d (the JSON object on stdin)
#   dec_has PATTERN  some decision line (JSON) matches the extended regex
#   ev_has PATTERN   some event line (JSON) matches it
#   poll SECS CMD... until CMD succeeds, at most SECS seconds
#   leader           the analyzer's leader, per `strata ha state`
ha() {
	out=$(timeout 60 "$S" --cluster "$F" ha "$@" 2>"$T/err")
	rc=$?
}
jget() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
dec_has() { ha decisions --json; echo "$out" | grep -Eq "$1"; }
ev_has() { ha events --json; echo "$out" | grep -Eq "$1"; }
poll() {
	local end=$((SECONDS + $1))
	shift
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" && return 0
		sleep 0.5
	done
	"$@"
}
leader() { ha state; echo "$out" | jget 'd["leader"]' 2>/dev/null; }
