/*
 * ha_lead.c — the analyzer's leader (srv_ha.h "analyzer"): the agent that
 * holds the leader key reads the events log into a window, adds the
 * events only it can see (a member whose lease lapsed), runs the
 * analyzer (ha/analyzer.h), and applies each decision: one map update
 * (compare-and-swap, the epoch one higher) and one entry of the decisions
 * log each; a job decision starts the job (a walk on every server in
 * service), whose end is an event again.
 *
 * Jobs follow the map and the leadership (ha/analyzer.h rules pause,
 * resume, job-abort): a job runs on a thread of the leader, which checks
 * before each call (the device states, then one walk per server in
 * service) whether it should still run: a JOB_PAUSE or JOB_ABORT of it
 * applied by this leader, the leadership lost, or the agent stopping
 * stop it without an end event (the walks keep their place: the next
 * walk of the same kind on a server resumes there).  A new leader adopts
 * the jobs the map shows running (REPAIRING or REBALANCING with a job id)
 * that it does not run itself: its old leader's died with it.  A walk
 * refused because one runs already on that server (its old leader's,
 * still alive) is asked again every second.
 *
 * A new leader (the old one killed mid-decision) starts from the log and
 * the map as they are: the analyzer takes no decision whose effect the map
 * already shows (ha/analyzer.h), so a decision the old leader applied is
 * not taken twice, and one it did not apply is taken again.  A decision
 * whose map update lost the race (-EAGAIN: the map changed meanwhile) is
 * dropped and decided again over the new map at the next step.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/msg.h"
#include "core/server/peers.h"
#include "core/server/srv_internal.h"
#include "ha/ha_json.h"
#include "ha/map.h"
#include "ha/srv_ha_internal.h"

/* Decisions of one analyzer call, and calls of one step. */
#define LEAD_DECISIONS_MAX 16u
#define LEAD_ROUNDS_MAX 8u
/* A walk job's call timeout (ms): a repair of a test store takes
 * seconds; a real one is bounded by the walk's own progress. */
#define LEAD_WALK_MS 3600000u
/* Walks answered -EAGAIN (a home a server acts for not walked to its
 * end: its engine opening, or closing for a handback) asked again, a
 * second apart, before the job fails. */
#define LEAD_WALK_AGAIN_MAX 120u
/* Test builds: fault ha.job.hold holds a rebalance job before its first
 * call while the file $STRATA_JOB_HOLD exists, at most this long (ms), so
 * that a test can kill its leader while it runs (tests/integ/ha_test.sh
 * removes the file once it did). */
#define LEAD_JOB_HOLD_MS 120000u

/* Note the run an event of the log starts or ends (a->ha_run_inc). */
static void run_note(struct srv_ha *a, const struct ha_event *e)
{
	uint64_t *r;
	int i;

	if (e->he_dev[0] != '\0' || e->he_incarnation == 0 ||
	    (e->he_kind != HA_EV_SRV_JOINED && e->he_kind != HA_EV_SRV_EXIT &&
	     e->he_kind != HA_EV_SRV_STOPPED &&
	     e->he_kind != HA_EV_SRV_LEASE_EXPIRED))
		return;
	i = clu_server_find(a->ha_srv->s_conf, e->he_target);
	if (i < 0 || i >= (int)HA_SERVERS_MAX)
		return;
	r = &a->ha_run_inc[i];
	if (e->he_kind == HA_EV_SRV_JOINED) {
		if (e->he_incarnation > *r)
			*r = e->he_incarnation;
	} else if (e->he_incarnation == *r) {
		*r = 0;  /* that run's end is logged */
	}
}

/* Add one event of the log to the window (the oldest goes when full). */
static int window_add(uint64_t seq, const char *json, void *arg)
{
	struct srv_ha *a = arg;
	struct ha_event ev;

	a->ha_ev_next = seq + 1;
	if (ha_event_parse(json, &ev) != 0) {
		LOG_WARNING("server %s: event %" PRIu64 " of the log is not "
			    "valid, skipped: %s", a->ha_name, seq, err_msg());
		return 0;
	}
	ev.he_seq = seq;
	run_note(a, &ev);
	if (a->ha_nr_window == 2 * HA_WINDOW_MAX) {
		/* more than one step's worth came at once: the oldest go
		 * (window_prune() keeps what matters between steps) */
		memmove(a->ha_window, a->ha_window + 1,
			(2 * HA_WINDOW_MAX - 1) * sizeof *a->ha_window);
		a->ha_nr_window--;
	}
	a->ha_window[a->ha_nr_window++] = ev;
	a->ha_next_deadline = 0; /* decide now */
	return 0;
}

/* Is server name ONLINE in m (and each of its devices)? */
static bool all_online(const struct ha_map *m, const char *name)
{
	for (uint32_t j = 0; j < m->hm_nr_servers; j++) {
		const struct ha_srv *sv = &m->hm_servers[j];

		if (strcmp(sv->hs_name, name) != 0)
			continue;
		if (sv->hs_state != HA_ONLINE)
			return false;
		for (uint32_t d = 0; d < sv->hs_nr_devs; d++)
			if (sv->hs_devs[d].hd_state != HA_ONLINE)
				return false;
		return true;
	}
	return false;
}

/* Keep the window at most HA_WINDOW_MAX events, dropping the oldest that
 * no rule can need: older than the longest rule window, about a target
 * that is ONLINE with its devices, and not an operator's thaw.  Events
 * about a target in any other state (its last SRV_JOINED decides a
 * rebalance), and everything recent, are kept; if they alone exceed the
 * bound, the oldest of them go. */
static void window_prune(struct srv_ha *a, const struct ha_map *m,
			 uint64_t now)
{
	const struct ha_rules *r = &a->ha_rules;
	uint64_t span = r->hr_flap_period_ms, old;
	uint32_t n = a->ha_nr_window, k = 0, drop;

	if (n <= HA_WINDOW_MAX)
		return;
	if (r->hr_report_ttl_ms > span)
		span = r->hr_report_ttl_ms;
	if (r->hr_ioerr_window_ms > span)
		span = r->hr_ioerr_window_ms;
	if (r->hr_merge_max_ms > span)
		span = r->hr_merge_max_ms;
	old = now > span ? now - span : 0;
	drop = n - HA_WINDOW_MAX;
	for (uint32_t i = 0; i < n; i++) {
		const struct ha_event *e = &a->ha_window[i];

		if (drop > 0 && e->he_time_ms < old &&
		    e->he_kind != HA_EV_OP_THAW &&
		    all_online(m, e->he_target)) {
			drop--;
			continue;
		}
		a->ha_window[k++] = *e;
	}
	if (k > HA_WINDOW_MAX) {
		memmove(a->ha_window, a->ha_window + (k - HA_WINDOW_MAX),
			HA_WINDOW_MAX * sizeof *a->ha_window);
		k = HA_WINDOW_MAX;
	}
	a->ha_nr_window = k;
}

/* The run of server sv the event log shows joined and not ended, if this
 * process's probes saw sv stop answering (srv_ha.c probe_round(); not the
 * first look), else 0. */
static uint64_t run_fallen(struct srv_ha *a, const struct ha_srv *sv)
{
	int i = clu_server_find(a->ha_srv->s_conf, sv->hs_name);

	if (i < 0 || i >= (int)HA_SERVERS_MAX ||
	    !atomic_load(&a->ha_probe_fell[i]))
		return 0;
	return a->ha_run_inc[i];
}

/* Members whose lease lapsed: a server of the map in service with no
 * member key is proven gone (SRV_LEASE_EXPIRED), once per run (the
 * incarnation its member record last showed, or, for one this leader
 * never saw registered, the run the event log shows joined and not
 * ended, if this process's probes saw it stop answering).  Only after
 * this leader held the key for two lease TTLs: a server starting
 * registers within that.
 *
 * The log's run matters when the leader itself dies with or after a
 * server: the new leader never saw that server's key, and the probes'
 * reports alone may not prove it down (one live reporter, below
 * hr_min_reporters: tests/integ/ha_standby_test.sh, the analyzer's
 * leader killed last).
 *
 * The start grace: a server this leader never saw registered and never
 * saw answer, after a whole-cluster stop one that does not come back, is
 * proven gone once this leader has led for ha_start_grace_ms, and the
 * server has been in its state that long (a server still opening its
 * store has registered by then), as the run the log shows (or, when the
 * bounded log no longer has it, incarnation 1: any run's SRV_JOINED makes
 * the expiry stale).
 * Without it nothing ever failed such a server: its probes' first look is
 * silent and its last run ended unlogged (tests/integ/ha_restart_test.sh). */
static void lapsed_members(struct srv_ha *a, const struct ha_map *m,
			   uint64_t now)
{
	uint64_t *said = a->ha_lapse_said, *inc = a->ha_lapse_inc;

	if (now < a->ha_lead_since + (uint64_t)a->ha_lease_granted_s * 2000)
		return;
	for (uint32_t j = 0; j < m->hm_nr_servers; j++) {
		const struct ha_srv *sv = &m->hm_servers[j];
		struct ha_member mb;
		struct ha_event ev;
		uint64_t run;
		int rc, i;

		if (sv->hs_state != HA_ONLINE && sv->hs_state != HA_TRANSIENT)
			continue;
		rc = ha_member_get(a->ha_etcd, m->hm_cluster, sv->hs_name, &mb);
		if (rc == 0)
			inc[j] = mb.hmb_incarnation;
		else if (rc == -ENOENT && inc[j] == 0)
			inc[j] = run_fallen(a, sv);
		if (rc != -ENOENT)
			continue;
		/* only a run that registered can lapse: a server still
		 * opening its store has not registered yet (no key seen; and
		 * after every server stopped, the log's last run of it ended
		 * unlogged, so that run counts only if this process's probes
		 * saw it stop answering, or once the start grace is over) */
		run = inc[j];
		/* the grace runs from this leadership's start, or from the
		 * server's entry into its state, whichever is later (a
		 * server the operator just took back may still be
		 * starting) */
		if (run == 0 &&
		    now < (a->ha_lead_since > sv->hs_since_ms ?
			   a->ha_lead_since : sv->hs_since_ms) +
			  a->ha_start_grace_ms)
			continue;
		if (run == 0) {
			i = clu_server_find(a->ha_srv->s_conf, sv->hs_name);
			if (i >= 0 && i < (int)HA_SERVERS_MAX)
				run = a->ha_run_inc[i];
			/* the bounded log no longer has its run: incarnation
			 * 1, older than any run's (a start's wall-clock ns),
			 * never 0, which no run's SRV_JOINED makes stale: a
			 * server registering right now would be failed */
			if (run == 0)
				run = 1;
			/* kept: once its expiry is logged, the log shows
			 * that run ended (run_note()) */
			inc[j] = run;
			if (said[j] != run + 1)
				LOG_WARNING("server %s: server %s has not "
					    "registered within the start grace "
					    "(%" PRIu64 " s of this leadership): "
					    "taken as gone (its run %" PRIu64
					    ")", a->ha_name, sv->hs_name,
					    a->ha_start_grace_ms / 1000, run);
		}
		if (said[j] == run + 1)
			continue;
		said[j] = run + 1;
		memset(&ev, 0, sizeof ev);
		ev.he_kind = HA_EV_SRV_LEASE_EXPIRED;
		snprintf(ev.he_target, sizeof ev.he_target, "%s", sv->hs_name);
		/* the run whose member record this leader saw last (0: none
		 * seen since it leads: about whichever run it was) */
		ev.he_incarnation = run;
		if (ha_report(a, &ev) != 0)
			LOG_WARNING("server %s: lapsed member %s not reported: "
				    "%s", a->ha_name, sv->hs_name, err_msg());
	}
}

/* A job: the target's devices' state in every store, then a walk of
 * kind on every server in service, then its end as an event.  Runs on a
 * thread of its own (detached). */
struct lead_job {
	struct srv_ha *lj_a;
	uint64_t lj_id;
	uint32_t lj_kind;  /* SWK_REPAIR, SWK_REBALANCE */
	char lj_target[HA_NAME_MAX + 1];
	char lj_dev[HA_NAME_MAX + 1];
	bool lj_in[HA_SERVERS_MAX];
	int32_t lj_owner;  /* the target's index in the cluster file, -1 */
	uint32_t lj_nr_devs;            /* the devices the job is about: */
	uint32_t lj_devs[HA_DEVS_MAX];  /* their indices in the owner's store */
	/* a job about a whole server (lost, or back), for each device: its
	 * images are failed as lost with it, or come back with it
	 * (DevReq.server) */
	bool lj_whole[HA_DEVS_MAX];
	atomic_bool lj_stop;            /* paused or aborted by a decision */
	struct lead_job *lj_next;       /* ha_jobs (ha_jobs_lock) */
};

/* Should job j stop before its next call?  A decision stopped it, the
 * leadership went, or the agent stops. */
static bool job_stopped(const struct lead_job *j)
{
	const struct srv_ha *a = j->lj_a;

	return atomic_load(&j->lj_stop) || atomic_load(&a->ha_stop) ||
	       !atomic_load(&a->ha_leader);
}

/* The job of id in a's table (ha_jobs_lock held), NULL. */
static struct lead_job *job_find(struct srv_ha *a, uint64_t id)
{
	struct lead_job *j = a->ha_jobs;

	while (j != NULL && j->lj_id != id)
		j = j->lj_next;
	return j;
}

/* Job j ends: out of the table, freed. */
static void job_forget(struct lead_job *j)
{
	struct srv_ha *a = j->lj_a;
	struct lead_job **pp;

	pthread_mutex_lock(&a->ha_jobs_lock);
	for (pp = &a->ha_jobs; *pp != NULL && *pp != j; pp = &(*pp)->lj_next)
		;
	if (*pp == j)
		*pp = j->lj_next;
	pthread_cond_broadcast(&a->ha_jobs_cond);
	pthread_mutex_unlock(&a->ha_jobs_lock);
	free(j);
}

bool ha_lead_jobs_stop(struct srv_ha *a, uint32_t wait_ms)
{
	struct timespec ts;
	bool none;

	pthread_mutex_lock(&a->ha_jobs_lock);
	for (struct lead_job *j = a->ha_jobs; j != NULL; j = j->lj_next)
		atomic_store(&j->lj_stop, true);
	none = a->ha_jobs == NULL;
	pthread_mutex_unlock(&a->ha_jobs_lock);
	if (none)
		return true;
	peers_calls_stop(a->ha_probe);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += wait_ms / 1000;
	ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&a->ha_jobs_lock);
	while (a->ha_jobs != NULL &&
	       pthread_cond_timedwait(&a->ha_jobs_cond, &a->ha_jobs_lock,
				      &ts) == 0)
		;
	none = a->ha_jobs == NULL;
	pthread_mutex_unlock(&a->ha_jobs_lock);
	return none;
}

/*
 * Before a repair, every store must see the target's devices failed, or
 * its walk has nothing to rebuild (a dead server's devices are only
 * unreachable to the others); before a rebalance, the images of a
 * returned or replaced device must be back ONLINE with the rebalance flag.
 * SOP_DEV (core/server/srv_dev.c): FAIL to the owner (when in service)
 * and to every other server in service (its image), or REPLACE to the
 * others (an image is brought back only once repaired).  A server that
 * holds no image (-ENOENT: a device it does not lend) has nothing to do.
 * The map's device k of a server is device k of its store: its local
 * devices come first, in the order of its cluster file entry.
 */
static void job_devices(struct lead_job *j)
{
	struct srv_ha *a = j->lj_a;
	struct srv *s = a->ha_srv;
	struct peers *p = a->ha_probe != NULL ? a->ha_probe : s->s_peers;

	for (uint32_t k = 0; k < j->lj_nr_devs; k++) {
		for (uint32_t i = 0; i < s->s_conf->cc_nr_servers; i++) {
			DevReq q = DEV_REQ__INIT;
			struct msg_buf b = {0};
			struct rpc_result res;
			int rc;

			if (!j->lj_in[i] || (j->lj_kind == SWK_REBALANCE &&
					     (int32_t)i == j->lj_owner))
				continue;
			if (job_stopped(j))
				return;
			q.op = j->lj_kind == SWK_REPAIR ? SDV_FAIL :
			       SDV_REPLACE;
			q.owner = (uint32_t)j->lj_owner;
			q.dev = j->lj_devs[k];
			q.server = j->lj_whole[k];
			if (msg_pack(&q.base, &b) != 0)
				return;
			rc = peers_call_ms(p, i, SOP_DEV, b.mb_p, b.mb_len,
					   NULL, s->s_conf->cc_call_ms, &res);
			free(res.rr_body);
			free(b.mb_p);
			if (rc != 0 && rc != -ENOENT)
				LOG_WARNING("server %s: job %" PRIu64 ": device "
					    "%u of %s on %s: %s", a->ha_name,
					    j->lj_id, q.dev, j->lj_target,
					    s->s_conf->cc_servers[i].cs_name,
					    err_msg());
		}
	}
}

/* The units a walk's answer says it rebuilt (repair) or moved
 * (rebalance): WalkStats in the Reply's text (core/server/strata.proto). */
static uint64_t walk_units(const struct rpc_result *res)
{
	Reply *rp = NULL;
	WalkStats *ws;
	uint64_t n = 0;

	if (msg_reply_decode(res->rr_body, res->rr_len, 0, &rp) != 0)
		return 0;
	ws = walk_stats__unpack(NULL, rp->text.len, rp->text.data);
	if (ws != NULL)
		n = ws->rebuilt + ws->moved;
	if (ws != NULL)
		walk_stats__free_unpacked(ws, NULL);
	reply__free_unpacked(rp, NULL);
	return n;
}

/* The etcd key of job id's progress. */
static const char *job_key(const struct srv_ha *a, uint64_t id, char *buf,
			   size_t size)
{
	char kind[48];

	snprintf(kind, sizeof kind, "jobs/%020" PRIu64, id);
	return ha_key(buf, size, a->ha_map.hm_cluster, kind);
}

/*
 * Job j's progress, kept in etcd (/strata/C/jobs/ID) for `strata cluster
 * status` (any server reads it: srv_ha.c state_json): the servers walked
 * of those in service, the one walking now ("" between), the units
 * rebuilt or moved so far.  Removed at the job's end (done, failed or
 * stopped).  Best effort: a failed put is logged, the job goes on.
 */
static void job_progress(struct lead_job *j, uint32_t done, uint32_t total,
			 const char *walking, uint64_t units)
{
	struct srv_ha *a = j->lj_a;
	char key[300], txt[512];
	int n;

	n = snprintf(txt, sizeof txt, "{\"id\":%" PRIu64 ",\"kind\":\"%s\","
		     "\"target\":\"%s\",\"dev\":\"%s\",\"servers_done\":%u,"
		     "\"servers\":%u,\"walking\":\"%s\",\"units\":%" PRIu64
		     ",\"leader\":\"%s\",\"time_ms\":%" PRIu64 "}", j->lj_id,
		     j->lj_kind == SWK_REPAIR ? "repair" : "rebalance",
		     j->lj_target, j->lj_dev, done, total, walking, units,
		     a->ha_name, ha_now_ms());
	if (n < 0 || (size_t)n >= sizeof txt)
		return;
	if (etcd_put(a->ha_etcd, job_key(a, j->lj_id, key, sizeof key), txt,
		     (size_t)n, 0, NULL) != 0)
		LOG_INFO("server %s: job %" PRIu64 ": progress not kept: %s",
			 a->ha_name, j->lj_id, err_msg());
}

/* Job j's progress key removed (its end). */
static void job_progress_end(struct lead_job *j)
{
	char key[300];

	if (etcd_delete(j->lj_a->ha_etcd, job_key(j->lj_a, j->lj_id, key,
						     sizeof key), false,
			NULL) != 0)
		LOG_INFO("server %s: job %" PRIu64 ": progress not removed: "
			 "%s", j->lj_a->ha_name, j->lj_id, err_msg());
}

static void *job_main(void *arg)
{
	struct lead_job *j = arg;
	struct srv_ha *a = j->lj_a;
	struct srv *s = a->ha_srv;
	WalkReq w = WALK_REQ__INIT;
	struct msg_buf b = {0};
	struct ha_event ev;
	uint64_t units = 0;
	uint32_t total = 0, walked = 0, again = 0, pass = 0;
	/* the servers whose walk was skipped in the first pass (-EREMCHG:
	 * another server acted for their home), asked again in a second */
	bool skipped[CLU_SERVERS_MAX] = {false}, redo = false;
	int rc = 0;

	for (uint32_t i = 0; i < s->s_conf->cc_nr_servers; i++)
		total += j->lj_in[i];
	job_progress(j, 0, total, "", 0);
	if (j->lj_kind == SWK_REBALANCE && FAULT_HIT("ha.job.hold")) {
		const char *f = getenv("STRATA_JOB_HOLD");

		LOG_WARNING("server %s: job %" PRIu64 ": fault ha.job.hold: "
			    "held while %s exists", a->ha_name, j->lj_id,
			    f != NULL ? f : "(no STRATA_JOB_HOLD)");
		for (uint32_t t = 0; f != NULL && t < LEAD_JOB_HOLD_MS / 100 &&
		     access(f, F_OK) == 0 && !job_stopped(j); t++)
			usleep(100000);
	}
	if (j->lj_owner >= 0 && !job_stopped(j))
		job_devices(j);
	/* test builds: a repair that fails after its device states (its
	 * images failed), as one whose walk fails would
	 * (tests/integ/ha_restart_test.sh) */
	if (j->lj_kind == SWK_REPAIR && FAULT_HIT("ha.job.fail"))
		rc = err_set(-EIO, "server %s: job %" PRIu64 ": fault "
			     "ha.job.fail", a->ha_name, j->lj_id);
	w.kind = j->lj_kind;
	if (rc == 0 && msg_pack(&w.base, &b) != 0)
		rc = -ENOMEM;
walk:
	for (uint32_t i = 0; rc == 0 && i < s->s_conf->cc_nr_servers; i++) {
		struct rpc_result res;

		if (!j->lj_in[i] || (pass == 1 && !skipped[i]))
			continue;
		if (job_stopped(j))
			break;
		job_progress(j, walked, total, s->s_conf->cc_servers[i].cs_name,
			     units);
		rc = peers_call_ms(a->ha_probe, i, SOP_WALK, b.mb_p,
				   b.mb_len, NULL, LEAD_WALK_MS, &res);
		if (rc != -EBUSY)
			walked++;
		if (rc == 0)
			units += walk_units(&res);
		free(res.rr_body);
		if (rc == -EREMCHG) {
			/* its home is served by another server: its own
			 * engine's copy of it is stale, nothing to walk
			 * there (its units wait for the handback) */
			LOG_INFO("server %s: job %" PRIu64 ": walk on %s "
				 "skipped: %s", a->ha_name, j->lj_id,
				 s->s_conf->cc_servers[i].cs_name, err_msg());
			skipped[i] = pass == 0;
			redo |= pass == 0;
			rc = 0;
			continue;
		}
		if (rc == -EBUSY && !job_stopped(j)) {
			/* a walk runs there already (an old leader's job,
			 * still alive): ask again */
			rc = 0;
			i--;
			usleep(1000000);
			continue;
		}
		/* Asked again a second later, at most LEAD_WALK_AGAIN_MAX
		 * times a pass: a home it acts for not walked to its end
		 * (-EAGAIN: its engine opening, or closing for a handback;
		 * its walk resumes, and once handed back that home is its
		 * own server's); in the second pass, a server unreachable or
		 * stopping (skipped while its home was acted for elsewhere,
		 * it may be running again from its start for the
		 * handback), but not one whose walk timed out (LEAD_WALK_MS:
		 * a hung server would hold the job for days). */
		if ((rc == -EAGAIN ||
		     (pass == 1 && rc != -ETIMEDOUT &&
		      (peers_rc_transport(rc) || rc == -EHOSTDOWN ||
		       rc == -ESHUTDOWN))) &&
		    !job_stopped(j) && again++ < LEAD_WALK_AGAIN_MAX) {
			LOG_INFO("server %s: job %" PRIu64 ": walk on %s: %s: "
				 "asked again", a->ha_name, j->lj_id,
				 s->s_conf->cc_servers[i].cs_name, err_msg());
			rc = 0;
			walked--;
			i--;
			usleep(1000000);
			continue;
		}
		if (rc != 0)
			LOG_WARNING("server %s: job %" PRIu64 ": walk on %s: "
				    "%s", a->ha_name, j->lj_id,
				    s->s_conf->cc_servers[i].cs_name,
				    err_msg());
	}
	/* A server skipped because another acted for its home may have got
	 * it back meanwhile (a handback): after the handback the server
	 * that acted for it no longer walks it, so unless that server's walk
	 * of it had ended first, nobody did (the job ended with that home's
	 * units of the target not rebuilt, the target REPAIRED all the
	 * same).  One more pass over the skipped servers: one still acted
	 * for elsewhere is skipped again (walked there); one back walks its
	 * home (units already rebuilt are left as they are). */
	if (pass == 0 && redo && rc == 0 && !job_stopped(j)) {
		pass = 1;
		again = 0;
		for (uint32_t i = 0; i < s->s_conf->cc_nr_servers; i++)
			total += skipped[i];
		LOG_INFO("server %s: job %" PRIu64 ": the servers skipped "
			 "(their homes acted for elsewhere) are asked again",
			 a->ha_name, j->lj_id);
		goto walk;
	}
	free(b.mb_p);
	job_progress_end(j);
	if (job_stopped(j)) {
		/* no end: the map says what follows (paused: resumed later;
		 * aborted; another leader adopts it) */
		LOG_INFO("server %s: job %" PRIu64 " stopped (%s)",
			 a->ha_name, j->lj_id,
			 atomic_load(&j->lj_stop) ? "paused or aborted, or the "
			 "agent stops" : "leadership lost");
		job_forget(j);
		return NULL;
	}
	memset(&ev, 0, sizeof ev);
	ev.he_kind = rc == 0 ? HA_EV_JOB_DONE : HA_EV_JOB_FAILED;
	snprintf(ev.he_target, sizeof ev.he_target, "%s", j->lj_target);
	snprintf(ev.he_dev, sizeof ev.he_dev, "%s", j->lj_dev);
	ev.he_job = j->lj_id;
	/* JOB_DONE's count: the units the walks rebuilt (repair) or moved
	 * (rebalance), at most 2^32 - 1 */
	ev.he_count = units > UINT32_MAX ? UINT32_MAX : (uint32_t)units;
	LOG_INFO("server %s: job %" PRIu64 " %s: %" PRIu64 " units %s",
		 a->ha_name, j->lj_id, rc == 0 ? "done" : "failed", units,
		 j->lj_kind == SWK_REPAIR ? "rebuilt" : "moved");
	if (ha_report(a, &ev) != 0)
		LOG_WARNING("server %s: end of job %" PRIu64 " not reported: "
			    "%s", a->ha_name, j->lj_id, err_msg());
	job_forget(j);
	return NULL;
}

/* Start the job of decision d (map m: the servers in service walk). */
static void job_start(struct srv_ha *a, const struct ha_decision *d,
		      const struct ha_map *m)
{
	const struct clu_conf *c = a->ha_srv->s_conf;
	struct lead_job *j = calloc(1, sizeof *j);
	pthread_t t;

	if (j == NULL)
		return;
	j->lj_a = a;
	j->lj_id = d->hd_job;
	j->lj_kind = d->hd_kind == HA_DEC_JOB_REPAIR ? SWK_REPAIR :
		     SWK_REBALANCE;
	snprintf(j->lj_target, sizeof j->lj_target, "%s", d->hd_target);
	snprintf(j->lj_dev, sizeof j->lj_dev, "%s", d->hd_dev);
	j->lj_owner = clu_server_find(c, d->hd_target);
	if (j->lj_owner < 0)
		j->lj_owner = -1;
	for (uint32_t k = 0; k < m->hm_nr_servers && j->lj_owner >= 0; k++) {
		const struct ha_srv *sv = &m->hm_servers[k];

		if (strcmp(sv->hs_name, d->hd_target) != 0)
			continue;
		for (uint32_t x = 0; x < sv->hs_nr_devs; x++) {
			bool whole = d->hd_dev[0] == '\0';

			if (!whole &&
			    strcmp(sv->hs_devs[x].hd_name, d->hd_dev) != 0)
				continue;
			/* a whole server back: its devices the map has
			 * ONLINE on their own (one the map has failed,
			 * repaired or out keeps its images as they are:
			 * its medium is not trusted) */
			if (whole && j->lj_kind == SWK_REBALANCE &&
			    sv->hs_devs[x].hd_state != HA_ONLINE)
				continue;
			j->lj_whole[j->lj_nr_devs] = whole;
			j->lj_devs[j->lj_nr_devs++] = x;
		}
	}
	for (uint32_t i = 0; i < c->cc_nr_servers; i++)
		for (uint32_t k = 0; k < m->hm_nr_servers; k++)
			if (strcmp(m->hm_servers[k].hs_name,
				   c->cc_servers[i].cs_name) == 0)
				j->lj_in[i] =
					m->hm_servers[k].hs_state ==
						HA_ONLINE ||
					m->hm_servers[k].hs_state ==
						HA_REBALANCING;
	pthread_mutex_lock(&a->ha_jobs_lock);
	if (job_find(a, j->lj_id) != NULL || atomic_load(&a->ha_stop)) {
		pthread_mutex_unlock(&a->ha_jobs_lock);
		free(j);
		return;
	}
	if (pthread_create(&t, NULL, job_main, j) != 0) {
		pthread_mutex_unlock(&a->ha_jobs_lock);
		free(j);
		return;
	}
	j->lj_next = a->ha_jobs;
	a->ha_jobs = j;
	pthread_mutex_unlock(&a->ha_jobs_lock);
	LOG_INFO("server %s: job %" PRIu64 ": %s of %s%s%s", a->ha_name,
		 d->hd_job, ha_dec_kind_name(d->hd_kind), d->hd_target,
		 d->hd_dev[0] != '\0' ? ":" : "", d->hd_dev);
	pthread_detach(t);
}

/* Stop job id (a JOB_PAUSE or JOB_ABORT applied): at its next check. */
static void job_stop(struct srv_ha *a, uint64_t id)
{
	struct lead_job *j;

	pthread_mutex_lock(&a->ha_jobs_lock);
	j = job_find(a, id);
	if (j != NULL)
		atomic_store(&j->lj_stop, true);
	pthread_mutex_unlock(&a->ha_jobs_lock);
}

/* A new leader: start the jobs the map shows running that this agent does
 * not run (their runner was the old leader). */
static void jobs_adopt(struct srv_ha *a, const struct ha_map *m)
{
	for (uint32_t s = 0; s < m->hm_nr_servers; s++) {
		const struct ha_srv *sv = &m->hm_servers[s];
		struct ha_decision d = {0};

		for (int32_t k = -1; k < (int32_t)sv->hs_nr_devs; k++) {
			enum ha_state st = k < 0 ? sv->hs_state :
					   sv->hs_devs[k].hd_state;
			uint64_t job = k < 0 ? sv->hs_job :
				       sv->hs_devs[k].hd_job;

			if (job == 0 || (st != HA_REPAIRING &&
					 st != HA_REBALANCING) ||
			    (k >= 0 && sv->hs_state != HA_ONLINE))
				continue;
			d.hd_kind = st == HA_REPAIRING ? HA_DEC_JOB_REPAIR :
				    HA_DEC_JOB_REBALANCE;
			d.hd_job = job;
			snprintf(d.hd_target, sizeof d.hd_target, "%s",
				 sv->hs_name);
			snprintf(d.hd_dev, sizeof d.hd_dev, "%s",
				 k < 0 ? "" : sv->hs_devs[k].hd_name);
			LOG_WARNING("server %s: leader: adopts job %" PRIu64
				 " (%s of %s%s%s)", a->ha_name, job,
				 ha_dec_kind_name(d.hd_kind), d.hd_target,
				 d.hd_dev[0] ? ":" : "", d.hd_dev);
			job_start(a, &d, m);
		}
	}
}

/* Apply d: the map one epoch on (CAS), then the decisions log, then its
 * job.  0, -EAGAIN (the map changed first), or an error. */
static int apply_one(struct srv_ha *a, struct ha_map *m, int64_t *rev,
		     struct ha_decision *d)
{
	uint64_t epoch = m->hm_epoch;
	char line[4096];
	int rc;

	rc = ha_map_apply(m, d, d->hd_time_ms);
	if (rc != 0)
		return rc;
	m->hm_epoch = epoch;  /* ha_map_update() makes it one higher */
	rc = ha_map_update(a->ha_etcd, m, rev);
	if (rc != 0) {
		m->hm_epoch = epoch;
		return rc;
	}
	ha_map_take(a, m, *rev);  /* this server acts under it at once */
	d->hd_seq = m->hm_epoch;
	a->ha_decisions++;
	LOG_INFO("server %s: decision (epoch %" PRIu64 "): %s %s%s%s %s "
		 "[%s] %s", a->ha_name, m->hm_epoch,
		 ha_dec_kind_name(d->hd_kind), d->hd_target,
		 d->hd_dev[0] != '\0' ? ":" : "", d->hd_dev,
		 d->hd_kind == HA_DEC_SET_STATE ?
		 ha_state_name(d->hd_state) : "", d->hd_rule, d->hd_reason);
	if (ha_decision_format(d, line, sizeof line) < 0 ||
	    ha_log_append(a->ha_etcd, m->hm_cluster, "decisions", line,
			  NULL) != 0)
		LOG_WARNING("server %s: decision of epoch %" PRIu64 " not "
			    "logged: %s", a->ha_name, m->hm_epoch, err_msg());
	if (d->hd_kind == HA_DEC_JOB_REPAIR ||
	    d->hd_kind == HA_DEC_JOB_REBALANCE)
		job_start(a, d, m);
	else if (d->hd_kind == HA_DEC_JOB_PAUSE ||
		 d->hd_kind == HA_DEC_JOB_ABORT)
		job_stop(a, d->hd_job);
	return 0;
}

void ha_lead_step(struct srv_ha *a, uint64_t now)
{
	struct ha_decision out[LEAD_DECISIONS_MAX];
	struct ha_map *m;
	int64_t rev;
	int rc;

	if (a->ha_lead_since == 0) {
		a->ha_lead_since = now;
		a->ha_adopt_due = true;
		/* nothing seen yet; the log is read again from its start */
		memset(a->ha_run_inc, 0, sizeof a->ha_run_inc);
		memset(a->ha_lapse_inc, 0, sizeof a->ha_lapse_inc);
	}
	rc = ha_log_read(a->ha_etcd, a->ha_map.hm_cluster, "events",
			 a->ha_ev_next, 0, window_add, a, NULL);
	if (rc != 0) {
		LOG_WARNING("server %s: events log: %s", a->ha_name,
			    err_msg());
		return;
	}
	m = malloc(sizeof *m);
	if (m == NULL)
		return;
	/* the agent's copy, read from etcd just before this step (ha_main);
	 * one that is stale makes the first update -EAGAIN, and the next
	 * step decides over the map read again */
	pthread_mutex_lock(&a->ha_lock);
	*m = a->ha_map;
	rev = a->ha_map_rev;
	pthread_mutex_unlock(&a->ha_lock);
	if (a->ha_adopt_due) {
		a->ha_adopt_due = false;
		jobs_adopt(a, m);
	}
	window_prune(a, m, now);
	lapsed_members(a, m, now);
	if (now < a->ha_next_deadline)
		goto out_free;
	for (uint32_t round = 0; round < LEAD_ROUNDS_MAX; round++) {
		uint32_t nr = 0;
		bool more;

		rc = ha_decide(&a->ha_rules, a->ha_window, a->ha_nr_window, m,
			       now, out, LEAD_DECISIONS_MAX, &nr);
		if (rc != 0 && rc != -ENOSPC) {
			LOG_WARNING("server %s: analyzer: %s", a->ha_name,
				    err_msg());
			break;
		}
		more = rc == -ENOSPC;
		for (uint32_t i = 0; i < nr; i++) {
			rc = apply_one(a, m, &rev, &out[i]);
			if (rc != 0) {
				if (rc != -EAGAIN)
					LOG_WARNING("server %s: decision %s "
						    "%s not applied: %s",
						    a->ha_name,
						    ha_dec_kind_name(
							out[i].hd_kind),
						    out[i].hd_target,
						    err_msg());
				more = false;
				a->ha_next_deadline = 0;
				goto out_free;
			}
		}
		if (!more)
			break;
	}
	a->ha_next_deadline = ha_next_deadline(&a->ha_rules, a->ha_window,
					       a->ha_nr_window, m, now);
out_free:
	free(m);
}

void ha_lead_drop(struct srv_ha *a)
{
	a->ha_nr_window = 0;
	a->ha_ev_next = 0;
	a->ha_next_deadline = 0;
	a->ha_lead_since = 0;
	a->ha_adopt_due = false;
}

void ha_rules_from_conf(struct ha_rules *r, const struct clu_conf *c)
{
	if (c->cc_ha_test_rules)
		ha_rules_init_test(r);
	else
		ha_rules_init_defaults(r);
	if (c->cc_ha_down_out_ms != 0)
		r->hr_down_out_ms = c->cc_ha_down_out_ms;
}

uint64_t ha_start_grace_ms(const struct clu_conf *c)
{
	if (c->cc_ha_start_grace_ms != 0)
		return c->cc_ha_start_grace_ms;
	return c->cc_ha_test_rules ? HA_START_GRACE_TEST_MS :
				     HA_START_GRACE_MS;
}
