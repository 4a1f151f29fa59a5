build2/obj/layouts/layout.o: layouts/layout.c core/errors.h \
 clovis/clovis.h core/limits.h layouts/layout.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
layouts/layout.h:
