/*
 * srv_idx_fan.c — index replicas (overview: the top of srv_idx.c): the
 * copies of an update sent by the replica that orders it (docs/cluster.md
 * "Copies sent by the ordering replica").
 *
 * A client's PUT or DEL names in IdxReq.fan the servers whose replicas
 * should get the update (its live view of the index's replicas).  As soon
 * as this replica's commit of the update is made (ci_executed: visible,
 * its version (term, seq) taken, not yet synced) it sends each of them the
 * SRF_REPLICA copy a client would send, all at once (peers_call_async, a
 * timeout of half the call timeout), so that the copies are applied and
 * synced while this replica syncs its own commit: one round trip and one
 * sync on the update's path instead of two of each.  The answer waits for
 * both: the update durable here and every copy ended; Reply.fanned names
 * the replicas that applied it.  The client sends the copy itself to every
 * server of fan not in fanned (no connection here, a call that failed or
 * timed out), with its own retries, so nothing is lost by this path being
 * best effort.
 *
 * A copy may thus land on a replica before this one's commit is durable.
 * A process killed keeps its commit (the pages are written); a machine
 * that loses it comes back ordering in a new term (ridx_claim(): one term
 * per run of the ordering replica), so no version is ever given to two
 * different updates.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/srv_idx_internal.h"

struct srv_fan;

/* Servers a connect was started for (fan_connect(), a bit each). */
static uint64_t fan_connecting;

struct fan_arg {
	struct srv_fan *fa_fan;
	uint32_t fa_srv;
};

/* The copies of one update in flight (they count as a request in flight
 * of the server, so srv_stop() waits for their ends before it closes the
 * peers' table they use). */
struct srv_fan {
	struct srv *f_srv;
	pthread_mutex_t f_lock;
	uint32_t f_left;          /* calls started and not ended */
	uint64_t f_got;           /* servers that applied the copy */
	struct srv_op *f_so;      /* parked: answered by the last end */
	uint64_t f_seq;           /* ... with this seq */
	bool f_detached;          /* the op is gone: the last end frees */
	uint8_t *f_recs;          /* the records, when sent as the bulk */
	struct iovec f_iov;
	struct rpc_bulk f_bulk;
	struct fan_arg f_arg[CLU_SERVERS_MAX];
};

static void fan_free(struct srv_fan *f)
{
	struct srv *s = f->f_srv;

	pthread_mutex_destroy(&f->f_lock);
	free(f->f_recs);
	free(f);
	srv_leave(s);
}

struct fan_conn {
	struct srv *fc_srv;
	uint32_t fc_to;
};

static void *fan_connect_main(void *arg)
{
	struct fan_conn *fc = arg;
	struct srv *s = fc->fc_srv;
	struct rpc_result res;

	srv_thread_enter();
	(void)peers_call_ms(s->s_peers, fc->fc_to, RPC_OP_NOOP, NULL, 0, NULL,
			    s->s_conf->cc_call_ms, &res);
	free(res.rr_body);
	__atomic_and_fetch(&fan_connecting, ~(1ull << fc->fc_to),
			   __ATOMIC_RELAXED);
	free(fc);
	srv_leave(s);
	return NULL;
}

/* No connection to server j to start a copy on (none made yet: this
 * server never called it, or it was found down): one is made in the
 * background, once at a time, by a call of the blocking kind, so that
 * later updates find it; this copy is left to the client. */
static void fan_connect(struct srv *s, uint32_t j)
{
	struct fan_conn *fc;
	pthread_attr_t at;
	pthread_t th;
	bool ok;

	if (__atomic_fetch_or(&fan_connecting, 1ull << j, __ATOMIC_RELAXED) &
	    (1ull << j))
		return;
	fc = malloc(sizeof *fc);
	ok = fc != NULL && srv_enter_peer(s);
	if (ok) {
		*fc = (struct fan_conn){s, j};
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		ok = pthread_create(&th, &at, fan_connect_main, fc) == 0;
		pthread_attr_destroy(&at);
		if (!ok)
			srv_leave(s);
	}
	if (!ok) {
		free(fc);
		__atomic_and_fetch(&fan_connecting, ~(1ull << j),
				   __ATOMIC_RELAXED);
	}
}

/* One copy ended (RPC progress thread: nothing here blocks).  A server
 * that did not answer is not marked down here (peers_call_failed() may
 * not run on this thread): the client's own call to it does that. */
static void fan_end(void *arg, struct peers_end *e)
{
	struct fan_arg *fa = arg;
	struct srv_fan *f = fa->fa_fan;
	struct srv_op *so = NULL;
	uint64_t seq = 0;
	bool gone;

	free(e->pe_body);
	e->pe_body = NULL;
	pthread_mutex_lock(&f->f_lock);
	if (e->pe_rc == 0 && !e->pe_unreachable)
		f->f_got |= 1ull << fa->fa_srv;
	if (--f->f_left == 0) {
		so = f->f_so;
		seq = f->f_seq;
		f->f_so = NULL;
	}
	gone = f->f_left == 0 && f->f_detached;
	pthread_mutex_unlock(&f->f_lock);
	if (gone)
		fan_free(f);
	else if (so != NULL)
		srv_reply_attr(so, seq); /* the op holds f: freed with it */
}

/* The copy of so's update for its replicas (SRF_REPLICA with its version
 * and op tag), packed into *b; its records inline or as f's bulk. */
static int fan_pack(struct srv_fan *f, const struct srv_op *so,
		    struct msg_buf *b, const struct rpc_bulk **bulk)
{
	const struct msg_req *m = &so->so_m;
	const struct eng_req *r = &m->mr_req;
	IdxReq q = IDX_REQ__INIT;
	SId id, cont;

	msg_id_out(&id, &r->er_id);
	msg_id_out(&cont, &r->er_container);
	q.kind = r->er_kind;
	q.id = &id;
	q.container = &cont;
	q.incarnation = m->mr_incarnation;
	q.flags = r->er_flags;
	q.nr = m->mr_nr;
	q.n_klen = m->mr_nr;
	q.klen = m->mr_klen;
	q.n_vlen = r->er_kind == ER_IDX_PUT ? m->mr_nr : 0;
	q.vlen = m->mr_vlen;
	q.rflags = SRF_REPLICA;
	q.seq = so->so_new_seq;
	q.term = so->so_term;
	q.tag = m->mr_tag;
	*bulk = NULL;
	if (m->mr_recs_len <= MSG_RECS_INLINE) {
		q.recs.data = m->mr_recs;
		q.recs.len = m->mr_recs_len;
	} else {
		f->f_recs = malloc(m->mr_recs_len);
		if (f->f_recs == NULL)
			return err_set(-ENOMEM, "index %s: copies",
				       eng_id_str(&r->er_id));
		memcpy(f->f_recs, m->mr_recs, m->mr_recs_len);
		f->f_iov = (struct iovec){f->f_recs, m->mr_recs_len};
		f->f_bulk = (struct rpc_bulk){RPC_BULK_OUT, &f->f_iov, 1};
		*bulk = &f->f_bulk;
	}
	return msg_pack(&q.base, b);
}

void srv_idx_fan_start(struct srv_op *so)
{
	struct srv *s = so->so_srv;
	uint32_t n = s->s_conf->cc_nr_servers;
	uint32_t ms = s->s_conf->cc_call_ms / 2;
	const struct rpc_bulk *bulk = NULL;
	struct msg_buf b = {0};
	struct srv_fan *f;
	uint32_t started = 0;

	if (so->so_fan_want == 0)
		return;
	f = calloc(1, sizeof *f);
	if (f != NULL && !srv_enter_peer(s)) {
		free(f);
		return; /* stopping */
	}
	if (f != NULL)
		f->f_srv = s;
	if (f == NULL || fan_pack(f, so, &b, &bulk) != 0) {
		LOG_INFO("index %s: copies left to the client: %s",
			 eng_id_str(&so->so_m.mr_req.er_id), err_msg());
		if (f != NULL) {
			free(f->f_recs);
			free(f);
			srv_leave(s);
		}
		free(b.mb_p);
		return;
	}
	pthread_mutex_init(&f->f_lock, NULL);
	/* one count held while starting, so no end answers before all are
	 * started */
	f->f_left = 1;
	for (uint32_t j = 0; j < n; j++) {
		if (!(so->so_fan_want & 1ull << j))
			continue;
		f->f_arg[j] = (struct fan_arg){f, j};
		pthread_mutex_lock(&f->f_lock);
		f->f_left++;
		pthread_mutex_unlock(&f->f_lock);
		if (peers_call_async_ms(s->s_peers, j, SOP_IDX, b.mb_p,
					b.mb_len, bulk, ms > 0 ? ms : 1,
					fan_end, &f->f_arg[j]) == 0) {
			started++;
			continue;
		}
		pthread_mutex_lock(&f->f_lock);
		f->f_left--;
		pthread_mutex_unlock(&f->f_lock);
		fan_connect(s, j);
	}
	free(b.mb_p);
	pthread_mutex_lock(&f->f_lock);
	f->f_left--;
	pthread_mutex_unlock(&f->f_lock);
	if (started == 0) {
		fan_free(f); /* no end can come */
		return;
	}
	so->so_fan = f;
}

bool srv_idx_fan_park(struct srv_op *so, uint64_t seq)
{
	struct srv_fan *f = so->so_fan;
	bool parked = false;

	if (f == NULL)
		return false;
	pthread_mutex_lock(&f->f_lock);
	if (f->f_left > 0) {
		f->f_so = so;
		f->f_seq = seq;
		parked = true;
	} else {
		so->so_fanned = f->f_got;
	}
	pthread_mutex_unlock(&f->f_lock);
	return parked;
}

void srv_idx_fan_detach(struct srv_op *so)
{
	struct srv_fan *f = so->so_fan;
	bool last;

	if (f == NULL)
		return;
	so->so_fan = NULL;
	pthread_mutex_lock(&f->f_lock);
	f->f_so = NULL;
	f->f_detached = true;
	last = f->f_left == 0;
	pthread_mutex_unlock(&f->f_lock);
	if (last)
		fan_free(f);
}
