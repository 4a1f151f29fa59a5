"""Objects: create with each layout, open, attributes, size, I/O from and
into every kind of buffer, alloc, punch, delete, and bad arguments
(clovis_obj_init, clovis_entity_op, clovis_obj_op)."""
import array
import errno

import numpy as np
import pytest

import strata


def pattern(n, seed=1):
    """n bytes in which every 4 KiB block differs from the others."""
    return bytes((i * 131 + (i >> 12) * 29 + seed * 7) & 0xFF
                 for i in range(n))


@pytest.mark.parametrize("layout,kw", [
    ("plain", {"tier": "flash"}),
    ("plain", {"tier": strata.Tier.SAS}),
    ("plain", {"tier": "nvram"}),
    ("pdclust", {"data_units": 4, "parity_units": 2, "unit_size": 65536}),
    ("mirror", {"data_units": 2}),
])
def test_layouts_round_trip(store, uid, layout, kw):
    o = store.create_object(uid(layout), block_size=4096, layout=layout, **kw)
    a = o.attrs()
    assert a.layout == strata.Layout[layout.upper()]
    if layout == "plain":
        t = kw["tier"]
        assert a.tier == (t if isinstance(t, strata.Tier)
                          else strata.Tier[t.upper()])
    if layout == "pdclust":
        assert (a.data_units, a.parity_units, a.unit_size) == (4, 2, 65536)
    if layout == "mirror":
        assert a.data_units == 2
    data = pattern(64 * 4096)
    o.write(0, data)
    assert o.read(0, len(data)) == data
    assert o.size == len(data)


@pytest.mark.parametrize("bs", [512, 4096, 65536, 1 << 20])
def test_block_sizes(store, uid, bs):
    o = store.create_object(uid(), block_size=bs)
    assert o.block_size == bs and o.attrs().block_size == bs
    o.write(bs, pattern(2 * bs))
    assert o.read(0, 3 * bs) == bytes(bs) + pattern(2 * bs)
    assert o.attrs().size_blocks == 3


def test_open_attrs_size_delete(store, uid):
    name = uid()
    o = store.create_object(name)
    o.write(0, pattern(3 * 4096))
    same = store.object(name)
    assert same.id == o.id == strata.Id.parse(name)
    a = same.attrs()
    assert a.size == 3 * 4096 and a.size_blocks == 3 and a.block_size == 4096
    assert a.ctime_ns > 0 and a.mtime_ns >= a.ctime_ns
    o.set_size(5000)
    assert same.size == 5000
    assert len(same.read()) == 5000  # whole object: cut to its size
    assert same.read() == pattern(3 * 4096)[:5000]
    assert same.read(4096) == pattern(3 * 4096)[4096:5000]
    assert same.read(8192 * 4) == b""
    o.delete()
    assert o.deleted
    with pytest.raises(strata.StrataError) as ei:
        store.object(name)
    assert ei.value.errno == errno.ENOENT
    assert str(strata.Id.parse(name)) in str(ei.value)
    with pytest.raises(strata.StrataError) as ei:
        same.read(0, 4096)  # the other handle: the object is gone
    assert ei.value.errno == errno.ENOENT


def test_exists_and_missing(store, uid):
    name = uid()
    store.create_object(name)
    with pytest.raises(strata.StrataError) as ei:
        store.create_object(name)
    assert ei.value.errno == errno.EEXIST
    assert "already" in ei.value.strerror
    with pytest.raises(strata.StrataError) as ei:
        store.object(uid("never"))
    assert ei.value.errno == errno.ENOENT


def test_buffers_of_every_kind(store, uid):
    o = store.create_object(uid())
    data = pattern(4 * 4096)
    o.write(0, bytearray(data))
    o.write(4 * 4096, memoryview(data))
    o.write(8 * 4096, memoryview(bytearray(data * 2))[4 * 4096:])
    o.write(12 * 4096, array.array("B", data))
    whole = o.read(0, 16 * 4096)
    assert whole == data * 4
    buf = bytearray(8 * 4096)
    assert o.read_into(4 * 4096, buf) == len(buf)
    assert bytes(buf) == data * 2
    mv = memoryview(bytearray(3 * 4096))
    o.read_into(0, mv[4096:])
    assert bytes(mv[4096:]) == data[:2 * 4096] and bytes(mv[:4096]) == bytes(4096)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "float32",
                                   "float64", "complex128", "uint64"])
def test_numpy_round_trip(store, uid, dtype):
    o = store.create_object(uid(dtype))
    rng = np.random.default_rng(7)
    n = 3 * 65536 // np.dtype(dtype).itemsize
    if np.dtype(dtype).kind == "f":
        a = rng.standard_normal(n).astype(dtype)
    elif np.dtype(dtype).kind == "c":
        a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    else:
        a = rng.integers(0, np.iinfo(dtype).max, n, dtype=dtype)
    o.write(0, a)
    back = np.empty_like(a)
    assert o.read_into(0, back) == a.nbytes
    assert np.array_equal(back, a)
    assert np.array_equal(np.frombuffer(o.read(0, a.nbytes), dtype=dtype), a)


def test_numpy_2d_and_slices(store, uid):
    o = store.create_object(uid())
    a = np.arange(4096, dtype=np.float64).reshape(64, 64)  # 32 KiB
    o.write(0, a)
    back = np.zeros((64, 64))
    o.read_into(0, back)
    assert np.array_equal(back, a)
    rows = np.zeros((16, 64))
    o.read_into(8192, rows)  # rows 16..31: 8 KiB each 16 rows
    assert np.array_equal(rows, a[16:32])
    with pytest.raises(ValueError, match="C-contiguous"):
        o.write(0, a[:, ::2])  # not contiguous
    with pytest.raises(ValueError, match="C-contiguous"):
        o.read_into(0, back.T[:, :32])
    ro = np.zeros(512)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="writable"):
        o.read_into(0, ro)


def test_alloc_and_punch(store, uid):
    o = store.create_object(uid())
    o.write(0, pattern(8 * 4096))
    o.punch(4096, 2 * 4096)
    got = o.read(0, 8 * 4096)
    assert got[4096:3 * 4096] == bytes(2 * 4096)
    assert got[:4096] == pattern(8 * 4096)[:4096]
    assert got[3 * 4096:] == pattern(8 * 4096)[3 * 4096:]
    o.alloc(16 * 4096, 4 * 4096)
    assert o.attrs().size_blocks == 20
    assert o.read(16 * 4096, 4 * 4096) == bytes(4 * 4096)


def test_bad_io_arguments(store, uid):
    o = store.create_object(uid())
    name = str(o.id)
    with pytest.raises(ValueError, match="offset 100 is not a multiple"):
        o.write(100, bytes(4096))
    with pytest.raises(ValueError, match="positive multiple of the block"):
        o.write(0, bytes(1000))
    with pytest.raises(ValueError, match="positive multiple of the block"):
        o.read(0, 0)
    with pytest.raises(ValueError, match="offset must be between"):
        o.read(-4096, 4096)
    with pytest.raises(TypeError, match="offset must be an int"):
        o.read("0", 4096)
    with pytest.raises(TypeError, match="bytes-like"):
        o.write(0, "text is not bytes")
    with pytest.raises(TypeError, match="writable"):
        o.read_into(0, bytes(4096))
    with pytest.raises(ValueError, match=name):
        o.punch(0, 3)
    with pytest.raises(strata.StrataArgumentError) as ei:
        o.read(0, 512 << 20)  # past CLOVIS_OP_BYTES_MAX
    assert ei.value.errno == errno.E2BIG
    with pytest.raises(strata.StrataError) as ei:
        o.write(4096 << 48, bytes(4096))  # past CLOVIS_BLOCK_NR_MAX
    assert ei.value.errno == errno.EINVAL and name in str(ei.value)


def test_bad_create_arguments(store, uid):
    with pytest.raises(ValueError, match="block_size: 1000"):
        store.create_object(uid(), block_size=1000)
    with pytest.raises(ValueError, match="block_size: 256"):
        store.create_object(uid(), block_size=256)
    with pytest.raises(ValueError, match="layout: 'raid'"):
        store.create_object(uid(), layout="raid")
    with pytest.raises(ValueError, match="tier: 'tape'"):
        store.create_object(uid(), tier="tape")
    with pytest.raises(ValueError, match="Tier"):
        store.create_object(uid(), tier=9)
    with pytest.raises(TypeError, match="tier"):
        store.create_object(uid(), tier=1.0)
    with pytest.raises(TypeError, match="layout arguments"):
        store.create_object(uid(), colour="red")
    with pytest.raises(ValueError, match="unit_size"):
        store.create_object(uid(), layout="pdclust", unit_size=1000)
    with pytest.raises(strata.StrataError) as ei:
        # more units than the pool's devices (8 flash devices)
        store.create_object(uid(), layout="pdclust", data_units=8,
                            parity_units=2)
    assert ei.value.errno in (errno.EINVAL, errno.ENOSPC, errno.E2BIG)
    with pytest.raises(strata.StrataError) as ei:
        store.create_object(uid(), layout="mirror", data_units=2,
                            parity_units=1)
    assert ei.value.errno == errno.EINVAL and "parity" in str(ei.value)


def test_attrs_without_refresh(store, uid):
    o = store.create_object(uid())
    o.write(0, pattern(2 * 4096))
    other = store.object(o.id)
    assert other.attrs().size == 2 * 4096
    o.write(2 * 4096, pattern(4096))
    assert other.attrs(refresh=False).size == 2 * 4096  # no I/O: as left
    assert other.attrs().size == 3 * 4096
    assert other.attrs(refresh=False).size == 3 * 4096
