/*
 * srv_ha.c — the HA agent of a strata-server (srv_ha.h): the map and its
 * epoch, the request gate, the membership lease and the fence, the probes
 * that report events, and the HA opcode.  The analyzer's leader is in
 * ha_lead.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/msg.h"
#include "core/server/peers.h"
#include "core/server/srv_internal.h"
#include "ha/ha.pb-c.h"
#include "ha/ha_json.h"
#include "ha/map.h"
#include "ha/srv_ha.h"
#include "ha/srv_ha_internal.h"
#include "ha/srv_home.h"

/* The process's agent: the epoch is the process's, and the catch-up
 * function of peers.h takes no argument. */
static struct srv_ha *ha_agent;

uint64_t ha_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t ha_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------- the map */

/* Take m (read at rev) as the current map: the process acts under its
 * epoch from now on. */
void ha_map_take(struct srv_ha *a, const struct ha_map *m, int64_t rev)
{
	uint64_t old;

	pthread_mutex_lock(&a->ha_lock);
	old = a->ha_map.hm_epoch;
	if (m->hm_epoch >= old) {
		a->ha_map = *m;
		a->ha_map_rev = rev;
		atomic_store(&a->ha_epoch, m->hm_epoch);
		rpc_epoch_set(m->hm_epoch);
	}
	pthread_cond_broadcast(&a->ha_cond);
	pthread_mutex_unlock(&a->ha_lock);
	if (m->hm_epoch > old)
		LOG_INFO("server %s: cluster map epoch %" PRIu64 " (was %"
			 PRIu64 ")", a->ha_name, m->hm_epoch, old);
}

/* Read the map again if its revision changed.  0 or an error. */
static int map_poll(struct srv_ha *a)
{
	struct ha_map *m = malloc(sizeof *m);
	int64_t rev;
	int rc;

	if (m == NULL)
		return err_set(-ENOMEM, "server %s: map", a->ha_name);
	rc = ha_map_load(a->ha_etcd, a->ha_map.hm_cluster, m, &rev);
	if (rc == 0 && rev != a->ha_map_rev)
		ha_map_take(a, m, rev);
	free(m);
	return rc;
}

/* peers.h catch-up: a peer answered with a newer epoch.  Ask the agent to
 * load the map now and, with wait, wait (bounded) until the process acts
 * under epoch. */
static bool ha_catchup(uint64_t epoch, bool wait)
{
	struct srv_ha *a = ha_agent;
	uint64_t until = ha_mono_ms() + HA_CATCHUP_MS;
	bool ok;

	if (a == NULL)
		return false;
	pthread_mutex_lock(&a->ha_lock);
	if (atomic_load(&a->ha_want) < epoch)
		atomic_store(&a->ha_want, epoch);
	pthread_cond_broadcast(&a->ha_cond);
	while (wait && atomic_load(&a->ha_epoch) < epoch &&
	       ha_mono_ms() < until && !atomic_load(&a->ha_stop)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&a->ha_cond, &a->ha_lock, &ts);
	}
	ok = atomic_load(&a->ha_epoch) >= epoch;
	pthread_mutex_unlock(&a->ha_lock);
	return wait && ok;
}

/* ------------------------------------------------------------ the gate */

static bool gate_exempt(uint32_t op)
{
	return op == HA_OP || op == SOP_STATUS || op == SOP_CONF_GET ||
	       op == SOP_METRICS || op < RPC_OP_USER_MIN;
}

/* Is the server fenced now: no lease renewal for a whole TTL since the
 * last one that succeeded (counted from before it was sent)?  Computed
 * here from the clock, not left to the agent's thread: after a freeze
 * (SIGSTOP, a long stall) the handler threads may run before the agent
 * does, and must not acknowledge anything under a lease that lapsed. */
static bool ha_is_fenced(struct srv_ha *a)
{
	return atomic_load(&a->ha_fenced) ||
	       ha_mono_ms() > atomic_load(&a->ha_lease_ok_ms) +
			   (uint64_t)a->ha_lease_granted_s * 1000;
}

static int ha_gate(void *arg, uint32_t op, uint64_t epoch, char *msg,
		   size_t size)
{
	struct srv_ha *a = arg;
	uint64_t own = atomic_load(&a->ha_epoch);

	if (gate_exempt(op))
		return 0;
	if (ha_is_fenced(a)) {
		snprintf(msg, size, "server %s is fenced: its membership lease "
			 "was not renewed for over %u s (etcd unreachable); it "
			 "acknowledges nothing until it is", a->ha_name,
			 a->ha_lease_granted_s);
		return -EHOSTDOWN;
	}
	if (epoch < own) {
		snprintf(msg, size, "cluster map epoch %" PRIu64 " of the "
			 "request is older than server %s's %" PRIu64, epoch,
			 a->ha_name, own);
		return -EREMCHG;
	}
	if (epoch > own) {
		ha_catchup(epoch, false);
		snprintf(msg, size, "cluster map epoch %" PRIu64 " of the "
			 "request is newer than server %s's %" PRIu64 ": it "
			 "is reading the map", epoch, a->ha_name, own);
		return -EBUSY;
	}
	return 0;
}

/* ------------------------------------------------------------- events */

int ha_report(struct srv_ha *a, struct ha_event *ev)
{
	char json[2048];
	int rc;

	if (ev->he_time_ms == 0)
		ev->he_time_ms = ha_now_ms();
	if (ev->he_reporter[0] == '\0')
		snprintf(ev->he_reporter, sizeof ev->he_reporter, "%s",
			 a->ha_name);
	rc = ha_event_format(ev, json, sizeof json);
	if (rc >= 0)
		rc = ha_log_append(a->ha_etcd, a->ha_map.hm_cluster, "events",
				   json, &ev->he_seq);
	if (rc == 0)
		LOG_INFO("server %s: event %" PRIu64 " %s %s%s%s reported",
			 a->ha_name, ev->he_seq, ha_ev_kind_name(ev->he_kind),
			 ev->he_target, ev->he_dev[0] != '\0' ? ":" : "",
			 ev->he_dev);
	return rc;
}

/* Report an event about server j (or one of its devices, dev != NULL). */
static void report_full(struct srv_ha *a, enum ha_ev_kind kind, uint32_t j,
			const char *dev, uint64_t inc, uint32_t count,
			uint64_t epoch)
{
	struct ha_event ev;

	memset(&ev, 0, sizeof ev);
	ev.he_epoch = epoch;
	ev.he_kind = kind;
	snprintf(ev.he_target, sizeof ev.he_target, "%s",
		 a->ha_srv->s_conf->cc_servers[j].cs_name);
	if (dev != NULL)
		snprintf(ev.he_dev, sizeof ev.he_dev, "%s", dev);
	ev.he_incarnation = inc;
	ev.he_count = count;
	if (ha_report(a, &ev) != 0)
		LOG_WARNING("server %s: event %s about %s not reported: %s",
			    a->ha_name, ha_ev_kind_name(kind), ev.he_target,
			    err_msg());
}

static void report(struct srv_ha *a, enum ha_ev_kind kind, uint32_t j,
		   const char *dev, uint64_t inc, uint32_t count)
{
	report_full(a, kind, j, dev, inc, count, 0);
}

/* A handback's event (HOME_READY, HOME_FROZEN) about home j: with the
 * acting epoch of the copy. */
static void report_ep(struct srv_ha *a, enum ha_ev_kind kind, uint32_t j,
		      uint64_t inc, uint64_t epoch)
{
	report_full(a, kind, j, NULL, inc, 0, epoch);
}

/* The incarnation of server j's run as its membership record says (0:
 * not registered now, or unknown): events about it carry it, so that the
 * analyzer drops those about an earlier run. */
static uint64_t member_inc(struct srv_ha *a, uint32_t j)
{
	struct ha_member mb;

	if (ha_member_get(a->ha_etcd, a->ha_map.hm_cluster,
			  a->ha_srv->s_conf->cc_servers[j].cs_name, &mb) != 0)
		return 0;
	return mb.hmb_incarnation;
}

/* One probe round: every other server, a no-op call; a change of its
 * answering is an event. */
static void probe_round(struct srv_ha *a)
{
	struct srv *s = a->ha_srv;
	uint32_t n = s->s_conf->cc_nr_servers;

	for (uint32_t j = 0; j < n && !atomic_load(&a->ha_stop); j++) {
		struct rpc_result res;
		bool down;
		int rc;

		if (j == s->s_self)
			continue;
		rc = peers_call_ms(a->ha_probe, j, RPC_OP_NOOP, NULL, 0, NULL,
				   HA_PROBE_CALL_MS, &res);
		free(res.rr_body);
		down = rc != 0 && peers_down(a->ha_probe, j);
		/* the first look sets what this server saw, silently: a peer
		 * not up yet at a cluster's start is no event (one that never
		 * comes is seen by the leader: its member key stays absent) */
		if (!a->ha_seen[j]) {
			a->ha_seen[j] = true;
			a->ha_seen_down[j] = down;
			continue;
		}
		if (down == a->ha_seen_down[j])
			continue;
		a->ha_seen_down[j] = down;
		atomic_store(&a->ha_probe_fell[j], down);
		report(a, down ? HA_EV_SRV_UNREACHABLE : HA_EV_SRV_REACHABLE,
		       j, NULL, member_inc(a, j), 0);
	}
}

/* This server's own devices (the k-th device of its store that is not
 * another server's slice is device k of it in the map): a device the
 * engine failed, and new I/O errors, are events. */
static void dev_round(struct srv_ha *a)
{
	struct srv *s = a->ha_srv;
	uint32_t n = eng_dev_nr(s->s_eng), k = 0;
	const struct ha_srv *me = NULL;

	pthread_mutex_lock(&a->ha_lock);
	for (uint32_t j = 0; j < a->ha_map.hm_nr_servers; j++)
		if (strcmp(a->ha_map.hm_servers[j].hs_name, a->ha_name) == 0)
			me = &a->ha_map.hm_servers[j];
	pthread_mutex_unlock(&a->ha_lock);
	for (uint32_t i = 0; i < n && k < HA_DEVS_MAX; i++) {
		struct st_dev_info di;
		char name[HA_NAME_MAX + 1];

		eng_dev_info(s->s_eng, i, &di);
		if (strcmp(di.di_driver, ENG_REMOTE_DRIVER) == 0)
			continue;
		if (me != NULL && k < me->hs_nr_devs)
			snprintf(name, sizeof name, "%s",
				 me->hs_devs[k].hd_name);
		else
			snprintf(name, sizeof name, "d%u", k);
		if (di.di_errors > a->ha_dev_errors[k]) {
			report(a, HA_EV_DEV_IOERR, s->s_self, name, 0,
			       (uint32_t)(di.di_errors - a->ha_dev_errors[k]));
			a->ha_dev_errors[k] = di.di_errors;
		}
		if (di.di_state == ED_FAILED && !a->ha_dev_failed[k])
			report(a, HA_EV_DEV_FAILED, s->s_self, name, 0, 0);
		a->ha_dev_failed[k] = di.di_state != ED_ONLINE;
		k++;
	}
}

/* ---------------------------------------------------- lease and fence */

/* Register this server under a new lease; *sent the monotonic time
 * before the grant was asked (the lease runs no earlier than from then). */
static int lease_begin(struct srv_ha *a, uint64_t *sent)
{
	struct srv *s = a->ha_srv;
	struct ha_member mb;
	int rc;

	*sent = ha_mono_ms();
	rc = etcd_lease_grant(a->ha_etcd, a->ha_lease_ttl_s, &a->ha_lease,
			      &a->ha_lease_granted_s);
	if (rc != 0)
		return rc;
	memset(&mb, 0, sizeof mb);
	snprintf(mb.hmb_name, sizeof mb.hmb_name, "%s", a->ha_name);
	snprintf(mb.hmb_addr, sizeof mb.hmb_addr, "%s", s->s_me->cs_addr);
	mb.hmb_port = s->s_me->cs_port;
	mb.hmb_incarnation = a->ha_incarnation;
	return ha_member_register(a->ha_etcd, a->ha_map.hm_cluster, &mb,
				  a->ha_lease);
}

/* Mark the server fenced (ha_is_fenced() already says so from the clock,
 * or etcd expired its lease), logged once per lapse. */
static void fence_mark(struct srv_ha *a, uint64_t ttl_ms)
{
	if (!atomic_exchange(&a->ha_fenced, true))
		LOG_WARNING("server %s: fenced: membership lease not renewed "
			    "for %" PRIu64 " ms (etcd unreachable, or this "
			    "process did not run)", a->ha_name, ttl_ms);
}

/*
 * Renew the lease (every third of its TTL).  The fence (ha_is_fenced())
 * follows from the time of the last renewal that succeeded, taken before
 * its request was sent, so the server fences itself no later than etcd
 * may expire its lease.  A renewal after the lease lapsed (or a new
 * lease, when etcd expired it: the server joins again, an event) lifts
 * the fence only once the map was read again, so that the server serves
 * under the current epoch.
 */
static void lease_step(struct srv_ha *a, uint64_t now, uint64_t *next)
{
	uint64_t ttl_ms = (uint64_t)a->ha_lease_granted_s * 1000, sent;
	bool lapsed = ha_is_fenced(a), expired, joined = false;
	int rc;

	if (lapsed)
		fence_mark(a, ttl_ms);
	if (now < *next && !lapsed)
		return;
	*next = now + ttl_ms / 3;
	sent = ha_mono_ms();
	rc = etcd_lease_keepalive(a->ha_etcd, a->ha_lease, NULL);
	expired = rc == -ENOENT;
	if (expired) {
		LOG_WARNING("server %s: membership lease expired; joining "
			    "again", a->ha_name);
		rc = lease_begin(a, &sent);
		joined = rc == 0;
	}
	/* The call may have outlived the lease (this process stopped during
	 * it, etcd slow to answer): fenced meanwhile, as a lease etcd
	 * expired; the fence is lifted only once the map was read again. */
	if (expired || ha_is_fenced(a))
		fence_mark(a, ttl_ms);
	if (rc != 0)
		return;
	if (atomic_load(&a->ha_fenced) && map_poll(a) != 0)
		return;
	atomic_store(&a->ha_lease_ok_ms, sent);
	if (atomic_exchange(&a->ha_fenced, false))
		LOG_WARNING("server %s: lease renewed and map read (epoch %"
			    PRIu64 "): no longer fenced", a->ha_name,
			    atomic_load(&a->ha_epoch));
	if (joined)
		report(a, HA_EV_SRV_JOINED, a->ha_srv->s_self, NULL,
		       a->ha_incarnation, 0);
}

/* --------------------------------------------------------- the thread */

/* Wait up to ms, or until woken (a newer epoch seen, the stop). */
static void ha_wait(struct srv_ha *a, uint64_t ms)
{
	struct timespec ts;

	pthread_mutex_lock(&a->ha_lock);
	if (!atomic_load(&a->ha_stop) &&
	    atomic_load(&a->ha_want) <= atomic_load(&a->ha_epoch)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)ms * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&a->ha_cond, &a->ha_lock, &ts);
	}
	pthread_mutex_unlock(&a->ha_lock);
}

/* The lease's thread: nothing else may hold up a renewal (a probe to a
 * dead server waits out its call timeout). */
static void *lease_main(void *arg)
{
	struct srv_ha *a = arg;
	uint64_t next = 0;

	while (!atomic_load(&a->ha_stop)) {
		lease_step(a, ha_mono_ms(), &next);
		ha_wait(a, HA_LEASE_TICK_MS);
	}
	return NULL;
}

/* The probes' thread: the other servers, then this one's devices. */
static void *probe_main(void *arg)
{
	struct srv_ha *a = arg;

	while (!atomic_load(&a->ha_stop)) {
		uint64_t t0 = ha_mono_ms(), took;

		probe_round(a);
		dev_round(a);
		took = ha_mono_ms() - t0;
		if (took < HA_PROBE_MS)
			ha_wait(a, HA_PROBE_MS - took);
	}
	return NULL;
}

/*
 * The servers map m has out of service, marked gone in this server's peer
 * table (peers_set_gone(): the calls waiting on one fail now, none is sent
 * until the map has it back), as a client does (clovis/cli_cluster.c
 * clu_map_gone(), the same rule): neither ONLINE nor REBALANCING nor
 * QUARANTINED, in a map with replicated homes (another server then serves
 * its home).  Without it, the server's own calls to a dead server (index
 * copies of a dtx COMMIT, unit I/O on its devices, replication) each
 * waited out a call or connect timeout (docs/ha.md "Detection").
 */
static void map_gone(struct srv_ha *a, const struct ha_map *m)
{
	struct srv *s = a->ha_srv;
	bool lost[CLU_SERVERS_MAX] = {false};

	for (uint32_t i = 0; i < m->hm_nr_servers && i < HA_SERVERS_MAX &&
	     i < s->s_conf->cc_nr_servers; i++) {
		enum ha_state st = m->hm_servers[i].hs_state;
		bool out = i != s->s_self && ha_srv_out(m, i);

		if (out && !a->ha_gone[i]) {
			char why[160];

			snprintf(why, sizeof why, "%s in the cluster map "
				 "(epoch %" PRIu64 ")", ha_state_name(st),
				 m->hm_epoch);
			peers_set_gone(s->s_peers, i, why);
		} else if (!out && a->ha_gone[i]) {
			peers_clear_gone(s->s_peers, i);
		}
		a->ha_gone[i] = out;
		lost[i] = ha_srv_lost(m, i);
	}
	/* replacement standbys for those lost for good (srv_repl.h) */
	if (m->hm_nr_servers == s->s_conf->cc_nr_servers)
		srv_repl_lost_set(s, lost);
}

/* Follow the map's homes (srv_home.h) when its epoch changed or the last
 * step left something to do; its servers out of service (map_gone()). */
static void home_step(struct srv_ha *a)
{
	struct ha_map *m;

	if (a->ha_home == NULL ||
	    atomic_load(&a->ha_epoch) == a->ha_home_epoch)
		return;
	m = malloc(sizeof *m);
	if (m == NULL)
		return;
	pthread_mutex_lock(&a->ha_lock);
	*m = a->ha_map;
	pthread_mutex_unlock(&a->ha_lock);
	map_gone(a, m);
	if (srv_home_sync(a->ha_home, m))
		a->ha_home_epoch = m->hm_epoch;
	free(m);
}

/*
 * Images back with their server (docs/cluster.md "Images back with their
 * server"), from the map: at each map change, and every HA_IMAGES_BACK_MS
 * between, every device the map has ONLINE of another server ONLINE gets
 * back the images this server's engines failed or repaired only for that
 * server's loss (srv_dev_images_back()).  Each server applies the map
 * itself: a request sent once by the leader of the moment could be lost
 * (a leader change, a failed call, a server out of service then), and a
 * server lost again meanwhile is no longer ONLINE, so nothing comes back
 * for it late.  The look runs on a thread of its own (images_back_main()):
 * the state changes are store commits, which may wait for the standbys,
 * and a standby's answer may wait for this (the map's) thread to read a
 * newer map.
 */
static void *images_back_main(void *arg)
{
	struct srv_ha *a = arg;
	struct srv *s = a->ha_srv;
	struct ha_map *m = malloc(sizeof *m);

	srv_thread_enter();
	if (m != NULL) {
		pthread_mutex_lock(&a->ha_lock);
		*m = a->ha_map;
		pthread_mutex_unlock(&a->ha_lock);
	}
	for (uint32_t i = 0; m != NULL && i < m->hm_nr_servers &&
	     i < HA_SERVERS_MAX && i < s->s_conf->cc_nr_servers &&
	     !atomic_load(&a->ha_stop); i++) {
		const struct ha_srv *sv = &m->hm_servers[i];

		if (i == s->s_self || sv->hs_state != HA_ONLINE)
			continue;
		for (uint32_t k = 0; k < sv->hs_nr_devs && k < HA_DEVS_MAX;
		     k++)
			if (sv->hs_devs[k].hd_state == HA_ONLINE)
				srv_dev_images_back(s, i, k, m->hm_epoch);
	}
	free(m);
	return NULL;
}

static void images_back_step(struct srv_ha *a)
{
	uint64_t now = ha_mono_ms(), epoch = atomic_load(&a->ha_epoch);

	/* not before this server follows the map's homes (home_step()):
	 * until then its routing does not say whether it serves its own;
	 * nor while the last look runs (joined here once it ended) */
	if ((a->ha_home != NULL && a->ha_home_epoch == 0) ||
	    (epoch == a->ha_imgback_epoch &&
	     now - a->ha_imgback_ms < HA_IMAGES_BACK_MS) ||
	    (a->ha_imgback_on &&
	     pthread_tryjoin_np(a->ha_imgback_thread, NULL) != 0))
		return;
	a->ha_imgback_epoch = epoch;
	a->ha_imgback_ms = now;
	a->ha_imgback_on = pthread_create(&a->ha_imgback_thread, NULL,
					  images_back_main, a) == 0;
}

/*
 * A run whose home another server took over while it ran (it was stopped,
 * cut off, or declared down by an operator) gets it back only through the
 * handback made at a start (srv_home.h): once the analyzer has it ONLINE
 * again, not fenced, it asks to run again from its start
 * (srv_restart()).  A run that made the handback at its start waits for
 * the map instead; a QUARANTINED or FAILED one waits for the operator or
 * the analyzer; one whose start gave a handback up (srv_home_gave_up())
 * runs again no sooner than min_ms into its run.
 */
static void home_restart_check(struct srv_ha *a)
{
	uint32_t self = a->ha_srv->s_self;
	uint64_t min_ms = 4000ull * a->ha_lease_granted_s;
	enum ha_state st = HA_FAILED;
	char why[160] = "";
	int acting = -1;

	bool inst = srv_home_installed();
	uint64_t inst_ep = srv_home_installed_epoch();

	if (a->ha_restart_asked || a->ha_home == NULL || ha_is_fenced(a) ||
	    (inst && inst_ep == 0))
		return;
	if (min_ms < HA_HOME_RESTART_MIN_MS)
		min_ms = HA_HOME_RESTART_MIN_MS;
	/* paced only after a handback given up at this run's start, or one
	 * the analyzer cancelled (its copy is stale: a new one is taken at
	 * a new start); a run whose home moved away as it started (the
	 * analyzer's move decided on its stop, taken while it started
	 * again) runs again at once */
	if ((srv_home_gave_up() || inst) &&
	    ha_mono_ms() - a->ha_start_ms < min_ms)
		return;
	pthread_mutex_lock(&a->ha_lock);
	if (a->ha_map.hm_meta_replicas >= 2 &&
	    self < a->ha_map.hm_nr_servers) {
		acting = ha_home_acting(&a->ha_map, self);
		st = a->ha_map.hm_servers[self].hs_state;
		/* a run that made the handback waits for the move back,
		 * unless the map gave the home to the acting server again
		 * at another epoch (the handback cancelled) */
		if (inst && a->ha_map.hm_servers[self].hs_acting_epoch ==
		    inst_ep)
			acting = -1;
		if (acting >= 0 && (uint32_t)acting != self)
			snprintf(why, sizeof why, "its home is served by %s "
				 "since map epoch %" PRIu64 " and the map has "
				 "it %s again: the handback is made at a start",
				 a->ha_map.hm_servers[acting].hs_name,
				 a->ha_map.hm_servers[self].hs_acting_epoch,
				 ha_state_name(st));
	}
	pthread_mutex_unlock(&a->ha_lock);
	/* ONLINE only: a rebalance job (REBALANCING) skips this server's
	 * walk while its home is served elsewhere and ends first; a
	 * restart under it would leave the job's call waiting on the old
	 * process */
	if (acting < 0 || (uint32_t)acting == self || st != HA_ONLINE)
		return;
	a->ha_restart_asked = true;
	if (srv_restart(a->ha_srv, why) != 0)
		LOG_WARNING("server %s: %s", a->ha_name, err_msg());
}

/*
 * A handback asked of this server for home h whose server the map has
 * lost for good or kept out (OUT, REPAIRING, QUARANTINED) is refused with
 * -ENOTRECOVERABLE (no file or transport error on that path gives it),
 * before any freeze: the analyzer moves a home back only to a server
 * that is up, and such a server is up again only after its repair
 * job or the flap period, so the freeze would only refuse the home's
 * updates (-EBUSY) until the analyzer cancels it, and hold the repair
 * walk of the home meanwhile.  The server starts without its home and
 * runs again from its start once the map has it up (home_restart_check()).
 * A map newer than this server's is the analyzer's to catch
 * (ha/analyzer.c home_step()).
 */
static int handback_refused(struct srv_ha *a, uint32_t h)
{
	enum ha_state st = HA_ONLINE;
	char name[HA_NAME_MAX + 1] = "";

	pthread_mutex_lock(&a->ha_lock);
	if (h < a->ha_map.hm_nr_servers) {
		st = a->ha_map.hm_servers[h].hs_state;
		snprintf(name, sizeof name, "%s",
			 a->ha_map.hm_servers[h].hs_name);
	}
	pthread_mutex_unlock(&a->ha_lock);
	if (st != HA_OUT && st != HA_REPAIRING && st != HA_QUARANTINED)
		return 0;
	return err_set(-ENOTRECOVERABLE, "server %s: handback of home %s "
		       "refused: the map has its server %s, and hands a home "
		       "back only to a server that is up (it starts without "
		       "its home and runs again from its start once the map "
		       "has it up)", a->ha_name, name, ha_state_name(st));
}

/* The map's and the leader's thread. */
static void *ha_main(void *arg)
{
	struct srv_ha *a = arg;

	while (!atomic_load(&a->ha_stop)) {
		int won;

		(void)map_poll(a);
		won = ha_is_fenced(a) ? 0 :
		      ha_leader_try(a->ha_etcd, a->ha_map.hm_cluster,
				    a->ha_name, a->ha_lease, NULL, 0);
		if (won == 1) {
			if (!atomic_exchange(&a->ha_leader, true))
				LOG_INFO("server %s: analyzer leader",
					 a->ha_name);
			ha_lead_step(a, ha_now_ms());
		} else if (atomic_exchange(&a->ha_leader, false)) {
			LOG_INFO("server %s: no longer the analyzer leader",
				 a->ha_name);
			ha_lead_drop(a);
		}
		home_step(a);
		images_back_step(a);
		home_restart_check(a);
		ha_wait(a, HA_TICK_MS);
	}
	return NULL;
}

/* ----------------------------------------------------- the HA opcode */

struct log_text {
	char *lt_buf;
	size_t lt_len;
	size_t lt_cap;
	bool lt_events;  /* events: each one's seq set from its key */
};

static int log_text_add(uint64_t seq, const char *text, void *arg)
{
	struct log_text *t = arg;
	char line[2048];
	const char *json = text;
	struct ha_event ev;
	size_t n;

	/* an event is stored before its seq is known: the key gives it */
	if (t->lt_events && ha_event_parse(text, &ev) == 0) {
		ev.he_seq = seq;
		if (ha_event_format(&ev, line, sizeof line) >= 0)
			json = line;
	}
	n = strlen(json);
	if (t->lt_len + n + 2 > t->lt_cap) {
		size_t cap = (t->lt_cap + n + 2) * 2;
		char *p = realloc(t->lt_buf, cap);

		if (p == NULL)
			return err_set(-ENOMEM, "HA log text");
		t->lt_buf = p;
		t->lt_cap = cap;
	}
	memcpy(t->lt_buf + t->lt_len, json, n);
	t->lt_len += n;
	t->lt_buf[t->lt_len++] = '\n';
	t->lt_buf[t->lt_len] = '\0';
	return 0;
}

/* The agent's state as JSON into *out (malloc'd). */
/* The jobs' progress (ha_lead.c job_progress): those whose id the map has
 * running (a server's or a device's job), as a JSON array. */
struct jobs_read {
	struct json_object *jr_arr;
	uint64_t jr_ids[2 * HA_SERVERS_MAX];
	uint32_t jr_nr;
};

static int jobs_one(const struct etcd_kv *kv, void *arg)
{
	struct jobs_read *jr = arg;
	struct json_object *o = json_tokener_parse(kv->ek_value), *id;
	bool running = false;

	if (o != NULL && json_object_object_get_ex(o, "id", &id))
		for (uint32_t i = 0; i < jr->jr_nr; i++)
			running |= (uint64_t)json_object_get_int64(id) ==
				   jr->jr_ids[i];
	if (running)
		json_object_array_add(jr->jr_arr, o);
	else
		json_object_put(o);
	return 0;
}

static int state_json(struct srv_ha *a, char **out)
{
	char leader[HA_NAME_MAX + 1] = "", prefix[300];
	uint64_t age = ha_mono_ms() - atomic_load(&a->ha_lease_ok_ms);
	struct jobs_read jr = {0};
	int rc = ha_leader_get(a->ha_etcd, a->ha_map.hm_cluster, leader,
			       sizeof leader);

	if (rc != 0 && rc != -ENOENT)
		return rc;
	jr.jr_arr = json_object_new_array();
	if (jr.jr_arr == NULL)
		return err_set(-ENOMEM, "HA state");
	pthread_mutex_lock(&a->ha_lock);
	for (uint32_t i = 0; i < a->ha_map.hm_nr_servers; i++) {
		const struct ha_srv *sv = &a->ha_map.hm_servers[i];

		if (sv->hs_job != 0 && jr.jr_nr < 2 * HA_SERVERS_MAX)
			jr.jr_ids[jr.jr_nr++] = sv->hs_job;
		for (uint32_t d = 0; d < sv->hs_nr_devs; d++)
			if (sv->hs_devs[d].hd_job != 0 &&
			    jr.jr_nr < 2 * HA_SERVERS_MAX)
				jr.jr_ids[jr.jr_nr++] = sv->hs_devs[d].hd_job;
	}
	pthread_mutex_unlock(&a->ha_lock);
	/* the progress is a nicety: an etcd error leaves the list empty */
	if (jr.jr_nr > 0)
		(void)etcd_get_prefix(a->ha_etcd, ha_key(prefix, sizeof prefix,
				      a->ha_map.hm_cluster, "jobs/"), 64,
				      jobs_one, &jr, NULL, NULL);
	if (asprintf(out, "{\"server\":\"%s\",\"epoch\":%" PRIu64 ","
		     "\"fenced\":%s,\"lease_ttl_s\":%u,\"lease_age_ms\":%"
		     PRIu64 ",\"leader\":\"%s\",\"decisions\":%" PRIu64
		     ",\"jobs\":%s}", a->ha_name, atomic_load(&a->ha_epoch),
		     ha_is_fenced(a) ? "true" : "false",
		     a->ha_lease_granted_s, age, leader,
		     a->ha_decisions, json_object_to_json_string_ext(jr.jr_arr,
		     JSON_C_TO_STRING_PLAIN)) < 0) {
		json_object_put(jr.jr_arr);
		return err_set(-ENOMEM, "HA state");
	}
	json_object_put(jr.jr_arr);
	return 0;
}

/* An operator's event (HAK_REPORT): checked, then appended. */
static int report_op(struct srv_ha *a, const HaReq *q)
{
	struct ha_event ev;
	char text[2048];
	int rc;

	if (q->text.len == 0 || q->text.len >= sizeof text)
		return err_set(-EINVAL, "HA report: an event of %zu bytes "
			       "(1..%zu)", q->text.len, sizeof text - 1);
	memcpy(text, q->text.data, q->text.len);
	text[q->text.len] = '\0';
	rc = ha_event_parse(text, &ev);
	if (rc != 0)
		return rc;
	if (ev.he_kind < HA_EV_OP_FAIL || ev.he_kind > HA_EV_OP_THAW)
		return err_set(-EINVAL, "HA report: event kind %s is not an "
			       "operator's request",
			       ha_ev_kind_name(ev.he_kind));
	/* about a server of the map (and one of its devices): a request
	 * about anything else would be kept and decide nothing */
	pthread_mutex_lock(&a->ha_lock);
	rc = ha_srv_index(&a->ha_map, ev.he_target);
	if (rc >= 0) {
		const struct ha_srv *hs = &a->ha_map.hm_servers[rc];

		rc = ev.he_dev[0] == '\0' ? 0 : -ENODEV;
		for (uint32_t k = 0; rc != 0 && k < hs->hs_nr_devs; k++)
			if (strcmp(hs->hs_devs[k].hd_name, ev.he_dev) == 0)
				rc = 0;
	}
	pthread_mutex_unlock(&a->ha_lock);
	if (rc == -ENOENT)
		return err_set(rc, "HA report %s: server '%s' is not in the "
			       "cluster map", ha_ev_kind_name(ev.he_kind),
			       ev.he_target);
	if (rc != 0)
		return err_set(rc, "HA report %s: server %s has no device "
			       "'%s' in the cluster map",
			       ha_ev_kind_name(ev.he_kind), ev.he_target,
			       ev.he_dev);
	snprintf(ev.he_reporter, sizeof ev.he_reporter, "operator");
	ev.he_time_ms = 0;
	return ha_report(a, &ev);
}

static void ha_handle(struct rpc_sreq *req, void *arg)
{
	struct srv_ha *a = arg;
	struct log_text t = {0};
	struct msg_buf b = {0};
	Reply rp = REPLY__INIT;
	const void *body;
	size_t len;
	HaReq *q;
	uint32_t kind;
	int rc = 0;

	body = rpc_sreq_body(req, &len);
	q = ha_req__unpack(NULL, len, body);
	if (q == NULL) {
		rpc_sreq_reply(req, -EPROTO, NULL, 0,
			       "HA request: not a HaReq");
		return;
	}
	kind = q->kind;
	switch (q->kind) {
	case HAK_MAP:
		pthread_mutex_lock(&a->ha_lock);
		rc = ha_map_to_json_view(&a->ha_map, &t.lt_buf);
		pthread_mutex_unlock(&a->ha_lock);
		break;
	case HAK_EVENTS:
	case HAK_DECISIONS:
		t.lt_events = q->kind == HAK_EVENTS;
		rc = ha_log_read(a->ha_etcd, a->ha_map.hm_cluster,
				 q->kind == HAK_EVENTS ? "events" : "decisions",
				 q->from, q->limit, log_text_add, &t, NULL);
		break;
	case HAK_REPORT:
		rc = report_op(a, q);
		break;
	case HAK_STATE:
		rc = state_json(a, &t.lt_buf);
		break;
	case HAK_HOME_SNAP: {
		uint64_t size = 0, seq = 0, ep = 0;
		bool newly = false;

		rc = handback_refused(a, q->limit);
		if (rc == 0)
			rc = srv_home_snap(a->ha_home, q->limit, &size, &seq,
					   &ep, &newly);
		rp.bytes = size;
		rp.seq = seq;
		rp.term = ep; /* the acting epoch of the copy */
		/* the analyzer cancels a handback its home cannot take */
		if (rc == 0 && newly)
			report_ep(a, HA_EV_HOME_FROZEN, q->limit,
				  0, ep);
		break;
	}
	case HAK_HOME_CHUNK: {
		size_t got = 0;

		t.lt_buf = malloc(HA_HOME_CHUNK);
		rc = t.lt_buf == NULL ? err_set(-ENOMEM, "HA chunk") :
		     srv_home_chunk(a->ha_home, q->limit, q->from, t.lt_buf,
				    HA_HOME_CHUNK, &got);
		if (rc == 0) {
			rp.text.data = (uint8_t *)t.lt_buf;
			rp.text.len = got;
			t.lt_len = got;
		}
		break;
	}
	case HAK_SHADOW_COPY: {
		uint64_t size = 0, seq = 0;

		rc = srv_home_shadow_copy(a->ha_home, q->limit, q->from, &size,
					  &seq);
		rp.bytes = size;
		rp.seq = seq;
		break;
	}
	case HAK_SHADOW_CHUNK: {
		size_t got = 0;

		t.lt_buf = malloc(HA_HOME_CHUNK);
		rc = t.lt_buf == NULL ? err_set(-ENOMEM, "HA chunk") :
		     srv_home_shadow_chunk(a->ha_home, q->limit, q->from,
					   t.lt_buf, HA_HOME_CHUNK, &got);
		if (rc == 0) {
			rp.text.data = (uint8_t *)t.lt_buf;
			rp.text.len = got;
			t.lt_len = got;
		}
		break;
	}
	default:
		rc = err_set(-EINVAL, "HA request: unknown kind %u", q->kind);
	}
	ha_req__free_unpacked(q, NULL);
	if (rc == 0 && t.lt_buf != NULL && kind != HAK_HOME_CHUNK &&
	    kind != HAK_SHADOW_CHUNK) {
		rp.text.data = (uint8_t *)t.lt_buf;
		rp.text.len = strlen(t.lt_buf);
	}
	if (rc == 0 && msg_pack(&rp.base, &b) != 0)
		rc = -ENOMEM;
	rpc_sreq_reply(req, rc, b.mb_p, b.mb_len, rc != 0 ? err_msg() : NULL);
	free(b.mb_p);
	free(t.lt_buf);
}

/* ---------------------------------------------------------- the module */

static int ha_register(struct srv *s)
{
	const struct clu_conf *c = s->s_conf;
	struct srv_ha *a;
	int rc;

	if (c->cc_nr_etcd == 0)
		return 0;
	if (ha_agent != NULL)
		return err_set(-EBUSY, "server %s: one HA server per process",
			       s->s_me->cs_name);
	a = calloc(1, sizeof *a);
	if (a == NULL)
		return err_set(-ENOMEM, "server %s: HA agent",
			       s->s_me->cs_name);
	a->ha_srv = s;
	a->ha_name = s->s_me->cs_name;
	a->ha_lease_ttl_s = c->cc_ha_lease_s;
	ha_rules_from_conf(&a->ha_rules, c);
	a->ha_start_grace_ms = ha_start_grace_ms(c);
	pthread_mutex_init(&a->ha_lock, NULL);
	pthread_cond_init(&a->ha_cond, NULL);
	pthread_mutex_init(&a->ha_jobs_lock, NULL);
	pthread_cond_init(&a->ha_jobs_cond, NULL);
	s->s_ha = a;
	rc = srv_home_create(s, &a->ha_home);
	if (rc == 0) {
		const char *eps[CLU_ETCD_MAX];

		for (uint32_t i = 0; i < c->cc_nr_etcd; i++)
			eps[i] = c->cc_etcd[i];
		/* the client now (no I/O yet): the homes' standbys in sync
		 * are recorded from the first replicated write on */
		rc = etcd_create(&a->ha_etcd, eps, c->cc_nr_etcd,
				 HA_ETCD_TIMEOUT_MS);
	}
	if (rc == 0)
		srv_home_insync_start(a->ha_home);
	if (rc == 0)
		rc = rpc_gate_set(s->s_ep, ha_gate, a);
	if (rc == 0)
		rc = rpc_handler_set(s->s_ep, HA_OP, ha_handle, a);
	return rc;
}

static int ha_start(struct srv *s)
{
	struct srv_ha *a = s->s_ha;
	const struct clu_conf *c = s->s_conf;
	struct ha_map *m;
	int64_t rev = 0;
	uint64_t sent;
	int rc;

	if (a == NULL)
		return 0;
	m = malloc(sizeof *m);
	if (m == NULL)
		return err_set(-ENOMEM, "server %s: map", a->ha_name);
	rc = ha_map_from_conf(m, c);
	if (rc == 0) {
		rc = ha_map_bootstrap(a->ha_etcd, m, &rev);
		if (rc == -EEXIST)
			rc = 0;
	}
	if (rc == 0) {
		snprintf(a->ha_map.hm_cluster, sizeof a->ha_map.hm_cluster,
			 "%s", m->hm_cluster);
		/* homes routed by this map before any request runs under
		 * its epoch (a server whose home was taken over serves none
		 * of it from its first request on) */
		if (srv_home_sync(a->ha_home, m))
			a->ha_home_epoch = m->hm_epoch;
		ha_map_take(a, m, rev);
	}
	free(m);
	if (rc != 0)
		return err_set(rc, "server %s: the cluster map in etcd (%s): "
			       "%s", a->ha_name, etcd_endpoint(a->ha_etcd),
			       err_msg());
	/* The run's incarnation: its start time (ns), so that a later run
	 * has a larger one (the analyzer drops events of earlier runs). */
	a->ha_incarnation = (uint64_t)ha_now_ms() * 1000000u;
	a->ha_start_ms = ha_mono_ms();
	rc = lease_begin(a, &sent);
	if (rc == 0)
		atomic_store(&a->ha_lease_ok_ms, sent);
	if (rc != 0)
		return err_set(rc, "server %s: membership lease: %s",
			       a->ha_name, err_msg());
	a->ha_window = calloc(2 * HA_WINDOW_MAX, sizeof *a->ha_window);
	if (a->ha_window == NULL)
		return err_set(-ENOMEM, "server %s: HA window", a->ha_name);
	rc = peers_create(&a->ha_probe, c, NULL);
	if (rc != 0)
		return rc;
	peers_set_server(a->ha_probe);
	ha_agent = a;
	peers_epoch_catchup(ha_catchup);
	report(a, HA_EV_SRV_JOINED, s->s_self, NULL, a->ha_incarnation, 0);
	/* its home's metadata handed back before its store opened: in sync
	 * with the acting server, which serves it no more (srv_home.h) */
	if (srv_home_installed())
		report_ep(a, HA_EV_HOME_READY, s->s_self, a->ha_incarnation,
			  srv_home_installed_epoch());
	for (uint32_t t = 0; t < HA_THREADS; t++) {
		static void *(*const mains[HA_THREADS])(void *) = {
			lease_main, probe_main, ha_main};

		rc = pthread_create(&a->ha_thread[t], NULL, mains[t], a);
		if (rc != 0)
			return err_set(-rc, "server %s: HA thread",
				       a->ha_name);
		a->ha_nr_threads++;
	}
	LOG_INFO("server %s: HA agent: map epoch %" PRIu64 ", lease %u s, "
		 "etcd %s", a->ha_name, atomic_load(&a->ha_epoch),
		 a->ha_lease_granted_s, etcd_endpoint(a->ha_etcd));
	return 0;
}

/* Stop: the thread, then give the leadership and the lease back (a clean
 * stop is seen at once, not after the lease's TTL).  The agent itself and
 * its etcd handle stay until the process ends: the gate and the HA
 * opcode's handler may still run on the endpoint's threads, which the
 * server stops after its modules. */
static void ha_stop(struct srv *s)
{
	struct srv_ha *a = s->s_ha;

	if (a == NULL)
		return;
	atomic_store(&a->ha_stop, true);
	pthread_mutex_lock(&a->ha_lock);
	pthread_cond_broadcast(&a->ha_cond);
	pthread_mutex_unlock(&a->ha_lock);
	for (uint32_t t = 0; t < a->ha_nr_threads; t++)
		pthread_join(a->ha_thread[t], NULL);
	if (a->ha_imgback_on)
		pthread_join(a->ha_imgback_thread, NULL);
	a->ha_imgback_on = false;
	srv_home_destroy(a->ha_home);
	if (ha_agent == a) {
		peers_epoch_catchup(NULL);
		ha_agent = NULL;
	}
	if (a->ha_etcd != NULL) {
		if (atomic_load(&a->ha_leader))
			(void)ha_leader_resign(a->ha_etcd,
					       a->ha_map.hm_cluster,
					       a->ha_name);
		/* a run again from the start (home_restart_check()) too:
		 * seen as an exit, its next run joins again.  The planned
		 * stop is logged first, so that the lease's end is not
		 * counted as a down episode (rule flapping) */
		if (a->ha_lease != 0) {
			report(a, HA_EV_SRV_STOPPED, s->s_self, NULL,
			       a->ha_incarnation, 0);
			(void)etcd_lease_revoke(a->ha_etcd, a->ha_lease);
		}
	}
	/* a job's walk call may still be on the probe table: the jobs stop
	 * first; one that would not is left the table (the process ends) */
	if (ha_lead_jobs_stop(a, 10000)) {
		peers_destroy(a->ha_probe);
		a->ha_probe = NULL;
	} else {
		LOG_WARNING("server %s: a job did not stop within 10 s: its "
			    "connections are left to the process's end",
			    a->ha_name);
	}
}

const struct srv_module ha_srv_module = {
	.sm_name = "ha",
	.sm_pre_open = srv_home_pre_open,
	.sm_register = ha_register,
	.sm_start = ha_start,
	.sm_stop = ha_stop,
};
