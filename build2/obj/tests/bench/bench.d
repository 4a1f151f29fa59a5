build2/obj/tests/bench/bench.o: tests/bench/bench.c tests/bench/bench.h \
 clovis/clovis.h
tests/bench/bench.h:
clovis/clovis.h:
