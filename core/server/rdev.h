/*
 * rdev.h — the remote device driver of cluster mode (phase 2a,
 * docs/cluster.md "Placement across servers").
 *
 * A server's store lists, after its own devices, one remote device per
 * device of every other server (core/clu_conf.c): its slice of that
 * device, recorded with the path "remote:SERVER:INDEX".  The engine
 * attaches it with the tier driver "remote" registered here
 * (tier_dev_attach), so stripe_exec() and the walks place units on it as on
 * any device; the driver turns tier_dev_write/read/sync into SOP_RDEV_*
 * calls to the owning server (core/server/srv_rdev.c), data as bulk (RMA
 * above the RPC layer's inline threshold).
 *
 * Reachability: a transport failure of a call, or a failed probe, marks
 * the server unreachable; its remote devices then answer
 * tier_dev_reachable() false (the engine skips them: degraded reads and
 * writes) and fail at once with -EHOSTDOWN naming the server and device.
 * One probe thread per other server calls it (RPC_OP_NOOP, RDEV_PROBE_MS
 * timeout) every RDEV_PROBE_EVERY_MS from an endpoint of its own, so a cut
 * is noticed without data ops paying for it, and a server that answers
 * again is reachable again at once (a server that does not answer holds
 * up only its own prober).  A group read short of units asks an
 * unreachable device's server again at once (tier_dev_recheck: one NOOP on
 * the data connection, at most the unit call timeout) before it fails,
 * unless a contact found that server away less than RDEV_RECHECK_AGE_MS
 * ago.  A unit call that failed in the
 * transport because its owner restarted meanwhile (a newer incarnation
 * learned, peers.h) does not mark it unreachable: it is sent once more on
 * a fresh connection (RDEV_RESTART_RETRIES).  Transport failures are not
 * counted as device errors (tiers/tier.h tier_dev_errors): a remote device
 * is never FAILED because its server was away.
 *
 * One cluster context per process (a strata-server runs one store):
 * rdev_start() before the store opens, rdev_stop() after it closed.
 */
#ifndef STRATA_CORE_SERVER_RDEV_H
#define STRATA_CORE_SERVER_RDEV_H

#include <stdbool.h>
#include <stdint.h>

#include "core/clu_conf.h"
#include "core/server/srv_limits.h"

/* Probe times, unit call timeouts, restart retries and the deadline fence's
 * margin (RDEV_*): srv_limits.h. */

/**
 * Register the "remote" tier driver for server self of c (c must outlive
 * rdev_stop()), open its peer tables (endpoints of their own) and start the
 * probe thread.  Returns 0 or a negative code with a message.
 */
int rdev_start(const struct clu_conf *c, uint32_t self);

/** Stop the probe thread and close the peer tables (after the store that
 *  used the remote devices is closed).  Safe when not started. */
void rdev_stop(void);

/** Fail the remote device calls waiting for their replies, and every later
 *  one, with -ESHUTDOWN (peers_calls_stop() on both tables): for a server
 *  that stops and must not wait for them.  Safe when not started. */
void rdev_calls_stop(void);

/** This process's incarnation as a home (its rdev_start() time, ns): sent
 *  with every WRITE; owners refuse writes of an earlier incarnation once
 *  they have seen a later one. */
uint64_t rdev_epoch(void);

/**
 * Taking over a home (docs/cluster.md "Taking over a home").  A remote
 * device path may end in "@HOME+INC": "remote:SERVER:INDEX@HOME+INC" is
 * device INDEX of SERVER, slice HOME, written as home HOME with
 * incarnation INC (> 0) instead of this server's own slice and
 * rdev_epoch(): the devices of an engine this server opened on its shadow
 * of HOME's store (ha/srv_home.c).  SERVER may then be this server itself
 * (its own device, slice HOME, through its own RDEV service) or HOME (its
 * own slice of its own device: unreachable while it is down).
 * The owners' write fence (srv_rdev.c) takes INC as HOME's newest
 * incarnation, so the unit writes of HOME's earlier run are refused from
 * the first write of the acting server on.
 */

/** Raise this process's incarnation as a home above `above` (no effect
 *  when it is greater already): a home given back after a takeover writes
 *  above the acting server's takeover incarnation. */
void rdev_epoch_raise(uint64_t above);

/** hold: this server's home is served by another server now: its unit
 *  WRITEs as its own home fail with -EREMCHG (and nothing is sent) until
 *  rdev_home_hold(false). */
void rdev_home_hold(bool hold);

struct tier_dev;
/** d a remote device of this process: true with its owner *server, the
 *  owner's device index *dev and the slice (home) *home its offsets are
 *  in (function shipping sends units there: srv_isc.c); false for any
 *  other device. */
bool rdev_locate(struct tier_dev *d, uint32_t *server, uint32_t *dev,
		 uint32_t *home);

/** Is server i known to be unreachable for unit I/O? */
bool rdev_server_down(uint32_t i);

#endif
