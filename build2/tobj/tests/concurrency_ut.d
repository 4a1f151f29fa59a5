build2/tobj/tests/concurrency_ut.o: tests/concurrency_ut.c \
 clovis/clovis.h tests/ut.h
clovis/clovis.h:
tests/ut.h:
