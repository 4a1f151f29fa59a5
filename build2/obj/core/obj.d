build2/obj/core/obj.o: core/obj.c core/engine.h clovis/clovis.h \
 core/alloc.h core/conf.h core/limits.h core/meta.h layouts/layout.h \
 tiers/tier.h tiers/tier_limits.h core/errors.h core/fault.h core/log.h \
 core/stripe.h
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
core/fault.h:
core/log.h:
core/stripe.h:
