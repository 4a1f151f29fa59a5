/*
 * srv.c — the server side of the RPC layer: sessions, the bounded request
 * queue, handler threads, replies, and bulk pull/push by RMA.
 *
 * A request is accepted only from an authenticated session (its token is
 * in the envelope); it is answered at once with -EBUSY when rc_queue_depth
 * requests are already accepted and not yet replied, with -EOPNOTSUPP when
 * no handler is registered, and NOOP is answered by the progress thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/rpc/rpc_internal.h"

struct rpc_sreq {
	struct rpc_sreq *sr_next;
	struct rpc_ep *sr_ep;
	RpcEnvelope *sr_env;
	fi_addr_t sr_addr;
	uint64_t sr_deadline_ms;
	uint8_t *sr_inbuf;          /* inline IN data pushed so far */
	char sr_peer[96];
};

struct rpc_sess *rpc_sess_find(struct rpc_ep *ep, uint64_t token)
{
	for (struct rpc_sess *s = ep->ep_sess; s != NULL; s = s->se_next)
		if (s->se_token == token)
			return s;
	return NULL;
}

/* Unlink and free s, and forget its address (ep_lock held). */
void rpc_sess_drop(struct rpc_ep *ep, struct rpc_sess *s)
{
	struct rpc_sess **pp = &ep->ep_sess;

	while (*pp != NULL && *pp != s)
		pp = &(*pp)->se_next;
	if (*pp == NULL)
		return;
	*pp = s->se_next;
	ep->ep_nr_sess--;
	rpc_av_remove(ep, s->se_addr);
	memset(s->se_key, 0, sizeof s->se_key);
	free(s);
}

/* Answer a request that no handler will see. */
static void srv_reply_now(struct rpc_ep *ep, fi_addr_t to,
			  const RpcEnvelope *req, int rc, const char *msg)
{
	RpcEnvelope env = RPC_ENVELOPE__INIT;

	env.kind = RPC_K_REPLY;
	env.opcode = req->opcode;
	env.xid = req->xid;
	env.has_session = true;
	env.session = req->session;
	env.has_status = true;
	env.status = rc;
	env.message = (char *)msg;
	env.map_epoch = rpc_epoch_get();
	env.has_map_epoch = env.map_epoch != 0;
	(void)to;
	if (rpc_send_env(ep, FI_ADDR_NOTAVAIL, &env, 0, NULL) != 0)
		LOG_INFO("rpc %s: reply to opcode %u: %s", ep->ep_self,
			 req->opcode, err_msg());
}

/* Why a request cannot be queued (ep_lock held): 0 or an errno. */
static int srv_admit(struct rpc_ep *ep, const RpcEnvelope *env, char *msg,
		     size_t size)
{
	const RpcBulkDesc *b = env->bulk;

	if (ep->ep_closing) {
		snprintf(msg, size, "rpc server %s is shutting down",
			 ep->ep_self);
		return -ESHUTDOWN;
	}
	if (env->opcode >= RPC_OP_MAX ||
	    ep->ep_handlers[env->opcode].hs_fn == NULL) {
		snprintf(msg, size, "rpc server %s has no handler for opcode "
			 "%u", ep->ep_self, env->opcode);
		return -EOPNOTSUPP;
	}
	if (b != NULL && b->dir == RPC_BULK_IN && b->n_segs == 0 &&
	    b->len > ep->ep_conf.rc_inline_max) {
		snprintf(msg, size, "rpc server %s: inline IN bulk of %llu "
			 "bytes over rc_inline_max %u", ep->ep_self,
			 (unsigned long long)b->len, ep->ep_conf.rc_inline_max);
		return -EPROTO;
	}
	if (ep->ep_outstanding >= ep->ep_conf.rc_queue_depth) {
		ep->ep_stats.rs_busy++;
		snprintf(msg, size, "rpc server %s: queue full (%u requests)",
			 ep->ep_self, ep->ep_outstanding);
		return -EBUSY;
	}
	return 0;
}

void rpc_srv_request(struct rpc_ep *ep, RpcEnvelope *env)
{
	struct rpc_sreq *r;
	struct rpc_sess *s;
	char msg[RPC_MSG_MAX + 1];
	fi_addr_t to;
	int rc;

	pthread_mutex_lock(&ep->ep_lock);
	s = env->has_session ? rpc_sess_find(ep, env->session) : NULL;
	if (!ep->ep_server || s == NULL || !s->se_authed) {
		ep->ep_stats.rs_unauth++;
		ep->ep_stats.rs_bad_msgs++;
		pthread_mutex_unlock(&ep->ep_lock);
		LOG_INFO("rpc %s: request opcode %u from no authenticated "
			 "session dropped", ep->ep_self, env->opcode);
		rpc_envelope__free_unpacked(env, NULL);
		return;
	}
	to = s->se_addr;
	if (env->opcode == RPC_OP_NOOP && !ep->ep_closing) {
		ep->ep_stats.rs_requests++;
		pthread_mutex_unlock(&ep->ep_lock);
		srv_reply_now(ep, to, env, 0, NULL);
		rpc_envelope__free_unpacked(env, NULL);
		return;
	}
	rc = srv_admit(ep, env, msg, sizeof msg);
	r = rc == 0 ? calloc(1, sizeof *r) : NULL;
	if (r == NULL) {
		pthread_mutex_unlock(&ep->ep_lock);
		if (rc == 0)
			snprintf(msg, sizeof msg, "rpc server: no memory");
		srv_reply_now(ep, to, env, rc ? rc : -ENOMEM, msg);
		rpc_envelope__free_unpacked(env, NULL);
		return;
	}
	r->sr_ep = ep;
	r->sr_env = env;
	r->sr_addr = to;
	r->sr_deadline_ms = rpc_now_ms() +
			    (env->has_timeout_ms ? env->timeout_ms : 0);
	snprintf(r->sr_peer, sizeof r->sr_peer, "%s", s->se_str);
	ep->ep_outstanding++;
	if (ep->ep_q_tail != NULL)
		ep->ep_q_tail->sr_next = r;
	else
		ep->ep_q_head = r;
	ep->ep_q_tail = r;
	ep->ep_q_len++;
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_signal(&ep->ep_qcv);
}

/* ------------------------------------------------------------ handlers */

static void srv_run(struct rpc_ep *ep, struct rpc_sreq *r)
{
	struct rpc_handler_slot h;
	char msg[RPC_MSG_MAX + 1];
	rpc_gate_fn gate;
	void *gate_arg;
	int rc;

	pthread_mutex_lock(&ep->ep_lock);
	h = ep->ep_handlers[r->sr_env->opcode];
	gate = ep->ep_gate;
	gate_arg = ep->ep_gate_arg;
	pthread_mutex_unlock(&ep->ep_lock);
	if (ep->ep_hstop) {
		snprintf(msg, sizeof msg, "rpc server %s is shutting down",
			 ep->ep_self);
		rpc_sreq_reply(r, -ESHUTDOWN, NULL, 0, msg);
	} else if (rpc_now_ms() >= r->sr_deadline_ms) {
		snprintf(msg, sizeof msg, "rpc server %s: opcode %u waited past "
			 "its deadline in the queue", ep->ep_self,
			 r->sr_env->opcode);
		rpc_sreq_reply(r, -ETIMEDOUT, NULL, 0, msg);
	} else if (gate != NULL &&
		   (rc = gate(gate_arg, r->sr_env->opcode, rpc_sreq_epoch(r),
			      msg, sizeof msg)) != 0) {
		rpc_sreq_reply(r, rc, NULL, 0, msg);
	} else {
		h.hs_fn(r, h.hs_arg);
	}
}

static void *srv_handler_main(void *arg)
{
	struct rpc_ep *ep = arg;
	struct rpc_sreq *r;

	pthread_mutex_lock(&ep->ep_lock);
	for (;;) {
		while (ep->ep_q_head == NULL && !ep->ep_hstop)
			pthread_cond_wait(&ep->ep_qcv, &ep->ep_lock);
		r = ep->ep_q_head;
		if (r == NULL)
			break;
		ep->ep_q_head = r->sr_next;
		if (ep->ep_q_head == NULL)
			ep->ep_q_tail = NULL;
		ep->ep_q_len--;
		pthread_mutex_unlock(&ep->ep_lock);
		srv_run(ep, r);
		pthread_mutex_lock(&ep->ep_lock);
	}
	pthread_mutex_unlock(&ep->ep_lock);
	return NULL;
}

int rpc_srv_start(struct rpc_ep *ep)
{
	uint32_t n = ep->ep_conf.rc_nr_handlers;
	int rc;

	pthread_cond_init(&ep->ep_qcv, NULL);
	if (!ep->ep_server)
		return 0;
	ep->ep_hthreads = calloc(n, sizeof *ep->ep_hthreads);
	if (ep->ep_hthreads == NULL)
		return err_set(-ENOMEM, "rpc: handler threads");
	for (uint32_t i = 0; i < n; i++) {
		rc = pthread_create(&ep->ep_hthreads[i], NULL, srv_handler_main,
				    ep);
		if (rc != 0)
			return err_set(-rc, "rpc %s: handler thread: %s",
				       ep->ep_self, strerror(rc));
		ep->ep_nr_hthreads++;
	}
	return 0;
}

void rpc_srv_drain(struct rpc_ep *ep)
{
	uint64_t warn_at = rpc_now_ms() + 5000;

	pthread_mutex_lock(&ep->ep_lock);
	ep->ep_hstop = true;
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_broadcast(&ep->ep_qcv);
	for (uint32_t i = 0; i < ep->ep_nr_hthreads; i++)
		pthread_join(ep->ep_hthreads[i], NULL);
	ep->ep_nr_hthreads = 0;
	pthread_mutex_lock(&ep->ep_lock);
	while (ep->ep_outstanding > 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&ep->ep_cv, &ep->ep_lock, &ts);
		if (rpc_now_ms() > warn_at) {
			LOG_WARNING("rpc %s: close waits for %u requests not "
				    "yet replied", ep->ep_self,
				    ep->ep_outstanding);
			warn_at = rpc_now_ms() + 5000;
		}
	}
	pthread_mutex_unlock(&ep->ep_lock);
}

void rpc_srv_fini(struct rpc_ep *ep)
{
	struct rpc_sess *s;

	while ((s = ep->ep_sess) != NULL) {
		ep->ep_sess = s->se_next;
		free(s);
	}
	ep->ep_nr_sess = 0;
	free(ep->ep_hthreads);
	ep->ep_hthreads = NULL;
	pthread_cond_destroy(&ep->ep_qcv);
}

int rpc_handler_set(struct rpc_ep *ep, uint32_t opcode, rpc_handler_fn fn,
		    void *arg)
{
	if (ep == NULL)
		return err_set(-EINVAL, "rpc_handler_set: NULL endpoint");
	if (opcode < RPC_OP_USER_MIN || opcode >= RPC_OP_MAX)
		return err_set(-EINVAL, "rpc %s: opcode %u outside [%u, %u)",
			       ep->ep_self, opcode, RPC_OP_USER_MIN,
			       RPC_OP_MAX);
	if (!ep->ep_server)
		return err_set(-EINVAL, "rpc %s: handler for opcode %u on a "
			       "client-only endpoint", ep->ep_self, opcode);
	pthread_mutex_lock(&ep->ep_lock);
	ep->ep_handlers[opcode].hs_fn = fn;
	ep->ep_handlers[opcode].hs_arg = arg;
	pthread_mutex_unlock(&ep->ep_lock);
	return 0;
}

int rpc_gate_set(struct rpc_ep *ep, rpc_gate_fn fn, void *arg)
{
	if (ep == NULL || !ep->ep_server)
		return err_set(-EINVAL, "rpc_gate_set: %s endpoint",
			       ep == NULL ? "NULL" : "client-only");
	pthread_mutex_lock(&ep->ep_lock);
	ep->ep_gate = fn;
	ep->ep_gate_arg = arg;
	pthread_mutex_unlock(&ep->ep_lock);
	return 0;
}

/* ------------------------------------------------------------ requests */

uint32_t rpc_sreq_opcode(const struct rpc_sreq *req)
{
	return req->sr_env->opcode;
}

uint64_t rpc_sreq_epoch(const struct rpc_sreq *req)
{
	return req->sr_env->has_map_epoch ? req->sr_env->map_epoch : 0;
}

uint64_t rpc_sreq_trace(const struct rpc_sreq *req)
{
	return req->sr_env->has_trace ? req->sr_env->trace : 0;
}

const void *rpc_sreq_body(const struct rpc_sreq *req, size_t *len)
{
	const RpcEnvelope *e = req->sr_env;

	if (len != NULL)
		*len = e->has_body ? e->body.len : 0;
	return e->has_body ? e->body.data : NULL;
}

size_t rpc_sreq_bulk_len(const struct rpc_sreq *req)
{
	return req->sr_env->bulk != NULL ? req->sr_env->bulk->len : 0;
}

int64_t rpc_sreq_ms_left(const struct rpc_sreq *req)
{
	uint64_t now = rpc_now_ms();

	return now >= req->sr_deadline_ms ? 0 :
	       (int64_t)(req->sr_deadline_ms - now);
}

const char *rpc_sreq_peer(const struct rpc_sreq *req)
{
	return req->sr_peer;
}

void rpc_sreq_reply(struct rpc_sreq *req, int rc, const void *body,
		    size_t len, const char *msg)
{
	struct rpc_ep *ep;
	RpcEnvelope env = RPC_ENVELOPE__INIT;
	const RpcBulkDesc *b;
	char m[RPC_MSG_MAX + 1];

	if (req == NULL)
		return;
	ep = req->sr_ep;
	b = req->sr_env->bulk;
	env.kind = RPC_K_REPLY;
	env.opcode = req->sr_env->opcode;
	env.xid = req->sr_env->xid;
	env.has_session = true;
	env.session = req->sr_env->session;
	env.has_status = true;
	env.status = rc > 0 || rc < -4095 ? -EPROTO : rc;
	env.map_epoch = rpc_epoch_get();
	env.has_map_epoch = env.map_epoch != 0;
	if (msg != NULL) {
		snprintf(m, sizeof m, "%s", msg);
		env.message = m;
	}
	env.has_body = body != NULL && len > 0;
	env.body.data = (uint8_t *)body;
	env.body.len = env.has_body ? len : 0;
	if (req->sr_inbuf != NULL && rc >= 0) {
		env.has_bulk_data = true;
		env.bulk_data.data = req->sr_inbuf;
		env.bulk_data.len = b->len;
	}
	/* Counted before it leaves: a caller that has its reply sees it. */
	pthread_mutex_lock(&ep->ep_lock);
	ep->ep_stats.rs_requests++;
	pthread_mutex_unlock(&ep->ep_lock);
	if (rpc_send_env(ep, FI_ADDR_NOTAVAIL, &env, 0, NULL) == -EMSGSIZE) {
		snprintf(m, sizeof m, "%s", err_msg());
		srv_reply_now(ep, FI_ADDR_NOTAVAIL, req->sr_env, -EMSGSIZE, m);
	}
	pthread_mutex_lock(&ep->ep_lock);
	ep->ep_outstanding--;
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_broadcast(&ep->ep_cv);
	rpc_envelope__free_unpacked(req->sr_env, NULL);
	free(req->sr_inbuf);
	free(req);
}

/* ---------------------------------------------------------------- bulk */

void rpc_rma_complete(struct rpc_ep *ep, struct rpc_rma *ra, int rc)
{
	pthread_mutex_lock(&ep->ep_lock);
	rpc_untrack(ep, &ra->ra_ctx);
	if (ra->ra_abandoned) {
		pthread_mutex_unlock(&ep->ep_lock);
		rpc_mr_close(ra->ra_mr);
		free(ra);
		return;
	}
	ra->ra_done = 1;
	ra->ra_rc = rc;
	/* Only its own waiter: not every thread asleep on ep_cv.  Under
	 * the lock: the waiter's condition lives on its stack. */
	if (ra->ra_cv != NULL)
		pthread_cond_signal(ra->ra_cv);
	pthread_mutex_unlock(&ep->ep_lock);
}

/* srv_rma_fi(): ra's session is gone. */
#define SRV_RMA_GONE 1

/* Post ra (ep_lock held): 0, SRV_RMA_GONE, or the provider's code. */
static ssize_t srv_rma_fi(struct rpc_ep *ep, struct rpc_rma *ra)
{
	struct rpc_sess *s = rpc_sess_find(ep, ra->ra_session);

	if (s == NULL)
		return SRV_RMA_GONE;
	return ra->ra_wr ? fi_write(ep->ep_ep, ra->ra_buf, ra->ra_len,
				    ra->ra_desc, s->se_addr, ra->ra_raddr,
				    ra->ra_key, &ra->ra_ctx) :
			   fi_read(ep->ep_ep, ra->ra_buf, ra->ra_len,
				   ra->ra_desc, s->se_addr, ra->ra_raddr,
				   ra->ra_key, &ra->ra_ctx);
}

bool rpc_rma_flush(struct rpc_ep *ep)
{
	struct rpc_rma *ra, *done = NULL;
	ssize_t rc;

	pthread_mutex_lock(&ep->ep_lock);
	while ((ra = ep->ep_rq) != NULL) {
		/* Test builds: hold the queue (its waiters see their deadline
		 * pass; a held transfer abandoned meanwhile is never posted). */
		if (FAULT_HIT("rpc.push.hold"))
			break;
		rc = ra->ra_abandoned ? -ECANCELED : srv_rma_fi(ep, ra);
		if (rc == -FI_EAGAIN && rpc_now_ms() < ra->ra_expire_ms)
			break;  /* the next turn of the progress loop */
		ep->ep_rq = ra->ra_next;
		if (rc != 0) {
			ra->ra_rc = rc == -FI_EAGAIN ? -ETIMEDOUT :
				    rc == SRV_RMA_GONE ? -ECONNRESET :
				    rc == -ECANCELED ? -ECANCELED :
				    rpc_fi_err((int)rc);
			ra->ra_next = done;
			done = ra;
		}
	}
	if (ep->ep_rq == NULL)
		ep->ep_rq_tail = &ep->ep_rq;
	__atomic_store_n(&ep->ep_has_rq, ep->ep_rq != NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ep->ep_lock);
	for (; done != NULL; done = ra) {
		ra = done->ra_next;
		rpc_rma_complete(ep, done, done->ra_rc);
	}
	return __atomic_load_n(&ep->ep_has_rq, __ATOMIC_ACQUIRE);
}

void rpc_rma_purge(struct rpc_ep *ep)
{
	struct rpc_rma *ra, *next;

	pthread_mutex_lock(&ep->ep_lock);
	ra = ep->ep_rq;
	ep->ep_rq = NULL;
	ep->ep_rq_tail = &ep->ep_rq;
	__atomic_store_n(&ep->ep_has_rq, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ep->ep_lock);
	for (; ra != NULL; ra = next) {
		next = ra->ra_next;
		rpc_rma_complete(ep, ra, -ESHUTDOWN);
	}
}

static int srv_rma_gone(const struct rpc_sreq *r)
{
	return err_set(-ECONNRESET, "rpc %s: session of %s gone before the "
		       "RMA of opcode %u", r->sr_ep->ep_self, r->sr_peer,
		       r->sr_env->opcode);
}

/* Queue ra for the progress thread (ep_lock held). */
static void srv_rma_queue(struct rpc_ep *ep, struct rpc_rma *ra)
{
	rpc_track(ep, &ra->ra_ctx);
	ra->ra_next = NULL;
	*ep->ep_rq_tail = ra;
	ep->ep_rq_tail = &ra->ra_next;
	__atomic_store_n(&ep->ep_has_rq, true, __ATOMIC_RELEASE);
}

/* Post one RMA chunk (ra filled by srv_rma()); retries while the provider
 * pushes back, until the request's deadline. */
static int srv_rma_post(struct rpc_sreq *r, struct rpc_rma *ra)
{
	struct rpc_ep *ep = r->sr_ep;
	ssize_t rc;

	/* A push (1 MiB: the provider's sendmsg copies it, in the posting
	 * thread, under its endpoint lock) is posted by the progress
	 * thread, so that pushes go out one after another from one thread
	 * rather than from every handler at once, each contending for the
	 * socket and the provider's lock with the others and with the
	 * progress thread.  A pull (a small read request) is posted here:
	 * through the queue it only costs a hand-off (core/rpc/README.md
	 * "Who posts", docs/performance.md). */
	if (ra->ra_wr && !rpc_in_progress_thread(ep) &&
	    !ep->ep_conf.rc_polling) {
		bool gone;

		pthread_mutex_lock(&ep->ep_lock);
		gone = rpc_sess_find(ep, ra->ra_session) == NULL;
		if (!gone)
			srv_rma_queue(ep, ra);
		pthread_mutex_unlock(&ep->ep_lock);
		if (gone)
			return srv_rma_gone(r);
		pthread_cond_signal(&ep->ep_pcv);
		rpc_wake(ep);
		return 0;
	}

	for (;;) {
		pthread_mutex_lock(&ep->ep_lock);
		rpc_track(ep, &ra->ra_ctx);
		rc = srv_rma_fi(ep, ra);
		if (rc != 0)
			rpc_untrack(ep, &ra->ra_ctx);
		pthread_mutex_unlock(&ep->ep_lock);
		if (rc == SRV_RMA_GONE)
			return srv_rma_gone(r);
		if (rc != -FI_EAGAIN || rpc_sreq_ms_left(r) == 0)
			break;
		usleep(20);
	}
	if (rc != 0)
		return err_set(rpc_fi_err((int)rc), "rpc %s: fi_%s of %zu bytes "
			       "for opcode %u from %s: %s", ep->ep_self,
			       ra->ra_wr ? "write" : "read", ra->ra_len,
			       r->sr_env->opcode, r->sr_peer,
			       fi_strerror((int)-rc));
	return 0;
}

/* Wait for nr posted chunks until the deadline plus a grace; those still
 * running are then abandoned (freed when the provider completes them). */
static int srv_rma_wait(struct rpc_sreq *r, struct rpc_rma **ra, int nr,
			pthread_cond_t *cv)
{
	struct rpc_ep *ep = r->sr_ep;
	uint64_t until = r->sr_deadline_ms + RPC_RMA_GRACE_MS;
	struct timespec ts;
	int rc = 0, done;
	bool abandoned = false;

	pthread_mutex_lock(&ep->ep_lock);
	for (;;) {
		done = 0;
		for (int i = 0; i < nr; i++)
			done += ra[i]->ra_done;
		if (done == nr || rpc_now_ms() >= until)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(cv, &ep->ep_lock, &ts);
	}
	for (int i = 0; i < nr; i++) {
		if (!ra[i]->ra_done) {
			ra[i]->ra_abandoned = 1;
			ra[i]->ra_cv = NULL;
			ra[i] = NULL;
			abandoned = true;
		} else if (ra[i]->ra_rc != 0 && rc == 0) {
			rc = ra[i]->ra_rc;
		}
	}
	pthread_mutex_unlock(&ep->ep_lock);
	/* A chunk still running may land later: say -ETIMEDOUT whatever
	 * else failed, so that the caller never reuses the buffer (nor
	 * srv_rma() closes its MR). */
	return abandoned ? -ETIMEDOUT : rc;
}

static uint64_t srv_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Transfer accounting (rs_xfer_*): begin returns the start time. */
static uint64_t srv_xfer_begin(struct rpc_ep *ep, bool wr)
{
	uint64_t t = srv_now_us();

	pthread_mutex_lock(&ep->ep_lock);
	if (ep->ep_xfer_active[wr]++ == 0)
		ep->ep_xfer_t0_us[wr] = t;
	pthread_mutex_unlock(&ep->ep_lock);
	return t;
}

static void srv_xfer_end(struct rpc_ep *ep, bool wr, uint64_t t0,
			 size_t len, int rc)
{
	uint64_t t = srv_now_us();

	pthread_mutex_lock(&ep->ep_lock);
	if (--ep->ep_xfer_active[wr] == 0)
		ep->ep_stats.rs_xfer_busy_us[wr] += t - ep->ep_xfer_t0_us[wr];
	if (rc == 0) {
		ep->ep_stats.rs_rma_bytes += len;
		ep->ep_stats.rs_xfers[wr]++;
		ep->ep_stats.rs_xfer_us[wr] += t - t0;
		ep->ep_stats.rs_xfer_bytes[wr] += len;
	}
	pthread_mutex_unlock(&ep->ep_lock);
}

/* Move len bytes between buf and the caller's segments from offset off.
 * m: buf lies in that registered memory (NULL: the pool or per transfer). */
static int srv_rma(struct rpc_sreq *r, uint64_t off, void *buf, size_t len,
		   bool wr, const struct rpc_mem *m)
{
	struct rpc_ep *ep = r->sr_ep;
	const RpcBulkDesc *b = r->sr_env->bulk;
	struct rpc_rma *ra[64];
	struct fid_mr *mr = NULL;
	uint64_t soff = 0, pos = 0;
	int nr = 0, rc = 0;
	bool pooled = m != NULL;
	void *desc = m != NULL ? (m->mm_mr != NULL ? fi_mr_desc(m->mm_mr) : NULL)
			       : rpc_pool_desc(ep, buf, len, &pooled);
	pthread_cond_t cv;
	uint64_t t0 = srv_xfer_begin(ep, wr);

	/* A pool buffer is registered already; others for this transfer. */
	if (!pooled && (ep->ep_mr_mode & FI_MR_LOCAL)) {
		rc = rpc_mr_reg(ep, buf, len, wr ? FI_WRITE : FI_READ, &mr);
		if (rc != 0) {
			srv_xfer_end(ep, wr, t0, len, rc);
			return rc;
		}
		desc = fi_mr_desc(mr);
	}
	pthread_cond_init(&cv, NULL);
	for (size_t i = 0; i < b->n_segs && pos < len && rc == 0; i++) {
		const RpcSeg *s = b->segs[i];

		if (off + pos >= soff + s->len) {
			soff += s->len;
			continue;
		}
		while (pos < len && off + pos < soff + s->len && rc == 0) {
			uint64_t in = off + pos - soff;
			size_t n = len - pos;

			if (n > s->len - in)
				n = s->len - in;
			if (n > ep->ep_rma_max)
				n = ep->ep_rma_max;
			if (nr == 64) {
				rc = srv_rma_wait(r, ra, nr, &cv);
				for (int k = 0; k < nr; k++)
					free(ra[k]);
				nr = 0;
				if (rc != 0)
					break;
			}
			ra[nr] = calloc(1, sizeof **ra);
			if (ra[nr] == NULL) {
				rc = err_set(-ENOMEM, "rpc: RMA context");
				break;
			}
			*ra[nr] = (struct rpc_rma){
				.ra_ctx.cx_type = RPC_CTX_RMA,
				.ra_cv = &cv,
				.ra_wr = wr,
				.ra_buf = (char *)buf + pos,
				.ra_len = n,
				.ra_desc = desc,
				.ra_raddr = s->addr + in,
				.ra_key = s->key,
				.ra_session = r->sr_env->session,
				.ra_expire_ms = r->sr_deadline_ms,
			};
			rc = srv_rma_post(r, ra[nr]);
			if (rc != 0) {
				free(ra[nr]);
				break;
			}
			nr++;
			pos += n;
		}
		soff += s->len;
	}
	if (nr > 0) {
		int wrc = srv_rma_wait(r, ra, nr, &cv);

		if (rc == 0 && wrc != 0)
			rc = err_set(wrc, "rpc %s: RMA %s of %zu bytes for "
				     "opcode %u from %s: %s", ep->ep_self,
				     wr ? "write" : "read", len,
				     r->sr_env->opcode, r->sr_peer,
				     wrc == -ETIMEDOUT ? "past the deadline" :
				     strerror(-wrc));
		for (int k = 0; k < nr; k++)
			free(ra[k]);
	}
	srv_xfer_end(ep, wr, t0, len, rc);
	/* Every chunk is done or abandoned (ra_cv cleared): nothing signals
	 * cv any more. */
	pthread_cond_destroy(&cv);
	if (mr != NULL && rc != -ETIMEDOUT)
		rpc_mr_close(mr);
	return rc;
}

static int srv_bulk_check(struct rpc_sreq *r, uint32_t dir, uint64_t off,
			  size_t len)
{
	const RpcBulkDesc *b = r->sr_env->bulk;

	if (b == NULL || b->dir != dir)
		return err_set(-EINVAL, "rpc: request opcode %u from %s has no "
			       "%s bulk", r->sr_env->opcode, r->sr_peer,
			       dir == RPC_BULK_OUT ? "OUT" : "IN");
	if (off > b->len || len > b->len - off)
		return err_set(-EINVAL, "rpc: bulk range %llu+%zu past %llu "
			       "bytes (opcode %u from %s)",
			       (unsigned long long)off, len,
			       (unsigned long long)b->len, r->sr_env->opcode,
			       r->sr_peer);
	return 0;
}

int rpc_sreq_bulk_pull(struct rpc_sreq *req, uint64_t off, void *buf,
		       size_t len)
{
	const RpcBulkDesc *b;
	int rc;

	if (req == NULL || (buf == NULL && len > 0))
		return err_set(-EINVAL, "rpc_sreq_bulk_pull: NULL argument");
	if ((rc = srv_bulk_check(req, RPC_BULK_OUT, off, len)) != 0)
		return rc;
	if (len == 0)
		return 0;
	b = req->sr_env->bulk;
	if (b->has_data) {
		memcpy(buf, b->data.data + off, len);
		return 0;
	}
	return srv_rma(req, off, buf, len, false, NULL);
}

int rpc_sreq_bulk_push(struct rpc_sreq *req, uint64_t off, const void *buf,
		       size_t len)
{
	const RpcBulkDesc *b;
	int rc;

	if (req == NULL || (buf == NULL && len > 0))
		return err_set(-EINVAL, "rpc_sreq_bulk_push: NULL argument");
	if ((rc = srv_bulk_check(req, RPC_BULK_IN, off, len)) != 0)
		return rc;
	if (len == 0)
		return 0;
	b = req->sr_env->bulk;
	if (b->n_segs == 0) {
		if (req->sr_inbuf == NULL &&
		    (req->sr_inbuf = calloc(1, b->len)) == NULL)
			return err_set(-ENOMEM, "rpc: inline IN buffer");
		memcpy(req->sr_inbuf + off, buf, len);
		return 0;
	}
	return srv_rma(req, off, (void *)buf, len, true, NULL);
}

/* ------------------------------------------------- registered memory */

int rpc_mem_reg(struct rpc_ep *ep, void *addr, size_t len,
		struct rpc_mem **out)
{
	struct rpc_mem *m;
	int rc;

	if (ep == NULL || addr == NULL || len == 0 || out == NULL)
		return err_set(-EINVAL, "rpc_mem_reg: %s", len == 0 ?
			       "0 bytes" : "NULL argument");
	m = calloc(1, sizeof *m);
	if (m == NULL)
		return err_set(-ENOMEM, "rpc %s: registered memory", ep->ep_self);
	rc = rpc_mr_reg(ep, addr, len, FI_READ | FI_WRITE, &m->mm_mr);
	if (rc != 0) {
		free(m);
		return rc;
	}
	m->mm_addr = addr;
	m->mm_len = len;
	*out = m;
	return 0;
}

void rpc_mem_dereg(struct rpc_mem *m)
{
	if (m == NULL)
		return;
	rpc_mr_close(m->mm_mr);
	free(m);
}

/* Is [buf, buf + len) inside m? */
static int srv_mem_check(const struct rpc_mem *m, const void *buf, size_t len)
{
	const char *p = buf;

	if (m == NULL || p < m->mm_addr || len > m->mm_len ||
	    (size_t)(p - m->mm_addr) > m->mm_len - len)
		return err_set(-EINVAL, "rpc: bulk buffer %p+%zu outside its "
			       "registered memory", buf, len);
	return 0;
}

int rpc_sreq_bulk_pull_mem(struct rpc_sreq *req, uint64_t off,
			   struct rpc_mem *m, void *buf, size_t len)
{
	int rc;

	if (req == NULL || buf == NULL)
		return err_set(-EINVAL, "rpc_sreq_bulk_pull_mem: NULL argument");
	if ((rc = srv_mem_check(m, buf, len)) != 0 ||
	    (rc = srv_bulk_check(req, RPC_BULK_OUT, off, len)) != 0)
		return rc;
	if (len == 0)
		return 0;
	if (req->sr_env->bulk->has_data) {
		memcpy(buf, req->sr_env->bulk->data.data + off, len);
		return 0;
	}
	return srv_rma(req, off, buf, len, false, m);
}

int rpc_sreq_bulk_push_mem(struct rpc_sreq *req, uint64_t off,
			   struct rpc_mem *m, const void *buf, size_t len)
{
	int rc;

	if (req == NULL || buf == NULL)
		return err_set(-EINVAL, "rpc_sreq_bulk_push_mem: NULL argument");
	if ((rc = srv_mem_check(m, buf, len)) != 0)
		return rc;
	if (req->sr_env->bulk != NULL && req->sr_env->bulk->n_segs == 0)
		return rpc_sreq_bulk_push(req, off, buf, len);
	if ((rc = srv_bulk_check(req, RPC_BULK_IN, off, len)) != 0)
		return rc;
	if (len == 0)
		return 0;
	return srv_rma(req, off, (void *)buf, len, true, m);
}
