# core/server — strata-server (cluster mode): the cluster configuration,
# the engine-request protocol and its codecs (shared with the Clovis
# cluster client), the request handlers, and the daemon.
LIB_SRCS += core/clu_conf.c core/server/msg.c
PROTOS += core/server/strata.proto
SRV_OBJS := $(BUILD)/obj/core/server/server.o
# The server and the peer connections need the RPC layer (core/rpc).
ifneq ($(wildcard core/rpc/*.c),)
LIB_SRCS += core/server/peers.c core/server/srv.c core/server/srv_idx.c
BINS += $(BUILD)/strata-server
endif

$(BUILD)/strata-server: $(SRV_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
