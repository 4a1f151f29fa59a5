build2/tobj/tiers/file/file.o: tiers/file/file.c core/errors.h \
 clovis/clovis.h core/limits.h core/fault.h core/log.h tiers/file/file.h \
 tiers/tier.h tiers/tier_limits.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/fault.h:
core/log.h:
tiers/file/file.h:
tiers/tier.h:
tiers/tier_limits.h:
