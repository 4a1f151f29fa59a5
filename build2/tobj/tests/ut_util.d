build2/tobj/tests/ut_util.o: tests/ut_util.c tests/ut.h
tests/ut.h:
