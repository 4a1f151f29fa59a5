/*
 * srv_idx_internal.h — what the files of the index replica code share
 * (srv_idx.c, srv_idx_ver.c, srv_idx_sync.c, srv_idx_tomb.c,
 * srv_idx_syncer.c; overview at the top of srv_idx.c): the stored formats
 * of version entries and index terms, and the helpers one file calls in
 * another.  Nothing outside those files includes it.
 */
#ifndef STRATA_CORE_SERVER_SRV_IDX_INTERNAL_H
#define STRATA_CORE_SERVER_SRV_IDX_INTERNAL_H

#include "core/server/srv_internal.h"

/* Versions (srv_idx_ver.c, "versions"): per index "rver:HI:LO" = {highest
 * term seen, digest}; per key VKEY_TAG id(16, big-endian) key -> struct
 * vent. */
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

#define VKEY_TAG 0x01u
#define VKEY_HEAD 17u
/* A key too long for VKEY_HEAD + key to fit LMDB's key size (a key of
 * ST_KEY_MAX bytes): VKEY_TAG_LONG id(16) key's first bytes, then
 * VKEY_HASH bytes of hash of the whole key, exactly the key size long;
 * its value is the struct vent, then the whole key (checked on every
 * read: two keys sharing the form would not share a version). */
#define VKEY_TAG_LONG 0x02u
#define VKEY_HASH 16u

/* What a peer replica said about an index. */
struct idx_peer {
	int ip_server;       /* -1: none */
	uint64_t ip_seq;
	uint64_t ip_inc;
	uint64_t ip_term;
	uint64_t ip_digest;
	struct st_id ip_cont;
	bool ip_doubt;       /* its heartbeat marks this server down */
};

/* srv_idx_ver.c: replica records */
/** The number of replicas of an index (R, at most the servers). */
uint32_t srv_replicas(const struct srv *s);
/** The sys name "ridx:HI:LO" of id's replica record. */
void ridx_name(char *buf, size_t size, const struct st_id *id);
/** Peer replicas' generation of id (changes when one went out of reach). */
uint64_t ridx_gen(struct srv *s, const struct st_id *id);
/** s_rlock held: ri must be verified again before it is next served. */
void ridx_unverify(struct ridx *ri);
/** May ri be stale here (vmark: a client request's ri_vbegun)? */
bool ridx_stale(struct srv *s, struct ridx *ri, const uint64_t *vmark);
/** The in-memory record of id, loaded on first use (NULL: -ENOMEM). */
struct ridx *ridx_get(struct srv *s, const struct st_id *id);
/** In txn: the replica record of id := rec, or (del) deleted with every
 *  version entry of id. */
int ridx_rec_write(struct eng *e, MDB_txn *txn, const struct st_id *id,
		   const struct ridx_rec *rec, bool del);
/** Before ordering an update of ri: take a term of this server's own. */
int ridx_claim(struct srv *s, struct ridx *ri);
/** How long a CREATE or DELETE here may be ahead of the other replicas. */
uint64_t srv_ent_window_ms(const struct srv *s);
/** s_rlock held: a CREATE or DELETE of ri starts or is applied here. */
void ridx_ent_event(struct ridx *ri, uint64_t gen);
/** s_rlock held: ri created here with incarnation inc, or deleted. */
void ridx_ent_mem(struct ridx *ri, uint32_t kind, uint64_t inc,
		  uint64_t gen);
/* srv_idx_ver.c: version entries */
bool ridx_vent_tomb(const struct vent *v);
uint64_t ridx_vent_tag(const struct vent *v);
/** The ve_tomb word of a version: tombstone bit and tag. */
uint64_t ridx_vent_word(bool tomb, uint64_t tag);
/** Compare versions (t1, s1) and (t2, s2): -1, 0, 1. */
int ridx_vcmp(uint64_t t1, uint64_t s1, uint64_t t2, uint64_t s2);
void ridx_rver_name(char *buf, size_t size, const struct st_id *id);
/** The sys key of key's version entry in buf (VKEY_HEAD + ST_KEY_MAX
 *  bytes), its length in *len; a key too long for its own bytes takes the
 *  VKEY_TAG_LONG form.  key NULL, klen 0: the prefix of id's VKEY_TAG
 *  entries.  Returns whether it is the long form. */
bool ridx_vkey(const struct meta *m, uint8_t *buf, const struct st_id *id,
	       const void *key, size_t klen, size_t *len);
/** The prefix (VKEY_HEAD bytes) of id's version entries of one form. */
void ridx_vpre(uint8_t *buf, const struct st_id *id, bool long_form);
/** A version entry as stored (sys key and value): its struct vent and
 *  its index key; false when it is not one (a size that does not fit). */
bool ridx_vent_decode(const struct meta_rec *r, struct vent *ve,
		      const uint8_t **key, size_t *klen);
/** One version entry's share of the digest. */
uint64_t ridx_vent_hash(const void *key, size_t klen, const struct vent *v);
/** The stored version of key: 0, -ENOENT (none, or not versioned). */
int ridx_vent_get(struct meta *m, MDB_txn *txn, const struct st_id *id,
		  const void *key, size_t klen, struct vent *out);
/** In txn: store nv as key's version over old (what ridx_vent_get()
 *  read, NULL: none), the digest change XOR-ed into *dig; 1: stored, 0:
 *  not (the key is not versioned). */
int ridx_vent_set(struct meta *m, MDB_txn *txn, const struct st_id *id,
		  const void *key, size_t klen, const struct vent *old,
		  const struct vent *nv, uint64_t *dig);
/** In txn: store nv as key's version (unless newer_only and the stored
 *  one is as new); 1: stored, 0: not. */
int ridx_vent_put(struct meta *m, MDB_txn *txn, const struct st_id *id,
		  const void *key, size_t klen, const struct vent *nv,
		  bool newer_only, uint64_t *dig);
/** In txn: raise the index's term to at least term, XOR dig in. */
int ridx_rver_update(struct meta *m, MDB_txn *txn,
		     const struct st_id *id, uint64_t term, uint64_t dig);
struct rver ridx_rver_load(struct srv *s, const struct st_id *id);
/** In txn: drop every version entry of id and its rver record. */
int ridx_ver_drop(struct meta *m, MDB_txn *txn, const struct st_id *id);
/** In txn: the version entries {term, seq} of the applied PUT or DEL mr,
 *  where newer than the keys' versions here, each with its record as mr
 *  left it. */
int ridx_ver_apply(struct eng *e, MDB_txn *txn, const struct msg_req *mr,
		   uint64_t term, uint64_t seq);
/** eng_req.er_guard of a copy (SRF_REPLICA PUT or DEL with its term and
 *  seq; er_guard_arg: its msg_req): record i is left alone where the
 *  key's version here is as new or newer. */
int ridx_copy_guard(struct eng *e, MDB_txn *txn, struct eng_req *r,
		    uint32_t i);
/* srv_idx_ver.c: behind marks */
/** Record the replicas of mask as behind ri up to (term, seq). */
int ridx_rbeh_note(struct srv *s, struct ridx *ri, uint64_t mask,
		   uint64_t term, uint64_t seq);
/** Heartbeat thread: tell marked replicas they are behind. */
void srv_ridx_marks_serve(struct srv *s);

/* srv_idx_sync.c: catch-up */
/** Call timeout of state probes (SRV_PROBE_MS, at most the cluster's). */
uint32_t srv_probe_ms(const struct srv *s);
/** The local entity record of index id: 0, -ENOENT, or an error. */
int ridx_local(struct srv *s, const struct st_id *id,
	       struct meta_ent *me);
/** Ask peer j for its replica state: 1 has it, 0 not, < 0 not asked. */
int ridx_peer_state(struct srv *s, uint32_t j, const struct st_id *id,
		    struct idx_peer *out);
/** Verify ri against the other replicas, catching up from them. */
void ridx_sync(struct srv *s, struct ridx *ri);

/* srv_idx_tomb.c: tombstones */
/** SOP_IDX_STATE handler: collect ri's tombstones if its digest is dig. */
void ridx_tomb_request(struct srv *s, struct ridx *ri, uint64_t dig);
/** Syncer, between requests: asked collections and (rounds) looks. */
void ridx_tomb_pass(struct srv *s, bool rounds);

/* srv_idx_syncer.c */
/** Park so until its index is verified (-EBUSY past SRV_PARK_MAX). */
void srv_park(struct srv *s, struct srv_op *so);
/** Must so wait for its index to be verified? */
bool srv_needs_sync(struct srv *s, struct srv_op *so);

/* srv_idx.c: a request whose index is verified, run (syncer thread) */
void srv_idx_go(struct srv *s, struct srv_op *so);
void srv_idx_ent_go(struct srv *s, struct srv_op *so);

#endif
