build2/tobj/core/ut/core_ut.o: core/ut/core_ut.c core/alloc.h \
 core/engine.h clovis/clovis.h core/conf.h core/limits.h core/meta.h \
 layouts/layout.h tiers/tier.h tiers/tier_limits.h core/errors.h \
 core/fault.h tests/ut.h
core/alloc.h:
core/engine.h:
clovis/clovis.h:
core/conf.h:
core/limits.h:
core/meta.h:
layouts/layout.h:
tiers/tier.h:
tiers/tier_limits.h:
core/errors.h:
core/fault.h:
tests/ut.h:
