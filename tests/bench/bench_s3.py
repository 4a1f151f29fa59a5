#!/usr/bin/env python3
"""bench_s3.py BUILD DIR [--json] [--list-keys N] [--sizes 4K,1M,64M] [--no-list] [--inline]
[--gw BINARY] [--etag md5,crc64] [--meta-nvram] — S3 gateway benchmark.  --etag: the
gateway's etag modes to measure, one gateway run each (default both: md5
and crc64; LIST runs with the first).  --inline: the inline-threshold
measurement (PUT/GET of 1..256 KiB objects inline in their record vs as
objects).  --gw: the gateway binary to measure (default BUILD/strata-s3).
--meta-nvram: both stores, the gateway's and the raw baseline's, made with
their metadata on NVRAM (strata-s3 --meta-nvram, strata --meta-nvram
bench: LMDB in /dev/shm), so that both sides have the same durability;
without it neither is.  Every store is removed with `strata destroy`, and
the run fails if a /dev/shm entry of one of its stores (metadata, NVRAM
device; noted before each destroy) is left behind.

Starts BUILD/strata-s3 on a fresh embedded store in DIR/s3-bench (objects
with the store's default layout: plain on flash, the layout `strata bench`
uses), and measures over HTTP on 127.0.0.1:
  PUT and GET of 4 KiB, 1 MiB and 64 MiB objects with 1 and 16 clients
  (threads, one keep-alive connection each, presigned URLs made beforehand
  so that the client's signing cost is not counted), and LIST throughput
  (ListObjectsV2 pages of 1,000) over a bucket of N keys (default 20,000 to
  keep `make bench` short; --list-keys 100000 for the issue's figure).
After each size, on a second fresh store in the same directory, the
direct-Clovis baseline at the same concurrency, BUILD/bench_s3_direct
(tests/bench/bench_s3_direct.c): W writers (W = the clients of the
gateway figure, 1 or 16), each storing the same number of objects of the
same size one at a time as an application keeping named objects through
Clovis does — CREATE the object, WRITE it (ops of at most 4 MiB, 4 in
flight), index PUT of its name -> record, each step STABLE before the
next — then reading them back (index GET, OPEN, READ); the gateway
figure's "ratio" is against it.  Beside it, the earlier baseline, kept
and labelled "raw16": `strata bench --block-size S`, single-object
Clovis writes and reads of the same size with 16 ops in flight.  The clients are Python threads on the same 2 cores as
the gateway: client CPU is part of what is measured.  Beside each Python
figure, the same requests (other keys) from BUILD/bench_s3_put, a C client
that costs little CPU ("c client" column), when it is built.  And a raw
checksum baseline measured in the same run: one core's rate of the ETag's
checksum over the same sizes (BUILD/bench_s3_sum: OpenSSL MD5 for etag
md5, the gateway's CRC64-NVMe for etag crc64; Python's hashlib MD5 when
it is not built), with the ceiling it implies for a PUT with one client,
min(raw Clovis write, raw checksum): the gateway computes the ETag over
every byte it receives.
"""
import hashlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

B, DIR = sys.argv[1], sys.argv[2]
JSON = "--json" in sys.argv
NKEYS = 20000
if "--list-keys" in sys.argv:
    NKEYS = int(sys.argv[sys.argv.index("--list-keys") + 1])
SIZES = None  # --sizes 4K,1M,64M: only these (default all); --sizes none
if "--sizes" in sys.argv:
    SIZES = sys.argv[sys.argv.index("--sizes") + 1].split(",")
NOLIST = "--no-list" in sys.argv
INLINE = "--inline" in sys.argv  # the inline-threshold measurement instead
METANV = "--meta-nvram" in sys.argv  # both stores: metadata on NVRAM
ETAGS = ["md5", "crc64"]
if "--etag" in sys.argv:
    ETAGS = sys.argv[sys.argv.index("--etag") + 1].split(",")
try:
    import boto3
    from botocore.config import Config
except ImportError:
    print("bench_s3: SKIP (boto3 cannot be imported)")
    sys.exit(0)

KiB, MiB = 1 << 10, 1 << 20
GW, S = os.path.join(B, "strata-s3"), os.path.join(B, "strata")
if "--gw" in sys.argv:
    GW = os.path.abspath(sys.argv[sys.argv.index("--gw") + 1])
CCLI = os.path.join(B, "bench_s3_put")
CSUM = os.path.join(B, "bench_s3_sum")
CDIRECT = os.path.join(B, "bench_s3_direct")
D = os.path.join(DIR, "s3-bench")
RAWD = os.path.join(DIR, "s3-bench-raw")
results = []


OURS = set()  # the /dev/shm paths of the stores this run made


def note_store(d):
    """Add store d's /dev/shm entries (metadata link, NVRAM device) to OURS."""
    m = os.path.join(d, "meta")
    if os.path.islink(m):
        OURS.add(os.readlink(m))
    r = subprocess.run([S, "--data", d, "--json", "devices"], capture_output=True, text=True)
    if r.returncode == 0:
        OURS.update(x["path"] for x in json.loads(r.stdout) if x.get("path", "").startswith("/dev/shm/"))


def destroy(d):
    if os.path.lexists(d):
        note_store(d)
        r = subprocess.run([S, "--data", d, "-q", "destroy", "--yes"], capture_output=True, text=True)
        if r.returncode != 0 and os.path.exists(os.path.join(d, "meta")):
            raise SystemExit("bench_s3: strata destroy %s: %s" % (d, r.stderr.strip()))
        shutil.rmtree(d, ignore_errors=True)


def start(extra=()):
    creds = os.path.join(DIR, "s3-bench.creds")
    with open(creds, "w") as f:
        f.write("bench AKBENCH0000000000001 benchsecret0000000000000000000000000000\n")
    pf = os.path.join(DIR, "s3-bench.port")
    if os.path.exists(pf):
        os.unlink(pf)
    if METANV:  # made by strata, so that a --gw binary without the option measures the same store
        r = subprocess.run([S, "--data", D, "--dev-size", "512M", "--meta-nvram", "-q", "pools"],
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.islink(os.path.join(D, "meta")):
            raise SystemExit("bench_s3: strata --meta-nvram could not make %s: %s" % (D, r.stderr.strip()))
    p = subprocess.Popen([GW, "--data", D, "--dev-size", "512M", "--port", "0", "--port-file", pf,
                          "--creds", creds, "--layout", "plain"] + list(extra), stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    p.stdout.readline()
    return p, int(open(pf).read())


def run(port, method, urls, body, nthreads):
    """Each thread sends its share of urls over one connection; MiB/s."""
    errs = []

    def work(mine):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        for u in mine:
            c.request(method, u, body=body if method == "PUT" else None)
            r = c.getresponse()
            n = len(r.read())
            if r.status != 200 or (method == "GET" and n != size):
                errs.append(r.status)
        c.close()
    size = len(body)
    ts = [threading.Thread(target=work, args=(urls[i::nthreads],)) for i in range(nthreads)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.time() - t0
    if errs:
        raise SystemExit("bench_s3: %d requests failed (%s)" % (len(errs), errs[:3]))
    return len(urls) / dt, len(urls) * size / dt / MiB


def run_c(port, method, urls, size, nthreads):
    """The same as run() from the C client; (ops/s, MiB/s) or None."""
    if not os.path.exists(CCLI):
        return None
    f = os.path.join(DIR, "s3-bench.urls")
    with open(f, "w") as o:
        o.write("\n".join(urls) + "\n")
    r = subprocess.run([CCLI, method, str(port), str(nthreads), str(size), f], capture_output=True, text=True)
    w = r.stdout.split()
    if r.returncode != 0 or len(w) < 8:
        raise SystemExit("bench_s3: C client: %s %s" % (r.stdout, r.stderr))
    return int(w[1]) / float(w[3]), float(w[5])


def sum_rate(size, etag):
    """One core's rate of the ETag checksum over size-byte buffers, MiB/s:
    bench_s3_sum (the gateway's own code), else hashlib's MD5."""
    if os.path.exists(CSUM):
        w = subprocess.run([CSUM, str(min(size, 64 * MiB))], capture_output=True, text=True).stdout.split()
        return float(w[w.index("md5" if etag == "md5" else "crc64nvme") + 1])
    body = os.urandom(min(size, 64 * MiB))
    n, t0 = 0, time.time()
    while time.time() - t0 < 0.5 or n == 0:
        hashlib.md5(body).digest()
        n += 1
    return n * len(body) / (time.time() - t0) / MiB


def raw_bench(size, ops):
    destroy(RAWD)
    out = subprocess.run([S, "--data", RAWD, "--dev-size", "256M"] + (["--meta-nvram"] if METANV else [])
                         + ["--json", "bench", "--block-size", str(size), "--ops", str(ops)],
                         capture_output=True, text=True).stdout
    destroy(RAWD)
    os.sync()  # the deleted raw store's writeback must not land in the next figure
    r = {x["test"].split()[1]: x for x in json.loads(out) if x["test"].startswith("obj")}
    return r["write"]["mib_per_s"], r["read"]["mib_per_s"]


def direct_bench(size, writers, count):
    """bench_s3_direct: (PUT MiB/s, GET MiB/s) of `writers` direct-Clovis
    writers storing `count` named objects of `size` bytes in all."""
    destroy(RAWD)
    r = subprocess.run([CDIRECT, RAWD, str(size), str(writers), str(count), "--dev-size", "256" if size * count <= 512 * MiB else "512", "--keep"]
                       + (["--meta-nvram"] if METANV else []), capture_output=True, text=True)
    destroy(RAWD)
    os.sync()
    w = {l.split()[0]: l.split() for l in r.stdout.splitlines() if l.strip()}
    if r.returncode != 0 or "put" not in w or "get" not in w:
        raise SystemExit("bench_s3: bench_s3_direct: %s %s" % (r.stdout, r.stderr))
    return float(w["put"][6]), float(w["get"][6])


def measure_list(s3, port):
    """Load NKEYS empty objects with 16 clients, then page through them."""
    s3.create_bucket(Bucket="list")
    keys = ["dir%03d/key%07d" % (i % 100, i) for i in range(NKEYS)]
    pu = [s3.generate_presigned_url("put_object", Params={"Bucket": "list", "Key": k}, ExpiresIn=3600)
          .split(str(port), 1)[1] for k in keys]
    t0 = time.time()
    run(port, "PUT", pu, b"", 16)
    load_s = time.time() - t0
    t0 = time.time()
    n, tok = 0, None
    while True:
        kw = {"ContinuationToken": tok} if tok else {}
        r = s3.list_objects_v2(Bucket="list", MaxKeys=1000, **kw)
        n += r["KeyCount"]
        if not r["IsTruncated"]:
            break
        tok = r["NextContinuationToken"]
    list_s = time.time() - t0
    assert n == NKEYS, n
    # the gateway's own time per page (its statistics), without the client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/_strata/stats")
    st = [o for o in json.loads(c.getresponse().read())["ops"] if o["op"] == "ListObjectsV2"][0]
    c.close()
    return list_s, load_s, st["mean_us"] * st["count"] / 1e6


def inline_main():
    """PUT and GET of 1..256 KiB objects kept inline in their index record
    (--inline-max 256K) beside the same as Clovis objects (--inline-max
    0), 16 clients; the object path is the baseline of the ratio."""
    sizes = [1 * KiB, 4 * KiB, 16 * KiB, 64 * KiB, 128 * KiB, 256 * KiB]
    res = {}
    for mode, imax in (("inline", str(256 * KiB)), ("object", "0")):
        destroy(D)
        os.makedirs(DIR, exist_ok=True)
        p, port = start(["--inline-max", imax])
        s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % port,
                          aws_access_key_id="AKBENCH0000000000001",
                          aws_secret_access_key="benchsecret0000000000000000000000000000", region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
        try:
            s3.create_bucket(Bucket="bench")
            for size in sizes:
                body = os.urandom(size)
                keys = ["i%d-%d" % (size, i) for i in range(400)]
                pu = [s3.generate_presigned_url("put_object", Params={"Bucket": "bench", "Key": k}, ExpiresIn=3600)
                      .split(str(port), 1)[1] for k in keys]
                gu = [s3.generate_presigned_url("get_object", Params={"Bucket": "bench", "Key": k}, ExpiresIn=3600)
                      .split(str(port), 1)[1] for k in keys]
                res[(size, mode, "PUT")] = run(port, "PUT", pu, body, 16)
                res[(size, mode, "GET")] = run(port, "GET", gu, body, 16)
                s3.delete_objects(Bucket="bench", Delete={"Quiet": True, "Objects": [{"Key": k} for k in keys]})
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(120)
            destroy(D)
    for size in sizes:
        for op in ("PUT", "GET"):
            a, b = res[(size, "inline", op)][0], res[(size, "object", op)][0]
            results.append({"test": "s3 inline %s %d KiB x16" % (op, size // KiB), "ops_per_s": round(a, 1),
                            "object_ops_per_s": round(b, 1), "ratio": round(a / b, 3)})
    if JSON:
        print(json.dumps(results, indent=1))
    else:
        print("S3 gateway: objects kept inline in the index record beside Clovis objects (16 clients, ops/s):")
        for r in results:
            print("  %-26s inline %8.1f   object %8.1f   ratio %.3f" % (r["test"], r["ops_per_s"],
                                                                     r["object_ops_per_s"], r["ratio"]))


def presigned(s3, port, op, keys):
    return [s3.generate_presigned_url(op, Params={"Bucket": "bench", "Key": k}, ExpiresIn=3600)
            .split(str(port), 1)[1] for k in keys]


def drop_keys(s3, keys):
    for i in range(0, len(keys), 1000):
        s3.delete_objects(Bucket="bench", Delete={"Quiet": True, "Objects": [{"Key": k} for k in keys[i:i + 1000]]})


def measure_size(s3, port, size, n1, n16, gw, gwc, direct):
    """PUT then GET of one size with 1 and 16 clients, Python and C; the
    direct baseline of each (1 and 16 writers, the same count) right after
    the gateway's, once per size over all etag modes."""
    body = os.urandom(size)
    for nt, n in ((1, n1), (16, n16)):
        if (size, nt) not in direct:
            direct[(size, nt)] = direct_bench(size, nt, n)
        keys = ["o%d-%d-%d" % (size, nt, i) for i in range(n)]
        gw[(size, nt, "PUT")] = run(port, "PUT", presigned(s3, port, "put_object", keys), body, nt)
        gw[(size, nt, "GET")] = run(port, "GET", presigned(s3, port, "get_object", keys), body, nt)
        drop_keys(s3, keys)
        keys = ["c" + k for k in keys]
        gwc[(size, nt, "PUT")] = run_c(port, "PUT", presigned(s3, port, "put_object", keys), size, nt)
        gwc[(size, nt, "GET")] = run_c(port, "GET", presigned(s3, port, "get_object", keys), size, nt)
        drop_keys(s3, keys)


def measure_mode(etag, plan, raw, csum, with_list, direct):
    """One gateway run with `--etag etag`: every size of plan; the raw
    Clovis baseline and the checksum rate right after each size (the raw
    one only once per size over all modes)."""
    destroy(D)
    os.makedirs(DIR, exist_ok=True)
    os.sync()
    p, port = start([] if etag == "md5" else ["--etag", etag])
    s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % port, aws_access_key_id="AKBENCH0000000000001",
                      aws_secret_access_key="benchsecret0000000000000000000000000000", region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
    s3.create_bucket(Bucket="bench")
    gw, gwc, lst = {}, {}, None
    ops = {4 * KiB: 4000, MiB: 256, 64 * MiB: 16}
    try:
        for size, n1, n16 in plan:
            measure_size(s3, port, size, n1, n16, gw, gwc, direct)
            if size not in raw:  # right after the same size: the load drifts
                raw[size] = raw_bench(size, ops[size])
            csum[(size, etag)] = sum_rate(size, etag)
        if with_list:
            lst = measure_list(s3, port)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(120)
        destroy(D)
    return gw, gwc, lst


def report(etag, gw, gwc, raw, csum, direct):
    for (size, nt, op), (ops_s, mib_s) in sorted(gw.items()):
        base = direct[(size, nt)][0 if op == "PUT" else 1]
        raw16 = raw[size][0 if op == "PUT" else 1]
        r = {"test": "s3 %s %s x%d etag %s" % (op, "4 KiB" if size < MiB else "%d MiB" % (size // MiB), nt, etag),
             "ops_per_s": round(ops_s, 1), "mib_per_s": round(mib_s, 2),
             "direct_clovis_mib_per_s": base, "ratio": round(mib_s / base, 3) if base else 0,
             "raw16_clovis_mib_per_s": raw16, "ratio_raw16": round(mib_s / raw16, 3) if raw16 else 0,
             "meta_nvram": METANV}
        c = gwc.get((size, nt, op))
        if c is not None:
            r["c_client_mib_per_s"] = round(c[1], 2)
            r["c_client_ratio"] = round(c[1] / base, 3) if base else 0
        if op == "PUT":
            r["raw_sum_mib_per_s"] = round(csum[(size, etag)], 1)
            r["ceiling_mib_per_s"] = round(min(base, csum[(size, etag)]), 1)  # vs the direct writers
        results.append(r)


def main():
    plan = [(4 * KiB, 2000, 4000), (MiB, 64, 256), (64 * MiB, 3, 16)]
    names = {4 * KiB: "4K", MiB: "1M", 64 * MiB: "64M"}
    if SIZES is not None:
        plan = [x for x in plan if names[x[0]] in SIZES]
    raw, csum, lst, direct = {}, {}, None, {}
    for i, etag in enumerate(ETAGS):
        gw, gwc, l = measure_mode(etag, plan, raw, csum, i == 0 and not NOLIST, direct)
        lst = lst or l
        report(etag, gw, gwc, raw, csum, direct)
    if lst is not None:
        results.append({"test": "s3 LIST %d keys (pages of 1000)" % NKEYS, "keys_per_s": round(NKEYS / lst[0]),
                        "seconds": round(lst[0], 3), "load_puts_per_s": round(NKEYS / lst[1]),
                        "gateway_keys_per_s": round(NKEYS / lst[2]) if lst[2] else 0})
    if JSON:
        print(json.dumps(results, indent=1))
        return
    print("S3 gateway (HTTP on 127.0.0.1, python clients) beside direct Clovis: as many writers as clients,"
          " one named object at a time (bench_s3_direct), and raw16 (strata bench, 16 in flight)%s:"
          % (", all stores with metadata on NVRAM (/dev/shm)" if METANV else ""))
    for r in results:
        if "ratio" in r:
            print("  %-32s %9.1f ops/s %9.2f MiB/s   direct %9.2f MiB/s   ratio %.3f   raw16 %9.2f ratio %.3f%s%s" % (
                r["test"], r["ops_per_s"], r["mib_per_s"], r["direct_clovis_mib_per_s"], r["ratio"],
                r["raw16_clovis_mib_per_s"], r["ratio_raw16"],
                "   c client %9.2f MiB/s ratio %.3f" % (r["c_client_mib_per_s"], r["c_client_ratio"])
                if "c_client_mib_per_s" in r else "",
                "   raw ETag sum %.0f MiB/s, ceiling min(raw, sum) %.0f" % (r["raw_sum_mib_per_s"],
                                                                     r["ceiling_mib_per_s"])
                if "raw_sum_mib_per_s" in r else ""))
        else:
            print("  %-32s %9d keys/s (%.2f s; loaded at %d PUT/s); in the gateway alone %d keys/s" % (
                r["test"], r["keys_per_s"], r["seconds"], r["load_puts_per_s"], r["gateway_keys_per_s"]))


def checked(fn):
    """fn(), then: no /dev/shm entry of a store this run made is left
    (each store's entries are noted before it is destroyed; entries of
    other processes' stores are not looked at)."""
    try:
        fn()
    finally:
        destroy(D)
        destroy(RAWD)
        left = sorted(x for x in OURS if os.path.lexists(x))
        if left:
            raise SystemExit("bench_s3: left in /dev/shm by this run's stores: %s" % " ".join(left))


checked(inline_main if INLINE else main)
