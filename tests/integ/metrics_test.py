#!/usr/bin/env python3
"""metrics_test.py BUILD — the metrics of every process kind (issue 30;
addb/addb.h, docs/monitoring.md).

1. An embedded application (examples/metrics_app, which opts in with
   clovis_addb_serve()): its /metrics page passes `promtool check metrics`
   and parses with prometheus_client's parser; counters move by exactly
   the ops it performed (4 KiB writes, index PUTs and GETs); the same
   values read from outside through its shared-memory region (`strata
   metrics --pid P`) and from inside (clovis_addb_metrics()); bad requests
   to the endpoint get 404, 405, 400.
2. SIGKILLed, its region still reads (the values of its last scrape, "not
   running"); restarted, it starts from zero in a region of its own;
   `strata metrics --sweep` removes the dead one; reading a region that is
   gone or damaged is a clear error, never a crash.
3. strata-server --metrics on a one-server cluster (ports 6610-6613): its
   page passes promtool; its request counters move by exactly the requests
   a client sent; `strata metrics server s0` gives the same page through
   the cluster protocol; `strata stats` and `strata cluster status` in
   cluster mode sum the servers' served requests (kept by the servers:
   they outlive the clients that sent them).
4. strata-s3 --metrics: requests by operation and status class, exactly.
5. The ADDB trace of a running app, switched from outside (`strata addb
   trace PID on N [MIB]` / `off`): its records decode (`strata addb dump
   --json`) to exactly the ops performed, each launched before it ended,
   in order per thread, one op in N when sampled, none once off; under a
   60 s write load the trace file never exceeds its bound and keeps the
   latest records; `strata addb top` shows the busy op class.

Ends with "N passed, N failed".
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
S = os.path.join(B, "strata")
APP = os.path.join(B, "examples", "metrics_app")
PROMTOOL = "/usr/bin/promtool"
BASE_PORT = 6610  # tests/steps.list: used by no other step
T = tempfile.mkdtemp(prefix="strata-metrics-test.")
passed = failed = 0
procs = []


def ok(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   - " + what)
    else:
        failed += 1
        print("FAIL - " + what + (": " + str(detail) if detail else ""))
    return cond


def free_port():
    """A loopback port nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(port, path="/metrics", method="GET"):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def parse(text):
    """{(sample name, frozenset(labels)): value} of a Prometheus page."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def val(m, name, **labels):
    return m.get((name, frozenset(labels.items())), 0.0)


def total(m, name, **labels):
    """Sum of the samples of name whose labels include labels."""
    want = set(labels.items())
    return sum(v for (n, ls), v in m.items() if n == name and want <= ls)


def promtool(text, what):
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=120)
    ok(r.returncode == 0, "promtool check metrics: " + what,
       (r.stdout + r.stderr)[-600:])


class App:
    """metrics_app driven on its standard input."""

    def __init__(self, data):
        self.p = subprocess.Popen([APP, data], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        procs.append(self.p)
        line = self.p.stdout.readline().split()
        self.pid, self.port = int(line[2]), int(line[4])

    def cmd(self, c):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def until_end(self, c):
        """Send c; the lines it answers up to its "end" line."""
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        lines = []
        for line in self.p.stdout:
            if line == "end\n":
                break
            lines.append(line)
        return lines

    def text(self):
        return "".join(self.until_end("text"))


def cli(*args, check=False):
    r = subprocess.run([S] + list(args), capture_output=True, text=True,
                       timeout=300)
    if check and r.returncode != 0:
        print("  %s: rc %d: %s" % (" ".join(args), r.returncode,
                                   r.stderr.strip()))
    return r


def part_embedded():
    data = os.path.join(T, "app")
    a = App(data)
    st, page = fetch(a.port)
    ok(st == 200, "embedded app serves /metrics (port %d)" % a.port)
    promtool(page, "embedded application")
    m0 = parse(page)
    r = a.cmd("write 37")
    ok(r == "done write 37", "37 writes of 4 KiB", r)
    r = a.cmd("put 23")
    ok(r == "done put 23", "23 index PUTs", r)
    r = a.cmd("get 11")
    ok(r == "done get 11", "11 index GETs", r)
    st, page = fetch(a.port)
    m1 = parse(page)
    c = "strata_client_op_latency_seconds_count"
    for op, n in (("obj.write", 37), ("idx.put", 23), ("idx.get", 11)):
        d = val(m1, c, op=op) - val(m0, c, op=op)
        ok(d == n, "%s{op=%s} moved by exactly %d" % (c, op, n), d)
    d = (val(m1, "strata_client_op_bytes_total", op="obj.write") -
         val(m0, "strata_client_op_bytes_total", op="obj.write"))
    ok(d == 37 * 4096, "strata_client_op_bytes_total{op=obj.write} moved by "
       "37 x 4096", d)
    d = (val(m1, "strata_client_op_records_total", op="idx.put") -
         val(m0, "strata_client_op_records_total", op="idx.put"))
    ok(d == 23, "strata_client_op_records_total{op=idx.put} moved by 23", d)
    d = (total(m1, "strata_device_io_bytes_total", io="write") -
         total(m0, "strata_device_io_bytes_total", io="write"))
    ok(d >= 37 * 4096, "device write bytes moved by at least the data", d)
    d = (total(m1, "strata_commit_items_total") -
         total(m0, "strata_commit_items_total"))
    ok(d >= 37 + 23, "group commits carried every update (items %d)" % d, d)
    ok(total(m1, "strata_client_op_errors_total") == 0, "no op failed")
    ok(val(m1, "strata_client_op_latency_seconds_bucket", op="obj.write",
           le="+Inf") == val(m1, c, op="obj.write"),
       "histogram: the +Inf bucket equals the count")
    free = [v for (n, ls), v in m1.items()
            if n == "strata_device_free_bytes"]
    ok(len(free) >= 8 and all(v > 0 for v in free),
       "every device's free bytes are shown (%d devices)" % len(free))
    # the same values from outside (the region) and inside (the API)
    r = cli("metrics", "--pid", str(a.pid))
    ok(r.returncode == 0, "strata metrics --pid reads the running app",
       r.stderr)
    mo = parse(r.stdout)
    ok(val(mo, c, op="idx.put") == val(m1, c, op="idx.put") and
       val(mo, c, op="obj.write") == val(m1, c, op="obj.write"),
       "the region gives the page's values")
    mi = parse(a.text())
    ok(val(mi, c, op="idx.get") == val(m1, c, op="idx.get"),
       "clovis_addb_metrics() gives the page's values")
    r = cli("metrics", "--pid", str(a.pid), "--json")
    ok(r.returncode == 0 and r.stdout.startswith('{"pid":%d' % a.pid),
       "strata metrics --json", r.stdout[:80])
    r = cli("metrics")
    ok(str(a.pid) in r.stdout and "running" in r.stdout,
       "strata metrics lists the app's region as running", r.stdout)
    st, page = fetch(a.port, "/metrics?min_priority=10")
    ok(st == 200 and "strata_device_io_total" not in page and
       "strata_client_op_latency_seconds" in page,
       "min_priority=10 keeps only the critical families")
    ok(fetch(a.port, "/nothing")[0] == 404, "another path: 404")
    ok(fetch(a.port, "/metrics", "POST")[0] == 405, "POST: 405")
    ok(fetch(a.port, "/metrics?min_priority=abc")[0] == 400,
       "a bad min_priority: 400")
    r = cli("metrics", "--pid", "0")
    ok(r.returncode == 2, "--pid 0 is a usage error", r.returncode)

    # 2. killed: the region stays readable; a restart starts fresh
    last = val(m1, c, op="obj.write")
    a.p.send_signal(signal.SIGKILL)
    a.p.wait()
    r = cli("metrics", "--pid", str(a.pid))
    ok(r.returncode == 0 and "not running" in r.stderr,
       "the killed app's region reads, said not running", r.stderr)
    ok(val(parse(r.stdout), c, op="obj.write") == last,
       "with the values it had when it was killed")
    b = App(data)
    st, page = fetch(b.port)
    mb = parse(page)
    ok(st == 200 and val(mb, c, op="obj.write") == 0 and
       val(mb, c, op="entity.create") <= 2,
       "the restarted app starts from zero")
    ok(b.pid != a.pid, "in a region of its own")
    r = cli("metrics", "--sweep")
    ok(r.returncode == 0 and not os.path.exists(
        "/dev/shm/strata-addb.%d" % a.pid), "--sweep removes the dead "
       "region", r.stdout + r.stderr)
    ok(os.path.exists("/dev/shm/strata-addb.%d" % b.pid),
       "and keeps the running one's")
    r = cli("metrics", "--pid", str(a.pid))
    ok(r.returncode == 1 and "no metrics region" in r.stderr,
       "a region that is gone: a clear error", r.stderr)
    bad = os.path.join(T, "bad-region")
    with open("/dev/shm/strata-addb.%d" % b.pid, "rb") as f:
        img = bytearray(f.read())
    for what, data_ in (("cut", img[:len(img) // 3]), ("garbage",
                        bytes(len(img))), ("empty", b"")):
        with open(bad, "wb") as f:
            f.write(data_)
        r = cli("metrics", "--file", bad)
        ok(r.returncode == 1 and "strata:" in r.stderr and bad in r.stderr,
           "a %s region file: refused, naming it" % what, r.stderr)
    r = b.cmd("quit")
    b.p.wait(timeout=120)
    ok(b.p.returncode == 0 and not os.path.exists(
        "/dev/shm/strata-addb.%d" % b.pid),
       "a clean exit removes the region")


def part_server():
    d = os.path.join(T, "cl")
    r = cli("cluster", "up", "--nodes", "1", "--no-etcd", "--dir", d,
            "--base-port", str(BASE_PORT), "--nvram-dir",
            os.path.join(T, "nv"), check=True)
    if not ok(r.returncode == 0, "cluster up (1 server, ports %d..)" %
              BASE_PORT, r.stderr):
        return
    conf = os.path.join(d, "cluster.yaml")
    pidf = os.path.join(d, "s0.pid")
    try:
        pid = int(open(pidf).read())
        os.kill(pid, signal.SIGTERM)
        for _ in range(600):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        port = free_port()
        r = subprocess.run([os.path.join(B, "strata-server"), "--config",
                            conf, "--name", "s0", "--pid-file", pidf,
                            "--log-file", os.path.join(d, "s0.log"),
                            "--metrics", "127.0.0.1:%d" % port],
                           capture_output=True, text=True, timeout=300)
        if not ok(r.returncode == 0, "strata-server --metrics starts",
                  r.stderr):
            return
        r = subprocess.run([os.path.join(B, "strata-server"), "--config",
                            conf, "--name", "s0", "--foreground",
                            "--metrics", "127.0.0.1:notaport"],
                           capture_output=True, text=True, timeout=120)
        ok(r.returncode != 0 and "notaport" in r.stderr,
           "a bad --metrics is refused, named", r.stderr)
        st, page = fetch(port)
        ok(st == 200, "strata-server serves /metrics")
        promtool(page, "strata-server")
        m0 = parse(page)
        r = cli("--cluster", conf, "idx", "create", "@mx", check=True)
        r = cli("--cluster", conf, "idx", "put", "@mx", "a", "1", "b", "2",
                "c", "3", "d", "4", "e", "5", check=True)
        ok(r.returncode == 0, "a client puts 5 records", r.stderr)
        r = cli("--cluster", conf, "idx", "get", "@mx", "c", check=True)
        ok(r.stdout.strip() == "3", "and gets one", r.stdout)
        st, page = fetch(port)
        m1 = parse(page)
        c = "strata_server_op_latency_seconds_count"
        for op, n in (("idx.put", 5), ("idx.get", 1), ("entity.create", 1)):
            dv = val(m1, c, op=op) - val(m0, c, op=op)
            ok(dv == n, "server %s{op=%s} moved by exactly %d" % (c, op, n),
               dv)
        ok(total(m1, "strata_commit_batches_total") >
           total(m0, "strata_commit_batches_total"),
           "the server's group commits are counted")
        r = cli("--cluster", conf, "metrics", "server", "s0")
        ok(r.returncode == 0, "strata metrics server s0", r.stderr)
        promtool(r.stdout, "SOP_METRICS answer")
        mc = parse(r.stdout)
        ok(val(mc, c, op="idx.put") == val(m1, c, op="idx.put"),
           "the cluster protocol gives the page's values")
        import json
        r = cli("--cluster", conf, "stats", "--json")
        try:
            served = json.loads(r.stdout)["served"]
        except (ValueError, KeyError):
            served = {}
        ok(r.returncode == 0 and served.get("idx.put", {}).get("count") ==
           val(m1, c, op="idx.put") and
           served.get("idx.get", {}).get("count") == val(m1, c, op="idx.get"),
           "strata stats in cluster mode: the servers' requests, summed",
           r.stdout[:300])
        r = cli("--cluster", conf, "stats")
        ok(r.returncode == 0 and "idx.put" in r.stdout and
           "requests served" in r.stdout, "strata stats as text", r.stdout)
        ok(cli("--cluster", conf, "stats", "--reset").returncode == 2,
           "stats --reset in cluster mode is refused")
        r = cli("cluster", "status", "--dir", d, "--json")
        try:
            st = json.loads(r.stdout)["metrics"]["served"]
        except (ValueError, KeyError):
            st = {}
        ok(st.get("idx.put", {}).get("count") == val(m1, c, op="idx.put"),
           "strata cluster status --json carries the served requests",
           r.stdout[-300:])
        spid = int(open(pidf).read())
        r = cli("addb", "trace", str(spid), "on")
        ok(r.returncode == 0, "the server's trace switched on", r.stderr)
        cli("--cluster", conf, "idx", "put", "@mx", "f", "6", "g", "7")
        r = cli("--cluster", conf, "addb", "records", "s0", "--count", "1000")
        recs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
        ok(r.returncode == 0 and
           sum(1 for x in recs if x["kind"] == "srv.reply" and
               x["a"] == 5 and x["b"] == 0) == 2,
           "strata addb records s0: the server's 2 PUT requests, answered 0",
           r.stderr + r.stdout[-300:])
        # an op traced from client to server: the client's op.sent names
        # its op; the server traces the request its caller traces and
        # names the caller's op in its srv.recv, then its own stages
        r = cli("addb", "trace", str(spid), "on", "1000000")
        ok(r.returncode == 0, "the server's trace: one request in 10^6")
        ca = App("cluster:" + conf)
        r = cli("addb", "trace", str(ca.pid), "on", "1")
        ok(r.returncode == 0 and ca.cmd("write 2") == "done write 2",
           "a traced cluster client writes 2 blocks", r.stderr)
        _, crecs = dump(ca.pid)
        cl_ops = [x["id"] for x in crecs if x["kind"] == "op.launch" and
                  x["a"] == 1]
        sent = [x for x in crecs if x["kind"] == "op.sent" and
                x["id"] in cl_ops]
        ok(len(cl_ops) == 2 and {x["id"] for x in sent} == set(cl_ops) and
           all(x["b"] > 4096 for x in sent),
           "the client records op.sent for each write, its bytes",
           [(x["kind"], x["id"]) for x in crecs][:20])
        r = cli("--cluster", conf, "addb", "records", "s0", "--count",
                "10000")
        srecs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
        recv = {x["b"]: x["id"] for x in srecs if x["kind"] == "srv.recv"
                and x["b"] in cl_ops}
        ok(set(recv) == set(cl_ops),
           "the server's srv.recv names each of the client's ops", recv)
        sst = ("srv.recv", "op.placed", "op.stored", "op.committed",
               "op.stable", "srv.reply")
        ok(all([x["kind"] for x in srecs if x["id"] == sid and
                x["kind"] in sst] == list(sst) for sid in recv.values()),
           "the server records each request's stages in order: " +
           ", ".join(sst),
           [[x["kind"] for x in srecs if x["id"] == sid]
            for sid in recv.values()])
        ca.cmd("quit")
        ca.p.wait(timeout=120)  # its statistics pushed as it ended
        # the statistics of clients that ended: each strata command that
        # ran an op pushed its own to the server as it ended
        def cstats():
            r = cli("--cluster", conf, "stats", "--json")
            try:
                j = json.loads(r.stdout)["clients"]
                return j["pushed"], {o["op"]: o["count"] for o in j["ops"]}
            except (ValueError, KeyError, TypeError):
                return None, {}
        p0, o0 = cstats()
        cli("--cluster", conf, "idx", "put", "@mx", "y", "8", check=True)
        cli("--cluster", conf, "idx", "get", "@mx", "y", check=True)
        p1, o1 = cstats()
        ok(p0 is not None and p1 == p0 + 2 and
           o1.get("idx.put") == o0.get("idx.put", 0) + 1 and
           o1.get("idx.get") == o0.get("idx.get", 0) + 1,
           "strata stats: the ops of 2 clients that ended, pushed to the "
           "server (1 idx.put, 1 idx.get more)", (p0, p1, o0, o1))
        r = cli("--cluster", conf, "stats")
        ok("ops of the clients that ended" in r.stdout,
           "strata stats as text shows them", r.stdout[-400:])
        os.kill(int(open(pidf).read()), signal.SIGTERM)
        for _ in range(600):
            if not os.path.exists(pidf):
                break
            time.sleep(0.1)
        r = subprocess.run([os.path.join(B, "strata-server"), "--config",
                            conf, "--name", "s0", "--pid-file", pidf,
                            "--log-file", os.path.join(d, "s0.log"),
                            "--metrics", "127.0.0.1:%d" % port],
                           capture_output=True, text=True, timeout=300)
        ok(r.returncode == 0, "s0 restarted (SIGTERM, start)", r.stderr)
        p2, o2 = cstats()
        ok(p2 == p1 and o2 == o1,
           "the clients' sums survive the server's restart", (p1, p2))
        r = cli("--cluster", conf, "metrics", "server", "s9")
        ok(r.returncode == 1 and "s9" in r.stderr,
           "an unknown server is named in the error", r.stderr)
        r = cli("--cluster", conf, "metrics", "server", "s0", "--json",
                "--min-priority", "10")
        ok(r.returncode == 0 and '"strata_device_io_total"' not in r.stdout
           and '"strata_server_op_latency_seconds"' in r.stdout,
           "--json --min-priority 10 through the cluster", r.stdout[:200])
    finally:
        cli("cluster", "down", "--dir", d)


def part_s3():
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    creds = os.path.join(T, "creds")
    r = cli("s3", "user", "add", "alice", creds)
    if not ok(r.returncode == 0, "s3 user add", r.stderr):
        return
    user = [l.split() for l in open(creds) if l.strip() and l[0] != "#"][0]
    mport = free_port()
    pf = os.path.join(T, "s3port")
    gw = subprocess.Popen([os.path.join(B, "strata-s3"), "--data",
                           os.path.join(T, "s3data"), "--dev-size", "256M",
                           "--port", "0", "--port-file", pf, "--creds",
                           creds, "--metrics", str(mport)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    procs.append(gw)
    line = gw.stdout.readline()
    if not ok("listening" in line, "strata-s3 --metrics starts", line):
        return
    ep = "http://127.0.0.1:%s" % open(pf).read().strip()
    s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=user[1],
                      aws_secret_access_key=user[2], region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"max_attempts": 1}))
    st, page = fetch(mport)
    ok(st == 200, "strata-s3 serves /metrics on a bare port (loopback)")
    promtool(page, "strata-s3")
    m0 = parse(page)
    s3.create_bucket(Bucket="mxbucket")
    for i in range(3):
        s3.put_object(Bucket="mxbucket", Key="k%d" % i, Body=b"x" * 100)
    for i in range(2):
        s3.get_object(Bucket="mxbucket", Key="k%d" % i)["Body"].read()
    try:
        s3.get_object(Bucket="mxbucket", Key="missing")
    except ClientError:
        pass
    m1 = parse(fetch(mport)[1])
    n = "strata_s3_requests_total"
    for op, stc, want in (("put", "2xx", 3), ("get", "2xx", 2),
                          ("get", "4xx", 1), ("bucket", "2xx", 1)):
        dv = (val(m1, n, operation=op, status=stc) -
              val(m0, n, operation=op, status=stc))
        ok(dv == want, "%s{operation=%s,status=%s} moved by exactly %d" %
           (n, op, stc, want), dv)
    dv = (val(m1, "strata_s3_request_latency_seconds_count", operation="put")
          - val(m0, "strata_s3_request_latency_seconds_count",
                operation="put"))
    ok(dv == 3, "the S3 latency histogram counted the 3 PUTs", dv)
    ok(total(m1, "strata_client_op_latency_seconds_count") >
       total(m0, "strata_client_op_latency_seconds_count"),
       "the gateway's own Clovis ops are counted too")
    gw.send_signal(signal.SIGTERM)
    gw.wait(timeout=120)


def dump(pid):
    import json
    r = cli("addb", "dump", str(pid), "--json")
    recs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    return r, recs


def part_trace():
    data = os.path.join(T, "trace-app")
    a = App(data)
    trace = "/dev/shm/strata-addb.%d.trace" % a.pid
    r = cli("addb", "dump", str(a.pid))
    ok(r.returncode == 1 and "no trace" in r.stderr,
       "no trace before it is switched on", r.stderr)
    r = cli("addb", "trace", str(a.pid), "on", "1", "4")
    ok(r.returncode == 0, "strata addb trace PID on 1 4", r.stderr)
    ok(a.cmd("write 5") == "done write 5", "5 writes traced")
    r, recs = dump(a.pid)
    ok(r.returncode == 0, "strata addb dump --json", r.stderr)
    w = 1  # op class obj.write
    launch = {x["id"]: x for x in recs if x["kind"] == "op.launch" and
              x["a"] == w}
    end = {x["id"]: x for x in recs if x["kind"] == "op.end" and
           x["a"] == w}
    ok(len(launch) == 5 and set(launch) == set(end),
       "exactly the 5 writes, each launched and ended", (len(launch),
                                                          len(end)))
    ok(all(launch[i]["t"] <= end[i]["t"] and end[i]["b"] == 0 and
           end[i]["c"] > 0 for i in launch),
       "each launched before it ended, rc 0, with its latency")
    ok(sum(1 for x in recs if x["kind"] == "dev.io" and x["b"] == 4096)
       >= 5, "the device writes of 4 KiB are recorded")
    # every stage of each write, in order: launched, placed (space taken),
    # stored (data on the device), committed, executed, stable, ended
    stages = ("op.launch", "op.placed", "op.stored", "op.committed",
              "op.executed", "op.stable", "op.end")
    seen = {}
    for x in recs:
        if x["id"] in launch and x["kind"] in stages:
            seen.setdefault(x["id"], []).append(x)
    ok(all([x["kind"] for x in seen.get(i, [])] == list(stages) and
           all(x["a"] == w for x in seen[i]) for i in launch),
       "each write's stages recorded once each, in order: " +
       ", ".join(stages), [[x["kind"] for x in v] for v in seen.values()])
    ok(all(x["b"] == 4096 for v in seen.values() for x in v
           if x["kind"] == "op.stored"), "op.stored names its 4096 bytes")
    import json
    got = [json.loads(l) for l in a.until_end("records 3")]
    ok(len(got) == 3 and got[-1]["kind"] == recs[-1]["kind"] and
       got[-1]["id"] == recs[-1]["id"],
       "clovis_addb_records(): the last 3 records, as the dump has them",
       got)
    ok(any(x["kind"] == "commit" for x in recs), "group commits recorded")
    rings = {}
    inorder = True
    for x in recs:
        if x["t"] < rings.get(x["ring"], -1):
            inorder = False
        rings[x["ring"]] = x["t"]
    ok(inorder, "records in time order per thread")
    r = cli("addb", "trace", str(a.pid), "off")
    ok(r.returncode == 0 and a.cmd("write 3") == "done write 3",
       "trace off, 3 more writes")
    _, recs2 = dump(a.pid)
    ok(sum(1 for x in recs2 if x["kind"] == "op.launch") ==
       sum(1 for x in recs if x["kind"] == "op.launch"),
       "nothing recorded once off")
    r = cli("addb", "trace", str(a.pid), "on", "4")
    ok(r.returncode == 0 and a.cmd("write 40") == "done write 40",
       "trace on, one op in 4, 40 writes")
    _, recs3 = dump(a.pid)
    n = (sum(1 for x in recs3 if x["kind"] == "op.launch" and x["a"] == w)
         - len(launch))
    ok(n == 10, "one op in 4 traced: 10 of 40", n)
    ok(cli("addb", "trace", str(a.pid), "on", "0").returncode == 2,
       "a sample of 0 is a usage error")
    ok(cli("addb", "trace", "99999999999", "on").returncode == 2,
       "a pid out of range is a usage error")
    # top while the app writes
    top = subprocess.Popen([S, "addb", "top", str(a.pid), "--count", "2"],
                           stdout=subprocess.PIPE, text=True)
    t0 = time.time()
    while top.poll() is None and time.time() - t0 < 120:
        a.cmd("write 20")  # writes all along top's two seconds
    out = top.communicate(timeout=120)[0]
    ok("obj.write" in out, "strata addb top shows the writes", out[:300])
    # 60 s of writes, every op traced: the file keeps its bound
    r = cli("addb", "trace", str(a.pid), "on", "1")
    bound = os.path.getsize(trace)
    ok(bound <= 4 << 20, "the trace file is within its 4 MiB bound", bound)
    t0, sizes, n = time.time(), [], 0
    while time.time() - t0 < 60 and n < 100000:
        a.cmd("write 100")
        n += 100
        sizes.append(os.path.getsize(trace))
    ok(max(sizes) == bound, "60 s of writes (%d, every op traced): the file "
       "never grew past %d bytes" % (n, bound), max(sizes))
    r, recs4 = dump(a.pid)
    kept = len(recs4)
    m = [l for l in r.stderr.splitlines() if "records kept of" in l]
    written = int(m[0].split("kept of ")[1].split()[0]) if m else 0
    ok(kept < written and kept > 1000,
       "the rings wrapped: %d records kept of %d written" % (kept, written))
    ok(a.cmd("quit").startswith("done") or True, "the app ends")
    a.p.wait(timeout=120)
    ok(not os.path.exists(trace), "a clean exit removes the trace file")


def main():
    for p in (S, APP, PROMTOOL):
        if not os.access(p, os.X_OK):
            ok(False, "%s is there (make deps installs promtool)" % p)
            return
    try:
        part_embedded()
        part_server()
        part_s3()
        part_trace()
    except Exception as e:  # a crash of the test is a failure, named
        import traceback
        traceback.print_exc()
        ok(False, "test ran to its end", e)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if os.environ.get("KEEP") != "1":
            # the embedded stores' NVRAM devices live in /dev/shm
            for data in ("app", "s3data", "trace-app"):
                if os.path.isdir(os.path.join(T, data)):
                    cli("--data", os.path.join(T, data), "destroy", "--yes")
            subprocess.run(["rm", "-rf", T])
        else:
            print("kept " + T)


main()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
