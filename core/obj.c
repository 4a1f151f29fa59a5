/*
 * obj.c — object blocks: extent maps, out-of-place writes, reads, ALLOC and
 * FREE.  See engine.h for the data path and meta.h for the map format.
 *
 * Invariants of the extent map of one object (table ext):
 *   - records never overlap in block space;
 *   - every record's space [mx_dev_off, + nr_blks << shift) is used in its
 *     device's allocator and belongs to that record alone;
 *   - a block without a record, or under an MX_UNWRITTEN record, reads as 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <urcu.h>

#include "addb/addb.h"
#include "core/engine.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/fdmi_log.h"
#include "core/log.h"

/** A cursor over a caller's buffer vector. */
struct bufcur {
	struct st_bufvec *bc_bv;
	uint32_t bc_i;
	size_t bc_off;
};

/* Next contiguous piece of at most max bytes; returns its length. */
static size_t bufcur_next(struct bufcur *c, size_t max, uint8_t **p)
{
	size_t len;

	while (c->bc_i < c->bc_bv->bv_nr &&
	       c->bc_off == c->bc_bv->bv_len[c->bc_i]) {
		c->bc_i++;
		c->bc_off = 0;
	}
	ASSERT(c->bc_i < c->bc_bv->bv_nr);
	len = c->bc_bv->bv_len[c->bc_i] - c->bc_off;
	if (len > max)
		len = max;
	*p = (uint8_t *)c->bc_bv->bv_buf[c->bc_i] + c->bc_off;
	c->bc_off += len;
	return len;
}


static int ext_list_add(struct ext_list *l, uint64_t blk,
			const struct meta_ext *x)
{
	if (l->xl_nr == l->xl_cap) {
		uint32_t cap = l->xl_cap ? l->xl_cap * 2 : 16;
		struct ext_rec *v = realloc(l->xl_v, cap * sizeof *v);

		if (v == NULL)
			return err_set(-ENOMEM, "extent list of %u", cap);
		l->xl_v = v;
		l->xl_cap = cap;
	}
	l->xl_v[l->xl_nr++] = (struct ext_rec){blk, *x};
	return 0;
}

/* Is key k a record of object obj? */
static bool ext_key_of(const MDB_val *k, const uint8_t obj[16])
{
	return k->mv_size == META_EXT_KEY_LEN && memcmp(k->mv_data, obj, 16) == 0;
}

/* Collect the records of obj overlapping [s, s + n). */
int ext_lookup(struct meta *m, MDB_txn *txn,
		      const struct st_id *obj, uint64_t s, uint64_t n,
		      struct ext_list *out)
{
	return ext_lookup_max(m, txn, obj, s, n, UINT32_MAX, out);
}

int ext_lookup_max(struct meta *m, MDB_txn *txn, const struct st_id *obj,
		   uint64_t s, uint64_t n, uint32_t max, struct ext_list *out)
{
	uint8_t kb[META_EXT_KEY_LEN];
	MDB_val k = meta_ext_key(kb, obj, s), v;
	MDB_cursor *cur;
	int rc;

	rc = mdb_cursor_open(txn, m->m_ext, &cur);
	if (rc != 0)
		return meta_err(rc, "open extent cursor");
	/* Start one record before the first key >= (obj, s): that record
	 * may begin before s and still overlap it. */
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == 0 && (!ext_key_of(&k, kb) || meta_ext_key_blk(&k) > s)) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
		if (rc == MDB_NOTFOUND)
			rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	} else if (rc == MDB_NOTFOUND) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	}
	for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct meta_ext x;
		uint64_t b;

		if (!ext_key_of(&k, kb)) {
			if (memcmp(k.mv_data, kb, 16) > 0)
				break;
			continue;
		}
		b = meta_ext_key_blk(&k);
		if (b >= s + n)
			break;
		memcpy(&x, v.mv_data, sizeof x);
		if (b + x.mx_nr_blks <= s)
			continue;
		if (out->xl_nr >= max)
			break;
		rc = ext_list_add(out, b, &x);
		if (rc != 0)
			break;
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		rc = 0;
	else if (rc > 0)
		rc = meta_err(rc, "walk extents");
	return rc;
}

int ext_put(struct meta *m, MDB_txn *txn, const struct st_id *obj,
		   uint64_t blk, const struct meta_ext *x)
{
	uint8_t kb[META_EXT_KEY_LEN];
	MDB_val k = meta_ext_key(kb, obj, blk);
	MDB_val v = {.mv_size = sizeof *x, .mv_data = (void *)x};
	int rc = meta_mput(m, txn, m->m_ext, &k, &v, 0);

	return rc == 0 ? 0 : meta_err(rc, "write extent");
}

static int ext_del(struct meta *m, MDB_txn *txn, const struct st_id *obj,
		   uint64_t blk)
{
	uint8_t kb[META_EXT_KEY_LEN];
	MDB_val k = meta_ext_key(kb, obj, blk);
	int rc = meta_mdel(m, txn, m->m_ext, &k, NULL);

	return rc == 0 ? 0 : meta_err(rc, "delete extent");
}

/* Unmap one record's overlap with [s, e): keep its outer parts, add the
 * unmapped space to freed. */
static int ext_cut(struct meta *m, MDB_txn *txn, const struct st_id *obj,
		   const struct ext_rec *r, uint64_t s, uint64_t e,
		   uint32_t shift, struct eng_spacevec *freed)
{
	uint64_t rs = r->xr_blk, re = rs + r->xr_ext.mx_nr_blks;
	uint64_t os = rs > s ? rs : s, oe = re < e ? re : e;
	struct meta_ext x = r->xr_ext;
	int rc;

	if (!(x.mx_flags & MX_LAYER))
		rc = eng_spacevec_add(freed, x.mx_dev,
				      x.mx_dev_off + ((os - rs) << shift),
				      (oe - os) << shift);
	else
		rc = 0;
	if (rc == 0 && re > e) {
		struct meta_ext right = x;

		right.mx_nr_blks = re - e;
		if (!(x.mx_flags & MX_LAYER))
			right.mx_dev_off += (e - rs) << shift;
		rc = ext_put(m, txn, obj, e, &right);
	}
	if (rc == 0 && rs < s) {
		x.mx_nr_blks = s - rs;
		rc = ext_put(m, txn, obj, rs, &x);
	} else if (rc == 0) {
		rc = ext_del(m, txn, obj, rs);
	}
	return rc;
}

/* Unmap [s, s + n) of obj; space goes to freed. */
int ext_punch(struct meta *m, MDB_txn *txn, const struct st_id *obj,
		     uint64_t s, uint64_t n, uint32_t shift,
		     struct eng_spacevec *freed)
{
	struct ext_list l = {0};
	int rc = ext_lookup(m, txn, obj, s, n, &l);

	for (uint32_t i = 0; rc == 0 && i < l.xl_nr; i++)
		rc = ext_cut(m, txn, obj, &l.xl_v[i], s, s + n, shift, freed);
	free(l.xl_v);
	return rc;
}

/* Total blocks of the request's extents. */
uint64_t req_blocks(const struct eng_req *r)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < r->er_ext->ev_nr; i++)
		n += r->er_ext->ev_nr_blks[i];
	return n;
}

static struct layout req_layout(const struct eng_req *r)
{
	return (struct layout){r->er_ent.me_layout, r->er_ent.me_tier,
			       r->er_ent.me_dev};
}

/* Allocate space for every extent, in extent order. */
static int obj_alloc_space(struct eng *e, struct eng_req *r)
{
	struct layout l = req_layout(r);
	uint32_t shift = r->er_ent.me_block_shift;
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < r->er_ext->ev_nr; i++) {
		struct layout_target t[1];
		uint32_t nt = 1;

		rc = layout_map(&l, r->er_ext->ev_start_blk[i],
				r->er_ext->ev_nr_blks[i], t, &nt);
		if (rc == 0 && eng_dev_get(e, t[0].lt_dev) == NULL)
			rc = err_set(-ST_ECORRUPT, "object %s: device %u "
				     "not in store", eng_id_str(&r->er_id),
				     t[0].lt_dev);
		if (rc == 0)
			rc = eng_space_take(e, t[0].lt_dev,
					    t[0].lt_nr_blks << shift,
					    1ull << shift, &r->er_ci.ci_alloc);
	}
	return rc;
}

/* Write the data into the allocated runs, in order. */
static int obj_write_data(struct eng *e, struct eng_req *r)
{
	struct bufcur bc = {r->er_data, 0, 0};
	struct eng_spacevec *sv = &r->er_ci.ci_alloc;
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < sv->sv_nr; i++) {
		struct eng_space *sp = &sv->sv_v[i];
		struct tier_dev *d = eng_dev_get(e, sp->sp_dev)->ed_dev;
		uint64_t done = 0;

		r->er_ci.ci_devmask[sp->sp_dev / 64] |= 1ull << (sp->sp_dev % 64);
		while (rc == 0 && done < sp->sp_len) {
			uint8_t *p;
			size_t len = bufcur_next(&bc, sp->sp_len - done, &p);

			rc = tier_dev_write(d, sp->sp_off + done, p, len);
			done += len;
		}
	}
	if (rc == 0 && FAULT_HIT("obj.write.after_data"))
		rc = err_set(-EIO, "object %s: fault point obj.write.after_data",
			     eng_id_str(&r->er_id));
	return rc;
}

/* Map the request's runs onto its extents (runs were taken in order). */
static int obj_map_runs(struct eng *e, MDB_txn *txn, struct eng_req *r,
			uint16_t flags)
{
	struct meta *m = eng_meta(e);
	uint32_t shift = r->er_ent.me_block_shift, k = 0;
	uint64_t used = 0; /* bytes of run k already mapped */
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < r->er_ext->ev_nr; i++) {
		uint64_t blk = r->er_ext->ev_start_blk[i];
		uint64_t left = r->er_ext->ev_nr_blks[i];

		rc = ext_punch(m, txn, &r->er_id, blk, left, shift,
			       &r->er_ci.ci_freed);
		while (rc == 0 && left > 0) {
			struct eng_space *sp = &r->er_ci.ci_alloc.sv_v[k];
			uint64_t n = (sp->sp_len - used) >> shift;
			struct meta_ext x = {.mx_dev_off = sp->sp_off + used,
					     .mx_dev = (uint16_t)sp->sp_dev,
					     .mx_flags = flags};

			if (n > left)
				n = left;
			x.mx_nr_blks = n;
			rc = ext_put(m, txn, &r->er_id, blk, &x);
			blk += n;
			left -= n;
			used += n << shift;
			if (used == sp->sp_len) {
				k++;
				used = 0;
			}
		}
	}
	return rc;
}

/* Highest block touched by the request, plus one. */
static uint64_t req_end_blk(const struct eng_req *r)
{
	uint64_t end = 0;

	for (uint32_t i = 0; i < r->er_ext->ev_nr; i++) {
		uint64_t x = r->er_ext->ev_start_blk[i] + r->er_ext->ev_nr_blks[i];

		end = x > end ? x : end;
	}
	return end;
}

/* Grow the object's size to cover the request and stamp mtime. */
int obj_size_update(struct eng *e, MDB_txn *txn, struct eng_req *r,
			   struct meta_ent *cur, bool grow)
{
	uint64_t end = req_end_blk(r);

	if (grow && end > cur->me_size_blocks)
		cur->me_size_blocks = end;
	if (!(cur->me_flags & ME_SIZE_BYTES_SET))
		cur->me_size_bytes = cur->me_size_blocks << cur->me_block_shift;
	cur->me_mtime_ns = eng_now_ns();
	r->er_ent = *cur;
	return meta_ent_put(txn, eng_meta(e), &r->er_id, cur);
}

/* Commit of WRITE, ALLOC and FREE. */
static int obj_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct eng_req *r = (struct eng_req *)ci;
	struct meta_ent cur, comp;
	int rc = ent_check(e, txn, r, &cur);

	if (rc == 0)
		rc = comp_move_check(e, r);
	if (rc != 0)
		return rc;
	ci->ci_hard = true; /* from here on, changes are made */
	if (stripe_layout(cur.me_layout)) {
		rc = eng_unit_apply(e, txn, r);
	} else if (r->er_kind == ER_OBJ_FREE) {
		for (uint32_t i = 0; rc == 0 && i < r->er_ext->ev_nr; i++)
			rc = ext_punch(eng_meta(e), txn, &r->er_id,
				       r->er_ext->ev_start_blk[i],
				       r->er_ext->ev_nr_blks[i],
				       cur.me_block_shift, &ci->ci_freed);
	} else {
		rc = obj_map_runs(e, txn, r, r->er_kind == ER_OBJ_ALLOC ?
				  MX_UNWRITTEN : 0);
	}
	if (rc == 0 && !r->er_comp_move)
		rc = obj_size_update(e, txn, r, &cur, r->er_kind != ER_OBJ_FREE);
	if (rc == 0 && r->er_comp)
		rc = comp_apply(e, txn, r, &comp);
	/* a layer's write is recorded as the composite's (its size and
	 * attributes), naming the layer and its tier */
	if (rc == 0 && r->er_comp) {
		comp.me_tier = cur.me_tier;
		cur = comp;
	}
	if (rc == 0)
		rc = eng_fdmi_req(e, txn, r, r->er_kind == ER_OBJ_FREE ?
				  FDMI_OBJ_FREE : r->er_kind == ER_OBJ_ALLOC ?
				  FDMI_OBJ_ALLOC : FDMI_OBJ_WRITE, &cur);
	if (rc == 0)
		ci->ci_hard = false;
	return rc;
}

/* WRITE and ALLOC on a zoned (SMR) device: space and data in one step,
 * appended at the write pointer, extent by extent (ALLOC appends zeros). */
static int obj_append_data(struct eng *e, struct eng_req *r, uint32_t dev)
{
	struct bufcur bc = {r->er_data, 0, 0};
	uint32_t shift = r->er_ent.me_block_shift;
	uint64_t chunk = LIM_IO_CHUNK > (1ull << shift) ? LIM_IO_CHUNK
							: 1ull << shift;
	uint8_t *buf;
	int rc = 0;

	if (posix_memalign((void **)&buf, 4096, chunk) != 0)
		return err_set(-ENOMEM, "append buffer");
	r->er_ci.ci_devmask[dev / 64] |= 1ull << (dev % 64);
	for (uint32_t i = 0; rc == 0 && i < r->er_ext->ev_nr; i++) {
		uint64_t left = r->er_ext->ev_nr_blks[i] << shift;

		while (rc == 0 && left > 0) {
			uint64_t n = left < chunk ? left : chunk;

			for (uint64_t got = 0; got < n;) {
				uint8_t *p;
				size_t len;

				if (r->er_kind != ER_OBJ_WRITE) {
					memset(buf, 0, n);
					break;
				}
				len = bufcur_next(&bc, n - got, &p);
				memcpy(buf + got, p, len);
				got += len;
			}
			rc = eng_space_append_reclaim(e, dev, buf, n, 1ull << shift,
					      &r->er_ci.ci_alloc);
			left -= n;
		}
	}
	free(buf);
	if (rc == 0 && FAULT_HIT("obj.write.after_data"))
		rc = err_set(-EIO, "object %s: fault point obj.write.after_data",
			     eng_id_str(&r->er_id));
	return rc;
}

/* WRITE, ALLOC, FREE: space and data now, maps at the group commit. */
static int obj_update(struct eng *e, struct eng_req *r)
{
	int rc = 0;

	r->er_ci.ci_apply = obj_apply;
	if (r->er_kind != ER_OBJ_FREE && eng_dev_zoned(e, r->er_ent.me_dev))
		rc = obj_append_data(e, r, r->er_ent.me_dev);
	else if (r->er_kind != ER_OBJ_FREE)
		rc = obj_alloc_space(e, r);
	if (rc == 0 && r->er_ci.ci_trace != 0 && r->er_kind != ER_OBJ_FREE)
		addb_rec(ADDB_R_OP_PLACED, r->er_ci.ci_trace, r->er_kind - 1,
			 r->er_ci.ci_alloc.sv_nr, r->er_ci.ci_alloc.sv_nr ?
			 r->er_ci.ci_alloc.sv_v[0].sp_dev : 0);
	if (rc == 0 && r->er_kind == ER_OBJ_WRITE &&
	    !eng_dev_zoned(e, r->er_ent.me_dev))
		rc = obj_write_data(e, r);
	if (rc == 0 && r->er_ci.ci_trace != 0 && r->er_kind == ER_OBJ_WRITE)
		addb_rec(ADDB_R_OP_STORED, r->er_ci.ci_trace, r->er_kind - 1,
			 req_blocks(r) << r->er_ent.me_block_shift, 0);
	if (rc != 0) {
		eng_space_release(e, &r->er_ci.ci_alloc);
		r->er_ci.ci_alloc.sv_nr = 0;
		return rc;
	}
	r->er_bytes = r->er_kind == ER_OBJ_WRITE ?
		      req_blocks(r) << r->er_ent.me_block_shift : 0;
	eng_commit_submit_here(e, &r->er_ci); /* r may be done when it returns */
	return ENG_PENDING;
}

/* Does b go on where a ends: the next blocks, written, on the same device
 * at the next bytes (extents of consecutive writes often do)? */
static bool ext_follows(const struct ext_rec *a, const struct ext_rec *b,
			uint32_t shift)
{
	return b->xr_blk == a->xr_blk + a->xr_ext.mx_nr_blks &&
	       b->xr_ext.mx_dev == a->xr_ext.mx_dev &&
	       b->xr_ext.mx_flags == a->xr_ext.mx_flags &&
	       b->xr_ext.mx_dev_off ==
		       a->xr_ext.mx_dev_off + (a->xr_ext.mx_nr_blks << shift);
}

/* Fill [s, s + n) of the caller's buffers from the map (zeros for holes).
 * Extents that follow each other on a device are read in one request. */
static int obj_read_range(struct eng *e, const struct ext_list *l,
			  uint64_t s, uint64_t n, uint32_t shift,
			  struct bufcur *bc)
{
	uint64_t pos = s, end = s + n;
	uint32_t i = 0;
	int rc = 0;

	while (rc == 0 && pos < end) {
		const struct ext_rec *x = i < l->xl_nr ? &l->xl_v[i] : NULL;
		uint64_t xs = x ? x->xr_blk : end, upto;
		bool data = x && xs <= pos && !(x->xr_ext.mx_flags & MX_UNWRITTEN);
		uint64_t off = 0;
		struct tier_dev *d = NULL;

		if (x && xs <= pos) {
			upto = xs + x->xr_ext.mx_nr_blks;
			off = x->xr_ext.mx_dev_off + ((pos - xs) << shift);
			d = eng_dev_get(e, x->xr_ext.mx_dev)->ed_dev;
			for (i++; i < l->xl_nr && upto < end &&
				  ext_follows(x, &l->xl_v[i], shift); i++) {
				x = &l->xl_v[i];
				upto += x->xr_ext.mx_nr_blks;
			}
		} else {
			upto = xs;
		}
		upto = upto < end ? upto : end;
		for (uint64_t left = (upto - pos) << shift; rc == 0 && left > 0;) {
			uint8_t *p;
			size_t len = bufcur_next(bc, left, &p);

			if (data)
				rc = tier_dev_read(d, off, p, len);
			else
				memset(p, 0, len);
			off += len;
			left -= len;
		}
		pos = upto;
	}
	return rc;
}

/* Check every record points at a device we have. */
static int ext_list_check(struct eng *e, const struct eng_req *r,
			  const struct ext_list *l)
{
	for (uint32_t i = 0; i < l->xl_nr; i++)
		if (eng_dev_get(e, l->xl_v[i].xr_ext.mx_dev) == NULL)
			return err_set(-ST_ECORRUPT, "object %s: block %" PRIu64
				       " on unknown device %u",
				       eng_id_str(&r->er_id), l->xl_v[i].xr_blk,
				       l->xl_v[i].xr_ext.mx_dev);
	return 0;
}

/* READ: under one read transaction and one RCU read section, so no space
 * it reads can be reused until it is done. */
static int obj_read(struct eng *e, struct eng_req *r)
{
	struct bufcur bc = {r->er_data, 0, 0};
	struct meta_ent cur;
	MDB_txn *txn;
	int rc;

	rcu_read_lock();
	rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);
	if (rc != 0) {
		rc = meta_err(rc, "begin read");
		goto out_unlock;
	}
	rc = ent_check(e, txn, r, &cur);
	for (uint32_t i = 0; rc == 0 && i < r->er_ext->ev_nr; i++) {
		struct ext_list l = {0};
		uint64_t s = r->er_ext->ev_start_blk[i];
		uint64_t n = r->er_ext->ev_nr_blks[i];

		rc = ext_lookup(eng_meta(e), txn, &r->er_id, s, n, &l);
		if (rc == 0)
			rc = ext_list_check(e, r, &l);
		if (rc == 0)
			rc = obj_read_range(e, &l, s, n, cur.me_block_shift, &bc);
		free(l.xl_v);
	}
	mdb_txn_abort(txn);
	r->er_bytes = req_blocks(r) << r->er_ent.me_block_shift;
out_unlock:
	rcu_read_unlock();
	return rc;
}

/* An object with a unit layout (layouts/stripe.c): reads finish there,
 * updates come back here for their commit. */
static int obj_stripe_exec(struct eng *e, struct eng_req *r)
{
	struct meta_ent cur;
	MDB_txn *txn;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin read");
	rc = ent_check(e, txn, r, &cur);
	mdb_txn_abort(txn);
	if (rc == 0)
		rc = eng_unit_exec(e, r, &cur);
	if (r->er_kind == ER_OBJ_READ || rc != 0) {
		eng_space_release(e, &r->er_ci.ci_alloc);
		r->er_ci.ci_alloc.sv_nr = 0;
		r->er_bytes = rc == 0 ? req_blocks(r) << cur.me_block_shift : 0;
		return rc;
	}
	r->er_ci.ci_apply = obj_apply;
	r->er_bytes = r->er_kind == ER_OBJ_WRITE ?
		      req_blocks(r) << cur.me_block_shift : 0;
	eng_commit_submit(e, &r->er_ci);
	return ENG_PENDING;
}

int obj_exec(struct eng *e, struct eng_req *r)
{
	if (r->er_ent.me_layout == ST_LAYOUT_COMPOSITE)
		return comp_exec(e, r);
	if (stripe_layout(r->er_ent.me_layout))
		return obj_stripe_exec(e, r);
	if (r->er_kind == ER_OBJ_READ)
		return obj_read(e, r);
	return obj_update(e, r);
}

int obj_delete_maps(struct eng *e, MDB_txn *txn, const struct st_id *id,
		    struct eng_spacevec *freed)
{
	struct meta_ent me;
	int rc = meta_ent_get(txn, eng_meta(e), id, &me);

	if (rc != 0)
		return rc;
	if (stripe_layout(me.me_layout))
		return eng_unit_delete_units(e, txn, id, me.me_layout,
					     freed);
	if (me.me_layout == ST_LAYOUT_COMPOSITE)
		return comp_delete(e, txn, id, freed);
	return ext_punch(eng_meta(e), txn, id, 0, ST_BLOCK_NR_MAX,
			 me.me_block_shift, freed);
}

/* Mark one record's space used in its device's allocator. */
static int rebuild_one(struct eng *e, const struct st_id *obj,
		       uint64_t blk, const struct meta_ext *x, uint32_t shift)
{
	struct eng_dev *d = eng_dev_get(e, x->mx_dev);
	uint64_t len = x->mx_nr_blks << shift;

	if (d == NULL || (x->mx_dev_off | len) % LIM_ALLOC_UNIT != 0 ||
	    x->mx_dev_off + len > tier_dev_size(d->ed_dev) ||
	    alloc_mark(&d->ed_alloc, x->mx_dev_off >> LIM_ALLOC_UNIT_SHIFT,
		       len >> LIM_ALLOC_UNIT_SHIFT) != 0)
		return err_set(-ST_ECORRUPT, "object %s block %" PRIu64
			       ": extent on device %u at %" PRIu64 " overlaps "
			       "another or leaves the device", eng_id_str(obj),
			       blk, x->mx_dev, x->mx_dev_off);
	return 0;
}

int obj_rebuild_alloc(struct eng *e, MDB_txn *txn)
{
	struct st_id last = {0, 0}, id;
	struct meta_ent me = {0};
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	rc = mdb_cursor_open(txn, eng_meta(e)->m_ext, &cur);
	if (rc != 0)
		return meta_err(rc, "open extent cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct meta_ext x;

		if (k.mv_size != META_EXT_KEY_LEN || v.mv_size != sizeof x) {
			rc = err_set(-ST_ECORRUPT, "extent record of %zu/%zu "
				     "bytes", k.mv_size, v.mv_size);
			break;
		}
		meta_id_dec(k.mv_data, &id);
		if (st_id_cmp(&id, &last) != 0) {
			rc = meta_ent_get(txn, eng_meta(e), &id, &me);
			if (rc != 0) {
				rc = err_set(-ST_ECORRUPT, "extents of missing "
					     "object %s", eng_id_str(&id));
				break;
			}
			last = id;
		}
		memcpy(&x, v.mv_data, sizeof x);
		if (x.mx_flags & MX_LAYER)
			continue; /* a composite's map: no space */
		rc = rebuild_one(e, &id, meta_ext_key_blk(&k), &x,
				 me.me_block_shift);
		if (rc != 0)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : (rc > 0 ? meta_err(rc, "rebuild") : rc);
}
