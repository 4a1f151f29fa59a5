build2/obj/dtm/dtm_msg.o: dtm/dtm_msg.c core/errors.h clovis/clovis.h \
 core/limits.h core/server/msg.h core/engine.h core/alloc.h core/conf.h \
 core/meta.h layouts/layout.h tiers/tier.h tiers/tier_limits.h \
 core/rpc/rpc.h build2/gen/core/server/strata.pb-c.h dtm/dtm_msg.h \
 dtm/dtm.h build2/gen/dtm/dtm.pb-c.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/server/msg.h:
core/engine.h:
core/alloc.h:
core/conf.h:
core/meta.h:
layouts/layout.h:
tiers/tier.h:
tiers/tier_limits.h:
core/rpc/rpc.h:
build2/gen/core/server/strata.pb-c.h:
dtm/dtm_msg.h:
dtm/dtm.h:
build2/gen/dtm/dtm.pb-c.h:
