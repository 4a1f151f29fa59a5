/*
 * rpc.h — remote procedure calls over libfabric, messages in protobuf-c.
 *
 * One endpoint (struct rpc_ep) per process side: a server endpoint listens
 * on an address and port and runs registered handlers; a client endpoint
 * (port 0) connects to servers and calls them.  A process may be both.
 *
 *   endpoint     FI_EP_RDM, provider from rpc_conf.rc_provider:
 *                "tcp;ofi_rxm" (default), "shm" (processes of one host),
 *                "verbs" (RDMA hardware).  Progress by a progress thread
 *                that blocks on the completion queue's wait object
 *                (FI_WAIT_UNSPEC, fi_cq_sread), or spins when rc_polling.
 *   connect      rpc_connect(): the client sends HELLO with its endpoint
 *                name and a nonce; the server answers with its own nonce and
 *                HMAC-SHA256(secret, client nonce || server nonce); the
 *                client checks it and proves itself the same way.  A peer
 *                that fails the proof is refused (-EACCES at the client,
 *                counted at the server); nothing but HELLO/AUTH is served to
 *                an unauthenticated address.
 *   call         request: an envelope (core/rpc/rpc.proto: opcode, xid,
 *                deadline, body, bulk descriptor) + the service's protobuf
 *                body; reply: envelope with the same xid, a status and a
 *                body.  Replies are matched to calls by xid; a call whose
 *                deadline passes completes with -ETIMEDOUT (a late reply is
 *                dropped and counted).
 *   bulk         data up to rc_inline_max bytes travels inline in the
 *                envelope; larger data is registered at the client
 *                (fi_mr_reg) and moved by RMA: the server pulls it
 *                (fi_read) for writes and pushes it (fi_write) for reads.
 *   back-pressure at most rc_max_inflight calls per peer at the client
 *                (a further call waits for a slot until its deadline); at
 *                most rc_queue_depth requests queued at the server (a
 *                further request is answered -EBUSY at once, never queued
 *                without bound).
 *   safety       every received message is bounds-checked and decoded with
 *                protobuf-c before use; an oversize (> rc_max_msg) or
 *                malformed message is dropped and counted, never trusted.
 *
 * Every function returns 0 or a negative errno and sets err_msg() with a
 * message naming the peer, opcode or field; none aborts the process.
 */
#ifndef STRATA_CORE_RPC_H
#define STRATA_CORE_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/** Opcodes below this are the RPC layer's own (HELLO, AUTH, NOOP ...). */
#define RPC_OP_USER_MIN 64u
/** A call that does nothing: the server answers at once (round trips). */
#define RPC_OP_NOOP 1u

/** Endpoint configuration; zero fields take the documented defaults. */
struct rpc_conf {
	const char *rc_provider;    /**< NULL: "tcp;ofi_rxm" */
	const void *rc_secret;      /**< cluster secret (required) */
	size_t rc_secret_len;       /**< >= 16 bytes */
	uint32_t rc_max_inflight;   /**< per peer (client); 0: 64 */
	uint32_t rc_queue_depth;    /**< server request queue; 0: 256 */
	uint32_t rc_nr_handlers;    /**< server handler threads; 0: 4 */
	uint32_t rc_inline_max;     /**< bulk above this by RMA; 0: measured
				     *  default (see core/rpc/README.md) */
	uint32_t rc_max_msg;        /**< largest message; 0: 64 KiB + inline */
	bool rc_polling;            /**< progress thread spins (latency) */
};

struct rpc_ep;
struct rpc_peer;
struct rpc_sreq;

/** Counters of an endpoint (rpc_ep_stats()). */
struct rpc_stats {
	uint64_t rs_calls;          /**< calls made (client) */
	uint64_t rs_timeouts;       /**< calls that hit their deadline */
	uint64_t rs_requests;       /**< requests served (server) */
	uint64_t rs_busy;           /**< requests refused: queue full */
	uint64_t rs_bad_msgs;       /**< oversize or malformed, dropped */
	uint64_t rs_auth_failed;    /**< peers refused at connect */
	uint64_t rs_late_replies;   /**< replies after the deadline */
	uint64_t rs_rma_bytes;      /**< bytes moved by RMA (server) */
	uint64_t rs_unauth;         /**< requests from no authenticated
				     *  session, dropped (also in bad_msgs) */
	uint64_t rs_buf_pooled;     /**< rpc_buf_get() served from the pool */
	uint64_t rs_buf_fallback;   /**< rpc_buf_get() served by malloc: too
				     *  big, or every slot taken */
	uint64_t rs_buf_lost;       /**< buffers given back after an
				     *  abandoned transfer, never reused */
	/** Server's bulk transfers, [0] pulls (fi_read), [1] pushes
	 *  (fi_write): how many, the sum of their durations, and the time
	 *  during which at least one ran (sum / busy = mean in flight;
	 *  bytes / busy = the rate while transferring). */
	uint64_t rs_xfers[2];
	uint64_t rs_xfer_us[2];
	uint64_t rs_xfer_busy_us[2];
	uint64_t rs_xfer_bytes[2];
	uint64_t rs_wakeups;        /**< progress thread woke from its wait */
	uint64_t rs_replies_queued; /**< replies of handlers left to the
				     *  progress thread to post (others were
				     *  outstanding; core/rpc/README.md
				     *  "Who posts") */
};

/**
 * Open an endpoint.  addr/port: where to listen ("127.0.0.1", 21000) for a
 * server (handler threads start, handlers may be registered); port 0 for a
 * client-only endpoint, bound to addr at an ephemeral port — addr NULL
 * means 127.0.0.1, so give the local interface address to reach servers on
 * other hosts (with shm the client's name is generated and addr ignored).
 * c is copied (the secret too); zero fields take their defaults.
 * Returns 0 and *out, or a negative code: -EINVAL bad conf (secret under
 * 16 bytes, limits out of range), -EADDRINUSE, -ENODEV provider not
 * available here (e.g. "verbs" without RDMA hardware), -ENOMEM.
 */
int rpc_ep_open(struct rpc_ep **out, const struct rpc_conf *c,
		const char *addr, uint16_t port);

/**
 * Close: fail this endpoint's calls still waiting with -ESHUTDOWN (their
 * done() runs on the closing thread), close its peers, stop taking
 * requests (new ones are answered -ESHUTDOWN, queued ones not yet started
 * too), wait until every request a handler started is replied — a handler
 * that never replies blocks close —, let the replies leave (up to 1 s),
 * then release everything.  Peers of ep must not be used afterwards.
 * NULL is ignored.  Must not be called from a handler or done().
 */
void rpc_ep_close(struct rpc_ep *ep);

/**
 * Stop this endpoint's calls and keep the rest: every call waiting for its
 * reply fails now with -ESHUTDOWN (its done() runs on this thread), and
 * every call or connect started afterwards fails at once with -ESHUTDOWN
 * ("closing").  Requests to a server endpoint are still taken, handled and
 * replied.  For a server that stops and must not wait for its requests'
 * calls to other servers to time out (core/server/srv.c srv_stop()).  A
 * call racing with it may still wait for its own timeout; calling it again
 * fails that one too.  NULL is ignored.  Must not be called from done().
 */
void rpc_ep_calls_stop(struct rpc_ep *ep);

/** Copy the endpoint's counters into *out. */
void rpc_ep_stats(struct rpc_ep *ep, struct rpc_stats *out);

/**
 * A server endpoint's incarnation: a random number (never 0) drawn when it
 * was opened and told to every client at connect (RpcWelcome), so that a
 * client knows a server restarted at the same address from the run it
 * connected to (rpc_peer_incarnation()).  0 for a client endpoint.
 */
uint64_t rpc_ep_incarnation(const struct rpc_ep *ep);

/* ------------------------------------------------------------- server */

/**
 * A handler runs on one of the endpoint's rc_nr_handlers threads.  It must
 * call rpc_sreq_reply() exactly once, from any thread, now or later (for
 * example when an update becomes durable); the request stays valid until
 * then.  Accepted-and-unreplied requests count against rc_queue_depth.
 */
typedef void (*rpc_handler_fn)(struct rpc_sreq *req, void *arg);

/** Register fn for opcode (RPC_OP_USER_MIN .. 1023) on a server endpoint,
 *  before traffic starts.  -EINVAL outside that range or on a client-only
 *  endpoint.  A request for an opcode without a handler is answered
 *  -EOPNOTSUPP. */
int rpc_handler_set(struct rpc_ep *ep, uint32_t opcode, rpc_handler_fn fn,
		    void *arg);

/*
 * Cluster map epochs (docs/ha.md, "Epochs and fencing").  A process acts
 * under one map epoch, set with rpc_epoch_set() (0, the default: no map).
 * Every request and every reply it sends carries it; every reply it
 * receives tells the epoch of the server that answered (rr_epoch), and the
 * highest seen is kept (rpc_epoch_seen()).  The RPC layer gives epochs no
 * meaning: a server's gate (rpc_gate_set()) does.
 */
void rpc_epoch_set(uint64_t epoch);
uint64_t rpc_epoch_get(void);
/** The highest epoch any reply to this process carried (0: none). */
uint64_t rpc_epoch_seen(void);

/**
 * A server endpoint's gate: called on a handler thread before the handler
 * of each request (after the queue, before its deadline check runs out),
 * with the request's opcode and map epoch (0 when it carried none).  It
 * returns 0 to run the handler, or a negative errno with a message in msg
 * (size bytes) to answer the request with that instead.  NULL (default):
 * no gate.  Set before traffic starts, or at any time with a gate that
 * stays valid until the endpoint closes.
 */
typedef int (*rpc_gate_fn)(void *arg, uint32_t opcode, uint64_t epoch,
			   char *msg, size_t size);
int rpc_gate_set(struct rpc_ep *ep, rpc_gate_fn fn, void *arg);

uint32_t rpc_sreq_opcode(const struct rpc_sreq *req);
/** The map epoch the request carried (0: none). */
uint64_t rpc_sreq_epoch(const struct rpc_sreq *req);
/** The caller's ADDB trace id of the request's op (RpcEnvelope.trace),
 *  0 when the caller does not trace it. */
uint64_t rpc_sreq_trace(const struct rpc_sreq *req);
/** The request's body (protobuf bytes; valid until the reply). */
const void *rpc_sreq_body(const struct rpc_sreq *req, size_t *len);
/** Bytes of the caller's bulk buffer (0: none). */
size_t rpc_sreq_bulk_len(const struct rpc_sreq *req);
/** Copy len bytes at off of the caller's OUT bulk buffer into buf (RMA
 *  read, or from the inline copy); blocks until done.  -EINVAL past its end
 *  or when the call has no OUT bulk; -ETIMEDOUT when the transfer has not
 *  finished 2 s after the caller's deadline (also when another part of
 *  it failed: -ETIMEDOUT always means a part may still land in buf);
 *  -ECONNRESET/-EHOSTUNREACH when the transport fails.  buf must stay
 *  valid until rpc_sreq_reply(), and after -ETIMEDOUT must never be
 *  reused (rpc_buf_put() with lost). */
int rpc_sreq_bulk_pull(struct rpc_sreq *req, uint64_t off, void *buf,
		       size_t len);
/** Write len bytes of buf into the caller's IN bulk buffer at off (RMA
 *  write, or into the inline reply); same rules as rpc_sreq_bulk_pull(). */
int rpc_sreq_bulk_push(struct rpc_sreq *req, uint64_t off, const void *buf,
		       size_t len);

/* ------------------------------------------------------ bulk buffers */

/** Slots of an endpoint's bulk buffer pool, and their size: one
 *  page-aligned arena, registered for RMA once (on the first
 *  rpc_buf_get()), which rpc_sreq_bulk_pull/push use without registering
 *  memory per call, and whose addresses suit O_DIRECT devices. */
#define RPC_BUF_SLOTS 16u
#define RPC_BUF_SLOT (1u << 20)

/**
 * A page-aligned buffer of len bytes (1 .. any) for bulk data: a free
 * slot of ep's pool when len <= RPC_BUF_SLOT, else — bigger, every slot
 * taken, or the pool could not be registered — a fresh page-aligned
 * allocation (counted in rs_buf_fallback).  Never waits.  NULL with
 * -ENOMEM in err_msg() when out of memory, or -EINVAL for len 0.  Give it
 * back with rpc_buf_put() before rpc_ep_close().
 */
void *rpc_buf_get(struct rpc_ep *ep, size_t len);
/** Give back a buffer of rpc_buf_get() (NULL ignored).  lost: a transfer
 *  into or out of it was abandoned (-ETIMEDOUT) and may still land, so the
 *  memory is never reused (a slot stays taken until rpc_ep_close(), a
 *  fallback buffer is not freed); counted in rs_buf_lost. */
void rpc_buf_put(struct rpc_ep *ep, void *buf, bool lost);
/** True when buf lies in ep's registered pool (tests, stats). */
bool rpc_buf_pooled(struct rpc_ep *ep, const void *buf);

/* ------------------------------------------------- registered memory */

/**
 * Memory of the caller registered once with an endpoint for local RMA
 * access (a server's NVRAM device map: bulk data moves straight between
 * the caller's segments and that memory, docs/data-path.md "Zero-copy
 * units on NVRAM").  Opaque; owned by the caller, who keeps the memory
 * mapped until rpc_mem_dereg(), which must come before rpc_ep_close().
 */
struct rpc_mem;

/** Register [addr, addr + len) with ep (fi_mr_reg, local read and write
 *  access).  0, -EINVAL (NULL, len 0), -ENOMEM, or the provider's refusal
 *  with a message naming the endpoint and the length. */
int rpc_mem_reg(struct rpc_ep *ep, void *addr, size_t len,
		struct rpc_mem **out);
/** Close the registration (NULL ignored); the memory is the caller's. */
void rpc_mem_dereg(struct rpc_mem *m);
/** rpc_sreq_bulk_pull() into buf, which must lie inside m (-EINVAL with a
 *  message otherwise): no registration per transfer.  After -ETIMEDOUT a
 *  part may still land in buf, as for rpc_sreq_bulk_pull(). */
int rpc_sreq_bulk_pull_mem(struct rpc_sreq *req, uint64_t off,
			   struct rpc_mem *m, void *buf, size_t len);
/** rpc_sreq_bulk_push() from buf inside m (-EINVAL otherwise). */
int rpc_sreq_bulk_push_mem(struct rpc_sreq *req, uint64_t off,
			   struct rpc_mem *m, const void *buf, size_t len);

/** The caller's address as text ("127.0.0.1:40211"), for messages. */
const char *rpc_sreq_peer(const struct rpc_sreq *req);
/** Milliseconds left before the caller's deadline (0: passed). */
int64_t rpc_sreq_ms_left(const struct rpc_sreq *req);
/** Reply with status rc (0 or negative errno), an optional body and a
 *  message (NULL: none, cut at 255 bytes) that the caller gets in rr_msg
 *  and as its err_msg().  The body is copied; a reply too big for
 *  rc_max_msg is replaced by -EMSGSIZE.  req is freed: do not use it after.
 *  When rc < 0 the caller sees no body and no IN data. */
void rpc_sreq_reply(struct rpc_sreq *req, int rc, const void *body,
		    size_t len, const char *msg);

/* ------------------------------------------------------------- client */

/**
 * Connect to the server at addr:port and authenticate (see the top).
 * -ETIMEDOUT after timeout_ms (no server, or it does not answer), -EACCES
 * when either side fails the proof (wrong secret).  Connecting again to a
 * restarted server at the same address gives a fresh, working peer.
 */
int rpc_connect(struct rpc_ep *ep, const char *addr, uint16_t port,
		int timeout_ms, struct rpc_peer **out);

/** Forget the peer (calls in flight complete with -ESHUTDOWN).  Not from
 *  a done() callback of that peer's calls.  NULL is ignored. */
void rpc_peer_close(struct rpc_peer *p);

/**
 * Fail every call waiting on p now with rc (its message "rpc: call opcode
 * N to ADDR: why"), as if each one's deadline had passed: its bulk
 * registrations are released before its done() runs, so the server can no
 * longer reach the caller's buffers; every call started on p afterwards
 * fails at once with -ESHUTDOWN.  p stays allocated until rpc_peer_close().
 * For a caller that learned that the server is gone (the cluster map has
 * it FAILED: core/server/peers.h peers_set_gone()) while calls wait on a
 * connection whose loss the transport does not report.  Not from a done()
 * callback (done() of the failed calls runs on this thread).  NULL is
 * ignored.
 */
void rpc_peer_fail(struct rpc_peer *p, int rc, const char *why);

/**
 * The incarnation (rpc_ep_incarnation()) of the server run that p was
 * connected to, as that server told it in the handshake under the session
 * key; 0 when it did not (a server that predates RpcWelcome).  Requests
 * on p reach only that run: a server restarted at the same address knows
 * none of its sessions and drops them (each call then ends at its
 * deadline), so a caller that learns a newer incarnation, e.g. from a
 * fresh connect, replaces p.
 */
uint64_t rpc_peer_incarnation(const struct rpc_peer *p);

/** Bulk data of a call: the server pulls OUT buffers, pushes into IN. */
enum rpc_bulk_dir { RPC_BULK_NONE = 0, RPC_BULK_OUT = 1, RPC_BULK_IN = 2 };

struct rpc_bulk {
	uint32_t rb_dir;            /**< enum rpc_bulk_dir */
	const struct iovec *rb_iov; /**< caller's buffers (kept until done) */
	uint32_t rb_nr;
};

/** A finished call: status, reply body (malloc'd; the caller frees it
 *  with free() — in done(), the callee owns it), and the server's (or the
 *  RPC layer's) message when status < 0. */
struct rpc_result {
	int rr_status;
	bool rr_answered;   /**< the server's reply arrived: rr_status is its
			     *   answer (even a transport-like code, e.g. its
			     *   own call to another server timed out), not
			     *   a failure of this call */
	void *rr_body;
	size_t rr_len;
	char rr_msg[256];
	uint64_t rr_epoch;  /**< the map epoch the server's reply carried
			     *   (0: none, or no reply) */
};

typedef void (*rpc_done_fn)(void *arg, struct rpc_result *res);

/** Count one call to p that its caller sends again (a pause after
 *  -EBUSY, an epoch catch-up, a reroute: strata_rpc_retries_total,
 *  addb/addb.h). */
void rpc_peer_retry_note(struct rpc_peer *p);

/**
 * Call opcode (RPC_OP_NOOP, or >= RPC_OP_USER_MIN) on p with body
 * (protobuf bytes, at most rc_max_msg - rc_inline_max - 1 KiB: -EMSGSIZE)
 * and optional bulk (at most 16 iovecs; up to rc_inline_max bytes travel
 * inline, larger ones are registered and moved by RMA), deadline
 * timeout_ms (1 .. 24 h) from now.  When rc_max_inflight calls to p are
 * in flight, both wait for a slot (until the deadline: -ETIMEDOUT).
 *
 * rpc_call() blocks and returns the status (res may be NULL; on failure
 * err_msg() is the message); -EDEADLK from a done() callback.
 * rpc_call_async() returns 0 once the request is sent (done() then runs
 * exactly once, on the progress thread, or on the thread that closes the
 * peer or endpoint) or a negative code when the call could not start
 * (done() never runs).  From inside done() it does not wait for a slot:
 * -EAGAIN when none is free.  done() must not block long.
 * Status codes: the server's, or -ETIMEDOUT, -EBUSY (server queue full),
 * -ESHUTDOWN (closed), -EOPNOTSUPP (no handler), -ECONNRESET /
 * -EHOSTUNREACH (transport), -EPROTO (bad reply).
 */
int rpc_call(struct rpc_peer *p, uint32_t opcode, const void *body,
	     size_t len, const struct rpc_bulk *bulk, int timeout_ms,
	     struct rpc_result *res);
int rpc_call_async(struct rpc_peer *p, uint32_t opcode, const void *body,
		   size_t len, const struct rpc_bulk *bulk, int timeout_ms,
		   rpc_done_fn done, void *arg);

/**
 * rpc_call_async() that never waits for a slot: -EAGAIN (nothing sent,
 * done() never runs) when rc_max_inflight calls to p are in flight.  For
 * a caller that must not block, e.g. one that starts calls from a
 * thread launching work (clovis/cli_cluster.c) and has another way to run
 * the call when no slot is free.
 */
int rpc_call_try(struct rpc_peer *p, uint32_t opcode, const void *body,
		 size_t len, const struct rpc_bulk *bulk, int timeout_ms,
		 rpc_done_fn done, void *arg);

#endif
