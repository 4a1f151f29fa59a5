build2/tobj/core/rpc/wire.o: core/rpc/wire.c core/errors.h \
 clovis/clovis.h core/limits.h core/rpc/rpc_internal.h core/rpc/rpc.h \
 build2/gen/core/rpc/rpc.pb-c.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/rpc/rpc_internal.h:
core/rpc/rpc.h:
build2/gen/core/rpc/rpc.pb-c.h:
