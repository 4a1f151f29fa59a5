build2/tobj/core/alloc.o: core/alloc.c core/alloc.h core/errors.h \
 clovis/clovis.h core/limits.h core/log.h
core/alloc.h:
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
