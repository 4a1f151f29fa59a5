build2/tobj/layouts/ec.o: layouts/ec.c core/errors.h clovis/clovis.h \
 core/limits.h core/log.h layouts/ec.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
layouts/ec.h:
