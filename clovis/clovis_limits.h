/*
 * clovis_limits.h — the hard limits of the Clovis library's internals,
 * each with its reason.
 *
 * The public limits (key, value and vector sizes, block and unit shifts,
 * layout width, ops of a dtx) are part of the API contract and stay in
 * clovis/clovis.h.  These bound what the library keeps for itself (op
 * caches, statistics shards) and how the cluster client splits, retries
 * and waits on calls (clovis/cli_cluster.c).
 */
#ifndef STRATA_CLOVIS_LIMITS_H
#define STRATA_CLOVIS_LIMITS_H

/* ------------------------------------------------ op caches (op.c) */

/* Freed ops kept for reuse by the instance (cl_ofree), and by each
 * thread without a lock (struct op_tcache): allocating and initialising
 * an op costs about as much as an index GET, and a few dozen cover the
 * ops one thread or a whole instance keeps in flight in a loop; beyond
 * them an op is destroyed, so memory does not follow a past peak. */
#define OP_CACHE_MAX 64u
#define OP_TCACHE_MAX 32u
/* Instances whose ops one thread caches at once: programs open one or
 * two; a thread using more puts their ops in the instance's cache, under
 * its lock. */
#define OP_TLS_INSTANCES 4u

/* ------------------------------------------- statistics (stats.c) */

/* Threads that record their op counters into shards of their own
 * (clovis_internal.h, struct stats_set), so that they do not write the
 * same cache lines; later threads share one.  16 covers the worker
 * threads of a default store (LIM_WORKERS_DEFAULT) and a few callers. */
#define STATS_SHARDS 16u

/* ----------------------------------------- cluster client (cli_cluster.c) */

/* Buffers of an object op started without a worker (the RPC layer's
 * limit per call; an op with more goes the blocking way, clu_obj(),
 * which coalesces them: clu_bulk_init()). */
#define CLU_ASYNC_IOV 16u

/* Sends of an object op on blocks after its home answered a transport
 * code (clu_obj()): once, because the home then places around the server
 * that failed; a second failure is the op's. */
#define CLU_OBJ_RETRIES 1u

/* An object op whose home answers -EBUSY after the transport's own short
 * tries (a home being handed back, or opening its store, or a server
 * reading a newer map: refused before anything ran) is sent again, after
 * pauses from CLU_BUSY_PAUSE_MS doubling up to CLU_BUSY_PAUSE_MAX_MS, for
 * at most the client's call timeout (clu_obj_from()): a handover of a few
 * seconds is waited out, not failed. */
#define CLU_BUSY_PAUSE_MS 10u
#define CLU_BUSY_PAUSE_MAX_MS 250u

/* Sends of an object or object-entity op to the server the map names
 * after a refusal (-EREMCHG: nothing ran) or an unreachable server the map
 * moved (clu_obj_reroute()): a handover can take two (a client's stale
 * map sends to the home, which names the acting server; that one, once
 * the move back is made, names the home again). */
#define CLU_REROUTES_MAX 3u

/* The map watcher of an HA cluster's client (cli_cluster.c, "The map
 * watcher"): it looks every CLU_WATCH_TICK_MS at the calls waiting on
 * each server; when calls have waited on one CLU_WATCH_SILENT_MS without
 * any answer from it (a server answers a request in well under a second
 * unless it is gone or overloaded), it reads the map from another server,
 * at most once per CLU_WATCH_SILENT_MS; while the map has a server out of
 * service, it reads the map every CLU_WATCH_GONE_MS to see it back.  So a
 * call waiting on a server the map has FAILED ends at most about
 * CLU_WATCH_SILENT_MS + one map read after the map says so, not at its
 * deadline (the cluster's call timeout, 20 s in a dev cluster). */
#define CLU_WATCH_TICK_MS 200u
#define CLU_WATCH_SILENT_MS 1000u
#define CLU_WATCH_GONE_MS 2000u
/* A client whose op failed on a server the map has out of service, its
 * home not moved yet, reads the map again every CLU_MOVE_POLL_MS until it
 * names the acting server (at most a call timeout: clu_obj_reroute()). */
#define CLU_MOVE_POLL_MS 200u

/* Segments of one call's bulk (the RPC layer's limit), and how many of an
 * op's largest buffers travel as they are when it has more than that: the
 * others go through a bounce buffer between them (cli_cluster.c, "An op with
 * more buffers than one call's bulk takes"), so at most
 * 2 * CLU_BULK_DIRECT + 1 segments. */
#define CLU_BULK_IOV 16u
#define CLU_BULK_DIRECT 7u
_Static_assert(2 * CLU_BULK_DIRECT + 1 <= CLU_BULK_IOV,
	       "direct buffers and the runs between them fit one bulk");

/* A walk (SOP_WALK) may read and rewrite every unit a home holds: allow
 * it an hour, as strata-server --walk does.  Before it, the server must
 * answer a STATUS within the cluster's call timeout, so that a stopped or
 * cut-off server fails the call in that time, not in an hour. */
#define CLU_WALK_MS 3600000u

#endif
