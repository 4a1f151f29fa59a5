# dtm/ — distributed transactions: ids (node + hybrid logical clock), the
# commit protocol's records, and the client side of the Clovis dtx API
# (clovis/dtx.c) that drives them.
LIB_SRCS += dtm/hlc.c dtm/term.c clovis/dtx.c
UT_SRCS += dtm/ut/dtm_ut.c

# dtx_crash: embedded-mode bank transfers for tests/crash/dtx_crash.sh.
TEST_BINS += $(BUILD)/dtx_crash

$(BUILD)/dtx_crash: $(BUILD)/tobj/tests/crash/dtx_crash.o $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# strata_bench_dtx: dtx commit beside plain updates (tests/bench/run-bench.sh).
TEST_BINS += $(BUILD)/strata_bench_dtx

$(BUILD)/strata_bench_dtx: $(BUILD)/obj/tests/bench/bench_dtx.o $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
