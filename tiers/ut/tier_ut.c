/*
 * tier_ut.c — CUnit suite "tier": the device drivers behind tier.h.
 *
 * Flash and SAS devices live in directories from ut_tmpdir(); NVRAM devices
 * in a fresh directory under /dev/shm (where embedded mode emulates NVRAM),
 * removed when the suite ends.  Tests that need fault points are compiled
 * only in the test build (-DSTRATA_FAULT_INJECT).  SMR tests are in
 * smr_ut.c, device model, I/O queue and per-device fault tests in io_ut.c;
 * all register into this one suite.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/fault.h"
#include "tests/ut.h"
#include "tiers/tier.h"
#include "tiers/ut/tier_ut.h"

#define TUT_DEV_SIZE (4ull << 20)
#define TUT_BIG_SIZE (16ull << 20)
#define TUT_EXT4_MAGIC 0xEF53
#define TUT_XFS_MAGIC 0x58465342

const uint8_t tut_store[16] = {0x53, 0x74, 0x72, 0x61, 0x74, 0x61,
				      0x2d, 0x75, 0x74, 0x2d, 0x73, 0x74,
				      0x6f, 0x72, 0x65, 0x01};

/* The suite's NVRAM directory (under /dev/shm when it exists). */
static char tut_shm[256];

/* Make the NVRAM directory: /dev/shm when present, else a temp dir (the
 * pmem2 driver runs on any file system at page granularity). */
static int tut_init(void)
{
	const char *dir;

	snprintf(tut_shm, sizeof tut_shm, "/dev/shm/strata-ut-tier.XXXXXX");
	if (mkdtemp(tut_shm) != NULL)
		return 0;
	dir = ut_tmpdir("tier-nvram");
	if (dir == NULL)
		return -1;
	snprintf(tut_shm, sizeof tut_shm, "%s", dir);
	return 0;
}

/* Remove the NVRAM directory and disarm any fault point left armed. */
static int tut_fini(void)
{
#ifdef STRATA_FAULT_INJECT
	fault_reset();
#endif
	ut_rmtree(tut_shm);
	return 0;
}

/* A fresh device path for tier t: under the NVRAM directory for NVRAM,
 * in a new temporary directory otherwise. */
void tut_path(char *out, size_t n, enum st_tier t, const char *name)
{
	static unsigned seq;
	const char *dir = t == ST_TIER_NVRAM ? tut_shm : ut_tmpdir("tier");

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	snprintf(out, n, "%s/%s.%u", dir, name, seq++);
}

/* Fill buf with a pattern that differs per seed and per 8-byte word, so a
 * misplaced or shifted block is detected. */
void tut_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((seed * 131 + i / 8 * 7 + i) ^ (seed >> 3));
}

/* Format a device of size bytes at path and open it; fails the test on
 * any error. */
struct tier_dev *tut_make(const char *path, enum st_tier t,
			  uint64_t size)
{
	struct tier_dev *d = NULL;

	CU_ASSERT_EQUAL_FATAL(tier_dev_format(path, t, tut_store, 7, size), 0);
	CU_ASSERT_EQUAL_FATAL(tier_dev_open(&d, path, t, tut_store, 7), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	return d;
}

/* A page-aligned allocation of len bytes (NULL on failure), so that an
 * offset of 0 into it is aligned for any direct I/O. */
uint8_t *tut_alloc(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, 4096, len) == 0 ? p : NULL;
}

/* Assert cond (CUnit reports the line) and fold it into ok: the checking
 * helpers below return whether all their checks held, which the test
 * functions assert in turn. */
#define TUT_CHECK(ok, cond) \
	do { \
		bool c_ = (cond); \
		CU_ASSERT(c_); \
		(ok) = (ok) && c_; \
	} while (0)

/* Write len pattern bytes at off from a buffer at byte offset wmis of a
 * page-aligned allocation, read them back into one at rmis, and compare:
 * true when all three held. */
static bool tut_rw_check(struct tier_dev *d, uint64_t off, size_t len,
			 size_t wmis, size_t rmis, uint64_t seed)
{
	bool ok = true;
	uint8_t *wb = tut_alloc(len + 64), *rb = tut_alloc(len + 64);

	CU_ASSERT_FATAL(wb != NULL && rb != NULL);
	tut_fill(wb + wmis, len, seed);
	memset(rb, 0xee, len + 64);
	TUT_CHECK(ok, tier_dev_write(d, off, wb + wmis, len) == 0);
	TUT_CHECK(ok, tier_dev_read(d, off, rb + rmis, len) == 0);
	TUT_CHECK(ok, memcmp(wb + wmis, rb + rmis, len) == 0);
	free(wb);
	free(rb);
	return ok;
}

/* Read a superblock straight from the file at path. */
static void tut_sb_get(const char *path, struct tier_sb *sb)
{
	int fd = open(path, O_RDONLY);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, sb, sizeof *sb, 0), (ssize_t)sizeof *sb);
	close(fd);
}

/* Write a superblock straight into the file at path, with its crc
 * recomputed when fix_crc is set (so only the intended field differs). */
static void tut_sb_put(const char *path, struct tier_sb *sb, bool fix_crc)
{
	int fd = open(path, O_WRONLY);

	if (fix_crc)
		sb->sb_crc = tier_sb_crc(sb);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pwrite(fd, sb, sizeof *sb, 0), (ssize_t)sizeof *sb);
	close(fd);
}

/* True when the calling thread's error message names s. */
bool tut_msg_has(const char *s)
{
	return strstr(err_msg(), s) != NULL;
}

/* ------------------------------------------------------------ helpers */

/* Drivers by tier and by name; tier names. */
static void test_driver_lookup(void)
{
	const struct tier_ops *file = tier_driver_for(ST_TIER_FLASH);
	const struct tier_ops *pm = tier_driver_for(ST_TIER_NVRAM);

	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pm);
	CU_ASSERT_STRING_EQUAL(file->to_name, "file");
	CU_ASSERT_STRING_EQUAL(pm->to_name, "pmem2");
	CU_ASSERT_PTR_EQUAL(tier_driver_for(ST_TIER_SAS), file);
	CU_ASSERT_PTR_NULL(tier_driver_for(ST_TIER_NR));
	CU_ASSERT_PTR_EQUAL(tier_driver_find("file"), file);
	CU_ASSERT_PTR_EQUAL(tier_driver_find("pmem2"), pm);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tier_driver_find("smr"));
	CU_ASSERT_PTR_EQUAL(tier_driver_for(ST_TIER_SMR),
			    tier_driver_find("smr"));
	CU_ASSERT_STRING_EQUAL(tier_driver_find("smr")->to_name, "smr");
	CU_ASSERT_PTR_NULL(tier_driver_find("bogus"));
	CU_ASSERT_PTR_NULL(tier_driver_find(NULL));
	CU_ASSERT_STRING_EQUAL(tier_name(ST_TIER_NVRAM), "nvram");
	CU_ASSERT_STRING_EQUAL(tier_name(ST_TIER_FLASH), "flash");
	CU_ASSERT_STRING_EQUAL(tier_name(ST_TIER_SAS), "sas");
	CU_ASSERT_STRING_EQUAL(tier_name(ST_TIER_SMR), "smr");
}

/* A filled superblock: fields, crc over everything but the crc field. */
static void test_sb_fill_crc(void)
{
	struct tier_sb sb, sb2;

	tier_sb_fill(&sb, ST_TIER_SAS, tut_store, 3, TUT_DEV_SIZE, "file");
	CU_ASSERT_EQUAL(sb.sb_magic, TIER_SB_MAGIC);
	CU_ASSERT_EQUAL(sb.sb_version, TIER_SB_VERSION);
	CU_ASSERT_EQUAL(sb.sb_tier, ST_TIER_SAS);
	CU_ASSERT_EQUAL(sb.sb_index, 3);
	CU_ASSERT_EQUAL(sb.sb_data_off, LIM_DEV_SB_SIZE);
	CU_ASSERT_EQUAL(sb.sb_data_size, TUT_DEV_SIZE);
	CU_ASSERT_STRING_EQUAL(sb.sb_driver, "file");
	CU_ASSERT_EQUAL(memcmp(sb.sb_store, tut_store, 16), 0);
	CU_ASSERT_NOT_EQUAL(sb.sb_ctime_ns, 0);
	CU_ASSERT_EQUAL(sb.sb_crc, tier_sb_crc(&sb));
	sb2 = sb;
	sb2.sb_crc ^= 1;
	CU_ASSERT_EQUAL(tier_sb_crc(&sb2), sb.sb_crc);
	sb2 = sb;
	sb2.sb_store[5] ^= 0x10;
	CU_ASSERT_NOT_EQUAL(tier_sb_crc(&sb2), sb.sb_crc);
}

/* ------------------------------------------------------- round trips */

/* Format, open, check the superblock copy, write and read at both ends of
 * the data area, sync, and count. */
static bool tut_roundtrip(enum st_tier t)
{
	bool ok = true;
	char path[512];
	struct tier_dev *d;

	tut_path(path, sizeof path, t, "rt");
	d = tut_make(path, t, TUT_DEV_SIZE);
	TUT_CHECK(ok, tier_dev_size(d) == TUT_DEV_SIZE);
	TUT_CHECK(ok, d->td_sb.sb_tier == (uint32_t)t);
	TUT_CHECK(ok, d->td_sb.sb_index == 7);
	CU_ASSERT_STRING_EQUAL(d->td_path, path);
	CU_ASSERT_PTR_EQUAL(d->td_ops, tier_driver_for(t));
	TUT_CHECK(ok, tut_rw_check(d, 0, 65536, 0, 0, 1));
	TUT_CHECK(ok, tut_rw_check(d, TUT_DEV_SIZE - 65536, 65536, 0, 0,
				      2));
	TUT_CHECK(ok, tier_dev_sync(d) == 0);
	TUT_CHECK(ok, d->td_nr_writes == 2);
	TUT_CHECK(ok, d->td_nr_reads == 2);
	TUT_CHECK(ok, d->td_nr_syncs == 1);
	tier_dev_close(d);
	return ok;
}

static void test_roundtrip_flash(void)
{
	CU_ASSERT(tut_roundtrip(ST_TIER_FLASH));
}

static void test_roundtrip_sas(void)
{
	CU_ASSERT(tut_roundtrip(ST_TIER_SAS));
}

static void test_roundtrip_nvram(void)
{
	CU_ASSERT(tut_roundtrip(ST_TIER_NVRAM));
}

/* Data-area offsets start after the superblock area: the bytes written at
 * offset 0 sit at file offset sb_data_off, and the superblock is intact. */
static bool tut_data_offset(enum st_tier t)
{
	bool ok = true;
	uint8_t wb[4096], fb[4096];
	struct tier_sb sb;
	char path[512];
	struct tier_dev *d;
	int fd;

	tut_path(path, sizeof path, t, "off");
	d = tut_make(path, t, TUT_DEV_SIZE);
	tut_fill(wb, sizeof wb, 9);
	TUT_CHECK(ok, tier_dev_write(d, 0, wb, sizeof wb) == 0);
	TUT_CHECK(ok, tier_dev_sync(d) == 0);
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	TUT_CHECK(ok, pread(fd, fb, sizeof fb, LIM_DEV_SB_SIZE) ==
		      (ssize_t)sizeof fb);
	close(fd);
	TUT_CHECK(ok, memcmp(wb, fb, sizeof wb) == 0);
	tut_sb_get(path, &sb);
	TUT_CHECK(ok, memcmp(&sb, &d->td_sb, sizeof sb) == 0);
	tier_dev_close(d);
	return ok;
}

static void test_data_offset_flash(void)
{
	CU_ASSERT(tut_data_offset(ST_TIER_FLASH));
}

static void test_data_offset_nvram(void)
{
	CU_ASSERT(tut_data_offset(ST_TIER_NVRAM));
}

/* Buffers at odd addresses, in both directions and mixed with aligned
 * ones; small and multi-block requests. */
static bool tut_unaligned_buf(enum st_tier t)
{
	bool ok = true;
	char path[512];
	struct tier_dev *d;

	tut_path(path, sizeof path, t, "ubuf");
	d = tut_make(path, t, TUT_DEV_SIZE);
	TUT_CHECK(ok, tut_rw_check(d, 4096, 8192, 1, 3, 11));
	TUT_CHECK(ok, tut_rw_check(d, 0, 512, 7, 0, 12));
	TUT_CHECK(ok, tut_rw_check(d, 65536, 4096, 0, 13, 13));
	TUT_CHECK(ok, tut_rw_check(d, 1 << 20, 3 * 512, 33, 17, 14));
	tier_dev_close(d);
	return ok;
}

static void test_unaligned_buf_flash(void)
{
	CU_ASSERT(tut_unaligned_buf(ST_TIER_FLASH));
}

static void test_unaligned_buf_nvram(void)
{
	CU_ASSERT(tut_unaligned_buf(ST_TIER_NVRAM));
}

/* Offsets and lengths that are multiples of 512 but not of 4096, over a
 * background pattern: the written bytes land exactly, neighbours keep
 * theirs. */
static bool tut_off_512(enum st_tier t)
{
	bool ok = true;
	size_t span = 16384;
	uint8_t *exp = tut_alloc(span), *got = tut_alloc(span);
	char path[512];
	struct tier_dev *d;

	CU_ASSERT_FATAL(exp != NULL && got != NULL);
	tut_path(path, sizeof path, t, "o512");
	d = tut_make(path, t, TUT_DEV_SIZE);
	tut_fill(exp, span, 21);
	TUT_CHECK(ok, tier_dev_write(d, 0, exp, span) == 0);
	tut_fill(exp + 512, 1536, 22);
	TUT_CHECK(ok, tier_dev_write(d, 512, exp + 512, 1536) == 0);
	tut_fill(exp + 4096 + 512, 512, 23);
	TUT_CHECK(ok, tier_dev_write(d, 4096 + 512, exp + 4096 + 512, 512)
		      == 0);
	TUT_CHECK(ok, tier_dev_read(d, 0, got, span) == 0);
	TUT_CHECK(ok, memcmp(exp, got, span) == 0);
	TUT_CHECK(ok, tier_dev_read(d, 1024, got, 2560) == 0);
	TUT_CHECK(ok, memcmp(exp + 1024, got, 2560) == 0);
	tier_dev_close(d);
	free(exp);
	free(got);
	return ok;
}

static void test_off_512_flash(void)
{
	CU_ASSERT(tut_off_512(ST_TIER_FLASH));
}

static void test_off_512_sas(void)
{
	CU_ASSERT(tut_off_512(ST_TIER_SAS));
}

static void test_off_512_nvram(void)
{
	CU_ASSERT(tut_off_512(ST_TIER_NVRAM));
}

/* Requests larger than LIM_IO_CHUNK (split by the drivers), with aligned
 * and misaligned buffers (the bounce path), at 4096- and 512-aligned
 * offsets. */
static bool tut_large_io(enum st_tier t)
{
	bool ok = true;
	size_t len = 2 * LIM_IO_CHUNK + 3 * 512;
	char path[512];
	struct tier_dev *d;

	tut_path(path, sizeof path, t, "big");
	d = tut_make(path, t, TUT_BIG_SIZE);
	TUT_CHECK(ok, tut_rw_check(d, 4096, len, 0, 0, 31));
	TUT_CHECK(ok, tut_rw_check(d, 512, len, 5, 9, 32));
	TUT_CHECK(ok, tut_rw_check(d, TUT_BIG_SIZE - len, len, 0, 1, 33));
	tier_dev_close(d);
	return ok;
}

static void test_large_io_flash(void)
{
	CU_ASSERT(tut_large_io(ST_TIER_FLASH));
}

static void test_large_io_nvram(void)
{
	CU_ASSERT(tut_large_io(ST_TIER_NVRAM));
}

/* A flash device on tmpfs: whatever direct-I/O support the kernel gives
 * tmpfs, 512-aligned requests (buffered there) and 4096-aligned ones
 * (direct where allowed) see each other's bytes. */
static void test_flash_on_shm(void)
{
	char path[512];
	struct tier_dev *d;

	snprintf(path, sizeof path, "%s/flash-on-shm", tut_shm);
	d = tut_make(path, ST_TIER_FLASH, TUT_BIG_SIZE);
	CU_ASSERT(tut_rw_check(d, 0, 8192, 0, 0, 41));
	CU_ASSERT(tut_rw_check(d, 512, 1024, 0, 0, 42));
	CU_ASSERT(tut_rw_check(d, 0, 8192, 3, 0, 43));
	CU_ASSERT(tut_rw_check(d, 4096 + 512, 2 * LIM_IO_CHUNK - 4096, 1, 2,
			       44));
	CU_ASSERT_EQUAL(tier_dev_sync(d), 0);
	tier_dev_close(d);
}

/* ------------------------------------------------------ argument checks */

/* Misaligned and out-of-range requests are refused with -EINVAL and a
 * message naming the device; in-range zero-length requests are no-ops. */
static void tut_einval(struct tier_dev *d, uint64_t off, size_t len,
		       bool nobuf)
{
	static uint8_t buf[2048];
	void *b = nobuf ? NULL : buf;

	err_clear();
	CU_ASSERT_EQUAL(tier_dev_write(d, off, b, len), -EINVAL);
	CU_ASSERT(tut_msg_has(d->td_path));
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_read(d, off, b, len), -EINVAL);
	CU_ASSERT(tut_msg_has(d->td_path));
}

static void test_einval(void)
{
	uint64_t size = TUT_DEV_SIZE;
	uint8_t buf[512] = {0};
	char path[512];
	struct tier_dev *d;

	tut_path(path, sizeof path, ST_TIER_FLASH, "inval");
	d = tut_make(path, ST_TIER_FLASH, size);
	tut_einval(d, 100, 512, false);
	tut_einval(d, 512, 100, false);
	tut_einval(d, 512, 1024 + 1, false);
	tut_einval(d, size, 512, false);
	tut_einval(d, size - 512, 1024, false);
	tut_einval(d, size + 4096, 512, false);
	tut_einval(d, UINT64_MAX - 511, 1024, false);
	tut_einval(d, 0, 512, true);
	CU_ASSERT_EQUAL(tier_dev_write(d, size, buf, 0), 0);
	CU_ASSERT_EQUAL(tier_dev_read(d, size - 512, buf, 512), 0);
	CU_ASSERT_EQUAL(d->td_nr_writes, 0);
	CU_ASSERT_EQUAL(d->td_nr_reads, 1);
	tier_dev_close(d);
}

/* Formatting over anything at the path is refused and leaves it alone. */
static void test_format_eexist(void)
{
	char path[512];
	struct tier_dev *d;
	struct stat st;
	int fd;

	tut_path(path, sizeof path, ST_TIER_SAS, "exist");
	d = tut_make(path, ST_TIER_SAS, TUT_DEV_SIZE);
	CU_ASSERT(tut_rw_check(d, 0, 4096, 0, 0, 51));
	tier_dev_close(d);
	CU_ASSERT_EQUAL(tier_dev_format(path, ST_TIER_SAS, tut_store, 7,
					TUT_DEV_SIZE), -EEXIST);
	CU_ASSERT(tut_msg_has(path));
	d = NULL;
	CU_ASSERT_EQUAL(tier_dev_open(&d, path, ST_TIER_SAS, tut_store, 7),
			0);
	tier_dev_close(d);
	tut_path(path, sizeof path, ST_TIER_NVRAM, "plain");
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	CU_ASSERT_EQUAL(tier_dev_format(path, ST_TIER_NVRAM, tut_store, 7,
					TUT_DEV_SIZE), -EEXIST);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 0);
}

/* Bad sizes, tiers and paths are refused before anything is created. */
static void test_format_einval(void)
{
	const uint64_t bad[] = {0, LIM_DEV_SIZE_MIN - 512, LIM_DEV_SIZE_MIN + 1,
				LIM_DEV_SIZE_MAX + 512};
	char path[512], lpath[LIM_PATH_MAX + 8];
	struct stat st;

	tut_path(path, sizeof path, ST_TIER_FLASH, "bad");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CU_ASSERT_EQUAL(tier_dev_format(path, ST_TIER_FLASH,
						tut_store, 0, bad[i]), -EINVAL);
		CU_ASSERT(tut_msg_has("size"));
	}
	CU_ASSERT_EQUAL(tier_dev_format(path, ST_TIER_NR, tut_store, 0,
					TUT_DEV_SIZE), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_format(path, ST_TIER_FLASH, NULL, 0,
					TUT_DEV_SIZE), -EINVAL);
	CU_ASSERT_NOT_EQUAL(stat(path, &st), 0);
	memset(lpath, 'a', sizeof lpath - 1);
	lpath[sizeof lpath - 1] = '\0';
	CU_ASSERT_EQUAL(tier_dev_format(lpath, ST_TIER_FLASH, tut_store, 0,
					TUT_DEV_SIZE), -EINVAL);
}

/* Bytes this process has passed to write calls so far (/proc/self/io
 * wchar: any file system, page cache or not), or 0 when unknown. */
static uint64_t tut_wchar(void)
{
	unsigned long long v = 0, got = 0;
	char key[32];
	FILE *f = fopen("/proc/self/io", "r");

	while (f != NULL && fscanf(f, "%31s %llu", key, &v) == 2)
		if (strcmp(key, "wchar:") == 0)
			got = v;
	if (f != NULL)
		fclose(f);
	return got;
}

/* Format a device of tier t and TUT_BIG_SIZE bytes with fill at a fresh
 * path; the bytes written meanwhile into *wrote.  Fails the test on any
 * error. */
static void tut_format_fill(char *path, size_t n, enum st_tier t,
			    uint32_t fill, uint64_t *wrote)
{
	struct tier_format_opts o = {.tf_fill = fill};
	uint64_t w0;

	tut_path(path, n, t, fill == TIER_FILL_ZERO ? "zero" : "reserve");
	w0 = tut_wchar();
	CU_ASSERT_EQUAL_FATAL(tier_dev_format_opts(path, t, tut_store, 7,
						   TUT_BIG_SIZE, &o), 0);
	*wrote = tut_wchar() - w0;
}

/* Every byte of d reads as zero except [off, off + len), which holds the
 * pattern of seed (written there by the caller). */
static bool tut_zero_but(struct tier_dev *d, uint64_t off, size_t len,
			 uint64_t seed)
{
	const size_t chunk = 1u << 20;
	uint8_t *rb = tut_alloc(chunk), *want = tut_alloc(chunk);
	uint8_t *pat = tut_alloc(len + 1);
	bool ok = true;

	CU_ASSERT_FATAL(rb != NULL && want != NULL && pat != NULL);
	tut_fill(pat, len, seed);
	for (uint64_t at = 0; ok && at < TUT_BIG_SIZE; at += chunk) {
		memset(want, 0, chunk);
		for (size_t i = 0; i < chunk; i++)
			if (at + i >= off && at + i < off + len)
				want[i] = pat[at + i - off];
		TUT_CHECK(ok, tier_dev_read(d, at, rb, chunk) == 0);
		TUT_CHECK(ok, memcmp(rb, want, chunk) == 0);
	}
	free(rb);
	free(want);
	free(pat);
	return ok;
}

/*
 * device_fill (enum tier_fill) on the file driver (flash) and the SMR
 * emulation: reserve writes little more than the head at format, zero
 * writes the whole data area; both reserve every block (st_blocks) and
 * read back zeros wherever nothing was written, after a write and after a
 * reopen.  A fill out of range is -EINVAL naming it, nothing left behind.
 */
static void test_format_fill(void)
{
	static const enum st_tier tiers[] = {ST_TIER_FLASH, ST_TIER_SMR};
	struct tier_format_opts bad = {.tf_fill = TIER_FILL_NR};
	uint8_t *wb = tut_alloc(65536);
	char path[512];
	struct stat st;
	uint64_t wrote;

	CU_ASSERT_FATAL(wb != NULL);
	tut_fill(wb, 65536, 11);
	for (size_t i = 0; i < sizeof tiers / sizeof tiers[0]; i++) {
		/* SMR: at zone 0's wp; flash: anywhere. */
		uint64_t off = tiers[i] == ST_TIER_SMR ? 0 : 5ull << 20;

		for (uint32_t fill = 0; fill < TIER_FILL_NR; fill++) {
			struct tier_dev *d = NULL;

			tut_format_fill(path, sizeof path, tiers[i], fill,
					&wrote);
			CU_ASSERT(fill == TIER_FILL_ZERO ?
				  wrote >= TUT_BIG_SIZE :
				  wrote < TUT_BIG_SIZE / 16);
			CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
			CU_ASSERT((uint64_t)st.st_blocks * 512 >= TUT_BIG_SIZE);
			CU_ASSERT_EQUAL_FATAL(tier_dev_open(&d, path, tiers[i],
							    tut_store, 7), 0);
			CU_ASSERT_TRUE(tut_zero_but(d, 0, 0, 0));
			CU_ASSERT_EQUAL(tier_dev_write(d, off, wb, 65536), 0);
			CU_ASSERT_EQUAL(tier_dev_sync(d), 0);
			tier_dev_close(d);
			d = NULL;
			CU_ASSERT_EQUAL_FATAL(tier_dev_open(&d, path, tiers[i],
							    tut_store, 7), 0);
			CU_ASSERT_TRUE(tut_zero_but(d, off, 65536, 11));
			tier_dev_close(d);
		}
	}
	free(wb);
	tut_path(path, sizeof path, ST_TIER_FLASH, "badfill");
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_format_opts(path, ST_TIER_FLASH, tut_store,
					     7, TUT_DEV_SIZE, &bad), -EINVAL);
	CU_ASSERT(tut_msg_has("fill 2"));
	CU_ASSERT_NOT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_STRING_EQUAL(tier_fill_name(TIER_FILL_ZERO), "zero");
	CU_ASSERT_STRING_EQUAL(tier_fill_name(TIER_FILL_RESERVE), "reserve");
	CU_ASSERT_PTR_NULL(tier_fill_name(TIER_FILL_NR));
}

/* Opening a path with no file behind it: -ENOENT naming the path. */
static void test_open_enoent(void)
{
	struct tier_dev *d = NULL;
	char path[512];

	tut_path(path, sizeof path, ST_TIER_FLASH, "missing");
	CU_ASSERT_EQUAL(tier_dev_open(&d, path, ST_TIER_FLASH, tut_store,
				      7), -ENOENT);
	CU_ASSERT(tut_msg_has(path));
	CU_ASSERT_PTR_NULL(d);
	tut_path(path, sizeof path, ST_TIER_NVRAM, "missing");
	CU_ASSERT_EQUAL(tier_dev_open(&d, path, ST_TIER_NVRAM, tut_store,
				      7), -ENOENT);
	CU_ASSERT_PTR_NULL(d);
}

/* ------------------------------------------------------- superblock checks */

/* Open path as the test devices are made and expect rc, with a message
 * naming the path and what: true when all held. */
static bool tut_open_fails(const char *path, enum st_tier t,
			   const uint8_t store[16], uint32_t index, int rc,
			   const char *what)
{
	struct tier_dev *d = NULL;

	bool ok = true;

	err_clear();
	TUT_CHECK(ok, tier_dev_open(&d, path, t, store, index) == rc);
	TUT_CHECK(ok, d == NULL);
	TUT_CHECK(ok, tut_msg_has(path));
	TUT_CHECK(ok, tut_msg_has(what));
	return ok;
}

/* Format a device at a fresh path of tier t and close it. */
static void tut_make_closed(char *path, size_t n, enum st_tier t)
{
	tut_path(path, n, t, "sb");
	CU_ASSERT_EQUAL_FATAL(tier_dev_format(path, t, tut_store, 7,
					      TUT_DEV_SIZE), 0);
}

/* Bad open arguments are refused with -EINVAL. */
static void test_open_einval(void)
{
	char lpath[LIM_PATH_MAX + 8];
	struct tier_dev *d = NULL;

	memset(lpath, 'b', sizeof lpath - 1);
	lpath[sizeof lpath - 1] = '\0';
	CU_ASSERT_EQUAL(tier_dev_open(NULL, "x", ST_TIER_FLASH, tut_store,
				      0), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_open(&d, NULL, ST_TIER_FLASH, tut_store,
				      0), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_open(&d, "x", ST_TIER_FLASH, NULL, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(tier_dev_open(&d, "", ST_TIER_FLASH, tut_store, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(tier_dev_open(&d, lpath, ST_TIER_FLASH, tut_store,
				      0), -EINVAL);
	CU_ASSERT_EQUAL(tier_dev_open(&d, "x", ST_TIER_NR, tut_store, 0),
			-EINVAL);
	CU_ASSERT_PTR_NULL(d);
	CU_ASSERT_STRING_EQUAL(tier_name(ST_TIER_NR), "unknown");
}

/* A device path without a directory part works (its directory is "."). */
static void test_relative_path(void)
{
	char cwd[4096], path[512], *slash;
	struct tier_dev *d = NULL;

	tut_path(path, sizeof path, ST_TIER_FLASH, "rel");
	slash = strrchr(path, '/');
	CU_ASSERT_PTR_NOT_NULL_FATAL(slash);
	*slash = '\0';
	CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof cwd));
	CU_ASSERT_EQUAL_FATAL(chdir(path), 0);
	CU_ASSERT_EQUAL(tier_dev_format(slash + 1, ST_TIER_FLASH, tut_store,
					1, TUT_DEV_SIZE), 0);
	CU_ASSERT_EQUAL(tier_dev_open(&d, slash + 1, ST_TIER_FLASH,
				      tut_store, 1), 0);
	tier_dev_close(d);
	CU_ASSERT_EQUAL_FATAL(chdir(cwd), 0);
}

/* A file device that shrank under an open handle: reading past the end
 * of the file is an I/O error, not a short read. */
static void test_read_past_eof(void)
{
	uint8_t *buf = tut_alloc(8192);
	struct tier_dev *d;
	char path[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	tut_path(path, sizeof path, ST_TIER_SAS, "eof");
	d = tut_make(path, ST_TIER_SAS, TUT_DEV_SIZE);
	CU_ASSERT_EQUAL(truncate(path, LIM_DEV_SB_SIZE + (1 << 20)), 0);
	err_clear();
	CU_ASSERT_EQUAL(tier_dev_read(d, 2 << 20, buf, 8192), -EIO);
	CU_ASSERT(tut_msg_has("end of file"));
	CU_ASSERT_EQUAL(tier_dev_read(d, 4096, buf + 1, 4096), 0);
	tier_dev_close(d);
	free(buf);
}

/* One flipped byte (crc left stale) and a bad magic are corruption. */
static void test_sb_corrupt(void)
{
	struct tier_sb sb;
	char path[512];

	tut_make_closed(path, sizeof path, ST_TIER_FLASH);
	tut_sb_get(path, &sb);
	((uint8_t *)&sb)[offsetof(struct tier_sb, sb_data_size) + 2] ^= 0x04;
	tut_sb_put(path, &sb, false);
	CU_ASSERT(tut_open_fails(path, ST_TIER_FLASH, tut_store, 7,
				 -ST_ECORRUPT, "crc"));
	tut_make_closed(path, sizeof path, ST_TIER_NVRAM);
	tut_sb_get(path, &sb);
	sb.sb_magic ^= 1;
	tut_sb_put(path, &sb, true);
	CU_ASSERT(tut_open_fails(path, ST_TIER_NVRAM, tut_store, 7,
				 -ST_ECORRUPT, "magic"));
}

/* A file too short for its superblock, or for the data area its
 * superblock claims, is corrupt. */
static void test_sb_truncated(void)
{
	char path[512];

	tut_make_closed(path, sizeof path, ST_TIER_SAS);
	CU_ASSERT_EQUAL(truncate(path, LIM_DEV_SB_SIZE + TUT_DEV_SIZE / 2), 0);
	CU_ASSERT(tut_open_fails(path, ST_TIER_SAS, tut_store, 7,
				 -ST_ECORRUPT, "bytes"));
	CU_ASSERT_EQUAL(truncate(path, 50), 0);
	CU_ASSERT(tut_open_fails(path, ST_TIER_SAS, tut_store, 7,
				 -ST_ECORRUPT, "short"));
}

/* A device of another store, index or tier is refused, naming the field. */
static void test_sb_identity(void)
{
	uint8_t other[16];
	char path[512];

	memcpy(other, tut_store, sizeof other);
	other[15] ^= 0xff;
	tut_make_closed(path, sizeof path, ST_TIER_FLASH);
	CU_ASSERT(tut_open_fails(path, ST_TIER_FLASH, other, 7,
				 -ST_ECORRUPT, "store uuid"));
	CU_ASSERT(tut_open_fails(path, ST_TIER_FLASH, tut_store, 8,
				 -ST_ECORRUPT, "index"));
	CU_ASSERT(tut_open_fails(path, ST_TIER_SAS, tut_store, 7,
				 -ST_ECORRUPT, "tier"));
	tut_make_closed(path, sizeof path, ST_TIER_NVRAM);
	CU_ASSERT(tut_open_fails(path, ST_TIER_FLASH, tut_store, 7,
				 -ST_ECORRUPT, "tier"));
}

/* A later superblock version, crc valid, is an incompatible version. */
static void test_sb_version(void)
{
	struct tier_sb sb;
	char path[512];

	tut_make_closed(path, sizeof path, ST_TIER_FLASH);
	tut_sb_get(path, &sb);
	sb.sb_version = TIER_SB_VERSION + 1;
	tut_sb_put(path, &sb, true);
	CU_ASSERT(tut_open_fails(path, ST_TIER_FLASH, tut_store, 7,
				 -ST_EVERSION, "version"));
}

/* A crc-valid superblock naming no known driver, or an impossible data
 * offset, is corrupt. */
static void test_sb_fields(void)
{
	struct tier_sb sb, orig;
	char path[512];

	tut_make_closed(path, sizeof path, ST_TIER_FLASH);
	tut_sb_get(path, &orig);
	sb = orig;
	snprintf(sb.sb_driver, sizeof sb.sb_driver, "bogus");
	tut_sb_put(path, &sb, true);
	CU_ASSERT(tut_open_fails(path, ST_TIER_FLASH, tut_store, 7,
				 -ST_ECORRUPT, "driver"));
	sb = orig;
	sb.sb_data_off = 512;
	tut_sb_put(path, &sb, true);
	CU_ASSERT(tut_open_fails(path, ST_TIER_FLASH, tut_store, 7,
				 -ST_ECORRUPT, "data offset"));
}

/* --------------------------------------------------------- persistence */

/* Bytes written and synced are read back after close and reopen;
 * whether every check held. */
static bool tut_persist(enum st_tier t)
{
	size_t len = 3 * 4096 + 512;
	uint8_t *wb = malloc(len), *rb = malloc(len);
	struct tier_dev *d;
	char path[512];
	bool ok = true;

	TUT_CHECK(ok, wb != NULL && rb != NULL);
	if (!ok)
		return free(wb), free(rb), false;
	tut_path(path, sizeof path, t, "persist");
	d = tut_make(path, t, TUT_DEV_SIZE);
	tut_fill(wb, len, 61);
	TUT_CHECK(ok, tier_dev_write(d, 8192 + 512, wb, len) == 0);
	TUT_CHECK(ok, tier_dev_sync(d) == 0);
	tier_dev_close(d);
	d = NULL;
	TUT_CHECK(ok, tier_dev_open(&d, path, t, tut_store, 7) == 0);
	if (d != NULL) {
		TUT_CHECK(ok, tier_dev_read(d, 8192 + 512, rb, len) == 0);
		TUT_CHECK(ok, memcmp(wb, rb, len) == 0);
		TUT_CHECK(ok, d->td_nr_writes == 0);
		tier_dev_close(d);
	}
	free(wb);
	free(rb);
	return ok;
}

static void test_persist_flash(void)
{
	CU_ASSERT(tut_persist(ST_TIER_FLASH));
}

static void test_persist_sas(void)
{
	CU_ASSERT(tut_persist(ST_TIER_SAS));
}

static void test_persist_nvram(void)
{
	CU_ASSERT(tut_persist(ST_TIER_NVRAM));
}

/* --------------------------------------------------------- concurrency */

#define TUT_THREADS 4
#define TUT_ROUNDS 32
#define TUT_REGION (256u << 10)

struct tut_worker {
	struct tier_dev *tw_dev;
	unsigned tw_id;
	int tw_failures;
};

/* One thread: write and read back patterns in its own region, with buffers
 * at varying misalignment.  Counts failures (CUnit is not thread-safe). */
static void *tut_worker_run(void *arg)
{
	struct tut_worker *w = arg;
	uint8_t *wb = tut_alloc(TUT_REGION + 64), *rb = tut_alloc(TUT_REGION + 64);
	uint64_t base = (uint64_t)w->tw_id * TUT_REGION;

	if (wb == NULL || rb == NULL)
		w->tw_failures++;
	for (unsigned r = 0; r < TUT_ROUNDS && wb != NULL && rb != NULL; r++) {
		size_t mis = r % 3 == 0 ? 0 : r, len = TUT_REGION / 4;
		uint64_t off = base + (r % 4) * len;

		tut_fill(wb + mis, len, w->tw_id * 1000 + r);
		if (tier_dev_write(w->tw_dev, off, wb + mis, len) != 0 ||
		    tier_dev_read(w->tw_dev, off, rb + 1, len) != 0 ||
		    memcmp(wb + mis, rb + 1, len) != 0)
			w->tw_failures++;
	}
	free(wb);
	free(rb);
	return NULL;
}

/* Concurrent I/O on distinct ranges of one device; counters add up;
 * whether every check held. */
static bool tut_threads(enum st_tier t)
{
	struct tut_worker w[TUT_THREADS];
	pthread_t th[TUT_THREADS];
	struct tier_dev *d;
	char path[512];
	unsigned started = 0;
	bool ok = true;

	tut_path(path, sizeof path, t, "mt");
	d = tut_make(path, t, TUT_DEV_SIZE);
	for (unsigned i = 0; ok && i < TUT_THREADS; i++, started++) {
		w[i] = (struct tut_worker){.tw_dev = d, .tw_id = i};
		TUT_CHECK(ok, pthread_create(&th[i], NULL, tut_worker_run,
					     &w[i]) == 0);
		if (!ok)
			break;
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		TUT_CHECK(ok, w[i].tw_failures == 0);
	}
	if (ok) {
		TUT_CHECK(ok, d->td_nr_writes == TUT_THREADS * TUT_ROUNDS);
		TUT_CHECK(ok, d->td_nr_reads == TUT_THREADS * TUT_ROUNDS);
	}
	tier_dev_close(d);
	return ok;
}

static void test_threads_flash(void)
{
	CU_ASSERT(tut_threads(ST_TIER_FLASH));
}

static void test_threads_nvram(void)
{
	CU_ASSERT(tut_threads(ST_TIER_NVRAM));
}

/* ---------------------------------------------------------- fault points */

#ifdef STRATA_FAULT_INJECT
/* Each of write, read and sync fails once with -EIO when its point is
 * armed for one hit, and works on the next call; whether every check held. */
static bool tut_fault_io(enum st_tier t)
{
	uint8_t buf[4096];
	struct tier_dev *d;
	char path[512];
	bool ok = true;

	tut_path(path, sizeof path, t, "fault");
	d = tut_make(path, t, TUT_DEV_SIZE);
	tut_fill(buf, sizeof buf, 71);
	fault_arm("tier.write", 0, 1);
	TUT_CHECK(ok, tier_dev_write(d, 0, buf, sizeof buf) == -EIO);
	TUT_CHECK(ok, tut_msg_has(path));
	TUT_CHECK(ok, fault_fired("tier.write") == 1);
	TUT_CHECK(ok, tier_dev_write(d, 0, buf, sizeof buf) == 0);
	fault_arm("tier.read", 0, 1);
	TUT_CHECK(ok, tier_dev_read(d, 0, buf, sizeof buf) == -EIO);
	TUT_CHECK(ok, tier_dev_read(d, 0, buf, sizeof buf) == 0);
	fault_arm("tier.sync", 0, 1);
	TUT_CHECK(ok, tier_dev_sync(d) == -EIO);
	TUT_CHECK(ok, tier_dev_sync(d) == 0);
	fault_reset();
	TUT_CHECK(ok, d->td_nr_writes == 1);
	TUT_CHECK(ok, d->td_nr_reads == 1);
	TUT_CHECK(ok, d->td_nr_syncs == 1);
	tier_dev_close(d);
	return ok;
}

static void test_fault_io_flash(void)
{
	CU_ASSERT(tut_fault_io(ST_TIER_FLASH));
}

static void test_fault_io_nvram(void)
{
	CU_ASSERT(tut_fault_io(ST_TIER_NVRAM));
}

/* A format that fails at any stage leaves no file behind; whether every
 * check held. */
static bool tut_fault_format(enum st_tier t, const char *point)
{
	char path[512];
	struct stat st;
	bool ok = true;

	tut_path(path, sizeof path, t, "ffmt");
	fault_arm(point, 0, 1);
	TUT_CHECK(ok, tier_dev_format(path, t, tut_store, 7, TUT_DEV_SIZE) ==
			      -EIO);
	fault_reset();
	TUT_CHECK(ok, stat(path, &st) != 0);
	TUT_CHECK(ok, tier_dev_format(path, t, tut_store, 7, TUT_DEV_SIZE) ==
			      0);
	return ok;
}

static void test_fault_format(void)
{
	CU_ASSERT(tut_fault_format(ST_TIER_FLASH, "tier.file.format"));
	CU_ASSERT(tut_fault_format(ST_TIER_NVRAM, "tier.pmem2.format"));
	CU_ASSERT(tut_fault_format(ST_TIER_SAS, "tier.format"));
}

/* An open that fails after the driver opened closes it again; the next
 * open works. */
static void test_fault_open(void)
{
	struct tier_dev *d = NULL;
	char path[512];

	tut_make_closed(path, sizeof path, ST_TIER_NVRAM);
	fault_arm("tier.open", 0, 1);
	CU_ASSERT_EQUAL(tier_dev_open(&d, path, ST_TIER_NVRAM, tut_store,
				      7), -EIO);
	fault_reset();
	CU_ASSERT_PTR_NULL(d);
	CU_ASSERT_EQUAL(tier_dev_open(&d, path, ST_TIER_NVRAM, tut_store,
				      7), 0);
	tier_dev_close(d);
}

/* A libpmem2 failure at open is reported with libpmem2's own message and
 * leaves nothing open; the next open works. */
static void test_fault_pmem2_map(void)
{
	struct tier_dev *d = NULL;
	char path[512];

	tut_make_closed(path, sizeof path, ST_TIER_NVRAM);
	fault_arm("tier.pmem2.map", 0, 1);
	CU_ASSERT(tut_open_fails(path, ST_TIER_NVRAM, tut_store, 7,
				 -EIO, "granularity"));
	fault_reset();
	CU_ASSERT(tut_msg_has("pmem2"));
	CU_ASSERT_EQUAL(tier_dev_open(&d, path, ST_TIER_NVRAM, tut_store,
				      7), 0);
	tier_dev_close(d);
}

/* True when path is on a file system known to support O_DIRECT. */
static bool tut_fs_has_direct(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 &&
	       (sf.f_type == TUT_EXT4_MAGIC || sf.f_type == TUT_XFS_MAGIC);
}

/* A file system that refuses O_DIRECT: the device runs buffered, and all
 * request shapes still work. */
static void test_fault_nodirect(void)
{
	struct tier_dev *d;
	char path[512];

	tut_make_closed(path, sizeof path, ST_TIER_FLASH);
	fault_arm("tier.file.nodirect", 0, 1);
	CU_ASSERT_EQUAL_FATAL(tier_dev_open(&d, path, ST_TIER_FLASH,
					    tut_store, 7), 0);
	fault_reset();
	CU_ASSERT_FALSE(d->td_direct);
	CU_ASSERT(tut_rw_check(d, 0, 8192, 0, 0, 81));
	CU_ASSERT(tut_rw_check(d, 512, 1024, 3, 5, 82));
	CU_ASSERT_EQUAL(tier_dev_sync(d), 0);
	tier_dev_close(d);
	CU_ASSERT_EQUAL_FATAL(tier_dev_open(&d, path, ST_TIER_FLASH,
					    tut_store, 7), 0);
	if (tut_fs_has_direct(path))
		CU_ASSERT_TRUE(d->td_direct);
	CU_ASSERT(tut_rw_check(d, 512, 1024, 3, 5, 83));
	tier_dev_close(d);
}

/* A failed fdatasync is remembered: later syncs fail too until reopen. */
static void test_fault_sync_sticky(void)
{
	struct tier_dev *d;
	char path[512];

	tut_path(path, sizeof path, ST_TIER_FLASH, "sticky");
	d = tut_make(path, ST_TIER_FLASH, TUT_DEV_SIZE);
	fault_arm("tier.file.sync", 0, 1);
	CU_ASSERT_EQUAL(tier_dev_sync(d), -EIO);
	fault_reset();
	CU_ASSERT_EQUAL(tier_dev_sync(d), -EIO);
	CU_ASSERT(tut_msg_has("earlier sync failed"));
	tier_dev_close(d);
	CU_ASSERT_EQUAL_FATAL(tier_dev_open(&d, path, ST_TIER_FLASH,
					    tut_store, 7), 0);
	CU_ASSERT_EQUAL(tier_dev_sync(d), 0);
	tier_dev_close(d);
}
#endif

/* Opening an NVRAM device maps nothing at a fixed address.  libpmem2's
 * pmem2_map_new() maps over its reservation with MAP_FIXED, first with
 * MAP_SYNC; on a file system offering MAP_SYNC (ext4, xfs) for a file that
 * is not DAX the kernel drops the reservation before refusing the flag,
 * and another thread's mapping made in that hole (a malloc arena, a
 * libfabric buffer pool) was then overwritten by the retry: a starting
 * server died with its heap under a device's zeros (tiers/nvram/nvram.c).
 * A child process that the kernel refuses any MAP_FIXED mmap of a file
 * (seccomp) opens, writes and reads a device on a disk file system
 * (ut_tmpdir()): before the fix the open failed there. */
static void test_nvram_open_no_fixed_map(void)
{
	const char *dir = ut_tmpdir("tier-nvram-disk");
	char path[512];
	int status = -1;
	pid_t pid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	snprintf(path, sizeof path, "%s/nofixed", dir);
	CU_ASSERT_EQUAL_FATAL(tier_dev_format(path, ST_TIER_NVRAM, tut_store,
					      7, TUT_DEV_SIZE), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				 offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 5),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				 offsetof(struct seccomp_data, args[3])),
			BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_FIXED, 0, 3),
			/* a file's mapping (fd, low word, not -1): the
			 * allocator's own anonymous ones (ASan) pass */
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				 offsetof(struct seccomp_data, args[4])),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {
			.len = sizeof f / sizeof f[0], .filter = f,
		};
		struct tier_dev *d = NULL;
		uint8_t w[4096], r[4096];

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			_exit(2);
		if (tier_dev_open(&d, path, ST_TIER_NVRAM, tut_store, 7) != 0) {
			fprintf(stderr, "\n    open with MAP_FIXED refused: "
				"%s\n", err_msg());
			_exit(3);
		}
		memset(w, 0x5a, sizeof w);
		if (tier_dev_write(d, 0, w, sizeof w) != 0 ||
		    tier_dev_read(d, 0, r, sizeof r) != 0 ||
		    memcmp(w, r, sizeof w) != 0)
			_exit(4);
		tier_dev_close(d);
		_exit(0);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	unlink(path);
}

/* ------------------------------------------------------------- registry */

static const struct {
	const char *name;
	CU_TestFunc fn;
} tut_tests[] = {
	{"driver_lookup", test_driver_lookup},
	{"sb_fill_crc", test_sb_fill_crc},
	{"nvram_open_no_fixed_map", test_nvram_open_no_fixed_map},
	{"roundtrip_flash", test_roundtrip_flash},
	{"roundtrip_sas", test_roundtrip_sas},
	{"roundtrip_nvram", test_roundtrip_nvram},
	{"data_offset_flash", test_data_offset_flash},
	{"data_offset_nvram", test_data_offset_nvram},
	{"unaligned_buf_flash", test_unaligned_buf_flash},
	{"unaligned_buf_nvram", test_unaligned_buf_nvram},
	{"off_512_flash", test_off_512_flash},
	{"off_512_sas", test_off_512_sas},
	{"off_512_nvram", test_off_512_nvram},
	{"large_io_flash", test_large_io_flash},
	{"large_io_nvram", test_large_io_nvram},
	{"flash_on_shm", test_flash_on_shm},
	{"einval", test_einval},
	{"format_eexist", test_format_eexist},
	{"format_einval", test_format_einval},
	{"format_fill", test_format_fill},
	{"open_enoent", test_open_enoent},
	{"open_einval", test_open_einval},
	{"relative_path", test_relative_path},
	{"read_past_eof", test_read_past_eof},
	{"sb_corrupt", test_sb_corrupt},
	{"sb_truncated", test_sb_truncated},
	{"sb_identity", test_sb_identity},
	{"sb_version", test_sb_version},
	{"sb_fields", test_sb_fields},
	{"persist_flash", test_persist_flash},
	{"persist_sas", test_persist_sas},
	{"persist_nvram", test_persist_nvram},
	{"threads_flash", test_threads_flash},
	{"threads_nvram", test_threads_nvram},
#ifdef STRATA_FAULT_INJECT
	{"fault_io_flash", test_fault_io_flash},
	{"fault_io_nvram", test_fault_io_nvram},
	{"fault_format", test_fault_format},
	{"fault_open", test_fault_open},
	{"fault_pmem2_map", test_fault_pmem2_map},
	{"fault_nodirect", test_fault_nodirect},
	{"fault_sync_sticky", test_fault_sync_sticky},
#endif
};

/* Register the "tier" suite with the runner. */
int tier_ut_add(void)
{
	CU_pSuite s = CU_add_suite("tier", tut_init, tut_fini);

	if (s == NULL)
		return -1;
	for (size_t i = 0; i < sizeof tut_tests / sizeof tut_tests[0]; i++)
		if (CU_add_test(s, tut_tests[i].name, tut_tests[i].fn) == NULL)
			return -1;
	if (tier_ut_smr_add(s) != 0 || tier_ut_io_add(s) != 0)
		return -1;
	return 0;
}
