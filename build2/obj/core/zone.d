build2/obj/core/zone.o: core/zone.c core/engine.h clovis/clovis.h \
 core/alloc.h core/conf.h core/limits.h core/meta.h layouts/layout.h \
 tiers/tier.h tiers/tier_limits.h core/errors.h core/log.h
core/engine.h:
clovis/clovis.h:
core/alloc.h:
core/conf.h:
core/limits.h:
core/meta.h:
layouts/layout.h:
tiers/tier.h:
tiers/tier_limits.h:
core/errors.h:
core/log.h:
