/*
 * pdclust_ut.c — unit tests of the pdclust placement math (suite "pdclust")
 * and of the ISA-L erasure codec and checksum (suite "ec").  Randomness
 * comes from a seeded splitmix64, so every run checks the same cases.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <isa-l/crc64.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "layouts/ec.h"
#include "layouts/pdclust.h"
#include "tests/ut.h"

int pdclust_ut_add(void);

/* ------------------------------------------------------------- helpers */

static uint64_t ut_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static struct st_id ut_rand_id(uint64_t *state)
{
	return (struct st_id){ut_rand(state), ut_rand(state)};
}

/* The pool shapes the placement tests run over: n, k, s, p. */
static const struct pd_geom ut_shapes[] = {
	{4, 2, 1, 7, 20},   {4, 2, 1, 8, 20},  {4, 2, 1, 12, 20},
	{4, 2, 1, 32, 20},  {8, 2, 2, 12, 20}, {8, 2, 2, 40, 20},
	{1, 1, 1, 3, 12},   {1, 1, 1, 5, 12},  {4, 2, 1, 64, 20},
	{1, 2, 0, 16, 16},  {16, 4, 2, 23, 24},
};
#define UT_SHAPES_NR (sizeof ut_shapes / sizeof ut_shapes[0])
/* Shapes with the largest pool, checked for distinctness and balance. */
static const struct pd_geom ut_big_shapes[] = {
	{8, 2, 2, 256, 20}, {28, 3, 1, 256, 16}, {28, 3, 1, 32, 16},
};
#define UT_BIG_SHAPES_NR (sizeof ut_big_shapes / sizeof ut_big_shapes[0])

/* Map one group and check that every device is in the pool and distinct. */
static bool ut_map_ok(const struct pd_geom *g, const struct st_id *id,
		      uint64_t group, uint32_t *devs)
{
	uint8_t seen[PD_POOL_MAX] = {0};

	pd_group_map(g, id, group, devs);
	for (uint32_t i = 0; i < pd_width(g); i++) {
		if (devs[i] >= g->pg_p || seen[devs[i]])
			return false;
		seen[devs[i]] = 1;
	}
	return true;
}

/* ------------------------------------------------------------- pdclust */

static void ut_geom_bad(struct pd_geom g, const char *field)
{
	err_clear();
	CU_ASSERT_EQUAL(pd_geom_check(&g), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), field));
}

/* Every bad field is refused with a message that names it; the limits
 * themselves are accepted. */
static void test_geom_check(void)
{
	struct pd_geom ok = {4, 2, 1, 7, 20};

	CU_ASSERT_EQUAL(pd_geom_check(&ok), 0);
	for (size_t i = 0; i < UT_SHAPES_NR; i++)
		CU_ASSERT_EQUAL(pd_geom_check(&ut_shapes[i]), 0);
	for (size_t i = 0; i < UT_BIG_SHAPES_NR; i++)
		CU_ASSERT_EQUAL(pd_geom_check(&ut_big_shapes[i]), 0);
	CU_ASSERT_EQUAL(pd_geom_check(&(struct pd_geom){1, 0, 0, 1, 12}), 0);
	CU_ASSERT_EQUAL(pd_geom_check(&(struct pd_geom){30, 1, 1, 32, 24}), 0);
	ut_geom_bad((struct pd_geom){0, 2, 1, 7, 20}, "n =");
	ut_geom_bad((struct pd_geom){33, 0, 0, 64, 20}, "n =");
	ut_geom_bad((struct pd_geom){4, UINT32_MAX, 1, 7, 20}, "k =");
	ut_geom_bad((struct pd_geom){4, 2, UINT32_MAX - 5, 7, 20}, "s =");
	ut_geom_bad((struct pd_geom){20, 10, 3, 64, 20}, "n + k + s");
	ut_geom_bad((struct pd_geom){4, 2, 1, 6, 20}, "p =");
	ut_geom_bad((struct pd_geom){4, 2, 1, 0, 20}, "p =");
	ut_geom_bad((struct pd_geom){4, 2, 1, 257, 20}, "p =");
	ut_geom_bad((struct pd_geom){4, 2, 1, 7, 11}, "unit shift");
	ut_geom_bad((struct pd_geom){4, 2, 1, 7, 25}, "unit shift");
	CU_ASSERT_EQUAL(pd_geom_check(&(struct pd_geom){4, 2, 1, 256, 24}), 0);
}

/* Distinct devices for many random ids and groups, consecutive groups
 * across tile boundaries and huge group numbers, over every shape. */
static unsigned ut_distinct_shape(const struct pd_geom *g, uint64_t *rng)
{
	uint32_t devs[ST_LAYOUT_UNITS_MAX];
	unsigned bad = 0;

	for (int o = 0; o < 40; o++) {
		struct st_id id = ut_rand_id(rng);

		for (uint64_t grp = 0; grp < 2 * g->pg_p + 3; grp++)
			bad += !ut_map_ok(g, &id, grp, devs);
		for (int i = 0; i < 50; i++)
			bad += !ut_map_ok(g, &id, ut_rand(rng), devs);
		bad += !ut_map_ok(g, &id, UINT64_MAX, devs);
	}
	return bad;
}

static void test_distinct(void)
{
	uint64_t rng = 1;
	unsigned bad = 0;

	for (size_t i = 0; i < UT_SHAPES_NR; i++)
		bad += ut_distinct_shape(&ut_shapes[i], &rng);
	for (size_t i = 0; i < UT_BIG_SHAPES_NR; i++)
		bad += ut_distinct_shape(&ut_big_shapes[i], &rng);
	CU_ASSERT_EQUAL(bad, 0);
}

/* Count the data, parity and spare units of groups [first, first + nr) of
 * id per device: cnt[kind][dev]. */
static void ut_count_kinds(const struct pd_geom *g, const struct st_id *id,
			   uint64_t first, uint64_t nr,
			   uint32_t cnt[3][PD_POOL_MAX])
{
	uint32_t devs[ST_LAYOUT_UNITS_MAX];

	memset(cnt, 0, 3 * PD_POOL_MAX * sizeof cnt[0][0]);
	for (uint64_t grp = first; grp < first + nr; grp++) {
		pd_group_map(g, id, grp, devs);
		for (uint32_t i = 0; i < pd_width(g); i++) {
			uint32_t kind = i < g->pg_n ? 0
				      : i < g->pg_n + g->pg_k ? 1 : 2;
			cnt[kind][devs[i]]++;
		}
	}
}

/*
 * The bound of pdclust.h: over nr consecutive groups, each device holds the
 * mean nr * c / p units of a kind of c slots within 2 * c, and exactly the
 * mean over whole tiles.  Compared in integers, scaled by p.
 */
static uint32_t ut_balance_shape(const struct pd_geom *g, uint64_t *rng)
{
	static uint32_t cnt[3][PD_POOL_MAX];
	const uint32_t c[3] = {g->pg_n, g->pg_k, g->pg_s};
	uint32_t p = g->pg_p, exact_bad = 0, bound_bad = 0;

	for (int o = 0; o < 4; o++) {
		struct st_id id = ut_rand_id(rng);
		uint64_t tile = o == 0 ? 0 : ut_rand(rng) >> 40;
		uint64_t first = ut_rand(rng) >> 40, nr = (uint64_t)p * 64;

		ut_count_kinds(g, &id, tile * p, nr, cnt);
		for (int k = 0; k < 3; k++)
			for (uint32_t d = 0; d < p; d++)
				exact_bad += cnt[k][d] != 64 * c[k];
		nr += ut_rand(rng) % p;
		ut_count_kinds(g, &id, first, nr, cnt);
		for (int k = 0; k < 3; k++)
			for (uint32_t d = 0; d < p; d++) {
				int64_t dev = (int64_t)cnt[k][d] * p -
					      (int64_t)(nr * c[k]);

				bound_bad += llabs(dev) > 2 * (int64_t)c[k] * p;
			}
	}
	CU_ASSERT_EQUAL(exact_bad, 0);
	return exact_bad + bound_bad;
}

static void test_balance(void)
{
	uint64_t rng = 2;
	uint32_t bad = 0;

	for (size_t i = 0; i < UT_SHAPES_NR; i++)
		bad += ut_balance_shape(&ut_shapes[i], &rng);
	for (size_t i = 0; i < UT_BIG_SHAPES_NR; i++)
		bad += ut_balance_shape(&ut_big_shapes[i], &rng);
	CU_ASSERT_EQUAL(bad, 0);
}

/* Every tile of one group shape gives each device each slot exactly once:
 * checked slot by slot (stronger than per kind) over a few tiles. */
static void test_balance_slots(void)
{
	static const struct pd_geom g = {8, 2, 2, 40, 20};
	uint32_t devs[ST_LAYOUT_UNITS_MAX];
	uint64_t rng = 3;
	unsigned bad = 0;

	for (int t = 0; t < 8; t++) {
		struct st_id id = ut_rand_id(&rng);
		uint64_t tile = ut_rand(&rng) >> 8;
		uint8_t seen[ST_LAYOUT_UNITS_MAX][PD_POOL_MAX] = {{0}};

		for (uint64_t r = 0; r < g.pg_p; r++) {
			pd_group_map(&g, &id, tile * g.pg_p + r, devs);
			for (uint32_t i = 0; i < pd_width(&g); i++)
				seen[i][devs[i]]++;
		}
		for (uint32_t i = 0; i < pd_width(&g); i++)
			for (uint32_t d = 0; d < g.pg_p; d++)
				bad += seen[i][d] != 1;
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/*
 * Judge co-membership counts co[d][e] (groups holding both d and e) by the
 * declustering bound of pdclust.h: for every device d each survivor e
 * shares groups with d at least once and within [0.5, 1.5] times d's mean.
 * Returns false on a violation; *worst gets the largest max / mean seen.
 */
static bool ut_decluster_judge(uint32_t co[64][64], uint32_t p, double *worst)
{
	bool ok = true;

	*worst = 0;
	for (uint32_t d = 0; d < p; d++) {
		uint64_t sum = 0;
		uint32_t lo = UINT32_MAX, hi = 0;

		for (uint32_t e = 0; e < p; e++) {
			if (e == d)
				continue;
			sum += co[d][e];
			lo = co[d][e] < lo ? co[d][e] : lo;
			hi = co[d][e] > hi ? co[d][e] : hi;
		}
		ok = ok && co[d][d] == 0 && lo > 0 && sum > 0 &&
		     2 * (uint64_t)lo * (p - 1) >= sum &&
		     2 * (uint64_t)hi * (p - 1) <= 3 * sum;
		if (sum > 0 && (double)hi * (p - 1) / (double)sum > *worst)
			*worst = (double)hi * (p - 1) / (double)sum;
	}
	return ok;
}

/* Add the co-memberships of one group to co. */
static void ut_co_add(uint32_t co[64][64], const uint32_t *devs, uint32_t w)
{
	for (uint32_t i = 0; i < w; i++)
		for (uint32_t j = 0; j < w; j++)
			co[devs[i]][devs[j]] += i != j;
}

/* The declustering property over 16 objects of p * 64 groups each. */
static void test_decluster(void)
{
	static uint32_t co[64][64];
	uint32_t devs[ST_LAYOUT_UNITS_MAX];
	uint64_t rng = 4;
	double worst, all_worst = 0;

	for (size_t s = 0; s < UT_SHAPES_NR; s++) {
		const struct pd_geom *g = &ut_shapes[s];

		CU_ASSERT_FATAL(g->pg_p <= 64);
		memset(co, 0, sizeof co);
		for (int o = 0; o < 16; o++) {
			struct st_id id = ut_rand_id(&rng);
			uint64_t first = ut_rand(&rng) >> 20;

			for (uint64_t grp = first; grp < first + 64ull * g->pg_p;
			     grp++) {
				pd_group_map(g, &id, grp, devs);
				ut_co_add(co, devs, pd_width(g));
			}
		}
		CU_ASSERT(ut_decluster_judge(co, g->pg_p, &worst));
		all_worst = worst > all_worst ? worst : all_worst;
	}
	CU_ASSERT(all_worst > 1.0 && all_worst < 1.5);
}

/* The judge has teeth: a balanced but not declustered placement (the same
 * rotation of devices 0..p-1 in every tile, so device d only ever meets
 * its w - 1 neighbours on each side) is rejected. */
static void test_decluster_detects(void)
{
	static uint32_t co[64][64];
	const uint32_t p = 16, w = 7;
	uint32_t devs[ST_LAYOUT_UNITS_MAX];
	double worst;

	memset(co, 0, sizeof co);
	for (uint64_t grp = 0; grp < 64 * p; grp++) {
		for (uint32_t i = 0; i < w; i++)
			devs[i] = (uint32_t)((grp + i) % p);
		ut_co_add(co, devs, w);
	}
	CU_ASSERT_FALSE(ut_decluster_judge(co, p, &worst));
	CU_ASSERT_EQUAL(co[0][8], 0);
	CU_ASSERT(co[0][1] > 0);
}

/* Same inputs, same devices; the placement is pinned by a golden vector so
 * that a change of the algorithm (which would move every stored object's
 * units) cannot go unnoticed; and different ids or tiles get different
 * placements. */
static void test_deterministic(void)
{
	static const struct pd_geom g = {4, 2, 1, 12, 20};
	static const uint32_t golden[3][7] = {
		{8, 10, 0, 6, 3, 1, 11},
		{2, 3, 11, 7, 4, 1, 6},
		{3, 7, 5, 2, 10, 4, 1},
	};
	const struct st_id id = {0x0123456789abcdefull, 42};
	const uint64_t groups[3] = {0, 13, 1000000007ull};
	uint32_t a[ST_LAYOUT_UNITS_MAX], b[ST_LAYOUT_UNITS_MAX];
	uint64_t rng = 5;
	unsigned differ = 0;

	for (int i = 0; i < 3; i++) {
		pd_group_map(&g, &id, groups[i], a);
		CU_ASSERT_EQUAL(memcmp(a, golden[i], sizeof golden[i]), 0);
	}
	for (int i = 0; i < 200; i++) {
		struct st_id x = ut_rand_id(&rng), y = ut_rand_id(&rng);
		uint64_t grp = ut_rand(&rng);

		pd_group_map(&g, &x, grp, a);
		pd_group_map(&g, &x, grp, b);
		CU_ASSERT_EQUAL(memcmp(a, b, 7 * sizeof a[0]), 0);
		pd_group_map(&g, &y, grp, b);
		differ += memcmp(a, b, 7 * sizeof a[0]) != 0;
		y = (struct st_id){x.si_hi ^ 1, x.si_lo};
		pd_group_map(&g, &y, grp, b);
		differ += memcmp(a, b, 7 * sizeof a[0]) != 0;
		y = (struct st_id){x.si_hi, x.si_lo + 1};
		pd_group_map(&g, &y, grp, b);
		differ += memcmp(a, b, 7 * sizeof a[0]) != 0;
		pd_group_map(&g, &x, grp + g.pg_p, b);
		differ += memcmp(a, b, 7 * sizeof a[0]) != 0;
	}
	/* Two random placements of 7 of 12 devices agree by chance with
	 * probability 1 / (12! / 5!) ~ 3e-7 per pair. */
	CU_ASSERT_EQUAL(differ, 4 * 200);
}

/* pd_dev_slot() is the inverse of pd_group_map(): each of the width
 * devices answers its slot, every other device (and any dev >= p) -1. */
static void test_dev_slot(void)
{
	uint32_t devs[ST_LAYOUT_UNITS_MAX];
	uint64_t rng = 6;
	unsigned bad = 0;

	for (size_t s = 0; s < UT_SHAPES_NR; s++) {
		const struct pd_geom *g = &ut_shapes[s];

		for (int i = 0; i < 30; i++) {
			struct st_id id = ut_rand_id(&rng);
			uint64_t grp = ut_rand(&rng) >> (i % 64);
			uint32_t held = 0;

			pd_group_map(g, &id, grp, devs);
			for (uint32_t d = 0; d < g->pg_p + 3; d++) {
				int slot = pd_dev_slot(g, &id, grp, d);

				if (slot < 0)
					continue;
				held++;
				bad += (uint32_t)slot >= pd_width(g) ||
				       devs[slot] != d;
			}
			bad += held != pd_width(g);
			bad += pd_dev_slot(g, &id, grp, UINT32_MAX) != -1;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* ------------------------------------------------------------------ ec */

/* One group of test buffers: w units of len bytes, plus a pristine copy. */
struct ut_group {
	uint32_t ug_n, ug_k;
	size_t ug_len;
	uint8_t *ug_unit[ST_LAYOUT_UNITS_MAX];
	uint8_t *ug_orig[ST_LAYOUT_UNITS_MAX];
};

/* Random data units, parity encoded by c, and a copy of all units. */
static void ut_group_init(struct ut_group *ug, const struct ec_codec *c,
			  size_t len, uint64_t *rng)
{
	uint32_t w = ec_codec_n(c) + ec_codec_k(c);

	ug->ug_n = ec_codec_n(c);
	ug->ug_k = ec_codec_k(c);
	ug->ug_len = len;
	for (uint32_t i = 0; i < w; i++) {
		ug->ug_unit[i] = malloc(len);
		ug->ug_orig[i] = malloc(len);
		CU_ASSERT_FATAL(ug->ug_unit[i] != NULL && ug->ug_orig[i] != NULL);
		for (size_t b = 0; b < len; b++)
			ug->ug_unit[i][b] = (uint8_t)ut_rand(rng);
	}
	ec_encode(c, len, ug->ug_unit, ug->ug_unit + ug->ug_n);
	for (uint32_t i = 0; i < w; i++)
		memcpy(ug->ug_orig[i], ug->ug_unit[i], len);
}

static void ut_group_fini(struct ut_group *ug)
{
	for (uint32_t i = 0; i < ug->ug_n + ug->ug_k; i++) {
		free(ug->ug_unit[i]);
		free(ug->ug_orig[i]);
	}
}

/* Erase the units of mask (fill them with garbage), decode, and return the
 * decode rc; *intact tells whether every unit equals its original. */
static int ut_erase_decode(const struct ec_codec *c, struct ut_group *ug,
			   uint32_t mask, bool *intact)
{
	bool present[ST_LAYOUT_UNITS_MAX] = {false};
	uint32_t w = ug->ug_n + ug->ug_k;
	int rc;

	for (uint32_t i = 0; i < w; i++) {
		present[i] = !(mask & (1u << i));
		if (!present[i])
			memset(ug->ug_unit[i], 0xa5 ^ (int)i, ug->ug_len);
	}
	rc = ec_decode(c, ug->ug_len, ug->ug_unit, present);
	*intact = true;
	for (uint32_t i = 0; i < w; i++)
		if (memcmp(ug->ug_unit[i], ug->ug_orig[i], ug->ug_len) != 0)
			*intact = false;
	for (uint32_t i = 0; i < w; i++)
		memcpy(ug->ug_unit[i], ug->ug_orig[i], ug->ug_len);
	return rc;
}

/* Erase every combination of up to k units of an n + k group, decode, and
 * compare byte for byte; k + 1 erasures give -EIO.  Returns combos run. */
static unsigned ut_all_erasures(uint32_t n, uint32_t k, size_t len)
{
	struct ec_codec *c = NULL;
	struct ut_group ug;
	uint64_t rng = n * 100 + k;
	unsigned combos = 0, bad = 0, eio_bad = 0;
	bool intact;

	CU_ASSERT_EQUAL_FATAL(ec_codec_create(&c, n, k), 0);
	ut_group_init(&ug, c, len, &rng);
	for (uint32_t mask = 0; mask < (1u << (n + k)); mask++) {
		uint32_t lost = (uint32_t)__builtin_popcount(mask);

		if (lost <= k) {
			combos++;
			bad += ut_erase_decode(c, &ug, mask, &intact) != 0 ||
			       !intact;
		} else if (lost == k + 1) {
			eio_bad += ut_erase_decode(c, &ug, mask, &intact) !=
				   -EIO;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(eio_bad, 0);
	ut_group_fini(&ug);
	ec_codec_destroy(c);
	return combos;
}

static void test_ec_all_erasures(void)
{
	CU_ASSERT_EQUAL(ut_all_erasures(4, 2, 4096), 1 + 6 + 15);
	CU_ASSERT_EQUAL(ut_all_erasures(4, 2, 4097), 1 + 6 + 15);
	CU_ASSERT_EQUAL(ut_all_erasures(8, 2, 4096), 1 + 10 + 45);
	CU_ASSERT_EQUAL(ut_all_erasures(3, 3, 1000), 1 + 6 + 15 + 20);
	CU_ASSERT_EQUAL(ut_all_erasures(1, 2, 33), 1 + 3 + 3);
}

/* A mask of exactly nr of the low w bits, drawn at random. */
static uint32_t ut_rand_mask(uint64_t *rng, uint32_t w, uint32_t nr)
{
	uint32_t mask = 0;

	while ((uint32_t)__builtin_popcount(mask) < nr)
		mask |= 1u << (ut_rand(rng) % w);
	return mask;
}

/* Random 10+4 and wide (16+16, 28+4) groups: random erasures of up to k
 * units at odd lengths rebuild exactly. */
static void test_ec_random(void)
{
	static const uint32_t shapes[][2] = {{10, 4}, {16, 16}, {28, 4}};
	static const size_t lens[] = {1, 31, 4096, 4097, 65539};
	uint64_t rng = 7;
	unsigned bad = 0, runs = 0;

	for (size_t s = 0; s < 3; s++) {
		uint32_t n = shapes[s][0], k = shapes[s][1];
		struct ec_codec *c = NULL;

		CU_ASSERT_EQUAL_FATAL(ec_codec_create(&c, n, k), 0);
		for (size_t l = 0; l < 5; l++) {
			struct ut_group ug;
			bool intact;

			ut_group_init(&ug, c, lens[l], &rng);
			for (int i = 0; i < 40; i++) {
				uint32_t lost = 1 + (uint32_t)(ut_rand(&rng) % k);
				uint32_t m = ut_rand_mask(&rng, n + k, lost);

				bad += ut_erase_decode(c, &ug, m, &intact) != 0 ||
				       !intact;
				runs++;
			}
			ut_group_fini(&ug);
		}
		ec_codec_destroy(c);
	}
	CU_ASSERT_EQUAL(runs, 3 * 5 * 40);
	CU_ASSERT_EQUAL(bad, 0);
}

/* 1 MiB units: the largest unit size in the tests; two erasures. */
static void test_ec_large(void)
{
	struct ec_codec *c = NULL;
	struct ut_group ug;
	uint64_t rng = 8;
	bool intact = false;

	CU_ASSERT_EQUAL_FATAL(ec_codec_create(&c, 4, 2), 0);
	ut_group_init(&ug, c, 1u << 20, &rng);
	CU_ASSERT_EQUAL(ut_erase_decode(c, &ug, 0x11, &intact), 0);
	CU_ASSERT(intact);
	CU_ASSERT_EQUAL(ut_erase_decode(c, &ug, 0x30, &intact), 0);
	CU_ASSERT(intact);
	ut_group_fini(&ug);
	ec_codec_destroy(c);
}

/* Parity really depends on every data byte: one flipped data bit changes
 * every parity unit (Cauchy coefficients are all non-zero). */
static void test_ec_parity_depends(void)
{
	uint8_t d[4][64], p[2][64], q[2][64];
	uint8_t *data[4] = {d[0], d[1], d[2], d[3]};
	uint8_t *par[2] = {p[0], p[1]}, *par2[2] = {q[0], q[1]};
	struct ec_codec *c = NULL;

	memset(d, 0, sizeof d);
	CU_ASSERT_EQUAL_FATAL(ec_codec_create(&c, 4, 2), 0);
	ec_encode(c, 64, data, par);
	CU_ASSERT_EQUAL(p[0][5] | p[1][5], 0);
	for (int i = 0; i < 4; i++) {
		d[i][5] ^= 0x10;
		ec_encode(c, 64, data, par2);
		CU_ASSERT(q[0][5] != 0 && q[1][5] != 0);
		CU_ASSERT_EQUAL(memcmp(p[0], q[0], 5), 0);
		d[i][5] ^= 0x10;
	}
	ec_codec_destroy(c);
}

/* Too many erasures: -EIO with the message, and no buffer written. */
static void test_ec_too_many(void)
{
	struct ec_codec *c = NULL;
	struct ut_group ug;
	bool present[6] = {false, true, false, true, true, false};
	uint64_t rng = 9;

	CU_ASSERT_EQUAL_FATAL(ec_codec_create(&c, 4, 2), 0);
	ut_group_init(&ug, c, 512, &rng);
	memset(ug.ug_unit[0], 0x5a, 512);
	err_clear();
	CU_ASSERT_EQUAL(ec_decode(c, 512, ug.ug_unit, present), -EIO);
	CU_ASSERT_STRING_EQUAL(err_msg(),
			       "ec: 3 units lost, at most 2 can be rebuilt");
	CU_ASSERT_EQUAL(ug.ug_unit[0][0], 0x5a);
	CU_ASSERT_EQUAL(ug.ug_unit[0][511], 0x5a);
	CU_ASSERT_EQUAL(memcmp(ug.ug_unit[2], ug.ug_orig[2], 512), 0);
	ut_group_fini(&ug);
	ec_codec_destroy(c);
}

/* Codec limits, accessors and the k == 0 codec. */
static void test_ec_create(void)
{
	struct ec_codec *c = NULL;
	uint8_t d0[16], d1[16];
	uint8_t *units[2] = {d0, d1};
	bool present[2] = {true, true};

	CU_ASSERT_EQUAL(ec_codec_create(&c, 0, 2), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "n ="));
	CU_ASSERT_EQUAL(ec_codec_create(&c, 33, 0), -EINVAL);
	CU_ASSERT_EQUAL(ec_codec_create(&c, 30, 3), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "k ="));
	CU_ASSERT_EQUAL(ec_codec_create(&c, 1, UINT32_MAX), -EINVAL);
	CU_ASSERT_PTR_NULL(c);
	CU_ASSERT_EQUAL_FATAL(ec_codec_create(&c, 2, 0), 0);
	CU_ASSERT_EQUAL(ec_codec_n(c), 2);
	CU_ASSERT_EQUAL(ec_codec_k(c), 0);
	memset(d0, 1, sizeof d0);
	memset(d1, 2, sizeof d1);
	ec_encode(c, sizeof d0, units, NULL);
	CU_ASSERT_EQUAL(ec_decode(c, sizeof d0, units, present), 0);
	CU_ASSERT(d0[15] == 1 && d1[0] == 2);
	present[1] = false;
	err_clear();
	CU_ASSERT_EQUAL(ec_decode(c, sizeof d0, units, present), -EIO);
	CU_ASSERT_STRING_EQUAL(err_msg(),
			       "ec: 1 units lost, at most 0 can be rebuilt");
	CU_ASSERT_EQUAL(d1[0], 2);
	ec_codec_destroy(c);
	CU_ASSERT_EQUAL_FATAL(ec_codec_create(&c, 20, 12), 0);
	CU_ASSERT_EQUAL(ec_codec_n(c) + ec_codec_k(c), 32);
	ec_codec_destroy(c);
	ec_codec_destroy(NULL);
}

/* The checksum: the CRC-64/XZ check value, the same as ISA-L called
 * directly, sensitive to any single bit. */
static void test_ec_crc(void)
{
	uint8_t buf[4097];
	uint64_t rng = 10, base;
	unsigned same = 0;

	CU_ASSERT_EQUAL(ec_crc("123456789", 9), 0x995dc9bbdf1939faull);
	CU_ASSERT_EQUAL(ec_crc("", 0), 0);
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)ut_rand(&rng);
	base = ec_crc(buf, sizeof buf);
	CU_ASSERT_EQUAL(base, crc64_ecma_refl(0, buf, sizeof buf));
	CU_ASSERT_EQUAL(ec_crc(buf, 4096), crc64_ecma_refl(0, buf, 4096));
	for (int i = 0; i < 500; i++) {
		size_t bit = ut_rand(&rng) % (8 * sizeof buf);

		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		same += ec_crc(buf, sizeof buf) == base;
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	CU_ASSERT_EQUAL(same, 0);
	CU_ASSERT_EQUAL(ec_crc(buf, sizeof buf), base);
}

struct ut_ec_thread {
	const struct ec_codec *ut_codec;
	uint64_t ut_seed;
	unsigned ut_bad;
};

static void *ut_ec_thread_run(void *arg)
{
	struct ut_ec_thread *t = arg;
	struct ut_group ug;
	uint64_t rng = t->ut_seed;
	bool intact;

	ut_group_init(&ug, t->ut_codec, 8192, &rng);
	for (int i = 0; i < 100; i++) {
		uint32_t m = ut_rand_mask(&rng, 12, 1 + (uint32_t)(i % 4));

		t->ut_bad += ut_erase_decode(t->ut_codec, &ug, m, &intact) != 0 ||
			     !intact;
	}
	ut_group_fini(&ug);
	return NULL;
}

/* One codec, four threads decoding different groups at once. */
static void test_ec_threads(void)
{
	struct ut_ec_thread t[4];
	pthread_t tid[4];
	struct ec_codec *c = NULL;

	CU_ASSERT_EQUAL_FATAL(ec_codec_create(&c, 8, 4), 0);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct ut_ec_thread){c, 100 + (uint64_t)i, 0};
		CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[i], NULL,
						     ut_ec_thread_run, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		CU_ASSERT_EQUAL(t[i].ut_bad, 0);
	}
	ec_codec_destroy(c);
}

/* ------------------------------------------- keyed placement (hrw) */

/* A keyed pool: nd domains of per devices each, domain j keyed by
 * key_base + j (through a mix), device d of it by its domain key and d. */
struct ut_kpool {
	struct pd_geom kp_g;
	uint32_t kp_nd;
	uint8_t kp_dom[PD_POOL_MAX];
	uint64_t kp_dkey[PD_POOL_MAX], kp_vkey[PD_POOL_MAX];
};

static void ut_kpool(struct ut_kpool *k, uint32_t n, uint32_t kk,
		     uint32_t sp, uint32_t nd, uint32_t per,
		     const uint32_t *names)
{
	k->kp_g = (struct pd_geom){n, kk, sp, nd * per, 20};
	k->kp_nd = nd;
	for (uint32_t j = 0; j < nd; j++) {
		k->kp_dkey[j] = st_mix64(0xd0d0 + names[j]);
		for (uint32_t d = 0; d < per; d++) {
			k->kp_dom[j * per + d] = (uint8_t)j;
			k->kp_vkey[j * per + d] = st_mix64(k->kp_dkey[j] ^
							   (d + 1));
		}
	}
}

static void ut_kmap(const struct ut_kpool *k, const struct st_id *id,
		    uint64_t grp, uint32_t *devs)
{
	pd_group_map_hrw(&k->kp_g, k->kp_dom, k->kp_nd, k->kp_dkey,
			 k->kp_vkey, id, grp, devs);
}

/*
 * Distinct devices; with at least width domains, every slot in its own
 * domain, with fewer, no domain two slots above another; pd_dev_slot_hrw() the inverse; the same input the same
 * output, and pinned values (a placement of a layout must never change).
 */
static void test_hrw_distinct(void)
{
	static const uint32_t shapes[][5] = { /* n k s domains per-domain */
		{4, 2, 1, 24, 10}, {4, 2, 1, 7, 1}, {4, 2, 1, 3, 4},
		{8, 2, 2, 5, 4},   {1, 2, 0, 3, 2}, {16, 4, 2, 25, 10},
		{4, 2, 1, 2, 4},
	};
	static const uint32_t golden[7] = {98, 122, 167, 22, 40, 109, 196};
	uint32_t names[PD_POOL_MAX], devs[ST_LAYOUT_UNITS_MAX];
	uint32_t again[ST_LAYOUT_UNITS_MAX];
	struct ut_kpool k;
	const struct st_id id0 = {0x0123456789abcdefull, 42};
	uint64_t rng = 11;
	unsigned bad = 0;

	for (uint32_t j = 0; j < PD_POOL_MAX; j++)
		names[j] = j;
	for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
		const uint32_t *sh = shapes[t];
		uint32_t w = sh[0] + sh[1] + sh[2], nd = sh[3];

		ut_kpool(&k, sh[0], sh[1], sh[2], nd, sh[4], names);
		CU_ASSERT_EQUAL_FATAL(pd_geom_check(&k.kp_g), 0);
		for (int i = 0; i < 3000; i++) {
			struct st_id id = ut_rand_id(&rng);
			uint64_t grp = ut_rand(&rng) % 100000;
			uint8_t seen[PD_POOL_MAX] = {0};
			uint32_t per_dom[PD_POOL_MAX] = {0}, lo = ~0u, hi = 0;

			ut_kmap(&k, &id, grp, devs);
			for (uint32_t u = 0; u < w; u++) {
				bad += devs[u] >= k.kp_g.pg_p || seen[devs[u]];
				if (devs[u] < k.kp_g.pg_p)
					seen[devs[u]] = 1;
			}
			for (uint32_t u = 0; u < w && nd >= w; u++)
				for (uint32_t v = 0; v < u; v++)
					bad += k.kp_dom[devs[u]] ==
					       k.kp_dom[devs[v]];
			for (uint32_t u = 0; u < w; u++)
				per_dom[k.kp_dom[devs[u]]]++;
			for (uint32_t j = 0; j < nd && nd < w; j++) {
				lo = per_dom[j] < lo ? per_dom[j] : lo;
				hi = per_dom[j] > hi ? per_dom[j] : hi;
			}
			bad += nd < w && hi > lo + 1;
			ut_kmap(&k, &id, grp, again);
			bad += memcmp(devs, again, w * sizeof devs[0]) != 0;
			for (uint32_t d = 0; d < k.kp_g.pg_p; d++) {
				int sl = pd_dev_slot_hrw(&k.kp_g, k.kp_dom,
							 k.kp_nd, k.kp_dkey,
							 k.kp_vkey, &id, grp,
							 d);

				bad += seen[d] ? sl < 0 || devs[sl] != d :
						 sl != -1;
			}
			bad += pd_dev_slot_hrw(&k.kp_g, k.kp_dom, k.kp_nd,
					       k.kp_dkey, k.kp_vkey, &id, grp,
					       k.kp_g.pg_p) != -1;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	ut_kpool(&k, 4, 2, 1, 24, 10, names);
	ut_kmap(&k, &id0, 13, devs);
	CU_ASSERT_EQUAL(memcmp(devs, golden, sizeof golden), 0);
	if (memcmp(devs, golden, sizeof golden) != 0)
		fprintf(stderr, "hrw golden: %u %u %u %u %u %u %u\n", devs[0],
			devs[1], devs[2], devs[3], devs[4], devs[5], devs[6]);
}

/*
 * The placement follows the keys, not the positions: the same domains
 * listed in another order (their devices renumbered with them) put every
 * slot on the same device (by key).
 */
static void test_hrw_order(void)
{
	uint32_t names[24], rev[24], a[7], b[7];
	struct ut_kpool k1, k2;
	uint64_t rng = 12;
	unsigned bad = 0;

	for (uint32_t j = 0; j < 24; j++) {
		names[j] = j;
		rev[j] = (j * 7 + 3) % 24; /* a permutation */
	}
	ut_kpool(&k1, 4, 2, 1, 24, 10, names);
	ut_kpool(&k2, 4, 2, 1, 24, 10, rev);
	for (int i = 0; i < 5000; i++) {
		struct st_id id = ut_rand_id(&rng);

		ut_kmap(&k1, &id, (uint64_t)i, a);
		ut_kmap(&k2, &id, (uint64_t)i, b);
		for (int u = 0; u < 7; u++)
			bad += k1.kp_vkey[a[u]] != k2.kp_vkey[b[u]];
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/*
 * A domain joining (the 25th of 24 x 10 devices) and one leaving, over
 * 40,000 groups of 4+2+1: the units moved are within 1.1 x the minimum
 * (the newcomer's units; the leaver's units; measured 1.028 and 1.030),
 * where pd_group_map_dom() moves nine in ten of all units.  Balance over the same groups: every device within 1.1 x the
 * mean (about 1,170 units a device: sd 3 %).
 */
static void test_hrw_movement(void)
{
	static uint32_t load[PD_POOL_MAX];
	uint32_t names[25], a[7], b[7], c[7];
	struct ut_kpool k0, kx, ky;
	uint64_t rng = 13, moved_x = 0, on_x = 0, moved_y = 0, on_y = 0;
	uint64_t max = 0, sum = 0;
	const uint32_t y = 9;

	for (uint32_t j = 0; j < 25; j++)
		names[j] = j;
	ut_kpool(&k0, 4, 2, 1, 24, 10, names);
	ut_kpool(&kx, 4, 2, 1, 25, 10, names);
	for (uint32_t j = y; j < 24; j++)
		names[j] = j + 1; /* domain y left: the others shift down */
	ut_kpool(&ky, 4, 2, 1, 23, 10, names);
	memset(load, 0, sizeof load);
	for (int i = 0; i < 40000; i++) {
		struct st_id id = ut_rand_id(&rng);

		ut_kmap(&k0, &id, 0, a);
		ut_kmap(&kx, &id, 0, b);
		ut_kmap(&ky, &id, 0, c);
		for (int u = 0; u < 6; u++) { /* data and parity */
			load[a[u]]++;
			on_x += kx.kp_dom[b[u]] == 24;
			moved_x += k0.kp_vkey[a[u]] != kx.kp_vkey[b[u]];
			on_y += k0.kp_dom[a[u]] == y;
			moved_y += k0.kp_vkey[a[u]] != ky.kp_vkey[c[u]];
		}
	}
	CU_ASSERT(on_x > 0 && moved_x >= on_x && moved_x * 10 <= on_x * 11);
	CU_ASSERT(on_y > 0 && moved_y >= on_y && moved_y * 10 <= on_y * 11);
	if (moved_x * 10 > on_x * 11 || moved_y * 10 > on_y * 11)
		fprintf(stderr, "hrw: join moved %llu for %llu, leave %llu for %llu\n",
		(unsigned long long)moved_x, (unsigned long long)on_x,
		(unsigned long long)moved_y, (unsigned long long)on_y);
	for (uint32_t d = 0; d < 240; d++) {
		sum += load[d];
		max = load[d] > max ? load[d] : max;
	}
	CU_ASSERT(max * 240 * 10 <= sum * 11);
}

int pdclust_ut_add(void)
{
	CU_pSuite p = CU_add_suite("pdclust", NULL, NULL);
	CU_pSuite e = CU_add_suite("ec", NULL, NULL);

	if (p == NULL || e == NULL ||
	    !CU_add_test(p, "geom_check", test_geom_check) ||
	    !CU_add_test(p, "distinct", test_distinct) ||
	    !CU_add_test(p, "balance", test_balance) ||
	    !CU_add_test(p, "balance_slots", test_balance_slots) ||
	    !CU_add_test(p, "decluster", test_decluster) ||
	    !CU_add_test(p, "decluster_detects", test_decluster_detects) ||
	    !CU_add_test(p, "deterministic", test_deterministic) ||
	    !CU_add_test(p, "dev_slot", test_dev_slot) ||
	    !CU_add_test(p, "hrw_distinct", test_hrw_distinct) ||
	    !CU_add_test(p, "hrw_order", test_hrw_order) ||
	    !CU_add_test(p, "hrw_movement", test_hrw_movement) ||
	    !CU_add_test(e, "create", test_ec_create) ||
	    !CU_add_test(e, "all_erasures", test_ec_all_erasures) ||
	    !CU_add_test(e, "random", test_ec_random) ||
	    !CU_add_test(e, "large", test_ec_large) ||
	    !CU_add_test(e, "parity_depends", test_ec_parity_depends) ||
	    !CU_add_test(e, "too_many", test_ec_too_many) ||
	    !CU_add_test(e, "crc", test_ec_crc) ||
	    !CU_add_test(e, "threads", test_ec_threads))
		return -1;
	return 0;
}
