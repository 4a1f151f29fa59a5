/*
 * cli_rdev.c — the remote device driver (see rdev.h): the client half of unit
 * I/O on another server's device, run by the home server's engine.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "core/engine.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/msg.h"
#include "core/server/peers.h"
#include "core/server/rdev.h"
#include "tiers/tier.h"

/** The process's cluster context. */
struct rdev_ctx {
	const struct clu_conf *rc_conf;
	uint32_t rc_self;
	uint32_t rc_call_ms;
	uint64_t rc_epoch;       /* this incarnation: rdev_start() time, or
				  * raised above a takeover (atomic) */
	uint32_t rc_hold;        /* atomic: 1 = own home taken over: no
				  * unit WRITE as this home */
	struct peers *rc_data;   /* unit I/O */
	struct peers *rc_probe;  /* probes: never held up by data */
	uint32_t rc_down[CLU_SERVERS_MAX]; /* atomic: 1 = unreachable */
	/* atomic: when (peers_clock_ms) a contact last found it away */
	uint64_t rc_down_ms[CLU_SERVERS_MAX];
	pthread_t rc_thr[CLU_SERVERS_MAX]; /* one prober per other server */
	bool rc_thr_on[CLU_SERVERS_MAX];
	bool rc_stop;
	pthread_mutex_t rc_lock;
	pthread_cond_t rc_cond;
};

/** One remote device: device rd_dev of server rd_srv, as home rd_home
 *  (this server, or the home it acts for) with incarnation rd_epoch (0:
 *  this process's, rdev_epoch()). */
struct rdev {
	uint32_t rd_srv;
	uint32_t rd_dev;
	uint32_t rd_home;
	uint64_t rd_epoch;
	uint64_t rd_deadline; /* atomic: latest deadline given to a WRITE */
};

static struct rdev_ctx *rdev_g;

static const char *rdev_name(uint32_t i)
{
	return rdev_g->rc_conf->cc_servers[i].cs_name;
}

bool rdev_server_down(uint32_t i)
{
	return rdev_g != NULL && i < CLU_SERVERS_MAX &&
	       __atomic_load_n(&rdev_g->rc_down[i], __ATOMIC_ACQUIRE) != 0;
}

/* Server i answered (up true) or failed in the transport: log the
 * transitions only. */
static void rdev_mark(uint32_t i, bool up, const char *why)
{
	uint32_t want = up ? 0 : 1;
	uint32_t old;

	if (!up)
		__atomic_store_n(&rdev_g->rc_down_ms[i], peers_clock_ms(),
				 __ATOMIC_RELEASE);
	old = __atomic_exchange_n(&rdev_g->rc_down[i], want, __ATOMIC_ACQ_REL);
	if (old == want)
		return;
	if (up) {
		peers_retry_now(rdev_g->rc_data, i);
		LOG_WARNING("server %s: remote devices reachable again",
			 rdev_name(i));
	} else {
		LOG_WARNING("server %s unreachable, its remote devices are "
			    "skipped (degraded) until it answers: %s",
			    rdev_name(i), why);
	}
}

/* ------------------------------------------------------------ driver */

/* The "@HOME+INC" tail of a remote path (rdev.h): *home, *inc; 0 or
 * -EINVAL. */
static int rdev_home_parse(const char *path, const char *tail,
			   uint32_t *home, uint64_t *inc)
{
	const char *plus = strchr(tail, '+');
	char name[CLU_NAME_MAX + 1];
	char *end;
	int h;

	if (plus == NULL || plus == tail || (size_t)(plus - tail) > CLU_NAME_MAX)
		return err_set(-EINVAL, "device %s: expected @HOME+INCARNATION",
			       path);
	memcpy(name, tail, (size_t)(plus - tail));
	name[plus - tail] = '\0';
	h = clu_server_find(rdev_g->rc_conf, name);
	if (h < 0)
		return err_set(-EINVAL, "device %s: home \"%s\" is not a server "
			       "of cluster %s", path, name,
			       rdev_g->rc_conf->cc_name);
	*inc = strtoull(plus + 1, &end, 10);
	if (*end != '\0' || end == plus + 1 || *inc == 0)
		return err_set(-EINVAL, "device %s: bad incarnation", path);
	*home = (uint32_t)h;
	return 0;
}

/* path: "remote:SERVER:INDEX" or "remote:SERVER:INDEX@HOME+INC". */
static int rdev_open(struct tier_dev *d, const char *path)
{
	const char *ref = path + sizeof ENG_REMOTE_PREFIX - 1;
	const char *at = strchr(path, '@');
	char buf[2 * CLU_NAME_MAX + 32];
	const char *colon;
	char name[CLU_NAME_MAX + 1];
	struct rdev *rd;
	char *end;
	unsigned long idx;
	uint32_t home;
	uint64_t inc = 0;
	int srv, rc;

	if (rdev_g == NULL)
		return err_set(-ENOTSUP, "device %s: no cluster context in "
			       "this process", path);
	home = rdev_g->rc_self;
	if (at != NULL) {
		rc = rdev_home_parse(path, at + 1, &home, &inc);
		if (rc != 0)
			return rc;
		if ((size_t)(at - path) >= sizeof buf)
			return err_set(-EINVAL, "device %s: too long", path);
		memcpy(buf, path, (size_t)(at - path));
		buf[at - path] = '\0';
		ref = buf + sizeof ENG_REMOTE_PREFIX - 1;
	}
	colon = strrchr(ref, ':');
	if (strncmp(path, ENG_REMOTE_PREFIX, sizeof ENG_REMOTE_PREFIX - 1) ||
	    colon == NULL || (size_t)(colon - ref) > CLU_NAME_MAX ||
	    colon == ref)
		return err_set(-EINVAL, "device %s: expected remote:SERVER:INDEX",
			       path);
	idx = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || end == colon + 1 || idx >= LIM_DEV_MAX)
		return err_set(-EINVAL, "device %s: bad device index", path);
	memcpy(name, ref, (size_t)(colon - ref));
	name[colon - ref] = '\0';
	srv = clu_server_find(rdev_g->rc_conf, name);
	/* this server's own device: only as another home (a takeover),
	 * then through its own RDEV service like any owner's; the home's
	 * own device (its slice of it) likewise, through the home */
	if (srv < 0 || ((uint32_t)srv == rdev_g->rc_self &&
			(at == NULL || home == rdev_g->rc_self)))
		return err_set(-EINVAL, "device %s: server \"%s\" is not another "
			       "server of cluster %s", path, name,
			       rdev_g->rc_conf->cc_name);
	rd = calloc(1, sizeof *rd);
	if (rd == NULL)
		return err_set(-ENOMEM, "device %s", path);
	rd->rd_srv = (uint32_t)srv;
	rd->rd_dev = (uint32_t)idx;
	rd->rd_home = home;
	rd->rd_epoch = inc;
	d->td_priv = rd;
	return 0;
}

bool rdev_locate(struct tier_dev *d, uint32_t *server, uint32_t *dev,
		 uint32_t *home)
{
	const struct rdev *rd;

	if (d == NULL || d->td_ops == NULL ||
	    strcmp(d->td_ops->to_name, ENG_REMOTE_DRIVER) != 0 ||
	    d->td_priv == NULL)
		return false;
	rd = d->td_priv;
	*server = rd->rd_srv;
	*dev = rd->rd_dev;
	*home = rd->rd_home;
	return true;
}

static void rdev_close(struct tier_dev *d)
{
	free(d->td_priv);
	d->td_priv = NULL;
}

/* No WRITE given to d so far can land after this (0: none was given). */
static uint64_t rdev_fence(struct tier_dev *d)
{
	struct rdev *rd = d->td_priv;
	uint64_t dl = __atomic_load_n(&rd->rd_deadline, __ATOMIC_ACQUIRE);

	return dl == 0 ? 0 : dl + (uint64_t)RDEV_FENCE_MARGIN_MS * 1000000ull;
}

uint64_t rdev_epoch(void)
{
	return rdev_g != NULL ? __atomic_load_n(&rdev_g->rc_epoch,
						__ATOMIC_ACQUIRE) : 0;
}

void rdev_epoch_raise(uint64_t above)
{
	uint64_t old;

	if (rdev_g == NULL)
		return;
	old = __atomic_load_n(&rdev_g->rc_epoch, __ATOMIC_ACQUIRE);
	while (old <= above &&
	       !__atomic_compare_exchange_n(&rdev_g->rc_epoch, &old, above + 1,
					    false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE))
		;
}

void rdev_home_hold(bool hold)
{
	if (rdev_g != NULL)
		__atomic_store_n(&rdev_g->rc_hold, hold ? 1 : 0,
				 __ATOMIC_RELEASE);
}

static bool rdev_reachable(struct tier_dev *d)
{
	const struct rdev *rd = d->td_priv;

	return !rdev_server_down(rd->rd_srv);
}

/* One unit I/O call to the owning server; *transport tells whether it
 * failed in the transport (then rc is -EHOSTDOWN or a tier transport code,
 * with a message). */
static int rdev_call_once(struct tier_dev *d, uint32_t op, uint64_t off,
			  void *buf, size_t len, bool *transport)
{
	struct rdev *rd = d->td_priv;
	RdevReq q = RDEV_REQ__INIT;
	struct iovec iov = {buf, len};
	struct rpc_bulk bulk = {op == SOP_RDEV_WRITE ? RPC_BULK_OUT
						     : RPC_BULK_IN, &iov, 1};
	struct rpc_result res;
	struct msg_buf b = {0};
	int rc;

	*transport = false;
	/* Test builds: fault rdev.sync.cut fails a sync as a link cut
	 * between the unit writes and the commit's sync would (the home
	 * answers -ETIMEDOUT; rdev_fence_test.sh "sync cut"). */
	if (op == SOP_RDEV_SYNC && FAULT_HIT("rdev.sync.cut")) {
		*transport = true;
		return err_set(-ETIMEDOUT, "device %s: server %s (its device "
			       "%u): fault point rdev.sync.cut: sync timed "
			       "out", d->td_path, rdev_name(rd->rd_srv),
			       rd->rd_dev);
	}
	if (rdev_server_down(rd->rd_srv))
		return err_set(-EHOSTDOWN, "device %s: server %s is unreachable "
			       "(its device %u)", d->td_path,
			       rdev_name(rd->rd_srv), rd->rd_dev);
	if (op == SOP_RDEV_WRITE && rd->rd_home == rdev_g->rc_self &&
	    __atomic_load_n(&rdev_g->rc_hold, __ATOMIC_ACQUIRE))
		return err_set(-EREMCHG, "device %s: home %s is served by "
			       "another server now: no unit write as it",
			       d->td_path, rdev_name(rdev_g->rc_self));
	q.home = rd->rd_home;
	q.dev = rd->rd_dev;
	q.off = off;
	q.len = len;
	if (op == SOP_RDEV_WRITE) {
		uint64_t dl = eng_now_ns() +
			      (uint64_t)rdev_g->rc_call_ms * 1000000ull;
		uint64_t old = __atomic_load_n(&rd->rd_deadline,
					       __ATOMIC_RELAXED);

		/* Recorded before the call is sent: to_fence never misses
		 * a write that may be queued at the owner. */
		while (old < dl &&
		       !__atomic_compare_exchange_n(&rd->rd_deadline, &old, dl,
						    false, __ATOMIC_ACQ_REL,
						    __ATOMIC_RELAXED))
			;
		q.deadline_ns = dl;
		q.epoch = rd->rd_epoch != 0 ? rd->rd_epoch : rdev_epoch();
	}
	rc = msg_pack(&q.base, &b);
	if (rc != 0)
		return rc;
	rc = peers_call_ms(rdev_g->rc_data, rd->rd_srv, op, b.mb_p, b.mb_len,
			   len > 0 ? &bulk : NULL, rdev_g->rc_call_ms, &res);
	free(res.rr_body);
	free(b.mb_p);
	if (rc == 0)
		return 0;
	if (peers_rc_transport(rc) || tier_rc_transport(rc)) {
		*transport = true;
		if (!tier_rc_transport(rc))
			rc = -EHOSTDOWN;
		return err_set(rc, "device %s: server %s (its device %u): %s",
			       d->td_path, rdev_name(rd->rd_srv), rd->rd_dev,
			       err_msg());
	}
	return err_set(rc, "device %s: server %s (its device %u): %s",
		       d->td_path, rdev_name(rd->rd_srv), rd->rd_dev,
		       res.rr_msg[0] != '\0' ? res.rr_msg : err_msg());
}

/*
 * One unit I/O call.  A transport failure marks the owner unreachable,
 * unless this process learned a newer incarnation of the owner during the
 * call (peers.h): then the owner restarted and is up, only the connection
 * the call went on reached its earlier run; the call (idempotent: a unit
 * write of the same bytes, a read, a sync) is sent once more, on a fresh
 * connection, a WRITE with a new deadline.
 */
static int rdev_call(struct tier_dev *d, uint32_t op, uint64_t off,
		     void *buf, size_t len)
{
	const struct rdev *rd = d->td_priv;
	bool transport;
	int rc;

	for (uint32_t t = 0;; t++) {
		uint64_t inc = peers_incarnation(rdev_g->rc_data, rd->rd_srv);
		uint64_t now;

		rc = rdev_call_once(d, op, off, buf, len, &transport);
		if (!transport)
			return rc;
		now = peers_incarnation(rdev_g->rc_data, rd->rd_srv);
		if (now == inc || now == 0 || t == RDEV_RESTART_RETRIES)
			break;
		LOG_INFO("device %s: server %s restarted during a unit call "
			 "(%s); sent again on a fresh connection", d->td_path,
			 rdev_name(rd->rd_srv), err_msg());
	}
	rdev_mark(rd->rd_srv, false, err_msg());
	return rc;
}

/*
 * A remote device found unreachable, asked again now (tier_dev_recheck):
 * one NOOP call to its server on the data table, at most the unit call
 * timeout, instead of waiting for its prober.  A read short of units calls
 * it (layouts/stripe.c), e.g. right after a restart of the whole cluster,
 * when a server marked a peer down because it was not listening yet and
 * its prober is still waiting on another attempt.  The answer marks the
 * server reachable for every op; the connection it made is the one the
 * unit calls that follow use.
 */
static bool rdev_recheck(struct tier_dev *d)
{
	const struct rdev *rd = d->td_priv;
	struct rpc_result res;
	int rc;

	if (!rdev_server_down(rd->rd_srv))
		return true;
	/* Found away less than RDEV_RECHECK_AGE_MS ago: that is news
	 * enough (a server that is really down costs a read one wait at
	 * most every RDEV_RECHECK_AGE_MS, not one per group). */
	if (peers_clock_ms() - __atomic_load_n(&rdev_g->rc_down_ms[rd->rd_srv],
					       __ATOMIC_ACQUIRE) <
	    RDEV_RECHECK_AGE_MS)
		return false;
	peers_retry_now(rdev_g->rc_data, rd->rd_srv);
	rc = peers_call_ms(rdev_g->rc_data, rd->rd_srv, RPC_OP_NOOP, NULL, 0,
			   NULL, rdev_g->rc_call_ms, &res);
	free(res.rr_body);
	if (rc == 0) {
		rdev_mark(rd->rd_srv, true, NULL);
		return true;
	}
	if (!peers_rc_transport(rc))
		return false;
	rdev_mark(rd->rd_srv, false, err_msg());
	LOG_INFO("device %s: server %s asked again, still unreachable: %s",
		 d->td_path, rdev_name(rd->rd_srv), err_msg());
	return false;
}

static int rdev_write(struct tier_dev *d, uint64_t off, const void *buf,
		      size_t len)
{
	return rdev_call(d, SOP_RDEV_WRITE, off, (void *)buf, len);
}

static int rdev_read(struct tier_dev *d, uint64_t off, void *buf, size_t len)
{
	return rdev_call(d, SOP_RDEV_READ, off, buf, len);
}

static int rdev_sync(struct tier_dev *d)
{
	return rdev_call(d, SOP_RDEV_SYNC, 0, NULL, 0);
}

static const struct tier_ops rdev_ops = {
	.to_name = ENG_REMOTE_DRIVER,
	.to_open = rdev_open,
	.to_close = rdev_close,
	.to_write = rdev_write,
	.to_read = rdev_read,
	.to_sync = rdev_sync,
	.to_reachable = rdev_reachable,
	.to_recheck = rdev_recheck,
	.to_fence = rdev_fence,
};

/* ------------------------------------------------------------- probes */

/* One prober per other server: every RDEV_PROBE_EVERY_MS it calls its
 * server; one found down is tried again at once each round
 * (peers_retry_now), so it is reachable again as soon as it answers.
 * Separate threads, so that a server that does not answer (a probe that
 * waits out RDEV_PROBE_MS) never delays the news that another one is back
 * (a whole cluster restarted: servers that came up later than their peers
 * were marked down by them; one prober for all took a round of such
 * waits to clear each mark). */
struct rdev_prober {
	struct rdev_ctx *rp_g;
	uint32_t rp_srv;
};

static struct rdev_prober rdev_probers[CLU_SERVERS_MAX];

static void *rdev_probe_main(void *arg)
{
	const struct rdev_prober *p = arg;
	struct rdev_ctx *g = p->rp_g;
	uint32_t j = p->rp_srv;

	for (;;) {
		struct rpc_result res;
		struct timespec ts;
		int rc;

		/* Test builds: fault rdev.probe.off stops the probes, so a
		 * server marked down stays so until a read asks it again
		 * (peer_restart_test.sh "asked again"). */
		if (FAULT_HIT("rdev.probe.off"))
			goto wait;
		if (rdev_server_down(j))
			peers_retry_now(g->rc_probe, j);
		rc = peers_call_ms(g->rc_probe, j, RPC_OP_NOOP, NULL, 0, NULL,
				   RDEV_PROBE_MS, &res);
		free(res.rr_body);
		if (rc == 0)
			rdev_mark(j, true, NULL);
		else if (peers_rc_transport(rc))
			rdev_mark(j, false, err_msg());
wait:
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)RDEV_PROBE_EVERY_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&g->rc_lock);
		if (!g->rc_stop)
			pthread_cond_timedwait(&g->rc_cond, &g->rc_lock, &ts);
		if (g->rc_stop) {
			pthread_mutex_unlock(&g->rc_lock);
			break;
		}
		pthread_mutex_unlock(&g->rc_lock);
	}
	return NULL;
}

/* ---------------------------------------------------------- lifecycle */

int rdev_start(const struct clu_conf *c, uint32_t self)
{
	struct rdev_ctx *g;
	int rc;

	if (rdev_g != NULL)
		return err_set(-EBUSY, "remote devices: started already");
	rc = tier_driver_register(&rdev_ops);
	if (rc != 0)
		return rc;
	g = calloc(1, sizeof *g);
	if (g == NULL)
		return err_set(-ENOMEM, "remote devices");
	g->rc_conf = c;
	g->rc_self = self;
	g->rc_epoch = eng_now_ns();
	g->rc_call_ms = c->cc_call_ms / 3;
	if (g->rc_call_ms < RDEV_CALL_MS_MIN)
		g->rc_call_ms = RDEV_CALL_MS_MIN;
	if (g->rc_call_ms > RDEV_CALL_MS_MAX)
		g->rc_call_ms = RDEV_CALL_MS_MAX;
	pthread_mutex_init(&g->rc_lock, NULL);
	pthread_cond_init(&g->rc_cond, NULL);
	rdev_g = g;
	if (c->cc_nr_servers < 2)
		return 0;
	rc = peers_create(&g->rc_data, c, NULL);
	if (rc == 0)
		rc = peers_create(&g->rc_probe, c, NULL);
	if (rc == 0) {
		peers_set_server(g->rc_data);
		peers_set_server(g->rc_probe);
		for (uint32_t j = 0; rc == 0 && j < c->cc_nr_servers; j++) {
			if (j == self)
				continue;
			rdev_probers[j] = (struct rdev_prober){g, j};
			rc = -pthread_create(&g->rc_thr[j], NULL,
					     rdev_probe_main, &rdev_probers[j]);
			if (rc != 0)
				err_set(rc, "remote devices: probe thread of "
					"server %s: %s",
					c->cc_servers[j].cs_name, strerror(-rc));
			g->rc_thr_on[j] = rc == 0;
		}
	}
	if (rc != 0)
		rdev_stop();
	return rc;
}

void rdev_calls_stop(void)
{
	struct rdev_ctx *g = rdev_g;

	if (g == NULL)
		return;
	peers_calls_stop(g->rc_data);
	peers_calls_stop(g->rc_probe);
}

void rdev_stop(void)
{
	struct rdev_ctx *g = rdev_g;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->rc_lock);
	g->rc_stop = true;
	pthread_cond_broadcast(&g->rc_cond);
	pthread_mutex_unlock(&g->rc_lock);
	for (uint32_t j = 0; j < CLU_SERVERS_MAX; j++)
		if (g->rc_thr_on[j])
			pthread_join(g->rc_thr[j], NULL);
	peers_destroy(g->rc_probe);
	peers_destroy(g->rc_data);
	pthread_mutex_destroy(&g->rc_lock);
	pthread_cond_destroy(&g->rc_cond);
	rdev_g = NULL;
	free(g);
}
