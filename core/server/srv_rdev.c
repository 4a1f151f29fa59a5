/*
 * srv_rdev.c — the target half of remote devices (docs/cluster.md
 * "Placement across servers"): SOP_RDEV_WRITE/READ/SYNC from a home server
 * on its slice of one of this server's devices; and the executor threads
 * that run object requests off the RPC handler threads.
 *
 * Why the executor: an object op of a pdclust/mirror object does unit I/O
 * on other servers' devices (core/server/cli_rdev.c) and waits for it.  Were it
 * run on an RPC handler thread, servers whose handlers all wait on each
 * other's unit I/O would have none left to serve it: RDEV requests, which
 * only do local device I/O, must always find a free handler.  So object
 * requests are handed to SRV_EXEC_THREADS threads of their own (queued at
 * most as many as the RPC layer accepts unanswered, rc_queue_depth).
 *
 * Checks of an RDEV request, each refused with -EINVAL and a message
 * naming the field and counted as a bad request: the shape
 * (msg_rdev_decode), home a server of the cluster (this one too: a
 * takeover's writes of its own slice, srv_home.h),
 * device an existing local device of this store (not remote, not zoned),
 * and the range [off, off + len) inside one slice (the caller's slice of
 * that device, conf_slice_size()).  The caller proved the cluster secret
 * (every peer does); the bounds keep a buggy or hostile peer out of the
 * other homes' slices and of this server's own.
 *
 * The WRITE fence (docs/cluster.md "The deadline fence"): a WRITE is
 * refused with -ETIMEDOUT once this server's clock is past the deadline it
 * carries (checked before the pull and again just before the device
 * write), and with -ESTALE when it comes from an earlier incarnation
 * (epoch) of its home than one already seen; both counted as sc_late.  The
 * device write runs under a read lock of its home's fence; a request of a
 * new incarnation takes that lock for writing to raise the epoch, so no
 * write of an earlier incarnation lands after one of the new one.  A
 * deadline further ahead than any the home can give (skewed clocks) is
 * refused as malformed.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/rdev.h"
#include "core/server/srv_internal.h"

/** The executor of object requests. */
struct srv_exec {
	pthread_mutex_t sx_lock;
	pthread_cond_t sx_cond;
	struct srv_xitem *sx_head, *sx_tail;
	bool sx_stop;
	uint32_t sx_nr_thr;
	pthread_t sx_thr[SRV_EXEC_THREADS];
	/* SOP_WALK threads running (at most one: a second walk is refused
	 * with -EBUSY); srv_walk_stop() waits for it under sx_lock. */
	uint32_t sx_walks;
	pthread_cond_t sx_walk_cond;
	/* first write of each home to each device, logged once per run */
	uint8_t sx_seen[CLU_SERVERS_MAX][LIM_DEV_MAX];
	/* the WRITE fence of each home: latest incarnation seen (written
	 * under the lock held for writing) */
	pthread_rwlock_t sx_fence[CLU_SERVERS_MAX];
	uint64_t sx_epoch[CLU_SERVERS_MAX];
	/* this server's own slice is lent to the server acting for its
	 * home (srv_rdev_own_lend(); written under sx_fence[s_self] held
	 * for writing) */
	bool sx_own_lent;
};

struct srv_xitem {
	struct srv_xitem *xi_next;
	struct srv *xi_srv;
	struct srv_op *xi_so;
	void (*xi_fn)(struct srv *s, struct srv_op *so);
};

/* --------------------------------------------------- RDEV requests */

/* The device and byte offset q addresses, or -EINVAL with a message. */
static int srv_rdev_check(struct srv *s, const RdevReq *q,
			  struct tier_dev **out, uint64_t *base)
{
	const struct clu_conf *c = s->s_conf;
	struct eng_dev *ed;

	/* home may be this server: its own slice read and written by the
	 * server acting for its home while it is away (docs/cluster.md
	 * "Taking over a home"); a write only while that slice is lent
	 * (srv_rdev_admit()) */
	if (q->home >= c->cc_nr_servers)
		return err_set(-EINVAL, "request: rdev.home %u: not a server "
			       "of cluster %s (%u servers)", q->home,
			       c->cc_name, c->cc_nr_servers);
	ed = q->dev < eng_dev_nr(s->s_eng) ? eng_dev_get(s->s_eng, q->dev)
					   : NULL;
	if (ed == NULL)
		return err_set(-EINVAL, "request: rdev.dev %u: server %s has "
			       "%u devices", q->dev, s->s_me->cs_name,
			       eng_dev_nr(s->s_eng));
	if (strcmp(ed->ed_dev->td_ops->to_name, ENG_REMOTE_DRIVER) == 0 ||
	    tier_dev_zoned(ed->ed_dev))
		return err_set(-EINVAL, "request: rdev.dev %u (%s): not a "
			       "device this server lends (remote or zoned)",
			       q->dev, ed->ed_dev->td_path);
	if (msg_rdev_range(q, c->cc_nr_servers,
			   tier_dev_size(ed->ed_dev), base) != 0)
		return err_set(-EINVAL, "%s (server %s, device %u)", err_msg(),
			       s->s_me->cs_name, q->dev);
	*out = ed->ed_dev;
	return 0;
}

/* The deadline half of the fence: 0, or -ETIMEDOUT (counted, logged). */
static int srv_rdev_deadline(struct srv *s, const RdevReq *q, const char *when)
{
	uint64_t now = eng_now_ns();

	if (now <= q->deadline_ns)
		return 0;
	__atomic_add_fetch(&s->s_cnt.sc_late, 1, __ATOMIC_RELAXED);
	LOG_WARNING("server %s: refused a late unit write of home %s (device "
		    "%u, offset %" PRIu64 ", %" PRIu64 " bytes): %" PRIu64
		    " ms past its deadline %s", s->s_me->cs_name,
		    s->s_conf->cc_servers[q->home].cs_name, q->dev, q->off,
		    q->len, (now - q->deadline_ns) / 1000000, when);
	return err_set(-ETIMEDOUT, "rdev write: %" PRIu64 " ms past its "
		       "deadline (server %s)", (now - q->deadline_ns) / 1000000,
		       s->s_me->cs_name);
}

/*
 * Admit a checked WRITE through its home's fence: 0 with the fence's read
 * lock held (srv_rdev_io() drops it after the device write), or a negative
 * code with nothing held.
 */
static int srv_rdev_admit(struct srv *s, const RdevReq *q)
{
	struct srv_exec *x = s->s_exec;
	pthread_rwlock_t *l = &x->sx_fence[q->home];
	uint64_t now = eng_now_ns();
	int rc;

	if (q->deadline_ns > now + (uint64_t)(RDEV_CALL_MS_MAX +
					      RDEV_FENCE_MARGIN_MS) * 1000000ull) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		return err_set(-EINVAL, "request: rdev.deadline_ns %" PRIu64
			       " is %" PRIu64 " ms ahead of server %s's clock "
			       "(at most %u): clocks too far apart for the "
			       "write fence", q->deadline_ns,
			       (q->deadline_ns - now) / 1000000,
			       s->s_me->cs_name,
			       RDEV_CALL_MS_MAX + RDEV_FENCE_MARGIN_MS);
	}
	pthread_rwlock_rdlock(l);
	if (q->home == s->s_self && !x->sx_own_lent) {
		pthread_rwlock_unlock(l);
		__atomic_add_fetch(&s->s_cnt.sc_late, 1, __ATOMIC_RELAXED);
		return err_set(-EREMCHG, "rdev write as home %s to its own "
			       "slice refused: server %s serves its home "
			       "itself (its slice is not lent to a server "
			       "acting for it)", s->s_me->cs_name,
			       s->s_me->cs_name);
	}
	while (q->epoch > x->sx_epoch[q->home]) {
		pthread_rwlock_unlock(l);
		pthread_rwlock_wrlock(l);
		if (q->epoch > x->sx_epoch[q->home]) {
			if (x->sx_epoch[q->home] != 0)
				LOG_WARNING("server %s: home %s restarted: unit "
					    "writes of its earlier run are "
					    "refused from now on",
					    s->s_me->cs_name,
					    s->s_conf->cc_servers[q->home].cs_name);
			x->sx_epoch[q->home] = q->epoch;
		}
		pthread_rwlock_unlock(l);
		pthread_rwlock_rdlock(l);
	}
	if (q->epoch < x->sx_epoch[q->home]) {
		pthread_rwlock_unlock(l);
		__atomic_add_fetch(&s->s_cnt.sc_late, 1, __ATOMIC_RELAXED);
		LOG_WARNING("server %s: refused a unit write of an earlier run "
			    "of home %s (device %u, offset %" PRIu64 ")",
			    s->s_me->cs_name,
			    s->s_conf->cc_servers[q->home].cs_name, q->dev,
			    q->off);
		return err_set(-ESTALE, "rdev write of an earlier run of home "
			       "%s (epoch %" PRIu64 ", now %" PRIu64 ")",
			       s->s_conf->cc_servers[q->home].cs_name, q->epoch,
			       x->sx_epoch[q->home]);
	}
	rc = srv_rdev_deadline(s, q, "on arrival");
	if (rc != 0)
		pthread_rwlock_unlock(l);
	return rc;
}

/* Do the I/O of a checked request. */
static int srv_rdev_io(struct srv *s, struct rpc_sreq *req, uint32_t op,
		       const RdevReq *q, struct tier_dev *d, uint64_t base)
{
	void *buf;
	int rc;

	if (op == SOP_RDEV_SYNC)
		return tier_dev_sync(d);
	/* Registered and page-aligned (the pool): no registration per
	 * unit, and the O_DIRECT device I/O uses it as is. */
	buf = rpc_buf_get(s->s_ep, q->len);
	if (buf == NULL)
		return err_set(-ENOMEM, "rdev: %" PRIu64 " bytes", q->len);
	if (op == SOP_RDEV_WRITE) {
		rc = srv_rdev_admit(s, q);
		if (rc != 0) {
			rpc_buf_put(s->s_ep, buf, false);
			return rc;
		}
		rc = rpc_sreq_bulk_pull(req, 0, buf, q->len);
		if (rc == 0)
			rc = srv_rdev_deadline(s, q, "after its data came");
		if (rc == 0)
			rc = tier_dev_write(d, base + q->off, buf, q->len);
		pthread_rwlock_unlock(&s->s_exec->sx_fence[q->home]);
		if (rc == 0 && !s->s_exec->sx_seen[q->home][q->dev]) {
			s->s_exec->sx_seen[q->home][q->dev] = 1;
			LOG_INFO("server %s: device %u (%s): first unit from "
				 "home %s (slice %u)", s->s_me->cs_name, q->dev,
				 d->td_path, s->s_conf->cc_servers[q->home].cs_name,
				 q->home);
		}
	} else {
		rc = tier_dev_read(d, base + q->off, buf, q->len);
		if (rc == 0)
			rc = rpc_sreq_bulk_push(req, 0, buf, q->len);
	}
	/* A transfer abandoned at its deadline may still land: never
	 * reuse that memory. */
	rpc_buf_put(s->s_ep, buf, rc == -ETIMEDOUT);
	return rc;
}

static void srv_rdev_handle(struct rpc_sreq *req, void *arg)
{
	struct srv *s = arg;
	uint32_t op = rpc_sreq_opcode(req);
	struct tier_dev *d = NULL;
	uint64_t base = 0;
	RdevReq *q = NULL;
	size_t len;
	const void *body = rpc_sreq_body(req, &len);
	int rc;

	if (!srv_enter_peer(s)) {
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "server is stopping");
		return;
	}
	err_clear();
	rc = msg_rdev_decode(op, body, len, rpc_sreq_bulk_len(req), &q);
	if (rc == 0)
		rc = srv_rdev_check(s, q, &d, &base);
	if (rc != 0) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		LOG_INFO("server %s: refused a remote device request from %s: "
			 "%s", s->s_me->cs_name, rpc_sreq_peer(req), err_msg());
	} else {
		__atomic_add_fetch(&s->s_cnt.sc_requests, 1, __ATOMIC_RELAXED);
		rc = srv_rdev_io(s, req, op, q, d, base);
	}
	rpc_sreq_reply(req, rc, NULL, 0, rc != 0 ? err_msg() : NULL);
	if (q != NULL)
		rdev_req__free_unpacked(q, NULL);
	srv_leave(s);
}

int srv_walk_register(struct srv *s);

int srv_rdev_register(struct srv *s)
{
	int rc = srv_walk_register(s);

	if (rc == 0)
		rc = srv_isc_register(s);

	for (uint32_t op = SOP_RDEV_WRITE; rc == 0 && op < SOP_RDEV_END; op++)
		rc = rpc_handler_set(s->s_ep, op, srv_rdev_handle, s);
	return rc;
}

/* ------------------------------------------------------------ executor */

static void *srv_exec_main(void *arg)
{
	struct srv_exec *x = arg;

	eng_thread_enter();
	for (;;) {
		struct srv_xitem *it;

		pthread_mutex_lock(&x->sx_lock);
		while (x->sx_head == NULL && !x->sx_stop)
			pthread_cond_wait(&x->sx_cond, &x->sx_lock);
		it = x->sx_head;
		if (it != NULL) {
			x->sx_head = it->xi_next;
			if (x->sx_head == NULL)
				x->sx_tail = NULL;
		}
		pthread_mutex_unlock(&x->sx_lock);
		if (it == NULL)
			break; /* stopping, queue empty */
		err_clear();
		it->xi_fn(it->xi_srv, it->xi_so);
		free(it);
	}
	eng_thread_leave();
	return NULL;
}

int srv_exec_start(struct srv *s)
{
	struct srv_exec *x = calloc(1, sizeof *x);
	int rc = 0;

	if (x == NULL)
		return err_set(-ENOMEM, "server: executor");
	pthread_mutex_init(&x->sx_lock, NULL);
	pthread_cond_init(&x->sx_cond, NULL);
	pthread_cond_init(&x->sx_walk_cond, NULL);
	for (uint32_t i = 0; i < CLU_SERVERS_MAX; i++)
		pthread_rwlock_init(&x->sx_fence[i], NULL);
	s->s_exec = x;
	for (uint32_t i = 0; rc == 0 && i < SRV_EXEC_THREADS; i++) {
		rc = -pthread_create(&x->sx_thr[i], NULL, srv_exec_main, x);
		if (rc == 0)
			x->sx_nr_thr++;
	}
	if (rc != 0)
		return err_set(rc, "server: executor thread: %s",
			       strerror(-rc));
	return 0;
}

void srv_exec_stop(struct srv *s)
{
	struct srv_exec *x = s->s_exec;

	if (x == NULL)
		return;
	pthread_mutex_lock(&x->sx_lock);
	x->sx_stop = true;
	pthread_cond_broadcast(&x->sx_cond);
	pthread_mutex_unlock(&x->sx_lock);
	for (uint32_t i = 0; i < x->sx_nr_thr; i++)
		pthread_join(x->sx_thr[i], NULL);
	pthread_mutex_destroy(&x->sx_lock);
	pthread_cond_destroy(&x->sx_cond);
	pthread_cond_destroy(&x->sx_walk_cond);
	for (uint32_t i = 0; i < CLU_SERVERS_MAX; i++)
		pthread_rwlock_destroy(&x->sx_fence[i]);
	s->s_exec = NULL;
	free(x);
}

void srv_rdev_own_lend(struct srv *s, bool lend)
{
	struct srv_exec *x = s->s_exec;
	pthread_rwlock_t *l;

	if (x == NULL)
		return;
	l = &x->sx_fence[s->s_self];
	/* for writing: a write admitted while lent is on the device before
	 * this returns, so the own engine never writes beside it */
	pthread_rwlock_wrlock(l);
	__atomic_store_n(&x->sx_own_lent, lend, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(l);
}

void srv_exec_defer(struct srv *s, struct srv_op *so,
		    void (*fn)(struct srv *s, struct srv_op *so))
{
	struct srv_exec *x = s->s_exec;
	struct srv_xitem *it = calloc(1, sizeof *it);

	if (it == NULL) {
		srv_reply_err(so, err_set(-ENOMEM, "server: executor item"));
		return;
	}
	*it = (struct srv_xitem){NULL, s, so, fn};
	pthread_mutex_lock(&x->sx_lock);
	if (x->sx_tail != NULL)
		x->sx_tail->xi_next = it;
	else
		x->sx_head = it;
	x->sx_tail = it;
	pthread_cond_signal(&x->sx_cond);
	pthread_mutex_unlock(&x->sx_lock);
}

/* ------------------------------------------------------------- walks */

/* SOP_WALK: a repair, rebalance or scrub of this server's engine (the
 * units of the objects homed here, on every server's devices), on a
 * thread of its own: a walk takes long, and must hold neither an RPC
 * handler nor an executor thread. */
struct srv_walk {
	struct srv *sw_srv;
	struct rpc_sreq *sw_req;
	uint32_t sw_kind;
};

void srv_walk_stats_msg(WalkStats *ws, const struct stripe_walk_stats *st)
{
	ws->units = st->sw_units;
	ws->rebuilt = st->sw_rebuilt;
	ws->moved = st->sw_moved;
	ws->corrupt = st->sw_corrupt;
	ws->unrepairable = st->sw_unrepairable;
	ws->elapsed_ns = st->sw_elapsed_ns;
	ws->bytes = st->sw_bytes;
	ws->resumed = (uint32_t)st->sw_resumed;
	ws->devices = st->sw_devices;
	ws->walk_units = st->sw_walk_units;
	ws->walk_rebuilt = st->sw_walk_rebuilt;
	ws->walk_moved = st->sw_walk_moved;
	ws->walk_corrupt = st->sw_walk_corrupt;
	ws->walk_unrepairable = st->sw_walk_unrepairable;
	ws->shared = st->sw_shared;
}

static const char *srv_walk_name(uint32_t kind)
{
	return kind == SWK_REPAIR ? "repair" :
	       kind == SWK_REBALANCE ? "rebalance" : "scrub";
}

/* Between batches: stop (the walk keeps its place, -EINTR) once the
 * server is stopping, so that SIGTERM does not wait for a whole walk. */
static int srv_walk_progress(void *arg, uint64_t done, uint64_t total)
{
	struct srv *s = arg;

	(void)total;
	if (!__atomic_load_n(&s->s_draining, __ATOMIC_ACQUIRE))
		return 0;
	LOG_WARNING("server %s: stopping: walk stopped after %" PRIu64
		    " units (the next one resumes it)", s->s_me->cs_name,
		    done);
	return 1;
}

/* One engine's walk of kind (the server's own, or one it acts for). */
static int srv_walk_eng(struct eng *e, uint32_t kind, stripe_progress_fn fn,
			void *arg, struct stripe_walk_stats *st)
{
	return kind == SWK_REPAIR ? eng_unit_repair(e, fn, arg, st) :
	       kind == SWK_REBALANCE ? eng_unit_rebalance(e, fn, arg, st) :
	       eng_unit_scrub(e, fn, arg, st);
}


/* A walk of the engine a server acts for another home with (ha/
 * srv_home.c, s_route_each): the units of that home's objects, which
 * its own server, dead or handing its home over, cannot walk. */
struct srv_walk_home {
	struct srv *wh_srv;
	uint32_t wh_kind;
	uint32_t wh_home;
	struct stripe_walk_stats wh_st;
	int wh_rc;            /* the first home's failure, and its message */
	char wh_msg[256];
};

/* Between batches of a takeover engine's walk: stop once the server
 * stops, or the engine closes or is handed back (its close waits for the
 * walk's reference). */
static int srv_walk_home_progress(void *arg, uint64_t done, uint64_t total)
{
	struct srv_walk_home *wh = arg;
	struct srv *s = wh->wh_srv;

	if (srv_walk_progress(s, done, total) != 0)
		return 1;
	if (s->s_route_going == NULL ||
	    !s->s_route_going(s->s_route_arg, wh->wh_home))
		return 0;
	LOG_WARNING("server %s: walk of home %s stopped after %" PRIu64
		    " units: its engine closes or is handed back (the next "
		    "walk there resumes it)", s->s_me->cs_name,
		    s->s_conf->cc_servers[wh->wh_home].cs_name, done);
	return 1;
}

static int srv_walk_home_one(void *arg, uint32_t home, struct eng *e)
{
	struct srv_walk_home *wh = arg;
	struct srv *s = wh->wh_srv;
	struct stripe_walk_stats st = {0};
	int rc;

	wh->wh_home = home;
	if (e == NULL) {
		/* acting for it, its engine not serving now: not walked,
		 * and the job must know (it asks again: ha/ha_lead.c) */
		rc = err_set(-EAGAIN, "server %s: %s of home %s not made: its "
			     "engine is opening, closing or handed back",
			     s->s_me->cs_name, srv_walk_name(wh->wh_kind),
			     s->s_conf->cc_servers[home].cs_name);
		LOG_WARNING("%s", err_msg());
		if (wh->wh_rc == 0) {
			wh->wh_rc = rc;
			snprintf(wh->wh_msg, sizeof wh->wh_msg, "%s",
				 err_msg());
		}
		return 0;
	}
	rc = srv_walk_eng(e, wh->wh_kind, srv_walk_home_progress, wh, &st);
	if (rc == -EIO && st.sw_walk_unrepairable > 0)
		rc = 0; /* figures answered, as the own walk's */
	/* handed back or moved meanwhile: not walked to its end, and the
	 * job must know (it asks again; the next walk resumes it, or its
	 * new server's walks it) */
	if ((rc == -EINTR ||
	     (rc != 0 && s->s_route_going != NULL &&
	      s->s_route_going(s->s_route_arg, home))) &&
	    !__atomic_load_n(&s->s_draining, __ATOMIC_ACQUIRE))
		rc = err_set(-EAGAIN, "server %s: %s of home %s cut short: its "
			     "engine closes or is handed back",
			     s->s_me->cs_name, srv_walk_name(wh->wh_kind),
			     s->s_conf->cc_servers[home].cs_name);
	LOG_WARNING("server %s: %s of home %s (acting for it): %" PRIu64
		    " units, %" PRIu64 " rebuilt, %" PRIu64 " moved, %" PRIu64
		    " corrupt, %" PRIu64 " unrepairable: %d", s->s_me->cs_name,
		    srv_walk_name(wh->wh_kind),
		    s->s_conf->cc_servers[home].cs_name, st.sw_units,
		    st.sw_rebuilt, st.sw_moved, st.sw_corrupt,
		    st.sw_unrepairable, rc);
	eng_walk_stats_add(&wh->wh_st, &st);
	if (rc != 0 && wh->wh_rc == 0) {
		wh->wh_rc = rc;
		snprintf(wh->wh_msg, sizeof wh->wh_msg, "%s", err_msg());
	}
	return 0; /* the other homes are walked all the same */
}

static void *srv_walk_main(void *arg)
{
	struct srv_walk *w = arg;
	struct srv *s = w->sw_srv;
	struct srv_exec *x = s->s_exec;
	struct stripe_walk_stats st = {0};
	struct srv_walk_home wh = {0};
	WalkStats ws = WALK_STATS__INIT;
	Reply rp = REPLY__INIT;
	struct msg_buf wb = {0}, rb = {0};
	int rc;

	/* The walks register their thread with the engine themselves. */
	err_clear();
	LOG_WARNING("server %s: %s started", s->s_me->cs_name,
		    srv_walk_name(w->sw_kind));
	rc = srv_walk_eng(s->s_eng, w->sw_kind, srv_walk_progress, s, &st);
	LOG_WARNING("server %s: %s: %" PRIu64 " units, %" PRIu64 " rebuilt, %"
		    PRIu64 " moved, %" PRIu64 " corrupt, %" PRIu64
		    " unrepairable, %" PRIu64 " groups sharing a server: %d",
		    s->s_me->cs_name, srv_walk_name(w->sw_kind),
		    st.sw_units, st.sw_rebuilt, st.sw_moved, st.sw_corrupt,
		    st.sw_unrepairable, st.sw_shared, rc);
	/* then the homes this server acts for (docs/cluster.md "Walks of a
	 * taken-over home") */
	if (s->s_route_each != NULL &&
	    (rc == 0 || (rc == -EIO && st.sw_walk_unrepairable > 0))) {
		wh.wh_srv = s;
		wh.wh_kind = w->sw_kind;
		s->s_route_each(s->s_route_arg, srv_walk_home_one, &wh);
		eng_walk_stats_add(&st, &wh.wh_st);
		/* a home's walk that failed or was not made is the answer,
		 * even when the own walk only counted unrepairable units */
		if (wh.wh_rc != 0)
			rc = err_set(wh.wh_rc, "%s", wh.wh_msg);
	}
	srv_walk_stats_msg(&ws, &st);
	/* Units that could not be rebuilt: the walk itself ran to its end,
	 * so answer its figures (the caller sees walk_unrepairable and
	 * fails with -EIO itself). */
	if (rc == -EIO && st.sw_walk_unrepairable > 0 && wh.wh_rc == 0)
		rc = 0;
	if (rc == 0 && msg_pack(&ws.base, &wb) == 0) {
		rp.text.data = wb.mb_p;
		rp.text.len = wb.mb_len;
		rc = msg_pack(&rp.base, &rb);
	}
	rpc_sreq_reply(w->sw_req, rc, rb.mb_p, rb.mb_len,
		       rc != 0 ? err_msg() : NULL);
	free(wb.mb_p);
	free(rb.mb_p);
	free(w);
	__atomic_sub_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_RELAXED);
	/* The last touch of the server: srv_walk_stop() may free it once
	 * this is seen. */
	pthread_mutex_lock(&x->sx_lock);
	x->sx_walks--;
	pthread_cond_broadcast(&x->sx_walk_cond);
	pthread_mutex_unlock(&x->sx_lock);
	return NULL;
}

void srv_walk_stop(struct srv *s)
{
	struct srv_exec *x = s->s_exec;

	if (x == NULL)
		return;
	pthread_mutex_lock(&x->sx_lock);
	while (x->sx_walks > 0)
		pthread_cond_wait(&x->sx_walk_cond, &x->sx_lock);
	pthread_mutex_unlock(&x->sx_lock);
}

static void srv_walk_handle(struct rpc_sreq *req, void *arg)
{
	struct srv *s = arg;
	struct srv_walk *w;
	pthread_attr_t at;
	pthread_t t;
	size_t len;
	const void *body = rpc_sreq_body(req, &len);
	uint32_t kind;
	int rc;

	err_clear();
	rc = msg_walk_decode(body, len, &kind);
	if (rc != 0) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		LOG_INFO("server %s: refused a walk request from %s: %s",
			 s->s_me->cs_name, rpc_sreq_peer(req), err_msg());
		rpc_sreq_reply(req, rc, NULL, 0, err_msg());
		return;
	}
	if (__atomic_load_n(&s->s_draining, __ATOMIC_ACQUIRE) ||
	    (w = calloc(1, sizeof *w)) == NULL) {
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "server is stopping "
			       "or out of memory");
		return;
	}
	*w = (struct srv_walk){s, req, kind};
	if (__atomic_load_n(&s->s_exec->sx_own_lent, __ATOMIC_ACQUIRE)) {
		/* its own engine's metadata of its home is stale while
		 * another server acts for it (ha/srv_home.h): a walk would
		 * rewrite units from it */
		free(w);
		rpc_sreq_reply(req, -EREMCHG, NULL, 0, "server's home is "
			       "served by another server: no walk here until "
			       "the handback");
		return;
	}
	pthread_mutex_lock(&s->s_exec->sx_lock);
	if (s->s_exec->sx_walks > 0) {
		pthread_mutex_unlock(&s->s_exec->sx_lock);
		free(w);
		rpc_sreq_reply(req, -EBUSY, NULL, 0, "server is running a walk "
			       "already (one at a time)");
		return;
	}
	s->s_exec->sx_walks++;
	pthread_mutex_unlock(&s->s_exec->sx_lock);
	__atomic_add_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_RELAXED);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &at, srv_walk_main, w);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		__atomic_sub_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&s->s_exec->sx_lock);
		s->s_exec->sx_walks--;
		pthread_mutex_unlock(&s->s_exec->sx_lock);
		free(w);
		rpc_sreq_reply(req, -rc, NULL, 0, "server: walk thread");
	}
}

int srv_walk_register(struct srv *s)
{
	return rpc_handler_set(s->s_ep, SOP_WALK, srv_walk_handle, s);
}
