# tests/crash — crash-consistency writer and checker (run by crash_test.sh),
# and the multi-threaded suite of the unit-test runner.
UT_SRCS += tests/concurrency_ut.c
TEST_BINS += $(BUILD)/crash_writer $(BUILD)/crash_check

CRASH_COMMON := $(BUILD)/tobj/tests/crash/crash_common.o

$(BUILD)/crash_writer: $(BUILD)/tobj/tests/crash/crash_writer.o $(CRASH_COMMON) $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

$(BUILD)/crash_check: $(BUILD)/tobj/tests/crash/crash_check.o $(CRASH_COMMON) $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# repair_crash: crash tests of repair and of the SMR cleaner (repair_crash.sh).
TEST_BINS += $(BUILD)/repair_crash

$(BUILD)/repair_crash: $(BUILD)/tobj/tests/crash/repair_crash.o $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
