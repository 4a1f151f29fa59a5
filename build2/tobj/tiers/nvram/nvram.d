build2/tobj/tiers/nvram/nvram.o: tiers/nvram/nvram.c core/errors.h \
 clovis/clovis.h core/limits.h core/fault.h core/log.h tiers/tier.h \
 tiers/tier_limits.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/fault.h:
core/log.h:
tiers/tier.h:
tiers/tier_limits.h:
