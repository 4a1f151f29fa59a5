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
# Tests find the venv's interpreter through tests/tools.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
venv=$top/.venv
req=$top/tests/requirements.txt
stamp=$venv/strata-requirements.txt
if cmp -s "$req" "$stamp" && "$venv/bin/python3" -c '' 2>/dev/null; then
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
