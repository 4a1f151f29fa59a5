"""Store, ids, errors and containers (clovis_init/fini, clovis_store_destroy,
clovis_id_parse, clovis_strerror, clovis_container_*, clovis_entity_list)."""
import errno
import os

import pytest

import strata
from conftest import DEV_SIZE, open_store


def test_open_create_close_reopen(tmp_path):
    path = tmp_path / "s"
    with open_store(path) as st:
        assert not st.closed and not st.cluster
        st.create_object("@keep").write(0, b"k" * 4096)
    assert st.closed
    with strata.Store(path) as st2:  # exists: no create needed
        assert st2.object("@keep").read(0, 4096) == b"k" * 4096
    strata.destroy_store(path)
    assert not path.exists()


def test_open_missing_without_create(tmp_path):
    with pytest.raises(strata.StrataError) as ei:
        strata.Store(str(tmp_path / "none"))
    assert ei.value.errno == errno.ENOENT
    assert "none" in str(ei.value)


def test_store_busy_in_second_open(make_store, tmp_path):
    make_store("busy")
    with pytest.raises(strata.StrataError) as ei:
        strata.Store(str(tmp_path / "busy"))
    assert ei.value.errno == errno.EBUSY


def test_store_options(make_store):
    st = make_store("opts", meta_nvram=True, device_model=False, fdmi=False,
                    nr_workers=2, log_level=-1)
    o = st.create_object("@x")
    o.write(0, bytes(4096))
    assert os.path.islink(os.path.join(st.name, "meta"))
    assert {d["tier"] for d in st.devices()} == {0, 1, 2, 3}
    assert any(p["name"] == "flash" for p in st.pools())
    assert st.stats()["obj.write"]["count"] >= 1


def test_store_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="exactly one of"):
        strata.Store()
    with pytest.raises(ValueError, match="exactly one of"):
        strata.Store(str(tmp_path), cluster="c.yaml")
    with pytest.raises(ValueError, match="embedded store only"):
        strata.Store(cluster="c.yaml", create=True)
    with pytest.raises(ValueError, match="server needs secret"):
        strata.Store(server="127.0.0.1:1")
    with pytest.raises(ValueError, match="log_level"):
        strata.Store(str(tmp_path), log_level=9)
    with pytest.raises(ValueError, match="dev_size"):
        strata.Store(str(tmp_path), dev_size=-1)


def test_store_bad_config_file(tmp_path):
    with pytest.raises(strata.StrataError) as ei:
        strata.Store(str(tmp_path / "s"), create=True, nvram_dir=str(tmp_path),
                     dev_size=DEV_SIZE, config=str(tmp_path / "missing.yaml"))
    assert ei.value.errno == errno.ENOENT
    assert "missing.yaml" in str(ei.value)


def test_closed_store_refuses(tmp_path):
    st = open_store(tmp_path / "c")
    o = st.create_object("@o")
    i = st.create_index("@i")
    st.close()
    st.close()  # idempotent
    for call in (lambda: o.read(0, 4096), lambda: o.write(0, bytes(4096)),
                 lambda: i.get(b"k"), lambda: st.create_object("@p"),
                 lambda: st.dtx(), lambda: o.write_async(0, bytes(4096))):
        with pytest.raises(ValueError, match="is closed"):
            call()
    strata.destroy_store(str(tmp_path / "c"))


def test_destroy_missing(tmp_path):
    with pytest.raises(strata.StrataError) as ei:
        strata.destroy_store(str(tmp_path / "nothing"))
    assert ei.value.errno == errno.ENOENT


def test_ids():
    a = strata.Id.parse("@name")
    assert a == strata.Id.parse("@name") and a.hi != 0
    assert strata.Id.parse("1a:400") == strata.Id(0x1a, 0x400)
    assert str(strata.Id(0x1a, 0x400)) == "1a:400"
    assert strata.as_id((1, 2)) == strata.Id(1, 2)
    assert strata.as_id((5 << 64) | 7) == strata.Id(5, 7)
    assert int(strata.Id(5, 7)) == (5 << 64) | 7
    with pytest.raises(strata.StrataError) as ei:
        strata.Id.parse("not-an-id")
    assert ei.value.errno == errno.EINVAL
    assert isinstance(ei.value, ValueError)
    assert "not-an-id" in str(ei.value)
    with pytest.raises(TypeError):
        strata.as_id(1.5)
    with pytest.raises(TypeError):
        strata.as_id(True)
    with pytest.raises(ValueError):
        strata.as_id(-1)
    with pytest.raises(ValueError):
        strata.as_id((1, 1 << 64))


def test_errors():
    e = strata.StrataError(errno.ENOENT, "object x: gone")
    assert isinstance(e, OSError) and e.errno == errno.ENOENT
    assert str(e) == "[ENOENT] object x: gone"
    assert strata.errno_name(strata.ECORRUPT) == "ECORRUPT"
    assert strata.strerror(-errno.ENOENT) == strata.strerror(errno.ENOENT)
    assert strata.strerror(-strata.ECHECKSUM) != ""


def test_reserved_id_refused(store):
    with pytest.raises(strata.StrataArgumentError) as ei:
        store.create_object((0, 5))
    assert ei.value.errno == errno.EINVAL
    assert "reserved" in str(ei.value)


def test_containers(store, uid):
    cid = uid("c")
    c = store.create_container(cid)
    assert c.id in store.containers()
    assert strata.Id(0, 1) in store.containers()
    with pytest.raises(strata.StrataError) as ei:
        store.create_container(cid)
    assert ei.value.errno == errno.EEXIST
    o = c.create_object("@obj-in-c")
    i = c.create_index("@idx-in-c")
    assert c.objects() == [o.id] and c.indices() == [i.id]
    assert o.container is c
    again = store.container(cid)
    assert again.object("@obj-in-c").id == o.id
    assert o.id not in store.objects()  # not in the default container
    with pytest.raises(strata.StrataError) as ei:
        c.delete()
    assert ei.value.errno == errno.ENOTEMPTY
    o.delete()
    i.delete()
    c.delete()
    assert c.deleted
    assert c.id not in store.containers()
    with pytest.raises(strata.StrataError) as ei:
        store.container(cid)
    assert ei.value.errno == errno.ENOENT


def test_default_container_not_deleted(store):
    with pytest.raises(strata.StrataError) as ei:
        store.default_container.delete()
    assert ei.value.errno == errno.EPERM


def test_entity_lists_page(store, uid):
    c = store.create_container(uid("big"))
    made = sorted(c.create_object("@o%d" % n).id for n in range(1030))
    assert c.objects() == made  # two pages of clovis_entity_list()
    for i in made:
        c.object(i).delete()
    c.delete()


def test_reprs_properties_and_constants(store, uid):
    assert repr(store) == "<strata.Store %r>" % store.name
    o = store.create_object(uid())
    i = store.create_index(uid("i"))
    assert repr(o) == "<strata.Object %s>" % (o.id,)
    assert repr(i) == "<strata.Index %s>" % (i.id,)
    assert repr(store.default_container) == "<strata.Container 0:1>"
    assert store.default_container.id == strata.Id(0, 1)
    assert o.store is store and i.store is store and o.container is None
    assert isinstance(o, strata.Object) and isinstance(i, strata.Index)
    assert isinstance(store.default_container, strata.Container)
    tx = store.dtx()
    assert isinstance(tx, strata.Transaction)
    i.put(b"k", b"v", tx=tx)
    assert repr(tx).endswith(" open, 1 members>")
    tx.abort()
    assert repr(tx).endswith(" aborted, 1 members>")
    store.settle()  # embedded: nothing in doubt, at once
    store.settle(before=1 << 60, timeout=1.0)
    assert (strata.BLOCK_SIZE_MIN, strata.BLOCK_SIZE_MAX) == (512, 64 << 20)
    assert strata.OP_BYTES_MAX == 256 << 20
    assert strata.KEY_MAX > 0 and strata.VAL_MAX >= strata.KEY_MAX
    codes = {strata.ECORRUPT, strata.EVERSION, strata.ECHECKSUM,
             strata.ESTATE}
    assert len(codes) == 4 and min(codes) > 133  # beyond the errnos
    assert strata.errno_name(strata.EVERSION) == "EVERSION"
    assert strata.errno_name(strata.ESTATE) == "ESTATE"
    e = strata.StrataError(errno.EEXIST, "x")
    assert e.code_name == "EEXIST" and strata.errno_name(99999) == "99999"
    i2 = strata.Id(7, 9)
    assert (i2.hi, i2.lo) == (7, 9)


def test_bad_id_and_handle_arguments(store, uid):
    with pytest.raises(TypeError, match="object id: must be an Id"):
        store.object(1.5)
    with pytest.raises(TypeError, match="index id: must be an Id"):
        store.create_index(None)
    with pytest.raises(TypeError, match="container id: must be an Id"):
        store.container([1, 2])
    with pytest.raises(strata.StrataArgumentError) as ei:
        store.container("junk")
    assert ei.value.errno == errno.EINVAL and "junk" in str(ei.value)
    with pytest.raises(TypeError, match="text must be str"):
        strata.Id.parse(b"@x")
    o = store.create_object(uid())
    with pytest.raises(ValueError, match="size must be between"):
        o.set_size(-1)
    with pytest.raises(TypeError, match="size must be an int"):
        o.set_size("10")
    with pytest.raises(TypeError, match="store must be a _strata.Store"):
        strata.Object("not a store", None, 1, 2)
    with pytest.raises(TypeError, match="Container of the same store"):
        strata.Object(store._cs, o, 1, 2)
