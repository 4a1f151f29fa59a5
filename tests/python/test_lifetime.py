"""Lifetimes: the collector sees the references the C types hold (entity
handles: their store and container; a transaction: its members' handles,
tuples and buffer views), so cycles through them are collected; every op
gives back the references and buffer views it took, on success and on
failure; a Store dropped without close() is closed, from any thread."""
import gc
import sys
import threading
import weakref

import numpy as np
import pytest

import strata
from conftest import open_store


def test_handles_in_cycles_are_collected(store, uid):
    refs = []
    for n in range(100):
        o = store.create_object(uid("gc%d" % n))
        i = store.index(store.create_index(uid("gci%d" % n)).id)
        o.peer, i.peer = i, o  # a cycle through the handles' dicts
        c = store.create_container(uid("gcc%d" % n))
        co = c.create_object(uid("gcco%d" % n))
        c.peer = co  # c -> co (its dict) -> c (the C field e_parent)
        refs += [weakref.ref(x) for x in (o, i, c, co)]
    del o, i, c, co
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    assert store.create_object(uid("after")).read(0, 4096) == bytes(4096)


def test_dtx_in_a_cycle_is_collected_and_aborted(store, uid):
    o = store.create_object(uid())
    i = store.create_index(uid("i"))
    buf = bytearray(b"t" * 4096)
    val = bytearray(b"value")
    tx = store.dtx()
    o.write(0, buf, tx=tx)
    i.put(b"k", val, tx=tx)
    o.tx = tx  # o -> tx (its dict) -> tx's member -> o (the member's op)
    with pytest.raises(BufferError):
        buf.extend(b"x")  # exported: held by the member
    refs = [weakref.ref(o), weakref.ref(tx)]
    oid = o.id
    del o, tx
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    buf.extend(b"x")  # the members' views were released
    val.extend(b"x")
    assert store.object(oid).read(0, 4096) == bytes(4096)  # aborted
    assert b"k" not in i


def test_ops_give_back_their_references(store, uid):
    o = store.create_object(uid())
    i = store.create_index(uid("i"))
    gone = store.create_object(uid("gone"))
    stale = store.object(gone.id)
    gone.delete()
    buf, data = bytearray(4096), bytes(range(256)) * 16
    arr, key, val = np.zeros(512), b"key", bytearray(b"val")
    watched = (buf, data, arr, key, val, o, i, stale)

    def counts():
        gc.collect()
        return [sys.getrefcount(x) for x in watched]

    before = counts()
    for _ in range(50):
        o.write(0, data)
        o.read_into(0, buf)
        o.read_into(0, arr)
        assert o.read(0, 4096) == data
        i.put(key, val)
        assert i.get(key) == b"val" and i.get_many([key]) == [b"val"]
        assert list(i.items()) == [(b"key", b"val")]
        o.write_async(0, data).result(timeout=60)
        assert o.read_into_async(0, buf).result(timeout=60) == 4096
        i.put_async(key, val).result(timeout=60)
        with pytest.raises(strata.StrataError):
            stale.read_into(0, buf)
        with pytest.raises(strata.StrataError):
            stale.read_into_async(0, buf).result(timeout=60)
        with pytest.raises(ValueError):
            o.write(1, data)
        with pytest.raises(TypeError):
            i.put(key, 12)
        with store.dtx() as tx:
            o.write(0, data, tx=tx)
            i.put(key, val, tx=tx)
        tx = store.dtx()
        o.write(0, data, tx=tx)
        i.put(key, val, tx=tx)
        tx.abort()
        with pytest.raises(strata.StrataError):
            with store.dtx() as tx:
                i.put(key, val, tx=tx, overwrite=False)  # EEXIST: fails
    del tx
    assert counts() == before
    buf.extend(b"x")  # no view left on any buffer
    val.extend(b"x")


def test_dropped_store_is_closed(tmp_path):
    path = tmp_path / "dropped"
    st = open_store(path)
    o = st.create_object("@o")
    o.write_async(0, bytes(4096)).result(timeout=60)  # a dispatch thread
    t = st._thread
    ref = weakref.ref(st)
    del st, o
    gc.collect()
    assert ref() is None
    t.join(60)
    assert not t.is_alive()
    with strata.Store(str(path)) as again:  # not busy: it was closed
        assert again.object("@o").read(0, 4096) == bytes(4096)
    strata.destroy_store(str(path))


def test_store_dropped_on_its_dispatch_thread_is_closed(tmp_path):
    path = tmp_path / "dropped-cb"
    st = open_store(path)
    o = st.create_object("@o")
    st._dispatching()
    t = st._thread
    go, seen = threading.Event(), []

    def cb(ok, value):  # on the dispatch thread
        seen.append((ok, threading.current_thread() is t))
        go.wait(60)

    o._start_write(0, b"d" * 4096, cb)
    del st, o  # the op holds the last reference to o, o to the store
    go.set()  # after cb, the dispatch thread drops them: Store.__del__
    t.join(60)
    assert seen == [(True, True)]
    assert not t.is_alive()
    with strata.Store(str(path)) as again:
        assert again.object("@o").read(0, 4096) == b"d" * 4096
    strata.destroy_store(str(path))
