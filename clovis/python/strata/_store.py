"""Store, containers, objects, indices and transactions: the Pythonic
surface over strata._strata (see clovis/clovis.h for every contract)."""
from __future__ import annotations

import atexit
import enum
import errno as _errno
import os
import threading
import weakref
from dataclasses import dataclass
from typing import (Any, Dict, Iterable, Iterator, List, Optional, Sequence,
                    Tuple, Union)

from . import _async, _strata
from ._errors import StrataError, make_error
from ._ids import Id, IdLike, as_id

__all__ = [
    "Store", "Container", "Object", "Index", "Transaction", "Tier",
    "Layout", "ObjectAttrs", "IndexAttrs", "destroy_store", "Buffer", "Key",
]

#: Any object with the buffer protocol: bytes, bytearray, memoryview,
#: array.array, numpy arrays (C-contiguous), mmap ...
Buffer = Any
#: An index key or value: bytes-like, or str (stored as UTF-8).
Key = Union[str, bytes, bytearray, memoryview]

_DEFAULT_CONTAINER = Id(0, 1)


class Tier(enum.IntEnum):
    """enum clovis_tier: where a PLAIN object's blocks live."""
    NVRAM = 0
    FLASH = 1
    SAS = 2
    SMR = 3


class Layout(enum.IntEnum):
    """enum clovis_layout_type (DEFAULT: the container's default layout)."""
    DEFAULT = 0
    PLAIN = 1
    PDCLUST = 2
    MIRROR = 3


def _enum(cls: Any, value: Any, field: str) -> Any:
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        try:
            return cls[value.upper()]
        except KeyError:
            raise ValueError("%s: %r is not one of %s" % (
                field, value, ", ".join(m.name.lower() for m in cls))
            ) from None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            raise ValueError("%s: %d is not a valid %s" % (
                field, value, cls.__name__)) from None
    raise TypeError("%s: must be a %s or its name, not %s" % (
        field, cls.__name__, type(value).__name__))


def _shift(size: int, field: str, lo: int, hi: int) -> int:
    """log2 of a power-of-two size in [2**lo, 2**hi]; 0 for 0."""
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError("%s: must be an int, not %s"
                        % (field, type(size).__name__))
    if size == 0:
        return 0
    if size < 0 or size & (size - 1) or not lo <= size.bit_length() - 1 <= hi:
        raise ValueError("%s: %d is not a power of two from %d to %d"
                         % (field, size, 1 << lo, 1 << hi))
    return size.bit_length() - 1


def _count(value: int, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s: must be an int, not %s"
                        % (field, type(value).__name__))
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError("%s: %d is out of range" % (field, value))
    return value


@dataclass(frozen=True)
class ObjectAttrs:
    """An object's attributes (struct clovis_obj_attr)."""
    block_size: int
    layout: Layout
    tier: Tier
    device: int
    pool: int
    data_units: int
    parity_units: int
    spare_units: int
    unit_size: int
    size_blocks: int
    size: int          #: oa_size_bytes
    ctime_ns: int
    mtime_ns: int


@dataclass(frozen=True)
class IndexAttrs:
    """An index's attributes (struct clovis_idx_attr)."""
    nr_records: int
    ctime_ns: int


def destroy_store(data_dir: Union[str, "os.PathLike[str]"]) -> None:
    """Remove the (closed) embedded store in data_dir: its devices, its
    NVRAM device and metadata, the directory when nothing else is left in
    it (clovis_store_destroy())."""
    _strata.store_destroy(os.fspath(data_dir))


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return repr(key)
    try:
        return repr(bytes(key))
    except Exception:
        return "<%s>" % type(key).__name__


_STORES: "weakref.WeakSet[Store]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for s in list(_STORES):
        try:
            s.close()
        except Exception:
            pass


class Store:
    """A Clovis instance over one store (clovis_init() ... clovis_fini()).

    Embedded: ``Store("/path/to/data", create=True)`` opens (or with
    ``create`` makes) the store in a data directory; the engine runs in
    this process (one process per store).  Cluster: ``Store(cluster=
    "cluster.yaml")`` or ``Store(server="host:port", secret=...)``.

    Keyword arguments mirror struct clovis_conf: ``create``
    (CLOVIS_CONF_CREATE), ``nr_workers``, ``dev_size`` (bytes of each
    emulated device made at create), ``nvram_dir`` (the NVRAM device's
    directory at create; default /dev/shm), ``meta_size``, ``log_level``
    (-1 none .. 4 debug), ``config`` (path of a YAML store configuration,
    used at create), ``meta_nvram`` (CLOVIS_CONF_META_NVRAM),
    ``device_model`` (CLOVIS_CONF_DEVICE_MODEL), ``fdmi`` (True:
    CLOVIS_CONF_FDMI_ON, False: CLOVIS_CONF_FDMI_OFF, None: the default),
    ``isc_native``.

    A Store is a context manager (closed on exit) and may be used by any
    number of threads at once; every blocking call releases the GIL.
    """

    def __init__(self, data_dir: Union[str, "os.PathLike[str]", None] = None,
                 *, create: bool = False,
                 cluster: Union[str, "os.PathLike[str]", None] = None,
                 server: Optional[str] = None, secret: Optional[str] = None,
                 nr_workers: int = 0, dev_size: int = 0,
                 nvram_dir: Union[str, "os.PathLike[str]", None] = None,
                 meta_size: int = 0, log_level: int = 0,
                 config: Union[str, "os.PathLike[str]", None] = None,
                 meta_nvram: bool = False, device_model: bool = False,
                 fdmi: Optional[bool] = None,
                 isc_native: Optional[str] = None) -> None:
        self._c: Optional[_strata.Store] = None
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        chosen = [n for n, v in (("data_dir", data_dir), ("cluster", cluster),
                                 ("server", server)) if v is not None]
        if len(chosen) != 1:
            raise ValueError("Store: give exactly one of data_dir, cluster "
                             "or server (got %s)" % (", ".join(chosen)
                                                    or "none"))
        if secret is not None and server is None:
            raise ValueError("Store: secret goes with server")
        if server is not None and secret is None:
            raise ValueError("Store: server needs secret")
        if data_dir is None:
            local = [n for n, v in (
                ("create", create), ("dev_size", dev_size),
                ("nvram_dir", nvram_dir), ("meta_size", meta_size),
                ("config", config), ("meta_nvram", meta_nvram),
                ("device_model", device_model), ("fdmi", fdmi),
                ("isc_native", isc_native)) if v not in (None, False, 0)]
            if local:
                raise ValueError("Store: %s apply to an embedded store "
                                 "only (the servers own the stores)"
                                 % ", ".join(local))
        for n, v in (("nr_workers", nr_workers), ("dev_size", dev_size),
                     ("meta_size", meta_size)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError("Store: %s must be an int >= 0, not %r"
                                 % (n, v))
        if not isinstance(log_level, int) or not -1 <= log_level <= 4:
            raise ValueError("Store: log_level must be -1..4, not %r"
                             % (log_level,))
        flags = ((_strata.CONF_CREATE if create else 0) |
                 (_strata.CONF_META_NVRAM if meta_nvram else 0) |
                 (_strata.CONF_DEVICE_MODEL if device_model else 0) |
                 (0 if fdmi is None else _strata.CONF_FDMI_ON if fdmi
                  else _strata.CONF_FDMI_OFF))

        def path(p: Any) -> Optional[str]:
            return None if p is None else os.fspath(p)

        self.name = path(data_dir) or path(cluster) or str(server)
        self._c = _strata.Store(
            self.name,
            _strata.MODE_EMBEDDED if data_dir is not None
            else _strata.MODE_CLUSTER,
            path(data_dir), flags, nr_workers, dev_size, path(nvram_dir),
            meta_size, log_level, path(config), path(cluster), server, secret,
            isc_native)
        _STORES.add(self)

    # ------------------------------------------------------ lifetime
    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<strata.Store %r%s%s>" % (
            self.name, " cluster" if self.cluster else "",
            " closed" if self.closed else "")

    @property
    def closed(self) -> bool:
        """True once close() started."""
        return self._c is None or self._c.closed

    @property
    def cluster(self) -> bool:
        """True for a cluster client."""
        return self._c is not None and self._c.cluster

    @property
    def _cs(self) -> _strata.Store:
        if self._c is None:
            raise ValueError("store %s is closed" % self.name)
        return self._c

    def close(self) -> None:
        """Close the store (clovis_fini()): open transactions are aborted,
        calls running in other threads and every async op are waited for,
        then the instance is released.  Idempotent.  Not from a future's
        callback (that runs on the store's dispatch thread)."""
        if self._c is None:
            return
        t = self._thread
        if t is not None and t is threading.current_thread():
            raise RuntimeError("store %s: close() from its own dispatch "
                               "thread (a future's callback)" % self.name)
        self._c.close()
        if t is not None:
            t.join()
        _STORES.discard(self)

    def __del__(self) -> None:
        """A Store dropped without close() is closed here (else its
        dispatch thread would keep it open, and the store busy, until the
        process ends).  On that dispatch thread itself (the last reference
        dropped by a future's callback) the close is left to the thread:
        it ends once every async op was delivered and closes the store."""
        c = getattr(self, "_c", None)
        if c is None or c.closed:
            return
        t = getattr(self, "_thread", None)
        if t is not None and t is threading.current_thread():
            c._close_later()
            return
        self.close()

    def _dispatching(self) -> None:
        """Start the thread delivering async ops' results (once)."""
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                t = threading.Thread(target=self._cs.dispatch, daemon=True,
                                     name="strata-dispatch %s" % self.name)
                t.start()
                self._thread = t

    # ---------------------------------------------------- containers
    def container(self, id: IdLike) -> "Container":
        """Open the container id (-ENOENT: StrataError if none)."""
        c = self._container_handle(as_id(id, "container id"))
        c._entity_op(_strata.EO_OPEN)
        return c

    def create_container(self, id: IdLike) -> "Container":
        """Create the container id (EEXIST if it exists)."""
        c = self._container_handle(as_id(id, "container id"))
        c._entity_op(_strata.EO_CREATE)
        return c

    @property
    def default_container(self) -> "Container":
        """The default container (always there, never deleted)."""
        return self._container_handle(_DEFAULT_CONTAINER, opened=True)

    def _container_handle(self, i: Id, opened: bool = False) -> "Container":
        c = Container(self._cs, i.hi, i.lo)
        c._store = self
        if opened:
            c._entity_op(_strata.EO_OPEN)
        return c

    def containers(self) -> List[Id]:
        """Every container's id, in id order (clovis_entity_list())."""
        return _list_all(self._cs, None, _strata.ET_CONTAINER)

    # ----------------------------------- the default container's entities
    def create_object(self, id: IdLike, **layout: Any) -> "Object":
        """Create an object in the default container; see
        Container.create_object()."""
        return _create_object(self, None, id, **layout)

    def object(self, id: IdLike) -> "Object":
        """Open an object of the default container."""
        return _open_object(self, None, id)

    def create_index(self, id: IdLike, *,
                     tx: Optional["Transaction"] = None) -> "Index":
        """Create an index in the default container."""
        return _create_index(self, None, id, tx)

    def index(self, id: IdLike) -> "Index":
        """Open an index of the default container."""
        return _open_index(self, None, id)

    def objects(self) -> List[Id]:
        """Ids of the default container's objects."""
        return _list_all(self._cs, None, _strata.ET_OBJ)

    def indices(self) -> List[Id]:
        """Ids of the default container's indices."""
        return _list_all(self._cs, None, _strata.ET_IDX)

    # -------------------------------------------------- transactions
    def dtx(self, container: Optional["Container"] = None) -> "Transaction":
        """A new distributed transaction (clovis_dtx_open()), to use as a
        context manager::

            with store.dtx() as tx:
                obj.write(0, data, tx=tx)
                idx.put(b"k", b"v", tx=tx)

        commits on normal exit (every member applied, or none and a
        StrataError), aborts on an exception (nothing applied)."""
        t = Transaction(self._cs, container)
        t._store = self
        return t

    def settle(self, before: int = 0, timeout: float = 30.0) -> None:
        """Wait until no dtx in doubt below ``before`` (0: those in doubt
        now) is undecided on any server (clovis_dtx_settle(); at once on
        an embedded store)."""
        self._cs.settle(before, int(timeout * 1000))

    # ---------------------------------------------------- management
    def devices(self) -> List[Dict[str, Any]]:
        """The store's devices (clovis_dev_list())."""
        return self._cs.devices()

    def pools(self) -> List[Dict[str, Any]]:
        """The store's pools (clovis_pool_list())."""
        return self._cs.pools()

    def stats(self) -> Dict[str, Dict[str, Any]]:
        """Per op class counts and latencies (clovis_stats_get())."""
        return self._cs.stats()


def _list_all(cs: _strata.Store, parent: Any, et: int) -> List[Id]:
    """Every id clovis_entity_list() gives, 1024 per call."""
    out: List[Id] = []
    after: Optional[Tuple[int, int]] = None
    while True:
        got = cs.list(parent, et, after, 1024)
        out.extend(Id(h, l) for h, l in got)
        if len(got) < 1024:
            return out
        after = got[-1]


def _layout_attr(block_size: int = 4096, layout: Any = "plain",
                 tier: Any = "flash", pool: int = 0, data_units: int = 0,
                 parity_units: int = 0, spare_units: int = 0,
                 unit_size: int = 0) -> Tuple[int, ...]:
    lay = _enum(Layout, layout, "layout")
    tr = _enum(Tier, tier, "tier")
    shift = _shift(block_size, "block_size", _strata.BLOCK_SHIFT_MIN,
                   _strata.BLOCK_SHIFT_MAX)
    if shift == 0:
        raise ValueError("block_size: 0 is not a block size (512 .. 64 MiB)")
    ushift = _shift(unit_size, "unit_size", 12, 24)
    return (shift, int(lay), int(tr), _count(pool, "pool"),
            _count(data_units, "data_units"),
            _count(parity_units, "parity_units"),
            _count(spare_units, "spare_units"), ushift)


def _entity_run(cls: Any, store: Store, parent: Optional["Container"],
                i: Id, op: int, tx: Optional["Transaction"] = None,
                *args: Any) -> Any:
    """A new handle of cls on id i (made by as_id()) in parent, with the
    entity op (EO_CREATE, EO_OPEN) run on it; args follow its id."""
    e = cls(store._cs, parent, i.hi, i.lo, *args)
    e._store = store
    e._entity_op(op, tx)
    return e


def _create_object(store: Store, parent: Optional["Container"], id: IdLike,
                   tx: Optional["Transaction"] = None, **layout: Any
                   ) -> "Object":
    i = as_id(id, "object id")
    try:
        attr = _layout_attr(**layout)
    except TypeError as e:
        if "unexpected keyword" in str(e):
            raise TypeError("create_object: %s (layout arguments: "
                            "block_size, layout, tier, pool, data_units, "
                            "parity_units, spare_units, unit_size)" % e
                            ) from None
        raise
    return _entity_run(Object, store, parent, i, _strata.EO_CREATE, tx, attr)


def _open_object(store: Store, parent: Optional["Container"], id: IdLike
                 ) -> "Object":
    return _entity_run(Object, store, parent, as_id(id, "object id"),
                       _strata.EO_OPEN, None, None)


def _create_index(store: Store, parent: Optional["Container"], id: IdLike,
                  tx: Optional["Transaction"]) -> "Index":
    return _entity_run(Index, store, parent, as_id(id, "index id"),
                       _strata.EO_CREATE, tx)


def _open_index(store: Store, parent: Optional["Container"], id: IdLike
                ) -> "Index":
    return _entity_run(Index, store, parent, as_id(id, "index id"),
                       _strata.EO_OPEN)


class _EntityMixin:
    _store: Store

    @property
    def id(self) -> Id:
        """The entity's id."""
        return Id(*self._id())  # type: ignore[attr-defined]

    @property
    def store(self) -> Store:
        """The Store this handle belongs to."""
        return self._store

    @property
    def deleted(self) -> bool:
        """True once deleted through this handle."""
        return self._state() == _strata.ES_DELETED  # type: ignore

    def __repr__(self) -> str:
        return "<strata.%s %s>" % (type(self).__name__, self.id)


class Container(_EntityMixin, _strata.Container):
    """A container: the realm objects and indices are made in.  Get one
    from Store.container(), Store.create_container() or
    Store.default_container."""

    def delete(self, *, tx: Optional["Transaction"] = None) -> None:
        """Delete the container, which must be empty (ENOTEMPTY); the
        default one cannot be (EPERM)."""
        self._entity_op(_strata.EO_DELETE, tx)

    def create_object(self, id: IdLike, *, block_size: int = 4096,
                      layout: Union[Layout, str, int] = "plain",
                      tier: Union[Tier, str, int] = "flash", pool: int = 0,
                      data_units: int = 0, parity_units: int = 0,
                      spare_units: int = 0, unit_size: int = 0,
                      tx: Optional["Transaction"] = None) -> "Object":
        """Create an object of blocks of ``block_size`` bytes (a power of
        two, 512 B .. 64 MiB) with a layout: "plain" on ``tier`` (nvram,
        flash, sas, smr), "pdclust" (``data_units`` N + ``parity_units``
        K + ``spare_units`` S over ``pool``; defaults 4+2) or "mirror"
        (``data_units`` copies, default 2), units of ``unit_size`` bytes
        (0: max(64 KiB, block_size)); "default" takes the container's.
        EEXIST if the id is taken."""
        return _create_object(self._store, self, id, tx,
                              block_size=block_size, layout=layout,
                              tier=tier, pool=pool, data_units=data_units,
                              parity_units=parity_units,
                              spare_units=spare_units, unit_size=unit_size)

    def object(self, id: IdLike) -> "Object":
        """Open an object of this container (ENOENT if none)."""
        return _open_object(self._store, self, id)

    def create_index(self, id: IdLike, *,
                     tx: Optional["Transaction"] = None) -> "Index":
        """Create an index in this container (EEXIST if the id is taken)."""
        return _create_index(self._store, self, id, tx)

    def index(self, id: IdLike) -> "Index":
        """Open an index of this container (ENOENT if none)."""
        return _open_index(self._store, self, id)

    def objects(self) -> List[Id]:
        """Ids of this container's objects, in id order."""
        return _list_all(self._store._cs, self, _strata.ET_OBJ)

    def indices(self) -> List[Id]:
        """Ids of this container's indices, in id order."""
        return _list_all(self._store._cs, self, _strata.ET_IDX)


class Object(_EntityMixin, _strata.Obj):
    """An object: an array of blocks of one size, read and written in
    whole blocks at block-aligned byte offsets.

    Synchronous I/O (GIL released while it runs):
      ``read(offset=0, length=None) -> bytes``,
      ``read_into(offset, buf) -> int`` (fills any writable buffer, e.g. a
      bytearray or numpy array, with no extra copy),
      ``write(offset, data, tx=None)`` (any bytes-like object),
      ``alloc(offset, length, tx=None)``, ``punch(offset, length,
      tx=None)`` (CLOVIS_OC_FREE: holes).
    Async: ``read_async``, ``read_into_async``, ``write_async`` return a
    StrataFuture; ``aread``, ``aread_into``, ``awrite`` are awaitable.
    """

    @property
    def block_size(self) -> int:
        """Bytes per block."""
        return 1 << (self._attr()[0] or 12)

    def attrs(self, refresh: bool = True) -> ObjectAttrs:
        """The attributes, read again from the store unless refresh is
        False (then as the last op on this handle left them)."""
        if refresh:
            self._entity_op(_strata.EO_GETATTR)
        a = self._attr()
        return ObjectAttrs(1 << a[0], Layout(a[1]), Tier(a[2]), a[3], a[4],
                           a[5], a[6], a[7], (1 << a[8]) if a[8] else 0,
                           a[9], a[10], a[11], a[12])

    @property
    def size(self) -> int:
        """oa_size_bytes, read from the store: grows as blocks are
        written, or as set by set_size()."""
        self._entity_op(_strata.EO_GETATTR)
        return self._attr()[10]

    def set_size(self, size: int, *,
                 tx: Optional["Transaction"] = None) -> None:
        """Store oa_size_bytes (CLOVIS_EO_SETATTR)."""
        self._entity_op(_strata.EO_SETATTR, tx, size)

    def delete(self, *, tx: Optional["Transaction"] = None) -> None:
        """Delete the object and its data."""
        self._entity_op(_strata.EO_DELETE, tx)

    def read(self, offset: int = 0,  # type: ignore[override]
             length: Optional[int] = None) -> bytes:
        """``length`` bytes (whole blocks) from ``offset`` (a block
        boundary); length None: up to the object's size (rounded up to a
        whole block, then cut to the size).  Unwritten blocks read as
        zeros."""
        if length is not None:
            return _strata.Obj.read(self, offset, length)
        size = self.size
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise TypeError("%s: offset must be an int" % self._what())
        if offset >= size:
            return b""
        bs = self.block_size
        n = (size - offset + bs - 1) // bs * bs
        data = _strata.Obj.read(self, offset, n)
        return data[:size - offset] if n != size - offset else data

    def _what(self) -> str:
        return "object %s" % self.id

    # ------------------------------------------------------- async
    def read_async(self, offset: int, length: int) -> _async.StrataFuture:
        """Start a read of ``length`` bytes at ``offset``; the future's
        result is the bytes."""
        self._store._dispatching()
        return _async.submit(lambda cb: self._start_read(offset, length, cb))

    def read_into_async(self, offset: int, buf: Buffer
                        ) -> _async.StrataFuture:
        """Start a read into the writable buffer ``buf`` (held until the
        op ends); the future's result is the byte count."""
        self._store._dispatching()
        return _async.submit(
            lambda cb: self._start_read_into(offset, buf, cb))

    def write_async(self, offset: int, data: Buffer) -> _async.StrataFuture:
        """Start a write of ``data`` (held, and must stay unchanged, until
        the op is STABLE); the future's result is None once it is."""
        self._store._dispatching()
        return _async.submit(lambda cb: self._start_write(offset, data, cb))

    async def aread(self, offset: int, length: int) -> bytes:
        """``await obj.aread(offset, length)``: read_async in asyncio."""
        self._store._dispatching()
        return await _async.run_async(
            lambda cb: self._start_read(offset, length, cb))

    async def aread_into(self, offset: int, buf: Buffer) -> int:
        """``await obj.aread_into(offset, buf)``."""
        self._store._dispatching()
        return await _async.run_async(
            lambda cb: self._start_read_into(offset, buf, cb))

    async def awrite(self, offset: int, data: Buffer) -> None:
        """``await obj.awrite(offset, data)``: done once STABLE."""
        self._store._dispatching()
        await _async.run_async(
            lambda cb: self._start_write(offset, data, cb))


_ENOENT = -_errno.ENOENT


class Index(_EntityMixin, _strata.Idx):
    """An index: an ordered key-value store (keys compared as unsigned
    bytes).  Keys and values are bytes-like objects or str (stored as
    UTF-8); what comes back is bytes.

    Dict-like: ``idx[k]`` (KeyError if absent), ``idx[k] = v`` (replaces),
    ``del idx[k]`` (KeyError if absent), ``k in idx``, ``len(idx)``,
    iteration over keys in order; ``items(start=...)``, ``keys()``,
    ``values()``.  Batches in one op: ``get_many``, ``put_many``,
    ``remove_many``.  Async: ``get_async``, ``put_async``,
    ``remove_async`` (futures), ``aget``, ``aput``, ``aremove``.
    """

    def attrs(self) -> IndexAttrs:
        """The attributes, read from the store (GETATTR)."""
        self._entity_op(_strata.EO_GETATTR)
        a = self._attr()
        return IndexAttrs(a[0], a[1])

    def delete(self, *, tx: Optional["Transaction"] = None) -> None:
        """Delete the index with all its records."""
        self._entity_op(_strata.EO_DELETE, tx)

    def __len__(self) -> int:
        return self.attrs().nr_records

    # ----------------------------------------------------- records
    def _raise_rc(self, rc: int, op: str, key: Any) -> None:
        raise make_error(-rc, "index %s: %s: key %s: %s" % (
            self.id, op, _key_text(key), _strata.strerror(rc)))

    def get(self, key: Key, default: Any = None) -> Any:
        """The value of ``key`` (bytes), or ``default`` if absent."""
        v = self._get([key])[0]
        if isinstance(v, int):
            if v == _ENOENT:
                return default
            self._raise_rc(v, "get", key)
        return v

    def __getitem__(self, key: Key) -> bytes:
        v = self._get([key])[0]
        if isinstance(v, int):
            if v == _ENOENT:
                raise KeyError(key)
            self._raise_rc(v, "get", key)
        return v

    def __contains__(self, key: object) -> bool:
        return not isinstance(self._get([key])[0], int)

    def __setitem__(self, key: Key, value: Key) -> None:
        self.put(key, value)

    def __delitem__(self, key: Key) -> None:
        self.remove(key)

    def __iter__(self) -> Iterator[bytes]:
        return self.keys()

    def get_many(self, keys: Sequence[Key]) -> List[Optional[bytes]]:
        """The values of ``keys`` with one GET op (None where absent)."""
        out: List[Optional[bytes]] = []
        for k, v in zip(keys, self._get(keys)):
            if isinstance(v, int):
                if v != _ENOENT:
                    self._raise_rc(v, "get", k)
                v = None
            out.append(v)
        return out

    def put(self, key: Key, value: Key, *, overwrite: bool = True,
            tx: Optional["Transaction"] = None) -> None:
        """Store one record; with overwrite False an existing key is
        refused (StrataError EEXIST).  With tx: a member of the
        transaction (applied at its commit)."""
        self.put_many([(key, value)], overwrite=overwrite, tx=tx)

    def put_many(self, items: Union[Iterable[Tuple[Key, Key]],
                                    Dict[Any, Any]],
                 *, overwrite: bool = True,
                 tx: Optional["Transaction"] = None) -> None:
        """Store records in one atomic PUT op.  Without overwrite, keys
        that exist are left as they are and the first is reported
        (EEXIST) after the others were stored (a PUT's contract); in a
        transaction the whole transaction fails instead."""
        pairs = list(items.items() if isinstance(items, dict) else items)
        keys = [p[0] for p in pairs]
        rcs = self._put(keys, [p[1] for p in pairs], overwrite, tx)
        if rcs is None:
            return
        for k, rc in zip(keys, rcs):
            if rc != 0:
                self._raise_rc(rc, "put", k)

    def remove(self, key: Key, *,
               tx: Optional["Transaction"] = None) -> None:
        """Delete the record of ``key``: KeyError if absent (outside a
        transaction; in one, a missing key is not reported)."""
        rcs = self._delete([key], tx)
        if rcs is None:
            return
        if rcs[0] == _ENOENT:
            raise KeyError(key)
        if rcs[0] != 0:
            self._raise_rc(rcs[0], "del", key)

    def remove_many(self, keys: Sequence[Key], *,
                    tx: Optional["Transaction"] = None
                    ) -> Optional[List[bool]]:
        """Delete records in one op; per key True if it was there (None
        in a transaction)."""
        rcs = self._delete(keys, tx)
        if rcs is None:
            return None
        out = []
        for k, rc in zip(keys, rcs):
            if rc not in (0, _ENOENT):
                self._raise_rc(rc, "del", k)
            out.append(rc == 0)
        return out

    def next(self, start: Optional[Key] = None, count: int = 1, *,
             exclude_start: bool = False) -> List[Tuple[bytes, bytes]]:
        """Up to ``count`` records in key order from the first key >=
        ``start`` (> with exclude_start; None: from the first record):
        one NEXT op."""
        return self._next(start, exclude_start, count)

    def items(self, start: Optional[Key] = None, *,
              exclude_start: bool = False, batch: int = 64
              ) -> Iterator[Tuple[bytes, bytes]]:
        """Iterate (key, value) in key order from ``start``, ``batch``
        records per NEXT op.  Records changed meanwhile may or may not be
        seen (no snapshot)."""
        excl = exclude_start
        while True:
            got = self._next(start, excl, batch)
            yield from got
            if len(got) < batch:
                return
            start, excl = got[-1][0], True

    def keys(self, start: Optional[Key] = None, *,
             exclude_start: bool = False, batch: int = 64
             ) -> Iterator[bytes]:
        """Iterate keys in order (see items())."""
        return (k for k, _ in self.items(start, exclude_start=exclude_start,
                                         batch=batch))

    def values(self, start: Optional[Key] = None, *,
               exclude_start: bool = False, batch: int = 64
               ) -> Iterator[bytes]:
        """Iterate values in key order (see items())."""
        return (v for _, v in self.items(start, exclude_start=exclude_start,
                                         batch=batch))

    # ------------------------------------------------------- async
    def _conv_get(self, key: Any, default: Any) -> Any:
        def conv(vals: List[Any]) -> Any:
            v = vals[0]
            if isinstance(v, int):
                if v == _ENOENT:
                    return default
                self._raise_rc(v, "get", key)
            return v
        return conv

    def _conv_rcs(self, op: str, keys: Sequence[Any],
                  missing_raises: bool) -> Any:
        def conv(rcs: List[int]) -> None:
            for k, rc in zip(keys, rcs):
                if rc == _ENOENT and missing_raises:
                    raise KeyError(k)
                if rc != 0:
                    self._raise_rc(rc, op, k)
        return conv

    def get_async(self, key: Key, default: Any = None
                  ) -> _async.StrataFuture:
        """Start a GET; the future's result is the value or default."""
        self._store._dispatching()
        return _async.submit(lambda cb: self._start(1, [key], None, False,
                                                    cb),
                             self._conv_get(key, default))

    def put_async(self, key: Key, value: Key, *, overwrite: bool = True
                  ) -> _async.StrataFuture:
        """Start a PUT; the future's result is None once it is STABLE."""
        self._store._dispatching()
        return _async.submit(lambda cb: self._start(2, [key], [value],
                                                    overwrite, cb),
                             self._conv_rcs("put", [key], False))

    def remove_async(self, key: Key) -> _async.StrataFuture:
        """Start a DEL; the future raises KeyError if the key was absent."""
        self._store._dispatching()
        return _async.submit(lambda cb: self._start(3, [key], None, False,
                                                    cb),
                             self._conv_rcs("del", [key], True))

    async def aget(self, key: Key, default: Any = None) -> Any:
        """``await idx.aget(key)``: the value or default."""
        self._store._dispatching()
        return await _async.run_async(
            lambda cb: self._start(1, [key], None, False, cb),
            self._conv_get(key, default))

    async def aput(self, key: Key, value: Key, *,
                   overwrite: bool = True) -> None:
        """``await idx.aput(key, value)``: done once STABLE."""
        self._store._dispatching()
        await _async.run_async(
            lambda cb: self._start(2, [key], [value], overwrite, cb),
            self._conv_rcs("put", [key], False))

    async def aremove(self, key: Key) -> None:
        """``await idx.aremove(key)``: KeyError if absent."""
        self._store._dispatching()
        await _async.run_async(
            lambda cb: self._start(3, [key], None, False, cb),
            self._conv_rcs("del", [key], True))


class Transaction(_strata.Dtx):
    """A distributed transaction (clovis.h "Distributed transactions"):
    updates passed ``tx=`` (object write/alloc/punch/set_size/delete,
    index put/remove, entity create/delete) become its members and are
    applied together at the commit, atomically and durably, or not at all.
    Reads are not part of it and do not see its pending updates.

    As a context manager it commits on normal exit and aborts when the
    block raises (the exception goes on).  ``commit()`` raises StrataError
    when the transaction failed (nothing of it applied).  Get one from
    Store.dtx().
    """

    _store: Store

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            if self.state == "open":
                self.abort()
            return
        self.commit()

    def __repr__(self) -> str:
        hlc, node = self.id
        return "<strata.Transaction %x:%x %s, %d members>" % (
            node, hlc, self.state, self.members)
