/* layout.c — layout type dispatch and shared helpers (see layout.h). */
#include <errno.h>

#include "core/errors.h"
#include "core/layout.h"

extern const struct layout_ops layout_plain_ops;

const struct layout_ops *layout_ops_get(uint32_t type)
{
	switch (type) {
	case ST_LAYOUT_PLAIN:
		return &layout_plain_ops;
	default:
		return NULL;
	}
}

int layout_place(struct layout *l, uint32_t type, uint32_t tier,
		 const struct layout_pool *pool, const struct st_id *id)
{
	const struct layout_ops *ops = layout_ops_get(type);

	if (ops == NULL)
		return err_set(-EINVAL, "layout: unknown layout type %u", type);
	if (tier >= ST_TIER_NR)
		return err_set(-EINVAL, "layout: unknown tier %u", tier);
	l->ly_type = type;
	l->ly_tier = tier;
	return ops->lo_place(l, pool, id);
}

int layout_map(const struct layout *l, uint64_t blk, uint64_t nr,
	       struct layout_target *out, uint32_t *nr_out)
{
	const struct layout_ops *ops = layout_ops_get(l->ly_type);

	if (ops == NULL)
		return err_set(-ST_ECORRUPT, "layout: stored type %u unknown",
			       l->ly_type);
	return ops->lo_map(l, blk, nr, out, nr_out);
}

/* splitmix64 finaliser over both halves: cheap, well mixed, portable. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t layout_id_hash(const struct st_id *id)
{
	return mix64(id->si_hi ^ mix64(id->si_lo + 0x9e3779b97f4a7c15ull));
}
