"""Build of strata._strata, the binding's C extension, over libstrata.so.

STRATA_BUILD names the build directory holding libstrata.so and
include/strata/clovis.h (default: the repository's build/, two levels
up).  The sources are src/*.c (src/_strata.c says how they fit together);
they include their header src/pys.h by its path in the repository.  The module is linked with an rpath to that directory, so it loads
without LD_LIBRARY_PATH.  Every build happens in a temporary directory
removed at exit (nothing is left in the source tree, and a build for
another STRATA_BUILD never reuses an object linked for the last one).
"""
import atexit
import os
import shutil
import tempfile

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))  # the repository
BUILD = os.path.abspath(os.environ.get(
    "STRATA_BUILD", os.path.join(HERE, "..", "..", "build")))
HEADER = os.path.join(BUILD, "include", "strata", "clovis.h")
LIB = os.path.join(BUILD, "libstrata.so")

for need in (HEADER, LIB):
    if not os.path.exists(need):
        raise SystemExit("strata: %s is missing: set STRATA_BUILD to a "
                         "Strata build directory (make BUILD=DIR all)" % need)

TMP = tempfile.mkdtemp(prefix="strata-pybuild-")
atexit.register(shutil.rmtree, TMP, True)

setup(
    ext_modules=[Extension(
        "strata._strata",
        sources=["src/_strata.c", "src/store.c", "src/xop.c",
                 "src/entity.c", "src/io.c", "src/dtx.c"],
        depends=[HEADER, "src/pys.h"],
        # <strata/clovis.h> from BUILD; the files' own header by its path
        # in the repository, as every include of the tree
        include_dirs=[os.path.join(BUILD, "include"), TOP],
        library_dirs=[BUILD],
        libraries=["strata"],
        runtime_library_dirs=[BUILD],
        # only PyInit__strata is exported (PyMODINIT_FUNC); the files'
        # shared calls stay inside the module
        extra_compile_args=["-std=gnu11", "-fvisibility=hidden",
                            "-Wall", "-Wextra", "-Werror",
                            "-Wno-missing-field-initializers",
                            "-Wno-cast-function-type"],
        extra_link_args=["-pthread"],
    )],
    options={
        "build": {"build_base": os.path.join(TMP, "build")},
        "build_ext": {"force": True},
        "egg_info": {"egg_base": TMP},
        "bdist_wheel": {"bdist_dir": os.path.join(TMP, "bdist")},
    },
)
