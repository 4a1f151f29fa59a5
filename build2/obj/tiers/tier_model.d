build2/obj/tiers/tier_model.o: tiers/tier_model.c core/log.h \
 tiers/tier_internal.h tiers/tier.h clovis/clovis.h core/limits.h \
 tiers/tier_limits.h
core/log.h:
tiers/tier_internal.h:
tiers/tier.h:
clovis/clovis.h:
core/limits.h:
tiers/tier_limits.h:
