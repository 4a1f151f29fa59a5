#!/usr/bin/env python3
"""bench_hdf5.py BUILD [--dir D] [--json] [--mib M] [--block B] [--rounds R]
— the HDF5 driver's benchmark (issue 34; docs/hdf5.md).

In one run (BUILD/strata_bench_hdf5, tests/bench/bench_hdf5.c), on one
disk (D, default BUILD/bench-data):

  vfd     an HDF5 file through the Strata driver (H5Pset_fapl_strata, HDF5
          1.10): one float64 dataset of M MiB (default 1024) in 1 MiB
          chunks, one H5Dwrite per chunk, create to H5Fclose (which waits
          for STABLE); read back the same way, H5Fopen to H5Fclose;
  local   the same program on a local file of D's file system (ext4 here;
          HDF5's sec2 driver), the write followed by an fsync, the read
          from the disk (pages dropped first);
  direct  the same bytes as 1 MiB Clovis WRITE and READ ops on an object
          of the same block size (B, default 4096), the writes pipelined
          as the driver pipelines them (each waited EXECUTED, all STABLE
          at the end), the reads one at a time.

R rounds (default 3) of the three one after the other; each figure is the
median of its rounds, each ratio the median of the rounds' ratios (the
two figures of a ratio are measured seconds apart, so a load that comes
and goes between rounds moves both).  Prints each figure beside its
baselines with the ratios: driver / direct Clovis (the issue's goal: 0.8)
and driver / local file; --json prints the same as JSON, each round's
figures included.

Tier emulation: an embedded store; its flash device a file in D written
with O_DIRECT, device model off (the disk's own speed); its NVRAM device
on /dev/shm (PMDK over tmpfs); plain layout on the flash tier.
Everything made is removed at the end, also after a failure.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys

B = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "build"


def opt(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


DIR = os.path.abspath(opt("--dir", os.path.join(B, "bench-data")))
MIB = int(opt("--mib", "1024"))
BLOCK = int(opt("--block", "4096"))
ROUNDS = int(opt("--rounds", "3"))
JSON = "--json" in sys.argv
HELPER = os.path.join(B, "strata_bench_hdf5")
STRATA = os.path.join(B, "strata")
ROOT = os.path.join(DIR, "hdf5-bench")
EMULATION = ("embedded store; flash device a file on the local disk "
             "(ext4, O_DIRECT), device model off; NVRAM device on /dev/shm "
             "(PMDK over tmpfs); plain layout on the flash tier; 2 cores")
child = None  # the helper while it runs
NAMES = ("direct-write", "direct-read", "vfd-write", "vfd-read",
         "local-write", "local-read")


def cleanup():
    """What the helper could not remove after a failure: its store (the
    NVRAM device on /dev/shm with it) and its directory."""
    store = os.path.join(ROOT, "store")
    if os.path.isdir(store) and os.access(STRATA, os.X_OK):
        subprocess.run([STRATA, "--data", store, "-q", "destroy", "--yes"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=300)
    shutil.rmtree(ROOT, ignore_errors=True)


def run_helper():
    """The helper's figures (medians) and its rounds, or None."""
    global child
    child = subprocess.Popen([HELPER, ROOT, str(MIB), str(BLOCK),
                              str(ROUNDS)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=3600)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        print("bench_hdf5: FAIL (no result within an hour)")
        return None
    if child.returncode != 0:
        print("bench_hdf5: FAIL %s" % err.strip()[-2000:])
        return None
    fig = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0] == "h5bench":
            fig[f[1]] = float(f[2])
    rounds = []
    for line in err.splitlines():
        m = re.match(r"round \d+: direct ([\d.]+)/([\d.]+) vfd ([\d.]+)/"
                     r"([\d.]+) local ([\d.]+)/([\d.]+)", line)
        if m:
            rounds.append(dict(zip(NAMES, map(float, m.groups()))))
    if any(n not in fig for n in NAMES) or len(rounds) != ROUNDS:
        print("bench_hdf5: FAIL (figures missing: %s)" % out[-500:])
        return None
    return fig, rounds


def ratio(rounds, a, b):
    """The median over the rounds of a / b in each round: the two ran
    within seconds of each other, so a load on the machine (or on a disk
    shared with other work) that changes between rounds moves both."""
    v = sorted(r[a] / r[b] for r in rounds)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main():
    for tool in (HELPER, STRATA):
        if not os.access(tool, os.X_OK):
            print("bench_hdf5: SKIP (%s not built)" % tool)
            return 0
    cleanup()
    os.makedirs(DIR, exist_ok=True)
    try:
        got = run_helper()
    finally:
        cleanup()
        try:
            os.rmdir(DIR)  # only when nothing else is in it
        except OSError:
            pass
    if got is None:
        return 1
    fig, rounds = got
    res = {"emulation": EMULATION, "mib": MIB, "block": BLOCK,
           "chunk": 1 << 20, "rounds": ROUNDS, "figures_mib_s": fig,
           "rounds_mib_s": rounds,
           "ratio_vfd_direct": {k: ratio(rounds, "vfd-" + k, "direct-" + k)
                                for k in ("write", "read")},
           "ratio_vfd_local": {k: ratio(rounds, "vfd-" + k, "local-" + k)
                               for k in ("write", "read")},
           "goal_vfd_direct": 0.8}
    if JSON:
        print(json.dumps(res, indent=1))
        return 0
    print("HDF5 driver: a %d MiB float64 dataset in 1 MiB chunks, %d-byte "
          "blocks, median of %d rounds; %s" % (MIB, BLOCK, ROUNDS, EMULATION))
    for k in ("write", "read"):
        print("  %-5s  vfd %8.1f MiB/s   direct Clovis %8.1f   ratio %.2f "
              "(goal 0.8)   local (sec2, ext4) %8.1f   ratio %.2f" % (
                  k, fig["vfd-" + k], fig["direct-" + k],
                  res["ratio_vfd_direct"][k], fig["local-" + k],
                  res["ratio_vfd_local"][k]))
    return 0


def stop(*_):
    if child is not None and child.poll() is None:
        child.kill()
        child.wait()
    cleanup()
    sys.exit(1)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, stop)
    sys.exit(main())
