"""8 Python threads on one Store at once (clovis.h: every call is
thread-safe; the binding releases the GIL around each blocking one), every
byte checked."""
import hashlib
import sys
import threading
import time

import numpy as np

import strata
from conftest import DEV_SIZE

THREADS = 8
ROUNDS = 40


def data_of(t, r, n=4096 * 4):
    seed = hashlib.sha256(b"%d/%d" % (t, r)).digest()
    return (seed * (n // len(seed) + 1))[:n]


def run_threads(fn):
    errors = []
    barrier = threading.Barrier(THREADS)

    def body(t):
        try:
            barrier.wait(60)
            fn(t)
        except BaseException as e:  # reported below with its thread
            errors.append((t, repr(e)))

    ts = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(600)
    assert not any(t.is_alive() for t in ts), "a thread did not finish"
    assert errors == []


def test_threads_own_objects_and_shared_index(store, uid):
    objs = [store.create_object(uid("o%d" % t)) for t in range(THREADS)]
    shared = store.create_object(uid("shared"))
    idx = store.create_index(uid("i"))

    def work(t):
        o = objs[t]
        buf = bytearray(4096 * 4)
        for r in range(ROUNDS):
            d = data_of(t, r)
            o.write(r * len(d), d)
            assert o.read(r * len(d), len(d)) == d
            o.read_into(r * len(d), buf)
            assert buf == d
            shared.write((t * ROUNDS + r) * 4096, d[:4096])
            idx[b"%d:%04d" % (t, r)] = d[:200]
            assert idx[b"%d:%04d" % (t, r)] == d[:200]
            if r % 8 == 7:
                with store.dtx() as tx:
                    idx.put(b"tx:%d:%d" % (t, r), d[:10], tx=tx)
                    o.write(0, d, tx=tx)
                assert o.read(0, len(d)) == d

    run_threads(work)
    for t in range(THREADS):
        for r in range(ROUNDS):
            d = data_of(t, r)
            if r != 0:
                assert objs[t].read(r * len(d), len(d)) == d
            assert shared.read((t * ROUNDS + r) * 4096, 4096) == d[:4096]
            assert idx[b"%d:%04d" % (t, r)] == d[:200]
    assert len(idx) == THREADS * ROUNDS + THREADS * (ROUNDS // 8)


def test_threads_one_object_async_and_numpy(store, uid):
    o = store.create_object(uid(), block_size=65536)

    def work(t):
        a = np.full(16384, t * 1000, dtype=np.float32)  # 64 KiB
        for r in range(ROUNDS):
            a[:] = t * 1000 + r
            off = (t * ROUNDS + r) * a.nbytes
            o.write_async(off, a.copy()).result(timeout=300)
            back = np.empty_like(a)
            assert o.read_into_async(off, back).result(timeout=300) == a.nbytes
            assert np.array_equal(back, a)

    run_threads(work)
    whole = np.frombuffer(o.read(0, THREADS * ROUNDS * 65536), np.float32)
    want = np.repeat(np.array([t * 1000 + r for t in range(THREADS)
                               for r in range(ROUNDS)], np.float32), 16384)
    assert np.array_equal(whole, want)


def test_threads_open_and_list(store, uid):
    c = store.create_container(uid("c"))

    def work(t):
        for r in range(10):
            name = "@thr-%d-%d-%s" % (t, r, c.id)
            o = c.create_object(name)
            o.write(0, data_of(t, r)[:4096])
            assert c.object(name).read(0, 4096) == data_of(t, r)[:4096]
            assert o.id in c.objects()

    run_threads(work)
    assert len(c.objects()) == THREADS * 10


def test_blocking_calls_release_the_gil(tmp_path):
    """A pure-Python thread keeps running during each blocking call: with
    the GIL held through the call it could not run at all (the switch
    interval is 1 ms: at most about that much of its time before the
    call).  Each call is made long enough (tens of ms or more) that the
    two cases are far apart."""
    count, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    t = threading.Thread(target=spin)
    t.start()
    seen = {}
    try:
        c0 = count[0]
        time.sleep(0.3)  # sleeping releases the GIL: the spinner's rate
        rate = (count[0] - c0) / 0.3
        assert rate > 0

        def during(name, call):
            c0, t0 = count[0], time.perf_counter()
            out = call()
            dt, n = time.perf_counter() - t0, count[0] - c0
            seen[name] = (n, dt, rate)
            assert dt > 0.015, "%s took only %.3f s" % (name, dt)
            assert n > rate * dt * 0.1, "%s: spinner stalled (%s)" % (
                name, seen[name])
            return out

        path = str(tmp_path / "gil")
        st = during("open (create)", lambda: strata.Store(
            path, create=True, nvram_dir=path, dev_size=2 * DEV_SIZE))
        o = st.create_object("@big", block_size=1 << 20)
        a = np.ones(32 << 20, np.uint8)
        during("write 32 MiB", lambda: o.write(0, a))
        b = np.zeros_like(a)
        during("read_into 32 MiB", lambda: o.read_into(0, b))
        assert np.array_equal(a, b)
        i = st.create_index("@i")
        recs = [(b"%08d" % n, bytes(4096)) for n in range(4096)]
        during("put_many 4096", lambda: i.put_many(recs))
        assert len(i) == 4096
        st.close()
        strata.destroy_store(path)
        print("spinner during each call (count, s, count/s alone):", seen)
    finally:
        stop.set()
        t.join(60)
        sys.setswitchinterval(old)
