"""numpy_io.py — numpy arrays in and out of an object with no extra copy.

Run: python3 numpy_io.py [cluster:FILE]
"""
import numpy as np
from _common import example_store, unique

with example_store() as store:
    obj = store.create_object(unique("array"), block_size=65536)
    a = np.linspace(0.0, 1.0, 1 << 20)  # 8 MiB of float64
    obj.write(0, a)  # any buffer-protocol object: no copy

    b = np.empty_like(a)
    obj.read_into(0, b)  # straight into the array's memory
    assert np.array_equal(a, b)

    rows = np.empty((16, 4096))  # part of it, into a 2-D array
    obj.read_into(65536 * 8, rows)
    assert np.array_equal(rows.ravel(), a[65536:65536 + rows.size])
    print("8 MiB of float64 written and read back, mean", b.mean())
    obj.delete()
print("numpy_io: ok")
