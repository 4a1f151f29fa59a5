# tests/ — the CUnit runner, integration, crash and concurrency tests.
UT_SRCS += tests/ut_util.c
TEST_BINS += $(BUILD)/ut_main

$(BUILD)/ut_main: $(BUILD)/tobj/tests/ut_main.o $(UT_OBJS) $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) $(TEST_LIBS) -lpthread

include tests/crash/module.mk
include tests/bench/module.mk
