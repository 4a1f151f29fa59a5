build2/tobj/core/ut/conf_ut.o: core/ut/conf_ut.c core/conf.h \
 clovis/clovis.h core/errors.h core/limits.h tests/ut.h
core/conf.h:
clovis/clovis.h:
core/errors.h:
core/limits.h:
tests/ut.h:
