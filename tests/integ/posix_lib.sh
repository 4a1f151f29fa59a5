# posix_lib.sh — what the strata-fuse steps share (sourced, not run):
#
#   px_need BUILD [root]   sets BD, F (strata-fuse), S (strata), pass=0,
#                          fail=0; exits with "skip: ..." and "0 passed, 0
#                          failed" where /dev/fuse or fusermount3 is
#                          missing (or, with root, when not root), and
#                          with "0 passed, 1 failed" when F or S is not
#                          built
#   ok / no / check        count a check, as the other integ scripts
px_need() {
	BD=$(cd "$1" 2>/dev/null && pwd)
	F=$BD/strata-fuse
	S=$BD/strata
	pass=0
	fail=0
	if [ ! -c /dev/fuse ]; then
		echo "skip: /dev/fuse is missing (no FUSE on this machine)"
		echo "0 passed, 0 failed"
		exit 0
	fi
	if ! command -v fusermount3 >/dev/null; then
		echo "skip: fusermount3 is not installed (apt-get install fuse3)"
		echo "0 passed, 0 failed"
		exit 0
	fi
	if [ "${2:-}" = root ] && [ "$(id -u)" != 0 ]; then
		echo "skip: needs root (chown, other users through allow_other," \
			"open_by_handle_at)"
		echo "0 passed, 0 failed"
		exit 0
	fi
	if [ ! -x "$F" ] || [ ! -x "$S" ]; then
		echo "FAIL: $F or $S not built"
		echo "0 passed, 1 failed"
		exit 1
	fi
}

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else no "$n"; fi; }
