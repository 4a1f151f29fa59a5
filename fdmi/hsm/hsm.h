/*
 * hsm.h — the HSM plugin (issue 31 point 4; the program strata-hsm,
 * fdmi/hsm/hsm_main.c): a Clovis client and an FDMI consumer that keeps a
 * catalog of the store's objects (SQLite: size, layout, last write, last
 * read, reads in the heat window with the span of blocks they read, the
 * tier of each run of a composite object's blocks) and moves composite
 * objects — or a promotion's hot span of one — between tiers by the rules
 * and watermarks of a policy (hsm_policy.h).
 *
 * A round (hsm_round()): read every FDMI record the consumer has (next,
 * catalog, ack), then pick actions: each rule in order over the objects of
 * its class (LRU or MRU by last access, at most max_objects), then each
 * watermark whose tier is fuller than its high mark (its coldest objects,
 * LRU, until the bytes moved bring it to its low mark); an object moves at
 * most once a round.  The actions run with at most ops_in_flight at once,
 * paced to bytes_per_s.
 *
 * What moves: a promote rule moves the object's hot span — the blocks
 * from the lowest start to the highest end of the reads in the policy's
 * window, cut at the object's size — or every block when no read in the
 * window says which blocks it read (old catalog rows, or no read); a
 * demote or archive rule and a watermark drain move every block.  An
 * object whose range is all on the target tier already is not picked.
 *
 * A move of object O (its range) to tier T (composite objects only;
 * others are left alone, and said so once in the log): a layer of O on T
 * is found or added (a plain layer).  Moving up — T faster than the tier
 * of O's top layer — the data goes to the top: the top layer if it is on
 * T, else a new layer above it, so that the writes that follow land on the
 * faster tier too.
 * Moving down, an existing plain layer on T, else one added below every
 * other (writes keep going to O's top layer).  Every block of the range is
 * moved to it (clovis_obj_layer_move(): read, written, and remapped in one
 * commit; a block written meanwhile keeps the newer data), and every other
 * layer left empty is dropped, except the top one.  A write that raced the
 * move leaves its blocks in the top layer: the action is recorded
 * "partial" and the same range is moved again by a later round (nothing
 * is lost).  The catalog's runs of O are mapped again after each move.
 *
 * Every action is logged in the catalog (seq, time, object, the range
 * when not the whole object, rule or mark, from tier, to tier, blocks and
 * bytes moved, state) and can be undone (hsm_undo(): the action's blocks
 * moved back to its from tier, itself an action).  With dry_run the
 * actions are printed and nothing is moved, logged or acked.
 */
#ifndef STRATA_FDMI_HSM_HSM_H
#define STRATA_FDMI_HSM_HSM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clovis/clovis.h"
#include "fdmi/hsm/hsm_policy.h"

struct hsm;

/** Default FDMI consumer name of strata-hsm. */
#define HSM_CONSUMER "hsm"

struct hsm_conf {
	struct clovis *hc_cl;
	const struct hsm_policy *hc_policy;
	const char *hc_db;        /**< catalog path (SQLite file) */
	const char *hc_consumer;  /**< NULL: HSM_CONSUMER */
	bool hc_dry_run;
	FILE *hc_out;             /**< actions and notes (NULL: stdout) */
	bool hc_json;             /**< actions as JSON lines */
};

/** What one round did. */
struct hsm_round_stats {
	uint64_t hr_records;      /**< FDMI records read */
	uint32_t hr_picked;       /**< actions chosen */
	uint32_t hr_done;         /**< moves that completed */
	uint32_t hr_partial;      /**< moves a write raced (picked again) */
	uint32_t hr_failed;
	uint64_t hr_bytes;        /**< bytes moved */
};

/** Open the catalog and register the consumer (its filter: the object and
 *  layer records, reads).  0 and *out, or a negative code with a message. */
int hsm_open(const struct hsm_conf *c, struct hsm **out);
void hsm_close(struct hsm *h);
/** One round (see above).  0, or a negative code with a message (the
 *  round stops at the first failure of the store; a failed move is
 *  logged, counted and does not stop it). */
int hsm_round(struct hsm *h, struct hsm_round_stats *st);
/** Print the action log (JSON lines with json). */
int hsm_actions(struct hsm *h, FILE *out, bool json);
/** Undo action seq: move its blocks (its range, else all of its object)
 *  back to the action's from tier.  0, -ENOENT (no such action, or its
 *  object is gone), -EINVAL (the action failed or was undone already), or
 *  a negative code; each with a message. */
int hsm_undo(struct hsm *h, uint64_t seq);
/**
 * Print what the catalog holds of object id (read only: as the last round
 * or move that looked at it left it): its layout, size, the tier holding
 * most of it, reads in the policy's window and their span, then each run
 * of its blocks (start, blocks, tier) in block order.  json: one JSON
 * object on one line, the runs in "extents".  0, -ENOENT (not in the
 * catalog: message names it) or a negative code.
 */
int hsm_catalog(struct hsm *h, const struct clovis_id *id, FILE *out,
		bool json);

#endif
