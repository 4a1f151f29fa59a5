build2/tobj/core/server/srv.o: core/server/srv.c core/errors.h \
 clovis/clovis.h core/limits.h core/log.h core/server/rdev.h \
 core/clu_conf.h core/server/srv_internal.h core/server/msg.h \
 core/engine.h core/alloc.h core/conf.h core/meta.h layouts/layout.h \
 tiers/tier.h tiers/tier_limits.h core/rpc/rpc.h \
 build2/gen/core/server/strata.pb-c.h core/server/peers.h \
 core/server/srv.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
core/server/rdev.h:
core/clu_conf.h:
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
core/server/srv.h:
