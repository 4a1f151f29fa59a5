/* pdclust.c — placement of parity-declustered groups (see pdclust.h). */
#include <errno.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/layout.h"
#include "layouts/pdclust.h"

_Static_assert(PD_POOL_MAX <= 256, "pd_perm keeps devices in uint8_t");
_Static_assert(ST_LAYOUT_UNITS_MAX <= PD_POOL_MAX,
	       "a group must fit in the largest pool");

int pd_geom_check(const struct pd_geom *g)
{
	const uint32_t max = ST_LAYOUT_UNITS_MAX;

	if (g->pg_n < 1 || g->pg_n > max)
		return err_set(-EINVAL, "pdclust: n = %u data units, want 1..%u",
			       g->pg_n, max);
	if (g->pg_k > max)
		return err_set(-EINVAL, "pdclust: k = %u parity units, want <= %u",
			       g->pg_k, max);
	if (g->pg_s > max)
		return err_set(-EINVAL, "pdclust: s = %u spare units, want <= %u",
			       g->pg_s, max);
	if (pd_width(g) > max)
		return err_set(-EINVAL, "pdclust: n + k + s = %u units, want <= %u",
			       pd_width(g), max);
	if (g->pg_p < pd_width(g) || g->pg_p > PD_POOL_MAX)
		return err_set(-EINVAL, "pdclust: p = %u devices, want %u..%u "
			       "(n + k + s .. pool max)", g->pg_p, pd_width(g),
			       PD_POOL_MAX);
	if (g->pg_unit_shift < ST_UNIT_SHIFT_MIN ||
	    g->pg_unit_shift > ST_UNIT_SHIFT_MAX)
		return err_set(-EINVAL, "pdclust: unit shift = %u, want %u..%u",
			       g->pg_unit_shift, ST_UNIT_SHIFT_MIN,
			       ST_UNIT_SHIFT_MAX);
	return 0;
}

/* splitmix64: one step of a portable, well-mixed 64-bit stream. */
static uint64_t pd_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Map 32 random bits onto 0..range-1 by a multiply-shift (no division; the
 * bias, under range / 2^32, is far below anything placement can see). */
static uint32_t pd_below(uint32_t bits, uint32_t range)
{
	return (uint32_t)(((uint64_t)bits * range) >> 32);
}

/*
 * Fill perm[0..upto-1] with the first upto entries of the pseudo-random
 * permutation of 0..p-1 that belongs to (id, tile).  A forward Fisher-Yates
 * fixes position j at step j, so a shorter prefix is the same as the prefix
 * of the full shuffle.  Each 64-bit draw feeds two steps.
 */
static void pd_perm(const struct pd_geom *g, const struct st_id *id,
		    uint64_t tile, uint32_t upto, uint8_t *perm)
{
	uint64_t state = tile, bits = 0;
	uint32_t p = g->pg_p;

	state = layout_id_hash(id) ^ pd_next(&state);
	for (uint32_t j = 0; j < p; j++)
		perm[j] = (uint8_t)j;
	for (uint32_t j = 0; j < upto && j + 1 < p; j++) {
		uint32_t pick;
		uint8_t t;

		bits = (j & 1) ? bits >> 32 : pd_next(&state);
		pick = j + pd_below((uint32_t)bits, p - j);
		t = perm[j];
		perm[j] = perm[pick];
		perm[pick] = t;
	}
}

void pd_group_map(const struct pd_geom *g, const struct st_id *id,
		  uint64_t group, uint32_t *devs)
{
	uint32_t p = g->pg_p, w = pd_width(g);
	uint32_t r = (uint32_t)(group % p);
	uint8_t perm[PD_POOL_MAX];

	PRE(w >= 1 && w <= p && p <= PD_POOL_MAX);
	/* Slots take positions r .. r+w-1 (mod p): shuffle just that far
	 * unless they wrap around. */
	pd_perm(g, id, group / p, r + w <= p ? r + w : p, perm);
	for (uint32_t i = 0; i < w; i++) {
		uint32_t pos = r + i;

		devs[i] = perm[pos < p ? pos : pos - p];
	}
}

int pd_dev_slot(const struct pd_geom *g, const struct st_id *id,
		uint64_t group, uint32_t dev)
{
	uint32_t devs[ST_LAYOUT_UNITS_MAX];
	uint32_t w = pd_width(g);

	if (dev >= g->pg_p)
		return -1;
	pd_group_map(g, id, group, devs);
	for (uint32_t i = 0; i < w; i++)
		if (devs[i] == dev)
			return (int)i;
	return -1;
}

/*
 * Placement over failure domains (pdclust.h): draw a permutation of the
 * domains for (id, group), then fill the slots round by round: round r
 * takes, from every domain in permutation order that still has a device
 * left, its device (h + r) mod c, h a hash of (id, group, domain) and c the
 * domain's device count.  Round 0 gives the first min(width, domains)
 * slots distinct domains.
 */
void pd_group_map_dom(const struct pd_geom *g, const uint8_t *dom,
		      uint32_t nr_dom, const struct st_id *id,
		      uint64_t group, uint32_t *devs)
{
	uint32_t p = g->pg_p, w = pd_width(g), cnt[PD_POOL_MAX] = {0};
	uint32_t first[PD_POOL_MAX + 1], mem[PD_POOL_MAX], at[PD_POOL_MAX];
	uint64_t state, hid = layout_id_hash(id), hd[PD_POOL_MAX];
	uint8_t perm[PD_POOL_MAX];
	uint32_t filled = 0;

	if (dom == NULL || nr_dom < 2) {
		pd_group_map(g, id, group, devs);
		return;
	}
	PRE(w >= 1 && w <= p && p <= PD_POOL_MAX && nr_dom <= p);
	for (uint32_t i = 0; i < p; i++)
		cnt[dom[i]]++;
	first[0] = 0;
	for (uint32_t d = 0; d < nr_dom; d++)
		first[d + 1] = first[d] + cnt[d];
	for (uint32_t d = 0; d < nr_dom; d++)
		at[d] = first[d];
	for (uint32_t i = 0; i < p; i++)
		mem[at[dom[i]]++] = i;
	state = hid ^ (group * 0x9e3779b97f4a7c15ull);
	for (uint32_t d = 0; d < nr_dom; d++)
		perm[d] = (uint8_t)d;
	for (uint32_t j = 0; j + 1 < nr_dom; j++) {
		uint32_t pick = j + pd_below((uint32_t)pd_next(&state),
					     nr_dom - j);
		uint8_t t = perm[j];

		perm[j] = perm[pick];
		perm[pick] = t;
	}
	for (uint32_t d = 0; d < nr_dom; d++)
		hd[d] = pd_next(&state);
	for (uint32_t r = 0; filled < w; r++)
		for (uint32_t j = 0; j < nr_dom && filled < w; j++) {
			uint32_t d = perm[j], c = cnt[d];

			if (r < c)
				devs[filled++] = mem[first[d] +
						     (uint32_t)((hd[d] + r) % c)];
		}
}

int pd_dev_slot_dom(const struct pd_geom *g, const uint8_t *dom,
		    uint32_t nr_dom, const struct st_id *id,
		    uint64_t group, uint32_t dev)
{
	uint32_t devs[ST_LAYOUT_UNITS_MAX];
	uint32_t w = pd_width(g);

	if (dev >= g->pg_p)
		return -1;
	pd_group_map_dom(g, dom, nr_dom, id, group, devs);
	for (uint32_t i = 0; i < w; i++)
		if (devs[i] == dev)
			return (int)i;
	return -1;
}

/* ------------------------------------------------ keyed (growing pools) */

#define PD_SALT_HRW 0x7064687277677270ull /* "pdhrwgrp" */
#define PD_SALT_CLS 0x7064636c61737373ull /* "pdclasss" */
#define PD_NONE UINT32_MAX

/* The domain for each slot left without one (an empty class): the
 * domain with the fewest slots of the group so far and a device left,
 * the best-scoring first. */
static void pd_hrw_fill(uint32_t w, uint32_t nr_dom, const uint64_t *dsc,
			const uint32_t *cnt, uint32_t *used, uint32_t *sdom)
{
	for (uint32_t k = 0; k < w; k++) {
		uint32_t pick = PD_NONE;

		if (sdom[k] != PD_NONE)
			continue;
		for (uint32_t d = 0; d < nr_dom; d++) {
			if (used[d] >= cnt[d])
				continue;
			if (pick == PD_NONE || used[d] < used[pick] ||
			    (used[d] == used[pick] && dsc[d] > dsc[pick]))
				pick = d;
		}
		sdom[k] = pick; /* never PD_NONE: p >= w devices */
		used[pick]++;
	}
}

void pd_group_map_hrw(const struct pd_geom *g, const uint8_t *dom,
		      uint32_t nr_dom, const uint64_t *dom_key,
		      const uint64_t *dev_key, const struct st_id *id,
		      uint64_t group, uint32_t *devs)
{
	uint32_t p = g->pg_p, w = pd_width(g);
	uint64_t hg = st_mix64(layout_id_hash(id) ^
			       st_mix64(group ^ PD_SALT_HRW));
	uint64_t dsc[PD_POOL_MAX], bsc[PD_POOL_MAX];
	uint32_t sdom[ST_LAYOUT_UNITS_MAX], used[PD_POOL_MAX] = {0};
	uint32_t cnt[PD_POOL_MAX] = {0}, bdev[PD_POOL_MAX];
	bool taken[PD_POOL_MAX] = {false};

	PRE(w >= 1 && w <= p && p <= PD_POOL_MAX && nr_dom >= 1 &&
	    nr_dom <= p);
	for (uint32_t k = 0; k < w; k++)
		sdom[k] = PD_NONE;
	/* Each domain's score and class; a class's best domain holds the
	 * slot of that number. */
	for (uint32_t d = 0; d < nr_dom; d++) {
		uint32_t c;

		dsc[d] = st_mix64(hg ^ dom_key[d]);
		c = (uint32_t)(((unsigned __int128)st_mix64(dsc[d] ^
							    PD_SALT_CLS) *
				w) >> 64);
		if (sdom[c] == PD_NONE || dsc[d] > dsc[sdom[c]])
			sdom[c] = d;
		bdev[d] = PD_NONE;
	}
	/* Each domain's best device (by its key), and its device count. */
	for (uint32_t i = 0; i < p; i++) {
		uint32_t d = dom[i];
		uint64_t sc = st_mix64(hg ^ dev_key[i]);

		cnt[d]++;
		if (bdev[d] == PD_NONE || sc > bsc[d]) {
			bdev[d] = i;
			bsc[d] = sc;
		}
	}
	for (uint32_t k = 0; k < w; k++)
		if (sdom[k] != PD_NONE)
			used[sdom[k]]++;
	pd_hrw_fill(w, nr_dom, dsc, cnt, used, sdom);
	for (uint32_t k = 0; k < w; k++) {
		uint32_t d = sdom[k], pick = bdev[d];
		uint64_t best = 0;

		if (taken[pick]) { /* a domain of several slots: its next */
			pick = PD_NONE;
			for (uint32_t i = 0; i < p; i++) {
				uint64_t sc;

				if (dom[i] != d || taken[i])
					continue;
				sc = st_mix64(hg ^ dev_key[i]);
				if (pick == PD_NONE || sc > best) {
					pick = i;
					best = sc;
				}
			}
		}
		devs[k] = pick;
		taken[pick] = true;
	}
}

int pd_dev_slot_hrw(const struct pd_geom *g, const uint8_t *dom,
		    uint32_t nr_dom, const uint64_t *dom_key,
		    const uint64_t *dev_key, const struct st_id *id,
		    uint64_t group, uint32_t dev)
{
	uint32_t devs[ST_LAYOUT_UNITS_MAX];
	uint32_t w = pd_width(g);

	if (dev >= g->pg_p)
		return -1;
	pd_group_map_hrw(g, dom, nr_dom, dom_key, dev_key, id, group, devs);
	for (uint32_t i = 0; i < w; i++)
		if (devs[i] == dev)
			return (int)i;
	return -1;
}
