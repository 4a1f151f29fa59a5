/*
 * fuzz_rpc_welcome.c — libFuzzer target: the decoder of the handshake message
 * RpcWelcome (core/rpc/rpc.proto), as the receiving side runs it.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/rpc/rpc_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	RpcWelcome *m;

	if (rpc_wire_welcome_decode(data, size, &m) != 0)
		return 0;
	rpc_welcome__free_unpacked(m, NULL);
	return 0;
}
