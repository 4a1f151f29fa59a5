#!/usr/bin/env python3
"""s3tests_report.py JUNIT_XML S3TESTS_DIR OUTDIR — counts of a ceph/s3-tests run.

Reads the JUnit XML that pytest wrote for the run of s3tests_run.sh and
prints, per feature group (from the test's name, first matching rule of
GROUPS below), the tests passed and failed; then the "basic" set (below);
then the totals as a last line "N passed, N failed".  Writes
OUTDIR/failures.txt (one line per failed test: group, name, first line of
the reason) and OUTDIR/counts.txt (the printed table).

A test counts as passed when its body passed: an error only in its
teardown (the suite deletes every bucket it made after each test, with
ListObjectVersions, DeleteObjects and DeleteBucket) is counted apart, in
the "teardown errors" column, and listed in failures.txt as TEARDOWN.  A
failure or an error in the body or the set-up, or a timeout, is a failure.
Skipped tests are counted apart (the suite skips a few itself).

The basic set ("the suite's basic object and bucket tests"): tests of
test_s3.py whose name starts with test_bucket_ or test_object_, that carry
no feature marker (only fails_on_* markers) and not fails_on_aws
(behaviour AWS S3 does not have), less test_object_lock_* (object lock, a
feature the gateway does not claim, has no marker in test_s3.py).  Markers are read from the source of
test_s3.py: the @pytest.mark lines right above each def.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

# (group, regex on the test name); first match wins.
GROUPS = [
    ("logging", r"logging"),
    ("object-lock", r"object_lock|retention|legal_hold"),
    ("encryption", r"encrypt|sse_|_sse|kms"),
    ("post-object", r"post_object"),
    ("public-block", r"public_block|block_public|ignore_public|policy_status"),
    ("lifecycle", r"lifecycle"),
    ("cors", r"cors"),
    ("policy", r"policy|_condition"),
    ("acl", r"acl|grant|_access_bucket"),
    ("ownership", r"ownership"),
    ("versioning", r"version|delete_marker"),
    ("tagging", r"tagging|_tags|_tag_"),
    ("headers", r"^test_headers\."),
    ("presign/auth", r"presign|auth|signature|anon|x_amz_expires|expires"),
    ("checksum", r"checksum"),
    ("multipart", r"multipart|_upload|abort"),
    ("copy", r"copy"),
    ("conditional", r"conditional|if_match|ifmatch|if_none|ifnonematch|"
                    r"ifmodified|ifunmodified"),
    ("list", r"list|_prefix|delimiter|_marker|maxkeys|encoding_basic|"
             r"continuationtoken|startafter|fetchowner|key_count"),
    ("bucket", r"bucket"),
    ("object", r"object|ranged|atomic|put|get|head|delete|100_continue"),
    ("other", r""),
]

# Groups of features the gateway does not claim (marked in the table).
UNCLAIMED = {"logging", "object-lock", "encryption", "post-object",
             "public-block"}


def group_of(name):
    for g, rx in GROUPS:
        if re.search(rx, name):
            return g
    return "other"


def markers(path):
    """test name -> list of its pytest markers, from the module source."""
    out, pend = {}, []
    with open(path) as f:
        for line in f:
            m = re.match(r"@pytest\.mark\.(\w+)", line)
            if m:
                pend.append(m.group(1))
                continue
            m = re.match(r"def (test_\w+)", line)
            if m:
                out[m.group(1)] = pend
            if line.strip() and not line.lstrip().startswith("#"):
                pend = []
    return out


def basic(mk):
    """The basic object and bucket tests (module docstring)."""
    return {t for t, ms in mk.items()
            if t.startswith(("test_bucket_", "test_object_"))
            and not t.startswith("test_object_lock_")
            and all(x.startswith("fails_on_") for x in ms)
            and "fails_on_aws" not in ms}


def outcome(tc):
    """'pass', 'fail', 'skip' and the teardown error text or None."""
    res, td = "pass", None
    for ch in tc:
        msg = (ch.get("message") or ch.text or "").strip()
        if ch.tag == "failure":
            res = "fail:" + msg
        elif ch.tag == "error":
            if msg.startswith("failed on teardown"):
                td = msg
            elif not res.startswith("fail"):
                res = "fail:" + msg
        elif ch.tag == "skipped" and res == "pass":
            res = "skip"
    return res, td


def first_line(s, n=160):
    s = s.split("\n")[0]
    return s if len(s) <= n else s[:n] + "..."


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: s3tests_report.py JUNIT_XML S3TESTS_DIR OUTDIR")
    xml, sdir, odir = sys.argv[1:]
    mk = markers(os.path.join(sdir, "s3tests/functional/test_s3.py"))
    bset = basic(mk)
    root = ET.parse(xml).getroot()
    rows = {}   # group -> [pass, fail, skip, teardown]
    bas = [0, 0, 0, 0]
    fails, ran_basic = [], set()
    for tc in root.iter("testcase"):
        name = tc.get("name").split("[")[0]
        mod = tc.get("classname", "").rsplit(".", 1)[-1]
        key = name if mod == "test_s3" else mod + "." + name
        g = group_of(key)
        res, td = outcome(tc)
        r = rows.setdefault(g, [0, 0, 0, 0])
        i = {"pass": 0, "skip": 2}.get(res, 1)
        r[i] += 1
        if td is not None:
            r[3] += 1
        if mod == "test_s3" and name in bset:
            ran_basic.add(name)
            bas[i] += 1
            if td is not None:
                bas[3] += 1
        if i == 1:
            fails.append("%-12s %s  %s" % (g, key, first_line(res[5:])))
        if td is not None:
            fails.append("%-12s %s  TEARDOWN %s" % (g, key, first_line(td)))
    lines = ["%-14s %6s %6s %6s %9s" % ("group", "passed", "failed",
                                         "skipped", "teardown")]
    tot = [0, 0, 0, 0]
    for g, _ in GROUPS:
        if g not in rows:
            continue
        r = rows[g]
        tot = [a + b for a, b in zip(tot, r)]
        lines.append("%-14s %6d %6d %6d %9d%s" % (
            g, *r, "   (not claimed)" if g in UNCLAIMED else ""))
    lines.append("%-14s %6d %6d %6d %9d" % ("total", *tot))
    lines.append("%-14s %6d %6d %6d %9d   (%d of the %d basic tests ran)"
                 % ("basic", *bas, len(ran_basic), len(bset)))
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(odir, "counts.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(odir, "failures.txt"), "w") as f:
        f.write("\n".join(sorted(fails)) + ("\n" if fails else ""))
    print("%d passed, %d failed" % (tot[0], tot[1]))


if __name__ == "__main__":
    main()
