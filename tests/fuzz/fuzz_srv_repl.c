/*
 * fuzz_srv_repl.c — libFuzzer target: the replication messages of
 * replicated homes (core/server/msg.c msg_repl_decode(), and the write set
 * checker core/meta_repl.c eng_wset_check() every standby runs before it
 * applies a set to its shadow).
 *
 * Input: byte 0 picks what (bit 0: a write set, else a ReplReq; bit 1:
 * SOP_REPL_SHIP, else SOP_REPL_SNAP), bytes 1..4 the bulk length (little
 * endian, cut to 128 MiB), byte 5 this server's index, byte 6 the number
 * of servers; the rest is the body (or the write set).
 *
 * ReplReq: an accepted request has home another server of the cluster,
 * and for SHIP a seq, no snapshot fields and a bulk of 0 or
 * ENG_WSET_HDR..MSG_REPL_SET_MAX bytes; for SNAP a chunk of
 * 1..MSG_REPL_CHUNK bytes inside total, last exactly at its end.
 * Write set: an accepted set is walked again record by record, inside the
 * buffer, ending exactly at its end with the repl:seq record of its seq.
 * Anything else abort()s.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/eng_repl.h"
#include "core/meta_txn.h"
#include "core/server/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t le(const uint8_t *p, int n)
{
	uint32_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void check_wset(const uint8_t *p, size_t len)
{
	uint64_t seq = 0, s2;
	size_t off = ENG_WSET_HDR;
	uint32_t nr;

	if (eng_wset_check(p, len, &seq) != 0)
		return;
	nr = le(p + 16, 4);
	memcpy(&s2, p + 8, 8);
	if (seq == 0 || seq != s2 || nr == 0 || len < ENG_WSET_HDR)
		abort();
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t kl, vl;

		if (off + ENG_WSET_REC_HDR > len)
			abort();
		kl = le(p + off + 2, 2);
		vl = le(p + off + 4, 4);
		if (p[off] > META_T_FDMI || kl == 0 || kl > 511 ||
		    (p[off + 1] != ENG_WSET_PUT && p[off + 1] != ENG_WSET_DEL) ||
		    (p[off + 1] == ENG_WSET_DEL && vl != 0))
			abort();
		if (off + ENG_WSET_REC_HDR + kl + vl > len)
			abort();
		if (i + 1 == nr && (kl != strlen(ENG_REPL_SEQ_KEY) || vl != 8 ||
				    memcmp(p + off + 8, ENG_REPL_SEQ_KEY, kl)))
			abort();
		off += ENG_WSET_REC_HDR + kl + vl;
	}
	if (off != len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t op, self, nr;
	size_t bulk, len;
	const uint8_t *body;
	ReplReq *q = NULL;

	if (size < 7)
		return 0;
	op = data[0] & 2 ? SOP_REPL_SHIP : SOP_REPL_SNAP;
	bulk = le(data + 1, 4) & ((128u << 20) - 1);
	self = data[5];
	nr = data[6];
	body = data + 7;
	len = size - 7;
	if (data[0] & 1) {
		check_wset(body, len);
		return 0;
	}
	if (msg_repl_decode(op, body, len, bulk, self, nr, &q) != 0) {
		if (q != NULL)
			abort(); /* refused but handed out */
		return 0;
	}
	if (q->home >= nr || q->home == self)
		abort();
	if (op == SOP_REPL_SHIP &&
	    (q->seq == 0 || q->off != 0 || q->total != 0 || q->last ||
	     (bulk != 0 && (bulk < ENG_WSET_HDR || bulk > MSG_REPL_SET_MAX))))
		abort();
	if (op == SOP_REPL_SNAP &&
	    (bulk == 0 || bulk > MSG_REPL_CHUNK || q->total == 0 ||
	     q->total > MSG_REPL_SNAP_MAX || q->off > q->total ||
	     q->total - q->off < bulk ||
	     q->last != (q->off + bulk == q->total)))
		abort();
	repl_req__free_unpacked(q, NULL);
	return 0;
}
