build2/tobj/core/rpc/ut/rpc_ut.o: core/rpc/ut/rpc_ut.c core/errors.h \
 clovis/clovis.h core/limits.h core/rpc/rpc.h core/rpc/rpc_internal.h \
 build2/gen/core/rpc/rpc.pb-c.h tests/ut.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/rpc/rpc.h:
core/rpc/rpc_internal.h:
build2/gen/core/rpc/rpc.pb-c.h:
tests/ut.h:
