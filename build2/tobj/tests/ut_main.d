build2/tobj/tests/ut_main.o: tests/ut_main.c tests/ut.h
tests/ut.h:
