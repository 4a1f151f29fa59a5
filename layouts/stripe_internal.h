/*
 * stripe_internal.h — what the files of the unit layouts (stripe.c,
 * stripe_read.c, stripe_write.c, stripe_walk.c) share: the op context, a
 * parity group as the op sees it, and the helpers one file defines for the
 * others.  The contract is stripe.h.
 */
#ifndef STRATA_LAYOUTS_STRIPE_INTERNAL_H
#define STRATA_LAYOUTS_STRIPE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/meta_txn.h"
#include "layouts/stripe.h"
#include "layouts/ec.h"
#include "layouts/pdclust.h"

#define UMAX ST_LAYOUT_UNITS_MAX

/** One op over one object with a unit layout. */
struct sctx {
	struct eng *sc_e;
	struct eng_req *sc_r;
	struct meta_ent sc_ent;
	struct pd_geom sc_geom;
	uint32_t sc_n, sc_k;   /* data, parity (mirror: 1, copies - 1) */
	uint32_t sc_w;         /* n + k: addressed slots per group */
	uint32_t sc_width;     /* n + k + s */
	uint64_t sc_unit;      /* bytes */
	bool sc_mirror;
	struct ec_codec *sc_codec;
	const struct eng_pool *sc_pool;
	uint8_t *sc_mem;       /* w unit buffers */
	uint8_t *sc_bufs[UMAX];
	uint64_t *sc_bvpre;    /* prefix sums of the caller's buffer lengths */
};

/** One parity group as the op sees it. */
struct sgroup {
	uint64_t sg_g;
	uint32_t sg_devs[UMAX];       /* store device of every slot (width) */
	struct meta_unit sg_rec[UMAX]; /* records of slots 0..w-1 */
	uint32_t sg_has;              /* slots with a record */
};

/** An extent of the request in bytes, with its place in the buffers. */
struct brange {
	uint64_t br_start, br_end; /* object bytes */
	uint64_t br_flat;          /* offset in the caller's buffers */
};

static inline const char *stripe_sc_id(const struct sctx *sc)
{
	return eng_id_str(&sc->sc_r->er_id);
}

static inline uint64_t stripe_group_bytes(const struct sctx *sc)
{
	return sc->sc_unit * sc->sc_n;
}

static inline bool stripe_dev_in(const uint32_t *v, uint32_t nr, uint32_t d)
{
	for (uint32_t i = 0; i < nr; i++)
		if (v[i] == d)
			return true;
	return false;
}

/* stripe.c: the context, caller buffers, extents */

int stripe_sctx_init(struct sctx *sc, struct eng *e, struct eng_req *r,
		     const struct meta_ent *ent);
void stripe_sctx_fini(struct sctx *sc);
/* The store device of every slot of group g. */
void stripe_group_place(const struct sctx *sc, struct sgroup *sg, uint64_t g);
/* Read the records of every slot of sg in txn. */
int stripe_group_load(struct sctx *sc, MDB_txn *txn, struct sgroup *sg);
/* Prefix sums of the caller's buffer lengths (random access by offset). */
int stripe_bv_prefix(struct sctx *sc);
/* Copy len bytes between the caller's buffers at flat offset off and p. */
void stripe_bv_copy(struct sctx *sc, uint64_t off, uint8_t *p, uint64_t len,
		    bool to_caller);
/* The request's extents in bytes, sorted by start. */
int stripe_sc_ranges(struct sctx *sc, struct brange **out);

/* stripe_read.c: group reads (degraded, with reconstruction), READ */

/*
 * Queue reads of the slots in mask into bufs (io[*nr], slot[*nr]): a slot
 * with no record reads as zeros at once when it is a data slot (never
 * written) or the group has no record at all; a slot whose device is not
 * usable or whose record is MU_LOST is not fetched; slots already in *ok
 * or *bad are skipped.
 */
void stripe_group_fetch_prep(struct sctx *sc, struct sgroup *sg,
			     uint8_t *const *bufs, uint32_t mask, uint32_t *ok,
			     uint32_t bad, struct tier_io *io, uint32_t *slot,
			     uint32_t *nr);
/*
 * After tier_io_run() of what stripe_group_fetch_prep() queued: a slot
 * whose read failed or whose checksum does not match goes to *bad (the
 * device's error is counted), the others to *ok; one whose read failed
 * in the transport and whose device is unreachable now (a remote device
 * whose server the call found away) goes to neither.
 */
void stripe_group_fetch_check(struct sctx *sc, struct sgroup *sg,
			      uint8_t *const *bufs, const struct tier_io *io,
			      const uint32_t *slot, uint32_t nr, uint32_t *ok,
			      uint32_t *bad);
/*
 * Given the slots already fetched (*ok) and found damaged (*bad), make bufs
 * hold every slot in want: when some is missing and fewer than N units are
 * at hand, fetch the rest of the group; then rebuild the missing ones (ISA-L
 * decode of up to K lost units, or a mirror copy).
 */
int stripe_group_finish(struct sctx *sc, struct sgroup *sg, uint8_t **bufs,
			uint32_t want, uint32_t *ok, uint32_t *bad);
/*
 * Make sc_bufs hold the content of every slot in want: read them, and if
 * any cannot be read, read the rest of the group and reconstruct (up to K
 * lost units).  *bad: slots found damaged on a usable device.
 */
int stripe_group_read(struct sctx *sc, struct sgroup *sg, uint32_t want,
		      uint32_t *bad);
/* READ. */
int stripe_read(struct sctx *sc);

/* stripe_write.c: WRITE, ALLOC, FREE */

/* Add a unit update to the request. */
int stripe_req_upd_add(struct eng_req *r, const struct unit_upd *u);
/*
 * The device slot j of sg is written to: its placed device when usable,
 * else a usable spare slot's device, else any usable pool device; never a
 * device already holding another unit of the group (used[0..*nused)).
 * Returns the device, or UINT32_MAX when none is left.
 */
uint32_t stripe_slot_target(struct sctx *sc, const struct sgroup *sg,
			    uint32_t j, uint32_t *used, uint32_t *nused);
/*
 * Take space for one unit of buf on device d: on a zoned device the unit is
 * appended now (the driver puts it at the write pointer; with reclaim, an
 * ordinary write outside any RCU read-side section, the cleaner may run
 * to make room); otherwise space is taken and a write queued in io[*nr]
 * for tier_io_run().  Sets *off.
 */
int stripe_unit_space(struct eng *e, uint32_t d, uint8_t *buf, uint64_t len,
		      struct eng_citem *ci, uint64_t *off, struct tier_io *io,
		      uint32_t *nr, bool reclaim);
/* Collect the distinct groups the sorted ranges touch. */
int stripe_ranges_groups(const struct sctx *sc, const struct brange *br,
			 uint32_t nbr, uint64_t **out, uint32_t *nr);
/* Group lock slots of the op's groups: sorted, distinct. */
int stripe_lock_slots(struct eng_req *r, const uint64_t *groups, uint32_t nr);
/*
 * WRITE, FREE and ALLOC.  FREE and ALLOC make the blocks read as zeros: a
 * group they cover entirely loses all its unit records; in a group they
 * cover in part, the data units they cover entirely lose their records and
 * the rest is rewritten with zeros by read-modify-write, with new parity.
 * (ALLOC reserves no space on unit layouts: every write takes fresh space
 * anyway; obj_apply() grows the size.)
 */
int stripe_update(struct sctx *sc);

#endif
