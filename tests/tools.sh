# tools.sh — the outside programs the test steps use, chosen in one place
# (sourced by the S3 gateway's test steps).
#
#   STRATA_PY     Python with the pinned packages of tests/requirements.txt:
#                 the virtual environment .venv that `make deps` makes
#                 (scripts/venv.sh)
#   STRATA_AWS    Debian's aws cli, /usr/bin/aws (package awscli)
#   STRATA_S3CMD  Debian's s3cmd, /usr/bin/s3cmd
#
# Each may be set in the environment to try another; by default the tests
# run what a user of Debian 12 has, never whatever comes first on PATH (a
# newer aws cli installed by hand hid an incompatibility of the gateway
# with Debian's).  tools_check NAME... prints, for each named tool that
# cannot run, a line "NAME: PATH missing (make deps installs it)" and
# returns 1 when any is missing.
tools_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STRATA_PY=${STRATA_PY:-$tools_top/.venv/bin/python3}
STRATA_AWS=${STRATA_AWS:-/usr/bin/aws}
STRATA_S3CMD=${STRATA_S3CMD:-/usr/bin/s3cmd}

tools_check() {
	local t bad=0
	for t in "$@"; do
		case "$t" in
		py)
			"$STRATA_PY" -c 'import boto3, awscrt' 2>/dev/null && continue
			echo "python: $STRATA_PY cannot import boto3 and awscrt (make deps makes .venv)" ;;
		aws)
			[ -x "$STRATA_AWS" ] && continue
			echo "aws: $STRATA_AWS missing (make deps installs awscli)" ;;
		s3cmd)
			[ -x "$STRATA_S3CMD" ] && continue
			echo "s3cmd: $STRATA_S3CMD missing (make deps installs s3cmd)" ;;
		esac
		bad=1
	done
	return $bad
}
