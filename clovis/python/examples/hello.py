"""hello.py — objects and an index, the Python twin of clovis/examples/hello.c.

Run: python3 hello.py [cluster:FILE]
"""
from _common import example_store, unique

import strata

with example_store() as store:
    # an object of 4 KiB blocks: write two extents, read them back
    obj = store.create_object(unique("hello-object"), block_size=4096)
    obj.write(0, b"A" * 4096 * 4)
    obj.write(8 * 4096, b"B" * 4096 * 4)
    data = obj.read(0, 12 * 4096)
    assert data[:4 * 4096] == b"A" * 4 * 4096
    assert data[4 * 4096:8 * 4096] == bytes(4 * 4096)  # a hole reads zeros
    assert obj.attrs().size_blocks == 12
    print("object", obj.id, "is", obj.size, "bytes")

    # an index: dict-like access, ordered iteration
    idx = store.create_index(unique("hello-index"))
    idx.put_many([(b"apple", b"red"), (b"banana", b"yellow"),
                  (b"cherry", b"dark red")])
    assert idx[b"banana"] == b"yellow"
    assert idx.get(b"durian") is None
    for key, value in idx.items(start=b"b"):
        print(key.decode(), "->", value.decode())
    try:
        idx.put(b"apple", b"green", overwrite=False)
    except strata.StrataError as e:
        print("refused:", e.code_name)  # EEXIST

    obj.delete()
    idx.delete()
print("hello: ok")
