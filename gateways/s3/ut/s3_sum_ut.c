/*
 * s3_sum_ut.c — unit tests of the S3 gateway's checksums (suite "s3sum"):
 * CRC64-NVMe, CRC32C and CRC32 against published check values, the
 * running form (any split of the bytes gives the same value) against a
 * bit-at-a-time reference, the folded CRC64 (carry-less multiplication)
 * against the tables, the x-amz-checksum-* header encoding, and SHA-1 /
 * SHA-256 as running sums.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <string.h>

#include "gateways/s3/s3.h"
#include "tests/ut.h"

static const char check9[] = "123456789";

/* Check values of "123456789" (the CRC catalogue's "check" field):
 * CRC-64/NVME, CRC-32C (CRC-32/ISCSI) and CRC-32 (CRC-32/ISO-HDLC). */
static void test_check_values(void)
{
	CU_ASSERT_EQUAL(s3_crc64nvme(0, check9, 9), 0xAE8B14860A799888ull);
	CU_ASSERT_EQUAL(s3_crc32c(0, check9, 9), 0xE3069283u);
	CU_ASSERT_EQUAL(s3_crc32(0, check9, 9), 0xCBF43926u);
	CU_ASSERT_EQUAL(s3_crc64nvme(0, "", 0), 0);
	CU_ASSERT_EQUAL(s3_crc32c(0, "", 0), 0);
}

/* The NVMe end-to-end protection vectors (4 KiB of 0x00, of 0xFF, and
 * the bytes 0x00..0xFF repeated), as used by Linux's crc64-rocksoft. */
static void test_nvme_vectors(void)
{
	static uint8_t b[4096];
	uint32_t i;

	memset(b, 0, sizeof b);
	CU_ASSERT_EQUAL(s3_crc64nvme(0, b, sizeof b), 0x6482D367EB22B64Eull);
	memset(b, 0xff, sizeof b);
	CU_ASSERT_EQUAL(s3_crc64nvme(0, b, sizeof b), 0xC0DDBA7302ECA3ACull);
	for (i = 0; i < sizeof b; i++)
		b[i] = (uint8_t)i;
	CU_ASSERT_EQUAL(s3_crc64nvme(0, b, sizeof b), 0x3E729F5F6750449Cull);
}

/* Bit-at-a-time CRC64-NVMe: the definition, no tables. */
static uint64_t ref_crc64(const uint8_t *p, size_t n)
{
	uint64_t c = ~0ull;
	size_t i;
	int b;

	for (i = 0; i < n; i++) {
		c ^= p[i];
		for (b = 0; b < 8; b++)
			c = c & 1 ? (c >> 1) ^ 0x9A6C9329AC4BC9B5ull : c >> 1;
	}
	return ~c;
}

/* Any length, any alignment, any split into two calls: the same value. */
static void test_running(void)
{
	static uint8_t b[1000];
	uint64_t x = 88172645463325252ull;
	size_t i, n, cut;

	for (i = 0; i < sizeof b; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (uint8_t)x;
	}
	for (n = 0; n < 80; n++)
		for (cut = 0; cut <= n; cut += 3) {
			const uint8_t *p = b + (n % 7);
			uint64_t c = s3_crc64nvme(0, p, cut);
			uint32_t c32 = s3_crc32c(0, p, cut);
			uint32_t d32 = s3_crc32(0, p, cut);

			c = s3_crc64nvme(c, p + cut, n - cut);
			c32 = s3_crc32c(c32, p + cut, n - cut);
			d32 = s3_crc32(d32, p + cut, n - cut);
			CU_ASSERT_EQUAL(c, ref_crc64(p, n));
			CU_ASSERT_EQUAL(c32, s3_crc32c(0, p, n));
			CU_ASSERT_EQUAL(d32, s3_crc32(0, p, n));
		}
	CU_ASSERT_EQUAL(s3_crc64nvme(0, b, sizeof b), ref_crc64(b, sizeof b));
}

/* The folded CRC64 (buffers of 64 bytes and more: 128-bit folding, and
 * from 256 bytes 512-bit folding where the CPU has VPCLMULQDQ) equals the
 * tables' at every length up to 2 KiB (past several 256-byte steps and
 * every tail), at every alignment mod 64, split anywhere, and over 1 MiB;
 * the 128-bit path alone (s3_crc64nvme_narrow) too. */
static void test_folding(void)
{
	static uint8_t b[(1 << 20) + 64];
	uint64_t x = 0x2545F4914F6CDD1Dull;
	size_t i, n;

	for (i = 0; i < sizeof b; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (uint8_t)x;
	}
	for (n = 0; n <= 2048; n++) {
		const uint8_t *p = b + (n % 64);
		size_t cut = (n * 7919) % (n + 1);
		uint64_t want = s3_crc64nvme_tab(0, p, n);
		uint64_t c = s3_crc64nvme(0, p, cut);
		uint64_t d = s3_crc64nvme_narrow(0, p, cut);

		CU_ASSERT_EQUAL(s3_crc64nvme(0, p, n), want);
		CU_ASSERT_EQUAL(s3_crc64nvme(c, p + cut, n - cut), want);
		CU_ASSERT_EQUAL(s3_crc64nvme_narrow(0, p, n), want);
		CU_ASSERT_EQUAL(s3_crc64nvme_narrow(d, p + cut, n - cut), want);
	}
	CU_ASSERT_EQUAL(s3_crc64nvme(0, b + 3, 1 << 20),
			s3_crc64nvme_tab(0, b + 3, 1 << 20));
	CU_ASSERT_EQUAL(s3_crc64nvme(0, b + 5, (1 << 20) + 37),
			s3_crc64nvme_narrow(0, b + 5, (1 << 20) + 37));
	CU_ASSERT_EQUAL(s3_crc64nvme_tab(0, b, 4096), ref_crc64(b, 4096));
	if (!s3_crc64nvme_wide())
		fprintf(stderr, "s3sum: this CPU has no VPCLMULQDQ/AVX-512: "
			"the 512-bit CRC64 path is not tested here\n");
}

/* Header values: base64 of the big-endian value; the running sums. */
static void test_headers(void)
{
	struct s3_sums got, want = {0};
	char b64[16];

	CU_ASSERT_EQUAL(s3_sums_init(&got, S3_SUM_MD5 | S3_SUM_CRC64NVME |
					   S3_SUM_CRC32C | S3_SUM_CRC32), 0);
	s3_sums_update(&got, check9, 4);
	s3_sums_update(&got, check9 + 4, 5);
	s3_sums_final(&got);
	s3_sum_b64(&got, S3_SUM_CRC64NVME, b64);
	CU_ASSERT_STRING_EQUAL(b64, "rosUhgp5mIg=");
	s3_sum_b64(&got, S3_SUM_CRC32C, b64);
	CU_ASSERT_STRING_EQUAL(b64, "4waSgw==");
	s3_sum_b64(&got, S3_SUM_CRC32, b64);
	CU_ASSERT_STRING_EQUAL(b64, "y/Q5Jg==");
	CU_ASSERT_EQUAL(got.s_md5v[0], 0x25); /* 25f9e794...1b624d0b */
	CU_ASSERT_EQUAL(got.s_md5v[15], 0x0b);
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_CRC64NVME, "rosUhgp5mIg=", &want),
			0);
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_CRC32C, "4waSgw==", &want), 0);
	CU_ASSERT_EQUAL(s3_sums_mismatch(&got, &want), 0);
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_CRC32, "y/Q5Jw==", &want), 0);
	CU_ASSERT_EQUAL(s3_sums_mismatch(&got, &want), S3_SUM_CRC32);
	/* malformed: not base64, wrong length for the algorithm, empty */
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_CRC32C, "rosUhgp5mIg=", &want),
			-EINVAL);
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_CRC64NVME, "4waSgw==", &want),
			-EINVAL);
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_CRC64NVME, "", &want), -EINVAL);
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_CRC32, "!!!!", &want), -EINVAL);
	CU_ASSERT_EQUAL(s3_sum_of_hdr("X-Amz-Checksum-CRC64NVME"),
			S3_SUM_CRC64NVME);
	CU_ASSERT_EQUAL(s3_sum_of_hdr("x-amz-checksum-sha1"), S3_SUM_SHA1);
	CU_ASSERT_EQUAL(s3_sum_of_hdr("x-amz-checksum-sha512"), 0);
	s3_sums_fini(&got);
}

/* SHA-1 and SHA-256 as running sums (FIPS 180 "abc" vectors, split in
 * two updates), their base64 header values, and parsing them back. */
static void test_sha(void)
{
	struct s3_sums got, want;
	char b64[S3_SUM_B64_MAX];

	CU_ASSERT_EQUAL_FATAL(s3_sums_init(&got, S3_SUM_SHA1 | S3_SUM_SHA256),
			      0);
	s3_sums_update(&got, "a", 1);
	s3_sums_update(&got, "bc", 2);
	s3_sums_final(&got);
	s3_sum_b64(&got, S3_SUM_SHA1, b64);
	CU_ASSERT_STRING_EQUAL(b64, "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
	s3_sum_b64(&got, S3_SUM_SHA256, b64);
	CU_ASSERT_STRING_EQUAL(b64,
			       "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
	memset(&want, 0, sizeof want);
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_SHA256, b64, &want), 0);
	CU_ASSERT_EQUAL(s3_sums_mismatch(&got, &want), 0);
	want.s_sha256v[31] ^= 1;
	CU_ASSERT_EQUAL(s3_sums_mismatch(&got, &want), S3_SUM_SHA256);
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_SHA256, "bad", &want), -EINVAL);
	CU_ASSERT_EQUAL(s3_sum_parse(S3_SUM_SHA1, b64, &want), -EINVAL);
	CU_ASSERT_EQUAL(s3_sum_len(S3_SUM_SHA256), 32);
	s3_sums_fini(&got);
}

int s3_ut_add(void)
{
	CU_pSuite s = CU_add_suite("s3sum", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "check_values", test_check_values) ||
	    !CU_add_test(s, "nvme_vectors", test_nvme_vectors) ||
	    !CU_add_test(s, "running", test_running) ||
	    !CU_add_test(s, "folding", test_folding) ||
	    !CU_add_test(s, "headers", test_headers) ||
	    !CU_add_test(s, "sha", test_sha))
		return -1;
	return 0;
}
