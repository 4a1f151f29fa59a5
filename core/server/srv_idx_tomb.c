/*
 * srv_idx_tomb.c — index replicas (overview: the top of srv_idx.c):
 * collecting tombstones, from the syncer thread between requests.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/srv_idx_internal.h"

/* ------------------------------------------------------- tombstones */

/*
 * Collecting tombstones (docs/cluster.md "Collecting tombstones").  A
 * tombstone may go once no replica can bring the deleted record back in a
 * merge: once every replica holds it (or something newer).  The index's
 * first replica checks this on the syncer thread every SRV_TOMB_PASS_MS:
 * every other replica must answer SOP_IDX_STATE with the index, the same
 * incarnation and the same digest as the local copy, twice, at least the
 * call timeout apart (an update forwarded before the first look has landed
 * or failed by the second).  Equal digests mean equal version entries, so
 * every replica then holds every tombstone held here.  It asks each of
 * them (SRF_TOMB_GC, the digest in IdxReq.seq) and itself to drop the
 * index's tombstones, each only if its digest is still that one, in one
 * write transaction with the digest update: all replicas drop the same
 * entries (the first SRV_TOMB_BATCH in key order) and keep equal digests.
 * A replica that misses the request keeps its tombstones; merges may copy
 * them back to the others (no record comes back with them: it was deleted
 * everywhere) and a later round collects them again.
 */

/* The peer replica asked the syncer to collect ri's tombstones if its
 * digest is still dig (from the SOP_IDX_STATE handler). */
void ridx_tomb_request(struct srv *s, struct ridx *ri, uint64_t dig)
{
	pthread_mutex_lock(&s->s_rlock);
	ri->ri_gc_req = true;
	ri->ri_gc_req_dig = dig;
	pthread_mutex_unlock(&s->s_rlock);
	pthread_mutex_lock(&s->s_qlock);
	s->s_tomb_kick = true;
	pthread_cond_signal(&s->s_qcond);
	pthread_mutex_unlock(&s->s_qlock);
}

/* tomb_collect()'s scan. */
struct tomb_arg {
	uint64_t ta_gone; /**< digest share of the dropped ones */
	uint32_t ta_n;
	bool ta_more;
};

/* A tombstone: dropped while fewer than SRV_TOMB_BATCH are. */
static int tomb_one(void *arg, const struct meta_rec *r)
{
	struct tomb_arg *a = arg;
	const uint8_t *key;
	size_t klen;
	struct vent ve;

	if (!ridx_vent_decode(r, &ve, &key, &klen) || !ridx_vent_tomb(&ve))
		return META_SCAN_NEXT;
	if (a->ta_n == SRV_TOMB_BATCH) {
		a->ta_more = true;
		return META_SCAN_STOP;
	}
	a->ta_gone ^= ridx_vent_hash(key, klen, &ve);
	a->ta_n++;
	return META_SCAN_DEL;
}

/* Drop up to SRV_TOMB_BATCH tombstones of ri, in key order, if the
 * index's digest is dig, in one transaction with the digest.  Returns the
 * number dropped (0 when the digest moved on) or an error. */
static int tomb_collect(struct srv *s, struct ridx *ri, uint64_t dig)
{
	struct meta *m = eng_meta(s->s_eng);
	const struct st_id *id = &ri->ri_id;
	uint8_t pre[VKEY_HEAD];
	struct rver rv = {0, 0};
	struct tomb_arg ta = {0, 0, false};
	MDB_txn *txn;
	char name[48];
	int rc;

	pthread_mutex_lock(&s->s_rlock);
	if (ri->ri_behind || ri->ri_bmask != 0) {
		/* docs/cluster.md "Replicas that missed updates" */
		pthread_mutex_unlock(&s->s_rlock);
		return 0;
	}
	ri->ri_tombs = false; /* a DEL from now on sets it again */
	pthread_mutex_unlock(&s->s_rlock);
	rc = meta_wtxn_begin(m, &txn, "index tombstones");
	if (rc != 0)
		return rc;
	ridx_rver_name(name, sizeof name, id);
	rc = meta_sys_get(txn, m, name, &rv, sizeof rv);
	if (rc != 0 || rv.rv_digest != dig) {
		meta_txn_abort(txn);
		pthread_mutex_lock(&s->s_rlock);
		ri->ri_tombs = true;
		pthread_mutex_unlock(&s->s_rlock);
		return rc == -ENOENT ? 0 : rc;
	}
	/* both forms of version entry (srv_idx_internal.h), in that order */
	for (int f = 0; rc == 0 && f < 2 && !ta.ta_more; f++) {
		ridx_vpre(pre, id, f == 1);
		rc = meta_scan(txn, m, &(struct meta_scan){
			.ms_table = META_T_SYS, .ms_prefix = pre,
			.ms_plen = VKEY_HEAD, .ms_write = true,
			.ms_fn = tomb_one, .ms_arg = &ta,
			.ms_what = "index tombstones"});
	}
	if (rc != 0) {
		meta_txn_abort(txn);
		return rc;
	}
	if (ta.ta_n == 0) {
		meta_txn_abort(txn);
		return 0;
	}
	rv.rv_digest ^= ta.ta_gone;
	rc = meta_sys_put(txn, m, name, &rv, sizeof rv);
	if (rc != 0) {
		meta_txn_abort(txn);
		return rc;
	}
	rc = meta_wtxn_commit(m, txn, "index tombstones commit");
	if (rc != 0)
		return rc;
	if (ta.ta_more) {
		pthread_mutex_lock(&s->s_rlock);
		ri->ri_tombs = true;
		pthread_mutex_unlock(&s->s_rlock);
	}
	__atomic_add_fetch(&s->s_cnt.sc_tombs, ta.ta_n, __ATOMIC_RELAXED);
	LOG_INFO("server %s: index %s: %u tombstones collected",
		 s->s_me->cs_name, eng_id_str(id), ta.ta_n);
	return (int)ta.ta_n;
}

/* Ask peer j to collect id's tombstones if its digest is dig. */
static void tomb_ask(struct srv *s, uint32_t j, const struct st_id *id,
		     uint64_t dig)
{
	IdxReq q = IDX_REQ__INIT;
	SId sid;
	struct msg_buf b;
	struct rpc_result res = {0};

	msg_id_out(&sid, id);
	q.id = &sid;
	q.rflags = SRF_INTERNAL | SRF_TOMB_GC;
	q.seq = dig;
	if (msg_pack(&q.base, &b) != 0)
		return;
	peers_call_ms(s->s_peers, j, SOP_IDX_STATE, b.mb_p, b.mb_len, NULL,
		      srv_probe_ms(s), &res);
	free(b.mb_p);
	free(res.rr_body);
}

/* One look at ri from its first replica: do every replica's digests equal
 * the local one, and have they for the call timeout?  Then collect. */
static void tomb_round(struct srv *s, struct ridx *ri)
{
	const struct clu_conf *c = s->s_conf;
	uint32_t n = c->cc_nr_servers, home = clu_home(c, &ri->ri_id);
	uint64_t inc, dig, now;
	bool exists, equal = true, go = false;

	if (ridx_stale(s, ri, NULL))
		ridx_sync(s, ri); /* a peer was away: verify (merge) first */
	pthread_mutex_lock(&s->s_rlock);
	/* A behind mark (held or against this replica) means some replica
	 * misses an update: its tombstones must stay until it caught up. */
	exists = ri->ri_exists && !ri->ri_lonely && ri->ri_verified &&
		 !ri->ri_behind && ri->ri_bmask == 0;
	inc = ri->ri_inc;
	pthread_mutex_unlock(&s->s_rlock);
	if (!exists)
		return;
	dig = ridx_rver_load(s, &ri->ri_id).rv_digest;
	for (uint32_t i = 1; equal && i < srv_replicas(s); i++) {
		uint32_t j = (home + i) % n;
		struct idx_peer p;

		equal = !peers_down(s->s_hbpeers, j) &&
			ridx_peer_state(s, j, &ri->ri_id, &p) == 1 &&
			p.ip_inc == inc && p.ip_digest == dig;
	}
	now = srv_now_ms();
	pthread_mutex_lock(&s->s_rlock);
	if (!equal || ri->ri_gc_ms == 0 || ri->ri_gc_dig != dig) {
		ri->ri_gc_dig = dig;
		ri->ri_gc_ms = equal ? now : 0;
	} else if (now - ri->ri_gc_ms >= c->cc_call_ms) {
		go = true;
		ri->ri_gc_ms = 0;
	}
	pthread_mutex_unlock(&s->s_rlock);
	if (!go)
		return;
	for (uint32_t i = 1; i < srv_replicas(s); i++)
		tomb_ask(s, (home + i) % n, &ri->ri_id, dig);
	if (tomb_collect(s, ri, dig) < 0)
		LOG_WARNING("server %s: index %s: tombstones: %s",
			    s->s_me->cs_name, eng_id_str(&ri->ri_id),
			    err_msg());
}

/* The syncer between requests: collections peers asked for, and (rounds)
 * a look at the indices this server is the first replica of that may hold
 * tombstones, at most SRV_TOMB_PASS_MAX of them. */
void ridx_tomb_pass(struct srv *s, bool rounds)
{
	struct ridx *pick[SRV_TOMB_PASS_MAX];
	uint64_t req_dig[SRV_TOMB_PASS_MAX];
	bool req[SRV_TOMB_PASS_MAX];
	uint32_t nr = 0;

	pthread_mutex_lock(&s->s_rlock);
	for (uint32_t b = 0; b < SRV_RIDX_BUCKETS && nr < SRV_TOMB_PASS_MAX;
	     b++)
		for (struct ridx *ri = s->s_ridx[b];
		     ri != NULL && nr < SRV_TOMB_PASS_MAX; ri = ri->ri_next) {
			bool mine = rounds && ri->ri_tombs && ri->ri_exists &&
				    clu_home(s->s_conf, &ri->ri_id) ==
					    s->s_self;

			if (!mine && !ri->ri_gc_req)
				continue;
			req[nr] = ri->ri_gc_req;
			req_dig[nr] = ri->ri_gc_req_dig;
			ri->ri_gc_req = false;
			pick[nr++] = ri;
		}
	pthread_mutex_unlock(&s->s_rlock);
	/* Records stay in the table until the server stops: the pointers
	 * remain valid. */
	for (uint32_t i = 0; i < nr && !s->s_qstop; i++) {
		int rc = req[i] ? tomb_collect(s, pick[i], req_dig[i]) : 0;

		if (rc < 0)
			LOG_WARNING("server %s: index %s: tombstones: %s",
				    s->s_me->cs_name,
				    eng_id_str(&pick[i]->ri_id), err_msg());
		else if (!req[i])
			tomb_round(s, pick[i]);
	}
}

