build2/tobj/dtm/hlc.o: dtm/hlc.c core/errors.h clovis/clovis.h \
 core/limits.h dtm/dtm.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
dtm/dtm.h:
