build2/tobj/dtm/term.o: dtm/term.c core/errors.h clovis/clovis.h \
 core/limits.h dtm/dtm.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
dtm/dtm.h:
