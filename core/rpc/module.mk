# core/rpc — RPC over libfabric with protobuf-c messages (README.md).
# rpc.proto is compiled by protoc-c into $(BUILD)/gen (rule in Makefile).
PROTOS += core/rpc/rpc.proto
LIB_SRCS += core/rpc/ep.c core/rpc/wire.c core/rpc/auth.c core/rpc/srv.c \
	core/rpc/cli.c core/rpc/pool.c
UT_SRCS += core/rpc/ut/rpc_ut.c
