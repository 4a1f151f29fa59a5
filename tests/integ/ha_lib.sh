# ha_lib.sh — helpers shared by the loopback HA steps (ha_test.sh,
# ha_home_test.sh, ha_catchup_test.sh), sourced after cluster_lib.sh and
# cl_init, with F the cluster file (and HA_SERVERS for ids).
#   ha WHAT [ARGS]   strata ha WHAT against the cluster; out, rc
#   jget EXPR        a Python expression over d (the JSON object on stdin)
#   dec_has PATTERN  some decision line (JSON) matches the extended regex
#   ev_has PATTERN   some event line (JSON) matches it
#   (poll SECS CMD...: cluster_lib.sh)
#   leader           the analyzer's leader, per `strata ha state`
#   ids N H BASE     N object ids "7:LO" homed on server index H of
#                    $HA_SERVERS (clu_home(): the splitmix64 finaliser of
#                    hi ^ mix(lo), modulo the servers), from LO = BASE on
#   acting H         the server acting for home sH in the map ("": itself)
#   same ID FILE     object ID reads back equal to FILE
#   srv_state NAME   server NAME's state in the map
#   srv_lost NAME    NAME is lost for good by the map (OUT, REPAIRING,
#                    REPAIRED)
#   home_sb H        home sH's standbys in the map, space-separated
#   put_ids FILE "ARGS" ID...  obj put of FILE (with ARGS) to each ID; n:
#                    how many were put (a failure's error printed)
#   thaw_if_frozen FN WHO SECS NAME  until FN succeeds (a home moved) or
#                    the analyzer froze the map (check NAME, at most
#                    SECS); a frozen map is thawed by the operator's
#                    report about WHO (checked)
#   ha_up N [M]      `strata cluster up` of N servers, M etcd members (1),
#                    meta_replicas 3, the HA test presets, checked, and
#                    the map settled (HA_SERVERS=N)
#   ha_up4 [M]       ha_up 4 [M]
ha() {
	out=$(timeout 60 "$S" --cluster "$F" ha "$@" 2>"$T/err")
	rc=$?
}
jget() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
dec_has() { ha decisions --json; echo "$out" | grep -Eq "$1"; }
ev_has() { ha events --json; echo "$out" | grep -Eq "$1"; }
leader() { ha state; echo "$out" | jget 'd["leader"]' 2>/dev/null; }
ids() {
	python3 - "$1" "$2" "$3" "$HA_SERVERS" <<'EOF'
import sys
n, h, base, nsrv = (int(a) for a in sys.argv[1:5])
M = (1 << 64) - 1
def mix(x):
    x ^= x >> 30; x = (x * 0xbf58476d1ce4e5b9) & M
    x ^= x >> 27; x = (x * 0x94d049bb133111eb) & M
    return x ^ (x >> 31)
out, lo = [], base
while len(out) < n:
    if mix(0x7 ^ mix(lo)) % nsrv == h:
        out.append("7:%x" % lo)
    lo += 1
print(" ".join(out))
EOF
}
acting() {
	ha map
	echo "$out" | jget '[s for s in d["servers"] if s["name"] == "s'$1'"][0].get("acting", "")' 2>/dev/null
}
# first_put IDS BLOB SINCE SECS PUTARGS...: `obj put` the ids of IDS in
# turn until one is written (0.5 s apart), or SECS have passed since the
# epoch time SINCE; sets first (the id written, "" when none) and k (the
# tries); the last failure's message in $T/perr
first_put() {
	local ids=$1 blob=$2 since=$3 secs=$4 id
	shift 4
	first=""
	k=0
	for id in $ids; do
		k=$((k + 1))
		if timeout 60 "$S" --cluster "$F" obj put "$id" "$blob" "$@" \
			>/dev/null 2>"$T/perr"; then
			first=$id
			return 0
		fi
		python3 -c "import sys, time; sys.exit(0 if time.time() - $since < $secs else 1)" ||
			return 1
		sleep 0.5
	done
	return 1
}
ha_up() {
	local n=$1 m=${2:-1}
	HA_SERVERS=$n
	echo "--- $n servers, $m etcd member(s), meta_replicas 3, the HA test presets"
	timeout 400 "$S" cluster up --nodes "$n" --dir "$D" --base-port "$PORT" \
		--ha-test --meta-replicas 3 --etcd-members "$m" >"$T/up.out" 2>&1
	cl_up_or_end "cluster of $n servers up" "$T/up.out"
	check "the map settles (every server ONLINE, serving its own home)" \
		cl_settled 240
}
ha_up4() { ha_up 4 "${1:-1}"; }
thaw_if_frozen() {
	local fn=$1 who=$2 secs=$3 name=$4
	_fz() { "$fn" || dec_has '"FREEZE"'; }
	check "$name" poll "$secs" _fz
	if ! "$fn"; then
		echo "     map frozen (servers down): the operator thaws it"
		ha report thaw "$who"
		check "the operator's thaw is reported" test "$rc" -eq 0
	fi
}
srv_state() {
	ha map
	echo "$out" | jget '[s for s in d["servers"] if s["name"] == "'$1'"][0]["state"]' 2>/dev/null
}
srv_lost() { case "$(srv_state "$1")" in OUT|REPAIRING|REPAIRED) return 0;; esac; return 1; }
home_sb() {
	ha map
	echo "$out" | jget '" ".join([s for s in d["servers"] if s["name"] == "s'$1'"][0].get("standbys", []))' 2>/dev/null
}
put_ids() {
	local f=$1 args=$2 id
	shift 2
	n=0
	for id in "$@"; do
		# shellcheck disable=SC2086
		cl obj put "$id" "$f" $args
		[ "$rc" -eq 0 ] && n=$((n + 1))
		[ "$rc" -eq 0 ] || echo "     put $id: $(tail -1 "$T/err" | head -c 200)"
	done
}
same() {
	rm -f "$T/back"
	timeout 60 "$S" --cluster "$F" obj get "$1" "$T/back" 2>"$T/rerr" &&
		cmp -s "$2" "$T/back"
}
