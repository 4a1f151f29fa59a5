/*
 * dtm_msg.c — the dtx protocol's codecs (dtm_msg.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/server/msg.h"
#include "dtm/dtm_msg.h"

int dtm_pack(const ProtobufCMessage *m, uint8_t **buf, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(m);

	*buf = malloc(n ? n : 1);
	if (*buf == NULL)
		return err_set(-ENOMEM, "dtx message of %zu bytes", n);
	*len = protobuf_c_message_pack(m, *buf);
	return 0;
}

static int req_check(const DtxReq *q, uint32_t nr_servers)
{
	uint64_t seen = 0, bytes = 0;

	if (q->kind < DTM_MSG_PREPARE || q->kind > DTM_MSG_DEAD)
		return err_set(-EINVAL, "dtx request: kind %u", q->kind);
	if (q->kind != DTM_MSG_LIST && q->kind != DTM_MSG_DEAD &&
	    q->hlc == 0)
		return err_set(-EINVAL, "dtx request: hlc 0 (no id)");
	if (q->n_parts > DTM_PARTS_MAX ||
	    (q->kind == DTM_MSG_PREPARE && q->bulk_len == 0 &&
	     q->n_parts == 0))
		return err_set(-EINVAL, "dtx request: %zu participants "
			       "(1..%u)", q->n_parts, DTM_PARTS_MAX);
	for (size_t i = 0; i < q->n_parts; i++) {
		if (q->parts[i] >= nr_servers || q->parts[i] >= 64)
			return err_set(-EINVAL, "dtx request: parts[%zu] = %u "
				       "(servers 0..%u)", i, q->parts[i],
				       nr_servers - 1);
		if (seen & (1ull << q->parts[i]))
			return err_set(-EINVAL, "dtx request: parts[%zu] = %u "
				       "given twice", i, q->parts[i]);
		seen |= 1ull << q->parts[i];
	}
	if (q->kind != DTM_MSG_PREPARE && q->n_members != 0)
		return err_set(-EINVAL, "dtx request: members outside "
			       "PREPARE");
	if (q->bulk_len != 0 &&
	    (q->kind != DTM_MSG_PREPARE || q->n_members != 0 ||
	     q->n_parts != 0 || q->bulk_len > DTM_PREPARE_WIRE_MAX))
		return err_set(q->bulk_len > DTM_PREPARE_WIRE_MAX ? -E2BIG :
			       -EINVAL, "dtx request: bulk_len %" PRIu64
			       " (a PREPARE envelope without members or "
			       "participants, at most %u bytes)", q->bulk_len,
			       DTM_PREPARE_WIRE_MAX);
	if (q->kind == DTM_MSG_PREPARE && q->bulk_len == 0 &&
	    (q->n_members == 0 || q->n_members > ST_DTX_OPS_MAX))
		return err_set(-E2BIG, "dtx request: %zu members (1..%u)",
			       q->n_members, ST_DTX_OPS_MAX);
	for (size_t i = 0; i < q->n_members; i++) {
		const DtxMember *m = q->members[i];

		if (m->op != SOP_OBJ && m->op != SOP_IDX && m->op != SOP_ENT)
			return err_set(-EINVAL, "dtx request: members[%zu].op "
				       "%u", i, m->op);
		if (m->body.len == 0)
			return err_set(-EINVAL, "dtx request: members[%zu].body"
				       " empty", i);
		if (m->op != SOP_OBJ && m->data.len != 0)
			return err_set(-EINVAL, "dtx request: members[%zu].data"
				       " on an index or entity update", i);
		bytes += m->body.len + m->data.len;
	}
	if (q->wait_ms > DTM_WAIT_MS_MAX ||
	    (q->kind != DTM_MSG_PREPARE && q->wait_ms != 0))
		return err_set(-EINVAL, "dtx request: wait_ms %u (0..%u, "
			       "PREPARE only)", q->wait_ms, DTM_WAIT_MS_MAX);
	if (bytes > DTM_PREPARE_BYTES_MAX)
		return err_set(-E2BIG, "dtx request: %" PRIu64 " bytes of "
			       "members (at most %u per participant, "
			       "DTM_PREPARE_BYTES_MAX)", bytes,
			       DTM_PREPARE_BYTES_MAX);
	if (q->kind == DTM_MSG_DECIDE && q->decision != DTM_COMMITTED &&
	    q->decision != DTM_ABORTED)
		return err_set(-EINVAL, "dtx request: decision %u",
			       q->decision);
	if (q->kind == DTM_MSG_DEAD && q->decision > 1)
		return err_set(-EINVAL, "dtx request: DEAD with decision %u "
			       "(0 dead, 1 alive)", q->decision);
	if (q->home > nr_servers)
		return err_set(-EINVAL, "dtx request: home %u (0: the "
			       "receiver's, 1..%u: server index + 1)", q->home,
			       nr_servers);
	if (q->kind == DTM_MSG_DEAD && q->server >= nr_servers)
		return err_set(-EINVAL, "dtx request: server %u (servers "
			       "0..%u)", q->server, nr_servers - 1);
	return 0;
}

int dtm_req_decode(const void *body, size_t len, uint32_t nr_servers,
		   DtxReq **out)
{
	DtxReq *q = dtx_req__unpack(NULL, len, body);
	int rc;

	*out = NULL;
	if (q == NULL)
		return err_set(-EBADMSG, "dtx request: %zu bytes do not "
			       "decode", len);
	rc = req_check(q, nr_servers);
	if (rc != 0) {
		dtx_req__free_unpacked(q, NULL);
		return rc;
	}
	*out = q;
	return 0;
}

int dtm_prepare_decode(const DtxReq *env, const void *buf, size_t len,
		       uint32_t nr_servers, DtxReq **out)
{
	int rc;

	*out = NULL;
	if (len != env->bulk_len)
		return err_set(-EBADMSG, "dtx request: bulk of %zu bytes, the "
			       "envelope announced %" PRIu64, len,
			       env->bulk_len);
	rc = dtm_req_decode(buf, len, nr_servers, out);
	if (rc != 0)
		return err_set(rc, "dtx request bulk: %s", err_msg());
	if ((*out)->kind != DTM_MSG_PREPARE || (*out)->bulk_len != 0 ||
	    (*out)->hlc != env->hlc || (*out)->node != env->node) {
		dtx_req__free_unpacked(*out, NULL);
		*out = NULL;
		return err_set(-EINVAL, "dtx request bulk: not the PREPARE "
			       "of the envelope's dtx (kind, id or a bulk of "
			       "its own)");
	}
	return 0;
}

int dtm_reply_decode(const void *body, size_t len, DtxReply **out)
{
	DtxReply *rp = dtx_reply__unpack(NULL, len, body);

	*out = NULL;
	if (rp == NULL)
		return err_set(-EBADMSG, "dtx reply: %zu bytes do not decode",
			       len);
	if (rp->state > DTM_ABORTED || rp->n_list > DTM_LIST_MAX) {
		uint32_t st = rp->state;
		size_t nl = rp->n_list;

		dtx_reply__free_unpacked(rp, NULL);
		return err_set(-EBADMSG, "dtx reply: state %u, %zu entries",
			       st, nl);
	}
	for (size_t i = 0; i < rp->n_list; i++)
		if (rp->list[i]->state > DTM_ABORTED ||
		    rp->list[i]->n_parts > DTM_PARTS_MAX) {
			uint32_t st = rp->list[i]->state;
			size_t np = rp->list[i]->n_parts;

			dtx_reply__free_unpacked(rp, NULL);
			return err_set(-EBADMSG, "dtx reply: list[%zu]: state "
				       "%u, %zu parts", i, st, np);
		}
	*out = rp;
	return 0;
}

const char *dtm_key_str(char *buf, size_t len, const void *key, size_t klen)
{
	const uint8_t *k = key;
	size_t o = 0;

	if (len < 8) {
		buf[0] = '\0';
		return buf;
	}
	buf[o++] = '"';
	for (size_t i = 0; i < klen; i++) {
		if (o + 4 + 5 > len) { /* room for \xHH, then "..." and NUL */
			memcpy(buf + o, "\"...", 5);
			return buf;
		}
		if (k[i] >= 0x20 && k[i] < 0x7f && k[i] != '"' && k[i] != '\\')
			buf[o++] = (char)k[i];
		else
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", k[i]);
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}
