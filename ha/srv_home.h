/*
 * srv_home.h — taking over a home in a server (docs/cluster.md "Taking
 * over a home"): the engine-facing half of the HA agent (ha/srv_ha.c).
 *
 * Every object's metadata lives in its home h = clu_home(id).  The map
 * (ha/ha.h struct ha_srv hs_acting...) says which server serves each home:
 * h itself by default, or the standby the analyzer moved it to (rule home,
 * ha/analyzer.h) when h went down.  This part of the agent follows it:
 *
 *   routing   the server's s_route hook (core/server/srv_internal.h): an
 *             object request (SOP_OBJ, SOP_ENT of an object) homed on h
 *             runs on this server's own engine when the map has h served
 *             by h and h is this server; on the engine this server opened
 *             for h when the map has this server acting for h; otherwise
 *             it is refused with -EREMCHG naming the server that serves
 *             h (the client reads the map again and goes there:
 *             clovis/cli_cluster.c).  While the engine for h is being
 *             opened, -EBUSY.  A map with hm_meta_replicas < 2 routes
 *             everything to the own engine (as before HA).
 *   takeover  when the map names this server acting for h != self, it
 *             opens an engine on its shadow of h's metadata store
 *             (DATA_DIR/shadow-sH, H the home's index in the cluster file, kept by
 *             the replication pipeline, core/server/srv_repl.h,
 *             core/eng_repl.h) with h's store configuration (the cluster
 *             file's, clu_stores_span) and its own directory
 *             DATA_DIR/takeover-<h> (lock file; nothing else is kept
 *             there), every device path rewritten (eng_conf.ec_dev_path):
 *             h's own device k becomes "remote:<h>:k@<h>+INC" (its image
 *             on h: unreachable while h is down, so the engine reads and
 *             writes degraded) and every remote device "remote:<j>:k"
 *             becomes "remote:<j>:k@<h>+INC" (slice h of device k of
 *             server j, this server's own included), INC being the map's
 *             takeover incarnation (hs_acting_inc): core/server/rdev.h.
 *             The owners' write fence then refuses the late unit writes
 *             of h's earlier run.  Before the open, the shadow's keeper
 *             is asked to let it go (the shadow ops below); after the
 *             close, to take it again.
 *   release   when the map no longer names this server for h (a
 *             handover, or a move on), new requests for h are refused,
 *             those running end, and the engine is closed.
 *   own home  while the map has another server acting for this server's
 *             own home, the process sends no unit WRITE as its home
 *             (rdev_home_hold), serves none of its objects, and lends
 *             its own slice of its devices to the acting server
 *             (srv_rdev_own_lend(): that server's unit writes there
 *             pass); when the home is given back, the slice is taken
 *             back first (the writes admitted meanwhile on the device),
 *             and its unit writes carry an incarnation above the
 *             takeover's (rdev_epoch_raise).  A run whose home was
 *             taken over while it ran asks to run again from its start
 *             for the handback (srv_ha.c, srv_restart()).
 *
 * Thread safety: srv_home_sync() is called by the agent's map thread only;
 * the route and put hooks by any handler thread.
 */
#ifndef STRATA_HA_SRV_HOME_H
#define STRATA_HA_SRV_HOME_H

#include <stdbool.h>
#include <stdint.h>

#include "ha/ha.h"

struct srv;
struct srv_home;

/**
 * The keeper of shadows (the replication pipeline's standby half): asked
 * to release its handle on the shadow of home h before an engine is
 * opened on it (shadow_release: 0, or a negative code with a message:
 * the takeover waits and tries again at the next map step), and to take
 * it again after that engine closed (shadow_resume).  NULL hooks (the
 * default): repl's srv_repl_shadow_take() / srv_repl_shadow_give()
 * (core/server/srv_repl.h), which close the standby's handle and refuse
 * the home's ships and snapshots (-EBUSY) meanwhile.
 */
struct srv_home_shadow_ops {
	int (*so_release)(void *arg, uint32_t h);
	void (*so_resume)(void *arg, uint32_t h);
	void *so_arg;
};

/** Create the home part of server s's agent and set s's routing hook
 *  (before the endpoint serves).  0, or -ENOMEM. */
int srv_home_create(struct srv *s, struct srv_home **out);

/** Install the shadow keeper's hooks (ops copied; NULL: none). */
void srv_home_shadow_ops_set(struct srv_home *sh,
			     const struct srv_home_shadow_ops *ops);

/**
 * Follow map m (the agent's, newly taken): route by it from now on, open
 * the engines of the homes m has this server acting for, close those it
 * no longer has, hold or release the own home.  Failures are logged; a
 * home whose engine could not be opened answers -EBUSY meanwhile.
 * Returns true when everything m asks is done, false when the caller must
 * call again (the agent does at its next step, HA_TICK_MS).
 */
bool srv_home_sync(struct srv_home *sh, const struct ha_map *m);

/** Close every engine (requests refused first, running ones waited for).
 *  The routing hook stays set and sh allocated until the process ends
 *  (handler threads may still call it; a home acted for then answers
 *  -EBUSY).  NULL: nothing. */
void srv_home_destroy(struct srv_home *sh);

/** Homes this server acts for now (a bit per server index), for the
 *  agent's state. */
uint64_t srv_home_acting_mask(struct srv_home *sh);

/*
 * Handover (the snapshot copy at the home's start).  A server whose home
 * another server A acts for asks A, before its own store opens
 * (srv_home_pre_open(), the HA module's sm_pre_open): A stops serving the
 * home (its requests answer -EBUSY from then on, the running ones are
 * waited for) and takes a snapshot of its engine (srv_home_snap(), HA_OP
 * HAK_HOME_SNAP); the home copies it in chunks (srv_home_chunk(),
 * HAK_HOME_CHUNK) and installs it as its DATA_DIR/meta
 * (eng_shadow_install()), then opens its store on it and, once its agent
 * runs, reports HOME_READY: the analyzer moves the home back (rule home)
 * and A closes its engine.  A failure at any step leaves the home where it
 * is (the server starts on its own copy and serves none of its home).
 * The home side tries for up to HA_HANDBACK_WAIT_MS, every
 * HA_HANDBACK_RETRY_MS, reading the map again each time: the acting
 * server may be starting too (every server restarted) and acts for the
 * home again only once its agent has read the map.
 */
#define HA_HANDBACK_WAIT_MS 60000u
#define HA_HANDBACK_RETRY_MS 500u

/** The acting side: freeze home h and snapshot its engine; 0 with *size
 *  (bytes), *seq (its write set), *epoch (the map's hs_acting_epoch this
 *  server acts under: the copy's, reported with HOME_READY) and *newly
 *  (it was not frozen before: the agent reports HOME_FROZEN), -EREMCHG
 *  when this server does not act for h, or an error.  A frozen home stays
 *  frozen until the map moves it (its engine closes) or gives it to this
 *  server again at a newer epoch: the analyzer cancels a handback its
 *  home cannot take (rule home, ha/analyzer.h), and the copy taken for
 *  it can then never move the home back. */
int srv_home_snap(struct srv_home *sh, uint32_t h, uint64_t *size,
		  uint64_t *seq, uint64_t *epoch, bool *newly);
/** The acting side: len bytes at off of home h's snapshot into buf; 0
 *  with *got (0 past its end), or an error. */
int srv_home_chunk(struct srv_home *sh, uint32_t h, uint64_t off,
		   void *buf, size_t len, size_t *got);
/** The catch-up of a takeover (before a standby taking home h over
 *  serves it, it copies the shadow of another standby that is ahead of
 *  its own): this server's shadow of h; 0 with *seq its write set and,
 *  when that is above `above`, *size the bytes of a copy of it made for
 *  srv_home_shadow_chunk() (0: none made); -EBUSY, -ESTALE, -EINVAL
 *  (srv_repl_shadow_copy(), core/server/srv_repl.h) or an error. */
int srv_home_shadow_copy(struct srv_home *sh, uint32_t h, uint64_t above,
			 uint64_t *size, uint64_t *seq);
/** len bytes at off of that copy into buf; 0 with *got, or an error. */
int srv_home_shadow_chunk(struct srv_home *sh, uint32_t h, uint64_t off,
			  void *buf, size_t len, size_t *got);
/** Record, from now on, the standbys in sync of each home this server
 *  serves in etcd (/strata/CLUSTER/insync/HOME, srv_repl_insync_hook()):
 *  a takeover by a standby not in the record waits until it has copied
 *  one in the record (home_catch_up()).  Called when the agent registers,
 *  with its etcd client made: before the first replicated write. */
void srv_home_insync_start(struct srv_home *sh);
/** The home side, before its store opens (see above).  Returns 0 (a
 *  handback not made is logged, not an error) or -ENOMEM/-ENAMETOOLONG. */
int srv_home_pre_open(struct srv *s);
/** Did srv_home_pre_open() install the home's metadata in this run? */
bool srv_home_installed(void);
/** The acting epoch of the copy it installed (0: none, or an acting
 *  server that did not say): reported with HOME_READY; a map whose acting
 *  epoch for this home is another one cancelled that handback. */
uint64_t srv_home_installed_epoch(void);
/** Did srv_home_pre_open() try a handback in this run and give up (after
 *  HA_HANDBACK_WAIT_MS)?  Such a run runs again from its start no sooner
 *  than HA_HOME_RESTART_MIN_MS (srv_ha.c): the pace of the tries. */
bool srv_home_gave_up(void);

#endif /* STRATA_HA_SRV_HOME_H */
