build2/obj/clovis/cli/cli_bench.o: clovis/cli/cli_bench.c \
 clovis/cli/cli.h clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
