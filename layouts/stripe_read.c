/*
 * stripe_read.c — reads of objects with unit layouts (see stripe.h): group
 * reads with reconstruction of lost or corrupt units (degraded reads, up to
 * K per group), read-repair, and READ.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu.h>

#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "layouts/stripe_internal.h"

/* ------------------------------------------------------- group reads */

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
			     uint32_t *nr)
{
	for (uint32_t j = 0; j < sc->sc_w; j++) {
		const struct meta_unit *u = &sg->sg_rec[j];

		if (!(mask >> j & 1) || ((*ok | bad) >> j & 1))
			continue;
		if (!(sg->sg_has >> j & 1)) {
			if (j < sc->sc_n || sg->sg_has == 0) {
				memset(bufs[j], 0, sc->sc_unit);
				*ok |= 1u << j;
			}
			continue;
		}
		if ((u->mu_flags & MU_LOST) || !eng_dev_usable(sc->sc_e, u->mu_dev))
			continue;
		io[*nr] = (struct tier_io){
			.io_dev = eng_dev_get(sc->sc_e, u->mu_dev)->ed_dev,
			.io_op = TIO_READ, .io_off = u->mu_dev_off,
			.io_buf = bufs[j], .io_len = sc->sc_unit};
		slot[(*nr)++] = j;
	}
}

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
			      uint32_t *bad)
{
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t j = slot[i];
		const struct meta_unit *u = &sg->sg_rec[j];

		if (io[i].io_rc != 0 && tier_rc_transport(io[i].io_rc) &&
		    eng_dev_unreachable(sc->sc_e, u->mu_dev)) {
			/* Its server is away (the driver marked it down):
			 * not damaged, not repaired; stripe_group_finish()
			 * may ask it again. */
			LOG_WARNING("object %s group %" PRIu64 " slot %u: "
				    "device %u unreachable (%d)",
				    stripe_sc_id(sc), sg->sg_g, j, u->mu_dev,
				    io[i].io_rc);
			continue;
		}
		if (io[i].io_rc != 0) {
			LOG_ERROR("object %s group %" PRIu64 " slot %u: read "
				  "from device %u failed (%d)",
				  stripe_sc_id(sc), sg->sg_g, j, u->mu_dev,
				  io[i].io_rc);
			eng_dev_io_error(sc->sc_e, u->mu_dev);
			*bad |= 1u << j;
			continue;
		}
		if (ec_crc(bufs[j], sc->sc_unit) != u->mu_crc) {
			LOG_ERROR("object %s group %" PRIu64 " slot %u: checksum "
				  "mismatch on device %u at %" PRIu64,
				  stripe_sc_id(sc), sg->sg_g, j, u->mu_dev,
				  u->mu_dev_off);
			__atomic_add_fetch(&eng_ucounters(sc->sc_e)->uc_crc_errors,
					   1, __ATOMIC_RELAXED);
			*bad |= 1u << j;
			continue;
		}
		*ok |= 1u << j;
	}
}

/* Fetch the slots in mask into bufs, in parallel: sets *ok and *bad. */
static void group_fetch(struct sctx *sc, struct sgroup *sg,
			uint8_t *const *bufs, uint32_t mask, uint32_t *ok,
			uint32_t *bad)
{
	struct tier_io io[UMAX];
	uint32_t slot[UMAX], nr = 0;

	stripe_group_fetch_prep(sc, sg, bufs, mask, ok, *bad, io, slot, &nr);
	if (nr == 0)
		return;
	tier_io_run(io, nr);
	stripe_group_fetch_check(sc, sg, bufs, io, slot, nr, ok, bad);
}

/* Is slot j's unit recorded, not lost, not at hand, on a device that is
 * online but unreachable now? */
static bool slot_unreachable(struct sctx *sc, struct sgroup *sg, uint32_t j,
			     uint32_t ok, uint32_t bad)
{
	return (sg->sg_has >> j & 1) && !((ok | bad) >> j & 1) &&
	       !(sg->sg_rec[j].mu_flags & MU_LOST) &&
	       eng_dev_unreachable(sc->sc_e, sg->sg_rec[j].mu_dev);
}

/* Ask each device of an unreachable slot again (eng_dev_recheck, once a
 * device); true when one of them is usable now. */
static bool group_recheck(struct sctx *sc, struct sgroup *sg, uint32_t ok,
			  uint32_t bad)
{
	uint32_t asked[UMAX], nasked = 0;
	bool back = false;

	for (uint32_t j = 0; j < sc->sc_w; j++) {
		uint32_t d = sg->sg_rec[j].mu_dev;

		if (!slot_unreachable(sc, sg, j, ok, bad) ||
		    stripe_dev_in(asked, nasked, d))
			continue;
		asked[nasked++] = d;
		if (eng_dev_recheck(sc->sc_e, d))
			back = true;
	}
	return back;
}

/*
 * A group with fewer than N units at hand: -EHOSTDOWN when some missing
 * unit is on a device that is unreachable (its server is away: the data
 * may well be intact, the read can be tried again), naming those devices;
 * -EIO when every missing unit is lost or damaged.
 */
static int group_short(struct sctx *sc, struct sgroup *sg, uint32_t nr_ok,
		       uint32_t ok, uint32_t bad)
{
	char away[256] = "";
	size_t at = 0;

	for (uint32_t j = 0; j < sc->sc_w; j++)
		if (slot_unreachable(sc, sg, j, ok, bad) && at < sizeof away) {
			int n = snprintf(away + at, sizeof away - at, "%s%s",
					 at > 0 ? ", " : "",
					 eng_dev_get(sc->sc_e,
						     sg->sg_rec[j].mu_dev)
						 ->ed_dev->td_path);

			if (n > 0)
				at += (size_t)n;
		}
	return err_set(away[0] != '\0' ? -EHOSTDOWN : -EIO,
		       "object %s: group %" PRIu64 " (blocks %" PRIu64 "..%"
		       PRIu64 "): only %u of %u units readable, %u needed%s%s",
		       stripe_sc_id(sc), sg->sg_g,
		       (sg->sg_g * stripe_group_bytes(sc)) >>
		       sc->sc_ent.me_block_shift,
		       ((sg->sg_g + 1) * stripe_group_bytes(sc) >>
			sc->sc_ent.me_block_shift) - 1,
		       nr_ok, sc->sc_w, sc->sc_n,
		       away[0] != '\0' ? "; unreachable now: " : "", away);
}

/*
 * Given the slots already fetched (*ok) and found damaged (*bad), make bufs
 * hold every slot in want: when some is missing and fewer than N units are
 * at hand, fetch the rest of the group; then rebuild the missing ones (ISA-L
 * decode of up to K lost units, or a mirror copy).
 */
int stripe_group_finish(struct sctx *sc, struct sgroup *sg, uint8_t **bufs,
			uint32_t want, uint32_t *ok, uint32_t *bad)
{
	uint32_t all = (1u << sc->sc_w) - 1;
	bool present[UMAX];
	uint32_t nr_ok;
	int rc;

	if ((*ok & want) == want)
		return 0;
	if ((uint32_t)__builtin_popcount(*ok) < sc->sc_n)
		group_fetch(sc, sg, bufs, all, ok, bad);
	/* Short of N units with some on devices whose server is marked down:
	 * ask those again now (a cluster restarted as a whole: a peer not
	 * listening yet when first called) rather than fail a read the
	 * data is there for. */
	if ((uint32_t)__builtin_popcount(*ok) < sc->sc_n &&
	    group_recheck(sc, sg, *ok, *bad))
		group_fetch(sc, sg, bufs, all, ok, bad);
	nr_ok = (uint32_t)__builtin_popcount(*ok);
	if (nr_ok < sc->sc_n)
		return group_short(sc, sg, nr_ok, *ok, *bad);
	__atomic_add_fetch(&eng_ucounters(sc->sc_e)->uc_degraded_reads, 1,
			   __ATOMIC_RELAXED);
	if (sc->sc_mirror) {
		uint32_t src = (uint32_t)__builtin_ctz(*ok);

		for (uint32_t j = 0; j < sc->sc_w; j++)
			if (!(*ok >> j & 1))
				memcpy(bufs[j], bufs[src], sc->sc_unit);
		return 0;
	}
	for (uint32_t j = 0; j < sc->sc_w; j++)
		present[j] = *ok >> j & 1;
	rc = ec_decode(sc->sc_codec, sc->sc_unit, bufs, present);
	if (rc != 0)
		return err_set(rc, "object %s: group %" PRIu64 ": %s",
			       stripe_sc_id(sc), sg->sg_g, err_msg());
	return 0;
}

/*
 * Make sc_bufs hold the content of every slot in want: read them, and if
 * any cannot be read, read the rest of the group and reconstruct (up to K
 * lost units).  *bad: slots found damaged on a usable device.
 */
int stripe_group_read(struct sctx *sc, struct sgroup *sg, uint32_t want,
		      uint32_t *bad)
{
	uint32_t ok = 0;

	*bad = 0;
	group_fetch(sc, sg, sc->sc_bufs, want, &ok, bad);
	return stripe_group_finish(sc, sg, sc->sc_bufs, want, &ok, bad);
}

/* ------------------------------------------------------------- reads */

/* A unit rewritten after a read found it damaged: its own commit item. */
struct rrepair {
	struct eng_req rr_req;
	struct st_extvec rr_ev; /* unused, keeps the request well-formed */
};

static void rrepair_done(struct eng_citem *ci, int rc)
{
	struct eng_req *r = (struct eng_req *)ci;

	if (rc == 0)
		__atomic_add_fetch(&eng_ucounters(r->er_eng)->uc_read_repairs,
				   r->er_nr_upd, __ATOMIC_RELAXED);
	eng_spacevec_fini(&ci->ci_alloc);
	eng_spacevec_fini(&ci->ci_freed);
	free(r->er_upd);
	free(r);
}

static int rrepair_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct eng_req *r = (struct eng_req *)ci;
	int rc;

	ci->ci_hard = true;
	rc = stripe_apply(e, txn, r);
	if (rc == 0)
		ci->ci_hard = false;
	return rc;
}

/*
 * Rewrite the damaged slots of sg (now reconstructed in sc_bufs) to fresh
 * space on a usable device, replacing the damaged record only if it is
 * still the one we read.  Best effort: a failure leaves the damage for
 * scrub or the next read.
 */
static void group_read_repair(struct sctx *sc, struct sgroup *sg, uint32_t bad)
{
	struct eng *e = sc->sc_e;
	struct eng_req *r = calloc(1, sizeof *r);
	uint32_t used[UMAX + LIM_DEV_MAX], nused = 0;
	struct tier_io io[UMAX];
	uint32_t nr = 0;
	int rc = 0;

	if (r == NULL)
		return;
	r->er_id = sc->sc_r->er_id;
	r->er_eng = e;
	r->er_ci.ci_apply = rrepair_apply;
	r->er_ci.ci_done = rrepair_done;
	for (uint32_t j = 0; j < sc->sc_w; j++)
		if ((sg->sg_has >> j & 1) && !(bad >> j & 1) &&
		    !(sg->sg_rec[j].mu_flags & MU_LOST))
			used[nused++] = sg->sg_rec[j].mu_dev;
	for (uint32_t j = 0; rc == 0 && j < sc->sc_w; j++) {
		struct unit_upd u = {.uu_addr = sg->sg_g * sc->sc_w + j,
				     .uu_cas = true, .uu_expect = sg->sg_rec[j]};
		uint32_t d = sg->sg_rec[j].mu_dev;

		if (!(bad >> j & 1))
			continue;
		if (!eng_dev_usable(e, d) || stripe_dev_in(used, nused, d))
			d = stripe_slot_target(sc, sg, j, used, &nused);
		else
			used[nused++] = d;
		if (d == UINT32_MAX)
			continue;
		u.uu_new = (struct meta_unit){
			.mu_len = (uint32_t)sc->sc_unit, .mu_dev = (uint16_t)d,
			.mu_crc = ec_crc(sc->sc_bufs[j], sc->sc_unit)};
		rc = stripe_unit_space(e, d, sc->sc_bufs[j], sc->sc_unit,
				       &r->er_ci, &u.uu_new.mu_dev_off, io,
				       &nr, false);
		if (rc == 0)
			rc = stripe_req_upd_add(r, &u);
	}
	if (rc == 0 && nr > 0)
		rc = tier_io_run(io, nr);
	if (rc != 0 || r->er_nr_upd == 0) {
		eng_space_release(e, &r->er_ci.ci_alloc);
		rrepair_done(&r->er_ci, rc);
		return;
	}
	eng_commit_submit(e, &r->er_ci);
}

int stripe_read(struct sctx *sc)
{
	struct eng *e = sc->sc_e;
	struct eng_req *r = sc->sc_r;
	const struct st_extvec *ev = r->er_ext;
	uint32_t shift = sc->sc_ent.me_block_shift;
	uint64_t gb = stripe_group_bytes(sc), flat = 0;
	MDB_txn *txn;
	int rc;

	rc = stripe_bv_prefix(sc);
	if (rc != 0)
		return rc;
	rcu_read_lock();
	rc = meta_rtxn_begin(eng_meta(e), &txn, "begin read");
	if (rc != 0) {
		rcu_read_unlock();
		return rc;
	}
	for (uint32_t i = 0; rc == 0 && i < ev->ev_nr; i++) {
		uint64_t s = ev->ev_start_blk[i] << shift;
		uint64_t end = s + (ev->ev_nr_blks[i] << shift);

		while (rc == 0 && s < end) {
			struct sgroup sg;
			uint64_t g = s / gb, gs = g * gb;
			uint64_t ge = gs + gb < end ? gs + gb : end;
			uint32_t want = 0, bad = 0;

			for (uint64_t p = s; p < ge;
			     p = (p / sc->sc_unit + 1) * sc->sc_unit)
				want |= 1u << ((p - gs) / sc->sc_unit);
			if (sc->sc_mirror) /* spread reads over the copies */
				want = 1u << (g % sc->sc_w);
			stripe_group_place(sc, &sg, g);
			rc = stripe_group_load(sc, txn, &sg);
			if (rc == 0)
				rc = stripe_group_read(sc, &sg, want, &bad);
			if (rc == 0 && bad != 0)
				group_read_repair(sc, &sg, bad);
			for (uint64_t p = s; rc == 0 && p < ge;) {
				uint32_t j = (uint32_t)((p - gs) / sc->sc_unit);
				uint64_t in = (p - gs) % sc->sc_unit;
				uint64_t n = sc->sc_unit - in;

				n = n < ge - p ? n : ge - p;
				stripe_bv_copy(sc, flat,
					       sc->sc_bufs[sc->sc_mirror ?
							   g % sc->sc_w : j] +
					       in, n, true);
				flat += n;
				p += n;
			}
			s = ge;
		}
	}
	meta_rtxn_put(eng_meta(e), txn);
	rcu_read_unlock();
	return rc;
}
