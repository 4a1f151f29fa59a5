/*
 * srv_idx_sync.c — index replicas (overview: the top of srv_idx.c):
 * catch-up.  Engine requests run to their end on the syncer thread, the
 * state of the peer replicas (SOP_IDX_STATE), the merge of a peer's copy
 * page by page, and the verification of one index (ridx_sync()).
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

/* ------------------------------------------------------- local requests */

/* The local entity record of id: 0, -ENOENT, or an error. */
int ridx_local(struct srv *s, const struct st_id *id,
	       struct meta_ent *me)
{
	MDB_txn *txn;
	int rc = meta_rtxn_begin(eng_meta(s->s_eng), &txn, "begin read");

	if (rc != 0)
		return rc;
	rc = meta_ent_get(txn, eng_meta(s->s_eng), id, me);
	meta_rtxn_put(eng_meta(s->s_eng), txn);
	if (rc == 0 && me->me_type != ST_ET_IDX)
		rc = -ENOENT;
	return rc;
}

/* An engine request run to its end on the calling (syncer) thread. */
struct srv_wait {
	struct eng_req w_req;   /* first */
	pthread_mutex_t w_lock;
	pthread_cond_t w_cond;
	bool w_done;
	int w_rc;
};

static void srv_wait_done(struct eng_citem *ci, int rc)
{
	struct srv_wait *w = (struct srv_wait *)ci;

	pthread_mutex_lock(&w->w_lock);
	w->w_rc = rc;
	if (rc != 0)
		err_set(rc, "%s", ci->ci_msg);
	w->w_done = true;
	pthread_cond_signal(&w->w_cond);
	pthread_mutex_unlock(&w->w_lock);
}

static int srv_exec_wait(struct srv *s, struct srv_wait *w)
{
	int rc;

	pthread_mutex_init(&w->w_lock, NULL);
	pthread_cond_init(&w->w_cond, NULL);
	w->w_req.er_ci.ci_done = srv_wait_done;
	w->w_req.er_eng = s->s_eng;
	rc = eng_exec(s->s_eng, &w->w_req);
	if (rc == ENG_PENDING) {
		pthread_mutex_lock(&w->w_lock);
		while (!w->w_done)
			pthread_cond_wait(&w->w_cond, &w->w_lock);
		pthread_mutex_unlock(&w->w_lock);
		rc = w->w_rc;
	}
	eng_spacevec_fini(&w->w_req.er_ci.ci_alloc);
	eng_spacevec_fini(&w->w_req.er_ci.ci_freed);
	pthread_mutex_destroy(&w->w_lock);
	pthread_cond_destroy(&w->w_cond);
	return rc;
}

/* Run an entity op on the local engine: create or delete. */
static int srv_local_ent(struct srv *s, uint32_t kind, uint32_t type,
			 const struct st_id *id,
			 const struct st_id *cont, struct meta_ent *out)
{
	struct srv_wait w = {0};
	int rc;

	w.w_req.er_kind = kind;
	w.w_req.er_type = type;
	w.w_req.er_id = *id;
	w.w_req.er_no_fdmi = true; /* a catch-up: no FDMI record */
	if (cont != NULL)
		w.w_req.er_container = *cont;
	rc = srv_exec_wait(s, &w);
	if (out != NULL)
		*out = w.w_req.er_ent;
	return rc;
}

/* ------------------------------------------------------- catch-up */

uint32_t srv_probe_ms(const struct srv *s)
{
	return s->s_conf->cc_call_ms < SRV_PROBE_MS ? s->s_conf->cc_call_ms
						    : SRV_PROBE_MS;
}

/* Ask peer j for its replica state; 1 if it has the index, 0 if not,
 * negative if it could not be asked. */
int ridx_peer_state(struct srv *s, uint32_t j, const struct st_id *id,
		    struct idx_peer *out)
{
	IdxReq q = IDX_REQ__INIT;
	SId sid;
	struct msg_buf b;
	struct rpc_result res;
	Reply *rp = NULL;
	int rc;

	msg_id_out(&sid, id);
	q.id = &sid;
	q.rflags = SRF_INTERNAL;
	q.from = s->s_self + 1;
	if (msg_pack(&q.base, &b) != 0)
		return -ENOMEM;
	rc = peers_call_ms(s->s_peers, j, SOP_IDX_STATE, b.mb_p, b.mb_len,
			   NULL, srv_probe_ms(s), &res);
	free(b.mb_p);
	if (rc == 0)
		rc = msg_reply_decode(res.rr_body, res.rr_len, 0, &rp);
	free(res.rr_body);
	if (rc != 0)
		return rc;
	rc = rp->exists ? 1 : 0;
	out->ip_server = (int)j;
	out->ip_seq = rp->seq;
	out->ip_term = rp->term;
	out->ip_digest = rp->digest;
	out->ip_inc = rp->attr != NULL ? rp->attr->ctime_ns : 0;
	out->ip_doubt = rp->doubt;
	msg_id_in(rp->attr != NULL ? rp->attr->container : NULL, &out->ip_cont);
	reply__free_unpacked(rp, NULL);
	return rc;
}

/*
 * The merge's condition on one record, checked in the commit's own
 * transaction (eng_req.er_guard).  A versioned record (ver[i]) is taken
 * only if its version is still newer than the local one, and its version
 * entry, the index's term and digest are written in that transaction; an
 * unversioned one only if the key still has neither a record nor a
 * version entry here.  idx_merge_page() checks the same under a read
 * transaction first, to build its lists, but an update applied here
 * between that read and the merge's commit (a dtx COMMIT's member, or a
 * copy of an update taken while this index was not yet stale) must not
 * be overwritten with the peer's older value: the record would be older
 * than the version entry beside it, and every later merge would take it
 * for current (a bank transfer seen half-applied, dtx_bank_test.sh
 * netns; tests/integ/dtx_cluster_test.sh 4g).
 */
struct merge_guard {
	const struct vent *mg_ver; /* per record; NULL: unversioned pass */
};

static int merge_guard(struct eng *e, MDB_txn *txn, struct eng_req *r,
		       uint32_t i)
{
	const struct merge_guard *g = r->er_guard_arg;
	struct meta *m = eng_meta(e);
	const void *k = r->er_keys->bv_buf[i];
	size_t kl = r->er_keys->bv_len[i];
	uint64_t dig = 0;
	struct vent lv;
	int rc;

	if (g->mg_ver == NULL) {
		uint8_t ib[16 + ST_KEY_MAX];
		struct meta_rec iv;

		rc = ridx_vent_get(m, txn, &r->er_id, k, kl, &lv);
		if (rc != -ENOENT)
			return rc == 0 ? 0 : rc;
		meta_idx_key(ib, &r->er_id, k, kl);
		rc = meta_get(txn, m, META_T_IDX, ib, 16 + kl, &iv,
			      "index merge record");
		return rc == -ENOENT ? 1 : rc;
	}
	rc = ridx_vent_put(m, txn, &r->er_id, k, kl, &g->mg_ver[i], true,
			   &dig);
	if (rc <= 0)
		return rc; /* 0: the local version is as new or newer */
	rc = ridx_rver_update(m, txn, &r->er_id, g->mg_ver[i].ve_term, dig);
	return rc < 0 ? rc : 1;
}

/* Run a PUT (overwrite) or DEL of nr records of a peer on the local copy,
 * each under merge_guard() (ver: their versions, NULL: unversioned). */
static int idx_local_kv(struct srv *s, const struct st_id *id,
			uint64_t ctime, uint32_t kind, uint32_t nr, void **kb,
			size_t *kl, void **vb, size_t *vl,
			const struct vent *ver)
{
	struct srv_wait w = {0};
	struct merge_guard g = {ver};
	int32_t *rcs;
	struct st_bufvec keys = {nr, kb, kl}, vals = {nr, vb, vl};
	int rc;

	if (nr == 0)
		return 0;
	rcs = calloc(nr, sizeof *rcs);
	if (rcs == NULL)
		return err_set(-ENOMEM, "index %s: merge page", eng_id_str(id));
	w.w_req.er_kind = kind;
	w.w_req.er_type = ST_ET_IDX;
	w.w_req.er_id = *id;
	w.w_req.er_ent.me_ctime_ns = ctime;
	w.w_req.er_keys = &keys;
	w.w_req.er_vals = kind == ER_IDX_PUT ? &vals : NULL;
	w.w_req.er_rcs = rcs;
	w.w_req.er_flags = kind == ER_IDX_PUT ? ST_IF_OVERWRITE : 0;
	w.w_req.er_guard = merge_guard;
	w.w_req.er_guard_arg = &g;
	w.w_req.er_no_fdmi = true; /* a catch-up: no FDMI record */
	rc = srv_exec_wait(s, &w);
	free(rcs);
	return rc == -ENOENT && kind == ER_IDX_DEL ? 0 : rc;
}

/* One NEXT page from peer j after key (NULL: from the first record);
 * rflags SRF_VERSIONS: of its version entries. */
static int idx_peer_page(struct srv *s, uint32_t j, const struct st_id *id,
			 const uint8_t *key, uint32_t klen, uint32_t rflags,
			 Reply **out)
{
	IdxReq q = IDX_REQ__INIT;
	SId sid;
	struct msg_buf b;
	struct rpc_result res;
	uint32_t kl[1] = {key != NULL ? klen : 0};
	int rc;

	if (key == NULL)
		klen = 0;
	msg_id_out(&sid, id);
	q.id = &sid;
	q.kind = ER_IDX_NEXT;
	q.nr = SRV_SYNC_PAGE;
	q.rflags = SRF_INTERNAL | rflags;
	q.n_klen = 1;
	q.klen = kl;
	q.start_null = key == NULL;
	q.flags = key != NULL ? ST_IF_EXCLUDE_START_KEY : 0;
	q.recs.data = (uint8_t *)key;
	q.recs.len = klen;
	if (msg_pack(&q.base, &b) != 0)
		return -ENOMEM;
	rc = peers_call(s->s_peers, j, SOP_IDX, b.mb_p, b.mb_len, NULL, &res);
	free(b.mb_p);
	if (rc == 0)
		rc = msg_reply_decode(res.rr_body, res.rr_len, SRV_SYNC_PAGE,
				      out);
	free(res.rr_body);
	return rc;
}

/* Merge one page of a peer (version entries, or with !versioned plain
 * records) into the local copy; *taken counts what was taken. */
static int idx_merge_page(struct srv *s, const struct st_id *id,
			  uint64_t ctime, const Reply *rp, uint32_t n,
			  bool versioned, uint64_t *taken)
{
	struct meta *m = eng_meta(s->s_eng);
	void **pk = calloc(4 * (size_t)n, sizeof(void *));
	size_t *pl = calloc(4 * (size_t)n, sizeof(size_t));
	struct vent *tv = calloc(2 * (size_t)n, sizeof *tv);
	void **pv = pk + n, **dk = pk + 2 * n;
	size_t *pvl = pl + n, *dkl = pl + 2 * n;
	struct vent *pver = tv, *dver = tv + n;
	uint32_t np = 0, nd = 0, nt = 0;
	const uint8_t *k = rp->recs.data, *v = rp->recs.data;
	uint8_t ib[16 + ST_KEY_MAX];
	MDB_txn *txn = NULL;
	int rc = 0;

	if (pk == NULL || pl == NULL || tv == NULL) {
		rc = err_set(-ENOMEM, "index %s: merge page", eng_id_str(id));
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		v += rp->klen[i];
	rc = meta_rtxn_begin(m, &txn, "index merge");
	if (rc != 0) {
		txn = NULL;
		goto out;
	}
	for (uint32_t i = 0; i < n; k += rp->klen[i], v += rp->vlen[i], i++) {
		struct vent lv, nv = {0, 0, 0};
		struct meta_rec iv;
		bool have_v;

		have_v = ridx_vent_get(m, txn, id, k, rp->klen[i], &lv) == 0;
		if (versioned) {
			nv = (struct vent){rp->vterm[i], rp->vseq[i],
				ridx_vent_word(rp->rcs[i] == 1,
					       rp->n_vtag == n ? rp->vtag[i]
							       : 0)};
			if (have_v && ridx_vcmp(lv.ve_term, lv.ve_seq,
						nv.ve_term, nv.ve_seq) >= 0)
				continue;
		} else {
			if (have_v)
				continue;
			meta_idx_key(ib, id, k, rp->klen[i]);
			if (meta_get(txn, m, META_T_IDX, ib, 16 + rp->klen[i],
				     &iv, NULL) == 0)
				continue;
		}
		nt++;
		if (ridx_vent_tomb(&nv)) {
			dver[nd] = nv;
			dk[nd] = (void *)k;
			dkl[nd++] = rp->klen[i];
		} else {
			pver[np] = nv;
			pk[np] = (void *)k;
			pl[np] = rp->klen[i];
			pv[np] = (void *)v;
			pvl[np++] = rp->vlen[i];
		}
	}
	meta_rtxn_put(m, txn);
	txn = NULL;
	/* Test builds: fault srv.idx.merge.slow pauses the merge 15 s
	 * between that read and its commit, for an update to come in between
	 * (tests/integ/dtx_cluster_test.sh 4g, 4h). */
	if (np + nd > 0 && FAULT_HIT("srv.idx.merge.slow")) {
		LOG_WARNING("server %s: index %s: fault srv.idx.merge.slow: "
			    "merge of %u records paused 15 s",
			    s->s_me->cs_name, eng_id_str(id), np + nd);
		sleep(15);
	}
	/* Each record under merge_guard(): checked again, with its version
	 * entry written, in the commit that writes it. */
	rc = idx_local_kv(s, id, ctime, ER_IDX_PUT, np, pk, pl, pv, pvl,
			  versioned ? pver : NULL);
	if (rc == 0)
		rc = idx_local_kv(s, id, ctime, ER_IDX_DEL, nd, dk, dkl, NULL,
				  NULL, versioned ? dver : NULL);
	if (rc == 0)
		*taken += nt;
out:
	if (txn != NULL)
		meta_txn_abort(txn);
	free(pk);
	free(pl);
	free(tv);
	return rc;
}

/* Merge peer j's copy of ri into the local one: its version entries
 * (per key the newest (term, seq) wins, tombstones delete), then its
 * records that have no version entry and are missing here. */
static int idx_merge(struct srv *s, struct ridx *ri, uint32_t j,
		     uint64_t ctime, uint64_t *taken)
{
	const struct st_id *id = &ri->ri_id;
	uint8_t last[ST_KEY_MAX];
	uint32_t last_len = 0;
	int rc = 0;

	for (uint32_t pass = 0; rc == 0 && pass < 2; pass++) {
		bool first = true;

		/* Bounded: every page moves the start key forward. */
		for (uint32_t pg = 0; rc == 0 && pg < (1u << 24); pg++) {
			Reply *rp = NULL;
			uint32_t n;

			rc = idx_peer_page(s, j, id, first ? NULL : last,
					   last_len, pass == 0 ? SRF_VERSIONS : 0,
					   &rp);
			if (rc != 0)
				break;
			n = rp->done;
			if (n > 0 && (rp->n_klen != n || rp->n_vlen != n ||
				      (pass == 0 && (rp->n_vterm != n ||
						     rp->n_vseq != n ||
						     rp->n_rcs != n ||
						     (rp->n_vtag != 0 &&
						      rp->n_vtag != n)))))
				rc = err_set(-EPROTO, "index %s: bad merge page"
					     " from server %s", eng_id_str(id),
					     s->s_conf->cc_servers[j].cs_name);
			if (rc == 0 && n > 0)
				rc = idx_merge_page(s, id, ctime, rp, n,
						    pass == 0, taken);
			if (rc == 0 && n > 0) {
				const uint8_t *k = rp->recs.data;

				for (uint32_t i = 0; i + 1 < n; i++)
					k += rp->klen[i];
				last_len = rp->klen[n - 1];
				memcpy(last, k, last_len);
				first = false;
			}
			reply__free_unpacked(rp, NULL);
			if (n == 0)
				break;
		}
	}
	return rc;
}

/* Make a fresh, empty local copy of ri as peer p has it (incarnation,
 * container), replacing a local one of another incarnation. */
static int idx_fresh(struct srv *s, struct ridx *ri, const struct idx_peer *p,
		     bool have_local, struct meta_ent *me)
{
	const struct st_id *id = &ri->ri_id;
	struct ridx_rec rec = {p->ip_inc, 0};
	char name[48];
	int rc = 0;

	ridx_name(name, sizeof name, id);
	if (have_local)
		rc = srv_local_ent(s, ER_ENT_DELETE, ST_ET_IDX, id, NULL,
				   NULL);
	if (rc == 0)
		rc = eng_sys_save(s->s_eng, name, &rec, sizeof rec);
	if (rc == 0) {
		rc = srv_local_ent(s, ER_ENT_CREATE, ST_ET_IDX, id,
				   &p->ip_cont, me);
		if (rc == -ENOENT) { /* its container was made while away */
			srv_local_ent(s, ER_ENT_CREATE, ST_ET_CONTAINER,
				      &p->ip_cont, NULL, NULL);
			rc = srv_local_ent(s, ER_ENT_CREATE, ST_ET_IDX, id,
					   &p->ip_cont, me);
		}
	}
	if (rc == 0) {
		pthread_mutex_lock(&s->s_rlock);
		ri->ri_inc = rec.rr_inc;
		ri->ri_seq = 0;
		ri->ri_term = 0;
		ri->ri_exists = true;
		pthread_mutex_unlock(&s->s_rlock);
	}
	return rc;
}

/* Ask peer j to verify its copy of id before it serves it next (its
 * digest differs from the one this server just merged to). */
static void idx_nudge(struct srv *s, uint32_t j, const struct st_id *id)
{
	IdxReq q = IDX_REQ__INIT;
	SId sid;
	struct msg_buf b;
	struct rpc_result res = {0};

	msg_id_out(&sid, id);
	q.id = &sid;
	q.rflags = SRF_INTERNAL | SRF_VERIFY;
	if (msg_pack(&q.base, &b) != 0)
		return;
	peers_call_ms(s->s_peers, j, SOP_IDX_STATE, b.mb_p, b.mb_len, NULL,
		      srv_probe_ms(s), &res);
	free(b.mb_p);
	free(res.rr_body);
}

/* Did a CREATE or DELETE of ri start or apply here since it had eops of
 * those events (ridx_ent_event())? */
static bool ridx_ent_moved(struct srv *s, struct ridx *ri, uint64_t eops)
{
	bool moved;

	pthread_mutex_lock(&s->s_rlock);
	moved = ri->ri_eops != eops;
	pthread_mutex_unlock(&s->s_rlock);
	return moved;
}

/*
 * Must the catch-up of ri leave whether it exists here (and in which
 * incarnation) as it is, whatever the peers said?  It began with eops
 * CREATE/DELETE events here (ridx_ent_event()), in generation gen
 * (ridx_gen()), with dinc the incarnation last deleted here; *local says
 * whether the index was found here then, best is the newest peer that
 * holds it (with of the reached peers do).  A client makes or drops an
 * index on the first live replica, then on the others one by one: until
 * it has reached them all, the replicas it reached are ahead of the
 * others, not behind.  So:
 *
 *  - an op started or applied here since the catch-up began: what it read
 *    here may be older than that op (*local := false: nothing is merged,
 *    copied or saved);
 *  - the last op here is newer than the last time a peer replica was out
 *    of reach (or a client asked this server to verify), and younger than
 *    srv_ent_window_ms(): the peers that lack it (or still hold it) are
 *    not reached yet; *until is set to when that stops holding, so that
 *    the index is verified again then;
 *  - a peer holds the incarnation deleted here: its DELETE has not
 *    reached it yet (an incarnation deleted never comes back).
 *
 * Otherwise the peers decide, as before: a peer replica was out of reach
 * since the op (this server may have missed a later one), the op is older
 * than a client's whole round of calls, or the index exists here and on
 * the peers in different incarnations that are not the one deleted here
 * (two CREATEs of the index raced: one CREATE makes one incarnation on
 * every replica, whenever each applies it, see "Incarnations" at the top
 * of srv_idx.c).
 */
static bool idx_ent_keep(struct srv *s, struct ridx *ri, uint64_t eops,
			 uint64_t gen, uint64_t dinc, bool *local,
			 const struct idx_peer *best, uint32_t with,
			 uint32_t reached, uint64_t *until)
{
	const char *me = s->s_me->cs_name, *id = eng_id_str(&ri->ri_id);
	uint64_t now = srv_now_ms(), win = srv_ent_window_ms(s), ems;
	bool recent, moved;

	pthread_mutex_lock(&s->s_rlock);
	moved = ri->ri_eops != eops;
	ems = ri->ri_ems;
	/* ems is 0 before any event and after the catch-up deleted the
	 * index here; ridx_gen() only grows: an op after gen was read counts */
	recent = ems != 0 && ri->ri_egen >= gen && now - ems < win;
	pthread_mutex_unlock(&s->s_rlock);
	*until = 0;
	if (moved) {
		LOG_INFO("server %s: index %s: made or deleted here during its "
			 "catch-up: left as that op left it", me, id);
		*local = false;
		return true;
	}
	if (best->ip_server >= 0 && dinc != 0 && best->ip_inc == dinc) {
		LOG_INFO("server %s: index %s: server %s still holds the "
			 "incarnation deleted here (its DELETE has not reached "
			 "it yet): not copied back", me, id,
			 s->s_conf->cc_servers[best->ip_server].cs_name);
		return true;
	}
	if (recent && *local != (with > 0)) {
		if (reached > 0)
			LOG_INFO("server %s: index %s: %s here %" PRIu64 " ms "
				 "ago, since a peer replica was last out of "
				 "reach, and %s on the %u peer replicas that "
				 "answered: kept (not reached yet)", me, id,
				 *local ? "made" : "deleted", now - ems,
				 *local ? "missing" : "present", reached);
		*until = ems + win;
		return true;
	}
	return false;
}

/* Verify ri against the other replicas (see the top of srv_idx.c). */
void ridx_sync(struct srv *s, struct ridx *ri)
{
	const struct clu_conf *c = s->s_conf;
	uint32_t n = c->cc_nr_servers, r = c->cc_replicas < n ? c->cc_replicas : n;
	uint32_t home = clu_home(c, &ri->ri_id), asked = 0, reached = 0, with = 0;
	struct idx_peer best = {.ip_server = -1}, pst, ps[CLU_SERVERS_MAX];
	struct meta_ent me;
	uint64_t stalls = __atomic_load_n(&s->s_stalls, __ATOMIC_ACQUIRE);
	uint64_t gen = ridx_gen(s, &ri->ri_id), dig, dinc;
	uint64_t lseq, taken = 0, seq, term, eops, until, unver, vbegun;
	int rc = 0, from = -1;
	bool local, fresh = false, behind, keep, doubt = false;

	/* The entity ops applied here so far, before the local copy is
	 * read: one applied later shows as moved (ridx_ent_moved()). */
	pthread_mutex_lock(&s->s_rlock);
	eops = ri->ri_eops;
	dinc = ri->ri_dinc;
	unver = ri->ri_unver;
	vbegun = ++ri->ri_vbegun;
	pthread_mutex_unlock(&s->s_rlock);
	local = ridx_local(s, &ri->ri_id, &me) == 0;
	lseq = ri->ri_exists ? ri->ri_seq : 0;

	/* Two rounds at most: the second only if no peer answered the first
	 * (a lost call must not make this replica refuse to order). */
	for (uint32_t i = 0; i < 2 * r && !(i == r && reached > 0); i++) {
		uint32_t j = (home + i % r) % n;
		int got;

		if (j == s->s_self)
			continue;
		if (i < r)
			asked++;
		/* First round: peers found down are not asked (a call to a
		 * dead peer costs a full timeout, and one that came back
		 * copied what it missed at its own start).  Second round,
		 * when nobody answered the first: ask every peer now, even
		 * one found down a moment ago (a link just restored). */
		if (i < r && peers_down(s->s_hbpeers, j))
			continue;
		if (i >= r)
			peers_retry_now(s->s_peers, j);
		got = ridx_peer_state(s, j, &ri->ri_id, &pst);
		if (got < 0)
			continue;
		reached++;
		doubt |= pst.ip_doubt;
		if (got == 1) {
			ps[with++] = pst;
			if (best.ip_server < 0 || pst.ip_seq > best.ip_seq)
				best = pst;
		}
	}
	keep = idx_ent_keep(s, ri, eops, gen, dinc, &local, &best, with,
			    reached, &until);
	if (!keep && best.ip_server >= 0 &&
	    (!local || (ri->ri_exists && best.ip_inc != ri->ri_inc)) &&
	    !ridx_ent_moved(s, ri, eops)) {
		rc = idx_fresh(s, ri, &best, local, &me);
		fresh = local = rc == 0;
		lseq = 0;
	}
	seq = lseq;
	term = ri->ri_term;
	dig = ridx_rver_load(s, &ri->ri_id).rv_digest;
	for (uint32_t i = 0; rc == 0 && local && i < with; i++) {
		if (ps[i].ip_inc != ri->ri_inc && ri->ri_exists)
			continue; /* another incarnation: not this index */
		if (!fresh && ps[i].ip_digest == dig && ps[i].ip_seq <= lseq)
			continue;
		rc = idx_merge(s, ri, (uint32_t)ps[i].ip_server,
			       me.me_ctime_ns, &taken);
		if (rc == 0 && from < 0)
			from = ps[i].ip_server;
		if (ps[i].ip_seq > seq)
			seq = ps[i].ip_seq;
		if (ps[i].ip_term > term)
			term = ps[i].ip_term;
		dig = ridx_rver_load(s, &ri->ri_id).rv_digest;
	}
	if (rc == 0 && local && from >= 0 && !ridx_ent_moved(s, ri, eops)) {
		struct ridx_rec rec;
		char name[48];

		/* The counter never goes back: lseq was read before the peers
		 * were asked, and updates this replica ordered meanwhile (a
		 * dtx COMMIT is not held for a catch-up) took the seqs above
		 * it.  Setting it to the peers' highest, lower than those,
		 * handed the same seqs out again: a later update's copy was
		 * refused by the replicas holding the newer version of its
		 * key, and the next merge brought that older value back
		 * (a bank transfer's index member lost, dtx_bank_test). */
		pthread_mutex_lock(&s->s_rlock);
		if (seq > ri->ri_seq)
			ri->ri_seq = seq;
		if (term > ri->ri_term)
			ri->ri_term = term;
		ri->ri_exists = true;
		if (taken > 0)
			ri->ri_tombs = true;
		rec = (struct ridx_rec){ri->ri_inc, ri->ri_seq};
		pthread_mutex_unlock(&s->s_rlock);
		ridx_name(name, sizeof name, &ri->ri_id);
		rc = eng_sys_save(s->s_eng, name, &rec, sizeof rec);
		/* seq > lseq with nothing taken: the entries came with an
		 * earlier try whose commit was applied here but failed as a
		 * whole (its write set not acknowledged by this home's
		 * standbys: a home being handed back, core/commit.c) */
		if (taken > 0 || fresh || seq > lseq) {
			__atomic_add_fetch(&s->s_cnt.sc_syncs, 1,
					   __ATOMIC_RELAXED);
			LOG_WARNING("server %s: index %s copied from server %s "
				    "(merged %" PRIu64 " entries of %u peer "
				    "replicas, seq %" PRIu64 ", term %" PRIu64
				    ")", s->s_me->cs_name,
				    eng_id_str(&ri->ri_id),
				    c->cc_servers[from].cs_name, taken, with,
				    seq, term);
		}
		for (uint32_t i = 0; rc == 0 && i < with; i++)
			if (ps[i].ip_digest != dig)
				idx_nudge(s, (uint32_t)ps[i].ip_server,
					  &ri->ri_id);
	} else if (rc == 0 && local && !keep && with == 0 && asked > 0 &&
		   reached == asked && !ridx_ent_moved(s, ri, eops)) {
		LOG_WARNING("server %s: index %s: on none of the %u other "
			    "replicas: deleted while this server was away, "
			    "deleting it here", s->s_me->cs_name,
			    eng_id_str(&ri->ri_id), asked);
		rc = srv_local_ent(s, ER_ENT_DELETE, ST_ET_IDX, &ri->ri_id,
				   NULL, NULL);
		if (rc == 0) {
			struct meta *m = eng_meta(s->s_eng);
			char name[48];
			MDB_txn *txn;

			ridx_name(name, sizeof name, &ri->ri_id);
			eng_sys_del(s->s_eng, name);
			if (meta_wtxn_begin(m, &txn, "index drop") == 0) {
				if (ridx_ver_drop(m, txn, &ri->ri_id) == 0)
					(void)meta_wtxn_commit(m, txn,
							       "index drop");
				else
					meta_txn_abort(txn);
			}
			pthread_mutex_lock(&s->s_rlock);
			ri->ri_exists = false;
			ri->ri_term = 0;
			ri->ri_ems = 0; /* no op of its own is ahead now */
			pthread_mutex_unlock(&s->s_rlock);
		}
	}
	if (rc != 0)
		LOG_WARNING("server %s: index %s: catch-up failed: %d (%s)%s%s",
			    s->s_me->cs_name, eng_id_str(&ri->ri_id), rc,
			    strerror(-rc), err_msg()[0] ? ": " : "", err_msg());
	pthread_mutex_lock(&s->s_rlock);
	/* Asked to verify again while this ran (a behind mark, a nudge, a
	 * gap or another term in a replica copy, a CREATE or DELETE): what
	 * was read may be older than that, so it stays unverified and the
	 * next request verifies it again. */
	ri->ri_verified = ri->ri_unver == unver;
	if (ri->ri_verified && vbegun > ri->ri_vok)
		ri->ri_vok = vbegun;
	if (doubt)
		__atomic_add_fetch(&s->s_cnt.sc_doubts, 1, __ATOMIC_RELAXED);
	if (doubt && !ri->ri_doubt)
		LOG_INFO("server %s: index %s: a peer replica marks this "
			 "server down: verifying before each request until "
			 "none does", s->s_me->cs_name, eng_id_str(&ri->ri_id));
	ri->ri_doubt = doubt;
	ri->ri_vgen = gen;
	ri->ri_vstalls = stalls;
	ri->ri_vms = srv_now_ms();
	ri->ri_kept_ms = until;
	ri->ri_lonely = asked > 0 && reached == 0;
	behind = ri->ri_behind;
	if (behind && (!ri->ri_exists ||
		       ridx_vcmp(ri->ri_term, ri->ri_seq, ri->ri_nterm,
				 ri->ri_nseq) >= 0)) {
		ri->ri_behind = false;
		ri->ri_nterm = ri->ri_nseq = 0;
	}
	behind = behind && ri->ri_behind;
	pthread_mutex_unlock(&s->s_rlock);
	if (behind)
		LOG_WARNING("server %s: index %s: still behind after catch-up "
			    "(%u of %u peer replicas reached): refusing it",
			    s->s_me->cs_name, eng_id_str(&ri->ri_id), reached,
			    asked);
}

