build2/tobj/tests/crash/crash_check.o: tests/crash/crash_check.c \
 tests/crash/crash.h clovis/clovis.h
tests/crash/crash.h:
clovis/clovis.h:
