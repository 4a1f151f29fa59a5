/*
 * bench_s3_sum.c — one core's rate of the S3 gateway's checksums, for
 * bench_s3.py: the ETag's MD5 (OpenSSL, as the gateway calls it) and the
 * gateway's own CRC64-NVMe (etag crc64), CRC32C and CRC32 (s3_sum.c).
 *
 *   bench_s3_sum SIZE
 *
 * Hashes a SIZE-byte buffer (pseudo-random, at most 64 MiB) again and again
 * for about 0.5 s per algorithm and prints one line:
 *   "md5 M crc64nvme C crc32c D crc32 E" (MiB/s each).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gateways/s3/s3.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* MiB/s of algorithm alg (one S3_SUM_*) over buf. */
static double rate(uint32_t alg, const char *buf, size_t n)
{
	double t0 = now_s(), t;
	uint64_t done = 0;
	struct s3_sums s;

	if (s3_sums_init(&s, alg) != 0)
		return 0;
	do {
		s3_sums_update(&s, buf, n);
		done += n;
		t = now_s() - t0;
	} while (t < 0.5);
	s3_sums_final(&s);
	s3_sums_fini(&s);
	return (double)done / t / (1 << 20);
}

int main(int argc, char **argv)
{
	size_t n = argc == 2 ? strtoull(argv[1], NULL, 0) : 0, i;
	char *buf;

	if (n == 0 || n > (64u << 20)) {
		fprintf(stderr, "usage: bench_s3_sum SIZE (1 .. 64 MiB)\n");
		return 2;
	}
	buf = malloc(n);
	if (buf == NULL)
		return 2;
	for (i = 0; i < n; i++)
		buf[i] = (char)(i * 2654435761u >> 13);
	printf("md5 %.0f crc64nvme %.0f crc32c %.0f crc32 %.0f\n",
	       rate(S3_SUM_MD5, buf, n), rate(S3_SUM_CRC64NVME, buf, n),
	       rate(S3_SUM_CRC32C, buf, n), rate(S3_SUM_CRC32, buf, n));
	free(buf);
	return 0;
}
