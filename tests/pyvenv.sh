#!/usr/bin/env bash
# pyvenv.sh DIR [PACKAGE...] — a fresh Python virtual environment in DIR
# with the pinned packages of tests/requirements-py.txt (all of them, or
# only the PACKAGEs named, with the dependencies pip resolves among the
# pins), installed offline from the wheelhouse .venv/wheels that `make
# deps` fills (scripts/venv.sh).  Used by the steps that must run in a
# virtualenv of their own (issue 34: tests/integ/python_test.sh,
# tests/integ/hdf5_h5py_test.sh).  Exit status 0 when DIR/bin/python3
# runs with them; else a message on stderr.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: pyvenv.sh DIR [PACKAGE...]}
shift
wheels=$top/.venv/wheels
req=$top/tests/requirements-py.txt
if ! [ -f "$wheels/strata-requirements-py.txt" ]; then
	echo "pyvenv: no wheelhouse $wheels: run make deps" >&2
	exit 1
fi
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
"$py" -m venv "$dir"
pip=("$dir/bin/python3" -m pip install -q --disable-pip-version-check
     --no-input --no-index --find-links "$wheels")
if [ $# -eq 0 ]; then
	"${pip[@]}" -r "$req"
else
	"${pip[@]}" -c "$req" "$@"
fi
