/*
 * srv_ha_internal.h — the HA agent's state, shared by its files:
 * srv_ha.c (map, gate, lease, probes, the HA opcode) and ha_lead.c (the
 * analyzer's leader).  Not a contract: see srv_ha.h.
 */
#ifndef STRATA_HA_SRV_HA_INTERNAL_H
#define STRATA_HA_SRV_HA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ha/analyzer.h"
#include "ha/etcd.h"
#include "ha/ha.h"

struct srv;
struct peers;
struct lead_job;

/* The agent's step: map poll, leader work (ms). */
#define HA_TICK_MS 250u
/* How often a server looks again, between map changes, for images it
 * failed with a server the map has back in service (images_back_step():
 * a failing request of a job that ended after the server's return). */
#define HA_IMAGES_BACK_MS 5000u
/* The lease thread's step (ms): a renewal is due every third of the TTL
 * (at least 2 s), and a lapse is noticed within this. */
#define HA_LEASE_TICK_MS 100u
/* The agent's threads: lease, probes, map and leader. */
#define HA_THREADS 3u
/* A probe round to every other server (ms), and its call timeout. */
#define HA_PROBE_MS 1000u
/* A run whose home another server took over while it ran runs again from
 * its start once the map has it ONLINE (the handback is made at a start:
 * srv_home.h); a run whose start gave a handback up does so no earlier
 * than this long after its agent started and 4 lease TTLs (it tries
 * again so, at that pace). */
#define HA_HOME_RESTART_MIN_MS 10000u
#define HA_PROBE_CALL_MS 2000u
/* Requests to etcd: each attempt's timeout (ms). */
#define HA_ETCD_TIMEOUT_MS 2000u
/* The leader's start grace (ms): a server of the map in service whose
 * member key the leader never saw (after a whole-cluster stop, a server
 * that does not come back) is taken as gone, its run the event log shows
 * as ended, once the leader has led this long: a server opening a large
 * store registers well within it.  cluster.ha_start_grace overrides. */
#define HA_START_GRACE_MS 300000u
#define HA_START_GRACE_TEST_MS 20000u
/* Events the leader keeps in its window (the analyzer's input). */
#define HA_WINDOW_MAX 1024u
/* A catch-up (peers_epoch_adopt(..., true)) waits at most this long for
 * the agent to read a newer map (ms). */
#define HA_CATCHUP_MS 3000u

struct srv_ha {
	struct srv *ha_srv;
	const char *ha_name;          /* this server's name */
	struct etcd *ha_etcd;
	struct ha_rules ha_rules;
	uint32_t ha_lease_ttl_s;      /* asked for */
	uint32_t ha_lease_granted_s;  /* etcd's */
	/* the map (under ha_lock) and its etcd revision */
	pthread_mutex_t ha_lock;
	pthread_cond_t ha_cond;       /* the map changed, or wake the agent */
	struct ha_map ha_map;
	int64_t ha_map_rev;
	_Atomic uint64_t ha_epoch;    /* ha_map.hm_epoch, for the gate */
	_Atomic uint64_t ha_want;     /* an epoch someone saw: load now */
	/* lease and fence */
	int64_t ha_lease;
	uint64_t ha_incarnation;
	_Atomic uint64_t ha_lease_ok_ms; /* last renewal that succeeded */
	_Atomic bool ha_fenced;
	/* probes: this server's view of the others (the agent's thread) */
	struct peers *ha_probe;
	bool ha_seen[HA_SERVERS_MAX];      /* looked at once */
	bool ha_seen_down[HA_SERVERS_MAX];
	/* this process saw server j's run stop answering (an UNREACHABLE it
	 * reported, not the silent first look; cleared by REACHABLE): the
	 * leader may then take the run the event log shows for it as the
	 * one that died (ha_lead.c lapsed_members()) */
	_Atomic bool ha_probe_fell[HA_SERVERS_MAX];
	uint64_t ha_dev_errors[HA_DEVS_MAX];
	bool ha_dev_failed[HA_DEVS_MAX];
	/* leadership (the agent's thread) */
	_Atomic bool ha_leader;
	uint64_t ha_ev_next;          /* the next event seq to read */
	struct ha_event *ha_window;   /* 2 x HA_WINDOW_MAX, seq order;
				       * pruned to HA_WINDOW_MAX each step */
	uint32_t ha_nr_window;
	uint64_t ha_next_deadline;    /* ms: decide again then */
	uint64_t ha_decisions;        /* taken by this agent (counter) */
	uint64_t ha_lead_since;       /* ms: leader since (0: not) */
	/* each server's run as the event log tells it (window_add(): its
	 * last SRV_JOINED, 0 once an exit or lease expiry of that run is
	 * logged), by its index in the cluster file: the run a member key
	 * absent since this leadership began belonged to */
	uint64_t ha_run_inc[HA_SERVERS_MAX];
	/* lapsed_members(), by map index: the run each server's key showed
	 * this leadership (reset with it), and the run last reported + 1 */
	uint64_t ha_lapse_inc[HA_SERVERS_MAX];
	uint64_t ha_lapse_said[HA_SERVERS_MAX];
	/* ms: how long a leader waits for a server of the map in service
	 * whose member key it never saw before it takes the server as gone
	 * (cluster.ha_start_grace; ha_start_grace_ms()) */
	uint64_t ha_start_grace_ms;
	/* the jobs this agent runs as the leader (ha_lead.c; ha_jobs_lock) */
	pthread_mutex_t ha_jobs_lock;
	pthread_cond_t ha_jobs_cond;  /* a job ended */
	struct lead_job *ha_jobs;
	bool ha_adopt_due;            /* new leader: adopt the map's jobs */
	/* homes (srv_home.h): taken over, acted for; the map thread's */
	struct srv_home *ha_home;
	uint64_t ha_home_epoch;       /* the map's epoch it followed, 0 */
	bool ha_gone[HA_SERVERS_MAX]; /* marked gone in s_peers (map_gone) */
	/* images_back_step(): the epoch and ha_mono_ms() of its last look,
	 * and the thread that makes it (images_back_main(): store writes
	 * off the map's thread), started and not joined yet */
	uint64_t ha_imgback_epoch;
	uint64_t ha_imgback_ms;
	pthread_t ha_imgback_thread;
	bool ha_imgback_on;
	uint64_t ha_start_ms;         /* ha_mono_ms() at the agent's start */
	bool ha_restart_asked;        /* srv_restart() called */
	/* the threads: the lease's, the probes', the map's and leader's */
	pthread_t ha_thread[HA_THREADS];
	uint32_t ha_nr_threads;
	atomic_bool ha_stop;
};

/* Take m (read or written at etcd revision rev) as the agent's map: the
 * process acts under its epoch from now on (srv_ha.c). */
void ha_map_take(struct srv_ha *a, const struct ha_map *m, int64_t rev);
/* Wall-clock milliseconds (events and states carry them). */
uint64_t ha_now_ms(void);
/* Monotonic milliseconds (leases, deadlines). */
uint64_t ha_mono_ms(void);
/* Append ev (its he_time_ms, he_reporter filled here when 0 / "") to the
 * events log.  0 or an error (logged by the caller). */
int ha_report(struct srv_ha *a, struct ha_event *ev);
/* The leader's step (ha_lead.c): read new events, look for lapsed
 * members, decide, apply.  now is ha_now_ms(). */
void ha_lead_step(struct srv_ha *a, uint64_t now);
/* Leadership lost or given up: forget the window (ha_lead.c); the jobs
 * this agent runs stop at their next check (a new leader adopts them). */
void ha_lead_drop(struct srv_ha *a);
/* The agent stops: its jobs stop (their calls fail: peers_calls_stop() on
 * the agent's table) and are waited for, at most wait_ms.  true when none
 * runs any more (the table may be destroyed), false otherwise. */
bool ha_lead_jobs_stop(struct srv_ha *a, uint32_t wait_ms);
/* The analyzer's rules of the cluster file (cluster.ha_rules: default or
 * test presets; cluster.ha_down_out overrides the delay). */
struct clu_conf;
void ha_rules_from_conf(struct ha_rules *r, const struct clu_conf *c);
/* The leader's start grace (ms) of the cluster file: cluster.ha_start_grace,
 * else HA_START_GRACE_MS, or HA_START_GRACE_TEST_MS with the test presets. */
uint64_t ha_start_grace_ms(const struct clu_conf *c);

#endif /* STRATA_HA_SRV_HA_INTERNAL_H */
