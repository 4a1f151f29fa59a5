build2/obj/core/meta.o: core/meta.c core/errors.h clovis/clovis.h \
 core/limits.h core/log.h core/meta.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
core/meta.h:
