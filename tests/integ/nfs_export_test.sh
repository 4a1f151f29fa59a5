#!/usr/bin/env bash
# nfs_export_test.sh BUILD [DIR] — the NFS export of a directory
# (scripts/nfs-export.sh: NFS-Ganesha, FSAL VFS, on 127.0.0.1) checked
# with the userspace NFS client libnfs (libnfs-utils: nfs-cp, nfs-ls,
# nfs-cat; nfs-stat when there is one; and libnfs itself through Python's
# ctypes for what those tools cannot do: overwrite, truncate, rename,
# mkdir, unlink, and NFSv4 writes of more than one WRITE).
#
# DIR is the directory exported (in real use a strata-fuse mount point);
# by default a scratch directory of the test's own.  The test works in
# DIR/nfs-test.PID, made on the directory and removed at the end; nothing
# else of DIR is touched.  BUILD is not used yet (kept for the caller that
# mounts strata-fuse first).
#
#   1. the export starts (NFSv3 and v4; rpcbind, when none runs, in a
#      network namespace of its own), `status` says so, Ganesha listens
#      on 127.0.0.1 only and no rpcbind port is opened on this host;
#   2. NFSv3 writes (nfs-cp) of 1 KiB, 4 KiB, 1 MiB and 3 MiB arrive
#      byte-identical on the directory, and read back through NFS;
#   3. files of the same sizes made on the directory read back through
#      NFS (nfs-cat, nfs-cp) byte-identical;
#   4. nfs-ls lists the directory: every name, every size;
#   5. overwrites: through NFS (O_TRUNC rewrite, a pwrite inside a
#      file, a truncate) seen on the directory; on the directory
#      (shorter content, an unlink, a new file) seen through NFS at once;
#      nfs-cp onto an existing name is refused and changes nothing;
#   6. names through NFS (mkdir, rename, unlink, rmdir) seen on the
#      directory;
#   7. NFSv4: listing and reads (3 MiB); writes of 3000 B with nfs-cp and
#      of 3 MiB in 3000-byte WRITEs (libnfs 4.0 cannot encode one v4
#      WRITE of about 4000 B or more: "Failed to encode COMPOUND4args",
#      nothing sent; a client limit, not the server's);
#   8. stop: Ganesha and the rpcbind it started are gone, the ports
#      free, the files rpcbind left in /run removed; status says stopped.
#
# Ports: NFS on $NFS_PORT (default 2049) and MOUNT on the next one, on
# 127.0.0.1; no other step uses them (tests/steps.list).  Every wait is
# bounded; the export is stopped and the scratch files removed on any exit
# (KEEP=1 keeps the temporary directory: logs, Ganesha's configuration).
# Skipped ("skip: ...", then "0 passed, 0 failed") only where ganesha.nfsd
# or /dev/fuse is missing; a missing libnfs-utils or FSAL VFS is a
# failure.  Ends with "N passed, N failed".
set -u

B=${1:-build}
ARG_DIR=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
NX=$HERE/../../scripts/nfs-export.sh
NFS_PORT=${NFS_PORT:-2049}
MNT_PORT=$((NFS_PORT + 1))
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else no "$n"; fi; }
end() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

if ! command -v ganesha.nfsd >/dev/null; then
	echo "skip: no ganesha.nfsd (apt-get install nfs-ganesha nfs-ganesha-vfs)"
	echo "0 passed, 0 failed"
	exit 0
fi
if [ ! -c /dev/fuse ]; then
	echo "skip: no /dev/fuse (the export is of a FUSE mount in real use)"
	echo "0 passed, 0 failed"
	exit 0
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/strata-nfs-test.XXXXXX")
ST=$T/state
W=

cleanup() {
	timeout 60 "$NX" stop --state "$ST" >>"$T/stop.log" 2>&1
	[ -n "$W" ] && rm -rf "$W"
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

missing=
for x in nfs-cp nfs-ls nfs-cat; do
	command -v "$x" >/dev/null || missing="$missing $x"
done
if [ -n "$missing" ]; then
	no "libnfs-utils installed (missing:$missing; apt-get install libnfs-utils)"
	end
fi

if [ -n "$ARG_DIR" ]; then
	EXP=$(cd "$ARG_DIR" 2>/dev/null && pwd -P) ||
		{ no "the directory $ARG_DIR exists"; end; }
else
	EXP=$T/export
	mkdir -p "$EXP"
fi
SUB=nfs-test.$$
W=$EXP/$SUB
mkdir "$W" || { W=; no "$EXP/$SUB made on the directory"; end; }

# gen FILE SIZE SEED: SIZE pseudo-random bytes (seeded: a rerun writes the
# same) into FILE
gen() {
	python3 -c '
import random, sys
sys.stdout.buffer.write(random.Random(int(sys.argv[2])).randbytes(int(sys.argv[1])))' \
		"$2" "$3" >"$1"
}

# ------------------------------------------------------------ 1. start
echo "--- the export of $EXP (ports $NFS_PORT, $MNT_PORT)"
had_sock=0
[ -S /run/rpcbind.sock ] && had_sock=1
timeout 180 "$NX" start --dir "$EXP" --state "$ST" --pseudo /strata \
	--port "$NFS_PORT" --mount-port "$MNT_PORT" >"$T/urls" 2>"$T/start.err"
src=$?
if [ "$src" -ne 0 ]; then
	no "nfs-export.sh start (rc $src): the step stops here"
	sed 's/^/     | /' "$T/start.err" | tail -n 14
	end
fi
ok "nfs-export.sh start"
sed 's/^/     /' "$T/start.err"
U3=$(grep 'version=3' "$T/urls" | head -1)
U4=$(grep 'version=4' "$T/urls" | head -1)
check "start printed the NFSv3 URL first (nfs://127.0.0.1/strata?version=3&...)" \
	test "$(head -1 "$T/urls")" = "nfs://127.0.0.1/strata?version=3&nfsport=$NFS_PORT&mountport=$MNT_PORT"
check "start printed the NFSv4 URL" \
	test "$U4" = "nfs://127.0.0.1/strata?version=4&nfsport=$NFS_PORT"
[ -n "$U3" ] || { no "NFSv3 served: the step stops here"; end; }
timeout 30 "$NX" status --state "$ST" >"$T/status" 2>&1
check "status says running" grep -q "^running: ganesha.nfsd pid" "$T/status"
GP=$(cat "$ST/ganesha.pid" 2>/dev/null)
RP=$(cat "$ST/rpcbind.pid" 2>/dev/null)

# every socket of Ganesha's is on 127.0.0.1 (NFS and MOUNT, TCP)
ss -Htlnup 2>/dev/null | grep "pid=$GP," | awk '{print $1, $5}' >"$T/socks"
check "Ganesha listens on the NFS and MOUNT ports" test \
	"$(grep -cE "127\.0\.0\.1\]?:($NFS_PORT|$MNT_PORT)$" "$T/socks")" -ge 2
check "Ganesha listens on 127.0.0.1 only, TCP only ($(tr '\n' ' ' <"$T/socks"))" \
	test -z "$(grep -vE '^tcp .*127\.0\.0\.1\]?:[0-9]+$' "$T/socks")"
if [ -n "$RP" ]; then
	check "the rpcbind started (pid $RP) opens no port on this host" \
		test -z "$(ss -Htlnup 2>/dev/null | grep -E "pid=$RP,|:111 ")"
else
	echo "     (an rpcbind was running already: used, not checked)"
fi

# URLs of a path below the export: v3 and v4
u3() { echo "nfs://127.0.0.1/strata/$1?version=3&nfsport=$NFS_PORT&mountport=$MNT_PORT"; }
u4() { echo "nfs://127.0.0.1/strata/$1?version=4&nfsport=$NFS_PORT"; }

# libnfs through ctypes: nfsop URL CHUNK OP ARGS (paths inside the export)
cat >"$T/nfsop.py" <<'EOF'
import ctypes, os, sys
from ctypes import POINTER, c_char_p, c_int, c_uint64, c_void_p
L = ctypes.CDLL("libnfs.so.13")
class Url(ctypes.Structure):
    _fields_ = [("server", c_char_p), ("path", c_char_p), ("file", c_char_p)]
L.nfs_init_context.restype = c_void_p
L.nfs_parse_url_dir.restype = POINTER(Url)
L.nfs_parse_url_dir.argtypes = [c_void_p, c_char_p]
L.nfs_get_error.restype = c_char_p
L.nfs_get_error.argtypes = [c_void_p]
L.nfs_set_timeout.argtypes = [c_void_p, c_int]
L.nfs_mount.argtypes = [c_void_p, c_char_p, c_char_p]
L.nfs_open2.argtypes = [c_void_p, c_char_p, c_int, c_int, POINTER(c_void_p)]
L.nfs_pwrite.argtypes = [c_void_p, c_void_p, c_uint64, c_uint64, c_char_p]
L.nfs_pread.argtypes = [c_void_p, c_void_p, c_uint64, c_uint64, c_void_p]
L.nfs_ftruncate.argtypes = [c_void_p, c_void_p, c_uint64]
L.nfs_fsync.argtypes = [c_void_p, c_void_p]
L.nfs_close.argtypes = [c_void_p, c_void_p]
for f in ("nfs_unlink", "nfs_mkdir", "nfs_rmdir"):
    getattr(L, f).argtypes = [c_void_p, c_char_p]
L.nfs_rename.argtypes = [c_void_p, c_char_p, c_char_p]

url, chunk, op, args = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
nfs = L.nfs_init_context()
def need(r, what):
    if r < 0:
        sys.exit("nfsop: %s: %s" % (what, L.nfs_get_error(nfs).decode()))
    return r
L.nfs_set_timeout(nfs, 30000)
u = L.nfs_parse_url_dir(nfs, url.encode())
if not u:
    sys.exit("nfsop: bad url: %s" % L.nfs_get_error(nfs).decode())
need(L.nfs_mount(nfs, u.contents.server, u.contents.path), "mount")
def open_(path, flags):
    fh = c_void_p()
    need(L.nfs_open2(nfs, path.encode(), flags, 0o644, ctypes.byref(fh)),
         "open " + path)
    return fh
def put(fh, data, off):
    i = 0
    while i < len(data):
        n = need(L.nfs_pwrite(nfs, fh, off + i, min(chunk, len(data) - i),
                              data[i:i + chunk]), "pwrite")
        i += n
if op == "write":          # PATH LOCAL: create or O_TRUNC, write all
    fh = open_(args[0], os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
    put(fh, open(args[1], "rb").read(), 0)
    need(L.nfs_fsync(nfs, fh), "fsync")
    need(L.nfs_close(nfs, fh), "close")
elif op == "pwrite":       # PATH OFFSET LOCAL
    fh = open_(args[0], os.O_WRONLY)
    put(fh, open(args[2], "rb").read(), int(args[1]))
    need(L.nfs_close(nfs, fh), "close")
elif op == "truncate":     # PATH SIZE
    fh = open_(args[0], os.O_WRONLY)
    need(L.nfs_ftruncate(nfs, fh, int(args[1])), "ftruncate")
    need(L.nfs_close(nfs, fh), "close")
elif op == "read":         # PATH LOCAL
    fh = open_(args[0], os.O_RDONLY)
    buf = ctypes.create_string_buffer(chunk)
    out, off = [], 0
    while True:
        n = need(L.nfs_pread(nfs, fh, off, chunk, buf), "pread")
        if n == 0:
            break
        out.append(buf.raw[:n])
        off += n
    need(L.nfs_close(nfs, fh), "close")
    open(args[1], "wb").write(b"".join(out))
elif op in ("mkdir", "rmdir", "unlink"):
    need(getattr(L, "nfs_" + op)(nfs, args[0].encode()), op + " " + args[0])
elif op == "rename":
    need(L.nfs_rename(nfs, args[0].encode(), args[1].encode()), "rename")
else:
    sys.exit("nfsop: no op " + op)
EOF
BASE3="nfs://127.0.0.1/strata?version=3&nfsport=$NFS_PORT&mountport=$MNT_PORT"
BASE4="nfs://127.0.0.1/strata?version=4&nfsport=$NFS_PORT"
nfsop3() { timeout 120 python3 "$T/nfsop.py" "$BASE3" 1048576 "$@" 2>>"$T/nfsop.err"; }
nfsop4() { timeout 300 python3 "$T/nfsop.py" "$BASE4" 3000 "$@" 2>>"$T/nfsop.err"; }
# nfs-cp / nfs-cat, bounded, their errors kept
ncp() { timeout 120 nfs-cp "$@" >/dev/null 2>>"$T/nfs.err"; }
ncat() { timeout 120 nfs-cat "$1" >"$2" 2>>"$T/nfs.err"; }
fsize() { stat -c %s "$1" 2>/dev/null; }

SIZES="1024 4096 1048576 3145728"
for s in $SIZES; do gen "$T/in.$s" "$s" "$s"; done

# ------------------------------------------------- 2. NFSv3 writes
echo "--- NFSv3 writes (nfs-cp) of 1 KiB, 4 KiB, 1 MiB, 3 MiB"
for s in $SIZES; do
	ncp "$T/in.$s" "$(u3 "$SUB/w$s")"
	check "nfs-cp v3 of $s B: byte-identical on the directory" \
		cmp -s "$T/in.$s" "$W/w$s"
	ncat "$(u3 "$SUB/w$s")" "$T/back.$s"
	check "nfs-cat v3 of it: byte-identical" cmp -s "$T/in.$s" "$T/back.$s"
done

# ------------------------------------ 3. files made on the directory
echo "--- files made on the directory, read through NFSv3"
for s in $SIZES; do
	cp "$T/in.$s" "$W/l$s"
	ncat "$(u3 "$SUB/l$s")" "$T/cat.$s"
	check "nfs-cat v3 of a $s B file made on the directory" \
		cmp -s "$T/in.$s" "$T/cat.$s"
	rm -f "$T/cp.$s"
	ncp "$(u3 "$SUB/l$s")" "$T/cp.$s"
	check "nfs-cp v3 of it to a local file" cmp -s "$T/in.$s" "$T/cp.$s"
done
if command -v nfs-stat >/dev/null; then
	timeout 60 nfs-stat "$(u3 "$SUB/l1048576")" >"$T/nstat" 2>>"$T/nfs.err"
	check "nfs-stat says 1048576 B" grep -q 1048576 "$T/nstat"
fi

# ------------------------------------------------------- 4. listing
echo "--- nfs-ls of the directory"
timeout 60 nfs-ls "$(u3 "$SUB")" >"$T/ls" 2>>"$T/nfs.err"
awk '{print $NF, $5}' "$T/ls" | sort >"$T/ls.nfs"
(cd "$W" && for f in *; do echo "$f $(fsize "$f")"; done) | sort >"$T/ls.dir"
check "nfs-ls v3 lists every name of the directory with its size ($(wc -l <"$T/ls.nfs") entries)" \
	cmp -s "$T/ls.nfs" "$T/ls.dir"
[ "$fail" -eq 0 ] || diff "$T/ls.nfs" "$T/ls.dir" | head -8 | sed 's/^/     /'

# ----------------------------------------------------- 5. overwrites
echo "--- overwrites"
gen "$T/new5000" 5000 77
nfsop3 write "/$SUB/w1048576" "$T/new5000"
check "rewrite (O_TRUNC) of the 1 MiB file with 5000 B through NFSv3: the directory has them" \
	cmp -s "$T/new5000" "$W/w1048576"
gen "$T/patch" 100000 78
cp "$T/in.3145728" "$T/model"
python3 -c '
import sys
m = bytearray(open(sys.argv[1], "rb").read())
p = open(sys.argv[2], "rb").read()
m[70000:70000 + len(p)] = p
open(sys.argv[1], "wb").write(m)' "$T/model" "$T/patch"
nfsop3 pwrite "/$SUB/l3145728" 70000 "$T/patch"
check "pwrite of 100000 B at 70000 into the 3 MiB file through NFSv3: the directory has the patched file" \
	cmp -s "$T/model" "$W/l3145728"
nfsop3 truncate "/$SUB/l1048576" 1000
check "truncate to 1000 B through NFSv3: size on the directory" \
	test "$(fsize "$W/l1048576")" = 1000
head -c 1000 "$T/in.1048576" >"$T/head1000"
check "the truncated file keeps its first 1000 B" cmp -s "$T/head1000" "$W/l1048576"
nfsop3 truncate "/$SUB/l1048576" 5000
head -c 4000 /dev/zero >>"$T/head1000"
check "extended again to 5000 B through NFSv3: zeros after the cut" \
	cmp -s "$T/head1000" "$W/l1048576"

gen "$T/short" 777 79
cp "$T/short" "$W/l4096"
ncat "$(u3 "$SUB/l4096")" "$T/cat.short"
check "a file rewritten shorter on the directory reads new through NFSv3 at once" \
	cmp -s "$T/short" "$T/cat.short"
rm -f "$W/l1024"
echo "made on the directory" >"$W/late"
timeout 60 nfs-ls "$(u3 "$SUB")" >"$T/ls2" 2>>"$T/nfs.err"
check "an unlink on the directory is seen by nfs-ls at once" \
	test -z "$(awk '$NF == "l1024"' "$T/ls2")"
check "a file made on the directory is seen by nfs-ls at once" \
	test -n "$(awk '$NF == "late"' "$T/ls2")"
cp "$W/w4096" "$T/before"
if timeout 60 nfs-cp "$T/in.1024" "$(u3 "$SUB/w4096")" >/dev/null 2>"$T/excl.err"; then
	no "nfs-cp onto an existing name is refused"
else
	ok "nfs-cp onto an existing name is refused ($(grep -o 'NFS3ERR_[A-Z]*' "$T/excl.err" | head -1))"
fi
check "and the file is unchanged" cmp -s "$T/before" "$W/w4096"

# --------------------------------------------------------- 6. names
echo "--- names through NFSv3"
nfsop3 mkdir "/$SUB/d"
check "mkdir through NFSv3: a directory on the directory" test -d "$W/d"
nfsop3 rename "/$SUB/w1024" "/$SUB/d/moved"
check "rename into it through NFSv3: moved, content kept" \
	cmp -s "$T/in.1024" "$W/d/moved"
check "and the old name is gone" test ! -e "$W/w1024"
nfsop3 rename "/$SUB/w4096" "/$SUB/late"
check "rename over an existing file through NFSv3: replaced" \
	cmp -s "$T/in.4096" "$W/late"
nfsop3 unlink "/$SUB/d/moved"
check "unlink through NFSv3" test ! -e "$W/d/moved"
nfsop3 rmdir "/$SUB/d"
check "rmdir through NFSv3" test ! -e "$W/d"
check "no nfsop call failed" test ! -s "$T/nfsop.err"
[ -s "$T/nfsop.err" ] && head -5 "$T/nfsop.err" | sed 's/^/     /'

# ----------------------------------------------------------- 7. NFSv4
echo "--- NFSv4"
timeout 60 nfs-ls "$(u4 "$SUB")" >"$T/ls4" 2>>"$T/nfs.err"
awk '{print $NF}' "$T/ls4" | sort >"$T/ls4.names"
ls -A "$W" | sort >"$T/dir.names"
check "nfs-ls v4 lists every name ($(wc -l <"$T/ls4.names"))" \
	cmp -s "$T/ls4.names" "$T/dir.names"
ncat "$(u4 "$SUB/w3145728")" "$T/cat4"
check "nfs-cat v4 of the 3 MiB file" cmp -s "$T/in.3145728" "$T/cat4"
gen "$T/in.3000" 3000 80
ncp "$T/in.3000" "$(u4 "$SUB/v4small")"
check "nfs-cp v4 of 3000 B: byte-identical on the directory" \
	cmp -s "$T/in.3000" "$W/v4small"
: >"$T/nfsop.err"
nfsop4 write "/$SUB/v4big" "$T/in.3145728"
check "a 3 MiB NFSv4 write in 3000-byte WRITEs: byte-identical on the directory" \
	cmp -s "$T/in.3145728" "$W/v4big"
nfsop4 read "/$SUB/l3145728" "$T/read4"
check "an NFSv4 read of the patched 3 MiB file in 3000-byte READs" \
	cmp -s "$T/model" "$T/read4"
[ -s "$T/nfsop.err" ] && head -3 "$T/nfsop.err" | sed 's/^/     /'
if ! timeout 60 nfs-cp "$T/in.4096" "$(u4 "$SUB/v4one")" >/dev/null 2>"$T/v4one.err"; then
	echo "     (known: nfs-cp v4 of 4 KiB fails in libnfs 4.0, one WRITE over ~4000 B: $(head -c 80 "$T/v4one.err" | tr '\n' ' '))"
fi

# ------------------------------------------------------------- 8. stop
echo "--- stop"
timeout 60 "$NX" stop --state "$ST" >"$T/stop.out" 2>&1
check "nfs-export.sh stop" test $? -eq 0
check "ganesha.nfsd (pid $GP) gone" test ! -d "/proc/$GP"
if [ -n "$RP" ]; then
	check "the rpcbind it started (pid $RP) gone" test ! -d "/proc/$RP"
	[ "$had_sock" = 0 ] &&
		check "the rpcbind socket it made is removed" test ! -e /run/rpcbind.sock
fi
check "ports $NFS_PORT and $MNT_PORT free" \
	test -z "$(ss -Htln "( sport = :$NFS_PORT or sport = :$MNT_PORT )" 2>/dev/null)"
timeout 30 "$NX" status --state "$ST" >/dev/null 2>&1
check "status says stopped (rc 3)" test $? -eq 3
if [ "$fail" -gt 0 ]; then
	[ -s "$T/nfs.err" ] && sed 's/^/     nfs: /' "$T/nfs.err" | head -8
	grep -vE "dbus|DBUS|principal nfs|RADOS|krb5|keytab|realm" \
		"$ST/ganesha.log" 2>/dev/null | tail -n 8 | cut -c1-200 |
		sed 's/^/     ganesha: /'
fi
end
