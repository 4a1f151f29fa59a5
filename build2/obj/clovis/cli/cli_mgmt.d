build2/obj/clovis/cli/cli_mgmt.o: clovis/cli/cli_mgmt.c clovis/cli/cli.h \
 clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
