"""The binding against a cluster (STRATA_TEST_CLUSTER: a cluster file; run
by tests/integ/python_test.sh on a 3-server loopback cluster without
replicated homes, so that transactions are allowed): the same calls as the
embedded modules, over the servers."""
import asyncio
import concurrent.futures
import errno
import os
import re
import threading

import numpy as np
import pytest

import strata

CLUSTER = os.environ.get("STRATA_TEST_CLUSTER")
pytestmark = pytest.mark.skipif(not CLUSTER,
                                reason="STRATA_TEST_CLUSTER not set")


@pytest.fixture(scope="module")
def cl():
    with strata.Store(cluster=CLUSTER) as st:
        yield st


@pytest.fixture
def name(request):
    n = [0]

    def make(tag=""):
        n[0] += 1
        return "@py-%d-%s-%s-%d" % (os.getpid(), request.node.name, tag, n[0])

    return make


def test_cluster_store(cl):
    assert cl.cluster and not cl.closed
    assert len(cl.devices()) > 0
    assert strata.Id(0, 1) in cl.containers()
    with pytest.raises(ValueError, match="embedded store only"):
        strata.Store(cluster=CLUSTER, create=True)


def server_and_secret():
    """("ADDR:PORT" of the first server, the secret) from the cluster
    file (as `strata cluster up` writes it: secret_file beside it)."""
    text = open(CLUSTER, encoding="utf-8").read()
    addr = re.search(r"^\s*-?\s*address:\s*(\S+)", text, re.M).group(1)
    port = re.search(r"^\s*port:\s*(\d+)", text, re.M).group(1)
    m = re.search(r"^\s*secret_file:\s*(\S+)", text, re.M)
    if m:
        f = os.path.join(os.path.dirname(os.path.abspath(CLUSTER)), m.group(1))
        secret = open(f, encoding="utf-8").read().strip()
    else:
        secret = re.search(r"^\s*secret:\s*\"?([^\"\n]+)", text,
                           re.M).group(1)
    return "%s:%s" % (addr, port), secret


def test_cluster_by_server_and_secret(cl, name):
    server, secret = server_and_secret()
    o = cl.create_object(name())
    o.write(0, b"s" * 4096)
    with strata.Store(server=server, secret=secret) as st:
        assert st.cluster and strata.Id(0, 1) in st.containers()
        assert st.object(o.id).read(0, 4096) == b"s" * 4096
    with pytest.raises(strata.StrataError) as ei:
        strata.Store(server=server, secret="not the secret, 16+ bytes")
    assert ei.value.errno == errno.EACCES
    with pytest.raises(strata.StrataArgumentError) as ei:
        strata.Store(server="no port here", secret=secret)
    assert ei.value.errno == errno.EINVAL
    o.delete()


def test_cluster_bad_file(tmp_path):
    with pytest.raises(strata.StrataError) as ei:
        strata.Store(cluster=str(tmp_path / "none.yaml"))
    assert ei.value.errno == errno.ENOENT


@pytest.mark.parametrize("layout,kw", [
    ("plain", {}), ("pdclust", {"data_units": 2, "parity_units": 1}),
    ("mirror", {"data_units": 2})])
def test_cluster_objects(cl, name, layout, kw):
    o = cl.create_object(name(layout), layout=layout, **kw)
    a = np.arange(64 * 1024, dtype=np.int32)  # 256 KiB
    o.write(0, a)
    b = np.empty_like(a)
    assert o.read_into(0, b) == a.nbytes and np.array_equal(a, b)
    assert cl.object(o.id).size == a.nbytes
    o.delete()
    with pytest.raises(strata.StrataError) as ei:
        cl.object(o.id)
    assert ei.value.errno == errno.ENOENT


def test_cluster_index(cl, name):
    i = cl.create_index(name())
    i.put_many((b"k%04d" % n, b"v%d" % n) for n in range(300))
    assert i[b"k0042"] == b"v42" and b"nope" not in i
    assert [k for k, _ in i.items(start=b"k0290")] == \
        [b"k%04d" % n for n in range(290, 300)]
    with pytest.raises(KeyError):
        del i[b"nope"]
    with pytest.raises(strata.StrataError) as ei:
        i.put(b"k0001", b"x", overwrite=False)
    assert ei.value.errno == errno.EEXIST
    i.delete()


def test_cluster_async(cl, name):
    o = cl.create_object(name())
    futs = [o.write_async(n * 4096, bytes([n]) * 4096) for n in range(32)]
    concurrent.futures.wait(futs, timeout=300)
    assert all(f.exception() is None for f in futs)

    async def main():
        return await asyncio.gather(*(o.aread(n * 4096, 4096)
                                      for n in range(32)))

    assert asyncio.run(main()) == [bytes([n]) * 4096 for n in range(32)]
    o.delete()


def test_cluster_dtx(cl, name):
    o = cl.create_object(name("o"))
    i = cl.create_index(name("i"))
    o.write(0, b"a" * 4096)
    with cl.dtx() as tx:
        o.write(0, b"b" * 4096, tx=tx)
        i.put(b"k", b"v", tx=tx)
    assert o.read(0, 4096) == b"b" * 4096 and i[b"k"] == b"v"
    with pytest.raises(RuntimeError):
        with cl.dtx() as tx:
            o.write(0, b"c" * 4096, tx=tx)
            i.put(b"k2", b"v", tx=tx)
            raise RuntimeError("abort")
    assert o.read(0, 4096) == b"b" * 4096 and b"k2" not in i
    cl.settle(0, 60)
    o.delete()
    i.delete()


def test_cluster_threads(cl, name):
    objs = [cl.create_object(name("t%d" % t)) for t in range(8)]
    errors = []

    def work(t):
        try:
            for r in range(10):
                d = os.urandom(4096 * 2)
                objs[t].write(r * len(d), d)
                assert objs[t].read(r * len(d), len(d)) == d
        except BaseException as e:
            errors.append(repr(e))

    ts = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(600)
    assert errors == [] and not any(t.is_alive() for t in ts)
    for o in objs:
        o.delete()
