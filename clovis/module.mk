# clovis/ — the public client API, the strata CLI and examples.
LIB_SRCS +=
UT_SRCS +=
include clovis/cli/module.mk
include clovis/examples/module.mk
