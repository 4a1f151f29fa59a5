/*
 * srv_idx.c — index replicas on a server: replica records, catch-up from
 * peer replicas, and the index request handlers (see srv.h and
 * docs/cluster.md, "Index replicas").
 *
 * Each index this server holds has a replica record {inc, seq}: inc is the
 * canonical incarnation (the first replica's creation time, the same on
 * every replica, which clients see as the index's ctime), seq counts the
 * updates applied in the first replica's order.  The first replica of an
 * update adds one; a further replica takes the first one's new seq only if
 * it is its own plus one — otherwise it missed something and is marked
 * unverified.  The record is stored by a second commit item after the
 * update is durable, so a stored seq never claims more than the records
 * hold.
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
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/srv_internal.h"

/* ------------------------------------------------------- replica records */

static uint32_t srv_probe_ms(const struct srv *s);
static struct ridx *ridx_get(struct srv *s, const struct clovis_id *id);

static void ridx_name(char *buf, size_t size, const struct clovis_id *id)
{
	snprintf(buf, size, "ridx:%016" PRIx64 ":%016" PRIx64, id->ci_hi,
		 id->ci_lo);
}

int srv_ridx_init(struct srv *s)
{
	int rc;

	pthread_mutex_init(&s->s_rlock, NULL);
	pthread_mutex_init(&s->s_qlock, NULL);
	pthread_cond_init(&s->s_qcond, NULL);
	pthread_cond_init(&s->s_hbcond, NULL);
	s->s_hb_peer = -1;
	s->s_tick_ms = srv_now_ms();
	/* Before the server's own endpoint: once that answers, the server
	 * is up (tests wait for that, then for its "serving" line). */
	rc = peers_create(&s->s_hbpeers, s->s_conf, NULL);
	if (rc == 0)
		peers_set_server(s->s_hbpeers);
	return rc;
}

void srv_ridx_fini(struct srv *s)
{
	for (uint32_t b = 0; b < SRV_RIDX_BUCKETS; b++)
		while (s->s_ridx[b] != NULL) {
			struct ridx *ri = s->s_ridx[b];

			s->s_ridx[b] = ri->ri_next;
			free(ri);
		}
	pthread_mutex_destroy(&s->s_rlock);
	pthread_mutex_destroy(&s->s_qlock);
	pthread_cond_destroy(&s->s_qcond);
	pthread_cond_destroy(&s->s_hbcond);
	peers_destroy(s->s_hbpeers);
	s->s_hbpeers = NULL;
}

/* The number of replicas of an index (R, at most the servers). */
static uint32_t srv_replicas(const struct srv *s)
{
	const struct clu_conf *c = s->s_conf;

	return c->cc_replicas < c->cc_nr_servers ? c->cc_replicas
						  : c->cc_nr_servers;
}

/* The sum of peers_gen() over the other replicas of id and of s_vepoch:
 * it changes when one of them became unreachable or reachable again, or a
 * client asked this server to verify, since it was read. */
static uint64_t ridx_gen(struct srv *s, const struct clovis_id *id)
{
	const struct clu_conf *c = s->s_conf;
	uint32_t n = c->cc_nr_servers, home = clu_home(c, id);
	uint64_t g = __atomic_load_n(&s->s_vepoch, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < srv_replicas(s); i++) {
		uint32_t j = (home + i) % n;

		if (j != s->s_self)
			g += peers_gen(s->s_peers, j) +
			     peers_gen(s->s_hbpeers, j);
	}
	return g;
}

/* Has this server heard from none of id's peer replicas that are not known
 * down for SRV_LEASE_MS (no call sent since then answered)?  It was frozen
 * or its link cut while its calls hung (a call sent before a cut is
 * answered after it by TCP retransmits, so no failure shows): the others
 * may have ordered updates meanwhile. */
static bool ridx_unheard(struct srv *s, const struct clovis_id *id,
			 uint64_t now)
{
	const struct clu_conf *c = s->s_conf;
	uint32_t n = c->cc_nr_servers, home = clu_home(c, id), live = 0;
	int32_t hp = __atomic_load_n(&s->s_hb_peer, __ATOMIC_ACQUIRE);
	uint64_t hs = __atomic_load_n(&s->s_hb_since, __ATOMIC_ACQUIRE);

	/* The heartbeat calls its peers one after the other: while a call
	 * to one hangs (that peer cut or dead), the others are not called,
	 * and count as heard. */
	if (hp >= 0 && hs + SRV_LEASE_MS >= peers_clock_ms())
		hp = -1;
	for (uint32_t i = 0; i < srv_replicas(s); i++) {
		uint32_t j = (home + i) % n;
		uint64_t a, b;

		if (j == s->s_self || peers_down(s->s_hbpeers, j))
			continue;
		if (hp >= 0 && j != (uint32_t)hp)
			return false;
		live++;
		a = peers_ok_ms(s->s_hbpeers, j);
		b = peers_ok_ms(s->s_peers, j);
		if ((a > b ? a : b) + SRV_LEASE_MS >= now)
			return false;
	}
	return live > 0;
}

/* s_rlock held: ri must be verified again before it is next served; a
 * verification running now does not count (idx_sync() compares ri_unver
 * from its start with its end). */
static void ridx_unverify(struct ridx *ri)
{
	ri->ri_verified = false;
	ri->ri_unver++;
}

/* Did this process stall (not run) for SRV_LEASE_MS since ri's last
 * verification began, or is it in such a stall the stall watch has not
 * noted yet (srv_tick_main())?  Frozen, it may have been skipped by
 * writers; once it runs again, answers to calls it sent before the stall
 * make its peers look heard (ridx_unheard()), so the lease alone misses
 * it.  The tick is read before the count: the watch counts a stall
 * before it notes the time. */
static bool ridx_stalled(struct srv *s, const struct ridx *ri)
{
	uint64_t tick = __atomic_load_n(&s->s_tick_ms, __ATOMIC_ACQUIRE);
	uint64_t stalls = __atomic_load_n(&s->s_stalls, __ATOMIC_ACQUIRE);

	return tick + SRV_LEASE_MS < srv_now_ms() || ri->ri_vstalls != stalls;
}

/* May ri be stale: not verified in this run, a peer replica was out of
 * reach at some moment since it was, this process stalled since then, or
 * it was verified with no peer replica answering (then it is tried again
 * every SRV_HEARTBEAT_MS)?  With vmark (a client request: ri_vbegun when
 * it came in), also while ri is in doubt (ri_doubt: a peer replica's
 * heartbeat marked this server down at the last verification) unless a
 * verification begun after the request came in ended verified: one
 * verification serves every request that waited for it.  Without (a dtx
 * member to order: a PREPARE refuses a stale index; its members are
 * versioned and merged like any update), doubt does not count. */
static bool ridx_stale(struct srv *s, struct ridx *ri, const uint64_t *vmark)
{
	uint64_t g = ridx_gen(s, &ri->ri_id), now = srv_now_ms();
	bool stale;

	pthread_mutex_lock(&s->s_rlock);
	stale = (vmark != NULL && ri->ri_doubt && ri->ri_vok <= *vmark) ||
		!ri->ri_verified || ri->ri_vgen != g || ridx_stalled(s, ri) ||
		(ri->ri_kept_ms != 0 && now >= ri->ri_kept_ms) ||
		(ri->ri_behind && now - ri->ri_vms >= SRV_HEARTBEAT_MS) ||
		(ri->ri_lonely && now - ri->ri_vms >= SRV_HEARTBEAT_MS);
	if (!stale && now - ri->ri_vms >= SRV_LEASE_MS) {
		pthread_mutex_unlock(&s->s_rlock);
		return ridx_unheard(s, &ri->ri_id, now);
	}
	pthread_mutex_unlock(&s->s_rlock);
	return stale;
}

/* ------------------------------------------------------- versions */

/*
 * Versions (docs/cluster.md "Index replicas: terms and merge").  Each
 * update of an index is versioned by (term, seq): seq is the ordering
 * replica's seq, term the ordering replica's term.  Terms are unique to
 * one ordering replica (term % servers == its index): a replica about to
 * order while the highest term it knows belongs to another replica (or to
 * none) first takes the next term of its own, durably.  Per index, the
 * sys table holds "rver:HI:LO" = {highest term seen, digest} and, per key,
 * VKEY_TAG id(16, big-endian) key -> struct vent {term, seq, tombstone}:
 * written by the replica record's commit item after each PUT and DEL (a
 * delete leaves a tombstone), dropped with the index; tombstones go
 * earlier once every replica holds them ("tombstones" below).  The digest is the
 * XOR of a hash of every version entry, so two replicas with the same
 * entries have the same digest whatever the order they applied them in.
 * Catch-up merges: per key the newest (term, seq) wins, a tombstone
 * deleting the record.  Keys over 494 bytes (the sys table's key limit
 * less 17) are not versioned: merged only into replicas that lack them.
 * Index members of a cluster dtx are versioned exactly like PUT and DEL
 * (srv_ridx_order, srv_ridx_store): the ordering replica's term and seq,
 * forwarded with the term to the other replicas.
 *
 * Op tags (docs/cluster.md "Op tags"): a client tags each PUT and DEL
 * (IdxReq.tag, 63 bits, the same in the copies to the other replicas) and
 * each version entry keeps the tag of the op that wrote it in the upper 63
 * bits of ve_tomb (bit 0 stays the tombstone; the digest hashes bit 0
 * only, so tags change no digest).  Merges carry the tags (Reply.vtag).
 * A client that lost the ordering replica's answer sends the op to the
 * next replica, which may hold the first one's change already (merged):
 * there, a DEL record already gone with a tombstone of the op's tag, and a
 * PUT without OVERWRITE meeting a version of the op's tag, are reported
 * done (rc 0) instead of -ENOENT / -EEXIST (ridx_dedup()).
 */
struct rver {
	uint64_t rv_term;
	uint64_t rv_digest;
};
_Static_assert(sizeof(struct rver) == 16, "rver record size");

struct vent {
	uint64_t ve_term;
	uint64_t ve_seq;
	uint64_t ve_tomb; /* bit 0: deleted; bits 1..63: the op's tag */
};
_Static_assert(sizeof(struct vent) == 24, "version entry size");

static bool vent_tomb(const struct vent *v)
{
	return (v->ve_tomb & 1) != 0;
}

static uint64_t vent_tag(const struct vent *v)
{
	return v->ve_tomb >> 1;
}

/* The ve_tomb word of a version: tombstone bit and tag (below 2^63). */
static uint64_t vent_word(bool tomb, uint64_t tag)
{
	return (tag & MSG_TAG_MAX) << 1 | (tomb ? 1 : 0);
}

#define VKEY_TAG 0x01u
#define VKEY_HEAD 17u

static void rver_name(char *buf, size_t size, const struct clovis_id *id)
{
	snprintf(buf, size, "rver:%016" PRIx64 ":%016" PRIx64, id->ci_hi,
		 id->ci_lo);
}

static void be64_out(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

/* The sys key of key's version entry, in buf (VKEY_HEAD + CLOVIS_KEY_MAX
 * bytes); false when it would be over LMDB's key size (not versioned). */
static bool vkey(const struct meta *m, uint8_t *buf, const struct clovis_id *id,
		 const void *key, size_t klen, MDB_val *out)
{
	if (VKEY_HEAD + klen > m->m_maxkey)
		return false;
	buf[0] = VKEY_TAG;
	be64_out(buf + 1, id->ci_hi);
	be64_out(buf + 9, id->ci_lo);
	if (klen > 0)
		memcpy(buf + VKEY_HEAD, key, klen);
	*out = (MDB_val){VKEY_HEAD + klen, buf};
	return true;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* One version entry's share of the digest. */
static uint64_t vent_hash(const void *key, size_t klen, const struct vent *v)
{
	const uint8_t *p = key;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < klen; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return mix64(h ^ mix64(v->ve_term ^ mix64(v->ve_seq * 2 +
						 (v->ve_tomb & 1))));
}

static int vcmp(uint64_t t1, uint64_t s1, uint64_t t2, uint64_t s2)
{
	if (t1 != t2)
		return t1 < t2 ? -1 : 1;
	return s1 == s2 ? 0 : s1 < s2 ? -1 : 1;
}

/* The stored version of key: 0, -ENOENT (none, or not versioned). */
static int vent_get(struct meta *m, MDB_txn *txn, const struct clovis_id *id,
		    const void *key, size_t klen, struct vent *out)
{
	uint8_t buf[VKEY_HEAD + CLOVIS_KEY_MAX];
	MDB_val k, v;
	int rc;

	if (!vkey(m, buf, id, key, klen, &k))
		return -ENOENT;
	rc = mdb_get(txn, m->m_sys, &k, &v);
	if (rc == MDB_NOTFOUND || (rc == 0 && v.mv_size != sizeof *out))
		return -ENOENT;
	if (rc != 0)
		return meta_err(rc, "version entry");
	memcpy(out, v.mv_data, sizeof *out);
	return 0;
}

/* In txn: store nv as key's version (unless newer_only and the stored one
 * is as new), XOR-ing the digest change into *dig.  1: stored, 0: not. */
static int vent_put(struct meta *m, MDB_txn *txn, const struct clovis_id *id,
		    const void *key, size_t klen, const struct vent *nv,
		    bool newer_only, uint64_t *dig)
{
	uint8_t buf[VKEY_HEAD + CLOVIS_KEY_MAX];
	MDB_val k, v;
	struct vent old;
	int rc;

	if (!vkey(m, buf, id, key, klen, &k))
		return 0;
	rc = mdb_get(txn, m->m_sys, &k, &v);
	if (rc == 0 && v.mv_size == sizeof old) {
		memcpy(&old, v.mv_data, sizeof old);
		if (newer_only && vcmp(old.ve_term, old.ve_seq, nv->ve_term,
				       nv->ve_seq) >= 0)
			return 0;
		*dig ^= vent_hash(key, klen, &old);
	} else if (rc != 0 && rc != MDB_NOTFOUND) {
		return meta_err(rc, "version entry");
	}
	v = (MDB_val){sizeof *nv, (void *)nv};
	rc = mdb_put(txn, m->m_sys, &k, &v, 0);
	if (rc != 0)
		return meta_err(rc, "version entry put");
	*dig ^= vent_hash(key, klen, nv);
	return 1;
}

/* In txn: raise the index's term to at least term, XOR dig into its
 * digest. */
static int rver_update(struct meta *m, MDB_txn *txn, const struct clovis_id *id,
		       uint64_t term, uint64_t dig)
{
	struct rver rv = {0, 0};
	char name[48];
	int rc;

	rver_name(name, sizeof name, id);
	rc = meta_sys_get(txn, m, name, &rv, sizeof rv);
	if (rc != 0 && rc != -ENOENT)
		return rc;
	if (term > rv.rv_term)
		rv.rv_term = term;
	rv.rv_digest ^= dig;
	return meta_sys_put(txn, m, name, &rv, sizeof rv);
}

static struct rver rver_load(struct srv *s, const struct clovis_id *id)
{
	struct rver rv = {0, 0};
	char name[48];

	rver_name(name, sizeof name, id);
	if (eng_sys_load(s->s_eng, name, &rv, sizeof rv) != 0)
		rv = (struct rver){0, 0};
	return rv;
}

/* In txn: drop every version entry of id and its rver record. */
static int ver_drop(struct meta *m, MDB_txn *txn, const struct clovis_id *id)
{
	uint8_t pre[VKEY_HEAD];
	MDB_cursor *cur;
	MDB_val k, v;
	char name[48];
	int rc;

	vkey(m, pre, id, NULL, 0, &k);
	rc = mdb_cursor_open(txn, m->m_sys, &cur);
	if (rc != 0)
		return meta_err(rc, "version cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	     rc == 0 && k.mv_size >= VKEY_HEAD &&
	     memcmp(k.mv_data, pre, VKEY_HEAD) == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		rc = mdb_cursor_del(cur, 0);
		if (rc != 0)
			break;
	}
	mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return meta_err(rc, "version entries delete");
	rver_name(name, sizeof name, id);
	k = (MDB_val){strlen(name), name};
	rc = mdb_del(txn, m->m_sys, &k, NULL);
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : meta_err(rc, "rver delete");
}

/* In txn: the version entries {term, seq} of a PUT or DEL m this replica
 * applied (ordinary or a dtx member alike). */
static int ver_apply(struct meta *m, MDB_txn *txn, const struct msg_req *mr,
		     uint64_t term, uint64_t seq)
{
	const struct eng_req *r = &mr->mr_req;
	struct vent nv = {term, seq,
			  vent_word(r->er_kind == ER_IDX_DEL, mr->mr_tag)};
	uint64_t dig = 0;
	int rc = 0;

	for (uint32_t i = 0; rc >= 0 && i < mr->mr_nr; i++)
		if (r->er_rcs[i] == 0)
			rc = vent_put(m, txn, &r->er_id, r->er_keys->bv_buf[i],
				      r->er_keys->bv_len[i], &nv, false, &dig);
	return rc < 0 ? rc : rver_update(m, txn, &r->er_id, term, dig);
}

static int ver_apply_op(struct meta *m, MDB_txn *txn, struct srv_op *so)
{
	return ver_apply(m, txn, &so->so_m, so->so_term, so->so_vseq);
}

/* Before this replica orders an update of ri: the highest term it knows
 * must be its own; if not, take the next term of its own, durably. */
static int ridx_claim(struct srv *s, struct ridx *ri)
{
	uint32_t n = s->s_conf->cc_nr_servers;
	struct meta *m = eng_meta(s->s_eng);
	MDB_txn *txn;
	uint64_t t, t0;
	int rc;

	pthread_mutex_lock(&s->s_rlock);
	t0 = ri->ri_term;
	pthread_mutex_unlock(&s->s_rlock);
	if (t0 != 0 && t0 % n == s->s_self)
		return 0;
	t = t0 - t0 % n + s->s_self;
	if (t <= t0)
		t += n;
	rc = mdb_txn_begin(m->m_env, NULL, 0, &txn);
	if (rc != 0)
		return meta_err(rc, "index term");
	rc = rver_update(m, txn, &ri->ri_id, t, 0);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = meta_txn_commit(m, txn);
	if (rc != 0)
		return meta_err(rc, "index term commit");
	pthread_mutex_lock(&s->s_rlock);
	if (t > ri->ri_term)
		ri->ri_term = t;
	pthread_mutex_unlock(&s->s_rlock);
	LOG_INFO("server %s: index %s: ordering updates in term %" PRIu64,
		 s->s_me->cs_name, eng_id_str(&ri->ri_id), t);
	return 0;
}

/* ------------------------------------------------------- behind marks */

/*
 * Behind marks (docs/cluster.md "Replicas that missed updates").  A writer
 * that acknowledged an update without some replica (its call failed or it
 * was skipped as down) has the replicas that have it record "rbeh:HI:LO" =
 * {mask of the servers that missed it, the newest missed version}.  Each
 * holder calls the marked servers from its heartbeat thread
 * (srv_ridx_marks_serve()) with IDX_STATE + SRF_BEHIND: a replica told so
 * is behind (ri_behind) until it holds that version, verifies before it
 * serves the index, and refuses it (-ESTALE) while no peer with the update
 * was reachable.  The holder drops the bit once the marked replica answers
 * that it is verified and has that version (or a newer one).  A mark lives
 * with the index (dropped when it is deleted here).
 */
struct rbeh {
	uint64_t rb_mask;
	uint64_t rb_term;
	uint64_t rb_seq;
};
_Static_assert(sizeof(struct rbeh) == 24, "rbeh record size");

static void rbeh_name(char *buf, size_t size, const struct clovis_id *id)
{
	snprintf(buf, size, "rbeh:%016" PRIx64 ":%016" PRIx64, id->ci_hi,
		 id->ci_lo);
}

/* Under s_rlock (or before ri is shared): load ri's marks. */
static void rbeh_load(struct srv *s, struct ridx *ri)
{
	struct rbeh rb;
	char name[48];

	rbeh_name(name, sizeof name, &ri->ri_id);
	if (eng_sys_load(s->s_eng, name, &rb, sizeof rb) != 0)
		return;
	ri->ri_bmask = rb.rb_mask;
	ri->ri_bterm = rb.rb_term;
	ri->ri_bseq = rb.rb_seq;
}

/* Store ri's marks as they are now (none: the record is deleted). */
static int rbeh_save(struct srv *s, struct ridx *ri)
{
	struct rbeh rb;
	char name[48];

	pthread_mutex_lock(&s->s_rlock);
	rb = (struct rbeh){ri->ri_bmask, ri->ri_bterm, ri->ri_bseq};
	pthread_mutex_unlock(&s->s_rlock);
	rbeh_name(name, sizeof name, &ri->ri_id);
	if (rb.rb_mask == 0) {
		eng_sys_del(s->s_eng, name);
		return 0;
	}
	return eng_sys_save(s->s_eng, name, &rb, sizeof rb);
}

/* Record the replicas of mask (other than this server) as behind ri up to
 * (term, seq); this server's own bit makes it behind. */
static int rbeh_note(struct srv *s, struct ridx *ri, uint64_t mask,
		     uint64_t term, uint64_t seq)
{
	uint64_t self = 1ull << s->s_self, before;
	bool me = false, save;

	pthread_mutex_lock(&s->s_rlock);
	if ((mask & self) &&
	    vcmp(ri->ri_term, ri->ri_seq, term, seq) < 0) {
		me = !ri->ri_behind;
		ri->ri_behind = true;
		if (vcmp(ri->ri_nterm, ri->ri_nseq, term, seq) < 0) {
			ri->ri_nterm = term;
			ri->ri_nseq = seq;
		}
		ridx_unverify(ri);
	}
	before = ri->ri_bmask;
	ri->ri_bmask |= mask & ~self;
	save = ri->ri_bmask != before;
	if ((mask & ~self) &&
	    vcmp(ri->ri_bterm, ri->ri_bseq, term, seq) < 0) {
		ri->ri_bterm = term;
		ri->ri_bseq = seq;
		save = true;
	}
	pthread_mutex_unlock(&s->s_rlock);
	if (me)
		LOG_WARNING("server %s: index %s: missed updates up to term %"
			    PRIu64 " seq %" PRIu64 ": catching up before "
			    "serving it", s->s_me->cs_name,
			    eng_id_str(&ri->ri_id), term, seq);
	if (save) {
		LOG_INFO("server %s: index %s: replicas 0x%" PRIx64 " behind "
			 "(term %" PRIu64 " seq %" PRIu64 ")", s->s_me->cs_name,
			 eng_id_str(&ri->ri_id), mask & ~self, term, seq);
		pthread_cond_broadcast(&s->s_hbcond); /* tell them soon */
		return rbeh_save(s, ri);
	}
	return 0;
}

/* Send IDX_STATE + SRF_BEHIND (mask, term, seq) for id to server j from
 * peer table p; the reply in *out (NULL: not wanted). */
static int rbeh_call(struct srv *s, struct peers *p, uint32_t j,
		     const struct clovis_id *id, uint64_t mask, uint64_t term,
		     uint64_t seq, Reply **out)
{
	IdxReq q = IDX_REQ__INIT;
	SId sid;
	struct msg_buf b;
	struct rpc_result res;
	int rc;

	msg_id_out(&sid, id);
	q.id = &sid;
	q.rflags = SRF_INTERNAL | SRF_BEHIND;
	q.behind = mask;
	q.term = term;
	q.seq = seq;
	if (msg_pack(&q.base, &b) != 0)
		return -ENOMEM;
	rc = peers_call_ms(p, j, SOP_IDX_STATE, b.mb_p, b.mb_len, NULL,
			   srv_probe_ms(s), &res);
	free(b.mb_p);
	if (rc == 0 && out != NULL)
		rc = msg_reply_decode(res.rr_body, res.rr_len, 0, out);
	free(res.rr_body);
	return rc;
}

void srv_ridx_missed(struct srv *s, struct ridx *ri, uint64_t mask,
		     uint64_t told, uint64_t term, uint64_t seq)
{
	mask &= ~(1ull << s->s_self);
	if (mask == 0)
		return;
	if (rbeh_note(s, ri, mask, term, seq) != 0)
		LOG_WARNING("server %s: index %s: behind mark not stored: %s",
			    s->s_me->cs_name, eng_id_str(&ri->ri_id),
			    err_msg());
	for (uint32_t j = 0; j < s->s_conf->cc_nr_servers; j++)
		if (j != s->s_self && (told & (1ull << j)) &&
		    rbeh_call(s, s->s_peers, j, &ri->ri_id, mask, term, seq,
			      NULL) != 0)
			LOG_INFO("server %s: index %s: behind mark not sent to"
				 " server %s: %s", s->s_me->cs_name,
				 eng_id_str(&ri->ri_id),
				 s->s_conf->cc_servers[j].cs_name, err_msg());
}

/* Heartbeat thread: tell every marked replica that answers heartbeats
 * that it is behind; drop the mark once it answers caught up. */
static void srv_ridx_marks_serve(struct srv *s)
{
	enum { BATCH = 64 };
	struct { struct clovis_id id; uint64_t mask, term, seq; } m[BATCH];
	uint32_t nr = 0;

	pthread_mutex_lock(&s->s_rlock);
	for (uint32_t b = 0; b < SRV_RIDX_BUCKETS && nr < BATCH; b++)
		for (struct ridx *ri = s->s_ridx[b]; ri != NULL && nr < BATCH;
		     ri = ri->ri_next)
			if (ri->ri_bmask != 0)
				m[nr++] = (typeof(m[0])){ri->ri_id,
					ri->ri_bmask, ri->ri_bterm,
					ri->ri_bseq};
	pthread_mutex_unlock(&s->s_rlock);
	for (uint32_t k = 0; k < nr && !s->s_qstop; k++) {
		struct ridx *ri = ridx_get(s, &m[k].id);

		for (uint32_t j = 0; ri != NULL &&
		     j < s->s_conf->cc_nr_servers; j++) {
			Reply *rp = NULL;
			bool done;

			if (!(m[k].mask & (1ull << j)) ||
			    peers_down(s->s_hbpeers, j))
				continue;
			if (rbeh_call(s, s->s_hbpeers, j, &m[k].id, 1ull << j,
				      m[k].term, m[k].seq, &rp) != 0)
				continue;
			/* caught up: verified, and as new as the mark, or
			 * the index is gone there (deleted since) */
			done = !rp->exists ||
			       (rp->verified && vcmp(rp->term, rp->seq,
						     m[k].term, m[k].seq) >= 0);
			reply__free_unpacked(rp, NULL);
			if (!done)
				continue;
			pthread_mutex_lock(&s->s_rlock);
			done = vcmp(ri->ri_bterm, ri->ri_bseq, m[k].term,
				    m[k].seq) == 0;
			if (done)
				ri->ri_bmask &= ~(1ull << j);
			pthread_mutex_unlock(&s->s_rlock);
			if (done) {
				LOG_INFO("server %s: index %s: replica on "
					 "server %s caught up",
					 s->s_me->cs_name,
					 eng_id_str(&m[k].id),
					 s->s_conf->cc_servers[j].cs_name);
				rbeh_save(s, ri);
			}
		}
	}
}

/* The in-memory record of id, loaded from the store on first use. */
static struct ridx *ridx_get(struct srv *s, const struct clovis_id *id)
{
	uint32_t b = (uint32_t)((id->ci_hi * 31 + id->ci_lo) % SRV_RIDX_BUCKETS);
	struct ridx *ri;
	struct ridx_rec rec;
	char name[48];

	pthread_mutex_lock(&s->s_rlock);
	for (ri = s->s_ridx[b]; ri != NULL; ri = ri->ri_next)
		if (clovis_id_cmp(&ri->ri_id, id) == 0)
			break;
	if (ri == NULL && (ri = calloc(1, sizeof *ri)) != NULL) {
		ri->ri_id = *id;
		ridx_name(name, sizeof name, id);
		if (eng_sys_load(s->s_eng, name, &rec, sizeof rec) == 0) {
			ri->ri_exists = true;
			ri->ri_inc = rec.rr_inc;
			ri->ri_seq = rec.rr_seq;
		}
		ri->ri_term = rver_load(s, id).rv_term;
		ri->ri_tombs = true; /* unknown until looked at */
		rbeh_load(s, ri);
		ri->ri_next = s->s_ridx[b];
		s->s_ridx[b] = ri;
	}
	pthread_mutex_unlock(&s->s_rlock);
	if (ri == NULL)
		err_set(-ENOMEM, "index %s: replica record", eng_id_str(id));
	return ri;
}

/* In txn: the replica record of id := rec, or (del) deleted with every
 * version entry of id. */
static int ridx_rec_write(struct eng *e, MDB_txn *txn,
			  const struct clovis_id *id,
			  const struct ridx_rec *rec, bool del)
{
	char name[48];
	MDB_val k;
	int rc;

	ridx_name(name, sizeof name, id);
	if (!del)
		return meta_sys_put(txn, eng_meta(e), name, rec, sizeof *rec);
	k = (MDB_val){strlen(name), name};
	rc = mdb_del(txn, eng_meta(e)->m_sys, &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return meta_err(rc, "ridx delete");
	rbeh_name(name, sizeof name, id);
	k = (MDB_val){strlen(name), name};
	rc = mdb_del(txn, eng_meta(e)->m_sys, &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return meta_err(rc, "rbeh delete");
	return ver_drop(eng_meta(e), txn, id);
}

/* Commit item: store (or delete) the replica record of so. */
static int ridx_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct srv_op *so = (struct srv_op *)((char *)ci -
					      offsetof(struct srv_op, so_seq_ci));
	uint32_t kind = so->so_m.mr_req.er_kind;
	int rc = ridx_rec_write(e, txn, &so->so_m.mr_req.er_id, &so->so_rec,
				so->so_rec_del);

	if (rc == 0 && !so->so_rec_del &&
	    (kind == ER_IDX_PUT || kind == ER_IDX_DEL))
		rc = ver_apply_op(eng_meta(e), txn, so);
	return rc;
}

/* How long a CREATE or DELETE applied here may be ahead of the replicas
 * its client has not reached yet: the client calls them one after the
 * other, each call bounded by the call timeout, and then is done (it
 * reports success even when one failed: that replica catches up later). */
static uint64_t srv_ent_window_ms(const struct srv *s)
{
	return (uint64_t)srv_replicas(s) * s->s_conf->cc_call_ms +
	       SRV_LEASE_MS;
}

/* (s_rlock held) A CREATE or DELETE of ri starts or is applied here while
 * its peer replicas' generation is gen (ridx_gen()).  What a catch-up
 * decided before it is void: verify again (a replica CREATE of another
 * incarnation than the one made here means a client timed out here and
 * made the index on the next replica: the peers' incarnation wins then). */
static void ridx_ent_event(struct ridx *ri, uint64_t gen)
{
	ri->ri_eops++;
	ri->ri_egen = gen;
	ri->ri_ems = srv_now_ms();
	ridx_unverify(ri);
	ri->ri_kept_ms = 0;
}

/* In memory (s_rlock held): index ri created here with incarnation inc,
 * or deleted, while its peer replicas' generation was gen (the catch-up
 * keeps what this op decided for a while, see idx_ent_keep()). */
static void ridx_ent_mem(struct ridx *ri, uint32_t kind, uint64_t inc,
			 uint64_t gen)
{
	ridx_ent_event(ri, gen);
	if (kind == ER_ENT_CREATE) {
		ri->ri_inc = inc;
		ri->ri_seq = 0;
		ri->ri_exists = ri->ri_verified = true;
	} else {
		if (ri->ri_exists)
			ri->ri_dinc = ri->ri_inc;
		ri->ri_inc = ri->ri_seq = ri->ri_term = 0;
		ri->ri_exists = false;
		ri->ri_behind = false;
		ri->ri_nterm = ri->ri_nseq = 0;
		ri->ri_bmask = ri->ri_bterm = ri->ri_bseq = 0;
	}
}

void srv_seq_done_cb(struct eng_citem *ci, int rc);

/*
 * A client's PUT or DEL with an op tag, ordered here and durable: records
 * it found already done by the same op -- a DEL's record gone with a
 * tombstone of the op's tag, a PUT's (without OVERWRITE) record there
 * with a version of the op's tag: another replica applied this op before
 * the client lost its answer, and this one merged that -- are reported
 * done (rc 0) instead of -ENOENT / -EEXIST.  Nothing is written: the
 * version stays the first replica's.  Tag 0 (none) never matches.  Read
 * after the commit, so a later op that changed the key since leaves the
 * rc as it was (never a false 0: only this op wrote its tag).
 */
static void ridx_dedup(struct srv *s, struct srv_op *so)
{
	struct msg_req *m = &so->so_m;
	struct eng_req *r = &m->mr_req;
	struct meta *mt = eng_meta(s->s_eng);
	bool del = r->er_kind == ER_IDX_DEL;
	int want = del ? -ENOENT : -EEXIST;
	uint32_t hit = 0, i;
	MDB_txn *txn;

	if (m->mr_tag == 0 || r->er_rcs == NULL ||
	    (m->mr_rflags & (SRF_REPLICA | SRF_INTERNAL)) ||
	    (r->er_kind != ER_IDX_PUT && !del))
		return;
	for (i = 0; i < m->mr_nr && r->er_rcs[i] != want; i++)
		;
	if (i == m->mr_nr ||
	    mdb_txn_begin(mt->m_env, NULL, MDB_RDONLY, &txn) != 0)
		return;
	for (; i < m->mr_nr; i++) {
		struct vent ve;

		if (r->er_rcs[i] == want &&
		    vent_get(mt, txn, &r->er_id, r->er_keys->bv_buf[i],
			     r->er_keys->bv_len[i], &ve) == 0 &&
		    vent_tag(&ve) == m->mr_tag && vent_tomb(&ve) == del) {
			r->er_rcs[i] = 0;
			hit++;
		}
	}
	mdb_txn_abort(txn);
	if (hit > 0)
		LOG_INFO("server %s: index %s: %u record(s) of a %s already "
			 "done by the same op (tag %" PRIx64 ", its first "
			 "answer lost): reported done", s->s_me->cs_name,
			 eng_id_str(&r->er_id), hit, del ? "DEL" : "PUT",
			 m->mr_tag);
}

/*
 * Second stage of an update done (its replica record and version entries
 * durable): the op-tag check, then the answer (srv_seq_done_cb()).  Test
 * builds: fault srv.idx.answer.lost answers a client's PUT or DEL ordered
 * here -ETIMEDOUT once it is applied and durable, as if the answer were
 * lost: the client takes it for a transport failure and sends the op to
 * the next replica (tests/integ/idx_tomb_test.sh, "Op tags").
 */
static void ridx_seq_done(struct eng_citem *ci, int rc)
{
	struct srv_op *so = (struct srv_op *)((char *)ci -
					      offsetof(struct srv_op, so_seq_ci));
	uint32_t kind = so->so_m.mr_req.er_kind;

	if (rc == 0)
		ridx_dedup(so->so_srv, so);
	if (rc == 0 && (kind == ER_IDX_PUT || kind == ER_IDX_DEL) &&
	    !(so->so_m.mr_rflags & (SRF_REPLICA | SRF_INTERNAL)) &&
	    FAULT_HIT("srv.idx.answer.lost")) {
		LOG_INFO("index %s: fault srv.idx.answer.lost: %s applied, "
			 "answered -ETIMEDOUT", eng_id_str(&so->so_m.mr_req.er_id),
			 kind == ER_IDX_PUT ? "PUT" : "DEL");
		srv_reply(so, -ETIMEDOUT, NULL, "fault srv.idx.answer.lost: "
			  "the answer of an applied update lost");
		return;
	}
	srv_seq_done_cb(ci, rc);
}

bool srv_ridx_after_update(struct srv *s, struct srv_op *so)
{
	struct eng_req *r = &so->so_m.mr_req;
	struct ridx *ri = so->so_ridx;
	bool replica = (so->so_m.mr_rflags & SRF_REPLICA) != 0;
	uint64_t gen;

	if (ri == NULL)
		return false;
	gen = r->er_kind == ER_ENT_CREATE || r->er_kind == ER_ENT_DELETE ?
	      ridx_gen(s, &ri->ri_id) : 0;
	pthread_mutex_lock(&s->s_rlock);
	if (r->er_kind == ER_ENT_CREATE) {
		ridx_ent_mem(ri, r->er_kind, replica ? so->so_m.mr_incarnation
						     : r->er_ent.me_ctime_ns,
			     gen);
	} else if (r->er_kind == ER_ENT_DELETE) {
		ridx_ent_mem(ri, r->er_kind, 0, gen);
		so->so_rec_del = true;
	} else if (!replica) {
		ri->ri_seq++;
		so->so_term = ri->ri_term;
		so->so_vseq = ri->ri_seq;
	} else {
		uint64_t t = so->so_m.mr_term ? so->so_m.mr_term : ri->ri_term;

		/* A gap (some update of the ordering replica's never came
		 * here, or not yet) or another term (another replica orders
		 * now, maybe beside the one this replica followed): verify
		 * before serving it again. */
		if (so->so_m.mr_seq == ri->ri_seq + 1)
			ri->ri_seq = so->so_m.mr_seq;
		else
			ridx_unverify(ri);
		if (t != ri->ri_term)
			ridx_unverify(ri);
		if (t > ri->ri_term)
			ri->ri_term = t;
		so->so_term = t;
		so->so_vseq = so->so_m.mr_seq;
	}
	if (r->er_kind == ER_IDX_DEL)
		ri->ri_tombs = true;
	so->so_rec = (struct ridx_rec){ri->ri_inc, ri->ri_seq};
	so->so_new_seq = ri->ri_seq;
	pthread_mutex_unlock(&s->s_rlock);
	so->so_seq_ci.ci_apply = ridx_apply;
	so->so_seq_ci.ci_done = ridx_seq_done;
	return true;
}

/* ------------------------------------------------------- local requests */

/* The local entity record of id: 0, -ENOENT, or an error. */
static int idx_local(struct srv *s, const struct clovis_id *id,
		     struct meta_ent *me)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(eng_meta(s->s_eng)->m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin read");
	rc = meta_ent_get(txn, eng_meta(s->s_eng), id, me);
	mdb_txn_abort(txn);
	if (rc == 0 && me->me_type != CLOVIS_ET_IDX)
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
			 const struct clovis_id *id,
			 const struct clovis_id *cont, struct meta_ent *out)
{
	struct srv_wait w = {0};
	int rc;

	w.w_req.er_kind = kind;
	w.w_req.er_type = type;
	w.w_req.er_id = *id;
	if (cont != NULL)
		w.w_req.er_container = *cont;
	rc = srv_exec_wait(s, &w);
	if (out != NULL)
		*out = w.w_req.er_ent;
	return rc;
}

/* ------------------------------------------------------- catch-up */

/* What a peer replica said about an index. */
struct idx_peer {
	int ip_server;       /* -1: none */
	uint64_t ip_seq;
	uint64_t ip_inc;
	uint64_t ip_term;
	uint64_t ip_digest;
	struct clovis_id ip_cont;
	bool ip_doubt;       /* its heartbeat marks this server down */
};

static uint32_t srv_probe_ms(const struct srv *s)
{
	return s->s_conf->cc_call_ms < SRV_PROBE_MS ? s->s_conf->cc_call_ms
						    : SRV_PROBE_MS;
}

/* Ask peer j for its replica state; 1 if it has the index, 0 if not,
 * negative if it could not be asked. */
static int idx_peer_state(struct srv *s, uint32_t j, const struct clovis_id *id,
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

/* Run a PUT (overwrite) or DEL of nr records on the local copy. */
static int idx_local_kv(struct srv *s, const struct clovis_id *id,
			uint64_t ctime, uint32_t kind, uint32_t nr, void **kb,
			size_t *kl, void **vb, size_t *vl)
{
	struct srv_wait w = {0};
	int32_t *rcs = calloc(nr ? nr : 1, sizeof *rcs);
	struct clovis_bufvec keys = {nr, kb, kl}, vals = {nr, vb, vl};
	int rc;

	if (nr == 0)
		return 0;
	if (rcs == NULL)
		return err_set(-ENOMEM, "index %s: merge page", eng_id_str(id));
	w.w_req.er_kind = kind;
	w.w_req.er_type = CLOVIS_ET_IDX;
	w.w_req.er_id = *id;
	w.w_req.er_ent.me_ctime_ns = ctime;
	w.w_req.er_keys = &keys;
	w.w_req.er_vals = kind == ER_IDX_PUT ? &vals : NULL;
	w.w_req.er_rcs = rcs;
	w.w_req.er_flags = kind == ER_IDX_PUT ? CLOVIS_IF_OVERWRITE : 0;
	rc = srv_exec_wait(s, &w);
	free(rcs);
	return rc == -ENOENT && kind == ER_IDX_DEL ? 0 : rc;
}

/* One NEXT page from peer j after key (NULL: from the first record);
 * rflags SRF_VERSIONS: of its version entries. */
static int idx_peer_page(struct srv *s, uint32_t j, const struct clovis_id *id,
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
	q.flags = key != NULL ? CLOVIS_IF_EXCLUDE_START_KEY : 0;
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
static int idx_merge_page(struct srv *s, const struct clovis_id *id,
			  uint64_t ctime, const Reply *rp, uint32_t n,
			  bool versioned, uint64_t *taken)
{
	struct meta *m = eng_meta(s->s_eng);
	void **pk = calloc(4 * (size_t)n, sizeof(void *));
	size_t *pl = calloc(4 * (size_t)n, sizeof(size_t));
	struct vent *tv = calloc(n, sizeof *tv);
	uint32_t *ti = calloc(n, sizeof *ti);
	void **pv = pk + n, **dk = pk + 2 * n;
	size_t *pvl = pl + n, *dkl = pl + 2 * n;
	const uint8_t **kp = calloc(n, sizeof *kp);
	uint32_t np = 0, nd = 0, nt = 0;
	const uint8_t *k = rp->recs.data, *v = rp->recs.data;
	uint8_t ib[16 + CLOVIS_KEY_MAX];
	MDB_txn *txn = NULL;
	int rc = 0;

	if (pk == NULL || pl == NULL || tv == NULL || ti == NULL || kp == NULL) {
		rc = err_set(-ENOMEM, "index %s: merge page", eng_id_str(id));
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		v += rp->klen[i];
	rc = mdb_txn_begin(m->m_env, NULL, MDB_RDONLY, &txn);
	if (rc != 0) {
		rc = meta_err(rc, "index merge");
		goto out;
	}
	for (uint32_t i = 0; i < n; k += rp->klen[i], v += rp->vlen[i], i++) {
		struct vent lv, nv = {0, 0, 0};
		MDB_val ik, iv;
		bool have_v;

		kp[i] = k;
		have_v = vent_get(m, txn, id, k, rp->klen[i], &lv) == 0;
		if (versioned) {
			nv = (struct vent){rp->vterm[i], rp->vseq[i],
				vent_word(rp->rcs[i] == 1,
					  rp->n_vtag == n ? rp->vtag[i] : 0)};
			if (have_v && vcmp(lv.ve_term, lv.ve_seq, nv.ve_term,
					   nv.ve_seq) >= 0)
				continue;
		} else {
			if (have_v)
				continue;
			ik = meta_idx_key(ib, id, k, rp->klen[i]);
			if (mdb_get(txn, m->m_idx, &ik, &iv) == 0)
				continue;
		}
		tv[nt] = nv;
		ti[nt++] = i;
		if (vent_tomb(&nv)) {
			dk[nd] = (void *)k;
			dkl[nd++] = rp->klen[i];
		} else {
			pk[np] = (void *)k;
			pl[np] = rp->klen[i];
			pv[np] = (void *)v;
			pvl[np++] = rp->vlen[i];
		}
	}
	mdb_txn_abort(txn);
	txn = NULL;
	rc = idx_local_kv(s, id, ctime, ER_IDX_PUT, np, pk, pl, pv, pvl);
	if (rc == 0)
		rc = idx_local_kv(s, id, ctime, ER_IDX_DEL, nd, dk, dkl, NULL,
				  NULL);
	if (rc == 0 && versioned && nt > 0) {
		uint64_t dig = 0, term = 0;

		rc = mdb_txn_begin(m->m_env, NULL, 0, &txn);
		if (rc != 0) {
			rc = meta_err(rc, "index merge");
			txn = NULL;
		}
		for (uint32_t t = 0; rc >= 0 && t < nt; t++) {
			rc = vent_put(m, txn, id, kp[ti[t]], rp->klen[ti[t]],
				      &tv[t], true, &dig);
			if (tv[t].ve_term > term)
				term = tv[t].ve_term;
		}
		if (rc >= 0)
			rc = rver_update(m, txn, id, term, dig);
		if (rc == 0) {
			rc = meta_txn_commit(m, txn);
			txn = NULL;
			if (rc != 0)
				rc = meta_err(rc, "index merge commit");
		}
	}
	if (rc == 0)
		*taken += nt;
out:
	if (txn != NULL)
		mdb_txn_abort(txn);
	free(pk);
	free(pl);
	free(tv);
	free(ti);
	free(kp);
	return rc;
}

/* Merge peer j's copy of ri into the local one: its version entries
 * (per key the newest (term, seq) wins, tombstones delete), then its
 * records that have no version entry and are missing here. */
static int idx_merge(struct srv *s, struct ridx *ri, uint32_t j,
		     uint64_t ctime, uint64_t *taken)
{
	const struct clovis_id *id = &ri->ri_id;
	uint8_t last[CLOVIS_KEY_MAX];
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
	const struct clovis_id *id = &ri->ri_id;
	struct ridx_rec rec = {p->ip_inc, 0};
	char name[48];
	int rc = 0;

	ridx_name(name, sizeof name, id);
	if (have_local)
		rc = srv_local_ent(s, ER_ENT_DELETE, CLOVIS_ET_IDX, id, NULL,
				   NULL);
	if (rc == 0)
		rc = eng_sys_save(s->s_eng, name, &rec, sizeof rec);
	if (rc == 0) {
		rc = srv_local_ent(s, ER_ENT_CREATE, CLOVIS_ET_IDX, id,
				   &p->ip_cont, me);
		if (rc == -ENOENT) { /* its container was made while away */
			srv_local_ent(s, ER_ENT_CREATE, CLOVIS_ET_CONTAINER,
				      &p->ip_cont, NULL, NULL);
			rc = srv_local_ent(s, ER_ENT_CREATE, CLOVIS_ET_IDX, id,
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
static void idx_nudge(struct srv *s, uint32_t j, const struct clovis_id *id)
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
 * (two CREATEs raced, e.g. a client timed out on this server and made it
 * on the next replica).
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

/* Verify ri against the other replicas (see the top of this file). */
static void idx_sync(struct srv *s, struct ridx *ri)
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
	local = idx_local(s, &ri->ri_id, &me) == 0;
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
		got = idx_peer_state(s, j, &ri->ri_id, &pst);
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
	dig = rver_load(s, &ri->ri_id).rv_digest;
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
		dig = rver_load(s, &ri->ri_id).rv_digest;
	}
	if (rc == 0 && local && from >= 0 && !ridx_ent_moved(s, ri, eops)) {
		struct ridx_rec rec = {ri->ri_inc, seq};
		char name[48];

		ridx_name(name, sizeof name, &ri->ri_id);
		rc = eng_sys_save(s->s_eng, name, &rec, sizeof rec);
		pthread_mutex_lock(&s->s_rlock);
		ri->ri_seq = seq;
		if (term > ri->ri_term)
			ri->ri_term = term;
		ri->ri_exists = true;
		if (taken > 0)
			ri->ri_tombs = true;
		pthread_mutex_unlock(&s->s_rlock);
		if (taken > 0 || fresh) {
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
		rc = srv_local_ent(s, ER_ENT_DELETE, CLOVIS_ET_IDX, &ri->ri_id,
				   NULL, NULL);
		if (rc == 0) {
			struct meta *m = eng_meta(s->s_eng);
			char name[48];
			MDB_txn *txn;

			ridx_name(name, sizeof name, &ri->ri_id);
			eng_sys_del(s->s_eng, name);
			if (mdb_txn_begin(m->m_env, NULL, 0, &txn) == 0) {
				if (ver_drop(m, txn, &ri->ri_id) == 0)
					meta_txn_commit(m, txn);
				else
					mdb_txn_abort(txn);
			}
			pthread_mutex_lock(&s->s_rlock);
			ri->ri_exists = false;
			ri->ri_term = 0;
			ri->ri_ems = 0; /* no op of its own is ahead now */
			pthread_mutex_unlock(&s->s_rlock);
		}
	}
	if (rc != 0)
		LOG_WARNING("server %s: index %s: catch-up failed: %s",
			    s->s_me->cs_name, eng_id_str(&ri->ri_id), err_msg());
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
		       vcmp(ri->ri_term, ri->ri_seq, ri->ri_nterm,
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
static void tomb_request(struct srv *s, struct ridx *ri, uint64_t dig)
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

/* Drop up to SRV_TOMB_BATCH tombstones of ri, in key order, if the
 * index's digest is dig, in one transaction with the digest.  Returns the
 * number dropped (0 when the digest moved on) or an error. */
static int tomb_collect(struct srv *s, struct ridx *ri, uint64_t dig)
{
	struct meta *m = eng_meta(s->s_eng);
	const struct clovis_id *id = &ri->ri_id;
	uint8_t pre[VKEY_HEAD];
	struct rver rv = {0, 0};
	MDB_cursor *cur = NULL;
	MDB_txn *txn;
	MDB_val k, v;
	char name[48];
	uint64_t gone = 0;
	uint32_t n = 0;
	bool more = false;
	int rc;

	pthread_mutex_lock(&s->s_rlock);
	if (ri->ri_behind || ri->ri_bmask != 0) {
		/* docs/cluster.md "Replicas that missed updates" */
		pthread_mutex_unlock(&s->s_rlock);
		return 0;
	}
	ri->ri_tombs = false; /* a DEL from now on sets it again */
	pthread_mutex_unlock(&s->s_rlock);
	rc = mdb_txn_begin(m->m_env, NULL, 0, &txn);
	if (rc != 0)
		return meta_err(rc, "index tombstones");
	rver_name(name, sizeof name, id);
	rc = meta_sys_get(txn, m, name, &rv, sizeof rv);
	if (rc != 0 || rv.rv_digest != dig) {
		mdb_txn_abort(txn);
		pthread_mutex_lock(&s->s_rlock);
		ri->ri_tombs = true;
		pthread_mutex_unlock(&s->s_rlock);
		return rc == -ENOENT ? 0 : rc;
	}
	vkey(m, pre, id, NULL, 0, &k);
	rc = mdb_cursor_open(txn, m->m_sys, &cur);
	for (rc = rc != 0 ? rc : mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	     rc == 0 && k.mv_size >= VKEY_HEAD &&
	     memcmp(k.mv_data, pre, VKEY_HEAD) == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct vent ve;

		if (v.mv_size != sizeof ve)
			continue;
		memcpy(&ve, v.mv_data, sizeof ve);
		if (!vent_tomb(&ve))
			continue;
		if (n == SRV_TOMB_BATCH) {
			more = true;
			break;
		}
		gone ^= vent_hash((const uint8_t *)k.mv_data + VKEY_HEAD,
				  k.mv_size - VKEY_HEAD, &ve);
		rc = mdb_cursor_del(cur, 0);
		if (rc != 0)
			break;
		n++;
	}
	if (cur != NULL)
		mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return meta_err(rc, "index tombstones");
	}
	if (n == 0) {
		mdb_txn_abort(txn);
		return 0;
	}
	rv.rv_digest ^= gone;
	rc = meta_sys_put(txn, m, name, &rv, sizeof rv);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = meta_txn_commit(m, txn);
	if (rc != 0)
		return meta_err(rc, "index tombstones commit");
	if (more) {
		pthread_mutex_lock(&s->s_rlock);
		ri->ri_tombs = true;
		pthread_mutex_unlock(&s->s_rlock);
	}
	__atomic_add_fetch(&s->s_cnt.sc_tombs, n, __ATOMIC_RELAXED);
	LOG_INFO("server %s: index %s: %u tombstones collected",
		 s->s_me->cs_name, eng_id_str(id), n);
	return (int)n;
}

/* Ask peer j to collect id's tombstones if its digest is dig. */
static void tomb_ask(struct srv *s, uint32_t j, const struct clovis_id *id,
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
		idx_sync(s, ri); /* a peer was away: verify (merge) first */
	pthread_mutex_lock(&s->s_rlock);
	/* A behind mark (held or against this replica) means some replica
	 * misses an update: its tombstones must stay until it caught up. */
	exists = ri->ri_exists && !ri->ri_lonely && ri->ri_verified &&
		 !ri->ri_behind && ri->ri_bmask == 0;
	inc = ri->ri_inc;
	pthread_mutex_unlock(&s->s_rlock);
	if (!exists)
		return;
	dig = rver_load(s, &ri->ri_id).rv_digest;
	for (uint32_t i = 1; equal && i < srv_replicas(s); i++) {
		uint32_t j = (home + i) % n;
		struct idx_peer p;

		equal = !peers_down(s->s_hbpeers, j) &&
			idx_peer_state(s, j, &ri->ri_id, &p) == 1 &&
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
static void tomb_pass(struct srv *s, bool rounds)
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

/* ------------------------------------------------------- syncer */

static void srv_idx_go(struct srv *s, struct srv_op *so);
static void srv_idx_ent_go(struct srv *s, struct srv_op *so);

/* At start: verify every index this server holds a replica record of, so
 * that a returning replica catches up while its peers are there, not only
 * when it is next asked to serve (bounded by the records found). */
static void srv_sync_all(struct srv *s)
{
	struct meta *m = eng_meta(s->s_eng);
	struct clovis_id *ids = NULL;
	size_t nr = 0, cap = 0;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k = {5, "ridx:"}, v;
	int rc;

	if (mdb_txn_begin(m->m_env, NULL, MDB_RDONLY, &txn) != 0)
		return;
	if (mdb_cursor_open(txn, m->m_sys, &cur) == 0) {
		for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		     rc == 0 && k.mv_size == 5 + 33 &&
		     memcmp(k.mv_data, "ridx:", 5) == 0;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			char hex[40];
			struct clovis_id id;

			memcpy(hex, (char *)k.mv_data + 5, 33);
			hex[33] = '\0';
			if (clovis_id_parse(hex, &id) != 0)
				continue;
			if (nr == cap) {
				void *np = realloc(ids, (cap ? cap * 2 : 64) *
							sizeof *ids);

				if (np == NULL)
					break;
				ids = np;
				cap = cap ? cap * 2 : 64;
			}
			ids[nr++] = id;
		}
		mdb_cursor_close(cur);
	}
	mdb_txn_abort(txn);
	for (size_t i = 0; i < nr && !s->s_qstop; i++) {
		struct ridx *ri = ridx_get(s, &ids[i]);

		if (ri != NULL && !ri->ri_verified)
			idx_sync(s, ri);
	}
	free(ids);
}

/* Wait on s_qcond (s_qlock held) until the wall clock time due_ms. */
static void syncer_wait_until(struct srv *s, uint64_t due_ms)
{
	struct timespec ts;
	uint64_t now = srv_now_ms(), wait_ms = due_ms > now ? due_ms - now : 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(wait_ms / 1000);
	ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&s->s_qcond, &s->s_qlock, &ts);
}

static void *srv_syncer_main(void *arg)
{
	struct srv *s = arg;
	uint64_t tomb_due = srv_now_ms() + SRV_TOMB_PASS_MS;

	eng_thread_enter();
	srv_sync_all(s);
	for (;;) {
		struct srv_op *so;
		bool tombs;

		pthread_mutex_lock(&s->s_qlock);
		while (s->s_qhead == NULL && !s->s_qstop && !s->s_tomb_kick &&
		       srv_now_ms() < tomb_due)
			syncer_wait_until(s, tomb_due);
		so = s->s_qhead;
		if (so != NULL) {
			s->s_qhead = so->so_next;
			if (s->s_qhead == NULL)
				s->s_qtail = NULL;
			s->s_qnr--;
		}
		tombs = so == NULL && !s->s_qstop;
		s->s_tomb_kick = false;
		pthread_mutex_unlock(&s->s_qlock);
		if (tombs) {
			/* Between requests: collect tombstones. */
			tomb_pass(s, srv_now_ms() >= tomb_due);
			if (srv_now_ms() >= tomb_due)
				tomb_due = srv_now_ms() + SRV_TOMB_PASS_MS;
			continue;
		}
		if (so == NULL)
			break;
		if (ridx_stale(s, so->so_ridx, &so->so_vmark))
			idx_sync(s, so->so_ridx);
		if (so->so_m.mr_op == SOP_ENT)
			srv_idx_ent_go(s, so);
		else
			srv_idx_go(s, so);
	}
	eng_thread_leave();
	return NULL;
}

/*
 * Heartbeat: every SRV_HEARTBEAT_MS, call each server this one shares index
 * replicas with (ring distance below R, both ways).  A failed call changes
 * that peer's peers_gen(), which makes every index replicated on it stale
 * here (ridx_stale()): a server cut off from its peers re-verifies its
 * indices before it serves them again, even if it was never restarted.
 * Heartbeats go from an endpoint of their own (s_hbpeers): a call to a
 * dead peer holds up an endpoint's other sends until it times out, which
 * must not delay the answers to clients.
 */
static void *srv_hb_main(void *arg)
{
	struct srv *s = arg;
	uint32_t n = s->s_conf->cc_nr_servers, r = srv_replicas(s);

	for (;;) {
		struct timespec ts;

		for (uint32_t j = 0; j < n; j++) {
			uint32_t fwd = (j + n - s->s_self) % n;
			struct rpc_result res;
			bool was;
			int rc;

			if (j == s->s_self || (fwd >= r && n - fwd >= r))
				continue;
			/* Test builds: fault srv.hb.down.keep leaves a peer
			 * found down uncalled, so this table keeps it down
			 * (and the marks held for it) while it is up, as
			 * when its calls keep failing from here only
			 * (dtx_cluster_test.sh 4f). */
			was = peers_down(s->s_hbpeers, j);
			if (was && FAULT_HIT("srv.hb.down.keep"))
				continue;
			__atomic_store_n(&s->s_hb_since, peers_clock_ms(),
					 __ATOMIC_RELEASE);
			__atomic_store_n(&s->s_hb_peer, (int32_t)j,
					 __ATOMIC_RELEASE);
			rc = peers_call_ms(s->s_hbpeers, j, RPC_OP_NOOP, NULL,
					   0, NULL, srv_probe_ms(s), &res);
			__atomic_store_n(&s->s_hb_peer, -1, __ATOMIC_RELEASE);
			free(res.rr_body);
			if (was != peers_down(s->s_hbpeers, j)) {
				if (was)
					LOG_INFO("server %s: server %s answers "
						 "again", s->s_me->cs_name,
						 s->s_conf->cc_servers[j].cs_name);
				else
					LOG_WARNING("server %s: server %s does "
						    "not answer: %s",
						    s->s_me->cs_name,
						    s->s_conf->cc_servers[j].cs_name,
						    rc != 0 ? err_msg() : "?");
			}
		}
		srv_ridx_marks_serve(s);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)SRV_HEARTBEAT_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&s->s_qlock);
		if (!s->s_qstop)
			pthread_cond_timedwait(&s->s_hbcond, &s->s_qlock, &ts);
		if (s->s_qstop) {
			pthread_mutex_unlock(&s->s_qlock);
			break;
		}
		pthread_mutex_unlock(&s->s_qlock);
	}
	return NULL;
}

/*
 * Stall watch: note the time every SRV_TICK_MS; a gap above SRV_LEASE_MS
 * since the last note means this process did not run for that long
 * (SIGSTOP, a long pause, starved): count it, so that every index
 * verifies before it is next served (ridx_stalled()).  Writers may have
 * skipped this server meanwhile; the behind marks they left reach it a
 * heartbeat or more after it runs again, and the contact lease does not
 * see the stall once a heartbeat sent after it is answered.  The count
 * goes up before the time is noted.
 */
static void *srv_tick_main(void *arg)
{
	const struct timespec tick = {0, (long)SRV_TICK_MS * 1000000L};
	struct srv *s = arg;

	/* A relative sleep on the monotonic clock: a step of the wall
	 * clock neither stretches the tick nor counts as a stall.  Stops
	 * within a tick of s_qstop. */
	while (!__atomic_load_n(&s->s_qstop, __ATOMIC_ACQUIRE)) {
		uint64_t now = srv_now_ms();
		uint64_t last = __atomic_load_n(&s->s_tick_ms, __ATOMIC_RELAXED);

		if (now > last + SRV_LEASE_MS) {
			__atomic_add_fetch(&s->s_stalls, 1, __ATOMIC_RELEASE);
			LOG_WARNING("server %s: did not run for %" PRIu64 " ms "
				    "(stopped or starved): verifying every "
				    "index before serving it",
				    s->s_me->cs_name, now - last);
		}
		__atomic_store_n(&s->s_tick_ms, now, __ATOMIC_RELEASE);
		clock_nanosleep(CLOCK_MONOTONIC, 0, &tick, NULL);
	}
	return NULL;
}

int srv_syncer_start(struct srv *s)
{
	int rc = pthread_create(&s->s_syncer, NULL, srv_syncer_main, s);

	if (rc != 0)
		return err_set(-rc, "server: syncer thread: %s", strerror(rc));
	s->s_syncer_on = true;
	rc = pthread_create(&s->s_hb, NULL, srv_hb_main, s);
	if (rc != 0)
		return err_set(-rc, "server: heartbeat thread: %s",
			       strerror(rc));
	s->s_hb_on = true;
	__atomic_store_n(&s->s_tick_ms, srv_now_ms(), __ATOMIC_RELEASE);
	rc = pthread_create(&s->s_tick, NULL, srv_tick_main, s);
	if (rc != 0)
		return err_set(-rc, "server: stall watch thread: %s",
			       strerror(rc));
	s->s_tick_on = true;
	return 0;
}

void srv_syncer_stop(struct srv *s)
{
	if (!s->s_syncer_on)
		return;
	pthread_mutex_lock(&s->s_qlock);
	__atomic_store_n(&s->s_qstop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&s->s_qcond);
	pthread_cond_broadcast(&s->s_hbcond);
	pthread_mutex_unlock(&s->s_qlock);
	pthread_join(s->s_syncer, NULL);
	s->s_syncer_on = false;
	if (s->s_hb_on)
		pthread_join(s->s_hb, NULL);
	s->s_hb_on = false;
	if (s->s_tick_on)
		pthread_join(s->s_tick, NULL);
	s->s_tick_on = false;
}

/* Park so until its index is verified. */
static void srv_park(struct srv *s, struct srv_op *so)
{
	pthread_mutex_lock(&s->s_qlock);
	if (s->s_qnr >= SRV_PARK_MAX) {
		pthread_mutex_unlock(&s->s_qlock);
		srv_reply_err(so, err_set(-EBUSY, "server %s: %u requests wait"
					  " for index catch-up",
					  s->s_me->cs_name, SRV_PARK_MAX));
		return;
	}
	so->so_next = NULL;
	if (s->s_qtail != NULL)
		s->s_qtail->so_next = so;
	else
		s->s_qhead = so;
	s->s_qtail = so;
	s->s_qnr++;
	pthread_cond_signal(&s->s_qcond);
	pthread_mutex_unlock(&s->s_qlock);
}

/* Must so wait for its index to be verified?  Server-to-server requests
 * never wait; a client's request does if the index may be stale here, or
 * if the client could not reach this server since its last answer
 * (SRF_VERIFY: this server may have been cut off without noticing). */
static bool srv_needs_sync(struct srv *s, struct srv_op *so)
{
	if (so->so_m.mr_rflags & (SRF_INTERNAL | SRF_REPLICA))
		return false;
	/* Before anything that asks for a verification: one that begins
	 * after this counts for this request (ridx_stale()). */
	pthread_mutex_lock(&s->s_rlock);
	so->so_vmark = so->so_ridx->ri_vbegun;
	pthread_mutex_unlock(&s->s_rlock);
	if (so->so_m.mr_rflags & SRF_VERIFY) {
		/* Every index here may be stale, not only this one. */
		__atomic_add_fetch(&s->s_vepoch, 1, __ATOMIC_ACQ_REL);
		return true;
	}
	return ridx_stale(s, so->so_ridx, &so->so_vmark);
}

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
	int rc = idx_local(s, &r->er_id, &me);

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

static void srv_idx_go(struct srv *s, struct srv_op *so)
{
	uint32_t kind = so->so_m.mr_req.er_kind;
	int rc;

	idx_read_fault(s, so);
	rc = idx_lonely_check(s, so);

	if (rc == 0)
		rc = idx_prepare(s, so);
	if (rc == 0 && (kind == ER_IDX_PUT || kind == ER_IDX_DEL) &&
	    !(so->so_m.mr_rflags & (SRF_REPLICA | SRF_INTERNAL)))
		rc = ridx_claim(s, so->so_ridx);

	if (rc != 0)
		srv_reply_err(so, rc);
	else
		srv_run_prepared(so);
}

/* An internal NEXT with SRF_VERSIONS: a page of id's version entries
 * after the start key, each with its (term, seq) and, unless a tombstone
 * (rcs 1), the record's value (catch-up merge, idx_merge()). */
static void srv_idx_versions(struct srv *s, struct srv_op *so)
{
	struct msg_req *m = &so->so_m;
	const struct clovis_id *id = &m->mr_req.er_id;
	struct meta *mt = eng_meta(s->s_eng);
	uint32_t cap = m->mr_nr < SRV_SYNC_PAGE ? m->mr_nr : SRV_SYNC_PAGE;
	uint8_t pre[VKEY_HEAD], sk[VKEY_HEAD + CLOVIS_KEY_MAX];
	uint8_t ib[16 + CLOVIS_KEY_MAX];
	Reply rp = REPLY__INIT;
	uint32_t *kl = calloc(cap ? cap : 1, sizeof *kl);
	uint32_t *vl = calloc(cap ? cap : 1, sizeof *vl);
	int32_t *rcs = calloc(cap ? cap : 1, sizeof *rcs);
	uint64_t *vt = calloc(cap ? cap : 1, sizeof *vt);
	uint64_t *vs = calloc(cap ? cap : 1, sizeof *vs);
	uint64_t *vg = calloc(cap ? cap : 1, sizeof *vg);
	uint8_t *kb = malloc((size_t)(cap ? cap : 1) * CLOVIS_KEY_MAX);
	uint8_t *vb = NULL, *out = NULL;
	size_t kbytes = 0, vbytes = 0, vcap = 0;
	uint32_t nr = 0;
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	MDB_val k, v, pk;
	int rc = 0;

	if (kl == NULL || vl == NULL || rcs == NULL || vt == NULL ||
	    vs == NULL || vg == NULL || kb == NULL) {
		rc = err_set(-ENOMEM, "index %s: versions page", eng_id_str(id));
		goto out;
	}
	vkey(mt, pre, id, NULL, 0, &pk);
	if (m->mr_start_null || !vkey(mt, sk, id, m->mr_keys.bv_buf[0],
				      m->mr_keys.bv_len[0], &k))
		k = pk;
	rc = mdb_txn_begin(mt->m_env, NULL, MDB_RDONLY, &txn);
	if (rc == 0)
		rc = mdb_cursor_open(txn, mt->m_sys, &cur);
	if (rc != 0) {
		rc = meta_err(rc, "index versions page");
		goto out;
	}
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == 0 && !m->mr_start_null && k.mv_size ==
	    VKEY_HEAD + m->mr_keys.bv_len[0] &&
	    memcmp((uint8_t *)k.mv_data + VKEY_HEAD, m->mr_keys.bv_buf[0],
		   m->mr_keys.bv_len[0]) == 0)
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	for (; rc == 0 && nr < cap && k.mv_size >= VKEY_HEAD &&
	       memcmp(k.mv_data, pre, VKEY_HEAD) == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		const uint8_t *key = (const uint8_t *)k.mv_data + VKEY_HEAD;
		size_t klen = k.mv_size - VKEY_HEAD;
		struct vent ve;
		MDB_val ik, iv = {0, NULL};

		if (v.mv_size != sizeof ve || klen > CLOVIS_KEY_MAX)
			continue;
		memcpy(&ve, v.mv_data, sizeof ve);
		if (!vent_tomb(&ve)) {
			ik = meta_idx_key(ib, id, key, klen);
			if (mdb_get(txn, mt->m_idx, &ik, &iv) != 0)
				continue; /* its record is not durable here */
		}
		if (nr > 0 && kbytes + vbytes + klen + iv.mv_size >
			      MSG_REPLY_BUDGET)
			break;
		if (vbytes + iv.mv_size > vcap) {
			size_t nc = (vbytes + iv.mv_size) * 2 + 1;
			void *np = realloc(vb, nc);

			if (np == NULL) {
				rc = err_set(-ENOMEM, "index %s: versions page",
					     eng_id_str(id));
				goto out;
			}
			vb = np;
			vcap = nc;
		}
		memcpy(kb + kbytes, key, klen);
		kbytes += klen;
		if (iv.mv_size > 0)
			memcpy(vb + vbytes, iv.mv_data, iv.mv_size);
		vbytes += iv.mv_size;
		kl[nr] = (uint32_t)klen;
		vl[nr] = (uint32_t)iv.mv_size;
		rcs[nr] = vent_tomb(&ve) ? 1 : 0;
		vt[nr] = ve.ve_term;
		vg[nr] = vent_tag(&ve);
		vs[nr++] = ve.ve_seq;
	}
	rc = 0;
	out = malloc(kbytes + vbytes + 1);
	if (out == NULL) {
		rc = err_set(-ENOMEM, "index %s: versions page", eng_id_str(id));
		goto out;
	}
	memcpy(out, kb, kbytes);
	if (vbytes > 0)
		memcpy(out + kbytes, vb, vbytes);
	rp.recs.data = out;
	rp.recs.len = kbytes + vbytes;
	rp.n_klen = rp.n_vlen = rp.n_rcs = rp.n_vterm = rp.n_vseq = nr;
	rp.n_vtag = nr;
	rp.vtag = vg;
	rp.klen = kl;
	rp.vlen = vl;
	rp.rcs = rcs;
	rp.vterm = vt;
	rp.vseq = vs;
	rp.done = nr;
out:
	if (cur != NULL)
		mdb_cursor_close(cur);
	if (txn != NULL)
		mdb_txn_abort(txn);
	if (rc != 0)
		srv_reply_err(so, rc);
	else
		srv_reply(so, 0, &rp, NULL);
	free(kl);
	free(vl);
	free(rcs);
	free(vt);
	free(vs);
	free(vg);
	free(kb);
	free(vb);
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

static void srv_idx_ent_go(struct srv *s, struct srv_op *so)
{
	struct eng_req *r = &so->so_m.mr_req;
	struct meta_ent me;
	int rc = 0;

	if (r->er_kind == ER_ENT_OPEN || r->er_kind == ER_ENT_GETATTR ||
	    r->er_kind == ER_ENT_SETATTR) {
		rc = idx_local(s, &r->er_id, &me);
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
	rc = idx_local(s, &r->er_id, &me);
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
		tomb_request(s, ri, so->so_m.mr_seq);
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
		if (rc == 0 && rbeh_note(s, ri, so->so_m.mr_behind,
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
		struct rver rv = rver_load(s, &r->er_id);

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

struct ridx *srv_ridx_find(struct srv *s, const struct clovis_id *id)
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
	return rc != 0 ? rc : ver_apply(eng_meta(e), txn, m, term, seq);
}

/* A dtx member index CREATE (incarnation inc) or DELETE, in the COMMIT's
 * transaction: the replica record a plain CREATE or DELETE stores by its
 * second commit item (ridx_apply), here in the same commit. */
int srv_ridx_ent_store(struct eng *e, MDB_txn *txn,
		       const struct clovis_id *id, uint32_t kind, uint64_t inc)
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
bool srv_ridx_mine(struct srv *s, const struct clovis_id *id)
{
	const struct clu_conf *c = s->s_conf;
	uint32_t n = c->cc_nr_servers;

	return (s->s_self + n - clu_home(c, id)) % n < srv_replicas(s);
}
