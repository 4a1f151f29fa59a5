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
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/rpc/rpc_internal.h"

/*
 * OpenSSL without its exit-time cleanup.  A process that calls exit()
 * while a cluster client's threads still run (its map watch, a connect's
 * handshake: an application's error path that skips clovis_fini()) had
 * OpenSSL's atexit handler free its locks under them, and the watch
 * thread's RAND_bytes crashed on a NULL lock (SIGSEGV at exit: dtx_crash
 * giving up on a dtx with two of three servers down,
 * tests/integ/dtx_cluster_test.sh, 2026-11-30).  Nothing of OpenSSL needs
 * freeing at exit.  First thing, before any OpenSSL call sets it up.
 */
__attribute__((constructor)) static void rpc_openssl_init(void)
{
	OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

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

/* ------------------------------------------------ per-message MACs */

/* One keyed HMAC context per thread, re-keyed only when the key changes
 * (one peer: never).  HMAC() from scratch costs ~1.8 us for a small
 * message here, a reused context ~0.26 us. */
struct auth_tls {
	EVP_MAC_CTX *at_ctx;
	uint8_t at_key[RPC_KEY_LEN];
	bool at_keyed;
};

static pthread_key_t auth_tls_key;
static pthread_once_t auth_tls_once = PTHREAD_ONCE_INIT;
static EVP_MAC *auth_hmac;

static void auth_tls_free(void *p)
{
	struct auth_tls *t = p;

	EVP_MAC_CTX_free(t->at_ctx);
	OPENSSL_cleanse(t->at_key, sizeof t->at_key);
	free(t);
}

static void auth_tls_init(void)
{
	auth_hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	pthread_key_create(&auth_tls_key, auth_tls_free);
}

int rpc_msg_tag(const uint8_t *key, const void *buf, size_t len,
		uint8_t *tag)
{
	OSSL_PARAM prm[2];
	uint8_t mac[EVP_MAX_MD_SIZE];
	struct auth_tls *t;
	size_t n = 0;
	int ok;

	pthread_once(&auth_tls_once, auth_tls_init);
	t = pthread_getspecific(auth_tls_key);
	if (t == NULL) {
		t = calloc(1, sizeof *t);
		if (t == NULL || auth_hmac == NULL ||
		    (t->at_ctx = EVP_MAC_CTX_new(auth_hmac)) == NULL) {
			free(t);
			return err_set(-EIO, "rpc: no HMAC context");
		}
		pthread_setspecific(auth_tls_key, t);
	}
	if (t->at_keyed && memcmp(t->at_key, key, RPC_KEY_LEN) == 0) {
		ok = EVP_MAC_init(t->at_ctx, NULL, 0, NULL);
	} else {
		prm[0] = OSSL_PARAM_construct_utf8_string(
			OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
		prm[1] = OSSL_PARAM_construct_end();
		ok = EVP_MAC_init(t->at_ctx, key, RPC_KEY_LEN, prm);
		memcpy(t->at_key, key, RPC_KEY_LEN);
		t->at_keyed = ok == 1;
	}
	if (ok != 1 || EVP_MAC_update(t->at_ctx, buf, len) != 1 ||
	    EVP_MAC_final(t->at_ctx, mac, &n, sizeof mac) != 1 || n < 32)
		return err_set(-EIO, "rpc: HMAC-SHA256 of a message failed");
	memcpy(tag, mac, RPC_TAG_LEN);
	return 0;
}

int rpc_welcome_tag(const uint8_t *key, uint64_t inc, uint8_t *tag)
{
	uint8_t msg[1 + sizeof inc];

	msg[0] = 'I';
	for (unsigned i = 0; i < sizeof inc; i++)
		msg[1 + i] = (uint8_t)(inc >> (8 * i));
	return rpc_msg_tag(key, msg, sizeof msg, tag);
}

/* Whether xid is new in s's window, and note it (ep_lock held). */
static bool auth_replay_ok(struct rpc_sess *s, uint64_t xid)
{
	uint64_t *w = &s->se_seen[(xid / 64) % (RPC_REPLAY_WIN / 64)];
	uint64_t bit = 1ull << (xid % 64);

	if (xid + RPC_REPLAY_WIN <= s->se_xid_hi)
		return false; /* older than the window */
	while (s->se_xid_hi < xid) { /* slide: clear what leaves */
		s->se_xid_hi++;
		if (s->se_xid_hi % 64 == 0 &&
		    xid - s->se_xid_hi >= RPC_REPLAY_WIN) {
			memset(s->se_seen, 0, sizeof s->se_seen);
			s->se_xid_hi = xid;
			break;
		}
		s->se_seen[(s->se_xid_hi / 64) % (RPC_REPLAY_WIN / 64)] &=
			~(1ull << (s->se_xid_hi % 64));
	}
	if (*w & bit)
		return false;
	*w |= bit;
	return true;
}

int rpc_msg_check(struct rpc_ep *ep, const void *buf, size_t len,
		  const RpcEnvelope *env)
{
	const uint8_t *b = buf;
	uint8_t key[RPC_KEY_LEN], tag[RPC_TAG_LEN];
	struct rpc_sess *s = NULL;
	bool found;
	int rc;

	pthread_mutex_lock(&ep->ep_lock);
	if (env->kind == RPC_K_REQUEST) {
		s = env->has_session ? rpc_sess_find(ep, env->session) : NULL;
		found = s != NULL && s->se_authed;
		if (found)
			memcpy(key, s->se_key, sizeof key);
	} else {
		found = rpc_cli_call_key(ep, env->xid, key);
	}
	pthread_mutex_unlock(&ep->ep_lock);
	if (!found)
		return 1;
	rc = -EACCES;
	if (!env->has_mac || env->mac.len != RPC_TAG_LEN ||
	    len < RPC_TAG_FIELD || b[len - RPC_TAG_FIELD] != 0x5a ||
	    b[len - RPC_TAG_FIELD + 1] != RPC_TAG_LEN)
		err_set(rc, "rpc %s: %s xid %llu without a MAC", ep->ep_self,
			env->kind == RPC_K_REQUEST ? "request" : "reply",
			(unsigned long long)env->xid);
	else if ((rc = rpc_msg_tag(key, b, len - RPC_TAG_FIELD, tag)) != 0)
		;
	else if ((rc = CRYPTO_memcmp(tag, b + len - RPC_TAG_LEN,
				     RPC_TAG_LEN) != 0 ? -EACCES : 0) != 0)
		err_set(rc, "rpc %s: %s xid %llu with a wrong MAC",
			ep->ep_self, env->kind == RPC_K_REQUEST ? "request" :
			"reply", (unsigned long long)env->xid);
	OPENSSL_cleanse(key, sizeof key);
	pthread_mutex_lock(&ep->ep_lock);
	if (rc == 0 && env->kind == RPC_K_REQUEST) {
		s = rpc_sess_find(ep, env->session);
		if (s != NULL && !auth_replay_ok(s, env->xid))
			rc = err_set(-EACCES, "rpc %s: request xid %llu "
				     "replayed (session of %s)", ep->ep_self,
				     (unsigned long long)env->xid, s->se_str);
	}
	if (rc != 0) {
		ep->ep_stats.rs_bad_msgs++;
		if (env->kind == RPC_K_REQUEST)
			ep->ep_stats.rs_unauth++;
	}
	pthread_mutex_unlock(&ep->ep_lock);
	return rc;
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
		rc = rpc_auth_mac(ep, 'K', s->se_cnonce, s->se_snonce,
				  s->se_key);
	if (rc == 0)
		rc = rpc_av_insert(ep, s->se_name, false, &s->se_addr);
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
	if (rpc_send_env(ep, FI_ADDR_NOTAVAIL, &env, 0, NULL) != 0)
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

/* AUTH_REPLY; when status is 0 its body is RpcWelcome: this endpoint's
 * incarnation, tagged with the session key. */
static void auth_send_reply(struct rpc_ep *ep, uint64_t token,
			    const uint8_t *key, uint64_t xid, int status)
{
	RpcEnvelope env = RPC_ENVELOPE__INIT;
	RpcWelcome w = RPC_WELCOME__INIT;
	uint8_t tag[RPC_TAG_LEN], body[64];

	env.kind = RPC_K_AUTH_REPLY;
	env.xid = xid;
	env.has_session = true;
	env.session = token;
	env.has_status = true;
	env.status = status;
	if (status != 0)
		env.message = "rpc server refused the client's proof of the "
			      "cluster secret";
	_Static_assert(sizeof body >= 2 + 8 + 2 + RPC_TAG_LEN,
		       "RpcWelcome fits its buffer");
	if (status == 0 &&
	    rpc_welcome_tag(key, ep->ep_incarnation, tag) == 0) {
		w.has_incarnation = true;
		w.incarnation = ep->ep_incarnation;
		w.has_mac = true;
		w.mac.data = tag;
		w.mac.len = RPC_TAG_LEN;
		env.has_body = true;
		env.body.data = body;
		env.body.len = rpc_welcome__pack(&w, body);
	}
	if (rpc_send_env(ep, FI_ADDR_NOTAVAIL, &env, 0, NULL) != 0)
		LOG_INFO("rpc %s: AUTH_REPLY: %s", ep->ep_self, err_msg());
}

void rpc_srv_auth(struct rpc_ep *ep, RpcEnvelope *env)
{
	uint8_t mac[RPC_MAC_LEN], key[RPC_KEY_LEN];
	struct rpc_sess *s;
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
	memcpy(key, s->se_key, sizeof key);
	if (ok) {
		s->se_authed = true;
	} else {
		ep->ep_stats.rs_auth_failed++;
		s->se_born_ms = 0; /* swept at the next HELLO */
		LOG_WARNING("rpc %s: client %s failed the secret check",
			    ep->ep_self, s->se_str);
	}
	pthread_mutex_unlock(&ep->ep_lock);
	auth_send_reply(ep, a->session, key, env->xid, ok ? 0 : -EACCES);
	OPENSSL_cleanse(key, sizeof key);
	rpc_auth__free_unpacked(a, NULL);
	rpc_envelope__free_unpacked(env, NULL);
}
