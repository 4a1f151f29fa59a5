/*
 * store_ut.c — suite and module "store" (ut_main -s store, part local of
 * tests/ut_part.sh): stores moved and copied whole (issue 26 point 9),
 * driven through the Clovis API on embedded stores of its own.  Moved
 * here from core/ut/core_ut.c (issue 27 point 1: core's tests do not
 * include clovis.h); assertions unchanged.  A module of its own, not part
 * of "clovis", so that the runs of the clovis suites against a cluster
 * (STRATA_UT_CLUSTER) do not take it, as they did not when it was core's.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/clovis.h"
#include "tests/ut.h"

/* ------------------------------------------- movable stores (point 9) */

/* A store of two small devices (NVRAM in the data directory, flash). */
static const char mv_conf_text[] =
	"devices:\n  - { tier: nvram }\n  - { tier: flash }\n";

/* Open (create) the store in dir with configuration conf. */
static struct clovis *mv_open(const char *dir, const char *conf, bool create)
{
	struct clovis_conf c = {.cc_data_dir = dir, .cc_nvram_dir = dir,
				.cc_dev_size = 16ull << 20, .cc_config = conf,
				.cc_flags = create ? CLOVIS_CONF_CREATE : 0};
	struct clovis *cl = NULL;
	int rc = clovis_init(&cl, &c);

	if (rc != 0)
		fprintf(stderr, "store: open %s: %d %s\n", dir, rc,
			clovis_errmsg());
	return rc == 0 ? cl : NULL;
}

/* Write (or read and compare) the 4 KiB block 0 of object 1:7, filled
 * with byte v, on each tier; create the objects first when asked. */
static int mv_io(struct clovis *cl, bool write, bool create, uint8_t v)
{
	static const uint32_t tiers[] = {CLOVIS_TIER_NVRAM, CLOVIS_TIER_FLASH};
	uint8_t buf[4096], want[4096];
	int rc = 0;

	memset(want, v, sizeof want);
	for (uint32_t t = 0; rc == 0 && t < 2; t++) {
		struct clovis_obj_attr a = {.oa_block_shift = 12,
					    .oa_layout = CLOVIS_LAYOUT_PLAIN,
					    .oa_tier = tiers[t]};
		struct clovis_id id = {1, 7 + t};
		struct clovis_obj o;
		struct clovis_op *op = NULL;
		uint64_t s0 = 0, n = 1;
		void *p = write ? want : buf;
		size_t len = sizeof buf;
		struct clovis_extvec ev = {1, &s0, &n};
		struct clovis_bufvec bv = {1, &p, &len};

		rc = clovis_obj_init(&o, clovis_default_realm(cl), &id,
				     create ? &a : NULL);
		if (rc == 0)
			rc = clovis_entity_op(&o.ob_entity, create ?
					      CLOVIS_EO_CREATE : CLOVIS_EO_OPEN,
					      &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		op = NULL;
		if (rc == 0)
			rc = clovis_obj_op(&o, write ? CLOVIS_OC_WRITE :
					   CLOVIS_OC_READ, &ev, &bv, 0, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		if (rc == 0 && !write && memcmp(buf, want, sizeof buf) != 0)
			rc = -EIO;
		if (rc != 0)
			fprintf(stderr, "store: object on tier %u: %d %s\n",
				tiers[t], rc, clovis_errmsg());
	}
	return rc;
}

/*
 * A store renamed opens and reads its data; a copy of it opened beside
 * the original, each written, reads its own data and leaves the other's
 * alone (issue 26 point 9: device paths were recorded absolute, so the
 * renamed store could not find its devices and the copy wrote into the
 * original's).
 */
static void test_store_move_copy(void)
{
	char root[512], conf[600], a[600], b[600], c[600], cmd[1900];
	struct clovis *cb, *cc;
	const char *d = ut_tmpdir("store_move");
	FILE *f;

	CU_ASSERT_FATAL(d != NULL);
	snprintf(root, sizeof root, "%s", d);
	snprintf(conf, sizeof conf, "%s/mv.yaml", root);
	snprintf(a, sizeof a, "%s/a", root);
	snprintf(b, sizeof b, "%s/b", root);
	snprintf(c, sizeof c, "%s/c", root);
	f = fopen(conf, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(mv_conf_text, f);
	CU_ASSERT_FATAL(fclose(f) == 0);

	cb = mv_open(a, conf, true);
	CU_ASSERT_FATAL(cb != NULL);
	CU_ASSERT_EQUAL(mv_io(cb, true, true, 0xa1), 0);
	clovis_fini(cb);
	CU_ASSERT_FATAL(rename(a, b) == 0);
	cb = mv_open(b, NULL, false);
	CU_ASSERT_FATAL(cb != NULL);
	CU_ASSERT_EQUAL(mv_io(cb, false, false, 0xa1), 0);
	clovis_fini(cb);

	snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", b, c);
	CU_ASSERT_FATAL(system(cmd) == 0);
	cb = mv_open(b, NULL, false);
	cc = mv_open(c, NULL, false);
	CU_ASSERT_FATAL(cb != NULL && cc != NULL);
	CU_ASSERT_EQUAL(mv_io(cc, true, false, 0xc3), 0);
	CU_ASSERT_EQUAL(mv_io(cb, false, false, 0xa1), 0);
	CU_ASSERT_EQUAL(mv_io(cb, true, false, 0xb2), 0);
	CU_ASSERT_EQUAL(mv_io(cc, false, false, 0xc3), 0);
	CU_ASSERT_EQUAL(mv_io(cb, false, false, 0xb2), 0);
	clovis_fini(cc);
	clovis_fini(cb);
	CU_ASSERT_EQUAL(clovis_store_destroy(b), 0);
	CU_ASSERT_EQUAL(clovis_store_destroy(c), 0);
}

int store_ut_add(void)
{
	CU_pSuite s = CU_add_suite("store", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "store_move_copy", test_store_move_copy))
		return -1;
	return 0;
}
