/*
 * fuzz_dtm_msg.c — libFuzzer target: the dtx protocol's decoders
 * (dtm/dtm_msg.c), as the participant (dtm/srv_dtx.c) and the
 * coordinator (dtm/cli_dtx.c) run them.
 *
 * Input: byte 0 picks the path, byte 1 the cluster's server count
 * (1..64), the rest is the message:
 *   byte 0 % 3 == 0  a request, dtm_req_decode(); each member of an
 *                    accepted PREPARE then goes through the server's
 *                    member decoder msg_req_decode() as pmem_check() does;
 *   byte 0 % 3 == 1  a PREPARE envelope and its bulk: bytes 2..3 (little
 *                    endian) are the envelope's length, the bytes after it
 *                    the bulk, dtm_prepare_decode() when the envelope is
 *                    accepted and announces a bulk;
 *   byte 0 % 3 == 2  a reply, dtm_reply_decode().
 * An accepted message must keep the decoder's promises (counts inside
 * their limits), or the harness aborts.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/server/msg.h"
#include "dtm/dtm_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The members of an accepted PREPARE, decoded as the participant does. */
static void members_decode(const DtxReq *q)
{
	if (q->n_members == 0 && q->bulk_len == 0)
		abort(); /* a PREPARE has members or a bulk */
	for (size_t i = 0; i < q->n_members; i++) {
		const DtxMember *src = q->members[i];
		struct msg_req m;

		(void)msg_req_decode(&m, src->op, src->body.data,
				     src->body.len,
				     src->op == SOP_OBJ ? src->data.len : 0);
		msg_req_fini(&m);
	}
}

static void req_check(const DtxReq *q, uint32_t nr)
{
	if (q->n_parts > DTM_PARTS_MAX)
		abort();
	for (size_t i = 0; i < q->n_parts; i++)
		if (q->parts[i] >= nr)
			abort();
	if (q->kind == DTM_MSG_PREPARE)
		members_decode(q);
}

static void one_req(const uint8_t *p, size_t n, uint32_t nr)
{
	DtxReq *q;

	if (dtm_req_decode(p, n, nr, &q) != 0)
		return;
	req_check(q, nr);
	dtx_req__free_unpacked(q, NULL);
}

static void one_prepare(const uint8_t *p, size_t n, uint32_t nr)
{
	DtxReq *env, *q;
	size_t el;

	if (n < 2)
		return;
	el = (size_t)p[0] | (size_t)p[1] << 8;
	p += 2;
	n -= 2;
	if (el > n)
		el = n;
	if (dtm_req_decode(p, el, nr, &env) != 0)
		return;
	req_check(env, nr);
	if (env->kind == DTM_MSG_PREPARE && env->bulk_len != 0 &&
	    dtm_prepare_decode(env, p + el, n - el, nr, &q) == 0) {
		if (q->kind != DTM_MSG_PREPARE || q->bulk_len != 0 ||
		    q->hlc != env->hlc)
			abort();
		req_check(q, nr);
		dtx_req__free_unpacked(q, NULL);
	}
	dtx_req__free_unpacked(env, NULL);
}

static void one_reply(const uint8_t *p, size_t n)
{
	DtxReply *rp;

	if (dtm_reply_decode(p, n, &rp) != 0)
		return;
	if (rp->state > DTM_ABORTED || rp->n_list > DTM_LIST_MAX)
		abort();
	for (size_t i = 0; i < rp->n_list; i++)
		if (rp->list[i]->n_parts > DTM_PARTS_MAX)
			abort();
	dtx_reply__free_unpacked(rp, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t nr;

	if (size < 2)
		return 0;
	nr = 1u + data[1] % 64u;
	switch (data[0] % 3u) {
	case 0:
		one_req(data + 2, size - 2, nr);
		break;
	case 1:
		one_prepare(data + 2, size - 2, nr);
		break;
	default:
		one_reply(data + 2, size - 2);
		break;
	}
	return 0;
}
