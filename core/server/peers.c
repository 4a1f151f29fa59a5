/*
 * peers.c — connections to the servers of a cluster (see peers.h).
 */
#include <arpa/inet.h>
#include <errno.h>
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

struct peer_slot {
	pthread_mutex_t ps_lock;
	struct rpc_peer *ps_peer;
	uint64_t ps_down_until_ms;  /* 0: not known down */
	bool ps_down;               /* the last contact failed */
	bool ps_was_down;           /* failed since peers_was_down() cleared */
	uint64_t ps_gen;            /* up/down transitions (atomic reads) */
	uint64_t ps_ok_ms;          /* sent at: the latest answered call */
};

struct peers {
	const struct clu_conf *p_conf;
	struct rpc_ep *p_ep;
	bool p_own_ep;
	struct peer_slot p_slots[CLU_SERVERS_MAX];
};

static uint64_t peers_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Under ps_lock: a contact with the server failed. */
static void slot_mark_down(struct peer_slot *s)
{
	s->ps_down_until_ms = peers_now_ms() + PEERS_RETRY_MS;
	s->ps_was_down = true;
	if (!s->ps_down) {
		s->ps_down = true;
		__atomic_add_fetch(&s->ps_gen, 1, __ATOMIC_RELEASE);
	}
}

/* A call to server i sent at sent_ms got an answer: it is up. */
static void slot_mark_up(struct peer_slot *s, uint64_t sent_ms)
{
	pthread_mutex_lock(&s->ps_lock);
	if (sent_ms > s->ps_ok_ms)
		s->ps_ok_ms = sent_ms;
	if (s->ps_down) {
		s->ps_down = false;
		__atomic_add_fetch(&s->ps_gen, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->ps_lock);
}

/*
 * The local address a client endpoint binds to: the one the kernel routes
 * to the cluster's first server from (a UDP socket connect()ed there and
 * asked with getsockname(); no packet is sent).  127.0.0.1 for servers on
 * loopback, this host's interface address for servers on other hosts.
 */
static void peers_local_addr(const struct clu_conf *c, char *buf, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof sa;
	int fd;

	snprintf(buf, len, "127.0.0.1");
	if (c->cc_nr_servers == 0 ||
	    inet_pton(AF_INET, c->cc_servers[0].cs_addr, &sa.sin_addr) != 1)
		return;
	sa.sin_port = htons(c->cc_servers[0].cs_port);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		inet_ntop(AF_INET, &sa.sin_addr, buf, (socklen_t)len);
	close(fd);
}

int peers_create(struct peers **out, const struct clu_conf *c,
		 struct rpc_ep *ep)
{
	char local[INET_ADDRSTRLEN];
	struct peers *p = calloc(1, sizeof *p);
	int rc;

	if (p == NULL)
		return err_set(-ENOMEM, "cluster %s: peer table", c->cc_name);
	p->p_conf = c;
	for (uint32_t i = 0; i < CLU_SERVERS_MAX; i++)
		pthread_mutex_init(&p->p_slots[i].ps_lock, NULL);
	if (ep == NULL) {
		struct rpc_conf rc_conf = {
			.rc_provider = c->cc_provider,
			.rc_secret = c->cc_secret,
			.rc_secret_len = c->cc_secret_len,
			.rc_max_msg = 2u << 20,
		};

		peers_local_addr(c, local, sizeof local);
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

void peers_destroy(struct peers *p)
{
	if (p == NULL)
		return;
	for (uint32_t i = 0; i < CLU_SERVERS_MAX; i++) {
		if (p->p_slots[i].ps_peer != NULL)
			rpc_peer_close(p->p_slots[i].ps_peer);
		pthread_mutex_destroy(&p->p_slots[i].ps_lock);
	}
	if (p->p_own_ep)
		rpc_ep_close(p->p_ep);
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
	live = s->ps_down_until_ms == 0 || peers_now_ms() >= s->ps_down_until_ms;
	pthread_mutex_unlock(&s->ps_lock);
	return live;
}

/* The connection to server i (made now if needed), or an error. */
static int peers_get(struct peers *p, uint32_t i, struct rpc_peer **out)
{
	const struct clu_server *sv = &p->p_conf->cc_servers[i];
	struct peer_slot *s = &p->p_slots[i];
	int rc = 0;

	pthread_mutex_lock(&s->ps_lock);
	if (s->ps_peer == NULL) {
		if (s->ps_down_until_ms != 0 &&
		    peers_now_ms() < s->ps_down_until_ms) {
			rc = err_set(-EHOSTDOWN, "server %s (%s:%u) is down "
				     "(retried every %u ms)", sv->cs_name,
				     sv->cs_addr, sv->cs_port, PEERS_RETRY_MS);
		} else {
			rc = rpc_connect(p->p_ep, sv->cs_addr, sv->cs_port,
					 (int)p->p_conf->cc_connect_ms,
					 &s->ps_peer);
			if (rc != 0) {
				s->ps_peer = NULL;
				slot_mark_down(s);
				rc = err_set(rc, "server %s (%s:%u): %s%s",
					     sv->cs_name, sv->cs_addr,
					     sv->cs_port, rc == -EACCES ?
					     "wrong cluster secret (this "
					     "side's and the server's differ): "
					     : "", err_msg());
			} else {
				s->ps_down_until_ms = 0;
			}
		}
	}
	*out = s->ps_peer;
	pthread_mutex_unlock(&s->ps_lock);
	return rc;
}

/* A transport failure on peer: forget it and mark the server down. */
static void peers_fail(struct peers *p, uint32_t i, struct rpc_peer *peer)
{
	struct peer_slot *s = &p->p_slots[i];
	struct rpc_peer *old = NULL;

	pthread_mutex_lock(&s->ps_lock);
	if (s->ps_peer == peer) {
		old = peer;
		s->ps_peer = NULL;
		slot_mark_down(s);
	}
	pthread_mutex_unlock(&s->ps_lock);
	if (old != NULL) {
		LOG_WARNING("server %s marked down: %s",
			    p->p_conf->cc_servers[i].cs_name, err_msg());
		rpc_peer_close(old);
	}
}

uint64_t peers_gen(struct peers *p, uint32_t i)
{
	return __atomic_load_n(&p->p_slots[i].ps_gen, __ATOMIC_ACQUIRE);
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

void peers_retry_now(struct peers *p, uint32_t i)
{
	struct peer_slot *s = &p->p_slots[i];

	pthread_mutex_lock(&s->ps_lock);
	s->ps_down_until_ms = 0;
	pthread_mutex_unlock(&s->ps_lock);
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
	struct rpc_peer *peer;
	uint64_t sent = peers_now_ms();
	int rc;

	memset(res, 0, sizeof *res);
	for (uint32_t t = 0; t <= PEERS_BUSY_RETRIES; t++) {
		rc = peers_get(p, i, &peer);
		if (rc != 0)
			return rc;
		rc = rpc_call(peer, op, body, len, bulk, (int)call_ms, res);
		if (rc == 0)
			rc = res->rr_status;
		if (rc != -EBUSY)
			break;
		free(res->rr_body);
		memset(res, 0, sizeof *res);
		usleep(PEERS_BUSY_PAUSE_MS * 1000);
	}
	if (rc != 0) {
		err_set(rc, "server %s: %s", sv->cs_name,
			res->rr_msg[0] != '\0' ? res->rr_msg : err_msg());
		if (peers_rc_transport(rc))
			peers_fail(p, i, peer);
	}
	if (!peers_rc_transport(rc))
		slot_mark_up(&p->p_slots[i], sent);
	return rc;
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
