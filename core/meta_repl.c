/*
 * meta_repl.c — replication of the metadata store (core/eng_repl.h): the
 * touched keys of a write transaction, write sets (encode, check, apply),
 * shadows, snapshots.  See core/README.md "Write sets and shadows".
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/eng_repl.h"
#include "core/engine_internal.h"
#include "core/errors.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/meta.h"
#include "core/meta_txn.h"

#define WSET_KEY_MAX 511u
#define WSET_NR_TABLES 8u

/* One touched key: its table and bytes at wk_off of the arena. */
struct wkey {
	uint32_t wk_off;
	uint16_t wk_len;
	uint8_t wk_table;
};

/* The touched keys of the current top-level write transaction, and the
 * buffer its write set is encoded into (reused). */
struct meta_wcap {
	struct wkey *wc_k;
	uint32_t wc_nr, wc_cap;
	uint8_t *wc_arena;
	size_t wc_alen, wc_acap;
	bool wc_nomem; /* a key could not be recorded: the commit fails */
	uint8_t *wc_buf;
	size_t wc_blen, wc_bcap;
	uint32_t *wc_ord; /* sorting of wc_k */
	uint32_t wc_ocap;
};

/* ------------------------------------------------------------- capture */

/* The table of dbi in m (enum meta_table), or -1. */
static int dbi_table(const struct meta *m, MDB_dbi dbi)
{
	const MDB_dbi t[WSET_NR_TABLES] = {m->m_sys, m->m_ent, m->m_member,
					   m->m_ext, m->m_idx, m->m_unit,
					   m->m_layer, m->m_fdmi};

	for (int i = 0; i < (int)WSET_NR_TABLES; i++)
		if (t[i] == dbi)
			return i;
	return -1;
}

static MDB_dbi table_dbi(const struct meta *m, uint32_t t)
{
	const MDB_dbi d[WSET_NR_TABLES] = {m->m_sys, m->m_ent, m->m_member,
					   m->m_ext, m->m_idx, m->m_unit,
					   m->m_layer, m->m_fdmi};

	return d[t];
}

static void wcap_add(struct meta *m, MDB_dbi dbi, const MDB_val *k)
{
	struct meta_wcap *w = m->m_wc;
	int t = dbi_table(m, dbi);

	if (w == NULL || t < 0 || k->mv_size == 0 ||
	    k->mv_size > WSET_KEY_MAX) {
		if (w != NULL)
			w->wc_nomem = true;
		return;
	}
	if (w->wc_nr == w->wc_cap) {
		uint32_t cap = w->wc_cap ? w->wc_cap * 2 : 64;
		struct wkey *nk = realloc(w->wc_k, cap * sizeof *nk);

		if (nk == NULL) {
			w->wc_nomem = true;
			return;
		}
		w->wc_k = nk;
		w->wc_cap = cap;
	}
	if (w->wc_alen + k->mv_size > w->wc_acap) {
		size_t cap = w->wc_acap ? w->wc_acap * 2 : 8192;
		uint8_t *na;

		while (cap < w->wc_alen + k->mv_size)
			cap *= 2;
		na = realloc(w->wc_arena, cap);
		if (na == NULL) {
			w->wc_nomem = true;
			return;
		}
		w->wc_arena = na;
		w->wc_acap = cap;
	}
	memcpy(w->wc_arena + w->wc_alen, k->mv_data, k->mv_size);
	w->wc_k[w->wc_nr++] = (struct wkey){(uint32_t)w->wc_alen,
					    (uint16_t)k->mv_size, (uint8_t)t};
	w->wc_alen += k->mv_size;
}

int meta_wtxn_open(struct meta *m, MDB_txn **txn)
{
	int rc = mdb_txn_begin(m->m_env, NULL, 0, txn);

	if (rc != 0)
		return rc;
	/* Under LMDB's writer lock: one top-level write at a time. */
	m->m_cap = __atomic_load_n(&m->m_rops, __ATOMIC_ACQUIRE) != NULL &&
		   m->m_wc != NULL;
	if (m->m_cap) {
		m->m_wc->wc_nr = 0;
		m->m_wc->wc_alen = 0;
		m->m_wc->wc_nomem = false;
	}
	return 0;
}

int meta_mput(struct meta *m, MDB_txn *txn, MDB_dbi dbi, MDB_val *k,
	      MDB_val *v, unsigned int flags)
{
	if (m->m_cap)
		wcap_add(m, dbi, k);
	return mdb_put(txn, dbi, k, v, flags);
}

int meta_mdel(struct meta *m, MDB_txn *txn, MDB_dbi dbi, MDB_val *k,
	      MDB_val *v)
{
	if (m->m_cap)
		wcap_add(m, dbi, k);
	return mdb_del(txn, dbi, k, v);
}

int meta_mcdel(struct meta *m, MDB_cursor *cur, MDB_dbi dbi,
	       unsigned int flags)
{
	if (m->m_cap) {
		MDB_val k, v;
		int rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);

		if (rc != 0)
			return rc;
		wcap_add(m, dbi, &k);
	}
	return mdb_cursor_del(cur, flags);
}

uint64_t meta_repl_seq_get(MDB_txn *txn, struct meta *m)
{
	MDB_val k = {strlen(ENG_REPL_SEQ_KEY), (void *)ENG_REPL_SEQ_KEY}, v;
	uint64_t seq = 0;

	if (mdb_get(txn, m->m_sys, &k, &v) == 0 && v.mv_size == 8) {
		memcpy(&seq, v.mv_data, 8);
		seq = le64toh(seq);
	}
	return seq;
}

/* ------------------------------------------------------------- encode */

static void put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

static const struct meta_wcap *sort_w;

static int wkey_cmp(const void *a, const void *b)
{
	const struct wkey *x = &sort_w->wc_k[*(const uint32_t *)a];
	const struct wkey *y = &sort_w->wc_k[*(const uint32_t *)b];
	size_t n = x->wk_len < y->wk_len ? x->wk_len : y->wk_len;
	int c;

	if (x->wk_table != y->wk_table)
		return x->wk_table < y->wk_table ? -1 : 1;
	c = memcmp(sort_w->wc_arena + x->wk_off, sort_w->wc_arena + y->wk_off,
		   n);
	if (c != 0)
		return c;
	return x->wk_len < y->wk_len ? -1 : x->wk_len > y->wk_len;
}

static bool wkey_eq(const struct meta_wcap *w, const struct wkey *x,
		    const struct wkey *y)
{
	return x->wk_table == y->wk_table && x->wk_len == y->wk_len &&
	       memcmp(w->wc_arena + x->wk_off, w->wc_arena + y->wk_off,
		      x->wk_len) == 0;
}

static int buf_room(struct meta_wcap *w, size_t more)
{
	size_t cap = w->wc_bcap ? w->wc_bcap : 16384;
	uint8_t *nb;

	if (w->wc_blen + more <= w->wc_bcap)
		return 0;
	while (cap < w->wc_blen + more)
		cap *= 2;
	nb = realloc(w->wc_buf, cap);
	if (nb == NULL)
		return ENOMEM;
	w->wc_buf = nb;
	w->wc_bcap = cap;
	return 0;
}

/* Sort mutex: qsort has no argument (sort_w). */
static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

/* Encode the write set of txn (keys recorded, the repl:seq put last) into
 * w->wc_buf.  LMDB's code. */
static int wset_encode(struct meta *m, MDB_txn *txn, uint64_t seq)
{
	struct meta_wcap *w = m->m_wc;
	uint32_t nr = 0, n;
	int rc;

	if (w->wc_ocap < w->wc_nr) {
		uint32_t *no = realloc(w->wc_ord, w->wc_nr * sizeof *no);

		if (no == NULL)
			return ENOMEM;
		w->wc_ord = no;
		w->wc_ocap = w->wc_nr;
	}
	n = w->wc_nr;
	for (uint32_t i = 0; i < n; i++)
		w->wc_ord[i] = i;
	pthread_mutex_lock(&sort_lock);
	sort_w = w;
	qsort(w->wc_ord, n, sizeof *w->wc_ord, wkey_cmp);
	sort_w = NULL;
	pthread_mutex_unlock(&sort_lock);
	w->wc_blen = ENG_WSET_HDR;
	if ((rc = buf_room(w, 0)) != 0)
		return rc;
	/* the repl:seq record goes last: skip it in the sorted keys */
	for (uint32_t i = 0; i < n; i++) {
		const struct wkey *k = &w->wc_k[w->wc_ord[i]];
		MDB_val kv = {k->wk_len, w->wc_arena + k->wk_off}, v;
		uint8_t *p;

		if (i > 0 && wkey_eq(w, k, &w->wc_k[w->wc_ord[i - 1]]))
			continue;
		if (k->wk_table == META_T_SYS &&
		    k->wk_len == strlen(ENG_REPL_SEQ_KEY) &&
		    memcmp(kv.mv_data, ENG_REPL_SEQ_KEY, k->wk_len) == 0)
			continue;
		rc = mdb_get(txn, table_dbi(m, k->wk_table), &kv, &v);
		if (rc != 0 && rc != MDB_NOTFOUND)
			return rc;
		if (rc == MDB_NOTFOUND)
			v = (MDB_val){0, NULL};
		if (v.mv_size > UINT32_MAX)
			return EINVAL;
		if ((rc = buf_room(w, ENG_WSET_REC_HDR + k->wk_len +
				      v.mv_size)) != 0)
			return rc;
		p = w->wc_buf + w->wc_blen;
		p[0] = k->wk_table;
		p[1] = v.mv_data != NULL ? ENG_WSET_PUT : ENG_WSET_DEL;
		put16(p + 2, k->wk_len);
		put32(p + 4, (uint32_t)v.mv_size);
		memcpy(p + 8, kv.mv_data, k->wk_len);
		if (v.mv_size > 0)
			memcpy(p + 8 + k->wk_len, v.mv_data, v.mv_size);
		w->wc_blen += ENG_WSET_REC_HDR + k->wk_len + v.mv_size;
		nr++;
	}
	{
		size_t kl = strlen(ENG_REPL_SEQ_KEY);
		uint8_t *p;

		if ((rc = buf_room(w, ENG_WSET_REC_HDR + kl + 8)) != 0)
			return rc;
		p = w->wc_buf + w->wc_blen;
		p[0] = META_T_SYS;
		p[1] = ENG_WSET_PUT;
		put16(p + 2, (uint16_t)kl);
		put32(p + 4, 8);
		memcpy(p + 8, ENG_REPL_SEQ_KEY, kl);
		put64(p + 8 + kl, seq);
		w->wc_blen += ENG_WSET_REC_HDR + kl + 8;
		nr++;
	}
	put32(w->wc_buf, ENG_WSET_MAGIC);
	put16(w->wc_buf + 4, ENG_WSET_VERSION);
	put16(w->wc_buf + 6, 0);
	put64(w->wc_buf + 8, seq);
	put32(w->wc_buf + 16, nr);
	put32(w->wc_buf + 20, (uint32_t)(w->wc_blen - ENG_WSET_HDR));
	return 0;
}

/* ------------------------------------------------------------- commit */

/* Commit txn; with recording on, bump repl:seq, encode, commit and ship
 * (m_shiplock held from the encoding to the end of the ship). */
int meta_txn_commit_ship(struct meta *m, MDB_txn *txn, uint64_t *seqp)
{
	const struct eng_repl_ops *ops;
	uint64_t seq, le;
	MDB_val k = {strlen(ENG_REPL_SEQ_KEY), (void *)ENG_REPL_SEQ_KEY};
	MDB_val v = {8, &le};
	int rc;

	*seqp = 0;
	if (!m->m_cap) {
		__atomic_add_fetch(&m->m_uncaptured, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&m->m_rops, __ATOMIC_ACQUIRE) != NULL) {
			/* begun before the hook was set, so not recorded:
			 * leave a gap, every shadow re-syncs (eng_repl_set) */
			le = htole64(meta_repl_seq_get(txn, m) + 2);
			rc = mdb_put(txn, m->m_sys, &k, &v, 0);
			if (rc != 0) {
				mdb_txn_abort(txn);
				return rc;
			}
		}
		return mdb_txn_commit(txn);
	}
	m->m_cap = false;
	ops = m->m_rops;
	if (m->m_wc->wc_nomem) {
		mdb_txn_abort(txn);
		err_set(-ENOMEM, "metadata commit: the write set could not be "
			"recorded (out of memory)");
		return ENOMEM;
	}
	if (m->m_wc->wc_nr == 0 || ops == NULL) {
		/* nothing changed: no write set */
		return mdb_txn_commit(txn);
	}
	pthread_mutex_lock(&m->m_shiplock);
	seq = meta_repl_seq_get(txn, m) + 1;
	le = htole64(seq);
	rc = mdb_put(txn, m->m_sys, &k, &v, 0);
	if (rc == 0)
		rc = wset_encode(m, txn, seq);
	if (rc != 0) {
		pthread_mutex_unlock(&m->m_shiplock);
		mdb_txn_abort(txn);
		return rc;
	}
	rc = mdb_txn_commit(txn);
	if (rc == 0) {
		ops->ro_ship(m->m_rarg, seq, m->m_wc->wc_buf, m->m_wc->wc_blen);
		*seqp = seq;
	}
	pthread_mutex_unlock(&m->m_shiplock);
	return rc;
}

int meta_repl_wait(struct meta *m, uint64_t seq)
{
	const struct eng_repl_ops *ops =
		__atomic_load_n(&m->m_rops, __ATOMIC_ACQUIRE);

	if (seq == 0 || ops == NULL || ops->ro_wait == NULL)
		return 0;
	return ops->ro_wait(m->m_rarg, seq);
}

int meta_txn_commit(struct meta *m, MDB_txn *txn)
{
	uint64_t seq;
	int rc = meta_txn_commit_ship(m, txn, &seq);

	if (rc != 0 || seq == 0)
		return rc;
	return meta_repl_wait(m, seq);
}

/* ------------------------------------------------------------- check */

int eng_wset_check(const void *buf, size_t len, uint64_t *seqp)
{
	const uint8_t *p = buf, *end;
	uint32_t nr, body, i;
	uint64_t seq;
	size_t kl = strlen(ENG_REPL_SEQ_KEY);
	bool last_ok = false;

	if (buf == NULL || len < ENG_WSET_HDR)
		return err_set(-EINVAL, "write set: %zu bytes, under its "
			       "header's %u", len, ENG_WSET_HDR);
	if (get32(p) != ENG_WSET_MAGIC)
		return err_set(-EINVAL, "write set: magic 0x%08x, not 0x%08x",
			       get32(p), ENG_WSET_MAGIC);
	if (get16(p + 4) != ENG_WSET_VERSION)
		return err_set(-EINVAL, "write set: version %u, this library "
			       "reads %u", get16(p + 4), ENG_WSET_VERSION);
	if (get16(p + 6) != 0)
		return err_set(-EINVAL, "write set: flags 0x%x (none defined)",
			       get16(p + 6));
	seq = get64(p + 8);
	if (seq == 0)
		return err_set(-EINVAL, "write set: seq 0");
	nr = get32(p + 16);
	body = get32(p + 20);
	if ((size_t)body != len - ENG_WSET_HDR)
		return err_set(-EINVAL, "write set %" PRIu64 ": body %u bytes, "
			       "%zu given", seq, body, len - ENG_WSET_HDR);
	if (nr == 0)
		return err_set(-EINVAL, "write set %" PRIu64 ": nr 0", seq);
	end = p + len;
	p += ENG_WSET_HDR;
	for (i = 0; i < nr; i++) {
		uint32_t t, op, kln, vl;

		if ((size_t)(end - p) < ENG_WSET_REC_HDR)
			return err_set(-EINVAL, "write set %" PRIu64 ": record "
				       "%u: header past the end", seq, i);
		t = p[0];
		op = p[1];
		kln = get16(p + 2);
		vl = get32(p + 4);
		if (t >= WSET_NR_TABLES)
			return err_set(-EINVAL, "write set %" PRIu64 ": record "
				       "%u: table %u", seq, i, t);
		if (op != ENG_WSET_PUT && op != ENG_WSET_DEL)
			return err_set(-EINVAL, "write set %" PRIu64 ": record "
				       "%u: op %u", seq, i, op);
		if (kln == 0 || kln > WSET_KEY_MAX)
			return err_set(-EINVAL, "write set %" PRIu64 ": record "
				       "%u: klen %u (1..%u)", seq, i, kln,
				       WSET_KEY_MAX);
		if (op == ENG_WSET_DEL && vl != 0)
			return err_set(-EINVAL, "write set %" PRIu64 ": record "
				       "%u: vlen %u of a delete", seq, i, vl);
		if ((size_t)(end - p) - ENG_WSET_REC_HDR < (size_t)kln + vl)
			return err_set(-EINVAL, "write set %" PRIu64 ": record "
				       "%u: klen %u + vlen %u past the end",
				       seq, i, kln, vl);
		last_ok = t == META_T_SYS && op == ENG_WSET_PUT &&
			  kln == kl && vl == 8 &&
			  memcmp(p + 8, ENG_REPL_SEQ_KEY, kl) == 0 &&
			  get64(p + 8 + kl) == seq;
		p += ENG_WSET_REC_HDR + kln + vl;
	}
	if (p != end)
		return err_set(-EINVAL, "write set %" PRIu64 ": %zu bytes after "
			       "its %u records", seq, (size_t)(end - p), nr);
	if (!last_ok)
		return err_set(-EINVAL, "write set %" PRIu64 ": its last record "
			       "is not repl:seq %" PRIu64, seq, seq);
	if (seqp != NULL)
		*seqp = seq;
	return 0;
}

/* ------------------------------------------------------------- engine */

int eng_repl_set(struct eng *e, const struct eng_repl_ops *ops, void *arg)
{
	struct meta *m = &e->e_meta;
	MDB_txn *txn;
	int rc;

	if (ops == NULL) {
		__atomic_store_n(&m->m_rops, NULL, __ATOMIC_RELEASE);
		return 0;
	}
	if (ops->ro_ship == NULL)
		return err_set(-EINVAL, "replication hook: no ro_ship");
	if (m->m_wc == NULL) {
		m->m_wc = calloc(1, sizeof *m->m_wc);
		if (m->m_wc == NULL)
			return err_set(-ENOMEM, "replication hook");
	}
	if (__atomic_load_n(&m->m_uncaptured, __ATOMIC_RELAXED) > 0) {
		/* written without a hook: make every shadow's next set a gap */
		uint64_t seq, le;
		MDB_val k = {strlen(ENG_REPL_SEQ_KEY), (void *)ENG_REPL_SEQ_KEY};
		MDB_val v = {8, &le};

		rc = mdb_txn_begin(m->m_env, NULL, 0, &txn);
		if (rc != 0)
			return meta_err(rc, "begin replication start");
		seq = meta_repl_seq_get(txn, m) + 2;
		le = htole64(seq);
		rc = mdb_put(txn, m->m_sys, &k, &v, 0);
		if (rc == 0)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
		if (rc == 0)
			rc = mdb_env_sync(m->m_env, 1);
		if (rc != 0)
			return meta_err(rc, "replication start");
		LOG_INFO("store %s: written without replication since its open: "
			 "write sets resume at seq %" PRIu64 " (standbys re-sync "
			 "by snapshot)", e->e_dir, seq + 1);
		m->m_uncaptured = 0;
	}
	m->m_rarg = arg;
	__atomic_store_n(&m->m_rops, ops, __ATOMIC_RELEASE);
	return 0;
}

uint64_t eng_repl_seq(struct eng *e)
{
	MDB_txn *txn;
	uint64_t seq;

	if (mdb_txn_begin(e->e_meta.m_env, NULL, MDB_RDONLY, &txn) != 0)
		return 0;
	seq = meta_repl_seq_get(txn, &e->e_meta);
	mdb_txn_abort(txn);
	return seq;
}

int eng_repl_wait(struct eng *e, uint64_t seq)
{
	return meta_repl_wait(&e->e_meta, seq);
}

int eng_repl_seq_read(const char *dir, uint64_t *seq)
{
	struct stat st;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = {strlen(ENG_REPL_SEQ_KEY), (void *)ENG_REPL_SEQ_KEY}, v;
	char path[LIM_PATH_MAX + 16];
	unsigned fl = MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS;
	int rc;

	*seq = 0;
	if (stat(dir, &st) != 0)
		return -ENOENT;
	if (S_ISDIR(st.st_mode)) {
		snprintf(path, sizeof path, "%s/data.mdb", dir);
		if (access(path, F_OK) != 0)
			return -ENOENT;
	} else {
		fl |= MDB_NOSUBDIR;
	}
	if ((rc = mdb_env_create(&env)) != 0)
		return meta_err(rc, "snapshot environment");
	mdb_env_set_maxdbs(env, 16);
	rc = mdb_env_open(env, dir, fl, 0644);
	if (rc == 0)
		rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	if (rc != 0) {
		mdb_env_close(env);
		return meta_err(rc, dir);
	}
	rc = mdb_dbi_open(txn, "sys", 0, &dbi);
	if (rc == 0 && mdb_get(txn, dbi, &k, &v) == 0 && v.mv_size == 8)
		*seq = get64(v.mv_data);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	if (rc == MDB_NOTFOUND)
		return 0;
	return rc == 0 ? 0 : meta_err(rc, dir);
}

/* A compacted, synced copy of env in path; *seq its repl:seq. */
static int env_snapshot(MDB_env *env, const char *path, uint64_t *seq)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc;

	if (fd < 0)
		return err_set(-errno, "snapshot %s: %s", path, strerror(errno));
	rc = mdb_env_copyfd2(env, fd, MDB_CP_COMPACT);
	if (rc == 0 && fsync(fd) != 0)
		rc = errno;
	close(fd);
	if (rc != 0) {
		unlink(path);
		return err_set(rc > 0 ? -rc : -EIO, "snapshot %s: %s", path,
			       mdb_strerror(rc));
	}
	if (seq != NULL) {
		rc = eng_repl_seq_read(path, seq);
		if (rc != 0)
			unlink(path);
		return rc;
	}
	return 0;
}

int eng_snapshot(struct eng *e, const char *path, uint64_t *seq)
{
	return env_snapshot(e->e_meta.m_env, path, seq);
}

/* ------------------------------------------------------------- shadows */

struct eng_shadow {
	struct meta sh_m;
	uint64_t sh_seq;
	char sh_dir[LIM_PATH_MAX + 1];
};

int eng_shadow_open(struct eng_shadow **out, const char *dir)
{
	struct eng_shadow *sh;
	MDB_txn *txn;
	int rc;

	if (strlen(dir) > LIM_PATH_MAX)
		return err_set(-ENAMETOOLONG, "shadow %s: path too long", dir);
	sh = calloc(1, sizeof *sh);
	if (sh == NULL)
		return err_set(-ENOMEM, "shadow %s", dir);
	snprintf(sh->sh_dir, sizeof sh->sh_dir, "%s", dir);
	rc = meta_open(&sh->sh_m, dir, LIM_META_SIZE_DEFAULT, META_CREATE);
	if (rc != 0) {
		free(sh);
		return err_set(rc, "shadow %s: %s", dir, err_msg());
	}
	rc = mdb_txn_begin(sh->sh_m.m_env, NULL, MDB_RDONLY, &txn);
	if (rc != 0) {
		rc = meta_err(rc, dir);
		eng_shadow_close(sh);
		return rc;
	}
	sh->sh_seq = meta_repl_seq_get(txn, &sh->sh_m);
	mdb_txn_abort(txn);
	*out = sh;
	return 0;
}

int eng_shadow_snapshot(struct eng_shadow *sh, const char *path,
			uint64_t *seq)
{
	return env_snapshot(sh->sh_m.m_env, path, seq);
}

uint64_t eng_shadow_seq(const struct eng_shadow *sh)
{
	return sh->sh_seq;
}

const char *eng_shadow_dir(const struct eng_shadow *sh)
{
	return sh->sh_dir;
}

void eng_shadow_close(struct eng_shadow *sh)
{
	if (sh == NULL)
		return;
	meta_close(&sh->sh_m);
	free(sh);
}

int eng_shadow_apply(struct eng_shadow *sh, uint64_t seq, const void *buf,
		     size_t len)
{
	struct meta *m = &sh->sh_m;
	const uint8_t *p = buf;
	uint64_t hseq, cur, last = seq;
	size_t off = 0;
	MDB_txn *txn;
	int rc;

	/* every set checked before anything changes */
	if (buf == NULL || len == 0)
		return err_set(-EINVAL, "shadow %s: empty write set",
			       sh->sh_dir);
	for (uint64_t k = seq; off < len; k++) {
		size_t one = len - off;

		if (one >= ENG_WSET_HDR &&
		    (uint64_t)get32(p + off + 20) + ENG_WSET_HDR < one)
			one = get32(p + off + 20) + ENG_WSET_HDR;
		rc = eng_wset_check(p + off, one, &hseq);
		if (rc != 0)
			return err_set(rc, "shadow %s: %s", sh->sh_dir,
				       err_msg());
		if (hseq != k)
			return err_set(-EINVAL, "shadow %s: write set seq %"
				       PRIu64 " where %" PRIu64 " was due "
				       "(request for seq %" PRIu64 ")",
				       sh->sh_dir, hseq, k, seq);
		last = k;
		off += one;
	}
	rc = mdb_txn_begin(m->m_env, NULL, 0, &txn);
	if (rc != 0)
		return meta_err(rc, "shadow apply");
	cur = meta_repl_seq_get(txn, m);
	if (cur + 1 != seq) {
		mdb_txn_abort(txn);
		return err_set(-ESTALE, "shadow %s: at seq %" PRIu64 ", write "
			       "set %" PRIu64 ": %s", sh->sh_dir, cur, seq,
			       cur + 1 < seq ? "behind" : "ahead");
	}
	for (off = 0; rc == 0 && off < len;) {
		const uint8_t *q = p + off + ENG_WSET_HDR;
		uint32_t nr = get32(p + off + 16);

		off += ENG_WSET_HDR + get32(p + off + 20);
		for (uint32_t i = 0; rc == 0 && i < nr; i++) {
			uint32_t kl = get16(q + 2), vl = get32(q + 4);
			MDB_val k = {kl, (void *)(q + 8)};
			MDB_val v = {vl, (void *)(q + 8 + kl)};

			if (q[1] == ENG_WSET_PUT)
				rc = mdb_put(txn, table_dbi(m, q[0]), &k, &v,
					     0);
			else if ((rc = mdb_del(txn, table_dbi(m, q[0]), &k,
					       NULL)) == MDB_NOTFOUND)
				rc = 0;
			q += ENG_WSET_REC_HDR + kl + vl;
		}
	}
	if (rc != 0) {
		mdb_txn_abort(txn);
		return err_set(meta_err(rc, "shadow apply"), "shadow %s: write "
			       "set %" PRIu64 ": %s", sh->sh_dir, seq,
			       mdb_strerror(rc));
	}
	rc = mdb_txn_commit(txn);
	if (rc == 0)
		rc = mdb_env_sync(m->m_env, 1);
	if (rc != 0)
		return err_set(meta_err(rc, "shadow commit"), "shadow %s: write "
			       "set %" PRIu64 ": commit: %s", sh->sh_dir, seq,
			       mdb_strerror(rc));
	sh->sh_seq = last;
	return 0;
}

/* fsync a directory. */
static int dir_sync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

int eng_shadow_install(const char *dir, const char *file, uint64_t *seq)
{
	char path[LIM_PATH_MAX + 16];
	uint64_t s = 0;
	int fd, rc;

	rc = eng_repl_seq_read(file, &s);
	if (rc != 0)
		return err_set(rc, "install %s into %s: %s", file, dir,
			       rc == -ENOENT ? "no such snapshot" : err_msg());
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return err_set(rc, "install %s: %s", file, strerror(-rc));
	}
	close(fd);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return err_set(-errno, "install into %s: %s", dir,
			       strerror(errno));
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	if (rename(file, path) != 0)
		return err_set(-errno, "install %s as %s: %s", file, path,
			       strerror(errno));
	snprintf(path, sizeof path, "%s/lock.mdb", dir);
	if (unlink(path) != 0 && errno != ENOENT)
		LOG_WARNING("install into %s: %s: %s", dir, path,
			    strerror(errno));
	rc = dir_sync(dir);
	if (rc != 0)
		return err_set(rc, "install into %s: sync: %s", dir,
			       strerror(-rc));
	if (seq != NULL)
		*seq = s;
	return 0;
}

void meta_repl_fini(struct meta *m)
{
	struct meta_wcap *w = m->m_wc;

	if (w == NULL)
		return;
	free(w->wc_k);
	free(w->wc_arena);
	free(w->wc_buf);
	free(w->wc_ord);
	free(w);
	m->m_wc = NULL;
}

/* ------------------------------------------------------- sender views */

int eng_repl_view_admit(struct eng_repl_view *v, uint32_t sender,
			uint64_t epoch, uint64_t inc)
{
	if (epoch > v->rv_epoch) {
		*v = (struct eng_repl_view){sender, epoch, inc};
		return ENG_REPL_VIEW_LEARNED;
	}
	if (sender == v->rv_acting && inc >= v->rv_inc)
		return 0;
	return -EREMCHG;
}
