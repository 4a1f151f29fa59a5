build2/obj/clovis/cli/cli_cluster.o: clovis/cli/cli_cluster.c \
 clovis/cli/cli.h clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
