# ha/ — high availability (issue 28): the shared types (ha.h), the cluster
# map in etcd, the event analyzer.  See ha/README.md.
LIB_SRCS += ha/ha.c ha/etcd.c ha/map.c ha/etcd_proc.c
UT_SRCS += ha/ut/etcd_ut.c
# The event analyzer (pure decide, apply, replay) and the JSON codec of
# events, decisions and the replay file (json-c).
LIB_SRCS += ha/analyzer.c ha/ha_json.c
UT_SRCS += ha/ut/analyzer_ut.c
# The HA agent of a server (a server module: map, epoch gate, lease and
# fence, probes, the HA opcode) and the analyzer's leader.
LIB_SRCS += ha/srv_ha.c ha/ha_lead.c ha/srv_home.c
PROTOS += ha/ha.proto
