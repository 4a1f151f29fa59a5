build2/tobj/clovis/clovis.o: clovis/clovis.c clovis/clovis_internal.h \
 clovis/clovis.h core/engine.h core/alloc.h core/conf.h core/limits.h \
 core/meta.h layouts/layout.h tiers/tier.h tiers/tier_limits.h \
 core/errors.h core/stripe.h core/server/msg.h core/rpc/rpc.h \
 build2/gen/core/server/strata.pb-c.h core/log.h
clovis/clovis_internal.h:
clovis/clovis.h:
core/engine.h:
core/alloc.h:
core/conf.h:
core/limits.h:
core/meta.h:
layouts/layout.h:
tiers/tier.h:
tiers/tier_limits.h:
core/errors.h:
core/stripe.h:
core/server/msg.h:
core/rpc/rpc.h:
build2/gen/core/server/strata.pb-c.h:
core/log.h:
