"""s3_crc.py — the S3 additional checksums in plain Python, for the tests:
CRC64-NVMe and CRC32C by table (no awscrt needed), CRC32 from zlib, and
the x-amz-checksum-* header value (base64 of the big-endian value)."""
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


def crc64nvme(b):
    c = (1 << 64) - 1
    t = _T64
    for x in b:
        c = t[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ ((1 << 64) - 1)


def crc32c(b):
    c = 0xFFFFFFFF
    t = _T32C
    for x in b:
        c = t[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc32(b):
    return zlib.crc32(b) & 0xFFFFFFFF


def hdr64(v):
    return base64.b64encode(v.to_bytes(8, "big")).decode()


def hdr32(v):
    return base64.b64encode(v.to_bytes(4, "big")).decode()


assert crc64nvme(b"123456789") == 0xAE8B14860A799888
assert crc32c(b"123456789") == 0xE3069283
