#!/usr/bin/env bash
# venv.sh — the Python virtual environment of the test steps (make deps).
#
# Makes .venv at the top of the tree with Debian's python3 (/usr/bin/python3
# when present, else the first python3 on PATH) and installs the pinned
# packages of tests/requirements.txt into it.  Idempotent: prints nothing
# and changes nothing when .venv has exactly that list installed (a copy of
# the list is kept in .venv/strata-requirements.txt once the install
# succeeded and boto3 and awscrt import); a changed list installs again, a
# .venv whose interpreter no longer runs is made anew.
# Then the wheels of tests/requirements-py.txt into .venv/wheels (the
# wheelhouse the issue-34 steps make their own venvs from, offline),
# likewise only when that list changed.
# Tests find the venv's interpreter through tests/tools.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
venv=$top/.venv
req=$top/tests/requirements.txt
stamp=$venv/strata-requirements.txt
reqpy=$top/tests/requirements-py.txt
wheels=$venv/wheels
wstamp=$wheels/strata-requirements-py.txt
wheelhouse() {
	cmp -s "$reqpy" "$wstamp" && return 0
	echo "deps: wheels of tests/requirements-py.txt into $wheels"
	rm -rf "$wheels"
	mkdir -p "$wheels"
	"$venv/bin/python3" -m pip download -q --disable-pip-version-check \
		--no-input --only-binary=:all: --no-deps -d "$wheels" \
		-r "$reqpy"
	cp "$reqpy" "$wstamp"
}
if cmp -s "$req" "$stamp" && "$venv/bin/python3" -c '' 2>/dev/null; then
	wheelhouse
	exit 0
fi
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
echo "deps: Python virtual environment $venv (tests/requirements.txt)"
if ! [ -x "$venv/bin/python3" ] || ! "$venv/bin/python3" -c '' 2>/dev/null; then
	rm -rf "$venv"
	"$py" -m venv "$venv"
fi
rm -f "$stamp"
"$venv/bin/python3" -m pip install -q --disable-pip-version-check \
	--no-input -r "$req"
"$venv/bin/python3" -c 'import boto3, awscrt'
cp "$req" "$stamp"
wheelhouse
