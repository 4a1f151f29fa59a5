/*
 * ha.h — the types every part of Strata's HA subsystem shares: the states
 * of servers and devices, the cluster map (what etcd holds under the
 * cluster's map key, ha/map.h), the events servers and operators report
 * and the decisions the event analyzer takes from them (ha/analyzer.h).
 *
 * The design is in ha/README.md and docs/ha.md; the research behind it in
 * ../shared/research/ha.md.  In short: servers detect and report events;
 * one analyzer, elected with an etcd lease, decides; its decisions are map
 * changes (each bumps the map's epoch with a compare-and-swap in etcd)
 * plus jobs (repair, rebalance, pause, abort).  Clients never talk to
 * etcd: they get the map from any server, and every request carries the
 * epoch it was made under.
 *
 * Everything here is plain data with fixed bounds (ha/ha_limits.h): a map
 * or an event can be copied with memcpy, compared, and kept in arrays.
 * Names are NUL-terminated within their arrays.
 */
#ifndef STRATA_HA_HA_H
#define STRATA_HA_HA_H

#include <stdbool.h>
#include <stdint.h>

#include "ha/ha_limits.h"

/**
 * The state of a server, an enclosure or a device in the map.
 *
 *   ONLINE        in service.
 *   TRANSIENT     away, expected back (an enclosure power cycle, a switch,
 *                 a restart): no repair is started for it.
 *   FAILED        down: proven gone (its process exit, its lease expiry)
 *                 or reported unreachable by reporters in two enclosures;
 *                 a device with too many I/O errors.  Its data is read
 *                 degraded; after the down-out delay it becomes OUT.
 *   REPAIRING     OUT, and the repair job rebuilding its units runs.
 *   REPAIRED      its units are rebuilt elsewhere; nothing reads it.
 *   REBALANCING   back (returned or replaced) and units move onto it.
 *   OUT           excluded from placement; data rebuilt elsewhere.
 *   QUARANTINED   flapped (went down and up too often): kept out, not
 *                 taken back automatically (an operator's `replace`/`add`
 *                 or a new incarnation after the window ends it).
 */
enum ha_state {
	HA_ONLINE = 0,
	HA_TRANSIENT,
	HA_FAILED,
	HA_REPAIRING,
	HA_REPAIRED,
	HA_REBALANCING,
	HA_OUT,
	HA_QUARANTINED,
	HA_STATE_NR
};

/** "ONLINE", "TRANSIENT", ... ; "?" for a value out of range. */
const char *ha_state_name(enum ha_state s);
/** The state called name (case-insensitive), or -EINVAL. */
int ha_state_parse(const char *name);

/** One device of a server, as its store names it (conf "devices:"). */
struct ha_dev {
	char hd_name[HA_NAME_MAX + 1];
	enum ha_state hd_state;
	uint64_t hd_since_ms;   /**< wall-clock ms of the last state change */
	uint64_t hd_job;        /**< its running repair/rebalance job, 0 */
};

/** One server of the map. */
struct ha_srv {
	char hs_name[HA_NAME_MAX + 1];
	char hs_addr[HA_HOST_MAX + 1];   /**< as in the cluster file */
	uint16_t hs_port;
	char hs_enclosure[HA_NAME_MAX + 1]; /**< failure domain; "" = its own */
	enum ha_state hs_state;
	uint64_t hs_since_ms;   /**< wall-clock ms of the last state change */
	uint64_t hs_job;        /**< its running repair/rebalance job, 0 */
	/** The incarnation of its current run (0: none known); events about
	 *  an older one are stale. */
	uint64_t hs_incarnation;
	uint32_t hs_nr_devs;
	struct ha_dev hs_devs[HA_DEVS_MAX];
	/** Taking over a home (docs/cluster.md "Taking over a home"): the
	 *  server that serves the objects homed on this server (its home
	 *  slot, clu_home()) now; "" = this server itself. */
	char hs_acting[HA_NAME_MAX + 1];
	/** The map epoch at which hs_acting took the home (or handed it
	 *  back); 0 = never moved. */
	uint64_t hs_acting_epoch;
	/** Wall-clock ms of that move (0 = never moved): a HOME_READY of
	 *  this server counts only when newer. */
	uint64_t hs_acting_ms;
	/** The takeover incarnation of the last move away: greater than
	 *  this server's run (its rdev_epoch()) when the move was decided;
	 *  the acting server's unit writes as this home carry it, so the
	 *  owners' write fence refuses the late writes of this server's
	 *  earlier run.  Kept after a handover: the home's own writes must
	 *  then carry a greater one.  0 = never moved. */
	uint64_t hs_acting_inc;
};

/**
 * The cluster map.  hm_epoch is bumped by every change (ha/map.h writes it
 * with a compare-and-swap on the key's etcd mod_revision).  A frozen map
 * (more failures than the layouts tolerate) takes no exclusion until an
 * operator thaws it; hm_alert says why it froze.
 */
struct ha_map {
	char hm_cluster[HA_NAME_MAX + 1];
	uint64_t hm_epoch;
	uint32_t hm_pgs;          /**< metadata placement groups P (fixed) */
	uint32_t hm_pg_replicas;  /**< replicas R of each group */
	/** Failures the cluster's layouts tolerate at once (the smallest K
	 *  of its pools' layouts; the freeze rule compares with it). */
	uint32_t hm_tolerance;
	bool hm_frozen;
	/** When it froze (wall-clock ms; 0 while not frozen): an operator's
	 *  thaw counts only if it came after (ha/analyzer.h, rule thaw). */
	uint64_t hm_frozen_ms;
	char hm_alert[HA_TEXT_MAX + 1];
	char hm_leader[HA_NAME_MAX + 1]; /**< the analyzer's server, "" */
	/** Copies of each home's metadata (cluster key meta_replicas: the
	 *  home and its standbys, ha_home_standbys()); 0 or 1: homes are
	 *  never taken over. */
	uint32_t hm_meta_replicas;
	uint32_t hm_nr_servers;
	struct ha_srv hm_servers[HA_SERVERS_MAX];
};

/** What an event says.  SRV_* name a server (he_dev ""), DEV_* one of
 *  its devices, OP_* are an operator's requests, JOB_* a job's end. */
enum ha_ev_kind {
	HA_EV_SRV_UNREACHABLE = 0, /**< reporter got no heartbeat answer */
	HA_EV_SRV_REACHABLE,       /**< reporter reached it again */
	HA_EV_SRV_EXIT,            /**< its process exit (direct proof) */
	HA_EV_SRV_LEASE_EXPIRED,   /**< its etcd lease ran out (proof) */
	HA_EV_SRV_JOINED,          /**< a run started (he_incarnation) */
	HA_EV_DEV_IOERR,           /**< he_count I/O errors on a device */
	HA_EV_DEV_FAILED,          /**< the device's store marked it failed */
	HA_EV_OP_FAIL,             /**< operator: fail the device/server */
	HA_EV_OP_REPLACE,          /**< operator: the device was replaced */
	HA_EV_OP_DRAIN,            /**< operator: move everything off */
	HA_EV_OP_REMOVE,           /**< operator: drop a drained server */
	HA_EV_OP_ADD,              /**< operator: a server joins */
	HA_EV_OP_THAW,             /**< operator: unfreeze the map */
	HA_EV_JOB_DONE,            /**< a job ended well (he_job) */
	HA_EV_JOB_FAILED,          /**< a job ended badly (he_job) */
	/** The target (its own reporter) serves nothing of its home, which
	 *  another server acts for, and its copy of the home's metadata is
	 *  in sync with the acting server's (he_incarnation its run): the
	 *  home may move back to it (analyzer rule home). */
	HA_EV_HOME_READY,
	/** The reporter, acting for the target's home, froze it for a
	 *  handback (its snapshot taken, updates refused until the map moves
	 *  the home): the analyzer cancels the handback when the target
	 *  cannot take it (analyzer rule home). */
	HA_EV_HOME_FROZEN,
	/** The reporter, serving the target's home (the home itself or the
	 *  server acting for it), recorded the home's standbys in sync:
	 *  he_insync (docs/cluster.md "The catch-up").  The analyzer moves
	 *  a home whose server died to one of them first (rule home). */
	HA_EV_HOME_INSYNC,
	/** The target (its own reporter) is stopping cleanly (SIGTERM, its
	 *  requests drained, its lease given back next): down by direct
	 *  proof like SRV_EXIT, but a planned stop, not a down episode of
	 *  the flapping rule (a supervisor's or an operator's restarts never
	 *  quarantine a server; a crash, a lease that ran out or peers'
	 *  reports still count). */
	HA_EV_SRV_STOPPED,
	HA_EV_KIND_NR
};

/** One reported event.  he_seq orders events (etcd's key order). */
struct ha_event {
	uint64_t he_seq;
	uint64_t he_time_ms;     /**< wall-clock ms when reported */
	enum ha_ev_kind he_kind;
	char he_reporter[HA_NAME_MAX + 1]; /**< server or "operator" */
	char he_target[HA_NAME_MAX + 1];   /**< the server */
	char he_dev[HA_NAME_MAX + 1];      /**< a device of it, or "" */
	uint64_t he_incarnation; /**< the target's run this is about, 0 */
	uint32_t he_count;       /**< DEV_IOERR: errors counted */
	uint64_t he_job;         /**< JOB_*: the job's id */
	/** HOME_READY, HOME_FROZEN: the home's hs_acting_epoch under which
	 *  the handed-back copy was taken (0: unknown, an older server) */
	uint64_t he_epoch;
	/** HOME_INSYNC: the standbys in sync, bit i = the map's server i
	 *  (0: none); 0 for every other kind */
	uint64_t he_insync;
};

/** What a decision does. */
enum ha_dec_kind {
	HA_DEC_SET_STATE = 0, /**< target (server or device) to hd_state */
	HA_DEC_JOB_REPAIR,    /**< rebuild the target's units elsewhere */
	HA_DEC_JOB_REBALANCE, /**< move units back onto the target */
	HA_DEC_JOB_PAUSE,     /**< pause job hd_job */
	HA_DEC_JOB_ABORT,     /**< abort job hd_job */
	HA_DEC_FREEZE,        /**< freeze the map, alert (hd_reason) */
	HA_DEC_THAW,          /**< unfreeze the map */
	HA_DEC_ALERT,         /**< tell the operator; change nothing */
	/** The home of hd_target is served by hd_acting from now on (the
	 *  target itself: handed back), with takeover incarnation
	 *  hd_incarnation. */
	HA_DEC_HOME_MOVE,
	HA_DEC_KIND_NR
};

/** One decision of the analyzer. */
struct ha_decision {
	uint64_t hd_seq;
	uint64_t hd_time_ms;
	enum ha_dec_kind hd_kind;
	char hd_target[HA_NAME_MAX + 1];
	char hd_dev[HA_NAME_MAX + 1];
	enum ha_state hd_state;  /**< SET_STATE: the new state */
	uint64_t hd_job;         /**< JOB_*: the job's id */
	char hd_rule[HA_NAME_MAX + 1];    /**< the rule that took it */
	char hd_reason[HA_TEXT_MAX + 1];  /**< why, in a sentence */
	char hd_acting[HA_NAME_MAX + 1];  /**< HOME_MOVE: the new server */
	uint64_t hd_incarnation;          /**< HOME_MOVE: takeover run */
};

const char *ha_ev_kind_name(enum ha_ev_kind k);
int ha_ev_kind_parse(const char *name);
const char *ha_dec_kind_name(enum ha_dec_kind k);
int ha_dec_kind_parse(const char *name);

#endif /* STRATA_HA_HA_H */
