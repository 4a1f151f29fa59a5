/*
 * stripe.h — I/O of objects with redundant layouts (pdclust and mirror):
 * placement, parity, checksums, degraded reads, read-repair; and the
 * device-wide walks built on them (repair, rebalance, scrub).
 *
 * The object's bytes are cut into units of 2^unit_shift bytes; N data units
 * make a parity group, to which the layout adds K parity units (ISA-L
 * Reed-Solomon; for mirror, K copies) and S spare slots.  pd_group_map()
 * (layouts/pdclust.h) places the N + K + S slots of every group on distinct
 * devices of the object's pool.  Unit (group g, slot j) is stored as one
 * record of the unit table: key (object, g * (N + K) + j) -> device, offset,
 * length and crc64 of the unit (struct meta_unit).  The record says where
 * the unit is NOW: on its placed device, or on a spare device after repair.
 *
 * Two halves, as in cluster mode (DESIGN.md decision 5):
 *   client half  (stripe_*_exec): maps blocks to groups, reads what a
 *                partial-group write needs (read-modify-write), computes
 *                parity and checksums, picks each unit's device (a failed
 *                device's unit goes to a spare slot), reconstructs lost or
 *                corrupt units on read (up to K per group);
 *   target half  (unit_*): stores units out of place on a device, checks
 *                the checksum of what it stores and of what it reads, and
 *                applies a request's unit records in ONE commit item, so an
 *                op is atomic: after a crash every group it touched is
 *                entirely old or entirely new.
 * Concurrent writers to one group are serialised by group locks held from
 * the read of a read-modify-write until the op's commit is visible.
 */
#ifndef STRATA_LAYOUTS_STRIPE_H
#define STRATA_LAYOUTS_STRIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine.h"

/** One unit record change of a request (applied at its commit). */
struct unit_upd {
	struct st_id uu_obj;   /**< object; {0, 0}: the request's */
	uint64_t uu_addr;          /**< g * (N + K) + slot */
	struct meta_unit uu_new;   /**< record to put (unless uu_del) */
	struct meta_unit uu_expect; /**< with uu_cas: the record must still be
				     *  this (uu_expect_absent: no record) */
	bool uu_del;
	bool uu_cas;
	bool uu_expect_absent;
};

/** READ/WRITE/ALLOC/FREE of an object with a unit layout (obj_exec()). */
int stripe_exec(struct eng *e, struct eng_req *r, const struct meta_ent *ent);

/** The parity groups an update (WRITE/ALLOC/FREE) of an object with a
 *  unit layout would lock, without running it: *groups (malloc'd, *ng of
 *  them) and its lock slots in r->er_locks (sorted, distinct; the caller
 *  takes them over).  *ng = 0 and no slots for other layouts.  For a dtx
 *  (clovis/dtx.c), which takes every member's slots at once at its commit
 *  and runs the members with r->er_glocked.  0 or a negative code. */
int stripe_req_groups(struct eng *e, struct eng_req *r, uint64_t **groups,
		      uint32_t *ng);

/** The group lock slots of updates that run together under one set of
 *  locks (the unit-layout members of a dtx, embedded or on a cluster
 *  participant): each request's groups (stripe_req_groups(); NULL entries
 *  and requests of other layouts contribute nothing), the union sorted and
 *  distinct in *slots (malloc'd, *nslots of them; the caller takes them
 *  with eng_glock(), runs the requests with er_glocked and releases them
 *  with eng_gunlock()).  Two requests over one parity group of one object
 *  are refused with -EINVAL naming them (1-based, as "ops I and J"): the
 *  second's read-modify-write would not see the first's units, which are
 *  not applied before the commit.  On failure *bad is the index of the
 *  request at fault.  0 or a negative code. */
int stripe_reqs_locks(struct eng *e, struct eng_req **reqs, uint32_t nr,
		      uint32_t **slots, uint32_t *nslots, uint32_t *bad);

/** In obj_apply(): apply the request's unit records. */
int stripe_apply(struct eng *e, MDB_txn *txn, struct eng_req *r);

/** Delete every unit record of obj, adding its space to freed. */
int stripe_delete_units(struct eng *e, MDB_txn *txn,
			const struct st_id *obj, struct eng_spacevec *freed);

/** Delete the unit records of groups [g, g + nr) of obj, whose groups
 *  have w addressed slots (N + K), adding their space to freed (composite
 *  layers whose blocks all moved away, core/comp.c).  Absent records are
 *  skipped.  0 or a negative code. */
int stripe_groups_drop(struct eng *e, MDB_txn *txn, const struct st_id *obj,
		       uint64_t g, uint64_t nr, uint32_t w,
		       struct eng_spacevec *freed);

/** Mark the space of every unit record used (store open). */
int stripe_rebuild_alloc(struct eng *e, MDB_txn *txn);

/** Check a new object's layout attributes and fill defaults. */
int stripe_attr_check(struct eng *e, const struct st_id *id,
		      struct meta_ent *me);

/*
 * Device-wide walks (layouts/stripe_walk.c).  Each is resumable: progress
 * is saved in the sys table with every batch's commit, and a new call
 * continues from it.  A walk keeps up to 16 parity groups in flight (their reads and
 * writes go through the per-device queues of tier_io_run() together), and
 * a repair reads only N survivors of a group to rebuild its lost units.
 */

/* What a walk did: struct stripe_walk_stats, and its progress callback
 * stripe_progress_fn (core/engine.h, where the server reads them). */
int stripe_repair(struct eng *e, stripe_progress_fn fn, void *arg,
		  struct stripe_walk_stats *st);
/* Rebalance: moves units back to their placed devices when those were
 * replaced (flagged for rebalance), and, in pools with failure domains,
 * when the move leaves fewer of the group's units sharing a domain
 * (docs/cluster.md "Rebalance by failure domain"). */
int stripe_rebalance(struct eng *e, stripe_progress_fn fn, void *arg,
		     struct stripe_walk_stats *st);
int stripe_scrub(struct eng *e, stripe_progress_fn fn, void *arg,
		 struct stripe_walk_stats *st);
/** Scrub the units of one object (id: a pdclust or mirror object, or a
 *  composite's such layer): every unit of every group read and checked,
 *  a damaged one rebuilt and rewritten, as stripe_scrub() does for the
 *  whole store, in one call (not saved, not resumed).  0, -EIO (units
 *  that could not be rebuilt: st says how many), or a negative code. */
int stripe_scrub_obj(struct eng *e, const struct st_id *id,
		     struct stripe_walk_stats *st);

/** The data units of bytes [start, end) of object id (record *me), for
 *  function shipping (layouts/stripe_isc.c; struct eng_unit_ref,
 *  core/engine.h). */
int stripe_data_units(struct eng *e, const struct st_id *id,
		      const struct meta_ent *me, uint64_t start, uint64_t end,
		      eng_unit_fn fn, void *arg);

/**
 * The table of all of the above for the engine (struct eng_layout_ops,
 * core/engine.h): whoever assembles the layers (clovis_init(), the
 * strata-server main) hands it to eng_open() in ec_layout_ops, with the
 * erasure codec of layouts/ec.h (ec_codec_create/destroy).
 */
extern const struct eng_layout_ops stripe_layout_ops;

#endif
