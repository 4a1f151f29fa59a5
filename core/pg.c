/* pg.c — metadata placement groups: pg_of() and HRW placement (pg.h). */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

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

/* ------------------------------------------------------- balancing */

/* Index of the in candidate keyed key, or UINT32_MAX. */
static uint32_t pg_find(const struct pg_cand *c, uint32_t nr, uint64_t key)
{
	for (uint32_t i = 0; i < nr; i++)
		if (c[i].pc_in && c[i].pc_key == key)
			return i;
	return UINT32_MAX;
}

/* Distinct enclosures of set[0..n-1]. */
static uint32_t pg_encls(const struct pg_cand *c, const uint32_t *set,
			 uint32_t n)
{
	uint32_t d = 0;

	for (uint32_t a = 0; a < n; a++) {
		bool first = true;

		for (uint32_t b = 0; b < a; b++)
			first &= c[set[a]].pc_encl != c[set[b]].pc_encl;
		d += first;
	}
	return d;
}

/* Whether set[j] may give its place to candidate t: t is not in the set
 * and the set then spans no fewer enclosures. */
static bool pg_swap_ok(const struct pg_cand *c, uint32_t *set, uint32_t n,
		       uint32_t j, uint32_t t)
{
	uint32_t was = set[j], before, after;

	for (uint32_t i = 0; i < n; i++)
		if (set[i] == t)
			return false;
	before = pg_encls(c, set, n);
	set[j] = t;
	after = pg_encls(c, set, n);
	set[j] = was;
	return after >= before;
}

/* The first exception of group pg in up[0..nr_up-1] (sorted by pu_pg):
 * its index, or nr_up. */
static uint32_t pg_up_first(const struct pg_upmap *up, uint32_t nr_up,
			    uint32_t pg)
{
	uint32_t lo = 0, hi = nr_up;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (up[mid].pu_pg < pg)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Apply group pg's valid exceptions to set[0..n-1], which holds its HRW
 * set raw[0..n-1] (the same array or a copy): an exception's pu_from must
 * be an HRW member not replaced yet. */
static void pg_up_apply(uint32_t pg, const struct pg_cand *c, uint32_t nr,
			const uint32_t *raw, uint32_t *set, uint32_t n,
			const struct pg_upmap *up, uint32_t nr_up)
{
	for (uint32_t k = pg_up_first(up, nr_up, pg);
	     k < nr_up && up[k].pu_pg == pg; k++) {
		uint32_t j = 0, t;

		while (j < n && c[raw[j]].pc_key != up[k].pu_from)
			j++;
		if (j == n || set[j] != raw[j])
			continue;
		t = pg_find(c, nr, up[k].pu_to);
		if (t != UINT32_MAX && pg_swap_ok(c, set, n, j, t))
			set[j] = t;
	}
}

void pg_upmap_apply(uint32_t pg, const struct pg_cand *cands, uint32_t nr,
		    const struct pg_upmap *up, uint32_t nr_up,
		    const uint32_t *raw, uint32_t n, uint32_t *out)
{
	for (uint32_t i = 0; i < n; i++)
		out[i] = raw[i];
	if (nr_up > 0 && up != NULL)
		pg_up_apply(pg, cands, nr, raw, out, n, up, nr_up);
}

int pg_place_up(uint32_t pg, const struct pg_cand *cands, uint32_t nr,
		uint32_t r, const struct pg_upmap *up, uint32_t nr_up,
		uint32_t *out)
{
	uint32_t raw[PG_REPLICAS_MAX];
	int rc = pg_place(pg, cands, nr, r, raw);

	if (rc > 0)
		pg_upmap_apply(pg, cands, nr, up, nr_up, raw, (uint32_t)rc,
			       out);
	return rc;
}

/* The balancer's view: loads, weights, and the servers under their share
 * kept sorted by load / weight, least loaded first. */
struct pg_bal {
	const struct pg_cand *b_c;
	uint32_t b_nr;
	uint64_t *b_load;         /* sizes of the replicas each one holds */
	uint64_t b_total, b_wsum; /* sizes placed, weights of the in */
	const uint64_t *b_sizes;  /* per group, NULL: 1 each */
	uint32_t b_tol_ppm;
	uint8_t *b_trim;          /* over its limit once: trimmed to half */
	uint32_t *b_under, b_nu;  /* servers with room below their share */
};

/* Above share x (1 + tol_ppm / 10^6): load x W x 10^6 > total x w x
 * (10^6 + tol_ppm). */
static bool pg_bal_above(const struct pg_bal *b, uint32_t i, uint32_t tol)
{
	unsigned __int128 lhs = (unsigned __int128)b->b_load[i] * b->b_wsum *
				1000000u;

	return lhs > (unsigned __int128)b->b_total * pg_weight(&b->b_c[i]) *
		     (1000000u + (uint64_t)tol);
}

/* Whether a replica on server i moves off it: i is over its limit; or,
 * for a replica that is fresh (new on i since prev, or no prev given), i
 * went over its limit in this run and is still over half of it.  The
 * headroom keeps a server that gets a few replicas later (from a server
 * leaving) under its limit, where one trimmed to its limit would move one
 * on at once; settled replicas do not move for it (that would copy data
 * to gain headroom alone). */
static bool pg_bal_over(struct pg_bal *b, uint32_t i, bool fresh)
{
	if (pg_bal_above(b, i, b->b_tol_ppm)) {
		b->b_trim[i] = 1;
		return true;
	}
	return fresh && b->b_trim[i] && pg_bal_above(b, i, b->b_tol_ppm / 2);
}

/* Room for sz more at or under the share: (load + sz) x W <= total x w
 * (sz 1 for the under list: below the share at all). */
static bool pg_bal_room(const struct pg_bal *b, uint32_t i, uint64_t sz)
{
	return (unsigned __int128)(b->b_load[i] + sz) * b->b_wsum <=
	       (unsigned __int128)b->b_total * pg_weight(&b->b_c[i]);
}

/* The size of group g's replicas. */
static uint64_t pg_bal_size(const struct pg_bal *b, uint32_t g)
{
	return b->b_sizes == NULL ? 1 : b->b_sizes[g];
}

/* i less loaded than j for its weight (ties: the lower index). */
static bool pg_bal_less(const struct pg_bal *b, uint32_t i, uint32_t j)
{
	unsigned __int128 li = (unsigned __int128)b->b_load[i] *
			       pg_weight(&b->b_c[j]);
	unsigned __int128 lj = (unsigned __int128)b->b_load[j] *
			       pg_weight(&b->b_c[i]);

	return li < lj || (li == lj && i < j);
}

/* The under list's entry at pos gained one: drop it when it has no room
 * left, else move it back to its place in the order. */
static void pg_bal_gained(struct pg_bal *b, uint32_t pos)
{
	uint32_t t = b->b_under[pos];

	if (!pg_bal_room(b, t, 1)) {
		for (; pos + 1 < b->b_nu; pos++)
			b->b_under[pos] = b->b_under[pos + 1];
		b->b_nu--;
		return;
	}
	for (; pos + 1 < b->b_nu && pg_bal_less(b, b->b_under[pos + 1], t);
	     pos++)
		b->b_under[pos] = b->b_under[pos + 1];
	b->b_under[pos] = t;
}

/* Insertion sort of the under list (built once; the list is short). */
static void pg_bal_sort(struct pg_bal *b)
{
	for (uint32_t i = 1; i < b->b_nu; i++) {
		uint32_t t = b->b_under[i], j = i;

		for (; j > 0 && pg_bal_less(b, t, b->b_under[j - 1]); j--)
			b->b_under[j] = b->b_under[j - 1];
		b->b_under[j] = t;
	}
}

/* Members of a group's set (entries before the first UINT32_MAX). */
static uint32_t pg_set_len(const uint32_t *set, uint32_t r)
{
	uint32_t n = 0;

	while (n < r && set[n] != UINT32_MAX)
		n++;
	return n;
}

/* Where the replica at set[j] goes: a server of prev[0..r-1] (the
 * group's set before this map) that may take it back (no data moves
 * then), else the least loaded server with room that may hold it.  Its
 * position in the under list, or b_nu for none. */
static uint32_t pg_bal_dest(const struct pg_bal *b, uint32_t *set,
			    uint32_t n, uint32_t j, const uint32_t *prev,
			    uint32_t r, uint64_t sz)
{
	uint32_t pos = 0;

	for (uint32_t k = 0; prev != NULL && k < r; k++) {
		uint32_t p = prev[k];

		if (p == UINT32_MAX || p >= b->b_nr || !b->b_c[p].pc_in ||
		    !pg_bal_room(b, p, sz) ||
		    !pg_swap_ok(b->b_c, set, n, j, p))
			continue;
		for (pos = 0; pos < b->b_nu && b->b_under[pos] != p; pos++)
			;
		if (pos < b->b_nu)
			return pos;
	}
	for (pos = 0; pos < b->b_nu &&
	     (!pg_bal_room(b, b->b_under[pos], sz) ||
	      !pg_swap_ok(b->b_c, set, n, j, b->b_under[pos])); pos++)
		;
	return pos;
}

/* Whether server m is in the group's prev set (it held the group). */
static bool pg_bal_settled(const uint32_t *prev, uint32_t r, uint32_t m)
{
	for (uint32_t k = 0; prev != NULL && k < r; k++)
		if (prev[k] == m)
			return true;
	return false;
}

/* One pass over the groups: every replica on a server to move replicas
 * off goes to the server pg_bal_dest() finds; with fresh_only, only
 * replicas new on their server since prev (they are copied anyway, so
 * sending them elsewhere instead costs no extra copy).  Returns the moves.
 */
static uint64_t pg_bal_pass(struct pg_bal *b, uint32_t nr_pgs, uint32_t r,
			    uint32_t *eff, const uint32_t *prev,
			    bool fresh_only)
{
	uint64_t moved = 0;

	for (uint32_t g = 0; g < nr_pgs && b->b_nu > 0; g++) {
		uint32_t *set = &eff[(uint64_t)g * r], n = pg_set_len(set, r);
		const uint32_t *pv = prev == NULL ? NULL :
				     &prev[(uint64_t)g * r];
		uint64_t sz = pg_bal_size(b, g);

		for (uint32_t j = 0; j < n; j++) {
			uint32_t m = set[j], pos;
			bool fresh = pv == NULL || !pg_bal_settled(pv, r, m);

			if ((fresh_only && !fresh) || !pg_bal_over(b, m, fresh))
				continue;
			pos = pg_bal_dest(b, set, n, j, pv, r, sz);
			if (pos == b->b_nu)
				continue;
			set[j] = b->b_under[pos];
			b->b_load[m] -= sz;
			b->b_load[set[j]] += sz;
			pg_bal_gained(b, pos);
			moved++;
		}
	}
	return moved;
}

/* Move over-limit replicas of every group to servers with room: those
 * new on their server first, then any (a few passes: a server's limit
 * falls to half once it is over it). */
static void pg_bal_moves(struct pg_bal *b, uint32_t nr_pgs, uint32_t r,
			 uint32_t *eff, const uint32_t *prev)
{
	if (prev != NULL)
		pg_bal_pass(b, nr_pgs, r, eff, prev, true);
	for (uint32_t pass = 0; pass < 4; pass++)
		if (pg_bal_pass(b, nr_pgs, r, eff, prev, false) == 0)
			break;
}

int pg_balance(const struct pg_cand *cands, uint32_t nr, uint32_t nr_pgs,
	       uint32_t r, const uint32_t *sets, const uint32_t *prev,
	       const uint64_t *sizes, uint32_t tol_ppm,
	       const struct pg_upmap *old, uint32_t nr_old,
	       struct pg_upmap **out, uint32_t *nr_out)
{
	struct pg_bal b = {.b_c = cands, .b_nr = nr, .b_tol_ppm = tol_ppm,
			   .b_sizes = sizes};
	uint32_t *eff = NULL;
	uint64_t n_ex = 0, cells = (uint64_t)nr_pgs * r;
	int rc = 0;

	if (out == NULL || nr_out == NULL)
		return err_set(-EINVAL, "pg_balance: %s is NULL",
			       out == NULL ? "out" : "nr_out");
	*out = NULL;
	*nr_out = 0;
	if (r == 0 || r > PG_REPLICAS_MAX)
		return err_set(-EINVAL, "pg_balance: r = %u replicas, want "
			       "1..%u", r, PG_REPLICAS_MAX);
	if (nr == 0 || nr > PG_CANDS_MAX || nr_pgs == 0 ||
	    nr_pgs > PG_NR_MAX)
		return err_set(-EINVAL, "pg_balance: %u candidates (want "
			       "1..%u), %u groups (want 1..%u)", nr,
			       PG_CANDS_MAX, nr_pgs, PG_NR_MAX);
	if (cands == NULL || sets == NULL || (old == NULL && nr_old > 0))
		return err_set(-EINVAL, "pg_balance: %s is NULL",
			       cands == NULL ? "cands" :
			       sets == NULL ? "sets" : "old");
	eff = malloc(cells * sizeof *eff);
	b.b_load = calloc(nr, sizeof *b.b_load);
	b.b_under = malloc(nr * sizeof *b.b_under);
	b.b_trim = calloc(nr, 1);
	if (eff == NULL || b.b_load == NULL || b.b_under == NULL ||
	    b.b_trim == NULL) {
		rc = err_set(-ENOMEM, "pg_balance: no memory for %u groups",
			     nr_pgs);
		goto out;
	}
	for (uint64_t i = 0; i < cells; i++) {
		eff[i] = sets[i];
		if (eff[i] != UINT32_MAX && (eff[i] >= nr ||
					     !cands[eff[i]].pc_in)) {
			rc = err_set(-EINVAL, "pg_balance: sets[%llu] = %u is "
				     "not an in candidate",
				     (unsigned long long)i, eff[i]);
			goto out;
		}
	}
	for (uint32_t g = 0; g < nr_pgs; g++) {
		const uint32_t *raw = &sets[(uint64_t)g * r];
		uint32_t *set = &eff[(uint64_t)g * r], n = pg_set_len(raw, r);

		if (nr_old > 0)
			pg_up_apply(g, cands, nr, raw, set, n, old, nr_old);
		for (uint32_t j = 0; j < n; j++)
			b.b_load[set[j]] += pg_bal_size(&b, g);
		b.b_total += n * pg_bal_size(&b, g);
	}
	for (uint32_t i = 0; i < nr; i++)
		if (cands[i].pc_in) {
			b.b_wsum += pg_weight(&cands[i]);
			if (pg_bal_room(&b, i, 1))
				b.b_under[b.b_nu++] = i;
		}
	pg_bal_sort(&b);
	pg_bal_moves(&b, nr_pgs, r, eff, prev);
	for (uint64_t i = 0; i < cells; i++)
		n_ex += eff[i] != sets[i];
	if (n_ex > 0) {
		*out = calloc(n_ex, sizeof **out);
		if (*out == NULL) {
			rc = err_set(-ENOMEM, "pg_balance: no memory for %llu "
				     "exceptions", (unsigned long long)n_ex);
			goto out;
		}
	}
	for (uint64_t i = 0; i < cells; i++)
		if (eff[i] != sets[i])
			(*out)[(*nr_out)++] = (struct pg_upmap){
				.pu_pg = (uint32_t)(i / r),
				.pu_from = cands[sets[i]].pc_key,
				.pu_to = cands[eff[i]].pc_key};
out:
	free(eff);
	free(b.b_load);
	free(b.b_under);
	free(b.b_trim);
	return rc;
}
