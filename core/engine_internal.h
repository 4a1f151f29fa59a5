/*
 * engine_internal.h — what the files of the engine proper share (engine.c,
 * store.c, space.c, commit.c, dev.c): the engine handle struct eng, its
 * on-disk records, and the helpers one of them defines for another.  Not a
 * contract for the engine's parts (obj.c, idx.c, ...): they see struct eng
 * only through engine.h's functions.
 */
#ifndef STRATA_CORE_ENGINE_INTERNAL_H
#define STRATA_CORE_ENGINE_INTERNAL_H

#include <pthread.h>

#include "core/engine.h"

/** sys/store: the store's identity. */
struct store_rec {
	uint64_t st_magic;
	uint32_t st_version;
	uint32_t st_nr_devs;
	uint8_t st_uuid[16];
	uint64_t st_ctime_ns;
};
_Static_assert(sizeof(struct store_rec) == 40, "store_rec on-disk size");

/** sys/dev.N: one device. */
struct dev_rec {
	uint32_t dr_tier;
	uint32_t dr_state; /**< enum eng_dev_state | flags << 16 */
	uint64_t dr_size;
	char dr_path[LIM_PATH_MAX + 1];
};
_Static_assert(sizeof(struct dev_rec) == 272, "dev_rec on-disk size");

/** Group-commit profile: totals since open, logged at close (LOG_INFO,
 *  STRATA_LOG=3), so a benchmark shows where a batch's time goes.  Times
 *  in microseconds, summed over batches; relaxed atomic adds. */
struct eng_gcprof {
	uint64_t gp_sbatches;   /* batches through the sync stage */
	uint64_t gp_sitems;     /* their items */
	uint64_t gp_gather_us;  /* cq_gather: waiting for more items */
	uint64_t gp_gend[3];    /* gathers ended: none coming, gap, window */
	uint64_t gp_dsync_us;   /* commit_sync_devices */
	uint64_t gp_direct;     /* batches committed by commit_direct */
	uint64_t gp_release_here; /* held items run here (eng_commit_release) */
	uint64_t gp_cbatches;   /* LMDB commits (commit_batch) */
	uint64_t gp_apply_us;   /* mdb_txn_begin + commit_apply */
	uint64_t gp_commit_us;  /* mdb_txn_commit */
	uint64_t gp_msync;      /* explicit meta syncs (mdb_env_sync) */
	uint64_t gp_msync_us;
	uint64_t gp_swait;      /* committer waits with a commit unstable */
	uint64_t gp_swait_us;
	uint64_t gp_swait_hit;  /* of which a batch came */
	uint64_t gp_cb_us;      /* EXECUTED and STABLE reports (callbacks) */
	uint64_t gp_ret;        /* batches whose first item came back within
				 * ENG_GATHER_MAX_US of a report (a loop) */
	uint64_t gp_ret_us;     /* their time from that report to the first
				 * item reaching the syncer */
};

/** A queue of commit items between two stages of the group commit. */
struct eng_cqueue {
	pthread_mutex_t cq_lock;
	pthread_cond_t cq_cond;
	struct eng_citem *cq_head;
	struct eng_citem *cq_tail;
	bool cq_stop;
	bool cq_gathering; /* the syncer is in cq_gather() */
	struct eng_citem *cq_ride; /* riders (eng_commit_ride()): the syncq's */
};

struct eng {
	char e_dir[LIM_PATH_MAX + 1];
	int e_lockfd;
	struct meta e_meta;
	struct store_rec e_store;
	uint32_t e_nr_devs;
	struct eng_dev e_devs[LIM_DEV_MAX];
	uint32_t e_dev_tier[LIM_DEV_MAX];
	struct layout_pool e_pool;
	/* group commit: syncer (device data) then committer (LMDB) */
	struct eng_cqueue e_syncq;
	struct eng_cqueue e_commitq;
	pthread_t e_syncer;
	pthread_t e_committer;
	bool e_crunning;
	struct eng_citem *e_unstable; /* committed, meta page not yet synced */
	uint64_t e_unstable_seq;      /* its write set's seq (0: none) */
	/* replication wait stage (commit.c, "commit_durable"): durable
	 * batches whose write sets the standbys have yet to acknowledge, in
	 * seq order, reported STABLE by the waiter thread once they did */
	pthread_t e_rwaiter;
	bool e_rwrunning;
	pthread_mutex_t e_rwlock;
	pthread_cond_t e_rwcond;
	struct eng_rwait *e_rwhead, *e_rwtail;
	bool e_rwstop;
	bool e_unstable_any;          /* e_unstable != NULL (atomic copy) */
	uint32_t e_inexec;  /* updates in eng_exec() not yet queued (atomic) */
	uint32_t e_coming;  /* updates queued for eng_exec() (atomic) */
	/* updates reported done (commit_finish) whose threads have not yet
	 * started another (eng_exec), and when the last report was (mono_us;
	 * both atomic): gc_returning() */
	uint32_t e_rep_n;
	uint64_t e_rep_us;
	uint64_t e_exec_ns; /* moving average of an update's eng_exec() */
	bool e_sbusy;       /* the syncer holds a batch (atomic) */
	/* held while a batch goes through the sync stage (syncer, or the
	 * submitting thread of a lone update: eng_commit_submit_here) */
	pthread_mutex_t e_slock;
	/* held while a batch is committed or made durable (committer, or the
	 * syncer for a lone batch: commit_direct); guards e_unstable */
	pthread_mutex_t e_cmlock;
	struct tier_io e_syncio[LIM_DEV_MAX]; /* syncer: one sync per device */
	uint32_t e_syncdev[LIM_DEV_MAX];      /* device of e_syncio[i] */
	void (*e_chook)(void *, uint64_t, uint32_t);
	void *e_chook_arg;
	struct eng_gcprof e_gp;
	/* reclaimer: releases unmapped space after an RCU grace period */
	pthread_t e_reclaimer;
	pthread_mutex_t e_rlock;
	pthread_cond_t e_rcond;
	struct eng_deferred *e_rhead;
	/* fenced: space of abandoned writes, released at df_at (e_rlock) */
	struct eng_deferred *e_fhead;
	uint64_t e_fenced_bytes;
	bool e_rstop;
	bool e_rrunning;
	/* deferrals queued (e_rq_gen) and released (e_rd_gen), for
	 * eng_reclaim_drain(); e_rdone signals a finished round */
	uint64_t e_rq_gen, e_rd_gen;
	pthread_cond_t e_rdone;
	/* configuration: pools and default layouts (sys/conf, YAML) */
	struct conf e_conf;
	bool e_conf_loaded;
	uint32_t e_nr_pools;
	struct eng_pool *e_pools;
	/* unit layouts: the table of eng_conf.ec_layout_ops (NULL: none) */
	const struct eng_layout_ops *e_lops;
	pthread_mutex_t e_codec_lock;
	struct ec_codec *e_codecs[ST_LAYOUT_UNITS_MAX + 1]
				 [ST_LAYOUT_UNITS_MAX + 1];
	pthread_mutex_t e_glock;
	pthread_cond_t e_gcond;
	uint8_t e_gbusy[LIM_GLOCK_SLOTS];
	struct eng_cgen e_cgen; /* move generations (core/comp.c) */
	struct eng_ucounters e_uc;
	pthread_mutex_t e_dev_lock; /* device state changes and replace */
	bool e_model; /* device model on for every tier */
	/* the LMDB environment is on NVRAM (DATA_DIR/meta a link to it,
	 * meta_nv_make): every commit syncs its meta page (META_SYNC_META) and
	 * is durable at once, so STABLE comes with EXECUTED (commit_batch) */
	bool e_meta_nv;
	/* cluster stores: failure domain of each device (conf cd_domain) */
	uint32_t e_dev_domain[LIM_DEV_MAX];
	uint64_t e_serial; /* eng_serial() */
	/* eng_conf.ec_dev_path, ec_dev_path_arg (NULL: none) */
	int (*e_dev_path)(void *, uint32_t, const char *, char *, size_t);
	void *e_dev_path_arg;
	/* FDMI log (fdmi_log.c): emission on (atomic); the next record's
	 * sequence number - 1 and byte offset, read from the log at the
	 * first emission after open, then kept by the thread holding the
	 * write transaction */
	bool e_fdmi_on;
	bool e_fdmi_pos_known;
	uint64_t e_fdmi_seq, e_fdmi_off;
	/* reads noted since the last flush (fdmi_log.c, FDMI_OBJ_READ):
	 * an open-addressed table of FDMI_HEAT_SLOTS, made at the first */
	pthread_mutex_t e_heat_lock;
	struct fdmi_heat *e_heat;
	uint32_t e_heat_nr;
	uint64_t e_heat_dropped;
};

/* A batch waiting for its write set's acknowledgement (commit.c). */
struct eng_rwait {
	struct eng_rwait *rw_next;
	struct eng_citem *rw_batch;
	uint64_t rw_seq;
};

/** Space to release after a grace period (see the reclaimer). */
struct eng_deferred {
	struct eng_deferred *df_next;
	struct eng_spacevec df_sv;
	uint64_t df_at;    /* fenced: not before this time (0: after RCU) */
	uint64_t df_bytes; /* fenced: the bytes of df_sv */
};

/* space.c */

/* The reclaimer thread (started by eng_store_start()). */
void *eng_reclaimer_main(void *arg);
/* Release sv once no reader can still see a map pointing into it (after
 * an RCU grace period).  sv is taken over (emptied). */
void eng_space_release_deferred(struct eng *e, struct eng_spacevec *sv);

/* commit.c */

void eng_cq_init(struct eng_cqueue *q);
void eng_cq_fini(struct eng_cqueue *q);
/* Stop a queue: its thread drains it and exits. */
void eng_cq_stop(struct eng_cqueue *q);
/* The two commit stages' threads (started by eng_store_start()). */
void *eng_syncer_main(void *arg);
void *eng_committer_main(void *arg);
/* The replication wait stage's thread (started by eng_store_start(),
 * stopped by eng_rwaiter_stop() after the committer ended). */
void *eng_rwaiter_main(void *arg);
void eng_rwaiter_stop(struct eng *e);

/* dev.c */

/* Turn the device model of device i on or off from the configuration. */
void eng_dev_model_apply(struct eng *e, uint32_t i);
/* Is path a remote device's record ("remote:SERVER:INDEX")? */
bool eng_dev_path_remote(const char *path);
/* The form of path to record for a device of e (relative to the data
 * directory when inside it). */
void eng_dev_path_store(const struct eng *e, const char *path, char *out,
			size_t len);
/* The path to open for a device recorded as rec (old records too: dev.c). */
void eng_dev_path_open(const struct eng *e, const char *rec, char *out,
		       size_t len);

/* store.c */

/* Make or open the store of c in e and start the engine's threads
 * (eng_open()). */
int eng_store_start(struct eng *e, const struct eng_conf *c);

#endif
