/*
 * comp_ut.c — composite objects: layers on different tiers and pools,
 * writes through the top layer, extent moves between layers, drop rules,
 * and a process killed with SIGKILL in the middle of moves.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "tests/ut.h"

#define CDEV_SIZE (32ull << 20)
#define CBLKS 96u

static char cdir[512];

static struct clovis *copen(void)
{
	struct clovis_conf c = {.cc_data_dir = cdir,
				.cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = CDEV_SIZE};
	struct clovis *cl = NULL;
	char nv[600];

	snprintf(nv, sizeof nv, "%s", cdir);
	*strrchr(nv, '/') = '\0';
	c.cc_nvram_dir = nv;
	if (clovis_init(&cl, &c) != 0)
		fprintf(stderr, "clovis_init: %s\n", clovis_errmsg());
	return cl;
}

static int cio(struct clovis_obj *o, int opc, uint64_t s, uint64_t n, void *b)
{
	struct clovis_op *op;
	size_t l = n << 12;
	void *bp = b;
	struct clovis_extvec ev = {1, &s, &n};
	struct clovis_bufvec bv = {1, &bp, &l};
	int rc = clovis_obj_op(o, opc, &ev, opc == CLOVIS_OC_FREE ? NULL : &bv,
			       0, &op);

	return rc != 0 ? rc : clovis_op_sync(op);
}

static int cent(struct clovis_obj *o, int opc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(&o->ob_entity, opc, &op);

	return rc != 0 ? rc : clovis_op_sync(op);
}

/* Byte i of block b of generation g. */
static uint8_t cpat(uint64_t b, size_t i, uint32_t g)
{
	return (uint8_t)(b * 131 + i * 7 + g * 29);
}

static void cfill(uint8_t *w, uint64_t b0, uint64_t n, uint32_t g)
{
	for (uint64_t b = 0; b < n; b++)
		for (size_t i = 0; i < 4096; i++)
			w[(b << 12) + i] = cpat(b0 + b, i, g);
}

static uint32_t pool_by_name(struct clovis *cl, const char *name)
{
	struct clovis_pool_info pi[8];
	uint32_t n = 8;

	if (clovis_pool_list(cl, pi, &n) != 0)
		return UINT32_MAX;
	for (uint32_t i = 0; i < n && i < 8; i++)
		if (strcmp(pi[i].pi_name, name) == 0)
			return i;
	return UINT32_MAX;
}

/* Make object lo as composite with layers flash (top), pdclust, sas. */
static int cmake(struct clovis *cl, struct clovis_obj *o, uint64_t lo,
		 uint32_t *hot, uint32_t *pd, uint32_t *cold)
{
	struct clovis_id id = {0xc0, lo};
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_COMPOSITE};
	struct clovis_obj_attr lh = {.oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = CLOVIS_TIER_FLASH};
	struct clovis_obj_attr lc = {.oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = CLOVIS_TIER_SAS};
	struct clovis_obj_attr lp = {.oa_layout = CLOVIS_LAYOUT_PDCLUST,
				     .oa_pool = pool_by_name(cl, "flash"),
				     .oa_data_units = 4, .oa_parity_units = 2,
				     .oa_unit_shift = 14};
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id, &a);

	if (rc == 0)
		rc = cent(o, CLOVIS_EO_CREATE);
	if (rc == 0)
		rc = clovis_obj_layer_add(o, &lh, 30, hot);
	if (rc == 0)
		rc = clovis_obj_layer_add(o, &lp, 20, pd);
	if (rc == 0)
		rc = clovis_obj_layer_add(o, &lc, 10, cold);
	return rc;
}

static int comp_init(void)
{
	const char *d = ut_tmpdir("comp");

	if (d == NULL)
		return -1;
	snprintf(cdir, sizeof cdir, "%s/store", d);
	return 0;
}

static int comp_fini(void)
{
	return clovis_store_destroy(cdir) == 0 || errno == ENOENT ? 0 : 0;
}

/* Write through the top layer, move ranges down, read back exactly. */
static void test_comp_layers(void)
{
	struct clovis *cl = copen();
	struct clovis_obj o;
	uint8_t *w = malloc(CBLKS << 12), *r = malloc(CBLKS << 12);
	uint32_t hot, pd, cold, l;
	uint64_t moved;
	struct clovis_layer_info li[4];
	uint32_t n = 4;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(cmake(cl, &o, 1, &hot, &pd, &cold), 0);
	cfill(w, 0, CBLKS, 1);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 0, CBLKS, w), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_of(&o, 5, &l), 0);
	CU_ASSERT_EQUAL(l, hot);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 10, 30, cold, &moved), 0);
	CU_ASSERT_EQUAL(moved, 30);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 50, 40, pd, &moved), 0);
	CU_ASSERT_EQUAL(moved, 40);
	CU_ASSERT_EQUAL(clovis_obj_layer_of(&o, 20, &l), 0);
	CU_ASSERT_EQUAL(l, cold);
	CU_ASSERT_EQUAL(clovis_obj_layer_of(&o, 60, &l), 0);
	CU_ASSERT_EQUAL(l, pd);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_READ, 0, CBLKS, r), 0);
	CU_ASSERT(memcmp(w, r, CBLKS << 12) == 0);
	/* A write lands in the top layer again. */
	cfill(w + (15 << 12), 15, 2, 2);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 15, 2, w + (15 << 12)), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_of(&o, 16, &l), 0);
	CU_ASSERT_EQUAL(l, hot);
	CU_ASSERT_EQUAL(clovis_obj_layer_list(&o, li, &n), 0);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(li[0].li_layer, hot);
	CU_ASSERT_EQUAL(li[0].li_blocks + li[1].li_blocks + li[2].li_blocks,
			CBLKS);
	/* Holes: FREE unmaps, reads zeros, layer_of says -ENOENT. */
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_FREE, 90, 6, NULL), 0);
	memset(w + (90 << 12), 0, 6 << 12);
	CU_ASSERT_EQUAL(clovis_obj_layer_of(&o, 91, &l), -ENOENT);
	/* A layer that holds blocks cannot be dropped. */
	CU_ASSERT_EQUAL(clovis_obj_layer_drop(&o, cold), -ENOTEMPTY);
	CU_ASSERT(strstr(clovis_errmsg(), "layer") != NULL);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 0, CBLKS, hot, &moved), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_drop(&o, cold), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_drop(&o, cold), -ENOENT);
	clovis_fini(cl);
	cl = copen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(clovis_obj_init(&o, clovis_default_realm(cl),
					&(struct clovis_id){0xc0, 1}, NULL), 0);
	CU_ASSERT_EQUAL(cent(&o, CLOVIS_EO_OPEN), 0);
	CU_ASSERT_EQUAL(o.ob_attr.oa_layout, CLOVIS_LAYOUT_COMPOSITE);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_READ, 0, CBLKS, r), 0);
	CU_ASSERT(memcmp(w, r, CBLKS << 12) == 0);
	CU_ASSERT_EQUAL(cent(&o, CLOVIS_EO_DELETE), 0);
	clovis_fini(cl);
	free(w);
	free(r);
}

/* clovis_obj_layer_map(): the runs per layer in block order (touching
 * runs of a layer merged, holes left out), a sub-range clipped, a small
 * out[] continued from *next; bad input refused. */
static void test_comp_map(void)
{
	struct clovis *cl = copen();
	struct clovis_obj o, p;
	uint8_t *w = malloc(CBLKS << 12);
	uint32_t hot, pd, cold, n;
	uint64_t moved, next = 0;
	struct clovis_layer_ext x[8];
	struct clovis_obj_attr pa = {.oa_block_shift = 12,
				     .oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = CLOVIS_TIER_FLASH};

	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_EQUAL_FATAL(cmake(cl, &o, 7, &hot, &pd, &cold), 0);
	cfill(w, 0, CBLKS, 7);
	/* in three writes: records that touch, merged in the map */
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 0, 32, w), 0);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 32, 32, w + (32 << 12)), 0);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 64, 32, w + (64 << 12)), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 10, 30, cold, &moved), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 50, 40, pd, &moved), 0);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_FREE, 92, 4, NULL), 0);
	n = 8;
	CU_ASSERT_EQUAL_FATAL(clovis_obj_layer_map(&o, 0, CBLKS, x, &n, &next),
			      0);
	CU_ASSERT_EQUAL_FATAL(n, 5);
	CU_ASSERT_EQUAL(next, CBLKS);
	CU_ASSERT(x[0].le_start == 0 && x[0].le_blocks == 10 &&
		  x[0].le_layer == hot);
	CU_ASSERT(x[1].le_start == 10 && x[1].le_blocks == 30 &&
		  x[1].le_layer == cold);
	CU_ASSERT(x[2].le_start == 40 && x[2].le_blocks == 10 &&
		  x[2].le_layer == hot);
	CU_ASSERT(x[3].le_start == 50 && x[3].le_blocks == 40 &&
		  x[3].le_layer == pd);
	CU_ASSERT(x[4].le_start == 90 && x[4].le_blocks == 2 &&
		  x[4].le_layer == hot);
	/* a sub-range: clipped at both ends */
	n = 8;
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&o, 15, 40, x, &n, &next), 0);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	CU_ASSERT_EQUAL(next, 55);
	CU_ASSERT(x[0].le_start == 15 && x[0].le_blocks == 25 &&
		  x[0].le_layer == cold);
	CU_ASSERT(x[2].le_start == 50 && x[2].le_blocks == 5 &&
		  x[2].le_layer == pd);
	/* two at a time: next says where the third starts */
	n = 2;
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&o, 0, CBLKS, x, &n, &next), 0);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(next, 40);
	n = 2;
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&o, next, CBLKS - next, x, &n,
					     &next), 0);
	CU_ASSERT(n == 2 && x[0].le_start == 40 && x[1].le_start == 50);
	CU_ASSERT_EQUAL(next, 90);
	n = 2;
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&o, next, CBLKS - next, x, &n,
					     &next), 0);
	CU_ASSERT(n == 1 && x[0].le_start == 90 && next == CBLKS);
	/* more records than the engine reads at once (4096): 4200 runs of
	 * one block with a hole after each, in two writes; the map is
	 * whole, and cut where out[] is full */
	{
		struct clovis_obj q;
		uint32_t qh, qp, qc, N = 4200;
		uint64_t *st = malloc(2100 * sizeof *st), *nb;
		struct clovis_layer_ext *y = malloc(5000 * sizeof *y);
		uint8_t *qb = calloc(2100, 4096);
		bool ok = true;

		nb = malloc(2100 * sizeof *nb);
		CU_ASSERT_FATAL(st && nb && y && qb);
		CU_ASSERT_EQUAL_FATAL(cmake(cl, &q, 9, &qh, &qp, &qc), 0);
		for (uint32_t h = 0; h < 2; h++) {
			void *bp = qb;
			size_t bl = 2100 * 4096;
			struct clovis_extvec ev = {2100, st, nb};
			struct clovis_bufvec bv = {1, &bp, &bl};
			struct clovis_op *op;

			for (uint32_t i = 0; i < 2100; i++) {
				st[i] = 2ull * (h * 2100 + i);
				nb[i] = 1;
			}
			CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&q, CLOVIS_OC_WRITE,
							    &ev, &bv, 0, &op), 0);
			CU_ASSERT_EQUAL_FATAL(clovis_op_sync(op), 0);
		}
		n = 5000;
		CU_ASSERT_EQUAL(clovis_obj_layer_map(&q, 0, 2 * N, y, &n,
						     &next), 0);
		CU_ASSERT_EQUAL(n, N);
		CU_ASSERT_EQUAL(next, 2 * N);
		for (uint32_t i = 0; i < n && i < N; i++)
			ok = ok && y[i].le_start == 2ull * i &&
			     y[i].le_blocks == 1 && y[i].le_layer == qh;
		CU_ASSERT(ok);
		n = 4100;
		CU_ASSERT_EQUAL(clovis_obj_layer_map(&q, 0, 2 * N, y, &n,
						     &next), 0);
		CU_ASSERT(n == 4100 && next == 8200);
		n = 4100;
		CU_ASSERT_EQUAL(clovis_obj_layer_map(&q, next, 2 * N - next, y,
						     &n, &next), 0);
		CU_ASSERT(n == 100 && y[0].le_start == 8200 &&
			  next == 2 * N);
		CU_ASSERT_EQUAL(cent(&q, CLOVIS_EO_DELETE), 0);
		free(st);
		free(nb);
		free(y);
		free(qb);
	}
	/* only holes: nothing, covered */
	n = 8;
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&o, 92, 1000, x, &n, &next), 0);
	CU_ASSERT(n == 0 && next == 1092);
	/* bad input, refused naming what */
	n = 0;
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&o, 0, 8, x, &n, &next), -EINVAL);
	n = 8;
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&o, 0, 0, x, &n, &next), -EINVAL);
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&o, CLOVIS_BLOCK_NR_MAX - 1, 2, x,
					     &n, &next), -EINVAL);
	CU_ASSERT(strstr(clovis_errmsg(), "CLOVIS_BLOCK_NR_MAX") != NULL);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&p, clovis_default_realm(cl),
					      &(struct clovis_id){0xc0, 0x77},
					      &pa), 0);
	CU_ASSERT_EQUAL_FATAL(cent(&p, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&p, 0, 8, x, &n, &next), -EINVAL);
	CU_ASSERT(strstr(clovis_errmsg(), "not composite") != NULL);
	CU_ASSERT_EQUAL(cent(&p, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(cent(&o, CLOVIS_EO_DELETE), 0);
	n = 8;
	/* the handle of a deleted object is closed */
	CU_ASSERT_EQUAL(clovis_obj_layer_map(&o, 0, 8, x, &n, &next), -EINVAL);
	CU_ASSERT(strstr(clovis_errmsg(), "not open") != NULL);
	clovis_fini(cl);
	free(w);
}

/* clovis_obj_scrub() of a composite: the units of its pdclust layer (4+2
 * of 16 KiB units: 6 units a group of 16 blocks) checked, its plain
 * layers carry none; a composite of plain layers only: nothing. */
static void test_comp_obj_scrub(void)
{
	struct clovis *cl = copen();
	struct clovis_obj o;
	uint8_t *w = malloc(CBLKS << 12), *r = malloc(CBLKS << 12);
	uint32_t hot, pd, cold;
	uint64_t moved;
	struct clovis_walk_stats ws;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(cmake(cl, &o, 8, &hot, &pd, &cold), 0);
	cfill(w, 0, CBLKS, 8);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 0, CBLKS, w), 0);
	CU_ASSERT_EQUAL(clovis_obj_scrub(&o, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_units, 0); /* all on the plain top layer */
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 0, 32, pd, &moved), 0);
	CU_ASSERT_EQUAL(moved, 32);
	CU_ASSERT_EQUAL(clovis_obj_scrub(&o, &ws), 0);
	CU_ASSERT_EQUAL(ws.ws_units, 32 / 16 * 6);
	CU_ASSERT_EQUAL(ws.ws_corrupt, 0);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_READ, 0, CBLKS, r), 0);
	CU_ASSERT(memcmp(w, r, CBLKS << 12) == 0);
	CU_ASSERT_EQUAL(clovis_obj_scrub(NULL, &ws), -EINVAL);
	CU_ASSERT_EQUAL(cent(&o, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(clovis_obj_scrub(&o, &ws), -EINVAL);
	clovis_fini(cl);
	free(w);
	free(r);
}

/* Free bytes of the devices of pool name. */
static uint64_t pool_free(struct clovis *cl, const char *name)
{
	struct clovis_pool_info pi[8];
	struct clovis_dev_info di[32];
	uint32_t np = 8, nd = 32, p = pool_by_name(cl, name);
	uint64_t f = 0;

	if (p == UINT32_MAX || clovis_pool_list(cl, pi, &np) != 0 ||
	    clovis_dev_list(cl, di, &nd) != 0)
		return 0;
	for (uint32_t i = 0; i < pi[p].pi_nr_devs; i++)
		if (pi[p].pi_devs[i] < nd && pi[p].pi_devs[i] < 32)
			f += di[pi[p].pi_devs[i]].di_free_bytes;
	return f;
}

/* Reopen the store (deferred frees done) and the object lo. */
static struct clovis *creopen(struct clovis *cl, struct clovis_obj *o,
			      uint64_t lo)
{
	clovis_fini(cl);
	cl = copen();
	if (cl == NULL ||
	    clovis_obj_init(o, clovis_default_realm(cl),
			    &(struct clovis_id){0xc0, lo}, NULL) != 0 ||
	    cent(o, CLOVIS_EO_OPEN) != 0)
		fprintf(stderr, "comp: reopen: %s\n", clovis_errmsg());
	return cl;
}

/*
 * Moving blocks out of a pdclust layer frees the units of every parity
 * group entirely moved (4+2 of 16 KiB units: a group is 16 blocks and 96
 * KiB on the pool); a group moved in part keeps its units (its parity
 * covers the rest) until its last block leaves.  Once they stayed until
 * the layer was dropped.  The data reads back exactly throughout.
 */
static void test_comp_move_frees(void)
{
	const uint64_t group = 6ull << 14;
	struct clovis *cl = copen();
	struct clovis_obj o;
	uint8_t *w = malloc(CBLKS << 12), *r = malloc(CBLKS << 12);
	uint32_t hot, pd, cold, l;
	uint64_t moved, f0, f1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(cmake(cl, &o, 4, &hot, &pd, &cold), 0);
	cfill(w, 0, CBLKS, 4);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 0, CBLKS, w), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 0, CBLKS, pd, &moved), 0);
	CU_ASSERT_EQUAL(moved, CBLKS);
	cl = creopen(cl, &o, 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	f0 = pool_free(cl, "flash");
	/* Groups 0 and 1 wholly, group 2 in part (blocks 32..39). */
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 0, 40, cold, &moved), 0);
	CU_ASSERT_EQUAL(moved, 40);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_READ, 0, CBLKS, r), 0);
	CU_ASSERT(memcmp(w, r, CBLKS << 12) == 0);
	cl = creopen(cl, &o, 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	f1 = pool_free(cl, "flash");
	CU_ASSERT_EQUAL(f1, f0 + 2 * group);
	/* The rest of group 2 leaves: its units go too. */
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 40, 8, cold, &moved), 0);
	CU_ASSERT_EQUAL(moved, 8);
	/* A write to the top layer supersedes group 3 wholly. */
	cfill(w + (48 << 12), 48, 16, 5);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 48, 16, w + (48 << 12)), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_of(&o, 50, &l), 0);
	CU_ASSERT_EQUAL(l, hot);
	cl = creopen(cl, &o, 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	/* Groups 2 and 3 came back; the hot layer (flash too) took 64 KiB. */
	CU_ASSERT_EQUAL(pool_free(cl, "flash"), f1 + 2 * group - (16ull << 12));
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_READ, 0, CBLKS, r), 0);
	CU_ASSERT(memcmp(w, r, CBLKS << 12) == 0);
	CU_ASSERT_EQUAL(cent(&o, CLOVIS_EO_DELETE), 0);
	clovis_fini(cl);
	free(w);
	free(r);
}

/* Bad input: no layer, equal priorities, bad sub-layouts, not composite. */
static void test_comp_bad(void)
{
	struct clovis *cl = copen();
	struct clovis_obj o, p;
	struct clovis_id id = {0xc0, 2}, pid = {0xc0, 3};
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_COMPOSITE};
	struct clovis_obj_attr lh = {.oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = CLOVIS_TIER_FLASH};
	struct clovis_obj_attr bad = {.oa_layout = CLOVIS_LAYOUT_COMPOSITE};
	uint8_t b[4096] = {0};
	uint32_t l;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(clovis_obj_init(&o, clovis_default_realm(cl), &id, &a), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_add(&o, &lh, 1, &l), -EINVAL);
	CU_ASSERT_EQUAL(cent(&o, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 0, 1, b), -EINVAL);
	CU_ASSERT_EQUAL(clovis_obj_layer_add(&o, &bad, 1, &l), -EINVAL);
	CU_ASSERT_EQUAL(clovis_obj_layer_add(&o, &lh, 1, &l), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_add(&o, &lh, 1, &l), -EEXIST);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 0, 1, 99, NULL), -ENOENT);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 0, 0, l, NULL), -EINVAL);
	CU_ASSERT_EQUAL(clovis_obj_init(&p, clovis_default_realm(cl), &pid, NULL), 0);
	CU_ASSERT_EQUAL(cent(&p, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_add(&p, &lh, 1, &l), -EINVAL);
	CU_ASSERT(strstr(clovis_errmsg(), "not composite") != NULL);
	clovis_fini(cl);
}

/* Child: move ranges between layers back and forth until killed. */
static void mover(void)
{
	struct clovis *cl = copen();
	struct clovis_obj o;
	uint32_t layers[3] = {1, 2, 3};

	if (cl == NULL || clovis_obj_init(&o, clovis_default_realm(cl),
					  &(struct clovis_id){0xc0, 4}, NULL) ||
	    cent(&o, CLOVIS_EO_OPEN) != 0)
		_exit(2);
	for (uint32_t i = 0;; i++)
		clovis_obj_layer_move(&o, (i * 7) % CBLKS, 16, layers[i % 3],
				      NULL);
}

/* SIGKILL during moves: every block reads back exactly from some layer. */
static void test_comp_crash(void)
{
	struct clovis *cl = copen();
	struct clovis_obj o;
	uint8_t *w = malloc(CBLKS << 12), *r = malloc(CBLKS << 12);
	uint32_t hot, pd, cold;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(cmake(cl, &o, 4, &hot, &pd, &cold), 0);
	cfill(w, 0, CBLKS, 3);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_WRITE, 0, CBLKS, w), 0);
	clovis_fini(cl);
	srand(42);
	for (int round = 0; round < 4; round++) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			mover();
		CU_ASSERT_FATAL(pid > 0);
		usleep(150000 + (useconds_t)(rand() % 400000));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		CU_ASSERT(WIFSIGNALED(st));
		cl = copen();
		CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
		CU_ASSERT_EQUAL(clovis_obj_init(&o, clovis_default_realm(cl),
						&(struct clovis_id){0xc0, 4},
						NULL), 0);
		CU_ASSERT_EQUAL(cent(&o, CLOVIS_EO_OPEN), 0);
		memset(r, 0, CBLKS << 12);
		CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_READ, 0, CBLKS, r), 0);
		CU_ASSERT(memcmp(w, r, CBLKS << 12) == 0);
		clovis_fini(cl);
	}
	free(w);
	free(r);
}

/* ------------------------------------- moves racing writes (exact) */

struct cracer {
	struct clovis_obj *cr_o;
	uint8_t *cr_model;
	volatile int cr_stop;
	uint32_t cr_writes;
	int cr_rc;
};

static void *cracer_run(void *arg)
{
	struct cracer *r = arg;
	uint8_t *buf = malloc(8 << 12);
	unsigned seed = 11;

	r->cr_rc = buf != NULL ? 0 : -ENOMEM;
	while (r->cr_rc == 0 && !r->cr_stop && r->cr_writes < 200000) {
		uint64_t s = (uint64_t)rand_r(&seed) % (CBLKS - 8);
		uint64_t n = 1 + (uint64_t)rand_r(&seed) % 8;
		int c = 1 + rand_r(&seed) % 250;

		memset(buf, c, n << 12);
		r->cr_rc = cio(r->cr_o, CLOVIS_OC_WRITE, s, n, buf);
		if (r->cr_rc == 0)
			memset(r->cr_model + (s << 12), c, n << 12);
		r->cr_writes++;
	}
	free(buf);
	return NULL;
}

/* Moves down and up through a plain, a pdclust and a plain layer while
 * another thread writes: every block reads back as last written (a write
 * to the source layer, or to the target, between a move's read and its
 * commit keeps the newer data). */
static void test_comp_move_race(void)
{
	struct clovis *cl;
	struct clovis_obj o;
	struct cracer r = {0};
	uint8_t *got = malloc(CBLKS << 12);
	uint32_t hot, pd, cold, rounds = 0;
	uint64_t moved, less = 0;
	pthread_t t;
	struct timespec t0, t1;

	clovis_store_destroy(cdir);
	cl = copen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	r.cr_model = malloc(CBLKS << 12);
	CU_ASSERT_FATAL(got != NULL && r.cr_model != NULL);
	CU_ASSERT_EQUAL_FATAL(cmake(cl, &o, 9, &hot, &pd, &cold), 0);
	cfill(r.cr_model, 0, CBLKS, 1);
	CU_ASSERT_EQUAL_FATAL(cio(&o, CLOVIS_OC_WRITE, 0, CBLKS,
				  r.cr_model), 0);
	r.cr_o = &o;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, cracer_run, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (t1 = t0; rounds < 60 && t1.tv_sec - t0.tv_sec < 30; rounds++) {
		uint32_t to = rounds % 3 == 0 ? cold :
			      rounds % 3 == 1 ? pd : hot;

		moved = 0;
		CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 0, CBLKS, to,
						      &moved), 0);
		less += moved < CBLKS;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	}
	r.cr_stop = 1;
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(r.cr_rc, 0);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_READ, 0, CBLKS, got), 0);
	CU_ASSERT(memcmp(got, r.cr_model, CBLKS << 12) == 0);
	fprintf(stderr, "\n    composite moves racing writes: %u moves, %u "
		"writes meanwhile, data exact: %s\n", rounds, r.cr_writes,
		memcmp(got, r.cr_model, CBLKS << 12) == 0 ? "yes" : "NO");
	CU_ASSERT(r.cr_writes > 0 && rounds > 0);
	/* quiet now: everything moves to the cold layer and holds */
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&o, 0, CBLKS, cold, &moved), 0);
	CU_ASSERT_EQUAL(cio(&o, CLOVIS_OC_READ, 0, CBLKS, got), 0);
	CU_ASSERT(memcmp(got, r.cr_model, CBLKS << 12) == 0);
	for (uint64_t b = 0; b < CBLKS; b++) {
		uint32_t l = 0;

		CU_ASSERT_EQUAL(clovis_obj_layer_of(&o, b, &l), 0);
		CU_ASSERT_EQUAL(l, cold);
	}
	(void)less;
	clovis_fini(cl);
	free(got);
	free(r.cr_model);
}

int comp_ut_add(void)
{
	CU_pSuite s = CU_add_suite("composite", comp_init, comp_fini);

	if (s == NULL || !CU_add_test(s, "layers", test_comp_layers) ||
	    !CU_add_test(s, "bad_input", test_comp_bad) ||
	    !CU_add_test(s, "map", test_comp_map) ||
	    !CU_add_test(s, "obj_scrub", test_comp_obj_scrub) ||
	    !CU_add_test(s, "move_frees_units", test_comp_move_frees) ||
	    !CU_add_test(s, "crash_during_move", test_comp_crash) ||
	    !CU_add_test(s, "moves_race_writes", test_comp_move_race))
		return -1;
	return 0;
}
