/*
 * clovis_ut.c — functional tests of the Clovis API over an embedded store:
 * objects of every block size and tier, overwrite/punch against a model,
 * persistence across reopen, space accounting, indices, containers, async
 * ops with callbacks, statistics, and fault points in the data path.
 * (Bad input has its own suite, clovis_bad_ut.c.)
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "clovis/clovis_internal.h" /* op_here_runs */
#include "core/fault.h"
#include "tests/ut.h"

#define DEV_SIZE (96ull << 20)

/*
 * The suite's store: the built-in default set of devices (conf_default(),
 * docs/configuration.md "The built-in default") at DEV_SIZE, but smr0 at
 * 256 MiB: block_sizes_tiers writes a 64 MiB block on every tier, and the
 * SMR tier finds no zone for it on a smaller device (-ENOSPC at 192 MiB).
 * Devices are written out with zeros when made (tiers/file/file.c), so
 * 96 MiB devices make the store in 1.5 GiB of writes instead of the
 * 3.5 GiB of 256 MiB ones.
 */
static const char suite_conf_text[] =
	"device_size: 96MiB\n"
	"devices:\n"
	"  - { tier: nvram }\n"
	"  - { tier: flash }\n  - { tier: flash }\n  - { tier: flash }\n"
	"  - { tier: flash }\n  - { tier: flash }\n  - { tier: flash }\n"
	"  - { tier: flash }\n  - { tier: flash }\n"
	"  - { tier: sas }\n  - { tier: sas }\n  - { tier: sas }\n"
	"  - { tier: sas }\n"
	"  - { tier: smr, size: 256MiB }\n";

static struct clovis *cl;
static char dir[512];
static char suite_conf[600];  /* suite_conf_text's file */

/* Open (create) the store in d: with configuration file conf, or the
 * built-in default devices of dev_size when conf is NULL. */
static struct clovis *open_store_conf(const char *d, uint64_t dev_size,
				      const char *conf)
{
	struct clovis_conf c = {.cc_data_dir = d, .cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = dev_size, .cc_config = conf};
	struct clovis *out = NULL;
	int rc = clovis_init(&out, &c);

	if (rc != 0)
		fprintf(stderr, "clovis_init %s: %d %s\n", d, rc, clovis_errmsg());
	return out;
}

static struct clovis *open_store(const char *d, uint64_t dev_size)
{
	return open_store_conf(d, dev_size, NULL);
}

static void reopen(void)
{
	clovis_fini(cl);
	cl = open_store_conf(dir, DEV_SIZE, suite_conf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
}

static int suite_init(void)
{
	const char *d = ut_tmpdir("clovis");
	FILE *f;

	if (d == NULL)
		return -1;
	snprintf(dir, sizeof dir, "%s/store", d);
	snprintf(suite_conf, sizeof suite_conf, "%s/clovis.yaml", d);
	f = fopen(suite_conf, "w");
	if (f == NULL)
		return -1;
	fputs(suite_conf_text, f);
	if (fclose(f) != 0)
		return -1;
	cl = open_store_conf(dir, DEV_SIZE, suite_conf);
	return cl == NULL ? -1 : 0;
}

static int suite_fini(void)
{
	clovis_fini(cl);
	if (ut_cluster_mode())
		return 0; /* no local store to destroy: the servers own them */
	return clovis_store_destroy(dir);
}

static struct clovis_id mkid(uint64_t lo)
{
	return (struct clovis_id){0x5eed, lo};
}

/* Create an object with block shift bs on tier t; returns 0 or rc. */
static int obj_create(struct clovis_obj *o, uint64_t lo, uint32_t bs,
		      uint32_t tier)
{
	struct clovis_obj_attr a = {.oa_block_shift = bs, .oa_tier = tier};
	struct clovis_id id = mkid(lo);
	struct clovis_op *op;
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id, &a);

	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_CREATE, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

static int obj_open(struct clovis_obj *o, uint64_t lo)
{
	struct clovis_id id = mkid(lo);
	struct clovis_op *op;
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id, NULL);

	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_OPEN, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

static int ent_sync(struct clovis_entity *e, enum clovis_entity_opcode oc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, oc, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* One-extent I/O of nr blocks at blk through one buffer. */
static int obj_io(struct clovis_obj *o, enum clovis_obj_opcode oc,
		  uint64_t blk, uint64_t nr, void *buf)
{
	uint64_t s = blk, n = nr;
	size_t len = (size_t)(nr << o->ob_attr.oa_block_shift);
	struct clovis_extvec ev = {1, &s, &n};
	struct clovis_bufvec bv = {1, &buf, &len};
	struct clovis_op *op;
	int rc = clovis_obj_op(o, oc, &ev, buf ? &bv : NULL, 0, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* Fill a block with a pattern of (seed, block). */
static void pattern(uint8_t *p, size_t len, uint32_t seed, uint64_t blk)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + blk * 7 + i + (i >> 8));
}

static uint64_t dev_free(uint32_t tier)
{
	struct clovis_dev_info di[8];
	uint32_t n = 8;
	uint64_t f = 0;

	if (clovis_dev_list(cl, di, &n) != 0)
		return 0;
	for (uint32_t i = 0; i < n && i < 8; i++)
		if (di[i].di_tier == tier)
			f += di[i].di_free_bytes;
	return f;
}

/* Round trip on every tier and block size 512 B .. 64 MiB. */
static void test_block_sizes_tiers(void)
{
	static const uint32_t shifts[] = {9, 12, 16, 20, 26};
	uint64_t lo = 100;

	for (uint32_t t = 0; t < CLOVIS_TIER_NR; t++)
		for (size_t k = 0; k < sizeof shifts / sizeof shifts[0]; k++) {
			struct clovis_obj o;
			uint32_t bs = shifts[k];
			uint64_t nr = bs >= 20 ? 1 : 8;
			size_t len = (size_t)(nr << bs);
			uint8_t *w = malloc(len), *r = malloc(len);

			if (bs == 26 && t == CLOVIS_TIER_NVRAM)
				nr = 1;
			CU_ASSERT_EQUAL_FATAL(obj_create(&o, lo++, bs, t), 0);
			for (uint64_t b = 0; b < nr; b++)
				pattern(w + (b << bs), 1u << bs, bs + t, b);
			CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 3, nr, w), 0);
			CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 3, nr, r), 0);
			CU_ASSERT(memcmp(w, r, len) == 0);
			CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_GETATTR), 0);
			CU_ASSERT_EQUAL(o.ob_attr.oa_size_blocks, 3 + nr);
			CU_ASSERT_EQUAL(o.ob_attr.oa_tier, t);
			CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
			free(w);
			free(r);
		}
}

/* Random writes, frees and allocs of a 512 B-block object against an
 * in-memory model, checked live and after a reopen. */
static void test_overwrite_model(void)
{
	enum { NB = 256, BS = 512 };
	uint8_t *model = calloc(NB, BS), *buf = malloc(NB * BS);
	struct clovis_obj o;
	unsigned seed = 7;

	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 300, 9, CLOVIS_TIER_FLASH), 0);
	for (int step = 0; step < 300; step++) {
		uint64_t s = (uint64_t)rand_r(&seed) % NB;
		uint64_t n = 1 + (uint64_t)rand_r(&seed) % (NB - s < 40 ? NB - s : 40);
		int what = rand_r(&seed) % 10;

		if (what < 7) {
			for (uint64_t b = 0; b < n; b++)
				pattern(buf + b * BS, BS, (uint32_t)step, s + b);
			CU_ASSERT_EQUAL_FATAL(obj_io(&o, CLOVIS_OC_WRITE, s, n, buf), 0);
			memcpy(model + s * BS, buf, n * BS);
		} else {
			CU_ASSERT_EQUAL_FATAL(obj_io(&o, what == 9 ? CLOVIS_OC_ALLOC :
						     CLOVIS_OC_FREE, s, n, NULL), 0);
			memset(model + s * BS, 0, n * BS);
		}
	}
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, NB, buf), 0);
	CU_ASSERT(memcmp(buf, model, NB * BS) == 0);
	reopen();
	CU_ASSERT_EQUAL_FATAL(obj_open(&o, 300), 0);
	memset(buf, 0xaa, NB * BS);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, NB, buf), 0);
	CU_ASSERT(memcmp(buf, model, NB * BS) == 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
	free(model);
	free(buf);
}

/* Multi-extent, multi-buffer ops cross extent and buffer edges freely. */
static void test_vectors(void)
{
	uint64_t starts[3] = {10, 2, 40}, nrs[3] = {3, 4, 1};
	uint8_t a[4096 * 5], b[4096 * 3], r1[4096 * 8];
	void *bufs[2] = {a, b}, *rb[1] = {r1};
	size_t lens[2] = {sizeof a, sizeof b}, rl[1] = {sizeof r1};
	struct clovis_extvec ev = {3, starts, nrs};
	struct clovis_bufvec bv = {2, bufs, lens}, rv = {1, rb, rl};
	struct clovis_obj o;
	struct clovis_op *op;

	pattern(a, sizeof a, 1, 0);
	pattern(b, sizeof b, 2, 0);
	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 301, 12, CLOVIS_TIER_SAS), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_WRITE, &ev, &bv, 0,
					    &op), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(op), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_READ, &ev, &rv, 0,
					    &op), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(op), 0);
	CU_ASSERT(memcmp(r1, a, sizeof a) == 0);
	CU_ASSERT(memcmp(r1 + sizeof a, b, sizeof b) == 0);
	/* Block 10 got the first buffer's first block. */
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 10, 1, r1), 0);
	CU_ASSERT(memcmp(r1, a, 4096) == 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_GETATTR), 0);
	CU_ASSERT_EQUAL(o.ob_attr.oa_size_blocks, 41);
	CU_ASSERT_EQUAL(o.ob_attr.oa_size_bytes, 41 * 4096);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
}

/* Blocks of buffer i of nr in test_many_bufs: 1 to 4, and one buffer of
 * 16 in the middle of a vector of more than 16 (mixed sizes, so that a
 * client that coalesces buffers meets large and small ones in any order). */
static size_t mb_blocks(uint32_t i, uint32_t nr)
{
	if (nr > 16 && i == nr / 2)
		return 16;
	return 1 + (i * 7u + nr) % 4u;
}

/* Split tot blocks into nr buffers (mixed sizes, each at least one block)
 * over the one area base: lens and ptrs filled. */
static void mb_split(uint8_t *base, uint64_t tot, uint32_t nr, size_t bsz,
		     void **ptrs, size_t *lens)
{
	uint64_t left = tot;

	for (uint32_t i = 0; i < nr; i++) {
		uint64_t want = mb_blocks(i, nr), rest = nr - i - 1;

		if (want > left - rest)
			want = left - rest;
		if (i == nr - 1)
			want = left;
		ptrs[i] = base + (tot - left) * bsz;
		lens[i] = (size_t)(want * bsz);
		left -= want;
	}
}

/* One op of opcode oc on o over ev with data bv (NULL: ALLOC/FREE), run
 * to its end; returns its rc (the message printed when it failed). */
static int mb_io(struct clovis_obj *o, enum clovis_obj_opcode oc,
		 struct clovis_extvec *ev, struct clovis_bufvec *bv)
{
	struct clovis_op *op;
	int rc = clovis_obj_op(o, oc, ev, bv, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		fprintf(stderr, "many_bufs: opcode %d with %u buffers, %u "
			"extents: %d %s\n", oc, bv ? bv->bv_nr : 0, ev->ev_nr,
			rc, clovis_errmsg());
	return rc;
}

/*
 * Up to CLOVIS_VEC_MAX buffers per op, in both modes (issue 26 point 6:
 * a cluster WRITE of 64 buffers failed with -EINVAL, the RPC layer's
 * bulk taking 16 iovecs).  WRITEs of 1, 16, 17, 64 and 4,096 buffers of
 * mixed sizes over several extents, read back byte-exact into the same
 * split, into one buffer and into 67 buffers; then FREE and ALLOC over the
 * same extents (up to 1,024) read back as zeros.  Run against a cluster by
 * cluster_test.sh ("clovis suites").
 */
static void test_many_bufs(void)
{
	static const uint32_t nrs[] = {1, 16, 17, 64, CLOVIS_VEC_MAX};
	const size_t bsz = 512;

	for (size_t t = 0; t < sizeof nrs / sizeof nrs[0]; t++) {
		uint32_t nr = nrs[t], ne = nr < 4 ? 1 : (nr + 3) / 4, rn;
		uint64_t tot = 0, next = 5;
		uint64_t *st = calloc(ne, sizeof *st), *cnt = calloc(ne, sizeof *cnt);
		void **wp = calloc(nr, sizeof *wp), **rp = calloc(nr, sizeof *rp);
		size_t *wl = calloc(nr, sizeof *wl), *rl = calloc(nr, sizeof *rl);
		uint8_t *w, *r;
		struct clovis_extvec ev = {ne, st, cnt};
		struct clovis_bufvec wv = {nr, wp, wl}, rv;
		struct clovis_obj o;

		CU_ASSERT_PTR_NOT_NULL_FATAL(st && cnt && wp && rp && wl && rl);
		for (uint32_t i = 0; i < nr; i++)
			tot += mb_blocks(i, nr);
		w = malloc(tot * bsz);
		r = malloc(tot * bsz);
		CU_ASSERT_PTR_NOT_NULL_FATAL(w && r);
		pattern(w, tot * bsz, 40 + (uint32_t)t, 0);
		/* ne extents with a gap of two blocks between them */
		for (uint32_t j = 0; j < ne; j++) {
			cnt[j] = tot / ne + (j < tot % ne ? 1 : 0);
			st[j] = next;
			next += cnt[j] + 2;
		}
		mb_split(w, tot, nr, bsz, wp, wl);
		CU_ASSERT_EQUAL_FATAL(obj_create(&o, 320 + t, 9,
						 CLOVIS_TIER_FLASH), 0);
		CU_ASSERT_EQUAL(mb_io(&o, CLOVIS_OC_WRITE, &ev, &wv), 0);
		/* read back: the same split, one buffer, 67 buffers */
		for (int k = 0; k < 3; k++) {
			rn = k == 0 ? nr : k == 1 ? 1 : 67;
			if (rn > tot)
				rn = (uint32_t)tot;
			memset(r, 0xa5, tot * bsz);
			if (k == 0) {
				mb_split(r, tot, nr, bsz, rp, rl);
			} else {
				free(rp);
				free(rl);
				rp = calloc(rn, sizeof *rp);
				rl = calloc(rn, sizeof *rl);
				CU_ASSERT_PTR_NOT_NULL_FATAL(rp && rl);
				mb_split(r, tot, rn, bsz, rp, rl);
			}
			rv = (struct clovis_bufvec){rn, rp, rl};
			CU_ASSERT_EQUAL(mb_io(&o, CLOVIS_OC_READ, &ev, &rv), 0);
			CU_ASSERT(memcmp(r, w, tot * bsz) == 0);
		}
		/* FREE, then ALLOC: the extents read as zeros */
		for (int k = 0; k < 2; k++) {
			CU_ASSERT_EQUAL(mb_io(&o, k == 0 ? CLOVIS_OC_FREE :
					      CLOVIS_OC_ALLOC, &ev, NULL), 0);
			memset(w, 0, tot * bsz);
			memset(r, 0xa5, tot * bsz);
			CU_ASSERT_EQUAL(mb_io(&o, CLOVIS_OC_READ, &ev, &rv), 0);
			CU_ASSERT(memcmp(r, w, tot * bsz) == 0);
		}
		CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
		free(w);
		free(r);
		free(st);
		free(cnt);
		free(wp);
		free(rp);
		free(wl);
		free(rl);
	}
}

/* Space is given back: overwrites and deletes leak nothing. */
static void test_space_accounting(void)
{
	uint8_t buf[65536];
	uint64_t before, mid;
	struct clovis_obj o;

	reopen(); /* let earlier tests' deferred frees finish */
	before = dev_free(CLOVIS_TIER_FLASH);
	pattern(buf, sizeof buf, 3, 0);
	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 302, 12, CLOVIS_TIER_FLASH), 0);
	for (int i = 0; i < 50; i++)
		CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 0, 16, buf), 0);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_ALLOC, 100, 16, NULL), 0);
	reopen(); /* deferred frees are done by now; maps are rebuilt */
	mid = dev_free(CLOVIS_TIER_FLASH);
	CU_ASSERT_EQUAL(before - mid, 2 * sizeof buf);
	CU_ASSERT_EQUAL_FATAL(obj_open(&o, 302), 0);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_FREE, 0, 8, NULL), 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
	reopen();
	CU_ASSERT_EQUAL(dev_free(CLOVIS_TIER_FLASH), before);
}

/* Read requests device dev has served (clovis_dev_info.di_reads). */
static uint64_t dev_reads(struct clovis *c, uint32_t dev)
{
	struct clovis_dev_info di[16];
	uint32_t n = 16;

	if (clovis_dev_list(c, di, &n) != 0 || dev >= n)
		return UINT64_MAX;
	return di[dev].di_reads;
}

/*
 * Blocks written by separate ops that lie one after another on the device
 * are read back in one device request; a hole, an overwrite (written
 * elsewhere) or a gap in the object's blocks starts a new request, and
 * every byte comes back right.  On a fresh store, so that four writes in
 * a row take consecutive space.
 */
static void test_read_runs(void)
{
	enum { BS = 65536 };
	uint8_t *w = malloc(6 * BS), *r = malloc(6 * BS);
	struct clovis *keep = cl;
	struct clovis_obj o;
	uint64_t before;
	char d2[600];
	uint32_t dev;

	if (ut_cluster_skip("read_runs", "needs a fresh local store"))
		return free(w), free(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	snprintf(d2, sizeof d2, "%s-runs", dir);
	cl = open_store(d2, 16ull << 20);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 304, 16, CLOVIS_TIER_FLASH), 0);
	for (uint64_t b = 0; b < 6; b++)
		pattern(w + b * BS, BS, 9, b);
	for (uint64_t b = 0; b < 4; b++)
		CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, b, 1, w + b * BS),
				0);
	dev = o.ob_attr.oa_dev;
	before = dev_reads(cl, dev);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, 4, r), 0);
	CU_ASSERT(memcmp(r, w, 4 * BS) == 0);
	CU_ASSERT_EQUAL(dev_reads(cl, dev) - before, 1);

	/* block 5 after a hole at 4: its space follows block 3's on the
	 * device, but not its place in the object: two requests, zeros
	 * between */
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 5, 1, w + 5 * BS), 0);
	memset(w + 4 * BS, 0, BS);
	before = dev_reads(cl, dev);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, 6, r), 0);
	CU_ASSERT(memcmp(r, w, 6 * BS) == 0);
	CU_ASSERT_EQUAL(dev_reads(cl, dev) - before, 2);

	/* block 1 rewritten (out of place): 0, 1 and 2-3 are three runs */
	pattern(w + BS, BS, 10, 1);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 1, 1, w + BS), 0);
	before = dev_reads(cl, dev);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, 4, r), 0);
	CU_ASSERT(memcmp(r, w, 4 * BS) == 0);
	CU_ASSERT_EQUAL(dev_reads(cl, dev) - before, 3);
	clovis_fini(cl);
	CU_ASSERT_EQUAL(clovis_store_destroy(d2), 0);
	cl = keep;
	free(w);
	free(r);
}

/* A device that fills up refuses the write and changes nothing. */
static void test_enospc(void)
{
	char d2[600];
	struct clovis *big = cl;
	struct clovis_obj o;
	size_t len = 3u << 20;
	uint8_t *buf = malloc(len), *r = malloc(len);

	if (ut_cluster_skip("enospc", "needs a local store on 4 MiB devices"))
		return free(buf), free(r);
	snprintf(d2, sizeof d2, "%s-small", dir);
	cl = open_store(d2, 4ull << 20);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 303, 12, CLOVIS_TIER_FLASH), 0);
	pattern(buf, len, 4, 0);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 0, len >> 12, buf), 0);
	/* Overwriting needs new space first: 3 + 3 MiB > 4 MiB. */
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 0, len >> 12, r), -ENOSPC);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, len >> 12, r), 0);
	CU_ASSERT(memcmp(buf, r, len) == 0);
	clovis_fini(cl);
	CU_ASSERT_EQUAL(clovis_store_destroy(d2), 0);
	cl = big;
	free(buf);
	free(r);
}

/* clovis_store_destroy() removes every file of the store: each device
 * (the NVRAM device is outside the directory, in /dev/shm by default) and
 * the directory itself. */
static void test_destroy_files(void)
{
	struct clovis_dev_info *di = calloc(64, sizeof *di);
	struct clovis *c2;
	uint32_t nr = 64, nv = 0;
	char d2[600];

	if (ut_cluster_skip("destroy_files", "needs a local store"))
		return free(di);
	CU_ASSERT_PTR_NOT_NULL_FATAL(di);
	snprintf(d2, sizeof d2, "%s-destroy", dir);
	c2 = open_store(d2, 4ull << 20);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c2);
	CU_ASSERT_EQUAL(clovis_dev_list(c2, di, &nr), 0);
	clovis_fini(c2);
	CU_ASSERT(nr > 0 && nr <= 64);
	for (uint32_t i = 0; i < nr && i < 64; i++) {
		CU_ASSERT_EQUAL(access(di[i].di_path, F_OK), 0);
		nv += di[i].di_tier == CLOVIS_TIER_NVRAM;
	}
	CU_ASSERT(nv >= 1);
	CU_ASSERT_EQUAL(clovis_store_destroy(d2), 0);
	for (uint32_t i = 0; i < nr && i < 64; i++) {
		CU_ASSERT(access(di[i].di_path, F_OK) != 0 && errno == ENOENT);
		if (access(di[i].di_path, F_OK) == 0)
			fprintf(stderr, "destroy left %s\n", di[i].di_path);
	}
	CU_ASSERT(access(d2, F_OK) != 0 && errno == ENOENT);
	free(di);
}

/* Byte size: follows blocks until SETATTR, then stays as set. */
static void test_size_attr(void)
{
	uint8_t buf[4096] = {1};
	struct clovis_obj o;

	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 304, 12, CLOVIS_TIER_FLASH), 0);
	CU_ASSERT_EQUAL(o.ob_attr.oa_size_bytes, 0);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 4, 1, buf), 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_GETATTR), 0);
	CU_ASSERT_EQUAL(o.ob_attr.oa_size_bytes, 5 * 4096);
	o.ob_attr.oa_size_bytes = 12345;
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_SETATTR), 0);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 9, 1, buf), 0);
	reopen();
	CU_ASSERT_EQUAL_FATAL(obj_open(&o, 304), 0);
	CU_ASSERT_EQUAL(o.ob_attr.oa_size_bytes, 12345);
	CU_ASSERT_EQUAL(o.ob_attr.oa_size_blocks, 10);
	CU_ASSERT(o.ob_attr.oa_mtime_ns >= o.ob_attr.oa_ctime_ns);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
}

/* ------------------------------------------------------------ indices */

static int idx_make(struct clovis_idx *ix, uint64_t lo, bool create)
{
	struct clovis_id id = mkid(lo);
	int rc = clovis_idx_init(ix, clovis_default_realm(cl), &id);

	return rc == 0 ? ent_sync(&ix->in_entity, create ? CLOVIS_EO_CREATE :
				  CLOVIS_EO_OPEN) : rc;
}

static int idx_sync(struct clovis_idx *ix, enum clovis_idx_opcode oc,
		    struct clovis_bufvec *k, struct clovis_bufvec *v,
		    int32_t *rcs, uint32_t flags)
{
	struct clovis_op *op;
	int rc = clovis_idx_op(ix, oc, k, v, rcs, flags, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0) /* the reason, for a failure met only in CI */
		fprintf(stderr, "idx_sync: op %d: %d (%s)\n", (int)oc, rc,
			clovis_errmsg());
	return rc;
}

/* PUT n records "key%05d" -> "val%d" in one op. */
static int idx_fill(struct clovis_idx *ix, int from, int n)
{
	char (*kb)[16] = malloc((size_t)n * 16), (*vb)[16] = malloc((size_t)n * 16);
	void **kp = malloc((size_t)n * sizeof *kp), **vp = malloc((size_t)n * sizeof *vp);
	size_t *kl = malloc((size_t)n * sizeof *kl), *vl = malloc((size_t)n * sizeof *vl);
	int32_t *rcs = calloc((size_t)n, sizeof *rcs);
	struct clovis_bufvec k = {(uint32_t)n, kp, kl}, v = {(uint32_t)n, vp, vl};
	int rc;

	for (int i = 0; i < n; i++) {
		kl[i] = (size_t)snprintf(kb[i], 16, "key%05d", from + i);
		vl[i] = (size_t)snprintf(vb[i], 16, "val%d", from + i);
		kp[i] = kb[i];
		vp[i] = vb[i];
	}
	rc = idx_sync(ix, CLOVIS_IC_PUT, &k, &v, rcs, 0);
	if (rc != 0)
		fprintf(stderr, "idx_fill: PUT of %d records: %d (%s)\n", n,
			rc, strerror(-rc));
	for (int i = 0; rc == 0 && i < n; i++)
		if ((rc = rcs[i]) != 0)
			fprintf(stderr, "idx_fill: record %d: %d (%s)\n",
				from + i, rc, strerror(-rc));
	free(kb); free(vb); free(kp); free(vp); free(kl); free(vl); free(rcs);
	return rc;
}

/* NEXT pages through 1000 records in order, persisted across reopen. */
static void test_idx_next_paging(void)
{
	struct clovis_idx ix;
	char last[16] = "";
	int seen = 0;

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix, 400, true), 0);
	CU_ASSERT_EQUAL(idx_fill(&ix, 500, 500), 0);
	CU_ASSERT_EQUAL(idx_fill(&ix, 0, 500), 0);
	reopen();
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix, 400, false), 0);
	CU_ASSERT_EQUAL(ix.in_attr.ia_nr_records, 1000);
	for (int page = 0; page < 20 && seen < 1000; page++) {
		void *kp[64] = {0}, *vp[64] = {0};
		size_t kl[64] = {0}, vl[64] = {0};
		int32_t rcs[64];
		struct clovis_bufvec k = {64, kp, kl}, v = {64, vp, vl};

		kp[0] = seen ? last : NULL;
		kl[0] = seen ? strlen(last) : 0;
		CU_ASSERT_EQUAL_FATAL(idx_sync(&ix, CLOVIS_IC_NEXT, &k, &v, rcs,
					       seen ? CLOVIS_IF_EXCLUDE_START_KEY : 0), 0);
		for (int i = 0; i < 64; i++) {
			char want[16];

			if (rcs[i] != 0) {
				CU_ASSERT_EQUAL(rcs[i], -ENOENT);
				continue;
			}
			snprintf(want, sizeof want, "key%05d", seen);
			CU_ASSERT(kl[i] == strlen(want) && memcmp(kp[i], want, kl[i]) == 0);
			memcpy(last, kp[i], kl[i]);
			last[kl[i]] = '\0';
			seen++;
			free(kp[i]);
			free(vp[i]);
		}
	}
	CU_ASSERT_EQUAL(seen, 1000);
}

/* NEXT of 8 slots into caller buffers (CLOVIS_IF_CALLER_BUFS) from start
 * (slen bytes); key rooms kroom (slot 0: CLOVIS_KEY_MAX), value rooms
 * vroom.  Keys and values land in kb and vb. */
struct nb_slots {
	char kb[8][CLOVIS_KEY_MAX];
	char vb[8][16];
	void *kp[8], *vp[8];
	size_t kl[8], vl[8];
	int32_t rcs[8];
};

static int next_bufs(struct clovis_idx *ix, struct nb_slots *n,
		     const char *start, size_t slen, const size_t *kroom,
		     const size_t *vroom, uint32_t flags)
{
	struct clovis_bufvec k = {8, n->kp, n->kl}, v = {8, n->vp, n->vl};

	memset(n->kb, '#', sizeof n->kb);
	memset(n->vb, '#', sizeof n->vb);
	for (int i = 0; i < 8; i++) {
		n->kp[i] = n->kb[i];
		n->vp[i] = n->vb[i];
		n->kl[i] = kroom != NULL ? kroom[i] : 8;
		n->vl[i] = vroom != NULL ? vroom[i] : 16;
		n->rcs[i] = 1;
	}
	memcpy(n->kb[0], start, slen);
	n->kl[0] = slen;
	return idx_sync(ix, CLOVIS_IC_NEXT, &k, &v, n->rcs,
			flags | CLOVIS_IF_CALLER_BUFS);
}

/* Slot i holds record r ("key%05d" -> "val%d") in the caller's buffers. */
static bool nb_holds(const struct nb_slots *n, int i, int r)
{
	char k[16], v[16];
	int kl = snprintf(k, sizeof k, "key%05d", r);
	int vl = snprintf(v, sizeof v, "val%d", r);

	return n->rcs[i] == 0 && n->kp[i] == n->kb[i] &&
	       n->vp[i] == n->vb[i] && n->kl[i] == (size_t)kl &&
	       n->vl[i] == (size_t)vl && memcmp(n->kb[i], k, (size_t)kl) == 0 &&
	       memcmp(n->vb[i], v, (size_t)vl) == 0;
}

/* NEXT into caller buffers: exact fit, short value (-ENOBUFS, key given),
 * short key (-EMSGSIZE, nothing copied), the walk going on past short
 * slots, -ENOENT past the end with buffers left alone, EXCLUDE_START_KEY,
 * an empty start key, and paging through every record. */
static void test_idx_next_caller_bufs(void)
{
	static struct nb_slots n;
	/* rooms: slot 3's value exactly "val13", slot 4's one byte short,
	 * slot 5's key one byte short */
	size_t kroom[8] = {0, 8, 8, 8, 8, 7, 8, 8};
	size_t vroom[8] = {16, 16, 16, 5, 4, 16, 16, 16};
	struct clovis_idx ix;
	char last[16];
	int seen = 0, pages = 0;

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix, 402, true), 0);
	CU_ASSERT_EQUAL_FATAL(idx_fill(&ix, 0, 100), 0);

	CU_ASSERT_EQUAL(next_bufs(&ix, &n, "key00010", 8, kroom, vroom, 0), 0);
	for (int i = 0; i < 8; i++)
		if (i != 4 && i != 5)
			CU_ASSERT(nb_holds(&n, i, 10 + i));
	CU_ASSERT(nb_holds(&n, 3, 13));                 /* exact fit */
	CU_ASSERT_EQUAL(n.rcs[4], -ENOBUFS);            /* value short */
	CU_ASSERT(n.kl[4] == 8 && memcmp(n.kb[4], "key00014", 8) == 0);
	CU_ASSERT_EQUAL(n.vl[4], 5);                    /* size needed */
	CU_ASSERT(n.vb[4][0] == '#');                   /* not written */
	CU_ASSERT_EQUAL(n.rcs[5], -EMSGSIZE);           /* key short */
	CU_ASSERT(n.kl[5] == 8 && n.vl[5] == 5);        /* sizes needed */
	CU_ASSERT(n.kb[5][0] == '#' && n.vb[5][0] == '#');

	CU_ASSERT_EQUAL(next_bufs(&ix, &n, "key00010", 8, NULL, NULL,
				  CLOVIS_IF_EXCLUDE_START_KEY), 0);
	CU_ASSERT(nb_holds(&n, 0, 11) && nb_holds(&n, 7, 18));

	CU_ASSERT_EQUAL(next_bufs(&ix, &n, "key00097", 8, NULL, NULL, 0), 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT(nb_holds(&n, i, 97 + i));
	for (int i = 3; i < 8; i++) {
		CU_ASSERT_EQUAL(n.rcs[i], -ENOENT);
		CU_ASSERT(n.kl[i] == 0 && n.vl[i] == 0);
		CU_ASSERT(n.kp[i] == n.kb[i] && n.vp[i] == n.vb[i]);
		CU_ASSERT(n.kb[i][0] == '#' && n.vb[i][0] == '#');
	}
	CU_ASSERT_EQUAL(next_bufs(&ix, &n, "zz", 2, NULL, NULL, 0), 0);
	CU_ASSERT_EQUAL(n.rcs[0], -ENOENT);

	/* every record, 8 at a time, from the empty key */
	memcpy(last, "", 1);
	while (pages++ < 20 && seen < 100) {
		CU_ASSERT_EQUAL_FATAL(next_bufs(&ix, &n, last, strlen(last),
						NULL, NULL, seen ?
						CLOVIS_IF_EXCLUDE_START_KEY :
						0), 0);
		for (int i = 0; i < 8 && n.rcs[i] == 0; i++, seen++) {
			CU_ASSERT(nb_holds(&n, i, seen));
			memcpy(last, n.kb[i], n.kl[i]);
			last[n.kl[i]] = '\0';
		}
	}
	CU_ASSERT_EQUAL(seen, 100);
	CU_ASSERT_EQUAL(ent_sync(&ix.in_entity, CLOVIS_EO_DELETE), 0);
}

/* NEXT into caller buffers, the edges of the engine's walk: a short value
 * in slot 0 (-ENOBUFS, its key copied, the walk going on), keys and values
 * of every copy size class (1-7, 8-16, 17-32, 33-64 and past 64 bytes,
 * exact fits), and a walk that stops at the end of its index although the
 * next index's records follow in the table. */
static void test_idx_next_bufs_edges(void)
{
	static const size_t ks[8] = {1, 7, 8, 16, 17, 32, 33, 64};
	static const size_t vs[8] = {3, 12, 20, 33, 64, 65, 200, 1};
	static uint8_t kb[8][CLOVIS_KEY_MAX], vb[8][256], want[256];
	void *kp[8], *vp[8], *pkp[8], *pvp[8];
	size_t kl[8], vl[8], pkl[8], pvl[8];
	int32_t rcs[8], prcs[8];
	struct clovis_bufvec k = {8, kp, kl}, v = {8, vp, vl};
	struct clovis_bufvec pk = {8, pkp, pkl}, pv = {8, pvp, pvl};
	struct clovis_idx a, b;

	CU_ASSERT_EQUAL_FATAL(idx_make(&a, 404, true), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(&b, 405, true), 0);
	CU_ASSERT_EQUAL_FATAL(idx_fill(&b, 0, 4), 0);  /* right after a */
	/* record i of a: key of ks[i] bytes ('a'+i, then i), value of vs[i]
	 * bytes (i + j) */
	for (int i = 0; i < 8; i++) {
		pkp[i] = kb[i];
		pvp[i] = vb[i];
		pkl[i] = ks[i];
		pvl[i] = vs[i];
		memset(kb[i], i, ks[i]);
		kb[i][0] = (uint8_t)('a' + i);
		for (size_t j = 0; j < vs[i]; j++)
			vb[i][j] = (uint8_t)(i + j);
	}
	CU_ASSERT_EQUAL_FATAL(idx_sync(&a, CLOVIS_IC_PUT, &pk, &pv, prcs, 0),
			      0);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(prcs[i], 0);

	/* from the first record; slot 0's value one byte short, the others
	 * exact fits */
	memset(kb, '#', sizeof kb);
	memset(vb, '#', sizeof vb);
	for (int i = 0; i < 8; i++) {
		kp[i] = kb[i];
		vp[i] = vb[i];
		kl[i] = i == 0 ? 0 : ks[i];
		vl[i] = i == 0 ? vs[0] - 1 : vs[i];
		rcs[i] = 1;
	}
	CU_ASSERT_EQUAL(idx_sync(&a, CLOVIS_IC_NEXT, &k, &v, rcs,
				 CLOVIS_IF_CALLER_BUFS), 0);
	CU_ASSERT_EQUAL(rcs[0], -ENOBUFS);
	CU_ASSERT(kl[0] == ks[0] && kb[0][0] == 'a' && vl[0] == vs[0]);
	CU_ASSERT(vb[0][0] == '#');                     /* value not written */
	for (int i = 1; i < 8; i++) {
		memset(want, i, ks[i]);
		want[0] = (uint8_t)('a' + i);
		CU_ASSERT_EQUAL(rcs[i], 0);
		CU_ASSERT(kl[i] == ks[i] && memcmp(kb[i], want, ks[i]) == 0);
		CU_ASSERT(kb[i][ks[i]] == '#');         /* nothing past it */
		for (size_t j = 0; j < vs[i]; j++)
			want[j] = (uint8_t)(i + j);
		CU_ASSERT(vl[i] == vs[i] && memcmp(vb[i], want, vs[i]) == 0);
		CU_ASSERT(vb[i][vs[i]] == '#');
	}

	/* from record 6 (exclusive of record 5): two records, then the end of
	 * index a, not index b's first record */
	for (int i = 0; i < 8; i++) {
		kp[i] = kb[i];
		vp[i] = vb[i];
		kl[i] = ks[7];
		vl[i] = 256;
		rcs[i] = 1;
	}
	memset(kb[0], 5, ks[5]);
	kb[0][0] = 'a' + 5;
	kl[0] = ks[5];
	CU_ASSERT_EQUAL(idx_sync(&a, CLOVIS_IC_NEXT, &k, &v, rcs,
				 CLOVIS_IF_CALLER_BUFS |
				 CLOVIS_IF_EXCLUDE_START_KEY), 0);
	CU_ASSERT(rcs[0] == 0 && kl[0] == ks[6] && kb[0][0] == 'a' + 6);
	CU_ASSERT(rcs[1] == 0 && kl[1] == ks[7] && vl[1] == vs[7]);
	for (int i = 2; i < 8; i++)
		CU_ASSERT(rcs[i] == -ENOENT && kl[i] == 0 && vl[i] == 0);
	CU_ASSERT_EQUAL(ent_sync(&a.in_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(ent_sync(&b.in_entity, CLOVIS_EO_DELETE), 0);
}

/* Unsigned byte order, empty key, OVERWRITE, DEL, GET into small buffers. */
static void test_idx_semantics(void)
{
	uint8_t k0[] = {0x01}, k1[] = {0x7f}, k2[] = {0x80}, k3[] = {0xff, 0x00};
	void *kp[5] = {k3, k2, k1, k0, (void *)""};
	size_t kl[5] = {2, 1, 1, 1, 0};
	void *vp[5] = {"d", "c", "b", "a", "empty"};
	size_t vl[5] = {1, 1, 1, 1, 5};
	struct clovis_bufvec k = {5, kp, kl}, v = {5, vp, vl};
	int32_t rcs[5];
	struct clovis_idx ix;
	char small[2];

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix, 401, true), 0);
	CU_ASSERT_EQUAL(idx_sync(&ix, CLOVIS_IC_PUT, &k, &v, rcs, 0), 0);
	/* NEXT from the start: "", 01, 7f, 80, ff00. */
	{
		void *nk[6] = {0}, *nv[6] = {0};
		size_t nkl[6] = {0}, nvl[6] = {0};
		int32_t nr[6];
		struct clovis_bufvec K = {6, nk, nkl}, V = {6, nv, nvl};
		static const char order[] = "eabcd";

		CU_ASSERT_EQUAL(idx_sync(&ix, CLOVIS_IC_NEXT, &K, &V, nr, 0), 0);
		for (int i = 0; i < 5; i++) {
			CU_ASSERT_EQUAL(nr[i], 0);
			CU_ASSERT(nvl[i] >= 1 && ((char *)nv[i])[0] == order[i]);
			free(nk[i]);
			free(nv[i]);
		}
		CU_ASSERT_EQUAL(nr[5], -ENOENT);
	}
	/* OVERWRITE replaces; without it -EEXIST per record. */
	vp[1] = "C";
	CU_ASSERT_EQUAL(idx_sync(&ix, CLOVIS_IC_PUT, &k, &v, rcs, 0), 0);
	CU_ASSERT_EQUAL(rcs[1], -EEXIST);
	CU_ASSERT_EQUAL(idx_sync(&ix, CLOVIS_IC_PUT, &k, &v, rcs,
				 CLOVIS_IF_OVERWRITE), 0);
	CU_ASSERT_EQUAL(rcs[1], 0);
	/* GET into a caller buffer too small for "empty": -ENOBUFS + size. */
	{
		void *gk[2] = {k2, (void *)""}, *gv[2] = {small, small};
		size_t gkl[2] = {1, 0}, gvl[2] = {sizeof small, sizeof small};
		struct clovis_bufvec K = {2, gk, gkl}, V = {2, gv, gvl};

		CU_ASSERT_EQUAL(idx_sync(&ix, CLOVIS_IC_GET, &K, &V, rcs, 0), 0);
		CU_ASSERT_EQUAL(rcs[0], 0);
		CU_ASSERT_EQUAL(gvl[0], 1);
		CU_ASSERT_EQUAL(rcs[1], -ENOBUFS);
		CU_ASSERT_EQUAL(gvl[1], 5);
		CU_ASSERT_EQUAL(small[0], 'C');
	}
	/* DEL twice: second is -ENOENT; the count follows. */
	{
		struct clovis_bufvec K = {2, kp, kl};

		CU_ASSERT_EQUAL(idx_sync(&ix, CLOVIS_IC_DEL, &K, NULL, rcs, 0), 0);
		CU_ASSERT(rcs[0] == 0 && rcs[1] == 0);
		CU_ASSERT_EQUAL(idx_sync(&ix, CLOVIS_IC_DEL, &K, NULL, rcs, 0), 0);
		CU_ASSERT(rcs[0] == -ENOENT && rcs[1] == -ENOENT);
	}
	CU_ASSERT_EQUAL(ent_sync(&ix.in_entity, CLOVIS_EO_GETATTR), 0);
	CU_ASSERT_EQUAL(ix.in_attr.ia_nr_records, 3);
	/* Deleting the index drops its records: a new one is empty. */
	CU_ASSERT_EQUAL(ent_sync(&ix.in_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(idx_make(&ix, 401, true), 0);
	{
		void *nk[1] = {0}, *nv[1] = {0};
		size_t nkl[1] = {0}, nvl[1] = {0};
		int32_t nr[1];
		struct clovis_bufvec K = {1, nk, nkl}, V = {1, nv, nvl};

		CU_ASSERT_EQUAL(idx_sync(&ix, CLOVIS_IC_NEXT, &K, &V, nr, 0), 0);
		CU_ASSERT_EQUAL(nr[0], -ENOENT);
	}
}

/* ------------------------------------------------------------ containers */

/* One-record GET of key "k" of ix into an int: its rc (0, -ENOENT). */
static int rap_get(struct clovis_idx *ix, int *val)
{
	void *kp[1] = {"k"}, *vp[1] = {val};
	size_t kl[1] = {1}, vl[1] = {sizeof *val};
	struct clovis_bufvec k = {1, kp, kl}, v = {1, vp, vl};
	int32_t rcs[1] = {1};
	int rc = idx_sync(ix, CLOVIS_IC_GET, &k, &v, rcs, 0);

	return rc != 0 ? rc : rcs[0];
}

/* One-record NEXT from "" of ix into caller buffers: the first record's
 * value, or its rc. */
static int rap_next(struct clovis_idx *ix, int *val)
{
	char key[CLOVIS_KEY_MAX];
	void *kp[1] = {key}, *vp[1] = {val};
	size_t kl[1] = {0}, vl[1] = {sizeof *val};
	struct clovis_bufvec k = {1, kp, kl}, v = {1, vp, vl};
	int32_t rcs[1] = {1};
	int rc = idx_sync(ix, CLOVIS_IC_NEXT, &k, &v, rcs,
			  CLOVIS_IF_CALLER_BUFS);

	return rc != 0 ? rc : rcs[0];
}

/* PUT "k" = val (overwrite); returns once the op is EXECUTED, the op in
 * *op for the caller to wait STABLE and free. */
static int rap_put(struct clovis_idx *ix, int val, struct clovis_op **op)
{
	static int v;
	void *kp[1] = {"k"}, *vp[1] = {&v};
	size_t kl[1] = {1}, vl[1] = {sizeof v};
	struct clovis_bufvec k = {1, kp, kl}, vv = {1, vp, vl};
	static int32_t rcs[1];
	int rc;

	v = val;
	*op = NULL;
	rc = clovis_idx_op(ix, CLOVIS_IC_PUT, &k, &vv, rcs,
			   CLOVIS_IF_OVERWRITE, op);
	if (rc == 0)
		rc = clovis_op_launch(op, 1);
	if (rc == 0)
		rc = clovis_op_wait(*op, CLOVIS_OS_EXECUTED,
				    CLOVIS_TIME_NEVER);
	return rc;
}

/* The other reader of test_idx_read_after_put: at each round it is told,
 * reads "k" by GET and by NEXT and reports both. */
struct rap_reader {
	struct clovis_idx *rr_ix;
	pthread_mutex_t rr_lock;
	pthread_cond_t rr_cond;
	int rr_round;     /* set by the writer: read now */
	int rr_done;      /* set by the reader: rounds read */
	int rr_get, rr_next;
	bool rr_ok;       /* every read returned 0 */
};

/* Wait on r's condition until *what reaches want (at most 30 s). */
static bool rap_wait(struct rap_reader *r, const int *what, int want)
{
	for (int i = 0; i < 30 && *what < want; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&r->rr_cond, &r->rr_lock, &ts);
	}
	return *what >= want;
}

static void *rap_main(void *arg)
{
	struct rap_reader *r = arg;

	pthread_mutex_lock(&r->rr_lock);
	for (int n = 1; n <= 40 && rap_wait(r, &r->rr_round, n); n++) {
		pthread_mutex_unlock(&r->rr_lock);
		if (rap_get(r->rr_ix, &r->rr_get) != 0 ||
		    rap_next(r->rr_ix, &r->rr_next) != 0)
			r->rr_ok = false;
		pthread_mutex_lock(&r->rr_lock);
		r->rr_done = n;
		pthread_cond_broadcast(&r->rr_cond);
	}
	pthread_mutex_unlock(&r->rr_lock);
	return NULL;
}

/* A GET or NEXT launched after a PUT is EXECUTED sees the PUT, in the
 * writing thread and in another that read before the PUT and idled (a
 * reading thread keeps its snapshot between reads; core/meta.c). */
static void test_idx_read_after_put(void)
{
	struct rap_reader r = {.rr_lock = PTHREAD_MUTEX_INITIALIZER,
			       .rr_cond = PTHREAD_COND_INITIALIZER,
			       .rr_ok = true};
	struct clovis_idx ix;
	struct clovis_op *op;
	pthread_t tid;
	int val = -1;

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix, 410, true), 0);
	CU_ASSERT_EQUAL(rap_get(&ix, &val), -ENOENT);
	CU_ASSERT_EQUAL(rap_next(&ix, &val), -ENOENT);
	r.rr_ix = &ix;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, rap_main, &r), 0);
	for (int n = 1; n <= 40; n++) {
		CU_ASSERT_EQUAL_FATAL(rap_put(&ix, 1000 + n, &op), 0);
		CU_ASSERT_EQUAL(rap_get(&ix, &val), 0);
		CU_ASSERT_EQUAL(val, 1000 + n);
		CU_ASSERT_EQUAL(rap_next(&ix, &val), 0);
		CU_ASSERT_EQUAL(val, 1000 + n);
		pthread_mutex_lock(&r.rr_lock);
		r.rr_round = n;
		pthread_cond_broadcast(&r.rr_cond);
		CU_ASSERT(rap_wait(&r, &r.rr_done, n));
		CU_ASSERT_EQUAL(r.rr_get, 1000 + n);
		CU_ASSERT_EQUAL(r.rr_next, 1000 + n);
		pthread_mutex_unlock(&r.rr_lock);
		CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE,
					       CLOVIS_TIME_NEVER), 0);
		clovis_op_free(op);
	}
	pthread_join(tid, NULL);
	CU_ASSERT(r.rr_ok);
	CU_ASSERT_EQUAL(r.rr_done, 40);
}

static void test_containers(void)
{
	struct clovis_id cid = mkid(500), ids[8], oid = mkid(501);
	struct clovis_container c;
	struct clovis_obj o;
	uint32_t n = 8;

	CU_ASSERT_EQUAL_FATAL(clovis_container_init(&c, cl, &cid), 0);
	CU_ASSERT_EQUAL(ent_sync(&c.co_entity, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(ent_sync(&c.co_entity, CLOVIS_EO_CREATE), -EEXIST);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&o, &c.co_realm, &oid, NULL), 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(clovis_entity_list(cl, &c.co_realm, CLOVIS_ET_OBJ, NULL,
					   ids, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(clovis_id_cmp(&ids[0], &oid), 0);
	n = 8;
	CU_ASSERT_EQUAL(clovis_entity_list(cl, NULL, CLOVIS_ET_CONTAINER, NULL,
					   ids, &n), 0);
	CU_ASSERT_EQUAL(n, 2); /* default + ours */
	CU_ASSERT_EQUAL(ent_sync(&c.co_entity, CLOVIS_EO_DELETE), -ENOTEMPTY);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(ent_sync(&c.co_entity, CLOVIS_EO_DELETE), 0);
	n = 8;
	CU_ASSERT_EQUAL(clovis_entity_list(cl, &c.co_realm, CLOVIS_ET_OBJ, NULL,
					   ids, &n), -ENOENT);
	/* An object cannot be made in a container that does not exist. */
	CU_ASSERT_EQUAL(clovis_obj_init(&o, &c.co_realm, &oid, NULL), 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_CREATE), -ENOENT);
}

/* ------------------------------------------------------------ async */

static int cb_exec, cb_stable, cb_failed;

static void on_exec(struct clovis_op *op) { __atomic_add_fetch(&cb_exec, 1, __ATOMIC_SEQ_CST); }
static void on_stable(struct clovis_op *op) { __atomic_add_fetch(&cb_stable, 1, __ATOMIC_SEQ_CST); }
static void on_failed(struct clovis_op *op) { __atomic_add_fetch(&cb_failed, 1, __ATOMIC_SEQ_CST); }

/* 32 writes launched at once, callbacks fire once each, data all there. */
static void test_async_launch(void)
{
	enum { N = 32 };
	struct clovis_op_cbs cbs = {on_exec, on_stable, on_failed};
	static uint8_t bufs[N][4096];
	uint64_t s[N], n[N];
	void *bp[N];
	size_t bl[N];
	struct clovis_extvec ev[N];
	struct clovis_bufvec bv[N];
	struct clovis_op *ops[N];
	struct clovis_obj o;
	uint8_t r[4096];

	cb_exec = cb_stable = cb_failed = 0;
	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 600, 12, CLOVIS_TIER_FLASH), 0);
	for (int i = 0; i < N; i++) {
		pattern(bufs[i], 4096, 9, (uint64_t)i);
		s[i] = (uint64_t)i * 3;
		n[i] = 1;
		bp[i] = bufs[i];
		bl[i] = 4096;
		ev[i] = (struct clovis_extvec){1, &s[i], &n[i]};
		bv[i] = (struct clovis_bufvec){1, &bp[i], &bl[i]};
		CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_WRITE, &ev[i],
						    &bv[i], 0, &ops[i]), 0);
		CU_ASSERT_EQUAL(clovis_op_setup(ops[i], &cbs, &bufs[i]), 0);
		CU_ASSERT_EQUAL(clovis_op_state(ops[i]), CLOVIS_OS_INIT);
	}
	CU_ASSERT_EQUAL(clovis_op_launch(ops, N), 0);
	for (int i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(clovis_op_wait(ops[i], CLOVIS_OS_STABLE,
					       10ll * 1000000000), 0);
		CU_ASSERT_EQUAL(clovis_op_state(ops[i]), CLOVIS_OS_STABLE);
		CU_ASSERT_PTR_EQUAL(clovis_op_datum(ops[i]), &bufs[i]);
		clovis_op_free(ops[i]);
	}
	CU_ASSERT_EQUAL(cb_exec, N);
	CU_ASSERT_EQUAL(cb_stable, N);
	CU_ASSERT_EQUAL(cb_failed, 0);
	for (int i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, s[i], 1, r), 0);
		CU_ASSERT(memcmp(r, bufs[i], 4096) == 0);
	}
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
}

/* CLOVIS_OF_HERE: a WRITE without callbacks runs in the launching thread
 * (counted in op_here_runs; its data written when launch returns); with
 * callbacks it goes to a worker; the flag is refused on other opcodes and
 * unknown flags are refused. */
static void test_of_here(void)
{
	struct clovis_op_cbs cbs = {on_exec, on_stable, on_failed};
	static uint8_t w[2][4096];
	uint64_t s[2] = {4, 9}, n[2] = {1, 1};
	void *bp[2] = {w[0], w[1]};
	size_t bl[2] = {4096, 4096};
	struct clovis_extvec ev[2] = {{1, &s[0], &n[0]}, {1, &s[1], &n[1]}};
	struct clovis_bufvec bv[2] = {{1, &bp[0], &bl[0]}, {1, &bp[1], &bl[1]}};
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_tier = CLOVIS_TIER_FLASH,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN};
	struct clovis_id id = mkid(650);
	struct clovis_op *op;
	struct clovis_obj o;
	uint8_t r[4096];
	uint64_t before;

	if (ut_cluster_skip("clovis of_here", "ops run in the launching thread "
			    "only embedded (a cluster client starts object "
			    "ops there and ends them on library threads: "
			    "cluster_start)"))
		return;

	cb_exec = cb_stable = cb_failed = 0;
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&o, clovis_default_realm(cl),
					      &id, &a), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&o.ob_entity, CLOVIS_EO_CREATE), 0);
	pattern(w[0], 4096, 21, 4);
	pattern(w[1], 4096, 22, 9);
	CU_ASSERT_EQUAL(clovis_obj_op(&o, CLOVIS_OC_READ, &ev[0], &bv[0],
				      CLOVIS_OF_HERE, &op), -EINVAL);
	CU_ASSERT_EQUAL(clovis_obj_op(&o, CLOVIS_OC_WRITE, &ev[0], &bv[0],
				      1u << 7, &op), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_WRITE, &ev[0], &bv[0],
					    CLOVIS_OF_HERE, &op), 0);
	before = op_here_runs;
	CU_ASSERT_EQUAL(clovis_op_launch(&op, 1), 0);
	CU_ASSERT_EQUAL(op_here_runs - before, 1);
	CU_ASSERT_NOT_EQUAL(clovis_op_state(op), CLOVIS_OS_INIT);
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE, 10ll * 1000000000),
			0);
	clovis_op_free(op);
	/* with callbacks: a worker runs it, the callbacks are called */
	CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_WRITE, &ev[1], &bv[1],
					    CLOVIS_OF_HERE, &op), 0);
	CU_ASSERT_EQUAL(clovis_op_setup(op, &cbs, NULL), 0);
	before = op_here_runs;
	CU_ASSERT_EQUAL(clovis_op_launch(&op, 1), 0);
	CU_ASSERT_EQUAL(op_here_runs - before, 0);
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE, 10ll * 1000000000),
			0);
	clovis_op_free(op);
	CU_ASSERT_EQUAL(cb_stable, 1);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 4, 1, r), 0);
	CU_ASSERT(memcmp(r, w[0], 4096) == 0);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 9, 1, r), 0);
	CU_ASSERT(memcmp(r, w[1], 4096) == 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
}

/*
 * Cluster mode: object READs and WRITEs without callbacks start from the
 * launching thread (clu_obj_start, counted): an array of 16 is sent at
 * once, beyond the 8 workers, and every byte comes back; a home's answer
 * (-ENOENT through a handle whose object was deleted) fails the op with
 * the object named, without a worker; ops with callbacks go to a worker
 * (not counted) and their callbacks run.  Embedded: nothing to check.
 */
static void test_cluster_start(void)
{
	enum { N = 16 };
	struct clovis_op_cbs cbs = {on_exec, on_stable, on_failed};
	static uint8_t w[N][4096], r[N][4096];
	uint64_t s[N], n[N], st0, rd0, st1, rd1;
	void *bp[N], *rp[N];
	size_t bl[N];
	struct clovis_extvec ev[N];
	struct clovis_bufvec bv[N], rv[N];
	struct clovis_op *ops[N], *op;
	struct clovis_obj o, o2;
	struct clovis_id id = mkid(660);

	if (!ut_cluster_mode())
		return; /* embedded: no cluster calls */
	cb_exec = cb_stable = cb_failed = 0;
	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 660, 12, CLOVIS_TIER_FLASH), 0);
	for (uint32_t i = 0; i < N; i++) {
		s[i] = 3 * i + 1;
		n[i] = 1;
		bl[i] = 4096;
		bp[i] = w[i];
		rp[i] = r[i];
		pattern(w[i], 4096, 66, s[i]);
		ev[i] = (struct clovis_extvec){1, &s[i], &n[i]};
		bv[i] = (struct clovis_bufvec){1, &bp[i], &bl[i]};
		rv[i] = (struct clovis_bufvec){1, &rp[i], &bl[i]};
	}
	clu_async_counts(cl, &st0, &rd0);
	for (int pass = 0; pass < 2; pass++) { /* N WRITEs, then N READs */
		for (uint32_t i = 0; i < N; i++)
			CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, pass == 0 ?
					      CLOVIS_OC_WRITE : CLOVIS_OC_READ,
					      &ev[i], pass == 0 ? &bv[i] :
					      &rv[i], 0, &ops[i]), 0);
		CU_ASSERT_EQUAL(clovis_op_launch(ops, N), 0);
		for (uint32_t i = 0; i < N; i++) {
			CU_ASSERT_EQUAL(clovis_op_wait(ops[i], CLOVIS_OS_STABLE,
						       30ll * 1000000000), 0);
			clovis_op_free(ops[i]);
		}
	}
	for (uint32_t i = 0; i < N; i++)
		CU_ASSERT(memcmp(r[i], w[i], 4096) == 0);
	clu_async_counts(cl, &st1, &rd1);
	CU_ASSERT_EQUAL(st1 - st0, 2 * N);
	CU_ASSERT_EQUAL(rd1 - rd0, 0);

	/* with callbacks: a worker, not counted; the callbacks run */
	CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_WRITE, &ev[0], &bv[1],
					    0, &op), 0);
	CU_ASSERT_EQUAL(clovis_op_setup(op, &cbs, NULL), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&op, 1), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE, 30ll * 1000000000),
			0);
	clovis_op_free(op);
	CU_ASSERT_EQUAL(cb_stable, 1);
	clu_async_counts(cl, &st0, &rd0);
	CU_ASSERT_EQUAL(st0, st1);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, s[0], 1, r[0]), 0);
	CU_ASSERT(memcmp(r[0], w[1], 4096) == 0);

	/* the home's answer ends the op: failed, the object named */
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&o2, clovis_default_realm(cl),
					      &id, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&o2.ob_entity, CLOVIS_EO_OPEN), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o2, CLOVIS_OC_WRITE, &ev[2],
					    &bv[2], 0, &op), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&op, 1), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE, 30ll * 1000000000),
			-ENOENT);
	CU_ASSERT_EQUAL(clovis_op_state(op), CLOVIS_OS_FAILED);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_op_errmsg(op), "5eed:"));
	clovis_op_free(op);
	clu_async_counts(cl, &st1, &rd1);
	CU_ASSERT_EQUAL(st1 - st0, 2); /* the read above and this write */
	CU_ASSERT_EQUAL(rd1 - rd0, 0);
}

/* A READ of blocks [blk, blk + nr) of o with callbacks (so through a
 * worker: clu_obj(), not clu_obj_start()). */
static int obj_read_cbs(struct clovis_obj *o, uint64_t blk, uint64_t nr,
			void *buf)
{
	struct clovis_op_cbs cbs = {on_exec, on_stable, on_failed};
	uint64_t s = blk, n = nr;
	size_t len = (size_t)(nr << o->ob_attr.oa_block_shift);
	struct clovis_extvec ev = {1, &s, &n};
	struct clovis_bufvec bv = {1, &buf, &len};
	struct clovis_op *op;
	int rc = clovis_obj_op(o, CLOVIS_OC_READ, &ev, &bv, 0, &op);

	if (rc == 0)
		rc = clovis_op_setup(op, &cbs, NULL);
	if (rc == 0)
		rc = clovis_op_launch(&op, 1);
	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_STABLE, 30ll * 1000000000);
	clovis_op_free(op);
	return rc;
}

/*
 * Cluster mode: READs of a pdclust object are answered by the places of
 * their units and read from the servers that hold them (cli_units.c,
 * counted as direct): whole units and holes come back byte-exact, from
 * the launching thread and through a worker; a unit whose crc64 does not
 * match (fault clu.units.crc) is read again through the home (counted as
 * again), right; a read of part of a unit goes through the home (neither
 * counted); an overwrite reads back new.  Embedded: nothing to check.
 */
static void test_cluster_units(void)
{
	enum { BS = 12, US = 16, STRIPE = 2 << (US - BS), NS = 3 };
	struct clovis_obj_attr a = {.oa_block_shift = BS,
				    .oa_layout = CLOVIS_LAYOUT_PDCLUST,
				    .oa_data_units = 2, .oa_parity_units = 1,
				    .oa_unit_shift = US};
	const size_t sb = (size_t)STRIPE << BS;
	uint8_t *w = malloc((NS + 1) * sb), *r = malloc((NS + 1) * sb);
	struct clovis_id id = mkid(661);
	uint64_t d0, a0, d1, a1;
	struct clovis_obj o;

	if (!ut_cluster_mode()) {
		free(w);
		free(r);
		return; /* embedded: no cluster calls */
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&o, clovis_default_realm(cl),
					      &id, &a), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&o.ob_entity, CLOVIS_EO_CREATE), 0);
	for (uint64_t b = 0; b < (uint64_t)NS * STRIPE; b++)
		pattern(w + (b << BS), 1u << BS, 67, b);
	memset(w + NS * sb, 0, sb);
	CU_ASSERT_EQUAL_FATAL(obj_io(&o, CLOVIS_OC_WRITE, 0, NS * STRIPE, w),
			      0);

	/* whole units and a stripe of holes: read from their servers */
	clu_unit_counts(cl, &d0, &a0);
	memset(r, 0xee, (NS + 1) * sb);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, (NS + 1) * STRIPE, r),
			0);
	CU_ASSERT(memcmp(r, w, (NS + 1) * sb) == 0);
	memset(r, 0xee, sb);
	CU_ASSERT_EQUAL(obj_read_cbs(&o, STRIPE, STRIPE, r), 0);
	CU_ASSERT(memcmp(r, w + sb, sb) == 0);
	clu_unit_counts(cl, &d1, &a1);
	CU_ASSERT_EQUAL(d1 - d0, 2);
	CU_ASSERT_EQUAL(a1 - a0, 0);

	/* a unit's crc64 differs: read again through the home */
	fault_arm("clu.units.crc", 0, 1);
	memset(r, 0xee, sb);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, STRIPE, r), 0);
	CU_ASSERT(memcmp(r, w, sb) == 0);
	CU_ASSERT_EQUAL(fault_fired("clu.units.crc"), 1);
	clu_unit_counts(cl, &d0, &a0);
	CU_ASSERT_EQUAL(d0 - d1, 0);
	CU_ASSERT_EQUAL(a0 - a1, 1);

	/* part of a unit: through the home */
	memset(r, 0xee, 3u << BS);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 5, 3, r), 0);
	CU_ASSERT(memcmp(r, w + (5u << BS), 3u << BS) == 0);
	clu_unit_counts(cl, &d1, &a1);
	CU_ASSERT_EQUAL(d1 - d0, 0);
	CU_ASSERT_EQUAL(a1 - a0, 0);

	/* overwritten: the new units */
	for (uint64_t b = STRIPE; b < 2 * STRIPE; b++)
		pattern(w + (b << BS), 1u << BS, 68, b);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, STRIPE, STRIPE, w + sb), 0);
	memset(r, 0xee, NS * sb);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, NS * STRIPE, r), 0);
	CU_ASSERT(memcmp(r, w, NS * sb) == 0);
	clu_unit_counts(cl, &d0, &a0);
	CU_ASSERT_EQUAL(d0 - d1, 1);
	CU_ASSERT_EQUAL(a0 - a1, 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
	free(w);
	free(r);
}

/* GET records "key%05d" from..from+n-1 one op: each must be "val%d". */
static int idx_check(struct clovis_idx *ix, int from, int n)
{
	char kb[16], vb[16];
	void *kp = kb, *vp = NULL;
	size_t kl, vl = 0;
	int32_t rc1 = 0;
	struct clovis_bufvec k = {1, &kp, &kl}, v = {1, &vp, &vl};
	int rc = 0;

	for (int i = 0; rc == 0 && i < n; i++) {
		kl = (size_t)snprintf(kb, sizeof kb, "key%05d", from + i);
		vp = NULL;
		rc = idx_sync(ix, CLOVIS_IC_GET, &k, &v, &rc1, 0);
		if (rc == 0)
			rc = rc1;
		if (rc == 0 && (vl != (size_t)snprintf(vb, sizeof vb, "val%d",
						       from + i) ||
				memcmp(vp, vb, vl) != 0))
			rc = -EILSEQ;
		if (rc != 0)
			fprintf(stderr, "idx_check: key%05d: %d\n", from + i,
				rc);
		free(vp);
	}
	return rc;
}

/*
 * Cluster mode: the ordering replica sends an update's copies itself
 * while it commits (IdxReq.fan; srv_idx_fan.c): single-record PUTs leave
 * the client no copy to send; with one replica left out of fan (fault
 * clu.idx.fan.less) the client sends that one itself, one a PUT; and
 * every replica read alone then holds every record.  With the copies
 * off (clu_idx_fan_set) the client sends them all, as before.
 */
static void test_cluster_idx_fan(void)
{
	enum { N = 30 };
	uint32_t ns = ut_cluster_mode() ? cluster_nr_servers(cl) : 0;
	uint64_t s0, c0, s1, c1, k;
	struct clovis_idx ix;
	char skip[256];

	if (!ut_cluster_mode())
		return; /* embedded: no replicas */
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix, 662, true), 0);
	for (int i = 0; i < 5; i++) /* the servers' connections made */
		CU_ASSERT_EQUAL_FATAL(idx_fill(&ix, 9000 + i, 1), 0);
	clu_idx_fan_counts(cl, &s0, &c0);
	for (int i = 0; i < N; i++)
		CU_ASSERT_EQUAL_FATAL(idx_fill(&ix, i, 1), 0);
	clu_idx_fan_counts(cl, &s1, &c1);
	k = (s1 - s0) / N; /* copies a PUT: replicas - 1 */
	CU_ASSERT(k >= 1);
	CU_ASSERT_EQUAL(s1 - s0, k * N);
	CU_ASSERT_EQUAL(c1 - c0, 0);
	if (c1 != c0 || s1 - s0 != k * N)
		fprintf(stderr, "idx fan: %" PRIu64 " copies by the ordering "
			"replica, %" PRIu64 " by the client, for %d PUTs\n",
			s1 - s0, c1 - c0, N);

	/* one replica left out of fan: the client sends it */
	fault_arm("clu.idx.fan.less", 0, 0);
	for (int i = N; i < 2 * N; i++)
		CU_ASSERT_EQUAL_FATAL(idx_fill(&ix, i, 1), 0);
	fault_reset();
	clu_idx_fan_counts(cl, &s0, &c0);
	CU_ASSERT_EQUAL(s0 - s1, (k - 1) * N);
	CU_ASSERT_EQUAL(c0 - c1, N);
	if (s0 - s1 != (k - 1) * N || c0 - c1 != N)
		fprintf(stderr, "idx fan, one left out: %" PRIu64 " copies by "
			"the ordering replica, %" PRIu64 " by the client, for "
			"%d PUTs\n", s0 - s1, c0 - c1, N);

	/* copies off: all by the client */
	clu_idx_fan_set(cl, false);
	for (int i = 2 * N; i < 3 * N; i++)
		CU_ASSERT_EQUAL_FATAL(idx_fill(&ix, i, 1), 0);
	clu_idx_fan_set(cl, true);
	clu_idx_fan_counts(cl, &s1, &c1);
	CU_ASSERT_EQUAL(s1 - s0, 0);
	CU_ASSERT_EQUAL(c1 - c0, k * N);

	/* each replica alone: every record (STRATA_TEST_SKIP_SERVERS: the
	 * client reads from the first one not skipped) */
	for (uint32_t j = 0; j < ns; j++) {
		size_t at = 0;

		skip[0] = '\0';
		for (uint32_t o = 0; o < ns; o++) {
			struct clovis_server_info si;
			char *sp;

			if (o == j)
				continue;
			cluster_status(cl, o, &si);
			sp = strchr(si.si_name, ' ');
			if (sp != NULL)
				*sp = '\0';
			at += (size_t)snprintf(skip + at, sizeof skip - at,
					       "%s%s", at ? "," : "",
					       si.si_name);
		}
		setenv("STRATA_TEST_SKIP_SERVERS", skip, 1);
		CU_ASSERT_EQUAL(idx_check(&ix, 0, 3 * N), 0);
		unsetenv("STRATA_TEST_SKIP_SERVERS");
	}
	CU_ASSERT_EQUAL(ent_sync(&ix.in_entity, CLOVIS_EO_DELETE), 0);
}

/* Reads racing overwrites (test_cluster_units_race): the writer's side. */
enum { UR_BS = 12, UR_US = 16, UR_STRIPE = 2 << (UR_US - UR_BS),
       UR_BLKS = 3 * UR_STRIPE, UR_WRITES = 400 };

struct ur_writer {
	struct clovis_obj *uw_o;
	volatile bool uw_stop;
	uint32_t uw_writes;
	int uw_rc;
};

/* Block b of version v: v in its first 8 bytes, then a pattern of both. */
static void ur_block(uint8_t *p, uint64_t v, uint64_t b)
{
	pattern(p, 1u << UR_BS, (uint32_t)v, b);
	memcpy(p, &v, sizeof v);
}

static void *ur_writer_main(void *arg)
{
	struct ur_writer *w = arg;
	uint8_t *buf = malloc((size_t)UR_BLKS << UR_BS);

	if (buf == NULL) {
		w->uw_rc = -ENOMEM;
		return NULL;
	}
	for (uint64_t v = 2; !w->uw_stop && v < 2 + UR_WRITES; v++) {
		for (uint64_t b = 0; b < UR_BLKS; b++)
			ur_block(buf + (b << UR_BS), v, b);
		w->uw_rc = obj_io(w->uw_o, CLOVIS_OC_WRITE, 0, UR_BLKS, buf);
		if (w->uw_rc != 0)
			break;
		w->uw_writes++;
	}
	free(buf);
	return NULL;
}

/*
 * Cluster mode: READs of three stripes of a pdclust object (read from
 * their units' servers) racing WRITEs of the same three stripes, each
 * write one op of a new version: every read returns one version whole
 * (every block of it, byte-exact), never blocks of two writes (the
 * places are one snapshot of the records) nor a unit whose space a later
 * write took (its crc64 fails: read again through the home).  Bounded:
 * 400 writes or 5 s.  Embedded: nothing to check.
 */
static void test_cluster_units_race(void)
{
	struct clovis_obj_attr a = {.oa_block_shift = UR_BS,
				    .oa_layout = CLOVIS_LAYOUT_PDCLUST,
				    .oa_data_units = 2, .oa_parity_units = 1,
				    .oa_unit_shift = UR_US};
	const size_t len = (size_t)UR_BLKS << UR_BS;
	uint8_t *r = malloc(len), *want = malloc(1u << UR_BS);
	struct clovis_id id = mkid(662);
	struct ur_writer w = {0};
	uint64_t d0, a0, d1, a1, reads = 0, torn = 0, failed = 0;
	struct timespec t0, t;
	struct clovis_obj o;
	pthread_t tid;

	if (!ut_cluster_mode()) {
		free(r);
		free(want);
		return; /* embedded: no cluster calls */
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&o, clovis_default_realm(cl),
					      &id, &a), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&o.ob_entity, CLOVIS_EO_CREATE), 0);
	for (uint64_t b = 0; b < UR_BLKS; b++)
		ur_block(r + (b << UR_BS), 1, b);
	CU_ASSERT_EQUAL_FATAL(obj_io(&o, CLOVIS_OC_WRITE, 0, UR_BLKS, r), 0);
	clu_unit_counts(cl, &d0, &a0);
	w.uw_o = &o;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, ur_writer_main, &w),
			      0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		uint64_t v;

		if (obj_io(&o, CLOVIS_OC_READ, 0, UR_BLKS, r) != 0) {
			failed++;
			break;
		}
		reads++;
		memcpy(&v, r, sizeof v);
		for (uint64_t b = 0; b < UR_BLKS; b++) {
			ur_block(want, v, b);
			if (memcmp(r + (b << UR_BS), want, 1u << UR_BS) != 0) {
				if (torn++ == 0)
					fprintf(stderr, "units race: read %"
						PRIu64 ": block %" PRIu64 " is "
						"not version %" PRIu64 "\n",
						reads, b, v);
				break;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (w.uw_writes < UR_WRITES && w.uw_rc == 0 &&
		 t.tv_sec - t0.tv_sec < 5);
	w.uw_stop = true;
	pthread_join(tid, NULL);
	clu_unit_counts(cl, &d1, &a1);
	fprintf(stderr, "units race: %" PRIu64 " reads (%" PRIu64 " from "
		"units, %" PRIu64 " again through the home), %u writes\n",
		reads, d1 - d0, a1 - a0, w.uw_writes);
	CU_ASSERT_EQUAL(w.uw_rc, 0);
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT_EQUAL(torn, 0);
	CU_ASSERT(reads > 0);
	CU_ASSERT(w.uw_writes > 0);
	CU_ASSERT(d1 - d0 > 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
	free(r);
	free(want);
}

/*
 * clovis_op_wait() on an op never launched (INIT) is refused with -EINVAL
 * naming the op, with a timeout or CLOVIS_TIME_NEVER (which hung before,
 * issue 26 point 11; a timeout gave -ETIMEDOUT), unless INIT is in the
 * mask; launched, the same op is waited on as usual.  A dtx member in
 * INIT counts as launched once its dtx's commit op is (the commit
 * launches it).  clovis_op_launch() of 0 ops is a no-op returning 0 (ops
 * not read, may be NULL) and launches nothing.
 */
static void test_wait_timeout(void)
{
	struct clovis_obj o;
	struct clovis_op *op, *cop, *none[1] = {NULL};
	struct clovis_dtx *dx;
	uint64_t s = 3, n = 1;
	struct clovis_extvec ev = {1, &s, &n};

	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 601, 12, CLOVIS_TIER_FLASH), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&o.ob_entity, CLOVIS_EO_GETATTR,
					       &op), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE,
				       CLOVIS_TIME_NEVER), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "never launched"));
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "GETATTR op on object "
				      "5eed:"));
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_EXECUTED, 1000000),
			-EINVAL);
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_INIT | CLOVIS_OS_STABLE,
				       CLOVIS_TIME_NEVER), 0);
	/* launching nothing: 0, nothing launched */
	CU_ASSERT_EQUAL(clovis_op_launch(&op, 0), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(NULL, 0), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(none, 0), 0);
	CU_ASSERT_EQUAL(clovis_op_state(op), CLOVIS_OS_INIT);
	CU_ASSERT_EQUAL(clovis_op_sync(op), 0);

	/* a dtx member: refused while its dtx is open, waited on once the
	 * commit op (which launches it) is launched */
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_ALLOC, &ev, NULL, 0,
					    &op), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_add(dx, op), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE,
				       CLOVIS_TIME_NEVER), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(cop, CLOVIS_OS_STABLE,
				       CLOVIS_TIME_NEVER), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "dtx commit op"));
	CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE,
				       30ll * 1000000000), 0);
	if (clovis_op_wait(cop, CLOVIS_OS_STABLE, 30ll * 1000000000) != 0)
		fprintf(stderr, "wait_timeout: dtx: %d %s / %s\n",
			clovis_op_rc(cop), clovis_op_errmsg(cop),
			clovis_op_errmsg(op));
	CU_ASSERT_EQUAL(clovis_op_rc(cop), 0);
	clovis_op_free(op);
	clovis_op_free(cop);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
}

/* GET key of ix into val (len *vlen in, out): the record's rc. */
static int dpe_get(struct clovis_idx *ix, const char *key, char *val,
		   size_t *vlen)
{
	void *kp = (void *)key, *vp = val;
	size_t kl = strlen(key);
	int32_t rc1 = 1;
	struct clovis_bufvec k = {1, &kp, &kl}, v = {1, &vp, vlen};
	int rc = idx_sync(ix, CLOVIS_IC_GET, &k, &v, &rc1, 0);

	return rc != 0 ? rc : rc1;
}

/*
 * A dtx whose index PUT member meets an existing key without
 * CLOVIS_IF_OVERWRITE fails whole before anything applies (issue 26 point
 * 11: it committed, with that record's rc -EEXIST and the other members
 * applied): the commit op and that member FAILED with -EEXIST and a
 * message naming the index and the key, the other members -ECANCELED,
 * every entity unchanged (the member's new key absent, the existing one's
 * value kept, the object member's blocks and the other index's record not
 * written).  The same dtx with OVERWRITE commits.  Both modes (the clovis
 * suite runs against a cluster in cluster_test.sh: there the index's
 * replica refuses the PREPARE).
 */
static void test_dtx_put_exists(void)
{
	static uint8_t w[4096], r[4096], zero[4096];
	char ids[CLOVIS_ID_STR_LEN], val[32];
	void *kp[2] = {"dk-new", "dk-old"}, *vp[2] = {"nv1", "nv2"};
	void *kp2[1] = {"other"}, *vp2[1] = {"ov"}, *bp = w;
	size_t kl[2] = {6, 6}, vl[2] = {3, 3}, kl2 = 5, vl2 = 2, bl = 4096;
	size_t vlen;
	int32_t rcs[2], rcs2[1], rc1;
	uint64_t s = 7, n = 1;
	struct clovis_extvec ev = {1, &s, &n};
	struct clovis_bufvec bv = {1, &bp, &bl}, k = {2, kp, kl}, v = {2, vp, vl};
	struct clovis_bufvec k2 = {1, kp2, &kl2}, v2 = {1, vp2, &vl2};
	struct clovis_bufvec ko = {1, &kp[1], &kl[1]}, vo = {1, &vp[1], &vl[1]};
	struct clovis_idx ix, ix2;
	struct clovis_obj o;

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix, 670, true), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix2, 671, true), 0);
	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 672, 12, CLOVIS_TIER_FLASH), 0);
	vp[1] = "old";
	CU_ASSERT_EQUAL_FATAL(idx_sync(&ix, CLOVIS_IC_PUT, &ko, &vo, &rc1, 0),
			      0);
	CU_ASSERT_EQUAL(rc1, 0);
	vp[1] = "nv2";
	pattern(w, sizeof w, 67, 7);
	for (int pass = 0; pass < 2; pass++) { /* without, with OVERWRITE */
		uint32_t fl = pass == 0 ? 0 : CLOVIS_IF_OVERWRITE;
		struct clovis_op *m[3], *cop;
		struct clovis_dtx *dx;
		int rc;

		CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx,
					clovis_default_realm(cl)), 0);
		CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_WRITE, &ev,
						    &bv, 0, &m[0]), 0);
		CU_ASSERT_EQUAL_FATAL(clovis_idx_op(&ix, CLOVIS_IC_PUT, &k, &v,
						    rcs, fl, &m[1]), 0);
		CU_ASSERT_EQUAL_FATAL(clovis_idx_op(&ix2, CLOVIS_IC_PUT, &k2,
						    &v2, rcs2, 0, &m[2]), 0);
		for (int i = 0; i < 3; i++)
			CU_ASSERT_EQUAL_FATAL(clovis_dtx_add(dx, m[i]), 0);
		CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
		CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
		rc = clovis_op_wait(cop, CLOVIS_OS_STABLE, 60ll * 1000000000);
		if (pass == 0) {
			CU_ASSERT_EQUAL(rc, -EEXIST);
			CU_ASSERT_EQUAL(clovis_op_state(cop), CLOVIS_OS_FAILED);
			CU_ASSERT_PTR_NOT_NULL(strstr(clovis_op_errmsg(cop),
				clovis_id_format(&ix.in_entity.en_id, ids)));
			CU_ASSERT_PTR_NOT_NULL(strstr(clovis_op_errmsg(cop),
						      "\"dk-old\""));
			CU_ASSERT_EQUAL(clovis_op_wait(m[1], CLOVIS_OS_STABLE,
					30ll * 1000000000), -EEXIST);
			CU_ASSERT_EQUAL(clovis_op_wait(m[0], CLOVIS_OS_STABLE,
					30ll * 1000000000), -ECANCELED);
			CU_ASSERT_EQUAL(clovis_op_wait(m[2], CLOVIS_OS_STABLE,
					30ll * 1000000000), -ECANCELED);
			if (rc != -EEXIST)
				fprintf(stderr, "dtx_put_exists: %d %s\n", rc,
					clovis_op_errmsg(cop));
		} else {
			CU_ASSERT_EQUAL(rc, 0);
			CU_ASSERT_EQUAL(rcs[0], 0);
			CU_ASSERT_EQUAL(rcs[1], 0);
			CU_ASSERT_EQUAL(rcs2[0], 0);
		}
		for (int i = 0; i < 3; i++)
			clovis_op_free(m[i]);
		clovis_op_free(cop);
		/* nothing applied, or everything */
		vlen = sizeof val;
		CU_ASSERT_EQUAL(dpe_get(&ix, "dk-new", val, &vlen),
				pass == 0 ? -ENOENT : 0);
		vlen = sizeof val;
		CU_ASSERT_EQUAL(dpe_get(&ix, "dk-old", val, &vlen), 0);
		CU_ASSERT(vlen == 3 && memcmp(val, pass == 0 ? "old" : "nv2",
					      3) == 0);
		vlen = sizeof val;
		CU_ASSERT_EQUAL(dpe_get(&ix2, "other", val, &vlen),
				pass == 0 ? -ENOENT : 0);
		CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 7, 1, r), 0);
		CU_ASSERT(memcmp(r, pass == 0 ? zero : w, sizeof r) == 0);
	}
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(ent_sync(&ix.in_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(ent_sync(&ix2.in_entity, CLOVIS_EO_DELETE), 0);
}

/* Statistics count ops, survive reopen, and reset. */
static void test_stats(void)
{
	struct clovis_stat st[CLOVIS_STAT_NR];
	uint64_t writes;

	if (ut_cluster_skip("stats", "counts commits of a local store, kept in it across reopen"))
		return;
	CU_ASSERT_EQUAL(clovis_stats_get(cl, st), 0);
	writes = st[CLOVIS_STAT_OBJ_WRITE].cs_count;
	CU_ASSERT(writes > 0);
	CU_ASSERT(st[CLOVIS_STAT_COMMIT].cs_count > 0);
	CU_ASSERT(st[CLOVIS_STAT_OBJ_WRITE].cs_p99_us >=
		  st[CLOVIS_STAT_OBJ_WRITE].cs_p50_us);
	CU_ASSERT_STRING_EQUAL(st[CLOVIS_STAT_IDX_PUT].cs_name, "idx.put");
	reopen();
	CU_ASSERT_EQUAL(clovis_stats_get(cl, st), 0);
	CU_ASSERT_EQUAL(st[CLOVIS_STAT_OBJ_WRITE].cs_count, writes);
	CU_ASSERT_EQUAL(clovis_stats_reset(cl), 0);
	CU_ASSERT_EQUAL(clovis_stats_get(cl, st), 0);
	CU_ASSERT_EQUAL(st[CLOVIS_STAT_OBJ_WRITE].cs_count, 0);
}

/* Fault points in the data path: the op fails, nothing changes, no space
 * leaks. */
static void test_faults(void)
{
#ifdef STRATA_FAULT_INJECT
	static const char *const points[] = {"tier.write", "tier.sync",
					     "obj.write.after_data",
					     "commit.before"};
	uint8_t a[8192], b[8192], r[8192];
	struct clovis_obj o;
	uint64_t before;

	if (ut_cluster_skip("faults", "fault points fire in this process, the engine runs in the servers"))
		return;
	pattern(a, sizeof a, 11, 0);
	pattern(b, sizeof b, 12, 0);
	CU_ASSERT_EQUAL_FATAL(obj_create(&o, 700, 12, CLOVIS_TIER_FLASH), 0);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 0, 2, a), 0);
	reopen();
	CU_ASSERT_EQUAL_FATAL(obj_open(&o, 700), 0);
	before = dev_free(CLOVIS_TIER_FLASH);
	for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
		fault_arm(points[i], 0, 1);
		CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 0, 2, b), -EIO);
		CU_ASSERT_EQUAL(fault_fired(points[i]), 1);
		CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, 2, r), 0);
		CU_ASSERT(memcmp(r, a, sizeof a) == 0);
		CU_ASSERT_EQUAL(dev_free(CLOVIS_TIER_FLASH), before);
	}
	fault_arm("tier.read", 0, 1);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, 2, r), -EIO);
	fault_reset();
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_WRITE, 0, 2, b), 0);
	CU_ASSERT_EQUAL(obj_io(&o, CLOVIS_OC_READ, 0, 2, r), 0);
	CU_ASSERT(memcmp(r, b, sizeof b) == 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
#else
	CU_PASS("fault points exist only in test builds");
#endif
}

int comp_ut_add(void);
int metanv_ut_add(void);

int clovis_ut_add(void)
{
	CU_pSuite s = CU_add_suite("clovis", suite_init, suite_fini);

	if (comp_ut_add() != 0 || metanv_ut_add() != 0 || s == NULL ||
	    !CU_add_test(s, "block_sizes_tiers", test_block_sizes_tiers) ||
	    !CU_add_test(s, "overwrite_model", test_overwrite_model) ||
	    !CU_add_test(s, "vectors", test_vectors) ||
	    !CU_add_test(s, "many_bufs", test_many_bufs) ||
	    !CU_add_test(s, "space_accounting", test_space_accounting) ||
	    !CU_add_test(s, "read_runs", test_read_runs) ||
	    !CU_add_test(s, "enospc", test_enospc) ||
	    !CU_add_test(s, "destroy_files", test_destroy_files) ||
	    !CU_add_test(s, "size_attr", test_size_attr) ||
	    !CU_add_test(s, "idx_next_paging", test_idx_next_paging) ||
	    !CU_add_test(s, "idx_semantics", test_idx_semantics) ||
	    !CU_add_test(s, "idx_next_caller_bufs",
			 test_idx_next_caller_bufs) ||
	    !CU_add_test(s, "idx_next_bufs_edges", test_idx_next_bufs_edges) ||
	    !CU_add_test(s, "idx_read_after_put", test_idx_read_after_put) ||
	    !CU_add_test(s, "of_here", test_of_here) ||
	    !CU_add_test(s, "cluster_start", test_cluster_start) ||
	    !CU_add_test(s, "cluster_units", test_cluster_units) ||
	    !CU_add_test(s, "cluster_idx_fan", test_cluster_idx_fan) ||
	    !CU_add_test(s, "cluster_units_race", test_cluster_units_race) ||
	    !CU_add_test(s, "containers", test_containers) ||
	    !CU_add_test(s, "async_launch", test_async_launch) ||
	    !CU_add_test(s, "wait_timeout", test_wait_timeout) ||
	    !CU_add_test(s, "dtx_put_exists", test_dtx_put_exists) ||
	    !CU_add_test(s, "stats", test_stats) ||
	    !CU_add_test(s, "faults", test_faults))
		return -1;
	return 0;
}
