# tests/sim — strata-sim, the placement simulation of issue 28 (the real
# core/pg.c and layouts/pdclust.c over maps of thousands of servers, no
# I/O): run small by make check (tests/steps.list, --check), full size by
# make bench (tests/bench/run-bench.sh).
TEST_BINS += $(BUILD)/strata-sim

$(BUILD)/strata-sim: $(BUILD)/obj/tests/sim/strata_sim.o $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread -lm
