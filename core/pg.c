/* pg.c — metadata placement groups: pg_of() and HRW placement (pg.h). */
#include <errno.h>
#include <stddef.h>

#include "core/errors.h"
#include "core/pg.h"

#define PG_SALT_ID 0x7067706c6163652eull    /* "pgplace." */
#define PG_SALT_SCORE 0x7067736372652e2eull /* "pgscre.." */

/* The splitmix64 finaliser (pg.h: mix). */
static uint64_t pg_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint32_t pg_of(const struct st_id *id, uint32_t nr_pgs)
{
	uint64_t h = pg_mix(id->si_hi ^ pg_mix(id->si_lo ^ PG_SALT_ID));

	return (uint32_t)(((unsigned __int128)h * nr_pgs) >> 64);
}

uint64_t pg_key(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return pg_mix(h);
}

uint64_t pg_score(uint32_t pg, uint64_t key)
{
	return pg_mix(pg_mix(pg ^ PG_SALT_SCORE) ^ key);
}

/* A scored candidate. */
struct pg_pick {
	uint64_t pp_score;
	uint32_t pp_idx;
};

/* Insert p into the list l[0..*n-1], sorted by descending score and kept
 * at most cap long (the last one falls off a full list).  Equal scores
 * keep arrival order, so the lower index wins. */
static void pg_insert(struct pg_pick *l, uint32_t *n, uint32_t cap,
		      struct pg_pick p)
{
	uint32_t j = *n < cap ? (*n)++ : cap;

	if (j == cap && (cap == 0 || l[cap - 1].pp_score >= p.pp_score))
		return;
	if (j == cap)
		j = cap - 1;
	while (j > 0 && l[j - 1].pp_score < p.pp_score) {
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

/*
 * One streaming pass.  lead[] keeps the best r enclosure leaders seen so
 * far (one entry per enclosure), rest[] the best r candidates that lost to
 * their enclosure's leader.  A leader pushed off a full lead[] is dropped:
 * that needs r other enclosures, so no fallback will look for it, and a
 * later server of its enclosure enters lead[] only by beating lead[]'s
 * last entry, which scores no less than the dropped leader did.  Once
 * lead[] is full, rest[] is never read, so a candidate scoring under
 * lead[]'s last is skipped at the cost of one hash and one compare.
 */
int pg_place(uint32_t pg, const struct pg_cand *cands, uint32_t nr,
	     uint32_t r, uint32_t *out)
{
	struct pg_pick lead[PG_REPLICAS_MAX], rest[PG_REPLICAS_MAX];
	uint32_t nl = 0, nrest = 0, got = 0;
	uint64_t hp = pg_mix(pg ^ PG_SALT_SCORE);

	if (r == 0 || r > PG_REPLICAS_MAX)
		return err_set(-EINVAL, "pg_place: r = %u replicas, want 1..%u",
			       r, PG_REPLICAS_MAX);
	if (nr > PG_CANDS_MAX)
		return err_set(-EINVAL, "pg_place: %u candidates, want at most "
			       "%u", nr, PG_CANDS_MAX);
	if (nr > 0 && (cands == NULL || out == NULL))
		return err_set(-EINVAL, "pg_place: %s is NULL",
			       cands == NULL ? "cands" : "out");
	for (uint32_t i = 0; i < nr; i++) {
		struct pg_pick p = {pg_mix(hp ^ cands[i].pc_key), i};
		uint32_t j = 0;

		if (!cands[i].pc_in)
			continue;
		/* Full lead[]: r enclosures, so no fallback; a score under
		 * its last can change nothing (the common case). */
		if (nl == r && p.pp_score <= lead[r - 1].pp_score)
			continue;
		while (j < nl && cands[lead[j].pp_idx].pc_encl !=
				 cands[i].pc_encl)
			j++;
		if (j == nl) {
			pg_insert(lead, &nl, r, p);
		} else if (lead[j].pp_score < p.pp_score) {
			pg_insert(rest, &nrest, r, lead[j]);
			pg_remove(lead, &nl, j);
			pg_insert(lead, &nl, r, p);
		} else {
			pg_insert(rest, &nrest, r, p);
		}
	}
	for (uint32_t j = 0; j < nl; j++)
		out[got++] = lead[j].pp_idx;
	for (uint32_t j = 0; got < r && j < nrest; j++)
		out[got++] = rest[j].pp_idx;
	return (int)got;
}
