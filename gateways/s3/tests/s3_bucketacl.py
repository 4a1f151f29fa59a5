#!/usr/bin/env python3
"""s3_bucketacl.py ENDPOINT CREDS [ONLY] — ACL documents and bucket-level
behaviour of strata-s3 as ceph/s3-tests and AWS S3 expect them.

?acl documents list grants to groups first, then to users, every user
grant with its ID and DisplayName (the suite compares them in that order);
a grant to an unknown user ID is 400 InvalidArgument and to an e-mail
address 400 UnresolvableGrantByEmailAddress, changing nothing; an owner's
CreateBucket of its own bucket is 200 and changes nothing when it asks for
what the bucket has, else 409 BucketAlreadyExists (and for anyone else);
the LocationConstraint of CreateBucket is what GetBucketLocation answers;
x-amz-expected-bucket-owner that is not the owner is 403; anonymous and
other users' requests on a missing bucket are 404 NoSuchBucket;
BucketOwnerEnforced refuses ACLs; ListBuckets pages with max-buckets and
continuation-token.  Object ownership as S3: under BucketOwnerEnforced, and
under BucketOwnerPreferred for a write with bucket-owner-full-control, the
bucket owner owns what another user writes (GET ?acl, ListObjects with
fetch-owner, ListParts Owner; the writer stays the Initiator); otherwise
the writer owns it, and the bucket owner may neither read it nor its ACL
unless granted (it may still delete it); x-amz-grant-* headers give those
grants alone (no FULL_CONTROL for the owner).

Users come from CREDS (NAME AKEY SKEY lines; the first two are used).
Ends with "N passed, N failed"; exit 1 on any failure.
"""
import sys
import traceback
import urllib.error
import urllib.request

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError:
    print("FAIL s3 bucket ACLs: boto3 cannot be imported")
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
ALL = "http://acs.amazonaws.com/groups/global/AllUsers"
cases = []


def case(fn):
    cases.append(fn)
    return fn


def err(code, fn, *a, **kw):
    """fn(*a, **kw) must fail with S3 error code; returns the status."""
    try:
        fn(*a, **kw)
    except ClientError as e:
        got = e.response["Error"]["Code"]
        assert got == code, "%s: got %s (%s)" % (fn.__name__, got,
                                                 e.response["Error"])
        return e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("%s: no error, %s expected" % (fn.__name__, code))


def anon(method, path):
    req = urllib.request.Request(EP + path, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def code_of(body):
    s = body.decode(errors="replace")
    return s.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in s \
        else None


def fresh(name, c=None, **kw):
    c = c or s3
    c.create_bucket(Bucket=name, **kw)
    return name


def grants(acl):
    """The grants as (type, ID or URI, DisplayName, permission), in the
    order the gateway listed them."""
    return [(g["Grantee"]["Type"], g["Grantee"].get("ID") or
             g["Grantee"].get("URI"), g["Grantee"].get("DisplayName"),
             g["Permission"]) for g in acl["Grants"]]


def U(name, perm):
    return ("CanonicalUser", name, name, perm)


def G(perm):
    return ("Group", ALL, None, perm)


@case
def acl_groups_first_users_with_ids():
    b = fresh("bacl-prw", ACL="public-read-write")
    assert grants(s3.get_bucket_acl(Bucket=b)) == [
        G("READ"), G("WRITE"), U(ALICE, "FULL_CONTROL")], \
        grants(s3.get_bucket_acl(Bucket=b))
    s3.put_object(Bucket=b, Key="pub", Body=b"x", ACL="public-read")
    assert grants(s3.get_object_acl(Bucket=b, Key="pub")) == [
        G("READ"), U(ALICE, "FULL_CONTROL")]
    s3b.put_object(Bucket=b, Key="fromb", Body=b"y",
                   ACL="bucket-owner-read")
    assert grants(s3b.get_object_acl(Bucket=b, Key="fromb")) == [
        U(BOB, "FULL_CONTROL"), U(ALICE, "READ")]
    s3b.put_object(Bucket=b, Key="fromb2", Body=b"y",
                   ACL="bucket-owner-full-control")
    assert grants(s3b.get_object_acl(Bucket=b, Key="fromb2")) == [
        U(BOB, "FULL_CONTROL"), U(ALICE, "FULL_CONTROL")]
    # a group grant put after the owner's is still listed first
    b2 = fresh("bacl-grp")
    own = s3.get_bucket_acl(Bucket=b2)
    s3.put_bucket_acl(Bucket=b2, AccessControlPolicy={
        "Owner": own["Owner"], "Grants": own["Grants"] + [
            {"Grantee": {"Type": "Group", "URI": ALL},
             "Permission": "READ"}]})
    assert grants(s3.get_bucket_acl(Bucket=b2)) == [
        G("READ"), U(ALICE, "FULL_CONTROL")]


@case
def acl_grantee_unknown():
    b = fresh("bacl-unknown")
    before = s3.get_bucket_acl(Bucket=b)
    pol = {"Owner": before["Owner"], "Grants": before["Grants"] + [
        {"Grantee": {"Type": "CanonicalUser", "ID": "_foo"},
         "Permission": "FULL_CONTROL"}]}
    assert err("InvalidArgument", s3.put_bucket_acl, Bucket=b,
               AccessControlPolicy=pol) == 400
    assert err("InvalidArgument", s3.put_bucket_acl, Bucket=b,
               GrantRead='id="nosuchuser"') == 400
    assert err("InvalidArgument", s3.put_object, Bucket=b, Key="k",
               Body=b"k", GrantRead='id="nosuchuser"') == 400
    pol["Grants"][-1]["Grantee"] = {
        "Type": "AmazonCustomerByEmail",
        "EmailAddress": "doesnotexist@example.invalid"}
    assert err("UnresolvableGrantByEmailAddress", s3.put_bucket_acl,
               Bucket=b, AccessControlPolicy=pol) == 400
    assert err("UnresolvableGrantByEmailAddress", s3.put_bucket_acl,
               Bucket=b, GrantRead='emailAddress="a@example.invalid"') \
        == 400
    assert grants(s3.get_bucket_acl(Bucket=b)) == grants(before)
    assert "Contents" not in s3.list_objects_v2(Bucket=b)
    # a known user is granted
    s3.put_bucket_acl(Bucket=b, GrantRead='id="%s"' % BOB)
    assert U(BOB, "READ") in grants(s3.get_bucket_acl(Bucket=b))


@case
def bucket_recreate_by_owner():
    b = fresh("bacl-recreate")
    s3.put_object(Bucket=b, Key="k1", Body=b"one")
    s3.put_object(Bucket=b, Key="k2", Body=b"two")
    r = s3.create_bucket(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]
    assert keys == ["k1", "k2"], keys
    assert s3.get_object(Bucket=b, Key="k1")["Body"].read() == b"one"
    s3.create_bucket(Bucket=b, ACL="private")
    assert err("BucketAlreadyExists", s3.create_bucket, Bucket=b,
               ACL="public-read") == 409
    assert grants(s3.get_bucket_acl(Bucket=b)) == [
        U(ALICE, "FULL_CONTROL")]
    assert err("BucketAlreadyExists", s3b.create_bucket, Bucket=b) == 409
    p = fresh("bacl-recreate-pub", ACL="public-read")
    assert err("BucketAlreadyExists", s3.create_bucket, Bucket=p) == 409
    s3.create_bucket(Bucket=p, ACL="public-read")
    assert grants(s3.get_bucket_acl(Bucket=p)) == [
        G("READ"), U(ALICE, "FULL_CONTROL")]
    assert len(s3.list_objects_v2(Bucket=b)["Contents"]) == 2


@case
def bucket_location():
    b = fresh("bacl-loc", CreateBucketConfiguration={
        "LocationConstraint": "default"})
    assert s3.get_bucket_location(Bucket=b)["LocationConstraint"] == \
        "default"
    b2 = fresh("bacl-noloc")
    assert s3.get_bucket_location(Bucket=b2).get("LocationConstraint") \
        is None
    err("InvalidLocationConstraint", s3.create_bucket, Bucket="bacl-badloc",
        CreateBucketConfiguration={"LocationConstraint": "a<b"})
    assert "bacl-badloc" not in [x["Name"] for x in
                                 s3.list_buckets()["Buckets"]]


@case
def expected_bucket_owner():
    b = fresh("bacl-expect", ACL="public-read-write")
    s3.list_objects(Bucket=b, ExpectedBucketOwner=ALICE)
    assert err("AccessDenied", s3.list_objects, Bucket=b,
               ExpectedBucketOwner=ALICE + "foo") == 403
    assert err("AccessDenied", s3b.put_object, Bucket=b, Key="bar",
               Body=b"coffee", ExpectedBucketOwner=BOB) == 403
    assert "Contents" not in s3.list_objects_v2(Bucket=b)
    s3b.put_object(Bucket=b, Key="bar", Body=b"tea",
                   ExpectedBucketOwner=ALICE)


@case
def missing_bucket_is_404_for_all():
    for m in ("GET", "DELETE", "HEAD", "PUT"):
        st, body = anon(m, "/bacl-never-made/foo")
        assert st == 404, (m, st, body[:200])
        if m != "HEAD":
            assert code_of(body) == "NoSuchBucket", (m, body[:200])
    st, body = anon("GET", "/bacl-never-made")
    assert st == 404 and code_of(body) == "NoSuchBucket", (st, body[:200])
    err("NoSuchBucket", s3b.get_object, Bucket="bacl-never-made", Key="foo")
    err("NoSuchBucket", s3b.delete_object, Bucket="bacl-never-made",
        Key="foo")
    # an anonymous CreateBucket is still refused, and makes nothing
    st, body = anon("PUT", "/bacl-never-made")
    assert st == 403, (st, body[:200])
    assert "bacl-never-made" not in [x["Name"] for x in
                                     s3.list_buckets()["Buckets"]]
    st, _ = anon("GET", "/")
    assert st == 403, st


@case
def ownership_enforced():
    b = fresh("bacl-enf", ObjectOwnership="BucketOwnerEnforced")
    r = s3.get_bucket_ownership_controls(Bucket=b)
    assert r["OwnershipControls"]["Rules"] == [
        {"ObjectOwnership": "BucketOwnerEnforced"}], r
    s3.put_object(Bucket=b, Key="plain", Body=b"p")
    s3.put_object(Bucket=b, Key="bofc", Body=b"p",
                  ACL="bucket-owner-full-control")
    for acl in ("private", "public-read"):
        assert err("AccessControlListNotSupported", s3.put_object, Bucket=b,
                   Key="refused", Body=b"r", ACL=acl) == 400
    assert "refused" not in [o["Key"] for o in
                             s3.list_objects_v2(Bucket=b)["Contents"]]
    assert err("AccessControlListNotSupported", s3.put_bucket_acl, Bucket=b,
               ACL="private") == 400
    assert err("AccessControlListNotSupported", s3.put_object_acl, Bucket=b,
               Key="plain", ACL="private") == 400
    p = fresh("bacl-enf-pub", ACL="public-read")
    rules = {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert err("InvalidBucketAclWithObjectOwnership",
               s3.put_bucket_ownership_controls, Bucket=p,
               OwnershipControls=rules) == 400
    err("OwnershipControlsNotFoundError", s3.get_bucket_ownership_controls,
        Bucket=p)
    s3.put_bucket_acl(Bucket=p, ACL="private")
    s3.put_bucket_ownership_controls(Bucket=p, OwnershipControls=rules)
    assert s3.get_bucket_ownership_controls(Bucket=p)["OwnershipControls"][
        "Rules"][0]["ObjectOwnership"] == "BucketOwnerEnforced"


def open_to(b, who):
    """A bucket policy letting user who do anything in bucket b's objects
    (as s3-tests' public_bucket_policy, for one user)."""
    import json
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": who}, "Action": "s3:*",
            "Resource": ["arn:aws:s3:::%s" % b, "arn:aws:s3:::%s/*" % b]}]}))


def owner_of(c, b, k):
    o = c.get_object_acl(Bucket=b, Key=k)["Owner"]
    return o["ID"], o.get("DisplayName")


def listed_owner(c, b, k):
    for o in c.list_objects_v2(Bucket=b, FetchOwner=True)["Contents"]:
        if o["Key"] == k:
            return o["Owner"]["ID"]
    raise AssertionError("%s not listed in %s" % (k, b))


def upload_people(c, b, k, **kw):
    """(Initiator ID, Owner ID) of a new upload of k, from ListParts and
    ListMultipartUploads, which must agree; the upload is aborted."""
    u = c.create_multipart_upload(Bucket=b, Key=k, **kw)["UploadId"]
    lp = c.list_parts(Bucket=b, Key=k, UploadId=u)
    ups = [x for x in c.list_multipart_uploads(Bucket=b).get("Uploads", [])
           if x["UploadId"] == u]
    c.abort_multipart_upload(Bucket=b, Key=k, UploadId=u)
    got = (lp["Initiator"]["ID"], lp["Owner"]["ID"])
    assert len(ups) == 1 and (ups[0]["Initiator"]["ID"],
                              ups[0]["Owner"]["ID"]) == got, (got, ups)
    return got


@case
def ownership_enforced_other_writer():
    b = fresh("bacl-enf-bob", ObjectOwnership="BucketOwnerEnforced")
    open_to(b, BOB)
    s3b.put_object(Bucket=b, Key="k", Body=b"b")
    assert owner_of(s3b, b, "k") == (ALICE, ALICE)
    assert owner_of(s3, b, "k") == (ALICE, ALICE)
    assert listed_owner(s3b, b, "k") == ALICE
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"b"
    s3b.copy_object(Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "k"},
                    ACL="bucket-owner-full-control")
    assert owner_of(s3b, b, "c") == (ALICE, ALICE)
    assert upload_people(s3b, b, "m") == (BOB, ALICE)
    assert err("AccessControlListNotSupported", s3b.create_multipart_upload,
               Bucket=b, Key="m", ACL="private") == 400


@case
def ownership_preferred():
    b = fresh("bacl-pref", ObjectOwnership="BucketOwnerPreferred")
    open_to(b, BOB)
    s3b.put_object(Bucket=b, Key="mine", Body=b"b")
    s3b.put_object(Bucket=b, Key="given", Body=b"b",
                   ACL="bucket-owner-full-control")
    assert owner_of(s3b, b, "mine") == (BOB, BOB)
    assert owner_of(s3b, b, "given") == (ALICE, ALICE)
    assert listed_owner(s3, b, "mine") == BOB
    assert listed_owner(s3, b, "given") == ALICE
    assert grants(s3.get_object_acl(Bucket=b, Key="given")) == [
        U(ALICE, "FULL_CONTROL")]
    s3b.copy_object(Bucket=b, Key="cgiven", ACL="bucket-owner-full-control",
                    CopySource={"Bucket": b, "Key": "mine"})
    s3b.copy_object(Bucket=b, Key="cmine", ACL="private",
                    CopySource={"Bucket": b, "Key": "mine"})
    assert owner_of(s3b, b, "cgiven") == (ALICE, ALICE)
    assert owner_of(s3b, b, "cmine") == (BOB, BOB)
    assert upload_people(s3b, b, "m1") == (BOB, BOB)
    assert upload_people(s3b, b, "m2", ACL="bucket-owner-full-control") == \
        (BOB, ALICE)
    # the owner of a completed upload is the one named at its creation
    u = s3b.create_multipart_upload(Bucket=b, Key="mp",
                                    ACL="bucket-owner-full-control")
    e = s3b.upload_part(Bucket=b, Key="mp", UploadId=u["UploadId"],
                        PartNumber=1, Body=b"p")["ETag"]
    s3b.complete_multipart_upload(
        Bucket=b, Key="mp", UploadId=u["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    assert owner_of(s3, b, "mp") == (ALICE, ALICE)


@case
def object_owner_controls_its_acl():
    b = fresh("bacl-objown")
    s3.put_bucket_acl(Bucket=b, GrantWrite='id="%s"' % BOB,
                      GrantFullControl='id="%s"' % ALICE)
    s3b.put_object(Bucket=b, Key="kept", Body=b"b")
    s3b.put_object(Bucket=b, Key="shared", Body=b"s",
                   GrantFullControl='id="%s"' % ALICE)
    # another user's object: the bucket owner lists and deletes it, but
    # reads neither it nor its ACL without a grant (as S3)
    assert err("AccessDenied", s3.get_object_acl, Bucket=b,
               Key="kept") == 403
    assert err("AccessDenied", s3.get_object, Bucket=b, Key="kept") == 403
    assert err("AccessDenied", s3.put_object_acl, Bucket=b, Key="kept",
               ACL="public-read") == 403
    assert owner_of(s3b, b, "kept") == (BOB, BOB)
    assert grants(s3b.get_object_acl(Bucket=b, Key="kept")) == [
        U(BOB, "FULL_CONTROL")]
    assert listed_owner(s3, b, "kept") == BOB
    # grant headers are the whole ACL: the owner keeps its rights without
    # a grant of its own
    assert grants(s3.get_object_acl(Bucket=b, Key="shared")) == [
        U(ALICE, "FULL_CONTROL")]
    assert owner_of(s3, b, "shared") == (BOB, BOB)
    assert s3.get_object(Bucket=b, Key="shared")["Body"].read() == b"s"
    assert s3b.get_object(Bucket=b, Key="shared")["Body"].read() == b"s"
    assert owner_of(s3b, b, "shared") == (BOB, BOB)
    s3.delete_object(Bucket=b, Key="kept")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]] == \
        ["shared"]


@case
def list_buckets_paginated():
    fresh("bacl-page-a", s3b)
    fresh("bacl-page-b", s3b)
    fresh("bacl-page-c", s3b)
    full = [b["Name"] for b in s3b.list_buckets()["Buckets"]]
    assert len(full) >= 3 and full == sorted(full), full
    for per in (1, 2):
        got, kw = [], {}
        for _ in range(len(full) + 1):
            r = s3b.list_buckets(MaxBuckets=per, **kw)
            assert len(r["Buckets"]) <= per, r["Buckets"]
            got += [b["Name"] for b in r["Buckets"]]
            if "ContinuationToken" not in r:
                break
            kw = {"ContinuationToken": r["ContinuationToken"]}
        assert got == full, (per, got, full)
    r = s3b.list_buckets(MaxBuckets=len(full))
    assert "ContinuationToken" not in r and len(r["Buckets"]) == len(full)


def main():
    passed = failed = 0
    run = cases
    if len(sys.argv) > 3:
        only = sys.argv[3].split(",")
        run = [f for f in cases if f.__name__ in only]
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
