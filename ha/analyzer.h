/*
 * analyzer.h — the event analyzer of the HA subsystem: a pure, replayable
 * function from (rules, recent events, map, now) to decisions.
 *
 * The analyzer does not look at one event at a time: for every target (a
 * server of the map, a device of a server) it reads the whole recent
 * history given to it, in seq order, and derives what the history says of
 * the target now (its "view": down, up, suspected, or nothing new), then
 * compares that with the target's state in the map and the time since the
 * map last changed it (hs_since_ms, hd_since_ms).  A decision is taken
 * only where the two differ; so a decision whose effect the map already
 * shows is never taken again.
 *
 * Purity.  ha_decide(), ha_next_deadline(), ha_map_apply() and ha_replay()
 * do no I/O, read no clock, keep no state between calls, use no global and
 * no randomness: the same input gives the same output, byte for byte.
 * They allocate (a working copy of the map, the views) and return -ENOMEM
 * when that fails.
 *
 * Leader change mid-decision.  The live analyzer applies its decisions one
 * by one (each a compare-and-swap of the map in etcd, bumping the epoch).
 * If it dies after applying some of them, the next leader calls
 * ha_decide() over the same history with the map as it now is: the
 * decisions already applied show in the map (a state, hm_frozen, hm_alert)
 * and are not taken again; the others are.  Job ids and decision seqs are
 * the epoch the decision makes (map epoch + 1 when it is taken), so the
 * re-taken ones carry the same ids as they would have.  Tests:
 * leader_change and random (every prefix of every step's decisions) in
 * ha/ut/analyzer_ut.c.
 *
 * The rules.  Each rule instance belongs to one target (or the map); each
 * has a deadline after which it ends, and terminal states.  W is
 * hr_quiet_ms.
 *
 *  merge (every target): the target's events are merged until it has
 *    been quiet for W (no event in W), or for at most hr_merge_max_ms
 *    after the first event of the burst; the last state wins (an exit
 *    then a join is a restart: nothing to decide).  An operator's event
 *    needs no quiet.  Reporters report changes (unreachable, reachable
 *    again), not each missed heartbeat: every event restarts the quiet.
 *    Deadline: the settle time.  Terminal: settled.
 *  stale: an event about a server whose incarnation (he_incarnation, 0 =
 *    unknown, never stale) is older than the map's hs_incarnation or than
 *    a later SRV_JOINED seen before it in seq order is dropped.
 *  server-down: a settled ONLINE (or REBALANCING) server is FAILED on
 *    direct proof (SRV_EXIT, SRV_LEASE_EXPIRED of its current run), or on
 *    SRV_UNREACHABLE from reporters in at least hr_min_reporters distinct
 *    enclosures (a server with enclosure "" is its own), each report at
 *    most hr_report_ttl_ms old and not withdrawn (SRV_REACHABLE from the
 *    same reporter, or a SRV_JOINED).  One reporter is a suspicion: no
 *    decision; it ends when its report is older than hr_report_ttl_ms
 *    (deadline), withdrawn, or joined by a second enclosure (terminal:
 *    expired, withdrawn, FAILED).  An operator's OP_FAIL is proof (rule
 *    "operator").
 *  restart: a server whose run ended by its own clean stop (SRV_STOPPED;
 *    a lease expiry after it changes nothing, an exit or OP_FAIL does) is
 *    not FAILED by rule server-down while the cluster restarts around
 *    it: the clean stops of the map's servers that follow one another
 *    within W of its own (the cluster, or part of it, stopped by an
 *    operator or a script) are one stop, and once another server of that
 *    stop has joined again (the restart under way), it has
 *    hr_restart_grace_ms from the latest such SRV_JOINED to join too
 *    (deadline: each server of the stop that joins extends it, so a
 *    restart that keeps making progress is not cut short).
 *    Terminal: it joined (nothing to decide), or the grace is over
 *    (server-down, and rule freeze if it comes to that).  Without it the
 *    first server back, leading, failed each of the others from its stop
 *    before they had time to start, and froze the map at the second.
 *    A single server's stop (no other stop within W) is failed as
 *    before: its home moves at once.
 *  io-errors / device-failed: a device of an ONLINE server is FAILED when
 *    the DEV_IOERR counts in any window of hr_ioerr_window_ms reach
 *    hr_ioerr_count (one error is not a failure), or on DEV_FAILED (its
 *    store marked it) or OP_FAIL.  Errors counted before an OP_REPLACE of
 *    the device are forgotten.  Deadline: the window (a burst below the
 *    threshold leaves no trace).  Terminal: FAILED or nothing.
 *  enclosure: when a target goes down and at least hr_encl_min targets of
 *    its enclosure (servers, and devices of its ONLINE servers) went down
 *    within W of it, it is marked TRANSIENT, not FAILED: no repair starts
 *    (a power cycle or a switch, not dead disks).  A TRANSIENT target that
 *    comes back (rule return) is ONLINE; one still away after
 *    hr_transient_max_ms is FAILED (deadline), and rule down-out follows.
 *  freeze: when a target going down (FAILED or TRANSIENT) would make more
 *    targets unavailable at once (TRANSIENT, FAILED, OUT, REPAIRING,
 *    QUARANTINED; devices of servers that are not counted themselves)
 *    than hm_tolerance, the map is frozen instead (FREEZE, once, with the
 *    alert in hd_reason) and the target keeps its state.  While frozen no
 *    target is excluded: nothing becomes FAILED, TRANSIENT, QUARANTINED or
 *    OUT and no repair starts; returns and job ends are still taken.
 *    Terminal: an operator's OP_THAW later than hm_frozen_ms (rule thaw:
 *    THAW); a failure that went down before that thaw no longer counts
 *    for a freeze (the operator accepted it).
 *  flapping: a server whose down episodes (an exit, a lease expiry, an
 *    OP_FAIL or a reporter quorum, each counted once until it is up again)
 *    reach hr_flap_count within hr_flap_period_ms, the last one after its
 *    hs_since_ms, is QUARANTINED at once (no quiet needed) and never
 *    repaired.  It is ONLINE again when it is up and has had no down
 *    episode for hr_flap_period_ms (deadline), or FAILED by an operator's
 *    OP_FAIL (rule operator), or taken back by an operator's OP_ADD later
 *    than its hs_since_ms (ONLINE).  Terminal: ONLINE, FAILED.
 *  down-out: a FAILED target not back after hr_down_out_ms from its
 *    hs_since_ms/hd_since_ms (deadline) is OUT; rule repair follows.
 *    Terminal: OUT, or ONLINE (return) before the deadline.
 *  repair: an OUT target gets JOB_REPAIR (its state becomes REPAIRING);
 *    JOB_DONE about it makes it REPAIRED; JOB_FAILED raises an ALERT and
 *    makes it FAILED again (so rule down-out retries after the delay).
 *  return: a settled TRANSIENT or FAILED server that is up again (its
 *    SRV_JOINED, SRV_REACHABLE as the last word of its reporters, or
 *    OP_ADD) is ONLINE: its data is still there.
 *  rebalance: a REPAIRED server that is up again (or OP_ADD), a REPAIRED
 *    device replaced (OP_REPLACE), or an ONLINE server the operator added
 *    (OP_ADD after its hs_since_ms) gets JOB_REBALANCE (state
 *    REBALANCING); JOB_DONE makes it ONLINE, JOB_FAILED: ALERT and FAILED.
 *  replace: a FAILED, TRANSIENT or QUARANTINED device that was replaced
 *    (OP_REPLACE) is OUT at once (the old one is gone; repair, then
 *    rebalance onto the new one).
 *  drain: OP_DRAIN (or OP_REMOVE of a server that is not REPAIRED yet)
 *    makes a server OUT at once (repair moves its units elsewhere); it
 *    then stays REPAIRED until OP_ADD.  OP_REMOVE of a REPAIRED server
 *    decides nothing: taking it out of the map is the operator tool's
 *    map edit (ha/map.h).
 *  job: JOB_DONE / JOB_FAILED count for a target in REPAIRING or
 *    REBALANCING when they name its running job (hs_job/hd_job; 0 = none
 *    running: no end counts) and are not older than
 *    hs_since_ms/hd_since_ms (the last one wins).
 *  job-abort: a target with a running job that another rule takes out of
 *    REPAIRING or REBALANCING (a rebalancing server down, a drain) gets
 *    JOB_ABORT of that job (hd_job) just before that state change; its
 *    effect: the target's job is 0.  Terminal: the state change.
 *  pause: while the map is frozen, every running job (a target in
 *    REPAIRING or REBALANCING with a job id) gets JOB_PAUSE (hd_job): the
 *    target keeps its state, its job is 0.  Runs after every target's
 *    rules of the round (so a leader change after any prefix takes the
 *    same rest).  Terminal: job 0.
 *  resume: on an unfrozen map, a target in REPAIRING or REBALANCING with
 *    no job running (paused, or a map written without one) gets its job
 *    again (JOB_REPAIR / JOB_REBALANCE, a new id; the walks go on where
 *    the paused ones stopped).  After every target's rules of the round,
 *    as pause.  Terminal: a job running.
 *    The runner (ha/ha_lead.c) stops a paused or aborted job at its next
 *    check, without an end event.
 *
 *  home (docs/cluster.md "Taking over a home"; only when
 *    hm_meta_replicas > 1, never while the map is frozen): runs after
 *    every server's rules of the round, for each home slot h (a server
 *    of the map).  When the server serving h (ha_home_acting(), h itself
 *    by default) is in a state other than ONLINE or REBALANCING — which
 *    the rules above conclude only on proof: an exit, a lease expiry, an
 *    operator's fail, reporters in two enclosures — h moves (HOME_MOVE,
 *    hd_acting) to a standby that is ONLINE and is not that server:
 *    first one the serving server last recorded in sync (the newest
 *    HOME_INSYNC about h reported by the server serving it, since it
 *    serves it: he_insync), in the order of its standbys by the map
 *    (ha_home_standbys(), replacements of servers lost for good
 *    included) then of the file's (ha_home_standbys_file()); else the
 *    first of the file's list; none: it stays.  A replacement standby no
 *    record names is never chosen (it may have become a standby after
 *    the serving server died, and hold nothing).  The
 *    takeover incarnation (hd_incarnation) is the down server's
 *    hs_since_ms in ns (the time of its FAILED as the map holds it: every
 *    leader deciding the same move computes the same), raised above h's
 *    hs_incarnation and its previous hs_acting_inc.  Handover: h served
 *    by another server, h ONLINE or REBALANCING, and a HOME_READY
 *    reported by h itself, of its current run, newer than the move
 *    (hs_acting_ms): h moves back to h (hd_acting h; the incarnation
 *    kept), when that HOME_READY's copy is of the current acting epoch
 *    (he_epoch = hs_acting_epoch; 0, an older server's: not checked).
 *    Handback cancelled: the acting server froze h for a copy
 *    (HOME_FROZEN from the server acting for h now, of its acting
 *    epoch, newer than hs_acting_ms) but h is not ONLINE or REBALANCING
 *    (it died after its copy, or flapped and is QUARANTINED): from
 *    hr_merge_max_ms after the freeze (deadline; at once when h is OUT,
 *    REPAIRING or QUARANTINED, up again only after a job or the flap
 *    period, while FAILED or REPAIRED may return within the merge max)
 *    h is given to the same
 *    acting server again (HOME_MOVE to it, incarnation kept: a new
 *    acting epoch), which unfreezes it there; the copy made for the
 *    cancelled handback, of the older epoch, can never move h back (the
 *    epochs are compared, not the clocks).  Also on a frozen map (it
 *    excludes nothing).  HOME_READY and HOME_FROZEN are read by this
 *    rule only (no server event for the others: they do not restart a
 *    merge).  Terminal: acting server up, or the handback cancelled.
 *
 * The devices of a server that is not ONLINE follow their server: no
 * device rule runs for them.  Events about a server or device the map does
 * not list are ignored.  A DEV_IOERR with he_count 0 counts as one error.
 *
 * The history to pass.  The rules look back at most hr_flap_period_ms,
 * hr_report_ttl_ms and hr_ioerr_window_ms, except for targets the map
 * holds away from ONLINE, whose return (a SRV_JOINED, OP_ADD, OP_REPLACE)
 * and drain are read from the history: the caller keeps every event newer
 * than the longest of those windows, every event about a target that is
 * not ONLINE in the map, and the newest OP_THAW.
 *
 * Cost: one call walks the history once (each event's server found by a
 * name table, its device by a scan of the server's) and then the map:
 * O(events + servers x devices), more for reporters and I/O error bursts
 * (bounded by HA_SERVERS_MAX and hr_ioerr_count per event); ha_replay()
 * calls it at least once per event (5,000 events over 32 servers: about
 * 2.5 s).
 */
#ifndef STRATA_HA_ANALYZER_H
#define STRATA_HA_ANALYZER_H

#include <stdint.h>

#include "ha/ha.h"

/** The rules' settings; ha_rules_init_defaults() gives the defaults
 *  (../shared/research/ha.md §2.4), ha_rules_init_test() seconds-scale
 *  ones for tests.  Every field must be > 0 (ha_rules_check()). */
struct ha_rules {
	uint64_t hr_quiet_ms;         /**< merge window W: 10 s (DAOS) */
	uint64_t hr_merge_max_ms;     /**< a burst settles by then: 60 s */
	uint32_t hr_min_reporters;    /**< distinct enclosures: 2 (Ceph) */
	uint64_t hr_report_ttl_ms;    /**< a report counts for: 120 s
				       *   (> hr_merge_max_ms) */
	uint32_t hr_ioerr_count;      /**< N I/O errors ... : 3 (Hare) */
	uint64_t hr_ioerr_window_ms;  /**< ... in T: 60 s */
	uint32_t hr_flap_count;       /**< down episodes ...: 5 (Ceph) */
	uint64_t hr_flap_period_ms;   /**< ... in: 600 s */
	uint64_t hr_down_out_ms;      /**< FAILED -> OUT: 600 s (Ceph) */
	uint32_t hr_encl_min;         /**< targets of one enclosure: 2 */
	uint64_t hr_transient_max_ms; /**< TRANSIENT -> FAILED: 3600 s */
	uint64_t hr_restart_grace_ms; /**< rule restart: 120 s (Lustre's
				       *   recovery window is 300 s) */
};

/** The defaults above. */
void ha_rules_init_defaults(struct ha_rules *r);

/**
 * Test settings: W 1 s, merge max 5 s, reports 10 s, 3 I/O errors in
 * 10 s, 5 flaps in 60 s, down-out 5 s (the "seconds in tests"),
 * 2 reporters and 2 targets per enclosure, TRANSIENT at most 30 s, a
 * restart's grace 30 s.
 */
void ha_rules_init_test(struct ha_rules *r);

/** 0, or -EINVAL (err_set naming the field) when a field is 0, when
 *  hr_report_ttl_ms does not exceed hr_merge_max_ms (a quorum must outlive
 *  the longest merge) or hr_quiet_ms exceeds hr_merge_max_ms. */
int ha_rules_check(const struct ha_rules *r);

/**
 * Decide.  ev[0..nr_ev) is the recent history in seq order (events with
 * he_time_ms after now_ms are the caller's error: they are used as they
 * are); map is the current map; now_ms the wall-clock time of the call.
 * Writes the decisions, in the order to apply them, to out[0..*nr_out).
 * Each one was taken on a working copy of the map with the ones before it
 * applied (ha_map_apply()), so that applying them in order to map gives
 * what the analyzer saw; hd_seq is the epoch the decision makes, hd_time_ms
 * now_ms, hd_job (JOB_*) the same as hd_seq.
 *
 * Returns 0; -ENOSPC when more decisions follow the max_out written (apply
 * those and call again: nothing is lost or repeated); -EINVAL for bad
 * rules (err_set); -ENOMEM.  Nothing is read but the arguments.
 */
int ha_decide(const struct ha_rules *r, const struct ha_event *ev,
	      uint32_t nr_ev, const struct ha_map *map, uint64_t now_ms,
	      struct ha_decision *out, uint32_t max_out, uint32_t *nr_out);

/**
 * The earliest time after now_ms at which ha_decide() over the same events
 * and map may decide something (a merge settles, a delay ends, a TRANSIENT
 * or QUARANTINED target's time is up), so the caller knows when to call it
 * again if no event comes; call it after applying what ha_decide() took
 * at now_ms.  now_ms when ha_decide() would decide something at once;
 * UINT64_MAX when nothing is due (or on bad rules / no memory: the
 * caller then learns the error from ha_decide()).
 */
uint64_t ha_next_deadline(const struct ha_rules *r, const struct ha_event *ev,
			  uint32_t nr_ev, const struct ha_map *map,
			  uint64_t now_ms);

/**
 * Apply decision d to map (a copy the caller owns): SET_STATE sets the
 * target's (server's or device's) state and clears its job; JOB_REPAIR
 * makes it REPAIRING, JOB_REBALANCE REBALANCING, with hd_job as its
 * running job (hs_job/hd_job); each sets the since time to now_ms;
 * HOME_MOVE sets the target's hs_acting (hd_acting, "" when it is the
 * target), hs_acting_epoch (the epoch it makes), hs_acting_ms (now_ms)
 * and hs_acting_inc (hd_incarnation);
 * FREEZE sets hm_frozen, hm_frozen_ms and hm_alert (d's reason); THAW
 * clears them; ALERT sets hm_alert; JOB_PAUSE and JOB_ABORT change no
 * state.  Every decision bumps hm_epoch by one.  Returns 0; -ENOENT when
 * the target is not in the map, -EINVAL for a bad kind or state (err_set
 * naming it; map unchanged).
 */
int ha_map_apply(struct ha_map *map, const struct ha_decision *d,
		 uint64_t now_ms);

/** Called by ha_replay() for each decision, after applying it to the
 *  map; a non-zero return stops the replay with that code. */
typedef int (*ha_replay_cb)(void *arg, const struct ha_decision *d);

/**
 * Replay a history as the live analyzer runs: for each event in seq order
 * (the clock being the largest he_time_ms so far), first every deadline
 * before it (ha_next_deadline()), then the event itself; at each time,
 * ha_decide() over the events seen so far, applying every decision to map
 * (ha_map_apply()) and calling cb, until nothing more is decided.  After
 * the last event the deadlines go on until none is due, or past until_ms
 * (0: no limit).  map is changed in place.  Returns 0, cb's code, or
 * -ELOOP (err_set) when more than HA_REPLAY_STEPS_MAX decision rounds ran
 * (a rule that would not end), or the errors of ha_decide().
 */
int ha_replay(const struct ha_rules *r, const struct ha_event *ev,
	      uint32_t nr_ev, struct ha_map *map, uint64_t until_ms,
	      ha_replay_cb cb, void *arg);

/* Decision rounds of one replay: each round is one ha_decide() call; a
 * history of 100,000 events with a few rounds each stays well below. */
#define HA_REPLAY_STEPS_MAX 1000000u

#endif /* STRATA_HA_ANALYZER_H */
