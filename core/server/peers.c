/*
 * peers.c — connections to the servers of a cluster (see peers.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/peers.h"

/*
 * One connection to a server: held by its slot while current and by each
 * call on it, blocking or asynchronous (pc_refs, atomic; taken under the
 * slot's ps_lock while the slot holds it); the last put closes it, so a
 * call never uses a peer that another thread closed.  The RPC progress
 * thread must not close one (rpc_peer_close() from a done() callback of
 * its peer's calls): an asynchronous call's end that drops the last
 * reference leaves the connection in the table's grave, closed by the
 * next blocking call or peers_destroy() (grave_reap()).
 */
struct peer_conn {
	struct rpc_peer *pc_peer;
	uint64_t pc_inc;            /* rpc_peer_incarnation(), 0: untold */
	uint32_t pc_refs;
	uint64_t pc_serial;         /* the slot's count of connections: names
				     * it to peers_call_failed() */
	struct peer_conn *pc_gnext; /* in p_grave */
};

struct peer_slot {
	pthread_mutex_t ps_lock;
	struct peer_conn *ps_conn;  /* NULL: connect at the next call */
	uint64_t ps_down_until_ms;  /* 0: not known down */
	bool ps_down;               /* the last contact failed */
	bool ps_was_down;           /* failed since peers_was_down() cleared */
	uint64_t ps_gen;            /* up/down transitions (atomic reads) */
	uint64_t ps_ok_ms;          /* sent at: the latest answered call */
	uint64_t ps_serial;         /* connections made (pc_serial) */
	uint64_t ps_suspect;        /* pc_serial of a connection an async
				     * call found unreachable, until
				     * peers_call_failed() (atomic) */
	bool ps_gone;               /* peers_set_gone(): not contacted */
	char ps_gone_msg[200];
	/* calls waiting on the server (atomic): how many, since when the
	 * count is above 0, when an answer last came (peers_silent_ms()) */
	uint32_t ps_calls;
	uint64_t ps_wait_from_ms;
	uint64_t ps_heard_ms;
};

struct peers {
	const struct clu_conf *p_conf;
	/* each server's numeric address, resolved once when the table is
	 * made (clu_addr_resolve(): its cs_ip, or looked up for a conf not
	 * resolved yet: a client's) */
	char p_ip[CLU_SERVERS_MAX][CLU_HOST_MAX + 1];
	struct rpc_ep *p_ep;
	bool p_own_ep;
	bool p_server;      /* peers_set_server(): the short retry only */
	bool p_stopping;    /* peers_calls_stop(): calls fail, no down marks */
	struct peer_slot p_slots[CLU_SERVERS_MAX];
	pthread_mutex_t p_glock;
	struct peer_conn *p_grave;  /* unreferenced, to close (p_glock) */
};

/*
 * The incarnation of each server address that this process learned last,
 * at a connect of any table (rdev's probe and data tables, a server's own,
 * a client's): one table's fresh connection to a restarted server tells
 * every other table that its connection to that address is stale.  Not
 * keyed by table or cluster: an address serves one run at a time.
 */
struct peers_book_ent {
	char be_addr[sizeof ((struct clu_server *)0)->cs_addr];
	uint16_t be_port;
	uint64_t be_inc;
};

static struct {
	pthread_mutex_t pb_lock;
	uint32_t pb_nr;
	struct peers_book_ent pb_ent[PEERS_BOOK_MAX];
} peers_book = {.pb_lock = PTHREAD_MUTEX_INITIALIZER};

/* The entry of sv (pb_lock held), NULL if none. */
static struct peers_book_ent *book_find(const struct clu_server *sv)
{
	for (uint32_t k = 0; k < peers_book.pb_nr; k++) {
		struct peers_book_ent *e = &peers_book.pb_ent[k];

		if (e->be_port == sv->cs_port &&
		    strcmp(e->be_addr, sv->cs_addr) == 0)
			return e;
	}
	return NULL;
}

/* The latest incarnation learned of sv, 0 if none. */
static uint64_t book_get(const struct clu_server *sv)
{
	const struct peers_book_ent *e;
	uint64_t inc;

	pthread_mutex_lock(&peers_book.pb_lock);
	e = book_find(sv);
	inc = e != NULL ? e->be_inc : 0;
	pthread_mutex_unlock(&peers_book.pb_lock);
	return inc;
}

/* A connect to sv found incarnation inc (0: untold, nothing learned).  A
 * full book learns no new address: those keep the behaviour of a server
 * that does not tell its incarnation. */
static void book_note(const struct clu_server *sv, uint64_t inc)
{
	struct peers_book_ent *e;

	if (inc == 0)
		return;
	pthread_mutex_lock(&peers_book.pb_lock);
	e = book_find(sv);
	if (e == NULL && peers_book.pb_nr < PEERS_BOOK_MAX) {
		e = &peers_book.pb_ent[peers_book.pb_nr++];
		snprintf(e->be_addr, sizeof e->be_addr, "%s", sv->cs_addr);
		e->be_port = sv->cs_port;
	}
	if (e != NULL)
		e->be_inc = inc;
	pthread_mutex_unlock(&peers_book.pb_lock);
}

/* Is c a connection to an earlier run of a server whose latest learned
 * incarnation is book? */
static bool conn_stale(const struct peer_conn *c, uint64_t book)
{
	return c->pc_inc != 0 && book != 0 && c->pc_inc != book;
}

static uint64_t peers_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Under ps_lock: a contact with the server, begun at since_ms, failed.
 * It is not tried again for PEERS_RETRY_MS.  In a client's table
 * (p_own_ep), when the contact before this one failed too (ps_down), for
 * twice what this one cost (a connect or call that ran into its timeout)
 * if that is longer, at most PEERS_RETRY_MAX_MS: a server that stays away
 * costs a client at most a third of its time, not one timeout per op,
 * while one that was away briefly (a restart) is tried again after 1 s.
 * A server's own tables (heartbeats, catch-up, unit I/O: the one on its
 * endpoint, and those peers_set_server() marks) keep the short retry:
 * they must see a peer back soon. */
static uint64_t slot_mark_down(const struct peers *p, struct peer_slot *s,
			       uint64_t since_ms)
{
	uint64_t now = peers_now_ms();
	uint64_t wait = p->p_own_ep && !p->p_server && s->ps_down &&
			now > since_ms ?
			2 * (now - since_ms) : 0;

	if (wait < PEERS_RETRY_MS)
		wait = PEERS_RETRY_MS;
	if (wait > PEERS_RETRY_MAX_MS)
		wait = PEERS_RETRY_MAX_MS;
	s->ps_down_until_ms = now + wait;
	s->ps_was_down = true;
	if (!s->ps_down) {
		s->ps_down = true;
		__atomic_add_fetch(&s->ps_gen, 1, __ATOMIC_RELEASE);
	}
	return s->ps_down_until_ms;
}

/* Under ps_lock: the server restarted (a newer incarnation is known).  It
 * was away for a while, which peers_gen() and peers_was_down() must show
 * (index replicas, srv_idx.c); it is up now, so it is not marked down. */
static void slot_note_restart(struct peer_slot *s)
{
	s->ps_was_down = true;
	if (!s->ps_down)
		__atomic_add_fetch(&s->ps_gen, 2, __ATOMIC_RELEASE);
}

/* Take a reference to c (ps_lock held, c in the slot or referenced). */
static void conn_get(struct peer_conn *c)
{
	__atomic_add_fetch(&c->pc_refs, 1, __ATOMIC_ACQ_REL);
}

/* Drop a reference to c; the last one closes its peer.  Not on the RPC
 * progress thread: conn_put_later() there. */
static void conn_put(struct peer_conn *c)
{
	if (__atomic_sub_fetch(&c->pc_refs, 1, __ATOMIC_ACQ_REL) == 0) {
		rpc_peer_close(c->pc_peer);
		free(c);
	}
}

/* conn_put() from any thread: the last reference leaves c in the grave. */
static void conn_put_later(struct peers *p, struct peer_conn *c)
{
	if (__atomic_sub_fetch(&c->pc_refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pthread_mutex_lock(&p->p_glock);
	c->pc_gnext = p->p_grave;
	__atomic_store_n(&p->p_grave, c, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->p_glock);
}

/* Close the connections in the grave (not on the progress thread). */
static void grave_reap(struct peers *p)
{
	struct peer_conn *c;

	if (__atomic_load_n(&p->p_grave, __ATOMIC_RELAXED) == NULL)
		return;
	pthread_mutex_lock(&p->p_glock);
	c = p->p_grave;
	__atomic_store_n(&p->p_grave, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->p_glock);
	while (c != NULL) {
		struct peer_conn *next = c->pc_gnext;

		rpc_peer_close(c->pc_peer);
		free(c);
		c = next;
	}
}

/* A call to server i sent at sent_ms got an answer: it is up (ps_lock
 * held). */
static void slot_mark_up_locked(struct peer_slot *s, uint64_t sent_ms)
{
	if (sent_ms > s->ps_ok_ms)
		s->ps_ok_ms = sent_ms;
	if (s->ps_down && !s->ps_gone) {
		s->ps_down = false;
		__atomic_add_fetch(&s->ps_gen, 1, __ATOMIC_RELEASE);
	}
}

static void slot_mark_up(struct peer_slot *s, uint64_t sent_ms)
{
	pthread_mutex_lock(&s->ps_lock);
	slot_mark_up_locked(s, sent_ms);
	pthread_mutex_unlock(&s->ps_lock);
}

/*
 * The local address a client endpoint binds to: the one the kernel routes
 * to the cluster's first server from (a UDP socket connect()ed there and
 * asked with getsockname(); no packet is sent), of the server's family:
 * 127.0.0.1 or ::1 for servers on loopback, this host's interface address
 * for servers on other hosts.  ip: server 0's numeric address.
 */
static void peers_local_addr(const char *ip, uint16_t port, char *buf,
			     size_t len)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	socklen_t sl = sizeof ss;
	int fd;

	if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		sl = sizeof *a6;
		snprintf(buf, len, "::1");
	} else if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		sl = sizeof *a4;
		snprintf(buf, len, "127.0.0.1");
	} else {
		snprintf(buf, len, "127.0.0.1");
		return;
	}
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&ss, sl) == 0 &&
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		getnameinfo((struct sockaddr *)&ss, sl, buf, (socklen_t)len,
			    NULL, 0, NI_NUMERICHOST);
	close(fd);
}

/* Every server's address into p->p_ip, once (clu_addr_resolve()): its
 * cs_ip when the conf was resolved (a server's), else looked up now (a
 * client's); with shm the name of its region. */
static int peers_resolve(struct peers *p, const struct clu_conf *c)
{
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < c->cc_nr_servers; i++)
		rc = clu_addr_resolve(c, &c->cc_servers[i], p->p_ip[i],
				      sizeof p->p_ip[i]);
	return rc;
}

int peers_create(struct peers **out, const struct clu_conf *c,
		 struct rpc_ep *ep)
{
	char local[CLU_IP_MAX];
	struct peers *p = calloc(1, sizeof *p);
	int rc;

	if (p == NULL)
		return err_set(-ENOMEM, "cluster %s: peer table", c->cc_name);
	rc = peers_resolve(p, c);
	if (rc != 0) {
		free(p);
		return err_set(rc, "cluster %s: %s", c->cc_name, err_msg());
	}
	p->p_conf = c;
	for (uint32_t i = 0; i < CLU_SERVERS_MAX; i++)
		pthread_mutex_init(&p->p_slots[i].ps_lock, NULL);
	pthread_mutex_init(&p->p_glock, NULL);
	if (ep == NULL) {
		struct rpc_conf rc_conf = {
			.rc_provider = c->cc_provider,
			.rc_secret = c->cc_secret,
			.rc_secret_len = c->cc_secret_len,
			.rc_max_msg = 2u << 20,
		};

		if (c->cc_nr_servers > 0)
			peers_local_addr(p->p_ip[0], c->cc_servers[0].cs_port,
					 local, sizeof local);
		else
			snprintf(local, sizeof local, "127.0.0.1");
		rc = rpc_ep_open(&ep, &rc_conf, local, 0);
		if (rc != 0) {
			free(p);
			return err_set(rc, "cluster %s: client endpoint at %s: "
				       "%s", c->cc_name, local, err_msg());
		}
		p->p_own_ep = true;
	}
	p->p_ep = ep;
	*out = p;
	return 0;
}

void peers_calls_stop(struct peers *p)
{
	if (p == NULL)
		return;
	__atomic_store_n(&p->p_stopping, true, __ATOMIC_RELEASE);
	rpc_ep_calls_stop(p->p_ep);
}

void peers_destroy(struct peers *p)
{
	if (p == NULL)
		return;
	for (uint32_t i = 0; i < CLU_SERVERS_MAX; i++) {
		struct peer_slot *s = &p->p_slots[i];

		if (s->ps_conn != NULL)
			conn_put(s->ps_conn);
	}
	grave_reap(p);
	if (p->p_own_ep)
		rpc_ep_close(p->p_ep);
	/* Calls the close ended (none after a drained client) left their
	 * connections here; the endpoint freed their peers with it. */
	for (struct peer_conn *c = p->p_grave, *next; c != NULL; c = next) {
		next = c->pc_gnext;
		free(c);
	}
	for (uint32_t i = 0; i < CLU_SERVERS_MAX; i++)
		pthread_mutex_destroy(&p->p_slots[i].ps_lock);
	pthread_mutex_destroy(&p->p_glock);
	free(p);
}

struct rpc_ep *peers_ep(struct peers *p)
{
	return p->p_ep;
}

bool peers_rc_transport(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
	case -ESHUTDOWN:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ECONNABORTED:
	case -ENOTCONN:
	case -EHOSTUNREACH:
	case -EHOSTDOWN:
	case -ENETUNREACH:
	case -EPIPE:
	case -EACCES:
	case -EPROTO:
	case -ECANCELED:
		return true;
	default:
		return false;
	}
}

bool peers_live(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];
	bool live;

	pthread_mutex_lock(&s->ps_lock);
	live = !s->ps_gone && (s->ps_down_until_ms == 0 ||
			       peers_now_ms() >= s->ps_down_until_ms);
	pthread_mutex_unlock(&s->ps_lock);
	return live;
}

/* A call to slot s starts / ended (answered: the server's reply came). */
static void slot_call_begin(struct peer_slot *s)
{
	if (__atomic_fetch_add(&s->ps_calls, 1, __ATOMIC_ACQ_REL) == 0)
		__atomic_store_n(&s->ps_wait_from_ms, peers_now_ms(),
				 __ATOMIC_RELEASE);
}

static void slot_call_end(struct peer_slot *s, bool answered)
{
	if (answered)
		__atomic_store_n(&s->ps_heard_ms, peers_now_ms(),
				 __ATOMIC_RELEASE);
	__atomic_sub_fetch(&s->ps_calls, 1, __ATOMIC_ACQ_REL);
}

uint64_t peers_silent_ms(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];
	uint64_t from, heard, now = peers_now_ms();

	if (__atomic_load_n(&s->ps_calls, __ATOMIC_ACQUIRE) == 0)
		return 0;
	from = __atomic_load_n(&s->ps_wait_from_ms, __ATOMIC_ACQUIRE);
	heard = __atomic_load_n(&s->ps_heard_ms, __ATOMIC_ACQUIRE);
	if (heard > from)
		from = heard;
	return now > from ? now - from : 0;
}

bool peers_set_gone(struct peers *p, uint32_t i, const char *why)
{
	const struct clu_server *sv = &p->p_conf->cc_servers[i];
	struct peer_slot *s = &p->p_slots[i];
	struct peer_conn *c;
	char msg[sizeof s->ps_gone_msg];
	bool was;

	snprintf(msg, sizeof msg, "%s", why);
	/* a connect in progress holds ps_lock through its handshake: at
	 * most the connect timeout */
	pthread_mutex_lock(&s->ps_lock);
	was = s->ps_gone;
	s->ps_gone = true;
	memcpy(s->ps_gone_msg, msg, sizeof msg);
	c = s->ps_conn;
	s->ps_conn = NULL;
	s->ps_was_down = true;
	if (!s->ps_down) {
		s->ps_down = true;
		__atomic_add_fetch(&s->ps_gen, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->ps_lock);
	if (c != NULL) {
		/* the calls waiting on it end now, not at their deadline
		 * (the transport does not report a peer that died) */
		uint32_t n = __atomic_load_n(&s->ps_calls, __ATOMIC_ACQUIRE);

		rpc_peer_fail(c->pc_peer, -EHOSTDOWN, msg);
		conn_put(c);
		if (n > 0)
			LOG_WARNING("server %s: %s: %u call%s waiting on it "
				    "failed now", sv->cs_name, msg, n,
				    n == 1 ? "" : "s");
	}
	if (!was)
		LOG_INFO("server %s: %s: not contacted until the map has it "
			 "back", sv->cs_name, msg);
	return !was;
}

bool peers_clear_gone(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];
	bool was;

	pthread_mutex_lock(&s->ps_lock);
	was = s->ps_gone;
	s->ps_gone = false;
	if (was)
		s->ps_down_until_ms = 0; /* the next call connects */
	pthread_mutex_unlock(&s->ps_lock);
	if (was)
		LOG_INFO("server %s: back in the cluster map: contacted again",
			 p->p_conf->cc_servers[i].cs_name);
	return was;
}

bool peers_gone(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];
	bool gone;

	pthread_mutex_lock(&s->ps_lock);
	gone = s->ps_gone;
	pthread_mutex_unlock(&s->ps_lock);
	return gone;
}

/* Under ps_lock: connect to server i unless it was found down less than
 * PEERS_RETRY_MS ago; the new connection becomes the slot's. */
static int slot_connect(struct peers *p, uint32_t i)
{
	const struct clu_server *sv = &p->p_conf->cc_servers[i];
	struct peer_slot *s = &p->p_slots[i];
	struct peer_conn *c;
	char where[CLU_HOST_MAX + 16];
	uint64_t since;
	int rc;

	clu_server_where(sv, where, sizeof where);
	if (s->ps_gone)
		return err_set(-EHOSTDOWN, "server %s (%s): %s", sv->cs_name,
			       where, s->ps_gone_msg);
	if (s->ps_down_until_ms != 0 && peers_now_ms() < s->ps_down_until_ms)
		return err_set(-EHOSTDOWN, "server %s (%s) is down (tried "
			       "again in %" PRIu64 " ms)", sv->cs_name, where,
			       s->ps_down_until_ms - peers_now_ms());
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return err_set(-ENOMEM, "server %s: connection", sv->cs_name);
	since = peers_now_ms();
	rc = rpc_connect(p->p_ep, p->p_ip[i], sv->cs_port,
			 (int)p->p_conf->cc_connect_ms, &c->pc_peer);
	if (rc != 0) {
		uint64_t until = slot_mark_down(p, s, since);

		free(c);
		/* Both times on the clock of ps_down_until_ms, so that a test
		 * can check from the log that no attempt starts before the
		 * mark of the one before it expired.  A server's tables
		 * retry every second: debug level there. */
		LOG_AT(p->p_own_ep && !p->p_server ? LOG_INFO : LOG_DBG,
		       "server %s (%s): connect failed: %s; marked down "
		       "[monotonic ms: connect begun %" PRIu64 ", not tried "
		       "again before %" PRIu64 "]", sv->cs_name, where,
		       err_msg(), since, until);
		return err_set(rc, "server %s (%s): %s%s", sv->cs_name,
			       where, rc == -EACCES ?
			       "wrong cluster secret (this side's and the "
			       "server's differ): " : "", err_msg());
	}
	c->pc_inc = rpc_peer_incarnation(c->pc_peer);
	c->pc_refs = 1;
	c->pc_serial = ++s->ps_serial;
	s->ps_conn = c;
	s->ps_down_until_ms = 0;
	book_note(sv, c->pc_inc);
	return 0;
}

/*
 * The connection to server i, referenced (conn_put() it), made now if
 * there is none or if the one there reaches an earlier run of the server
 * (this process learned a newer incarnation since it was made); or an
 * error.
 */
static int peers_get(struct peers *p, uint32_t i, struct peer_conn **out)
{
	const struct clu_server *sv = &p->p_conf->cc_servers[i];
	struct peer_slot *s = &p->p_slots[i];
	uint64_t book = book_get(sv), was = 0;
	struct peer_conn *stale = NULL;
	int rc = 0;

	*out = NULL;
	if (__atomic_load_n(&p->p_stopping, __ATOMIC_ACQUIRE))
		return err_set(-ESHUTDOWN, "server %s: no call: this process "
			       "is stopping", sv->cs_name);
	pthread_mutex_lock(&s->ps_lock);
	if (s->ps_conn != NULL && conn_stale(s->ps_conn, book)) {
		stale = s->ps_conn;
		was = stale->pc_inc;
		s->ps_conn = NULL;
		slot_note_restart(s);
	}
	if (s->ps_conn == NULL)
		rc = slot_connect(p, i);
	if (rc == 0) {
		conn_get(s->ps_conn);
		*out = s->ps_conn;
	}
	pthread_mutex_unlock(&s->ps_lock);
	if (stale != NULL) {
		LOG_INFO("server %s restarted (incarnation %016" PRIx64 ", "
			 "was %016" PRIx64 "): its connection is replaced",
			 sv->cs_name, book, was);
		conn_put(stale);
	}
	return rc;
}

/*
 * A call on c failed in the transport: forget c.  If this process learned
 * a newer incarnation of the server meanwhile, it restarted and is up:
 * returns true and does not mark it down; else marks it down (false).
 */
static bool peers_fail(struct peers *p, uint32_t i, struct peer_conn *c,
		       uint64_t since_ms)
{
	const struct clu_server *sv = &p->p_conf->cc_servers[i];
	struct peer_slot *s = &p->p_slots[i];
	bool restarted = conn_stale(c, book_get(sv));
	struct peer_conn *old = NULL;

	/* a call its own stop failed says nothing about the server */
	if (__atomic_load_n(&p->p_stopping, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&s->ps_lock);
	if (s->ps_conn == c) {
		old = c;
		s->ps_conn = NULL;
		if (restarted)
			slot_note_restart(s);
		else
			slot_mark_down(p, s, since_ms);
	}
	pthread_mutex_unlock(&s->ps_lock);
	if (old == NULL)
		return restarted;
	if (restarted)
		LOG_INFO("server %s restarted: a call on the connection to its "
			 "earlier run failed (%s); connection replaced",
			 sv->cs_name, err_msg());
	else
		LOG_WARNING("server %s marked down: %s", sv->cs_name,
			    err_msg());
	conn_put(old);
	return restarted;
}

uint64_t peers_gen(struct peers *p, uint32_t i)
{
	return __atomic_load_n(&p->p_slots[i].ps_gen, __ATOMIC_ACQUIRE);
}

void peers_set_server(struct peers *p)
{
	p->p_server = true;
}

bool peers_down(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];
	bool down;

	pthread_mutex_lock(&s->ps_lock);
	down = s->ps_down;
	pthread_mutex_unlock(&s->ps_lock);
	return down;
}

bool peers_was_down(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];
	bool was;

	pthread_mutex_lock(&s->ps_lock);
	was = s->ps_was_down;
	pthread_mutex_unlock(&s->ps_lock);
	return was;
}

void peers_clear_was_down(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];

	pthread_mutex_lock(&s->ps_lock);
	s->ps_was_down = false;
	pthread_mutex_unlock(&s->ps_lock);
}

void peers_retry_note(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];

	/* a counter is not worth a wait: a connect in progress holds the
	 * lock through its handshake (the note is then lost) */
	if (pthread_mutex_trylock(&s->ps_lock) != 0)
		return;
	if (s->ps_conn != NULL)
		rpc_peer_retry_note(s->ps_conn->pc_peer);
	pthread_mutex_unlock(&s->ps_lock);
}

void peers_retry_now(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];

	pthread_mutex_lock(&s->ps_lock);
	s->ps_down_until_ms = 0;
	pthread_mutex_unlock(&s->ps_lock);
}

/* A server process's catch-up (peers_epoch_catchup()); NULL in a client,
 * which follows the epochs servers answer with. */
static peers_epoch_fn epoch_catchup;

void peers_epoch_catchup(peers_epoch_fn fn)
{
	__atomic_store_n(&epoch_catchup, fn, __ATOMIC_RELEASE);
}

bool peers_epoch_adopt(uint64_t epoch, bool wait)
{
	peers_epoch_fn fn = __atomic_load_n(&epoch_catchup, __ATOMIC_ACQUIRE);
	uint64_t own = rpc_epoch_get();

	if (epoch <= own)
		return false;
	if (fn != NULL)
		return fn(epoch, wait);
	LOG_INFO("cluster map epoch %" PRIu64 " (was %" PRIu64 "): a server "
		 "refused a request of the older one", epoch, own);
	rpc_epoch_set(epoch);
	return true;
}

/* A server refused a call for its epoch: does this process act under
 * that epoch now (taken here, or by another thread meanwhile)? */
static bool epoch_caught_up(uint64_t epoch)
{
	peers_epoch_adopt(epoch, true);
	return epoch != 0 && rpc_epoch_get() >= epoch;
}

int peers_call(struct peers *p, uint32_t i, uint32_t op, const void *body,
	       size_t len, const struct rpc_bulk *bulk, struct rpc_result *res)
{
	return peers_call_ms(p, i, op, body, len, bulk,
			     p->p_conf->cc_call_ms, res);
}

int peers_call_ms(struct peers *p, uint32_t i, uint32_t op, const void *body,
		  size_t len, const struct rpc_bulk *bulk, uint32_t call_ms,
		  struct rpc_result *res)
{
	const struct clu_server *sv = &p->p_conf->cc_servers[i];
	struct peer_slot *s = &p->p_slots[i];
	struct peer_conn *c;
	uint64_t sent = peers_now_ms();
	bool answered;
	int rc;

	memset(res, 0, sizeof *res);
	grave_reap(p);
	for (uint32_t t = 0;; t++) {
		rc = peers_get(p, i, &c);
		if (rc != 0)
			return rc;
		slot_call_begin(s);
		rc = rpc_call(c->pc_peer, op, body, len, bulk, (int)call_ms,
			      res);
		slot_call_end(s, res->rr_answered);
		if (rc == 0)
			rc = res->rr_status;
		answered = res->rr_answered;
		if ((rc != -EBUSY && !(rc == -EREMCHG && answered &&
				       epoch_caught_up(res->rr_epoch))) ||
		    t == PEERS_BUSY_RETRIES)
			break;
		rpc_peer_retry_note(c->pc_peer);
		conn_put(c);
		free(res->rr_body);
		memset(res, 0, sizeof *res);
		usleep(PEERS_BUSY_PAUSE_MS * 1000);
	}
	/* An answer is no transport failure, whatever its code: a server
	 * answers -ETIMEDOUT or -EHOSTDOWN when *its* call to another server
	 * failed (remote devices); this one is up. */
	if (rc != 0) {
		err_set(rc, "server %s: %s", sv->cs_name,
			res->rr_msg[0] != '\0' ? res->rr_msg : err_msg());
		if (!answered && peers_rc_transport(rc))
			peers_fail(p, i, c, sent);
	}
	if (answered || !peers_rc_transport(rc))
		slot_mark_up(s, sent);
	conn_put(c);
	return rc;
}

/* ------------------------------------------------- asynchronous calls */

/* An asynchronous call in flight: it holds a reference to its connection,
 * dropped at its end with conn_put_later() (the end runs on the progress
 * thread), so the connection stays open until every call on it ended,
 * as for blocking calls. */
struct peers_acall {
	struct peers *pa_p;
	uint32_t pa_i;
	struct peer_conn *pa_conn;
	uint64_t pa_sent;
	peers_done_fn pa_done;
	void *pa_arg;
};

/* slot_mark_up() if ps_lock is free: on the progress thread, which must
 * not wait for it (a connect holds it through its handshake, whose
 * messages the progress thread delivers).  A skipped mark is the next
 * call's to make; ps_down is never set while an async call starts. */
static void slot_mark_up_try(struct peer_slot *s, uint64_t sent_ms)
{
	if (pthread_mutex_trylock(&s->ps_lock) != 0)
		return;
	slot_mark_up_locked(s, sent_ms);
	pthread_mutex_unlock(&s->ps_lock);
}

static void peers_async_done(void *arg, struct rpc_result *res)
{
	/* The next call carries a newer epoch a refusal told (this one
	 * ends with the refusal: its caller may retry it). */
	if (res->rr_status == -EREMCHG && res->rr_answered)
		peers_epoch_adopt(res->rr_epoch, false);
	struct peers_acall a = *(struct peers_acall *)arg;
	const struct clu_server *sv = &a.pa_p->p_conf->cc_servers[a.pa_i];
	struct peer_slot *s = &a.pa_p->p_slots[a.pa_i];
	struct peers_end e = {
		.pe_rc = res->rr_status,

		.pe_answered = res->rr_answered,
		.pe_body = res->rr_body,
		.pe_len = res->rr_len,
		.pe_srv = a.pa_i,
		.pe_serial = a.pa_conn->pc_serial,
		.pe_sent = a.pa_sent,
	};

	free(arg);
	if (e.pe_rc != 0)
		snprintf(e.pe_msg, sizeof e.pe_msg, "server %s: %s",
			 sv->cs_name, res->rr_msg);
	e.pe_unreachable = !e.pe_answered && peers_rc_transport(e.pe_rc);
	slot_call_end(s, e.pe_answered);
	if (e.pe_unreachable) /* no more starts on it: peers_call_failed() */
		__atomic_store_n(&s->ps_suspect, e.pe_serial, __ATOMIC_RELEASE);
	else
		slot_mark_up_try(s, a.pa_sent);
	conn_put_later(a.pa_p, a.pa_conn);
	a.pa_done(a.pa_arg, &e);
}

int peers_call_async(struct peers *p, uint32_t i, uint32_t op,
		     const void *body, size_t len,
		     const struct rpc_bulk *bulk, peers_done_fn done,
		     void *arg)
{
	return peers_call_async_ms(p, i, op, body, len, bulk,
				   p->p_conf->cc_call_ms, done, arg);
}

int peers_call_async_ms(struct peers *p, uint32_t i, uint32_t op,
			const void *body, size_t len,
			const struct rpc_bulk *bulk, uint32_t call_ms,
			peers_done_fn done, void *arg)
{
	const struct clu_server *sv = &p->p_conf->cc_servers[i];
	struct peer_slot *s = &p->p_slots[i];
	uint64_t book = book_get(sv);
	struct peers_acall *a = malloc(sizeof *a);
	struct peer_conn *c = NULL;
	int rc;

	if (a == NULL)
		return err_set(-EAGAIN, "server %s: no memory for a call",
			       sv->cs_name);
	/* Never wait here: a connect holds ps_lock through its handshake. */
	if (pthread_mutex_trylock(&s->ps_lock) == 0) {
		c = s->ps_conn;
		if (c != NULL && !s->ps_down && !conn_stale(c, book) &&
		    c->pc_serial != __atomic_load_n(&s->ps_suspect,
						    __ATOMIC_ACQUIRE))
			conn_get(c);
		else
			c = NULL;
		pthread_mutex_unlock(&s->ps_lock);
	}
	if (c == NULL) {
		free(a);
		return err_set(-EAGAIN, "server %s: no current connection to "
			       "start a call on", sv->cs_name);
	}
	*a = (struct peers_acall){p, i, c, peers_now_ms(), done, arg};
	slot_call_begin(s);
	rc = rpc_call_try(c->pc_peer, op, body, len, bulk, (int)call_ms,
			  peers_async_done, a);
	if (rc == 0)
		return 0; /* the reference is the call's; done() may have run */
	slot_call_end(s, false);
	free(a);
	conn_put_later(p, c);
	return -EAGAIN;
}

void peers_call_failed(struct peers *p, const struct peers_end *e)
{
	const struct clu_server *sv = &p->p_conf->cc_servers[e->pe_srv];
	struct peer_slot *s = &p->p_slots[e->pe_srv];
	struct peer_conn *c = NULL;

	grave_reap(p);
	if (!e->pe_unreachable)
		return;
	/* peers_fail() of the connection the call went on, if it is still
	 * the slot's; a later one is not blamed for it. */
	pthread_mutex_lock(&s->ps_lock);
	if (s->ps_conn != NULL && s->ps_conn->pc_serial == e->pe_serial) {
		c = s->ps_conn;
		conn_get(c);
	}
	pthread_mutex_unlock(&s->ps_lock);
	if (c == NULL) {
		/* Replaced already: the server restarted (a newer
		 * incarnation was learned) or another call failed it. */
		LOG_INFO("server %s: %s (its connection was replaced "
			 "meanwhile)", sv->cs_name, e->pe_msg);
		return;
	}
	err_set(e->pe_rc, "%s", e->pe_msg);
	peers_fail(p, e->pe_srv, c, e->pe_sent);
	conn_put(c);
}

uint64_t peers_incarnation(struct peers *p, uint32_t i)
{
	return book_get(&p->p_conf->cc_servers[i]);
}

uint64_t peers_clock_ms(void)
{
	return peers_now_ms();
}

uint64_t peers_ok_ms(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];
	uint64_t v;

	pthread_mutex_lock(&s->ps_lock);
	v = s->ps_ok_ms;
	pthread_mutex_unlock(&s->ps_lock);
	return v;
}
