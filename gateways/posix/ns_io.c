/*
 * gateways/posix/ns_io.c — file data of the POSIX namespace (ns.h):
 * read, write (read-modify-write of partial blocks), truncate, the cache
 * of sizes and times written back every writeback_ms, fsync and release,
 * ns_data_id() and ns_link_object() (the S3 shared view); and the
 * machinery every change uses: ns_tx (one op alone or one dtx) and the
 * tracking of ops from EXECUTED to STABLE (ns_pend).
 *
 * Durability.  A change returns at EXECUTED; its ops, with the memory and
 * handles they use, go on the mount's list (oldest first) until they are
 * STABLE.  ns_fsync() writes the cache back and waits for every op on the
 * list up to that point.  The list is reaped from its head as ops become
 * STABLE (cheap in embedded mode, where an op STABLE implies every earlier
 * one is) and bounded by NS_PEND_MAX: past it the oldest is waited for.
 *
 * Data.  A file's object is made at its first write ({NS_HI_DATA, ino},
 * the superblock's block size, layout and tier) in one dtx with the
 * record that names it.  A write moves whole blocks straight from the
 * caller's buffer and reads, patches and rewrites a partial first or last
 * block, in one WRITE per CLOVIS_OP_BYTES_MAX.  Its size and mtime stay
 * in the cache until written back.  Reads clip at the size; blocks past
 * the object's highest written one read as zeros without I/O.  atime is
 * not kept up to date by reads (as noatime): only ns_setattr() sets it.  (The caller's buffer is used until
 * EXECUTED, when the data is on its devices; clovis.h asks WRITE buffers
 * to stay until STABLE, which the engines do not need once the op is
 * EXECUTED: the data is written before the commit that maps it.)
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateways/posix/ns_internal.h"

/* ------------------------------------------------------------- changes */

void ns_tx_init(struct ns *ns, struct ns_tx *t)
{
	t->t_ns = ns;
	t->t_p = calloc(1, sizeof *t->t_p);
	t->t_rc = t->t_p == NULL ? ns_err(-ENOMEM, "change: no memory") : 0;
	t->t_bad = -1;
}

int ns_tx_fail(struct ns_tx *t, int rc)
{
	if (t->t_rc == 0)
		t->t_rc = rc;
	return rc;
}

void *ns_tx_mem(struct ns_tx *t, size_t size)
{
	struct ns_blob *b;

	if (t->t_p == NULL)
		return NULL;
	b = calloc(1, sizeof *b + size);
	if (b == NULL) {
		ns_tx_fail(t, ns_err(-ENOMEM, "change: no memory for %zu "
				     "bytes", size));
		return NULL;
	}
	b->b_next = t->t_p->p_mem;
	t->t_p->p_mem = b;
	t->t_p->p_bytes += size;
	return b->b_data;
}

static int ns_tx_add(struct ns_tx *t, struct clovis_op *op, int32_t *rcs)
{
	struct ns_pend *p = t->t_p;

	if (p->p_nr == NS_TX_OPS_MAX) {
		clovis_op_free(op);
		return ns_tx_fail(t, ns_err(-E2BIG, "change of more than %u "
					    "ops", NS_TX_OPS_MAX));
	}
	p->p_rcs[p->p_nr] = rcs;
	p->p_ops[p->p_nr] = op;
	return (int)p->p_nr++;
}

/* Keep the record op of kind (its first key) as p's witness when it is
 * a better one than p has (ns_pend: a PUT creating its key tells the
 * outcome best; a DEL's key may have been absent before). */
static void ns_tx_witness(struct ns_pend *p, const struct clovis_idx *ix,
			  enum ns_witness kind, const void *key, size_t kl,
			  const void *val, size_t vl)
{
	if (kind <= p->p_wkind || kl == 0)
		return;
	p->p_wkind = kind;
	p->p_wid = ix->in_entity.en_id;
	p->p_wkey = key;
	p->p_wkl = kl;
	p->p_wval = kind == NS_W_DEL ? NULL : val;
	p->p_wvl = kind == NS_W_DEL ? 0 : vl;
}

/* A record op (PUT of one record with val, or DEL of nr keys): its keys,
 * value, vectors and rcs copied into the change's memory. */
static int ns_tx_recs(struct ns_tx *t, struct clovis_idx *ix,
		      enum clovis_idx_opcode oc, uint32_t nr,
		      void *const *keys, const size_t *klens, const void *val,
		      size_t vl, uint32_t flags)
{
	size_t hdr = 2 * sizeof(struct clovis_bufvec) +
		     nr * (2 * sizeof(void *) + 2 * sizeof(size_t)) +
		     nr * sizeof(int32_t), bytes = vl;
	struct clovis_bufvec *kv, *vv;
	struct clovis_op *op;
	void **kp, **vp;
	size_t *kl, *vls;
	int32_t *rcs;
	char *d, ids[CLOVIS_ID_STR_LEN];
	int rc;

	if (t->t_rc != 0)
		return t->t_rc;
	for (uint32_t i = 0; i < nr; i++)
		bytes += klens[i];
	kv = ns_tx_mem(t, hdr + bytes);
	if (kv == NULL)
		return t->t_rc;
	vv = kv + 1;
	kp = (void **)(vv + 1);
	vp = kp + nr;
	kl = (size_t *)(vp + nr);
	vls = kl + nr;
	rcs = (int32_t *)(vls + nr);
	d = (char *)(rcs + nr);
	for (uint32_t i = 0; i < nr; i++) {
		memcpy(d, keys[i], klens[i]);
		kp[i] = d;
		kl[i] = klens[i];
		d += klens[i];
	}
	if (oc == CLOVIS_IC_PUT) {
		memcpy(d, val, vl);
		vp[0] = d;
		vls[0] = vl;
	}
	*kv = (struct clovis_bufvec){nr, kp, kl};
	*vv = (struct clovis_bufvec){nr, vp, vls};
	rc = clovis_idx_op(ix, oc, kv, oc == CLOVIS_IC_PUT ? vv : NULL, rcs,
			   flags, &op);
	if (rc != 0)
		return ns_tx_fail(t, ns_err(rc, "index %s: %s",
			clovis_id_format(&ix->in_entity.en_id, ids),
			clovis_errmsg()));
	ns_tx_witness(t->t_p, ix, oc == CLOVIS_IC_DEL ? NS_W_DEL :
		      (flags & CLOVIS_IF_OVERWRITE) ? NS_W_PUT : NS_W_CREATE,
		      kp[0], kl[0], vp[0], vls[0]);
	return ns_tx_add(t, op, rcs);
}

int ns_tx_put(struct ns_tx *t, struct clovis_idx *ix, const void *k,
	      size_t kl, const void *v, size_t vl, bool overwrite)
{
	void *kp = (void *)k;

	return ns_tx_recs(t, ix, CLOVIS_IC_PUT, 1, &kp, &kl, v, vl,
			  overwrite ? CLOVIS_IF_OVERWRITE : 0);
}

int ns_tx_del(struct ns_tx *t, struct clovis_idx *ix, void *const *keys,
	      const size_t *klens, uint32_t nr)
{
	return ns_tx_recs(t, ix, CLOVIS_IC_DEL, nr, keys, klens, NULL, 0, 0);
}

int ns_tx_idx(struct ns_tx *t, const struct clovis_id *id, bool open,
	      struct clovis_idx **out)
{
	struct clovis_idx *ix;
	struct clovis_op *op;
	char ids[CLOVIS_ID_STR_LEN];
	int rc;

	if (t->t_rc != 0)
		return t->t_rc;
	ix = ns_tx_mem(t, sizeof *ix);
	if (ix == NULL)
		return t->t_rc;
	rc = clovis_idx_init(ix, &t->t_ns->ns_co.co_realm, id);
	if (rc == 0 && open) {
		rc = clovis_entity_op(&ix->in_entity, CLOVIS_EO_OPEN, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
	}
	if (rc == -ENOENT)
		return ns_tx_fail(t, ns_err(rc, "index %s: not found",
					    clovis_id_format(id, ids)));
	if (rc != 0)
		return ns_tx_fail(t, ns_err(rc, "index %s: %s",
					    clovis_id_format(id, ids),
					    clovis_errmsg()));
	*out = ix;
	return 0;
}

int ns_tx_ent(struct ns_tx *t, struct clovis_entity *e,
	      enum clovis_entity_opcode oc)
{
	struct clovis_op *op;
	char ids[CLOVIS_ID_STR_LEN];
	int rc;

	if (t->t_rc != 0)
		return t->t_rc;
	rc = clovis_entity_op(e, oc, &op);
	if (rc != 0)
		return ns_tx_fail(t, ns_err(rc, "entity %s: %s",
					    clovis_id_format(&e->en_id, ids),
					    clovis_errmsg()));
	return ns_tx_add(t, op, NULL);
}

int ns_tx_objh(struct ns_tx *t, struct ns_objh *oh)
{
	struct ns_pend *p = t->t_p;

	if (t->t_rc != 0)
		return t->t_rc;
	for (uint32_t i = 0; i < p->p_nr_objh; i++)
		if (p->p_objh[i] == oh)
			return 0;
	if (p->p_nr_objh == sizeof p->p_objh / sizeof p->p_objh[0])
		abort(); /* our own error: a change uses one object */
	__atomic_add_fetch(&oh->oh_refs, 1, __ATOMIC_RELAXED);
	p->p_objh[p->p_nr_objh++] = oh;
	return 0;
}

int ns_tx_obj(struct ns_tx *t, struct ns_objh *oh,
	      enum clovis_obj_opcode oc, uint64_t blk, uint64_t nr,
	      struct clovis_bufvec *data, uint32_t flags)
{
	struct clovis_extvec *ev;
	struct clovis_op *op;
	uint64_t *v;
	char ids[CLOVIS_ID_STR_LEN];
	int rc = ns_tx_objh(t, oh);

	if (rc != 0)
		return rc;
	ev = ns_tx_mem(t, sizeof *ev + 2 * sizeof *v);
	if (ev == NULL)
		return t->t_rc;
	v = (uint64_t *)(ev + 1);
	v[0] = blk;
	v[1] = nr;
	*ev = (struct clovis_extvec){1, &v[0], &v[1]};
	rc = clovis_obj_op(&oh->oh_obj, oc, ev, data, flags, &op);
	if (rc != 0)
		return ns_tx_fail(t, ns_err(rc, "object %s: %s",
			clovis_id_format(&oh->oh_obj.ob_entity.en_id, ids),
			clovis_errmsg()));
	return ns_tx_add(t, op, NULL);
}

/* ------------------------------------------------------------- tracking */

void ns_objh_put(struct ns_objh *oh)
{
	if (oh != NULL &&
	    __atomic_sub_fetch(&oh->oh_refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(oh);
}

/* Free a change: its ops (members before the commit op that owns their
 * dtx, as clovis_op_free() may wait for them), references and memory. */
static void ns_pend_free(struct ns_pend *p)
{
	if (p == NULL)
		return;
	for (uint32_t i = 0; i < p->p_nr; i++)
		clovis_op_free(p->p_ops[i]);
	for (uint32_t i = 0; i < p->p_nr_objh; i++)
		ns_objh_put(p->p_objh[i]);
	while (p->p_mem != NULL) {
		struct ns_blob *b = p->p_mem;

		p->p_mem = b->b_next;
		free(b);
	}
	free(p);
}

static struct clovis_op *ns_pend_last(const struct ns_pend *p)
{
	return p->p_ops[p->p_nr - 1];
}

/* Is the change final (STABLE, or FAILED: *rc)? */
static bool ns_pend_final(const struct ns_pend *p, int *rc)
{
	enum clovis_op_state s = clovis_op_state(ns_pend_last(p));

	*rc = s == CLOVIS_OS_FAILED ? clovis_op_rc(ns_pend_last(p)) : 0;
	return s == CLOVIS_OS_STABLE || s == CLOVIS_OS_FAILED;
}

static struct ns_pend *ns_pend_pop_locked(struct ns *ns)
{
	struct ns_pend *p = ns->ns_pend_head;

	ns->ns_pend_head = p->p_next;
	if (ns->ns_pend_head == NULL)
		ns->ns_pend_tail = NULL;
	ns->ns_pend_nr--;
	ns->ns_pend_bytes -= p->p_bytes;
	p->p_next = NULL;
	return p;
}

/* Wait up to max of the oldest changes, those added up to seq upto, to be
 * STABLE, and free them.  One thread at a time waits (ns_pend_wait), so a
 * change popped here is never taken for done by another fsync. */
static int ns_pend_wait_upto(struct ns *ns, uint64_t upto, uint32_t max)
{
	int rc = 0;

	pthread_mutex_lock(&ns->ns_pend_wait);
	for (uint32_t n = 0; n < max; n++) {
		struct ns_pend *p = NULL;
		int r;

		pthread_mutex_lock(&ns->ns_pend_lock);
		if (ns->ns_pend_head != NULL && ns->ns_pend_head->p_seq <= upto)
			p = ns_pend_pop_locked(ns);
		pthread_mutex_unlock(&ns->ns_pend_lock);
		if (p == NULL)
			break;
		r = clovis_op_wait(ns_pend_last(p), CLOVIS_OS_STABLE,
				   CLOVIS_TIME_NEVER);
		if (r != 0 && rc == 0)
			rc = ns_err(r, "a change did not become durable: %s",
				    clovis_op_errmsg(ns_pend_last(p)));
		if (r != 0) { /* told at the next fsync too: a writer over the
				 bounds (ns_pend_track) waits here and moves on */
			pthread_mutex_lock(&ns->ns_pend_lock);
			if (ns->ns_pend_rc == 0)
				ns->ns_pend_rc = r;
			pthread_mutex_unlock(&ns->ns_pend_lock);
		}
		ns_pend_free(p);
	}
	pthread_mutex_unlock(&ns->ns_pend_wait);
	return rc;
}

/* Pop the final changes at the head (under ns_pend_lock): a list. */
static struct ns_pend *ns_pend_reap_locked(struct ns *ns)
{
	struct ns_pend *done = NULL, *q;
	int rc;

	while (ns->ns_pend_head != NULL &&
	       ns_pend_final(ns->ns_pend_head, &rc)) {
		q = ns_pend_pop_locked(ns);
		if (rc != 0 && ns->ns_pend_rc == 0)
			ns->ns_pend_rc = rc; /* told at the next fsync */
		q->p_next = done;
		done = q;
	}
	return done;
}

static void ns_pend_free_list(struct ns_pend *q)
{
	while (q != NULL) {
		struct ns_pend *next = q->p_next;

		ns_pend_free(q);
		q = next;
	}
}

void ns_pend_reap(struct ns *ns)
{
	struct ns_pend *done;

	pthread_mutex_lock(&ns->ns_pend_lock);
	done = ns_pend_reap_locked(ns);
	pthread_mutex_unlock(&ns->ns_pend_lock);
	ns_pend_free_list(done);
}

/* Track a launched change until STABLE; reap the head of the list; past
 * the bounds, wait for the oldest changes. */
static void ns_pend_track(struct ns *ns, struct ns_pend *p)
{
	struct ns_pend *done;
	bool over;

	pthread_mutex_lock(&ns->ns_pend_lock);
	p->p_seq = ++ns->ns_pend_seq;
	if (ns->ns_pend_tail != NULL)
		ns->ns_pend_tail->p_next = p;
	else
		ns->ns_pend_head = p;
	ns->ns_pend_tail = p;
	ns->ns_pend_nr++;
	ns->ns_pend_bytes += p->p_bytes;
	done = ns_pend_reap_locked(ns);
	over = ns->ns_pend_nr > NS_PEND_MAX ||
	       ns->ns_pend_bytes > NS_PEND_BYTES_MAX;
	pthread_mutex_unlock(&ns->ns_pend_lock);
	ns_pend_free_list(done);
	while (over) {
		ns_pend_wait_upto(ns, UINT64_MAX, 1);
		pthread_mutex_lock(&ns->ns_pend_lock);
		over = ns->ns_pend_nr > NS_PEND_MAX ||
		       ns->ns_pend_bytes > NS_PEND_BYTES_MAX;
		pthread_mutex_unlock(&ns->ns_pend_lock);
	}
}

int ns_pend_drain(struct ns *ns)
{
	uint64_t upto;
	int rc;

	pthread_mutex_lock(&ns->ns_pend_lock);
	upto = ns->ns_pend_seq;
	pthread_mutex_unlock(&ns->ns_pend_lock);
	rc = ns_pend_wait_upto(ns, upto, UINT32_MAX);
	pthread_mutex_lock(&ns->ns_pend_lock);
	if (rc == 0 && ns->ns_pend_rc != 0)
		rc = ns_err(ns->ns_pend_rc, "an earlier change did not become "
			    "durable: %s", clovis_strerror(ns->ns_pend_rc));
	ns->ns_pend_rc = 0;
	pthread_mutex_unlock(&ns->ns_pend_lock);
	return rc;
}

/* ------------------------------------------------------------- commits */

static int ns_tx_run_one(struct ns_tx *t, struct ns_pend *p, const char *what)
{
	struct clovis_op *op = p->p_ops[0];
	int rc = clovis_op_launch(&op, 1);

	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_EXECUTED, CLOVIS_TIME_NEVER);
	if (rc != 0) {
		t->t_bad = 0;
		return ns_err(rc, "%s: %s", what,
			      clovis_op_state(op) == CLOVIS_OS_FAILED ?
			      clovis_op_errmsg(op) : clovis_errmsg());
	}
	if (p->p_rcs[0] != NULL && p->p_rcs[0][0] != 0) {
		t->t_bad = 0; /* nothing changed: a record refused */
		return ns_err(p->p_rcs[0][0], "%s: %s", what,
			      clovis_strerror(p->p_rcs[0][0]));
	}
	return 0;
}

/* The member that failed a dtx (the others fail -ECANCELED), or -1. */
static int ns_tx_culprit(struct ns_pend *p)
{
	for (uint32_t i = 0; i + 1 < p->p_nr; i++) {
		int rc = clovis_op_wait(p->p_ops[i], CLOVIS_OS_STABLE,
					CLOVIS_TIME_NEVER);

		if (rc != 0 && rc != -ECANCELED)
			return (int)i;
	}
	return -1;
}

/*
 * A cluster dtx's commit ended in doubt (-ETIMEDOUT: the decider did not
 * answer; it may have committed).  Wait until the dtx is decided on every
 * server (clovis_dtx_settle(), at most NS_DOUBT_WAIT_MS), then read p's
 * witness record back: a dtx is all or nothing, so the witness tells
 * whether the whole change applied.  Returns 1 (applied), 0 (not: the
 * dtx was aborted), or -ETIMEDOUT (still unknown: no witness, no decision
 * in time, or the witness unreadable).
 */
static int ns_tx_outcome(struct ns_tx *t, const struct ns_pend *p,
			 const struct clovis_dtx_id *did)
{
	struct clovis_idx ix;
	size_t vl = p->p_wvl + 1;
	void *v;
	int rc;

	if (p->p_wkind == NS_W_NONE ||
	    clovis_dtx_settle(t->t_ns->ns_cl, did->di_hlc + 1,
			      NS_DOUBT_WAIT_MS) != 0 ||
	    ns_idx_open(t->t_ns, &p->p_wid, &ix) != 0)
		return -ETIMEDOUT;
	v = malloc(vl);
	if (v == NULL)
		return -ETIMEDOUT;
	rc = ns_idx_get(&ix, p->p_wkey, p->p_wkl, v, &vl);
	if (p->p_wkind == NS_W_DEL)
		rc = rc == -ENOENT ? 1 : rc == 0 || rc == -ENOBUFS ? 0
							   : -ETIMEDOUT;
	else if (rc == 0)
		rc = vl == p->p_wvl && memcmp(v, p->p_wval, vl) == 0;
	else
		rc = rc == -ENOENT || rc == -ENOBUFS ? 0 : -ETIMEDOUT;
	free(v);
	return rc;
}

static int ns_tx_run_dtx(struct ns_tx *t, struct ns_pend *p, const char *what)
{
	struct clovis_dtx *dx = NULL;
	struct clovis_op *cop = NULL;
	struct clovis_dtx_id did;
	bool have_id = false;
	int rc = clovis_dtx_open(&dx, &t->t_ns->ns_co.co_realm);

	for (uint32_t i = 0; rc == 0 && i < p->p_nr; i++)
		rc = clovis_dtx_add(dx, p->p_ops[i]);
	if (rc == 0)
		have_id = clovis_dtx_id(dx, &did) == 0;
	if (rc == 0)
		rc = clovis_dtx_commit(dx, &cop);
	if (rc != 0) {
		rc = ns_err(rc, "%s: dtx: %s", what, clovis_errmsg());
		clovis_dtx_abort(dx);
		return rc;
	}
	p->p_ops[p->p_nr++] = cop;
	rc = clovis_op_launch(&cop, 1);
	if (rc == 0)
		rc = clovis_op_wait(cop, CLOVIS_OS_EXECUTED, CLOVIS_TIME_NEVER);
	if (rc == -EINPROGRESS)
		rc = 0; /* cluster: decided, applied as participants learn it */
	if (rc == -ETIMEDOUT && have_id) {
		/* in doubt: its decision, once every server has it */
		char msg[256];
		int o;

		snprintf(msg, sizeof msg, "%s", clovis_op_state(cop) ==
			 CLOVIS_OS_FAILED ? clovis_op_errmsg(cop) :
			 clovis_errmsg());
		o = ns_tx_outcome(t, p, &did);
		if (o == 1)
			return 0;
		return ns_err(rc, "%s: %s; %s", what, msg, o == 0 ?
			      "then aborted: nothing of it applied" :
			      "its outcome is still unknown");
	}
	if (rc != 0) {
		rc = ns_err(rc, "%s: %s", what,
			    clovis_op_state(cop) == CLOVIS_OS_FAILED ?
			    clovis_op_errmsg(cop) : clovis_errmsg());
		t->t_bad = ns_tx_culprit(p);
	}
	return rc;
}

int ns_tx_commit(struct ns_tx *t, const char *what)
{
	struct ns_pend *p = t->t_p;
	int rc = t->t_rc;

	t->t_p = NULL;
	if (p == NULL || rc != 0 || p->p_nr == 0) {
		ns_pend_free(p);
		return rc;
	}
	rc = p->p_nr == 1 ? ns_tx_run_one(t, p, what)
			  : ns_tx_run_dtx(t, p, what);
	if (clovis_op_state(ns_pend_last(p)) &
	    (CLOVIS_OS_INIT | CLOVIS_OS_FAILED))
		ns_pend_free(p); /* final, or never launched */
	else
		ns_pend_track(t->t_ns, p);
	return rc;
}

void ns_tx_abort(struct ns_tx *t)
{
	ns_pend_free(t->t_p);
	t->t_p = NULL;
}

/* ------------------------------------------------------------ the cache */

static uint32_t ns_fbucket(uint64_t ino)
{
	return (uint32_t)((ino * 0x9E3779B97F4A7C15ull) >> 54);
}

_Static_assert(NS_FILE_BUCKETS == 1u << 10, "ns_fbucket() takes 10 bits");

struct ns_file *ns_file_find(struct ns *ns, uint64_t ino)
{
	struct ns_file *f = ns->ns_files[ns_fbucket(ino)];

	while (f != NULL && f->f_ino != ino)
		f = f->f_next;
	return f;
}

/* Find or make ino's entry (under ns_cache_lock); NULL: no memory. */
static struct ns_file *ns_file_get_locked(struct ns *ns, uint64_t ino)
{
	struct ns_file *f = ns_file_find(ns, ino);
	uint32_t b = ns_fbucket(ino);

	if (f != NULL)
		return f;
	f = calloc(1, sizeof *f);
	if (f == NULL)
		return NULL;
	f->f_ino = ino;
	f->f_next = ns->ns_files[b];
	ns->ns_files[b] = f;
	ns->ns_nr_files++;
	return f;
}

static void ns_file_drop_locked(struct ns *ns, struct ns_file *f)
{
	struct ns_file **pp = &ns->ns_files[ns_fbucket(f->f_ino)];

	while (*pp != f)
		pp = &(*pp)->f_next;
	*pp = f->f_next;
	ns->ns_nr_files--;
	ns_objh_put(f->f_objh);
	free(f);
}

void ns_file_overlay(struct ns *ns, uint64_t ino, struct ns_inode_rec *r)
{
	struct ns_file *f;

	pthread_mutex_lock(&ns->ns_cache_lock);
	f = ns_file_find(ns, ino);
	/* a cached size only grows (writes; a truncate is written at once):
	 * another mount's larger size written back meanwhile stands */
	if (f != NULL && (f->f_dirty & NS_FD_SIZE) && S_ISREG(r->it_mode) &&
	    f->f_size > r->it_size)
		r->it_size = f->f_size;
	if (f != NULL && (f->f_dirty & NS_FD_MTIME))
		r->it_mtime_ns = f->f_mtime_ns;
	if (f != NULL && (f->f_dirty & NS_FD_CTIME))
		r->it_ctime_ns = f->f_ctime_ns;
	pthread_mutex_unlock(&ns->ns_cache_lock);
}

void ns_file_touch(struct ns *ns, uint64_t ino, bool mtime)
{
	uint64_t now = ns_now_ns();
	struct ns_file *f;

	pthread_mutex_lock(&ns->ns_cache_lock);
	f = ns_file_get_locked(ns, ino);
	if (f != NULL) { /* without memory, the times are not kept: fine */
		if (mtime)
			f->f_mtime_ns = now;
		f->f_ctime_ns = now;
		f->f_dirty |= NS_FD_CTIME | (mtime ? NS_FD_MTIME : 0);
	}
	pthread_mutex_unlock(&ns->ns_cache_lock);
}

void ns_file_forget(struct ns *ns, uint64_t ino)
{
	struct ns_file *f;

	pthread_mutex_lock(&ns->ns_cache_lock);
	f = ns_file_find(ns, ino);
	if (f != NULL)
		ns_file_drop_locked(ns, f);
	pthread_mutex_unlock(&ns->ns_cache_lock);
}

void ns_file_clean(struct ns *ns, uint64_t ino, const struct ns_inode_rec *r)
{
	struct ns_file *f;

	pthread_mutex_lock(&ns->ns_cache_lock);
	f = ns_file_find(ns, ino);
	if (f != NULL) {
		f->f_dirty = 0;
		if (f->f_has_size)
			f->f_size = r->it_size;
	}
	pthread_mutex_unlock(&ns->ns_cache_lock);
}

/* Write back what ino's entry holds, then drop the entry (the next use
 * loads it again).  Takes ino's lock. */
static int ns_writeback_one(struct ns *ns, uint64_t ino)
{
	char target[NS_SYMLINK_MAX + 1];
	struct ns_inode_rec r;
	struct ns_lockset ls;
	struct ns_file *f;
	struct ns_tx t;
	uint32_t dirty;
	int rc = 0;

	ns_ls_lock_one(ns, &ls, ino, true);
	pthread_mutex_lock(&ns->ns_cache_lock);
	f = ns_file_find(ns, ino);
	dirty = f != NULL ? f->f_dirty : 0;
	pthread_mutex_unlock(&ns->ns_cache_lock);
	if (dirty != 0) {
		rc = ns_inode_get(ns, ino, &r, target); /* cache laid over */
		if (rc == 0) {
			ns_tx_init(ns, &t);
			ns_tx_inode_put(&t, ino, &r, target, true);
			rc = ns_tx_commit(&t, "writeback");
		} else if (rc == -ENOENT) {
			rc = 0; /* removed (by another process): forget it */
		}
	}
	pthread_mutex_lock(&ns->ns_cache_lock);
	f = rc == 0 ? ns_file_find(ns, ino) : NULL;
	if (f != NULL)
		ns_file_drop_locked(ns, f);
	pthread_mutex_unlock(&ns->ns_cache_lock);
	ns_ls_unlock(ns, &ls);
	return rc;
}

int ns_writeback_all(struct ns *ns)
{
	uint64_t *inos;
	uint32_t n = 0;
	int rc = 0;

	pthread_mutex_lock(&ns->ns_cache_lock);
	inos = ns->ns_nr_files ? malloc(ns->ns_nr_files * sizeof *inos) : NULL;
	for (uint32_t b = 0; inos != NULL && b < NS_FILE_BUCKETS; b++)
		for (struct ns_file *f = ns->ns_files[b]; f; f = f->f_next)
			inos[n++] = f->f_ino;
	if (ns->ns_nr_files != 0 && inos == NULL)
		rc = ns_err(-ENOMEM, "writeback: no memory");
	pthread_mutex_unlock(&ns->ns_cache_lock);
	for (uint32_t i = 0; i < n; i++) {
		int r = ns_writeback_one(ns, inos[i]);

		if (r != 0 && rc == 0)
			rc = r;
	}
	free(inos);
	return rc;
}

static void *ns_wb_main(void *arg)
{
	struct ns *ns = arg;

	pthread_mutex_lock(&ns->ns_cache_lock);
	while (!ns->ns_wb_stop) {
		struct timespec ts;
		uint64_t at;

		clock_gettime(CLOCK_REALTIME, &ts);
		at = (uint64_t)ts.tv_nsec + ns->ns_wb_ms * 1000000ull;
		ts.tv_sec += (time_t)(at / 1000000000ull);
		ts.tv_nsec = (long)(at % 1000000000ull);
		pthread_cond_timedwait(&ns->ns_wb_cond, &ns->ns_cache_lock,
				       &ts);
		if (ns->ns_wb_stop)
			continue;
		pthread_mutex_unlock(&ns->ns_cache_lock);
		ns_writeback_all(ns); /* a failure stays dirty: next round */
		ns_pend_reap(ns);     /* an idle mount frees what is STABLE */
		pthread_mutex_lock(&ns->ns_cache_lock);
	}
	pthread_mutex_unlock(&ns->ns_cache_lock);
	return NULL;
}

int ns_writeback_start(struct ns *ns)
{
	int rc = pthread_create(&ns->ns_wb_thread, NULL, ns_wb_main, ns);

	if (rc != 0)
		return ns_err(-rc, "mount: writeback thread: %s", strerror(rc));
	ns->ns_wb_started = true;
	return 0;
}

void ns_writeback_stop(struct ns *ns)
{
	if (!ns->ns_wb_started)
		return;
	pthread_mutex_lock(&ns->ns_cache_lock);
	ns->ns_wb_stop = true;
	pthread_cond_broadcast(&ns->ns_wb_cond);
	pthread_mutex_unlock(&ns->ns_cache_lock);
	pthread_join(ns->ns_wb_thread, NULL);
	ns->ns_wb_started = false;
}

void ns_files_free(struct ns *ns)
{
	for (uint32_t b = 0; b < NS_FILE_BUCKETS; b++)
		while (ns->ns_files[b] != NULL)
			ns_file_drop_locked(ns, ns->ns_files[b]);
}

/* ----------------------------------------------------------- file data */

/* -EISDIR / -EINVAL unless r is a regular file's. */
static int ns_reg_check(uint64_t ino, const struct ns_inode_rec *r,
			const char *what)
{
	if (S_ISDIR(r->it_mode))
		return ns_err(-EISDIR, "%s: inode %#" PRIx64 " is a directory",
			      what, ino);
	if (!S_ISREG(r->it_mode))
		return ns_err(-EINVAL, "%s: inode %#" PRIx64 " is not a "
			      "regular file", what, ino);
	return 0;
}

/* Open the data object id of inode ino into a new shared handle. */
static int ns_objh_open(struct ns *ns, uint64_t ino, const struct clovis_id *id,
			struct ns_objh **out)
{
	char ids[CLOVIS_ID_STR_LEN];
	struct ns_objh *oh = calloc(1, sizeof *oh);
	struct clovis_op *op;
	int rc;

	if (oh == NULL)
		return ns_err(-ENOMEM, "inode %#" PRIx64 ": no memory", ino);
	oh->oh_refs = 1;
	rc = clovis_obj_init(&oh->oh_obj, &ns->ns_co.co_realm, id, NULL);
	if (rc == 0)
		rc = clovis_entity_op(&oh->oh_obj.ob_entity, CLOVIS_EO_OPEN,
				      &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0) {
		free(oh);
		return ns_err(rc == -ENOENT ? -EIO : rc, "inode %#" PRIx64
			      ": data object %s: %s", ino,
			      clovis_id_format(id, ids), clovis_errmsg());
	}
	*out = oh;
	return 0;
}

/* Set f's data fields from its inode's record r. */
static int ns_file_fill(struct ns *ns, struct ns_file *f,
			const struct ns_inode_rec *r)
{
	int rc = 0;

	f->f_bshift = r->it_block_shift ? r->it_block_shift
					: ns->ns_sb.sb_block_shift;
	if (r->it_flags & NS_IF_DATA)
		rc = ns_objh_open(ns, f->f_ino, &r->it_data, &f->f_objh);
	if (rc != 0)
		return rc;
	if (f->f_objh != NULL) {
		f->f_bshift = f->f_objh->oh_obj.ob_attr.oa_block_shift;
		f->f_hw_blocks = f->f_objh->oh_obj.ob_attr.oa_size_blocks;
		f->f_layout = f->f_objh->oh_obj.ob_attr.oa_layout;
	}
	pthread_mutex_lock(&ns->ns_cache_lock);
	if (!f->f_has_size) {
		f->f_size = r->it_size;
		f->f_has_size = true;
	}
	f->f_loaded = true;
	pthread_mutex_unlock(&ns->ns_cache_lock);
	return 0;
}

/* Regular file ino's entry with its data fields (ino's lock held
 * exclusive). */
static int ns_file_load(struct ns *ns, uint64_t ino, const char *what,
			struct ns_file **out)
{
	struct ns_inode_rec r;
	struct ns_file *f;
	int rc;

	pthread_mutex_lock(&ns->ns_cache_lock);
	f = ns_file_get_locked(ns, ino);
	pthread_mutex_unlock(&ns->ns_cache_lock);
	if (f == NULL)
		return ns_err(-ENOMEM, "%s: inode %#" PRIx64 ": no memory",
			      what, ino);
	if (f->f_loaded) {
		*out = f;
		return 0;
	}
	rc = ns_inode_get(ns, ino, &r, NULL);
	if (rc == 0)
		rc = ns_reg_check(ino, &r, what);
	if (rc == 0)
		rc = ns_file_fill(ns, f, &r);
	if (rc != 0) {
		pthread_mutex_lock(&ns->ns_cache_lock);
		if (f->f_dirty == 0)
			ns_file_drop_locked(ns, f);
		pthread_mutex_unlock(&ns->ns_cache_lock);
		return rc;
	}
	*out = f;
	return 0;
}

/* f's data object is oh (a reference handed over). */
static void ns_file_set_obj(struct ns_file *f, struct ns_objh *oh)
{
	f->f_objh = oh;
	f->f_bshift = oh->oh_obj.ob_attr.oa_block_shift;
	f->f_hw_blocks = oh->oh_obj.ob_attr.oa_size_blocks;
	f->f_layout = oh->oh_obj.ob_attr.oa_layout;
}

/* The dtx of a first write: CREATE of oh's object, the record r naming
 * it.  *bad: its member that failed. */
static int ns_data_create_tx(struct ns *ns, uint64_t ino,
			     struct ns_objh *oh, struct ns_inode_rec *r,
			     bool *exists)
{
	struct ns_tx t;
	int m, rc;

	r->it_flags |= NS_IF_DATA;
	r->it_data = oh->oh_obj.ob_entity.en_id;
	r->it_block_shift = oh->oh_obj.ob_attr.oa_block_shift;
	ns_tx_init(ns, &t);
	ns_tx_objh(&t, oh);
	m = ns_tx_ent(&t, &oh->oh_obj.ob_entity, CLOVIS_EO_CREATE);
	ns_tx_inode_put(&t, ino, r, NULL, true);
	rc = ns_tx_commit(&t, "write: data object");
	*exists = rc == -EEXIST && t.t_bad == m;
	return rc;
}

/* The first write: make the data object and name it in the record, in
 * one dtx.  An object already there under the id (another mount's first
 * write won the race) is opened and named instead. */
static int ns_data_create(struct ns *ns, uint64_t ino, struct ns_file *f)
{
	const struct ns_super *sb = &ns->ns_sb;
	struct clovis_obj_attr a = {.oa_block_shift = sb->sb_block_shift,
				    .oa_layout = sb->sb_layout,
				    .oa_tier = sb->sb_tier};
	struct clovis_id id = {NS_HI_DATA, ino};
	struct ns_objh *oh = calloc(1, sizeof *oh);
	struct ns_inode_rec r;
	struct ns_tx t;
	bool exists = false;
	int rc;

	if (oh == NULL)
		return ns_err(-ENOMEM, "write: inode %#" PRIx64 ": no memory",
			      ino);
	oh->oh_refs = 1;
	rc = ns_inode_get(ns, ino, &r, NULL);
	if (rc == 0 && r.it_block_shift != 0) /* its own, or its directory's */
		a.oa_block_shift = r.it_block_shift;
	if (rc == 0) {
		rc = clovis_obj_init(&oh->oh_obj, &ns->ns_co.co_realm, &id, &a);
		if (rc != 0)
			rc = ns_err(rc, "write: inode %#" PRIx64 ": %s", ino,
				    clovis_errmsg());
	}
	if (rc == 0)
		rc = ns_data_create_tx(ns, ino, oh, &r, &exists);
	if (exists) {
		ns_objh_put(oh);
		oh = NULL;
		rc = ns_objh_open(ns, ino, &id, &oh);
		if (rc == 0) {
			ns_tx_init(ns, &t);
			ns_tx_inode_put(&t, ino, &r, NULL, true);
			rc = ns_tx_commit(&t, "write: data object");
		}
	}
	if (rc != 0) {
		ns_objh_put(oh);
		return rc;
	}
	ns_file_set_obj(f, oh);
	return 0;
}

/*
 * The blocks one op moves for bytes [pos, end): a partial first block
 * (s_head) and a partial last one (s_tail) go through block buffers, the
 * whole blocks between straight from or to the caller's buffer.
 */
struct ns_span {
	uint32_t s_shift;
	uint64_t s_pos, s_end;
	uint64_t s_fb, s_nb;      /* blocks [s_fb, s_fb + s_nb) */
	bool s_head, s_tail;
	uint64_t s_mid_nb;        /* whole blocks after the head */
};

static void ns_span_init(struct ns_span *s, uint32_t shift, uint64_t pos,
			 uint64_t end)
{
	uint64_t bs = 1ull << shift, lb = (end - 1) >> shift;

	s->s_shift = shift;
	s->s_pos = pos;
	s->s_end = end;
	s->s_fb = pos >> shift;
	s->s_nb = lb - s->s_fb + 1;
	s->s_head = pos != s->s_fb << shift || end < (s->s_fb + 1) * bs;
	s->s_tail = s->s_nb > 1 && end != (lb + 1) * bs;
	s->s_mid_nb = s->s_nb - s->s_head - s->s_tail;
}

/* The end of the first op of [pos, end): at most CLOVIS_OP_BYTES_MAX. */
static uint64_t ns_span_cut(uint32_t shift, uint64_t pos, uint64_t end)
{
	uint64_t max_nb = CLOVIS_OP_BYTES_MAX >> shift;
	uint64_t cut = ((pos >> shift) + max_nb) << shift;

	return end < cut ? end : cut;
}

/* The buffer vector of s: head block, the caller's whole blocks (buf is
 * byte s_pos), tail block; in memory of t. */
static struct clovis_bufvec *ns_span_bufvec(struct ns_tx *t,
					    const struct ns_span *s,
					    void *head, char *buf, void *tail)
{
	uint64_t bs = 1ull << s->s_shift;
	struct clovis_bufvec *bv = ns_tx_mem(t, sizeof *bv + 3 *
					     (sizeof(void *) + sizeof(size_t)));
	uint32_t n = 0;

	if (bv == NULL)
		return NULL;
	bv->bv_buf = (void **)(bv + 1);
	bv->bv_len = (size_t *)(bv->bv_buf + 3);
	if (s->s_head) {
		bv->bv_buf[n] = head;
		bv->bv_len[n++] = bs;
	}
	if (s->s_mid_nb > 0) {
		bv->bv_buf[n] = buf + (((s->s_fb + s->s_head) << s->s_shift) -
				       s->s_pos);
		bv->bv_len[n++] = s->s_mid_nb << s->s_shift;
	}
	if (s->s_tail) {
		bv->bv_buf[n] = tail;
		bv->bv_len[n++] = bs;
	}
	bv->bv_nr = n;
	return bv;
}

/* READ blocks [blk, blk + nr) of oh into the buffers of bv (synchronous). */
static int ns_obj_read(struct ns_objh *oh, uint64_t blk, uint64_t nr,
		       struct clovis_bufvec *bv)
{
	struct clovis_extvec ev = {1, &blk, &nr};
	struct clovis_op *op;
	const struct clovis_id *id = &oh->oh_obj.ob_entity.en_id;
	char ids[CLOVIS_ID_STR_LEN];
	int rc = clovis_obj_op(&oh->oh_obj, CLOVIS_OC_READ, &ev, bv, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		return ns_err(rc, "object %s: READ of blocks [%" PRIu64 ", +%"
			      PRIu64 "): %s", clovis_id_format(id, ids), blk,
			      nr, clovis_errmsg());
	return 0;
}

/* Block blk of f as its file has it: read when it may hold data, bytes
 * past the size zeroed (old data of a size lost in a crash).  buf is a
 * zeroed block. */
static int ns_block_get(struct ns_file *f, uint64_t blk, uint64_t size,
			void *buf)
{
	uint64_t bs = 1ull << f->f_bshift, start = blk << f->f_bshift;
	size_t len = bs;
	struct clovis_bufvec bv = {1, &buf, &len};
	int rc;

	if (f->f_objh == NULL || blk >= f->f_hw_blocks || start >= size)
		return 0;
	rc = ns_obj_read(f->f_objh, blk, 1, &bv);
	if (rc == 0 && size < start + bs)
		memset((char *)buf + (size - start), 0, start + bs - size);
	return rc;
}

/* WRITE span s of f (data at buf, the span's first byte), patching its
 * partial blocks: one op, tracked.  Lock held exclusive. */
static int ns_write_span(struct ns *ns, struct ns_file *f,
			 const struct ns_span *s, const char *buf)
{
	uint64_t bs = 1ull << s->s_shift, lb = s->s_fb + s->s_nb - 1;
	struct clovis_bufvec *bv;
	char *head = NULL, *tail = NULL;
	struct ns_tx t;
	int rc = 0;

	ns_tx_init(ns, &t);
	if (s->s_head && (head = ns_tx_mem(&t, bs)) != NULL) {
		uint64_t o = s->s_pos - (s->s_fb << s->s_shift);
		uint64_t n = s->s_end - s->s_pos < bs - o ? s->s_end - s->s_pos
							  : bs - o;

		rc = ns_block_get(f, s->s_fb, f->f_size, head);
		memcpy(head + o, buf, n);
	}
	if (rc == 0 && s->s_tail && (tail = ns_tx_mem(&t, bs)) != NULL) {
		rc = ns_block_get(f, lb, f->f_size, tail);
		memcpy(tail, buf + ((lb << s->s_shift) - s->s_pos),
		       s->s_end - (lb << s->s_shift));
	}
	bv = ns_span_bufvec(&t, s, head, (char *)buf, tail);
	if (rc == 0 && bv != NULL)
		ns_tx_obj(&t, f->f_objh, CLOVIS_OC_WRITE, s->s_fb, s->s_nb, bv,
			  CLOVIS_OF_HERE);
	if (rc != 0)
		ns_tx_abort(&t);
	else
		rc = ns_tx_commit(&t, "write");
	if (rc == 0 && f->f_hw_blocks < lb + 1)
		f->f_hw_blocks = lb + 1;
	return rc;
}

/* Commit t holding one op on f's object (its own change). */
static int ns_obj_change(struct ns *ns, struct ns_file *f,
			 enum clovis_obj_opcode oc, uint64_t blk, uint64_t nr,
			 void *block)
{
	size_t len = 1ull << f->f_bshift;
	struct clovis_bufvec *bv = NULL;
	struct ns_tx t;
	void *buf;

	ns_tx_init(ns, &t);
	if (block != NULL && (bv = ns_tx_mem(&t, sizeof *bv + sizeof(void *) +
					     sizeof(size_t) + len)) != NULL) {
		bv->bv_nr = 1;
		bv->bv_buf = (void **)(bv + 1);
		bv->bv_len = (size_t *)(bv->bv_buf + 1);
		buf = bv->bv_len + 1;
		memcpy(buf, block, len);
		bv->bv_buf[0] = buf;
		bv->bv_len[0] = len;
	}
	ns_tx_obj(&t, f->f_objh, oc, blk, nr, bv, 0);
	return ns_tx_commit(&t, oc == CLOVIS_OC_FREE ? "free" : "zero");
}

/*
 * Bytes [from, to) join the file (a write starting past its end when
 * write_follows, a truncate up otherwise): where its object may hold old
 * data there (a size lost in a crash), zero the partial block and free
 * the whole ones.  A write's own first block is rewritten whole by it.
 */
static int ns_zero_gap(struct ns *ns, struct ns_file *f, uint64_t from,
		       uint64_t to, bool write_follows)
{
	uint32_t sh = f->f_bshift;
	uint64_t bs = 1ull << sh, blk = from >> sh, end;
	int rc = 0;

	if (f->f_objh == NULL || from >= to)
		return 0;
	if ((from & (bs - 1)) != 0) {
		bool rmw = write_follows && to >> sh == blk; /* the write's */

		if (blk < f->f_hw_blocks && !rmw) {
			void *b = calloc(1, bs);

			rc = b == NULL ? ns_err(-ENOMEM, "zero: no memory")
				       : ns_block_get(f, blk, from, b);
			if (rc == 0)
				rc = ns_obj_change(ns, f, CLOVIS_OC_WRITE, blk,
						   1, b);
			free(b);
		}
		blk++;
	}
	end = write_follows ? to >> sh : (to + bs - 1) >> sh;
	if (end > f->f_hw_blocks)
		end = f->f_hw_blocks;
	if (rc == 0 && blk < end)
		rc = ns_obj_change(ns, f, CLOVIS_OC_FREE, blk, end - blk, NULL);
	return rc;
}

/*
 * Before a write past f's cached end zeroes the gap: the size another
 * mount wrote back since f was loaded (its data is in the gap, not old
 * data of a size lost in a crash).  Blocks up to that size may hold data:
 * f_hw_blocks, an upper bound of them, grows to cover it.
 */
static int ns_size_refresh(struct ns *ns, uint64_t ino, struct ns_file *f)
{
	struct ns_inode_rec r;
	uint64_t bs = 1ull << f->f_bshift, blocks;
	int rc = ns_inode_get(ns, ino, &r, NULL);

	if (rc != 0 || r.it_size <= f->f_size)
		return rc;
	blocks = (r.it_size + bs - 1) >> f->f_bshift;
	pthread_mutex_lock(&ns->ns_cache_lock);
	f->f_size = r.it_size;
	if (f->f_hw_blocks < blocks)
		f->f_hw_blocks = blocks;
	pthread_mutex_unlock(&ns->ns_cache_lock);
	return 0;
}

/* The size and times a write leaves in the cache. */
static void ns_file_wrote(struct ns *ns, struct ns_file *f, uint64_t end)
{
	uint64_t now = ns_now_ns();

	pthread_mutex_lock(&ns->ns_cache_lock);
	if (end > f->f_size) {
		f->f_size = end;
		f->f_dirty |= NS_FD_SIZE;
	}
	f->f_mtime_ns = f->f_ctime_ns = now;
	f->f_dirty |= NS_FD_MTIME | NS_FD_CTIME;
	pthread_mutex_unlock(&ns->ns_cache_lock);
}

/* The write under ino's lock: the file loaded, its object made, the gap
 * past its end zeroed, then the spans.  Returns bytes written or rc. */
static ssize_t ns_write_locked(struct ns *ns, uint64_t ino, const char *buf,
			       size_t len, uint64_t off)
{
	uint64_t pos = off, end = off + len;
	struct ns_file *f;
	int rc = ns_file_load(ns, ino, "write", &f);

	if (rc == 0 && f->f_objh == NULL)
		rc = ns_data_create(ns, ino, f);
	if (rc == 0 && off > f->f_size)
		rc = ns_size_refresh(ns, ino, f);
	if (rc == 0 && off > f->f_size)
		rc = ns_zero_gap(ns, f, f->f_size, off, true);
	while (rc == 0 && pos < end) {
		struct ns_span s;

		ns_span_init(&s, f->f_bshift, pos,
			     ns_span_cut(f->f_bshift, pos, end));
		rc = ns_write_span(ns, f, &s, buf + (pos - off));
		if (rc == 0) {
			pos = s.s_end;
			ns_file_wrote(ns, f, pos);
		}
	}
	return pos > off ? (ssize_t)(pos - off) : rc;
}

ssize_t ns_write(struct ns *ns, uint64_t ino, const void *buf, size_t len,
		 uint64_t off)
{
	struct ns_lockset ls;
	ssize_t rc;

	if (ns == NULL || (buf == NULL && len > 0))
		return ns_err(-EINVAL, "write: NULL argument");
	rc = ns_rw_check(ns, "write");
	if (rc != 0)
		return rc;
	if (off > NS_FILE_MAX || len > NS_FILE_MAX - off)
		return ns_err(-EFBIG, "write: inode %#" PRIx64 ": %zu bytes at "
			      "%" PRIu64 " go past NS_FILE_MAX", ino, len, off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	ns_ls_lock_one(ns, &ls, ino, true);
	if (len == 0) {
		struct ns_inode_rec r;

		rc = ns_inode_get(ns, ino, &r, NULL);
		if (rc == 0)
			rc = ns_reg_check(ino, &r, "write");
	} else {
		rc = ns_write_locked(ns, ino, buf, len, off);
	}
	ns_ls_unlock(ns, &ls);
	return rc;
}

/* What a read needs of a file, from the cache or the store. */
struct ns_rstate {
	uint64_t rs_size;
	struct ns_objh *rs_oh;  /* a reference, or NULL: no data yet */
	uint32_t rs_shift;
	uint64_t rs_hw;
};

static int ns_read_state(struct ns *ns, uint64_t ino, struct ns_rstate *st)
{
	struct ns_inode_rec r;
	struct ns_file *f;
	int rc;

	pthread_mutex_lock(&ns->ns_cache_lock);
	f = ns_file_find(ns, ino);
	if (f != NULL && f->f_loaded) {
		*st = (struct ns_rstate){f->f_size, f->f_objh, f->f_bshift,
					 f->f_hw_blocks};
		if (st->rs_oh != NULL)
			__atomic_add_fetch(&st->rs_oh->oh_refs, 1,
					   __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&ns->ns_cache_lock);
	if (f != NULL && f->f_loaded)
		return 0;
	memset(st, 0, sizeof *st);
	rc = ns_inode_get(ns, ino, &r, NULL);
	if (rc == 0)
		rc = ns_reg_check(ino, &r, "read");
	if (rc == 0 && (r.it_flags & NS_IF_DATA))
		rc = ns_objh_open(ns, ino, &r.it_data, &st->rs_oh);
	if (rc != 0)
		return rc;
	st->rs_size = r.it_size;
	if (st->rs_oh != NULL) {
		st->rs_shift = st->rs_oh->oh_obj.ob_attr.oa_block_shift;
		st->rs_hw = st->rs_oh->oh_obj.ob_attr.oa_size_blocks;
	}
	return 0;
}

/* Read span s of st's object into buf (the span's first byte). */
static int ns_read_span(const struct ns_rstate *st, const struct ns_span *s,
			char *buf)
{
	uint64_t bs = 1ull << s->s_shift, lb = s->s_fb + s->s_nb - 1;
	char *head = s->s_head ? malloc(bs) : NULL;
	char *tail = s->s_tail ? malloc(bs) : NULL;
	void *bp[3];
	size_t bl[3];
	struct clovis_bufvec bv = {0, bp, bl};
	int rc = 0;

	if ((s->s_head && head == NULL) || (s->s_tail && tail == NULL))
		rc = ns_err(-ENOMEM, "read: no memory");
	if (s->s_head) {
		bp[bv.bv_nr] = head;
		bl[bv.bv_nr++] = bs;
	}
	if (s->s_mid_nb > 0) {
		bp[bv.bv_nr] = buf + (((s->s_fb + s->s_head) << s->s_shift) -
				      s->s_pos);
		bl[bv.bv_nr++] = s->s_mid_nb << s->s_shift;
	}
	if (s->s_tail) {
		bp[bv.bv_nr] = tail;
		bl[bv.bv_nr++] = bs;
	}
	if (rc == 0)
		rc = ns_obj_read(st->rs_oh, s->s_fb, s->s_nb, &bv);
	if (rc == 0 && s->s_head) {
		uint64_t o = s->s_pos - (s->s_fb << s->s_shift);

		memcpy(buf, head + o, s->s_end - s->s_pos < bs - o ?
		       s->s_end - s->s_pos : bs - o);
	}
	if (rc == 0 && s->s_tail)
		memcpy(buf + ((lb << s->s_shift) - s->s_pos), tail,
		       s->s_end - (lb << s->s_shift));
	free(head);
	free(tail);
	return rc;
}

/* Bytes [off, off + n) of the file (inside its size) into buf: from the
 * object where it has blocks, zeros past them. */
static int ns_read_data(const struct ns_rstate *st, char *buf, uint64_t n,
			uint64_t off)
{
	uint64_t end = off + n, pos = off, hw_end;
	int rc = 0;

	hw_end = st->rs_oh != NULL ? st->rs_hw << st->rs_shift : 0;
	if (hw_end < end) {
		uint64_t z = hw_end > off ? hw_end : off;

		memset(buf + (z - off), 0, end - z);
		end = z;
	}
	while (rc == 0 && pos < end) {
		struct ns_span s;

		ns_span_init(&s, st->rs_shift, pos,
			     ns_span_cut(st->rs_shift, pos, end));
		rc = ns_read_span(st, &s, buf + (pos - off));
		pos = s.s_end;
	}
	return rc;
}

ssize_t ns_read(struct ns *ns, uint64_t ino, void *buf, size_t len,
		uint64_t off)
{
	struct ns_rstate st;
	struct ns_lockset ls;
	uint64_t n = 0;
	int rc;

	if (ns == NULL || (buf == NULL && len > 0))
		return ns_err(-EINVAL, "read: NULL argument");
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	ns_ls_lock_one(ns, &ls, ino, false);
	rc = ns_read_state(ns, ino, &st);
	if (rc == 0 && off < st.rs_size) {
		n = st.rs_size - off < len ? st.rs_size - off : len;
		rc = ns_read_data(&st, buf, n, off);
	}
	ns_ls_unlock(ns, &ls);
	ns_objh_put(st.rs_oh); /* NULL when ns_read_state() failed */
	return rc != 0 ? rc : (ssize_t)n;
}

/* ------------------------------------------------------------- truncate */

/* Shrink f to size in t: the blocks past it freed and, for a plain
 * object, its last block's tail zeroed.  Two members of a unit layout
 * over one parity group would fail a dtx: there the tail is left as it
 * is, to be zeroed if the file grows again (ns_zero_gap()), so a failed
 * truncate changes nothing. */
static int ns_shrink_tx(struct ns_file *f, uint64_t size, struct ns_tx *t)
{
	uint32_t sh = f->f_bshift;
	uint64_t bs = 1ull << sh, blk = size >> sh;
	int rc = 0;

	if ((size & (bs - 1)) != 0 && blk < f->f_hw_blocks &&
	    f->f_layout == CLOVIS_LAYOUT_PLAIN) {
		struct clovis_bufvec *bv = ns_tx_mem(t, sizeof *bv +
				sizeof(void *) + sizeof(size_t) + bs);

		if (bv == NULL)
			return t->t_rc;
		bv->bv_nr = 1;
		bv->bv_buf = (void **)(bv + 1);
		bv->bv_len = (size_t *)(bv->bv_buf + 1);
		bv->bv_buf[0] = bv->bv_len + 1;
		bv->bv_len[0] = bs;
		rc = ns_block_get(f, blk, size, bv->bv_buf[0]);
		if (rc == 0)
			rc = ns_tx_obj(t, f->f_objh, CLOVIS_OC_WRITE, blk, 1,
				       bv, 0);
	}
	if ((size & (bs - 1)) != 0)
		blk++;
	if (rc >= 0 && blk < f->f_hw_blocks)
		rc = ns_tx_obj(t, f->f_objh, CLOVIS_OC_FREE, blk,
			       f->f_hw_blocks - blk, NULL, 0);
	return rc < 0 ? ns_tx_fail(t, rc) : 0;
}

int ns_truncate_tx(struct ns *ns, uint64_t ino, struct ns_inode_rec *r,
		   uint64_t size, struct ns_tx *t)
{
	struct ns_file *f;
	int rc = ns_file_load(ns, ino, "truncate", &f);

	if (rc == 0 && size > f->f_size)
		rc = ns_zero_gap(ns, f, f->f_size, size, false);
	else if (rc == 0 && f->f_objh != NULL)
		rc = ns_shrink_tx(f, size, t);
	if (rc != 0)
		return ns_tx_fail(t, rc);
	r->it_size = size;
	return 0;
}

/* ------------------------------------------------------ durability, misc */

int ns_fsync(struct ns *ns, uint64_t ino, bool datasync)
{
	int rc, rc2;

	(void)ino; /* every change of the mount, as ns.h says */
	(void)datasync;
	if (ns == NULL)
		return ns_err(-EINVAL, "fsync: NULL namespace");
	rc = ns_writeback_all(ns);
	rc2 = ns_pend_drain(ns);
	return rc != 0 ? rc : rc2;
}

int ns_release(struct ns *ns, uint64_t ino)
{
	if (ns == NULL)
		return ns_err(-EINVAL, "release: NULL namespace");
	return ns->ns_ro ? 0 : ns_writeback_one(ns, ino);
}

int ns_data_id(struct ns *ns, uint64_t ino, struct clovis_id *id,
	       uint32_t *block_shift)
{
	struct ns_inode_rec r;
	int rc;

	if (ns == NULL || id == NULL || block_shift == NULL)
		return ns_err(-EINVAL, "data_id: NULL argument");
	rc = ns_inode_get(ns, ino, &r, NULL);
	if (rc == 0)
		rc = ns_reg_check(ino, &r, "data_id");
	if (rc == 0 && !(r.it_flags & NS_IF_DATA))
		rc = ns_err(-ENODATA, "data_id: inode %#" PRIx64 " was never "
			    "written", ino);
	if (rc == 0) {
		*id = r.it_data;
		*block_shift = r.it_block_shift;
	}
	return rc;
}

/* --------------------------------------------------- the S3 shared view */

static int ns_lobj_args(struct ns *ns, const char *name,
			const struct clovis_id *obj, uint32_t block_shift,
			uint64_t size, uint32_t mode)
{
	int rc = ns_rw_check(ns, "link_object");

	if (rc == 0 && obj == NULL)
		rc = ns_err(-EINVAL, "link_object: NULL object");
	if (rc == 0 && (block_shift < CLOVIS_BLOCK_SHIFT_MIN ||
			block_shift > CLOVIS_BLOCK_SHIFT_MAX))
		rc = ns_err(-EINVAL, "link_object: block_shift %u",
			    block_shift);
	if (rc == 0 && (mode & S_IFMT) != 0 && (mode & S_IFMT) != S_IFREG)
		rc = ns_err(-EINVAL, "link_object: mode %#o is not a regular "
			    "file's", mode);
	if (rc == 0 && size > NS_FILE_MAX)
		rc = ns_err(-EFBIG, "link_object: size %" PRIu64 " past "
			    "NS_FILE_MAX", size);
	return rc == 0 ? ns_name_check(name) : rc;
}

/* The object exists and has the block size the caller says. */
static int ns_lobj_obj(struct ns *ns, const struct clovis_id *obj,
		       uint32_t block_shift)
{
	char ids[CLOVIS_ID_STR_LEN];
	struct clovis_obj o;
	int rc = clovis_obj_init(&o, &ns->ns_co.co_realm, obj, NULL);

	if (rc == 0)
		rc = ns_ent_sync(&o.ob_entity, CLOVIS_EO_OPEN);
	if (rc != 0)
		return ns_err(rc, "link_object: object %s: %s",
			      clovis_id_format(obj, ids), clovis_errmsg());
	if (o.ob_attr.oa_block_shift != block_shift)
		return ns_err(-EINVAL, "link_object: object %s has blocks of "
			      "2^%u bytes, not 2^%u",
			      clovis_id_format(obj, ids),
			      o.ob_attr.oa_block_shift, block_shift);
	return 0;
}

/* Read parent/name if it exists (*has). */
static int ns_lobj_look(struct ns *ns, uint64_t parent, const char *name,
			struct ns_dirent_rec *de, bool *has)
{
	struct clovis_idx ix;
	int rc = ns_dir_open(ns, parent, &ix);

	*has = false;
	if (rc != 0)
		return rc;
	rc = ns_dirent_read(&ix, parent, name, de);
	*has = rc == 0;
	return rc == -ENOENT ? 0 : rc;
}

/* The dtx of a link_object: the new inode ino (record r), its entry, the
 * replaced file's loss of a link.  -EAGAIN: draw again / look again. */
static int ns_lobj_commit(struct ns *ns, uint64_t parent, const char *name,
			  uint64_t ino, struct ns_inode_rec *r, bool has,
			  uint64_t old, struct ns_inode_rec *or,
			  const char *ot, bool *gone)
{
	struct clovis_idx *ix;
	struct ns_tx t;
	int m_ino, m_de, rc;

	ns_tx_init(ns, &t);
	ns_tx_dir(&t, parent, &ix);
	m_ino = ns_tx_inode_put(&t, ino, r, NULL, false);
	m_de = ns_tx_dirent_put(&t, ix, name, ino, r->it_mode, has);
	if (has)
		ns_tx_unlink_inode(&t, old, or, ot, gone);
	rc = ns_tx_commit(&t, "link_object");
	if (rc == -EEXIST && t.t_bad >= 0 &&
	    (t.t_bad == m_ino || t.t_bad == m_de))
		return -EAGAIN;
	return rc;
}

/* One attempt: the entry looked up, locks taken, looked up again. */
static int ns_lobj_try(struct ns *ns, uint64_t parent, const char *name,
		       struct ns_inode_rec *r, uint64_t *ino)
{
	char ot[NS_SYMLINK_MAX + 1];
	struct ns_dirent_rec de = {0}, de2 = {0};
	struct ns_inode_rec or;
	struct ns_lockset ls;
	bool has, has2, gone = false;
	int rc = ns_lobj_look(ns, parent, name, &de, &has);

	if (rc != 0)
		return rc;
	ns_ls_init(&ls);
	ns_ls_add(&ls, parent, false);
	if (has)
		ns_ls_add(&ls, de.de_ino, true);
	ns_ls_lock(ns, &ls);
	rc = ns_lobj_look(ns, parent, name, &de2, &has2);
	if (rc == 0 && (has2 != has || de2.de_ino != de.de_ino))
		rc = -EAGAIN;
	if (rc == 0 && has)
		rc = ns_inode_get(ns, de.de_ino, &or, ot);
	if (rc == 0 && has && S_ISDIR(or.it_mode))
		rc = ns_err(-EISDIR, "link_object: entry \"%s\" in directory %#"
			    PRIx64 " is a directory", name, parent);
	if (rc == 0 && has && (or.it_flags & NS_IF_DATA) &&
	    clovis_id_cmp(&or.it_data, &r->it_data) == 0)
		rc = ns_err(-EINVAL, "link_object: the object is \"%s\"'s data "
			    "already", name);
	*ino = ns_rand64();
	r->it_gen = ns_rand64();
	if (rc == 0)
		rc = ns_lobj_commit(ns, parent, name, *ino, r, has, de.de_ino,
				    &or, ot, &gone);
	if (rc == 0 && gone)
		ns_file_forget(ns, de.de_ino);
	else if (rc == 0 && has)
		ns_file_touch(ns, de.de_ino, false);
	if (rc == 0)
		ns_file_touch(ns, parent, true);
	ns_ls_unlock(ns, &ls);
	return rc;
}

int ns_link_object(struct ns *ns, uint64_t parent, const char *name,
		   const struct clovis_id *obj, uint32_t block_shift,
		   uint64_t size, uint32_t mode, uint32_t uid, uint32_t gid,
		   struct ns_attr *out)
{
	struct ns_inode_rec r;
	uint64_t ino = 0;
	int rc;

	if (ns == NULL)
		return ns_err(-EINVAL, "link_object: NULL namespace");
	rc = ns_lobj_args(ns, name, obj, block_shift, size, mode);
	if (rc == 0)
		rc = ns_lobj_obj(ns, obj, block_shift);
	if (rc != 0)
		return rc;
	ns_rec_new(&r, S_IFREG | (mode & 07777), uid, gid);
	r.it_flags = NS_IF_DATA;
	r.it_data = *obj;
	r.it_block_shift = block_shift;
	r.it_size = size;
	rc = -EAGAIN;
	for (uint32_t i = 0; rc == -EAGAIN && i < NS_RETRY_MAX; i++)
		rc = ns_lobj_try(ns, parent, name, &r, &ino);
	if (rc == -EAGAIN)
		rc = ns_err(-EAGAIN, "link_object \"%s\": entry or inode "
			    "numbers keep changing", name);
	if (rc == 0 && out != NULL)
		ns_rec_to_attr(ns, ino, &r, out);
	return rc;
}
