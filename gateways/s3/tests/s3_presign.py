#!/usr/bin/env python3
"""s3_presign.py ENDPOINT CREDS — signed URLs and the forms of signing.

Presigned URLs as real clients make them, used with plain HTTP (urllib,
http.client, curl): boto3 generate_presigned_url() without a
signature_version (this python's boto3 and Debian's /usr/bin/python3 one:
both make SigV2 query URLs, AWSAccessKeyId/Signature/Expires), `aws s3
presign` of every aws cli on the PATH and /usr/bin/aws (1.x: SigV2, 2.x:
SigV4), `s3cmd signurl`; GET and PUT through them, response-* overrides.
Then refusals: an expired URL (403 AccessDenied "Request has expired"), a
tampered one (403 SignatureDoesNotMatch), an unknown key (403
InvalidAccessKeyId), a half-signed one; none says "anonymous".  The
Authorization header form of SigV2 ("AWS AKEY:SIG": boto3 with
signature_version "s3", s3cmd --signature-v2), SigV4 presigned still
working, and anonymous requests: refused with "Access Denied" where the
bucket does not let anyone in, and a bad signature never taken as
anonymous.  Ends with "N passed, N failed".
"""
import base64
import email.utils
import hashlib
import hmac
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import boto3
from botocore.config import Config

EP = sys.argv[1]
HOSTPORT = EP[len("http://"):]
users = [l.split() for l in open(sys.argv[2]) if l.strip() and l[0] != "#"]
NAME, AK, SK = users[0]
passed = failed = 0
BK = "presign-b"


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + what)
    else:
        failed += 1
        print("FAIL " + what + (": " + str(detail)[:600] if detail else ""))


def req(method, url, body=None, headers=None):
    """(status, headers dict (lower-case names), body bytes) of one request."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request(method, u.path + ("?" + u.query if u.query else ""), body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def err_code(body):
    m = re.search(rb"<Code>([^<]*)</Code>", body)
    return m.group(1).decode() if m else None


def err_msg(body):
    m = re.search(rb"<Message>([^<]*)</Message>", body)
    return m.group(1).decode() if m else ""


def client(sigver=None):
    cfg = {"s3": {"addressing_style": "path"}}
    if sigver:
        cfg["signature_version"] = sigver
    return boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name="us-east-1", config=Config(**cfg))


def v2_url(method, path, expires, akey=AK, secret=SK, extra=""):
    """A SigV2 query URL made here (path: encoded, with the bucket)."""
    sts = "%s\n\n\n%d\n%s" % (method, expires, path)
    sig = base64.b64encode(hmac.new(secret.encode(), sts.encode(), hashlib.sha1).digest()).decode()
    return "%s%s?AWSAccessKeyId=%s&Expires=%d&Signature=%s%s" % (EP, path, akey, expires,
                                                                 urllib.parse.quote(sig, safe=""), extra)


def v4_url(method, path, expires):
    """A SigV4 query URL made here (path: plain, with the bucket), with any
    X-Amz-Expires, even one outside 1..604800."""
    amz = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    scope = "%s/us-east-1/s3/aws4_request" % amz[:8]
    qs = sorted([("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", "%s/%s" % (AK, scope)),
                 ("X-Amz-Date", amz), ("X-Amz-Expires", str(expires)), ("X-Amz-SignedHeaders", "host")])
    cq = "&".join("%s=%s" % (urllib.parse.quote(k, safe="~"), urllib.parse.quote(v, safe="~")) for k, v in qs)
    creq = "\n".join([method, urllib.parse.quote(path, safe="/~"), cq, "host:%s\n" % HOSTPORT, "host",
                      "UNSIGNED-PAYLOAD"])
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + SK).encode()
    for part in (amz[:8], "us-east-1", "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return "%s%s?%s&X-Amz-Signature=%s" % (EP, urllib.parse.quote(path, safe="/~"), cq,
                                            hmac.new(k, sts.encode(), hashlib.sha256).hexdigest())


s3 = client("s3v4")
try:
    s3.create_bucket(Bucket=BK)
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
data = os.urandom(70000)
s3.put_object(Bucket=BK, Key="obj", Body=data)
odd = "dir/a b+c%d&é.txt"
s3.put_object(Bucket=BK, Key=odd, Body=b"odd")

# ---- boto3 without signature_version: this python's, then Debian's
snippet = r'''
import sys, boto3
c = boto3.client("s3", endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3],
                 region_name="us-east-1")
print(boto3.__version__)
print(c.generate_presigned_url("get_object", Params={"Bucket": sys.argv[4], "Key": "obj"}, ExpiresIn=600))
print(c.generate_presigned_url("get_object", Params={"Bucket": sys.argv[4], "Key": sys.argv[5]}, ExpiresIn=600))
print(c.generate_presigned_url("put_object", Params={"Bucket": sys.argv[4], "Key": "put-" + boto3.__version__},
                               ExpiresIn=600))
print(c.generate_presigned_url("get_object", Params={"Bucket": sys.argv[4], "Key": "obj",
                               "ResponseContentType": "text/x-test", "ResponseContentDisposition": "attachment"},
                               ExpiresIn=600))
'''
pys = [sys.executable]
if os.path.exists("/usr/bin/python3") and os.path.realpath("/usr/bin/python3") != os.path.realpath(sys.executable):
    pys.append("/usr/bin/python3")
for py in pys:
    r = subprocess.run([py, "-c", snippet, EP, AK, SK, BK, odd], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        check(False, "boto3 of %s presigns" % py, r.stderr[-400:])
        continue
    ver, get_u, odd_u, put_u, resp_u = r.stdout.split()
    form = "SigV2" if "AWSAccessKeyId=" in get_u else "SigV4" if "X-Amz-Signature=" in get_u else "?"
    st, h, b = req("GET", get_u)
    check(st == 200 and b == data, "boto3 %s (%s) presigned GET, %s" % (ver, py, form), (st, b[:200]))
    st, h, b = req("GET", odd_u)
    check(st == 200 and b == b"odd", "boto3 %s presigned GET of key %r" % (ver, odd), (st, odd_u, b[:200]))
    body = b"put through a presigned URL by " + ver.encode()
    st, h, b = req("PUT", put_u, body=body)
    got = s3.get_object(Bucket=BK, Key="put-" + ver)["Body"].read() if st == 200 else None
    check(st == 200 and got == body, "boto3 %s presigned PUT (http.client), object stored" % ver, (st, b[:200]))
    st, h, b = req("GET", resp_u)
    check(st == 200 and h.get("content-type") == "text/x-test" and h.get("content-disposition") == "attachment",
          "boto3 %s presigned GET with response-* overrides (signed sub-resources)" % ver, (st, h, b[:200]))
    if form == "SigV2":
        # the same URL with an override changed: the resource no longer matches
        st, h, b = req("GET", resp_u.replace("text%2Fx-test", "text%2Fhtml"))
        check(st == 403 and err_code(b) == "SignatureDoesNotMatch",
              "boto3 %s URL with a response-content-type changed: 403 SignatureDoesNotMatch" % ver, (st, b[:300]))

# ---- urllib (what a browser or wget does with a link)
u = client().generate_presigned_url("get_object", Params={"Bucket": BK, "Key": "obj"}, ExpiresIn=60)
try:
    got = urllib.request.urlopen(u, timeout=30).read()
    check(got == data, "urllib GET of a boto3 SigV2 URL")
except urllib.error.HTTPError as e:
    check(False, "urllib GET of a boto3 SigV2 URL", (e.code, e.read()[:300]))

# ---- aws cli: every one found (1.x makes SigV2, 2.x SigV4)
env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1")
env.pop("AWS_PROFILE", None)
clis, seen = [], set()
for c in (shutil.which("aws"), "/usr/bin/aws"):
    if c and os.path.exists(c):
        v = subprocess.run([c, "--version"], capture_output=True, text=True, env=env, timeout=60)
        ver = (v.stdout + v.stderr).split(" ")[0]
        if ver not in seen:
            seen.add(ver)
            clis.append((c, ver))
check(len(clis) > 0, "an aws cli is installed (%s)" % ", ".join(v for _, v in clis))
for c, ver in clis:
    r = subprocess.run([c, "--endpoint-url", EP, "s3", "presign", "s3://%s/obj" % BK, "--expires-in", "300"],
                       capture_output=True, text=True, env=env, timeout=120)
    u = r.stdout.strip()
    form = "SigV2" if "AWSAccessKeyId=" in u else "SigV4" if "X-Amz-Signature=" in u else "?"
    st, h, b = req("GET", u) if u.startswith("http") else (0, {}, r.stderr.encode())
    check(st == 200 and b == data, "%s s3 presign (%s): GET" % (ver, form), (st, u, b[:200]))
    cu = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code}", u], capture_output=True, timeout=60)
    check(cu.stdout.endswith(b"\n200") and cu.stdout[:-4] == data, "%s presigned URL fetched by curl" % ver,
          cu.stdout[-200:])

# ---- s3cmd signurl, and s3cmd with signature v2 in the header
sc = shutil.which("s3cmd")
check(sc is not None, "s3cmd is installed")
if sc:
    base = [sc, "--no-ssl", "--host=" + HOSTPORT, "--host-bucket=" + HOSTPORT, "--access_key=" + AK,
            "--secret_key=" + SK, "--region=us-east-1", "-c", "/dev/null"]
    r = subprocess.run(base + ["signurl", "s3://%s/obj" % BK, "+300"], capture_output=True, text=True, timeout=120)
    u = r.stdout.strip()
    st, h, b = req("GET", u) if u.startswith("http") else (0, {}, r.stderr.encode())
    check(st == 200 and b == data, "s3cmd signurl: GET (%s)" % ("SigV2" if "AWSAccessKeyId" in u else "?"),
          (st, u, b[:200]))
    tmp = tempfile.mkdtemp()
    try:
        f = os.path.join(tmp, "f")
        open(f, "wb").write(data)
        r1 = subprocess.run(base + ["--signature-v2", "put", f, "s3://%s/s3cmd-v2" % BK], capture_output=True,
                            text=True, timeout=120)
        r2 = subprocess.run(base + ["--signature-v2", "get", "--force", "s3://%s/s3cmd-v2" % BK, f + ".back"],
                            capture_output=True, text=True, timeout=120)
        r3 = subprocess.run(base + ["--signature-v2", "ls", "s3://%s/" % BK], capture_output=True, text=True,
                            timeout=120)
        ok = (r1.returncode == 0 and r2.returncode == 0 and open(f + ".back", "rb").read() == data and
              "s3cmd-v2" in r3.stdout)
        check(ok, "s3cmd --signature-v2 put/get/ls (Authorization: AWS AKEY:SIG)",
              r1.stderr[-300:] + r2.stderr[-300:] + r3.stderr[-300:])
    finally:
        shutil.rmtree(tmp)

# ---- boto3 with signature_version "s3": SigV2 in the Authorization header
v2 = client("s3")
try:
    v2.put_object(Bucket=BK, Key="hdr-v2", Body=b"v2 body", Metadata={"a": "1", "b": "two  words"},
                  ContentType="text/plain")
    o = v2.get_object(Bucket=BK, Key="hdr-v2")
    keys = [x["Key"] for x in v2.list_objects(Bucket=BK, Prefix="hdr")["Contents"]]
    check(o["Body"].read() == b"v2 body" and o["Metadata"] == {"a": "1", "b": "two  words"} and keys == ["hdr-v2"],
          "boto3 signature_version s3: PUT with x-amz-meta-*, GET, LIST")
except Exception as e:  # noqa: BLE001 - any failure is the test's
    check(False, "boto3 signature_version s3: PUT with x-amz-meta-*, GET, LIST", e)
bad = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK + "x",
                   region_name="us-east-1", config=Config(signature_version="s3", s3={"addressing_style": "path"}))
try:
    bad.get_object(Bucket=BK, Key="obj")
    check(False, "SigV2 header with a wrong secret refused")
except Exception as e:  # noqa: BLE001
    code = getattr(e, "response", {}).get("Error", {}).get("Code")
    check(code == "SignatureDoesNotMatch", "SigV2 header with a wrong secret: SignatureDoesNotMatch", e)

# ---- refusals of signed URLs (made here: dates and keys chosen)
now = int(time.time())
st, h, b = req("GET", v2_url("GET", "/%s/obj" % BK, now + 300))
check(st == 200 and b == data, "hand-made SigV2 URL: GET", (st, b[:200]))
st, h, b = req("GET", v2_url("GET", "/%s/obj" % BK, now - 10))
check(st == 403 and err_code(b) == "AccessDenied" and err_msg(b) == "Request has expired",
      "expired SigV2 URL: 403 AccessDenied 'Request has expired'", (st, b[:300]))
st, h, b = req("GET", v2_url("GET", "/%s/obj" % BK, now + 300).replace("/obj?", "/put-x?"))
check(st == 403 and err_code(b) == "SignatureDoesNotMatch", "SigV2 URL with the key changed: SignatureDoesNotMatch",
      (st, b[:300]))
u = v2_url("GET", "/%s/obj" % BK, now + 300)
st, h, b = req("GET", re.sub(r"Expires=\d+", "Expires=%d" % (now + 9000), u))
check(st == 403 and err_code(b) == "SignatureDoesNotMatch", "SigV2 URL with Expires moved: SignatureDoesNotMatch",
      (st, b[:300]))
st, h, b = req("PUT", v2_url("GET", "/%s/obj" % BK, now + 300), body=b"x")
check(st == 403 and err_code(b) == "SignatureDoesNotMatch" and
      s3.get_object(Bucket=BK, Key="obj")["Body"].read() == data,
      "a GET URL used to PUT: SignatureDoesNotMatch, object unchanged", (st, b[:300]))
st, h, b = req("GET", v2_url("GET", "/%s/obj" % BK, now + 300, akey="AKNOSUCHKEY000000000"))
check(st == 403 and err_code(b) == "InvalidAccessKeyId", "SigV2 URL of an unknown key: InvalidAccessKeyId",
      (st, b[:300]))
st, h, b = req("GET", "%s/%s/obj?AWSAccessKeyId=%s&Expires=%d" % (EP, BK, AK, now + 300))
check(st == 403 and err_code(b) == "AccessDenied" and "Signature" in err_msg(b),
      "SigV2 URL without its Signature: AccessDenied naming the missing parameters", (st, b[:300]))
# SigV4 presigned: still served, and refused when expired / tampered
u4 = s3.generate_presigned_url("get_object", Params={"Bucket": BK, "Key": "obj"}, ExpiresIn=60)
st, h, b = req("GET", u4)
check(st == 200 and b == data, "SigV4 presigned GET", (st, b[:200]))
old = re.sub(r"X-Amz-Date=\d{8}T\d{6}Z", time.strftime("X-Amz-Date=%Y%m%dT%H%M%SZ", time.gmtime(now - 7200)), u4)
st, h, b = req("GET", old)
check(st == 403 and err_code(b) == "AccessDenied" and err_msg(b) == "Request has expired",
      "SigV4 URL past its X-Amz-Expires: 403 'Request has expired'", (st, b[:300]))
st, h, b = req("GET", u4.replace("/obj?", "/obj2?"))
check(st == 403 and err_code(b) == "SignatureDoesNotMatch", "SigV4 URL tampered: SignatureDoesNotMatch", (st, b[:300]))
u4n = re.sub(r"&X-Amz-Signature=[0-9a-f]+", "", u4)
st, h, b = req("GET", u4n)
check(st == 400 and err_code(b) == "AuthorizationQueryParametersError",
      "SigV4 URL without X-Amz-Signature: 400 AuthorizationQueryParametersError", (st, b[:300]))
# two mechanisms at once
st, h, b = req("GET", v2_url("GET", "/%s/obj" % BK, now + 300), headers={"Authorization": "AWS %s:xx" % AK})
check(st == 400 and err_code(b) == "InvalidArgument", "query signature and Authorization header: 400 InvalidArgument",
      (st, b[:300]))

# X-Amz-Expires out of 1..604800: 403 AuthorizationQueryParametersError,
# as AWS (not 400); an expired PUT URL: 403 too (ceph/s3-tests
# test_object_raw_get_x_amz_expires_out_*, test_object_raw_put_authenticated_expired)
# (signed here: botocore with awscrt refuses to sign an expiry <= 0)
st, h, b = req("GET", v4_url("GET", "/%s/obj" % BK, 60))
check(st == 200 and b == data, "SigV4 URL signed here, X-Amz-Expires=60: 200", (st, b[:300]))
for ex in (0, 604801, -7):
    st, h, b = req("GET", v4_url("GET", "/%s/obj" % BK, ex))
    check(st == 403 and err_code(b) == "AuthorizationQueryParametersError",
          "SigV4 URL with X-Amz-Expires=%d: 403 AuthorizationQueryParametersError" % ex, (st, b[:300]))
st, h, b = req("PUT", v4_url("PUT", "/%s/obj" % BK, -1000), body=b"foo")
check(st == 403, "SigV4 PUT URL with X-Amz-Expires=-1000: 403, nothing written", (st, b[:300]))
check(s3.get_object(Bucket=BK, Key="obj")["Body"].read() == data, "the object is unchanged")

# ---- CORS: a preflight (OPTIONS) is not authenticated, whatever signature
# its URL carries; CORS headers on error replies too (ceph/s3-tests
# test_cors_presigned_*, test_cors_origin_response)
BC = "presign-cors"
try:
    s3.create_bucket(Bucket=BC)
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
s3.put_object(Bucket=BC, Key="foo", Body=b"cors")
urls = [("SigV4 GET", "GET", s3.generate_presigned_url("get_object", Params={"Bucket": BC, "Key": "foo"},
                                                       ExpiresIn=100000)),
        ("SigV4 PUT", "PUT", s3.generate_presigned_url("put_object", Params={"Bucket": BC, "Key": "foo"},
                                                       ExpiresIn=100000)),
        ("SigV2 GET", "GET", v2_url("GET", "/%s/foo" % BC, now + 100000)),
        ("SigV2 PUT", "PUT", v2_url("PUT", "/%s/foo" % BC, now + 100000))]
for what, m, u in urls:
    st, h, b = req("OPTIONS", u)
    check(st == 400 and err_code(b) == "BadRequest", "OPTIONS on a %s URL without Origin: 400 BadRequest" % what,
          (st, b[:300]))
s3.put_bucket_cors(Bucket=BC, CORSConfiguration={"CORSRules": [
    {"AllowedMethods": ["GET", "PUT"], "AllowedOrigins": ["example", "*suffix"]}]})
for what, m, u in urls:
    st, h, b = req("OPTIONS", u, headers={"Origin": "example", "Access-Control-Request-Method": m})
    check(st == 200 and h.get("access-control-allow-origin") == "example" and
          m in h.get("access-control-allow-methods", ""),
          "CORS preflight on a %s URL: 200 with Access-Control-Allow-*" % what, (st, h, b[:300]))
u = s3.generate_presigned_url("get_object", Params={"Bucket": BC, "Key": "missing"}, ExpiresIn=600)
st, h, b = req("GET", u, headers={"Origin": "foo.suffix"})
check(st == 404 and err_code(b) == "NoSuchKey" and h.get("access-control-allow-origin") == "foo.suffix",
      "404 NoSuchKey keeps the CORS headers", (st, h, b[:300]))
st, h, b = req("PUT", "%s/%s/bar" % (EP, BC), body=b"", headers={"Origin": "foo.suffix"})
check(st == 403 and err_code(b) == "AccessDenied" and h.get("access-control-allow-origin") == "foo.suffix",
      "403 AccessDenied (anonymous PUT) keeps the CORS headers", (st, h, b[:300]))
st, h, b = req("GET", u, headers={"Origin": "other"})
check(st == 404 and "access-control-allow-origin" not in h, "no CORS headers for an origin no rule allows",
      (st, h, b[:300]))
for o in s3.list_objects_v2(Bucket=BC).get("Contents", []):
    s3.delete_object(Bucket=BC, Key=o["Key"])
s3.delete_bucket(Bucket=BC)

# ---- SigV4 with the Date header instead of x-amz-date (botocore, when a
# Date header is set, signs with it, in email.utils' "-0000" form; the
# string to sign has its time in ISO 8601 basic form): accepted; with both,
# x-amz-date is the one used (ceph/s3-tests test_object_create_date_and_amz_date)
sd = client("s3v4")
sd.meta.events.register("before-call.s3.PutObject", lambda **kw: kw["params"]["headers"].update(
    {"Date": email.utils.formatdate(usegmt=True), "X-Amz-Date": email.utils.formatdate(usegmt=True)}))
try:
    sd.put_object(Bucket=BK, Key="dated", Body=b"bar")
    ok = s3.get_object(Bucket=BK, Key="dated")["Body"].read() == b"bar"
except Exception as e:  # noqa: BLE001 - reported
    ok = e
check(ok is True, "SigV4 signed with a Date header (-0000), no x-amz-date: PutObject accepted", ok)
st, h, b = req("GET", "%s/%s/obj" % (EP, BK), headers={
    "Date": email.utils.formatdate(usegmt=True),
    "Authorization": "AWS4-HMAC-SHA256 Credential=%s/20200101/us-east-1/s3/aws4_request, SignedHeaders=date;host, "
                     "Signature=%s" % (AK, "0" * 64), "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
check(st == 403 and err_code(b) == "SignatureDoesNotMatch", "SigV4 with a Date header, bad signature: refused",
      (st, b[:300]))

# ---- anonymous: no signature at all
st, h, b = req("GET", "%s/%s/obj" % (EP, BK))
check(st == 403 and err_code(b) == "AccessDenied" and "anonymous" not in err_msg(b),
      "anonymous GET of a private object: 403 AccessDenied '%s'" % err_msg(b), (st, b[:300]))
st, h, b = req("GET", "%s/no-such-bucket-pr/obj" % EP)
check(st == 404 and err_code(b) == "NoSuchBucket", "anonymous GET in a missing bucket: 404 NoSuchBucket",
      (st, b[:300]))
s3.put_object(Bucket=BK, Key="public", Body=b"for all", ACL="public-read")
st, h, b = req("GET", "%s/%s/public" % (EP, BK))
check(st == 200 and b == b"for all", "anonymous GET of a public-read object: 200", (st, b[:300]))
st, h, b = req("GET", v2_url("GET", "/%s/public" % BK, now + 300, secret=SK + "x"))
check(st == 403 and err_code(b) == "SignatureDoesNotMatch",
      "a bad signature on a public-read object: SignatureDoesNotMatch, not served as anonymous", (st, b[:300]))
st, h, b = req("GET", v2_url("GET", "/%s/public" % BK, now - 10))
check(st == 403 and err_msg(b) == "Request has expired",
      "an expired URL of a public-read object: 'Request has expired', not served as anonymous", (st, b[:300]))
st, h, b = req("GET", "%s/%s/public" % (EP, BK), headers={"Authorization": ""})
check(st == 403, "an empty Authorization header on a public-read object: 403, not anonymous", (st, b[:300]))

for o in s3.list_objects_v2(Bucket=BK).get("Contents", []):
    s3.delete_object(Bucket=BK, Key=o["Key"])
s3.delete_bucket(Bucket=BK)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
