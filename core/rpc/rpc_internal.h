/*
 * rpc_internal.h — private structures of the RPC layer, shared by its files:
 *
 *   ep.c    endpoint open/close, the progress thread, sends, MRs
 *   wire.c  envelope and handshake codec with every bound checked
 *   auth.c  the HMAC handshake, both sides
 *   srv.c   server side: sessions, the request queue, handler threads,
 *           replies, bulk pull/push
 *   cli.c   client side: peers, calls, xid matching, deadlines, bulk MRs
 *
 * Locking: one mutex per endpoint (ep_lock) guards every table and counter
 * below; it is never held across a libfabric call that may block, nor while
 * a handler or a done() callback runs.
 */
#ifndef STRATA_CORE_RPC_INTERNAL_H
#define STRATA_CORE_RPC_INTERNAL_H

#include <pthread.h>
/*
 * libfabric is loaded on first use, not when the program starts
 * (rpc_fabric_load() in ep.c, README "Loading libfabric"): Debian's
 * libfabric1 links libpsm_infinipath and libpsm2, whose constructors
 * spend about 0.2 s timing the CPU (usleep loops) in every process that
 * loads them, a `strata` command that never touches the network too.
 * The five functions libfabric exports that this layer calls go through
 * the loader; the rest of its API is inline calls through the objects'
 * operation tables.
 */
#define fi_getinfo rpc_dl_fi_getinfo
#define fi_freeinfo rpc_dl_fi_freeinfo
#define fi_dupinfo rpc_dl_fi_dupinfo
#define fi_fabric rpc_dl_fi_fabric
#define fi_strerror rpc_dl_fi_strerror
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "core/rpc/rpc.h"
#include "core/rpc/rpc.pb-c.h"

/* The loader's entries (ep.c), declared here too for a file that included
 * <rdma/fabric.h> before this header.  Without libfabric on the host:
 * getinfo and fabric answer -FI_ENOSYS, dupinfo NULL, strerror a text
 * that says so. */
int rpc_dl_fi_getinfo(uint32_t version, const char *node,
		      const char *service, uint64_t flags,
		      const struct fi_info *hints, struct fi_info **info);
void rpc_dl_fi_freeinfo(struct fi_info *info);
struct fi_info *rpc_dl_fi_dupinfo(const struct fi_info *info);
int rpc_dl_fi_fabric(struct fi_fabric_attr *attr,
		     struct fid_fabric **fabric, void *context);
const char *rpc_dl_fi_strerror(int errnum);

/* ---- limits (each with its reason) ---------------------------------- */

/* Wire version in HELLO: bumped on any incompatible change of rpc.proto
 * (2: requests and replies carry a MAC). */
#define RPC_VERSION 2u
/* Nonces and MACs: 32 bytes, the size of HMAC-SHA256. */
#define RPC_NONCE_LEN 32u
#define RPC_MAC_LEN 32u
/* Per-message MAC: HMAC-SHA256 cut to 16 bytes (128 bits), appended as
 * field 11 (tag byte 0x5a, length byte 16): 18 bytes on the wire. */
#define RPC_TAG_LEN 16u
#define RPC_TAG_FIELD (2u + RPC_TAG_LEN)
/* Session key: HMAC-SHA256(secret, "K" cnonce snonce). */
#define RPC_KEY_LEN 32u
/* Requests a server accepts out of order per session: the xids of one
 * client endpoint rise, and concurrent callers reorder only a little; a
 * request older than the window, or seen in it, is a replay. */
#define RPC_REPLAY_WIN 1024u
/* Endpoint names: a sockaddr_in6 is 28 bytes, shm names are strings of at
 * most a few dozen bytes; 256 leaves room and bounds what HELLO can make
 * the server insert into its address vector. */
#define RPC_NAME_MAX 256u
/* Segments of one bulk descriptor: a stripe's units of one target fit in
 * 16 iovecs; more would make one RMA descriptor (and MR count) unbounded. */
#define RPC_MAX_IOV 16u
/* Receives posted at once: enough for 64 calls in flight per peer on a
 * few peers without the sender's provider queueing; each is rc_max_msg. */
#define RPC_RECV_BUFS 64u
/* Server message text carried back to the caller (rpc_result.rr_msg). */
#define RPC_MSG_MAX 255u
/* Sessions a server keeps (authenticated and half-open): bounds the
 * address vector and the table against HELLO floods. */
#define RPC_MAX_SESSIONS 1024u
/* A half-open session (HELLO without AUTH) is dropped after this. */
#define RPC_HALF_OPEN_MS 5000u
/* Largest deadline a call may ask for (a day): keeps ms arithmetic far
 * from overflow and catches nonsense. */
#define RPC_TIMEOUT_MAX_MS (24u * 3600u * 1000u)
/* After its deadline, a server-side RMA gets this much longer before the
 * session is dropped to break a hung transfer. */
#define RPC_RMA_GRACE_MS 2000u
/* One RMA operation moves at most this much; larger transfers are split. */
#define RPC_RMA_CHUNK (4u << 20)
/* Defaults of struct rpc_conf. */
#define RPC_DEF_MAX_INFLIGHT 64u
#define RPC_DEF_QUEUE_DEPTH 256u
#define RPC_DEF_NR_HANDLERS 4u
/* Inline beats RMA up to 8 KiB on tcp;ofi_rxm (bench_rpc threshold
 * table, core/rpc/README.md); past rxm's 16 KiB eager limit inline costs a
 * rendezvous and loses. */
#define RPC_DEF_INLINE_MAX (8u << 10)
#define RPC_DEF_BODY_MAX (64u << 10)
#define RPC_MAX_HANDLERS 64u
#define RPC_MAX_MSG_LIMIT (16u << 20)
/* Messages up to the provider's inject size, and at most this, are sent
 * with fi_inject from a stack buffer (rxm: 64 bytes; a NOOP request is
 * about 25). */
#define RPC_INJECT_MAX 256u
/* Envelope fields other than body and inline data take at most this. */
#define RPC_ENV_OVERHEAD 1024u

enum rpc_kind {
	RPC_K_REQUEST = 1,
	RPC_K_REPLY = 2,
	RPC_K_HELLO = 3,
	RPC_K_CHALLENGE = 4,
	RPC_K_AUTH = 5,
	RPC_K_AUTH_REPLY = 6,
	RPC_K_MAX = 7
};

/* ---- wire.c ---------------------------------------------------------- */

/* Decode and check one envelope of len bytes (<= max).  0 and *out (free
 * with rpc_envelope__free_unpacked(*out, NULL)), or -EMSGSIZE / -EPROTO
 * with err_msg() naming the field. */
int rpc_wire_env_decode(const void *buf, size_t len, size_t max,
			RpcEnvelope **out);
int rpc_wire_hello_decode(const void *buf, size_t len, RpcHello **out);
int rpc_wire_challenge_decode(const void *buf, size_t len,
			      RpcChallenge **out);
int rpc_wire_auth_decode(const void *buf, size_t len, RpcAuth **out);
int rpc_wire_welcome_decode(const void *buf, size_t len, RpcWelcome **out);
/* Encode env into a fresh malloc'd buffer of *len bytes (NULL: ENOMEM). */
void *rpc_wire_env_encode(const RpcEnvelope *env, size_t *len);

/* ---- ep.c ------------------------------------------------------------ */

enum rpc_ctx_type { RPC_CTX_RECV = 1, RPC_CTX_SEND, RPC_CTX_RMA };

/* First member of the context of every posted operation. */
struct rpc_ctx {
	struct fi_context2 cx_fi;
	int cx_type;
	struct rpc_ctx *cx_prev, *cx_next; /* ep_tracked (sends, RMA) */
};

/* A posted receive buffer. */
struct rpc_rbuf {
	struct rpc_ctx rb_ctx;
	void *rb_buf;
};

/* A message being sent: freed on its completion.  sb_xid/sb_peer name
 * the call that a failed send completes (client requests), else 0. */
struct rpc_sbuf {
	struct rpc_ctx sb_ctx;
	struct rpc_sbuf *sb_next;   /* backlog (-FI_EAGAIN) */
	fi_addr_t sb_dest;
	struct fid_mr *sb_mr;       /* FI_MR_LOCAL only */
	uint64_t sb_xid;
	uint64_t sb_session;        /* server: resolved at each post */
	uint64_t sb_expire_ms;      /* dropped from the backlog after */
	size_t sb_len;
	unsigned char sb_data[];
};

/* One server-side RMA transfer, waited for by a handler thread.  If the
 * waiter gives up, ra_abandoned makes the progress thread free it. */
struct rpc_rma {
	struct rpc_ctx ra_ctx;
	int ra_done;
	int ra_rc;
	int ra_abandoned;
	struct fid_mr *ra_mr;
	pthread_cond_t *ra_cv;      /* its waiter's own (under ep_lock; NULL
				     * once abandoned) */
	/* What to post (srv_rma_fi), by its handler or, for a push, by the
	 * progress thread from ep_rq (ra_next): */
	struct rpc_rma *ra_next;
	bool ra_wr;
	void *ra_buf;
	size_t ra_len;
	void *ra_desc;
	uint64_t ra_raddr;
	uint64_t ra_key;
	uint64_t ra_session;
	uint64_t ra_expire_ms;
};

struct rpc_call;
struct rpc_sess;

/* shm: one peer name's AV entry and its uses (ep.c). */
struct rpc_avref {
	fi_addr_t ar_addr;
	uint32_t ar_uses;
	bool ar_live;               /* findable by name; else an orphan: its
				     * name was mapped again for a restarted
				     * peer, its old users still count */
	uint64_t ar_ino;            /* the region's file when mapped */
	char ar_name[RPC_NAME_MAX];
};

struct rpc_ep {
	struct rpc_conf ep_conf;
	unsigned char *ep_secret;
	char ep_provider[64];
	char ep_self[96];           /* "addr:port" for messages */
	bool ep_server;
	bool ep_wait_fd;            /* FI_WAIT_FD + epoll, else poll */
	uint64_t ep_mr_mode;
	size_t ep_max_body;         /* body bytes allowed in a message */
	size_t ep_rma_max;          /* provider's largest RMA op */
	size_t ep_inject_max;       /* fi_inject up to this (ep.c) */
	struct fi_info *ep_info;
	struct fid_fabric *ep_fabric;
	struct fid_domain *ep_domain;
	struct fid_ep *ep_ep;
	struct fid_av *ep_av;
	struct fid_cq *ep_cq;
	int ep_cq_fd;
	int ep_epfd;
	int ep_evfd;                /* wakes the progress thread */
	int ep_revfd;               /* wakes a solo reaper (wait-fd mode) */
	unsigned char ep_name[RPC_NAME_MAX];
	size_t ep_name_len;
	struct rpc_rbuf *ep_rbufs;
	struct fid_mr *ep_rbuf_mr;
	unsigned char *ep_rbuf_mem;

	/* shm: the uses of each peer name in the AV (ep.c rpc_av_insert():
	 * the provider unmaps a name's region at any remove), under
	 * ep_av_lock (a leaf lock) */
	pthread_mutex_t ep_av_lock;
	struct rpc_avref *ep_avrefs;
	uint32_t ep_nr_avrefs, ep_max_avrefs;

	pthread_mutex_t ep_lock;
	pthread_cond_t ep_cv;       /* RMA done, drain, call slots */
	pthread_cond_t ep_qcv;      /* request queue */
	bool ep_hstop;              /* handler threads exit */
	pthread_t ep_progress;
	bool ep_progress_started;
	bool ep_stop;               /* progress thread exits */
	bool ep_closing;            /* rpc_ep_close started */
	bool ep_calls_stopped;      /* rpc_ep_calls_stop() called */
	struct rpc_sbuf *ep_backlog, **ep_backlog_tail;
	bool ep_has_backlog;        /* ep_backlog != NULL, read unlocked */
	/* RMA transfers for the progress thread to post (srv.c), oldest
	 * first, under ep_lock; ep_has_rq read unlocked by its loop. */
	struct rpc_rma *ep_rq, **ep_rq_tail;
	bool ep_has_rq;
	/* Polling mode: synchronous callers poll the CQ themselves while
	 * they wait (ep_cq_lock: one reader at a time); the progress thread
	 * stands aside while ep_reapers > 0 and runs what they hand over
	 * (ep_defer, signalled on ep_pcv). */
	pthread_mutex_t ep_cq_lock;
	uint32_t ep_reapers;
	/* Default (wait-fd) mode: 1 while one synchronous caller reads the
	 * CQ itself and sleeps on its descriptor (a solo reaper; counted in
	 * ep_reapers too).  Others wait on their condition as before. */
	uint32_t ep_solo;
	uint64_t ep_reaped;         /* replies a waiting caller took itself */
	struct rpc_defer *ep_defer, **ep_defer_tail;
	pthread_cond_t ep_pcv;
	struct rpc_ctx ep_tracked;  /* sends and RMA not yet completed */
	uint64_t ep_next_key;
	struct rpc_stats ep_stats;
	uint32_t ep_xfer_active[2]; /* srv_rma() running: pulls, pushes */
	uint64_t ep_xfer_t0_us[2];  /* when the first of them began */
	/* bulk buffer pool (pool.c), under ep_pool_lock (not ep_lock, which
	 * the progress thread holds often); made on first use */
	pthread_mutex_t ep_pool_lock;
	unsigned char *ep_pool;     /* RPC_BUF_SLOTS x RPC_BUF_SLOT */
	struct fid_mr *ep_pool_mr;  /* NULL: no registration needed */
	uint32_t ep_pool_free;      /* bit i: slot i is free */
	bool ep_pool_tried;         /* made (or failed to be) */
	uint64_t ep_pool_pooled, ep_pool_fallback, ep_pool_lost;

	/* client */
	uint64_t ep_next_xid;
	struct rpc_call **ep_calls; /* hash by xid */
	uint32_t ep_nr_calls;
	uint64_t ep_wake_at_ms;     /* no call expires before (progress
				     * thread reads it unlocked) */
	struct rpc_peer *ep_peers;

	/* server */
	uint64_t ep_incarnation;    /* drawn at open, never 0 (RpcWelcome) */
	struct rpc_handler_slot *ep_handlers; /* by opcode, RPC_OP_MAX */
	rpc_gate_fn ep_gate;        /* rpc_gate_set(): NULL, none */
	void *ep_gate_arg;
	struct rpc_sess *ep_sess;   /* list */
	uint32_t ep_nr_sess;
	struct rpc_sreq *ep_q_head, *ep_q_tail;
	uint32_t ep_q_len;
	uint32_t ep_outstanding;    /* accepted, not yet replied */
	pthread_t *ep_hthreads;
	uint32_t ep_nr_hthreads;
};

#define RPC_OP_MAX 1024u
#define RPC_CALL_BUCKETS 1024u

struct rpc_handler_slot {
	rpc_handler_fn hs_fn;
	void *hs_arg;
};

/* Polling mode: a synchronous caller polls the CQ while it waits.
 * rpc_reap_begin() false: not here (not polling, or on the progress
 * thread); else rpc_reap() as often as wanted, then rpc_reap_end(). */
bool rpc_reap_begin(struct rpc_ep *ep);
void rpc_reap(struct rpc_ep *ep);
void rpc_reap_end(struct rpc_ep *ep);
/* Default (wait-fd) mode: rpc_solo_begin() true when the caller may reap
 * alone (no other solo reaper, not the progress thread); then
 * rpc_solo_reap() reads the CQ and sleeps on its descriptor until *done
 * or until_ms (*sleeping set while it sleeps, under the waiter's lock: a
 * thread that completes the call then calls rpc_solo_kick()), then
 * rpc_solo_end(). */
bool rpc_solo_begin(struct rpc_ep *ep);
void rpc_solo_reap(struct rpc_ep *ep, pthread_mutex_t *lock, bool *done,
		   bool *sleeping, uint64_t until_ms);
void rpc_solo_kick(struct rpc_ep *ep);
void rpc_solo_end(struct rpc_ep *ep);
/* Monotonic milliseconds. */
uint64_t rpc_now_ms(void);
bool rpc_in_progress_thread(struct rpc_ep *ep);
/* key: the session key a request is MACed with (client), or NULL; a
 * server's REPLY is MACed with its session's key, looked up here. */
/* Send env to dest; on success the message is on its way (or in the
 * backlog).  xid: the client call a failed send should complete, or 0.
 * dest FI_ADDR_NOTAVAIL: to the session env->session (server side), looked
 * up at every post so that nothing is ever sent to a removed address. */
/* Keep epoch if it is the highest a reply carried so far (rpc_epoch_seen). */
void rpc_epoch_note(uint64_t epoch);

int rpc_send_env(struct rpc_ep *ep, fi_addr_t dest, const RpcEnvelope *env,
		 uint64_t xid, const uint8_t *key);
/* Register buf for access; *desc for local use when FI_MR_LOCAL. */
/* Memory registered once by a caller (rpc.h, rpc_mem_reg). */
struct rpc_mem {
	struct fid_mr *mm_mr;
	char *mm_addr;
	size_t mm_len;
};

int rpc_mr_reg(struct rpc_ep *ep, const void *buf, size_t len, uint64_t acc,
	       struct fid_mr **mr);
void rpc_mr_close(struct fid_mr *mr);
/* pool.c: the registration descriptor covering [buf, buf + len) when it
 * lies in the pool, else NULL (*in false). */
void *rpc_pool_desc(struct rpc_ep *ep, const void *buf, size_t len, bool *in);
void rpc_pool_free(struct rpc_ep *ep);
void rpc_pool_stats(struct rpc_ep *ep, struct rpc_stats *st);
void rpc_wake(struct rpc_ep *ep);
/* Drop backlogged messages to dest (ep_lock held; before removing dest
 * from the address vector). */
void rpc_backlog_purge(struct rpc_ep *ep, fi_addr_t dest);
/* Keep cx on the endpoint's list until completed (ep_lock held), so that
 * close frees what the provider never completed. */
void rpc_track(struct rpc_ep *ep, struct rpc_ctx *cx);
void rpc_untrack(struct rpc_ep *ep, struct rpc_ctx *cx);
/* Insert a peer's name (calling: this endpoint connects to it, else it
 * said hello here; shm: a called peer's region must be set up, ep.c). */
int rpc_av_insert(struct rpc_ep *ep, const void *name, bool calling,
		  fi_addr_t *out);
void rpc_av_remove(struct rpc_ep *ep, fi_addr_t a);

void rpc_name_str(struct rpc_ep *ep, const void *name, size_t len, char *buf,
		  size_t size);
int rpc_fi_err(int fi_rc);
/* fi_getinfo() that leaves the process's signal dispositions as they
 * were (a provider loaded by it may install handlers: see
 * rpc_signals_foreign() in ep.c).  Every fi_getinfo() of the process goes
 * through it. */
int rpc_fi_getinfo(const char *node, const char *service, uint64_t flags,
		   const struct fi_info *hints, struct fi_info **info);
/* How many signals have a handler of libinfinipath (libfabric's psm
 * provider: it calls exit() from them, which deadlocks inside libfabric);
 * reset: give them their default back (done once as the program starts,
 * ep.c). */
int rpc_signals_foreign(bool reset);

/* node (an IPv4 or IPv6 address, or a name) as a numeric address into buf
 * (len >= INET6_ADDRSTRLEN): as it is when numeric, else the first address
 * getaddrinfo (AF_UNSPEC) returns.  0, or -EHOSTUNREACH naming node. */
int rpc_node_numeric(const char *node, char *buf, size_t len);

/* A send or RMA completion failed with errno e: the message for it. */
int rpc_map_cq_err(int prov_err);

/* ---- auth.c ---------------------------------------------------------- */

int rpc_auth_mac(struct rpc_ep *ep, char dir, const uint8_t *cnonce,
		 const uint8_t *snonce, uint8_t *mac);
int rpc_random(void *buf, size_t len);
/* The MAC of RpcWelcome: HMAC-SHA256(key, "I" inc little-endian), cut to
 * RPC_TAG_LEN bytes. */
int rpc_welcome_tag(const uint8_t *key, uint64_t inc, uint8_t *tag);
/* tag = HMAC-SHA256(key, buf[0..len)) cut to RPC_TAG_LEN; 0 or -EIO. */
int rpc_msg_tag(const uint8_t *key, const void *buf, size_t len,
		uint8_t *tag);
/* A received request or reply (raw bytes buf/len, decoded env): check its
 * MAC with its session's key, and at a server the replay window.  0, or
 * -EACCES (counted; err_msg() says why) — or 1 when no session or call
 * matches, which the server (unauthenticated) or client (late reply)
 * counts later. */
int rpc_msg_check(struct rpc_ep *ep, const void *buf, size_t len,
		  const RpcEnvelope *env);
/* Server: a HELLO or AUTH envelope arrived (progress thread). */
void rpc_srv_hello(struct rpc_ep *ep, RpcEnvelope *env);
void rpc_srv_auth(struct rpc_ep *ep, RpcEnvelope *env);

/* ---- srv.c ----------------------------------------------------------- */

struct rpc_sess {
	struct rpc_sess *se_next;
	uint64_t se_token;
	fi_addr_t se_addr;
	bool se_authed;
	uint64_t se_born_ms;
	uint8_t se_key[RPC_KEY_LEN];
	uint64_t se_xid_hi;         /* highest request xid seen */
	uint64_t se_seen[RPC_REPLAY_WIN / 64]; /* bit (xid % WIN): seen */
	uint8_t se_cnonce[RPC_NONCE_LEN];
	uint8_t se_snonce[RPC_NONCE_LEN];
	unsigned char se_name[RPC_NAME_MAX];
	size_t se_name_len;
	char se_str[96];
};

struct rpc_sess *rpc_sess_find(struct rpc_ep *ep, uint64_t token);
void rpc_sess_drop(struct rpc_ep *ep, struct rpc_sess *s);
void rpc_srv_request(struct rpc_ep *ep, RpcEnvelope *env);
int rpc_srv_start(struct rpc_ep *ep);
/* Close: refuse new requests, let handlers reply, stop the threads. */
void rpc_srv_drain(struct rpc_ep *ep);
void rpc_srv_fini(struct rpc_ep *ep);
void rpc_rma_complete(struct rpc_ep *ep, struct rpc_rma *ra, int rc);
/* Progress thread: post the queued RMA transfers (srv.c).  true when
 * some are still queued (the provider pushed back). */
bool rpc_rma_flush(struct rpc_ep *ep);
/* Close: fail the queued transfers with -ESHUTDOWN. */
void rpc_rma_purge(struct rpc_ep *ep);

/* ---- cli.c ----------------------------------------------------------- */

/* A reply (or handshake answer) arrived.  sync_only (a reaping caller):
 * handle it only when it answers a synchronous call and return whether it
 * did; else it is always consumed (true). */
bool rpc_cli_reply(struct rpc_ep *ep, RpcEnvelope *env, bool sync_only);
/* The session key of the peer of pending call xid into key (ep_lock
 * held): false when no such call or the peer has no key yet. */
bool rpc_cli_call_key(struct rpc_ep *ep, uint64_t xid, uint8_t *key);
/* Whether call xid still waits (ep_lock held). */
bool rpc_cli_pending(struct rpc_ep *ep, uint64_t xid);
void rpc_cli_send_failed(struct rpc_ep *ep, uint64_t xid, int rc);
/* Time out expired calls; returns ms until the next deadline (or cap). */
int rpc_cli_expire(struct rpc_ep *ep, int cap_ms);
void rpc_cli_fini(struct rpc_ep *ep);

#endif
