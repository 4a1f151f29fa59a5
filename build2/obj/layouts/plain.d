build2/obj/layouts/plain.o: layouts/plain.c core/errors.h clovis/clovis.h \
 core/limits.h layouts/layout.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
layouts/layout.h:
