build2/obj/tiers/tier_ioq.o: tiers/tier_ioq.c core/errors.h \
 clovis/clovis.h core/limits.h core/log.h tiers/tier_internal.h \
 tiers/tier.h tiers/tier_limits.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
tiers/tier_internal.h:
tiers/tier.h:
tiers/tier_limits.h:
