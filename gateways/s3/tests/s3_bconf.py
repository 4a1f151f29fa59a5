#!/usr/bin/env python3
"""s3_bconf.py ENDPOINT CREDS DAY — bucket configuration of strata-s3.

Versioning (?versioning), CORS (?cors and the OPTIONS preflight) and
lifecycle (?lifecycle, and its expiration rules applied) through boto3 and
raw signed requests (malformed bodies boto3 would not send).  The gateway
must run with `lifecycle-interval 1` and `lifecycle-day DAY` (seconds; the
step uses 2): an expiration rule of Days 1 then deletes an object DAY
seconds after it was written, within about DAY + 1 s.

Every case asserts what it checked.  Ends with "N passed, N failed"; exit 1
on any failure.  Skips with a SKIP line (counting nothing) if boto3 is
missing.
"""
import hashlib
import http.client
import os
import sys
import time
import traceback
import urllib.parse

try:
    import boto3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials
    from botocore.exceptions import ClientError
except ImportError:
    print("SKIP s3 bucket configuration: boto3 cannot be imported")
    print("0 passed, 0 failed")
    sys.exit(0)

EP = sys.argv[1]
users = [l.split() for l in open(sys.argv[2]) if l.strip() and l[0] != "#"]
DAY = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
CFG = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
             signature_version="s3v4", connect_timeout=10, read_timeout=60)
U = urllib.parse.urlparse(EP)


def client(akey, skey):
    return boto3.client("s3", endpoint_url=EP, aws_access_key_id=akey,
                        aws_secret_access_key=skey, region_name="us-east-1",
                        config=CFG)


s3 = client(users[0][1], users[0][2])
s3b = client(users[1][1], users[1][2])
cases = []


def case(fn):
    cases.append(fn)
    return fn


def err(code, fn, *a, **kw):
    """fn must fail with S3 error code; returns the error response."""
    try:
        fn(*a, **kw)
    except ClientError as e:
        got = e.response["Error"]["Code"]
        assert got == code, "expected %s, got %s (%s)" % (
            code, got, e.response["Error"].get("Message"))
        return e.response
    raise AssertionError("expected %s, call succeeded" % code)


def raw(method, path, body=b"", headers=None, sign=True):
    """One HTTP request (SigV4-signed as alice unless sign is False):
    (status, headers with lower-case names, body)."""
    h = dict(headers or {})
    if sign:
        h["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
        req = AWSRequest(method=method, url=EP + path, data=body, headers=h)
        SigV4Auth(Credentials(users[0][1], users[0][2]), "s3",
                  "us-east-1").add_auth(req)
        h = dict(req.headers.items())
    c = http.client.HTTPConnection(U.hostname, U.port, timeout=30)
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def code_of(body):
    b = body.decode(errors="replace")
    return b.split("<Code>")[1].split("</Code>")[0] if "<Code>" in b else ""


def fresh(name):
    """An empty bucket name (made anew)."""
    try:
        for o in s3.list_objects_v2(Bucket=name).get("Contents", []):
            s3.delete_object(Bucket=name, Key=o["Key"])
        s3.delete_bucket(Bucket=name)
    except ClientError:
        pass
    s3.create_bucket(Bucket=name)
    return name


def wait_for(cond, secs, what):
    """Poll cond() every 0.2 s for at most secs; AssertionError naming
    what if it never held."""
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return
        time.sleep(0.2)
    assert cond(), "not within %.0f s: %s" % (secs, what)


# ------------------------------------------------------------ versioning

@case
def versioning_never_set():
    b = fresh("bconf-vers")
    r = s3.get_bucket_versioning(Bucket=b)
    assert "Status" not in r and "MFADelete" not in r, r


@case
def versioning_suspended_round_trip():
    b = fresh("bconf-vers")
    s3.put_bucket_versioning(Bucket=b,
                             VersioningConfiguration={"Status": "Suspended"})
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Suspended"
    # objects keep working as in a never-versioned bucket
    s3.put_object(Bucket=b, Key="k", Body=b"one")
    s3.put_object(Bucket=b, Key="k", Body=b"two")
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"two"


@case
def versioning_enabled_refused_501():
    b = fresh("bconf-vers")
    e = err("NotImplemented", s3.put_bucket_versioning, Bucket=b,
            VersioningConfiguration={"Status": "Enabled"})
    assert e["ResponseMetadata"]["HTTPStatusCode"] == 501
    assert "versioning is not implemented" in e["Error"]["Message"], e
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)
    # and after Suspended, Enabled changes nothing either
    s3.put_bucket_versioning(Bucket=b,
                             VersioningConfiguration={"Status": "Suspended"})
    err("NotImplemented", s3.put_bucket_versioning, Bucket=b,
        VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Suspended"


@case
def versioning_mfa_delete_refused_501():
    b = fresh("bconf-vers")
    st, _, body = raw("PUT", "/%s?versioning" % b,
                      b"<VersioningConfiguration><Status>Suspended</Status>"
                      b"<MfaDelete>Enabled</MfaDelete>"
                      b"</VersioningConfiguration>")
    assert st == 501 and code_of(body) == "NotImplemented", (st, body)
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)


@case
def versioning_bad_xml_refused():
    b = fresh("bconf-vers")
    for doc in (b"<VersioningConfiguration><Status>Suspended</Status>",
                b"<VersioningConfiguration><Status>Bogus</Status>"
                b"</VersioningConfiguration>",
                b"<Versioning><Status>Suspended</Status></Versioning>",
                b"<VersioningConfiguration><Status>Suspended</Status>"
                b"<Status>Suspended</Status></VersioningConfiguration>",
                b""):
        st, _, body = raw("PUT", "/%s?versioning" % b, doc)
        assert st == 400 and code_of(body) == "MalformedXML", (doc, st, body)
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)


@case
def versioning_delete_not_allowed():
    b = fresh("bconf-vers")
    st, _, body = raw("DELETE", "/%s?versioning" % b)
    assert st == 405 and code_of(body) == "MethodNotAllowed", (st, body)
    assert s3.head_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 200


# ------------------------------------------------------------------ CORS

CORS = {"CORSRules": [
    {"ID": "web", "AllowedOrigins": ["https://*.example.com"],
     "AllowedMethods": ["GET", "PUT"], "AllowedHeaders": ["x-amz-*",
                                                          "Content-Type"],
     "ExposeHeaders": ["ETag", "x-amz-request-id"], "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["HEAD"]},
]}


@case
def cors_none():
    b = fresh("bconf-cors")
    e = err("NoSuchCORSConfiguration", s3.get_bucket_cors, Bucket=b)
    assert e["ResponseMetadata"]["HTTPStatusCode"] == 404


@case
def cors_round_trip_and_delete():
    b = fresh("bconf-cors")
    s3.put_bucket_cors(Bucket=b, CORSConfiguration=CORS)
    got = s3.get_bucket_cors(Bucket=b)["CORSRules"]
    assert got == CORS["CORSRules"], got
    r = s3.delete_bucket_cors(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    err("NoSuchCORSConfiguration", s3.get_bucket_cors, Bucket=b)


@case
def cors_invalid_refused_nothing_stored():
    b = fresh("bconf-cors")
    s3.put_bucket_cors(Bucket=b, CORSConfiguration=CORS)
    bad = [
        ("InvalidRequest", [{"AllowedOrigins": ["*"],
                             "AllowedMethods": ["PATCH"]}]),
        ("InvalidRequest", [{"AllowedOrigins": ["http://*.*.com"],
                             "AllowedMethods": ["GET"]}]),
        ("InvalidRequest", [{"AllowedOrigins": ["*"],
                             "AllowedMethods": ["GET"]}] * 101),
    ]
    for code, rules in bad:
        e = err(code, s3.put_bucket_cors, Bucket=b,
                CORSConfiguration={"CORSRules": rules})
        assert e["ResponseMetadata"]["HTTPStatusCode"] == 400
    for doc in (b"<CORSConfiguration><CORSRule><AllowedOrigin>*"
                b"</AllowedOrigin></CORSRule></CORSConfiguration>",
                b"<CORSConfiguration></CORSConfiguration>",
                b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
                b"<AllowedMethod>GET</AllowedMethod><Bogus/></CORSRule>"
                b"</CORSConfiguration>",
                b"<CORSConfiguration><CORSRule>"):
        st, _, body = raw("PUT", "/%s?cors" % b, doc)
        assert st == 400 and code_of(body) == "MalformedXML", (doc, st, body)
    assert s3.get_bucket_cors(Bucket=b)["CORSRules"] == CORS["CORSRules"]


@case
def cors_preflight():
    b = fresh("bconf-cors")
    st, _, body = raw("OPTIONS", "/%s/k" % b, sign=False, headers={
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "GET"})
    assert st == 403 and code_of(body) == "AccessForbidden", (st, body)
    s3.put_bucket_cors(Bucket=b, CORSConfiguration=CORS)
    st, h, body = raw("OPTIONS", "/%s/some/key" % b, sign=False, headers={
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "content-type, x-amz-meta-a"})
    assert st == 200, (st, body)
    assert h["access-control-allow-origin"] == "https://app.example.com", h
    assert h["access-control-allow-methods"] == "GET, PUT", h
    assert h["access-control-allow-headers"] == "content-type, x-amz-meta-a"
    assert h["access-control-max-age"] == "600", h
    assert h["access-control-expose-headers"] == "ETag, x-amz-request-id"
    assert "Origin" in h["vary"], h
    # the second rule: any origin, HEAD only, answered "*"
    st, h, _ = raw("OPTIONS", "/%s" % b, sign=False, headers={
        "Origin": "http://elsewhere.org",
        "Access-Control-Request-Method": "HEAD"})
    assert st == 200 and h["access-control-allow-origin"] == "*", (st, h)
    refused = [
        {"Origin": "http://elsewhere.org",
         "Access-Control-Request-Method": "GET"},
        {"Origin": "https://app.example.com",
         "Access-Control-Request-Method": "DELETE"},
        {"Origin": "https://app.example.com",
         "Access-Control-Request-Method": "GET",
         "Access-Control-Request-Headers": "authorization"},
    ]
    for hd in refused:
        st, h, body = raw("OPTIONS", "/%s/k" % b, sign=False, headers=hd)
        assert st == 403 and code_of(body) == "AccessForbidden", (hd, st)
        assert "CORSResponse" in body.decode(), body
        assert "access-control-allow-origin" not in h, h
    st, _, body = raw("OPTIONS", "/%s/k" % b, sign=False, headers={
        "Access-Control-Request-Method": "GET"})
    assert st == 400, (st, body)
    st, _, body = raw("OPTIONS", "/%s/k" % b, sign=False, headers={
        "Origin": "https://app.example.com"})
    assert st == 400, (st, body)
    st, _, body = raw("OPTIONS", "/bconf-no-such-bucket/k", sign=False,
                      headers={"Origin": "https://app.example.com",
                               "Access-Control-Request-Method": "GET"})
    assert st == 403 and code_of(body) == "AccessForbidden", (st, body)


@case
def cors_actual_request_headers():
    b = fresh("bconf-cors")
    s3.put_object(Bucket=b, Key="k", Body=b"x")
    st, h, _ = raw("GET", "/%s/k" % b,
                   headers={"Origin": "https://app.example.com"})
    assert st == 200 and "access-control-allow-origin" not in h, (st, h)
    s3.put_bucket_cors(Bucket=b, CORSConfiguration=CORS)
    st, h, body = raw("GET", "/%s/k" % b,
                      headers={"Origin": "https://app.example.com"})
    assert st == 200 and body == b"x", (st, body)
    assert h.get("access-control-allow-origin") == "https://app.example.com"
    assert h.get("access-control-expose-headers") == "ETag, x-amz-request-id"
    st, h, _ = raw("GET", "/%s/k" % b, headers={"Origin": "http://evil.org"})
    assert st == 200 and "access-control-allow-origin" not in h, h
    st, h, _ = raw("DELETE", "/%s/k" % b,
                   headers={"Origin": "https://app.example.com"})
    assert st == 204 and "access-control-allow-origin" not in h, h
    # as RGW: the method of Access-Control-Request-Method when sent
    st, h, _ = raw("DELETE", "/%s/k" % b, headers={
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "GET"})
    assert st == 204, st
    assert h.get("access-control-allow-origin") == "https://app.example.com"
    s3.delete_bucket_cors(Bucket=b)
    s3.put_object(Bucket=b, Key="k", Body=b"x")
    st, h, _ = raw("GET", "/%s/k" % b,
                   headers={"Origin": "https://app.example.com"})
    assert st == 200 and "access-control-allow-origin" not in h, h


@case
def subresources_need_the_owner():
    b = fresh("bconf-cors")
    for fn, kw in ((s3b.get_bucket_cors, {}),
                   (s3b.put_bucket_cors, {"CORSConfiguration": CORS}),
                   (s3b.get_bucket_lifecycle_configuration, {}),
                   (s3b.put_bucket_versioning,
                    {"VersioningConfiguration": {"Status": "Suspended"}})):
        err("AccessDenied", fn, Bucket=b, **kw)
    err("NoSuchCORSConfiguration", s3.get_bucket_cors, Bucket=b)
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)
    err("NoSuchBucket", s3.get_bucket_cors, Bucket="bconf-no-such-bucket")


# ------------------------------------------------------------- lifecycle

LC = {"Rules": [
    {"ID": "old", "Filter": {"Prefix": "old/"}, "Status": "Enabled",
     "Expiration": {"Days": 30},
     "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}},
    {"ID": "tiers", "Filter": {"And": {"Prefix": "logs/", "Tags": [
        {"Key": "class", "Value": "cold"}]}}, "Status": "Disabled",
     "Transitions": [{"Days": 10, "StorageClass": "GLACIER"}],
     "NoncurrentVersionExpiration": {"NoncurrentDays": 3}},
    {"ID": "dated", "Filter": {"Tag": {"Key": "a", "Value": "b"}},
     "Status": "Enabled", "Expiration": {"Date": "2030-01-01T00:00:00Z"}},
]}


def lc_get(b):
    return s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]


@case
def lifecycle_none():
    b = fresh("bconf-lc")
    e = err("NoSuchLifecycleConfiguration",
            s3.get_bucket_lifecycle_configuration, Bucket=b)
    assert e["ResponseMetadata"]["HTTPStatusCode"] == 404


@case
def lifecycle_round_trip_and_delete():
    b = fresh("bconf-lc")
    s3.put_bucket_lifecycle_configuration(Bucket=b,
                                          LifecycleConfiguration=LC)
    got = lc_get(b)
    assert len(got) == 3, got
    assert got[0]["ID"] == "old" and got[0]["Filter"] == {"Prefix": "old/"}
    assert got[0]["Expiration"] == {"Days": 30}, got[0]
    assert got[0]["AbortIncompleteMultipartUpload"] == {
        "DaysAfterInitiation": 7}
    assert got[1]["Status"] == "Disabled" and got[1]["Transitions"] == [
        {"Days": 10, "StorageClass": "GLACIER"}], got[1]
    assert got[1]["Filter"]["And"]["Tags"] == [{"Key": "class",
                                                "Value": "cold"}]
    assert got[2]["Expiration"]["Date"].year == 2030, got[2]
    # a rule without an ID gets one; the legacy Prefix form is kept
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={
        "Rules": [{"Prefix": "tmp/", "Status": "Enabled",
                   "Expiration": {"Days": 1}}]})
    got = lc_get(b)
    assert len(got) == 1 and got[0]["Prefix"] == "tmp/" and got[0]["ID"], got
    r = s3.delete_bucket_lifecycle(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    err("NoSuchLifecycleConfiguration", s3.get_bucket_lifecycle_configuration,
        Bucket=b)


@case
def lifecycle_invalid_refused_nothing_stored():
    b = fresh("bconf-lc")
    s3.put_bucket_lifecycle_configuration(Bucket=b,
                                          LifecycleConfiguration=LC)
    rule = {"ID": "r", "Filter": {"Prefix": ""}, "Status": "Enabled",
            "Expiration": {"Days": 1}}
    bad = [
        ("InvalidArgument", [dict(rule, Expiration={"Days": 0})]),
        ("InvalidArgument", [rule, dict(rule)]),
        ("InvalidArgument", [dict(rule, ID="x" * 256)]),
        ("InvalidArgument", [dict(rule, Expiration={
            "Date": "2030-01-01T12:00:00Z"})]),
        ("InvalidArgument", [dict(rule, Expiration={"Days": 1},
                                  AbortIncompleteMultipartUpload={
                                      "DaysAfterInitiation": 0})]),
        ("InvalidStorageClass", [dict(rule, Transitions=[
            {"Days": 1, "StorageClass": "NEARLINE"}])]),
        ("InvalidRequest", [dict(rule, ID="r%d" % i) for i in range(1001)]),
    ]
    for code, rules in bad:
        e = err(code, s3.put_bucket_lifecycle_configuration, Bucket=b,
                LifecycleConfiguration={"Rules": rules})
        assert e["ResponseMetadata"]["HTTPStatusCode"] == 400, code
    for doc in (b"<LifecycleConfiguration><Rule><ID>a</ID><Filter/>"
                b"<Status>On</Status><Expiration><Days>1</Days></Expiration>"
                b"</Rule></LifecycleConfiguration>",
                b"<LifecycleConfiguration><Rule><ID>a</ID><Status>Enabled"
                b"</Status><Expiration><Days>1</Days></Expiration></Rule>"
                b"</LifecycleConfiguration>",
                b"<LifecycleConfiguration><Rule><Filter><Prefix>a</Prefix>"
                b"<Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>"
                b"Enabled</Status><Expiration><Days>1</Days></Expiration>"
                b"</Rule></LifecycleConfiguration>",
                b"<LifecycleConfiguration><Rule><Filter/><Status>Enabled"
                b"</Status><Expiration><Days>1</Days><Date>2030-01-01T00:00:"
                b"00Z</Date></Expiration></Rule></LifecycleConfiguration>",
                b"<LifecycleConfiguration/>",
                b"<LifecycleConfiguration><Rule>"):
        st, _, body = raw("PUT", "/%s?lifecycle" % b, doc)
        assert st == 400 and code_of(body) == "MalformedXML", (doc, st, body)
    st, _, body = raw("PUT", "/%s?lifecycle" % b,
                      b"<LifecycleConfiguration><Rule><Filter/><Status>"
                      b"Enabled</Status></Rule></LifecycleConfiguration>")
    assert st == 400 and code_of(body) == "InvalidRequest", (st, body)
    assert [r["ID"] for r in lc_get(b)] == ["old", "tiers", "dated"]


@case
def lifecycle_expiration_applied():
    b = fresh("bconf-exp")
    big = os.urandom(300 << 10)  # over inline-max: an object of its own
    objs = {"old/a": b"a", "old/b": big, "keep/c": b"c", "oldish": b"d",
            "dated/e": b"e", "tagged/f": b"f", "tagged/g": b"g",
            "tagged/h": b"h", "size/small": b"s" * 10,
            "size/large": b"l" * 200}
    tags = {"tagged/f": "t=v&u=w", "tagged/h": "t=other"}
    for k, v in objs.items():
        s3.put_object(Bucket=b, Key=k, Body=v, Tagging=tags.get(k, ""))
    t0 = time.time()
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={
        "Rules": [
            {"ID": "old", "Filter": {"Prefix": "old/"}, "Status": "Enabled",
             "Expiration": {"Days": 1}},
            {"ID": "off", "Filter": {"Prefix": "keep/"},
             "Status": "Disabled", "Expiration": {"Days": 1}},
            {"ID": "date", "Filter": {"Prefix": "dated/"},
             "Status": "Enabled",
             "Expiration": {"Date": "2020-01-01T00:00:00Z"}},
            {"ID": "tag", "Filter": {"And": {"Prefix": "tagged/", "Tags": [
                {"Key": "t", "Value": "v"}]}}, "Status": "Enabled",
             "Expiration": {"Days": 1}},
            {"ID": "size", "Filter": {"And": {
                "Prefix": "size/", "ObjectSizeGreaterThan": 100}},
             "Status": "Enabled", "Expiration": {"Days": 1}},
        ]})
    gone = {"old/a", "old/b", "dated/e", "size/large", "tagged/f"}

    def listed():
        return {o["Key"] for o in
                s3.list_objects_v2(Bucket=b).get("Contents", [])}

    wait_for(lambda: not (listed() & gone), 10 * DAY + 20,
             "expired objects deleted (left: %s)" % (listed() & gone))
    took = time.time() - t0
    assert listed() == set(objs) - gone, listed()
    for k in set(objs) - gone:
        assert s3.get_object(Bucket=b, Key=k)["Body"].read() == objs[k], k
    err("NoSuchKey", s3.get_object, Bucket=b, Key="old/b")
    # a key written again after its expiration is a new object: kept
    # until its own time comes
    s3.put_object(Bucket=b, Key="old/a", Body=b"again")
    assert s3.get_object(Bucket=b, Key="old/a")["Body"].read() == b"again"
    assert took < 10 * DAY + 20, took
    wait_for(lambda: "old/a" not in listed(), 10 * DAY + 20,
             "the rewritten key expires in its turn")
    s3.delete_bucket_lifecycle(Bucket=b)


@case
def lifecycle_expiration_header():
    import email.utils
    import re
    b = fresh("bconf-exphdr")
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={
        "Rules": [
            {"ID": "days", "Filter": {"Prefix": "hdr/"}, "Status": "Enabled",
             "Expiration": {"Days": 1000}},
            {"ID": "tagged", "Filter": {"Tag": {"Key": "k1", "Value": "v1"}},
             "Status": "Enabled", "Expiration": {"Date":
                                                 "2031-01-01T00:00:00Z"}},
            {"ID": "off", "Filter": {"Prefix": "off/"}, "Status": "Disabled",
             "Expiration": {"Days": 1}}]})

    def hdr(r):
        h = r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration")
        if h is None:
            return None
        m = re.fullmatch(r'expiry-date="(.+)", rule-id="(.+)"', h)
        assert m, h
        return email.utils.parsedate_to_datetime(m.group(1)).timestamp(), \
            m.group(2)

    t0 = time.time()
    at, rid = hdr(s3.put_object(Bucket=b, Key="hdr/a", Body=b"a"))
    assert rid == "days" and abs(at - (t0 + 1000 * DAY)) < 5 + 86400 * (
        DAY == 86400), (at, t0)
    for r in (s3.head_object(Bucket=b, Key="hdr/a"),
              s3.get_object(Bucket=b, Key="hdr/a")):
        assert hdr(r) == (at, "days"), hdr(r)
    # a tag rule: by the tags set later, and no more once they change
    s3.put_object(Bucket=b, Key="t", Body=b"t")
    assert hdr(s3.head_object(Bucket=b, Key="t")) is None
    s3.put_object_tagging(Bucket=b, Key="t", Tagging={"TagSet": [
        {"Key": "k1", "Value": "v1"}, {"Key": "k5", "Value": "v5"}]})
    assert hdr(s3.head_object(Bucket=b, Key="t")) == (
        1924992000.0, "tagged"), hdr(s3.head_object(Bucket=b, Key="t"))
    s3.put_object_tagging(Bucket=b, Key="t", Tagging={"TagSet": [
        {"Key": "k1", "Value": "v2"}]})
    assert hdr(s3.head_object(Bucket=b, Key="t")) is None
    # disabled rules and other keys: none
    for k in ("off/x", "other"):
        assert hdr(s3.put_object(Bucket=b, Key=k, Body=b"x")) is None, k
        assert hdr(s3.head_object(Bucket=b, Key=k)) is None, k
    s3.delete_bucket_lifecycle(Bucket=b)
    assert hdr(s3.head_object(Bucket=b, Key="hdr/a")) is None


@case
def bucket_recreated_has_no_old_configuration():
    b = fresh("bconf-again")
    s3.put_bucket_cors(Bucket=b, CORSConfiguration=CORS)
    s3.put_bucket_lifecycle_configuration(Bucket=b,
                                          LifecycleConfiguration=LC)
    s3.put_bucket_versioning(Bucket=b,
                             VersioningConfiguration={"Status": "Suspended"})
    s3.delete_bucket(Bucket=b)
    s3.create_bucket(Bucket=b)
    err("NoSuchCORSConfiguration", s3.get_bucket_cors, Bucket=b)
    err("NoSuchLifecycleConfiguration", s3.get_bucket_lifecycle_configuration,
        Bucket=b)
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)
    st, _, _ = raw("OPTIONS", "/%s/k" % b, sign=False, headers={
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "GET"})
    assert st == 403, st


passed = failed = 0
for c in cases:
    try:
        c()
        passed += 1
        print("ok   bconf %s" % c.__name__)
    except Exception:
        failed += 1
        print("FAIL bconf %s" % c.__name__)
        traceback.print_exc(limit=3)
    sys.stdout.flush()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
