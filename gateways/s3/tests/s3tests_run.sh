#!/usr/bin/env bash
# s3tests_run.sh BUILD S3TESTS_DIR [PYTEST_ARGS...] — run ceph/s3-tests
# against a fresh gateway (`make s3-tests S3TESTS=DIR`).
#
# S3TESTS_DIR is a checkout of https://github.com/ceph/s3-tests, which the
# project does not contain (not ours; CI has no network).  The counts in
# gateways/s3/README.md are for commit $PIN below; a git checkout at
# another commit is refused unless S3TESTS_ANY_COMMIT=1.
#
# 1. a Python venv BUILD/s3tests-venv from s3tests_requirements.txt
#    (pinned; made again when that file changes);
# 2. three users by `strata s3 user add` (main, alt, tenant: the suite's
#    configure() wants all three; the gateway has no tenants, so "tenant"
#    is a plain third user) and an s3tests.conf naming them (user_id and
#    display_name are the user name, as the gateway reports owners; the
#    [iam*] sections get keys no user has: IAM is not served);
# 3. strata-s3 on a fresh embedded store in a temporary directory, on
#    127.0.0.1 with a free port (port 0, port file); its 13 devices of
#    S3TESTS_DEV_SIZE each (default 512M) are written out whole when the
#    store is made, so the start is waited for up to 300 s;
# 4. pytest on test_s3.py and test_headers.py with the selection $SEL
#    below, 60 s per test (pytest-timeout), the whole run bounded by
#    S3TESTS_TIMEOUT (s, default 5400);
# 5. the gateway stopped (SIGTERM, then SIGKILL after 30 s), the store
#    destroyed; s3tests_report.py prints passed/failed per feature group,
#    the basic set, and the totals as the last line "N passed, N failed".
#
# Output kept in BUILD/s3tests-out/: junit.xml, pytest.log, counts.txt,
# failures.txt (group, test, first line of the reason), gw.err,
# access.log, s3tests.conf, commit.  Extra arguments go to pytest (for
# example -k test_bucket_list or a test id).  Exit status 0 when the run
# completed (whatever the counts), 1 when it could not run.
set -u
PIN=8f0ae7b404a3a2fcf7038bf1e6bf29544fe9b6a3
# Markers not run: features the gateway does not claim, and fails_on_aws
# (tests of RGW behaviour that AWS S3 itself does not have, such as
# lifecycle days counted as seconds).  Everything else runs, fails_on_rgw
# included (AWS behaviour RGW lacks).
SEL="not fails_on_aws"
for m in bucket_logging bucket_logging_cleanup fails_without_logging_rollover \
	encryption sse_s3 bucket_encryption lifecycle_transition \
	cloud_transition cloud_restore target_by_bucket storage_class \
	object_lock appendobject s3select s3website s3website_routing_rules \
	s3website_redirect_location sns test_of_sts webidentity_test abac_test \
	iam_account iam_cross_account iam_role iam_tenant iam_user \
	user_policy role_policy group_policy session_policy group auth_aws2; do
	SEL="$SEL and not $m"
done

B=${1:-}
D=${2:-}
if [ -z "$B" ] || [ -z "$D" ]; then
	echo "usage: s3tests_run.sh BUILD S3TESTS_DIR [PYTEST_ARGS...] (make s3-tests S3TESTS=DIR)" >&2
	exit 1
fi
shift 2
B=$(cd "$B" && pwd) || exit 1
HERE=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$D/s3tests/functional/test_s3.py" ]; then
	echo "s3tests_run.sh: $D is not a checkout of ceph/s3-tests" \
		"(no s3tests/functional/test_s3.py); get it with" >&2
	echo "  git clone https://github.com/ceph/s3-tests DIR &&" \
		"git -C DIR checkout $PIN" >&2
	exit 1
fi
D=$(cd "$D" && pwd)
OUT=$B/s3tests-out
mkdir -p "$OUT"
commit=$(git -C "$D" rev-parse HEAD 2>/dev/null || echo unknown)
echo "ceph/s3-tests at $D, commit $commit (pinned: $PIN)"
if [ "$commit" != "$PIN" ] && [ "$commit" != unknown ] &&
	[ "${S3TESTS_ANY_COMMIT:-0}" != 1 ]; then
	echo "s3tests_run.sh: $D is at $commit, not at the pinned $PIN:" \
		"git -C $D checkout $PIN (or S3TESTS_ANY_COMMIT=1)" >&2
	exit 1
fi
echo "$commit" >"$OUT/commit"

# ---- 1. the venv
V=$B/s3tests-venv
REQ=$HERE/s3tests_requirements.txt
if ! cmp -s "$REQ" "$V/requirements.txt" 2>/dev/null; then
	echo "making $V (pip, pinned packages)"
	rm -rf "$V"
	python3 -m venv "$V" &&
		"$V/bin/pip" install -q --disable-pip-version-check -r "$REQ" &&
		cp "$REQ" "$V/requirements.txt" ||
		{ echo "s3tests_run.sh: could not make the venv $V" >&2; exit 1; }
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/strata-s3tests.XXXXXX")
gw_pid=
cleanup() {
	if [ -n "$gw_pid" ]; then
		kill -TERM "$gw_pid" 2>/dev/null
		for _ in $(seq 1 300); do
			kill -0 "$gw_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$gw_pid" 2>/dev/null
		wait "$gw_pid" 2>/dev/null
	fi
	[ -f "$T/gw.err" ] && cp "$T/gw.err" "$OUT/gw.err"
	[ -f "$T/access.log" ] && cp "$T/access.log" "$OUT/access.log"
	[ -d "$T/data" ] && "$B/strata" --data "$T/data" -q destroy --yes 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# ---- 2. users and configuration
for u in main alt tenant; do
	"$B/strata" s3 user add "s3t-$u" "$T/creds" >/dev/null 2>"$T/user.err" ||
		{ echo "s3tests_run.sh: strata s3 user add: $(cat "$T/user.err")" >&2; exit 1; }
done
key() { awk -v n="s3t-$1" '$1 == n { print $'"$2"' }' "$T/creds"; }

# ---- 3. the gateway
"$B/strata-s3" --data "$T/data" --dev-size "${S3TESTS_DEV_SIZE:-512M}" \
	--port 0 --port-file "$T/port" --creds "$T/creds" \
	--access-log "$T/access.log" >"$T/gw.out" 2>"$T/gw.err" &
gw_pid=$!
for _ in $(seq 1 3000); do
	[ -s "$T/port" ] && break
	kill -0 "$gw_pid" 2>/dev/null || break
	sleep 0.1
done
if [ ! -s "$T/port" ]; then
	echo "s3tests_run.sh: the gateway did not start: $(tail -3 "$T/gw.err")" >&2
	exit 1
fi
PORT=$(cat "$T/port")
echo "gateway $B/strata-s3 on 127.0.0.1:$PORT, store $T/data"

user_sec() { # SECTION USER
	cat <<EOF
[$1]
display_name = s3t-$2
user_id = s3t-$2
email = s3t-$2@example.com
access_key = $(key "$2" 2)
secret_key = $(key "$2" 3)
EOF
}
{
	cat <<EOF
[DEFAULT]
host = 127.0.0.1
port = $PORT
is_secure = False
ssl_verify = False

[fixtures]
bucket prefix = s3t-{random}-

EOF
	user_sec "s3 main" main
	echo "api_name = default"
	echo
	user_sec "s3 alt" alt
	echo
	user_sec "s3 tenant" tenant
	echo "tenant = testx"
	for s in iam "iam root" "iam alt root"; do
		printf '\n[%s]\nemail = none@example.com\nuser_id = none\n' "$s"
		printf 'display_name = none\naccess_key = NOSUCHKEYNOSUCHKEY00\n'
		printf 'secret_key = nosuchsecretnosuchsecretnosuchsecret0000\n'
	done
} >"$T/s3tests.conf"
cp "$T/s3tests.conf" "$OUT/s3tests.conf"

# ---- 4. the suite
echo "pytest -m '$SEL'"
(cd "$D" && PYTHONDONTWRITEBYTECODE=1 S3TEST_CONF=$T/s3tests.conf \
	timeout "${S3TESTS_TIMEOUT:-5400}" "$V/bin/python" -m pytest \
	-p no:cacheprovider --timeout 60 -q -rN --junitxml "$OUT/junit.xml" \
	-m "$SEL" s3tests/functional/test_s3.py \
	s3tests/functional/test_headers.py "$@") >"$OUT/pytest.log" 2>&1
rc=$?
tail -1 "$OUT/pytest.log"
[ "$rc" -eq 124 ] && echo "s3tests_run.sh: the run was stopped after ${S3TESTS_TIMEOUT:-5400} s"

# ---- 5. counts
if [ ! -s "$OUT/junit.xml" ]; then
	echo "s3tests_run.sh: pytest wrote no results: $(tail -5 "$OUT/pytest.log")" >&2
	exit 1
fi
"$V/bin/python" "$HERE/s3tests_report.py" "$OUT/junit.xml" "$D" "$OUT" || exit 1
echo "failures listed in $OUT/failures.txt"
