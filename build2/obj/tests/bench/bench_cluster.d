build2/obj/tests/bench/bench_cluster.o: tests/bench/bench_cluster.c \
 clovis/clovis.h tests/bench/bench_fi.h
clovis/clovis.h:
tests/bench/bench_fi.h:
