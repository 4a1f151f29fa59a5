/*
 * fuzz_srv_req.c — libFuzzer target: strata-server's request decoder
 * msg_req_decode() (core/server/msg.c), as srv_handle() runs it.
 *
 * Input: byte 0 picks the opcode (SOP_ENT + byte % (SOP_END - SOP_ENT + 1):
 * every request opcode and SOP_END, so that an unknown one is
 * tried too), bytes 1..4 the length of the call's bulk (little endian,
 * cut to 1 MiB), the rest is the request body.  When the decoder accepts a
 * request whose index records came as bulk, the records are bound as the
 * server does after pulling them (msg_req_recs_bind), from zeroed bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/server/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct msg_req m;
	uint32_t op, bulk;

	if (size < 5)
		return 0;
	op = SOP_ENT + data[0] % (SOP_END - SOP_ENT + 1u);
	bulk = (uint32_t)data[1] | (uint32_t)data[2] << 8 |
	       (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24;
	bulk &= (1u << 20) - 1;
	if (msg_req_decode(&m, op, data + 5, size - 5, bulk) == 0 &&
	    m.mr_op == SOP_IDX && m.mr_recs == NULL && m.mr_recs_len > 0) {
		m.mr_recs = calloc(1, m.mr_recs_len);
		if (m.mr_recs != NULL)
			msg_req_recs_bind(&m);
	}
	msg_req_fini(&m);
	return 0;
}
