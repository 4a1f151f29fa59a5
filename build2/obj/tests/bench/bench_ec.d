build2/obj/tests/bench/bench_ec.o: tests/bench/bench_ec.c layouts/ec.h \
 tests/bench/bench.h clovis/clovis.h
layouts/ec.h:
tests/bench/bench.h:
clovis/clovis.h:
