build2/obj/clovis/cli/cli_obj.o: clovis/cli/cli_obj.c clovis/cli/cli.h \
 clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
