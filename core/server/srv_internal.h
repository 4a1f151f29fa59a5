/*
 * srv_internal.h — private structures of strata-server shared by srv.c
 * (dispatch, objects, entities, listing, status, lifecycle), the index
 * replica files srv_idx*.c (records, catch-up, index requests; what only
 * they share is in srv_idx_internal.h), srv_rdev.c, srv_zc.c and dtm's
 * participant.  Limits: srv_limits.h.
 */
#ifndef STRATA_CORE_SERVER_SRV_INTERNAL_H
#define STRATA_CORE_SERVER_SRV_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "core/meta_txn.h"
#include "core/server/msg.h"
#include "core/server/peers.h"
#include "core/server/srv_limits.h"
#include "core/server/srv.h"
#include "core/server/srv_repl.h"
#include "tiers/nvram/nvram.h"

/* The server's limits (SRV_*): srv_limits.h. */

/** An index replica record: stored in the sys table as "ridx:HI:LO". */
struct ridx_rec {
	uint64_t rr_inc;   /**< canonical incarnation (first replica's ctime) */
	uint64_t rr_seq;   /**< updates applied, in the first replica's order */
};
_Static_assert(sizeof(struct ridx_rec) == 16, "ridx record size");

/** In memory: one index this server holds (or was asked about). */
struct ridx {
	struct st_id ri_id;
	uint64_t ri_inc;
	uint64_t ri_seq;
	uint64_t ri_term;   /**< highest term seen (term % servers: its
			     *   ordering replica), "rver:" record */
	bool ri_exists;     /**< a replica record is stored */
	bool ri_verified;   /**< compared with the peers in this run */
	bool ri_run_term;   /**< this replica took the term it orders in
			     *   during this run (ridx_claim()) */
	uint64_t ri_vgen;   /**< peer replicas' peers_gen() sum then */
	uint64_t ri_vms;    /**< srv_now_ms() of the last verification */
	uint64_t ri_vstalls; /**< s_stalls when it began */
	uint64_t ri_unver;  /**< times ri_verified was cleared (a
			     *   verification that saw it move leaves the
			     *   index unverified: ridx_unverify()) */
	uint64_t ri_vbegun; /**< verifications begun (ridx_sync()) */
	uint64_t ri_vok;    /**< ri_vbegun of the latest that ended verified */
	bool ri_doubt;      /**< at the last verification a peer replica's
			     *   heartbeat marked this server down: marks it
			     *   holds may not reach this one, so each client
			     *   request verifies first (ridx_stale()) */
	bool ri_lonely;     /**< no peer replica answered it: reads only */
	bool ri_tombs;      /**< may hold tombstones to collect */
	bool ri_gc_req;     /**< the first replica asked to collect ... */
	uint64_t ri_gc_req_dig; /**< ... if the digest is still this */
	uint64_t ri_gc_dig; /**< first replica: every replica's digest at */
	uint64_t ri_gc_ms;  /**< this time (0: not yet seen equal) */
	/* Behind marks (docs/cluster.md "Replicas that missed updates"). */
	bool ri_behind;     /**< this replica missed an acknowledged update */
	uint64_t ri_nterm;  /**< ... up to this version: it serves nothing */
	uint64_t ri_nseq;   /**<     of the index until it holds as much */
	uint64_t ri_bmask;  /**< servers whose replica missed an update this
			     *   one has ("rbeh:" record, durable) */
	uint64_t ri_bterm;  /**< the newest such update's version */
	uint64_t ri_bseq;
	/* Entity ops here (docs/cluster.md "Index CREATE and DELETE in
	 * flight"): a CREATE or DELETE is ahead of the replicas its client
	 * has not reached yet, for at most srv_ent_window_ms() (srv_idx_sync.c
	 * idx_ent_keep()).  Each op counts twice: when it starts (before its
	 * commit makes it visible) and when it is applied. */
	uint64_t ri_eops;   /**< CREATE/DELETE starts and applies this run */
	uint64_t ri_egen;   /**< ridx_gen() at the last of them */
	uint64_t ri_ems;    /**< srv_now_ms() at the last of them */
	uint64_t ri_dinc;   /**< incarnation the last DELETE here removed */
	uint64_t ri_kept_ms; /**< a catch-up kept an op's outcome until
			      *   then: verify again from then (0: none) */
	struct ridx *ri_next;
};

/* Stages of an object request timed under STRATA_SRV_PROFILE (srv.c):
 * the monotonic time each one ended, in ns. */
enum srv_stage {
	SRV_T_RECV,     /* handler thread has the decoded request */
	SRV_T_EXEC,     /* an executor thread picked it up */
	SRV_T_BUF,      /* data buffer ready */
	SRV_T_PULL,     /* write: the client's data is here (RMA read) */
	SRV_T_ENG,      /* eng_exec() returned: data written or read */
	SRV_T_DURABLE,  /* write: the group commit reported it durable */
	SRV_T_PUSH,     /* read: the data is in the client's buffer */
	SRV_T_REPLY,    /* the reply is sent */
	SRV_T_END
};

/** One request being served. */
struct srv_op {
	struct msg_req so_m;        /* first: &so_m.mr_req.er_ci is the item */
	struct srv *so_srv;
	struct rpc_sreq *so_req;
	struct srv_op *so_next;     /* syncer queue */
	struct ridx *so_ridx;       /* index requests */
	uint64_t so_vmark;          /* so_ridx->ri_vbegun when it came in */
	struct eng_citem so_seq_ci; /* second stage: the replica record */
	struct ridx_rec so_rec;     /* what so_seq_ci stores */
	bool so_rec_del;            /* so_seq_ci deletes the record */
	bool so_one;                /* its replica record and versions were
				     * applied with its records, in one
				     * commit (srv_ridx_one_apply()) */
	bool so_visible;            /* ... and that commit was made (its
				     * ci_executed): not undone on failure */
	uint64_t so_old_seq;        /* the index's seq before this update */
	uint64_t so_new_seq;
	uint64_t so_term;           /* the update's version: (so_term, */
	uint64_t so_vseq;           /*  so_vseq), stored per key */
	uint64_t so_fan_want;       /* servers this replica sends the copies
				     * of the update it orders (IdxReq.fan
				     * without itself; srv_idx_fan.c) */
	struct srv_fan *so_fan;     /* ... those in flight */
	uint64_t so_fanned;         /* ... those that applied it */
	bool so_rbuf;               /* so_m.mr_data is from rpc_buf_get() */
	bool so_rbuf_lost;          /* ... and an RMA of it was abandoned */
	struct srv_zc_xfer *so_zc;  /* zero-copy read in progress (srv_obj) */
	uint64_t so_t[SRV_T_END];   /* STRATA_SRV_PROFILE: stage times, ns */
	void *so_route_ref;         /* s_route's reference, put at the end */
	uint64_t so_t0_ns;          /* arrival (addb_now_ns) of an object,
				     * entity or index request: its metrics */
	uint64_t so_trace;          /* its ADDB trace id, 0: not traced */
};

/* Sums of stage times of object requests, by class (srv.c). */
#define SRV_PROF_CLASSES 8u  /* read/write x below/from 256 KiB x layout */
struct srv_prof {
	uint64_t sp_nr[SRV_PROF_CLASSES];
	uint64_t sp_ns[SRV_PROF_CLASSES][SRV_T_END];
};

struct srv {
	const struct clu_conf *s_conf;
	uint32_t s_self;
	const struct clu_server *s_me;
	struct eng *s_eng;
	struct rpc_ep *s_ep;
	struct peers *s_peers;
	uint64_t s_start_ms;
	bool s_model;       /* SRV_F_MODEL */
	uint32_t s_draining;
	uint32_t s_restart_asked;  /* srv_restart() called (atomic) */
	struct srv_counters s_cnt;
	const char *s_prof_path;  /* STRATA_SRV_PROFILE: append sums there */
	struct srv_prof s_prof;   /* atomics */
	/* index replicas */
	pthread_mutex_t s_rlock;
	struct ridx *s_ridx[SRV_RIDX_BUCKETS];
	/* syncer */
	pthread_t s_syncer;
	bool s_syncer_on;
	pthread_mutex_t s_qlock;
	pthread_cond_t s_qcond;
	struct srv_op *s_qhead;
	struct srv_op *s_qtail;
	uint32_t s_qnr;
	bool s_qstop;
	bool s_tomb_kick;   /* a collection was asked for (srv_idx_tomb.c) */
	uint64_t s_vepoch;  /* SRF_VERIFY requests seen (atomic) */
	/* per server: the map epoch of the latest request that failed its
	 * images for its loss (DevReq.server; srv_dev.c, under its lock):
	 * srv_dev_images_back() brings them back only from a newer map */
	uint64_t s_lost_epoch[CLU_SERVERS_MAX];
	/* heartbeat (under s_qlock) */
	pthread_t s_hb;
	struct peers *s_hbpeers;  /* the heartbeat's own endpoint */
	bool s_hb_on;
	int32_t s_hb_peer;        /* heartbeat call in flight to (-1: none), */
	uint64_t s_hb_since;      /* sent at (peers_clock_ms(); atomics) */
	pthread_cond_t s_hbcond;
	/* stall watch (srv_idx_syncer.c srv_tick_main(); atomics) */
	pthread_t s_tick;
	bool s_tick_on;
	uint64_t s_tick_ms;       /* srv_now_ms() of its latest note */
	uint64_t s_stalls;        /* stalls above SRV_LEASE_MS seen */
	/* what the caller assembled (srv_start(): a copy of its parts) */
	struct srv_parts s_parts;
	/* distributed transactions: the participant's state (dtm/srv_dtx.c,
	 * a module of s_parts) */
	struct srv_dtx *s_dtx;
	struct fdmi *s_fdmi; /* fdmi/srv_fdmi.c: consumers of s_eng's log */
	/* object requests' executor and remote device service (srv_rdev.c) */
	struct srv_exec *s_exec;
	/* SOP_LAYER requests on their threads (srv_layer.c; atomic) */
	uint32_t s_layer_threads;
	uint32_t s_isc_threads;   /* function calls running (srv_isc.c) */
	/* pmem2 devices registered for zero-copy transfers (srv_zc.c) */
	struct srv_zc *s_zc;
	/* the HA agent: map, epoch, membership (ha/srv_ha.c, a module of
	 * s_parts; NULL: none, or a cluster without etcd) */
	struct srv_ha *s_ha;
	/* Object routing (docs/cluster.md "Taking over a home"), set by a
	 * module before the endpoint serves (NULL: every object request is
	 * served by s_eng, as without HA).  s_route(arg, home, &eng, &ref)
	 * for an object request whose id is homed on server home
	 * (clu_home()): 0 with the engine to run it on (s_eng, or an engine
	 * this server opened to act for home) and a reference that
	 * s_route_put(arg, ref) drops when the request has ended (the
	 * engine stays open until then); or a negative code with a message
	 * (err_set): -EREMCHG when another server serves that home (the
	 * client reads the map again), -EBUSY while this one is opening
	 * it.  Called from RPC handler threads, concurrently. */
	/* statistics of the clients that ended (srv_cstats.c): sums, as in
	 * the store's system record "client_stats", under s_cs_lock */
	pthread_mutex_t s_cs_lock;
	pthread_cond_t s_cs_cond;    /* the saver's (CLOCK_MONOTONIC) */
	pthread_t s_cs_thr;
	struct msg_cstats *s_cs;
	bool s_cs_dirty;             /* changed since the last save */
	bool s_cs_stop;
	int (*s_route)(void *arg, uint32_t home, struct eng **eng,
		       void **ref);
	void (*s_route_put)(void *arg, void *ref);
	/* s_route_acting(arg, home): the server the map has serving home
	 * (home itself without a map; for a server's call to a home, e.g. a
	 * dtx participant's QUERY: dtm/srv_dtx.c).  NULL: home itself. */
	uint32_t (*s_route_acting)(void *arg, uint32_t home);
	/* s_route_each(arg, fn, farg): fn(farg, home, eng) on every engine
	 * this server opened to act for another home (not s_eng) and serves
	 * now, each held as s_route holds it during the call (its close or
	 * handback waits), and fn(farg, home, NULL) for each home it acts
	 * for whose engine does not serve now (opening, closing, frozen for
	 * a handback); stops at fn's first nonzero return, which it
	 * returns; 0 after all.  Walks and device requests reach the homes
	 * this server acts for through it (srv_rdev.c, srv_dev.c).
	 * s_route_going(arg, home): whether this server's engine for home
	 * is being closed or handed back (a walk on it stops between
	 * batches).  NULL: none. */
	int (*s_route_each)(void *arg, int (*fn)(void *farg, uint32_t home,
						 struct eng *e),
			    void *farg);
	bool (*s_route_going)(void *arg, uint32_t home);
	void *s_route_arg;
	/* replicated homes: senders and shadows (srv_repl.c; NULL when
	 * cluster.meta_replicas is 1) */
	struct srv_repl *s_repl;
};

uint64_t srv_now_ms(void);

/* Clients' statistics (srv_cstats.c): loaded once the store is open,
 * saved and freed before it closes; SOP_CLIENT_STATS's handler. */
int srv_cstats_open(struct srv *s);
void srv_cstats_close(struct srv *s);
void srv_cstats(struct srv *s, struct srv_op *so);
/** Register the calling RPC handler thread with the engine (once). */
void srv_thread_enter(void);

/* srv_units.c: a READ with ObjReq.units answered by the places of its
 * data units when all of them are whole, healthy and reachable: 1 (the
 * answer is sent), else 0 (read it the usual way). */
int srv_obj_units(struct srv *s, struct srv_op *so);

/* srv.c */
/** 0 when this server is the home of object id by its cluster file
 *  (home = clu_home()), else -EREMCHG naming the home: for a server that
 *  routes by the file alone (no map takes homes over). */
int srv_home_here(struct srv *s, uint32_t home, const struct st_id *id);
void srv_reply(struct srv_op *so, int rc, const Reply *rp, const char *msg);
void srv_reply_err(struct srv_op *so, int rc);
void srv_run_prepared(struct srv_op *so);
void srv_obj_read_reply(struct srv_op *so);
/** Note the end of stage st of so when profiling (STRATA_SRV_PROFILE). */
void srv_prof_mark(struct srv_op *so, enum srv_stage st);

/* srv_layer.c: SOP_LAYER, a composite's layers through a cluster client.
 * Runs so (decoded, routed: so_m.mr_req.er_eng) on a thread of its own
 * and answers it; -EBUSY past SRV_LAYER_THREADS requests at once. */
void srv_layer(struct srv *s, struct srv_op *so);

/* srv_dev.c: SOP_DEV, devices through a cluster client */
int srv_dev_register(struct srv *s);
/** Devices of this server's own (its store's first ones, before the
 *  images of the other servers' devices). */
uint32_t srv_dev_nr_own(struct srv *s);
/**
 * Device dev of server owner, which the map has back in service (owner
 * and device ONLINE): every image of it that this server's engines (its
 * own and those it acts for other homes with) failed or repaired only
 * because the owner was lost (EDF_HOME_LOST) is back ONLINE, to be
 * rebalanced -- what a replace with DevReq.server does, applied by each
 * server from the map (ha/srv_ha.c images_back_step()), so that no
 * request can be lost.  epoch is that map's: nothing is done when it is
 * older than a request that failed the owner's images for its loss
 * (s_lost_epoch: a map read before such a request, with the owner still
 * ONLINE in it -- a drain -- must not undo it; the gate admits a request
 * only at the receiver's own epoch, and a real loss comes with a map
 * that has the owner out of service, so a map of the same epoch with the
 * owner ONLINE means a late request).  Logged when an image
 * changes; nothing for the others.  Called by a thread of the HA agent
 * (images_back_main()), never the map's.
 */
void srv_dev_images_back(struct srv *s, uint32_t owner, uint32_t dev,
			 uint64_t epoch);

/* srv_zc.c: zero-copy transfers to and from pmem2 devices */
/** One object request's transfer hook (on the executor's stack while the
 *  engine runs it). */
struct srv_zc_xfer {
	struct nvram_xfer_hook zx_hook;
	struct srv_op *zx_so;
	uint64_t zx_bytes;                 /* moved straight to/from maps */
	bool zx_lost;                      /* a transfer was abandoned */
	uint32_t zx_nr;                    /* reads: ranges pushed, in order;
					    * writes: ranges to pull */
	uint64_t zx_off[SRV_ZC_RANGES], zx_len[SRV_ZC_RANGES];
	void *zx_dst[SRV_ZC_RANGES];       /* writes: where each goes */
	struct tier_dev *zx_dev[SRV_ZC_RANGES];
	bool zx_held;                      /* writes: the engine handed us
					    * the commit item (ci_hold) */
};
/** Register the local pmem2 devices (after the store and the endpoint
 *  opened; failures only log).  0 or -ENOMEM. */
int srv_zc_start(struct srv *s);
/** Drop the registrations (before the endpoint closes). */
void srv_zc_stop(struct srv *s);
/** d's registration, NULL when it has none. */
struct rpc_mem *srv_zc_mem(struct srv *s, const struct tier_dev *d);
/** Can so (an object read or write, attributes loaded) use the hook? */
bool srv_zc_obj_ok(struct srv *s, const struct srv_op *so);
/** Set x up for so, whose pool buffer is so_m.mr_data. */
void srv_zc_hook_init(struct srv_zc_xfer *x, struct srv_op *so);
/** After a zero-copy read: push what the hook did not (holes, other
 *  devices) from the buffer.  0 or the transfer's code. */
int srv_zc_push_rest(struct srv_zc_xfer *x);
/** The ci_hold of a zero-copy write's commit item: notes it held. */
void srv_zc_hold(struct eng_citem *ci);
/** After eng_exec() of a zero-copy write whose item is held: pull every
 *  recorded range straight into its device space and persist it.  0 or
 *  the first failure's code (later ranges not tried). */
int srv_zc_pull_held(struct srv_zc_xfer *x);
/** After a successful srv_zc_pull_held(): release the held item to the
 *  engine's commit (eng_commit_release: in this thread when it is alone,
 *  else queued), counted either way.  so may be freed on return. */
void srv_zc_commit(struct srv_zc_xfer *x);
/* srv_rdev.c */
/** Serve SOP_RDEV_* on s's endpoint. */
int srv_rdev_register(struct srv *s);
/** Start / stop the executor of object requests. */
int srv_exec_start(struct srv *s);
void srv_exec_stop(struct srv *s);
/** Wait until the SOP_WALK thread (if any) is done: it stops at its next
 *  batch once s_draining is set.  Before the endpoint closes. */
void srv_walk_stop(struct srv *s);
/** A walk's figures as a WalkStats answer (SOP_WALK, SOP_LAYER scrub). */
void srv_walk_stats_msg(WalkStats *ws, const struct stripe_walk_stats *st);
/**
 * Lend (true) or take back (false) this server's own slice of its own
 * devices: while lent, RDEV WRITEs naming this server as their home (the
 * server acting for its home, writing the home's units to their image
 * here) pass the write fence like any home's; otherwise they are refused
 * with -EREMCHG (the own engine writes that slice directly, past the
 * fence).  Taking it back waits for the writes admitted while lent to
 * reach the device.  While lent, SOP_WALK is refused with -EREMCHG (the
 * own engine's metadata of its home is stale: a repair or rebalance would
 * rewrite units from it; the HA job runner skips that server).  The HA agent
 * lends it while the map has another server acting for this server's
 * home (ha/srv_home.c).
 */
void srv_rdev_own_lend(struct srv *s, bool lend);
/** Run fn(s, so) on an executor thread (it must answer so). */
void srv_exec_defer(struct srv *s, struct srv_op *so,
		    void (*fn)(struct srv *s, struct srv_op *so));

/* srv_idx_ver.c: the table of replica records */
int srv_ridx_init(struct srv *s);
void srv_ridx_fini(struct srv *s);
/* srv_idx_syncer.c: the syncer, heartbeat and stall-watch threads */
int srv_syncer_start(struct srv *s);
void srv_syncer_stop(struct srv *s);
/* srv_idx.c: the index request handlers */
/** Index entity op (EntReq with SRF_INDEX). */
void srv_idx_ent(struct srv *s, struct srv_op *so);
/** Index record op. */
void srv_idx(struct srv *s, struct srv_op *so);
/** SOP_IDX_STATE. */
void srv_idx_state(struct srv *s, struct srv_op *so);
/** GET/NEXT done: answer with the records (paged by MSG_REPLY_BUDGET). */
void srv_idx_read_reply(struct srv_op *so);
/**
 * An update of so succeeded: compute the replica record to store (in
 * so->so_rec, so->so_new_seq) and set up so->so_seq_ci.  Returns true when
 * that second stage must run before the answer.  (srv_idx_ver.c)
 */
bool srv_ridx_after_update(struct srv *s, struct srv_op *so);
/**
 * A PUT or DEL this replica orders, or a copy of one (not internal, not a
 * dtx member), commits its records, its replica record and its version
 * entries in one transaction: its eng_citem ci_also, set by srv_idx_go().
 * The seq is taken (ordered here) or applied (a copy) as the commit
 * applies it (srv_ridx_after_update() once, kept if the batch is applied
 * again), so seqs follow the commit order, and no catch-up merge can fall
 * between the records and their versions.  A crash leaves all of it or
 * none: before this, an ordering replica killed between the two commits
 * kept the new records under their old versions, which no catch-up
 * corrects (its peers' digests matched), and reads differed from replica
 * to replica for good (tests/integ/ec_crash_test.sh).
 */
int srv_ridx_one_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci);
/** The end of such an update (durable, or failed: rc): the op-tag check
 *  and the answer, as after a second commit; a failed one whose commit
 *  was not made takes its seq back. */
void srv_ridx_one_done(struct srv_op *so, int rc);
/** ci_executed of such an update: its commit is made (visible); an
 *  update ordered here sends its copies now (srv_idx_fan_start()). */
void srv_ridx_one_executed(struct eng_citem *ci);

/* srv_idx_fan.c: the copies of an update sent by the replica that orders
 * it (docs/cluster.md "Copies sent by the ordering replica"). */
struct srv_fan;
/** Send the copies of so's update (ordered here, its commit made) to the
 *  servers of so_fan_want, all at once, without waiting (committer
 *  thread).  Best effort: a copy not sent is left to the client. */
void srv_idx_fan_start(struct srv_op *so);
/** At so's answer (seq: the replica's seq after it): true when copies
 *  are still in flight, so is then answered by the last one's end
 *  (srv_reply_attr(so, seq) again); false: so_fanned is set, answer now. */
bool srv_idx_fan_park(struct srv_op *so, uint64_t seq);
/** so is freed: its copies in flight end without it. */
void srv_idx_fan_detach(struct srv_op *so);
/** Answer with the request's attributes (entity ops, updates; srv.c). */
void srv_reply_attr(struct srv_op *so, uint64_t seq);

/* srv_idx.c, for srv_dtx.c: an index member of a dtx is ordered here. */
/** The replica record of id (loaded on first use), or NULL (-ENOMEM). */
struct ridx *srv_ridx_find(struct srv *s, const struct st_id *id);
/** May this server order updates of ri now (verified, fresh, not lonely)? */
bool srv_ridx_orderable(struct srv *s, struct ridx *ri);
/** An update of ri with version (term, seq), acknowledged here, did not
 *  reach the replicas of mask (bit j: server j): record them behind here,
 *  durably, and tell the replicas in told (that have it) to record it too
 *  (docs/cluster.md "Replicas that missed updates"; srv_idx_ver.c). */
void srv_ridx_missed(struct srv *s, struct ridx *ri, uint64_t mask,
		     uint64_t told, uint64_t term, uint64_t seq);
/** Before ordering here: the highest term ri knows must be this
 * server's own; if not, take the next one of its own, durably. */
int srv_ridx_claim(struct srv *s, struct ridx *ri);
/** Order an index member here: the next seq in the term of its own
 * srv_ridx_claim took (-ESTALE if another's came in); *rec the replica
 * record after. */
int srv_ridx_order(struct srv *s, struct ridx *ri, uint64_t inc,
		   struct ridx_rec *rec, uint64_t *term, uint64_t *seq);
/** Store the replica record rec and the version entries {term, seq} of
 * the applied PUT/DEL m in txn. */
int srv_ridx_store(struct eng *e, MDB_txn *txn, const struct msg_req *m,
		   const struct ridx_rec *rec, uint64_t term, uint64_t seq);
/* dtx members: an index CREATE (incarnation inc) or DELETE applied in the
 * COMMIT's txn stores (deletes) its replica record there; after it is
 * durable, srv_ridx_ent_done sets the in-memory state as a plain CREATE or
 * DELETE does. */
int srv_ridx_ent_store(struct eng *e, MDB_txn *txn,
		       const struct st_id *id, uint32_t kind, uint64_t inc);
void srv_ridx_ent_done(struct srv *s, struct ridx *ri, uint32_t kind,
		       uint64_t inc);
/* The incarnation clients hold of index ri (local record me). */
uint64_t srv_ridx_inc(struct srv *s, struct ridx *ri,
		      const struct meta_ent *me);
/* This server is one of the R replicas of index id. */
bool srv_ridx_mine(struct srv *s, const struct st_id *id);

/*
 * A request handler's entry and exit in the count srv_stop() waits on:
 * srv_enter() counts the request in flight, then looks at s_draining (both
 * sequentially consistent, as srv_stop()'s store and loads), so a request
 * either sees the stop (false: not counted, the caller answers
 * -ESHUTDOWN) or the stop sees it in flight and waits for it.
 */
/* Function shipping (srv_isc.c): SOP_ISC and SOP_ISC_UNITS handlers. */
int srv_isc_register(struct srv *s);
/* srv_idx.c: may this server's replica of index id answer a function
 * call (not behind)?  0, or -ESTALE with a message. */
int srv_idx_isc_check(struct srv *s, const struct st_id *id);

static inline bool srv_enter(struct srv *s)
{
	__atomic_add_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&s->s_draining, __ATOMIC_SEQ_CST))
		return true;
	__atomic_sub_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_SEQ_CST);
	return false;
}

/*
 * srv_enter() for the requests other servers send to finish theirs (a
 * home's write set to its standby, a unit's I/O on a device this server
 * lends): still admitted in the first phase of a stop (s_draining 1),
 * while this server's own requests drain, so that a whole cluster stopped
 * at once still finishes the writes in flight on each server; refused
 * from the second (s_draining 2, srv_stop()).
 */
static inline bool srv_enter_peer(struct srv *s)
{
	__atomic_add_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&s->s_draining, __ATOMIC_SEQ_CST) < 2)
		return true;
	__atomic_sub_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_SEQ_CST);
	return false;
}

static inline void srv_leave(struct srv *s)
{
	__atomic_sub_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_SEQ_CST);
}

#endif
