# clovis/ — the public client API, the strata CLI and examples.
LIB_SRCS +=
UT_SRCS +=
