/*
 * gateways/posix/ns_internal.h — what ns.c (names, directories, attributes,
 * xattrs) and ns_io.c (file data, the size/time cache, durability
 * tracking, changes as dtxs) share.  The contract is ns.h.
 *
 * Main structures of a mount (struct ns):
 *   ns_locks    a hash of rwlocks by inode number.  A change takes the
 *               locks of every inode it reads and rewrites, exclusive for
 *               an inode whose record it rewrites (nlink, it_parent, size)
 *               and shared for a directory it only adds or removes entries
 *               of, all at once in slot order (no deadlock).  Reads of file
 *               data take the file's lock shared.
 *   ns_files    the cache of sizes and times not yet written back (struct
 *               ns_file, by inode), and of the open data object of files
 *               being written.  Its time and size fields change under
 *               ns_cache_lock and the inode's lock; its data fields under
 *               the inode's lock held exclusive.  An entry goes when it is
 *               clean and its inode's lock is held exclusive.
 *   ns_pend     ops that reached EXECUTED but may not be STABLE yet, oldest
 *               first, each with the buffers and handles it uses; ns_fsync()
 *               waits them.  Bounded by NS_PEND_MAX.
 * File data: bytes past a file's size never show when it grows.  Its
 * object may hold some there (a truncate of a unit layout leaves its last
 * block's tail; a crash loses a cached size after its data was written):
 * a read-modify-write zeroes a block's bytes past the size, and growing a
 * file (a write starting past its end, a truncate up) zeroes the partial
 * block at the old end and frees the whole blocks after it, where the
 * object has blocks (f_hw_blocks).
 */
#ifndef STRATA_GATEWAYS_POSIX_NS_INTERNAL_H
#define STRATA_GATEWAYS_POSIX_NS_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "gateways/posix/ns.h"

/* Limits, each with its reason. */
#define NS_LOCKS 1024u        /* lock slots: collisions only serialise */
#define NS_FILE_BUCKETS 1024u /* cache hash chains */
#define NS_PEND_MAX 256u      /* tracked changes: bounds what fsync waits */
#define NS_PEND_BYTES_MAX (64ull << 20) /* their buffers (blocks of RMW) */
#define NS_TX_OPS_MAX 16u     /* members of one change (rename: about 10) */
#define NS_LOCKSET_MAX 8u     /* inodes one change locks (rename: 4) */
#define NS_CREATE_TRIES 16u   /* random inode numbers drawn per create */
#define NS_RETRY_MAX 16u      /* re-reads when an entry changed under us */
#define NS_XATTR_PAGE 64u     /* xattr records per NEXT */
#define NS_DOUBT_WAIT_MS 60000u /* a dtx in doubt: how long to wait for
				 * its decision (clovis_dtx_settle()) */
#define NS_INO_KEY 8u         /* bytes of an inode key (big-endian) */

_Static_assert(sizeof(struct ns_super) == 48, "ns_super on-store size");
_Static_assert(sizeof(struct ns_inode_rec) == 112, "inode record size");
_Static_assert(sizeof(struct ns_dirent_rec) == 16, "dirent record size");
_Static_assert(NS_INO_KEY + NS_XATTR_NAME_MAX <= CLOVIS_KEY_MAX,
	       "xattr key fits an index key");

/** An object handle shared by the ops that use it (refcounted). */
struct ns_objh {
	struct clovis_obj oh_obj;
	uint32_t oh_refs;
};

/** A chunk of memory owned by a tracked change. */
struct ns_blob {
	struct ns_blob *b_next;
	max_align_t b_data[];
};

/**
 * Ops of one change, kept from launch until STABLE with what they use:
 * p_ops[0..p_nr) (a dtx: its members, then its commit op last), the
 * memory their keys, values, buffers and handles live in, and object
 * handle references.
 */
struct ns_pend {
	struct ns_pend *p_next;
	uint64_t p_seq;                      /* order of reaching EXECUTED */
	uint32_t p_nr;
	uint32_t p_nr_objh;
	uint64_t p_bytes;                    /* of p_mem */
	struct clovis_op *p_ops[NS_TX_OPS_MAX + 1];
	int32_t *p_rcs[NS_TX_OPS_MAX];       /* index members' record rcs */
	struct ns_objh *p_objh[2];
	struct ns_blob *p_mem;
	/* A record the change writes (keys and value in p_mem), read back
	 * to learn its outcome when a cluster dtx's commit ends in doubt
	 * (ns_tx_outcome()): a PUT creating its key, else a PUT, else a
	 * DEL (NS_W_*; NS_W_NONE: no record op). */
	struct clovis_id p_wid;
	const void *p_wkey, *p_wval;
	size_t p_wkl, p_wvl;
	uint32_t p_wkind;
};

enum ns_witness { NS_W_NONE, NS_W_DEL, NS_W_PUT, NS_W_CREATE };

/** A change being built (ns_tx_*): one op alone, or a dtx. */
struct ns_tx {
	struct ns *t_ns;
	struct ns_pend *t_p;
	int t_rc;   /* first error while building: commit returns it */
	int t_bad;  /* the member that failed the commit, or -1 */
};

/* What a cache entry holds that its inode record does not yet. */
enum ns_file_dirty {
	NS_FD_SIZE = 1u << 0,
	NS_FD_MTIME = 1u << 1,
	NS_FD_CTIME = 1u << 2,
};

/** Cached size and times of one inode, and a file's open data object. */
struct ns_file {
	struct ns_file *f_next;
	uint64_t f_ino;
	uint32_t f_dirty;     /* NS_FD_*: what the record lacks yet */
	bool f_has_size;      /* a regular file: f_size is its size */
	bool f_loaded;        /* data fields below are set */
	uint64_t f_size;
	uint64_t f_mtime_ns, f_ctime_ns;
	/* data: under the inode's lock, exclusive to change */
	struct ns_objh *f_objh; /* the data object, NULL: none yet */
	uint32_t f_bshift;      /* its block size (log2) */
	uint32_t f_layout;      /* its layout (enum clovis_layout_type) */
	uint64_t f_hw_blocks;   /* blocks of it that may hold data */
};

/** Inode locks one change takes (slots, each shared or exclusive). */
struct ns_lockset {
	uint32_t ls_nr;
	uint32_t ls_slot[NS_LOCKSET_MAX];
	bool ls_excl[NS_LOCKSET_MAX];
};

struct ns {
	struct clovis *ns_cl;
	struct clovis_container ns_co; /* its realm holds every entity */
	struct clovis_idx ns_inodes;
	struct clovis_idx ns_xattrs;
	struct ns_super ns_sb;
	bool ns_ro;
	uint32_t ns_wb_ms;
	pthread_rwlock_t ns_locks[NS_LOCKS];
	pthread_mutex_t ns_rename_lock; /* directory moves across parents */
	/* the cache */
	pthread_mutex_t ns_cache_lock;
	struct ns_file *ns_files[NS_FILE_BUCKETS];
	uint32_t ns_nr_files;
	/* changes not known STABLE */
	pthread_mutex_t ns_pend_lock;   /* the list */
	pthread_mutex_t ns_pend_wait;   /* held while waiting popped ones */
	struct ns_pend *ns_pend_head, *ns_pend_tail;
	uint32_t ns_pend_nr;
	uint64_t ns_pend_bytes;         /* their p_bytes */
	uint64_t ns_pend_seq;           /* seq of the last added */
	int ns_pend_rc;                 /* a tracked op that failed late */
	/* writeback thread */
	pthread_t ns_wb_thread;
	pthread_cond_t ns_wb_cond;
	bool ns_wb_stop;
	bool ns_wb_started;
};

/* ------------------------------------------------ ns.c: shared helpers */

/** Set this thread's message and return rc (negative). */
int ns_err(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Now, ns since the epoch. */
uint64_t ns_now_ns(void);
/** -EROFS (with a message naming what) on a read-only mount, else 0. */
int ns_rw_check(struct ns *ns, const char *what);
/** The key of an inode (8 bytes big-endian). */
void ns_ino_key(uint64_t ino, uint8_t key[NS_INO_KEY]);
/** Record byte order: little-endian on the store (its own inverse). */
void ns_rec_swap(struct ns_inode_rec *r);
/**
 * Read inode ino's record (and a symlink's target into target, which has
 * room for NS_SYMLINK_MAX + 1 bytes, or NULL), with this mount's cached
 * size and times laid over it.  -ENOENT (message names the inode), -EIO.
 */
int ns_inode_get(struct ns *ns, uint64_t ino, struct ns_inode_rec *r,
		 char *target);
/** Fill an attr from a record. */
void ns_rec_to_attr(const struct ns *ns, uint64_t ino,
		    const struct ns_inode_rec *r, struct ns_attr *a);
/** Validate an entry name: 0, -EINVAL, -ENAMETOOLONG (with a message). */
int ns_name_check(const char *name);
/** Read entry name of directory dir into *de.  -ENOENT, -ENOTDIR. */
int ns_dirent_get(struct ns *ns, uint64_t dir, const char *name,
		  struct ns_dirent_rec *de);
/**
 * Add to tx the removal of inode ino whose last link goes (record r):
 * its record, xattrs and data object (a directory: its index).
 */
int ns_tx_inode_drop(struct ns_tx *t, uint64_t ino,
		     const struct ns_inode_rec *r);
/** Add to tx a PUT (OVERWRITE) of inode ino's record r (+ target). */
int ns_tx_inode_put(struct ns_tx *t, uint64_t ino,
		    const struct ns_inode_rec *r, const char *target,
		    bool overwrite);

/** A random 64-bit number above 1 (inode numbers, generations). */
uint64_t ns_rand64(void);
/** Launch an entity op and wait for it (STABLE). */
int ns_ent_sync(struct clovis_entity *e, enum clovis_entity_opcode oc);
/** A new inode's record: type and permissions from mode, times now. */
void ns_rec_new(struct ns_inode_rec *r, uint32_t mode, uint32_t uid,
		uint32_t gid);
/** Open directory dir's index into ix: -ENOENT, -ENOTDIR (message). */
int ns_dir_open(struct ns *ns, uint64_t dir, struct clovis_idx *ix);
/** Read entry name of the open directory index ix (of dir) into *de. */
int ns_dirent_read(struct clovis_idx *ix, uint64_t dir, const char *name,
		   struct ns_dirent_rec *de);
/** Directory dir's index opened in a handle of t (its failure t's). */
int ns_tx_dir(struct ns_tx *t, uint64_t dir, struct clovis_idx **ix);
/** Add to t the PUT of entry name -> (ino, type of mode). */
int ns_tx_dirent_put(struct ns_tx *t, struct clovis_idx *ix, const char *name,
		     uint64_t ino, uint32_t mode, bool overwrite);
/** Add to t the loss of one link of inode ino (record r, its target):
 *  nlink - 1, or its removal with the last (*gone). */
int ns_tx_unlink_inode(struct ns_tx *t, uint64_t ino, struct ns_inode_rec *r,
		       const char *target, bool *gone);

/* Lock sets. */
void ns_ls_init(struct ns_lockset *ls);
void ns_ls_add(struct ns_lockset *ls, uint64_t ino, bool excl);
void ns_ls_lock(struct ns *ns, struct ns_lockset *ls);
/** ls made of ino alone (exclusive or shared), locked. */
void ns_ls_lock_one(struct ns *ns, struct ns_lockset *ls, uint64_t ino,
		    bool excl);
void ns_ls_unlock(struct ns *ns, struct ns_lockset *ls);

/* --------------------------------- ns_io.c: changes, tracking, the cache */

/** Start a change. */
void ns_tx_init(struct ns *ns, struct ns_tx *t);
/** Note a failure while building t: the first is what commit returns. */
int ns_tx_fail(struct ns_tx *t, int rc);
/** Zeroed memory that lives as long as the change's ops (NULL: -ENOMEM
 *  noted in the tx). */
void *ns_tx_mem(struct ns_tx *t, size_t size);
/** An index handle living as long as the change, OPEN when open. */
int ns_tx_idx(struct ns_tx *t, const struct clovis_id *id, bool open,
	      struct clovis_idx **out);
/** Add an index PUT of one record (key and value copied).  Returns the
 *  member's number or a negative errno. */
int ns_tx_put(struct ns_tx *t, struct clovis_idx *ix, const void *k,
	      size_t kl, const void *v, size_t vl, bool overwrite);
/** Add an index DEL of nr keys (copied). */
int ns_tx_del(struct ns_tx *t, struct clovis_idx *ix, void *const *keys,
	      const size_t *klens, uint32_t nr);
/** Add an entity op (CREATE, DELETE) on a handle that lives as long. */
int ns_tx_ent(struct ns_tx *t, struct clovis_entity *e,
	      enum clovis_entity_opcode oc);
/** Keep a reference on oh as long as the change's ops. */
int ns_tx_objh(struct ns_tx *t, struct ns_objh *oh);
/** Add an object op on blocks [blk, blk + nr) of a shared handle (a
 *  reference is taken); data (READ, WRITE) lives in the change's memory
 *  or, for a WRITE's whole blocks, in the caller's buffer (below). */
int ns_tx_obj(struct ns_tx *t, struct ns_objh *oh,
	      enum clovis_obj_opcode oc, uint64_t blk, uint64_t nr,
	      struct clovis_bufvec *data, uint32_t flags);
/**
 * Apply the change: one op alone or a dtx of all; returns at EXECUTED
 * (the ops then tracked until STABLE) or with the failure (nothing
 * applied; t_bad the member at fault; message set).  Ends the tx.
 */
int ns_tx_commit(struct ns_tx *t, const char *what);
/** Drop a change not committed. */
void ns_tx_abort(struct ns_tx *t);

/** Wait every change tracked so far to be STABLE (first failure). */
int ns_pend_drain(struct ns *ns);
/** Free the changes at the head of the list that are STABLE. */
void ns_pend_reap(struct ns *ns);
void ns_objh_put(struct ns_objh *oh);

/** Find the cache entry of ino (under ns_cache_lock). */
struct ns_file *ns_file_find(struct ns *ns, uint64_t ino);
/** Overlay the cached size and times of ino on r, if any. */
void ns_file_overlay(struct ns *ns, uint64_t ino, struct ns_inode_rec *r);
/** Record that directory (or inode) ino changed now: mtime (when
 *  mtime) and ctime, written back later.  Caller holds ino's lock. */
void ns_file_touch(struct ns *ns, uint64_t ino, bool mtime);
/** The inode is gone: drop its entry (caller holds its lock, excl). */
void ns_file_forget(struct ns *ns, uint64_t ino);
/** The record r now holds what was cached: clean (lock held, excl). */
void ns_file_clean(struct ns *ns, uint64_t ino, const struct ns_inode_rec *r);
/** Write back every dirty entry (each under its inode's lock). */
int ns_writeback_all(struct ns *ns);
int ns_writeback_start(struct ns *ns);
void ns_writeback_stop(struct ns *ns);
/** Free every entry (umount, after the writeback). */
void ns_files_free(struct ns *ns);

/**
 * Change regular file ino's size to size in t (caller holds its lock
 * exclusive and has read its record r, whose it_size is set): shrinking,
 * t frees the blocks past the end and (plain objects) zeroes the last
 * block's tail; growing zeroes what the object holds past the old end
 * first (its own changes: invisible past the size).  The caller adds the
 * record's PUT to t and commits.
 */
int ns_truncate_tx(struct ns *ns, uint64_t ino, struct ns_inode_rec *r,
		   uint64_t size, struct ns_tx *t);

/* ------------------------------------- shared by ns.c and ns_xattr.c */

/** GET one record of ix into v (*vl bytes): 0 (*vl its size), -ENOENT,
 *  -ENOBUFS (*vl the size needed), or the op's failure. */
int ns_idx_get(struct clovis_idx *ix, const void *k, size_t kl, void *v,
	       size_t *vl);
/** Make a handle for index id of the namespace and OPEN it: 0, -ENOENT
 *  (no message), or the store's failure. */
int ns_idx_open(struct ns *ns, const struct clovis_id *id,
		struct clovis_idx *ix);

/** NEXT walk buffers for up to nr records with keys of up to
 *  CLOVIS_KEY_MAX bytes and values of vmax bytes (vmax 0: values not
 *  read). */
struct ns_walk {
	uint32_t w_nr;
	size_t w_vmax;
	char *w_keys, *w_vals;
	void **w_kp, **w_vp;
	size_t *w_kl, *w_vl;
	int32_t *w_rcs;
	uint8_t w_dummy;
};
/** Allocate w's buffers (0 or -ENOMEM; ns_walk_fini() frees what was
 *  allocated either way). */
int ns_walk_init(struct ns_walk *w, uint32_t nr, size_t vmax);
void ns_walk_fini(struct ns_walk *w);
/** One NEXT of nr slots from the key in slot 0 (w_kl[0] bytes), after it
 *  when excl. */
int ns_walk_next(struct clovis_idx *ix, struct ns_walk *w, uint32_t nr,
		 bool excl);
/** The next NEXT starts at slot k's key. */
void ns_walk_restart(struct ns_walk *w, uint32_t k);

/** Add to t the DELs of every xattr of ino (its removal). */
int ns_tx_xattrs_drop(struct ns_tx *t, uint64_t ino);

#endif
