#!/usr/bin/env python3
"""s3_put_prof.py BUILD GW SIZE N CLIENTS [PERF_OUT] - one run of the strata-s3
binary GW (a measurement, not a test step): a fresh store with its metadata
on NVRAM (BUILD/strata --meta-nvram; devices of DEVSZ, default 512M, env),
plain layout, etag crc64; 20 warm-up PUTs (at most N), then N PUTs of SIZE
bytes by CLIENTS connections of BUILD/bench_s3_put.  Prints wall ms per PUT,
MiB/s and the gateway's CPU ms per PUT (/proc/PID/stat); with PERF_OUT,
`perf record -F 2000 -g -p GW` over the N PUTs into that file; with GET=1
(env), then N GETs of them by CLIENTS and their MiB/s and CPU per GET.
Work files under /tmp/s3put/run-PID, removed with the store."""
import os, sys, shutil
from s3_gwrun import GwRun
B, GW, SIZE, N, NCL = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
PERF = sys.argv[6] if len(sys.argv) > 6 else None
d = "/tmp/s3put/run-%d" % os.getpid()
os.makedirs("/tmp/s3put", exist_ok=True)
shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
g = GwRun(B, GW, d, os.environ.get("DEVSZ", "512M"))
try:
    g.go(["w%d" % i for i in range(min(20, N))], "PUT", SIZE, NCL)
    secs, cp = g.go(["k%d" % i for i in range(N)], "PUT", SIZE, NCL, PERF)
    if os.environ.get("GET"):
        gsecs, gcp = g.go(["k%d" % i for i in range(N)], "GET", SIZE, NCL)
        print("GET size %d n %d clients %d: %.1f MiB/s cpu %.3f ms/GET" % (SIZE, N, NCL, N * SIZE / gsecs / 2**20, gcp), flush=True)
    b = g.s3.get_object(Bucket="bench", Key="k%d" % (N - 1))["Body"].read()
    assert len(b) == SIZE
    print("size %d n %d clients %d: wall %.3f ms/PUT  %.1f MiB/s  cpu %.3f ms/PUT  load %s" % (SIZE, N, NCL, secs / N * 1e3, N * SIZE / secs / 2**20, cp, open("/proc/loadavg").read().split()[0]), flush=True)
finally:
    g.close()
    shutil.rmtree(d, ignore_errors=True)
