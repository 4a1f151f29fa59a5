build2/tobj/core/server/srv_dtx.o: core/server/srv_dtx.c core/errors.h \
 clovis/clovis.h core/limits.h core/fault.h core/log.h \
 core/server/srv_internal.h core/server/msg.h core/engine.h core/alloc.h \
 core/conf.h core/meta.h layouts/layout.h tiers/tier.h \
 tiers/tier_limits.h core/rpc/rpc.h build2/gen/core/server/strata.pb-c.h \
 core/server/peers.h core/clu_conf.h core/server/srv.h dtm/dtm_msg.h \
 dtm/dtm.h build2/gen/dtm/dtm.pb-c.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/fault.h:
core/log.h:
core/server/srv_internal.h:
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
core/server/peers.h:
core/clu_conf.h:
core/server/srv.h:
dtm/dtm_msg.h:
dtm/dtm.h:
build2/gen/dtm/dtm.pb-c.h:
