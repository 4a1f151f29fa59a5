build2/obj/clovis/cli/strata.o: clovis/cli/strata.c clovis/cli/cli.h \
 clovis/clovis.h
clovis/cli/cli.h:
clovis/clovis.h:
