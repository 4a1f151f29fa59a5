build2/obj/tests/bench/bench_tier.o: tests/bench/bench_tier.c \
 tests/bench/bench.h clovis/clovis.h tiers/tier.h core/limits.h \
 tiers/tier_limits.h
tests/bench/bench.h:
clovis/clovis.h:
tiers/tier.h:
core/limits.h:
tiers/tier_limits.h:
