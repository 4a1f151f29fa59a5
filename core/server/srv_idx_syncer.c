/*
 * srv_idx_syncer.c — index replicas (overview: the top of srv_idx.c): the
 * syncer thread (requests parked until their index is verified, the
 * verification of every index at start, tombstone passes between
 * requests), the heartbeat thread and the stall watch.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/srv_idx_internal.h"

/* ------------------------------------------------------- syncer */

/* srv_sync_all()'s scan: the ids of the replica records. */
struct sync_all_arg {
	struct st_id *sa_ids;
	size_t sa_nr;
	size_t sa_cap;
};

static int sync_all_one(void *arg, const struct meta_rec *r)
{
	struct sync_all_arg *a = arg;
	char hex[40];
	struct st_id id;

	if (r->mc_klen != 5 + 33)
		return META_SCAN_STOP;
	memcpy(hex, (const char *)r->mc_key + 5, 33);
	hex[33] = '\0';
	if (st_id_parse(hex, &id) != 0)
		return META_SCAN_NEXT;
	if (a->sa_nr == a->sa_cap) {
		size_t nc = a->sa_cap ? a->sa_cap * 2 : 64;
		void *np = realloc(a->sa_ids, nc * sizeof *a->sa_ids);

		if (np == NULL)
			return META_SCAN_STOP;
		a->sa_ids = np;
		a->sa_cap = nc;
	}
	a->sa_ids[a->sa_nr++] = id;
	return META_SCAN_NEXT;
}

/* At start: verify every index this server holds a replica record of, so
 * that a returning replica catches up while its peers are there, not only
 * when it is next asked to serve (bounded by the records found). */
static void srv_sync_all(struct srv *s)
{
	struct meta *m = eng_meta(s->s_eng);
	struct sync_all_arg sa = {NULL, 0, 0};
	struct st_id *ids;
	size_t nr;
	MDB_txn *txn;

	if (meta_rtxn_begin(m, &txn, "replica records") != 0)
		return;
	(void)meta_scan(txn, m, &(struct meta_scan){
		.ms_table = META_T_SYS, .ms_prefix = "ridx:", .ms_plen = 5,
		.ms_fn = sync_all_one, .ms_arg = &sa,
		.ms_what = "replica records"});
	meta_rtxn_put(m, txn);
	ids = sa.sa_ids;
	nr = sa.sa_nr;
	for (size_t i = 0; i < nr && !s->s_qstop; i++) {
		struct ridx *ri = ridx_get(s, &ids[i]);

		if (ri != NULL && !ri->ri_verified)
			ridx_sync(s, ri);
	}
	free(ids);
}

/* Wait on s_qcond (s_qlock held) until the wall clock time due_ms. */
static void syncer_wait_until(struct srv *s, uint64_t due_ms)
{
	struct timespec ts;
	uint64_t now = srv_now_ms(), wait_ms = due_ms > now ? due_ms - now : 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(wait_ms / 1000);
	ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&s->s_qcond, &s->s_qlock, &ts);
}

/*
 * The indices this replica is behind on (ri_behind: it missed updates a
 * peer acknowledged) whose last catch-up is SRV_BEHIND_RETRY_MS old: their
 * catch-up tried again (ridx_sync).  Without it a replica whose catch-up
 * failed once stayed behind until a request of the index reached it, and
 * the clients, sent on by its -ESTALE, never sent one: the index had one
 * replica fewer, and none to go on with once the one ahead died
 * (tests/integ/ha_avail_test.sh: an index refused its updates with one
 * server down after its other two replicas had each missed a round).
 */
static void ridx_behind_pass(struct srv *s)
{
	struct ridx *pick[SRV_TOMB_PASS_MAX];
	uint64_t now = srv_now_ms();
	uint32_t nr = 0;

	pthread_mutex_lock(&s->s_rlock);
	for (uint32_t b = 0; b < SRV_RIDX_BUCKETS && nr < SRV_TOMB_PASS_MAX;
	     b++)
		for (struct ridx *ri = s->s_ridx[b];
		     ri != NULL && nr < SRV_TOMB_PASS_MAX; ri = ri->ri_next)
			/* one that reached no peer at its last try (its
			 * retry asks every peer, dead ones included, and
			 * holds the syncer meanwhile): ten times less often */
			if (ri->ri_behind &&
			    now >= ri->ri_vms + (ri->ri_lonely ? 10 : 1) *
					       SRV_BEHIND_RETRY_MS)
				pick[nr++] = ri;
	pthread_mutex_unlock(&s->s_rlock);
	/* records stay in the table until the server stops */
	for (uint32_t i = 0; i < nr && !s->s_qstop; i++)
		ridx_sync(s, pick[i]);
}

static void *srv_syncer_main(void *arg)
{
	struct srv *s = arg;
	uint64_t tomb_due = srv_now_ms() + SRV_TOMB_PASS_MS;

	eng_thread_enter();
	srv_sync_all(s);
	for (;;) {
		struct srv_op *so;
		bool tombs;

		pthread_mutex_lock(&s->s_qlock);
		while (s->s_qhead == NULL && !s->s_qstop && !s->s_tomb_kick &&
		       srv_now_ms() < tomb_due)
			syncer_wait_until(s, tomb_due);
		so = s->s_qhead;
		if (so != NULL) {
			s->s_qhead = so->so_next;
			if (s->s_qhead == NULL)
				s->s_qtail = NULL;
			s->s_qnr--;
		}
		tombs = so == NULL && !s->s_qstop;
		s->s_tomb_kick = false;
		pthread_mutex_unlock(&s->s_qlock);
		if (tombs) {
			bool round = srv_now_ms() >= tomb_due;

			/* Between requests: collect tombstones; once a
			 * round, catch up on the indices still behind. */
			ridx_tomb_pass(s, round);
			if (round) {
				ridx_behind_pass(s);
				tomb_due = srv_now_ms() + SRV_TOMB_PASS_MS;
			}
			continue;
		}
		if (so == NULL)
			break;
		if (ridx_stale(s, so->so_ridx, &so->so_vmark))
			ridx_sync(s, so->so_ridx);
		if (so->so_m.mr_op == SOP_ENT)
			srv_idx_ent_go(s, so);
		else
			srv_idx_go(s, so);
	}
	eng_thread_leave();
	return NULL;
}

/*
 * Heartbeat: every SRV_HEARTBEAT_MS, call each server this one shares index
 * replicas with (ring distance below R, both ways).  A failed call changes
 * that peer's peers_gen(), which makes every index replicated on it stale
 * here (ridx_stale()): a server cut off from its peers re-verifies its
 * indices before it serves them again, even if it was never restarted.
 * Heartbeats go from an endpoint of their own (s_hbpeers): a call to a
 * dead peer holds up an endpoint's other sends until it times out, which
 * must not delay the answers to clients.
 */
static void *srv_hb_main(void *arg)
{
	struct srv *s = arg;
	uint32_t n = s->s_conf->cc_nr_servers, r = srv_replicas(s);

	for (;;) {
		struct timespec ts;

		for (uint32_t j = 0; j < n; j++) {
			uint32_t fwd = (j + n - s->s_self) % n;
			struct rpc_result res;
			bool was;
			int rc;

			if (j == s->s_self || (fwd >= r && n - fwd >= r))
				continue;
			/* Test builds: fault srv.hb.down.keep leaves a peer
			 * found down uncalled, so this table keeps it down
			 * (and the marks held for it) while it is up, as
			 * when its calls keep failing from here only
			 * (dtx_cluster_test.sh 4f). */
			was = peers_down(s->s_hbpeers, j);
			if (was && FAULT_HIT("srv.hb.down.keep"))
				continue;
			__atomic_store_n(&s->s_hb_since, peers_clock_ms(),
					 __ATOMIC_RELEASE);
			__atomic_store_n(&s->s_hb_peer, (int32_t)j,
					 __ATOMIC_RELEASE);
			rc = peers_call_ms(s->s_hbpeers, j, RPC_OP_NOOP, NULL,
					   0, NULL, srv_probe_ms(s), &res);
			__atomic_store_n(&s->s_hb_peer, -1, __ATOMIC_RELEASE);
			free(res.rr_body);
			if (was != peers_down(s->s_hbpeers, j)) {
				if (was)
					LOG_INFO("server %s: server %s answers "
						 "again", s->s_me->cs_name,
						 s->s_conf->cc_servers[j].cs_name);
				else
					LOG_WARNING("server %s: server %s does "
						    "not answer: %s",
						    s->s_me->cs_name,
						    s->s_conf->cc_servers[j].cs_name,
						    rc != 0 ? err_msg() : "?");
			}
		}
		srv_ridx_marks_serve(s);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)SRV_HEARTBEAT_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&s->s_qlock);
		if (!s->s_qstop)
			pthread_cond_timedwait(&s->s_hbcond, &s->s_qlock, &ts);
		if (s->s_qstop) {
			pthread_mutex_unlock(&s->s_qlock);
			break;
		}
		pthread_mutex_unlock(&s->s_qlock);
	}
	return NULL;
}

/*
 * Stall watch: note the time every SRV_TICK_MS; a gap above SRV_LEASE_MS
 * since the last note means this process did not run for that long
 * (SIGSTOP, a long pause, starved): count it, so that every index
 * verifies before it is next served (ridx_stalled()).  Writers may have
 * skipped this server meanwhile; the behind marks they left reach it a
 * heartbeat or more after it runs again, and the contact lease does not
 * see the stall once a heartbeat sent after it is answered.  The count
 * goes up before the time is noted.
 */
static void *srv_tick_main(void *arg)
{
	const struct timespec tick = {0, (long)SRV_TICK_MS * 1000000L};
	struct srv *s = arg;

	/* A relative sleep on the monotonic clock: a step of the wall
	 * clock neither stretches the tick nor counts as a stall.  Stops
	 * within a tick of s_qstop. */
	while (!__atomic_load_n(&s->s_qstop, __ATOMIC_ACQUIRE)) {
		uint64_t now = srv_now_ms();
		uint64_t last = __atomic_load_n(&s->s_tick_ms, __ATOMIC_RELAXED);

		if (now > last + SRV_LEASE_MS) {
			__atomic_add_fetch(&s->s_stalls, 1, __ATOMIC_RELEASE);
			LOG_WARNING("server %s: did not run for %" PRIu64 " ms "
				    "(stopped or starved): verifying every "
				    "index before serving it",
				    s->s_me->cs_name, now - last);
		}
		__atomic_store_n(&s->s_tick_ms, now, __ATOMIC_RELEASE);
		clock_nanosleep(CLOCK_MONOTONIC, 0, &tick, NULL);
	}
	return NULL;
}

int srv_syncer_start(struct srv *s)
{
	int rc = pthread_create(&s->s_syncer, NULL, srv_syncer_main, s);

	if (rc != 0)
		return err_set(-rc, "server: syncer thread: %s", strerror(rc));
	s->s_syncer_on = true;
	rc = pthread_create(&s->s_hb, NULL, srv_hb_main, s);
	if (rc != 0)
		return err_set(-rc, "server: heartbeat thread: %s",
			       strerror(rc));
	s->s_hb_on = true;
	__atomic_store_n(&s->s_tick_ms, srv_now_ms(), __ATOMIC_RELEASE);
	rc = pthread_create(&s->s_tick, NULL, srv_tick_main, s);
	if (rc != 0)
		return err_set(-rc, "server: stall watch thread: %s",
			       strerror(rc));
	s->s_tick_on = true;
	return 0;
}

void srv_syncer_stop(struct srv *s)
{
	if (!s->s_syncer_on)
		return;
	pthread_mutex_lock(&s->s_qlock);
	__atomic_store_n(&s->s_qstop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&s->s_qcond);
	pthread_cond_broadcast(&s->s_hbcond);
	pthread_mutex_unlock(&s->s_qlock);
	pthread_join(s->s_syncer, NULL);
	s->s_syncer_on = false;
	if (s->s_hb_on)
		pthread_join(s->s_hb, NULL);
	s->s_hb_on = false;
	if (s->s_tick_on)
		pthread_join(s->s_tick, NULL);
	s->s_tick_on = false;
}

/* Park so until its index is verified. */
void srv_park(struct srv *s, struct srv_op *so)
{
	pthread_mutex_lock(&s->s_qlock);
	if (s->s_qnr >= SRV_PARK_MAX) {
		pthread_mutex_unlock(&s->s_qlock);
		srv_reply_err(so, err_set(-EBUSY, "server %s: %u requests wait"
					  " for index catch-up",
					  s->s_me->cs_name, SRV_PARK_MAX));
		return;
	}
	so->so_next = NULL;
	if (s->s_qtail != NULL)
		s->s_qtail->so_next = so;
	else
		s->s_qhead = so;
	s->s_qtail = so;
	s->s_qnr++;
	pthread_cond_signal(&s->s_qcond);
	pthread_mutex_unlock(&s->s_qlock);
}

/* Must so wait for its index to be verified?  Server-to-server requests
 * never wait; a client's request does if the index may be stale here, or
 * if the client could not reach this server since its last answer
 * (SRF_VERIFY: this server may have been cut off without noticing). */
bool srv_needs_sync(struct srv *s, struct srv_op *so)
{
	if (so->so_m.mr_rflags & (SRF_INTERNAL | SRF_REPLICA))
		return false;
	/* Before anything that asks for a verification: one that begins
	 * after this counts for this request (ridx_stale()). */
	pthread_mutex_lock(&s->s_rlock);
	so->so_vmark = so->so_ridx->ri_vbegun;
	pthread_mutex_unlock(&s->s_rlock);
	if (so->so_m.mr_rflags & SRF_VERIFY) {
		/* Every index here may be stale, not only this one. */
		__atomic_add_fetch(&s->s_vepoch, 1, __ATOMIC_ACQ_REL);
		return true;
	}
	return ridx_stale(s, so->so_ridx, &so->so_vmark);
}

