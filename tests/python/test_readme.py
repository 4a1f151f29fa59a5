"""clovis/python/README.md's examples run as shown: every Python block of
the README is a verbatim part of one of clovis/python/examples/*.py, and
every example runs here to its last line ("NAME: ok") on an embedded
store of its own (python_test.sh runs those that take a store argument
against a cluster too)."""
import glob
import os
import re
import subprocess
import sys

import pytest

PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                  "clovis", "python")
EXAMPLES = sorted(glob.glob(os.path.join(PY, "examples", "[!_]*.py")))


def test_readme_blocks_are_from_examples():
    readme = open(os.path.join(PY, "README.md"), encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    examples = [open(f, encoding="utf-8").read() for f in EXAMPLES]
    assert len(blocks) >= 6 and len(examples) >= 5
    for b in blocks:
        assert any(b in e for e in examples), "not in an example:\n" + b
    whole = [f for f in EXAMPLES if open(f, encoding="utf-8").read() in blocks]
    assert [os.path.basename(f) for f in whole] == ["quickstart.py"]


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_runs(path, tmp_path):
    p = subprocess.run([sys.executable, path], cwd=os.path.dirname(path),
                       env=dict(os.environ, TMPDIR=str(tmp_path)),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300)
    name = os.path.basename(path)[:-3]
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.splitlines()[-1] == name + ": ok", p.stdout[-2000:]
    assert os.listdir(tmp_path) == []  # the example removed its store
