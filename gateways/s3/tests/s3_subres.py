#!/usr/bin/env python3
"""s3_subres.py ENDPOINT CREDS [ONLY] — sub-resources of strata-s3.

Routing on (method, target, sub-resources): every request the gateway does
not implement is 501 NotImplemented and changes nothing (each data-loss
case of issue 26 replayed as a raw signed request, the object or bucket
checked unchanged afterwards); object and bucket tagging; ACLs (canned,
grants, ?acl documents, anonymous access); ownership controls; bucket
policies; the conformance points of issue 26 (repeated Complete, empty
metadata values, encoding-type=url, empty continuation token, xn--).

Users come from CREDS (NAME AKEY SKEY lines; the first two are used).
Ends with "N passed, N failed"; exit 1 on any failure.
"""
import hashlib
import json
import os
import sys
import traceback
import urllib.error
import urllib.parse
import urllib.request

try:
    import boto3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials
    from botocore.exceptions import ClientError
except ImportError:
    print("FAIL s3 sub-resources: boto3 cannot be imported")
    print("0 passed, 1 failed")
    sys.exit(1)

EP = sys.argv[1]
users = [l.split() for l in open(sys.argv[2]) if l.strip() and l[0] != "#"]
CFG = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
             signature_version="s3v4", connect_timeout=10, read_timeout=60)


def client(u):
    return boto3.client("s3", endpoint_url=EP, aws_access_key_id=u[1],
                        aws_secret_access_key=u[2], region_name="us-east-1",
                        config=CFG)


s3 = client(users[0])
s3b = client(users[1])
ALICE, BOB = users[0][0], users[1][0]
cases = []
B = "subres-main"
DATA = os.urandom(3000)


def case(fn):
    cases.append(fn)
    return fn


def raw(method, path, query="", body=b"", headers=None, user=0, sign=True):
    """A request signed with botocore's SigV4Auth (or anonymous): returns
    (status, headers, body)."""
    url = EP + path + ("?" + query if query else "")
    h = dict(headers or {})
    h["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
    if sign:
        r = AWSRequest(method=method, url=url, data=body, headers=h)
        SigV4Auth(Credentials(users[user][1], users[user][2]), "s3",
                  "us-east-1").add_auth(r)
        h = dict(r.headers.items())
    req = urllib.request.Request(url, data=body if body else None,
                                 headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def code_of(b):
    s = b.decode("utf-8", "replace")
    if "<Code>" not in s:
        return None
    return s.split("<Code>")[1].split("</Code>")[0]


def err(code, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ClientError as e:
        got = e.response["Error"]["Code"]
        assert got == code, "expected %s, got %s (%s)" % (
            code, got, e.response["Error"].get("Message"))
        return e.response
    raise AssertionError("expected %s, call succeeded" % code)


def fresh(name, cl=None):
    cl = cl or s3
    try:
        for o in cl.list_objects_v2(Bucket=name).get("Contents", []):
            cl.delete_object(Bucket=name, Key=o["Key"])
        cl.delete_bucket(Bucket=name)
    except ClientError:
        pass
    cl.create_bucket(Bucket=name)
    return name


def obj(key, bucket=B):
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def same(key, bucket=B):
    got = obj(key, bucket)
    assert got == DATA, "object %s changed: %d bytes, was %d" % (
        key, len(got), len(DATA))


def exists(bucket):
    try:
        s3.head_bucket(Bucket=bucket)
        return True
    except ClientError as e:
        assert e.response["Error"]["Code"] in ("404", "NoSuchBucket"), e
        return False


def anon(method, path, query="", body=b""):
    return raw(method, path, query, body, sign=False)


TAGGING = (b'<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
           b'<TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet>'
           b'</Tagging>')

# ------------------------------------------------ issue 26 point 1: routing


@case
def setup():
    fresh(B)
    s3.put_object(Bucket=B, Key="k", Body=DATA)


@case
def put_object_acl_never_truncates():
    st, _, b = raw("PUT", "/%s/k" % B, "acl")
    assert st != 200, (st, b[:200])
    same("k")


@case
def put_object_tagging_never_replaces_data():
    st, _, b = raw("PUT", "/%s/k" % B, "tagging", TAGGING)
    assert st == 200, (st, b[:200])
    same("k")


@case
def delete_object_tagging_never_deletes():
    st, _, b = raw("DELETE", "/%s/k" % B, "tagging")
    assert st == 204, (st, b[:200])
    same("k")


@case
def delete_bucket_policy_and_cors_never_delete_bucket():
    fresh("subres-empty")
    for q in ("policy", "cors", "website", "lifecycle", "encryption",
              "replication", "tagging", "ownershipControls"):
        st, _, b = raw("DELETE", "/subres-empty", q)
        assert st in (204, 501), (q, st, b[:200])
        assert exists("subres-empty"), "DELETE ?%s deleted the bucket" % q


@case
def put_bucket_subresource_never_creates():
    for q in ("acl", "versioning", "policy", "tagging", "cors", "website",
              "logging", "ownershipControls"):
        st, _, b = raw("PUT", "/subres-nobucket", q)
        assert st in (404, 400, 501), (q, st, b[:200])
        assert not exists("subres-nobucket"), "PUT ?%s created it" % q


@case
def get_object_acl_is_not_the_object():
    st, _, b = raw("GET", "/%s/k" % B, "acl")
    assert st == 200 and b"<AccessControlPolicy" in b, (st, b[:200])


@case
def get_bucket_acl_and_policy_are_not_listings():
    st, _, b = raw("GET", "/%s" % B, "acl")
    assert st == 200 and b"<AccessControlPolicy" in b, (st, b[:200])
    st, _, b = raw("GET", "/%s" % B, "policy")
    assert st == 404 and code_of(b) == "NoSuchBucketPolicy", (st, b[:200])


@case
def unimplemented_object_subresources_501():
    for m, q in (("PUT", "retention"), ("PUT", "legal-hold"),
                 ("PUT", "renameObject"), ("GET", "torrent"),
                 ("POST", "restore"), ("POST", "select"),
                 ("PUT", "attributes"), ("GET", "attributes&tagging"),
                 ("PUT", "versionId=abc"),
                 ("GET", "versionId=abc"), ("DELETE", "versionId=abc"),
                 ("PUT", "someNewThing"), ("DELETE", "someNewThing"),
                 ("PUT", "tagging&acl"),
                 ("PUT", "uploadId=%s" % ("0" * 32))):
        st, _, b = raw(m, "/%s/k" % B, q, b"x")
        assert st == 501 and code_of(b) == "NotImplemented", (m, q, st,
                                                              b[:300])
        same("k")


@case
def unimplemented_bucket_subresources_501():
    for m, q in (("PUT", "website"), ("GET", "website"),
                 ("DELETE", "website"), ("PUT", "notification"),
                 ("GET", "logging"), ("PUT", "encryption"),
                 ("PUT", "object-lock"), ("PUT", "publicAccessBlock"),
                 ("DELETE", "replication"), ("PUT", "accelerate"),
                 ("GET", "analytics"), ("PUT", "requestPayment"),
                 ("DELETE", "someNewThing"), ("POST", "")):
        st, _, b = raw(m, "/%s" % B, q, b"x" if m != "GET" else b"")
        assert st == 501 and code_of(b) == "NotImplemented", (m, q, st,
                                                              b[:300])
    assert exists(B)
    same("k")


@case
def ordinary_parameters_do_not_refuse():
    st, _, b = raw("GET", "/%s/k" % B, "x-id=GetObject")
    assert st == 200 and b == DATA, st
    st, _, b = raw("GET", "/%s/k" % B, "versionId=null")
    assert st == 200 and b == DATA, st
    st, _, b = raw("GET", "/%s/k" % B, "cachebuster=1")
    assert st == 200 and b == DATA, st
    st, _, b = raw("PUT", "/%s/k2" % B, "x-id=PutObject", DATA)
    assert st == 200, (st, b[:200])
    assert obj("k2") == DATA


@case
def list_versions_every_object_null():
    r = s3.list_object_versions(Bucket=B)
    v = [(x["Key"], x["VersionId"], x["IsLatest"]) for x in r["Versions"]]
    assert ("k", "null", True) in v, v

# ------------------------------------------------------------- tagging


@case
def object_tagging_roundtrip():
    s3.put_object_tagging(Bucket=B, Key="k", Tagging={"TagSet": [
        {"Key": "a", "Value": "1"}, {"Key": "b", "Value": ""}]})
    t = s3.get_object_tagging(Bucket=B, Key="k")["TagSet"]
    assert t == [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": ""}], t
    h = s3.head_object(Bucket=B, Key="k")
    assert h["ResponseMetadata"]["HTTPHeaders"].get(
        "x-amz-tagging-count") == "2", h["ResponseMetadata"]["HTTPHeaders"]
    s3.delete_object_tagging(Bucket=B, Key="k")
    assert s3.get_object_tagging(Bucket=B, Key="k")["TagSet"] == []
    same("k")


@case
def tagging_header_sorted_by_key():
    s3.put_object(Bucket=B, Key="ts", Body=b"x", Tagging="foo=bar&bar")
    t = s3.get_object_tagging(Bucket=B, Key="ts")["TagSet"]
    assert t == [{"Key": "bar", "Value": ""}, {"Key": "foo", "Value": "bar"}], t
    s3.put_object_tagging(Bucket=B, Key="ts", Tagging={"TagSet": [
        {"Key": "z", "Value": "1"}, {"Key": "a", "Value": "2"}, {"Key": "ab", "Value": "3"}]})
    t = s3.get_object_tagging(Bucket=B, Key="ts")["TagSet"]
    assert [x["Key"] for x in t] == ["a", "ab", "z"], t
    s3.delete_object(Bucket=B, Key="ts")


@case
def object_tagging_limits():
    def bad(tags):
        err("InvalidTag", s3.put_object_tagging, Bucket=B, Key="k",
            Tagging={"TagSet": tags})
    bad([{"Key": "k%d" % i, "Value": "v"} for i in range(11)])
    bad([{"Key": "x" * 129, "Value": "v"}])
    bad([{"Key": "x", "Value": "v" * 257}])
    bad([{"Key": "x", "Value": "1"}, {"Key": "x", "Value": "2"}])
    s3.put_object_tagging(Bucket=B, Key="k", Tagging={"TagSet": [
        {"Key": "x" * 128, "Value": "v" * 256}]})
    s3.delete_object_tagging(Bucket=B, Key="k")
    err("NoSuchKey", s3.get_object_tagging, Bucket=B, Key="nope")
    same("k")


@case
def tagging_header_put_copy_multipart():
    s3.put_object(Bucket=B, Key="t1", Body=b"x", Tagging="a=1&b=two%20w")
    t = s3.get_object_tagging(Bucket=B, Key="t1")["TagSet"]
    assert t == [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "two w"}]
    r = s3.get_object(Bucket=B, Key="t1")
    assert r["TagCount"] == 2, r
    s3.copy_object(Bucket=B, Key="t2", CopySource={"Bucket": B, "Key": "t1"})
    assert len(s3.get_object_tagging(Bucket=B, Key="t2")["TagSet"]) == 2
    s3.copy_object(Bucket=B, Key="t3", CopySource={"Bucket": B, "Key": "t1"},
                   TaggingDirective="REPLACE", Tagging="c=3")
    assert s3.get_object_tagging(Bucket=B, Key="t3")["TagSet"] == [
        {"Key": "c", "Value": "3"}]
    u = s3.create_multipart_upload(Bucket=B, Key="t4", Tagging="m=p")
    e = s3.upload_part(Bucket=B, Key="t4", UploadId=u["UploadId"],
                       PartNumber=1, Body=b"y" * 10)["ETag"]
    s3.complete_multipart_upload(
        Bucket=B, Key="t4", UploadId=u["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    assert s3.get_object_tagging(Bucket=B, Key="t4")["TagSet"] == [
        {"Key": "m", "Value": "p"}]
    err("InvalidTag", s3.put_object, Bucket=B, Key="t5", Body=b"x",
        Tagging="&".join("k%d=v" % i for i in range(11)))
    try:
        s3.head_object(Bucket=B, Key="t5")
        raise AssertionError("refused PUT stored t5")
    except ClientError as ex:
        assert ex.response["Error"]["Code"] == "404"


@case
def bucket_tagging():
    err("NoSuchTagSet", s3.get_bucket_tagging, Bucket=B)
    s3.put_bucket_tagging(Bucket=B, Tagging={"TagSet": [
        {"Key": "team", "Value": "s"}]})
    assert s3.get_bucket_tagging(Bucket=B)["TagSet"] == [
        {"Key": "team", "Value": "s"}]
    s3.delete_bucket_tagging(Bucket=B)
    err("NoSuchTagSet", s3.get_bucket_tagging, Bucket=B)

# ----------------------------------------------------------------- ACLs


def grants(acl):
    out = []
    for g in acl["Grants"]:
        gr = g["Grantee"]
        out.append((gr.get("ID") or gr.get("URI").rsplit("/", 1)[1],
                    g["Permission"]))
    return sorted(out)


@case
def acl_default_and_owner():
    a = s3.get_object_acl(Bucket=B, Key="k")
    assert a["Owner"]["ID"] == ALICE, a["Owner"]
    assert grants(a) == [(ALICE, "FULL_CONTROL")], grants(a)
    lb = s3.list_buckets()
    assert lb["Owner"]["ID"] == ALICE
    a = s3.get_bucket_acl(Bucket=B)
    assert a["Owner"]["ID"] == ALICE and grants(a) == [
        (ALICE, "FULL_CONTROL")], a


@case
def acl_canned_public_read_anonymous():
    s3.put_object(Bucket=B, Key="pub", Body=DATA, ACL="public-read")
    assert grants(s3.get_object_acl(Bucket=B, Key="pub")) == [
        ("AllUsers", "READ"), (ALICE, "FULL_CONTROL")]
    st, _, b = anon("GET", "/%s/pub" % B)
    assert st == 200 and b == DATA, (st, b[:200])
    st, _, b = anon("GET", "/%s/k" % B)
    assert st == 403 and code_of(b) == "AccessDenied", (st, b[:200])
    st, _, b = anon("PUT", "/%s/pub" % B, body=b"evil")
    assert st == 403, (st, b[:200])
    st, _, b = anon("DELETE", "/%s/pub" % B)
    assert st == 403, st
    st, _, b = anon("GET", "/%s" % B)
    assert st == 403, st
    st, _, b = anon("PUT", "/subres-anon-made")
    assert st == 403, st
    assert not exists("subres-anon-made")
    assert obj("pub") == DATA


@case
def acl_public_read_bucket_listing():
    fresh("subres-pubb")
    s3.put_bucket_acl(Bucket="subres-pubb", ACL="public-read")
    s3.put_object(Bucket="subres-pubb", Key="a", Body=b"1")
    st, _, b = anon("GET", "/subres-pubb")
    assert st == 200 and b"<Key>a</Key>" in b, (st, b[:300])
    st, _, b = anon("GET", "/subres-pubb/a")
    assert st == 403, st   # the object itself is private
    assert s3b.list_objects_v2(Bucket="subres-pubb")["KeyCount"] == 1
    err("AccessDenied", s3b.put_object, Bucket="subres-pubb", Key="b",
        Body=b"2")


@case
def acl_grants_to_user():
    s3.put_object(Bucket=B, Key="g", Body=DATA)
    err("AccessDenied", s3b.get_object, Bucket=B, Key="g")
    s3.put_object_acl(Bucket=B, Key="g", GrantRead='id="%s"' % BOB)
    assert s3b.get_object(Bucket=B, Key="g")["Body"].read() == DATA
    err("AccessDenied", s3b.get_object_acl, Bucket=B, Key="g")
    err("AccessDenied", s3b.put_object, Bucket=B, Key="g", Body=b"x")
    own = s3.get_object_acl(Bucket=B, Key="g")["Owner"]
    s3.put_object_acl(Bucket=B, Key="g", AccessControlPolicy={
        "Owner": own, "Grants": [
            {"Grantee": {"Type": "CanonicalUser", "ID": ALICE},
             "Permission": "FULL_CONTROL"},
            {"Grantee": {"Type": "CanonicalUser", "ID": BOB},
             "Permission": "READ_ACP"}]})
    err("AccessDenied", s3b.get_object, Bucket=B, Key="g")
    assert grants(s3b.get_object_acl(Bucket=B, Key="g")) == [
        (ALICE, "FULL_CONTROL"), (BOB, "READ_ACP")]
    err("MalformedACLError", s3.put_object_acl, Bucket=B, Key="g",
        AccessControlPolicy={"Owner": own, "Grants": [
            {"Grantee": {"Type": "CanonicalUser", "ID": BOB},
             "Permission": "EVERYTHING"}]})
    err("InvalidArgument", s3.put_object, Bucket=B, Key="g2", Body=b"x",
        ACL="no-such-acl")
    same("g")


@case
def acl_bucket_write_grant():
    fresh("subres-wr")
    s3.put_bucket_acl(Bucket="subres-wr", GrantWrite='id="%s"' % BOB,
                      GrantFullControl='id="%s"' % ALICE)
    s3b.put_object(Bucket="subres-wr", Key="fromb", Body=b"b")
    a = s3b.get_object_acl(Bucket="subres-wr", Key="fromb")
    assert a["Owner"]["ID"] == BOB, a["Owner"]
    # the bucket owner may not read an object another user owns (as S3:
    # the object's ACL grants it nothing), but deletes it
    err("AccessDenied", s3.get_object, Bucket="subres-wr", Key="fromb")
    s3b.put_object_acl(Bucket="subres-wr", Key="fromb",
                       ACL="bucket-owner-read")
    assert obj("fromb", "subres-wr") == b"b"
    s3.delete_object(Bucket="subres-wr", Key="fromb")
    err("AccessDenied", s3b.list_objects_v2, Bucket="subres-wr")


@case
def ownership_controls():
    fresh("subres-own")
    err("OwnershipControlsNotFoundError", s3.get_bucket_ownership_controls,
        Bucket="subres-own")
    s3.put_bucket_ownership_controls(Bucket="subres-own", OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    r = s3.get_bucket_ownership_controls(Bucket="subres-own")
    assert r["OwnershipControls"]["Rules"][0]["ObjectOwnership"] == \
        "BucketOwnerEnforced", r
    err("AccessControlListNotSupported", s3.put_object, Bucket="subres-own",
        Key="x", Body=b"x", ACL="public-read")
    s3.put_object(Bucket="subres-own", Key="x", Body=b"x",
                  ACL="bucket-owner-full-control")
    err("AccessControlListNotSupported", s3.put_bucket_acl,
        Bucket="subres-own", ACL="public-read")
    s3.delete_bucket_ownership_controls(Bucket="subres-own")
    err("OwnershipControlsNotFoundError", s3.get_bucket_ownership_controls,
        Bucket="subres-own")
    s3.put_object(Bucket="subres-own", Key="y", Body=b"y", ACL="public-read")


@case
def anonymous_never_owns():
    st, _, b = anon("GET", "/")
    assert st == 403, st
    fresh("subres-prw")
    s3.put_bucket_acl(Bucket="subres-prw", ACL="public-read-write")
    st, _, b = anon("PUT", "/subres-prw/anon", body=b"hello")
    assert st == 200, (st, b[:200])
    a = s3.get_object_acl(Bucket="subres-prw", Key="anon")
    assert a["Owner"]["ID"] == ALICE, a["Owner"]
    st, _, b = anon("PUT", "/subres-prw", "acl", b"")
    assert st == 403, st

# --------------------------------------------------------------- policy


def policy(stmts):
    return json.dumps({"Version": "2012-10-17", "Statement": stmts})


@case
def policy_roundtrip_and_malformed():
    fresh("subres-pol")
    err("NoSuchBucketPolicy", s3.get_bucket_policy, Bucket="subres-pol")
    p = policy([{"Effect": "Allow", "Principal": "*",
                 "Action": "s3:GetObject",
                 "Resource": "arn:aws:s3:::subres-pol/*"}])
    s3.put_bucket_policy(Bucket="subres-pol", Policy=p)
    assert s3.get_bucket_policy(Bucket="subres-pol")["Policy"] == p
    st = s3.get_bucket_policy_status(Bucket="subres-pol")
    assert st["PolicyStatus"]["IsPublic"] is True, st
    for bad in ("{not json", json.dumps({"Statement": []}),
                policy([{"Effect": "Maybe", "Principal": "*",
                         "Action": "s3:GetObject",
                         "Resource": "arn:aws:s3:::subres-pol/*"}]),
                policy([{"Effect": "Allow", "Principal": "*",
                         "Action": "s3:GetObject",
                         "Resource": "arn:aws:s3:::subres-pol/*",
                         "Condition": {"StringEquals":
                                       {"aws:NoSuchKey": "x"}}}]),
                policy([{"Effect": "Allow", "Principal": "*",
                         "Action": "s3:GetObject",
                         "Resource": "arn:aws:s3:::subres-pol/*",
                         "Condition": {"DateSoonish":
                                       {"s3:x-amz-acl": "x"}}}])):
        err("MalformedPolicy", s3.put_bucket_policy, Bucket="subres-pol",
            Policy=bad)
    # the refusal names the unknown key / operator
    try:
        s3.put_bucket_policy(Bucket="subres-pol", Policy=policy([
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::subres-pol/*",
             "Condition": {"StringLike": {"aws:NoSuchKey": "x"}}}]))
        raise AssertionError("unknown condition key accepted")
    except ClientError as e:
        assert "aws:NoSuchKey" in e.response["Error"]["Message"], e.response
    assert s3.get_bucket_policy(Bucket="subres-pol")["Policy"] == p
    err("AccessDenied", s3b.get_bucket_policy, Bucket="subres-pol")
    s3.delete_bucket_policy(Bucket="subres-pol")
    err("NoSuchBucketPolicy", s3.get_bucket_policy, Bucket="subres-pol")
    assert exists("subres-pol")


@case
def policy_allow_and_deny():
    b = fresh("subres-pol2")
    s3.put_object(Bucket=b, Key="open/a", Body=b"A")
    s3.put_object(Bucket=b, Key="secret/s", Body=b"S", ACL="public-read")
    err("AccessDenied", s3b.get_object, Bucket=b, Key="open/a")
    s3.put_bucket_policy(Bucket=b, Policy=policy([
        {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/%s"
                                                  % BOB]},
         "Action": ["s3:GetObject", "s3:PutObject"],
         "Resource": "arn:aws:s3:::%s/open/*" % b},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::%s/pub*" % b},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:Get*",
         "Resource": "arn:aws:s3:::%s/secret/*" % b}]))
    assert s3b.get_object(Bucket=b, Key="open/a")["Body"].read() == b"A"
    s3b.put_object(Bucket=b, Key="open/b", Body=b"B")
    err("AccessDenied", s3b.put_object, Bucket=b, Key="closed", Body=b"x")
    st, _, body = anon("GET", "/%s/open/a" % b)
    assert st == 403, st
    s3.put_object(Bucket=b, Key="pub1", Body=b"P")
    st, _, body = anon("GET", "/%s/pub1" % b)
    assert st == 200 and body == b"P", (st, body[:200])
    # an explicit Deny wins over the public-read ACL and over the owner
    st, _, body = anon("GET", "/%s/secret/s" % b)
    assert st == 403, st
    err("AccessDenied", s3.get_object, Bucket=b, Key="secret/s")
    # ... but the owner can still manage the policy
    s3.delete_bucket_policy(Bucket=b)
    assert s3.get_object(Bucket=b, Key="secret/s")["Body"].read() == b"S"



def with_headers(u, event, hdrs):
    """A client of user u sending hdrs on operation event (PutObject)."""
    c = client(u)
    c.meta.events.register("before-call.s3." + event,
                           lambda **kw: kw["params"]["headers"].update(hdrs))
    return c


@case
def policy_another_bucket_resource_never_matches():
    b = fresh("subres-pol3")
    s3.put_object(Bucket=b, Key="k", Body=b"K")
    # resources of other buckets are accepted ...
    s3.put_bucket_policy(Bucket=b, Policy=policy([
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::other-bucket/*"}]))
    # ... and never match this one
    err("AccessDenied", s3b.get_object, Bucket=b, Key="k")
    s3.put_bucket_policy(Bucket=b, Policy=policy([
        {"Effect": "Allow", "Principal": {"AWS": "*"},
         "Action": "s3:ListBucket",
         "Resource": ["arn:aws:s3:::*", "arn:aws:s3:::*/*"]}]))
    assert len(s3b.list_objects(Bucket=b)["Contents"]) == 1
    err("AccessDenied", s3b.get_object, Bucket=b, Key="k")


@case
def policy_condition_existing_object_tag():
    b = fresh("subres-pol4")
    for k, t in (("pub", "public"), ("priv", "private"), ("none", None)):
        s3.put_object(Bucket=b, Key=k, Body=k.encode())
        if t:
            s3.put_object_tagging(Bucket=b, Key=k, Tagging={"TagSet": [
                {"Key": "security", "Value": t}]})
    s3.put_bucket_policy(Bucket=b, Policy=policy([
        {"Effect": "Allow", "Principal": "*",
         "Action": ["s3:GetObject", "s3:PutObjectTagging"],
         "Resource": "arn:aws:s3:::%s/*" % b,
         "Condition": {"StringEquals":
                       {"s3:ExistingObjectTag/security": "public"}}}]))
    assert s3b.get_object(Bucket=b, Key="pub")["Body"].read() == b"pub"
    err("AccessDenied", s3b.get_object, Bucket=b, Key="priv")
    err("AccessDenied", s3b.get_object, Bucket=b, Key="none")
    s3b.put_object_tagging(Bucket=b, Key="pub", Tagging={"TagSet": [
        {"Key": "security", "Value": "private"}]})
    err("AccessDenied", s3b.get_object, Bucket=b, Key="pub")
    err("AccessDenied", s3b.put_object_tagging, Bucket=b, Key="pub",
        Tagging={"TagSet": [{"Key": "security", "Value": "public"}]})


@case
def policy_condition_request_headers():
    b = fresh("subres-pol5")
    s3.put_bucket_policy(Bucket=b, Policy=policy([
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::%s/*" % b},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::%s/*" % b,
         "Condition": {"StringLike": {"s3:x-amz-acl": "public*"}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::%s/tagged/*" % b,
         "Condition": {"StringNotEqualsIfExists":
                       {"s3:RequestObjectTag/security": "public"}}},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::%s/*" % b},
        {"Effect": "Deny", "NotPrincipal": {"AWS": ALICE},
         "NotAction": "s3:PutObject", "Resource": "arn:aws:s3:::%s/*" % b},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "NotResource": ["arn:aws:s3:::%s/tagged/*" % b,
                         "arn:aws:s3:::%s/p*" % b]}]))
    s3b.put_object(Bucket=b, Key="plain", Body=b"x")
    err("AccessDenied", with_headers(users[1], "PutObject",
                                     {"x-amz-acl": "public-read"}).put_object,
        Bucket=b, Key="public", Body=b"x")
    with_headers(users[1], "PutObject", {"x-amz-acl": "private"}).put_object(
        Bucket=b, Key="private", Body=b"x")
    # IfExists: an absent tag set counts as not "public" (denied), the
    # right tag passes, a wrong one is denied
    err("AccessDenied", s3b.put_object, Bucket=b, Key="tagged/a", Body=b"x")
    s3b.put_object(Bucket=b, Key="tagged/b", Body=b"x",
                   Tagging="security=public")
    err("AccessDenied", s3b.put_object, Bucket=b, Key="tagged/c", Body=b"x",
        Tagging="security=private")
    # NotResource: other keys are denied
    err("AccessDenied", s3b.put_object, Bucket=b, Key="q", Body=b"x")
    # NotPrincipal / NotAction: everyone but alice is denied the rest
    err("AccessDenied", s3b.get_object, Bucket=b, Key="plain")
    s3.put_object(Bucket=b, Key="pown", Body=b"o")
    assert s3.get_object(Bucket=b, Key="pown")["Body"].read() == b"o"


@case
def policy_condition_copy_source_and_numeric():
    src = fresh("subres-pol6")
    dst = fresh("subres-pol7")
    for k in ("public/foo", "private/foo"):
        s3.put_object(Bucket=src, Key=k, Body=k.encode())
    s3.put_bucket_policy(Bucket=src, Policy=policy([
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::%s/*" % src}]))
    s3.put_bucket_policy(Bucket=dst, Policy=policy([
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::%s/*" % dst,
         "Condition": {"StringLike": {"s3:x-amz-copy-source":
                                      src + "/public/*"},
                       "StringEqualsIfExists":
                       {"s3:x-amz-metadata-directive": "COPY"}}},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
         "Resource": "arn:aws:s3:::%s" % dst,
         "Condition": {"NumericLessThanEquals": {"s3:max-keys": 10},
                       "StringEquals": {"s3:prefix": "new"},
                       "Null": {"s3:delimiter": "true"},
                       "Bool": {"aws:SecureTransport": "false"},
                       "IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}]))
    s3b.copy_object(Bucket=dst, Key="new", CopySource={"Bucket": src,
                                                        "Key": "public/foo"})
    assert s3b.get_object(Bucket=dst, Key="new")["Body"].read() == \
        b"public/foo"
    err("AccessDenied", s3b.copy_object, Bucket=dst, Key="new2",
        CopySource={"Bucket": src, "Key": "private/foo"})
    err("AccessDenied", s3b.copy_object, Bucket=dst, Key="new3",
        CopySource={"Bucket": src, "Key": "public/foo"},
        MetadataDirective="REPLACE", Metadata={"a": "b"})
    assert len(s3b.list_objects(Bucket=dst, Prefix="new",
                                MaxKeys=5)["Contents"]) == 1
    err("AccessDenied", s3b.list_objects, Bucket=dst, Prefix="new",
        MaxKeys=50)
    err("AccessDenied", s3b.list_objects, Bucket=dst, Prefix="x", MaxKeys=5)
    err("AccessDenied", s3b.list_objects, Bucket=dst, Prefix="new",
        MaxKeys=5, Delimiter="/")



@case
def policy_condition_prefix_of_missing_key():
    b = fresh("subres-pol8")
    s3.put_bucket_policy(Bucket=b, Policy=policy([
        {"Effect": "Allow", "Principal": {"AWS": "*"},
         "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::%s" % b,
         "Condition": {"StringLike": {"s3:prefix": "public/*"}}}]))
    # ListBucket allowed for the key as prefix: 404, else 403
    for k, code in (("public/object", "404"), ("private/object", "403")):
        try:
            s3b.head_object(Bucket=b, Key=k)
            raise AssertionError("HEAD of a missing key succeeded")
        except ClientError as e:
            assert e.response["Error"]["Code"] == code, (k, e.response)

# ------------------------------------------- issue 26 point 4: conformance


@case
def complete_twice_same_etag():
    u = s3.create_multipart_upload(Bucket=B, Key="mp2")["UploadId"]
    e = s3.upload_part(Bucket=B, Key="mp2", UploadId=u, PartNumber=1,
                       Body=b"z" * 100)["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": e}]}
    r1 = s3.complete_multipart_upload(Bucket=B, Key="mp2", UploadId=u,
                                      MultipartUpload=parts)
    r2 = s3.complete_multipart_upload(Bucket=B, Key="mp2", UploadId=u,
                                      MultipartUpload=parts)
    assert r1["ETag"] == r2["ETag"], (r1["ETag"], r2["ETag"])
    assert obj("mp2") == b"z" * 100
    err("NoSuchUpload", s3.complete_multipart_upload, Bucket=B, Key="mp2",
        UploadId="f" * 32, MultipartUpload=parts)


@case
def empty_metadata_value_kept():
    s3.put_object(Bucket=B, Key="meta", Body=b"m",
                  Metadata={"empty": "", "full": "x"})
    m = s3.head_object(Bucket=B, Key="meta")["Metadata"]
    assert m == {"empty": "", "full": "x"}, m


@case
def list_v1_url_prefix_as_sent():
    s3.put_object(Bucket=B, Key="a b/c", Body=b"1")
    st, _, b = raw("GET", "/%s" % B, "encoding-type=url&prefix=a%20b%2F")
    assert st == 200, st
    assert b"<Prefix>a b/</Prefix>" in b, b[:400]
    assert b"<Key>a%20b/c</Key>" in b, b[:400]


@case
def list_v2_empty_continuation_token():
    st, _, b = raw("GET", "/%s" % B, "list-type=2&continuation-token=")
    assert st == 200 and b"<Key>k</Key>" in b, (st, b[:300])


@case
def bucket_names_reserved():
    for n in ("xn--abc", "xn--bucket-name", "mybucket-s3alias"):
        err("InvalidBucketName", s3.create_bucket, Bucket=n)
        assert not exists(n)


def main():
    passed = failed = 0
    run = cases
    if len(sys.argv) > 3:
        only = sys.argv[3].split(",")
        run = [f for f in cases if f.__name__ in only or
               f.__name__ == "setup"]
    for fn in run:
        try:
            fn()
            passed += 1
            print("ok   %s" % fn.__name__)
        except Exception as e:
            failed += 1
            print("FAIL %s: %s" % (fn.__name__, e))
            traceback.print_exc(limit=2)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


sys.exit(main())
