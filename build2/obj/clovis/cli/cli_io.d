build2/obj/clovis/cli/cli_io.o: clovis/cli/cli_io.c clovis/cli/cli.h \
 clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
