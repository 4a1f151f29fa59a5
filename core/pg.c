/* pg.c — metadata placement groups: pg_of() and HRW placement (pg.h). */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/errors.h"
#include "core/pg.h"

#define PG_SALT_ID 0x7067706c6163652eull    /* "pgplace." */
#define PG_SALT_SCORE 0x7067736372652e2eull /* "pgscre.." */

uint32_t pg_of(const struct st_id *id, uint32_t nr_pgs)
{
	uint64_t h = st_mix64(id->si_hi ^ st_mix64(id->si_lo ^ PG_SALT_ID));

	return (uint32_t)(((unsigned __int128)h * nr_pgs) >> 64);
}

uint64_t pg_key(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return st_mix64(h);
}

uint64_t pg_score(uint32_t pg, uint64_t key)
{
	return st_mix64(st_mix64(pg ^ PG_SALT_SCORE) ^ key);
}

/* log2(1 + i/128) in Q0.32, i = 0..128 (computed once, offline: a table,
 * not libm, so that every machine gets the same bits). */
static const uint64_t pg_log2_tab[129] = {
	0x000000000ull, 0x002dfca17ull, 0x005b9e5a1ull, 0x0088e68ebull,
	0x00b5d69bbull, 0x00e26fd5dull, 0x010eb38a0ull, 0x013aa2fddull,
	0x01663f6fbull, 0x01918a16eull, 0x01bc84241ull, 0x01e72ec11ull,
	0x02118b11aull, 0x023b9a32full, 0x02655d3c5ull, 0x028ed53f3ull,
	0x02b803474ull, 0x02e0e85aaull, 0x0309857a0ull, 0x0331dba0full,
	0x0359ebc5bull, 0x0381b6d9cull, 0x03a93dc98ull, 0x03d0817cfull,
	0x03f782d72ull, 0x041e42b6full, 0x0444c1f6bull, 0x046b016caull,
	0x049101eacull, 0x04b6c43f1ull, 0x04dc4933bull, 0x0501918ecull,
	0x05269e12full, 0x054b6f7f1ull, 0x0570068e8ull, 0x059463f92ull,
	0x05b888736ull, 0x05dc74aeaull, 0x06002958cull, 0x0623a71ccull,
	0x0646eea24ull, 0x066a008e4ull, 0x068cdd82aull, 0x06af861e6ull,
	0x06d1fafddull, 0x06f43cba8ull, 0x07164beb5ull, 0x073829249ull,
	0x0759d4f81ull, 0x077b4ff51ull, 0x079c9aa88ull, 0x07bdb59cdull,
	0x07dea15a3ull, 0x07ff5e66aull, 0x081fed45dull, 0x08404e794ull,
	0x086082807ull, 0x088089d8bull, 0x08a064fd5ull, 0x08c01467cull,
	0x08df988f5ull, 0x08fef1e98ull, 0x091e20ea1ull, 0x093d2602cull,
	0x095c01a3aull, 0x097ab43afull, 0x09993e356ull, 0x09b79ffdbull,
	0x09d5d9fd5ull, 0x09f3ec9bdull, 0x0a11d83f5ull, 0x0a2f9d4c5ull,
	0x0a4d3c25eull, 0x0a6ab52daull, 0x0a8808c38ull, 0x0aa537465ull,
	0x0ac241135ull, 0x0adf26866ull, 0x0afbe7fa1ull, 0x0b1885c7bull,
	0x0b3500472ull, 0x0b5157cf3ull, 0x0b6d8cb54ull, 0x0b899f4d9ull,
	0x0ba58feb2ull, 0x0bc15edffull, 0x0bdd0c7caull, 0x0bf89910cull,
	0x0c1404eaeull, 0x0c2f50586ull, 0x0c4a7ba58ull, 0x0c65871daull,
	0x0c80730b0ull, 0x0c9b3fb6dull, 0x0cb5ed695ull, 0x0cd07c69eull,
	0x0ceaecfebull, 0x0d053f6d2ull, 0x0d1f73f9cull, 0x0d398ae81ull,
	0x0d53847acull, 0x0d6d60f39ull, 0x0d8720936ull, 0x0da0c39a5ull,
	0x0dba4a47bull, 0x0dd3b4d9dull, 0x0ded038e6ull, 0x0e0636a24ull,
	0x0e1f4e517ull, 0x0e384ad75ull, 0x0e512c6e5ull, 0x0e69f3506ull,
	0x0e829fb69ull, 0x0e9b31d94ull, 0x0eb3a9f02ull, 0x0ecc08322ull,
	0x0ee44cd5aull, 0x0efc78104ull, 0x0f148a170ull, 0x0f2c831e4ull,
	0x0f446359bull, 0x0f5c2afc6ull, 0x0f73da38eull, 0x0f8b7140full,
	0x0fa2f045eull, 0x0fba57787ull, 0x0fd1a708cull, 0x0fe8df264ull,
	0x100000000ull,
};

/* log2(e) in Q1.63. */
#define PG_LOG2E 0xb8aa3b295c17f0bcull

static uint64_t pg_mulhi(uint64_t a, uint64_t b)
{
	return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/*
 * L = -log2(u) in Q6.58 (L <= 53), u = y / 2^53, y = (score >> 11) + 1
 * (pg.h, "weight").  The servers that win have the smallest L, so L needs
 * a small relative error there: for t = 1 - u < 1/16, the series
 * -ln(1 - t) = t + t^2/2 + t^3/3 + t^4/4 (in Q0.64, relative error under
 * t^4/5 = 3e-6) times log2(e); above, 53 - log2(y) with log2 from the
 * exponent and the table, linearly interpolated (absolute error under
 * 1.2e-5, relative under 1.3e-4 since L >= 0.093 there).  Both branches
 * are monotone, and the series (which drops positive terms) lies under
 * the table (whose interpolation of a concave log2 lies under it) at
 * their border, so L never rises with the score: with equal weights the
 * rank is exactly the score order.
 */
static uint64_t pg_len(uint64_t score)
{
	uint64_t y = (score >> 11) + 1, z = (1ull << 53) - y;
	uint64_t frac, lo, hi, rem, lg;
	uint32_t e, i;

	if (z < (1ull << 49)) {
		uint64_t t = z << 11, t2 = pg_mulhi(t, t), t3 = pg_mulhi(t2, t);
		uint64_t ln = t + t2 / 2 + t3 / 3 + pg_mulhi(t3, t) / 4;

		return pg_mulhi(ln, PG_LOG2E) >> 5;
	}
	e = 63u - (uint32_t)__builtin_clzll(y);
	frac = e ? y << (64 - e) : 0; /* the bits below the top one */
	i = (uint32_t)(frac >> 57);
	rem = (frac >> 25) & 0xffffffffull;
	lo = pg_log2_tab[i];
	hi = pg_log2_tab[i + 1];
	lg = ((uint64_t)e << 58) + ((lo + (((hi - lo) * rem) >> 32)) << 26);
	return (53ull << 58) - lg;
}

/* A ranked candidate: its score, and with weights its w and L. */
struct pg_pick {
	uint64_t pp_score, pp_len;
	uint32_t pp_w, pp_idx;
};

/* Whether a ranks above b: w_a / L_a > w_b / L_b, else the higher score
 * (weighted); the higher score (unweighted). */
static bool pg_better(const struct pg_pick *a, const struct pg_pick *b,
		      bool weighted)
{
	unsigned __int128 x, y;

	if (!weighted)
		return a->pp_score > b->pp_score;
	x = (unsigned __int128)a->pp_w * b->pp_len;
	y = (unsigned __int128)b->pp_w * a->pp_len;
	return x != y ? x > y : a->pp_score > b->pp_score;
}

/* A weight as ranked: 0 counts as 1. */
static uint32_t pg_weight(const struct pg_cand *c)
{
	return c->pc_weight ? c->pc_weight : 1;
}

/* Candidate c (index idx) ranked with its weight. */
static struct pg_pick pg_pick_weighted(uint64_t hp, const struct pg_cand *c,
				       uint32_t idx)
{
	uint64_t sc = st_mix64(hp ^ c->pc_key);

	return (struct pg_pick){sc, pg_len(sc), pg_weight(c), idx};
}

bool pg_above(uint32_t pg, const struct pg_cand *a, const struct pg_cand *b)
{
	uint64_t hp = st_mix64(pg ^ PG_SALT_SCORE);
	struct pg_pick pa = pg_pick_weighted(hp, a, 0);
	struct pg_pick pb = pg_pick_weighted(hp, b, 1);

	return pg_better(&pa, &pb, true);
}

/* Insert p into the list l[0..*n-1], best first, kept at most cap long
 * (the last one falls off a full list).  Equal ranks keep arrival order,
 * so the lower index wins. */
static void pg_insert(struct pg_pick *l, uint32_t *n, uint32_t cap,
		      struct pg_pick p, bool weighted)
{
	uint32_t j = *n < cap ? (*n)++ : cap;

	if (j == cap && (cap == 0 || !pg_better(&p, &l[cap - 1], weighted)))
		return;
	if (j == cap)
		j = cap - 1;
	while (j > 0 && pg_better(&p, &l[j - 1], weighted)) {
		l[j] = l[j - 1];
		j--;
	}
	l[j] = p;
}

/* Remove entry j of the list l[0..*n-1]. */
static void pg_remove(struct pg_pick *l, uint32_t *n, uint32_t j)
{
	for (; j + 1 < *n; j++)
		l[j] = l[j + 1];
	(*n)--;
}

/* What pg_scan_plain() returns when it meets unequal weights unweighted. */
#define PG_RESCAN (-1)

/*
 * One streaming pass keeps two lists.  lead[] holds the best r enclosure
 * leaders seen so far (one entry per enclosure), rest[] the best r
 * candidates that lost to their enclosure's leader.  A leader pushed off a
 * full lead[] is dropped: that needs r other enclosures, so no fallback
 * will look for it, and a later server of its enclosure enters lead[] only
 * by ranking above lead[]'s last entry, which ranks no lower than the
 * dropped leader did.  Once lead[] is full, rest[] is never read, so a
 * candidate ranked under lead[]'s last changes nothing: the scan's loop
 * skips it after one hash and one compare (nearly every candidate of a
 * large map), and pg_consider() takes the others.
 */
struct pg_lists {
	struct pg_pick pl_lead[PG_REPLICAS_MAX], pl_rest[PG_REPLICAS_MAX];
	uint32_t pl_nl, pl_nrest, pl_r;
	bool pl_weighted;
};

static void pg_consider(struct pg_lists *l, const struct pg_cand *cands,
			struct pg_pick p)
{
	uint32_t j = 0, encl = cands[p.pp_idx].pc_encl;
	bool w = l->pl_weighted;

	while (j < l->pl_nl && cands[l->pl_lead[j].pp_idx].pc_encl != encl)
		j++;
	if (j == l->pl_nl) {
		pg_insert(l->pl_lead, &l->pl_nl, l->pl_r, p, w);
	} else if (pg_better(&p, &l->pl_lead[j], w)) {
		pg_insert(l->pl_rest, &l->pl_nrest, l->pl_r, l->pl_lead[j], w);
		pg_remove(l->pl_lead, &l->pl_nl, j);
		pg_insert(l->pl_lead, &l->pl_nl, l->pl_r, p, w);
	} else {
		pg_insert(l->pl_rest, &l->pl_nrest, l->pl_r, p, w);
	}
}

/* The set: the leaders, then the best of the rest while places are left. */
static int pg_result(const struct pg_lists *l, uint32_t *out)
{
	uint32_t got = 0;

	for (uint32_t j = 0; j < l->pl_nl; j++)
		out[got++] = l->pl_lead[j].pp_idx;
	for (uint32_t j = 0; got < l->pl_r && j < l->pl_nrest; j++)
		out[got++] = l->pl_rest[j].pp_idx;
	return (int)got;
}

/* Scores only, while every in candidate has one weight; PG_RESCAN at the
 * first other weight. */
static int pg_scan_plain(uint64_t hp, const struct pg_cand *cands,
			 uint32_t nr, uint32_t r, uint32_t *out)
{
	struct pg_lists l = {.pl_r = r, .pl_weighted = false};
	uint64_t floor_ = 0; /* lead[]'s last score once lead[] is full */
	uint32_t w0 = 0;

	for (uint32_t i = 0; i < nr; i++) {
		const struct pg_cand *c = &cands[i];
		uint64_t sc;

		if (!c->pc_in)
			continue;
		if (pg_weight(c) != w0) {
			if (w0 != 0)
				return PG_RESCAN;
			w0 = pg_weight(c);
		}
		sc = st_mix64(hp ^ c->pc_key);
		if (l.pl_nl == r && sc <= floor_)
			continue;
		pg_consider(&l, cands, (struct pg_pick){sc, 0, 1, i});
		if (l.pl_nl == r)
			floor_ = l.pl_lead[r - 1].pp_score;
	}
	return pg_result(&l, out);
}

/* Weighted ranks (w / L), for maps with unequal weights. */
static int pg_scan_weighted(uint64_t hp, const struct pg_cand *cands,
			    uint32_t nr, uint32_t r, uint32_t *out)
{
	struct pg_lists l = {.pl_r = r, .pl_weighted = true};

	for (uint32_t i = 0; i < nr; i++) {
		struct pg_pick p;

		if (!cands[i].pc_in)
			continue;
		p = pg_pick_weighted(hp, &cands[i], i);
		if (l.pl_nl == r && !pg_better(&p, &l.pl_lead[r - 1], true))
			continue;
		pg_consider(&l, cands, p);
	}
	return pg_result(&l, out);
}

int pg_place(uint32_t pg, const struct pg_cand *cands, uint32_t nr,
	     uint32_t r, uint32_t *out)
{
	uint64_t hp;
	int rc;

	if (r == 0 || r > PG_REPLICAS_MAX)
		return err_set(-EINVAL, "pg_place: r = %u replicas, want 1..%u",
			       r, PG_REPLICAS_MAX);
	if (nr > PG_CANDS_MAX)
		return err_set(-EINVAL, "pg_place: %u candidates, want at most "
			       "%u", nr, PG_CANDS_MAX);
	if (nr > 0 && (cands == NULL || out == NULL))
		return err_set(-EINVAL, "pg_place: %s is NULL",
			       cands == NULL ? "cands" : "out");
	/* Equal weights rank by score alone (the same order, cheaper); the
	 * first unequal weight met starts the pass again, weighted. */
	hp = st_mix64(pg ^ PG_SALT_SCORE);
	rc = pg_scan_plain(hp, cands, nr, r, out);
	return rc == PG_RESCAN ? pg_scan_weighted(hp, cands, nr, r, out) : rc;
}
