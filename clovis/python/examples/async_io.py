"""async_io.py — many ops in flight: futures and asyncio.

Run: python3 async_io.py [cluster:FILE]
"""
import asyncio
import concurrent.futures

from _common import example_store, unique

with example_store() as store:
    obj = store.create_object(unique("async"), block_size=4096)

    # futures: 64 writes in flight, then 64 reads
    writes = [obj.write_async(i * 4096, bytes([i]) * 4096) for i in range(64)]
    concurrent.futures.wait(writes)
    reads = [obj.read_async(i * 4096, 4096) for i in range(64)]
    assert [f.result() for f in reads] == [bytes([i]) * 4096
                                           for i in range(64)]

    # asyncio: await reads and index ops in one event loop
    idx = store.create_index(unique("async-index"))

    async def main():
        blocks = await asyncio.gather(*(obj.aread(i * 4096, 4096)
                                        for i in range(8)))
        await asyncio.gather(*(idx.aput(b"block%d" % i, b[:8])
                               for i, b in enumerate(blocks)))
        return await idx.aget(b"block7")

    assert asyncio.run(main()) == bytes([7]) * 8
    print("64 async writes and reads, 8 awaited reads and puts")
    obj.delete()
    idx.delete()
print("async_io: ok")
