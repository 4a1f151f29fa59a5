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
import os, subprocess, sys, time, shutil, boto3
from botocore.config import Config
B, GW, SIZE, N, NCL = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
PERF = sys.argv[6] if len(sys.argv) > 6 else None
S = os.path.join(B, "strata"); C = os.path.join(B, "bench_s3_put")
AK, SK = "AKBENCH0000000000001", "benchsecret0000000000000000000000000000"
d = "/tmp/s3put/run-%d" % os.getpid()
os.makedirs("/tmp/s3put", exist_ok=True)
shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
st = os.path.join(d, "st"); creds = os.path.join(d, "c"); pf = os.path.join(d, "port")
open(creds, "w").write("bench %s %s\n" % (AK, SK))
subprocess.run([S, "--data", st, "--dev-size", os.environ.get("DEVSZ", "512M"), "--meta-nvram", "-q", "pools"], check=True, capture_output=True, timeout=60)
err = open(os.path.join(d, "err"), "w")
p = subprocess.Popen([GW, "--data", st, "--dev-size", os.environ.get("DEVSZ", "512M"), "--port", "0", "--port-file", pf,
                      "--creds", creds, "--layout", "plain", "--etag", "crc64"], stdout=subprocess.DEVNULL, stderr=err)
try:
    t0 = time.time()
    while (not os.path.exists(pf) or not open(pf).read().strip()) and time.time() - t0 < 30:
        time.sleep(0.05)
    port = int(open(pf).read())
    s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % port, aws_access_key_id=AK,
                      aws_secret_access_key=SK, region_name="us-east-1", config=Config(signature_version="s3v4"))
    s3.create_bucket(Bucket="bench")
    def cpu():
        w = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
        return (int(w[11]) + int(w[12])) / os.sysconf("SC_CLK_TCK")
    def go(keys, perf=None, op="PUT"):
        u = [s3.generate_presigned_url("put_object" if op == "PUT" else "get_object", Params={"Bucket": "bench", "Key": k}, ExpiresIn=3600).split(str(port), 1)[1] for k in keys]
        f = os.path.join(d, "urls"); open(f, "w").write("\n".join(u) + "\n")
        pp = None
        if perf:
            pp = subprocess.Popen(["perf", "record", "-F", "2000", "-g", "-o", perf, "-p", str(p.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        c0 = cpu(); r = subprocess.run([C, op, str(port), str(NCL), str(SIZE), f], capture_output=True, text=True, timeout=600); c1 = cpu()
        if pp:
            pp.send_signal(2); pp.wait()
        w = r.stdout.split()
        assert r.returncode == 0 and w[7] == "0", r.stdout + r.stderr
        return float(w[3]), (c1 - c0) / len(keys) * 1e3
    go(["w%d" % i for i in range(min(20, N))])
    secs, cp = go(["k%d" % i for i in range(N)], PERF)
    if os.environ.get("GET"):
        gsecs, gcp = go(["k%d" % i for i in range(N)], None, "GET")
        print("GET size %d n %d clients %d: %.1f MiB/s cpu %.3f ms/GET" % (SIZE, N, NCL, N * SIZE / gsecs / 2**20, gcp), flush=True)
    b = s3.get_object(Bucket="bench", Key="k%d" % (N - 1))["Body"].read()
    assert len(b) == SIZE
    print("size %d n %d clients %d: wall %.3f ms/PUT  %.1f MiB/s  cpu %.3f ms/PUT  load %s" % (SIZE, N, NCL, secs / N * 1e3, N * SIZE / secs / 2**20, cp, open("/proc/loadavg").read().split()[0]), flush=True)
finally:
    p.terminate(); p.wait(timeout=60)
    subprocess.run([S, "--data", st, "-q", "destroy", "--yes"], capture_output=True, timeout=60)
    shutil.rmtree(d, ignore_errors=True)
