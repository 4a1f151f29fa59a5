# tiers/ — device drivers behind one interface (tier.h).
LIB_SRCS += tiers/tier.c tiers/tier_model.c tiers/tier_ioq.c \
	tiers/file/file.c tiers/nvram/nvram.c tiers/smr/smr.c tiers/smr/smr_blk.c
UT_SRCS += tiers/ut/tier_ut.c tiers/ut/smr_ut.c tiers/ut/io_ut.c
