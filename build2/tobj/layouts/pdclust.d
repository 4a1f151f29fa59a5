build2/tobj/layouts/pdclust.o: layouts/pdclust.c core/errors.h \
 clovis/clovis.h core/limits.h core/log.h layouts/layout.h \
 layouts/pdclust.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/log.h:
layouts/layout.h:
layouts/pdclust.h:
