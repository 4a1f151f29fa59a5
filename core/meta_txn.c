/* meta_txn.c — transactions and records for code outside the engine (see
 * meta_txn.h): thin wrappers over LMDB, no copies or allocations. */
#include <errno.h>
#include <string.h>

#include "core/errors.h"
#include "core/meta.h"
#include "core/meta_txn.h"
#include "core/types.h"

/* The LMDB table of t. */
static MDB_dbi meta_dbi(const struct meta *m, enum meta_table t)
{
	switch (t) {
	case META_T_SYS:
		return m->m_sys;
	case META_T_ENT:
		return m->m_ent;
	case META_T_MEMBER:
		return m->m_member;
	case META_T_EXT:
		return m->m_ext;
	case META_T_IDX:
		return m->m_idx;
	case META_T_UNIT:
		return m->m_unit;
	case META_T_LAYER:
		return m->m_layer;
	case META_T_FDMI:
		return m->m_fdmi;
	}
	return m->m_sys;
}

int meta_wtxn_begin(struct meta *m, MDB_txn **txn, const char *what)
{
	int rc = meta_wtxn_open(m, txn);

	return rc == 0 ? 0 : meta_err(rc, what);
}

int meta_wtxn_commit(struct meta *m, MDB_txn *txn, const char *what)
{
	int rc = meta_txn_commit(m, txn);

	return rc == 0 ? 0 : meta_err(rc, what);
}

int meta_ntxn_begin(struct meta *m, MDB_txn *parent, MDB_txn **child,
		    const char *what)
{
	int rc = mdb_txn_begin(m->m_env, parent, 0, child);

	return rc == 0 ? 0 : meta_err(rc, what);
}

int meta_ntxn_commit(MDB_txn *child, const char *what)
{
	int rc = mdb_txn_commit(child);

	return rc == 0 ? 0 : meta_err(rc, what);
}

void meta_txn_abort(MDB_txn *txn)
{
	mdb_txn_abort(txn);
}

int meta_get(MDB_txn *txn, struct meta *m, enum meta_table t,
	     const void *key, size_t klen, struct meta_rec *out,
	     const char *what)
{
	MDB_val k = {.mv_size = klen, .mv_data = (void *)key}, v;
	int rc = mdb_get(txn, meta_dbi(m, t), &k, &v);

	if (rc == 0) {
		*out = (struct meta_rec){key, klen, v.mv_data, v.mv_size};
		return 0;
	}
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	return what != NULL ? meta_err(rc, what) : -EIO;
}

int meta_put(MDB_txn *txn, struct meta *m, enum meta_table t,
	     const void *key, size_t klen, const void *val, size_t vlen,
	     const char *what)
{
	MDB_val k = {.mv_size = klen, .mv_data = (void *)key};
	MDB_val v = {.mv_size = vlen, .mv_data = (void *)val};
	int rc = meta_mput(m, txn, meta_dbi(m, t), &k, &v, 0);

	return rc == 0 ? 0 : meta_err(rc, what);
}

int meta_del(MDB_txn *txn, struct meta *m, enum meta_table t,
	     const void *key, size_t klen, const char *what)
{
	MDB_val k = {.mv_size = klen, .mv_data = (void *)key};
	int rc = meta_mdel(m, txn, meta_dbi(m, t), &k, NULL);

	return rc == 0 || rc == MDB_NOTFOUND ? 0 : meta_err(rc, what);
}

int meta_entries(MDB_txn *txn, struct meta *m, enum meta_table t,
		 uint64_t *nr, const char *what)
{
	MDB_stat st;
	int rc = mdb_stat(txn, meta_dbi(m, t), &st);

	if (rc != 0)
		return what != NULL ? meta_err(rc, what) : -EIO;
	*nr = st.ms_entries;
	return 0;
}

uint64_t meta_key_blk(const void *key)
{
	return meta_ext_key_blk(&(MDB_val){META_EXT_KEY_LEN, (void *)key});
}

/* Position cur on the first record of sc's range (LMDB's code). */
static int scan_first(MDB_cursor *cur, const struct meta_scan *sc,
		      MDB_val *k, MDB_val *v)
{
	int rc;

	if (!sc->ms_rev) {
		*k = sc->ms_from != NULL ?
		     (MDB_val){sc->ms_flen, (void *)sc->ms_from} :
		     (MDB_val){sc->ms_plen, (void *)sc->ms_prefix};
		if (k->mv_size == 0)
			return mdb_cursor_get(cur, k, v, MDB_FIRST);
		rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
		if (rc == 0 && sc->ms_after && sc->ms_from != NULL &&
		    k->mv_size == sc->ms_flen &&
		    memcmp(k->mv_data, sc->ms_from, sc->ms_flen) == 0)
			rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
		return rc;
	}
	if (sc->ms_from == NULL)
		return mdb_cursor_get(cur, k, v, MDB_LAST);
	*k = (MDB_val){sc->ms_flen, (void *)sc->ms_from};
	rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
	return rc == 0 ? mdb_cursor_get(cur, k, v, MDB_PREV)
		       : mdb_cursor_get(cur, k, v, MDB_LAST);
}

int meta_scan(MDB_txn *txn, struct meta *m, const struct meta_scan *sc)
{
	MDB_dbi dbi = meta_dbi(m, sc->ms_table);
	MDB_cursor_op step = sc->ms_rev ? MDB_PREV : MDB_NEXT;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, r = 0;

	rc = sc->ms_write ? mdb_cursor_open(txn, dbi, &cur)
			  : meta_rcursor_get(m, txn, dbi, &cur);
	if (rc != 0)
		return rc < 0 ? rc : meta_err(rc, sc->ms_what);
	for (rc = scan_first(cur, sc, &k, &v);
	     rc == 0 && (sc->ms_plen == 0 ||
			 (k.mv_size >= sc->ms_plen &&
			  memcmp(k.mv_data, sc->ms_prefix, sc->ms_plen) == 0));
	     rc = mdb_cursor_get(cur, &k, &v, step)) {
		struct meta_rec rec = {k.mv_data, k.mv_size, v.mv_data,
				       v.mv_size};

		r = sc->ms_fn(sc->ms_arg, &rec);
		if (r == META_SCAN_DEL && sc->ms_write)
			rc = meta_mcdel(m, cur, dbi, 0);
		else if (r != META_SCAN_NEXT && r != META_SCAN_DEL)
			break;
		if (rc != 0)
			break;
	}
	if (sc->ms_write)
		mdb_cursor_close(cur);
	else
		meta_rcursor_put(m, cur);
	if (r < 0)
		return r;
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : meta_err(rc, sc->ms_what);
}

struct member_scan {
	const struct st_id *ms_after;
	meta_member_fn ms_fn;
	void *ms_arg;
};

static int member_one(void *arg, const struct meta_rec *r)
{
	struct member_scan *a = arg;
	struct st_id id;
	struct st_id cid;

	meta_id_dec((const uint8_t *)r->mc_key + 17, &cid);
	id = (struct st_id){cid.si_hi, cid.si_lo};
	if (a->ms_after != NULL && id.si_hi == a->ms_after->si_hi &&
	    id.si_lo == a->ms_after->si_lo)
		return META_SCAN_NEXT;
	return a->ms_fn(a->ms_arg, &id);
}

int meta_member_scan(MDB_txn *txn, struct meta *m, const struct st_id *cont,
		     uint32_t type, const struct st_id *after,
		     meta_member_fn fn, void *arg, const char *what)
{
	struct st_id c = {cont->si_hi, cont->si_lo}, a = {0, 0};
	uint8_t kb[META_MEMBER_KEY_LEN];
	struct member_scan ms = {after, fn, arg};

	if (after != NULL)
		a = (struct st_id){after->si_hi, after->si_lo};
	meta_member_key(kb, &c, type, &a);
	return meta_scan(txn, m, &(struct meta_scan){
		.ms_table = META_T_MEMBER, .ms_from = kb,
		.ms_flen = sizeof kb, .ms_prefix = kb, .ms_plen = 17,
		.ms_fn = member_one, .ms_arg = &ms, .ms_what = what});
}
