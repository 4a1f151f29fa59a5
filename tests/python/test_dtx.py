"""Transactions (clovis_dtx_open/add/commit/abort): commit applies every
member, abort and a failed commit leave nothing, the context manager's
rules, and misuse."""
import errno

import pytest

import strata


def test_commit_applies_everything(store, uid):
    o = store.create_object(uid())
    i = store.create_index(uid("i"))
    o.write(0, b"a" * 8192)
    i[b"gone"] = b"1"
    with store.dtx() as tx:
        assert tx.state == "open"
        o.write(0, b"b" * 4096, tx=tx)
        o.punch(4096, 4096, tx=tx)
        i.put(b"k1", b"v1", tx=tx)
        i.put_many([(b"k2", b"v2"), (b"k3", b"v3")], tx=tx)
        i.remove(b"gone", tx=tx)
        o.set_size(6000, tx=tx)
        assert tx.members == 6
        # not visible before the commit
        assert o.read(0, 4096) == b"a" * 4096 and b"k1" not in i
    assert tx.state == "committed"
    assert o.read(0, 8192) == b"b" * 4096 + bytes(4096)
    assert o.size == 6000
    assert i.get_many([b"k1", b"k2", b"k3", b"gone"]) == [b"v1", b"v2", b"v3",
                                                            None]


def test_exception_aborts_leaving_nothing(store, uid):
    o = store.create_object(uid())
    i = store.create_index(uid("i"))
    o.write(0, b"a" * 4096)
    new_id = uid("new")
    with pytest.raises(RuntimeError, match="boom"):
        with store.dtx() as tx:
            o.write(0, b"z" * 4096, tx=tx)
            i.put(b"k", b"v", tx=tx)
            store.create_object(new_id, tx=tx)
            raise RuntimeError("boom")
    assert tx.state == "aborted"
    assert o.read(0, 4096) == b"a" * 4096
    assert b"k" not in i and len(i) == 0
    with pytest.raises(strata.StrataError) as ei:
        store.object(new_id)
    assert ei.value.errno == errno.ENOENT


def test_explicit_abort_and_commit(store, uid):
    i = store.create_index(uid())
    tx = store.dtx()
    i.put(b"a", b"1", tx=tx)
    tx.abort()
    tx.abort()  # again: nothing
    assert b"a" not in i
    with pytest.raises(ValueError, match="aborted"):
        i.put(b"b", b"2", tx=tx)
    with pytest.raises(ValueError, match="aborted"):
        tx.commit()
    tx2 = store.dtx()
    i.put(b"b", b"2", tx=tx2)
    tx2.commit()
    assert i[b"b"] == b"2"
    with pytest.raises(ValueError, match="committed"):
        tx2.abort()
    with pytest.raises(ValueError, match="committed"):
        i.put(b"c", b"3", tx=tx2)


def test_failed_commit_applies_nothing(store, uid):
    o = store.create_object(uid())
    i = store.create_index(uid("i"))
    o.write(0, b"a" * 4096)
    i[b"taken"] = b"old"
    with pytest.raises(strata.StrataError) as ei:
        with store.dtx() as tx:
            o.write(0, b"n" * 4096, tx=tx)
            i.put(b"fresh", b"1", tx=tx)
            i.put(b"taken", b"new", overwrite=False, tx=tx)
    assert ei.value.errno == errno.EEXIST
    assert "taken" in str(ei.value)
    assert tx.state == "failed"
    assert o.read(0, 4096) == b"a" * 4096
    assert i[b"taken"] == b"old" and b"fresh" not in i


def test_member_on_deleted_entity_fails_commit(store, uid):
    o = store.create_object(uid())
    other = store.object(o.id)
    o.write(0, b"1" * 4096)
    i = store.create_index(uid("i"))
    with pytest.raises(strata.StrataError) as ei:
        with store.dtx() as tx:
            i.put(b"k", b"v", tx=tx)
            other.write(0, b"2" * 4096, tx=tx)
            o.delete()  # not in the dtx: the member's object is gone
    assert ei.value.errno == errno.ENOENT
    assert b"k" not in i


def test_create_in_dtx(store, uid):
    oid, iid = uid("o"), uid("i")
    with store.dtx() as tx:
        o = store.create_object(oid, tx=tx)
        i = store.create_index(iid, tx=tx)
    o.write(0, b"c" * 4096)
    i[b"x"] = b"y"
    assert store.object(oid).read(0, 4096) == b"c" * 4096
    assert store.index(iid)[b"x"] == b"y"
    with store.dtx() as tx:
        o.delete(tx=tx)
        i.delete(tx=tx)
    for opener, name in ((store.object, oid), (store.index, iid)):
        with pytest.raises(strata.StrataError) as ei:
            opener(name)
        assert ei.value.errno == errno.ENOENT


def test_empty_dtx_commits(store):
    with store.dtx() as tx:
        pass
    assert tx.state == "committed" and tx.members == 0
    hlc, node = tx.id
    assert hlc > 0


def test_bad_tx_arguments(store, uid, make_store):
    o = store.create_object(uid())
    with pytest.raises(TypeError, match="tx must be a Dtx"):
        o.write(0, bytes(4096), tx="not a tx")
    other = make_store("other")
    tx = other.dtx()
    with pytest.raises(ValueError, match="another store"):
        o.write(0, bytes(4096), tx=tx)
    tx.abort()


def test_store_close_aborts_open_dtx(make_store):
    st = make_store("abort-at-close")
    i = st.create_index("@i")
    tx = st.dtx()
    i.put(b"k", b"v", tx=tx)
    st.close()
    assert tx.state == "aborted"
    st2 = strata.Store(st.name)
    assert b"k" not in st2.index("@i")
    st2.close()


def test_dtx_ended_while_arguments_convert(store, uid):
    """An argument's own code (__index__, a sequence's __iter__) that ends
    the transaction: the op is refused, nothing is added to the ended
    dtx."""
    o = store.create_object(uid())
    i = store.create_index(uid("i"))
    tx = store.dtx()

    class AbortingOffset:
        def __index__(self):
            tx.abort()
            return 0

    with pytest.raises(ValueError, match="aborted: no new member"):
        o.write(AbortingOffset(), b"x" * 4096, tx=tx)
    assert tx.members == 0
    tx2 = store.dtx()

    class CommittingKeys:
        def __iter__(self):
            tx2.commit()
            return iter([b"k"])

    with pytest.raises(ValueError, match="committed: no new member"):
        i._put(CommittingKeys(), [b"v"], True, tx2)
    assert tx2.state == "committed" and tx2.members == 0
    assert o.read(0, 4096) == bytes(4096) and b"k" not in i


def test_container_entities_in_dtx(store, uid):
    c = store.create_container(uid("c"))
    with store.dtx() as tx:
        o = c.create_object(uid("o"), tx=tx)
        i = c.create_index(uid("i"), tx=tx)
        assert c.objects() == [] and c.indices() == []  # not yet
    assert c.objects() == [o.id] and c.indices() == [i.id]
    with store.dtx() as tx:
        o.delete(tx=tx)
        i.delete(tx=tx)
    with store.dtx() as tx:
        c.delete(tx=tx)
    assert c.deleted and c.id not in store.containers()
