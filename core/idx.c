/*
 * idx.c — index records in one ordered LMDB table keyed by (index id, key).
 *
 * PUT and DEL are applied at the group commit, all records of one op in the
 * same transaction (so an op is all-or-nothing across crashes); GET and NEXT
 * read under a read transaction and copy out.  NEXT is a cursor walk over
 * the index's key range.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/errors.h"
#include "core/fdmi_log.h"
#include "core/idx.h"
#include "core/log.h"

/* Put one record; returns its per-record rc, or sets *hard on LMDB errors. */
static int32_t idx_put_one(struct meta *m, MDB_txn *txn, struct eng_req *r,
			   uint32_t i, int64_t *added, int *hard)
{
	uint8_t kb[16 + ST_KEY_MAX];
	MDB_val k = meta_idx_key(kb, &r->er_id, r->er_keys->bv_buf[i],
				 r->er_keys->bv_len[i]);
	MDB_val v = {.mv_size = r->er_vals->bv_len[i],
		     .mv_data = r->er_vals->bv_buf[i]};
	int rc = meta_mput(m, txn, m->m_idx, &k, &v, MDB_NOOVERWRITE);

	if (rc == 0) {
		(*added)++;
		return 0;
	}
	if (rc == MDB_KEYEXIST && !(r->er_flags & ST_IF_OVERWRITE))
		return -EEXIST;
	if (rc == MDB_KEYEXIST) {
		/* MDB_NOOVERWRITE pointed v at the old value: point it back. */
		v = (MDB_val){.mv_size = r->er_vals->bv_len[i],
			      .mv_data = r->er_vals->bv_buf[i]};
		rc = meta_mput(m, txn, m->m_idx, &k, &v, 0);
	}
	if (rc != 0)
		*hard = meta_err(rc, "index put");
	return 0;
}

/* Delete one record; -ENOENT when absent. */
static int32_t idx_del_one(struct meta *m, MDB_txn *txn, struct eng_req *r,
			   uint32_t i, int64_t *added, int *hard)
{
	uint8_t kb[16 + ST_KEY_MAX];
	MDB_val k = meta_idx_key(kb, &r->er_id, r->er_keys->bv_buf[i],
				 r->er_keys->bv_len[i]);
	int rc = meta_mdel(m, txn, m->m_idx, &k, NULL);

	if (rc == 0) {
		(*added)--;
		return 0;
	}
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	*hard = meta_err(rc, "index delete");
	return 0;
}

/* Commit of PUT and DEL: every record in this transaction. */
static int idx_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct eng_req *r = (struct eng_req *)ci;
	struct meta *m = eng_meta(e);
	struct meta_ent cur;
	int64_t added = 0;
	int hard = 0, rc = ent_check(e, txn, r, &cur);

	if (rc != 0)
		return rc;
	for (uint32_t i = 0; hard == 0 && i < r->er_keys->bv_nr; i++) {
		int g = r->er_guard != NULL ? r->er_guard(e, txn, r, i) : 1;

		if (g < 0) {
			hard = g;
			break;
		}
		if (g == 0) {
			r->er_rcs[i] = 0;
			continue;
		}
		r->er_rcs[i] = r->er_kind == ER_IDX_PUT ?
			       idx_put_one(m, txn, r, i, &added, &hard) :
			       idx_del_one(m, txn, r, i, &added, &hard);
		if (hard == 0 && r->er_rcs[i] == 0 && !r->er_no_fdmi &&
		    eng_fdmi_on(e)) {
			struct fdmi_rec fr = {0};

			fr.fr_op = r->er_kind == ER_IDX_PUT ? FDMI_IDX_PUT
							    : FDMI_IDX_DEL;
			fr.fr_type = ST_ET_IDX;
			fr.fr_id = r->er_id;
			fr.fr_container = cur.me_container;
			fr.fr_size = cur.me_nr_records + (uint64_t)added;
			fr.fr_key = r->er_keys->bv_buf[i];
			fr.fr_klen = (uint32_t)r->er_keys->bv_len[i];
			hard = eng_fdmi_emit(e, txn, &fr, NULL);
		}
	}
	if (hard == 0 && added != 0) {
		cur.me_nr_records += (uint64_t)added;
		cur.me_mtime_ns = eng_now_ns();
		hard = meta_ent_put(txn, m, &r->er_id, &cur);
	}
	ci->ci_hard = hard != 0;
	r->er_ent = cur;
	r->er_bytes = r->er_keys->bv_nr;
	return hard;
}

/* Copy an LMDB value out to the caller's slot i of bv. */
static int32_t idx_copy_out(struct st_bufvec *bv, uint32_t i,
			    const MDB_val *v)
{
	if (bv->bv_buf[i] == NULL) {
		bv->bv_buf[i] = malloc(v->mv_size ? v->mv_size : 1);
		if (bv->bv_buf[i] == NULL)
			return -ENOMEM;
	} else if (bv->bv_len[i] < v->mv_size) {
		bv->bv_len[i] = v->mv_size;
		return -ENOBUFS;
	}
	memcpy(bv->bv_buf[i], v->mv_data, v->mv_size);
	bv->bv_len[i] = v->mv_size;
	return 0;
}

static int idx_get(struct eng *e, MDB_txn *txn, struct eng_req *r)
{
	for (uint32_t i = 0; i < r->er_keys->bv_nr; i++) {
		uint8_t kb[16 + ST_KEY_MAX];
		MDB_val k = meta_idx_key(kb, &r->er_id, r->er_keys->bv_buf[i],
					 r->er_keys->bv_len[i]), v;
		int rc = mdb_get(txn, eng_meta(e)->m_idx, &k, &v);

		if (rc == 0)
			r->er_rcs[i] = idx_copy_out(r->er_vals, i, &v);
		else if (rc == MDB_NOTFOUND)
			r->er_rcs[i] = -ENOENT;
		else
			return meta_err(rc, "index get");
	}
	r->er_bytes = r->er_keys->bv_nr;
	return 0;
}

/* Position cur at the first record of the walk; MDB rc. */
static int idx_next_start(struct eng_req *r, MDB_cursor *cur, uint8_t *kb,
			  MDB_val *k, MDB_val *v)
{
	const void *start = r->er_keys->bv_buf[0];
	size_t slen = start != NULL ? r->er_keys->bv_len[0] : 0;
	int rc;

	*k = meta_idx_key(kb, &r->er_id, start, slen);
	rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
	if (rc == 0 && start != NULL && (r->er_flags & ST_IF_EXCLUDE_START_KEY) &&
	    k->mv_size == 16 + slen && memcmp(k->mv_data, kb, 16 + slen) == 0)
		rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
	return rc;
}

/* Hand one found record to slot i (key and value malloc()ed). */
static int idx_next_fill(struct eng_req *r, uint32_t i, const MDB_val *k,
			 const MDB_val *v)
{
	MDB_val uk = {.mv_size = k->mv_size - 16,
		      .mv_data = (uint8_t *)k->mv_data + 16};

	r->er_keys->bv_buf[i] = NULL;
	r->er_vals->bv_buf[i] = NULL;
	if (idx_copy_out(r->er_keys, i, &uk) != 0 ||
	    idx_copy_out(r->er_vals, i, v) != 0)
		return err_set(-ENOMEM, "index %s: next: out of memory",
			       eng_id_str(&r->er_id));
	return 0;
}

/*
 * Copy n bytes, small sizes without a call: NEXT copies two short fields
 * per record (a 16-byte key and a 64-byte value in the benchmark), where
 * the call into memcpy() cost a third of the copy.  Overlapping fixed-size
 * moves cover 8..64 bytes; other sizes go to memcpy().
 */
static inline void idx_copy(uint8_t *d, const uint8_t *s, size_t n)
{
	if (n >= 8 && n <= 16) {
		memcpy(d, s, 8);
		memcpy(d + n - 8, s + n - 8, 8);
	} else if (n > 16 && n <= 32) {
		memcpy(d, s, 16);
		memcpy(d + n - 16, s + n - 16, 16);
	} else if (n > 32 && n <= 64) {
		memcpy(d, s, 32);
		memcpy(d + n - 32, s + n - 32, 32);
	} else {
		memcpy(d, s, n);
	}
}

/* Copy one found record (key of klen bytes, value of vlen) into a caller's
 * slot whose key buffer has room for kroom bytes and value buffer for
 * *vlen_io: its rc (0, -EMSGSIZE, -ENOBUFS); both lengths are set to the
 * record's either way.  The one rule of every NEXT into caller buffers. */
static inline int32_t idx_slot_fill(uint8_t *kb, size_t *klen_io,
				    size_t kroom, uint8_t *vb,
				    size_t *vlen_io, const void *key,
				    size_t klen, const void *val, size_t vlen)
{
	size_t vroom = *vlen_io;

	*klen_io = klen;
	*vlen_io = vlen;
	if (klen > kroom)
		return -EMSGSIZE;
	idx_copy(kb, key, klen);
	if (vlen > vroom)
		return -ENOBUFS;
	idx_copy(vb, val, vlen);
	return 0;
}

int32_t eng_idx_rec_into(struct st_bufvec *keys,
			 struct st_bufvec *vals, uint32_t i,
			 const void *key, size_t klen, const void *val,
			 size_t vlen)
{
	return idx_slot_fill(keys->bv_buf[i], &keys->bv_len[i],
			     i == 0 ? ST_KEY_MAX : keys->bv_len[i],
			     vals->bv_buf[i], &vals->bv_len[i], key, klen, val,
			     vlen);
}

void eng_idx_next_tail(struct eng_req *r, uint32_t from)
{
	bool mine = !(r->er_flags & ST_IF_CALLER_BUFS);

	for (uint32_t i = from; i < r->er_keys->bv_nr; i++) {
		if (mine)
			r->er_keys->bv_buf[i] = r->er_vals->bv_buf[i] = NULL;
		r->er_keys->bv_len[i] = r->er_vals->bv_len[i] = 0;
		r->er_rcs[i] = -ENOENT;
	}
}

/* Is k a record of the index whose 16-byte prefix is p[0..1]? */
static inline bool idx_in(const MDB_val *k, const uint64_t p[2])
{
	uint64_t a, b;

	if (k->mv_size < 16)
		return false;
	memcpy(&a, k->mv_data, 8);
	memcpy(&b, (const uint8_t *)k->mv_data + 8, 8);
	return a == p[0] && b == p[1];
}

/*
 * The LMDB page that holds a leaf key: pages are IDX_PAGE-aligned slices
 * of the map (LMDB's page size is the OS page size unless the file was
 * made elsewhere; a larger page only makes the prefetch below partial).
 */
#define IDX_PAGE 4096u

static inline const uint8_t *idx_page_of(const void *key)
{
	return (const uint8_t *)((uintptr_t)key & ~(uintptr_t)(IDX_PAGE - 1));
}

/*
 * Ask for every cache line of the leaf page holding key.  A walk reads
 * each record's node at a place in its page set by insertion order, not
 * key order, so on a cold page the cursor's steps and our copies take
 * one dependent cache miss after another; asking for the whole page when
 * the walk enters it lets those misses overlap.  A prefetch never faults
 * and changes nothing but timing.
 */
static inline void idx_page_prefetch(const void *key)
{
	const uint8_t *pg = idx_page_of(key);

	for (uint32_t off = 0; off < IDX_PAGE; off += 64)
		__builtin_prefetch(pg + off, 0, 3);
}

/* idx_slot_fill() of the record at the cursor (k holds the index's
 * 16-byte prefix before the user key). */
static inline int32_t idx_slot_fill_kv(uint8_t *kb, size_t *klen,
				       size_t kroom, uint8_t *vb,
				       size_t *vlen, const MDB_val *k,
				       const MDB_val *v)
{
	return idx_slot_fill(kb, klen, kroom, vb, vlen,
			     (const uint8_t *)k->mv_data + 16,
			     k->mv_size - 16, v->mv_data, v->mv_size);
}

/*
 * The walk into the caller's buffers (ST_IF_CALLER_BUFS): records
 * copied straight from the cursor, no call per record but LMDB's.  The
 * index prefix, the status and the vectors are held in locals (not read
 * through pointers again after each cursor step), and slot 0 (room
 * ST_KEY_MAX) is filled before the loop, so the loop body has one
 * room rule: what callgrind showed per record beyond raw LMDB's walk.
 */
static uint32_t idx_next_into(struct eng_req *r, MDB_cursor *cur,
			      const uint64_t p[2], MDB_val *k, MDB_val *v,
			      int *rcp)
{
	uint8_t **kbuf = (uint8_t **)r->er_keys->bv_buf;
	uint8_t **vbuf = (uint8_t **)r->er_vals->bv_buf;
	size_t *klen = r->er_keys->bv_len, *vlen = r->er_vals->bv_len;
	const uint64_t p0 = p[0], p1 = p[1];
	uint32_t nr = r->er_keys->bv_nr, i;
	int32_t *rcs = r->er_rcs;
	int rc = *rcp;

	if (rc != 0 || !idx_in(k, (const uint64_t[2]){p0, p1}))
		return 0;
	rcs[0] = idx_slot_fill_kv(kbuf[0], &klen[0], ST_KEY_MAX, vbuf[0],
				  &vlen[0], k, v);
	if (nr > 1) /* a walk of one record reads no further */
		idx_page_prefetch(k->mv_data);
	for (i = 1; i < nr; i++) {
		const uint8_t *page = idx_page_of(k->mv_data);

		rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
		if (rc != 0 || !idx_in(k, (const uint64_t[2]){p0, p1}))
			break;
		if (idx_page_of(k->mv_data) != page)
			idx_page_prefetch(k->mv_data);
		rcs[i] = idx_slot_fill_kv(kbuf[i], &klen[i], klen[i], vbuf[i],
					  &vlen[i], k, v);
	}
	*rcp = rc;
	return i;
}

static int idx_next(struct eng *e, MDB_txn *txn, struct eng_req *r)
{
	struct meta *m = eng_meta(e);
	uint8_t kb[16 + ST_KEY_MAX];
	uint64_t p[2];
	MDB_cursor *cur;
	MDB_val k, v;
	uint32_t i = 0;
	int rc = meta_rcursor_get(m, txn, m->m_idx, &cur);

	if (rc != 0)
		return rc;
	rc = idx_next_start(r, cur, kb, &k, &v);
	memcpy(p, kb, 16);
	if (r->er_flags & ST_IF_CALLER_BUFS) {
		i = idx_next_into(r, cur, p, &k, &v, &rc);
	} else {
		for (; rc == 0 && i < r->er_keys->bv_nr && idx_in(&k, p);
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			r->er_rcs[i] = idx_next_fill(r, i, &k, &v);
			if (r->er_rcs[i] == -ENOMEM)
				break;
			i++;
		}
	}
	meta_rcursor_put(m, cur);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return meta_err(rc, "index next");
	r->er_bytes = i;
	eng_idx_next_tail(r, i);
	return 0;
}

/*
 * The last index this thread found valid (ent_check) and the snapshot it
 * looked at.  A snapshot with the same LMDB transaction id is the same
 * committed state, so the check holds in it without a second lookup:
 * repeated reads of one index between commits skip the ent table.
 */
struct idx_valid {
	uint64_t iv_eng;     /**< eng_serial() */
	size_t iv_txnid;     /**< mdb_txn_id() of the snapshot */
	struct st_id iv_id;
	uint32_t iv_type;
	uint64_t iv_ctime;   /**< the incarnation that was checked */
};

static __thread struct idx_valid t_valid;

/* ent_check() of r's index in txn, remembered per snapshot. */
static int idx_check(struct eng *e, MDB_txn *txn, struct eng_req *r)
{
	struct idx_valid *v = &t_valid;
	size_t tid = mdb_txn_id(txn);
	struct meta_ent cur;
	int rc;

	if (v->iv_eng == eng_serial(e) && v->iv_txnid == tid &&
	    v->iv_type == r->er_type && v->iv_ctime == r->er_ent.me_ctime_ns &&
	    v->iv_id.si_hi == r->er_id.si_hi && v->iv_id.si_lo == r->er_id.si_lo)
		return 0;
	rc = ent_check(e, txn, r, &cur);
	if (rc == 0)
		*v = (struct idx_valid){eng_serial(e), tid, r->er_id, r->er_type,
					r->er_ent.me_ctime_ns};
	return rc;
}

/* GET and NEXT under one (reused) read transaction. */
static int idx_read(struct eng *e, struct eng_req *r)
{
	MDB_txn *txn;
	int rc = meta_rtxn_get(eng_meta(e), &txn);

	if (rc != 0)
		return rc;
	rc = idx_check(e, txn, r);
	if (rc == 0)
		rc = r->er_kind == ER_IDX_GET ? idx_get(e, txn, r)
					      : idx_next(e, txn, r);
	meta_rtxn_put(eng_meta(e), txn);
	return rc;
}

int idx_exec(struct eng *e, struct eng_req *r)
{
	if (r->er_kind == ER_IDX_GET || r->er_kind == ER_IDX_NEXT)
		return idx_read(e, r);
	r->er_ci.ci_apply = idx_apply;
	eng_commit_submit_here(e, &r->er_ci); /* r may be done on return */
	return ENG_PENDING;
}

int idx_inc_is(struct eng *e, MDB_txn *txn, const struct st_id *id,
	       uint64_t ctime)
{
	struct meta_ent cur;
	int rc = meta_ent_get(txn, eng_meta(e), id, &cur);

	if (rc == -ENOENT)
		return 0;
	if (rc != 0)
		return rc;
	return cur.me_type == ST_ET_IDX && cur.me_ctime_ns == ctime;
}

int idx_rec_set(struct eng *e, MDB_txn *txn, const struct st_id *id,
		uint64_t ctime, const void *key, size_t klen, const void *val,
		size_t vlen, bool del)
{
	struct meta *m = eng_meta(e);
	uint8_t kb[16 + ST_KEY_MAX];
	MDB_val k = meta_idx_key(kb, id, key, klen), v;
	struct meta_ent cur;
	int64_t added = 0;
	int rc = mdb_get(txn, m->m_idx, &k, &v), got;

	if (rc != 0 && rc != MDB_NOTFOUND)
		return meta_err(rc, "index record");
	/* so already (the usual case): no more to read */
	if (del ? rc == MDB_NOTFOUND :
	    rc == 0 && v.mv_size == vlen &&
	    (vlen == 0 || memcmp(v.mv_data, val, vlen) == 0))
		return 0;
	got = rc;
	rc = idx_inc_is(e, txn, id, ctime);
	if (rc <= 0)
		return rc; /* 0: dropped, or made again, since */
	rc = meta_ent_get(txn, m, id, &cur);
	if (rc != 0)
		return rc;
	if (del) {
		rc = meta_mdel(m, txn, m->m_idx, &k, NULL);
		if (rc != 0)
			return meta_err(rc, "index delete");
		added = -1;
	} else {
		added = got == MDB_NOTFOUND ? 1 : 0;
		v = (MDB_val){.mv_size = vlen, .mv_data = (void *)val};
		rc = meta_mput(m, txn, m->m_idx, &k, &v, 0);
		if (rc != 0)
			return meta_err(rc, "index put");
	}
	cur.me_nr_records += (uint64_t)added;
	cur.me_mtime_ns = eng_now_ns();
	return meta_ent_put(txn, m, id, &cur);
}

int idx_delete_records(struct eng *e, MDB_txn *txn, const struct st_id *id)
{
	uint8_t kb[16];
	MDB_cursor *cur;
	MDB_val k = meta_idx_key(kb, id, NULL, 0), v;
	int rc = mdb_cursor_open(txn, eng_meta(e)->m_idx, &cur);

	if (rc != 0)
		return meta_err(rc, "index cursor");
	/* Seek afresh after each delete: a cursor's place after
	 * mdb_cursor_del() at the end of a page is not to be relied on. */
	for (;;) {
		k = meta_idx_key(kb, id, NULL, 0);
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (rc != 0 || k.mv_size < 16 || memcmp(k.mv_data, kb, 16) != 0)
			break;
		rc = meta_mcdel(eng_meta(e), cur, eng_meta(e)->m_idx, 0);
		if (rc != 0)
			break;
	}
	mdb_cursor_close(cur);
	return (rc == 0 || rc == MDB_NOTFOUND) ? 0 : meta_err(rc, "index drop");
}
