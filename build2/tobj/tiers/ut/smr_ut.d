build2/tobj/tiers/ut/smr_ut.o: tiers/ut/smr_ut.c core/errors.h \
 clovis/clovis.h core/limits.h core/fault.h tiers/tier.h \
 tiers/tier_limits.h tiers/ut/tier_ut.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/fault.h:
tiers/tier.h:
tiers/tier_limits.h:
tiers/ut/tier_ut.h:
