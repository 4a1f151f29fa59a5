#!/usr/bin/env bash
# install_test.sh BUILD — `make install` as a user would use it.
#
#   1. make install DESTDIR=STAGE PREFIX=/opt/strata-X: every file under
#      STAGE/opt/strata-X, strata.pc naming /opt/strata-X and no file
#      naming STAGE (DESTDIR is only where files are put);
#   2. make install PREFIX=P (a temporary directory): header, static and
#      shared library with its two links, strata.pc, strata, strata-server
#      and strata-s3; the HDF5 driver (strata_h5.h, libstrata_h5, which
#      finds the installed libstrata.so.0, and the h5py plugin);
#   3. clovis/examples/hello.c copied out of the tree and built with
#      nothing but `pkg-config --cflags --libs strata` (PKG_CONFIG_PATH=
#      P/lib/pkgconfig) and an rpath from `pkg-config --variable=libdir`;
#      it runs, finds P's libstrata.so.0 (ldd) and all its checks pass;
#   4. the installed `strata cluster up --nodes 1` (loopback, base port
#      9000-9999: no other step uses them, tests/steps.list) starts P's
#      strata-server; an object put and got back through the cluster; the
#      installed strata-s3 serves the cluster to Debian's aws cli (mb, cp
#      up and down, cmp); cluster down;
#   5. make uninstall PREFIX=P leaves no file under P.
# Everything is under one mktemp directory, removed on any exit (servers
# and gateway killed).  Ends with "N passed, N failed".
set -u
B=${1:-build}
BD=$(cd "$B" 2>/dev/null && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-install-test.XXXXXX")
P=$T/prefix
D=$T/cl
PORT=$((9000 + ($$ % 250) * 4))
pass=0
fail=0
gw_pid=

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else no "$n"; fi; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

cleanup() {
	local f
	[ -n "$gw_pid" ] && kill -9 "$gw_pid" 2>/dev/null
	for f in "$D"/s*.pid "$D"/etcd*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ -n "$BD" ] && [ -x "$BD/strata-server" ] && [ -x "$BD/strata-s3" ] ||
	{ no "$B: strata-server and strata-s3 built"; finish; }
. "$top/tests/tools.sh"
# BUILD as the Makefile names it (relative to the top when inside it, so
# that the dependency files' rules match and nothing is rebuilt)
MB=${BD#"$top"/}
mk() { make --no-print-directory -C "$top" BUILD="$MB" "$@"; }

echo "--- make install DESTDIR=$T/stage PREFIX=/opt/strata-$$"
mk install DESTDIR="$T/stage" PREFIX="/opt/strata-$$" >"$T/stage.out" 2>&1
check "make install with DESTDIR" test $? -eq 0 || tail -5 "$T/stage.out"
pc=$T/stage/opt/strata-$$/lib/pkgconfig/strata.pc
check "DESTDIR: strata.pc says prefix=/opt/strata-$$" \
	grep -qx "prefix=/opt/strata-$$" "$pc"
check "DESTDIR: no installed file names the staging directory" \
	test -z "$(grep -rl "$T/stage" "$T/stage" 2>/dev/null)"
check "DESTDIR: nothing outside the staging directory" test ! -e "/opt/strata-$$"
mk install PREFIX=relative/dir >"$T/rel.out" 2>&1
check "a relative PREFIX is refused" test $? -ne 0
check "... naming it" grep -q "PREFIX='relative/dir' must be an absolute path" "$T/rel.out"

echo "--- make install PREFIX=$P"
mk install PREFIX="$P" >"$T/inst.out" 2>&1
check "make install PREFIX=$P" test $? -eq 0 || tail -5 "$T/inst.out"
for f in include/strata/clovis.h lib/libstrata.a lib/libstrata.so.0.1.0 \
	 lib/pkgconfig/strata.pc bin/strata bin/strata-server bin/strata-s3 \
	 include/strata/strata_h5.h lib/libstrata_h5.a lib/libstrata_h5.so.0.1.0 \
	 lib/strata/hdf5-plugin/libh5fd_strata.so; do
	check "installed $f" test -f "$P/$f"
done
check "lib/libstrata.so.0 -> libstrata.so.0.1.0" \
	test "$(readlink "$P/lib/libstrata.so.0")" = libstrata.so.0.1.0
check "lib/libstrata.so -> libstrata.so.0" \
	test "$(readlink "$P/lib/libstrata.so")" = libstrata.so.0
for f in strata strata-server strata-s3; do
	check "bin/$f runs (--help)" "$P/bin/$f" --help >/dev/null 2>&1
done
check "lib/libstrata_h5.so.0 finds the installed libstrata.so.0 (ldd)" \
	grep -q "libstrata.so.0 => $P/lib/libstrata.so.0 " \
	<(ldd "$P/lib/libstrata_h5.so.0" 2>&1)

echo "--- hello.c built against the installed library with pkg-config only"
export PKG_CONFIG_PATH=$P/lib/pkgconfig
flags=$(pkg-config --cflags --libs strata 2>"$T/pc.err")
case " $flags " in
*" -I$P/include "*" -L$P/lib -lstrata "*) ok "pkg-config --cflags --libs strata: $flags" ;;
*) no "pkg-config --cflags --libs strata: '$flags' $(cat "$T/pc.err")" ;;
esac
libdir=$(pkg-config --variable=libdir strata)
mkdir -p "$T/user"
cp "$top/clovis/examples/hello.c" "$T/user/"
# shellcheck disable=SC2086 # the flags are words
(cd "$T/user" && cc -o hello hello.c $flags -Wl,-rpath,"$libdir") >"$T/cc.out" 2>&1
check "cc hello.c \$(pkg-config --cflags --libs strata)" test $? -eq 0 ||
	tail -5 "$T/cc.out"
check "hello loads $P/lib/libstrata.so.0" \
	grep -q "libstrata.so.0 => $P/lib/libstrata.so.0 " <(ldd "$T/user/hello" 2>&1)
(cd "$T/user" && TMPDIR=$T timeout 120 ./hello) >"$T/hello.out" 2>&1
check "hello runs: $(tail -1 "$T/hello.out")" test $? -eq 0 ||
	tail -5 "$T/hello.out"

echo "--- the installed strata cluster up (base port $PORT)"
timeout 900 "$P/bin/strata" cluster up --nodes 1 --dir "$D" \
	--base-port "$PORT" >"$T/up" 2>&1
check "cluster up" grep -q "cluster of 1 servers up" "$T/up" ||
	{ sed 's/^/     up: /' "$T/up" | tail -8; finish; }
exe=$(readlink "/proc/$(cat "$D/s0.pid" 2>/dev/null)/exe")
check "the server runs the installed $P/bin/strata-server ($exe)" \
	test "$exe" = "$P/bin/strata-server"
head -c 1000000 /dev/urandom >"$T/f.bin"
C=("$P/bin/strata" --cluster "$D/cluster.yaml" -q)
timeout 120 "${C[@]}" obj put @inst "$T/f.bin" >"$T/put" 2>&1 &&
	timeout 120 "${C[@]}" obj get @inst "$T/f.get" >>"$T/put" 2>&1 &&
	cmp -s "$T/f.bin" "$T/f.get"
check "obj put and get through the cluster (cmp)" test $? -eq 0 ||
	tail -3 "$T/put"

echo "--- the installed strata-s3 on the cluster, Debian's aws cli"
"$P/bin/strata" s3 user add inst "$T/creds" >"$T/user.out" 2>&1
check "strata s3 user add" test $? -eq 0
"$P/bin/strata-s3" --cluster "$D/cluster.yaml" --port 0 \
	--port-file "$T/port" --creds "$T/creds" >"$T/gw.out" 2>"$T/gw.err" &
gw_pid=$!
for _ in $(seq 1 600); do # 60 s at most, less if it exits
	[ -s "$T/port" ] && break
	kill -0 "$gw_pid" 2>/dev/null || break
	sleep 0.1
done
check "strata-s3 listens" test -s "$T/port" || tail -3 "$T/gw.err"
if ! tools_check aws >"$T/tools.out"; then
	no "$(cat "$T/tools.out")"
elif [ -s "$T/port" ]; then
	export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_DEFAULT_REGION=us-east-1
	AWS_ACCESS_KEY_ID=$(awk 'NR==1{print $2}' "$T/creds")
	AWS_SECRET_ACCESS_KEY=$(awk 'NR==1{print $3}' "$T/creds")
	A=("$STRATA_AWS" --endpoint-url "http://127.0.0.1:$(cat "$T/port")")
	timeout 120 "${A[@]}" s3 mb s3://inst >"$T/aws" 2>&1 &&
		timeout 120 "${A[@]}" s3 cp "$T/f.bin" s3://inst/f >>"$T/aws" 2>&1 &&
		timeout 120 "${A[@]}" s3 cp s3://inst/f "$T/f.aws" >>"$T/aws" 2>&1 &&
		cmp -s "$T/f.bin" "$T/f.aws"
	check "aws s3 mb, cp up and down through the installed gateway (cmp)" \
		test $? -eq 0 || tail -3 "$T/aws"
fi
kill -TERM "$gw_pid" 2>/dev/null
wait "$gw_pid" 2>/dev/null
gw_pid=
timeout 60 "$P/bin/strata" cluster down --dir "$D" >"$T/down" 2>&1
check "cluster down: $(cat "$T/down")" grep -q "^1 servers stopped" "$T/down"

echo "--- make uninstall PREFIX=$P"
mk uninstall PREFIX="$P" >"$T/uninst.out" 2>&1
check "make uninstall" test $? -eq 0 || tail -5 "$T/uninst.out"
left=$(find "$P" -type f -o -type l 2>/dev/null)
check "no file left under $P" test -z "$left" || echo "$left"
finish
