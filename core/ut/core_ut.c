/*
 * core_ut.c — unit tests of core/: the allocator, metadata key encoding,
 * the read-transaction cache, id strings, error strings and fault points.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/engine.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/meta.h"
#include "tests/ut.h"

int conf_ut_add(void);

static void test_alloc_take_release(void)
{
	struct alloc a;
	uint64_t s, g;

	CU_ASSERT_EQUAL_FATAL(alloc_init(&a, 1000), 0);
	CU_ASSERT_EQUAL(alloc_take(&a, 100, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 0);
	CU_ASSERT_EQUAL(g, 100);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 900);
	CU_ASSERT_EQUAL(alloc_take(&a, 50, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 100);
	alloc_release(&a, 0, 100);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 950);
	alloc_release(&a, 100, 50);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 1000);
	alloc_fini(&a);
}

/* Fragmented space: runs come back shorter; granules are respected. */
static void test_alloc_fragmented(void)
{
	struct alloc a;
	uint64_t s, g, total = 0;

	CU_ASSERT_EQUAL_FATAL(alloc_init(&a, 256), 0);
	for (uint64_t i = 0; i < 256; i += 16)
		CU_ASSERT_EQUAL(alloc_mark(&a, i, 8), 0);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 128);
	CU_ASSERT_EQUAL(alloc_take(&a, 64, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(g, 8);
	CU_ASSERT_EQUAL(s % 16, 8);
	/* A granule of 16 units fits nowhere. */
	CU_ASSERT_EQUAL(alloc_take(&a, 16, 16, &s, &g), -ENOSPC);
	/* Granule 4: runs are multiples of 4. */
	while (alloc_take(&a, 12, 4, &s, &g) == 0) {
		CU_ASSERT_EQUAL(g % 4, 0);
		total += g;
	}
	CU_ASSERT_EQUAL(total, 120);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 0);
	alloc_fini(&a);
}

static void test_alloc_mark_overlap(void)
{
	struct alloc a;

	CU_ASSERT_EQUAL_FATAL(alloc_init(&a, 128), 0);
	CU_ASSERT_EQUAL(alloc_mark(&a, 10, 10), 0);
	CU_ASSERT_EQUAL(alloc_mark(&a, 15, 10), -EEXIST);
	CU_ASSERT_EQUAL(alloc_mark(&a, 120, 10), -EEXIST); /* past the end */
	CU_ASSERT_EQUAL(alloc_free_units(&a), 118);
	alloc_fini(&a);
}

/* Runs crossing 64-bit words of the bitmap. */
static void test_alloc_words(void)
{
	struct alloc a;
	uint64_t s, g;

	CU_ASSERT_EQUAL_FATAL(alloc_init(&a, 300), 0);
	CU_ASSERT_EQUAL(alloc_mark(&a, 0, 60), 0);
	CU_ASSERT_EQUAL(alloc_take(&a, 200, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 60);
	CU_ASSERT_EQUAL(g, 200);
	CU_ASSERT_EQUAL(alloc_take(&a, 100, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 260);
	CU_ASSERT_EQUAL(g, 40);
	CU_ASSERT_EQUAL(alloc_take(&a, 1, 1, &s, &g), -ENOSPC);
	alloc_release(&a, 100, 100);
	CU_ASSERT_EQUAL(alloc_take(&a, 128, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 100);
	CU_ASSERT_EQUAL(g, 100);
	alloc_fini(&a);
}

/* Keys sort numerically by id then block. */
static void test_meta_key_order(void)
{
	uint8_t a[24], b[24];
	struct clovis_id x = {1, 0xff}, y = {1, 0x100}, z;
	MDB_val ka, kb;

	ka = meta_ext_key(a, &x, 5);
	kb = meta_ext_key(b, &x, 256);
	CU_ASSERT(memcmp(ka.mv_data, kb.mv_data, 24) < 0);
	CU_ASSERT_EQUAL(meta_ext_key_blk(&kb), 256);
	kb = meta_ext_key(b, &y, 0);
	CU_ASSERT(memcmp(ka.mv_data, kb.mv_data, 24) < 0);
	meta_id_dec(b, &z);
	CU_ASSERT_EQUAL(z.ci_hi, 1);
	CU_ASSERT_EQUAL(z.ci_lo, 0x100);
}

static void test_errors(void)
{
	CU_ASSERT_STRING_EQUAL(err_str(-CLOVIS_ECORRUPT),
			       "on-disk structure is corrupt");
	CU_ASSERT_STRING_EQUAL(err_str(-ENOENT), strerror(ENOENT));
	CU_ASSERT_EQUAL(err_set(-EINVAL, "field %s", "x"), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err_msg(), "field x");
	err_clear();
	CU_ASSERT_STRING_EQUAL(err_msg(), "");
}

/* eng_id_str() formats by hand: it must say what "%x:%x" says. */
static void test_id_str(void)
{
	static const uint64_t v[] = {0, 1, 0xf, 0x10, 0xabcdef, 1ull << 63,
				     UINT64_MAX, 0x0123456789abcdefull};
	char want[64];

	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		for (size_t j = 0; j < sizeof v / sizeof v[0]; j++) {
			struct clovis_id id = {v[i], v[j]};

			snprintf(want, sizeof want, "%" PRIx64 ":%" PRIx64,
				 v[i], v[j]);
			CU_ASSERT_STRING_EQUAL(eng_id_str(&id), want);
		}
}

/* One record "k" = val in the sys table, committed. */
static int rtxn_put(struct meta *m, const char *val)
{
	MDB_txn *t;
	int rc = mdb_txn_begin(m->m_env, NULL, 0, &t);

	if (rc != 0)
		return rc;
	rc = meta_sys_put(t, m, "k", val, strlen(val) + 1);
	if (rc != 0) {
		mdb_txn_abort(t);
		return rc;
	}
	return mdb_txn_commit(t);
}

/* Cached read transactions: a renewed one sees the latest commit; more
 * than the cache holds are aborted on put; close releases the cached. */
static void test_rtxn_cache(void)
{
	const char *dir = ut_tmpdir("rtxn");
	MDB_txn *t[META_RTXN_CACHE + 4], *again;
	struct meta m;
	char buf[2];

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(meta_open(&m, dir, 16ull << 20, META_CREATE), 0);
	CU_ASSERT_EQUAL(rtxn_put(&m, "a"), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t[0]), 0);
	CU_ASSERT_EQUAL(meta_sys_get(t[0], &m, "k", buf, 2), 0);
	CU_ASSERT_STRING_EQUAL(buf, "a");
	meta_rtxn_put(&m, t[0]);
	CU_ASSERT_EQUAL(rtxn_put(&m, "b"), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &again), 0);
	CU_ASSERT_PTR_EQUAL(again, t[0]);
	CU_ASSERT_EQUAL(meta_sys_get(again, &m, "k", buf, 2), 0);
	CU_ASSERT_STRING_EQUAL(buf, "b");
	meta_rtxn_put(&m, again);
	for (uint32_t i = 0; i < META_RTXN_CACHE + 4; i++)
		CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t[i]), 0);
	CU_ASSERT_EQUAL(m.m_rnr, 0);
	for (uint32_t i = 0; i < META_RTXN_CACHE + 4; i++)
		meta_rtxn_put(&m, t[i]);
	CU_ASSERT_EQUAL(m.m_rnr, META_RTXN_CACHE);
	meta_close(&m);
	CU_ASSERT_PTR_NULL(m.m_env);
}

static void test_fault_points(void)
{
#ifdef STRATA_FAULT_INJECT
	fault_reset();
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
	fault_arm("ut.point", 2, 2);
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
	CU_ASSERT_TRUE(FAULT_HIT("ut.point"));
	CU_ASSERT_TRUE(FAULT_HIT("ut.point"));
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
	CU_ASSERT_EQUAL(fault_fired("ut.point"), 2);
	fault_reset();
#else
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
#endif
}

int core_ut_add(void)
{
	CU_pSuite s = CU_add_suite("core", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "alloc_take_release", test_alloc_take_release) ||
	    !CU_add_test(s, "alloc_fragmented", test_alloc_fragmented) ||
	    !CU_add_test(s, "alloc_mark_overlap", test_alloc_mark_overlap) ||
	    !CU_add_test(s, "alloc_words", test_alloc_words) ||
	    !CU_add_test(s, "meta_key_order", test_meta_key_order) ||
	    !CU_add_test(s, "errors", test_errors) ||
	    !CU_add_test(s, "id_str", test_id_str) ||
	    !CU_add_test(s, "rtxn_cache", test_rtxn_cache) ||
	    !CU_add_test(s, "fault_points", test_fault_points))
		return -1;
	return conf_ut_add();
}
