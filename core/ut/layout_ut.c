/*
 * layout_ut.c — unit tests of the plain layout (core/layout.h): placement
 * and mapping, over many ids.
 */
#include <CUnit/CUnit.h>
#include <errno.h>

#include "core/layout.h"
#include "tests/ut.h"

/* layouts/ut/pdclust_ut.c: suites "pdclust" and "ec". */
int pdclust_ut_add(void);

static const uint32_t tiers6[] = {ST_TIER_NVRAM, ST_TIER_FLASH,
				  ST_TIER_FLASH, ST_TIER_SAS,
				  ST_TIER_FLASH, ST_TIER_SAS};

/* Objects land only on their tier, spread evenly over its devices. */
static void test_plain_place_spread(void)
{
	struct layout_pool pool = {6, tiers6, NULL};
	uint32_t count[6] = {0};

	for (uint64_t i = 0; i < 30000; i++) {
		struct st_id id = {i * 7919, i};
		struct layout l;

		CU_ASSERT_EQUAL_FATAL(layout_place(&l, ST_LAYOUT_PLAIN,
						   ST_TIER_FLASH, &pool, &id), 0);
		CU_ASSERT_EQUAL_FATAL(tiers6[l.ly_dev], ST_TIER_FLASH);
		count[l.ly_dev]++;
	}
	CU_ASSERT_EQUAL(count[0] + count[3] + count[5], 0);
	for (int d = 1; d <= 4; d += (d == 2 ? 2 : 1)) {
		CU_ASSERT(count[d] > 9000 && count[d] < 11000);
	}
}

/* The same id always maps to the same device. */
static void test_plain_place_stable(void)
{
	struct layout_pool pool = {6, tiers6, NULL};
	struct st_id id = {42, 4242};
	struct layout a, b;

	CU_ASSERT_EQUAL(layout_place(&a, ST_LAYOUT_PLAIN, ST_TIER_SAS,
				     &pool, &id), 0);
	CU_ASSERT_EQUAL(layout_place(&b, ST_LAYOUT_PLAIN, ST_TIER_SAS,
				     &pool, &id), 0);
	CU_ASSERT_EQUAL(a.ly_dev, b.ly_dev);
	CU_ASSERT_EQUAL(layout_id_hash(&id), layout_id_hash(&id));
}

static void test_plain_errors(void)
{
	static const uint32_t flash_only[] = {ST_TIER_FLASH};
	struct layout_pool pool = {1, flash_only, NULL};
	struct st_id id = {1, 2};
	struct layout l;

	CU_ASSERT_EQUAL(layout_place(&l, ST_LAYOUT_PLAIN, ST_TIER_NVRAM,
				     &pool, &id), -ENOSPC);
	CU_ASSERT_EQUAL(layout_place(&l, 99, ST_TIER_FLASH, &pool, &id),
			-EINVAL);
	CU_ASSERT_EQUAL(layout_place(&l, ST_LAYOUT_PLAIN, 7, &pool, &id),
			-EINVAL);
}

static void test_plain_map(void)
{
	struct layout l = {ST_LAYOUT_PLAIN, ST_TIER_FLASH, 3};
	struct layout_target t[2];
	uint32_t n = 2;

	CU_ASSERT_EQUAL(layout_map(&l, 100, 50, t, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(t[0].lt_dev, 3);
	CU_ASSERT_EQUAL(t[0].lt_blk, 100);
	CU_ASSERT_EQUAL(t[0].lt_nr_blks, 50);
	n = 0;
	CU_ASSERT_EQUAL(layout_map(&l, 0, 1, t, &n), -E2BIG);
	l.ly_type = 77;
	n = 2;
	CU_ASSERT_EQUAL(layout_map(&l, 0, 1, t, &n), -ST_ECORRUPT);
}

int layout_ut_add(void)
{
	CU_pSuite s = CU_add_suite("layout", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "plain_place_spread", test_plain_place_spread) ||
	    !CU_add_test(s, "plain_place_stable", test_plain_place_stable) ||
	    !CU_add_test(s, "plain_errors", test_plain_errors) ||
	    !CU_add_test(s, "plain_map", test_plain_map))
		return -1;
	return pdclust_ut_add();
}
