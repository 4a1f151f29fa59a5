/*
 * stripe_ut.c — objects with unit layouts (pdclust and mirror) end to end
 * through the Clovis API: round trips of every geometry (full-stripe,
 * read-modify-write, unaligned multi-extent writes, FREE of partial and
 * whole groups, overwrite), random ops against an in-memory model checked
 * live and after a reopen, device failures up to K and K + 1, fault points
 * at the tier interface (read errors, flipped bits, failed and short
 * writes, a device that goes away), scrub, repair and rebalance with their
 * resumption, bad layout attributes, and an engine opened without the unit
 * layouts' table (eng_conf.ec_layout_ops NULL), which refuses them.
 *
 * The stores are made from a YAML configuration: nvram0, flash0..7 (pool
 * "flash", 8 devices, index 0: the default pool), sas0..3, smr0, and the
 * pool "mixed" of the 12 flash and sas devices (index 1, for 8+2 layouts).  Round trips, the random model and bad
 * input share the suite's store; every test that fails devices or arms a
 * fault point makes a store of its own and destroys it at the end.
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
#include "core/engine.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/limits.h"
#include "layouts/pdclust.h"
#include "tests/ut.h"

#define ID_HI 0x57e1beull
#define SHARED_DEV_SIZE (32ull << 20)
#define OWN_DEV_SIZE (16ull << 20)
#define FLASH_NR 8u
#define MSG_LEN 512

static const char ut_conf_text[] =
	"# stripe suite: 8 flash + 4 sas; pools flash (index 0, the default\n"
	"# pool) and mixed (index 1) of all 12\n"
	"devices:\n"
	"  - { tier: nvram }\n"
	"  - { tier: flash }\n  - { tier: flash }\n  - { tier: flash }\n"
	"  - { tier: flash }\n  - { tier: flash }\n  - { tier: flash }\n"
	"  - { tier: flash }\n  - { tier: flash }\n"
	"  - { tier: sas }\n  - { tier: sas }\n  - { tier: sas }\n"
	"  - { tier: sas }\n"
	"  - { tier: smr, zone_size: 1MiB }\n"
	"pools:\n"
	"  - name: flash\n"
	"    devices: [flash0, flash1, flash2, flash3, flash4, flash5, flash6,\n"
	"              flash7]\n"
	"  - name: mixed\n"
	"    devices: [flash0, flash1, flash2, flash3, flash4, flash5, flash6,\n"
	"              flash7, sas0, sas1, sas2, sas3]\n";

static struct clovis *cl;
static char root[512], conf_path[640], shared_dir[640], dir[640];
static uint64_t dev_size;
static uint32_t pool_flash, pool_mixed;
static uint32_t fdev[FLASH_NR]; /* store indices of pool "flash" */

/* ------------------------------------------------------------ stores */

/* The index of pool name, its devices into devs (if non-NULL); -1 if none. */
static int pool_find(const char *name, uint32_t *devs, uint32_t max)
{
	static struct clovis_pool_info pi[8];
	uint32_t n = 8;

	if (clovis_pool_list(cl, pi, &n) != 0)
		return -1;
	for (uint32_t i = 0; i < n && i < 8; i++) {
		if (strcmp(pi[i].pi_name, name) != 0)
			continue;
		for (uint32_t j = 0; devs != NULL && j < pi[i].pi_nr_devs &&
				     j < max; j++)
			devs[j] = pi[i].pi_devs[j];
		return (int)pi[i].pi_index;
	}
	return -1;
}

/* Open (or make) the store in dir with devices of size bytes. */
static int store_open(uint64_t size)
{
	struct clovis_conf c = {.cc_data_dir = dir, .cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = size, .cc_nvram_dir = root,
				.cc_config = conf_path};
	int rc = clovis_init(&cl, &c);
	int pf, pm;

	if (rc != 0) {
		fprintf(stderr, "stripe: clovis_init %s: %d %s\n", dir, rc,
			clovis_errmsg());
		cl = NULL;
		return rc;
	}
	dev_size = size;
	pf = pool_find("flash", fdev, FLASH_NR);
	pm = pool_find("mixed", NULL, 0);
	if (pf < 0 || pm < 0)
		return -ENOENT;
	pool_flash = (uint32_t)pf;
	pool_mixed = (uint32_t)pm;
	return 0;
}

static void store_reopen(void)
{
	clovis_fini(cl);
	cl = NULL;
	CU_ASSERT_EQUAL_FATAL(store_open(dev_size), 0);
}

/* Make a store of the test's own, named tag, in place of the shared one. */
static int store_own(const char *tag)
{
	clovis_fini(cl);
	cl = NULL;
	snprintf(dir, sizeof dir, "%s/%s", root, tag);
	return store_open(OWN_DEV_SIZE);
}

/* Destroy the test's own store and go back to the shared one. */
static void store_own_end(void)
{
	clovis_fini(cl);
	cl = NULL;
	CU_ASSERT_EQUAL(clovis_store_destroy(dir), 0);
	snprintf(dir, sizeof dir, "%s", shared_dir);
	CU_ASSERT_EQUAL(store_open(SHARED_DEV_SIZE), 0);
}

static int suite_init(void)
{
	const char *d = ut_tmpdir("stripe");
	FILE *f;

	if (d == NULL)
		return -1;
	snprintf(root, sizeof root, "%s", d);
	snprintf(conf_path, sizeof conf_path, "%s/stripe.yaml", root);
	snprintf(shared_dir, sizeof shared_dir, "%s/shared", root);
	snprintf(dir, sizeof dir, "%s", shared_dir);
	f = fopen(conf_path, "w");
	if (f == NULL)
		return -1;
	fputs(ut_conf_text, f);
	if (fclose(f) != 0)
		return -1;
	return store_open(SHARED_DEV_SIZE) == 0 ? 0 : -1;
}

static int suite_fini(void)
{
	clovis_fini(cl);
	cl = NULL;
	return clovis_store_destroy(shared_dir);
}

/* ------------------------------------------------------------ data */

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Fill len bytes with a stream of seed. */
static void fill(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x100000001b3ull, w;

	for (size_t i = 0; i < len; i += sizeof w) {
		w = mix(&s);
		memcpy(p + i, &w, len - i < sizeof w ? len - i : sizeof w);
	}
}

static struct clovis_id mkid(uint64_t lo)
{
	return (struct clovis_id){ID_HI, lo};
}

static int ent_sync(struct clovis_entity *e, enum clovis_entity_opcode oc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, oc, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* Run an entity op; its failure message into msg. */
static int ent_run(struct clovis_entity *e, enum clovis_entity_opcode oc,
		   char *msg)
{
	struct clovis_op *op = NULL;
	int rc = clovis_entity_op(e, oc, &op);

	if (rc != 0) {
		snprintf(msg, MSG_LEN, "%s", clovis_errmsg());
		return rc;
	}
	rc = clovis_op_launch(&op, 1);
	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	snprintf(msg, MSG_LEN, "%s", clovis_op_errmsg(op));
	clovis_op_free(op);
	return rc;
}

/* Run an object op to its end; its failure message into msg (if any). */
static int op_run(struct clovis_obj *o, enum clovis_obj_opcode oc,
		  struct clovis_extvec *ev, struct clovis_bufvec *bv, char *msg)
{
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(o, oc, ev, bv, 0, &op);

	if (rc != 0) {
		if (msg != NULL)
			snprintf(msg, MSG_LEN, "%s", clovis_errmsg());
		return rc;
	}
	rc = clovis_op_launch(&op, 1);
	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (msg != NULL)
		snprintf(msg, MSG_LEN, "%s", clovis_op_errmsg(op));
	clovis_op_free(op);
	return rc;
}

/* ------------------------------------------------------------ objects */

/** A layout to test. */
struct lspec {
	uint32_t ls_type;   /* CLOVIS_LAYOUT_PDCLUST or MIRROR */
	bool ls_mixed;      /* pool "mixed" (12 devices), else "flash" (8) */
	uint32_t ls_n, ls_k, ls_s; /* mirror: n copies, k 0 */
	uint32_t ls_bs, ls_us;     /* block and unit shift */
};

/** An object under test with the model of its content. */
struct tobj {
	struct clovis_obj to_o;
	struct lspec to_ls;
	uint64_t to_lo;
	uint64_t to_nb;     /* blocks in the model */
	uint8_t *to_model;
};

static const struct lspec L421 = {CLOVIS_LAYOUT_PDCLUST, false, 4, 2, 1, 12, 14};
static const struct lspec L820 = {CLOVIS_LAYOUT_PDCLUST, true, 8, 2, 0, 12, 14};
static const struct lspec L211 = {CLOVIS_LAYOUT_PDCLUST, false, 2, 1, 1, 12, 14};
static const struct lspec LM21 = {CLOVIS_LAYOUT_MIRROR, false, 2, 0, 1, 12, 14};
static const struct lspec LM30 = {CLOVIS_LAYOUT_MIRROR, false, 3, 0, 0, 12, 14};
static const struct lspec LM20 = {CLOVIS_LAYOUT_MIRROR, false, 2, 0, 0, 12, 14};
static const struct lspec LPLAIN = {CLOVIS_LAYOUT_PLAIN, false, 0, 0, 0, 12, 12};

/* Blocks of one unit and of the data of one parity group. */
static uint64_t ls_ublocks(const struct lspec *ls)
{
	return 1ull << (ls->ls_us - ls->ls_bs);
}

static uint64_t ls_gblocks(const struct lspec *ls)
{
	return (ls->ls_type == CLOVIS_LAYOUT_MIRROR ? 1 : ls->ls_n) *
	       ls_ublocks(ls);
}

/* Units K of a group may lose. */
static uint32_t ls_k(const struct lspec *ls)
{
	return ls->ls_type == CLOVIS_LAYOUT_MIRROR ? ls->ls_n - 1 : ls->ls_k;
}

static int tobj_create(struct tobj *t, uint64_t lo, const struct lspec *ls,
		       uint64_t nb)
{
	struct clovis_obj_attr a = {
		.oa_block_shift = ls->ls_bs, .oa_layout = ls->ls_type,
		.oa_pool = ls->ls_mixed ? pool_mixed : pool_flash,
		.oa_data_units = ls->ls_n, .oa_parity_units = ls->ls_k,
		.oa_spare_units = ls->ls_s, .oa_unit_shift = ls->ls_us};
	struct clovis_id id = mkid(lo);
	char msg[MSG_LEN];
	int rc;

	if (ls->ls_type == CLOVIS_LAYOUT_PLAIN)
		a = (struct clovis_obj_attr){.oa_block_shift = ls->ls_bs,
					     .oa_layout = CLOVIS_LAYOUT_PLAIN,
					     .oa_tier = CLOVIS_TIER_SAS};

	memset(t, 0, sizeof *t);
	t->to_ls = *ls;
	t->to_lo = lo;
	t->to_nb = nb;
	t->to_model = calloc(nb, (size_t)1 << ls->ls_bs);
	if (t->to_model == NULL)
		return -ENOMEM;
	rc = clovis_obj_init(&t->to_o, clovis_default_realm(cl), &id, &a);
	if (rc == 0)
		rc = ent_run(&t->to_o.ob_entity, CLOVIS_EO_CREATE, msg);
	else
		snprintf(msg, sizeof msg, "%s", clovis_errmsg());
	if (rc != 0)
		fprintf(stderr, "stripe: create %" PRIx64 ": %d %s\n", lo, rc, msg);
	return rc;
}

/* Open the object again (after a reopen of the store). */
static int tobj_open(struct tobj *t)
{
	struct clovis_id id = mkid(t->to_lo);
	int rc = clovis_obj_init(&t->to_o, clovis_default_realm(cl), &id, NULL);

	return rc == 0 ? ent_sync(&t->to_o.ob_entity, CLOVIS_EO_OPEN) : rc;
}

static void tobj_fini(struct tobj *t)
{
	free(t->to_model);
	t->to_model = NULL;
}

/* WRITE nr extents with fresh content of seed, through two buffers that
 * split the data at a third (inside an extent); the model follows. */
static int tobj_writev(struct tobj *t, uint32_t nr, const uint64_t *s,
		       const uint64_t *n, uint64_t seed, char *msg)
{
	uint32_t bs = t->to_ls.ls_bs;
	uint64_t st[4], nn[4], total = 0, off = 0;
	size_t len, l0;
	uint8_t *buf;
	void *bufs[2];
	size_t lens[2];
	struct clovis_extvec ev = {nr, st, nn};
	struct clovis_bufvec bv = {2, bufs, lens};
	int rc;

	for (uint32_t i = 0; i < nr; i++) {
		st[i] = s[i];
		nn[i] = n[i];
		total += n[i];
	}
	len = (size_t)total << bs;
	l0 = (size_t)(total / 3) << bs;
	buf = malloc(len);
	if (buf == NULL)
		return -ENOMEM;
	fill(buf, len, seed);
	bufs[0] = buf;
	lens[0] = l0 > 0 ? l0 : len;
	bufs[1] = buf + l0;
	lens[1] = len - l0;
	bv.bv_nr = l0 > 0 ? 2 : 1;
	rc = op_run(&t->to_o, CLOVIS_OC_WRITE, &ev, &bv, msg);
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		memcpy(t->to_model + (s[i] << bs), buf + off, n[i] << bs);
		off += n[i] << bs;
	}
	free(buf);
	return rc;
}

static int tobj_write(struct tobj *t, uint64_t s, uint64_t n, uint64_t seed)
{
	return tobj_writev(t, 1, &s, &n, seed, NULL);
}

/* FREE (or ALLOC) nr extents; the model reads zeros there. */
static int tobj_punch(struct tobj *t, enum clovis_obj_opcode oc, uint32_t nr,
		      const uint64_t *s, const uint64_t *n)
{
	uint64_t st[4], nn[4];
	struct clovis_extvec ev = {nr, st, nn};
	int rc;

	memcpy(st, s, nr * sizeof *s);
	memcpy(nn, n, nr * sizeof *n);
	rc = op_run(&t->to_o, oc, &ev, NULL, NULL);
	for (uint32_t i = 0; rc == 0 && i < nr; i++)
		memset(t->to_model + (s[i] << t->to_ls.ls_bs), 0,
		       n[i] << t->to_ls.ls_bs);
	return rc;
}

static int tobj_free(struct tobj *t, uint64_t s, uint64_t n)
{
	return tobj_punch(t, CLOVIS_OC_FREE, 1, &s, &n);
}

/* READ nr blocks at s into buf; message into msg. */
static int tobj_read(struct tobj *t, uint64_t s, uint64_t n, uint8_t *buf,
		     char *msg)
{
	size_t len = (size_t)n << t->to_ls.ls_bs;
	void *p = buf;
	struct clovis_extvec ev = {1, &s, &n};
	struct clovis_bufvec bv = {1, &p, &len};

	return op_run(&t->to_o, CLOVIS_OC_READ, &ev, &bv, msg);
}

/* Do blocks [s, s + n) read back as the model says? */
static bool tobj_check_range(struct tobj *t, uint64_t s, uint64_t n)
{
	uint32_t bs = t->to_ls.ls_bs;
	size_t len = (size_t)n << bs;
	uint8_t *buf = malloc(len);
	char msg[MSG_LEN] = "";
	bool ok = false;
	int rc;

	if (buf == NULL)
		return false;
	memset(buf, 0xa5, len);
	rc = tobj_read(t, s, n, buf, msg);
	if (rc != 0) {
		fprintf(stderr, "stripe: object %" PRIx64 " read %" PRIu64 "+%"
			PRIu64 ": %d %s\n", t->to_lo, s, n, rc, msg);
	} else {
		ok = memcmp(buf, t->to_model + (s << bs), len) == 0;
		for (uint64_t b = 0; !ok && b < n; b++)
			if (memcmp(buf + (b << bs), t->to_model + ((s + b) << bs),
				   (size_t)1 << bs) != 0) {
				fprintf(stderr, "stripe: object %" PRIx64 " block %"
					PRIu64 " differs\n", t->to_lo, s + b);
				break;
			}
	}
	free(buf);
	return ok;
}

static bool tobj_check(struct tobj *t)
{
	return tobj_check_range(t, 0, t->to_nb);
}

/* Create an object of ls with nb blocks and fill it all. */
static void tobj_make_full(struct tobj *t, uint64_t lo, const struct lspec *ls,
			   uint64_t nb)
{
	CU_ASSERT_EQUAL_FATAL(tobj_create(t, lo, ls, nb), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_write(t, 0, nb, lo * 1000 + 1), 0);
}

/* ------------------------------------------------------------ devices */

static bool dev_info(uint32_t dev, struct clovis_dev_info *out)
{
	static struct clovis_dev_info di[32];
	uint32_t n = 32;

	if (clovis_dev_list(cl, di, &n) != 0 || dev >= n || dev >= 32)
		return false;
	*out = di[dev];
	return true;
}

static uint32_t dev_state(uint32_t dev)
{
	struct clovis_dev_info di;

	return dev_info(dev, &di) ? di.di_state : UINT32_MAX;
}

static struct clovis_unit_counters counters(void)
{
	struct clovis_unit_counters uc = {0};

	CU_ASSERT_EQUAL(clovis_unit_counters_get(cl, &uc), 0);
	return uc;
}

/* Arm the fault point "tier.<what>.dev<dev>" (count 0: forever). */
static void arm_dev(const char *what, uint32_t dev, uint32_t skip,
		    uint32_t count)
{
#ifdef STRATA_FAULT_INJECT
	char name[64];

	snprintf(name, sizeof name, "tier.%s.dev%u", what, dev);
	fault_arm(name, skip, count);
#endif
}

static uint32_t fired_dev(const char *what, uint32_t dev)
{
#ifdef STRATA_FAULT_INJECT
	char name[64];

	snprintf(name, sizeof name, "tier.%s.dev%u", what, dev);
	return fault_fired(name);
#else
	return 0;
#endif
}

static void faults_off(void)
{
#ifdef STRATA_FAULT_INJECT
	fault_reset();
#endif
}

/* ------------------------------------------------------------ round trips */

/*
 * One geometry: full stripes, a one-block read-modify-write, three
 * unaligned extents given out of order through two buffers (crossing unit
 * and group edges and reaching past what was written), FREE of part of a
 * group and of a whole group, and an overwrite; the object is checked
 * against its model after every step.
 */
static void roundtrip_one(struct tobj *t, uint64_t lo, const struct lspec *ls)
{
	uint64_t gb = ls_gblocks(ls), ub = ls_ublocks(ls), h = ub / 2;
	uint64_t ng = (gb << ls->ls_bs) >= (4ull << 20) ? 2 : 3;
	uint64_t s[3] = {2 * gb - 1, gb - h, (ng + 1) * gb - 3};
	uint64_t n[3] = {1 + ub, 2 * h, 2};

	CU_ASSERT_EQUAL_FATAL(tobj_create(t, lo, ls, (ng + 1) * gb), 0);
	CU_ASSERT_EQUAL(tobj_write(t, 0, ng * gb, lo * 10 + 1), 0);
	CU_ASSERT(tobj_check(t));
	CU_ASSERT_EQUAL(tobj_write(t, ub + h, 1, lo * 10 + 2), 0);
	CU_ASSERT(tobj_check(t));
	CU_ASSERT_EQUAL(tobj_writev(t, 3, s, n, lo * 10 + 3, NULL), 0);
	CU_ASSERT(tobj_check(t));
	CU_ASSERT_EQUAL(tobj_free(t, gb + 1, ub + 1), 0);
	CU_ASSERT(tobj_check(t));
	CU_ASSERT_EQUAL(tobj_free(t, (ng - 1) * gb, gb), 0);
	CU_ASSERT(tobj_check(t));
	CU_ASSERT_EQUAL(tobj_write(t, 0, ng * gb, lo * 10 + 4), 0);
	CU_ASSERT(tobj_check(t));
	CU_ASSERT_EQUAL(ent_sync(&t->to_o.ob_entity, CLOVIS_EO_GETATTR), 0);
	CU_ASSERT_EQUAL(t->to_o.ob_attr.oa_size_blocks, (ng + 1) * gb - 1);
	CU_ASSERT_EQUAL(t->to_o.ob_attr.oa_layout, ls->ls_type);
}

/* Every geometry, 4 KiB and 64 KiB blocks, 16 KiB .. 1 MiB units; all
 * checked again after a reopen, then deleted. */
static void test_roundtrip(void)
{
	static const struct lspec cases[] = {
		{CLOVIS_LAYOUT_PDCLUST, false, 4, 2, 1, 12, 14},
		{CLOVIS_LAYOUT_PDCLUST, false, 4, 2, 1, 16, 20},
		{CLOVIS_LAYOUT_PDCLUST, true, 8, 2, 0, 12, 16},
		{CLOVIS_LAYOUT_PDCLUST, true, 8, 2, 0, 16, 18},
		{CLOVIS_LAYOUT_PDCLUST, false, 2, 1, 1, 12, 15},
		{CLOVIS_LAYOUT_PDCLUST, false, 2, 1, 1, 16, 19},
		{CLOVIS_LAYOUT_MIRROR, false, 2, 0, 1, 12, 14},
		{CLOVIS_LAYOUT_MIRROR, false, 3, 0, 0, 16, 20},
		{CLOVIS_LAYOUT_MIRROR, true, 3, 0, 1, 12, 17},
	};
	enum { NC = sizeof cases / sizeof cases[0] };
	struct tobj t[NC];

	for (uint32_t i = 0; i < NC; i++)
		roundtrip_one(&t[i], 100 + i, &cases[i]);
	store_reopen();
	for (uint32_t i = 0; i < NC; i++) {
		CU_ASSERT_EQUAL_FATAL(tobj_open(&t[i]), 0);
		CU_ASSERT_EQUAL(t[i].to_o.ob_attr.oa_data_units, cases[i].ls_n);
		CU_ASSERT_EQUAL(t[i].to_o.ob_attr.oa_unit_shift, cases[i].ls_us);
		CU_ASSERT(tobj_check(&t[i]));
		CU_ASSERT_EQUAL(ent_sync(&t[i].to_o.ob_entity, CLOVIS_EO_DELETE), 0);
		tobj_fini(&t[i]);
	}
}

/* ------------------------------------------------------------ random model */

/* 1..3 disjoint extents of at most 40 blocks in [0, nb), in random order. */
static uint32_t random_extents(uint32_t *seed, uint64_t nb, uint64_t *s,
			       uint64_t *n)
{
	uint32_t nr = 1 + (uint32_t)rand_r(seed) % 3;
	uint64_t seg = nb / nr;

	for (uint32_t i = 0; i < nr; i++) {
		uint64_t most = seg < 40 ? seg : 40;

		n[i] = 1 + (uint64_t)rand_r(seed) % most;
		s[i] = i * seg + (uint64_t)rand_r(seed) % (seg - n[i] + 1);
	}
	if (nr > 1 && rand_r(seed) % 2) {
		uint64_t a = s[0], b = n[0];

		s[0] = s[nr - 1], n[0] = n[nr - 1];
		s[nr - 1] = a, n[nr - 1] = b;
	}
	return nr;
}

/* Random multi-extent writes and frees of three objects against their
 * models (seeded, 150 ops each), checked every 50 ops, at the end, and
 * after a reopen. */
static void test_random_model(void)
{
	static const struct lspec ls[3] = {
		{CLOVIS_LAYOUT_PDCLUST, false, 4, 2, 1, 12, 14},
		{CLOVIS_LAYOUT_MIRROR, false, 2, 0, 1, 12, 13},
		{CLOVIS_LAYOUT_PDCLUST, true, 8, 2, 0, 12, 13},
	};
	struct tobj t[3];
	uint32_t seed = 20240611;

	for (uint32_t o = 0; o < 3; o++)
		CU_ASSERT_EQUAL_FATAL(tobj_create(&t[o], 200 + o, &ls[o], 384), 0);
	for (uint32_t step = 0; step < 150; step++)
		for (uint32_t o = 0; o < 3; o++) {
			uint64_t s[3], n[3];
			uint32_t nr = random_extents(&seed, t[o].to_nb, s, n);
			int rc = rand_r(&seed) % 4 == 0 ?
				 tobj_punch(&t[o], CLOVIS_OC_FREE, nr, s, n) :
				 tobj_writev(&t[o], nr, s, n, step * 3 + o, NULL);

			CU_ASSERT_EQUAL_FATAL(rc, 0);
			if (step % 50 == 49)
				CU_ASSERT(tobj_check(&t[o]));
		}
	store_reopen();
	for (uint32_t o = 0; o < 3; o++) {
		CU_ASSERT_EQUAL_FATAL(tobj_open(&t[o]), 0);
		CU_ASSERT(tobj_check(&t[o]));
		CU_ASSERT_EQUAL(ent_sync(&t[o].to_o.ob_entity, CLOVIS_EO_DELETE), 0);
		tobj_fini(&t[o]);
	}
}

/* ------------------------------------------------------------ failures */

/* Overwrite a partial range and a whole group of t (read-modify-write and
 * full stripes with devices down). */
static void write_some(struct tobj *t, uint64_t seed)
{
	uint64_t gb = ls_gblocks(&t->to_ls), ub = ls_ublocks(&t->to_ls);

	CU_ASSERT_EQUAL(tobj_write(t, ub / 2, ub, seed), 0);
	CU_ASSERT_EQUAL(tobj_write(t, 2 * gb, gb, seed + 1), 0);
	CU_ASSERT(tobj_check(t));
}

static bool in_set(const uint32_t *v, uint32_t nr, uint32_t d)
{
	for (uint32_t i = 0; i < nr; i++)
		if (v[i] == d)
			return true;
	return false;
}

/*
 * Will a read of data unit j of group g of t (written while every device
 * was online, so every unit is on its placed device) fail with these
 * devices failed?  It fails when its own device is down (for a mirror:
 * the copy it reads first) and more than K units of the group are.
 */
static bool unit_lost(const struct tobj *t, uint64_t g, uint32_t j,
		      const uint32_t *failed, uint32_t nf)
{
	const struct lspec *ls = &t->to_ls;
	bool mirror = ls->ls_type == CLOVIS_LAYOUT_MIRROR;
	struct pd_geom geom = {mirror ? 1 : ls->ls_n, ls_k(ls), ls->ls_s,
			       FLASH_NR, ls->ls_us};
	struct clovis_id id = mkid(t->to_lo);
	const struct st_id sid = {id.ci_hi, id.ci_lo};
	uint32_t pd[CLOVIS_LAYOUT_UNITS_MAX], w = geom.pg_n + geom.pg_k, down = 0;

	pd_group_map(&geom, &sid, g, pd);
	for (uint32_t i = 0; i < w; i++)
		down += in_set(failed, nf, fdev[pd[i]]);
	if (mirror)
		return down == w;
	return down > geom.pg_k && in_set(failed, nf, fdev[pd[j]]);
}

/*
 * Read every data unit of t (a flash-pool object) on its own: those
 * unit_lost() predicts fail with -EIO and a message naming the object and
 * the group's block range; all the others read exactly.  Counts both.
 */
static void check_units(struct tobj *t, const uint32_t *failed, uint32_t nf,
			uint32_t *lost, uint32_t *fine)
{
	uint64_t gb = ls_gblocks(&t->to_ls), ub = ls_ublocks(&t->to_ls);
	uint32_t nd = t->to_ls.ls_type == CLOVIS_LAYOUT_MIRROR ? 1 : t->to_ls.ls_n;
	uint8_t *buf = malloc(ub << t->to_ls.ls_bs);
	char msg[MSG_LEN], want[96], idb[CLOVIS_ID_STR_LEN];
	struct clovis_id id = mkid(t->to_lo);

	clovis_id_format(&id, idb);
	for (uint64_t g = 0; g < t->to_nb / gb; g++)
		for (uint32_t j = 0; j < nd; j++) {
			uint64_t s = g * gb + j * ub;

			if (!unit_lost(t, g, j, failed, nf)) {
				CU_ASSERT(tobj_check_range(t, s, ub));
				(*fine)++;
				continue;
			}
			(*lost)++;
			msg[0] = '\0';
			CU_ASSERT_EQUAL(tobj_read(t, s, ub, buf, msg), -EIO);
			snprintf(want, sizeof want, "(blocks %" PRIu64 "..%" PRIu64
				 ")", g * gb, g * gb + gb - 1);
			CU_ASSERT_PTR_NOT_NULL(strstr(msg, idb));
			CU_ASSERT_PTR_NOT_NULL(strstr(msg, want));
		}
	free(buf);
}

/* An index still takes and gives records. */
static void check_index(uint64_t lo)
{
	struct clovis_id id = mkid(lo);
	struct clovis_idx ix;
	char kb[] = "key", vb[] = "value", got[16];
	void *kp[1] = {kb}, *vp[1] = {vb}, *gp[1] = {got};
	size_t kl[1] = {3}, vl[1] = {5}, gl[1] = {sizeof got};
	struct clovis_bufvec k = {1, kp, kl}, v = {1, vp, vl}, g = {1, gp, gl};
	struct clovis_op *op;
	int32_t rcs[1] = {-1};

	CU_ASSERT_EQUAL_FATAL(clovis_idx_init(&ix, clovis_default_realm(cl), &id), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&ix.in_entity, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_idx_op(&ix, CLOVIS_IC_PUT, &k, &v, rcs, 0,
					    &op), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(op), 0);
	CU_ASSERT_EQUAL(rcs[0], 0);
	CU_ASSERT_EQUAL_FATAL(clovis_idx_op(&ix, CLOVIS_IC_GET, &k, &g, rcs, 0,
					    &op), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(op), 0);
	CU_ASSERT(rcs[0] == 0 && gl[0] == 5 && memcmp(got, "value", 5) == 0);
}

/*
 * Up to K devices of the pool failed: every byte of every layout reads back
 * and writes succeed (units of failed devices go to spares).  One more
 * (K + 1): the units of groups that lost more than K fail with -EIO and a
 * message naming the object and the block range; the rest of the object,
 * other objects and indices still work.
 */
static void test_dev_fail(void)
{
	const struct lspec *ls[4] = {&L421, &L820, &LM30, &LM21};
	struct tobj t[4], e4, em, plain;
	uint32_t failed[3], lost = 0, fine = 0, lost2, fine2;
	struct clovis_dev_info di, di2;
	struct clovis_walk_stats ws;

	CU_ASSERT_EQUAL_FATAL(store_own("fail"), 0);
	failed[0] = fdev[0], failed[1] = fdev[1], failed[2] = fdev[2];
	for (uint32_t i = 0; i < 4; i++)
		tobj_make_full(&t[i], 300 + i, ls[i], 512);
	tobj_make_full(&e4, 310, &L421, 512);
	tobj_make_full(&em, 311, &LM20, 256);
	tobj_make_full(&plain, 312, &LPLAIN, 64);
	/* One device down: every layout reads and writes, and the writes put
	 * nothing on the failed device. */
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, failed[0]), 0);
	CU_ASSERT_EQUAL(dev_state(failed[0]), CLOVIS_DEV_FAILED);
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, failed[0]), 0); /* again: no-op */
	CU_ASSERT_FATAL(dev_info(failed[0], &di));
	for (uint32_t i = 0; i < 4; i++) {
		CU_ASSERT(tobj_check(&t[i]));
		write_some(&t[i], 400 + i);
	}
	CU_ASSERT_FATAL(dev_info(failed[0], &di2));
	CU_ASSERT(di2.di_free_bytes >= di.di_free_bytes);
	/* Two down: K = 2 layouts still whole. */
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, failed[1]), 0);
	for (uint32_t i = 0; i < 3; i++) {
		CU_ASSERT(tobj_check(&t[i]));
		write_some(&t[i], 500 + i);
	}
	CU_ASSERT(counters().uc_degraded_reads > 0);
	/* Three down: K + 1 for 4+2+1; mirror 2 lost where both copies were. */
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, failed[2]), 0);
	check_units(&e4, failed, 3, &lost, &fine);
	check_units(&em, failed, 3, &lost, &fine);
	CU_ASSERT(lost > 0);
	CU_ASSERT(fine > 0);
	CU_ASSERT(tobj_check(&plain));
	check_index(320);
	/* Repair rebuilds what it can, says how many it cannot, and leaves
	 * the devices FAILED; the same units are lost, the rest reads. */
	CU_ASSERT_EQUAL(clovis_repair(cl, NULL, NULL, &ws), -EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "could not be rebuilt"));
	CU_ASSERT(ws.ws_unrepairable > 0);
	CU_ASSERT(ws.ws_rebuilt > 0);
	for (uint32_t i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(dev_state(failed[i]), CLOVIS_DEV_FAILED);
	lost2 = fine2 = 0;
	check_units(&e4, failed, 3, &lost2, &fine2);
	check_units(&em, failed, 3, &lost2, &fine2);
	CU_ASSERT_EQUAL(lost2, lost);
	CU_ASSERT_EQUAL(fine2, fine);
	/* Failed devices stay failed across a reopen. */
	store_reopen();
	CU_ASSERT_EQUAL(dev_state(failed[2]), CLOVIS_DEV_FAILED);
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, 999), -EINVAL);
	for (uint32_t i = 0; i < 4; i++)
		tobj_fini(&t[i]);
	tobj_fini(&e4);
	tobj_fini(&em);
	tobj_fini(&plain);
	store_own_end();
}

/* ------------------------------------------------------------ tier faults */

/* Read errors on K devices at once: reads are exact, degraded.  Each
 * device errs LIM_DEV_ERRORS_MAX - 1 times, so it stays in service. */
static void test_fault_read(void)
{
	const uint32_t most = LIM_DEV_ERRORS_MAX - 1;
	struct tobj a, m;
	struct clovis_unit_counters before;

	CU_ASSERT_EQUAL_FATAL(store_own("fread"), 0);
	tobj_make_full(&a, 600, &L421, 512);
	tobj_make_full(&m, 601, &LM20, 256);
	before = counters();
	arm_dev("read", fdev[0], 0, most);
	arm_dev("read", fdev[1], 0, most);
	CU_ASSERT(tobj_check(&a));
	CU_ASSERT_EQUAL(fired_dev("read", fdev[0]), most);
	CU_ASSERT_EQUAL(fired_dev("read", fdev[1]), most);
	CU_ASSERT(counters().uc_degraded_reads > before.uc_degraded_reads);
	faults_off();
	before = counters();
	arm_dev("read", fdev[2], 0, most);
	CU_ASSERT(tobj_check(&m));
	CU_ASSERT(fired_dev("read", fdev[2]) > 0);
	CU_ASSERT(counters().uc_degraded_reads > before.uc_degraded_reads);
	faults_off();
	for (uint32_t i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(dev_state(fdev[i]), CLOVIS_DEV_ONLINE);
	CU_ASSERT(tobj_check(&a));
	CU_ASSERT(tobj_check(&m));
	tobj_fini(&a);
	tobj_fini(&m);
	store_own_end();
}

/* Wait (up to 10 s) until read-repairs reach want. */
static uint64_t wait_repairs(uint64_t want)
{
	struct clovis_unit_counters uc = counters();

	for (int i = 0; i < 1000 && uc.uc_read_repairs < want; i++) {
		nanosleep(&(struct timespec){0, 10000000}, NULL);
		uc = counters();
	}
	return uc.uc_read_repairs;
}

/* Bits flipped on one device while writing: reads are exact, find the
 * checksum errors and rewrite the units; a second read needs no
 * reconstruction. */
static void test_fault_flip(void)
{
	struct tobj a, m;
	struct clovis_unit_counters uc, uc2;

	CU_ASSERT_EQUAL_FATAL(store_own("fflip"), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_create(&a, 610, &L421, 512), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_create(&m, 611, &LM20, 256), 0);
	arm_dev("flip", fdev[3], 0, 0);
	CU_ASSERT_EQUAL(tobj_write(&a, 0, 512, 61), 0);
	CU_ASSERT_EQUAL(tobj_write(&m, 0, 256, 62), 0);
	CU_ASSERT(fired_dev("flip", fdev[3]) > 0);
	faults_off();
	store_reopen(); /* counters from zero */
	CU_ASSERT_EQUAL_FATAL(tobj_open(&a), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_open(&m), 0);
	CU_ASSERT(tobj_check(&a));
	CU_ASSERT(tobj_check(&m));
	uc = counters();
	CU_ASSERT(uc.uc_crc_errors > 0);
	CU_ASSERT(uc.uc_degraded_reads > 0);
	CU_ASSERT_EQUAL(wait_repairs(uc.uc_crc_errors), uc.uc_crc_errors);
	CU_ASSERT(tobj_check(&a));
	CU_ASSERT(tobj_check(&m));
	uc2 = counters();
	CU_ASSERT_EQUAL(uc2.uc_degraded_reads, uc.uc_degraded_reads);
	CU_ASSERT_EQUAL(uc2.uc_crc_errors, uc.uc_crc_errors);
	tobj_fini(&a);
	tobj_fini(&m);
	store_own_end();
}

/* Free bytes of pool "flash". */
static uint64_t flash_free(void)
{
	uint64_t f = 0;

	for (uint32_t i = 0; i < FLASH_NR; i++) {
		struct clovis_dev_info di;

		if (dev_info(fdev[i], &di))
			f += di.di_free_bytes;
	}
	return f;
}

/* A failed or short device write fails the whole op with a message naming
 * the object and the device write; the old content stays whole and no
 * space leaks. */
static void test_fault_write(void)
{
	static const char *const what[2] = {"write", "short"};
	struct tobj t[2];
	char msg[MSG_LEN], idb[CLOVIS_ID_STR_LEN];
	uint64_t before;

	CU_ASSERT_EQUAL_FATAL(store_own("fwrite"), 0);
	tobj_make_full(&t[0], 620, &L421, 512);
	tobj_make_full(&t[1], 621, &LM30, 128);
	store_reopen(); /* deferred frees done, maps rebuilt */
	for (uint32_t i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(tobj_open(&t[i]), 0);
	before = flash_free();
	for (uint32_t w = 0; w < 2; w++)
		for (uint32_t i = 0; i < 2; i++) {
			uint64_t s = 0, n = t[i].to_nb;
			struct clovis_id id = mkid(t[i].to_lo);

			clovis_id_format(&id, idb);
			arm_dev(what[w], fdev[4], 0, 0);
			msg[0] = '\0';
			CU_ASSERT_EQUAL(tobj_writev(&t[i], 1, &s, &n, 6200 + w * 2 + i,
						    msg), -EIO);
			CU_ASSERT_EQUAL(fired_dev(what[w], fdev[4]), 1);
			faults_off();
			CU_ASSERT_PTR_NOT_NULL(strstr(msg, idb));
			CU_ASSERT_PTR_NOT_NULL(strstr(msg, "write to device"));
			CU_ASSERT(tobj_check(&t[i]));
		}
	CU_ASSERT_EQUAL(dev_state(fdev[4]), CLOVIS_DEV_ONLINE);
	store_reopen();
	CU_ASSERT_EQUAL(flash_free(), before);
	for (uint32_t i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(tobj_open(&t[i]), 0);
		CU_ASSERT(tobj_check(&t[i]));
		CU_ASSERT_EQUAL(tobj_write(&t[i], 0, t[i].to_nb, 6300 + i), 0);
		CU_ASSERT(tobj_check(&t[i]));
		tobj_fini(&t[i]);
	}
	store_own_end();
}

/* A device that stops answering fails itself after LIM_DEV_ERRORS_MAX
 * errors; its data stays readable and the object writable. */
static void test_fault_gone(void)
{
	struct tobj a;
	struct clovis_dev_info di;

	CU_ASSERT_EQUAL_FATAL(store_own("fgone"), 0);
	tobj_make_full(&a, 630, &L421, 512);
	arm_dev("gone", fdev[5], 0, 0);
	for (int i = 0; i < 20 && dev_state(fdev[5]) == CLOVIS_DEV_ONLINE; i++)
		CU_ASSERT(tobj_check(&a));
	CU_ASSERT_FATAL(dev_info(fdev[5], &di));
	CU_ASSERT_EQUAL(di.di_state, CLOVIS_DEV_FAILED);
	CU_ASSERT(di.di_errors >= LIM_DEV_ERRORS_MAX);
	CU_ASSERT(tobj_check(&a));
	write_some(&a, 631);
	faults_off();
	store_reopen();
	CU_ASSERT_EQUAL(dev_state(fdev[5]), CLOVIS_DEV_FAILED);
	CU_ASSERT_EQUAL_FATAL(tobj_open(&a), 0);
	CU_ASSERT(tobj_check(&a));
	tobj_fini(&a);
	store_own_end();
}

/* ------------------------------------------------------------ walks */

/* Scrub finds units stored with flipped bits and rewrites them; a second
 * scrub finds nothing; reads then need no reconstruction. */
static void test_scrub(void)
{
	struct tobj a, m;
	struct clovis_walk_stats ws;
	struct clovis_unit_counters uc;

	CU_ASSERT_EQUAL_FATAL(store_own("scrub"), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_create(&a, 640, &L421, 512), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_create(&m, 641, &LM30, 128), 0);
	arm_dev("flip", fdev[6], 0, 0);
	CU_ASSERT_EQUAL(tobj_write(&a, 0, 512, 64), 0);
	CU_ASSERT_EQUAL(tobj_write(&m, 0, 128, 65), 0);
	CU_ASSERT(fired_dev("flip", fdev[6]) > 0);
	faults_off();
	CU_ASSERT_EQUAL(clovis_scrub(cl, NULL, NULL, &ws), 0);
	CU_ASSERT(ws.ws_corrupt > 0);
	CU_ASSERT_EQUAL(ws.ws_rebuilt, ws.ws_corrupt);
	CU_ASSERT_EQUAL(ws.ws_unrepairable, 0);
	CU_ASSERT_EQUAL(ws.ws_resumed, 0);
	CU_ASSERT_EQUAL(ws.ws_units, 512 / 16 * 6 + 128 / 4 * 3);
	CU_ASSERT_EQUAL(clovis_scrub(cl, NULL, NULL, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_corrupt, 0);
	CU_ASSERT_EQUAL(ws.ws_rebuilt, 0);
	uc = counters();
	CU_ASSERT(tobj_check(&a));
	CU_ASSERT(tobj_check(&m));
	CU_ASSERT_EQUAL(counters().uc_degraded_reads, uc.uc_degraded_reads);
	CU_ASSERT_EQUAL(counters().uc_crc_errors, uc.uc_crc_errors);
	tobj_fini(&a);
	tobj_fini(&m);
	store_own_end();
}

/* clovis_obj_scrub(): one object's units only (data and parity, every
 * mirror copy), damaged ones rebuilt; the other object's damage stays
 * for its own call; a plain object has nothing to check; a second call
 * finds nothing; the store-wide scrub then finds nothing either. */
static void test_obj_scrub(void)
{
	struct tobj a, m, p;
	struct clovis_walk_stats ws;

	CU_ASSERT_EQUAL_FATAL(store_own("objscrub"), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_create(&a, 650, &L421, 512), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_create(&m, 651, &LM30, 128), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_create(&p, 652, &LPLAIN, 16), 0);
	arm_dev("flip", fdev[6], 0, 0);
	CU_ASSERT_EQUAL(tobj_write(&a, 0, 512, 66), 0);
	CU_ASSERT_EQUAL(tobj_write(&m, 0, 128, 67), 0);
	CU_ASSERT(fired_dev("flip", fdev[6]) > 0);
	faults_off();
	CU_ASSERT_EQUAL(tobj_write(&p, 0, 16, 68), 0);
	CU_ASSERT_EQUAL(clovis_obj_scrub(&a.to_o, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_units, 512 / 16 * 6);
	CU_ASSERT(ws.ws_corrupt > 0);
	CU_ASSERT_EQUAL(ws.ws_rebuilt, ws.ws_corrupt);
	CU_ASSERT_EQUAL(ws.ws_unrepairable, 0);
	CU_ASSERT_EQUAL(clovis_obj_scrub(&a.to_o, &ws), 0);
	CU_ASSERT(ws.ws_units == 512 / 16 * 6 && ws.ws_corrupt == 0);
	/* m's damaged copies were left for m's own call */
	CU_ASSERT_EQUAL(clovis_obj_scrub(&m.to_o, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_units, 128 / 4 * 3);
	CU_ASSERT(ws.ws_corrupt > 0);
	CU_ASSERT_EQUAL(ws.ws_rebuilt, ws.ws_corrupt);
	CU_ASSERT_EQUAL(clovis_obj_scrub(&p.to_o, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_units, 0);
	CU_ASSERT_EQUAL(clovis_scrub(cl, NULL, NULL, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_corrupt, 0);
	CU_ASSERT_EQUAL(clovis_obj_scrub(NULL, &ws), -EINVAL);
	CU_ASSERT_EQUAL(clovis_obj_scrub(&a.to_o, NULL), -EINVAL);
	CU_ASSERT(tobj_check(&a));
	CU_ASSERT(tobj_check(&m));
	CU_ASSERT(tobj_check(&p));
	tobj_fini(&a);
	tobj_fini(&m);
	tobj_fini(&p);
	store_own_end();
}

static bool check_all(struct tobj *t, uint32_t nr)
{
	bool ok = true;

	for (uint32_t i = 0; i < nr; i++)
		ok = tobj_check(&t[i]) && ok;
	return ok;
}

/*
 * Repair after a device failure rebuilds its units from every survivor of
 * the pool; replace puts a new empty device in its place, rebalance moves
 * units back to it; every byte is checked after each step and after a
 * reopen, and the rebuilt data is read without reconstruction.
 */
static void test_repair(void)
{
	const struct lspec *ls[4] = {&L421, &L211, &LM21, &LM30};
	struct tobj t[4];
	struct clovis_walk_stats ws;
	struct clovis_dev_info di;
	uint64_t degraded;
	uint32_t d;
	char path[700];

	CU_ASSERT_EQUAL_FATAL(store_own("repair"), 0);
	d = fdev[3];
	snprintf(path, sizeof path, "%s/repair-flash-new.dev", root);
	for (uint32_t i = 0; i < 4; i++)
		tobj_make_full(&t[i], 700 + i, ls[i], 512);
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, d), 0);
	write_some(&t[0], 710);
	CU_ASSERT_EQUAL(clovis_dev_replace(cl, d, path), -EBUSY);
	CU_ASSERT_EQUAL(clovis_repair(cl, NULL, NULL, &ws), 0);
	CU_ASSERT(ws.ws_rebuilt > 0);
	CU_ASSERT_EQUAL(ws.ws_unrepairable, 0);
	CU_ASSERT_EQUAL(ws.ws_resumed, 0);
	CU_ASSERT(ws.ws_devices >= FLASH_NR - 1);
	CU_ASSERT_EQUAL(dev_state(d), CLOVIS_DEV_REPAIRED);
	degraded = counters().uc_degraded_reads;
	CU_ASSERT(check_all(t, 4));
	CU_ASSERT_EQUAL(counters().uc_degraded_reads, degraded);
	/* Only a repaired device can be replaced, by a path not in use. */
	CU_ASSERT_EQUAL(clovis_dev_replace(cl, fdev[4], path), -EBUSY);
	CU_ASSERT_EQUAL(clovis_dev_replace(cl, d, conf_path), -EEXIST);
	CU_ASSERT_EQUAL(clovis_dev_replace(cl, d, ""), -EINVAL);
	CU_ASSERT_EQUAL(clovis_dev_replace(cl, 999, path), -EINVAL);
	CU_ASSERT_EQUAL(dev_state(d), CLOVIS_DEV_REPAIRED);
	CU_ASSERT_EQUAL(clovis_dev_replace(cl, d, path), 0);
	CU_ASSERT_FATAL(dev_info(d, &di));
	CU_ASSERT_EQUAL(di.di_state, CLOVIS_DEV_ONLINE);
	CU_ASSERT_EQUAL(di.di_rebalance, 1);
	CU_ASSERT_STRING_EQUAL(di.di_path, path);
	CU_ASSERT_EQUAL(di.di_free_bytes, di.di_size_bytes);
	CU_ASSERT(check_all(t, 4));
	CU_ASSERT_EQUAL(clovis_rebalance(cl, NULL, NULL, &ws), 0);
	CU_ASSERT(ws.ws_moved > 0);
	CU_ASSERT_EQUAL(ws.ws_unrepairable, 0);
	CU_ASSERT_FATAL(dev_info(d, &di));
	CU_ASSERT_EQUAL(di.di_rebalance, 0);
	CU_ASSERT(di.di_free_bytes < di.di_size_bytes);
	degraded = counters().uc_degraded_reads;
	CU_ASSERT(check_all(t, 4));
	CU_ASSERT_EQUAL(counters().uc_degraded_reads, degraded);
	/* Nothing left to do. */
	CU_ASSERT_EQUAL(clovis_repair(cl, NULL, NULL, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_rebuilt, 0);
	CU_ASSERT_EQUAL(clovis_rebalance(cl, NULL, NULL, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_moved, 0);
	store_reopen();
	CU_ASSERT_FATAL(dev_info(d, &di));
	CU_ASSERT_EQUAL(di.di_state, CLOVIS_DEV_ONLINE);
	CU_ASSERT(di.di_free_bytes < di.di_size_bytes);
	for (uint32_t i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL_FATAL(tobj_open(&t[i]), 0);
		CU_ASSERT(tobj_check(&t[i]));
		tobj_fini(&t[i]);
	}
	store_own_end();
}

/*
 * Repair over failure domains (a cluster store's servers): 6 flash devices
 * in 3 domains of 2, pdclust 2+1 with one spare: each group's 3 units on
 * the 3 domains, its spare in the domain of its first unit.  One device
 * failed, the repair rebuilds each of its units in a domain holding none
 * of the group's other units (the failed device's partner), never beside
 * another unit of the group; every byte reads back.  Before, a unit of
 * the second or third slot went to the spare, in the first unit's domain:
 * a server's death then lost two units of the group.
 */
static void test_repair_domains(void)
{
	static const char text[] =
		"devices:\n"
		"  - { tier: nvram }\n"
		"  - { tier: flash, domain: 1 }\n  - { tier: flash, domain: 1 }\n"
		"  - { tier: flash, domain: 2 }\n  - { tier: flash, domain: 2 }\n"
		"  - { tier: flash, domain: 3 }\n  - { tier: flash, domain: 3 }\n"
		"pools:\n"
		"  - name: flash\n"
		"    devices: [flash0, flash1, flash2, flash3, flash4, flash5]\n";
	char path[700];
	struct clovis_conf c = {.cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = OWN_DEV_SIZE,
				.cc_nvram_dir = root};
	struct clovis_walk_stats ws;
	struct tobj t[4];
	FILE *f;
	int pf;

	snprintf(path, sizeof path, "%s/domains.yaml", root);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	CU_ASSERT_FATAL(fclose(f) == 0);
	clovis_fini(cl);
	cl = NULL;
	snprintf(dir, sizeof dir, "%s/domains", root);
	c.cc_data_dir = dir;
	c.cc_config = path;
	CU_ASSERT_EQUAL_FATAL(clovis_init(&cl, &c), 0);
	pf = pool_find("flash", fdev, 6);
	CU_ASSERT_FATAL(pf >= 0);
	pool_flash = (uint32_t)pf;
	for (uint32_t i = 0; i < 4; i++)
		tobj_make_full(&t[i], 900 + i, &L211, 512);
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, fdev[2]), 0);
	CU_ASSERT_EQUAL(clovis_repair(cl, NULL, NULL, &ws), 0);
	CU_ASSERT(ws.ws_rebuilt > 0);
	CU_ASSERT_EQUAL(ws.ws_unrepairable, 0);
	CU_ASSERT_EQUAL(ws.ws_shared, 0);
	if (ws.ws_shared != 0)
		fprintf(stderr, "repair_domains: %" PRIu64 " of %" PRIu64
			" rebuilt units beside another of their group\n",
			ws.ws_shared, ws.ws_rebuilt);
	CU_ASSERT(check_all(t, 4));
	for (uint32_t i = 0; i < 4; i++)
		tobj_fini(&t[i]);
	store_own_end();
}

/** A writer thread's object and what it saw. */
struct cwriter {
	struct tobj *cw_t;
	uint32_t cw_writes, cw_failed;
};

/* 60 random partial overwrites of an object (the model follows). */
static void *cwriter_main(void *arg)
{
	struct cwriter *w = arg;
	uint32_t seed = 4242;

	for (uint32_t i = 0; i < 60; i++) {
		uint64_t s[3], n[3];
		uint32_t nr = random_extents(&seed, w->cw_t->to_nb, s, n);

		w->cw_failed += tobj_writev(w->cw_t, nr, s, n, 7300 + i, NULL) != 0;
		w->cw_writes++;
	}
	return NULL;
}

/* Progress callback: 20 ms between batches, so that writes interleave. */
static int slow_down(void *arg, uint64_t done, uint64_t total)
{
	nanosleep(&(struct timespec){0, 20000000}, NULL);
	return 0;
}

/* Repair while a thread overwrites an object it repairs: every write
 * lands, the repair finishes, and afterwards no read needs
 * reconstruction (no unit is left on the failed device). */
static void test_repair_concurrent(void)
{
	struct tobj t[2];
	struct cwriter w = {&t[0], 0, 0};
	struct clovis_walk_stats ws;
	uint64_t degraded;
	pthread_t th;

	CU_ASSERT_EQUAL_FATAL(store_own("crepair"), 0);
	tobj_make_full(&t[0], 730, &L421, 1024);
	tobj_make_full(&t[1], 731, &LM21, 512);
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, fdev[6]), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, cwriter_main, &w), 0);
	CU_ASSERT_EQUAL(clovis_repair(cl, slow_down, NULL, &ws), 0);
	CU_ASSERT_EQUAL(pthread_join(th, NULL), 0);
	CU_ASSERT_EQUAL(w.cw_writes, 60);
	CU_ASSERT_EQUAL(w.cw_failed, 0);
	CU_ASSERT(ws.ws_rebuilt > 0);
	CU_ASSERT_EQUAL(ws.ws_unrepairable, 0);
	CU_ASSERT_EQUAL(dev_state(fdev[6]), CLOVIS_DEV_REPAIRED);
	degraded = counters().uc_degraded_reads;
	CU_ASSERT(check_all(t, 2));
	CU_ASSERT_EQUAL(counters().uc_degraded_reads, degraded);
	store_reopen();
	for (uint32_t i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(tobj_open(&t[i]), 0);
		CU_ASSERT(tobj_check(&t[i]));
		tobj_fini(&t[i]);
	}
	store_own_end();
}

static int stop_at_once(void *arg, uint64_t done, uint64_t total)
{
	uint32_t *calls = arg;

	(*calls)++;
	return done > 0 && done < total;
}

/*
 * A repair stopped by its progress callback returns -EINTR and keeps its
 * place: the next call says it resumed and finishes; its statistics say
 * what it did and, apart, what the whole walk did (the two calls add up
 * to the whole; once the rebuilt count of a resumed call held the saved
 * part too while its unit count did not).  A batch that fails
 * (fault point walk.batch) fails the call; the next resumes and finishes.
 */
static void test_repair_resume(void)
{
	const uint64_t records = 1024 / 16 * 6 + 512 / 4 * 2;
	struct tobj t[2];
	struct clovis_walk_stats ws, ws1;
	uint32_t calls = 0;

	CU_ASSERT_EQUAL_FATAL(store_own("resume"), 0);
	tobj_make_full(&t[0], 720, &L421, 1024);
	tobj_make_full(&t[1], 721, &LM21, 512);
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, fdev[1]), 0);
	CU_ASSERT_EQUAL(clovis_repair(cl, stop_at_once, &calls, &ws1), -EINTR);
	CU_ASSERT_EQUAL(calls, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "resume"));
	CU_ASSERT(ws1.ws_units > 0 && ws1.ws_units < 1024 / 16 * 6);
	CU_ASSERT(ws1.ws_rebuilt > 0);
	CU_ASSERT_EQUAL(ws1.ws_walk_units, ws1.ws_units);
	CU_ASSERT_EQUAL(ws1.ws_walk_rebuilt, ws1.ws_rebuilt);
	CU_ASSERT_EQUAL(dev_state(fdev[1]), CLOVIS_DEV_FAILED);
	CU_ASSERT_EQUAL(clovis_repair(cl, NULL, NULL, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_resumed, 1);
	CU_ASSERT(ws.ws_rebuilt > 0);
	/* This call's counts against the whole walk's: the saved part is in
	 * the whole walk only, and the two calls add up to it. */
	CU_ASSERT_EQUAL(ws1.ws_units + ws.ws_units, records);
	CU_ASSERT_EQUAL(ws.ws_walk_units, records);
	CU_ASSERT_EQUAL(ws.ws_walk_rebuilt, ws1.ws_rebuilt + ws.ws_rebuilt);
	CU_ASSERT_EQUAL(ws.ws_walk_unrepairable, 0);
	CU_ASSERT(ws.ws_bytes > 0 && ws.ws_elapsed_ns > 0);
	CU_ASSERT_EQUAL(dev_state(fdev[1]), CLOVIS_DEV_REPAIRED);
	CU_ASSERT(check_all(t, 2));
#ifdef STRATA_FAULT_INJECT
	CU_ASSERT_EQUAL(clovis_dev_fail(cl, fdev[2]), 0);
	fault_arm("walk.batch", 1, 1);
	CU_ASSERT_EQUAL(clovis_repair(cl, NULL, NULL, &ws), -EIO);
	CU_ASSERT_EQUAL(fault_fired("walk.batch"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "walk.batch"));
	faults_off();
	CU_ASSERT_EQUAL(dev_state(fdev[2]), CLOVIS_DEV_FAILED);
	CU_ASSERT(check_all(t, 2));
	CU_ASSERT_EQUAL(clovis_repair(cl, NULL, NULL, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_resumed, 1);
	CU_ASSERT_EQUAL(ws.ws_unrepairable, 0);
	CU_ASSERT_EQUAL(dev_state(fdev[2]), CLOVIS_DEV_REPAIRED);
#endif
	CU_ASSERT(check_all(t, 2));
	store_reopen();
	for (uint32_t i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(tobj_open(&t[i]), 0);
		CU_ASSERT(tobj_check(&t[i]));
		tobj_fini(&t[i]);
	}
	store_own_end();
}

/* ------------------------------------------------------------ bad input */

/** A bad attribute set and the word its message must hold. */
struct bad_attr {
	uint32_t ba_layout, ba_pool; /* pool UINT32_MAX: pool "flash" */
	uint32_t ba_n, ba_k, ba_s, ba_bs, ba_us;
	bool ba_at_init;             /* refused by clovis_obj_init() */
	const char *ba_word;
};

/* Bad layout attributes are refused with -EINVAL and a message naming the
 * field, by clovis_obj_init() or by CREATE; nothing is created. */
static void test_bad_attrs(void)
{
	static const struct bad_attr bad[] = {
		{9, UINT32_MAX, 4, 2, 0, 12, 16, true, "layout 9"},
		{CLOVIS_LAYOUT_PDCLUST, 99, 4, 2, 0, 12, 16, false, "pool 99"},
		{CLOVIS_LAYOUT_PDCLUST, UINT32_MAX, 4, 2, 3, 12, 16, false,
		 "8 devices"},
		{CLOVIS_LAYOUT_MIRROR, UINT32_MAX, 2, 1, 0, 12, 16, false,
		 "oa_parity_units"},
		{CLOVIS_LAYOUT_MIRROR, UINT32_MAX, 1, 0, 0, 12, 16, false,
		 "copies"},
		{CLOVIS_LAYOUT_PDCLUST, UINT32_MAX, 4, 2, 0, 16, 14, false,
		 "block shift 16"},
		{CLOVIS_LAYOUT_PDCLUST, UINT32_MAX, 4, 2, 0, 12, 25, true,
		 "unit shift 25"},
		{CLOVIS_LAYOUT_PDCLUST, UINT32_MAX, 4, 2, 0, 12, 11, true,
		 "unit shift 11"},
		{CLOVIS_LAYOUT_PDCLUST, UINT32_MAX, 33, 2, 0, 12, 16, true,
		 "33+2+0"},
	};

	for (uint32_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const struct bad_attr *b = &bad[i];
		struct clovis_obj_attr a = {
			.oa_block_shift = b->ba_bs, .oa_layout = b->ba_layout,
			.oa_pool = b->ba_pool == UINT32_MAX ? pool_flash
							   : b->ba_pool,
			.oa_data_units = b->ba_n, .oa_parity_units = b->ba_k,
			.oa_spare_units = b->ba_s, .oa_unit_shift = b->ba_us};
		struct clovis_id id = mkid(800 + i);
		struct clovis_obj o;
		char msg[MSG_LEN] = "";
		int rc = clovis_obj_init(&o, clovis_default_realm(cl), &id, &a);

		if (b->ba_at_init) {
			CU_ASSERT_EQUAL(rc, -EINVAL);
			snprintf(msg, sizeof msg, "%s", clovis_errmsg());
		} else {
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			CU_ASSERT_EQUAL(ent_run(&o.ob_entity, CLOVIS_EO_CREATE,
						msg), -EINVAL);
		}
		if (strstr(msg, b->ba_word) == NULL)
			fprintf(stderr, "stripe: case %u: \"%s\" lacks \"%s\"\n",
				i, msg, b->ba_word);
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, b->ba_word));
		CU_ASSERT_EQUAL(clovis_obj_init(&o, clovis_default_realm(cl), &id,
						NULL), 0);
		CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_OPEN), -ENOENT);
	}
}

/* ------------------------------------------------------------ ALLOC, FREE */

/*
 * ALLOC and FREE make blocks read as zeros on unit layouts (clovis.h): once
 * ALLOC kept the old data of pdclust and mirror objects.  ALLOC over part
 * of a group, a whole group and past the end (the size grows); FREE of two
 * whole data units of a group releases their space (their records are
 * dropped, parity is rewritten in place of the old), checked exactly after
 * a reopen; a mirror object likewise.  Every step is checked against the
 * model, and again after the reopen.
 */
static void test_alloc_free_zeros(void)
{
	struct tobj t, m;
	uint64_t s = 1, n = 32, before, ub = ls_ublocks(&L421);

	CU_ASSERT_EQUAL_FATAL(store_own("allocfree"), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_create(&t, 900, &L421, 80), 0);
	CU_ASSERT_EQUAL(tobj_write(&t, 0, 64, 90), 0);
	CU_ASSERT_EQUAL(tobj_punch(&t, CLOVIS_OC_ALLOC, 1, &s, &n), 0);
	CU_ASSERT(tobj_check(&t));
	s = 70, n = 10;
	CU_ASSERT_EQUAL(tobj_punch(&t, CLOVIS_OC_ALLOC, 1, &s, &n), 0);
	CU_ASSERT(tobj_check(&t));
	CU_ASSERT_EQUAL(ent_sync(&t.to_o.ob_entity, CLOVIS_EO_GETATTR), 0);
	CU_ASSERT_EQUAL(t.to_o.ob_attr.oa_size_blocks, 80);
	CU_ASSERT_EQUAL_FATAL(tobj_create(&m, 901, &LM21, 16), 0);
	CU_ASSERT_EQUAL(tobj_write(&m, 0, 16, 91), 0);
	s = 2, n = 8;
	CU_ASSERT_EQUAL(tobj_punch(&m, CLOVIS_OC_ALLOC, 1, &s, &n), 0);
	CU_ASSERT(tobj_check(&m));
	store_reopen();
	CU_ASSERT_EQUAL_FATAL(tobj_open(&t), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_open(&m), 0);
	before = flash_free();
	/* Group 3 (blocks 48..63): data units 0 and 1 wholly freed. */
	CU_ASSERT_EQUAL(tobj_free(&t, 48, 2 * ub), 0);
	CU_ASSERT(tobj_check(&t));
	store_reopen();
	CU_ASSERT_EQUAL(flash_free(), before + (2 * ub << L421.ls_bs));
	CU_ASSERT_EQUAL_FATAL(tobj_open(&t), 0);
	CU_ASSERT_EQUAL_FATAL(tobj_open(&m), 0);
	CU_ASSERT(tobj_check(&t));
	CU_ASSERT(tobj_check(&m));
	CU_ASSERT_EQUAL(ent_sync(&t.to_o.ob_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(ent_sync(&m.to_o.ob_entity, CLOVIS_EO_DELETE), 0);
	tobj_fini(&t);
	tobj_fini(&m);
	store_own_end();
}

/* ------------------------------------------------------------ fragmentation */

/* One op on a plain object with nr extents of n blocks every step blocks
 * from s (data: one block of fill, repeated; NULL for FREE). */
static int frag_op(struct clovis_obj *o, enum clovis_obj_opcode oc,
		   uint64_t s, uint64_t n, uint64_t step, uint32_t nr)
{
	uint64_t *st = calloc(nr, sizeof *st), *nn = calloc(nr, sizeof *nn);
	size_t len = (size_t)nr * n << 12;
	uint8_t *buf = oc == CLOVIS_OC_WRITE ? malloc(len) : NULL;
	void *bp = buf;
	struct clovis_extvec ev = {nr, st, nn};
	struct clovis_bufvec bv = {1, &bp, &len};
	int rc = -ENOMEM;

	if (st != NULL && nn != NULL && (buf != NULL || oc != CLOVIS_OC_WRITE)) {
		for (uint32_t i = 0; i < nr; i++)
			st[i] = s + i * step, nn[i] = n;
		if (buf != NULL)
			fill(buf, len, s);
		rc = op_run(o, oc, &ev, buf != NULL ? &bv : NULL, NULL);
	}
	free(st);
	free(nn);
	free(buf);
	return rc;
}

/*
 * A device free only in small pieces does not fail writes of objects
 * whose units are larger: flash0 is filled by a plain object of 4 KiB
 * blocks, then every fourth block is freed (25 % of the device free, in
 * 4 KiB pieces).  A pdclust write of 16 KiB units placed on flash0 once
 * failed with -ENOSPC; its units now go to other devices of the pool and
 * read back exactly.  (A unit, like a block of a plain object, is one run
 * of its device; a block larger than every free piece cannot be placed.)
 */
static void test_frag_write(void)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN,
				    .oa_tier = CLOVIS_TIER_FLASH};
	struct clovis_dev_info d0, d1;
	struct clovis_obj p;
	struct tobj t;
	uint64_t lo = 0, blocks = 0, chunk = 256;
	int rc = 0;

	CU_ASSERT_EQUAL_FATAL(store_own("frag"), 0);
	/* A plain flash object that lands on flash0 (ids hash over 8). */
	for (uint64_t i = 0; i < 64 && lo == 0; i++) {
		struct clovis_id id = mkid(1300 + i);

		CU_ASSERT_FATAL(dev_info(fdev[0], &d0));
		CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&p, clovis_default_realm(cl),
						      &id, &a), 0);
		CU_ASSERT_EQUAL_FATAL(ent_sync(&p.ob_entity, CLOVIS_EO_CREATE), 0);
		CU_ASSERT_EQUAL_FATAL(frag_op(&p, CLOVIS_OC_WRITE, 0, 1, 1, 1), 0);
		CU_ASSERT_FATAL(dev_info(fdev[0], &d1));
		if (d1.di_free_bytes < d0.di_free_bytes)
			lo = 1300 + i;
		else
			CU_ASSERT_EQUAL(ent_sync(&p.ob_entity, CLOVIS_EO_DELETE), 0);
	}
	CU_ASSERT_FATAL(lo != 0);
	/* Fill flash0 to the last block: chunks of 256, 16, then 1 block. */
	blocks = 1;
	for (uint32_t i = 0; i < 600 && chunk > 0; i++) {
		rc = frag_op(&p, CLOVIS_OC_WRITE, blocks, chunk, chunk, 1);
		if (rc == 0)
			blocks += chunk;
		else
			chunk = chunk == 256 ? 16 : chunk == 16 ? 1 : 0;
	}
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	CU_ASSERT_FATAL(dev_info(fdev[0], &d0));
	CU_ASSERT(d0.di_free_bytes < 4096);
	/* Free every fourth block: a quarter of the device in 4 KiB pieces. */
	for (uint64_t s = 0; s < blocks; s += 4 * 1024)
		CU_ASSERT_EQUAL(frag_op(&p, CLOVIS_OC_FREE, s, 1, 4,
					(uint32_t)((blocks - s + 3) / 4 < 1024 ?
						   (blocks - s + 3) / 4 : 1024)),
				0);
	store_reopen(); /* deferred frees done */
	CU_ASSERT_FATAL(dev_info(fdev[0], &d0));
	CU_ASSERT(d0.di_free_bytes >= d0.di_size_bytes / 5);
	/* 4+2+1 of 16 KiB units over 8 devices: most groups place a unit
	 * on flash0. */
	CU_ASSERT_EQUAL_FATAL(tobj_create(&t, 1400, &L421, 512), 0);
	CU_ASSERT_EQUAL(tobj_write(&t, 0, 512, 1401), 0);
	CU_ASSERT(tobj_check(&t));
	CU_ASSERT_FATAL(dev_info(fdev[0], &d1));
	CU_ASSERT(d1.di_free_bytes >= d0.di_free_bytes / 2);
	store_reopen();
	CU_ASSERT_EQUAL_FATAL(tobj_open(&t), 0);
	CU_ASSERT(tobj_check(&t));
	tobj_fini(&t);
	store_own_end();
}

/* ------------------------------------------------------ no unit layouts */

/* eng_exec() of a CREATE of a pdclust object, in a thread of its own
 * (registered with the engine); its rc and message. */
struct nolops_arg {
	struct eng *na_e;
	int na_rc;
	char na_msg[MSG_LEN];
};

static void *nolops_create(void *arg)
{
	struct nolops_arg *a = arg;
	struct eng_req r = {
		.er_kind = ER_ENT_CREATE, .er_type = ST_ET_OBJ,
		.er_id = {ID_HI, 1600},
		.er_ent = {.me_block_shift = 12, .me_layout = ST_LAYOUT_PDCLUST,
			   .me_n = 4, .me_k = 2, .me_unit_shift = 14}};

	eng_thread_enter();
	a->na_rc = eng_exec(a->na_e, &r);
	snprintf(a->na_msg, sizeof a->na_msg, "%s", err_msg());
	eng_thread_leave();
	return NULL;
}

/* An engine opened without the unit layouts (no ec_layout_ops: what a
 * process gets that does not assemble layouts/) refuses a store holding
 * unit records, and a new pdclust object, with -EOPNOTSUPP naming it;
 * it never calls into what it was not given. */
static void test_no_layout_ops(void)
{
	struct eng_conf ec = {.ec_dir = NULL, .ec_dev_size = OWN_DEV_SIZE,
			      .ec_nvram_dir = root, .ec_config = conf_path};
	struct nolops_arg a = {0};
	struct st_id id = {ID_HI, 1600};
	struct eng *e = NULL;
	pthread_t th;
	struct tobj t;

	CU_ASSERT_EQUAL_FATAL(store_own("nolops"), 0);
	tobj_make_full(&t, 1500, &L421, 64);
	tobj_fini(&t);
	clovis_fini(cl);
	cl = NULL;
	ec.ec_dir = dir;
	CU_ASSERT_EQUAL(eng_open(&e, &ec), -EOPNOTSUPP);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "unit records"));
	CU_ASSERT_EQUAL(eng_destroy(dir), 0);

	ec.ec_create = true;
	CU_ASSERT_EQUAL_FATAL(eng_open(&e, &ec), 0);
	CU_ASSERT_PTR_NULL(eng_layout_ops(e));
	a.na_e = e;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, nolops_create, &a), 0);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(a.na_rc, -EOPNOTSUPP);
	CU_ASSERT_PTR_NOT_NULL(strstr(a.na_msg, "pdclust"));
	CU_ASSERT_PTR_NOT_NULL(strstr(a.na_msg, eng_id_str(&id)));
	eng_close(e);
	CU_ASSERT_EQUAL(eng_destroy(dir), 0);
	snprintf(dir, sizeof dir, "%s", shared_dir);
	CU_ASSERT_EQUAL(store_open(SHARED_DEV_SIZE), 0);
}

/* ------------------------------------------------------------ suite */

int stripe_ut_add(void)
{
	CU_pSuite s = CU_add_suite("stripe", suite_init, suite_fini);

	if (s == NULL ||
	    !CU_add_test(s, "roundtrip", test_roundtrip) ||
	    !CU_add_test(s, "random_model", test_random_model) ||
	    !CU_add_test(s, "dev_fail", test_dev_fail) ||
	    !CU_add_test(s, "fault_read", test_fault_read) ||
	    !CU_add_test(s, "fault_flip", test_fault_flip) ||
	    !CU_add_test(s, "fault_write", test_fault_write) ||
	    !CU_add_test(s, "fault_gone", test_fault_gone) ||
	    !CU_add_test(s, "scrub", test_scrub) ||
	    !CU_add_test(s, "obj_scrub", test_obj_scrub) ||
	    !CU_add_test(s, "repair", test_repair) ||
	    !CU_add_test(s, "repair_domains", test_repair_domains) ||
	    !CU_add_test(s, "repair_resume", test_repair_resume) ||
	    !CU_add_test(s, "repair_concurrent", test_repair_concurrent) ||
	    !CU_add_test(s, "bad_attrs", test_bad_attrs) ||
	    !CU_add_test(s, "alloc_free_zeros", test_alloc_free_zeros) ||
	    !CU_add_test(s, "frag_write", test_frag_write) ||
	    !CU_add_test(s, "no_layout_ops", test_no_layout_ops))
		return -1;
	return 0;
}
