build2/obj/clovis/cli/cli_dev.o: clovis/cli/cli_dev.c clovis/cli/cli.h \
 clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
