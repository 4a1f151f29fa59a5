#!/usr/bin/env bash
# s3_test.sh BUILD — the S3 gateway's test step (tests/steps.list).
#
# Starts BUILD/strata-s3 on a fresh embedded store in a temporary directory,
# listening on 127.0.0.1 with a free port it picks itself (port 0, written
# to a port file), with two users in a credentials file made by
# `strata s3 user add`.  Then runs, each asserting:
#   1. s3_conformance.py — the boto3 conformance suite;
#      s3_subres.py      — sub-resources: 501 for what is not implemented,
#                          tagging, ACLs, anonymous access, policies;
#      s3_bucketacl.py   — ?acl documents as s3-tests compares them,
#                          unknown grantees, re-created buckets, bucket
#                          location, expected owner, missing buckets;
#   2. s3_badinput.py    — malformed and hostile requests over raw HTTP
#                          (signed aws-chunked bodies and trailers too);
#      s3_presign.py     — presigned URLs as boto3, aws cli and s3cmd make
#                          them (SigV2 and SigV4), SigV2 headers, refusals,
#                          anonymous requests;
#      s3_errbody.py     — what libmicrohttpd refuses itself (header
#                          section too large, malformed chunked bodies)
#                          answered in S3 XML;
#      s3_tls.py         — a second gateway with TLS (a self-signed
#                          certificate made here): boto3 over HTTPS, whose
#                          bodies carry their checksums as trailers;
#   3. CLI smoke tests   — Debian's aws cli and s3cmd (/usr/bin/aws,
#                          /usr/bin/s3cmd: tests/tools.sh), a failure
#                          when missing;
#      s3_clients.py     — aws cli, s3cmd and boto3 each through
#                          mb/cp/ls/sync/presign/info/rb;
#   4. s3_etag.py        — the gateway restarted with --etag crc64: ETags
#                          from the CRC64-NVMe, Content-MD5 still checked,
#                          multipart unchanged;
#      s3_bconf.py       — restarted with a lifecycle pass every second
#                          and a 2 s "day": bucket versioning, CORS
#                          (preflight too) and lifecycle (expiration);
#   5. meta-nvram        — refused with --cluster, noted on an existing
#                          store, a new store (config key) with its
#                          metadata in /dev/shm: PUT/GET, destroyed whole;
#   6. the kill test     — SIGKILL of the gateway during uploads, restart,
#                          nothing partial visible, no space leaked; on a
#                          default store, then on a store with its
#                          metadata on NVRAM (--meta-nvram, destroyed).
#   7. s3_fault.py       — device writes failing: PUTs of 1 and 3 MiB get
#                          500, nothing visible, no space leaked; device
#                          reads failing: a GET of 1 MiB gets a whole 500.
#   8. s3_conn.py        — its own gateway: 10,000 idle connections held
#                          while a signed GET is served at once, the
#                          per-IP limit, the idle timeout closing them.
# Python is the venv of `make deps` (tests/tools.sh); when it cannot import
# boto3 the step fails at once (one failure, nothing else run).
# Ends with "N passed, N failed".
set -u
B=${1:-build}
B=$(cd "$B" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
GW=$B/strata-s3
S=$B/strata
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-s3-test.XXXXXX")
pass=0
fail=0
gw_pid=

. "$HERE/../../../tests/tools.sh"
if ! tools_check py >"$T/tools.out"; then
	echo "FAIL s3 gateway tests cannot run: $(cat "$T/tools.out")"
	echo "0 passed, 1 failed"
	rm -rf "$T"
	exit 1
fi

ok() { pass=$((pass + 1)); echo "ok   $*"; }
no() { fail=$((fail + 1)); echo "FAIL $*"; }

cleanup() {
	[ -n "$gw_pid" ] && kill -9 "$gw_pid" 2>/dev/null
	[ -d "$T/data" ] && "$S" --data "$T/data" -q destroy --yes 2>/dev/null
	[ -d "$T/nv" ] && "$S" --data "$T/nv" -q destroy --yes 2>/dev/null
	[ -d "$T/kill-nv" ] && "$S" --data "$T/kill-nv" -q destroy --yes 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# Wait (60 s at most) until gateway PID has written its port to FILE:
# 0, or 1 when it exits or the time runs out first.
port_wait() {
	local i
	for i in $(seq 1 600); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	[ -s "$1" ]
}

# Start the gateway on $T/data; sets gw_pid and EP.  Returns non-zero if it
# does not announce its port within 60 s.
gw_start() {
	rm -f "$T/port"
	"$GW" --data "$T/data" --dev-size 256M --port 0 --port-file "$T/port" \
		--creds "$T/creds" --access-log "$T/access.log" \
		--stats-file "$T/stats.json" --timeout 5 "$@" \
		>>"$T/gw.out" 2>>"$T/gw.err" &
	gw_pid=$!
	local i
	port_wait "$T/port" "$gw_pid" || return 1
	EP=http://127.0.0.1:$(cat "$T/port")
	export EP
}

gw_stop() {
	kill -TERM "$gw_pid" 2>/dev/null
	local i
	for i in $(seq 1 300); do
		kill -0 "$gw_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$gw_pid" 2>/dev/null
	wait "$gw_pid" 2>/dev/null
	gw_pid=
}

# Run a python part; add its "N passed, N failed" line to the totals.
part() {
	local name=$1 line p f t0=$SECONDS
	shift
	timeout 600 "$STRATA_PY" "$@" >"$T/$name.log" 2>&1
	grep -E '^(ok|FAIL|SKIP) ' "$T/$name.log"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/$name.log" | tail -1)
	echo "---- part $name: $((SECONDS - t0)) s: ${line:-no result line}"
	if [ -z "$line" ]; then
		no "$name: no result line"
		tail -20 "$T/$name.log"
		return
	fi
	p=${line%% passed*}
	f=${line#*passed, }
	f=${f%% failed*}
	pass=$((pass + p))
	fail=$((fail + f))
	[ "$f" -eq 0 ] || grep -A6 '^FAIL' "$T/$name.log" | head -60
}

# ---- users through the CLI
"$S" s3 user add alice "$T/creds" >"$T/u1" 2>&1 &&
	"$S" s3 user add bob "$T/creds" >"$T/u2" 2>&1 &&
	[ "$(wc -l <"$T/creds")" -eq 2 ] && ok "strata s3 user add (2 users)" ||
	{ no "strata s3 user add: $(cat "$T/u1" "$T/u2")"; exit 1; }

gw_start || { no "gateway start: $(cat "$T/gw.err")"; echo "$pass passed, $fail failed"; exit 1; }
ok "gateway listens on $EP"

part conformance "$HERE/s3_conformance.py" "$EP" "$T/creds"
part badinput "$HERE/s3_badinput.py" "$EP" "$T/creds" "$T/access.log"
part presign "$HERE/s3_presign.py" "$EP" "$T/creds"
part errbody "$HERE/s3_errbody.py" "$EP" "$T/creds" "$T/access.log"
part subres "$HERE/s3_subres.py" "$EP" "$T/creds"
part bucketacl "$HERE/s3_bucketacl.py" "$EP" "$T/creds"

# ---- TLS: a second gateway on its own store with a self-signed
# certificate for 127.0.0.1; boto3 over HTTPS (its checksums as trailers)
if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$T/tls.key" \
	-out "$T/tls.crt" >"$T/tls.out" 2>&1; then
	"$GW" --data "$T/tls-data" --dev-size 128M --port 0 \
		--port-file "$T/tls-port" --creds "$T/creds" --timeout 5 \
		--tls-cert "$T/tls.crt" --tls-key "$T/tls.key" \
		>>"$T/tls-gw.out" 2>>"$T/tls-gw.err" &
	tls_pid=$!
	if port_wait "$T/tls-port" "$tls_pid"; then
		ok "TLS gateway listens on https://127.0.0.1:$(cat "$T/tls-port")"
		part tls "$HERE/s3_tls.py" "https://127.0.0.1:$(cat "$T/tls-port")" \
			"$T/creds" "$T/tls.crt"
	else
		no "TLS gateway start: $(tail -3 "$T/tls-gw.err")"
	fi
	kill -TERM "$tls_pid" 2>/dev/null
	wait "$tls_pid" 2>/dev/null
	"$S" --data "$T/tls-data" -q destroy --yes 2>/dev/null
else
	no "openssl could not make a test certificate: $(tail -3 "$T/tls.out")"
fi

# ---- Debian's aws cli and s3cmd (tests/tools.sh; a failure if absent)
AK=$(awk 'NR==1{print $2}' "$T/creds")
SK=$(awk 'NR==1{print $3}' "$T/creds")
head -c 3000000 /dev/urandom >"$T/f.bin"
if tools_check aws >"$T/tools.out"; then
	export AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_DEFAULT_REGION=us-east-1
	A="$STRATA_AWS --endpoint-url $EP"
	$A s3 mb s3://cli-aws >/dev/null 2>"$T/aws.err" && ok "aws s3 mb" || no "aws s3 mb: $(head -c 300 "$T/aws.err")"
	$A s3 cp "$T/f.bin" s3://cli-aws/dir/f.bin >/dev/null 2>"$T/aws.err" && ok "aws s3 cp up" || no "aws s3 cp up: $(head -c 300 "$T/aws.err")"
	$A s3 ls s3://cli-aws/dir/ 2>"$T/aws.err" | grep -q "3000000 f.bin" && ok "aws s3 ls" || no "aws s3 ls: $(head -c 300 "$T/aws.err")"
	$A s3 cp s3://cli-aws/dir/f.bin "$T/f.aws" >/dev/null 2>"$T/aws.err" && cmp -s "$T/f.bin" "$T/f.aws" &&
		ok "aws s3 cp down (cmp)" || no "aws s3 cp down: $(head -c 300 "$T/aws.err")"
	# a copy above the multipart threshold: aws cli copies by UploadPartCopy
	printf '[default]\ns3 =\n  multipart_threshold = 1MB\n  multipart_chunksize = 5MB\n' >"$T/aws.conf"
	AWS_CONFIG_FILE=$T/aws.conf $A s3 cp s3://cli-aws/dir/f.bin s3://cli-aws/dir/g.bin >/dev/null 2>"$T/aws.err" &&
		$A s3 cp s3://cli-aws/dir/g.bin "$T/g.aws" >/dev/null 2>>"$T/aws.err" && cmp -s "$T/f.bin" "$T/g.aws" &&
		grep -q " UploadPartCopy PUT cli-aws /dir/g.bin 200 " "$T/access.log" &&
		ok "aws s3 cp s3->s3 over the multipart threshold (UploadPartCopy, cmp)" ||
		no "aws s3 cp s3->s3 multipart: $(head -c 300 "$T/aws.err"; grep UploadPartCopy "$T/access.log" | tail -2)"
	# a copy of a multipart object: this aws cli asks the source's tags
	# (GetObjectTagging), which got the object's bytes before the router
	# (issue 26: "invalid XML received")
	AWS_CONFIG_FILE=$T/aws.conf $A s3 cp "$T/f.bin" s3://cli-aws/dir/mp.bin >/dev/null 2>"$T/aws.err" &&
		AWS_CONFIG_FILE=$T/aws.conf $A s3 cp s3://cli-aws/dir/mp.bin s3://cli-aws/dir/mp2.bin >/dev/null 2>>"$T/aws.err" &&
		$A s3 cp s3://cli-aws/dir/mp2.bin "$T/mp.aws" >/dev/null 2>>"$T/aws.err" && cmp -s "$T/f.bin" "$T/mp.aws" &&
		grep -q " GetObjectTagging GET cli-aws /dir/mp.bin 200 " "$T/access.log" &&
		ok "aws s3 cp s3->s3 of a multipart object (GetObjectTagging, cmp)" ||
		no "aws s3 cp s3->s3 of a multipart object: $(head -c 300 "$T/aws.err"; grep mp.bin "$T/access.log" | tail -4)"
	$A s3api head-object --bucket cli-aws --key dir/f.bin 2>"$T/aws.err" | grep -q '"ContentLength": 3000000' &&
		ok "aws s3api head-object" || no "aws s3api head-object: $(head -c 300 "$T/aws.err")"
	$A s3 rm --recursive s3://cli-aws >/dev/null 2>"$T/aws.err" && $A s3 rb s3://cli-aws >/dev/null 2>>"$T/aws.err" &&
		ok "aws s3 rm + rb" || no "aws s3 rm/rb: $(head -c 300 "$T/aws.err")"
else
	no "aws cli smoke: $(cat "$T/tools.out")"
fi
if tools_check s3cmd >"$T/tools.out"; then
	H=${EP#http://}
	SC="$STRATA_S3CMD --no-ssl --host=$H --host-bucket=$H --access_key=$AK --secret_key=$SK --region=us-east-1 -c /dev/null"
	$SC mb s3://cli-s3cmd >"$T/sc.out" 2>&1 && ok "s3cmd mb" || no "s3cmd mb: $(tail -3 "$T/sc.out")"
	$SC put "$T/f.bin" s3://cli-s3cmd/f.bin >"$T/sc.out" 2>&1 && ok "s3cmd put" || no "s3cmd put: $(tail -3 "$T/sc.out")"
	$SC get --force s3://cli-s3cmd/f.bin "$T/f.sc" >"$T/sc.out" 2>&1 && cmp -s "$T/f.bin" "$T/f.sc" &&
		ok "s3cmd get (cmp)" || no "s3cmd get: $(tail -3 "$T/sc.out")"
	$SC ls s3://cli-s3cmd >"$T/sc.out" 2>&1 && grep -q "s3://cli-s3cmd/f.bin" "$T/sc.out" &&
		ok "s3cmd ls" || no "s3cmd ls: $(tail -3 "$T/sc.out")"
	$SC del s3://cli-s3cmd/f.bin >"$T/sc.out" 2>&1 && $SC rb s3://cli-s3cmd >>"$T/sc.out" 2>&1 &&
		ok "s3cmd del + rb" || no "s3cmd del/rb: $(tail -3 "$T/sc.out")"
else
	no "s3cmd smoke: $(cat "$T/tools.out")"
fi
# the three clients users have, each through mb/cp/ls/sync/presign/info/rb
if tools_check aws s3cmd >"$T/tools.out"; then
	part clients "$HERE/s3_clients.py" "$EP" "$T/creds" "$STRATA_AWS" \
		"$STRATA_S3CMD"
else
	no "clients: $(cat "$T/tools.out")"
fi

# ---- access log and statistics
n=$(wc -l <"$T/access.log")
[ "$n" -gt 100 ] && grep -q " alice PutObject PUT conf-main /small 200 " "$T/access.log" &&
	ok "access log: $n lines, one per request" || no "access log ($n lines)"

gw_stop
[ -s "$T/stats.json" ] && grep -q '"op":"ListObjectsV2"' "$T/stats.json" &&
	ok "statistics written at exit" || no "statistics file"

# ---- the same store served with `etag: crc64` (s3_etag.py)
if gw_start --etag crc64; then
	part etag "$HERE/s3_etag.py" "$EP" "$T/creds"
	gw_stop
else
	no "gateway start with --etag crc64: $(tail -3 "$T/gw.err")"
fi

# ---- bucket configuration (s3_bconf.py): versioning, CORS, lifecycle; a
# lifecycle pass every second and a "day" of 2 s
if gw_start --lifecycle-interval 1 --lifecycle-day 2; then
	part bconf "$HERE/s3_bconf.py" "$EP" "$T/creds" 2
	gw_stop
else
	no "gateway start with --lifecycle-interval 1: $(tail -3 "$T/gw.err")"
fi

# ---- meta-nvram: refused with --cluster; noted on an existing store; a
# new store made with its metadata on NVRAM (config key), used, destroyed
if "$GW" --cluster "$T/none.yaml" --meta-nvram --creds "$T/creds" \
	>/dev/null 2>"$T/nv.err"; then
	no "meta-nvram with --cluster accepted"
elif grep -q "meta-nvram applies to an embedded store" "$T/nv.err"; then
	ok "meta-nvram with --cluster refused"
else
	no "meta-nvram with --cluster: $(cat "$T/nv.err")"
fi
if gw_start --meta-nvram; then
	gw_stop
	grep -q "exists with its metadata in the directory" "$T/gw.err" &&
		[ ! -L "$T/data/meta" ] &&
		ok "meta-nvram on an existing store: noted, store unchanged" ||
		no "meta-nvram on an existing store"
else
	no "gateway start with --meta-nvram: $(tail -3 "$T/gw.err")"
fi
printf 'data: %s\nmeta-nvram: true\n' "$T/nv" >"$T/nv.conf"
rm -f "$T/port"
"$GW" --config "$T/nv.conf" --dev-size 256M --port 0 --port-file "$T/port" \
	--creds "$T/creds" >>"$T/gw.out" 2>>"$T/gw.err" &
gw_pid=$!
port_wait "$T/port" "$gw_pid"
nvdir=$(readlink "$T/nv/meta" 2>/dev/null)
if [ -s "$T/port" ] && [ -n "$nvdir" ] && [ -d "$nvdir" ] &&
	EP=http://127.0.0.1:$(cat "$T/port") "$STRATA_PY" - "$T/creds" <<'PYEOF'
import os, sys, boto3
from botocore.config import Config
ak, sk = open(sys.argv[1]).readline().split()[1:3]
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], aws_access_key_id=ak, aws_secret_access_key=sk,
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="metanv")
body = os.urandom(3 << 20)
s3.put_object(Bucket="metanv", Key="k", Body=body)
assert s3.get_object(Bucket="metanv", Key="k")["Body"].read() == body
PYEOF
then
	ok "meta-nvram: key of the config file, metadata in $nvdir, PUT/GET"
else
	no "meta-nvram store ($nvdir): $(tail -3 "$T/gw.err")"
fi
gw_stop
"$S" --data "$T/nv" -q destroy --yes 2>/dev/null
[ -n "$nvdir" ] && [ ! -e "$nvdir" ] && [ ! -e "$T/nv" ] &&
	ok "meta-nvram store destroyed, nothing left in ${nvdir%/*}" ||
	no "meta-nvram store destroy left $nvdir or $T/nv"

# ---- kill test: its own store in $T/kill
part kill "$HERE/s3_kill.py" "$T" "$GW" "$S"
# ---- the kill test again on a store with its metadata on NVRAM ($T/kill-nv)
t0=$(date +%s)
part kill-nv "$HERE/s3_kill.py" "$T" "$GW" "$S" --meta-nvram
echo "kill test on the metanv store: $(($(date +%s) - t0)) s"
# ---- device write and read errors under the gateway ($T/fault)
part fault "$HERE/s3_fault.py" "$T" "$GW" "$S"
# ---- 10,000 idle connections, per-IP limit, idle timeout ($T/conn)
part conn "$HERE/s3_conn.py" "$T" "$GW" "$S"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
