build2/tobj/gen/core/rpc/rpc.pb-c.o: build2/gen/core/rpc/rpc.pb-c.c \
 build2/gen/core/rpc/rpc.pb-c.h
build2/gen/core/rpc/rpc.pb-c.h:
