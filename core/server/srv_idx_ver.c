/*
 * srv_idx_ver.c — index replicas (overview: the top of srv_idx.c):
 * replica records {inc, seq} in memory and in the sys table, version
 * entries {term, seq, tag} and the digest, behind marks, and the second
 * stage of an update (its replica record and version entries, then the
 * op-tag check before the answer).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/fault.h"
#include "core/idx.h"
#include "core/log.h"
#include "core/server/srv_idx_internal.h"

/* ------------------------------------------------------- replica records */

void ridx_name(char *buf, size_t size, const struct st_id *id)
{
	snprintf(buf, size, "ridx:%016" PRIx64 ":%016" PRIx64, id->si_hi,
		 id->si_lo);
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
uint32_t srv_replicas(const struct srv *s)
{
	const struct clu_conf *c = s->s_conf;

	return c->cc_replicas < c->cc_nr_servers ? c->cc_replicas
						  : c->cc_nr_servers;
}

/* The sum of peers_gen() over the other replicas of id and of s_vepoch:
 * it changes when one of them became unreachable or reachable again, or a
 * client asked this server to verify, since it was read. */
uint64_t ridx_gen(struct srv *s, const struct st_id *id)
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
static bool ridx_unheard(struct srv *s, const struct st_id *id,
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
 * verification running now does not count (ridx_sync() compares ri_unver
 * from its start with its end). */
void ridx_unverify(struct ridx *ri)
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
bool ridx_stale(struct srv *s, struct ridx *ri, const uint64_t *vmark)
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
 * earlier once every replica holds them (srv_idx_tomb.c).  The digest is the
 * XOR of a hash of every version entry, so two replicas with the same
 * entries have the same digest whatever the order they applied them in.
 * Catch-up merges: per key the newest (term, seq) wins, a tombstone
 * deleting the record.  A key too long for the sys table's key limit
 * (494 bytes + the 17 of the head: a key of ST_KEY_MAX, 495 bytes) takes
 * the long form (srv_idx_internal.h, VKEY_TAG_LONG): its first bytes and
 * a 128-bit hash, the whole key in the value.
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
 *
 * The stored forms, struct rver and struct vent, are in srv_idx_internal.h.
 */
bool ridx_vent_tomb(const struct vent *v)
{
	return (v->ve_tomb & 1) != 0;
}

uint64_t ridx_vent_tag(const struct vent *v)
{
	return v->ve_tomb >> 1;
}

/* The ve_tomb word of a version: tombstone bit and tag (below 2^63). */
uint64_t ridx_vent_word(bool tomb, uint64_t tag)
{
	return (tag & MSG_TAG_MAX) << 1 | (tomb ? 1 : 0);
}

void ridx_rver_name(char *buf, size_t size, const struct st_id *id)
{
	snprintf(buf, size, "rver:%016" PRIx64 ":%016" PRIx64, id->si_hi,
		 id->si_lo);
}

static void be64_out(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

void ridx_vpre(uint8_t *buf, const struct st_id *id, bool long_form)
{
	buf[0] = long_form ? VKEY_TAG_LONG : VKEY_TAG;
	be64_out(buf + 1, id->si_hi);
	be64_out(buf + 9, id->si_lo);
}

/* FNV-1a 64 over key from basis, then mixed: one half of a long key's
 * hash (two bases: 128 bits). */
static uint64_t vkey_hash(const uint8_t *key, size_t klen, uint64_t basis)
{
	uint64_t h = basis;

	for (size_t i = 0; i < klen; i++) {
		h ^= key[i];
		h *= 0x100000001b3ull;
	}
	return st_mix64(h ^ klen);
}

/* The sys key of key's version entry (srv_idx_internal.h): VKEY_TAG id
 * key, or for a key too long for that, VKEY_TAG_LONG id, the key's first
 * m_maxkey - VKEY_HEAD - VKEY_HASH bytes and 128 bits of its hash. */
bool ridx_vkey(const struct meta *m, uint8_t *buf, const struct st_id *id,
	       const void *key, size_t klen, size_t *len)
{
	size_t keep = m->m_maxkey - VKEY_HEAD - VKEY_HASH;
	bool long_form = VKEY_HEAD + klen > m->m_maxkey;

	ridx_vpre(buf, id, long_form);
	if (!long_form) {
		if (klen > 0)
			memcpy(buf + VKEY_HEAD, key, klen);
		*len = VKEY_HEAD + klen;
		return false;
	}
	memcpy(buf + VKEY_HEAD, key, keep);
	be64_out(buf + VKEY_HEAD + keep,
		 vkey_hash(key, klen, 0xcbf29ce484222325ull));
	be64_out(buf + VKEY_HEAD + keep + 8,
		 vkey_hash(key, klen, 0x84222325cbf29ce4ull));
	*len = m->m_maxkey;
	return true;
}

bool ridx_vent_decode(const struct meta_rec *r, struct vent *ve,
		      const uint8_t **key, size_t *klen)
{
	const uint8_t *k = r->mc_key;

	if (r->mc_klen < VKEY_HEAD || r->mc_vlen < sizeof *ve)
		return false;
	if (k[0] == VKEY_TAG_LONG) {
		*key = (const uint8_t *)r->mc_val + sizeof *ve;
		*klen = r->mc_vlen - sizeof *ve;
		if (*klen == 0 || *klen > ST_KEY_MAX)
			return false;
	} else {
		if (r->mc_vlen != sizeof *ve || r->mc_klen - VKEY_HEAD >
						ST_KEY_MAX)
			return false;
		*key = k + VKEY_HEAD;
		*klen = r->mc_klen - VKEY_HEAD;
	}
	memcpy(ve, r->mc_val, sizeof *ve);
	return true;
}

/* One version entry's share of the digest. */
uint64_t ridx_vent_hash(const void *key, size_t klen, const struct vent *v)
{
	const uint8_t *p = key;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < klen; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return st_mix64(h ^ st_mix64(v->ve_term ^ st_mix64(v->ve_seq * 2 +
						 (v->ve_tomb & 1))));
}

int ridx_vcmp(uint64_t t1, uint64_t s1, uint64_t t2, uint64_t s2)
{
	if (t1 != t2)
		return t1 < t2 ? -1 : 1;
	return s1 == s2 ? 0 : s1 < s2 ? -1 : 1;
}

/* Key's version entry as stored at the sys key buf[0..kl-1]: 0 with
 * *out, -ENOENT (none), or 1 when the entry there is another key's (the
 * long form of two keys alike: a clash, never seen by chance). */
static int vent_read(struct meta *m, MDB_txn *txn, const uint8_t *buf,
		     size_t kl, bool long_form, const void *key, size_t klen,
		     struct vent *out)
{
	struct meta_rec v;
	int rc = meta_get(txn, m, META_T_SYS, buf, kl, &v, "version entry");

	if (rc != 0)
		return rc;
	if (long_form && (v.mc_vlen != sizeof *out + klen ||
			  memcmp((const uint8_t *)v.mc_val + sizeof *out, key,
				 klen) != 0))
		return 1;
	if (!long_form && v.mc_vlen != sizeof *out)
		return -ENOENT;
	memcpy(out, v.mc_val, sizeof *out);
	return 0;
}

/* The stored version of key: 0, -ENOENT (none, or a clash). */
int ridx_vent_get(struct meta *m, MDB_txn *txn, const struct st_id *id,
		  const void *key, size_t klen, struct vent *out)
{
	uint8_t buf[VKEY_HEAD + ST_KEY_MAX];
	size_t kl;
	bool lf = ridx_vkey(m, buf, id, key, klen, &kl);
	int rc = vent_read(m, txn, buf, kl, lf, key, klen, out);

	return rc == 1 ? -ENOENT : rc;
}

/* In txn: store nv as key's version over old (NULL: none), XOR-ing the
 * digest change into *dig.  1: stored, 0: not (the long form's clash with
 * another key: that key keeps its entry, this one stays unversioned). */
int ridx_vent_set(struct meta *m, MDB_txn *txn, const struct st_id *id,
		  const void *key, size_t klen, const struct vent *old,
		  const struct vent *nv, uint64_t *dig)
{
	uint8_t buf[VKEY_HEAD + ST_KEY_MAX];
	uint8_t val[sizeof(struct vent) + ST_KEY_MAX];
	struct vent cur;
	size_t kl, vl = sizeof *nv;
	bool lf = ridx_vkey(m, buf, id, key, klen, &kl);
	int rc;

	if (lf) {
		rc = vent_read(m, txn, buf, kl, lf, key, klen, &cur);
		if (rc == 1)
			return 0;
		if (rc != 0 && rc != -ENOENT)
			return rc;
		memcpy(val + sizeof *nv, key, klen);
		vl += klen;
	}
	memcpy(val, nv, sizeof *nv);
	rc = meta_put(txn, m, META_T_SYS, buf, kl, val, vl,
		      "version entry put");
	if (rc != 0)
		return rc;
	if (old != NULL)
		*dig ^= ridx_vent_hash(key, klen, old);
	*dig ^= ridx_vent_hash(key, klen, nv);
	return 1;
}

/* In txn: store nv as key's version (unless newer_only and the stored one
 * is as new), XOR-ing the digest change into *dig.  1: stored, 0: not. */
int ridx_vent_put(struct meta *m, MDB_txn *txn, const struct st_id *id,
		  const void *key, size_t klen, const struct vent *nv,
		  bool newer_only, uint64_t *dig)
{
	struct vent old;
	int rc = ridx_vent_get(m, txn, id, key, klen, &old);

	if (rc != 0 && rc != -ENOENT)
		return rc;
	if (rc == 0 && newer_only &&
	    ridx_vcmp(old.ve_term, old.ve_seq, nv->ve_term, nv->ve_seq) >= 0)
		return 0;
	return ridx_vent_set(m, txn, id, key, klen, rc == 0 ? &old : NULL, nv,
			     dig);
}

/* In txn: raise the index's term to at least term, XOR dig into its
 * digest. */
int ridx_rver_update(struct meta *m, MDB_txn *txn,
		     const struct st_id *id, uint64_t term, uint64_t dig)
{
	struct rver rv = {0, 0};
	char name[48];
	int rc;

	ridx_rver_name(name, sizeof name, id);
	rc = meta_sys_get(txn, m, name, &rv, sizeof rv);
	if (rc != 0 && rc != -ENOENT)
		return rc;
	if (term > rv.rv_term)
		rv.rv_term = term;
	rv.rv_digest ^= dig;
	return meta_sys_put(txn, m, name, &rv, sizeof rv);
}

struct rver ridx_rver_load(struct srv *s, const struct st_id *id)
{
	struct rver rv = {0, 0};
	char name[48];

	ridx_rver_name(name, sizeof name, id);
	if (eng_sys_load(s->s_eng, name, &rv, sizeof rv) != 0)
		rv = (struct rver){0, 0};
	return rv;
}

static int ver_drop_one(void *arg, const struct meta_rec *r)
{
	return META_SCAN_DEL;
}

/* In txn: drop every version entry of id (both forms) and its rver
 * record. */
int ridx_ver_drop(struct meta *m, MDB_txn *txn, const struct st_id *id)
{
	uint8_t pre[VKEY_HEAD];
	char name[48];
	int rc = 0;

	for (int f = 0; rc == 0 && f < 2; f++) {
		ridx_vpre(pre, id, f == 1);
		rc = meta_scan(txn, m, &(struct meta_scan){
			.ms_table = META_T_SYS, .ms_prefix = pre,
			.ms_plen = VKEY_HEAD, .ms_write = true,
			.ms_fn = ver_drop_one,
			.ms_what = "version entries delete"});
	}
	if (rc != 0)
		return rc;
	ridx_rver_name(name, sizeof name, id);
	return meta_del(txn, m, META_T_SYS, name, strlen(name), "rver delete");
}

/* In txn: the version entries {term, seq} of a PUT or DEL m this replica
 * applied (ordinary or a dtx member alike), and with each the record as
 * the update left it.  An ordinary update's versions are written in the
 * transaction of its records (srv_ridx_one_apply()); when they were a
 * second commit, a catch-up merge between the two (merge_guard(): it sees
 * the older version) could write a peer's older record over the update's,
 * which stayed beside its newer version (dtx_cluster_test.sh, then 4h):
 * the record is still set again here, wherever the version it replaces is
 * older or the same (a key twice in one update: the last value, as the
 * records left it).
 *   A copy (its records written under ridx_copy_guard()) leaves a key
 * whose version here is newer alone, with that version's record.  An
 * update this replica ordered writes its version there all the same, as
 * before, and leaves the record: its records were written before its
 * version was known, so the newer version is either a newer term a merge
 * brought first (the record is now this update's) or an update ordered
 * here after it (a dtx member: its record stands); either way the digests
 * differ until the peers verify, and the newer version wins there. */
int ridx_ver_apply(struct eng *e, MDB_txn *txn, const struct msg_req *mr,
		   uint64_t term, uint64_t seq)
{
	struct meta *m = eng_meta(e);
	const struct eng_req *r = &mr->mr_req;
	bool del = r->er_kind == ER_IDX_DEL;
	bool copy = r->er_guard == ridx_copy_guard;
	struct vent nv = {term, seq, ridx_vent_word(del, mr->mr_tag)}, lv;
	uint64_t dig = 0;
	int rc = 0;

	for (uint32_t i = 0; rc >= 0 && i < mr->mr_nr; i++) {
		const void *k = r->er_keys->bv_buf[i];
		size_t kl = r->er_keys->bv_len[i];
		bool have;
		int cmp = -1;

		if (r->er_rcs[i] != 0)
			continue;
		rc = ridx_vent_get(m, txn, &r->er_id, k, kl, &lv);
		if (rc != 0 && rc != -ENOENT)
			break;
		have = rc == 0;
		if (have)
			cmp = ridx_vcmp(lv.ve_term, lv.ve_seq, term, seq);
		rc = 0;
		if (copy && cmp > 0)
			continue;
		if (cmp != 0)
			rc = ridx_vent_set(m, txn, &r->er_id, k, kl,
					   have ? &lv : NULL, &nv,
					   &dig);
		if (rc >= 0 && cmp <= 0)
			rc = idx_rec_set(e, txn, &r->er_id,
					 r->er_ent.me_ctime_ns, k, kl,
					 del ? NULL : r->er_vals->bv_buf[i],
					 del ? 0 : r->er_vals->bv_len[i], del);
	}
	return rc < 0 ? rc : ridx_rver_update(m, txn, &r->er_id, term, dig);
}

/* A copy's condition on its record i (eng_req.er_guard), checked in the
 * commit that writes it: not over a version as new or newer here (a
 * catch-up merge took it from a peer before this copy came; the copy's
 * own version commit then writes nothing either). */
int ridx_copy_guard(struct eng *e, MDB_txn *txn, struct eng_req *r,
		    uint32_t i)
{
	const struct msg_req *mr = r->er_guard_arg;
	struct vent lv;
	int rc = ridx_vent_get(eng_meta(e), txn, &r->er_id,
			       r->er_keys->bv_buf[i], r->er_keys->bv_len[i],
			       &lv);

	if (rc == -ENOENT)
		return 1;
	if (rc != 0)
		return rc;
	return ridx_vcmp(lv.ve_term, lv.ve_seq, mr->mr_term, mr->mr_seq) >= 0
	       ? 0 : 1;
}

static int ver_apply_op(struct eng *e, MDB_txn *txn, struct srv_op *so)
{
	return ridx_ver_apply(e, txn, &so->so_m, so->so_term, so->so_vseq);
}

/*
 * Before this replica orders an update of ri: the highest term it knows
 * must be its own, taken in this run; if not, take the next term of its
 * own, durably.  One term per run: the copies of an update leave before
 * its commit here is synced (srv_idx_fan.c), so a machine crash may lose
 * seqs the other replicas hold; ordering them again in the same term
 * would give one version to two updates (a tie no merge can settle).
 */
int ridx_claim(struct srv *s, struct ridx *ri)
{
	uint32_t n = s->s_conf->cc_nr_servers;
	struct meta *m = eng_meta(s->s_eng);
	MDB_txn *txn;
	uint64_t t, t0;
	bool mine;
	int rc;

	pthread_mutex_lock(&s->s_rlock);
	t0 = ri->ri_term;
	mine = ri->ri_run_term;
	pthread_mutex_unlock(&s->s_rlock);
	if (t0 != 0 && t0 % n == s->s_self && mine)
		return 0;
	t = t0 - t0 % n + s->s_self;
	if (t <= t0)
		t += n;
	rc = meta_wtxn_begin(m, &txn, "index term");
	if (rc != 0)
		return rc;
	rc = ridx_rver_update(m, txn, &ri->ri_id, t, 0);
	if (rc != 0) {
		meta_txn_abort(txn);
		return rc;
	}
	rc = meta_wtxn_commit(m, txn, "index term commit");
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&s->s_rlock);
	if (t > ri->ri_term)
		ri->ri_term = t;
	ri->ri_run_term = true;
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

static void rbeh_name(char *buf, size_t size, const struct st_id *id)
{
	snprintf(buf, size, "rbeh:%016" PRIx64 ":%016" PRIx64, id->si_hi,
		 id->si_lo);
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
int ridx_rbeh_note(struct srv *s, struct ridx *ri, uint64_t mask,
		   uint64_t term, uint64_t seq)
{
	uint64_t self = 1ull << s->s_self, before;
	bool me = false, save;

	pthread_mutex_lock(&s->s_rlock);
	if ((mask & self) &&
	    ridx_vcmp(ri->ri_term, ri->ri_seq, term, seq) < 0) {
		me = !ri->ri_behind;
		ri->ri_behind = true;
		if (ridx_vcmp(ri->ri_nterm, ri->ri_nseq, term, seq) < 0) {
			ri->ri_nterm = term;
			ri->ri_nseq = seq;
		}
		ridx_unverify(ri);
	}
	before = ri->ri_bmask;
	ri->ri_bmask |= mask & ~self;
	save = ri->ri_bmask != before;
	if ((mask & ~self) &&
	    ridx_vcmp(ri->ri_bterm, ri->ri_bseq, term, seq) < 0) {
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
		     const struct st_id *id, uint64_t mask, uint64_t term,
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
	if (ridx_rbeh_note(s, ri, mask, term, seq) != 0)
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
void srv_ridx_marks_serve(struct srv *s)
{
	enum { BATCH = 64 };
	struct { struct st_id id; uint64_t mask, term, seq; } m[BATCH];
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
			       (rp->verified && ridx_vcmp(rp->term, rp->seq,
							  m[k].term,
							  m[k].seq) >= 0);
			reply__free_unpacked(rp, NULL);
			if (!done)
				continue;
			pthread_mutex_lock(&s->s_rlock);
			done = ridx_vcmp(ri->ri_bterm, ri->ri_bseq, m[k].term,
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
struct ridx *ridx_get(struct srv *s, const struct st_id *id)
{
	uint32_t b = (uint32_t)((id->si_hi * 31 + id->si_lo) % SRV_RIDX_BUCKETS);
	struct ridx *ri;
	struct ridx_rec rec;
	char name[48];

	pthread_mutex_lock(&s->s_rlock);
	for (ri = s->s_ridx[b]; ri != NULL; ri = ri->ri_next)
		if (st_id_cmp(&ri->ri_id, id) == 0)
			break;
	if (ri == NULL && (ri = calloc(1, sizeof *ri)) != NULL) {
		ri->ri_id = *id;
		ridx_name(name, sizeof name, id);
		if (eng_sys_load(s->s_eng, name, &rec, sizeof rec) == 0) {
			ri->ri_exists = true;
			ri->ri_inc = rec.rr_inc;
			ri->ri_seq = rec.rr_seq;
		}
		ri->ri_term = ridx_rver_load(s, id).rv_term;
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
int ridx_rec_write(struct eng *e, MDB_txn *txn, const struct st_id *id,
		   const struct ridx_rec *rec, bool del)
{
	struct meta *m = eng_meta(e);
	char name[48];
	int rc;

	ridx_name(name, sizeof name, id);
	if (!del)
		return meta_sys_put(txn, m, name, rec, sizeof *rec);
	rc = meta_del(txn, m, META_T_SYS, name, strlen(name), "ridx delete");
	if (rc != 0)
		return rc;
	rbeh_name(name, sizeof name, id);
	rc = meta_del(txn, m, META_T_SYS, name, strlen(name), "rbeh delete");
	if (rc != 0)
		return rc;
	return ridx_ver_drop(m, txn, id);
}

/* Commit item: store (or delete) the replica record of so. */
static int ridx_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct srv_op *so = (struct srv_op *)((char *)ci -
					      offsetof(struct srv_op, so_seq_ci));
	const struct eng_req *r = &so->so_m.mr_req;
	uint32_t kind = r->er_kind;
	int rc;

	if (kind == ER_IDX_PUT || kind == ER_IDX_DEL) {
		/* The index dropped, or made again, since the update's
		 * records committed: nothing of it may land in what is there
		 * now (stale versions would outrank the new incarnation's). */
		rc = idx_inc_is(e, txn, &r->er_id, r->er_ent.me_ctime_ns);
		if (rc <= 0)
			return rc;
	}
	rc = ridx_rec_write(e, txn, &r->er_id, &so->so_rec, so->so_rec_del);
	if (rc == 0 && !so->so_rec_del &&
	    (kind == ER_IDX_PUT || kind == ER_IDX_DEL))
		rc = ver_apply_op(e, txn, so);
	if (rc != 0)
		ci->ci_hard = true; /* some of it may be written */
	return rc;
}

/* How long a CREATE or DELETE applied here may be ahead of the replicas
 * its client has not reached yet: the client calls them one after the
 * other, each call bounded by the call timeout, and then is done (it
 * reports success even when one failed: that replica catches up later). */
uint64_t srv_ent_window_ms(const struct srv *s)
{
	return (uint64_t)srv_replicas(s) * s->s_conf->cc_call_ms +
	       SRV_LEASE_MS;
}

/* (s_rlock held) A CREATE or DELETE of ri starts or is applied here while
 * its peer replicas' generation is gen (ridx_gen()).  What a catch-up
 * decided before it is void: verify again (a replica CREATE of another
 * incarnation than the one made here means another CREATE of the index
 * raced this one's: the peers' newest wins then). */
void ridx_ent_event(struct ridx *ri, uint64_t gen)
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
void ridx_ent_mem(struct ridx *ri, uint32_t kind, uint64_t inc,
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
	    meta_rtxn_begin(mt, &txn, "index dedup") != 0)
		return;
	for (; i < m->mr_nr; i++) {
		struct vent ve;

		if (r->er_rcs[i] == want &&
		    ridx_vent_get(mt, txn, &r->er_id, r->er_keys->bv_buf[i],
				  r->er_keys->bv_len[i], &ve) == 0 &&
		    ridx_vent_tag(&ve) == m->mr_tag &&
		    ridx_vent_tomb(&ve) == del) {
			r->er_rcs[i] = 0;
			hit++;
		}
	}
	meta_rtxn_put(mt, txn);
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

int srv_ridx_one_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct srv_op *so = (struct srv_op *)ci;

	/* once: a batch applied again (another item's hard failure) keeps
	 * the seq this update took */
	if (!so->so_one) {
		if (!srv_ridx_after_update(so->so_srv, so))
			return 0;
		so->so_one = true;
	}
	return ridx_apply(e, txn, &so->so_seq_ci);
}

void srv_ridx_one_executed(struct eng_citem *ci)
{
	struct srv_op *so = (struct srv_op *)ci;

	so->so_visible = true;
	if (so->so_fan_want != 0 && so->so_one)
		srv_idx_fan_start(so);
}

void srv_ridx_one_done(struct srv_op *so, int rc)
{
	struct srv *s = so->so_srv;
	struct ridx *ri = so->so_ridx;

	if (rc == 0) {
		ridx_seq_done(&so->so_seq_ci, 0);
		return;
	}
	/* Its seq was taken (or a copy's applied) in memory and nothing of
	 * it committed: the seq goes back, as if the update had never come
	 * (a writer's behind mark of this seq then marks this replica
	 * behind, as it must: it lacks the update).  When a later update
	 * took the next seq meanwhile, or the commit was made but not
	 * acknowledged by the home's standbys, the seq stays and the index
	 * is verified before it is served again. */
	pthread_mutex_lock(&s->s_rlock);
	if (!so->so_visible && ri->ri_seq == so->so_new_seq)
		ri->ri_seq = so->so_old_seq;
	else
		ridx_unverify(ri);
	pthread_mutex_unlock(&s->s_rlock);
	srv_reply(so, rc, NULL, so->so_m.mr_req.er_ci.ci_msg);
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
	so->so_old_seq = ri->ri_seq;
	if (r->er_kind == ER_ENT_CREATE) {
		/* The incarnation the client chose, first replica or not;
		 * the time made here only from a client that chose none. */
		ridx_ent_mem(ri, r->er_kind, so->so_m.mr_incarnation != 0 ?
			     so->so_m.mr_incarnation : r->er_ent.me_ctime_ns,
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

