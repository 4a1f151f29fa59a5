build2/obj/core/server/rdev.o: core/server/rdev.c core/engine.h \
 clovis/clovis.h core/alloc.h core/conf.h core/limits.h core/meta.h \
 layouts/layout.h tiers/tier.h tiers/tier_limits.h core/errors.h \
 core/log.h core/server/msg.h core/rpc/rpc.h \
 build2/gen/core/server/strata.pb-c.h core/server/peers.h core/clu_conf.h \
 core/server/rdev.h
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
core/server/msg.h:
core/rpc/rpc.h:
build2/gen/core/server/strata.pb-c.h:
core/server/peers.h:
core/clu_conf.h:
core/server/rdev.h:
