/*
 * layout.h — how an object's blocks map onto devices.
 *
 * A layout is chosen per object at CREATE and stored in its entity record.
 * The client side computes placement from the layout and the object id
 * alone (DESIGN.md decision 4): nothing is looked up per block.  The engine
 * asks the layout, for a range of blocks, which device holds each part
 * (layout_map) and then allocates space there out of place.
 *
 * Only the plain layout exists so far: every block of the object on one
 * device of a chosen tier, picked at create by hashing the object id over
 * the tier's devices.  Parity-declustered, mirror and composite layouts
 * implement the same ops table (issue "Layouts, four tiers, erasure
 * coding").
 */
#ifndef STRATA_CORE_LAYOUT_H
#define STRATA_CORE_LAYOUT_H

#include <stdint.h>

#include "core/types.h"

/** A layout instance, as stored with the object. */
struct layout {
	uint32_t ly_type; /**< enum st_layout_type */
	uint32_t ly_tier; /**< enum st_tier */
	uint32_t ly_dev;  /**< device index (plain) */
};

/** Where a run of object blocks lives: device and object-relative blocks. */
struct layout_target {
	uint32_t lt_dev;
	uint64_t lt_blk;
	uint64_t lt_nr_blks;
};

/** Devices a layout may place onto: index and tier of each. */
struct layout_pool {
	uint32_t lp_nr;
	const uint32_t *lp_tier; /**< lp_tier[i] = tier of device i */
	/** Optional (NULL: none): lp_domain[i] = failure domain of device i,
	 *  0 = none, else 1 + the index of the server holding it (cluster
	 *  mode); unit layouts spread a group over distinct domains first
	 *  (pd_group_map_dom, layouts/pdclust.h). */
	const uint32_t *lp_domain;
};

struct layout_ops {
	const char *lo_name;
	/** Choose devices for a new object id over pool; fills l.
	 *  -EINVAL (bad tier) or -ENOSPC (no device of that tier). */
	int (*lo_place)(struct layout *l, const struct layout_pool *pool,
			const struct st_id *id);
	/** Split blocks [blk, blk + nr) into at most *nr_out targets.
	 *  Sets *nr_out; -E2BIG if more would be needed. */
	int (*lo_map)(const struct layout *l, uint64_t blk, uint64_t nr,
		      struct layout_target *out, uint32_t *nr_out);
};

/** The ops of layout type t, or NULL for an unknown type. */
const struct layout_ops *layout_ops_get(uint32_t type);

/**
 * Set up l for a new object: type and tier from the caller, devices chosen by
 * the type's placement over pool.  Returns 0, -EINVAL (unknown type or
 * tier, message names the field), -ENOSPC (no device of the tier).
 */
int layout_place(struct layout *l, uint32_t type, uint32_t tier,
		 const struct layout_pool *pool, const struct st_id *id);

/** Map blocks to targets through l's type (see layout_ops.lo_map). */
int layout_map(const struct layout *l, uint64_t blk, uint64_t nr,
	       struct layout_target *out, uint32_t *nr_out);

/** A 64-bit hash of an id, the same on every machine (placement input). */
uint64_t layout_id_hash(const struct st_id *id);

#endif
