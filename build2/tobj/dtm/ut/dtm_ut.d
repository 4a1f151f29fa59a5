build2/tobj/dtm/ut/dtm_ut.o: dtm/ut/dtm_ut.c clovis/clovis.h core/fault.h \
 core/limits.h core/server/msg.h core/engine.h core/alloc.h core/conf.h \
 core/meta.h layouts/layout.h tiers/tier.h tiers/tier_limits.h \
 core/rpc/rpc.h build2/gen/core/server/strata.pb-c.h dtm/dtm.h \
 dtm/dtm_msg.h build2/gen/dtm/dtm.pb-c.h tests/ut.h
clovis/clovis.h:
core/fault.h:
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
dtm/dtm.h:
dtm/dtm_msg.h:
build2/gen/dtm/dtm.pb-c.h:
tests/ut.h:
