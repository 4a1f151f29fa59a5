/*
 * peers_ut.c — suite "peers" (run with -s server): the peer tables
 * (core/server/peers.h) against a server endpoint that is closed and
 * opened again on the same address, as a restarted strata-server is.
 *
 * restart: two tables A and B hold connections to the first run.  A
 * learns the second run by connecting afresh (as rdev's probes do after
 * a failed probe); B's next call must then go out on a fresh connection
 * at once (well under its call timeout) and succeed, without marking the
 * server down, while peers_gen() and peers_was_down() show that it was
 * away.  Before, B's call went on its old connection, which the new run
 * drops: it waited for its timeout and marked the server down.
 *
 * retry: a server whose calls run into their timeout twice in a row is
 * not tried again for twice what the failed call took in a client's
 * table, but only for PEERS_RETRY_MS in a server's (peers_set_server():
 * heartbeats, remote devices), which must see a peer back soon.  Before,
 * a server's heartbeat table created with its own endpoint waited like a
 * client's, so a peer back from a freeze or a cut link stayed down there
 * (and the behind marks held for it undelivered) for up to 10 s.
 * First, a server's answer of -ETIMEDOUT (its own call to another server
 * timed out) is an answer: rr_answered, the server is not marked down.
 *
 * async: peers_call_async() starts only on a current connection (-EAGAIN
 * before the first connect and while the server is marked down), ends
 * with the server's answer (an answered -ETIMEDOUT is no failure of the
 * server), and an unanswered call ends pe_unreachable without marking
 * anything until peers_call_failed() records it, as peers_call() would
 * (no further start on that connection meanwhile).
 *
 * async_drop: an asynchronous call outlives its connection's removal from
 * the table by another call's failure, and gets its answer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/server/peers.h"
#include "tests/ut.h"

#define PU_SECRET "strata-peers-unit-test-secret-0123"

static uint64_t pu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct rpc_conf pu_rpc_conf(void)
{
	struct rpc_conf c = {0};

	c.rc_provider = "tcp;ofi_rxm";
	c.rc_secret = PU_SECRET;
	c.rc_secret_len = strlen(PU_SECRET);
	return c;
}

/* A server endpoint on 127.0.0.1 at *port (0: a free one, chosen), at
 * most 50 tries 100 ms apart (a closed endpoint's port may linger). */
static struct rpc_ep *pu_server(uint16_t *port)
{
	struct rpc_conf c = pu_rpc_conf();
	struct rpc_ep *ep = NULL;
	bool pick = *port == 0;
	int rc = -EADDRINUSE;

	if (pick)
		*port = (uint16_t)(54000 + (getpid() * 7919u) % 3000);
	for (int i = 0; i < 50 && rc != 0; i++) {
		rc = rpc_ep_open(&ep, &c, "127.0.0.1", *port);
		if (rc != 0 && pick)
			(*port)++;
		else if (rc != 0)
			usleep(100000);
	}
	if (rc != 0)
		fprintf(stderr, "peers: server open: %s\n", err_msg());
	return ep;
}

static void pu_cluster(struct clu_conf *cc, struct clu_server *sv,
		       uint16_t port)
{
	memset(cc, 0, sizeof *cc);
	memset(sv, 0, sizeof *sv);
	snprintf(cc->cc_name, sizeof cc->cc_name, "pu");
	memcpy(cc->cc_secret, PU_SECRET, strlen(PU_SECRET));
	cc->cc_secret_len = strlen(PU_SECRET);
	snprintf(cc->cc_provider, sizeof cc->cc_provider, "tcp;ofi_rxm");
	cc->cc_replicas = 1;
	cc->cc_connect_ms = 3000;
	cc->cc_call_ms = 3000;
	cc->cc_nr_servers = 1;
	cc->cc_servers = sv;
	snprintf(sv->cs_name, sizeof sv->cs_name, "p0");
	snprintf(sv->cs_addr, sizeof sv->cs_addr, "127.0.0.1");
	sv->cs_port = port;
}

/* Call op on server 0 of p with a timeout of ms; *answered (if not
 * NULL): the server's answer came (rr_answered). */
static int pu_op(struct peers *p, uint32_t op, uint32_t ms, bool *answered)
{
	struct rpc_result res;
	int rc = peers_call_ms(p, 0, op, NULL, 0, NULL, ms, &res);

	if (answered != NULL)
		*answered = res.rr_answered;
	free(res.rr_body);
	return rc;
}

static int pu_noop(struct peers *p, uint32_t ms)
{
	return pu_op(p, RPC_OP_NOOP, ms, NULL);
}

static void t_restart(void)
{
	struct clu_conf cc;
	struct clu_server sv;
	struct peers *a = NULL, *b = NULL;
	uint16_t port = 0;
	struct rpc_ep *srv = pu_server(&port);
	uint64_t inc1, inc2, gen, t0;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(srv);
	inc1 = rpc_ep_incarnation(srv);
	CU_ASSERT(inc1 != 0);
	pu_cluster(&cc, &sv, port);
	CU_ASSERT_EQUAL_FATAL(peers_create(&a, &cc, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(peers_create(&b, &cc, NULL), 0);
	CU_ASSERT_EQUAL(rpc_ep_incarnation(peers_ep(a)), 0);
	CU_ASSERT_EQUAL(pu_noop(a, 2000), 0);
	CU_ASSERT_EQUAL(pu_noop(b, 2000), 0);
	CU_ASSERT_EQUAL(peers_incarnation(a, 0), inc1);
	CU_ASSERT_EQUAL(peers_incarnation(b, 0), inc1);

	/* The server's second run on the same address. */
	rpc_ep_close(srv);
	srv = pu_server(&port);
	CU_ASSERT_PTR_NOT_NULL_FATAL(srv);
	inc2 = rpc_ep_incarnation(srv);
	CU_ASSERT(inc2 != 0 && inc2 != inc1);

	/* A's old connection fails (its requests are dropped) and marks
	 * the server down; its next call connects and learns the new run. */
	rc = pu_noop(a, 300);
	CU_ASSERT(peers_rc_transport(rc));
	CU_ASSERT(peers_down(a, 0));
	peers_retry_now(a, 0);
	CU_ASSERT_EQUAL(pu_noop(a, 2000), 0);
	CU_ASSERT_EQUAL(peers_incarnation(a, 0), inc2);
	CU_ASSERT_FALSE(peers_down(a, 0));

	/* B follows at once: a fresh connection before its call is sent. */
	gen = peers_gen(b, 0);
	peers_clear_was_down(b, 0);
	t0 = pu_ms();
	CU_ASSERT_EQUAL(pu_noop(b, 2000), 0);
	CU_ASSERT(pu_ms() - t0 < 1000);
	CU_ASSERT_FALSE(peers_down(b, 0));
	CU_ASSERT_EQUAL(peers_gen(b, 0), gen + 2);
	CU_ASSERT(peers_was_down(b, 0));
	CU_ASSERT_EQUAL(pu_noop(b, 2000), 0);
	CU_ASSERT_EQUAL(peers_gen(b, 0), gen + 2);

	peers_destroy(a);
	peers_destroy(b);
	rpc_ep_close(srv);
}

#define PU_OP_SLOW (RPC_OP_USER_MIN + 7)
#define PU_OP_TIMEDOUT (RPC_OP_USER_MIN + 8)

/* Answers -ETIMEDOUT at once, as a server whose own call timed out. */
static void pu_timedout(struct rpc_sreq *req, void *arg)
{
	rpc_sreq_reply(req, -ETIMEDOUT, NULL, 0, "its call timed out");
}
#define PU_SLOW_MS 1300u

/* Answers after PU_SLOW_MS: every call with a shorter timeout fails. */
static void pu_slow(struct rpc_sreq *req, void *arg)
{
	usleep(PU_SLOW_MS * 1000);
	rpc_sreq_reply(req, 0, NULL, 0, NULL);
}

/* pu_server() answering PU_OP_SLOW and PU_OP_TIMEDOUT. */
static struct rpc_ep *pu_server_ops(uint16_t *port)
{
	struct rpc_ep *srv = pu_server(port);

	CU_ASSERT_PTR_NOT_NULL_FATAL(srv);
	CU_ASSERT_EQUAL_FATAL(rpc_handler_set(srv, PU_OP_SLOW, pu_slow, NULL),
			      0);
	CU_ASSERT_EQUAL_FATAL(rpc_handler_set(srv, PU_OP_TIMEDOUT, pu_timedout,
					      NULL), 0);
	return srv;
}

/* Two calls of call_ms to the slow op on p, in a row: the wait (ms) the
 * second failure left, read from the -EHOSTDOWN of the call after it. */
static uint64_t pu_wait_after_two(struct peers *p, uint32_t call_ms)
{
	unsigned long long left = 0;
	const char *m;

	for (int i = 0; i < 2; i++) {
		peers_retry_now(p, 0);
		CU_ASSERT(peers_rc_transport(pu_op(p, PU_OP_SLOW, call_ms,
						   NULL)));
	}
	CU_ASSERT_EQUAL(pu_op(p, PU_OP_SLOW, call_ms, NULL), -EHOSTDOWN);
	m = strstr(err_msg(), "tried again in ");
	CU_ASSERT_PTR_NOT_NULL(m);
	if (m != NULL)
		sscanf(m, "tried again in %llu ms", &left);
	return left;
}

static void t_retry(void)
{
	struct clu_conf cc;
	struct clu_server sv;
	struct peers *cli = NULL, *srvt = NULL;
	uint16_t port = 0;
	struct rpc_ep *srv = pu_server_ops(&port);
	uint64_t w_cli, w_srv, gen;
	bool answered;

	pu_cluster(&cc, &sv, port);
	CU_ASSERT_EQUAL_FATAL(peers_create(&cli, &cc, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(peers_create(&srvt, &cc, NULL), 0);
	peers_set_server(srvt);
	/* each failed call takes its 800 ms timeout: a client waits
	 * 2 x 800 ms, a server's table PEERS_RETRY_MS */
	/* an answered -ETIMEDOUT is the server's answer: it is up */
	CU_ASSERT_EQUAL(pu_noop(cli, 2000), 0);
	gen = peers_gen(cli, 0);
	CU_ASSERT_EQUAL(pu_op(cli, PU_OP_TIMEDOUT, 2000, &answered), -ETIMEDOUT);
	CU_ASSERT(answered);
	CU_ASSERT_FALSE(peers_down(cli, 0));
	CU_ASSERT_EQUAL(peers_gen(cli, 0), gen);
	CU_ASSERT_EQUAL(pu_noop(cli, 2000), 0);
	w_cli = pu_wait_after_two(cli, 800);
	w_srv = pu_wait_after_two(srvt, 800);
	if (w_cli <= PEERS_RETRY_MS || w_srv > PEERS_RETRY_MS)
		fprintf(stderr, "peers: retry waits: client %llu ms, server "
			"table %llu ms\n", (unsigned long long)w_cli,
			(unsigned long long)w_srv);
	CU_ASSERT(w_cli > PEERS_RETRY_MS && w_cli <= PEERS_RETRY_MAX_MS);
	CU_ASSERT(w_srv > 0 && w_srv <= PEERS_RETRY_MS);
	peers_destroy(cli);
	peers_destroy(srvt);
	usleep(PU_SLOW_MS * 1000); /* the handlers answer before the close */
	rpc_ep_close(srv);
}

static struct peers_end pu_end;
static int pu_ended; /* atomic */

static void pu_async_done(void *arg, struct peers_end *e)
{
	free(e->pe_body);
	pu_end = *e;
	__atomic_store_n(&pu_ended, 1, __ATOMIC_RELEASE);
}

/* Start op on server 0 of p; 0 and the end in pu_end, or the start's
 * error. */
static int pu_async(struct peers *p, uint32_t op)
{
	int rc;

	__atomic_store_n(&pu_ended, 0, __ATOMIC_RELEASE);
	rc = peers_call_async(p, 0, op, NULL, 0, NULL, pu_async_done, NULL);
	if (rc != 0)
		return rc;
	for (int i = 0; i < 500 && !__atomic_load_n(&pu_ended,
						     __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	CU_ASSERT_FATAL(__atomic_load_n(&pu_ended, __ATOMIC_ACQUIRE));
	return 0;
}

/* A server (pu_server_ops) and a table of it whose calls time out after
 * call_ms; cc and sv must outlive the table. */
static struct rpc_ep *pu_table(struct clu_conf *cc, struct clu_server *sv,
			       uint32_t call_ms, struct peers **p)
{
	uint16_t port = 0;
	struct rpc_ep *srv = pu_server_ops(&port);

	pu_cluster(cc, sv, port);
	cc->cc_call_ms = call_ms;
	*p = NULL;
	CU_ASSERT_EQUAL_FATAL(peers_create(p, cc, NULL), 0);
	return srv;
}

static void t_async(void)
{
	struct clu_conf cc;
	struct clu_server sv;
	struct peers *p;
	struct rpc_ep *srv = pu_table(&cc, &sv, 800, &p);

	/* no connection yet: not started (the caller goes the blocking way) */
	CU_ASSERT_EQUAL(pu_async(p, RPC_OP_NOOP), -EAGAIN);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "no current connection"));
	CU_ASSERT_EQUAL(pu_noop(p, 2000), 0);
	CU_ASSERT_EQUAL(pu_async(p, RPC_OP_NOOP), 0);
	CU_ASSERT_EQUAL(pu_end.pe_rc, 0);
	CU_ASSERT(pu_end.pe_answered);
	CU_ASSERT_FALSE(pu_end.pe_unreachable);
	/* the server's -ETIMEDOUT: an answer, named, nothing marked */
	CU_ASSERT_EQUAL(pu_async(p, PU_OP_TIMEDOUT), 0);
	CU_ASSERT_EQUAL(pu_end.pe_rc, -ETIMEDOUT);
	CU_ASSERT(pu_end.pe_answered);
	CU_ASSERT_FALSE(pu_end.pe_unreachable);
	CU_ASSERT_PTR_NOT_NULL(strstr(pu_end.pe_msg, "server p0: its call "
				      "timed out"));
	CU_ASSERT_FALSE(peers_down(p, 0));
	/* no answer within the call timeout: unreachable, recorded only by
	 * peers_call_failed() */
	CU_ASSERT_EQUAL(pu_async(p, PU_OP_SLOW), 0);
	CU_ASSERT_EQUAL(pu_end.pe_rc, -ETIMEDOUT);
	CU_ASSERT_FALSE(pu_end.pe_answered);
	CU_ASSERT(pu_end.pe_unreachable);
	CU_ASSERT_FALSE(peers_down(p, 0));
	/* no further start on that connection meanwhile */
	CU_ASSERT_EQUAL(pu_async(p, RPC_OP_NOOP), -EAGAIN);
	peers_call_failed(p, &pu_end);
	CU_ASSERT(peers_down(p, 0));
	CU_ASSERT_EQUAL(pu_async(p, RPC_OP_NOOP), -EAGAIN);
	/* back: the blocking call connects again, then it starts */
	usleep(PU_SLOW_MS * 1000);
	peers_retry_now(p, 0);
	CU_ASSERT_EQUAL(pu_noop(p, 2000), 0);
	CU_ASSERT_EQUAL(pu_async(p, RPC_OP_NOOP), 0);
	CU_ASSERT_EQUAL(pu_end.pe_rc, 0);
	peers_destroy(p);
	usleep(PU_SLOW_MS * 1000); /* the handlers answer before the close */
	rpc_ep_close(srv);
}

/* A blocking call's failure drops the connection from the table while an
 * asynchronous call is in flight on it: that call keeps its reference and
 * gets its answer (it used to end -ESHUTDOWN when the connection closed
 * under it); the connection is closed after its end, not on the progress
 * thread (the grave, emptied by peers_destroy()). */
static void t_async_drop(void)
{
	struct clu_conf cc;
	struct clu_server sv;
	struct peers *p;
	struct rpc_ep *srv = pu_table(&cc, &sv, 3000, &p);

	CU_ASSERT_EQUAL(pu_noop(p, 2000), 0);
	__atomic_store_n(&pu_ended, 0, __ATOMIC_RELEASE);
	CU_ASSERT_EQUAL_FATAL(peers_call_async(p, 0, PU_OP_SLOW, NULL, 0, NULL,
					       pu_async_done, NULL), 0);
	CU_ASSERT(peers_rc_transport(pu_op(p, PU_OP_SLOW, 300, NULL)));
	CU_ASSERT(peers_down(p, 0));
	for (int i = 0; i < 300 && !__atomic_load_n(&pu_ended,
						     __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	CU_ASSERT_FATAL(__atomic_load_n(&pu_ended, __ATOMIC_ACQUIRE));
	CU_ASSERT_EQUAL(pu_end.pe_rc, 0);
	CU_ASSERT(pu_end.pe_answered);
	peers_destroy(p);
	usleep(PU_SLOW_MS * 1000);
	rpc_ep_close(srv);
}

/* gone: a call waiting on a server that never answers in time (a dead
 * one's connection, whose loss the transport does not report, looks the
 * same) shows in peers_silent_ms(); peers_set_gone() ends it now with
 * -EHOSTDOWN naming why, not at its 60 s deadline, and refuses every call
 * until peers_clear_gone(), after which the server is called again.
 * Before peers_set_gone(), the call waited for its deadline. */
#define PU_OP_HOLD (RPC_OP_USER_MIN + 9)
#define PU_HOLD_MS 2500u

static void pu_hold(struct rpc_sreq *req, void *arg)
{
	usleep(PU_HOLD_MS * 1000);
	rpc_sreq_reply(req, 0, NULL, 0, NULL);
}

struct pu_waiter {
	struct peers *pw_p;
	int pw_rc;
	uint64_t pw_end;
	char pw_msg[256];
};

static void *pu_wait_main(void *arg)
{
	struct pu_waiter *w = arg;

	w->pw_rc = pu_op(w->pw_p, PU_OP_HOLD, 60000, NULL);
	w->pw_end = pu_ms();
	snprintf(w->pw_msg, sizeof w->pw_msg, "%s", err_msg());
	return NULL;
}

static void t_gone(void)
{
	struct clu_conf cc;
	struct clu_server sv;
	struct peers *p = NULL;
	uint16_t port = 0;
	struct rpc_ep *srv = pu_server(&port);
	struct pu_waiter w = {0};
	pthread_t thr;
	uint64_t t0;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(srv);
	CU_ASSERT_EQUAL_FATAL(rpc_handler_set(srv, PU_OP_HOLD, pu_hold, NULL),
			      0);
	pu_cluster(&cc, &sv, port);
	CU_ASSERT_EQUAL_FATAL(peers_create(&p, &cc, NULL), 0);
	CU_ASSERT_EQUAL(pu_noop(p, 2000), 0);
	CU_ASSERT_EQUAL(peers_silent_ms(p, 0), 0);
	w.pw_p = p;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, pu_wait_main, &w), 0);
	usleep(500 * 1000);
	CU_ASSERT(peers_silent_ms(p, 0) >= 300);
	CU_ASSERT_FALSE(peers_gone(p, 0));
	t0 = pu_ms();
	CU_ASSERT(peers_set_gone(p, 0, "FAILED in the cluster map (epoch 9)"));
	pthread_join(thr, NULL);
	/* ended by the mark, long before the handler answers */
	CU_ASSERT_EQUAL(w.pw_rc, -EHOSTDOWN);
	CU_ASSERT(w.pw_end - t0 < PU_HOLD_MS / 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(w.pw_msg, "FAILED in the cluster map"));
	CU_ASSERT_EQUAL(peers_silent_ms(p, 0), 0);
	CU_ASSERT(peers_gone(p, 0));
	CU_ASSERT_FALSE(peers_live(p, 0));
	CU_ASSERT(peers_down(p, 0));
	CU_ASSERT_FALSE(peers_set_gone(p, 0, "FAILED in the cluster map"));
	/* refused at once, naming why; nothing connects */
	peers_retry_now(p, 0);
	t0 = pu_ms();
	rc = pu_noop(p, 2000);
	CU_ASSERT_EQUAL(rc, -EHOSTDOWN);
	CU_ASSERT(pu_ms() - t0 < 500);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "FAILED in the cluster map"));
	/* back: called again */
	CU_ASSERT(peers_clear_gone(p, 0));
	CU_ASSERT_FALSE(peers_clear_gone(p, 0));
	CU_ASSERT_EQUAL(pu_noop(p, 2000), 0);
	CU_ASSERT_FALSE(peers_down(p, 0));
	peers_destroy(p);
	usleep(PU_HOLD_MS * 1000); /* the held request replied */
	rpc_ep_close(srv);
}

int peers_ut_add(void)
{
	CU_pSuite s = CU_add_suite("peers", NULL, NULL);

	if (s == NULL || CU_add_test(s, "restart", t_restart) == NULL ||
	    CU_add_test(s, "retry", t_retry) == NULL ||
	    CU_add_test(s, "async", t_async) == NULL ||
	    CU_add_test(s, "async_drop", t_async_drop) == NULL ||
	    CU_add_test(s, "gone", t_gone) == NULL)
		return -1;
	return 0;
}
