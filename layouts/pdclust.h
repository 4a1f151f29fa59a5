/*
 * pdclust.h — placement math of parity-declustered and mirror layouts.
 *
 * An object of a pdclust layout is cut into units of 2^pg_unit_shift bytes;
 * pg_n consecutive data units form a parity group, which adds pg_k parity
 * units (layouts/ec.h) and reserves pg_s spare units for rebuild.  The
 * pd_width() = n + k + s slots of a group are numbered
 *
 *     0 .. n-1          data
 *     n .. n+k-1        parity
 *     n+k .. n+k+s-1    spare
 *
 * and every slot lives on a different device of a pool of pg_p devices,
 * numbered 0 .. p-1 relative to the pool (the caller maps them to store
 * devices).  A mirror layout is the case n = 1, k = copies - 1.
 *
 * Placement is computed, never stored: it depends only on the geometry, the
 * object id (through layout_id_hash()) and the group number, with integer
 * arithmetic only, so every machine and every run gets the same devices.
 *
 * How: groups are taken in tiles of p consecutive groups (tile = group / p,
 * r = group % p).  Each (object, tile) gets its own pseudo-random
 * permutation perm[0..p-1] of the devices (Fisher-Yates driven by
 * splitmix64 seeded from the id hash and the tile), and group r of the tile
 * puts slot i on perm[(r + i) mod p].
 *
 * Guarantees (each one is checked by layouts/ut/pdclust_ut.c):
 *
 *  * Distinct: the width devices of a group are pairwise distinct.
 *  * Exact balance per tile: within one tile every device holds every slot
 *    exactly once, so each device holds exactly n data, k parity and s spare
 *    units of the tile.  Hence for ANY run of G consecutive groups of one
 *    object and every device, the number of units of a kind with c slots
 *    per group (c = n, k or s) that the device holds differs from the mean
 *    G * c / p by at most 2 * c (one partial tile at each end).  Over whole
 *    tiles (G a multiple of p, starting at a multiple of p) it is exact;
 *    over any p * 64 consecutive groups it is within 2 / 64 = 3.2 % of the
 *    mean.
 *  * Declustered: the other members of the groups that contain a device d
 *    are spread over all p - 1 other devices.  Inside one tile, d shares
 *    groups only with the devices at most width - 1 positions from it in
 *    perm; since perm is redrawn per (object, tile), every survivor gets
 *    the same expected share, width * (width - 1) / (p - 1) co-memberships
 *    per tile.  Tested bound: over 16 objects of p * 64 groups each, for
 *    every device d, every survivor shares groups with d at least once and
 *    within [0.5, 1.5] times the mean (worst seen 1.27 x, 4+2+1 over 64).
 *    A single object of p * 64 groups alone is looser (up to about 2 x the
 *    mean at p = 64): a rebuild is balanced over the pool's many objects,
 *    not within one small object.
 *
 * Cost: pd_group_map() and pd_dev_slot() do no allocation and take O(p)
 * time (a partial shuffle of at most p entries on the stack, p <= 256):
 * measured about 30 ns a call at p = 12, 70 ns at p = 40, 330 ns at
 * p = 256.  All functions are pure and thread-safe.
 */
#ifndef STRATA_LAYOUTS_PDCLUST_H
#define STRATA_LAYOUTS_PDCLUST_H

#include <stdint.h>

#include "core/types.h"
#include "layouts/layout_limits.h"

/**
 * Geometry of a parity-declustered (or mirror) layout.  Slots of a group:
 * 0..N-1 data, N..N+K-1 parity, N+K..N+K+S-1 spare.
 */
struct pd_geom {
	uint32_t pg_n, pg_k, pg_s; /**< data, parity, spare units per group */
	uint32_t pg_p;             /**< devices in the pool */
	uint32_t pg_unit_shift;    /**< log2 unit size in bytes */
};

/**
 * Check a geometry taken from a caller or from storage.  Returns 0, or
 * -EINVAL via err_set() (core/errors.h) with a message naming the bad field
 * when: pg_n < 1; n + k + s > ST_LAYOUT_UNITS_MAX (32) (each of them
 * counted separately first, so huge values cannot wrap the sum);
 * pg_p < n + k + s; pg_p > PD_POOL_MAX (256); pg_unit_shift outside
 * ST_UNIT_SHIFT_MIN..ST_UNIT_SHIFT_MAX (12..24).
 * Every other function here requires a geometry that passed this check.
 */
int pd_geom_check(const struct pd_geom *g);

/** Units per group: data + parity + spare. */
static inline uint32_t pd_width(const struct pd_geom *g)
{
	return g->pg_n + g->pg_k + g->pg_s;
}

/**
 * Pool-relative device (0..p-1) of every slot of group `group` of object id.
 * In: g (checked), id, group (any value).  Out: devs[0..pd_width(g)-1],
 * caller-owned, all distinct.  Deterministic: the same on every machine.
 */
void pd_group_map(const struct pd_geom *g, const struct st_id *id,
		  uint64_t group, uint32_t *devs);

/**
 * Inverse of pd_group_map(): the slot (0..width-1) that device dev holds in
 * group `group` of object id, or -1 if dev holds no unit of that group
 * (including dev >= p).
 */
int pd_dev_slot(const struct pd_geom *g, const struct st_id *id,
		uint64_t group, uint32_t dev);

/*
 * Failure domains (cluster mode: a domain is a server).  A pool whose
 * devices are spread over several domains (dom[i] = domain 0..nr_dom-1 of
 * pool device i, every domain 0..nr_dom-1 holding at least one device)
 * places a group so that its first min(width, nr_dom) slots lie in
 * distinct domains, and every further slot in the domain holding the
 * fewest slots of the group so far among those with a device left (round
 * robin over the domains): a domain lost costs a group at most
 * ceil(width / nr_dom) units, so with nr_dom >= width at most one.
 *
 * How: a permutation of the domains drawn per (id, group) (splitmix64, as
 * above), then round r takes from each domain in that order its device
 * (h + r) mod c, h drawn per (id, group, domain), c the domain's devices.
 * Distinct: yes (a domain gives each of its devices at most once).
 * Balance: every domain is first equally often in expectation, and each
 * device of a domain of c devices holds 1/c of the domain's units in
 * expectation; there is no exact per-tile balance as without domains.
 * Cost: O(p) per call, no allocation.
 *
 * dom NULL or nr_dom < 2: exactly pd_group_map() (embedded pools map as
 * before).  Pure and thread-safe.
 */
void pd_group_map_dom(const struct pd_geom *g, const uint8_t *dom,
		      uint32_t nr_dom, const struct st_id *id,
		      uint64_t group, uint32_t *devs);

/** The inverse of pd_group_map_dom(), as pd_dev_slot() is of
 *  pd_group_map(). */
int pd_dev_slot_dom(const struct pd_geom *g, const uint8_t *dom,
		    uint32_t nr_dom, const struct st_id *id,
		    uint64_t group, uint32_t dev);

/*
 * Keyed placement, for pools that grow and shrink (issue 28 items 4-5).
 * pd_group_map_dom() draws a permutation over the pool's width: a pool
 * that gains or loses a server re-places 93-95 % of its units (strata-sim
 * data.add_join).  Here every domain and device has a stable key (a
 * server's pg_key(name), a device's key from it), so that a placement
 * depends on who is in the pool, not on positions, and a server joining
 * takes only its share:
 *
 *   hg = mix(layout_id_hash(id) ^ mix(group ^ "pdhrwgrp")), mix =
 *   st_mix64; each domain d gets a score s_d = mix(hg ^ dom_key[d]) and a
 *   class c_d = high 64 bits of mix(s_d ^ "pdclasss") x width; slot k goes
 *   to the best-scoring domain of class k (rendezvous within the class).
 *   A slot whose class is empty goes to the domain with the fewest slots
 *   of the group and a device left, best score first (with nr_dom >=
 *   width: the best domain not chosen).  In its domain a slot takes the
 *   device with the best mix(hg ^ dev_key[i]) not taken yet.
 *
 * Why classes: ranking the domains alone would pick the right set, but a
 * newcomer ranked j-th would shift the slots of every member ranked below
 * it (a data unit becoming a parity unit is a unit moved).  With one
 * rendezvous per class, a server X joining changes a group only where X
 * is the best of its class, and then exactly that slot; a server leaving
 * changes exactly its slots, each to the next best of its class.  The
 * exceptions are the empty classes' fallback (about e^(-domains/width) of
 * the classes: 6 % at 24 domains, width 7), where a newcomer or a member
 * freed by it can take a fallback slot from another.  strata-sim measures
 * it: data.add_join_hrw and data.rm_remap_hrw.
 *
 * Guarantees: distinct devices; with nr_dom >= width every slot in a
 * domain of its own, with fewer each domain holds floor or ceil(width /
 * nr_dom) slots (while it has devices left); every domain and device
 * equally likely in
 * expectation (no per-tile exact balance as pd_group_map() has).  Keys
 * must be distinct (equal keys tie: the lower index wins).  Cost: O(p)
 * per call (p + domains hashes), no allocation.  Pure and thread-safe.
 * Not yet the placement of any layout: pools are fixed at creation until
 * a server can join a running cluster (docs/ha.md "Not done yet").
 */
void pd_group_map_hrw(const struct pd_geom *g, const uint8_t *dom,
		      uint32_t nr_dom, const uint64_t *dom_key,
		      const uint64_t *dev_key, const struct st_id *id,
		      uint64_t group, uint32_t *devs);

/** The inverse of pd_group_map_hrw(), as pd_dev_slot() is of
 *  pd_group_map(). */
int pd_dev_slot_hrw(const struct pd_geom *g, const uint8_t *dom,
		    uint32_t nr_dom, const uint64_t *dom_key,
		    const uint64_t *dev_key, const struct st_id *id,
		    uint64_t group, uint32_t dev);

#endif
