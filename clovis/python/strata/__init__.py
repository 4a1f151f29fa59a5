"""strata — Python binding of Strata's Clovis API (clovis/clovis.h).

    import strata

    with strata.Store("/tmp/demo", create=True, nvram_dir="/tmp/demo") as st:
        obj = st.create_object("@hello", block_size=4096)
        obj.write(0, b"x" * 4096)
        assert obj.read(0, 4096) == b"x" * 4096
        idx = st.create_index("@names")
        idx[b"k"] = b"v"
        with st.dtx() as tx:
            obj.write(4096, bytes(4096), tx=tx)
            idx.put(b"k2", b"v2", tx=tx)

Store (embedded or cluster), Container, Object, Index and Transaction wrap
the Clovis handles; errors are StrataError (an OSError with .errno and
Strata's message); async ops return futures (``obj.write_async``) or are
awaited (``await obj.aread(...)``).  See clovis/python/README.md.
"""
from . import _strata
from ._async import StrataFuture
from ._errors import StrataArgumentError, StrataError, errno_name
from ._ids import Id, IdLike, as_id
from ._store import (Buffer, Container, Index, IndexAttrs, Key, Layout,
                     Object, ObjectAttrs, Store, Tier, Transaction,
                     destroy_store)

__version__ = "0.1.0"

#: Clovis' own error codes (StrataError.errno; clovis.h enum clovis_errno).
ECORRUPT: int = _strata.ECORRUPT
EVERSION: int = _strata.EVERSION
ECHECKSUM: int = _strata.ECHECKSUM
ESTATE: int = _strata.ESTATE
#: Limits (clovis.h).
KEY_MAX: int = _strata.KEY_MAX
VAL_MAX: int = _strata.VAL_MAX
OP_BYTES_MAX: int = _strata.OP_BYTES_MAX
BLOCK_SIZE_MIN: int = 1 << _strata.BLOCK_SHIFT_MIN
BLOCK_SIZE_MAX: int = 1 << _strata.BLOCK_SHIFT_MAX


def strerror(code: int) -> str:
    """clovis_strerror() of an errno or Clovis code (either sign)."""
    return _strata.strerror(code)


__all__ = [
    "Store", "Container", "Object", "Index", "Transaction", "Id", "IdLike",
    "as_id", "Tier", "Layout", "ObjectAttrs", "IndexAttrs", "StrataError",
    "StrataArgumentError", "StrataFuture", "destroy_store", "strerror",
    "errno_name", "Buffer", "Key", "ECORRUPT", "EVERSION", "ECHECKSUM",
    "ESTATE", "KEY_MAX", "VAL_MAX", "OP_BYTES_MAX", "BLOCK_SIZE_MIN",
    "BLOCK_SIZE_MAX",
]
