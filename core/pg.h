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
 * Pure and thread-safe; includes only the ground floor.  pg_place() and
 * pg_place_up() allocate nothing; pg_balance() (below) allocates its work
 * arrays and the table it returns.
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

/*
 * Balancing (issue 28 item 5).  HRW gives every server its share of
 * groups only on average: with M replicas a server the counts scatter by
 * about sqrt(M), so at 384 a server (128 groups x 3 replicas) the fullest
 * of 1,000 servers holds about 16 % more than the mean.  More groups
 * shrink the scatter only as 1 / sqrt(M), and each group costs a log and
 * a state on R servers.  So, as Ceph's upmap balancer does, a short table
 * of exceptions kept in the map moves single replicas from the fullest
 * servers to the emptiest: an exception (pu_pg, pu_from, pu_to) says "in
 * group pu_pg, the server keyed pu_from is replaced by the server keyed
 * pu_to".  HRW still decides everything else, so a server added or
 * removed still moves only its own share, plus the few replicas the
 * balancer then moves to even out what it received.
 *
 * An exception applies only while it is valid: pu_from is in the group's
 * HRW set (pg_place()), pu_to is an in candidate not in the set, and the
 * set after the swap spans no fewer enclosures than before.  An invalid
 * one is skipped (the group keeps its HRW member); pg_balance() drops
 * them from the table it returns.
 */

/** One exception of a balanced placement (keys as struct pg_cand's). */
struct pg_upmap {
	uint32_t pu_pg;   /**< the group */
	uint32_t pu_pad;  /**< zero */
	uint64_t pu_from; /**< key of the HRW member replaced */
	uint64_t pu_to;   /**< key of the server that holds it instead */
};

/**
 * pg_place(), then the group's valid exceptions of up[0..nr_up-1] (sorted
 * by pu_pg, as pg_balance() returns them; NULL with nr_up 0 for none),
 * each one replacing its member in place (a replaced primary's place goes
 * to its replacement, so out[0] stays the primary).  Returns what
 * pg_place() returns.  Pure; O(nr * r + log(nr_up) + (exceptions of the
 * group) * nr) (a key is looked up by a scan).
 */
int pg_place_up(uint32_t pg, const struct pg_cand *cands, uint32_t nr,
		uint32_t r, const struct pg_upmap *up, uint32_t nr_up,
		uint32_t *out);

/**
 * The exceptions half of pg_place_up(), for a caller that has group pg's
 * HRW set already: out[0..n-1] = raw[0..n-1] (what pg_place() returned
 * for pg over the same cands) with the group's valid exceptions applied.
 * out and raw must not overlap.  Pure.
 */
void pg_upmap_apply(uint32_t pg, const struct pg_cand *cands, uint32_t nr,
		    const struct pg_upmap *up, uint32_t nr_up,
		    const uint32_t *raw, uint32_t n, uint32_t *out);

/**
 * Compute a balanced exception table.
 *
 * In: cands[0..nr-1] and r as for pg_place(); nr_pgs groups (1..
 * PG_NR_MAX); sets[pg * r + i], the HRW sets pg_place() returns for
 * every group (entries past its count UINT32_MAX; the caller computes
 * them, on as many threads as it likes); prev (NULL for none), laid out
 * as sets: each group's servers before this map (what holds its data
 * now; indices into the same cands, UINT32_MAX for none); sizes (NULL:
 * 1 each), each group's size (objects, records or bytes it holds: what a
 * server's load counts; groups are made empty, so a balancer run on a
 * live cluster weighs what they hold); tol_ppm, the
 * tolerance in millionths (30,000: no server above 1.03 x its share);
 * old[0..nr_old-1] the table in force (NULL, 0 for none), sorted by
 * pu_pg.
 *
 * What: the valid exceptions of old are kept (a balanced map stays as it
 * is); then, taking the groups in order, a replica on a server over its
 * limit moves -- back to a server of the group's prev set when one may
 * take it (nothing to copy), else to the in server furthest below its
 * share that may hold it (not in the group; enclosures no fewer) -- while
 * that server stays at or under its share.  Replicas new on their server
 * since prev move first (they are copied anyway).  A server once over
 * its limit is brought down to share x (1 + tol_ppm / 2 / 10^6) by its
 * fresh replicas (all of them without prev), leaving it room for what a
 * later map change brings.  A server's load: the sizes of the groups it
 * holds; its share: the sizes placed, times its weight over the in
 * servers' weights (pc_weight, 0 counting as 1); its limit: share x (1 +
 * tol_ppm / 10^6).  Moves go
 * only from over a limit to under a share, so a placement within the
 * tolerance gets no new exception.  All arithmetic is in integers: every
 * machine gets the same table from the same input.
 *
 * Out: *out (malloc()ed, caller frees; NULL when *nr_out is 0) sorted by
 * pu_pg then HRW position, at most r exceptions a group.
 * Returns 0; -EINVAL (err_set(), naming the argument) for r, nr or nr_pgs
 * out of range, a set naming a server that is not an in candidate, or a
 * NULL pointer; -ENOMEM.  Cost: O(nr_pgs * r) plus, per move, a scan of
 * the servers under their share (the moves are about the sum of the
 * excesses: 1 % of the replicas at 1,000 servers, 128 groups each).
 */
int pg_balance(const struct pg_cand *cands, uint32_t nr, uint32_t nr_pgs,
	       uint32_t r, const uint32_t *sets, const uint32_t *prev,
	       const uint64_t *sizes, uint32_t tol_ppm,
	       const struct pg_upmap *old, uint32_t nr_old,
	       struct pg_upmap **out, uint32_t *nr_out);

#endif /* STRATA_CORE_PG_H */
