build2/tobj/gen/core/server/strata.pb-c.o: \
 build2/gen/core/server/strata.pb-c.c \
 build2/gen/core/server/strata.pb-c.h
build2/gen/core/server/strata.pb-c.h:
