build2/tobj/core/fault.o: core/fault.c core/fault.h
core/fault.h:
