/*
 * fdmi_log.h — the engine's FDMI record log (issue 31 point 1): a durable
 * record of every change, appended in the same LMDB transaction as the
 * change itself, so that a crash leaves both or neither.
 *
 * The log.  A table of the metadata store (META_T_FDMI): key the record's
 * sequence number (8 bytes, big-endian, so that key order is sequence
 * order), value the encoded record below.  Sequence numbers of one store
 * rise by one per record emitted; a transaction that is discarded leaves
 * a gap (harmless: consumers order and deduplicate by (server, seq)).  The
 * newest record is never trimmed, so that the next number survives a
 * restart (fdmi_trim() keeps it).  Each record also carries its byte
 * offset in the log (the sum of the encoded sizes of every record before
 * it): a consumer's lag in bytes is the head's offset minus its cursor's,
 * two lookups, no scan.
 *
 * Who emits.  The engine's appliers (core/ent.c, obj.c, idx.c, comp.c) and
 * the dtx appliers (dtm/) call eng_fdmi_emit() after their change, in the
 * change's transaction, while emission is on (eng_fdmi_enable(): the
 * fdmi/ room turns it on while at least one consumer is registered, or
 * always with `fdmi: on`).  In a cluster only the engine that applies a
 * request emits: a home's standbys replay its write sets, which carry the
 * home's records (the log is a replicated table like any other), and emit
 * nothing of their own, so a takeover continues the same log with no
 * duplicate and no gap.
 *
 * Record format (little-endian), version 1:
 *   0  u8  version (1)      1  u8  op (enum fdmi_op)    2  u16 flags
 *   4  u32 nr: extents (pairs of u64 start block, u64 blocks) or key bytes
 *   8  u64 time (ns, CLOCK_REALTIME)
 *  16  u64 byte offset of the record in the log
 *  24  u64 dtx hlc (0: not in a dtx)   32 u32 dtx node   36 u32 entity type
 *  40  16  entity id (hi, lo)          56 16  container id
 *  72  u32 tier   76 u32 layer (obj.create: the layout)   80 u64 size
 *      after the change (objects:
 *      bytes; indices: records)   88 u64 digest of the new attributes
 *  96  payload: nr extents (16 bytes each) or nr key bytes
 */
#ifndef STRATA_CORE_FDMI_LOG_H
#define STRATA_CORE_FDMI_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

struct eng;
struct eng_req;
struct meta_ent;
typedef struct MDB_txn MDB_txn;

/** The changes a record names (one bit each in a filter's op mask). */
enum fdmi_op {
	FDMI_OBJ_CREATE = 1,
	FDMI_OBJ_DELETE,
	FDMI_OBJ_WRITE,   /**< extents written */
	FDMI_OBJ_ALLOC,   /**< extents allocated (read as zeros) */
	FDMI_OBJ_FREE,    /**< extents punched */
	FDMI_IDX_CREATE,
	FDMI_IDX_DELETE,
	FDMI_IDX_PUT,     /**< one record put (the key) */
	FDMI_IDX_DEL,     /**< one record deleted (the key) */
	FDMI_CONT_CREATE,
	FDMI_CONT_DELETE,
	FDMI_SETATTR,     /**< entity attributes set (size) */
	FDMI_LAYER_ADD,   /**< composite layer added (layer, tier) */
	FDMI_LAYER_DROP,  /**< composite layer dropped (layer) */
	FDMI_LAYER_MOVE,  /**< extents moved to a layer (layer, tier) */
	FDMI_DTX_COMMIT,  /**< a dtx's members applied here (its id) */
	FDMI_OBJ_READ,    /**< reads of an object since the last such record:
			       their number in size, the blocks they spanned
			       as one extent (eng_fdmi_read_note()) */
	FDMI_OP_MAX = FDMI_OBJ_READ
};

/** Record flags. */
enum fdmi_flags {
	FDMI_F_TRUNC = 1u << 0, /**< extents past FDMI_EXT_MAX left out (the
				    first FDMI_EXT_MAX are listed) */
	FDMI_F_TIER = 1u << 1,  /**< fr_tier names a tier: records of a plain,
				    pdclust or mirror object and of a
				    composite's layer ops and layer writes
				    (not of containers, indices, dtxs, nor
				    of a composite's own create or delete);
				    a filter's tier= matches only these */
};

#define FDMI_REC_VERSION 1u
#define FDMI_HDR_LEN 96u
/** Most extents one record lists (more: FDMI_F_TRUNC). */
#define FDMI_EXT_MAX 256u

/** A record, decoded; fr_ext and fr_key point into the encoded bytes. */
struct fdmi_rec {
	uint64_t fr_seq;
	uint32_t fr_op;       /**< enum fdmi_op */
	uint32_t fr_flags;
	uint64_t fr_time_ns;
	uint64_t fr_off;
	struct st_dtx_id fr_dtx; /**< di_hlc 0: none */
	uint32_t fr_type;     /**< enum st_entity_type */
	struct st_id fr_id;
	struct st_id fr_container;
	uint32_t fr_tier;
	uint32_t fr_layer;
	uint64_t fr_size;
	uint64_t fr_digest;
	uint32_t fr_nr_ext;   /**< extents: fr_ext[2i] start, [2i+1] blocks */
	const uint8_t *fr_ext;
	uint32_t fr_klen;     /**< key (IDX_PUT, IDX_DEL) */
	const void *fr_key;
};

/** The name of op ("obj.write"), or "?" for an unknown one. */
const char *fdmi_op_name(uint32_t op);
/** The op of name, or 0. */
uint32_t fdmi_op_parse(const char *name);
/** Start block and length of extent i of r. */
void fdmi_rec_ext(const struct fdmi_rec *r, uint32_t i, uint64_t *start,
		  uint64_t *blocks);
/** Decode len bytes of a record of sequence number seq into *out (pointers
 *  into buf).  0, or -ST_ECORRUPT with a message naming seq. */
int fdmi_rec_decode(uint64_t seq, const void *buf, size_t len,
		    struct fdmi_rec *out);
/** Encoded size of r (header plus payload). */
size_t fdmi_rec_len(const struct fdmi_rec *r);
/** Encode r into buf (fdmi_rec_len() bytes); r's fr_ext is read as pairs
 *  of host-order u64 when fr_ext_host is set (the emitters'), else as
 *  encoded little-endian bytes. */
void fdmi_rec_encode(const struct fdmi_rec *r, const uint64_t *ext_host,
		     uint8_t *buf);

/* -------------------------------------------------------- the engine's */

/** Emission on or off (the fdmi/ room: on while a consumer is registered
 *  or the store's `fdmi: on`).  Takes effect for the next commit. */
void eng_fdmi_enable(struct eng *e, bool on);
/** Whether the engine emits now. */
bool eng_fdmi_on(struct eng *e);
/** At open (eng_open()): emission on when the store has a consumer
 *  registered (a key "fdmi/sub/..." in its sys table), so that an engine
 *  opened without the fdmi/ room (a cluster server's takeover of another
 *  home) records every change its consumers expect. */
void eng_fdmi_open_check(struct eng *e);

/**
 * In write transaction txn (the change's): append record r (its fr_seq,
 * fr_off and fr_time_ns are set here; the current dtx, if any, too).
 * ext: nr_ext extents as host-order pairs (start, blocks), or NULL.
 * Does nothing (0) while emission is off.  0, or a negative code with a
 * message (the caller's change must then be discarded: ci_hard).
 */
int eng_fdmi_emit(struct eng *e, MDB_txn *txn, struct fdmi_rec *r,
		  const uint64_t *ext);
/** The record of request r after its change (id, container and type of
 *  r, size and digest of ent, the extents of r->er_ext), appended as
 *  eng_fdmi_emit(). */
int eng_fdmi_req(struct eng *e, MDB_txn *txn, const struct eng_req *r,
		 uint32_t op, const struct meta_ent *ent);

/** Reads.  While emission is on, each object READ that eng_exec() runs (a
 *  client's; not the engine's own, e.g. a layer move's) is noted in a
 *  table of at most FDMI_HEAT_SLOTS objects (count, blocks spanned; reads
 *  of objects past it are counted as dropped), and eng_fdmi_read_flush()
 *  appends one FDMI_OBJ_READ record per object noted, in a write
 *  transaction of its own (the fdmi/ trimmer calls it every period): a
 *  read costs a table update, not a commit.  Lost in a crash (heat, not
 *  a change). */
#define FDMI_HEAT_SLOTS 4096u
struct fdmi_heat {
	struct st_id fh_id;
	uint64_t fh_count;
	uint64_t fh_lo, fh_hi; /* blocks [lo, hi) */
};
void eng_fdmi_read_note(struct eng *e, const struct eng_req *r);
/** Append the noted reads as records (0, or a negative code; the notes
 *  are dropped either way).  *dropped: reads not noted since the last. */
int eng_fdmi_read_flush(struct eng *e, uint64_t *dropped);

/** The dtx whose members the calling thread applies now (0 hlc: none):
 *  its records carry the id.  Set by dtm's appliers around the members. */
void eng_fdmi_dtx_set(const struct st_dtx_id *id);

/** Sequence number and byte offset just past the newest record of e's log
 *  (0, 0: empty), read in txn (any transaction). */
int eng_fdmi_head(struct eng *e, MDB_txn *txn, uint64_t *seq, uint64_t *off);
/** Digest of an entity's attributes (FNV-1a over its record). */
uint64_t fdmi_digest(const struct meta_ent *ent);

#endif
