"""bench_python.py BUILD [--dir D] [--json] [--ops N] [--rounds R]
[--gap-ns G] — the Python binding's cost per op beside the C API (issue
34 point 3; goal: under 10 us added per op).

4 KiB reads, one in flight, on an embedded store in D/py-bench (default
BUILD/bench-data; devices: files there, opened with O_DIRECT; the NVRAM
device on /dev/shm, mapped through PMDK, as every store by default): the
same reads of the same object, in the same run, through

  C       BUILD/bench_pyc (tests/bench/bench_pyc.c, make tests), linked
          with BUILD/libstrata.so as the binding is: clovis_obj_op() READ
          into a page-aligned buffer, clovis_op_sync();
  Python  strata.Object.read_into(offset, buf) (the binding: argument
          checks, a Py_buffer view, the op made and run with the GIL
          released, the same two calls), buf a page-aligned buffer (an
          anonymous mmap) as the C side's;

and, for information, the same C read called once per read from a Python
loop through ctypes (BUILD/bench_pyc.so: no binding code; what any Python
caller pays), Object.read_into() into a bytearray (not page-aligned: an
O_DIRECT device then reads through the file tier's bounce buffer), and
the C loop with G ns (--gap-ns, default 2,000) of busy CPU after each
read: a C caller that does some work between reads, as a Python loop
does (the library's threads then go to sleep between reads, and are
woken, often on the other CPU, at the next).

Over objects of two tiers, nvram (a memory-mapped device: the op's cost
is mostly the library's, so the binding's share shows) and flash (a file
read with O_DIRECT), each twice: the processes free to run on any CPU,
and every side confined to one CPU (sched_setaffinity before the store
opens, so that the library's threads share it): a read's threads then
never migrate, which separates the binding's cost from the scheduler's
placement of the threads of a busier process.  R rounds (default 7), the
sides one after the other in each round, N reads each (default 10,000).
Each figure is the median over the rounds; the added time is the median
of the rounds' differences (Python - C, taken seconds apart), so that
load on the machine between rounds cancels (the difference of the
medians is printed beside it: far apart, the machine was too noisy).  Beside each figure:
its C baseline, the ratio to it, and the context switches and CPU
migrations per read of each side (getrusage, /proc/self/task/*/sched).
--json prints the same as JSON.

The binding comes from the Python running this script if `import strata`
finds one linked to BUILD; else the script makes a virtual environment in
a temporary directory (tests/pyvenv.sh, offline) with it installed
(STRATA_BUILD=BUILD) and runs itself there.  Everything it made is
removed at the end (the store, its NVRAM device in /dev/shm too, with
strata.destroy_store()).
"""
import ctypes
import json
import mmap
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

B = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") \
    else "build"
B = os.path.abspath(B)
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def opt(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


DIR = os.path.abspath(opt("--dir", os.path.join(B, "bench-data")))
JSON = "--json" in sys.argv
OPS = int(opt("--ops", "10000"))
ROUNDS = int(opt("--rounds", "7"))
BLOCKS = 1024  # blocks of each object the reads cycle over
BS = 4096
GOAL_US = 10.0
GAP_NS = int(opt("--gap-ns", "2000"))


def run(cmd, env=None, timeout=1800):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                 p.stderr.strip()[-2000:]))
    return p.stdout


def binding_here():
    """True when `import strata` gives a binding linked to BUILD."""
    try:
        import strata
    except ImportError:
        return False
    out = subprocess.run(["readelf", "-d", strata._strata.__file__],
                         stdout=subprocess.PIPE, text=True).stdout
    return "[%s]" % B in out


def in_venv():
    """Make a venv with the binding in a temporary directory, run this
    script there, remove the venv.  Returns the exit status."""
    tmp = tempfile.mkdtemp(prefix="strata-pybench-")
    try:
        venv = os.path.join(tmp, "venv")
        run(["bash", os.path.join(TOP, "tests", "pyvenv.sh"), venv,
             "setuptools"])
        env = dict(os.environ, STRATA_BUILD=B, TMPDIR=tmp)
        run([os.path.join(venv, "bin", "python3"), "-m", "pip", "install",
             "-q", "--disable-pip-version-check", "--no-index",
             "--find-links", os.path.join(TOP, ".venv", "wheels"),
             os.path.join(TOP, "clovis", "python")], env=env)
        env["STRATA_PYBENCH_CHILD"] = "1"
        return subprocess.call([os.path.join(venv, "bin", "python3")] +
                               sys.argv, env=env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


EXE = os.path.join(B, "bench_pyc")  # tests/bench/module.mk (make tests)
ALL_CPUS = sorted(os.sched_getaffinity(0))
ONE_CPU = [ALL_CPUS[-1]]


def sched_counts():
    """(context switches, CPU migrations) of this process so far: every
    thread's switches (getrusage), the live threads' migrations
    (se.nr_migrations; 0 where the kernel does not show it)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    mig = 0.0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/sched" % tid) as f:
                for line in f:
                    if line.startswith("se.nr_migrations"):
                        mig += float(line.split(":")[1])
        except OSError:
            pass
    return ru.ru_nvcsw + ru.ru_nivcsw, mig


def timed(read, args):
    """Warm up over every block, then time OPS reads: (us per read,
    switches per read, migrations per read)."""
    for a in args[:BLOCKS]:
        read(a)
    sw0, mg0 = sched_counts()
    t0 = time.perf_counter_ns()
    for a in args:
        read(a)
    t1 = time.perf_counter_ns()
    sw1, mg1 = sched_counts()
    return ((t1 - t0) / OPS / 1000.0, (sw1 - sw0) / OPS, (mg1 - mg0) / OPS)


def c_round(store, oid, gap_ns=0):
    """The C loop, its own process (it inherits this thread's CPUs); with
    gap_ns of busy CPU after each read."""
    f = run([EXE, store, oid, str(OPS), str(BLOCKS), str(gap_ns)]).split()
    return float(f[1]) / 1000.0, float(f[3]), float(f[5])


def ctypes_round(store, oid):
    """The C read (bench_pyc.so's pyc_read) called once per read from a
    Python loop through ctypes: what any Python caller pays, without the
    binding's own code."""
    lib = ctypes.CDLL(EXE + ".so")
    lib.pyc_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.pyc_read.argtypes = [ctypes.c_ulong]
    lib.pyc_read.restype = ctypes.c_int
    if lib.pyc_open(store.encode(), oid.encode()) != 0:
        raise RuntimeError("bench_pyc.so: pyc_open failed")
    rd = lib.pyc_read

    def read(b):
        if rd(b) != 0:
            raise RuntimeError("bench_pyc.so: pyc_read failed")

    try:
        return timed(read, [i % BLOCKS for i in range(OPS)])
    finally:
        lib.pyc_close()


def py_round(strata, store, oid, aligned=True):
    """One round of reads through Object.read_into(): into a page-aligned
    buffer (an anonymous mmap), like the C side's, or into a bytearray."""
    with strata.Store(store) as st:
        ri = st.object(oid).read_into
        buf = mmap.mmap(-1, BS) if aligned else bytearray(BS)
        return timed(lambda off: ri(off, buf),
                     [(i % BLOCKS) * BS for i in range(OPS)])


def figures(rounds):
    """{side: {us, switches, migrations}} medians, the paired added time
    and the ratios to C."""
    out = {}
    for side in rounds[0]:
        col = [r[side] for r in rounds]
        out[side] = {"us": round(statistics.median(c[0] for c in col), 2),
                     "switches_per_op": round(
                         statistics.median(c[1] for c in col), 2),
                     "migrations_per_op": round(
                         statistics.median(c[2] for c in col), 3),
                     "rounds_us": [round(c[0], 2) for c in col]}
    c = out["c"]["us"]
    for side in out:
        out[side]["ratio_to_c"] = round(out[side]["us"] / c, 3)
    out["added_us"] = round(statistics.median(
        r["python"][0] - r["c"][0] for r in rounds), 2)
    out["added_of_medians_us"] = round(out["python"]["us"] - c, 2)
    out["added_over_ctypes_us"] = round(statistics.median(
        r["python"][0] - r["ctypes"][0] for r in rounds), 2)
    return out


def measure():
    import strata

    store = os.path.join(DIR, "py-bench")
    if os.path.exists(store):
        strata.destroy_store(store)
    os.makedirs(DIR, exist_ok=True)
    res = {"ops": OPS, "rounds": ROUNDS, "block": BS, "goal_added_us": GOAL_US,
           "gap_ns": GAP_NS,
           "emulation": "embedded store; devices: files in %s (O_DIRECT), "
                        "NVRAM on /dev/shm (PMDK); %d cores, load %.1f"
                        % (DIR, os.cpu_count(), os.getloadavg()[0]),
           "one_cpu": ONE_CPU[0], "tiers": {}}
    try:
        objs = {}
        with strata.Store(store, create=True) as st:
            block = bytes(range(256)) * (BS // 256)
            for tier in ("nvram", "flash"):
                o = st.create_object("@py-bench-" + tier, block_size=BS,
                                     tier=tier)
                for i in range(0, BLOCKS, 64):
                    o.write(i * BS, block * 64)
                objs[tier] = str(o.id)
        for tier, oid in objs.items():
            for cpus, mode in ((ALL_CPUS, "any_cpu"), (ONE_CPU, "one_cpu")):
                rounds = []
                os.sched_setaffinity(0, cpus)
                try:
                    for _ in range(ROUNDS):
                        rounds.append({
                            "c": c_round(store, oid),
                            "c_gap": c_round(store, oid, GAP_NS),
                            "python": py_round(strata, store, oid),
                            "ctypes": ctypes_round(store, oid),
                            "python_bytearray": py_round(strata, store, oid,
                                                         aligned=False)})
                finally:
                    os.sched_setaffinity(0, ALL_CPUS)
                res["tiers"].setdefault(tier, {})[mode] = figures(rounds)
    finally:
        if os.path.exists(store):
            strata.destroy_store(store)
        try:
            os.rmdir(DIR)
        except OSError:
            pass
    res["ok"] = {mode: all(t[mode]["added_us"] < GOAL_US
                           for t in res["tiers"].values())
                 for mode in ("any_cpu", "one_cpu")}
    return res


WHAT = {"c_gap": "C, %.1f us of CPU work after each read" % (GAP_NS / 1e3),
        "python": "Object.read_into (the binding)",
        "ctypes": "C read from a Python loop (ctypes, no binding)",
        "python_bytearray": "read_into a bytearray (not page-aligned)"}


def main():
    for f in (EXE, EXE + ".so"):
        if not os.access(f, os.R_OK):
            print("bench_python: SKIP (%s not built: make tests)" % f)
            return 0
    if not os.environ.get("STRATA_PYBENCH_CHILD") and not binding_here():
        return in_venv()
    res = measure()
    if JSON:
        print(json.dumps(res, indent=1))
        return 0
    print("Python binding beside the C API: 4 KiB reads, 1 in flight, %d "
          "reads x %d rounds, medians;\n  %s" % (OPS, ROUNDS,
                                                  res["emulation"]))
    for tier, modes in res["tiers"].items():
        for mode, t in modes.items():
            c = t["c"]
            print("  read 4K %s, %s:  C %6.2f us/op  (%.1f switches, %.2f "
                  "migrations per op)" % (
                      tier, "any CPU" if mode == "any_cpu" else
                      "one CPU (%d)" % res["one_cpu"], c["us"],
                      c["switches_per_op"], c["migrations_per_op"]))
            for side in ("c_gap", "python", "ctypes", "python_bytearray"):
                f = t[side]
                print("    %-48s %6.2f us/op  ratio %.2f  (%.1f, %.2f)" % (
                    WHAT[side], f["us"], f["ratio_to_c"],
                    f["switches_per_op"], f["migrations_per_op"]))
            print("    added by Python + binding %5.2f us/op (goal < %.0f: "
                  "%s; difference of the medians %.2f); by the binding over "
                  "ctypes %5.2f us/op" % (
                      t["added_us"], GOAL_US,
                      "met" if t["added_us"] < GOAL_US else "MISSED",
                      t["added_of_medians_us"], t["added_over_ctypes_us"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
