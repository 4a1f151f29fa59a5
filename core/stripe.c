/*
 * stripe.c — objects with unit layouts (pdclust, mirror): see stripe.h.
 *
 * Client half first (geometry, group reads with reconstruction, the write
 * and read paths), then the target half (unit records and their commit).
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
#include "core/stripe.h"
#include "layouts/ec.h"
#include "layouts/pdclust.h"

#define UMAX CLOVIS_LAYOUT_UNITS_MAX

/* ------------------------------------------------------------ context */

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

static const char *sc_id(const struct sctx *sc)
{
	return eng_id_str(&sc->sc_r->er_id);
}

static int sctx_init(struct sctx *sc, struct eng *e, struct eng_req *r,
		     const struct meta_ent *ent)
{
	const struct meta_ent *m = ent;
	int rc;

	memset(sc, 0, sizeof *sc);
	sc->sc_e = e;
	sc->sc_r = r;
	sc->sc_ent = *ent;
	sc->sc_mirror = m->me_layout == CLOVIS_LAYOUT_MIRROR;
	sc->sc_n = sc->sc_mirror ? 1 : m->me_n;
	sc->sc_k = sc->sc_mirror ? m->me_n - 1u : m->me_k;
	sc->sc_w = sc->sc_n + sc->sc_k;
	sc->sc_width = sc->sc_w + m->me_s;
	sc->sc_unit = 1ull << m->me_unit_shift;
	sc->sc_pool = eng_pool_get(e, m->me_pool);
	if (sc->sc_pool == NULL)
		return err_set(-CLOVIS_ECORRUPT, "object %s: pool %u not in the "
			       "store", eng_id_str(&r->er_id), m->me_pool);
	sc->sc_geom = (struct pd_geom){sc->sc_n, sc->sc_k, m->me_s,
				       sc->sc_pool->ep_nr, m->me_unit_shift};
	rc = pd_geom_check(&sc->sc_geom);
	if (rc != 0)
		return err_set(-CLOVIS_ECORRUPT, "object %s: stored layout "
			       "invalid: %s", eng_id_str(&r->er_id), err_msg());
	if (!sc->sc_mirror) {
		sc->sc_codec = eng_codec(e, sc->sc_n, sc->sc_k);
		if (sc->sc_codec == NULL)
			return -ENOMEM;
	}
	if (posix_memalign((void **)&sc->sc_mem, 4096,
			   sc->sc_w * sc->sc_unit) != 0)
		return err_set(-ENOMEM, "object %s: %u unit buffers of %" PRIu64
			       " bytes", eng_id_str(&r->er_id), sc->sc_w,
			       sc->sc_unit);
	for (uint32_t i = 0; i < sc->sc_w; i++)
		sc->sc_bufs[i] = sc->sc_mem + i * sc->sc_unit;
	return 0;
}

static void sctx_fini(struct sctx *sc)
{
	free(sc->sc_mem);
	free(sc->sc_bvpre);
}

static uint64_t group_bytes(const struct sctx *sc)
{
	return sc->sc_unit * sc->sc_n;
}

/* The store device of every slot of group g. */
static void group_place(const struct sctx *sc, struct sgroup *sg, uint64_t g)
{
	uint32_t pd[UMAX];

	sg->sg_g = g;
	pd_group_map_dom(&sc->sc_geom, sc->sc_pool->ep_nr_dom ?
			 sc->sc_pool->ep_dom : NULL, sc->sc_pool->ep_nr_dom,
			 &sc->sc_r->er_id, g, pd);
	for (uint32_t i = 0; i < sc->sc_width; i++)
		sg->sg_devs[i] = sc->sc_pool->ep_devs[pd[i]];
}

static MDB_val unit_key(uint8_t kb[META_EXT_KEY_LEN],
			const struct clovis_id *obj, uint64_t addr)
{
	return meta_ext_key(kb, obj, addr); /* same shape: id, 64-bit BE */
}

/* Read the records of every slot of sg in txn. */
static int group_load(struct sctx *sc, MDB_txn *txn, struct sgroup *sg)
{
	struct meta *m = eng_meta(sc->sc_e);

	sg->sg_has = 0;
	for (uint32_t j = 0; j < sc->sc_w; j++) {
		uint8_t kb[META_EXT_KEY_LEN];
		MDB_val k = unit_key(kb, &sc->sc_r->er_id,
				     sg->sg_g * sc->sc_w + j), v;
		int rc = mdb_get(txn, m->m_unit, &k, &v);

		if (rc == MDB_NOTFOUND)
			continue;
		if (rc != 0)
			return meta_err(rc, "read unit record");
		if (v.mv_size != sizeof(struct meta_unit))
			return err_set(-CLOVIS_ECORRUPT, "object %s group %" PRIu64
				       " slot %u: unit record of %zu bytes",
				       sc_id(sc), sg->sg_g, j, v.mv_size);
		memcpy(&sg->sg_rec[j], v.mv_data, sizeof sg->sg_rec[j]);
		if (sg->sg_rec[j].mu_len != sc->sc_unit ||
		    eng_dev_get(sc->sc_e, sg->sg_rec[j].mu_dev) == NULL)
			return err_set(-CLOVIS_ECORRUPT, "object %s group %" PRIu64
				       " slot %u: unit record names device %u, "
				       "%u bytes", sc_id(sc), sg->sg_g, j,
				       sg->sg_rec[j].mu_dev,
				       sg->sg_rec[j].mu_len);
		sg->sg_has |= 1u << j;
	}
	return 0;
}

/* ------------------------------------------------------- group reads */

/*
 * Queue reads of the slots in mask into bufs (io[*nr], slot[*nr]): a slot
 * with no record reads as zeros at once when it is a data slot (never
 * written) or the group has no record at all; a slot whose device is not
 * usable or whose record is MU_LOST is not fetched; slots already in *ok
 * or *bad are skipped.
 */
static void group_fetch_prep(struct sctx *sc, struct sgroup *sg,
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
 * After tier_io_run() of what group_fetch_prep() queued: a slot whose read
 * failed or whose checksum does not match goes to *bad (the device's error
 * is counted), the others to *ok; one whose read failed in the transport
 * and whose device is unreachable now (a remote device whose server the
 * call found away) goes to neither.
 */
static void group_fetch_check(struct sctx *sc, struct sgroup *sg,
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
			 * not damaged, not repaired; group_finish() may ask
			 * it again. */
			LOG_WARNING("object %s group %" PRIu64 " slot %u: "
				    "device %u unreachable (%d)", sc_id(sc),
				    sg->sg_g, j, u->mu_dev, io[i].io_rc);
			continue;
		}
		if (io[i].io_rc != 0) {
			LOG_ERROR("object %s group %" PRIu64 " slot %u: read "
				  "from device %u failed (%d)", sc_id(sc),
				  sg->sg_g, j, u->mu_dev, io[i].io_rc);
			eng_dev_io_error(sc->sc_e, u->mu_dev);
			*bad |= 1u << j;
			continue;
		}
		if (ec_crc(bufs[j], sc->sc_unit) != u->mu_crc) {
			LOG_ERROR("object %s group %" PRIu64 " slot %u: checksum "
				  "mismatch on device %u at %" PRIu64, sc_id(sc),
				  sg->sg_g, j, u->mu_dev, u->mu_dev_off);
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

	group_fetch_prep(sc, sg, bufs, mask, ok, *bad, io, slot, &nr);
	if (nr == 0)
		return;
	tier_io_run(io, nr);
	group_fetch_check(sc, sg, bufs, io, slot, nr, ok, bad);
}

static bool dev_in(const uint32_t *v, uint32_t nr, uint32_t d);

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
		    dev_in(asked, nasked, d))
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
		       sc_id(sc), sg->sg_g,
		       (sg->sg_g * group_bytes(sc)) >> sc->sc_ent.me_block_shift,
		       ((sg->sg_g + 1) * group_bytes(sc) >>
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
static int group_finish(struct sctx *sc, struct sgroup *sg, uint8_t **bufs,
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
		return err_set(rc, "object %s: group %" PRIu64 ": %s", sc_id(sc),
			       sg->sg_g, err_msg());
	return 0;
}

/*
 * Make sc_bufs hold the content of every slot in want: read them, and if
 * any cannot be read, read the rest of the group and reconstruct (up to K
 * lost units).  *bad: slots found damaged on a usable device.
 */
static int group_read(struct sctx *sc, struct sgroup *sg, uint32_t want,
		      uint32_t *bad)
{
	uint32_t ok = 0;

	*bad = 0;
	group_fetch(sc, sg, sc->sc_bufs, want, &ok, bad);
	return group_finish(sc, sg, sc->sc_bufs, want, &ok, bad);
}

/* --------------------------------------------------- caller buffers */

/* Prefix sums of the caller's buffer lengths (random access by offset). */
static int bv_prefix(struct sctx *sc)
{
	struct clovis_bufvec *bv = sc->sc_r->er_data;

	sc->sc_bvpre = malloc((bv->bv_nr + 1) * sizeof *sc->sc_bvpre);
	if (sc->sc_bvpre == NULL)
		return err_set(-ENOMEM, "buffer index");
	sc->sc_bvpre[0] = 0;
	for (uint32_t i = 0; i < bv->bv_nr; i++)
		sc->sc_bvpre[i + 1] = sc->sc_bvpre[i] + bv->bv_len[i];
	return 0;
}

/* Copy len bytes between the caller's buffers at flat offset off and p. */
static void bv_copy(struct sctx *sc, uint64_t off, uint8_t *p, uint64_t len,
		    bool to_caller)
{
	struct clovis_bufvec *bv = sc->sc_r->er_data;
	uint32_t lo = 0, hi = bv->bv_nr;

	while (hi - lo > 1) { /* last i with pre[i] <= off */
		uint32_t mid = (lo + hi) / 2;

		if (sc->sc_bvpre[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	for (uint32_t i = lo; len > 0; i++) {
		uint64_t in = off - sc->sc_bvpre[i];
		uint64_t n = bv->bv_len[i] - in;
		uint8_t *b;

		if (bv->bv_len[i] == 0 || in >= bv->bv_len[i])
			continue;
		n = n < len ? n : len;
		b = (uint8_t *)bv->bv_buf[i] + in;
		if (to_caller)
			memcpy(b, p, n);
		else
			memcpy(p, b, n);
		p += n;
		off += n;
		len -= n;
	}
}

/* ------------------------------------------------------ extents → pieces */

/** An extent of the request in bytes, with its place in the buffers. */
struct brange {
	uint64_t br_start, br_end; /* object bytes */
	uint64_t br_flat;          /* offset in the caller's buffers */
};

static int brange_cmp(const void *a, const void *b)
{
	const struct brange *x = a, *y = b;

	return x->br_start < y->br_start ? -1 : x->br_start > y->br_start;
}

/* The request's extents in bytes, sorted by start. */
static int sc_ranges(struct sctx *sc, struct brange **out)
{
	const struct clovis_extvec *ev = sc->sc_r->er_ext;
	uint32_t shift = sc->sc_ent.me_block_shift;
	struct brange *v = malloc(ev->ev_nr * sizeof *v);
	uint64_t flat = 0;

	if (v == NULL)
		return err_set(-ENOMEM, "extent ranges");
	for (uint32_t i = 0; i < ev->ev_nr; i++) {
		v[i].br_start = ev->ev_start_blk[i] << shift;
		v[i].br_end = (ev->ev_start_blk[i] + ev->ev_nr_blks[i]) << shift;
		v[i].br_flat = flat;
		flat += ev->ev_nr_blks[i] << shift;
	}
	qsort(v, ev->ev_nr, sizeof *v, brange_cmp);
	*out = v;
	return 0;
}

/* ------------------------------------------------------------ writes */

/* Add a unit update to the request. */
static int req_upd_add(struct eng_req *r, const struct unit_upd *u)
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

static bool dev_in(const uint32_t *v, uint32_t nr, uint32_t d)
{
	for (uint32_t i = 0; i < nr; i++)
		if (v[i] == d)
			return true;
	return false;
}

/*
 * The device slot j of sg is written to: its placed device when usable,
 * else a usable spare slot's device, else any usable pool device; never a
 * device already holding another unit of the group (used[0..*nused)).
 * Returns the device, or UINT32_MAX when none is left.
 */
static uint32_t slot_target(struct sctx *sc, const struct sgroup *sg,
			    uint32_t j, uint32_t *used, uint32_t *nused)
{
	struct eng *e = sc->sc_e;
	uint32_t d = sg->sg_devs[j];

	if (!eng_dev_usable(e, d) || dev_in(used, *nused, d)) {
		d = UINT32_MAX;
		for (uint32_t s = sc->sc_w; s < sc->sc_width && d == UINT32_MAX;
		     s++)
			if (eng_dev_usable(e, sg->sg_devs[s]) &&
			    !dev_in(used, *nused, sg->sg_devs[s]))
				d = sg->sg_devs[s];
		for (uint32_t i = 0; i < sc->sc_pool->ep_nr && d == UINT32_MAX;
		     i++) {
			uint32_t c = sc->sc_pool->ep_devs[(sg->sg_g + i) %
							  sc->sc_pool->ep_nr];

			if (eng_dev_usable(e, c) && !dev_in(used, *nused, c))
				d = c;
		}
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
static int unit_space(struct eng *e, uint32_t d, uint8_t *buf, uint64_t len,
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
		d = slot_target(sc, sg, j, used, &nused);
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
		 * pieces), the unit goes to the next device slot_target()
		 * offers (spares, then the pool), never one of the group. */
		for (;;) {
			uint32_t nd;

			rc = unit_space(sc->sc_e, d, sc->sc_bufs[j], sc->sc_unit,
					&r->er_ci, &u.uu_new.mu_dev_off, io, &nr,
					true);
			if (rc != -ENOSPC)
				break;
			nd = slot_target(sc, sg, j, used, &nused);
			if (nd == UINT32_MAX)
				break;
			d = nd;
		}
		if (rc == -ENOSPC)
			return err_set(rc, "object %s: group %" PRIu64 " slot %u: "
				       "no device of pool %s left with a free run "
				       "of %" PRIu64 " bytes (%s)", sc_id(sc),
				       sg->sg_g, j, sc->sc_pool->ep_name,
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
			       sc_id(sc), sg->sg_g, lost, sc->sc_w, sc->sc_k);
	if (nr > 0 && tier_io_run(io, nr) != 0) {
		*transport = true;
		for (uint32_t i = 0; i < nr; i++)
			if (io[i].io_rc != 0) {
				uint32_t d = io[i].io_dev->td_sb.sb_index;

				*transport &= tier_rc_transport(io[i].io_rc);
				eng_dev_io_error(sc->sc_e, d);
				rc = err_set(io[i].io_rc, "object %s: group %" PRIu64
					     ": write to device %u (%s) failed",
					     sc_id(sc), sg->sg_g, d,
					     io[i].io_dev->td_path);
			}
		return rc;
	}
	for (uint32_t i = 0; rc == 0 && i < nupd; i++)
		rc = req_upd_add(r, &upd[i]);
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
				    "until the next open", sc_id(sc), err_msg());
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
	uint64_t gs = sg->sg_g * group_bytes(sc), ge = gs + group_bytes(sc);

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
				bv_copy(sc, br[i].br_flat + (s - br[i].br_start),
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
	uint64_t gs = g * group_bytes(sc);
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
static int ranges_groups(const struct sctx *sc, const struct brange *br,
			 uint32_t nbr, uint64_t **out, uint32_t *nr)
{
	uint64_t gb = group_bytes(sc), *v = NULL;
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
static int lock_slots(struct eng_req *r, const uint64_t *groups, uint32_t nr)
{
	uint32_t *s = malloc((nr ? nr : 1) * sizeof *s), n = 0;

	if (s == NULL)
		return err_set(-ENOMEM, "group locks");
	for (uint32_t i = 0; i < nr; i++)
		s[i] = (uint32_t)((layout_id_hash(&r->er_id) ^
				   (groups[i] * 0x9e3779b97f4a7c15ull)) %
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
static int stripe_update(struct sctx *sc)
{
	struct eng *e = sc->sc_e;
	struct eng_req *r = sc->sc_r;
	bool zero = r->er_kind != ER_OBJ_WRITE;
	struct brange *br = NULL;
	uint64_t *groups = NULL;
	uint32_t nbr = r->er_ext->ev_nr, ng = 0;
	MDB_txn *txn = NULL;
	int rc;

	rc = sc_ranges(sc, &br);
	if (rc == 0 && !zero)
		rc = bv_prefix(sc);
	if (rc == 0)
		rc = ranges_groups(sc, br, nbr, &groups, &ng);
	if (rc == 0 && !r->er_glocked) /* else held by its dtx */
		rc = lock_slots(r, groups, ng);
	if (rc != 0)
		goto out;
	if (!r->er_glocked)
		eng_glock(e, r->er_locks, r->er_nr_locks);
	r->er_eng = e;
	for (uint32_t i = 0; rc == 0 && i < ng; i++) {
		struct sgroup sg;
		uint32_t full = group_covered(sc, groups[i], br, nbr);
		uint32_t dmask = (1u << sc->sc_n) - 1, bad, dirty;

		group_place(sc, &sg, groups[i]);
		rcu_read_lock();
		rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);
		if (rc != 0) {
			rcu_read_unlock();
			rc = meta_err(rc, "begin read");
			break;
		}
		rc = group_load(sc, txn, &sg);
		if (rc == 0 && zero && full == dmask) {
			/* A whole group freed: drop its units. */
			for (uint32_t j = 0; rc == 0 && j < sc->sc_w; j++)
				if (sg.sg_has >> j & 1)
					rc = req_upd_add(r, &(struct unit_upd){
						.uu_addr = sg.sg_g * sc->sc_w + j,
						.uu_del = true});
			mdb_txn_abort(txn);
			rcu_read_unlock();
			continue;
		}
		if (rc == 0 && zero && sg.sg_has == 0) {
			mdb_txn_abort(txn);
			rcu_read_unlock();
			continue; /* zeros already */
		}
		/* Read what the new data does not replace (read-modify-write). */
		if (rc == 0 && full != dmask)
			rc = group_read(sc, &sg, dmask & ~full, &bad);
		mdb_txn_abort(txn);
		rcu_read_unlock();
		if (rc != 0)
			break;
		group_overlay(sc, &sg, br, nbr, zero, &dirty);
		rc = group_write(sc, &sg, dirty, zero ? full : 0);
	}
	if (rc == 0 && FAULT_HIT("obj.write.after_data"))
		rc = err_set(-EIO, "object %s: fault point obj.write.after_data",
			     sc_id(sc));
	if (rc != 0) {
		req_unlock(e, r);
		goto out;
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

/* ------------------------------------------------------------- reads */

/* A unit rewritten after a read found it damaged: its own commit item. */
struct rrepair {
	struct eng_req rr_req;
	struct clovis_extvec rr_ev; /* unused, keeps the request well-formed */
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
		if (!eng_dev_usable(e, d) || dev_in(used, nused, d))
			d = slot_target(sc, sg, j, used, &nused);
		else
			used[nused++] = d;
		if (d == UINT32_MAX)
			continue;
		u.uu_new = (struct meta_unit){
			.mu_len = (uint32_t)sc->sc_unit, .mu_dev = (uint16_t)d,
			.mu_crc = ec_crc(sc->sc_bufs[j], sc->sc_unit)};
		rc = unit_space(e, d, sc->sc_bufs[j], sc->sc_unit, &r->er_ci,
				&u.uu_new.mu_dev_off, io, &nr, false);
		if (rc == 0)
			rc = req_upd_add(r, &u);
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

static int stripe_read(struct sctx *sc)
{
	struct eng *e = sc->sc_e;
	struct eng_req *r = sc->sc_r;
	const struct clovis_extvec *ev = r->er_ext;
	uint32_t shift = sc->sc_ent.me_block_shift;
	uint64_t gb = group_bytes(sc), flat = 0;
	MDB_txn *txn;
	int rc;

	rc = bv_prefix(sc);
	if (rc != 0)
		return rc;
	rcu_read_lock();
	rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);
	if (rc != 0) {
		rcu_read_unlock();
		return meta_err(rc, "begin read");
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
			group_place(sc, &sg, g);
			rc = group_load(sc, txn, &sg);
			if (rc == 0)
				rc = group_read(sc, &sg, want, &bad);
			if (rc == 0 && bad != 0)
				group_read_repair(sc, &sg, bad);
			for (uint64_t p = s; rc == 0 && p < ge;) {
				uint32_t j = (uint32_t)((p - gs) / sc->sc_unit);
				uint64_t in = (p - gs) % sc->sc_unit;
				uint64_t n = sc->sc_unit - in;

				n = n < ge - p ? n : ge - p;
				bv_copy(sc, flat, sc->sc_bufs[sc->sc_mirror ?
							       g % sc->sc_w : j] + in,
					n, true);
				flat += n;
				p += n;
			}
			s = ge;
		}
	}
	mdb_txn_abort(txn);
	rcu_read_unlock();
	return rc;
}

/* ------------------------------------------------------------- entry */

int stripe_exec(struct eng *e, struct eng_req *r, const struct meta_ent *ent)
{
	struct sctx sc;
	int rc;

	rc = sctx_init(&sc, e, r, ent);
	if (rc == 0)
		rc = r->er_kind == ER_OBJ_READ ? stripe_read(&sc)
					       : stripe_update(&sc);
	sctx_fini(&sc);
	return rc;
}

int stripe_req_groups(struct eng *e, struct eng_req *r, uint64_t **groups,
		      uint32_t *ng)
{
	struct meta_ent cur;
	struct brange *br = NULL;
	struct sctx sc;
	MDB_txn *txn;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);

	*groups = NULL;
	*ng = 0;
	if (rc != 0)
		return meta_err(rc, "begin read");
	rc = ent_check(e, txn, r, &cur);
	mdb_txn_abort(txn);
	if (rc != 0 || !stripe_layout(cur.me_layout) ||
	    r->er_kind == ER_OBJ_READ)
		return rc;
	rc = sctx_init(&sc, e, r, &cur);
	if (rc == 0)
		rc = sc_ranges(&sc, &br);
	if (rc == 0)
		rc = ranges_groups(&sc, br, r->er_ext->ev_nr, groups, ng);
	if (rc == 0) {
		free(r->er_locks);
		rc = lock_slots(r, *groups, *ng);
	}
	if (rc != 0) {
		free(*groups);
		*groups = NULL;
		*ng = 0;
	}
	free(br);
	sctx_fini(&sc);
	return rc;
}

static int slot_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int stripe_reqs_locks(struct eng *e, struct eng_req **reqs, uint32_t nr,
		      uint32_t **slots, uint32_t *nslots, uint32_t *bad)
{
	uint64_t **g = calloc(nr ? nr : 1, sizeof *g);
	uint32_t *ng = calloc(nr ? nr : 1, sizeof *ng), *all = NULL;
	uint32_t nall = 0, n = 0;
	int rc = g == NULL || ng == NULL ?
		 err_set(-ENOMEM, "group locks of %u updates", nr) : 0;

	*slots = NULL;
	*nslots = 0;
	*bad = UINT32_MAX;
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		struct eng_req *r = reqs[i];
		uint32_t *na;

		if (r == NULL)
			continue;
		rc = stripe_req_groups(e, r, &g[i], &ng[i]);
		for (uint32_t j = 0; rc == 0 && j < i; j++) {
			if (g[j] == NULL ||
			    clovis_id_cmp(&reqs[j]->er_id, &r->er_id) != 0)
				continue;
			for (uint32_t a = 0; rc == 0 && a < ng[i]; a++)
				for (uint32_t b = 0; rc == 0 && b < ng[j]; b++)
					if (g[i][a] == g[j][b])
						rc = err_set(-EINVAL, "ops %u "
							"and %u both update "
							"parity group %" PRIu64
							" of object %s (one "
							"update per group in "
							"a dtx)", j + 1, i + 1,
							g[i][a],
							eng_id_str(&r->er_id));
		}
		na = rc != 0 ? NULL : realloc(all, (nall + r->er_nr_locks + 1) *
					      sizeof *all);
		if (rc == 0 && na == NULL)
			rc = err_set(-ENOMEM, "group locks");
		if (rc == 0) {
			all = na;
			if (r->er_nr_locks > 0)
				memcpy(all + nall, r->er_locks,
				       r->er_nr_locks * sizeof *all);
			nall += r->er_nr_locks;
		}
		free(r->er_locks);
		r->er_locks = NULL;
		r->er_nr_locks = 0;
		if (rc != 0)
			*bad = i;
	}
	if (rc == 0) {
		if (nall > 0)
			qsort(all, nall, sizeof *all, slot_cmp);
		for (uint32_t i = 0; i < nall; i++)
			if (n == 0 || all[n - 1] != all[i])
				all[n++] = all[i];
		*slots = all;
		*nslots = n;
		all = NULL;
	}
	for (uint32_t i = 0; g != NULL && i < nr; i++)
		free(g[i]);
	free(g);
	free(ng);
	free(all);
	return rc;
}

void stripe_req_fini(struct eng_req *r)
{
	free(r->er_upd);
	r->er_upd = NULL;
	r->er_nr_upd = r->er_cap_upd = 0;
	free(r->er_locks);
	r->er_locks = NULL;
}

/* ------------------------------------------------------ target half */

static int unit_space_free(struct eng_spacevec *freed,
			   const struct meta_unit *u)
{
	if (u->mu_flags & MU_LOST)
		return 0;
	return eng_spacevec_add(freed, u->mu_dev, u->mu_dev_off, u->mu_len);
}

int stripe_apply(struct eng *e, MDB_txn *txn, struct eng_req *r)
{
	struct meta *m = eng_meta(e);
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < r->er_nr_upd; i++) {
		struct unit_upd *u = &r->er_upd[i];
		uint8_t kb[META_EXT_KEY_LEN];
		const struct clovis_id *obj = u->uu_obj.ci_hi || u->uu_obj.ci_lo ?
					      &u->uu_obj : &r->er_id;
		MDB_val k = unit_key(kb, obj, u->uu_addr), v;
		struct meta_unit old;
		bool has;

		rc = mdb_get(txn, m->m_unit, &k, &v);
		if (rc != 0 && rc != MDB_NOTFOUND) {
			rc = meta_err(rc, "read unit record");
			break;
		}
		has = rc == 0 && v.mv_size == sizeof old;
		if (has)
			memcpy(&old, v.mv_data, sizeof old);
		rc = 0;
		if (u->uu_cas && (has == u->uu_expect_absent ||
				  (has && memcmp(&old, &u->uu_expect,
						 sizeof old) != 0))) {
			/* Changed since it was read: keep it; our copy's
			 * space goes back after the commit. */
			if (!u->uu_del)
				rc = unit_space_free(&r->er_ci.ci_freed,
						     &u->uu_new);
			continue;
		}
		if (has)
			rc = unit_space_free(&r->er_ci.ci_freed, &old);
		if (rc != 0)
			break;
		if (u->uu_del) {
			if (has && (rc = mdb_del(txn, m->m_unit, &k, NULL)) != 0)
				rc = meta_err(rc, "delete unit record");
			continue;
		}
		v = (MDB_val){sizeof u->uu_new, &u->uu_new};
		rc = mdb_put(txn, m->m_unit, &k, &v, 0);
		if (rc != 0)
			rc = meta_err(rc, "write unit record");
	}
	return rc;
}

int stripe_delete_units(struct eng *e, MDB_txn *txn,
			const struct clovis_id *obj, struct eng_spacevec *freed)
{
	uint8_t kb[META_EXT_KEY_LEN];
	MDB_val k = unit_key(kb, obj, 0), v;
	MDB_cursor *cur;
	int rc;

	rc = mdb_cursor_open(txn, eng_meta(e)->m_unit, &cur);
	if (rc != 0)
		return meta_err(rc, "open unit cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct meta_unit u;

		if (k.mv_size != META_EXT_KEY_LEN || memcmp(k.mv_data, kb, 16))
			break;
		if (v.mv_size != sizeof u) {
			rc = err_set(-CLOVIS_ECORRUPT, "object %s: unit record "
				     "of %zu bytes", eng_id_str(obj), v.mv_size);
			break;
		}
		memcpy(&u, v.mv_data, sizeof u);
		rc = unit_space_free(freed, &u);
		if (rc == 0 && (rc = mdb_cursor_del(cur, 0)) != 0)
			rc = meta_err(rc, "delete unit record");
		if (rc != 0)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int stripe_groups_drop(struct eng *e, MDB_txn *txn, const struct clovis_id *obj,
		       uint64_t g, uint64_t nr, uint32_t w,
		       struct eng_spacevec *freed)
{
	struct meta *m = eng_meta(e);
	int rc = 0;

	for (uint64_t a = g * w; rc == 0 && a < (g + nr) * w; a++) {
		uint8_t kb[META_EXT_KEY_LEN];
		MDB_val k = unit_key(kb, obj, a), v;
		struct meta_unit u;

		rc = mdb_get(txn, m->m_unit, &k, &v);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc != 0)
			return meta_err(rc, "read unit record");
		if (v.mv_size != sizeof u)
			return err_set(-CLOVIS_ECORRUPT, "object %s: unit record "
				       "of %zu bytes", eng_id_str(obj), v.mv_size);
		memcpy(&u, v.mv_data, sizeof u);
		rc = unit_space_free(freed, &u);
		if (rc == 0 && (rc = mdb_del(txn, m->m_unit, &k, NULL)) != 0)
			rc = meta_err(rc, "delete unit record");
	}
	return rc;
}

int stripe_rebuild_alloc(struct eng *e, MDB_txn *txn)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	rc = mdb_cursor_open(txn, eng_meta(e)->m_unit, &cur);
	if (rc != 0)
		return meta_err(rc, "open unit cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct meta_unit u;
		struct eng_dev *d;
		struct clovis_id id;

		if (k.mv_size != META_EXT_KEY_LEN || v.mv_size != sizeof u) {
			rc = err_set(-CLOVIS_ECORRUPT, "unit record of %zu/%zu "
				     "bytes", k.mv_size, v.mv_size);
			break;
		}
		memcpy(&u, v.mv_data, sizeof u);
		if (u.mu_flags & MU_LOST)
			continue;
		d = eng_dev_get(e, u.mu_dev);
		meta_id_dec(k.mv_data, &id);
		if (d == NULL || (u.mu_dev_off | u.mu_len) % LIM_ALLOC_UNIT ||
		    u.mu_dev_off + u.mu_len > tier_dev_size(d->ed_dev) ||
		    alloc_mark(&d->ed_alloc, u.mu_dev_off >> LIM_ALLOC_UNIT_SHIFT,
			       u.mu_len >> LIM_ALLOC_UNIT_SHIFT) != 0) {
			rc = err_set(-CLOVIS_ECORRUPT, "object %s unit %" PRIu64
				     ": on device %u at %" PRIu64 " overlaps "
				     "another or leaves the device",
				     eng_id_str(&id), meta_ext_key_blk(&k),
				     u.mu_dev, u.mu_dev_off);
			break;
		}
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : (rc > 0 ? meta_err(rc, "rebuild") : rc);
}

/* ------------------------------------------------------ attributes */

int stripe_attr_check(struct eng *e, const struct clovis_id *id,
		      struct meta_ent *me)
{
	bool mirror = me->me_layout == CLOVIS_LAYOUT_MIRROR;
	const struct eng_pool *p;
	struct pd_geom g;

	if (me->me_pool == 0) /* 0 = the default pool (clovis.h oa_pool) */
		me->me_pool = eng_default_pool(e);
	p = eng_pool_get(e, me->me_pool);

	if (p == NULL)
		return err_set(-EINVAL, "object %s: pool %u does not exist "
			       "(the store has %u)", eng_id_str(id), me->me_pool,
			       eng_pool_nr(e));
	if (me->me_n == 0 && me->me_k == 0)
		me->me_n = mirror ? 2 : 4, me->me_k = mirror ? 0 : 2;
	if (me->me_unit_shift == 0)
		me->me_unit_shift = (uint8_t)(me->me_block_shift > 16 ?
					      me->me_block_shift : 16);
	if (mirror && me->me_n < 2)
		return err_set(-EINVAL, "object %s: mirror needs 2 or more "
			       "copies (oa_data_units %u)", eng_id_str(id),
			       me->me_n);
	if (mirror && me->me_k != 0)
		return err_set(-EINVAL, "object %s: mirror takes no parity "
			       "units (oa_parity_units %u)", eng_id_str(id),
			       me->me_k);
	if (me->me_unit_shift < me->me_block_shift)
		return err_set(-EINVAL, "object %s: unit shift %u smaller than "
			       "block shift %u", eng_id_str(id),
			       me->me_unit_shift, me->me_block_shift);
	g = (struct pd_geom){mirror ? 1 : me->me_n,
			     mirror ? me->me_n - 1u : me->me_k, me->me_s,
			     p->ep_nr, me->me_unit_shift};
	if (pd_geom_check(&g) != 0)
		return -EINVAL; /* pd_geom_check() said which field */
	return 0;
}

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

enum walk_kind { WK_REPAIR, WK_REBALANCE, WK_SCRUB };

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

/* Records per batch (one commit each): large enough that a commit's sync
 * is paid for many rebuilt units, small enough that a stop or a crash
 * redoes little. */
#define WALK_BATCH 256u
/* Groups handled at once: enough to keep every device of a pool of a few
 * dozen busy (each group reads N units); bounded by WALK_MEM too. */
#define WALK_INFLIGHT 16u
/* Unit buffers of the groups in flight, at most (one group always fits). */
#define WALK_MEM (64ull << 20)

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
	struct walk_rec wk_rec;   /* place and totals as far as processed */
	struct walk_call wk_call;
	/* the current object */
	struct clovis_id wk_obj;
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
	if (rc == 0)
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
 * fewer are readable (group_finish() then says so).
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
		int rc = group_load(sc, txn, &wg->wg_sg);

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
		group_fetch_prep(sc, &wg->wg_sg, wg->wg_bufs, rd, &wg->wg_ok, 0,
				 w->wk_io, w->wk_ioslot, &nio);
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
			group_fetch_check(sc, &wg->wg_sg, wg->wg_bufs,
					  w->wk_io + wg->wg_io,
					  w->wk_ioslot + wg->wg_io, wg->wg_nio,
					  &wg->wg_ok, &wg->wg_bad);
	}
}

/* Phase 3 for one group: complete its content (decode); returns the slots
 * to write: rebuilt (repair), moved (rebalance) or damaged (scrub). */
static uint32_t walk_group_finish(struct walk *w, struct walk_grp *wg)
{
	struct sctx *sc = &w->wk_sc;
	uint32_t n = (uint32_t)__builtin_popcount(wg->wg_want), bad;
	int rc;

	rc = group_finish(sc, &wg->wg_sg, wg->wg_bufs, wg->wg_want, &wg->wg_ok,
			  &wg->wg_bad);
	w->wk_call.wc_bytes += n * sc->sc_unit;
	bad = (uint32_t)__builtin_popcount(w->wk_kind == WK_SCRUB ?
					   wg->wg_bad & wg->wg_want : wg->wg_bad);
	w->wk_rec.wr_corrupt += bad;
	w->wk_call.wc_corrupt += bad;
	if (rc != 0) {
		LOG_ERROR("%s: %s", walk_names[w->wk_kind], err_msg());
		w->wk_rec.wr_unrepairable += n;
		w->wk_call.wc_unrepairable += n;
		return 0;
	}
	return w->wk_kind == WK_SCRUB ? wg->wg_want & wg->wg_bad : wg->wg_want;
}

/* Where slot j of wg goes: rebalance to its placed device, scrub back to
 * its own device when usable, otherwise a spare (slot_target()). */
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
		return slot_target(&w->wk_sc, &wg->wg_sg, j, used, nused);
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
			rc = unit_space(w->wk_e, d, wg->wg_bufs[j], sc->sc_unit,
					&w->wk_req->er_ci, &u->uu_new.mu_dev_off,
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
		rc = req_upd_add(w->wk_req, &upd[i]);
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
	struct clovis_id id;
	struct meta_ent me;
	int rc;

	meta_id_dec(key, &id);
	if (w->wk_have_obj && clovis_id_cmp(&id, &w->wk_obj) == 0)
		return 0;
	rc = walk_flush(w, txn);
	if (rc != 0)
		return rc;
	if (w->wk_sc_ok)
		sctx_fini(&w->wk_sc);
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
	rc = sctx_init(&w->wk_sc, w->wk_e, &w->wk_oreq, &me);
	if (rc != 0) {
		sctx_fini(&w->wk_sc);
		return rc;
	}
	w->wk_sc_ok = true;
	return walk_bufs(w);
}

/* Add one record to the groups in flight (handling them when full). */
static int walk_item(struct walk *w, MDB_txn *txn, const struct walk_item *it)
{
	struct sctx *sc = &w->wk_sc;
	uint64_t addr = meta_ext_key_blk(&(MDB_val){META_EXT_KEY_LEN,
						     (void *)it->wi_key});
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
		group_place(sc, &wg->wg_sg, g);
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
	rc = mdb_txn_begin(eng_meta(w->wk_e)->m_env, NULL, MDB_RDONLY, &txn);
	if (rc != 0) {
		rcu_read_unlock();
		return meta_err(rc, "begin walk read");
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
	mdb_txn_abort(txn);
	rcu_read_unlock();
	return rc;
}

/* Read up to WALK_BATCH records after the saved key. */
static int walk_batch(struct walk *w, struct walk_item *items, uint32_t *nr,
		      uint64_t *total)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	MDB_stat st;
	int rc;

	*nr = 0;
	rc = mdb_txn_begin(eng_meta(w->wk_e)->m_env, NULL, MDB_RDONLY, &txn);
	if (rc != 0)
		return meta_err(rc, "begin walk");
	if (mdb_stat(txn, eng_meta(w->wk_e)->m_unit, &st) == 0)
		*total = st.ms_entries;
	rc = mdb_cursor_open(txn, eng_meta(w->wk_e)->m_unit, &cur);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return meta_err(rc, "open walk cursor");
	}
	k = (MDB_val){META_EXT_KEY_LEN, w->wk_rec.wr_key};
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == 0 && k.mv_size == META_EXT_KEY_LEN &&
	    memcmp(k.mv_data, w->wk_rec.wr_key, META_EXT_KEY_LEN) == 0)
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	for (; rc == 0 && *nr < WALK_BATCH;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != META_EXT_KEY_LEN ||
		    v.mv_size != sizeof(struct meta_unit)) {
			rc = err_set(-CLOVIS_ECORRUPT, "unit record of %zu/%zu "
				     "bytes", k.mv_size, v.mv_size);
			break;
		}
		memcpy(items[*nr].wi_key, k.mv_data, META_EXT_KEY_LEN);
		memcpy(&items[*nr].wi_rec, v.mv_data, sizeof items[*nr].wi_rec);
		(*nr)++;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc == MDB_NOTFOUND || rc == 0 ? 0 :
	       rc > 0 ? meta_err(rc, "walk units") : rc;
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
		       stripe_progress_fn fn, void *arg,
		       struct stripe_walk_stats *st)
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
	if (eng_sys_load(e, name, &w->wk_rec, sizeof w->wk_rec) == 0) {
		st->sw_resumed = 1;
		LOG_INFO("%s: resuming after %" PRIu64 " units",
			 walk_names[kind], w->wk_rec.wr_done);
	} else {
		memset(&w->wk_rec, 0, sizeof w->wk_rec);
	}
	eng_thread_enter();
	rc = walk_run(w, items, fn, arg);
	eng_thread_leave();
	walk_stats(w, st);
	if (rc == 0)
		rc = walk_finish(w);
	if (rc == 0 && st->sw_walk_unrepairable > 0)
		rc = err_set(-EIO, "%s: %" PRIu64 " units could not be rebuilt "
			     "(more than K units of their groups lost)",
			     walk_names[kind], st->sw_walk_unrepairable);
	st->sw_elapsed_ns = eng_now_ns() - t0;
	if (w->wk_sc_ok)
		sctx_fini(&w->wk_sc);
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
	return stripe_walk(e, WK_REPAIR, fn, arg, st);
}

int stripe_rebalance(struct eng *e, stripe_progress_fn fn, void *arg,
		     struct stripe_walk_stats *st)
{
	return stripe_walk(e, WK_REBALANCE, fn, arg, st);
}

int stripe_scrub(struct eng *e, stripe_progress_fn fn, void *arg,
		 struct stripe_walk_stats *st)
{
	return stripe_walk(e, WK_SCRUB, fn, arg, st);
}
