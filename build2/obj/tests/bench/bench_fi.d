build2/obj/tests/bench/bench_fi.o: tests/bench/bench_fi.c \
 tests/bench/bench_fi.h
tests/bench/bench_fi.h:
