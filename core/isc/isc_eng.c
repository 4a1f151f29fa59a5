/*
 * isc_eng.c — a shipped call on one node's store (isc_eng.h).
 *
 * Objects.  A pdclust or mirror object is mapped unit by unit where each
 * unit is (elo_data_units: layouts/stripe_isc.c):
 *   - a unit on a device of this store is read here and checked against
 *     its crc64; each device's units are one run (one share);
 *   - a unit on another server's device (a remote device) goes, with the
 *     other units that server holds, to that server (rm_run: a SOP_ISC_UNITS
 *     call, core/server/srv_isc.c), which reads, checks and maps them and
 *     answers only the function's output;
 *   - a unit never written is mapped here as zeros; a unit whose device is
 *     unusable, whose server did not answer, or that failed its read or
 *     check anywhere, is mapped here from the object's own READ (its group
 *     rebuilt from the survivors: a degraded read).
 * The remote runs go out first, each on a thread of its own, and run while
 * this node maps its own share.  A plain or composite object, and a Lua
 * function with granule "object", is mapped here through the object's
 * READ: ISC_CHUNK bytes per extent (whole records), or the whole object as
 * one extent (granule "object", at most ISC_WHOLE_MAX bytes).
 *
 * Indices.  One run over the records of [lo, hi), pulled through the
 * engine's NEXT (at most ISC_IDX_PAGE records per page).
 *
 * Each run's output is merged into the call's (isc_out_merge()); the
 * output cap applies to every run and to the merged result.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc64.h>

#include "core/errors.h"
#include "core/isc/isc_eng.h"
#include "core/log.h"
#include "core/meta.h"
#include "core/meta_txn.h"
#include "core/obj.h"
#include "tiers/tier.h"

#define ISC_IDX_PAGE 256u
#define ISC_SERVERS 64u

/* ------------------------------------------------------------ helpers */

static uint64_t isc_crc(const void *b, size_t len)
{
	return crc64_ecma_refl(0, b, len);
}

/* The object's record: 0, or -ENOENT with a message. */
static int isc_obj_ent(struct eng *e, const struct st_id *id,
		       struct meta_ent *me)
{
	MDB_txn *txn;
	int rc = meta_rtxn_once(eng_meta(e), &txn, "begin read");

	if (rc != 0)
		return rc;
	rc = meta_ent_get(txn, eng_meta(e), id, me);
	meta_txn_abort(txn);
	if (rc == -ENOENT || (rc == 0 && me->me_type != ST_ET_OBJ))
		return err_set(-ENOENT, "object %s does not exist",
			       eng_id_str(id));
	return rc;
}

/* Read the object's bytes [a, b) through its READ (any layout; a unit
 * layout rebuilds what it must): *buf (free it) and *data inside it. */
static int isc_read(struct eng *e, const struct st_id *id,
		    const struct meta_ent *me, uint64_t a, uint64_t b,
		    void **buf, const uint8_t **data)
{
	uint32_t bs = me->me_block_shift;
	uint64_t b0 = a >> bs, nb = ((b - 1) >> bs) - b0 + 1;
	size_t len = (size_t)(nb << bs);
	struct st_extvec ev = {1, &b0, &nb};
	struct eng_req *q;
	void *p = NULL;
	struct st_bufvec bv = {1, &p, &len};
	int rc;

	if (posix_memalign(&p, 4096, len) != 0)
		return err_set(-ENOMEM, "object %s: %zu bytes to read",
			       eng_id_str(id), len);
	q = calloc(1, sizeof *q);
	if (q == NULL) {
		free(p);
		return err_set(-ENOMEM, "object %s: read", eng_id_str(id));
	}
	q->er_kind = ER_OBJ_READ;
	q->er_type = ST_ET_OBJ;
	q->er_id = *id;
	q->er_container = me->me_container;
	q->er_ent = *me;
	q->er_ext = &ev;
	q->er_data = &bv;
	q->er_no_fdmi = true;
	rc = eng_exec(e, q);
	eng_unit_req_fini(q);
	free(q);
	if (rc != 0) {
		free(p);
		return rc;
	}
	*buf = p;
	*data = (const uint8_t *)p + (a - (b0 << bs));
	return 0;
}

static void isc_stats_add(struct isc_stats *a, const struct isc_stats *b)
{
	a->st_runs += b->st_runs;
	for (uint32_t i = 0; i < ISC_WHERE_WORDS; i++)
		a->st_where[i] |= b->st_where[i];
	a->st_bytes += b->st_bytes;
	a->st_degraded += b->st_degraded;
}

/* Start a run of c with its own deadline (each run's clock starts with
 * it). */
static int isc_start(const struct isc_call *c, struct isc_run **r)
{
	struct isc_limits lim = c->ic_lim;
	uint32_t ms = c->ic_deadline_ms ? c->ic_deadline_ms :
		      ISC_DEADLINE_MS_DEFAULT;

	lim.il_deadline_ns = eng_now_ns() + (uint64_t)ms * 1000000ull;
	return isc_run_start(r, c->ic_fn, c->ic_args, c->ic_alen, &lim);
}

/* ---------------------------------------------------- units of a device */

int isc_units_run(const struct isc_call *c, struct tier_dev *const *d,
		  const uint64_t *off, const struct eng_unit_ref *u,
		  uint32_t nr, struct isc_out *out, uint8_t *bad,
		  struct isc_stats *st)
{
	struct isc_run *r;
	void *buf = NULL;
	uint32_t cap = 0;
	int rc;

	rc = isc_start(c, &r);
	if (rc != 0)
		return rc;
	st->st_runs++;
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		if (u[i].ur_unit > cap) {
			free(buf);
			buf = NULL;
			cap = u[i].ur_unit;
			if (posix_memalign(&buf, 4096, cap) != 0) {
				buf = NULL;
				rc = err_set(-ENOMEM, "%u bytes for a unit",
					     cap);
				break;
			}
		}
		if (tier_dev_read(d[i], off[i], buf, u[i].ur_unit) != 0) {
			LOG_WARNING("function shipping: object %s group %"
				    PRIu64 " slot %u: read failed (%s): "
				    "mapped degraded", eng_id_str(&c->ic_id),
				    u[i].ur_group, u[i].ur_slot, err_msg());
			bad[i] = 1;
			continue;
		}
		if (isc_crc(buf, u[i].ur_unit) != u[i].ur_crc) {
			LOG_WARNING("function shipping: object %s group %"
				    PRIu64 " slot %u: checksum mismatch: "
				    "mapped degraded", eng_id_str(&c->ic_id),
				    u[i].ur_group, u[i].ur_slot);
			bad[i] = 1;
			continue;
		}
		rc = isc_run_ext(r, u[i].ur_obj_off,
				 (const uint8_t *)buf + u[i].ur_skip,
				 u[i].ur_len);
		st->st_bytes += u[i].ur_len;
	}
	free(buf);
	if (rc != 0) {
		isc_run_abort(r);
		return rc;
	}
	return isc_run_end(r, out);
}

/* ------------------------------------------------------------- objects */

/* The units of a call, sorted into shares. */
struct isc_share {
	struct eng_unit_ref *sh_u;
	uint32_t sh_nr, sh_cap;
};

struct isc_plan {
	struct eng *pl_e;
	const struct isc_remote_ops *pl_rm;
	struct isc_share pl_dev[LIM_DEV_MAX];        /* local devices */
	struct isc_share pl_srv[ISC_SERVERS];        /* other servers */
	struct isc_share pl_here;                    /* holes, degraded */
};

static int isc_share_add(struct isc_share *sh, const struct eng_unit_ref *u)
{
	if (sh->sh_nr == sh->sh_cap) {
		uint32_t cap = sh->sh_cap ? sh->sh_cap * 2 : 16;
		void *p = realloc(sh->sh_u, cap * sizeof *sh->sh_u);

		if (p == NULL)
			return err_set(-ENOMEM, "function shipping: unit list");
		sh->sh_u = p;
		sh->sh_cap = cap;
	}
	sh->sh_u[sh->sh_nr++] = *u;
	return 0;
}

static int isc_plan_unit(void *arg, const struct eng_unit_ref *u)
{
	struct isc_plan *pl = arg;
	uint32_t srv;

	if (u->ur_hole || u->ur_lost || !eng_dev_usable(pl->pl_e, u->ur_dev))
		return isc_share_add(&pl->pl_here, u);
	if (pl->pl_rm != NULL &&
	    pl->pl_rm->rm_owner(pl->pl_rm->rm_arg, pl->pl_e, u->ur_dev, &srv)) {
		if (srv >= ISC_SERVERS)
			return isc_share_add(&pl->pl_here, u);
		return isc_share_add(&pl->pl_srv[srv], u);
	}
	if (u->ur_dev >= LIM_DEV_MAX)
		return isc_share_add(&pl->pl_here, u);
	return isc_share_add(&pl->pl_dev[u->ur_dev], u);
}

static void isc_plan_fini(struct isc_plan *pl)
{
	for (uint32_t i = 0; i < LIM_DEV_MAX; i++)
		free(pl->pl_dev[i].sh_u);
	for (uint32_t i = 0; i < ISC_SERVERS; i++)
		free(pl->pl_srv[i].sh_u);
	free(pl->pl_here.sh_u);
	free(pl);
}

/* One remote share on a thread of its own. */
struct isc_rjob {
	pthread_t rj_t;
	bool rj_started;
	struct eng *rj_e;
	const struct isc_remote_ops *rj_rm;
	const struct isc_call *rj_c;
	uint32_t rj_srv;
	struct isc_share *rj_sh;
	struct isc_out rj_out;
	uint8_t *rj_bad;
	bool rj_lost;
	int rj_rc;
	char rj_msg[LIM_ERRMSG_LEN];
	struct isc_stats rj_st;
};

static void *isc_rjob_main(void *arg)
{
	struct isc_rjob *j = arg;

	err_clear();
	j->rj_rc = j->rj_rm->rm_run(j->rj_rm->rm_arg, j->rj_e, j->rj_srv,
				    j->rj_c, j->rj_sh->sh_u, j->rj_sh->sh_nr,
				    &j->rj_out, j->rj_bad, &j->rj_lost,
				    &j->rj_st);
	if (j->rj_rc != 0)
		snprintf(j->rj_msg, sizeof j->rj_msg, "%s", err_msg());
	return NULL;
}

/* Map units u[0..nr) here from the object's READ (holes as zeros), one
 * run. */
static int isc_here_run(struct eng *e, const struct isc_call *c,
			const struct meta_ent *me,
			const struct eng_unit_ref *u, uint32_t nr,
			struct isc_out *out, struct isc_stats *st)
{
	struct isc_run *r;
	void *zero = NULL;
	uint32_t zcap = 0;
	int rc;

	if (nr == 0)
		return 0;
	rc = isc_start(c, &r);
	if (rc != 0)
		return rc;
	st->st_runs++;
	isc_where_set(st->st_where, c->ic_self);
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		void *buf = NULL;
		const uint8_t *data;

		if (u[i].ur_hole) {
			if (u[i].ur_len > zcap) {
				free(zero);
				zcap = u[i].ur_len;
				zero = calloc(1, zcap);
				if (zero == NULL) {
					rc = err_set(-ENOMEM, "zeros");
					break;
				}
			}
			rc = isc_run_ext(r, u[i].ur_obj_off, zero, u[i].ur_len);
			st->st_bytes += u[i].ur_len;
			continue;
		}
		rc = isc_read(e, &c->ic_id, me, u[i].ur_obj_off,
			      u[i].ur_obj_off + u[i].ur_len, &buf, &data);
		if (rc != 0) {
			rc = err_set(rc, "object %s group %" PRIu64 " slot "
				     "%u: degraded read for function %s: %s",
				     eng_id_str(&c->ic_id), u[i].ur_group,
				     u[i].ur_slot, c->ic_desc->fd_name ?
				     c->ic_desc->fd_name : "?", err_msg());
			break;
		}
		st->st_degraded++;
		rc = isc_run_ext(r, u[i].ur_obj_off, data, u[i].ur_len);
		st->st_bytes += u[i].ur_len;
		free(buf);
	}
	free(zero);
	if (rc != 0) {
		isc_run_abort(r);
		return rc;
	}
	return isc_run_end(r, out);
}

/* A plain or composite object, or a granule "object" function: mapped
 * here through the object's READ. */
static int isc_obj_read_run(struct eng *e, const struct isc_call *c,
			    const struct meta_ent *me, uint64_t a, uint64_t b,
			    struct isc_out *out, struct isc_stats *st)
{
	uint32_t rec = isc_fn_record(c->ic_fn);
	bool whole = isc_fn_whole_object(c->ic_fn);
	uint64_t chunk;
	struct isc_run *r;
	int rc;

	if (whole && b - a > ISC_WHOLE_MAX)
		return err_set(-EFBIG, "object %s: %" PRIu64 " bytes: over %llu "
			       "MiB, the most a function of granule \"object\" "
			       "maps at once", eng_id_str(&c->ic_id), b - a,
			       ISC_WHOLE_MAX >> 20);
	chunk = whole ? (b - a ? b - a : 1) :
		(uint64_t)rec * (ISC_CHUNK / rec ? ISC_CHUNK / rec : 1);
	rc = isc_start(c, &r);
	if (rc != 0)
		return rc;
	st->st_runs++;
	isc_where_set(st->st_where, c->ic_self);
	for (uint64_t p = a; rc == 0 && p < b; p += chunk) {
		uint64_t q = b - p < chunk ? b : p + chunk;
		void *buf;
		const uint8_t *data;

		rc = isc_read(e, &c->ic_id, me, p, q, &buf, &data);
		if (rc == 0) {
			rc = isc_run_ext(r, p, data, q - p);
			st->st_bytes += q - p;
			free(buf);
		} else {
			rc = err_set(rc, "object %s: read of bytes %" PRIu64
				     "..%" PRIu64 " for function %s: %s",
				     eng_id_str(&c->ic_id), p, q,
				     c->ic_desc->fd_name ? c->ic_desc->fd_name :
				     "?", err_msg());
		}
	}
	if (rc != 0) {
		isc_run_abort(r);
		return rc;
	}
	return isc_run_end(r, out);
}

int isc_eng_obj(struct eng *e, const struct isc_call *c,
		const struct isc_remote_ops *rm, struct isc_out *out,
		struct isc_stats *st)
{
	struct isc_rjob *jobs = NULL;
	struct isc_plan *pl = NULL;
	struct meta_ent me;
	uint32_t rec = isc_fn_record(c->ic_fn);
	uint64_t a, b;
	int rc = isc_obj_ent(e, &c->ic_id, &me);

	if (rc != 0)
		return rc;
	if (c->ic_start_blk >= ST_BLOCK_NR_MAX ||
	    c->ic_nr_blks > ST_BLOCK_NR_MAX - c->ic_start_blk)
		return err_set(-EINVAL, "object %s: blocks %" PRIu64 " + %"
			       PRIu64 " past block 2^48", eng_id_str(&c->ic_id),
			       c->ic_start_blk, c->ic_nr_blks);
	a = c->ic_start_blk << me.me_block_shift;
	b = c->ic_nr_blks == 0 ? me.me_size_bytes :
	    (c->ic_start_blk + c->ic_nr_blks) << me.me_block_shift;
	b = b < me.me_size_bytes ? b : me.me_size_bytes;
	if (a % rec != 0)
		return err_set(-EINVAL, "object %s: start byte %" PRIu64 " is "
			       "not on a record boundary (record %u bytes)",
			       eng_id_str(&c->ic_id), a, rec);
	/* a trailing partial record is not mapped (docs/isc.md) */
	if (b > a)
		b = a + (b - a) / rec * rec;
	if (b <= a)
		return 0;
	eng_thread_enter();
	if (!stripe_layout(me.me_layout) || isc_fn_whole_object(c->ic_fn)) {
		rc = isc_obj_read_run(e, c, &me, a, b, out, st);
		goto out;
	}
	if ((1ull << me.me_unit_shift) % rec != 0) {
		rc = err_set(-ENOTSUP, "object %s: record size %u does not "
			     "divide its unit size %llu: records would be cut",
			     eng_id_str(&c->ic_id), rec,
			     1ull << me.me_unit_shift);
		goto out;
	}
	pl = calloc(1, sizeof *pl);
	jobs = calloc(ISC_SERVERS, sizeof *jobs);
	if (pl == NULL || jobs == NULL) {
		rc = err_set(-ENOMEM, "function shipping: plan");
		goto out;
	}
	pl->pl_e = e;
	pl->pl_rm = rm;
	rc = eng_unit_data_units(e, &c->ic_id, &me, a, b, isc_plan_unit, pl);
	if (rc != 0)
		goto out;
	/* other servers' shares first: they run while this one maps */
	for (uint32_t s = 0; s < ISC_SERVERS; s++) {
		struct isc_rjob *j = &jobs[s];

		if (pl->pl_srv[s].sh_nr == 0)
			continue;
		j->rj_e = e;
		j->rj_rm = rm;
		j->rj_c = c;
		j->rj_srv = s;
		j->rj_sh = &pl->pl_srv[s];
		isc_out_init(&j->rj_out, out->o_max);
		j->rj_bad = calloc(pl->pl_srv[s].sh_nr, 1);
		if (j->rj_bad == NULL ||
		    pthread_create(&j->rj_t, NULL, isc_rjob_main, j) != 0) {
			/* no thread: its units are mapped here */
			snprintf(j->rj_msg, sizeof j->rj_msg, "no thread");
			j->rj_rc = -EAGAIN;
			j->rj_lost = true;
			continue;
		}
		j->rj_started = true;
	}
	for (uint32_t d = 0; rc == 0 && d < LIM_DEV_MAX; d++) {
		struct isc_share *sh = &pl->pl_dev[d];
		struct tier_dev **dv;
		uint64_t *off;
		uint8_t *bad;

		if (sh->sh_nr == 0)
			continue;
		dv = malloc(sh->sh_nr * sizeof *dv);
		off = malloc(sh->sh_nr * sizeof *off);
		bad = calloc(sh->sh_nr, 1);
		if (dv == NULL || off == NULL || bad == NULL) {
			rc = err_set(-ENOMEM, "function shipping: share");
		} else {
			for (uint32_t i = 0; i < sh->sh_nr; i++) {
				dv[i] = eng_dev_get(e, d)->ed_dev;
				off[i] = sh->sh_u[i].ur_dev_off;
			}
			rc = isc_units_run(c, dv, off, sh->sh_u, sh->sh_nr,
					   out, bad, st);
			isc_where_set(st->st_where, rm != NULL ? c->ic_self :
				      d);
			for (uint32_t i = 0; rc == 0 && i < sh->sh_nr; i++)
				if (bad[i])
					rc = isc_share_add(&pl->pl_here,
							   &sh->sh_u[i]);
		}
		free(dv);
		free(off);
		free(bad);
	}
	for (uint32_t s = 0; s < ISC_SERVERS; s++) {
		struct isc_rjob *j = &jobs[s];
		struct isc_share *sh = &pl->pl_srv[s];

		if (sh->sh_nr == 0)
			continue;
		if (j->rj_started)
			pthread_join(j->rj_t, NULL);
		if (j->rj_rc == 0) {
			isc_stats_add(st, &j->rj_st);
			if (rc == 0)
				rc = isc_out_merge(out, j->rj_out.o_buf,
						   j->rj_out.o_len);
			for (uint32_t i = 0; rc == 0 && i < sh->sh_nr; i++)
				if (j->rj_bad[i])
					rc = isc_share_add(&pl->pl_here,
							   &sh->sh_u[i]);
		} else if (j->rj_lost) {
			LOG_WARNING("function shipping: object %s: %u units "
				    "of server %u mapped here from degraded "
				    "reads: %s", eng_id_str(&c->ic_id),
				    sh->sh_nr, s, j->rj_msg);
			for (uint32_t i = 0; rc == 0 && i < sh->sh_nr; i++)
				rc = isc_share_add(&pl->pl_here, &sh->sh_u[i]);
		} else if (rc == 0) {
			rc = err_set(j->rj_rc, "%s", j->rj_msg);
		}
		isc_out_fini(&j->rj_out);
		free(j->rj_bad);
	}
	if (rc == 0)
		rc = isc_here_run(e, c, &me, pl->pl_here.sh_u,
				  pl->pl_here.sh_nr, out, st);
out:
	eng_thread_leave();
	if (pl != NULL)
		isc_plan_fini(pl);
	free(jobs);
	return rc;
}

/* ------------------------------------------------------------- indices */

struct isc_isrc {
	struct eng *is_e;
	const struct isc_call *is_c;
	struct eng_req is_r;
	struct st_bufvec is_keys, is_vals;
	void *is_kb[ISC_IDX_PAGE], *is_vb[ISC_IDX_PAGE];
	size_t is_kl[ISC_IDX_PAGE], is_vl[ISC_IDX_PAGE];
	int32_t is_rcs[ISC_IDX_PAGE];
	uint32_t is_have;       /* slots holding malloc'd records */
	uint8_t is_start[ST_KEY_MAX];
	struct isc_stats *is_st;
};

static void isc_isrc_drop(struct isc_isrc *s)
{
	for (uint32_t i = 0; i < s->is_have; i++) {
		free(s->is_kb[i]);
		free(s->is_vb[i]);
	}
	s->is_have = 0;
}

static int isc_isrc_next(void *arg, const void *key, size_t klen, uint32_t n,
			 struct isc_rec *recs, uint32_t *got)
{
	struct isc_isrc *s = arg;
	const struct isc_call *c = s->is_c;
	struct eng_req *r = &s->is_r;
	uint32_t i;
	int rc;

	*got = 0;
	if (n == 0)
		return 0;
	n = n < ISC_IDX_PAGE ? n : ISC_IDX_PAGE;
	if (key != NULL && klen > ST_KEY_MAX)
		return err_set(-EINVAL, "next: key of %zu bytes (at most %u)",
			       klen, ST_KEY_MAX);
	/* the start key is copied: it may point into the page dropped */
	if (key == NULL) {
		key = c->ic_lo;
		klen = c->ic_lo_len;
		r->er_flags = 0;
	} else {
		r->er_flags = ST_IF_EXCLUDE_START_KEY;
		if (c->ic_lo != NULL &&
		    (memcmp(key, c->ic_lo, klen < c->ic_lo_len ? klen :
			    c->ic_lo_len) < 0 ||
		     (memcmp(key, c->ic_lo, klen < c->ic_lo_len ? klen :
			     c->ic_lo_len) == 0 && klen < c->ic_lo_len))) {
			key = c->ic_lo;
			klen = c->ic_lo_len;
			r->er_flags = 0;
		}
	}
	if (key != NULL)
		memcpy(s->is_start, key, klen);
	isc_isrc_drop(s);
	memset(s->is_kb, 0, sizeof s->is_kb);
	memset(s->is_vb, 0, sizeof s->is_vb);
	s->is_kb[0] = key != NULL ? s->is_start : NULL;
	s->is_kl[0] = key != NULL ? klen : 0;
	s->is_keys = (struct st_bufvec){n, s->is_kb, s->is_kl};
	s->is_vals = (struct st_bufvec){n, s->is_vb, s->is_vl};
	r->er_kind = ER_IDX_NEXT;
	r->er_type = ST_ET_IDX;
	r->er_id = c->ic_id;
	r->er_keys = &s->is_keys;
	r->er_vals = &s->is_vals;
	r->er_rcs = s->is_rcs;
	rc = eng_exec(s->is_e, r);
	if (rc != 0)
		return rc;
	for (i = 0; i < n && s->is_rcs[i] == 0; i++)
		;
	s->is_have = i;
	for (uint32_t j = 0; j < i; j++) {
		const uint8_t *k = s->is_kb[j];
		size_t kl = s->is_kl[j];

		if (c->ic_hi != NULL) {
			size_t m = kl < c->ic_hi_len ? kl : c->ic_hi_len;
			int cmp = memcmp(k, c->ic_hi, m);

			if (cmp > 0 || (cmp == 0 && kl >= c->ic_hi_len))
				break;
		}
		recs[j] = (struct isc_rec){k, (uint32_t)kl, 0, s->is_vb[j],
					   (uint32_t)s->is_vl[j]};
		s->is_st->st_bytes += kl + s->is_vl[j];
		(*got)++;
	}
	return 0;
}

int isc_eng_idx(struct eng *e, const struct isc_call *c, struct isc_out *out,
		struct isc_stats *st)
{
	struct isc_isrc *s = calloc(1, sizeof *s);
	struct isc_idx_src src;
	struct meta_ent me;
	struct isc_run *r;
	MDB_txn *txn;
	int rc;

	if (s == NULL)
		return err_set(-ENOMEM, "function shipping: index source");
	rc = meta_rtxn_once(eng_meta(e), &txn, "begin read");
	if (rc == 0) {
		rc = meta_ent_get(txn, eng_meta(e), &c->ic_id, &me);
		meta_txn_abort(txn);
		if (rc == -ENOENT || (rc == 0 && me.me_type != ST_ET_IDX))
			rc = err_set(-ENOENT, "index %s does not exist",
				     eng_id_str(&c->ic_id));
	}
	if (rc != 0) {
		free(s);
		return rc;
	}
	s->is_e = e;
	s->is_c = c;
	s->is_st = st;
	/* the NEXT checks the handle's incarnation against the record */
	s->is_r.er_ent = me;
	s->is_r.er_container = me.me_container;
	src.is_next = isc_isrc_next;
	src.is_arg = s;
	rc = isc_start(c, &r);
	if (rc == 0) {
		st->st_runs++;
		isc_where_set(st->st_where, c->ic_self);
		rc = isc_run_idx(r, &src);
		if (rc == 0)
			rc = isc_run_end(r, out);
		else
			isc_run_abort(r);
	}
	isc_isrc_drop(s);
	free(s);
	return rc;
}
