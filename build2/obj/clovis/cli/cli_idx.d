build2/obj/clovis/cli/cli_idx.o: clovis/cli/cli_idx.c clovis/cli/cli.h \
 clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
