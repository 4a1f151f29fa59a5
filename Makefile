# Strata — one non-recursive GNU Makefile; each folder adds its parts in its
# module.mk.  Out-of-tree build into $(BUILD) (build/, or build-$(SAN)/).
#
#   make            library (shared + static), strata CLI, examples
#   make deps       install missing Debian packages (apt-get), quiet if none
#   make check      deps + build + every test; ends with "N passed, N failed"
#   make run        deps + build + the embedded demo (scripts/run-demo.sh)
#   make bench      deps + build + benchmarks (tests/bench/)
#   make SAN=asan|ubsan|tsan ...   sanitizer build in build-$(SAN)/
#   make install [PREFIX=/usr/local] [DESTDIR=]   header, libraries,
#                   strata.pc for PREFIX, strata, strata-server, strata-s3
#   make uninstall [PREFIX=...]   remove what install put there
#   make coverage   gcov build and report of the unit tests
.DEFAULT_GOAL := all
SHELL := /bin/bash

SAN ?=
COV ?=
BUILD ?= build$(if $(SAN),-$(SAN))$(if $(COV),-cov)
PREFIX ?= /usr/local
VERSION := 0.1.0

PKGS := lmdb libpmem2 libisal liburcu yaml-0.1 libprotobuf-c libfabric libcrypto \
	json-c libcurl libmicrohttpd lua5.4
TEST_PKGS := cunit
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) $(TEST_PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
TEST_LIBS = $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)

OPT ?= -O2
CFLAGS_WARN := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2
CFLAGS_SAN_asan := -fsanitize=address -fno-omit-frame-pointer
CFLAGS_SAN_ubsan := -fsanitize=undefined -fno-sanitize-recover=all
CFLAGS_SAN_tsan := -fsanitize=thread
SANFLAGS := $(CFLAGS_SAN_$(SAN))$(if $(COV), --coverage)
CFLAGS_ALL = -std=gnu11 $(CFLAGS_WARN) $(OPT) -g -fPIC -fvisibility=hidden \
	-D_GNU_SOURCE -I. -I$(BUILD)/gen -I$(BUILD)/include $(SANFLAGS) \
	$(PKG_CFLAGS) $(CFLAGS)
LDFLAGS_ALL = $(SANFLAGS) $(LDFLAGS)

# Filled by the module.mk files.
LIB_SRCS :=       # the library
UT_SRCS :=        # CUnit suites (linked into the one runner)
UT_LIBS :=        # libraries only some suites need (-lsqlite3)
BINS :=           # programs built from the release library
TEST_BINS :=      # test programs built from the fault-injection library
PROTOS :=         # .proto files: compiled by protoc-c into $(BUILD)/gen/

include core/module.mk
include core/isc/module.mk
include core/rpc/module.mk
include core/server/module.mk
include tiers/module.mk
include layouts/module.mk
include clovis/module.mk
include dtm/module.mk
include ha/module.mk
include fdmi/module.mk
include fdmi/hsm/module.mk
include fdmi/attridx/module.mk
include fdmi/integrity/module.mk
include addb/module.mk
include tests/module.mk
include gateways/s3/module.mk
include gateways/posix/module.mk
include gateways/hdf5/module.mk

# Two builds of every library object: release, and test (fault points on).
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
TLIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/tobj/%.o)
UT_OBJS := $(sort $(UT_SRCS:%.c=$(BUILD)/tobj/%.o))

# protobuf-c: x/y.proto -> $(BUILD)/gen/x/y.pb-c.{c,h}, part of the library;
# sources include "x/y.pb-c.h".  Every object waits for the headers.
PROTO_HS := $(PROTOS:%.proto=$(BUILD)/gen/%.pb-c.h)
LIB_OBJS += $(PROTOS:%.proto=$(BUILD)/obj/gen/%.pb-c.o)
TLIB_OBJS += $(PROTOS:%.proto=$(BUILD)/tobj/gen/%.pb-c.o)
$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: %.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen $<
$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@
$(BUILD)/tobj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -DSTRATA_FAULT_INJECT -MMD -MP -c $< -o $@
$(LIB_OBJS) $(TLIB_OBJS) $(UT_OBJS) $(CLI_OBJS) $(SRV_OBJS): | $(PROTO_HS)

# The one CUnit runner: every module's suites, linked with the test library.
$(BUILD)/ut_main: $(BUILD)/tobj/tests/ut_main.o $(UT_OBJS) $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) $(TEST_LIBS) $(UT_LIBS) -lpthread

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/tobj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -DSTRATA_FAULT_INJECT -MMD -MP -c $< -o $@

$(BUILD)/libstrata.a: $(LIB_OBJS)
	@rm -f $@; ar rcs $@ $^

$(BUILD)/libstrata-test.a: $(TLIB_OBJS)
	@rm -f $@; ar rcs $@ $^

$(BUILD)/libstrata.so: $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libstrata.so.0 -o $@ $^ $(LDFLAGS_ALL) $(PKG_LIBS) -lpthread

# The public header where a program finds it once installed
# (<strata/clovis.h>): the examples include it so, as any user program.
$(BUILD)/include/strata/clovis.h: clovis/clovis.h
	@mkdir -p $(@D)
	cp $< $@
$(EXAMPLES:%=$(BUILD)/obj/clovis/examples/%.o): | $(BUILD)/include/strata/clovis.h

all: $(BUILD)/libstrata.a $(BUILD)/libstrata.so $(BINS)
tests: all $(BUILD)/libstrata-test.a $(TEST_BINS)

# Every build runs one job per CPU by default, plain `make` too (JOBS=1
# or -j1: one at a time; an explicit -jN wins).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(JOBS)
endif

deps:
	@scripts/deps.sh

check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) tests
	@tests/asan.sh build
	@tests/run-tests.sh $(BUILD)

run: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@scripts/run-demo.sh $(BUILD)

# libFuzzer targets of tests/fuzz/targets.list, FUZZ_SECONDS each; new
# inputs join the corpus in the tree (make check runs a bounded pass).
FUZZ_SECONDS ?= 600
fuzz: deps
	@$(MAKE) --no-print-directory -j$(JOBS) tests
	@tests/fuzz/fuzz.sh $(BUILD) $(FUZZ_SECONDS)

bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) tests $(BUILD)/strata_bench_addb_off
	@tests/bench/run-bench.sh $(BUILD) $(BENCH_ARGS)

coverage:
	@$(MAKE) --no-print-directory COV=1 OPT=-O0 tests
	@$(BUILD)-cov/ut_main >/dev/null || true
	@gcov -o build-cov/obj $(LIB_SRCS) >/dev/null 2>&1 || true
	@cd build-cov && gcov -p $(addprefix ../,$(LIB_SRCS)) -o tobj 2>/dev/null | \
	  grep -E "^(File|Lines)" | paste - - | sed 's/Lines executed://'

# make install PREFIX=P [DESTDIR=D]: files go under D/P, and name P (the
# .pc, found by pkg-config with PKG_CONFIG_PATH=P/lib/pkgconfig when P is
# not a standard place).  strata-server is installed beside strata, where
# `strata cluster up` looks for it.  The loader cache is refreshed
# (ldconfig) when root installs into /usr or /usr/local without DESTDIR.
# A prefix outside the
# loader's paths needs LD_LIBRARY_PATH, or an rpath at link time:
# -Wl,-rpath,$$(pkg-config --variable=libdir strata) (tests/integ/
# install_test.sh).
INST_LIB = $(DESTDIR)$(PREFIX)/lib
INST_BINS := strata strata-server strata-s3
install: all
	@case '$(PREFIX)' in /*) ;; *) echo "make install: PREFIX='$(PREFIX)'" \
	  "must be an absolute path"; exit 1 ;; esac
	install -d $(DESTDIR)$(PREFIX)/include/strata $(INST_LIB)/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 clovis/clovis.h $(DESTDIR)$(PREFIX)/include/strata/
	install -m 644 $(BUILD)/libstrata.a $(INST_LIB)/
	install -m 755 $(BUILD)/libstrata.so $(INST_LIB)/libstrata.so.$(VERSION)
	ln -sfn libstrata.so.$(VERSION) $(INST_LIB)/libstrata.so.0
	ln -sfn libstrata.so.0 $(INST_LIB)/libstrata.so
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' \
	 'includedir=$${prefix}/include' '' 'Name: strata' \
	 'Description: Strata tiered object store — Clovis client API' \
	 'Version: $(VERSION)' 'Requires.private: $(PKGS)' \
	 'Libs: -L$${libdir} -lstrata' 'Libs.private: -lpthread' \
	 'Cflags: -I$${includedir}' > $(INST_LIB)/pkgconfig/strata.pc
	chmod 644 $(INST_LIB)/pkgconfig/strata.pc
	install -m 755 $(INST_BINS:%=$(BUILD)/%) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 gateways/hdf5/strata_h5.h $(DESTDIR)$(PREFIX)/include/strata/
	install -m 644 $(BUILD)/libstrata_h5.a $(INST_LIB)/
	install -m 755 $(BUILD)/libstrata_h5.so $(INST_LIB)/libstrata_h5.so.$(VERSION)
	ln -sfn libstrata_h5.so.$(VERSION) $(INST_LIB)/libstrata_h5.so.0
	ln -sfn libstrata_h5.so.0 $(INST_LIB)/libstrata_h5.so
	install -d $(INST_LIB)/strata/hdf5-plugin
	install -m 755 $(BUILD)/hdf5-plugin/libh5fd_strata.so $(INST_LIB)/strata/hdf5-plugin/
	@case '$(DESTDIR):$(PREFIX)' in :/usr|:/usr/local) \
	  [ "$$(id -u)" -ne 0 ] || ldconfig ;; esac

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/strata/clovis.h \
	  $(INST_LIB)/libstrata.a $(INST_LIB)/libstrata.so.$(VERSION) \
	  $(INST_LIB)/libstrata.so.0 $(INST_LIB)/libstrata.so \
	  $(INST_LIB)/pkgconfig/strata.pc $(INST_BINS:%=$(DESTDIR)$(PREFIX)/bin/%) \
	  $(DESTDIR)$(PREFIX)/include/strata/strata_h5.h $(INST_LIB)/libstrata_h5.a \
	  $(INST_LIB)/libstrata_h5.so.$(VERSION) $(INST_LIB)/libstrata_h5.so.0 \
	  $(INST_LIB)/libstrata_h5.so $(INST_LIB)/strata/hdf5-plugin/libh5fd_strata.so
	rmdir $(DESTDIR)$(PREFIX)/include/strata $(INST_LIB)/strata/hdf5-plugin \
	  $(INST_LIB)/strata 2>/dev/null || true

clean:
	rm -rf build build-asan build-ubsan build-tsan build-cov

.PHONY: all tests deps check run bench coverage install uninstall clean fuzz
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ceph/s3-tests against a fresh gateway: make s3-tests S3TESTS=DIR (a checkout
# at the commit pinned in gateways/s3/tests/s3tests_run.sh; not in the repo).
s3-tests: all
	@gateways/s3/tests/s3tests_run.sh $(BUILD) "$(S3TESTS)"
.PHONY: s3-tests
