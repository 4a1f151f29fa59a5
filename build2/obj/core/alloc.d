build2/obj/core/alloc.o: core/alloc.c core/alloc.h core/errors.h \
 clovis/clovis.h core/limits.h core/log.h
core/alloc.h:
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
