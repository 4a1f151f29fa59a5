# dtm/ — distributed transactions: ids (node + hybrid logical clock), the
# protocol and its records, the client half (cli_dtx.c, the coordinator),
# the server half (srv_dtx.c, the participant) and the local half
# (loc_dtx.c, embedded mode's atomic commit); and the Clovis dtx API
# (clovis/dtx.c) that drives them.
LIB_SRCS += dtm/hlc.c dtm/term.c dtm/dtm_msg.c dtm/cli_dtx.c dtm/loc_dtx.c \
	dtm/srv_dtx.c clovis/dtx.c
PROTOS += dtm/dtm.proto
# The "dtm" suite drives the Clovis dtx API, so it lives in clovis/ut
# (clovis/ut/dtm_ut.c, clovis/module.mk; issue 27 point 1); its suite
# "dtm_core" (dtm without the API) is here and runs with it.
UT_SRCS += dtm/ut/dtm_ut.c

# dtx_crash: embedded-mode bank transfers for tests/crash/dtx_crash.sh.
TEST_BINS += $(BUILD)/dtx_crash

$(BUILD)/dtx_crash: $(BUILD)/tobj/tests/crash/dtx_crash.o $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# dtx_units: a pdclust member and entity members in cluster dtxs, for the
# crash rounds of tests/integ/dtx_cluster_test.sh.
TEST_BINS += $(BUILD)/dtx_units

$(BUILD)/dtx_units: $(BUILD)/tobj/tests/crash/dtx_units.o $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# strata_bench_dtx: dtx commit beside plain updates (tests/bench/run-bench.sh).
TEST_BINS += $(BUILD)/strata_bench_dtx

$(BUILD)/strata_bench_dtx: $(BUILD)/obj/tests/bench/bench_dtx.o $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# strata-server-test: the server built with fault points (dtx_cluster_test.sh
# arms them with STRATA_FAULT).
TEST_BINS += $(BUILD)/strata-server-test

$(BUILD)/strata-server-test: $(BUILD)/tobj/core/server/server.o $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
