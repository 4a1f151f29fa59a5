build2/obj/core/rpc/srv.o: core/rpc/srv.c core/errors.h clovis/clovis.h \
 core/limits.h core/log.h core/rpc/rpc_internal.h core/rpc/rpc.h \
 build2/gen/core/rpc/rpc.pb-c.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
core/rpc/rpc_internal.h:
core/rpc/rpc.h:
build2/gen/core/rpc/rpc.pb-c.h:
