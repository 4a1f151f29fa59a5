/*
 * obj.h — objects (core/obj.c): extent maps, out-of-place writes, reads,
 * ALLOC and FREE of plain objects; the extent maps are shared with
 * composite maps (comp.h).  Objects with unit layouts go on to the
 * unit layouts' table (eng_unit_exec(), engine.h; layouts/stripe.h).
 */
#ifndef STRATA_CORE_OBJ_H
#define STRATA_CORE_OBJ_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine.h"

/** One record of an extent map, decoded. */
struct ext_rec {
	uint64_t xr_blk;
	struct meta_ext xr_ext;
};

/** Records overlapping a range, in block order. */
struct ext_list {
	struct ext_rec *xl_v;
	uint32_t xl_nr;
	uint32_t xl_cap;
};

/* Extent maps (core/obj.c), shared with composite maps (core/comp.c). */
/** Collect the records of obj overlapping [s, s + n). */
int ext_lookup(struct meta *m, MDB_txn *txn, const struct st_id *obj,
	       uint64_t s, uint64_t n, struct ext_list *out);
/** The same, at most max records (appended to out). */
int ext_lookup_max(struct meta *m, MDB_txn *txn, const struct st_id *obj,
		   uint64_t s, uint64_t n, uint32_t max, struct ext_list *out);
/** Write the record of obj at block blk. */
int ext_put(struct meta *m, MDB_txn *txn, const struct st_id *obj,
	    uint64_t blk, const struct meta_ext *x);
/** Unmap [s, s + n) of obj; space goes to freed. */
int ext_punch(struct meta *m, MDB_txn *txn, const struct st_id *obj,
	      uint64_t s, uint64_t n, uint32_t shift,
	      struct eng_spacevec *freed);
/** Grow the object's size to cover the request and stamp mtime. */
int obj_size_update(struct eng *e, MDB_txn *txn, struct eng_req *r,
		    struct meta_ent *cur, bool grow);
/** Total blocks of the request's extents. */
uint64_t req_blocks(const struct eng_req *r);

/** Object READ, WRITE, ALLOC, FREE (eng_exec()): a composite goes to
 *  comp_exec(), a unit layout to stripe_exec(). */
int obj_exec(struct eng *e, struct eng_req *r);
/** In the commit of a DELETE: unmap every block of object id (its
 *  extents, unit records or layers); space goes to freed. */
int obj_delete_maps(struct eng *e, MDB_txn *txn, const struct st_id *id,
		    struct eng_spacevec *freed);
/** At open: mark the space of every extent record used in its device's
 *  allocator; -ST_ECORRUPT on an overlap or a record off its device. */
int obj_rebuild_alloc(struct eng *e, MDB_txn *txn);

#endif
