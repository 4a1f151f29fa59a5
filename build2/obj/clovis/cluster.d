build2/obj/clovis/cluster.o: clovis/cluster.c clovis/clovis_internal.h \
 clovis/clovis.h core/engine.h core/alloc.h core/conf.h core/limits.h \
 core/meta.h layouts/layout.h tiers/tier.h tiers/tier_limits.h \
 core/clu_conf.h core/errors.h core/log.h core/server/msg.h \
 core/rpc/rpc.h build2/gen/core/server/strata.pb-c.h core/server/peers.h
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
core/clu_conf.h:
core/errors.h:
core/log.h:
core/server/msg.h:
core/rpc/rpc.h:
build2/gen/core/server/strata.pb-c.h:
core/server/peers.h:
