#!/usr/bin/env bash
# posix_tools_test.sh BUILD — everyday tools on a strata-fuse mount
# (gateways/posix/fuse_main.c, issue 33), on a fresh embedded store:
#
#   1. cp -a of a tree (files of several sizes, empty ones, subdirectories,
#      symlinks, hard links, modes, times) into the mount; diff -r back,
#      and modes, owners, times and link targets compared (stat);
#   2. rsync -a into the mount, then rsync -a --dry-run --itemize-changes
#      has nothing to do; a change at the source is the one item;
#   3. tar c of the tree | tar x in the mount; tar c on the mount | tar x
#      outside; both compared;
#   4. git: a repository made outside, cloned into the mount; git status
#      clean; an edit committed inside the mount; git fsck and git log;
#   5. fio (psync): random 4 KiB and sequential 1 MiB writes of 32 MiB
#      files with verify=crc32c, bounded runtime, verification passes;
#   6. sqlite3: a database on the mount, 1,000 rows inserted in one
#      transaction, the count and the sum queried, PRAGMA integrity_check
#      ok; again after an unmount and a remount.
#
# A tool that is not installed is skipped with a message.  Skips (with the
# reason) when /dev/fuse or fusermount3 is missing.  Everything bounded in
# time; the trap unmounts, stops the daemon (by its pid) and removes the
# store.  Ends with "N passed, N failed".
set -u

B=${1:-build}
. "$(dirname "$0")/posix_lib.sh"
px_need "$B"

T=$(mktemp -d "${TMPDIR:-/tmp}/strata-posix-tools.XXXXXX")
STORE=$T/store
MNT=$T/mnt
LOG=$T/fuse.log
SRC=$T/src
mkdir -p "$MNT"
pid=""

cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
	fi
	if grep -q " $MNT " /proc/mounts; then
		fusermount3 -u -z "$MNT" 2>/dev/null
	fi
	[ -d "$STORE" ] && timeout 60 "$S" --data "$STORE" -q destroy --yes \
		>/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

have() {
	command -v "$1" >/dev/null && return 0
	echo "skip $1: not installed"
	return 1
}

# fs_mount: the daemon in the background (-f); waits up to 60 s.
fs_mount() {
	"$F" --data "$STORE" --dev-size 128M --mkfs -f "$MNT" >>"$LOG" 2>&1 &
	pid=$!
	for _ in $(seq 1 600); do
		grep -q " $MNT fuse.strata " /proc/mounts && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "  (mount did not appear; log:)"; tail -5 "$LOG" | sed 's/^/  /'
	return 1
}

# fs_umount: SIGTERM; 0 when the daemon exited 0 within 60 s.
fs_umount() {
	local rc
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 1 600); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		fusermount3 -u -z "$MNT" 2>/dev/null
		pid=""
		return 1
	fi
	wait "$pid"
	rc=$?
	pid=""
	! grep -q " $MNT " /proc/mounts && [ "$rc" -eq 0 ]
}

# run NAME SECONDS CMD...: the command bounded in time, its output in
# $T/out (shown on failure)
run() {
	local n=$1 s=$2
	shift 2
	local rc=0
	timeout "$s" "$@" >"$T/out" 2>&1 || rc=$?
	if [ "$rc" -eq 0 ]; then
		ok "$n"
		return 0
	fi
	no "$n (rc $rc)"
	tail -15 "$T/out" | sed 's/^/  /'
	return 1
}

# meta DIR: each path's type, mode, owner, size (not of directories:
# file systems count those differently), mtime (s) and link target
meta() {
	(cd "$1" && { find . ! -type d -printf '%p %y %m %u %g %s %T@ %l\n'
		find . -type d -printf '%p %y %m %u %g - %T@\n'; } |
		sed -E 's/ ([0-9]+)\.[0-9]+( |$)/ \1\2/' | sort)
}

# A tree: files of several sizes, an empty file and directory, nested
# directories, relative and dangling symlinks, a hard link, odd modes and
# names, set times.
mkdir -p "$SRC/tree/a/b/c" "$SRC/tree/empty" "$SRC/tree/x y"
python3 - "$SRC/tree" <<'EOF'
import os, random, sys
r = random.Random(7)
d = sys.argv[1]
for i, n in enumerate([0, 1, 100, 4096, 65535, 65536, 200001, 1 << 20,
                       3 * (1 << 20) + 5]):
    open(os.path.join(d, "a", "f%d" % i), "wb").write(r.randbytes(n))
for i in range(40):
    open(os.path.join(d, "a", "b", "small%02d" % i), "w").write("x" * i)
open(os.path.join(d, "a", "b", "c", "deep"), "w").write("deep\n")
open(os.path.join(d, "x y", "sp ace"), "w").write("space\n")
EOF
ln -s ../a/f2 "$SRC/tree/x y/rel"
ln -s /nonexistent "$SRC/tree/dangling"
ln "$SRC/tree/a/f3" "$SRC/tree/a/f3.hard"
chmod 600 "$SRC/tree/a/f1"
chmod 755 "$SRC/tree/a/f4"
chmod 700 "$SRC/tree/a/b/c"
chmod 1777 "$SRC/tree/empty"
touch -d "2010-05-06 07:08:09" "$SRC/tree/a/f5" "$SRC/tree/a/b"

if ! fs_mount; then
	no "strata-fuse --mkfs -f mounts"
	echo "$pass passed, $fail failed"
	exit 1
fi
ok "strata-fuse --mkfs -f mounts"

# ------------------------------------------------------------- 1. cp -a
run "cp -a of the tree into the mount" 300 cp -a "$SRC/tree" "$MNT/cp"
run "diff -r back" 300 diff -r --no-dereference "$SRC/tree" "$MNT/cp"
meta "$SRC/tree" >"$T/meta.src"
meta "$MNT/cp" >"$T/meta.cp"
check "modes, owners, sizes, times and link targets kept" \
	diff "$T/meta.src" "$T/meta.cp"
check "the hard link stayed one (cp -a)" eval '
	[ "$(stat -c %i "$MNT/cp/a/f3")" = "$(stat -c %i "$MNT/cp/a/f3.hard")" ]'

# ------------------------------------------------------------- 2. rsync
if have rsync; then
	run "rsync -a into the mount" 300 rsync -aH "$SRC/tree/" "$MNT/rs/"
	run "rsync --dry-run --itemize-changes: runs" 300 \
		rsync -aH --dry-run --itemize-changes "$SRC/tree/" "$MNT/rs/"
	check "rsync --dry-run --itemize-changes: nothing to do" \
		eval '[ ! -s "$T/out" ]'
	echo changed >"$SRC/tree/a/b/small05"
	timeout 300 rsync -aH --dry-run --itemize-changes "$SRC/tree/" \
		"$MNT/rs/" >"$T/out" 2>&1
	check "rsync: a change at the source is the one item" \
		eval '[ "$(grep -c . "$T/out")" = 1 ] && grep -q "a/b/small05$" "$T/out"'
	run "rsync -a of the change" 300 rsync -aH "$SRC/tree/" "$MNT/rs/"
	run "diff -r after rsync" 300 diff -r --no-dereference "$SRC/tree" "$MNT/rs"
fi

# ------------------------------------------------------------- 3. tar
mkdir -p "$MNT/tar" "$T/untar"
run "tar c | tar x into the mount" 300 \
	sh -c "tar -C '$SRC/tree' -cf - . | tar -C '$MNT/tar' -xpf -"
run "diff -r after tar x" 300 diff -r --no-dereference "$SRC/tree" "$MNT/tar"
run "tar c on the mount | tar x outside" 300 \
	sh -c "tar -C '$MNT/tar' -cf - . | tar -C '$T/untar' -xpf -"
check "tar: modes, sizes, times and links through the mount and back" \
	eval '[ "$(meta "$SRC/tree")" = "$(meta "$T/untar")" ]'

# ------------------------------------------------------------- 4. git
if have git; then
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com
	export GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
	export GIT_CONFIG_NOSYSTEM=1 HOME=$T
	git config --global init.defaultBranch main
	git config --global safe.directory '*'
	G=$SRC/repo
	mkdir -p "$G"
	(cd "$G" && git init -q && cp -r "$SRC/tree/a" . &&
		printf 'line %s\n' $(seq 1 500) >lines.txt &&
		git add -A && git commit -qm one &&
		echo more >>lines.txt && git commit -qam two) >"$T/out" 2>&1
	run "git clone into the mount" 300 git clone -q "$G" "$MNT/repo"
	run "git status in the clone" 120 git -C "$MNT/repo" status --porcelain
	check "git status: clean" eval '[ ! -s "$T/out" ]'
	echo "edited in the mount" >>"$MNT/repo/lines.txt"
	mkdir "$MNT/repo/newdir"
	echo new >"$MNT/repo/newdir/new.txt"
	run "git commit inside the mount" 120 \
		sh -c "cd '$MNT/repo' && git add -A && git commit -qm three"
	run "git status after the commit" 120 \
		git -C "$MNT/repo" status --porcelain
	check "git status: clean after the commit" eval '[ ! -s "$T/out" ]'
	run "git fsck --full" 300 git -C "$MNT/repo" fsck --full --strict
	run "git log" 60 git -C "$MNT/repo" log --oneline
	check "git log: three commits" eval '[ "$(grep -c . "$T/out")" = 3 ]'
	run "git gc (packs and prunes on the mount)" 300 \
		git -C "$MNT/repo" gc -q --prune=now
	run "git fsck after gc" 300 git -C "$MNT/repo" fsck --full --strict
	run "git clone back out of the mount" 300 \
		git clone -q "$MNT/repo" "$T/back"
	check "the clone back has the edit" \
		eval 'tail -1 "$T/back/lines.txt" | grep -q "edited in the mount"'
fi

# ------------------------------------------------------------- 5. fio
if have fio; then
	mkdir -p "$MNT/fio"
	run "fio: random 4 KiB writes, verify=crc32c" 600 \
		fio --name=rand --directory="$MNT/fio" --ioengine=psync --verify_state_save=0 \
		--rw=randwrite --bs=4k --size=32m --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --fallocate=none \
		--runtime=240 --end_fsync=1
	check "fio random: no errors reported" \
		eval '! grep -Eq "err=[ ]*[1-9]|verify: bad|crc32c: verify failed" "$T/out"'
	run "fio: sequential 1 MiB writes, verify=crc32c" 600 \
		fio --name=seq --directory="$MNT/fio" --ioengine=psync --verify_state_save=0 \
		--rw=write --bs=1m --size=32m --verify=crc32c --do_verify=1 \
		--verify_fatal=1 --fallocate=none --runtime=240 --fsync=8
	check "fio sequential: no errors reported" \
		eval '! grep -Eq "err=[ ]*[1-9]|verify: bad|crc32c: verify failed" "$T/out"'
fi

# ------------------------------------------------------------- 6. sqlite
if have sqlite3; then
	DB=$MNT/db/test.db
	mkdir -p "$MNT/db"
	run "sqlite3: create and insert 1,000 rows in a transaction" 300 \
		sqlite3 "$DB" "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER, s TEXT);
		BEGIN;
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
		INSERT INTO t SELECT i, i * 3, printf('row %d', i) FROM n;
		COMMIT;"
	run "sqlite3: count, sum, integrity_check" 120 \
		sqlite3 "$DB" "SELECT count(*), sum(v) FROM t; PRAGMA integrity_check;"
	check "sqlite3: 1000 rows, sum 1501500, integrity ok" \
		eval '[ "$(cat "$T/out")" = "1000|1501500
ok" ]'
	run "sqlite3: updates and deletes (journal)" 120 \
		sqlite3 "$DB" "BEGIN; UPDATE t SET v = v + 1 WHERE id % 2 = 0;
		DELETE FROM t WHERE id > 900; COMMIT; VACUUM;"
	if check "unmount for sqlite" fs_umount && fs_mount; then
		run "sqlite3 after remount" 120 sqlite3 "$DB" \
			"SELECT count(*), sum(v) FROM t; PRAGMA integrity_check;"
		check "sqlite3 after remount: 900 rows, sum 1216800, ok" \
			eval '[ "$(cat "$T/out")" = "900|1216800
ok" ]'
	fi
fi

check "unmount: daemon exits 0" fs_umount
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
