/*
 * stripe_walk.c — the resumable device-wide walks over objects with unit
 * layouts (see stripe.h): stripe_repair(), stripe_rebalance(),
 * stripe_scrub().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu.h>

#include "addb/addb.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/limits.h"
#include "core/log.h"
#include "layouts/stripe_internal.h"

/* ------------------------------------------- repair, rebalance, scrub */

/*
 * A walk reads the unit table in key order, in batches of WALK_BATCH
 * records.  The records of one parity group are adjacent, so a batch is
 * cut into groups; up to wk_maxgrp groups of one object are handled at
 * once: their reads go to the devices' queues in one tier_io_run() (a
 * repair reads only N survivors of each group, chosen round the group so
 * the load spreads over the pool), then each group is rebuilt or checked,
 * then the units to write go out in one more tier_io_run().  A batch's
 * unit records and the walk's place after it are one commit item; the
 * next batch's I/O runs while that commit becomes durable, and the next
 * commit is queued only after it is (so the saved place never passes work
 * that is not durable: a crash or a stop resumes after the last durable
 * batch, and the space of a batch not committed is free again at open).
 */

/* In the order of ADDB_WALK_* (addb/addb.h), the walk label's values. */
enum walk_kind { WK_REPAIR, WK_REBALANCE, WK_SCRUB };
_Static_assert((int)WK_REPAIR == (int)ADDB_WALK_REPAIR &&
	       (int)WK_REBALANCE == (int)ADDB_WALK_REBALANCE &&
	       (int)WK_SCRUB == (int)ADDB_WALK_SCRUB,
	       "walk kinds are metric labels");

static const char *const walk_names[] = {"repair", "rebalance", "scrub"};

/** sys/walk.<kind>: where a walk stopped, so that it can resume, and the
 *  totals of the whole walk so far. */
struct walk_rec {
	uint8_t wr_key[META_EXT_KEY_LEN]; /* last unit key done */
	uint32_t wr_pad;
	uint64_t wr_done;
	uint64_t wr_rebuilt;
	uint64_t wr_moved;
	uint64_t wr_corrupt;
	uint64_t wr_unrepairable;
};

/** A batch of unit records copied out of the table. */
struct walk_item {
	uint8_t wi_key[META_EXT_KEY_LEN];
	struct meta_unit wi_rec;
};

/** One batch's commit: its unit records and the walk's place after it. */
struct walk_cm {
	struct eng_req wc_req;   /* first */
	struct walk *wc_w;
	struct walk_rec wc_rec;
	bool wc_busy;            /* submitted and not yet waited for */
	bool wc_done;
	int wc_rc;
};

/** A parity group in flight. */
struct walk_grp {
	struct sgroup wg_sg;
	uint32_t wg_cand;               /* slots visited in this batch */
	struct meta_unit wg_seen[UMAX]; /* their records as visited */
	uint32_t wg_want;               /* slots to check, rebuild or move */
	uint32_t wg_ok, wg_bad;
	uint32_t wg_io, wg_nio;         /* its reads in wk_io */
	uint8_t *wg_bufs[UMAX];
};

/** What this call did (the totals of the whole walk are in wk_rec). */
struct walk_call {
	uint64_t wc_units, wc_bytes, wc_rebuilt, wc_moved, wc_corrupt,
		 wc_unrepairable, wc_shared;
};

struct walk {
	struct eng *wk_e;
	enum walk_kind wk_kind;
	/* a walk of one object's units only (stripe_scrub_obj()): wk_only
	 * its encoded id (the unit keys' prefix); not saved, not resumed */
	bool wk_one;
	uint8_t wk_only[16];
	/* the first group that could not be rebuilt, said (the -EIO's
	 * message names it) */
	char wk_bad[192];
	struct walk_rec wk_rec;   /* place and totals as far as processed */
	struct walk_call wk_call;
	/* the current object */
	struct st_id wk_obj;
	bool wk_have_obj;
	bool wk_obj_gone;
	struct eng_req wk_oreq;   /* identity for sctx */
	struct sctx wk_sc;
	bool wk_sc_ok;
	/* groups in flight, and their reads */
	struct walk_grp wk_grp[WALK_INFLIGHT];
	uint32_t wk_ngrp, wk_maxgrp;
	uint8_t *wk_mem;
	size_t wk_memlen;
	struct tier_io wk_io[WALK_INFLIGHT * UMAX];
	uint32_t wk_ioslot[WALK_INFLIGHT * UMAX];
	/* two commits, alternating: one builds while the other is durable */
	struct walk_cm wk_cm[2];
	struct eng_req *wk_req;   /* the batch being built */
	pthread_mutex_t wk_lock;
	pthread_cond_t wk_cond;
	uint64_t wk_devs_read[LIM_DEV_MAX / 64];
};

static void walk_done(struct eng_citem *ci, int rc)
{
	struct walk_cm *wc = (struct walk_cm *)((struct eng_req *)ci)->er_priv;
	struct walk *w = wc->wc_w;

	pthread_mutex_lock(&w->wk_lock);
	wc->wc_done = true;
	wc->wc_rc = rc;
	pthread_cond_broadcast(&w->wk_cond);
	pthread_mutex_unlock(&w->wk_lock);
}

static int walk_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct eng_req *r = (struct eng_req *)ci;
	struct walk_cm *wc = (struct walk_cm *)r->er_priv;
	char name[32];
	int rc;

	ci->ci_hard = true;
	rc = stripe_apply(e, txn, r);
	snprintf(name, sizeof name, "walk.%s", walk_names[wc->wc_w->wk_kind]);
	if (rc == 0 && !wc->wc_w->wk_one)
		rc = meta_sys_put(txn, eng_meta(e), name, &wc->wc_rec,
				  sizeof wc->wc_rec);
	if (rc == 0)
		ci->ci_hard = false;
	return rc;
}

/* Forget a batch's request (after its commit, or instead of it). */
static void walk_cm_reset(struct walk_cm *wc)
{
	struct eng_req *r = &wc->wc_req;

	eng_spacevec_fini(&r->er_ci.ci_alloc);
	eng_spacevec_fini(&r->er_ci.ci_freed);
	free(r->er_upd);
	memset(r, 0, sizeof *r);
}

/* Drop a batch that will not be committed: its space goes back. */
static void walk_cm_discard(struct walk *w, struct walk_cm *wc)
{
	eng_space_release(w->wk_e, &wc->wc_req.er_ci.ci_alloc);
	walk_cm_reset(wc);
}

/* Queue the batch's updates with the walk's place as it is now. */
static void walk_cm_submit(struct walk *w, struct walk_cm *wc)
{
	struct eng_req *r = &wc->wc_req;

	wc->wc_w = w;
	wc->wc_rec = w->wk_rec;
	wc->wc_done = false;
	wc->wc_busy = true;
	r->er_ci.ci_apply = walk_apply;
	r->er_ci.ci_done = walk_done;
	r->er_priv = wc;
	eng_commit_submit(w->wk_e, &r->er_ci);
}

/* Wait until a submitted batch is durable (or failed). */
static int walk_cm_wait(struct walk *w, struct walk_cm *wc)
{
	int rc;

	if (!wc->wc_busy)
		return 0;
	pthread_mutex_lock(&w->wk_lock);
	while (!wc->wc_done)
		pthread_cond_wait(&w->wk_cond, &w->wk_lock);
	rc = wc->wc_rc;
	pthread_mutex_unlock(&w->wk_lock);
	wc->wc_busy = false;
	if (rc != 0)
		err_set(rc, "%s: commit failed: %s", walk_names[w->wk_kind],
			wc->wc_req.er_ci.ci_msg);
	walk_cm_reset(wc);
	return rc;
}

/*
 * Rebalance by failure domain (cluster pools, whose devices carry
 * domains): the unit of slot is moved back to its placed device
 * (pd_group_map_dom(): the group's units on distinct domains where the
 * pool allows) when that device is usable, holds no other unit of the
 * group, and the move leaves fewer units of the group sharing a domain:
 * more of its other units share the unit's present domain than the placed
 * device's.  Groups written while a server was away (their units placed on
 * the other servers) so spread out again once it is back.  Reads the
 * group's loaded records (sg_rec).
 */
static bool walk_dom_move(struct walk *w, const struct sgroup *sg,
			  uint32_t slot, const struct meta_unit *u)
{
	struct eng *e = w->wk_e;
	struct sctx *sc = &w->wk_sc;
	uint32_t p = sg->sg_devs[slot], here, there, nhere = 0, nthere = 0;

	if (sc->sc_pool->ep_nr_dom == 0 || (u->mu_flags & MU_LOST) ||
	    u->mu_dev == p || !eng_dev_usable(e, p))
		return false;
	here = eng_dev_domain(e, u->mu_dev);
	there = eng_dev_domain(e, p);
	if (here == 0 || there == 0 || here == there)
		return false;
	for (uint32_t k = 0; k < sc->sc_w; k++) {
		const struct meta_unit *o = &sg->sg_rec[k];
		uint32_t dk;

		if (k == slot || !(sg->sg_has >> k & 1) || (o->mu_flags & MU_LOST))
			continue;
		if (o->mu_dev == p)
			return false;
		dk = eng_dev_domain(e, o->mu_dev);
		nhere += dk == here;
		nthere += dk == there;
	}
	return nhere > nthere;
}

/*
 * Does group wg, its slot j on dest[j] (where this flush leaves it), keep
 * two units on one failure domain although the pool has domains enough
 * for them all?  Counted once per group: in the flush that visited its
 * first record.
 */
static bool walk_group_shared(struct walk *w, const struct walk_grp *wg,
			      const uint32_t *dest)
{
	struct eng *e = w->wk_e;
	struct sctx *sc = &w->wk_sc;
	uint32_t has = 0, dom[UMAX], nr = 0;

	if (sc->sc_pool->ep_nr_dom == 0 || wg->wg_sg.sg_has == 0 ||
	    !(wg->wg_cand >> __builtin_ctz(wg->wg_sg.sg_has) & 1))
		return false;
	for (uint32_t j = 0; j < sc->sc_w; j++)
		if ((wg->wg_sg.sg_has >> j & 1) &&
		    !(wg->wg_sg.sg_rec[j].mu_flags & MU_LOST) &&
		    dest[j] != UINT32_MAX)
			dom[nr++] = eng_dev_domain(e, dest[j]), has++;
	if (has > sc->sc_pool->ep_nr_dom)
		return false; /* sharing is unavoidable */
	for (uint32_t a = 0; a < nr; a++)
		for (uint32_t b = a + 1; b < nr; b++)
			if (dom[a] == dom[b])
				return true;
	return false;
}

/* Does this record need the walk's attention? */
static bool walk_wants(struct walk *w, const struct sgroup *sg, uint32_t slot,
		       const struct meta_unit *u)
{
	struct eng *e = w->wk_e;
	struct eng_dev *d;

	switch (w->wk_kind) {
	case WK_REPAIR:
		return (u->mu_flags & MU_LOST) || !eng_dev_usable(e, u->mu_dev);
	case WK_REBALANCE:
		d = eng_dev_get(e, sg->sg_devs[slot]);
		if (d != NULL && (d->ed_flags & EDF_REBALANCE) &&
		    eng_dev_usable(e, sg->sg_devs[slot]) &&
		    u->mu_dev != sg->sg_devs[slot])
			return true;
		return walk_dom_move(w, sg, slot, u);
	case WK_SCRUB:
		return !(u->mu_flags & MU_LOST) && eng_dev_usable(e, u->mu_dev);
	}
	return false;
}

/* Can slot j of sg be read (or is it zeros without a read)? */
static bool slot_readable(struct sctx *sc, const struct sgroup *sg, uint32_t j)
{
	const struct meta_unit *u = &sg->sg_rec[j];

	if (!(sg->sg_has >> j & 1))
		return j < sc->sc_n || sg->sg_has == 0;
	return !(u->mu_flags & MU_LOST) && eng_dev_usable(sc->sc_e, u->mu_dev);
}

/*
 * The slots a repair reads to rebuild want: N readable slots outside want,
 * slots that read as zeros without I/O first, then the others starting at
 * g mod w, so that the survivors' load spreads over the pool.  Fewer when
 * fewer are readable (stripe_group_finish() then says so).
 */
static uint32_t walk_pick(struct sctx *sc, const struct sgroup *sg,
			  uint32_t want)
{
	uint32_t pick = 0, nr = 0;

	for (uint32_t j = 0; j < sc->sc_w && nr < sc->sc_n; j++)
		if (!(want >> j & 1) && !(sg->sg_has >> j & 1) &&
		    slot_readable(sc, sg, j))
			pick |= 1u << j, nr++;
	for (uint32_t i = 0; i < sc->sc_w && nr < sc->sc_n; i++) {
		uint32_t j = (uint32_t)((sg->sg_g + i) % sc->sc_w);

		if (!(want >> j & 1) && !(pick >> j & 1) &&
		    slot_readable(sc, sg, j))
			pick |= 1u << j, nr++;
	}
	return pick;
}

/* Phase 1 of a flush: load each group, keep the slots still as visited
 * that the walk wants. */
static int walk_groups_load(struct walk *w, MDB_txn *txn)
{
	struct sctx *sc = &w->wk_sc;

	for (uint32_t i = 0; i < w->wk_ngrp; i++) {
		struct walk_grp *wg = &w->wk_grp[i];
		int rc = stripe_group_load(sc, txn, &wg->wg_sg);

		if (rc != 0)
			return rc;
		wg->wg_want = 0;
		wg->wg_ok = wg->wg_bad = 0;
		for (uint32_t j = 0; j < sc->sc_w; j++)
			if ((wg->wg_cand >> j & 1) && (wg->wg_sg.sg_has >> j & 1) &&
			    memcmp(&wg->wg_sg.sg_rec[j], &wg->wg_seen[j],
				   sizeof wg->wg_seen[j]) == 0 &&
			    walk_wants(w, &wg->wg_sg, j, &wg->wg_seen[j]))
				wg->wg_want |= 1u << j;
	}
	return 0;
}

/* Phase 2: every group's reads in one tier_io_run(). */
static void walk_groups_read(struct walk *w)
{
	struct sctx *sc = &w->wk_sc;
	uint32_t nio = 0;

	for (uint32_t i = 0; i < w->wk_ngrp; i++) {
		struct walk_grp *wg = &w->wk_grp[i];
		uint32_t rd = wg->wg_want;

		wg->wg_io = nio;
		wg->wg_nio = 0;
		if (rd == 0)
			continue;
		if (w->wk_kind == WK_REPAIR)
			rd = walk_pick(sc, &wg->wg_sg, rd);
		stripe_group_fetch_prep(sc, &wg->wg_sg, wg->wg_bufs, rd,
					&wg->wg_ok, 0, w->wk_io, w->wk_ioslot,
					&nio);
		wg->wg_nio = nio - wg->wg_io;
	}
	for (uint32_t i = 0; i < nio; i++) {
		uint32_t d = w->wk_io[i].io_dev->td_sb.sb_index;

		w->wk_devs_read[d / 64] |= 1ull << (d % 64);
	}
	if (nio > 0)
		tier_io_run(w->wk_io, nio);
	for (uint32_t i = 0; i < w->wk_ngrp; i++) {
		struct walk_grp *wg = &w->wk_grp[i];

		if (wg->wg_want != 0)
			stripe_group_fetch_check(sc, &wg->wg_sg, wg->wg_bufs,
						 w->wk_io + wg->wg_io,
						 w->wk_ioslot + wg->wg_io,
						 wg->wg_nio, &wg->wg_ok,
						 &wg->wg_bad);
	}
}

/* Phase 3 for one group: complete its content (decode); returns the slots
 * to write: rebuilt (repair), moved (rebalance) or damaged (scrub). */
static uint32_t walk_group_finish(struct walk *w, struct walk_grp *wg)
{
	struct sctx *sc = &w->wk_sc;
	uint32_t n = (uint32_t)__builtin_popcount(wg->wg_want), bad;
	int rc;

	rc = stripe_group_finish(sc, &wg->wg_sg, wg->wg_bufs, wg->wg_want,
				 &wg->wg_ok, &wg->wg_bad);
	w->wk_call.wc_bytes += n * sc->sc_unit;
	bad = (uint32_t)__builtin_popcount(w->wk_kind == WK_SCRUB ?
					   wg->wg_bad & wg->wg_want : wg->wg_bad);
	w->wk_rec.wr_corrupt += bad;
	w->wk_call.wc_corrupt += bad;
	if (rc != 0) {
		LOG_ERROR("%s: %s", walk_names[w->wk_kind], err_msg());
		if (w->wk_bad[0] == '\0')
			snprintf(w->wk_bad, sizeof w->wk_bad, "%s", err_msg());
		w->wk_rec.wr_unrepairable += n;
		w->wk_call.wc_unrepairable += n;
		return 0;
	}
	return w->wk_kind == WK_SCRUB ? wg->wg_want & wg->wg_bad : wg->wg_want;
}

/* Where slot j of wg goes: rebalance to its placed device, scrub back to
 * its own device when usable, otherwise a spare (stripe_slot_target()). */
static uint32_t walk_target(struct walk *w, struct walk_grp *wg, uint32_t j,
			    uint32_t *used, uint32_t *nused)
{
	uint32_t d;

	if (w->wk_kind == WK_REBALANCE)
		d = wg->wg_sg.sg_devs[j];
	else if (w->wk_kind == WK_SCRUB &&
		 eng_dev_usable(w->wk_e, wg->wg_seen[j].mu_dev))
		d = wg->wg_seen[j].mu_dev;
	else
		return stripe_slot_target(&w->wk_sc, &wg->wg_sg, j, used,
					  nused);
	used[(*nused)++] = d;
	return d;
}

/* Phases 3 and 4: finish every group, then write what must be written in
 * one tier_io_run() and queue the unit records on the batch. */
static int walk_groups_write(struct walk *w)
{
	struct sctx *sc = &w->wk_sc;
	struct unit_upd *upd = calloc(WALK_INFLIGHT * UMAX, sizeof *upd);
	uint32_t nio = 0, nupd = 0;
	int rc = 0;

	if (upd == NULL)
		return err_set(-ENOMEM, "%s: unit updates", walk_names[w->wk_kind]);
	for (uint32_t i = 0; rc == 0 && i < w->wk_ngrp; i++) {
		struct walk_grp *wg = &w->wk_grp[i];
		uint32_t used[UMAX + LIM_DEV_MAX], nused = 0, put;
		uint32_t dest[UMAX];

		for (uint32_t j = 0; j < sc->sc_w; j++)
			dest[j] = wg->wg_sg.sg_rec[j].mu_dev;
		if (wg->wg_want == 0) {
			w->wk_call.wc_shared += walk_group_shared(w, wg, dest);
			continue;
		}
		put = walk_group_finish(w, wg);
		for (uint32_t j = 0; j < sc->sc_w; j++)
			if (!(put >> j & 1) && (wg->wg_sg.sg_has >> j & 1) &&
			    !(wg->wg_sg.sg_rec[j].mu_flags & MU_LOST))
				used[nused++] = wg->wg_sg.sg_rec[j].mu_dev;
		for (uint32_t j = 0; rc == 0 && j < sc->sc_w; j++) {
			struct unit_upd *u = &upd[nupd];
			uint32_t d;

			if (!(put >> j & 1))
				continue;
			d = walk_target(w, wg, j, used, &nused);
			if (d == UINT32_MAX) {
				w->wk_rec.wr_unrepairable++;
				w->wk_call.wc_unrepairable++;
				if (w->wk_bad[0] == '\0')
					snprintf(w->wk_bad, sizeof w->wk_bad,
						 "object %s group %" PRIu64
						 " slot %u: no device left to "
						 "hold it",
						 eng_id_str(&w->wk_obj),
						 wg->wg_sg.sg_g, j);
				LOG_ERROR("%s: object %s group %" PRIu64 " slot %u: "
					  "no device left to hold it",
					  walk_names[w->wk_kind],
					  eng_id_str(&w->wk_obj), wg->wg_sg.sg_g, j);
				continue;
			}
			*u = (struct unit_upd){
				.uu_obj = w->wk_obj,
				.uu_addr = wg->wg_sg.sg_g * sc->sc_w + j,
				.uu_cas = true, .uu_expect = wg->wg_seen[j]};
			u->uu_new = (struct meta_unit){
				.mu_len = (uint32_t)sc->sc_unit,
				.mu_dev = (uint16_t)d,
				.mu_crc = ec_crc(wg->wg_bufs[j], sc->sc_unit)};
			rc = stripe_unit_space(w->wk_e, d, wg->wg_bufs[j],
					       sc->sc_unit, &w->wk_req->er_ci,
					       &u->uu_new.mu_dev_off,
					       w->wk_io, &nio, false);
			if (rc != 0)
				rc = err_set(rc, "%s: space for a unit on device "
					     "%u: %s", walk_names[w->wk_kind], d,
					     err_msg());
			else
				nupd++, dest[j] = d;
		}
		w->wk_call.wc_shared += walk_group_shared(w, wg, dest);
	}
	if (rc == 0 && nio > 0 && tier_io_run(w->wk_io, nio) != 0) {
		for (uint32_t i = 0; i < nio; i++)
			if (w->wk_io[i].io_rc != 0) {
				uint32_t d = w->wk_io[i].io_dev->td_sb.sb_index;

				eng_dev_io_error(w->wk_e, d);
				rc = err_set(w->wk_io[i].io_rc, "%s: write to "
					     "device %u failed",
					     walk_names[w->wk_kind], d);
			}
	}
	for (uint32_t i = 0; rc == 0 && i < nupd; i++) {
		rc = stripe_req_upd_add(w->wk_req, &upd[i]);
		if (rc != 0)
			break;
		if (w->wk_kind == WK_REBALANCE)
			w->wk_rec.wr_moved++, w->wk_call.wc_moved++;
		else
			w->wk_rec.wr_rebuilt++, w->wk_call.wc_rebuilt++;
	}
	free(upd);
	return rc;
}

/* Handle the groups in flight. */
static int walk_flush(struct walk *w, MDB_txn *txn)
{
	int rc = 0;

	if (w->wk_ngrp == 0)
		return 0;
	rc = walk_groups_load(w, txn);
	if (rc == 0) {
		walk_groups_read(w);
		rc = walk_groups_write(w);
	}
	w->wk_ngrp = 0;
	return rc;
}

/* Unit buffers for the groups in flight of the current object. */
static int walk_bufs(struct walk *w)
{
	struct sctx *sc = &w->wk_sc;
	size_t per = (size_t)sc->sc_w * sc->sc_unit, need;
	uint64_t fit = WALK_MEM / per;

	w->wk_maxgrp = fit < 1 ? 1 : fit > WALK_INFLIGHT ? WALK_INFLIGHT
							 : (uint32_t)fit;
	need = per * w->wk_maxgrp;
	if (need > w->wk_memlen) {
		free(w->wk_mem);
		w->wk_mem = NULL;
		w->wk_memlen = 0;
		if (posix_memalign((void **)&w->wk_mem, 4096, need) != 0)
			return err_set(-ENOMEM, "%s: unit buffers of %zu bytes",
				       walk_names[w->wk_kind], need);
		w->wk_memlen = need;
	}
	for (uint32_t i = 0; i < w->wk_maxgrp; i++)
		for (uint32_t j = 0; j < sc->sc_w; j++)
			w->wk_grp[i].wg_bufs[j] = w->wk_mem + i * per +
						  j * sc->sc_unit;
	return 0;
}

/* Make the walk's object context for the object of key (cached); the
 * groups of the previous object are handled first. */
static int walk_object(struct walk *w, MDB_txn *txn, const uint8_t *key)
{
	struct st_id id;
	struct meta_ent me;
	int rc;

	meta_id_dec(key, &id);
	if (w->wk_have_obj && st_id_cmp(&id, &w->wk_obj) == 0)
		return 0;
	rc = walk_flush(w, txn);
	if (rc != 0)
		return rc;
	if (w->wk_sc_ok)
		stripe_sctx_fini(&w->wk_sc);
	w->wk_sc_ok = false;
	w->wk_have_obj = true;
	w->wk_obj = id;
	w->wk_obj_gone = false;
	rc = meta_ent_get(txn, eng_meta(w->wk_e), &id, &me);
	if (rc == -ENOENT || (rc == 0 && !stripe_layout(me.me_layout))) {
		w->wk_obj_gone = true; /* deleted meanwhile: nothing to do */
		return 0;
	}
	if (rc != 0)
		return rc;
	memset(&w->wk_oreq, 0, sizeof w->wk_oreq);
	w->wk_oreq.er_id = id;
	rc = stripe_sctx_init(&w->wk_sc, w->wk_e, &w->wk_oreq, &me);
	if (rc != 0) {
		stripe_sctx_fini(&w->wk_sc);
		return rc;
	}
	w->wk_sc_ok = true;
	return walk_bufs(w);
}

/* Add one record to the groups in flight (handling them when full). */
static int walk_item(struct walk *w, MDB_txn *txn, const struct walk_item *it)
{
	struct sctx *sc = &w->wk_sc;
	uint64_t addr = meta_key_blk(it->wi_key);
	uint64_t g = addr / sc->sc_w;
	uint32_t slot = (uint32_t)(addr % sc->sc_w);
	struct walk_grp *wg = w->wk_ngrp > 0 ? &w->wk_grp[w->wk_ngrp - 1] : NULL;
	int rc;

	if (wg == NULL || wg->wg_sg.sg_g != g) {
		if (w->wk_ngrp == w->wk_maxgrp) {
			rc = walk_flush(w, txn);
			if (rc != 0)
				return rc;
		}
		wg = &w->wk_grp[w->wk_ngrp++];
		stripe_group_place(sc, &wg->wg_sg, g);
		wg->wg_cand = 0;
	}
	wg->wg_cand |= 1u << slot;
	wg->wg_seen[slot] = it->wi_rec;
	return 0;
}

/* Handle a batch of records into w->wk_req (not committed here). */
static int walk_items(struct walk *w, const struct walk_item *items,
		      uint32_t nr)
{
	MDB_txn *txn;
	int rc;

	rcu_read_lock();
	rc = meta_rtxn_begin(eng_meta(w->wk_e), &txn, "begin walk read");
	if (rc != 0) {
		rcu_read_unlock();
		return rc;
	}
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		rc = walk_object(w, txn, items[i].wi_key);
		if (rc == 0 && !w->wk_obj_gone)
			rc = walk_item(w, txn, &items[i]);
		w->wk_rec.wr_done++;
		w->wk_call.wc_units++;
		memcpy(w->wk_rec.wr_key, items[i].wi_key, META_EXT_KEY_LEN);
	}
	if (rc == 0)
		rc = walk_flush(w, txn);
	w->wk_ngrp = 0;
	meta_rtxn_put(eng_meta(w->wk_e), txn);
	rcu_read_unlock();
	return rc;
}

/* walk_batch(): the batch being filled. */
struct walk_fill {
	struct walk_item *wf_items;
	uint32_t wf_nr;
};

/* Copy one unit record into the batch; stop when it is full. */
static int walk_fill_one(void *arg, const struct meta_rec *r)
{
	struct walk_fill *f = arg;
	struct walk_item *it = &f->wf_items[f->wf_nr];

	if (r->mc_klen != META_EXT_KEY_LEN ||
	    r->mc_vlen != sizeof(struct meta_unit))
		return err_set(-ST_ECORRUPT, "unit record of %zu/%zu bytes",
			       r->mc_klen, r->mc_vlen);
	memcpy(it->wi_key, r->mc_key, META_EXT_KEY_LEN);
	memcpy(&it->wi_rec, r->mc_val, sizeof it->wi_rec);
	return ++f->wf_nr < WALK_BATCH ? META_SCAN_NEXT : META_SCAN_STOP;
}

/* Read up to WALK_BATCH records after the saved key (one object's walk:
 * of that object only, from its first one). */
static int walk_batch(struct walk *w, struct walk_item *items, uint32_t *nr,
		      uint64_t *total)
{
	struct meta *m = eng_meta(w->wk_e);
	struct walk_fill f = {items, 0};
	MDB_txn *txn;
	int rc;

	*nr = 0;
	rc = meta_rtxn_begin(m, &txn, "begin walk");
	if (rc != 0)
		return rc;
	if (!w->wk_one)
		(void)meta_entries(txn, m, META_T_UNIT, total, NULL); /* hint */
	rc = meta_scan(txn, m, &(struct meta_scan){
		.ms_table = META_T_UNIT, .ms_from = w->wk_rec.wr_key,
		.ms_flen = META_EXT_KEY_LEN,
		.ms_prefix = w->wk_one ? w->wk_only : NULL,
		.ms_plen = w->wk_one ? sizeof w->wk_only : 0,
		.ms_after = !w->wk_one || w->wk_rec.wr_done > 0,
		.ms_fn = walk_fill_one, .ms_arg = &f, .ms_what = "walk units"});
	meta_rtxn_put(m, txn);
	*nr = f.wf_nr;
	return rc;
}

/* After a complete walk: device states, and forget the saved place. */
static int walk_finish(struct walk *w)
{
	struct eng *e = w->wk_e;
	char name[32];
	int rc = 0;

	snprintf(name, sizeof name, "walk.%s", walk_names[w->wk_kind]);
	for (uint32_t i = 0; rc == 0 && i < eng_dev_nr(e); i++) {
		struct eng_dev *d = eng_dev_get(e, i);

		if (w->wk_kind == WK_REPAIR && d->ed_state == ED_FAILED &&
		    w->wk_rec.wr_unrepairable == 0)
			rc = eng_dev_state_set(e, i, ED_REPAIRED, d->ed_flags);
		else if (w->wk_kind == WK_REBALANCE &&
			 (d->ed_flags & EDF_REBALANCE))
			rc = eng_dev_state_set(e, i, d->ed_state,
					       d->ed_flags & ~EDF_REBALANCE);
	}
	if (rc == 0) {
		memset(&w->wk_rec, 0, sizeof w->wk_rec);
		rc = eng_sys_del(e, name);
	}
	return rc;
}

/*
 * The batches of a walk: batch i + 1 is read, rebuilt and written while
 * the commit of batch i becomes durable; its own commit is queued once
 * that of batch i is.  fn sees the units handled so far before each batch
 * after the first, and once at the end.
 */
static int walk_run(struct walk *w, struct walk_item *items,
		    stripe_progress_fn fn, void *arg)
{
	uint64_t total = 0;
	uint32_t nr, cur = 0;
	bool started = false;
	int rc = 0, rc2;

	for (;;) {
		if (!w->wk_one) { /* a store-wide walk's progress */
			addb_set(ADDB_WALK_DONE, w->wk_kind, w->wk_rec.wr_done);
			addb_set(ADDB_WALK_TOTAL, w->wk_kind, total);
		}
		if (started && fn != NULL &&
		    fn(arg, w->wk_rec.wr_done, total) != 0) {
			rc = -EINTR;
			break;
		}
		rc = walk_batch(w, items, &nr, &total);
		if (rc != 0 || nr == 0)
			break;
		w->wk_req = &w->wk_cm[cur].wc_req;
		rc = walk_items(w, items, nr);
		if (rc == 0 && FAULT_HIT("walk.batch"))
			rc = err_set(-EIO, "%s: fault point walk.batch",
				     walk_names[w->wk_kind]);
		if (rc == 0)
			rc = walk_cm_wait(w, &w->wk_cm[cur ^ 1]);
		if (rc != 0) {
			walk_cm_discard(w, &w->wk_cm[cur]);
			break;
		}
		walk_cm_submit(w, &w->wk_cm[cur]);
		started = true;
		cur ^= 1;
	}
	for (uint32_t i = 0; i < 2; i++) {
		rc2 = walk_cm_wait(w, &w->wk_cm[i]);
		if (rc == 0 || rc == -EINTR)
			rc = rc2 != 0 ? rc2 : rc;
	}
	if (rc == -EINTR)
		rc = err_set(-EINTR, "%s: stopped after %" PRIu64 " units; "
			     "run it again to resume", walk_names[w->wk_kind],
			     w->wk_rec.wr_done);
	else if (rc == 0 && started && fn != NULL)
		(void)fn(arg, w->wk_rec.wr_done, total); /* done: no stop */
	if (!w->wk_one) {
		addb_set(ADDB_WALK_DONE, w->wk_kind, w->wk_rec.wr_done);
		addb_set(ADDB_WALK_TOTAL, w->wk_kind, total);
	}
	return rc;
}

static void walk_stats(const struct walk *w, struct stripe_walk_stats *st)
{
	st->sw_units = w->wk_call.wc_units;
	st->sw_bytes = w->wk_call.wc_bytes;
	st->sw_rebuilt = w->wk_call.wc_rebuilt;
	st->sw_moved = w->wk_call.wc_moved;
	st->sw_shared = w->wk_call.wc_shared;
	st->sw_corrupt = w->wk_call.wc_corrupt;
	st->sw_unrepairable = w->wk_call.wc_unrepairable;
	st->sw_walk_units = w->wk_rec.wr_done;
	st->sw_walk_rebuilt = w->wk_rec.wr_rebuilt;
	st->sw_walk_moved = w->wk_rec.wr_moved;
	st->sw_walk_corrupt = w->wk_rec.wr_corrupt;
	st->sw_walk_unrepairable = w->wk_rec.wr_unrepairable;
	for (uint32_t i = 0; i < LIM_DEV_MAX / 64; i++)
		st->sw_devices += (uint32_t)__builtin_popcountll(w->wk_devs_read[i]);
}

static int stripe_walk(struct eng *e, enum walk_kind kind,
		       const struct st_id *one, stripe_progress_fn fn,
		       void *arg, struct stripe_walk_stats *st)
{
	struct walk *w = calloc(1, sizeof *w);
	struct walk_item *items = calloc(WALK_BATCH, sizeof *items);
	uint64_t t0 = eng_now_ns();
	char name[32];
	int rc;

	memset(st, 0, sizeof *st);
	if (w == NULL || items == NULL) {
		free(w);
		free(items);
		return err_set(-ENOMEM, "%s", walk_names[kind]);
	}
	w->wk_e = e;
	w->wk_kind = kind;
	pthread_mutex_init(&w->wk_lock, NULL);
	pthread_cond_init(&w->wk_cond, NULL);
	snprintf(name, sizeof name, "walk.%s", walk_names[kind]);
	if (one != NULL) {
		w->wk_one = true;
		meta_id_enc(w->wk_only, one);
		(void)meta_ext_key(w->wk_rec.wr_key, one, 0);
	} else if (eng_sys_load(e, name, &w->wk_rec, sizeof w->wk_rec) == 0) {
		st->sw_resumed = 1;
		LOG_INFO("%s: resuming after %" PRIu64 " units",
			 walk_names[kind], w->wk_rec.wr_done);
	} else {
		memset(&w->wk_rec, 0, sizeof w->wk_rec);
	}
	eng_thread_enter();
	if (one == NULL)
		addb_add(ADDB_WALK_RUNS, kind, 1);
	rc = walk_run(w, items, fn, arg);
	eng_thread_leave();
	walk_stats(w, st);
	if (rc == 0 && one == NULL)
		rc = walk_finish(w);
	if (rc == 0 && st->sw_walk_unrepairable > 0)
		rc = err_set(-EIO, "%s%s%s: %" PRIu64 " units could not be "
			     "rebuilt (more than K units of their groups "
			     "lost)%s%s", walk_names[kind],
			     one ? " of object " : "", one ? eng_id_str(one) : "",
			     st->sw_walk_unrepairable,
			     w->wk_bad[0] ? "; the first: " : "", w->wk_bad);
	st->sw_elapsed_ns = eng_now_ns() - t0;
	if (w->wk_sc_ok)
		stripe_sctx_fini(&w->wk_sc);
	pthread_mutex_destroy(&w->wk_lock);
	pthread_cond_destroy(&w->wk_cond);
	free(w->wk_mem);
	free(w);
	free(items);
	return rc;
}

int stripe_repair(struct eng *e, stripe_progress_fn fn, void *arg,
		  struct stripe_walk_stats *st)
{
	return stripe_walk(e, WK_REPAIR, NULL, fn, arg, st);
}

int stripe_rebalance(struct eng *e, stripe_progress_fn fn, void *arg,
		     struct stripe_walk_stats *st)
{
	return stripe_walk(e, WK_REBALANCE, NULL, fn, arg, st);
}

int stripe_scrub(struct eng *e, stripe_progress_fn fn, void *arg,
		 struct stripe_walk_stats *st)
{
	return stripe_walk(e, WK_SCRUB, NULL, fn, arg, st);
}

int stripe_scrub_obj(struct eng *e, const struct st_id *id,
		     struct stripe_walk_stats *st)
{
	return stripe_walk(e, WK_SCRUB, id, NULL, NULL, st);
}
