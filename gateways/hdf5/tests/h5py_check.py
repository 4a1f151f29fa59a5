#!/usr/bin/env python3
"""h5py_check.py [--driver PLUGIN_DIR CONFIG] CMD URL — the h5py side of
tests/integ/hdf5_h5py_test.sh: unmodified h5py (PyPI 3.16.0, bundled
libhdf5 2.0.0) on the Strata driver plugin, which the environment selects
(HDF5_DRIVER=strata, HDF5_PLUGIN_PATH=BUILD/hdf5-plugin,
HDF5_DRIVER_CONFIG=data=DIR or cluster=FILE).  The same file through
HDF5's default driver when URL is a local path.

With --driver, no environment: every h5py.File() names the driver,
h5py.File(URL, mode, driver="strata", config=CONFIG), the plugin directory
added with h5py.h5pl.prepend(PLUGIN_DIR) and the driver registered with
h5py.register_driver() over libhdf5's H5Pset_driver_by_name() (called
through ctypes in h5py's own bundled libhdf5; docs/hdf5.md).

  write URL     create: groups, attributes, datasets of ints, floats, a
                compound, fixed and variable strings; contiguous, chunked,
                chunked+gzip, extendible
  extend URL    reopen "r+": extend two datasets, add a dataset and an
                attribute
  verify URL [extended]
                reopen "r": every value checked
  crash URL     write 4 MiB, f.flush(), print "flushed", then write 4 MiB
                more (and change an attribute) without a flush, print
                "unflushed", and wait to be killed (SIGKILL)
  noflush URL   the same without the flush: prints "written" instead of
                "flushed"
  after URL     the flushed part of "crash" is there, byte for byte
  fails URL MODE
                h5py.File(URL, MODE) must raise OSError: prints "failed:
                MESSAGE" (exit 0), or "opened" (exit 1)
  driver        print the HDF5 library version h5py runs on

Exit 0 when everything checked holds; 1 with the failure printed.
"""
import ctypes
import glob
import os
import sys
import time

import h5py
import numpy as np

NR, NC, NF, NF2 = 100, 50, 1000, 2500
NBIG, NBIG2 = 1 << 20, (1 << 20) + (1 << 19)
CT = np.dtype([("id", "<i4"), ("x", "<f8"), ("name", "S16")])
KW = {}  # h5py.File() keywords: the driver's with --driver


def use_driver(plugin_dir, config):
    """Register "strata" with h5py and make every File() name it."""
    libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__),
                                  os.pardir, "h5py.libs", "libhdf5-*.so*"))
    if len(libs) != 1:
        check("one bundled libhdf5 beside h5py (%s)" % libs, False)
    # the library h5py has loaded already: dlopen returns its handle
    lib = ctypes.CDLL(libs[0])
    lib.H5Pset_driver_by_name.argtypes = [ctypes.c_int64, ctypes.c_char_p,
                                          ctypes.c_char_p]
    lib.H5Pset_driver_by_name.restype = ctypes.c_int

    def set_fapl(plist, config=""):
        if lib.H5Pset_driver_by_name(plist.id, b"strata",
                                     config.encode()) < 0:
            raise OSError("H5Pset_driver_by_name(strata) failed")

    h5py.h5pl.prepend(plugin_dir.encode())
    h5py.register_driver("strata", set_fapl)
    KW.update(driver="strata", config=config)


def h5file(url, mode):
    return h5py.File(url, mode, **KW)


def fvals(a, b):
    return np.arange(a, b, dtype="f8") * 0.5 - 3.25


def bvals(a, b):
    return (np.arange(a, b, dtype="u8") * 2654435761 % 1000003).astype("i8")


def recs():
    r = np.zeros(20, dtype=CT)
    for i in range(20):
        r[i] = (i * 7, i / 3.0, b"rec-%03d" % i)
    return r


def write(url):
    with h5file(url, "w") as f:
        d = f.create_dataset("ints", data=np.arange(NR * NC, dtype="<i4")
                             .reshape(NR, NC))
        d.attrs["units"] = np.array([1, 2, 3], dtype="<i4")
        f.create_dataset("floats", data=fvals(0, NF), chunks=(64,),
                         maxshape=(None,))
        f.create_dataset("big", data=bvals(0, NBIG), chunks=(32768,),
                         maxshape=(None,))
        g1 = f.create_group("g1")
        g2 = g1.create_group("g2")
        g1.attrs["scale"] = 2.5
        g1.create_dataset("zipped", data=bvals(0, 100000), chunks=(10000,),
                          compression="gzip", compression_opts=6)
        g2.create_dataset("compound", data=recs(), chunks=(8,))
        f.create_dataset("fixed_strings",
                         data=np.array([b"alpha", b"beta", b"gamma",
                                        b"delta"], dtype="S10"))
        g1.create_dataset("vlen_strings",
                          data=["a", "variable length string", "z"],
                          dtype=h5py.string_dtype())
        f.attrs["title"] = "variable length string"


def extend(url):
    with h5file(url, "r+") as f:
        f["floats"].resize((NF2,))
        f["floats"][NF:] = fvals(NF, NF2)
        f["big"].resize((NBIG2,))
        f["big"][NBIG:] = bvals(NBIG, NBIG2)
        f["g1/g2"].create_dataset("late", data=np.array([5, 4, 3, 2, 1],
                                                        dtype="<i4"))
        f["ints"].attrs["extended"] = 5


def check(what, ok):
    if not ok:
        print("h5py_check: FAIL", what)
        sys.exit(1)


def verify(url, extended):
    nf, nb = (NF2, NBIG2) if extended else (NF, NBIG)
    with h5file(url, "r") as f:
        check("ints", np.array_equal(f["ints"][:], np.arange(NR * NC)
                                     .reshape(NR, NC)))
        check("ints attr", list(f["ints"].attrs["units"]) == [1, 2, 3])
        check("floats", np.array_equal(f["floats"][:], fvals(0, nf)))
        check("big", np.array_equal(f["big"][:], bvals(0, nb)))
        check("zipped", np.array_equal(f["g1/zipped"][:], bvals(0, 100000)))
        check("compound", np.array_equal(f["g1/g2/compound"][:], recs()))
        check("fixed", f["fixed_strings"][2] == b"gamma")
        check("vlen", f["g1/vlen_strings"][1].decode() ==
              "variable length string")
        check("title", f.attrs["title"] == "variable length string")
        check("scale", f["g1"].attrs["scale"] == 2.5)
        if extended:
            check("late", list(f["g1/g2/late"][:]) == [5, 4, 3, 2, 1])
            check("extended attr", f["ints"].attrs["extended"] == 5)
    print("verified", url, "(extended)" if extended else "")


def crash(url, flush=True):
    f = h5file(url, "w")
    d = f.create_dataset("data", shape=(1 << 19,), dtype="i8",
                         chunks=(1 << 15,), maxshape=(None,))
    d[:] = bvals(0, 1 << 19)
    f.attrs["state"] = "flushed"
    if flush:
        f.flush()
    print("flushed" if flush else "written", flush=True)
    # more writes, never flushed: the file must reopen as flushed
    d.resize((1 << 20,))
    d[1 << 19:] = bvals(1 << 19, 1 << 20)
    f.attrs["state"] = "unflushed"
    print("unflushed", flush=True)
    time.sleep(600)


def after(url):
    with h5file(url, "r") as f:
        d = f["data"]
        check("flushed data", np.array_equal(d[:1 << 19], bvals(0, 1 << 19)))
        check("flushed attribute", f.attrs["state"] in ("flushed",
                                                        "unflushed"))
        print("after crash: %d elements, state %s" % (d.shape[0],
                                                      f.attrs["state"]))


def fails(url, mode):
    """An open that must fail with OSError (never crash the process)."""
    try:
        h5file(url, mode).close()
    except OSError as e:
        print("failed:", e)
        return
    print("opened", url)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    if len(args) >= 3 and args[0] == "--driver":
        use_driver(args[1], args[2])
        args = args[3:]
    cmd = args[0] if args else ""
    if cmd == "driver":
        print("libhdf5", h5py.version.hdf5_version)
        return 0
    if len(args) < 2:
        print(__doc__)
        return 2
    url = args[1]
    if cmd == "write":
        write(url)
    elif cmd == "extend":
        extend(url)
    elif cmd == "verify":
        verify(url, len(args) > 2)
    elif cmd == "crash":
        crash(url)
    elif cmd == "noflush":
        crash(url, False)
    elif cmd == "after":
        after(url)
    elif cmd == "fails" and len(args) == 3:
        fails(url, args[2])
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
