# tests/ — the CUnit runner, integration, crash and concurrency tests.
UT_SRCS += tests/ut_util.c tests/stripe_ut.c tests/smr_ut.c
TEST_BINS += $(BUILD)/ut_main

include tests/crash/module.mk
include tests/bench/module.mk
include tests/sim/module.mk

# netns_client: the Clovis client of tests/integ/netns_test.sh (cluster
# mode, release library).
TEST_BINS += $(BUILD)/netns_client

$(BUILD)/netns_client: $(BUILD)/obj/tests/integ/netns_client.o $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# idx_client: the Clovis client of tests/integ/idx_race_test.sh (one index
# handle's incarnation against each replica).
TEST_BINS += $(BUILD)/idx_client

$(BUILD)/idx_client: $(BUILD)/obj/tests/integ/idx_client.o $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
