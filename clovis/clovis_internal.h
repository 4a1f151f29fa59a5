/*
 * clovis_internal.h — private structures of the Clovis client shared by
 * clovis.c (instance, entities, validation), op.c (op state machine and
 * worker threads) and stats.c (latency histograms).
 */
#ifndef STRATA_CLOVIS_INTERNAL_H
#define STRATA_CLOVIS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "clovis/clovis.h"
#include "clovis/clovis_limits.h"
#include "core/engine.h"
#include "fdmi/fdmi.h"

/*
 * The boundary with the engine (issue 27 point 1): core/ and dtm/ take the
 * ground floor's st_ twins (core/types.h) of the public structs of
 * clovis.h.  Each pair has the same layout (clovis/clovis.c checks sizeof
 * and every offsetof with _Static_assert), so clovis/ hands a pointer to
 * one over as a pointer to the other: st_of(p) gives the engine's view of
 * a clovis_ pointer, clovis_of(p) the API's view of an st_ pointer (const
 * kept either way).
 */
#define ST_OF_(cl, st)                                                      \
	struct cl *: (struct st *)(void *)(p_),                             \
	const struct cl *: (const struct st *)(const void *)(p_)
#define st_of(p)                                                            \
	({                                                                  \
		__auto_type p_ = (p);                                       \
		_Generic(p_, ST_OF_(clovis_id, st_id),                      \
			 ST_OF_(clovis_bufvec, st_bufvec),                  \
			 ST_OF_(clovis_extvec, st_extvec),                  \
			 ST_OF_(clovis_dtx_id, st_dtx_id),                  \
			 ST_OF_(clovis_obj_attr, st_obj_attr),              \
			 ST_OF_(clovis_dev_info, st_dev_info),              \
			 ST_OF_(clovis_layer_info, st_layer_info),          \
			 ST_OF_(clovis_layer_ext, st_layer_ext));           \
	})
#define clovis_of(p)                                                        \
	({                                                                  \
		__auto_type p_ = (p);                                       \
		_Generic(p_, ST_OF_(st_id, clovis_id),                      \
			 ST_OF_(st_bufvec, clovis_bufvec),                  \
			 ST_OF_(st_extvec, clovis_extvec),                  \
			 ST_OF_(st_dtx_id, clovis_dtx_id),                  \
			 ST_OF_(st_obj_attr, clovis_obj_attr),              \
			 ST_OF_(st_dev_info, clovis_dev_info),              \
			 ST_OF_(st_layer_info, clovis_layer_info),          \
			 ST_OF_(st_layer_ext, clovis_layer_ext));           \
	})

#define CLOVIS_ENT_MAGIC 0x434c454eu /* "CLEN" */
#define CLOVIS_OP_MAGIC 0x434c4f50u  /* "CLOP" */

/* Latency histogram: 16 exact buckets for 0..15 us, then 8 per power of
 * two up to 2^40 us; percentiles are exact to within 1/8 of their value. */
#define STATS_BUCKETS 312u

struct stats_hist {
	uint64_t sh_count;  /* not updated: the count is the buckets' sum (one
			     * atomic less per op); kept for the saved layout */
	uint64_t sh_failed;
	uint64_t sh_bytes;
	uint64_t sh_sum_us;
	uint64_t sh_max_us;
	uint64_t sh_b[STATS_BUCKETS];
};

struct stats {
	uint32_t st_version;
	uint32_t st_pad;
	struct stats_hist st_h[CLOVIS_STAT_NR];
};

/* Counters are recorded into shards, one per thread up to STATS_SHARDS
 * threads (clovis_limits.h; then shared), each allocated at its first use,
 * so that threads do not write the same cache lines; the base (struct
 * stats, loaded and saved with the store) takes what a shard could not (no
 * memory) and the shards when they are folded (stats_fold).  A report sums
 * them all. */
struct stats_set {
	struct stats ss_base;
	struct stats_hist *ss_shard[STATS_SHARDS]; /* CLOVIS_STAT_NR each */
};

void stats_record(struct stats_set *s, uint32_t cls, uint64_t lat_us,
		  uint64_t bytes, bool failed);
void stats_report(const struct stats_set *s, struct clovis_stat *out);
/* Add the shards into the base and zero them (no recording meanwhile). */
void stats_fold(struct stats_set *s);
/* Zero the base and the shards. */
void stats_zero(struct stats_set *s);
/* Free the shards (clovis_fini). */
void stats_fini(struct stats_set *s);
/* The base and every shard of class cls summed into *out. */
void stats_total(const struct stats_set *s, uint32_t cls,
		 struct stats_hist *out);

struct op_tcache;

struct clovis {
	struct eng *cl_eng;      /* embedded mode: the engine (else NULL) */
	/* Executes one request: eng_exec() contract (0 or negative for reads
	 * and early failures, ENG_PENDING then er_ci callbacks for updates).
	 * Embedded: exec_embedded (op.c); cluster mode sets its own. */
	int (*cl_exec)(struct clovis *cl, struct eng_req *r);
	void *cl_backend;        /* the cluster client (cluster mode) */
	/* embedded: the native shipped functions this client may load
	 * (cc_isc_native split; NULL-terminated, or NULL: none) */
	char **cl_isc_native;
	struct clovis_realm cl_default;
	/* worker pool */
	uint32_t cl_nr_workers;
	pthread_t *cl_workers;
	pthread_mutex_t cl_qlock;
	pthread_cond_t cl_qcond;
	struct clovis_op *cl_qhead;
	struct clovis_op *cl_qtail;
	bool cl_stop;
	/* Every allocated op, live or cached (op_alink), which owns their
	 * memory: clovis_fini() frees each of them once; and the count of
	 * ops launched to the workers.  Under cl_olock. */
	pthread_mutex_t cl_olock;
	pthread_cond_t cl_oidle;
	struct clovis_op *cl_all;
	uint64_t cl_inflight;
	/* freed ops kept for reuse (op.c: op_alloc, clovis_op_free): per
	 * thread (op.c, struct op_tcache, registered here) and here, at most
	 * OP_CACHE_MAX (unbounded once cl_closing), linked by op_cnext, under
	 * cl_olock */
	struct clovis_op *cl_ofree;
	uint32_t cl_nr_ofree;
	struct op_tcache *cl_tcaches;
	bool cl_closing;         /* clovis_fini() is freeing the ops */
	struct stats_set cl_stats;
	/* FDMI (clovis/fdmi.c): the consumers of the embedded engine's log,
	 * and what this instance already gave each consumer it read, per
	 * server (under cl_fdmi_lock) */
	struct fdmi *cl_fdmi;
	pthread_mutex_t cl_fdmi_lock;
	struct fdmi_pos *cl_fdmi_pos;
};

/* clovis/fdmi.c: forget the read positions (clovis_fini). */
void fdmi_pos_free(struct clovis *cl);
/* The last record this instance gave consumer name from server (0: none),
 * and moving it on. */
uint64_t clovis_fdmi_pos_last(struct clovis *cl, const char *name,
			      const char *server);
void clovis_fdmi_pos_set(struct clovis *cl, const char *name,
			 const char *server, uint64_t last);

/* Bytes of records one store gives one clovis_fdmi_next() (about). */
#define CLOVIS_FDMI_BATCH_BYTES (4u << 20)

/* A batch of clovis_fdmi_next(): one part per store read. */
struct clovis_fdmi_bpart {
	char bp_server[CLOVIS_FDMI_SERVER_LEN];
	struct fdmi_batch bp_fb;
};
struct clovis_fdmi_batch {
	struct clovis_fdmi_bpart *b_part;
	uint32_t b_nr, b_cap;
};
struct clovis_fdmi_batch *clovis_fdmi_batch_new(uint32_t parts);
void clovis_fdmi_sub_from(struct clovis_fdmi_sub *o,
			  const struct fdmi_sub_info *i, const char *server);

/* Cluster mode (clovis/cli_fdmi.c): the same calls on every server. */
int cluster_fdmi_sub(struct clovis *cl, const char *name, const char *filter,
		     uint64_t max_bytes, uint64_t max_age_ms, uint32_t flags);
int cluster_fdmi_unsub(struct clovis *cl, const char *name);
int cluster_fdmi_list(struct clovis *cl, struct clovis_fdmi_sub *out,
		      uint32_t max, uint32_t *nr);
int cluster_fdmi_next(struct clovis *cl, const char *name, uint32_t max,
		      struct clovis_fdmi_batch **out);
int cluster_fdmi_ack(struct clovis *cl, const char *name,
		     const struct clovis_fdmi_batch *b);
int cluster_fdmi_reset(struct clovis *cl, const char *name);

struct clovis_op {
	struct eng_req op_req; /* first: the engine hands back &op_req.er_ci */
	uint32_t op_magic;
	uint32_t op_state;     /* enum clovis_op_state */
	int op_rc;
	bool op_busy;          /* the library still touches the op */
	uint32_t op_stat;      /* enum clovis_stat_op */
	struct clovis *op_cl;
	struct clovis_entity *op_entity;
	struct clovis_op_cbs op_cbs;
	void *op_datum;
	uint64_t op_launch_ns;
	uint64_t op_trace;     /* ADDB trace id (addb_trace_op()), 0: none */
	struct clovis_op *op_qnext;  /* work queue */
	/* run inline (op_run_inline) and finished: set (release) after its
	 * last touch of op_lock, so wait, state, rc and free read the
	 * outcome without the lock */
	bool op_inline_done;
	/* threads in clovis_op_wait() and the union of the states they wait
	 * for (op_lock): EXECUTED wakes them only when one waits for it */
	uint32_t op_nwait;
	uint32_t op_wmask;
	/* distributed transactions (dtx.c): the dtx this op belongs to (a
	 * member, or its commit op), and what a worker runs instead of
	 * cl_exec for it (NULL: cl_exec) */
	struct clovis_dtx *op_dtx;
	int (*op_run)(struct clovis_op *op);
	bool op_here;                /* CLOVIS_OF_HERE (op.c op_runs_here) */
	void *op_actx;               /* cli_cluster.c: an object op's started
				      * call's end, for the worker that
				      * finishes it (clu_obj_redo) */
	/* Kept initialised while the op sits in a cache of freed ops:
	 * everything above is zeroed on reuse (op_alloc), these are not. */
	pthread_mutex_t op_lock;
	pthread_cond_t op_cond;
	/* Not zeroed on reuse (256 bytes): op_alloc clears its first byte,
	 * and only a failure writes it. */
	char op_msg[LIM_ERRMSG_LEN];
	/* Never poisoned while cached (op.c): */
	struct clovis_op *op_cnext;  /* a cache's list */
	struct clovis_op *op_aprev;  /* cl_all, under cl_olock */
	struct clovis_op *op_anext;
	bool op_cached;              /* in a cache, not live */
};

/* op.c */
int op_alloc(struct clovis_entity *e, uint32_t kind, uint32_t stat,
	     struct clovis_op **out);
int workers_start(struct clovis *cl, uint32_t nr);
void workers_stop(struct clovis *cl);
void ops_drain_and_free(struct clovis *cl); /* also empties the op cache */
uint32_t op_tcaches_count(struct clovis *cl); /* threads' caches (tests) */
uint64_t op_now_ns(void);
int exec_embedded(struct clovis *cl, struct eng_req *r);
/* The end of a launched op run off the workers (clu_obj_start): rc 0 or
 * negative with its message; on any thread, e.g. the RPC progress one
 * (ops without callbacks only: nothing here blocks). */
void op_finish(struct clovis_op *op, int rc, const char *msg);
/* Hand a launched, counted op to a worker, which runs run(op) (as
 * op_run); from any thread. */
void op_requeue(struct clovis_op *op, int (*run)(struct clovis_op *op));

/* An op of an embedded instance launched without callbacks: nothing tells
 * its caller which thread runs it, so it may run in the launching one
 * (op.c op_runs_inline, op_runs_here; dtx.c dtx_op_runs_here). */
static inline bool op_embedded_nocb(const struct clovis_op *op)
{
	return op->op_cl->cl_eng != NULL && op->op_cbs.oc_executed == NULL &&
	       op->op_cbs.oc_stable == NULL && op->op_cbs.oc_failed == NULL;
}

/* dtx.c: an op of a dtx is being freed (member or commit op). */
void dtx_op_free(struct clovis_op *op);
/* Embedded mode, op without callbacks: a dtx's commit op, or a member
 * index PUT/DEL (its run only holds its commit item): may run in the
 * launching thread (clovis_op_launch(), op.c "op_runs_here"). */
bool dtx_op_runs_here(const struct clovis_op *op);
/* A member of a dtx whose commit op was launched: that commit launches
 * it (or fails it), so clovis_op_wait() on it in INIT ends. */
bool dtx_member_launch_due(const struct clovis_op *op);
/* Ops this thread ran in op_run_here() (launched and run in the launching
 * thread, not queued to a worker): for tests. */
extern __thread uint64_t op_here_runs;

/* clovis.c: an index handle on a reserved id of the default container
 * (the function registry, isc.c); no check of the id. */
int idx_init_sys(struct clovis_idx *i, struct clovis *cl,
		 const struct clovis_id *id);
/* isc.c: cc_isc_native split at ':' into a NULL-terminated list (*out
 * NULL when s is NULL or empty); each path must be absolute. */
int isc_native_list(const char *s, char ***out);
void isc_native_list_free(char **l);

/* cli_cluster.c: the cluster-mode backend (cl_backend, cl_exec). */
int cluster_open(struct clovis *cl, const struct clovis_conf *conf,
		 const char *file);
void cluster_close(struct clovis *cl);
int exec_cluster(struct clovis *cl, struct eng_req *r);
/** Start op (a launched, counted object READ or WRITE without callbacks)
 *  as a call to its home from this thread; it ends on the RPC progress
 *  thread (op_finish) or is handed to a worker there (op_requeue).  0:
 *  started; -EAGAIN: nothing sent, run it the blocking way. */
int clu_obj_start(struct clovis_op *op);
/** Object ops started by clu_obj_start() and, of them, handed to a
 *  worker at their end (tests, docs/cluster.md). */
/* clovis/cli_units.c: the data units of READ r read from the servers
 * Reply rp places them on (ObjReq.units), into r's buffers, each one's
 * crc64 checked.  0, or a negative code with a message (a unit call
 * failed, a crc64 differs, places that do not cover the read): the
 * caller then reads through the home.  Not on the RPC progress thread. */
struct peers;
struct clu_conf;
struct Reply;
int clu_units_read(struct peers *p, const struct clu_conf *conf,
		   const struct eng_req *r, const struct Reply *rp);
/* READs a client answered from unit places, and those it read again
 * through the home (the places failed) (test and bench figures). */
void clu_unit_counts(struct clovis *cl, uint64_t *direct,
		     uint64_t *again);
/* Unit reads on or off for the READs launched from now on (the bench's
 * figure through the home; STRATA_UNIT_READS=0 sets off at init). */
void clu_units_set(struct clovis *cl, bool on);
/* Index updates' copies sent by the ordering replica (IdxReq.fan) on or
 * off from now on (STRATA_IDX_FAN=0 sets off at init), and the copies
 * it sent and those this client sent itself (tests, bench). */
void clu_idx_fan_set(struct clovis *cl, bool on);
void clu_idx_fan_counts(struct clovis *cl, uint64_t *by_server,
			uint64_t *by_client);
void clu_async_counts(struct clovis *cl, uint64_t *started,
		      uint64_t *redone);
int cluster_entity_list(struct clovis *cl, struct clovis_realm *r,
			uint32_t type, const struct st_id *after,
			struct st_id *ids, uint32_t *nr);
/* cluster_entity_list(), but a server that does not answer fails it
 * (a container's function call must list every member: clovis/isc.c). */
int cluster_entity_list_all(struct clovis *cl, struct clovis_realm *r,
			    uint32_t type, const struct st_id *after,
			    struct st_id *ids, uint32_t *nr);
int cluster_dev_list(struct clovis *cl, struct st_dev_info *info,
		     uint32_t *nr);
int cluster_pool_list(struct clovis *cl, struct clovis_pool_info *info,
		      uint32_t *nr);
/** Fill *si for server s (zeroed first; si_up 0 when it does not answer). */
void cluster_status(struct clovis *cl, uint32_t s,
		    struct clovis_server_info *si);
uint32_t cluster_nr_servers(struct clovis *cl);
/* The HA opcode (HaReq kind, from, limit, text) on the first server that
 * answers: 0 with *out (Reply.text, malloc'd, NUL-terminated; NULL when
 * empty) or an error. */
int cluster_ha(struct clovis *cl, uint32_t kind, uint64_t from,
	       uint32_t limit, const char *text, char **out);
/* The same on server name alone (-ENOENT: no such server). */
int cluster_ha_on(struct clovis *cl, const char *name, uint32_t kind,
		  char **out);
/* SOP_METRICS of server name: its process's metrics as text (malloc'd,
 * NUL-terminated) in *out (-ENOENT: no such server). */
/* Clients' statistics (SOP_CLIENT_STATS): push this instance's at its
 * end (clovis_fini), read every server's sums (clovis_stats_clients). */
void cluster_stats_push(struct clovis *cl);
int cluster_stats_clients(struct clovis *cl,
			  struct clovis_stat out[CLOVIS_STAT_NR],
			  struct clovis_stats_clients *info);
int cluster_metrics(struct clovis *cl, const char *name, uint32_t min_prio,
		    bool json, char **out, size_t *len);
/* The same with MetricsReq.records: the server's trace records. */
int cluster_records(struct clovis *cl, const char *name, uint32_t max,
		    char **out, size_t *len);
/** Repair, rebalance or scrub (kind SWK_*) on every server at once
 *  (SOP_WALK), figures summed into *st (elapsed: the longest).  A server
 *  that fails or cannot be reached fails the call with its code and a
 *  message naming it, after the others finished; -EIO when units could not
 *  be rebuilt. */
int cluster_walk(struct clovis *cl, uint32_t kind, const char *what,
		 struct clovis_walk_stats *st);
/* Devices through a cluster client (clovis/cli_cluster.c "devices"):
 * device dev of server owner (its index in the owner's store). */
int cluster_dev_fail(struct clovis *cl, uint32_t owner, uint32_t dev);
int cluster_dev_replace(struct clovis *cl, uint32_t owner, uint32_t dev,
			const char *path);
/* The owner and index of device gdev of clovis_dev_list()'s numbering. */
int cluster_dev_locate(struct clovis *cl, uint32_t gdev, uint32_t *owner,
		       uint32_t *dev);
/* The index of the server called name, or -ENOENT naming it. */
int cluster_server_find(struct clovis *cl, const char *name, uint32_t *s);
/* A composite's layers through a cluster client (clovis/cli_cluster.c
 * "layers"; core/server/srv_layer.c): object id of incarnation inc (the
 * handle's creation time), on the server serving its home, with the
 * contracts of clovis_obj_layer_add(), _drop(), _list(), _move() and
 * _of(); arguments checked by the caller (clovis.c). */
int cluster_layer_add(struct clovis *cl, const struct st_id *id, uint64_t inc,
		      const struct meta_ent *sub, uint32_t priority,
		      uint32_t *layer);
int cluster_layer_drop(struct clovis *cl, const struct st_id *id,
		       uint64_t inc, uint32_t layer);
int cluster_layer_list(struct clovis *cl, const struct st_id *id,
		       uint64_t inc, struct st_layer_info *out, uint32_t *nr);
int cluster_layer_move(struct clovis *cl, const struct st_id *id,
		       uint64_t inc, uint64_t start, uint64_t nr, uint32_t to,
		       uint64_t *moved);
int cluster_layer_of(struct clovis *cl, const struct st_id *id, uint64_t inc,
		     uint64_t blk, uint32_t *layer);
/* A shipped call on one object (obj) or index through its home or
 * replicas (clovis/isc.c): 0 and *out (free with isc_reply__free_unpacked),
 * or a negative code with the server's message. */
struct IscReq;
struct IscReply;
int cluster_isc_call(struct clovis *cl, bool obj, const struct st_id *id,
		     const struct IscReq *q, struct IscReply **out);
int cluster_obj_scrub(struct clovis *cl, const struct st_id *id,
		      uint64_t inc, struct clovis_walk_stats *st);
int cluster_layer_map(struct clovis *cl, const struct st_id *id,
		      uint64_t inc, uint64_t start, uint64_t nr,
		      struct st_layer_ext *out, uint32_t *n_out,
		      uint64_t *next);

/* cli_cluster.c, for dtx.c (cluster mode): a member's engine request encoded
 * as it would be sent alone (ObjReq / IdxReq body, records inline; object
 * data apart) and the servers that apply it, *nsrv of them in server[]
 * (room for CLU_REPLICAS_MAX): object home, index first live replica; an
 * index CREATE or DELETE goes to every live replica as the replica copy
 * (SRF_REPLICA) with the incarnation in r->er_ent.me_ctime_ns; a call with a timeout (and an OUT bulk when bulk_len > 0);
 * an index GET that makes a replica
 * verify the index; the cluster's call timeout; a server's name. */
int cluster_dtx_member(struct clovis *cl, const struct eng_req *r,
		       uint32_t *server, uint32_t *nsrv, uint32_t *sop,
		       uint8_t **body, size_t *len);
/* A CREATE member of a committed dtx: its attributes (incarnation,
 * placement) as the object's home made them, into r->er_ent (an OPEN). */
int cluster_dtx_created(struct clovis *cl, struct eng_req *r);
/* A dtx request (its body names home + 1, DtxReq.home: participants are
 * homes) to the server the client's map has serving home; sent once more
 * when that server refused it for the home (-EREMCHG: nothing ran) or
 * could not be reached and the map, read again, names another. */
int cluster_dtx_call(struct clovis *cl, uint32_t home, uint32_t op,
		     const void *body, size_t len, const void *bulk,
		     size_t bulk_len, uint32_t ms, void **rbody, size_t *rlen);
void cluster_idx_touch(struct clovis *cl, uint32_t server,
		       const struct eng_req *r);
uint32_t cluster_call_ms(struct clovis *cl);
const char *cluster_server_name(struct clovis *cl, uint32_t s);
/* One call of opcode op with body pb to server s (no bulk): 0 and *rp
 * (the caller's: reply__free_unpacked()), or the server's or transport's
 * code with the message. */
struct ProtobufCMessage;
struct Reply;
int cluster_call_server(struct clovis *cl, uint32_t s, uint32_t op,
			const struct ProtobufCMessage *pb, struct Reply **rp);

/* dtx.c: benchmarks only — the coordinator stops after all votes, as a
 * client dying there would (no DECIDE; the commit op fails -ETIMEDOUT). */
extern bool dtx_abandon_after_prepare;

#endif
