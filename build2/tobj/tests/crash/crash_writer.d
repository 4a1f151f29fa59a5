build2/tobj/tests/crash/crash_writer.o: tests/crash/crash_writer.c \
 tests/crash/crash.h clovis/clovis.h
tests/crash/crash.h:
clovis/clovis.h:
