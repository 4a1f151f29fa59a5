build2/tobj/tests/crash/crash_common.o: tests/crash/crash_common.c \
 tests/crash/crash.h clovis/clovis.h
tests/crash/crash.h:
clovis/clovis.h:
