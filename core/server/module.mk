# core/server — strata-server (cluster mode): the cluster configuration,
# the engine-request protocol and its codecs (shared with the Clovis
# cluster client), the request handlers, and the daemon.
LIB_SRCS += core/clu_conf.c core/server/msg.c core/server/peers.c \
	core/server/srv.c core/server/srv_idx.c core/server/srv_idx_ver.c \
	core/server/srv_idx_sync.c core/server/srv_idx_tomb.c \
	core/server/srv_idx_fan.c core/server/srv_idx_syncer.c \
	core/server/cli_rdev.c \
	core/server/srv_rdev.c core/server/srv_zc.c core/server/srv_dev.c \
	core/server/srv_repl.c core/server/srv_cstats.c \
	core/server/srv_layer.c core/server/srv_isc.c \
	core/server/srv_units.c
PROTOS += core/server/strata.proto
SRV_OBJS := $(BUILD)/obj/core/server/server.o
BINS += $(BUILD)/strata-server
# Suite "server": malformed requests against a real strata-server; suite
# "peers": the peer tables across a server's restart.
UT_SRCS += core/server/ut/srv_ut.c core/server/ut/peers_ut.c

$(BUILD)/strata-server: $(SRV_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
