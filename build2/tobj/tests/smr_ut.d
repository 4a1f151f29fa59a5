build2/tobj/tests/smr_ut.o: tests/smr_ut.c clovis/clovis.h tests/ut.h
clovis/clovis.h:
tests/ut.h:
