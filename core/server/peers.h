/*
 * peers.h — connections from one process to the servers of a cluster,
 * shared by the Clovis cluster client (clovis/cli_cluster.c) and strata-server
 * (index catch-up pulls from peer replicas).
 *
 * A connection is made on first use (rpc_connect() with the cluster's
 * connect timeout) and kept.  A call that fails in the transport (timeout,
 * refused, reset, shut down, authentication) closes the connection and
 * marks the server down (PEERS_RETRY_MS: 1 s; in a client, after a second
 * failure in a row, twice what the failed contact took, up to 10 s): calls
 * to it fail at once with
 * -EHOSTDOWN until then, after which the next call connects afresh.
 * -EBUSY (the server's queue is full) is retried a bounded number of times
 * with a short pause.
 *
 * Restarted servers: each connect learns the incarnation of the server run
 * it reached (rpc_peer_incarnation()) and notes it, per server address, in
 * a book shared by every table of the process.  A connection made to an
 * earlier incarnation than the book's reaches a run that is gone (the new
 * one drops its requests: they would end at their deadline), so the next
 * call replaces it with a fresh connection before it is sent, and a call
 * that failed on it meanwhile does not mark the server down.  Either
 * counts as the server having been away (peers_gen(), peers_was_down()).
 * So once any table of the process (e.g. rdev's probes) has reconnected to
 * a restarted server, the others follow without a timeout.  A server that
 * does not tell its incarnation (older builds) is handled as before.
 */
#ifndef STRATA_CORE_SERVER_PEERS_H
#define STRATA_CORE_SERVER_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/clu_conf.h"
#include "core/rpc/rpc.h"
#include "core/server/srv_limits.h"

/* Retry times, the incarnation book's size and -EBUSY retries
 * (PEERS_*): srv_limits.h. */

struct peers;

/**
 * Make the table for cluster c (which must outlive it).  ep: an endpoint to
 * call from (a server's own), or NULL to open a client endpoint with the
 * cluster's provider and secret, bound to the local address the kernel
 * routes to the first server from (127.0.0.1 for a loopback cluster).
 * Returns 0 and *out, or a negative code.
 */
int peers_create(struct peers **out, const struct clu_conf *c,
		 struct rpc_ep *ep);

/**
 * The table belongs to a server process (its heartbeats, remote devices):
 * a server found down is tried again after PEERS_RETRY_MS whatever the
 * failed contact took, as in the table on the server's own endpoint, not
 * the client's longer wait.  Call before the table is used.
 */
void peers_set_server(struct peers *p);
/**
 * A stopping process's calls: every call of the table's endpoint (all of
 * them, when the endpoint is the caller's) waiting for its reply fails now
 * with -ESHUTDOWN, and every later one at once (rpc_ep_calls_stop()); no
 * server is marked down for these failures.  The table stays usable for
 * peers_destroy().  NULL is ignored.
 */
void peers_calls_stop(struct peers *p);
/** Close every connection (and the endpoint if peers_create() opened it).
 *  With an endpoint of the caller's, every peers_call_async() must have
 *  ended first (its done() refers to the table). */
void peers_destroy(struct peers *p);

/** Is server i not known to be down (nor gone: peers_set_gone())? */
bool peers_live(struct peers *p, uint32_t i);

/**
 * Servers the cluster map has out of service (a client's table:
 * clovis/cli_cluster.c, clovis/README.md "Clients and a dead server").
 * The transport does not report a server that died: a call on a
 * connection to it waits for its deadline (the cluster's call timeout).
 * peers_set_gone(): server i is gone (why, e.g. "FAILED in the cluster
 * map (epoch 7)", names it in every message): every call waiting on it
 * fails now with -EHOSTDOWN, as if its deadline had passed
 * (rpc_peer_fail(): its bulk buffers are released before it returns;
 * the server may have run it, as after a timeout), its connection is
 * dropped, and no call or connect is tried until peers_clear_gone()
 * (each fails at once with -EHOSTDOWN and why; peers_live() false,
 * peers_down() true).  Returns true if it was not gone before.  May wait
 * for a connect to it in progress (the connect timeout).  Not from the
 * RPC progress thread.
 * peers_clear_gone(): contacted again (the next call connects at once);
 * true if it was gone.  peers_gone(): is it?
 */
bool peers_set_gone(struct peers *p, uint32_t i, const char *why);
bool peers_clear_gone(struct peers *p, uint32_t i);
bool peers_gone(struct peers *p, uint32_t i);

/**
 * For how long calls have been waiting on server i without any answer
 * from it (ms): 0 when no call (blocking or asynchronous) waits on it,
 * else the time since the latest answer or since calls began waiting,
 * whichever is later.  A caller that sees it grow past what the server
 * takes to answer can ask the cluster map whether the server is still in
 * service (clovis/cli_cluster.c, the map watcher).  Lock-free.
 */
uint64_t peers_silent_ms(struct peers *p, uint32_t i);

/** Is rc a transport failure (the server is unreachable), not an answer? */
bool peers_rc_transport(int rc);

/**
 * Call server i (see rpc_call()).  Returns the call's status: the server's
 * answer (0 or negative, message in res->rr_msg and err_msg()) or a
 * transport failure (-ETIMEDOUT, -EHOSTDOWN, ...).  res->rr_answered
 * tells them apart: an answer means the server is up, even when its code
 * is one of transport (its own call to another server failed), and
 * neither marks it down nor closes the connection.  res->rr_body is the
 * caller's to free() whatever the status.
 */
int peers_call(struct peers *p, uint32_t i, uint32_t op, const void *body,
	       size_t len, const struct rpc_bulk *bulk, struct rpc_result *res);

/** peers_call() with a call timeout of call_ms instead of the cluster's. */
int peers_call_ms(struct peers *p, uint32_t i, uint32_t op, const void *body,
		  size_t len, const struct rpc_bulk *bulk, uint32_t call_ms,
		  struct rpc_result *res);

/** The end of an asynchronous call (peers_call_async). */
struct peers_end {
	int pe_rc;              /**< as peers_call() returns it */
	bool pe_answered;       /**< as rpc_result.rr_answered */
	/** Not answered, in the transport: the server is unreachable.  Its
	 *  table records that only in peers_call_failed(), which the caller
	 *  must call from a thread that is not the RPC progress thread
	 *  (it may close the connection) before it reports the failure. */
	bool pe_unreachable;
	void *pe_body;          /**< the reply body: the caller free()s it */
	size_t pe_len;
	char pe_msg[320];       /**< when pe_rc < 0: "server NAME: reason" */
	uint32_t pe_srv;        /* for peers_call_failed() */
	uint64_t pe_serial;
	uint64_t pe_sent;
};

typedef void (*peers_done_fn)(void *arg, struct peers_end *e);

/**
 * Start a call to server i on its current connection without waiting:
 * no connect, no wait for an in-flight slot nor for the slot's lock (a
 * connect holds it through its handshake), no retry of a busy server
 * (-EBUSY comes back as the answer it is).  0: sent; done() runs once,
 * on the RPC progress thread (or the thread closing the endpoint), and
 * must not block; the table has marked the server up if it answered (if
 * its lock was free then).  The call holds a reference to the connection
 * until its end, so another call's failure, which drops the connection
 * from the table, does not end it; the last reference dropped there
 * leaves the connection to be closed by the next blocking call or by
 * peers_destroy().  A call that ends pe_unreachable stops further starts
 * on its connection until peers_call_failed().  -EAGAIN (nothing sent,
 * done() never runs, err_msg() says why): no current usable connection
 * (none yet, marked down, restarted, being connected, or found
 * unreachable by such a call), no free slot, or no memory; the caller
 * then makes the call the blocking way (peers_call()), which connects
 * and waits.  body is copied before the return; bulk's buffers must stay
 * until done().  The timeout is the cluster's call timeout.
 */
int peers_call_async(struct peers *p, uint32_t i, uint32_t op,
		     const void *body, size_t len,
		     const struct rpc_bulk *bulk, peers_done_fn done,
		     void *arg);
/** peers_call_async() with a call timeout of call_ms instead of the
 *  cluster's. */
int peers_call_async_ms(struct peers *p, uint32_t i, uint32_t op,
			const void *body, size_t len,
			const struct rpc_bulk *bulk, uint32_t call_ms,
			peers_done_fn done, void *arg);

/** Record the failure of e (pe_unreachable): the server is marked down
 *  and the connection the call went on forgotten, as peers_call() does
 *  for its own failures.  Nothing for other ends.  Not from the RPC
 *  progress thread. */
void peers_call_failed(struct peers *p, const struct peers_end *e);

/**
 * Cluster map epochs (docs/ha.md, "Epochs and fencing").  A server whose
 * map epoch is newer than a request's refuses it with -EREMCHG and answers
 * with its own (rpc_result.rr_epoch).  A client process follows: it takes
 * the newer epoch (rpc_epoch_set()) and peers_call() sends the request
 * once more under it; an asynchronous call ends with the refusal, its
 * caller may send it again.  A server process takes its epoch from the
 * map only, never from a peer's answer: its HA agent (ha/srv_ha.c) sets
 * a catch-up function, which peers_epoch_adopt() calls instead: it makes
 * the agent load the map now and, when wait is true, waits (bounded)
 * until the process's epoch reached epoch, true if it did (the call is
 * then sent again).  wait is false on the RPC progress thread (an
 * asynchronous call's end), which must not block.
 * peers_epoch_adopt(): true if the process now acts under epoch (or a
 * newer one) and was not before.
 */
typedef bool (*peers_epoch_fn)(uint64_t epoch, bool wait);
void peers_epoch_catchup(peers_epoch_fn fn);
bool peers_epoch_adopt(uint64_t epoch, bool wait);

/**
 * How many times server i went from answering to failing or back, as seen
 * by this table (monotonic).  A caller that remembers it knows whether the
 * server was unreachable at some moment since (index replicas, srv_idx.c).
 */
uint64_t peers_gen(struct peers *p, uint32_t i);

/**
 * When (peers_clock_ms()) the latest call to server i that got an answer
 * was sent, 0 if none: the server was reachable at some moment after it.
 * A call sent before a link cut and answered after it (TCP retransmits)
 * shows an old time, so a gap here means "not heard from since".
 */
uint64_t peers_ok_ms(struct peers *p, uint32_t i);

/** The monotonic clock of peers_ok_ms(), in ms. */
uint64_t peers_clock_ms(void);

/** Did the last contact with server i fail (it is not known to be up)? */
bool peers_down(struct peers *p, uint32_t i);

/** Did a contact with server i fail since peers_clear_was_down()? */
bool peers_was_down(struct peers *p, uint32_t i);
void peers_clear_was_down(struct peers *p, uint32_t i);

/**
 * The latest incarnation of server i (rpc_ep_incarnation() of its
 * endpoint) that a connect of any table in this process learned, 0 if none.
 * A caller that reads it before a call and finds it changed after the call
 * failed in the transport knows that the server restarted meanwhile (and
 * is up): an idempotent call may be sent once more (core/server/cli_rdev.c).
 */
uint64_t peers_incarnation(struct peers *p, uint32_t i);

/** Count one request to server i that its caller sends again (a pause
 *  after -EBUSY, or a reroute away from it): strata_rpc_retries_total of
 *  its connection, when it has one and no connect holds its lock. */
void peers_retry_note(struct peers *p, uint32_t i);

/** Let the next call to server i connect even if it was found down
 *  recently (PEERS_RETRY_MS). */
void peers_retry_now(struct peers *p, uint32_t i);

/** The endpoint the table calls from. */
struct rpc_ep *peers_ep(struct peers *p);

#endif
