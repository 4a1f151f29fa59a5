/*
 * srv.h — one strata-server: its engine, its RPC endpoint and the handlers
 * of the engine-request protocol (core/server/strata.proto).
 *
 *   srv_start()   opens (or creates) the server's store in its data
 *                 directory with the store configuration the cluster file
 *                 gives it (clu_server.cs_store_yaml), then opens an RPC
 *                 endpoint at its address and port and serves:
 *                   SOP_ENT/OBJ/IDX   engine requests (eng_exec); updates
 *                                     are answered when durable (ci_done)
 *                   SOP_LIST          entity ids of a container
 *                   SOP_STATUS        devices, pools, counters
 *                   SOP_CONF_GET      the cluster file's text
 *                   SOP_IDX_STATE     an index replica's sequence (peers)
 *   srv_stop()    stops taking requests, lets every request in flight
 *                 finish and answer, closes the engine cleanly.
 *
 * Index replicas (docs/cluster.md): each index this server holds has a
 * replica record {incarnation, seq} in the store's sys table.  A replica
 * is "verified" once this server run compared its seq with the other
 * replicas' and, if a peer was newer, copied the index from the newest
 * peer; reads and first-replica updates of an unverified index wait (on
 * the syncer thread) until it is verified.
 *
 * Every malformed request is refused with a message and counted
 * (srv_counters.sc_bad); none is trusted.
 */
#ifndef STRATA_CORE_SERVER_SRV_H
#define STRATA_CORE_SERVER_SRV_H

#include <stdint.h>

#include "core/clu_conf.h"

struct srv;
struct eng_layout_ops;

/**
 * A module of the server that lives above it (dtm's participant,
 * dtm/dtm_srv.h): the server calls it at fixed points, in list order, and
 * knows nothing else of it.  Any step may be NULL.
 */
struct srv_module {
	const char *sm_name;
	/** Register its rpc handlers on the server's endpoint (after the
	 *  store opened and the server's own handlers, before the peers
	 *  connect).  Opcodes of a module not given stay unregistered: the
	 *  rpc layer answers them -EOPNOTSUPP. */
	int (*sm_register)(struct srv *s);
	/** Start (after the endpoint and the syncer; may call peers). */
	int (*sm_start)(struct srv *s);
	/** Before the store opens (NULL: nothing): the module may still
	 *  change what DATA_DIR/meta holds (the HA agent installs the
	 *  metadata of its home handed back by the server that acted for
	 *  it).  s_conf, s_me and s_self are set; s_eng is NULL.  A failure
	 *  fails the start. */
	int (*sm_pre_open)(struct srv *s);
	/** Stop (first in srv_stop(), in reverse order; also after a start
	 *  that failed at any point, so it must bear never having started). */
	void (*sm_stop)(struct srv *s);
};

/**
 * What the caller of srv_start() assembles into the server: the layers
 * above core that the server runs but does not name (DESIGN.md "Rooms").
 * The strata-server main (core/server/server.c) passes the unit layouts
 * (layouts/stripe.h) and dtm's participant; a server given less refuses
 * what it lacks (objects with unit layouts, dtx opcodes) with -EOPNOTSUPP.
 */
struct srv_parts {
	/** Unit layouts for the engine (eng_conf.ec_layout_ops); NULL: none. */
	const struct eng_layout_ops *sp_layout_ops;
	const struct srv_module *const *sp_modules;
	uint32_t sp_nr_modules;
	/**
	 * How the program runs the server again from its start, when a
	 * module finds it must (srv_restart()); NULL: it cannot (the
	 * request is refused and logged).  Called at most once per run,
	 * from the module's thread: it must only start the restart (the
	 * program's main thread then stops the server with srv_stop() and
	 * starts it again; strata-server execs itself, keeping its pid).
	 */
	void (*sp_restart)(void *arg, const char *why);
	void *sp_restart_arg;
};

/** Counters of a running server (also in SOP_STATUS). */
struct srv_counters {
	uint64_t sc_requests;   /**< requests decoded and run */
	uint64_t sc_bad;        /**< malformed requests refused */
	uint64_t sc_inflight;   /**< requests not yet answered */
	uint64_t sc_syncs;      /**< index replicas copied from a peer */
	uint64_t sc_late;       /**< remote unit writes refused by the
				 *   fence (past their deadline, or of an
				 *   earlier incarnation of their home) */
	uint64_t sc_tombs;      /**< index tombstones collected (dropped
				 *   once every replica had them) */
	uint64_t sc_zc_wr_bytes; /**< bytes pulled straight into NVRAM
				  *   device maps (zero-copy, srv_zc.c) */
	uint64_t sc_zc_rd_bytes; /**< bytes pushed straight from them */
	uint64_t sc_doubts;     /**< index verifications that heard a peer
				 *   replica's heartbeat mark this server
				 *   down (srv_idx.c, "doubt") */
};

/** srv_start() flags. */
enum srv_flags {
	/** Device model on for every tier with its class defaults, this run
	 *  only (like strata --model); the cluster file's device_model
	 *  applies when a store is created. */
	SRV_F_MODEL = 1u << 0,
};

/**
 * Start server number self of c (c must outlive the server) with flags
 * (enum srv_flags).  Returns 0 and *out, or a negative code with a message
 * (store, endpoint).
 */
int srv_start(struct srv **out, const struct clu_conf *c, uint32_t self,
	      uint32_t flags, const struct srv_parts *parts);

/** What srv_start() is doing now, in a few words ("" before it runs), for
 *  a program that logs a start that takes long or is stopped: readable
 *  from any thread. */
const char *srv_start_phase(void);

/**
 * Stop taking requests, drain, close the store.  Requests in flight get
 * the call timeout plus 5 s to answer; then their calls to other servers
 * fail (-ESHUTDOWN) and they get as long again.  Returns 0 (stopped, store
 * closed, s freed; also for NULL), or -EBUSY when requests still run after
 * that: then nothing is closed or freed under them (every acknowledged
 * update is durable already) and the caller should end its process.
 */
int srv_stop(struct srv *s);

/**
 * Ask the program to run this server again from its start (the HA agent
 * does when its home was taken over while it ran: the handback happens
 * only at a start, ha/srv_home.h).  why (logged) says for what.  Returns
 * 0 once asked (later calls: 0, nothing more), or -ENOTSUP with a message
 * when the program set no srv_parts.sp_restart.
 */
int srv_restart(struct srv *s, const char *why);

void srv_counters_get(struct srv *s, struct srv_counters *out);

#endif
