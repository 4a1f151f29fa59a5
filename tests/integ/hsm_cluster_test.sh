#!/usr/bin/env bash
# hsm_cluster_test.sh BUILD — HSM tier watermarks on a cluster (issue 31,
# "a flash tier filled past its high watermark drains to its low
# watermark, coldest first", on 3 servers with the device model on):
# 3 servers and one etcd member on loopback, `strata cluster up
# --meta-replicas 3 --flash-size 12MiB` (six flash devices of 12 MiB per
# server: 216 MiB of flash in the cluster; a plain layer stays in its
# home's own third of the home's own devices, so plain layers can fill a
# third of it), every server restarted with the device model (--model):
#
#   1. `cluster status --json`: the flash tier is the 18 small devices,
#      empty (a device lent to the other homes counts their slices' free
#      space too, as they report it);
#   2. the HSM suite's watermark test against the cluster (ut_main -s hsm
#      -t watermark): 256 KiB composite objects on flash, homed on the
#      three servers in turn, until flash is past 28 %; one round of the
#      HSM engine (a cluster client, policy "flash high 25 % low 15 % to
#      sas"): flash ends between 5 and 15 %, the objects moved are the
#      oldest ones (a prefix in write order), every object reads back
#      byte-exact, a second round picks nothing;
#   3. `cluster status --json` after it, read by another client: flash at
#      most 15 % used, sas holding what left it;
#   4. the servers' logs: layer adds and moves ran on each of the three
#      homes.
#
# Ports 27000-27999 (group pb, tests/steps.list: shared with
# comp_cluster_test.sh, never at the same time); every wait is bounded;
# everything is killed and removed on any exit.  Ends with "N passed, N
# failed".
set -u
CL_UP_ARGS="--meta-replicas 3 --flash-size 12MiB"
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" hsmcl 27000 250
cl_need strata strata-server ut_main

F=$D/cluster.yaml
HA_SERVERS=3
. "$(dirname "$0")/ha_lib.sh"

echo "--- 3 servers with 12 MiB flash devices, one etcd member, meta_replicas 3"
export STRATA_LOG=3
cl_up
unset STRATA_LOG
check "every home served by itself" cl_settled 180
check "the cluster file gives each flash device 12 MiB" \
	test "$(grep -c 'tier: flash, size: 12MiB' "$F")" -eq 18

echo "--- every server restarted with the device model"
for s in 0 1 2; do
	srv_stop $s
	STRATA_LOG=3 srv_start $s "$F" --model
done
check "s0, s1, s2 back with the device model" wait_ready

# tier T FIELD: FIELD of tier T in `cluster status --json`
tier() {
	timeout 60 "$S" cluster status --cluster "$F" --json >"$T/st" 2>"$T/err"
	python3 - "$T/st" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = [x for x in d["tiers"] if x["tier"] == sys.argv[2]]
print(t[0][sys.argv[3]] if t else "none")
PY
}
# pct T: used percent of tier T
pct() {
	timeout 60 "$S" cluster status --cluster "$F" --json >"$T/st" 2>"$T/err"
	python3 - "$T/st" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = [x for x in d["tiers"] if x["tier"] == sys.argv[2]][0]
print((t["size_bytes"] - t["free_bytes"]) * 100 // t["size_bytes"])
PY
}

echo "--- 1. the flash tier before"
n=$(tier flash devices)
sz=$(tier flash size_bytes)
p0=$(pct flash)
echo "     flash: $n devices, $sz bytes, ${p0} % used"
check "flash is 18 devices of at most 12 MiB each" \
	test "$n" = 18 -a "$sz" -le $((18 * 12 * 1048576))
check "flash empty (${p0} %)" test "$p0" -lt 2
sas0=$(tier sas free_bytes)
timeout 60 "$S" --cluster "$F" devices --json >"$T/devs" 2>"$T/err"
nm=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d = d["devices"] if isinstance(d, dict) else d
print(sum(1 for x in d if x["tier"] in ("flash", "sas") and x["model"]))' "$T/devs" 2>&1)
check "the device model is on for the 18 flash and 6 sas devices ($nm)" \
	test "$nm" = 24

echo "--- 2. the HSM suite's watermark test against the cluster"
cl_ut "hsm/watermark" -s hsm -t watermark
grep -E "hsm watermark:|object 75:" "$T/ut" | sed 's/^ */     /'
check "it filled flash from every home (3 homes)" \
	grep -q "(on 3 homes) filled flash past 28 %" "$T/ut"

echo "--- 3. the tiers after, read by another client"
p1=$(pct flash)
sas1=$(tier sas free_bytes)
echo "     flash ${p1} % used; sas free $sas0 -> $sas1 bytes"
check "flash at most 15 % used after the round (${p1} %)" test "$p1" -le 15
check "sas holds what left flash (free space fell by over 20 MiB)" \
	test $((sas0 - sas1)) -gt $((20 * 1048576))

echo "--- 4. the moves ran on every home"
for s in 0 1 2; do
	m=$(grep -c "layer \(add\|move\) done" "$D/s$s.log")
	echo "     s$s: $m layer add/move lines"
	check "s$s ran layer requests of its objects" test "$m" -gt 0
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
