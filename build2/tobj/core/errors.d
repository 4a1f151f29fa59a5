build2/tobj/core/errors.o: core/errors.c core/errors.h clovis/clovis.h \
 core/limits.h core/log.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
