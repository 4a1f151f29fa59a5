/*
 * meta_txn.h — the engine's contract for metadata transactions, for the
 * code outside the engine (issue 27 point 1: clovis/, dtm/, the unit
 * layouts layouts/ and the server daemon core/server/ never call LMDB
 * themselves).
 *
 * Transactions.  A transaction is an MDB_txn *, an opaque handle here:
 * it is what every commit item's ci_apply() receives (core/engine.h; that
 * signature is shared by the whole engine, so it stays), and what the
 * functions below take and give.  Code outside the engine only passes it
 * on: it never includes <lmdb.h>, never names MDB_val, MDB_cursor or
 * MDB_dbi, never calls mdb_*().  Three kinds:
 *   read     meta_rtxn_begin() ... meta_rtxn_put(): a snapshot of every
 *            commit that returned before the call (the thread's kept
 *            transaction renewed, no allocation: meta.h meta_rtxn_get());
 *   write    meta_wtxn_begin() ... meta_wtxn_commit() or meta_txn_abort():
 *            a top-level write transaction of its own (the commit items of
 *            the group commit get theirs from the engine instead);
 *   nested   meta_ntxn_begin(parent) ... meta_ntxn_commit() or
 *            meta_txn_abort(): a child of a write transaction (a commit
 *            item applying several requests as one, dtm's COMMIT and
 *            clovis's dtx); its changes join the parent's at
 *            meta_ntxn_commit() and vanish at meta_txn_abort().
 *
 * Records.  Tables are named by enum meta_table (their formats: meta.h).
 * A record read is handed out in place (struct meta_rec): its bytes are
 * the map's, valid until the transaction ends or writes to that table,
 * never copied.  meta_get(), meta_put(), meta_del() act on one record
 * under a key; meta_scan() calls a function on each record of a key range
 * in key order (or reverse), which may stop the scan or delete the record
 * it was given, or resume after a key; meta_member_scan() lists the
 * members of a container; meta_entries() counts a table's records.
 *
 * Errors.  Every function returns 0 or a negative code (-ENOENT for a
 * record not there, with no message; otherwise meta_err()'s mapping of
 * LMDB's code, with a message "metadata WHAT: LMDB's reason" where WHAT
 * is the caller's what).  LMDB's own codes never leave the engine.
 *
 * Cost.  Nothing here allocates or copies per record: reads point into
 * the map, a read scan takes the thread's kept cursor (meta.h
 * meta_rcursor_get()), the per-record call of a scan is one indirect call.
 */
#ifndef STRATA_CORE_META_TXN_H
#define STRATA_CORE_META_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct meta;
struct st_id;
/** LMDB's transaction handle, opaque outside the engine (the same
 *  declaration as <lmdb.h>'s). */
typedef struct MDB_txn MDB_txn;

/** The tables of the metadata store (meta.h describes their records). */
enum meta_table {
	META_T_SYS = 0, /**< name -> value: identity, replicas, dtx records */
	META_T_ENT,     /**< id -> struct meta_ent */
	META_T_MEMBER,  /**< cont type id -> "" */
	META_T_EXT,     /**< obj blk -> struct meta_ext */
	META_T_IDX,     /**< idx key -> value (meta_idx_key()) */
	META_T_UNIT,    /**< obj addr -> struct meta_unit */
	META_T_LAYER,   /**< obj layer -> struct meta_layer */
	META_T_FDMI,    /**< seq (big-endian) -> FDMI record (core/fdmi_log.h) */
};

/** A stored record, in place: mc_key/mc_val point into the map (read
 *  only) and stay valid until the transaction ends or writes. */
struct meta_rec {
	const void *mc_key;
	size_t mc_klen;
	const void *mc_val;
	size_t mc_vlen;
};

/* ---------------------------------------------------------- transactions */

/**
 * A read transaction of m, as meta_rtxn_get() (meta.h) but with the
 * message of a failure naming what.  0 and *txn, or a negative code.  End
 * it with meta_rtxn_put() (meta.h), never meta_txn_abort().
 */
int meta_rtxn_begin(struct meta *m, MDB_txn **txn, const char *what);
/** A read transaction of its own, which the calling thread does not keep
 *  for its next reads (a thread that reads once, at an open).  0 and
 *  *txn, or a negative code naming what.  End it with meta_txn_abort(). */
int meta_rtxn_once(struct meta *m, MDB_txn **txn, const char *what);
/** End a transaction of meta_rtxn_begin() or meta_rtxn_get(). */
void meta_rtxn_put(struct meta *m, MDB_txn *txn);
/** A top-level write transaction of m (one at a time per environment:
 *  it waits for the group commit's).  0 and *txn, or a negative code. */
int meta_wtxn_begin(struct meta *m, MDB_txn **txn, const char *what);
/** Commit write transaction txn of meta_wtxn_begin() (through meta.h
 *  meta_txn_commit()); txn is ended either way.  0 or a negative code.
 *  With a replication hook set (core/eng_repl.h) its write set is shipped
 *  and waited for before the return: a failure of that wait is returned
 *  although the transaction committed here. */
int meta_wtxn_commit(struct meta *m, MDB_txn *txn, const char *what);
/** A transaction nested in write transaction parent (a commit item's, or
 *  one of meta_wtxn_begin()).  0 and *child, or a negative code. */
int meta_ntxn_begin(struct meta *m, MDB_txn *parent, MDB_txn **child,
		    const char *what);
/** Commit nested transaction child into its parent; child is ended either
 *  way, and on failure the parent must be discarded too (its commit
 *  item's ci_hard).  0 or a negative code. */
int meta_ntxn_commit(MDB_txn *child, const char *what);
/** Discard a write or nested transaction and everything it wrote. */
void meta_txn_abort(MDB_txn *txn);

/* --------------------------------------------------------------- records */

/**
 * The record of key in table t, in place in *out.  0, -ENOENT (absent, no
 * message), or a negative code: with a message naming what, or none when
 * what is NULL (callers that treat a failed read as an absent record).
 */
int meta_get(MDB_txn *txn, struct meta *m, enum meta_table t,
	     const void *key, size_t klen, struct meta_rec *out,
	     const char *what);
/** In write txn: key's record in table t := val (vlen bytes, copied).
 *  0 or a negative code (-E2BIG: key over the environment's limit). */
int meta_put(MDB_txn *txn, struct meta *m, enum meta_table t,
	     const void *key, size_t klen, const void *val, size_t vlen,
	     const char *what);
/** In write txn: delete key's record of table t.  0 whether or not it was
 *  there, or a negative code. */
int meta_del(MDB_txn *txn, struct meta *m, enum meta_table t,
	     const void *key, size_t klen, const char *what);

/**
 * The number of records of table t in txn (LMDB's count, no walk) in
 * *nr.  0, or a negative code: with a message naming what, or none when
 * what is NULL (callers for which the count is only a hint).
 */
int meta_entries(MDB_txn *txn, struct meta *m, enum meta_table t,
		 uint64_t *nr, const char *what);

/** The last 8 bytes of a 24-byte key of table ext or unit as meta.h
 *  meta_ext_key() wrote them: the block number (ext) or the unit
 *  address, group * (N + K) + slot (unit).  No MDB_val needed. */
uint64_t meta_key_blk(const void *key);

/** What a meta_scan_fn returns (or a negative code: the scan stops and
 *  returns it). */
enum meta_scan_ret {
	META_SCAN_NEXT = 0, /**< go on */
	META_SCAN_STOP = 1, /**< stop here; meta_scan() returns 0 */
	META_SCAN_DEL = 2,  /**< delete this record (ms_write), go on */
};

/** Called by meta_scan() on each record of the range, in place. */
typedef int (*meta_scan_fn)(void *arg, const struct meta_rec *r);

/** A scan of meta_scan(). */
struct meta_scan {
	enum meta_table ms_table;
	/** Forward: the first key visited is the first >= ms_from (NULL:
	 *  ms_prefix).  Reverse: the first key visited is the last < ms_from
	 *  (NULL: the table's last). */
	const void *ms_from;
	size_t ms_flen;
	/** The scan ends at the first key not starting with these plen
	 *  bytes (plen 0: at the table's end). */
	const void *ms_prefix;
	size_t ms_plen;
	bool ms_rev;   /**< from last to first */
	/** Forward with ms_from only: a first key equal to ms_from is
	 *  skipped (a scan resuming after the last key it did). */
	bool ms_after;
	/** True exactly when txn is a write or nested transaction (then
	 *  META_SCAN_DEL deletes): a read scan keeps its cursor for the
	 *  thread's next one, which must not happen to a cursor that LMDB
	 *  frees with a write transaction. */
	bool ms_write;
	meta_scan_fn ms_fn;
	void *ms_arg;
	const char *ms_what; /**< for the message of a failure */
};

/**
 * Call sc->ms_fn on each record of sc's range in txn, in key order (or
 * reverse), until the range ends or the function stops it.  Returns 0,
 * the function's negative code, or a negative code of the store (with a
 * message naming ms_what; a failed delete ends the scan so).
 */
int meta_scan(MDB_txn *txn, struct meta *m, const struct meta_scan *sc);

/** Called by meta_member_scan() on each member id: META_SCAN_NEXT,
 *  META_SCAN_STOP, or a negative code. */
typedef int (*meta_member_fn)(void *arg, const struct st_id *id);

/**
 * The members of type type of container cont (table member), in id
 * order, after id *after (not included; NULL: from the first): fn on
 * each until it stops.  0, fn's negative code, or a negative code naming
 * what.
 */
int meta_member_scan(MDB_txn *txn, struct meta *m, const struct st_id *cont,
		     uint32_t type, const struct st_id *after,
		     meta_member_fn fn, void *arg, const char *what);

#endif
