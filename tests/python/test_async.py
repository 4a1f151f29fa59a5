"""Async ops: futures over the op callbacks (clovis_op_setup,
clovis_op_launch) and asyncio, errors carried by the futures, many ops in
flight, close waiting for them."""
import asyncio
import concurrent.futures
import errno
import threading

import numpy as np
import pytest

import strata
from conftest import open_store


def block(n, seed):
    return bytes([(seed + n) & 0xFF]) * 4096


def test_write_read_futures(store, uid):
    o = store.create_object(uid())
    fw = o.write_async(0, block(0, 1) + block(1, 1))
    assert isinstance(fw, concurrent.futures.Future)
    assert isinstance(fw, strata.StrataFuture)
    assert fw.result(timeout=120) is None
    assert not fw.cancel()  # a launched op cannot be taken back
    fr = o.read_async(0, 8192)
    assert fr.result(timeout=120) == block(0, 1) + block(1, 1)
    buf = bytearray(4096)
    fi = o.read_into_async(4096, buf)
    assert fi.result(timeout=120) == 4096 and bytes(buf) == block(1, 1)


def test_many_in_flight(store, uid):
    o = store.create_object(uid())
    n = 256
    futs = [o.write_async(i * 4096, block(i, 9)) for i in range(n)]
    done, _ = concurrent.futures.wait(futs, timeout=300)
    assert len(done) == n and all(f.exception() is None for f in futs)
    arr = np.zeros(n * 4096, dtype=np.uint8)
    reads = [o.read_into_async(i * 4096, arr[i * 4096:(i + 1) * 4096])
             for i in range(n)]
    assert [f.result(timeout=300) for f in reads] == [4096] * n
    assert arr.tobytes() == b"".join(block(i, 9) for i in range(n))


def test_future_callbacks_and_errors(store, uid):
    seen = []
    ev = threading.Event()
    # another handle's object deleted: the op fails when it runs
    gone = store.create_object(uid("gone"))
    gone_again = store.object(gone.id)
    gone.delete()
    f = gone_again.read_async(0, 4096)
    f.add_done_callback(lambda fut: (seen.append(fut.exception()), ev.set()))
    assert ev.wait(120)
    exc = seen[0]
    assert isinstance(exc, strata.StrataError) and exc.errno == errno.ENOENT
    assert str(gone.id) in str(exc)
    with pytest.raises(strata.StrataError):
        f.result()


def test_bad_async_arguments_raise_at_once(store, uid):
    o = store.create_object(uid())
    with pytest.raises(ValueError, match="not a multiple"):
        o.write_async(1, bytes(4096))
    with pytest.raises(TypeError, match="writable"):
        o.read_into_async(0, bytes(4096))
    with pytest.raises(TypeError, match="callable"):
        o._start_read(0, 4096, "not callable")
    assert store._c.async_ops == 0


def test_index_futures(store, uid):
    i = store.create_index(uid())
    assert i.put_async(b"k", b"v").result(timeout=120) is None
    assert i.get_async(b"k").result(timeout=120) == b"v"
    assert i.get_async(b"missing", b"dflt").result(timeout=120) == b"dflt"
    with pytest.raises(strata.StrataError) as ei:
        i.put_async(b"k", b"w", overwrite=False).result(timeout=120)
    assert ei.value.errno == errno.EEXIST
    assert i.remove_async(b"k").result(timeout=120) is None
    with pytest.raises(KeyError):
        i.remove_async(b"k").result(timeout=120)


def test_asyncio(store, uid):
    o = store.create_object(uid())
    i = store.create_index(uid("i"))

    async def main():
        await asyncio.gather(*(o.awrite(n * 4096, block(n, 3))
                               for n in range(32)))
        got = await asyncio.gather(*(o.aread(n * 4096, 4096)
                                     for n in range(32)))
        assert got == [block(n, 3) for n in range(32)]
        buf = np.empty(4096, dtype=np.uint8)
        assert await o.aread_into(4096, buf) == 4096
        assert buf.tobytes() == block(1, 3)
        await i.aput("a", "b")
        assert await i.aget("a") == b"b"
        assert await i.aget("zz") is None
        await i.aremove("a")
        with pytest.raises(KeyError):
            await i.aremove("a")
        with pytest.raises(strata.StrataError) as ei:
            gone = store.object(o.id)
            o.delete()
            await gone.aread(0, 4096)
        assert ei.value.errno == errno.ENOENT
        # wrap_future works on the concurrent futures too
        f = asyncio.wrap_future(i.put_async("x", "y"))
        await asyncio.wait_for(f, 120)
        return True

    assert asyncio.run(main())


def test_close_waits_for_inflight(tmp_path):
    st = open_store(tmp_path / "w")
    o = st.create_object("@w")
    futs = [o.write_async(n * 4096, block(n, 5)) for n in range(64)]
    st.close()  # every async op delivered first
    assert all(f.done() and f.exception() is None for f in futs)
    assert st._thread is not None and not st._thread.is_alive()
    st2 = strata.Store(str(tmp_path / "w"))
    assert st2.object("@w").read(0, 64 * 4096) == \
        b"".join(block(n, 5) for n in range(64))
    st2.close()
    strata.destroy_store(str(tmp_path / "w"))


def test_close_from_callback_refused(tmp_path):
    st = open_store(tmp_path / "cb")
    o = st.create_object("@o")
    errs = []

    def cb(_f):
        try:
            st.close()
        except RuntimeError as e:
            errs.append(e)

    o.write_async(0, bytes(4096)).add_done_callback(cb)
    st.close()
    assert len(errs) == 1 and "dispatch thread" in str(errs[0])
    strata.destroy_store(str(tmp_path / "cb"))
