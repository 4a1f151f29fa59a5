/*
 * stripe_write.c — updates of objects with unit layouts (see stripe.h):
 * placement of each unit, read-modify-write of partial groups under group
 * locks, parity and checksums, and WRITE, ALLOC and FREE.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu.h>

#include "addb/addb.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "layouts/stripe_internal.h"

/* ------------------------------------------------------------ writes */

/* Add a unit update to the request. */
int stripe_req_upd_add(struct eng_req *r, const struct unit_upd *u)
{
	if (r->er_nr_upd == r->er_cap_upd) {
		uint32_t cap = r->er_cap_upd ? r->er_cap_upd * 2 : 16;
		struct unit_upd *v = realloc(r->er_upd, cap * sizeof *v);

		if (v == NULL)
			return err_set(-ENOMEM, "unit updates of %u", cap);
		r->er_upd = v;
		r->er_cap_upd = cap;
	}
	r->er_upd[r->er_nr_upd++] = *u;
	return 0;
}

/* Does device d share a failure domain with a device of used[0..nused)?
 * (Never in a store without domains.) */
static bool dom_used(struct eng *e, const uint32_t *used, uint32_t nused,
		     uint32_t d)
{
	uint32_t dm = eng_dev_domain(e, d);

	if (dm == 0)
		return false;
	for (uint32_t i = 0; i < nused; i++)
		if (eng_dev_domain(e, used[i]) == dm)
			return true;
	return false;
}

/* A usable device for slot j other than its placed one: a spare slot's
 * device, then any pool device (from g on), none in used[0..nused); with
 * distinct, none sharing a failure domain with them either.  UINT32_MAX
 * when none. */
static uint32_t slot_other(struct sctx *sc, const struct sgroup *sg,
			   const uint32_t *used, uint32_t nused, bool distinct)
{
	struct eng *e = sc->sc_e;
	const struct eng_pool *p = sc->sc_pool;

	for (uint32_t s = sc->sc_w; s < sc->sc_width; s++) {
		uint32_t c = sg->sg_devs[s];

		if (eng_dev_usable(e, c) && !stripe_dev_in(used, nused, c) &&
		    !(distinct && dom_used(e, used, nused, c)))
			return c;
	}
	for (uint32_t i = 0; i < p->ep_nr; i++) {
		uint32_t c = p->ep_devs[(sg->sg_g + i) % p->ep_nr];

		if (eng_dev_usable(e, c) && !stripe_dev_in(used, nused, c) &&
		    !(distinct && dom_used(e, used, nused, c)))
			return c;
	}
	return UINT32_MAX;
}

/*
 * The device slot j of sg is written to: its placed device when usable,
 * else a usable spare slot's device, else any usable pool device; never a
 * device already holding another unit of the group (used[0..*nused)).
 * In a pool with failure domains (cluster stores: servers) the spare and
 * pool devices of a domain that holds none of the group's other units
 * come first: a unit rebuilt or rewritten beside another of its group
 * would be lost with it when that server dies (before, the first usable
 * spare or pool device was taken, whatever its server: a repair under
 * load, a spare's server slow to answer, put two units of a group on one
 * server).  Returns the device, or UINT32_MAX when none is left.
 */
uint32_t stripe_slot_target(struct sctx *sc, const struct sgroup *sg,
			    uint32_t j, uint32_t *used, uint32_t *nused)
{
	struct eng *e = sc->sc_e;
	uint32_t d = sg->sg_devs[j];

	if (!eng_dev_usable(e, d) || stripe_dev_in(used, *nused, d)) {
		d = UINT32_MAX;
		if (sc->sc_pool->ep_nr_dom > 0) {
			/* the group's domains: its units placed so far, and
			 * the usable placed devices of its other slots (a
			 * slot not written yet keeps its own) */
			uint32_t grp[UMAX + LIM_DEV_MAX], n = *nused;

			memcpy(grp, used, n * sizeof *grp);
			for (uint32_t k = 0; k < sc->sc_w; k++)
				if (k != j && n < UMAX + LIM_DEV_MAX &&
				    eng_dev_usable(e, sg->sg_devs[k]))
					grp[n++] = sg->sg_devs[k];
			d = slot_other(sc, sg, grp, n, true);
		}
		if (d == UINT32_MAX)
			d = slot_other(sc, sg, used, *nused, false);
	}
	if (d != UINT32_MAX)
		used[(*nused)++] = d;
	return d;
}

/*
 * Take space for one unit of buf on device d: on a zoned device the unit is
 * appended now (the driver puts it at the write pointer; with reclaim, an
 * ordinary write outside any RCU read-side section, the cleaner may run
 * to make room); otherwise space is taken and a write queued in io[*nr]
 * for tier_io_run().  Sets *off.
 */
int stripe_unit_space(struct eng *e, uint32_t d, uint8_t *buf, uint64_t len,
		      struct eng_citem *ci, uint64_t *off, struct tier_io *io,
		      uint32_t *nr, bool reclaim)
{
	struct eng_spacevec *sv = &ci->ci_alloc;
	int rc;

	ci->ci_devmask[d / 64] |= 1ull << (d % 64);
	if (eng_dev_zoned(e, d)) {
		rc = reclaim ? eng_space_append_reclaim(e, d, buf, len, len, sv)
			     : eng_space_append(e, d, buf, len, len, sv);
		if (rc == 0)
			*off = sv->sv_v[sv->sv_nr - 1].sp_off;
		else
			eng_dev_io_error(e, d);
		return rc;
	}
	rc = eng_space_take(e, d, len, len, sv);
	if (rc != 0)
		return rc;
	*off = sv->sv_v[sv->sv_nr - 1].sp_off;
	io[(*nr)++] = (struct tier_io){.io_dev = eng_dev_get(e, d)->ed_dev,
				       .io_op = TIO_WRITE, .io_off = *off,
				       .io_buf = buf, .io_len = len};
	return 0;
}

/*
 * One try of group_write(): place the slots in wset (parity already in
 * sc_bufs), write them, queue the records.  *transport: the try failed
 * only in the transport to remote devices.
 */
static int group_write_try(struct sctx *sc, struct sgroup *sg, uint32_t wset,
			   uint32_t keep, uint32_t drop, bool *transport)
{
	struct eng_req *r = sc->sc_r;
	struct tier_io io[UMAX];
	uint32_t used[UMAX + LIM_DEV_MAX], nused = 0, nr = 0, lost = 0;
	struct unit_upd upd[UMAX];
	uint32_t nupd = 0;
	int rc = 0;

	*transport = false;
	/* Units that stay where they are keep their devices. */
	for (uint32_t j = 0; j < sc->sc_w; j++)
		if ((keep >> j & 1) && !(sg->sg_rec[j].mu_flags & MU_LOST))
			used[nused++] = sg->sg_rec[j].mu_dev;
	for (uint32_t j = 0; j < sc->sc_w; j++) {
		struct unit_upd u = {.uu_addr = sg->sg_g * sc->sc_w + j};
		uint32_t d;

		if ((drop >> j & 1) && (sg->sg_has >> j & 1)) {
			u.uu_del = true; /* all zeros now: no record */
			upd[nupd++] = u;
			continue;
		}
		if (!(wset >> j & 1))
			continue;
		u.uu_new.mu_len = (uint32_t)sc->sc_unit;
		u.uu_new.mu_crc = ec_crc(sc->sc_bufs[j], sc->sc_unit);
		d = stripe_slot_target(sc, sg, j, used, &nused);
		if (d == UINT32_MAX) {
			/* Nothing is written for the slot, and its record
			 * says so: an older record of the slot (data that
			 * would pass its checksum but is stale) is replaced,
			 * never left behind. */
			u.uu_new.mu_dev = (uint16_t)sg->sg_devs[j];
			u.uu_new.mu_dev_off = UINT64_MAX;
			u.uu_new.mu_flags = MU_LOST;
			lost++;
			upd[nupd++] = u;
			continue;
		}
		/* A unit is one run of its device: when the chosen device has
		 * no run of a unit's size left (full, or free only in smaller
		 * pieces), the unit goes to the next device
		 * stripe_slot_target() offers (spares, then the pool), never
		 * one of the group. */
		for (;;) {
			uint32_t nd;

			rc = stripe_unit_space(sc->sc_e, d, sc->sc_bufs[j],
					       sc->sc_unit, &r->er_ci,
					       &u.uu_new.mu_dev_off, io, &nr,
					       true);
			if (rc != -ENOSPC)
				break;
			nd = stripe_slot_target(sc, sg, j, used, &nused);
			if (nd == UINT32_MAX)
				break;
			d = nd;
		}
		if (rc == -ENOSPC)
			return err_set(rc, "object %s: group %" PRIu64 " slot %u: "
				       "no device of pool %s left with a free run "
				       "of %" PRIu64 " bytes (%s)",
				       stripe_sc_id(sc), sg->sg_g, j,
				       sc->sc_pool->ep_name,
				       sc->sc_unit, err_msg());
		if (rc != 0)
			return rc;
		u.uu_new.mu_dev = (uint16_t)d;
		upd[nupd++] = u;
	}
	/* Units of the group unreadable after this write: lost now, plus
	 * kept ones on devices that are not usable. */
	for (uint32_t j = 0; j < sc->sc_w; j++)
		if ((keep >> j & 1) &&
		    ((sg->sg_rec[j].mu_flags & MU_LOST) ||
		     !eng_dev_usable(sc->sc_e, sg->sg_rec[j].mu_dev)))
			lost++;
	if (lost > sc->sc_k)
		return err_set(-EIO, "object %s: group %" PRIu64 ": %u of %u "
			       "units would be unavailable, at most %u may be",
			       stripe_sc_id(sc), sg->sg_g, lost, sc->sc_w,
			       sc->sc_k);
	if (nr > 0 && tier_io_run(io, nr) != 0) {
		*transport = true;
		for (uint32_t i = 0; i < nr; i++)
			if (io[i].io_rc != 0) {
				uint32_t d = io[i].io_dev->td_sb.sb_index;

				*transport &= tier_rc_transport(io[i].io_rc);
				eng_dev_io_error(sc->sc_e, d);
				rc = err_set(io[i].io_rc, "object %s: group %" PRIu64
					     ": write to device %u (%s) failed",
					     stripe_sc_id(sc), sg->sg_g, d,
					     io[i].io_dev->td_path);
			}
		return rc;
	}
	for (uint32_t i = 0; rc == 0 && i < nupd; i++)
		rc = stripe_req_upd_add(r, &upd[i]);
	return rc;
}

/*
 * Write the slots in dirty (data slots whose content changed) and every
 * parity slot of sg from sc_bufs: parity computed here, each unit to its
 * device out of place, records queued on the request.  Data slots in drop
 * (wholly zeroed by FREE or ALLOC; their buffers hold zeros) are not
 * written: their records are deleted, so their space is released and they
 * read as zeros (a data slot without a record).
 *
 * A try whose only failures are transport failures of remote devices
 * (cluster mode: a server became unreachable during the op; the remote
 * driver now reports its devices unreachable) is placed and written again
 * once, around them: the op goes on degraded.  The space the failed try
 * took is mapped by no record; it goes back to the allocator once no late
 * write of that try can land any more (group_abandon()).
 */
/*
 * The runs from ci_alloc[first] on belong to a try that failed: no record
 * will map them.  Take them out of the op (so that neither its commit nor
 * its failure accounts for them) and release them when every write of the
 * try that may still be queued at a remote device's server is past its
 * fence (tier_dev_fence_ns(): the latest deadline the owner honours, plus
 * the margin); runs on local devices, whose writes ended with the try,
 * at once.
 */
static void group_abandon(struct sctx *sc, uint32_t first)
{
	struct eng_spacevec *al = &sc->sc_r->er_ci.ci_alloc;
	struct eng_spacevec now = {0}, later = {0};
	uint64_t fence = 0;

	for (uint32_t i = first; i < al->sv_nr; i++) {
		const struct eng_space *sp = &al->sv_v[i];
		uint64_t f = tier_dev_fence_ns(eng_dev_get(sc->sc_e,
							   sp->sp_dev)->ed_dev);
		int rc = eng_spacevec_add(f != 0 ? &later : &now, sp->sp_dev,
					  sp->sp_off, sp->sp_len);

		if (rc != 0) {
			/* Kept taken until the next open: safe, only a
			 * leak until then. */
			LOG_WARNING("object %s: %s: abandoned run kept in use "
				    "until the next open", stripe_sc_id(sc),
				    err_msg());
			continue;
		}
		fence = f > fence ? f : fence;
	}
	al->sv_nr = first;
	eng_space_release(sc->sc_e, &now);
	eng_spacevec_fini(&now);
	eng_space_release_at(sc->sc_e, &later, fence);
}

static int group_write(struct sctx *sc, struct sgroup *sg, uint32_t dirty,
		       uint32_t drop)
{
	uint32_t wset = (dirty & ~drop) |
			(((1u << sc->sc_w) - 1) & ~((1u << sc->sc_n) - 1));
	uint32_t keep = sg->sg_has & ~wset & ~drop;
	uint64_t mask[ENG_DEVMASK_WORDS];
	uint32_t first;
	bool transport;
	int rc;

	/* The devices the failed try wrote to must not be synced for this
	 * op: its units there are abandoned. */
	memcpy(mask, sc->sc_r->er_ci.ci_devmask, sizeof mask);
	if (sc->sc_mirror)
		for (uint32_t j = 1; j < sc->sc_w; j++)
			memcpy(sc->sc_bufs[j], sc->sc_bufs[0], sc->sc_unit);
	else if (sc->sc_k > 0)
		ec_encode(sc->sc_codec, sc->sc_unit, sc->sc_bufs,
			  sc->sc_bufs + sc->sc_n);
	first = sc->sc_r->er_ci.ci_alloc.sv_nr;
	rc = group_write_try(sc, sg, wset, keep, drop, &transport);
	if (rc != 0 && transport) {
		LOG_WARNING("%s; writing the group again around the "
			    "unreachable device", err_msg());
		memcpy(sc->sc_r->er_ci.ci_devmask, mask, sizeof mask);
		group_abandon(sc, first);
		first = sc->sc_r->er_ci.ci_alloc.sv_nr;
		rc = group_write_try(sc, sg, wset, keep, drop, &transport);
	}
	if (rc != 0 && transport)
		group_abandon(sc, first);
	return rc;
}

/* Fill the data slots of sg from the request's pieces (or zeros for FREE);
 * sets *dirty to the data slots touched and *full when all are covered. */
static void group_overlay(struct sctx *sc, struct sgroup *sg,
			  const struct brange *br, uint32_t nbr, bool zero,
			  uint32_t *dirty)
{
	uint64_t gs = sg->sg_g * stripe_group_bytes(sc),
		 ge = gs + stripe_group_bytes(sc);

	*dirty = 0;
	for (uint32_t i = 0; i < nbr; i++) {
		uint64_t s = br[i].br_start > gs ? br[i].br_start : gs;
		uint64_t e = br[i].br_end < ge ? br[i].br_end : ge;

		while (s < e) {
			uint32_t j = (uint32_t)((s - gs) / sc->sc_unit);
			uint64_t in = (s - gs) % sc->sc_unit;
			uint64_t n = sc->sc_unit - in;

			n = n < e - s ? n : e - s;
			if (zero)
				memset(sc->sc_bufs[j] + in, 0, n);
			else
				stripe_bv_copy(sc, br[i].br_flat +
					       (s - br[i].br_start),
					       sc->sc_bufs[j] + in, n, false);
			*dirty |= 1u << j;
			s += n;
		}
	}
}

/* Data slots of sg fully covered by the ranges. */
static uint32_t group_covered(const struct sctx *sc, uint64_t g,
			      const struct brange *br, uint32_t nbr)
{
	uint64_t gs = g * stripe_group_bytes(sc);
	uint32_t full = 0;

	for (uint32_t j = 0; j < sc->sc_n; j++) {
		uint64_t us = gs + j * sc->sc_unit, ue = us + sc->sc_unit;

		for (uint32_t i = 0; i < nbr; i++)
			if (br[i].br_start <= us && br[i].br_end >= ue)
				full |= 1u << j;
	}
	return full;
}

/* Collect the distinct groups the sorted ranges touch. */
int stripe_ranges_groups(const struct sctx *sc, const struct brange *br,
			 uint32_t nbr, uint64_t **out, uint32_t *nr)
{
	uint64_t gb = stripe_group_bytes(sc), *v = NULL;
	uint32_t n = 0, cap = 0;

	for (uint32_t i = 0; i < nbr; i++) {
		for (uint64_t g = br[i].br_start / gb; g * gb < br[i].br_end; g++) {
			if (n > 0 && v[n - 1] >= g)
				continue;
			if (n == cap) {
				uint64_t *nv;

				cap = cap ? cap * 2 : 16;
				nv = realloc(v, cap * sizeof *v);
				if (nv == NULL) {
					free(v);
					return err_set(-ENOMEM, "group list");
				}
				v = nv;
			}
			v[n++] = g;
		}
	}
	*out = v;
	*nr = n;
	return 0;
}

/* Group lock slots of the op's groups: sorted, distinct. */
int stripe_lock_slots(struct eng_req *r, const uint64_t *groups, uint32_t nr)
{
	uint32_t *s = malloc((nr ? nr : 1) * sizeof *s), n = 0;
	const struct st_id sid = st_id_of(&r->er_id);
	const uint64_t h = layout_id_hash(&sid);

	if (s == NULL)
		return err_set(-ENOMEM, "group locks");
	for (uint32_t i = 0; i < nr; i++)
		s[i] = (uint32_t)((h ^ (groups[i] * 0x9e3779b97f4a7c15ull)) %
				  LIM_GLOCK_SLOTS);
	for (uint32_t i = 1; i < nr; i++) /* insertion sort: nr is small */
		for (uint32_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
			uint32_t t = s[j];

			s[j] = s[j - 1];
			s[j - 1] = t;
		}
	for (uint32_t i = 0; i < nr; i++)
		if (n == 0 || s[n - 1] != s[i])
			s[n++] = s[i];
	r->er_locks = s;
	r->er_nr_locks = n;
	return 0;
}

static void req_unlock(struct eng *e, struct eng_req *r)
{
	if (r->er_locks == NULL)
		return;
	eng_gunlock(e, r->er_locks, r->er_nr_locks);
	free(r->er_locks);
	r->er_locks = NULL;
	r->er_nr_locks = 0;
}

static void stripe_executed(struct eng_citem *ci)
{
	struct eng_req *r = (struct eng_req *)ci;

	req_unlock(r->er_eng, r);
	if (r->er_executed != NULL)
		r->er_executed(ci);
}

static void stripe_done(struct eng_citem *ci, int rc)
{
	struct eng_req *r = (struct eng_req *)ci;

	req_unlock(r->er_eng, r);
	ci->ci_executed = r->er_executed;
	ci->ci_done = r->er_done;
	r->er_done(ci, rc);
}

/*
 * WRITE, FREE and ALLOC.  FREE and ALLOC make the blocks read as zeros: a
 * group they cover entirely loses all its unit records; in a group they
 * cover in part, the data units they cover entirely lose their records and
 * the rest is rewritten with zeros by read-modify-write, with new parity.
 * (ALLOC reserves no space on unit layouts: every write takes fresh space
 * anyway; obj_apply() grows the size.)
 */
int stripe_update(struct sctx *sc)
{
	struct eng *e = sc->sc_e;
	struct eng_req *r = sc->sc_r;
	bool zero = r->er_kind != ER_OBJ_WRITE;
	struct brange *br = NULL;
	uint64_t *groups = NULL;
	uint32_t nbr = r->er_ext->ev_nr, ng = 0;
	MDB_txn *txn = NULL;
	int rc;

	rc = stripe_sc_ranges(sc, &br);
	if (rc == 0 && !zero)
		rc = stripe_bv_prefix(sc);
	if (rc == 0)
		rc = stripe_ranges_groups(sc, br, nbr, &groups, &ng);
	if (rc == 0 && !r->er_glocked) /* else held by its dtx */
		rc = stripe_lock_slots(r, groups, ng);
	if (rc != 0)
		goto out;
	if (!r->er_glocked)
		eng_glock(e, r->er_locks, r->er_nr_locks);
	r->er_eng = e;
	if (r->er_ci.ci_trace != 0 && !zero) /* its groups, their slots */
		addb_rec(ADDB_R_OP_PLACED, r->er_ci.ci_trace, r->er_kind - 1,
			 ng, ng > 0 ? groups[0] : 0);
	for (uint32_t i = 0; rc == 0 && i < ng; i++) {
		struct sgroup sg;
		uint32_t full = group_covered(sc, groups[i], br, nbr);
		uint32_t dmask = (1u << sc->sc_n) - 1, bad, dirty;

		stripe_group_place(sc, &sg, groups[i]);
		rcu_read_lock();
		rc = meta_rtxn_begin(eng_meta(e), &txn, "begin read");
		if (rc != 0) {
			rcu_read_unlock();
			break;
		}
		rc = stripe_group_load(sc, txn, &sg);
		if (rc == 0 && zero && full == dmask) {
			/* A whole group freed: drop its units. */
			for (uint32_t j = 0; rc == 0 && j < sc->sc_w; j++)
				if (sg.sg_has >> j & 1)
					rc = stripe_req_upd_add(r,
						&(struct unit_upd){
						.uu_addr = sg.sg_g * sc->sc_w + j,
						.uu_del = true});
			meta_rtxn_put(eng_meta(e), txn);
			rcu_read_unlock();
			continue;
		}
		if (rc == 0 && zero && sg.sg_has == 0) {
			meta_rtxn_put(eng_meta(e), txn);
			rcu_read_unlock();
			continue; /* zeros already */
		}
		/* Read what the new data does not replace (read-modify-write). */
		if (rc == 0 && full != dmask)
			rc = stripe_group_read(sc, &sg, dmask & ~full, &bad);
		meta_rtxn_put(eng_meta(e), txn);
		rcu_read_unlock();
		if (rc != 0)
			break;
		group_overlay(sc, &sg, br, nbr, zero, &dirty);
		rc = group_write(sc, &sg, dirty, zero ? full : 0);
		/* test builds: the process dies in the middle of a write of
		 * several groups, the first one's units on their devices (on
		 * every server), none of its records committed
		 * (tests/integ/ec_crash_test.sh) */
		if (rc == 0 && i == 0 && ng > 1 &&
		    FAULT_HIT("stripe.write.die")) {
			LOG_WARNING("object %s: fault point stripe.write.die: "
				    "killed after group %" PRIu64 "'s units "
				    "were written, %u group(s) of the write "
				    "left", stripe_sc_id(sc), sg.sg_g, ng - 1);
			raise(SIGKILL);
		}
	}
	if (rc == 0 && FAULT_HIT("obj.write.after_data"))
		rc = err_set(-EIO, "object %s: fault point obj.write.after_data",
			     stripe_sc_id(sc));
	if (rc != 0) {
		req_unlock(e, r);
		goto out;
	}
	if (r->er_ci.ci_trace != 0 && !zero) {
		uint64_t blks = 0;

		for (uint32_t i = 0; i < r->er_ext->ev_nr; i++)
			blks += r->er_ext->ev_nr_blks[i];
		addb_rec(ADDB_R_OP_STORED, r->er_ci.ci_trace, r->er_kind - 1,
			 blks << sc->sc_ent.me_block_shift, 0);
	}
	r->er_executed = r->er_ci.ci_executed;
	r->er_done = r->er_ci.ci_done;
	r->er_ci.ci_executed = stripe_executed;
	r->er_ci.ci_done = stripe_done;
out:
	free(br);
	free(groups);
	return rc;
}
