# clovis/ — the public client API, the strata CLI and examples.
LIB_SRCS += clovis/clovis.c clovis/op.c clovis/stats.c
# Cluster mode: the client backend over the RPC layer (core/rpc).
LIB_SRCS += clovis/cluster.c
UT_SRCS += clovis/ut/clovis_ut.c clovis/ut/comp_ut.c clovis/ut/metanv_ut.c
-include clovis/ut/module.mk
include clovis/cli/module.mk
include clovis/examples/module.mk
