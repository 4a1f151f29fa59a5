# core/server — strata-server (cluster mode): the cluster configuration,
# the engine-request protocol and its codecs (shared with the Clovis
# cluster client), the request handlers, and the daemon.
LIB_SRCS += core/clu_conf.c core/server/msg.c
PROTOS += core/server/strata.proto
SRV_OBJS := $(BUILD)/obj/core/server/server.o
#BINS += $(BUILD)/strata-server (once server.c exists)

$(BUILD)/strata-server: $(SRV_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
