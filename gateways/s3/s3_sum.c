/*
 * s3_sum.c — the checksums of an object's bytes: the ETag's MD5 (OpenSSL),
 * and the S3 additional checksums CRC64-NVMe, CRC32C, CRC32, SHA-1 and
 * SHA-256 (OpenSSL) that clients send as x-amz-checksum-* headers (s3.h,
 * "checksums").
 *
 * CRC32C and CRC32 come from ISA-L (crc32_iscsi, crc32_gzip_refl: the
 * instructions of the CPU).  CRC64-NVMe (the "Rocksoft" polynomial of
 * NVMe's end-to-end protection: 0xAD93D23594C93659, reflected, initial
 * value and final XOR all ones) is computed here: the ISA-L of Debian 12
 * (2.30) predates crc64_rocksoft_refl.  Buffers of 64 bytes and more
 * are folded with carry-less multiplication (PCLMULQDQ, when the CPU has
 * it: x86-64 since 2010; from 256 bytes VPCLMULQDQ on 512-bit registers
 * when the CPU has it and AVX-512F/VL), the rest by slicing by eight
 * tables of 256 entries, built once (docs/performance.md has both rates beside MD5's).  The unit test
 * (gateways/s3/ut/s3_sum_ut.c) checks every algorithm against published
 * test vectors.
 */
#include <endian.h>
#include <errno.h>
#include <isa-l/crc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gateways/s3/s3.h"

/* CRC64-NVMe polynomial, bit-reflected (normal form 0xAD93D23594C93659). */
#define CRC64NVME_POLY_REFL 0x9A6C9329AC4BC9B5ull

static uint64_t crc64_tab[8][256];
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;


/* Table k maps a byte to its CRC contribution k bytes further back. */
static void crc64_tab_make(void)
{
	uint32_t i, k, b;

	for (i = 0; i < 256; i++) {
		uint64_t c = i;

		for (b = 0; b < 8; b++)
			c = c & 1 ? (c >> 1) ^ CRC64NVME_POLY_REFL : c >> 1;
		crc64_tab[0][i] = c;
	}
	for (k = 1; k < 8; k++)
		for (i = 0; i < 256; i++) {
			uint64_t c = crc64_tab[k - 1][i];

			crc64_tab[k][i] = (c >> 8) ^ crc64_tab[0][c & 0xff];
		}
}

/* The raw CRC register c run over n bytes, eight at a time (no initial
 * or final inversion). */
static uint64_t crc64_tab_run(uint64_t c, const uint8_t *p, size_t n)
{
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c ^= le64toh(v);
		c = crc64_tab[7][c & 0xff] ^ crc64_tab[6][(c >> 8) & 0xff] ^
		    crc64_tab[5][(c >> 16) & 0xff] ^
		    crc64_tab[4][(c >> 24) & 0xff] ^
		    crc64_tab[3][(c >> 32) & 0xff] ^
		    crc64_tab[2][(c >> 40) & 0xff] ^
		    crc64_tab[1][(c >> 48) & 0xff] ^ crc64_tab[0][c >> 56];
	}
	for (; n > 0; n--, p++)
		c = (c >> 8) ^ crc64_tab[0][(c ^ *p) & 0xff];
	return c;
}

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * Folding with carry-less multiplication (PCLMULQDQ), for long buffers.
 * A reflected 64-bit word w (bytes little-endian) holds the coefficient
 * of x^(63-j) in bit j.  A 16-byte block S = (lo, hi) followed by b more
 * bits of message is equivalent, modulo P, to lo*x^(b+64) + hi*x^b placed
 * b bits later; the carry-less product of two reflected words lands one
 * degree low, which the constants x^(b+63) and x^(b-1) absorb.  So
 * folding a block over b bits is two multiplications by constants, and
 * the folded block is XORed into the block b bits later.  Four blocks
 * are folded side by side over 512 bits, then into one, whose 16 bytes
 * and the tail go through the tables (no Barrett reduction needed).
 * With VPCLMULQDQ sixteen blocks (four 512-bit registers) are folded
 * side by side over 2048 bits, then as four.  One core, 1 MiB buffers
 * (tests/bench/bench_s3_sum): ~1-3 GB/s before the 128-bit path's blocks
 * were named variables (branch s3put), 31-49 GB/s now.
 */
static __m128i crc64_k2048, crc64_k512, crc64_k128;
static bool crc64_clmul, crc64_vclmul;

/* x^e mod P, reflected (bit j: coefficient of x^(63-j)). */
static uint64_t crc64_xpow_refl(uint32_t e)
{
	uint64_t r = 1, out = 0;
	uint32_t i;

	for (i = 0; i < e; i++)
		r = (r << 1) ^ (r >> 63 ? 0xAD93D23594C93659ull : 0);
	for (i = 0; i < 64; i++)
		out |= ((r >> i) & 1) << (63 - i);
	return out;
}

/* The constants that fold a block over b bits: x^(b-1), x^(b+63). */
static __m128i crc64_kfold(uint32_t b)
{
	return _mm_set_epi64x((long long)crc64_xpow_refl(b - 1),
			      (long long)crc64_xpow_refl(b + 63));
}

static void crc64_clmul_init(void)
{
	crc64_k2048 = crc64_kfold(2048);
	crc64_k512 = crc64_kfold(512);
	crc64_k128 = crc64_kfold(128);
	crc64_clmul = __builtin_cpu_supports("pclmul") &&
		      __builtin_cpu_supports("sse4.1");
	crc64_vclmul = crc64_clmul &&
		       __builtin_cpu_supports("vpclmulqdq") &&
		       __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512vl");
}

/* Block s folded over the distance of constants k, XORed into d. */
__attribute__((target("pclmul,sse4.1")))
static inline __m128i crc64_fold(__m128i s, __m128i k, __m128i d)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(s, k, 0x00),
					   _mm_clmulepi64_si128(s, k, 0x11)),
			     d);
}

/* The 64 bytes x0..x3 (the last ones folded) and the n bytes at p after
 * them: x0..x2 folded into x3, then 16-byte blocks, then the tables. */
__attribute__((target("pclmul,sse4.1")))
static uint64_t crc64_clmul_tail(__m128i x0, __m128i x1, __m128i x2,
				 __m128i x3, const uint8_t *p, size_t n)
{
	__m128i k = crc64_k128;
	uint8_t last[16];

	x1 = crc64_fold(x0, k, x1);
	x2 = crc64_fold(x1, k, x2);
	x3 = crc64_fold(x2, k, x3);
	for (; n >= 16; p += 16, n -= 16)
		x3 = crc64_fold(x3, k, _mm_loadu_si128((const __m128i *)p));
	_mm_storeu_si128((__m128i *)last, x3);
	return crc64_tab_run(crc64_tab_run(0, last, 16), p, n);
}

/* The raw register c over n >= 64 bytes, four 16-byte blocks side by
 * side.  The four are named variables, not an array: GCC -O2 kept an
 * array on the stack and made each fold wait for the previous one's
 * store (~1-3 GB/s; named, the folds of one step run in parallel). */
__attribute__((target("pclmul,sse4.1")))
static uint64_t crc64_clmul_run(uint64_t c, const uint8_t *p, size_t n)
{
	const __m128i *q = (const __m128i *)p;
	__m128i x0, x1, x2, x3, k = crc64_k512;

	x0 = _mm_xor_si128(_mm_loadu_si128(q), _mm_cvtsi64_si128((long long)c));
	x1 = _mm_loadu_si128(q + 1);
	x2 = _mm_loadu_si128(q + 2);
	x3 = _mm_loadu_si128(q + 3);
	for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
		q = (const __m128i *)p;
		x0 = crc64_fold(x0, k, _mm_loadu_si128(q));
		x1 = crc64_fold(x1, k, _mm_loadu_si128(q + 1));
		x2 = crc64_fold(x2, k, _mm_loadu_si128(q + 2));
		x3 = crc64_fold(x3, k, _mm_loadu_si128(q + 3));
	}
	return crc64_clmul_tail(x0, x1, x2, x3, p, n);
}

#define CRC64_AVX512 "pclmul,sse4.1,avx512f,avx512vl,vpclmulqdq"

/* The same fold on four 16-byte blocks at once (one per 128-bit lane). */
__attribute__((target(CRC64_AVX512)))
static inline __m512i crc64_fold4(__m512i s, __m512i k, __m512i d)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(s, k, 0x00),
					 _mm512_clmulepi64_epi128(s, k, 0x11),
					 d, 0x96); /* a ^ b ^ c */
}

/*
 * The raw register c over n >= 256 bytes with VPCLMULQDQ on 512-bit
 * registers: sixteen 16-byte blocks side by side (four registers of four
 * lanes) folded over 2048 bits, then the four registers into one over
 * 512 bits, then 64-byte steps, and its four lanes go on as the 128-bit
 * path's last four blocks.
 */
__attribute__((target(CRC64_AVX512)))
static uint64_t crc64_vclmul_run(uint64_t c, const uint8_t *p, size_t n)
{
	__m512i z0, z1, z2, z3, k = _mm512_broadcast_i32x4(crc64_k2048);

	z0 = _mm512_xor_si512(_mm512_loadu_si512(p),
			      _mm512_inserti32x4(_mm512_setzero_si512(),
					_mm_cvtsi64_si128((long long)c), 0));
	z1 = _mm512_loadu_si512(p + 64);
	z2 = _mm512_loadu_si512(p + 128);
	z3 = _mm512_loadu_si512(p + 192);
	for (p += 256, n -= 256; n >= 256; p += 256, n -= 256) {
		z0 = crc64_fold4(z0, k, _mm512_loadu_si512(p));
		z1 = crc64_fold4(z1, k, _mm512_loadu_si512(p + 64));
		z2 = crc64_fold4(z2, k, _mm512_loadu_si512(p + 128));
		z3 = crc64_fold4(z3, k, _mm512_loadu_si512(p + 192));
	}
	k = _mm512_broadcast_i32x4(crc64_k512);
	z1 = crc64_fold4(z0, k, z1);
	z2 = crc64_fold4(z1, k, z2);
	z3 = crc64_fold4(z2, k, z3);
	for (; n >= 64; p += 64, n -= 64)
		z3 = crc64_fold4(z3, k, _mm512_loadu_si512(p));
	return crc64_clmul_tail(_mm512_extracti32x4_epi32(z3, 0),
				_mm512_extracti32x4_epi32(z3, 1),
				_mm512_extracti32x4_epi32(z3, 2),
				_mm512_extracti32x4_epi32(z3, 3), p, n);
}
#endif

static void crc64_init(void)
{
	crc64_tab_make();
#if defined(__x86_64__)
	crc64_clmul_init();
#endif
}

uint64_t s3_crc64nvme(uint64_t crc, const void *buf, size_t n)
{
	pthread_once(&crc64_once, crc64_init);
#if defined(__x86_64__)
	if (crc64_vclmul && n >= 256)
		return ~crc64_vclmul_run(~crc, buf, n);
	if (crc64_clmul && n >= 64)
		return ~crc64_clmul_run(~crc, buf, n);
#endif
	return ~crc64_tab_run(~crc, buf, n);
}

/* The same with 128-bit folding only (no VPCLMULQDQ): the path of CPUs
 * without AVX-512, kept testable on those with it. */
uint64_t s3_crc64nvme_narrow(uint64_t crc, const void *buf, size_t n)
{
	pthread_once(&crc64_once, crc64_init);
#if defined(__x86_64__)
	if (crc64_clmul && n >= 64)
		return ~crc64_clmul_run(~crc, buf, n);
#endif
	return ~crc64_tab_run(~crc, buf, n);
}

bool s3_crc64nvme_wide(void)
{
	pthread_once(&crc64_once, crc64_init);
#if defined(__x86_64__)
	return crc64_vclmul;
#else
	return false;
#endif
}

/* The same without the folding: the tables only (unit test reference). */
uint64_t s3_crc64nvme_tab(uint64_t crc, const void *buf, size_t n)
{
	pthread_once(&crc64_once, crc64_init);
	return ~crc64_tab_run(~crc, buf, n);
}

uint32_t s3_crc32c(uint32_t crc, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;

	/* crc32_iscsi takes an int length: feed it in steps of 1 GiB */
	while (n > 0) {
		int step = n > (1u << 30) ? 1 << 30 : (int)n;

		c = crc32_iscsi((unsigned char *)p, step, c);
		p += step;
		n -= (size_t)step;
	}
	return ~c;
}

uint32_t s3_crc32(uint32_t crc, const void *buf, size_t n)
{
	return crc32_gzip_refl(crc, buf, n);
}

/* ----------------------------------------------- the algorithms by name */

static const struct s3_sum_alg {
	uint32_t sa_bit;
	const char *sa_hdr;  /* request / response header */
	const char *sa_name; /* as S3 names it in messages */
	uint32_t sa_len;     /* bytes of the value (big-endian) */
} sum_algs[] = {
	{S3_SUM_CRC64NVME, "x-amz-checksum-crc64nvme", "CRC64NVME", 8},
	{S3_SUM_CRC32C, "x-amz-checksum-crc32c", "CRC32C", 4},
	{S3_SUM_CRC32, "x-amz-checksum-crc32", "CRC32", 4},
	{S3_SUM_SHA1, "x-amz-checksum-sha1", "SHA1", 20},
	{S3_SUM_SHA256, "x-amz-checksum-sha256", "SHA256", 32},
};

#define SUM_NALGS (sizeof sum_algs / sizeof sum_algs[0])

const char *s3_sum_hdr(uint32_t bit)
{
	uint32_t i;

	for (i = 0; i < SUM_NALGS; i++)
		if (sum_algs[i].sa_bit == bit)
			return sum_algs[i].sa_hdr;
	return NULL;
}

const char *s3_sum_name(uint32_t bit)
{
	uint32_t i;

	for (i = 0; i < SUM_NALGS; i++)
		if (sum_algs[i].sa_bit == bit)
			return sum_algs[i].sa_name;
	return NULL;
}

/* The algorithm of header name h (case-insensitive), 0 when none. */
uint32_t s3_sum_of_hdr(const char *h)
{
	uint32_t i;

	for (i = 0; i < SUM_NALGS; i++)
		if (strcasecmp(h, sum_algs[i].sa_hdr) == 0)
			return sum_algs[i].sa_bit;
	return 0;
}

uint32_t s3_sum_len(uint32_t bit)
{
	uint32_t i;

	for (i = 0; i < SUM_NALGS; i++)
		if (sum_algs[i].sa_bit == bit)
			return sum_algs[i].sa_len;
	return 0;
}

/* Big-endian bytes of algorithm bit's value in s; their count. */
static uint32_t sum_bytes(const struct s3_sums *s, uint32_t bit,
			  uint8_t out[S3_SUM_RAW_MAX])
{
	uint64_t v = bit == S3_SUM_CRC64NVME ? s->s_crc64 :
		     bit == S3_SUM_CRC32C ? s->s_crc32c : s->s_crc32;
	uint32_t n = bit == S3_SUM_CRC64NVME ? 8 : 4, i;

	if (bit == S3_SUM_SHA1 || bit == S3_SUM_SHA256) {
		n = s3_sum_len(bit);
		memcpy(out, bit == S3_SUM_SHA1 ? s->s_sha1v : s->s_sha256v, n);
		return n;
	}
	for (i = 0; i < n; i++)
		out[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	return n;
}

uint32_t s3_sum_raw(const struct s3_sums *s, uint32_t bit, uint8_t *out)
{
	return sum_bytes(s, bit, out);
}

int s3_sum_parse(uint32_t bit, const char *b64, struct s3_sums *want)
{
	uint8_t raw[S3_SUM_B64_MAX];
	uint32_t n = s3_sum_len(bit), i;
	uint64_t v = 0;
	size_t bl = strlen(b64);

	if (n == 0 || bl == 0 || bl > 4 * ((n + 2) / 3) ||
	    s3_b64dec(b64, bl, raw) != (long)n)
		return -EINVAL;
	if (bit == S3_SUM_SHA1 || bit == S3_SUM_SHA256) {
		memcpy(bit == S3_SUM_SHA1 ? want->s_sha1v : want->s_sha256v,
		       raw, n);
		want->s_algs |= bit;
		return 0;
	}
	for (i = 0; i < n; i++)
		v = v << 8 | raw[i];
	if (bit == S3_SUM_CRC64NVME)
		want->s_crc64 = v;
	else if (bit == S3_SUM_CRC32C)
		want->s_crc32c = (uint32_t)v;
	else
		want->s_crc32 = (uint32_t)v;
	want->s_algs |= bit;
	return 0;
}

void s3_sum_b64(const struct s3_sums *s, uint32_t bit, char *out)
{
	uint8_t raw[S3_SUM_RAW_MAX];
	size_t n = s3_b64enc(raw, sum_bytes(s, bit, raw), out);

	out[n] = 0;
}

/* ------------------------------------------------------ running sums */

int s3_sums_init(struct s3_sums *s, uint32_t algs)
{
	memset(s, 0, sizeof *s);
	s->s_algs = algs;
	if (algs & S3_SUM_MD5) {
		s->s_md5 = EVP_MD_CTX_new();
		if (s->s_md5 == NULL ||
		    !EVP_DigestInit_ex(s->s_md5, EVP_md5(), NULL))
			return -ENOMEM;
	}
	if (algs & S3_SUM_SHA1) {
		s->s_sha1 = EVP_MD_CTX_new();
		if (s->s_sha1 == NULL ||
		    !EVP_DigestInit_ex(s->s_sha1, EVP_sha1(), NULL))
			return -ENOMEM;
	}
	if (algs & S3_SUM_SHA256) {
		s->s_sha256 = EVP_MD_CTX_new();
		if (s->s_sha256 == NULL ||
		    !EVP_DigestInit_ex(s->s_sha256, EVP_sha256(), NULL))
			return -ENOMEM;
	}
	return 0;
}

void s3_sums_update(struct s3_sums *s, const void *p, size_t n)
{
	if (s->s_algs & S3_SUM_MD5)
		EVP_DigestUpdate(s->s_md5, p, n);
	if (s->s_algs & S3_SUM_CRC64NVME)
		s->s_crc64 = s3_crc64nvme(s->s_crc64, p, n);
	if (s->s_algs & S3_SUM_CRC32C)
		s->s_crc32c = s3_crc32c(s->s_crc32c, p, n);
	if (s->s_algs & S3_SUM_CRC32)
		s->s_crc32 = s3_crc32(s->s_crc32, p, n);
	if (s->s_algs & S3_SUM_SHA1)
		EVP_DigestUpdate(s->s_sha1, p, n);
	if (s->s_algs & S3_SUM_SHA256)
		EVP_DigestUpdate(s->s_sha256, p, n);
}

void s3_sums_final(struct s3_sums *s)
{
	unsigned int ml = 16, sl = 32;

	if (s->s_md5_done)
		return;
	if (s->s_algs & S3_SUM_MD5)
		EVP_DigestFinal_ex(s->s_md5, s->s_md5v, &ml);
	if (s->s_algs & S3_SUM_SHA1)
		EVP_DigestFinal_ex(s->s_sha1, s->s_sha1v, &sl);
	if (s->s_algs & S3_SUM_SHA256)
		EVP_DigestFinal_ex(s->s_sha256, s->s_sha256v, &sl);
	s->s_md5_done = true;
}

uint32_t s3_sums_mismatch(const struct s3_sums *got,
			  const struct s3_sums *want)
{
	uint32_t i;

	for (i = 0; i < SUM_NALGS; i++) {
		uint32_t bit = sum_algs[i].sa_bit;
		uint8_t a[S3_SUM_RAW_MAX], b[S3_SUM_RAW_MAX];
		uint32_t n;

		if (!(want->s_algs & bit))
			continue;
		n = sum_bytes(got, bit, a);
		sum_bytes(want, bit, b);
		if (memcmp(a, b, n) != 0)
			return bit;
	}
	return 0;
}

void s3_sums_fini(struct s3_sums *s)
{
	EVP_MD_CTX_free(s->s_md5);
	EVP_MD_CTX_free(s->s_sha1);
	EVP_MD_CTX_free(s->s_sha256);
	s->s_md5 = s->s_sha1 = s->s_sha256 = NULL;
}
