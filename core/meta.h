/*
 * meta.h — the node's metadata store on LMDB, and its record formats.
 *
 * One LMDB environment per node (DIR/meta/), five tables:
 *   sys     name -> value       store identity, devices, saved statistics
 *   ent     id(16)               -> struct meta_ent     every entity
 *   member  cont(16) type(1) id(16) -> ""              entities per container
 *   ext     obj(16) blk(8)       -> struct meta_ext     object extent map
 *   idx     idx(16) key(0..495)  -> value               index records
 *   unit    obj(16) addr(8)      -> struct meta_unit    units of pdclust and
 *                                   mirror objects (addr = group * (N + K)
 *                                   + slot), each with its CRC
 *   layer   obj(16) layer(4)     -> struct meta_layer   layers of composite
 *                                   objects
 * Ids and block numbers are big-endian in keys so that LMDB's memcmp order
 * is numeric order.  Records are little-endian packed structs with a
 * _Static_assert on each size.
 *
 * Code outside the engine (clovis/, dtm/, layouts/, core/server/) takes its
 * transactions and records through meta_txn.h; from this header it uses
 * only the record formats, the key encoders (into a buffer, ignoring the
 * MDB_val they return) and meta_ent_get/put, meta_sys_get/put: never
 * LMDB's calls nor its types but the opaque MDB_txn *.
 */
#ifndef STRATA_CORE_META_H
#define STRATA_CORE_META_H

#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/types.h"

#define META_FORMAT_VERSION 2u


struct meta_tent;
struct meta_wcap;
struct eng_repl_ops;

struct meta {
	MDB_env *m_env;
	MDB_dbi m_sys;
	MDB_dbi m_ent;
	MDB_dbi m_member;
	MDB_dbi m_ext;
	MDB_dbi m_idx;
	MDB_dbi m_unit;
	MDB_dbi m_layer;
	MDB_dbi m_fdmi; /* FDMI record log (core/fdmi_log.h) */
	uint32_t m_maxkey; /**< mdb_env_get_maxkeysize() */
	/* reset read transactions, renewed by meta_rtxn_get() */
	pthread_mutex_t m_rlock;
	uint32_t m_rnr;
	MDB_txn *m_rtxn[META_RTXN_CACHE];
	/* Per-thread read transactions (meta.c, "per-thread"): this open's
	 * serial (never reused), and the threads' entries registered with it
	 * (under the process-wide registry lock in meta.c). */
	uint64_t m_serial;
	struct meta_tent *m_tents;
	uint32_t m_nr_tents;
	/* Replication (meta_repl.c, core/eng_repl.h): the hook (NULL: none),
	 * whether the current top-level write transaction records its keys
	 * (set at meta_wtxn_open from the hook), the touched keys, commits
	 * made without recording since the open, and m_shiplock: held from
	 * the encoding of a write set to the end of its ro_ship (sets ship
	 * in seq order). */
	const struct eng_repl_ops *m_rops;
	void *m_rarg;
	bool m_cap;
	struct meta_wcap *m_wc;
	uint64_t m_uncaptured;
	pthread_mutex_t m_shiplock;
};

/** meta_ent.me_flags */
enum meta_ent_flags {
	ME_SIZE_BYTES_SET = 1u << 0, /**< byte size set by SETATTR */
};

/** An entity record (table ent). */
struct meta_ent {
	uint32_t me_version;     /**< META_FORMAT_VERSION */
	uint32_t me_type;        /**< enum st_entity_type */
	struct st_id me_container;
	uint32_t me_block_shift; /**< objects */
	uint32_t me_layout;      /**< enum st_layout_type */
	uint32_t me_tier;
	uint32_t me_dev;
	uint64_t me_size_blocks;
	uint64_t me_size_bytes;
	uint64_t me_ctime_ns;    /**< creation time; also the incarnation */
	uint64_t me_mtime_ns;
	uint64_t me_nr_records;  /**< indices */
	uint32_t me_flags;       /**< ME_* */
	uint32_t me_pool;        /**< pdclust/mirror: pool index */
	uint8_t me_n;            /**< data units (mirror: copies) */
	uint8_t me_k;            /**< parity units (mirror: 0) */
	uint8_t me_s;            /**< spare units */
	uint8_t me_unit_shift;   /**< log2 unit size */
	uint32_t me_pad;
};
_Static_assert(sizeof(struct meta_ent) == 96, "meta_ent on-disk size");

/** meta_ext.mx_flags */
enum meta_ext_flags {
	MX_UNWRITTEN = 1u << 0, /**< allocated by ALLOC, reads as zeros */
	/** A composite object's map: blocks live in layer mx_dev_off (no
	 *  device space of its own). */
	MX_LAYER = 1u << 1,
};

/** One layer of a composite object (table layer). */
struct meta_layer {
	struct st_id ml_sub;  /**< the sub-object holding its blocks */
	uint32_t ml_priority;     /**< higher = newer; writes go to the top */
	uint32_t ml_pad;
};
_Static_assert(sizeof(struct meta_layer) == 24, "meta_layer on-disk size");

/** One extent of an object: blocks [key blk, + mx_nr_blks) live at
 *  mx_dev_off on device mx_dev. */
struct meta_ext {
	uint64_t mx_nr_blks;
	uint64_t mx_dev_off; /**< bytes in the device's data area */
	uint16_t mx_dev;
	uint16_t mx_flags;   /**< MX_* */
	uint32_t mx_pad;
};
_Static_assert(sizeof(struct meta_ext) == 24, "meta_ext on-disk size");

/** meta_unit.mu_flags */
enum meta_unit_flags {
	/** The unit's content was never written on mu_dev (its device had
	 *  failed when the group was written): rebuild it from the group. */
	MU_LOST = 1u << 0,
};

/** One unit of a pdclust/mirror object: mu_len bytes at mu_dev_off on
 *  device mu_dev, whose crc64 (ISA-L, ec_crc()) is mu_crc. */
struct meta_unit {
	uint64_t mu_dev_off;
	uint32_t mu_len;
	uint16_t mu_dev;
	uint16_t mu_flags; /**< MU_* */
	uint64_t mu_crc;
};
_Static_assert(sizeof(struct meta_unit) == 24, "meta_unit on-disk size");

#define META_ID_LEN 16u
#define META_EXT_KEY_LEN 24u
#define META_MEMBER_KEY_LEN 33u

/** meta_open() flags. */
enum meta_open_flags {
	META_CREATE = 1u << 0, /**< create the environment if absent */
	/** Every commit syncs its meta page too (no MDB_NOMETASYNC): for an
	 *  environment on NVRAM, where a sync costs little, so a commit is
	 *  durable when mdb_txn_commit() returns. */
	META_SYNC_META = 1u << 1,
};

/**
 * Open the environment in dir with a map of map_size bytes; flags are
 * META_* (without META_SYNC_META a commit leaves its meta page unsynced:
 * the next commit's sync or mdb_env_sync() makes it durable).  Returns 0,
 * -ENOENT (absent and not META_CREATE), -ST_ECORRUPT (LMDB says the
 * file is not a valid environment), -errno.
 */
int meta_open(struct meta *m, const char *dir, uint64_t map_size,
	      uint32_t flags);
void meta_close(struct meta *m);

/*
 * Metadata on NVRAM (ST_CONF_META_NVRAM, eng_conf.ec_meta_nvram): the
 * store's "DATA_DIR/meta" is a symbolic link to "NVDIR/strata-UUID-meta"
 * (NVDIR absolute, UUID the store's), so every path that opens DATA_DIR/meta
 * follows it unchanged.  A store without the option has a directory there.
 */

/**
 * Whether data_dir/meta is a link (*linked) and, if so, that its target is
 * a directory.  Returns 0, or -ENOENT with a message naming data_dir and
 * the missing target when the link dangles (the NVRAM lost, e.g. tmpfs at
 * a reboot); nothing is changed either way.
 */
int meta_nv_check(const char *data_dir, bool *linked);
/**
 * Make NVDIR/strata-UUID-meta (nv_dir NULL: /dev/shm) for a new store and
 * link data_dir/meta to it.  A leftover of an interrupted create (a link
 * whose target holds no data.mdb, or an empty meta directory) is removed
 * first.  Returns 0 or a negative code with a message (nothing left made).
 */
int meta_nv_make(const char *data_dir, const char *nv_dir,
		 const uint8_t uuid[16]);
/**
 * Remove the NVRAM directory data_dir/meta links to (its data.mdb and
 * lock.mdb, then itself) and the link (store destroy; the environment must
 * be closed).  No link: nothing to do.  Failures are logged as warnings.
 */
void meta_nv_remove(const char *data_dir);

/**
 * A read-only transaction on a snapshot that holds every commit that
 * returned before the call: the thread's own or a cached one renewed
 * (mdb_txn_renew: no allocation, its reader slot kept), or a new one.  Returns 0 and *txn, or
 * a negative code with a message.  Give it back with meta_rtxn_put()
 * (never mdb_txn_abort()), from the thread that took it when it is the
 * thread's own (else from any thread: the environment is MDB_NOTLS).
 *
 * Each thread keeps one transaction of its own per environment (for up
 * to META_TLS_ENVS environments and META_RTXN_THREADS threads per
 * environment), taken and given back without a lock and reset between
 * reads (meta.c, "Kept snapshots, withdrawn"), so an idle thread never
 * keeps LMDB from reusing freed pages; the others go through a cache of
 * META_RTXN_CACHE reset transactions under a mutex.  A thread's own
 * transaction is aborted when the thread exits (a pthread key
 * destructor: its reader slot is freed) or at meta_close(), whichever
 * comes first.  A thread past the limits, or whose renewal fails, takes
 * the shared path: no call fails for it.
 */
int meta_rtxn_get(struct meta *m, MDB_txn **txn);
/** End a transaction of meta_rtxn_get(): reset, and kept as the
 *  thread's own (it holds none), or cached, or aborted when the cache is
 *  full. */
void meta_rtxn_put(struct meta *m, MDB_txn *txn);
/**
 * mdb_txn_commit() of write transaction txn of m.  Returns its code
 * (LMDB's, 0 on success); txn is ended either way.  Every top-level write
 * transaction (engine, composite layer, cluster servers) commits through
 * it, the one place for work a commit owes the readers (none since read
 * snapshots are no longer kept); nested ones keep mdb_txn_commit().
 */
int meta_txn_commit(struct meta *m, MDB_txn *txn);
/* (With a replication hook it also ships the write set and waits for it:
 * a failure of the wait is returned as a negative errno, the transaction
 * being committed locally.) */
/**
 * A cursor on dbi in txn (a transaction of meta_rtxn_get()): the calling
 * thread's kept cursor renewed (mdb_cursor_renew: no allocation) or a new one.  0 and *cur, or a
 * negative code with a message.  End it with
 * meta_rcursor_put() before meta_rtxn_put() of its transaction.
 */
int meta_rcursor_get(struct meta *m, MDB_txn *txn, MDB_dbi dbi,
		     MDB_cursor **cur);
/** End a cursor of meta_rcursor_get(): kept by the thread, or closed. */
void meta_rcursor_put(struct meta *m, MDB_cursor *cur);
/** Threads holding a per-thread transaction of m now (tests). */
uint32_t meta_rtxn_threads(struct meta *m);

/*
 * Write transactions and changes inside the engine.  Every top-level write
 * transaction of the engine begins with meta_wtxn_open() and commits with
 * meta_txn_commit() (or meta_txn_commit_ship()); every put and delete of
 * core/ goes through meta_mput(), meta_mdel(), meta_mcdel(), which record
 * the (table, key) they touch while a replication hook is set (m_cap): the
 * write set of the commit (core/eng_repl.h).  They return LMDB's code.
 */
/** mdb_txn_begin() of a top-level write transaction; resets the touched
 *  keys (and records from now on when a hook is set). */
int meta_wtxn_open(struct meta *m, MDB_txn **txn);
/** mdb_put() recording (table of dbi, key). */
int meta_mput(struct meta *m, MDB_txn *txn, MDB_dbi dbi, MDB_val *k,
	      MDB_val *v, unsigned int flags);
/** mdb_del() recording (table of dbi, key). */
int meta_mdel(struct meta *m, MDB_txn *txn, MDB_dbi dbi, MDB_val *k,
	      MDB_val *v);
/** mdb_cursor_del() of cur (on table dbi) recording its current key. */
int meta_mcdel(struct meta *m, MDB_cursor *cur, MDB_dbi dbi,
	       unsigned int flags);
/**
 * Commit top-level write transaction txn as meta_txn_commit() but without
 * waiting for the replication hook: when the transaction recorded keys, its
 * write set's seq is put in *seq (else 0) after it was shipped; the caller
 * calls meta_repl_wait(m, *seq) before reporting it durable (the group
 * commit).  Returns LMDB's code (0 on success).
 */
int meta_txn_commit_ship(struct meta *m, MDB_txn *txn, uint64_t *seq);
/** ro_wait(seq) of m's hook; 0 when there is none or seq is 0. */
int meta_repl_wait(struct meta *m, uint64_t seq);
/** Free the replication state of m (meta_close()). */
void meta_repl_fini(struct meta *m);
/** Read sys repl:seq in txn (0 when absent). */
uint64_t meta_repl_seq_get(MDB_txn *txn, struct meta *m);

/** Map an LMDB error to a negative errno, recording a message about what.
 *  A negative errno (a replication hook's failure) is returned as it is,
 *  with its message. */
int meta_err(int mdb_rc, const char *what);

/* Key encoders: write the key into buf and return its MDB_val. */
void meta_id_enc(uint8_t out[16], const struct st_id *id);
void meta_id_dec(const uint8_t in[16], struct st_id *id);
MDB_val meta_ent_key(uint8_t buf[16], const struct st_id *id);
MDB_val meta_member_key(uint8_t buf[33], const struct st_id *cont,
			uint32_t type, const struct st_id *id);
MDB_val meta_ext_key(uint8_t buf[24], const struct st_id *obj,
		     uint64_t blk);
uint64_t meta_ext_key_blk(const MDB_val *key);
/** Index record key; buf must hold 16 + klen bytes. */
MDB_val meta_idx_key(uint8_t *buf, const struct st_id *idx,
		     const void *key, size_t klen);

/** Read the entity record of id.  0, -ENOENT, or -errno. */
int meta_ent_get(MDB_txn *txn, struct meta *m, const struct st_id *id,
		 struct meta_ent *out);
/** Write the entity record of id. */
int meta_ent_put(MDB_txn *txn, struct meta *m, const struct st_id *id,
		 const struct meta_ent *me);

/** sys table access by name. */
int meta_sys_get(MDB_txn *txn, struct meta *m, const char *name, void *buf,
		 size_t len);
int meta_sys_put(MDB_txn *txn, struct meta *m, const char *name,
		 const void *buf, size_t len);

#endif
