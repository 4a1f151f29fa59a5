/*
 * engine.h — the per-node core engine: store, devices, group commit, and the
 * execution of object, index and entity requests.
 *
 * This header is the store-level contract: the engine handle, requests and
 * commit items, open/close/exec, the group commit, devices, pools and
 * space.  Each part of the engine has its own contract, included at the end
 * of this one: objects (obj.h), indices (idx.h), entities (ent.h),
 * composite objects (comp.h), SMR zones (zone.h).  Objects with a unit
 * layout (pdclust, mirror) run in layouts/stripe*.c, above the engine,
 * which reaches them only through the table its opener hands it
 * (struct eng_layout_ops, ec_layout_ops).  Files: see core/README.md.
 *
 * Data path of an update (details in docs/data-path.md):
 *   eng_exec()            validates against the metadata, allocates space on
 *                         the target device and writes the data there
 *                         (tier_dev_write) — out of place, never over live data;
 *   eng_commit_submit()   queues the request's commit item;
 *   syncer thread         takes a batch (waiting for more items while other
 *                         updates are on their way, eng_update_coming(), or
 *                         updates just reported done may come back: at most
 *                         a gap of about one update's execution per item,
 *                         2 ms in all) and syncs every device it wrote, all
 *                         in parallel (TIO_SYNC requests of tier_io_run), so
 *                         its data is durable;
 *   committer thread      applies all items of the batch in ONE LMDB write
 *                         transaction and commits it (group commit): the
 *                         items are visible (ci_executed, op EXECUTED);
 *   next commit or sync   the meta page of that commit is durable (LMDB
 *                         MDB_NOMETASYNC: the next commit's sync, or an
 *                         mdb_env_sync when no batch follows within
 *                         ENG_STABLE_WAIT_US, 300 us, or none is on its way
 *                         at all, or the batch's own ops are the next batch,
 *                         a closed loop): space
 *                         the batch unmapped goes to the reclaimer (released
 *                         after an RCU grace period) and ci_done() runs
 *                         (op STABLE).  A store with its metadata on NVRAM
 *                         (ec_meta_nvram) syncs the meta page in the commit
 *                         itself: STABLE at once, with EXECUTED.
 * A crash before the commit leaves the old maps, and the new space is free
 * again at the next open (the allocator is rebuilt from the maps); after it,
 * the new maps.  Nothing is ever half-applied.
 *
 * Reads (object READ, index GET/NEXT, entity OPEN/GETATTR) run entirely in
 * eng_exec() under an LMDB read transaction (object READs inside an RCU
 * read-side section).  Index reads take a reset read transaction from a
 * small cache (meta_rtxn_get) rather than beginning a new one.
 *
 * Threads calling eng_exec() for object requests or updates must have
 * called eng_thread_enter(); index GET/NEXT and entity OPEN/GETATTR need
 * no RCU registration (clovis runs them in the launching thread).
 */
#ifndef STRATA_CORE_ENGINE_H
#define STRATA_CORE_ENGINE_H

#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/conf.h"
#include "core/limits.h"
#include "core/meta.h"
#include "core/types.h"
#include "core/layout.h"
#include "tiers/tier.h"

struct eng;
struct eng_req;
struct unit_upd;
struct ec_codec;
struct eng_layout_ops;

/** Engine configuration (embedded store). */
struct eng_conf {
	const char *ec_dir;       /**< data directory */
	bool ec_create;           /**< make a store if none */
	uint64_t ec_dev_size;     /**< per device at create */
	const char *ec_nvram_dir; /**< NVRAM device directory at create */
	uint64_t ec_meta_size;    /**< LMDB map size */
	const char *ec_config;    /**< YAML configuration at create (NULL:
				   *  the built-in default, core/conf.h) */
	bool ec_model;            /**< device model on for every tier */
	/** At create: the LMDB environment on ec_nvram_dir (DATA_DIR/meta a
	 *  link to it, meta_nv_make()); ignored when the store exists. */
	bool ec_meta_nvram;
	/** The unit layouts (pdclust, mirror: layouts/stripe.h,
	 *  stripe_layout_ops), handed down by whoever assembles the layers
	 *  (clovis_init(), the strata-server main).  NULL: none; objects with
	 *  those layouts are refused (-EOPNOTSUPP), and so is a store that
	 *  holds unit records. */
	const struct eng_layout_ops *ec_layout_ops;
	/** The LMDB directory to open instead of DATA_DIR/meta (NULL: that
	 *  one).  For a takeover (docs/cluster.md "Replicated homes"): an
	 *  engine opened on a shadow of another server's store
	 *  (core/eng_repl.h, DATA_DIR/shadow-sH), with ec_dir a directory of
	 *  the taker's own (its LOCK file, relative device paths).  The
	 *  store must exist there: with ec_meta_dir set, ec_create and
	 *  ec_meta_nvram are refused (-EINVAL). */
	const char *ec_meta_dir;
	/**
	 * Device path override (NULL: none): called at open for each device
	 * i with the path its record holds (e.g. "devices/ssd0.dev", or
	 * "remote:s2:0"); returns 1 with the path to attach instead in out
	 * (len bytes: a file, or a remote device "remote:sH:K" attached by
	 * the ENG_REMOTE_DRIVER driver), 0 to keep the recorded one, or a
	 * negative code with a message (the open fails).  The record is not
	 * changed.  For a takeover: the dead home's own devices are reached
	 * as remote devices of its server.
	 */
	int (*ec_dev_path)(void *arg, uint32_t dev_index,
			   const char *recorded_path, char *out, size_t len);
	void *ec_dev_path_arg;
};

/** Prefix of the recorded path of a remote device ("remote:s1:0":
 *  device 0 of server s1, core/conf.h cd_remote).  Such a device is
 *  attached with the tier driver registered as ENG_REMOTE_DRIVER
 *  (tier_dev_attach; cluster servers register it, core/server/cli_rdev.c);
 *  in a process without it, a store with remote devices refuses to open
 *  (-ENOTSUP: it belongs to a strata-server). */
#define ENG_REMOTE_PREFIX "remote:"
#define ENG_REMOTE_DRIVER "remote"

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
	/** More of the same update (may be NULL): called in txn right after
	 *  ci_apply() returned 0, so that both commit together or not at
	 *  all; a failure discards the whole transaction (ci_hard is set).
	 *  Not called for an item a dtx holds (ci_hold). */
	int (*ci_also)(struct eng *e, MDB_txn *txn, struct eng_citem *ci);
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
	/** Distributed transactions (clovis/dtx.c): when set,
	 *  eng_commit_submit() hands the item to ci_hold instead of queueing
	 *  it; the dtx applies it later, with the other items of the dtx, in
	 *  one nested LMDB transaction of its own commit item. */
	void (*ci_hold)(struct eng_citem *ci);
	/** The ADDB trace id of the op the item belongs to (0: not traced)
	 *  and its op class: the commit stages record op.committed and
	 *  op.stable for it (addb/addb.h). */
	uint64_t ci_trace;
	uint32_t ci_trace_op;
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
	struct st_id er_id;      /**< entity */
	struct st_id er_container;
	/** in: attributes for CREATE/SETATTR and the incarnation (ctime)
	 *  the handle was opened at; out: attributes after the op. */
	struct meta_ent er_ent;
	const struct st_extvec *er_ext;
	struct st_bufvec *er_data;
	struct st_bufvec *er_keys;
	struct st_bufvec *er_vals;
	int32_t *er_rcs;
	/** Optional, PUT and DEL: called in the commit's transaction before
	 *  record i is applied; returns 1 to apply it, 0 to leave it as it
	 *  is (its rc 0: a newer state superseded it), or a negative code
	 *  with a message (hard: the transaction is discarded, the request
	 *  fails).  It may write in txn (what it writes commits with the
	 *  record, or not at all).  Makes an update conditional on state
	 *  read in the same transaction: the index catch-up's merge
	 *  (core/server/srv_idx_sync.c) takes a peer's record only if it is
	 *  still newer than the local one when it is written. */
	int (*er_guard)(struct eng *e, MDB_txn *txn, struct eng_req *r,
			uint32_t i);
	void *er_guard_arg;
	uint32_t er_flags;
	uint64_t er_bytes;           /**< out: data bytes or records moved */
	/* unit layouts (layouts/stripe.c) */
	struct eng *er_eng;
	void *er_priv;               /**< the submitter's (walks) */
	/* composite objects (core/comp.c): a layer write maps its blocks */
	bool er_comp;
	bool er_comp_move;           /**< remap only blocks still in er_comp_from */
	uint32_t er_comp_layer;
	uint32_t er_comp_from;
	struct st_id er_comp_id;
	uint64_t er_comp_ctime;
	/** a move: the generations of its granules before it read (its
	 *  commit is refused, -EAGAIN, when one changed: core/comp.c) */
	uint64_t *er_comp_gen;
	uint64_t er_comp_gen_g0;     /**< granule of er_comp_gen[0] */
	uint32_t er_comp_gen_nr;
	struct unit_upd *er_upd;     /**< unit records to apply */
	uint32_t er_nr_upd;
	uint32_t er_cap_upd;
	uint32_t *er_locks;          /**< group lock slots held */
	uint32_t er_nr_locks;
	bool er_glocked;             /**< its group locks are held by the
					  submitter (a dtx, stripe_req_groups):
					  the update takes and frees none */
	void (*er_executed)(struct eng_citem *ci); /**< wrapped callbacks */
	void (*er_done)(struct eng_citem *ci, int rc);
	bool er_coming;              /**< counted by eng_update_coming() */
	/** No FDMI record of this update (core/fdmi_log.h): a copy of an
	 *  index update to a further replica, or a catch-up merge. */
	bool er_no_fdmi;
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

/** True for the request kinds that change nothing: object READ, index GET
 *  and NEXT, entity OPEN and GETATTR. */
bool eng_req_readonly(const struct eng_req *r);

/** r, an update, was queued for a thread that will pass it to eng_exec():
 *  count it as on its way to the group commit until eng_exec() starts it,
 *  so that a batch waits for it (cq_gather).  Every request so counted
 *  must reach eng_exec(). */
void eng_update_coming(struct eng *e, struct eng_req *r);

/* ---------------------------------------- group commit (core/commit.c) */

/** Queue a commit item; its ci_done() reports the outcome. */
void eng_commit_submit(struct eng *e, struct eng_citem *ci);
/** eng_commit_submit(), but a lone update on a store whose metadata is on
 *  NVRAM is synced and committed in the calling thread, and its ci_done()
 *  called before this returns (the caller must not touch ci after).
 *  Call it only from the thread that ran the update's eng_exec(): a
 *  worker, or the application's thread (clovis op_run_here), which may be
 *  running an op's callback inside a commit stage: the stages' locks are
 *  only tried here, so the item is then queued instead. */
void eng_commit_submit_here(struct eng *e, struct eng_citem *ci);
/** Queue ci to ride the next batch the syncer gathers for other updates,
 *  without making one of its own (a small record that need not be
 *  durable at once, such as an FDMI consumer's cursor).  false: no other
 *  update is on its way or queued, ci was not queued (submit it).
 *  Whoever waits for its ci_done gives it a bound: eng_commit_unride()
 *  then takes it back if no batch took it, and it is submitted as usual. */
bool eng_commit_ride(struct eng *e, struct eng_citem *ci);
/** Take ci back from the riders: true if it was still there (the caller
 *  then submits it: eng_commit_submit()), false if a batch has it (its
 *  ci_done will come). */
bool eng_commit_unride(struct eng *e, struct eng_citem *ci);
/** Commit an item its holder (ci_hold) took and now releases, with
 *  ci_hold cleared and its data already on the devices (a zero-copy write
 *  pulled and persisted after eng_exec(): core/server/srv_zc.c).  When it
 *  is alone (no update in eng_exec(), nothing queued for either stage, the
 *  syncer idle) on a store whose metadata is on NVRAM, or whose devices
 *  are all NVRAM-tier with nothing else on its way, it is synced and
 *  committed in the calling thread like eng_commit_submit_here() (durable
 *  before ci_done(ci, 0); the caller must not touch ci after).  Otherwise
 *  it is queued (eng_commit_submit).  Not from inside a commit stage nor
 *  with an update of this thread in eng_exec().  Returns whether it ran
 *  here. */
bool eng_commit_release(struct eng *e, struct eng_citem *ci);

/** Call hook(arg, latency_us, items) after every group commit (NULL: none).
 *  Set it before launching work, clear it after draining. */
void eng_commit_hook_set(struct eng *e,
			 void (*hook)(void *, uint64_t, uint32_t), void *arg);

/* ------------------------------------------ the handle (core/engine.c) */

/** A number unique to this open engine among all engines the process
 *  opened (never 0): keys per-thread caches that must not outlive it. */
uint64_t eng_serial(struct eng *e);

/** Metadata of the engine (read transactions for listing). */
struct meta *eng_meta(struct eng *e);

/** Move generations of composite objects (core/comp.c): bumped by the
 *  committer, read by movers (atomics); the slots the batch being applied
 *  bumped, bumped again once it committed or was discarded (under the
 *  committer's lock). */
struct eng_cgen {
	uint64_t cg_gen[LIM_CGEN_SLOTS];
	uint32_t *cg_pend;
	uint32_t cg_npend;
	uint32_t cg_cap;
	bool cg_all;
};
struct eng_cgen *eng_cgen(struct eng *e);

/** Is the store's metadata on NVRAM (every commit durable at once)? */
bool eng_meta_on_nvram(const struct eng *e);

/** The slice of the cluster a store was made for, from its saved
 *  configuration (`slice: I/S`, docs/cluster.md "Placement across
 *  servers"): *slice = I, *slices = S; both 0 for a store of no cluster
 *  (embedded).  A store keeps the configuration it was made with, so
 *  these never change for its life. */
void eng_slices(const struct eng *e, uint32_t *slice, uint32_t *slices);

/** Number of devices, and information about device i. */
uint32_t eng_dev_nr(struct eng *e);
void eng_dev_info(struct eng *e, uint32_t i, struct st_dev_info *out);

/** Save / load an opaque blob in the sys table (statistics). */
int eng_sys_save(struct eng *e, const char *name, const void *buf, size_t len);
int eng_sys_load(struct eng *e, const char *name, void *buf, size_t len);
/** Delete a sys blob (absent is not an error). */
int eng_sys_del(struct eng *e, const char *name);

/** "hi:lo" of an id in a static per-thread buffer, for messages. */
const char *eng_id_str(const struct st_id *id);
uint64_t eng_now_ns(void);

/** A copy of an id, for layouts/ (the engine's ids have been the ground
 *  floor's struct st_id since issue 27 point 1; kept for its callers). */
static inline struct st_id st_id_of(const struct st_id *id)
{
	return *id;
}

/* Internal to core/: shared by the engine's files and its parts. */

/* ------------------------------------------------ devices (core/dev.c) */

/** Device states (persisted in the device record). */
enum eng_dev_state {
	ED_ONLINE = 0,   /**< in service */
	ED_FAILED = 1,   /**< failed: its units are read degraded */
	ED_REPAIRED = 2, /**< failed, and every unit it held rebuilt elsewhere */
};

/** Device flags (persisted). */
enum eng_dev_flags {
	EDF_REBALANCE = 1u << 0, /**< replaced: units to move back onto it */
	/** Failed because its server was lost, not by a fault of its own:
	 *  an image failed by an HA repair of its whole server, or a home's
	 *  own device failed by the server acting for that home (a cluster's
	 *  takeover engine; core/server/srv_dev.c), so that its units are
	 *  rebuilt elsewhere; such an image comes back when its server does
	 *  (DevReq.server), one failed otherwise (its medium) does not.  When the server opens its store again with
	 *  the device attached locally (its home handed back), the device
	 *  is back ONLINE (with EDF_REBALANCE when it was REPAIRED): its
	 *  medium was never at fault (core/store.c). */
	EDF_HOME_LOST = 1u << 1,
};

struct eng_dev {
	struct tier_dev *ed_dev;
	struct alloc ed_alloc;
	uint32_t ed_tier;
	uint32_t ed_state;      /**< enum eng_dev_state (atomic) */
	uint32_t ed_flags;      /**< EDF_* */
	/** The path the store records, when the opener attached the device
	 *  under another (eng_conf.ec_dev_path: a takeover engine's
	 *  "remote:H:i@H+INC"); NULL otherwise.  The record keeps it
	 *  (dev_rec_save()): the store is the home's, and its own engine
	 *  opens it again after a handback.  malloc()ed, freed at close. */
	char *ed_rec_path;
	/* zoned (SMR) devices: appends go to the open zone (core/zone.c) */
	pthread_mutex_t ed_zlock;
	uint32_t ed_zopen;
	uint32_t ed_zclean;     /**< zone the cleaner empties, or UINT32_MAX:
				 *   no append goes there (under ed_zlock) */
};

/** Is device i usable for I/O: online, and reachable now (a remote
 *  device whose server is known to be down is not, for the ops of that
 *  moment: its state stays ONLINE, tier_dev_reachable())? */
bool eng_dev_usable(struct eng *e, uint32_t i);
/** Is device i online but not reachable now (its server known to be
 *  down)? */
bool eng_dev_unreachable(struct eng *e, uint32_t i);
/** Device i online but unreachable: ask it again now (tier_dev_recheck,
 *  at most its driver's call timeout).  True when it is usable after. */
bool eng_dev_recheck(struct eng *e, uint32_t i);
/** Mark device i failed (persisted); reason goes to the log. */
int eng_dev_fail(struct eng *e, uint32_t i, const char *reason);
/** At open: each device attached locally that is failed or repaired only
 *  because its server was lost (EDF_HOME_LOST) is back ONLINE, with
 *  EDF_REBALANCE when it was REPAIRED.  Logged. */
void eng_dev_home_back(struct eng *e);
/** Set state and flags of device i and persist them. */
int eng_dev_state_set(struct eng *e, uint32_t i, uint32_t state,
		      uint32_t flags);
/** Note an I/O error on device i; fails it past LIM_DEV_ERRORS_MAX. */
void eng_dev_io_error(struct eng *e, uint32_t i);
/** Replace failed device i by a new empty device made at path. */
int eng_dev_replace(struct eng *e, uint32_t i, const char *path);
struct eng_dev *eng_dev_get(struct eng *e, uint32_t i);
/* The failure domain of device d (cluster stores: its server + 1; 0 when
 * the store has no domains). */
uint32_t eng_dev_domain(struct eng *e, uint32_t d);

/* -------------------------- pools, codecs, group locks (core/engine.c) */

/** A pool: a set of store devices that unit layouts place over. */
struct eng_pool {
	char ep_name[32];
	uint32_t ep_nr;
	uint32_t ep_devs[LIM_DEV_MAX];
	/** Failure domains of the pool's devices (cluster stores: servers),
	 *  numbered 0..ep_nr_dom-1 in order of first appearance;
	 *  ep_nr_dom 0 = no domains (embedded), placement as before. */
	uint32_t ep_nr_dom;
	uint8_t ep_dom[LIM_DEV_MAX];
};

/** Pool p, or NULL. */
const struct eng_pool *eng_pool_get(struct eng *e, uint32_t p);
uint32_t eng_pool_nr(struct eng *e);
/** The pool of oa_pool 0: the configured default layout's, else "flash". */
uint32_t eng_default_pool(struct eng *e);
/** The ISA-L codec for n + k, made by the unit layouts' table
 *  (elo_codec_create) and cached; NULL with a message on failure. */
struct ec_codec *eng_codec(struct eng *e, uint32_t n, uint32_t k);
/** Group locks: take all slots (sorted, distinct) at once; release. */
void eng_glock(struct eng *e, const uint32_t *slots, uint32_t nr);
void eng_gunlock(struct eng *e, const uint32_t *slots, uint32_t nr);
/** Default layout for objects created with layout 0 in container c. */
void eng_default_layout(struct eng *e, const struct st_id *c,
			struct meta_ent *me);
/** Counters of the unit layer (stats). */
struct eng_ucounters {
	uint64_t uc_degraded_reads;  /**< groups read with reconstruction */
	uint64_t uc_crc_errors;      /**< checksum mismatches found */
	uint64_t uc_read_repairs;    /**< units rewritten by read-repair */
};
struct eng_ucounters *eng_ucounters(struct eng *e);

const struct layout_pool *eng_pool(struct eng *e);

/* ------------------------- unit layouts: the table above (core/engine.c) */

/** Is the object's layout one of the unit layouts (pdclust, mirror)? */
static inline bool stripe_layout(uint32_t type)
{
	return type == ST_LAYOUT_PDCLUST || type == ST_LAYOUT_MIRROR;
}

/**
 * What a device-wide walk (repair, rebalance, scrub of the unit layouts)
 * did.  A walk may take several calls (a stop or a crash, then
 * a call that resumes it): the first fields count what THIS call did, all
 * measured over the same span (sw_elapsed_ns), so sw_bytes / sw_elapsed_ns
 * is this call's rate; the sw_walk_* fields count the whole walk from its
 * start, over every call (equal to the first ones when sw_resumed is 0).
 * The return code and the device states follow the whole walk.
 */
struct stripe_walk_stats {
	uint64_t sw_units;        /**< unit records visited by this call */
	uint64_t sw_bytes;        /**< bytes of the units this call checked,
				   *  rebuilt or moved (one unit size each; a
				   *  rebuild reads N units to make one) */
	uint64_t sw_rebuilt;      /**< units rebuilt and rewritten */
	uint64_t sw_moved;        /**< units copied to another device */
	uint64_t sw_corrupt;      /**< checksum mismatches or read errors */
	uint64_t sw_unrepairable; /**< units that could not be rebuilt */
	uint64_t sw_resumed;      /**< 1 if the walk continued a saved one */
	uint64_t sw_elapsed_ns;   /**< this call's time */
	uint32_t sw_devices;      /**< devices this call read from */
	uint64_t sw_shared;       /**< groups this call left with two units
				   *  on one failure domain (cluster pools)
				   *  although the pool has domains enough:
				   *  0 after a complete rebalance with every
				   *  server reachable */
	/* The whole walk, including the calls before a resume. */
	uint64_t sw_walk_units;
	uint64_t sw_walk_rebuilt;
	uint64_t sw_walk_moved;
	uint64_t sw_walk_corrupt;
	uint64_t sw_walk_unrepairable;
};

/** Progress callback: done and total units; return non-zero to stop
 *  (the walk saves its place and returns -EINTR). */
typedef int (*stripe_progress_fn)(void *arg, uint64_t done, uint64_t total);

/**
 * One data unit of an object with a unit layout, as function shipping maps
 * it (elo_data_units): the part [ur_skip, ur_skip + ur_len) of the unit,
 * which holds the object's bytes [ur_obj_off, ur_obj_off + ur_len).  A
 * unit never written (ur_hole) reads as zeros and has no device; else it
 * lies on store device ur_dev at ur_dev_off, ur_unit bytes whose crc64
 * (layouts/ec.h ec_crc()) is ur_crc.  ur_group, ur_slot: where it is in
 * the layout (for messages).
 */
struct eng_unit_ref {
	uint64_t ur_obj_off;
	uint32_t ur_skip;
	uint32_t ur_len;
	uint32_t ur_unit;
	uint32_t ur_dev;
	uint64_t ur_dev_off;
	uint64_t ur_crc;
	uint64_t ur_group;
	uint32_t ur_slot;
	bool ur_hole;
	bool ur_lost;  /**< its record is marked lost (MU_LOST) */
};

/** Called for each data unit in object order; nonzero stops the walk and
 *  is returned. */
typedef int (*eng_unit_fn)(void *arg, const struct eng_unit_ref *u);

/**
 * The unit layouts (pdclust, mirror) as the engine sees them: one table,
 * defined above the engine (layouts/stripe.h: stripe_layout_ops, whose
 * entries document each call) and handed to eng_open() in ec_layout_ops.
 * The engine calls it where it meets an object with a unit layout (one
 * indirect call per request); it never includes the layouts' code.
 */
struct eng_layout_ops {
	const char *elo_name;
	/* Requests (obj_exec(), obj_apply(), delete, composite layers). */
	int (*elo_exec)(struct eng *e, struct eng_req *r,
			const struct meta_ent *ent);
	int (*elo_reqs_locks)(struct eng *e, struct eng_req **reqs,
			      uint32_t nr, uint32_t **slots, uint32_t *nslots,
			      uint32_t *bad);
	int (*elo_apply)(struct eng *e, MDB_txn *txn, struct eng_req *r);
	int (*elo_delete_units)(struct eng *e, MDB_txn *txn,
				const struct st_id *obj,
				struct eng_spacevec *freed);
	int (*elo_groups_drop)(struct eng *e, MDB_txn *txn,
			       const struct st_id *obj, uint64_t g,
			       uint64_t nr, uint32_t w,
			       struct eng_spacevec *freed);
	int (*elo_rebuild_alloc)(struct eng *e, MDB_txn *txn);
	int (*elo_attr_check)(struct eng *e, const struct st_id *id,
			      struct meta_ent *me);
	/* Device-wide walks. */
	int (*elo_repair)(struct eng *e, stripe_progress_fn fn, void *arg,
			  struct stripe_walk_stats *st);
	int (*elo_rebalance)(struct eng *e, stripe_progress_fn fn, void *arg,
			     struct stripe_walk_stats *st);
	int (*elo_scrub)(struct eng *e, stripe_progress_fn fn, void *arg,
			 struct stripe_walk_stats *st);
	int (*elo_scrub_obj)(struct eng *e, const struct st_id *id,
			     struct stripe_walk_stats *st);
	/* Function shipping (core/isc/isc_eng.c): the data units of an
	 * object's bytes [start, end) (elo_data_units, below). */
	int (*elo_data_units)(struct eng *e, const struct st_id *id,
			      const struct meta_ent *me, uint64_t start,
			      uint64_t end, eng_unit_fn fn, void *arg);
	/* The erasure codec of n + k, cached by the engine (eng_codec()). */
	int (*elo_codec_create)(struct ec_codec **out, uint32_t n, uint32_t k);
	void (*elo_codec_destroy)(struct ec_codec *c);
};

/** The engine's unit-layout table, or NULL when it was opened without. */
const struct eng_layout_ops *eng_layout_ops(struct eng *e);

/*
 * The calls of the table for the engine's parts, the server and the
 * participant (dtm/srv_dtx.c).  Without a table, each refuses with
 * -EOPNOTSUPP naming the object and its layout (eng_unit_refuse()), except
 * eng_unit_req_fini() (nothing to free: no unit records were made) and
 * eng_unit_reqs_locks() over requests none of which has a unit layout.
 */
int eng_unit_refuse(const struct st_id *id, uint32_t layout);
int eng_unit_exec(struct eng *e, struct eng_req *r, const struct meta_ent *ent);
int eng_unit_reqs_locks(struct eng *e, struct eng_req **reqs, uint32_t nr,
			uint32_t **slots, uint32_t *nslots, uint32_t *bad);
int eng_unit_apply(struct eng *e, MDB_txn *txn, struct eng_req *r);
int eng_unit_delete_units(struct eng *e, MDB_txn *txn,
			  const struct st_id *obj, uint32_t layout,
			  struct eng_spacevec *freed);
int eng_unit_groups_drop(struct eng *e, MDB_txn *txn,
			 const struct st_id *obj, uint32_t layout,
			 uint64_t g, uint64_t nr, uint32_t w,
			 struct eng_spacevec *freed);
int eng_unit_attr_check(struct eng *e, const struct st_id *id,
			struct meta_ent *me);
/** Free the request's unit vector and group lock slots (op free). */
void eng_unit_req_fini(struct eng_req *r);
/** The walks; -EOPNOTSUPP without a table. */
int eng_unit_repair(struct eng *e, stripe_progress_fn fn, void *arg,
		    struct stripe_walk_stats *st);
int eng_unit_rebalance(struct eng *e, stripe_progress_fn fn, void *arg,
		       struct stripe_walk_stats *st);
int eng_unit_scrub(struct eng *e, stripe_progress_fn fn, void *arg,
		   struct stripe_walk_stats *st);
/** Add b's figures to a's (walks of several engines or objects). */
void eng_walk_stats_add(struct stripe_walk_stats *a,
			const struct stripe_walk_stats *b);
/** Parity groups whose unit records eng_unit_data_units() reads in one
 *  read transaction: a range of at most this many groups (from its first)
 *  is one snapshot. */
#define ENG_UNITS_BATCH 64u
/** The data units of bytes [start, end) of unit-layout object id whose
 *  record is *me (elo_data_units): fn called for each, in object order,
 *  from records read in short read transactions (a snapshot per batch of
 *  ENG_UNITS_BATCH groups; a write meanwhile may show in a later batch).
 *  0, fn's nonzero return, or a negative code; -EOPNOTSUPP without a
 *  table. */
int eng_unit_data_units(struct eng *e, const struct st_id *id,
			const struct meta_ent *me, uint64_t start,
			uint64_t end, eng_unit_fn fn, void *arg);
/** The scrub of one unit-layout object's units (elo_scrub_obj). */
int eng_unit_scrub_obj(struct eng *e, const struct st_id *id,
		       struct stripe_walk_stats *st);

/* ------------------------------------------------ space (core/space.c) */

/* Take bytes on dev in runs that are whole multiples of gran bytes. */
int eng_space_take(struct eng *e, uint32_t dev, uint64_t bytes, uint64_t gran,
		   struct eng_spacevec *sv);
void eng_space_release(struct eng *e, struct eng_spacevec *sv);
/** Tie device dev's allocator to the device's metrics label and set its
 *  free-bytes gauge (addb/addb.h, strata_device_free_bytes); the
 *  allocator keeps it up to date from then on.  Called when the device
 *  is opened or replaced (no reader of ed_dev may race with it). */
void eng_space_gauge(struct eng *e, uint32_t dev);

/** Wait (at most ENG_DRAIN_MAX_NS, core/limits.h) until every space
 *  queued for release after an RCU grace period before this call is back
 *  on its device.  Returns whether any was queued (so an allocation that
 *  failed may be tried again).  Never waits inside an RCU read-side
 *  section (returns false there). */
bool eng_reclaim_drain(struct eng *e);
/* After a direct LMDB commit that unmapped sv: make it durable, wait for
 * readers (RCU grace period), then release sv. */
void eng_space_release_durable(struct eng *e, struct eng_spacevec *sv);
/*
 * Release sv (space no record maps: an abandoned write's) not before
 * not_before_ns (CLOCK_REALTIME, eng_now_ns()), when no late write of it
 * can land any more (tier_dev_fence_ns); at once when that time has passed.
 * sv is taken over (emptied).  Kept in memory only: at the next open the
 * allocator is rebuilt from the maps, where the space is free.
 */
void eng_space_release_at(struct eng *e, struct eng_spacevec *sv,
			  uint64_t not_before_ns);
/* Bytes waiting in eng_space_release_at() for their time. */
uint64_t eng_space_fenced(struct eng *e);
int eng_spacevec_add(struct eng_spacevec *sv, uint32_t dev, uint64_t off,
		     uint64_t len);
void eng_spacevec_fini(struct eng_spacevec *sv);

/* The parts' contracts (each includes this header first). */
#include "core/obj.h"
#include "core/idx.h"
#include "core/ent.h"
#include "core/comp.h"
#include "core/zone.h"

#endif
