#!/usr/bin/env python3
"""bench_ha.py BUILD [--json] [--dir DIR] [--reps N] [--figs G,...] — the
HA figures of make bench (issue 28, docs/ha.md), each beside a raw
baseline measured in the same run.

Groups (--figs; default all):

  fail   failover on a 4-server loopback cluster with a 3-member etcd
         (`strata cluster up --nodes 4 --etcd-members 3`), once at the
         analyzer's test presets (--ha-test: lease 3 s, quiet window 1 s)
         and once at the defaults (lease 5 s, quiet window 10 s):
           server    a server (not the analyzer's leader) SIGKILLed: time
                     from the kill to its state FAILED in the map (etcd
                     key /strata/dev/map, polled every 50 ms); beside it
                     the first event about it (its time_ms, written by the
                     reporter) and the decision's log entry; the server is
                     restarted and the next repetition waits until the map
                     shows it ONLINE again;
           leader    the analyzer's leader SIGKILLed: time until another
                     server holds the leader key (/strata/dev/leader);
           etcd      raw: etcd's own leader SIGKILLed: time until a put
                     through the other members succeeds (each try bounded
                     by 250 ms); the member is restarted with its own
                     command line and the next repetition waits until all
                     three answer /health.
         Each as median and max over the repetitions, the ratio to etcd's
         leader failover median.
  home   the failover of a home (docs/cluster.md "Taking over a home"):
         4 servers, a 3-member etcd, `--meta-replicas 3` (each home's
         metadata on 2 standbys), at the test presets and at the
         defaults: a server (not the analyzer's leader) SIGKILLed; time
         from the kill to the first successful `strata obj put` (pdclust
         2+1, 64 KiB) of a new object homed on it (tried every 0.2 s,
         each try bounded by 60 s): detection + decision + the standby's
         engine opened on its shadow + the client's map refresh.  The
         server is restarted and the next repetition waits until its
         home is handed back (map: acting "").  Beside etcd's leader
         failover measured on the same cluster first.  A second figure
         from the same kill: a running client (`strata obj put ID FIFO`,
         the object created before the kill, the data written into the
         FIFO at the kill, so its WRITE goes to the dead home on the
         connection it holds) -> that put done.  Each try's client log
         lines (STRATA_LOG=3) go to stderr; BENCH_HA_LOGS=DIR keeps the
         servers' logs.
  io     the data path with HA on (etcd + agents: the epoch gate on every
         request, probes, leases) and off (--no-etcd): two 3-server
         clusters up at once, the same workload run on each in turn, three
         rounds, medians (both `cluster up --device-fill zero`: the
         production format, docs/configuration.md):
           `strata bench` (one plain flash object, 4 KiB and 1 MiB blocks,
           16 in flight, each op waited to STABLE) write and read;
           EC 4+2 (pdclust --data 4 --parity 2) put and get of a 64 MiB
           file (/dev/shm) by one client (`strata obj put/get`).
         Each HA-on figure beside the HA-off one as a ratio.

Ports 4000-4999 (no test step uses them, tests/steps.list).  Every wait
is bounded; every process started (servers, etcd members) is killed and
every directory removed on any exit (SIGINT, SIGTERM, SIGHUP too).
"""
import base64
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
S = os.path.join(B, "strata")
SRV = os.path.join(B, "strata-server")
JSON = "--json" in sys.argv
REPS = 3
FIGS = None
TOP = None
a = sys.argv[2:]
for i, x in enumerate(a):
    if x == "--reps" and i + 1 < len(a):
        REPS = int(a[i + 1])
    elif x == "--figs" and i + 1 < len(a):
        FIGS = a[i + 1].split(",")
    elif x == "--dir" and i + 1 < len(a):
        TOP = a[i + 1]
POLL = 0.05
BASE = int(os.environ.get("BENCH_HA_PORT", "4000"))
DIRS = []          # cluster directories to stop and remove
EXTRA_PIDS = []    # etcd members restarted by us
figs = []


def log(*m):
    print("bench_ha:", *m, file=sys.stderr, flush=True)


def want(g):
    return FIGS is None or g in FIGS or "ha" in FIGS


# --- etcd through its v3 JSON gateway ----------------------------------
def b64(s):
    return base64.b64encode(s.encode()).decode()


def etcd_post(ep, path, body, timeout=1.0):
    req = urllib.request.Request(ep + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"{}")


def etcd_get(eps, key, timeout=1.0):
    """The value of key (str) or None, from the first endpoint answering."""
    for ep in eps:
        try:
            r = etcd_post(ep, "/v3/kv/range", {"key": b64(key)}, timeout)
        except Exception:
            continue
        kv = r.get("kvs") or []
        return base64.b64decode(kv[0]["value"]).decode() if kv else ""
    return None


def etcd_prefix(eps, pfx, timeout=1.0):
    end = pfx[:-1] + chr(ord(pfx[-1]) + 1)
    for ep in eps:
        try:
            r = etcd_post(ep, "/v3/kv/range",
                          {"key": b64(pfx), "range_end": b64(end)}, timeout)
        except Exception:
            continue
        return [base64.b64decode(kv["value"]).decode()
                for kv in r.get("kvs") or []]
    return None


def etcd_put(ep, key, val, timeout):
    try:
        etcd_post(ep, "/v3/kv/put", {"key": b64(key), "value": b64(val)},
                  timeout)
        return True
    except Exception:
        return False


def etcd_health(ep):
    try:
        with urllib.request.urlopen(ep + "/health", timeout=1) as r:
            return json.loads(r.read()).get("health") == "true"
    except Exception:
        return False


def etcd_leader_idx(eps):
    """Index in eps of etcd's leader, or None."""
    for i, ep in enumerate(eps):
        try:
            st = etcd_post(ep, "/v3/maintenance/status", {}, 1.0)
        except Exception:
            continue
        if st.get("leader") and st["header"]["member_id"] == st["leader"]:
            return i
    return None


# --- clusters ---------------------------------------------------------------
def poll(secs, fn, step=POLL):
    """fn() until it is truthy, at most secs; its last value."""
    end = time.monotonic() + secs
    while True:
        v = fn()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


def up(d, nodes, port, extra):
    DIRS.append(d)
    cmd = [S, "cluster", "up", "--nodes", str(nodes), "--dir", d,
           "--base-port", str(port)] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=660)
    if "servers up" not in r.stdout + r.stderr:
        raise RuntimeError("cluster up %s: %s" % (d, (r.stdout + r.stderr)[-600:]))
    return d + "/cluster.yaml"


def endpoints(d):
    try:
        with open(d + "/etcd.endpoints") as f:
            return [l.strip() for l in f if l.strip()]
    except OSError:
        return []


def pidof(d, name):
    try:
        with open("%s/%s.pid" % (d, name)) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def kill9(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, TypeError):
        pass


def gone(pid):
    try:
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        return True


def srv_start(d, i):
    subprocess.run([SRV, "--config", d + "/cluster.yaml", "--name", "s%d" % i,
                    "--pid-file", "%s/s%d.pid" % (d, i), "--log-file",
                    "%s/s%d.log" % (d, i), "--log-level", "3"],
                   timeout=120, capture_output=True)


def the_map(eps):
    t = etcd_get(eps, "/strata/dev/map")
    try:
        return json.loads(t) if t else None
    except ValueError:
        return None


def srv_state(eps, name):
    m = the_map(eps)
    if not m:
        return None
    for s in m["servers"]:
        if s["name"] == name:
            return s["state"]
    return None


def all_online(eps, n):
    m = the_map(eps)
    return m is not None and sum(s["state"] == "ONLINE"
                                 for s in m["servers"]) == n


def leader(eps):
    return etcd_get(eps, "/strata/dev/leader") or ""


def jlines(eps, what):
    v = etcd_prefix(eps, "/strata/dev/%s/" % what) or []
    out = []
    for t in v:
        try:
            out.append(json.loads(t))
        except ValueError:
            pass
    return out


def stop_all():
    for d in DIRS:
        for f in os.listdir(d) if os.path.isdir(d) else []:
            if re.match(r"(s\d+|etcd\d+)\.pid$", f):
                p = pidof(d, f[:-4])
                if p:
                    try:
                        os.kill(p, signal.SIGCONT)
                    except ProcessLookupError:
                        pass
                    kill9(p)
    for p in EXTRA_PIDS:
        kill9(p)
    for d in DIRS:
        shutil.rmtree(d, ignore_errors=True)


def on_signal(sig, frm):
    raise SystemExit(1)


# --- figures ---------------------------------------------------------------
def fig(group, name, unit, vals, base=None, base_name=None, base_vals=None,
        note=""):
    f = {"group": group, "name": name, "unit": unit,
         "reps": len(vals), "values": [round(v, 3) for v in vals]}
    if vals:
        f["median"] = round(statistics.median(vals), 3)
        f["max"] = round(max(vals), 3)
    if base is not None and vals:
        f["baseline"] = base_name
        f["baseline_value"] = round(base, 3)
        if base_vals:
            f["baseline_values"] = [round(v, 3) for v in base_vals]
        f["ratio"] = round(f["median"] / base, 2) if base else None
    if note:
        f["note"] = note
    figs.append(f)
    if not JSON:
        r = ("  x%.2f of %s (%.3f)" % (f["ratio"], base_name, base)
             if base is not None and vals and base else "")
        print("%-44s median %9.3f max %9.3f %-5s n=%d%s%s" % (
            group + ": " + name, f.get("median", float("nan")),
            f.get("max", float("nan")), unit, len(vals), r,
            ("  (" + note + ")") if note else ""), flush=True)
    return f


def settle(eps, test):
    """Until a leader is named, then two lease TTLs more: the leader acts
    on lapsed members only after holding the key that long (3 s / 5 s
    leases at the test presets / defaults)."""
    lease = 3 if test else 5
    poll(60, lambda: leader(eps), 0.2)
    time.sleep(2 * lease + 1)


def etcd_failover(d, eps, reps):
    """Kill etcd's leader reps times: seconds until a put through another
    member succeeds."""
    out = []
    for r in range(reps):
        if not poll(60, lambda: all(etcd_health(e) for e in eps), 0.2):
            log("etcd: not all members healthy, stop")
            break
        li = poll(20, lambda: etcd_leader_idx(eps), 0.2)
        if li is None:
            log("etcd: no leader found")
            break
        pid = pidof(d, "etcd%d" % li)
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [x.decode() for x in f.read().split(b"\0") if x]
        others = [e for j, e in enumerate(eps) if j != li]
        t0 = time.monotonic()
        kill9(pid)
        k = 0
        ok = False
        while time.monotonic() - t0 < 60:
            if etcd_put(others[k % 2], "/bench/ha/probe", str(r), 0.25):
                ok = True
                break
            k += 1
        t = time.monotonic() - t0
        log("etcd leader (member %d) killed: a put after %.3f s" % (li, t))
        if ok:
            out.append(t)
        poll(10, lambda: gone(pid), 0.05)
        lf = open("%s/etcd%d.log" % (d, li), "ab")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=lf,
                             stderr=lf, start_new_session=True)
        lf.close()
        EXTRA_PIDS.append(p.pid)
        with open("%s/etcd%d.pid" % (d, li), "w") as f:
            f.write("%d\n" % p.pid)
    poll(60, lambda: all(etcd_health(e) for e in eps), 0.2)
    return out


def srv_failover(d, eps, reps, bound):
    """Kill a server (not the leader) reps times; three lists of seconds:
    kill -> FAILED in the map, -> its log entry, -> the first event."""
    to_map, to_log, to_ev = [], [], []
    for r in range(reps):
        if not poll(240, lambda: all_online(eps, 4), 0.2):
            log("server failover: not all ONLINE, stop")
            break
        L = poll(30, lambda: leader(eps), 0.2)
        v = 3 if L != "s3" else 2
        name = "s%d" % v
        pid = pidof(d, name)
        seen = {x["seq"] for x in jlines(eps, "decisions")}
        w0 = time.time()
        t0 = time.monotonic()
        kill9(pid)
        st = poll(bound, lambda: srv_state(eps, name) == "FAILED")
        tm = time.monotonic() - t0
        if not st:
            log("%s not FAILED within %d s" % (name, bound))
            srv_start(d, v)
            continue
        to_map.append(tm)
        dl = poll(30, lambda: [x for x in jlines(eps, "decisions")
                               if x["seq"] not in seen and
                               x["kind"] == "SET_STATE" and
                               x["target"] == name and
                               x["state"] == "FAILED"])
        if dl:
            to_log.append(time.monotonic() - t0)
        # an event's seq is its key's, not in its value: by time instead
        ev = [x for x in jlines(eps, "events")
              if x["time_ms"] >= w0 * 1000 - 50 and x["target"] == name]
        if ev:
            to_ev.append(min(x["time_ms"] for x in ev) / 1000.0 - w0)
        log("%s killed (leader %s): FAILED in the map after %.3f s; "
            "first event %s" % (name, L, tm,
                                ", ".join("%s by %s +%.3f s" % (
                                    x["kind"], x["reporter"],
                                    x["time_ms"] / 1000.0 - w0)
                                    for x in sorted(ev, key=lambda e:
                                                    e["time_ms"])[:3])))
        poll(10, lambda: gone(pid), 0.05)
        srv_start(d, v)
    poll(240, lambda: all_online(eps, 4), 0.2)
    return to_map, to_log, to_ev


def leader_failover(d, eps, reps, bound):
    out = []
    for r in range(reps):
        if not poll(240, lambda: all_online(eps, 4), 0.2):
            log("leader failover: not all ONLINE, stop")
            break
        L = poll(30, lambda: leader(eps), 0.2)
        v = int(L[1:])
        pid = pidof(d, L)
        t0 = time.monotonic()
        kill9(pid)
        nl = poll(bound, lambda: (lambda x: x if x and x != L else "")(
            leader(eps)))
        t = time.monotonic() - t0
        if nl:
            out.append(t)
        log("analyzer leader %s killed: %s leads after %.3f s" % (L, nl, t))
        poll(10, lambda: gone(pid), 0.05)
        srv_start(d, v)
    poll(240, lambda: all_online(eps, 4), 0.2)
    return out


def fail_group(top, test):
    tag = "test presets" if test else "defaults"
    d = os.path.join(top, "fail-test" if test else "fail-dflt")
    port = BASE + (0 if test else 20)
    extra = ["--etcd-members", "3"] + (["--ha-test"] if test else [])
    log("4 servers, 3 etcd members, %s (ports %d-%d)" % (tag, port, port + 9))
    up(d, 4, port, extra)
    # the servers log at level 3 after their first restart; the first
    # ones at the default level
    eps = endpoints(d)
    settle(eps, test)
    reps = REPS if test else max(2, REPS - 1)
    bound = 60 if test else 120
    etcd = etcd_failover(d, eps, reps)
    tm, tl, te = srv_failover(d, eps, reps, bound)
    lf = leader_failover(d, eps, reps, bound)
    subprocess.run([S, "cluster", "down", "--dir", d], capture_output=True,
                   timeout=120)
    base = statistics.median(etcd) if etcd else None
    g = "fail " + ("test" if test else "defaults")
    fig(g, "etcd leader killed -> put through another (raw)", "s", etcd)
    fig(g, "server killed -> FAILED in the map", "s", tm, base,
        "etcd failover")
    fig(g, "server killed -> FAILED decision logged", "s", tl, base,
        "etcd failover")
    fig(g, "server killed -> first event about it", "s", te, base,
        "etcd failover", note="reporter's clock")
    fig(g, "analyzer leader killed -> another leads", "s", lf, base,
        "etcd failover")
    shutil.rmtree(d, ignore_errors=True)


def homed_ids(h, nr, n, base):
    """n ids "7:LO" whose home is server h of nr (clu_home(): the
    splitmix64 finaliser of hi ^ mix(lo), modulo the servers)."""
    M = (1 << 64) - 1

    def mix(x):
        x ^= x >> 30
        x = (x * 0xbf58476d1ce4e5b9) & M
        x ^= x >> 27
        x = (x * 0x94d049bb133111eb) & M
        return x ^ (x >> 31)
    out, lo = [], base
    while len(out) < n:
        if mix(0x7 ^ mix(lo)) % nr == h:
            out.append("7:%x" % lo)
        lo += 1
    return out


def tries_note(err):
    """The client's log lines of one try (STRATA_LOG=3), each cut to its
    time and message: where a try's time went."""
    out = []
    for ln in err.decode(errors="replace").splitlines():
        m = re.match(r"strata\[\d+\] (\d+\.\d+) \w+ [^ ]+: (.*)", ln)
        if m:
            out.append("%s %s" % (m.group(1)[-9:], m.group(2)[:160]))
        elif ln.startswith("strata:"):
            out.append(ln[:200])
    return "\n      " + "\n      ".join(out) if out else ""


class live_client:
    """A running client with a write of its object waiting on the home:
    `strata obj put ID FIFO` started before the kill (the object created
    on its home, the process blocked reading the FIFO), the blob written
    into the FIFO at the kill, so that its WRITE goes to the home on the
    connection it holds (a client that was running when the home died).
    None when it could not be set up."""

    def __new__(cls, d, conf, oid):
        self = object.__new__(cls)
        self.fifo = os.path.join(d, "fifo-" + oid.replace(":", "-"))
        os.mkfifo(self.fifo)
        self.fd = os.open(self.fifo, os.O_RDWR)  # the reader never blocks
        self.err = open(self.fifo + ".err", "wb")
        self.end = None
        self.p = subprocess.Popen(
            [S, "--cluster", conf, "obj", "put", oid, self.fifo,
             "--layout", "pdclust", "--data", "2", "--parity", "1"],
            stdout=subprocess.DEVNULL, stderr=self.err,
            env=dict(os.environ, STRATA_LOG="3"))
        threading.Thread(target=self._reap, daemon=True).start()
        def made_yet():
            if self.end is not None:
                return True
            try:
                return subprocess.run(
                    [S, "--cluster", conf, "obj", "stat", oid],
                    capture_output=True, timeout=60).returncode == 0
            except subprocess.TimeoutExpired:
                return False
        made = poll(90, made_yet, 0.5)
        if not made or self.end is not None:
            log("running client: object %s not created" % oid)
            self.close()
            return None
        return self

    def _reap(self):
        self.p.wait()
        self.end = time.monotonic()

    def feed(self, blob):
        with open(blob, "rb") as f:
            os.write(self.fd, f.read())
        os.close(self.fd)
        self.fd = None

    def wait(self, t0, bound):
        """Seconds from t0 to its successful end, None if it failed."""
        poll(bound, lambda: self.end is not None, 0.05)
        if self.end is None:
            self.p.kill()
            self.p.wait()
        rc = self.p.returncode
        self.err.close()
        with open(self.fifo + ".err", "rb") as f:
            why = tries_note(f.read())
        log("  running client: %s after %.3f s%s" % (
            "done" if rc == 0 else "failed (%s)" % rc,
            (self.end or time.monotonic()) - t0, why))
        self.close()
        return self.end - t0 if rc == 0 and self.end else None

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def home_back(eps, name):
    m = the_map(eps)
    if not m:
        return False
    return all(x["state"] == "ONLINE" for x in m["servers"]) and \
        all(x.get("acting", "") == "" for x in m["servers"])


def home_group(top, test):
    tag = "test presets" if test else "defaults"
    d = os.path.join(top, "home-test" if test else "home-dflt")
    port = BASE + (80 if test else 100)
    extra = ["--etcd-members", "3", "--meta-replicas", "3"] + \
        (["--ha-test"] if test else [])
    log("home failover: 4 servers, 3 etcd members, meta_replicas 3, %s "
        "(ports %d-%d)" % (tag, port, port + 9))
    conf = up(d, 4, port, extra)
    eps = endpoints(d)
    settle(eps, test)
    reps = REPS if test else max(2, REPS - 1)
    bound = 120 if test else 240
    etcd = etcd_failover(d, eps, reps)
    blob = os.path.join(d, "blob")
    with open(blob, "wb") as f:
        f.write(os.urandom(64 << 10))
    out, inflight = [], []
    base = 1
    for r in range(reps):
        if not poll(240, lambda: home_back(eps, ""), 0.2):
            log("home failover: homes not all back, stop")
            break
        L = poll(30, lambda: leader(eps), 0.2)
        v = 3 if L != "s3" else 2
        name = "s%d" % v
        ids = homed_ids(v, 4, 2001, base)
        base += 100000
        pid = pidof(d, name)
        ll = live_client(d, conf, ids.pop())
        t0 = time.monotonic()
        kill9(pid)
        log("%s killed at %.3f (wall clock)" % (name, time.time()))
        if ll:
            ll.feed(blob)
        ok, k = False, 0
        env = dict(os.environ, STRATA_LOG="3")
        while time.monotonic() - t0 < bound and k < len(ids):
            ts = time.monotonic() - t0
            why = ""
            try:
                rr = subprocess.run([S, "--cluster", conf, "obj", "put",
                                     ids[k], blob, "--layout", "pdclust",
                                     "--data", "2", "--parity", "1"],
                                    capture_output=True, timeout=60,
                                    env=env)
                ok = rr.returncode == 0
                why = tries_note(rr.stderr)
            except subprocess.TimeoutExpired:
                ok = False
                why = "timed out after 60 s"
            k += 1
            log("  try %d: +%.3f .. +%.3f s %s%s" % (
                k, ts, time.monotonic() - t0, "ok" if ok else "failed",
                (": " + why) if why else ""))
            if ok:
                break
            time.sleep(0.2)
        t = time.monotonic() - t0
        log("%s killed (leader %s): first put of an object homed on it "
            "after %.3f s (%d tries)%s" % (name, L, t, k,
                                          "" if ok else ": none"))
        if ok:
            out.append(t)
        if ll:
            lt = ll.wait(t0, 150)
            if lt is not None:
                inflight.append(lt)
        poll(10, lambda: gone(pid), 0.05)
        srv_start(d, v)
    poll(240, lambda: home_back(eps, ""), 0.2)
    subprocess.run([S, "cluster", "down", "--dir", d], capture_output=True,
                   timeout=120)
    b = statistics.median(etcd) if etcd else None
    g = "home " + ("test" if test else "defaults")
    fig(g, "etcd leader killed -> put through another (raw)", "s", etcd)
    fig(g, "home server killed -> first write of its object", "s", out, b,
        "etcd failover", note="a new client process per try")
    fig(g, "home server killed -> a client's write to it done", "s",
        inflight, b, "etcd failover",
        note="a running client, its write sent at the kill")
    keep_logs(d)
    shutil.rmtree(d, ignore_errors=True)


def keep_logs(d):
    """BENCH_HA_LOGS=DIR: the servers' logs of cluster d copied there
    (DIR/<cluster>-sN.log) before d is removed."""
    to = os.environ.get("BENCH_HA_LOGS")
    if not to:
        return
    os.makedirs(to, exist_ok=True)
    for f in os.listdir(d):
        if re.match(r"s\d+\.log$", f):
            shutil.copy(os.path.join(d, f),
                        os.path.join(to, os.path.basename(d) + "-" + f))


def timed(cmd, bound=300):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=bound)
    t = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr[-400:]))
    return t, r.stdout


def io_group(top):
    on = os.path.join(top, "io-on")
    off = os.path.join(top, "io-off")
    log("two 3-server clusters: HA on (3 etcd members), off (--no-etcd)")
    # --device-fill zero: the production format, so that write rates are
    # not lowered by unwritten-extent conversions (docs/configuration.md).
    fon = up(on, 3, BASE + 40, ["--etcd-members", "3",
                                "--device-fill", "zero"])
    foff = up(off, 3, BASE + 60, ["--no-etcd", "--device-fill", "zero"])
    blob = tempfile.mktemp(prefix="strata-bench-ha-", dir="/dev/shm")
    back = blob + ".back"
    mb = 64
    with open(blob, "wb") as f:
        f.write(os.urandom(mb << 20))
    res = {}   # (fig, side) -> [values]
    try:
        for rnd in range(REPS):
            for side, f in (("on", fon), ("off", foff)) if rnd % 2 == 0 \
                    else (("off", foff), ("on", fon)):
                _, o = timed([S, "--cluster", f, "bench", "--ops", "4000",
                              "--json"])
                for x in json.loads(o):
                    if x["test"].startswith("obj"):
                        small = x["bytes"] <= 4096 * x["ops"]
                        k = ("4 KiB " if small else "1 MiB ") + \
                            x["test"].split()[1] + ", qd16"
                        v = x["ops_per_s"] if small else x["mib_per_s"]
                        res.setdefault((k, side), []).append(v)
                oid = "@ec-%s-%d" % (side, rnd)
                t, _ = timed([S, "--cluster", f, "obj", "put", oid, blob,
                              "--layout", "pdclust", "--data", "4",
                              "--parity", "2"])
                res.setdefault(("EC 4+2 put 64 MiB", side), []).append(mb / t)
                t, _ = timed([S, "--cluster", f, "obj", "get", oid, back])
                res.setdefault(("EC 4+2 get 64 MiB", side), []).append(mb / t)
                subprocess.run([S, "--cluster", f, "obj", "delete", oid],
                               capture_output=True, timeout=120)
                log("round %d HA %s done" % (rnd, side))
    finally:
        for p in (blob, back):
            try:
                os.unlink(p)
            except OSError:
                pass
    for d in (on, off):
        subprocess.run([S, "cluster", "down", "--dir", d],
                       capture_output=True, timeout=120)
    for (k, side), v in sorted(res.items()):
        if side != "on":
            continue
        offv = res.get((k, "off"), [])
        unit = "ops/s" if k.startswith("4 KiB") else "MiB/s"
        fig("io", k + ", HA on", unit, v,
            statistics.median(offv) if offv else None, "HA off", offv)


def main():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    if not (os.access(S, os.X_OK) and os.access(SRV, os.X_OK)):
        log("%s or %s missing (make tests)" % (S, SRV))
        return 1
    top = tempfile.mkdtemp(prefix="bench-ha-", dir=TOP or "/tmp")
    DIRS.append(top)
    rc = 0
    t0 = time.monotonic()
    try:
        if want("fail"):
            fail_group(top, True)
            fail_group(top, False)
        if want("home"):
            home_group(top, True)
            home_group(top, False)
        if want("io"):
            io_group(top)
    except Exception as e:   # a figure that cannot be measured: say so
        log("error:", e)
        rc = 1
    finally:
        stop_all()
    if JSON:
        print(json.dumps({"bench": "ha", "seconds": round(
            time.monotonic() - t0, 1), "load": os.getloadavg()[0],
            "figures": figs}, indent=1))
    return rc


if __name__ == "__main__":
    sys.exit(main())
