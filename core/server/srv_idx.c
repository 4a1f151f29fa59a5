/*
 * srv_idx.c — index replicas on a server: replica records, catch-up from
 * peer replicas, and the index request handlers (see srv.h and
 * docs/cluster.md, "Index replicas").
 *
 * Each index this server holds has a replica record {inc, seq}: inc is the
 * canonical incarnation (the same on every replica, which clients see as
 * the index's ctime: "Incarnations" below), seq counts the updates applied
 * in the first replica's order.  The first replica of an update adds one;
 * a further replica takes the first one's new seq only if it is its own
 * plus one — otherwise it missed something and is marked unverified.
 * The record is stored by a second commit item after the update is
 * durable, so a stored seq never claims more than the records hold.
 *
 * Incarnations: the client that creates an index chooses its incarnation
 * (clovis/cli_cluster.c clu_idx_incarnation(): its clock in ns, above any
 * it chose before; a dtx's CREATE member: from the dtx id) and sends it
 * with the CREATE to every replica; each one, the first included, makes
 * the index with it (srv_ridx_after_update(); the time made here only for
 * a CREATE that carries none).  So one CREATE makes one incarnation on
 * every replica that applies it, whenever it does: a replica slow or
 * frozen while its client timed out on it and made the index on the next
 * replica applies the request late with the incarnation the client was
 * acknowledged, and the catch-up never has to choose between the two (its
 * rule, the peer with the highest seq, ties to ring order, does not know
 * which one was acknowledged).  Two different CREATEs of one id that race
 * can still leave two incarnations (docs/cluster.md "Index incarnations";
 * test: tests/integ/idx_race_test.sh, part 4).
 *
 * Catch-up: an index is verified on the syncer thread before this server
 * reads it or orders an update of it, once per server run and again
 * whenever one of its peer replicas was out of reach since (peers_gen(),
 * fed by a heartbeat to the ring neighbours), a client says it could not
 * reach this server (SRF_VERIFY) or this process stalled (the stall
 * watch, srv_tick_main()): a server cut off or frozen without a restart
 * must not serve what it held before.  Verification: the other
 * replicas' {exists, inc, seq} are asked for (SOP_IDX_STATE), and if a
 * reachable peer is newer (higher seq, another incarnation, or the index is
 * missing here) the index is copied from the newest peer, page by page.
 * An index found here but on no other replica, all of them reachable, was
 * deleted while this server was away: it is deleted here too.  Neither
 * that nor a fresh copy undoes a CREATE or DELETE applied here whose
 * client may not have reached the other replicas yet (idx_ent_keep()).
 *
 * The files (shared declarations in srv_idx_internal.h):
 *  - srv_idx.c: the index request handlers (SOP_IDX, index entity ops,
 *    SOP_IDX_STATE, the versions page of a merge, GET/NEXT answers) and
 *    the entry points of dtx members (srv_ridx_*, for dtm/srv_dtx.c);
 *  - srv_idx_ver.c: replica records, version entries and the digest,
 *    behind marks, the second stage of an update (op tags);
 *  - srv_idx_sync.c: catch-up: engine requests run on the syncer thread,
 *    peer replicas' state, the merge, the verification of one index;
 *  - srv_idx_tomb.c: tombstone collection;
 *  - srv_idx_syncer.c: the syncer, heartbeat and stall-watch threads, and
 *    the parking of requests for the syncer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/srv_idx_internal.h"

/* ------------------------------------------------------- handlers */

/* The incarnation clients know the index by (local ctime if no record). */
static uint64_t idx_inc(struct ridx *ri, const struct meta_ent *me)
{
	return ri->ri_exists ? ri->ri_inc : me->me_ctime_ns;
}

/* Check the handle's incarnation and point the request at the local one. */
static int idx_prepare(struct srv *s, struct srv_op *so)
{
	struct eng_req *r = &so->so_m.mr_req;
	struct meta_ent me;
	int rc = ridx_local(s, &r->er_id, &me);

	if (rc == -ENOENT)
		return err_set(-ENOENT, "index %s does not exist",
			       eng_id_str(&r->er_id));
	if (rc != 0)
		return rc;
	if (!(so->so_m.mr_rflags & SRF_INTERNAL) &&
	    so->so_m.mr_incarnation != idx_inc(so->so_ridx, &me))
		return err_set(-ENOENT, "index %s was deleted (and made again) "
			       "since this handle opened it",
			       eng_id_str(&r->er_id));
	if (!so->so_ridx->ri_exists) {
		pthread_mutex_lock(&s->s_rlock);
		so->so_ridx->ri_inc = me.me_ctime_ns;
		pthread_mutex_unlock(&s->s_rlock);
	}
	r->er_ent.me_ctime_ns = me.me_ctime_ns;
	return 0;
}

/* A client's request of an index this replica missed acknowledged updates
 * of and could not catch up on (no peer that has them reachable): it
 * serves none of it.  -ESTALE sends the client on to the next replica. */
static int idx_behind_check(struct srv *s, struct srv_op *so)
{
	struct ridx *ri = so->so_ridx;
	uint64_t t, q;
	bool behind;

	pthread_mutex_lock(&s->s_rlock);
	behind = ri->ri_behind;
	t = ri->ri_nterm;
	q = ri->ri_nseq;
	pthread_mutex_unlock(&s->s_rlock);
	if (!behind)
		return 0;
	return err_set(-ESTALE, "server %s: index %s: this replica missed "
		       "updates (up to term %" PRIu64 " seq %" PRIu64 ") and "
		       "could not catch up yet; try another replica",
		       s->s_me->cs_name, eng_id_str(&ri->ri_id), t, q);
}

/* A client's PUT or DEL of an index no peer replica answered for: this
 * server may be the one cut off, and must not order updates from what it
 * holds.  -ESTALE sends the client on to the next replica. */
static int idx_lonely_check(struct srv *s, struct srv_op *so)
{
	struct eng_req *r = &so->so_m.mr_req;
	bool lonely;
	int rc;

	if (so->so_m.mr_rflags & (SRF_REPLICA | SRF_INTERNAL))
		return 0;
	rc = idx_behind_check(s, so);
	if (rc != 0 || (r->er_kind != ER_IDX_PUT && r->er_kind != ER_IDX_DEL))
		return rc;
	pthread_mutex_lock(&s->s_rlock);
	lonely = so->so_ridx->ri_lonely;
	pthread_mutex_unlock(&s->s_rlock);
	if (!lonely)
		return 0;
	return err_set(-ESTALE, "server %s: index %s: no other replica "
		       "reachable to verify it against; not ordering updates",
		       s->s_me->cs_name, eng_id_str(&r->er_id));
}

/* Test builds: fault srv.idx.read.slow holds a client's GET or NEXT for
 * the call timeout and 500 ms more before serving it, so that the client
 * gives up on it (tests/integ/idx_tomb_test.sh, "Reads tried once more"). */
static void idx_read_fault(struct srv *s, struct srv_op *so)
{
	uint32_t kind = so->so_m.mr_req.er_kind;
	uint32_t ms = s->s_conf->cc_call_ms + 500;

	if ((kind != ER_IDX_GET && kind != ER_IDX_NEXT) ||
	    (so->so_m.mr_rflags & (SRF_REPLICA | SRF_INTERNAL)) ||
	    !FAULT_HIT("srv.idx.read.slow"))
		return;
	LOG_INFO("index %s: fault srv.idx.read.slow: %s held %u ms",
		 eng_id_str(&so->so_m.mr_req.er_id),
		 kind == ER_IDX_GET ? "GET" : "NEXT", ms);
	usleep(ms * 1000u);
}

void srv_idx_go(struct srv *s, struct srv_op *so)
{
	uint32_t kind = so->so_m.mr_req.er_kind;
	int rc;

	idx_read_fault(s, so);
	rc = idx_lonely_check(s, so);

	if (rc == 0)
		rc = idx_prepare(s, so);
	if (rc == 0 && (kind == ER_IDX_PUT || kind == ER_IDX_DEL)) {
		uint32_t f = so->so_m.mr_rflags;

		if (!(f & (SRF_REPLICA | SRF_INTERNAL))) {
			so->so_fan_want = so->so_m.mr_fan &
					  ~(1ull << s->s_self);
			rc = ridx_claim(s, so->so_ridx);
		} else if ((f & SRF_REPLICA) && so->so_m.mr_seq != 0 &&
			   so->so_m.mr_term != 0) {
			/* a copy with its version: not over a newer one a
			 * merge took */
			so->so_m.mr_req.er_guard = ridx_copy_guard;
			so->so_m.mr_req.er_guard_arg = &so->so_m;
		}
		/* what it orders, or a copy of it: records, replica record
		 * and versions in one commit (srv_internal.h
		 * srv_ridx_one_apply()) */
		if (!(f & SRF_INTERNAL) &&
		    so->so_m.mr_req.er_ci.ci_hold == NULL)
			so->so_m.mr_req.er_ci.ci_also = srv_ridx_one_apply;
	}

	if (rc != 0)
		srv_reply_err(so, rc);
	else
		srv_run_prepared(so);
}

/* srv_idx_versions()'s page, filled by vpage_one(). */
struct vpage {
	MDB_txn *vp_txn;
	struct meta *vp_m;
	const struct st_id *vp_id;
	uint8_t *vp_ib;           /**< index key buffer */
	const void *vp_skip;      /**< the start key, not listed (or NULL) */
	size_t vp_skip_len;
	uint32_t vp_cap;
	uint32_t vp_nr;
	uint32_t *vp_kl, *vp_vl;
	int32_t *vp_rcs;
	uint64_t *vp_vt, *vp_vs, *vp_vg;
	uint8_t *vp_kb, *vp_vb;
	size_t vp_kbytes, vp_vbytes, vp_vcap;
	bool vp_full;             /**< stopped: the page is full */
	int vp_rc;                /**< -ENOMEM */
};

/* One version entry of the page: its key, version and value. */
static int vpage_one(void *arg, const struct meta_rec *r)
{
	struct vpage *p = arg;
	const uint8_t *key;
	size_t klen;
	struct meta_rec iv = {NULL, 0, NULL, 0};
	struct vent ve;
	uint32_t nr = p->vp_nr;

	if (!ridx_vent_decode(r, &ve, &key, &klen))
		return META_SCAN_NEXT;
	if (p->vp_skip != NULL) {
		bool same = klen == p->vp_skip_len &&
			    memcmp(key, p->vp_skip, klen) == 0;

		p->vp_skip = NULL; /* only the first can be the start key */
		if (same)
			return META_SCAN_NEXT;
	}
	if (nr >= p->vp_cap) {
		p->vp_full = true;
		return META_SCAN_STOP;
	}
	if (!ridx_vent_tomb(&ve)) {
		meta_idx_key(p->vp_ib, p->vp_id, key, klen);
		if (meta_get(p->vp_txn, p->vp_m, META_T_IDX, p->vp_ib,
			     16 + klen, &iv, NULL) != 0)
			return META_SCAN_NEXT; /* not durable here */
	}
	if (nr > 0 && p->vp_kbytes + p->vp_vbytes + klen + iv.mc_vlen >
		      MSG_REPLY_BUDGET) {
		p->vp_full = true;
		return META_SCAN_STOP;
	}
	if (p->vp_vbytes + iv.mc_vlen > p->vp_vcap) {
		size_t nc = (p->vp_vbytes + iv.mc_vlen) * 2 + 1;
		void *np = realloc(p->vp_vb, nc);

		if (np == NULL)
			return p->vp_rc = err_set(-ENOMEM, "index %s: versions "
						  "page", eng_id_str(p->vp_id));
		p->vp_vb = np;
		p->vp_vcap = nc;
	}
	memcpy(p->vp_kb + p->vp_kbytes, key, klen);
	p->vp_kbytes += klen;
	if (iv.mc_vlen > 0)
		memcpy(p->vp_vb + p->vp_vbytes, iv.mc_val, iv.mc_vlen);
	p->vp_vbytes += iv.mc_vlen;
	p->vp_kl[nr] = (uint32_t)klen;
	p->vp_vl[nr] = (uint32_t)iv.mc_vlen;
	p->vp_rcs[nr] = ridx_vent_tomb(&ve) ? 1 : 0;
	p->vp_vt[nr] = ve.ve_term;
	p->vp_vg[nr] = ridx_vent_tag(&ve);
	p->vp_vs[nr] = ve.ve_seq;
	p->vp_nr = nr + 1;
	return META_SCAN_NEXT;
}

/* An internal NEXT with SRF_VERSIONS: a page of id's version entries
 * after the start key, each with its (term, seq) and, unless a tombstone
 * (rcs 1), the record's value (catch-up merge, idx_merge()).  The entries
 * of the ordinary form come in key order, then those of the long form
 * (keys of ST_KEY_MAX bytes) in the order of that form; a start key of
 * ST_KEY_MAX bytes resumes in the second. */
static void srv_idx_versions(struct srv *s, struct srv_op *so)
{
	struct msg_req *m = &so->so_m;
	const struct st_id *id = &m->mr_req.er_id;
	struct meta *mt = eng_meta(s->s_eng);
	uint32_t cap = m->mr_nr < SRV_SYNC_PAGE ? m->mr_nr : SRV_SYNC_PAGE;
	uint8_t pre[VKEY_HEAD], sk[VKEY_HEAD + ST_KEY_MAX];
	uint8_t ib[16 + ST_KEY_MAX];
	Reply rp = REPLY__INIT;
	struct vpage p = {
		.vp_m = mt, .vp_id = id, .vp_ib = ib, .vp_cap = cap,
		.vp_kl = calloc(cap ? cap : 1, sizeof(uint32_t)),
		.vp_vl = calloc(cap ? cap : 1, sizeof(uint32_t)),
		.vp_rcs = calloc(cap ? cap : 1, sizeof(int32_t)),
		.vp_vt = calloc(cap ? cap : 1, sizeof(uint64_t)),
		.vp_vs = calloc(cap ? cap : 1, sizeof(uint64_t)),
		.vp_vg = calloc(cap ? cap : 1, sizeof(uint64_t)),
		.vp_kb = malloc((size_t)(cap ? cap : 1) * ST_KEY_MAX)};
	uint8_t *out = NULL;
	size_t pl, sl;
	bool long_start = false;
	int rc = 0;

	if (p.vp_kl == NULL || p.vp_vl == NULL || p.vp_rcs == NULL ||
	    p.vp_vt == NULL || p.vp_vs == NULL || p.vp_vg == NULL ||
	    p.vp_kb == NULL) {
		rc = err_set(-ENOMEM, "index %s: versions page", eng_id_str(id));
		goto out;
	}
	pl = VKEY_HEAD;
	ridx_vpre(pre, id, false);
	memcpy(sk, pre, pl);
	sl = pl;
	if (!m->mr_start_null) {
		long_start = ridx_vkey(mt, sk, id, m->mr_keys.bv_buf[0],
				       m->mr_keys.bv_len[0], &sl);
		p.vp_skip = m->mr_keys.bv_buf[0];
		p.vp_skip_len = m->mr_keys.bv_len[0];
	}
	rc = meta_rtxn_begin(mt, &p.vp_txn, "index versions page");
	if (rc != 0) {
		p.vp_txn = NULL;
		goto out;
	}
	/* a failure of the store ends the page there */
	for (int f = long_start ? 1 : 0; f < 2 && !p.vp_full && p.vp_rc == 0;
	     f++) {
		ridx_vpre(pre, id, f == 1);
		if (f == 1 && !long_start) {
			memcpy(sk, pre, pl);
			sl = pl;
		}
		(void)meta_scan(p.vp_txn, mt, &(struct meta_scan){
			.ms_table = META_T_SYS, .ms_from = sk, .ms_flen = sl,
			.ms_prefix = pre, .ms_plen = pl, .ms_fn = vpage_one,
			.ms_arg = &p, .ms_what = "index versions page"});
	}
	rc = p.vp_rc;
	if (rc != 0)
		goto out;
	out = malloc(p.vp_kbytes + p.vp_vbytes + 1);
	if (out == NULL) {
		rc = err_set(-ENOMEM, "index %s: versions page", eng_id_str(id));
		goto out;
	}
	memcpy(out, p.vp_kb, p.vp_kbytes);
	if (p.vp_vbytes > 0)
		memcpy(out + p.vp_kbytes, p.vp_vb, p.vp_vbytes);
	rp.recs.data = out;
	rp.recs.len = p.vp_kbytes + p.vp_vbytes;
	rp.n_klen = rp.n_vlen = rp.n_rcs = rp.n_vterm = rp.n_vseq = p.vp_nr;
	rp.n_vtag = p.vp_nr;
	rp.vtag = p.vp_vg;
	rp.klen = p.vp_kl;
	rp.vlen = p.vp_vl;
	rp.rcs = p.vp_rcs;
	rp.vterm = p.vp_vt;
	rp.vseq = p.vp_vs;
	rp.done = p.vp_nr;
out:
	if (p.vp_txn != NULL)
		meta_rtxn_put(mt, p.vp_txn);
	if (rc != 0)
		srv_reply_err(so, rc);
	else
		srv_reply(so, 0, &rp, NULL);
	free(p.vp_kl);
	free(p.vp_vl);
	free(p.vp_rcs);
	free(p.vp_vt);
	free(p.vp_vs);
	free(p.vp_vg);
	free(p.vp_kb);
	free(p.vp_vb);
	free(out);
}

void srv_idx(struct srv *s, struct srv_op *so)
{
	struct msg_req *m = &so->so_m;
	int rc = 0;

	so->so_ridx = ridx_get(s, &m->mr_req.er_id);
	if (so->so_ridx == NULL) {
		srv_reply_err(so, -ENOMEM);
		return;
	}
	if ((m->mr_rflags & SRF_REPLICA) && m->mr_seq == 0)
		rc = err_set(-EINVAL, "request: index %s: replica update "
			     "without seq", eng_id_str(&m->mr_req.er_id));
	/* IdxReq.fan: the servers that get their copy from here */
	if (rc == 0 && s->s_conf->cc_nr_servers < 64 &&
	    (m->mr_fan >> s->s_conf->cc_nr_servers) != 0) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		rc = err_set(-EINVAL, "request: index %s: fan 0x%" PRIx64
			     " names servers beyond the cluster's %u",
			     eng_id_str(&m->mr_req.er_id), m->mr_fan,
			     s->s_conf->cc_nr_servers);
	}
	if (rc == 0 && m->mr_recs == NULL && m->mr_recs_len > 0) {
		m->mr_recs = malloc(m->mr_recs_len);
		rc = m->mr_recs == NULL ? err_set(-ENOMEM, "index records") :
		     rpc_sreq_bulk_pull(so->so_req, 0, m->mr_recs,
					m->mr_recs_len);
		if (rc == 0)
			msg_req_recs_bind(m);
	} else if (rc == 0 && m->mr_recs == NULL) {
		m->mr_recs = malloc(1);
		if (m->mr_recs != NULL)
			msg_req_recs_bind(m);
	}
	if (rc != 0) {
		srv_reply_err(so, rc);
		return;
	}
	if (m->mr_rflags & SRF_VERSIONS)
		srv_idx_versions(s, so);
	else if (srv_needs_sync(s, so))
		srv_park(s, so);
	else
		srv_idx_go(s, so);
}

void srv_idx_ent_go(struct srv *s, struct srv_op *so)
{
	struct eng_req *r = &so->so_m.mr_req;
	struct meta_ent me;
	int rc = 0;

	if (r->er_kind == ER_ENT_OPEN || r->er_kind == ER_ENT_GETATTR ||
	    r->er_kind == ER_ENT_SETATTR) {
		rc = ridx_local(s, &r->er_id, &me);
		if (rc == 0 && !(so->so_m.mr_rflags &
				 (SRF_REPLICA | SRF_INTERNAL)))
			rc = idx_behind_check(s, so);
		if (rc == -ENOENT)
			rc = err_set(-ENOENT, "index %s does not exist",
				     eng_id_str(&r->er_id));
		if (rc == 0 && r->er_kind != ER_ENT_OPEN &&
		    so->so_m.mr_incarnation != idx_inc(so->so_ridx, &me))
			rc = err_set(-ENOENT, "index %s was deleted (and made "
				     "again) since this handle opened it",
				     eng_id_str(&r->er_id));
		if (rc == 0 && !so->so_ridx->ri_exists)
			so->so_ridx->ri_inc = me.me_ctime_ns;
		r->er_ent.me_ctime_ns = me.me_ctime_ns;
	}
	if (rc != 0)
		srv_reply_err(so, rc);
	else
		srv_run_prepared(so);
}

void srv_idx_ent(struct srv *s, struct srv_op *so)
{
	struct msg_req *m = &so->so_m;
	uint32_t kind = m->mr_req.er_kind;

	so->so_ridx = ridx_get(s, &m->mr_req.er_id);
	if (so->so_ridx == NULL) {
		srv_reply_err(so, -ENOMEM);
		return;
	}
	if (kind == ER_ENT_CREATE && (m->mr_rflags & SRF_REPLICA) &&
	    m->mr_incarnation == 0) {
		srv_reply_err(so, err_set(-EINVAL, "request: index %s: replica"
					  " create without incarnation",
					  eng_id_str(&m->mr_req.er_id)));
		return;
	}
	if (kind == ER_ENT_CREATE || kind == ER_ENT_DELETE) {
		/* Counted before its commit makes it visible to a catch-up
		 * (idx_ent_keep()); counted again once applied. */
		uint64_t gen = ridx_gen(s, &m->mr_req.er_id);

		pthread_mutex_lock(&s->s_rlock);
		ridx_ent_event(so->so_ridx, gen);
		pthread_mutex_unlock(&s->s_rlock);
		srv_run_prepared(so);
	} else if (srv_needs_sync(s, so))
		srv_park(s, so);
	else
		srv_idx_ent_go(s, so);
}

void srv_idx_state(struct srv *s, struct srv_op *so)
{
	struct eng_req *r = &so->so_m.mr_req;
	struct ridx *ri = ridx_get(s, &r->er_id);
	Reply rp = REPLY__INIT;
	struct meta_ent me = {0};
	SAttr a;
	SId c;
	int rc;

	if (ri == NULL) {
		srv_reply_err(so, -ENOMEM);
		return;
	}
	rc = ridx_local(s, &r->er_id, &me);
	if (rc != 0 && rc != -ENOENT) {
		srv_reply_err(so, rc);
		return;
	}
	if (so->so_m.mr_from > s->s_conf->cc_nr_servers) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		srv_reply_err(so, err_set(-EINVAL, "request: idx_state %s: "
					  "from %u names no server of %u",
					  eng_id_str(&r->er_id),
					  so->so_m.mr_from,
					  s->s_conf->cc_nr_servers));
		return;
	}
	if (so->so_m.mr_rflags & SRF_VERIFY) {
		/* A peer replica merged to another digest: verify. */
		pthread_mutex_lock(&s->s_rlock);
		ridx_unverify(ri);
		pthread_mutex_unlock(&s->s_rlock);
	}
	if ((so->so_m.mr_rflags & SRF_TOMB_GC) && rc == 0)
		ridx_tomb_request(s, ri, so->so_m.mr_seq);
	if (so->so_m.mr_rflags & SRF_BEHIND) {
		uint64_t all = s->s_conf->cc_nr_servers >= 64 ? ~0ull :
			       (1ull << s->s_conf->cc_nr_servers) - 1;

		if (so->so_m.mr_behind & ~all) {
			__atomic_add_fetch(&s->s_cnt.sc_bad, 1,
					   __ATOMIC_RELAXED);
			srv_reply_err(so, err_set(-EINVAL, "request: idx_state"
						  " %s: behind mask 0x%" PRIx64
						  " names no server of %u",
						  eng_id_str(&r->er_id),
						  so->so_m.mr_behind,
						  s->s_conf->cc_nr_servers));
			return;
		}
		/* Test builds: fault srv.idx.behind.drop refuses marks
		 * against this server (the holders keep them), so that
		 * only its own rules can stop it serving what it missed
		 * (dtx_cluster_test.sh, "resumed" section). */
		if ((so->so_m.mr_behind & (1ull << s->s_self)) &&
		    FAULT_HIT("srv.idx.behind.drop")) {
			srv_reply_err(so, err_set(-EAGAIN, "index %s: fault "
						  "srv.idx.behind.drop: behind "
						  "mark refused",
						  eng_id_str(&r->er_id)));
			return;
		}
		/* An index not here that a peer orders updates of: this
		 * replica lacks it (a client that timed out here made it on
		 * the next replica, and skipped this one): verify it at the
		 * next request, which copies it unless it is the incarnation
		 * deleted here (idx_ent_keep()).  Nothing to mark. */
		if (rc == -ENOENT &&
		    (so->so_m.mr_behind & (1ull << s->s_self))) {
			pthread_mutex_lock(&s->s_rlock);
			ridx_unverify(ri);
			pthread_mutex_unlock(&s->s_rlock);
		}
		if (rc == 0 && ridx_rbeh_note(s, ri, so->so_m.mr_behind,
					      so->so_m.mr_term,
					      so->so_m.mr_seq) != 0) {
			srv_reply_err(so, err_set(-EIO, "index %s: behind mark:"
						  " %s", eng_id_str(&r->er_id),
						  err_msg()));
			return;
		}
	}
	rp.exists = rc == 0;
	me.me_ctime_ns = rc == 0 ? idx_inc(ri, &me) : 0;
	msg_attr_out(&a, &c, &me);
	rp.attr = &a;
	rp.seq = ri->ri_exists ? ri->ri_seq : 0;
	if (rc == 0) {
		struct rver rv = ridx_rver_load(s, &r->er_id);

		rp.term = rv.rv_term > ri->ri_term ? rv.rv_term : ri->ri_term;
		rp.digest = rv.rv_digest;
	}
	pthread_mutex_lock(&s->s_rlock);
	rp.verified = ri->ri_verified && !ri->ri_behind;
	pthread_mutex_unlock(&s->s_rlock);
	/* A verifying replica this server's heartbeat marks down: behind
	 * marks held here for it wait for the heartbeat to reach it, so it
	 * must not trust this verification beyond the request it serves. */
	rp.doubt = so->so_m.mr_from != 0 &&
		   so->so_m.mr_from - 1 != s->s_self &&
		   peers_down(s->s_hbpeers, so->so_m.mr_from - 1);
	srv_reply(so, 0, &rp, NULL);
}

/* GET/NEXT: the records that fit MSG_REPLY_BUDGET (at least one). */
void srv_idx_read_reply(struct srv_op *so)
{
	struct msg_req *m = &so->so_m;
	struct eng_req *r = &m->mr_req;
	bool next = r->er_kind == ER_IDX_NEXT;
	uint32_t nr = m->mr_nr, done = 0;
	uint64_t bytes = 0;
	Reply rp = REPLY__INIT;
	uint8_t *p;

	for (; done < nr; done++) {
		uint64_t need = 0;

		if (m->mr_rcs[done] == 0)
			need = m->mr_vals.bv_len[done] +
			       (next ? m->mr_keys.bv_len[done] : 0);
		if (next && m->mr_rcs[done] != 0)
			break;
		if (done > 0 && bytes + need > MSG_REPLY_BUDGET)
			break;
		bytes += need;
	}
	rp.recs.data = p = malloc(bytes ? bytes : 1);
	if (p == NULL) {
		srv_reply_err(so, err_set(-ENOMEM, "index reply"));
		return;
	}
	rp.klen = next ? calloc(done ? done : 1, sizeof(uint32_t)) : NULL;
	rp.vlen = calloc(done ? done : 1, sizeof(uint32_t));
	for (uint32_t i = 0; next && rp.klen != NULL && i < done; i++) {
		rp.klen[i] = (uint32_t)m->mr_keys.bv_len[i];
		memcpy(p, m->mr_keys.bv_buf[i], rp.klen[i]);
		p += rp.klen[i];
	}
	for (uint32_t i = 0; rp.vlen != NULL && i < done; i++) {
		if (m->mr_rcs[i] != 0)
			continue;
		rp.vlen[i] = (uint32_t)m->mr_vals.bv_len[i];
		memcpy(p, m->mr_vals.bv_buf[i], rp.vlen[i]);
		p += rp.vlen[i];
	}
	rp.n_klen = next ? done : 0;
	rp.n_vlen = done;
	rp.recs.len = bytes;
	rp.rcs = r->er_rcs;
	rp.n_rcs = done;
	rp.done = done;
	rp.bytes = r->er_bytes;
	if (rp.vlen == NULL || (next && rp.klen == NULL))
		srv_reply_err(so, err_set(-ENOMEM, "index reply"));
	else
		srv_reply(so, 0, &rp, NULL);
	free(rp.recs.data);
	free(rp.klen);
	free(rp.vlen);
}

/* ------------------------------------------------------- dtx members */

struct ridx *srv_ridx_find(struct srv *s, const struct st_id *id)
{
	return ridx_get(s, id);
}

bool srv_ridx_orderable(struct srv *s, struct ridx *ri)
{
	bool lonely;

	if (ridx_stale(s, ri, NULL))
		return false;
	pthread_mutex_lock(&s->s_rlock);
	lonely = ri->ri_lonely || ri->ri_behind;
	pthread_mutex_unlock(&s->s_rlock);
	/* It will order: in a term of its own (see "Versions"). */
	return !lonely && ridx_claim(s, ri) == 0;
}

int srv_ridx_claim(struct srv *s, struct ridx *ri)
{
	return ridx_claim(s, ri);
}

/* Order an update of ri here, as srv_ridx_after_update does for a PUT or
 * DEL this replica orders: the next seq, in the term of its own that
 * srv_ridx_claim took (-ESTALE if another replica's term came in since:
 * the COMMIT is asked again and claims anew). */
int srv_ridx_order(struct srv *s, struct ridx *ri, uint64_t inc,
		   struct ridx_rec *rec, uint64_t *term, uint64_t *seq)
{
	uint32_t n = s->s_conf->cc_nr_servers;

	pthread_mutex_lock(&s->s_rlock);
	if (ri->ri_term == 0 || ri->ri_term % n != s->s_self) {
		pthread_mutex_unlock(&s->s_rlock);
		return err_set(-ESTALE, "index %s: another replica's term "
			       "came in: no term of its own to order in",
			       eng_id_str(&ri->ri_id));
	}
	if (!ri->ri_exists) {
		ri->ri_inc = inc;
		ri->ri_exists = true;
	}
	*seq = ++ri->ri_seq;
	*term = ri->ri_term;
	ri->ri_tombs = true; /* the member may be a DEL */
	*rec = (struct ridx_rec){ri->ri_inc, ri->ri_seq};
	pthread_mutex_unlock(&s->s_rlock);
	return 0;
}

int srv_ridx_store(struct eng *e, MDB_txn *txn, const struct msg_req *m,
		   const struct ridx_rec *rec, uint64_t term, uint64_t seq)
{
	char name[48];
	int rc;

	ridx_name(name, sizeof name, &m->mr_req.er_id);
	rc = meta_sys_put(txn, eng_meta(e), name, rec, sizeof *rec);
	return rc != 0 ? rc : ridx_ver_apply(e, txn, m, term, seq);
}

/* A dtx member index CREATE (incarnation inc) or DELETE, in the COMMIT's
 * transaction: the replica record a plain CREATE or DELETE stores by its
 * second commit item (ridx_apply), here in the same commit. */
int srv_ridx_ent_store(struct eng *e, MDB_txn *txn,
		       const struct st_id *id, uint32_t kind, uint64_t inc)
{
	struct ridx_rec rec = {inc, 0};

	return ridx_rec_write(e, txn, id, &rec, kind != ER_ENT_CREATE);
}

/* After that commit is durable: the in-memory state, as for a plain one. */
void srv_ridx_ent_done(struct srv *s, struct ridx *ri, uint32_t kind,
		       uint64_t inc)
{
	uint64_t gen = ridx_gen(s, &ri->ri_id);

	pthread_mutex_lock(&s->s_rlock);
	ridx_ent_mem(ri, kind, inc, gen);
	pthread_mutex_unlock(&s->s_rlock);
}

/* The incarnation clients hold of index ri, whose local record is me. */
uint64_t srv_ridx_inc(struct srv *s, struct ridx *ri,
		      const struct meta_ent *me)
{
	uint64_t inc;

	pthread_mutex_lock(&s->s_rlock);
	inc = idx_inc(ri, me);
	pthread_mutex_unlock(&s->s_rlock);
	return inc;
}

/* Is this server one of the R replicas of index id? */
bool srv_ridx_mine(struct srv *s, const struct st_id *id)
{
	const struct clu_conf *c = s->s_conf;
	uint32_t n = c->cc_nr_servers;

	return (s->s_self + n - clu_home(c, id)) % n < srv_replicas(s);
}

/* A function call over an index (srv_isc.c) reads this replica's records
 * as a NEXT does: not when it missed acknowledged updates (behind; the
 * client tries the next replica). */
int srv_idx_isc_check(struct srv *s, const struct st_id *id)
{
	struct ridx *ri = ridx_get(s, id);
	bool behind;

	if (ri == NULL)
		return err_set(-ENOMEM, "index %s", eng_id_str(id));
	pthread_mutex_lock(&s->s_rlock);
	behind = ri->ri_behind;
	pthread_mutex_unlock(&s->s_rlock);
	if (behind)
		return err_set(-ESTALE, "server %s: index %s: this replica "
			       "missed updates; try another replica",
			       s->s_me->cs_name, eng_id_str(id));
	return 0;
}
