#!/usr/bin/env python3
"""s3_errbody.py ENDPOINT CREDS ACCESS_LOG — requests libmicrohttpd refuses
itself get S3 error XML.

Over raw sockets: a header section larger than the connection's memory
(one 300 KB header; 20,000 small ones) -> 400 RequestHeaderSectionTooLarge;
a request line of 300 KB -> 400 InvalidURI; a signed PUT with
Transfer-Encoding: chunked whose framing is malformed (a chunk size that is
not hex, data not followed by CRLF) -> 400 IncompleteBody, a chunk size
over 2^64 -> 400 EntityTooLarge, nothing stored; a Content-Length that is
not a number -> 400 InvalidArgument, one over 2^64 - 1 -> 400
EntityTooLarge, nothing stored.  Each reply: status,
Content-Type application/xml, the Code, a RequestId equal to
x-amz-request-id, no HTML; the connection closed; the server still
answers.  A well-formed chunked PUT is stored.  Ends with "N passed, N
failed".
"""
import datetime
import hashlib
import hmac
import re
import socket
import sys

EP = sys.argv[1]
HOST, PORT = EP[len("http://"):].split(":")
PORT = int(PORT)
users = [l.split() for l in open(sys.argv[2]) if l.strip() and l[0] != "#"]
NAME, AK, SK = users[0]
LOG = sys.argv[3]
BK = "errbody-b"
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + what)
    else:
        failed += 1
        print("FAIL " + what + (": " + str(detail)[:600] if detail else ""))


def signed(method, path, headers=(), payload="UNSIGNED-PAYLOAD"):
    """The request head (bytes) of a SigV4-signed request."""
    amz = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    day = amz[:8]
    h = dict(headers)
    h["host"] = "%s:%d" % (HOST, PORT)
    h["x-amz-date"] = amz
    h["x-amz-content-sha256"] = payload
    sh = sorted(k.lower() for k in h)
    low = {k.lower(): v for k, v in h.items()}
    canon = "".join("%s:%s\n" % (k, low[k]) for k in sh)
    creq = "\n".join([method, path, "", canon, ";".join(sh), payload])
    scope = "%s/us-east-1/s3/aws4_request" % day
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + SK).encode()
    for part in (day, "us-east-1", "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    h["Authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        AK, scope, ";".join(sh), hmac.new(k, sts.encode(), hashlib.sha256).hexdigest())
    return ("%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items()) +
            "\r\n").encode()


def raw(data, timeout=20, wait_close=True):
    """Send data; (status, head, body, closed): the first reply, and whether
    the server closed the connection after it (wait_close False: return as
    soon as the reply is whole, closed False unless it came closed; a kept
    connection otherwise costs the 5 s wait for a close that never comes)."""
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    buf, closed = b"", False
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reply may be there already
        while True:
            try:
                c = s.recv(65536)
            except ConnectionResetError:
                closed = True
                break
            except socket.timeout:
                break
            if not c:
                closed = True
                break
            buf += c
            m = re.search(rb"\r\n\r\n", buf)
            if m:
                cl = re.search(rb"(?i)\r\ncontent-length: *(\d+)", buf[:m.start()])
                if cl and len(buf) - m.end() >= int(cl.group(1)):
                    if not wait_close:
                        break
                    s.settimeout(5)  # now wait for the close
    finally:
        s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    st = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
    return st, head.decode("latin1"), body.decode("utf-8", "replace"), closed


def expect_xml(what, reply, status, code, close=True):
    st, head, body, closed = reply
    rid = re.search(r"(?i)\r\nx-amz-request-id: *(\S+)", head)
    ok = (st == status and re.search(r"(?i)\r\ncontent-type: *application/xml", head) is not None and
          "<Code>%s</Code>" % code in body and rid is not None and
          "<RequestId>%s</RequestId>" % rid.group(1) in body and "<html" not in body.lower() and
          (closed or not close))
    check(ok, "%s: %d %s in S3 XML%s" % (what, status, code, ", connection closed" if close else ""),
          (st, head[:300], body[:300], closed))


def alive(what):
    st, head, body, closed = raw(signed("GET", "/%s/good" % BK) + b"", timeout=20, wait_close=False)
    check(st == 200 and body == "good", "server answers after: " + what, (st, body[:200]))


def stored(key):
    return raw(signed("GET", "/%s/%s" % (BK, key)), wait_close=False)[0]


st = raw(signed("PUT", "/" + BK, {"Content-Length": "0"}), wait_close=False)[0]
check(st == 200, "bucket %s made" % BK, st)
st = raw(signed("PUT", "/%s/good" % BK, {"Content-Length": "4"}) + b"good", wait_close=False)[0]
check(st == 200, "object 'good' stored", st)

# ---- header sections larger than the connection's memory
expect_xml("one header of 300 KB", raw(b"GET /%s/good HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n" %
                                       (BK.encode(), b"a" * 300000)), 400, "RequestHeaderSectionTooLarge")
alive("a header of 300 KB")
expect_xml("20,000 headers", raw(b"GET /%s/good HTTP/1.1\r\nHost: x\r\n%s\r\n" % (
    BK.encode(), b"".join(b"X-H%d: v\r\n" % i for i in range(20000)))), 400, "RequestHeaderSectionTooLarge")
expect_xml("a header of 20 KB (the gateway's own 8 KiB limit)",
           raw(b"GET /%s/good HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n" % (BK.encode(), b"a" * 20000),
               timeout=5, wait_close=False), 400, "RequestHeaderSectionTooLarge", close=False)
expect_xml("a request line of 300 KB", raw(b"GET /%s/%s HTTP/1.1\r\nHost: x\r\n\r\n" % (BK.encode(), b"k" * 300000)),
           400, "InvalidURI")
alive("a request line of 300 KB")
log = open(LOG, errors="replace").read()
check(re.search(r" - MalformedRequest - - / 400 ", log) is not None,
      "access log: the refused header section as MalformedRequest 400")

# ---- Transfer-Encoding: chunked
te = {"Transfer-Encoding": "chunked"}
st, head, body, closed = raw(signed("PUT", "/%s/te-ok" % BK, te) + b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n",
                             wait_close=False)
check(st == 200 and raw(signed("GET", "/%s/te-ok" % BK), wait_close=False)[2] == "abcdefg",
      "a well-formed chunked PUT is stored", (st, body[:200]))
for key, chunks, code in (("te-hex", b"3\r\nabc\r\nzz\r\nabc\r\n0\r\n\r\n", "IncompleteBody"),
                          ("te-crlf", b"3\r\nabcX\r\n0\r\n\r\n", "IncompleteBody"),
                          ("te-big", b"3\r\nabc\r\nFFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n", "EntityTooLarge")):
    expect_xml("chunked body %r" % chunks[:24], raw(signed("PUT", "/%s/%s" % (BK, key), te) + chunks), 400, code)
    check(stored(key) == 404, "nothing stored under %s" % key)
alive("malformed chunked bodies")

# ---- a malformed or too large Content-Length (libmicrohttpd's header
# parser refuses it before the gateway's handler runs)
for key, cl, code in (("cl-alpha", "12abc", "InvalidArgument"), ("cl-neg", "-1", "InvalidArgument"),
                      ("cl-big", "99999999999999999999999", "EntityTooLarge")):
    expect_xml("Content-Length %s" % cl, raw(signed("PUT", "/%s/%s" % (BK, key), {"Content-Length": cl}) + b"abc"),
               400, code)
    check(stored(key) == 404, "nothing stored under %s" % key)
alive("malformed Content-Length")

for key in ("good", "te-ok"):
    raw(signed("DELETE", "/%s/%s" % (BK, key)), wait_close=False)
raw(signed("DELETE", "/" + BK), wait_close=False)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
