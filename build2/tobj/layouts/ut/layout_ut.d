build2/tobj/layouts/ut/layout_ut.o: layouts/ut/layout_ut.c \
 layouts/layout.h clovis/clovis.h tests/ut.h
layouts/layout.h:
clovis/clovis.h:
tests/ut.h:
