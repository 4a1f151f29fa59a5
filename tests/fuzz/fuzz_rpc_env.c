/*
 * fuzz_rpc_env.c — libFuzzer target: the RPC envelope decoder (with its
 * nested RpcBulkDesc and RpcSeg).  A message the decoder accepts must
 * re-encode and decode again to the same kind, opcode, xid and bulk size.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/rpc/rpc_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	RpcEnvelope *e, *again;
	size_t len;
	void *buf;

	if (rpc_wire_env_decode(data, size, 1u << 20, &e) != 0)
		return 0;
	buf = rpc_wire_env_encode(e, &len);
	if (buf == NULL)
		abort();
	if (rpc_wire_env_decode(buf, len, 1u << 21, &again) != 0 ||
	    again->kind != e->kind || again->opcode != e->opcode ||
	    again->xid != e->xid ||
	    (e->bulk != NULL) != (again->bulk != NULL) ||
	    (e->bulk != NULL && e->bulk->len != again->bulk->len))
		abort();
	rpc_envelope__free_unpacked(again, NULL);
	rpc_envelope__free_unpacked(e, NULL);
	free(buf);
	return 0;
}
