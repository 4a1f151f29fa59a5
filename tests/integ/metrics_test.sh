#!/usr/bin/env bash
# metrics_test.sh BUILD — the metrics of every process kind (issue 30):
# tests/integ/metrics_test.py with the Python of `make deps`
# (tests/tools.sh: prometheus_client's parser) and Debian's promtool.
# Ports: a one-server cluster on 6610-6613 (tests/steps.list), the
# endpoints on ports the kernel picks.  Ends with "N passed, N failed".
set -u
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tools.sh"
if ! "$STRATA_PY" -c 'import prometheus_client' 2>/dev/null; then
	echo "FAIL - python: $STRATA_PY cannot import prometheus_client (make deps makes .venv)"
	echo "0 passed, 1 failed"
	exit 1
fi
exec "$STRATA_PY" "$here/metrics_test.py" "$B"
