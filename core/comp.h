/*
 * comp.h — composite objects (core/comp.c): layers are sub-objects, the
 * composite's extent map names the layer of each block; writes go to the
 * top layer, moves are one atomic commit per run.
 */
#ifndef STRATA_CORE_COMP_H
#define STRATA_CORE_COMP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine.h"

/* Composite objects (core/comp.c). */
/** Object requests on a composite (obj_exec()). */
int comp_exec(struct eng *e, struct eng_req *r);
/** The sub-layout request of a composite WRITE: r is aimed at the top
 *  layer's sub-object (er_comp set; er_id and er_ent the sub-object's), as
 *  comp_exec() does before it writes, so its parity groups and lock slots
 *  are the layer's (stripe_req_groups()) and eng_exec() then writes that
 *  layer (with er_glocked, under locks its caller holds: a dtx).  Other
 *  kinds, other layouts and requests already aimed: nothing.  0,
 *  -EINVAL (no layer yet), -ENOENT (deleted) or another negative code. */
int comp_resolve(struct eng *e, struct eng_req *r);
/** In obj_apply() of a layer's write: map the blocks to the layer in the
 *  composite and grow its size (r->er_comp set); the composite's record
 *  as it now stands goes to *comp (its FDMI record). */
int comp_apply(struct eng *e, MDB_txn *txn, struct eng_req *r,
	       struct meta_ent *comp);
/** In obj_apply() of a move, before it changes anything: -EAGAIN (a soft
 *  failure, message set) when a write, free or move of the same blocks was
 *  applied since the move read them; else 0.  Other requests: 0. */
int comp_move_check(struct eng *e, const struct eng_req *r);
/** The committer, once a batch's transaction committed or was discarded:
 *  the move generations its composite updates bumped are bumped again
 *  (core/comp.c). */
void comp_gen_settle(struct eng *e);
/** In the commit of a DELETE: the layers' sub-objects and records, and
 *  the composite's map; space goes to freed. */
int comp_delete(struct eng *e, MDB_txn *txn, const struct st_id *id,
		struct eng_spacevec *freed);
/** Layers of composite id: the contracts are those of
 *  clovis_obj_layer_add(), _drop(), _list(), _move() and _of() (clovis.h). */
int comp_layer_add(struct eng *e, const struct st_id *id,
		   const struct meta_ent *sub, uint32_t priority,
		   uint32_t *layer);
int comp_layer_drop(struct eng *e, const struct st_id *id,
		    uint32_t layer);
int comp_layer_list(struct eng *e, const struct st_id *id,
		    struct st_layer_info *out, uint32_t *nr);
int comp_move(struct eng *e, const struct st_id *id, uint64_t start,
	      uint64_t nr, uint32_t to, uint64_t *moved);
int comp_where(struct eng *e, const struct st_id *id, uint64_t blk,
	       uint32_t *layer);
/** Scrub object id's units, as clovis_obj_scrub() (clovis.h): a pdclust
 *  or mirror object's, a composite's pdclust and mirror layers' (summed
 *  into *st), nothing for a plain one (*st zeroed, 0).  0, -EIO (units
 *  that could not be rebuilt), -ENOENT, or a negative code. */
int comp_obj_scrub(struct eng *e, const struct st_id *id,
		   struct stripe_walk_stats *st);
/** The runs of [start, start + nr) of composite id per layer, as
 *  clovis_obj_layer_map() (clovis.h): at most *n_out into out (*n_out
 *  set to those filled), *next where to go on (start + nr: covered). */
int comp_layer_map(struct eng *e, const struct st_id *id, uint64_t start,
		   uint64_t nr, struct st_layer_ext *out, uint32_t *n_out,
		   uint64_t *next);

#endif
