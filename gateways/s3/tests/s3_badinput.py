#!/usr/bin/env python3
"""s3_badinput.py ENDPOINT CREDS [ACCESS_LOG] — hostile requests to strata-s3.

Each request is built by hand over a raw socket (with its own SigV4 signer,
so that dates, signatures, lengths and bodies can be wrong on purpose); each
must get the right S3 error code and status, and after each the server must
still answer a good request.  Ends with "N passed, N failed".
"""
import datetime
import hashlib
import hmac
import re
import socket
import sys
import time
import urllib.parse

EP = sys.argv[1]
HOST, PORT = EP[len("http://"):].split(":")
PORT = int(PORT)
users = [l.split() for l in open(sys.argv[2]) if l.strip() and l[0] != "#"]
NAME, AK, SK = users[0]
passed = failed = 0


def q(s, safe="/~"):
    return urllib.parse.quote(s, safe=safe)


def sign(method, path, query, headers, payload_hash, when=None, secret=SK):
    when = when or datetime.datetime.now(datetime.timezone.utc)
    amz = when.strftime("%Y%m%dT%H%M%SZ")
    day = amz[:8]
    headers = dict(headers)
    headers["host"] = "%s:%d" % (HOST, PORT)
    headers["x-amz-date"] = amz
    headers["x-amz-content-sha256"] = payload_hash
    sh = sorted(k.lower() for k in headers)
    canon_h = "".join("%s:%s\n" % (k, str(headers[[h for h in headers if h.lower() == k][0]]).strip()) for k in sh)
    cq = "&".join("%s=%s" % (q(k, "~"), q(v, "~")) for k, v in sorted(query))
    creq = "\n".join([method, q(path), cq, canon_h, ";".join(sh), payload_hash])
    scope = "%s/us-east-1/s3/aws4_request" % day
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (day, "us-east-1", "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (AK, scope, ";".join(sh), sig)
    return headers


def raw(data, read=True, timeout=20):
    """Send raw bytes; return (status, headers text, body) of the reply."""
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    try:
        s.sendall(data)
        if not read:
            return s
        buf = b""
        while True:
            try:
                c = s.recv(65536)
            except socket.timeout:
                break
            if not c:
                break
            buf += c
            m = re.search(rb"\r\n\r\n", buf)
            if m:
                head = buf[:m.start()].decode("latin1")
                cl = re.search(r"(?i)content-length: *(\d+)", head)
                if cl and len(buf) - m.end() >= int(cl.group(1)):
                    break
        head, _, body = buf.partition(b"\r\n\r\n")
        st = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
        return st, head.decode("latin1"), body.decode("utf-8", "replace")
    finally:
        if read:
            s.close()


def request(method, path, query=(), headers=None, body=b"", when=None,
            payload_hash=None, secret=SK, cl=None, extra=b"", sign_it=True):
    headers = dict(headers or {})
    if payload_hash is None:
        payload_hash = hashlib.sha256(body).hexdigest()
    if sign_it:
        headers = sign(method, path, query, headers, payload_hash, when, secret)
    qs = "&".join("%s=%s" % (q(k, "~"), q(v, "~")) for k, v in query)
    target = q(path) + ("?" + qs if qs else "")
    if cl is not False:  # False: no Content-Length header at all
        headers["Content-Length"] = str(len(body) if cl is None else cl)
    head = "%s %s HTTP/1.1\r\n" % (method, target)
    head += "".join("%s: %s\r\n" % kv for kv in headers.items())
    head += "Connection: close\r\n\r\n"
    return raw(head.encode("utf-8", "surrogateescape") + body + extra)


def alive():
    st, _, _ = request("GET", "/")
    return st == 200


def check(name, cond, detail=""):
    global passed, failed
    if cond and alive():
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def s3_error_ok(head, body):
    """An S3 error document: Code, Message, Resource and a RequestId equal
    to the x-amz-request-id header."""
    rid = re.search(r"(?im)^x-amz-request-id: *(\S+)", head)
    xrid = re.search(r"<RequestId>(.*?)</RequestId>", body)
    return (rid is not None and xrid is not None and rid.group(1) == xrid.group(1) and
            all(re.search(r"<%s>.*?</%s>" % (t, t), body, re.S) for t in ("Code", "Message", "Resource")))


def expect(name, r, status, code):
    st, head, body = r
    got = re.search(r"<Code>(.*?)</Code>", body)
    got = got.group(1) if got else None
    check(name, st == status and got == code and s3_error_ok(head, body),
          "want %d %s, got %d %s: %s" % (status, code, st, got, body[:200]))


ACCESS_LOG = sys.argv[3] if len(sys.argv) > 3 else None


def logged(pattern, wait=3.0):
    """Is there an access log line matching pattern (regex)?  True when no
    log was given (nothing to check)."""
    if ACCESS_LOG is None:
        return True
    end = time.time() + wait
    while True:
        with open(ACCESS_LOG) as f:
            if any(re.search(pattern, l) for l in f):
                return True
        if time.time() > end:
            return False
        time.sleep(0.1)


BK = "bad-input"
st, _, body = request("PUT", "/" + BK)
check("setup bucket", st in (200, 409), body)
st, _, _ = request("PUT", "/%s/good" % BK, body=b"good data")
check("good put", st == 200)

# ---- signatures and clocks
expect("bad signature", request("GET", "/%s/good" % BK, secret="x" * 30), 403, "SignatureDoesNotMatch")
expect("signature over other body", request("PUT", "/%s/k" % BK, body=b"abc", payload_hash=hashlib.sha256(b"abd").hexdigest()),
       400, "XAmzContentSHA256Mismatch")
skew = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
expect("clock skew -1h", request("GET", "/%s/good" % BK, when=skew), 403, "RequestTimeTooSkewed")
skew = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)
expect("clock skew +2h", request("GET", "/%s/good" % BK, when=skew), 403, "RequestTimeTooSkewed")
expect("no authorization", request("GET", "/%s/good" % BK, sign_it=False), 403, "AccessDenied")
expect("malformed authorization", request("GET", "/%s/good" % BK, sign_it=False,
       headers={"Authorization": "AWS4-HMAC-SHA256 garbage", "x-amz-date": "20200101T000000Z"}), 400,
       "AuthorizationHeaderMalformed")
expect("sigv2 refused", request("GET", "/%s/good" % BK, sign_it=False,
       headers={"Authorization": "AWS %s:abc" % AK, "Date": "x"}), 403, "AccessDenied")
expect("presigned missing fields", request("GET", "/%s/good" % BK, sign_it=False,
       query=[("X-Amz-Signature", "00")]), 400, "AuthorizationQueryParametersError")

# ---- headers, XML, lengths
expect("oversized headers", request("GET", "/%s/good" % BK, headers={"x-amz-meta-big": "v" * 9000}),
       400, "RequestHeaderSectionTooLarge")
for i, bad in enumerate([b"<Delete><Object><Key>a</Key></Object>", b"not xml at all", b"<Delete></Wrong>",
                         b"<Delete><Object><Key>a&bogus;</Key></Object></Delete>", b"",
                         b"<Other><Object><Key>a</Key></Object></Other>"]):
    expect("malformed XML #%d (DeleteObjects)" % i, request("POST", "/" + BK, query=[("delete", "")], body=bad),
           400, "MalformedXML")
expect("malformed XML (CompleteMultipartUpload)", request("POST", "/%s/k" % BK, query=[("uploadId", "a" * 32)],
       body=b"<CompleteMultipartUpload><Part>"), 400, "MalformedXML")
expect("bad Content-MD5", request("PUT", "/%s/md5" % BK, body=b"abc", headers={"Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="}),
       400, "BadDigest")
# A malformed Content-Length is refused by libmicrohttpd itself while it
# parses the header, before the gateway sees the request; the gateway
# turns that refusal into S3 XML (its MHD_queue_response(), README.md,
# "Requests refused by libmicrohttpd"): 400 InvalidArgument, or 400
# EntityTooLarge for a number over 2^64 - 1.  Also asserted: nothing
# stored, the server still up, the access log line.
for bad, code in (("12abc", "InvalidArgument"), ("-1", "InvalidArgument"), ("0x10", "InvalidArgument"),
                  ("1 2", "InvalidArgument"), ("99999999999999999999999", "EntityTooLarge")):
    st, head, body = request("PUT", "/%s/cl" % BK, body=b"", cl=bad)
    st2, _, _ = request("GET", "/%s/cl" % BK)
    check("Content-Length %r: 400 %s in S3 XML, nothing stored" % (bad, code),
          st == 400 and st2 == 404 and "<Code>%s</Code>" % code in body and s3_error_ok(head, body),
          "%d %d %s" % (st, st2, body[:160]))
check("Content-Length refusals logged as MalformedRequest 400",
      logged(r" MalformedRequest - - / 400 "))
expect("PUT of an object without Content-Length: 411 MissingContentLength",
       request("PUT", "/%s/nocl" % BK, body=b"", cl=False), 411, "MissingContentLength")
st, _, _ = request("GET", "/%s/nocl" % BK)
check("no Content-Length: nothing stored", st == 404, str(st))
# Where the gateway parses a length itself it answers in S3 XML.
expect("x-amz-decoded-content-length not a number", request(
    "PUT", "/%s/chunk-cl" % BK, body=b"3\r\nabc\r\n0\r\n\r\n", payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    headers={"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": "12abc"}), 400, "InvalidArgument")
expect("x-amz-decoded-content-length larger than the chunks", request(
    "PUT", "/%s/chunk-cl" % BK, body=b"3\r\nabc\r\n0\r\n\r\n", payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    headers={"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": "10"}), 400, "IncompleteBody")
expect("x-amz-decoded-content-length smaller than the chunks", request(
    "PUT", "/%s/chunk-cl" % BK, body=b"3\r\nabc\r\n0\r\n\r\n", payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    headers={"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": "2"}), 400, "IncompleteBody")
st, _, _ = request("GET", "/%s/chunk-cl" % BK)
check("decoded-length lies: nothing visible", st == 404, str(st))
expect("object too large", request("PUT", "/%s/huge" % BK, body=b"", cl=str(6 << 30)), 400, "EntityTooLarge")
expect("1025-byte key", request("PUT", "/%s/%s" % (BK, "x" * 1025), body=b"k"), 400, "KeyTooLongError")
st, _, _ = request("PUT", "/%s/%s" % (BK, "y" * 1024), body=b"k")
check("1024-byte key accepted", st == 200)
st, _, _ = request("PUT", "/%s/../../../etc/shadow" % BK, body=b"lit")
st2, _, body = request("GET", "/%s/../../../etc/shadow" % BK)
check("path traversal key stored literally", st == 200 and st2 == 200 and body == "lit", "%d %d %s" % (st, st2, body))
expect("bad percent-encoding in path", raw(b"GET /bad-input/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
       400, "InvalidURI")
expect("invalid bucket name", request("PUT", "/Bad_Bucket"), 400, "InvalidBucketName")
expect("method not allowed", request("PATCH", "/%s/good" % BK), 405, "MethodNotAllowed")
expect("bad max-keys", request("GET", "/" + BK, query=[("max-keys", "-1")]), 400, "InvalidArgument")
expect("bad encoding-type", request("GET", "/" + BK, query=[("encoding-type", "base64")]), 400, "InvalidArgument")
expect("bad continuation token", request("GET", "/" + BK, query=[("list-type", "2"), ("continuation-token", "%%%")]),
       400, "InvalidArgument")
expect("bad part number", request("PUT", "/%s/k" % BK, query=[("partNumber", "0"), ("uploadId", "a" * 32)], body=b"x"),
       400, "InvalidArgument")
expect("unknown upload", request("PUT", "/%s/k" % BK, query=[("partNumber", "1"), ("uploadId", "a" * 32)], body=b"x"),
       404, "NoSuchUpload")
expect("copy source malformed", request("PUT", "/%s/c" % BK, headers={"x-amz-copy-source": "nokey"}), 400, "InvalidArgument")

# ---- truncated bodies and Content-Length lies: nothing visible afterwards
body = b"z" * 100000
h = sign("PUT", "/%s/trunc" % BK, (), {}, hashlib.sha256(body).hexdigest())
h["Content-Length"] = str(len(body))
s = raw(("PUT /%s/trunc HTTP/1.1\r\n" % BK + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode() +
        body[:30000], read=False)
s.close()  # the client goes away mid-body
time.sleep(0.5)
st, _, _ = request("GET", "/%s/trunc" % BK)
check("truncated body: nothing visible", st == 404, str(st))
# libmicrohttpd may see the client gone only at its next look at the
# connection (at worst the idle timeout): a bounded wait on the log line
check("truncated body: logged as PutObject 499",
      logged(r" PutObject PUT %s /trunc 499 " % BK, wait=90.0))
s = raw(("PUT /%s/lie HTTP/1.1\r\n" % BK + "".join("%s: %s\r\n" % kv for kv in
        sign("PUT", "/%s/lie" % BK, (), {}, "UNSIGNED-PAYLOAD").items()) +
        "Content-Length: 5000\r\n\r\n").encode() + b"short", read=False)
time.sleep(0.3)
s.close()
time.sleep(0.5)
st, _, _ = request("GET", "/%s/lie" % BK)
check("Content-Length larger than body: nothing visible", st == 404, str(st))
# The same lie, but the client half-closes and waits for an answer: the
# end of the stream comes before the announced length, libmicrohttpd ends
# the request as a client abort and closes without calling the gateway
# again, so no reply at all (no partial S3 reply either); logged as 499.
s = raw(("PUT /%s/lie2 HTTP/1.1\r\n" % BK + "".join("%s: %s\r\n" % kv for kv in
        sign("PUT", "/%s/lie2" % BK, (), {}, "UNSIGNED-PAYLOAD").items()) +
        "Content-Length: 5000\r\n\r\n").encode() + b"short", read=False)
s.shutdown(socket.SHUT_WR)
s.settimeout(10)
got = b""
try:
    while True:
        c = s.recv(65536)
        if not c:
            break
        got += c
except (socket.timeout, ConnectionResetError):
    pass
s.close()
st, _, _ = request("GET", "/%s/lie2" % BK)
check("Content-Length larger than body, half-close: no reply, nothing visible, 499 logged",
      got == b"" and st == 404 and logged(r" PutObject PUT %s /lie2 499 " % BK, wait=90.0), "%r %d" % (got[:100], st))
# Content-Length smaller than the body: the gateway takes Content-Length
# bytes, whose SHA-256 is not the signed one: S3 XML; the rest of the bytes
# are not a request (libmicrohttpd closes the connection after the reply).
body = b"0123456789"
h = sign("PUT", "/%s/short" % BK, (), {}, hashlib.sha256(body).hexdigest())
h["Content-Length"] = "4"
expect("Content-Length smaller than body (signed payload)",
       raw(("PUT /%s/short HTTP/1.1\r\n" % BK + "".join("%s: %s\r\n" % kv for kv in h.items()) +
            "\r\n").encode() + body), 400, "XAmzContentSHA256Mismatch")
expect("Content-Length smaller than body (Content-MD5)",
       request("PUT", "/%s/short" % BK, body=b"0123", payload_hash="UNSIGNED-PAYLOAD", extra=b"456789",
               headers={"Content-MD5": "eB5eJF1ptWaXm4bijSPyxw=="}), 400, "BadDigest")
st, _, _ = request("GET", "/%s/short" % BK)
check("Content-Length smaller than body: nothing visible", st == 404, str(st))
expect("aws-chunked malformed", request("PUT", "/%s/chunk" % BK, body=b"zz;chunk-signature=x\r\nabc\r\n",
       payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
       headers={"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": "3"}), 400, "IncompleteBody")
st, _, _ = request("PUT", "/%s/chunk-ok" % BK, body=b"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n",
                   payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                   headers={"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": "3",
                            "x-amz-trailer": "x-amz-checksum-crc32"})
st2, _, body = request("GET", "/%s/chunk-ok" % BK)
check("aws-chunked with trailer decoded", st == 200 and body == "abc", "%d %s" % (st, body))
# ---- signed aws-chunked bodies (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER])
# and trailer checksums: each chunk's signature chains from the request's.
EMPTY_SHA = hashlib.sha256(b"").hexdigest()


def signing_key(day, secret=SK):
    k = ("AWS4" + secret).encode()
    for part in (day, "us-east-1", "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def chunked_put(key, chunks, form="STREAMING-AWS4-HMAC-SHA256-PAYLOAD", trailers=(), tamper=None,
                trailer_hdr=None, drop_sig=None, bad_tsig=False, no_tsig=False):
    """PUT key with chunks (list of bytes) as a signed aws-chunked body.
    tamper: index of a chunk whose data is changed after signing; drop_sig:
    index of a chunk sent without its signature; trailers: (name, value)
    lines sent after the last chunk (signed in the -TRAILER form)."""
    signed = form.startswith("STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
    path = "/%s/%s" % (BK, key)
    hdrs = {"Content-Encoding": "aws-chunked",
            "x-amz-decoded-content-length": str(sum(len(c) for c in chunks))}
    if trailer_hdr:
        hdrs["x-amz-trailer"] = trailer_hdr
    h = sign("PUT", path, (), hdrs, form)
    amz = h["x-amz-date"]
    scope = "%s/us-east-1/s3/aws4_request" % amz[:8]
    prev = re.search(r"Signature=([0-9a-f]{64})", h["Authorization"]).group(1)
    k = signing_key(amz[:8])
    body = b""
    for i, c in enumerate(list(chunks) + [b""]):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz, scope, prev, EMPTY_SHA,
                         hashlib.sha256(c).hexdigest()])
        sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
        prev = sig
        if tamper == i:
            c = bytes([c[0] ^ 1]) + c[1:]
        ext = "" if (not signed or drop_sig == i) else ";chunk-signature=" + sig
        body += ("%x%s\r\n" % (len(c), ext)).encode() + c + (b"\r\n" if c else b"")
    canon = "".join("%s:%s\n" % t for t in trailers)
    for name, value in trailers:
        body += ("%s:%s\r\n" % (name, value)).encode()
    if signed and form.endswith("-TRAILER") and not no_tsig:
        sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz, scope, prev,
                         hashlib.sha256(canon.encode()).hexdigest()])
        tsig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
        if bad_tsig:
            tsig = tsig[:-1] + ("0" if tsig[-1] != "0" else "1")
        body += ("x-amz-trailer-signature:%s\r\n" % tsig).encode()
    body += b"\r\n"
    h["Content-Length"] = str(len(body))
    head = "PUT %s HTTP/1.1\r\n" % q(path) + "".join("%s: %s\r\n" % kv for kv in h.items())
    return raw((head + "Connection: close\r\n\r\n").encode() + body)


def b64crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    import base64
    return base64.b64encode((crc ^ 0xFFFFFFFF).to_bytes(4, "big")).decode()


def visible(key):
    st, _, body = request("GET", "/%s/%s" % (BK, key))
    return st, body


parts = [bytes((i * 7 + j) % 251 for j in range(65536)) for i in range(2)] + [b"tail-bytes"]
whole = b"".join(parts)
st, head, body = chunked_put("sc-ok", parts)
st2, _ = visible("sc-ok")
check("signed aws-chunked: 3 chunks, each signature checked, stored (ETag = MD5 of the data)",
      st == 200 and st2 == 200 and
      re.search(r'(?im)^etag: *"%s"' % hashlib.md5(whole).hexdigest(), head) is not None,
      "%d %d %s" % (st, st2, head[:300]))
expect("signed aws-chunked: a chunk's data changed after signing", chunked_put("sc-tamper", parts, tamper=1),
       403, "SignatureDoesNotMatch")
check("signed aws-chunked: changed chunk leaves nothing visible", visible("sc-tamper")[0] == 404)
expect("signed aws-chunked: a chunk without its signature", chunked_put("sc-nosig", parts, drop_sig=2),
       403, "SignatureDoesNotMatch")
expect("signed aws-chunked: the final chunk without its signature", chunked_put("sc-nosig0", parts, drop_sig=3),
       403, "SignatureDoesNotMatch")
check("signed aws-chunked: unsigned final chunk leaves nothing visible", visible("sc-nosig0")[0] == 404)
tr = ("x-amz-checksum-crc32c", b64crc32c(whole))
st, head, body = chunked_put("sc-tr", parts, form="STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
                             trailers=[tr], trailer_hdr="x-amz-checksum-crc32c")
check("signed trailer: crc32c trailer checked and returned",
      st == 200 and re.search(r"(?im)^x-amz-checksum-crc32c: *%s" % re.escape(tr[1]), head) is not None
      and visible("sc-tr")[0] == 200, "%d %s" % (st, head[:300]))
expect("signed trailer: wrong trailer signature",
       chunked_put("sc-trbad", parts, form="STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", trailers=[tr],
                   trailer_hdr="x-amz-checksum-crc32c", bad_tsig=True), 403, "SignatureDoesNotMatch")
expect("signed trailer: trailer signature missing",
       chunked_put("sc-trnone", parts, form="STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", trailers=[tr],
                   trailer_hdr="x-amz-checksum-crc32c", no_tsig=True), 403, "SignatureDoesNotMatch")
check("signed trailer: refused uploads leave nothing visible",
      visible("sc-trbad")[0] == 404 and visible("sc-trnone")[0] == 404)
expect("unsigned trailer: crc32c that does not match",
       chunked_put("ut-bad", parts, form="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                   trailers=[("x-amz-checksum-crc32c", b64crc32c(whole + b"x"))],
                   trailer_hdr="x-amz-checksum-crc32c"), 400, "BadDigest")
check("unsigned trailer: bad checksum leaves nothing visible", visible("ut-bad")[0] == 404)
expect("unsigned trailer: announced, never sent",
       chunked_put("ut-none", parts, form="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                   trailer_hdr="x-amz-checksum-crc32"), 400, "InvalidRequest")
expect("x-amz-trailer naming something that is not a checksum",
       chunked_put("ut-what", parts, form="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                   trailer_hdr="x-amz-meta-color"), 400, "InvalidRequest")
expect("x-amz-trailer without an aws-chunked body",
       request("PUT", "/%s/ut-plain" % BK, body=b"abc", headers={"x-amz-trailer": "x-amz-checksum-crc32"}),
       400, "InvalidRequest")
expect("a STREAMING-* payload form the gateway does not take",
       chunked_put("ut-ecdsa", parts, form="STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"), 400, "InvalidArgument")

st, head, _ = raw(("PUT /%s/expect HTTP/1.1\r\n" % BK + "".join("%s: %s\r\n" % kv for kv in
                  sign("PUT", "/%s/expect" % BK, (), {}, "UNSIGNED-PAYLOAD").items()) +
                  "Content-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\nhello").encode())
check("Expect: 100-continue", st in (100, 200), str(st))
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
