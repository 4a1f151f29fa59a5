/*
 * fuzz_rpc_challenge.c — libFuzzer target: the decoder of the handshake message
 * RpcChallenge (core/rpc/rpc.proto), as the receiving side runs it.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/rpc/rpc_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	RpcChallenge *m;

	if (rpc_wire_challenge_decode(data, size, &m) != 0)
		return 0;
	rpc_challenge__free_unpacked(m, NULL);
	return 0;
}
