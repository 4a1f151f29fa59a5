#!/usr/bin/env python3
"""s3_clients.py ENDPOINT CREDS AWS S3CMD — the three clients users have.

Each of Debian's aws cli (AWS), Debian's s3cmd (S3CMD) and boto3 (this
Python's) runs the everyday commands against the gateway: make a bucket,
copy a file up and down, list, sync a directory tree up and back down,
presign a URL and fetch it without credentials, show an object's details
(s3cmd info, aws s3api head-object and get-object-acl, boto3 head_object
and get_object_acl), and remove the bucket.  Every command must succeed
and every byte must come back; "info" must describe the object, not
return its bytes (issue 26: s3cmd info of a 100 MiB object downloaded it
and crashed parsing it).

Users come from CREDS (NAME AKEY SKEY lines; the first is used).
Ends with "N passed, N failed"; exit 1 on any failure.
"""
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

import boto3
from botocore.config import Config

EP, CREDS, AWS, S3CMD = sys.argv[1:5]
with open(CREDS) as f:
    _, AK, SK = f.readline().split()[:3]
HOSTPORT = EP.split("://", 1)[1]
passed = failed = 0
TMO = 300  # one client command, seconds: generous for a loaded machine


def ok(what):
    global passed
    passed += 1
    print("ok   " + what, flush=True)


def no(what):
    global failed
    failed += 1
    print("FAIL " + what, flush=True)


def run(argv, env=None):
    """Run a client command: (rc, stdout+stderr)."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=TMO, env=env)
        return p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return -1, "timed out after %d s" % TMO


def check(what, rc_out, cond=True):
    rc, out = rc_out
    if rc == 0 and cond:
        ok(what)
    else:
        no("%s: rc %d: %s" % (what, rc, out[-400:]))
    return rc == 0 and cond


def tree(root):
    """A small tree to sync: files of several sizes, in subdirectories."""
    sizes = {"a.txt": 10, "b.bin": 70000, "d1/c.bin": 1 << 20,
             "d1/d2/e.bin": 3 * (1 << 20) + 17, "d1/empty": 0}
    for name, n in sizes.items():
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(os.urandom(n))
    return sorted(sizes)


def same_tree(a, b, names):
    for n in names:
        pa, pb = os.path.join(a, n), os.path.join(b, n)
        if not os.path.exists(pb) or not filecmp.cmp(pa, pb, shallow=False):
            return False
    return True


def fetch(url):
    """GET url without credentials: the body, or None."""
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.read()
    except Exception as e:  # noqa: BLE001 - reported by the caller
        print("  fetch %s: %s" % (url[:120], e))
        return None


def aws_cli(t):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1",
               AWS_CONFIG_FILE=os.path.join(t, "none"),
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(t, "none"))
    a = [AWS, "--endpoint-url", EP]
    b = "clients-aws"
    src, back = os.path.join(t, "aws-src"), os.path.join(t, "aws-back")
    names = tree(src)
    f = os.path.join(src, "d1/d2/e.bin")
    check("aws s3 mb", run(a + ["s3", "mb", "s3://" + b], env))
    check("aws s3 cp up", run(a + ["s3", "cp", f, "s3://%s/one" % b], env))
    down = os.path.join(t, "aws-one")
    r = run(a + ["s3", "cp", "s3://%s/one" % b, down], env)
    check("aws s3 cp down (cmp)", r,
          r[0] == 0 and filecmp.cmp(f, down, shallow=False))
    r = run(a + ["s3", "ls", "s3://%s/" % b], env)
    check("aws s3 ls", r, "one" in r[1])
    check("aws s3 sync up", run(a + ["s3", "sync", src, "s3://%s/tree" % b],
                                env))
    r = run(a + ["s3", "sync", "s3://%s/tree" % b, back], env)
    check("aws s3 sync down (every file cmp)", r,
          r[0] == 0 and same_tree(src, back, names))
    r = run(a + ["s3", "sync", src, "s3://%s/tree" % b], env)
    check("aws s3 sync again: nothing to copy", r, "upload:" not in r[1])
    r = run(a + ["s3", "presign", "s3://%s/one" % b, "--expires-in", "600"],
            env)
    body = fetch(r[1].strip()) if r[0] == 0 else None
    with open(f, "rb") as fh:
        want = fh.read()
    check("aws s3 presign + GET without credentials", r, body == want)
    r = run(a + ["s3api", "head-object", "--bucket", b, "--key", "one"], env)
    check("aws s3api head-object (info)", r,
          '"ContentLength": %d' % len(want) in r[1])
    r = run(a + ["s3api", "get-object-acl", "--bucket", b, "--key", "one"],
            env)
    check("aws s3api get-object-acl (info)", r, "FULL_CONTROL" in r[1])
    check("aws s3 rb --force", run(a + ["s3", "rb", "--force",
                                        "s3://" + b], env))
    r = run(a + ["s3", "ls"], env)
    check("aws s3 ls: bucket gone", r, b not in r[1])


def s3cmd(t):
    c = [S3CMD, "--no-ssl", "--host=" + HOSTPORT,
         "--host-bucket=" + HOSTPORT, "--access_key=" + AK,
         "--secret_key=" + SK, "--region=us-east-1", "-c", "/dev/null"]
    b = "clients-s3cmd"
    src, back = os.path.join(t, "sc-src"), os.path.join(t, "sc-back")
    names = tree(src)
    f = os.path.join(src, "d1/d2/e.bin")
    check("s3cmd mb", run(c + ["mb", "s3://" + b]))
    check("s3cmd put", run(c + ["put", f, "s3://%s/one" % b]))
    down = os.path.join(t, "sc-one")
    r = run(c + ["get", "--force", "s3://%s/one" % b, down])
    check("s3cmd get (cmp)", r,
          r[0] == 0 and filecmp.cmp(f, down, shallow=False))
    r = run(c + ["ls", "s3://%s" % b])
    check("s3cmd ls", r, "s3://%s/one" % b in r[1])
    check("s3cmd sync up", run(c + ["sync", src + "/", "s3://%s/tree/" % b]))
    os.makedirs(back, exist_ok=True)
    r = run(c + ["sync", "s3://%s/tree/" % b, back + "/"])
    check("s3cmd sync down (every file cmp)", r,
          r[0] == 0 and same_tree(src, back, names))
    r = run(c + ["info", "s3://%s/one" % b])
    check("s3cmd info (object: size, no body)", r,
          "File size:" in r[1] and str(os.path.getsize(f)) in r[1]
          and len(r[1]) < 20000)
    r = run(c + ["info", "s3://%s" % b])
    check("s3cmd info (bucket)", r, "Location:" in r[1])
    r = run(c + ["signurl", "s3://%s/one" % b, "+600"])
    body = fetch(r[1].strip().splitlines()[-1]) if r[0] == 0 else None
    with open(f, "rb") as fh:
        check("s3cmd signurl + GET without credentials", r,
              body == fh.read())
    check("s3cmd rb --recursive", run(c + ["rb", "--recursive", "--force",
                                           "s3://" + b]))
    r = run(c + ["ls"])
    check("s3cmd ls: bucket gone", r, "s3://%s" % b not in r[1])


def boto(t):
    s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK,
                      aws_secret_access_key=SK, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}))
    b = "clients-boto3"
    src, back = os.path.join(t, "bo-src"), os.path.join(t, "bo-back")
    names = tree(src)

    def step(what, fn):
        try:
            if fn():
                ok(what)
            else:
                no(what)
        except Exception as e:  # noqa: BLE001 - the failure is the report
            no("%s: %r" % (what, e))

    f = os.path.join(src, "d1/d2/e.bin")
    with open(f, "rb") as fh:
        want = fh.read()
    step("boto3 create_bucket (mb)",
         lambda: s3.create_bucket(Bucket=b) is not None)
    step("boto3 upload_file (cp up)",
         lambda: s3.upload_file(f, b, "one") is None)

    def cp_down():
        d = os.path.join(t, "bo-one")
        s3.download_file(b, "one", d)
        return filecmp.cmp(f, d, shallow=False)
    step("boto3 download_file (cp down, cmp)", cp_down)
    step("boto3 list_objects_v2 (ls)",
         lambda: [o["Key"] for o in s3.list_objects_v2(Bucket=b)
                  .get("Contents", [])] == ["one"])

    def sync():
        for n in names:
            s3.upload_file(os.path.join(src, n), b, "tree/" + n)
        pg = s3.get_paginator("list_objects_v2")
        keys = [o["Key"] for p in pg.paginate(Bucket=b, Prefix="tree/")
                for o in p.get("Contents", [])]
        for k in keys:
            d = os.path.join(back, k[len("tree/"):])
            os.makedirs(os.path.dirname(d), exist_ok=True)
            s3.download_file(b, k, d)
        return sorted(k[len("tree/"):] for k in keys) == names and \
            same_tree(src, back, names)
    step("boto3 sync up and down (every file cmp)", sync)
    step("boto3 generate_presigned_url + GET without credentials",
         lambda: fetch(s3.generate_presigned_url(
             "get_object", Params={"Bucket": b, "Key": "one"},
             ExpiresIn=600)) == want)
    step("boto3 head_object (info)",
         lambda: s3.head_object(Bucket=b, Key="one")["ContentLength"]
         == len(want))
    step("boto3 get_object_acl (info)",
         lambda: s3.get_object_acl(Bucket=b, Key="one")["Grants"][0]
         ["Permission"] == "FULL_CONTROL")

    def rb():
        pg = s3.get_paginator("list_objects_v2")
        for p in pg.paginate(Bucket=b):
            for o in p.get("Contents", []):
                s3.delete_object(Bucket=b, Key=o["Key"])
        s3.delete_bucket(Bucket=b)
        return b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]
    step("boto3 delete_bucket (rb)", rb)


def main():
    t = tempfile.mkdtemp(prefix="strata-s3-clients.")
    try:
        for part in (aws_cli, s3cmd, boto):
            try:
                part(t)
            except Exception as e:  # noqa: BLE001 - the failure is the report
                no("%s: %r" % (part.__name__, e))
    finally:
        shutil.rmtree(t, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
