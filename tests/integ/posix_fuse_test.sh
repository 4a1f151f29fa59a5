#!/usr/bin/env bash
# posix_fuse_test.sh BUILD — strata-fuse (gateways/posix/fuse_main.c) on an
# embedded store in a scratch directory (issue 33):
#
#   0. bad options: exit 2 naming the option (a bad -o before the store
#      is touched); a missing store without --mkfs: exit 1;
#   1. `strata-fuse --mkfs -f` in the background; the mount appears
#      (bounded wait), of type fuse.strata;
#   2. data: files of several sizes (0 B to 3 MiB + 17) written by Python
#      in pieces at odd offsets (holes included) read back byte-exact,
#      whole and at odd offsets; truncate down and up (zeros past the old
#      end); O_APPEND; O_TRUNC; O_CREAT|O_EXCL on an existing name EEXIST;
#   3. names: mkdir/rmdir (ENOTEMPTY), rename of files and directories
#      within and across directories, over an existing file, renameat2
#      RENAME_NOREPLACE (EEXIST) and RENAME_EXCHANGE, a directory into its
#      own subtree (EINVAL), ln -s (readlink), ln (nlink 2, one inode),
#      mknod of a fifo; a file unlinked or renamed over while open still
#      reads through its descriptor;
#   4. attributes: chmod, chown, touch -d with nanoseconds (mtime),
#      touch -a, truncate -s, set-group-id directories pass their group on;
#      xattrs through os.setxattr/getxattr/listxattr/removexattr
#      (XATTR_CREATE EEXIST, XATTR_REPLACE and missing ENODATA); POSIX
#      ACLs refused (EOPNOTSUPP: tools then chmod);
#   5. listings: ls -l shows the modes, links, owners, sizes and symlink;
#      a directory of 600 entries lists each once, also while entries are
#      made and removed during the listing (offsets resume after the last
#      name); df and os.statvfs (f_namemax 255);
#   6. stability: SIGTERM ends the daemon with exit 0 and the mount is
#      gone; remounted, the same content, inode numbers and times;
#      name_to_handle_at handles taken before the remount still open the
#      same files by open_by_handle_at after it (NFS export), a removed
#      file's ESTALE; --read-only (EROFS); --container: 0:1 named works,
#      another container of the store is refused; permissions checked by the
#      kernel for another user (setpriv); daemon mode (no -f): returns
#      once mounted, fusermount3 -u ends it after writing back;
#   7. crash: 3 rounds of a Python writer making files of whole 16 KiB
#      records (each with its file, index and CRC-32), fsyncing every
#      other one and logging it (outside the mount, fsync'd) once fsync
#      returned, its last 6 files left open (so their close does not
#      write their sizes back), while the daemon is SIGKILLed at a random
#      moment; the dead
#      mount is lazily unmounted (fusermount3 -u -z) and remounted: every
#      fsynced file is byte-exact, and no file holds anything but whole
#      valid records (an unfsynced file may be missing or shorter).
#
# Skips (with the reason) when /dev/fuse or fusermount3 is missing, or
# when not run as root.
# Everything bounded in time; the trap unmounts, stops the daemon (by its
# pid) and removes the store.  Ends with "N passed, N failed".
set -u

B=${1:-build}
. "$(dirname "$0")/posix_lib.sh"
px_need "$B" root

T=$(mktemp -d "${TMPDIR:-/tmp}/strata-posix-fuse.XXXXXX")
STORE=$T/store
MNT=$T/mnt
LOG=$T/fuse.log
mkdir -p "$MNT"
chmod 711 "$T" # other users reach the mount (the permission checks)
pid=""
wpid=""

cleanup() {
	[ -n "$wpid" ] && kill -KILL "$wpid" 2>/dev/null
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
	fi
	if mountpoint -q "$MNT" 2>/dev/null || grep -q " $MNT " /proc/mounts
	then
		fusermount3 -u -z "$MNT" 2>/dev/null
	fi
	for d in "$STORE" "$T/nostore"; do
		[ -d "$d" ] && timeout 60 "$S" --data "$d" -q destroy --yes \
			>/dev/null 2>&1
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM


# fs_mount [OPTS]: the daemon in the background (-f), waits up to 60 s
# for the mount; 0 when it is there.
fs_mount() {
	"$F" --data "$STORE" --dev-size 64M -f "$@" "$MNT" >>"$LOG" 2>&1 &
	pid=$!
	for _ in $(seq 1 600); do
		if grep -q " $MNT fuse.strata " /proc/mounts; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "  (mount did not appear; log:)"; tail -5 "$LOG" | sed 's/^/  /'
	return 1
}

# fs_umount: SIGTERM; 0 when the daemon exited 0 within 60 s and the
# mount is gone.
fs_umount() {
	local rc=1
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 1 600); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "  (daemon still running 60 s after SIGTERM)"
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		fusermount3 -u -z "$MNT" 2>/dev/null
		pid=""
		return 1
	fi
	wait "$pid"
	rc=$?
	pid=""
	[ "$rc" -eq 0 ] || echo "  (daemon exit code $rc)"
	if grep -q " $MNT " /proc/mounts; then
		echo "  (mount still there)"
		fusermount3 -u -z "$MNT" 2>/dev/null
		return 1
	fi
	[ "$rc" -eq 0 ]
}

# py CMD ARGS: the helper below, bounded to 300 s
py() { timeout 300 python3 "$T/t.py" "$@"; }

cat >"$T/t.py" <<'EOF'
import ctypes, errno, hashlib, json, os, random, stat, struct, sys, time
import zlib

libc = ctypes.CDLL(None, use_errno=True)
fails = []


def expect(cond, what):
    if not cond:
        fails.append(what)


def expect_err(code, what, fn, *a):
    try:
        fn(*a)
    except OSError as e:
        if e.errno == code:
            return
        fails.append("%s: errno %s, wanted %s" % (what, e.errno, code))
        return
    fails.append("%s: succeeded, wanted errno %s" % (what, code))


def done():
    for f in fails:
        print("  " + f)
    sys.exit(1 if fails else 0)


def data_io(m):
    """Files of several sizes, written in pieces at odd offsets."""
    rnd = random.Random(33)
    d = os.path.join(m, "io")
    os.mkdir(d)
    for size in [0, 1, 4095, 4096, 65537, (1 << 20) + 3, 3 * (1 << 20) + 17]:
        p = os.path.join(d, "f%d" % size)
        want = bytearray(size)
        fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        # the tail first (a hole before it), then random pieces
        pieces = [(max(0, size - 777), size)]
        for _ in range(12):
            a = rnd.randrange(0, size + 1)
            b = min(size, a + rnd.randrange(1, 300000))
            pieces.append((a, b))
        for a, b in pieces:
            buf = rnd.randbytes(b - a)
            want[a:b] = buf
            expect(os.pwrite(fd, buf, a) == b - a, "short write %s" % p)
        os.close(fd)
        st = os.stat(p)
        expect(st.st_size == size, "%s: size %d, wanted %d" %
               (p, st.st_size, size))
        got = open(p, "rb").read()
        expect(got == bytes(want), "%s: content differs" % p)
        fd = os.open(p, os.O_RDONLY)
        for _ in range(8):
            a = rnd.randrange(0, size + 2)
            n = rnd.randrange(1, 200000)
            expect(os.pread(fd, n, a) == bytes(want[a:a + n]),
                   "%s: pread(%d, %d) differs" % (p, n, a))
        os.close(fd)
    # truncate down, then up: zeros past the old end
    p = os.path.join(d, "trunc")
    open(p, "wb").write(b"x" * 100000)
    os.truncate(p, 5000)
    os.truncate(p, 70000)
    got = open(p, "rb").read()
    expect(got == b"x" * 5000 + bytes(65000), "truncate down/up content")
    # O_APPEND, O_TRUNC, O_EXCL
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"tail")
    os.close(fd)
    expect(os.stat(p).st_size == 70004, "O_APPEND size")
    expect(open(p, "rb").read()[-4:] == b"tail", "O_APPEND content")
    fd = os.open(p, os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    expect(os.stat(p).st_size == 0, "O_TRUNC size")
    expect_err(errno.EEXIST, "O_EXCL on an existing file", os.open, p,
               os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    done()


def renameat2(a, b, flags):
    r = libc.renameat2(-100, a.encode(), -100, b.encode(), flags)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def names(m):
    d = os.path.join(m, "names")
    os.mkdir(d)
    j = lambda *p: os.path.join(d, *p)
    os.makedirs(j("a", "b", "c"))
    open(j("a", "b", "c", "f"), "w").write("f")
    expect_err(errno.ENOTEMPTY, "rmdir of a non-empty directory",
               os.rmdir, j("a", "b"))
    expect_err(errno.ENOTDIR, "rmdir of a file", os.rmdir,
               j("a", "b", "c", "f"))
    expect_err(errno.EISDIR, "unlink of a directory", os.unlink, j("a"))
    os.mkdir(j("e"))
    os.rmdir(j("e"))
    expect(not os.path.exists(j("e")), "rmdir left the directory")
    expect(os.stat(j("a")).st_nlink == 3, "nlink of a directory with a "
           "subdirectory: %d" % os.stat(j("a")).st_nlink)
    # rename files within and across directories, over an existing one
    open(j("x"), "w").write("x")
    open(j("y"), "w").write("y")
    ino = os.stat(j("x")).st_ino
    os.rename(j("x"), j("x2"))
    expect(os.stat(j("x2")).st_ino == ino, "rename kept the inode")
    os.rename(j("x2"), j("a", "b", "x3"))
    expect(open(j("a", "b", "x3")).read() == "x", "rename across")
    os.rename(j("a", "b", "x3"), j("y"))
    expect(open(j("y")).read() == "x", "rename over a file")
    expect(not os.path.exists(j("x")), "rename left the source")
    # directories
    os.rename(j("a", "b"), j("bb"))
    expect(open(j("bb", "c", "f")).read() == "f", "rename of a directory")
    expect(os.stat(j("a")).st_nlink == 2, "nlink after moving a subdir")
    expect_err(errno.EINVAL, "rename of a directory into itself",
               os.rename, j("bb"), j("bb", "c", "inside"))
    os.mkdir(j("full"))
    open(j("full", "z"), "w").write("z")
    expect_err(errno.ENOTEMPTY, "rename over a non-empty directory",
               os.rename, j("bb"), j("full"))
    # renameat2
    open(j("p"), "w").write("p")
    open(j("q"), "w").write("q")
    expect_err(errno.EEXIST, "RENAME_NOREPLACE over an existing name",
               renameat2, j("p"), j("q"), 1)
    renameat2(j("p"), j("r"), 1)
    renameat2(j("r"), j("q"), 2)
    expect(open(j("r")).read() == "q" and open(j("q")).read() == "p",
           "RENAME_EXCHANGE")
    # symlinks and hard links
    os.symlink("bb/c/f", j("sl"))
    expect(os.readlink(j("sl")) == "bb/c/f", "readlink")
    expect(open(j("sl")).read() == "f", "reading through a symlink")
    expect(stat.S_ISLNK(os.lstat(j("sl")).st_mode), "lstat of a symlink")
    long = "t" * 4000
    os.symlink(long, j("long"))
    expect(os.readlink(j("long")) == long, "a 4000-byte symlink target")
    os.link(j("q"), j("hl"))
    sq, sh = os.stat(j("q")), os.stat(j("hl"))
    expect(sq.st_ino == sh.st_ino and sq.st_nlink == 2,
           "hard link: one inode, nlink 2")
    os.unlink(j("q"))
    expect(os.stat(j("hl")).st_nlink == 1 and open(j("hl")).read() == "p",
           "hard link after unlinking the other name")
    expect_err(errno.EPERM, "hard link of a directory", os.link, j("bb"),
               j("dl"))
    os.mkfifo(j("fifo"), 0o600)
    expect(stat.S_ISFIFO(os.stat(j("fifo")).st_mode), "mkfifo")
    expect_err(errno.ENAMETOOLONG, "a 256-byte name", os.mkdir,
               j("n" * 256))
    os.mkdir(j("n" * 255))
    expect_err(errno.EEXIST, "mkdir of an existing name", os.mkdir, j("bb"))
    expect_err(errno.ENOENT, "stat of a missing name", os.stat, j("nope"))
    # open files outlive their last name
    fd = os.open(j("open1"), os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"still here")
    os.unlink(j("open1"))
    expect(not os.path.exists(j("open1")), "unlinked name still there")
    expect(os.pread(fd, 100, 0) == b"still here", "read of an unlinked "
           "open file")
    os.write(fd, b" and more")
    expect(os.pread(fd, 100, 0) == b"still here and more",
           "write to an unlinked open file")
    os.close(fd)
    open(j("old"), "w").write("old content")
    fd = os.open(j("old"), os.O_RDONLY)
    open(j("new"), "w").write("new")
    os.rename(j("new"), j("old"))
    expect(os.pread(fd, 100, 0) == b"old content",
           "read of a file renamed over while open")
    os.close(fd)
    expect(open(j("old")).read() == "new", "the new file after rename")
    hidden = [n for n in os.listdir(m) if "orphan" in n]
    expect(hidden == [], "root lists %s" % hidden)
    done()


def attrs(m):
    d = os.path.join(m, "attrs")
    os.mkdir(d)
    p = os.path.join(d, "f")
    open(p, "w").write("abc")
    os.chmod(p, 0o4751)
    expect(stat.S_IMODE(os.stat(p).st_mode) == 0o4751, "chmod")
    os.chown(p, 1234, 5678)
    st = os.stat(p)
    expect((st.st_uid, st.st_gid) == (1234, 5678), "chown")
    os.utime(p, ns=(1000000001234567891, 981173106123456789))
    st = os.stat(p)
    expect(st.st_atime_ns == 1000000001234567891, "atime ns: %d" %
           st.st_atime_ns)
    expect(st.st_mtime_ns == 981173106123456789, "mtime ns: %d" %
           st.st_mtime_ns)
    c0 = st.st_ctime_ns
    time.sleep(0.01)
    os.chmod(p, 0o644)
    expect(os.stat(p).st_ctime_ns > c0, "ctime moves on chmod")
    # set-group-id directories pass their group on
    g = os.path.join(d, "sgid")
    os.mkdir(g)
    os.chown(g, 0, 4321)
    os.chmod(g, 0o2775)
    open(os.path.join(g, "f"), "w").close()
    os.mkdir(os.path.join(g, "sub"))
    expect(os.stat(os.path.join(g, "f")).st_gid == 4321,
           "set-group-id directory: a file's group")
    s = os.stat(os.path.join(g, "sub"))
    expect(s.st_gid == 4321 and s.st_mode & stat.S_ISGID,
           "set-group-id directory: a subdirectory's group and bit")
    # xattrs
    os.setxattr(p, "user.a", b"1")
    os.setxattr(p, "user.big", b"v" * 60000)
    os.setxattr(p, "user.empty", b"")
    expect(os.getxattr(p, "user.a") == b"1", "getxattr")
    expect(os.getxattr(p, "user.big") == b"v" * 60000, "getxattr 60000 B")
    expect(os.getxattr(p, "user.empty") == b"", "an empty xattr")
    expect(sorted(os.listxattr(p)) == ["user.a", "user.big", "user.empty"],
           "listxattr: %s" % os.listxattr(p))
    expect_err(errno.EEXIST, "XATTR_CREATE on an existing name",
               os.setxattr, p, "user.a", b"2", os.XATTR_CREATE)
    expect_err(errno.ENODATA, "XATTR_REPLACE on a missing name",
               os.setxattr, p, "user.zz", b"2", os.XATTR_REPLACE)
    os.setxattr(p, "user.a", b"22", os.XATTR_REPLACE)
    expect(os.getxattr(p, "user.a") == b"22", "XATTR_REPLACE")
    os.removexattr(p, "user.a")
    expect_err(errno.ENODATA, "getxattr of a removed name", os.getxattr,
               p, "user.a")
    expect_err(errno.ENODATA, "removexattr of a missing name",
               os.removexattr, p, "user.a")
    # no POSIX ACLs: refused, so that tools fall back to chmod (cp -a)
    acl = struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, 4, 0xffffffff) for tag in (1, 4, 0x20))
    expect_err(errno.EOPNOTSUPP, "setting a POSIX ACL", os.setxattr, p,
               "system.posix_acl_access", acl)
    os.setxattr(d, "user.dir", b"on a directory")
    expect(os.getxattr(d, "user.dir") == b"on a directory",
           "xattr of a directory")
    done()


def listing(m):
    d = os.path.join(m, "many")
    os.mkdir(d)
    names = ["f%04d_%s" % (i, "x" * (i % 40)) for i in range(600)]
    for n in names:
        open(os.path.join(d, n), "w").close()
    got = os.listdir(d)
    expect(sorted(got) == sorted(names), "listing of 600 entries: %d "
           "names, %d distinct" % (len(got), len(set(got))))
    # entries made and removed while listing: no duplicates, every name
    # left alone appears once
    seen, removed = [], set()
    with os.scandir(d) as it:
        for k, e in enumerate(it):
            seen.append(e.name)
            if k == 150:
                for i in range(0, 600, 7):
                    os.unlink(os.path.join(d, names[i]))
                    removed.add(names[i])
                for i in range(50):
                    open(os.path.join(d, "a_new%02d" % i), "w").close()
                    open(os.path.join(d, "z_new%02d" % i), "w").close()
    dup = len(seen) - len(set(seen))
    missing = [n for n in names if n not in removed and n not in seen]
    expect(dup == 0, "listing while changing: %d duplicates" % dup)
    expect(missing == [], "listing while changing: %d missing" %
           len(missing))
    # the same with getdents64 and a 1 KiB buffer: the kernel continues
    # from inside its last reply (the offset of the last entry that fit)
    for i in range(50):
        os.unlink(os.path.join(d, "a_new%02d" % i))
        os.unlink(os.path.join(d, "z_new%02d" % i))
    left = sorted(os.listdir(d))
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    seen, offs, calls, changed = [], [], 0, False
    while True:
        ents = getdents(fd, 1024)
        calls += 1
        if not ents:
            break
        for name, off in ents:
            if name not in (".", ".."):
                seen.append(name)
                offs.append(off)
        if len(seen) >= 150 and not changed:
            changed = True
            for n in left[:150:5]:
                os.unlink(os.path.join(d, n))
            for i in range(10):  # a net shift of 20 positions
                open(os.path.join(d, "b_new%02d" % i), "w").close()
    dup = len(seen) - len(set(seen))
    missing = [n for n in left[150:] if n not in seen]
    expect(calls > 20 and calls < 1000, "getdents64 1 KiB: %d calls" % calls)
    expect(dup == 0, "getdents64 1 KiB while changing: %d duplicates" % dup)
    expect(missing == [], "getdents64 1 KiB while changing: missing %s" %
           missing[:5])
    # seek back to an offset of an earlier reply: the listing goes on
    # after that entry (nothing changed meanwhile)
    names_now = sorted(os.listdir(d))
    os.lseek(fd, 0, os.SEEK_SET)
    full, foffs = [], []
    while True:
        ents = getdents(fd, 1024)
        if not ents:
            break
        for name, off in ents:
            if name not in (".", ".."):
                full.append(name)
                foffs.append(off)
    expect(full == names_now, "getdents64 after rewind: %d names, wanted "
           "%d" % (len(full), len(names_now)))
    if len(full) > 400:
        os.lseek(fd, foffs[99], os.SEEK_SET)
        after = []
        while len(after) < 50:
            ents = getdents(fd, 1024)
            if not ents:
                break
            after += [n for n, _ in ents]
        expect(after[:50] == full[100:150], "getdents64 after seeking to "
               "an old offset: %s..., wanted %s..." % (after[:2],
                                                       full[100:102]))
    os.close(fd)
    # readdir with d_type and inode numbers agreeing with stat
    with os.scandir(d) as it:
        for e in it:
            if e.inode() != os.lstat(e.path).st_ino:
                fails.append("scandir inode of %s" % e.name)
                break
    sv = os.statvfs(m)
    expect(sv.f_namemax == 255, "f_namemax %d" % sv.f_namemax)
    expect(sv.f_blocks > 0 and sv.f_bfree <= sv.f_blocks,
           "statvfs blocks %d free %d" % (sv.f_blocks, sv.f_bfree))
    expect(sv.f_files >= 600, "statvfs files %d" % sv.f_files)
    done()


def getdents(fd, size):
    """One getdents64(2) call: [(name, d_off)]."""
    buf = ctypes.create_string_buffer(size)
    n = libc.syscall(217, fd, buf, size)
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    out, pos = [], 0
    while pos < n:
        off, reclen = struct.unpack_from("<qH", buf, pos + 8)
        name = buf[pos + 19:pos + reclen].split(b"\0", 1)[0].decode()
        out.append((name, off))
        pos += reclen
    return out


def tree_state(m):
    """path -> [ino, mode, size, mtime_ns, sha256 or link target]"""
    out = {}
    for root, dirs, files in os.walk(m):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                what = hashlib.sha256(open(p, "rb").read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                what = os.readlink(p)
            else:
                what = ""
            out[os.path.relpath(p, m)] = [st.st_ino, st.st_mode, st.st_size,
                                          st.st_mtime_ns, what]
    return out


def state_save(m, f):
    json.dump(tree_state(m), open(f, "w"))


def state_check(m, f):
    old, new = json.load(open(f)), tree_state(m)
    for p in sorted(set(old) | set(new)):
        if old.get(p) != new.get(p):
            fails.append("%s: %s then %s" % (p, old.get(p), new.get(p)))
            if len(fails) > 5:
                break
    expect(len(old) > 50, "only %d paths compared" % len(old))
    done()


class FH(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * 128)]


def handle_save(m, f):
    """name_to_handle_at of some files: their handles and contents."""
    out = []
    for rel in ["io/f65537", "names/hl", "attrs/f", "names/bb/c/f"]:
        fh = FH(128, 0)
        mid = ctypes.c_int()
        r = libc.name_to_handle_at(-100, os.path.join(m, rel).encode(),
                                   ctypes.byref(fh), ctypes.byref(mid), 0)
        if r != 0:
            print("  name_to_handle_at %s: %s" %
                  (rel, os.strerror(ctypes.get_errno())))
            sys.exit(1)
        out.append([rel, fh.handle_type, bytes(fh.f_handle[:fh.handle_bytes])
                    .hex(), hashlib.sha256(open(os.path.join(m, rel), "rb")
                                           .read()).hexdigest()])
    json.dump(out, open(f, "w"))
    sys.exit(0)


def handle_check(m, f):
    """open_by_handle_at of the saved handles gives the same files."""
    mfd = os.open(m, os.O_RDONLY | os.O_DIRECTORY)
    for rel, typ, hx, sha in json.load(open(f)):
        b = bytes.fromhex(hx)
        fh = FH(len(b), typ)
        ctypes.memmove(fh.f_handle, b, len(b))
        fd = libc.open_by_handle_at(mfd, ctypes.byref(fh), os.O_RDONLY)
        if fd < 0:
            fails.append("open_by_handle_at %s: %s" %
                         (rel, os.strerror(ctypes.get_errno())))
            continue
        data = b""
        while True:
            c = os.read(fd, 1 << 20)
            if not c:
                break
            data += c
        os.close(fd)
        expect(hashlib.sha256(data).hexdigest() == sha,
               "%s by handle: content differs" % rel)
    # a handle of a removed file is stale
    p = os.path.join(m, "gone")
    open(p, "w").write("gone")
    fh = FH(128, 0)
    mid = ctypes.c_int()
    libc.name_to_handle_at(-100, p.encode(), ctypes.byref(fh),
                           ctypes.byref(mid), 0)
    os.unlink(p)
    fd = libc.open_by_handle_at(mfd, ctypes.byref(fh), os.O_RDONLY)
    e = ctypes.get_errno()
    expect(fd < 0 and e == errno.ESTALE, "open_by_handle_at of a removed "
           "file: fd %d errno %d" % (fd, e))
    done()


REC = 16384
HDR = struct.Struct("<IIIII")  # magic, round, file, record, crc32(payload)
MAGIC = 0x52454344


def record(rnd_round, fileno, i):
    payload = random.Random(rnd_round * 1000003 + fileno * 1009 + i) \
        .randbytes(REC - HDR.size)
    return HDR.pack(MAGIC, rnd_round, fileno, i, zlib.crc32(payload)) + \
        payload


def writer(d, logf, rnd_round):
    """Files of whole records; every other one fsynced and then logged.
    The last 6 files stay open: their sizes reach the store by fsync (or
    the mount's write-back timer), not by their close."""
    os.makedirs(d, exist_ok=True)
    log = os.open(logf, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    rnd = random.Random(rnd_round)
    fileno = 0
    fds = []
    try:
        while True:
            name = "r%d_%05d" % (rnd_round, fileno)
            n = rnd.randrange(1, 40)
            fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT,
                         0o644)
            h = hashlib.sha256()
            for i in range(n):
                r = record(rnd_round, fileno, i)
                os.write(fd, r)
                h.update(r)
            if fileno % 2 == 0:
                os.fsync(fd)
                os.write(log, ("%s %d %s\n" % (name, n, h.hexdigest()))
                         .encode())
                os.fsync(log)
            fds.append(fd)
            if len(fds) > 6:
                os.close(fds.pop(0))
            fileno += 1
    except OSError:
        pass  # the daemon was killed under us


def verify(d, logf):
    """Every logged file byte-exact; every file whole valid records."""
    logged = {}
    for line in open(logf):
        name, n, sha = line.split()
        logged[name] = (int(n), sha)
    for name, (n, sha) in logged.items():
        p = os.path.join(d, name)
        try:
            data = open(p, "rb").read()
        except OSError as e:
            fails.append("fsynced %s: %s" % (name, e))
            continue
        if len(data) != n * REC or hashlib.sha256(data).hexdigest() != sha:
            fails.append("fsynced %s: %d bytes (wanted %d), content %s" %
                         (name, len(data), n * REC,
                          "differs" if len(data) == n * REC else "-"))
    files = 0
    for name in sorted(os.listdir(d)):
        files += 1
        data = open(os.path.join(d, name), "rb").read()
        rr, fno = name[1:].split("_")
        if len(data) % REC:
            fails.append("%s: %d bytes, not whole records" %
                         (name, len(data)))
        for i in range(len(data) // REC):
            if data[i * REC:(i + 1) * REC] != record(int(rr), int(fno), i):
                fails.append("%s: record %d of %d is not what was written"
                             % (name, i, len(data) // REC))
                break
    print("  %d files, %d of them fsynced" % (files, len(logged)))
    expect(len(logged) > 0, "the writer fsynced nothing before the kill")
    done()


cmd = sys.argv[1]
if cmd == "io": data_io(sys.argv[2])
elif cmd == "names": names(sys.argv[2])
elif cmd == "attrs": attrs(sys.argv[2])
elif cmd == "listing": listing(sys.argv[2])
elif cmd == "state_save": state_save(sys.argv[2], sys.argv[3])
elif cmd == "state_check": state_check(sys.argv[2], sys.argv[3])
elif cmd == "handle_save": handle_save(sys.argv[2], sys.argv[3])
elif cmd == "handle_check": handle_check(sys.argv[2], sys.argv[3])
elif cmd == "writer": writer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
elif cmd == "verify": verify(sys.argv[2], sys.argv[3])
EOF

# ------------------------------------------------------------ 0. usage
"$F" --attr-timeout abc "$MNT" >"$T/err" 2>&1
rc=$?
check "bad --attr-timeout: exit 2 naming the option" \
	eval '[ $rc -eq 2 ] && grep -q -- "--attr-timeout" "$T/err"'
"$F" --block-size 5000 --mkfs "$MNT" >"$T/err" 2>&1
rc=$?
check "bad --block-size: exit 2 naming the option" \
	eval '[ $rc -eq 2 ] && grep -q -- "--block-size" "$T/err"'
"$F" --frobnicate "$MNT" >"$T/err" 2>&1
rc=$?
check "unknown option: exit 2 naming it" \
	eval '[ $rc -eq 2 ] && grep -q -- "--frobnicate" "$T/err"'
"$F" --data "$STORE" >"$T/err" 2>&1
rc=$?
check "no mountpoint: exit 2" eval '[ $rc -eq 2 ]'
"$F" --data "$STORE" -o no_such_fuse_option -f "$MNT" >"$T/err" 2>&1
rc=$?
check "a bad -o option: exit 2 naming it, before the store is made" \
	eval '[ $rc -eq 2 ] && grep -q "no_such_fuse_option" "$T/err" &&
	[ ! -e "$STORE" ]'
timeout 60 "$F" --data "$T/nostore" -f "$MNT" >"$T/err" 2>&1
rc=$?
check "a missing store without --mkfs: exit 1 with a message" \
	eval '[ $rc -eq 1 ] && [ -s "$T/err" ] && ! grep -q " $MNT " /proc/mounts'

# ------------------------------------------------------------ 1. mount
if ! fs_mount --mkfs; then
	no "strata-fuse --mkfs -f mounts"
	echo "$pass passed, $fail failed"
	exit 1
fi
ok "strata-fuse --mkfs -f mounts (fuse.strata)"
check "the new root is an empty directory" \
	eval '[ -z "$(ls -A "$MNT")" ] && [ "$(stat -c %i "$MNT")" = 1 ]'

# ------------------------------------------------------------ 2-5.
check "data: sizes, odd offsets, holes, truncate, O_APPEND/O_TRUNC/O_EXCL" \
	py io "$MNT"
check "names: mkdir/rmdir, rename(2), renameat2, links, fifo, open unlinked" \
	py names "$MNT"
check "attributes: chmod, chown, utimes ns, ctime, sgid; xattrs" \
	py attrs "$MNT"
check "listings: 600 entries, changes during a listing; statvfs" \
	py listing "$MNT"

mkdir "$MNT/sh"
echo hello >"$MNT/sh/file"
chmod 640 "$MNT/sh/file"
ln -s file "$MNT/sh/link"
ln "$MNT/sh/file" "$MNT/sh/hard"
mkdir "$MNT/sh/dir"
TZ=UTC touch -d "2001-02-03 04:05:06.123456789" "$MNT/sh/file"
check "touch -d: mtime with nanoseconds" \
	eval '[ "$(TZ=UTC stat -c %y "$MNT/sh/file")" = "2001-02-03 04:05:06.123456789 +0000" ]'
TZ=UTC touch -a -d "2002-01-01 00:00:00" "$MNT/sh/file"
check "touch -a: atime only" \
	eval '[ "$(TZ=UTC stat -c "%x|%y" "$MNT/sh/file")" = "2002-01-01 00:00:00.000000000 +0000|2001-02-03 04:05:06.123456789 +0000" ]'
cp -p "$MNT/sh/file" "$MNT/sh/old"
touch "$MNT/sh/old"
check "touch: an old file's times become now (UTIME_NOW)" \
	eval '[ $(( $(date +%s) - $(stat -c %Y "$MNT/sh/old") )) -lt 60 ] &&
	[ $(( $(date +%s) - $(stat -c %X "$MNT/sh/old") )) -lt 60 ]'
rm "$MNT/sh/old"
truncate -s 3 "$MNT/sh/hard"
check "truncate -s through a hard link" \
	eval '[ "$(cat "$MNT/sh/file")" = hel ]'
ls -l "$MNT/sh" >"$T/ls" 2>&1
check "ls -l: modes, links, sizes, symlink" eval '
	grep -Eq "^-rw-r----- 2 root root 3 .* file$" "$T/ls" &&
	grep -Eq "^-rw-r----- 2 root root 3 .* hard$" "$T/ls" &&
	grep -Eq "^lrwxrwxrwx 1 root root 4 .* link -> file$" "$T/ls" &&
	grep -Eq "^drwxr-xr-x 2 root root [0-9]+ .* dir$" "$T/ls" &&
	[ "$(grep -c . "$T/ls")" = 5 ]'
df -P "$MNT" >"$T/df" 2>&1
check "df: the mount with a size" \
	eval 'awk "NR == 2 { exit !(\$2 > 0 && \$6 == \"$MNT\") }" "$T/df"'
check "stat -f: type fuse" eval '[ "$(stat -f -c %T "$MNT")" = fuseblk ] ||
	[ "$(stat -f -c %T "$MNT")" = fuse ]'

# ------------------------------------------------------------ 6. remount
py state_save "$MNT" "$T/state.json"
if py handle_save "$MNT" "$T/handles.json"; then have_handles=1
else have_handles=0; fi
check "SIGTERM: the daemon exits 0 and the mount is gone" fs_umount
if fs_mount; then
	ok "remount"
	check "after remount: the same content, inode numbers and times" \
		py state_check "$MNT" "$T/state.json"
	if [ "$have_handles" = 1 ]; then
		check "file handles from before the remount open the same files" \
			py handle_check "$MNT" "$T/handles.json"
	else
		echo "skip name_to_handle_at (refused on this machine)"
	fi
	check "SIGTERM again: exit 0, mount gone" fs_umount
else
	no "remount"
fi

# --read-only: the same tree, every change EROFS
if fs_mount --read-only; then
	check "--read-only: the same tree" py state_check "$MNT" "$T/state.json"
	touch "$MNT/ro" 2>"$T/err"
	check "--read-only: a change is refused (EROFS)" \
		grep -q "Read-only file system" "$T/err"
	check "--read-only: unmount" fs_umount
else
	no "--read-only mount"
fi

# --container: the namespace of a store lives in one container (its
# indices have fixed ids, ns.h): another container is refused with a
# message naming the one that holds it; the default named explicitly works
timeout 60 "$F" --data "$STORE" --container @second --mkfs -f "$MNT" \
	>"$T/err" 2>&1
rc=$?
check "--container @second --mkfs: refused (exit 1, names 0:1)" \
	eval '[ $rc -eq 1 ] && grep -q "0:1" "$T/err" &&
	! grep -q " $MNT " /proc/mounts'
if fs_mount --container 0:1; then
	check "--container 0:1: the same tree" \
		py state_check "$MNT" "$T/state.json"
	check "unmount" fs_umount
else
	no "--container 0:1"
fi

# the kernel checks permissions (default_permissions), for other users
# too (allow_other)
if command -v setpriv >/dev/null && fs_mount; then
	mkdir -p "$MNT/perm"
	echo secret >"$MNT/perm/private"
	echo public >"$MNT/perm/public"
	chmod 600 "$MNT/perm/private"
	chmod 644 "$MNT/perm/public"
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	check "permissions: another user reads a 0644 file" \
		eval '[ "$(nobody cat "$MNT/perm/public")" = public ]'
	check "permissions: another user cannot read a 0600 file" \
		eval '! nobody cat "$MNT/perm/private" 2>/dev/null'
	check "permissions: another user cannot write in a 0755 directory" \
		eval '! nobody touch "$MNT/perm/new" 2>/dev/null &&
		[ ! -e "$MNT/perm/new" ]'
	chmod 1777 "$MNT/perm"
	check "permissions: another user writes in a 1777 directory" \
		eval 'nobody touch "$MNT/perm/new" &&
		[ "$(stat -c %u "$MNT/perm/new")" = 65534 ]'
	check "permissions: and cannot remove root's file there (sticky)" \
		eval '! nobody rm -f "$MNT/perm/public" 2>/dev/null &&
		[ -e "$MNT/perm/public" ]'
	check "unmount" fs_umount
fi

# without -f: the command returns once mounted; fusermount3 -u ends the
# daemon, which writes back before it exits
timeout 120 "$F" --data "$STORE" --dev-size 64M "$MNT" >>"$LOG" 2>&1
rc=$?
check "daemon mode: exit 0 once mounted" \
	eval '[ $rc -eq 0 ] && grep -q " $MNT fuse.strata " /proc/mounts'
dpid=$(pgrep -f -x -- "$F --data $STORE --dev-size 64M $MNT" | head -1)
echo daemon >"$MNT/by-daemon"
fusermount3 -u "$MNT"
for _ in $(seq 1 600); do
	[ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null || break
	sleep 0.1
done
check "daemon mode: fusermount3 -u ends the daemon" \
	eval '[ -n "$dpid" ] && ! kill -0 "$dpid" 2>/dev/null'
if fs_mount; then
	check "daemon mode: its file is there after the remount" \
		eval '[ "$(cat "$MNT/by-daemon")" = daemon ]'
	check "unmount" fs_umount
fi

# ------------------------------------------------------------ 7. crash
: >"$T/crash.log"
for round in 1 2 3; do
	if ! fs_mount; then
		no "crash round $round: mount"
		break
	fi
	mkdir -p "$MNT/crash"
	python3 "$T/t.py" writer "$MNT/crash" "$T/crash.log" "$round" &
	wpid=$!
	sleep "$(python3 -c "import random; print(round(random.uniform(1.5, 4), 2))")"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	pid=""
	for _ in $(seq 1 100); do
		kill -0 "$wpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	wpid=""
	fusermount3 -u -z "$MNT"
	check "crash round $round: the dead mount unmounted (-u -z)" \
		eval '! grep -q " $MNT " /proc/mounts'
	if ! fs_mount; then
		no "crash round $round: remount after SIGKILL"
		break
	fi
	check "crash round $round: fsynced files exact, no torn file" \
		py verify "$MNT/crash" "$T/crash.log"
	check "crash round $round: unmount" fs_umount
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
