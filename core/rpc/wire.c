/*
 * wire.c — decode and check every RPC message before anything trusts it.
 *
 * protobuf-c checks the encoding and the presence of required fields; this
 * file checks what it cannot: sizes, counts, kinds, enum values, and that
 * the parts of a bulk descriptor agree.  The fuzz targets (tests/fuzz/)
 * drive exactly these functions.
 */
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/rpc/rpc_internal.h"

/* Sum of segment lengths, or false on overflow. */
static bool wire_seg_sum(const RpcBulkDesc *b, uint64_t *sum)
{
	uint64_t s = 0;

	for (size_t i = 0; i < b->n_segs; i++) {
		if (b->segs[i]->len > UINT64_MAX - s)
			return false;
		s += b->segs[i]->len;
	}
	*sum = s;
	return true;
}

/* Unknown fields are refused: the wire is versioned by HELLO, and
 * protobuf-c keeps unknown fields (even number 0) that would not survive a
 * re-encoding. */
static bool wire_unknown(const ProtobufCMessage *m)
{
	return m->n_unknown_fields != 0;
}

static int wire_bulk_check(const RpcBulkDesc *b)
{
	uint64_t sum;

	if (wire_unknown(&b->base))
		return err_set(-EPROTO, "rpc: bulk descriptor with unknown "
			       "fields");
	for (size_t i = 0; i < b->n_segs; i++)
		if (wire_unknown(&b->segs[i]->base))
			return err_set(-EPROTO, "rpc: bulk segment with "
				       "unknown fields");

	if (b->dir != RPC_BULK_OUT && b->dir != RPC_BULK_IN)
		return err_set(-EPROTO, "rpc: bulk dir %u is neither OUT nor IN",
			       b->dir);
	if (b->n_segs != b->nr_iov || b->n_segs > RPC_MAX_IOV)
		return err_set(-EPROTO, "rpc: bulk nr_iov %u, %zu segments "
			       "(at most %u)", b->nr_iov, b->n_segs, RPC_MAX_IOV);
	if (b->has_data) {
		if (b->n_segs != 0 || b->dir != RPC_BULK_OUT ||
		    b->data.len != b->len)
			return err_set(-EPROTO, "rpc: inline bulk of %zu bytes "
				       "with len %llu, dir %u, %zu segments",
				       b->data.len,
				       (unsigned long long)b->len, b->dir,
				       b->n_segs);
		return 0;
	}
	if (b->n_segs == 0) {
		if (b->dir != RPC_BULK_IN)
			return err_set(-EPROTO, "rpc: OUT bulk of %llu bytes "
				       "with neither data nor segments",
				       (unsigned long long)b->len);
		return 0; /* inline IN: the reply carries the data */
	}
	if (!wire_seg_sum(b, &sum) || sum != b->len)
		return err_set(-EPROTO, "rpc: bulk segments do not add up to "
			       "len %llu", (unsigned long long)b->len);
	return 0;
}

int rpc_wire_env_decode(const void *buf, size_t len, size_t max,
			RpcEnvelope **out)
{
	RpcEnvelope *e;
	int rc;

	*out = NULL;
	if (len > max)
		return err_set(-EMSGSIZE, "rpc: message of %zu bytes exceeds "
			       "%zu", len, max);
	e = rpc_envelope__unpack(NULL, len, buf);
	if (e == NULL)
		return err_set(-EPROTO, "rpc: undecodable envelope of %zu bytes",
			       len);
	if (wire_unknown(&e->base)) {
		rc = err_set(-EPROTO, "rpc: envelope with unknown fields");
		goto out_free;
	}
	if (e->kind == 0 || e->kind >= RPC_K_MAX) {
		rc = err_set(-EPROTO, "rpc: envelope kind %u unknown", e->kind);
		goto out_free;
	}
	if (e->message != NULL && strlen(e->message) > RPC_MSG_MAX) {
		rc = err_set(-EPROTO, "rpc: reply message over %u bytes",
			     RPC_MSG_MAX);
		goto out_free;
	}
	if (e->has_timeout_ms && e->timeout_ms > RPC_TIMEOUT_MAX_MS) {
		rc = err_set(-EPROTO, "rpc: timeout_ms %u over %u",
			     e->timeout_ms, RPC_TIMEOUT_MAX_MS);
		goto out_free;
	}
	if (e->has_status && (e->status > 0 || e->status < -4095)) {
		rc = err_set(-EPROTO, "rpc: status %d is not 0 or -errno",
			     e->status);
		goto out_free;
	}
	if (e->has_mac && e->mac.len != RPC_TAG_LEN) {
		rc = err_set(-EPROTO, "rpc: MAC of %zu bytes (%u expected)",
			     e->mac.len, RPC_TAG_LEN);
		goto out_free;
	}
	if (e->bulk != NULL && (rc = wire_bulk_check(e->bulk)) != 0)
		goto out_free;
	*out = e;
	return 0;
out_free:
	rpc_envelope__free_unpacked(e, NULL);
	return rc;
}

int rpc_wire_hello_decode(const void *buf, size_t len, RpcHello **out)
{
	RpcHello *h = rpc_hello__unpack(NULL, len, buf);

	*out = NULL;
	if (h == NULL)
		return err_set(-EPROTO, "rpc: undecodable HELLO");
	if (h->nonce.len != RPC_NONCE_LEN || h->name.len == 0 ||
	    h->name.len > RPC_NAME_MAX || wire_unknown(&h->base)) {
		err_set(-EPROTO, "rpc: HELLO with nonce of %zu bytes, name of "
			"%zu", h->nonce.len, h->name.len);
		rpc_hello__free_unpacked(h, NULL);
		return -EPROTO;
	}
	*out = h;
	return 0;
}

int rpc_wire_challenge_decode(const void *buf, size_t len,
			      RpcChallenge **out)
{
	RpcChallenge *c = rpc_challenge__unpack(NULL, len, buf);

	*out = NULL;
	if (c == NULL)
		return err_set(-EPROTO, "rpc: undecodable CHALLENGE");
	if (c->nonce.len != RPC_NONCE_LEN || c->mac.len != RPC_MAC_LEN ||
	    wire_unknown(&c->base)) {
		err_set(-EPROTO, "rpc: CHALLENGE with nonce of %zu bytes, mac "
			"of %zu", c->nonce.len, c->mac.len);
		rpc_challenge__free_unpacked(c, NULL);
		return -EPROTO;
	}
	*out = c;
	return 0;
}

int rpc_wire_auth_decode(const void *buf, size_t len, RpcAuth **out)
{
	RpcAuth *a = rpc_auth__unpack(NULL, len, buf);

	*out = NULL;
	if (a == NULL)
		return err_set(-EPROTO, "rpc: undecodable AUTH");
	if (a->mac.len != RPC_MAC_LEN || wire_unknown(&a->base)) {
		err_set(-EPROTO, "rpc: AUTH with mac of %zu bytes", a->mac.len);
		rpc_auth__free_unpacked(a, NULL);
		return -EPROTO;
	}
	*out = a;
	return 0;
}

int rpc_wire_welcome_decode(const void *buf, size_t len, RpcWelcome **out)
{
	RpcWelcome *w = rpc_welcome__unpack(NULL, len, buf);

	*out = NULL;
	if (w == NULL)
		return err_set(-EPROTO, "rpc: undecodable WELCOME");
	if (!w->has_incarnation || !w->has_mac ||
	    w->mac.len != RPC_TAG_LEN || wire_unknown(&w->base)) {
		err_set(-EPROTO, "rpc: WELCOME without incarnation or with a "
			"mac of %zu bytes", w->has_mac ? w->mac.len : 0);
		rpc_welcome__free_unpacked(w, NULL);
		return -EPROTO;
	}
	*out = w;
	return 0;
}

void *rpc_wire_env_encode(const RpcEnvelope *env, size_t *len)
{
	size_t n = rpc_envelope__get_packed_size(env);
	void *buf = malloc(n ? n : 1);

	if (buf == NULL)
		return NULL;
	*len = rpc_envelope__pack(env, buf);
	return buf;
}
