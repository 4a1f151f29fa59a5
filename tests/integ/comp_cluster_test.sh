#!/usr/bin/env bash
# comp_cluster_test.sh BUILD — composite objects and their layers through a
# cluster client (issue 31 point 3; docs/cluster.md "Composite layers
# through a cluster client"): 3 servers and one etcd member on loopback,
# `strata cluster up --meta-replicas 3` (each home's metadata, the layers
# and extent maps of its composites with it, mirrored on the two other
# servers), info logging (STRATA_LOG=3):
#
#   1. a composite object homed on each server (`obj put --layout
#      composite --tier flash`): one layer on flash holding every block,
#      read back byte-exact;
#   2. moves between tiers (`obj move`): all to sas (the block counts per
#      layer from `obj layers --json`), a range up to nvram (a new top
#      layer; the runs of the object's map: sas, nvram, sas), a range
#      past the end back to sas (cut at the object's size; the emptied
#      layer below the top dropped), a range wholly past
#      the end (nothing moved), a range past 2^48 refused naming it; every
#      object byte-exact after each;
#   3. the layer requests ran on each object's home only (the servers'
#      logs: "layer add/move/drop done" of an object only in its home's);
#   5b. (after 5) the HSM suite's promote (read latency at most half after
#      the promotion, every server with the device model), racing writes
#      (byte-exact) and hot extent (only the blocks read promoted) against
#      the cluster;
#   4b. strata-hsm --cluster: a dry run moves nothing, a round promotes a
#      composite object on sas homed on each server to flash (the top
#      layer), byte-exact; its action log; an undo;
#   4. bad input: a plain object has no layers to move to (refused naming
#      its layout); the composite suite of ut_main (layers, bad input:
#      a plain object's layer refused by its home "not composite", equal
#      priorities, bad sub-layouts; the map of runs per layer, clipped,
#      continued, refused for a plain object; the scrub of a composite's
#      pdclust layer by its home; a client killed mid-move;
#      moves racing writes) against the cluster;
#   5. a move's crash: the home of a 48 MiB composite (restarted with the
#      device model, so that a move to sas takes long enough) SIGKILLed in
#      the middle of `obj move` (after the move's first call began,
#      retried until a kill leaves both layers holding blocks, at most 4
#      rounds), restarted: every block reads back exactly and the layers'
#      block counts add up to the object's; the move run again ends with
#      every block on sas;
#   6. after a clean stop of every server, each standby's shadow of each
#      home holds the same layer and extent records as the home (mdb_dump
#      of tables layer and ext).
#
# Ports 27000-27999 (group pb, tests/steps.list); every wait is bounded;
# everything is killed and removed on any exit.  Ends with "N passed, N
# failed".
set -u
CL_UP_ARGS="--meta-replicas 3"
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" comp 27000 250
cl_need strata strata-server ut_main strata-hsm

F=$D/cluster.yaml
HA_SERVERS=3
. "$(dirname "$0")/ha_lib.sh"
BLK=4096

echo "--- 3 servers, one etcd member, meta_replicas 3, info logging"
export STRATA_LOG=3
cl_up
unset STRATA_LOG
check "every home served by itself" cl_settled 180

# layers ID: `obj layers ID --json` into $T/layers; rc
layers() {
	timeout 60 "$S" --cluster "$F" obj layers "$1" --json >"$T/layers" \
		2>"$T/err"
	rc=$?
}
# lsum PYEXPR: over the layers l of $T/layers (dicts), the sum of PYEXPR
lsum() {
	python3 - "$T/layers" "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(eval(sys.argv[2]) for l in d["layers"]))
EOF
}
# blocks TIER: blocks held by the layers on TIER; total: by every layer;
# nlayers: how many layers
blocks() { lsum "l['blocks'] if l.get('tier') == '$1' else 0"; }
total() { lsum "l['blocks']"; }
nlayers() { lsum "1"; }
# top: the top layer's tier and blocks
top() {
	python3 -c 'import json, sys
l = json.load(open(sys.argv[1]))["layers"][0]
print(l.get("tier"), l["blocks"])' "$T/layers"
}
# mvjson KEY: KEY of the JSON `obj move --json` printed ($out)
mvjson() { echo "$out" | jget "d['$1']" 2>/dev/null; }

echo "--- 1. a composite object homed on each server"
head -c 3000000 /dev/urandom >"$T/blob"
NB=$(((3000000 + BLK - 1) / BLK))
objs=""
for h in 0 1 2; do
	id=$(ids 1 "$h" 100)
	cl obj put "$id" "$T/blob" --layout composite --tier flash
	check "obj put $id (home s$h) --layout composite --tier flash (rc $rc)" \
		test "$rc" -eq 0
	objs="$objs $id/$h"
done
for oh in $objs; do
	id=${oh%/*}
	layers "$id"
	check "$id: one layer, on flash, with all $NB blocks" \
		test "$rc" -eq 0 -a "$(nlayers)" = 1 -a "$(blocks flash)" = "$NB"
	check "$id reads back byte-exact" same "$id" "$T/blob"
done
cl obj stat "$(ids 1 0 100)" --json
check "obj stat: layout composite, its layer listed" \
	test "$(echo "$out" | jget "d['layout'] + ':' + str(len(d['layers']))")" = "composite:1"

echo "--- 2. moves between tiers"
for oh in $objs; do
	id=${oh%/*}
	cl obj move "$id" --to sas --json
	check "$id: move to sas (rc $rc): $NB blocks moved" \
		test "$rc" -eq 0 -a "$(mvjson moved_blocks)" = "$NB"
	layers "$id"
	check "$id: sas holds $NB blocks, flash none" \
		test "$(blocks sas)" = "$NB" -a "$(blocks flash)" = 0
	check "$id byte-exact on sas" same "$id" "$T/blob"
	cl obj move "$id" --to nvram --range 100:200 --json
	check "$id: blocks 100..199 up to nvram (rc $rc, moved $(mvjson moved_blocks))" \
		test "$rc" -eq 0 -a "$(mvjson moved_blocks)" = 100
	layers "$id"
	check "$id: nvram is the top layer with 100 blocks, sas $((NB - 100))" \
		test "$(top)" = "nvram 100" -a "$(blocks sas)" = $((NB - 100))
	runs=$(python3 -c 'import json, sys
print(" ".join("%d+%d:%s" % (r["start"], r["blocks"], r["on"]) for r in json.load(open(sys.argv[1]))["runs"]))' "$T/layers")
	check "$id: its runs (from its home's map) are 0+100:sas 100+100:nvram 200+$((NB - 200)):sas ($runs)" \
		test "$runs" = "0+100:sas 100+100:nvram 200+$((NB - 200)):sas"
	check "$id byte-exact over nvram and sas" same "$id" "$T/blob"
	cl obj move "$id" --to sas --range 0:1000000 --json
	check "$id: a range past the end back to sas (rc $rc): the 100 moved" \
		test "$rc" -eq 0 -a "$(mvjson moved_blocks)" = 100
	layers "$id"
	check "$id: sas holds all $NB blocks; flash, emptied below the top, dropped" \
		test "$(blocks sas)" = "$NB" -a "$(total)" = "$NB" -a "$(blocks flash)" = 0 \
		-a "$(nlayers)" = 2
	check "$id byte-exact" same "$id" "$T/blob"
	cl obj move "$id" --to nvram --range 5000:6000 --json
	check "$id: a range wholly past the end moves nothing (rc $rc)" \
		test "$rc" -eq 0 -a "$(mvjson moved_blocks)" = 0 -a "$(mvjson left_blocks)" = 0
done
id=$(ids 1 1 100)
cl obj move "$id" --to sas --range 0:281474976710657
check "a range past block 2^48 is refused (rc $rc)" test "$rc" -ne 0
grep -q "out of range" "$T/err" || no "the refusal says the range is out of range ($(cat "$T/err"))"
layers "$id"
check "$id unchanged after the refusal: all $NB blocks on sas" \
	test "$(blocks sas)" = "$NB" -a "$(total)" = "$NB"

echo "--- 3. layer requests ran on each object's home only"
bad=0
for oh in $objs; do
	id=${oh%/*}; h=${oh#*/}
	for s in 0 1 2; do
		n=$(grep -c "object $id: layer \(add\|move\|drop\) done" "$D/s$s.log")
		if [ "$s" = "$h" ] && [ "$n" -lt 5 ]; then
			bad=$((bad + 1)); echo "     $id: $n layer requests done on its home s$h"
		elif [ "$s" != "$h" ] && [ "$n" -ne 0 ]; then
			bad=$((bad + 1)); echo "     $id: $n layer requests done on s$s, not its home s$h"
		fi
	done
done
check "every object's layer requests on its home, none elsewhere" test "$bad" -eq 0

echo "--- 4. bad input"
plain=$(ids 1 2 300)
cl obj put "$plain" "$T/blob"
check "a plain object put (rc $rc)" test "$rc" -eq 0
cl obj move "$plain" --to sas
check "obj move of a plain object is refused (rc $rc)" test "$rc" -ne 0
grep -q "layout plain, not composite" "$T/err" ||
	no "the refusal names its layout ($(cat "$T/err"))"
cl obj layers "$plain"
check "obj layers of a plain object is refused (rc $rc)" test "$rc" -ne 0
check "the plain object still reads back" same "$plain" "$T/blob"
# suite composite (module clovis, its other suites left out), each test
# but move_frees_units, which reopens its store to count freed space
for t in layers bad_input map obj_scrub crash_during_move moves_race_writes; do
	cl_ut "composite/$t" -s clovis -x clovis,metanv -t "$t"
done

echo "--- 4b. strata-hsm through the cluster: dry run, then a promotion"
printf 'classes:\n  - { name: cold, tier: sas }\nrules:\n  - { class: cold, action: promote, to: flash }\n' >"$T/promote.yaml"
head -c 200000 /dev/urandom >"$T/hblob"
hobjs=""
for h in 0 1 2; do
	id=$(ids 1 "$h" 700)
	cl obj put "$id" "$T/hblob" --layout composite --tier sas
	check "obj put $id (home s$h) on sas (rc $rc)" test "$rc" -eq 0
	hobjs="$hobjs $id"
done
hs() {
	out=$(timeout 120 "$BD/strata-hsm" --cluster "$F" --db "$T/hsm.sqlite" \
		--policy "$T/promote.yaml" "$@" 2>"$T/err")
	rc=$?
}
hs --dry-run
check "strata-hsm --cluster --dry-run (rc $rc, $(cat "$T/err"))" test "$rc" -eq 0
for id in $hobjs; do
	check "dry run: would move $id from sas to flash" \
		grep -q "would move $id (200000 bytes) from sas to flash" <<<"$out"
	layers "$id"
	check "dry run: $id still on sas" test "$(blocks sas)" = 49
done
hs --once
check "strata-hsm --cluster --once (rc $rc, $(cat "$T/err"))" test "$rc" -eq 0
for id in $hobjs; do
	check "action: $id sas -> flash done" \
		grep -qE "^action [0-9]+: $id sas -> flash, 200704 bytes, done" <<<"$out"
	layers "$id"
	check "$id: every block on flash, the top layer" \
		test "$(blocks flash)" = 49 -a "$(blocks sas)" = 0 -a "$(top)" = "flash 49"
	check "$id byte-exact after the promotion" same "$id" "$T/hblob"
done
hs actions --json
for id in $hobjs; do
	check "the action log: $id moved sas -> flash, done" \
		grep -q "\"object\": \"$id\", .*\"from\": \"sas\", \"to\": \"flash\", .*\"state\": \"done\"" <<<"$out"
done
n1=$(ids 1 1 700)
act=$(grep "$n1" <<<"$out" | sed -n 's/.*"action": \([0-9]*\).*/\1/p' | head -n 1)
hs undo "$act"
check "undo $act (rc $rc)" test "$rc" -eq 0
layers "$n1"
check "$n1 back on sas after the undo" test "$(blocks sas)" = 49 -a "$(blocks flash)" = 0
check "$n1 byte-exact after the undo" same "$n1" "$T/hblob"

echo "--- 5. the home SIGKILLed in the middle of a big move"
big=$(ids 1 1 500)
head -c $((48 << 20)) /dev/urandom >"$T/big"
BB=$(((48 << 20) / BLK))
# its home restarted with the device model: a move to sas takes a while
srv_stop 1
export STRATA_LOG=3
srv_start 1 "$F" --model
unset STRATA_LOG
check "s1 back with the device model" wait_ready
for oh in $objs; do
	id=${oh%/*}
	[ "${oh#*/}" = 1 ] && check "$id (homed on s1) reads back after s1's restart" same "$id" "$T/blob"
done
cl obj put "$big" "$T/big" --layout composite --tier flash
check "48 MiB composite $big on s1 (rc $rc)" test "$rc" -eq 0
mid=0
for round in 1 2 3 4; do
	n0=$(wc -l <"$D/s1.log")
	"$S" --cluster "$F" obj move "$big" --to sas >"$T/mv.out" 2>&1 &
	mv=$!
	# until the move's first call began on s1 (at most 60 s), then a
	# moment into it
	for i in $(seq 1 3000); do
		tail -n +$((n0 + 1)) "$D/s1.log" | grep -q "object $big: moving blocks" && break
		kill -0 "$mv" 2>/dev/null || break
		sleep 0.02
	done
	sleep 0.0$((RANDOM % 8 + 1))
	kill -9 "$(spid 1)"
	kill -9 "$mv" 2>/dev/null
	wait "$mv" 2>/dev/null
	wait_gone "$(spid 1)"
	export STRATA_LOG=3
	srv_start 1 "$F" --model
	unset STRATA_LOG
	check "round $round: s1 back after its SIGKILL" wait_ready
	layers "$big"
	s=$(blocks sas); f=$(blocks flash); tt=$(total)
	echo "     round $round: flash $f, sas $s blocks (of $BB)"
	check "round $round: the layers' blocks add up to the object's $BB" \
		test "$rc" -eq 0 -a "$tt" = "$BB"
	check "round $round: every block reads back exactly" same "$big" "$T/big"
	if [ "$f" -gt 0 ] && [ "$s" -gt 0 ]; then
		mid=1
		break
	fi
	# the kill came before the first run's commit or after the last:
	# move it back and try again
	[ "$s" -gt 0 ] && cl obj move "$big" --to flash
done
check "a kill landed mid-move: both layers hold blocks (within 4 rounds)" test "$mid" -eq 1
cl obj move "$big" --to sas --json
check "the move run again (rc $rc) moves the rest" test "$rc" -eq 0
layers "$big"
check "every block of $big on sas" test "$(blocks sas)" = "$BB" -a "$(total)" = "$BB"
check "$big byte-exact on sas" same "$big" "$T/big"

echo "--- 5b. the HSM suite against the cluster, every server with the device model"
for s in 0 2; do
	srv_stop $s
	srv_start $s "$F" --model
done
check "s0 and s2 back with the device model" wait_ready
# hsm/promote: a working set read on sas is promoted by one round of the
# plugin (a client of the cluster) and its read latency falls (asserted:
# at most half); hsm/racing_writes: a writer racing demote and promote
# rounds, every byte checked
cl_ut "hsm/promote" -s hsm -t promote
grep -E "hsm promote:" "$T/ut" | sed 's/^ */     /'
cl_ut "hsm/racing_writes" -s hsm -t racing_writes
grep -E "hsm racing writes:" "$T/ut" | sed 's/^ */     /'
# hsm/hot_extent: of an object of which only blocks 16..31 are read, one
# round promotes exactly those blocks (its home's map: sas, flash, sas)
cl_ut "hsm/hot_extent" -s hsm -t hot_extent

echo "--- 6. the standbys' shadows hold the homes' layers and extent maps"
for s in 0 1 2; do srv_stop $s; done
# ddir I: sI's data directory (relative ones from the file's directory)
ddir() {
	local d
	d=$(awk -v n="s$1" '$0 ~ "name: "n"$" {f=1} f && /data_dir:/ {print $2; exit}' "$F")
	case $d in /*) echo "$d" ;; *) echo "$D/$d" ;; esac
}
# tables H DIR: the layer and ext tables of the LMDB environment in DIR
tables() {
	for t in layer ext; do
		echo "database=$t"
		mdb_dump -s "$t" "$1" 2>&1 | grep '^ '
	done
}
n=0
bad=0
for h in 0 1 2; do
	tables "$(ddir $h)/meta" >"$T/home$h"
	for s in 0 1 2; do
		[ "$s" = "$h" ] && continue
		[ -d "$(ddir $s)/shadow-s$h" ] || { bad=$((bad + 1)); echo "     s$s has no shadow of s$h"; continue; }
		n=$((n + 1))
		tables "$(ddir $s)/shadow-s$h" >"$T/sh$s-$h"
		cmp -s "$T/home$h" "$T/sh$s-$h" ||
			{ bad=$((bad + 1)); echo "     s$s's shadow of s$h differs"; }
	done
done
echo "     $n shadows; s1's store: $(grep -c '^ ' "$T/home1") layer and ext lines"
check "every shadow holds its home's layer and ext records" test "$bad" -eq 0 -a "$n" -eq 6
check "s1's layer records are there to compare" test "$(sed -n '/database=layer/,/database=ext/p' "$T/home1" | grep -c '^ ')" -ge 2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
