"""quickstart.py — the binding on one page: an embedded store, an object,
an index, a transaction and an error.

Run: python3 quickstart.py
"""
import os
import tempfile

import numpy as np

import strata

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "store")
    # a new embedded store: its devices in path, its NVRAM device in tmp
    with strata.Store(path, create=True, nvram_dir=tmp,
                      dev_size=64 << 20) as store:
        obj = store.create_object("@quickstart", block_size=4096)
        obj.write(0, b"x" * 8192)  # whole blocks at block offsets
        assert obj.read(0, 8192) == b"x" * 8192 and obj.size == 8192

        a = np.arange(1024, dtype=np.float32)  # 4 KiB: one block
        obj.write(8192, a)  # straight from the array's memory
        b = np.empty_like(a)
        obj.read_into(8192, b)  # straight into it
        assert np.array_equal(a, b)

        idx = store.create_index("@names")
        idx[b"ada"] = b"lovelace"  # dict-like
        assert idx[b"ada"] == b"lovelace" and len(idx) == 1

        with store.dtx() as tx:  # both updates, or neither
            obj.write(12288, b"y" * 4096, tx=tx)
            idx.put(b"alan", b"turing", tx=tx)
        assert list(idx) == [b"ada", b"alan"] and obj.size == 16384

        try:
            store.object("@missing")
        except strata.StrataError as e:  # an OSError: errno and message
            assert e.errno == 2 and e.code_name == "ENOENT"
            print("as expected:", e)
    strata.destroy_store(path)  # the store's files, its NVRAM device too
print("quickstart: ok")
