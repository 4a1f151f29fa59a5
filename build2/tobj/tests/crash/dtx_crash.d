build2/tobj/tests/crash/dtx_crash.o: tests/crash/dtx_crash.c \
 clovis/clovis.h clovis/clovis_internal.h core/engine.h core/alloc.h \
 core/conf.h core/limits.h core/meta.h layouts/layout.h tiers/tier.h \
 tiers/tier_limits.h core/clu_conf.h dtm/dtm_msg.h core/rpc/rpc.h \
 dtm/dtm.h build2/gen/dtm/dtm.pb-c.h
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
core/clu_conf.h:
dtm/dtm_msg.h:
core/rpc/rpc.h:
dtm/dtm.h:
build2/gen/dtm/dtm.pb-c.h:
