# tests/ — the CUnit runner, integration, crash and concurrency tests.
UT_SRCS += tests/ut_util.c tests/stripe_ut.c tests/smr_ut.c
TEST_BINS += $(BUILD)/ut_main

include tests/crash/module.mk
include tests/bench/module.mk
