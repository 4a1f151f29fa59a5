# core/ — shared infrastructure and the per-node engine.
LIB_SRCS += core/errors.c core/log.c core/fault.c
UT_SRCS +=
