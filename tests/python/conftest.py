"""Fixtures of the binding's tests (tests/python, run by
tests/integ/python_test.sh): embedded stores in pytest's temporary
directories, their NVRAM device and metadata there too (nothing in
/dev/shm), destroyed at the end."""
import itertools
import os

import pytest

import strata

DEV_SIZE = 32 << 20  # per emulated device: small, the tests move little


def open_store(path, **kw):
    """A new embedded store in path (its NVRAM device there too)."""
    return strata.Store(str(path), create=True, nvram_dir=str(path),
                        dev_size=DEV_SIZE, **kw)


@pytest.fixture
def make_store(tmp_path):
    """make_store(name, **kw): a new store under tmp_path; every store
    made is closed and destroyed at the end of the test."""
    made = []

    def make(name="store", **kw):
        st = open_store(tmp_path / name, **kw)
        made.append((st, tmp_path / name))
        return st

    yield make
    for st, path in made:
        st.close()
        if (path / "meta").exists() or os.path.exists(path):
            try:
                strata.destroy_store(str(path))
            except strata.StrataError:
                pass


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One embedded store per test module."""
    path = tmp_path_factory.mktemp("store") / "data"
    st = open_store(path)
    yield st
    st.close()
    strata.destroy_store(str(path))


_seq = itertools.count()


@pytest.fixture
def uid(request):
    """uid(tag): a fresh "@name" id for this test."""
    base = request.node.name

    def make(tag=""):
        return "@%s-%s-%d" % (base, tag, next(_seq))

    return make
