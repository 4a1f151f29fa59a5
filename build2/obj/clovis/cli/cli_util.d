build2/obj/clovis/cli/cli_util.o: clovis/cli/cli_util.c clovis/cli/cli.h \
 clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
