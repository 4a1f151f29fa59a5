# clovis/ — the public client API, the strata CLI and examples.
LIB_SRCS += clovis/clovis.c clovis/op.c clovis/stats.c
# Cluster mode needs the RPC layer (core/rpc); until it has sources, a stub
# backend (cluster_none.c) answers -ENOTSUP.
ifneq ($(wildcard core/rpc/*.c),)
LIB_SRCS += clovis/cluster.c
else
LIB_SRCS += clovis/cluster_none.c
endif
UT_SRCS += clovis/ut/clovis_ut.c clovis/ut/comp_ut.c
-include clovis/ut/module.mk
include clovis/cli/module.mk
include clovis/examples/module.mk
