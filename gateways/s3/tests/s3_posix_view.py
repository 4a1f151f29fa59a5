#!/usr/bin/env python3
"""s3_posix_view.py TMPDIR BUILD (embedded | cluster CLUSTER_FILE) — view
buckets: a POSIX namespace's directory served as an S3 bucket
(gateways/s3/README.md, "POSIX view buckets").

The POSIX side is BUILD/s3_posix_tool (the namespace's API, ns.h); the S3
side boto3 and Debian's aws cli ($STRATA_AWS) on BUILD/strata-s3.  Users
are TMPDIR/creds (the first one owns the view buckets).

embedded: the store TMPDIR/pv (a namespace of 2 MiB blocks: more than the
gateway's 1 MiB write and read ops) is opened by one process at a time, so
the tool and the gateway take turns: a file written through the namespace is
read back byte for byte by GET, ranged GET, HEAD and aws cli; objects PUT by
boto3 and aws cli are read back by the tool (ns_read) with the same MD5 and
their xattrs; a file rewritten through POSIX reads back new through S3;
listings in S3 key order over a tree of tricky names (a directory "a" sorts
as "a/": after "a.txt", before "a0") against a model, with prefixes,
delimiters, pages, markers; refusals (keys that cannot be paths, a key
naming a directory, a file in the key's path, CreateBucket, DeleteBucket,
multipart, copy into the view, tagging, versioning), CopyObject out of the
view, deletes, conditionals, ListBuckets merging view buckets; gateway
configurations refused (exit 2); and the kill test: strata-s3-test killed
before the link (the object reclaimed at restart, free space as before)
and after it (the file kept, also when renamed through POSIX before the
restart).

cluster: a cluster (CLUSTER_FILE; a namespace of 64 KiB blocks) serves the
tool and the gateway at once:
what each side sees during the other's update (README.md "What each side
sees during concurrent updates"): an S3 PUT read through the namespace at
once, a POSIX write read through GET with the size written back, GETs during
POSIX rewrites (each block old or new), POSIX reads during S3 replacements
(old or new whole), a file open through POSIX while S3 replaces it.

Ends with "N passed, N failed".
"""
import atexit
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import traceback

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

T, B, MODE = sys.argv[1:4]
CL = sys.argv[4] if MODE == "cluster" else None
GW = os.path.join(B, "strata-s3")
GWT = os.path.join(B, "strata-s3-test")
TOOL = os.path.join(B, "s3_posix_tool")
S = os.path.join(B, "strata")
D = os.path.join(T, "pv")
STORE = ["--cluster", CL] if CL else ["--data", D]
CONT = "@pvc" if CL else "@pv"
users = [l.split() for l in open(os.path.join(T, "creds")) if l.strip() and l[0] != "#"]
MiB = 1 << 20
passed = failed = 0
procs = []  # every gateway and tool started: killed at exit


def _kill_all():
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


atexit.register(_kill_all)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   posix view: %s" % name)
    else:
        failed += 1
        print("FAIL posix view: %s %s" % (name, str(detail)[:600]))
    sys.stdout.flush()
    return cond


def md5(b):
    return hashlib.md5(b).hexdigest()


def tool(*args, store=None):
    """Run the tool once: (rc, stdout stripped, stderr)."""
    r = subprocess.run([TOOL] + (store or STORE) + [CONT] + list(args), capture_output=True,
                       text=True, timeout=300)
    return r.returncode, r.stdout.strip(), r.stderr.strip()


def fwrite(name, data):
    p = os.path.join(T, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def fread(name):
    with open(os.path.join(T, name), "rb") as f:
        return f.read()


# ------------------------------------------------------------- the gateway

gw_log = os.path.join(T, "pv-gw.err")


def gw_start(gw=GW, extra=(), fault=None, expect_up=True):
    """Start a gateway; (process, port, stderr text of this start)."""
    pf = os.path.join(T, "pv.port")
    if os.path.exists(pf):
        os.unlink(pf)
    err = open(gw_log, "a")
    off = err.tell()
    env = dict(os.environ)
    env.pop("STRATA_FAULT", None)
    if fault:
        env["STRATA_FAULT"] = fault
    args = [gw] + STORE + (["--dev-size", "256M"] if not CL else []) + [
        "--port", "0", "--port-file", pf, "--creds", os.path.join(T, "creds"), "--timeout", "10",
        "--access-log", os.path.join(T, "pv-access.log")] + list(extra)
    p = subprocess.Popen(args, stdout=err, stderr=err, env=env)
    procs.append(p)
    end = time.time() + 60
    while time.time() < end and p.poll() is None and not (os.path.exists(pf) and os.path.getsize(pf) > 0):
        time.sleep(0.05)
    port = int(open(pf).read()) if os.path.exists(pf) and os.path.getsize(pf) > 0 else None
    if expect_up and port is None:
        raise RuntimeError("gateway did not start: %s" % gw_text_since(off)[-800:])
    # its listening line follows the port file
    while port is not None and time.time() < end and "listening on" not in gw_text_since(off):
        time.sleep(0.05)
    return p, port, gw_text_since(off)


def gw_text_since(off):
    with open(gw_log) as f:
        f.seek(off)
        return f.read()


def gw_stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(60)


def client(port, user=0):
    return boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % port,
                        aws_access_key_id=users[user][1], aws_secret_access_key=users[user][2],
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                      signature_version="s3v4"))


def err_of(fn):
    """(HTTP status, S3 code, message) of the ClientError fn raises, or None."""
    try:
        fn()
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code"),
                e.response["Error"].get("Message", ""))
    return None


def keys_of(s3, bucket, prefix=""):
    out, tok = [], None
    while True:
        kw = {"Bucket": bucket, "Prefix": prefix}
        if tok:
            kw["ContinuationToken"] = tok
        r = s3.list_objects_v2(**kw)
        out += [o["Key"] for o in r.get("Contents", [])]
        if not r.get("IsTruncated"):
            return out
        tok = r["NextContinuationToken"]


VIEW_ARGS = ["--posix-bucket", "view=%s" % CONT, "--posix-bucket", "sub=%s:/posix/sub"
             % CONT, "--posix-owner", users[0][0]]


# ---------------------------------------------------------- listing model

def model(keys, prefix="", delim="", after=None):
    """S3's listing of keys: [("K", key) | ("P", common prefix)] in order."""
    out, seen = [], set()
    ab = after.encode() if after is not None else None
    for k in sorted(keys, key=lambda s: s.encode()):
        if not k.startswith(prefix) or (ab is not None and k.encode() <= ab):
            continue
        if delim:
            i = k.find(delim, len(prefix))
            if i >= 0:
                cp = k[:i + len(delim)]
                if (ab is not None and cp.encode() <= ab) or cp in seen:
                    continue
                seen.add(cp)
                out.append(("P", cp))
                continue
        out.append(("K", k))
    return out


def listing(s3, bucket, prefix, delim, maxk, v1=False, after=None):
    """Every page of a listing: (keys, common prefixes, pages)."""
    keys, cps, pages, tok, marker = [], [], 0, None, after
    while pages < 1000:
        kw = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": maxk}
        if delim:
            kw["Delimiter"] = delim
        if v1:
            if marker is not None:
                kw["Marker"] = marker
            r = s3.list_objects(**kw)
        else:
            if tok:
                kw["ContinuationToken"] = tok
            elif after is not None:
                kw["StartAfter"] = after
            r = s3.list_objects_v2(**kw)
        pages += 1
        ks = [o["Key"] for o in r.get("Contents", [])]
        ps = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        keys += ks
        cps += ps
        if not r.get("IsTruncated"):
            break
        if v1:
            marker = r.get("NextMarker") or max(ks + ps, key=lambda s: s.encode())
        else:
            tok = r["NextContinuationToken"]
    return keys, cps, pages


def random_keys(n, seed):
    """n keys under r/ of names with bytes below and above '/', no key a
    directory of another."""
    rnd = random.Random(seed)
    alpha = "ab-.0! "
    files, dirs, out = set(), set(), []
    while len(out) < n:
        parts = ["".join(rnd.choice(alpha) for _ in range(rnd.randint(1, 3)))
                 for _ in range(rnd.randint(1, 3))]
        if any(p in (".", "..") or p.strip() != p for p in parts):
            continue
        k = "r/" + "/".join(parts)
        ds = ["r/" + "/".join(parts[:i]) for i in range(1, len(parts))]
        if k in files or k in dirs or any(d in files for d in ds):
            continue
        files.add(k)
        dirs.update(ds)
        out.append(k)
    return out


# ----------------------------------------------------------- embedded mode

def embedded():
    hello = os.urandom(3 * MiB + 5)
    # --- A: the namespace made and written through its API
    # blocks of 2 MiB: more than the gateway's 1 MiB ops (the writer's
    # and the reader's chunks follow the block); the cluster part has 64 KiB
    rc, out, err = tool("mkfs", "21", store=["--data", D, "--dev-size", "256M"])
    check("namespace of 2 MiB blocks made in container %s (ns_mkfs)" % CONT, rc == 0, err)
    rc, out, err = tool("put", "/posix/hello.bin", fwrite("hello.bin", hello))
    check("a file written through the namespace (%d bytes)" % len(hello),
          rc == 0 and out == "%d %s" % (len(hello), md5(hello)), (out, err))
    rc, out, err = tool("put", "/posix/empty.txt", fwrite("empty", b""))
    check("an empty file written through the namespace", rc == 0 and out.startswith("0 "), (out, err))
    for d in ("/posix/emptydir", "/posix/deep/er", "/r/~e1", "/r/~e2/~e3"):
        rc, out, err = tool("mkdir", d)
        check("directory %s made through the namespace" % d, rc == 0, err)
    rc, out, err = tool("truncate", "/posix/sparse", "100000")
    check("a file extended by truncate, never written", rc == 0, err)
    big_posix = os.urandom(5 * MiB + 3)
    rc, out, err = tool("put", "/b/posix.bin", fwrite("bigp", big_posix))
    check("a file of 2 MiB blocks written through the namespace",
          rc == 0 and out == "%d %s" % (len(big_posix), md5(big_posix)), (out, err))

    # --- B: the gateway serves the namespace
    p, port, text = gw_start(extra=VIEW_ARGS)
    check("gateway names its view buckets at start",
          "view bucket view: directory / " in text and "view bucket sub: directory /posix/sub " in text, text)
    check("the missing directory of a view bucket is made at start", "made the directory /posix/sub" in text, text)
    s3, s3b = client(port), client(port, 1)
    serve_embedded(s3, s3b, port, hello)
    check("the view bucket has the namespace's blocks (2 MiB)", "blocks of 2097152 bytes" in text, text)
    big_s3 = serve_big(s3, big_posix)
    gw_stop(p)
    for key, data in big_s3.items():
        rc, out, err = tool("get", "/" + key, os.path.join(T, "back.bin"))
        st = tool("stat", "/" + key)[1].split()
        check("the namespace reads %s (%d bytes; a file of 2 MiB blocks, as the namespace makes)"
              % (key, len(data)), rc == 0 and out == "%d %s" % (len(data), md5(data)) and
              st[3:] == ["2097152"], (out, err, st))

    # --- C: what S3 stored, read through the namespace
    for key, data in put_data.items():
        rc, out, err = tool("get", "/" + key, os.path.join(T, "back.bin"))
        check("the namespace reads %s as S3 PUT it (%d bytes, MD5)" % (key, len(data)),
              rc == 0 and out == "%d %s" % (len(data), md5(data)) and fread("back.bin") == data, (out, err))
    rc, out, err = tool("getxattr", "/s3/put.bin", "user.s3.etag")
    check("xattr user.s3.etag: the PUT's ETag, mtime and size",
          rc == 0 and out.split()[0] == md5(put_data["s3/put.bin"]) and
          out.split()[2] == str(len(put_data["s3/put.bin"])), (out, err))
    rc, out, err = tool("getxattr", "/s3/put.bin", "user.s3.content-type")
    check("xattr user.s3.content-type", rc == 0 and out == "text/x-test", (out, err))
    rc, out, err = tool("stat", "/posix/emptydir")
    check("the directory a DeleteObject named is still there", rc == 0 and out.split()[2] == "40755", (out, err))
    rc, out, err = tool("stat", "/s3/deep/er/k")
    check("a PUT's missing directories made (a 0644 file in 0755 directories)",
          rc == 0 and out.split()[2] == "100644" and tool("stat", "/s3/deep")[1].split()[2] == "40755",
          (out, err))
    posix_new = os.urandom(2 * MiB + 11)
    rc, out, err = tool("put", "/s3/put.bin", fwrite("posix_new", posix_new))
    check("a PUT's file rewritten through the namespace", rc == 0, err)
    # configurations refused before serving (exit status 2)
    refused("a bad posix-bucket value", ["--posix-bucket", "v=@pv"], "not a valid bucket name")
    refused("a posix-bucket DIR with '..'", ["--posix-bucket", "vv1=@pv:/a/../b"], "'..'")
    refused("a container without a namespace", ["--posix-bucket", "vv2=@nothing"], "holds no POSIX namespace")
    refused("a view bucket named as a bucket of the store",
            ["--posix-bucket", "aaa-normal=@pv"], "a bucket of that name exists")
    refused("a view bucket named twice", ["--posix-bucket", "vv3=@pv", "--posix-bucket", "vv3=@pv:/posix"],
            "a bucket of that name exists")
    refused("an unknown posix-owner", ["--posix-bucket", "vv4=@pv", "--posix-owner", "nobody"],
            "posix-owner 'nobody' is not a user")
    refused("a DIR that is a file", ["--posix-bucket", "vv5=@pv:/posix/hello.bin"], "not a directory")

    # --- D: the rewrite seen through S3; the configuration file form
    conf = os.path.join(T, "pv.conf")
    with open(conf, "w") as f:
        f.write("posix-bucket: view=%s\nposix-owner: %s\n" % (CONT, users[0][0]))
    p, port, text = gw_start(extra=["--config", conf])
    s3 = client(port)
    check("posix-bucket and posix-owner as lines of --config", "view bucket view: directory / " in text, text)
    g = s3.get_object(Bucket="view", Key="s3/put.bin")
    body = g["Body"].read()
    check("a PUT's file rewritten through POSIX: GET gives the new bytes and size",
          body == posix_new and g["ContentLength"] == len(posix_new), len(body))
    check("... and a derived ETag, not the PUT's (the xattr no longer matches the file)",
          g["ETag"].startswith('"px-') and g["ETag"] != '"%s"' % md5(put_data["s3/put.bin"]), g["ETag"])
    gw_stop(p)

    kill_test()


def serve_big(s3, big_posix):
    """Blocks of 2 MiB, more than the gateway's 1 MiB ops: the writer's
    chunks and the reader's follow."""
    g = s3.get_object(Bucket="view", Key="b/posix.bin")
    check("GET of a file of 2 MiB blocks written through POSIX", g["Body"].read() == big_posix)
    r = s3.get_object(Bucket="view", Key="b/posix.bin", Range="bytes=2097100-4194400")
    check("... a range across its blocks", r["Body"].read() == big_posix[2097100:4194401])
    out = {}
    for key, size in (("b/small", 100), ("b/mid.bin", 3 * MiB + 1), ("b/large.bin", 9 * MiB + 5)):
        d = os.urandom(size)
        r = s3.put_object(Bucket="view", Key=key, Body=d)
        g = s3.get_object(Bucket="view", Key=key)
        rg = s3.get_object(Bucket="view", Key=key, Range="bytes=%d-%d" % (size // 3, size - 2))
        check("PUT/GET %d bytes into 2 MiB blocks (and a range)" % size,
              r["ETag"] == '"%s"' % md5(d) and g["Body"].read() == d and
              rg["Body"].read() == d[size // 3:size - 1])
        out[key] = d
    return out


def refused(what, args, msg):
    p, port, text = gw_start(extra=args, expect_up=False)
    rc = p.wait(60)
    if port is None:
        text = gw_text_since(0)[-2000:]
    check("refused at start: %s (exit 2, says why)" % what, rc == 2 and msg in text, (rc, text[-400:]))


put_data = {}


def serve_embedded(s3, s3b, port, hello):
    s3.create_bucket(Bucket="aaa-normal")
    s3.create_bucket(Bucket="zzz-normal")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    check("ListBuckets merges the view buckets in name order",
          names == ["aaa-normal", "sub", "view", "zzz-normal"], names)
    names = [b["Name"] for b in s3b.list_buckets()["Buckets"]]
    check("another user's ListBuckets has no view bucket", "view" not in names and "sub" not in names, names)
    pages, kw = [], {}
    for _ in range(4):
        r = s3.list_buckets(MaxBuckets=1, **kw)
        pages.append([b["Name"] for b in r["Buckets"]])
        if "ContinuationToken" not in r:
            break
        kw = {"ContinuationToken": r["ContinuationToken"]}
    check("ListBuckets pages through view buckets (max-buckets 1)",
          pages == [["aaa-normal"], ["sub"], ["view"], ["zzz-normal"]], pages)

    # --- a file written through POSIX, read through S3
    g = s3.get_object(Bucket="view", Key="posix/hello.bin")
    body = g["Body"].read()
    check("GET of a file written through the namespace: the same bytes",
          body == hello and g["ContentLength"] == len(hello), len(body))
    check("its ETag is derived and quoted (\"px-...\"), stable across GETs",
          g["ETag"].startswith('"px-') and g["ETag"] == s3.head_object(Bucket="view", Key="posix/hello.bin")["ETag"],
          g["ETag"])
    check("Last-Modified from its mtime (within a minute)",
          abs(g["LastModified"].timestamp() - time.time()) < 600, g["LastModified"])
    r = s3.get_object(Bucket="view", Key="posix/hello.bin", Range="bytes=1048570-2097160")
    check("a range across 1 MiB chunks", r["Body"].read() == hello[1048570:2097161] and
          r["ContentRange"] == "bytes 1048570-2097160/%d" % len(hello), r.get("ContentRange"))
    r = s3.get_object(Bucket="view", Key="posix/hello.bin", Range="bytes=-7")
    check("a suffix range", r["Body"].read() == hello[-7:])
    e = err_of(lambda: s3.get_object(Bucket="view", Key="posix/hello.bin", Range="bytes=%d-" % len(hello)))
    check("a range past the end: 416", e is not None and e[0] == 416, e)
    g = s3.get_object(Bucket="view", Key="posix/empty.txt")
    check("an empty file is an empty object", g["Body"].read() == b"" and g["ContentLength"] == 0)
    g = s3.get_object(Bucket="view", Key="posix/sparse")
    check("a file extended by truncate reads as zeros", g["Body"].read() == bytes(100000))
    e = err_of(lambda: s3.get_object(Bucket="view", Key="posix/emptydir"))
    check("GET of a directory: 404 NoSuchKey", e is not None and e[:2] == (404, "NoSuchKey"), e)
    e = err_of(lambda: s3.head_object(Bucket="view", Key="posix/"))
    check("HEAD of a key ending with '/': 404", e is not None and e[0] == 404, e)
    et = s3.head_object(Bucket="view", Key="posix/hello.bin")["ETag"]
    e = err_of(lambda: s3.get_object(Bucket="view", Key="posix/hello.bin", IfNoneMatch=et))
    check("If-None-Match of its ETag: 304", e is not None and e[0] == 304, e)
    e = err_of(lambda: s3.get_object(Bucket="view", Key="posix/hello.bin", IfMatch='"nope"'))
    check("If-Match of another ETag: 412", e is not None and e[0] == 412, e)
    e = err_of(lambda: s3b.get_object(Bucket="view", Key="posix/hello.bin"))
    check("another user: 403 AccessDenied", e is not None and e[:2] == (403, "AccessDenied"), e)

    # --- objects PUT through S3 (read back through the namespace in C)
    d = os.urandom(2 * MiB + 7)
    r = s3.put_object(Bucket="view", Key="s3/put.bin", Body=os.urandom(5000))
    r = s3.put_object(Bucket="view", Key="s3/put.bin", Body=d, ContentType="text/x-test",
                      Metadata={"color": "blue"}, CacheControl="no-cache")
    put_data["s3/put.bin"] = d
    check("PutObject (a replacement): the ETag is the MD5", r["ETag"] == '"%s"' % md5(d), r["ETag"])
    h = s3.head_object(Bucket="view", Key="s3/put.bin")
    check("HEAD: size, ETag, content type, x-amz-meta-*, kept headers",
          h["ContentLength"] == len(d) and h["ETag"] == '"%s"' % md5(d) and
          h["ContentType"] == "text/x-test" and h["Metadata"] == {"color": "blue"} and
          h.get("CacheControl") == "no-cache", h)
    check("GET returns the PUT's bytes", s3.get_object(Bucket="view", Key="s3/put.bin")["Body"].read() == d)
    for key, size in (("s3/deep/er/k", 1000), ("s3/zero", 0), ("s3/big.bin", 9 * MiB + 1)):
        data = os.urandom(size)
        s3.put_object(Bucket="view", Key=key, Body=data)
        put_data[key] = data
        g = s3.get_object(Bucket="view", Key=key)
        check("PUT/GET %s (%d bytes)" % (key, size), g["Body"].read() == data and g["ETag"] == '"%s"' % md5(data))
    s3.put_object(Bucket="sub", Key="in-sub.txt", Body=b"sub")
    put_data["posix/sub/in-sub.txt"] = b"sub"
    check("a key of bucket sub is the file /posix/sub/... of bucket view",
          s3.get_object(Bucket="view", Key="posix/sub/in-sub.txt")["Body"].read() == b"sub")
    e = err_of(lambda: s3.put_object(Bucket="view", Key="s3/put.bin", Body=b"x", IfNoneMatch="*"))
    check("PUT If-None-Match * over an existing key: 412", e is not None and e[0] == 412, e)
    e = err_of(lambda: s3.put_object(Bucket="view", Key="s3/nokey", Body=b"x", IfMatch='"abc"'))
    check("PUT If-Match of a missing key: 404", e is not None and e[0] == 404, e)
    check("... neither stored", s3.get_object(Bucket="view", Key="s3/put.bin")["Body"].read() == d and
          err_of(lambda: s3.head_object(Bucket="view", Key="s3/nokey")) is not None)

    # --- aws cli
    aws = os.environ.get("STRATA_AWS", "/usr/bin/aws")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=users[0][1], AWS_SECRET_ACCESS_KEY=users[0][2],
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE="/dev/null")
    A = [aws, "--endpoint-url", "http://127.0.0.1:%d" % port]
    r = subprocess.run(A + ["s3", "cp", "s3://view/posix/hello.bin", os.path.join(T, "cli.out")],
                       capture_output=True, text=True, env=env, timeout=120)
    check("aws s3 cp of a file written through POSIX (cmp)",
          r.returncode == 0 and fread("cli.out") == hello, r.stderr[-300:])
    up = os.urandom(MiB + 17)
    r = subprocess.run(A + ["s3", "cp", fwrite("cli.up", up), "s3://view/cli/up.bin"],
                       capture_output=True, text=True, env=env, timeout=120)
    put_data["cli/up.bin"] = up
    check("aws s3 cp up into the view", r.returncode == 0, r.stderr[-300:])
    r = subprocess.run(A + ["s3", "ls", "s3://view/posix/"], capture_output=True, text=True, env=env, timeout=120)
    check("aws s3 ls: the files, and directories with keys as PRE",
          r.returncode == 0 and "%d hello.bin" % len(hello) in r.stdout and "PRE sub/" in r.stdout and
          "emptydir" not in r.stdout and "deep" not in r.stdout, r.stdout + r.stderr[-300:])
    r = subprocess.run(A + ["s3", "ls"], capture_output=True, text=True, env=env, timeout=120)
    check("aws s3 ls: the view buckets", r.returncode == 0 and " view" in r.stdout and " sub" in r.stdout,
          r.stdout)

    # --- refusals
    before = keys_of(s3, "view")
    for key, code in (("posix/hello.bin/x", "ParentIsObject"), ("posix/emptydir", "ObjectExistsAsDirectory"),
                      ("posix", "ObjectExistsAsDirectory")):
        e = err_of(lambda: s3.put_object(Bucket="view", Key=key, Body=b"x"))
        check("PUT %s: 409 %s naming the key" % (key, code),
              e is not None and e[:2] == (409, code) and key in e[2], e)
    for key in ("a//b", "/a", "a/./b", "a/../b", "..", "dir/"):
        e = err_of(lambda: s3.put_object(Bucket="view", Key=key, Body=b"x"))
        check("PUT %r: 400 InvalidArgument naming the key" % key,
              e is not None and e[:2] == (400, "InvalidArgument") and key in e[2], e)
    long_name = "L" * 256
    e = err_of(lambda: s3.put_object(Bucket="view", Key="a/" + long_name, Body=b"x"))
    check("PUT of a key with a 256-byte component: 400 KeyTooLongError",
          e is not None and e[:2] == (400, "KeyTooLongError"), e)
    s3.put_object(Bucket="view", Key="a/" + "L" * 255, Body=b"x")
    check("... and 255 bytes is taken", s3.get_object(Bucket="view", Key="a/" + "L" * 255)["Body"].read() == b"x")
    s3.delete_object(Bucket="view", Key="a/" + "L" * 255)
    e = err_of(lambda: s3.create_bucket(Bucket="view"))
    check("CreateBucket of a view bucket by its owner: 409 BucketAlreadyOwnedByYou",
          e is not None and e[:2] == (409, "BucketAlreadyOwnedByYou"), e)
    e = err_of(lambda: s3b.create_bucket(Bucket="view"))
    check("... by another user: 409 BucketAlreadyExists", e is not None and e[:2] == (409, "BucketAlreadyExists"), e)
    e = err_of(lambda: s3.delete_bucket(Bucket="view"))
    check("DeleteBucket of a view bucket: 405 MethodNotAllowed, saying why",
          e is not None and e[:2] == (405, "MethodNotAllowed") and "POSIX" in e[2], e)
    e = err_of(lambda: s3b.delete_bucket(Bucket="view"))
    check("... by another user: 403", e is not None and e[0] == 403, e)
    nots = [
        ("CreateMultipartUpload", lambda: s3.create_multipart_upload(Bucket="view", Key="m")),
        ("UploadPart", lambda: s3.upload_part(Bucket="view", Key="m", UploadId="x", PartNumber=1, Body=b"x")),
        ("CompleteMultipartUpload", lambda: s3.complete_multipart_upload(
            Bucket="view", Key="m", UploadId="x", MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": "x"}]})),
        ("ListMultipartUploads", lambda: s3.list_multipart_uploads(Bucket="view")),
        ("CopyObject", lambda: s3.copy_object(Bucket="view", Key="copy", CopySource="view/posix/hello.bin")),
        ("object tagging", lambda: s3.put_object_tagging(Bucket="view", Key="s3/put.bin",
                                                         Tagging={"TagSet": [{"Key": "a", "Value": "b"}]})),
        ("x-amz-tagging", lambda: s3.put_object(Bucket="view", Key="tagged", Body=b"x", Tagging="a=b")),
        ("versioning", lambda: s3.put_bucket_versioning(Bucket="view",
                                                        VersioningConfiguration={"Status": "Enabled"})),
        ("versioning", lambda: s3.list_object_versions(Bucket="view")),
        ("PutObjectAcl", lambda: s3.put_object_acl(Bucket="view", Key="s3/put.bin", ACL="public-read")),
        ("x-amz-acl", lambda: s3.put_object(Bucket="view", Key="acl", Body=b"x", ACL="public-read")),
        ("policy", lambda: s3.put_bucket_policy(Bucket="view", Policy=json.dumps(
            {"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                            "Resource": "arn:aws:s3:::view/*"}]}))),
        ("PutBucketAcl", lambda: s3.put_bucket_acl(Bucket="view", ACL="public-read")),
        ("object lock", lambda: s3.put_object_retention(
            Bucket="view", Key="s3/put.bin", Retention={"Mode": "GOVERNANCE",
                                                        "RetainUntilDate": "2099-01-01T00:00:00Z"})),
        ("object lock", lambda: s3.put_object_legal_hold(Bucket="view", Key="s3/put.bin",
                                                          LegalHold={"Status": "ON"})),
        ("object lock", lambda: s3.put_object(Bucket="view", Key="locked", Body=b"x",
                                              ObjectLockMode="GOVERNANCE",
                                              ObjectLockRetainUntilDate="2099-01-01T00:00:00Z")),
    ]
    for what, fn in nots:
        e = err_of(fn)
        check("%s on a view bucket: 501 NotImplemented naming it" % what,
              e is not None and e[:2] == (501, "NotImplemented") and what in e[2], e)
    check("... nothing was changed by the refused requests", keys_of(s3, "view") == before,
          set(keys_of(s3, "view")) ^ set(before))
    acl = s3.get_bucket_acl(Bucket="view")
    check("GetBucketAcl: the owner's FULL_CONTROL",
          [g["Permission"] for g in acl["Grants"]] == ["FULL_CONTROL"] and acl["Owner"]["ID"] == users[0][0], acl)
    e = err_of(lambda: s3.get_bucket_policy(Bucket="view"))
    check("GetBucketPolicy: none (404 NoSuchBucketPolicy)", e is not None and e[1] == "NoSuchBucketPolicy", e)
    check("GetBucketLocation answers", s3.get_bucket_location(Bucket="view")["LocationConstraint"] in (None, ""))
    check("GetObjectAcl of a file: the owner's FULL_CONTROL",
          [g["Permission"] for g in s3.get_object_acl(Bucket="view", Key="s3/put.bin")["Grants"]] == ["FULL_CONTROL"])

    # --- copy out of the view (into a normal bucket): a copy of the data
    s3.copy_object(Bucket="aaa-normal", Key="copied", CopySource="view/posix/hello.bin")
    check("CopyObject from a view bucket to a normal bucket",
          s3.get_object(Bucket="aaa-normal", Key="copied")["Body"].read() == hello)

    # --- deletes
    s3.put_object(Bucket="view", Key="del/one", Body=b"1")
    s3.put_object(Bucket="view", Key="del/two", Body=b"2")
    r = s3.delete_object(Bucket="view", Key="del/one")
    check("DeleteObject: 204 and the key gone", r["ResponseMetadata"]["HTTPStatusCode"] == 204 and
          err_of(lambda: s3.head_object(Bucket="view", Key="del/one")) is not None)
    r = s3.delete_object(Bucket="view", Key="del/missing")
    check("DeleteObject of a missing key: 204", r["ResponseMetadata"]["HTTPStatusCode"] == 204)
    r = s3.delete_object(Bucket="view", Key="posix/emptydir")
    check("DeleteObject of a directory's key: 204 (the directory stays: checked through the namespace)",
          r["ResponseMetadata"]["HTTPStatusCode"] == 204)
    r = s3.delete_objects(Bucket="view", Delete={"Objects": [{"Key": "del/two"}, {"Key": "del/none"},
                                                             {"Key": "a//b"}]})
    check("DeleteObjects: every key deleted (missing ones too)",
          sorted(x["Key"] for x in r.get("Deleted", [])) == ["a//b", "del/none", "del/two"] and
          not r.get("Errors") and not keys_of(s3, "view", "del/"), r)

    # --- listings: S3 key order over directories
    order_test(s3)


def order_test(s3):
    fixed = ["o/a.txt", "o/a/x", "o/a0", "o/a-b", "o/a/b/c", "o/b", "o/a!", "o/a /y"]
    for k in fixed:
        s3.put_object(Bucket="view", Key=k, Body=k.encode())
    got = keys_of(s3, "view", "o/")
    want = sorted(fixed, key=lambda s: s.encode())
    check("a directory 'a' lists as 'a/': o/a.txt < o/a/... < o/a0", got == want, got)
    r = s3.list_objects_v2(Bucket="view", Prefix="o/", Delimiter="/")
    check("delimiter '/': files and the directories holding keys as common prefixes",
          [o["Key"] for o in r.get("Contents", [])] == ["o/a!", "o/a-b", "o/a.txt", "o/a0", "o/b"] and
          [c["Prefix"] for c in r.get("CommonPrefixes", [])] == ["o/a /", "o/a/"], r)
    r = s3.list_objects_v2(Bucket="view", Delimiter="/")
    cps = [c["Prefix"] for c in r.get("CommonPrefixes", [])]
    check("empty directories are not common prefixes", "r/" not in cps and "o/" in cps and "posix/" in cps, cps)
    r = s3.list_objects_v2(Bucket="view", Prefix="posix/", Delimiter="/")
    cps = [c["Prefix"] for c in r.get("CommonPrefixes", [])]
    check("... nor are directories holding only empty directories", cps == ["posix/sub/"], cps)

    keys = random_keys(90, 33)
    for k in keys:
        s3.put_object(Bucket="view", Key=k, Body=b"")
    allk = keys_of(s3, "view", "r/")
    check("90 random keys of names around '/' list in byte order",
          allk == sorted(keys, key=lambda s: s.encode()), [(a, b) for a, b in zip(allk, sorted(keys)) if a != b][:5])
    rnd = random.Random(7)
    prefixes = ["r/", "r/a", "r/a/", "r/a-", "r/a.", "r/b", "r/!", "r/0", "r/ "] + \
        [k[:rnd.randint(2, len(k))] for k in rnd.sample(keys, 6)]
    bad = []
    n = 0
    for pre in prefixes:
        for delim in ("", "/", "."):
            for maxk in (1000, 3):
                for v1 in (False, True):
                    if v1 and maxk == 1000:
                        continue
                    ks, cps, pages = listing(s3, "view", pre, delim, maxk, v1)
                    m = model(keys, pre, delim)
                    n += 1
                    if ks != [x[1] for x in m if x[0] == "K"] or cps != [x[1] for x in m if x[0] == "P"]:
                        bad.append((pre, delim, maxk, v1, ks[:4], cps[:4]))
    check("%d listings (prefixes, delimiters '/' and '.', pages of 3, V1 markers, V2 tokens) "
          "equal S3's order and folding" % n, not bad, bad[:3])
    bad = []
    for after in rnd.sample(keys, 8) + ["r/a", "r/a/", "r/a-", "r/", "r/a.", "r/zz", "q", "r/.",
                                       "r/./", "r/..", "r/-/./x", "r/a//b"]:
        for delim in ("", "/"):
            ks, cps, _ = listing(s3, "view", "r/", delim, 5, after=after)
            m = model(keys, "r/", delim, after)
            if ks != [x[1] for x in m if x[0] == "K"] or cps != [x[1] for x in m if x[0] == "P"]:
                bad.append((after, delim, ks[:4], cps[:4], m[:4]))
    check("start-after at keys, directories and between them", not bad, bad[:3])


def put_race(s3, key, n=4):
    """Two threads PUT n distinct bodies each to key: (the key's body is
    one of them, the errors)."""
    bodies = [os.urandom(MiB + 100 * i) for i in range(2 * n)]
    errs = []

    def run(mine):
        for b in mine:
            try:
                s3.put_object(Bucket="view", Key=key, Body=b)
            except Exception as e:
                errs.append(str(e))

    ths = [threading.Thread(target=run, args=(bodies[i::2],)) for i in range(2)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(300)
    got = s3.get_object(Bucket="view", Key=key)["Body"].read()
    return got in bodies, errs


def kill_test():
    """strata-s3-test killed in a view PUT: before the link, after it."""
    def free():
        out = subprocess.run([S, "--data", D, "--json", "devices"], capture_output=True, text=True,
                             timeout=120).stdout
        return sum(d["free_bytes"] for d in json.loads(out))

    before = free()
    data = os.urandom(2 * MiB + 3)
    for point, key in (("s3.view.before", "k/before"), ("s3.view.linked", "k/linked"),
                       ("s3.view.linked", "k/moved-later")):
        p, port, _ = gw_start(GWT, VIEW_ARGS, fault=point)
        e = None
        try:
            client(port).put_object(Bucket="view", Key=key, Body=data)
        except Exception as x:  # the connection ends with the process
            e = x
        p.wait(60)
        check("PUT %s killed at %s" % (key, point), e is not None and p.returncode == -signal.SIGKILL,
              (e, p.returncode))
        if key == "k/moved-later":
            rc, out, err = tool("mv", "/k/moved-later", "/k/moved")
            check("its file renamed through POSIX while the gateway is down", rc == 0, err)
            key = "k/moved"
        p, port, text = gw_start(GW, VIEW_ARGS)
        s3 = client(port)
        n = 1 if point == "s3.view.before" else 0
        check("restart: %d interrupted upload objects reclaimed" % n,
              " %d interrupted upload objects reclaimed" % n in text, text[-300:])
        if point == "s3.view.before":
            check("restart: the unlinked object's key absent",
                  err_of(lambda: s3.head_object(Bucket="view", Key=key)) is not None)
        else:
            got = s3.get_object(Bucket="view", Key=key)["Body"].read()
            check("restart: the linked file %s kept whole (its in-flight record settled)" % key, got == data,
                  len(got))
            s3.delete_object(Bucket="view", Key=key)
        gw_stop(p)
    p, port, _ = gw_start(GW, VIEW_ARGS)
    s3 = client(port)
    got, errs = put_race(s3, "k/race.bin")
    check("racing PUTs of one key: every one answered 200, the key reads as one of them whole",
          not errs and got, errs[:2])
    s3.delete_object(Bucket="view", Key="k/race.bin")
    gw_stop(p)
    out = subprocess.run(["grep", "-c", "fault point s3.view", gw_log], capture_output=True, text=True).stdout
    check("the fault points fired (3)", out.strip() == "3", out)
    after = free()
    check("free space as before the kills and the race (%d bytes): nothing leaked" % before,
          after == before, (before, after))


# ------------------------------------------------------------ cluster mode

class Serve:
    """The tool's serve mode: one command, one reply line."""

    def __init__(self):
        self.p = subprocess.Popen([TOOL] + STORE + [CONT, "serve"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        procs.append(self.p)

    def __call__(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def close(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        self.p.wait(60)


def cluster():
    rc, out, err = tool("mkfs")
    check("namespace made on the cluster", rc == 0, err)
    p, port, text = gw_start(GW, VIEW_ARGS)
    s3 = client(port)
    T1 = Serve()
    try:
        concurrent(s3, T1)
        through_mount(s3)
    finally:
        T1.close()
        gw_stop(p)


def through_mount(s3):
    """The same bytes through a strata-fuse mount of the cluster's namespace
    and through the gateway, both running: a file written through the mount
    (closed after fsync) is the object a GET returns, an object PUT through
    S3 reads back through the mount; SIGTERM unmounts (exit 0)."""
    fuse = os.path.join(B, "strata-fuse")
    if not os.path.exists("/dev/fuse") or os.geteuid() != 0 or not os.access(fuse, os.X_OK):
        print("skip: the mount part needs root, /dev/fuse and %s" % fuse)
        return
    mnt = os.path.join(T, "mnt")
    os.makedirs(mnt, exist_ok=True)
    log = open(os.path.join(T, "fuse.log"), "w")
    fp = subprocess.Popen([fuse, "--cluster", CL, "--container", CONT, "-f", mnt],
                          stdout=log, stderr=log)
    procs.append(fp)

    def mounted():
        with open("/proc/mounts") as f:
            return any(l.split()[1] == mnt for l in f)
    up = wait_for(mounted, 60)
    check("strata-fuse mounts the cluster's namespace (container %s)" % CONT, up)
    if not up:
        return
    try:
        data = random.Random(33).randbytes(3 * MiB + 777)
        os.makedirs(os.path.join(mnt, "m"), exist_ok=True)
        fd = os.open(os.path.join(mnt, "m", "fromfuse.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data[:MiB + 5])
        os.pwrite(fd, data[MiB + 5:], MiB + 5)
        os.fsync(fd)
        os.close(fd)
        body = s3.get_object(Bucket="view", Key="m/fromfuse.bin")["Body"].read()
        check("a file written through the mount is the object GET returns", body == data,
              "%d bytes, want %d" % (len(body), len(data)))
        put = random.Random(34).randbytes(2 * MiB + 3)
        s3.put_object(Bucket="view", Key="m/froms3.bin", Body=put)
        back = b""
        with open(os.path.join(mnt, "m", "froms3.bin"), "rb") as f:
            back = f.read()
        check("an object PUT through S3 reads back through the mount", back == put,
              "%d bytes, want %d" % (len(back), len(put)))
        names = sorted(os.listdir(os.path.join(mnt, "m")))
        check("the mount lists both", names == ["fromfuse.bin", "froms3.bin"], names)
        # a file unlinked while open lives on in the mounts' hidden
        # directory: the bucket neither lists nor serves nor takes it
        fd = os.open(os.path.join(mnt, "m", "froms3.bin"), os.O_RDONLY)
        try:
            os.unlink(os.path.join(mnt, "m", "froms3.bin"))
            hidden = ".strata-fuse-orphans"
            keys = keys_of(s3, "view", "")
            check("the listing shows no key of the hidden directory",
                  not any(k.startswith(hidden) for k in keys), keys)
            gone = "%s/%016x" % (hidden, os.fstat(fd).st_ino)
            check("a GET in the hidden directory is NoSuchKey",
                  (err_of(lambda: s3.get_object(Bucket="view", Key=gone)) or (0, ""))[1] == "NoSuchKey")
            check("a PUT in the hidden directory is refused",
                  (err_of(lambda: s3.put_object(Bucket="view", Key=gone, Body=b"x")) or (0, ""))[1]
                  == "InvalidArgument")
            check("the open file still reads whole", os.pread(fd, len(put) + 1, 0) == put)
        finally:
            os.close(fd)
    finally:
        fp.send_signal(signal.SIGTERM)
        try:
            rc = fp.wait(timeout=60)
        except subprocess.TimeoutExpired:
            fp.kill()
            fp.wait()
            subprocess.run(["fusermount3", "-uz", mnt])
            rc = None
        check("strata-fuse exits 0 on SIGTERM, the mount gone", rc == 0 and not mounted(), rc)


def wait_for(fn, secs):
    end = time.time() + secs
    while time.time() < end:
        if fn():
            return True
        time.sleep(0.1)
    return fn()


def concurrent(s3, ns):
    # an S3 PUT, read through the namespace at once
    d = os.urandom(MiB + 3)
    s3.put_object(Bucket="view", Key="c/s3.bin", Body=d)
    r = ns("get /c/s3.bin %s" % os.path.join(T, "c1"))
    check("a PUT is read through the namespace at once (same bytes)",
          r == "ok %d %s" % (len(d), md5(d)) and fread("c1") == d, r)
    r = ns("stat /c/s3.bin")
    check("... a file of the namespace's blocks (64 KiB)", r.split()[4:] == ["65536"], r)
    # a POSIX write, read through S3: the size written back
    a = os.urandom(MiB)
    ino = ns("open /c/wb.bin").split()[1]
    r = ns("writef %s 0 %s" % (ino, fwrite("a", a)))
    g = s3.get_object(Bucket="view", Key="c/wb.bin")
    first = g["Body"].read()
    check("a GET right after a POSIX write (not released) sees the size last written back "
          "(%d: 0 or %d)" % (len(first), len(a)), r == "ok %d" % len(a) and first in (b"", a), (r, len(first)))
    check("... and within the writeback period (1 s) the new size and bytes",
          wait_for(lambda: s3.get_object(Bucket="view", Key="c/wb.bin")["Body"].read() == a, 5))
    et = s3.head_object(Bucket="view", Key="c/wb.bin")["ETag"]
    b = os.urandom(MiB)
    r = ns("writef %s 0 %s" % (ino, fwrite("b", b)))
    got = s3.get_object(Bucket="view", Key="c/wb.bin")["Body"].read()
    check("an in-place POSIX rewrite: GET at once has the new bytes", r == "ok %d" % len(b) and got == b, r)
    check("... and once written back a new ETag",
          wait_for(lambda: s3.head_object(Bucket="view", Key="c/wb.bin")["ETag"] != et, 5))
    check("release", ns("release %s" % ino) == "ok")

    # GETs during POSIX rewrites: each block old or new
    A4, B4 = os.urandom(4 * MiB), os.urandom(4 * MiB)
    fa, fb = fwrite("a4", A4), fwrite("b4", B4)
    ino = ns("open /c/flip.bin").split()[1]
    ns("writef %s 0 %s" % (ino, fa))
    ns("fsync %s" % ino)
    stop = threading.Event()
    werr = []

    def writer():
        i = 0
        while not stop.is_set():
            r = ns("writef %s 0 %s" % (ino, fb if i % 2 == 0 else fa))
            if r != "ok %d" % len(A4):
                werr.append(r)
            i += 1

    th = threading.Thread(target=writer)
    th.start()
    bad, mixed, n = 0, 0, 0
    t_end = time.time() + 6
    while time.time() < t_end:
        g = s3.get_object(Bucket="view", Key="c/flip.bin")["Body"].read()
        n += 1
        if len(g) != len(A4):
            bad += 1
            continue
        src = set()
        for o in range(0, len(g), 65536):
            blk = g[o:o + 65536]
            if blk == A4[o:o + 65536]:
                src.add("a")
            elif blk == B4[o:o + 65536]:
                src.add("b")
            else:
                src.add("?")
        bad += "?" in src
        mixed += src == {"a", "b"}
    stop.set()
    th.join(60)
    check("%d GETs during POSIX rewrites: every 64 KiB block old or new (%d mixed old and new)"
          % (n, mixed), n > 0 and bad == 0 and not werr, (bad, werr[:2]))
    ns("release %s" % ino)

    # POSIX reads during S3 replacements: old or new whole
    O, N = os.urandom(8 * MiB), os.urandom(8 * MiB)
    s3.put_object(Bucket="view", Key="c/rep.bin", Body=O)
    stop.clear()
    perr = []

    def putter():
        i = 0
        while not stop.is_set():
            try:
                s3.put_object(Bucket="view", Key="c/rep.bin", Body=N if i % 2 == 0 else O)
            except Exception as e:
                perr.append(str(e))
                stop.set()
            i += 1

    th = threading.Thread(target=putter)
    th.start()
    seen = {"old": 0, "new": 0, "gone": 0, "torn": 0}
    other = []
    t_end = time.time() + 6
    while time.time() < t_end and not stop.is_set():
        r = ns("get /c/rep.bin %s" % os.path.join(T, "rep"))
        if r == "ok %d %s" % (len(O), md5(O)):
            seen["old"] += 1
        elif r == "ok %d %s" % (len(N), md5(N)):
            seen["new"] += 1
        elif r.split()[:2] in (["err", "2"], ["err", "5"], ["err", "116"]):
            # the old inode (ENOENT, ESTALE) or its data object (EIO:
            # "does not exist") went with the link while it was read
            seen["gone"] += 1
        else:
            seen["torn"] += 1
            other.append(r)
    stop.set()
    th.join(120)
    check("POSIX reads during S3 replacements: old or new whole, never torn %s" % seen,
          seen["torn"] == 0 and seen["old"] + seen["new"] > 0 and not perr, (other[:2], perr[:2]))

    # a file open through POSIX while S3 replaces it
    ino = ns("open /c/open.bin").split()[1]
    ns("writef %s 0 %s" % (ino, fwrite("a", a)))
    n2 = os.urandom(300000)
    try:
        s3.put_object(Bucket="view", Key="c/open.bin", Body=n2)
        put_ok = True
    except ClientError as e:
        put_ok = str(e)
    w = ns("writef %s 0 %s" % (ino, fwrite("b", b)))
    rel = ns("release %s" % ino)
    check("S3 replaces a file open for writing through POSIX", put_ok is True, put_ok)
    check("... writes through the open handle then fail (its inode went with the replace: %s / %s)"
          % (w, rel), w.startswith("err"), (w, rel))
    time.sleep(1.5)
    check("... and the S3 object stays whole after the writeback period",
          s3.get_object(Bucket="view", Key="c/open.bin")["Body"].read() == n2)

    # two PUTs of one key at once: the last link wins, whole
    ok_, errs = put_race(s3, "c/race.bin")
    g = s3.get_object(Bucket="view", Key="c/race.bin")["Body"].read()
    r = ns("get /c/race.bin %s" % os.path.join(T, "race"))
    check("racing PUTs of one key: all 200, one of them whole, the same through the namespace",
          ok_ and not errs and r == "ok %d %s" % (len(g), md5(g)), (errs[:2], r))

    # POSIX changes seen by S3 listings and deletes seen by POSIX
    r = ns("mv /c/s3.bin /c/moved/s3.bin")
    check("a POSIX rename is the key's move in the listing",
          r == "ok" and "c/moved/s3.bin" in keys_of(s3, "view", "c/") and "c/s3.bin" not in keys_of(s3, "view", "c/"),
          r)
    s3.delete_object(Bucket="view", Key="c/moved/s3.bin")
    r = ns("stat /c/moved/s3.bin")
    check("a DeleteObject is the file's unlink", r.startswith("err 2 "), r)


# -------------------------------------------------------------------- main

try:
    if MODE == "embedded":
        embedded()
    else:
        cluster()
except Exception:
    traceback.print_exc()
    check("no exception", False)
print("%d passed, %d failed" % (passed, failed))
sys.exit(0 if failed == 0 else 1)
