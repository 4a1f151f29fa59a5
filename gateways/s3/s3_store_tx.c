/*
 * s3_store_tx.c — the S3 gateway store's atomic changes (s3_tx: index
 * PUTs and DELs, object DELETEs and a writer's held write as one Clovis
 * dtx, with a plain fallback), the recovery of in-flight records at start
 * (s3_store_recover()) and, in cluster mode, the settle thread that
 * decides dtxs left in doubt before their keys change again.  The store's
 * mapping is described in s3_store.c; what its files share is declared in
 * s3_store_internal.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/sha.h>

#include "gateways/s3/s3.h"
#include "gateways/s3/s3_view.h"
#include "gateways/s3/s3_store_internal.h"
#ifdef STRATA_FAULT_INJECT
#include "core/fault.h" /* test builds (strata-s3-test) only */
#endif

/* ------------------------------------------------------ atomic changes */

enum { TX_PUT, TX_DEL, TX_IFL, TX_OBJ, TX_WOP };

struct tx_m {
	int m_kind;
	struct clovis_idx *m_idx;      /* TX_PUT, TX_DEL, TX_IFL */
	void *m_kp, *m_vp;             /* copies */
	size_t m_kl, m_vl;
	struct clovis_bufvec m_kv, m_vv;
	int32_t m_rc;
	struct s3_bucket *m_bk;        /* TX_OBJ */
	struct clovis_id m_id;
	struct clovis_obj m_o;
	bool m_gone;                   /* TX_OBJ: it does not exist */
	uint8_t *m_ik, *m_pk;          /* TX_OBJ: fallback's hold keys */
	size_t m_ikl, m_pkl;
	struct clovis_op *m_op;
	struct clovis_op *m_wop;       /* TX_WOP: a writer's (not freed) */
};

struct s3_tx {
	struct tx_m **t_m;
	uint32_t t_nr, t_cap;
	int t_rc;                      /* first failure while adding */
};

struct s3_tx *s3_tx_new(void)
{
	return calloc(1, sizeof(struct s3_tx));
}

static void *dup_bytes(const void *p, size_t n)
{
	void *d = malloc(n ? n : 1);

	if (d != NULL && n > 0)
		memcpy(d, p, n);
	return d;
}

static struct tx_m *tx_add(struct s3_tx *t, int kind)
{
	struct tx_m *m;

	if (t->t_rc != 0)
		return NULL;
	if (t->t_nr == t->t_cap) {
		uint32_t cap = t->t_cap ? t->t_cap * 2 : 8;
		struct tx_m **n = realloc(t->t_m, cap * sizeof *n);

		if (n == NULL) {
			t->t_rc = -ENOMEM;
			return NULL;
		}
		t->t_m = n;
		t->t_cap = cap;
	}
	m = calloc(1, sizeof *m);
	if (m == NULL) {
		t->t_rc = -ENOMEM;
		return NULL;
	}
	m->m_kind = kind;
	t->t_m[t->t_nr++] = m;
	return m;
}

static int tx_rec(struct s3_tx *t, int kind, struct clovis_idx *i,
		  const void *k, size_t kl, const void *v, size_t vl)
{
	struct tx_m *m = tx_add(t, kind);

	if (m == NULL)
		return t->t_rc;
	m->m_idx = i;
	m->m_kl = kl;
	m->m_kp = dup_bytes(k, kl);
	if (kind == TX_PUT) {
		m->m_vl = vl;
		m->m_vp = dup_bytes(v, vl);
	}
	if (m->m_kp == NULL || (kind == TX_PUT && m->m_vp == NULL))
		t->t_rc = -ENOMEM;
	return t->t_rc;
}

int s3_tx_put(struct s3_tx *t, struct clovis_idx *i, const void *k,
	      size_t kl, const void *v, size_t vl)
{
	return tx_rec(t, TX_PUT, i, k, kl, v, vl);
}

int s3_tx_del(struct s3_tx *t, struct clovis_idx *i, const void *k,
	      size_t kl)
{
	return tx_rec(t, TX_DEL, i, k, kl, NULL, 0);
}

int s3_tx_inflight_del(struct s3_tx *t, const uint8_t *rkey)
{
	return tx_rec(t, TX_IFL, &s3g.g_inflight, rkey,
		      strlen(s3g.g_conf.sc_gw_id) + 17, NULL, 0);
}

int s3_tx_write(struct s3_tx *t, const struct s3_wr *w)
{
	struct tx_m *m;

	if (!w->w_held)
		return t->t_rc;
	m = tx_add(t, TX_WOP);
	if (m != NULL)
		m->m_wop = w->w_op[0];
	return t->t_rc;
}

int s3_tx_free(struct s3_tx *t, struct s3_bucket *b, const struct s3_orec *r,
	       const uint8_t *ikey, size_t ikl, const uint8_t *pkey,
	       size_t pkl)
{
	struct clovis_id id;
	uint32_t k, n = s3_orec_ids(r, UINT32_MAX, &id);

	for (k = 0; k < n; k++) {
		struct tx_m *m = tx_add(t, TX_OBJ);

		if (m == NULL)
			break;
		s3_orec_ids(r, k, &m->m_id);
		m->m_bk = b;
		if (ikey != NULL) {
			m->m_ik = dup_bytes(ikey, ikl);
			m->m_ikl = ikl;
		}
		if (pkey != NULL) {
			m->m_pk = dup_bytes(pkey, pkl);
			m->m_pkl = pkl;
		}
		if ((ikey != NULL && m->m_ik == NULL) ||
		    (pkey != NULL && m->m_pk == NULL))
			t->t_rc = -ENOMEM;
	}
	return t->t_rc;
}

void s3_tx_drop(struct s3_tx *t)
{
	uint32_t k;

	if (t == NULL)
		return;
	for (k = 0; k < t->t_nr; k++) {
		struct tx_m *m = t->t_m[k];

		clovis_op_free(m->m_op);
		free(m->m_kp);
		free(m->m_vp);
		free(m->m_ik);
		free(m->m_pk);
		free(m);
	}
	free(t->t_m);
	free(t);
}

bool s3_tx_doubt(int rc)
{
	return rc == -ETIMEDOUT || rc == -EINPROGRESS;
}

/* Test builds: SIGKILL the gateway at a named point of a change. */
static void tx_fault(const char *point)
{
#ifdef STRATA_FAULT_INJECT
	if (FAULT_HIT(point)) {
		fprintf(stderr, "strata-s3: fault point %s: SIGKILL\n", point);
		raise(SIGKILL);
	}
#else
	(void)point;
#endif
}

/* Make (not launch) the op of record member m. */
static int tx_rec_op(struct tx_m *m)
{
	m->m_kv = (struct clovis_bufvec){1, &m->m_kp, &m->m_kl};
	m->m_vv = (struct clovis_bufvec){1, &m->m_vp, &m->m_vl};
	return clovis_idx_op(m->m_idx, m->m_kind == TX_PUT ? CLOVIS_IC_PUT
							   : CLOVIS_IC_DEL,
			     &m->m_kv, m->m_kind == TX_PUT ? &m->m_vv : NULL,
			     &m->m_rc, m->m_kind == TX_PUT ? CLOVIS_IF_OVERWRITE
							   : 0, &m->m_op);
}

/* Run record member m alone; its rc. */
static int tx_rec_sync(struct tx_m *m)
{
	int rc = tx_rec_op(m);

	if (rc == 0) {
		rc = clovis_op_sync(m->m_op);
		m->m_op = NULL;
	}
	return rc != 0 ? rc : m->m_rc;
}

/*
 * OPEN every object member (in parallel): a DELETE in a dtx names the
 * incarnation it deletes (cluster mode checks it).  One that does not
 * exist is left out (m_gone).
 */
static int tx_open_objs(struct s3_tx *t)
{
	uint32_t k;
	int rc = 0;

	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind != TX_OBJ)
			continue;
		rc = clovis_obj_init(&m->m_o, &m->m_bk->bk_cont.co_realm,
				     &m->m_id, NULL);
		if (rc == 0)
			rc = clovis_entity_op(&m->m_o.ob_entity, CLOVIS_EO_OPEN,
					      &m->m_op);
		if (rc == 0)
			rc = clovis_op_launch(&m->m_op, 1);
		if (rc != 0) {
			clovis_op_free(m->m_op);
			m->m_op = NULL;
		}
	}
	for (k = 0; k < t->t_nr; k++) {
		struct tx_m *m = t->t_m[k];
		int r;

		if (m->m_kind != TX_OBJ || m->m_op == NULL)
			continue;
		r = clovis_op_wait(m->m_op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
		clovis_op_free(m->m_op);
		m->m_op = NULL;
		if (r == -ENOENT)
			m->m_gone = true;
		else if (r != 0 && rc == 0)
			rc = r;
	}
	return rc;
}

/* The change as one dtx. */
static int tx_dtx(struct s3_tx *t)
{
	struct clovis_dtx *dx = NULL;
	struct clovis_op *cop = NULL;
	uint32_t k;
	int rc = clovis_dtx_open(&dx, clovis_default_realm(s3g.g_cl));

	/* a writer's held write first, launched: its data I/O starts now,
	 * it is applied with the commit */
	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind != TX_WOP)
			continue;
		rc = clovis_dtx_add(dx, m->m_wop);
		if (rc == 0)
			rc = clovis_op_launch(&m->m_wop, 1);
	}
	if (rc == 0)
		rc = tx_open_objs(t);
	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind == TX_WOP)
			continue;
		if (m->m_kind == TX_OBJ) {
			if (m->m_gone)
				continue;
			rc = clovis_entity_op(&m->m_o.ob_entity,
					      CLOVIS_EO_DELETE, &m->m_op);
		} else {
			rc = tx_rec_op(m);
		}
		if (rc == 0)
			rc = clovis_dtx_add(dx, m->m_op);
	}
	if (rc != 0) {
		clovis_dtx_abort(dx);
		for (k = 0; k < t->t_nr; k++) {
			clovis_op_free(t->t_m[k]->m_op);
			t->t_m[k]->m_op = NULL;
		}
		return rc;
	}
	tx_fault("s3.dtx.before");
	rc = clovis_dtx_commit(dx, &cop);
	if (rc != 0) {
		clovis_dtx_abort(dx);
		for (k = 0; k < t->t_nr; k++) {
			clovis_op_free(t->t_m[k]->m_op);
			t->t_m[k]->m_op = NULL;
		}
		return rc;
	}
	rc = clovis_op_launch(&cop, 1);
	if (rc == 0)
		rc = clovis_op_wait(cop, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc != 0)
		fprintf(stderr, "strata-s3: dtx of %u updates: %s: %s\n",
			t->t_nr, clovis_strerror(rc), clovis_op_errmsg(cop));
	clovis_op_free(cop);
	/* the members go with their dtx's commit op; free them now */
	for (k = 0; k < t->t_nr; k++) {
		clovis_op_free(t->t_m[k]->m_op);
		t->t_m[k]->m_op = NULL;
	}
	if (rc == 0)
		tx_fault("s3.dtx.after");
	return rc;
}

/*
 * The change without a dtx (a dtx too large for the cluster's PREPARE):
 * in-flight records hold the objects to free (a crash after the primary
 * change still frees them at the next start), then the index updates in
 * the order given (the primary first: nothing is visible before it), then
 * the janitor frees the objects and removes those records.
 */
static int tx_plain(struct s3_tx *t)
{
	struct tx_m *p = NULL;   /* the primary change: first PUT, or DEL */
	uint8_t rkey[64];
	uint32_t k;
	int rc = 0;

	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind == TX_OBJ)
			rc = s3_inflight_put(m->m_bk, &m->m_id, m->m_ik,
					     m->m_ikl, m->m_pk, m->m_pkl, rkey);
	}
	for (k = 0; k < t->t_nr && p == NULL; k++)
		if (t->t_m[k]->m_kind == TX_PUT)
			p = t->t_m[k];
	for (k = 0; k < t->t_nr && p == NULL; k++)
		if (t->t_m[k]->m_kind == TX_DEL)
			p = t->t_m[k];
	if (rc == 0 && p != NULL) {
		rc = tx_rec_sync(p);
		if (rc == -ENOENT && p->m_kind == TX_DEL)
			rc = 0;
	}
	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];
		int r;

		if (m == p || (m->m_kind != TX_PUT && m->m_kind != TX_DEL))
			continue;
		r = tx_rec_sync(m);
		if (r != 0 && r != -ENOENT)
			fprintf(stderr, "strata-s3: a bookkeeping record of a "
				"change: %s (left to the next start)\n",
				clovis_strerror(r));
	}
	for (k = 0; k < t->t_nr; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind == TX_OBJ && rc == 0) {
			s3_jan_add(m->m_bk, &m->m_id, true);
		} else if (m->m_kind == TX_OBJ && !s3_tx_doubt(rc)) {
			/* not changed: unhold */
			s3_inflight_key(&m->m_id, rkey);
			s3_inflight_del(rkey);
		} else if (m->m_kind == TX_IFL && rc == 0) {
			s3_inflight_del_later(m->m_kp);
		}
	}
	return rc;
}

int s3_tx_commit(struct s3_tx *t)
{
	uint32_t k, nrec = 0, nifl = 0, nobj = 0, nwop = 0;
	bool cluster = s3g.g_conf.sc_cluster[0] != 0;
	int rc = t->t_rc;

	for (k = 0; k < t->t_nr; k++) {
		int kd = t->t_m[k]->m_kind;

		nrec += kd == TX_PUT || kd == TX_DEL;
		nifl += kd == TX_IFL;
		nobj += kd == TX_OBJ;
		nwop += kd == TX_WOP;
	}
	if (rc != 0) {
		/* nothing launched */
	} else if (nrec == 1 && nobj == 0 && nwop == 0 &&
		   (cluster || nifl == 0)) {
		struct tx_m *m = NULL;

		for (k = 0; k < t->t_nr; k++)
			if (t->t_m[k]->m_kind != TX_IFL)
				m = t->t_m[k];
		tx_fault("s3.dtx.before");
		rc = tx_rec_sync(m);
		if (rc == 0)
			tx_fault("s3.dtx.after");
		for (k = 0; k < t->t_nr && rc == 0; k++)
			if (t->t_m[k]->m_kind == TX_IFL)
				s3_inflight_del_later(t->t_m[k]->m_kp);
	} else if (nrec + nifl + nobj > 0) {
		rc = tx_dtx(t);
		/* without a dtx a held write would not run: failed then */
		if (rc == -E2BIG && nwop == 0) {
			fprintf(stderr, "strata-s3: a change of %u updates is "
				"too large for one dtx here: done without\n",
				t->t_nr);
			rc = tx_plain(t);
		}
	}
	s3_tx_drop(t);
	return rc;
}

/* Does the record (object or part) v reference id? */
static bool rec_refs(const void *v, size_t vl, const struct clovis_id *id)
{
	struct s3_orec r;
	uint32_t k;

	if (s3_orec_decode(v, vl, &r) != 0)
		return true; /* unknown: keep the object */
	if (r.or_has_id && clovis_id_cmp(&r.or_id, id) == 0)
		return true;
	for (k = 0; k < r.or_nparts; k++) {
		struct clovis_id p;

		s3_get_id(r.or_parts + S3_PART_STRIDE * k, &p);
		if (clovis_id_cmp(&p, id) == 0)
			return true;
	}
	return false;
}

/* Settle one in-flight record: free its object unless referenced. */
static int recover_one(const uint8_t *k, size_t kl, const void *v, size_t vl,
		       uint64_t *freed)
{
	size_t gl = strlen(s3g.g_conf.sc_gw_id), pos = 0;
	struct clovis_id id, cid = {0};
	const uint8_t *ikey = NULL, *pkey = NULL, *val;
	uint32_t ikl = 0, pkl = 0, n;
	struct s3_bucket *b = NULL;
	char bname[S3_BUCKET_MAX + 1] = "";
	bool refd = false;
	uint8_t tag;
	void *rv;
	size_t rvl;

	if (kl != gl + 17)
		return 0;
	s3_get_id(k + gl + 1, &id);
	while (s3_tlv_next(v, vl, &pos, &tag, &val, &n) == 1) {
		if (tag == T_CONT && n == 16)
			s3_get_id(val, &cid);
		else if (tag == T_KEY)
			ikey = val, ikl = n;
		else if (tag == T_UPLOAD)
			pkey = val, pkl = n;
		else if (tag == T_BUCKET && n <= S3_BUCKET_MAX)
			memcpy(bname, val, n), bname[n] = 0;
	}
	if (s3_bucket_get(bname, &b) == 0 &&
	    clovis_id_cmp(&b->bk_cont.co_entity.en_id, &cid) == 0) {
		if (b->bk_vw != NULL) /* a view bucket: is it a file's data? */
			refd = ikey == NULL || s3_view_refs(b, ikey, ikl, &id);
		else if (ikey != NULL &&
		    s3_idx_get(&b->bk_idx, ikey, ikl, &rv, &rvl) == 0) {
			refd = rec_refs(rv, rvl, &id);
			free(rv);
		}
		if (!refd && pkey != NULL &&
		    s3_idx_get(&s3g.g_parts, pkey, pkl, &rv, &rvl) == 0) {
			refd = rec_refs(rv, rvl, &id);
			free(rv);
		}
		if (!refd) {
			if (s3_obj_delete(&b->bk_cont, &id) != 0)
				return 0;
			(*freed)++;
		}
	}
	return s3_idx_del(&s3g.g_inflight, k, kl);
}

/* ------------------------------------------------------------- settle */

/*
 * Cluster mode: a dtx this gateway left in doubt (a change that ended with
 * an s3_tx_doubt() code, or one of an earlier run killed inside its commit)
 * can still commit.  Freeing an object it would reference, or rewriting a
 * key it changes, before it is decided could leave a record naming a freed
 * object or leak one.  One thread (settle_main) settles them: it calls
 * clovis_dtx_settle() (every dtx in doubt when the call started is decided
 * on every server), again with a growing pause while it fails (saying why
 * on stderr), then
 *   - marks every doubt mark taken before that call settled (the key
 *     stripes refused since a change ended in doubt serve again);
 *   - at the first success after a start, reclaims the in-flight records
 *     the earlier run left (the snapshot taken at start, before serving:
 *     records this run makes are not in it), and lets changes of keys run
 *     again (until then s3_settle_held() refuses every one: a dtx of the
 *     earlier run may have applied its in-flight DEL on one server while
 *     its record PUT is still undecided on another, so the in-flight
 *     records do not name every key it may still change).
 * Embedded mode has none of this: a dtx is one local commit, the walk runs
 * before serving.
 */

struct settle_rec {
	void *sr_k, *sr_v;
	size_t sr_kl, sr_vl;
};

static struct {
	pthread_mutex_t s_lock;
	pthread_cond_t s_cond;
	pthread_t s_th;
	bool s_started, s_stop;
	uint64_t s_marked;        /* latest doubt mark */
	uint64_t s_settled;       /* marks up to this one are settled */
	bool s_recovering;        /* the start's snapshot not reclaimed yet */
	struct settle_rec *s_recs; /* that snapshot */
	size_t s_nr, s_cap;
} st = {.s_lock = PTHREAD_MUTEX_INITIALIZER,
	.s_cond = PTHREAD_COND_INITIALIZER};

uint64_t s3_settle_mark(void)
{
	uint64_t m;

	pthread_mutex_lock(&st.s_lock);
	m = ++st.s_marked;
	pthread_cond_broadcast(&st.s_cond);
	pthread_mutex_unlock(&st.s_lock);
	return m;
}

bool s3_settle_pending(uint64_t mark)
{
	uint64_t s = __atomic_load_n(&st.s_settled, __ATOMIC_ACQUIRE);

	return mark > s;
}

bool s3_settle_held(void)
{
	return __atomic_load_n(&st.s_recovering, __ATOMIC_ACQUIRE);
}

/* Keep in-flight record (k, v) of the earlier run for the reclamation. */
static int settle_keep(const void *k, size_t kl, const void *v, size_t vl)
{
	struct settle_rec *r;

	if (st.s_nr == st.s_cap) {
		size_t cap = st.s_cap ? st.s_cap * 2 : 64;

		r = realloc(st.s_recs, cap * sizeof *r);
		if (r == NULL)
			return -ENOMEM;
		st.s_recs = r;
		st.s_cap = cap;
	}
	r = &st.s_recs[st.s_nr];
	r->sr_k = malloc(kl);
	r->sr_v = malloc(vl ? vl : 1);
	if (r->sr_k == NULL || r->sr_v == NULL) {
		free(r->sr_k);
		free(r->sr_v);
		return -ENOMEM;
	}
	memcpy(r->sr_k, k, kl);
	memcpy(r->sr_v, v, vl);
	r->sr_kl = kl;
	r->sr_vl = vl;
	st.s_nr++;
	return 0;
}

static void settle_reclaim(void)
{
	uint64_t freed = 0;

	for (size_t i = 0; i < st.s_nr; i++) {
		recover_one(st.s_recs[i].sr_k, st.s_recs[i].sr_kl,
			    st.s_recs[i].sr_v, st.s_recs[i].sr_vl, &freed);
		free(st.s_recs[i].sr_k);
		free(st.s_recs[i].sr_v);
	}
	fprintf(stderr, "strata-s3: dtxs settled: %zu in-flight records of "
		"the earlier run settled, %lu interrupted upload objects "
		"reclaimed\n", st.s_nr, (unsigned long)freed);
	pthread_mutex_lock(&st.s_lock);
	free(st.s_recs);
	st.s_recs = NULL;
	st.s_nr = st.s_cap = 0;
	__atomic_store_n(&st.s_recovering, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&st.s_lock);
}

static void *settle_main(void *arg)
{
	uint32_t pause = 1, fails = 0;
	uint64_t t_log = 0;

	(void)arg;
	pthread_mutex_lock(&st.s_lock);
	while (!st.s_stop) {
		uint64_t target = st.s_marked;
		bool recovering = st.s_recovering;
		struct timespec ts;
		int rc;

		if (!recovering && st.s_settled >= target) {
			pthread_cond_wait(&st.s_cond, &st.s_lock);
			continue;
		}
		pthread_mutex_unlock(&st.s_lock);
		rc = clovis_dtx_settle(s3g.g_cl, 0, SETTLE_TRY_MS);
		if (rc == 0) {
			if (fails > 0)
				fprintf(stderr, "strata-s3: dtxs settled after "
					"%u tries\n", fails + 1);
			fails = 0;
			pause = 1;
			__atomic_store_n(&st.s_settled, target,
					 __ATOMIC_RELEASE);
			if (recovering)
				settle_reclaim();
			pthread_mutex_lock(&st.s_lock);
			continue;
		}
		if (fails++ == 0 || s3_now_ns() / 1000000000ull >=
				    t_log + SETTLE_LOG_EVERY_S) {
			t_log = s3_now_ns() / 1000000000ull;
			fprintf(stderr, "strata-s3: waiting for dtxs in doubt "
				"(%s): %s: %s\n", recovering ? "the earlier "
				"run's in-flight records and their keys wait"
				: "keys whose change ended in doubt wait",
				clovis_strerror(rc), clovis_errmsg());
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += pause;
		pause = pause * 2 > SETTLE_PAUSE_MAX_S ? SETTLE_PAUSE_MAX_S
						       : pause * 2;
		pthread_mutex_lock(&st.s_lock);
		if (!st.s_stop)
			pthread_cond_timedwait(&st.s_cond, &st.s_lock, &ts);
	}
	pthread_mutex_unlock(&st.s_lock);
	return NULL;
}

static int settle_start(void)
{
	int rc = pthread_create(&st.s_th, NULL, settle_main, NULL);

	if (rc != 0)
		return -rc;
	st.s_started = true;
	return 0;
}

void s3_settle_stop(void)
{
	if (!st.s_started)
		return;
	pthread_mutex_lock(&st.s_lock);
	st.s_stop = true;
	pthread_cond_broadcast(&st.s_cond);
	pthread_mutex_unlock(&st.s_lock);
	pthread_join(st.s_th, NULL);
	st.s_started = false;
	for (size_t i = 0; i < st.s_nr; i++) {
		free(st.s_recs[i].sr_k);
		free(st.s_recs[i].sr_v);
	}
	free(st.s_recs);
	st.s_recs = NULL;
	st.s_nr = st.s_cap = 0;
}

int s3_store_recover(uint64_t *freed, uint64_t *queued)
{
	uint8_t start[64];
	size_t sl = strlen(s3g.g_conf.sc_gw_id);
	void *keys[64], *vals[64];
	size_t kls[64], vls[64];
	uint32_t nr, k, rounds = 0;
	bool cluster = s3g.g_conf.sc_cluster[0] != 0;
	int rc = 0;

	*freed = 0;
	*queued = 0;
	memcpy(start, s3g.g_conf.sc_gw_id, sl);
	start[sl++] = ':';
	do {
		bool more;

		nr = 64;
		rc = s3_idx_next(&s3g.g_inflight, start, sl, false, keys, kls,
				 vals, vls, &nr);
		if (rc != 0)
			break;
		more = nr == 64;
		for (k = 0; k < nr; k++) {
			if (kls[k] > 0 && kls[k] < sizeof start &&
			    memcmp(keys[k], s3g.g_conf.sc_gw_id,
				   strlen(s3g.g_conf.sc_gw_id)) == 0) {
				if (!cluster)
					recover_one(keys[k], kls[k], vals[k],
						    vls[k], freed);
				else if (rc == 0)
					rc = settle_keep(keys[k], kls[k],
							 vals[k], vls[k]);
				memcpy(start, keys[k], kls[k]);
				sl = kls[k];
			} else {
				more = false;
			}
			free(keys[k]);
			free(vals[k]);
		}
		if (nr > 0 && more) {
			/* continue after the last key: append a 0 byte */
			if (sl < sizeof start)
				start[sl++] = 0;
		}
		if (!more || rc != 0)
			break;
	} while (++rounds < 1000000);
	if (!cluster)
		return rc;
	*queued = st.s_nr;
	/* reclaimed after the settle, even when the walk failed part way
	 * (the rest waits for the next start) */
	st.s_recovering = true;
	if (settle_start() != 0) {
		/* no thread: settle here, before serving */
		while (clovis_dtx_settle(s3g.g_cl, 0, SETTLE_TRY_MS) != 0)
			fprintf(stderr, "strata-s3: waiting for dtxs in doubt "
				"before the reclamation: %s\n",
				clovis_errmsg());
		settle_reclaim();
	}
	return rc;
}
