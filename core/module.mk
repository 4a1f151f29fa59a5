# core/ — shared infrastructure and the per-node engine.
LIB_SRCS += core/errors.c core/types.c core/log.c core/fault.c core/alloc.c core/meta.c \
	core/engine.c core/store.c core/space.c core/commit.c core/dev.c \
	core/obj.c core/idx.c core/ent.c core/stripe.c core/stripe_read.c \
	core/stripe_write.c core/stripe_walk.c core/zone.c core/comp.c
UT_SRCS += core/ut/core_ut.c
LIB_SRCS += core/conf.c
UT_SRCS += core/ut/conf_ut.c
