# addb/ — telemetry: the metrics catalog and the per-process shared-memory
# region (addb.c), the Prometheus text and JSON exposition (prom.c), the
# /metrics HTTP endpoint over libmicrohttpd (http.c), the trace records
# (trace.c).  See addb/README.md.
LIB_SRCS += addb/addb.c addb/trace.c addb/prom.c addb/http.c
UT_SRCS += addb/ut/addb_ut.c
