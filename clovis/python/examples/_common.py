"""What every example shares: where its store is.

    python3 EXAMPLE.py                  a fresh embedded store in a temporary
                                        directory, destroyed at the end
    python3 EXAMPLE.py cluster:FILE     the cluster of cluster file FILE
"""
import contextlib
import os
import shutil
import sys
import tempfile

import strata


@contextlib.contextmanager
def example_store():
    """Yield an open Store; an embedded one is destroyed afterwards."""
    where = sys.argv[1] if len(sys.argv) > 1 else ""
    if where.startswith("cluster:"):
        with strata.Store(cluster=where[len("cluster:"):]) as st:
            yield st
        return
    tmp = tempfile.mkdtemp(prefix="strata-example-")
    data = os.path.join(tmp, "data")
    try:
        # the NVRAM device in the directory too (default: /dev/shm)
        with strata.Store(data, create=True, nvram_dir=tmp,
                          dev_size=32 << 20) as st:
            yield st
        strata.destroy_store(data)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def unique(name):
    """An "@name" id no earlier run of the example used (a cluster keeps
    what the last run made)."""
    return "@%s-%d-%s" % (name, os.getpid(), os.urandom(4).hex())
