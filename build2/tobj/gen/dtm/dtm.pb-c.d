build2/tobj/gen/dtm/dtm.pb-c.o: build2/gen/dtm/dtm.pb-c.c \
 build2/gen/dtm/dtm.pb-c.h
build2/gen/dtm/dtm.pb-c.h:
