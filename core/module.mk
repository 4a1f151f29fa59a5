# core/ — shared infrastructure and the per-node engine.
LIB_SRCS += core/errors.c core/types.c core/log.c core/fault.c core/alloc.c core/meta.c \
	core/engine.c core/store.c core/space.c core/commit.c core/dev.c \
	core/obj.c core/idx.c core/ent.c core/zone.c core/comp.c \
	core/layout.c core/plain.c core/fdmi_log.c
LIB_SRCS += core/meta_txn.c core/meta_repl.c
UT_SRCS += core/ut/core_ut.c core/ut/layout_ut.c core/ut/meta_txn_ut.c core/ut/repl_ut.c
LIB_SRCS += core/conf.c core/pg.c
UT_SRCS += core/ut/conf_ut.c core/ut/pg_ut.c
