build2/obj/clovis/stats.o: clovis/stats.c clovis/clovis_internal.h \
 clovis/clovis.h core/engine.h core/alloc.h core/conf.h core/limits.h \
 core/meta.h layouts/layout.h tiers/tier.h tiers/tier_limits.h
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
