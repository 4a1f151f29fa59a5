# tests/bench — strata_bench, linked with the release library, beside raw
# baselines (O_DIRECT files, raw ISA-L, LMDB); run by run-bench.sh (make
# bench).  bench.c: issue-2 figures and main; bench_ec.c: pdclust writes,
# degraded reads, repair; bench_tier.c: per-tier figures, model off and on.
TEST_BINS += $(BUILD)/strata_bench

BENCH_OBJS := $(addprefix $(BUILD)/obj/tests/bench/,bench.o bench_ec.o bench_tier.o)

$(BUILD)/strata_bench: $(BENCH_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
TEST_BINS += $(BUILD)/strata_bench_rpc  # bench_rpc.c: RPC vs raw libfabric (issue 4)
$(BUILD)/strata_bench_rpc: $(BUILD)/obj/tests/bench/bench_rpc.o $(BUILD)/obj/tests/bench/bench_fi.o $(BUILD)/libstrata.a ; $(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
TEST_BINS += $(BUILD)/strata_bench_cluster  # bench_cluster.c: 3-server loopback cluster (issue 4)
$(BUILD)/strata_bench_cluster: $(BUILD)/obj/tests/bench/bench_cluster.o $(BUILD)/obj/tests/bench/bench_fi.o $(BUILD)/libstrata.a ; $(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
TEST_BINS += $(BUILD)/bench_s3_put  # bench_s3_put.c: low-CPU HTTP client of bench_s3.py (issue 6)
$(BUILD)/bench_s3_put: $(BUILD)/obj/tests/bench/bench_s3_put.o ; $(CC) $(LDFLAGS_ALL) -o $@ $^ -lpthread
TEST_BINS += $(BUILD)/bench_s3_sum  # bench_s3_sum.c: one core's MD5 / CRC64-NVMe / CRC32C rate for bench_s3.py
$(BUILD)/bench_s3_sum: $(BUILD)/obj/tests/bench/bench_s3_sum.o $(BUILD)/obj/gateways/s3/s3_sum.o $(BUILD)/obj/gateways/s3/s3_util.o
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
TEST_BINS += $(BUILD)/bench_s3_direct  # bench_s3_direct.c: direct-Clovis named-object writers, bench_s3.py's baseline (issue 6)
$(BUILD)/bench_s3_direct: $(BUILD)/obj/tests/bench/bench_s3_direct.o $(BUILD)/libstrata.a ; $(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# bench_addb.c: the cost of telemetry (issue 30): strata_bench_addb (the
# release library, metrics on) beside strata_bench_addb_off, the same
# program on a library whose every object is built with -DSTRATA_NO_ADDB
# ($(BUILD)/nobj; made by `make bench` only, not by `make tests`).
# addb_instr.sh (run-bench.sh): the same two programs' instructions per
# op under valgrind's callgrind (bench_addb.c --one --ops N --phase P).
TEST_BINS += $(BUILD)/strata_bench_addb
$(BUILD)/strata_bench_addb: $(BUILD)/obj/tests/bench/bench_addb.o $(BUILD)/libstrata.a ; $(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
NLIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/nobj/%.o) $(PROTOS:%.proto=$(BUILD)/nobj/gen/%.pb-c.o)
$(BUILD)/nobj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -DSTRATA_NO_ADDB -MMD -MP -c $< -o $@
$(BUILD)/nobj/%.o: %.c | $(PROTO_HS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -DSTRATA_NO_ADDB -MMD -MP -c $< -o $@
$(BUILD)/libstrata-noaddb.a: $(NLIB_OBJS)
	ar rcs $@ $^
$(BUILD)/strata_bench_addb_off: $(BUILD)/obj/tests/bench/bench_addb.o $(BUILD)/libstrata-noaddb.a ; $(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# bench_fdmi.c: the cost of FDMI on the write path with 0, 1 and 3
# consumers beside FDMI off, record delivery to one consumer and the
# end-to-end lag (issue 31); alternated rounds, each side a fresh store.
TEST_BINS += $(BUILD)/strata_bench_fdmi
$(BUILD)/strata_bench_fdmi: $(BUILD)/obj/tests/bench/bench_fdmi.o $(BUILD)/libstrata.a ; $(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# bench_hsm.c: the time to promote a 1 GiB working set sas -> flash with
# the HSM engine (fdmi/hsm/hsm.c, one round) beside a plain Clovis copy of
# the same bytes, and the working set's read latency before and after,
# device model on (issue 31); 30 to 45 s.
TEST_BINS += $(BUILD)/strata_bench_hsm
$(BUILD)/strata_bench_hsm: $(BUILD)/obj/tests/bench/bench_hsm.o $(BUILD)/obj/fdmi/hsm/hsm.o $(BUILD)/obj/fdmi/hsm/hsm_policy.o $(BUILD)/obj/fdmi/plugin/plugin.o $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(shell pkg-config --libs sqlite3 2>/dev/null) $(PKG_LIBS) -lpthread

# bench_isc.c: function shipping (issue 32) on a 3-server loopback cluster
# it starts itself: min/max/mean/histogram of a container of float64
# objects shipped (declarative, Lua) beside reading everything to the
# client; wall time, bytes over the network, client CPU.
TEST_BINS += $(BUILD)/strata_bench_isc
$(BUILD)/strata_bench_isc: $(BUILD)/obj/tests/bench/bench_isc.o $(BUILD)/libstrata.a ; $(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread -lm

# bench_posix.c: the C parts of the POSIX view's benchmark (issue 33,
# tests/bench/bench_posix.py): direct Clovis figures, mdtest-style rates
# through system calls and through the namespace library.
TEST_BINS += $(BUILD)/strata_bench_posix
$(BUILD)/strata_bench_posix: $(BUILD)/obj/tests/bench/bench_posix.o $(BUILD)/obj/gateways/posix/ns.o $(BUILD)/obj/gateways/posix/ns_io.o $(BUILD)/obj/gateways/posix/ns_xattr.o $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# bench_pyc.c: the C baseline of the Python binding's benchmark (issue 34,
# tests/bench/bench_python.py): 4 KiB reads, one in flight, through the
# shared library as the binding calls it (rpath: the build directory);
# bench_pyc.so: the same read, one call per read, for a ctypes loop.
TEST_BINS += $(BUILD)/bench_pyc $(BUILD)/bench_pyc.so
$(BUILD)/obj/tests/bench/bench_pyc.o: | $(BUILD)/include/strata/clovis.h
$(BUILD)/bench_pyc: $(BUILD)/obj/tests/bench/bench_pyc.o $(BUILD)/libstrata.so $(BUILD)/libstrata.so.0 ; $(CC) $(LDFLAGS_ALL) -o $@ $< -L$(BUILD) -lstrata -Wl,-rpath,'$$ORIGIN'
$(BUILD)/bench_pyc.so: $(BUILD)/obj/tests/bench/bench_pyc.o $(BUILD)/libstrata.so $(BUILD)/libstrata.so.0 ; $(CC) $(LDFLAGS_ALL) -shared -o $@ $< -L$(BUILD) -lstrata -Wl,-rpath,'$$ORIGIN'
