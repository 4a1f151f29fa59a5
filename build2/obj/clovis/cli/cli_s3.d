build2/obj/clovis/cli/cli_s3.o: clovis/cli/cli_s3.c clovis/cli/cli.h \
 clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
