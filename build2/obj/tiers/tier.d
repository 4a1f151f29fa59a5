build2/obj/tiers/tier.o: tiers/tier.c core/errors.h clovis/clovis.h \
 core/limits.h core/fault.h core/log.h tiers/tier_internal.h tiers/tier.h \
 tiers/tier_limits.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/fault.h:
core/log.h:
tiers/tier_internal.h:
tiers/tier.h:
tiers/tier_limits.h:
