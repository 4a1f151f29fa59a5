build2/tobj/tiers/ut/tier_ut.o: tiers/ut/tier_ut.c core/errors.h \
 clovis/clovis.h core/limits.h core/fault.h tests/ut.h tiers/tier.h \
 tiers/tier_limits.h tiers/ut/tier_ut.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/fault.h:
tests/ut.h:
tiers/tier.h:
tiers/tier_limits.h:
tiers/ut/tier_ut.h:
