"""Indices: create, open, delete, GET/PUT/DEL/NEXT one by one and in
batches, dict-like access, iteration, and bad arguments
(clovis_idx_init, clovis_idx_op)."""
import errno

import numpy as np
import pytest

import strata


@pytest.fixture
def idx(store, uid):
    i = store.create_index(uid())
    yield i
    if not i.deleted:
        i.delete()


def test_create_open_delete(store, uid):
    name = uid()
    i = store.create_index(name)
    assert i.id == strata.Id.parse(name) and i.id in store.indices()
    i[b"a"] = b"1"
    again = store.index(name)
    assert again[b"a"] == b"1" and len(again) == 1
    assert again.attrs().ctime_ns > 0
    with pytest.raises(strata.StrataError) as ei:
        store.create_index(name)
    assert ei.value.errno == errno.EEXIST
    i.delete()
    with pytest.raises(strata.StrataError) as ei:
        store.index(name)
    assert ei.value.errno == errno.ENOENT
    with pytest.raises(strata.StrataError) as ei:
        again.get(b"a")  # the index is gone under this handle
    assert ei.value.errno == errno.ENOENT and str(i.id) in str(ei.value)


def test_dict_like(idx):
    idx[b"k1"] = b"v1"
    idx["k2"] = "v2"  # str: UTF-8
    idx[bytearray(b"k3")] = memoryview(b"v3")
    assert idx[b"k1"] == b"v1" and idx[b"k2"] == b"v2" and idx["k3"] == b"v3"
    idx[b"k1"] = b"replaced"
    assert idx[b"k1"] == b"replaced"
    assert b"k1" in idx and b"nope" not in idx
    assert len(idx) == 3
    assert list(idx) == [b"k1", b"k2", b"k3"]
    with pytest.raises(KeyError) as ei:
        idx[b"nope"]
    assert ei.value.args[0] == b"nope"
    assert idx.get(b"nope") is None and idx.get(b"nope", b"d") == b"d"
    del idx[b"k2"]
    assert b"k2" not in idx
    with pytest.raises(KeyError):
        del idx[b"k2"]
    idx["ключ"] = "значение"
    assert idx["ключ"] == "значение".encode()


def test_put_no_overwrite(idx):
    idx.put(b"a", b"1")
    with pytest.raises(strata.StrataError) as ei:
        idx.put(b"a", b"2", overwrite=False)
    assert ei.value.errno == errno.EEXIST
    assert "b'a'" in str(ei.value) and str(idx.id) in str(ei.value)
    assert idx[b"a"] == b"1"
    with pytest.raises(strata.StrataError):  # others are stored
        idx.put_many([(b"b", b"2"), (b"a", b"3")], overwrite=False)
    assert idx[b"b"] == b"2" and idx[b"a"] == b"1"


def test_batches(idx):
    items = {b"key%04d" % n: b"value %d" % n * (n % 7 + 1) for n in range(500)}
    idx.put_many(items)
    keys = sorted(items)
    got = idx.get_many(keys + [b"zzz-missing"])
    assert got[:-1] == [items[k] for k in keys] and got[-1] is None
    assert idx.remove_many(keys[:10] + [b"zzz-missing"]) == [True] * 10 + [False]
    assert len(idx) == 490
    idx.put_many(list(items.items())[:10])
    assert len(idx) == 500


def test_iteration_order_and_start(idx):
    keys = [bytes([b]) + b"x" for b in (0, 1, 2, 127, 128, 255)]
    keys += [b"", b"\x01", b"\x01\x00"]
    for k in keys:
        idx[k] = k + b"!"
    want = sorted(keys)  # memcmp order, shorter first on a common prefix
    assert [k for k, _ in idx.items()] == want
    assert all(v == k + b"!" for k, v in idx.items())
    assert list(idx.keys(batch=1)) == want
    assert list(idx.values(batch=2)) == [k + b"!" for k in want]
    assert [k for k, _ in idx.items(start=b"\x02")] == \
        [k for k in want if k >= b"\x02"]
    assert [k for k, _ in idx.items(start=b"\x02x", exclude_start=True)] == \
        [k for k in want if k > b"\x02x"]
    assert idx.next(b"\x01", 2) == [(b"\x01", b"\x01!"), (b"\x01\x00", b"\x01\x00!")]
    assert idx.next(b"\xff\xff", 3) == []


def test_iteration_many_records(idx):
    n = 2500
    idx.put_many((b"%06d" % i, b"v%d" % i) for i in range(n))
    seen = list(idx.items(batch=128))
    assert len(seen) == n
    assert seen == [(b"%06d" % i, b"v%d" % i) for i in range(n)]
    assert len(list(idx.items(start=b"001000"))) == n - 1000


def test_large_values_and_limits(idx):
    big = np.random.default_rng(3).integers(0, 255, strata.VAL_MAX,
                                            dtype=np.uint8)
    idx[b"big"] = big
    assert idx[b"big"] == big.tobytes()
    longest = b"k" * strata.KEY_MAX
    idx[longest] = b"ok"
    assert idx[longest] == b"ok"
    with pytest.raises(strata.StrataArgumentError) as ei:
        idx[b"k" * (strata.KEY_MAX + 1)] = b"x"
    assert ei.value.errno == errno.E2BIG
    assert isinstance(ei.value, ValueError)
    with pytest.raises(strata.StrataError) as ei:
        idx[b"v"] = bytes(strata.VAL_MAX + 1)
    assert ei.value.errno == errno.E2BIG


def test_bad_index_arguments(idx):
    with pytest.raises(TypeError, match="key must be str or a bytes-like"):
        idx[12] = b"x"
    with pytest.raises(TypeError, match="value must be str or a bytes-like"):
        idx[b"k"] = 12
    with pytest.raises(ValueError, match="1 to 4096"):
        idx.get_many([])
    with pytest.raises(ValueError, match="keys but"):
        idx._put([b"a", b"b"], [b"1"])
    with pytest.raises(ValueError, match="batch of 0 records"):
        idx.next(None, 0)
    with pytest.raises(ValueError, match="batch of 5000 records"):
        list(idx.items(batch=5000))


def test_more_forms(store, idx):
    idx.put_many({b"d1": b"x", "d2": "y"})  # a dict
    assert idx.next("d", 5) == [(b"d1", b"x"), (b"d2", b"y")]  # str start
    assert idx.next(bytearray(b"d1"), 5, exclude_start=True) == \
        [(b"d2", b"y")]
    assert idx.store is store and idx.attrs().nr_records == 2
    with store.dtx() as tx:
        idx.remove(b"absent", tx=tx)  # not reported in a dtx
        assert idx.remove_many([b"d1", b"absent"], tx=tx) is None
        assert idx.put_many([(b"t", b"1")], tx=tx) is None
    assert list(idx) == [b"d2", b"t"]
    with pytest.raises(TypeError, match="tx must be a Dtx"):
        idx.put(b"k", b"v", tx=5)
    with pytest.raises(TypeError, match="tx must be a Dtx"):
        idx.remove(b"k", tx=object())
    with pytest.raises(TypeError, match="key must be str or a bytes-like"):
        idx.get_async(12)
    with pytest.raises(TypeError, match="value must be str or a bytes-like"):
        idx.put_async(b"k", 1.5)
    with pytest.raises(ValueError, match="C-contiguous"):
        idx.put(np.zeros((4, 4))[:, ::2], b"v")
    assert store._c.async_ops == 0
