build2/tobj/tests/stripe_ut.o: tests/stripe_ut.c clovis/clovis.h \
 core/fault.h core/limits.h layouts/pdclust.h tests/ut.h
clovis/clovis.h:
core/fault.h:
core/limits.h:
layouts/pdclust.h:
tests/ut.h:
