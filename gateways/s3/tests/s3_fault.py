#!/usr/bin/env python3
"""s3_fault.py TMPDIR STRATA_S3 STRATA — device I/O errors under the gateway.

On its own store (TMPDIR/fault), served by STRATA_S3-test (the gateway over
the fault-point library, points armed by STRATA_FAULT):

  * tier.write armed: a PUT of 1 MiB (one write op after CREATE) and of
    3 MiB (four ops) each fail with 500 InternalError; the keys are not
    visible (HEAD 404), an existing key keeps its record, and once the
    gateway is stopped the devices' free space is what it was before
    (the new objects were freed, nothing leaked);
  * tier.read armed (a fresh store): a GET of a 1 MiB object (read in one op before the
    reply is started, sent from the read buffer) gets a whole 500
    InternalError reply, not a 200 cut short; an inline object is still
    served.

Ends with "N passed, N failed".
"""
import json
import os
import shutil
import signal
import subprocess
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

T, GW, S = sys.argv[1:4]
GWT = GW + "-test"
D = os.path.join(T, "fault")
NAME, AK, SK = [l.split() for l in open(os.path.join(T, "creds")) if l.strip()][0]
MiB = 1 << 20
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   fault: %s" % name)
    else:
        failed += 1
        print("FAIL fault: %s %s" % (name, detail))


def start(gw, fault=None):
    pf = os.path.join(T, "fault.port")
    if os.path.exists(pf):
        os.unlink(pf)
    env = dict(os.environ)
    env.pop("STRATA_FAULT", None)
    if fault:
        env["STRATA_FAULT"] = fault
    p = subprocess.Popen([gw, "--data", D, "--dev-size", "128M", "--port", "0", "--port-file", pf,
                          "--creds", os.path.join(T, "creds"), "--timeout", "5"],
                         stdout=subprocess.PIPE, stderr=open(os.path.join(T, "fault.out"), "a"),
                         text=True, env=env)
    p.stdout.readline()
    port = int(open(pf).read())
    return p, boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % port, aws_access_key_id=AK,
                           aws_secret_access_key=SK, region_name="us-east-1",
                           config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                         signature_version="s3v4"))


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(60)


def free_bytes():
    out = subprocess.run([S, "--data", D, "--json", "devices"], capture_output=True, text=True,
                         check=True).stdout
    return sum(d["free_bytes"] for d in json.loads(out))


def status(fn, **kw):
    try:
        fn(**kw)
        return 200, None
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")


def fresh():
    subprocess.run([S, "--data", D, "-q", "destroy", "--yes"], capture_output=True)
    shutil.rmtree(D, ignore_errors=True)


fresh()
p = None
try:
    keep, small, big = os.urandom(MiB), b"inline bytes", os.urandom(MiB)
    p, s3 = start(GW)
    s3.create_bucket(Bucket="fault")
    etag = s3.put_object(Bucket="fault", Key="keep", Body=keep)["ETag"]
    stop(p)
    before = free_bytes()

    p, s3 = start(GWT, "tier.write")
    for key, n in (("new1", MiB), ("new3", 3 * MiB), ("keep", MiB)):
        st, code = status(s3.put_object, Bucket="fault", Key=key, Body=os.urandom(n))
        check("PUT %s (%d MiB) with device writes failing: 500" % (key, n // MiB),
              st == 500 and code == "InternalError", (st, code))
    for key in ("new1", "new3"):
        check("failed PUT %s not visible" % key, status(s3.head_object, Bucket="fault", Key=key)[0] == 404)
    h = s3.head_object(Bucket="fault", Key="keep")
    check("keep's record unchanged by its failed replacement", h["ETag"] == etag and h["ContentLength"] == MiB,
          (h["ETag"], etag))
    stop(p)
    after = free_bytes()
    check("free space unchanged by the failed PUTs", after == before, (before, after))

    # device reads failing, on a fresh store (the write faults above leave the
    # engine counting those devices as failed)
    fresh()
    p, s3 = start(GW)
    s3.create_bucket(Bucket="fault")
    s3.put_object(Bucket="fault", Key="small", Body=small)
    s3.put_object(Bucket="fault", Key="big", Body=big)
    stop(p)
    p, s3 = start(GWT, "tier.read")
    st, code = status(s3.get_object, Bucket="fault", Key="big")
    check("GET 1 MiB with device reads failing: a whole 500 reply", st == 500 and code == "InternalError",
          (st, code))
    check("inline object still served with device reads failing",
          s3.get_object(Bucket="fault", Key="small")["Body"].read() == small)
    stop(p)
    p, s3 = start(GW)
    check("GET 1 MiB once reads work again",
          s3.get_object(Bucket="fault", Key="big")["Body"].read() == big)
    stop(p)
finally:  # the store (and its /dev/shm device) removed whatever happened
    if p is not None and p.poll() is None:
        stop(p)
    fresh()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
