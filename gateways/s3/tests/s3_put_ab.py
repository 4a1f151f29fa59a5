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
import os, subprocess, sys, time, shutil, statistics, re, boto3
from botocore.config import Config
B, ROUNDS, N = sys.argv[1], int(sys.argv[4]), int(sys.argv[5])
NCL = int(sys.argv[6]) if len(sys.argv) > 6 else 1
SIZE = int(sys.argv[7]) if len(sys.argv) > 7 else 1 << 20
DEV = "1G" if N * SIZE > (1 << 30) else "512M"
GWS = {"old": sys.argv[2], "new": sys.argv[3]}
S = os.path.join(B, "strata"); C = os.path.join(B, "bench_s3_put")
AK, SK = "AKBENCH0000000000001", "benchsecret0000000000000000000000000000"
PR = re.compile(r"created \+(\d+) us, body in \+(\d+) us, data applied \+(\d+) us, record \+(\d+) us")

def one(name, rnd):
    d = "/tmp/s3-put-ab-%d-%s-%d" % (os.getpid(), name, rnd)
    shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
    st = os.path.join(d, "st"); creds = os.path.join(d, "c"); pf = os.path.join(d, "port")
    open(creds, "w").write("bench %s %s\n" % (AK, SK))
    subprocess.run([S, "--data", st, "--dev-size", DEV, "--meta-nvram", "-q", "pools"], check=True, capture_output=True, timeout=60)
    env = dict(os.environ, STRATA_S3_PROFILE="1")
    err = open(os.path.join(d, "err"), "w")
    p = subprocess.Popen([GWS[name], "--data", st, "--dev-size", DEV, "--port", "0", "--port-file", pf,
                          "--creds", creds, "--layout", "plain", "--etag", "crc64", "--meta-nvram"],
                         stdout=subprocess.DEVNULL, stderr=err, env=env)
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
        def go(keys):
            u = [s3.generate_presigned_url("put_object", Params={"Bucket": "bench", "Key": k}, ExpiresIn=3600).split(str(port), 1)[1] for k in keys]
            f = os.path.join(d, "urls"); open(f, "w").write("\n".join(u) + "\n")
            c0 = cpu(); r = subprocess.run([C, "PUT", str(port), str(NCL), str(SIZE), f], capture_output=True, text=True, timeout=300); c1 = cpu()
            w = r.stdout.split()
            assert r.returncode == 0 and w[7] == "0", r.stdout + r.stderr
            return float(w[3]) / len(keys) * 1e3, (c1 - c0) / len(keys) * 1e3
        go(["w%d" % i for i in range(20 if SIZE <= 1 << 20 else NCL)])
        err.flush(); skip = len(PR.findall(open(os.path.join(d, "err")).read()))
        wall, cp = go(["k%d" % i for i in range(N)])
        # every key reads back whole
        b = s3.get_object(Bucket="bench", Key="k%d" % (N - 1))["Body"].read()
        assert len(b) == SIZE, "GET of k%d: %d bytes" % (N - 1, len(b))
    finally:
        p.terminate(); p.wait(timeout=60)
        subprocess.run([S, "--data", st, "-q", "destroy", "--yes"], capture_output=True, timeout=60)
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
