/*
 * pg.h — metadata placement groups (issue 28 item 3): which group an
 * object's or index's metadata belongs to, and which servers hold a group.
 *
 * The metadata of an object or an index (its layout, size, unit map or
 * versions) belongs to one of P placement groups, P fixed when the cluster
 * is made (the map's hm_pgs, ha/ha.h), chosen from its id by pg_of().  Each
 * group is held by R servers that pg_place() chooses from the map's servers
 * by rendezvous (highest random weight, HRW) hashing: every server gets a
 * score per group, a pure function of (group, server key), and the group
 * goes to the best-scoring servers, one per enclosure (failure domain)
 * where the map has enough enclosures.
 *
 * Why HRW: a server's score for a group does not depend on the other
 * servers, so adding a server X changes the set of exactly the groups where
 * X now scores among the chosen, and in each of them X replaces exactly one
 * member; removing X changes exactly the groups whose set held X, each by
 * one member.  So a server added or removed moves only its own share of
 * groups (R * P / N replicas), the minimum (core/ut/pg_ut.c checks it
 * exactly, and tests/sim/strata_sim.c at 1,000 and 10,000 servers).
 * One exception, forced by the enclosure rule: in a map of fewer than R
 * enclosures, a server that brings a new one joins every group (each must
 * take the new enclosure), still in place of one member each.
 * Cost: O(nr * R) per call, no allocation; nothing is stored, so every
 * machine that has the same candidate list computes the same sets.
 *
 * Stability: the hashes below are part of the format of a cluster (a
 * group's servers are found again from them after a restart, by every
 * server and client, of any version): they never change.  The unit suite
 * pins their values for a few ids and names, so a change is caught.
 *
 *   mix(x)   the splitmix64 finaliser: x ^= x >> 30; x *= 0xbf58476d1ce4e5b9;
 *            x ^= x >> 27; x *= 0x94d049bb133111eb; x ^= x >> 31 (mod 2^64).
 *   pg_of    h = mix(hi ^ mix(lo ^ 0x7067706c6163652e)) (the salt is
 *            "pgplace."), group = the high 64 bits of the 128-bit product
 *            h * nr_pgs: uniform over 0..nr_pgs-1, and independent of
 *            layout_id_hash() (core/layout.h), which places the units.
 *   pg_key   FNV-1a 64 over the name's bytes (offset basis
 *            0xcbf29ce484222325, prime 0x100000001b3), then mix().
 *   score    score(g, key) = mix(mix(g ^ 0x7067736372652e2e) ^ key) (salt
 *            "pgscre..").  mix is a bijection, so two distinct keys never
 *            get equal scores for a group: no ties.
 *   weight   with weights (pc_weight), a server ranks by w / L, L =
 *            -log2(u), u = ((score >> 11) + 1) / 2^53 in (0, 1]: the
 *            logarithmic method of weighted rendezvous hashing, which
 *            gives each server a share of groups proportional to w.  L is
 *            computed in integers (Q6.58: for u > 15/16 the series of
 *            -ln(1 - t) to t^4, else a 129-entry table of log2(1 + i/128)
 *            with linear interpolation; relative error under 1.3e-4,
 *            monotone), so every machine ranks alike; w_a / L_a is
 *            compared with w_b / L_b by 128-bit cross products, equal
 *            ranks going to the higher score.  When every candidate has
 *            the same weight this is exactly the order of the scores.
 *
 * Pure and thread-safe; includes only the ground floor.
 */
#ifndef STRATA_CORE_PG_H
#define STRATA_CORE_PG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/limits.h"
#include "core/types.h"

/**
 * One candidate server of a placement.  The caller builds the array from
 * its map in any order it likes (the order changes nothing but which of
 * two candidates with equal keys wins, see pg_place()).
 */
struct pg_cand {
	/** Stable key of the server: pg_key(its name) in a cluster.  Keys
	 *  must be distinct (equal keys give equal scores). */
	uint64_t pc_key;
	/** Its enclosure (failure domain); servers with equal values share
	 *  one.  A server with no enclosure of its own gets a value no
	 *  other server has (its index, its key...). */
	uint32_t pc_encl;
	/** Relative capacity: a server gets a share of groups proportional
	 *  to it (0 counts as 1; equal weights everywhere = unweighted).
	 *  Changing one server's weight moves groups only to or from it. */
	uint32_t pc_weight;
	/** In the map (holds groups).  A server that is DOWN but not yet OUT
	 *  stays in: its groups keep their sets and the caller takes the
	 *  first live member as primary.  OUT, drained or removed servers are
	 *  not in, and are never chosen. */
	bool pc_in;
};

/**
 * The placement group (0..nr_pgs-1) of the object or index id: the pg_of
 * hash of the header comment.  nr_pgs 0 gives 0 (a map with no groups is
 * refused by pg_place()'s callers, not here).  Pure.
 */
uint32_t pg_of(const struct st_id *id, uint32_t nr_pgs);

/**
 * The stable key of a server named name (NUL-terminated): the pg_key hash
 * of the header comment.  Keep the name for life: a renamed server is a
 * new server to placement.
 */
uint64_t pg_key(const char *name);

/**
 * The HRW score of candidate key for group pg (the score of the header
 * comment); exported for tests and the simulation, which must agree with
 * pg_place() exactly.
 */
uint64_t pg_score(uint32_t pg, uint64_t key);

/**
 * Whether candidate a ranks above candidate b for group pg (the weight
 * rule of the header comment; scores alone when the weights are equal).
 * Exported for tests and the simulation.
 */
bool pg_above(uint32_t pg, const struct pg_cand *a, const struct pg_cand *b);

/**
 * Choose the servers of group pg among cands[0..nr-1].
 *
 * In: cands (not modified), nr (0..PG_CANDS_MAX), r replicas wanted
 * (1..PG_REPLICAS_MAX).  Out: out[0..ret-1], indices into cands, pairwise
 * distinct, every one a candidate with pc_in; out must have room for r.
 *
 * Which: among the candidates that are in, each enclosure's best-ranked
 * server is its leader (rank: pg_above(), the score, or with unequal
 * weights the weighted score); the group takes the r best-ranked leaders,
 * best first.  When the map has fewer enclosures than r (say 2
 * enclosures, R = 3), every enclosure's leader is taken and the places
 * left go to the best-ranked other servers, best first, so an
 * enclosure then holds more than one replica of some groups (there is no
 * other way to hold r copies).  When fewer than r servers are in, all of
 * them are returned.
 *
 * Order: out[0] is the best-ranked server of the set, the primary while
 * it is live; a caller that knows a member is down takes the first live
 * one of out[] (every server computes the same order, so they agree).
 * The order only changes where the set changes.
 *
 * Returns the number of servers chosen, min(r, servers in), 0 when none is
 * in; or -EINVAL (err_set(), naming the argument) when r is 0 or above
 * PG_REPLICAS_MAX, nr above PG_CANDS_MAX, or cands or out is NULL with
 * work to do.  Two candidates with equal keys: the lower index wins (a
 * caller error that stays deterministic).  Pure, thread-safe, no
 * allocation, O(nr * r) (a few ns a candidate; with unequal weights a
 * few more for the integer logarithm).
 */
int pg_place(uint32_t pg, const struct pg_cand *cands, uint32_t nr,
	     uint32_t r, uint32_t *out);

#endif /* STRATA_CORE_PG_H */
