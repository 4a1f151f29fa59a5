build2/obj/clovis/cli/cli_walk.o: clovis/cli/cli_walk.c clovis/cli/cli.h \
 clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
