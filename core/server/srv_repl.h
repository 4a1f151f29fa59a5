/*
 * srv_repl.h — replicated homes (issue 28 item 3, "No single home"):
 * strata-server's pipeline that keeps each home's metadata store mirrored
 * synchronously on its standbys (docs/cluster.md "Replicated homes").
 *
 * Standbys.  With cluster.meta_replicas R > 1, the standbys of home h are
 * the R - 1 servers pg_place() (core/pg.h) chooses for group h among the
 * cluster file's servers other than h and other than those the map has
 * lost for good (keys pg_key(name), enclosures from servers[].enclosure):
 * srv_repl_standbys(), srv_repl_lost_set().  Every server computes the
 * same list from the same map.  R = 1: nothing here runs.
 *
 * Home side.  At start the server sets its engine's replication hook
 * (core/eng_repl.h) and starts one sender thread per standby.  ro_ship
 * copies each write set into every standby's bounded queue
 * (SRV_REPL_QUEUE sets, SRV_REPL_QUEUE_BYTES); the sender sends them in
 * order (SOP_REPL_SHIP, the set as bulk) and notes the standby's
 * acknowledgement.  ro_wait(seq) returns once every standby that is in
 * sync has acknowledged seq or more, or has been dropped: STABLE means
 * durable on the home and on every reachable in-sync standby.  A standby
 * is in sync from a probe (a SHIP without bulk: its shadow is at the
 * home's seq) or a snapshot sent to it; it is dropped (no longer waited
 * for, marked behind) when a call to it fails in the transport (the
 * cluster's call timeout), when it answers -ESTALE (its shadow is not at
 * the previous set) or any other error, or when its queue overflows.  A
 * standby behind is re-synced by its sender thread: a snapshot of the
 * store (eng_snapshot) sent in chunks (SOP_REPL_SNAP), then shipping
 * resumes after the snapshot's seq; while it does not answer, the sender
 * tries again every SRV_REPL_RETRY_MS.  Never from the committer.  Each
 * change of a standby's state is logged once.
 *
 * Takeover engines.  A server acting for another home h (ha/srv_home.c)
 * replicates the engine it opened on its shadow of h the same way, to
 * h's other standbys (srv_repl_engine_start below); every ship carries
 * its sender's view of the map, and standbys refuse senders that are no
 * longer acting for the home (srv_repl_view_set below).
 *
 * Standby side.  SOP_REPL_SHIP applies the set to the shadow of the home
 * in DATA_DIR/shadow-sH (eng_shadow_apply: durable before the answer);
 * SOP_REPL_SNAP writes chunks to DATA_DIR/shadow-sH.snap and installs it
 * at the last one (eng_shadow_install).  Both requests are checked field
 * by field (msg_repl_decode(), and the caller must be a home this server
 * is a standby of), refused with -EINVAL naming the field.
 */
#ifndef STRATA_CORE_SERVER_SRV_REPL_H
#define STRATA_CORE_SERVER_SRV_REPL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/clu_conf.h"

struct eng;
struct srv;

/** Pause of a sender between tries to re-sync an unreachable standby. */
#define SRV_REPL_RETRY_MS 1000u

/**
 * The standbys of home h in cluster c: up to cc_meta_replicas - 1 server
 * indices into out (room for CLU_REPLICAS_MAX), best first, h never among
 * them.  lost (NULL: none) marks the servers lost for good by the map
 * (OUT, REPAIRING, REPAIRED: ha_srv_lost(), ha/map.h): they are not
 * candidates, so the next best server replaces each one (pg_place: every
 * other home keeps its list).  Returns their number (0 when R is 1 or the
 * cluster has one server), or a negative code with a message.
 */
int srv_repl_standbys(const struct clu_conf *c, uint32_t h, const bool *lost,
		      uint32_t *out);

/**
 * Replacement standbys.  The servers the map has lost for good (lost[i],
 * cc_nr_servers of them), as the HA agent learns it after each map change:
 * every replication group this server runs (its own home's, and a
 * takeover's) takes the standbys srv_repl_standbys(lost) gives.  A standby
 * no longer in the list is dropped at once (its sender ends; recorded as
 * not in sync before any later set is acknowledged); a new one starts
 * behind and is brought in sync by a snapshot, as a standby back from an
 * outage is (logged "replacement standby").  The standby side accepts the
 * ships of every home this server is or was a standby of in this run.  So
 * a home whose standby died for good gets its R copies back once the map
 * has the server OUT, instead of running on one standby less until it
 * returns.  Idempotent; a server with no replication does nothing.
 */
void srv_repl_lost_set(struct srv *s, const bool *lost);

/**
 * Every server that holds or held a shadow of home h this run: h's
 * standbys by the cluster file (none lost) and by the last map
 * (srv_repl_lost_set), without duplicates, into out (room for
 * CLU_SERVERS_MAX).  A takeover's catch-up asks each of them.  Returns
 * their number or a negative code.
 */
int srv_repl_standbys_known(struct srv *s, uint32_t h, uint32_t *out);

/** Register the standby side's handlers (SOP_REPL_*) on s's endpoint and
 *  make the state (srv_open_ep()).  0 or a negative code. */
int srv_repl_register(struct srv *s);
/** Start the home side: the engine's hook and the senders (after the
 *  endpoint; nothing when meta_replicas is 1).  0 or a negative code. */
int srv_repl_start(struct srv *s);
/** Stop the home side: the hook cleared, the senders joined; writes
 *  still waiting are failed with -ESHUTDOWN (before the peers close). */
void srv_repl_stop(struct srv *s);
/** Free the state and close the shadows (after the endpoint and the
 *  engine closed). */
void srv_repl_fini(struct srv *s);

/* ------------------------------------------------ takeover engines */

/** The home side of one engine (opaque). */
struct repl_grp;

/**
 * Replicate engine e, opened by this server on its shadow of home h for a
 * takeover (ha/srv_home.c), like a home's own store: its write sets ship
 * to h's standbys other than this server (srv_repl_standbys(h) minus
 * self, the same list the map's ha_home_standbys() gives; a dead one is
 * dropped as unreachable and re-synced when it answers), stamped with
 * this server as sender (ReplReq.via), its map epoch and inc (the
 * takeover incarnation); the same wait (STABLE: every in-sync standby
 * acknowledged or dropped, and one at least) and min_size rule: with no
 * standby of h left in sync, e's writes fail with -EHOSTDOWN naming the
 * home.  The sequence numbers continue the shadow's (repl:seq): a standby
 * whose shadow is at e's seq when probed continues with the next set,
 * one behind or ahead gets a snapshot of e.  Call it right after
 * eng_open(), before e serves: it returns once every standby's first
 * probe was answered or failed (bounded: one call time and its slack),
 * so no write of e precedes that comparison.  0 and *out, or a negative
 * code with a message (e without a hook).
 */
int srv_repl_engine_start(struct srv *s, uint32_t h, struct eng *e,
			  uint64_t inc, struct repl_grp **out);
/** Stop replicating a takeover engine: the hook cleared (e's later
 *  writes, its close's included, are not shipped: its shadow carries the
 *  "served" mark, srv_repl_shadow_take()), waiters failed with
 *  -ESHUTDOWN, senders joined, g freed.  Before eng_close(e).  NULL:
 *  nothing. */
void srv_repl_engine_stop(struct repl_grp *g);

/**
 * This server's view of the map for home h: served by acting (h itself
 * when no takeover), as of map epoch epoch, takeover incarnation inc (0:
 * the home).  Called by the HA agent after every map change
 * (ha/srv_home.c srv_home_sync); a view never goes back to an older
 * epoch.  Ships and snapshot chunks this server sends for h carry its
 * view; those it receives for h are checked against it
 * (eng_repl_view_admit(), core/eng_repl.h): a sender that is not the
 * acting server of a view at least as new is refused with -EREMCHG and a
 * message naming the home, the sender and both epochs ("stale sender",
 * logged once per home and sender epoch); a sender with a newer epoch
 * teaches the view.  Without HA no view is ever set: every home serves
 * itself and its ships are admitted.
 */
void srv_repl_view_set(struct srv *s, uint32_t h, uint32_t acting,
		       uint64_t epoch, uint64_t inc);

/**
 * Where the standbys in sync of each home this server serves are
 * recorded (the HA agent: etcd), so that a takeover knows whether its
 * own copy may miss acknowledged write sets (ha/srv_home.c).  fn(arg,
 * home, seq, insync, n) is called with the home's standbys in sync (n of
 * them, server indexes) as of write set seq: after a standby was dropped
 * before any later set is acknowledged (a failure fails that wait: not
 * acknowledged), after one returned when a wait can (a failure is only
 * tried again).  fn returns 0 (recorded), 1 (it cannot record yet: the
 * set is acknowledged and the record made at a later wait) or a negative
 * code with a message; it is
 * called without the group's lock, one call at a time per home.  Set it
 * once, before writes (NULL: nothing recorded).
 */
typedef int (*srv_repl_insync_fn)(void *arg, uint32_t home, uint64_t seq,
				  const uint32_t *insync, uint32_t n);
void srv_repl_insync_hook(struct srv *s, srv_repl_insync_fn fn, void *arg);

/**
 * For a takeover of home h by this server (one of its standbys): close
 * this server's shadow of h and refuse SOP_REPL_SHIP/SNAP from h with
 * -EBUSY until srv_repl_shadow_give() (so a home that comes back cannot
 * re-sync the shadow from its own older store while it is served from
 * here; its sender retries every SRV_REPL_RETRY_MS).  The shadow's LMDB
 * directory (DATA_DIR/shadow-sH) goes into dir (len bytes): the caller
 * opens an engine on it (eng_conf.ec_meta_dir).  The shadow is marked
 * "served" first (DATA_DIR/shadow-sH.served, durable): from then on its
 * content may differ from every other copy of h's store at the same seq,
 * so probes and ships to it are answered -ESTALE until a snapshot is
 * installed in it (which removes the mark).  Returns 0, -EINVAL (h
 * not a home this server is a standby of, or meta_replicas 1), -EBUSY
 * (already taken).
 */
int srv_repl_shadow_take(struct srv *s, uint32_t h, char *dir, size_t len);
/** End a takeover of srv_repl_shadow_take(): the shadow of h serves its
 *  home's write sets again (opened on the next one).  The caller has
 *  closed its engine on it. */
void srv_repl_shadow_give(struct srv *s, uint32_t h);

/**
 * The catch-up of a takeover (ha/srv_home.c home_open()): this server's
 * shadow of home h as another standby of h, taking h over, asks for it.
 * *seq gets the shadow's write set (its repl:seq); when it is above
 * `above`, a consistent copy of the shadow is written to path (compacted,
 * synced) and *made is true.  Returns 0, -EINVAL (not a standby of h),
 * -EBUSY (the shadow serves a takeover here), -ESTALE (it served one: not
 * a copy of the home's history until a snapshot re-syncs it), or an
 * error with a message.
 */
int srv_repl_shadow_copy(struct srv *s, uint32_t h, uint64_t above,
			 const char *path, uint64_t *seq, bool *made);

#endif
