/*
 * srv_ha.h — the HA agent of a strata-server: a server module (struct
 * srv_module, core/server/srv.h) that the strata-server main hands to the
 * server, as it hands dtm's participant.  Active only when the cluster
 * file names etcd endpoints (cluster.etcd); otherwise it does nothing and
 * the server behaves as before HA.
 *
 * What it does (docs/ha.md):
 *
 *   map       at start, stores the map made from the cluster file in etcd
 *             if there is none (ha_map_bootstrap) and takes the stored one;
 *             then reads it again whenever it changed (polling its
 *             revision every HA_TICK_MS, or at once when a request or a
 *             peer's answer carried a newer epoch).  The process acts
 *             under the map's epoch (rpc_epoch_set()).
 *   gate      every request but the exempt ones (HA_OP, SOP_STATUS,
 *             SOP_CONF_GET) is checked before its handler runs:
 *               - older epoch than the server's: -EREMCHG, with the
 *                 server's epoch in the reply (the client takes it and
 *                 sends the request again: core/server/peers.h);
 *               - newer: -EBUSY while the agent loads the map (retried
 *                 by the caller);
 *               - the server is fenced: -EHOSTDOWN.
 *   lease     membership key /strata/<c>/members/<name> under a lease of
 *             lease_ttl seconds, renewed every third of it.  When no
 *             renewal succeeded for a whole TTL, the server fences
 *             itself: it acknowledges nothing (gate above) until a
 *             renewal succeeds and it has read the map again.  So a
 *             server cut off from etcd (a partition) stops acknowledging
 *             updates no later than when the others may see its lease
 *             expire.
 *   probes    every HA_PROBE_MS, a no-op call to every other server (from
 *             an endpoint of its own); a server that stops or starts
 *             answering is reported as an event (SRV_UNREACHABLE,
 *             SRV_REACHABLE, with its incarnation).  Its own devices: a
 *             device the engine failed is reported (DEV_FAILED), new I/O
 *             errors too (DEV_IOERR with the count).
 *   analyzer  the agent that holds the leader key (ha_leader_try under
 *             its lease) runs the analyzer (ha/analyzer.h) over the recent
 *             events and applies its decisions (ha_lead.c).
 *
 * One agent per process (the epoch is the process's: rpc_epoch_set()).
 */
#ifndef STRATA_HA_SRV_HA_H
#define STRATA_HA_SRV_HA_H

#include <stdint.h>

#include "core/rpc/rpc.h"
#include "core/server/srv.h"

/** The HA opcode (HaReq, ha/ha.proto); apart from the server's, dtm's
 *  (RPC_OP_USER_MIN + 96) and the management ones. */
#define HA_OP (RPC_OP_USER_MIN + 112u)

/** HaReq.kind */
enum ha_req_kind {
	HAK_MAP = 1,       /**< Reply.text: the map as JSON */
	HAK_EVENTS = 2,    /**< Reply.text: events, one JSON per line */
	HAK_DECISIONS = 3, /**< Reply.text: decisions, likewise */
	HAK_REPORT = 4,    /**< HaReq.text: an operator's event (JSON) */
	HAK_STATE = 5,     /**< Reply.text: the agent's state (JSON) */
	/** Handover (ha/srv_home.h): HaReq.limit the home; Reply.bytes the
	 *  snapshot's size, Reply.seq its write set */
	HAK_HOME_SNAP = 6,
	/** HaReq.limit the home, HaReq.from the offset: Reply.text the
	 *  snapshot's bytes there (at most HA_HOME_CHUNK) */
	HAK_HOME_CHUNK = 7,
	/** Catch-up of a takeover (ha/srv_home.h): HaReq.limit the home,
	 *  HaReq.from a write set; Reply.seq this server's shadow's write
	 *  set and, when it is above from, Reply.bytes the size of a copy of
	 *  the shadow made for HAK_SHADOW_CHUNK (0: none made) */
	HAK_SHADOW_COPY = 8,
	/** HaReq.limit the home, HaReq.from the offset: Reply.text that
	 *  copy's bytes there (at most HA_HOME_CHUNK) */
	HAK_SHADOW_CHUNK = 9,
};

/** Bytes of one HAK_HOME_CHUNK answer (below the RPC body limit). */
#define HA_HOME_CHUNK (32u << 10)

/** The module: in srv_parts.sp_modules of the strata-server main. */
extern const struct srv_module ha_srv_module;

#endif /* STRATA_HA_SRV_HA_H */
