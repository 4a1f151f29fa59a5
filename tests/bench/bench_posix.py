#!/usr/bin/env python3
"""bench_posix.py BUILD [--dir D] [--json] [--mib M] [--files N] — the POSIX
view's benchmark (issue 33; make bench runs it).

In one run, on the same disk (D, default BUILD/bench-data; devices of the
stores are files there, O_DIRECT; NVRAM on /dev/shm):

  fio through a strata-fuse mount of a fresh embedded store (devices of
  1 GiB; the namespace's default 64 KiB blocks for the sequential file, a
  directory of 4 KiB blocks (user.strata.block_size) for the random one):
    seq-write / seq-read   1 MiB, one job, psync, M MiB (default 256)
    rand-write / rand-read 4 KiB, 16 jobs (16 in flight), psync, over a
                           file of M/4 MiB, as many ops as that file holds
  every fio job with direct=1 (O_DIRECT: the page cache does not answer
  reads), beside the same fio on a directory of the local file system
  (ext4 here) and beside direct Clovis (strata_bench_posix direct: the same
  sizes and concurrency on objects of the same block sizes);
  metadata rates, mdtest-style: create, stat, unlink of N files (default
  10,000) in one directory and in 100 directories, through the mount, on
  the local file system, and through the namespace library alone
  (strata_bench_posix nsmd: an embedded store, no FUSE).

Prints each figure with its baselines and the ratios the issue's goals
name (sequential: mount / direct Clovis, goal 0.7; creates through the
mount: goal 5,000/s embedded); --json prints the same as JSON.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

B = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "build"


def opt(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


DIR = os.path.abspath(opt("--dir", os.path.join(B, "bench-data")))
JSON = "--json" in sys.argv
MIB = int(opt("--mib", "256"))
FILES = int(opt("--files", "10000"))
ROOT = os.path.join(DIR, "posix-bench")
STORE = os.path.join(ROOT, "store")
MNT = os.path.join(ROOT, "mnt")
LOCAL = os.path.join(ROOT, "local")
STRATA = os.path.join(B, "strata")
FUSE = os.path.join(B, "strata-fuse")
HELPER = os.path.join(B, "strata_bench_posix")
daemon = None


def run(cmd, timeout=1800):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                 p.stderr.strip()[-2000:]))
    return p.stdout


def mounted():
    with open("/proc/self/mounts") as f:
        return any(l.split()[1] == MNT for l in f)


def mount(meta_nvram=False):
    global daemon
    os.makedirs(MNT, exist_ok=True)
    # the store made first, with devices of 1 GiB (strata-fuse would make
    # the default 256 MiB ones), its metadata on NVRAM (/dev/shm) or not
    run([STRATA, "--data", STORE, "--dev-size", str(1 << 30)] +
        (["--meta-nvram"] if meta_nvram else []) + ["-q", "devices"])
    daemon = subprocess.Popen([FUSE, "--data", STORE, "--mkfs", "-f", MNT],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.time() + 120
    while not mounted():
        if daemon.poll() is not None or time.time() > end:
            raise RuntimeError("strata-fuse did not mount: %s" %
                               daemon.stderr.read().decode()[-2000:])
        time.sleep(0.1)


def unmount():
    global daemon
    if daemon is None:
        return
    if mounted():
        subprocess.run(["fusermount3", "-u", MNT], timeout=120)
    try:
        daemon.wait(timeout=120)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
        subprocess.run(["fusermount3", "-uz", MNT], timeout=60)
    daemon = None


def destroy():
    subprocess.run([STRATA, "--data", STORE, "-q", "destroy", "--yes"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def fio(path, name, rw, bs, size_mib, jobs):
    os.makedirs(path, exist_ok=True)
    out = run(["fio", "--name=" + name, "--directory=" + path,
               "--filename=" + name + ".dat", "--rw=" + rw, "--bs=" + bs,
               "--size=%dM" % size_mib, "--numjobs=%d" % jobs,
               "--ioengine=psync", "--direct=1", "--group_reporting",
               "--invalidate=1", "--output-format=json"])
    j = json.loads(out[out.index("{"):])["jobs"][0]
    side = j["write"] if "write" in rw else j["read"]
    return side["bw"] / 1024.0, side["iops"]


def fio_set(path):
    """seq-write, seq-read (MiB/s), rand-write, rand-read (ops/s)."""
    seqd, rndd = os.path.join(path, "seq"), os.path.join(path, "rand")
    os.makedirs(rndd, exist_ok=True)
    if path.startswith(MNT):
        os.setxattr(rndd, "user.strata.block_size", b"4096")
    r = {}
    r["seq-write"] = fio(seqd, "seq", "write", "1M", MIB, 1)[0]
    r["seq-read"] = fio(seqd, "seq", "read", "1M", MIB, 1)[0]
    # 16 jobs on one file of MIB/4 MiB: the file is laid out first by fio
    r["rand-write"] = fio(rndd, "rand", "randwrite", "4k", MIB // 4 // 16, 16)[1]
    r["rand-read"] = fio(rndd, "rand", "randread", "4k", MIB // 4 // 16, 16)[1]
    return r


def parse(out, prefix):
    r = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0] == prefix:
            r[f[1]] = float(f[2])
    return r


def md_set(kind, path, meta_nvram=False):
    r = {}
    env = dict(os.environ)
    if meta_nvram:
        env["BENCH_POSIX_META_NVRAM"] = "1"
    for ndirs in (1, 100):
        if kind == "ns":
            store = os.path.join(ROOT, "nsmd")
            p = subprocess.run([HELPER, "nsmd", store, str(FILES), str(ndirs)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=1800, env=env)
            if p.returncode != 0:
                raise RuntimeError("nsmd: " + p.stderr[-2000:])
            out = p.stdout
        else:
            d = os.path.join(path, "md%d" % ndirs)
            os.makedirs(d, exist_ok=True)
            out = run([HELPER, "md", d, str(FILES), str(ndirs)])
            os.rmdir(d)
        for k, v in parse(out, "md").items():
            r["%s-%sdir" % (k, ndirs)] = v
    return r


def main():
    for tool in (FUSE, HELPER, STRATA):
        if not os.access(tool, os.X_OK):
            print("bench_posix: SKIP (%s not built)" % tool)
            return 0
    if not os.path.exists("/dev/fuse") or shutil.which("fio") is None:
        print("bench_posix: SKIP (no /dev/fuse or no fio)")
        return 0
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(LOCAL)
    res = {"emulation": "devices: files on the local disk (O_DIRECT), "
                        "NVRAM on /dev/shm; embedded store; 2 cores"}
    try:
        mount()
        res["mount"] = fio_set(MNT)
        res["local"] = fio_set(LOCAL)
        res["direct"] = parse(run([HELPER, "direct",
                                   os.path.join(ROOT, "direct"), str(MIB)]),
                              "direct")
        res["md_mount"] = md_set("mount", MNT)
        res["md_local"] = md_set("local", LOCAL)
        res["md_ns"] = md_set("ns", None)
        # again with the stores' metadata on NVRAM (/dev/shm): a change
        # then costs no sync of the metadata on the disk
        unmount()
        destroy()
        mount(meta_nvram=True)
        res["md_mount_nv"] = md_set("mount", MNT)
        res["md_ns_nv"] = md_set("ns", None, meta_nvram=True)
    finally:
        unmount()
        destroy()
        shutil.rmtree(ROOT, ignore_errors=True)
    ratios = {k: res["mount"][k] / res["direct"][k]
              for k in res["mount"] if res["direct"].get(k)}
    res["ratio_mount_direct"] = ratios
    if JSON:
        print(json.dumps(res, indent=1))
        return 0
    print("POSIX view (strata-fuse on an embedded store) beside the local "
          "file system (ext4) and direct Clovis; %s" % res["emulation"])
    for k, unit in (("seq-write", "MiB/s"), ("seq-read", "MiB/s"),
                    ("rand-write", "ops/s"), ("rand-read", "ops/s")):
        print("  fio %-11s mount %9.1f   local %9.1f   direct %9.1f %-6s "
              "ratio to direct %.2f%s" % (
                  k, res["mount"][k], res["local"][k], res["direct"][k], unit,
                  ratios.get(k, 0),
                  "  (goal 0.7)" if k.startswith("seq") else ""))
    for k in sorted(res["md_mount"]):
        print("  md  %-15s mount %8.0f (meta on NVRAM %8.0f)   local %8.0f"
              "   namespace alone %8.0f (%8.0f) files/s%s" % (
                  k, res["md_mount"][k], res["md_mount_nv"][k],
                  res["md_local"][k], res["md_ns"][k], res["md_ns_nv"][k],
                  "  (goal 5000)" if k.startswith("create") else ""))
    return 0


def stop(*_):
    unmount()
    sys.exit(1)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, stop)
    sys.exit(main())
