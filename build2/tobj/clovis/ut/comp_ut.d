build2/tobj/clovis/ut/comp_ut.o: clovis/ut/comp_ut.c clovis/clovis.h \
 tests/ut.h
clovis/clovis.h:
tests/ut.h:
