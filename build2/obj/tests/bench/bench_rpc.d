build2/obj/tests/bench/bench_rpc.o: tests/bench/bench_rpc.c core/errors.h \
 clovis/clovis.h core/limits.h core/rpc/rpc.h tests/bench/bench_fi.h
core/errors.h:
clovis/clovis.h:
core/limits.h:
core/rpc/rpc.h:
tests/bench/bench_fi.h:
