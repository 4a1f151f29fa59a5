"""s3_gwrun.py - shared by the gateway measurements s3_put_ab.py and
s3_put_prof.py (not test steps): one strata-s3 run on a fresh store.

GwRun(BUILD, GW, DIR, DEV, args, env) makes a store in DIR/st with its
metadata on NVRAM (BUILD/strata --meta-nvram pools, devices of DEV),
starts the gateway binary GW on it (port 0, plain layout, etag crc64, and
the extra args) with its stderr in DIR/err, and waits for its port (at
most 30 s); .s3 is a boto3 client with bucket "bench" made, .cpu() the
gateway's user+system CPU seconds (/proc/PID/stat), .go() one batch of
requests by BUILD/bench_s3_put.  .close() stops the gateway and destroys
the store (its /dev/shm directory too); DIR is the caller's."""
import os, subprocess, time, boto3
from botocore.config import Config

AK, SK = "AKBENCH0000000000001", "benchsecret0000000000000000000000000000"


class GwRun:
    def __init__(self, build, gw, d, dev, args=(), env=None):
        self.S = os.path.join(build, "strata")
        self.C = os.path.join(build, "bench_s3_put")
        self.d = d
        self.st = os.path.join(d, "st")
        creds, pf = os.path.join(d, "c"), os.path.join(d, "port")
        open(creds, "w").write("bench %s %s\n" % (AK, SK))
        subprocess.run([self.S, "--data", self.st, "--dev-size", dev, "--meta-nvram", "-q", "pools"],
                       check=True, capture_output=True, timeout=60)
        self.err = open(os.path.join(d, "err"), "w")
        self.p = subprocess.Popen([gw, "--data", self.st, "--dev-size", dev, "--port", "0", "--port-file", pf,
                                   "--creds", creds, "--layout", "plain", "--etag", "crc64"] + list(args),
                                  stdout=subprocess.DEVNULL, stderr=self.err, env=env)
        try:
            t0 = time.time()
            while (not os.path.exists(pf) or not open(pf).read().strip()) and time.time() - t0 < 30:
                time.sleep(0.05)
            self.port = int(open(pf).read())
            self.s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % self.port, aws_access_key_id=AK,
                                   aws_secret_access_key=SK, region_name="us-east-1",
                                   config=Config(signature_version="s3v4"))
            self.s3.create_bucket(Bucket="bench")
        except BaseException:
            self.close()
            raise

    def cpu(self):
        w = open("/proc/%d/stat" % self.p.pid).read().rsplit(")", 1)[1].split()
        return (int(w[11]) + int(w[12])) / os.sysconf("SC_CLK_TCK")

    def go(self, keys, op, size, clients, perf=None, timeout=600):
        """op (PUT or GET) of every key by `clients` connections: (seconds
        of the batch, gateway CPU ms per request); with perf, `perf record`
        of the gateway over the batch into that file."""
        u = [self.s3.generate_presigned_url("put_object" if op == "PUT" else "get_object",
                                            Params={"Bucket": "bench", "Key": k},
                                            ExpiresIn=3600).split(str(self.port), 1)[1] for k in keys]
        f = os.path.join(self.d, "urls")
        open(f, "w").write("\n".join(u) + "\n")
        pp = None
        if perf:
            pp = subprocess.Popen(["perf", "record", "-F", "2000", "-g", "-o", perf, "-p", str(self.p.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        c0 = self.cpu()
        r = subprocess.run([self.C, op, str(self.port), str(clients), str(size), f],
                           capture_output=True, text=True, timeout=timeout)
        c1 = self.cpu()
        if pp:
            pp.send_signal(2)
            pp.wait()
        w = r.stdout.split()
        assert r.returncode == 0 and w[7] == "0", r.stdout + r.stderr
        return float(w[3]), (c1 - c0) / len(keys) * 1e3

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=60)
        self.err.flush()
        subprocess.run([self.S, "--data", self.st, "-q", "destroy", "--yes"], capture_output=True, timeout=60)
