build2/obj/core/stripe.o: core/stripe.c core/errors.h clovis/clovis.h \
 core/limits.h core/fault.h core/log.h core/stripe.h core/engine.h \
 core/alloc.h core/conf.h core/meta.h layouts/layout.h tiers/tier.h \
 tiers/tier_limits.h layouts/ec.h layouts/pdclust.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/fault.h:
core/log.h:
core/stripe.h:
core/engine.h:
core/alloc.h:
core/conf.h:
core/meta.h:
layouts/layout.h:
tiers/tier.h:
tiers/tier_limits.h:
layouts/ec.h:
layouts/pdclust.h:
