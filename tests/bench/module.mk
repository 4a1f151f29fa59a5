# tests/bench — strata_bench, linked with the release library, beside raw
# baselines (O_DIRECT file, LMDB); run by run-bench.sh (make bench).
TEST_BINS += $(BUILD)/strata_bench

$(BUILD)/strata_bench: $(BUILD)/obj/tests/bench/bench.o $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
