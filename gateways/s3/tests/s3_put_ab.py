#!/usr/bin/env python3
"""s3_put_ab.py BUILD OLD_GW NEW_GW ROUNDS N [CLIENTS [SIZE]] - two strata-s3
binaries, alternated (ROUNDS rounds, a fresh store each run): N PUTs of
SIZE bytes (default 1 MiB; devices of 1 GiB instead of 512 MiB when
N * SIZE is over 1 GiB) by CLIENTS clients (default 1; build's bench_s3_put, one keep-alive
connection each, after 20 warm-up PUTs) on a --meta-nvram
store, plain layout, etag crc64.  Per run: wall ms per PUT, the gateway's
CPU ms per PUT (/proc/PID/stat) and the medians of its STRATA_S3_PROFILE
stages; then the medians over the rounds.  Work files under
/tmp/s3-put-ab-*, removed with the store (and its /dev/shm directory)."""
import os, sys, shutil, statistics, re
from s3_gwrun import GwRun
B, ROUNDS, N = sys.argv[1], int(sys.argv[4]), int(sys.argv[5])
NCL = int(sys.argv[6]) if len(sys.argv) > 6 else 1
SIZE = int(sys.argv[7]) if len(sys.argv) > 7 else 1 << 20
DEV = "1G" if N * SIZE > (1 << 30) else "512M"
GWS = {"old": sys.argv[2], "new": sys.argv[3]}
PR = re.compile(r"created \+(\d+) us, body in \+(\d+) us, data applied \+(\d+) us, record \+(\d+) us")

def one(name, rnd):
    d = "/tmp/s3-put-ab-%d-%s-%d" % (os.getpid(), name, rnd)
    shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
    g = GwRun(B, GWS[name], d, DEV, ["--meta-nvram"], dict(os.environ, STRATA_S3_PROFILE="1"))
    try:
        g.go(["w%d" % i for i in range(20 if SIZE <= 1 << 20 else NCL)], "PUT", SIZE, NCL, timeout=300)
        g.err.flush(); skip = len(PR.findall(open(os.path.join(d, "err")).read()))
        secs, cp = g.go(["k%d" % i for i in range(N)], "PUT", SIZE, NCL, timeout=300)
        wall = secs / N * 1e3
        # every key reads back whole
        b = g.s3.get_object(Bucket="bench", Key="k%d" % (N - 1))["Body"].read()
        assert len(b) == SIZE, "GET of k%d: %d bytes" % (N - 1, len(b))
    finally:
        g.close()
    prof = PR.findall(open(os.path.join(d, "err")).read())[skip:]
    shutil.rmtree(d, ignore_errors=True)
    med = [statistics.median(int(x[k]) for x in prof) for k in range(4)]
    return wall, cp, med

res = {"old": [], "new": []}
for rnd in range(ROUNDS):
    for name in (("old", "new") if rnd % 2 == 0 else ("new", "old")):
        r = one(name, rnd)
        res[name].append(r)
        print("round %d %s: wall %.3f ms/PUT cpu %.3f ms/PUT stages(us, median) created %d body %d data %d record %d  load %s"
              % (rnd, name, r[0], r[1], r[2][0], r[2][1], r[2][2], r[2][3], open("/proc/loadavg").read().split()[0]), flush=True)
for name in ("old", "new"):
    v = res[name]
    print("%s median: wall %.3f ms/PUT (%.3f-%.3f) cpu %.3f ms/PUT  body %d data %d record %d us"
          % (name, statistics.median(x[0] for x in v), min(x[0] for x in v), max(x[0] for x in v),
             statistics.median(x[1] for x in v), statistics.median(x[2][1] for x in v),
             statistics.median(x[2][2] for x in v), statistics.median(x[2][3] for x in v)))
