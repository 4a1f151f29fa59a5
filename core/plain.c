/* plain.c — the plain layout: every block on one device of a tier. */
#include <errno.h>

#include "core/errors.h"
#include "core/layout.h"

/* Pick the device: hash the id over the devices of the wanted tier, so that
 * objects spread evenly over a tier's devices without any lookup. */
static int plain_place(struct layout *l, const struct layout_pool *pool,
		       const struct st_id *id)
{
	uint32_t nr = 0, pick;

	for (uint32_t i = 0; i < pool->lp_nr; i++)
		nr += pool->lp_tier[i] == l->ly_tier;
	if (nr == 0)
		return err_set(-ENOSPC, "layout: no device of tier %u",
			       l->ly_tier);
	pick = (uint32_t)(layout_id_hash(id) % nr);
	for (uint32_t i = 0; i < pool->lp_nr; i++) {
		if (pool->lp_tier[i] != l->ly_tier)
			continue;
		if (pick-- == 0) {
			l->ly_dev = i;
			break;
		}
	}
	return 0;
}

/* One target: the whole range on the object's device. */
static int plain_map(const struct layout *l, uint64_t blk, uint64_t nr,
		     struct layout_target *out, uint32_t *nr_out)
{
	if (*nr_out < 1)
		return -E2BIG;
	out[0] = (struct layout_target){
		.lt_dev = l->ly_dev, .lt_blk = blk, .lt_nr_blks = nr};
	*nr_out = 1;
	return 0;
}

const struct layout_ops layout_plain_ops = {
	.lo_name = "plain",
	.lo_place = plain_place,
	.lo_map = plain_map,
};
