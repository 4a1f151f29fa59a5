/*
 * srv_limits.h — every limit of core/server in one place, each with its
 * reason (issue 27 point 4; the engine's are in core/limits.h, the public
 * ones in clovis/clovis.h): the protocol's codecs, the peer tables, remote
 * devices, the server's threads and index replicas, and the daemon.
 * Included through the headers whose contract names them (msg.h, peers.h,
 * rdev.h, srv_internal.h; the Clovis cluster client uses the protocol's
 * and the peer tables' through msg.h and peers.h).
 */
#ifndef STRATA_CORE_SERVER_SRV_LIMITS_H
#define STRATA_CORE_SERVER_SRV_LIMITS_H

#include "core/limits.h"

/* ------------------------------------------------ the protocol (msg.h) */

/* Largest remote unit I/O: one unit of the largest unit size
 * (ST_UNIT_SHIFT_MAX). */
#define MSG_RDEV_MAX (1ull << ST_UNIT_SHIFT_MAX)
/* Replicated homes (srv_repl.c): the largest write set shipped (a bigger
 * one sends its standbys a snapshot instead), a snapshot chunk, the
 * largest snapshot (the largest LMDB map). */
#define MSG_REPL_SET_MAX (64ull << 20)
#define MSG_REPL_CHUNK (1ull << 20)
#define MSG_REPL_SNAP_MAX LIM_META_SIZE_MAX
/* Write sets queued per standby (and their bytes) before it is dropped
 * to a re-sync by snapshot. */
#define SRV_REPL_QUEUE 4096u
#define SRV_REPL_QUEUE_BYTES (256ull << 20)
/* Consecutive write sets sent to a standby in one call (applied there in
 * one transaction). */
#define SRV_REPL_BATCH 64u
/** A call to a standby (SOP_REPL_*): the cluster's call timeout / 3, at
 *  least this (srv_repl.c repl_call_ms()). */
#define SRV_REPL_CALL_MIN_MS 2000u
/** A home waits for its standbys' acknowledgement of a write set at most
 *  their call timeout + this, then drops those that did not answer. */
#define SRV_REPL_WAIT_SLACK_MS 1000u
/* Op tags (IdxReq.tag): 63 bits, so that a version entry keeps one beside
 * its tombstone bit (srv_idx_internal.h, struct vent). */
#define MSG_TAG_MAX ((1ull << 63) - 1)
/* Packed index records up to this size travel inside the message; larger
 * ones as bulk (the RPC layer moves big bulk by RMA).  Well under the RPC
 * layer's 64 KiB default message size. */
#define MSG_RECS_INLINE (32u << 10)
/* GET and NEXT replies carry records up to this many bytes; the client asks
 * again for the rest (paging).  Same bound as requests. */
#define MSG_REPLY_BUDGET (32u << 10)
/* All keys and values of one index op: like ST_OP_BYTES_MAX for
 * objects, the most one op may move. */
#define MSG_IDX_BYTES_MAX ST_OP_BYTES_MAX
/* LIST: ids per reply (16 bytes each plus framing, inside a message). */
#define MSG_LIST_MAX 1024u

/* ------------------------------------------------ peer tables (peers.h) */

/* A server found down is not tried again for PEERS_RETRY_MS; by a client
 * (a table that opened its own endpoint) whose contact before failed too,
 * for twice what the failed contact took (a connect or call that ran into
 * its timeout) when that is longer, at most PEERS_RETRY_MAX_MS: a server
 * that stays away costs a client at most a third of its time, not one
 * timeout per op, and one back from a restart is tried again after 1 s.
 * A server's tables keep the short retry (heartbeats, catch-up, remote
 * devices: the table on its endpoint, and those peers_set_server() marks). */
#define PEERS_RETRY_MS 1000u
#define PEERS_RETRY_MAX_MS 10000u
/* Server addresses whose incarnation the process remembers: a few
 * clusters' worth (CLU_SERVERS_MAX each); past it, new addresses are
 * handled like servers that do not tell their incarnation. */
#define PEERS_BOOK_MAX 256u
/* -EBUSY retries of one call, PEERS_BUSY_PAUSE_MS apart. */
#define PEERS_BUSY_RETRIES 20u
#define PEERS_BUSY_PAUSE_MS 5u

/* ------------------------------------------- remote devices (rdev.h) */

/* Probe period and timeout (the timeout as srv_idx's: shorter ones saw
 * false timeouts on a loaded loopback cluster). */
#define RDEV_PROBE_EVERY_MS 200u
#define RDEV_PROBE_MS 2000u
/* A read short of units asks a server marked down again
 * (tier_dev_recheck) only when no contact found it away for this long. */
#define RDEV_RECHECK_AGE_MS 1000u
/* Unit I/O call timeout: a third of the cluster's call timeout, within
 * these bounds, so that the home can still go on degraded and answer its
 * client within the client's own call timeout. */
#define RDEV_CALL_MS_MIN 1000u
#define RDEV_CALL_MS_MAX 10000u
/* A unit call that failed on a connection to its owner's earlier run
 * (the owner restarted during the call) is sent again this many times:
 * one, so that the home's wait stays within two unit call timeouts, under
 * the client's call timeout. */
#define RDEV_RESTART_RETRIES 1u
/*
 * The deadline fence (docs/cluster.md): every WRITE carries its call's
 * absolute deadline (CLOCK_REALTIME ns of the home: now + the unit call
 * timeout) and the home's incarnation (its start time).  The owner
 * refuses a WRITE once its own clock is past the deadline, checked before
 * the data is pulled and again just before the device write.  The home
 * releases the space of an abandoned write RDEV_FENCE_MARGIN_MS after the
 * latest deadline it gave a write to that device (to_fence).  Assumes the
 * servers' clocks agree within the margin, less the time an owner takes
 * from its last check to the device write (milliseconds).  An owner whose
 * clock finds a deadline more than RDEV_CALL_MS_MAX + RDEV_FENCE_MARGIN_MS
 * ahead refuses the write as malformed (skew too large to trust the
 * fence): loud failures instead of a fence that no longer holds.
 */
#define RDEV_FENCE_MARGIN_MS 1000u

/* ------------------------------------------- the server (srv_internal.h) */

/* RPC handler threads: enough for a few clients' workers each; the engine
 * has its own I/O threads behind them. */
#define SRV_HANDLERS 8u
/* Buckets of the in-memory table of index replica records. */
#define SRV_RIDX_BUCKETS 1024u
/* Requests parked for the syncer at most (further ones: -EBUSY). */
#define SRV_PARK_MAX 4096u
/* Heartbeat: each server calls its ring neighbours (the servers it shares
 * index replicas with) this often, so that it learns it was cut off. */
#define SRV_HEARTBEAT_MS 200u
/* Call timeout of heartbeats and replica state probes (at most the
 * cluster's): a cut-off peer is found within about two seconds.  Shorter
 * ones saw false timeouts on an idle loopback cluster. */
#define SRV_PROBE_MS 2000u
/* An index replica that has not heard from any of its live peer replicas
 * for this long (a call sent since then answered: frozen, or its link cut
 * while every call hung) and was not verified for as long verifies before
 * it serves the index again (srv_idx_ver.c ridx_stale()). */
#define SRV_LEASE_MS 600u
/* The stall watch (srv_idx_syncer.c srv_tick_main()) notes the time this
 * often; a gap above SRV_LEASE_MS between two notes means the process did
 * not run that long (SIGSTOP, a long pause, starved): every index verifies
 * again before it is served (its peers may have skipped it meanwhile, and
 * answers to calls it sent before the stall renew the lease above). */
#define SRV_TICK_MS 50u
/* Threads that run object requests off the RPC handler threads
 * (srv_rdev.c: an object op waits for unit I/O on other servers, whose
 * RDEV requests need free handlers). */
#define SRV_EXEC_THREADS 8u
/* A composite's move through a cluster client (srv_layer.c): one
 * SOP_LAYER call moves at most this many bytes of the object's blocks
 * (runs of at most LIM_IO_CHUNK, each read, written and committed on its
 * own), so that its answer comes well within the call timeout even on the
 * slowest tier; the client calls again from where it stopped
 * (LayerReply.next). */
#define SRV_LAYER_MOVE_BYTES (4ull * LIM_IO_CHUNK)
/* A composite's map through a cluster client: runs per SOP_LAYER answer
 * (24 bytes each packed at most: some 24 KiB); the client calls again
 * from LayerReply.next. */
#define SRV_LAYER_MAP_RUNS 1024u
/* SOP_LAYER requests served at once, each on a thread of its own (the
 * engine's layer calls run as on an application's thread); past it
 * -EBUSY, which the client waits out within its call timeout.  An HSM
 * moving a few objects at a time stays below it. */
#define SRV_LAYER_THREADS 16u
/* Records per page when copying an index from a peer. */
#define SRV_SYNC_PAGE 256u
/* Tombstone collection (srv_idx_tomb.c, docs/cluster.md "Collecting
 * tombstones"): the syncer looks at the indices this server is the first
 * replica of this often; at most this many indices per look (the rest the
 * next time), and at most this many tombstones dropped per index and
 * commit (one LMDB write transaction must stay short). */
#define SRV_TOMB_PASS_MS 1000u
/* A replica that knows it missed acknowledged updates of an index and
 * whose catch-up failed (no peer that holds them answered, or the copy
 * failed) tries again this long after its last try, on the syncer, without
 * waiting for a request of that index (the clients skip a replica that is
 * behind, so none may come): srv_idx_syncer.c ridx_behind_pass(). */
#define SRV_BEHIND_RETRY_MS 3000u
#define SRV_TOMB_PASS_MAX 256u
#define SRV_TOMB_BATCH 4096u
/* Test fault srv.idx.ent.slow (srv.c): a client's index CREATE or DELETE
 * is answered this late by the replica that applied it first, longer
 * than two tombstone passes (each may verify the index). */
#define SRV_ENT_SLOW_US 3000000u
/* srv_zc.c: zero-copy transfers to and from pmem2 devices */
#define SRV_ZC_RANGES 16u  /* ranges one read pushes straight from the map
			    * (a plain 1 MiB read has one per extent); past
			    * this, the rest goes through the buffer */

/* ------------------------------------------------ the daemon (server.c) */

/* A walk reads and rewrites a whole store's units: allow it an hour. */
#define SRV_WALK_CALL_MS 3600000u
/* How often a starting server looks at its progress (--status-file). */
#define SRV_STATUS_EVERY_MS 250u
/* How long fault srv.start.slow.NAME slows a start: past the 30 s that
 * `strata cluster up` used to allow. */
#define SRV_STATUS_SLOW_MS 40000u

#endif
