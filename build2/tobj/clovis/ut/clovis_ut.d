build2/tobj/clovis/ut/clovis_ut.o: clovis/ut/clovis_ut.c clovis/clovis.h \
 core/fault.h tests/ut.h
clovis/clovis.h:
core/fault.h:
tests/ut.h:
