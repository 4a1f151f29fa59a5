build2/obj/clovis/examples/hello.o: clovis/examples/hello.c \
 clovis/clovis.h
clovis/clovis.h:
