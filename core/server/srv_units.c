/*
 * srv_units.c — a READ answered by the places of its data units
 * (docs/cluster.md "Reads of units by the client").
 *
 * A client that sets ObjReq.units on a READ of a pdclust or mirror
 * object can read the units itself, from the servers that hold them, each
 * one once: the data crosses the network once, not twice (owner -> home
 * -> client).  The home answers with places (Reply.units: server, slice,
 * device, offset, length, crc64 of each data unit) instead of the data
 * when every unit the read covers is whole, healthy and reachable now:
 *
 *   - each unit whole in the read (the client checks the unit's crc64,
 *     which covers the whole unit) or a hole (zeros, never written);
 *   - no unit marked lost, every device usable now (ONLINE, its server
 *     not known to be down: eng_dev_usable()), not zoned;
 *   - a unit on a remote device: its owner, device and slice
 *     (rdev_locate()); on a device of this server's own engine: this
 *     server, slice `self`, the unit inside that slice;
 *   - one extent of at most ENG_UNITS_BATCH parity groups, whose
 *     records are one read snapshot (a write is seen whole or not at
 *     all), at most SRV_UNITS_MAX units;
 *   - the object unchanged after its records were read (not deleted:
 *     srv_units_same()).
 *
 * Anything else (a degraded group, a unit that would need parity, a
 * partial unit, a taken-over home's own devices) is read here as before,
 * in the same request: the client asked for either answer.  The places
 * come from one snapshot of the records (eng_unit_data_units()); a write
 * that lands after it puts its units
 * elsewhere and frees the old space only after its commit, so the client
 * reads either the old unit (the value before that write: the read
 * ordered before it) or, if the space was reused since, bytes whose crc64
 * does not match: it then sends the READ again without `units`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf.h"
#include "core/errors.h"
#include "core/layout.h"
#include "core/meta.h"
#include "core/meta_txn.h"
#include "core/server/rdev.h"
#include "core/server/srv_internal.h"
#include "tiers/tier.h"

/* Units one answer names at most (a READ is at most ST_OP_BYTES_MAX). */
#define SRV_UNITS_MAX 1024u

struct srv_units {
	struct srv *su_s;
	struct eng *su_e;
	uint64_t su_start;     /* first byte of the read */
	ReadUnit *su_u;
	uint32_t su_nr;
	bool su_no;            /* not answerable by places */
};

/* One data unit: its place, or su_no. */
static int srv_units_one(void *arg, const struct eng_unit_ref *u)
{
	struct srv_units *x = arg;
	struct srv *s = x->su_s;
	ReadUnit *o;
	struct eng_dev *ed;
	uint32_t server, dev, home;
	uint64_t slice, off;

	if (x->su_nr == SRV_UNITS_MAX || u->ur_skip != 0 ||
	    u->ur_len != u->ur_unit || u->ur_lost) {
		x->su_no = true;
		return 1;
	}
	o = &x->su_u[x->su_nr];
	read_unit__init(o);
	o->buf_off = u->ur_obj_off - x->su_start;
	o->len = u->ur_len;
	if (u->ur_hole) {
		o->hole = true;
		x->su_nr++;
		return 0;
	}
	ed = eng_dev_get(x->su_e, u->ur_dev);
	if (ed == NULL || !eng_dev_usable(x->su_e, u->ur_dev) ||
	    tier_dev_zoned(ed->ed_dev)) {
		x->su_no = true;
		return 1;
	}
	if (rdev_locate(ed->ed_dev, &server, &dev, &home)) {
		off = u->ur_dev_off;
	} else if (x->su_e == s->s_eng) {
		/* this server's own device: the unit inside its own slice,
		 * where an RdevReq of home `self` reads it */
		server = s->s_self;
		home = s->s_self;
		dev = u->ur_dev;
		slice = conf_slice_size(tier_dev_size(ed->ed_dev),
					s->s_conf->cc_nr_servers);
		if (u->ur_dev_off < slice * home ||
		    u->ur_dev_off - slice * home + u->ur_unit > slice) {
			x->su_no = true;
			return 1;
		}
		off = u->ur_dev_off - slice * home;
	} else {
		x->su_no = true;
		return 1;
	}
	o->server = server;
	o->home = home;
	o->dev = dev;
	o->off = off;
	o->crc = u->ur_crc;
	x->su_nr++;
	return 0;
}

/* Is the object still the one srv_obj_attrs() found (not deleted, nor
 * made again), after its unit records were read?  A delete before that
 * read would have made every unit a hole: zeros for an object that had
 * data (the usual read answers -ENOENT); one after it leaves the records
 * read a state of the object before the delete. */
static bool srv_units_same(struct srv_op *so)
{
	const struct eng_req *r = &so->so_m.mr_req;
	struct meta_ent me;
	MDB_txn *txn;
	int rc = meta_rtxn_begin(eng_meta(r->er_eng), &txn, "begin read");

	if (rc != 0)
		return false;
	rc = meta_ent_get(txn, eng_meta(r->er_eng), &r->er_id, &me);
	meta_rtxn_put(eng_meta(r->er_eng), txn);
	return rc == 0 && me.me_type == ST_ET_OBJ &&
	       me.me_ctime_ns == r->er_ent.me_ctime_ns;
}

int srv_obj_units(struct srv *s, struct srv_op *so)
{
	struct eng_req *r = &so->so_m.mr_req;
	const struct meta_ent *me = &r->er_ent;
	uint32_t shift = me->me_block_shift;
	struct srv_units x = {.su_s = s, .su_e = r->er_eng};
	Reply rp = REPLY__INIT;
	ReadUnit **up;
	uint64_t end, gbytes;
	int rc;

	if (!so->so_m.mr_units || r->er_kind != ER_OBJ_READ ||
	    r->er_ext->ev_nr != 1 || (me->me_layout != ST_LAYOUT_PDCLUST &&
				      me->me_layout != ST_LAYOUT_MIRROR))
		return 0;
	x.su_start = r->er_ext->ev_start_blk[0] << shift;
	end = x.su_start + (r->er_ext->ev_nr_blks[0] << shift);
	gbytes = (1ull << me->me_unit_shift) *
		 (me->me_layout == ST_LAYOUT_MIRROR ? 1u : me->me_n);
	/* one snapshot of the records: a write is seen whole or not */
	if (end <= x.su_start || gbytes == 0 ||
	    (end - 1) / gbytes - x.su_start / gbytes >= ENG_UNITS_BATCH)
		return 0;
	x.su_u = calloc(SRV_UNITS_MAX, sizeof *x.su_u);
	if (x.su_u == NULL)
		return 0;
	err_clear();
	rc = eng_unit_data_units(x.su_e, &r->er_id, me, x.su_start, end,
				 srv_units_one, &x);
	if (rc < 0 || x.su_no || x.su_nr == 0 || !srv_units_same(so)) {
		free(x.su_u);
		return 0;
	}
	up = calloc(x.su_nr, sizeof *up);
	if (up == NULL) {
		free(x.su_u);
		return 0;
	}
	for (uint32_t i = 0; i < x.su_nr; i++)
		up[i] = &x.su_u[i];
	rp.units = up;
	rp.n_units = x.su_nr;
	rp.bytes = end - x.su_start;
	srv_reply(so, 0, &rp, NULL);
	free(up);
	free(x.su_u);
	return 1;
}
