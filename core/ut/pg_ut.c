/*
 * pg_ut.c — suite "pg": metadata placement groups (core/pg.h).  Pinned hash
 * values, pg_place() against a brute-force reference over random maps,
 * distinct enclosures and their fallback, exact minimal movement when a
 * server is added or removed, and the balance of a mid-size map (all
 * deterministic: every bound below is a fixed fact of the hashes, not a
 * timing or a chance).
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/pg.h"
#include "tests/ut.h"

int pg_ut_add(void);

#define PGU_MAX 256u

/* A map of n servers "s<i>", enclosure i / per_encl, all in. */
static void pgu_map(struct pg_cand *c, uint32_t n, uint32_t per_encl)
{
	for (uint32_t i = 0; i < n; i++) {
		char name[16];

		snprintf(name, sizeof name, "s%u", i);
		c[i].pc_key = pg_key(name);
		c[i].pc_encl = i / per_encl;
		c[i].pc_weight = 0;
		c[i].pc_in = true;
	}
}

/*
 * The contract of pg_place() written the slow way: sort the in candidates
 * by rank (pg_above(), stable), take each enclosure's first in that order
 * while places are left, then fill from the others in that order.
 */
static uint32_t pgu_ref(uint32_t pg, const struct pg_cand *c, uint32_t nr,
			uint32_t r, uint32_t *out)
{
	uint32_t ord[PGU_MAX], n = 0, got = 0;
	bool taken[PGU_MAX] = {false}, encl_used;

	for (uint32_t i = 0; i < nr; i++)
		if (c[i].pc_in)
			ord[n++] = i;
	for (uint32_t a = 1; a < n; a++)
		for (uint32_t b = a; b > 0 && pg_above(pg, &c[ord[b]],
						       &c[ord[b - 1]]); b--) {
			uint32_t t = ord[b];

			ord[b] = ord[b - 1];
			ord[b - 1] = t;
		}
	for (uint32_t a = 0; a < n && got < r; a++) {
		encl_used = false;
		for (uint32_t j = 0; j < got; j++)
			encl_used |= c[out[j]].pc_encl == c[ord[a]].pc_encl;
		if (!encl_used) {
			out[got++] = ord[a];
			taken[a] = true;
		}
	}
	for (uint32_t a = 0; a < n && got < r; a++)
		if (!taken[a])
			out[got++] = ord[a];
	return got;
}

/* The hashes are part of the cluster's format: pinned values. */
static void test_pg_pinned(void)
{
	const struct st_id ids[4] = {
		{0, 1024}, {1, 2}, {0x0123456789abcdefull, 0xfedcba9876543210ull},
		{~0ull, ~0ull}};
	const uint32_t big[4] = {40736, 325162, 551276, 838702};
	const uint32_t small[4] = {14, 119, 201, 307};
	const uint32_t sets[4][3] = {{3, 5, 1}, {5, 2, 1}, {4, 1, 2}, {3, 5, 1}};
	struct pg_cand c[6];

	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(pg_of(&ids[i], 1u << 20), big[i]);
		CU_ASSERT_EQUAL(pg_of(&ids[i], 384), small[i]);
		CU_ASSERT_EQUAL(pg_of(&ids[i], 1), 0);
		CU_ASSERT_EQUAL(pg_of(&ids[i], 0), 0);
	}
	CU_ASSERT_EQUAL(pg_key("s0"), 0xb0522f6b7216b7d0ull);
	CU_ASSERT_EQUAL(pg_key(""), 0xf52a15e9a9b5e89bull);
	CU_ASSERT_EQUAL(pg_score(7, pg_key("s0")), 0x5c4cada1d9b39d17ull);
	pgu_map(c, 6, 2);
	for (uint32_t g = 0; g < 4; g++) {
		uint32_t out[3];

		CU_ASSERT_EQUAL(pg_place(g, c, 6, 3, out), 3);
		CU_ASSERT(memcmp(out, sets[g], sizeof out) == 0);
	}
}

/* pg_of is uniform: 1M ids over 64 groups (16,384 each, sd 0.8 %) within
 * 5 % of the mean; and always below nr_pgs for odd sizes. */
static void test_pg_of_uniform(void)
{
	static uint32_t cnt[64];
	uint32_t max = 0, min = ~0u;

	memset(cnt, 0, sizeof cnt);
	for (uint64_t i = 0; i < (1u << 20); i++) {
		struct st_id id = {i >> 10, i * 3 + 1024};
		uint32_t g = pg_of(&id, 64);

		CU_ASSERT_FATAL(g < 64);
		CU_ASSERT_FATAL(pg_of(&id, 1000003) < 1000003);
		cnt[g]++;
	}
	for (int g = 0; g < 64; g++) {
		max = cnt[g] > max ? cnt[g] : max;
		min = cnt[g] < min ? cnt[g] : min;
	}
	CU_ASSERT(max <= 16384 * 105 / 100);
	CU_ASSERT(min >= 16384 * 95 / 100);
}

/* pg_place agrees with the reference on random maps: sizes 1..64, 1..8
 * enclosures or none shared, some servers out, r 1..8, every other map
 * with weights 0..4. */
static void test_pg_place_ref(void)
{
	uint64_t seed = 12345;

	for (uint32_t t = 0; t < 3000; t++) {
		struct pg_cand c[64];
		uint32_t out[PG_REPLICAS_MAX], ref[PG_REPLICAS_MAX];
		uint32_t n, encls, r;
		int got;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		n = 1 + (uint32_t)(seed >> 33) % 64;
		encls = 1 + (uint32_t)(seed >> 45) % 9;
		r = 1 + (uint32_t)(seed >> 52) % PG_REPLICAS_MAX;
		pgu_map(c, n, 1);
		for (uint32_t i = 0; i < n; i++) {
			c[i].pc_encl = encls == 9 ? i : (i * 7 + t) % encls;
			c[i].pc_in = (i + t) % 5 != 0;
			c[i].pc_weight = t % 2 ? (i * 13 + t) % 5 : 0;
		}
		got = pg_place(t, c, n, r, out);
		CU_ASSERT_FATAL(got >= 0);
		CU_ASSERT_EQUAL_FATAL((uint32_t)got, pgu_ref(t, c, n, r, ref));
		CU_ASSERT_FATAL(memcmp(out, ref, (size_t)got * 4) == 0);
	}
}

/* Enough enclosures: r distinct enclosures, primary the best score. */
static void test_pg_distinct_encl(void)
{
	struct pg_cand c[40];

	pgu_map(c, 40, 4); /* 10 enclosures of 4 */
	for (uint32_t g = 0; g < 5000; g++) {
		uint32_t out[5];

		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, 40, 5, out), 5);
		for (int a = 0; a < 5; a++)
			for (int b = a + 1; b < 5; b++)
				CU_ASSERT_FATAL(c[out[a]].pc_encl !=
						c[out[b]].pc_encl);
		for (uint32_t i = 0; i < 40; i++)
			CU_ASSERT_FATAL(pg_score(g, c[i].pc_key) <=
					pg_score(g, c[out[0]].pc_key));
	}
}

/* Fewer enclosures than r: each enclosure once, then distinct servers;
 * fewer servers in than r: all of them. */
static void test_pg_fallback(void)
{
	struct pg_cand c[8];
	uint32_t out[PG_REPLICAS_MAX];

	pgu_map(c, 8, 4); /* 2 enclosures of 4 */
	for (uint32_t g = 0; g < 2000; g++) {
		bool e0 = false, e1 = false;

		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, 8, 3, out), 3);
		CU_ASSERT_FATAL(out[0] != out[1] && out[1] != out[2] &&
				out[0] != out[2]);
		for (int a = 0; a < 3; a++) {
			e0 |= c[out[a]].pc_encl == 0;
			e1 |= c[out[a]].pc_encl == 1;
		}
		CU_ASSERT_FATAL(e0 && e1);
		/* Both enclosures' leaders come first. */
		CU_ASSERT_FATAL(c[out[0]].pc_encl != c[out[1]].pc_encl);
	}
	for (int i = 0; i < 8; i++)
		c[i].pc_encl = 0; /* one enclosure */
	CU_ASSERT_EQUAL(pg_place(1, c, 8, 8, out), 8);
	for (int i = 2; i < 8; i++)
		c[i].pc_in = false;
	CU_ASSERT_EQUAL(pg_place(1, c, 8, 3, out), 2);
	CU_ASSERT(out[0] <= 1 && out[1] <= 1 && out[0] != out[1]);
	c[0].pc_in = c[1].pc_in = false;
	CU_ASSERT_EQUAL(pg_place(1, c, 8, 3, out), 0);
	CU_ASSERT_EQUAL(pg_place(1, NULL, 0, 3, NULL), 0);
}

static void test_pg_errors(void)
{
	struct pg_cand c[2];
	uint32_t out[PG_REPLICAS_MAX + 1];

	pgu_map(c, 2, 1);
	CU_ASSERT_EQUAL(pg_place(0, c, 2, 0, out), -EINVAL);
	CU_ASSERT_EQUAL(pg_place(0, c, 2, PG_REPLICAS_MAX + 1, out), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "replicas"));
	CU_ASSERT_EQUAL(pg_place(0, c, PG_CANDS_MAX + 1, 3, out), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "candidates"));
	CU_ASSERT_EQUAL(pg_place(0, NULL, 2, 3, out), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "cands"));
	CU_ASSERT_EQUAL(pg_place(0, c, 2, 3, NULL), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "out"));
}

/* Members of a not in b (sets of r indices). */
static uint32_t pgu_diff(const uint32_t *a, const uint32_t *b, uint32_t r)
{
	uint32_t d = 0;

	for (uint32_t i = 0; i < r; i++) {
		bool in = false;

		for (uint32_t j = 0; j < r; j++)
			in |= a[i] == b[j];
		d += !in;
	}
	return d;
}

static bool pgu_has(const uint32_t *a, uint32_t r, uint32_t x)
{
	for (uint32_t i = 0; i < r; i++)
		if (a[i] == x)
			return true;
	return false;
}

/*
 * Add server x (the last of the map, pc_in false before): the groups whose
 * sets change are exactly those whose new set holds x, each by exactly one
 * member; then remove a server y: exactly the groups that held y change,
 * each by one.  per_encl 8 over 24 servers gives 3 enclosures (r = 3: the
 * distinct-enclosure path); per_encl 12 gives 2 (the fallback path).  all:
 * x brings the r-th enclosure to a map of fewer, so every group must take
 * it (still in place of one member each).
 */
static bool pgu_movement(uint32_t per_encl, uint32_t x_encl, bool all)
{
	enum { N = 25, R = 3, P = 4096 };
	struct pg_cand c[N];
	uint32_t moved_add = 0, share_add = 0, moved_rm = 0, share_rm = 0;
	const uint32_t y = 5;

	pgu_map(c, N, per_encl);
	c[N - 1].pc_encl = x_encl;
	for (uint32_t g = 0; g < P; g++) {
		uint32_t before[R], after[R], gone[R];

		c[N - 1].pc_in = false;
		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, N, R, before), R);
		c[N - 1].pc_in = true;
		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, N, R, after), R);
		if (pgu_has(after, R, N - 1)) {
			share_add++;
			CU_ASSERT_EQUAL_FATAL(pgu_diff(after, before, R), 1);
		} else {
			CU_ASSERT_FATAL(memcmp(after, before, sizeof after) == 0);
		}
		moved_add += pgu_diff(after, before, R);
		c[y].pc_in = false;
		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, N, R, gone), R);
		c[y].pc_in = true;
		if (pgu_has(after, R, y)) {
			share_rm++;
			CU_ASSERT_EQUAL_FATAL(pgu_diff(after, gone, R), 1);
		} else {
			CU_ASSERT_FATAL(memcmp(after, gone, sizeof gone) == 0);
		}
		moved_rm += pgu_diff(after, gone, R);
	}
	/* Moved replicas = the server's own replicas, and about R * P / N. */
	CU_ASSERT_EQUAL(moved_add, share_add);
	CU_ASSERT_EQUAL(moved_rm, share_rm);
	if (all)
		CU_ASSERT_EQUAL(share_add, P);
	if (!all)
		CU_ASSERT(share_add > R * P / N / 2 &&
			  share_add < R * P / N * 2);
	CU_ASSERT(share_rm > R * P / N / 2 && share_rm < R * P / N * 2);
	/* the same facts, for the caller */
	return moved_add == share_add && moved_rm == share_rm &&
	       (all ? share_add == P : share_add > R * P / N / 2 &&
					share_add < R * P / N * 2) &&
	       share_rm > R * P / N / 2 && share_rm < R * P / N * 2;
}

static void test_pg_move_encl(void)
{
	/* x joins an existing enclosure, then brings a new one */
	CU_ASSERT(pgu_movement(8, 1, false));
	CU_ASSERT(pgu_movement(8, 99, false));
}

static void test_pg_move_fallback(void)
{
	/* 2 enclosures, r = 3; then x brings the third enclosure */
	CU_ASSERT(pgu_movement(12, 0, false));
	CU_ASSERT(pgu_movement(12, 99, true));
}

/*
 * Balance on a mid-size map: 100 servers in 10 enclosures, 128 groups per
 * server, R = 3: 384 replicas per server on average.  HRW is a random
 * placement, so the spread is binomial: sd sqrt(384) = 19.6, 5 % of the
 * mean.  Measured for these hashes: sd 19.2, replicas per server 335..455
 * (0.87..1.18 x the mean), primaries 102..153 (0.80..1.20 x 128),
 * enclosures 3,734..3,935 (-2.8..+2.5 %).  The bounds below hold that
 * with a little room and catch a placement that stops spreading (a server
 * or an enclosure favoured by the hash).  That is also why a balance of
 * 5 % per server needs thousands of groups per server (tests/sim).
 */
static void test_pg_balance(void)
{
	enum { N = 100, R = 3, P = N * 128 };
	static uint32_t reps[N], prim[N], encl[10];
	struct pg_cand c[N];
	uint32_t rmax = 0, rmin = ~0u, pmax = 0, pmin = ~0u;

	memset(reps, 0, sizeof reps);
	memset(prim, 0, sizeof prim);
	memset(encl, 0, sizeof encl);
	pgu_map(c, N, 10);
	for (uint32_t g = 0; g < P; g++) {
		uint32_t out[R];

		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, N, R, out), R);
		prim[out[0]]++;
		for (int a = 0; a < R; a++) {
			reps[out[a]]++;
			encl[c[out[a]].pc_encl]++;
		}
	}
	for (int i = 0; i < N; i++) {
		rmax = reps[i] > rmax ? reps[i] : rmax;
		rmin = reps[i] < rmin ? reps[i] : rmin;
		pmax = prim[i] > pmax ? prim[i] : pmax;
		pmin = prim[i] < pmin ? prim[i] : pmin;
	}
	CU_ASSERT(rmax <= 384 * 120 / 100);
	CU_ASSERT(rmin >= 384 * 85 / 100);
	CU_ASSERT(pmax <= 128 * 125 / 100);
	CU_ASSERT(pmin >= 128 * 75 / 100);
	/* Enclosures hold 3,840 replicas each on average: within 3 %. */
	for (int e = 0; e < 10; e++)
		CU_ASSERT(encl[e] >= 3840 * 97 / 100 &&
			  encl[e] <= 3840 * 103 / 100);
}

/* Equal weights, whatever their value, rank by score alone: the pinned
 * sets again with every weight 7, and pg_above() is the score order. */
static void test_pg_weight_equal(void)
{
	struct pg_cand c[40];
	uint32_t a[3], b[3];

	pgu_map(c, 40, 4);
	for (uint32_t g = 0; g < 2000; g++) {
		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, 40, 3, a), 3);
		for (int i = 0; i < 40; i++)
			c[i].pc_weight = 7;
		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, 40, 3, b), 3);
		CU_ASSERT_FATAL(memcmp(a, b, sizeof a) == 0);
		for (int i = 0; i < 40; i++)
			c[i].pc_weight = 0;
		for (int i = 1; i < 40; i++)
			CU_ASSERT_FATAL(pg_above(g, &c[i - 1], &c[i]) ==
					(pg_score(g, c[i - 1].pc_key) >
					 pg_score(g, c[i].pc_key)));
	}
}

/* Servers of weight 1 and 3 alternating, each its own enclosure, R = 1
 * over 40,000 groups: how many groups the heavy ones win. */
static uint32_t pgu_heavy(struct pg_cand *c, uint32_t n)
{
	uint32_t heavy = 0;

	pgu_map(c, n, 1);
	for (uint32_t i = 0; i < n; i++)
		c[i].pc_weight = i % 2 ? 3 : 1;
	for (uint32_t g = 0; g < 40000; g++) {
		uint32_t out[1];

		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, n, 1, out), 1);
		heavy += out[0] % 2;
	}
	return heavy;
}

/*
 * Weights give proportional shares: the heavy half of the servers (weight
 * 3 against 1) holds 3/4 of the groups, 30,000 (sd 87).  Measured 29,996
 * of 20 servers (winners' L about 1/40: the table) and 29,988 of 1,000
 * (L about 1/2,000: the series); bound +-1 %.  Then one server's weight
 * doubles: the groups that change all go to it, each by one member.
 */
static void test_pg_weight_share(void)
{
	static struct pg_cand big[1000];
	struct pg_cand c[20];
	uint32_t heavy, got_more = 0, moved = 0;

	heavy = pgu_heavy(c, 20);
	CU_ASSERT(heavy >= 29700 && heavy <= 30300);
	heavy = pgu_heavy(big, 1000);
	CU_ASSERT(heavy >= 29700 && heavy <= 30300);
	for (uint32_t g = 0; g < 8000; g++) {
		uint32_t before[3], after[3];

		c[4].pc_weight = 1;
		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, 20, 3, before), 3);
		c[4].pc_weight = 2;
		CU_ASSERT_EQUAL_FATAL(pg_place(g, c, 20, 3, after), 3);
		if (pgu_has(after, 3, 4) && !pgu_has(before, 3, 4)) {
			got_more++;
			CU_ASSERT_EQUAL_FATAL(pgu_diff(after, before, 3), 1);
		} else {
			CU_ASSERT_FATAL(pgu_diff(after, before, 3) == 0);
		}
		moved += pgu_diff(after, before, 3);
	}
	CU_ASSERT(got_more > 0);
	CU_ASSERT_EQUAL(moved, got_more);
}

/* ----------------------------------------------------- balancing */

enum { PGB_N = 100, PGB_R = 3, PGB_P = PGB_N * 128 };

/* HRW sets of every group over c (entries past a count UINT32_MAX). */
static void pgb_sets(const struct pg_cand *c, uint32_t nr, uint32_t *sets)
{
	for (uint32_t g = 0; g < PGB_P; g++) {
		int n = pg_place(g, c, nr, PGB_R, &sets[g * PGB_R]);

		CU_ASSERT_FATAL(n > 0);
		for (int i = n; i < PGB_R; i++)
			sets[g * PGB_R + i] = UINT32_MAX;
	}
}

/* The sets with the table applied, the load of each server (sizes NULL:
 * 1 a group), and whether every set holds distinct servers spanning as
 * many enclosures as its HRW set. */
static bool pgb_apply(const struct pg_cand *c, uint32_t nr,
		      const uint32_t *sets, const struct pg_upmap *up,
		      uint32_t nup, const uint64_t *sizes, uint32_t *eff,
		      uint64_t *load)
{
	bool ok = true;

	memset(load, 0, nr * sizeof *load);
	for (uint32_t g = 0; g < PGB_P; g++) {
		const uint32_t *raw = &sets[g * PGB_R];
		uint32_t *e = &eff[g * PGB_R], er = 0, ee = 0;

		pg_upmap_apply(g, c, nr, up, nup, raw, PGB_R, e);
		for (uint32_t i = 0; i < PGB_R; i++) {
			bool nr_first = true, ne_first = true;

			load[e[i]] += sizes ? sizes[g] : 1;
			for (uint32_t j = 0; j < i; j++) {
				ok &= e[i] != e[j];
				nr_first &= c[raw[i]].pc_encl != c[raw[j]].pc_encl;
				ne_first &= c[e[i]].pc_encl != c[e[j]].pc_encl;
			}
			er += nr_first;
			ee += ne_first;
			ok &= c[e[i]].pc_in;
		}
		ok &= ee >= er;
	}
	return ok;
}

/* Max load over its share (weights: pc_weight, 0 = 1), in millionths. */
static uint64_t pgb_max_ppm(const struct pg_cand *c, uint32_t nr,
			    const uint64_t *load)
{
	uint64_t tot = 0, wsum = 0, worst = 0;

	for (uint32_t i = 0; i < nr; i++)
		if (c[i].pc_in) {
			tot += load[i];
			wsum += c[i].pc_weight ? c[i].pc_weight : 1;
		}
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t w = c[i].pc_weight ? c[i].pc_weight : 1, v;

		if (!c[i].pc_in)
			continue;
		v = (uint64_t)((unsigned __int128)load[i] * wsum * 1000000u /
			       ((unsigned __int128)tot * w));
		worst = v > worst ? v : worst;
	}
	return worst;
}

/* Replicas (weighted by sizes) in b's sets that a's lack. */
static uint64_t pgb_moved(const uint32_t *a, const uint32_t *b,
			  const uint64_t *sizes)
{
	uint64_t m = 0;

	for (uint32_t g = 0; g < PGB_P; g++)
		m += (uint64_t)pgu_diff(&b[g * PGB_R], &a[g * PGB_R], PGB_R) *
		     (sizes ? sizes[g] : 1);
	return m;
}

/*
 * 100 servers in 10 enclosures, 128 groups a server, R = 3: HRW alone
 * puts up to 1.18 x the mean on a server (test balance above); with the
 * table of pg_balance(tol 3 %) none is above 1.03 x, every set stays
 * distinct over as many enclosures, a second run over the table in
 * force adds nothing (a balanced map stays as it is), and two runs give
 * the same bytes.
 */
static void test_pg_upmap_balance(void)
{
	static uint32_t sets[PGB_P * PGB_R], eff[PGB_P * PGB_R];
	static uint64_t load[PGB_N];
	struct pg_cand c[PGB_N];
	struct pg_upmap *up = NULL, *up2 = NULL, *up3 = NULL;
	uint32_t nup = 0, nup2 = 0, nup3 = 0;

	pgu_map(c, PGB_N, 10);
	pgb_sets(c, PGB_N, sets);
	CU_ASSERT_TRUE(pgb_apply(c, PGB_N, sets, NULL, 0, NULL, eff, load));
	CU_ASSERT(pgb_max_ppm(c, PGB_N, load) > 1100000);
	CU_ASSERT_EQUAL_FATAL(pg_balance(c, PGB_N, PGB_P, PGB_R, sets, NULL,
					 NULL, 30000, NULL, 0, &up, &nup), 0);
	CU_ASSERT(nup > 0 && nup < PGB_P * PGB_R / 20);
	CU_ASSERT_TRUE(pgb_apply(c, PGB_N, sets, up, nup, NULL, eff, load));
	CU_ASSERT(pgb_max_ppm(c, PGB_N, load) <= 1030000);
	/* every exception applies: as many cells differ as it has */
	{
		uint32_t diff = 0;

		for (uint32_t i = 0; i < PGB_P * PGB_R; i++)
			diff += eff[i] != sets[i];
		CU_ASSERT_EQUAL(diff, nup);
	}
	for (uint32_t k = 1; k < nup; k++)
		CU_ASSERT_FATAL(up[k - 1].pu_pg <= up[k].pu_pg);
	CU_ASSERT_EQUAL_FATAL(pg_balance(c, PGB_N, PGB_P, PGB_R, sets, NULL,
					 NULL, 30000, up, nup, &up2, &nup2), 0);
	CU_ASSERT_EQUAL(nup2, nup);
	CU_ASSERT(nup2 == nup && memcmp(up, up2, nup * sizeof *up) == 0);
	CU_ASSERT_EQUAL_FATAL(pg_balance(c, PGB_N, PGB_P, PGB_R, sets, NULL,
					 NULL, 30000, NULL, 0, &up3, &nup3), 0);
	CU_ASSERT(nup3 == nup && memcmp(up, up3, nup * sizeof *up) == 0);
	/* pg_place_up() is pg_place() then the table */
	for (uint32_t g = 0; g < PGB_P; g += 7) {
		uint32_t out[PGB_R];

		CU_ASSERT_EQUAL_FATAL(pg_place_up(g, c, PGB_N, PGB_R, up, nup,
						  out), PGB_R);
		CU_ASSERT_FATAL(memcmp(out, &eff[g * PGB_R], sizeof out) == 0);
	}
	free(up);
	free(up2);
	free(up3);
}

/* The map c as it is now balanced again from the table in force (up,
 * nup) and the sets before (eff): its sets and loads in eff2 and load2
 * (sets2 its HRW sets); returns the replicas moved from eff. */
static uint64_t pgb_again(const struct pg_cand *c, uint32_t *sets2,
			  const uint32_t *eff, const struct pg_upmap *up,
			  uint32_t nup, uint32_t *eff2, uint64_t *load2)
{
	struct pg_upmap *up2 = NULL;
	uint32_t nup2 = 0;

	pgb_sets(c, PGB_N + 1, sets2);
	CU_ASSERT_EQUAL_FATAL(pg_balance(c, PGB_N + 1, PGB_P, PGB_R, sets2,
					 eff, NULL, 30000, up, nup, &up2,
					 &nup2), 0);
	CU_ASSERT_TRUE(pgb_apply(c, PGB_N + 1, sets2, up2, nup2, NULL, eff2,
				 load2));
	free(up2);
	return pgb_moved(eff, eff2, NULL);
}

/*
 * A server added (the 101st, in enclosure 3) and one removed, each time
 * balanced again from the table in force and the sets before (prev): the
 * map stays within its limit and the replicas moved are the minimum (the
 * new server's share; the removed server's replicas) within 1 %: measured
 * 379 of 380 and 380 of 380.  (Without the fresh-first pass the removal
 * moved 388; with settled replicas trimmed below the limit the add moved
 * 391: both fail here.  The goal of issue 28 is 1.1 x.)
 */
static void test_pg_upmap_move(void)
{
	static uint32_t sets[PGB_P * PGB_R], sets2[PGB_P * PGB_R];
	static uint32_t eff[PGB_P * PGB_R], eff2[PGB_P * PGB_R];
	static uint64_t load[PGB_N + 1], load2[PGB_N + 1];
	struct pg_cand c[PGB_N + 1];
	struct pg_upmap *up = NULL;
	uint32_t nup = 0;
	uint64_t moved, minimum;

	pgu_map(c, PGB_N + 1, 10);
	c[PGB_N].pc_encl = 3;
	c[PGB_N].pc_in = false;
	pgb_sets(c, PGB_N + 1, sets);
	CU_ASSERT_EQUAL_FATAL(pg_balance(c, PGB_N + 1, PGB_P, PGB_R, sets,
					 NULL, NULL, 30000, NULL, 0, &up,
					 &nup), 0);
	CU_ASSERT_TRUE(pgb_apply(c, PGB_N + 1, sets, up, nup, NULL, eff,
				 load));
	/* add */
	c[PGB_N].pc_in = true;
	moved = pgb_again(c, sets2, eff, up, nup, eff2, load2);
	CU_ASSERT(pgb_max_ppm(c, PGB_N + 1, load2) <= 1030000);
	minimum = (uint64_t)PGB_P * PGB_R / (PGB_N + 1);
	CU_ASSERT(load2[PGB_N] > 0 && moved >= load2[PGB_N]);
	CU_ASSERT(moved * 100 <= minimum * 101);
	if (moved * 100 > minimum * 101)
		fprintf(stderr, "add: moved %llu, minimum %llu\n",
			(unsigned long long)moved, (unsigned long long)minimum);
	/* remove server 5 from the first map */
	c[PGB_N].pc_in = false;
	c[5].pc_in = false;
	moved = pgb_again(c, sets2, eff, up, nup, eff2, load2);
	CU_ASSERT_EQUAL(load2[5], 0);
	CU_ASSERT(pgb_max_ppm(c, PGB_N + 1, load2) <= 1030000);
	CU_ASSERT(moved >= load[5] && moved * 100 <= load[5] * 101);
	if (moved * 100 > load[5] * 101)
		fprintf(stderr, "rm: moved %llu, the server held %llu\n",
			(unsigned long long)moved, (unsigned long long)load[5]);
	free(up);
}

/*
 * Exceptions that do not apply are skipped, each for its reason: a pu_to
 * that is out or unknown, a pu_to already in the set, a pu_from not in
 * the HRW set, a swap that would put two replicas in one enclosure; a
 * valid one replaces its member in place (the primary's place too).
 */
static void test_pg_upmap_apply(void)
{
	struct pg_cand c[12];
	uint32_t raw[3], out[3], other = UINT32_MAX, same = UINT32_MAX;
	struct pg_upmap up[1];
	const uint32_t g = 17;

	pgu_map(c, 12, 2); /* 6 enclosures of 2 */
	CU_ASSERT_EQUAL_FATAL(pg_place(g, c, 12, 3, raw), 3);
	for (uint32_t i = 0; i < 12; i++) {
		bool used = false;

		for (int k = 0; k < 3; k++)
			used |= c[raw[k]].pc_encl == c[i].pc_encl;
		if (!used && other == UINT32_MAX)
			other = i;
		if (used && !pgu_has(raw, 3, i) && same == UINT32_MAX)
			same = i;
	}
	CU_ASSERT_FATAL(other != UINT32_MAX && same != UINT32_MAX);
	/* valid: the primary's place goes to other */
	up[0] = (struct pg_upmap){g, 0, c[raw[0]].pc_key, c[other].pc_key};
	CU_ASSERT_EQUAL(pg_place_up(g, c, 12, 3, up, 1, out), 3);
	CU_ASSERT(out[0] == other && out[1] == raw[1] && out[2] == raw[2]);
	/* another group: untouched */
	{
		uint32_t raw1[3];

		CU_ASSERT_EQUAL(pg_place(g + 1, c, 12, 3, raw1), 3);
		CU_ASSERT_EQUAL(pg_place_up(g + 1, c, 12, 3, up, 1, out), 3);
		CU_ASSERT(memcmp(out, raw1, sizeof raw1) == 0);
	}
	/* pu_to out of the map */
	c[other].pc_in = false;
	CU_ASSERT_EQUAL(pg_place_up(g, c, 12, 3, up, 1, out), 3);
	CU_ASSERT(memcmp(out, raw, sizeof raw) == 0);
	c[other].pc_in = true;
	/* pu_to unknown */
	up[0].pu_to = pg_key("nobody");
	CU_ASSERT_EQUAL(pg_place_up(g, c, 12, 3, up, 1, out), 3);
	CU_ASSERT(memcmp(out, raw, sizeof raw) == 0);
	/* pu_to already a member */
	up[0].pu_to = c[raw[1]].pc_key;
	CU_ASSERT_EQUAL(pg_place_up(g, c, 12, 3, up, 1, out), 3);
	CU_ASSERT(memcmp(out, raw, sizeof raw) == 0);
	/* pu_to in an enclosure the set already spans (two of three would
	 * then share one) */
	up[0] = (struct pg_upmap){g, 0, c[raw[0]].pc_key, c[same].pc_key};
	if (c[same].pc_encl == c[raw[0]].pc_encl) {
		/* same enclosure as the member it replaces: allowed */
		CU_ASSERT_EQUAL(pg_place_up(g, c, 12, 3, up, 1, out), 3);
		CU_ASSERT_EQUAL(out[0], same);
	} else {
		CU_ASSERT_EQUAL(pg_place_up(g, c, 12, 3, up, 1, out), 3);
		CU_ASSERT(memcmp(out, raw, sizeof raw) == 0);
	}
	/* pu_from not an HRW member */
	up[0] = (struct pg_upmap){g, 0, c[other].pc_key, c[same].pc_key};
	CU_ASSERT_EQUAL(pg_place_up(g, c, 12, 3, up, 1, out), 3);
	CU_ASSERT(memcmp(out, raw, sizeof raw) == 0);
}

/*
 * Weights and sizes: a server of weight 2 gets twice the share, and with
 * group sizes (objects per group, 1..64 here) the loads in size stay
 * within the limit; bad arguments are refused naming them.
 */
static void test_pg_upmap_weights(void)
{
	static uint32_t sets[PGB_P * PGB_R], eff[PGB_P * PGB_R];
	static uint64_t load[PGB_N], sizes[PGB_P];
	struct pg_cand c[PGB_N];
	struct pg_upmap *up = NULL;
	uint32_t nup = 0;

	pgu_map(c, PGB_N, 10);
	c[7].pc_weight = 2;
	for (uint32_t i = 0; i < PGB_N; i++)
		c[i].pc_weight = c[i].pc_weight ? 2 : 1;
	for (uint32_t g = 0; g < PGB_P; g++)
		sizes[g] = 1 + pg_score(g, 42) % 64;
	pgb_sets(c, PGB_N, sets);
	CU_ASSERT_EQUAL_FATAL(pg_balance(c, PGB_N, PGB_P, PGB_R, sets, NULL,
					 sizes, 30000, NULL, 0, &up, &nup), 0);
	CU_ASSERT_TRUE(pgb_apply(c, PGB_N, sets, up, nup, sizes, eff, load));
	CU_ASSERT(pgb_max_ppm(c, PGB_N, load) <= 1030000);
	CU_ASSERT(load[7] > load[8] * 3 / 2);
	free(up);
	up = NULL;
	err_clear();
	CU_ASSERT_EQUAL(pg_balance(c, PGB_N, PGB_P, 0, sets, NULL, NULL,
				   30000, NULL, 0, &up, &nup), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "r = 0"));
	CU_ASSERT_EQUAL(pg_balance(c, PGB_N, PGB_P, PGB_R, NULL, NULL, NULL,
				   30000, NULL, 0, &up, &nup), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "sets"));
	CU_ASSERT_EQUAL(pg_balance(c, PGB_N, PGB_P, PGB_R, sets, NULL, NULL,
				   30000, NULL, 3, &up, &nup), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "old"));
	c[sets[0]].pc_in = false;
	CU_ASSERT_EQUAL(pg_balance(c, PGB_N, PGB_P, PGB_R, sets, NULL, NULL,
				   30000, NULL, 0, &up, &nup), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "not an in candidate"));
	CU_ASSERT_PTR_NULL(up);
	CU_ASSERT_EQUAL(nup, 0);
}

int pg_ut_add(void)
{
	CU_pSuite s = CU_add_suite("pg", NULL, NULL);

	if (s == NULL || !CU_add_test(s, "pinned", test_pg_pinned) ||
	    !CU_add_test(s, "of_uniform", test_pg_of_uniform) ||
	    !CU_add_test(s, "place_ref", test_pg_place_ref) ||
	    !CU_add_test(s, "distinct_encl", test_pg_distinct_encl) ||
	    !CU_add_test(s, "fallback", test_pg_fallback) ||
	    !CU_add_test(s, "errors", test_pg_errors) ||
	    !CU_add_test(s, "move_encl", test_pg_move_encl) ||
	    !CU_add_test(s, "move_fallback", test_pg_move_fallback) ||
	    !CU_add_test(s, "balance", test_pg_balance) ||
	    !CU_add_test(s, "weight_equal", test_pg_weight_equal) ||
	    !CU_add_test(s, "weight_share", test_pg_weight_share) ||
	    !CU_add_test(s, "upmap_balance", test_pg_upmap_balance) ||
	    !CU_add_test(s, "upmap_move", test_pg_upmap_move) ||
	    !CU_add_test(s, "upmap_apply", test_pg_upmap_apply) ||
	    !CU_add_test(s, "upmap_weights", test_pg_upmap_weights))
		return -1;
	return 0;
}
