/*
 * srv_repl.h — replicated homes (issue 28 item 3, "No single home"):
 * strata-server's pipeline that keeps each home's metadata store mirrored
 * synchronously on its standbys (docs/cluster.md "Replicated homes").
 *
 * Standbys.  With cluster.meta_replicas R > 1, the standbys of home h are
 * the R - 1 servers pg_place() (core/pg.h) chooses for group h among the
 * cluster file's servers other than h (keys pg_key(name), enclosures from
 * servers[].enclosure): srv_repl_standbys().  Every server computes the
 * same list.  R = 1: nothing here runs (today's behaviour).
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
 * Standby side.  SOP_REPL_SHIP applies the set to the shadow of the home
 * in DATA_DIR/shadow-sH (eng_shadow_apply: durable before the answer);
 * SOP_REPL_SNAP writes chunks to DATA_DIR/shadow-sH.snap and installs it
 * at the last one (eng_shadow_install).  Both requests are checked field
 * by field (msg_repl_decode(), and the caller must be a home this server
 * is a standby of), refused with -EINVAL naming the field.
 */
#ifndef STRATA_CORE_SERVER_SRV_REPL_H
#define STRATA_CORE_SERVER_SRV_REPL_H

#include <stdint.h>

#include "core/clu_conf.h"

struct srv;

/** Pause of a sender between tries to re-sync an unreachable standby. */
#define SRV_REPL_RETRY_MS 1000u

/**
 * The standbys of home h in cluster c: up to cc_meta_replicas - 1 server
 * indices into out (room for CLU_REPLICAS_MAX), best first, h never among
 * them.  Returns their number (0 when R is 1 or the cluster has one
 * server), or a negative code with a message.
 */
int srv_repl_standbys(const struct clu_conf *c, uint32_t h, uint32_t *out);

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

/**
 * For a takeover of home h by this server (one of its standbys): close
 * this server's shadow of h and refuse SOP_REPL_SHIP/SNAP from h with
 * -EBUSY until srv_repl_shadow_give() (so a home that comes back cannot
 * re-sync the shadow from its own older store while it is served from
 * here; its sender retries every SRV_REPL_RETRY_MS).  The shadow's LMDB
 * directory (DATA_DIR/shadow-sH) goes into dir (len bytes): the caller
 * opens an engine on it (eng_conf.ec_meta_dir).  Returns 0, -EINVAL (h
 * not a home this server is a standby of, or meta_replicas 1), -EBUSY
 * (already taken).
 */
int srv_repl_shadow_take(struct srv *s, uint32_t h, char *dir, size_t len);
/** End a takeover of srv_repl_shadow_take(): the shadow of h serves its
 *  home's write sets again (opened on the next one).  The caller has
 *  closed its engine on it. */
void srv_repl_shadow_give(struct srv *s, uint32_t h);

#endif
