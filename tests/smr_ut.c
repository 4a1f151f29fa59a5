/*
 * smr_ut.c — plain objects on the SMR tier through the Clovis API: appends
 * and overwrites (dead space grows, empty zones run out), the cleaner
 * (clovis_smr_clean at 50 % and 100 % live), writes that run the cleaner
 * themselves when only the cleaner's reserved zone is left, -ENOSPC only
 * when live data fills the device, a reader thread checking objects while
 * the cleaner moves them, a reopen after cleaning, a device whose zones
 * are all partly live (the cleaner's reserve), and writes that need the
 * cleaner while the deadest zone holds appended bytes not yet committed
 * (their own, or another write's in flight: such a zone is not taken).
 *
 * The store has one flash device (for the default layout) and one SMR
 * device of 16 MiB in 1 MiB zones, so zones fill after a few writes.  The
 * tests share it and run in order: each one starts from the objects and
 * zones the previous ones left.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clovis/clovis.h"
#include "core/fault.h"
#include "tests/ut.h"

#define ID_HI 0x53e7ull
#define DEV_SIZE (16ull << 20)
#define ZONE (1ull << 20)
#define BS 16u          /* 64 KiB blocks: 16 to a zone */
#define MSG_LEN 512
#define LIVE_ALL ((16ull + 48 + 16) << BS) /* S1 + S2 + S3 */

static const char ut_conf_text[] =
	"# smr suite: one flash device, one SMR device in 1 MiB zones\n"
	"devices:\n"
	"  - { tier: flash }\n"
	"  - { tier: smr, zone_size: 1MiB }\n";

static struct clovis *cl;
static char root[512], conf_path[640], dir[640];
static uint32_t smr_dev, flash_dev;

/** A plain SMR object and the model of its content. */
struct sobj {
	struct clovis_obj so_o;
	uint64_t so_lo;
	uint64_t so_nb;
	uint8_t *so_model;
};

/* S1 (1 MiB), S2 (3 MiB), S3 (1 MiB): made by the first tests. */
static struct sobj s1, s2, s3;

/* ------------------------------------------------------------ store */

static int store_open(void)
{
	struct clovis_conf c = {.cc_data_dir = dir, .cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = DEV_SIZE, .cc_nvram_dir = root,
				.cc_config = conf_path};
	struct clovis_dev_info di[4];
	uint32_t n = 4;
	int rc = clovis_init(&cl, &c);

	if (rc != 0) {
		fprintf(stderr, "smr: clovis_init %s: %d %s\n", dir, rc,
			clovis_errmsg());
		cl = NULL;
		return rc;
	}
	rc = clovis_dev_list(cl, di, &n);
	for (uint32_t i = 0; rc == 0 && i < n && i < 4; i++) {
		if (di[i].di_tier == CLOVIS_TIER_SMR)
			smr_dev = i;
		else if (di[i].di_tier == CLOVIS_TIER_FLASH)
			flash_dev = i;
	}
	return rc;
}

static int suite_init(void)
{
	const char *d = ut_tmpdir("smr");
	FILE *f;

	if (d == NULL)
		return -1;
	snprintf(root, sizeof root, "%s", d);
	snprintf(conf_path, sizeof conf_path, "%s/smr.yaml", root);
	snprintf(dir, sizeof dir, "%s/store", root);
	f = fopen(conf_path, "w");
	if (f == NULL)
		return -1;
	fputs(ut_conf_text, f);
	if (fclose(f) != 0)
		return -1;
	return store_open() == 0 ? 0 : -1;
}

static int suite_fini(void)
{
	free(s1.so_model);
	free(s2.so_model);
	free(s3.so_model);
	clovis_fini(cl);
	cl = NULL;
	return clovis_store_destroy(dir);
}

static struct clovis_dev_info smr_info(void)
{
	struct clovis_dev_info di[4];
	uint32_t n = 4;

	/* No CUnit assertion here: the writer thread calls it too. */
	memset(&di[smr_dev], 0, sizeof di[smr_dev]);
	if (clovis_dev_list(cl, di, &n) != 0)
		fprintf(stderr, "smr: dev_list: %s\n", clovis_errmsg());
	return di[smr_dev];
}

/* Bytes the SMR device holds live (mapped by an extent). */
static uint64_t smr_live(void)
{
	struct clovis_dev_info di = smr_info();

	return di.di_size_bytes - di.di_free_bytes;
}

/* ------------------------------------------------------------ objects */

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x100000001b3ull, w;

	for (size_t i = 0; i < len; i += sizeof w) {
		w = mix(&s);
		memcpy(p + i, &w, sizeof w);
	}
}

static int ent_sync(struct clovis_entity *e, enum clovis_entity_opcode oc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, oc, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* Create (or, with create false, open) object lo of nb blocks on SMR. */
static int sobj_make(struct sobj *t, uint64_t lo, uint64_t nb, bool create)
{
	struct clovis_obj_attr a = {.oa_block_shift = BS,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN,
				    .oa_tier = CLOVIS_TIER_SMR};
	struct clovis_id id = {ID_HI, lo};
	int rc;

	if (create) {
		t->so_lo = lo;
		t->so_nb = nb;
		t->so_model = calloc(nb, 1u << BS);
		if (t->so_model == NULL)
			return -ENOMEM;
	}
	rc = clovis_obj_init(&t->so_o, clovis_default_realm(cl), &id,
			     create ? &a : NULL);
	if (rc == 0)
		rc = ent_sync(&t->so_o.ob_entity, create ? CLOVIS_EO_CREATE
							 : CLOVIS_EO_OPEN);
	return rc;
}

/* One-extent READ or WRITE of blocks [s, s + n); message into msg. */
static int sobj_io(struct sobj *t, enum clovis_obj_opcode oc, uint64_t s,
		   uint64_t n, uint8_t *buf, char *msg)
{
	size_t len = (size_t)n << BS;
	void *p = buf;
	struct clovis_extvec ev = {1, &s, &n};
	struct clovis_bufvec bv = {1, &p, &len};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(&t->so_o, oc, &ev, &bv, 0, &op);

	if (rc != 0)
		return rc;
	rc = clovis_op_launch(&op, 1);
	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (msg != NULL)
		snprintf(msg, MSG_LEN, "%s", clovis_op_errmsg(op));
	clovis_op_free(op);
	return rc;
}

/* Write [s, s + n) with fresh content; the model follows on success. */
static int sobj_write(struct sobj *t, uint64_t s, uint64_t n, uint64_t seed,
		      char *msg)
{
	size_t len = (size_t)n << BS;
	uint8_t *buf = malloc(len);
	int rc;

	if (buf == NULL)
		return -ENOMEM;
	fill(buf, len, seed);
	rc = sobj_io(t, CLOVIS_OC_WRITE, s, n, buf, msg);
	if (rc == 0)
		memcpy(t->so_model + (s << BS), buf, len);
	free(buf);
	return rc;
}

/* Does the whole object read back as its model? */
static bool sobj_check(struct sobj *t)
{
	size_t len = (size_t)t->so_nb << BS;
	uint8_t *buf = malloc(len);
	char msg[MSG_LEN] = "";
	bool ok;
	int rc;

	if (buf == NULL)
		return false;
	rc = sobj_io(t, CLOVIS_OC_READ, 0, t->so_nb, buf, msg);
	ok = rc == 0 && memcmp(buf, t->so_model, len) == 0;
	if (!ok)
		fprintf(stderr, "smr: object %" PRIu64 ": rc %d %s%s\n", t->so_lo,
			rc, msg, rc == 0 ? "content differs" : "");
	free(buf);
	return ok;
}

/* ------------------------------------------------------------ tests */

/* Overwrites append: empty zones run out and dead space grows while the
 * live bytes stay the object's size; the data reads back exactly. */
static void test_overwrite(void)
{
	struct clovis_dev_info d0, d1;
	uint32_t seed = 5;

	d0 = smr_info();
	CU_ASSERT_EQUAL(d0.di_zone_size, ZONE);
	CU_ASSERT_EQUAL(d0.di_zones, DEV_SIZE / ZONE);
	CU_ASSERT_EQUAL(d0.di_zones_empty, d0.di_zones);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&s1, 1024, 16, true), 0);
	CU_ASSERT_EQUAL(sobj_write(&s1, 0, 16, 1, NULL), 0);
	CU_ASSERT(sobj_check(&s1));
	d0 = smr_info();
	CU_ASSERT_EQUAL(d0.di_zones_empty, d0.di_zones - 1);
	for (uint32_t i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(sobj_write(&s1, 0, 16, 10 + i, NULL), 0);
		CU_ASSERT(sobj_check(&s1));
	}
	for (uint32_t i = 0; i < 24; i++) {
		uint64_t s = (uint64_t)rand_r(&seed) % 16;
		uint64_t n = 1 + (uint64_t)rand_r(&seed) % (s > 12 ? 16 - s : 4);

		CU_ASSERT_EQUAL(sobj_write(&s1, s, n, 100 + i, NULL), 0);
	}
	CU_ASSERT(sobj_check(&s1));
	d1 = smr_info();
	CU_ASSERT(d1.di_zones_empty + 5 <= d0.di_zones_empty);
	/* Written (every non-empty zone but the open one, at least) minus
	 * live: more than 4 MiB dead. */
	CU_ASSERT(smr_live() <= 2 * 16 * (1ull << BS));
	CU_ASSERT((d1.di_zones - d1.di_zones_empty - 1) * ZONE >
		  smr_live() + 4 * ZONE);
}

/* The cleaner resets dead zones (50 %), then moves live data out of full
 * zones (100 %); the data reads back exactly throughout. */
static void test_clean(void)
{
	struct clovis_clean_stats cs;
	uint32_t empty = smr_info().di_zones_empty;

	CU_ASSERT_EQUAL(clovis_smr_clean(cl, smr_dev, 50, &cs), 0);
	CU_ASSERT(cs.cs_zones_reset > 0);
	CU_ASSERT(smr_info().di_zones_empty > empty);
	CU_ASSERT(sobj_check(&s1));
	CU_ASSERT_EQUAL_FATAL(sobj_make(&s2, 1025, 48, true), 0);
	CU_ASSERT_EQUAL(sobj_write(&s2, 0, 48, 2, NULL), 0);
	CU_ASSERT_EQUAL(clovis_smr_clean(cl, smr_dev, 100, &cs), 0);
	CU_ASSERT(cs.cs_zones_reset > 0);
	CU_ASSERT(cs.cs_bytes_moved > 0);
	CU_ASSERT(cs.cs_records_moved > 0);
	CU_ASSERT(sobj_check(&s1));
	CU_ASSERT(sobj_check(&s2));
	CU_ASSERT_EQUAL(smr_live(), (16 + 48) * (1ull << BS));
	/* Every SMR device at once; bad arguments. */
	CU_ASSERT_EQUAL(clovis_smr_clean(cl, UINT32_MAX, 50, &cs), 0);
	CU_ASSERT_EQUAL(clovis_smr_clean(cl, flash_dev, 50, &cs), -EINVAL);
	CU_ASSERT_EQUAL(clovis_smr_clean(cl, smr_dev, 101, &cs), -EINVAL);
	CU_ASSERT_EQUAL(clovis_smr_clean(NULL, smr_dev, 50, &cs), -EINVAL);
	CU_ASSERT(sobj_check(&s1));
	CU_ASSERT(sobj_check(&s2));
}

/*
 * Overwrites never wedge on dead space: when only the cleaner's reserved
 * empty zone is left, a write runs the cleaner on the zone with the most
 * dead bytes and goes on (40 overwrites of 1 MiB, all succeed, and the
 * reserve is still empty after them).  -ENOSPC (naming the cleaner) comes
 * only when live data fills every zone but the reserve; it changes
 * nothing, and the cleaner can still move a whole live zone through the
 * reserve.  Once that data is deleted, writes succeed again.
 */
static void test_enospc(void)
{
	struct clovis_clean_stats cs;
	struct sobj big = {0};
	char msg[MSG_LEN] = "";
	int rc = 0, writes = 0;

	CU_ASSERT_EQUAL_FATAL(sobj_make(&s3, 1026, 16, true), 0);
	while (rc == 0 && writes < 40) {
		rc = sobj_write(&s3, 0, 16, 300 + (uint64_t)writes, msg);
		writes++;
	}
	if (rc != 0)
		fprintf(stderr, "smr: overwrite %d: %d %s\n", writes, rc, msg);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(smr_info().di_zones_empty >= 1);
	CU_ASSERT(sobj_check(&s3));
	/* Fill the device with live data: 11 MiB more than the 5 MiB live,
	 * while 15 zones of 1 MiB are open to ordinary writes. */
	CU_ASSERT_EQUAL_FATAL(sobj_make(&big, 1027, 176, true), 0);
	rc = 0;
	for (uint64_t b = 0; rc == 0 && b < big.so_nb; b += 16)
		rc = sobj_write(&big, b, 16, 350 + b, msg);
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "cleaner"));
	CU_ASSERT_EQUAL(smr_info().di_zones_empty, 1);
	CU_ASSERT(sobj_check(&big));
	CU_ASSERT(sobj_check(&s3));
	CU_ASSERT(sobj_check(&s1));
	CU_ASSERT(sobj_check(&s2));
	CU_ASSERT_EQUAL(clovis_smr_clean(cl, smr_dev, 100, &cs), 0);
	CU_ASSERT(cs.cs_zones_reset > 0);
	CU_ASSERT_EQUAL(smr_info().di_zones_empty, 1);
	CU_ASSERT(sobj_check(&big));
	/* The space of a DELETE that reached STABLE comes back after an RCU
	 * grace period, on the reclaimer thread; a write right after it must
	 * wait for that space rather than fail -ENOSPC (eng_reclaim_drain()).
	 * The fault point makes the grace period 300 ms long. */
	fault_arm("eng.reclaim.slow", 0, 0);
	CU_ASSERT_EQUAL(ent_sync(&big.so_o.ob_entity, CLOVIS_EO_DELETE), 0);
	free(big.so_model);
	rc = sobj_write(&s3, 0, 16, 399, msg);
	if (rc != 0)
		fprintf(stderr, "smr: write after delete: %d %s\n", rc, msg);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(fault_fired("eng.reclaim.slow") > 0);
	fault_reset();
	CU_ASSERT(sobj_check(&s3));
	CU_ASSERT(sobj_check(&s1));
	CU_ASSERT(sobj_check(&s2));
}

/** What the reader and writer threads did. */
struct worker {
	volatile int wk_stop;
	uint64_t wk_ops;    /* reads or writes done */
	uint64_t wk_bad;    /* reads that differed, writes that failed */
	uint64_t wk_nospc;  /* writes refused for want of an empty zone */
};

static bool worker_stopped(struct worker *w)
{
	return __atomic_load_n(&w->wk_stop, __ATOMIC_ACQUIRE) != 0;
}

/* Read S1 and S2 over and over until told to stop. */
static void *reader_main(void *arg)
{
	struct worker *w = arg;

	while (!worker_stopped(w)) {
		w->wk_bad += !sobj_check(&s1);
		w->wk_bad += !sobj_check(&s2);
		w->wk_ops += 2;
	}
	return NULL;
}

/* Overwrite random ranges of S3 until told to stop.  It leaves the
 * explicit cleaner something to do: it waits while fewer than 3 zones are
 * empty.  -ENOSPC (an append that found no room after all) is counted and
 * changes nothing. */
static void *writer_main(void *arg)
{
	struct worker *w = arg;
	uint32_t seed = 77;

	while (!worker_stopped(w)) {
		uint64_t s = (uint64_t)rand_r(&seed) % 16;
		uint64_t n = 1 + (uint64_t)rand_r(&seed) % (16 - s);
		int rc;

		if (smr_info().di_zones_empty < 3) {
			nanosleep(&(struct timespec){0, 1000000}, NULL);
			continue;
		}
		rc = sobj_write(&s3, s, n, 1000 + w->wk_ops, NULL);

		w->wk_ops++;
		if (rc == -ENOSPC)
			w->wk_nospc++;
		else if (rc != 0)
			w->wk_bad++;
	}
	return NULL;
}

/* While the cleaner runs over and over, moving the very objects read, a
 * reader sees exact data every time and a writer's overwrites of another
 * object all land (the cleaner's copy of a record the writer replaced is
 * dropped). */
static void test_clean_with_reader(void)
{
	struct worker r = {0}, w = {0};
	pthread_t rt, wt;
	uint64_t reset = 0, moved = 0;
	/* 40 cleaner passes; 16 under tests/asan.sh (STRATA_UT_QUICK) */
	const uint32_t passes = ut_rounds(40, 16);

	CU_ASSERT_EQUAL_FATAL(pthread_create(&rt, NULL, reader_main, &r), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&wt, NULL, writer_main, &w), 0);
	for (uint32_t i = 0; i < passes; i++) {
		struct clovis_clean_stats cs;

		CU_ASSERT_EQUAL(clovis_smr_clean(cl, smr_dev, i % 2 ? 100 : 50,
						 &cs), 0);
		reset += cs.cs_zones_reset;
		moved += cs.cs_records_moved;
	}
	__atomic_store_n(&r.wk_stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&w.wk_stop, 1, __ATOMIC_RELEASE);
	CU_ASSERT_EQUAL(pthread_join(rt, NULL), 0);
	CU_ASSERT_EQUAL(pthread_join(wt, NULL), 0);
	CU_ASSERT(r.wk_ops > 0);
	CU_ASSERT_EQUAL(r.wk_bad, 0);
	CU_ASSERT(w.wk_ops > w.wk_nospc);
	CU_ASSERT_EQUAL(w.wk_bad, 0);
	CU_ASSERT(reset > 0);
	CU_ASSERT(moved > 0);
	CU_ASSERT(sobj_check(&s1));
	CU_ASSERT(sobj_check(&s2));
	CU_ASSERT(sobj_check(&s3));
	/* Space of replaced and moved records all comes back. */
	for (int i = 0; i < 6000 && smr_live() != LIVE_ALL; i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	CU_ASSERT_EQUAL(smr_live(), LIVE_ALL);
}

/* After a reopen the data, the zones and the live bytes are as they were. */
static void test_reopen(void)
{
	struct clovis_dev_info before = smr_info();
	struct clovis_clean_stats cs;

	clovis_fini(cl);
	cl = NULL;
	CU_ASSERT_EQUAL_FATAL(store_open(), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&s1, 1024, 16, false), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&s2, 1025, 48, false), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&s3, 1026, 16, false), 0);
	CU_ASSERT(sobj_check(&s1));
	CU_ASSERT(sobj_check(&s2));
	CU_ASSERT(sobj_check(&s3));
	/* recovery at open resets written zones with nothing live left */
	CU_ASSERT(smr_info().di_zones_empty >= before.di_zones_empty);
	CU_ASSERT_EQUAL(smr_live(), LIVE_ALL);
	CU_ASSERT_EQUAL(clovis_smr_clean(cl, smr_dev, 100, &cs), 0);
	CU_ASSERT(sobj_check(&s1));
	CU_ASSERT(sobj_check(&s2));
	CU_ASSERT(sobj_check(&s3));
}

/*
 * The cleaner is never wedged (it once was: ordinary appends took the last
 * empty zone, so with every zone partly live the cleaner had nowhere to
 * move live bytes, clovis_smr_clean() failed with -ENOSPC at any live_pct
 * and the store took no more writes with 10 MiB dead).  A 6 MiB object on
 * the 16 MiB device, then 600 small random overwrites: all succeed (writes
 * run the cleaner when only the reserve is left), the explicit cleaner
 * works at 100 %, and the data reads back exactly, also after a reopen.
 */
static void test_cleaner_reserve(void)
{
	struct clovis *shared = cl;
	struct clovis_clean_stats cs;
	struct sobj w = {0};
	char msg[MSG_LEN] = "";
	uint32_t seed = 3;
	int rc = 0, n = 0;

	snprintf(dir, sizeof dir, "%s/wedge", root);
	CU_ASSERT_EQUAL_FATAL(store_open(), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&w, 2000, 96, true), 0);
	CU_ASSERT_EQUAL(sobj_write(&w, 0, 96, 6999, NULL), 0);
	while (rc == 0 && n++ < 600) {
		uint64_t s = (uint64_t)rand_r(&seed) % 94;

		rc = sobj_write(&w, s, 1 + (uint64_t)rand_r(&seed) % 3, 7000 + n,
				msg);
	}
	if (rc != 0)
		fprintf(stderr, "smr: write %d: %d %s\n", n, rc, msg);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(smr_info().di_zones_empty >= 1);
	CU_ASSERT(sobj_check(&w));
	rc = clovis_smr_clean(cl, smr_dev, 100, &cs);
	if (rc != 0)
		fprintf(stderr, "smr: clean: %d %s\n", rc, clovis_errmsg());
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(cs.cs_zones_reset > 0);
	CU_ASSERT_EQUAL(sobj_write(&w, 0, 4, 7999, NULL), 0);
	CU_ASSERT(sobj_check(&w));
	clovis_fini(cl);
	CU_ASSERT_EQUAL_FATAL(store_open(), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&w, 2000, 96, false), 0);
	CU_ASSERT(sobj_check(&w));
	free(w.so_model);
	clovis_fini(cl);
	CU_ASSERT_EQUAL(clovis_store_destroy(dir), 0);
	cl = shared;
	snprintf(dir, sizeof dir, "%s/store", root);
}

/* WRITE of blocks [s0, s0 + n0) and [t1, t1 + n1) of t in one op, fresh
 * content; the model follows on success. */
static int sobj_write2(struct sobj *t, uint64_t s0, uint64_t n0, uint64_t t1,
		       uint64_t n1, uint64_t seed, char *msg)
{
	uint64_t st[2] = {s0, t1}, nb[2] = {n0, n1};
	size_t len = (size_t)(n0 + n1) << BS;
	uint8_t *buf = malloc(len);
	void *p = buf;
	struct clovis_extvec ev = {2, st, nb};
	struct clovis_bufvec bv = {1, &p, &len};
	struct clovis_op *op = NULL;
	int rc;

	if (buf == NULL)
		return -ENOMEM;
	fill(buf, len, seed);
	rc = clovis_obj_op(&t->so_o, CLOVIS_OC_WRITE, &ev, &bv, 0, &op);
	if (rc == 0)
		rc = clovis_op_launch(&op, 1);
	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	snprintf(msg, MSG_LEN, "%s", op != NULL ? clovis_op_errmsg(op) : "");
	clovis_op_free(op);
	if (rc == 0) {
		memcpy(t->so_model + (s0 << BS), buf, (size_t)n0 << BS);
		memcpy(t->so_model + (t1 << BS), buf + ((size_t)n0 << BS),
		       (size_t)n1 << BS);
	}
	free(buf);
	return rc;
}

/*
 * A write that runs the cleaner never waits on its own data.  Its first
 * extent is appended (not yet committed) into the zone with the most dead
 * bytes, Z, and its second finds only the cleaner's reserve left.  The
 * cleaner once took Z: it moved Z's records, waited 2 s for Z to hold no
 * live byte (the write's own, which the write would only commit after),
 * did not reset it, and the write failed -ENOSPC with 4 dead blocks free
 * to take in another zone.  Now a zone whose bytes in use exceed what the
 * maps point at (writes in flight) is not taken: the cleaner resets the
 * next deadest one and the write succeeds.  Zones of 16 blocks: 0-11 live
 * (L), 12 with 4 dead, Z = 13 with 7 dead and one block of room, 14 and 15
 * empty.
 */
static void test_own_zone(void)
{
	struct clovis *shared = cl;
	struct sobj l = {0}, d = {0}, w = {0};
	char msg[MSG_LEN] = "";
	int rc = 0;

	snprintf(dir, sizeof dir, "%s/own", root);
	CU_ASSERT_EQUAL_FATAL(store_open(), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&l, 3000, 196, true), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&d, 3001, 8, true), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&w, 3002, 32, true), 0);
	for (uint64_t b = 0; rc == 0 && b < 192; b += 16)
		rc = sobj_write(&l, b, 16, 8000 + b, NULL);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(sobj_write(&d, 0, 8, 8300, NULL), 0);
	CU_ASSERT_EQUAL(sobj_write(&d, 0, 4, 8301, NULL), 0);
	CU_ASSERT_EQUAL(sobj_write(&l, 192, 4, 8302, NULL), 0);
	CU_ASSERT_EQUAL(sobj_write(&w, 0, 8, 8303, NULL), 0);
	CU_ASSERT_EQUAL(sobj_write(&w, 0, 7, 8304, NULL), 0);
	CU_ASSERT_EQUAL(smr_info().di_zones_empty, 2);
	/* 1 block into Z, 16 into zone 14; then 1 more: only the reserve */
	rc = sobj_write2(&w, 8, 17, 30, 1, 8305, msg);
	if (rc != 0)
		fprintf(stderr, "smr: own zone: %d %s\n", rc, msg);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(smr_info().di_zones_empty >= 1);
	CU_ASSERT(sobj_check(&l));
	CU_ASSERT(sobj_check(&d));
	CU_ASSERT(sobj_check(&w));
	clovis_fini(cl);
	CU_ASSERT_EQUAL_FATAL(store_open(), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&w, 3002, 32, false), 0);
	CU_ASSERT(sobj_check(&w));
	free(l.so_model);
	free(d.so_model);
	free(w.so_model);
	clovis_fini(cl);
	CU_ASSERT_EQUAL(clovis_store_destroy(dir), 0);
	cl = shared;
	snprintf(dir, sizeof dir, "%s/store", root);
}

/** A write on another thread: object, blocks, seed, result. */
struct bgw {
	struct sobj *bw_o;
	uint64_t bw_s, bw_n, bw_seed;
	int bw_rc;
	char bw_msg[MSG_LEN];
};

static void *bgw_main(void *arg)
{
	struct bgw *b = arg;

	b->bw_rc = sobj_write(b->bw_o, b->bw_s, b->bw_n, b->bw_seed, b->bw_msg);
	return NULL;
}

/*
 * A write that needs the cleaner while the only dead zone is held by
 * another write in flight waits for that write's commit instead of
 * failing.  Zones of 16 blocks: 0-12 live (L), Z = 13 with 7 dead and one
 * block of room, 14 and 15 empty.  Thread A appends one block into Z and
 * (fault point zone.append.slow) commits it only a second later; meanwhile
 * B writes 17 blocks: 16 fill zone 14, the last finds only the reserve.
 * The cleaner once took Z at once, moved its records, waited 2 s for it to
 * empty (A's committed block never leaves), and B failed -ENOSPC with Z 7
 * blocks dead.  Now Z is held until A's commit; then it is cleaned and B's
 * write goes on.
 */
static void test_held_zone(void)
{
	struct clovis *shared = cl;
	struct sobj l = {0}, w = {0}, f = {0};
	struct bgw a = {0};
	char msg[MSG_LEN] = "";
	pthread_t at;
	int rc = 0, i;

	snprintf(dir, sizeof dir, "%s/held", root);
	CU_ASSERT_EQUAL_FATAL(store_open(), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&l, 3100, 208, true), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&w, 3101, 16, true), 0);
	CU_ASSERT_EQUAL_FATAL(sobj_make(&f, 3102, 17, true), 0);
	for (uint64_t b = 0; rc == 0 && b < 208; b += 16)
		rc = sobj_write(&l, b, 16, 9000 + b, NULL);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(sobj_write(&w, 0, 8, 9300, NULL), 0);
	CU_ASSERT_EQUAL(sobj_write(&w, 0, 7, 9301, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(smr_info().di_zones_empty, 2);
	a = (struct bgw){.bw_o = &w, .bw_s = 8, .bw_n = 1, .bw_seed = 9302};
	fault_arm("zone.append.slow", 0, 1);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&at, NULL, bgw_main, &a), 0);
	/* A appended once the fault point fired (it then holds the block
	 * uncommitted for 1 s).  Not the device's free bytes: space of the
	 * overwrites above released by the reclaimer meanwhile moves them
	 * up (failed under load, 2026-11-29).  Bounded at 60 s. */
	for (i = 0; i < 60000 && fault_fired("zone.append.slow") == 0; i++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	CU_ASSERT_EQUAL(fault_fired("zone.append.slow"), 1); /* A appended */
	rc = sobj_write(&f, 0, 17, 9303, msg);
	if (rc != 0)
		fprintf(stderr, "smr: held zone: %d %s\n", rc, msg);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(pthread_join(at, NULL), 0);
	CU_ASSERT_EQUAL(a.bw_rc, 0);
	CU_ASSERT_EQUAL(fault_fired("zone.append.slow"), 1);
	fault_reset();
	CU_ASSERT(smr_info().di_zones_empty >= 1);
	CU_ASSERT(sobj_check(&l));
	CU_ASSERT(sobj_check(&w));
	CU_ASSERT(sobj_check(&f));
	free(l.so_model);
	free(w.so_model);
	free(f.so_model);
	clovis_fini(cl);
	CU_ASSERT_EQUAL(clovis_store_destroy(dir), 0);
	cl = shared;
	snprintf(dir, sizeof dir, "%s/store", root);
}

/*
 * A plain object on a tier without devices (sas, in this store) is refused
 * with a message that names the object once and gives the reason.  (It once
 * came out garbled: the caller wrapped err_msg() into the same per-thread
 * buffer; err_set() now formats through a local buffer.)
 */
static void test_errmsg_wrap(void)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN,
				    .oa_tier = CLOVIS_TIER_SAS};
	struct clovis_id id = {ID_HI, 2000};
	char idb[CLOVIS_ID_STR_LEN], msg[MSG_LEN] = "";
	struct clovis_obj o;
	struct clovis_op *op = NULL;
	const char *first;
	int rc;

	clovis_id_format(&id, idb);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&o, clovis_default_realm(cl), &id,
					      &a), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&o.ob_entity, CLOVIS_EO_CREATE,
					       &op), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&op, 1), 0);
	rc = clovis_op_wait(op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	snprintf(msg, sizeof msg, "%s", clovis_op_errmsg(op));
	clovis_op_free(op);
	fprintf(stderr, "smr: create on sas: %d \"%s\"\n", rc, msg);
	CU_ASSERT(rc < 0);
	first = strstr(msg, idb);
	CU_ASSERT(first != NULL && strstr(first + 1, idb) == NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "device"));
}

int smr_ut_add(void)
{
	CU_pSuite s = CU_add_suite("smr", suite_init, suite_fini);

	if (s == NULL ||
	    !CU_add_test(s, "overwrite", test_overwrite) ||
	    !CU_add_test(s, "clean", test_clean) ||
	    !CU_add_test(s, "enospc", test_enospc) ||
	    !CU_add_test(s, "clean_with_reader", test_clean_with_reader) ||
	    !CU_add_test(s, "reopen", test_reopen) ||
	    !CU_add_test(s, "errmsg_wrap", test_errmsg_wrap) ||
	    !CU_add_test(s, "cleaner_reserve", test_cleaner_reserve) ||
	    !CU_add_test(s, "own_zone", test_own_zone) ||
	    !CU_add_test(s, "held_zone", test_held_zone))
		return -1;
	return 0;
}
