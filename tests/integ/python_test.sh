#!/usr/bin/env bash
# python_test.sh BUILD — the Python binding (issue 34 point 3,
# clovis/python/README.md):
#
#   1. a virtual environment of its own (tests/pyvenv.sh: the pinned
#      wheels of tests/requirements-py.txt, offline), `pip install
#      ./clovis/python` into it offline (STRATA_BUILD=BUILD; the build's
#      setuptools from the wheelhouse), the module linked with an rpath to
#      BUILD (it loads without LD_LIBRARY_PATH);
#   2. the pytest suite tests/python on embedded stores (every test one
#      check: ok or FAIL with its message, from pytest's JUnit XML);
#      test_readme.py in it runs every example of clovis/python/examples
#      (the README's code) on an embedded store;
#   3. a 3-server loopback cluster without etcd (`strata cluster up
#      --no-etcd`: homes not replicated, so that transactions are
#      allowed): the suite's cluster module (STRATA_TEST_CLUSTER), and
#      the examples that take a store argument (cluster:FILE) against it.
#
# Ports 4604-4699 (cl_init's base 4604, 24 slots of 4, no etcd: above
# dtx_cluster_test.sh part b's 3000-4600, below the HDF5 steps' 4700 and
# up); every wait is bounded; the servers are killed and everything
# (venv, stores, pytest's directories) removed on any exit.  Ends with
# "N passed, N failed".
set -u
CL_UP_ARGS="--no-etcd"
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" pybind 4604 24
cl_need strata strata-server libstrata.so

top=$(cd "$(dirname "$0")/../.." && pwd)
V=$T/venv
PY=$V/bin/python3
export TMPDIR=$T # the examples' stores, pip's build directories

echo "--- the binding installed into a fresh venv, offline"
if ! timeout 900 bash "$top/tests/pyvenv.sh" "$V" >"$T/venv.log" 2>&1; then
	no "venv made by tests/pyvenv.sh: the step stops here"
	tail -n 8 "$T/venv.log" | sed 's/^/     /'
	echo "$pass passed, $fail failed"
	exit 1
fi
ok "venv made by tests/pyvenv.sh (numpy, pytest, setuptools)"
STRATA_BUILD=$BD timeout 900 "$PY" -m pip install -q \
	--disable-pip-version-check --no-input --no-index \
	--find-links "$top/.venv/wheels" "$top/clovis/python" \
	>"$T/pip.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
	no "pip install ./clovis/python (offline, STRATA_BUILD=$BD): exit $rc"
	tail -n 12 "$T/pip.log" | sed 's/^/     /'
	echo "$pass passed, $fail failed"
	exit 1
fi
ok "pip install ./clovis/python (offline, STRATA_BUILD=$BD)"
so=$(cd "$T" && env -u LD_LIBRARY_PATH "$PY" -c \
	'import strata; print(strata._strata.__file__)' 2>"$T/import.err")
check "import strata without LD_LIBRARY_PATH" test -n "$so"
check "the module's runpath is BUILD ($BD)" \
	sh -c "readelf -d '$so' | grep -q 'R.*PATH.*\\[$BD\\]'"
check "nothing left in the source tree by the build" \
	test ! -e "$top/clovis/python/build" -a -z "$(ls -d "$top"/clovis/python/*.egg-info 2>/dev/null)"

# pyt NAME ARGS...: pytest ARGS (from the repository's top) with its JUnit
# XML in T; then one check per test: ok, or FAIL with the first lines of
# its message; a run that left no XML is one failure.
pyt() {
	local name=$1 line
	shift
	(cd "$top" && timeout 1800 "$PY" -m pytest -p no:cacheprovider -q \
		--basetemp="$T/pytest-$name" --junitxml="$T/$name.xml" "$@") \
		>"$T/$name.log" 2>&1
	echo "     pytest $name: $(tail -n 1 "$T/$name.log")"
	if [ ! -s "$T/$name.xml" ]; then
		no "pytest $name ran (no report)"
		tail -n 15 "$T/$name.log" | sed 's/^/     /'
		return
	fi
	while IFS= read -r line; do
		case $line in
		P*) ok "${line#P }" ;;
		F*) no "${line#F }" ;;
		*) echo "     $line" ;;
		esac
	done < <("$PY" - "$T/$name.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
n = 0
for c in cases:
    n += 1
    name = "%s::%s" % (c.get("classname", "").rsplit(".", 1)[-1], c.get("name"))
    bad = [e for e in c if e.tag in ("failure", "error", "skipped")]
    if not bad:
        print("P " + name)
        continue
    e = bad[0]
    print("F %s (%s)" % (name, e.tag))
    text = (e.get("message") or "") + "\n" + (e.text or "")
    for l in [l for l in text.splitlines() if l.strip()][:6]:
        print("  " + l[:200])
if n == 0:
    print("F no test ran")
EOF
)
}

echo "--- pytest tests/python on embedded stores"
pyt embedded tests/python --ignore=tests/python/test_cluster.py

# examples ARG: every example that takes a store argument (those of
# _common.example_store()), with ARG
examples() {
	local f
	for f in "$top"/clovis/python/examples/[!_]*.py; do
		grep -q "^from _common import" "$f" || continue
		(cd "$(dirname "$f")" && timeout 300 "$PY" "$f" "$@") \
			>"$T/ex.log" 2>&1
		if tail -n 1 "$T/ex.log" | grep -q ": ok$"; then
			ok "example $(basename "$f") $1"
		else
			no "example $(basename "$f") $1"
			tail -n 8 "$T/ex.log" | sed 's/^/     /'
		fi
	done
}

echo "--- a 3-server cluster without etcd"
cl_up
echo "--- pytest tests/python/test_cluster.py against it"
STRATA_TEST_CLUSTER=$D/cluster.yaml pyt cluster tests/python/test_cluster.py
echo "--- the examples against it"
examples "cluster:$D/cluster.yaml"

# a clean stop (SIGTERM, bounded by cluster down itself): each server
# removes its metrics region /dev/shm/strata-addb.PID, which the SIGKILL
# of cl_cleanup would leave to the next Strata process's sweep
pids=$(cat "$D"/s*.pid 2>/dev/null)
timeout 120 "$S" cluster down --dir "$D" >"$T/down" 2>&1
check "servers stopped cleanly (strata cluster down)" \
	sh -c "for p in $(echo $pids); do ! kill -0 \$p 2>/dev/null || exit 1; \
		! test -e /dev/shm/strata-addb.\$p || exit 1; done"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
