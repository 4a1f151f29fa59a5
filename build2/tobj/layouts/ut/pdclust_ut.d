build2/tobj/layouts/ut/pdclust_ut.o: layouts/ut/pdclust_ut.c \
 core/errors.h clovis/clovis.h core/limits.h layouts/ec.h \
 layouts/pdclust.h tests/ut.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
layouts/ec.h:
layouts/pdclust.h:
tests/ut.h:
