build2/obj/clovis/cli/cli_dtx.o: clovis/cli/cli_dtx.c clovis/cli/cli.h \
 clovis/clovis.h clovis/clovis_internal.h core/engine.h core/alloc.h \
 core/conf.h core/limits.h core/meta.h layouts/layout.h tiers/tier.h \
 tiers/tier_limits.h dtm/dtm_msg.h core/rpc/rpc.h dtm/dtm.h \
 build2/gen/dtm/dtm.pb-c.h
clovis/cli/cli.h:
clovis/clovis.h:
clovis/clovis_internal.h:
core/engine.h:
core/alloc.h:
core/conf.h:
core/limits.h:
core/meta.h:
layouts/layout.h:
tiers/tier.h:
tiers/tier_limits.h:
dtm/dtm_msg.h:
core/rpc/rpc.h:
dtm/dtm.h:
build2/gen/dtm/dtm.pb-c.h:
