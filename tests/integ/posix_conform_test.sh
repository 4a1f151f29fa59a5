#!/usr/bin/env bash
# posix_conform_test.sh BUILD — the POSIX conformance suite and the NFS
# export on a strata-fuse mount (issue 33):
#
#   1. strata-fuse mounts a fresh embedded store (a scratch directory);
#   2. tests/posix/conform.py runs on an empty directory of the mount:
#      every case of its default groups, and of the optional ones the
#      mount supports (renameat2, perm, sgid, mknod, orphan, mmap); its
#      counts are this step's;
#   3. tests/integ/nfs_export_test.sh exports the mount through
#      NFS-Ganesha (FSAL VFS) and drives it with libnfs (ports 2049-2050:
#      this step's group "nfs" in tests/steps.list); its counts are added;
#   4. SIGTERM: the daemon exits 0 and the mount is gone.
#
# Skips (with the reason) where /dev/fuse or fusermount3 is missing or not
# root.  Every wait is bounded; the trap unmounts, stops the daemon and
# removes the store.  Ends with "N passed, N failed" (all three parts).
set -u

B=${1:-build}
BD=$(cd "$B" 2>/dev/null && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
F=$BD/strata-fuse
S=$BD/strata
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
end() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null ||
   [ "$(id -u)" != 0 ]; then
	echo "skip: needs /dev/fuse, fusermount3 and root"
	echo "0 passed, 0 failed"
	exit 0
fi
[ -x "$F" ] && [ -x "$S" ] || { no "$F and $S built"; end; }

T=$(mktemp -d "${TMPDIR:-/tmp}/strata-posix-conform.XXXXXX")
chmod 711 "$T" # the perm group's other user reaches the mount
STORE=$T/store
MNT=$T/mnt
mkdir -p "$MNT"
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	fi
	grep -q " $MNT " /proc/mounts && fusermount3 -u -z "$MNT" 2>/dev/null
	[ -d "$STORE" ] && timeout 60 "$S" --data "$STORE" -q destroy --yes >/dev/null 2>&1
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# counts FILE: adds the "N passed, N failed" last line of FILE
counts() {
	local l
	l=$(tail -n 1 "$1")
	if [[ $l =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		pass=$((pass + BASH_REMATCH[1]))
		fail=$((fail + BASH_REMATCH[2]))
	else
		no "$2 ended with its counts (last line: $l)"
	fi
}

echo "--- strata-fuse on a fresh embedded store"
"$F" --data "$STORE" --dev-size 256M --mkfs -f "$MNT" >"$T/fuse.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
	grep -q " $MNT fuse.strata " /proc/mounts && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q " $MNT fuse.strata " /proc/mounts; then
	no "the mount appears (log: $(tail -3 "$T/fuse.log"))"
	end
fi
ok "the mount appears"

echo "--- tests/posix/conform.py on the mount"
mkdir "$MNT/conform"
timeout 900 python3 "$HERE/../posix/conform.py" "$MNT/conform" \
	--timeout 120 >"$T/conform.out" 2>&1
sed 's/^/  /' "$T/conform.out" | grep -v "^  ok " | tail -n 40
grep -c "^ok " "$T/conform.out" | sed 's/^/  conformance cases passed: /'
counts "$T/conform.out" "conform.py"

echo "--- the NFS export of the mount (nfs_export_test.sh)"
timeout 900 bash "$HERE/nfs_export_test.sh" "$B" "$MNT" >"$T/nfs.out" 2>&1
sed 's/^/  /' "$T/nfs.out" | grep -v "^  ok " | tail -n 30
counts "$T/nfs.out" "nfs_export_test.sh"

echo "--- SIGTERM"
kill -TERM "$pid"
for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
	no "the daemon exits within 60 s of SIGTERM"
else
	wait "$pid"; rc=$?; pid=""
	[ "$rc" -eq 0 ] && ok "the daemon exits 0 on SIGTERM" || no "the daemon exits 0 on SIGTERM (rc $rc)"
	grep -q " $MNT " /proc/mounts && no "the mount is gone" || ok "the mount is gone"
fi
end
