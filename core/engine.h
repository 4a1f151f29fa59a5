/*
 * engine.h — the per-node core engine: store, devices, group commit, and the
 * execution of object, index and entity requests.
 *
 * Data path of an update (details in docs/data-path.md):
 *   eng_exec()            validates against the metadata, allocates space on
 *                         the target device and writes the data there
 *                         (tier_dev_write) — out of place, never over live data;
 *   eng_commit_submit()   queues the request's commit item;
 *   syncer thread         takes a batch and syncs every device it wrote
 *                         (tier_dev_sync), so its data is durable;
 *   committer thread      applies all items of the batch in ONE LMDB write
 *                         transaction and commits it (group commit): the
 *                         items are visible (ci_executed, op EXECUTED);
 *   next commit or sync   the meta page of that commit is durable (LMDB
 *                         MDB_NOMETASYNC: the next commit's sync, or an
 *                         mdb_env_sync when nothing else is queued): space
 *                         the batch unmapped goes to the reclaimer (released
 *                         after an RCU grace period) and ci_done() runs
 *                         (op STABLE).
 * A crash before the commit leaves the old maps, and the new space is free
 * again at the next open (the allocator is rebuilt from the maps); after it,
 * the new maps.  Nothing is ever half-applied.
 *
 * Reads (object READ, index GET/NEXT, entity OPEN/GETATTR) run entirely in
 * eng_exec() under an LMDB read transaction inside an RCU read-side section.
 *
 * Threads calling eng_exec() must have called eng_thread_enter().
 */
#ifndef STRATA_CORE_ENGINE_H
#define STRATA_CORE_ENGINE_H

#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>

#include "clovis/clovis.h"
#include "core/alloc.h"
#include "core/limits.h"
#include "core/meta.h"
#include "layouts/layout.h"
#include "tiers/tier.h"

struct eng;

/** Engine configuration (embedded store). */
struct eng_conf {
	const char *ec_dir;       /**< data directory */
	bool ec_create;           /**< make a store if none */
	uint64_t ec_dev_size;     /**< per device at create */
	const char *ec_nvram_dir; /**< NVRAM device directory at create */
	uint64_t ec_meta_size;    /**< LMDB map size */
};

/** A range of device space, in bytes (multiples of LIM_ALLOC_UNIT). */
struct eng_space {
	uint32_t sp_dev;
	uint64_t sp_off;
	uint64_t sp_len;
};

/** A growable vector of spaces. */
struct eng_spacevec {
	struct eng_space *sv_v;
	uint32_t sv_nr;
	uint32_t sv_cap;
};

#define ENG_DEVMASK_WORDS (LIM_DEV_MAX / 64)

/** A commit item: one request's share of a group commit. */
struct eng_citem {
	struct eng_citem *ci_next;
	/** Apply the update in txn.  Returns 0, or a negative rc.  It must
	 *  either fail before changing anything (soft error: the item fails
	 *  alone) or set ci_hard (the whole transaction is discarded and
	 *  the other items retried). */
	int (*ci_apply)(struct eng *e, MDB_txn *txn, struct eng_citem *ci);
	/** Called once when the item's commit is visible (may be NULL);
	 *  ci_done(ci, 0) follows when it is durable. */
	void (*ci_executed)(struct eng_citem *ci);
	/** Called once from the commit stages when the item is durable
	 *  (rc 0) or failed (rc < 0, nothing of it applied). */
	void (*ci_done)(struct eng_citem *ci, int rc);
	uint64_t ci_devmask[ENG_DEVMASK_WORDS]; /**< devices to sync first */
	struct eng_spacevec ci_alloc; /**< taken for it; freed if it fails */
	struct eng_spacevec ci_freed; /**< unmapped by it; freed after */
	bool ci_hard;
	char ci_msg[LIM_ERRMSG_LEN];  /**< failure message */
};

/** Request kinds of eng_exec(). */
enum eng_req_kind {
	ER_OBJ_READ = 1,
	ER_OBJ_WRITE,
	ER_OBJ_ALLOC,
	ER_OBJ_FREE,
	ER_IDX_GET,
	ER_IDX_PUT,
	ER_IDX_DEL,
	ER_IDX_NEXT,
	ER_ENT_CREATE,
	ER_ENT_OPEN,
	ER_ENT_DELETE,
	ER_ENT_GETATTR,
	ER_ENT_SETATTR,
};

/** One request to the engine.  Vectors are caller-owned (see clovis.h). */
struct eng_req {
	struct eng_citem er_ci;      /**< first: updates only */
	uint32_t er_kind;            /**< enum eng_req_kind */
	uint32_t er_type;            /**< entity type */
	struct clovis_id er_id;      /**< entity */
	struct clovis_id er_container;
	/** in: attributes for CREATE/SETATTR and the incarnation (ctime)
	 *  the handle was opened at; out: attributes after the op. */
	struct meta_ent er_ent;
	const struct clovis_extvec *er_ext;
	struct clovis_bufvec *er_data;
	struct clovis_bufvec *er_keys;
	struct clovis_bufvec *er_vals;
	int32_t *er_rcs;
	uint32_t er_flags;
	uint64_t er_bytes;           /**< out: data bytes or records moved */
};

/** eng_exec() result when the request went to the committer. */
#define ENG_PENDING 1

/**
 * Open the store in c->ec_dir (making it when c->ec_create and it has none).
 * Returns 0 and *out, or a negative code (see clovis_init()).
 */
int eng_open(struct eng **out, const struct eng_conf *c);

/** Remove the store in dir (see clovis_store_destroy()). */
int eng_destroy(const char *dir);

/** Drain the committer, release everything, close devices and LMDB. */
void eng_close(struct eng *e);

/** Register / unregister the calling thread with the engine (RCU). */
void eng_thread_enter(void);
void eng_thread_leave(void);

/**
 * Execute r.  Read-only requests finish here: 0 or a negative code.  Updates
 * do their data I/O and are queued to the committer: ENG_PENDING, after
 * which r->er_ci.ci_done() reports the outcome; or a negative code if they
 * fail before being queued (nothing changed).  On failure a message is in
 * err_msg() (synchronous) or r->er_ci.ci_msg (committer).
 */
int eng_exec(struct eng *e, struct eng_req *r);

/** Queue a commit item; its ci_done() reports the outcome. */
void eng_commit_submit(struct eng *e, struct eng_citem *ci);

/** Call hook(arg, latency_us, items) after every group commit (NULL: none).
 *  Set it before launching work, clear it after draining. */
void eng_commit_hook_set(struct eng *e,
			 void (*hook)(void *, uint64_t, uint32_t), void *arg);

/** Metadata of the engine (read transactions for listing). */
struct meta *eng_meta(struct eng *e);

/** Number of devices, and information about device i. */
uint32_t eng_dev_nr(struct eng *e);
void eng_dev_info(struct eng *e, uint32_t i, struct clovis_dev_info *out);

/** Save / load an opaque blob in the sys table (statistics). */
int eng_sys_save(struct eng *e, const char *name, const void *buf, size_t len);
int eng_sys_load(struct eng *e, const char *name, void *buf, size_t len);

/* Internal to core/: shared by engine.c, obj.c, idx.c, ent.c. */
struct eng_dev {
	struct tier_dev *ed_dev;
	struct alloc ed_alloc;
	uint32_t ed_tier;
};

struct eng_dev *eng_dev_get(struct eng *e, uint32_t i);
/* Take bytes on dev in runs that are whole multiples of gran bytes. */
int eng_space_take(struct eng *e, uint32_t dev, uint64_t bytes, uint64_t gran,
		   struct eng_spacevec *sv);
void eng_space_release(struct eng *e, struct eng_spacevec *sv);
int eng_spacevec_add(struct eng_spacevec *sv, uint32_t dev, uint64_t off,
		     uint64_t len);
void eng_spacevec_fini(struct eng_spacevec *sv);
const struct layout_pool *eng_pool(struct eng *e);

int obj_exec(struct eng *e, struct eng_req *r);
int obj_delete_maps(struct eng *e, MDB_txn *txn, const struct clovis_id *id,
		    struct eng_spacevec *freed);
int obj_rebuild_alloc(struct eng *e, MDB_txn *txn);
int idx_exec(struct eng *e, struct eng_req *r);
int idx_delete_records(struct eng *e, MDB_txn *txn, const struct clovis_id *id);
int ent_exec(struct eng *e, struct eng_req *r);
/** Check the entity of r exists with the incarnation r was opened at;
 *  fills r->er_ent's stored copy into *cur.  0 or -ENOENT (message). */
int ent_check(struct eng *e, MDB_txn *txn, struct eng_req *r,
	      struct meta_ent *cur);
/** "hi:lo" of an id in a static per-thread buffer, for messages. */
const char *eng_id_str(const struct clovis_id *id);
uint64_t eng_now_ns(void);

#endif
