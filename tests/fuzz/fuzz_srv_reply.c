/*
 * fuzz_srv_reply.c — libFuzzer target: the Clovis cluster client's reply
 * decoder msg_reply_decode() (core/server/msg.c).
 *
 * Input: byte 0 is the number of per-record rcs the request needs (0: any),
 * the rest is the reply body.  An accepted reply's packed records must add
 * up to the lengths it gives: walk them as clovis/cli_cluster.c does.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/server/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Reply *rp = NULL;
	uint64_t sum = 0;

	if (size < 1)
		return 0;
	if (msg_reply_decode(data + 1, size - 1, data[0], &rp) != 0)
		return 0;
	for (size_t i = 0; i < rp->n_klen; i++)
		sum += rp->klen[i];
	for (size_t i = 0; i < rp->n_vlen; i++)
		sum += rp->vlen[i];
	if (sum != rp->recs.len)
		abort();
	reply__free_unpacked(rp, NULL);
	return 0;
}
