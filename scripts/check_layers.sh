#!/bin/bash
# check_layers.sh [ROOT] — the include-direction check of `make check`
# (issue 27 point 1).  Arrows go one way:
#
#   gateways -> clovis -> (layouts, dtm, ha) -> core -> tiers -> ground
#
# A file of a room may include its own room's headers and those of any room
# below it; the ground floor (core/errors.h, core/log.h, core/fault.h,
# core/limits.h, core/types.h: ids, error codes, logging, fault points,
# limits) is below every room.  Telemetry (addb/: the metrics every room
# updates, addb/addb.h) is a room of its own just above the ground floor:
# every room may include it, and it includes only the ground floor.
# Inside core, the transport (core/rpc/) is
# below the engine (core/*.h), which is below the server daemon
# (core/server/).  ha/ (the HA subsystem: the cluster map in etcd, the
# event analyzer) is a room beside dtm/ and layouts/: above the engine, the
# transport and the server daemon (core/ whole), below clovis/ (whose CLI
# starts etcd and shows the map); it includes none of dtm/ or layouts/ and
# they none of it.  fdmi/ (FDMI consumers of the engine's record log,
# issue 31) sits beside ha/ in the same way; its plugins (fdmi/hsm/,
# fdmi/attridx/, fdmi/integrity/: the HSM, attribute-index and integrity
# programs, with fdmi/plugin/ what they share; Clovis clients and FDMI consumers) are a room of their own
# above clovis/, beside gateways/, and include only clovis/clovis.h below.  clovis/clovis.h, the public header, belongs to clovis:
# nothing under core/, tiers/, layouts/, dtm/ or ha/ may include it.  LMDB is
# the engine's (core/*.c, core/meta.h): no other file, the server daemon
# core/server/ included, includes <lmdb.h> or calls mdb_*(); they go
# through core/meta_txn.h.  Nor does any file under core/, tiers/,
# layouts/, dtm/ or ha/ use a clovis_ or CLOVIS_ identifier (code only:
# comments and string literals may name the API): they take the ground
# floor's st_/ST_ twins (core/types.h, core/limits.h), and clovis/
# converts at its boundary.
#
# Composition roots: a product program's main() assembles every layer
# (it hands the layers above the engine and the server to them: the unit
# layouts' table, eng_conf.ec_layout_ops; the server's modules,
# srv_parts.sp_modules), so the file that defines it may include any
# room (the LMDB rule still holds for them).  They are listed by name in
# ROOTS below, not found by pattern, so that no other file gets that
# licence (the self-test checks that another main, gateways/s3/s3_main.c,
# still may not include the engine): core/server/server.c, the
# strata-server main.  clovis_init() assembles the embedded engine, and
# clovis is above the layers it assembles, so it needs no entry.
#
# Unit tests (*/ut/*) may also include tests/ut.h and the test helpers of
# their room.  Files under tests/ (integration, bench, fuzz) are not
# checked: they drive the product from the outside.
#
# Wrong-way includes that existed when the check was added are listed in
# DEBT below with the work that removes them; the check fails on any
# wrong-way include not listed there, and on a listed one that is gone
# (so that the list only shrinks).  Prints one line per finding, then
# "N passed, N failed" (files).
#
# check_layers.sh --self-test: adds a wrong-way include to a copy of the
# tree and checks that the check fails on it (run by make check).
set -u
ROOT=${1:-.}

# file:included-header, one per line: the wrong-way includes of the tree
# when this check was added (2026-11-29), and what removes them (issue 27
# points 1 and 2):
#  - (paid: the ids, error codes, tiers, limits, vectors and records that
#    core and dtm took from clovis/clovis.h are the ground floor's
#    core/types.h and core/limits.h, clovis/ converting at its boundary;
#    the unit tests of core and dtm that drive the Clovis API are in
#    clovis/ut; the engine reaches the unit layouts' executor through
#    struct eng_layout_ops; the server takes dtm's participant as a module
#    from its main; the unit layouts' executor, layouts/stripe*.c, takes
#    its unit records through core/meta_txn.h instead of calling LMDB)
# FILE:HEADER lists a wrong-way include, FILE:lmdb a file outside the
# engine that calls LMDB (mdb_*) itself.  The list is empty: keep it so.
DEBT='
'

# The files that define a product program's main() (composition roots, see
# the header): they may include any room.
ROOTS='
core/server/server.c
'

# The room of a path, and its rank: a room may include ranks below its
# own and its own room.  Sets ROOM (no subshell: called for every include
# of every file, 19 times over in the self-test).
room_of() {
	case "$1" in
	core/errors.h | core/log.h | core/fault.h | core/limits.h | core/types.h)
		ROOM=ground ;;
	tests/*) ROOM=tests ;;
	addb/*) ROOM=addb ;;
	tiers/*) ROOM=tiers ;;
	core/rpc/*) ROOM=rpc ;;
	core/server/*) ROOM=server ;;
	core/*) ROOM=engine ;;
	layouts/*) ROOM=layouts ;;
	dtm/*) ROOM=dtm ;;
	ha/*) ROOM=ha ;;
	fdmi/hsm/* | fdmi/attridx/* | fdmi/integrity/* | fdmi/plugin/*) ROOM=plugins ;;
	fdmi/*) ROOM=fdmi ;;
	clovis/*) ROOM=clovis ;;
	gateways/*) ROOM=gateways ;;
	*) ROOM=other ;;
	esac
}

# is LINE one of the lines of LIST (ROOTS, DEBT)?
listed() {
	[[ $'\n'$2$'\n' == *$'\n'"$1"$'\n'* ]]
}

# may ROOM include a header of room TO?
allowed() {
	local from=$1 to=$2
	[ "$from" = "$to" ] || [ "$to" = ground ] && return 0
	[ "$to" = addb ] && return 0 # telemetry: below every room
	case "$from:$to" in
	addb:*) return 1 ;;
	tiers:*) return 1 ;;
	rpc:*) return 1 ;;
	engine:tiers | engine:rpc) return 0 ;;
	server:tiers | server:rpc | server:engine) return 0 ;;
	layouts:tiers | layouts:rpc | layouts:engine) return 0 ;;
	dtm:tiers | dtm:rpc | dtm:engine | dtm:server) return 0 ;;
	ha:tiers | ha:rpc | ha:engine | ha:server) return 0 ;;
	fdmi:tiers | fdmi:rpc | fdmi:engine | fdmi:server) return 0 ;;
	clovis:tiers | clovis:rpc | clovis:engine | clovis:server) return 0 ;;
	clovis:layouts | clovis:dtm | clovis:ha | clovis:fdmi) return 0 ;;
	gateways:clovis) return 0 ;;
	plugins:clovis) return 0 ;;
	esac
	return 1
}

# clovis_ident < FILES: "FILE:LINE:NAME" of the first clovis_/CLOVIS_
# identifier in the code of each file named on standard input, one a line
# (comments, string and character literals blanked out, line breaks
# kept), for each file that has one.
clovis_ident() {
	xargs -r -d '\n' perl -0777 -ne '
		s{/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27}
		 { (my $m = $&) =~ s/[^\n]//g; $m }gse;
		if (/\b((?:clovis|CLOVIS)_\w+)/) {
			my $n = (substr($_, 0, $-[0]) =~ tr/\n//) + 1;
			print "$ARGV:$n:$1\n";
		}'
}

check_tree() { # check_tree DIR: prints findings, returns the failed count
	local dir=$1 pass=0 fail=0 f inc line from to bad seen= root ent files
	local -A incs=() mdb=() cid=()
	# one grep, one sed and one perl over every file (not one each per
	# file): FILE:LINE:HEADER of every include, the first mdb_*() call,
	# the first clovis_ identifier
	files=$(cd "$dir" && find addb core tiers layouts dtm ha fdmi clovis gateways \
		-name '*.[ch]' 2>/dev/null | sort)
	while IFS= read -r ent; do
		[ -n "$ent" ] || continue
		f=${ent%%:*}
		incs[$f]+="${ent#*:}"$'\n'
	done < <(cd "$dir" && printf '%s\n' "$files" |
		 xargs -r -d '\n' grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*("[^"]*"|<lmdb\.h>)' |
		 sed -E 's/^([^:]*):([0-9]+):[^"<]*["<]([^">]*)[">].*/\1:\2:\3/')
	while IFS= read -r ent; do
		[ -n "$ent" ] || continue
		f=${ent%%:*} ent=${ent#*:}
		[ -n "${mdb[$f]:-}" ] || mdb[$f]=${ent%%:*}
	done < <(cd "$dir" && printf '%s\n' "$files" |
		 xargs -r -d '\n' grep -HnE '\bmdb_[a-z_]+[[:space:]]*\(')
	while IFS= read -r ent; do
		[ -n "$ent" ] || continue
		cid[${ent%%:*}]=${ent#*:}
	done < <(cd "$dir" && printf '%s\n' "$files" | clovis_ident)
	while IFS= read -r f; do
		[ -n "$f" ] || continue
		room_of "$f"
		from=$ROOM
		bad=0
		root=0
		listed "$f" "$ROOTS" && root=1
		while IFS=: read -r line inc; do
			[ -n "$inc" ] || continue
			room_of "$inc"
			to=$ROOM
			if [ "$inc" = lmdb.h ]; then
				case "$from" in
				engine | ground) continue ;;
				esac
				to=lmdb
			elif [ "$inc" = tests/ut.h ] || [ "$to" = tests ]; then
				case "$f" in */ut/*) continue ;; esac
			elif [ "$root" = 1 ] || allowed "$from" "$to"; then
				continue
			fi
			if listed "$f:$inc" "$DEBT"; then
				seen="$seen $f:$inc"
				continue
			fi
			echo "$f:$line: includes $inc: room $from may not include room $to (arrows: gateways -> clovis -> layouts, dtm, ha -> core server -> engine -> rpc, tiers -> addb -> ground)"
			bad=1
		done <<<"${incs[$f]:-}"
		case "$from" in
		engine | ground | tests) ;;
		*)
			line=${mdb[$f]:-}
			if [ -n "$line" ]; then
				if listed "$f:lmdb" "$DEBT"; then
					seen="$seen $f:lmdb"
				else
					echo "$f:$line: calls LMDB (mdb_*): only the engine (core/*.c) does; go through core/meta_txn.h's contract"
					bad=1
				fi
			fi ;;
		esac
		case "$from" in
		ground | addb | engine | rpc | server | tiers | layouts | dtm | ha)
			line=${cid[$f]:-}
			if [ -n "$line" ]; then
				echo "$f:${line%%:*}: uses ${line#*:}: room $from takes the ground floor's st_/ST_ names (core/types.h, core/limits.h), not clovis.h's"
				bad=1
			fi ;;
		esac
		if [ "$bad" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
	done <<<"$files"
	# a debt entry that no longer exists must leave the list
	while IFS= read -r d; do
		[ -n "$d" ] || continue
		f=${d%%:*} inc=${d#*:}
		if [ "$inc" = lmdb ]; then
			grep -qE '\bmdb_[a-z_]+[[:space:]]*\(' "$dir/$f" 2>/dev/null && continue
		elif [ -f "$dir/$f" ] && grep -qF "#include \"$inc\"" "$dir/$f"; then
			continue
		fi
		if true; then
			echo "$d: listed in DEBT of scripts/check_layers.sh but no longer there: remove it from the list"
			fail=$((fail + 1))
		fi
	done <<<"$DEBT"
	echo "$pass passed, $fail failed"
	return $((fail > 0))
}

if [ "${1:-}" = --self-test ]; then
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	(cd "$(dirname "$0")/.." && tar cf - core tiers layouts dtm ha clovis gateways) |
		tar xf - -C "$t"
	ok=0 bad=0
	if out=$(check_tree "$t"); then
		echo "ok: the tree as it is passes"
		ok=$((ok + 1))
	else
		echo "FAIL: the tree as it is does not pass:"
		echo "$out" | tail -5
		bad=$((bad + 1))
	fi
	for inj in "tiers/tier.c:core/engine.h" "core/obj.c:clovis/clovis.h" \
		   "core/rpc/ep.c:core/server/srv.h" "gateways/s3/s3_main.c:core/engine.h" \
		   "clovis/op.c:<lmdb.h>" "core/server/srv.c:<lmdb.h>" \
		   "gateways/s3/s3_main.c:mdb_call" "core/server/srv_idx.c:mdb_call" \
		   "core/server/server.c:mdb_call" \
		   "core/obj.c:clovis_name" "dtm/term.c:clovis_name" \
		   "core/server/srv.c:ha/map.h" "ha/map.c:clovis/clovis.h" \
		   "ha/map.c:dtm/dtm.h" "dtm/term.c:ha/map.h" \
		   "ha/etcd.c:clovis_name"; do
		f=${inj%%:*} h=${inj#*:}
		cp "$t/$f" "$t/$f.orig"
		case "$h" in
		"<"*) printf '#include %s\n' "$h" >>"$t/$f" ;;
		mdb_call) printf 'static void f(void) { mdb_txn_abort(0); }\n' >>"$t/$f" ;;
		clovis_name)
			printf '/* CLOVIS_KEY_MAX in a comment is fine */\n' >>"$t/$f"
			printf 'static const int x = CLOVIS_KEY_MAX;\n' >>"$t/$f" ;;
		*) printf '#include "%s"\n' "$h" >>"$t/$f" ;;
		esac
		if out=$(check_tree "$t") || ! echo "$out" | grep -qF "$f:"; then
			echo "FAIL: a wrong-way include ($f includes $h) was not found"
			bad=$((bad + 1))
		else
			echo "ok: found: $(echo "$out" | grep -F "$f:" | head -1)"
			ok=$((ok + 1))
		fi
		mv "$t/$f.orig" "$t/$f"
	done
	# a debt entry paid off must leave the list: the first clovis.h entry
	# still listed, its include taken out of the copy; when none is left
	# (issue 27 point 1 paid them), a fresh one: core/obj.c includes
	# clovis/clovis.h in the copy, listed in DEBT (so the tree passes),
	# then the include goes and the entry must be reported
	f=$(echo "$DEBT" | grep ':clovis/clovis.h$' | head -1)
	f=${f%%:*}
	fresh=
	if [ -z "$f" ]; then
		f=core/obj.c fresh=1
		DEBT="$DEBT$f:clovis/clovis.h
"
		cp "$t/$f" "$t/debt.orig"
		printf '#include "clovis/clovis.h"\n' >>"$t/$f"
		if out=$(check_tree "$t"); then
			echo "ok: a listed wrong-way include ($f includes clovis/clovis.h) passes"
			ok=$((ok + 1))
		else
			echo "FAIL: a listed wrong-way include ($f includes clovis/clovis.h) was reported:"
			echo "$out" | tail -3
			bad=$((bad + 1))
		fi
		mv "$t/debt.orig" "$t/$f"
	fi
	cp "$t/$f" "$t/debt.orig"
	sed -i '/#include "clovis\/clovis.h"/d' "$t/$f"
	if out=$(check_tree "$t") || ! echo "$out" | grep -q "^$f:clovis/clovis.h: listed in DEBT"; then
		echo "FAIL: a DEBT entry no longer in the tree ($f) was not reported"
		bad=$((bad + 1))
	else
		echo "ok: found: $(echo "$out" | grep "^$f:" | head -1)"
		ok=$((ok + 1))
	fi
	mv "$t/debt.orig" "$t/$f"
	[ -z "$fresh" ] || DEBT=${DEBT%"$f:clovis/clovis.h
"}
	echo "$ok passed, $bad failed"
	[ "$bad" -eq 0 ]
	exit
fi
check_tree "$ROOT"
