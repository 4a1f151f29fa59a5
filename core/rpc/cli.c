/*
 * cli.c — the client side of the RPC layer: peers and the connect
 * handshake, calls matched to replies by xid, deadlines, the in-flight
 * bound per peer, and the registration of bulk buffers for RMA.
 *
 * A call lives in the endpoint's xid table from the moment its request is
 * sent until exactly one of: its reply arrives, its deadline passes (the
 * progress thread expires it), its send fails, or its peer or endpoint
 * closes.  Whoever removes it from the table finishes it; nobody else
 * touches it afterwards.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "addb/addb.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/rpc/rpc_internal.h"

struct rpc_peer {
	struct rpc_peer *pe_next;
	struct rpc_ep *pe_ep;
	fi_addr_t pe_addr;
	uint64_t pe_session;
	uint8_t pe_key[RPC_KEY_LEN]; /* session key (pe_keyed) */
	bool pe_keyed;
	uint64_t pe_incarnation;    /* the server run's (RpcWelcome), 0: untold */
	uint32_t pe_inflight;
	bool pe_closed;
	uint32_t pe_addb;           /* metrics label slot + 1 (0: not yet) */
	char pe_str[96];
};

struct rpc_call {
	struct rpc_call *ca_next;   /* hash chain */
	uint64_t ca_xid;
	struct rpc_peer *ca_peer;
	uint32_t ca_opcode;
	int ca_timeout_ms;
	uint64_t ca_deadline_ms;
	rpc_done_fn ca_done;
	void *ca_arg;
	uint64_t ca_t0_ns;          /* sent (addb_now_ns), for its latency */
	bool ca_raw;                /* handshake: hand over the envelope */
	RpcEnvelope **ca_raw_env;
	uint32_t ca_bdir;
	uint32_t ca_nr;
	size_t ca_blen;
	struct iovec ca_iov[RPC_MAX_IOV];
	struct fid_mr *ca_mr[RPC_MAX_IOV];
};

/* ------------------------------------------------------------ xid table */

static struct rpc_call **cli_bucket(struct rpc_ep *ep, uint64_t xid)
{
	return &ep->ep_calls[xid % RPC_CALL_BUCKETS];
}

static void cli_insert(struct rpc_ep *ep, struct rpc_call *c)
{
	struct rpc_call **b = cli_bucket(ep, c->ca_xid);

	c->ca_next = *b;
	*b = c;
	ep->ep_nr_calls++;
}

/* Remove and return the call with xid (ep_lock held), or NULL. */
static struct rpc_call *cli_take(struct rpc_ep *ep, uint64_t xid)
{
	struct rpc_call **pp = cli_bucket(ep, xid), *c;

	for (; (c = *pp) != NULL; pp = &c->ca_next)
		if (c->ca_xid == xid) {
			*pp = c->ca_next;
			ep->ep_nr_calls--;
			return c;
		}
	return NULL;
}

bool rpc_cli_call_key(struct rpc_ep *ep, uint64_t xid, uint8_t *key)
{
	for (struct rpc_call *c = *cli_bucket(ep, xid); c; c = c->ca_next)
		if (c->ca_xid == xid) {
			if (!c->ca_peer->pe_keyed || c->ca_raw)
				return false;
			memcpy(key, c->ca_peer->pe_key, RPC_KEY_LEN);
			return true;
		}
	return false;
}

bool rpc_cli_pending(struct rpc_ep *ep, uint64_t xid)
{
	for (struct rpc_call *c = *cli_bucket(ep, xid); c; c = c->ca_next)
		if (c->ca_xid == xid)
			return true;
	return false;
}

static void cli_release_mrs(struct rpc_call *c)
{
	for (uint32_t i = 0; i < RPC_MAX_IOV; i++) {
		rpc_mr_close(c->ca_mr[i]);
		c->ca_mr[i] = NULL;
	}
}

/* Copy an inline IN reply into the caller's buffers. */
static int cli_copy_in(struct rpc_call *c, const RpcEnvelope *env)
{
	size_t pos = 0, n;

	if (!env->has_bulk_data)
		return 0;
	if (env->bulk_data.len > c->ca_blen)
		return err_set(-EPROTO, "rpc: reply to opcode %u from %s has "
			       "%zu bytes of bulk for a %zu-byte buffer",
			       c->ca_opcode, c->ca_peer->pe_str,
			       env->bulk_data.len, c->ca_blen);
	for (uint32_t i = 0; i < c->ca_nr && pos < env->bulk_data.len; i++) {
		n = env->bulk_data.len - pos;
		if (n > c->ca_iov[i].iov_len)
			n = c->ca_iov[i].iov_len;
		memcpy(c->ca_iov[i].iov_base, env->bulk_data.data + pos, n);
		pos += n;
	}
	return 0;
}

/* The metrics label slot of peer p (its address), taken at first use. */
static uint32_t cli_addb_slot(struct rpc_peer *p)
{
	uint32_t v = __atomic_load_n(&p->pe_addb, __ATOMIC_RELAXED);

	if (v == 0) {
		v = addb_peer_slot(p->pe_str) + 1;
		__atomic_store_n(&p->pe_addb, v, __ATOMIC_RELAXED);
	}
	return v - 1;
}

void rpc_peer_retry_note(struct rpc_peer *p)
{
	if (p != NULL)
		addb_add(ADDB_RPC_RETRIES, cli_addb_slot(p), 1);
}

/* The process's metrics of a call that ends: latency, bytes received,
 * a time-out (no answer by the deadline). */
static void cli_addb_end(struct rpc_call *c, const struct rpc_result *res,
			 const RpcEnvelope *env)
{
	uint32_t slot;
	uint64_t in = res->rr_len;

	if (c->ca_t0_ns == 0)
		return; /* never sent */
	slot = cli_addb_slot(c->ca_peer);
	addb_obs(ADDB_RPC_LAT, 0, addb_now_ns() - c->ca_t0_ns);
	if (env == NULL && res->rr_status == -ETIMEDOUT)
		addb_add(ADDB_RPC_TIMEOUTS, slot, 1);
	if (res->rr_status == 0 && c->ca_bdir == RPC_BULK_IN)
		in += c->ca_blen;
	if (in != 0)
		addb_add(ADDB_RPC_BYTES, addb_inst(ADDB_RPC_BYTES, slot,
						   ADDB_DIR_RECEIVED), in);
}

/* Complete a call taken out of the table (ep_lock not held); env (a reply,
 * or NULL) is consumed. */
static void cli_finish(struct rpc_ep *ep, struct rpc_call *c, int status,
		       const char *msg, RpcEnvelope *env)
{
	struct rpc_result res;
	struct rpc_peer *p = c->ca_peer;

	memset(&res, 0, sizeof res);
	res.rr_answered = env != NULL;
	cli_release_mrs(c);
	if (env != NULL && c->ca_raw) {
		*c->ca_raw_env = env;
		env = NULL;
	} else if (env != NULL) {
		status = env->has_status ? env->status : -EPROTO;
		msg = env->message;
		if (env->has_map_epoch) {
			res.rr_epoch = env->map_epoch;
			rpc_epoch_note(env->map_epoch);
		}
		if (status == 0 && c->ca_bdir == RPC_BULK_IN &&
		    (status = cli_copy_in(c, env)) != 0)
			msg = err_msg();
		if (status == 0 && env->has_body && env->body.len > 0) {
			res.rr_body = malloc(env->body.len);
			if (res.rr_body == NULL) {
				status = -ENOMEM;
				msg = "rpc: no memory for a reply body";
			} else {
				memcpy(res.rr_body, env->body.data,
				       env->body.len);
				res.rr_len = env->body.len;
			}
		}
	}
	res.rr_status = status;
	snprintf(res.rr_msg, sizeof res.rr_msg, "%s", msg ? msg : "");
	cli_addb_end(c, &res, env);
	pthread_mutex_lock(&ep->ep_lock);
	p->pe_inflight--;
	if (status == -ETIMEDOUT && env == NULL)
		ep->ep_stats.rs_timeouts++;
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_broadcast(&ep->ep_cv);
	if (env != NULL)
		rpc_envelope__free_unpacked(env, NULL);
	c->ca_done(c->ca_arg, &res);
	free(c);
}

static void cli_wait_done(void *arg, struct rpc_result *res);

bool rpc_cli_reply(struct rpc_ep *ep, RpcEnvelope *env, bool sync_only)
{
	struct rpc_call *c;
	bool want_raw = env->kind != RPC_K_REPLY;

	pthread_mutex_lock(&ep->ep_lock);
	if (sync_only) {
		for (c = *cli_bucket(ep, env->xid); c != NULL; c = c->ca_next)
			if (c->ca_xid == env->xid)
				break;
		if (c == NULL || c->ca_done != cli_wait_done) {
			pthread_mutex_unlock(&ep->ep_lock);
			return false;
		}
		ep->ep_reaped++;
	}
	c = cli_take(ep, env->xid);
	if (c != NULL && (c->ca_raw != want_raw ||
			  (c->ca_peer->pe_session != 0 &&
			   env->session != c->ca_peer->pe_session))) {
		cli_insert(ep, c); /* not its answer: leave it waiting */
		c = NULL;
		ep->ep_stats.rs_bad_msgs++;
	} else if (c == NULL && env->xid != 0 && env->xid <= ep->ep_next_xid) {
		ep->ep_stats.rs_late_replies++;
	} else if (c == NULL) {
		ep->ep_stats.rs_bad_msgs++;
	}
	pthread_mutex_unlock(&ep->ep_lock);
	if (c == NULL) {
		LOG_DEBUG("rpc %s: reply xid %llu matches no call",
			  ep->ep_self, (unsigned long long)env->xid);
		rpc_envelope__free_unpacked(env, NULL);
		return true;
	}
	cli_finish(ep, c, 0, NULL, env);
	return true;
}

void rpc_cli_send_failed(struct rpc_ep *ep, uint64_t xid, int rc)
{
	struct rpc_call *c;
	char msg[256];

	pthread_mutex_lock(&ep->ep_lock);
	c = cli_take(ep, xid);
	pthread_mutex_unlock(&ep->ep_lock);
	if (c == NULL)
		return;
	snprintf(msg, sizeof msg, "rpc: sending opcode %u to %s failed: %s",
		 c->ca_opcode, c->ca_peer->pe_str, strerror(-rc));
	cli_finish(ep, c, rc, msg, NULL);
}

int rpc_cli_expire(struct rpc_ep *ep, int cap_ms)
{
	struct rpc_call *dead = NULL, *c, **pp;
	uint64_t now = rpc_now_ms(), next = now + (uint64_t)cap_ms;
	char msg[256];

	pthread_mutex_lock(&ep->ep_lock);
	for (uint32_t b = 0; b < RPC_CALL_BUCKETS && ep->ep_nr_calls > 0;
	     b++) {
		for (pp = &ep->ep_calls[b]; (c = *pp) != NULL;) {
			if (c->ca_deadline_ms <= now) {
				*pp = c->ca_next;
				ep->ep_nr_calls--;
				c->ca_next = dead;
				dead = c;
				continue;
			}
			if (c->ca_deadline_ms < next)
				next = c->ca_deadline_ms;
			pp = &c->ca_next;
		}
	}
	__atomic_store_n(&ep->ep_wake_at_ms, next, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ep->ep_lock);
	while ((c = dead) != NULL) {
		dead = c->ca_next;
		snprintf(msg, sizeof msg, "rpc: call opcode %u to %s timed out "
			 "after %d ms", c->ca_opcode, c->ca_peer->pe_str,
			 c->ca_timeout_ms);
		cli_finish(ep, c, -ETIMEDOUT, msg, NULL);
	}
	return next > now ? (int)(next - now) : 0;
}

/* Fail every call of peer p (or of every peer when p is NULL); why (or
 * NULL: "peer closed" / "endpoint closed") ends each call's message. */
static void cli_fail_all_why(struct rpc_ep *ep, struct rpc_peer *p, int rc,
			     const char *why)
{
	struct rpc_call *dead = NULL, *c, **pp;
	char msg[256];

	pthread_mutex_lock(&ep->ep_lock);
	for (uint32_t b = 0; b < RPC_CALL_BUCKETS; b++)
		for (pp = &ep->ep_calls[b]; (c = *pp) != NULL;) {
			if (p == NULL || c->ca_peer == p) {
				*pp = c->ca_next;
				ep->ep_nr_calls--;
				c->ca_next = dead;
				dead = c;
				continue;
			}
			pp = &c->ca_next;
		}
	pthread_mutex_unlock(&ep->ep_lock);
	while ((c = dead) != NULL) {
		dead = c->ca_next;
		if (why != NULL)
			snprintf(msg, sizeof msg, "rpc: call opcode %u to %s: "
				 "%s", c->ca_opcode, c->ca_peer->pe_str, why);
		else
			snprintf(msg, sizeof msg, "rpc: call opcode %u to %s: "
				 "%s closed", c->ca_opcode, c->ca_peer->pe_str,
				 p != NULL ? "peer" : "endpoint");
		cli_finish(ep, c, rc, msg, NULL);
	}
}

static void cli_fail_all(struct rpc_ep *ep, struct rpc_peer *p, int rc)
{
	cli_fail_all_why(ep, p, rc, NULL);
}

/* ---------------------------------------------------------------- calls */

/* Wait for a free slot on p until deadline (ep_lock held). */
static int cli_slot(struct rpc_peer *p, uint32_t opcode, int timeout_ms,
		    uint64_t deadline, bool nowait)
{
	struct rpc_ep *ep = p->pe_ep;
	struct timespec ts;
	uint64_t left;

	while (p->pe_inflight >= ep->ep_conf.rc_max_inflight) {
		if (ep->ep_closing || ep->ep_calls_stopped || p->pe_closed)
			return err_set(-ESHUTDOWN, "rpc: call opcode %u to %s: "
				       "closing", opcode, p->pe_str);
		if (nowait)
			return err_set(-EAGAIN, "rpc: call opcode %u to %s: "
				       "%u calls in flight", opcode, p->pe_str,
				       p->pe_inflight);
		if (rpc_in_progress_thread(ep))
			return err_set(-EAGAIN, "rpc: call opcode %u to %s from "
				       "a done() callback with %u calls in "
				       "flight", opcode, p->pe_str,
				       p->pe_inflight);
		left = deadline > rpc_now_ms() ? deadline - rpc_now_ms() : 0;
		if (left == 0) {
			ep->ep_stats.rs_timeouts++;
			return err_set(-ETIMEDOUT, "rpc: call opcode %u to %s "
				       "found no free slot within %d ms (%u in "
				       "flight)", opcode, p->pe_str,
				       timeout_ms, p->pe_inflight);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(left / 1000);
		ts.tv_nsec += (long)(left % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&ep->ep_cv, &ep->ep_lock, &ts);
	}
	if (ep->ep_closing || ep->ep_calls_stopped || p->pe_closed)
		return err_set(-ESHUTDOWN, "rpc: call opcode %u to %s: closing",
			       opcode, p->pe_str);
	p->pe_inflight++;
	return 0;
}

static int cli_bulk_check(struct rpc_ep *ep, const struct rpc_bulk *bulk,
			  uint32_t opcode, size_t *total)
{
	size_t t = 0;

	*total = 0;
	if (bulk == NULL || bulk->rb_dir == RPC_BULK_NONE)
		return 0;
	if ((bulk->rb_dir != RPC_BULK_OUT && bulk->rb_dir != RPC_BULK_IN) ||
	    bulk->rb_nr == 0 || bulk->rb_nr > RPC_MAX_IOV ||
	    bulk->rb_iov == NULL)
		return err_set(-EINVAL, "rpc %s: opcode %u: bulk dir %u with %u "
			       "iovecs (1 to %u)", ep->ep_self, opcode,
			       bulk->rb_dir, bulk->rb_nr, RPC_MAX_IOV);
	for (uint32_t i = 0; i < bulk->rb_nr; i++) {
		if (bulk->rb_iov[i].iov_base == NULL &&
		    bulk->rb_iov[i].iov_len > 0)
			return err_set(-EINVAL, "rpc %s: opcode %u: bulk iovec "
				       "%u is NULL", ep->ep_self, opcode, i);
		t += bulk->rb_iov[i].iov_len;
	}
	*total = t;
	return 0;
}

/* Register the call's buffers and describe them in the envelope. */
static int cli_bulk_prepare(struct rpc_ep *ep, struct rpc_call *c,
			    RpcBulkDesc *bd, RpcSeg *segs, RpcSeg **segp)
{
	uint64_t acc = c->ca_bdir == RPC_BULK_OUT ? FI_REMOTE_READ :
						  FI_REMOTE_WRITE;
	int rc;

	bd->dir = c->ca_bdir;
	bd->len = c->ca_blen;
	if (c->ca_blen <= ep->ep_conf.rc_inline_max)
		return 0; /* inline: data copied in cli_envelope / reply */
	for (uint32_t i = 0; i < c->ca_nr; i++) {
		rpc_seg__init(&segs[i]);
		segp[i] = &segs[i];
		segs[i].len = c->ca_iov[i].iov_len;
		if (segs[i].len == 0)
			continue;
		rc = rpc_mr_reg(ep, c->ca_iov[i].iov_base, segs[i].len, acc,
				&c->ca_mr[i]);
		if (rc != 0)
			return rc;
		segs[i].key = fi_mr_key(c->ca_mr[i]);
		segs[i].addr = (ep->ep_mr_mode & FI_MR_VIRT_ADDR) ?
			       (uint64_t)(uintptr_t)c->ca_iov[i].iov_base : 0;
	}
	bd->nr_iov = c->ca_nr;
	bd->n_segs = c->ca_nr;
	bd->segs = segp;
	return 0;
}

static void cli_inline_out(struct rpc_call *c, RpcBulkDesc *bd, uint8_t *buf)
{
	size_t pos = 0;

	for (uint32_t i = 0; i < c->ca_nr; i++) {
		memcpy(buf + pos, c->ca_iov[i].iov_base, c->ca_iov[i].iov_len);
		pos += c->ca_iov[i].iov_len;
	}
	bd->has_data = true;
	bd->data.data = buf;
	bd->data.len = pos;
}

/* Build and send the request of c; 0 once it is in the table and sent. */
static int cli_send(struct rpc_ep *ep, struct rpc_call *c, uint32_t kind,
		    const void *body, size_t len)
{
	RpcEnvelope env = RPC_ENVELOPE__INIT;
	RpcBulkDesc bd = RPC_BULK_DESC__INIT;
	RpcSeg segs[RPC_MAX_IOV], *segp[RPC_MAX_IOV];
	uint8_t *ibuf = NULL, key[RPC_KEY_LEN];
	fi_addr_t dest;
	uint64_t xid, sent = 0, trace = 0;
	uint32_t slot = 0, opcode = c->ca_opcode;
	bool wake, c_keyed;
	int rc;

	env.kind = kind;
	env.opcode = c->ca_opcode;
	env.has_session = c->ca_peer->pe_session != 0;
	env.session = c->ca_peer->pe_session;
	env.has_timeout_ms = true;
	env.timeout_ms = (uint32_t)c->ca_timeout_ms;
	env.map_epoch = rpc_epoch_get();
	env.has_map_epoch = env.map_epoch != 0;
	env.has_body = len > 0;
	env.body.data = (uint8_t *)body;
	env.body.len = len;
	if (c->ca_bdir != RPC_BULK_NONE) {
		if ((rc = cli_bulk_prepare(ep, c, &bd, segs, segp)) != 0) {
			cli_release_mrs(c);
			return rc;
		}
		if (c->ca_bdir == RPC_BULK_OUT &&
		    c->ca_blen <= ep->ep_conf.rc_inline_max) {
			if ((ibuf = malloc(c->ca_blen + 1)) == NULL)
				return err_set(-ENOMEM, "rpc: inline bulk");
			cli_inline_out(c, &bd, ibuf);
		}
		env.bulk = &bd;
	}
	/* Once in the table, c may be finished (and freed) by another
	 * thread at any moment: use only copies from here on. */
	dest = c->ca_peer->pe_addr;
	c_keyed = c->ca_peer->pe_keyed;
	if (c_keyed)
		memcpy(key, c->ca_peer->pe_key, sizeof key);
	if (kind == RPC_K_REQUEST && (trace = addb_trace_cur()) != 0) {
		env.has_trace = true;
		env.trace = trace;
	}
	if (kind == RPC_K_REQUEST) {
		slot = cli_addb_slot(c->ca_peer);
		sent = len + (c->ca_bdir == RPC_BULK_OUT ? c->ca_blen : 0);
		c->ca_t0_ns = addb_now_ns();
	}
	pthread_mutex_lock(&ep->ep_lock);
	xid = c->ca_xid = ++ep->ep_next_xid;
	env.xid = xid;
	cli_insert(ep, c);
	ep->ep_stats.rs_calls++;
	wake = c->ca_deadline_ms < ep->ep_wake_at_ms;
	if (wake)
		__atomic_store_n(&ep->ep_wake_at_ms, c->ca_deadline_ms,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ep->ep_lock);
	if (wake)
		rpc_wake(ep);
	rc = rpc_send_env(ep, dest, &env, xid,
			  kind == RPC_K_REQUEST && c_keyed ? key : NULL);
	OPENSSL_cleanse(key, sizeof key);
	free(ibuf);
	if (rc != 0) {
		pthread_mutex_lock(&ep->ep_lock);
		if (cli_take(ep, xid) == NULL)
			rc = 0; /* already finished by someone else */
		pthread_mutex_unlock(&ep->ep_lock);
	}
	if (rc == 0 && kind == RPC_K_REQUEST) {
		addb_add(ADDB_RPC_CALLS, slot, 1);
		addb_add(ADDB_RPC_BYTES, addb_inst(ADDB_RPC_BYTES, slot,
						   ADDB_DIR_SENT), sent);
		if (trace != 0)
			addb_rec(ADDB_R_OP_SENT, trace, opcode, sent, slot);
	}
	return rc;
}

static int cli_start(struct rpc_peer *p, uint32_t kind, uint32_t opcode,
		     const void *body, size_t len, const struct rpc_bulk *bulk,
		     int timeout_ms, rpc_done_fn done, void *arg,
		     RpcEnvelope **raw, bool nowait)
{
	struct rpc_ep *ep;
	struct rpc_call *c;
	size_t blen;
	int rc;

	if (p == NULL || done == NULL || (body == NULL && len > 0))
		return err_set(-EINVAL, "rpc_call: NULL peer, done or body");
	ep = p->pe_ep;
	if (timeout_ms <= 0 || (unsigned)timeout_ms > RPC_TIMEOUT_MAX_MS)
		return err_set(-EINVAL, "rpc: call opcode %u to %s: timeout "
			       "%d ms outside 1..%u", opcode, p->pe_str,
			       timeout_ms, RPC_TIMEOUT_MAX_MS);
	if (len > ep->ep_max_body)
		return err_set(-EMSGSIZE, "rpc: call opcode %u to %s: body of "
			       "%zu bytes over %zu", opcode, p->pe_str, len,
			       ep->ep_max_body);
	if ((rc = cli_bulk_check(ep, bulk, opcode, &blen)) != 0)
		return rc;
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return err_set(-ENOMEM, "rpc: no memory for a call");
	c->ca_peer = p;
	c->ca_opcode = opcode;
	c->ca_timeout_ms = timeout_ms;
	c->ca_deadline_ms = rpc_now_ms() + (uint64_t)timeout_ms;
	c->ca_done = done;
	c->ca_arg = arg;
	c->ca_raw = raw != NULL;
	c->ca_raw_env = raw;
	if (blen > 0) {
		c->ca_bdir = bulk->rb_dir;
		c->ca_nr = bulk->rb_nr;
		c->ca_blen = blen;
		memcpy(c->ca_iov, bulk->rb_iov, bulk->rb_nr * sizeof *c->ca_iov);
	}
	pthread_mutex_lock(&ep->ep_lock);
	rc = cli_slot(p, opcode, timeout_ms, c->ca_deadline_ms, nowait);
	pthread_mutex_unlock(&ep->ep_lock);
	if (rc != 0) {
		free(c);
		return rc;
	}
	if ((rc = cli_send(ep, c, kind, body, len)) == 0)
		return 0;
	/* Not sent, and no longer in the table: undo the slot here. */
	cli_release_mrs(c);
	pthread_mutex_lock(&ep->ep_lock);
	p->pe_inflight--;
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_broadcast(&ep->ep_cv);
	free(c);
	return rc;
}

/* An asynchronous request; nowait: -EAGAIN rather than wait for a slot. */
static int cli_request(struct rpc_peer *p, uint32_t opcode, const void *body,
		       size_t len, const struct rpc_bulk *bulk, int timeout_ms,
		       rpc_done_fn done, void *arg, bool nowait)
{
	if (opcode != RPC_OP_NOOP && opcode < RPC_OP_USER_MIN)
		return err_set(-EINVAL, "rpc: opcode %u is reserved", opcode);
	return cli_start(p, RPC_K_REQUEST, opcode, body, len, bulk, timeout_ms,
			 done, arg, NULL, nowait);
}

int rpc_call_async(struct rpc_peer *p, uint32_t opcode, const void *body,
		   size_t len, const struct rpc_bulk *bulk, int timeout_ms,
		   rpc_done_fn done, void *arg)
{
	return cli_request(p, opcode, body, len, bulk, timeout_ms, done, arg,
			   false);
}

int rpc_call_try(struct rpc_peer *p, uint32_t opcode, const void *body,
		 size_t len, const struct rpc_bulk *bulk, int timeout_ms,
		 rpc_done_fn done, void *arg)
{
	return cli_request(p, opcode, body, len, bulk, timeout_ms, done, arg,
			   true);
}

/* A synchronous call waits on its own condition variable. */
struct cli_wait {
	pthread_mutex_t cw_lock;
	pthread_cond_t cw_cv;
	bool cw_done;               /* read unlocked by a reaping caller */
	bool cw_sleeping;           /* a solo reaper in poll() (cw_lock) */
	struct rpc_ep *cw_ep;
	struct rpc_result *cw_res;
};

static void cli_wait_done(void *arg, struct rpc_result *res)
{
	struct cli_wait *w = arg;
	struct rpc_ep *ep = w->cw_ep;
	bool kick;

	pthread_mutex_lock(&w->cw_lock);
	*w->cw_res = *res;
	__atomic_store_n(&w->cw_done, true, __ATOMIC_RELEASE);
	kick = w->cw_sleeping;
	pthread_cond_signal(&w->cw_cv);
	pthread_mutex_unlock(&w->cw_lock);
	/* w may be gone now (its caller saw cw_done): only ep from here. */
	if (kick)
		rpc_solo_kick(ep);
}

static int cli_call_sync(struct rpc_peer *p, uint32_t kind, uint32_t opcode,
			 const void *body, size_t len,
			 const struct rpc_bulk *bulk, int timeout_ms,
			 struct rpc_result *res, RpcEnvelope **raw)
{
	struct rpc_ep *ep = p != NULL ? p->pe_ep : NULL;
	struct cli_wait w = { .cw_res = res, .cw_ep = ep };
	int rc;

	memset(res, 0, sizeof *res);
	if (p != NULL && rpc_in_progress_thread(p->pe_ep))
		return err_set(-EDEADLK, "rpc: synchronous call opcode %u from "
			       "a done() callback", opcode);
	pthread_mutex_init(&w.cw_lock, NULL);
	pthread_cond_init(&w.cw_cv, NULL);
	rc = cli_start(p, kind, opcode, body, len, bulk, timeout_ms,
		       cli_wait_done, &w, raw, false);
	if (rc == 0 && rpc_reap_begin(p->pe_ep)) {
		/* Polling mode: drive the CQ here rather than sleep until
		 * the progress thread wakes us (a thread hand-off). */
		while (!__atomic_load_n(&w.cw_done, __ATOMIC_ACQUIRE))
			rpc_reap(p->pe_ep);
		rpc_reap_end(p->pe_ep);
	} else if (rc == 0 && rpc_solo_begin(ep)) {
		/* Default mode, no other caller reaping: read the CQ and
		 * sleep on its descriptor here, rather than sleep until the
		 * progress thread wakes us (a second wake-up per call).  Past
		 * the deadline (+1 s) the condition below takes over. */
		rpc_solo_reap(ep, &w.cw_lock, &w.cw_done, &w.cw_sleeping,
			      rpc_now_ms() + (uint64_t)timeout_ms + 1000u);
		rpc_solo_end(ep); /* not p: a closed peer may be freed */
	}
	if (rc == 0) {
		pthread_mutex_lock(&w.cw_lock);
		while (!w.cw_done)
			pthread_cond_wait(&w.cw_cv, &w.cw_lock);
		pthread_mutex_unlock(&w.cw_lock);
		rc = res->rr_status;
		if (rc != 0)
			err_set(rc, "%s", res->rr_msg);
	} else {
		res->rr_status = rc;
		snprintf(res->rr_msg, sizeof res->rr_msg, "%s", err_msg());
	}
	pthread_cond_destroy(&w.cw_cv);
	pthread_mutex_destroy(&w.cw_lock);
	return rc;
}

int rpc_call(struct rpc_peer *p, uint32_t opcode, const void *body,
	     size_t len, const struct rpc_bulk *bulk, int timeout_ms,
	     struct rpc_result *res)
{
	struct rpc_result tmp;

	if (opcode != RPC_OP_NOOP && opcode < RPC_OP_USER_MIN)
		return err_set(-EINVAL, "rpc: opcode %u is reserved", opcode);
	if (res == NULL) {
		int rc = cli_call_sync(p, RPC_K_REQUEST, opcode, body, len,
				       bulk, timeout_ms, &tmp, NULL);
		free(tmp.rr_body);
		return rc;
	}
	return cli_call_sync(p, RPC_K_REQUEST, opcode, body, len, bulk,
			     timeout_ms, res, NULL);
}

/* ------------------------------------------------------------- connect */

/* The server's address in the provider's format, into the AV. */
static int cli_resolve(struct rpc_ep *ep, const char *addr, uint16_t port,
		       fi_addr_t *out)
{
	struct fi_info *h = fi_dupinfo(ep->ep_info), *info = NULL;
	char svc[16];
	int rc;

	if (h == NULL)
		return err_set(-ENOMEM, "rpc: fi_dupinfo");
	free(h->src_addr);
	h->src_addr = NULL;
	h->src_addrlen = 0;
	free(h->dest_addr);
	h->dest_addr = NULL;
	h->dest_addrlen = 0;
	snprintf(svc, sizeof svc, "%u", port);
	rc = rpc_fi_getinfo(addr, svc, 0, h, &info);
	fi_freeinfo(h);
	if (rc != 0 || info->dest_addr == NULL) {
		if (info != NULL)
			fi_freeinfo(info);
		return err_set(rc ? rpc_fi_err(rc) : -EHOSTUNREACH,
			       "rpc: cannot resolve %s:%u with %s: %s", addr,
			       port, ep->ep_provider,
			       rc ? fi_strerror(-rc) : "no address");
	}
	rc = rpc_av_insert(ep, info->dest_addr, true, out);
	fi_freeinfo(info);
	return rc;
}

static int cli_hello(struct rpc_peer *p, const uint8_t *cnonce,
		     int timeout_ms, RpcChallenge **out)
{
	struct rpc_ep *ep = p->pe_ep;
	RpcHello h = RPC_HELLO__INIT;
	RpcEnvelope *env = NULL;
	struct rpc_result res;
	uint8_t body[RPC_NAME_MAX + 128];
	size_t n;
	int rc;

	h.version = RPC_VERSION;
	h.name.data = ep->ep_name;
	h.name.len = ep->ep_name_len;
	h.nonce.data = (uint8_t *)cnonce;
	h.nonce.len = RPC_NONCE_LEN;
	n = rpc_hello__pack(&h, body);
	rc = cli_call_sync(p, RPC_K_HELLO, 0, body, n, NULL, timeout_ms, &res,
			   &env);
	if (rc != 0 || env == NULL)
		return err_set(rc ? rc : -EPROTO, "rpc: connect to %s: %s",
			       p->pe_str, rc ? res.rr_msg : "no CHALLENGE");
	rc = -EPROTO;
	if (env->kind == RPC_K_CHALLENGE && env->has_body)
		rc = rpc_wire_challenge_decode(env->body.data, env->body.len,
					       out);
	rpc_envelope__free_unpacked(env, NULL);
	if (rc != 0)
		return err_set(rc, "rpc: connect to %s: bad CHALLENGE",
			       p->pe_str);
	return 0;
}

/* The body of a successful AUTH_REPLY (RpcWelcome, absent from servers
 * that predate it): kept in *out for cli_handshake() to check, NULL when
 * absent or malformed (the incarnation then stays unknown). */
static void cli_welcome(struct rpc_peer *p, const RpcEnvelope *env,
			RpcWelcome **out)
{
	*out = NULL;
	if (!env->has_body || env->body.len == 0)
		return;
	if (rpc_wire_welcome_decode(env->body.data, env->body.len, out) != 0)
		LOG_INFO("rpc: connect to %s: %s (its incarnation stays "
			 "unknown)", p->pe_str, err_msg());
}

static int cli_auth(struct rpc_peer *p, const uint8_t *mac, int timeout_ms,
		    RpcWelcome **welcome)
{
	RpcAuth a = RPC_AUTH__INIT;
	RpcEnvelope *env = NULL;
	struct rpc_result res;
	uint8_t body[128];
	size_t n;
	int rc;

	a.session = p->pe_session;
	a.mac.data = (uint8_t *)mac;
	a.mac.len = RPC_MAC_LEN;
	n = rpc_auth__pack(&a, body);
	rc = cli_call_sync(p, RPC_K_AUTH, 0, body, n, NULL, timeout_ms, &res,
			   &env);
	if (rc != 0 || env == NULL)
		return err_set(rc ? rc : -EPROTO, "rpc: connect to %s: %s",
			       p->pe_str, rc ? res.rr_msg : "no AUTH_REPLY");
	rc = env->kind != RPC_K_AUTH_REPLY ? -EPROTO :
	     env->has_status ? env->status : -EPROTO;
	if (rc == 0)
		cli_welcome(p, env, welcome);
	rpc_envelope__free_unpacked(env, NULL);
	if (rc == -EACCES)
		return err_set(rc, "rpc: server %s refused our proof of the "
			       "cluster secret (wrong secret?)", p->pe_str);
	if (rc != 0)
		return err_set(rc, "rpc: connect to %s: AUTH answered %d",
			       p->pe_str, rc);
	return 0;
}

/* The server's incarnation from its RpcWelcome w, if its tag under the
 * session key holds (else it stays 0: unknown). */
static void cli_incarnation(struct rpc_peer *p, const RpcWelcome *w)
{
	uint8_t tag[RPC_TAG_LEN];

	if (w == NULL || !p->pe_keyed ||
	    rpc_welcome_tag(p->pe_key, w->incarnation, tag) != 0)
		return;
	if (CRYPTO_memcmp(tag, w->mac.data, RPC_TAG_LEN) != 0) {
		LOG_WARNING("rpc: connect to %s: the server's incarnation "
			    "fails its MAC; left unknown", p->pe_str);
		return;
	}
	p->pe_incarnation = w->incarnation;
}

/* HELLO, check the server's proof, AUTH with ours. */
static int cli_handshake(struct rpc_peer *p, int timeout_ms)
{
	struct rpc_ep *ep = p->pe_ep;
	uint8_t cnonce[RPC_NONCE_LEN], snonce[RPC_NONCE_LEN], mac[RPC_MAC_LEN];
	RpcWelcome *w = NULL;
	RpcChallenge *ch = NULL;
	bool ok;
	int rc;

	if ((rc = rpc_random(cnonce, sizeof cnonce)) != 0 ||
	    (rc = cli_hello(p, cnonce, timeout_ms, &ch)) != 0)
		return rc;
	ok = rpc_auth_mac(ep, 'S', cnonce, ch->nonce.data, mac) == 0 &&
	     CRYPTO_memcmp(mac, ch->mac.data, RPC_MAC_LEN) == 0;
	p->pe_session = ch->session;
	memcpy(snonce, ch->nonce.data, RPC_NONCE_LEN);
	if (ok)
		rc = rpc_auth_mac(ep, 'C', cnonce, ch->nonce.data, mac);
	else
		memset(mac, 0, sizeof mac); /* an AUTH that cannot pass */
	rpc_challenge__free_unpacked(ch, NULL);
	if (rc != 0)
		return rc;
	rc = cli_auth(p, mac, timeout_ms, &w);
	if (ok && rc == 0) {
		rc = rpc_auth_mac(ep, 'K', cnonce, snonce, p->pe_key);
		pthread_mutex_lock(&ep->ep_lock);
		p->pe_keyed = rc == 0;
		pthread_mutex_unlock(&ep->ep_lock);
		cli_incarnation(p, w);
	}
	if (w != NULL)
		rpc_welcome__free_unpacked(w, NULL);
	OPENSSL_cleanse(snonce, sizeof snonce);
	if (!ok) {
		pthread_mutex_lock(&ep->ep_lock);
		ep->ep_stats.rs_auth_failed++;
		pthread_mutex_unlock(&ep->ep_lock);
		return err_set(-EACCES, "rpc: server %s failed to prove the "
			       "cluster secret", p->pe_str);
	}
	return rc;
}

int rpc_connect(struct rpc_ep *ep, const char *addr, uint16_t port,
		int timeout_ms, struct rpc_peer **out)
{
	struct rpc_peer *p;
	int rc;

	if (ep == NULL || addr == NULL || out == NULL || port == 0)
		return err_set(-EINVAL, "rpc_connect: NULL endpoint, address "
			       "or out, or port 0");
	*out = NULL;
	if (timeout_ms <= 0)
		return err_set(-EINVAL, "rpc_connect %s:%u: timeout %d ms",
			       addr, port, timeout_ms);
	p = calloc(1, sizeof *p);
	if (p == NULL)
		return err_set(-ENOMEM, "rpc: no memory for a peer");
	p->pe_ep = ep;
	p->pe_addr = FI_ADDR_NOTAVAIL;
	snprintf(p->pe_str, sizeof p->pe_str, "%s:%u", addr, port);
	if ((rc = cli_resolve(ep, addr, port, &p->pe_addr)) == 0) {
		pthread_mutex_lock(&ep->ep_lock);
		p->pe_next = ep->ep_peers;
		ep->ep_peers = p;
		pthread_mutex_unlock(&ep->ep_lock);
		rc = cli_handshake(p, timeout_ms);
		if (rc == 0) {
			*out = p;
			return 0;
		}
	}
	{
		char m[LIM_ERRMSG_LEN];

		snprintf(m, sizeof m, "%s", err_msg());
		rpc_peer_close(p);
		return err_set(rc, "%s", m);
	}
}

void rpc_peer_close(struct rpc_peer *p)
{
	struct rpc_ep *ep;
	struct rpc_peer **pp;

	if (p == NULL)
		return;
	ep = p->pe_ep;
	pthread_mutex_lock(&ep->ep_lock);
	p->pe_closed = true;
	for (pp = &ep->ep_peers; *pp != NULL && *pp != p;)
		pp = &(*pp)->pe_next;
	if (*pp == p)
		*pp = p->pe_next;
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_broadcast(&ep->ep_cv);
	cli_fail_all(ep, p, -ESHUTDOWN);
	/* Wait for callers still inside rpc_call_async() on p (bounded by
	 * their slot wait, which sees pe_closed at once). */
	pthread_mutex_lock(&ep->ep_lock);
	while (p->pe_inflight > 0) {
		pthread_mutex_unlock(&ep->ep_lock);
		cli_fail_all(ep, p, -ESHUTDOWN);
		usleep(1000);
		pthread_mutex_lock(&ep->ep_lock);
	}
	/* Nothing may be posted to the address once it leaves the AV. */
	rpc_backlog_purge(ep, p->pe_addr);
	rpc_av_remove(ep, p->pe_addr);
	pthread_mutex_unlock(&ep->ep_lock);
	OPENSSL_cleanse(p->pe_key, sizeof p->pe_key);
	free(p);
}

void rpc_peer_fail(struct rpc_peer *p, int rc, const char *why)
{
	struct rpc_ep *ep;

	if (p == NULL)
		return;
	ep = p->pe_ep;
	pthread_mutex_lock(&ep->ep_lock);
	p->pe_closed = true; /* no new call starts on p */
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_broadcast(&ep->ep_cv);
	cli_fail_all_why(ep, p, rc, why);
	/* A call that took its slot before pe_closed and is not in the
	 * table yet: failed once it is (as rpc_peer_close() waits). */
	pthread_mutex_lock(&ep->ep_lock);
	while (p->pe_inflight > 0) {
		pthread_mutex_unlock(&ep->ep_lock);
		cli_fail_all_why(ep, p, rc, why);
		usleep(1000);
		pthread_mutex_lock(&ep->ep_lock);
	}
	pthread_mutex_unlock(&ep->ep_lock);
}

uint64_t rpc_peer_incarnation(const struct rpc_peer *p)
{
	return p != NULL ? p->pe_incarnation : 0;
}

void rpc_ep_calls_stop(struct rpc_ep *ep)
{
	if (ep == NULL)
		return;
	pthread_mutex_lock(&ep->ep_lock);
	ep->ep_calls_stopped = true;
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_broadcast(&ep->ep_cv);
	cli_fail_all(ep, NULL, -ESHUTDOWN);
}

void rpc_cli_fini(struct rpc_ep *ep)
{
	struct rpc_peer *p;

	cli_fail_all(ep, NULL, -ESHUTDOWN);
	pthread_mutex_lock(&ep->ep_lock);
	while ((p = ep->ep_peers) != NULL) {
		pthread_mutex_unlock(&ep->ep_lock);
		rpc_peer_close(p);
		pthread_mutex_lock(&ep->ep_lock);
	}
	pthread_mutex_unlock(&ep->ep_lock);
}
