/*
 * zone.c — space on zoned (SMR) devices: appends at the write pointer, and
 * the cleaner that empties mostly-dead zones.
 *
 * A zoned device is never allocated from its bitmap.  Data is appended to
 * the device's open zone (tier_dev_zone_append: the driver puts it at the
 * write pointer); the bitmap only records which appended bytes are live
 * (mapped by an extent or unit record), exactly as for other devices, so it
 * is rebuilt from the maps at open and released through the usual deferred
 * path.  Dead bytes stay in their zone until the cleaner resets it:
 *
 *   pick    a zone that is not open and whose live bytes are at most
 *           live_pct % of its written bytes (a write that found no room:
 *           the zone with the most dead bytes that is not held, i.e. has
 *           no more bytes in use than the maps point at, since appended
 *           bytes of a write in flight, its own or another's, cannot be
 *           moved and would keep the zone from emptying; zone_choose);
 *   move    every record pointing into it: read the bytes, append them to
 *           another zone, and re-point the record in one commit item whose
 *           apply checks the record is unchanged (compare and swap), so a
 *           concurrent write or delete wins and the copy is dropped;
 *   wait    for the commit to be durable and the old space released (after
 *           an RCU grace period no reader uses it);
 *   reset   the zone once no live byte is left in it.
 * A crash before the commit leaves the old records (the copies are dead
 * space in another zone); after it, the new ones.  Reset only follows the
 * durable commit, so no acknowledged byte is ever lost.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu.h>

#include "core/engine.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/limits.h"
#include "core/log.h"

bool eng_dev_zoned(struct eng *e, uint32_t dev)
{
	struct eng_dev *d = eng_dev_get(e, dev);

	return d != NULL && tier_dev_zoned(d->ed_dev);
}

/*
 * Find room for an append: the open zone if it is partly written with room
 * for a granule; else the partly written zone with the most such room (the
 * tails of zones an earlier process left open: a process killed while
 * appending leaves its zone partly written, and a new one starts with
 * ed_zopen 0, so without this every restart would begin a fresh zone and
 * leave the last one's tail unused until no empty zone is left); else an
 * empty zone (the open one first) provided more than reserve zones are
 * empty.  The zone the cleaner is emptying (ed_zclean) is never picked.
 * Sets *z (and makes it the open zone) and *room (a multiple of gran).
 * Called under d->ed_zlock.
 */
static int zone_pick(struct eng_dev *d, uint32_t dev, uint64_t gran,
		     uint32_t reserve, uint32_t *z, uint64_t *room)
{
	uint32_t nr = tier_dev_zone_nr(d->ed_dev), empty = 0, pick = UINT32_MAX;
	uint32_t part = UINT32_MAX;
	uint64_t part_room = 0;
	struct tier_zone tz;
	int rc = tier_dev_zone_get(d->ed_dev, d->ed_zopen, &tz);

	if (rc != 0)
		return rc;
	*room = (tz.tz_start + tz.tz_len - tz.tz_wp) / gran * gran;
	if (tz.tz_wp != tz.tz_start && *room > 0 &&
	    d->ed_zopen != d->ed_zclean) {
		*z = d->ed_zopen;
		return 0;
	}
	for (uint32_t c = 0; c < nr; c++) {
		uint64_t r;

		rc = tier_dev_zone_get(d->ed_dev, c, &tz);
		if (rc != 0)
			return rc;
		if (c == d->ed_zclean || tz.tz_len < gran)
			continue;
		if (tz.tz_wp != tz.tz_start) {
			r = (tz.tz_start + tz.tz_len - tz.tz_wp) / gran * gran;
			if (r > part_room) {
				part = c;
				part_room = r;
			}
			continue;
		}
		empty++;
		if (pick == UINT32_MAX || c == d->ed_zopen)
			pick = c;
	}
	if (part != UINT32_MAX) {
		*room = part_room;
		*z = part;
		d->ed_zopen = part;
		return 0;
	}
	if (empty <= reserve)
		return err_set(-ENOSPC, "device %u (%s): no empty zone left "
			       "(%u kept for the cleaner); the SMR cleaner "
			       "must reclaim dead space", dev,
			       d->ed_dev->td_path, reserve);
	rc = tier_dev_zone_get(d->ed_dev, pick, &tz);
	if (rc != 0)
		return rc;
	*room = tz.tz_len / gran * gran;
	*z = pick;
	d->ed_zopen = pick;
	return 0;
}

/* Append as eng_space_append(); reserve: empty zones to leave alone. */
static int space_append(struct eng *e, uint32_t dev, const void *buf,
			uint64_t len, uint64_t gran, uint32_t reserve,
			struct eng_spacevec *sv)
{
	struct eng_dev *d = eng_dev_get(e, dev);
	const uint8_t *p = buf;
	int rc = 0;

	if (gran < LIM_ALLOC_UNIT)
		gran = LIM_ALLOC_UNIT;
	pthread_mutex_lock(&d->ed_zlock);
	while (rc == 0 && len > 0) {
		uint64_t room, n, off;
		uint32_t z = 0;

		rc = zone_pick(d, dev, gran, reserve, &z, &room);
		if (rc != 0)
			break;
		n = len < room ? len : room;
		rc = tier_dev_zone_append(d->ed_dev, z, p, n, &off);
		if (rc != 0)
			break;
		rc = alloc_mark(&d->ed_alloc, off >> LIM_ALLOC_UNIT_SHIFT,
				n >> LIM_ALLOC_UNIT_SHIFT);
		if (rc != 0) {
			rc = err_set(-ST_ECORRUPT, "device %u: appended space "
				     "at %" PRIu64 " already in use", dev, off);
			break;
		}
		rc = eng_spacevec_add(sv, dev, off, n);
		p += n;
		len -= n;
	}
	pthread_mutex_unlock(&d->ed_zlock);
	return rc;
}

int eng_space_append(struct eng *e, uint32_t dev, const void *buf,
		     uint64_t len, uint64_t gran, struct eng_spacevec *sv)
{
	return space_append(e, dev, buf, len, gran, ZONE_CLEAN_RESERVE, sv);
}

/** Why zone_reclaim() found no zone to clean (bytes of each kind). */
struct zwhy {
	uint64_t zw_dead;       /* dead bytes in zones that can be cleaned */
	uint64_t zw_held_own;   /* dead bytes sharing zones with own runs */
	uint64_t zw_held;       /* dead bytes in zones held by others */
};

static int zone_reclaim(struct eng *e, uint32_t dev,
			const struct eng_spacevec *own, struct zwhy *why);

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The -ENOSPC or -EAGAIN of a write that found no room, with its cause. */
static int reclaim_fail(struct eng *e, uint32_t dev, int rc,
			const struct zwhy *why)
{
	struct eng_dev *d = eng_dev_get(e, dev);
	uint64_t size = tier_dev_size(d->ed_dev);
	uint64_t live = alloc_used_in(&d->ed_alloc, 0,
				      size >> LIM_ALLOC_UNIT_SHIFT)
			<< LIM_ALLOC_UNIT_SHIFT;

	if (rc == -EAGAIN)
		return err_set(rc, "device %u (%s): no empty zone left after "
			       "%llu ms: the dead space the SMR cleaner could "
			       "reclaim (%" PRIu64 " bytes) is held by writes "
			       "in flight or frees on their way, or taken by "
			       "other writes as fast as it is reclaimed; try "
			       "again", dev, d->ed_dev->td_path,
			       ZONE_HELD_WAIT_NS / 1000000, why->zw_held);
	if (rc != -ENOSPC)
		return rc;
	if (why->zw_held_own > 0)
		return err_set(rc, "device %u (%s): full: %" PRIu64 " of %"
			       PRIu64 " bytes in use, and the SMR cleaner can "
			       "reclaim no dead space (the %" PRIu64 " dead "
			       "bytes left share zones with this write's own "
			       "appended data)", dev, d->ed_dev->td_path, live,
			       size, why->zw_held_own);
	return err_set(rc, "device %u (%s): full: %" PRIu64 " of %" PRIu64
		       " bytes live, no empty zone left but the one kept for "
		       "the SMR cleaner, which found no dead space to reclaim",
		       dev, d->ed_dev->td_path, live, size);
}

/*
 * Append for an ordinary write; when no room is left, reclaim and go on.
 * Each round either resets a zone (zone_reclaim), or waits for space on
 * its way: frees queued to the reclaimer (eng_reclaim_drain) and zones
 * held by other writes in flight, polled for at most ZONE_HELD_WAIT_NS in
 * all.  -ENOSPC only when no zone holds dead bytes the cleaner could take.
 */
int eng_space_append_reclaim(struct eng *e, uint32_t dev, const void *buf,
			     uint64_t len, uint64_t gran,
			     struct eng_spacevec *sv)
{
	const uint8_t *p = buf;
	uint64_t until = mono_ns() + ZONE_HELD_WAIT_NS;
	uint32_t resets = 0;
	struct zwhy why = {0};
	int rc = -ENOSPC;

	for (bool again = false; rc == -ENOSPC; again = true) {
		uint32_t first = sv->sv_nr;
		int r = again ? zone_reclaim(e, dev, sv, &why) : 0;

		if (r == 0 && again && ++resets > ZONE_RECLAIM_ROUNDS) {
			rc = -EAGAIN; /* others took what was reclaimed */
			break;
		}
		if (r != 0 && r != -ENOSPC && r != -EAGAIN) {
			rc = r;
			break;
		}
		/* Space on its way: frees queued to the reclaimer, zones
		 * held by other writes in flight (bounded in time). */
		if (r != 0 && !eng_reclaim_drain(e)) {
			if (r == -ENOSPC)
				break;
			nanosleep(&(struct timespec){0, ZONE_HELD_POLL_NS},
				  NULL);
		}
		if (r != 0 && mono_ns() >= until) {
			rc = r;
			break;
		}
		rc = eng_space_append(e, dev, p, len, gran, sv);
		for (uint32_t i = first; i < sv->sv_nr; i++) {
			p += sv->sv_v[i].sp_len;
			len -= sv->sv_v[i].sp_len;
		}
	}
	/* Test builds: a write in flight that keeps its appended bytes a
	 * second before its commit (tests/smr_ut.c held_zone). */
	if (rc == 0 && FAULT_HIT("zone.append.slow"))
		nanosleep(&(struct timespec){1, 0}, NULL);
	return reclaim_fail(e, dev, rc, &why);
}

/* ------------------------------------------------------------ cleaner */

/** One record to re-point: table, key, its value when read, new values. */
struct zmove {
	bool zm_unit;                 /* unit table, else ext table */
	uint8_t zm_key[META_EXT_KEY_LEN];
	uint8_t zm_old[24];           /* value as read */
	struct eng_space zm_from;     /* its space */
	uint32_t zm_nr;               /* new records (ext: split at zones) */
	uint8_t zm_nkey[ZMOVE_RUNS][META_EXT_KEY_LEN];
	uint8_t zm_nval[ZMOVE_RUNS][24];
	struct eng_space zm_to[ZMOVE_RUNS];
};

struct zclean {
	struct eng_citem zc_ci;       /* first */
	struct zmove *zc_v;
	uint32_t zc_nr, zc_cap;
	pthread_mutex_t zc_lock;
	pthread_cond_t zc_cond;
	bool zc_done;
	int zc_rc;
};

/* Re-point every record still as read; drop the copies of the others. */
static int zc_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct zclean *zc = (struct zclean *)ci;
	struct meta *m = eng_meta(e);
	int rc = 0;

	ci->ci_hard = true;
	for (uint32_t i = 0; rc == 0 && i < zc->zc_nr; i++) {
		struct zmove *z = &zc->zc_v[i];
		MDB_dbi dbi = z->zm_unit ? m->m_unit : m->m_ext;
		MDB_val k = {META_EXT_KEY_LEN, z->zm_key}, v;
		bool same;

		rc = mdb_get(txn, dbi, &k, &v);
		if (rc != 0 && rc != MDB_NOTFOUND)
			return meta_err(rc, "cleaner read");
		same = rc == 0 && v.mv_size == 24 &&
		       memcmp(v.mv_data, z->zm_old, 24) == 0;
		rc = 0;
		if (!same) {
			for (uint32_t j = 0; rc == 0 && j < z->zm_nr; j++)
				rc = eng_spacevec_add(&ci->ci_freed,
						      z->zm_to[j].sp_dev,
						      z->zm_to[j].sp_off,
						      z->zm_to[j].sp_len);
			continue;
		}
		for (uint32_t j = 0; rc == 0 && j < z->zm_nr; j++) {
			k = (MDB_val){META_EXT_KEY_LEN, z->zm_nkey[j]};
			v = (MDB_val){24, z->zm_nval[j]};
			rc = meta_mput(m, txn, dbi, &k, &v, 0);
			if (rc != 0)
				rc = meta_err(rc, "cleaner write");
		}
		if (rc == 0)
			rc = eng_spacevec_add(&ci->ci_freed, z->zm_from.sp_dev,
					      z->zm_from.sp_off,
					      z->zm_from.sp_len);
	}
	if (rc == 0)
		ci->ci_hard = false;
	return rc;
}

static void zc_done(struct eng_citem *ci, int rc)
{
	struct zclean *zc = (struct zclean *)ci;

	pthread_mutex_lock(&zc->zc_lock);
	zc->zc_done = true;
	zc->zc_rc = rc;
	pthread_cond_broadcast(&zc->zc_cond);
	pthread_mutex_unlock(&zc->zc_lock);
}

static int zc_add(struct zclean *zc, struct zmove **out)
{
	if (zc->zc_nr == zc->zc_cap) {
		uint32_t cap = zc->zc_cap ? zc->zc_cap * 2 : 32;
		struct zmove *v = realloc(zc->zc_v, cap * sizeof *v);

		if (v == NULL)
			return err_set(-ENOMEM, "cleaner moves");
		zc->zc_v = v;
		zc->zc_cap = cap;
	}
	*out = &zc->zc_v[zc->zc_nr++];
	memset(*out, 0, sizeof **out);
	return 0;
}

/*
 * Copy [off, off + len) of dev to other zones; fill z's new spaces.  The
 * new records are made by the caller from z->zm_to.
 */
static int zc_copy(struct eng *e, struct zclean *zc, uint32_t dev,
		   uint64_t off, uint64_t len, uint64_t gran, struct zmove *z)
{
	struct eng_dev *d = eng_dev_get(e, dev);
	struct eng_spacevec *sv = &zc->zc_ci.ci_alloc;
	uint32_t first = sv->sv_nr;
	void *buf;
	int rc;

	if (posix_memalign(&buf, 4096, len) != 0)
		return err_set(-ENOMEM, "cleaner buffer of %" PRIu64, len);
	rc = tier_dev_read(d->ed_dev, off, buf, len);
	if (rc == 0)
		rc = space_append(e, dev, buf, len, gran, 0, sv);
	free(buf);
	if (rc == 0 && sv->sv_nr - first > ZMOVE_RUNS)
		rc = err_set(-E2BIG, "cleaner: a record split in %u runs",
			     sv->sv_nr - first);
	if (rc != 0)
		return rc;
	z->zm_from = (struct eng_space){dev, off, len};
	z->zm_nr = sv->sv_nr - first;
	for (uint32_t j = 0; j < z->zm_nr; j++)
		z->zm_to[j] = sv->sv_v[first + j];
	zc->zc_ci.ci_devmask[dev / 64] |= 1ull << (dev % 64);
	return 0;
}

/* Plan the move of one extent record of a plain object. */
static int zc_ext(struct eng *e, MDB_txn *txn, struct zclean *zc,
		  const MDB_val *k, const MDB_val *v, uint32_t dev)
{
	struct meta_ent me;
	struct st_id id;
	struct meta_ext x;
	struct zmove *z;
	uint64_t blk = meta_ext_key_blk(k);
	int rc;

	memcpy(&x, v->mv_data, sizeof x);
	meta_id_dec(k->mv_data, &id);
	rc = meta_ent_get(txn, eng_meta(e), &id, &me);
	if (rc != 0)
		return rc;
	rc = zc_add(zc, &z);
	if (rc != 0)
		return rc;
	z->zm_unit = false;
	memcpy(z->zm_key, k->mv_data, META_EXT_KEY_LEN);
	memcpy(z->zm_old, v->mv_data, 24);
	if (x.mx_flags & MX_UNWRITTEN) {
		/* Nothing to read: new space of the same size, unwritten. */
		void *zero = calloc(1, x.mx_nr_blks << me.me_block_shift);

		rc = zero == NULL ? -ENOMEM :
		     space_append(e, dev, zero,
				      x.mx_nr_blks << me.me_block_shift,
				      1ull << me.me_block_shift, 0,
				      &zc->zc_ci.ci_alloc);
		free(zero);
		if (rc != 0) {
			zc->zc_nr--;
			return rc;
		}
		z->zm_from = (struct eng_space){dev, x.mx_dev_off,
						x.mx_nr_blks << me.me_block_shift};
		z->zm_nr = 1;
		z->zm_to[0] = zc->zc_ci.ci_alloc.sv_v[zc->zc_ci.ci_alloc.sv_nr - 1];
	} else {
		rc = zc_copy(e, zc, dev, x.mx_dev_off,
			     x.mx_nr_blks << me.me_block_shift,
			     1ull << me.me_block_shift, z);
		if (rc != 0) {
			zc->zc_nr--;
			return rc;
		}
	}
	for (uint32_t j = 0; j < z->zm_nr; j++) {
		struct meta_ext n = x;

		n.mx_dev_off = z->zm_to[j].sp_off;
		n.mx_nr_blks = z->zm_to[j].sp_len >> me.me_block_shift;
		meta_ext_key(z->zm_nkey[j], &id, blk);
		memcpy(z->zm_nval[j], &n, sizeof n);
		blk += n.mx_nr_blks;
	}
	return 0;
}

/* Plan the move of one unit record. */
static int zc_unit(struct eng *e, struct zclean *zc, const MDB_val *k,
		   const MDB_val *v, uint32_t dev)
{
	struct meta_unit u;
	struct zmove *z;
	int rc;

	memcpy(&u, v->mv_data, sizeof u);
	rc = zc_add(zc, &z);
	if (rc != 0)
		return rc;
	z->zm_unit = true;
	memcpy(z->zm_key, k->mv_data, META_EXT_KEY_LEN);
	memcpy(z->zm_old, v->mv_data, 24);
	rc = zc_copy(e, zc, dev, u.mu_dev_off, u.mu_len, u.mu_len, z);
	if (rc != 0) {
		zc->zc_nr--;
		return rc;
	}
	u.mu_dev_off = z->zm_to[0].sp_off;
	memcpy(z->zm_nkey[0], k->mv_data, META_EXT_KEY_LEN);
	memcpy(z->zm_nval[0], &u, sizeof u);
	return 0;
}

/* Plan the moves of every record with space in [zs, ze) of dev. */
static int zc_plan(struct eng *e, struct zclean *zc, uint32_t dev,
		   uint64_t zs, uint64_t ze)
{
	struct meta *m = eng_meta(e);
	MDB_txn *txn;
	int rc = mdb_txn_begin(m->m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "cleaner read");
	for (int t = 0; rc == 0 && t < 2; t++) {
		MDB_cursor *cur;
		MDB_val k, v;

		rc = mdb_cursor_open(txn, t ? m->m_unit : m->m_ext, &cur);
		if (rc != 0) {
			rc = meta_err(rc, "cleaner cursor");
			break;
		}
		for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			uint64_t off;
			uint16_t d;

			if (k.mv_size != META_EXT_KEY_LEN || v.mv_size != 24)
				continue;
			if (t) {
				struct meta_unit u;

				memcpy(&u, v.mv_data, sizeof u);
				off = u.mu_dev_off, d = u.mu_dev;
				if (u.mu_flags & MU_LOST)
					continue;
			} else {
				struct meta_ext x;

				memcpy(&x, v.mv_data, sizeof x);
				off = x.mx_dev_off, d = x.mx_dev;
			}
			if (d != dev || off < zs || off >= ze)
				continue;
			rc = t ? zc_unit(e, zc, &k, &v, dev)
			       : zc_ext(e, txn, zc, &k, &v, dev);
			if (rc != 0)
				break;
		}
		mdb_cursor_close(cur);
		if (rc == MDB_NOTFOUND)
			rc = 0;
	}
	mdb_txn_abort(txn);
	return rc;
}

/* Wait (bounded) until the zone holds no live byte. */
static bool zone_drained(struct eng_dev *d, uint64_t zs, uint64_t len)
{
	for (int i = 0; i < 400; i++) {
		if (alloc_used_in(&d->ed_alloc, zs >> LIM_ALLOC_UNIT_SHIFT,
				  len >> LIM_ALLOC_UNIT_SHIFT) == 0)
			return true;
		nanosleep(&(struct timespec){0, 5000000}, NULL);
	}
	return false;
}

/* Clean one zone: move its live records, wait, reset. */
static int zone_clean(struct eng *e, uint32_t dev, const struct tier_zone *tz,
		      struct eng_clean_stats *st)
{
	struct eng_dev *d = eng_dev_get(e, dev);
	struct zclean zc = {0};
	int rc;

	pthread_mutex_init(&zc.zc_lock, NULL);
	pthread_cond_init(&zc.zc_cond, NULL);
	pthread_mutex_lock(&d->ed_zlock);
	d->ed_zclean = (uint32_t)(tz->tz_start / tz->tz_len);
	pthread_mutex_unlock(&d->ed_zlock);
	zc.zc_ci.ci_apply = zc_apply;
	zc.zc_ci.ci_done = zc_done;
	rc = zc_plan(e, &zc, dev, tz->tz_start, tz->tz_start + tz->tz_len);
	if (rc != 0) {
		eng_space_release(e, &zc.zc_ci.ci_alloc);
		goto out;
	}
	if (zc.zc_nr > 0) {
		eng_commit_submit(e, &zc.zc_ci);
		pthread_mutex_lock(&zc.zc_lock);
		while (!zc.zc_done)
			pthread_cond_wait(&zc.zc_cond, &zc.zc_lock);
		pthread_mutex_unlock(&zc.zc_lock);
		rc = zc.zc_rc;
		if (rc != 0)
			goto out;
		for (uint32_t i = 0; i < zc.zc_nr; i++) {
			st->cs_records_moved++;
			st->cs_bytes_moved += zc.zc_v[i].zm_from.sp_len;
		}
	}
	if (!zone_drained(d, tz->tz_start, tz->tz_len)) {
		LOG_WARNING("device %u zone at %" PRIu64 ": still live after "
			    "the move (written meanwhile); not reset", dev,
			    tz->tz_start);
		goto out;
	}
	pthread_mutex_lock(&d->ed_zlock);
	if (alloc_used_in(&d->ed_alloc, tz->tz_start >> LIM_ALLOC_UNIT_SHIFT,
			  tz->tz_len >> LIM_ALLOC_UNIT_SHIFT) == 0) {
		rc = tier_dev_zone_reset(d->ed_dev,
					 (uint32_t)(tz->tz_start / tz->tz_len));
		if (rc == 0)
			st->cs_zones_reset++;
	}
	pthread_mutex_unlock(&d->ed_zlock);
out:
	pthread_mutex_lock(&d->ed_zlock);
	d->ed_zclean = UINT32_MAX;
	pthread_mutex_unlock(&d->ed_zlock);
	eng_spacevec_fini(&zc.zc_ci.ci_alloc);
	eng_spacevec_fini(&zc.zc_ci.ci_freed);
	free(zc.zc_v);
	pthread_mutex_destroy(&zc.zc_lock);
	pthread_cond_destroy(&zc.zc_cond);
	return rc;
}

/*
 * One cleaner at a time in the process: two cleaning one zone would each
 * copy its records (the second copies lose their compare and swap, which
 * is safe but wasted), and one could reset a zone the other just emptied
 * and writers began to fill.
 */
static pthread_mutex_t zone_clean_lock = PTHREAD_MUTEX_INITIALIZER;

/* Live bytes of zone tz of d. */
static uint64_t zone_live(struct eng_dev *d, const struct tier_zone *tz)
{
	return alloc_used_in(&d->ed_alloc, tz->tz_start >> LIM_ALLOC_UNIT_SHIFT,
			     tz->tz_len >> LIM_ALLOC_UNIT_SHIFT)
	       << LIM_ALLOC_UNIT_SHIFT;
}

/* Add the bytes of [off, off + len) to mapped[] of the zones they cover. */
static void zone_count(uint64_t *mapped, uint32_t nr, uint64_t zlen,
		       uint64_t off, uint64_t len)
{
	while (len > 0) {
		uint64_t z = off / zlen, n = (z + 1) * zlen - off;

		if (z >= nr)
			return;
		n = n < len ? n : len;
		mapped[z] += n;
		off += n;
		len -= n;
	}
}

/*
 * Bytes each zone of dev holds mapped by an extent or unit record, in one
 * snapshot of the maps: mapped[z] for z < nr, zones of zlen bytes.
 */
static int zone_mapped(struct eng *e, uint32_t dev, uint64_t zlen,
		       uint32_t nr, uint64_t *mapped)
{
	struct meta *m = eng_meta(e);
	uint8_t last[16] = {0};
	uint32_t shift = 0;
	bool have = false;
	MDB_txn *txn;
	int rc = mdb_txn_begin(m->m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "cleaner read");
	memset(mapped, 0, nr * sizeof *mapped);
	for (int t = 0; rc == 0 && t < 2; t++) {
		MDB_cursor *cur;
		MDB_val k, v;

		rc = mdb_cursor_open(txn, t ? m->m_unit : m->m_ext, &cur);
		if (rc != 0) {
			rc = meta_err(rc, "cleaner cursor");
			break;
		}
		for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			struct meta_unit u;
			struct meta_ext x;

			if (k.mv_size != META_EXT_KEY_LEN || v.mv_size != 24)
				continue;
			if (t) {
				memcpy(&u, v.mv_data, sizeof u);
				if (u.mu_dev == dev && !(u.mu_flags & MU_LOST))
					zone_count(mapped, nr, zlen,
						   u.mu_dev_off, u.mu_len);
				continue;
			}
			memcpy(&x, v.mv_data, sizeof x);
			if (x.mx_dev != dev)
				continue;
			if (!have || memcmp(last, k.mv_data, 16) != 0) {
				struct meta_ent me;
				struct st_id id;

				meta_id_dec(k.mv_data, &id);
				rc = meta_ent_get(txn, m, &id, &me);
				if (rc != 0)
					break;
				memcpy(last, k.mv_data, 16);
				shift = me.me_block_shift;
				have = true;
			}
			zone_count(mapped, nr, zlen, x.mx_dev_off,
				   x.mx_nr_blks << shift);
		}
		mdb_cursor_close(cur);
		if (rc == MDB_NOTFOUND)
			rc = 0;
	}
	mdb_txn_abort(txn);
	return rc;
}

/* Does own hold a run on dev inside zone tz? */
static bool zone_own(const struct eng_spacevec *own, uint32_t dev,
		     const struct tier_zone *tz)
{
	for (uint32_t i = 0; own != NULL && i < own->sv_nr; i++)
		if (own->sv_v[i].sp_dev == dev &&
		    own->sv_v[i].sp_off >= tz->tz_start &&
		    own->sv_v[i].sp_off < tz->tz_start + tz->tz_len)
			return true;
	return false;
}

/*
 * Choose the zone of d to clean: the one with the most dead bytes (written
 * minus marked in use) among those not tried and not held.  A zone is held
 * when it has more bytes marked in use than the maps point at (mapped[]):
 * appended bytes whose commit is still to come (a write in flight: the
 * caller's own earlier runs, own, or another thread's), or freed bytes on
 * their way back.  Cleaning it could not empty it (its unmapped bytes are
 * no record's to move), and waiting for it could wait on the very write
 * that needs the room; its dead bytes are counted in why instead.  The
 * chosen zone becomes d->ed_zclean at once, so no append goes there from
 * now on.  Under d->ed_zlock.  Returns the zone or UINT32_MAX.
 */
static uint32_t zone_choose(struct eng_dev *d, uint32_t dev,
			    const uint64_t *mapped, const uint8_t *tried,
			    const struct eng_spacevec *own, struct zwhy *why)
{
	uint32_t nr = tier_dev_zone_nr(d->ed_dev), best = UINT32_MAX;
	uint64_t most = 0;

	memset(why, 0, sizeof *why);
	for (uint32_t z = 0; z < nr; z++) {
		struct tier_zone tz;
		uint64_t written, live;

		if (tier_dev_zone_get(d->ed_dev, z, &tz) != 0)
			continue;
		written = tz.tz_wp - tz.tz_start;
		live = zone_live(d, &tz);
		if (written <= live)
			continue;
		if (live > mapped[z] && zone_own(own, dev, &tz)) {
			why->zw_held_own += written - live;
		} else if (live > mapped[z]) {
			why->zw_held += written - live;
		} else if (tried[z]) {
			why->zw_held += written - live; /* not emptied */
		} else {
			why->zw_dead += written - live;
			if (written - live > most) {
				most = written - live;
				best = z;
			}
		}
	}
	if (best != UINT32_MAX)
		d->ed_zclean = best;
	return best;
}

/*
 * For a write that found no room: clean the zone of dev with the most dead
 * bytes that is not held (zone_choose; own: the write's runs so far), and
 * if it could not be reset (written meanwhile, or no room for its live
 * bytes), the next.  Returns 0 when a zone was reset; -EAGAIN when the
 * only dead bytes are in zones other writes in flight (or frees on their
 * way) hold, so waiting may help; -ENOSPC when no zone but those of the
 * write's own runs has dead bytes; or an error.  *why: the dead bytes seen.
 */
static int zone_reclaim(struct eng *e, uint32_t dev,
			const struct eng_spacevec *own, struct zwhy *why)
{
	struct eng_dev *d = eng_dev_get(e, dev);
	uint32_t nr = tier_dev_zone_nr(d->ed_dev), z = UINT32_MAX;
	uint64_t *mapped = calloc(nr, sizeof *mapped);
	uint8_t *tried = calloc(nr, 1);
	struct eng_clean_stats st = {0};
	struct tier_zone tz = {0};
	int rc = mapped == NULL || tried == NULL ?
		 err_set(-ENOMEM, "cleaner zone table") :
		 tier_dev_zone_get(d->ed_dev, 0, &tz);

	pthread_mutex_lock(&zone_clean_lock);
	for (uint32_t n = 0; rc == 0 && n < nr && st.cs_zones_reset == 0; n++) {
		rc = zone_mapped(e, dev, tz.tz_len, nr, mapped);
		if (rc != 0)
			break;
		pthread_mutex_lock(&d->ed_zlock);
		z = zone_choose(d, dev, mapped, tried, own, why);
		pthread_mutex_unlock(&d->ed_zlock);
		if (z == UINT32_MAX) {
			rc = why->zw_held > 0 ? -EAGAIN : -ENOSPC;
			break;
		}
		tried[z] = 1;
		rc = tier_dev_zone_get(d->ed_dev, z, &tz);
		if (rc == 0) {
			rc = zone_clean(e, dev, &tz, &st);
		} else {
			pthread_mutex_lock(&d->ed_zlock);
			d->ed_zclean = UINT32_MAX;
			pthread_mutex_unlock(&d->ed_zlock);
		}
		if (rc == -ENOSPC) /* no room for its live bytes: the next */
			rc = 0;
	}
	if (rc == 0 && st.cs_zones_reset == 0) /* none could be emptied */
		rc = -EAGAIN;
	pthread_mutex_unlock(&zone_clean_lock);
	if (rc == 0)
		LOG_INFO("device %u: write found no room; cleaner reset zone %u "
			 "(%" PRIu64 " bytes moved)", dev, z, st.cs_bytes_moved);
	free(mapped);
	free(tried);
	return rc;
}

int eng_smr_clean(struct eng *e, uint32_t dev, uint32_t live_pct,
		  struct eng_clean_stats *st)
{
	int rc = 0;

	memset(st, 0, sizeof *st);
	if (dev != UINT32_MAX && !eng_dev_zoned(e, dev))
		return err_set(-EINVAL, "device %u is not a zoned (SMR) device",
			       dev);
	eng_thread_enter();
	for (uint32_t i = 0; rc == 0 && i < eng_dev_nr(e); i++) {
		struct eng_dev *d = eng_dev_get(e, i);

		if ((dev != UINT32_MAX && i != dev) || !eng_dev_zoned(e, i) ||
		    !eng_dev_usable(e, i))
			continue;
		for (uint32_t z = 0; rc == 0 && z < tier_dev_zone_nr(d->ed_dev);
		     z++) {
			struct tier_zone tz = {0};
			uint64_t written, live;

			pthread_mutex_lock(&zone_clean_lock);
			rc = tier_dev_zone_get(d->ed_dev, z, &tz);
			written = tz.tz_wp - tz.tz_start;
			live = rc == 0 ? zone_live(d, &tz) : 0;
			if (rc == 0 && z != d->ed_zopen && written > 0 &&
			    live * 100 <= written * live_pct)
				rc = zone_clean(e, i, &tz, st);
			pthread_mutex_unlock(&zone_clean_lock);
		}
	}
	eng_thread_leave();
	return rc;
}

/* Recover device dev at open: reset its written zones with no live byte;
 * open the partly written zone with the most room. */
static uint32_t zone_recover_dev(struct eng_dev *d, uint32_t dev)
{
	uint32_t nr = tier_dev_zone_nr(d->ed_dev), reset = 0;
	uint64_t most = 0;
	struct tier_zone tz;

	for (uint32_t z = 0; z < nr; z++) {
		int rc = tier_dev_zone_get(d->ed_dev, z, &tz);

		if (rc != 0 || tz.tz_wp == tz.tz_start)
			continue;
		if (zone_live(d, &tz) == 0) {
			rc = tier_dev_zone_reset(d->ed_dev, z);
			if (rc == 0) {
				reset++;
				continue;
			}
			LOG_WARNING("device %u (%s) zone %u: holds no live byte "
				    "but its reset failed (%d %s); left to the "
				    "cleaner", dev, d->ed_dev->td_path, z, rc,
				    err_msg());
		}
		if (tz.tz_start + tz.tz_len - tz.tz_wp > most) {
			most = tz.tz_start + tz.tz_len - tz.tz_wp;
			d->ed_zopen = z;
		}
	}
	return reset;
}

int eng_smr_recover(struct eng *e, uint32_t *nr_reset)
{
	uint32_t total = 0;

	for (uint32_t i = 0; i < eng_dev_nr(e); i++) {
		struct eng_dev *d = eng_dev_get(e, i);
		uint32_t n;

		if (!eng_dev_zoned(e, i) || !eng_dev_usable(e, i))
			continue;
		pthread_mutex_lock(&d->ed_zlock);
		n = zone_recover_dev(d, i);
		pthread_mutex_unlock(&d->ed_zlock);
		if (n > 0)
			LOG_INFO("device %u (%s): %u written zones held no live "
				 "byte (appended before a crash, or dead); reset "
				 "at open", i, d->ed_dev->td_path, n);
		total += n;
	}
	if (nr_reset != NULL)
		*nr_reset = total;
	return 0;
}
