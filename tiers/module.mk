# tiers/ — device drivers behind one interface (tier.h).
LIB_SRCS += tiers/tier.c tiers/file/file.c tiers/nvram/nvram.c
UT_SRCS += tiers/ut/tier_ut.c
