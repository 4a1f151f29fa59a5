/*
 * smr_ut.c — SMR tests of the CUnit suite "tier": the zone rules, zone
 * append, reset, persistence of the write pointers and format options of
 * the emulated zoned device (tiers/smr/).  Registered by tier_ut_add().
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/fault.h"
#include "tiers/tier.h"
#include "tiers/ut/tier_ut.h"

#define SUT_MIB (1ull << 20)

/* Format an SMR device of size bytes with zone size zs (0 = default) at a
 * fresh path, and open it. */
static struct tier_dev *sut_make(char *path, size_t n, uint64_t size,
				 uint64_t zs)
{
	struct tier_format_opts o = {.tf_zone_size = zs};
	struct tier_dev *d = NULL;

	tut_path(path, n, ST_TIER_SMR, "smr");
	CU_ASSERT_EQUAL_FATAL(tier_dev_format_opts(path, ST_TIER_SMR,
						   tut_store, 7, size, &o), 0);
	CU_ASSERT_EQUAL_FATAL(tier_dev_open(&d, path, ST_TIER_SMR,
					    tut_store, 7), 0);
	return d;
}

/* Reopen the SMR device at path after closing d. */
static struct tier_dev *sut_reopen(struct tier_dev *d, const char *path)
{
	tier_dev_close(d);
	d = NULL;
	CU_ASSERT_EQUAL_FATAL(tier_dev_open(&d, path, ST_TIER_SMR,
					    tut_store, 7), 0);
	return d;
}

/* The zone's wp (fails the test when the zone cannot be reported). */
static uint64_t sut_wp(struct tier_dev *d, uint32_t zone)
{
	struct tier_zone z;

	CU_ASSERT_EQUAL_FATAL(tier_dev_zone_get(d, zone, &z), 0);
	return z.tz_wp;
}

/* The zone's condition. */
static uint32_t sut_cond(struct tier_dev *d, uint32_t zone)
{
	struct tier_zone z;

	CU_ASSERT_EQUAL_FATAL(tier_dev_zone_get(d, zone, &z), 0);
	return z.tz_cond;
}

/* True when len bytes at buf are all zero. */
static bool sut_zero(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != 0)
			return false;
	return true;
}

/* Write len pattern bytes (seed) at off and expect rc. */
static int sut_write(struct tier_dev *d, uint64_t off, size_t len,
		     uint64_t seed)
{
	uint8_t *b = tut_alloc(len);
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	tut_fill(b, len, seed);
	rc = tier_dev_write(d, off, b, len);
	free(b);
	return rc;
}

/* Read len bytes at off and compare with the pattern of seed. */
static bool sut_check(struct tier_dev *d, uint64_t off, size_t len,
		      uint64_t seed)
{
	uint8_t *want = tut_alloc(len), *got = tut_alloc(len);
	bool ok;

	CU_ASSERT_FATAL(want != NULL && got != NULL);
	tut_fill(want, len, seed);
	ok = tier_dev_read(d, off, got, len) == 0 &&
	     memcmp(want, got, len) == 0;
	free(want);
	free(got);
	return ok;
}

/* Read len bytes at off and check that they are all zero. */
static bool sut_zeros_at(struct tier_dev *d, uint64_t off, size_t len)
{
	uint8_t *got = tut_alloc(len);
	bool ok;

	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	memset(got, 0xee, len);
	ok = tier_dev_read(d, off, got, len) == 0 && sut_zero(got, len);
	free(got);
	return ok;
}

/* ------------------------------------------------------------ geometry */

/* The default zone size shrinks for small devices; the zoned queries
 * report the geometry; the data area starts after the zone table. */
static void test_smr_geometry(void)
{
	struct tier_zone z;
	struct tier_dev *d;
	char path[512];

	d = sut_make(path, sizeof path, 16 * SUT_MIB, 0);
	CU_ASSERT_TRUE(tier_dev_zoned(d));
	CU_ASSERT_EQUAL(tier_dev_zone_size(d), 4 * SUT_MIB);
	CU_ASSERT_EQUAL(tier_dev_zone_nr(d), 4);
	CU_ASSERT_EQUAL(tier_dev_size(d), 16 * SUT_MIB);
	CU_ASSERT(d->td_sb.sb_data_off > LIM_DEV_SB_SIZE);
	CU_ASSERT_EQUAL(d->td_sb.sb_data_off % LIM_DEV_SB_SIZE, 0);
	CU_ASSERT_STRING_EQUAL(d->td_ops->to_name, "smr");
	for (uint32_t i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(tier_dev_zone_get(d, i, &z), 0);
		CU_ASSERT_EQUAL(z.tz_start, i * 4 * SUT_MIB);
		CU_ASSERT_EQUAL(z.tz_len, 4 * SUT_MIB);
		CU_ASSERT_EQUAL(z.tz_wp, z.tz_start);
		CU_ASSERT_EQUAL(z.tz_cond, TZ_EMPTY);
	}
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_zone_get(d, 4, &z), -EINVAL);
	CU_ASSERT(tut_msg_has(path));
	CU_ASSERT_EQUAL(tier_dev_zone_get(d, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_zone_reset(d, 4), -EINVAL);
	tier_dev_close(d);
}

/* Flash, SAS and NVRAM devices are not zoned and refuse zone calls. */
static void test_smr_not_zoned(void)
{
	static const enum st_tier ts[] = {ST_TIER_FLASH,
					      ST_TIER_NVRAM};
	uint8_t buf[512] = {0};
	struct tier_zone z;
	uint64_t off = 0;
	char path[512];

	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
		struct tier_dev *d;

		tut_path(path, sizeof path, ts[i], "nz");
		d = tut_make(path, ts[i], 4 * SUT_MIB);
		CU_ASSERT_FALSE(tier_dev_zoned(d));
		CU_ASSERT_EQUAL(tier_dev_zone_nr(d), 0);
		CU_ASSERT_EQUAL(tier_dev_zone_size(d), 0);
		CU_ASSERT_EQUAL(d->td_sb.sb_data_off, LIM_DEV_SB_SIZE);
		err_clear();
		CU_ASSERT_EQUAL(tier_dev_zone_get(d, 0, &z), -EINVAL);
		CU_ASSERT(tut_msg_has("not a zoned device"));
		CU_ASSERT_EQUAL(tier_dev_zone_reset(d, 0), -EINVAL);
		CU_ASSERT_EQUAL(tier_dev_zone_append(d, 0, buf, sizeof buf,
						     &off), -EINVAL);
		CU_ASSERT_EQUAL(tier_dev_errors(d), 0);
		tier_dev_close(d);
	}
}

/* Custom zone sizes; bad ones refused before a file is left behind; a
 * data size that is no multiple of the zone size leaves a tail that is no
 * zone: it reads as zeros and refuses writes. */
static void test_smr_format_zone_size(void)
{
	static const uint64_t bad[] = {3 * SUT_MIB, SUT_MIB / 2,
				       8 * SUT_MIB, 3};
	struct tier_format_opts o = {0};
	uint8_t *buf = tut_alloc(SUT_MIB);
	struct tier_dev *d;
	char path[512];
	struct stat st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		o.tf_zone_size = bad[i];
		tut_path(path, sizeof path, ST_TIER_SMR, "badzs");
		err_clear();
		CU_ASSERT_EQUAL(tier_dev_format_opts(path, ST_TIER_SMR,
						     tut_store, 7, 4 * SUT_MIB,
						     &o), -EINVAL);
		CU_ASSERT(tut_msg_has("zone size"));
		CU_ASSERT_NOT_EQUAL(stat(path, &st), 0);
	}
	d = sut_make(path, sizeof path, 5 * SUT_MIB, 2 * SUT_MIB);
	CU_ASSERT_EQUAL(tier_dev_zone_size(d), 2 * SUT_MIB);
	CU_ASSERT_EQUAL(tier_dev_zone_nr(d), 2);
	CU_ASSERT_EQUAL(sut_write(d, 4 * SUT_MIB, 4096, 1), -EINVAL);
	CU_ASSERT(tut_msg_has("last whole zone"));
	memset(buf, 0xee, SUT_MIB);
	CU_ASSERT_EQUAL(tier_dev_read(d, 4 * SUT_MIB, buf, SUT_MIB), 0);
	CU_ASSERT_TRUE(sut_zero(buf, SUT_MIB));
	tier_dev_close(d);
	d = sut_make(path, sizeof path, 4 * SUT_MIB, SUT_MIB);
	CU_ASSERT_EQUAL(tier_dev_zone_nr(d), 4);
	CU_ASSERT_EQUAL(sut_write(d, 3 * SUT_MIB, SUT_MIB, 2), 0);
	CU_ASSERT_EQUAL(sut_cond(d, 3), TZ_FULL);
	tier_dev_close(d);
	o.tf_zone_size = 2 * SUT_MIB;
	tut_path(path, sizeof path, ST_TIER_FLASH, "nozs");
	CU_ASSERT_EQUAL(tier_dev_format_opts(path, ST_TIER_FLASH,
					     tut_store, 7, 4 * SUT_MIB, &o), 0);
	free(buf);
}

/* ------------------------------------------------------------ wp rules */

/* A write at the wp succeeds and advances it; one elsewhere, or crossing
 * the zone end, is refused with -EINVAL naming path, zone, wp and offset,
 * and changes nothing. */
static void test_smr_write_rules(void)
{
	uint64_t zs = SUT_MIB;
	struct tier_dev *d;
	char path[512];

	d = sut_make(path, sizeof path, 4 * SUT_MIB, zs);
	CU_ASSERT_EQUAL(sut_write(d, 0, 8192, 1), 0);
	CU_ASSERT_EQUAL(sut_wp(d, 0), 8192);
	CU_ASSERT_EQUAL(sut_cond(d, 0), TZ_OPEN);
	err_clear();
	CU_ASSERT_EQUAL(sut_write(d, 0, 4096, 2), -EINVAL);
	CU_ASSERT(tut_msg_has(path));
	CU_ASSERT(tut_msg_has("zone 0"));
	CU_ASSERT(tut_msg_has("write pointer 8192"));
	CU_ASSERT(tut_msg_has("offset 0"));
	CU_ASSERT_EQUAL(sut_write(d, 16384, 4096, 2), -EINVAL);
	CU_ASSERT(tut_msg_has("offset 16384"));
	CU_ASSERT_EQUAL(sut_write(d, 8192 + 512, 512, 2), -EINVAL);
	CU_ASSERT_EQUAL(sut_write(d, zs + 4096, 4096, 2), -EINVAL);
	CU_ASSERT(tut_msg_has("zone 1"));
	CU_ASSERT_EQUAL(sut_write(d, 8192, zs - 8192 + 512, 3), -EINVAL);
	CU_ASSERT(tut_msg_has("crosses the zone end"));
	CU_ASSERT_EQUAL(sut_wp(d, 0), 8192);
	CU_ASSERT_EQUAL(sut_write(d, 8192, 512, 4), 0);
	CU_ASSERT_EQUAL(sut_write(d, 8192 + 512, zs - 8192 - 512, 5), 0);
	CU_ASSERT_EQUAL(sut_cond(d, 0), TZ_FULL);
	CU_ASSERT_EQUAL(sut_wp(d, 0), zs);
	CU_ASSERT_EQUAL(sut_write(d, zs, 4096, 6), 0);
	CU_ASSERT_EQUAL(sut_cond(d, 1), TZ_OPEN);
	CU_ASSERT_TRUE(sut_check(d, 0, 8192, 1));
	CU_ASSERT_TRUE(sut_check(d, 8192, 512, 4));
	CU_ASSERT_TRUE(sut_check(d, zs, 4096, 6));
	CU_ASSERT_EQUAL(tier_dev_errors(d), 0);
	CU_ASSERT_EQUAL(d->td_nr_writes, 4);
	tier_dev_close(d);
}

/* Put junk straight into the file over data-area bytes [off, off + len),
 * where no write pointer covers it. */
static void sut_junk(const struct tier_dev *d, uint64_t off, size_t len)
{
	uint8_t *j = malloc(len);
	int fd = open(d->td_path, O_WRONLY);

	CU_ASSERT_FATAL(j != NULL && fd >= 0);
	memset(j, 0x5a, len);
	CU_ASSERT_EQUAL(pwrite(fd, j, len,
			       (off_t)(d->td_sb.sb_data_off + off)),
			(ssize_t)len);
	close(fd);
	free(j);
}

/* Bytes at and above a wp read as zeros whatever the medium holds there,
 * also in a read that spans the wp and a zone boundary. */
static void test_smr_read_above_wp(void)
{
	uint64_t zs = SUT_MIB;
	uint8_t *buf = tut_alloc(2 * SUT_MIB), *want = tut_alloc(8192);
	struct tier_dev *d;
	char path[512];

	CU_ASSERT_FATAL(buf != NULL && want != NULL);
	d = sut_make(path, sizeof path, 4 * SUT_MIB, zs);
	sut_junk(d, 0, 2 * zs);
	memset(buf, 0xee, 2 * SUT_MIB);
	CU_ASSERT_EQUAL(tier_dev_read(d, 0, buf, 2 * SUT_MIB), 0);
	CU_ASSERT_TRUE(sut_zero(buf, 2 * SUT_MIB));
	CU_ASSERT_EQUAL(sut_write(d, 0, 8192, 11), 0);
	CU_ASSERT_EQUAL(sut_write(d, zs, 4096, 12), 0);
	memset(buf, 0xee, 2 * SUT_MIB);
	CU_ASSERT_EQUAL(tier_dev_read(d, 4096, buf, 2 * SUT_MIB), 0);
	tut_fill(want, 8192, 11);
	CU_ASSERT_EQUAL(memcmp(buf, want + 4096, 4096), 0);
	CU_ASSERT_TRUE(sut_zero(buf + 4096, zs - 8192));
	tut_fill(want, 4096, 12);
	CU_ASSERT_EQUAL(memcmp(buf + zs - 4096, want, 4096), 0);
	CU_ASSERT_TRUE(sut_zero(buf + zs, zs));
	memset(buf, 0xee, 4096);
	CU_ASSERT_EQUAL(tier_dev_read(d, 8192, buf + 1, 1024), 0);
	CU_ASSERT_TRUE(sut_zero(buf + 1, 1024));
	tier_dev_close(d);
	free(buf);
	free(want);
}

/* ---------------------------------------------------------------- reset */

/* A reset empties the zone (zeros, wp at start, writable from the start
 * again), leaves the other zones alone, and is durable without a sync. */
static void test_smr_reset(void)
{
	uint64_t zs = SUT_MIB;
	uint8_t *buf = tut_alloc(zs);
	struct tier_dev *d;
	char path[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	d = sut_make(path, sizeof path, 4 * SUT_MIB, zs);
	CU_ASSERT_EQUAL(sut_write(d, zs, 65536, 21), 0);
	CU_ASSERT_EQUAL(sut_write(d, 2 * zs, 4096, 22), 0);
	CU_ASSERT_EQUAL(tier_dev_sync(d), 0);
	CU_ASSERT_EQUAL(tier_dev_zone_reset(d, 1), 0);
	CU_ASSERT_EQUAL(sut_cond(d, 1), TZ_EMPTY);
	CU_ASSERT_EQUAL(sut_wp(d, 1), zs);
	memset(buf, 0xee, zs);
	CU_ASSERT_EQUAL(tier_dev_read(d, zs, buf, zs), 0);
	CU_ASSERT_TRUE(sut_zero(buf, zs));
	CU_ASSERT_TRUE(sut_check(d, 2 * zs, 4096, 22));
	d = sut_reopen(d, path);
	CU_ASSERT_EQUAL(sut_cond(d, 1), TZ_EMPTY);
	CU_ASSERT_EQUAL(sut_wp(d, 2), 2 * zs + 4096);
	CU_ASSERT_EQUAL(sut_write(d, zs, 4096, 23), 0);
	CU_ASSERT_TRUE(sut_check(d, zs, 4096, 23));
	memset(buf, 0xee, 65536);
	CU_ASSERT_EQUAL(tier_dev_read(d, zs + 4096, buf, 65536 - 4096), 0);
	CU_ASSERT_TRUE(sut_zero(buf, 65536 - 4096));
	CU_ASSERT_EQUAL(tier_dev_zone_reset(d, 3), 0);
	CU_ASSERT_EQUAL(sut_cond(d, 3), TZ_EMPTY);
	tier_dev_close(d);
	free(buf);
}

/* ---------------------------------------------------------- persistence */

/* Read the persisted wp of zone z straight from the file: the table
 * starts 8192 bytes in, one u64 per zone. */
static uint64_t sut_raw_wp(const char *path, uint32_t z)
{
	uint64_t v = UINT64_MAX;
	int fd = open(path, O_RDONLY);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, &v, sizeof v, 8192 + 8 * (off_t)z),
			(ssize_t)sizeof v);
	close(fd);
	return v;
}

/* The wp table survives close and reopen after a sync; a write is
 * persisted by the sync, not before; unsynced writes are behind the
 * persisted wp after a reopen (lost, as a crash would lose them) and the
 * zone continues from there. */
static void test_smr_persist(void)
{
	uint64_t zs = SUT_MIB;
	struct tier_dev *d;
	char path[512];

	d = sut_make(path, sizeof path, 4 * SUT_MIB, zs);
	CU_ASSERT_EQUAL(sut_write(d, 0, 12288, 31), 0);
	CU_ASSERT_EQUAL(sut_write(d, 2 * zs, 4096, 32), 0);
	CU_ASSERT_EQUAL(sut_raw_wp(path, 0), 0);
	CU_ASSERT_EQUAL(tier_dev_sync(d), 0);
	CU_ASSERT_EQUAL(sut_raw_wp(path, 0), 12288);
	CU_ASSERT_EQUAL(sut_raw_wp(path, 2), 4096);
	CU_ASSERT_EQUAL(sut_write(d, 12288, 4096, 33), 0);
	CU_ASSERT_EQUAL(sut_raw_wp(path, 0), 12288);
	d = sut_reopen(d, path);
	CU_ASSERT_EQUAL(sut_wp(d, 0), 12288);
	CU_ASSERT_TRUE(sut_zeros_at(d, 12288, 4096));
	CU_ASSERT_EQUAL(sut_wp(d, 1), zs);
	CU_ASSERT_EQUAL(sut_wp(d, 2), 2 * zs + 4096);
	CU_ASSERT_TRUE(sut_check(d, 0, 12288, 31));
	CU_ASSERT_TRUE(sut_check(d, 2 * zs, 4096, 32));
	CU_ASSERT_EQUAL(sut_write(d, 12288, 4096, 34), 0);
	CU_ASSERT_EQUAL(sut_write(d, 16384, zs - 16384, 35), 0);
	CU_ASSERT_EQUAL(tier_dev_sync(d), 0);
	CU_ASSERT_EQUAL(tier_dev_sync(d), 0);
	d = sut_reopen(d, path);
	CU_ASSERT_EQUAL(sut_cond(d, 0), TZ_FULL);
	CU_ASSERT_TRUE(sut_check(d, 12288, 4096, 34));
	CU_ASSERT_TRUE(sut_check(d, 16384, zs - 16384, 35));
	tier_dev_close(d);
}

/* A damaged zone table header or an impossible persisted wp makes the
 * device corrupt at open. */
static void test_smr_table_corrupt(void)
{
	uint64_t bad = 3 * SUT_MIB;
	struct tier_dev *d;
	char path[512];
	uint8_t b;
	int fd;

	d = sut_make(path, sizeof path, 4 * SUT_MIB, SUT_MIB);
	tier_dev_close(d);
	fd = open(path, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pwrite(fd, &bad, sizeof bad, 8192 + 8), 8);
	d = NULL;
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_open(&d, path, ST_TIER_SMR, tut_store, 7),
			-ST_ECORRUPT);
	CU_ASSERT(tut_msg_has("zone 1"));
	bad = 0;
	CU_ASSERT_EQUAL(pwrite(fd, &bad, sizeof bad, 8192 + 8), 8);
	CU_ASSERT_EQUAL(pread(fd, &b, 1, 4096 + 20), 1);
	b ^= 1;
	CU_ASSERT_EQUAL(pwrite(fd, &b, 1, 4096 + 20), 1);
	close(fd);
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_open(&d, path, ST_TIER_SMR, tut_store, 7),
			-ST_ECORRUPT);
	CU_ASSERT(tut_msg_has("zone table"));
	CU_ASSERT_PTR_NULL(d);
}

/* -------------------------------------------------------------- append */

#define SUT_APPENDERS 4
#define SUT_APPENDS 24

struct sut_appender {
	struct tier_dev *sa_dev;
	uint32_t sa_id;
	uint64_t sa_off[SUT_APPENDS];
	size_t sa_len[SUT_APPENDS];
	int sa_failures;
};

/* One appender: SUT_APPENDS appends of 1..4 KiB-ish sizes into zone 1,
 * each a pattern of its own, recording where each landed. */
static void *sut_append_run(void *arg)
{
	struct sut_appender *a = arg;
	uint8_t *b = tut_alloc(8192);

	if (b == NULL)
		a->sa_failures++;
	for (uint32_t i = 0; i < SUT_APPENDS && b != NULL; i++) {
		a->sa_len[i] = 512u * (1 + (a->sa_id + i) % 8);
		tut_fill(b, a->sa_len[i], a->sa_id * 100 + i);
		if (tier_dev_zone_append(a->sa_dev, 1, b, a->sa_len[i],
					 &a->sa_off[i]) != 0)
			a->sa_failures++;
	}
	free(b);
	return NULL;
}

/* Compare two appended extents by offset (qsort). */
static int sut_ext_cmp(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Appends from several threads land in the zone without overlap, back to
 * back from the zone start, and every one reads back. */
static void test_smr_append_threads(void)
{
	struct sut_appender a[SUT_APPENDERS];
	uint64_t ext[SUT_APPENDERS * SUT_APPENDS][2], zs = SUT_MIB, total = 0;
	pthread_t th[SUT_APPENDERS];
	struct tier_dev *d;
	char path[512];
	size_t n = 0;

	d = sut_make(path, sizeof path, 4 * SUT_MIB, zs);
	for (uint32_t i = 0; i < SUT_APPENDERS; i++) {
		memset(&a[i], 0, sizeof a[i]);
		a[i].sa_dev = d;
		a[i].sa_id = i;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL,
						     sut_append_run, &a[i]), 0);
	}
	for (uint32_t i = 0; i < SUT_APPENDERS; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(a[i].sa_failures, 0);
		for (uint32_t k = 0; k < SUT_APPENDS; k++) {
			ext[n][0] = a[i].sa_off[k];
			ext[n++][1] = a[i].sa_len[k];
			total += a[i].sa_len[k];
			CU_ASSERT_TRUE(sut_check(d, a[i].sa_off[k],
						 a[i].sa_len[k], i * 100 + k));
		}
	}
	qsort(ext, n, sizeof ext[0], sut_ext_cmp);
	CU_ASSERT_EQUAL(ext[0][0], zs);
	for (size_t i = 1; i < n; i++)
		CU_ASSERT_EQUAL(ext[i][0], ext[i - 1][0] + ext[i - 1][1]);
	CU_ASSERT_EQUAL(sut_wp(d, 1), zs + total);
	CU_ASSERT_EQUAL(d->td_nr_writes, SUT_APPENDERS * SUT_APPENDS);
	tier_dev_close(d);
}

/* An append that does not fit is -ENOSPC with a message, moves nothing
 * and is not a device error; smaller ones still fit; bad arguments are
 * -EINVAL; a zero-length append reports the wp. */
static void test_smr_append_enospc(void)
{
	uint64_t zs = SUT_MIB, off = 0, off2 = 0;
	uint8_t *b = tut_alloc(zs);
	struct tier_dev *d;
	char path[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	d = sut_make(path, sizeof path, 2 * SUT_MIB, zs);
	tut_fill(b, zs, 41);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 0, b, zs - 4096, &off), 0);
	CU_ASSERT_EQUAL(off, 0);
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 0, b, 8192, &off), -ENOSPC);
	CU_ASSERT(tut_msg_has(path));
	CU_ASSERT(tut_msg_has("does not fit"));
	CU_ASSERT_EQUAL(sut_wp(d, 0), zs - 4096);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 0, b, 4096, &off), 0);
	CU_ASSERT_EQUAL(off, zs - 4096);
	CU_ASSERT_EQUAL(sut_cond(d, 0), TZ_FULL);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 0, b, 512, &off), -ENOSPC);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 1, b, 100, &off), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 1, NULL, 512, &off), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 1, b, 512, NULL), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 2, b, 512, &off), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 1, b, 0, &off2), 0);
	CU_ASSERT_EQUAL(off2, zs);
	CU_ASSERT_EQUAL(tier_dev_errors(d), 0);
	CU_ASSERT_EQUAL(tier_dev_zone_reset(d, 0), 0);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 0, b, 4096, &off), 0);
	CU_ASSERT_EQUAL(off, 0);
	tier_dev_close(d);
	free(b);
}

/* --------------------------------------------------------- fault points */

#ifdef STRATA_FAULT_INJECT
/* On SMR a short write advances the wp by the half that was written and
 * a gone device refuses resets and appends too; a failed data sync is
 * reported and no table page claims the unsynced write. */
static void test_smr_faults(void)
{
	uint64_t zs = SUT_MIB, off = 0;
	uint8_t b[8192];
	struct tier_dev *d;
	char path[512];

	d = sut_make(path, sizeof path, 2 * SUT_MIB, zs);
	tut_fill(b, sizeof b, 51);
	fault_arm("tier.short.dev7", 0, 1);
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_write(d, 0, b, sizeof b), -EIO);
	CU_ASSERT(tut_msg_has("short write of 4096 of 8192 bytes"));
	CU_ASSERT_EQUAL(sut_wp(d, 0), 4096);
	CU_ASSERT_TRUE(sut_check(d, 0, 4096, 51));
	fault_arm("tier.gone.dev7", 0, 0);
	CU_ASSERT_EQUAL(tier_dev_zone_reset(d, 0), -EIO);
	CU_ASSERT_EQUAL(tier_dev_zone_append(d, 0, b, 512, &off), -EIO);
	fault_reset();
	CU_ASSERT_EQUAL(tier_dev_errors(d), 3);
	CU_ASSERT_EQUAL(sut_wp(d, 0), 4096);
	fault_arm("tier.file.sync", 0, 1);
	CU_ASSERT_EQUAL(tier_dev_sync(d), -EIO);
	fault_reset();
	CU_ASSERT_EQUAL(sut_raw_wp(path, 0), 0);
	tier_dev_close(d);
}
#endif

/* ------------------------------------------------------------- registry */

static const struct {
	const char *name;
	CU_TestFunc fn;
} sut_tests[] = {
	{"smr_geometry", test_smr_geometry},
	{"smr_not_zoned", test_smr_not_zoned},
	{"smr_format_zone_size", test_smr_format_zone_size},
	{"smr_write_rules", test_smr_write_rules},
	{"smr_read_above_wp", test_smr_read_above_wp},
	{"smr_reset", test_smr_reset},
	{"smr_persist", test_smr_persist},
	{"smr_table_corrupt", test_smr_table_corrupt},
	{"smr_append_threads", test_smr_append_threads},
	{"smr_append_enospc", test_smr_append_enospc},
#ifdef STRATA_FAULT_INJECT
	{"smr_faults", test_smr_faults},
#endif
};

/* Register the SMR tests in the "tier" suite. */
int tier_ut_smr_add(CU_pSuite s)
{
	for (size_t i = 0; i < sizeof sut_tests / sizeof sut_tests[0]; i++)
		if (CU_add_test(s, sut_tests[i].name, sut_tests[i].fn) == NULL)
			return -1;
	return 0;
}
