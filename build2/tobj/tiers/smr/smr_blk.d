build2/tobj/tiers/smr/smr_blk.o: tiers/smr/smr_blk.c core/errors.h \
 clovis/clovis.h core/limits.h core/log.h tiers/smr/smr_internal.h \
 tiers/file/file.h tiers/tier.h tiers/tier_limits.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
tiers/smr/smr_internal.h:
tiers/file/file.h:
tiers/tier.h:
tiers/tier_limits.h:
