/*
 * auth.c — the connect handshake: HELLO, CHALLENGE, AUTH, AUTH_REPLY.
 *
 *   client -> HELLO(name, cnonce)
 *   server -> CHALLENGE(snonce, HMAC(secret, "S" cnonce snonce), session)
 *   client -> AUTH(session, HMAC(secret, "C" cnonce snonce))
 *   server -> AUTH_REPLY(status 0 or -EACCES)
 *
 * Both proofs cover both nonces, and a direction byte so that one side's
 * proof is never valid as the other's.  MACs are compared in constant time
 * (CRYPTO_memcmp).  A client that finds the server's proof wrong answers
 * with an AUTH that cannot pass, so the server counts the refusal as well.
 * This file holds the server's half; the client's is in cli.c.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/rpc/rpc_internal.h"

int rpc_random(void *buf, size_t len)
{
	if (RAND_bytes(buf, (int)len) != 1)
		return err_set(-EIO, "rpc: RAND_bytes failed");
	return 0;
}

int rpc_auth_mac(struct rpc_ep *ep, char dir, const uint8_t *cnonce,
		 const uint8_t *snonce, uint8_t *mac)
{
	uint8_t msg[1 + 2 * RPC_NONCE_LEN];
	unsigned int n = RPC_MAC_LEN;

	msg[0] = (uint8_t)dir;
	memcpy(msg + 1, cnonce, RPC_NONCE_LEN);
	memcpy(msg + 1 + RPC_NONCE_LEN, snonce, RPC_NONCE_LEN);
	if (HMAC(EVP_sha256(), ep->ep_secret, (int)ep->ep_conf.rc_secret_len,
		 msg, sizeof msg, mac, &n) == NULL || n != RPC_MAC_LEN)
		return err_set(-EIO, "rpc: HMAC-SHA256 failed");
	return 0;
}

static void auth_bad(struct rpc_ep *ep, RpcEnvelope *env, const char *why)
{
	pthread_mutex_lock(&ep->ep_lock);
	ep->ep_stats.rs_bad_msgs++;
	pthread_mutex_unlock(&ep->ep_lock);
	LOG_INFO("rpc %s: handshake message dropped: %s", ep->ep_self, why);
	rpc_envelope__free_unpacked(env, NULL);
}

/* Drop half-open sessions past their time, and an older session of the
 * same client name (it reconnects).  ep_lock held. */
static void auth_sweep(struct rpc_ep *ep, const void *name, size_t len)
{
	uint64_t now = rpc_now_ms();
	struct rpc_sess *s, *next;

	for (s = ep->ep_sess; s != NULL; s = next) {
		next = s->se_next;
		if ((!s->se_authed && now - s->se_born_ms > RPC_HALF_OPEN_MS) ||
		    (s->se_name_len == len &&
		     memcmp(s->se_name, name, len) == 0))
			rpc_sess_drop(ep, s);
	}
}

static int auth_sess_new(struct rpc_ep *ep, const RpcHello *h,
			 struct rpc_sess **out)
{
	struct rpc_sess *s = calloc(1, sizeof *s);
	int rc;

	*out = NULL;
	if (s == NULL)
		return err_set(-ENOMEM, "rpc: no memory for a session");
	memcpy(s->se_name, h->name.data, h->name.len);
	s->se_name_len = h->name.len;
	memcpy(s->se_cnonce, h->nonce.data, RPC_NONCE_LEN);
	s->se_born_ms = rpc_now_ms();
	do {
		rc = rpc_random(&s->se_token, sizeof s->se_token);
	} while (rc == 0 && s->se_token == 0); /* 64 random bits: unique */
	if (rc == 0)
		rc = rpc_random(s->se_snonce, RPC_NONCE_LEN);
	if (rc == 0)
		rc = rpc_av_insert(ep, s->se_name, &s->se_addr);
	if (rc != 0) {
		free(s);
		return rc;
	}
	rpc_name_str(ep, s->se_name, s->se_name_len, s->se_str,
		     sizeof s->se_str);
	*out = s;
	return 0;
}

static void auth_send_challenge(struct rpc_ep *ep, struct rpc_sess *s,
				uint64_t xid)
{
	RpcEnvelope env = RPC_ENVELOPE__INIT;
	RpcChallenge ch = RPC_CHALLENGE__INIT;
	uint8_t mac[RPC_MAC_LEN], body[128];

	if (rpc_auth_mac(ep, 'S', s->se_cnonce, s->se_snonce, mac) != 0)
		return;
	ch.nonce.data = s->se_snonce;
	ch.nonce.len = RPC_NONCE_LEN;
	ch.mac.data = mac;
	ch.mac.len = RPC_MAC_LEN;
	ch.session = s->se_token;
	env.kind = RPC_K_CHALLENGE;
	env.xid = xid;
	env.has_session = true;
	env.session = s->se_token;
	env.has_body = true;
	env.body.data = body;
	env.body.len = rpc_challenge__pack(&ch, body);
	if (rpc_send_env(ep, FI_ADDR_NOTAVAIL, &env, 0) != 0)
		LOG_INFO("rpc %s: CHALLENGE to %s: %s", ep->ep_self, s->se_str,
			 err_msg());
}

void rpc_srv_hello(struct rpc_ep *ep, RpcEnvelope *env)
{
	struct rpc_sess *s;
	RpcHello *h;

	if (!ep->ep_server || !env->has_body)
		return auth_bad(ep, env, "HELLO to a client endpoint or empty");
	if (rpc_wire_hello_decode(env->body.data, env->body.len, &h) != 0)
		return auth_bad(ep, env, err_msg());
	if (h->version != RPC_VERSION) {
		rpc_hello__free_unpacked(h, NULL);
		return auth_bad(ep, env, "HELLO of another wire version");
	}
	pthread_mutex_lock(&ep->ep_lock);
	auth_sweep(ep, h->name.data, h->name.len);
	if (ep->ep_nr_sess >= RPC_MAX_SESSIONS || ep->ep_closing) {
		pthread_mutex_unlock(&ep->ep_lock);
		rpc_hello__free_unpacked(h, NULL);
		return auth_bad(ep, env, "session table full or closing");
	}
	pthread_mutex_unlock(&ep->ep_lock);
	if (auth_sess_new(ep, h, &s) != 0) {
		rpc_hello__free_unpacked(h, NULL);
		return auth_bad(ep, env, err_msg());
	}
	pthread_mutex_lock(&ep->ep_lock);
	s->se_next = ep->ep_sess;
	ep->ep_sess = s;
	ep->ep_nr_sess++;
	pthread_mutex_unlock(&ep->ep_lock);
	auth_send_challenge(ep, s, env->xid);
	rpc_hello__free_unpacked(h, NULL);
	rpc_envelope__free_unpacked(env, NULL);
}

static void auth_send_reply(struct rpc_ep *ep, fi_addr_t to, uint64_t token,
			    uint64_t xid, int status)
{
	RpcEnvelope env = RPC_ENVELOPE__INIT;

	env.kind = RPC_K_AUTH_REPLY;
	env.xid = xid;
	env.has_session = true;
	env.session = token;
	env.has_status = true;
	env.status = status;
	if (status != 0)
		env.message = "rpc server refused the client's proof of the "
			      "cluster secret";
	(void)to;
	if (rpc_send_env(ep, FI_ADDR_NOTAVAIL, &env, 0) != 0)
		LOG_INFO("rpc %s: AUTH_REPLY: %s", ep->ep_self, err_msg());
}

void rpc_srv_auth(struct rpc_ep *ep, RpcEnvelope *env)
{
	uint8_t mac[RPC_MAC_LEN];
	struct rpc_sess *s;
	fi_addr_t to;
	RpcAuth *a;
	bool ok;

	if (!ep->ep_server || !env->has_body)
		return auth_bad(ep, env, "AUTH to a client endpoint or empty");
	if (rpc_wire_auth_decode(env->body.data, env->body.len, &a) != 0)
		return auth_bad(ep, env, err_msg());
	pthread_mutex_lock(&ep->ep_lock);
	s = rpc_sess_find(ep, a->session);
	if (s == NULL || s->se_authed) {
		pthread_mutex_unlock(&ep->ep_lock);
		rpc_auth__free_unpacked(a, NULL);
		return auth_bad(ep, env, "AUTH for no half-open session");
	}
	ok = rpc_auth_mac(ep, 'C', s->se_cnonce, s->se_snonce, mac) == 0 &&
	     CRYPTO_memcmp(mac, a->mac.data, RPC_MAC_LEN) == 0;
	to = s->se_addr;
	if (ok) {
		s->se_authed = true;
	} else {
		ep->ep_stats.rs_auth_failed++;
		s->se_born_ms = 0; /* swept at the next HELLO */
		LOG_WARNING("rpc %s: client %s failed the secret check",
			    ep->ep_self, s->se_str);
	}
	pthread_mutex_unlock(&ep->ep_lock);
	auth_send_reply(ep, to, a->session, env->xid, ok ? 0 : -EACCES);
	rpc_auth__free_unpacked(a, NULL);
	rpc_envelope__free_unpacked(env, NULL);
}
