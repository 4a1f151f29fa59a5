build2/obj/core/server/peers.o: core/server/peers.c core/errors.h \
 clovis/clovis.h core/limits.h core/log.h core/server/peers.h \
 core/clu_conf.h core/rpc/rpc.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
core/server/peers.h:
core/clu_conf.h:
core/rpc/rpc.h:
