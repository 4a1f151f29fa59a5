# clovis/ — the public client API, the strata CLI and examples.
LIB_SRCS += clovis/clovis.c clovis/op.c clovis/stats.c clovis/fdmi.c clovis/cli_fdmi.c
# Cluster mode: the client backend over the RPC layer (core/rpc).
LIB_SRCS += clovis/cli_cluster.c clovis/cli_units.c
# Function shipping: the registry and calls (docs/isc.md).
LIB_SRCS += clovis/isc.c
UT_SRCS += clovis/ut/clovis_ut.c clovis/ut/comp_ut.c clovis/ut/metanv_ut.c
# Suites moved from core/ut and dtm/ut because they drive the API (issue 27
# point 1): "store" (module store, stores moved and copied) and "dtm"
# (module dtm: the dtx API, embedded and, with STRATA_UT_CLUSTER, against a
# cluster, tests/integ/dtx_cluster_test.sh).
UT_SRCS += clovis/ut/store_ut.c clovis/ut/dtm_ut.c
# Suite "fdmi" (issue 31): the record log and its consumers, embedded.
UT_SRCS += clovis/ut/fdmi_ut.c
# Suite "isc_api" (issue 32): function shipping through the API, embedded
# and (STRATA_UT_CLUSTER) against a cluster.
UT_SRCS += clovis/ut/isc_api_ut.c
-include clovis/ut/module.mk
include clovis/cli/module.mk
include clovis/examples/module.mk
