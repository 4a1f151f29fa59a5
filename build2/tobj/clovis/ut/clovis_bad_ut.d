build2/tobj/clovis/ut/clovis_bad_ut.o: clovis/ut/clovis_bad_ut.c \
 clovis/clovis.h tests/ut.h
clovis/clovis.h:
tests/ut.h:
