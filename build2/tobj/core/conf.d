build2/tobj/core/conf.o: core/conf.c core/conf.h clovis/clovis.h \
 core/errors.h core/limits.h core/log.h
core/conf.h:
clovis/clovis.h:
core/errors.h:
core/limits.h:
core/log.h:
