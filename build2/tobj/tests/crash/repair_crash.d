build2/tobj/tests/crash/repair_crash.o: tests/crash/repair_crash.c \
 clovis/clovis.h
clovis/clovis.h:
