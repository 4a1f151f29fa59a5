build2/obj/clovis/cli/cli_layout.o: clovis/cli/cli_layout.c \
 clovis/cli/cli.h clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
