#!/usr/bin/env python3
"""s3_tls.py ENDPOINT CREDS CAFILE — boto3 over HTTPS against strata-s3.

Over HTTPS, botocore 1.36 and later send a PutObject or UploadPart body as
aws-chunked with its checksum in a trailer (x-amz-content-sha256
STREAMING-UNSIGNED-PAYLOAD-TRAILER, x-amz-trailer x-amz-checksum-crc32 by
default).  Each case below records the headers botocore sent, so the form it
used is asserted too (on an older botocore, which sends the checksum as a
header, the form is reported and the data checks still run).  Ends with
"N passed, N failed".
"""
import hashlib
import io
import sys

import boto3
import botocore
from botocore.config import Config
from boto3.s3.transfer import TransferConfig

EP, CREDS, CA = sys.argv[1:4]
_, AK, SK = [l.split() for l in open(CREDS) if l.strip() and l[0] != "#"][0]
MiB = 1 << 20
passed = failed = 0
sent = []
TRAILER_BOTO = tuple(int(x) for x in botocore.__version__.split(".")[:2]) >= (1, 36)


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def record(request, **kw):
    sent.append({k.lower(): (v.decode() if isinstance(v, bytes) else v)
                 for k, v in request.headers.items()})


s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK,
                  region_name="us-east-1", verify=CA,
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
s3.meta.events.register("before-send.s3.*", record)


def trailer_form(want_hdr):
    """The last request's form: (ok, text).  With a botocore that sends
    trailers, ok only when it did, naming want_hdr."""
    h = sent[-1] if sent else {}
    form = "%s / %s" % (h.get("x-amz-content-sha256"), h.get("x-amz-trailer"))
    if not TRAILER_BOTO:
        return True, form + " (botocore %s: header checksums)" % botocore.__version__
    return (h.get("x-amz-content-sha256") == "STREAMING-UNSIGNED-PAYLOAD-TRAILER" and
            h.get("x-amz-trailer") == want_hdr), form


B = "tls-bucket"
try:
    s3.create_bucket(Bucket=B)
    check("CreateBucket over HTTPS", True)
except Exception as e:
    check("CreateBucket over HTTPS", False, repr(e))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1)

data = bytes((i * 31) % 253 for i in range(3 * MiB + 17))
try:
    r = s3.put_object(Bucket=B, Key="crc32", Body=data)
    ok, form = trailer_form("x-amz-checksum-crc32")
    check("PutObject 3 MiB, default checksum as a trailer (%s)" % form,
          ok and r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest(), form)
    g = s3.get_object(Bucket=B, Key="crc32", ChecksumMode="ENABLED")
    body = g["Body"].read()
    check("GetObject returns the bytes and the CRC32 the trailer carried",
          body == data and g.get("ChecksumCRC32") == r.get("ChecksumCRC32") is not None,
          "%s %s" % (g.get("ChecksumCRC32"), r.get("ChecksumCRC32")))
except Exception as e:
    check("PutObject/GetObject over HTTPS with a trailer", False, repr(e))

for alg, hdr in (("CRC32C", "x-amz-checksum-crc32c"), ("CRC64NVME", "x-amz-checksum-crc64nvme")):
    try:
        r = s3.put_object(Bucket=B, Key=alg, Body=data[:MiB + 5], ChecksumAlgorithm=alg)
        ok, form = trailer_form(hdr)
        h = s3.head_object(Bucket=B, Key=alg, ChecksumMode="ENABLED")
        check("PutObject ChecksumAlgorithm=%s (%s), stored and returned" % (alg, form),
              ok and h.get("Checksum" + alg) == r.get("Checksum" + alg) is not None,
              "%s %s %s" % (form, h.get("Checksum" + alg), r.get("Checksum" + alg)))
    except botocore.exceptions.MissingDependencyException as e:
        print("SKIP %s: %s" % (alg, e))
    except Exception as e:
        check("PutObject ChecksumAlgorithm=%s" % alg, False, repr(e))

try:
    big = bytes((i * 7) % 249 for i in range(11 * MiB))
    s3.upload_fileobj(io.BytesIO(big), B, "multi",
                      Config=TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB,
                                            max_concurrency=2))
    parts = [h for h in sent[-4:] if h.get("x-amz-trailer")]
    got = s3.get_object(Bucket=B, Key="multi")["Body"].read()
    check("multipart upload (3 parts) over HTTPS, parts as trailers, read back equal",
          got == big and (not TRAILER_BOTO or len(parts) >= 3), "%d parts with trailers" % len(parts))
except Exception as e:
    check("multipart upload over HTTPS", False, repr(e))

try:
    for k in ("crc32", "CRC32C", "CRC64NVME", "multi"):
        s3.delete_object(Bucket=B, Key=k)
    s3.delete_bucket(Bucket=B)
    check("DeleteObject and DeleteBucket over HTTPS", True)
except Exception as e:
    check("DeleteObject and DeleteBucket over HTTPS", False, repr(e))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
