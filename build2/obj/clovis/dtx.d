build2/obj/clovis/dtx.o: clovis/dtx.c clovis/clovis_internal.h \
 clovis/clovis.h core/engine.h core/alloc.h core/conf.h core/limits.h \
 core/meta.h layouts/layout.h tiers/tier.h tiers/tier_limits.h \
 core/errors.h core/fault.h core/log.h core/stripe.h dtm/dtm.h \
 dtm/dtm_msg.h core/rpc/rpc.h build2/gen/dtm/dtm.pb-c.h
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
core/fault.h:
core/log.h:
core/stripe.h:
dtm/dtm.h:
dtm/dtm_msg.h:
core/rpc/rpc.h:
build2/gen/dtm/dtm.pb-c.h:
