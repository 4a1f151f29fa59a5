"""s3_crc.py — the S3 additional checksums for the tests: CRC64-NVMe and
CRC32C by table in plain Python (no awscrt needed; awscrt's when present,
checked against the tables at import), CRC32 from zlib, and the
x-amz-checksum-* header value (base64 of the big-endian value)."""
import base64
import zlib


def _table(poly, bits):
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t.append(c)
    return t


_T64 = _table(0x9A6C9329AC4BC9B5, 64)
_T32C = _table(0x82F63B78, 32)


def table_crc64nvme(b):
    c = (1 << 64) - 1
    t = _T64
    for x in b:
        c = t[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ ((1 << 64) - 1)


def table_crc32c(b):
    c = 0xFFFFFFFF
    t = _T32C
    for x in b:
        c = t[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


# awscrt's C functions when the Python at hand has them (the venv of
# `make deps` does: boto3 with awscrt), checked against the tables on the
# check values and a 4 KiB random buffer at import; else the tables.  The
# tables take about a second per 10 MiB: the suite's multipart checksum
# cases spent about 6 s of its 35 s in them.
crc64nvme, crc32c = table_crc64nvme, table_crc32c
try:
    from awscrt import checksums as _crt
except ImportError:
    _crt = None
if _crt is not None:
    import os as _os
    _probe = _os.urandom(4096)
    for _b in (b"123456789", b"", _probe):
        assert _crt.crc64nvme(_b) == table_crc64nvme(_b), "awscrt crc64nvme"
        assert _crt.crc32c(_b) == table_crc32c(_b), "awscrt crc32c"
    crc64nvme = _crt.crc64nvme
    crc32c = _crt.crc32c


def crc32(b):
    return zlib.crc32(b) & 0xFFFFFFFF


def hdr64(v):
    return base64.b64encode(v.to_bytes(8, "big")).decode()


def hdr32(v):
    return base64.b64encode(v.to_bytes(4, "big")).decode()


for _f64, _f32 in ((table_crc64nvme, table_crc32c), (crc64nvme, crc32c)):
    assert _f64(b"123456789") == 0xAE8B14860A799888
    assert _f32(b"123456789") == 0xE3069283
