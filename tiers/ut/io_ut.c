/*
 * io_ut.c — tests of the CUnit suite "tier" for what tier.c adds around
 * every driver: the device model, tier_io_run and its bounded queues, the
 * per-device fault points and the error counter.  Registered by
 * tier_ut_add().  Timing tests assert lower bounds only (a loaded machine
 * is slower, never faster) and each stays well under 200 ms.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/errors.h"
#include "core/fault.h"
#include "tiers/tier.h"
#include "tiers/ut/tier_ut.h"

#define IUT_MIB (1ull << 20)
#define IUT_DEVS 4

/* Monotonic milliseconds, fractional. */
static double iut_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Format and open a device of tier t with store index idx. */
static struct tier_dev *iut_make_tier(char *path, size_t n,
				      enum st_tier t, uint32_t idx,
				      uint64_t size)
{
	struct tier_dev *d = NULL;

	tut_path(path, n, t, "io");
	CU_ASSERT_EQUAL_FATAL(tier_dev_format(path, t, tut_store, idx, size),
			      0);
	CU_ASSERT_EQUAL_FATAL(tier_dev_open(&d, path, t, tut_store, idx), 0);
	return d;
}

/* Format and open a flash device with store index idx. */
static struct tier_dev *iut_make(char *path, size_t n, uint32_t idx,
				 uint64_t size)
{
	return iut_make_tier(path, n, ST_TIER_FLASH, idx, size);
}

/* ---------------------------------------------------------------- model */

/* The class figures: documented magnitudes, and nothing for no tier. */
static void test_model_defaults(void)
{
	struct tier_model n, f, s, z, u;

	tier_model_default(ST_TIER_NVRAM, &n);
	tier_model_default(ST_TIER_FLASH, &f);
	tier_model_default(ST_TIER_SAS, &s);
	tier_model_default(ST_TIER_SMR, &z);
	tier_model_default(ST_TIER_NR, &u);
	CU_ASSERT(n.tm_read_lat_ns < 1000 && n.tm_write_lat_ns < 1000);
	CU_ASSERT(n.tm_read_bw >= 1000000000ull);
	CU_ASSERT(n.tm_write_bw >= 1000000000ull);
	CU_ASSERT_EQUAL(f.tm_read_lat_ns, 80000);
	CU_ASSERT_EQUAL(f.tm_write_lat_ns, 20000);
	CU_ASSERT_EQUAL(f.tm_read_bw, 2000000000ull);
	CU_ASSERT_EQUAL(f.tm_write_bw, 1000000000ull);
	CU_ASSERT(s.tm_read_lat_ns >= 4000000 && s.tm_read_lat_ns <= 8000000);
	CU_ASSERT(s.tm_write_lat_ns >= 4000000 &&
		  s.tm_write_lat_ns <= 8000000);
	CU_ASSERT_EQUAL(s.tm_read_bw, 200000000ull);
	CU_ASSERT(z.tm_read_lat_ns >= s.tm_read_lat_ns);
	CU_ASSERT(z.tm_write_bw < s.tm_write_bw && z.tm_write_bw > 0);
	CU_ASSERT_EQUAL(u.tm_read_lat_ns + u.tm_write_lat_ns +
			u.tm_sync_lat_ns + u.tm_read_bw + u.tm_write_bw, 0);
}

/* With 2 ms of write latency 8 serial writes take at least 16 ms; a sync
 * takes its latency; turning the model off stops the delays (the flag is
 * what is asserted there, not a time).  On NVRAM, whose real writes and
 * syncs take microseconds, so the bounds only hold through the model. */
static void test_model_latency(void)
{
	struct tier_model m = {.tm_write_lat_ns = 2000000,
			       .tm_sync_lat_ns = 3000000};
	uint8_t *b = tut_alloc(4096);
	struct tier_dev *d;
	char path[512];
	double t0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	d = iut_make_tier(path, sizeof path, ST_TIER_NVRAM, 7, 4 * IUT_MIB);
	CU_ASSERT_FALSE(tier_dev_model_on(d));
	tier_dev_model_set(d, &m);
	CU_ASSERT_TRUE(tier_dev_model_on(d));
	tut_fill(b, 4096, 1);
	t0 = iut_now_ms();
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(tier_dev_write(d, (uint64_t)i * 4096, b, 4096),
				0);
	CU_ASSERT(iut_now_ms() - t0 >= 16.0);
	t0 = iut_now_ms();
	CU_ASSERT_EQUAL(tier_dev_sync(d), 0);
	CU_ASSERT(iut_now_ms() - t0 >= 3.0);
	tier_dev_model_set(d, NULL);
	CU_ASSERT_FALSE(tier_dev_model_on(d));
	CU_ASSERT_EQUAL(tier_dev_write(d, 0, b, 4096), 0);
	CU_ASSERT_EQUAL(d->td_nr_writes, 9);
	tier_dev_close(d);
	free(b);
}

/* 4 MiB at 100 MB/s takes at least 41.9 ms, alone or split into two
 * concurrent requests that share the bandwidth. */
static void test_model_bandwidth(void)
{
	struct tier_model m = {.tm_write_bw = 100000000ull,
			       .tm_read_bw = 100000000ull};
	size_t len = 4 * IUT_MIB;
	uint8_t *b = tut_alloc(len), *r = tut_alloc(len);
	struct tier_io ios[2];
	struct tier_dev *d;
	char path[512];
	double t0;

	CU_ASSERT_FATAL(b != NULL && r != NULL);
	d = iut_make_tier(path, sizeof path, ST_TIER_NVRAM, 7,
			  16 * IUT_MIB);
	tier_dev_model_set(d, &m);
	tut_fill(b, len, 2);
	t0 = iut_now_ms();
	CU_ASSERT_EQUAL(tier_dev_write(d, 0, b, len), 0);
	CU_ASSERT(iut_now_ms() - t0 >= 41.0);
	for (int i = 0; i < 2; i++)
		ios[i] = (struct tier_io){.io_dev = d, .io_op = TIO_READ,
					  .io_off = (uint64_t)i * len / 2,
					  .io_buf = r + i * len / 2,
					  .io_len = len / 2};
	t0 = iut_now_ms();
	CU_ASSERT_EQUAL(tier_io_run(ios, 2), 0);
	CU_ASSERT(iut_now_ms() - t0 >= 41.0);
	CU_ASSERT_EQUAL(memcmp(b, r, len), 0);
	tier_dev_close(d);
	free(b);
	free(r);
}

/* With the model off (the default) requests run as before; many small
 * ones complete and read back.  No time is asserted: the cost of the off
 * model is one branch. */
static void test_model_off(void)
{
	uint8_t b[512], r[512];
	struct tier_dev *d;
	char path[512];
	int bad = 0;

	d = iut_make(path, sizeof path, 7, 4 * IUT_MIB);
	CU_ASSERT_FALSE(tier_dev_model_on(d));
	for (uint32_t i = 0; i < 512; i++) {
		tut_fill(b, sizeof b, i);
		if (tier_dev_write(d, (uint64_t)i * 512, b, sizeof b) != 0 ||
		    tier_dev_read(d, (uint64_t)i * 512, r, sizeof r) != 0 ||
		    memcmp(b, r, sizeof b) != 0)
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(d->td_nr_writes, 512);
	tier_dev_close(d);
}

/* ------------------------------------------------------------ tier_io_run */

#define IUT_IOS 64
#define IUT_LEN (64u << 10)

/* 64 writes spread over 4 devices run in parallel, then 64 reads bring
 * the exact bytes back; every io_rc is 0 and the counters add up. */
static void test_io_run_parallel(void)
{
	struct tier_dev *d[IUT_DEVS];
	struct tier_io ios[IUT_IOS];
	uint8_t *w = tut_alloc((size_t)IUT_IOS * IUT_LEN);
	uint8_t *r = tut_alloc((size_t)IUT_IOS * IUT_LEN);
	char path[512];

	CU_ASSERT_FATAL(w != NULL && r != NULL);
	for (uint32_t k = 0; k < IUT_DEVS; k++)
		d[k] = iut_make(path, sizeof path, k, 4 * IUT_MIB);
	tut_fill(w, (size_t)IUT_IOS * IUT_LEN, 3);
	memset(r, 0, (size_t)IUT_IOS * IUT_LEN);
	for (uint32_t i = 0; i < IUT_IOS; i++)
		ios[i] = (struct tier_io){
			.io_dev = d[i % IUT_DEVS], .io_op = TIO_WRITE,
			.io_off = (uint64_t)(i / IUT_DEVS) * IUT_LEN,
			.io_buf = w + (size_t)i * IUT_LEN, .io_len = IUT_LEN,
			.io_rc = 1};
	CU_ASSERT_EQUAL(tier_io_run(ios, IUT_IOS), 0);
	for (uint32_t i = 0; i < IUT_IOS; i++) {
		CU_ASSERT_EQUAL(ios[i].io_rc, 0);
		ios[i].io_op = TIO_READ;
		ios[i].io_buf = r + (size_t)i * IUT_LEN;
		ios[i].io_rc = 1;
	}
	CU_ASSERT_EQUAL(tier_io_run(ios, IUT_IOS), 0);
	for (uint32_t i = 0; i < IUT_IOS; i++)
		CU_ASSERT_EQUAL(ios[i].io_rc, 0);
	CU_ASSERT_EQUAL(memcmp(w, r, (size_t)IUT_IOS * IUT_LEN), 0);
	for (uint32_t k = 0; k < IUT_DEVS; k++) {
		CU_ASSERT_EQUAL(d[k]->td_nr_writes, IUT_IOS / IUT_DEVS);
		CU_ASSERT_EQUAL(d[k]->td_nr_reads, IUT_IOS / IUT_DEVS);
		tier_dev_close(d[k]);
	}
	free(w);
	free(r);
}

/* Each request carries its own rc; the call returns the rc of the lowest
 * failing index with that request's message; the others still ran. */
static void test_io_run_errors(void)
{
	uint8_t *b = tut_alloc(8 * 4096);
	struct tier_io ios[8];
	struct tier_dev *d[2];
	char path[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	d[0] = iut_make(path, sizeof path, 4, 4 * IUT_MIB);
	d[1] = iut_make(path, sizeof path, 5, 4 * IUT_MIB);
	for (uint32_t i = 0; i < 8; i++)
		ios[i] = (struct tier_io){.io_dev = d[i % 2],
					  .io_op = TIO_WRITE,
					  .io_off = (uint64_t)i * 4096,
					  .io_buf = b + i * 4096,
					  .io_len = 4096};
	ios[3].io_off = 100;
	ios[5].io_op = 9;
	ios[6].io_dev = NULL;
	err_clear();
	CU_ASSERT_EQUAL(tier_io_run(ios, 8), -EINVAL);
	CU_ASSERT(tut_msg_has(d[1]->td_path));
	CU_ASSERT(tut_msg_has("at 100"));
	CU_ASSERT_EQUAL(ios[3].io_rc, -EINVAL);
	CU_ASSERT_EQUAL(ios[5].io_rc, -EINVAL);
	CU_ASSERT_EQUAL(ios[6].io_rc, -EINVAL);
	for (uint32_t i = 0; i < 8; i++)
		if (i != 3 && i != 5 && i != 6)
			CU_ASSERT_EQUAL(ios[i].io_rc, 0);
	ios[0].io_off = 4 * IUT_MIB;
	CU_ASSERT_EQUAL(tier_io_run(ios, 1), -EINVAL);
	CU_ASSERT(tut_msg_has("leaves the data area"));
	CU_ASSERT_EQUAL(tier_io_run(ios, 0), 0);
	ios[0].io_dev = NULL;
	CU_ASSERT_EQUAL(tier_io_run(ios, 1), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_errors(d[0]) + tier_dev_errors(d[1]), 0);
	tier_dev_close(d[0]);
	tier_dev_close(d[1]);
	free(b);
}

#define IUT_SUBMITTERS 4
#define IUT_PER_CALL (3 * LIM_IOQ_DEPTH)

struct iut_submitter {
	struct tier_dev **is_devs;
	uint32_t is_id;
	int is_failures;
};

/* One submitter: IUT_PER_CALL writes of 4 KiB in one call (more than a
 * queue holds), mostly to device 0 so that its queue fills, then reads
 * them back in a second call and compares. */
static void *iut_submit_run(void *arg)
{
	struct iut_submitter *s = arg;
	size_t len = 4096, all = (size_t)IUT_PER_CALL * len;
	struct tier_io *ios = calloc(IUT_PER_CALL, sizeof *ios);
	uint8_t *w = tut_alloc(all), *r = tut_alloc(all);

	if (ios == NULL || w == NULL || r == NULL) {
		s->is_failures++;
		goto out;
	}
	tut_fill(w, all, 100 + s->is_id);
	for (uint32_t i = 0; i < IUT_PER_CALL; i++)
		ios[i] = (struct tier_io){
			.io_dev = s->is_devs[i % 4 == 3 ? 1 : 0],
			.io_op = TIO_WRITE,
			.io_off = ((uint64_t)s->is_id * IUT_PER_CALL + i) * len,
			.io_buf = w + i * len, .io_len = len};
	if (tier_io_run(ios, IUT_PER_CALL) != 0)
		s->is_failures++;
	for (uint32_t i = 0; i < IUT_PER_CALL; i++) {
		ios[i].io_op = TIO_READ;
		ios[i].io_buf = r + i * len;
	}
	if (tier_io_run(ios, IUT_PER_CALL) != 0 || memcmp(w, r, all) != 0)
		s->is_failures++;
out:
	free(ios);
	free(w);
	free(r);
	return NULL;
}

/* Several threads each submit three queues' worth at once: submitters
 * block on full queues and everything completes and reads back. */
static void test_io_queue_bound(void)
{
	struct iut_submitter s[IUT_SUBMITTERS];
	pthread_t th[IUT_SUBMITTERS];
	struct tier_dev *d[2];
	char path[512];

	d[0] = iut_make(path, sizeof path, 4, 16 * IUT_MIB);
	d[1] = iut_make(path, sizeof path, 5, 16 * IUT_MIB);
	for (uint32_t i = 0; i < IUT_SUBMITTERS; i++) {
		s[i] = (struct iut_submitter){.is_devs = d, .is_id = i};
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL,
						     iut_submit_run, &s[i]), 0);
	}
	for (uint32_t i = 0; i < IUT_SUBMITTERS; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(s[i].is_failures, 0);
	}
	CU_ASSERT_EQUAL(d[0]->td_nr_writes + d[1]->td_nr_writes,
			IUT_SUBMITTERS * IUT_PER_CALL);
	CU_ASSERT_EQUAL(d[1]->td_nr_writes,
			IUT_SUBMITTERS * IUT_PER_CALL / 4);
	tier_dev_close(d[0]);
	tier_dev_close(d[1]);
}

/* ----------------------------------------------------- per-device faults */

#ifdef STRATA_FAULT_INJECT
/* "tier.write.devN" and "tier.read.devN" fail only device N, with -EIO,
 * and count as its errors; refused requests do not count. */
static void test_fault_dev_rw(void)
{
	uint8_t b[4096];
	struct tier_dev *d7, *d8;
	char path[512];

	d7 = iut_make(path, sizeof path, 7, 4 * IUT_MIB);
	d8 = iut_make(path, sizeof path, 8, 4 * IUT_MIB);
	tut_fill(b, sizeof b, 5);
	fault_arm("tier.write.dev7", 0, 0);
	CU_ASSERT_EQUAL(tier_dev_write(d8, 0, b, sizeof b), 0);
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_write(d7, 0, b, sizeof b), -EIO);
	CU_ASSERT(tut_msg_has(d7->td_path));
	CU_ASSERT_EQUAL(tier_dev_write(d7, 4096, b, sizeof b), -EIO);
	fault_reset();
	CU_ASSERT_EQUAL(tier_dev_write(d7, 0, b, sizeof b), 0);
	fault_arm("tier.read.dev7", 0, 1);
	CU_ASSERT_EQUAL(tier_dev_read(d8, 0, b, sizeof b), 0);
	CU_ASSERT_EQUAL(tier_dev_read(d7, 0, b, sizeof b), -EIO);
	CU_ASSERT_EQUAL(tier_dev_read(d7, 0, b, sizeof b), 0);
	CU_ASSERT_EQUAL(fault_fired("tier.read.dev7"), 1);
	fault_reset();
	CU_ASSERT_EQUAL(tier_dev_write(d7, 100, b, sizeof b), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_errors(d7), 3);
	CU_ASSERT_EQUAL(d7->td_nr_errors, 3);
	CU_ASSERT_EQUAL(tier_dev_errors(d8), 0);
	CU_ASSERT_EQUAL(d7->td_nr_writes, 1);
	tier_dev_close(d7);
	tier_dev_close(d8);
}

/* "tier.short.devN": the first half reaches the device, the rest keeps
 * its old bytes, and the call fails with the short-write message. */
static void test_fault_short(void)
{
	uint8_t w[8192], r[8192], z[4096] = {0};
	struct tier_dev *d;
	char path[512];

	d = iut_make(path, sizeof path, 7, 4 * IUT_MIB);
	tut_fill(w, sizeof w, 6);
	fault_arm("tier.short.dev7", 0, 1);
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_write(d, 8192, w, sizeof w), -EIO);
	fault_reset();
	CU_ASSERT(tut_msg_has("short write of 4096 of 8192 bytes"));
	CU_ASSERT(tut_msg_has(path));
	CU_ASSERT_EQUAL(tier_dev_read(d, 8192, r, sizeof r), 0);
	CU_ASSERT_EQUAL(memcmp(r, w, 4096), 0);
	CU_ASSERT_EQUAL(memcmp(r + 4096, z, 4096), 0);
	CU_ASSERT_EQUAL(tier_dev_errors(d), 1);
	tier_dev_close(d);
}

/* "tier.flip.devN": the write succeeds and the device holds the data
 * with exactly one bit changed; the caller's buffer is untouched. */
static void test_fault_flip(void)
{
	uint8_t w[4096], keep[4096], r[4096];
	struct tier_dev *d;
	char path[512];
	int bits = 0;

	d = iut_make(path, sizeof path, 7, 4 * IUT_MIB);
	tut_fill(w, sizeof w, 7);
	memcpy(keep, w, sizeof w);
	fault_arm("tier.flip.dev7", 0, 1);
	CU_ASSERT_EQUAL(tier_dev_write(d, 0, w, sizeof w), 0);
	fault_reset();
	CU_ASSERT_EQUAL(memcmp(w, keep, sizeof w), 0);
	CU_ASSERT_EQUAL(tier_dev_read(d, 0, r, sizeof r), 0);
	for (size_t i = 0; i < sizeof r; i++)
		bits += __builtin_popcount((unsigned)(r[i] ^ w[i]));
	CU_ASSERT_EQUAL(bits, 1);
	CU_ASSERT_EQUAL(tier_dev_errors(d), 0);
	CU_ASSERT_EQUAL(d->td_nr_writes, 1);
	tier_dev_close(d);
}

/* "tier.gone.devN": every read, write and sync of device N fails, also
 * through tier_io_run, while other devices work; it counts each. */
static void test_fault_gone(void)
{
	uint8_t b[2][4096];
	struct tier_dev *d7, *d8;
	struct tier_io ios[2];
	char path[512];

	d7 = iut_make(path, sizeof path, 7, 4 * IUT_MIB);
	d8 = iut_make(path, sizeof path, 8, 4 * IUT_MIB);
	tut_fill(b, sizeof b, 8);
	fault_arm("tier.gone.dev7", 0, 0);
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_write(d7, 0, b[0], 4096), -EIO);
	CU_ASSERT(tut_msg_has("gone"));
	CU_ASSERT_EQUAL(tier_dev_read(d7, 0, b[0], 4096), -EIO);
	CU_ASSERT_EQUAL(tier_dev_sync(d7), -EIO);
	ios[0] = (struct tier_io){.io_dev = d8, .io_op = TIO_WRITE,
				  .io_buf = b[0], .io_len = 4096};
	ios[1] = (struct tier_io){.io_dev = d7, .io_op = TIO_WRITE,
				  .io_buf = b[1], .io_len = 4096};
	CU_ASSERT_EQUAL(tier_io_run(ios, 2), -EIO);
	CU_ASSERT(tut_msg_has(d7->td_path));
	CU_ASSERT_EQUAL(ios[0].io_rc, 0);
	CU_ASSERT_EQUAL(ios[1].io_rc, -EIO);
	CU_ASSERT_EQUAL(tier_dev_sync(d8), 0);
	fault_reset();
	CU_ASSERT_EQUAL(tier_dev_errors(d7), 4);
	CU_ASSERT_EQUAL(tier_dev_errors(d8), 0);
	CU_ASSERT_EQUAL(tier_dev_write(d7, 0, b[0], 4096), 0);
	CU_ASSERT_EQUAL(tier_dev_sync(d7), 0);
	tier_dev_close(d7);
	tier_dev_close(d8);
}
#endif

/* ------------------------------------------------------------- registry */

static const struct {
	const char *name;
	CU_TestFunc fn;
} iut_tests[] = {
	{"model_defaults", test_model_defaults},
	{"model_latency", test_model_latency},
	{"model_bandwidth", test_model_bandwidth},
	{"model_off", test_model_off},
	{"io_run_parallel", test_io_run_parallel},
	{"io_run_errors", test_io_run_errors},
	{"io_queue_bound", test_io_queue_bound},
#ifdef STRATA_FAULT_INJECT
	{"fault_dev_rw", test_fault_dev_rw},
	{"fault_short", test_fault_short},
	{"fault_flip", test_fault_flip},
	{"fault_gone", test_fault_gone},
#endif
};

/* Register the model, queue and per-device fault tests in "tier". */
int tier_ut_io_add(CU_pSuite s)
{
	for (size_t i = 0; i < sizeof iut_tests / sizeof iut_tests[0]; i++)
		if (CU_add_test(s, iut_tests[i].name, iut_tests[i].fn) == NULL)
			return -1;
	return 0;
}
