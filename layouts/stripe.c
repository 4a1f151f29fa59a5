/*
 * stripe.c — objects with unit layouts (pdclust, mirror): see stripe.h.
 *
 * The op context, caller buffers and extents, the entry points, the target
 * half (unit records and their commit) and layout attributes.  Group reads
 * and READ are in stripe_read.c, WRITE/ALLOC/FREE in stripe_write.c, the
 * device-wide walks in stripe_walk.c (stripe_internal.h: what they share).
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

/* ------------------------------------------------------------ context */

int stripe_sctx_init(struct sctx *sc, struct eng *e, struct eng_req *r,
		     const struct meta_ent *ent)
{
	const struct meta_ent *m = ent;
	int rc;

	memset(sc, 0, sizeof *sc);
	sc->sc_e = e;
	sc->sc_r = r;
	sc->sc_ent = *ent;
	sc->sc_mirror = m->me_layout == ST_LAYOUT_MIRROR;
	sc->sc_n = sc->sc_mirror ? 1 : m->me_n;
	sc->sc_k = sc->sc_mirror ? m->me_n - 1u : m->me_k;
	sc->sc_w = sc->sc_n + sc->sc_k;
	sc->sc_width = sc->sc_w + m->me_s;
	sc->sc_unit = 1ull << m->me_unit_shift;
	sc->sc_pool = eng_pool_get(e, m->me_pool);
	if (sc->sc_pool == NULL)
		return err_set(-ST_ECORRUPT, "object %s: pool %u not in the "
			       "store", eng_id_str(&r->er_id), m->me_pool);
	sc->sc_geom = (struct pd_geom){sc->sc_n, sc->sc_k, m->me_s,
				       sc->sc_pool->ep_nr, m->me_unit_shift};
	rc = pd_geom_check(&sc->sc_geom);
	if (rc != 0)
		return err_set(-ST_ECORRUPT, "object %s: stored layout "
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

void stripe_sctx_fini(struct sctx *sc)
{
	free(sc->sc_mem);
	free(sc->sc_bvpre);
}

/* The store device of every slot of group g. */
void stripe_group_place(const struct sctx *sc, struct sgroup *sg, uint64_t g)
{
	const struct st_id sid = st_id_of(&sc->sc_r->er_id);
	uint32_t pd[UMAX];

	sg->sg_g = g;
	pd_group_map_dom(&sc->sc_geom, sc->sc_pool->ep_nr_dom ?
			 sc->sc_pool->ep_dom : NULL, sc->sc_pool->ep_nr_dom,
			 &sid, g, pd);
	for (uint32_t i = 0; i < sc->sc_width; i++)
		sg->sg_devs[i] = sc->sc_pool->ep_devs[pd[i]];
}

/* The unit table's key of obj's unit addr into kb. */
static void unit_key(uint8_t kb[META_EXT_KEY_LEN], const struct st_id *obj,
		     uint64_t addr)
{
	meta_ext_key(kb, obj, addr); /* same shape: id, 64-bit BE */
}

/* Read the records of every slot of sg in txn. */
int stripe_group_load(struct sctx *sc, MDB_txn *txn, struct sgroup *sg)
{
	struct meta *m = eng_meta(sc->sc_e);

	sg->sg_has = 0;
	for (uint32_t j = 0; j < sc->sc_w; j++) {
		uint8_t kb[META_EXT_KEY_LEN];
		struct meta_rec v;
		int rc;

		unit_key(kb, &sc->sc_r->er_id, sg->sg_g * sc->sc_w + j);
		rc = meta_get(txn, m, META_T_UNIT, kb, sizeof kb, &v,
			      "read unit record");
		if (rc == -ENOENT)
			continue;
		if (rc != 0)
			return rc;
		if (v.mc_vlen != sizeof(struct meta_unit))
			return err_set(-ST_ECORRUPT, "object %s group %" PRIu64
				       " slot %u: unit record of %zu bytes",
				       stripe_sc_id(sc), sg->sg_g, j,
				       v.mc_vlen);
		memcpy(&sg->sg_rec[j], v.mc_val, sizeof sg->sg_rec[j]);
		if (sg->sg_rec[j].mu_len != sc->sc_unit ||
		    eng_dev_get(sc->sc_e, sg->sg_rec[j].mu_dev) == NULL)
			return err_set(-ST_ECORRUPT, "object %s group %" PRIu64
				       " slot %u: unit record names device %u, "
				       "%u bytes", stripe_sc_id(sc), sg->sg_g,
				       j, sg->sg_rec[j].mu_dev,
				       sg->sg_rec[j].mu_len);
		sg->sg_has |= 1u << j;
	}
	return 0;
}

/* --------------------------------------------------- caller buffers */

/* Prefix sums of the caller's buffer lengths (random access by offset). */
int stripe_bv_prefix(struct sctx *sc)
{
	struct st_bufvec *bv = sc->sc_r->er_data;

	sc->sc_bvpre = malloc((bv->bv_nr + 1) * sizeof *sc->sc_bvpre);
	if (sc->sc_bvpre == NULL)
		return err_set(-ENOMEM, "buffer index");
	sc->sc_bvpre[0] = 0;
	for (uint32_t i = 0; i < bv->bv_nr; i++)
		sc->sc_bvpre[i + 1] = sc->sc_bvpre[i] + bv->bv_len[i];
	return 0;
}

/* Copy len bytes between the caller's buffers at flat offset off and p. */
void stripe_bv_copy(struct sctx *sc, uint64_t off, uint8_t *p, uint64_t len,
		    bool to_caller)
{
	struct st_bufvec *bv = sc->sc_r->er_data;
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

static int brange_cmp(const void *a, const void *b)
{
	const struct brange *x = a, *y = b;

	return x->br_start < y->br_start ? -1 : x->br_start > y->br_start;
}

/* The request's extents in bytes, sorted by start. */
int stripe_sc_ranges(struct sctx *sc, struct brange **out)
{
	const struct st_extvec *ev = sc->sc_r->er_ext;
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

/* ------------------------------------------------------------- entry */

int stripe_exec(struct eng *e, struct eng_req *r, const struct meta_ent *ent)
{
	struct sctx sc;
	int rc;

	rc = stripe_sctx_init(&sc, e, r, ent);
	if (rc == 0)
		rc = r->er_kind == ER_OBJ_READ ? stripe_read(&sc)
					       : stripe_update(&sc);
	stripe_sctx_fini(&sc);
	return rc;
}

int stripe_req_groups(struct eng *e, struct eng_req *r, uint64_t **groups,
		      uint32_t *ng)
{
	struct meta_ent cur;
	struct brange *br = NULL;
	struct sctx sc;
	MDB_txn *txn;
	int rc = meta_rtxn_begin(eng_meta(e), &txn, "begin read");

	*groups = NULL;
	*ng = 0;
	if (rc != 0)
		return rc;
	rc = ent_check(e, txn, r, &cur);
	meta_rtxn_put(eng_meta(e), txn);
	if (rc != 0 || !stripe_layout(cur.me_layout) ||
	    r->er_kind == ER_OBJ_READ)
		return rc;
	rc = stripe_sctx_init(&sc, e, r, &cur);
	if (rc == 0)
		rc = stripe_sc_ranges(&sc, &br);
	if (rc == 0)
		rc = stripe_ranges_groups(&sc, br, r->er_ext->ev_nr, groups,
					  ng);
	if (rc == 0) {
		free(r->er_locks);
		rc = stripe_lock_slots(r, *groups, *ng);
	}
	if (rc != 0) {
		free(*groups);
		*groups = NULL;
		*ng = 0;
	}
	free(br);
	stripe_sctx_fini(&sc);
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
			    st_id_cmp(&reqs[j]->er_id, &r->er_id) != 0)
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
		const struct st_id *obj = u->uu_obj.si_hi || u->uu_obj.si_lo ?
					      &u->uu_obj : &r->er_id;
		struct meta_rec v;
		struct meta_unit old;
		bool has;

		unit_key(kb, obj, u->uu_addr);
		rc = meta_get(txn, m, META_T_UNIT, kb, sizeof kb, &v,
			      "read unit record");
		if (rc != 0 && rc != -ENOENT)
			break;
		has = rc == 0 && v.mc_vlen == sizeof old;
		if (has)
			memcpy(&old, v.mc_val, sizeof old);
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
			if (has)
				rc = meta_del(txn, m, META_T_UNIT, kb,
					      sizeof kb, "delete unit record");
			continue;
		}
		rc = meta_put(txn, m, META_T_UNIT, kb, sizeof kb, &u->uu_new,
			      sizeof u->uu_new, "write unit record");
	}
	return rc;
}

/* stripe_delete_units(): one unit record of the object, deleted by the
 * scan once its space is in the list. */
struct units_del {
	const struct st_id *ud_obj;
	struct eng_spacevec *ud_freed;
};

static int unit_del_one(void *arg, const struct meta_rec *r)
{
	struct units_del *ud = arg;
	struct meta_unit u;
	int rc;

	if (r->mc_klen != META_EXT_KEY_LEN)
		return META_SCAN_STOP;
	if (r->mc_vlen != sizeof u)
		return err_set(-ST_ECORRUPT, "object %s: unit record of %zu "
			       "bytes", eng_id_str(ud->ud_obj), r->mc_vlen);
	memcpy(&u, r->mc_val, sizeof u);
	rc = unit_space_free(ud->ud_freed, &u);
	return rc != 0 ? rc : META_SCAN_DEL;
}

int stripe_delete_units(struct eng *e, MDB_txn *txn,
			const struct st_id *obj, struct eng_spacevec *freed)
{
	uint8_t kb[META_EXT_KEY_LEN];
	struct units_del ud = {obj, freed};

	unit_key(kb, obj, 0);
	return meta_scan(txn, eng_meta(e), &(struct meta_scan){
		.ms_table = META_T_UNIT, .ms_from = kb, .ms_flen = sizeof kb,
		.ms_prefix = kb, .ms_plen = 16, .ms_write = true,
		.ms_fn = unit_del_one, .ms_arg = &ud,
		.ms_what = "delete unit record"});
}

int stripe_groups_drop(struct eng *e, MDB_txn *txn, const struct st_id *obj,
		       uint64_t g, uint64_t nr, uint32_t w,
		       struct eng_spacevec *freed)
{
	struct meta *m = eng_meta(e);
	int rc = 0;

	for (uint64_t a = g * w; rc == 0 && a < (g + nr) * w; a++) {
		uint8_t kb[META_EXT_KEY_LEN];
		struct meta_rec v;
		struct meta_unit u;

		unit_key(kb, obj, a);
		rc = meta_get(txn, m, META_T_UNIT, kb, sizeof kb, &v,
			      "read unit record");
		if (rc == -ENOENT) {
			rc = 0;
			continue;
		}
		if (rc != 0)
			return rc;
		if (v.mc_vlen != sizeof u)
			return err_set(-ST_ECORRUPT, "object %s: unit record "
				       "of %zu bytes", eng_id_str(obj), v.mc_vlen);
		memcpy(&u, v.mc_val, sizeof u);
		rc = unit_space_free(freed, &u);
		if (rc == 0)
			rc = meta_del(txn, m, META_T_UNIT, kb, sizeof kb,
				      "delete unit record");
	}
	return rc;
}

/* stripe_rebuild_alloc(): mark one unit record's space as taken. */
static int rebuild_one(void *arg, const struct meta_rec *r)
{
	struct eng *e = arg;
	struct meta_unit u;
	struct eng_dev *d;
	struct st_id id;

	if (r->mc_klen != META_EXT_KEY_LEN || r->mc_vlen != sizeof u)
		return err_set(-ST_ECORRUPT, "unit record of %zu/%zu bytes",
			       r->mc_klen, r->mc_vlen);
	memcpy(&u, r->mc_val, sizeof u);
	if (u.mu_flags & MU_LOST)
		return META_SCAN_NEXT;
	d = eng_dev_get(e, u.mu_dev);
	if (d == NULL || (u.mu_dev_off | u.mu_len) % LIM_ALLOC_UNIT ||
	    u.mu_dev_off + u.mu_len > tier_dev_size(d->ed_dev) ||
	    alloc_mark(&d->ed_alloc, u.mu_dev_off >> LIM_ALLOC_UNIT_SHIFT,
		       u.mu_len >> LIM_ALLOC_UNIT_SHIFT) != 0) {
		meta_id_dec(r->mc_key, &id);
		return err_set(-ST_ECORRUPT, "object %s unit %" PRIu64
			       ": on device %u at %" PRIu64 " overlaps "
			       "another or leaves the device",
			       eng_id_str(&id), meta_key_blk(r->mc_key),
			       u.mu_dev, u.mu_dev_off);
	}
	return META_SCAN_NEXT;
}

/* txn is the read transaction of the store's load. */
int stripe_rebuild_alloc(struct eng *e, MDB_txn *txn)
{
	return meta_scan(txn, eng_meta(e), &(struct meta_scan){
		.ms_table = META_T_UNIT, .ms_fn = rebuild_one, .ms_arg = e,
		.ms_what = "rebuild"});
}

/* ------------------------------------------------------ attributes */

int stripe_attr_check(struct eng *e, const struct st_id *id,
		      struct meta_ent *me)
{
	bool mirror = me->me_layout == ST_LAYOUT_MIRROR;
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

/* ------------------------------------------- the engine's table of it */

const struct eng_layout_ops stripe_layout_ops = {
	.elo_name = "pdclust, mirror",
	.elo_exec = stripe_exec,
	.elo_reqs_locks = stripe_reqs_locks,
	.elo_apply = stripe_apply,
	.elo_delete_units = stripe_delete_units,
	.elo_groups_drop = stripe_groups_drop,
	.elo_rebuild_alloc = stripe_rebuild_alloc,
	.elo_attr_check = stripe_attr_check,
	.elo_repair = stripe_repair,
	.elo_rebalance = stripe_rebalance,
	.elo_scrub = stripe_scrub,
	.elo_scrub_obj = stripe_scrub_obj,
	.elo_data_units = stripe_data_units,
	.elo_codec_create = ec_codec_create,
	.elo_codec_destroy = ec_codec_destroy,
};
