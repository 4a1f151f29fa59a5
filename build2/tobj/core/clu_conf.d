build2/tobj/core/clu_conf.o: core/clu_conf.c core/clu_conf.h \
 clovis/clovis.h core/conf.h core/errors.h core/limits.h
core/clu_conf.h:
clovis/clovis.h:
core/conf.h:
core/errors.h:
core/limits.h:
