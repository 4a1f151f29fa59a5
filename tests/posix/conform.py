#!/usr/bin/env python3
"""conform.py DIR [--skip-group G,...]: a POSIX file-system conformance suite.

Runs small cases, each asserting exact results of the calls a file system
must get right (open/creat, read/write, truncate, sync, directories,
rename, readdir, stat fields, chmod/chown, utime, statvfs, symlinks, hard
links, xattrs and their error numbers), in an empty directory DIR of the
file system under test (for Strata: a strata-fuse mount, issue 33).  Each
case works in a fresh subdirectory of DIR, removed after it; DIR is left
empty.

Output: one line per case, "ok NAME" or "FAIL NAME: reason", a line
"skip GROUP (N cases): reason" for each group not run, and last exactly
"N passed, N failed".  Exit status 1 when any case failed, 2 on bad usage.

Groups a FUSE file system may legitimately lack or differ on are named
(OPTIONAL below, each with its reason) and can be skipped with
--skip-group; so can any other group.  Not in the suite at all: atime
updates on read (relatime, noatime and FUSE mounts differ), O_DIRECT,
SEEK_DATA/SEEK_HOLE, fallocate, O_TMPFILE, times before 1970.

It must pass 100 % as root on tmpfs and ext4 (tests/posix/README.md).
Without root, the groups that need it are skipped (and said so).
"""
import argparse
import ctypes
import errno
import mmap
import os
import random
import shutil
import signal
import stat
import sys
import threading
import time

# ----------------------------------------------------------------- registry

CASES = []  # (group, name, fn, needs_root)

GROUPS = [
    "open", "io", "truncate", "sync", "dir", "rename", "renameat2",
    "readdir", "stat", "chmod", "chown", "utime", "statvfs", "symlink",
    "link", "xattr", "errors", "perm", "sgid", "mknod", "orphan", "mmap",
]

# Groups a FUSE file system may legitimately differ on, and why.
OPTIONAL = {
    "perm": "other users' access is checked by the kernel only with "
            "default_permissions, and reaches a FUSE mount at all only "
            "with allow_other",
    "sgid": "setgid-directory group inheritance is left to the file "
            "system by FUSE (the kernel does not apply it)",
    "mknod": "special files (fifo, socket, device) are optional for a "
             "FUSE file system",
    "orphan": "an unlinked file still open keeps its data only if the "
              "FUSE file system defers the removal to the last release "
              "(the kernel keeps just the inode)",
    "mmap": "mmap fails (ENODEV) on a FUSE mount with direct_io "
            "(cache=never)",
    "renameat2": "RENAME_NOREPLACE/RENAME_EXCHANGE are optional for a "
                 "FUSE file system (EINVAL when not supported)",
}

ROOT_GROUPS = {"chown", "perm", "sgid"}

CASE_TIMEOUT = 30.0


def case(group, root=False):
    assert group in GROUPS, group

    def reg(fn):
        CASES.append((group, group + "." + fn.__name__, fn, root))
        return fn
    return reg


# ------------------------------------------------------------------ helpers


class Fail(Exception):
    pass


class Timeout(Exception):
    pass


OPEN_FDS = []  # fds a case opened through fd_open(), closed after it


def fd_open(path, flags, mode=0o644):
    fd = os.open(path, flags, mode)
    OPEN_FDS.append(fd)
    return fd


def fd_close(fd):
    if fd in OPEN_FDS:
        OPEN_FDS.remove(fd)
    os.close(fd)


def ename(e):
    return errno.errorcode.get(e, str(e))


def eq(got, want, what):
    if got != want:
        g, w = repr(got), repr(want)
        if len(g) > 120:
            g = g[:120] + "..."
        if len(w) > 120:
            w = w[:120] + "..."
        raise Fail("%s: got %s, want %s" % (what, g, w))


def true(cond, what):
    if not cond:
        raise Fail(what)


def raises(err, fn, *args, **kw):
    """fn(*args) must fail with errno err."""
    try:
        fn(*args, **kw)
    except OSError as e:
        if e.errno != err:
            raise Fail("%s%s: %s, want %s" % (
                fn.__name__, short_args(args), ename(e.errno), ename(err)))
        return
    raise Fail("%s%s: succeeded, want %s" % (
        fn.__name__, short_args(args), ename(err)))


def short_args(args):
    s = []
    for a in args:
        r = repr(a)
        if isinstance(a, str) and ROOT and a.startswith(ROOT):
            r = repr("DIR" + a[len(ROOT):])
        if len(r) > 60:
            r = r[:40] + "..." + r[-12:]
        s.append(r)
    return "(" + ", ".join(s) + ")"


def put(path, data, mode=0o644):
    if isinstance(data, str):
        data = data.encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        n = 0
        while n < len(data):
            n += os.write(fd, data[n:])
    finally:
        os.close(fd)


def get(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        out = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            out.append(b)
        return b"".join(out)
    finally:
        os.close(fd)


def pread_all(fd, n, off):
    out = []
    while n > 0:
        b = os.pread(fd, n, off)
        if not b:
            break
        out.append(b)
        n -= len(b)
        off += len(b)
    return b"".join(out)


def touch(path, mode=0o644):
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))


def J(*p):
    return os.path.join(*p)


def lst(p):
    return os.lstat(p)


def perm_bits(p, follow=True):
    return stat.S_IMODE(os.stat(p, follow_symlinks=follow).st_mode)


def user_xattrs(p, follow=True):
    return sorted(n for n in os.listxattr(p, follow_symlinks=follow)
                  if n.startswith("user."))


OLD_NS = 10 ** 18  # 2001-09-09: times set before a change is checked
SLACK_NS = 3 * 10 ** 9


def set_old(p, follow=True):
    os.utime(p, ns=(OLD_NS, OLD_NS), follow_symlinks=follow)


def tick():
    # ctime cannot be set: wait a few clock ticks (a coarse kernel clock
    # advances every 1-10 ms) before a change whose ctime is checked
    time.sleep(0.03)


def mtime_moves(p, op, follow=True, ctime=True, what="mtime"):
    """op() must set p's mtime (and ctime) to now."""
    set_old(p, follow)
    s0 = os.stat(p, follow_symlinks=follow)
    tick()
    t0 = time.time_ns()
    op()
    t1 = time.time_ns()
    s1 = os.stat(p, follow_symlinks=follow)
    true(t0 - SLACK_NS <= s1.st_mtime_ns <= t1 + SLACK_NS,
         "%s not set to now: %d (now %d)" % (what, s1.st_mtime_ns, t1))
    if ctime:
        true(s1.st_ctime_ns > s0.st_ctime_ns,
             "ctime not changed (%d -> %d)" % (s0.st_ctime_ns, s1.st_ctime_ns))


def ctime_moves(p, op, follow=True):
    s0 = os.stat(p, follow_symlinks=follow)
    tick()
    op()
    s1 = os.stat(p, follow_symlinks=follow)
    true(s1.st_ctime_ns > s0.st_ctime_ns,
         "ctime not changed (%d -> %d)" % (s0.st_ctime_ns, s1.st_ctime_ns))
    return s0, s1


def near_now(ns, t0, t1, what):
    true(t0 - SLACK_NS <= ns <= t1 + SLACK_NS,
         "%s %d not near now (%d..%d)" % (what, ns, t0, t1))


def rand_bytes(n, seed):
    return random.Random(seed).randbytes(n)


# ctypes for what the os module lacks: utimensat with UTIME_NOW/OMIT,
# renameat2, getxattr with a small buffer.
LIBC = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _oserr(path):
    e = ctypes.get_errno()
    return OSError(e, os.strerror(e), path)


def utimensat(path, a, m, flags=0):
    """a, m: (sec, nsec) or UTIME_NOW / UTIME_OMIT."""
    def ts(x):
        if x in (UTIME_NOW, UTIME_OMIT):
            return Timespec(0, x)
        return Timespec(x[0], x[1])
    arr = (Timespec * 2)(ts(a), ts(m))
    f = LIBC.utimensat
    f.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(Timespec),
                  ctypes.c_int]
    if f(AT_FDCWD, os.fsencode(path), arr, flags) != 0:
        raise _oserr(path)


def renameat2(old, new, flags):
    f = getattr(LIBC, "renameat2", None)
    if f is not None:
        f.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                      ctypes.c_char_p, ctypes.c_uint]
        r = f(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags)
    else:  # x86_64 syscall number
        LIBC.syscall.restype = ctypes.c_long
        r = LIBC.syscall(ctypes.c_long(316), ctypes.c_int(AT_FDCWD),
                         ctypes.c_char_p(os.fsencode(old)),
                         ctypes.c_int(AT_FDCWD),
                         ctypes.c_char_p(os.fsencode(new)),
                         ctypes.c_uint(flags))
    if r != 0:
        raise _oserr(old)


def getxattr_raw(path, name, size):
    """getxattr(2) with a buffer of size bytes: (length, bytes)."""
    f = LIBC.getxattr
    f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                  ctypes.c_size_t]
    f.restype = ctypes.c_ssize_t
    buf = ctypes.create_string_buffer(max(size, 1))
    r = f(os.fsencode(path), os.fsencode(name),
          buf if size else None, size)
    if r < 0:
        raise _oserr(path)
    return r, buf.raw[:r] if size else b""


def as_user(fn, uid=65534, gid=65534):
    """Run fn() in a child with uid/gid; its errno (0 = it succeeded)."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            signal.alarm(0)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            fn()
        except OSError as e:
            code = e.errno if 0 < e.errno < 250 else 251
        except BaseException:
            code = 252
        os._exit(code)
    end = time.monotonic() + 10
    while True:
        p, status = os.waitpid(pid, os.WNOHANG)
        if p:
            break
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise Fail("child as uid %d hung" % uid)
        time.sleep(0.005)
    if not os.WIFEXITED(status):
        raise Fail("child as uid %d died: status %d" % (uid, status))
    code = os.WEXITSTATUS(status)
    if code >= 250:
        raise Fail("child as uid %d failed (%d)" % (uid, code))
    return code


def user_eq(fn, want, what):
    got = as_user(fn)
    if got != want:
        raise Fail("%s as uid 65534: %s, want %s" % (
            what, ename(got) if got else "success",
            ename(want) if want else "success"))


ROOT = None  # the run's DIR (for messages)


# ===================================================================== open

@case("open")
def creat_new(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_WRONLY, 0o640)
    s = os.fstat(fd)
    true(stat.S_ISREG(s.st_mode), "not a regular file")
    eq(stat.S_IMODE(s.st_mode), 0o640, "mode")
    eq(s.st_size, 0, "size")
    eq(s.st_nlink, 1, "nlink")
    eq(os.listdir(d), ["f"], "entries")


@case("open")
def creat_function(d):
    # creat() is open(O_CREAT|O_WRONLY|O_TRUNC)
    p = J(d, "f")
    put(p, b"old contents")
    fd = fd_open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    eq(os.fstat(fd).st_size, 0, "size after creat of an existing file")
    eq(perm_bits(p), 0o644, "mode of an existing file kept")
    raises(errno.EBADF, os.read, fd, 1)


@case("open")
def creat_existing_keeps_data(d):
    p = J(d, "f")
    put(p, b"abc")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o600)
    eq(os.read(fd, 10), b"abc", "data")
    eq(perm_bits(p), 0o644, "mode unchanged")


@case("open")
def creat_excl_existing_eexist(d):
    p = J(d, "f")
    put(p, b"abc")
    raises(errno.EEXIST, os.open, p, os.O_CREAT | os.O_EXCL | os.O_WRONLY,
           0o644)
    eq(get(p), b"abc", "data untouched")


@case("open")
def creat_excl_new(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    eq(os.write(fd, b"x"), 1, "write")
    eq(get(p), b"x", "data")


@case("open")
def creat_excl_existing_dir_eexist(d):
    os.mkdir(J(d, "s"))
    raises(errno.EEXIST, os.open, J(d, "s"), os.O_CREAT | os.O_EXCL |
           os.O_WRONLY, 0o644)


@case("open")
def creat_excl_dangling_symlink_eexist(d):
    os.symlink("nowhere", J(d, "l"))
    raises(errno.EEXIST, os.open, J(d, "l"),
           os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    eq(sorted(os.listdir(d)), ["l"], "target not made")


@case("open")
def creat_through_dangling_symlink(d):
    os.symlink("t", J(d, "l"))
    fd = fd_open(J(d, "l"), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"via link")
    eq(sorted(os.listdir(d)), ["l", "t"], "entries")
    eq(get(J(d, "t")), b"via link", "target data")


@case("open")
def excl_race_one_winner(d):
    p = J(d, "f")
    for rnd in range(20):
        wins, errs = [], []
        bar = threading.Barrier(3)

        def go():
            bar.wait()
            try:
                os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                                 0o644))
                wins.append(1)
            except OSError as e:
                errs.append(e.errno)
        th = [threading.Thread(target=go) for _ in range(3)]
        for t in th:
            t.start()
        for t in th:
            t.join(10)
        eq(len(wins), 1, "round %d: creators that won" % rnd)
        eq(errs, [errno.EEXIST] * 2, "round %d: the others' errors" % rnd)
        os.unlink(p)


@case("open")
def trunc_existing(d):
    p = J(d, "f")
    put(p, b"x" * 100)
    fd = fd_open(p, os.O_WRONLY | os.O_TRUNC)
    eq(os.fstat(fd).st_size, 0, "size after O_TRUNC")
    eq(get(p), b"", "data")


@case("open")
def trunc_then_write(d):
    p = J(d, "f")
    put(p, b"0123456789" * 1000)
    fd = fd_open(p, os.O_RDWR | os.O_TRUNC)
    os.write(fd, b"xy")
    eq(get(p), b"xy", "data")
    eq(os.stat(p).st_size, 2, "size")


@case("open")
def trunc_sets_mtime(d):
    p = J(d, "f")
    put(p, b"abc")
    mtime_moves(p, lambda: os.close(os.open(p, os.O_WRONLY | os.O_TRUNC)))


@case("open")
def append_writes_at_end(d):
    p = J(d, "f")
    put(p, b"abc")
    fd = fd_open(p, os.O_WRONLY | os.O_APPEND)
    eq(os.write(fd, b"de"), 2, "write")
    eq(get(p), b"abcde", "data")


@case("open")
def append_ignores_lseek(d):
    p = J(d, "f")
    put(p, b"abc")
    fd = fd_open(p, os.O_RDWR | os.O_APPEND)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, b"Z")
    eq(get(p), b"abcZ", "data")
    eq(os.lseek(fd, 0, os.SEEK_CUR), 4, "offset after the append")


@case("open")
def append_two_fds(d):
    p = J(d, "f")
    touch(p)
    a = fd_open(p, os.O_WRONLY | os.O_APPEND)
    b = fd_open(p, os.O_WRONLY | os.O_APPEND)
    for i in range(10):
        os.write(a if i % 2 == 0 else b, b"%d" % i)
    eq(get(p), b"0123456789", "data")


@case("open")
def append_empty_file(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"one")
    os.write(fd, b"two")
    eq(get(p), b"onetwo", "data")


@case("open")
def open_missing_enoent(d):
    raises(errno.ENOENT, os.open, J(d, "nope"), os.O_RDONLY)


@case("open")
def creat_in_missing_dir_enoent(d):
    raises(errno.ENOENT, os.open, J(d, "no", "f"),
           os.O_CREAT | os.O_WRONLY, 0o644)


@case("open")
def open_dir_wronly_eisdir(d):
    os.mkdir(J(d, "s"))
    raises(errno.EISDIR, os.open, J(d, "s"), os.O_WRONLY)


@case("open")
def open_dir_rdwr_eisdir(d):
    os.mkdir(J(d, "s"))
    raises(errno.EISDIR, os.open, J(d, "s"), os.O_RDWR)


@case("open")
def open_dir_creat_eisdir(d):
    os.mkdir(J(d, "s"))
    raises(errno.EISDIR, os.open, J(d, "s"), os.O_CREAT | os.O_RDONLY,
           0o644)


@case("open")
def open_dir_rdonly(d):
    os.mkdir(J(d, "s"))
    fd = fd_open(J(d, "s"), os.O_RDONLY | os.O_DIRECTORY)
    true(stat.S_ISDIR(os.fstat(fd).st_mode), "fstat of the dir fd")


@case("open")
def o_directory_on_file_enotdir(d):
    put(J(d, "f"), b"")
    raises(errno.ENOTDIR, os.open, J(d, "f"), os.O_RDONLY | os.O_DIRECTORY)


@case("open")
def trailing_slash_on_file_enotdir(d):
    put(J(d, "f"), b"")
    raises(errno.ENOTDIR, os.open, J(d, "f") + "/", os.O_RDONLY)


@case("open")
def file_as_dir_component_enotdir(d):
    put(J(d, "f"), b"")
    raises(errno.ENOTDIR, os.open, J(d, "f", "x"),
           os.O_CREAT | os.O_WRONLY, 0o644)


@case("open")
def creat_mode_bits(d):
    for i, m in enumerate((0o600, 0o755, 0o444, 0o000, 0o777)):
        p = J(d, "f%d" % i)
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, m))
        eq(perm_bits(p), m, "mode of a file made with %o" % m)


@case("open")
def read_on_wronly_ebadf(d):
    p = J(d, "f")
    put(p, b"abc")
    fd = fd_open(p, os.O_WRONLY)
    raises(errno.EBADF, os.read, fd, 3)


@case("open")
def write_on_rdonly_ebadf(d):
    p = J(d, "f")
    put(p, b"abc")
    fd = fd_open(p, os.O_RDONLY)
    raises(errno.EBADF, os.write, fd, b"x")
    eq(get(p), b"abc", "data")


@case("open")
def rdwr_read_after_write(d):
    fd = fd_open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b"hello")
    os.lseek(fd, 0, os.SEEK_SET)
    eq(os.read(fd, 100), b"hello", "read back")


@case("open")
def creat_owner_is_caller(d):
    p = J(d, "f")
    touch(p)
    s = os.stat(p)
    eq((s.st_uid, s.st_gid), (os.geteuid(), os.getegid()), "uid, gid")


# ======================================================================= io

@case("io")
def write_read_small(d):
    p = J(d, "f")
    put(p, b"hello, world")
    eq(get(p), b"hello, world", "data")


@case("io")
def write_returns_count(d):
    fd = fd_open(J(d, "f"), os.O_CREAT | os.O_WRONLY, 0o644)
    eq(os.write(fd, b"x" * 5000), 5000, "write count")
    eq(os.fstat(fd).st_size, 5000, "fstat size")


@case("io")
def read_at_offset(d):
    p = J(d, "f")
    put(p, bytes(range(256)) * 4)
    fd = fd_open(p, os.O_RDONLY)
    eq(os.lseek(fd, 300, os.SEEK_SET), 300, "lseek")
    eq(os.read(fd, 10), bytes(range(44, 54)), "read at 300")
    eq(os.lseek(fd, 0, os.SEEK_CUR), 310, "offset after the read")


@case("io")
def partial_block_overwrite(d):
    p = J(d, "f")
    put(p, b"a" * 8192)
    fd = fd_open(p, os.O_WRONLY)
    os.pwrite(fd, b"XYZ", 4095)
    eq(get(p), b"a" * 4095 + b"XYZ" + b"a" * (8192 - 4098), "data")


@case("io")
def write_across_64k_boundary(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    data = rand_bytes(100, 3)
    os.pwrite(fd, data, 65500)
    eq(os.fstat(fd).st_size, 65600, "size")
    eq(get(p), bytes(65500) + data, "data")


@case("io")
def write_block_edges(d):
    # one byte each side of 4 KiB, 64 KiB and 1 MiB block boundaries
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    model = bytearray()
    for i, off in enumerate((4095, 4096, 65535, 65536, 65537,
                             (1 << 20) - 1, 1 << 20)):
        b = bytes([65 + i]) * 2
        os.pwrite(fd, b, off)
        if len(model) < off + 2:
            model.extend(bytes(off + 2 - len(model)))
        model[off:off + 2] = b
    eq(os.fstat(fd).st_size, len(model), "size")
    eq(pread_all(fd, len(model) + 10, 0), bytes(model), "data")


@case("io")
def read_past_eof_empty(d):
    p = J(d, "f")
    put(p, b"0123456789")
    fd = fd_open(p, os.O_RDONLY)
    eq(os.pread(fd, 10, 15), b"", "pread past EOF")
    os.lseek(fd, 100, os.SEEK_SET)
    eq(os.read(fd, 10), b"", "read past EOF")


@case("io")
def read_at_eof_empty(d):
    p = J(d, "f")
    put(p, b"0123456789")
    fd = fd_open(p, os.O_RDONLY)
    eq(os.pread(fd, 10, 10), b"", "pread at EOF")


@case("io")
def read_straddling_eof_short(d):
    p = J(d, "f")
    put(p, b"0123456789")
    fd = fd_open(p, os.O_RDONLY)
    eq(os.pread(fd, 100, 5), b"56789", "pread across EOF")


@case("io")
def read_empty_file(d):
    p = J(d, "f")
    touch(p)
    fd = fd_open(p, os.O_RDONLY)
    eq(os.read(fd, 100), b"", "read")


@case("io")
def write_past_eof_hole_zeros(d):
    p = J(d, "f")
    put(p, b"abc")
    fd = fd_open(p, os.O_WRONLY)
    os.pwrite(fd, b"Z", 10)
    eq(get(p), b"abc" + bytes(7) + b"Z", "data")


@case("io")
def hole_1mib_reads_zeros(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    off = (1 << 20) + 3
    os.pwrite(fd, b"x", off)
    eq(os.fstat(fd).st_size, off + 1, "size")
    eq(pread_all(fd, off, 0), bytes(off), "the hole")
    eq(os.pread(fd, 10, off), b"x", "the byte")


@case("io")
def hole_between_blocks(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.pwrite(fd, b"head", 0)
    os.pwrite(fd, b"tail", 300000)
    data = pread_all(fd, 400000, 0)
    eq(len(data), 300004, "size")
    eq(data[:4], b"head", "head")
    eq(data[4:300000], bytes(300000 - 4), "the hole")
    eq(data[300000:], b"tail", "tail")


@case("io")
def hole_inside_block(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.pwrite(fd, b"A" * 10, 0)
    os.pwrite(fd, b"B" * 10, 100)
    eq(pread_all(fd, 200, 0), b"A" * 10 + bytes(90) + b"B" * 10, "data")


@case("io")
def large_offset_5gib(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    off = 5 << 30
    os.pwrite(fd, b"end", off)
    eq(os.fstat(fd).st_size, off + 3, "size")
    eq(os.pread(fd, 8, off - 5), bytes(5) + b"end", "across the end")
    eq(os.pread(fd, 16, 4 << 30), bytes(16), "inside the hole (4 GiB)")
    eq(os.pread(fd, 16, 0), bytes(16), "the start")


@case("io")
def pwrite_keeps_offset(d):
    p = J(d, "f")
    put(p, b"abcdef")
    fd = fd_open(p, os.O_RDWR)
    os.lseek(fd, 2, os.SEEK_SET)
    eq(os.pwrite(fd, b"ZZ", 0), 2, "pwrite")
    eq(os.lseek(fd, 0, os.SEEK_CUR), 2, "offset after pwrite")
    eq(os.read(fd, 10), b"cdef", "read from the offset")
    eq(get(p), b"ZZcdef", "data")


@case("io")
def pread_keeps_offset(d):
    p = J(d, "f")
    put(p, b"abcdef")
    fd = fd_open(p, os.O_RDONLY)
    os.lseek(fd, 1, os.SEEK_SET)
    eq(os.pread(fd, 2, 4), b"ef", "pread")
    eq(os.read(fd, 2), b"bc", "read from the offset")


@case("io")
def lseek_end(d):
    p = J(d, "f")
    put(p, b"0123456789")
    fd = fd_open(p, os.O_RDONLY)
    eq(os.lseek(fd, 0, os.SEEK_END), 10, "SEEK_END")
    eq(os.lseek(fd, -3, os.SEEK_END), 7, "SEEK_END -3")
    eq(os.read(fd, 10), b"789", "read")


@case("io")
def lseek_cur(d):
    p = J(d, "f")
    put(p, b"0123456789")
    fd = fd_open(p, os.O_RDONLY)
    os.read(fd, 4)
    eq(os.lseek(fd, 2, os.SEEK_CUR), 6, "SEEK_CUR +2")
    eq(os.lseek(fd, -5, os.SEEK_CUR), 1, "SEEK_CUR -5")
    eq(os.read(fd, 2), b"12", "read")


@case("io")
def lseek_past_eof_write_hole(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    eq(os.lseek(fd, 100, os.SEEK_SET), 100, "lseek past EOF")
    eq(os.fstat(fd).st_size, 0, "size after lseek alone")
    os.write(fd, b"x")
    eq(get(p), bytes(100) + b"x", "data")


@case("io")
def lseek_negative_einval(d):
    fd = fd_open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    raises(errno.EINVAL, os.lseek, fd, -1, os.SEEK_SET)
    raises(errno.EINVAL, os.lseek, fd, -1, os.SEEK_END)


@case("io")
def lseek_bad_whence_einval(d):
    fd = fd_open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    raises(errno.EINVAL, os.lseek, fd, 0, 77)


@case("io")
def write_zero_bytes(d):
    p = J(d, "f")
    put(p, b"abc")
    fd = fd_open(p, os.O_WRONLY)
    eq(os.write(fd, b""), 0, "write of 0 bytes")
    eq(os.pwrite(fd, b"", 100), 0, "pwrite of 0 bytes past EOF")
    eq(os.fstat(fd).st_size, 3, "size")


@case("io")
def one_mib_roundtrip(d):
    p = J(d, "f")
    data = rand_bytes(1 << 20, 7)
    put(p, data)
    eq(os.stat(p).st_size, 1 << 20, "size")
    true(get(p) == data, "1 MiB read back differs")


@case("io")
def three_mib_odd_chunks(d):
    p = J(d, "f")
    data = rand_bytes(3 << 20, 11)
    fd = fd_open(p, os.O_CREAT | os.O_WRONLY, 0o644)
    for i in range(0, len(data), 12345):
        os.write(fd, data[i:i + 12345])
    fd_close(fd)
    fd = fd_open(p, os.O_RDONLY)
    got = []
    while True:
        b = os.read(fd, 7777)
        if not b:
            break
        got.append(b)
    got = b"".join(got)
    eq(len(got), len(data), "size read")
    true(got == data, "3 MiB read back differs")


@case("io")
def overwrite_middle_large(d):
    p = J(d, "f")
    model = bytearray(rand_bytes(1 << 20, 5))
    put(p, bytes(model))
    fd = fd_open(p, os.O_WRONLY)
    patch = rand_bytes(100000, 6)
    os.pwrite(fd, patch, 500000)
    model[500000:600000] = patch
    fd_close(fd)
    eq(os.stat(p).st_size, 1 << 20, "size")
    true(get(p) == bytes(model), "data differs from the model")


@case("io")
def random_ops_model(d):
    r = random.Random(1234)
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    model = bytearray()
    for i in range(150):
        op = r.random()
        if op < 0.8:
            off = r.randrange(0, 300000)
            n = r.randrange(1, 20000)
            b = r.randbytes(n)
            os.pwrite(fd, b, off)
            if len(model) < off + n:
                model.extend(bytes(off + n - len(model)))
            model[off:off + n] = b
        else:
            n = r.randrange(0, 320000)
            os.ftruncate(fd, n)
            if n < len(model):
                del model[n:]
            else:
                model.extend(bytes(n - len(model)))
        if i % 25 == 24:
            eq(os.fstat(fd).st_size, len(model), "size after op %d" % i)
            true(pread_all(fd, len(model) + 1, 0) == bytes(model),
                 "data differs from the model after op %d" % i)
    fd_close(fd)
    true(get(p) == bytes(model), "data differs from the model at the end")


@case("io")
def two_fds_see_writes(d):
    p = J(d, "f")
    touch(p)
    w = fd_open(p, os.O_WRONLY)
    r = fd_open(p, os.O_RDONLY)
    os.write(w, b"first")
    eq(os.read(r, 100), b"first", "read through the other fd")
    os.pwrite(w, b"F", 0)
    eq(os.pread(r, 100, 0), b"First", "overwrite seen")


@case("io")
def persists_after_reopen(d):
    p = J(d, "f")
    data = rand_bytes(70000, 9)
    put(p, data)
    for _ in range(3):
        eq(get(p), data, "data after close and reopen")


@case("io")
def many_small_appends(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
    for i in range(500):
        os.write(fd, b"%07d" % i)
    fd_close(fd)
    eq(get(p), b"".join(b"%07d" % i for i in range(500)), "data")


@case("io")
def writev_readv(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    eq(os.writev(fd, [b"ab", b"", b"cde", b"f" * 5000]), 5005, "writev")
    eq(os.fstat(fd).st_size, 5005, "size")
    a, b = bytearray(3), bytearray(6000)
    eq(os.preadv(fd, [a, b], 1), 5004, "preadv")
    eq(bytes(a), b"bcd", "first buffer")
    eq(bytes(b[:5001]), b"e" + b"f" * 5000, "second buffer")


@case("io")
def concurrent_disjoint_writers(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    chunk = 65536
    errs = []

    def w(t):
        try:
            for i in range(8):
                os.pwrite(fd, bytes([t * 16 + i]) * chunk, (i * 4 + t) * chunk)
        except OSError as e:
            errs.append(e)
    th = [threading.Thread(target=w, args=(t,)) for t in range(4)]
    for t in th:
        t.start()
    for t in th:
        t.join(20)
    eq(errs, [], "errors")
    data = pread_all(fd, 33 * chunk, 0)
    eq(len(data), 32 * chunk, "size")
    for k in range(32):
        i, t = divmod(k, 4)
        true(data[k * chunk:(k + 1) * chunk] == bytes([t * 16 + i]) * chunk,
             "chunk %d wrong" % k)


@case("io")
def read_dir_fd_eisdir(d):
    fd = fd_open(d, os.O_RDONLY | os.O_DIRECTORY)
    raises(errno.EISDIR, os.read, fd, 10)


@case("io")
def fstat_follows_writes(d):
    fd = fd_open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    for n in (1, 4096, 4097, 70000):
        os.pwrite(fd, b"q", n - 1)
        what = "size after a write ending at %d" % n
        eq(os.fstat(fd).st_size, n, "fstat " + what)
        eq(os.stat(J(d, "f")).st_size, n, "stat " + what)


# ================================================================= truncate

@case("truncate")
def truncate_down(d):
    p = J(d, "f")
    put(p, b"abcdefgh")
    os.truncate(p, 3)
    eq(os.stat(p).st_size, 3, "size")
    eq(get(p), b"abc", "data")


@case("truncate")
def truncate_up_zeros(d):
    p = J(d, "f")
    put(p, b"abc")
    os.truncate(p, 10)
    eq(os.stat(p).st_size, 10, "size")
    eq(get(p), b"abc" + bytes(7), "data")


@case("truncate")
def truncate_down_up_zeros(d):
    p = J(d, "f")
    data = rand_bytes(100000, 2)
    put(p, data)
    os.truncate(p, 1000)
    os.truncate(p, 100000)
    got = get(p)
    eq(len(got), 100000, "size")
    eq(got[:1000], data[:1000], "kept part")
    true(got[1000:] == bytes(99000), "re-extended part is not all zeros")


@case("truncate")
def truncate_down_up_in_block(d):
    p = J(d, "f")
    put(p, b"abcdefgh")
    os.truncate(p, 3)
    os.truncate(p, 8)
    eq(get(p), b"abc" + bytes(5), "data")


@case("truncate")
def truncate_down_up_block_edges(d):
    # cut inside the 2nd 64 KiB block, re-extend over 3 blocks
    p = J(d, "f")
    for cut in (65537, 65536, 70000, 4097, 131071):
        put(p, b"\xff" * (4 * 65536))
        os.truncate(p, cut)
        os.truncate(p, 4 * 65536)
        got = get(p)
        true(got[:cut] == b"\xff" * cut, "kept part differs (cut %d)" % cut)
        true(got[cut:] == bytes(4 * 65536 - cut),
             "re-extended part not zero (cut %d)" % cut)


@case("truncate")
def truncate_down_then_write_past(d):
    p = J(d, "f")
    put(p, b"abcdefgh")
    os.truncate(p, 2)
    fd = fd_open(p, os.O_WRONLY)
    os.pwrite(fd, b"Z", 6)
    eq(get(p), b"ab" + bytes(4) + b"Z", "data")


@case("truncate")
def ftruncate_down(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b"0123456789")
    os.ftruncate(fd, 4)
    eq(os.fstat(fd).st_size, 4, "size")
    eq(os.pread(fd, 100, 0), b"0123", "data")


@case("truncate")
def ftruncate_up(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b"01")
    os.ftruncate(fd, 5000)
    eq(os.fstat(fd).st_size, 5000, "size")
    eq(os.pread(fd, 6000, 0), b"01" + bytes(4998), "data")


@case("truncate")
def ftruncate_keeps_offset(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b"0123456789")
    os.ftruncate(fd, 2)
    eq(os.lseek(fd, 0, os.SEEK_CUR), 10, "offset")
    os.write(fd, b"x")
    eq(get(p), b"01" + bytes(8) + b"x", "data")


@case("truncate")
def truncate_to_zero(d):
    p = J(d, "f")
    put(p, rand_bytes(200000, 4))
    os.truncate(p, 0)
    eq(os.stat(p).st_size, 0, "size")
    eq(get(p), b"", "data")


@case("truncate")
def truncate_same_size(d):
    p = J(d, "f")
    put(p, b"abc")
    os.truncate(p, 3)
    eq(get(p), b"abc", "data")


@case("truncate")
def truncate_missing_enoent(d):
    raises(errno.ENOENT, os.truncate, J(d, "nope"), 0)


@case("truncate")
def truncate_dir_eisdir(d):
    os.mkdir(J(d, "s"))
    raises(errno.EISDIR, os.truncate, J(d, "s"), 0)


@case("truncate")
def truncate_negative_einval(d):
    p = J(d, "f")
    put(p, b"abc")
    raises(errno.EINVAL, os.truncate, p, -1)
    fd = fd_open(p, os.O_RDWR)
    raises(errno.EINVAL, os.ftruncate, fd, -1)
    eq(get(p), b"abc", "data")


@case("truncate")
def ftruncate_rdonly_einval(d):
    p = J(d, "f")
    put(p, b"abc")
    fd = fd_open(p, os.O_RDONLY)
    raises(errno.EINVAL, os.ftruncate, fd, 0)
    eq(get(p), b"abc", "data")


@case("truncate")
def truncate_large_sparse(d):
    p = J(d, "f")
    touch(p)
    os.truncate(p, 1 << 30)
    eq(os.stat(p).st_size, 1 << 30, "size")
    fd = fd_open(p, os.O_RDONLY)
    eq(os.pread(fd, 10, 512 << 20), bytes(10), "middle")
    eq(os.pread(fd, 10, (1 << 30) - 4), bytes(4), "end")


@case("truncate")
def truncate_sets_mtime_ctime(d):
    p = J(d, "f")
    put(p, b"abcdef")
    mtime_moves(p, lambda: os.truncate(p, 2))


@case("truncate")
def ftruncate_sets_mtime_ctime(d):
    p = J(d, "f")
    put(p, b"abcdef")
    fd = fd_open(p, os.O_RDWR)
    mtime_moves(p, lambda: os.ftruncate(fd, 100))


@case("truncate")
def truncate_seen_by_other_fd(d):
    p = J(d, "f")
    put(p, b"0123456789")
    fd = fd_open(p, os.O_RDONLY)
    os.truncate(p, 4)
    eq(os.fstat(fd).st_size, 4, "fstat size")
    eq(os.pread(fd, 100, 0), b"0123", "data")


@case("truncate")
def o_trunc_then_extend_zeros(d):
    p = J(d, "f")
    put(p, b"\xaa" * 5000)
    fd = fd_open(p, os.O_RDWR | os.O_TRUNC)
    os.ftruncate(fd, 5000)
    eq(os.pread(fd, 6000, 0), bytes(5000), "data")


# ===================================================================== sync

@case("sync")
def fsync_file(d):
    fd = fd_open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b"durable")
    os.fsync(fd)
    eq(os.pread(fd, 100, 0), b"durable", "data after fsync")


@case("sync")
def fdatasync_file(d):
    fd = fd_open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, rand_bytes(100000, 8))
    os.fdatasync(fd)
    eq(os.fstat(fd).st_size, 100000, "size after fdatasync")


@case("sync")
def fsync_dir(d):
    touch(J(d, "f"))
    fd = fd_open(d, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(fd)
    eq(os.listdir(d), ["f"], "entries after the directory's fsync")


@case("sync")
def fsync_rdonly_fd(d):
    p = J(d, "f")
    put(p, b"abc")
    fd = fd_open(p, os.O_RDONLY)
    os.fsync(fd)
    os.fdatasync(fd)


@case("sync")
def fsync_closed_ebadf(d):
    fd = os.open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    os.close(fd)
    raises(errno.EBADF, os.fsync, fd)


@case("sync")
def fsync_then_reopen(d):
    p = J(d, "f")
    data = rand_bytes(300000, 12)
    fd = fd_open(p, os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    fd_close(fd)
    eq(get(p), data, "data")
    eq(os.stat(p).st_size, len(data), "size")


@case("sync")
def sync_all(d):
    p = J(d, "f")
    put(p, b"synced")
    os.sync()
    eq(get(p), b"synced", "data after sync()")


@case("sync")
def fsync_after_truncate(d):
    p = J(d, "f")
    put(p, b"x" * 10000)
    fd = fd_open(p, os.O_RDWR)
    os.ftruncate(fd, 10)
    os.fsync(fd)
    eq(os.stat(p).st_size, 10, "size")


# ====================================================================== dir

@case("dir")
def mkdir_basic(d):
    p = J(d, "s")
    os.mkdir(p, 0o755)
    s = os.stat(p)
    true(stat.S_ISDIR(s.st_mode), "not a directory")
    eq(stat.S_IMODE(s.st_mode), 0o755, "mode")
    eq(s.st_nlink, 2, "nlink")
    eq(os.listdir(p), [], "entries")


@case("dir")
def mkdir_mode_bits(d):
    for i, m in enumerate((0o700, 0o777, 0o1777, 0o555, 0o000)):
        p = J(d, "s%d" % i)
        os.mkdir(p, m)
        eq(perm_bits(p), m, "mode of a directory made with %o" % m)


@case("dir")
def mkdir_existing_eexist(d):
    os.mkdir(J(d, "s"))
    raises(errno.EEXIST, os.mkdir, J(d, "s"))


@case("dir")
def mkdir_over_file_eexist(d):
    touch(J(d, "f"))
    raises(errno.EEXIST, os.mkdir, J(d, "f"))


@case("dir")
def mkdir_over_symlink_eexist(d):
    os.symlink("nowhere", J(d, "l"))
    raises(errno.EEXIST, os.mkdir, J(d, "l"))


@case("dir")
def mkdir_missing_parent_enoent(d):
    raises(errno.ENOENT, os.mkdir, J(d, "no", "s"))


@case("dir")
def mkdir_under_file_enotdir(d):
    touch(J(d, "f"))
    raises(errno.ENOTDIR, os.mkdir, J(d, "f", "s"))


@case("dir")
def mkdir_trailing_slash(d):
    os.mkdir(J(d, "s") + "/")
    true(os.path.isdir(J(d, "s")), "not made")


@case("dir")
def mkdir_deep(d):
    p = d
    for i in range(25):
        p = J(p, "d%d" % i)
        os.mkdir(p)
    put(J(p, "leaf"), b"deep")
    eq(get(J(p, "leaf")), b"deep", "leaf data")
    eq(os.stat(J(p, "..")).st_ino, os.stat(os.path.dirname(p)).st_ino,
       "..")


@case("dir")
def mkdir_parent_nlink(d):
    n0 = os.stat(d).st_nlink
    os.mkdir(J(d, "s"))
    eq(os.stat(d).st_nlink, n0 + 1, "parent nlink after mkdir")
    touch(J(d, "f"))
    eq(os.stat(d).st_nlink, n0 + 1, "parent nlink after a file")
    os.rmdir(J(d, "s"))
    eq(os.stat(d).st_nlink, n0, "parent nlink after rmdir")


@case("dir")
def rmdir_empty(d):
    os.mkdir(J(d, "s"))
    os.rmdir(J(d, "s"))
    eq(os.listdir(d), [], "entries")
    raises(errno.ENOENT, os.stat, J(d, "s"))


@case("dir")
def rmdir_nonempty_file_enotempty(d):
    os.mkdir(J(d, "s"))
    touch(J(d, "s", "f"))
    raises(errno.ENOTEMPTY, os.rmdir, J(d, "s"))
    eq(os.listdir(J(d, "s")), ["f"], "entries kept")


@case("dir")
def rmdir_nonempty_subdir_enotempty(d):
    os.makedirs(J(d, "s", "t"))
    raises(errno.ENOTEMPTY, os.rmdir, J(d, "s"))


@case("dir")
def rmdir_after_emptied(d):
    os.mkdir(J(d, "s"))
    for i in range(10):
        touch(J(d, "s", "f%d" % i))
    for i in range(10):
        os.unlink(J(d, "s", "f%d" % i))
    os.rmdir(J(d, "s"))
    eq(os.listdir(d), [], "entries")


@case("dir")
def rmdir_file_enotdir(d):
    touch(J(d, "f"))
    raises(errno.ENOTDIR, os.rmdir, J(d, "f"))


@case("dir")
def rmdir_missing_enoent(d):
    raises(errno.ENOENT, os.rmdir, J(d, "nope"))


@case("dir")
def rmdir_dot_einval(d):
    os.mkdir(J(d, "s"))
    raises(errno.EINVAL, os.rmdir, J(d, "s", "."))


@case("dir")
def rmdir_dotdot_enotempty(d):
    os.makedirs(J(d, "s", "t"))
    raises(errno.ENOTEMPTY, os.rmdir, J(d, "s", "t", ".."))


@case("dir")
def rmdir_symlink_to_dir_enotdir(d):
    os.mkdir(J(d, "s"))
    os.symlink("s", J(d, "l"))
    raises(errno.ENOTDIR, os.rmdir, J(d, "l"))


@case("dir")
def unlink_file(d):
    touch(J(d, "f"))
    os.unlink(J(d, "f"))
    eq(os.listdir(d), [], "entries")
    raises(errno.ENOENT, os.stat, J(d, "f"))


@case("dir")
def unlink_dir_eisdir(d):
    os.mkdir(J(d, "s"))
    raises(errno.EISDIR, os.unlink, J(d, "s"))


@case("dir")
def unlink_missing_enoent(d):
    raises(errno.ENOENT, os.unlink, J(d, "nope"))


@case("dir")
def unlink_trailing_slash_enotdir(d):
    touch(J(d, "f"))
    raises(errno.ENOTDIR, os.unlink, J(d, "f") + "/")


@case("dir")
def unlink_keeps_others(d):
    for n in "abc":
        put(J(d, n), n)
    os.unlink(J(d, "b"))
    eq(sorted(os.listdir(d)), ["a", "c"], "entries")
    eq(get(J(d, "a")) + get(J(d, "c")), b"ac", "others' data")


@case("dir")
def unlink_recreate_fresh(d):
    p = J(d, "f")
    put(p, b"old data")
    os.unlink(p)
    touch(p)
    eq(get(p), b"", "a new file of the same name is empty")
    eq(os.stat(p).st_nlink, 1, "nlink")


@case("dir")
def rmdir_recreate_as_file(d):
    os.mkdir(J(d, "x"))
    os.rmdir(J(d, "x"))
    put(J(d, "x"), b"now a file")
    true(stat.S_ISREG(os.stat(J(d, "x")).st_mode), "not a regular file")


# =================================================================== rename

@case("rename")
def file_basic(d):
    put(J(d, "a"), b"A")
    os.rename(J(d, "a"), J(d, "b"))
    eq(os.listdir(d), ["b"], "entries")
    eq(get(J(d, "b")), b"A", "data")


@case("rename")
def file_over_file(d):
    put(J(d, "a"), b"new")
    put(J(d, "b"), b"old contents")
    ino = os.stat(J(d, "a")).st_ino
    os.rename(J(d, "a"), J(d, "b"))
    eq(os.listdir(d), ["b"], "entries")
    eq(get(J(d, "b")), b"new", "data")
    eq(os.stat(J(d, "b")).st_ino, ino, "ino of the target is the source's")


@case("rename")
def file_over_hardlinked_target(d):
    put(J(d, "a"), b"A")
    put(J(d, "b"), b"B")
    os.link(J(d, "b"), J(d, "c"))
    os.rename(J(d, "a"), J(d, "b"))
    eq(os.stat(J(d, "c")).st_nlink, 1, "nlink of the replaced inode")
    eq(get(J(d, "c")), b"B", "the replaced inode's data")
    eq(get(J(d, "b")), b"A", "the new target's data")


@case("rename")
def dir_basic(d):
    os.mkdir(J(d, "s"))
    put(J(d, "s", "f"), b"in")
    os.rename(J(d, "s"), J(d, "t"))
    eq(os.listdir(d), ["t"], "entries")
    eq(get(J(d, "t", "f")), b"in", "content moved")


@case("rename")
def dir_over_empty_dir(d):
    os.mkdir(J(d, "s"))
    put(J(d, "s", "f"), b"in")
    os.mkdir(J(d, "t"))
    n0 = os.stat(d).st_nlink
    os.rename(J(d, "s"), J(d, "t"))
    eq(os.listdir(d), ["t"], "entries")
    eq(os.listdir(J(d, "t")), ["f"], "moved content")
    eq(os.stat(d).st_nlink, n0 - 1, "parent nlink")


@case("rename")
def dir_over_nonempty_dir_enotempty(d):
    os.mkdir(J(d, "s"))
    os.mkdir(J(d, "t"))
    touch(J(d, "t", "f"))
    raises(errno.ENOTEMPTY, os.rename, J(d, "s"), J(d, "t"))
    eq(sorted(os.listdir(d)), ["s", "t"], "entries")
    eq(os.listdir(J(d, "t")), ["f"], "target content")


@case("rename")
def file_over_dir_eisdir(d):
    touch(J(d, "f"))
    os.mkdir(J(d, "s"))
    raises(errno.EISDIR, os.rename, J(d, "f"), J(d, "s"))
    eq(sorted(os.listdir(d)), ["f", "s"], "entries")


@case("rename")
def dir_over_file_enotdir(d):
    touch(J(d, "f"))
    os.mkdir(J(d, "s"))
    raises(errno.ENOTDIR, os.rename, J(d, "s"), J(d, "f"))
    true(os.path.isfile(J(d, "f")), "target kept")


@case("rename")
def dir_into_own_subtree_einval(d):
    os.makedirs(J(d, "a", "b", "c"))
    raises(errno.EINVAL, os.rename, J(d, "a"), J(d, "a", "x"))
    raises(errno.EINVAL, os.rename, J(d, "a"), J(d, "a", "b", "c", "x"))
    raises(errno.EINVAL, os.rename, J(d, "a", "b"), J(d, "a", "b", "c", "b"))
    eq(os.listdir(d), ["a"], "entries")


@case("rename")
def dir_over_own_parent_enotempty(d):
    os.makedirs(J(d, "a", "b"))
    raises(errno.ENOTEMPTY, os.rename, J(d, "a", "b"), J(d, "a"))


@case("rename")
def same_name(d):
    put(J(d, "a"), b"A")
    os.rename(J(d, "a"), J(d, "a"))
    eq(os.listdir(d), ["a"], "entries")
    eq(get(J(d, "a")), b"A", "data")
    os.mkdir(J(d, "s"))
    os.rename(J(d, "s"), J(d, "s"))
    true(os.path.isdir(J(d, "s")), "dir kept")


@case("rename")
def hardlinks_same_inode_noop(d):
    put(J(d, "a"), b"A")
    os.link(J(d, "a"), J(d, "b"))
    os.rename(J(d, "a"), J(d, "b"))
    eq(sorted(os.listdir(d)), ["a", "b"], "both names kept")
    eq(os.stat(J(d, "a")).st_nlink, 2, "nlink")


@case("rename")
def across_dirs_file(d):
    os.mkdir(J(d, "x"))
    os.mkdir(J(d, "y"))
    put(J(d, "x", "f"), b"moved")
    ino = os.stat(J(d, "x", "f")).st_ino
    os.rename(J(d, "x", "f"), J(d, "y", "g"))
    eq(os.listdir(J(d, "x")), [], "source dir")
    eq(os.listdir(J(d, "y")), ["g"], "target dir")
    eq(get(J(d, "y", "g")), b"moved", "data")
    eq(os.stat(J(d, "y", "g")).st_ino, ino, "ino")


@case("rename")
def across_dirs_over_file(d):
    os.mkdir(J(d, "x"))
    os.mkdir(J(d, "y"))
    put(J(d, "x", "f"), b"new")
    put(J(d, "y", "f"), b"old")
    os.rename(J(d, "x", "f"), J(d, "y", "f"))
    eq(os.listdir(J(d, "x")), [], "source dir")
    eq(get(J(d, "y", "f")), b"new", "data")


@case("rename")
def across_dirs_dir_nlink(d):
    os.mkdir(J(d, "x"))
    os.mkdir(J(d, "y"))
    os.mkdir(J(d, "x", "sub"))
    nx, ny = os.stat(J(d, "x")).st_nlink, os.stat(J(d, "y")).st_nlink
    os.rename(J(d, "x", "sub"), J(d, "y", "sub"))
    eq(os.stat(J(d, "x")).st_nlink, nx - 1, "old parent nlink")
    eq(os.stat(J(d, "y")).st_nlink, ny + 1, "new parent nlink")
    eq(os.stat(J(d, "y", "sub", "..")).st_ino, os.stat(J(d, "y")).st_ino,
       "ino of .. in the moved dir")


@case("rename")
def missing_source_enoent(d):
    raises(errno.ENOENT, os.rename, J(d, "nope"), J(d, "x"))
    eq(os.listdir(d), [], "entries")


@case("rename")
def missing_target_dir_enoent(d):
    touch(J(d, "f"))
    raises(errno.ENOENT, os.rename, J(d, "f"), J(d, "no", "f"))
    eq(os.listdir(d), ["f"], "entries")


@case("rename")
def target_name_too_long(d):
    touch(J(d, "f"))
    raises(errno.ENAMETOOLONG, os.rename, J(d, "f"), J(d, "n" * 256))
    os.rename(J(d, "f"), J(d, "n" * 255))
    eq(os.listdir(d), ["n" * 255], "entries")


@case("rename")
def file_trailing_slash_enotdir(d):
    touch(J(d, "f"))
    raises(errno.ENOTDIR, os.rename, J(d, "f"), J(d, "g") + "/")
    raises(errno.ENOTDIR, os.rename, J(d, "f") + "/", J(d, "g"))


@case("rename")
def dir_trailing_slash(d):
    os.mkdir(J(d, "s"))
    os.rename(J(d, "s") + "/", J(d, "t") + "/")
    eq(os.listdir(d), ["t"], "entries")


@case("rename")
def dot_source_ebusy(d):
    os.mkdir(J(d, "s"))
    raises(errno.EBUSY, os.rename, J(d, "s", "."), J(d, "t"))


@case("rename")
def symlink_moves_link(d):
    put(J(d, "t"), b"T")
    os.symlink("t", J(d, "l"))
    os.rename(J(d, "l"), J(d, "m"))
    eq(os.readlink(J(d, "m")), "t", "link target")
    eq(get(J(d, "m")), b"T", "through the link")
    eq(sorted(os.listdir(d)), ["m", "t"], "entries")


@case("rename")
def chain(d):
    put(J(d, "n0"), b"chain")
    for i in range(20):
        os.rename(J(d, "n%d" % i), J(d, "n%d" % (i + 1)))
    eq(os.listdir(d), ["n20"], "entries")
    eq(get(J(d, "n20")), b"chain", "data")


@case("rename")
def swap_via_temp(d):
    put(J(d, "a"), b"A")
    put(J(d, "b"), b"B")
    os.rename(J(d, "a"), J(d, "t"))
    os.rename(J(d, "b"), J(d, "a"))
    os.rename(J(d, "t"), J(d, "b"))
    eq((get(J(d, "a")), get(J(d, "b"))), (b"B", b"A"), "swapped data")


@case("rename")
def sets_dir_mtimes(d):
    os.mkdir(J(d, "x"))
    os.mkdir(J(d, "y"))
    touch(J(d, "x", "f"))
    set_old(J(d, "x"))
    set_old(J(d, "y"))
    t0 = time.time_ns()
    os.rename(J(d, "x", "f"), J(d, "y", "f"))
    t1 = time.time_ns()
    near_now(os.stat(J(d, "x")).st_mtime_ns, t0, t1, "source dir mtime")
    near_now(os.stat(J(d, "y")).st_mtime_ns, t0, t1, "target dir mtime")
    near_now(os.stat(J(d, "x")).st_ctime_ns, t0, t1, "source dir ctime")


@case("rename")
def sets_file_ctime(d):
    touch(J(d, "a"))
    s0 = os.stat(J(d, "a"))
    tick()
    os.rename(J(d, "a"), J(d, "b"))
    s1 = os.stat(J(d, "b"))
    true(s1.st_ctime_ns > s0.st_ctime_ns, "ctime of the renamed file "
         "not changed (%d -> %d)" % (s0.st_ctime_ns, s1.st_ctime_ns))
    eq(s1.st_mtime_ns, s0.st_mtime_ns, "mtime of the renamed file")


@case("rename")
def atomic_replace_visible(d):
    # a reader looking up the target never finds it missing while it is
    # replaced again and again; it always sees one of the versions
    p = J(d, "target")
    put(p, b"v0")
    stop, misses, seen = [], [], set()

    def reader():
        while not stop:
            try:
                seen.add(os.stat(p).st_size)
            except FileNotFoundError:
                misses.append(1)
    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(1, 101):
            tmp = J(d, "tmp%d" % i)
            put(tmp, b"v%d" % i)
            os.rename(tmp, p)
    finally:
        stop.append(1)
        t.join(10)
    eq(len(misses), 0, "lookups that found no target")
    true(seen <= {2, 3, 4}, "sizes seen %r" % sorted(seen))
    eq(get(p), b"v100", "final data")
    eq(os.listdir(d), ["target"], "entries")


@case("rename")
def readdir_after(d):
    for n in ("a", "b", "c"):
        touch(J(d, n))
    os.rename(J(d, "b"), J(d, "z"))
    eq(sorted(os.listdir(d)), ["a", "c", "z"], "entries")
    os.rename(J(d, "a"), J(d, "c"))
    eq(sorted(os.listdir(d)), ["c", "z"], "entries after a replace")


# ================================================================ renameat2

@case("renameat2")
def noreplace_existing_eexist(d):
    put(J(d, "a"), b"A")
    put(J(d, "b"), b"B")
    raises(errno.EEXIST, renameat2, J(d, "a"), J(d, "b"), RENAME_NOREPLACE)
    eq((get(J(d, "a")), get(J(d, "b"))), (b"A", b"B"), "data")


@case("renameat2")
def noreplace_new(d):
    put(J(d, "a"), b"A")
    renameat2(J(d, "a"), J(d, "b"), RENAME_NOREPLACE)
    eq(os.listdir(d), ["b"], "entries")


@case("renameat2")
def exchange_files(d):
    put(J(d, "a"), b"A")
    put(J(d, "b"), b"BB")
    ia, ib = os.stat(J(d, "a")).st_ino, os.stat(J(d, "b")).st_ino
    renameat2(J(d, "a"), J(d, "b"), RENAME_EXCHANGE)
    eq((get(J(d, "a")), get(J(d, "b"))), (b"BB", b"A"), "data")
    eq((os.stat(J(d, "a")).st_ino, os.stat(J(d, "b")).st_ino), (ib, ia),
       "inos")


@case("renameat2")
def exchange_file_and_dir(d):
    put(J(d, "a"), b"A")
    os.mkdir(J(d, "s"))
    touch(J(d, "s", "in"))
    renameat2(J(d, "a"), J(d, "s"), RENAME_EXCHANGE)
    true(os.path.isdir(J(d, "a")), "a is now the directory")
    eq(os.listdir(J(d, "a")), ["in"], "its content")
    eq(get(J(d, "s")), b"A", "s is now the file")


@case("renameat2")
def exchange_missing_enoent(d):
    put(J(d, "a"), b"A")
    raises(errno.ENOENT, renameat2, J(d, "a"), J(d, "b"), RENAME_EXCHANGE)
    eq(os.listdir(d), ["a"], "entries")


# ================================================================== readdir

@case("readdir")
def empty(d):
    eq(os.listdir(d), [], "entries")
    eq(list(os.scandir(d)), [], "scandir")


@case("readdir")
def one_entry(d):
    touch(J(d, "only"))
    eq(os.listdir(d), ["only"], "entries")


@case("readdir")
def thousand_entries(d):
    names = {"file-%04d-%s" % (i, "x" * (i % 40)) for i in range(1000)}
    for n in names:
        touch(J(d, n))
    got = os.listdir(d)
    eq(len(got), 1000, "entry count")
    eq(set(got), names, "entries")


@case("readdir")
def create_unlink_half(d):
    names = ["e%03d" % i for i in range(300)]
    for n in names:
        touch(J(d, n))
    for n in names[::2]:
        os.unlink(J(d, n))
    eq(sorted(os.listdir(d)), names[1::2], "entries after unlinking half")
    for n in names[::4]:
        touch(J(d, n))
    eq(sorted(os.listdir(d)), sorted(names[1::2] + names[::4]),
       "entries after creating some again")


@case("readdir")
def after_create_and_unlink(d):
    for n in "abc":
        touch(J(d, n))
    eq(sorted(os.listdir(d)), ["a", "b", "c"], "after create")
    os.unlink(J(d, "b"))
    eq(sorted(os.listdir(d)), ["a", "c"], "after unlink")
    os.mkdir(J(d, "b"))
    eq(sorted(os.listdir(d)), ["a", "b", "c"], "after mkdir")
    os.rmdir(J(d, "b"))
    eq(sorted(os.listdir(d)), ["a", "c"], "after rmdir")


@case("readdir")
def scandir_types(d):
    touch(J(d, "f"))
    os.mkdir(J(d, "s"))
    os.symlink("f", J(d, "l"))
    os.symlink("nowhere", J(d, "dangling"))
    got = {}
    for e in os.scandir(d):
        got[e.name] = (e.is_file(follow_symlinks=False),
                       e.is_dir(follow_symlinks=False), e.is_symlink())
    eq(got, {"f": (True, False, False), "s": (False, True, False),
             "l": (False, False, True), "dangling": (False, False, True)},
       "types (file, dir, symlink)")


@case("readdir")
def scandir_ino_matches_lstat(d):
    touch(J(d, "f"))
    os.mkdir(J(d, "s"))
    os.symlink("f", J(d, "l"))
    for e in os.scandir(d):
        eq(e.inode(), os.lstat(e.path).st_ino, "d_ino of %s" % e.name)


@case("readdir")
def long_names(d):
    names = {c * 255 for c in "abcdef"} | {"m" * n for n in (100, 200, 254)}
    for n in names:
        touch(J(d, n))
    eq(set(os.listdir(d)), names, "entries")


@case("readdir")
def odd_names(d):
    names = {"a b", "ü-ñ-日本", "x\ny", "-", "...", ".hidden", "a:b", "%s",
             "back\\slash", "q\"uote", "tab\tc", "*", "$HOME", "\x01ctl",
             "é" * 127}
    for n in names:
        touch(J(d, n))
    eq(set(os.listdir(d)), names, "entries")
    for n in names:
        true(os.path.isfile(J(d, n)), "lookup of %r" % n)


@case("readdir")
def bytes_names(d):
    names = {b"\xff\xfe", b"latin1-\xe9", b"ok"}
    for n in names:
        touch(os.path.join(os.fsencode(d), n))
    eq(set(os.listdir(os.fsencode(d))), names, "entries (bytes)")


@case("readdir")
def not_recursive(d):
    os.makedirs(J(d, "s", "t"))
    touch(J(d, "s", "f"))
    touch(J(d, "top"))
    eq(sorted(os.listdir(d)), ["s", "top"], "entries")
    eq(sorted(os.listdir(J(d, "s"))), ["f", "t"], "sub entries")


@case("readdir")
def by_fd(d):
    touch(J(d, "f"))
    fd = fd_open(d, os.O_RDONLY | os.O_DIRECTORY)
    eq(os.listdir(fd), ["f"], "listdir(fd)")
    touch(J(d, "g"))
    eq(sorted(os.listdir(fd)), ["f", "g"], "listdir(fd) again")


@case("readdir")
def file_enotdir(d):
    touch(J(d, "f"))
    raises(errno.ENOTDIR, os.listdir, J(d, "f"))


@case("readdir")
def missing_enoent(d):
    raises(errno.ENOENT, os.listdir, J(d, "nope"))


@case("readdir")
def twice_same(d):
    for i in range(50):
        touch(J(d, "n%d" % i))
    a = os.listdir(d)
    b = os.listdir(d)
    eq(sorted(a), sorted(b), "two listings")
    eq(len(a), len(set(a)), "no duplicate names")


@case("readdir")
def removed_dir_empty_listing(d):
    os.mkdir(J(d, "s"))
    fd = fd_open(J(d, "s"), os.O_RDONLY | os.O_DIRECTORY)
    os.rmdir(J(d, "s"))
    eq(os.listdir(fd), [], "listing of a removed directory")


# ===================================================================== stat

@case("stat")
def size_after_write(d):
    p = J(d, "f")
    put(p, b"x" * 12345)
    eq(os.stat(p).st_size, 12345, "size")


@case("stat")
def type_reg(d):
    touch(J(d, "f"))
    m = os.stat(J(d, "f")).st_mode
    true(stat.S_ISREG(m), "S_ISREG of %o" % m)
    eq(stat.S_IFMT(m), stat.S_IFREG, "type bits")


@case("stat")
def type_dir(d):
    os.mkdir(J(d, "s"))
    eq(stat.S_IFMT(os.stat(J(d, "s")).st_mode), stat.S_IFDIR, "type bits")


@case("stat")
def type_lnk(d):
    touch(J(d, "f"))
    os.symlink("f", J(d, "l"))
    eq(stat.S_IFMT(os.lstat(J(d, "l")).st_mode), stat.S_IFLNK, "lstat type")
    eq(stat.S_IFMT(os.stat(J(d, "l")).st_mode), stat.S_IFREG, "stat type")


@case("stat")
def nlink_file(d):
    touch(J(d, "f"))
    eq(os.stat(J(d, "f")).st_nlink, 1, "nlink")


@case("stat")
def nlink_new_dir(d):
    os.mkdir(J(d, "s"))
    eq(os.stat(J(d, "s")).st_nlink, 2, "nlink")


@case("stat")
def nlink_dir_subdirs(d):
    s = J(d, "s")
    os.mkdir(s)
    for i in range(3):
        os.mkdir(J(s, "d%d" % i))
    touch(J(s, "f"))
    os.symlink("f", J(s, "l"))
    eq(os.stat(s).st_nlink, 5, "nlink with 3 subdirectories")
    os.rmdir(J(s, "d1"))
    eq(os.stat(s).st_nlink, 4, "nlink after an rmdir")
    os.rename(J(s, "d0"), J(d, "out"))
    eq(os.stat(s).st_nlink, 3, "nlink after a subdirectory moved out")


@case("stat")
def ino_stable_rename_file(d):
    touch(J(d, "a"))
    i0 = os.stat(J(d, "a")).st_ino
    os.rename(J(d, "a"), J(d, "b"))
    eq(os.stat(J(d, "b")).st_ino, i0, "ino after rename")
    os.mkdir(J(d, "s"))
    os.rename(J(d, "b"), J(d, "s", "c"))
    eq(os.stat(J(d, "s", "c")).st_ino, i0, "ino after a move")


@case("stat")
def ino_stable_rename_dir(d):
    os.mkdir(J(d, "a"))
    touch(J(d, "a", "f"))
    i0, i1 = os.stat(J(d, "a")).st_ino, os.stat(J(d, "a", "f")).st_ino
    os.rename(J(d, "a"), J(d, "b"))
    eq(os.stat(J(d, "b")).st_ino, i0, "dir ino after rename")
    eq(os.stat(J(d, "b", "f")).st_ino, i1, "child ino after rename")


@case("stat")
def ino_distinct(d):
    inos = set()
    for i in range(10):
        touch(J(d, "f%d" % i))
        os.mkdir(J(d, "s%d" % i))
        inos.add(os.stat(J(d, "f%d" % i)).st_ino)
        inos.add(os.stat(J(d, "s%d" % i)).st_ino)
    inos.add(os.stat(d).st_ino)
    eq(len(inos), 21, "distinct inos")


@case("stat")
def ino_fstat_equals_stat(d):
    fd = fd_open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    a, b = os.fstat(fd), os.stat(J(d, "f"))
    eq((a.st_ino, a.st_dev, a.st_mode, a.st_nlink),
       (b.st_ino, b.st_dev, b.st_mode, b.st_nlink), "fstat vs stat")


@case("stat")
def dev_same_in_tree(d):
    touch(J(d, "f"))
    os.mkdir(J(d, "s"))
    eq(os.stat(J(d, "f")).st_dev, os.stat(d).st_dev, "st_dev of a file")
    eq(os.stat(J(d, "s")).st_dev, os.stat(d).st_dev, "st_dev of a dir")


@case("stat")
def blksize_positive(d):
    touch(J(d, "f"))
    true(os.stat(J(d, "f")).st_blksize > 0, "st_blksize")


@case("stat")
def owner_of_creator(d):
    touch(J(d, "f"))
    os.mkdir(J(d, "s"))
    os.symlink("f", J(d, "l"))
    for n in ("f", "s", "l"):
        s = os.lstat(J(d, n))
        eq((s.st_uid, s.st_gid), (os.geteuid(), os.getegid()),
           "uid, gid of " + n)


@case("stat")
def times_now_at_create(d):
    t0 = time.time_ns()
    touch(J(d, "f"))
    os.mkdir(J(d, "s"))
    t1 = time.time_ns()
    for n in ("f", "s"):
        s = os.stat(J(d, n))
        near_now(s.st_mtime_ns, t0, t1, n + " mtime")
        near_now(s.st_ctime_ns, t0, t1, n + " ctime")
        near_now(s.st_atime_ns, t0, t1, n + " atime")


@case("stat")
def mtime_ctime_on_write(d):
    p = J(d, "f")
    touch(p)
    fd = fd_open(p, os.O_WRONLY)
    mtime_moves(p, lambda: os.write(fd, b"data"))


@case("stat")
def mtime_ctime_on_pwrite_inside(d):
    p = J(d, "f")
    put(p, b"x" * 10000)
    fd = fd_open(p, os.O_WRONLY)
    mtime_moves(p, lambda: os.pwrite(fd, b"y", 5000))


@case("stat")
def mtime_unchanged_by_read(d):
    p = J(d, "f")
    put(p, b"abc")
    set_old(p)
    get(p)
    eq(os.stat(p).st_mtime_ns, OLD_NS, "mtime after a read")


@case("stat")
def ctime_on_chmod_not_mtime(d):
    p = J(d, "f")
    touch(p)
    set_old(p)
    ctime_moves(p, lambda: os.chmod(p, 0o600))
    eq(os.stat(p).st_mtime_ns, OLD_NS, "mtime after chmod")


@case("stat")
def dir_times_on_create(d):
    set_old(d)
    mtime_moves(d, lambda: touch(J(d, "f")))


@case("stat")
def dir_times_on_unlink(d):
    touch(J(d, "f"))
    mtime_moves(d, lambda: os.unlink(J(d, "f")))


@case("stat")
def dir_times_on_mkdir(d):
    mtime_moves(d, lambda: os.mkdir(J(d, "s")))


@case("stat")
def dir_times_on_rmdir(d):
    os.mkdir(J(d, "s"))
    mtime_moves(d, lambda: os.rmdir(J(d, "s")))


@case("stat")
def dir_times_on_rename_within(d):
    touch(J(d, "a"))
    mtime_moves(d, lambda: os.rename(J(d, "a"), J(d, "b")))


@case("stat")
def dir_times_on_symlink(d):
    mtime_moves(d, lambda: os.symlink("x", J(d, "l")))


@case("stat")
def stat_missing_enoent(d):
    raises(errno.ENOENT, os.stat, J(d, "nope"))
    raises(errno.ENOENT, os.lstat, J(d, "nope"))


# ==================================================================== chmod

@case("chmod")
def chmod_file_bits(d):
    p = J(d, "f")
    touch(p)
    for m in (0o640, 0o400, 0o777, 0o000, 0o123, 0o644):
        os.chmod(p, m)
        eq(perm_bits(p), m, "mode after chmod %o" % m)


@case("chmod", root=True)
def chmod_special_bits(d):
    p = J(d, "f")
    touch(p)
    for m in (0o4755, 0o2755, 0o1755, 0o7777, 0o0755):
        os.chmod(p, m)
        eq(perm_bits(p), m, "mode after chmod %o" % m)


@case("chmod")
def fchmod(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.fchmod(fd, 0o600)
    eq(perm_bits(p), 0o600, "mode")
    eq(stat.S_IMODE(os.fstat(fd).st_mode), 0o600, "fstat mode")


@case("chmod")
def chmod_dir(d):
    os.mkdir(J(d, "s"))
    os.chmod(J(d, "s"), 0o1750)
    eq(perm_bits(J(d, "s")), 0o1750, "mode")
    true(stat.S_ISDIR(os.stat(J(d, "s")).st_mode), "still a directory")


@case("chmod")
def chmod_follows_symlink(d):
    touch(J(d, "f"))
    os.symlink("f", J(d, "l"))
    lmode = os.lstat(J(d, "l")).st_mode
    os.chmod(J(d, "l"), 0o604)
    eq(perm_bits(J(d, "f")), 0o604, "target mode")
    eq(os.lstat(J(d, "l")).st_mode, lmode, "link mode")


@case("chmod")
def chmod_missing_enoent(d):
    raises(errno.ENOENT, os.chmod, J(d, "nope"), 0o644)


@case("chmod")
def chmod_keeps_type_and_data(d):
    p = J(d, "f")
    put(p, b"data")
    os.chmod(p, 0o000)
    eq(stat.S_IFMT(os.stat(p).st_mode), stat.S_IFREG, "type")
    os.chmod(p, 0o644)
    eq(get(p), b"data", "data")


@case("chmod", root=True)
def root_reads_mode_000(d):
    p = J(d, "f")
    put(p, b"secret")
    os.chmod(p, 0o000)
    eq(get(p), b"secret", "root reads a 000 file")


@case("chmod")
def chmod_on_fd_of_dir(d):
    fd = fd_open(d, os.O_RDONLY | os.O_DIRECTORY)
    os.fchmod(fd, 0o711)
    eq(perm_bits(d), 0o711, "mode")
    os.fchmod(fd, 0o755)


# ==================================================================== chown

@case("chown")
def chown_uid_gid(d):
    p = J(d, "f")
    touch(p)
    os.chown(p, 1234, 5678)
    s = os.stat(p)
    eq((s.st_uid, s.st_gid), (1234, 5678), "uid, gid")


@case("chown")
def chown_minus_one_keeps(d):
    p = J(d, "f")
    touch(p)
    os.chown(p, 1001, 2001)
    os.chown(p, -1, 2002)
    eq((os.stat(p).st_uid, os.stat(p).st_gid), (1001, 2002), "after gid only")
    os.chown(p, 1003, -1)
    eq((os.stat(p).st_uid, os.stat(p).st_gid), (1003, 2002), "after uid only")
    os.chown(p, -1, -1)
    eq((os.stat(p).st_uid, os.stat(p).st_gid), (1003, 2002), "after -1, -1")


@case("chown")
def fchown(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.fchown(fd, 42, 43)
    eq((os.fstat(fd).st_uid, os.fstat(fd).st_gid), (42, 43), "uid, gid")


@case("chown")
def lchown_symlink(d):
    touch(J(d, "f"))
    os.symlink("f", J(d, "l"))
    os.lchown(J(d, "l"), 77, 88)
    s = os.lstat(J(d, "l"))
    eq((s.st_uid, s.st_gid), (77, 88), "link uid, gid")
    s = os.stat(J(d, "f"))
    eq((s.st_uid, s.st_gid), (os.geteuid(), os.getegid()), "target unchanged")


@case("chown")
def chown_follows_symlink(d):
    touch(J(d, "f"))
    os.symlink("f", J(d, "l"))
    os.chown(J(d, "l"), 99, 98)
    eq((os.stat(J(d, "f")).st_uid, os.stat(J(d, "f")).st_gid), (99, 98),
       "target uid, gid")
    eq(os.lstat(J(d, "l")).st_uid, os.geteuid(), "link uid")


@case("chown")
def chown_dir(d):
    os.mkdir(J(d, "s"))
    os.chown(J(d, "s"), 500, 600)
    s = os.stat(J(d, "s"))
    eq((s.st_uid, s.st_gid), (500, 600), "uid, gid")


@case("chown")
def chown_sets_ctime(d):
    p = J(d, "f")
    touch(p)
    set_old(p)
    ctime_moves(p, lambda: os.chown(p, 11, 12))
    eq(os.stat(p).st_mtime_ns, OLD_NS, "mtime after chown")


@case("chown")
def create_in_foreign_dir_owned_by_caller(d):
    os.mkdir(J(d, "s"), 0o777)
    os.chown(J(d, "s"), 1234, 5678)
    touch(J(d, "s", "f"))
    s = os.stat(J(d, "s", "f"))
    eq((s.st_uid, s.st_gid), (os.geteuid(), os.getegid()),
       "uid, gid of a file made in another's directory (no setgid)")


@case("chown")
def chown_missing_enoent(d):
    raises(errno.ENOENT, os.chown, J(d, "nope"), 1, 1)


# ==================================================================== utime

@case("utime")
def explicit_ns(d):
    p = J(d, "f")
    touch(p)
    a, m = 1234567890123456789, 1345678901987654321
    os.utime(p, ns=(a, m))
    s = os.stat(p)
    eq((s.st_atime_ns, s.st_mtime_ns), (a, m), "atime, mtime")


@case("utime")
def atime_set_by_utime(d):
    p = J(d, "f")
    touch(p)
    m = os.stat(p).st_mtime_ns
    os.utime(p, ns=(1500000000000000001, m))
    s = os.stat(p)
    eq(s.st_atime_ns, 1500000000000000001, "atime")
    eq(s.st_mtime_ns, m, "mtime")


@case("utime")
def utime_now(d):
    p = J(d, "f")
    touch(p)
    set_old(p)
    t0 = time.time_ns()
    os.utime(p)
    t1 = time.time_ns()
    s = os.stat(p)
    near_now(s.st_atime_ns, t0, t1, "atime")
    near_now(s.st_mtime_ns, t0, t1, "mtime")


@case("utime")
def utimensat_utime_now(d):
    p = J(d, "f")
    touch(p)
    set_old(p)
    t0 = time.time_ns()
    utimensat(p, UTIME_NOW, UTIME_NOW)
    t1 = time.time_ns()
    s = os.stat(p)
    near_now(s.st_atime_ns, t0, t1, "atime")
    near_now(s.st_mtime_ns, t0, t1, "mtime")


@case("utime")
def utimensat_omit_atime(d):
    p = J(d, "f")
    touch(p)
    os.utime(p, ns=(1100000000000000000, 1200000000000000000))
    utimensat(p, UTIME_OMIT, (1300000000, 5))
    s = os.stat(p)
    eq((s.st_atime_ns, s.st_mtime_ns),
       (1100000000000000000, 1300000000000000005), "atime, mtime")


@case("utime")
def utimensat_omit_mtime(d):
    p = J(d, "f")
    touch(p)
    os.utime(p, ns=(1100000000000000000, 1200000000000000000))
    utimensat(p, (1400000000, 999999999), UTIME_OMIT)
    s = os.stat(p)
    eq((s.st_atime_ns, s.st_mtime_ns),
       (1400000000999999999, 1200000000000000000), "atime, mtime")


@case("utime")
def utimensat_omit_both(d):
    p = J(d, "f")
    touch(p)
    os.utime(p, ns=(1100000000000000000, 1200000000000000000))
    utimensat(p, UTIME_OMIT, UTIME_OMIT)
    s = os.stat(p)
    eq((s.st_atime_ns, s.st_mtime_ns),
       (1100000000000000000, 1200000000000000000), "atime, mtime")


@case("utime")
def utimensat_now_and_explicit(d):
    p = J(d, "f")
    touch(p)
    t0 = time.time_ns()
    utimensat(p, UTIME_NOW, (1600000000, 7))
    t1 = time.time_ns()
    s = os.stat(p)
    near_now(s.st_atime_ns, t0, t1, "atime")
    eq(s.st_mtime_ns, 1600000000000000007, "mtime")


@case("utime")
def futimens(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.utime(fd, ns=(1000000000000000123, 1000000000000000456))
    s = os.fstat(fd)
    eq((s.st_atime_ns, s.st_mtime_ns),
       (1000000000000000123, 1000000000000000456), "atime, mtime")


@case("utime")
def symlink_nofollow(d):
    touch(J(d, "f"))
    os.symlink("f", J(d, "l"))
    tf = os.stat(J(d, "f")).st_mtime_ns
    os.utime(J(d, "l"), ns=(1000000000000000001, 1000000000000000002),
             follow_symlinks=False)
    s = os.lstat(J(d, "l"))
    eq((s.st_atime_ns, s.st_mtime_ns),
       (1000000000000000001, 1000000000000000002), "link atime, mtime")
    eq(os.stat(J(d, "f")).st_mtime_ns, tf, "target mtime")


@case("utime")
def follows_symlink(d):
    touch(J(d, "f"))
    os.symlink("f", J(d, "l"))
    os.utime(J(d, "l"), ns=(1000000000000000011, 1000000000000000022))
    s = os.stat(J(d, "f"))
    eq((s.st_atime_ns, s.st_mtime_ns),
       (1000000000000000011, 1000000000000000022), "target atime, mtime")


@case("utime")
def utime_dir(d):
    os.mkdir(J(d, "s"))
    os.utime(J(d, "s"), ns=(1000000000000000033, 1000000000000000044))
    s = os.stat(J(d, "s"))
    eq((s.st_atime_ns, s.st_mtime_ns),
       (1000000000000000033, 1000000000000000044), "atime, mtime")


@case("utime")
def utime_missing_enoent(d):
    raises(errno.ENOENT, os.utime, J(d, "nope"), ns=(1, 1))


@case("utime")
def utime_sets_ctime(d):
    p = J(d, "f")
    touch(p)
    t0 = time.time_ns()
    ctime_moves(p, lambda: os.utime(p, ns=(OLD_NS, OLD_NS)))
    near_now(os.stat(p).st_ctime_ns, t0, time.time_ns(), "ctime")


@case("utime")
def far_future(d):
    p = J(d, "f")
    touch(p)
    t = 4102444800 * 10 ** 9 + 123  # 2100-01-01
    os.utime(p, ns=(t, t + 1))
    s = os.stat(p)
    eq((s.st_atime_ns, s.st_mtime_ns), (t, t + 1), "atime, mtime")


@case("utime")
def kept_after_reopen_write_close(d):
    # a later write moves mtime, not atime
    p = J(d, "f")
    touch(p)
    os.utime(p, ns=(OLD_NS, OLD_NS))
    fd = fd_open(p, os.O_WRONLY)
    os.write(fd, b"x")
    fd_close(fd)
    s = os.stat(p)
    eq(s.st_atime_ns, OLD_NS, "atime after a write")
    true(s.st_mtime_ns > OLD_NS, "mtime not moved by the write")


# ================================================================== statvfs

@case("statvfs")
def sane(d):
    v = os.statvfs(d)
    true(v.f_bsize > 0, "f_bsize %d" % v.f_bsize)
    true(v.f_frsize > 0, "f_frsize %d" % v.f_frsize)
    true(v.f_blocks > 0, "f_blocks %d" % v.f_blocks)
    true(v.f_bfree <= v.f_blocks, "f_bfree %d > f_blocks %d" %
         (v.f_bfree, v.f_blocks))
    true(v.f_bavail <= v.f_bfree, "f_bavail %d > f_bfree %d" %
         (v.f_bavail, v.f_bfree))
    true(v.f_namemax >= 255, "f_namemax %d" % v.f_namemax)


@case("statvfs")
def fstatvfs_same(d):
    fd = fd_open(d, os.O_RDONLY | os.O_DIRECTORY)
    a, b = os.statvfs(d), os.statvfs(fd)
    eq((a.f_bsize, a.f_frsize, a.f_blocks, a.f_namemax, a.f_fsid),
       (b.f_bsize, b.f_frsize, b.f_blocks, b.f_namemax, b.f_fsid),
       "statvfs vs fstatvfs")


@case("statvfs")
def same_for_file(d):
    touch(J(d, "f"))
    a, b = os.statvfs(d), os.statvfs(J(d, "f"))
    eq((a.f_fsid, a.f_bsize, a.f_blocks), (b.f_fsid, b.f_bsize, b.f_blocks),
       "statvfs of a file vs its directory")


@case("statvfs")
def statvfs_missing_enoent(d):
    raises(errno.ENOENT, os.statvfs, J(d, "nope"))


# ================================================================== symlink

@case("symlink")
def symlink_readlink(d):
    os.symlink("some/where/else", J(d, "l"))
    eq(os.readlink(J(d, "l")), "some/where/else", "target")


@case("symlink")
def lstat_size_is_target_length(d):
    os.symlink("0123456789", J(d, "l"))
    s = os.lstat(J(d, "l"))
    true(stat.S_ISLNK(s.st_mode), "not a symlink")
    eq(s.st_size, 10, "size")


@case("symlink")
def lstat_mode_777(d):
    os.symlink("x", J(d, "l"))
    eq(stat.S_IMODE(os.lstat(J(d, "l")).st_mode), 0o777, "link mode")


@case("symlink")
def stat_follows(d):
    put(J(d, "f"), b"12345")
    os.symlink("f", J(d, "l"))
    a, b = os.stat(J(d, "l")), os.stat(J(d, "f"))
    eq((a.st_ino, a.st_size, a.st_mode), (b.st_ino, b.st_size, b.st_mode),
       "stat through the link")
    true(os.lstat(J(d, "l")).st_ino != b.st_ino, "link has the target's ino")


@case("symlink")
def dangling(d):
    os.symlink("nowhere", J(d, "l"))
    raises(errno.ENOENT, os.stat, J(d, "l"))
    true(stat.S_ISLNK(os.lstat(J(d, "l")).st_mode), "lstat")
    raises(errno.ENOENT, os.open, J(d, "l"), os.O_RDONLY)


@case("symlink")
def symlink_existing_eexist(d):
    touch(J(d, "f"))
    os.mkdir(J(d, "s"))
    os.symlink("x", J(d, "l"))
    raises(errno.EEXIST, os.symlink, "t", J(d, "f"))
    raises(errno.EEXIST, os.symlink, "t", J(d, "s"))
    raises(errno.EEXIST, os.symlink, "t", J(d, "l"))
    eq(os.readlink(J(d, "l")), "x", "old link kept")


@case("symlink")
def readlink_file_einval(d):
    touch(J(d, "f"))
    raises(errno.EINVAL, os.readlink, J(d, "f"))
    raises(errno.EINVAL, os.readlink, d)


@case("symlink")
def readlink_missing_enoent(d):
    raises(errno.ENOENT, os.readlink, J(d, "nope"))


@case("symlink")
def to_dir_traverse(d):
    os.mkdir(J(d, "s"))
    put(J(d, "s", "f"), b"inside")
    os.symlink("s", J(d, "l"))
    eq(os.listdir(J(d, "l")), ["f"], "listdir through the link")
    eq(get(J(d, "l", "f")), b"inside", "open through the link")
    touch(J(d, "l", "g"))
    eq(sorted(os.listdir(J(d, "s"))), ["f", "g"], "create through the link")


@case("symlink")
def open_through_link(d):
    put(J(d, "f"), b"target data")
    os.symlink("f", J(d, "l"))
    eq(get(J(d, "l")), b"target data", "read")
    fd = fd_open(J(d, "l"), os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"+")
    eq(get(J(d, "f")), b"target data+", "write through the link")


@case("symlink")
def target_4095(d):
    t = ("x" * 254 + "/") * 16 + "y" * 15
    os.symlink(t, J(d, "l"))
    eq(os.readlink(J(d, "l")), t, "target of 4095 bytes")
    eq(os.lstat(J(d, "l")).st_size, 4095, "size")


@case("symlink")
def target_4096_enametoolong(d):
    raises(errno.ENAMETOOLONG, os.symlink, "y" * 4096, J(d, "l"))


@case("symlink")
def loop_eloop(d):
    os.symlink("b", J(d, "a"))
    os.symlink("a", J(d, "b"))
    raises(errno.ELOOP, os.stat, J(d, "a"))
    raises(errno.ELOOP, os.open, J(d, "a"), os.O_RDONLY)


@case("symlink")
def o_nofollow_eloop(d):
    touch(J(d, "f"))
    os.symlink("f", J(d, "l"))
    raises(errno.ELOOP, os.open, J(d, "l"), os.O_RDONLY | os.O_NOFOLLOW)


@case("symlink")
def unlink_link_keeps_target(d):
    put(J(d, "f"), b"kept")
    os.symlink("f", J(d, "l"))
    os.unlink(J(d, "l"))
    eq(os.listdir(d), ["f"], "entries")
    eq(get(J(d, "f")), b"kept", "target data")


@case("symlink")
def relative_from_link_dir(d):
    put(J(d, "t"), b"T")
    os.mkdir(J(d, "s"))
    os.symlink("../t", J(d, "s", "l"))
    eq(get(J(d, "s", "l")), b"T", "read through ../t")


@case("symlink")
def absolute_target(d):
    put(J(d, "t"), b"abs")
    os.symlink(os.path.abspath(J(d, "t")), J(d, "l"))
    eq(get(J(d, "l")), b"abs", "read through an absolute link")


@case("symlink")
def link_name_too_long(d):
    raises(errno.ENAMETOOLONG, os.symlink, "t", J(d, "n" * 256))


@case("symlink")
def odd_target_bytes(d):
    t = "sp ace/ü/\t/%s/../.."
    os.symlink(t, J(d, "l"))
    eq(os.readlink(J(d, "l")), t, "target")


@case("symlink")
def lstat_of_dir_link(d):
    os.mkdir(J(d, "s"))
    os.symlink("s", J(d, "l"))
    true(stat.S_ISLNK(os.lstat(J(d, "l")).st_mode), "lstat type")
    true(stat.S_ISDIR(os.stat(J(d, "l")).st_mode), "stat type")
    raises(errno.ENOTDIR, os.rmdir, J(d, "l"))
    os.unlink(J(d, "l"))
    true(os.path.isdir(J(d, "s")), "target dir kept")


# ===================================================================== link

@case("link")
def link_nlink_same_ino(d):
    put(J(d, "a"), b"shared")
    os.link(J(d, "a"), J(d, "b"))
    a, b = os.stat(J(d, "a")), os.stat(J(d, "b"))
    eq((a.st_nlink, b.st_nlink), (2, 2), "nlink")
    eq(a.st_ino, b.st_ino, "ino")
    eq(get(J(d, "b")), b"shared", "data")


@case("link")
def unlink_one(d):
    put(J(d, "a"), b"shared")
    os.link(J(d, "a"), J(d, "b"))
    os.unlink(J(d, "a"))
    eq(os.stat(J(d, "b")).st_nlink, 1, "nlink")
    eq(get(J(d, "b")), b"shared", "data")
    eq(os.listdir(d), ["b"], "entries")


@case("link")
def write_visible_via_other(d):
    put(J(d, "a"), b"")
    os.link(J(d, "a"), J(d, "b"))
    put(J(d, "a"), b"written via a")
    eq(get(J(d, "b")), b"written via a", "data via b")
    eq(os.stat(J(d, "b")).st_size, 13, "size via b")


@case("link")
def dir_eperm(d):
    os.mkdir(J(d, "s"))
    raises(errno.EPERM, os.link, J(d, "s"), J(d, "t"))
    eq(os.listdir(d), ["s"], "entries")


@case("link")
def existing_eexist(d):
    touch(J(d, "a"))
    put(J(d, "b"), b"B")
    raises(errno.EEXIST, os.link, J(d, "a"), J(d, "b"))
    eq(get(J(d, "b")), b"B", "target untouched")
    eq(os.stat(J(d, "a")).st_nlink, 1, "nlink")


@case("link")
def source_missing_enoent(d):
    raises(errno.ENOENT, os.link, J(d, "nope"), J(d, "b"))


@case("link")
def target_dir_missing_enoent(d):
    touch(J(d, "a"))
    raises(errno.ENOENT, os.link, J(d, "a"), J(d, "no", "b"))


@case("link")
def across_dirs(d):
    os.mkdir(J(d, "x"))
    os.mkdir(J(d, "y"))
    put(J(d, "x", "f"), b"X")
    os.link(J(d, "x", "f"), J(d, "y", "g"))
    eq(os.stat(J(d, "y", "g")).st_ino, os.stat(J(d, "x", "f")).st_ino, "ino")
    eq(os.stat(J(d, "x", "f")).st_nlink, 2, "nlink")


@case("link")
def ten_links(d):
    touch(J(d, "f0"))
    for i in range(1, 11):
        os.link(J(d, "f0"), J(d, "f%d" % i))
    eq(os.stat(J(d, "f5")).st_nlink, 11, "nlink")
    for i in range(10):
        os.unlink(J(d, "f%d" % i))
    eq(os.stat(J(d, "f10")).st_nlink, 1, "nlink after unlinks")
    eq(os.listdir(d), ["f10"], "entries")


@case("link")
def link_sets_ctime(d):
    touch(J(d, "a"))
    ctime_moves(J(d, "a"), lambda: os.link(J(d, "a"), J(d, "b")))


@case("link")
def unlink_sets_ctime(d):
    touch(J(d, "a"))
    os.link(J(d, "a"), J(d, "b"))
    ctime_moves(J(d, "b"), lambda: os.unlink(J(d, "a")))


@case("link")
def link_of_symlink_itself(d):
    touch(J(d, "f"))
    os.symlink("f", J(d, "l"))
    os.link(J(d, "l"), J(d, "m"), follow_symlinks=False)
    true(stat.S_ISLNK(os.lstat(J(d, "m")).st_mode), "the new name is a link")
    eq(os.lstat(J(d, "m")).st_ino, os.lstat(J(d, "l")).st_ino, "ino")
    eq(os.readlink(J(d, "m")), "f", "target")


@case("link")
def new_name_too_long(d):
    touch(J(d, "a"))
    raises(errno.ENAMETOOLONG, os.link, J(d, "a"), J(d, "n" * 256))


@case("link")
def both_names_listed(d):
    touch(J(d, "a"))
    os.link(J(d, "a"), J(d, "b"))
    eq(sorted(os.listdir(d)), ["a", "b"], "entries")
    inos = {e.name: e.inode() for e in os.scandir(d)}
    eq(inos["a"], inos["b"], "d_ino of both names")


@case("link")
def chmod_shared(d):
    touch(J(d, "a"))
    os.link(J(d, "a"), J(d, "b"))
    os.chmod(J(d, "a"), 0o600)
    eq(perm_bits(J(d, "b")), 0o600, "mode via the other name")


@case("link")
def truncate_shared(d):
    put(J(d, "a"), b"0123456789")
    os.link(J(d, "a"), J(d, "b"))
    os.truncate(J(d, "b"), 3)
    eq(get(J(d, "a")), b"012", "data via the other name")


# ==================================================================== xattr

@case("xattr")
def set_get(d):
    p = J(d, "f")
    touch(p)
    os.setxattr(p, "user.color", b"blue")
    eq(os.getxattr(p, "user.color"), b"blue", "value")


@case("xattr")
def create_existing_eexist(d):
    p = J(d, "f")
    touch(p)
    os.setxattr(p, "user.a", b"1")
    raises(errno.EEXIST, os.setxattr, p, "user.a", b"2", os.XATTR_CREATE)
    eq(os.getxattr(p, "user.a"), b"1", "value kept")


@case("xattr")
def create_new(d):
    p = J(d, "f")
    touch(p)
    os.setxattr(p, "user.a", b"1", os.XATTR_CREATE)
    eq(os.getxattr(p, "user.a"), b"1", "value")


@case("xattr")
def replace_missing_enodata(d):
    p = J(d, "f")
    touch(p)
    raises(errno.ENODATA, os.setxattr, p, "user.a", b"1", os.XATTR_REPLACE)
    eq(user_xattrs(p), [], "names")


@case("xattr")
def replace_existing(d):
    p = J(d, "f")
    touch(p)
    os.setxattr(p, "user.a", b"first")
    os.setxattr(p, "user.a", b"2nd", os.XATTR_REPLACE)
    eq(os.getxattr(p, "user.a"), b"2nd", "value")


@case("xattr")
def overwrite_no_flags(d):
    p = J(d, "f")
    touch(p)
    os.setxattr(p, "user.a", b"long first value")
    os.setxattr(p, "user.a", b"x")
    eq(os.getxattr(p, "user.a"), b"x", "value")


@case("xattr")
def get_missing_enodata(d):
    p = J(d, "f")
    touch(p)
    raises(errno.ENODATA, os.getxattr, p, "user.nope")


@case("xattr")
def list_names(d):
    p = J(d, "f")
    touch(p)
    eq(user_xattrs(p), [], "names at first")
    for n in ("user.one", "user.two", "user.three"):
        os.setxattr(p, n, n.encode())
    eq(user_xattrs(p), ["user.one", "user.three", "user.two"], "names")


@case("xattr")
def list_many(d):
    p = J(d, "f")
    touch(p)
    names = ["user.attr-%02d" % i for i in range(50)]
    for n in names:
        os.setxattr(p, n, n.encode() * 3)
    eq(user_xattrs(p), names, "names")
    for n in names:
        eq(os.getxattr(p, n), n.encode() * 3, "value of " + n)


@case("xattr")
def remove(d):
    p = J(d, "f")
    touch(p)
    os.setxattr(p, "user.a", b"1")
    os.setxattr(p, "user.b", b"2")
    os.removexattr(p, "user.a")
    raises(errno.ENODATA, os.getxattr, p, "user.a")
    eq(user_xattrs(p), ["user.b"], "names")
    eq(os.getxattr(p, "user.b"), b"2", "the other value")


@case("xattr")
def remove_missing_enodata(d):
    p = J(d, "f")
    touch(p)
    raises(errno.ENODATA, os.removexattr, p, "user.nope")


@case("xattr")
def empty_value(d):
    p = J(d, "f")
    touch(p)
    os.setxattr(p, "user.e", b"")
    eq(os.getxattr(p, "user.e"), b"", "value")
    eq(user_xattrs(p), ["user.e"], "names")


@case("xattr")
def binary_value(d):
    p = J(d, "f")
    touch(p)
    v = bytes(range(256))
    os.setxattr(p, "user.bin", v)
    eq(os.getxattr(p, "user.bin"), v, "value")


@case("xattr")
def value_2k(d):
    p = J(d, "f")
    touch(p)
    v = rand_bytes(2000, 13)
    os.setxattr(p, "user.big", v)
    eq(os.getxattr(p, "user.big"), v, "value")


@case("xattr")
def on_dir(d):
    os.mkdir(J(d, "s"))
    os.setxattr(J(d, "s"), "user.d", b"dir")
    eq(os.getxattr(J(d, "s"), "user.d"), b"dir", "value")
    eq(user_xattrs(J(d, "s")), ["user.d"], "names")


@case("xattr")
def survives_rename(d):
    touch(J(d, "a"))
    os.setxattr(J(d, "a"), "user.k", b"v")
    os.mkdir(J(d, "s"))
    os.rename(J(d, "a"), J(d, "s", "b"))
    eq(os.getxattr(J(d, "s", "b"), "user.k"), b"v", "value after rename")


@case("xattr")
def per_file(d):
    touch(J(d, "a"))
    touch(J(d, "b"))
    os.setxattr(J(d, "a"), "user.k", b"a")
    raises(errno.ENODATA, os.getxattr, J(d, "b"), "user.k")


@case("xattr")
def hardlink_shares(d):
    touch(J(d, "a"))
    os.link(J(d, "a"), J(d, "b"))
    os.setxattr(J(d, "a"), "user.k", b"shared")
    eq(os.getxattr(J(d, "b"), "user.k"), b"shared", "value via the link")


@case("xattr")
def user_on_symlink_eperm(d):
    touch(J(d, "f"))
    os.symlink("f", J(d, "l"))
    raises(errno.EPERM, os.setxattr, J(d, "l"), "user.k", b"v",
           follow_symlinks=False)
    os.setxattr(J(d, "l"), "user.k", b"v")  # follows to the file
    eq(os.getxattr(J(d, "f"), "user.k"), b"v", "set through the link")


@case("xattr")
def name_too_long_erange(d):
    p = J(d, "f")
    touch(p)
    raises(errno.ERANGE, os.setxattr, p, "user." + "n" * 251, b"v")
    os.setxattr(p, "user." + "n" * 250, b"v")
    eq(os.getxattr(p, "user." + "n" * 250), b"v", "255-byte name")


@case("xattr")
def small_buffer_erange(d):
    p = J(d, "f")
    touch(p)
    os.setxattr(p, "user.k", b"0123456789")
    eq(getxattr_raw(p, "user.k", 0)[0], 10, "size query")
    raises(errno.ERANGE, getxattr_raw, p, "user.k", 5)
    eq(getxattr_raw(p, "user.k", 10), (10, b"0123456789"), "exact buffer")


@case("xattr")
def missing_file_enoent(d):
    raises(errno.ENOENT, os.setxattr, J(d, "nope"), "user.k", b"v")
    raises(errno.ENOENT, os.getxattr, J(d, "nope"), "user.k")
    raises(errno.ENOENT, os.listxattr, J(d, "nope"))


@case("xattr")
def set_get_by_fd(d):
    fd = fd_open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    os.setxattr(fd, "user.fd", b"via fd")
    eq(os.getxattr(fd, "user.fd"), b"via fd", "fgetxattr")
    eq(os.getxattr(J(d, "f"), "user.fd"), b"via fd", "getxattr")
    os.removexattr(fd, "user.fd")
    eq(user_xattrs(J(d, "f")), [], "names")


@case("xattr")
def gone_with_file(d):
    touch(J(d, "a"))
    os.setxattr(J(d, "a"), "user.k", b"old")
    os.unlink(J(d, "a"))
    touch(J(d, "a"))
    eq(user_xattrs(J(d, "a")), [], "names of a new file of the same name")


# =================================================================== errors

@case("errors")
def name_256_creat_enametoolong(d):
    raises(errno.ENAMETOOLONG, os.open, J(d, "n" * 256),
           os.O_CREAT | os.O_WRONLY, 0o644)
    eq(os.listdir(d), [], "entries")


@case("errors")
def name_256_mkdir_enametoolong(d):
    raises(errno.ENAMETOOLONG, os.mkdir, J(d, "n" * 256))


@case("errors")
def name_256_lookup_enametoolong(d):
    raises(errno.ENAMETOOLONG, os.stat, J(d, "n" * 256))
    raises(errno.ENAMETOOLONG, os.unlink, J(d, "n" * 256))


@case("errors")
def name_256_component_enametoolong(d):
    raises(errno.ENAMETOOLONG, os.stat, J(d, "n" * 256, "x"))


@case("errors")
def name_255_all_ops(d):
    n = J(d, "a" * 255)
    m = J(d, "b" * 255)
    put(n, b"long")
    eq(os.stat(n).st_size, 4, "stat")
    os.rename(n, m)
    eq(get(m), b"long", "read after rename")
    os.unlink(m)
    os.mkdir(n)
    os.rmdir(n)
    eq(os.listdir(d), [], "entries")


@case("errors")
def path_over_4096_enametoolong(d):
    p = d + "/" + ("a" * 200 + "/") * 21 + "f"
    true(len(p) > 4096, "path length")
    raises(errno.ENAMETOOLONG, os.stat, p)


@case("errors")
def empty_path_enoent(d):
    raises(errno.ENOENT, os.stat, "")
    raises(errno.ENOENT, os.open, "", os.O_RDONLY)


@case("errors")
def missing_component_enoent(d):
    raises(errno.ENOENT, os.stat, J(d, "no", "x"))
    raises(errno.ENOENT, os.mkdir, J(d, "no", "x"))


@case("errors")
def file_component_enotdir(d):
    touch(J(d, "f"))
    raises(errno.ENOTDIR, os.stat, J(d, "f", "x"))
    raises(errno.ENOTDIR, os.listdir, J(d, "f"))
    raises(errno.ENOTDIR, os.unlink, J(d, "f", "x"))


@case("errors")
def ebadf_closed_fd(d):
    fd = os.open(J(d, "f"), os.O_CREAT | os.O_RDWR, 0o644)
    os.close(fd)
    raises(errno.EBADF, os.read, fd, 1)
    raises(errno.EBADF, os.write, fd, b"x")
    raises(errno.EBADF, os.fstat, fd)
    raises(errno.EBADF, os.ftruncate, fd, 0)
    raises(errno.EBADF, os.fchmod, fd, 0o600)
    raises(errno.EBADF, os.lseek, fd, 0, os.SEEK_SET)
    raises(errno.EBADF, os.close, fd)


@case("errors")
def ebadf_o_path_read(d):
    put(J(d, "f"), b"abc")
    fd = fd_open(J(d, "f"), os.O_PATH)
    raises(errno.EBADF, os.read, fd, 1)
    raises(errno.EBADF, os.write, fd, b"x")


@case("errors")
def eexist_family(d):
    touch(J(d, "f"))
    os.mkdir(J(d, "s"))
    raises(errno.EEXIST, os.mkdir, J(d, "s"))
    raises(errno.EEXIST, os.link, J(d, "f"), J(d, "s"))
    raises(errno.EEXIST, os.symlink, "x", J(d, "f"))
    raises(errno.EEXIST, os.open, J(d, "f"),
           os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)


@case("errors")
def enotempty_rmdir_and_rename(d):
    os.makedirs(J(d, "a", "x"))
    os.mkdir(J(d, "b"))
    touch(J(d, "b", "f"))
    raises(errno.ENOTEMPTY, os.rmdir, J(d, "a"))
    raises(errno.ENOTEMPTY, os.rename, J(d, "a"), J(d, "b"))


@case("errors")
def eisdir_family(d):
    os.mkdir(J(d, "s"))
    touch(J(d, "f"))
    raises(errno.EISDIR, os.open, J(d, "s"), os.O_WRONLY)
    raises(errno.EISDIR, os.unlink, J(d, "s"))
    raises(errno.EISDIR, os.rename, J(d, "f"), J(d, "s"))
    raises(errno.EISDIR, os.truncate, J(d, "s"), 0)


@case("errors")
def einval_family(d):
    os.makedirs(J(d, "a", "b"))
    touch(J(d, "f"))
    raises(errno.EINVAL, os.rmdir, J(d, "a", "."))
    raises(errno.EINVAL, os.rename, J(d, "a"), J(d, "a", "b", "c"))
    raises(errno.EINVAL, os.readlink, J(d, "f"))
    raises(errno.EINVAL, os.truncate, J(d, "f"), -5)


@case("errors")
def failed_ops_change_nothing(d):
    put(J(d, "f"), b"abc")
    os.mkdir(J(d, "s"))
    touch(J(d, "s", "x"))
    before = (sorted(os.listdir(d)), os.stat(J(d, "f")).st_mtime_ns,
              os.stat(d).st_nlink)
    for fn, args in ((os.mkdir, (J(d, "f"),)), (os.rmdir, (J(d, "s"),)),
                     (os.rename, (J(d, "s"), J(d, "f"))),
                     (os.link, (J(d, "s"), J(d, "t"))),
                     (os.unlink, (J(d, "s"),))):
        try:
            fn(*args)
            raise Fail("%s%s succeeded" % (fn.__name__, short_args(args)))
        except OSError:
            pass
    after = (sorted(os.listdir(d)), os.stat(J(d, "f")).st_mtime_ns,
             os.stat(d).st_nlink)
    eq(after, before, "entries, mtime, nlink after failed calls")
    eq(get(J(d, "f")), b"abc", "data")


# ===================================================================== perm

@case("perm", root=True)
def other_cannot_read_0600(d):
    os.chmod(d, 0o755)
    put(J(d, "f"), b"secret", 0o600)
    os.chmod(J(d, "f"), 0o600)
    user_eq(lambda: get(J(d, "f")), errno.EACCES, "read of a 0600 root file")


@case("perm", root=True)
def other_can_read_0644(d):
    os.chmod(d, 0o755)
    put(J(d, "f"), b"public")
    os.chmod(J(d, "f"), 0o644)

    def rd():
        if get(J(d, "f")) != b"public":
            raise OSError(errno.EIO, "wrong data")
    user_eq(rd, 0, "read of a 0644 root file")


@case("perm", root=True)
def other_cannot_write_0644(d):
    os.chmod(d, 0o755)
    put(J(d, "f"), b"public")
    os.chmod(J(d, "f"), 0o644)
    user_eq(lambda: os.close(os.open(J(d, "f"), os.O_WRONLY)),
            errno.EACCES, "open for writing of a 0644 root file")
    eq(get(J(d, "f")), b"public", "data")


@case("perm", root=True)
def other_cannot_create_in_0755(d):
    os.chmod(d, 0o755)
    user_eq(lambda: touch(J(d, "new")), errno.EACCES,
            "create in a 0755 root dir")
    eq(os.listdir(d), [], "entries")


@case("perm", root=True)
def other_creates_in_0777(d):
    os.chmod(d, 0o777)
    user_eq(lambda: touch(J(d, "mine")), 0, "create in a 0777 dir")
    s = os.stat(J(d, "mine"))
    eq((s.st_uid, s.st_gid), (65534, 65534), "owner of the new file")


@case("perm", root=True)
def sticky_dir_other_cannot_unlink(d):
    os.chmod(d, 0o1777)
    touch(J(d, "rootfile"))
    user_eq(lambda: os.unlink(J(d, "rootfile")), errno.EPERM,
            "unlink of root's file in a sticky dir")
    eq(os.listdir(d), ["rootfile"], "entries")


@case("perm", root=True)
def no_search_permission(d):
    os.chmod(d, 0o755)
    os.mkdir(J(d, "s"), 0o700)
    touch(J(d, "s", "f"))
    user_eq(lambda: os.stat(J(d, "s", "f")), errno.EACCES,
            "stat below a 0700 root dir")


@case("perm", root=True)
def other_chmod_eperm(d):
    os.chmod(d, 0o755)
    touch(J(d, "f"))
    user_eq(lambda: os.chmod(J(d, "f"), 0o777), errno.EPERM,
            "chmod of root's file")
    eq(perm_bits(J(d, "f")), 0o644, "mode")


@case("perm", root=True)
def owner_can_chmod_own(d):
    os.chmod(d, 0o777)
    touch(J(d, "f"))
    os.chown(J(d, "f"), 65534, 65534)
    user_eq(lambda: os.chmod(J(d, "f"), 0o600), 0, "chmod of one's own file")
    eq(perm_bits(J(d, "f")), 0o600, "mode")


# ===================================================================== sgid

@case("sgid", root=True)
def file_inherits_group(d):
    os.mkdir(J(d, "s"))
    os.chown(J(d, "s"), 0, 4321)
    os.chmod(J(d, "s"), 0o2775)
    touch(J(d, "s", "f"))
    eq(os.stat(J(d, "s", "f")).st_gid, 4321, "gid of a file in a setgid dir")


@case("sgid", root=True)
def subdir_inherits_group_and_bit(d):
    os.mkdir(J(d, "s"))
    os.chown(J(d, "s"), 0, 4321)
    os.chmod(J(d, "s"), 0o2775)
    os.mkdir(J(d, "s", "t"), 0o755)
    s = os.stat(J(d, "s", "t"))
    eq(s.st_gid, 4321, "gid of a subdir")
    true(s.st_mode & stat.S_ISGID, "setgid bit of the subdir")


# ==================================================================== mknod

@case("mknod")
def mkfifo(d):
    os.mkfifo(J(d, "p"), 0o640)
    s = os.lstat(J(d, "p"))
    true(stat.S_ISFIFO(s.st_mode), "not a fifo")
    eq(stat.S_IMODE(s.st_mode), 0o640, "mode")


@case("mknod")
def mknod_regular(d):
    os.mknod(J(d, "r"), stat.S_IFREG | 0o600)
    s = os.lstat(J(d, "r"))
    true(stat.S_ISREG(s.st_mode), "not a regular file")
    eq(s.st_size, 0, "size")


@case("mknod", root=True)
def mknod_char_device(d):
    os.mknod(J(d, "c"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
    s = os.lstat(J(d, "c"))
    true(stat.S_ISCHR(s.st_mode), "not a char device")
    eq((os.major(s.st_rdev), os.minor(s.st_rdev)), (1, 3), "rdev")


@case("mknod")
def mknod_socket(d):
    os.mknod(J(d, "sock"), stat.S_IFSOCK | 0o600)
    true(stat.S_ISSOCK(os.lstat(J(d, "sock")).st_mode), "not a socket")


@case("mknod")
def mknod_existing_eexist(d):
    touch(J(d, "f"))
    raises(errno.EEXIST, os.mkfifo, J(d, "f"))


# =================================================================== orphan

@case("orphan")
def unlinked_open_readable(d):
    p = J(d, "f")
    put(p, b"still here")
    fd = fd_open(p, os.O_RDWR)
    os.unlink(p)
    eq(os.listdir(d), [], "entries")
    eq(os.pread(fd, 100, 0), b"still here", "data through the open fd")
    eq(os.fstat(fd).st_nlink, 0, "nlink")


@case("orphan")
def unlinked_open_writable(d):
    p = J(d, "f")
    fd = fd_open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.unlink(p)
    os.write(fd, b"after unlink")
    eq(os.pread(fd, 100, 0), b"after unlink", "data")


@case("orphan")
def rename_over_open_keeps_old(d):
    put(J(d, "a"), b"new")
    put(J(d, "b"), b"old data")
    fd = fd_open(J(d, "b"), os.O_RDONLY)
    os.rename(J(d, "a"), J(d, "b"))
    eq(os.pread(fd, 100, 0), b"old data", "the replaced file through its fd")
    eq(get(J(d, "b")), b"new", "the name")


@case("orphan")
def atomic_replace_reads_whole(d):
    p = J(d, "target")
    put(p, b"v000" * 1000)
    stop, bad = [], []

    def reader():
        while not stop:
            try:
                b = get(p)
            except FileNotFoundError:
                bad.append("missing")
                continue
            if len(b) != 4000 or b != b[:4] * 1000:
                bad.append(b[:8])
    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(1, 61):
            put(J(d, "tmp"), b"v%03d" % i * 1000)
            os.rename(J(d, "tmp"), p)
    finally:
        stop.append(1)
        t.join(10)
    eq(bad[:3], [], "reads that saw no target or a mixed file")


# ===================================================================== mmap

@case("mmap")
def mmap_read(d):
    p = J(d, "f")
    data = rand_bytes(100000, 21)
    put(p, data)
    fd = fd_open(p, os.O_RDONLY)
    with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as m:
        eq(m[:], data, "mapped data")


@case("mmap")
def mmap_shared_write(d):
    p = J(d, "f")
    put(p, bytes(8192))
    fd = fd_open(p, os.O_RDWR)
    with mmap.mmap(fd, 8192) as m:
        m[100:105] = b"hello"
        m[5000:5003] = b"abc"
        m.flush()
    data = get(p)
    eq((data[100:105], data[5000:5003]), (b"hello", b"abc"), "written data")
    eq(len(data), 8192, "size")


# ================================================================== runner


def run_case(fn, d):
    def on_alarm(sig, frm):
        raise Timeout()
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT)
    try:
        fn(d)
        return None
    except Timeout:
        return "timed out after %g s" % CASE_TIMEOUT
    except Fail as e:
        return str(e)
    except OSError as e:
        where = ""
        if e.filename is not None:
            f = str(e.filename)
            if ROOT and f.startswith(ROOT):
                f = "DIR" + f[len(ROOT):]
            where = " (%s)" % (f if len(f) < 80 else f[:60] + "...")
        return "unexpected %s: %s%s" % (ename(e.errno), e.strerror, where)
    except Exception as e:  # a bug in the case, or the fs did the absurd
        return "exception %s: %s" % (type(e).__name__, e)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        while OPEN_FDS:
            try:
                os.close(OPEN_FDS.pop())
            except OSError:
                pass


def remove_tree(d):
    """rmtree that first restores search/write bits (for non-root runs)."""
    def onerr(fn, path, exc):
        try:
            os.chmod(os.path.dirname(path), 0o755)
            os.chmod(path, 0o755)
        except OSError:
            pass
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
    os.chmod(d, 0o755)
    shutil.rmtree(d, onerror=onerr)
    return not os.path.lexists(d)


def reachable_by_other():
    """None when uid 65534 reaches DIR (made 0755 for the test), else why
    the perm group cannot run here."""
    mode0 = stat.S_IMODE(os.stat(ROOT).st_mode)
    try:
        os.chmod(ROOT, 0o755)
        got = as_user(lambda: os.listdir(ROOT))
    except Fail as e:
        return "cannot run as uid 65534: %s" % e
    finally:
        os.chmod(ROOT, mode0)
    if got:
        return ("DIR is not reachable by uid 65534 (%s): a directory above "
                "it is not searchable by others, or a FUSE mount lacks "
                "allow_other" % ename(got))
    return None


def main():
    global ROOT, CASE_TIMEOUT
    ap = argparse.ArgumentParser(
        description="POSIX conformance cases in an empty directory DIR.",
        epilog="optional groups: " + "; ".join(
            "%s: %s" % kv for kv in OPTIONAL.items()))
    ap.add_argument("dir", nargs="?", help="an empty directory")
    ap.add_argument("--skip-group", default="", metavar="G,...",
                    help="groups not to run")
    ap.add_argument("--only", default="", metavar="S,...",
                    help="run only cases whose name contains one of these")
    ap.add_argument("--list", action="store_true",
                    help="list the cases and exit")
    ap.add_argument("--keep", action="store_true",
                    help="keep the directories of failed cases")
    ap.add_argument("--timeout", type=float, default=CASE_TIMEOUT,
                    help="seconds per case (default %(default)s)")
    a = ap.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under | head

    if a.list:
        for g in GROUPS:
            n = [c for c in CASES if c[0] == g]
            print("%-10s %3d%s" % (g, len(n),
                                   "  (optional)" if g in OPTIONAL else ""))
        for c in CASES:
            print(c[1])
        print("%d cases" % len(CASES))
        return 0
    if not a.dir:
        ap.error("DIR is needed")
    skip = [g for g in a.skip_group.split(",") if g]
    for g in skip:
        if g not in GROUPS:
            ap.error("no group %r (groups: %s)" % (g, ", ".join(GROUPS)))
    only = [s for s in a.only.split(",") if s]
    CASE_TIMEOUT = a.timeout
    if not os.path.isdir(a.dir):
        print("conform.py: %s is not a directory" % a.dir, file=sys.stderr)
        return 2
    if os.listdir(a.dir):
        print("conform.py: %s is not empty" % a.dir, file=sys.stderr)
        return 2
    ROOT = os.path.abspath(a.dir)
    os.umask(0)
    root = os.geteuid() == 0

    passed = failed = 0
    said = set()
    cant = {}  # group -> why it cannot run here
    if root and "perm" not in skip:
        why = reachable_by_other()
        if why:
            cant["perm"] = why
    t0 = time.monotonic()
    mode0 = stat.S_IMODE(os.stat(ROOT).st_mode)
    for i, (g, name, fn, needs_root) in enumerate(CASES):
        if only and not any(s in name for s in only):
            continue
        if g in skip or g in cant or (g in ROOT_GROUPS and not root):
            if g not in said:
                said.add(g)
                n = sum(1 for c in CASES if c[0] == g and
                        (not only or any(s in c[1] for s in only)))
                if g in skip:
                    why = OPTIONAL.get(g, "skipped on request")
                else:
                    why = cant.get(g, "needs root")
                print("skip %s (%d cases): %s" % (g, n, why), flush=True)
            continue
        if g == "perm":
            os.chmod(ROOT, 0o755)  # others reach the case directories
        if needs_root and not root:
            print("skip %s: needs root" % name, flush=True)
            continue
        d = os.path.join(ROOT, "%03d" % i)
        try:
            os.mkdir(d, 0o755)
        except OSError as e:
            print("FAIL %s: cannot make its directory: %s" % (name, e),
                  flush=True)
            failed += 1
            continue
        why = run_case(fn, d)
        if g == "perm":
            os.chmod(ROOT, mode0)
        if why is not None and a.keep:
            print("     kept DIR/%03d" % i)
        elif not remove_tree(d) and why is None:
            why = "its directory could not be removed"
        if why is None:
            passed += 1
            print("ok %s" % name, flush=True)
        else:
            failed += 1
            print("FAIL %s: %s" % (name, why), flush=True)
    print("# %.1f s" % (time.monotonic() - t0), flush=True)
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
