build2/obj/tests/bench/bench_dtx.o: tests/bench/bench_dtx.c \
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
