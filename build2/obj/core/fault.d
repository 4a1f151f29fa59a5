build2/obj/core/fault.o: core/fault.c
