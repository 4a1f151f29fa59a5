#!/usr/bin/env python3
"""s3_etag.py ENDPOINT CREDS — strata-s3 with `etag: crc64` (--etag crc64).

Asserts: a single-part PUT (inline and object sizes) gets the ETag
"c64-" + 16 hex digits of the CRC64-NVMe of its bytes, the same on GET,
HEAD and in listings, with x-amz-checksum-crc64nvme stored and returned
(with x-amz-checksum-mode: ENABLED);
Content-MD5 is still verified (BadDigest naming the key, nothing stored);
CopyObject gets the copy's c64 ETag; multipart uploads keep MD5 part ETags
and the md5-of-md5s-N ETag.  Ends with "N passed, N failed".
"""
import base64
import hashlib
import os
import sys
import traceback

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3_crc  # noqa: E402

EP = sys.argv[1]
users = [l.split() for l in open(sys.argv[2]) if l.strip() and l[0] != "#"]
s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=users[0][1],
                  aws_secret_access_key=users[0][2], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                signature_version="s3v4"))
B = "etag-crc64"
MiB = 1 << 20
cases = []


def case(fn):
    cases.append(fn)
    return fn


def c64(d):
    return '"c64-%016x"' % s3_crc.crc64nvme(d)


@case
def setup():
    s3.create_bucket(Bucket=B)


@case
def single_part_etag():
    for key, d in (("small", b"0123456789"), ("empty", b""), ("big", os.urandom(3 * MiB + 5))):
        r = s3.put_object(Bucket=B, Key=key, Body=d)
        assert r["ETag"] == c64(d), (key, r["ETag"], c64(d))
        h = r["ResponseMetadata"]["HTTPHeaders"]
        assert h.get("x-amz-checksum-crc64nvme") == s3_crc.hdr64(s3_crc.crc64nvme(d)), h
        g = s3.get_object(Bucket=B, Key=key, ChecksumMode="ENABLED")
        assert g["Body"].read() == d and g["ETag"] == c64(d)
        assert g["ResponseMetadata"]["HTTPHeaders"].get("x-amz-checksum-crc64nvme") == \
            s3_crc.hdr64(s3_crc.crc64nvme(d))
        hh = s3.head_object(Bucket=B, Key=key)
        assert hh["ETag"] == c64(d) and "ChecksumCRC64NVME" not in hh, hh
        hh = s3.head_object(Bucket=B, Key=key, ChecksumMode="ENABLED")
        assert hh["ChecksumCRC64NVME"] == s3_crc.hdr64(s3_crc.crc64nvme(d)), hh
        hit = [o for o in s3.list_objects_v2(Bucket=B)["Contents"] if o["Key"] == key]
        assert hit and hit[0]["ETag"] == c64(d), hit
        assert s3.head_object(Bucket=B, Key=key, IfMatch=c64(d))["ETag"] == c64(d)


@case
def content_md5_still_checked():
    d = os.urandom(MiB + 1)
    ok = base64.b64encode(hashlib.md5(d).digest()).decode()
    r = s3.put_object(Bucket=B, Key="md5ok", Body=d, ContentMD5=ok)
    assert r["ETag"] == c64(d)
    bad = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    for key, body in (("md5bad", d), ("md5bad", b"small one")):
        try:
            s3.put_object(Bucket=B, Key=key, Body=body, ContentMD5=bad)
            raise AssertionError("a wrong Content-MD5 was taken")
        except ClientError as e:
            assert e.response["Error"]["Code"] == "BadDigest", e.response["Error"]
            assert "md5bad" in e.response["Error"]["Message"], e.response["Error"]
    try:
        s3.head_object(Bucket=B, Key="md5bad")
        raise AssertionError("md5bad stored")
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404


@case
def copy_gets_c64():
    d = s3.get_object(Bucket=B, Key="big")["Body"].read()
    r = s3.copy_object(Bucket=B, Key="big-copy", CopySource={"Bucket": B, "Key": "big"})
    assert r["CopyObjectResult"]["ETag"] == c64(d), r["CopyObjectResult"]
    g = s3.get_object(Bucket=B, Key="big-copy")
    assert g["ETag"] == c64(d) and g["Body"].read() == d


@case
def multipart_keeps_md5():
    p1, p2 = os.urandom(5 * MiB), b"last part"
    u = s3.create_multipart_upload(Bucket=B, Key="mp")["UploadId"]
    e1 = s3.upload_part(Bucket=B, Key="mp", UploadId=u, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=B, Key="mp", UploadId=u, PartNumber=2, Body=p2)["ETag"]
    assert e1 == '"%s"' % hashlib.md5(p1).hexdigest() and e2 == '"%s"' % hashlib.md5(p2).hexdigest()
    r = s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=u, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    want = hashlib.md5(hashlib.md5(p1).digest() + hashlib.md5(p2).digest()).hexdigest() + "-2"
    assert r["ETag"] == '"%s"' % want, r["ETag"]
    g = s3.get_object(Bucket=B, Key="mp", ChecksumMode="ENABLED")
    assert g["Body"].read() == p1 + p2 and g["ETag"] == '"%s"' % want
    assert "x-amz-checksum-crc64nvme" not in g["ResponseMetadata"]["HTTPHeaders"]


def main():
    passed = failed = 0
    for fn in cases:
        try:
            fn()
            passed += 1
            print("ok   etag crc64: %s" % fn.__name__)
        except Exception as e:
            failed += 1
            print("FAIL etag crc64: %s: %s" % (fn.__name__, e))
            traceback.print_exc(limit=2)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


sys.exit(main())
